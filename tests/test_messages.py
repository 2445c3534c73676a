"""Failure messages that say why: exact texts for an invariant (binder and cell
values), a deadlock (the deadline that stops time, what could release it), an
overdue bounded response (the event it waited for) and a deadline the initial state
breaks; the same text in ``--json`` and in the diagram."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli

from checker import api, render
from checker.language import load_text

MUTEX = """model mutex
type P = {P1, P2}
actor proc
var pc : P -> {idle, cs} = idle
event proc.enter(p: P) when pc[p] == idle do pc[p] := cs
invariant exclusive(p: P, q: P): p != q and pc[p] == cs => pc[q] != cs
"""

LOCK = """model lock
param T in [0, 10] = 3
actor p
var x : bool = false
clock c
event p.go() when c >= 5 do x := true
deadline hurry: c <= T while not x
"""

WAIT = """model wait
type Req = {A}
actor client, server
var asked : Req -> bool = false
var answered : Req -> bool = false
var busy : bool = false
clock since : Req
event client.ask(r: Req) when not asked[r] do asked[r] := true; reset since[r]
event server.answer(r: Req) when asked[r] and not answered[r] and not busy
  do answered[r] := true
event server.distract() when not busy do busy := true
property served(r: Req): asked[r] leadsto answered[r] within 4
"""


def test_invariant_names_binders_and_cells() -> None:
    out = api.check(load_text(MUTEX, "mutex.kvr"))
    assert (out.verdict, out.prop) == (api.VIOLATED, "exclusive[P1, P2]")
    assert out.message == (
        "the invariant does not hold: `p != q and pc[p] == cs => pc[q] != cs` is false"
        " for p = P1, q = P2, where pc[P1] = cs, pc[P2] = cs")
    assert out.trace is not None and out.trace.message == out.message


def test_invariant_message_in_json_and_diagram(tmp_path: Path) -> None:
    spec = tmp_path / "mutex.kvr"
    spec.write_text(MUTEX)
    code, out, _ = run_cli("check", str(spec), "-q", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["message"].endswith("for p = P1, q = P2, where pc[P1] = cs, pc[P2] = cs")
    trace = api.check(load_text(MUTEX, "mutex.kvr")).trace
    assert trace is not None
    assert "where pc[P1] = cs, pc[P2] = cs" in render.sequence_dot(trace)


def test_deadlock_names_the_deadline_and_the_blocked_events() -> None:
    out = api.check(load_text(LOCK, "lock.kvr"))
    assert (out.verdict, out.prop) == (api.VIOLATED, "deadlock")
    assert out.message == (
        "no event can fire and time cannot pass: time is stopped at t=3 by deadline hurry"
        " (c <= T (= 3)); blocked only by their clock guards: p.go() (needs c >= 5);"
        " events that could end it by writing what its `while` condition reads: p.go")


def test_initial_timelock_names_the_deadline() -> None:
    out = api.check(load_text(LOCK.replace("c <= T while", "c <= T - 5 while"), "lock.kvr"))
    assert out.verdict == api.ERROR
    assert out.message == ("the initial state breaks a deadline: time cannot even start:"
                           " broken at t=0 by deadline hurry (c <= T - 5 (= -2))")


def test_overdue_response_points_at_the_event_not_forced() -> None:
    out = api.check(load_text(WAIT, "wait.kvr"))
    assert (out.verdict, out.prop) == (api.VIOLATED, "served[A]")
    assert out.message == (
        "no response within 4: server.answer(A), enabled after step 1 (t=1..6), would have"
        " made the response true, but nothing forces it to fire (no deadline bounds it)")


def test_overdue_response_disabled_by_another_event() -> None:
    out = api.check(load_text(WAIT.replace("\nproperty", "\ndeadline soon: since[A] <= 1"
                                           " while asked[A] and not busy\nproperty"),
                              "wait.kvr"))
    assert (out.verdict, out.prop) == (api.VIOLATED, "served[A]")
    assert out.message is not None
    assert out.message.startswith("no response within 4: server.answer(A), enabled after step 1")
    assert out.message.endswith("but step 2 (server.distract()) disabled it first")


def test_overdue_response_with_nothing_to_wait_for() -> None:
    text = WAIT.replace("when asked[r] and not answered[r] and not busy",
                        "when asked[r] and not answered[r] and busy and not busy")
    out = api.check(load_text(text, "wait.kvr"))
    assert (out.verdict, out.prop) == (api.VIOLATED, "served[A]")
    assert out.message == ("no response within 4: no event enabled while the response was"
                           " awaited would have made it true")

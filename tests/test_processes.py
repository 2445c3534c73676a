"""Processes, channels, urgent and committed locations: from the CLI and the API.

The meaning of each construct is pinned against the integer-time reference by the
small models of ``tests/semantics/`` (``test_differential.py``); this file pins the
classic models' state counts, what flattening makes of a process, how a
synchronisation reads in traces, diagrams and trace files, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT

from checker.api import check, load_spec
from checker.cli import main
from checker.engines import Options
from checker.language import load_text
from checker.model import trace as tr
from checker.render import sequence_dot

CLASSIC = ROOT / "spec" / "classic"
NOSYM = Options(symmetry=False)


@pytest.mark.parametrize(("name", "symmetry", "states", "zones"), [
    ("fischer_processes", False, 65, 65),   # TChecker: examples/fischer.sh 3 10
    ("fischer_processes", True, 18, 18),
    ("fischer", False, 65, 65),              # the flat style, the same zone graph
    ("train_gate", False, 91, 121),
    ("train_gate", True, 18, 23),
    ("csma_cd", False, 23, 26),
    ("csma_cd", True, 8, 9),
])
def test_classic_counts(name: str, symmetry: bool, states: int, zones: int) -> None:
    out = check(CLASSIC / f"{name}.kvr", options=Options(symmetry=symmetry))
    out.assert_holds()
    assert (out.stats.states, out.stats.zones) == (states, zones)


@pytest.mark.parametrize(("n", "symmetry", "states"), [
    (2, False, 18), (4, False, 220), (5, False, 727),   # TChecker's fischer series
    (6, True, 54), (8, True, 88),
])
def test_fischer_processes_scale_with_a_constant(n: int, symmetry: bool, states: int) -> None:
    out = check(CLASSIC / "fischer_processes.kvr", {"N": n},
                options=Options(symmetry=symmetry))
    out.assert_holds()
    assert out.stats.states == states


def test_flattening_names_and_instances() -> None:
    spec = load_spec(CLASSIC / "train_gate.kvr")
    assert spec.actors == ("Train", "Gate")
    assert [v.name for v in spec.vars] == ["Train.loc", "Gate.loc", "Gate.queue", "Gate.len"]
    assert [c.name for c in spec.clocks] == ["Train.x", "urgent"]
    assert [ev.label for ev in spec.events] == [
        "Train.approach+Gate.admit", "Train.approach+Gate.enqueue", "Train.pass",
        "Train.enter", "Train.depart+Gate.dequeue", "Gate.release+Train.resume",
        "Gate.halt_newest+Train.halt"]
    # `receive appr(t)` against `send appr(self)`: t is the sender's instance, not a
    # second parameter
    assert [len(ev.params) for ev in spec.events] == [1, 1, 1, 1, 1, 1, 1]
    assert [r.name for r in spec.responses] == ["crosses_in_time"]
    assert [d.name for d in spec.deadlines] == [
        "Train.approaching", "Train.starting", "Train.crossing", "Gate.urgent",
        "urgent Gate.release+Train.resume"]


def test_committed_location_matters() -> None:
    text = (CLASSIC / "train_gate.kvr").read_text().replace(
        "committed location notified", "location notified")
    out = check(load_text(text, "uncommitted.kvr"))
    out.assert_violated("one_on_bridge")
    assert out.trace is not None
    assert [s.event for s in out.trace.steps[1:]] == [
        "Train.approach+Gate.admit", "Train.approach+Gate.enqueue", "Train.pass",
        "Train.pass"]


def test_sync_in_trace_diagram_and_file(tmp_path: Path) -> None:
    text = (CLASSIC / "train_gate.kvr").read_text().replace(
        "committed location notified", "location notified")
    out = check(load_text(text, "uncommitted.kvr"))
    assert out.trace is not None
    step = out.trace.steps[2]
    assert step.sync == ("appr", ("Gate",), 1, (0,))
    dot = sequence_dot(out.trace)
    assert "approach(T2) \u2192 appr \u2192 Gate.enqueue(T2)" in dot
    # the arrow from the Train lane (0) to the Gate lane (1) in the step's row (2)
    assert "L0_2:p:c -> L1_2 [" in dot
    data = tr.to_itf(out.trace)
    assert data["states"][2]["#meta"]["sync"] == {
        "channel": "appr", "receivers": ["Gate"], "sender_args": 1, "receiver_args": [0]}
    back = tr.from_itf(json.loads(json.dumps(data)))
    assert back.steps[2].sync == step.sync
    assert sequence_dot(back) == dot


def test_broadcast_reaches_every_ready_receiver() -> None:
    spec = ROOT / "tests" / "semantics" / "broadcast.kvr"
    check(spec).assert_holds()
    check(spec, options=NOSYM).assert_holds()
    handshake = ROOT / "tests" / "semantics" / "broadcast_handshake.kvr"
    check(handshake).assert_violated("all_heard")


def test_receive_twice_is_a_model_error() -> None:
    out = check(ROOT / "tests" / "semantics" / "receive_twice.kvr")
    assert out.verdict == "error"
    assert out.message is not None and "two enabled receiving events" in out.message


def test_cli_check_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(CLASSIC / "csma_cd.kvr"), "--no-symmetry"]) == 0
    out = capsys.readouterr().out
    assert "explored 23 states, 26 zones, 66 transitions" in out
    assert main(["show", str(CLASSIC / "train_gate.kvr")]) == 0
    shown = capsys.readouterr().out
    assert "Train.approach+Gate.admit(self: TrainId)  [3 instances]" in shown
    assert "Gate.loc : {free, occupied, notified} = free" in shown


def test_send_and_receive_stay_usable_as_names() -> None:
    spec = load_text(
        "model m\nactor p, q\nvar to : bool = false\n"
        "event p.send() when not to do to := true\n"
        "event q.receive() receives p.send() do skip\n", "names.kvr")
    assert [ev.label for ev in spec.events] == ["p.send", "q.receive"]


def test_process_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.kvr"
    bad.write_text("model m\nprocess A {\n  location idle\n  event go from idle to gone\n}\n")
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4:25: error[KVR101]: unknown location `gone` of process `A`" in err

"""Timestamps of counterexamples (``checker.smt.timing.timestamps``), checked by an
independent evaluator.

The evaluator below uses nothing but :class:`fractions.Fraction` arithmetic: it
replays the trace's edges with the proposed times, tracks each clock's last reset
time, and checks every guard atom at the firing time, every deadline of the state
being left at the firing time, every deadline of the state entered at entry, that
times start at 0 and never decrease, and — for a bounded-response violation — that
the extra final time satisfies the hazard (the observer clock is past its bound).
No z3, no DBMs.

Covered: the two flagship specs, a set of hand-written timed specs (strict guards,
strict deadlines, tiny windows, indexed and symmetric clocks, bounded response,
invariants, asserts) and a few dozen small generated specs with violations.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT

from checker.api import check
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.model.interface import ClockAtom, Edge, State
from checker.model.trace import fmt_time
from checker.smt.timing import TraceShape, timestamps

IMMEDIATE = ROOT / "spec/sglang/immediate_release.kvr"
DEFERRED = ROOT / "spec/sglang/deferred_release.kvr"

STRICT_OPS = ("<", ">")
COMPARE = {
    "<": lambda v, b: v < b,
    "<=": lambda v, b: v <= b,
    ">": lambda v, b: v > b,
    ">=": lambda v, b: v >= b,
}


# ---- the independent evaluator -----------------------------------------------------------

@dataclass
class Replay:
    """What the evaluator saw: every atom it checked, and the clocks at the end."""

    atoms_checked: int
    strict_atoms: int
    last_reset: dict[int, Fraction]


def replay_times(model: SpecModel, states: Sequence[State], edges: Sequence[Edge],
                 hazard: Sequence[ClockAtom], times: Sequence[Fraction]) -> Replay:
    """Fail (AssertionError, with the step) unless ``times`` is a timed run of the trace."""
    bounds = [b.evaluate(model.values) for b in model.bounds]
    expected = len(edges) + 1 + (1 if hazard else 0)
    assert len(times) == expected, f"{len(times)} timestamps for {expected} instants"
    assert all(isinstance(t, Fraction) for t in times)
    assert times[0] == 0, f"the run starts at t={times[0]}, not 0"
    last_reset: dict[int, Fraction] = {}
    seen = {"atoms": 0, "strict": 0}

    def holds(atoms: Sequence[ClockAtom], now: Fraction, what: str) -> None:
        for a in atoms:
            value = now - last_reset.get(a.clock, Fraction(0))
            bound = bounds[a.bound]
            seen["atoms"] += 1
            seen["strict"] += a.op in STRICT_OPS
            assert COMPARE[a.op](value, bound), (
                f"{what} at t={now}: {model.clock_names[a.clock]} = {value} is not"
                f" {a.op} {bound}"
            )

    holds(model.deadlines(states[0]), times[0], "deadline of the initial state")
    for i, e in enumerate(edges):
        now = times[i + 1]
        label = f"step {i + 1} ({model.event_names[e.event]})"
        assert now >= times[i], f"{label}: time goes back from {times[i]} to {now}"
        # The trace is a run of the model: the edge leaves the state it is taken from.
        assert e in model.edges(states[i]), f"{label} is not an edge of its source state"
        assert e.target == states[i + 1], f"{label} does not lead to the next state"
        holds(model.deadlines(states[i]), now, f"{label}: deadline of the state left")
        holds(e.guard, now, f"{label}: guard")
        if e.failure is not None:
            assert i == len(edges) - 1, f"{label}: a failing assert is not the last step"
            break
        for c in e.resets:
            last_reset[c] = now
        holds(model.deadlines(states[i + 1]), now, f"{label}: deadline of the state entered")
    if hazard:
        end = times[len(edges) + 1]
        assert end >= times[len(edges)], "the response deadline passes before the last event"
        holds(model.deadlines(states[-1]), end, "deadline of the final state (response)")
        holds(hazard, end, "the response hazard")
    return Replay(seen["atoms"], seen["strict"], last_reset)


def trace_parts(outcome) -> tuple[SpecModel, list[State], list[Edge], tuple[ClockAtom, ...]]:
    """The model, states, edges and (for a bounded response) hazard atoms of a violation."""
    assert outcome.raw is not None
    model, result = outcome.raw
    states = [s.state for s in result.trace]
    edges = [s.edge for s in result.trace[1:]]
    assert all(e is not None for e in edges)
    hazard: tuple[ClockAtom, ...] = ()
    for h in model.hazards(states[-1]):
        if h.property == result.prop:
            hazard = h.atoms
    return model, states, edges, hazard  # type: ignore[return-value]


def check_counterexample(outcome) -> Replay:
    """Recompute the timestamps of a violation and replay them independently; the
    times on ``outcome.trace`` must be the same ones."""
    assert outcome.verdict == "violated", outcome.summary()
    model, states, edges, hazard = trace_parts(outcome)
    times = timestamps(model, model.values, TraceShape(states, edges, hazard))
    got = replay_times(model, states, edges, hazard, times)
    assert outcome.trace is not None
    assert [s.time for s in outcome.trace.steps] == times[: len(states)]
    if hazard:
        assert outcome.timing_note is not None and "its bound has passed" in outcome.timing_note
    return got


# ---- the evaluator itself ---------------------------------------------------------------

EVAL_SPEC = """model evaluator
actor a
param K in [0, 10] = 2
var ph : {p0, p1, p2} = p0
clock x, y
event a.go() when ph == p0 and x > 1 do ph := p1; reset y
event a.bad() when ph == p1 and y >= 1 and x < K + 2 do ph := p2
deadline x <= 5 while ph != p2
invariant ok: ph != p2
"""


def test_the_evaluator_rejects_wrong_times() -> None:
    # The evaluator must not be vacuous: perturbed timestamps are caught.
    outcome = check(load_text(EVAL_SPEC))
    model, states, edges, hazard = trace_parts(outcome)
    good = timestamps(model, model.values, TraceShape(states, edges, hazard))
    replay_times(model, states, edges, hazard, good)
    bad_cases = {
        "x > 1 is strict": [Fraction(0), Fraction(1), Fraction(2)],
        "y >= 1": [Fraction(0), Fraction(2), Fraction(5, 2)],
        "x < K + 2": [Fraction(0), Fraction(3), Fraction(4)],
        "deadline x <= 5": [Fraction(0), Fraction(11, 2), Fraction(13, 2)],
        "starts at 0": [Fraction(1, 2), Fraction(2), Fraction(3)],
        "non-decreasing": [Fraction(0), Fraction(3), Fraction(5, 2)],
    }
    for why, times in bad_cases.items():
        with pytest.raises(AssertionError):
            replay_times(model, states, edges, hazard, times)
            pytest.fail(f"the evaluator accepted wrong times ({why})")


def test_an_infeasible_trace_has_no_timestamps() -> None:
    # `go` is enabled on data but its guard x >= 5 is beyond the deadline x <= 2.
    text = """model late
actor a
var ph : {p0, p1} = p0
clock x
event a.go() when ph == p0 and x >= 5 do ph := p1
deadline x <= 2 while ph == p0
"""
    model = SpecModel(load_text(text))
    s0 = model.initial_states()[0]
    (edge,) = model.edges(s0)
    with pytest.raises(ValueError):
        timestamps(model, model.values, TraceShape([s0, edge.target], [edge]))


# ---- the flagship specs ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("path", "params"),
    [
        (IMMEDIATE, {}),
        (DEFERRED, {"T_hold": 7}),
        (DEFERRED, {"T_hold": 4, "T_prop": 1}),
        (DEFERRED, {"T_hold": Fraction(69, 10)}),
        (IMMEDIATE, {"T_flight": Fraction(1, 1000), "T_prop": 0, "T_chunk": 0}),
    ],
    ids=["immediate", "deferred-hold7", "deferred-hold4-prop1", "deferred-hold6.9",
         "immediate-tiny-flight"],
)
def test_flagship_counterexample_timestamps(path: Path, params: dict[str, object]) -> None:
    outcome = check(path, params)  # type: ignore[arg-type]
    assert outcome.prop == "assert"
    got = check_counterexample(outcome)
    assert got.atoms_checked > 0
    # The write lands after the slot changed hands: the last event is the late landing.
    assert outcome.trace is not None
    assert outcome.trace.steps[-1].label.startswith("decode.land(")


def test_flagship_race_lands_within_flight_time_after_the_hold() -> None:
    # A direct reading of the deferred counterexample: the release happens at least
    # T_hold after the abort and the landing at most T_flight after its post.
    outcome = check(DEFERRED, T_hold=7)
    assert outcome.trace is not None
    steps = outcome.trace.steps
    when = {s.label.split("(")[0]: s.time for s in steps[1:]}
    assert all(s.time is not None for s in steps)
    assert when["decode.release"] - when["router.abort"] >= 7
    assert when["decode.land"] - when["prefill.post"] <= 3
    assert when["prefill.learn_abort"] - when["router.abort"] <= 2


# ---- hand-written timed specs -------------------------------------------------------------

HAND_WRITTEN: dict[str, tuple[str, str]] = {
    # name: (spec text, the property that must be violated)
    "strict-window": ("""model strict_window
actor a
param T in (0, 10] = 1
var ph : {s0, s1, s2} = s0
clock x, y
event a.go() when ph == s0 and x > 0 and x < T do ph := s1; reset y
event a.bad() when ph == s1 and y > T / 2 and x < T do ph := s2
invariant ok: ph != s2
""", "ok"),
    "tiny-strict-window": ("""model tiny
actor a
param T in (0, 10] = 0.00001
var ph : {s0, s1, s2} = s0
clock x, y
event a.go() when ph == s0 and x > 0 and x < T do ph := s1; reset y
event a.bad() when ph == s1 and y > T / 2 and x < T do ph := s2
invariant ok: ph != s2
""", "ok"),
    "strict-deadline": ("""model strict_deadline
actor a, b
var ph : {s0, s1, s2} = s0
clock x
event a.go() when ph == s0 and x > 2 do ph := s1; reset x
deadline x < 3 while ph == s0
event b.bad() when ph == s1 and x > 0.5 do ph := s2; assert false : "reached"
deadline x < 1 while ph == s1
""", "assert"),
    "equality-guard": ("""model equality
actor a
param K in [0, 10] = 3
var ph : {s0, s1, s2} = s0
clock x, y
event a.go() when ph == s0 and x == K do ph := s1; reset y
event a.bad() when ph == s1 and y == 1.5 and x == K + 1.5 do ph := s2
invariant ok: ph != s2
""", "ok"),
    "response": ("""model resp
actor a
param T in [0, 10] = 3
var req : bool = false
var ack : bool = false
clock x
event a.ask() when not req do req := true; reset x
event a.answer() when req and not ack and x >= 5 do ack := true
property p: req leadsto ack within T
""", "p"),
    "response-under-deadline": ("""model resp_deadline
actor a, b
param T in [0, 10] = 2
var req : bool = false
var ack : bool = false
clock x, y
event a.ask() when not req and y > 1 do req := true; reset x
event b.answer() when req and not ack and x > 1 do ack := true
deadline x <= 4 while req and not ack
property p: req leadsto ack within T
""", "p"),
    "indexed-response": ("""model resp_indexed
type R = {u, v}
actor a
var req : R -> bool = false
var ack : R -> bool = false
clock c : R
event a.ask(r: R) when not req[r] and c[r] >= 1 do req[r] := true; reset c[r]
event a.answer(r: R) when req[r] and not ack[r] and c[r] > 2 do ack[r] := true
deadline d(r: R): c[r] <= 6 while req[r] and not ack[r]
property p(r: R): req[r] leadsto ack[r] within 2.5
""", "p"),
    "symmetric-assert": ("""model sym
symmetric type R = {u, v}
actor a, b
var owner : R? = none
var busy : R -> bool = false
clock since : R
event a.take(r: R) when owner == none do owner := r; busy[r] := true; reset since[r]
event a.drop(r: R) when owner == r and since[r] > 1 do owner := none
event b.touch(r: R) when busy[r] and since[r] < 3
  do busy[r] := false; assert owner in {none, r} : "touched {r} while {owner} owns it"
deadline t(r: R): since[r] <= 4 while busy[r]
""", "assert"),
    "deadline-forces-order": ("""model order
actor a, b
var ph : {s0, s1, s2, s3} = s0
clock x, y
event a.one() when ph == s0 and x >= 1 do ph := s1; reset x
deadline x <= 2 while ph == s0
event b.two() when ph == s1 and y > 2 and x < 1 do ph := s2
event a.three() when ph == s2 and y >= 3 do ph := s3
deadline y <= 3.5 while ph == s2
invariant ok: ph != s3
""", "ok"),
    "reset-chain": ("""model chain
actor a
param A in [0, 5] = 1
param B in [0, 5] = 2
var n : 0..3 = 0
clock x, y
event a.step() when n < 3 and x > A and y < B + 6 * A do n := n + 1; reset x
deadline x <= A + 1 while n < 3
invariant ok: n < 3
""", "ok"),
    "zero-delay-burst": ("""model burst
actor a, b
var ph : {s0, s1, s2, s3} = s0
clock x
event a.p() when ph == s0 do ph := s1
event b.q() when ph == s1 do ph := s2
event a.r() when ph == s2 and x <= 0 do ph := s3
deadline x <= 0 while ph != s3
invariant ok: ph != s3
""", "ok"),
    "disjunctive-guard": ("""model disj
actor a
var ph : {s0, s1} = s0
clock x, y
event a.go() when ph == s0 and (x < 1 or y > 4) and x >= 0.5 do ph := s1
deadline x <= 6 while ph == s0
invariant ok: ph != s1
""", "ok"),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_counterexample_timestamps(name: str) -> None:
    text, prop = HAND_WRITTEN[name]
    outcome = check(load_text(text, f"<{name}>"))
    assert outcome.verdict == "violated", outcome.summary()
    assert (outcome.prop or "").split("[")[0] == prop, outcome.summary()
    check_counterexample(outcome)


@pytest.mark.parametrize("name", ["response", "response-under-deadline", "indexed-response"])
def test_response_final_time_puts_the_observer_past_its_bound(name: str) -> None:
    text, _ = HAND_WRITTEN[name]
    outcome = check(load_text(text, f"<{name}>"))
    model, states, edges, hazard = trace_parts(outcome)
    assert hazard, "a bounded-response violation has hazard atoms"
    times = timestamps(model, model.values, TraceShape(states, edges, hazard))
    assert len(times) == len(states) + 1
    got = replay_times(model, states, edges, hazard, times)
    # Independently of the hazard atoms: the observer clock of the violated instance,
    # reset when the obligation started, reads more than the `within` bound at the end.
    within = {"response": Fraction(3), "response-under-deadline": Fraction(2),
              "indexed-response": Fraction(5, 2)}[name]
    observer = model.clock_names.index(f"<{outcome.prop}>")
    started = got.last_reset.get(observer, Fraction(0))
    assert times[-1] - started > within
    # The trace says when the response deadline passes: at that extra time.
    assert outcome.timing_note == f"no response by t={fmt_time(times[-1])}: its bound has passed"


def test_strict_windows_are_used_by_the_hand_written_traces() -> None:
    # The strict atoms along the traces are really checked (the evaluator counted them).
    strict = 0
    for name in ("strict-window", "tiny-strict-window", "strict-deadline", "disjunctive-guard"):
        text, _ = HAND_WRITTEN[name]
        strict += check_counterexample(check(load_text(text, f"<{name}>"))).strict_atoms
    assert strict >= 8


# ---- generated timed specs -----------------------------------------------------------------

def generate_spec(r: random.Random, k: int) -> str:
    """A small random timed spec: a phase machine over two actors, two clocks, strict
    and non-strict guards, deadlines, and one property (invariant, assert or response)."""
    ops = ["<", "<=", ">", ">=", "==", "<", ">"]
    consts = ["0", "0.5", "1", "1.5", "2", "3", "K", "K + 1", "2 * K"]

    def atom(clock: str) -> str:
        return f"{clock} {r.choice(ops)} {r.choice(consts)}"

    def guard() -> str:
        parts = [atom(r.choice("xy")) for _ in range(r.randint(0, 2))]
        if r.random() < 0.2:
            parts.append(f"({atom('x')} or {atom('y')})")
        return "".join(f" and {p}" for p in parts)

    kind = r.choice(["invariant", "assert", "response"])
    lines = [f"model gen{k}", "actor a, b",
             f"param K in [0, 5] = {r.choice(['0.5', '1', '2', '2.5'])}",
             "var ph : {p0, p1, p2, p3} = p0", "var flag : bool = false", "clock x, y"]
    for i in range(3):
        actor = r.choice("ab")
        resets = [c for c in "xy" if r.random() < 0.4]
        body = [f"ph := p{i + 1}"]
        if resets:
            body.append("reset " + ", ".join(resets))
        if kind == "assert" and i == 2:
            body.append('assert flag : "p3 without the flag"')
        lines.append(f"event {actor}.e{i}() when ph == p{i}{guard()} do {'; '.join(body)}")
    side_reset = "; reset y" if r.random() < 0.5 else ""
    lines.append(f"event {r.choice('ab')}.side() when not flag{guard()} do flag := true"
                 f"{side_reset}")
    for _ in range(r.randint(0, 2)):
        op = r.choice(["<=", "<=", "<"])
        lines.append(f"deadline {r.choice('xy')} {op} {r.choice(['2', '3', '4', 'K + 2'])}"
                     f" while ph == p{r.randint(0, 2)}")
    if kind == "invariant":
        lines.append("invariant ok: not (ph == p3 and not flag)")
    elif kind == "response":
        lines.append(f"property resp: ph == p1 leadsto ph == p3 within {r.choice(['1', 'K'])}")
    return "\n".join(lines) + "\n"


def generated_specs(count: int = 160) -> list[tuple[str, str]]:
    """``count`` generated specs (fixed seed), named ``gen<k>``."""
    r = random.Random(20240611)
    return [(f"gen{k}", generate_spec(r, k)) for k in range(count)]


GENERATED = generated_specs()


@pytest.mark.slow
def test_generated_counterexample_timestamps() -> None:
    violated: dict[str, int] = {}
    strict_traces = 0
    for name, text in GENERATED:
        outcome = check(load_text(text, f"<{name}>"))
        if outcome.verdict != "violated":
            continue
        try:
            got = check_counterexample(outcome)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}\n{text}") from None
        prop = (outcome.prop or "").split("[")[0]
        violated[prop] = violated.get(prop, 0) + 1
        strict_traces += got.strict_atoms > 0
    total = sum(violated.values())
    assert total >= 30, f"only {total} generated specs have a violation: {violated}"
    for prop in ("assert", "ok", "resp", "deadlock"):
        assert violated.get(prop, 0) >= 3, f"too few {prop} violations: {violated}"
    assert strict_traces >= 10, f"only {strict_traces} traces check a strict atom"

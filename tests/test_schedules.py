"""``kvrace schedules``: every schedule replays to the outcome it claims, in the
simulator's concrete semantics (:func:`checker.simulate.replay.replay`) and through
``kvrace validate`` (the log of its actions conforms to the spec, and every run
consistent with it breaks the property it names, or none)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker.language import load
from checker.limits import Limits
from checker.model.compiled import SpecModel
from checker.model.interface import scaled_bounds
from checker.model.trace import fmt_time
from checker.semantics.traces import TraceStep, replay_zone
from checker.simulate.replay import ReplayEnd, replay, steps_of
from checker.validate import conform
from checker.validate import schedules as sc
from checker.validate.log import read_json_lines

CASES = [
    ("spec/sglang/immediate_release.kvr", {}),
    ("spec/sglang/deferred_release.kvr", {"T_hold": Fraction(7)}),
    ("spec/sglang/kv_checksum.kvr", {}),
    ("spec/sglang/premature_ack.kvr", {}),
    ("spec/vllm/lease_expired_read.kvr", {}),
    ("spec/sglang/strict_no_release_on_timeout.kvr", {}),
]


def _monitor(model: SpecModel, lines: list[str]) -> conform.Report:
    mon = conform.Monitor(model, "schedule", frozenset(conform.EventIndex(model).names()))
    return conform.validate(mon, read_json_lines("schedule", lines))


def check_replays(spec_path: str, schedule: sc.Schedule) -> None:
    """The schedule's outcome, in the concrete semantics and through the monitor."""
    model = SpecModel(load(str(ROOT / spec_path)), dict(schedule.params))
    steps = steps_of(model, [(a.label, a.time) for a in schedule.actions])
    got = replay(model, steps, schedule.until)
    rep = _monitor(model, sc.schedule_log(schedule))
    assert rep.outcome is conform.Outcome.CONFORMS, rep.deviation
    if schedule.property == "deadlock":
        # Time reaches the schedule's end, and cannot pass it: nothing fires.
        assert schedule.until is not None and got.end is ReplayEnd.COMPLETED, got
        later = schedule.until + Fraction(1, 1000)
        assert replay(model, steps, later).end is ReplayEnd.BLOCKED
        stuck = _monitor(model, [*sc.schedule_log(schedule), json.dumps({"t": fmt_time(later)})])
        assert stuck.outcome is conform.Outcome.DEVIATES
        assert stuck.deviation is not None and stuck.deviation.possible == ()
        return
    if schedule.property is None:
        assert got.end is ReplayEnd.COMPLETED, got
        assert rep.broken is None, rep.broken
    else:
        assert got.end is ReplayEnd.VIOLATION and got.fired == len(steps), got
        assert got.prop == (schedule.property if schedule.property in ("assert", "deadlock")
                            else got.prop)
        assert schedule.property.split("[")[0] == (got.prop or "").split("[")[0]
        assert rep.broken is not None and rep.certainty is conform.Certainty.CERTAIN
        assert rep.broken.name.split("[")[0] == schedule.property.split("[")[0]
        assert schedule.message is not None and schedule.message.startswith(rep.broken.message)
    for a in schedule.actions:
        if a.kind is sc.ActionKind.DELIVER:
            assert a.sent_by is not None and a.delay is not None and a.delay >= 0


@pytest.mark.parametrize(("path", "params"), CASES, ids=[Path(c[0]).stem for c in CASES])
def test_every_violation_schedule_replays_to_its_outcome(path: str,
                                                         params: dict[str, Fraction]) -> None:
    spec = load(str(ROOT / path))
    model = SpecModel(spec, params)
    made = [sc.violation_schedule(model, target, None)[0] for target in sc.properties(spec)]
    scheds = [s for s in made if s is not None]
    assert scheds
    for s in scheds:
        assert s.kind is sc.ScheduleKind.VIOLATION and s.property is not None
        check_replays(path, s)


@pytest.mark.parametrize("path", ["spec/sglang/immediate_release.kvr",
                                  "spec/sglang/deferred_release.kvr",
                                  "spec/vllm/lease_expired_read.kvr"])
def test_every_event_schedule_fires_its_event_and_breaks_nothing(path: str) -> None:
    spec = load(str(ROOT / path))
    model = SpecModel(spec, {})
    scheds, never = sc.event_schedules(model)
    assert [s.name for s in scheds] + never == [ev.label for ev in spec.events]
    for s in scheds:
        assert s.actions[-1].event == s.name and s.property is None
        check_replays(path, s)


@pytest.mark.slow  # a synthesis and two explorations
def test_the_boundary_schedules_straddle_the_region() -> None:
    """Deferred release is safe exactly when T_hold > 7: at 6.999 the counterexample,
    at 7.001 its prefix up to the release, which cannot come next there (in the exact
    zone semantics too)."""
    path = "spec/sglang/deferred_release.kvr"
    spec = load(str(ROOT / path))
    values = dict(SpecModel(spec, {}).values)
    bounds, note = sc.boundaries(spec, values, ["T_hold"])
    assert note is None and [(b.text, b.moved) for b in bounds] == [("T_hold > 7", "T_hold")]
    b = bounds[0]
    assert b.outside["T_hold"] == Fraction(6999, 1000) and b.inside["T_hold"] == Fraction(
        7001, 1000)
    outside, inside = sc.boundary_schedules(spec, b, Limits())
    assert outside.kind is sc.ScheduleKind.OUTSIDE and outside.property == "assert"
    assert inside.kind is sc.ScheduleKind.INSIDE and inside.property is None
    check_replays(path, outside)
    check_replays(path, inside)
    # As the README tells it.
    assert [(a.label, a.time) for a in outside.actions] == [
        ("decode.allocate(A, s0)", 1), ("router.abort(A)", 2),
        ("prefill.learn_abort(A)", Fraction(3999, 1000)),
        ("prefill.post(A, 0)", Fraction(5999, 1000)),
        ("decode.release(A)", Fraction(8999, 1000)),
        ("decode.allocate(B, s0)", Fraction(8999, 1000)),
        ("decode.land(A, 0)", Fraction(8999, 1000))]
    assert outside.actions[2].delay == Fraction(1999, 1000)
    # The inside prefix keeps the outside times; the outside's next step cannot follow.
    k = len(inside.actions)
    assert [a.time for a in inside.actions] == [a.time for a in outside.actions[:k]]
    assert inside.note == ("step 5 of the outside schedule, decode.release(A), cannot come"
                           " next at T_hold=7.001")
    model = SpecModel(spec, b.inside)
    labels = [a.label for a in outside.actions[:k + 1]]
    index = {name: i for i, name in enumerate(model.event_names)}
    trace = [TraceStep(None, "initial", None, model.initial_states()[0])]
    for name in labels:
        e = next(e for e in model.edges(trace[-1].state) if e.event == index[name])
        trace.append(TraceStep(e.event, name, e, e.target))
    bounds_ticks = scaled_bounds(model.bounds, model.values)[0]
    assert replay_zone(model, bounds_ticks, trace[:-1]) is not None
    assert replay_zone(model, bounds_ticks, trace) is None


def test_a_response_schedule_watches_until_it_is_overdue() -> None:
    path = "spec/sglang/strict_no_release_on_timeout.kvr"
    model = SpecModel(load(str(ROOT / path)), {})
    s, _ = sc.violation_schedule(model, "bounded_release", None)
    assert s is not None and s.until == 63
    assert sc.schedule_log(s)[-1] == '{"t": "63"}'
    assert s.table().splitlines()[-1] == "      63           end: no response by then"
    # Without the watch's end, the log shows no violation.
    model_steps = steps_of(model, [(a.label, a.time) for a in s.actions])
    assert replay(model, model_steps).end is ReplayEnd.COMPLETED


def test_the_flagship_schedules(in_root: object) -> None:
    code, out, _ = run_cli("schedules", "spec/sglang/immediate_release.kvr", "--kind",
                           "violation")
    assert code == 1
    assert out.splitlines() == [
        "model immediate_release  (T_prop=2, T_chunk=2, T_flight=3)",
        "broken: assert; holding: deadlock",
        "",
        "schedule violation assert: breaks assert: write of A chunk 0 lands in slot s0"
        " owned by B",
        "step  t  actor    action",
        "   1  1  decode   fire decode.allocate(A, s0)",
        "   2  2  prefill  fire prefill.post(A, 0)",
        "   3  3  router   fire router.abort(A)",
        "   4  3  decode   fire decode.release(A)",
        "   5  4  decode   fire decode.allocate(B, s0)",
        "   6  5  decode   deliver decode.land(A, 0): hold the message of step 2 for 3",
    ]
    code, out, _ = run_cli("schedules", "spec/sglang/deferred_release.kvr", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["check_verdict"] == "holds"
    assert doc["broken"] == [] and doc["holding"] == ["assert", "deadlock"]
    assert [s["kind"] for s in doc["schedules"]] == ["event"] * 7
    assert [s["name"] for s in doc["schedules"]][-1] == "decode.finish"


def test_bad_usage_is_exit_2(in_root: object) -> None:
    code, _, err = run_cli("schedules", "spec/sglang/immediate_release.kvr", "--kind", "evnt")
    assert code == 2 and "unknown kind `evnt`" in err
    code, _, err = run_cli("schedules", "spec/sglang/immediate_release.kvr", "--kind",
                           "boundary")
    assert code == 2 and "--kind boundary needs --free" in err
    code, _, err = run_cli("schedules", "spec/sglang/immediate_release.kvr", "--free", "T_x")
    assert code == 2 and "unknown parameter `T_x`" in err


LIBRARY = sorted(str(p.relative_to(ROOT)) for p in [*ROOT.glob("spec/*/*.kvr"),
                                                    *ROOT.glob("docs/tutorial/*.kvr")])


@pytest.mark.slow
@pytest.mark.parametrize("path", LIBRARY, ids=[Path(p).stem for p in LIBRARY])
def test_every_schedule_of_the_library_replays(path: str) -> None:
    """Every violation and event schedule of every spec (at its default values) replays
    to its outcome; a counterexample breaks no other property first (the uncommitted
    train gate's deadlock was reached only through a broken invariant)."""
    spec = load(str(ROOT / path))
    model = SpecModel(spec, {})
    scheds = [s for t in sc.properties(spec)
              if (s := sc.violation_schedule(model, t, Limits(timeout=60))[0]) is not None]
    scheds += sc.event_schedules(model)[0]
    for s in scheds:
        check_replays(path, s)


def test_a_deadlock_schedule_ends_where_time_stops(tmp_path: Path) -> None:
    """A deadline hurries `finish`, whose guard waits longer: after `start` at t=1 time
    stops at t=3 with nothing able to fire."""
    spec = tmp_path / "stuck.kvr"
    spec.write_text("model stuck\n\nparam T in [0, 10] = 2\n\nactor a\n\n"
                    "var started : bool = false\nclock x\n\n"
                    "event a.start\n  when not started\n  do started := true; reset x\n\n"
                    "event a.finish\n  when started and x >= 5\n\n"
                    "deadline hurry: x <= T while started\n", encoding="utf-8")
    model = SpecModel(load(str(spec)), {})
    s, _ = sc.violation_schedule(model, "deadlock", None)
    assert s is not None and s.property == "deadlock" and s.until == 3
    assert s.table().splitlines()[-1] == "      3         end: time cannot pass, nothing can fire"
    check_replays(str(spec), s)


BOUNDED = ["docs/tutorial/fence_bounded.kvr", "spec/classic/train_gate.kvr",
           "spec/sglang/drained_ack_or_timeout.kvr", "spec/sglang/layerwise_streamed.kvr",
           "spec/sglang/paired_abort.kvr", "spec/sglang/radix_prefix_poison.kvr",
           "spec/sglang/room_reuse.kvr", "spec/vllm/lease_expired_read.kvr",
           "spec/vllm/lease_reaper_order.kvr", "spec/vllm/offset_handshake.kvr",
           "spec/vllm/turn2_expiry_check.kvr"]
"""Specs of the library whose safe region (every ranged parameter free) has a boundary
near their default values."""


@pytest.mark.slow
@pytest.mark.parametrize("path", BOUNDED, ids=[Path(p).stem for p in BOUNDED])
def test_every_boundary_schedule_of_the_library_replays(path: str) -> None:
    spec = load(str(ROOT / path))
    free = [p.name for p in spec.params if p.lo is not None or p.hi is not None]
    bounds, note = sc.boundaries(spec, dict(SpecModel(spec, {}).values), free)
    assert bounds and note is None
    for b in bounds:
        outside, inside = sc.boundary_schedules(spec, b, Limits(timeout=60))
        assert outside.property is not None and inside.property is None
        check_replays(path, outside)
        check_replays(path, inside)


@pytest.mark.slow  # waits for the time limit
def test_a_synthesis_cut_short_is_inconclusive(in_root: object) -> None:
    code, out, _ = run_cli("schedules", "spec/vllm/lease_renewal.kvr", "--free", "L,E,H,Q",
                           "--kind", "boundary", "--timeout", "1")
    assert code == 3
    assert out.splitlines()[-1] == (
        "INCONCLUSIVE: the synthesis of the region was cut short: time limit reached; the"
        " schedules above are those found before it")

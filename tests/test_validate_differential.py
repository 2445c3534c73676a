"""``validate`` against an independent oracle: for a fully observed log, it is a run
of the spec exactly when the discrete sequence of its events is a path of the model
and the timing constraints of that path (``checker.model.timeline``, solved by Z3 in
``checker.smt.timing``) have a solution with every event within the clock error of
its logged time.  It contains a violation surely when every such solution breaks a
property (an ``assert``, an invariant of a state entered, a bounded response whose
observer clock is past its bound when the run leaves a state, or at the log's end), and
possibly when some do.  Logs are simulated runs with one line shifted or removed."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from fractions import Fraction

import pytest
import z3
from helpers import ROOT

from checker.language import load
from checker.model.compiled import SpecModel
from checker.model.interface import ClockAtom, Edge, State
from checker.model.timeline import TraceShape
from checker.simulate.engine import SimConfig
from checker.smt.timing import _constraints
from checker.validate import conform, simlog
from checker.validate.log import read_json_lines

SPECS = ["spec/sglang/immediate_release.kvr", "spec/sglang/deferred_release.kvr",
         "spec/sglang/drained_ack_or_timeout.kvr", "spec/classic/fischer.kvr",
         "spec/classic/train_gate.kvr", "spec/sglang/strict_no_release_on_timeout.kvr"]
"""The flagships, a spec with acknowledgements and timeouts, two cyclic ones (runs cut
at 30 events: their clocks pass the model's largest constant, where the zones are
abstracted), and a bounded response whose bound the shifted lines cross (at
``T_bound = 3``: an aborted slot is freed within about 4 s)."""

PARAMS = {"spec/sglang/strict_no_release_on_timeout.kvr": {"T_bound": Fraction(3)}}


def _paths(model: SpecModel, events: list[int]) -> list[tuple[list[State], list[Edge]]]:
    """Every discrete path of the model that fires ``events`` in order (one per choice
    of guard branch)."""
    out: list[tuple[list[State], list[Edge]]] = []
    s0 = model.initial_states()[0]

    def walk(states: list[State], edges: list[Edge]) -> None:
        if len(edges) == len(events):
            out.append((states, edges))
            return
        for e in model.edges(states[-1]):
            if e.event == events[len(edges)]:
                walk([*states, e.target], [*edges, e])

    walk([s0], [])
    return out


def _clock_atoms(model: SpecModel, edges: list[Edge], times: list[z3.ArithRef]
                 ) -> Callable[[int, Sequence[ClockAtom], z3.ArithRef], z3.BoolRef]:
    """A function giving, for a state of the path (its index) and an instant, the truth
    of clock atoms there: each clock read since its last reset before that state."""
    concrete = [b.evaluate(model.values) for b in model.bounds]
    resets: list[dict[int, z3.ArithRef]] = [{}]
    for i, e in enumerate(edges):
        resets.append({**resets[-1], **{c: times[i + 1] for c in e.resets}})

    def holds(index: int, atoms: Sequence[ClockAtom], now: z3.ArithRef) -> z3.BoolRef:
        parts = []
        for a in atoms:
            value = now - resets[index].get(a.clock, times[0])
            b = z3.RealVal(str(concrete[a.bound]))
            parts.append({"<": value < b, "<=": value <= b, ">": value > b,
                          ">=": value >= b}[a.op.value])
        return z3.And(*parts)

    return holds


def oracle(model: SpecModel, lines: list[tuple[int, Fraction]], err: Fraction
           ) -> tuple[bool, bool, bool] | None:
    """(some path firing the logged events has times within ``err`` of the log, some
    such timed run breaks a property, some breaks none); None when a path goes on after
    a failing assert (the timeline ends a run there, ``validate`` follows the log on).

    A run breaks a bounded response when its observer clock is past the bound as the
    run leaves a state (the next edge fires), or in the last state at some instant up
    to the last line's time plus the error (its deadlines holding till then)."""
    concrete = [b.evaluate(model.values) for b in model.bounds]
    paths = _paths(model, [e for e, _ in lines])
    if any(e.failure is not None for _, edges in paths for e in edges[:-1]):
        return None
    conforms = broken = clean = False
    for states, edges in paths:
        times, cons = _constraints(model, TraceShape(states, edges),
                                   lambda i: z3.RealVal(str(concrete[i])), None)
        for t, (_, logged) in zip(times[1:], lines, strict=True):
            cons += [t >= z3.RealVal(str(logged - err)), t <= z3.RealVal(str(logged + err))]
        holds = _clock_atoms(model, edges, times)
        k = len(edges)
        last, end = times[k], z3.Real("end")
        leaving = [holds(i, h.atoms, times[i + 1])
                   for i in range(k) for h in model.hazards(states[i])]
        overdue_by = [holds(k, h.atoms, end) for h in model.hazards(states[k])]
        overdue_at = [holds(k, h.atoms, last) for h in model.hazards(states[k])]
        window = [end >= last, end <= z3.RealVal(str(lines[-1][1] + err)),
                  *(holds(k, (a,), end) for a in model.deadlines(states[k]))]
        discrete = edges[-1].failure is not None or any(model.violations(s)
                                                        for s in states[1:])

        def sat(*extra: z3.BoolRef, cons: list[z3.BoolRef] = cons) -> bool:
            solver = z3.Solver()
            solver.add(*cons, *extra)
            got = solver.check()
            assert got != z3.unknown
            return got == z3.sat

        if not sat():
            continue
        conforms = True
        broken = broken or discrete or sat(z3.Or(*leaving, z3.And(*window, z3.Or(*overdue_by))))
        clean = clean or (not discrete and sat(*[z3.Not(h) for h in [*leaving, *overdue_at]]))
    return conforms, broken, clean


def validate(model: SpecModel, lines: list[tuple[int, Fraction]], err: Fraction
             ) -> conform.Report:
    text = [simlog.log_line(model, e, t) for e, t in lines]
    mon = conform.Monitor(model, "x", frozenset(conform.EventIndex(model).names()),
                          clock_error=err)
    return conform.validate(mon, read_json_lines("x", text))


def conforms(model: SpecModel, lines: list[tuple[int, Fraction]], err: Fraction) -> bool:
    return validate(model, lines, err).outcome is conform.Outcome.CONFORMS


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS)
def test_validate_agrees_with_the_timing_oracle(spec: str) -> None:
    model = SpecModel(load(str(ROOT / spec)), PARAMS.get(spec, {}))
    rng = random.Random(f"validate-differential:{spec}")
    agree = {True: 0, False: 0}
    verdicts: dict[conform.Certainty | None, int] = {}
    for run in simlog.simulated_runs(model, 3, 60, SimConfig(max_steps=30)):
        base = simlog.run_lines(model, run)
        if len(base) < 2:
            continue
        for _ in range(6):
            err = rng.choice([Fraction(1, 10**6), Fraction(1, 20), Fraction(0)])
            lines = list(base)
            k = rng.randrange(len(lines))
            if rng.random() < 0.3:
                del lines[k]
            else:
                shift = Fraction(rng.randint(-3000, 3000), 1000)
                lines[k] = (lines[k][0], max(Fraction(0), lines[k][1] + shift))
                lines.sort(key=lambda x: x[1])
            if err == 0:
                # A simulated time is rounded to the microsecond: exact times only
                # where the model cannot tell.
                err = Fraction(1, 10**6)
            expected = oracle(model, lines, err)
            if expected is None:
                continue
            ok, broken, clean = expected
            rep = validate(model, lines, err)
            assert (rep.outcome is conform.Outcome.CONFORMS) == ok, (run.index, lines, err)
            agree[ok] += 1
            if not ok:
                continue
            certainty = None if not broken else (
                conform.Certainty.POSSIBLE if clean else conform.Certainty.CERTAIN)
            assert rep.certainty is certainty, (run.index, lines, err, rep.broken)
            assert (rep.broken is None) == (certainty is None)
            verdicts[certainty] = verdicts.get(certainty, 0) + 1
    assert agree[True] >= 10 and agree[False] >= 10, agree
    if spec in PARAMS:
        # The response's bound is crossed both ways, and straddled within the error.
        assert all(verdicts.get(c, 0) >= 2 for c in (None, conform.Certainty.CERTAIN,
                                                      conform.Certainty.POSSIBLE)), verdicts


def _inside(pieces: list[list[object]], point: dict[str, Fraction]) -> bool:
    """Whether the parameter valuation lies in the union of polyhedra."""
    def holds(c: object) -> bool:
        total = c.const + sum(a * point[v.removeprefix("p:")]  # type: ignore[attr-defined]
                              for v, a in c.coefs)  # type: ignore[attr-defined]
        return total < 0 if c.strict else total <= 0  # type: ignore[attr-defined]

    return any(all(holds(c) for c in piece) for piece in pieces)


REGION_CASES = [("spec/sglang/deferred_release.kvr", ("T_flight", "T_hold"),
                 {"T_flight": (1, 100), "T_hold": (0, 200)}),
                ("spec/sglang/strict_no_release_on_timeout.kvr", ("T_bound",),
                 {"T_bound": (0, 60)})]
"""Specs, their free parameters and the range (in tenths) points are drawn from."""


@pytest.mark.slow
@pytest.mark.parametrize(("path", "free", "draw"), REGION_CASES,
                         ids=["deferred_release", "bounded_response"])
def test_the_region_agrees_with_validation_at_its_points(
        path: str, free: tuple[str, ...], draw: dict[str, tuple[int, int]]) -> None:
    """``--free``: a valuation is in the region a log implies exactly when ``validate``
    at that valuation says the log conforms, and a violation the region monitor calls
    certain is certain at each such valuation, one it does not see is at none (logs of
    simulated runs with one line shifted)."""
    from checker.smt.conform import RegionMonitor, validate_region

    spec = load(str(ROOT / path))
    base_model = SpecModel(spec, {})
    rng = random.Random(f"validate-region:{path}")
    checked = {True: 0, False: 0}
    seen: set[conform.Certainty | None] = set()
    for run in simlog.simulated_runs(base_model, 5, 8):
        lines = simlog.run_lines(base_model, run)[:8]
        k = rng.randrange(len(lines))
        lines[k] = (lines[k][0], max(Fraction(0), lines[k][1]
                                     + Fraction(rng.randint(-2000, 2000), 1000)))
        lines.sort(key=lambda x: x[1])
        text = [simlog.log_line(base_model, e, t) for e, t in lines]
        err = Fraction(1, 1000)
        mon = RegionMonitor(base_model, "x", frozenset(conform.EventIndex(base_model).names()),
                            free, clock_error=err)
        region = validate_region(mon, read_json_lines("x", text))
        seen.add(region.certainty)
        for _ in range(4):
            point = {p: Fraction(rng.randint(*draw[p]), 10) for p in free}
            model = SpecModel(spec, point)
            expected = _inside(region.pieces, point) if region.outcome is \
                conform.Outcome.CONFORMS else False
            rep = validate(model, lines, err)
            assert (rep.outcome is conform.Outcome.CONFORMS) == expected, (
                run.index, point, region.text())
            checked[expected] += 1
            if not expected:
                continue
            if region.broken is None:
                assert rep.broken is None, (run.index, point, rep.broken)
            elif region.certainty is conform.Certainty.CERTAIN:
                assert rep.certainty is conform.Certainty.CERTAIN, (run.index, point)
    assert checked[True] >= 5 and checked[False] >= 5, checked
    if "T_bound" in free:
        assert conform.Certainty.POSSIBLE in seen, seen  # the response straddles its bound


def _hidden_paths(model: SpecModel, observed: list[int], hidden: frozenset[int],
                  limit: int) -> list[tuple[list[State], list[Edge], list[int]]]:
    """Every discrete path of at most ``limit`` edges that fires the ``observed`` events
    in order with any unobservable ones (``hidden``) between them, ending with the last
    observed one; each with the positions of its observed edges."""
    out: list[tuple[list[State], list[Edge], list[int]]] = []

    def walk(states: list[State], edges: list[Edge], seen: list[int]) -> None:
        k = len(seen)
        if k == len(observed):
            out.append((states, edges, seen))
            return
        if len(edges) >= limit:
            return
        for e in model.edges(states[-1]):
            if e.event == observed[k]:
                walk([*states, e.target], [*edges, e], [*seen, len(edges)])
            elif e.event in hidden and e.failure is None:
                walk([*states, e.target], [*edges, e], seen)

    walk([model.initial_states()[0]], [], [])
    return out


def hidden_oracle(model: SpecModel, lines: list[tuple[int, Fraction]], err: Fraction,
                  hidden: frozenset[int], limit: int) -> bool | None:
    """Whether some run with unobservable events between the lines has its observed
    events within ``err`` of the log (None: a path breaks an assert before its end)."""
    concrete = [b.evaluate(model.values) for b in model.bounds]
    paths = _hidden_paths(model, [e for e, _ in lines], hidden, limit)
    if any(e.failure is not None for _, edges, _ in paths for e in edges[:-1]):
        return None
    for states, edges, seen in paths:
        times, cons = _constraints(model, TraceShape(states, edges),
                                   lambda i: z3.RealVal(str(concrete[i])), None)
        for pos, (_, logged) in zip(seen, lines, strict=True):
            t = times[pos + 1]
            cons += [t >= z3.RealVal(str(logged - err)), t <= z3.RealVal(str(logged + err))]
        solver = z3.Solver()
        solver.add(*cons)
        got = solver.check()
        assert got != z3.unknown
        if got == z3.sat:
            return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize(("path", "unobserved"), [
    ("spec/sglang/immediate_release.kvr", ("router.abort", "prefill.learn_abort")),
    ("spec/sglang/deferred_release.kvr", ("prefill.post", "prefill.learn_abort")),
])
def test_partial_observation_agrees_with_enumerated_runs(path: str,
                                                         unobserved: tuple[str, ...]) -> None:
    """Events of some kinds left out of the log and declared unobservable: the log
    conforms exactly when some discrete path firing the logged events in order, with
    unobservable ones anywhere between, has a timing that puts each logged event
    within the clock error (paths enumerated up to the simulated run's length plus
    two; simulated runs with one logged line shifted)."""
    model = SpecModel(load(str(ROOT / path)), {})
    labels = {e: model.instance(e)[0].label for e in range(len(model.event_names))}
    hidden = frozenset(e for e, name in labels.items() if name in unobserved)
    observable = frozenset(labels.values()) - set(unobserved)
    rng = random.Random(f"validate-hidden:{path}")
    agree = {True: 0, False: 0}
    for run in simlog.simulated_runs(model, 9, 40, SimConfig(max_steps=12)):
        full = simlog.run_lines(model, run)
        lines = [(e, t) for e, t in full if e not in hidden]
        if len(lines) < 2:
            continue
        k = rng.randrange(len(lines))
        lines[k] = (lines[k][0], max(Fraction(0), lines[k][1]
                                     + Fraction(rng.randint(-3000, 3000), 1000)))
        lines.sort(key=lambda x: x[1])
        err = Fraction(1, 1000)
        expected = hidden_oracle(model, lines, err, hidden, len(full) + 2)
        if expected is None:
            continue
        text = [simlog.log_line(model, e, t) for e, t in lines]
        mon = conform.Monitor(model, "x", observable, clock_error=err)
        rep = conform.validate(mon, read_json_lines("x", text))
        assert (rep.outcome is conform.Outcome.CONFORMS) == expected, (run.index, lines)
        agree[expected] += 1
    assert agree[True] >= 5 and agree[False] >= 5, agree

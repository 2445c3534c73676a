"""Timed counterexamples: timestamps and feasible parameter regions of a trace.

A discrete trace — the edges a run took and the states it passed — fixes which
clock constraints must hold when.  With one timestamp per step, the clock
``c`` at step ``i`` reads ``t_i - t_r`` where ``r`` is the step that last
reset ``c`` (or ``0``), so every guard, deadline and hazard along the trace is
a linear constraint over the timestamps and the timing parameters.

* :func:`timestamps` solves them for concrete parameter values and returns
  readable times: as many consecutive events as the model allows at least
  one time unit apart (so a diagram does not pile every event on one
  instant), then the last time and the sum of all times minimised;
* :func:`checker.smt.synth.trace_region` eliminates the timestamps and
  returns the exact parameter region in which the same sequence of events is
  possible.

Every query runs with a fixed random seed and a timeout; ``unknown`` is
reported as such (:class:`SolverUnknown`), never read as "infeasible".
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from fractions import Fraction

import z3

from checker.model.interface import (
    GE,
    LE,
    LT,
    ClockAtom,
    LinExpr,
    TimedModel,
    Undecided,
)
from checker.model.timeline import Elapse, Reset, TraceShape, timeline

TIMEOUT_MS = 20_000
SEED = 0


class SolverUnknown(Undecided):
    """Z3 could not decide a query (timeout or incompleteness)."""


def _solver_params() -> None:
    z3.set_param("smt.random_seed", SEED)
    z3.set_param("sat.random_seed", SEED)


def _to_fraction(v: z3.ArithRef) -> Fraction:
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    if z3.is_int_value(v):
        return Fraction(v.as_long())
    raise SolverUnknown(f"non-rational value {v}")


def _lin(b: LinExpr, params: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
    term: z3.ArithRef = z3.RealVal(str(b.const))
    for p, c in b.terms:
        term = term + z3.RealVal(str(c)) * params[p]
    return term


def _constraints(
    model: TimedModel,
    shape: TraceShape,
    bound: Callable[[int], z3.ArithRef],
    strict_gap: z3.ArithRef | None,
    deadline: float | None = None,
) -> tuple[list[z3.ArithRef], list[z3.BoolRef]]:
    """Timestamps ``t_0 .. t_k`` (plus one for a hazard) and the constraints on them
    (:func:`checker.model.timeline.timeline` over Z3 reals); raises
    :class:`SolverUnknown` once ``time.monotonic()`` passes ``deadline``."""
    times = [z3.Real("t0")]
    cons: list[z3.BoolRef] = [times[0] == 0]
    last_reset: dict[int, z3.ArithRef] = {}

    def atom(a: ClockAtom, now: z3.ArithRef) -> z3.BoolRef:
        value = now - last_reset.get(a.clock, times[0])
        b = bound(a.bound)
        if a.op == LE:
            return value <= b
        if a.op == GE:
            return value >= b
        if strict_gap is not None:
            return value <= b - strict_gap if a.op == LT else value >= b + strict_gap
        return value < b if a.op == LT else value > b

    for op in timeline(model, shape):
        now = times[-1]
        if deadline is not None and len(times) % 64 == 0 and time.monotonic() > deadline:
            raise SolverUnknown("the time allowed ran out")
        if isinstance(op, Elapse):
            nxt = z3.Real(f"t{len(times)}")
            cons.append(nxt >= now)
            times.append(nxt)
        elif isinstance(op, Reset):
            for c in op.clocks:
                last_reset[c] = now
        else:
            cons.extend(atom(a, now) for a in op.atoms)
    return times, cons


def _timeout_ms(deadline: float | None) -> int:
    """Z3's timeout for a query that must end by ``deadline`` (``time.monotonic()``)."""
    if deadline is None:
        return TIMEOUT_MS
    left = int((deadline - time.monotonic()) * 1000)
    if left <= 0:
        raise SolverUnknown("the time allowed ran out")
    return min(TIMEOUT_MS, left)


def timestamps(
    model: TimedModel, values: Mapping[str, Fraction], shape: TraceShape,
    deadline: float | None = None,
) -> list[Fraction]:
    """Readable concrete times for each step of a trace (one more for a hazard),
    found by ``deadline`` (``time.monotonic()``) if one is given.

    Raises :class:`SolverUnknown` if Z3 cannot decide (or the deadline passes),
    ValueError if the trace is infeasible (which would be an engine bug).
    """
    _solver_params()
    concrete = [b.evaluate(values) for b in model.bounds]

    def bound(i: int) -> z3.ArithRef:
        return z3.RealVal(str(concrete[i]))

    # Strict constraints have no earliest solution; keep a readable gap from them.
    for gap in (Fraction(1), Fraction(1, 2), Fraction(1, 10), Fraction(1, 100),
                Fraction(1, 10_000), None):
        g = z3.RealVal(str(gap)) if gap is not None else None
        times, cons = _constraints(model, shape, bound, g, deadline)
        opt = z3.Optimize()
        opt.set("timeout", _timeout_ms(deadline))
        opt.add(*cons)
        # Readability first: consecutive events one time unit apart where the
        # model allows it; then the run as short and as early as possible.
        for a, b in itertools.pairwise(times):
            opt.add_soft(b - a >= 1, 1, "spread")
        opt.minimize(times[-1])
        opt.minimize(z3.Sum(*times) if len(times) > 1 else times[0])
        res = opt.check()
        if res == z3.sat:
            m = opt.model()
            return [_to_fraction(m.eval(t, model_completion=True)) for t in times]
        if res == z3.unknown:
            raise SolverUnknown(opt.reason_unknown())
    raise ValueError("the trace is not feasible in time")


def lasso_timestamps(
    model: TimedModel, values: Mapping[str, Fraction], shape: TraceShape, loop: int
) -> tuple[list[Fraction], bool]:
    """Concrete times for a lasso: ``shape`` is the stem and one turn of the cycle,
    whose turn starts at state ``loop - 1`` and returns to the same discrete state at
    the last state.  The turn takes positive time and, where the model allows it,
    every clock the cycle resets reads the same at the turn's end as at its start, so
    repeating the turn's delays repeats the run: the second result says whether that
    was achieved (False: the times of one feasible turn, which later turns may vary).

    Raises :class:`SolverUnknown` if Z3 cannot decide, ValueError if even one turn is
    infeasible (an engine bug)."""
    _solver_params()
    concrete = [b.evaluate(values) for b in model.bounds]

    def bound(i: int) -> z3.ArithRef:
        return z3.RealVal(str(concrete[i]))

    start = loop - 1
    k = len(shape.states) - 1
    reset_at: list[dict[int, int]] = [{}]
    for e in shape.edges:
        nxt = dict(reset_at[-1])
        for c in e.resets:
            nxt[c] = len(reset_at)
        reset_at.append(nxt)
    in_cycle = {c for e in shape.edges[start:] for c in e.resets}
    # A clock the turn never resets grows from turn to turn: repeating is sound only if
    # the turn bounds it from below alone.
    atoms = [a for e in shape.edges[start:] for a in e.guard]
    atoms += [a for st in shape.states[start:] for a in model.deadlines(st)]
    growing_ok = all(a.op in (GE, ">") or a.clock in in_cycle for a in atoms)
    for periodic in (True, False):
        for gap in (Fraction(1), Fraction(1, 2), Fraction(1, 10), Fraction(1, 100),
                    Fraction(1, 10_000), None):
            g = z3.RealVal(str(gap)) if gap is not None else None
            times, cons = _constraints(model, shape, bound, g)
            opt = z3.Optimize()
            opt.set("timeout", TIMEOUT_MS)
            opt.add(*cons)
            if k > start:
                opt.add(times[k] > times[start])
            if periodic:
                for c in sorted(in_cycle):
                    a = times[reset_at[start].get(c, 0)]
                    b = times[reset_at[k].get(c, 0)]
                    opt.add(times[k] - b == times[start] - a)
            for a, b in itertools.pairwise(times):
                opt.add_soft(b - a >= 1, 1, "spread")
            opt.minimize(times[-1])
            opt.minimize(z3.Sum(*times) if len(times) > 1 else times[0])
            res = opt.check()
            if res == z3.sat:
                m = opt.model()
                got = [_to_fraction(m.eval(t, model_completion=True)) for t in times]
                return got, periodic and growing_ok
            if res == z3.unknown:
                raise SolverUnknown(opt.reason_unknown())
    raise ValueError("the lasso is not feasible in time")

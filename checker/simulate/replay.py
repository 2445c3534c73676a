"""Replaying a timed run in the concrete semantics: each event at its given time.

Where :mod:`checker.simulate.engine` draws the times of a run, :func:`replay` is
given them (a test schedule, a log): from the initial state with every clock at
zero, it lets time pass to each step's instant and fires the step's event there,
in exact rational arithmetic.  A step that cannot fire then (no edge of its event
whose guard holds, a deadline of the state passed before it, a deadline of the
target broken at once) ends the replay as *blocked*; the first property broken
(an ``assert`` of the edge fired, an invariant of a state entered, a bounded
response whose observer clock passes its bound while the run stays in a state, up
to the next step or, after the last one, up to ``until``) ends it as a
*violation*.  Otherwise every step fired and the replay *completes*.

It is the simulator's semantics with the race removed; the tests replay every
schedule of ``kvrace schedules`` here and through ``kvrace validate`` (the zone
monitor), two independent readings of the same run.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from checker.model.interface import GE, GT, LE, LT, ClockAtom, State, TimedModel


class ReplayEnd(str, enum.Enum):
    """How a replay ended."""

    COMPLETED = "completed"
    """Every step fired at its time and no property broke."""
    VIOLATION = "violation"
    """A property broke (see :attr:`Replay.prop`)."""
    BLOCKED = "blocked"
    """A step could not fire at its time."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Replay:
    """The outcome of :func:`replay`."""

    end: ReplayEnd
    fired: int
    """Steps fired (a violating ``assert`` step counts: it fired)."""
    prop: str | None = None
    """The property broken: ``assert``, an invariant's or a response's name."""
    message: str | None = None
    """Why it broke, or why a step was blocked."""
    time: Fraction | None = None
    """When the property broke (the first instant a response is overdue)."""


class _Clocks:
    """Clock values of a replay: each clock reads the time since its last reset."""

    def __init__(self, model: TimedModel) -> None:
        self.bounds = [b.evaluate(model.values) for b in model.bounds]
        self.reset = [Fraction(0)] * len(model.clock_names)

    def holds(self, a: ClockAtom, at: Fraction) -> bool:
        """Whether atom ``a`` holds at instant ``at``."""
        v, b = at - self.reset[a.clock], self.bounds[a.bound]
        return {LT: v < b, LE: v <= b, GT: v > b, GE: v >= b}[a.op]

    def first(self, atoms: Sequence[ClockAtom], now: Fraction, until: Fraction
              ) -> Fraction | None:
        """The first instant of ``[now, until]`` at which every atom holds (its infimum,
        if that is open), None if there is none: each atom holds on a half-line of
        instants, as clocks grow with time."""
        lo, lo_open, hi, hi_open = now, False, until, False
        for a in atoms:
            at = self.reset[a.clock] + self.bounds[a.bound]
            if a.op in (GT, GE):
                if at > lo or (at == lo and a.op is GT):
                    lo, lo_open = at, a.op is GT
            elif at < hi or (at == hi and a.op is LT):
                hi, hi_open = at, a.op is LT
        return lo if lo < hi or (lo == hi and not lo_open and not hi_open) else None


def replay(model: TimedModel, steps: Sequence[tuple[int, Fraction]],
           until: Fraction | None = None) -> Replay:
    """Fire each ``(event instance, time)`` of ``steps`` in order (times from the start
    of the run, non-decreasing); then let time pass to ``until``, if given."""
    ended, state, clocks, now = _fire(model, steps)
    if ended is not None:
        return ended
    if until is not None and until > now:
        stay = _stay(model, state, clocks, now, until)
        if stay is not None:
            return Replay(ReplayEnd.VIOLATION if stay[0] else ReplayEnd.BLOCKED, len(steps),
                          *stay)
    return Replay(ReplayEnd.COMPLETED, len(steps))


def time_stop(model: TimedModel, steps: Sequence[tuple[int, Fraction]]) -> Fraction | None:
    """After ``steps`` (which must replay), the instant the last state's deadlines stop
    time at (None if they never do): a deadlock schedule's end, when nothing can fire."""
    ended, state, clocks, _ = _fire(model, steps)
    assert ended is None, ended
    return min((clocks.reset[a.clock] + clocks.bounds[a.bound]
                for a in model.deadlines(state)), default=None)


def _fire(model: TimedModel, steps: Sequence[tuple[int, Fraction]]
          ) -> tuple[Replay | None, State, _Clocks, Fraction]:
    """Fire the steps: how the replay ended if it did (blocked or a violation), else
    None, with the state, the clocks and the time reached."""
    clocks = _Clocks(model)
    holds = clocks.holds
    state = model.initial_states()[0]
    now = Fraction(0)
    for k, (event, t) in enumerate(steps):
        if t < now:
            return (Replay(ReplayEnd.BLOCKED, k, None, f"step {k + 1} is before step {k}"),
                    state, clocks, now)
        stay = _stay(model, state, clocks, now, t)
        if stay is not None:
            end = ReplayEnd.VIOLATION if stay[0] else ReplayEnd.BLOCKED
            return Replay(end, k, *stay), state, clocks, now
        edge = next((e for e in model.edges(state)
                     if e.event == event and all(holds(a, t) for a in e.guard)), None)
        name = model.event_names[event]
        if edge is None:
            return (Replay(ReplayEnd.BLOCKED, k, None,
                           f"step {k + 1}: no edge of {name} is enabled at t={t}"),
                    state, clocks, now)
        now = t
        if edge.failure is not None:
            return (Replay(ReplayEnd.VIOLATION, k + 1, "assert", edge.failure, t),
                    state, clocks, now)
        for c in edge.resets:
            clocks.reset[c] = t
        state = edge.target
        if not all(holds(a, t) for a in model.deadlines(state)):
            return (Replay(ReplayEnd.BLOCKED, k, None, f"step {k + 1}: {name} breaks a"
                           " deadline of its target at once"), state, clocks, now)
        broken = model.violations(state)
        if broken:
            return (Replay(ReplayEnd.VIOLATION, k + 1, broken[0].property,
                           broken[0].message, t), state, clocks, now)
    return None, state, clocks, now


def _stay(model: TimedModel, state: State, clocks: _Clocks, now: Fraction, until: Fraction
          ) -> tuple[str | None, str, Fraction | None] | None:
    """What staying in ``state`` from ``now`` until ``until`` (the next step's instant)
    breaks: a bounded response overdue by then (its property, message and the first
    instant it is), else a deadline passed (None, why, None); None if nothing."""
    for h in model.hazards(state):
        at = clocks.first(h.atoms, now, until)
        if at is not None:
            return h.property, h.message, at
    for a in model.deadlines(state):
        if not clocks.holds(a, until):
            return None, (f"a deadline on {model.clock_names[a.clock]} passed before"
                          f" t={until}"), None
    return None


def steps_of(model: TimedModel, labels: Sequence[tuple[str, Fraction]]
             ) -> list[tuple[int, Fraction]]:
    """Event instances by the names the model prints them with (``decode.land(A, 0)``),
    each with its time."""
    index = {name: i for i, name in enumerate(model.event_names)}
    return [(index[name], t) for name, t in labels]

"""The timing semantics of a discrete trace, stated once.

A run that takes edges ``e_1 .. e_k`` through states ``s_0 .. s_k`` is feasible in
time when there are instants ``0 = t_0 <= t_1 <= ... <= t_k`` such that

* the deadlines of ``s_0`` hold at ``t_0``;
* for each step ``i``: the deadlines of the state left, ``s_{i-1}``, still hold at
  ``t_i`` (time may not pass them; deadlines are convex, so holding at both ends
  of a stay means holding throughout), the guard of ``e_i`` holds at ``t_i``, its
  clocks are reset, and the deadlines of the state entered hold at ``t_i``;
* an edge that breaks an ``assert`` ends the run at its guard (its target is not
  entered);
* a bounded-response hazard needs one more instant, after the last, at which
  the last state's deadlines and the hazard's atoms hold.

:func:`timeline` spells this out as a sequence of operations — time passes,
atoms hold, clocks are reset — that each engine interprets in its own terms: the
exact zone replay of a trace (DBMs, :func:`checker.semantics.traces.replay_zone`),
its timestamps (Z3, :func:`checker.smt.timing.timestamps`) and the parameter
region in which it is feasible (polyhedra, :func:`checker.smt.synth.trace_region`,
``--explain``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from checker.model.interface import ClockAtom, Edge, State, TimedModel


@dataclass(frozen=True)
class TraceShape:
    """The parts of a discrete trace the timing constraints depend on.

    ``states[0]`` is the initial state; ``edges[i]`` leads from ``states[i]`` to
    ``states[i + 1]`` (for a violated assert the last edge's target is not
    entered).  ``hazard`` holds the clock atoms that must become true after the
    last step when the violation is a bounded-response hazard.
    """

    states: Sequence[State]
    edges: Sequence[Edge]
    hazard: Sequence[ClockAtom] = ()

    @classmethod
    def of(cls, model: TimedModel, states: Sequence[State], edges: Sequence[Edge],
           prop: str | None = None) -> TraceShape:
        """The shape of a trace ending in a violation of ``prop`` (its hazard's atoms
        when ``prop`` is a bounded response that the last state is overdue for)."""
        hazard: Sequence[ClockAtom] = ()
        if prop is not None:
            for h in model.hazards(states[-1]):
                if h.property == prop:
                    hazard = h.atoms
                    break
        return cls(states, edges, hazard)


@dataclass(frozen=True)
class Elapse:
    """Time passes: the next instant is at or after the current one."""


@dataclass(frozen=True)
class Holds:
    """The atoms hold at the current instant, each clock read since its last reset."""

    atoms: Sequence[ClockAtom]
    why: str
    """``deadline``, ``guard`` or ``hazard``."""


@dataclass(frozen=True)
class Reset:
    """The clocks are reset at the current instant."""

    clocks: Sequence[int]


Op = Elapse | Holds | Reset


def timeline(model: TimedModel, shape: TraceShape, closed: bool = False) -> Iterator[Op]:
    """The trace's timing constraints in order (see the module docstring).

    ``closed`` lets time pass once more at the end, within the last state's
    deadlines (the time-closed zone of the last symbolic state); a hazard implies
    it.  The first instant is ``t_0 = 0`` and each :class:`Elapse` starts the next.
    """
    states = shape.states
    yield Holds(model.deadlines(states[0]), "deadline")
    for i, e in enumerate(shape.edges):
        yield Elapse()
        yield Holds(model.deadlines(states[i]), "deadline")
        yield Holds(e.guard, "guard")
        if e.failure is not None:
            return
        if e.resets:
            yield Reset(e.resets)
        yield Holds(model.deadlines(states[i + 1]), "deadline")
    if closed or shape.hazard:
        yield Elapse()
        yield Holds(model.deadlines(states[-1]), "deadline")
    if shape.hazard:
        yield Holds(shape.hazard, "hazard")

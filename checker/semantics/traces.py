"""Traces: from a path of symbolic states (of representatives) to a concrete run.

The search stores representatives (images under symmetries); a path to a node
is a list of (representative state, event, guard branch, symmetry) steps.  The
concrete run takes at each step the image of the representative's edge.
:func:`replay_zone` computes the exact zone at the end of a concrete run.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from checker.domains import dbm
from checker.model.interface import GT, LE, LT, ClockAtom, Edge, State, Symmetry, TimedModel
from checker.model.timeline import Elapse, Reset, TraceShape, timeline


@dataclass(frozen=True)
class TraceStep:
    """One step of a trace: the event fired (``None`` for the initial state),
    the edge taken, and the discrete state reached."""

    event: int | None
    label: str
    edge: Edge | None
    state: State


@dataclass(frozen=True)
class PathStep:
    """A node on the search's path: the representative state, the event and guard
    branch that reached it from the previous representative (-1 for the first),
    and the symmetry mapping the successor onto this representative."""

    state: State
    event: int
    branch: int
    sym: Symmetry | None


def _inverse(m: Sequence[int]) -> list[int]:
    inv = [0] * len(m)
    for a, b in enumerate(m):
        inv[b] = a
    return inv


def concrete(model: TimedModel, path: Sequence[PathStep],
             extra: tuple[int, int] | None = None) -> list[TraceStep]:
    """The concrete run along ``path`` (undoing symmetry), then the edge ``extra``
    (event and branch of the last representative) if given.

    A permutation may also permute the convex branches of a guard, so the image
    edge is found by its permuted guard."""
    n_events = len(model.event_names)
    n_clocks = len(model.clock_names)

    def maps(sym: Symmetry | None) -> tuple[list[int], list[int]]:
        if sym is None:
            return list(range(n_events)), list(range(n_clocks))
        return list(sym.events), list(sym.clocks)

    def image_edge(rep_state: State, event: int, branch: int, s: State,
                   tau: list[int], tau_c: list[int]) -> Edge:
        rep_edge = [e for e in model.edges(rep_state) if e.event == event][branch]
        want = sorted((tau_c[a.clock], a.op, a.bound) for a in rep_edge.guard)
        ev = tau[event]
        candidates = [e for e in model.edges(s) if e.event == ev]
        for e in candidates:
            if sorted((a.clock, a.op, a.bound) for a in e.guard) == want:
                return e
        return candidates[branch]  # pragma: no cover - images always exist

    # tau / tau_c map events / clocks of representatives to the concrete run's.
    ev_map, ck_map = maps(path[0].sym)
    tau, tau_c = _inverse(ev_map), _inverse(ck_map)
    s = model.initial_states()[0]
    steps = [TraceStep(None, "initial", None, s)]
    for prev, node in itertools.pairwise(path):
        edge = image_edge(prev.state, node.event, node.branch, s, tau, tau_c)
        s = edge.target
        steps.append(TraceStep(edge.event, model.event_names[edge.event], edge, s))
        ev_map, ck_map = maps(node.sym)
        sinv, cinv = _inverse(ev_map), _inverse(ck_map)
        tau = [tau[sinv[e]] for e in range(n_events)]
        tau_c = [tau_c[cinv[c]] for c in range(n_clocks)]
    if extra is not None:
        edge = image_edge(path[-1].state, extra[0], extra[1], s, tau, tau_c)
        steps.append(TraceStep(edge.event, model.event_names[edge.event], edge, edge.target))
    return steps


def renamed(model: TimedModel, steps: list[TraceStep]) -> list[TraceStep]:
    """``steps`` with its symmetric values renamed in order of first mention (when
    the model offers ``first_mention_permutation`` and the initial state is unchanged
    by it): the same run up to a permutation, so that traces read A, then B."""
    rename = getattr(model, "first_mention_permutation", None)
    if rename is None or len(steps) < 2:
        return steps
    sym = rename([st.event for st in steps[1:] if st.event is not None])
    if sym is None or sym.state(steps[0].state) != steps[0].state:
        return steps
    s = steps[0].state
    out = [steps[0]]
    for st in steps[1:]:
        assert st.edge is not None
        want = sorted((sym.clocks[a.clock], a.op, a.bound) for a in st.edge.guard)
        ev = sym.events[st.edge.event]
        match = [e for e in model.edges(s) if e.event == ev
                 and sorted((a.clock, a.op, a.bound) for a in e.guard) == want]
        if not match:  # pragma: no cover - the image of a run is a run
            return steps
        edge = match[0]
        out.append(TraceStep(edge.event, model.event_names[edge.event], edge, edge.target))
        s = edge.target
    return out


def replay_zone(model: TimedModel, bounds: Sequence[int], trace: Sequence[TraceStep]
                ) -> dbm.Dbm | None:
    """The exact zone (over every clock) at the end of ``trace``, time-closed, or None
    if the trace is infeasible (:func:`checker.model.timeline.timeline` in DBMs)."""
    n = len(model.clock_names) + 1
    z = dbm.zero(n)
    states = [step.state for step in trace]
    edges = [step.edge for step in trace[1:] if step.edge is not None]
    for op in timeline(model, TraceShape(states, edges), closed=True):
        if isinstance(op, Elapse):
            dbm.up(z, n)
        elif isinstance(op, Reset):
            for c in op.clocks:
                dbm.reset(z, n, c + 1)
        elif not constrain_atoms(z, n, op.atoms, bounds):
            return None
    return z


def constrain_atoms(z: dbm.Dbm, n: int, atoms: Sequence[ClockAtom], bounds: Sequence[int]
                    ) -> bool:
    """Intersect the DBM ``z`` over every clock (``n``: clocks + 1) with ``atoms``, their
    bounds scaled as ``bounds``, in place; False when it becomes empty."""
    for a in atoms:
        b = bounds[a.bound]
        i = a.clock + 1
        if a.op in (LE, LT):
            ok = dbm.constrain(z, n, i, 0, dbm.bound(b, a.op == LT))
        else:
            ok = dbm.constrain(z, n, 0, i, dbm.bound(-b, a.op == GT))
        if not ok:
            return False
    return True

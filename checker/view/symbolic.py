"""Symbolic runs for the viewer's symbolic simulator (UPPAAL's symbolic mode).

A :class:`SymbolicRun` fires events without choosing their times.  After each
step it keeps the *zone*: every valuation of the clocks, and of the absolute
time ``t`` (a clock never reset), that some timing of the events so far
reaches, time passing in the last state included.  An event is enabled when
its guard meets that zone (within the deadlines of the state it leaves and of
the state it enters); its window is the set of absolute times at which it can
fire, for some timing of the steps before it.  The zones follow the timing
semantics of :func:`checker.model.timeline.timeline`, applied one step at a
time, so a run costs time linear in its length.

:meth:`SymbolicRun.concretise` picks times for every step at once (Z3, the same
readable timestamps as a counterexample's) and returns the concrete
:class:`~checker.view.steps.Run`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from checker import smt
from checker.domains import dbm
from checker.model import ir
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.model.interface import Edge, ModelRuntimeError, State, scaled_bounds
from checker.model.timeline import TraceShape
from checker.semantics.traces import constrain_atoms
from checker.view.steps import Budget, OverBudget, Run, RunError, zone_lines

__all__ = ["MAX_CONCRETE", "SymbolicRun", "symbolic_view_json", "too_long_to_concretise"]

MAX_CONCRETE = 300
"""The longest symbolic run :meth:`SymbolicRun.concretise` gives times to: Z3 chooses
the times of all the steps at once, and its time grows faster than the run (400
events took 0.5 s, 2,000 took 15 s)."""


def too_long_to_concretise(events: int) -> str | None:
    """Why a run of ``events`` events cannot be given times at once, or None."""
    if events <= MAX_CONCRETE:
        return None
    return (f"concretise: at most {MAX_CONCRETE} events can be given times at once"
            f" (this run has {events}); go back some steps")


@dataclass(frozen=True)
class SymbolicChoice:
    """An event enabled after a step: its position in the model's ``edges`` of the
    state, the edge, and the zone at the instant it would fire (before its resets)."""

    index: int
    edge: Edge
    zone: dbm.Dbm


class SymbolicRun:
    """A run of ``model`` as a sequence of edge positions, with the zone of each step."""

    def __init__(self, model: SpecModel, moves: Sequence[int] = (),
                 budget: Budget | None = None) -> None:
        self.model = model
        self.budget = budget
        self.n = len(model.clock_names) + 2  # the reference clock, the clocks, then t
        self.bounds, self.scale = scaled_bounds(model.bounds, model.values)
        self.states: list[State] = [model.initial_states()[0]]
        self.edges: list[Edge] = []
        self.moves: list[int] = []
        self.reset: list[frozenset[int]] = [frozenset()]
        self.fired: list[dbm.Dbm | None] = [None]  # the zone at each step's instant
        z = dbm.zero(self.n)
        self.zones: list[dbm.Dbm | None] = [self._settle(z, self.states[0])]
        for k in moves:
            self.fire(k)

    def __len__(self) -> int:
        return len(self.states)

    @property
    def ended(self) -> bool:
        """Whether the run ended in a failed ``assert`` (nothing can follow it)."""
        return bool(self.edges) and self.edges[-1].failure is not None

    def _constrain(self, z: dbm.Dbm, atoms: Sequence[Any]) -> bool:
        return constrain_atoms(z, self.n, atoms, self.bounds)

    def _settle(self, z: dbm.Dbm, s: State) -> dbm.Dbm | None:
        """``z`` on entering ``s``: its deadlines hold, then time passes within them."""
        deadlines = self.model.deadlines(s)
        if not self._constrain(z, deadlines):
            return None
        dbm.up(z, self.n)
        if not self._constrain(z, deadlines):
            return None
        return z

    def _at_firing(self, i: int, e: Edge) -> dbm.Dbm | None:
        """The zone at the instant edge ``e`` fires after step ``i`` (its guard holds,
        before its resets); None if it cannot fire."""
        base = self.zones[i]
        if base is None:
            return None
        z = list(base)
        if not self._constrain(z, e.guard):
            return None
        if e.failure is None:
            after = list(z)
            for c in e.resets:
                dbm.reset(after, self.n, c + 1)
            if not self._constrain(after, self.model.deadlines(e.target)):
                return None
        return z

    def choices(self, i: int) -> list[SymbolicChoice]:
        """The events enabled after step ``i``: their guards meet its zone."""
        if i == len(self) - 1 and self.ended:
            return []
        out: list[SymbolicChoice] = []
        for k, e in enumerate(self.model.edges(self.states[i])):
            try:
                z = self._at_firing(i, e)
            except ModelRuntimeError:  # the model errs on arrival: not offered
                continue
            if z is not None:
                out.append(SymbolicChoice(k, e, z))
        return out

    def fire(self, k: int) -> None:
        """Append the firing of edge ``k`` of the last state; raises RunError when its
        guard does not meet the zone."""
        i = len(self) - 1
        if self.budget is not None:
            self.budget.tick()
        if self.ended:
            raise RunError("the run ended with a violated assert; go back to continue")
        got = [c for c in self.choices(i) if c.index == k]
        if not got:
            raise RunError(f"step {i + 1}: no enabled event number {k} in this zone")
        ch = got[0]
        self.states.append(ch.edge.target)
        self.edges.append(ch.edge)
        self.moves.append(k)
        self.fired.append(ch.zone)
        self.reset.append(self.reset[i] | frozenset(ch.edge.resets))
        if ch.edge.failure is not None:
            self.zones.append(list(ch.zone))
            return
        z = list(ch.zone)
        for c in ch.edge.resets:
            dbm.reset(z, self.n, c + 1)
        self.zones.append(self._settle(z, ch.edge.target))

    def window(self, z: dbm.Dbm) -> str:
        """The absolute times ``t`` of zone ``z``, as an interval."""
        t = self.n - 1
        low, upp = z[t], z[t * self.n]

        def num(c: int) -> str:
            return tr.fmt_time(Fraction(c, self.scale))

        lo = ("[" if low & 1 else "(") + num(-(low >> 1))
        hi = (num(upp >> 1) + ("]" if upp & 1 else ")")) if upp < dbm.INF else "\u221e)"
        return f"t \u2208 {lo}, {hi}"

    def zone(self, i: int) -> list[str]:
        """The constraints of step ``i``'s zone, over the clocks reset so far and t."""
        z = self.zones[i]
        if z is None:
            return ["false"]
        keep = [c + 1 for c in sorted(self.reset[i])] + [self.n - 1]
        names = ["0", *(self.model.clock_names[c - 1] for c in keep[:-1]), "t"]
        lines = zone_lines(dbm.project(z, self.n, keep), len(keep) + 1, names, self.scale)
        return [_readable(line) for line in lines]

    def concretise(self) -> Run:
        """A concrete timed run along the same events (readable times, from Z3),
        within this run's budget (:class:`OverBudget` when Z3 needs more)."""
        shape = TraceShape(self.states, self.edges)
        refused = too_long_to_concretise(len(self.edges))
        if refused is not None:
            raise RunError(refused)
        budget = self.budget
        deadline = budget.deadline if budget is not None else None
        try:
            times = smt.timestamps(self.model, self.model.values, shape, deadline)
        except smt.SolverUnknown as exc:
            if budget is not None and time.monotonic() >= budget.deadline:
                raise OverBudget(f"inconclusive: no times were chosen within the"
                                 f" {budget.seconds:g} s an answer may take"
                                 " (concretise a shorter run)") from None
            raise RunError(f"no times could be chosen (solver: {exc})") from None
        except ValueError:
            raise RunError("this sequence of events cannot be timed") from None
        return Run(self.model, list(zip(self.moves, times[1:len(self.states)], strict=True)),
                   self.budget)

    def trace(self) -> tr.Trace:
        """The run as a :class:`~checker.model.trace.Trace` without times."""
        model = self.model
        events: list[tuple[ir.Event, tuple[int, ...]] | None] = [None]
        receives: list[tuple[str, tuple[int, ...]] | None] = [None]
        failures: list[str | None] = [None]
        for prev, e in zip(self.states, self.edges, strict=False):
            events.append(model.instance(e.event))
            receives.append(model.receive_of(e.event, prev))
            failures.append(e.failure)
        labels = ["initial"] + [model.event_names[e.event] for e in self.edges]
        return tr.build(model.spec, model.values, "run", None, None, labels, self.states,
                        events, receives, failures, None,
                        tick=self.budget.tick if self.budget is not None else None)


def _readable(line: str) -> str:
    """``x - y <= 0`` as ``x <= y`` (a clock against the absolute time, or another)."""
    for op in (" <= 0", " < 0", " = 0"):
        if line.endswith(op) and " - " in line:
            left, right = line[: -len(op)].split(" - ", 1)
            return f"{left}{op[:-2]} {right}"
    return line


def _notes(run: SymbolicRun, i: int, failure: str | None) -> tuple[list[str], bool]:
    """What is wrong at step ``i``, and whether it violates a property."""
    notes: list[str] = []
    violated = failure is not None
    if failure is not None:
        notes.append(f"assertion violated: {failure}")
    try:
        for v in run.model.violations(run.states[i]):
            notes.append(f"{v.property} violated: {v.message}")
            violated = True
    except ModelRuntimeError as exc:
        notes.append(f"model error: {exc.message}")
    if run.zones[i] is None:
        notes.append("no timing reaches this step")
    return notes, violated


def symbolic_view_json(run: SymbolicRun) -> dict[str, Any]:
    """What the page shows of a symbolic run: the fields of
    :func:`checker.view.steps.view_json`, with each step's window of absolute times
    instead of a time, its zone over the clocks and ``t``, and no clock values."""
    model = run.model
    trace = run.trace()
    steps: list[dict[str, Any]] = []
    violating = None
    for i, st in enumerate(trace.steps):
        if run.budget is not None:
            run.budget.tick()
        notes, violated = _notes(run, i, st.failure)
        if violated and violating is None:
            violating = i
        fired = run.fired[i]
        try:
            choices = run.choices(i)
        except ModelRuntimeError as exc:
            choices = []
            notes.append(f"model error: {exc.message}")
        if not choices and not violated and run.zones[i] is not None:
            notes.append("no event can fire in this zone")
        steps.append({
            "index": i,
            "label": st.label,
            "actor": st.actor,
            "event": st.event.split(".", 1)[1] if st.event else None,
            "args": list(st.args),
            "move": run.moves[i - 1] if i > 0 else None,
            "time": None,
            "window": run.window(fired) if fired is not None else None,
            "receives": st.receives,
            "failure": st.failure,
            "state": {k: tr.show_value(v) for k, v in st.state.items()},
            "changes": {k: [tr.show_value(a), tr.show_value(b)]
                        for k, (a, b) in st.changes.items()},
            "clocks": [],
            "zone": run.zone(i),
            "enabled": [{
                "move": ch.index,
                "label": model.event_names[ch.edge.event],
                "actor": model.instance(ch.edge.event)[0].actor,
                "window": run.window(ch.zone),
                "delay": "",
                "pick": None,
                "fails": ch.edge.failure is not None,
            } for ch in choices],
            "notes": notes,
        })
    return {
        "model": trace.model,
        "source": trace.source,
        "params": {k: tr.fmt_time(v) for k, v in trace.params.items()},
        "actors": list(trace.actors),
        "verdict": "run",
        "property": None,
        "message": None,
        "violating": violating,
        "symbolic": True,
        "steps": steps,
    }

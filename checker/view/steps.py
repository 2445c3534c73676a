"""Runs of a model, step by step, as the viewer shows them.

A :class:`Run` is a concrete timed run of a compiled model: the edges it took
(by their position in :meth:`~checker.model.interface.TimedModel.edges` of the
state they left) and the time each one fired.  From it this module computes,
for every step, what the viewer displays: the state table and what changed,
the solved timestamp, each clock's value, the zone of the event sequence so
far, and the events enabled there with the window of times at which each can
fire.  The same data drives the step-through of a counterexample and the
simulator; it is plain JSON.

A counterexample (or a trace file) becomes a run by matching each step's
event label and resulting state against the model's edges
(:func:`run_of_trace`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from checker.domains import dbm
from checker.errors import KvraceError
from checker.model import ir
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.model.interface import (
    GE,
    GT,
    LT,
    ClockAtom,
    Edge,
    ModelRuntimeError,
    State,
    scaled_bounds,
)
from checker.results import Verdict
from checker.semantics.traces import constrain_atoms

__all__ = ["Budget", "Choice", "OverBudget", "Run", "RunError", "Window", "check_info",
           "lasso_info", "run_of_trace", "view_json"]


class RunError(KvraceError):
    """A run the model cannot take (a trace from another spec, a time outside the
    window); the message is meant for the user."""


class OverBudget(KvraceError):
    """The work on one answer passed its :class:`Budget`: nothing was shown, so the
    answer is inconclusive (the run may be fine)."""


class Budget:
    """How long (seconds of the wall clock, from its creation) the work on one
    answer of the viewer may take: each step of a replay or a view calls
    :meth:`tick`, which raises :class:`OverBudget` once the time is up."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def tick(self) -> None:
        """Raise :class:`OverBudget` if the time allowed has passed."""
        if time.monotonic() > self.deadline:
            raise OverBudget(f"inconclusive: this answer needs more than {self.seconds:g} s"
                             " of work (the view of a run costs time linear in its length);"
                             " go back some steps")


@dataclass(frozen=True)
class Window:
    """The times ``t`` at which an event can fire: from ``lo`` to ``hi`` (``None``:
    no upper bound), each end open or closed."""

    lo: Fraction
    lo_open: bool
    hi: Fraction | None
    hi_open: bool

    def contains(self, t: Fraction) -> bool:
        """Whether ``t`` lies in the window."""
        if t < self.lo or (self.lo_open and t == self.lo):
            return False
        return self.hi is None or t < self.hi or (not self.hi_open and t == self.hi)

    def pick(self) -> Fraction:
        """A time in the window: the earliest if it is closed, else a point inside."""
        if not self.lo_open:
            return self.lo
        if self.hi is None:
            return self.lo + 1
        return (self.lo + self.hi) / 2

    def points(self) -> list[Fraction]:
        """A few times in the window to choose from at random: its closed ends and a
        point inside."""
        out = [] if self.lo_open else [self.lo]
        inside = self.lo + 1 if self.hi is None else (self.lo + self.hi) / 2
        if self.contains(inside) and inside not in out:
            out.append(inside)
        if self.hi is not None and not self.hi_open and self.hi not in out:
            out.append(self.hi)
        return out

    def delay_text(self, now: Fraction) -> str:
        """The window as delays from ``now``: ``wait [0, 2]``."""
        lo = self.lo - now
        if self.hi == self.lo:
            return f"wait {tr.fmt_time(lo)}"
        hi = "\u221e)" if self.hi is None else (
            tr.fmt_time(self.hi - now) + (")" if self.hi_open else "]"))
        return "wait " + ("(" if self.lo_open else "[") + tr.fmt_time(lo) + ", " + hi

    def text(self) -> str:
        """``[3, 5)``, ``[3, ∞)`` or ``t = 3``."""
        if self.hi == self.lo:
            return f"t = {tr.fmt_time(self.lo)}"
        hi = "\u221e)" if self.hi is None else (
            tr.fmt_time(self.hi) + (")" if self.hi_open else "]"))
        return ("(" if self.lo_open else "[") + tr.fmt_time(self.lo) + ", " + hi


@dataclass(frozen=True)
class Choice:
    """An event that can fire next: the edge (and its position in ``edges(s)``) and
    when."""

    index: int
    edge: Edge
    window: Window


def _narrow(w: list[Any], op: str, value: Fraction) -> None:
    """Intersect the window ``w`` = [lo, lo_open, hi, hi_open] with ``t op value``."""
    if op in (GE, GT):
        strict = op == GT
        if value > w[0] or (value == w[0] and strict):
            w[0], w[1] = value, strict
    else:
        strict = op == LT
        if w[2] is None or value < w[2] or (value == w[2] and strict):
            w[2], w[3] = value, strict


def _empty(w: list[Any]) -> bool:
    return w[2] is not None and (w[0] > w[2] or (w[0] == w[2] and (w[1] or w[3])))


class _Errs:
    """The zone of a step where the model errs (a deadline that cannot be evaluated)."""


_ERRS = _Errs()
_Zone = dbm.Dbm | _Errs | None


class Run:
    """A concrete timed run of ``model``: the edge positions taken and the firing
    times (``times[0]`` is 0, the initial state)."""

    def __init__(self, model: SpecModel, moves: Sequence[tuple[int, Fraction]] = (),
                 budget: Budget | None = None) -> None:
        self.model = model
        self.budget = budget
        self.bound_values = [b.evaluate(model.values) for b in model.bounds]
        self.states: list[State] = [model.initial_states()[0]]
        self.edges: list[Edge] = []
        self.moves: list[int] = []
        self.times: list[Fraction] = [Fraction(0)]
        self.resets: list[dict[int, Fraction]] = [{}]
        self._zones: list[_Zone] = []
        self._bounds: list[int] = []  # the model's bounds, scaled to integers by _scale
        self._scale = 1
        for k, t in moves:
            self.fire(k, t)

    def __len__(self) -> int:
        return len(self.states)

    @property
    def ended(self) -> bool:
        """Whether the run ended in a failed ``assert`` (nothing can follow it)."""
        return bool(self.edges) and self.edges[-1].failure is not None

    def clock_value(self, i: int, c: int) -> Fraction:
        """The value of clock ``c`` just after step ``i``."""
        return self.times[i] - self.resets[i].get(c, Fraction(0))

    def window(self, i: int, atoms: Sequence[ClockAtom], target_atoms: Sequence[ClockAtom] = (),
               target_resets: Sequence[int] = ()) -> Window | None:
        """The times after step ``i`` at which ``atoms`` hold, time having passed within
        the deadlines of state ``i`` (and, for an edge, arriving within the deadlines
        ``target_atoms`` of its target with ``target_resets`` at 0); None if there are
        none."""
        now = self.times[i]
        w: list[Any] = [now, False, None, False]
        for a in [*self.model.deadlines(self.states[i]), *atoms]:
            # clock + (t - now) op bound  <=>  t op bound - clock + now
            _narrow(w, a.op, self.bound_values[a.bound] - self.clock_value(i, a.clock) + now)
        for a in target_atoms:
            if a.clock in target_resets:  # the clock is 0 on arrival
                zero_ok = (self.bound_values[a.bound] > 0 if a.op == LT
                           else self.bound_values[a.bound] >= 0)
                if not zero_ok:
                    return None
                continue
            _narrow(w, a.op, self.bound_values[a.bound] - self.clock_value(i, a.clock) + now)
        if _empty(w):
            return None
        return Window(w[0], w[1], w[2], w[3])

    def choices(self, i: int) -> list[Choice]:
        """The events that can fire after step ``i``, each with its window."""
        if i == len(self) - 1 and self.ended:
            return []
        s = self.states[i]
        out: list[Choice] = []
        for k, e in enumerate(self.model.edges(s)):
            try:
                after = self.model.deadlines(e.target) if e.failure is None else ()
            except ModelRuntimeError:  # the model errs on arrival; shown at that step
                after = ()
            w = self.window(i, e.guard, after, e.resets)
            if w is not None:
                out.append(Choice(k, e, w))
        return out

    def stay(self, i: int) -> Window | None:
        """How long the run may stay in state ``i`` (the deadlines' window)."""
        return self.window(i, ())

    def fire(self, k: int, t: Fraction) -> None:
        """Append the firing of edge ``k`` of the last state at time ``t``; raises
        RunError when it cannot fire then."""
        i = len(self) - 1
        if self.budget is not None:
            self.budget.tick()
        if self.ended:
            raise RunError("the run ended with a violated assert; go back to continue")
        got = [c for c in self.choices(i) if c.index == k]
        if not got:
            raise RunError(f"step {i + 1}: no enabled event number {k} in this state")
        ch = got[0]
        if not ch.window.contains(t):
            raise RunError(f"step {i + 1}: {self.model.event_names[ch.edge.event]} cannot fire"
                           f" at t={tr.fmt_time(t)}; its window is {ch.window.text()}")
        resets = dict(self.resets[i])
        for c in ch.edge.resets:
            resets[c] = t
        self.states.append(ch.edge.target)
        self.edges.append(ch.edge)
        self.moves.append(k)
        self.times.append(t)
        self.resets.append(resets)

    def random_step(self, seed: int) -> bool:
        """Fire a random enabled event at a random time of its window (deterministic
        for a seed and a run); False when nothing can fire."""
        rng = random.Random(f"{seed}:{self.moves}:{[str(t) for t in self.times]}")
        options = self.choices(len(self) - 1)
        if not options:
            return False
        ch = rng.choice(options)
        self.fire(ch.index, rng.choice(ch.window.points()))
        return True

    def _constrain(self, z: dbm.Dbm, atoms: Sequence[ClockAtom]) -> bool:
        """Intersect ``z`` with ``atoms`` (scaled bounds); False when it becomes empty."""
        return constrain_atoms(z, len(self.model.clock_names) + 1, atoms, self._bounds)

    def _zone_at(self, i: int) -> _Zone:
        """The zone after step ``i``, time-closed unless step ``i`` failed an assert;
        None if empty, :data:`_ERRS` if the model errs on the way.

        Zones are computed once, in order, each from the previous one (the operations
        of :func:`checker.model.timeline.timeline`, applied one step at a time), so a
        run's zones cost time linear in its length."""
        n = len(self.model.clock_names) + 1
        while len(self._zones) <= i:
            k = len(self._zones)
            prev: _Zone
            if k == 0:
                self._bounds, self._scale = scaled_bounds(self.model.bounds, self.model.values)
                prev = dbm.zero(n)
            else:
                prev = self._zones[k - 1]
            if isinstance(prev, list):
                prev = self._extend(k, list(prev))
            self._zones.append(prev)
        return self._zones[i]

    def _extend(self, k: int, z: dbm.Dbm) -> _Zone:
        """The zone after step ``k`` from ``z``, the zone after step ``k - 1`` (or the
        zero zone for ``k == 0``), which it may modify."""
        n = len(self.model.clock_names) + 1
        try:
            if k > 0:
                e = self.edges[k - 1]
                if not self._constrain(z, e.guard):
                    return None
                if e.failure is not None:
                    return z
                for c in e.resets:
                    dbm.reset(z, n, c + 1)
            if not self._constrain(z, self.model.deadlines(self.states[k])):
                return None
            dbm.up(z, n)
            if not self._constrain(z, self.model.deadlines(self.states[k])):
                return None
        except ModelRuntimeError:  # a deadline that cannot be evaluated: no zone
            return _ERRS
        return z

    def zone(self, i: int) -> list[str]:
        """The clock constraints of the zone after step ``i`` (every valuation the
        event sequence so far allows, time passing included), over the clocks reset
        so far."""
        z = self._zone_at(i)
        if isinstance(z, _Errs):
            return ["unknown: the model errs here"]
        if z is None:
            return ["false"]
        n = len(self.model.clock_names) + 1
        keep = sorted(self.resets[i])
        return zone_lines(dbm.project(z, n, [c + 1 for c in keep]), len(keep) + 1,
                          ["0", *(self.model.clock_names[c] for c in keep)], self._scale)

    def trace(self) -> tr.Trace:
        """The run as a :class:`~checker.model.trace.Trace` (for a trace file)."""
        model = self.model
        events: list[tuple[ir.Event, tuple[int, ...]] | None] = [None]
        receives: list[tuple[str, tuple[int, ...]] | None] = [None]
        failures: list[str | None] = [None]
        for prev, e in zip(self.states, self.edges, strict=False):
            events.append(model.instance(e.event))
            receives.append(model.receive_of(e.event, prev))
            failures.append(e.failure)
        labels = ["initial"] + [model.event_names[e.event] for e in self.edges]
        verdict, prop, message = "run", None, None
        if self.ended:
            verdict, prop, message = Verdict.VIOLATED, "assert", self.edges[-1].failure
        else:
            try:
                broken = model.violations(self.states[-1])
            except ModelRuntimeError as exc:
                broken = []
                verdict, prop, message = Verdict.ERROR, None, exc.message
            if broken:
                verdict, prop, message = Verdict.VIOLATED, broken[0].property, broken[0].message
        return tr.build(model.spec, model.values, verdict, prop, message, labels,
                        self.states, events, receives, failures, self.times,
                        tick=self.budget.tick if self.budget is not None else None)


def zone_lines(d: dbm.Dbm, n: int, names: Sequence[str], scale: int) -> list[str]:
    """The non-trivial constraints of a canonical DBM whose bounds are scaled by
    ``scale``, one per line, in real units (as :func:`checker.domains.dbm.to_str`)."""
    if dbm.is_empty(d, n):
        return ["false"]

    def num(c: int) -> str:
        return tr.fmt_time(Fraction(c, scale))

    def le(b: int) -> str:
        return ("<= " if b & 1 else "< ") + num(b >> 1)

    out: list[str] = []
    for i in range(1, n):
        low, upp = d[i], d[i * n]
        if low & 1 and upp & 1 and upp < dbm.INF and (upp >> 1) == -(low >> 1):
            out.append(f"{names[i]} = {num(upp >> 1)}")
            continue
        if low != dbm.LE_ZERO:
            out.append(f"{names[i]} {'>=' if low & 1 else '>'} {num(-(low >> 1))}")
        if upp < dbm.INF:
            out.append(f"{names[i]} {le(upp)}")
    for i in range(1, n):
        for j in range(i + 1, n):
            bij, bji = d[i * n + j], d[j * n + i]
            keep_ij = bij < dbm.INF and bij < dbm.add(d[i * n], d[j])
            keep_ji = bji < dbm.INF and bji < dbm.add(d[j * n], d[i])
            if keep_ij and keep_ji and bij & 1 and bji & 1 and (bij >> 1) == -(bji >> 1):
                out.append(f"{names[i]} - {names[j]} = {num(bij >> 1)}")
                continue
            if keep_ij:
                out.append(f"{names[i]} - {names[j]} {le(bij)}")
            if keep_ji:
                out.append(f"{names[j]} - {names[i]} {le(bji)}")
    return out or ["true"]


def run_of_trace(model: SpecModel, trace: tr.Trace) -> Run:
    """The run of ``model`` that ``trace`` records: each step is matched by its event
    label and resulting state.  Steps without a time fire at the earliest time their
    window allows.  Raises RunError when the model cannot take a step, or not at the
    step's time."""
    run = Run(model)
    steps = trace.steps[1:] if trace.steps and trace.steps[0].event is None else trace.steps
    if trace.steps and trace.steps[0].event is None:
        first = tr.cells(model.spec, run.states[0])
        if first != trace.steps[0].state:
            raise RunError("the trace's initial state is not this spec's")
    for step in steps:
        i = len(run) - 1
        matches = [c for c in run.choices(i)
                   if model.event_names[c.edge.event] == step.label
                   and tr.cells(model.spec, c.edge.target) == step.state]
        if not matches:
            raise RunError(f"step {step.index} ({step.label}) is not possible in this spec"
                           " at these parameter values")
        t = step.time
        if t is None:
            run.fire(matches[0].index, matches[0].window.pick())
            continue
        timed = [c for c in matches if c.window.contains(t)]
        if not timed:
            raise RunError(f"step {step.index} ({step.label}) cannot happen at"
                           f" t={tr.fmt_time(t)}: its window is {matches[0].window.text()}")
        run.fire(timed[0].index, t)
    return run


def check_info(trace: tr.Trace) -> dict[str, Any]:
    """The verdict, property, message and violating step (its index in the steps, or
    None) of the check that produced ``trace``: what the page's title and its "show
    me the race" button use.  The violating step is the failed assert's, else the
    last one of a violation or a model error."""
    violating = None
    for pos, step in enumerate(trace.steps):
        if step.failure is not None:
            violating = pos
            break
    else:
        if trace.verdict in (Verdict.VIOLATED, Verdict.ERROR) and trace.steps:
            violating = len(trace.steps) - 1
    info: dict[str, Any] = {"verdict": trace.verdict, "property": trace.property,
                            "message": trace.message, "violating": violating}
    lasso = lasso_info(trace)
    if lasso is not None:
        info["lasso"] = lasso
    return info


def lasso_info(trace: tr.Trace) -> dict[str, Any] | None:
    """How a liveness counterexample goes on after its last step, for the page: its
    ``kind`` (``cycle``, ``idle`` or ``deadlock``), the first and last step of the
    repeated part (``loop``, ``last``; None unless a cycle), whether the cycle repeats
    with the same delays, and the sentence the page writes.  None for a finite run."""
    if trace.lasso is None:
        return None
    last = len(trace.steps) - 1
    loop = trace.loop if trace.lasso == "cycle" and trace.loop is not None else None
    if loop is not None:
        text = f"cycle: steps {loop}..{last} repeat for ever"
        text += (" (the same delays every turn)" if trace.repeats_exactly
                 else " (times shown for one turn)")
    elif trace.lasso == "idle":
        text = "then nothing happens for ever: no deadline is active, time passes without end"
    else:
        text = "deadlock: no event can fire and time cannot pass"
    return {"kind": trace.lasso, "loop": loop, "last": last if loop is not None else None,
            "repeats_exactly": trace.repeats_exactly, "text": text}


def _notes(run: Run, i: int, failure: str | None) -> tuple[list[Choice], list[str], bool]:
    """The events that can fire after step ``i``, and what is wrong there, or will be:
    a violated assert or invariant, a pending deadline of a bounded response, a
    deadlock, a model error; and whether step ``i`` violates a property."""
    model = run.model
    notes: list[str] = []
    violated = failure is not None
    if failure is not None:
        notes.append(f"assertion violated: {failure}")
    choices: list[Choice] = []
    try:
        for v in model.violations(run.states[i]):
            notes.append(f"{v.property} violated: {v.message}")
            violated = True
        if run.ended and i == len(run) - 1:
            return choices, notes, violated
        for h in model.hazards(run.states[i]):
            w = run.window(i, h.atoms)
            if w is not None:
                when = "after" if w.lo_open else "at"
                notes.append(f"{h.property}: {h.message} if the run is still here {when}"
                             f" t={tr.fmt_time(w.lo)}")
        choices = run.choices(i)
        if not choices:
            stay = run.stay(i)
            if stay is not None and stay.hi is not None:
                notes.append("no event can fire and time cannot pass beyond"
                             f" t={tr.fmt_time(stay.hi)}: deadlock")
                violated = True
            else:
                notes.append("no event can fire any more")
    except ModelRuntimeError as exc:
        notes.append(f"model error: {exc.message}")
    return choices, notes, violated


def _json(v: tr.JsonValue) -> str:
    return tr.show_value(v)


def view_json(run: Run) -> dict[str, Any]:
    """Everything the viewer page shows about ``run``, as JSON: the model, its
    parameters, the run's own verdict (``violated`` when it ends in a violation,
    else ``run``), the violating step and, per step, what :class:`Run` computes."""
    model = run.model
    trace = run.trace()
    steps: list[dict[str, Any]] = []
    violating = None
    for i, st in enumerate(trace.steps):
        if run.budget is not None:
            run.budget.tick()
        choices, notes, violated = _notes(run, i, st.failure)
        if violated and violating is None:
            violating = i
        steps.append({
            "index": i,
            "label": st.label,
            "actor": st.actor,
            "event": st.event.split(".", 1)[1] if st.event else None,
            "args": list(st.args),
            "move": run.moves[i - 1] if i > 0 else None,
            "time": tr.fmt_time(st.time) if st.time is not None else None,
            "receives": st.receives,
            "failure": st.failure,
            "state": {k: _json(v) for k, v in st.state.items()},
            "changes": {k: [_json(a), _json(b)] for k, (a, b) in st.changes.items()},
            "clocks": [[model.clock_names[c], tr.fmt_time(run.clock_value(i, c))]
                       for c in sorted(run.resets[i])],
            "zone": run.zone(i),
            "enabled": [{
                "move": ch.index,
                "label": model.event_names[ch.edge.event],
                "actor": model.instance(ch.edge.event)[0].actor,
                "window": ch.window.text(),
                "delay": ch.window.delay_text(run.times[i]),
                "pick": tr.fmt_time(ch.window.pick()),
                "fails": ch.edge.failure is not None,
            } for ch in choices],
            "notes": notes,
        })
    return {
        "model": trace.model,
        "source": trace.source,
        "params": {k: tr.fmt_time(v) for k, v in trace.params.items()},
        "actors": list(trace.actors),
        "verdict": trace.verdict,
        "property": trace.property,
        "message": trace.message,
        "violating": violating,
        "steps": steps,
    }

"""Test schedules for the implementation: timed runs of the spec as the steps a test
harness drives, and the outcome each must lead to.

A schedule is a timed run.  Each of its events is one action at its time (from the
start of the test):

* a **delivery** (an event that ``receives`` an earlier one: a write landing, a
  message arriving) is a delay the harness injects: hold the message of step ``j``
  until ``t`` (``t - t_j`` after it was sent), e.g. by delaying the transfer
  engine's write call;
* any other event is **fired** at ``t``: by the harness when it is an input of the
  system (an abort), or by the system itself, which the harness then expects.

``kvrace schedules`` makes one for each of (:class:`ScheduleKind`):

* every property the spec breaks at the given parameter values: its counterexample
  (the other properties set aside, as ``synth --property`` does);
* every event of the spec: a shortest run that fires it and breaks no property;
* with ``--free``, every boundary of the synthesized safe region, near the
  parameters' values: a point just outside (by :data:`EPSILON` s), with its
  counterexample, and the point just inside, with the same scenario as far as it
  goes there (its longest prefix that is still a run, re-timed): the pair a test
  needs to show that it can tell a correct bound from one a millisecond short.

:func:`schedule_log` turns a schedule back into a log (JSON lines, with a last line
``{"t": until}`` when the outcome is a response overdue by then); the tests replay
every schedule through ``kvrace validate`` and in the simulator's concrete semantics
(:func:`checker.simulate.replay.replay`), and check both show its outcome.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from checker import api
from checker.engines import CheckResult, Limits, Options, TraceStep, explore
from checker.limits import Budget, LimitHit
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.model.interface import (
    ClockAtom,
    Edge,
    Hazard,
    State,
    Symmetry,
    Violation,
    scaled_bounds,
)
from checker.model.timeline import TraceShape
from checker.model.trace import Trace, fmt_time
from checker.results import QueryStatus, Verdict
from checker.semantics.ts import Extrapolation, LabelKind, Status, ZoneTS

EPSILON = Fraction(1, 1000)
"""How far from a boundary of the safe region its two points are (in the moved
parameter's own unit, seconds for a time)."""


class ActionKind(str, enum.Enum):
    """What the harness does at one step."""

    FIRE = "fire"
    """The event happens at the time (the harness triggers it, or expects it)."""
    DELIVER = "deliver"
    """The message of an earlier step is delivered at the time (a delay injected)."""

    def __str__(self) -> str:
        return self.value


class ScheduleKind(str, enum.Enum):
    """Why a schedule was made (see the module docstring)."""

    VIOLATION = "violation"
    """A counterexample of one property."""
    EVENT = "event"
    """A shortest run that fires one event."""
    OUTSIDE = "outside"
    """Just outside a boundary of the safe region: a counterexample there."""
    INSIDE = "inside"
    """Just inside the same boundary: the outside scenario as far as it goes."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Action:
    """One step of a schedule."""

    step: int
    time: Fraction
    actor: str
    event: str
    """``actor.event``."""
    args: tuple[tuple[str, str], ...]
    label: str
    """``decode.land(A, 0)``."""
    kind: ActionKind
    sent_by: int | None = None
    """For a delivery: the step whose message it is."""
    delay: Fraction | None = None
    """For a delivery: the time since that step."""

    def text(self) -> str:
        """The action in words."""
        if self.kind is ActionKind.DELIVER:
            assert self.delay is not None
            return (f"deliver {self.label}: hold the message of step {self.sent_by}"
                    f" for {fmt_time(self.delay)}")
        return f"fire {self.label}"


@dataclass(frozen=True)
class Schedule:
    """A timed test schedule and the outcome it leads to."""

    name: str
    """The property, the event, or the boundary it is for."""
    kind: ScheduleKind
    params: tuple[tuple[str, Fraction], ...]
    """The parameter values the implementation is to run with."""
    property: str | None
    """The property the schedule breaks (None: it breaks none)."""
    message: str | None
    actions: tuple[Action, ...]
    until: Fraction | None = None
    """Watch until then: a response still pending then is overdue; for a deadlock, the
    instant time stops with nothing able to fire."""
    note: str | None = None
    """For an inside schedule: where the outside scenario stops being a run."""

    def outcome(self) -> str:
        """The outcome a harness checks for, in words."""
        if self.property is not None:
            text = f"breaks {self.property}: {self.message}"
            if self.until is not None and self.property != "deadlock":
                text += f" (no response by t={fmt_time(self.until)})"
            return text
        if self.kind is ScheduleKind.EVENT and self.actions:
            return f"fires {self.actions[-1].label}; breaks nothing"
        return "breaks nothing"

    def title(self) -> str:
        """The schedule's heading: its kind, name, parameter values and outcome."""
        values = ", ".join(f"{k}={fmt_time(v)}" for k, v in self.params)
        head = f"schedule {self.kind} {self.name}"
        if self.kind in (ScheduleKind.INSIDE, ScheduleKind.OUTSIDE):
            head += f" ({values})"
        return f"{head}: {self.outcome()}"

    def table(self) -> str:
        """A readable table: step, time, actor, action (and the watch's end)."""
        rows = [("step", "t", "actor", "action")]
        rows += [(str(a.step), fmt_time(a.time), a.actor, a.text()) for a in self.actions]
        if self.until is not None:
            rows.append(("", fmt_time(self.until), "", "end: time cannot pass, nothing can"
                         " fire" if self.property == "deadlock" else "end: no response by"
                         " then"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        out = []
        for r in rows:
            out.append("  ".join([r[0].rjust(widths[0]), r[1].rjust(widths[1]),
                                  r[2].ljust(widths[2]), r[3]]).rstrip())
        if self.note:
            out.append(f"({self.note})")
        return "\n".join(out)

    def json(self) -> dict[str, object]:
        """The schedule as the JSON contract describes it."""
        return {"name": self.name, "kind": self.kind,
                "params": {k: fmt_time(v) for k, v in self.params},
                "property": self.property, "message": self.message,
                "outcome": self.outcome(),
                "until": None if self.until is None else fmt_time(self.until),
                "note": self.note,
                "actions": [{"step": a.step, "t": fmt_time(a.time), "actor": a.actor,
                             "event": a.event, "args": dict(a.args), "label": a.label,
                             "kind": a.kind, "sent_by": a.sent_by,
                             "delay": None if a.delay is None else fmt_time(a.delay)}
                            for a in self.actions]}


def from_trace(name: str, kind: ScheduleKind, trace: Trace, params: dict[str, tuple[str, ...]],
               until: Fraction | None = None, note: str | None = None) -> Schedule:
    """The schedule of a timed trace; ``params``: each event's parameter names."""
    actions: list[Action] = []
    for step in trace.steps:
        if step.event is None or step.actor is None:
            continue
        assert step.time is not None, "a schedule needs a timed trace"
        names = params.get(step.event, ())
        args = tuple(zip(names, step.args, strict=False))
        sent = step.receives
        if sent is not None:
            t0 = trace.steps[sent].time
            assert t0 is not None
            actions.append(Action(step.index, step.time, step.actor, step.event, args,
                                  step.label, ActionKind.DELIVER, sent, step.time - t0))
        else:
            actions.append(Action(step.index, step.time, step.actor, step.event, args,
                                  step.label, ActionKind.FIRE))
    prop = trace.property if trace.verdict == Verdict.VIOLATED else None
    return Schedule(name, kind, tuple(trace.params.items()), prop,
                    trace.message if prop is not None else None, tuple(actions), until, note)


def schedule_log(schedule: Schedule) -> list[str]:
    """The schedule as a JSON-lines log of every event (for ``kvrace validate``), with a
    last line ``{"t": until}`` when it watches until then (for a deadlock: the instant
    time stops, which a log can reach but not pass)."""
    lines = [json.dumps({"t": fmt_time(a.time), "event": a.event, "args": dict(a.args)})
             for a in schedule.actions]
    if schedule.until is not None:
        lines.append(json.dumps({"t": fmt_time(schedule.until)}))
    return lines


# ---- making them ----------------------------------------------------------------------

def _param_names(spec: ir.Spec) -> dict[str, tuple[str, ...]]:
    return {ev.label: tuple(p for p, _ in ev.params) for ev in spec.events}


SINK: State = (-1,)
"""Where an edge that breaks an ``assert`` leads when asserts are not the target: a
state with no edge, no deadline and no property (a dead end, not a deadlock)."""


class _OneProperty(SpecModel):
    """A model whose only property is ``target`` (an invariant or bounded response name,
    ``assert`` or ``deadlock``): an edge that breaks an ``assert``, unless asserts are the
    target, or enters a state that breaks another invariant, leads to :data:`SINK`, so
    that a counterexample of the target breaks no other property first (bounded
    responses other than the target are not checked)."""

    def __init__(self, base: SpecModel, target: str) -> None:
        self.__dict__.update(base.__dict__)
        self.__dict__["canonizer"] = None  # no symmetry reduction: SINK has no values
        self.target = target

    def symmetries(self) -> list[Symmetry]:
        """None (see :data:`SINK`)."""
        return []

    def _matches(self, prop: str) -> bool:
        return prop == self.target or prop.startswith(self.target + "[")

    def edges(self, s: State) -> list[Edge]:
        """The base model's edges, those breaking another property leading to
        :data:`SINK`."""
        if s == SINK:
            return []
        out = []
        for e in super().edges(s):
            if e.failure is not None:
                other = self.target != "assert"
            else:
                broken = [self._matches(v.property) for v in super().violations(e.target)]
                other = bool(broken) and not any(broken)
            out.append(Edge(e.event, e.guard, (), SINK) if other else e)
        return out

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The base model's deadlines (none in :data:`SINK`)."""
        return () if s == SINK else super().deadlines(s)

    def violations(self, s: State) -> list[Violation]:
        """The target's violations only."""
        if s == SINK:
            return []
        return [v for v in super().violations(s) if self._matches(v.property)]

    def hazards(self, s: State) -> list[Hazard]:
        """The target's hazards only."""
        if s == SINK:
            return []
        return [h for h in super().hazards(s) if self._matches(h.property)]


def properties(spec: ir.Spec) -> list[str]:
    """The properties a schedule can break: ``assert``, each invariant and bounded
    response (families by name), ``deadlock``."""
    return ["assert", *(i.name for i in spec.invariants), *(r.name for r in spec.responses),
            "deadlock"]


def _overdue_until(model: SpecModel, result: CheckResult) -> Fraction | None:
    """For a counterexample of a bounded response: the instant it is overdue by (the
    extra instant its timestamps have)."""
    from checker import smt

    steps = result.trace
    states = [s.state for s in steps]
    edges = [s.edge for s in steps[1:] if s.edge is not None]
    shape = TraceShape.of(model, states, edges, result.prop)
    if not shape.hazard:
        return None
    got = smt.timestamps(model, model.values, shape)
    return got[-1] if len(got) > len(states) else None


def violation_schedule(model: SpecModel, target: str, limits: Limits | None,
                       kind: ScheduleKind = ScheduleKind.VIOLATION, name: str | None = None
                       ) -> tuple[Schedule | None, CheckResult]:
    """The counterexample of ``target`` as a schedule (None if it holds, or a limit
    ended the search: see the result's verdict)."""
    only = _OneProperty(model, target)
    result = explore(only, limits, Options(symmetry=False, deadlock=target == "deadlock"))
    if result.verdict != Verdict.VIOLATED or not result.trace:
        return None, result
    trace, _ = api.build_trace(only, result)
    until = _overdue_until(only, result)
    sched = from_trace(name or target, kind, trace, _param_names(model.spec), until)
    if target == "deadlock":
        from checker.simulate.replay import time_stop

        steps = [(s.edge.event, t.time) for s, t in zip(result.trace[1:], trace.steps[1:],
                                                        strict=True)
                 if s.edge is not None and t.time is not None]
        sched = dataclasses.replace(sched, until=time_stop(only, steps))
    return sched, result


def event_schedules(model: SpecModel, budget: Budget | None = None
                    ) -> tuple[list[Schedule], list[str]]:
    """For each event of the spec (in declaration order), a shortest run firing it that
    breaks no property on the way (breadth-first over the zone graph, no symmetry
    reduction); and the events no such run fires."""
    bounds, _ = scaled_bounds(model.bounds, model.values)
    ts = ZoneTS(model, bounds, extrapolation=Extrapolation.M,
                labels=frozenset({LabelKind.INVARIANT}))
    wanted = [ev.label for ev in model.spec.events]
    found: dict[str, tuple[int, Edge, State]] = {}
    nodes: list[tuple[State, list[int], int, Edge | None]] = []
    seen: dict[State, list[list[int]]] = {}
    queue: deque[int] = deque()

    def add(state: State, zone: list[int], parent: int, edge: Edge | None) -> None:
        zones = seen.setdefault(state, [])
        n = ts.dz.frame(state).n
        if any(ts.dz.D.includes(z, zone, n) for z in zones):
            return
        zones.append(zone)
        nodes.append((state, zone, parent, edge))
        queue.append(len(nodes) - 1)

    for succ in ts.initial():
        if succ.status is Status.OK and not succ.labels:
            add(succ.state, succ.zone, -1, None)
    while queue and len(found) < len(wanted):
        i = queue.popleft()
        if budget is not None:
            budget.count(len(nodes))
        state, zone, _, _ = nodes[i]
        for succ in ts.next(state, zone):
            if succ.status is not Status.OK or succ.labels or succ.edge is None:
                continue
            label = model.instance(succ.edge.event)[0].label
            found.setdefault(label, (i, succ.edge, succ.state))
            add(succ.state, succ.zone, i, succ.edge)
    out: list[Schedule] = []
    for label in wanted:
        if label not in found:
            continue
        i, edge, target = found[label]
        path: list[TraceStep] = [TraceStep(edge.event, model.event_names[edge.event], edge,
                                           target)]
        while i >= 0:
            state, _, parent, e = nodes[i]
            path.append(TraceStep(None if e is None else e.event,
                                  "initial" if e is None else model.event_names[e.event],
                                  e, state))
            i = parent
        path.reverse()
        witness = CheckResult(QueryStatus.REACHABLE, None, f"fires {label}", path)
        trace, _ = api.build_trace(model, witness)
        out.append(from_trace(label, ScheduleKind.EVENT, trace, _param_names(model.spec)))
    return out, [label for label in wanted if label not in found]


# ---- boundaries of the safe region --------------------------------------------------

@dataclass(frozen=True)
class Boundary:
    """One constraint of the safe region, and the two points next to it."""

    text: str
    """The constraint, as ``synth`` prints it (``T_hold > 7``)."""
    inside: dict[str, Fraction]
    """All parameter values, with the moved one :data:`EPSILON` on the safe side."""
    outside: dict[str, Fraction]
    """The same, :data:`EPSILON` on the other side."""
    moved: str
    """The parameter moved to the boundary (the first of the constraint's, in the
    order given, whose two points lie in the ranges on either side)."""
    property: str | None
    """The property broken just outside (as synthesis found it)."""


def _holds(c: object, point: dict[str, Fraction]) -> bool:
    """Whether a parameter constraint (:class:`checker.smt.lin.Lin`) holds at ``point``."""
    total = c.const + sum(a * point[v.removeprefix("p:")]  # type: ignore[attr-defined]
                          for v, a in c.coefs)  # type: ignore[attr-defined]
    return bool(total < 0 if c.strict else total <= 0)  # type: ignore[attr-defined]


def boundaries(spec: ir.Spec, values: dict[str, Fraction], free: Sequence[str],
               timeout: float | None = None) -> tuple[list[Boundary], str | None]:
    """The constraints of the safe region over ``free`` (the other parameters at
    ``values``), each with a point just inside and just outside: the moved parameter
    set so that the constraint is tight, the others at ``values``, then
    :data:`EPSILON` either way.  A constraint whose two points are not one safe and one
    unsafe there (within the ranges) is left out.  The second item is why there are
    none (a region that is everything or nothing); a limit that cuts the synthesis
    short is a :class:`~checker.limits.LimitHit`."""
    from checker.smt import synth as sy
    from checker.smt.regions import readable

    found = api.synth(spec, values, free=list(free), timeout=timeout)
    result = found.raw
    assert isinstance(result, sy.SynthResult)
    if not result.complete:
        raise LimitHit(f"the synthesis of the region was cut short: {found.limit}")
    region = readable(result)
    order = [p.name for p in spec.params]
    literals = list(dict.fromkeys(c for part in region.parts for c in part))
    if not literals:
        return [], f"the safe region is {found.region}: no boundary"

    def bad(point: dict[str, Fraction]) -> int | None:
        """The bad piece ``point`` is in (-1: none; None: outside the ranges)."""
        if not all(_holds(c, point) for c in result.ranges):
            return None
        return next((i for i, piece in enumerate(result.bad.pieces)
                     if all(_holds(c, point) for c in piece)), -1)

    out: list[Boundary] = []
    for c in literals:
        coefs = {v.removeprefix("p:"): a for v, a in c.coefs}
        for moved in (p for p in free if coefs.get(p)):
            # The moved parameter set so that the constraint is tight, the others kept.
            rest = c.const + sum(k * values[v] for v, k in coefs.items() if v != moved)
            tight = -rest / coefs[moved]
            points = [{**values, moved: tight + EPSILON}, {**values, moved: tight - EPSILON}]
            kinds = [bad(p) for p in points]
            if None in kinds or (kinds[0] == -1) == (kinds[1] == -1):
                continue
            (inside, outside), piece = (points, kinds[1]) if kinds[0] == -1 else (
                points[::-1], kinds[0])
            assert piece is not None
            out.append(Boundary(sy.lin_text(c, order), inside, outside, moved,
                                result.properties.get(piece)))
            break
    return out, None if out else "no boundary point near the parameters' values"


def boundary_schedules(spec: ir.Spec, bound: Boundary, limits: Limits | None
                       ) -> list[Schedule]:
    """The two schedules of a boundary: the counterexample just outside, and the same
    scenario just inside, as far as it is a run there (its longest such prefix,
    re-timed)."""
    outside_model = SpecModel(spec, bound.outside)
    out: list[Schedule] = []
    first = None if bound.property is None else bound.property.split("[")[0]
    targets = properties(spec)
    for target in ([first] if first in targets else []) + targets:
        sched, result = violation_schedule(outside_model, target, limits,
                                           ScheduleKind.OUTSIDE, bound.text)
        if sched is None:
            continue
        out.append(sched)
        out.append(_inside(spec, bound, sched, result))
        break
    return out


def _inside(spec: ir.Spec, bound: Boundary, outside: Schedule, result: CheckResult
            ) -> Schedule:
    """The outside scenario just inside the boundary: its longest prefix that is a run
    there (Z3 on the prefix's timing constraints), at the outside times when they still
    fit (replayed in the concrete semantics), else re-timed."""
    from checker import smt
    from checker.simulate.replay import replay

    inside = SpecModel(spec, bound.inside)
    steps = result.trace
    states = [s.state for s in steps]
    edges = [s.edge for s in steps[1:] if s.edge is not None]
    k = len(edges)
    while k > 0:
        try:
            smt.timestamps(inside, inside.values, TraceShape(states[:k + 1], edges[:k]))
            break
        except ValueError:
            k -= 1
    note = None
    if k < len(edges):
        note = (f"step {k + 1} of the outside schedule, {steps[k + 1].label}, cannot come"
                f" next at {bound.moved}={fmt_time(bound.inside[bound.moved])}")
    timed = [(e.event, a.time) for e, a in zip(edges, outside.actions, strict=True)]
    same = replay(inside, timed[:k]).fired == k
    witness = CheckResult(QueryStatus.REACHABLE, None, "the outside scenario",
                          list(steps[:k + 1]))
    trace, _ = api.build_trace(inside, witness, with_times=not same)
    if same:
        trace = dataclasses.replace(trace, steps=tuple(
            dataclasses.replace(st, time=st.time if st.index == 0 else timed[st.index - 1][1])
            for st in trace.steps))
    return from_trace(bound.text, ScheduleKind.INSIDE, trace, _param_names(spec), None, note)

"""The Python API: check protocols from Python code and pytest.

    from checker.api import check

    def test_hold_must_cover_the_window():
        check("spec/sglang/deferred_release.kvr").assert_holds()
        check("spec/sglang/deferred_release.kvr", T_hold=7).assert_violated("assert")

A :class:`Outcome` carries the verdict, the violated property, the trace
(with Z3 timestamps) and the exploration statistics.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, cast

from checker.explorer import CheckResult, Limits, Options, Stats, explore
from checker.explorer.limits import MemoryGuard

if TYPE_CHECKING:
    import networkx as nx
from checker.explorer.search import ERROR, HOLDS, INCONCLUSIVE, VIOLATED
from checker.model import ir
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.model.interface import (
    ClockAtom,
    Edge,
    LimitReached,
    ModelRuntimeError,
    TimedModel,
)

__all__ = [
    "ERROR",
    "HOLDS",
    "INCONCLUSIVE",
    "VIOLATED",
    "Limits",
    "Options",
    "Outcome",
    "check",
    "load_spec",
]

ParamValue = int | float | str | Fraction


def load_spec(path: str | Path) -> ir.Spec:
    """Read and elaborate a ``.kvr`` file (raises SpecError with diagnostics)."""
    from checker.language import load

    return load(path)


def _fraction(v: ParamValue) -> Fraction:
    if isinstance(v, float):
        return Fraction(str(v))
    return Fraction(v)


@dataclass
class Outcome:
    """The result of checking a spec at concrete parameter values."""

    spec: ir.Spec
    params: dict[str, Fraction]
    verdict: str
    prop: str | None
    message: str | None
    trace: tr.Trace | None
    stats: Stats
    limit: str | None
    timing_note: str | None = None
    raw: tuple[SpecModel, CheckResult] | None = None
    never_fired: tuple[str, ...] = ()
    """With HOLDS: the events (``actor.name``) that never fired in any explored run —
    properties about them may hold vacuously."""

    def assert_holds(self) -> None:
        """Fail (AssertionError) unless every property holds."""
        if self.verdict != HOLDS:
            raise AssertionError(self.summary())

    def assert_violated(self, prop: str | None = None) -> None:
        """Fail unless a property (``prop``, if given) is violated."""
        if self.verdict != VIOLATED:
            raise AssertionError(f"expected a violation, got: {self.summary()}")
        if prop is not None and self.prop != prop and (self.prop or "").split("[")[0] != prop:
            raise AssertionError(f"expected {prop} to be violated, got: {self.summary()}")

    def summary(self) -> str:
        """One line: verdict, property and message."""
        if self.verdict == VIOLATED:
            return f"violated: {self.prop}: {self.message}"
        if self.verdict == INCONCLUSIVE:
            return f"inconclusive: {self.limit}"
        if self.verdict == ERROR:
            return f"model error: {self.message}"
        return "holds"


class _LenientDeadlines:
    """A model whose deadlines that fault count as none (to time an error trace)."""

    def __init__(self, model: SpecModel) -> None:
        self._model = model

    def __getattr__(self, name: str) -> object:
        return getattr(self._model, name)

    def deadlines(self, s: tuple[int, ...]) -> list[object]:
        try:
            return list(self._model.deadlines(s))
        except ModelRuntimeError:
            return []


def _time_stops(model: SpecModel, final: tuple[int, ...], edges: list[Edge],
                times: list[Fraction]) -> str | None:
    """Until when the deadlines of a deadlock trace's last state let time pass, and
    which one bounds it: the earliest bound, counted from each clock's last reset at
    the trace's times."""
    reset_at: dict[int, Fraction] = {}
    for i, e in enumerate(edges):
        for c in e.resets:
            reset_at[c] = times[i + 1]
    best: tuple[Fraction, bool, ClockAtom] | None = None
    for a in model.deadlines(final):
        at = reset_at.get(a.clock, Fraction(0)) + model.bounds[a.bound].evaluate(model.values)
        strict = a.op == "<"
        if best is None or (at, not strict) < (best[0], not best[1]):
            best = (at, strict, a)
    if best is None:
        return None
    at, strict, a = best
    until = "before" if strict else "until"
    return (f"in the last state, the deadlines let time pass {until} t={tr.fmt_time(at)}"
            f" at most ({model.clock_names[a.clock]} {a.op} {model.bounds[a.bound]})")


def build_trace(model: SpecModel, result: CheckResult, with_times: bool = True
                ) -> tuple[tr.Trace, str | None]:
    """The :class:`~checker.model.trace.Trace` of an explorer result, with timestamps."""
    steps = result.trace
    states = [s.state for s in steps]
    edges = [s.edge for s in steps[1:] if s.edge is not None]
    events: list[tuple[ir.Event, tuple[int, ...]] | None] = [None]
    receives: list[tuple[str, tuple[int, ...]] | None] = [None]
    failures: list[str | None] = [None]
    for prev, step in itertools.pairwise(steps):
        assert step.event is not None and step.edge is not None
        events.append(model.instance(step.event))
        receives.append(model.receive_of(step.event, prev.state))
        failures.append(step.edge.failure)
    times = None
    note = None
    if with_times and result.verdict in (VIOLATED, ERROR) and steps:
        from checker import smt

        hazard: tuple[object, ...] = ()
        for h in model.hazards(states[-1]):
            if h.property == result.prop:
                hazard = h.atoms
                break
        shape = smt.TraceShape(states, edges, hazard)  # type: ignore[arg-type]
        try:
            got = smt.timestamps(model, model.values, shape)
            times = got[: len(states)]
            if len(got) > len(states):
                note = f"no response by t={tr.fmt_time(got[-1])}: its bound has passed"
        except smt.SolverUnknown as exc:
            note = f"timestamps unknown (solver: {exc})"
        except ValueError:
            note = "timestamps unavailable: the trace is not feasible in time (please report)"
        except ModelRuntimeError:
            # The last state's own deadlines fault (the model error): time it without them.
            try:
                lenient = cast(TimedModel, _LenientDeadlines(model))
                got = smt.timestamps(lenient, model.values, shape)
                times = got[: len(states)]
                note = "the last state's deadlines cannot be evaluated: timed without them"
            except (smt.SolverUnknown, ValueError, ModelRuntimeError):
                note = "timestamps unavailable: the last state's deadlines cannot be evaluated"
    if result.prop == "deadlock" and times is not None and note is None:
        note = _time_stops(model, states[-1], edges, times)
    labels = [s.label for s in steps]
    trace = tr.build(model.spec, model.values, result.verdict, result.prop, result.message,
                     labels, states, events, receives, failures, times)
    return trace, note


def explain(outcome: Outcome, free: list[str] | None = None) -> str:
    """The parameter region in which the counterexample's sequence of events is
    feasible (free parameters: all declared ones unless ``free`` is given)."""
    from checker import smt

    assert outcome.raw is not None
    model, result = outcome.raw
    steps = result.trace
    states = [s.state for s in steps]
    edges = [s.edge for s in steps[1:] if s.edge is not None]
    hazard: tuple[object, ...] = ()
    for h in model.hazards(states[-1]):
        if h.property == result.prop:
            hazard = h.atoms
    from checker.smt.synth import lin_text, trace_region

    shape = smt.TraceShape(states, edges, hazard)  # type: ignore[arg-type]
    names = free if free is not None else [p for p, v in model.params.items()
                                           if v.lo is not None or v.hi is not None]
    region = trace_region(model, shape, names)
    if not region:
        return "always (for every parameter value in the declared ranges)"
    if any(c.trivial() is False for c in region):
        return "never"
    return " and ".join(lin_text(c, list(model.params)) for c in region)


def check(
    spec: str | Path | ir.Spec,
    params: Mapping[str, ParamValue] | None = None,
    *,
    limits: Limits | None = None,
    options: Options | None = None,
    timestamps: bool = True,
    **param_kw: ParamValue,
) -> Outcome:
    """Check every property of ``spec`` at the given parameter values.

    Parameters may be passed as a mapping or as keywords (``T_hold=7``).
    Raises SpecError for a broken spec, ParamError for an unknown parameter or
    a value outside its range.
    """
    deadline = None
    if limits is not None and limits.timeout is not None:
        deadline = time.monotonic() + limits.timeout
        if limits.deadline is not None:
            deadline = min(deadline, limits.deadline)
        limits = dataclasses.replace(limits, deadline=deadline)
    sp = spec if isinstance(spec, ir.Spec) else load_spec(spec)
    values = {k: _fraction(v) for k, v in {**(params or {}), **param_kw}.items()}
    # --max-memory holds while the model is built and explored, not only where the
    # search checks its limits.
    with MemoryGuard(limits.max_memory_mb if limits is not None else None):
        try:
            model = SpecModel(sp, values, deadline)
            result = explore(model, limits, options)
        except LimitReached as lim:
            return Outcome(sp, values, INCONCLUSIVE, None, None, None, Stats(), lim.what)
    trace = None
    note = None
    if result.trace:
        trace, note = build_trace(model, result, timestamps)
    never: tuple[str, ...] = ()
    if result.verdict == HOLDS:
        fired = {model.instance(e)[0].label for e in result.fired}
        never = tuple(ev.label for ev in sp.events if ev.label not in fired)
    return Outcome(sp, dict(model.values), result.verdict, result.prop, result.message,
                   trace, result.stats, result.limit, note, (model, result), never)


def state_graph(model: SpecModel, max_nodes: int, zones: bool = False, symmetry: bool = True,
                timeout: float | None = None) -> nx.DiGraph | None:
    """The explored zone graph as a networkx DiGraph (node attributes ``label`` and
    ``highlight``, edge attribute ``label``), or None above ``max_nodes`` states.
    Raises LimitReached at the time limit."""
    import networkx as nx  # here: importing it costs every other command half a second

    result = explore(model, Limits(max_states=max_nodes + 1, timeout=timeout),
                     Options(symmetry=symmetry, record_graph=True))
    if result.limit is not None and not result.limit.startswith("state limit"):
        raise LimitReached(result.limit)
    if result.verdict == INCONCLUSIVE or result.graph is None:
        return None
    g = nx.DiGraph()
    on_path = set(result.graph.violation)
    for i, (s, zone) in enumerate(result.graph.nodes):
        cells = tr.cells(model.spec, s)
        text = "\n".join(f"{k}={tr.show_value(v)}" for k, v in cells.items())
        if zones:
            text += f"\n{zone}"
        g.add_node(i, label=text, highlight=i in on_path)
    for a, b, label in result.graph.edges:
        if g.has_edge(a, b):
            if label not in g.edges[a, b]["label"].split("\n"):
                g.edges[a, b]["label"] += f"\n{label}"
        else:
            g.add_edge(a, b, label=label)
    return g

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
import functools
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, cast

from checker.engines import CheckResult, Limits, Options, QueryResult, Stats, explore
from checker.limits import LimitKind, MemoryGuard

if TYPE_CHECKING:
    import networkx as nx

    from checker.engines.distributed import Cluster
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
from checker.model.timeline import TraceShape
from checker.results import (
    Coverage,
    ProofStatus,
    PropertyKind,
    PropertyRef,
    QueryStatus,
    Verdict,
)

if TYPE_CHECKING:
    from checker.language.assume import RegionFormula
    from checker.model.provenance import Source
    from checker.simulate.engine import RunResult, SimConfig
    from checker.simulate.plot import Threshold
    from checker.simulate.runner import Progress, SimResult
    from checker.simulate.stats import Sprt
    from checker.smt.lin import Lin, LinFormula

__all__ = [
    "ERROR",
    "HOLDS",
    "INCONCLUSIVE",
    "REACHABLE",
    "UNREACHABLE",
    "VIOLATED",
    "Limits",
    "Options",
    "Outcome",
    "Proof",
    "QueryOutcome",
    "SimConfig",
    "SimResult",
    "Sprt",
    "Synthesis",
    "check",
    "load_spec",
    "prove",
    "replays",
    "safe_threshold",
    "simulate",
    "simulation_trace",
    "synth",
]

HOLDS, VIOLATED, INCONCLUSIVE, ERROR, UNREACHABLE = (
    Verdict.HOLDS, Verdict.VIOLATED, Verdict.INCONCLUSIVE, Verdict.ERROR, Verdict.UNREACHABLE)
REACHABLE = QueryStatus.REACHABLE

_SIMULATION_NAMES = {"SimConfig": "checker.simulate.engine",
                     "SimResult": "checker.simulate.runner", "Sprt": "checker.simulate.stats"}
"""Names of the simulator this module exports; imported when first asked for (a
``check`` does not load the simulator)."""


def __getattr__(name: str) -> object:
    """The simulator's exported names (:data:`_SIMULATION_NAMES`), on first use."""
    module = _SIMULATION_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

ParamValue = int | float | str | Fraction


def load_spec(path: str | Path, consts: Mapping[str, ParamValue] | None = None) -> ir.Spec:
    """Read and elaborate a ``.kvr`` file (raises SpecError with diagnostics);
    ``consts`` sets its structural constants (``const N in 2..6 = 3``) by name."""
    from checker.language import load

    return load(path, {k: _fraction(v) for k, v in (consts or {}).items()})


def _resolve(spec: str | Path | ir.Spec, given: Mapping[str, ParamValue]
             ) -> tuple[ir.Spec, dict[str, Fraction]]:
    """The spec elaborated with the structural constants among ``given``, and the other
    values (timing parameters).  A spec already elaborated is elaborated again from its
    source when a constant changes.  Raises SpecError for a bad constant value."""
    from checker.language import load_text

    values = {k: _fraction(v) for k, v in given.items()}
    if not isinstance(spec, ir.Spec):
        sp = load_spec(spec, values)
    else:
        sp = spec
        current = {c.name: Fraction(c.value) for c in sp.consts}
        changed = {k: v for k, v in values.items() if k in current and current[k] != v}
        if changed:
            sp = load_text(sp.source, sp.path, {**current, **changed})
    names = {c.name for c in sp.consts}
    return sp, {k: v for k, v in values.items() if k not in names}


def _fraction(v: ParamValue) -> Fraction:
    if isinstance(v, float):
        return Fraction(str(v))
    return Fraction(v)


@dataclass
class QueryOutcome:
    """The outcome of one ``reachable NAME: expr`` query."""

    name: str
    status: QueryStatus
    """:data:`REACHABLE` (with a witness trace), :data:`UNREACHABLE` (no reachable
    state satisfies it: a finding) or :data:`INCONCLUSIVE` (the run ended before)."""
    text: str
    """The query's expression as written."""
    trace: tr.Trace | None = None
    """The witness: a shortest run (in events, under breadth-first search) to a state
    satisfying the query, with timestamps."""
    timing_note: str | None = None


@dataclass
class Outcome:
    """The result of checking a spec at concrete parameter values.

    ``verdict`` is :data:`UNREACHABLE` when every property holds but some
    ``reachable`` query is never reachable (see :attr:`queries`)."""

    spec: ir.Spec
    params: dict[str, Fraction]
    verdict: Verdict
    prop: str | None
    message: str | None
    trace: tr.Trace | None
    stats: Stats
    limit: str | None
    timing_note: str | None = None
    raw: tuple[SpecModel, CheckResult] | None = None
    never_fired: tuple[str, ...] = ()
    never_active: tuple[str, ...] = ()
    """With HOLDS: the deadlines that were active in no explored state (they never
    bounded time)."""
    never_triggered: tuple[str, ...] = ()
    """With HOLDS: the bounded-response properties whose trigger never held (they hold
    vacuously)."""
    queries: tuple[QueryOutcome, ...] = ()
    """The ``reachable`` queries checked, in declaration order."""
    ref: PropertyRef | None = None
    """With VIOLATED: the violated property, typed."""

    def query(self, name: str) -> QueryOutcome:
        """The outcome of query ``name`` (KeyError if it was not checked)."""
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(name)

    def assert_reachable(self, name: str) -> None:
        """Fail unless query ``name`` was found reachable."""
        q = self.query(name)
        if q.status != REACHABLE:
            raise AssertionError(f"expected `reachable {name}` to be reachable, got"
                                 f" {q.status}: {self.summary()}")

    @property
    def vacuous(self) -> bool:
        """A HOLDS that some part of the model never exercised (see the ``never_*``
        fields): a property may hold only because nothing tests it."""
        return self.verdict in (HOLDS, UNREACHABLE) and bool(
            self.never_fired or self.never_active or self.never_triggered)
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
        name = self.ref.name if self.ref is not None else None
        if prop is not None and prop not in (self.prop, name):
            raise AssertionError(f"expected {prop} to be violated, got: {self.summary()}")

    def summary(self) -> str:
        """One line: verdict, property and message."""
        if self.verdict == VIOLATED:
            return f"violated: {self.prop}: {self.message}"
        if self.verdict == INCONCLUSIVE:
            return f"inconclusive: {self.limit}"
        if self.verdict == ERROR:
            return f"model error: {self.message}"
        if self.verdict == UNREACHABLE:
            never = ", ".join(q.name for q in self.queries
                              if q.status is QueryStatus.UNREACHABLE)
            return f"unreachable: every property holds, but never reachable: {never}"
        return "holds"

    # ---- display (Jupyter and the REPL) ---------------------------------------------

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={tr.fmt_time(v)}" for k, v in self.params.items())
        text = f"<Outcome {self.spec.name} ({params}): {self.summary()}"
        if self.trace is not None:
            n = len(self.trace.steps) - 1
            text += f"; trace of {n} event{'s' if n != 1 else ''}"
        return text + ">"

    def diagram_svg(self) -> str | None:
        """The trace's sequence diagram as SVG text; None without a trace or without
        Graphviz."""
        if self.trace is None:
            return None
        import tempfile

        from checker.present import dot as render

        with tempfile.TemporaryDirectory(prefix="kvrace-") as tmp:
            out = Path(tmp) / "trace.svg"
            try:
                if not render.render(render.sequence_dot(self.trace), out).rendered:
                    return None
            except render.RenderError:
                return None
            return out.read_text(encoding="utf-8")

    def _repr_svg_(self) -> str | None:
        return self.diagram_svg()

    def _repr_html_(self) -> str:
        import html

        params = ", ".join(f"{k}={tr.fmt_time(v)}" for k, v in self.params.items())
        color = {HOLDS: "#2e7d32", VIOLATED: "#c62828"}.get(self.verdict, "#e65100")
        parts = [f"<div><b>{html.escape(self.spec.name)}</b> ({html.escape(params)})</div>",
                 f'<div style="color:{color}"><b>{html.escape(self.verdict.upper())}</b>'
                 f"{html.escape(self.summary()[len(self.verdict):])}</div>"]
        if self.never_fired:
            parts.append("<div>never fired (vacuous for them): "
                         + html.escape(", ".join(self.never_fired)) + "</div>")
        if self.trace is not None:
            svg = self.diagram_svg()
            if svg is not None:
                start = svg.find("<svg")  # drop the XML prologue: inline in HTML
                parts.append(svg[start:] if start >= 0 else svg)
            else:
                parts.append(f"<pre>{html.escape(tr.to_text(self.trace))}</pre>")
        return "\n".join(parts)

    def viewer(self) -> object:
        """The interactive step-through of the trace (see ``kvrace view``): shown inline
        in Jupyter, or written to a file with ``.save(path)``.  Raises ValueError when
        there is no trace."""
        if self.trace is None or self.raw is None:
            raise ValueError(f"no trace to view: {self.summary()}")
        from checker.view import page, steps

        run = steps.run_of_trace(self.raw[0], self.trace)
        return page.Embedded(page.page_html(steps.view_json(run),
                                            steps.check_info(self.trace), live=False))


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
    instants: list[Fraction] | None = None
    # Every instant of the timed trace (and one more for an overdue response).
    note = None
    cannot_start = (result.verdict == ERROR and result.message is not None
                    and result.message.endswith("time cannot even start"))
    if with_times and cannot_start and len(steps) == 1:
        # The initial state admits no instant at all: it is shown at t=0, where it breaks.
        times = [Fraction(0)]
    elif with_times and result.verdict in (VIOLATED, ERROR, REACHABLE) and steps:
        from checker import smt

        shape = TraceShape.of(model, states, edges, result.prop)
        try:
            if result.verdict == REACHABLE:
                got, holds = _query_timestamps(model, states, edges, result.prop)
            else:
                got, holds = smt.timestamps(model, model.values, shape), None
            times = got[: len(states)]
            instants = list(got)
            if holds is not None:
                note = holds
            elif len(got) > len(states):
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
    if result.verdict == VIOLATED and result.message is not None and steps:
        result.message = _explained(model, result, states, edges, instants)
    elif cannot_start and steps:
        from checker.model import why

        detail = why.initial_deadline_detail(model.spec, model, states[0])
        if detail:
            result.message = f"{result.message}: {detail}"
    labels = [s.label for s in steps]
    trace = tr.build(model.spec, model.values, result.verdict, result.prop, result.message,
                     labels, states, events, receives, failures, times)
    return trace, note


def _query_timestamps(model: SpecModel, states: list[tuple[int, ...]], edges: list[Edge],
                      prop: str | None) -> tuple[list[Fraction], str | None]:
    """Timestamps of a query's witness: the query's clock part, if it has one, holds at
    one more instant in the last state (then the note says when)."""
    from checker import smt

    name = (prop or "").removeprefix("reachable ")
    index = model.query_names.index(name) if name in model.query_names else -1
    parts = [m.parts for m in model.queries(states[-1]) if m.query == index]
    if not parts or any(not part for part in parts[0]):
        return smt.timestamps(model, model.values, TraceShape(states, edges)), None
    for part in parts[0]:
        try:
            got = smt.timestamps(model, model.values, TraceShape(states, edges, part))
        except ValueError:
            continue  # this convex part is not reached along the witness; the next one is
        return got[: len(states)], f"`{name}` holds at t={tr.fmt_time(got[-1])}"
    raise ValueError("no convex part of the query is feasible along the witness")


def _explained(model: SpecModel, result: CheckResult, states: list[tuple[int, ...]],
               edges: list[Edge], instants: list[Fraction] | None) -> str:
    """The message of a violation with what the spec says about it (see
    :mod:`checker.model.why`): the values that broke an invariant, what stops time in
    a deadlock, the event an overdue response waited for."""
    from checker.model import why

    message = result.message or ""
    if result.prop == "deadlock" and not message.startswith(
            "no event can fire and time cannot pass:"):
        detail = why.deadlock_detail(model.spec, model, states, edges, instants)
        return f"{message}: {detail}" if detail else message
    kind = result.ref.kind if result.ref is not None else None
    if kind is PropertyKind.INVARIANT:
        detail = why.invariant_detail(model.spec, result.prop or "", states[-1])
        return message + (detail or "")
    if kind is PropertyKind.RESPONSE and message.startswith(
            "no response within"):
        detail = why.response_detail(model.spec, model, result.prop or "", states, edges,
                                     instants)
        return f"{message}: {detail}" if detail else message
    return message


def explain(outcome: Outcome, free: list[str] | None = None) -> str:
    """The parameter region in which the counterexample's sequence of events is
    feasible (free parameters: all declared ones unless ``free`` is given)."""
    return explanation(outcome, free).text


@dataclass(frozen=True)
class Explanation:
    """The parameter region in which a counterexample's sequence of events is
    feasible: as text, and each of its constraints with the model elements whose
    bounds mention its parameters (:func:`constraint_provenance`)."""

    text: str
    provenance: list[tuple[str, list[Source]]]


def explanation(outcome: Outcome, free: list[str] | None = None) -> Explanation:
    """:func:`explain`, with the provenance of each constraint."""
    assert outcome.raw is not None
    model, result = outcome.raw
    steps = result.trace
    states = [s.state for s in steps]
    edges = [s.edge for s in steps[1:] if s.edge is not None]
    from checker.smt.synth import lin_text, trace_region

    shape = TraceShape.of(model, states, edges, result.prop)
    names = free if free is not None else [p for p, v in model.params.items()
                                           if v.lo is not None or v.hi is not None]
    region = trace_region(model, shape, names)
    if not region:
        return Explanation("always (for every parameter value in the declared ranges)", [])
    if any(c.trivial() is False for c in region):
        return Explanation("never", [])
    order = list(model.params)
    return Explanation(" and ".join(lin_text(c, order) for c in region),
                       constraint_provenance(model.spec, region, order))


def constraint_provenance(spec: ir.Spec, constraints: Sequence[Lin], order: Sequence[str]
                          ) -> list[tuple[str, list[Source]]]:
    """Each constraint (once, as printed, in order) with the model elements of ``spec``
    whose bounds mention its parameters (:mod:`checker.model.provenance`)."""
    from checker.model.provenance import provenance, sources
    from checker.smt.synth import lin_text

    among = sources(spec)
    out: list[tuple[str, list[Source]]] = []
    seen: set[str] = set()
    for c in constraints:
        text = lin_text(c, order)
        if text in seen:
            continue
        seen.add(text)
        out.append((text, provenance([v.removeprefix("p:") for v, _ in c.coefs], among)))
    return out


def check(
    spec: str | Path | ir.Spec,
    params: Mapping[str, ParamValue] | None = None,
    *,
    limits: Limits | None = None,
    options: Options | None = None,
    timestamps: bool = True,
    cluster: Cluster | None = None,
    **param_kw: ParamValue,
) -> Outcome:
    """Check every property of ``spec`` at the given parameter values.

    Parameters may be passed as a mapping or as keywords (``T_hold=7``).
    ``cluster``: explore in several Ray workers (breadth-first; the same verdict,
    trace and states, see :mod:`checker.engines.distributed`); raises
    :class:`~checker.engines.distributed.RayMissing` without Ray.
    Raises SpecError for a broken spec, ParamError for an unknown parameter or
    a value outside its range.
    """
    deadline = None
    if limits is not None and limits.timeout is not None:
        deadline = time.monotonic() + limits.timeout
        if limits.deadline is not None:
            deadline = min(deadline, limits.deadline)
        limits = dataclasses.replace(limits, deadline=deadline)
    sp, values = _resolve(spec, {**(params or {}), **param_kw})
    # --max-memory holds while the model is built and explored, not only where the
    # search checks its limits.
    with MemoryGuard(limits.max_memory_mb if limits is not None else None):
        try:
            model = SpecModel(sp, values, deadline)
            if cluster is None:
                result = explore(model, limits, options)
            else:
                from checker.engines.distributed import explore_distributed

                build = functools.partial(SpecModel, sp, values)
                result = explore_distributed(model, build, cluster, limits, options)
        except LimitReached as lim:
            return Outcome(sp, values, INCONCLUSIVE, None, None, None, Stats(), lim.what)
    model.deadline = None  # the run is over: the model serves the trace and later queries
    trace = None
    note = None
    if result.trace:
        trace, note = build_trace(model, result, timestamps)
    never: tuple[str, ...] = ()
    inactive: list[str] = []
    untriggered: list[str] = []
    only = options is not None and options.query is not None
    if result.verdict == HOLDS and not only:
        fired = {model.instance(e)[0].label for e in result.fired}
        never = tuple(ev.label for ev in sp.events if ev.label not in fired)
        inactive, untriggered = model.unexercised(result.reached)
    queries = tuple(_query_outcome(model, q, timestamps) for q in result.queries)
    verdict = Verdict(result.verdict)
    if verdict is HOLDS and any(q.status is QueryStatus.UNREACHABLE for q in queries):
        verdict = UNREACHABLE
    return Outcome(sp, dict(model.values), verdict, result.prop, result.message,
                   trace, result.stats, result.limit, note, (model, result), never,
                   tuple(inactive), tuple(untriggered), queries, result.ref)


def _query_outcome(model: SpecModel, q: QueryResult, timestamps: bool) -> QueryOutcome:
    """A query's result with its witness timed, as a counterexample is."""
    text = next((x.text for x in model.spec.queries if x.name == q.name), "")
    status = QueryStatus(q.status)
    if status is not QueryStatus.REACHABLE:
        return QueryOutcome(q.name, status, text)
    witness = CheckResult(REACHABLE, f"reachable {q.name}",
                          f"reachable: `{text}` holds in the last state", q.trace)
    trace, note = build_trace(model, witness, timestamps)
    return QueryOutcome(q.name, status, text, trace, note)


def state_graph(model: SpecModel, max_nodes: int, zones: bool = False, symmetry: bool = True,
                timeout: float | None = None) -> nx.DiGraph | None:
    """The explored zone graph as a networkx DiGraph, or None above ``max_nodes``
    states.  Raises LimitReached at the time limit.

    Its states are those ``check`` counts with the same options (the stored zones;
    see :class:`checker.engines.search.StateGraph`).  Node attributes: ``label``,
    ``highlight`` (on check's counterexample path) and ``assert_failure`` (True for
    the one extra node a failed assert leads to, drawn so that the failing event is
    an edge); edge attributes ``label`` and ``highlight``.  Graph attributes:
    ``verdict`` (``holds``, ``violated``, or ``error`` for a model error), and with a
    violation or an error ``property`` and ``message``.
    """
    import networkx as nx  # here: importing it costs every other command half a second

    result = explore(model, Limits(max_states=max_nodes + 1, timeout=timeout),
                     Options(symmetry=symmetry, record_graph=True))
    if result.limit is not None and result.limit_kind is not LimitKind.STATES:
        raise LimitReached(result.limit)
    if result.verdict == INCONCLUSIVE or result.graph is None:
        return None
    sg = result.graph
    g = nx.DiGraph()
    verdict = Verdict(result.verdict)
    g.graph["verdict"] = verdict.value
    if verdict in (Verdict.VIOLATED, Verdict.ERROR):
        g.graph["property"] = result.prop or ""
        g.graph["message"] = result.message or ""
    on_path = set(sg.violation)
    for i, (s, zone) in enumerate(sg.nodes):
        cells = tr.cells(model.spec, s)
        text = "\n".join(f"{k}={tr.show_value(v)}" for k, v in cells.items())
        if zones:
            text += f"\n{zone}"
        g.add_node(i, label=text, highlight=i in on_path, assert_failure=False)
    path_edges = set(itertools.pairwise(sg.violation))
    for a, b, label in sg.edges:
        if g.has_edge(a, b):
            if label not in g.edges[a, b]["label"].split("\n"):
                g.edges[a, b]["label"] += f"\n{label}"
        else:
            g.add_edge(a, b, label=label, highlight=(a, b) in path_edges)
    if sg.failing is not None and sg.violation:
        event, message = sg.failing
        bad = len(sg.nodes)
        g.add_node(bad, label=f"assertion violated:\n{message}", highlight=True,
                   assert_failure=True)
        g.add_edge(sg.violation[-1], bad, label=event, highlight=True)
    return g


# ---- parametric results: synth and prove ---------------------------------------------


def _params_text(values: Mapping[str, Fraction]) -> str:
    return ", ".join(f"{k}={tr.fmt_time(v)}" for k, v in values.items())


def _free_params(sp: ir.Spec, free: list[str] | None) -> list[str]:
    declared = [p.name for p in sp.params]
    if free is None:
        return [p.name for p in sp.params if p.lo is not None or p.hi is not None]
    consts = {c.name: c.value for c in sp.consts}
    for name in free:
        if name in consts:
            raise ValueError(f"`{name}` is a structural constant, not a timing parameter: it"
                             " cannot be synthesized; fix it with -p"
                             f" {name}=VALUE (now {consts[name]}) and run once per value")
        if name not in declared:
            raise ValueError(f"unknown parameter {name!r} (the spec declares:"
                             f" {', '.join(declared)})")
    return [p for p in declared if p in free]


@dataclass
class Synthesis:
    """The result of :func:`synth`: the parameter region in which every property holds."""

    spec: ir.Spec
    free: list[str]
    fixed: dict[str, Fraction]
    complete: bool
    region: str | None
    """The safe region as a constraint (``true``, ``false``, ``T_hold > ...``); None when
    the exploration was cut short by a limit."""
    limit: str | None
    raw: object = None
    """The engine's :class:`checker.smt.synth.SynthResult`."""
    coverage: Coverage | None = None
    """How much of the ranges the region covers (``all``, ``some``, ``none``); None when
    a limit cut the run short before that was known."""

    def summary(self) -> str:
        """One line: the safe region, or why there is none."""
        if self.coverage is Coverage.NONE:
            return "violated: no parameter value in the ranges is safe"
        if not self.complete:
            return f"inconclusive: {self.limit}"
        return f"safe region: {self.region}"

    def __repr__(self) -> str:
        over = ", ".join(self.free) or "no parameter"
        fixed = f"; fixed {_params_text(self.fixed)}" if self.fixed else ""
        return f"<Synthesis {self.spec.name} over {over}{fixed}: {self.summary()}>"

    def _repr_html_(self) -> str:
        import html

        head, _, rest = self.summary().partition(": ")
        color = ("#c62828" if self.coverage is Coverage.NONE
                 else "#2e7d32" if self.complete else "#e65100")
        return (f"<div><b>{html.escape(self.spec.name)}</b>: synthesis over"
                f" {html.escape(', '.join(self.free))}</div>"
                f'<div style="color:{color}"><b>{html.escape(head.upper())}</b>:'
                f" <code>{html.escape(rest)}</code></div>")


def synth(spec: str | Path | ir.Spec, params: Mapping[str, ParamValue] | None = None, *,
          free: list[str] | None = None, max_states: int | None = None,
          timeout: float | None = None, deadlock: bool = True, merge: bool = True,
          **param_kw: ParamValue) -> Synthesis:
    """The exact region of the ``free`` parameters (default: every parameter with a
    declared range) in which every property holds, the others at their given or default
    values (as ``kvrace synth``); ``merge=False`` explores without merging symbolic
    states (``--no-merge``: the same region, more symbolic states)."""
    from checker.smt import synth as sy

    sp, values = _resolve(spec, {**(params or {}), **param_kw})
    names = _free_params(sp, free)
    model = SpecModel(sp, values, concrete=False)
    result = sy.explore_parametric(model, names, (), max_states, timeout, deadlock=deadlock,
                                   merge=merge)
    from checker.smt.regions import readable

    cov = sy.coverage(result)
    region = (readable(result).text([p.name for p in sp.params])
              if result.complete or cov is Coverage.NONE else None)
    fixed = {k: v for k, v in model.values.items() if k not in names}
    return Synthesis(sp, names, fixed, result.complete, region, result.limit, result, cov)


@dataclass(frozen=True)
class RegionPoint:
    """A parameter point inside the declared ranges where two regions disagree."""

    values: dict[str, Fraction]
    """The free parameters' values."""
    in_found: bool
    """Whether the point is in the synthesised region (then not in the other)."""


def region_difference(found: Synthesis, expected: str) -> RegionPoint | None:
    """Whether ``found`` is exactly the region ``expected`` describes (a formula of
    comparisons with ``and``, ``or``, ``not``, over the parameters; the fixed ones at
    their values), within the free parameters' ranges: ``None`` when the two are
    equivalent there, else a point where they differ.  Raises SpecError for a formula
    that does not parse, ValueError for an inconclusive synthesis."""
    from checker.smt import synth as sy

    raw = found.raw
    if not found.complete or not isinstance(raw, sy.SynthResult):
        raise ValueError(f"no region to compare: {found.summary()}")
    lins = region_formula(expected, [p.name for p in found.spec.params], found.free,
                          found.fixed)
    got = sy.region_difference(sy.safe_region(raw), raw.ranges, lins, found.free)
    return None if got is None else RegionPoint(*got)


def region_formula(text: str, params: list[str], free: list[str],
                   fixed: Mapping[str, Fraction]) -> LinFormula:
    """A region written as text (comparisons with ``and``, ``or``, ``not`` over
    ``params``) as constraints over the ``free`` parameters, the others at their
    ``fixed`` values; :func:`checker.smt.synth.formula_z3` makes it a Z3 formula.
    Raises SpecError for a formula that does not parse."""
    from checker.language.assume import parse_region

    return _region_lins(parse_region(text, params), free, fixed)


def _region_lins(f: RegionFormula, free: list[str], fixed: Mapping[str, Fraction]
                 ) -> LinFormula:
    """A parsed region as constraints over the free parameters (the others at their
    values)."""
    from checker.smt.lin import Lin, param_var

    if isinstance(f, bool):
        return f
    if isinstance(f[0], str):
        op, parts = f
        assert isinstance(op, str) and isinstance(parts, tuple)
        return (op, tuple(_region_lins(p, free, fixed) for p in parts))
    (coefs, const), op = f
    c0 = const + sum((a * fixed[p] for p, a in coefs.items() if p not in free), Fraction(0))
    cs = {param_var(p): a for p, a in coefs.items() if p in free}
    neg = {k: -v for k, v in cs.items()}
    below = {"<": Lin.make(cs, c0, True), "<=": Lin.make(cs, c0, False),
             ">": Lin.make(neg, -c0, True), ">=": Lin.make(neg, -c0, False)}
    if op == "==":
        return ("and", (below["<="], below[">="]))
    if op == "!=":
        return ("or", (below["<"], below[">"]))
    return below[op]


@dataclass
class Proof:
    """The result of :func:`prove`: ``proved``, ``refuted`` or ``inconclusive``."""

    spec: ir.Spec
    assume: str
    free: list[str]
    status: ProofStatus
    counterexample: Outcome | None
    """When refuted: the check at the parameter values found inside the assumption."""
    tight: bool
    """When proved: a property breaks on (or arbitrarily close to) the assumption's
    boundary, so it cannot be weakened there."""
    vacuous: bool
    limit: str | None
    raw: object = None
    """The engine's :class:`checker.smt.synth.ProveResult`."""

    def summary(self) -> str:
        """One line: the status, and where a property breaks when refuted."""
        if self.status is ProofStatus.REFUTED and self.counterexample is not None:
            cx = self.counterexample
            return f"refuted at {_params_text(cx.params)}: {cx.summary()}"
        if self.status is ProofStatus.PROVED:
            note = " (vacuous: no parameter value satisfies the assumption)" if self.vacuous \
                else (" (tight)" if self.tight else "")
            return "proved" + note
        return f"inconclusive: {self.limit}"

    def __repr__(self) -> str:
        return f"<Proof {self.spec.name} assuming {self.assume}: {self.summary()}>"

    def _repr_svg_(self) -> str | None:
        return self.counterexample.diagram_svg() if self.counterexample is not None else None

    def _repr_html_(self) -> str:
        import html

        color = {ProofStatus.PROVED: "#2e7d32", ProofStatus.REFUTED: "#c62828"}.get(
            self.status, "#e65100")
        parts = [f"<div><b>{html.escape(self.spec.name)}</b> assuming"
                 f" <code>{html.escape(self.assume)}</code></div>",
                 f'<div style="color:{color}"><b>{html.escape(self.status.upper())}</b>'
                 f"{html.escape(self.summary()[len(self.status):])}</div>"]
        if self.counterexample is not None:
            parts.append(self.counterexample._repr_html_())
        return "\n".join(parts)


def assumption(model: SpecModel, text: str, free: list[str]) -> list[Lin]:
    """``--assume`` text as linear constraints over the ``free`` parameters (the others
    at the model's values).  Raises SpecError with positioned diagnostics, also (KVR309)
    when no parameter value in the ranges satisfies it: a proof under it would be
    vacuous."""
    from checker.diagnostics import Diagnostic, Span, SpecError
    from checker.language.assume import SOURCE, parse_assumption
    from checker.smt import synth as sy
    from checker.smt.lin import Lin, param_var

    out: list[Lin] = []
    mentioned: set[str] = set()
    for (coefs, const), op in parse_assumption(text, list(model.params)):
        mentioned.update(p for p, a in coefs.items() if a != 0)
        fixed_part = sum((a * model.values[p] for p, a in coefs.items() if p not in free),
                         Fraction(0))
        cs = {param_var(p): a for p, a in coefs.items() if p in free}
        c0 = const + fixed_part
        neg = {k: -v for k, v in cs.items()}
        if op in ("<", "<="):
            out.append(Lin.make(cs, c0, op == "<"))
        elif op in (">", ">="):
            out.append(Lin.make(neg, -c0, op == ">"))
        else:
            out += [Lin.make(cs, c0, False), Lin.make(neg, -c0, False)]
    if not sy.admits(model, free, out):
        ranges = ", ".join(f"{p} in {model.params[p].range_text()}" for p in free
                           if model.params[p].range_text())
        within = f" ({ranges})" if ranges else ""
        if model.param_constraints:
            within += " and the spec's `assume` constraints"
        fixed = {p: v for p, v in model.values.items() if p not in free and p in mentioned}
        also = (f", with {_params_text(fixed)}" if fixed else "")
        raise SpecError([Diagnostic(
            "KVR309", f"no parameter value in the ranges{within}{also} satisfies the"
            " assumption: a proof under it would be vacuous", SOURCE,
            Span(1, 1, 1, max(2, len(text.split("\n")[0]) + 1)))], text)
    return out


def prove(spec: str | Path | ir.Spec, assume: str,
          params: Mapping[str, ParamValue] | None = None, *, free: list[str] | None = None,
          max_states: int | None = None, timeout: float | None = None, deadlock: bool = True,
          **param_kw: ParamValue) -> Proof:
    """Prove every property for every value of the ``free`` parameters (default: every
    parameter with a declared range) inside their ranges that satisfies ``assume`` (as
    ``kvrace prove``).  Raises SpecError for an assumption that does not parse or that
    no parameter value in the ranges satisfies (KVR309)."""
    from checker.smt import synth as sy

    sp, values = _resolve(spec, {**(params or {}), **param_kw})
    names = _free_params(sp, free)
    model = SpecModel(sp, values, concrete=False)
    lins = assumption(model, assume, names)
    res = sy.prove(model, lins, names, max_states, timeout, deadlock=deadlock)
    outcome = None
    if res.status is ProofStatus.REFUTED and res.counterexample is not None:
        point = {**model.values, **res.counterexample}
        outcome = check(sp, point, options=Options(deadlock=deadlock))
    tight = res.boundary is not None or res.near is not None
    return Proof(sp, assume, names, res.status, outcome, tight, res.vacuous,
                 res.synth.limit, res)
# ---- simulation (statistical model checking) ------------------------------------------------


def simulate(
    spec: str | Path | ir.Spec,
    params: Mapping[str, ParamValue] | None = None,
    *,
    runs: int = 1000,
    seed: int = 0,
    config: SimConfig | None = None,
    confidence: float = 0.95,
    jobs: int = 1,
    keep: int = 5,
    sprt: Sprt | None = None,
    progress: Progress | None = None,
    **param_kw: ParamValue,
) -> SimResult:
    """Random runs of ``spec`` at the given parameter values under the stochastic
    semantics of :mod:`checker.simulate.engine`: the estimated probability that a run
    violates a property, with Clopper–Pearson intervals (never a verdict).

    ``keep`` violating runs are kept in ``examples`` (turn one into a trace with
    :func:`simulation_trace`); ``sprt`` runs Wald's test and stops once it decides.
    Raises SpecError / ParamError like :func:`check`.
    """
    from checker.simulate.engine import SimConfig
    from checker.simulate.runner import Runner
    from checker.simulate.runner import simulate as run_simulation

    sp, values = _resolve(spec, {**(params or {}), **param_kw})
    model = SpecModel(sp, values)
    with Runner(model, config or SimConfig(), jobs) as runner:
        return run_simulation(runner, runs, seed, confidence, keep, sprt, progress)


_SIM_MODELS: dict[tuple[int, tuple[tuple[str, Fraction], ...]], tuple[ir.Spec, SpecModel]] = {}


def _sim_model(spec: ir.Spec, params: Mapping[str, Fraction]) -> SpecModel:
    """The compiled model of a simulation's spec and values (a few are remembered)."""
    key = (id(spec), tuple(sorted(params.items())))
    got = _SIM_MODELS.get(key)
    if got is None or got[0] is not spec:
        if len(_SIM_MODELS) >= 8:
            _SIM_MODELS.clear()
        got = (spec, SpecModel(spec, params))
        _SIM_MODELS[key] = got
    return got[1]


def simulation_trace(spec: ir.Spec, result: SimResult, run: RunResult) -> tr.Trace:
    """A violating run of ``result`` as a trace (the format ``kvrace draw`` reads)."""
    from checker.simulate.runner import run_trace

    return run_trace(_sim_model(spec, result.params), run)


def replays(spec: ir.Spec, result: SimResult, run: RunResult) -> bool:
    """Whether a violating run's sequence of events is feasible in the exact zone
    semantics (:func:`~checker.semantics.traces.replay_zone`) and ends in the violation
    it reports."""
    from checker.model.interface import scaled_bounds
    from checker.semantics.traces import replay_zone
    from checker.simulate.runner import trace_steps

    model = _sim_model(spec, result.params)
    steps = trace_steps(model, run)
    zone = replay_zone(model, scaled_bounds(model.bounds, model.values)[0], steps)
    if zone is None:
        return False
    last = steps[-1]
    if run.prop == "assert":
        return last.edge is not None and last.edge.failure == run.message
    if run.prop == "deadlock":
        return True
    names = {v.property for v in model.violations(last.state)}
    names |= {h.property for h in model.hazards(last.state)}
    return run.prop in names


def safe_threshold(spec: ir.Spec, param: str, params: Mapping[str, ParamValue] | None = None,
                   timeout: float | None = 60.0) -> Threshold | None:
    """The exact safe bound on ``param`` from synthesis with only ``param`` free (the
    others at ``params`` or their defaults), when the safe region is one half-line
    ``param > c`` (or ``>=``, ``<``, ``<=``); None otherwise or when synthesis does not
    finish within ``timeout`` seconds."""
    from checker.simulate.plot import Threshold
    from checker.smt import SolverUnknown
    from checker.smt import synth as sy

    spec, values = _resolve(spec, {k: v for k, v in (params or {}).items() if k != param})
    model = SpecModel(spec, values, concrete=False)
    try:
        result = sy.explore_parametric(model, [param], (), None, timeout)
    except SolverUnknown:
        return None
    if not result.complete:
        return None
    from checker.smt.regions import readable

    shown = readable(result)
    if len(shown.parts) != 1 or len(shown.parts[0]) != 1:
        return None
    c = shown.parts[0][0]
    if len(c.coefs) != 1:
        return None
    a = c.coefs[0][1]
    # a*x + const (<, <=) 0
    return Threshold(-c.const / a, a < 0, c.strict)


# ---- unbounded liveness -----------------------------------------------------------------


@dataclass(frozen=True)
class LivenessOutcome:
    """One unbounded liveness property instance: ``status`` is ``holds``, ``violated``
    (with a lasso ``trace``) or ``inconclusive``."""

    name: str
    """The instance, e.g. ``served[A]``."""
    status: str
    message: str
    trace: tr.Trace | None = None
    timing_note: str | None = None


@dataclass(frozen=True)
class LivenessRun:
    """Every checked liveness property instance, and what the check cost."""

    results: tuple[LivenessOutcome, ...]
    zones: int
    transitions: int
    seconds: float
    limit: str | None
    error: str | None = None
    """A model run-time error met while checking (no result is given then)."""
    reduced: bool = False
    """Whether some instance was shown to hold on a graph reduced by symmetry."""
    reduced_zones: int = 0
    """Of ``zones``, those of the graphs reduced by symmetry (built even when they
    decide nothing)."""

    @property
    def verdict(self) -> Verdict:
        """``error`` for a model error; ``violated`` if one is, else ``inconclusive`` if
        one is, else ``holds``."""
        if self.error is not None:
            return ERROR
        statuses = {r.status for r in self.results}
        if VIOLATED in statuses:
            return VIOLATED
        if INCONCLUSIVE in statuses:
            return INCONCLUSIVE
        return HOLDS


def check_liveness(model: SpecModel, limits: Limits | None = None, only: str | None = None,
                   timestamps: bool = True, symmetry: bool = True) -> LivenessRun:
    """Check the unbounded ``leadsto`` and ``always eventually`` properties of ``model``
    (see :mod:`checker.algorithms.liveness`); ``only``: the property of that name alone;
    ``symmetry``: reduce by the permutations that leave an instance unchanged (the same
    verdicts, fewer zones).  Run it after safety holds: an ``assert`` edge is never
    taken here."""
    from checker.algorithms.liveness import LiveStatus
    from checker.algorithms.liveness import check_liveness as run

    with MemoryGuard(limits.max_memory_mb if limits is not None else None):
        try:
            report = run(model, limits, only, symmetry)
        except LimitReached as lim:
            names = [n for n in model.leadsto_names
                     if only is None or n.split("[", 1)[0] == only]
            return LivenessRun(tuple(LivenessOutcome(n, INCONCLUSIVE, lim.what)
                                     for n in names), 0, 0, 0.0, lim.what)
    out: list[LivenessOutcome] = []
    for r in report.results:
        if r.status is LiveStatus.VIOLATED and r.lasso is not None:
            trace, note, message = _lasso_trace(model, r.name, r.message, r.lasso, timestamps)
            out.append(LivenessOutcome(r.name, VIOLATED, message, trace, note))
        else:
            out.append(LivenessOutcome(r.name, str(r.status), r.message))
    st = report.stats
    return LivenessRun(tuple(out), st.zones, st.transitions, st.seconds, report.limit,
                       report.error, st.reduced, st.reduced_zones)


def _lasso_trace(model: SpecModel, name: str, message: str, lasso: object,
                 timestamps: bool) -> tuple[tr.Trace, str | None, str]:
    """The :class:`~checker.model.trace.Trace` of a lasso, timed by Z3, its timing
    note, and the violation's message with the step where the obligation began."""
    from checker.algorithms.liveness import Lasso, LassoKind

    assert isinstance(lasso, Lasso)
    steps = lasso.trace
    states = [s.state for s in steps]
    edges = [s.edge for s in steps[1:] if s.edge is not None]
    events: list[tuple[ir.Event, tuple[int, ...]] | None] = [None]
    receives: list[tuple[str, tuple[int, ...]] | None] = [None]
    for prev, step in itertools.pairwise(steps):
        assert step.event is not None
        events.append(model.instance(step.event))
        receives.append(model.receive_of(step.event, prev.state))
    times: list[Fraction] | None = None
    note = None
    exact = False
    if timestamps:
        from checker import smt

        shape = TraceShape(states, edges)
        try:
            if lasso.kind is LassoKind.CYCLE:
                times, exact = smt.lasso_timestamps(model, model.values, shape, lasso.loop)
            else:
                times = smt.timestamps(model, model.values, shape)
        except smt.SolverUnknown as exc:
            note = f"timestamps unknown (solver: {exc})"
        except ValueError:
            note = "timestamps unavailable: the lasso is not feasible in time (please report)"
        if lasso.kind is LassoKind.DEADLOCK and times is not None:
            note = _time_stops(model, states[-1], edges, times)
    decl = next((lt for lt in model.spec.leadsto if lt.name == name.split("[", 1)[0]), None)
    at = lasso.trigger
    if decl is not None and decl.always:
        message = f"{message}; the property fails from step {at} on"
    else:
        message = f"{message}; the obligation starts at step {at}"
    trace = tr.build(model.spec, model.values, VIOLATED, name, message,
                     [s.label for s in steps], states, events, receives,
                     [None] * len(steps), times)
    trace = dataclasses.replace(
        trace, lasso=str(lasso.kind),
        loop=lasso.loop if lasso.kind is LassoKind.CYCLE else None, repeats_exactly=exact)
    return trace, note, message

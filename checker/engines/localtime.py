"""``check --local-time``: the zone explorer over local-time zones.

The search is the zone explorer's (:class:`checker.engines.search.ZoneCheck`, the same
covering loop and goal) over the local-time zone graph of
:mod:`checker.semantics.localtime`, for models that describe themselves as networks of
components (:func:`checker.model.interface.components_of`; the DSL's compiled models
do, :mod:`checker.model.components`).

Sound for: invariants over the discrete state, ``assert``s, and ``reachable`` queries
without clock atoms (a discrete state is reachable in global time exactly when it is
reached here with a synchronisable zone).  Refused (:class:`UsageError`, exit 2):
deadlock freedom (local time does not preserve deadlocks: ``--no-deadlock`` is
required), bounded responses and queries with clock atoms, urgent and committed
events, the state graph of ``kvrace graph``, a model without components.  Symmetry
reduction is not used.  No clock pre-pass runs: each clock keeps every constant it is
compared with anywhere in the model, in every state.

A local-time path is not a run in global time (its events may be out of time order),
so a violation, a model error or a query's witness found here is shown by the ordinary
zone explorer, run again in global time until it meets one: its trace is a real run,
and the trace and diagram machinery works unchanged.
"""

from __future__ import annotations

import dataclasses

from checker.algorithms.covreach import Passed, Waiting, waiting_list
from checker.engines.search import (
    INCONCLUSIVE,
    UNREACHABLE,
    CheckResult,
    FirstViolation,
    Options,
    QueryResult,
    ZoneCheck,
)
from checker.errors import UsageError
from checker.limits import Limits
from checker.model.interface import Components, TimedModel, components_of
from checker.results import Verdict
from checker.semantics.localtime import LocalTimeTS
from checker.semantics.traces import TraceStep
from checker.semantics.ts import Extrapolation, LabelKind

NO_COMPONENTS = ("--local-time needs a model that describes its components (processes,"
                 " shared variables); this model does not")


def components_for(model: TimedModel, options: Options) -> Components:
    """The model's components; UsageError for what local time cannot check soundly."""
    comps = components_of(model)
    if comps is None:
        raise UsageError(NO_COMPONENTS)
    if comps.unsupported is not None:
        raise UsageError(f"--local-time cannot check this model soundly: {comps.unsupported}")
    if options.deadlock and options.query is None:
        raise UsageError("--local-time does not preserve deadlocks: add --no-deadlock (deadlock"
                         " freedom is then not checked), or drop --local-time")
    if options.record_graph:
        raise UsageError("--local-time does not record the state graph")
    return comps


class LocalTimeCheck(ZoneCheck):
    """One ``check --local-time`` run (see the module docstring)."""

    def __init__(self, model: TimedModel, limits: Limits, options: Options,
                 start: float | None = None) -> None:
        self.comps = components_for(model, options)
        options = dataclasses.replace(options, symmetry=False, deadlock=False)
        super().__init__(model, limits, options, start)

    def restart(self, extrapolation: Extrapolation, waiting: Waiting | None = None) -> None:
        """A fresh search over the local-time zone graph."""
        labels = self.labels() - {LabelKind.DEADLOCK, LabelKind.HAZARD}
        self.ts = LocalTimeTS(self.model, self.comps, self.bounds, self.scale, labels,  # type: ignore[assignment]
                              self.D)
        self.store = Passed(self.ts.includes, keep_shallower=True, released=b"")
        self.waiting = waiting_list(self.options.search) if waiting is None else waiting
        self.goal = FirstViolation(self, self.store, self.waiting)

    def prepare(self) -> None:
        """No clock pre-pass: it over-approximates the global-time graph only."""

    def global_run(self, query: str | None = None) -> CheckResult:
        """The ordinary zone explorer on the same model and budget (for a trace)."""
        options = dataclasses.replace(self.options, query=query, progress=None,
                                      on_phase=None)
        return ZoneCheck(self.model, self.limits, options, self.budget.start).run()

    def error(self, message: str, trace: list[TraceStep]) -> CheckResult:
        """A model error; one met past the initial state is shown by a global-time
        run."""
        local = super().error(message, trace)
        return local if trace else self.replayed(self.global_run(), local)

    def replayed(self, found: CheckResult, local: CheckResult) -> CheckResult:
        """The global-time run's result, with this search's statistics; a global run
        that finds nothing where local time found something is a defect of this
        engine."""
        if found.verdict == Verdict.HOLDS:
            raise AssertionError(f"local time found {local.prop!r} but global time does not")
        found.stats = local.stats
        found.queries = local.queries
        found.fired = local.fired
        return found

    def violation(self, node: int, prop: str, message: str,
                  extra: tuple[int, int] | None = None) -> CheckResult:
        """A property broken at a synchronisable node: its global-time run."""
        self.violating = (node, extra)
        local = self.finish(CheckResult(Verdict.VIOLATED, prop, message))
        return self.replayed(self.global_run(), local)

    def trace(self, node: int, extra: tuple[int, int] | None = None) -> list[TraceStep]:
        """No trace of a local-time path (it need not be a run in global time)."""
        return []

    def query_results(self, complete: bool) -> list[QueryResult]:
        """Every query's outcome; a reachable one's witness from a global-time run."""
        out: list[QueryResult] = []
        for q, name in enumerate(self.query_names):
            if self.only is not None and q != self.only:
                continue
            if q not in self.goal.witness:
                out.append(QueryResult(name, UNREACHABLE if complete else INCONCLUSIVE))
                continue
            got = self.global_run(name).queries
            if not got or got[0].status == UNREACHABLE:
                raise AssertionError(f"local time reaches {name!r} but global time does not")
            out.append(QueryResult(name, got[0].status, got[0].trace))
        return out


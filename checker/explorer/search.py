"""The zone explorer: reachability over the zone graph of a timed model.

A symbolic state is a discrete state and a zone: a canonical DBM over the
clocks that are *live* in that discrete state (:mod:`checker.explorer.zones`).
The loop is the one :mod:`checker.explorer.reach` runs for every engine; this
module says what the zone explorer checks, and stops at the first violation.
Exploration proceeds as in UPPAAL and TChecker:

1. **Clock bounds** (:mod:`checker.explorer.liveness`): a pre-pass (timed, with
   one hull zone per discrete state, for models with few clocks; untimed
   otherwise) gives, per discrete state, its live clocks and local LU bounds.
2. **Zones.**  Successor: intersect with the edge's guard, reset, move to the
   target's live clocks, intersect with the target's deadlines, let time pass
   (bounded by the deadlines), then extrapolate by the target's local LU
   bounds (Extra+_LU) so that cyclic models terminate.
3. **Covering.**  A new zone included in a stored zone of the same discrete
   state is dropped; stored zones the new one includes are retired, and are not
   expanded if they are still waiting.
4. **Symmetry** (:mod:`checker.explorer.canon`): each symbolic state is
   replaced by a canonical image under the permutations of symmetric values,
   found by sorting the values by signature, not by trying every permutation.
5. **Properties** are checked when a state is generated, so in breadth-first
   order the first violation found has a shortest trace (in events).

**Deadlocks under LU abstraction.**  Extra+_LU adds valuations that are only
*simulated* by reachable ones; such a valuation may be stuck where its
simulator is not.  Deadlock is therefore checked on each successor zone
*before* it is extrapolated: every reachable valuation lies in some such zone,
so no deadlock is missed.  A deadlock found there is confirmed by replaying its
trace exactly (no abstraction, every clock); if the replay shows no deadlock,
the run starts again with the classic Extra_M over the model's maximal
constants, whose added valuations are region-equivalent to reachable ones, so
every deadlock it finds is real.

Limits (states, seconds, memory) end a run as *inconclusive*, never *holds*.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from checker.errors import KvraceError, ModelError
from checker.explorer import backend, dbm
from checker.explorer.canon import Canonizer, canonizer
from checker.explorer.limits import MAX_ZONE_MB, LimitHit, LimitKind, Limits, peak_rss_mb
from checker.explorer.liveness import EDGE_CACHE, Liveness, clock_bounds, live_clocks
from checker.explorer.reach import Reachability, Stats
from checker.explorer.traces import PathStep, TraceStep, concrete, renamed, replay_zone
from checker.explorer.zones import DbmZones, Frame
from checker.model.interface import (
    Edge,
    ModelRuntimeError,
    State,
    Symmetry,
    TimedModel,
    scaled_bounds,
)
from checker.results import PropertyKind, PropertyRef, QueryStatus, Verdict

HOLDS, VIOLATED, INCONCLUSIVE, ERROR = (
    Verdict.HOLDS, Verdict.VIOLATED, Verdict.INCONCLUSIVE, Verdict.ERROR)
REACHABLE, UNREACHABLE = QueryStatus.REACHABLE, QueryStatus.UNREACHABLE
"""The outcomes of a ``reachable`` query (besides :data:`INCONCLUSIVE`)."""
TIMED_PREPASS_CLOCKS = 64
"""Models with at most this many clocks get the timed clock-bounds pass (a hull zone
over every clock per state); larger ones the untimed one."""

__all__ = [
    "ERROR",
    "HOLDS",
    "INCONCLUSIVE",
    "MAX_ZONE_MB",
    "REACHABLE",
    "UNREACHABLE",
    "VIOLATED",
    "CheckResult",
    "Limits",
    "Options",
    "QueryResult",
    "StateGraph",
    "Stats",
    "TraceStep",
    "explore",
    "live_clocks",
    "replay_zone",
]


@dataclass(frozen=True)
class Options:
    """How to explore."""

    search: str = "bfs"  # "bfs" | "dfs"
    symmetry: bool = True
    clock_reduction: bool = True
    deadlock: bool = True
    progress: Callable[[Stats], None] | None = None
    progress_interval: float = 1.0
    record_graph: bool = False
    """Keep every explored edge (for ``kvrace graph``): :attr:`CheckResult.graph`."""
    dbm: str = "auto"
    """``auto``: the compiled DBM core when it is built and the constants fit it;
    ``c`` or ``python`` to choose (``python`` is the reference)."""
    prepass: str = "timed"
    """The clock-bounds pass: ``timed`` (one hull zone per discrete state; used up to
    :data:`TIMED_PREPASS_CLOCKS` clocks) or ``untimed``."""
    extrapolation: str = "lu"
    """``lu``: local Extra+_LU (deadlocks confirmed, see the module docstring);
    ``m``: classic Extra_M over the global maximal constants."""
    query: str | None = None
    """Check only this ``reachable`` query: no other property is checked, and the run
    stops at its first witness."""


@dataclass
class QueryResult:
    """The outcome of one ``reachable`` query: :data:`REACHABLE` with a witness trace
    (shortest in events under breadth-first search), :data:`UNREACHABLE` (exploration
    finished and no reachable state satisfies it), or :data:`INCONCLUSIVE` (the run
    ended early: a limit, a violation, a model error)."""

    name: str
    status: str
    trace: list[TraceStep] = field(default_factory=list)


@dataclass
class CheckResult:
    """The outcome of a run."""

    verdict: str
    prop: str | None = None
    """The violated property: an invariant or response name, ``assert`` or ``deadlock``."""
    message: str | None = None
    trace: list[TraceStep] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    limit: str | None = None
    scale: int = 1
    """Clock constants were multiplied by ``scale`` to make them integers."""
    graph: StateGraph | None = None
    fired: frozenset[int] = frozenset()
    """The event instances that fired at least once (with symmetry reduction, those of
    the representatives: every declaration that fired is among them)."""
    reached: Sequence[State] = ()
    """With HOLDS: the discrete states explored (representatives, under symmetry), for
    coverage (which deadlines were ever active, which triggers ever held)."""
    queries: list[QueryResult] = field(default_factory=list)
    """The ``reachable`` queries checked, in declaration order (only the one asked for
    with :attr:`Options.query`)."""
    distributed: object | None = None
    """With ``--workers``/``--ray``: what the distribution cost
    (:class:`checker.explorer.distributed.DistStats`)."""
    ref: PropertyRef | None = None
    """With VIOLATED: the violated property, typed (its kind, name and instance)."""
    limit_kind: LimitKind | None = None
    """With INCONCLUSIVE: which limit :attr:`limit` describes."""

    @property
    def holds(self) -> bool:
        """Whether exploration finished with no violation."""
        return self.verdict == HOLDS


@dataclass
class StateGraph:
    """The explored zone graph: nodes (discrete state, zone text) and labelled edges.

    An edge to a state subsumed by a stored one points at the stored one.
    """

    nodes: list[tuple[State, str]] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    violation: list[int] = field(default_factory=list)
    """Node ids of the path to the violation, if one was found."""


class _Restart(KvraceError):
    """A deadlock of the LU abstraction that the exact replay did not confirm."""


class _Timelocked(ModelError):
    """The initial state breaks a deadline: time cannot even start."""

    def __init__(self, state: State) -> None:
        super().__init__()
        self.state = state


_Found = tuple[str, str] | None
"""A property broken by a new symbolic state (property, message)."""


class _Explorer(Reachability[dbm.Dbm, Frame, CheckResult]):
    """The zone explorer: :class:`Reachability` over DBMs, stopping at the first
    violation."""

    def __init__(self, model: TimedModel, limits: Limits, options: Options) -> None:
        self.options = options
        self.bounds, self.scale = scaled_bounds(model.bounds, model.values)
        self.n_clocks = len(model.clock_names)
        self._edge_cache: dict[State, Sequence[Edge]] = {}
        self.canon: Canonizer | None = canonizer(model, options.symmetry)
        top = max((abs(b) for b in self.bounds), default=0)
        choice = None if options.dbm == "auto" else options.dbm
        ops = backend.select(choice if backend.fits(top) else "python")
        # Clock bounds are computed by prepare(), inside run(), where model errors
        # are reported as such; until then every clock is live with every constant.
        live = Liveness(self.n_clocks, self.canon, max(self.bounds, default=0))
        self.dz = DbmZones(model, self.bounds, limits, self.canon, live, ops,
                           options.extrapolation)
        self.D = ops
        """The DBM operations: the compiled core when the constants are small enough."""
        self.query_names: list[str] = list(getattr(model, "query_names", ()))
        self.only: int | None = None
        """With :attr:`Options.query`: the one query checked (properties are not)."""
        if options.query is not None:
            if options.query not in self.query_names:
                raise ValueError(f"no `reachable {options.query}` query in the model")
            self.only = self.query_names.index(options.query)
        super().__init__(model, self.dz, limits, options.search, keep_shallower=True,
                         progress=options.progress,
                         progress_interval=options.progress_interval)
        self.record = options.record_graph

    @property
    def live(self) -> Liveness:
        """The clock bounds in use."""
        return self.dz.live

    @property
    def mode(self) -> str:
        """The extrapolation in use: ``lu`` or ``m``."""
        return self.dz.mode

    def reset_search(self) -> None:
        """Forget every stored node (a fresh start, e.g. in another extrapolation mode)."""
        super().reset_search()
        self.fired: set[int] = set()
        self.stuck: set[int] = set()
        """Nodes whose zone, before extrapolation, holds a deadlocked valuation."""
        self.witness: dict[int, int] = {}
        """Query (position in :attr:`query_names`) to the first node satisfying it."""
        self._hits: list[int] = []
        """The queries first satisfied by the symbolic state :meth:`arrive` checked."""

    def edges(self, s: State) -> Sequence[Edge]:
        """The model's edges out of ``s`` (memoised)."""
        got = self._edge_cache.get(s)
        if got is None:
            got = self.model.edges(s)
            if len(self._edge_cache) > EDGE_CACHE:
                self._edge_cache.clear()
            self._edge_cache[s] = got
        return got

    # ---- properties ---------------------------------------------------------------------
    def state_violation(self, s: State, f: Frame, z: dbm.Dbm) -> tuple[str, str] | None:
        """A property (s, z) breaks: an invariant, or a hazard some valuation meets."""
        viol = self.model.violations(s)
        if viol:
            return viol[0].property, viol[0].message
        for h in self.model.hazards(s):
            if self.dz.meets(f, z, h.atoms):
                return h.property, h.message
        return None

    def deadlock_at(self, s: State, f: Frame, z: dbm.Dbm) -> bool:
        """Whether (s, z) holds a deadlocked valuation (False when listing the edges of
        ``s`` faults: that model error is reported when ``s`` is expanded)."""
        if not self.options.deadlock or not f.deadlines:
            return False
        try:
            edges = self.edges(s)
        except ModelRuntimeError:
            return False  # a model error of s, reported when s is expanded
        return self.dz.stuck(f, z, edges)

    def confirm_deadlock(self, trace: list[TraceStep]) -> None:
        """Replay ``trace`` exactly; raise :class:`_Restart` unless its end deadlocks."""
        if self.mode == "m":
            return  # Extra_M adds only region-equivalent valuations: the deadlock is real
        zone = replay_zone(self.model, self.bounds, trace)
        final = trace[-1].state
        if zone is None or not self.dz.stuck(self.dz.full_frame(final), zone,
                                             self.model.edges(final)):
            raise _Restart

    # ---- hooks of the loop --------------------------------------------------------------
    def initial(self, s: State, f: Frame) -> dbm.Dbm | None:
        """Every clock at zero, closed; a deadline broken at once ends the run."""
        z = self.dz.close(f, self.dz.zero(f))
        if z is None:
            raise _Timelocked(s)
        return z

    def arrive(self, s: State, f: Frame, z: dbm.Dbm, parent: int, edge: Edge | None
               ) -> object:
        """Properties of the exact zone; deadlock is checked here, before
        extrapolation (see the module docstring), and reported on expansion."""
        if edge is not None:
            self.fired.add(edge.event)
        if self.query_names:
            self._hits = [q for q in self.model.queries(s)  # type: ignore[attr-defined]
                          if q not in self.witness and (self.only is None or q == self.only)]
        if self.only is not None:
            return False
        bad = self.state_violation(s, f, z)
        if bad is not None:
            return bad
        return self.deadlock_at(s, f, z)

    def stored(self, node: int | None, s: State, f: Frame, z: dbm.Dbm,
               sym: Symmetry | None, parent: int, edge: Edge | None, branch: int,
               depth: int, found: object) -> CheckResult | None:
        """Stop at a broken property; remember a stuck zone and the witnesses of
        queries; queue the node."""
        event = -1 if edge is None else edge.event
        if self._hits:
            hits, self._hits = self._hits, []
            # A covered state is still the first one found satisfying the query.
            wnode = node if node is not None else self.passed.node(s, z, parent, event,
                                                                   branch, sym, depth)
            for q in hits:
                self.witness[q] = wnode
            if self.only is not None:
                return self.finish(CheckResult(HOLDS))
            if found is not False and node is None:
                node = wnode
        if found is False:
            if node is not None:
                self.waiting.push(node)
            return None
        if node is None:
            # Covered, but still the first state found breaking the property.
            node = self.passed.node(s, z, parent, event, branch, sym, depth)
        if found is True:
            self.stuck.add(node)
            self.waiting.push(node)
            return None
        assert isinstance(found, tuple)
        return self.violation(node, found[0], found[1])

    def expand(self, node: int, s: State, f: Frame, z: dbm.Dbm) -> CheckResult | bool:
        """A stuck node is reported when its turn comes."""
        self.stats.queued = len(self.waiting)
        if node in self.stuck:
            # Found when the zone was generated, reported in its own round (after
            # every assert found one event earlier) so that traces stay shortest.
            return self.violation(node, "deadlock", "no event can fire and time cannot pass")
        return True

    def failure(self, node: int, f: Frame, g: dbm.Dbm, e: Edge, branch: int
                ) -> CheckResult | None:
        """A broken ``assert`` ends the run (not when only a query is checked)."""
        if self.only is not None:
            return None
        return self.violation(node, "assert", e.failure or "", (e.event, branch))

    def exhausted(self) -> CheckResult:
        """Every reachable symbolic state was explored: the properties hold."""
        # Without a complete liveness pass every clock stayed live: still exact.
        return self.finish(CheckResult(HOLDS))

    # ---- the run ------------------------------------------------------------------------
    def prepare(self) -> None:
        """The clock-bounds pre-pass (when clock reduction is on)."""
        if self.options.clock_reduction:
            # The pass over-approximates the discrete states; give it room.
            ms = self.limits.max_states
            cap = None if ms is None else max(2_000, 20 * ms)
            # The analysis may use the symmetries even when the search does not: they
            # are automorphisms of the model, and the bounds of a state are those of
            # its representative, mapped back.
            analysis = canonizer(self.model, True)
            cache = self._edge_cache if analysis is self.canon else None
            # Zones over every clock cost (clocks + 1)^2: the coarse timed pass only for
            # models with few clocks.
            timed = self.D if (self.options.prepass == "timed"
                               and self.n_clocks <= TIMED_PREPASS_CLOCKS) else None
            self.dz.set_live(clock_bounds(self.model, self.bounds, cap, self.deadline_t,
                                          analysis, cache, self.limits.max_memory_mb,
                                          timed=timed))

    def run(self) -> CheckResult:
        """Explore, restarting with Extra_M after an unconfirmed LU deadlock."""
        try:
            self.prepare()
            while True:
                try:
                    return self.search()
                except _Restart:
                    self.dz.set_mode("m")
                    self.reset_search()
        except LimitHit as lim:
            return self.finish(CheckResult(INCONCLUSIVE, limit=lim.what, limit_kind=lim.kind))
        except _Timelocked as tl:
            return self.finish(CheckResult(
                ERROR, "model error",
                "the initial state breaks a deadline: time cannot even start",
                [TraceStep(None, "initial", None, tl.state)]))
        except ModelRuntimeError as err:
            # Raised while evaluating a deadline, an invariant or a property of the
            # state being generated or expanded: a model error at that state.
            if self.current >= 0:
                trace = self.trace(self.current, self.current_edge)
            elif self.initial_state is not None:
                trace = [TraceStep(None, "initial", None, self.initial_state)]
            else:
                trace = []
            return self.finish(CheckResult(ERROR, "model error", err.message, trace))

    def finish(self, res: CheckResult) -> CheckResult:
        """Fill in the statistics (and the graph, when recorded)."""
        passed = self.passed
        if self.options.record_graph:
            names = ["0", *self.model.clock_names]
            nodes = []
            for s, z in zip(passed.state, passed.zone, strict=True):
                clocks = self.dz.clockset(self.live.mask(s))[0]
                n = len(clocks) + 1
                nodes.append((s, dbm.to_str(z, n, [names[0], *(names[c + 1] for c in clocks)])))
            path = passed.path(len(passed.state) - 1) if res.trace else []
            res.graph = StateGraph(nodes, list(self.graph_edges), path)
        self.stats.seconds = time.monotonic() - self.start
        self.stats.peak_memory_mb = peak_rss_mb()
        self.stats.extrapolation = self.mode
        res.stats = self.stats
        res.scale = self.scale
        res.fired = frozenset(self.fired)
        if res.verdict == HOLDS and self.only is None:
            res.reached = tuple(self.passed.by_state)
        res.queries = self.query_results(res.verdict == HOLDS)
        return res

    def query_results(self, complete: bool) -> list[QueryResult]:
        """Every query's outcome; ``complete``: exploration finished (or, with a single
        query, found its witness), so a query not found is unreachable."""
        out: list[QueryResult] = []
        for q, name in enumerate(self.query_names):
            if self.only is not None and q != self.only:
                continue
            node = self.witness.get(q)
            if node is not None:
                out.append(QueryResult(name, REACHABLE, self.trace(node)))
            else:
                out.append(QueryResult(name, UNREACHABLE if complete else INCONCLUSIVE))
        return out

    def violation(self, node: int, prop: str, message: str,
                  extra: tuple[int, int] | None = None) -> CheckResult:
        """The result for a property broken at ``node`` (then the edge ``extra``)."""
        trace = self.trace(node, extra)
        if prop == "deadlock":
            self.confirm_deadlock(trace)
        # The message was computed on a representative; say it of the concrete run.
        final = trace[-1]
        kind = {"assert": PropertyKind.ASSERT, "deadlock": PropertyKind.DEADLOCK}.get(
            prop, PropertyKind.OTHER)
        if prop == "assert" and final.edge is not None and final.edge.failure is not None:
            prop, message = "assert", final.edge.failure
        elif prop != "deadlock":
            viol = self.model.violations(final.state)
            if viol:
                prop, message, kind = viol[0].property, viol[0].message, viol[0].kind
            else:
                zone = replay_zone(self.model, self.bounds, trace)
                full = self.dz.full_frame(final.state)
                for h in self.model.hazards(final.state):
                    if zone is not None and self.dz.meets(full, zone, h.atoms):
                        prop, message, kind = h.property, h.message, h.kind
                        break
        return self.finish(CheckResult(VIOLATED, prop, message, trace,
                                       ref=PropertyRef.of_label(kind, prop)))

    # ---- traces -------------------------------------------------------------------------------
    def trace(self, node: int, extra: tuple[int, int] | None = None) -> list[TraceStep]:
        """The concrete trace to ``node`` (undoing symmetry), then the edge ``extra``
        (event and branch of the representative) if given."""
        p = self.passed
        path = [PathStep(p.state[k], p.event[k], p.branch[k], p.sym[k]) for k in p.path(node)]
        steps = concrete(self.model, path, extra)
        return renamed(self.model, steps) if self.canon is not None else steps


def explore(model: TimedModel, limits: Limits | None = None,
            options: Options | None = None) -> CheckResult:
    """Explore ``model`` and check every property; see :class:`CheckResult`."""
    return _Explorer(model, limits or Limits(), options or Options()).run()

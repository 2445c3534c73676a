"""The zone explorer: reachability over the zone graph of a timed model.

A symbolic state is a discrete state and a zone: a canonical DBM over the
clocks that are *live* in that discrete state (:mod:`checker.semantics.zones`).
The successors and their labels are the zone graph's
(:class:`checker.semantics.ts.ZoneTS`), the loop is the one every engine runs
(:func:`checker.algorithms.covreach.covreach`); this module's :class:`FirstViolation`
goal stops at the first violation.
Exploration proceeds as in UPPAAL and TChecker:

1. **Clock bounds** (:mod:`checker.semantics.clockbounds`): a pre-pass (timed, with
   one hull zone per discrete state, for models with few clocks; untimed
   otherwise) gives, per discrete state, its live clocks and local LU bounds; or, with
   :attr:`Prepass.STATIC` for a network of processes, no pre-pass: the bounds per
   process location (:mod:`checker.semantics.staticbounds`), asked as states are met.
2. **Zones.**  Successor: intersect with the edge's guard, reset, move to the
   target's live clocks, intersect with the target's deadlines, let time pass
   (bounded by the deadlines), then extrapolate by the target's local LU
   bounds (Extra+_LU) so that cyclic models terminate.
3. **Covering.**  A new zone included in a stored zone of the same discrete
   state is dropped; stored zones the new one includes are retired, and are not
   expanded if they are still waiting.
4. **Symmetry** (:mod:`checker.semantics.canon`): each symbolic state is
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
every deadlock it finds is real.  The restart is a new transition system (built
with :attr:`Extrapolation.M`), a new store and a new goal.

Limits (states, seconds, memory) end a run as *inconclusive*, never *holds*.
"""

from __future__ import annotations

import enum
import itertools
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from checker.algorithms.covreach import Budget, Passed, Stats, Waiting, covreach, waiting_list
from checker.domains import backend, dbm
from checker.errors import KvraceError
from checker.limits import (
    MAX_ZONE_MB,
    LimitHit,
    LimitKind,
    Limits,
    peak_rss_mb,
    young_collections_only,
)
from checker.model.interface import (
    Edge,
    ModelRuntimeError,
    State,
    TimedModel,
    scaled_bounds,
    static_clocks_of,
)
from checker.results import PropertyKind, PropertyRef, QueryStatus, Verdict
from checker.semantics.canon import Canonizer, canonizer
from checker.semantics.clockbounds import Liveness, clock_bounds, live_clocks
from checker.semantics.staticbounds import StaticLiveness
from checker.semantics.traces import PathStep, TraceStep, concrete, renamed, replay_zone
from checker.semantics.ts import (
    ALL_LABELS,
    DEADLOCK_MESSAGE,
    Extrapolation,
    LabelKind,
    PackedZoneTS,
    Status,
    Succ,
    ZoneTS,
    deadlocked,
    property_of,
)

HOLDS, VIOLATED, INCONCLUSIVE, ERROR = (
    Verdict.HOLDS, Verdict.VIOLATED, Verdict.INCONCLUSIVE, Verdict.ERROR)
REACHABLE, UNREACHABLE = QueryStatus.REACHABLE, QueryStatus.UNREACHABLE
"""The outcomes of a ``reachable`` query (besides :data:`INCONCLUSIVE`)."""
TIMED_PREPASS_CLOCKS = 64
"""Models with at most this many clocks get the timed clock-bounds pass (a hull zone
over every clock per state); larger ones the untimed one."""

_PREPASSES: weakref.WeakKeyDictionary[TimedModel, dict[object, Liveness]] = (
    weakref.WeakKeyDictionary())
"""The clock-bounds pre-pass of each model, by its bounds, state cap and kind (timed or
untimed): a function of those alone, so a model checked again (other options, the
Python API, a notebook) does not pay for it twice.  A pass stopped by the time limit
is not kept."""

__all__ = [
    "ERROR",
    "HOLDS",
    "INCONCLUSIVE",
    "MAX_ZONE_MB",
    "REACHABLE",
    "UNREACHABLE",
    "VIOLATED",
    "CheckResult",
    "DeadlockUnconfirmed",
    "FirstViolation",
    "Limits",
    "Options",
    "Prepass",
    "QueryResult",
    "StateGraph",
    "Stats",
    "TraceStep",
    "ZoneCheck",
    "explore",
    "live_clocks",
    "replay_zone",
]


def _states_text(n: int) -> str:
    return f"{n:,} discrete state" + ("" if n == 1 else "s")


class PhaseHook(Protocol):
    """Told the name of the phase a run enters, and how to read its counters as text."""

    def __call__(self, name: str, fields: Callable[[], str] | None = None) -> None: ...


class Prepass(str, enum.Enum):
    """Where the clock bounds (live clocks, local LU bounds) of a discrete state come
    from (a member compares equal to its name as written)."""

    TIMED = "timed"
    """The pre-pass with one hull zone per discrete state (up to
    :data:`TIMED_PREPASS_CLOCKS` clocks; the untimed one beyond)."""
    UNTIMED = "untimed"
    """The pre-pass ignoring clock constraints."""
    STATIC = "static"
    """Per process location, from the syntax, computed on the fly
    (:mod:`checker.semantics.staticbounds`): no pre-pass; models that are not networks
    of processes get the timed pre-pass."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Options:
    """How to explore."""

    search: str = "bfs"  # "bfs" | "dfs"
    symmetry: bool = True
    clock_reduction: bool = True
    deadlock: bool = True
    progress: Callable[[Stats], None] | None = None
    progress_interval: float = 1.0
    on_phase: PhaseHook | None = None
    """Told when a run enters a phase the statistics do not show (the clock pre-pass,
    with its count of discrete states; the distributed explorer's workers loading the
    model and running it)."""
    record_graph: bool = False
    """Keep every explored edge (for ``kvrace graph``): :attr:`CheckResult.graph`."""
    dbm: str = "auto"
    """``auto``: the compiled DBM core when it is built and the constants fit it;
    ``c`` or ``python`` to choose (``python`` is the reference)."""
    prepass: Prepass = Prepass.TIMED
    """Where the clock bounds come from (see :class:`Prepass`)."""
    extrapolation: str = "lu"
    """``lu``: local Extra+_LU (deadlocks confirmed, see the module docstring);
    ``m``: classic Extra_M over the global maximal constants."""
    query: str | None = None
    """Check only this ``reachable`` query: no other property is checked, and the run
    stops at its first witness."""
    local_time: bool = False
    """Explore local-time zones (:mod:`checker.engines.localtime`): for networks of
    processes; invariants, asserts and queries without clocks only."""


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
    (:class:`checker.engines.partition.DistStats`)."""
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

    Its nodes are the symbolic states ``check`` counts (the zones stored when the
    search ended, :attr:`Stats.zones`), plus the states of the counterexample that a
    larger stored zone covers.  A zone retired by a larger one of the same discrete
    state is not a node: an edge to it, like an edge to a covered successor, points
    at the stored zone that includes it, and its own successors are those of that
    zone.
    """

    nodes: list[tuple[State, str]] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    violation: list[int] = field(default_factory=list)
    """Node ids of check's counterexample path, from the initial state to the
    violating one (for a failed assert: to the state the failing event leaves)."""
    violation_events: list[str] = field(default_factory=list)
    """The events between consecutive nodes of :attr:`violation`."""
    failing: tuple[str, str] | None = None
    """With a failed assert: the failing event (from the last node of
    :attr:`violation`) and the assertion's message."""
    covered: int = 0
    """Nodes of :attr:`violation` that a larger stored zone covers (not counted in
    :attr:`Stats.zones`)."""


class DeadlockUnconfirmed(KvraceError):
    """A deadlock of the LU abstraction that the exact replay did not confirm: the run
    starts again under Extra_M."""


class FirstViolation:
    """The zone explorer's goal: stop at the first violation (with its trace), remember
    the first witness of each query, and report a zone holding a deadlocked valuation
    when its turn to be expanded comes (after every ``assert`` found one event
    earlier), so that breadth-first traces stay shortest."""

    def __init__(self, check: ZoneCheck, store: Passed[dbm.Packed], waiting: Waiting
                 ) -> None:
        self.check = check
        self.store = store
        self.waiting = waiting
        self.only = check.only
        self.record = check.options.record_graph
        self.event_names = check.model.event_names
        self.fired: set[int] = set()
        """The event instances that fired."""
        self.stuck: set[int] = set()
        """Nodes whose zone, before extrapolation, holds a deadlocked valuation."""
        self.witness: dict[int, int] = {}
        """Query (position in the model's ``query_names``) to the first node satisfying it."""
        self.graph_edges: list[tuple[int, int, str]] = []
        """With :attr:`Options.record_graph`: every explored edge (source, target, event)."""
        self.current = -1
        """The node being expanded (for errors raised while expanding it)."""

    def reached(self, succ: Succ[dbm.Packed], node: int | None, parent: int, depth: int
                ) -> CheckResult | None:
        """Stop at a broken property; remember a stuck zone and the witnesses of
        queries; queue the node."""
        edge = succ.edge
        if succ.status is not Status.OK:
            if succ.status is Status.TIMELOCK:
                return self.check.timelocked(succ.state)
            assert edge is not None
            if self.only is not None:
                return None  # only the query is checked
            return self.check.violation(parent, "assert", edge.failure or "",
                                        (edge.event, succ.branch))
        if edge is not None:
            self.fired.add(edge.event)
            if self.record:
                self.graph_edges.append((parent, node if node is not None else
                                         self.store.subsumer, self.event_names[edge.event]))
        labels = succ.labels
        if not labels:
            if node is not None:
                self.waiting.push(node)
            return None
        only = self.only
        witness = self.witness
        hits = [lab.index for lab in labels if lab.kind is LabelKind.QUERY
                and lab.index not in witness and (only is None or lab.index == only)]
        bad = property_of(labels)
        found = bad is not None or deadlocked(labels)
        if hits:
            # A covered state is still the first one found satisfying the query.
            wnode = node if node is not None else self.store.node(succ, parent, depth)
            for q in hits:
                witness[q] = wnode
            if only is not None:
                return self.check.finish(CheckResult(HOLDS))
            if found and node is None:
                node = wnode
        if bad is None:
            self.queue(node, found, lambda: self.store.node(succ, parent, depth))
            return None
        if node is None:
            # Covered, but still the first state found breaking the property.
            node = self.store.node(succ, parent, depth)
        return self.check.violation(node, bad.name, bad.message)

    def queue(self, node: int | None, stuck: bool, record: Callable[[], int]) -> None:
        """Queue a stored ``node`` (None: covered).  One whose exact zone holds a
        deadlocked valuation is queued even when covered (``record`` records it), and
        reported when its turn comes."""
        if stuck:
            if node is None:
                node = record()
            self.stuck.add(node)
        if node is not None:
            self.waiting.push(node)

    def expand(self, node: int) -> CheckResult | bool:
        """A stuck node is reported when its turn comes."""
        self.current = node
        self.store.stats.queued = len(self.waiting)
        if node in self.stuck:
            return self.check.violation(node, "deadlock", DEADLOCK_MESSAGE)
        return True

    def exhausted(self) -> CheckResult:
        """Every reachable symbolic state was explored: the properties hold."""
        # Without a complete clock-bounds pass every clock stayed live: still exact.
        return self.check.finish(CheckResult(HOLDS))


class ZoneCheck:
    """One ``check`` run of the zone explorer: the clock-bounds pass, the zone graph
    (:class:`ZoneTS`), the search (:func:`covreach` with :class:`FirstViolation`), the
    restart under Extra_M, and the result with its trace.  The distributed explorer
    runs its parts in each worker."""

    def __init__(self, model: TimedModel, limits: Limits, options: Options,
                 start: float | None = None) -> None:
        self.model = model
        self.limits = limits
        self.options = options
        self.bounds, self.scale = scaled_bounds(model.bounds, model.values)
        self.n_clocks = len(model.clock_names)
        self.edge_cache: dict[State, Sequence[Edge]] = {}
        self.canon: Canonizer | None = canonizer(model, options.symmetry)
        top = max((abs(b) for b in self.bounds), default=0)
        choice = None if options.dbm == "auto" else options.dbm
        self.D = backend.select(choice if backend.fits(top) else "python")
        """The DBM operations: the compiled core when the constants are small enough."""
        self.budget = Budget(limits, start, options.progress, options.progress_interval)
        self.query_names: list[str] = list(getattr(model, "query_names", ()))
        self.only: int | None = None
        """With :attr:`Options.query`: the one query checked (properties are not)."""
        if options.query is not None:
            if options.query not in self.query_names:
                raise ValueError(f"no `reachable {options.query}` query in the model")
            self.only = self.query_names.index(options.query)
        # Clock bounds are computed by prepare(), inside run(), where model errors
        # are reported as such; until then every clock is live with every constant.
        self.live = Liveness(self.n_clocks, self.canon, max(self.bounds, default=0))
        self.violating: tuple[int, tuple[int, int] | None] | None = None
        """Where :meth:`violation` found the property broken: the node, and the
        failing edge (event, branch) of an assert."""
        self.restart(Extrapolation(options.extrapolation))

    def labels(self) -> frozenset[LabelKind]:
        """The label kinds the options ask for."""
        if self.only is not None:
            return frozenset({LabelKind.QUERY})
        if not self.options.deadlock:
            return ALL_LABELS - {LabelKind.DEADLOCK}
        return ALL_LABELS

    def restart(self, extrapolation: Extrapolation, waiting: Waiting | None = None) -> None:
        """A fresh search over a new zone graph abstracted by ``extrapolation`` (with
        ``waiting`` as its waiting list, if given)."""
        self.ts = PackedZoneTS(ZoneTS(
            self.model, self.bounds, self.live, extrapolation=extrapolation,
            canonical=self.canon, labels=self.labels(), ops=self.D,
            max_memory_mb=self.limits.max_memory_mb, edge_cache=self.edge_cache))
        # The state graph points an edge to a retired zone at a stored one including it.
        released = None if self.options.record_graph else b""
        self.store: Passed[dbm.Packed] = Passed(self.ts.includes, keep_shallower=True,
                                                released=released)
        self.waiting = waiting_list(self.options.search) if waiting is None else waiting
        self.goal = FirstViolation(self, self.store, self.waiting)

    def prepare(self) -> None:
        """The clock-bounds pre-pass (when clock reduction is on)."""
        if not self.options.clock_reduction:
            return
        if Prepass(self.options.prepass) is Prepass.STATIC and self.static_bounds():
            return
        # The pass over-approximates the discrete states; give it room.
        ms = self.limits.max_states
        cap = None if ms is None else max(2_000, 20 * ms)
        # The analysis may use the symmetries even when the search does not: they
        # are automorphisms of the model, and the bounds of a state are those of
        # its representative, mapped back.
        analysis = canonizer(self.model, True)
        cache = self.edge_cache if analysis is self.canon else None
        # Zones over every clock cost (clocks + 1)^2: the coarse timed pass only for
        # models with few clocks.
        timed = self.D if (Prepass(self.options.prepass) is not Prepass.UNTIMED
                           and self.n_clocks <= TIMED_PREPASS_CLOCKS) else None
        # Both DBM implementations compute the same pass: either one's result serves.
        key = (tuple(self.bounds), cap, timed is not None)
        memo = _PREPASSES.setdefault(self.model, {})
        live = memo.get(key)
        if live is None:
            budget = self.budget.derived(cap)
            hook = self.options.on_phase
            if hook is not None:
                hook("clock pre-pass", lambda: _states_text(budget.counted + 1))
            live = clock_bounds(self.model, self.bounds, budget, analysis, cache, timed=timed)
            if hook is not None:
                hook("exploring")
            if live.complete or not budget.over_time():
                memo[key] = live  # complete, or stopped by its states cap (part of the key)
        live.for_search(analysis is self.canon)
        self.live = live
        self.restart(self.ts.zones.extrapolation)

    def static_bounds(self) -> bool:
        """Clock bounds per process location, answered on the fly; False when the model
        is not a network of processes (then the pre-pass runs)."""
        info = static_clocks_of(self.model)
        if info is None:
            return False
        self.live = StaticLiveness(info, self.model.bounds, self.bounds, self.model.values,
                                   self.scale, self.n_clocks, self.canon)
        self.restart(self.ts.zones.extrapolation)
        return True

    def search(self) -> CheckResult:
        """Explore, restarting with Extra_M after an unconfirmed LU deadlock."""
        while True:
            try:
                return covreach(self.ts, self.store, self.waiting, self.goal, self.budget)
            except DeadlockUnconfirmed:
                self.restart(Extrapolation.M)

    def run(self) -> CheckResult:
        """The pre-pass and the search; limits and model errors end it as results."""
        try:
            with young_collections_only():
                self.prepare()
                return self.search()
        except LimitHit as lim:
            # The model's own calls know the deadline, not the timeout it came from.
            what = self.budget.time_limit().what if lim.kind is LimitKind.TIME else lim.what
            return self.finish(CheckResult(INCONCLUSIVE, limit=what, limit_kind=lim.kind))
        except ModelRuntimeError as err:
            # Raised while evaluating a deadline, an invariant or a property of the
            # state being generated or expanded: a model error at that state.
            if self.goal.current >= 0:
                trace = self.trace(self.goal.current, self.ts.zones.at)
            elif self.ts.zones.initial_state is not None:
                trace = [TraceStep(None, "initial", None, self.ts.zones.initial_state)]
            else:
                trace = []
            return self.error(err.message, trace)

    # ---- results ------------------------------------------------------------------------
    def error(self, message: str, trace: list[TraceStep]) -> CheckResult:
        """A model error (at the end of ``trace``)."""
        return self.finish(CheckResult(ERROR, "model error", message, trace))

    def timelocked(self, s: State) -> CheckResult:
        """The initial state ``s`` breaks a deadline."""
        return self.error("the initial state breaks a deadline: time cannot even start",
                          [TraceStep(None, "initial", None, s)])

    def confirm_deadlock(self, trace: list[TraceStep]) -> None:
        """Replay ``trace`` exactly; raise :class:`DeadlockUnconfirmed` unless its end
        deadlocks."""
        if self.ts.zones.extrapolation is not Extrapolation.LU:
            return  # Extra_M adds only region-equivalent valuations: the deadlock is real
        dz = self.ts.zones.dz
        zone = replay_zone(self.model, self.bounds, trace)
        final = trace[-1].state
        if zone is None or not dz.stuck(dz.full_frame(final), zone, self.model.edges(final)):
            raise DeadlockUnconfirmed

    def finish(self, res: CheckResult) -> CheckResult:
        """Fill in the statistics (and the graph, when recorded)."""
        store = self.store
        if self.options.record_graph:
            res.graph = self.state_graph(res)
        stats = store.stats
        stats.seconds = time.monotonic() - self.budget.start
        stats.peak_memory_mb = peak_rss_mb()
        stats.extrapolation = self.ts.zones.extrapolation.value
        res.stats = stats
        res.scale = self.scale
        res.fired = frozenset(self.goal.fired)
        if res.verdict == HOLDS and self.only is None:
            res.reached = tuple(store.by_state)
        res.queries = self.query_results(res.verdict == HOLDS)
        return res

    def state_graph(self, res: CheckResult) -> StateGraph:
        """The explored graph as ``check`` counts it (see :class:`StateGraph`), with
        the counterexample of ``res`` when it has one."""
        store = self.store
        names = ["0", *self.model.clock_names]
        path: list[int] = []
        extra: tuple[int, int] | None = None
        if res.verdict == VIOLATED and self.violating is not None:
            at, extra = self.violating
            path = store.path(at)
        keep = sorted({k for ks in store.by_state.values() for k in ks} | set(path))
        ids = {k: i for i, k in enumerate(keep)}

        def stored(k: int) -> int | None:
            """The node standing for ``k``: itself, or the stored zone including it."""
            if k in ids:
                return ids[k]
            s = store.state[k]
            for j in store.by_state.get(s, ()):
                if store.includes(s, store.zone[j], store.zone[k]):
                    return ids[j]
            return None

        nodes = []
        for k in keep:
            s = store.state[k]
            clocks = self.ts.zones.dz.clockset(self.ts.zones.live.mask(s))[0]
            n = len(clocks) + 1
            z = self.ts.zones.dz.D.unpack(store.zone[k], n)
            nodes.append((s, dbm.to_str(z, n, [names[0], *(names[c + 1] for c in clocks)])))
        edges: list[tuple[int, int, str]] = []
        seen: set[tuple[int, int, str]] = set()
        event_names = self.model.event_names
        steps = [(ids[a], ids[b], event_names[store.event[b]])
                 for a, b in itertools.pairwise(path)]
        for src, dst, label in self.goal.graph_edges:
            if src not in ids:
                continue  # a retired zone: the zone including it has these successors
            d = stored(dst)
            if d is not None:
                edges.append((ids[src], d, label))
        for e in steps:  # the counterexample's own edges, also to a covered state
            edges.append(e)
        unique = []
        for e in edges:
            if e not in seen:
                seen.add(e)
                unique.append(e)
        failing = None
        if extra is not None:
            failing = (event_names[extra[0]], res.message or "")
        return StateGraph(nodes, unique, [ids[k] for k in path], [e[2] for e in steps],
                          failing, sum(1 for k in path
                                       if k not in store.by_state.get(store.state[k], ())))

    def query_results(self, complete: bool) -> list[QueryResult]:
        """Every query's outcome; ``complete``: exploration finished (or, with a single
        query, found its witness), so a query not found is unreachable."""
        out: list[QueryResult] = []
        for q, name in enumerate(self.query_names):
            if self.only is not None and q != self.only:
                continue
            node = self.goal.witness.get(q)
            if node is not None:
                out.append(QueryResult(name, REACHABLE, self.trace(node)))
            else:
                out.append(QueryResult(name, UNREACHABLE if complete else INCONCLUSIVE))
        return out

    def violation(self, node: int, prop: str, message: str,
                  extra: tuple[int, int] | None = None) -> CheckResult:
        """The result for a property broken at ``node`` (then the edge ``extra``)."""
        self.violating = (node, extra)
        trace = self.trace(node, extra)
        kind = {"assert": PropertyKind.ASSERT, "deadlock": PropertyKind.DEADLOCK}.get(
            prop, PropertyKind.OTHER)
        if prop == "deadlock":
            self.confirm_deadlock(trace)
        # The message was computed on a representative; say it of the concrete run.
        final = trace[-1]
        if prop == "assert" and final.edge is not None and final.edge.failure is not None:
            prop, message = "assert", final.edge.failure
        elif prop != "deadlock":
            viol = self.model.violations(final.state)
            if viol:
                prop, message, kind = viol[0].property, viol[0].message, viol[0].kind
            else:
                zone = replay_zone(self.model, self.bounds, trace)
                dz = self.ts.zones.dz
                full = dz.full_frame(final.state)
                for h in self.model.hazards(final.state):
                    if zone is not None and dz.meets(full, zone, h.atoms):
                        prop, message, kind = h.property, h.message, h.kind
                        break
        return self.finish(CheckResult(VIOLATED, prop, message, trace,
                                       ref=PropertyRef.of_label(kind, prop)))

    def trace(self, node: int, extra: tuple[int, int] | None = None) -> list[TraceStep]:
        """The concrete trace to ``node`` (undoing symmetry), then the edge ``extra``
        (event and branch of the representative) if given."""
        p = self.store
        path = [PathStep(p.state[k], p.event[k], p.branch[k], p.sym[k]) for k in p.path(node)]
        steps = concrete(self.model, path, extra)
        return renamed(self.model, steps) if self.canon is not None else steps


def explore(model: TimedModel, limits: Limits | None = None,
            options: Options | None = None) -> CheckResult:
    """Explore ``model`` and check every property; see :class:`CheckResult`."""
    options = options or Options()
    if options.local_time:
        from checker.engines.localtime import LocalTimeCheck

        return LocalTimeCheck(model, limits or Limits(), options).run()
    return ZoneCheck(model, limits or Limits(), options).run()

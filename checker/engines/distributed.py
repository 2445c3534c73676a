"""The zone explorer in several processes or on a cluster, with Ray.

``kvrace check SPEC --workers N`` (a local Ray instance with N CPUs) and
``--ray ADDRESS`` (an existing Ray cluster; ``auto`` finds the local one) run the
search of :mod:`checker.engines.search` in N Ray actors.  Ray is an optional
dependency (``pip install 'kvrace[ray]'``); it is imported here only, and lazily.

**Partition.**  A symbolic state belongs to the worker ``hash(state) % N`` of its
canonical discrete state (a tuple of ints: the same hash in every process), so all
the zones of one discrete state live on one worker and covering stays local.

**Rounds.**  The search is breadth-first and level-synchronous.  In round ``d``
every worker expands its frontier (its stored nodes of depth ``d``): it computes
each successor, checks it on the exact zone (invariants, hazards, deadlock),
extrapolates and canonicalises it, and puts it in the batch of its owner.  The
driver then hands every worker the batches addressed to it (Ray moves them between
workers directly), and the owner stores them with inclusion covering.  A round
ends when every worker answered: the run ends exactly when no frontier is left.

**The single-process order, exactly.**  Each node carries its *rank*: its place in
the single-process breadth-first order (the waiting list is first in, first out, so
a node's place is that of its parent, then the index of the edge that made it).  An
owner stores the successors it receives in that order, so every discrete state sees
the same sequence of zones, in the same order, as in the single-process run: the
stored zones, the covering, the counts and the discrete states explored are the same.
Among the violations found in a round, the one with the smallest (rank, edge) is the
one the single-process search finds first: the verdict, the property and the trace
(rebuilt by asking the workers for the parent pointers, ``(worker, node)``) are
identical.  The driver turns each round's (parent rank, edge) keys into dense ranks.

**Queries.**  The worker that generates a successor checks the ``reachable`` queries on
its labels (its exact zone, whether its owner stores it or finds it covered), as the
single-process goal does, and reports the first key at which it meets each query.  A
query's witness is the smallest key of the first round that meets it, among the keys up
to the round's first candidate violation (where the single-process run stops): the
same witness, and the same status, as in one process.

Limits: time and memory are checked by every worker on its own process (``--max-memory``
is per worker) and the states limit on the sum over the workers after each round; all
end the whole run as inconclusive.  A worker that dies ends the run as inconclusive
(``worker N died: ...``), never as holds.
"""

from __future__ import annotations

import contextlib
import heapq
import time
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import replace

from checker.algorithms.covreach import Stats
from checker.engines.localpool import Children
from checker.engines.partition import (
    Candidate,
    DistStats,
    Found,
    Hit,
    ModelBuilder,
    Partition,
    Summary,
)
from checker.engines.raysession import (
    ActorHandle,
    Actors,
    Backend,
    Cluster,
    RayMissing,
    WorkerDied,
    connect,
    init_local,
    package_root,
)
from checker.engines.search import (
    ERROR,
    HOLDS,
    INCONCLUSIVE,
    CheckResult,
    DeadlockUnconfirmed,
    Options,
    ZoneCheck,
)
from checker.limits import LimitHit, Limits
from checker.model.interface import State, Symmetry, TimedModel
from checker.semantics.traces import TraceStep
from checker.semantics.ts import (
    DEADLOCK_MESSAGE,
    Extrapolation,
)

__all__ = ["Backend", "Cluster", "DistStats", "ModelBuilder", "RayMissing", "connect",
           "explore_distributed", "init_local", "package_root"]



# ---- the driver -----------------------------------------------------------------------------

class _Driver:
    """The rounds: each worker expands its frontier, the batches go to their owners, the
    owners store them; the first candidate violation of a round ends the run, and the
    queries met before it get their witnesses."""

    def __init__(self, model: TimedModel, build: ModelBuilder, limits: Limits,
                 options: Options, cluster: Cluster) -> None:
        self.model = model
        self.build = build
        self.limits = limits
        self.options = options
        self.cluster = cluster
        self.start = time.monotonic()
        ends = [t for t in (limits.deadline, self.start + limits.timeout
                            if limits.timeout is not None else None) if t is not None]
        deadline = min(ends) if ends else None
        self.pool: Actors | Children = (
            Children(cluster, Partition, deadline, limits.timeout) if cluster.local
            else Actors(cluster, Partition, deadline, limits.timeout))
        self.get = self.pool.get
        self.dist = DistStats()
        self.memory = 0.0
        self.last_progress = self.start
        self.witness: dict[int, Hit] = {}
        """Query (position in ``query_names``) to its witness: the hit with the smallest
        key of the first round that met it, up to where the single-process run stops."""
        self.steps: dict[int, tuple[State, int, int, Symmetry | None, int]] = {}
        """The parent pointers fetched from the workers (node ref to :meth:`step`'s)."""

    @property
    def actors(self) -> list[ActorHandle]:
        """The workers' actor handles (Ray's, untyped)."""
        return self.pool.actors

    def run(self) -> CheckResult:
        zc = ZoneCheck(self.model, self.limits, self.options, self.start)
        dead = False
        try:
            self.dist.workers = self.pool.spawn()
            left = self.pool.left()
            shipped = replace(self.options, progress=None, on_phase=None)
            if self.options.on_phase is not None:
                self.options.on_phase("model and clock pre-pass in the workers")
            # Forked workers share the driver's model; Ray's build their own.
            build = (lambda: self.model) if self.cluster.local else self.build
            for status, what in self.pool.load(build, self.limits, left, shipped):
                if status == "limit":
                    raise LimitHit(str(what))
                if status == "error":
                    return self.finish(zc, CheckResult(ERROR, "model error", what, []))
            self.dist.startup_seconds = time.monotonic() - self.start
            mode = zc.ts.zones.extrapolation
            while True:
                try:
                    return self.search(zc, mode)
                except DeadlockUnconfirmed:
                    mode = Extrapolation.M
                    zc.restart(mode)
        except LimitHit as lim:
            return self.finish(zc, CheckResult(INCONCLUSIVE, limit=lim.what,
                                                   limit_kind=lim.kind))
        except WorkerDied as died:
            dead = True
            return self.finish(zc, CheckResult(INCONCLUSIVE, limit=died.what))
        finally:
            self.pool.shutdown(dead)

    def search(self, zc: ZoneCheck, mode: Extrapolation) -> CheckResult:
        actors = self.actors
        n = len(actors)
        self.witness = {}
        self.steps = {}
        got = self.get([a.start.remote(mode.value) for a in actors])
        self.limit_of(w[2] for w in got)
        cand = _first(w[0] for w in got)
        ended = self.met(zc, cand, [w[3] for w in got])
        if ended is not None:
            return ended
        keys = [w[1] for w in got]
        stored = 0
        max_states = self.limits.max_states
        while True:
            ranks = _ranks(keys)
            self.dist.control_bytes += sum(len(k) + len(r) for k, r in zip(keys, ranks,
                                                                          strict=True))
            if not any(ranks):
                return self.holds(zc)
            self.dist.rounds += 1
            outs = [a.expand.options(num_returns=n + 1).remote(r)
                    for a, r in zip(actors, ranks, strict=True)]
            summaries = self.get([o[n] for o in outs])
            self.memory = max([self.memory, *(s.memory for s in summaries)])
            self.limit_of(s.limit for s in summaries)
            cand = _first(s.candidate for s in summaries)
            ended = self.met(zc, cand, [s.hits for s in summaries])
            if ended is not None:
                return ended
            for s in summaries:
                self.dist.bytes_sent += sum(s.sizes)
                self.dist.successors_sent += sum(s.counts)
                self.dist.batches += sum(1 for c in s.counts if c)
            budget = None if max_states is None else max_states - stored
            got2 = self.get([a.receive.remote(budget, *(outs[i][j] for i in range(n)))
                             for j, a in enumerate(actors)])
            stored = sum(w[1] for w in got2)
            self.report([w[3] for w in got2])
            # A worker's own limit (time, memory) met while storing; "": its share of the
            # states left.
            self.limit_of(w[2] or None for w in got2)
            if any(w[2] is not None for w in got2) or (
                    max_states is not None and stored >= max_states):
                raise LimitHit(f"state limit ({max_states}) reached")
            keys = [w[0] for w in got2]

    def met(self, zc: ZoneCheck, cand: Candidate | None, hits: Iterable[Sequence[Hit]]
            ) -> CheckResult | None:
        """The end of a round's expansion: keep the first witness of each query met for
        the first time (only those the single-process search meets before the round's
        first candidate ``cand``, where it stops); the result, when the run ends here."""
        best: dict[int, Hit] = {}
        for worker_hits in hits:
            for h in worker_hits:
                if h.query in self.witness or (cand is not None and h.key > cand.key):
                    continue
                if h.query not in best or h.key < best[h.query].key:
                    best[h.query] = h
        self.witness.update(best)
        if zc.only is not None and zc.only in self.witness:
            # The one query checked has its witness: the single-process run stops there.
            self.collect(zc, False)
            return self.finish(zc, CheckResult(HOLDS))
        if cand is not None:
            return self.violation(zc, cand)
        return None

    def report(self, stats: Sequence[Stats]) -> None:
        """The progress display, with the sum of the workers' statistics."""
        progress = self.options.progress
        now = time.monotonic()
        if progress is None or now - self.last_progress < self.options.progress_interval:
            return
        self.last_progress = now
        st = Stats.total(stats)
        st.seconds = now - self.start
        progress(st)

    def limit_of(self, whats: Iterable[str | None]) -> None:
        for what in whats:
            if what is not None:
                raise LimitHit(what)

    # ---- results --------------------------------------------------------------------------
    def collect(self, zc: ZoneCheck, with_states: bool) -> list[Summary]:
        """Sum the workers' statistics into ``zc``'s."""
        sums = self.get([a.summary.remote(with_states) for a in self.actors])
        st = Stats.total([s.stats for s in sums])
        fired: set[int] = set()
        for s in sums:
            fired.update(s.fired)
            self.memory = max(self.memory, s.memory)
        zc.store.stats = st
        zc.goal.fired = fired
        self.dist.explored = st.explored
        self.dist.zones_per_worker = tuple(s.stats.zones for s in sums)
        self.dist.cpu_per_worker = tuple(round(s.cpu, 3) for s in sums)
        return sums

    def finish(self, zc: ZoneCheck, res: CheckResult) -> CheckResult:
        """``res`` with the workers' statistics and the witnesses of the queries."""
        if self.actors and not zc.store.stats.explored:
            with contextlib.suppress(WorkerDied, LimitHit):
                self.collect(zc, False)
        with contextlib.suppress(WorkerDied, LimitHit):
            self.witnesses(zc)
        return self.done(zc.finish(res))

    def witnesses(self, zc: ZoneCheck) -> None:
        """Copy each query's witness, with the path to it, into ``zc``'s store and goal,
        where :meth:`ZoneCheck.query_results` finds them."""
        found = zc.goal.witness
        for q, h in sorted(self.witness.items()):
            if q not in found:
                found[q] = self.record(zc, h.ref, h.state, h.event, h.branch, h.sym)

    def record(self, zc: ZoneCheck, ref: int, s: State, event: int, branch: int,
               sym: Symmetry | None) -> int:
        """Record in ``zc``'s store a successor of the node ``ref`` (worker and node; -1:
        an initial state), with the path to it; the record's id."""
        parent = self.path(zc, ref)
        depth = 0 if parent == -1 else zc.store.depth[parent] + 1
        return zc.store.record(s, b"", parent, event, branch, sym, depth)

    def done(self, res: CheckResult) -> CheckResult:
        """A finished ``res`` with what the distribution cost."""
        res.stats.peak_memory_mb = max(res.stats.peak_memory_mb, self.memory)
        res.distributed = self.dist
        return res

    def holds(self, zc: ZoneCheck) -> CheckResult:
        sums = self.collect(zc, True)
        res = self.finish(zc, CheckResult(HOLDS))
        if zc.only is None:
            # The discrete states in the order the single-process run first stores them.
            firsts = heapq.merge(*(s.first for s in sums), key=lambda x: x[1])
            res.reached = tuple(s for s, _ in firsts)
        return res

    def path(self, zc: ZoneCheck, ref: int) -> int:
        """Copy the path to the node ``ref`` (worker and node) into ``zc``'s store (from
        the root; the driver's store holds only such copies); the copy's id (-1 for the
        root's parent)."""
        n = len(self.actors)
        chain = []
        while ref != -1:
            step = self.steps.get(ref)
            if step is None:
                node, w = divmod(ref, n)
                step = self.steps[ref] = self.get([self.actors[w].step.remote(node)])[0]
            s, event, branch, sym, ref = step
            chain.append((s, event, branch, sym))
        last = -1
        for depth, (s, event, branch, sym) in enumerate(reversed(chain)):
            last = zc.store.record(s, b"", last, event, branch, sym, depth)
        return last

    def violation(self, zc: ZoneCheck, c: Candidate) -> CheckResult:
        self.collect(zc, False)
        self.witnesses(zc)
        if c.kind is Found.TIMELOCK:
            assert c.state is not None
            res = zc.timelocked(c.state)
        elif c.kind is Found.ERROR:
            if c.ref == -1:
                assert c.state is not None
                trace = [TraceStep(None, "initial", None, c.state)]
            else:
                trace = zc.trace(self.path(zc, c.ref), c.edge)
            res = zc.error(c.message, trace)
        elif c.kind is Found.DEADLOCK:
            res = zc.violation(self.path(zc, c.ref), "deadlock", DEADLOCK_MESSAGE)
        elif c.kind is Found.ASSERT:
            res = zc.violation(self.path(zc, c.ref), "assert", c.message, c.edge)
        else:
            assert c.kind is Found.STATE and c.state is not None
            node = self.record(zc, c.ref, c.state, c.event, c.branch, c.sym)
            res = zc.violation(node, c.name, c.message)
        return self.done(res)


def _first(cands: Iterable[Candidate | None]) -> Candidate | None:
    """The candidate the single-process search meets first."""
    best: Candidate | None = None
    for c in cands:
        if c is not None and (best is None or c.key < best.key):
            best = c
    return best


def _ranks(keys: Sequence[bytes]) -> list[bytes]:
    """Dense ranks from every worker's sorted (parent rank, edge) keys: the nodes'
    places in the single-process breadth-first order."""
    lists = []
    for w, data in enumerate(keys):
        a = array("q")
        a.frombytes(data)
        lists.append([(a[i], a[i + 1], w) for i in range(0, len(a), 2)])
    out = [array("q") for _ in keys]
    for rank, (_, _, w) in enumerate(heapq.merge(*lists)):
        out[w].append(rank)
    return [a.tobytes() for a in out]


def explore_distributed(model: TimedModel, build: ModelBuilder, cluster: Cluster,
                        limits: Limits | None = None, options: Options | None = None
                        ) -> CheckResult:
    """Explore like :func:`checker.engines.search.explore`, breadth-first, on Ray:
    the same verdict, property, trace and discrete states (see the module docstring).
    ``model`` is the driver's copy (for traces); ``build`` makes each worker's.  Raises
    :class:`RayMissing` when Ray is not installed."""
    opts = options or Options()
    if opts.search != "bfs":
        raise ValueError("distributed exploration is breadth-first only")
    return _Driver(model, build, limits or Limits(), opts, cluster).run()

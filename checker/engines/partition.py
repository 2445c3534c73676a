"""One partition of the distributed explorer's store (:mod:`checker.engines.distributed`):
the worker that a Ray actor runs.

It runs the zone explorer's own parts (:class:`~checker.engines.search.ZoneCheck`):
successors from its zone graph (:meth:`~checker.semantics.ts.SymbolicTS.next`), what
they break from their labels, nodes queued by its goal, limits by its budget.  What it
adds is the exchange: successors shipped to the partition that owns their discrete
state, stored there in the single-process order (their keys), and candidate
violations and ``reachable`` query witnesses (:class:`Hit`) that the driver orders,
and what the exchange cost (:class:`DistStats`).
"""

from __future__ import annotations

import enum
import os
import pickle
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from checker.algorithms.covreach import Stats
from checker.domains.dbm import Packed
from checker.engines.raysession import reset_peak_memory
from checker.engines.search import Options, ZoneCheck
from checker.limits import LimitHit, Limits, peak_rss_mb
from checker.model.interface import ModelRuntimeError, State, Symmetry, TimedModel
from checker.semantics.ts import (
    Extrapolation,
    Label,
    LabelKind,
    Status,
    Succ,
    deadlocked,
    property_of,
)

ModelBuilder = Callable[[], TimedModel]
"""Builds the model in a worker (a picklable callable: the generated code of a compiled
model is rebuilt in every process, never pickled)."""

# A candidate violation of a round: (rank, successor index) orders them as the
# single-process search would meet them; then what it is.
Key = tuple[int, int]


class Found(enum.Enum):
    """What a candidate is."""

    TIMELOCK = "timelock"
    ERROR = "error"
    DEADLOCK = "deadlock"
    ASSERT = "assert"
    STATE = "state"
    """A successor that breaks an invariant or meets a hazard."""
    QUERY = "query"
    """With :attr:`~checker.engines.search.Options.query`: a witness of the one query
    checked, where the single-process run stops (its :class:`Hit` is in the round's)."""


@dataclass(frozen=True)
class Candidate:
    """A violation (or model error) a partition met in a round; :attr:`key` orders the
    candidates as the single-process search meets them."""

    key: Key
    kind: Found
    ref: int = -1
    """The node it was met at, expanding it (worker and node; -1: an initial state)."""
    state: State | None = None
    """TIMELOCK, ERROR at -1: the initial state; STATE: the successor's state."""
    event: int = -1
    branch: int = 0
    sym: Symmetry | None = None
    name: str = ""
    message: str = ""
    edge: tuple[int, int] | None = None
    """ASSERT: the edge (event, branch) that breaks it; ERROR: the edge being entered."""


@dataclass(frozen=True)
class Hit:
    """A generated successor that satisfies a ``reachable`` query: the query's witness
    when its :attr:`key` is the smallest of the first round that meets the query (the
    single-process search remembers the first state it generates satisfying a query,
    stored or covered).  Found by the worker that generates the successor, on the
    labels of its exact zone, so where it is stored, or whether a larger zone covers
    it, does not matter."""

    key: Key
    query: int
    """The query's position in the model's ``query_names``."""
    ref: int
    """The parent node (worker and node; -1: the successor is an initial state)."""
    state: State
    event: int = -1
    branch: int = 0
    sym: Symmetry | None = None


# A successor in a batch: state, packed zone, parent ref, event, branch, symmetry, parent rank,
# successor index, stuck (a deadlocked valuation in its exact zone).
Shipped = tuple[State, Packed, int, int, int, Symmetry | None, int, int, bool]


def owner(s: State, n: int) -> int:
    # A tuple of ints hashes the same in every process (no hash randomisation for ints).
    return hash(s) % n


@dataclass
class Round:
    """What a partition says of a round it expanded."""

    candidate: Candidate | None
    limit: str | None
    sizes: list[int]
    """Bytes of the batch for each partition."""
    counts: list[int]
    """Successors in the batch for each partition."""
    memory: float
    hits: list[Hit] = field(default_factory=list)
    """The queries this partition met for the first time, each at its first key."""


@dataclass
class Summary:
    """A partition's statistics, the events that fired, the discrete states stored
    with their first keys, its peak memory and CPU seconds."""

    stats: Stats
    fired: list[int]
    first: list[tuple[State, tuple[int, int, int]]]
    memory: float
    cpu: float


class Frontier:
    """The waiting list of a round: the nodes queued, with the key each was queued
    under."""

    def __init__(self) -> None:
        self.nodes: list[int] = []
        self.keys: list[Key] = []
        self.key: Key = (0, 0)
        """The key of the next node queued."""

    def push(self, node: int) -> None:
        self.nodes.append(node)
        self.keys.append(self.key)

    def pop(self) -> int:
        raise NotImplementedError("a round's frontier is expanded in rank order")

    def __len__(self) -> int:
        return len(self.nodes)


class Partition:
    """One partition of the store: a Ray actor (this class is wrapped by ``ray.remote``).
    It runs the zone explorer's parts (:class:`ZoneCheck`): successors from its zone
    graph, labels judged and nodes queued by its goal, limits by its budget."""

    def __init__(self, index: int, n: int) -> None:
        self.index = index
        self.n = n
        self.zc: ZoneCheck | None = None
        self.frontier = Frontier()
        self.first: list[tuple[State, tuple[int, int, int]]] = []
        """Each discrete state stored here, with (depth, parent rank, edge) of its first
        zone: the driver orders the states as the single-process run stores them."""
        self.kept: list[Shipped] = []
        """This round's successors that this worker owns (sent to nobody)."""
        self.hits: list[Hit] = []
        """This round's hits (:class:`Hit`), in key order."""
        self.reported: set[int] = set()
        """The queries this worker has reported a hit of in this run (the driver keeps
        the first round's witness: a later hit cannot replace it)."""
        self.depth = 0
        self.cpu = 0.0
        """CPU seconds spent in the search (start, expand, receive) of this run."""

    # ---- set-up ---------------------------------------------------------------------------
    def load(self, build: ModelBuilder, limits: Limits, left: float | None,
             options: Options) -> tuple[str, str | None]:
        """Build the model and run the clock-bounds pass: ``("ok", None)``, or
        ``("limit", what)`` / ``("error", message)``.  ``left``: the seconds left of the
        run (monotonic clocks differ between hosts)."""
        self.zc = None
        reset_peak_memory()
        deadline = None if left is None else time.monotonic() + left
        limits = Limits(None, limits.timeout, limits.max_memory_mb, deadline)
        options = replace(options, progress=None, on_phase=None, record_graph=False,
                          search="bfs")
        try:
            self.zc = ZoneCheck(build(), limits, options)
            self.zc.prepare()
        except LimitHit as lim:
            return "limit", lim.what
        except ModelRuntimeError as err:
            return "error", err.message
        return "ok", None

    def _check(self) -> ZoneCheck:
        assert self.zc is not None, "load() first"
        return self.zc

    def start(self, mode: str) -> tuple[Candidate | None, bytes, str | None, list[Hit]]:
        """Forget everything, store the initial states this worker owns; (the first
        violation among the initial states, the frontier's keys, a limit hit, the
        queries the initial states satisfy)."""
        zc = self._check()
        self.frontier = Frontier()
        zc.restart(Extrapolation(mode), self.frontier)
        cpu0 = time.process_time()
        self.cpu = 0.0
        self.first = []
        self.depth = 0
        self.hits = []
        self.reported = set()
        cand: Candidate | None = None
        i = -1
        try:
            for i, succ in enumerate(zc.ts.initial()):
                if succ.status is Status.TIMELOCK:
                    cand = Candidate((0, i), Found.TIMELOCK, state=succ.state)
                    break
                if owner(succ.state, self.n) != self.index:
                    continue
                cand = self._hits(succ, (0, i), -1)
                if cand is not None:
                    break
                bad = property_of(succ.labels)
                if bad is not None:
                    cand = Candidate((0, i), Found.STATE, -1, succ.state, -1, 0, succ.sym,
                                     bad.name, bad.message)
                    break
                self._store((succ.state, succ.zone, -1, -1, 0, succ.sym, 0, i,
                             deadlocked(succ.labels)), 0)
        except ModelRuntimeError as err:
            cand = Candidate((0, i + 1), Found.ERROR, state=zc.ts.zones.initial_state,
                             message=err.message)
        except LimitHit as lim:
            return None, b"", lim.what, []
        keys = self._keys()
        self.cpu += time.process_time() - cpu0
        return cand, keys, None, self.hits

    def _hits(self, succ: Succ[Packed], key: Key, ref: int) -> Candidate | None:
        """Note the queries the successor ``succ`` (of ``ref``, met at ``key``) satisfies
        that this worker has not reported yet; with a single query checked, its witness
        ends the round (the single-process run stops there)."""
        labels: Sequence[Label] = succ.labels
        if not labels:
            return None
        zc = self._check()
        only = zc.only
        e = succ.edge
        for lab in labels:
            q = lab.index
            if lab.kind is not LabelKind.QUERY or q in self.reported or (
                    only is not None and q != only):
                continue
            self.reported.add(q)
            self.hits.append(Hit(key, q, ref, succ.state, -1 if e is None else e.event,
                                 succ.branch, succ.sym))
            if only is not None:
                return Candidate(key, Found.QUERY, ref)
        return None

    def _store(self, x: Shipped, depth: int) -> None:
        zc = self._check()
        cs, cz, parent, event, branch, sym, rank, k, stuck = x
        store = zc.store
        st = store.stats
        before = st.states
        node = store.insert(cs, cz, parent, event, branch, sym, depth)
        if st.states != before:
            self.first.append((cs, (depth, rank, k)))
        if node is not None:
            zc.budget.tick(st, self.frontier)
        self.frontier.key = (rank, k)
        zc.goal.queue(node, stuck, lambda: store.record(cs, cz, parent, event, branch, sym,
                                                        depth))

    def _keys(self) -> bytes:
        # The frontier: alive nodes only (a later zone of the same round may have
        # retired one), in key order (the order they were stored in).
        alive = self._check().store.alive
        f = self.frontier
        pairs = [(k, node) for k, node in zip(f.keys, f.nodes, strict=True) if alive[node]]
        self.frontier.nodes = [node for _, node in pairs]
        self.frontier.keys = [k for k, _ in pairs]
        flat = array("q")
        for (rank, edge), _ in pairs:
            flat.append(rank)
            flat.append(edge)
        return flat.tobytes()

    # ---- a round --------------------------------------------------------------------------
    def expand(self, ranks: bytes) -> list[object]:
        """Expand the frontier (``ranks``: each node's rank, in frontier order); the
        batches for every worker (pickled; empty for this one), then a :class:`Round`."""
        cpu0 = time.process_time()
        rank_of = array("q")
        rank_of.frombytes(ranks)
        out: list[list[Shipped]] = [[] for _ in range(self.n)]
        cand: Candidate | None = None
        limit: str | None = None
        self.hits = []
        try:
            for node, rank in zip(self.frontier.nodes, rank_of, strict=True):
                cand = self._expand(node, rank, out)
                if cand is not None:
                    break
        except LimitHit as lim:
            limit = lim.what
        self.depth += 1
        me = self.index
        self.kept = out[me]
        batches: list[object] = []
        sizes = [0] * self.n
        counts = [0] * self.n
        for j, batch in enumerate(out):
            if j == me or not batch or cand is not None or limit is not None:
                batches.append(b"")
                continue
            data = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
            sizes[j] = len(data)
            counts[j] = len(batch)
            batches.append(data)
        self.cpu += time.process_time() - cpu0
        return [*batches, Round(cand, limit, sizes, counts, peak_rss_mb(), self.hits)]

    def _expand(self, node: int, rank: int, out: list[list[Shipped]]) -> Candidate | None:
        """Expand one node into the batches ``out``; a candidate violation ends the
        round."""
        zc = self._check()
        store, ts, goal = zc.store, zc.ts, zc.goal
        if not store.alive[node]:
            return None
        store.stats.explored += 1
        zc.budget.tick(store.stats, self.frontier)
        ref = node * self.n + self.index
        if node in goal.stuck:
            return Candidate((rank, -1), Found.DEADLOCK, ref)
        k = -1
        try:
            for k, succ in enumerate(ts.next(store.state[node], store.zone[node])):
                e = succ.edge
                assert e is not None
                if succ.status is Status.ASSERT:
                    if zc.only is not None:
                        continue  # only the query is checked; the state is not stored
                    return Candidate((rank, k), Found.ASSERT, ref, message=e.failure or "",
                                     edge=(e.event, succ.branch))
                goal.fired.add(e.event)
                found = self._hits(succ, (rank, k), ref)
                if found is not None:
                    return found
                bad = property_of(succ.labels)
                if bad is not None:
                    return Candidate((rank, k), Found.STATE, ref, succ.state, e.event,
                                     succ.branch, succ.sym, bad.name, bad.message)
                out[owner(succ.state, self.n)].append(
                    (succ.state, succ.zone, ref, e.event, succ.branch, succ.sym, rank, k,
                     deadlocked(succ.labels)))
        except ModelRuntimeError as err:
            return Candidate((rank, k + 1), Found.ERROR, ref, message=err.message, edge=ts.zones.at)
        finally:
            store.stats.transitions = ts.transitions
        return None

    def receive(self, budget: int | None, *batches: bytes
                ) -> tuple[bytes, int, str | None, Stats]:
        """Store this round's successors owned here, in the single-process order; (the new
        frontier's keys, the zones stored so far, a limit hit).  ``budget``: the stores
        left before the states limit of the whole run."""
        cpu0 = time.process_time()
        incoming: list[Shipped] = list(self.kept)
        self.kept = []
        for data in batches:
            if data:
                incoming.extend(pickle.loads(data))
        incoming.sort(key=lambda x: (x[6], x[7]))
        self.frontier.nodes = []
        self.frontier.keys = []
        st = self._check().store.stats
        start = st.stored
        try:
            for x in incoming:
                self._store(x, self.depth)
                if budget is not None and st.stored - start >= budget:
                    raise LimitHit("")
        except LimitHit as lim:
            return b"", st.stored, lim.what, st
        keys = self._keys()
        self.cpu += time.process_time() - cpu0
        return keys, st.stored, None, st

    # ---- results --------------------------------------------------------------------------
    def step(self, node: int) -> tuple[State, int, int, Symmetry | None, int]:
        """The parent pointer of a node, for traces: state, event, branch, symmetry,
        parent ref."""
        p = self._check().store
        return p.state[node], p.event[node], p.branch[node], p.sym[node], p.parent[node]

    def summary(self, with_states: bool) -> Summary:
        """The statistics, the events that fired and (``with_states``) the discrete
        states stored here with their first keys."""
        zc = self._check()
        return Summary(zc.store.stats, sorted(zc.goal.fired),
                       self.first if with_states else [], peak_rss_mb(), self.cpu)

    def pid(self) -> int:
        """The worker's process id (for tests that kill one)."""
        return os.getpid()


@dataclass
class DistStats:
    """What the distribution cost."""

    workers: int = 0
    rounds: int = 0
    """Breadth-first levels expanded (with a restart under Extra_M: of both runs)."""
    batches: int = 0
    """Non-empty batches of successors sent from one worker to another."""
    successors_sent: int = 0
    """Successor zones sent to another worker (the rest stayed with their maker)."""
    bytes_sent: int = 0
    """Bytes of those batches (pickled), worker to worker."""
    control_bytes: int = 0
    """Bytes of the ranks exchanged with the driver (keys up, ranks down)."""
    explored: int = 0
    startup_seconds: float = 0.0
    """Starting Ray (when started for the run) and the actors, building their models and
    running their clock-bounds passes."""
    zones_per_worker: tuple[int, ...] = ()
    """Zones stored at the end, per worker (the partition's balance)."""
    cpu_per_worker: tuple[float, ...] = ()
    """CPU seconds each worker spent searching (expanding, pickling, storing): with a
    free core per worker, the search takes about their maximum plus the rounds' latency."""

    @property
    def bytes_per_zone(self) -> float:
        """Bytes between processes (batches and ranks) per explored zone."""
        total = self.bytes_sent + self.control_bytes
        return total / self.explored if self.explored else 0.0

    def as_json(self) -> dict[str, object]:
        """For ``--json``."""
        return {
            "workers": self.workers, "rounds": self.rounds, "batches": self.batches,
            "successors_sent": self.successors_sent, "bytes_sent": self.bytes_sent,
            "control_bytes": self.control_bytes,
            "bytes_per_explored_zone": round(self.bytes_per_zone, 1),
            "startup_seconds": round(self.startup_seconds, 3),
            "zones_per_worker": list(self.zones_per_worker),
            "cpu_seconds_per_worker": list(self.cpu_per_worker),
        }

    def line(self) -> str:
        """One line for the text output."""
        kib = (self.bytes_sent + self.control_bytes) / 1024
        return (f"distributed: {self.workers} workers, {self.rounds} rounds, {self.batches}"
                f" batches, {kib:,.0f} KiB exchanged ({self.bytes_per_zone:,.0f} bytes per"
                f" explored zone), start-up {self.startup_seconds:.1f} s")

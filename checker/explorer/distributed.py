"""The zone explorer in several processes or on a cluster, with Ray.

``kvrace check SPEC --workers N`` (a local Ray instance with N CPUs) and
``--ray ADDRESS`` (an existing Ray cluster; ``auto`` finds the local one) run the
search of :mod:`checker.explorer.search` in N Ray actors.  Ray is an optional
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

Limits: time and memory are checked by every worker on its own process (``--max-memory``
is per worker) and the states limit on the sum over the workers after each round; all
end the whole run as inconclusive.  A worker that dies ends the run as inconclusive
(``worker N died: ...``), never as holds.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import pickle
import socket
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from checker.explorer.limits import LimitHit, Limits, peak_rss_mb
from checker.explorer.reach import Passed, Stats
from checker.explorer.search import (
    ERROR,
    HOLDS,
    INCONCLUSIVE,
    CheckResult,
    Options,
)
from checker.explorer.search import DeadlockUnconfirmed as _Restart
from checker.explorer.search import ZoneCheck as _Explorer


class _Timelocked(Exception):
    state: State
from checker.explorer.traces import TraceStep
from checker.model.interface import ModelRuntimeError, State, Symmetry, TimedModel

ModelBuilder = Callable[[], TimedModel]
"""Builds the model in a worker (a picklable callable: the generated code of a compiled
model is rebuilt in every process, never pickled)."""


class RayMissing(Exception):
    """Ray is not installed, cannot start, or the cluster cannot be reached."""


@dataclass(frozen=True)
class Cluster:
    """Where to run: ``workers`` actors, on a local Ray instance started for the run
    (``address`` None) or on the Ray cluster at ``address`` (``auto``: the local one;
    ``ray://host:10001``: a remote head).  ``workers`` None: one per CPU of the cluster."""

    workers: int | None = None
    address: str | None = None


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


# A candidate violation of a round: (rank, edge index) orders them as the single-process
# search would meet them; then what it is.
_Key = tuple[int, int]
_Candidate = tuple[_Key, str, Any]
# A successor in a batch: state, zone, parent ref, event, branch, symmetry, parent rank,
# edge index, stuck (a deadlocked valuation in its exact zone).
_Succ = tuple[State, Any, int, int, int, Symmetry | None, int, int, bool]


def _owner(s: State, n: int) -> int:
    # A tuple of ints hashes the same in every process (no hash randomisation for ints).
    return hash(s) % n


class _Worker:
    """One partition of the store: a Ray actor (this class is wrapped by ``ray.remote``)."""

    def __init__(self, index: int, n: int) -> None:
        self.index = index
        self.n = n
        self.ex: _Explorer | None = None
        self.frontier: list[int] = []
        self.keys: list[_Key] = []
        self.first: list[tuple[State, tuple[int, int, int]]] = []
        """Each discrete state stored here, with (depth, parent rank, edge) of its first
        zone: the driver orders the states as the single-process run stores them."""
        self.kept: list[_Succ] = []
        """This round's successors that this worker owns (sent to nobody)."""
        self.depth = 0
        self.cpu = 0.0
        """CPU seconds spent in the search (start, expand, receive) of this run."""

    # ---- set-up ---------------------------------------------------------------------------
    def load(self, build: ModelBuilder, limits: Limits, left: float | None,
             options: Options) -> tuple[str, str | None]:
        """Build the model and run the clock-bounds pass: ``("ok", None)``, or
        ``("limit", what)`` / ``("error", message)``.  ``left``: the seconds left of the
        run (monotonic clocks differ between hosts)."""
        self.ex = None
        _reset_peak_memory()
        deadline = None if left is None else time.monotonic() + left
        limits = Limits(None, limits.timeout, limits.max_memory_mb, deadline)
        options = replace(options, progress=None, record_graph=False, search="bfs")
        try:
            self.ex = _Explorer(build(), limits, options)
            self.ex.prepare()
        except LimitHit as lim:
            return "limit", lim.what
        except ModelRuntimeError as err:
            return "error", err.message
        return "ok", None

    def _explorer(self) -> _Explorer:
        assert self.ex is not None, "prepare() first"
        return self.ex

    def start(self, mode: str) -> tuple[_Candidate | None, bytes, str | None]:
        """Forget everything, store the initial states this worker owns; (the first
        violation among the initial states, the frontier's keys, a limit hit)."""
        ex = self._explorer()
        if ex.mode != mode:
            ex.dz.set_mode(mode)
        ex.reset_search()
        cpu0 = time.process_time()
        self.cpu = 0.0
        self.first = []
        self.depth = 0
        self.frontier = []
        self.keys = []
        cand: _Candidate | None = None
        zones = ex.zones
        try:
            for i, s0 in enumerate(ex.model.initial_states()):
                try:
                    f0 = zones.frame(s0)
                    z0 = ex.initial(s0, f0)
                    if z0 is None:
                        continue
                    found = ex.arrive(s0, f0, z0, -1, None)
                    z = zones.extrapolate(f0, z0)
                    cs, cz, sym = zones.canonical(f0, z)
                except _Timelocked:
                    cand = ((0, i), "timelock", s0)
                    break
                except ModelRuntimeError as err:
                    cand = ((0, i), "error", (err.message, None, None, s0))
                    break
                if _owner(cs, self.n) != self.index:
                    continue
                if isinstance(found, tuple):
                    cand = ((0, i), "state", (-1, cs, -1, 0, sym, found))
                    break
                self._store(cs, cz, -1, -1, 0, sym, 0, 0, i, bool(found))
        except LimitHit as lim:
            return None, b"", lim.what
        keys = self._keys()
        self.cpu += time.process_time() - cpu0
        return cand, keys, None

    def _store(self, cs: State, cz: Any, parent: int, event: int, branch: int,
               sym: Symmetry | None, depth: int, rank: int, edge: int, stuck: bool) -> None:
        ex = self._explorer()
        passed = ex.passed
        st = ex.stats
        before = st.states
        node = passed.add(ex.zones.frame(cs), cs, cz, parent, event, branch, sym, depth, st)
        if st.states != before:
            self.first.append((cs, (depth, rank, edge)))
        if node is not None:
            ex.tick()
        elif stuck:
            # Covered, but holding a deadlocked valuation: still expanded (and reported).
            node = passed.node(cs, cz, parent, event, branch, sym, depth)
        else:
            return
        if stuck:
            ex.stuck.add(node)
        self.frontier.append(node)
        self.keys.append((rank, edge))

    def _keys(self) -> bytes:
        # The frontier: alive nodes only (a later zone of the same round may have
        # retired one), in key order (the order they were stored in).
        ex = self._explorer()
        alive = ex.passed.alive
        pairs = [(k, node) for k, node in zip(self.keys, self.frontier, strict=True)
                 if alive[node]]
        self.frontier = [node for _, node in pairs]
        flat = array("q")
        for (rank, edge), _ in pairs:
            flat.append(rank)
            flat.append(edge)
        return flat.tobytes()

    # ---- a round --------------------------------------------------------------------------
    def expand(self, ranks: bytes) -> list[Any]:
        """Expand the frontier (``ranks``: each node's rank, in frontier order); the
        batches for every worker (pickled; empty for this one) and a summary."""
        cpu0 = time.process_time()
        ex = self._explorer()
        rank_of = array("q")
        rank_of.frombytes(ranks)
        out: list[list[_Succ]] = [[] for _ in range(self.n)]
        cand: _Candidate | None = None
        limit: str | None = None
        passed = ex.passed
        zones = ex.zones
        constrain = zones.constrain
        stats = ex.stats
        n = self.n
        me = self.index
        depth = self.depth + 1
        try:
            for node, rank in zip(self.frontier, rank_of, strict=True):
                if not passed.alive[node]:
                    continue
                stats.explored += 1
                ex.tick()
                if node in ex.stuck:
                    cand = ((rank, -1), "deadlock", node * n + me)
                    break
                s = passed.state[node]
                z = passed.zone[node]
                f = zones.frame(s)
                ref = node * n + me
                edge_at = -1
                current: tuple[int, int] | None = None
                try:
                    seen: dict[int, int] = {}
                    for k, e in enumerate(ex.edges(s)):
                        edge_at = k
                        branch = seen.get(e.event, 0)
                        seen[e.event] = branch + 1
                        g = constrain(f, z, e.guard)
                        if g is None:
                            continue
                        stats.transitions += 1
                        if e.failure is not None:
                            cand = ((rank, k), "assert", (ref, e.failure, (e.event, branch)))
                            break
                        current = (e.event, branch)
                        t = e.target
                        tf = zones.frame(t)
                        tz = zones.reset(f, g, e, tf)
                        if tz is not None:
                            tz = zones.close(tf, tz)
                        if tz is not None:
                            found = ex.arrive(t, tf, tz, node, e)
                            tz = zones.extrapolate(tf, tz)
                            cs, cz, sym = zones.canonical(tf, tz)
                            if isinstance(found, tuple):
                                cand = ((rank, k), "state",
                                        (ref, cs, e.event, branch, sym, found))
                                break
                            out[_owner(cs, n)].append(
                                (cs, cz, ref, e.event, branch, sym, rank, k, bool(found)))
                        current = None
                except ModelRuntimeError as err:
                    cand = ((rank, edge_at), "error", (err.message, ref, current, None))
                if cand is not None:
                    break
        except LimitHit as lim:
            limit = lim.what
        self.depth = depth
        self.kept = out[me]
        batches: list[Any] = []
        sizes = [0] * n
        counts = [0] * n
        for j, batch in enumerate(out):
            if j == me or not batch or cand is not None or limit is not None:
                batches.append(b"")
                continue
            data = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
            sizes[j] = len(data)
            counts[j] = len(batch)
            batches.append(data)
        self.cpu += time.process_time() - cpu0
        summary = {"candidate": cand, "limit": limit, "sizes": sizes, "counts": counts,
                   "memory": peak_rss_mb()}
        return [*batches, summary]

    def receive(self, budget: int | None, *batches: bytes
                ) -> tuple[bytes, int, str | None, Stats]:
        """Store this round's successors owned here, in the single-process order; (the new
        frontier's keys, the zones stored so far, a limit hit).  ``budget``: the stores
        left before the states limit of the whole run."""
        cpu0 = time.process_time()
        ex = self._explorer()
        incoming: list[_Succ] = list(self.kept)
        self.kept = []
        for data in batches:
            if data:
                incoming.extend(pickle.loads(data))
        incoming.sort(key=lambda x: (x[6], x[7]))
        self.frontier = []
        self.keys = []
        st = ex.stats
        start = st.stored
        try:
            for cs, cz, ref, event, branch, sym, rank, k, stuck in incoming:
                self._store(cs, cz, ref, event, branch, sym, self.depth, rank, k, stuck)
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
        p = self._explorer().passed
        return p.state[node], p.event[node], p.branch[node], p.sym[node], p.parent[node]

    def summary(self, with_states: bool) -> dict[str, Any]:
        """The statistics, the events that fired and (``with_states``) the discrete
        states stored here with their first keys."""
        ex = self._explorer()
        return {"stats": ex.stats, "fired": sorted(ex.fired),
                "first": self.first if with_states else [], "memory": peak_rss_mb(),
                "cpu": self.cpu}

    def pid(self) -> int:
        """The worker's process id (for tests that kill one)."""
        return os.getpid()


# ---- the driver -----------------------------------------------------------------------------

def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayMissing("--workers and --ray need Ray: pip install 'kvrace[ray]'"
                         f" (or pip install 'ray>=2.9'); {exc}") from None
    return ray


def package_root() -> str:
    """The directory that holds the ``checker`` package this process runs."""
    import checker

    return str(Path(checker.__path__[0]).resolve().parent)


def init_local(num_cpus: int) -> None:
    """Start a local Ray instance quietly, its workers importing this copy of kvrace."""
    ray = _ray()
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
             configure_logging=True, logging_level=logging.ERROR,
             runtime_env={"env_vars": {"PYTHONPATH": package_root()}})


def connect(address: str) -> None:
    """Join the Ray cluster at ``address``, shipping this copy of the ``checker``
    package to its workers."""
    ray = _ray()
    _reachable(address)
    ray.init(address=address, log_to_driver=False, configure_logging=True,
             logging_level=logging.ERROR,
             runtime_env={"py_modules": [str(Path(package_root()) / "checker")]})


_POOL: dict[str, Any] = {}
"""The workers of the last run in a Ray session this module did not start (``session``:
the job id, ``actors``), reused by the next run with as many workers."""


def _drop_pool(ray: Any) -> None:
    for a in _POOL.get("actors", []):
        with contextlib.suppress(Exception):
            ray.kill(a)
    _POOL.clear()


def _reachable(address: str, seconds: float = 10.0) -> None:
    """Fail fast when nothing listens at a ``host:port`` address (Ray itself retries for
    minutes); ``auto`` and ``ray://`` addresses are left to Ray."""
    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc.strerror or exc})"
                              ) from None


class _Died(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class _Driver:
    def __init__(self, model: TimedModel, build: ModelBuilder, limits: Limits,
                 options: Options, cluster: Cluster) -> None:
        self.ray = _ray()
        self.model = model
        self.build = build
        self.limits = limits
        self.options = options
        self.cluster = cluster
        self.start = time.monotonic()
        ends = [t for t in (limits.deadline, self.start + limits.timeout
                            if limits.timeout is not None else None) if t is not None]
        self.deadline = min(ends) if ends else None
        self.dist = DistStats()
        self.started_ray = False
        self.actors: list[Any] = []
        self.memory = 0.0
        self.last_progress = self.start

    # ---- Ray calls ------------------------------------------------------------------------
    def _left(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    def get(self, refs: Sequence[Any]) -> list[Any]:
        """The values of ``refs`` (one per worker, in order); a dead worker raises
        :class:`_Died`, a run past its deadline :class:`LimitHit`."""
        ray = self.ray
        left = self._left()
        # The workers watch the deadline themselves; this is the backstop.
        _, pending = ray.wait(list(refs), num_returns=len(refs),
                              timeout=None if left is None else left + 10.0)
        out = []
        for i, ref in enumerate(refs):
            if ref in pending:
                raise LimitHit(f"time limit ({self.limits.timeout:g} s) reached"
                               if self.limits.timeout is not None else "time limit reached")
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayActorError as exc:
                raise _Died(f"worker {i} died: {_first_line(exc)}") from None
            except ray.exceptions.RayTaskError as exc:
                raise _Died(f"worker {i} failed: {_first_line(exc)}") from None
        return out

    def spawn(self) -> None:
        """Start Ray if needed, and the workers (or reuse those of an earlier run in the
        same Ray session)."""
        ray = self.ray
        if not ray.is_initialized():
            try:
                if self.cluster.address is None:
                    init_local(self.cluster.workers or os.cpu_count() or 1)
                else:
                    connect(self.cluster.address)
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, Exception
                where = ("start a local Ray instance" if self.cluster.address is None
                         else f"connect to the Ray cluster at {self.cluster.address}")
                hint = ("" if self.cluster.address is None
                        or str(exc).startswith("nothing answers") else
                        " (a cluster with token authentication needs RAY_AUTH_MODE=token here"
                        " too)")
                with contextlib.suppress(Exception):
                    ray.shutdown()
                raise RayMissing(f"cannot {where}: {_first_line(exc)}{hint}") from None
            self.started_ray = True
        n = self.cluster.workers
        if n is None:
            n = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.dist.workers = n
        session = ray.get_runtime_context().get_job_id()
        if _POOL.get("session") == session and len(_POOL.get("actors", [])) == n:
            self.actors = list(_POOL["actors"])
        else:
            _drop_pool(ray)
            # One CPU each, or a share when the cluster has fewer CPUs than workers (an
            # actor waiting for a CPU that never frees would wait for ever).
            cpus = float(ray.cluster_resources().get("CPU", n))
            cls = ray.remote(num_cpus=min(1.0, cpus / n), max_restarts=0)(_Worker)
            self.actors = [cls.remote(i, n) for i in range(n)]
            if not self.started_ray:
                _POOL.update(session=session, actors=list(self.actors))

    def shutdown(self, dead: bool) -> None:
        """Let the workers go: kept for the next run in a Ray session someone else
        started; otherwise (or after a death) killed, and Ray stopped if started here."""
        ray = self.ray
        if dead or self.started_ray:
            _drop_pool(ray)
            for a in self.actors:
                with contextlib.suppress(Exception):  # an actor already gone
                    ray.kill(a)
        self.actors = []
        if self.started_ray:
            ray.shutdown()

    # ---- the run ------------------------------------------------------------------------
    def run(self) -> CheckResult:
        ex = _Explorer(self.model, self.limits, self.options)
        ex.start = self.start
        dead = False
        try:
            self.spawn()
            left = self._left()
            shipped = replace(self.options, progress=None)
            loads = [a.load.remote(self.build, self.limits, left, shipped) for a in self.actors]
            for status, what in self.get(loads):
                if status == "limit":
                    raise LimitHit(what)
                if status == "error":
                    return self.finish(ex, CheckResult(ERROR, "model error", what, []))
            self.dist.startup_seconds = time.monotonic() - self.start
            mode = "lu"
            while True:
                try:
                    return self.search(ex, mode)
                except _Restart:
                    mode = "m"
                    ex.dz.set_mode("m")
        except LimitHit as lim:
            return self.finish(ex, CheckResult(INCONCLUSIVE, limit=lim.what))
        except _Died as died:
            dead = True
            return self.finish(ex, CheckResult(INCONCLUSIVE, limit=died.what))
        finally:
            self.shutdown(dead)

    def search(self, ex: _Explorer, mode: str) -> CheckResult:
        actors = self.actors
        n = len(actors)
        got = self.get([a.start.remote(mode) for a in actors])
        self.limit_of(w[2] for w in got)
        cand = _first(w[0] for w in got)
        if cand is not None:
            return self.violation(ex, cand)
        keys = [w[1] for w in got]
        stored = 0
        max_states = self.limits.max_states
        while True:
            ranks = _ranks(keys)
            self.dist.control_bytes += sum(len(k) + len(r) for k, r in zip(keys, ranks,
                                                                          strict=True))
            if not any(ranks):
                return self.holds(ex)
            self.dist.rounds += 1
            outs = [a.expand.options(num_returns=n + 1).remote(r)
                    for a, r in zip(actors, ranks, strict=True)]
            summaries = self.get([o[n] for o in outs])
            self.memory = max([self.memory, *(s["memory"] for s in summaries)])
            self.limit_of(s["limit"] for s in summaries)
            cand = _first(s["candidate"] for s in summaries)
            if cand is not None:
                return self.violation(ex, cand)
            for s in summaries:
                self.dist.bytes_sent += sum(s["sizes"])
                self.dist.successors_sent += sum(s["counts"])
                self.dist.batches += sum(1 for c in s["counts"] if c)
            budget = None if max_states is None else max_states - stored
            got2 = self.get([a.receive.remote(budget, *(outs[i][j] for i in range(n)))
                             for j, a in enumerate(actors)])
            stored = sum(w[1] for w in got2)
            self.report([w[3] for w in got2])
            if any(w[2] is not None for w in got2) or (
                    max_states is not None and stored >= max_states):
                raise LimitHit(f"state limit ({max_states}) reached")
            keys = [w[0] for w in got2]

    def report(self, stats: Sequence[Stats]) -> None:
        """The progress display, with the sum of the workers' statistics."""
        progress = self.options.progress
        now = time.monotonic()
        if progress is None or now - self.last_progress < self.options.progress_interval:
            return
        self.last_progress = now
        st = _sum_stats(stats)
        st.seconds = now - self.start
        progress(st)

    def limit_of(self, whats: Any) -> None:
        for what in whats:
            if what is not None:
                raise LimitHit(what)

    # ---- results --------------------------------------------------------------------------
    def collect(self, ex: _Explorer, with_states: bool) -> list[dict[str, Any]]:
        """Sum the workers' statistics into ``ex``'s."""
        sums = self.get([a.summary.remote(with_states) for a in self.actors])
        st = _sum_stats([s["stats"] for s in sums])
        fired: set[int] = set()
        for s in sums:
            fired.update(s["fired"])
            self.memory = max(self.memory, s["memory"])
        ex.stats = st
        ex.fired = fired
        self.dist.explored = st.explored
        self.dist.zones_per_worker = tuple(s["stats"].zones for s in sums)
        self.dist.cpu_per_worker = tuple(round(s["cpu"], 3) for s in sums)
        return sums

    def finish(self, ex: _Explorer, res: CheckResult) -> CheckResult:
        if self.actors and not ex.stats.explored:
            with contextlib.suppress(_Died, LimitHit):
                self.collect(ex, False)
        res = ex.finish(res)
        res.stats.peak_memory_mb = max(res.stats.peak_memory_mb, self.memory)
        res.distributed = self.dist
        return res

    def holds(self, ex: _Explorer) -> CheckResult:
        sums = self.collect(ex, True)
        res = self.finish(ex, CheckResult(HOLDS))
        # The discrete states in the order the single-process run first stores them.
        firsts = heapq.merge(*(s["first"] for s in sums), key=lambda x: x[1])
        res.reached = tuple(s for s, _ in firsts)
        return res

    def path(self, ex: _Explorer, ref: int) -> int:
        """Copy the path to the node ``ref`` (worker and node) into ``ex``'s store (from
        the root); the copy's id."""
        n = len(self.actors)
        chain = []
        while ref != -1:
            node, w = divmod(ref, n)
            s, event, branch, sym, ref = self.get([self.actors[w].step.remote(node)])[0]
            chain.append((s, event, branch, sym))
        ex.passed = Passed(ex.zones.includes, True)
        last = -1
        for depth, (s, event, branch, sym) in enumerate(reversed(chain)):
            last = ex.passed.node(s, [], last, event, branch, sym, depth)
        return last

    def violation(self, ex: _Explorer, cand: _Candidate) -> CheckResult:
        _, kind, what = cand
        self.collect(ex, False)
        if kind == "timelock":
            return self.finish(ex, CheckResult(
                ERROR, "model error", "the initial state breaks a deadline: time cannot even"
                " start", [TraceStep(None, "initial", None, what)]))
        if kind == "error":
            message, ref, current, initial = what
            if ref is None:
                trace = [TraceStep(None, "initial", None, initial)]
            else:
                trace = ex.trace(self.path(ex, ref), current)
            return self.finish(ex, CheckResult(ERROR, "model error", message, trace))
        if kind == "deadlock":
            node = self.path(ex, what)
            res = ex.violation(node, "deadlock", "no event can fire and time cannot pass")
        elif kind == "assert":
            ref, message, extra = what
            res = ex.violation(self.path(ex, ref), "assert", message, extra)
        else:
            ref, cs, event, branch, sym, found = what
            parent = self.path(ex, ref) if ref != -1 else -1
            depth = 0 if parent == -1 else ex.passed.depth[parent] + 1
            if parent == -1:
                ex.passed = Passed(ex.zones.includes, True)
            node = ex.passed.node(cs, [], parent, event, branch, sym, depth)
            res = ex.violation(node, found[0], found[1])
        res.stats.peak_memory_mb = max(res.stats.peak_memory_mb, self.memory)
        res.distributed = self.dist
        return res


def _sum_stats(stats: Sequence[Stats]) -> Stats:
    st = Stats()
    for w in stats:
        st.states += w.states
        st.zones += w.zones
        st.transitions += w.transitions
        st.stored += w.stored
        st.explored += w.explored
        st.depth = max(st.depth, w.depth)
    return st


def _reset_peak_memory() -> None:
    # A worker serves run after run: its peak memory (VmHWM) starts again at each.
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def _first(cands: Any) -> _Candidate | None:
    """The candidate the single-process search meets first."""
    best: _Candidate | None = None
    for c in cands:
        if c is not None and (best is None or c[0] < best[0]):
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def explore_distributed(model: TimedModel, build: ModelBuilder, cluster: Cluster,
                        limits: Limits | None = None, options: Options | None = None
                        ) -> CheckResult:
    """Explore like :func:`checker.explorer.search.explore`, breadth-first, on Ray:
    the same verdict, property, trace and discrete states (see the module docstring).
    ``model`` is the driver's copy (for traces); ``build`` makes each worker's.  Raises
    :class:`RayMissing` when Ray is not installed."""
    opts = options or Options()
    if opts.search != "bfs":
        raise ValueError("distributed exploration is breadth-first only")
    return _Driver(model, build, limits or Limits(), opts, cluster).run()

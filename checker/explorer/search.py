"""Reachability over the zone graph of a timed model: the explorer's main loop.

A symbolic state is a discrete state and a zone: a canonical DBM over the
clocks that are *live* in that discrete state.  Exploration proceeds as in
UPPAAL and TChecker:

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
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from checker.explorer import backend, dbm
from checker.explorer.canon import Canonizer, canonizer
from checker.explorer.limits import MAX_ZONE_MB, LimitHit, Limits, peak_rss_mb, zone_over_limit
from checker.explorer.liveness import EDGE_CACHE, Liveness, clock_bounds, live_clocks
from checker.explorer.traces import PathStep, TraceStep, concrete, renamed, replay_zone
from checker.model.interface import (
    GE,
    LE,
    LT,
    ClockAtom,
    Edge,
    ModelRuntimeError,
    State,
    Symmetry,
    TimedModel,
    scaled_bounds,
)

HOLDS, VIOLATED, INCONCLUSIVE, ERROR = "holds", "violated", "inconclusive", "error"
TIMED_PREPASS_CLOCKS = 64
"""Models with at most this many clocks get the timed clock-bounds pass (a hull zone
over every clock per state); larger ones the untimed one."""

__all__ = [
    "ERROR",
    "HOLDS",
    "INCONCLUSIVE",
    "MAX_ZONE_MB",
    "VIOLATED",
    "CheckResult",
    "Limits",
    "Options",
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


@dataclass
class Stats:
    """What a run explored."""

    states: int = 0
    """Distinct discrete states reached."""
    zones: int = 0
    """Symbolic states (discrete state, zone) stored at the end: those not covered
    by a larger zone of the same discrete state."""
    transitions: int = 0
    """Edges taken (successor zones computed)."""
    seconds: float = 0.0
    peak_memory_mb: float = 0.0
    depth: int = 0
    queued: int = 0
    stored: int = 0
    """Symbolic states ever stored, those retired later by a larger zone included
    (what ``max_states`` limits)."""
    explored: int = 0
    """Symbolic states expanded (a zone retired while waiting is not)."""
    extrapolation: str = "lu"
    """The abstraction the final run used: ``lu``, or ``m`` after an unconfirmed
    deadlock of the LU abstraction (see the module docstring)."""

    @property
    def states_per_second(self) -> float:
        """Zones stored per second of run time."""
        return self.zones / self.seconds if self.seconds > 0 else 0.0


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


class _Restart(Exception):
    """A deadlock of the LU abstraction that the exact replay did not confirm."""


def _bits(mask: int) -> tuple[int, ...]:
    out = []
    c = 0
    while mask:
        if mask & 1:
            out.append(c)
        mask >>= 1
        c += 1
    return tuple(out)


_ClockSet = tuple[tuple[int, ...], dict[int, int]]
_Local = tuple[tuple[int, ...], dict[int, int], list[int], list[int]]


class _Explorer:
    def __init__(self, model: TimedModel, limits: Limits, options: Options) -> None:
        self.model = model
        self.limits = limits
        self.options = options
        self.bounds, self.scale = scaled_bounds(model.bounds, model.values)
        self.start = time.monotonic()
        ends = [t for t in (limits.deadline,
                            self.start + limits.timeout if limits.timeout is not None else None)
                if t is not None]
        self.deadline_t = min(ends) if ends else None
        self.n_clocks = len(model.clock_names)
        self._edge_cache: dict[State, Sequence[Edge]] = {}
        self.canon: Canonizer | None = canonizer(model, options.symmetry)
        # Clock bounds are computed by prepare(), inside run(), where model errors
        # are reported as such; until then every clock is live with every constant.
        self.live = Liveness(self.n_clocks, self.canon, max(self.bounds, default=0))
        self._clockset_cache: dict[int, _ClockSet] = {}
        self._local_cache: dict[State, _Local] = {}
        self._dl_cache: dict[State, Sequence[ClockAtom]] = {}
        self.mode = options.extrapolation
        top = max((abs(b) for b in self.bounds), default=0)
        choice = None if options.dbm == "auto" else options.dbm
        self.D: backend.DbmOps = backend.select(choice if backend.fits(top) else "python")
        """The DBM operations: the compiled core when the constants are small enough."""
        self.reset_search()

    def reset_search(self) -> None:
        """Forget every stored node (a fresh start, e.g. in another extrapolation mode)."""
        self.stats = Stats()
        self.node_state: list[State] = []
        self.node_zone: list[dbm.Dbm] = []
        self.node_parent: list[int] = []
        self.node_event: list[int] = []
        self.node_branch: list[int] = []
        self.node_sym: list[Symmetry | None] = []
        self.node_depth: list[int] = []
        self.alive: bytearray = bytearray()
        self.passed: dict[State, list[int]] = {}
        self.last_progress = time.monotonic()
        self._checks = 0
        self.subsumer = -1
        self.current = -1
        """The node being expanded (for model errors raised outside edges())."""
        self.graph_edges: list[tuple[int, int, str]] = []
        self.fired: set[int] = set()
        self.stuck: set[int] = set()
        """Nodes whose zone, before extrapolation, holds a deadlocked valuation."""

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The model's deadlines in ``s`` (memoised; deadlines are asked for often)."""
        got = self._dl_cache.get(s)
        if got is None:
            if len(self._dl_cache) > 65536:
                self._dl_cache.clear()
            got = self.model.deadlines(s)
            self._dl_cache[s] = got
        return got

    def edges(self, s: State) -> Sequence[Edge]:
        """The model's edges out of ``s`` (memoised)."""
        got = self._edge_cache.get(s)
        if got is None:
            got = self.model.edges(s)
            if len(self._edge_cache) > EDGE_CACHE:
                self._edge_cache.clear()
            self._edge_cache[s] = got
        return got

    # ---- clocks of a state ------------------------------------------------------------
    def clockset(self, mask: int) -> _ClockSet:
        """The live clocks of a mask, in order, and each one's index in the zone."""
        got = self._clockset_cache.get(mask)
        if got is None:
            clocks = _bits(mask)
            over = zone_over_limit(len(clocks), self.limits.max_memory_mb)
            if over is not None:
                raise LimitHit(over)
            got = (clocks, {c: k + 1 for k, c in enumerate(clocks)})
            self._clockset_cache[mask] = got
        return got

    def local(self, s: State) -> _Local:
        """The live clocks of ``s``, their zone indices, and their L and U constants
        (index 0, the reference clock, has none)."""
        got = self._local_cache.get(s)
        if got is None:
            clocks, pos = self.clockset(self.live.mask(s))
            lu = self.live.bounds(s) if self.mode == "lu" else None
            if lu is None:
                lower = [-1] + [self.live.lower[c] for c in clocks]
                upper = [-1] + [self.live.upper[c] for c in clocks]
            else:
                top = self.live.top
                lower = [-1] + [lu.get(c, (top, top))[0] for c in clocks]
                upper = [-1] + [lu.get(c, (top, top))[1] for c in clocks]
            got = (clocks, pos, lower, upper)
            if len(self._local_cache) > 1 << 17:
                self._local_cache.clear()
            self._local_cache[s] = got
        return got

    def constrain_atoms(
        self, z: dbm.Dbm, n: int, pos: dict[int, int], atoms: Sequence[ClockAtom]
    ) -> bool:
        for a in atoms:
            i = pos.get(a.clock)
            if i is None:
                raise AssertionError(
                    f"clock {self.model.clock_names[a.clock]} is read but was found dead"
                )
            b = self.bounds[a.bound]
            op = a.op
            if op == LE:
                ok = self.D.constrain(z, n, i, 0, dbm.bound(b, False))
            elif op == LT:
                ok = self.D.constrain(z, n, i, 0, dbm.bound(b, True))
            elif op == GE:
                ok = self.D.constrain(z, n, 0, i, dbm.bound(-b, False))
            else:
                ok = self.D.constrain(z, n, 0, i, dbm.bound(-b, True))
            if not ok:
                return False
        return True

    def close(self, s: State, z: dbm.Dbm, n: int, pos: dict[int, int]) -> bool:
        """Apply deadlines, let time pass, re-apply deadlines (in place)."""
        inv = self.deadlines(s)
        if not self.constrain_atoms(z, n, pos, inv):
            return False
        self.D.up(z, n)
        return self.constrain_atoms(z, n, pos, inv)

    def extrapolate(self, s: State, z: dbm.Dbm, n: int, pos: dict[int, int],
                    lower: list[int], upper: list[int]) -> None:
        """Abstract ``z`` by the clocks' constants, keeping it inside the deadlines."""
        if self.mode == "m":
            self.D.extrapolate_m(z, n, [max(a, b) for a, b in zip(lower, upper, strict=True)])
        else:
            self.D.extrapolate_lu(z, n, lower, upper)
        self.constrain_atoms(z, n, pos, self.deadlines(s))

    # ---- symmetry ----------------------------------------------------------------------
    def canonical(self, s: State, z: dbm.Dbm, clocks: tuple[int, ...], pos: dict[int, int]
                  ) -> tuple[State, dbm.Dbm, Symmetry | None]:
        """A canonical image of (s, z) under the symmetries: the least discrete image
        among the candidate permutations, then the least permuted zone."""
        if self.canon is None:
            return s, z, None
        n = len(clocks) + 1

        keys: dict[int, Hashable] = {}
        for c, i in pos.items():
            row = i * n
            keys[c] = (z[row], z[i], tuple(sorted([(z[row + j], z[j * n + i])
                                                   for j in range(1, n) if j != i])))
        clock_key = keys.get
        def permuted(sym: Symmetry) -> dbm.Dbm:
            img = sym.clocks
            new_clocks = sorted(img[c] for c in clocks)
            where = {c: i + 1 for i, c in enumerate(new_clocks)}
            return self.D.permute(z, n, [0] + [where[img[c]] for c in clocks])

        def zone_fixed(sym: Symmetry) -> bool:
            img = sym.clocks
            return all(img[c] in pos for c in clocks) and permuted(sym) == z

        best_s, cands = self.canon.candidates(s, clock_key, zone_fixed)
        if cands == [None]:
            return s, z, None
        best_z: dbm.Dbm | None = None
        best_sym: Symmetry | None = None
        for sym in cands:
            tz = z if sym is None else permuted(sym)
            if best_z is None or tz < best_z:
                best_z, best_sym = tz, sym
        assert best_z is not None
        if best_sym is not None and self.live.complete:
            img = best_sym.clocks
            if sorted(img[c] for c in clocks) != list(self.local(best_s)[0]):
                raise AssertionError("the model's symmetries do not preserve clock liveness")
        return best_s, best_z, best_sym

    # ---- bookkeeping ------------------------------------------------------------------
    def check_limits(self) -> None:
        """End the run (as inconclusive) at a limit; called for every node stored or
        expanded, so that every limit holds within well under a second."""
        st = self.stats
        if self.limits.max_states is not None and st.stored >= self.limits.max_states:
            raise LimitHit(f"state limit ({self.limits.max_states}) reached")
        now = time.monotonic()
        if self.deadline_t is not None and now > self.deadline_t:
            raise LimitHit(f"time limit ({self.limits.timeout:g} s) reached")
        self._checks += 1
        mem = self.limits.max_memory_mb
        if mem is not None and self._checks % 256 == 0 and peak_rss_mb() > mem:
            raise LimitHit(f"memory limit ({mem} MiB) reached")
        if (self.options.progress is not None
                and now - self.last_progress >= self.options.progress_interval):
            self.last_progress = now
            st.seconds = now - self.start
            self.options.progress(st)

    def store(self, s: State, z: dbm.Dbm, n: int, parent: int, event: int, branch: int,
              sym: Symmetry | None, depth: int) -> int | None:
        """Store a symbolic state unless covered; returns its node id.

        Stored zones of ``s`` that ``z`` includes are retired: dropped from the
        store and, if still waiting, never expanded."""
        zones = self.passed.get(s)
        if zones is None:
            zones = []
            self.passed[s] = zones
            self.stats.states += 1
        else:
            node_zone = self.node_zone
            for k in zones:
                if self.D.includes(node_zone[k], z, n):
                    self.subsumer = k
                    return None
            kept = [k for k in zones if not self.D.includes(z, node_zone[k], n)]
            if len(kept) != len(zones):
                # A retired node still waiting is expanded only if it is shallower than
                # the new one: breadth-first search keeps finding shortest traces.
                node_depth = self.node_depth
                alive = self.alive
                for k in zones:
                    if node_depth[k] >= depth and self.D.includes(z, node_zone[k], n):
                        alive[k] = 0
                self.stats.zones -= len(zones) - len(kept)
                zones[:] = kept
        node = self.new_node(s, z, parent, event, branch, sym, depth)
        zones.append(node)
        self.stats.zones += 1
        self.stats.stored += 1
        if depth > self.stats.depth:
            self.stats.depth = depth
        self.check_limits()
        return node

    def new_node(self, s: State, z: dbm.Dbm, parent: int, event: int, branch: int,
                 sym: Symmetry | None, depth: int) -> int:
        """Record a node (for the search and for traces); returns its id."""
        node = len(self.node_state)
        self.node_state.append(s)
        self.node_zone.append(z)
        self.node_parent.append(parent)
        self.node_event.append(event)
        self.node_branch.append(branch)
        self.node_sym.append(sym)
        self.node_depth.append(depth)
        self.alive.append(1)
        return node

    # ---- properties ---------------------------------------------------------------------
    def state_violation(self, s: State, z: dbm.Dbm, n: int, pos: dict[int, int]
                        ) -> tuple[str, str] | None:
        viol = self.model.violations(s)
        if viol:
            return viol[0].property, viol[0].message
        for h in self.model.hazards(s):
            probe = list(z)
            if self.constrain_atoms(probe, n, pos, h.atoms):
                return h.property, h.message
        return None

    def deadlocked(self, s: State, z: dbm.Dbm, n: int, pos: dict[int, int],
                   edges: Sequence[Edge]) -> bool:
        """Whether some valuation of (s, z) can neither fire an event nor let time pass."""
        if not self.deadlines(s):
            return False  # time can pass for ever
        rest: list[dbm.Dbm] = [z]
        for e in edges:
            enabled = list(z)
            if not self.constrain_atoms(enabled, n, pos, e.guard):
                continue
            ok = True
            resets = set(e.resets)
            # A violating edge fires (and is reported); it enters no state.
            try:
                target_deadlines = self.deadlines(e.target) if e.failure is None else ()
            except ModelRuntimeError:
                # Entering the target is a model error, reported with the run that
                # enters it: the edge can fire.
                target_deadlines = ()
            for a in target_deadlines:
                if a.clock in resets:
                    b = self.bounds[a.bound]
                    if (a.op == LE and b < 0) or (a.op == LT and b <= 0):
                        ok = False
                        break
                elif a.clock in pos and not self.constrain_atoms(enabled, n, pos, [a]):
                    ok = False
                    break
                # A target deadline on a clock dead here is reset before it is read.
            if not ok:
                continue
            if enabled == z:
                return False  # this edge can fire from every valuation of the zone
            self.D.down(enabled, n)
            nxt: list[dbm.Dbm] = []
            for piece in rest:
                nxt.extend(self.D.subtract(piece, enabled, n))
            rest = nxt
            if not rest:
                return False
        return bool(rest)

    def deadlock_at(self, s: State, z: dbm.Dbm, n: int, pos: dict[int, int]) -> bool:
        """Whether (s, z) holds a deadlocked valuation (False when listing the edges of
        ``s`` faults: that model error is reported when ``s`` is expanded)."""
        if not self.options.deadlock or not self.deadlines(s):
            return False
        try:
            edges = self.edges(s)
        except ModelRuntimeError:
            return False  # a model error of s, reported when s is expanded
        return self.deadlocked(s, z, n, pos, edges)

    def confirm_deadlock(self, trace: list[TraceStep]) -> None:
        """Replay ``trace`` exactly; raise :class:`_Restart` unless its end deadlocks."""
        if self.mode == "m":
            return  # Extra_M adds only region-equivalent valuations: the deadlock is real
        zone = replay_zone(self.model, self.bounds, trace)
        n = self.n_clocks + 1
        pos = {c: c + 1 for c in range(self.n_clocks)}
        final = trace[-1].state
        if zone is None or not self.deadlocked(final, zone, n, pos, self.model.edges(final)):
            raise _Restart

    # ---- the search ---------------------------------------------------------------------
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
            self.live = clock_bounds(self.model, self.bounds, cap, self.deadline_t, analysis,
                                     cache, self.limits.max_memory_mb, timed=timed)

    def run(self) -> CheckResult:
        try:
            self.prepare()
            while True:
                try:
                    return self._run()
                except _Restart:
                    self.mode = "m"
                    self._local_cache.clear()
                    self.reset_search()
        except LimitHit as lim:
            return self.finish(CheckResult(INCONCLUSIVE, limit=lim.what))
        except ModelRuntimeError as err:
            # Raised while evaluating a deadline, an invariant or a property of the
            # state being generated or expanded: a model error at that state.
            trace = self.trace(self.current) if self.current >= 0 else []
            return self.finish(CheckResult(ERROR, "model error", err.message, trace))

    def finish(self, res: CheckResult) -> CheckResult:
        if self.options.record_graph:
            names = ["0", *self.model.clock_names]
            nodes = []
            for s, z in zip(self.node_state, self.node_zone, strict=True):
                clocks = self.clockset(self.live.mask(s))[0]
                n = len(clocks) + 1
                nodes.append((s, dbm.to_str(z, n, [names[0], *(names[c + 1] for c in clocks)])))
            path: list[int] = []
            if res.trace:
                k = len(self.node_state) - 1
                while k != -1:
                    path.append(k)
                    k = self.node_parent[k]
            res.graph = StateGraph(nodes, list(self.graph_edges), path[::-1])
        self.stats.seconds = time.monotonic() - self.start
        self.stats.peak_memory_mb = peak_rss_mb()
        self.stats.extrapolation = self.mode
        res.stats = self.stats
        res.scale = self.scale
        res.fired = frozenset(self.fired)
        return res

    def violation(self, node: int, prop: str, message: str,
                  extra: tuple[int, int] | None = None) -> CheckResult:
        trace = self.trace(node, extra)
        if prop == "deadlock":
            self.confirm_deadlock(trace)
        # The message was computed on a representative; say it of the concrete run.
        final = trace[-1]
        if prop == "assert" and final.edge is not None and final.edge.failure is not None:
            prop, message = "assert", final.edge.failure
        elif prop != "deadlock":
            viol = self.model.violations(final.state)
            if viol:
                prop, message = viol[0].property, viol[0].message
            else:
                zone = replay_zone(self.model, self.bounds, trace)
                n = self.n_clocks + 1
                pos = {c: c + 1 for c in range(n - 1)}
                for h in self.model.hazards(final.state):
                    if zone is not None and self.constrain_atoms(list(zone), n, pos, h.atoms):
                        prop, message = h.property, h.message
                        break
        return self.finish(CheckResult(VIOLATED, prop, message, trace))

    def _run(self) -> CheckResult:
        model = self.model
        frontier: deque[int] = deque()
        for s0 in model.initial_states():
            clocks, pos, lower, upper = self.local(s0)
            n = len(clocks) + 1
            z = dbm.zero(n)
            start = [TraceStep(None, "initial", None, s0)]
            try:
                if not self.close(s0, z, n, pos):
                    return self.finish(CheckResult(
                        ERROR, "model error",
                        "the initial state breaks a deadline: time cannot even start", start))
                bad = self.state_violation(s0, z, n, pos)
                stuck = bad is None and self.deadlock_at(s0, z, n, pos)
            except ModelRuntimeError as err:
                return self.finish(CheckResult(ERROR, "model error", err.message, start))
            self.extrapolate(s0, z, n, pos, lower, upper)
            cs, cz, sym = self.canonical(s0, z, clocks, pos)
            node = self.store(cs, cz, n, -1, -1, 0, sym, 0)
            if node is None:
                continue
            if bad is not None:
                return self.violation(node, *bad)
            if stuck:
                self.stuck.add(node)
            frontier.append(node)
        pop = frontier.popleft if self.options.search == "bfs" else frontier.pop
        alive = self.alive
        node_state, node_zone, node_depth = self.node_state, self.node_zone, self.node_depth
        stats = self.stats
        record = self.options.record_graph
        while frontier:
            node = pop()
            if not alive[node]:
                continue
            stats.queued = len(frontier)
            stats.explored += 1
            self.current = node
            self.check_limits()
            if node in self.stuck:
                # Found when the zone was generated, reported in its own round (after
                # every assert found one event earlier) so that traces stay shortest.
                return self.violation(node, "deadlock", "no event can fire and time cannot pass")
            s = node_state[node]
            z = node_zone[node]
            clocks, pos, _lower, _upper = self.local(s)
            n = len(clocks) + 1
            try:
                edges = self.edges(s)
            except ModelRuntimeError as err:
                return self.finish(
                    CheckResult(ERROR, "model error", err.message, self.trace(node))
                )
            seen: dict[int, int] = {}
            for e in edges:
                branch = seen.get(e.event, 0)
                seen[e.event] = branch + 1
                g = list(z)
                if not self.constrain_atoms(g, n, pos, e.guard):
                    continue
                stats.transitions += 1
                if e.failure is not None:
                    return self.violation(node, "assert", e.failure, (e.event, branch))
                t = e.target
                tclocks, tpos, tlower, tupper = self.local(t)
                m = len(tclocks) + 1
                resets = e.resets
                keep = [c for c in clocks if c in tpos and c not in resets]
                zp = self.D.project(g, n, [pos[c] for c in keep])
                tz = self.D.embed(zp, len(keep) + 1, [0] + [tpos[c] for c in keep], m)
                try:
                    if not self.close(t, tz, m, tpos):
                        continue
                    self.fired.add(e.event)
                    bad = self.state_violation(t, tz, m, tpos)
                    stuck = bad is None and self.deadlock_at(t, tz, m, tpos)
                except ModelRuntimeError as err:
                    # A fault of the target state: the run to it ends with this edge.
                    return self.finish(CheckResult(ERROR, "model error", err.message,
                                                   self.trace(node, (e.event, branch))))
                self.extrapolate(t, tz, m, tpos, tlower, tupper)
                cs, cz, sym = self.canonical(t, tz, tclocks, tpos)
                depth = node_depth[node] + 1
                child = self.store(cs, cz, m, node, e.event, branch, sym, depth)
                if record:
                    target = child if child is not None else self.subsumer
                    self.graph_edges.append((node, target, self.model.event_names[e.event]))
                if bad is not None:
                    if child is None:
                        # Covered, but still the first state found breaking the property.
                        child = self.new_node(cs, cz, node, e.event, branch, sym, depth)
                    return self.violation(child, *bad)
                if stuck:
                    if child is None:
                        child = self.new_node(cs, cz, node, e.event, branch, sym, depth)
                    self.stuck.add(child)
                if child is None:
                    continue
                frontier.append(child)
        # Without a complete liveness pass every clock stayed live: still exact.
        return self.finish(CheckResult(HOLDS))

    # ---- traces -------------------------------------------------------------------------------
    def trace(self, node: int, extra: tuple[int, int] | None = None) -> list[TraceStep]:
        """The concrete trace to ``node`` (undoing symmetry), then the edge ``extra``
        (event and branch of the representative) if given."""
        path: list[PathStep] = []
        k = node
        while k != -1:
            path.append(PathStep(self.node_state[k], self.node_event[k], self.node_branch[k],
                                 self.node_sym[k]))
            k = self.node_parent[k]
        path.reverse()
        steps = concrete(self.model, path, extra)
        return renamed(self.model, steps) if self.canon is not None else steps


def explore(model: TimedModel, limits: Limits | None = None,
            options: Options | None = None) -> CheckResult:
    """Explore ``model`` and check every property; see :class:`CheckResult`."""
    return _Explorer(model, limits or Limits(), options or Options()).run()

"""Breadth-first (or depth-first) exploration of the zone graph of a timed model.

A symbolic state is a discrete state and a zone: a canonical DBM over the
clocks that are *live* in that discrete state.  Exploration proceeds as in
UPPAAL:

1. **Clock liveness.**  A first, untimed pass explores the discrete states
   (ignoring clock constraints, so it over-approximates what is reachable) and
   computes, backwards to a fixpoint, the clocks each state may still read
   before resetting them.  Every other clock is dropped from that state's
   zone, which keeps models with many indexed clocks small and is exact for
   every property kvrace checks.  The same pass gives each clock its largest
   lower and upper bound constants.
2. **Zones.**  Successor: intersect with the edge's guard, reset, move to the
   target's live clocks, intersect with the target's deadlines, let time pass
   (bounded by the deadlines), extrapolate so that cyclic models terminate:
   by the maximal constants (Extra_M) when deadlock is checked, since that
   check needs exact delay information, and by the LU bounds (Extra+_LU),
   which is coarser, otherwise.
3. **Subsumption.**  A new zone included in a stored zone of the same
   discrete state is dropped.
4. **Symmetry.**  With symmetric types, each symbolic state is replaced by
   the least of its images under every permutation of symmetric values.
5. **Properties** are checked when a state is generated, so in breadth-first
   order the first violation found has a shortest trace (in events).

Limits (states, seconds, memory) end a run as *inconclusive*, never *holds*.
"""

from __future__ import annotations

import itertools
import resource
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from checker.explorer import dbm
from checker.model.interface import (
    GE,
    GT,
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
MAX_ZONE_MB = 4096
"""Without --max-memory, the largest zone (difference-bound matrix) a run may build."""
EDGE_CACHE = 1 << 16
"""How many discrete states' edges are memoised (the search expands a state once per zone)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run; ``None`` means unlimited."""

    max_states: int | None = None
    timeout: float | None = None
    max_memory_mb: int | None = None
    deadline: float | None = None
    """An absolute ``time.monotonic()`` instant the run must end by (the command's
    start plus its timeout, so that the phases before exploration count too)."""


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


@dataclass
class Stats:
    """What a run explored."""

    states: int = 0
    """Distinct discrete states reached."""
    zones: int = 0
    """Symbolic states (discrete state, zone) stored after subsumption."""
    transitions: int = 0
    """Edges taken (successor zones computed)."""
    seconds: float = 0.0
    peak_memory_mb: float = 0.0
    depth: int = 0
    queued: int = 0

    @property
    def states_per_second(self) -> float:
        """Zones stored per second of run time."""
        return self.zones / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class TraceStep:
    """One step of a trace: the event fired (``None`` for the initial state),
    the edge taken, and the discrete state reached."""

    event: int | None
    label: str
    edge: Edge | None
    state: State


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


class _Limit(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def _peak_rss_mb() -> float:
    """This process's peak resident memory, in MiB.

    Linux's ``ru_maxrss`` survives ``execve``: a process started by a large one
    reports the parent's peak.  ``VmHWM`` belongs to the process's own address
    space, so it is read first."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # in kB
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _scaled_bounds(model: TimedModel) -> tuple[list[int], int]:
    return scaled_bounds(model.bounds, model.values)


class _Liveness:
    """Per discrete state: the bitmask of live clocks; per clock: LU constants.

    With symmetries, masks are stored for the representative of each orbit
    (the least image of a state) and mapped back to other members on demand.
    """

    def __init__(self, n_clocks: int, syms: Sequence[Symmetry] = ()) -> None:
        self.live: dict[State, int] = {}
        self.all_mask = (1 << n_clocks) - 1
        self.lower = [-1] * n_clocks
        self.upper = [-1] * n_clocks
        self.complete = True
        self.syms = list(syms)
        # inverse[k][c]: the clock that symmetry k maps onto c.
        self.inverse: list[list[int]] = []
        for sym in self.syms:
            inv = [0] * n_clocks
            for c, img in enumerate(sym.clocks):
                inv[img] = c
            self.inverse.append(inv)
        self._cache: dict[State, int] = {}

    def canon(self, s: State) -> tuple[State, int]:
        """The representative of ``s`` and the symmetry giving it (-1: ``s`` itself)."""
        best, k = s, -1
        for i, sym in enumerate(self.syms):
            t = sym.state(s)
            if t < best:
                best, k = t, i
        return best, k

    def unmap(self, mask: int, k: int) -> int:
        """The mask of ``s`` from the mask of its representative ``syms[k](s)``."""
        if k < 0:
            return mask
        inv = self.inverse[k]
        out = 0
        c = 0
        while mask:
            if mask & 1:
                out |= 1 << inv[c]
            mask >>= 1
            c += 1
        return out

    def mask(self, s: State) -> int:
        """The clocks ``s`` may still read before resetting them (all, if unknown)."""
        got = self.live.get(s)
        if got is not None:
            return got
        if not self.syms or not self.complete:
            return self.all_mask
        got = self._cache.get(s)
        if got is None:
            rep, k = self.canon(s)
            base = self.live.get(rep)
            got = self.all_mask if base is None else self.unmap(base, k)
            if len(self._cache) > 1 << 18:
                self._cache.clear()
            self._cache[s] = got
        return got


def _atoms_mask(atoms: Sequence[ClockAtom]) -> int:
    m = 0
    for a in atoms:
        m |= 1 << a.clock
    return m


def _note_constants(atoms: Sequence[ClockAtom], bounds: Sequence[int], live: _Liveness) -> None:
    for a in atoms:
        b = bounds[a.bound]
        if a.op in (LT, LE):
            if b > live.upper[a.clock]:
                live.upper[a.clock] = b
        elif b > live.lower[a.clock]:
            live.lower[a.clock] = b


def _liveness(
    model: TimedModel,
    bounds: Sequence[int],
    cap: int | None,
    deadline: float | None,
    syms: Sequence[Symmetry] = (),
    edge_cache: dict[State, Sequence[Edge]] | None = None,
    max_memory_mb: int | None = None,
) -> _Liveness:
    """Untimed pre-pass: live clocks per discrete state, LU bounds per clock.

    Explores the discrete states ignoring clock constraints (an over-approximation
    of what is reachable), one representative per symmetry orbit, then solves
    live(s) = reads(s) | OR over edges s -> t of (live(t) minus the edge's resets)
    backwards to a fixpoint.
    """
    n_clocks = len(model.clock_names)
    live = _Liveness(n_clocks, syms)
    index: dict[State, int] = {}
    states: list[State] = []
    reads: list[int] = []
    # preds[j]: (i, resets, k): an edge from states[i] to syms[k]^-1(states[j]).
    preds: list[list[tuple[int, tuple[int, ...], int]]] = []
    queue: deque[int] = deque()

    def intern(s: State) -> tuple[int, int]:
        rep, k = live.canon(s)
        j = index.get(rep)
        if j is None:
            j = len(states)
            index[rep] = j
            states.append(rep)
            preds.append([])
            reads.append(0)
            queue.append(j)
        return j, k

    for s in model.initial_states():
        intern(s)
    while queue:
        i = queue.popleft()
        s = states[i]
        if (cap is not None and len(states) > cap) or (
            deadline is not None and time.monotonic() > deadline
        ) or (max_memory_mb is not None and len(states) % 256 == 0
              and _peak_rss_mb() > max_memory_mb):
            live.complete = False
            break
        try:
            dls = model.deadlines(s)
            hz = model.hazards(s)
        except ModelRuntimeError:
            dls, hz = [], []
            reads[i] = live.all_mask
            # No constants known here: every bound of the model may matter.
            top = max(bounds, default=0)
            live.lower = [max(x, top) for x in live.lower]
            live.upper = [max(x, top) for x in live.upper]
        try:
            edges = model.edges(s)
        except ModelRuntimeError:
            edges = []
            reads[i] = live.all_mask
            top = max(bounds, default=0)
            live.lower = [max(x, top) for x in live.lower]
            live.upper = [max(x, top) for x in live.upper]
        else:
            if edge_cache is not None and len(edge_cache) < EDGE_CACHE:
                edge_cache[s] = edges  # the search expands these representatives again
        r = _atoms_mask(dls)
        _note_constants(dls, bounds, live)
        for h in hz:
            r |= _atoms_mask(h.atoms)
            _note_constants(h.atoms, bounds, live)
        for e in edges:
            r |= _atoms_mask(e.guard)
            _note_constants(e.guard, bounds, live)
            if e.failure is not None:
                continue
            j, k = intern(e.target)
            # The reset clocks, not their bitmask: with thousands of clocks one mask per
            # edge would take more memory than the whole model.
            preds[j].append((i, e.resets, k))
        reads[i] |= r
    if not live.complete:
        # Unknown constants: use every bound of the model, for every clock.
        top = max(bounds, default=0)
        live.lower = [top] * n_clocks
        live.upper = [top] * n_clocks
        return live
    # Constants were seen on representatives only: make them the same across orbits.
    for _ in range(2):
        for sym in syms:
            for c, img in enumerate(sym.clocks):
                live.lower[img] = live.lower[c] = max(live.lower[img], live.lower[c])
                live.upper[img] = live.upper[c] = max(live.upper[img], live.upper[c])
    mask = list(reads)
    work = deque(range(len(states)))
    queued = [True] * len(states)
    while work:
        j = work.popleft()
        queued[j] = False
        mj = mask[j]
        for i, resets, k in preds[j]:
            got = live.unmap(mj, k)
            for c in resets:
                if got >> c & 1:
                    got ^= 1 << c
            new = mask[i] | got
            if new != mask[i]:
                mask[i] = new
                if not queued[i]:
                    queued[i] = True
                    work.append(i)
    live.live = {s: mask[k] for k, s in enumerate(states)}
    return live


def live_clocks(model: TimedModel, max_states: int | None = None,
                deadline: float | None = None) -> dict[State, int] | None:
    """Per reachable (untimed) discrete state, the bitmask of clocks it may still
    read before resetting them; None if the untimed pass hit ``max_states`` or
    the ``time.monotonic()`` deadline (then every clock counts as live)."""
    live = _liveness(model, [0] * len(model.bounds), max_states, deadline)
    return live.live if live.complete else None


def _down(d: dbm.Dbm, n: int) -> None:
    """Time predecessors of a canonical zone, in place; stays canonical.

    Each lower bound becomes the tightest one the differences still imply:
    ``0 - x_j <= min(0, min_i (x_i - x_j))``.
    """
    for j in range(1, n):
        b = dbm.LE_ZERO
        for i in range(1, n):
            c = d[i * n + j]
            if c < b:
                b = c
        d[j] = b


def _extrapolate_m(d: dbm.Dbm, n: int, m: Sequence[int]) -> None:
    """Classic Extra_M (per-clock maximal constants), in place, then re-canonicalize.

    Coarser abstractions (Extra+_LU) add valuations that are only *simulated* by
    real ones, which can fake a deadlock; Extra_M adds only valuations that are
    region-equivalent to real ones, so deadlock checks stay exact.
    """
    changed = False
    inf = dbm.INF
    m = [max(c, 0) for c in m]  # -1 ("no constant seen") must not relax x >= 0
    for i in range(n):
        ri = i * n
        mi = m[i]
        for j in range(n):
            if i == j:
                continue
            b = d[ri + j]
            if b >= inf:
                continue
            c = b >> 1
            if i != 0 and c > mi:
                d[ri + j] = inf
                changed = True
            elif j != 0 and c < -m[j]:
                d[ri + j] = 2 * -m[j]
                changed = True
    if changed:
        dbm.canonicalize(d, n)


def _bits(mask: int) -> tuple[int, ...]:
    out = []
    c = 0
    while mask:
        if mask & 1:
            out.append(c)
        mask >>= 1
        c += 1
    return tuple(out)


class _Explorer:
    def __init__(self, model: TimedModel, limits: Limits, options: Options) -> None:
        self.model = model
        self.limits = limits
        self.options = options
        self.bounds, self.scale = _scaled_bounds(model)
        self.stats = Stats()
        self.start = time.monotonic()
        ends = [t for t in (limits.deadline,
                            self.start + limits.timeout if limits.timeout is not None else None)
                if t is not None]
        self.deadline_t = min(ends) if ends else None
        n_clocks = len(model.clock_names)
        self._edge_cache: dict[State, Sequence[Edge]] = {}
        self.syms: list[Symmetry] = list(model.symmetries()) if options.symmetry else []
        # Clock liveness is computed by prepare(), inside run(), where model errors
        # are reported as such.
        self.live = _Liveness(n_clocks)
        top = max(self.bounds, default=0)
        self.live.lower = [top] * n_clocks
        self.live.upper = [top] * n_clocks
        self._clockset_cache: dict[int, tuple[tuple[int, ...], dict[int, int], list[int],
                                               list[int]]] = {}
        # Node store (parallel lists).
        self.node_state: list[State] = []
        self.node_zone: list[dbm.Dbm] = []
        self.node_parent: list[int] = []
        self.node_event: list[int] = []
        self.node_branch: list[int] = []
        self.node_sym: list[int] = []
        self.node_depth: list[int] = []
        self.passed: dict[State, list[int]] = {}
        self.last_progress = self.start
        self._checks = 0
        self._dl_cache: dict[State, Sequence[ClockAtom]] = {}
        self._canon_cache: dict[State, tuple[State, list[int]]] = {}
        self.subsumer = -1
        self.current = -1
        """The node being expanded (for model errors raised outside edges())."""
        self.graph_edges: list[tuple[int, int, str]] = []
        self.fired: set[int] = set()

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The model's deadlines in ``s`` (memoised; deadlines are asked for often)."""
        got = self._dl_cache.get(s)
        if got is None:
            if len(self._dl_cache) > 65536:
                self._dl_cache.clear()
            got = self.model.deadlines(s)
            self._dl_cache[s] = got
        return got

    # ---- clocks of a state ------------------------------------------------------------
    def clockset(self, mask: int) -> tuple[tuple[int, ...], dict[int, int], list[int], list[int]]:
        got = self._clockset_cache.get(mask)
        if got is None:
            clocks = _bits(mask)
            need = (len(clocks) + 1) ** 2 * 8 / 2**20
            budget = self.limits.max_memory_mb or MAX_ZONE_MB
            if need > budget:
                raise _Limit(f"memory limit: one zone over {len(clocks)} live clocks needs"
                             f" {need:,.0f} MiB")
            pos = {c: k + 1 for k, c in enumerate(clocks)}
            lower = [-1] + [self.live.lower[c] for c in clocks]
            upper = [-1] + [self.live.upper[c] for c in clocks]
            got = (clocks, pos, lower, upper)
            self._clockset_cache[mask] = got
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
                ok = dbm.constrain(z, n, i, 0, dbm.bound(b, False))
            elif op == LT:
                ok = dbm.constrain(z, n, i, 0, dbm.bound(b, True))
            elif op == GE:
                ok = dbm.constrain(z, n, 0, i, dbm.bound(-b, False))
            else:
                ok = dbm.constrain(z, n, 0, i, dbm.bound(-b, True))
            if not ok:
                return False
        return True

    def close(self, s: State, z: dbm.Dbm, n: int, pos: dict[int, int]) -> bool:
        """Apply deadlines, let time pass, re-apply deadlines (in place)."""
        inv = self.deadlines(s)
        if not self.constrain_atoms(z, n, pos, inv):
            return False
        dbm.up(z, n)
        return self.constrain_atoms(z, n, pos, inv)

    def extrapolate(self, s: State, z: dbm.Dbm, n: int, pos: dict[int, int],
                    lower: list[int], upper: list[int]) -> None:
        """Abstract ``z`` by the clocks' constants, keeping it inside the deadlines."""
        if self.options.deadlock:
            _extrapolate_m(z, n, [max(a, b) for a, b in zip(lower, upper, strict=True)])
        else:
            dbm.extrapolate_lu(z, n, lower, upper)
        self.constrain_atoms(z, n, pos, self.deadlines(s))

    # ---- symmetry ----------------------------------------------------------------------
    def canonical(self, s: State, z: dbm.Dbm, mask: int) -> tuple[State, dbm.Dbm, int]:
        """The representative of (s, z): the least image under the symmetries.

        The least discrete image and the permutations reaching it are memoised per
        discrete state; among those, the least permuted zone wins.
        """
        if not self.syms:
            return s, z, -1
        got = self._canon_cache.get(s)
        if got is None:
            best_s, ks = s, [-1]
            for k, sym in enumerate(self.syms):
                t = sym.state(s)
                if t < best_s:
                    best_s, ks = t, [k]
                elif t == best_s:
                    ks.append(k)
            got = (best_s, ks)
            if len(self._canon_cache) > 1 << 17:
                self._canon_cache.clear()
            self._canon_cache[s] = got
        best_s, ks = got
        if ks == [-1]:
            return s, z, -1
        clocks = self.clockset(mask)[0]
        n = len(clocks) + 1
        best_z: dbm.Dbm | None = None
        best_key: tuple[int, ...] | None = None
        best_k = -1
        new_mask = 0
        for k in ks:
            if k < 0:
                tz, tmask = z, mask
            else:
                sym = self.syms[k]
                new_clocks = sorted(sym.clocks[c] for c in clocks)
                where = {c: i + 1 for i, c in enumerate(new_clocks)}
                tz = dbm.permute(z, n, [0] + [where[sym.clocks[c]] for c in clocks])
                tmask = 0
                for c in new_clocks:
                    tmask |= 1 << c
            tkey = dbm.key(tz)
            if best_key is None or tkey < best_key:
                best_z, best_key, best_k, new_mask = tz, tkey, k, tmask
        assert best_z is not None
        if best_k >= 0 and new_mask != self.live.mask(best_s) and self.live.complete:
            raise AssertionError("the model's symmetries do not preserve clock liveness")
        return best_s, best_z, best_k

    # ---- bookkeeping ------------------------------------------------------------------
    def check_limits(self) -> None:
        """End the run (as inconclusive) at a limit; called for every node stored or
        expanded, so that every limit holds within well under a second."""
        st = self.stats
        if self.limits.max_states is not None and st.zones >= self.limits.max_states:
            raise _Limit(f"state limit ({self.limits.max_states}) reached")
        now = time.monotonic()
        if self.deadline_t is not None and now > self.deadline_t:
            raise _Limit(f"time limit ({self.limits.timeout:g} s) reached")
        self._checks += 1
        mem = self.limits.max_memory_mb
        if mem is not None and self._checks % 256 == 0 and _peak_rss_mb() > mem:
            raise _Limit(f"memory limit ({mem} MiB) reached")
        if (self.options.progress is not None
                and now - self.last_progress >= self.options.progress_interval):
            self.last_progress = now
            self.stats.seconds = now - self.start
            self.options.progress(self.stats)

    def store(self, s: State, z: dbm.Dbm, n: int, parent: int, event: int, branch: int,
              sym: int, depth: int) -> int | None:
        """Store a symbolic state unless subsumed; returns its node id."""
        zones = self.passed.get(s)
        if zones is None:
            zones = []
            self.passed[s] = zones
            self.stats.states += 1
        else:
            for k in zones:
                if dbm.includes(self.node_zone[k], z, n):
                    self.subsumer = k
                    return None
            # Drop stored zones the new one includes (they stay explored).
            zones[:] = [k for k in zones if not dbm.includes(z, self.node_zone[k], n)]
        node = self.new_node(s, z, parent, event, branch, sym, depth)
        zones.append(node)
        self.stats.zones += 1
        if depth > self.stats.depth:
            self.stats.depth = depth
        self.check_limits()
        return node

    def new_node(self, s: State, z: dbm.Dbm, parent: int, event: int, branch: int, sym: int,
                 depth: int) -> int:
        """Record a node (for the search and for traces); returns its id."""
        node = len(self.node_state)
        self.node_state.append(s)
        self.node_zone.append(z)
        self.node_parent.append(parent)
        self.node_event.append(event)
        self.node_branch.append(branch)
        self.node_sym.append(sym)
        self.node_depth.append(depth)
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
            _down(enabled, n)
            nxt: list[dbm.Dbm] = []
            for piece in rest:
                nxt.extend(dbm.subtract(piece, enabled, n))
            rest = nxt
            if not rest:
                return False
        return bool(rest)

    # ---- the search ---------------------------------------------------------------------
    def prepare(self) -> None:
        """The clock-liveness pre-pass (when clock reduction is on)."""
        if self.options.clock_reduction:
            # The untimed pass over-approximates the discrete states; give it room.
            ms = self.limits.max_states
            cap = None if ms is None else max(10_000, 50 * ms)
            self.live = _liveness(self.model, self.bounds, cap, self.deadline_t, self.syms,
                                  self._edge_cache, self.limits.max_memory_mb)

    def run(self) -> CheckResult:
        try:
            self.prepare()
            return self._run()
        except _Limit as lim:
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
            for i, (s, z) in enumerate(zip(self.node_state, self.node_zone, strict=True)):
                clocks = self.clockset(self.live.mask(s))[0]
                n = len(clocks) + 1
                del i
                nodes.append((s, dbm.to_str(z, n, [names[0], *(names[c + 1] for c in clocks)])))
            path: list[int] = []
            if res.trace:
                k = len(self.node_state) - 1
                while k != -1:
                    path.append(k)
                    k = self.node_parent[k]
            res.graph = StateGraph(nodes, list(self.graph_edges), path[::-1])
        self.stats.seconds = time.monotonic() - self.start
        self.stats.peak_memory_mb = _peak_rss_mb()
        res.stats = self.stats
        res.scale = self.scale
        res.fired = frozenset(self.fired)
        return res

    def violation(self, node: int, prop: str, message: str,
                  extra: tuple[int, int] | None = None) -> CheckResult:
        trace = self.trace(node, extra)
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
                n = len(self.model.clock_names) + 1
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
            mask = self.live.mask(s0)
            clocks, pos, lower, upper = self.clockset(mask)
            n = len(clocks) + 1
            z = dbm.zero(n)
            start = [TraceStep(None, "initial", None, s0)]
            try:
                if not self.close(s0, z, n, pos):
                    return self.finish(CheckResult(
                        ERROR, "model error",
                        "the initial state breaks a deadline: time cannot even start", start))
                bad = self.state_violation(s0, z, n, pos)
            except ModelRuntimeError as err:
                return self.finish(CheckResult(ERROR, "model error", err.message, start))
            self.extrapolate(s0, z, n, pos, lower, upper)
            cs, cz, k = self.canonical(s0, z, mask)
            node = self.store(cs, cz, n, -1, -1, 0, k, 0)
            if node is None:
                continue
            if bad is not None:
                return self.violation(node, *bad)
            frontier.append(node)
        pop = frontier.popleft if self.options.search == "bfs" else frontier.pop
        while frontier:
            self.stats.queued = len(frontier)
            node = pop()
            self.current = node
            self.check_limits()
            s = self.node_state[node]
            z = self.node_zone[node]
            mask = self.live.mask(s)
            clocks, pos, lower, upper = self.clockset(mask)
            n = len(clocks) + 1
            try:
                edges = self._edge_cache.get(s)
                if edges is None:
                    edges = model.edges(s)
                    if len(self._edge_cache) > EDGE_CACHE:
                        self._edge_cache.clear()
                    self._edge_cache[s] = edges
            except ModelRuntimeError as err:
                return self.finish(
                    CheckResult(ERROR, "model error", err.message, self.trace(node))
                )
            if self.options.deadlock and self.deadlocked(s, z, n, pos, edges):
                return self.violation(
                    node, "deadlock",
                    "no event can fire and time cannot pass",
                )
            seen: dict[int, int] = {}
            for e in edges:
                branch = seen.get(e.event, 0)
                seen[e.event] = branch + 1
                g = list(z)
                if not self.constrain_atoms(g, n, pos, e.guard):
                    continue
                self.stats.transitions += 1
                if e.failure is not None:
                    return self.violation(node, "assert", e.failure, (e.event, branch))
                t = e.target
                tmask = self.live.mask(t)
                tclocks, tpos, tlower, tupper = self.clockset(tmask)
                m = len(tclocks) + 1
                resets = set(e.resets)
                keep = [c for c in clocks if c in tpos and c not in resets]
                zp = dbm.project(g, n, [pos[c] for c in keep])
                old_to_new = [0] + [tpos[c] for c in keep]
                tz = dbm.embed(zp, len(keep) + 1, old_to_new, m)
                try:
                    if not self.close(t, tz, m, tpos):
                        continue
                    self.fired.add(e.event)
                    bad = self.state_violation(t, tz, m, tpos)
                except ModelRuntimeError as err:
                    # A fault of the target state: the run to it ends with this edge.
                    return self.finish(CheckResult(ERROR, "model error", err.message,
                                                   self.trace(node, (e.event, branch))))
                self.extrapolate(t, tz, m, tpos, tlower, tupper)
                cs, cz, k = self.canonical(t, tz, tmask)
                child = self.store(cs, cz, m, node, e.event, branch, k,
                                   self.node_depth[node] + 1)
                if self.options.record_graph:
                    target = child if child is not None else self.subsumer
                    self.graph_edges.append((node, target, self.model.event_names[e.event]))
                if bad is not None:
                    if child is None:
                        # Subsumed, but still the first state found breaking the property.
                        child = self.new_node(cs, cz, node, e.event, branch, k,
                                              self.node_depth[node] + 1)
                    return self.violation(child, *bad)
                if child is None:
                    continue
                frontier.append(child)
        # Without a complete liveness pass every clock stayed live: still exact.
        return self.finish(CheckResult(HOLDS))

    # ---- traces -------------------------------------------------------------------------------
    def trace(self, node: int, extra: tuple[int, int] | None = None) -> list[TraceStep]:
        """The concrete trace to ``node`` (undoing symmetry), then the edge ``extra``
        (event and branch of the representative) if given.

        Each step of the path was taken from a representative; the concrete run takes
        the image of that edge: the image event, with the image of its clock guard
        (a permutation may also permute the convex branches of a guard).
        """
        path: list[int] = []
        k = node
        while k != -1:
            path.append(k)
            k = self.node_parent[k]
        path.reverse()
        n_events = len(self.model.event_names)
        n_clocks = len(self.model.clock_names)

        def inverse(m: Sequence[int]) -> list[int]:
            inv = [0] * len(m)
            for a, b in enumerate(m):
                inv[b] = a
            return inv

        def sym_maps(k: int) -> tuple[list[int], list[int]]:
            if k < 0:
                return list(range(n_events)), list(range(n_clocks))
            return list(self.syms[k].events), list(self.syms[k].clocks)

        def concrete(rep_state: State, event: int, branch: int, s: State,
                     tau: list[int], tau_c: list[int]) -> Edge:
            rep_edge = [e for e in self.model.edges(rep_state) if e.event == event][branch]
            want = sorted((tau_c[a.clock], a.op, a.bound) for a in rep_edge.guard)
            ev = tau[event]
            candidates = [e for e in self.model.edges(s) if e.event == ev]
            for e in candidates:
                if sorted((a.clock, a.op, a.bound) for a in e.guard) == want:
                    return e
            return candidates[branch]  # pragma: no cover - images always exist

        # tau / tau_c map events / clocks of representatives to the concrete run's.
        ev_map, ck_map = sym_maps(self.node_sym[path[0]])
        tau, tau_c = inverse(ev_map), inverse(ck_map)
        s = self.model.initial_states()[0]
        steps = [TraceStep(None, "initial", None, s)]
        for prev_id, node_id in itertools.pairwise(path):
            edge = concrete(self.node_state[prev_id], self.node_event[node_id],
                            self.node_branch[node_id], s, tau, tau_c)
            s = edge.target
            steps.append(TraceStep(edge.event, self.model.event_names[edge.event], edge, s))
            ev_map, ck_map = sym_maps(self.node_sym[node_id])
            sinv, cinv = inverse(ev_map), inverse(ck_map)
            tau = [tau[sinv[e]] for e in range(n_events)]
            tau_c = [tau_c[cinv[c]] for c in range(n_clocks)]
        if extra is not None:
            edge = concrete(self.node_state[path[-1]], extra[0], extra[1], s, tau, tau_c)
            steps.append(TraceStep(edge.event, self.model.event_names[edge.event], edge,
                                   edge.target))
        return steps


def replay_zone(model: TimedModel, bounds: Sequence[int], trace: Sequence[TraceStep]
                ) -> dbm.Dbm | None:
    """The exact zone (over every clock) at the end of ``trace``, or None if infeasible."""
    n = len(model.clock_names) + 1
    z = dbm.zero(n)

    def apply(atoms: Sequence[ClockAtom]) -> bool:
        for a in atoms:
            b = bounds[a.bound]
            i = a.clock + 1
            if a.op in (LE, LT):
                ok = dbm.constrain(z, n, i, 0, dbm.bound(b, a.op == LT))
            else:
                ok = dbm.constrain(z, n, 0, i, dbm.bound(-b, a.op == GT))
            if not ok:
                return False
        return True

    def settle(s: State) -> bool:
        inv = model.deadlines(s)
        if not apply(inv):
            return False
        dbm.up(z, n)
        return apply(inv)

    if not settle(trace[0].state):
        return None
    for step in trace[1:]:
        assert step.edge is not None
        if not apply(step.edge.guard):
            return None
        if step.edge.failure is not None:
            return z
        for c in step.edge.resets:
            dbm.reset(z, n, c + 1)
        if not settle(step.state):
            return None
    return z


def explore(model: TimedModel, limits: Limits | None = None,
            options: Options | None = None) -> CheckResult:
    """Explore ``model`` and check every property; see :class:`CheckResult`."""
    return _Explorer(model, limits or Limits(), options or Options()).run()

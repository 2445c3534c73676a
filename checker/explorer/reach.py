"""The one symbolic reachability loop, shared by ``check`` and ``prove``/``synth``.

A symbolic state is a discrete state and a *zone*: a convex set of clock
valuations (a DBM in the zone explorer, :mod:`checker.explorer.zones`) or of
clock and parameter valuations (a polyhedron in the parametric explorer,
:mod:`checker.smt.synth`).  Both explore the same way:

1. the initial states, every clock at zero, closed under the deadlines and time
   elapse;
2. a node taken from the *waiting list* (:class:`Waiting`: breadth- or
   depth-first) is expanded: each edge's guard is intersected with its zone, the
   edge's resets applied, the zone moved to the target's live clocks and closed
   (deadlines, elapse, deadlines);
3. the successor is checked (the explorer's :class:`Goal`), abstracted
   (extrapolation; nothing for polyhedra), replaced by a canonical image under
   the symmetries, and stored unless a stored zone of the same discrete state
   includes it (:class:`Passed`); stored zones it includes are retired.

What is checked, and what ends the search, is the goal's business: the zone
explorer stops at the first violation with its trace; the parametric explorer
records the parameters of every violation and goes on.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from checker.explorer.limits import LimitHit, LimitKind, Limits, peak_rss_mb
from checker.model.interface import ClockAtom, Edge, State, Symmetry, TimedModel

Z = TypeVar("Z")
"""A zone."""
F = TypeVar("F")
"""What a zone domain knows of one discrete state (its live clocks, constants...)."""
R = TypeVar("R")
"""What a search returns."""


class ZoneDomain(Protocol[Z, F]):
    """The operations on zones the reachability loop needs.

    Every operation gets the *frame* of the discrete state the zone belongs to
    (:meth:`frame`): the zone's clocks are that state's live clocks."""

    def frame(self, s: State) -> F:
        """What the operations need to know of ``s``."""
        ...

    def zero(self, f: F) -> Z:
        """The zone where every clock (and nothing else) is zero."""
        ...

    def constrain(self, f: F, z: Z, atoms: Sequence[ClockAtom]) -> Z | None:
        """``z`` intersected with the clock atoms (a new zone), None if empty."""
        ...

    def reset(self, f: F, z: Z, e: Edge, tf: F) -> Z | None:
        """``z`` after the resets of ``e``, over the live clocks of its target
        (frame ``tf``): clocks that die are forgotten, clocks that are born or
        reset are zero."""
        ...

    def close(self, f: F, z: Z) -> Z | None:
        """``z`` under the deadlines of its state, let time pass, deadlines again;
        None if ``z`` breaks the deadlines."""
        ...

    def includes(self, f: F, big: Z, small: Z) -> bool:
        """Whether ``big`` includes ``small``."""
        ...

    def extrapolate(self, f: F, z: Z) -> Z:
        """An abstraction of ``z`` that keeps reachability (may work in place)."""
        ...

    def canonical(self, f: F, z: Z) -> tuple[State, Z, Symmetry | None]:
        """A canonical image of (state, ``z``) under the symmetries, and the
        permutation that gives it (None: the identity)."""
        ...


class Waiting(Protocol):
    """The waiting list: the stored nodes still to be expanded."""

    def push(self, node: int) -> None:
        """Add a node."""
        ...

    def pop(self) -> int:
        """Take the next node to expand."""
        ...

    def __len__(self) -> int: ...


class BreadthFirst:
    """First in, first out: the first violation found has a shortest trace."""

    def __init__(self) -> None:
        self._q: deque[int] = deque()
        self.push = self._q.append
        self.pop = self._q.popleft

    def __len__(self) -> int:
        return len(self._q)


class DepthFirst:
    """Last in, first out."""

    def __init__(self) -> None:
        self._q: list[int] = []
        self.push = self._q.append
        self.pop = self._q.pop

    def __len__(self) -> int:
        return len(self._q)


def waiting_list(order: str) -> Waiting:
    """The waiting list for a search order: ``bfs`` or ``dfs``."""
    if order == "bfs":
        return BreadthFirst()
    if order == "dfs":
        return DepthFirst()
    raise ValueError(f"unknown search order {order!r}")


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
    deadlock of the LU abstraction (see :mod:`checker.explorer.search`)."""

    @property
    def states_per_second(self) -> float:
        """Zones stored per second of run time."""
        return self.zones / self.seconds if self.seconds > 0 else 0.0


class Passed(Generic[Z, F]):
    """The stored symbolic states, with inclusion covering, and every node's
    parent pointer (for traces).

    A new zone included in a stored one of the same discrete state is not stored;
    stored zones the new one includes are retired.  ``keep_shallower`` keeps a
    retired node that is still waiting, and shallower than the new one, waiting:
    breadth-first search then still finds shortest traces."""

    def __init__(self, includes: Callable[[F, Z, Z], bool], keep_shallower: bool) -> None:
        self.includes = includes
        self.keep_shallower = keep_shallower
        self.state: list[State] = []
        self.zone: list[Z] = []
        self.parent: list[int] = []
        self.event: list[int] = []
        self.branch: list[int] = []
        self.sym: list[Symmetry | None] = []
        self.depth: list[int] = []
        self.alive = bytearray()
        """0 for a node retired before it was expanded."""
        self.by_state: dict[State, list[int]] = {}
        self.subsumer = -1
        """The stored node that covered the last zone :meth:`add` refused."""

    def node(self, s: State, z: Z, parent: int, event: int, branch: int,
             sym: Symmetry | None, depth: int) -> int:
        """Record a node (for the search and for traces) without storing it; its id."""
        k = len(self.state)
        self.state.append(s)
        self.zone.append(z)
        self.parent.append(parent)
        self.event.append(event)
        self.branch.append(branch)
        self.sym.append(sym)
        self.depth.append(depth)
        self.alive.append(1)
        return k

    def add(self, f: F, s: State, z: Z, parent: int, event: int, branch: int,
            sym: Symmetry | None, depth: int, stats: Stats) -> int | None:
        """Store (s, z) unless covered; its node id, or None (:attr:`subsumer` then
        names the covering node)."""
        zones = self.by_state.get(s)
        if zones is None:
            zones = []
            self.by_state[s] = zones
            stats.states += 1
        else:
            includes = self.includes
            node_zone = self.zone
            for k in zones:
                if includes(f, node_zone[k], z):
                    self.subsumer = k
                    return None
            retired = [k for k in zones if includes(f, z, node_zone[k])]
            if retired:
                alive = self.alive
                node_depth = self.depth
                for k in retired:
                    if not self.keep_shallower or node_depth[k] >= depth:
                        alive[k] = 0
                stats.zones -= len(retired)
                gone = set(retired)
                zones[:] = [k for k in zones if k not in gone]
        node = self.node(s, z, parent, event, branch, sym, depth)
        zones.append(node)
        stats.zones += 1
        stats.stored += 1
        if depth > stats.depth:
            stats.depth = depth
        return node

    def path(self, node: int) -> list[int]:
        """The nodes from an initial one to ``node``."""
        out: list[int] = []
        while node != -1:
            out.append(node)
            node = self.parent[node]
        return out[::-1]


class Reachability(Generic[Z, F, R]):
    """The reachability loop over a :class:`ZoneDomain`; subclasses say what to
    check and when to stop (the hooks below), the loop owns the waiting list, the
    store, the statistics and the limits."""

    def __init__(self, model: TimedModel, zones: ZoneDomain[Z, F], limits: Limits,
                 order: str = "bfs", keep_shallower: bool = True,
                 progress: Callable[[Stats], None] | None = None,
                 progress_interval: float = 1.0, start: float | None = None) -> None:
        self.model = model
        self.zones = zones
        self.limits = limits
        self.order = order
        self.keep_shallower = keep_shallower
        self.progress = progress
        self.progress_interval = progress_interval
        self.start = time.monotonic() if start is None else start
        ends = [t for t in (limits.deadline,
                            self.start + limits.timeout if limits.timeout is not None else None)
                if t is not None]
        self.deadline_t = min(ends) if ends else None
        self.record = False
        """Keep every explored edge in :attr:`graph_edges` (for ``kvrace graph``)."""
        self.reset_search()

    def reset_search(self) -> None:
        """Forget every stored node (a fresh start)."""
        self.stats = Stats()
        self.passed: Passed[Z, F] = Passed(self.zones.includes, self.keep_shallower)
        self.waiting = waiting_list(self.order)
        self.graph_edges: list[tuple[int, int, str]] = []
        self.current = -1
        """The node being expanded (for errors raised while expanding it)."""
        self.initial_state: State | None = None
        """The initial state being entered (for errors raised before any expansion)."""
        self.current_edge: tuple[int, int] | None = None
        """The edge (event, branch) of :attr:`current` whose target is being entered."""
        self.last_progress = time.monotonic()
        self._checks = 0

    # ---- hooks ----------------------------------------------------------------------------
    def edges(self, s: State) -> Sequence[Edge]:
        """The edges out of ``s`` (a subclass may memoise)."""
        return self.model.edges(s)

    def initial(self, s: State, f: F) -> Z | None:
        """The initial zone of ``s``, closed; None to skip ``s``."""
        return self.zones.close(f, self.zones.zero(f))

    def arrive(self, s: State, f: F, z: Z, parent: int, edge: Edge | None) -> object:
        """Check a new symbolic state (its exact zone, before extrapolation); what is
        returned is handed to :meth:`stored`."""
        return None

    def stored(self, node: int | None, s: State, f: F, z: Z, sym: Symmetry | None,
               parent: int, edge: Edge | None, branch: int, depth: int,
               found: object) -> R | None:
        """After storing (``node`` None: covered); a result ends the search.  Push
        the node on :attr:`waiting` to have it expanded."""
        if node is not None:
            self.waiting.push(node)
        return None

    def expand(self, node: int, s: State, f: F, z: Z) -> R | bool:
        """Before expanding ``node``: a result ends the search; False skips it."""
        return True

    def failure(self, node: int, f: F, g: Z, e: Edge, branch: int) -> R | None:
        """An edge that breaks an ``assert`` fires from ``node`` (``g``: where)."""
        return None

    def exhausted(self) -> R:
        """Every reachable symbolic state was explored."""
        raise NotImplementedError

    # ---- the loop -------------------------------------------------------------------------
    def tick(self) -> None:
        """End the run (as inconclusive) at a limit; called for every node stored or
        expanded, so that every limit holds within well under a second."""
        st = self.stats
        lim = self.limits
        if lim.max_states is not None and st.stored >= lim.max_states:
            raise LimitHit(f"state limit ({lim.max_states}) reached", LimitKind.STATES)
        now = time.monotonic()
        if self.deadline_t is not None and now > self.deadline_t:
            raise LimitHit(f"time limit ({lim.timeout:g} s) reached" if lim.timeout is not None
                           else "time limit reached", LimitKind.TIME)
        self._checks += 1
        mem = lim.max_memory_mb
        if mem is not None and self._checks % 256 == 0 and peak_rss_mb() > mem:
            raise LimitHit(f"memory limit ({mem} MiB) reached", LimitKind.MEMORY)
        if self.progress is not None and now - self.last_progress >= self.progress_interval:
            self.last_progress = now
            st.seconds = now - self.start
            st.queued = len(self.waiting)
            self.progress(st)

    def generate(self, s: State, f: F, z: Z, parent: int, edge: Edge | None, branch: int,
                 depth: int) -> R | None:
        """Check, abstract, canonicalise and store a new symbolic state."""
        zones = self.zones
        found = self.arrive(s, f, z, parent, edge)
        z = zones.extrapolate(f, z)
        cs, cz, sym = zones.canonical(f, z)
        event = -1 if edge is None else edge.event
        node = self.passed.add(f, cs, cz, parent, event, branch, sym, depth, self.stats)
        if node is not None:
            self.tick()
        if self.record and edge is not None:
            self.graph_edges.append((parent, node if node is not None else self.passed.subsumer,
                                     self.model.event_names[edge.event]))
        return self.stored(node, cs, f, cz, sym, parent, edge, branch, depth, found)

    def search(self) -> R:
        """Explore from the initial states until a hook ends the search or nothing
        is left to expand."""
        zones = self.zones
        for s0 in self.model.initial_states():
            self.initial_state = s0
            f0 = zones.frame(s0)
            z0 = self.initial(s0, f0)
            if z0 is None:
                continue
            got = self.generate(s0, f0, z0, -1, None, 0, 0)
            if got is not None:
                return got
        passed = self.passed
        alive = passed.alive
        node_state, node_zone, node_depth = passed.state, passed.zone, passed.depth
        waiting = self.waiting
        stats = self.stats
        constrain = zones.constrain
        while waiting:
            node = waiting.pop()
            if not alive[node]:
                continue
            stats.explored += 1
            self.current = node
            self.tick()
            s = node_state[node]
            z = node_zone[node]
            f = zones.frame(s)
            go = self.expand(node, s, f, z)
            if go is not True:
                if go is False:
                    continue
                return go
            depth = node_depth[node] + 1
            seen: dict[int, int] = {}
            for e in self.edges(s):
                branch = seen.get(e.event, 0)
                seen[e.event] = branch + 1
                g = constrain(f, z, e.guard)
                if g is None:
                    continue
                stats.transitions += 1
                if e.failure is not None:
                    got = self.failure(node, f, g, e, branch)
                    if got is not None:
                        return got
                    continue
                self.current_edge = (e.event, branch)
                t = e.target
                tf = zones.frame(t)
                tz = zones.reset(f, g, e, tf)
                if tz is not None:
                    tz = zones.close(tf, tz)
                if tz is not None:
                    got = self.generate(t, tf, tz, node, e, branch, depth)
                    if got is not None:
                        return got
                self.current_edge = None
        return self.exhausted()

"""Reachability with inclusion covering over a symbolic transition system.

``covreach(ts, store, waiting, goal, budget)`` is the one search loop of
``check`` and ``prove``/``synth`` (TChecker's ``covreach``):

1. the initial nodes of the transition system (:mod:`checker.semantics.ts`) are
   stored and handed to the :class:`Goal`;
2. a node taken from the *waiting list* (:class:`Waiting`: breadth- or
   depth-first) is offered to the goal, then expanded: each successor
   :meth:`~checker.semantics.ts.SymbolicTS.next` yields is stored unless a stored
   zone of the same discrete state includes it (:class:`Passed`; the stored zones
   it includes are retired, and with a merge operation it is merged with the zones
   whose union with it is a zone), and handed to the goal with its labels;
3. the goal decides what a labelled successor means: whether it is queued,
   whether the search ends (the zone explorer stops at the first violation; the
   parametric explorer collects the parameters of every violation and goes on).

Every limit (states, time, memory) is one :class:`Budget`, checked for every node
stored or expanded, so each holds within well under a second.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from checker.limits import Budget
from checker.model.interface import State, Symmetry
from checker.semantics.ts import Status, Succ, SymbolicTS

Z = TypeVar("Z")
"""A zone."""
R = TypeVar("R")
"""What a search returns."""
R_co = TypeVar("R_co", covariant=True)

__all__ = ["BreadthFirst", "Budget", "DepthFirst", "Goal", "Passed", "Stats", "Waiting",
           "covreach", "waiting_list"]


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
    merges: int = 0
    """Merges of a new zone with a stored one of its discrete state whose union with it
    is a zone (see :class:`Passed`)."""
    extrapolation: str = "lu"
    """The abstraction the final run used: ``lu``, or ``m`` after an unconfirmed
    deadlock of the LU abstraction (see :mod:`checker.engines.search`)."""

    @property
    def states_per_second(self) -> float:
        """Zones stored per second of run time."""
        return self.zones / self.seconds if self.seconds > 0 else 0.0

    @classmethod
    def total(cls, parts: Sequence[Stats]) -> Stats:
        """The statistics of a run split in ``parts`` (the workers of a distributed
        run): counts summed, the deepest depth."""
        st = cls()
        for w in parts:
            st.states += w.states
            st.zones += w.zones
            st.transitions += w.transitions
            st.stored += w.stored
            st.explored += w.explored
            st.depth = max(st.depth, w.depth)
        return st


class Passed(Generic[Z]):
    """The stored symbolic states, with inclusion covering, every node's parent
    pointer (for traces) and the statistics of what was stored.

    A new zone included in a stored one of the same discrete state is not stored;
    stored zones the new one includes are retired.  ``keep_shallower`` keeps a
    retired node that is still waiting, and shallower than the new one, waiting:
    breadth-first search then still finds shortest traces.

    ``merge`` (optional) is the union of two zones of a discrete state when that union
    is itself a zone, else None.  With it, a new zone is first merged with every
    stored zone of its discrete state that is still waiting (not expanded) and that
    it can be merged with: the earliest of those holds the union from then on (it
    keeps its place in the waiting list; :meth:`add` returns it, and a goal that
    queues it again finds it skipped once expanded), the others are retired.  That
    zone (or union) is then merged with the expanded stored zones it can be merged
    with (and with the waiting ones the growing union now meets), as IMITATOR merges
    a new state with visited ones: the earliest expanded part holds the union in the
    store, so that later zones it includes are covered, while the parts not expanded
    yet leave the store but stay queued, each to be expanded with its own zone (the
    new zone is stored for that, out of the store's zones: :meth:`add` returns it),
    so no expanded zone is expanded again.  A zone out of the store is never
    retired, so every stored zone is the union of valuations expanded or queued.
    The set of valuations stored is the same, in fewer symbolic states.  A merged
    node keeps its parent, so its path is not a run to every valuation of it: a
    search with merging gives no traces."""

    def __init__(self, includes: Callable[[State, Z, Z], bool], keep_shallower: bool,
                 merge: Callable[[State, Z, Z], Z | None] | None = None,
                 released: Z | None = None) -> None:
        if merge is not None and released is not None:
            raise ValueError("a store that merges zones keeps every zone")
        self.includes = includes
        self.keep_shallower = keep_shallower
        self.merge = merge
        self.released = released
        """What the zone of a retired node is replaced by once the search cannot need it
        any more (the node will not be expanded, or has been); None keeps every zone
        (the state graph points an edge to a retired node at a zone including it)."""
        self.stats = Stats()
        # One column per node field: arrays of machine ints rather than lists of int
        # objects (a node costs tens of bytes, not hundreds).
        self.state: list[State] = []
        """Each node's discrete state: one tuple per discrete state stored, shared by
        its nodes."""
        self.zone: list[Z] = []
        self.parent = array("q")
        self.event = array("i")
        self.branch = array("i")
        self.sym: list[Symmetry | None] = []
        self.depth = array("i")
        self.alive = bytearray()
        """0 for a node retired before it was expanded."""
        self.expanded = bytearray()
        """1 for a node the search has expanded."""
        self.by_state: dict[State, list[int]] = {}
        self.held: set[int] = set()
        """Retired nodes still waiting (shallower than the zone that retired them): their
        zones are released once they are expanded (with :attr:`released`)."""
        self.subsumer = -1
        """The stored node that covered the last zone :meth:`add` refused."""

    def record(self, s: State, z: Z, parent: int, event: int, branch: int,
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
        self.expanded.append(0)
        return k

    def node(self, succ: Succ[Z], parent: int, depth: int) -> int:
        """Record a successor without storing it (it is covered, but still the first
        one found with its labels); its id."""
        e = succ.edge
        return self.record(succ.state, succ.zone, parent, -1 if e is None else e.event,
                           succ.branch, succ.sym, depth)

    def add(self, succ: Succ[Z], parent: int, depth: int) -> int | None:
        """Store a successor unless covered; its node id, or None (:attr:`subsumer`
        then names the covering node)."""
        e = succ.edge
        return self.insert(succ.state, succ.zone, parent, -1 if e is None else e.event,
                           succ.branch, succ.sym, depth)

    def insert(self, s: State, z: Z, parent: int, event: int, branch: int,
               sym: Symmetry | None, depth: int) -> int | None:
        """:meth:`add`, given the parts of a successor."""
        stats = self.stats
        zones = self.by_state.get(s)
        if zones is None:
            zones = []
            self.by_state[s] = zones
            stats.states += 1
        elif zones:
            s = self.state[zones[0]]  # the state's one tuple
            includes = self.includes
            node_zone = self.zone
            for k in zones:
                if includes(s, node_zone[k], z):
                    self.subsumer = k
                    return None
            retired = [k for k in zones if includes(s, z, node_zone[k])]
            if retired:
                self._retire(zones, retired, depth)
        if self.merge is not None:
            z, kept, held = self._merged(s, z, zones, depth)
            if kept is not None:
                return kept
            if held:
                # An expanded zone holds the union: this part is stored and expanded
                # on its own, out of the store.
                node = self.record(s, z, parent, event, branch, sym, depth)
                stats.stored += 1
                if depth > stats.depth:
                    stats.depth = depth
                return node
        node = self.record(s, z, parent, event, branch, sym, depth)
        zones.append(node)
        stats.zones += 1
        stats.stored += 1
        if depth > stats.depth:
            stats.depth = depth
        return node

    def _retire(self, zones: list[int], retired: list[int], depth: int) -> None:
        """Retire stored nodes of one discrete state (``zones``, updated) that a new zone
        at ``depth`` includes."""
        alive = self.alive
        node_depth = self.depth
        released = self.released
        for k in retired:
            if not self.keep_shallower or node_depth[k] >= depth:
                alive[k] = 0
            elif not self.expanded[k]:
                if released is not None:
                    self.held.add(k)  # still to be expanded, from its zone
                continue
            if released is not None:
                self.zone[k] = released
        self.stats.zones -= len(retired)
        gone = set(retired)
        zones[:] = [k for k in zones if k not in gone]

    def _merged(self, s: State, z: Z, zones: list[int], depth: int
                ) -> tuple[Z, int | None, bool]:
        """``z`` merged with the stored zones of ``s`` it can be merged with: first
        with every waiting one (the earliest of them, still queued, holds the union;
        the others are retired), then, with its union, with every expanded one (and
        the waiting ones that union now meets).  Every stored zone a union includes
        is retired too.  Returns ``z`` (or the union of the waiting zones it was merged
        with), the node that holds it (None: none yet), and whether an expanded zone
        now holds a larger union — then that node is still to be expanded, out of the
        store (the caller records ``z`` as one when no node holds it)."""
        kept = self._merge_into(s, z, zones, depth, waiting_only=True)
        if kept is not None:
            z = self.zone[kept]
            zones.remove(kept)
            self.stats.zones -= 1
        held = self._merge_into(s, z, zones, depth, waiting_only=False, pending=kept)
        if kept is not None and held is None:
            zones.append(kept)
            zones.sort()
            self.stats.zones += 1
        return z, kept, held is not None

    def _merge_into(self, s: State, z: Z, zones: list[int], depth: int,
                    waiting_only: bool, pending: int | None = None) -> int | None:
        """Merge ``z`` with the stored zones of ``s`` (``zones``, updated) to a
        fixpoint: with ``waiting_only``, the waiting ones, the earliest of which holds
        the union (and is returned); else all of them, once one is expanded: the
        earliest expanded one holds the union (and is returned), and the waiting
        ones merged into it leave the store but stay queued (as does ``pending``, the
        node holding ``z``), their valuations not expanded yet.  None: no merge (or,
        without ``waiting_only``, none with an expanded zone; then nothing changes)."""
        merge = self.merge
        assert merge is not None
        includes = self.includes
        node_zone = self.zone
        expanded = self.expanded
        parts: list[int] = []
        zs = [z]
        grown = True
        while grown:
            grown = False
            for k in zones:
                if k in parts or (waiting_only and expanded[k]):
                    continue
                if not waiting_only and not parts and not expanded[k]:
                    continue  # the waiting ones z can be merged with are merged already
                got = merge(s, node_zone[k], zs[-1])
                if got is not None:
                    zs.append(got)
                    parts.append(k)
                    grown = True
                    break
        if not parts:
            return None
        z = zs[-1]
        self.stats.merges += len(parts)
        covered = [j for j in zones if j in parts or includes(s, z, node_zone[j])]
        queued = [k for k in parts if not expanded[k]]
        self._retire(zones, covered, depth)
        if waiting_only:
            kept = min(parts)
        else:
            kept = min(k for k in parts if expanded[k])
            for k in queued:
                self.alive[k] = 1  # out of the store, still queued
            if pending is not None:
                self.alive[pending] = 1
        # Back in: the node that holds the union.
        self.alive[kept] = 1
        node_zone[kept] = z
        zones.append(kept)
        zones.sort()
        self.stats.zones += 1
        return kept

    def release(self, node: int) -> None:
        """A retired node that was still waiting has been expanded: its zone is not
        needed any more."""
        self.held.discard(node)
        if self.released is not None:
            self.zone[node] = self.released

    def path(self, node: int) -> list[int]:
        """The nodes from an initial one to ``node``."""
        out: list[int] = []
        while node != -1:
            out.append(node)
            node = self.parent[node]
        return out[::-1]


class Goal(Protocol[Z, R_co]):
    """What a search is for: what a labelled successor means, and when the search ends.
    It holds the store and the waiting list it was made with, and queues nodes."""

    def reached(self, succ: Succ[Z], node: int | None, parent: int, depth: int
                ) -> R_co | None:
        """A successor of ``parent`` (-1: an initial node), stored as ``node`` (None:
        covered, or not an OK successor, which is never stored); a result ends the
        search.  Queue ``node`` to have it expanded."""
        ...

    def expand(self, node: int) -> R_co | bool:
        """Before expanding ``node``: a result ends the search; False skips it."""
        ...

    def exhausted(self) -> R_co:
        """Every node queued was expanded."""
        ...


def covreach(ts: SymbolicTS[Z], store: Passed[Z], waiting: Waiting, goal: Goal[Z, R],
             budget: Budget) -> R:
    """Explore ``ts`` from its initial nodes until the goal ends the search or nothing
    is left to expand (see the module docstring)."""
    stats = store.stats
    add = store.add
    reached = goal.reached
    tick = budget.tick
    ok = Status.OK
    base = ts.transitions
    try:
        for succ in ts.initial():
            node = add(succ, -1, 0) if succ.status is ok else None
            if node is not None:
                tick(stats, waiting)
            got = reached(succ, node, -1, 0)
            if got is not None:
                return got
        alive, expanded, held = store.alive, store.expanded, store.held
        node_state, node_zone, node_depth = store.state, store.zone, store.depth
        expand = goal.expand
        nxt = ts.next
        while waiting:
            parent = waiting.pop()
            if not alive[parent]:
                continue
            if expanded[parent]:
                continue  # queued again after a merge into it
            stats.explored += 1
            expanded[parent] = 1
            tick(stats, waiting)
            go = expand(parent)
            if go is not True:
                if go is False:
                    continue
                return go
            depth = node_depth[parent] + 1
            zone = node_zone[parent]
            if held and parent in held:
                store.release(parent)
            for succ in nxt(node_state[parent], zone):
                node = add(succ, parent, depth) if succ.status is ok else None
                if node is not None:
                    tick(stats, waiting)
                got = reached(succ, node, parent, depth)
                if got is not None:
                    return got
            stats.transitions = ts.transitions - base
        return goal.exhausted()
    finally:
        stats.transitions = ts.transitions - base

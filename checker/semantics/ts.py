"""The symbolic transition system: what every engine explores.

A node is a discrete state and a *zone* (a DBM here, a polyhedron over clocks
and parameters in :mod:`checker.smt.zones`).  A :class:`SymbolicTS` gives the
initial nodes and the successors of a node (:meth:`SymbolicTS.next`), each a
:class:`Succ`: the target node, the edge that leads there, a :class:`Status`,
and the *labels* of the target (:class:`Label`: the properties it breaks, the
queries it answers).  What a violation is, is decided here, once; the
algorithms (:mod:`checker.algorithms.covreach`, liveness) only decide what to do
with a labelled successor.

The successor of a node by an edge is computed the same way in every domain
(:class:`DomainTS`, over a :class:`ZoneDomain`): the edge's guard intersected
with the zone, the resets applied, the zone moved to the target's live clocks
and closed (deadlines, time elapse, deadlines); then labelled on that exact
zone, abstracted (the :class:`Extrapolation` chosen at construction) and
replaced by its canonical image under the symmetries (the canonizer chosen at
construction, or none).  Another extrapolation is another transition system:
the zone explorer's restart from Extra+_LU to Extra_M builds a new one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from math import isqrt
from typing import Generic, NamedTuple, Protocol, TypeVar

from checker.domains import backend, dbm
from checker.model.interface import (
    ClockAtom,
    Edge,
    ModelRuntimeError,
    State,
    Symmetry,
    TimedModel,
    Violation,
    query_matches,
)
from checker.semantics.canon import Canonizer
from checker.semantics.clockbounds import Liveness
from checker.semantics.zones import DbmZones, Frame

SEARCH_MEMO = 1 << 12
"""How many discrete states' edges (and broken invariants) a :class:`ZoneTS` memoises,
besides those the clock-bounds pass left in a shared edge cache: a search meets the
zones of one state close together, and a larger memo costs more memory (kilobytes a
state) than the model's calls it saves."""

Z = TypeVar("Z")
"""A zone."""
F = TypeVar("F")
"""What a zone domain knows of one discrete state (its live clocks, constants...)."""


class Status(enum.Enum):
    """What kind of successor a :class:`Succ` is."""

    OK = "ok"
    """An ordinary successor."""
    ASSERT = "assert"
    """The edge breaks an ``assert``: its state is the source, its zone where the edge
    fires (no target zone is stored)."""
    TIMELOCK = "timelock"
    """An initial state that breaks a deadline (for the parameters of its labels, in a
    parametric domain): time cannot even start."""


class LabelKind(enum.Enum):
    """What a label says of a state."""

    INVARIANT = "invariant"
    """The state breaks an invariant."""
    HAZARD = "hazard"
    """Some valuation of the zone meets a hazard (a bounded response overdue, ...)."""
    DEADLOCK = "deadlock"
    """The exact (pre-extrapolation) zone holds a deadlocked valuation."""
    QUERY = "query"
    """The state satisfies a ``reachable`` query."""


ALL_LABELS = frozenset(LabelKind)
PROPERTY_LABELS = frozenset({LabelKind.INVARIANT, LabelKind.HAZARD, LabelKind.DEADLOCK})
DEADLOCK_MESSAGE = "no event can fire and time cannot pass"


@dataclass(frozen=True)
class Label:
    """A property a state breaks, or a query it satisfies."""

    kind: LabelKind
    name: str
    """The property or query, as the model names it (``deadlock`` for a deadlock)."""
    message: str = ""
    index: int = -1
    """The query's index in the model's ``query_names`` (QUERY only)."""


class Succ(NamedTuple, Generic[Z]):
    """A successor (or an initial node) of a symbolic transition system.  Immutable; a
    named tuple rather than a frozen dataclass because the search builds one per edge
    taken, and a tuple is built several times faster."""

    state: State
    """The canonical target state (after symmetry, when the system canonicalises)."""
    zone: Z
    """The abstracted (extrapolated) canonical zone: what a store keeps."""
    edge: Edge | None
    """None for an initial state."""
    branch: int
    """The edge's number among the edges of the same event out of its source."""
    sym: Symmetry | None
    """The permutation canonicalisation applied (None: the identity)."""
    status: Status
    labels: tuple[Label, ...]
    """Labels of the EXACT successor zone (before extrapolation)."""
    exact: Z | None = None
    """The exact zone (before extrapolation), when the system was asked to keep it."""
    deferred: Callable[[], tuple[Label, ...]] | None = None
    """Labels computed only when called, for a domain where they are costly and an
    algorithm that needs them only for some successors (the parametric one: for the
    stored ones); the labels of the exact zone of the state before canonicalisation."""


class SymbolicTS(Protocol[Z]):
    """A symbolic transition system over zones ``Z``."""

    @property
    def transitions(self) -> int:
        """Edges taken so far (guard met), including those whose target zone is empty."""
        ...

    def initial(self) -> Iterator[Succ[Z]]:
        """The initial nodes, in the model's order."""
        ...

    def next(self, state: State, zone: Z) -> Iterator[Succ[Z]]:
        """The successors of a node, in the order of the model's edges."""
        ...

    def includes(self, state: State, big: Z, small: Z) -> bool:
        """Whether zone ``big`` of ``state`` includes ``small``."""
        ...

    def equal(self, state: State, a: Z, b: Z) -> bool:
        """Whether two zones of ``state`` are the same set."""
        ...

    def key(self, state: State, zone: Z) -> Hashable:
        """A hashable identity of (state, zone), for equality-keyed stores."""
        ...


class ZoneDomain(Protocol[Z, F]):
    """The operations on zones a :class:`DomainTS` needs.

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


class DomainTS(Generic[Z, F]):
    """The successor relation over a :class:`ZoneDomain`, the same in every domain;
    a subclass says how a state is labelled and how the initial nodes start."""

    def __init__(self, model: TimedModel, zones: ZoneDomain[Z, F]) -> None:
        self.model = model
        self.zones = zones
        self.transitions = 0
        self.at: tuple[int, int] | None = None
        """The edge (event, branch) whose target is being entered, for a model error
        raised meanwhile (the successor being built, or the one last yielded)."""
        self.initial_state: State | None = None
        """The initial state being entered (for a model error raised then)."""

    def edges(self, s: State) -> Sequence[Edge]:
        """The model's edges out of ``s``."""
        return self.model.edges(s)

    def initial(self) -> Iterator[Succ[Z]]:
        """Every clock at zero, closed (an initial state that breaks a deadline at once
        is skipped)."""
        zones = self.zones
        for s0 in self.model.initial_states():
            self.initial_state = s0
            f0 = zones.frame(s0)
            z0 = zones.close(f0, zones.zero(f0))
            if z0 is not None:
                yield self.arrive(s0, f0, z0, None, 0)

    def includes(self, state: State, big: Z, small: Z) -> bool:
        """Zone inclusion."""
        return self.zones.includes(self.zones.frame(state), big, small)

    def equal(self, state: State, a: Z, b: Z) -> bool:
        """Inclusion both ways."""
        return self.includes(state, a, b) and self.includes(state, b, a)

    def labels(self, s: State, f: F, z: Z) -> tuple[Label, ...]:
        """The labels of (s, z), z exact."""
        return ()

    def arrive(self, s: State, f: F, z: Z, edge: Edge | None, branch: int) -> Succ[Z]:
        """Label, abstract and canonicalise the exact node (s, z)."""
        labels = self.labels(s, f, z)
        zones = self.zones
        cs, cz, sym = zones.canonical(f, zones.extrapolate(f, z))
        return Succ(cs, cz, edge, branch, sym, Status.OK, labels)

    def next(self, state: State, zone: Z) -> Iterator[Succ[Z]]:
        """The successors of (state, zone), edge by edge."""
        zones = self.zones
        constrain = zones.constrain
        f = zones.frame(state)
        seen: dict[int, int] = {}
        for e in self.edges(state):
            branch = seen.get(e.event, 0)
            seen[e.event] = branch + 1
            g = constrain(f, zone, e.guard)
            if g is None:
                continue
            self.transitions += 1
            if e.failure is not None:
                yield Succ(state, g, e, branch, None, Status.ASSERT, ())
                continue
            self.at = (e.event, branch)
            t = e.target
            tf = zones.frame(t)
            tz = zones.reset(f, g, e, tf)
            if tz is not None:
                tz = zones.close(tf, tz)
            if tz is not None:
                yield self.arrive(t, tf, tz, e, branch)
            self.at = None


class ZoneTS(DomainTS[dbm.Dbm, Frame]):
    """The zone graph of a timed model over DBMs (:class:`DbmZones`), labelled with the
    model's properties and queries.

    ``live``: the clock bounds (None: every clock live, with the largest constant);
    ``labels``: the label kinds to compute (deadlocks only on states with a deadline);
    ``keep_exact``: fill :attr:`Succ.exact`; ``edge_cache``: a memo of the model's
    edges, shared with the clock-bounds pass."""

    def __init__(self, model: TimedModel, bounds: Sequence[int], live: Liveness | None = None,
                 *, extrapolation: Extrapolation | None = None,
                 canonical: Canonizer | None = None,
                 labels: frozenset[LabelKind] = ALL_LABELS,
                 ops: backend.DbmOps | None = None, max_memory_mb: int | None = None,
                 edge_cache: dict[State, Sequence[Edge]] | None = None,
                 keep_exact: bool = False) -> None:
        extrapolation = Extrapolation.LU if extrapolation is None else extrapolation
        if live is None:
            live = Liveness(len(model.clock_names), canonical, max(bounds, default=0))
        if ops is None:
            top = max((abs(b) for b in bounds), default=0)
            ops = backend.select(None if backend.fits(top) else "python")
        self.dz = DbmZones(model, bounds, max_memory_mb, canonical, live, ops,
                           extrapolation.value)
        super().__init__(model, self.dz)
        self.extrapolation = extrapolation
        self.canon = canonical
        self.bounds = bounds
        self.kinds = labels
        self.keep_exact = keep_exact
        self._queries = LabelKind.QUERY in labels and bool(getattr(model, "query_names", ()))
        self._query_names: Sequence[str] = getattr(model, "query_names", ())
        self._props = bool(labels & {LabelKind.INVARIANT, LabelKind.HAZARD})
        self._deadlock = LabelKind.DEADLOCK in labels
        self._edge_cache: dict[State, Sequence[Edge]] = {} if edge_cache is None else edge_cache
        self._includes = self.dz.D.includes
        self._violations: dict[State, Sequence[Violation]] = {}
        self._memo = len(self._edge_cache) + SEARCH_MEMO
        """The size at which the edge memo is emptied."""

    @property
    def live(self) -> Liveness:
        """The clock bounds in use."""
        return self.dz.live

    def edges(self, s: State) -> Sequence[Edge]:
        """The model's edges out of ``s`` (memoised)."""
        got = self._edge_cache.get(s)
        if got is None:
            got = self.model.edges(s)
            if len(self._edge_cache) >= self._memo:
                self._edge_cache.clear()
            self._edge_cache[s] = got
        return got

    def initial(self) -> Iterator[Succ[dbm.Dbm]]:
        """Every clock at zero, closed; a TIMELOCK node for an initial state that breaks
        a deadline at once."""
        dz = self.dz
        for s0 in self.model.initial_states():
            self.initial_state = s0
            f0 = dz.frame(s0)
            z0 = dz.close(f0, dz.zero(f0))
            if z0 is None:
                yield Succ(s0, dz.zero(f0), None, 0, None, Status.TIMELOCK, ())
                continue
            yield self.arrive(s0, f0, z0, None, 0)

    def arrive(self, s: State, f: Frame, z: dbm.Dbm, edge: Edge | None, branch: int
               ) -> Succ[dbm.Dbm]:
        """Label the exact zone (deadlock is judged there, before extrapolation: see
        :mod:`checker.engines.search`), then abstract and canonicalise it."""
        labels = self.labels(s, f, z)
        dz = self.dz
        exact = list(z) if self.keep_exact else None
        cs, cz, sym = dz.canonical(f, dz.extrapolate(f, z))
        return Succ(cs, cz, edge, branch, sym, Status.OK, labels, exact)

    def labels(self, s: State, f: Frame, z: dbm.Dbm) -> tuple[Label, ...]:
        """Queries first, then the invariants ``s`` breaks; if none, the hazards some
        valuation meets; if none, a deadlock.  (A state found breaking a property is
        not evaluated further: a model error there must not hide the violation.)

        With symmetry reduction they are those of the image of (s, z) whose discrete
        state represents the orbit (the permutations are automorphisms of the model:
        an image breaks what the original breaks), so that the representatives' edges
        and invariants, met again and again, are computed once; a model error met there
        is reported as the original meets it."""
        if self.canon is not None:
            rep = self._representative(s, f, z)
            if rep is not None:
                try:
                    return self._labels(*rep)
                except ModelRuntimeError:
                    pass
        return self._labels(s, f, z)

    def _representative(self, s: State, f: Frame, z: dbm.Dbm
                        ) -> tuple[State, Frame, dbm.Dbm] | None:
        """(s, z) permuted so that its discrete state is the representative of its
        orbit (:meth:`Liveness.canon`); None when it is (s, z) itself or cannot be
        built."""
        rep, sym = self.live.canon(s)
        if sym is None:
            return None
        dz = self.dz
        try:
            rf = dz.frame(rep)
        except ModelRuntimeError:
            return None
        rz = dz.image(f, z, sym, rf.pos)
        return None if rz is None else (rep, rf, rz)

    def violations(self, s: State) -> Sequence[Violation]:
        """The invariants ``s`` breaks (memoised; a model error is raised each time)."""
        got = self._violations.get(s)
        if got is None:
            got = self.model.violations(s)
            if len(self._violations) >= SEARCH_MEMO:
                self._violations.clear()
            self._violations[s] = got
        return got

    def _labels(self, s: State, f: Frame, z: dbm.Dbm) -> tuple[Label, ...]:
        """:meth:`labels` of (s, z) itself."""
        out: list[Label] = []
        if self._queries:
            names = self._query_names
            meets = self.dz.meets
            out.extend(Label(LabelKind.QUERY, names[m.query], "", m.query)
                       for m in query_matches(self.model, s)
                       if any(not part or meets(f, z, part) for part in m.parts))
        if self._props:
            viol = self.violations(s)
            if viol:
                out.extend(Label(LabelKind.INVARIANT, v.property, v.message) for v in viol)
                return tuple(out)
            meets = self.dz.meets
            for h in self.model.hazards(s):
                if meets(f, z, h.atoms):
                    out.append(Label(LabelKind.HAZARD, h.property, h.message))
            if out and out[-1].kind is LabelKind.HAZARD:
                return tuple(out)
        if self._deadlock and f.deadlines and self.stuck(s, f, z):
            out.append(Label(LabelKind.DEADLOCK, "deadlock", DEADLOCK_MESSAGE))
        return tuple(out) if out else ()

    def stuck(self, s: State, f: Frame, z: dbm.Dbm) -> bool:
        """Whether (s, z) holds a deadlocked valuation (False when listing the edges of
        ``s`` faults: that model error is reported when ``s`` is expanded)."""
        try:
            edges = self.edges(s)
        except ModelRuntimeError:
            return False
        return self.dz.stuck(f, z, edges)

    def includes(self, state: State, big: dbm.Dbm, small: dbm.Dbm) -> bool:
        """DBM inclusion."""
        return self._includes(big, small, isqrt(len(small)))

    def equal(self, state: State, a: dbm.Dbm, b: dbm.Dbm) -> bool:
        """Canonical DBMs of one state are equal exactly when they are the same set."""
        return a == b

    def key(self, state: State, zone: dbm.Dbm) -> Hashable:
        """The state and the canonical DBM."""
        return (state, tuple(zone))


class PackedZoneTS:
    """The zone graph of a :class:`ZoneTS` with its zones packed
    (:func:`checker.domains.dbm.pack`): what the zone explorer stores.  In the compiled
    DBM core a packed zone takes about an eighth of the memory of the list (one byte
    per entry when the bounds are small, no int objects) and is not tracked by the
    garbage collector; inclusion compares two packed zones directly.  The successors
    of a packed zone are the :class:`ZoneTS`'s successors of the zone, packed."""

    def __init__(self, ts: ZoneTS) -> None:
        self.zones = ts
        ops = ts.dz.D
        self._pack = ops.pack
        self._unpack = ops.unpack
        self._includes = ops.includes_packed
        self._frame = ts.dz.frame

    @property
    def transitions(self) -> int:
        """Edges taken so far (see :class:`SymbolicTS`)."""
        return self.zones.transitions

    def packed(self, succ: Succ[dbm.Dbm]) -> Succ[dbm.Packed]:
        """``succ`` with its zones packed."""
        z, exact = succ.zone, succ.exact
        pack = self._pack
        return Succ(succ.state, pack(z, isqrt(len(z))), succ.edge, succ.branch, succ.sym,
                    succ.status, succ.labels,
                    None if exact is None else pack(exact, isqrt(len(exact))), succ.deferred)

    def initial(self) -> Iterator[Succ[dbm.Packed]]:
        """The initial nodes of the zone graph, packed."""
        for succ in self.zones.initial():
            yield self.packed(succ)

    def next(self, state: State, zone: dbm.Packed) -> Iterator[Succ[dbm.Packed]]:
        """The successors of (state, zone), packed."""
        packed = self.packed
        for succ in self.zones.next(state, self._unpack(zone, self._frame(state).n)):
            yield packed(succ)

    def includes(self, state: State, big: dbm.Packed, small: dbm.Packed) -> bool:
        """Zone inclusion."""
        return self._includes(big, small, self._frame(state).n)

    def equal(self, state: State, a: dbm.Packed, b: dbm.Packed) -> bool:
        """Equal DBMs pack equal."""
        return a == b

    def key(self, state: State, zone: dbm.Packed) -> Hashable:
        """The state and the packed zone."""
        return (state, zone)


class Extrapolation(enum.Enum):
    """The abstraction of a zone graph over DBMs."""

    LU = "lu"
    """Extra+_LU over each state's local LU bounds (coarser; deadlocks to confirm)."""
    M = "m"
    """Extra_M over the model's maximal constants (region-equivalent valuations only)."""
    NONE = "none"
    """None: exact zones (need not terminate on cyclic models)."""
    SYNC_ALU = "sync-alu"
    """Local-time zones (:mod:`checker.semantics.localtime`): exact, each covered by
    sync-aLU subsumption instead of abstracted."""


def property_of(labels: Sequence[Label]) -> Label | None:
    """The broken property a state is reported for (an invariant or a hazard), if any."""
    for lab in labels:
        if lab.kind is LabelKind.INVARIANT or lab.kind is LabelKind.HAZARD:
            return lab
    return None


def deadlocked(labels: Sequence[Label]) -> bool:
    """Whether the labels say the exact zone holds a deadlocked valuation."""
    return any(lab.kind is LabelKind.DEADLOCK for lab in labels)

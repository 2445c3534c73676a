"""Local-time zone graphs of networks of components (``check --local-time``).

Govind, Herbreteau, Srivathsan and Walukiewicz, "Revisiting local time semantics for
networks of timed automata" (CONCUR 2019): each component of the network
(:class:`checker.model.interface.Components`: process instances, shared variables)
has a *reference clock*, its own time, which runs on its own; an event synchronises
the reference clocks of the components it involves, so that zones do not record the
order of independent events and fewer of them are needed.

A zone is a DBM over the reference clocks ``t_0 .. t_{P-1}`` (indices ``0 .. P-1``;
there is no zero clock) and one *offset* per clock (index ``P + c`` for clock ``c``);
the value of clock ``c`` is ``offset_c - t_p`` for its owner ``p``, so a clock atom
``c <= b`` is the entry ``(P + c, p)``, a reset of ``c`` makes its offset equal to
``t_p``, and letting each component's time pass on its own removes every upper bound
``v - t_p`` (the reference clock goes down, its clocks up).  The successor by an edge
(as in TChecker's ``refzg`` "elapsed" semantics): synchronise the reference clocks of
the edge's components, intersect with the guard, reset, intersect with the target's
deadlines, let local time pass, the deadlines again, and drop the zone unless it holds
a *synchronised* valuation (every reference clock equal): a global run passes only
through such zones, and only at a synchronised valuation is a discrete state reached
in global time.  Exact zones are never abstracted; a zone is *covered* by another of
the same discrete state under the sync-aLU subsumption (:func:`sync_alu_le`, after
Govind's thesis, appendix C), with each clock's maximal constants over the whole model
(valid in every discrete state, including those reached only desynchronised).

What it preserves: the discrete states reachable in global time are exactly those
reached here with a synchronisable zone (the paper's theorem), so invariants over the
discrete state, ``assert``s and ``reachable`` queries without clock atoms are decided
exactly.  Deadlocks are not preserved (refused by :mod:`checker.engines.localtime`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterator, Sequence

from checker.domains import backend, dbm
from checker.model.interface import (
    GE,
    LE,
    LT,
    ClockAtom,
    Components,
    Edge,
    LinExpr,
    State,
    TimedModel,
    query_matches,
)
from checker.semantics.ts import (
    Extrapolation,
    Label,
    LabelKind,
    Status,
    Succ,
)

INF = dbm.INF
LE_ZERO = dbm.LE_ZERO
MEMO = 1 << 14
"""Discrete states whose edges and deadlines are memoised before the memo is emptied."""


def sync_alu_le(small: dbm.Dbm, big: dbm.Dbm, refs: int, n: int,
                lower: Sequence[int | None], upper: Sequence[int | None]) -> bool:
    """Whether zone ``small`` is covered by ``big`` under sync-aLU subsumption: every
    synchronised valuation reachable from ``small`` is LU-simulated by one reachable
    from ``big`` (``lower``/``upper``: each DBM index's L and U constant, None for no
    bound; reference clocks have none).

    ``small`` is *not* covered when, for some clock offset ``x`` whose U bound the
    least ``t - x`` in ``small`` (over reference clocks ``t``) reaches, either that
    least bound is smaller in ``big``, or some offset ``y`` with an L bound has
    ``y - x`` bounded tighter in ``big`` than in ``small`` by enough to matter below
    ``L(y)``."""
    for x in range(refs, n):
        ux = upper[x]
        if ux is None:
            continue
        min1 = min(small[t * n + x] for t in range(refs))
        if min1 < dbm.bound(-ux, False):
            continue
        min2 = min(big[t * n + x] for t in range(refs))
        if min2 < min1:
            return False
        for y in range(refs, n):
            ly = lower[y]
            if y == x or ly is None:
                continue
            b2 = big[y * n + x]
            if b2 < small[y * n + x] and dbm.add(b2, dbm.bound(-ly, True)) < min1:
                return False
    return True


class LocalTimeTS:
    """The local-time zone graph of a model with components, its zones packed; labelled
    with the invariants the discrete states break and the ``reachable`` queries (without
    clock atoms) they satisfy.  A :class:`checker.semantics.ts.SymbolicTS`."""

    extrapolation = Extrapolation.SYNC_ALU

    def __init__(self, model: TimedModel, comps: Components, bounds: Sequence[int],
                 scale: int, labels: frozenset[LabelKind],
                 ops: backend.DbmOps | None = None) -> None:
        self.model = model
        self.comps = comps
        self.bounds = bounds
        self.refs = len(comps.names)
        self.n = self.refs + len(comps.clocks)
        if ops is None:
            big = max((abs(b) for b in bounds), default=0)
            ops = backend.select(None if backend.fits(big) else "python")
        self.D = ops
        self.transitions = 0
        self.at: tuple[int, int] | None = None
        """The edge being taken (see :class:`checker.semantics.ts.DomainTS`)."""
        self.initial_state: State | None = None
        values = model.values

        def top(bs: Sequence[LinExpr]) -> int | None:
            got = [math.ceil(b.evaluate(values) * scale) for b in bs]
            return max(got) if got else None

        none: list[int | None] = [None] * self.refs
        self.lower = none + [top(bs) for bs in comps.lower]
        self.upper = none + [top(bs) for bs in comps.upper]
        self._queries = LabelKind.QUERY in labels and bool(getattr(model, "query_names", ()))
        self._query_names: Sequence[str] = getattr(model, "query_names", ())
        self._invariants = LabelKind.INVARIANT in labels
        self._edges: dict[State, Sequence[Edge]] = {}
        self._deadlines: dict[State, list[tuple[int, int, int]]] = {}
        self._pairs = [tuple(itertools.pairwise(sync)) for sync in comps.events]

    @property
    def zones(self) -> LocalTimeTS:
        """This system (what :class:`checker.semantics.ts.PackedZoneTS` calls its zone
        graph: the extrapolation in use, the edge or initial state being entered)."""
        return self

    # ---- zones -----------------------------------------------------------------------
    def entries(self, atoms: Sequence[ClockAtom]) -> list[tuple[int, int, int]]:
        """Clock atoms as DBM entries: clock ``c`` against its owner's reference clock."""
        out = []
        owner = self.comps.clocks
        bounds = self.bounds
        refs = self.refs
        for a in atoms:
            i, t, b = refs + a.clock, owner[a.clock], bounds[a.bound]
            if a.op == LE:
                out.append((i, t, dbm.bound(b, False)))
            elif a.op == LT:
                out.append((i, t, dbm.bound(b, True)))
            elif a.op == GE:
                out.append((t, i, dbm.bound(-b, False)))
            else:
                out.append((t, i, dbm.bound(-b, True)))
        return out

    def tighten(self, z: dbm.Dbm, entries: Sequence[tuple[int, int, int]]) -> bool:
        """Intersect ``z`` with DBM entries in place; False if empty."""
        constrain, n = self.D.constrain, self.n
        return all(constrain(z, n, i, j, b) for i, j, b in entries)

    def deadlines(self, s: State) -> list[tuple[int, int, int]]:
        """The deadlines of ``s`` as DBM entries (memoised)."""
        got = self._deadlines.get(s)
        if got is None:
            if len(self._deadlines) >= MEMO:
                self._deadlines.clear()
            got = self._deadlines[s] = self.entries(self.model.deadlines(s))
        return got

    def edges(self, s: State) -> Sequence[Edge]:
        """The model's edges out of ``s`` (memoised)."""
        got = self._edges.get(s)
        if got is None:
            if len(self._edges) >= MEMO:
                self._edges.clear()
            got = self._edges[s] = self.model.edges(s)
        return got

    def synchronise(self, z: dbm.Dbm, event: int) -> bool:
        """Make the reference clocks of the components ``event`` involves equal."""
        constrain, n = self.D.constrain, self.n
        for a, b in self._pairs[event]:
            if not (constrain(z, n, a, b, LE_ZERO) and constrain(z, n, b, a, LE_ZERO)):
                return False
        return True

    def reset(self, z: dbm.Dbm, clock: int) -> None:
        """Clock ``clock`` to zero: its offset equals its owner's reference clock."""
        n = self.n
        i, t = self.refs + clock, self.comps.clocks[clock]
        z[i * n:i * n + n] = z[t * n:t * n + n]
        z[i::n] = z[t::n]
        z[i * n + i] = LE_ZERO

    def elapse(self, z: dbm.Dbm) -> None:
        """Let every component's time pass on its own (the zone stays canonical: every
        path through a reference clock now starts there)."""
        n = self.n
        for t in range(self.refs):
            col = [INF] * n
            col[t] = LE_ZERO
            z[t::n] = col

    def synchronisable(self, z: dbm.Dbm) -> bool:
        """Whether ``z`` holds a valuation where every reference clock is equal."""
        n, refs = self.n, self.refs
        return all(z[a * n + b] >= LE_ZERO for a in range(refs) for b in range(refs))

    def close(self, s: State, z: dbm.Dbm) -> bool:
        """Deadlines, local time elapse, deadlines; False unless the result is non-empty
        and synchronisable."""
        dl = self.deadlines(s)
        if not self.tighten(z, dl):
            return False
        self.elapse(z)
        return self.tighten(z, dl) and self.synchronisable(z)

    # ---- the transition system -------------------------------------------------------
    def labels(self, s: State) -> tuple[Label, ...]:
        """The queries ``s`` satisfies, then the invariants it breaks (its zone is
        synchronisable: ``s`` is reachable in global time)."""
        out: list[Label] = []
        if self._queries:
            names = self._query_names
            out.extend(Label(LabelKind.QUERY, names[m.query], "", m.query)
                       for m in query_matches(self.model, s) if any(not p for p in m.parts))
        if self._invariants:
            out.extend(Label(LabelKind.INVARIANT, v.property, v.message)
                       for v in self.model.violations(s))
        return tuple(out)

    def initial(self) -> Iterator[Succ[dbm.Packed]]:
        """Every clock and reference clock at zero, closed."""
        pack, n = self.D.pack, self.n
        for s0 in self.model.initial_states():
            self.initial_state = s0
            z = dbm.zero(n)
            if not self.close(s0, z):
                yield Succ(s0, pack(dbm.zero(n), n), None, 0, None, Status.TIMELOCK, ())
                continue
            yield Succ(s0, pack(z, n), None, 0, None, Status.OK, self.labels(s0))

    def next(self, state: State, zone: dbm.Packed) -> Iterator[Succ[dbm.Packed]]:
        """The successors of (state, zone), edge by edge."""
        n = self.n
        pack = self.D.pack
        z = self.D.unpack(zone, n)
        seen: dict[int, int] = {}
        for e in self.edges(state):
            branch = seen.get(e.event, 0)
            seen[e.event] = branch + 1
            g = list(z)
            if not (self.synchronise(g, e.event) and self.tighten(g, self.entries(e.guard))):
                continue
            self.transitions += 1
            if e.failure is not None:
                if self.synchronisable(g):
                    yield Succ(state, pack(g, n), e, branch, None, Status.ASSERT, ())
                continue
            self.at = (e.event, branch)
            for c in e.resets:
                self.reset(g, c)
            if self.close(e.target, g):
                yield Succ(e.target, pack(g, n), e, branch, None, Status.OK,
                           self.labels(e.target))
            self.at = None

    def includes(self, state: State, big: dbm.Packed, small: dbm.Packed) -> bool:
        """Whether ``big`` covers ``small`` (sync-aLU subsumption)."""
        unpack, n = self.D.unpack, self.n
        return sync_alu_le(unpack(small, n), unpack(big, n), self.refs, n,
                           self.lower, self.upper)

    def equal(self, state: State, a: dbm.Packed, b: dbm.Packed) -> bool:
        """Equal canonical DBMs pack equal."""
        return a == b

    def key(self, state: State, zone: dbm.Packed) -> Hashable:
        """The state and the packed zone."""
        return (state, zone)

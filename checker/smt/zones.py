"""Zones as convex polyhedra over clocks *and* parameters: the parametric
explorer's :class:`checker.semantics.ts.ZoneDomain`, and its symbolic transition
system (:class:`PolyTS`).

A zone is a conjunction of linear constraints (:class:`checker.smt.poly.Lin`)
over the live clocks of its discrete state and the free timing parameters; the
other parameters are substituted by their values.  Time elapse and clock
forgetting are Fourier–Motzkin eliminations; satisfiability is decided exactly,
mostly without Z3 (:mod:`checker.smt.quick`).  Every operation is memoised:
exploration derives the same systems along many paths.  There is no
extrapolation (constants are symbolic).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from checker.model.interface import (
    GT,
    LE,
    LT,
    ClockAtom,
    Edge,
    LinExpr,
    ModelRuntimeError,
    State,
    Symmetry,
    TimedModel,
)
from checker.semantics.canon import Canonizer
from checker.semantics.ts import DomainTS, Label, LabelKind, Status, Succ
from checker.smt.lin import Lin, clock_var, param_var
from checker.smt.poly import (
    Z3Context,
    convex_union,
    dedupe,
    eliminate,
    implies,
    included,
    remove_redundant,
)

DELAY = "d"

Poly = list[Lin]
"""A convex polyhedron: a conjunction of constraints."""

_MISSING: list[Lin] = []
"""A placeholder for "not memoised yet" (compared by identity)."""


def bound_lin(b: LinExpr, free: Sequence[str], values: Mapping[str, Fraction]
              ) -> tuple[dict[str, Fraction], Fraction]:
    """A bound as (coefficients over free parameters, constant); fixed ones substituted."""
    coefs: dict[str, Fraction] = {}
    const = b.const
    for p, a in b.terms:
        if p in free:
            coefs[param_var(p)] = coefs.get(param_var(p), Fraction(0)) + a
        else:
            const += a * values[p]
    return coefs, const


def atom_lin(a: ClockAtom, bounds: Sequence[tuple[dict[str, Fraction], Fraction]]) -> Lin:
    """``clock op bound`` as a normalised constraint."""
    coefs, const = bounds[a.bound]
    x = clock_var(a.clock)
    if a.op in (LE, LT):  # x - b (<|<=) 0
        cs = {k: -v for k, v in coefs.items()}
        cs[x] = cs.get(x, Fraction(0)) + 1
        return Lin.make(cs, -const, a.op == LT)
    cs = dict(coefs)  # b - x (<|<=) 0
    cs[x] = cs.get(x, Fraction(0)) - 1
    return Lin.make(cs, const, a.op == GT)


def zero_constraints(clocks: Sequence[int]) -> Poly:
    """Every clock of ``clocks`` equal to zero."""
    out: Poly = []
    for c in clocks:
        x = clock_var(c)
        out.append(Lin.make({x: Fraction(1)}, Fraction(0), False))
        out.append(Lin.make({x: Fraction(-1)}, Fraction(0), False))
    return out


class PolyFrame:
    """What the polyhedra operations need of one discrete state."""

    __slots__ = ("clocks", "inv", "state")

    def __init__(self, state: State, clocks: list[int], inv: Poly) -> None:
        self.state = state
        self.clocks = clocks
        """The live clocks of the state."""
        self.inv = inv
        """Its deadlines as constraints."""


class PolyZones:
    """The :class:`checker.semantics.ts.ZoneDomain` of the parametric explorer."""

    def __init__(self, model: TimedModel, free: Sequence[str], ctx: Z3Context,
                 live: Mapping[State, int] | None, canon: Canonizer | None) -> None:
        self.model = model
        self.free = list(free)
        self.ctx = ctx
        self.live = live
        self.canon = canon
        self.bounds = [bound_lin(b, self.free, model.values) for b in model.bounds]
        self.params = {param_var(p) for p in self.free}
        self.atom_memo: dict[ClockAtom, Lin] = {}
        self.reset_memo: dict[ClockAtom, Lin] = {}
        self.conj_memo: dict[tuple[tuple[Lin, ...], tuple[Lin, ...]], Poly | None] = {}
        self.rename_memo: dict[tuple[tuple[int, ...], tuple[Lin, ...]], Poly] = {}
        self.fm_memo: dict[tuple[tuple[Lin, ...], str], Poly | None] = {}
        self.close_memo: dict[tuple[tuple[Lin, ...], tuple[Lin, ...], tuple[int, ...]],
                              Poly | None] = {}
        self._last: PolyFrame | None = None

    def clocks_of(self, s: State) -> list[int]:
        """The live clocks of ``s`` (every clock without a liveness analysis)."""
        mask = self.live.get(s) if self.live is not None else None
        if mask is None:
            return list(range(len(self.model.clock_names)))
        return [c for c in range(len(self.model.clock_names)) if mask >> c & 1]

    # ---- the zone interface -------------------------------------------------------------
    def frame(self, s: State) -> PolyFrame:
        """The live clocks and deadlines of ``s`` (the last state's are kept: expansion
        asks twice)."""
        last = self._last
        if last is not None and last.state == s:
            return last
        got = PolyFrame(s, self.clocks_of(s), self.atoms(self.model.deadlines(s)))
        self._last = got
        return got

    def zero(self, f: PolyFrame) -> Poly:
        """Every live clock at zero (parameters unconstrained)."""
        return zero_constraints(f.clocks)

    def constrain(self, f: PolyFrame, z: Poly, atoms: Sequence[ClockAtom]) -> Poly | None:
        """``z`` and the clock atoms, None if empty."""
        return self.conj(z, self.atoms(atoms))

    def reset(self, f: PolyFrame, z: Poly, e: Edge, tf: PolyFrame) -> Poly | None:
        """Forget the clocks that are reset or die; born and reset clocks are zero."""
        clocks = f.clocks
        resets = set(e.resets)
        live = set(tf.clocks)
        drop = [clock_var(c) for c in clocks if c in resets or c not in live]
        cur = self.forget(z, drop)
        if cur is None:
            return None
        return cur + zero_constraints([c for c in tf.clocks if c in resets or c not in clocks])

    def close(self, f: PolyFrame, z: Poly) -> Poly | None:
        """``z`` closed under the deadlines and time elapse (memoised)."""
        key = (tuple(z), tuple(f.inv), tuple(f.clocks))
        got = self.close_memo.get(key, _MISSING)
        if got is _MISSING:
            got = self._close(z, f.inv, f.clocks)
            self.close_memo[key] = got
        return None if got is None else list(got)

    def includes(self, f: PolyFrame, big: Poly, small: Poly) -> bool:
        """Polyhedron inclusion."""
        return included(self.ctx, small, big)

    def extrapolate(self, f: PolyFrame, z: Poly) -> Poly:
        """No abstraction: constants are symbolic."""
        return z

    def canonical(self, f: PolyFrame, z: Poly) -> tuple[State, Poly, Symmetry | None]:
        """A representative of (s, z) under the symmetries: the canonizer's least
        discrete image, with the polyhedron's clocks renamed alike."""
        s = f.state
        if self.canon is None:
            return s, z, None
        best_s, cands = self.canon.candidates(s)
        sym = cands[0]
        if sym is None:
            return s, z, None
        key = (sym.clocks, tuple(z))
        got = self.rename_memo.get(key)
        if got is None:
            renamed: Poly = []
            for c in z:
                coefs = {
                    (clock_var(sym.clocks[int(v[1:])]) if v.startswith("c") else v): a
                    for v, a in c.coefs
                }
                renamed.append(Lin.make(coefs, c.const, c.strict))
            got = sorted(renamed)
            self.rename_memo[key] = got
        return best_s, list(got), sym

    # ---- operations -----------------------------------------------------------------------
    def atoms(self, atoms: Sequence[ClockAtom]) -> Poly:
        """Clock atoms as constraints (memoised per atom)."""
        memo = self.atom_memo
        out = []
        for a in atoms:
            got = memo.get(a)
            if got is None:
                got = atom_lin(a, self.bounds)
                memo[a] = got
            out.append(got)
        return out

    def conj(self, poly: Sequence[Lin], extra: Sequence[Lin]) -> Poly | None:
        """The intersection (deduplicated), or None if empty (memoised)."""
        key = (tuple(poly), tuple(extra))
        got = self.conj_memo.get(key, _MISSING)
        if got is _MISSING:
            got = self._conj(poly, extra)
            self.conj_memo[key] = got
        return None if got is None else list(got)

    def _conj(self, poly: Sequence[Lin], extra: Sequence[Lin]) -> Poly | None:
        got = dedupe([*poly, *extra])
        if got is None:
            return None
        have = set(poly)
        if not self.ctx.sat(got, new=[c for c in got if c not in have]):
            return None
        return got

    def reset_atom(self, a: ClockAtom) -> Lin:
        """Clock atom ``a`` just after its clock is reset (the clock's term dropped)."""
        got = self.reset_memo.get(a)
        if got is None:
            c = self.atoms((a,))[0]
            var = clock_var(a.clock)
            got = Lin.make({v: k for v, k in c.coefs if v != var}, c.const, c.strict)
            self.reset_memo[a] = got
        return got

    def forget(self, poly: Sequence[Lin], variables: Sequence[str]) -> Poly | None:
        """``poly`` with ``variables`` projected out."""
        cur: Poly | None = list(poly)
        for v in variables:
            assert cur is not None
            cur = self.eliminate(cur, v)
            if cur is None:
                return None
        return cur

    def eliminate(self, poly: Sequence[Lin], v: str) -> Poly | None:
        """Fourier–Motzkin elimination of ``v`` (memoised)."""
        key = (tuple(poly), v)
        got = self.fm_memo.get(key, _MISSING)
        if got is _MISSING:
            got = eliminate(poly, v)
            self.fm_memo[key] = got
        return None if got is None else list(got)

    def elapse(self, poly: Sequence[Lin], clocks: Sequence[int]) -> Poly | None:
        """Time successors: every clock advances by the same d >= 0."""
        return self._shift(poly, clocks, -1)

    def down(self, poly: Sequence[Lin], clocks: Sequence[int]) -> Poly | None:
        """Time predecessors: the valuations from which some delay d >= 0 reaches ``poly``."""
        return self._shift(poly, clocks, 1)

    def _shift(self, poly: Sequence[Lin], clocks: Sequence[int], sign: int) -> Poly | None:
        """``poly`` with every clock x replaced by x + sign * d, d >= 0 eliminated."""
        names = {clock_var(c) for c in clocks}
        shifted: Poly = []
        for c in poly:
            total = sum((a for v, a in c.coefs if v in names), Fraction(0))
            if total == 0:
                shifted.append(c)
                continue
            coefs = dict(c.coefs)
            coefs[DELAY] = sign * total
            shifted.append(Lin.make(coefs, c.const, c.strict))
        shifted.append(Lin.make({DELAY: Fraction(-1)}, Fraction(0), False))
        return self.eliminate(shifted, DELAY)

    def subtract(self, piece: Sequence[Lin], cut: Sequence[Lin]) -> list[Poly]:
        """``piece`` minus the convex ``cut``, as disjoint convex pieces."""
        out: list[Poly] = []
        acc: Poly | None = list(piece)
        for c in cut:
            assert acc is not None
            got = self.conj(acc, [c.negate()])
            if got is None:
                continue  # acc implies c
            out.append(got)
            acc = self.conj(acc, [c])
            if acc is None:
                break
        return out

    def _close(self, poly: Sequence[Lin], inv: Poly, clocks: Sequence[int]) -> Poly | None:
        cur = self.conj(poly, inv)
        if cur is None:
            return None
        cur = self.elapse(cur, clocks)
        if cur is None:
            return None
        # No satisfiability query: the time successors contain the satisfiable
        # system they were computed from (delay 0), which meets the deadlines.
        cur = dedupe([*cur, *inv])
        if cur is None:  # pragma: no cover - impossible, see above
            return None
        return remove_redundant(self.ctx, cur, set(poly))

    def union(self, a: Sequence[Lin], b: Sequence[Lin]) -> Poly | None:
        """The union of two polyhedra when it is convex, else None
        (:func:`checker.smt.poly.convex_union`)."""
        return convex_union(self.ctx, a, b)

    def params_of(self, poly: Sequence[Lin]) -> Poly | None:
        """The projection of ``poly`` onto the parameters (redundancies removed)."""
        clocks = sorted({v for c in poly for v in c.vars()} - self.params)
        got = self.forget(poly, clocks)
        if got is None:
            return None
        return remove_redundant(self.ctx, got)

    def stuck(self, f: PolyFrame, poly: Sequence[Lin], edges: Sequence[Edge]) -> list[Poly]:
        """The convex pieces of (s, poly) from which no edge can fire after any delay
        (empty when time may pass for ever in ``s``)."""
        if not f.inv:
            return []
        clocks = f.clocks
        live = set(clocks)
        extras: list[Poly] = []
        for e in edges:
            extra = self.atoms(e.guard)
            resets = set(e.resets)
            # A violating edge fires (and is reported); it enters no state.
            try:
                target = self.model.deadlines(e.target) if e.failure is None else ()
            except ModelRuntimeError:
                target = ()  # entering the target is a model error: the edge can fire
            for a in target:
                if a.clock in resets:
                    c = self.reset_atom(a)
                elif a.clock not in live:
                    continue  # reset before it is read
                else:
                    c = self.atoms((a,))[0]
                if c.trivial() is not True:
                    extra.append(c)
            if not extra:
                return []  # this edge can fire from every valuation of the state
            extras.append(extra)
        for extra in extras:
            if all(implies(self.ctx, poly, c) for c in extra):
                return []  # likewise: poly implies the edge's constraints
        rest: list[Poly] = [list(poly)]
        for extra in extras:
            enabled = self.conj(poly, extra)
            if enabled is None:
                continue
            before = self.down(enabled, clocks)
            if before is None:
                continue
            rest = [q for piece in rest for q in self.subtract(piece, before)]
            if not rest:
                return []
        return rest


@dataclass(frozen=True)
class PieceLabel(Label):
    """A label of a parametric state, with the polyhedron (clocks and parameters) where
    it holds: the parameters of its projection break the property."""

    piece: tuple[Lin, ...] = ()


class PolyTS(DomainTS[Poly, PolyFrame]):
    """The parametric zone graph: states are discrete states and polyhedra over the
    live clocks and the free parameters, starting within ``start`` (the ranges and an
    assumption).  No extrapolation (the constants are symbolic).

    Labels carry the polyhedron where they hold (:class:`PieceLabel`).  They are
    costly here, and EFsynth needs them for stored states only: a successor's come
    in :attr:`~checker.semantics.ts.Succ.deferred`, a state's deadlocks from
    :meth:`deadlocks`, when the search asks.  An initial state that breaks a deadline
    for some parameters is a TIMELOCK node labelled with them (followed by its OK
    node for the other parameters, if any).  ``check_time`` ends the run at its time
    limit (building a large initial zone takes a while)."""

    def __init__(self, model: TimedModel, zones: PolyZones, start: Sequence[Lin],
                 deadlock: bool, check_time: Callable[[], None]) -> None:
        super().__init__(model, zones)
        self.pz = zones
        self.start = list(start)
        self.deadlock = deadlock
        self.check_time = check_time
        self._edges: tuple[State | None, Sequence[Edge]] = (None, ())

    def edges(self, s: State) -> Sequence[Edge]:
        """The edges of ``s`` (the last state's are kept: expansion asks twice)."""
        last, got = self._edges
        if last != s:
            got = self.model.edges(s)
            self._edges = (s, got)
        return got

    def initial(self) -> Iterator[Succ[Poly]]:
        """Every clock at zero within :attr:`start`, closed."""
        pz = self.pz
        for s0 in self.model.initial_states():
            self.initial_state = s0
            f0 = pz.frame(s0)
            zero = pz.zero(f0)
            if len(zero) >= 1024:
                self.check_time()
            start = pz.conj(self.start, zero)
            if start is None:
                continue
            if self.deadlock:
                pieces = self.timelocked(f0, start)
                if pieces:
                    yield Succ(s0, start, None, 0, None, Status.TIMELOCK, pieces)
            z0 = pz.close(f0, start)
            if z0 is not None:
                yield self.arrive(s0, f0, z0, None, 0)

    def timelocked(self, f: PolyFrame, start: Poly) -> tuple[Label, ...]:
        """Where the initial state breaks a deadline at once."""
        pz = self.pz
        ok = pz.conj(start, f.inv)
        allowed = None if ok is None else pz.params_of(ok)
        if allowed is None:
            return (_deadlock(start),)
        out = []
        for c in allowed:
            got = pz.conj(start, [c.negate()])
            if got is not None:
                out.append(_deadlock(got))
        return tuple(out)

    def arrive(self, s: State, f: PolyFrame, z: Poly, edge: Edge | None, branch: int
               ) -> Succ[Poly]:
        """Canonicalise (s, z); its labels when asked."""
        cs, cz, sym = self.pz.canonical(f, z)
        return Succ(cs, cz, edge, branch, sym, Status.OK, (), None,
                    lambda: self.state_labels(s, z))

    def state_labels(self, s: State, z: Poly) -> tuple[Label, ...]:
        """The invariant (s, z) breaks outright; if none, the hazards and where."""
        viol = self.model.violations(s)
        if viol:
            return (PieceLabel(LabelKind.INVARIANT, viol[0].property, viol[0].message,
                               piece=tuple(z)),)
        pz = self.pz
        out = []
        for h in self.model.hazards(s):
            got = pz.conj(z, pz.atoms(h.atoms))
            if got is not None:
                out.append(PieceLabel(LabelKind.HAZARD, h.property, h.message,
                                      piece=tuple(got)))
        return tuple(out)

    def deadlocks(self, s: State, z: Poly) -> tuple[Label, ...]:
        """The deadlocked pieces of (s, z)."""
        if not self.deadlock:
            return ()
        return tuple(_deadlock(p) for p in self.pz.stuck(self.pz.frame(s), z, self.edges(s)))

    def params(self, piece: Sequence[Lin]) -> Poly | None:
        """The parameters of ``piece``."""
        return self.pz.params_of(piece)

    def includes(self, state: State, big: Poly, small: Poly) -> bool:
        """Polyhedron inclusion."""
        return included(self.pz.ctx, small, big)

    def equal(self, state: State, a: Poly, b: Poly) -> bool:
        """Inclusion both ways."""
        return self.includes(state, a, b) and self.includes(state, b, a)

    def merge(self, state: State, a: Poly, b: Poly) -> Poly | None:
        """The union of two polyhedra of ``state`` when it is convex, else None: what
        :class:`~checker.algorithms.covreach.Passed` merges (see :mod:`checker.smt.synth`
        for why every property synthesis covers is unchanged)."""
        got = self.pz.union(a, b)
        return None if got is None else sorted(got)

    def key(self, state: State, zone: Poly) -> Hashable:
        """The state and the (sorted) constraints."""
        return (state, tuple(sorted(zone)))


def _deadlock(piece: Sequence[Lin]) -> PieceLabel:
    return PieceLabel(LabelKind.DEADLOCK, "deadlock", "", piece=tuple(piece))

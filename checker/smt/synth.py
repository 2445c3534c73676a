"""Parameter synthesis and proof by parametric zone exploration (EFsynth).

The algorithm is IMITATOR's EFsynth: explore symbolic states (discrete state,
convex polyhedron over the live clocks *and* the free parameters) exactly as
the zone explorer does — guard, reset, move to the target's live clocks,
target deadlines, time elapse, deadlines again — but keep the parameters
symbolic.  Every state where a property breaks contributes its projection onto
the parameters to the *bad* region; the safe region is the declared ranges
minus the bad region.

* Sound and complete when exploration finishes: every reachable symbolic
  state is visited (inclusion subsumption only drops states whose valuations
  are all already covered — a stored state that a later, larger one of the
  same discrete state covers is retired from the waiting list too, since the
  successors are monotone in the polyhedron — and branches whose parameters
  are already all bad cannot add new bad parameters — constraints only shrink
  along a path).
* Fast: the polyhedral operations are memoised (time closure, Fourier–Motzkin
  steps, clock atoms, satisfiability), and most satisfiability queries are
  decided exactly without Z3 (:mod:`checker.smt.quick`).
* Parametric exploration need not terminate on cyclic models (there is no
  extrapolation with symbolic constants); limits end such a run as
  *inconclusive*, never as a proof.
* Properties covered: every ``assert``, ``invariant`` and bounded-response
  property, and (unless turned off) deadlock freedom, with the zone
  explorer's meaning: a valuation of a state with an active deadline from
  which no edge can fire after any delay.  Per symbolic state, the valuations
  (clocks and parameters) that can still fire an edge are the time
  predecessors of each edge's enabled part (guard, and the target's deadlines
  after the resets); what is left of the state once they are subtracted — a
  union of convex pieces — deadlocks, and its projection onto the parameters
  is bad.  Parameter values for which the initial state already breaks a
  deadline are bad too (time cannot even start).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from checker.explorer.canon import canonizer
from checker.explorer.search import live_clocks
from checker.model.interface import (
    GT,
    LE,
    LT,
    ClockAtom,
    Edge,
    LinExpr,
    ModelRuntimeError,
    State,
    TimedModel,
)
from checker.smt.poly import (
    Lin,
    OutOfTime,
    Z3Context,
    clock_var,
    dedupe,
    eliminate,
    implies,
    included,
    param_var,
    remove_redundant,
)
from checker.smt.quick import Shortcuts
from checker.smt.timing import SolverUnknown, TraceShape

DELAY = "d"
COVER_SPLIT_PIECES = 6
"""Up to this many bad pieces, whether a parameter set is covered by them is decided
by splitting it along their constraints (conjunctive queries, mostly decided without
Z3); beyond, by one Z3 query with the pieces' negations."""


@dataclass
class SynthStats:
    """What a parametric exploration did."""

    states: int = 0
    symbolic_states: int = 0
    transitions: int = 0
    queries: int = 0
    seconds: float = 0.0


STATS_OBSERVERS: list[Callable[[SynthStats], None]] = []
"""Each is called with a parametric exploration's :class:`SynthStats` when it starts;
the object is then updated in place as the exploration runs (the command line reads
it for its progress display).  Empty by default."""


@dataclass
class Region:
    """A set of parameter valuations: a union of convex polyhedra over the free
    parameters (each a conjunction of :class:`Lin`)."""

    pieces: list[list[Lin]] = field(default_factory=list)


@dataclass
class SynthResult:
    """The outcome of a parametric exploration."""

    complete: bool
    free: list[str]
    ranges: list[Lin]
    bad: Region
    stats: SynthStats
    limit: str | None = None
    properties: dict[int, str] = field(default_factory=dict)
    """For each bad piece (by index), the property that broke there."""


_MISSING: list[Lin] = []
"""A placeholder for "not memoised yet" (compared by identity)."""


class _Limit(Exception):
    pass


class _Node:
    """A stored symbolic state (its polyhedron; the discrete state is the key it is
    stored under).  ``retired`` once a larger polyhedron of the same discrete state
    is stored: everything reachable from this one is then reachable from that one,
    so it is not expanded."""

    __slots__ = ("poly", "retired")

    def __init__(self, poly: list[Lin]) -> None:
        self.poly = poly
        self.retired = False


def range_constraints(model: TimedModel, free: Sequence[str]) -> list[Lin]:
    """The declared ranges of the free parameters as constraints."""
    out: list[Lin] = []
    for p in free:
        prm = model.params[p]
        v = param_var(p)
        if prm.lo is not None:
            out.append(Lin.make({v: Fraction(-1)}, prm.lo, prm.lo_open))
        if prm.hi is not None:
            out.append(Lin.make({v: Fraction(1)}, -prm.hi, prm.hi_open))
    got = dedupe(out)
    return got if got is not None else [Lin((), Fraction(1), False)]


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


def probe_points(model: TimedModel, free: Sequence[str]) -> list[list[Fraction]]:
    """A few valuations of ``free`` at which satisfiability is tried without Z3: the
    defaults, the middle of the ranges, and for each parameter the middle with that
    one near the low and near the high end (a side without a bound: the default)."""
    def at(p: str, frac: Fraction) -> Fraction:
        prm = model.params[p]
        if prm.lo is not None and prm.hi is not None:
            return prm.lo + (prm.hi - prm.lo) * frac
        return model.values.get(p, Fraction(0))

    mid = [at(p, Fraction(1, 2)) for p in free]
    points = [[model.values.get(p, Fraction(0)) for p in free], mid]
    for i, p in enumerate(free):
        for frac in (Fraction(1, 8), Fraction(7, 8)):
            point = list(mid)
            point[i] = at(p, frac)
            points.append(point)
    out: list[list[Fraction]] = []
    for point in points:
        if point not in out:
            out.append(point)
    return out


class _Parametric:
    def __init__(self, model: TimedModel, free: Sequence[str], base: Sequence[Lin],
                 max_states: int | None, timeout: float | None, symmetry: bool,
                 deadlock: bool = True) -> None:
        self.model = model
        self.deadlock = deadlock
        self.free = list(free)
        self.ctx = Z3Context()
        self.ctx.shortcuts = Shortcuts([param_var(p) for p in self.free],
                                       probe_points(model, self.free))
        self.bounds = [bound_lin(b, self.free, model.values) for b in model.bounds]
        self.base = list(base)
        self.max_states = max_states
        self.start = time.monotonic()
        self.deadline = self.start + timeout if timeout is not None else None
        self.ctx.deadline = self.deadline
        cap = None if max_states is None else max(10_000, 50 * max_states)
        self.live = live_clocks(model, cap, self.deadline)
        self.canon = canonizer(model, symmetry)
        self.stats = SynthStats()
        for observe in STATS_OBSERVERS:
            observe(self.stats)
        self.bad = Region()
        self.bad_props: list[str] = []
        self.passed: dict[State, list[_Node]] = {}
        self.params = {param_var(p) for p in self.free}
        self.atom_memo: dict[ClockAtom, Lin] = {}
        self.reset_memo: dict[ClockAtom, Lin] = {}
        self.conj_memo: dict[tuple[tuple[Lin, ...], tuple[Lin, ...]], list[Lin] | None] = {}
        self.rename_memo: dict[tuple[tuple[int, ...], tuple[Lin, ...]], list[Lin]] = {}
        self.fm_memo: dict[tuple[tuple[Lin, ...], str], list[Lin] | None] = {}
        self.close_memo: dict[tuple[tuple[Lin, ...], tuple[Lin, ...], tuple[int, ...]],
                              list[Lin] | None] = {}

    # ---- polyhedra operations ----------------------------------------------------------
    def atoms(self, atoms: Sequence[ClockAtom]) -> list[Lin]:
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

    def conj(self, poly: Sequence[Lin], extra: Sequence[Lin]) -> list[Lin] | None:
        """The intersection (deduplicated), or None if empty (memoised)."""
        key = (tuple(poly), tuple(extra))
        got = self.conj_memo.get(key, _MISSING)
        if got is _MISSING:
            got = self._conj(poly, extra)
            self.conj_memo[key] = got
        return None if got is None else list(got)

    def _conj(self, poly: Sequence[Lin], extra: Sequence[Lin]) -> list[Lin] | None:
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

    def forget(self, poly: Sequence[Lin], variables: Sequence[str]) -> list[Lin] | None:
        cur: list[Lin] | None = list(poly)
        for v in variables:
            assert cur is not None
            cur = self.eliminate(cur, v)
            if cur is None:
                return None
        return cur

    def eliminate(self, poly: Sequence[Lin], v: str) -> list[Lin] | None:
        """Fourier–Motzkin elimination of ``v`` (memoised: exploration derives the
        same systems along many paths)."""
        key = (tuple(poly), v)
        got = self.fm_memo.get(key, _MISSING)
        if got is _MISSING:
            got = eliminate(poly, v)
            self.fm_memo[key] = got
        return None if got is None else list(got)

    def elapse(self, poly: Sequence[Lin], clocks: Sequence[int]) -> list[Lin] | None:
        """Time successors: every clock advances by the same d >= 0."""
        return self._shift(poly, clocks, -1)

    def down(self, poly: Sequence[Lin], clocks: Sequence[int]) -> list[Lin] | None:
        """Time predecessors: the valuations from which some delay d >= 0 reaches ``poly``."""
        return self._shift(poly, clocks, 1)

    def _shift(self, poly: Sequence[Lin], clocks: Sequence[int], sign: int
               ) -> list[Lin] | None:
        """``poly`` with every clock x replaced by x + sign * d, d >= 0 eliminated."""
        names = {clock_var(c) for c in clocks}
        shifted: list[Lin] = []
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

    def subtract(self, piece: Sequence[Lin], cut: Sequence[Lin]) -> list[list[Lin]]:
        """``piece`` minus the convex ``cut``, as disjoint convex pieces."""
        out: list[list[Lin]] = []
        acc: list[Lin] | None = list(piece)
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

    def deadlocks(self, s: State, poly: Sequence[Lin], clocks: Sequence[int],
                  edges: Sequence[Edge]) -> list[list[Lin]]:
        """The convex pieces of (s, poly) from which no edge can fire after any delay
        (empty when time may pass for ever in ``s``)."""
        if not self.model.deadlines(s):
            return []
        live = set(clocks)
        extras: list[list[Lin]] = []
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
        rest: list[list[Lin]] = [list(poly)]
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

    def params_of(self, poly: Sequence[Lin]) -> list[Lin] | None:
        clocks = sorted({v for c in poly for v in c.vars()} - self.params)
        got = self.forget(poly, clocks)
        if got is None:
            return None
        return remove_redundant(self.ctx, got)

    def close(self, s: State, poly: Sequence[Lin], clocks: Sequence[int]) -> list[Lin] | None:
        """(s, poly) closed under the deadlines of ``s`` and time elapse (memoised)."""
        inv = self.atoms(self.model.deadlines(s))
        key = (tuple(poly), tuple(inv), tuple(clocks))
        got = self.close_memo.get(key, _MISSING)
        if got is _MISSING:
            got = self._close(poly, inv, clocks)
            self.close_memo[key] = got
        return None if got is None else list(got)

    def _close(self, poly: Sequence[Lin], inv: list[Lin], clocks: Sequence[int]
               ) -> list[Lin] | None:
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

    # ---- bad region ------------------------------------------------------------------------
    def covered(self, params: Sequence[Lin]) -> bool:
        """Whether every parameter valuation of ``params`` is already known bad."""
        pieces = self.bad.pieces
        if not pieces:
            return False
        if len(pieces) > COVER_SPLIT_PIECES:
            ctx = self.ctx
            outside = [z3.Not(z3.And(*[ctx.expr(c) for c in piece])) for piece in pieces]
            return not ctx.sat(params, outside)
        return self._covered(params, 0)

    def _covered(self, poly: Sequence[Lin], k: int) -> bool:
        """Whether the (satisfiable) ``poly`` lies inside the union of the bad pieces
        from the ``k``-th on: the parts of it outside piece ``k`` (one convex part
        per constraint of the piece) must lie inside the union of the later ones."""
        pieces = self.bad.pieces
        if k == len(pieces):
            return False
        acc: list[Lin] | None = list(poly)
        for c in pieces[k]:
            assert acc is not None
            if c in acc:
                continue
            out = self.conj(acc, [c.negate()])
            if out is not None and not self._covered(out, k + 1):
                return False
            acc = self.conj(acc, [c])
            if acc is None:
                return True
        return True

    def add_bad(self, params: list[Lin], prop: str) -> None:
        for piece in self.bad.pieces:
            if included(self.ctx, params, piece):
                return
        keep = [i for i, piece in enumerate(self.bad.pieces)
                if not included(self.ctx, piece, params)]
        self.bad.pieces = [self.bad.pieces[i] for i in keep] + [params]
        self.bad_props = [self.bad_props[i] for i in keep] + [prop]

    def timelocked_start(self, s0: State, start: Sequence[Lin]) -> None:
        """Report the parameter values for which the initial state breaks a deadline."""
        inv = self.atoms(self.model.deadlines(s0))
        ok = self.conj(start, inv)
        if ok is None:
            self.report(start, "deadlock")
            return
        allowed = self.params_of(ok)
        if allowed is None:
            self.report(start, "deadlock")
            return
        for c in allowed:
            got = self.conj(start, [c.negate()])
            if got is not None:
                self.report(got, "deadlock")

    def report(self, poly: Sequence[Lin], prop: str) -> None:
        params = self.params_of(poly)
        if params is not None:
            self.add_bad(params, prop)

    # ---- symmetry and storage ----------------------------------------------------------------
    def canonical(self, s: State, poly: list[Lin]) -> tuple[State, list[Lin]]:
        """A representative of (s, poly) under the symmetries: the canonizer's least
        discrete image (found without enumerating permutations), with the
        polyhedron's clocks renamed alike."""
        if self.canon is None:
            return s, poly
        best_s, cands = self.canon.candidates(s)
        sym = cands[0]
        if sym is None:
            return s, poly
        key = (sym.clocks, tuple(poly))
        got = self.rename_memo.get(key)
        if got is None:
            renamed: list[Lin] = []
            for c in poly:
                coefs = {
                    (clock_var(sym.clocks[int(v[1:])]) if v.startswith("c") else v): a
                    for v, a in c.coefs
                }
                renamed.append(Lin.make(coefs, c.const, c.strict))
            got = sorted(renamed)
            self.rename_memo[key] = got
        return best_s, list(got)

    def store(self, s: State, poly: list[Lin]) -> _Node | None:
        """Store (s, poly) unless a stored polyhedron of ``s`` includes it; retire the
        stored ones it includes.  Returns the new node, or None if covered."""
        nodes = self.passed.get(s)
        if nodes is None:
            nodes = []
            self.passed[s] = nodes
            self.stats.states += 1
        else:
            for old in nodes:
                if included(self.ctx, poly, old.poly):
                    return None
            keep = []
            for old in nodes:
                if included(self.ctx, old.poly, poly):
                    old.retired = True
                else:
                    keep.append(old)
            nodes[:] = keep
        node = _Node(poly)
        nodes.append(node)
        self.stats.symbolic_states += 1
        if self.max_states is not None and self.stats.symbolic_states > self.max_states:
            raise _Limit(f"state limit ({self.max_states}) reached")
        self.tick()
        return node

    def tick(self) -> None:
        """End the run at the time limit."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _Limit("time limit reached")

    def clocks_of(self, s: State) -> list[int]:
        mask = self.live.get(s) if self.live is not None else None
        if mask is None:
            return list(range(len(self.model.clock_names)))
        return [c for c in range(len(self.model.clock_names)) if mask >> c & 1]

    def check_state(self, s: State, poly: Sequence[Lin]) -> bool:
        """Report the properties (s, poly) breaks; True if it breaks any outright."""
        viol = self.model.violations(s)
        if viol:
            self.report(poly, viol[0].property)
            return True
        for h in self.model.hazards(s):
            got = self.conj(poly, self.atoms(h.atoms))
            if got is not None:
                self.report(got, h.property)
        return False

    # ---- search ----------------------------------------------------------------------------
    def run(self) -> SynthResult:
        ranges = range_constraints(self.model, self.free)
        limit = None
        try:
            self.search(ranges)
        except _Limit as lim:
            limit = str(lim)
        except OutOfTime:
            limit = "time limit reached"
        self.stats.seconds = time.monotonic() - self.start
        self.stats.queries = self.ctx.queries
        props = dict(enumerate(self.bad_props))
        return SynthResult(limit is None, self.free, ranges, self.bad, self.stats, limit, props)

    def search(self, ranges: list[Lin]) -> None:
        model = self.model
        frontier: deque[tuple[State, _Node]] = deque()
        for s0 in model.initial_states():
            clocks = self.clocks_of(s0)
            zero: list[Lin] = []
            for c in clocks:
                zero.append(Lin.make({clock_var(c): Fraction(1)}, Fraction(0), False))
                zero.append(Lin.make({clock_var(c): Fraction(-1)}, Fraction(0), False))
                if len(zero) % 1024 == 0:
                    self.tick()
            start = self.conj([*ranges, *self.base], zero)
            if start is None:
                continue
            if self.deadlock:
                self.timelocked_start(s0, start)
            poly = self.close(s0, start, clocks)
            if poly is None:
                continue
            cs, cp = self.canonical(s0, poly)
            node = self.store(cs, cp)
            if node is None:
                continue
            if not self.check_state(s0, poly):
                frontier.append((cs, node))
        while frontier:
            s, node = frontier.popleft()
            self.tick()
            if node.retired:
                continue  # a larger polyhedron of s was stored since: it covers this one
            poly = node.poly
            if self.bad.pieces:
                params = self.params_of(poly)
                if params is None or self.covered(params):
                    continue  # nothing new can be learned below this state
            clocks = self.clocks_of(s)
            edges = model.edges(s)
            if self.deadlock:
                for piece in self.deadlocks(s, poly, clocks, edges):
                    self.report(piece, "deadlock")
            for e in edges:
                g = self.conj(poly, self.atoms(e.guard))
                if g is None:
                    continue
                self.stats.transitions += 1
                if e.failure is not None:
                    self.report(g, "assert")
                    continue
                t = e.target
                tclocks = self.clocks_of(t)
                resets = set(e.resets)
                drop = [clock_var(c) for c in clocks if c in resets or c not in tclocks]
                cur = self.forget(g, drop)
                if cur is None:
                    continue
                for c in tclocks:
                    if c in resets or c not in clocks:
                        x = clock_var(c)
                        cur += [Lin.make({x: Fraction(1)}, Fraction(0), False),
                                Lin.make({x: Fraction(-1)}, Fraction(0), False)]
                nxt = self.close(t, cur, tclocks)
                if nxt is None:
                    continue
                cs, cp = self.canonical(t, nxt)
                node = self.store(cs, cp)
                if node is None:
                    continue
                if not self.check_state(t, nxt):
                    frontier.append((cs, node))


def explore_parametric(
    model: TimedModel,
    free: Sequence[str],
    base: Sequence[Lin] = (),
    max_states: int | None = None,
    timeout: float | None = None,
    symmetry: bool = True,
    deadlock: bool = True,
) -> SynthResult:
    """The bad parameter region of ``model`` over ``free`` (others at their values).

    ``base`` restricts the parameters explored (e.g. an assumption); ``deadlock``
    makes deadlocks bad too.  Raises SolverUnknown if Z3 cannot decide a query.
    """
    return _Parametric(model, free, base, max_states, timeout, symmetry, deadlock).run()


__all__ = [
    "Region",
    "SolverUnknown",
    "SynthResult",
    "SynthStats",
    "explore_parametric",
    "range_constraints",
]


# ---- presenting regions ---------------------------------------------------------------------


def _term(a: Fraction, name: str) -> str:
    if a == 1:
        return name
    return f"{_num(a)}*{name}"


def _ordered(terms: list[tuple[str, Fraction]], order: Sequence[str]
             ) -> list[tuple[str, Fraction]]:
    rank = {param_var(p): i for i, p in enumerate(order)}
    return sorted(terms, key=lambda t: (rank.get(t[0], len(rank)), t[0]))


def _num(x: Fraction) -> str:
    from checker.model.trace import fmt_time

    return fmt_time(x)


def _side(terms: list[tuple[str, Fraction]], const: Fraction = Fraction(0)) -> str:
    parts = [_term(a, v.removeprefix("p:")) for v, a in terms]
    if not parts:
        return _num(const)
    text = " + ".join(parts)
    if const > 0:
        text += f" + {_num(const)}"
    elif const < 0:
        text += f" - {_num(-const)}"
    return text


_FLIP_OP = {"<": ">", "<=": ">="}


def lin_text(c: Lin, order: Sequence[str] = ()) -> str:
    """A parameter constraint as a person writes it, e.g. ``T_hold > T_prop + T_flight``
    or ``T_a < 1/3`` (terms in the parameters' declaration ``order``; exact numbers)."""
    pos = _ordered([(v, a) for v, a in c.coefs if a > 0], order)
    neg = _ordered([(v, -a) for v, a in c.coefs if a < 0], order)
    op = "<" if c.strict else "<="
    # The constraint reads: pos + const  op  neg.
    if not neg:
        return f"{_side(pos)} {op} {_side([], -c.const)}"
    if not pos:
        return f"{_side(neg)} {_FLIP_OP[op]} {_side([], c.const)}"
    if len(neg) < len(pos) or (len(neg) == len(pos) and neg[0][0] < pos[0][0]):
        return f"{_side(neg)} {_FLIP_OP[op]} {_side(pos, c.const)}"
    return f"{_side(pos)} {op} {_side(neg, -c.const)}"


def essential(ctx: Z3Context, piece: Sequence[Lin], ranges: Sequence[Lin]) -> list[Lin]:
    """``piece`` without the constraints the ranges (and the rest of it) imply."""
    kept = [c for c in piece if c not in set(ranges)]
    i = 0
    while i < len(kept):
        others = [*ranges, *kept[:i], *kept[i + 1:]]
        if not ctx.sat([*others, kept[i].negate()]):
            kept.pop(i)
        else:
            i += 1
    return kept


def safe_region(result: SynthResult) -> list[list[Lin]]:
    """The safe region as a conjunction of disjunctions of constraints (CNF) — to be
    read together with the ranges.  ``[]`` is "every value"; ``[[]]`` is "none"."""
    ctx = Z3Context()
    cnf: list[list[Lin]] = []
    for piece in result.bad.pieces:
        core = essential(ctx, piece, result.ranges)
        cnf.append(sorted(c.negate() for c in core))
    return sorted(cnf)


def region_text(cnf: Sequence[Sequence[Lin]], order: Sequence[str] = ()) -> str:
    """A CNF region as readable text."""
    if not cnf:
        return "true"
    if any(not clause for clause in cnf):
        return "false"
    parts = []
    for clause in cnf:
        text = " or ".join(lin_text(c, order) for c in clause)
        parts.append(f"({text})" if len(clause) > 1 and len(cnf) > 1 else text)
    return " and ".join(parts)


def region_z3(cnf: Sequence[Sequence[Lin]], ranges: Sequence[Lin]) -> z3.BoolRef:
    """The region (within the ranges) as a Z3 formula over Reals named after the
    parameters."""
    ctx = Z3Context()
    ctx.vars = {}

    def e(c: Lin) -> z3.BoolRef:
        term: z3.ArithRef = z3.RealVal(str(c.const))
        for v, a in c.coefs:
            term = term + z3.RealVal(str(a)) * z3.Real(v.removeprefix("p:"))
        return term < 0 if c.strict else term <= 0

    clauses = [z3.Or(*[e(c) for c in clause]) if clause else z3.BoolVal(False)
               for clause in cnf]
    return z3.And(*[e(c) for c in ranges], *clauses)


def region_smtlib(cnf: Sequence[Sequence[Lin]], ranges: Sequence[Lin], free: Sequence[str]
                  ) -> str:
    """The region as an SMT-LIB script (declarations and one assertion)."""
    decls = "".join(f"(declare-const {p} Real)\n" for p in free)
    return decls + f"(assert {region_z3(cnf, ranges).sexpr()})\n"


SIMPLE_GAPS: tuple[Fraction | None, ...] = (Fraction(1), Fraction(1, 2), Fraction(1, 10),
                                           Fraction(1, 1000), None)
NEAR_GAPS: tuple[Fraction | None, ...] = (Fraction(1, 1000), Fraction(1, 10**6))


def nearest_point(ctx: Z3Context, cons: Sequence[Lin], extra: Sequence[z3.BoolRef],
                  free: Sequence[str], defaults: Mapping[str, Fraction],
                  gaps: Sequence[Fraction | None] = SIMPLE_GAPS
                  ) -> dict[str, Fraction] | None:
    """A point of the region closest (L1) to ``defaults``.  Strict constraints are
    tightened by each of ``gaps`` in turn (``None``: kept strict), so the first
    gaps prefer points with simple numbers away from open boundaries."""
    names = [param_var(p) for p in free]
    for gap in gaps:
        opt = z3.Optimize()
        opt.set("timeout", 20_000)
        for c in cons:
            if c.strict and gap is not None:
                c = Lin(c.coefs, c.const + gap, False)
            opt.add(ctx.expr(c))
        for x in extra:
            opt.add(x)
        dist = []
        for p, n in zip(free, names, strict=True):
            v = ctx.var(n)
            d = z3.Real(f"dist_{p}")
            opt.add(d >= v - z3.RealVal(str(defaults[p])), d >= z3.RealVal(str(defaults[p])) - v)
            dist.append(d)
        if dist:
            opt.minimize(z3.Sum(*dist))
        r = opt.check()
        if r == z3.sat:
            m = opt.model()
            out = {}
            for p, n in zip(free, names, strict=True):
                val = m.eval(ctx.var(n), model_completion=True)
                out[p] = Fraction(val.numerator_as_long(), val.denominator_as_long())
            return out
        if r == z3.unknown:
            raise SolverUnknown(opt.reason_unknown())
    return None


@dataclass
class ProveResult:
    """The outcome of ``prove``: whether the assumption implies safety."""

    status: str  # "proved" | "refuted" | "inconclusive"
    synth: SynthResult
    counterexample: dict[str, Fraction] | None = None
    """Parameter values inside the assumption where a property breaks."""
    boundary: dict[str, Fraction] | None = None
    """When proved: values on the assumption's boundary (just outside it) where a
    property breaks — the bound is tight."""
    near: dict[str, Fraction] | None = None
    """When proved and tight although no violation lies on the boundary itself
    (the bad region is open there): a violation within 1/1000 (or less) of it."""
    outside: dict[str, Fraction] | None = None
    """When proved but not tight: the violation outside the assumption closest to
    the defaults, if there is one at all."""
    vacuous: bool = False
    """The assumption admits no parameter value inside the ranges."""


def prove(model: TimedModel, assumption: Sequence[Lin], free: Sequence[str],
          max_states: int | None = None, timeout: float | None = None,
          deadlock: bool = True) -> ProveResult:
    """Whether every property holds for every valuation of ``free`` in the ranges
    that satisfies ``assumption`` (a conjunction)."""
    result = explore_parametric(model, free, (), max_states, timeout, deadlock=deadlock)
    ctx = Z3Context()
    defaults = {p: model.values[p] for p in free}
    inside = [*result.ranges, *assumption]
    for piece in result.bad.pieces:
        point = nearest_point(ctx, [*inside, *piece], [], free, defaults)
        if point is not None:
            return ProveResult("refuted", result, counterexample=point)
    if not result.complete:
        return ProveResult("inconclusive", result)
    vacuous = not ctx.sat(inside)
    closure = [Lin(c.coefs, c.const, False) for c in assumption]
    outside = z3.Or(*[ctx.expr(c.negate()) for c in assumption]) if assumption else \
        z3.BoolVal(False)
    for piece in result.bad.pieces:
        point = nearest_point(ctx, [*result.ranges, *closure, *piece], [outside], free,
                              defaults)
        if point is not None:
            return ProveResult("proved", result, boundary=point, vacuous=vacuous)
    for piece in result.bad.pieces:
        # Violations arbitrarily close to the boundary: the closures touch.
        touch = nearest_point(ctx, _closed([*result.ranges, *closure, *piece]), [], free,
                              defaults)
        if touch is None:
            continue
        point = nearest_point(ctx, [*result.ranges, *piece], [outside], free, touch,
                              NEAR_GAPS)
        if point is not None:
            return ProveResult("proved", result, near=point, vacuous=vacuous)
    for piece in result.bad.pieces:
        point = nearest_point(ctx, [*result.ranges, *piece], [outside], free, defaults)
        if point is not None:
            return ProveResult("proved", result, outside=point, vacuous=vacuous)
    return ProveResult("proved", result, vacuous=vacuous)


def _closed(cons: Sequence[Lin]) -> list[Lin]:
    """The topological closure of a conjunction: every strict constraint relaxed."""
    return [Lin(c.coefs, c.const, False) for c in cons]


def trace_region(model: TimedModel, shape: TraceShape, free: Sequence[str]) -> list[Lin]:
    """The exact parameter region (over ``free``, within the ranges; others at their
    values) in which the trace's sequence of events is feasible: the trace's
    timing constraints with every timestamp projected out (Fourier–Motzkin).
    Returns the essential constraints (those the ranges do not imply)."""
    bounds = [bound_lin(b, free, model.values) for b in model.bounds]
    ranges = range_constraints(model, free)
    cons: list[Lin] = []
    n = len(shape.edges)
    last_reset: dict[int, str | None] = {}

    def atom(a: ClockAtom, now: str) -> Lin:
        coefs, const = bounds[a.bound]
        since = last_reset.get(a.clock)
        # clock value = now - since  (since = t0 = 0 when never reset)
        lhs: dict[str, Fraction] = {now: Fraction(1)}
        if since is not None:
            lhs[since] = lhs.get(since, Fraction(0)) - 1
        if a.op in (LE, LT):
            cs = dict(lhs)
            for k, v in coefs.items():
                cs[k] = cs.get(k, Fraction(0)) - v
            return Lin.make(cs, -const, a.op == LT)
        cs = {k: -v for k, v in lhs.items()}
        for k, v in coefs.items():
            cs[k] = cs.get(k, Fraction(0)) + v
        return Lin.make(cs, const, a.op == GT)

    def t(i: int) -> str:
        return f"t{i}"

    cons.extend(atom(a, t(0)) for a in model.deadlines(shape.states[0]))
    cons.append(Lin.make({t(0): Fraction(1)}, Fraction(0), False))
    cons.append(Lin.make({t(0): Fraction(-1)}, Fraction(0), False))
    for i, e in enumerate(shape.edges):
        now = t(i + 1)
        cons.append(Lin.make({t(i): Fraction(1), now: Fraction(-1)}, Fraction(0), False))
        cons.extend(atom(a, now) for a in model.deadlines(shape.states[i]))
        cons.extend(atom(a, now) for a in e.guard)
        if e.failure is not None:
            break
        for c in e.resets:
            last_reset[c] = now
        cons.extend(atom(a, now) for a in model.deadlines(shape.states[i + 1]))
    if shape.hazard:
        end = t(n + 1)
        cons.append(Lin.make({t(n): Fraction(1), end: Fraction(-1)}, Fraction(0), False))
        cons.extend(atom(a, end) for a in model.deadlines(shape.states[-1]))
        cons.extend(atom(a, end) for a in shape.hazard)
    ctx = Z3Context()
    cur = dedupe([*cons, *ranges])
    if cur is None or not ctx.sat(cur):
        return [Lin((), Fraction(1), False)]
    times = sorted({v for c in cur for v in c.vars() if v.startswith("t")},
                   key=lambda v: -int(v[1:]))
    for v in times:
        got = eliminate(cur, v)
        if got is None:
            return [Lin((), Fraction(1), False)]
        cur = remove_redundant(ctx, got)
    return essential(ctx, cur, ranges)

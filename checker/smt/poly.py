"""Convex polyhedra over clocks and timing parameters, for parametric zones.

A polyhedron is a conjunction of linear constraints ``sum(a_v * v) + c < 0``
(or ``<= 0``) with exact rational coefficients.  Variables are strings:
``c<id>`` for clock ``id`` and ``p:<name>`` for a parameter.  Projection
(existential elimination of a variable) is Fourier–Motzkin, exact over the
reals and strict-aware; satisfiability and implication decide which redundant
constraints to remove, which keeps Fourier–Motzkin small.  Those queries are
memoised, most are decided exactly without a solver (:mod:`checker.smt.quick`),
and Z3 decides the rest.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import z3
from z3 import z3core

from checker.errors import Inconclusive

# Lin, clock_var and param_var are defined in checker.smt.lin; kept importable here.
from checker.smt.lin import Lin as Lin
from checker.smt.lin import clock_var as clock_var
from checker.smt.lin import param_var as param_var
from checker.smt.quick import Shortcuts, fm_decide
from checker.smt.timing import SEED, TIMEOUT_MS, SolverUnknown


class OutOfTime(Inconclusive):
    """A query was cut short (or not started) because the context's deadline passed."""


class Z3Context:
    """Z3 variables and a solver reused across queries (fixed seed, timeout).

    Satisfiability queries go through Z3's C API directly (push, assert the
    cached formula of each constraint, check, pop): the Python layer's argument
    checking costs more than the solving itself on these small systems.
    """

    def __init__(self) -> None:
        z3.set_param("smt.random_seed", SEED)
        self.vars: dict[str, z3.ArithRef] = {}
        self.exprs: dict[Lin, z3.BoolRef] = {}
        self.asts: dict[Lin, Any] = {}
        """The C handle of each constraint's formula for :meth:`sat` (see :meth:`_ast`)."""
        self.nums: dict[Fraction, Any] = {}
        self.held: list[z3.ExprRef] = []
        """Formulas built with the C API, referenced here so that Z3 keeps them."""
        self.memo: dict[frozenset[Lin], bool] = {}
        self.minimal: dict[tuple[frozenset[Lin], frozenset[Lin]], tuple[Lin, ...]] = {}
        self.solver = z3.Solver()
        self.solver.set("timeout", TIMEOUT_MS)
        self.solver.set("random_seed", SEED)
        self._timeout = TIMEOUT_MS
        self.queries = 0
        """How many queries Z3 answered (memoised ones and shortcuts not counted)."""
        self.shortcuts: Shortcuts | None = None
        """Exact solver-free decisions for parametric difference systems, if set."""
        self.deadline: float | None = None
        """A ``time.monotonic()`` instant: no query runs past it (OutOfTime)."""
        self.exact = True
        """Whether small systems are decided by exact elimination in Python
        (:func:`checker.smt.quick.fm_decide`) before Z3 is asked."""

    def _budget(self, s: z3.Solver) -> None:
        if self.deadline is None:
            return
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise OutOfTime()
        ms = max(1, min(TIMEOUT_MS, int(left * 1000) + 1))
        if s is not self.solver:
            s.set("timeout", ms)
        elif ms != self._timeout:
            s.set("timeout", ms)
            self._timeout = ms

    def var(self, name: str) -> z3.ArithRef:
        got = self.vars.get(name)
        if got is None:
            got = z3.Real(name)
            self.vars[name] = got
        return got

    def expr(self, c: Lin) -> z3.BoolRef:
        """A constraint as a Z3 formula (memoised)."""
        got = self.exprs.get(c)
        if got is None:
            got = self._expr(c)
            self.exprs[c] = got
        return got

    def _ast(self, c: Lin) -> Any:
        """The C handle of a formula equivalent to ``c``, for satisfiability queries,
        built with Z3's C API (memoised; the formula is kept in :attr:`held`)."""
        got = self.asts.get(c)
        if got is None:
            zctx = self.solver.ctx
            cref = zctx.ref()
            keep = self.held
            terms = []
            for v, a in c.coefs:
                x = self.var(v).as_ast()
                if a == 1:
                    terms.append(x)
                else:
                    prod = z3.ArithRef(z3core.Z3_mk_mul(
                        cref, 2, (z3.Ast * 2)(self._num(a), x)), zctx)
                    keep.append(prod)
                    terms.append(prod.as_ast())
            if c.const != 0 or not terms:
                terms.append(self._num(c.const))
            if len(terms) == 1:
                lhs = terms[0]
            else:
                total = z3.ArithRef(z3core.Z3_mk_add(
                    cref, len(terms), (z3.Ast * len(terms))(*terms)), zctx)
                keep.append(total)
                lhs = total.as_ast()
            mk = z3core.Z3_mk_lt if c.strict else z3core.Z3_mk_le
            formula = z3.BoolRef(mk(cref, lhs, self._num(Fraction(0))), zctx)
            keep.append(formula)
            got = formula.as_ast()
            self.asts[c] = got
        return got

    def _num(self, x: Fraction) -> Any:
        """The C handle of the real numeral ``x`` (memoised)."""
        got = self.nums.get(x)
        if got is None:
            ref = z3.ArithRef(z3core.Z3_mk_numeral(self.solver.ctx.ref(), str(x),
                                                   z3.RealSort().ast), self.solver.ctx)
            self.held.append(ref)
            got = ref.as_ast()
            self.nums[x] = got
        return got

    def _expr(self, c: Lin) -> z3.BoolRef:
        term: z3.ArithRef = z3.RealVal(str(c.const))
        for v, a in c.coefs:
            term = term + z3.RealVal(str(a)) * self.var(v)
        return term < 0 if c.strict else term <= 0

    def sat(self, cons: Iterable[Lin], extra: Sequence[z3.BoolRef] = (),
            new: Sequence[Lin] = ()) -> bool:
        """Whether the conjunction is satisfiable; raises SolverUnknown.

        Queries without ``extra`` formulas are memoised, and decided without Z3
        when :attr:`shortcuts` can (``new``: the constraints of ``cons`` just added
        to a satisfiable rest, a hint for them)."""
        if not extra:
            key = frozenset(cons)
            got = self.memo.get(key)
            if got is None:
                # The shortcuts never reach Z3's own time budget: thousands of them in a
                # row (removing redundant constraints) must still stop at the deadline.
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    raise OutOfTime()
                if self.shortcuts is not None:
                    got = self.shortcuts.decide(key, new)
                if got is None and self.exact:
                    got = fm_decide(key)
                if got is None:
                    got = self._sat(key, ())
                self.memo[key] = got
            return got
        return self._sat(cons, extra)

    def _sat(self, cons: Iterable[Lin], extra: Sequence[z3.BoolRef]) -> bool:
        self.queries += 1
        s = self.solver
        self._budget(s)
        cref = s.ctx.ref()
        sref = s.solver
        asts = self.asts
        z3core.Z3_solver_push(cref, sref)
        try:
            for c in cons:
                a = asts.get(c)
                if a is None:
                    a = self._ast(c)
                z3core.Z3_solver_assert(cref, sref, a)
            for e in extra:
                z3core.Z3_solver_assert(cref, sref, e.as_ast())
            r = z3core.Z3_solver_check(cref, sref)
            if r == z3.Z3_L_TRUE and self.shortcuts is not None and not extra:
                self._learn(s, self.shortcuts)
        finally:
            z3core.Z3_solver_pop(cref, sref, 1)
        if r == z3.Z3_L_UNDEF:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise OutOfTime()
            raise SolverUnknown(s.reason_unknown())
        return bool(r == z3.Z3_L_TRUE)

    def _learn(self, s: z3.Solver, shortcuts: Shortcuts) -> None:
        """Offer the parameter values of the model just found as a probe."""
        if not shortcuts.wants_probe():
            return
        m = s.model()
        point: list[Fraction] = []
        for name in shortcuts.params:
            val = m.eval(self.var(name), model_completion=True)
            point.append(Fraction(val.numerator_as_long(), val.denominator_as_long()))
        shortcuts.add_probe(point)

    def model(self, cons: Iterable[Lin], extra: Iterable[z3.BoolRef] = ()
              ) -> dict[str, Fraction] | None:
        """A satisfying assignment of the conjunction, or None."""
        s = z3.Solver()
        s.set("timeout", TIMEOUT_MS)
        s.set("random_seed", SEED)
        self._budget(s)
        for c in cons:
            s.add(self.expr(c))
        for e in extra:
            s.add(e)
        r = s.check()
        if r == z3.unknown:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise OutOfTime()
            raise SolverUnknown(s.reason_unknown())
        if r != z3.sat:
            return None
        m = s.model()
        out: dict[str, Fraction] = {}
        for name, v in self.vars.items():
            val = m.eval(v, model_completion=True)
            out[name] = Fraction(val.numerator_as_long(), val.denominator_as_long())
        return out


def dedupe(cons: Iterable[Lin]) -> list[Lin] | None:
    """Drop tautologies and, per coefficient vector, all but the tightest bound.

    Returns None if a constraint is contradictory on its own.
    """
    best: dict[int, Lin] = {}
    for c in cons:
        if not c.coefs:
            if c.const > 0 or (c.strict and c.const == 0):
                return None
            continue
        old = best.get(c.key)
        # e + k <= 0 is tighter for larger k; at equal k, strict is tighter.
        if old is None or c.const > old.const or (c.strict and c.const == old.const):
            best[c.key] = c
    return sorted(best.values())


def eliminate(cons: Sequence[Lin], v: str) -> list[Lin] | None:
    """Fourier–Motzkin: the projection of ``cons`` that forgets ``v``."""
    pos: list[tuple[Lin, Fraction]] = []
    neg: list[tuple[Lin, Fraction]] = []
    rest: list[Lin] = []
    for c in cons:
        a = c.coef(v)
        if a > 0:
            pos.append((c, a))
        elif a < 0:
            neg.append((c, -a))
        else:
            rest.append(c)
    for p, a in pos:
        pc = p.coefs if a == 1 else tuple((name, x / a) for name, x in p.coefs)
        pk = p.const if a == 1 else p.const / a
        for q, b in neg:
            coefs: dict[str, Fraction] = dict(pc)
            if b == 1:
                for name, x in q.coefs:
                    coefs[name] = coefs[name] + x if name in coefs else x
                qk = q.const
            else:
                for name, x in q.coefs:
                    coefs[name] = coefs[name] + x / b if name in coefs else x / b
                qk = q.const / b
            del coefs[v]
            rest.append(Lin.make(coefs, pk + qk, p.strict or q.strict))
    return dedupe(rest)


def remove_redundant(ctx: Z3Context, cons: Sequence[Lin],
                     known: frozenset[Lin] | set[Lin] = frozenset()) -> list[Lin]:
    """Drop constraints implied by the others.

    Constraints in ``known`` (already part of a minimal system the others were
    added to) are not tested, which keeps the number of solver queries down;
    the result may then keep a few redundant constraints, which is harmless.
    Results are memoised: parametric exploration derives the same systems often.
    """
    key = (frozenset(cons), frozenset(c for c in cons if c in known))
    got = ctx.minimal.get(key)
    if got is not None:
        return list(got)
    kept = list(cons)
    # A constraint is the only one to bound a variable from its side (e.g. the only
    # upper bound of a clock): the others let that variable grow past it, so they do
    # not imply it — if they are satisfiable, as they are when ``cons`` is.
    ups: dict[str, int] = {}
    downs: dict[str, int] = {}
    for c in kept:
        for v, a in c.coefs:
            side = ups if a > 0 else downs
            side[v] = side.get(v, 0) + 1
    feasible: bool | None = None
    i = 0
    while i < len(kept):
        c = kept[i]
        if c in known:
            i += 1
            continue
        if any((ups if a > 0 else downs)[v] == 1 for v, a in c.coefs):
            if feasible is None:
                feasible = ctx.sat(cons)
            if feasible:
                i += 1
                continue
        others = kept[:i] + kept[i + 1:]
        neg = kept[i].negate()
        if not ctx.sat([*others, neg], new=(neg,)):
            kept = others
            for v, a in c.coefs:
                (ups if a > 0 else downs)[v] -= 1
        else:
            i += 1
    ctx.minimal[key] = tuple(kept)
    return kept


def implies(ctx: Z3Context, cons: Sequence[Lin], c: Lin) -> bool:
    """Whether every point of ``cons`` satisfies ``c``."""
    neg = c.negate()
    return not ctx.sat([*cons, neg], new=(neg,))


def included(ctx: Z3Context, small: Sequence[Lin], big: Sequence[Lin]) -> bool:
    """Whether polyhedron ``small`` lies inside ``big``."""
    have = set(small)
    return all(c in have or implies(ctx, small, c) for c in big)


def _closed(c: Lin) -> Lin:
    """``c`` with its strict comparison made weak (its closure)."""
    return Lin(c.coefs, c.const, False, c.key) if c.strict else c


def convex_union(ctx: Z3Context, a: Sequence[Lin], b: Sequence[Lin]) -> list[Lin] | None:
    """The union of two (satisfiable) polyhedra when it is convex — it is then their
    convex hull —, else None (also when one includes the other).

    The candidate is the *envelope* (Bemporad, Fukuda, Torrisi, "Convexity recognition
    of the union of polyhedra", 2001): the constraints of ``a`` that ``b`` satisfies
    and those of ``b`` that ``a`` satisfies.  It contains both; it is their union
    exactly when every point of it outside ``a`` is inside ``b``, i.e. when it meets
    the negation of no constraint of ``a`` outside it together with the negation of
    one of ``b`` outside it.  Every step is an exact satisfiability query, so the
    result never adds a point (strict constraints included).

    First, two polyhedra whose closures do not meet are apart (a strictly separating
    hyperplane leaves a gap between them): their union is not convex, for one query."""
    if not ctx.sat([*map(_closed, a), *map(_closed, b)]):
        return None
    in_a, in_b = set(a), set(b)
    a_out = [c for c in a if c not in in_b and not implies(ctx, b, c)]
    if not a_out:
        return None  # b lies inside a
    b_out = [c for c in b if c not in in_a and not implies(ctx, a, c)]
    if not b_out:
        return None  # a lies inside b
    env = dedupe([*(c for c in a if c not in a_out), *(c for c in b if c not in b_out)])
    if env is None:  # pragma: no cover - env contains a, which is not empty
        return None
    for c in a_out:
        nc = c.negate()
        for q in b_out:
            nq = q.negate()
            if ctx.sat([*env, nc, nq], new=(nc, nq)):
                return None
    return remove_redundant(ctx, env)

"""Convex polyhedra over clocks and timing parameters, for parametric zones.

A polyhedron is a conjunction of linear constraints ``sum(a_v * v) + c < 0``
(or ``<= 0``) with exact rational coefficients.  Variables are strings:
``c<id>`` for clock ``id`` and ``p:<name>`` for a parameter.  Projection
(existential elimination of a variable) is Fourier–Motzkin, exact over the
reals and strict-aware; Z3 decides satisfiability and implication and removes
redundant constraints, which keeps Fourier–Motzkin small.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import z3

from checker.smt.timing import SEED, TIMEOUT_MS, SolverUnknown

Coefs = tuple[tuple[str, Fraction], ...]


def clock_var(c: int) -> str:
    """The variable name of clock ``c``."""
    return f"c{c}"


def param_var(p: str) -> str:
    """The variable name of parameter ``p``."""
    return f"p:{p}"


@dataclass(frozen=True, order=True)
class Lin:
    """``sum(coefs) + const < 0`` if ``strict`` else ``<= 0``, normalised."""

    coefs: Coefs
    const: Fraction
    strict: bool

    @staticmethod
    def make(coefs: Mapping[str, Fraction], const: Fraction, strict: bool) -> Lin:
        """A normalised constraint: zero coefficients dropped, leading |coef| = 1."""
        items = tuple(sorted((v, Fraction(a)) for v, a in coefs.items() if a != 0))
        if items:
            scale = abs(items[0][1])
            items = tuple((v, a / scale) for v, a in items)
            const = Fraction(const) / scale
        return Lin(items, Fraction(const), strict)

    def trivial(self) -> bool | None:
        """True if always satisfied, False if never, None if it has variables."""
        if self.coefs:
            return None
        return self.const < 0 if self.strict else self.const <= 0

    def coef(self, v: str) -> Fraction:
        """The coefficient of ``v`` (0 if absent)."""
        for name, a in self.coefs:
            if name == v:
                return a
        return Fraction(0)

    def negate(self) -> Lin:
        """The complement: ``not (e < 0)`` is ``-e <= 0``."""
        return Lin.make({v: -a for v, a in self.coefs}, -self.const, not self.strict)

    def vars(self) -> set[str]:
        """The variables of the constraint."""
        return {v for v, _ in self.coefs}


class OutOfTime(Exception):
    """A query was cut short (or not started) because the context's deadline passed."""


class Z3Context:
    """Z3 variables and a solver reused across queries (fixed seed, timeout)."""

    def __init__(self) -> None:
        z3.set_param("smt.random_seed", SEED)
        self.vars: dict[str, z3.ArithRef] = {}
        self.exprs: dict[Lin, z3.BoolRef] = {}
        self.memo: dict[frozenset[Lin], bool] = {}
        self.minimal: dict[tuple[frozenset[Lin], frozenset[Lin]], tuple[Lin, ...]] = {}
        self.solver = z3.Solver()
        self.solver.set("timeout", TIMEOUT_MS)
        self.solver.set("random_seed", SEED)
        self.queries = 0
        self.deadline: float | None = None
        """A ``time.monotonic()`` instant: no query runs past it (OutOfTime)."""

    def _budget(self, s: z3.Solver) -> None:
        if self.deadline is None:
            return
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise OutOfTime()
        s.set("timeout", max(1, min(TIMEOUT_MS, int(left * 1000) + 1)))

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

    def _expr(self, c: Lin) -> z3.BoolRef:
        term: z3.ArithRef = z3.RealVal(str(c.const))
        for v, a in c.coefs:
            term = term + z3.RealVal(str(a)) * self.var(v)
        return term < 0 if c.strict else term <= 0

    def sat(self, cons: Iterable[Lin], extra: Sequence[z3.BoolRef] = ()) -> bool:
        """Whether the conjunction is satisfiable; raises SolverUnknown.

        Queries without ``extra`` formulas are memoised."""
        if not extra:
            key = frozenset(cons)
            got = self.memo.get(key)
            if got is None:
                got = self._sat(key, ())
                self.memo[key] = got
            return got
        return self._sat(cons, extra)

    def _sat(self, cons: Iterable[Lin], extra: Sequence[z3.BoolRef]) -> bool:
        self.queries += 1
        s = self.solver
        self._budget(s)
        s.push()
        try:
            for c in cons:
                s.add(self.expr(c))
            for e in extra:
                s.add(e)
            r = s.check()
        finally:
            s.pop()
        if r == z3.unknown:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise OutOfTime()
            raise SolverUnknown(s.reason_unknown())
        return bool(r == z3.sat)

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
    best: dict[Coefs, Lin] = {}
    for c in cons:
        t = c.trivial()
        if t is True:
            continue
        if t is False:
            return None
        old = best.get(c.coefs)
        # e + k <= 0 is tighter for larger k; at equal k, strict is tighter.
        if old is None or c.const > old.const or (c.const == old.const and c.strict):
            best[c.coefs] = c
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
        for q, b in neg:
            coefs: dict[str, Fraction] = {}
            for name, x in p.coefs:
                coefs[name] = coefs.get(name, Fraction(0)) + x / a
            for name, x in q.coefs:
                coefs[name] = coefs.get(name, Fraction(0)) + x / b
            coefs.pop(v, None)
            rest.append(Lin.make(coefs, p.const / a + q.const / b, p.strict or q.strict))
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
    i = 0
    while i < len(kept):
        if kept[i] in known:
            i += 1
            continue
        others = kept[:i] + kept[i + 1:]
        if not ctx.sat([*others, kept[i].negate()]):
            kept = others
        else:
            i += 1
    ctx.minimal[key] = tuple(kept)
    return kept


def implies(ctx: Z3Context, cons: Sequence[Lin], c: Lin) -> bool:
    """Whether every point of ``cons`` satisfies ``c``."""
    return not ctx.sat([*cons, c.negate()])


def included(ctx: Z3Context, small: Sequence[Lin], big: Sequence[Lin]) -> bool:
    """Whether polyhedron ``small`` lies inside ``big``."""
    have = set(small)
    return all(c in have or implies(ctx, small, c) for c in big)

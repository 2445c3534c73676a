"""Linear constraints over clocks and timing parameters: the atoms of parametric
zones (:mod:`checker.smt.poly`) and of synthesised regions.

A constraint is ``sum(a_v * v) + c < 0`` (or ``<= 0``) with exact rational
coefficients.  Variables are strings: ``c<id>`` for clock ``id`` and
``p:<name>`` for a parameter.  Plain Python: the solver-free decisions of
:mod:`checker.smt.quick` and the Z3 queries of :mod:`checker.smt.poly` both work
on these.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

Coefs = tuple[tuple[str, Fraction], ...]


def clock_var(c: int) -> str:
    """The variable name of clock ``c``."""
    return f"c{c}"


def param_var(p: str) -> str:
    """The variable name of parameter ``p``."""
    return f"p:{p}"


_KEYS: dict[tuple[tuple[str, int, int], ...], int] = {}
"""Interned coefficient vectors: equal vectors share one small integer (``Lin.key``).
Keyed by numerators and denominators, which hash faster than fractions."""


def _key(coefs: Coefs) -> int:
    ik = tuple([(v, a.numerator, a.denominator) for v, a in coefs])
    got = _KEYS.get(ik)
    if got is None:
        got = len(_KEYS)
        _KEYS[ik] = got
    return got


_LINS: dict[tuple[int, int, int, bool], Lin] = {}
"""Constraints made by :meth:`Lin.make`, interned: equal ones are mostly one object,
so the many set and dictionary lookups on them compare by identity."""
_LINS_MAX = 1 << 20


_FRACS: dict[tuple[int, int], Fraction] = {}
"""Interned numbers of constraints: equal ones are one object, which tuple
comparison (sorting constraints) recognises without calling ``Fraction.__eq__``."""


def _intern(x: Fraction) -> Fraction:
    key = (x.numerator, x.denominator)
    got = _FRACS.get(key)
    if got is None:
        if len(_FRACS) >= _LINS_MAX:
            _FRACS.clear()
        _FRACS[key] = x
        got = x
    return got


def _frac(x: Fraction | int) -> Fraction:
    return x if type(x) is Fraction else Fraction(x)


class Lin:
    """``sum(coefs) + const < 0`` if ``strict`` else ``<= 0``, normalised by :meth:`make`.

    Immutable.  Ordered (and equal) as the tuple ``(coefs, const, strict)``; the
    hash and an integer ``key`` naming the coefficient vector are computed once,
    since polyhedra are compared, deduplicated and memoised by their constraints.
    """

    __slots__ = ("_hash", "_neg", "_t", "coefs", "const", "key", "strict")

    coefs: Coefs
    const: Fraction
    strict: bool
    key: int
    """Equal for two constraints exactly when their coefficient vectors are equal."""

    def __init__(self, coefs: Coefs, const: Fraction, strict: bool,
                 key: int | None = None, hashed: int | None = None) -> None:
        self.coefs = coefs
        self.const = const
        self.strict = strict
        self.key = _key(coefs) if key is None else key
        self._hash = (hash((self.key, const.numerator, const.denominator, strict))
                      if hashed is None else hashed)
        self._neg: Lin | None = None
        self._t = (coefs, const, strict)

    def __reduce__(self) -> tuple[type[Lin], tuple[Coefs, Fraction, bool]]:
        return (Lin, (self.coefs, self.const, self.strict))

    def __repr__(self) -> str:
        return f"Lin(coefs={self.coefs!r}, const={self.const!r}, strict={self.strict!r})"

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Lin):
            return NotImplemented
        return (self._hash == other._hash and self.key == other.key
                and self.strict == other.strict and self.const == other.const)

    def __lt__(self, other: Lin) -> bool:
        return self._t < other._t

    def __le__(self, other: Lin) -> bool:
        return self._t <= other._t

    def __gt__(self, other: Lin) -> bool:
        return self._t > other._t

    def __ge__(self, other: Lin) -> bool:
        return self._t >= other._t

    @staticmethod
    def make(coefs: Mapping[str, Fraction | int], const: Fraction | int, strict: bool) -> Lin:
        """A normalised constraint: zero coefficients dropped, leading |coef| = 1."""
        items = sorted((v, _frac(a)) for v, a in coefs.items() if a != 0)
        const = _frac(const)
        if items:
            scale = items[0][1]
            if scale < 0:
                scale = -scale
            if scale != 1:
                items = [(v, a / scale) for v, a in items]
                const = const / scale
            items = [(v, _intern(a)) for v, a in items]
        const = _intern(const)
        coefs_t = tuple(items)
        key = _key(coefs_t)
        ident = (key, const.numerator, const.denominator, strict)
        hashed = hash(ident)
        got = _LINS.get(ident)
        if got is None:
            if len(_LINS) >= _LINS_MAX:
                _LINS.clear()
            got = Lin(coefs_t, const, strict, key, hashed)
            _LINS[ident] = got
        return got

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
        got = self._neg
        if got is None:
            got = Lin.make({v: -a for v, a in self.coefs}, -self.const, not self.strict)
            self._neg = got
        return got

    def vars(self) -> set[str]:
        """The variables of the constraint."""
        return {v for v, _ in self.coefs}


LinFormula = bool | Lin | tuple[str, tuple["LinFormula", ...]]
"""A parameter region as a formula: ``True``/``False``, a constraint, or
``("and" | "or" | "not", parts)`` (an expected region, as a test states it)."""

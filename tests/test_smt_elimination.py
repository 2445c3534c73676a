"""The exact solver-free decision of small systems (``checker.smt.quick.fm_decide``,
Fourier–Motzkin in integer arithmetic) against Z3.

Synthesis decides small satisfiability queries by eliminating every variable; a
wrong answer there would make a synthesized region wrong.  Thousands of random
polyhedra — difference constraints over clocks and parameters, general linear
ones with fractional coefficients, strict and non-strict, degenerate (equalities,
zero-width strict gaps) — are decided both ways: the elimination may give up
(too many rows or variables), but never disagree with Z3.
"""

from __future__ import annotations

import random
from fractions import Fraction

from checker.smt.poly import Lin, Z3Context, remove_redundant
from checker.smt.quick import Shortcuts, fm_decide

VARS = ["c0", "c1", "c2", "p:A", "p:B", "p:C"]
COEFS = [Fraction(-2), Fraction(-1), Fraction(-1), Fraction(-1, 2), Fraction(1, 3),
         Fraction(1), Fraction(1), Fraction(3, 2), Fraction(2)]
CONSTS = [Fraction(k, d) for k in range(-5, 6) for d in (1, 1, 2, 3)]


def random_lin(r: random.Random, nvars: int) -> Lin:
    """A random constraint over the first ``nvars`` variables: a difference ``x - y``
    or a bound ``+-x``, plus parameters, or a general linear form."""
    names = VARS[:nvars]
    coefs: dict[str, Fraction] = {}
    kind = r.random()
    if kind < 0.35:
        x, y = r.sample(names, 2)
        coefs[x], coefs[y] = Fraction(1), Fraction(-1)
    elif kind < 0.6:
        coefs[r.choice(names)] = r.choice([Fraction(1), Fraction(-1)])
    else:
        for v in r.sample(names, r.randint(1, min(3, nvars))):
            coefs[v] = r.choice(COEFS)
    for p in names[3:]:
        if r.random() < 0.3:
            coefs[p] = coefs.get(p, Fraction(0)) + r.choice(COEFS)
    return Lin.make(coefs, r.choice(CONSTS), r.random() < 0.4)


def random_system(r: random.Random) -> list[Lin]:
    nvars = r.randint(2, len(VARS))
    cons = [random_lin(r, nvars) for _ in range(r.randint(1, 12))]
    if r.random() < 0.3:  # an equality, or a zero-width gap, from a negated constraint
        c = r.choice(cons)
        neg = c.negate()
        cons.append(Lin.make(dict(neg.coefs), neg.const, False))
    return cons


def test_elimination_never_disagrees_with_z3() -> None:
    r = random.Random(20261206)
    z3ctx = Z3Context()
    z3ctx.exact = False  # Z3 alone
    decided = {True: 0, False: 0}
    for _ in range(1000):
        cons = random_system(r)
        got = fm_decide(cons)
        if got is None:
            continue
        assert got == z3ctx.sat(cons), cons
        decided[got] += 1
    assert decided[True] >= 200 and decided[False] >= 200, decided


def test_elimination_gives_up_beyond_its_limits() -> None:
    cons = [Lin.make({v: Fraction(1)}, Fraction(-1), False) for v in VARS]
    assert fm_decide(cons, max_vars=len(VARS) - 1) is None
    assert fm_decide(cons) is True
    # Three variables in [0, 1]: eliminating one leaves five rows.
    box = [Lin.make({v: Fraction(sign)}, Fraction(-1 if sign > 0 else 0), False)
           for v in ("c0", "c1", "p:A") for sign in (1, -1)]
    assert fm_decide(box, max_rows=4) is None
    assert fm_decide(box, max_rows=5) is True


def test_strictness_at_the_boundary() -> None:
    # x <= A, A <= x: satisfiable; x < A, A <= x: not; 2x < 1, -3x <= -3/2: not.
    x_le_a = Lin.make({"c0": Fraction(1), "p:A": Fraction(-1)}, Fraction(0), False)
    a_le_x = Lin.make({"c0": Fraction(-1), "p:A": Fraction(1)}, Fraction(0), False)
    assert fm_decide([x_le_a, a_le_x]) is True
    x_lt_a = Lin.make({"c0": Fraction(1), "p:A": Fraction(-1)}, Fraction(0), True)
    assert fm_decide([x_lt_a, a_le_x]) is False
    assert fm_decide([x_le_a.negate(), a_le_x]) is True
    assert fm_decide([Lin.make({"c0": Fraction(2)}, Fraction(-1), True),
                      Lin.make({"c0": Fraction(-3)}, Fraction(3, 2), False)]) is False
    assert fm_decide([]) is True
    assert fm_decide([Lin.make({}, Fraction(0), True)]) is False


def plain_remove_redundant(ctx: Z3Context, cons: list[Lin]) -> list[Lin]:
    """Redundancy removal as plain as it gets: one implication query per constraint."""
    kept = list(cons)
    i = 0
    while i < len(kept):
        others = kept[:i] + kept[i + 1:]
        if not ctx.sat([*others, kept[i].negate()]):
            kept = others
        else:
            i += 1
    return kept


def test_redundancy_removal_agrees_with_plain_z3() -> None:
    # Elimination, the probes and the rule that keeps a constraint alone in bounding a
    # variable from its side, against a query per constraint to Z3 alone.
    r = random.Random(11)
    plain = Z3Context()
    plain.exact = False
    fast = Z3Context()
    fast.shortcuts = Shortcuts(VARS[3:], [[Fraction(1), Fraction(2), Fraction(5)],
                                          [Fraction(4), Fraction(0), Fraction(1, 2)]])
    compared = 0
    for _ in range(150):
        cons = random_system(r)
        if not plain.sat(cons):
            continue
        ordered = sorted(set(cons))
        assert remove_redundant(fast, ordered) == plain_remove_redundant(plain, ordered)
        compared += 1
    assert compared >= 40
    assert fast.queries < plain.queries

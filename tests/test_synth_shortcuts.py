"""The solver-free satisfiability shortcuts (``checker.smt.quick``) against Z3.

Synthesis decides most of its queries without Z3: a probe valuation of the
parameters at which the constraint graph has no infeasible cycle proves a
system satisfiable, a short cycle infeasible throughout the system's own
parameter bounds proves it unsatisfiable.  Here thousands of random parametric
difference systems (strict and non-strict, parameter-only constraints,
fractional coefficients, constraints outside the difference form) are decided
both ways: a shortcut may give up, but never disagree with Z3.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from checker.smt.poly import Lin, Z3Context, remove_redundant
from checker.smt.quick import Shortcuts

PARAMS = ["p:A", "p:B", "p:C"]
CLOCKS = ["c0", "c1", "c2", "c3"]
COEFS = [Fraction(-1), Fraction(0), Fraction(0), Fraction(1), Fraction(1, 2), Fraction(2)]
CONSTS = [Fraction(k, d) for k in range(-6, 7) for d in (1, 1, 2, 3)]


def random_lin(r: random.Random) -> Lin:
    """A random constraint, mostly of the difference form."""
    coefs: dict[str, Fraction] = {}
    kind = r.random()
    if kind < 0.45:  # x - y + params
        x, y = r.sample(CLOCKS, 2)
        coefs[x], coefs[y] = Fraction(1), Fraction(-1)
    elif kind < 0.75:  # +-x + params
        coefs[r.choice(CLOCKS)] = r.choice([Fraction(1), Fraction(-1)])
    elif kind < 0.8:  # not a difference constraint
        x, y = r.sample(CLOCKS, 2)
        coefs[x], coefs[y] = Fraction(1), r.choice([Fraction(1), Fraction(2)])
    for p in PARAMS:
        if r.random() < 0.4:
            coefs[p] = coefs.get(p, Fraction(0)) + r.choice(COEFS)
    return Lin.make(coefs, r.choice(CONSTS), r.random() < 0.4)


def bounds(r: random.Random) -> list[Lin]:
    """Declared-range-like bounds on some of the parameters."""
    out = []
    for p in PARAMS:
        if r.random() < 0.8:
            out.append(Lin.make({p: Fraction(-1)}, Fraction(r.randint(0, 2)), r.random() < 0.2))
        if r.random() < 0.8:
            out.append(Lin.make({p: Fraction(1)}, -Fraction(r.randint(3, 10)), r.random() < 0.2))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_shortcuts_never_disagree_with_z3(seed: int) -> None:
    r = random.Random(seed)
    ctx = Z3Context()
    ctx.exact = False  # Z3 alone
    probes = [[Fraction(r.randint(0, 8), r.choice([1, 2])) for _ in PARAMS] for _ in range(4)]
    quick = Shortcuts(PARAMS, probes)
    decided = {True: 0, False: 0}
    for _ in range(300):
        cons = bounds(r) + [random_lin(r) for _ in range(r.randint(1, 9))]
        new = r.sample(cons, r.randint(0, min(3, len(cons))))
        want = ctx.sat(cons)
        got = quick.decide(cons, new)
        if got is not None:
            assert got == want, (cons, new)
            decided[got] += 1
    assert decided[True] >= 20 and decided[False] >= 5, decided


@pytest.mark.slow
def test_redundancy_removal_with_and_without_shortcuts_agree() -> None:
    r = random.Random(7)
    plain = Z3Context()
    plain.exact = False  # Z3 alone
    fast = Z3Context()
    fast.exact = False
    fast.shortcuts = Shortcuts(PARAMS, [[Fraction(1), Fraction(2), Fraction(5)],
                                        [Fraction(4), Fraction(0), Fraction(1, 2)]])
    for _ in range(150):
        cons = bounds(r) + [random_lin(r) for _ in range(r.randint(2, 10))]
        if not plain.sat(cons):
            continue
        ordered = sorted(set(cons))
        assert remove_redundant(fast, ordered) == remove_redundant(plain, ordered)
    assert fast.queries < plain.queries


def test_a_zero_weight_strict_cycle_is_infeasible() -> None:
    # x4 <= F, x5 >= 0, x5 - x4 < -F: the cycle weighs 0 through a strict edge.
    cons = [Lin.make({"c4": Fraction(1), "p:A": Fraction(-1)}, Fraction(0), False),
            Lin.make({"c5": Fraction(-1)}, Fraction(0), False),
            Lin.make({"c5": Fraction(1), "c4": Fraction(-1), "p:A": Fraction(1)},
                     Fraction(0), True),
            Lin.make({"p:A": Fraction(-1)}, Fraction(0), False),
            Lin.make({"p:A": Fraction(1)}, Fraction(-10), False)]
    quick = Shortcuts(["p:A"], [[Fraction(3)], [Fraction(0)]])
    assert quick.decide(cons, [cons[2]]) is False
    assert quick.decide(cons) is None  # no probe satisfies it, and no hint to refute
    assert not Z3Context().sat(cons)

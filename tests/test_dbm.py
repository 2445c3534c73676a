"""Tests of ``checker.domains.dbm`` against brute-force references.

A reference zone is a list of constraints ``(i, j, c, strict)`` meaning
``x_i - x_j < c`` (strict) or ``x_i - x_j <= c`` over clocks ``1..k`` (``x_0 = 0``),
with every clock ``>= 0``.  Two independent oracles are used:

* point sets on a rational grid (multiples of 1/4, per-dimension bound in
  ``GRID_MAX``); a set is an int whose byte ``p`` is 1 iff grid point ``p`` is in it,
  so set algebra is int algebra and per-constraint masks are cached;
* exact emptiness / existential questions by Fourier–Motzkin elimination over the
  raw constraint list (used for "detects emptiness exactly", for the tightness of
  every canonical entry, for inclusion and for projection).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from fractions import Fraction
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.domains import dbm as D

pytestmark = pytest.mark.slow

Con = tuple[int, int, int, bool]

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

SCALE = 4  # grid step 1/4: enough to separate every region of up to 3 clocks
GRID_MAX = {0: 0, 1: 12 * SCALE, 2: 8 * SCALE, 3: 4 * SCALE}
INF = D.INF
LE0 = D.LE_ZERO


def lt(c: int) -> int:
    return D.bound(c, True)


def le(c: int) -> int:
    return D.bound(c, False)


# ------------------------------------------------------------------ grid point sets


@cache
def points(k: int) -> list[tuple[int, ...]]:
    """Grid points (scaled by SCALE) with a leading 0 for the reference clock."""
    return [(0, *p) for p in itertools.product(range(GRID_MAX[k] + 1), repeat=k)]


@cache
def full(k: int) -> int:
    return int.from_bytes(b"\x01" * len(points(k)), "big")


@cache
def diffs(k: int, i: int, j: int) -> list[int]:
    return [p[i] - p[j] for p in points(k)]


@cache
def cmask(k: int, i: int, j: int, c_scaled: int, strict: bool) -> int:
    ds = diffs(k, i, j)
    if strict:
        return int.from_bytes(bytes([x < c_scaled for x in ds]), "big")
    return int.from_bytes(bytes([x <= c_scaled for x in ds]), "big")


def ref_mask(k: int, cons: list[Con]) -> int:
    m = full(k)
    for i, j, c, s in cons:
        m &= cmask(k, i, j, c * SCALE, s)
    return m


def dbm_cons(d: D.Dbm, k: int) -> list[Con]:
    """The finite off-diagonal entries of a DBM as reference constraints."""
    n = k + 1
    out: list[Con] = []
    for i in range(n):
        for j in range(n):
            e = d[i * n + j]
            if i != j and e < INF:
                out.append((i, j, e >> 1, not e & 1))
    return out


def dbm_mask(d: D.Dbm, k: int) -> int:
    return ref_mask(k, dbm_cons(d, k))


def pred_mask(k: int, pred: Callable[[tuple[int, ...]], bool]) -> int:
    return int.from_bytes(bytes([bool(pred(p)) for p in points(k)]), "big")


@cache
def point_index(k: int) -> dict[tuple[int, ...], int]:
    return {p: idx for idx, p in enumerate(points(k))}


def in_mask(mask: int, k: int, p: tuple[int, ...]) -> bool:
    return bool((mask >> (8 * (len(points(k)) - 1 - point_index(k)[p]))) & 1)


@cache
def box_mask(k: int, box: int) -> int:
    return pred_mask(k, lambda p: max(p) <= box)


def holds(diff: int, c: int, strict: bool) -> bool:
    return diff < c if strict else diff <= c


# ------------------------------------------------- exact oracle: Fourier–Motzkin


def fm_feasible(cons: list[tuple[int, int, int, bool]], nvars: int) -> bool:
    """Whether ``x_0 = 0``, ``x_1..x_nvars >= 0`` and ``cons`` have a real solution."""
    best: dict[tuple[int, int], tuple[int, bool]] = {}

    def put(i: int, j: int, c: int, s: bool) -> bool:
        if i == j:
            return c > 0 or (c == 0 and not s)
        old = best.get((i, j))
        if old is None or (c, not s) < (old[0], not old[1]):
            best[(i, j)] = (c, s)
        return True

    for i, j, c, s in cons:
        if not put(i, j, c, s):
            return False
    for v in range(1, nvars + 1):
        put(0, v, 0, False)
    for v in range(1, nvars + 1):
        ins = [(i, c, s) for (i, j), (c, s) in best.items() if j == v]
        outs = [(j, c, s) for (i, j), (c, s) in best.items() if i == v]
        best = {ij: cs for ij, cs in best.items() if v not in ij}
        for i, c1, s1 in ins:
            for j, c2, s2 in outs:
                if not put(i, j, c1 + c2, s1 or s2):
                    return False
    return True


def nonempty(k: int, cons: list[Con]) -> bool:
    return fm_feasible(list(cons), k)


def fm_exists(k: int, cons: list[Con], fixed: dict[int, int]) -> bool:
    """Scaled: do values of the clocks not in ``fixed`` exist extending ``fixed``?"""
    free_vars = [v for v in range(1, k + 1) if v not in fixed]
    ren = {0: 0} | {v: r + 1 for r, v in enumerate(free_vars)}
    out = []
    for i, j, c, s in cons:
        cc = c * SCALE - fixed.get(i, 0) + fixed.get(j, 0)
        out.append((ren.get(i, 0), ren.get(j, 0), cc, s))
    return fm_feasible(out, len(free_vars))


def negation(con: Con) -> Con:
    i, j, c, s = con
    return (j, i, -c, not s)


def ref_subset(k: int, small: list[Con], big: list[Con]) -> bool:
    return all(not nonempty(k, [*small, negation(con)]) for con in big)


def assert_exact_canonical(d: D.Dbm, k: int, cons: list[Con]) -> None:
    """Every entry of ``d`` is the exact tightest bound of the zone ``cons``."""
    n = k + 1
    assert d[:: n + 1] == [LE0] * n
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            e = d[i * n + j]
            if e >= INF:  # x_i - x_j unbounded above
                assert nonempty(k, [*cons, (j, i, -100, False)]), (i, j)
                continue
            c, strict = e >> 1, not e & 1
            # sound: no point violates the bound
            assert not nonempty(k, [*cons, negation((i, j, c, strict))]), (i, j)
            # tight: the next tighter bound is violated by some point
            witness = (j, i, 1 - c, True) if strict else (j, i, -c, False)
            assert nonempty(k, [*cons, witness]), (i, j)


# ------------------------------------------------------------------- constructions


def raw(k: int, cons: list[Con]) -> D.Dbm:
    n = k + 1
    d = D.universe(n)
    for i, j, c, s in cons:
        d[i * n + j] = min(d[i * n + j], D.bound(c, s))
    return d


def canon(k: int, cons: list[Con]) -> D.Dbm:
    d = raw(k, cons)
    assert D.canonicalize(d, k + 1)
    return d


def is_closed(d: D.Dbm, n: int) -> bool:
    c = d[:]
    return D.canonicalize(c, n) and c == d


# ---------------------------------------------------------------------- strategies


@cache
def all_constraints(k: int) -> list[Con]:
    """Every reference constraint over ``k`` clocks, simplest (for shrinking) first."""
    cons = [
        (i, j, c, s)
        for c in sorted(range(-4, 7), key=abs)
        for s in (False, True)
        for i in range(k + 1)
        for j in range(k + 1)
        if i != j
    ]
    return cons


def constraints(k: int) -> st.SearchStrategy[Con]:
    return st.sampled_from(all_constraints(k))


@st.composite
def zones(
    draw: st.DrawFn, k: int | None = None, nonempty_only: bool = True, max_size: int = 5
) -> tuple[int, list[Con]]:
    if k is None:
        k = draw(st.integers(1, 3))
    raw_cons = draw(st.lists(constraints(k), max_size=max_size))
    if not nonempty_only:
        return k, raw_cons
    cons: list[Con] = []
    for con in raw_cons:  # keep the constraints that leave the zone non-empty
        if nonempty(k, [*cons, con]):
            cons.append(con)
    return k, cons


@st.composite
def zone_pairs(draw: st.DrawFn) -> tuple[int, list[Con], list[Con]]:
    k = draw(st.integers(1, 3))
    _, a = draw(zones(k))
    _, b2 = draw(zones(k))
    return k, a, b2


# ------------------------------------------------------------------ bounds (by hand)


def test_bound_encoding() -> None:
    assert D.LE_ZERO == D.bound(0, False) == 1
    assert D.LT_ZERO == D.bound(0, True) == 0
    assert D.bound(3, False) == 7 and D.bound(3, True) == 6
    assert D.bound(-2, False) == -3 and D.bound(-2, True) == -4
    for c in range(-10, 11):
        for s in (False, True):
            e = D.bound(c, s)
            assert D.bound_value(e) == c
            assert D.bound_is_strict(e) == s
            assert e < INF
    # ordering: (<c) < (<=c) < (<c+1)
    assert D.bound(2, True) < D.bound(2, False) < D.bound(3, True)


def test_add_and_negate() -> None:
    for c1, c2 in itertools.product(range(-6, 7), repeat=2):
        for s1, s2 in itertools.product((False, True), repeat=2):
            got = D.add(D.bound(c1, s1), D.bound(c2, s2))
            assert got == D.bound(c1 + c2, s1 or s2)
    assert D.add(INF, le(3)) == INF and D.add(lt(-3), INF) == INF and D.add(INF, INF) == INF
    # not (x - y <= 3)  is  y - x < -3;   not (x - y < 3)  is  y - x <= -3
    assert D.negate(le(3)) == lt(-3)
    assert D.negate(lt(3)) == le(-3)
    assert D.negate(D.negate(le(-2))) == le(-2)


def test_zero_universe_key() -> None:
    assert D.zero(3) == [LE0] * 9
    assert D.universe(3) == [LE0, LE0, LE0, INF, LE0, INF, INF, INF, LE0]
    assert D.universe(1) == [LE0] == D.zero(1)
    assert is_closed(D.universe(4), 4) and is_closed(D.zero(4), 4)
    assert D.key(D.zero(2)) == (1, 1, 1, 1)
    assert hash(D.key(D.universe(3))) == hash(tuple(D.universe(3)))


# -------------------------------------------------------------- hand-computed DBMs

# x >= 2, x < 5, x - y <= 0, y - x < 3   (clocks x = 1, y = 2)
EX1_CONS: list[Con] = [(0, 1, -2, False), (1, 0, 5, True), (1, 2, 0, False), (2, 1, 3, True)]
EX1 = [
    le(0), le(-2), le(-2),
    lt(5), le(0), le(0),
    lt(8), lt(3), le(0),
]  # fmt: skip


def test_canonicalize_hand() -> None:
    d = raw(2, EX1_CONS)
    assert D.canonicalize(d, 3)
    assert d == EX1
    # x <= 1 && x > 2: empty;  x < 1 && x >= 1: empty;  x <= 1 && x >= 1: not
    for cons, ok in [
        ([(1, 0, 1, False), (0, 1, -2, True)], False),
        ([(1, 0, 1, True), (0, 1, -1, False)], False),
        ([(1, 0, 1, False), (0, 1, -1, False)], True),
    ]:
        d = raw(1, cons)
        assert D.canonicalize(d, 2) is ok
        assert D.is_empty(d, 2) is not ok
    # strict cycle through two clocks: x - y < 0 && y - x <= 0 is empty
    d = raw(2, [(1, 2, 0, True), (2, 1, 0, False)])
    assert not D.canonicalize(d, 3)


def test_constrain_hand() -> None:
    d = D.universe(3)
    assert D.constrain(d, 3, 1, 2, le(1))  # x - y <= 1
    assert D.constrain(d, 3, 2, 0, le(2))  # y <= 2
    assert d == [le(0), le(0), le(0), le(3), le(0), le(1), le(2), le(2), le(0)]
    before = d[:]
    assert D.constrain(d, 3, 1, 0, le(5))  # not tighter: no-op
    assert D.constrain(d, 3, 1, 2, INF)
    assert d == before
    assert not D.constrain(d, 3, 0, 1, lt(-3))  # x > 3 contradicts x <= 3
    assert d == before  # left unchanged
    assert D.constrain(d, 3, 0, 1, le(-3))  # x >= 3 forces x == 3, y == 2
    assert d == [le(0), le(-3), le(-2), le(3), le(0), le(1), le(2), le(-1), le(0)]


def test_ops_hand() -> None:
    d = EX1[:]
    D.up(d, 3)
    assert d == [le(0), le(-2), le(-2), INF, le(0), le(0), INF, lt(3), le(0)]

    d = EX1[:]
    D.reset(d, 3, 1)
    assert d == [le(0), le(0), le(-2), le(0), le(0), le(-2), lt(8), lt(8), le(0)]

    d = EX1[:]
    D.free(d, 3, 1)
    assert d == [le(0), le(0), le(-2), INF, le(0), INF, lt(8), lt(8), le(0)]

    assert D.project(EX1, 3, [2]) == [le(0), le(-2), lt(8), le(0)]
    assert D.project(EX1, 3, [2, 1]) == D.permute(EX1, 3, [0, 2, 1])
    assert D.project(EX1, 3, []) == [le(0)]
    assert D.permute(EX1, 3, [0, 2, 1]) == [
        le(0), le(-2), le(-2),
        lt(8), le(0), lt(3),
        lt(5), le(0), le(0),
    ]  # fmt: skip

    x_le_3 = [le(0), le(0), le(3), le(0)]
    assert D.embed(x_le_3, 2, [0, 2], 3) == [
        le(0), le(0), le(0),
        le(0), le(0), le(0),
        le(3), le(3), le(0),
    ]  # fmt: skip
    assert D.embed(x_le_3, 2, [0, 1], 2) == x_le_3
    assert D.embed([le(0)], 1, [0], 3) == D.zero(3)
    for bad_map, m in [([1, 0], 2), ([0, 0], 2), ([0, 3], 3), ([0], 2)]:
        with pytest.raises(ValueError):
            D.embed(x_le_3, 2, bad_map, m)
    for bad_perm in [[0, 1, 1], [1, 0, 2], [0, 1]]:
        with pytest.raises(ValueError):
            D.permute(EX1, 3, bad_perm)

    x_ge_1 = [le(0), le(-1), INF, le(0)]
    assert D.intersect(x_le_3, x_ge_1, 2) == [le(0), le(-1), le(3), le(0)]
    assert D.intersect(x_le_3, [le(0), le(-4), INF, le(0)], 2) is None
    assert D.includes(D.universe(2), x_le_3, 2)
    assert not D.includes(x_le_3, D.universe(2), 2)

    # (x <= 4) \ (x <= 2) == 2 < x <= 4
    assert D.subtract([le(0), le(0), le(4), le(0)], [le(0), le(0), le(2), le(0)], 2) == [
        [le(0), lt(-2), le(4), le(0)]
    ]
    # universe \ (1 <= x <= 2) == x < 1  |  x > 2
    pieces = D.subtract(D.universe(2), [le(0), le(-1), le(2), le(0)], 2)
    assert sorted(pieces) == sorted([[le(0), lt(-2), INF, le(0)], [le(0), le(0), lt(1), le(0)]])
    assert D.subtract(x_le_3, D.universe(2), 2) == []
    assert D.subtract(x_le_3, [le(0), le(-4), INF, le(0)], 2) == [x_le_3]


def test_satisfies_hand() -> None:
    f = Fraction
    assert D.satisfies(EX1, 3, [0, 2, 2])
    assert not D.satisfies(EX1, 3, [0, 5, 5])  # x < 5
    assert not D.satisfies(EX1, 3, [0, 2, 5])  # y - x < 3
    assert D.satisfies(EX1, 3, [f(0), f(9, 2), f(7)])
    assert not D.satisfies(EX1, 3, [f(0), f(9, 2), f(15, 2)])  # y - x == 3
    assert D.satisfies(D.universe(3), 3, [0, 100, f(1, 3)])


def test_to_str_hand() -> None:
    assert D.to_str(D.universe(3), 3, ["0", "x", "y"]) == "true"
    assert D.to_str(D.zero(3), 3, ["x", "y"]) == "x == 0 && y == 0"
    assert (
        D.to_str(EX1, 3, ["x", "y"])
        == "x >= 2 && x < 5 && y >= 2 && y < 8 && x - y <= 0 && y - x < 3"
    )
    d = canon(2, [(1, 0, 3, False), (2, 1, 2, True)])  # x <= 3 && y - x < 2
    assert D.to_str(d, 3, ["t0", "x", "y"]) == "x <= 3 && y < 5 && y - x < 2"
    d = canon(2, [(1, 2, 1, False), (2, 1, -1, False), (0, 2, -1, True)])
    assert D.to_str(d, 3, ["x", "y"]) == "x > 2 && y > 1 && x - y == 1"
    empty = raw(1, [(1, 0, 1, False), (0, 1, -2, False)])
    assert not D.canonicalize(empty, 2)
    assert D.to_str(empty, 2, ["x"]) == "false"


# Extra+_LU, hand-checked against the rule of Behrmann-Bouyer-Larsen-Pelanek.
def test_extrapolate_lu_hand() -> None:
    # (1) the STTT'06 running example: L = (1, 1), U = (1, 10) for (x, y).
    # -c_0x = 2 > L(x) and -c_0y = 2 > L(y): rows x and y become < inf;
    # -c_0x = 2 > U(x) = 1: c_0x becomes (< -1); -c_0y = 2 <= U(y): kept.
    d = EX1[:]
    D.extrapolate_lu(d, 3, [0, 1, 1], [0, 1, 10])
    assert d == [le(0), lt(-1), le(-2), INF, le(0), INF, INF, INF, le(0)]

    # (2) y never compared (L = U = -inf): y >= 2 && x < 5 && x <= y, L(x) = 2, U(x) = 1.
    # x < 5 goes (5 > L(x)); x - y <= 0 goes (-c_0y = 2 > U(y) = -inf);
    # row y goes (-c_0y > L(y)); y >= 2 becomes y >= 0.  Result: the universe.
    d = canon(2, [(0, 2, -2, False), (1, 0, 5, True), (1, 2, 0, False)])
    assert d == [le(0), le(0), le(-2), lt(5), le(0), le(0), INF, INF, le(0)]
    D.extrapolate_lu(d, 3, [-1, 2, -1], [-1, 1, -1])
    assert d == D.universe(3)

    # (3) 1 <= x <= 3 && x == y with L(x) = 2: x <= 3 is dropped (3 > L(x)) but
    # the re-canonicalization restores it from x - y <= 0 and y <= 3.
    d = canon(2, [(0, 1, -1, False), (1, 0, 3, False), (1, 2, 0, False), (2, 1, 0, False)])
    before = d[:]
    D.extrapolate_lu(d, 3, [0, 2, 5], [0, 5, 5])
    assert d == before

    # (4) x >= 4 && y <= 1, L = (3, 2), U = (2, 2): row x goes (-c_0x = 4 > 3);
    # y - x <= -3 goes (-c_0x = 4 > U(x)); x >= 4 becomes x > 2; closure: y - x < -1.
    d = canon(2, [(0, 1, -4, False), (2, 0, 1, False)])
    assert d == [le(0), le(-4), le(0), INF, le(0), INF, le(1), le(-3), le(0)]
    D.extrapolate_lu(d, 3, [0, 3, 2], [0, 2, 2])
    assert d == [le(0), lt(-2), le(0), INF, le(0), INF, le(1), lt(-1), le(0)]


# ------------------------------------------------------------- property-based tests


@SETTINGS
@given(zones(nonempty_only=False, max_size=6))
def test_canonicalize(z: tuple[int, list[Con]]) -> None:
    k, cons = z
    n = k + 1
    d = raw(k, cons)
    ok = D.canonicalize(d, n)
    assert ok == nonempty(k, cons)
    if not ok:
        assert D.is_empty(d, n)
        return
    assert not D.is_empty(d, n)
    assert dbm_mask(d, k) == ref_mask(k, cons)
    assert_exact_canonical(d, k, cons)
    assert is_closed(d, n)


@SETTINGS
@given(zones(nonempty_only=False, max_size=6))
def test_constrain(z: tuple[int, list[Con]]) -> None:
    k, cons = z
    n = k + 1
    d = D.universe(n)
    for idx, (i, j, c, s) in enumerate(cons):
        before = d[:]
        ok = D.constrain(d, n, i, j, D.bound(c, s))
        assert ok == nonempty(k, cons[: idx + 1])
        if not ok:
            assert d == before
            return
        assert d == canon(k, cons[: idx + 1])  # bitwise equal to the full closure
    assert dbm_mask(d, k) == ref_mask(k, cons)


def in_up(cons: list[Con], p: tuple[int, ...]) -> bool:
    """Scaled point p is v + t for some t >= 0 and v in the zone (exact interval test)."""
    lo, lo_s = 0, False
    hi, hi_s = min(p[1:]), False
    for i, j, c, s in cons:
        cc = c * SCALE
        if i and j:
            if not holds(p[i] - p[j], cc, s):
                return False
        elif j == 0:  # p_i - t < c  =>  t > p_i - c
            low = p[i] - cc
            if low > lo or (low == lo and s):
                lo, lo_s = low, s
        else:  # -(p_j - t) < c  =>  t < c + p_j
            high = cc + p[j]
            if high < hi or (high == hi and s):
                hi, hi_s = high, s
    return lo < hi or (lo == hi and not lo_s and not hi_s)


def exists_value(cons: list[Con], p: tuple[int, ...], v: int) -> bool:
    """Some t >= 0 puts p[v := t] in the zone (exact interval test)."""
    lo, lo_s = 0, False
    hi: int | None = None
    hi_s = False
    for i, j, c, s in cons:
        cc = c * SCALE
        if i == v:  # t - p_j < c
            high = cc + p[j]
            if hi is None or high < hi or (high == hi and s):
                hi, hi_s = high, s
        elif j == v:  # p_i - t < c
            low = p[i] - cc
            if low > lo or (low == lo and s):
                lo, lo_s = low, s
        elif not holds(p[i] - p[j], cc, s):
            return False
    return hi is None or lo < hi or (lo == hi and not lo_s and not hi_s)


@SETTINGS
@given(zones())
def test_up(z: tuple[int, list[Con]]) -> None:
    k, cons = z
    n = k + 1
    d = canon(k, cons)
    D.up(d, n)
    assert is_closed(d, n)
    assert dbm_mask(d, k) == pred_mask(k, lambda p: in_up(cons, p))


@pytest.mark.slow
@SETTINGS
@given(zones(), st.data())
def test_reset_and_free(z: tuple[int, list[Con]], data: st.DataObject) -> None:
    k, cons = z
    n = k + 1
    v = data.draw(st.integers(1, k))
    d = canon(k, cons)
    memo: dict[tuple[int, ...], bool] = {}

    def ex(p: tuple[int, ...]) -> bool:
        q = p[:v] + p[v + 1 :]
        if q not in memo:
            memo[q] = exists_value(cons, p, v)
        return memo[q]

    f = d[:]
    D.free(f, n, v)
    assert is_closed(f, n)
    assert dbm_mask(f, k) == pred_mask(k, ex)

    r = d[:]
    D.reset(r, n, v)
    assert is_closed(r, n)
    assert dbm_mask(r, k) == pred_mask(k, lambda p: p[v] == 0 and ex(p))


@SETTINGS
@given(zones(), st.data())
def test_project(z: tuple[int, list[Con]], data: st.DataObject) -> None:
    k, cons = z
    n = k + 1
    order = data.draw(st.permutations(range(1, n)))
    keep = list(order[: data.draw(st.integers(0, k))])
    d = canon(k, cons)
    p_dbm = D.project(d, n, keep)
    m = len(keep)
    assert len(p_dbm) == (m + 1) ** 2
    assert is_closed(p_dbm, m + 1)

    if m == k:  # nothing is projected away: a renaming of the clocks
        pos = [0, *keep]
        renamed = [(pos.index(i), pos.index(j), c, s) for i, j, c, s in cons]
        assert p_dbm == canon(m, renamed)
        assert dbm_mask(p_dbm, m) == ref_mask(m, renamed)
        return

    def ref(q: tuple[int, ...]) -> bool:
        return fm_exists(k, cons, {c: q[a + 1] for a, c in enumerate(keep)})

    assert dbm_mask(p_dbm, m) == pred_mask(m, ref)


@SETTINGS
@given(st.data())
def test_embed(data: st.DataObject) -> None:
    k, cons = data.draw(zones(k=data.draw(st.integers(1, 2))))
    n = k + 1
    m = data.draw(st.integers(k, 3)) + 1
    targets = data.draw(st.permutations(range(1, m)))
    old_to_new = [0, *targets[:k]]
    d = canon(k, cons)
    e = D.embed(d, n, old_to_new, m)
    assert is_closed(e, m)

    # the image of every old grid point of the zone, on the part of the new grid
    # that the old grid covers
    box = min(GRID_MAX[k], GRID_MAX[m - 1])
    old_mask = ref_mask(k, cons)
    new_pts = points(m - 1)
    new_index = point_index(m - 1)
    want = 0
    for p in points(k):
        if max(p) <= box and in_mask(old_mask, k, p):
            q = [0] * m
            for i in range(1, n):
                q[old_to_new[i]] = p[i]
            want |= 1 << (8 * (len(new_pts) - 1 - new_index[tuple(q)]))
    assert dbm_mask(e, m - 1) & box_mask(m - 1, box) == want


@SETTINGS
@given(zones(), st.data())
def test_permute(z: tuple[int, list[Con]], data: st.DataObject) -> None:
    k, cons = z
    n = k + 1
    perm = [0, *data.draw(st.permutations(range(1, n)))]
    d = canon(k, cons)
    p_dbm = D.permute(d, n, perm)
    assert is_closed(p_dbm, n)
    renamed = [(perm[i], perm[j], c, s) for i, j, c, s in cons]
    assert p_dbm == canon(k, renamed)
    assert dbm_mask(p_dbm, k) == ref_mask(k, renamed)
    inv = [perm.index(i) for i in range(n)]
    assert D.permute(p_dbm, n, inv) == d


@SETTINGS
@given(zone_pairs())
def test_intersect_and_includes(z: tuple[int, list[Con], list[Con]]) -> None:
    k, ca, cb = z
    n = k + 1
    a, bb = canon(k, ca), canon(k, cb)
    both = [*ca, *cb]
    r = D.intersect(a, bb, n)
    assert (r is not None) == nonempty(k, both)
    assert D.includes(a, a, n)
    assert D.includes(D.universe(n), a, n)
    assert D.includes(D.universe(n), D.universe(n), n)
    assert D.includes(a, D.zero(n), n) == D.satisfies(a, n, [0] * n)
    if r is not None:
        assert r == canon(k, both)
        assert dbm_mask(r, k) == ref_mask(k, ca) & ref_mask(k, cb)
        assert D.includes(a, r, n) and D.includes(bb, r, n)
        assert D.intersect(bb, a, n) == r
    # inclusion is exact (decided by Fourier–Motzkin on the raw constraints)
    assert D.includes(a, bb, n) == ref_subset(k, cb, ca)
    assert D.includes(bb, a, n) == ref_subset(k, ca, cb)
    # and so is inclusion of packed zones
    for x, y in ((a, bb), (bb, a)):
        assert D.includes_packed(D.pack(x, n), D.pack(y, n), n) == D.includes(x, y, n)
    if D.includes(a, bb, n):
        assert dbm_mask(bb, k) & ~dbm_mask(a, k) == 0
    u = a[:]
    D.up(u, n)
    assert D.includes(u, a, n)


@SETTINGS
@given(zone_pairs())
def test_subtract(z: tuple[int, list[Con], list[Con]]) -> None:
    k, ca, cb = z
    n = k + 1
    a, bb = canon(k, ca), canon(k, cb)
    pieces = D.subtract(a, bb, n)
    union = 0
    for piece in pieces:
        assert is_closed(piece, n)
        assert not D.is_empty(piece, n)
        assert D.includes(a, piece, n)
        assert D.intersect(piece, bb, n) is None
        union |= dbm_mask(piece, k)
    assert union == ref_mask(k, ca) & (full(k) ^ ref_mask(k, cb))
    for p1, p2 in itertools.combinations(pieces, 2):
        assert D.intersect(p1, p2, n) is None
    if D.includes(bb, a, n):
        assert pieces == []
    if D.intersect(a, bb, n) is None:
        assert pieces == [a]


def extra_lu_plus_reference(d: D.Dbm, n: int, lower: list[int], upper: list[int]) -> D.Dbm:
    """Direct transcription of Extra+_LU on (c, strict) pairs, then closure."""
    minus_inf = float("-inf")
    lo = [0.0] + [c if c >= 0 else minus_inf for c in lower[1:]]
    hi = [0.0] + [c if c >= 0 else minus_inf for c in upper[1:]]
    entry = [
        [
            None if d[i * n + j] >= INF else (d[i * n + j] >> 1, not d[i * n + j] & 1)
            for j in range(n)
        ]
        for i in range(n)
    ]
    c0 = [e[0] if e is not None else 0 for e in entry[0]]
    out = d[:]
    for i in range(n):
        for j in range(n):
            e = entry[i][j]
            if i == j or e is None:
                continue
            if e[0] > lo[i] or -c0[i] > lo[i] or (-c0[j] > hi[j] and i != 0):
                out[i * n + j] = INF
            elif -c0[j] > hi[j] and i == 0:
                out[i * n + j] = LE0 if hi[j] == minus_inf else D.bound(-int(hi[j]), True)
    assert D.canonicalize(out, n)
    return out


@SETTINGS
@given(zones(), st.data())
def test_extrapolate_lu(z: tuple[int, list[Con]], data: st.DataObject) -> None:
    k, cons = z
    n = k + 1
    lower = [0, *data.draw(st.lists(st.integers(-1, 6), min_size=k, max_size=k))]
    upper = [0, *data.draw(st.lists(st.integers(-1, 6), min_size=k, max_size=k))]
    d = canon(k, cons)
    e = d[:]
    D.extrapolate_lu(e, n, lower, upper)
    assert is_closed(e, n)
    assert D.includes(e, d, n)
    assert dbm_mask(d, k) & ~dbm_mask(e, k) == 0
    assert e == extra_lu_plus_reference(d, n, lower, upper)
    # bounds above every constant change nothing; "never compared" everywhere gives all
    same = d[:]
    big = max(abs(x >> 1) for x in d if x < INF) + 1
    D.extrapolate_lu(same, n, [big] * n, [big] * n)
    assert same == d
    everything = d[:]
    D.extrapolate_lu(everything, n, [-1] * n, [-1] * n)
    assert everything == D.universe(n)


@SETTINGS
@given(zones(), st.data())
def test_satisfies_and_key(z: tuple[int, list[Con]], data: st.DataObject) -> None:
    k, cons = z
    n = k + 1
    d = canon(k, cons)
    mask = ref_mask(k, cons)
    pts = points(k)
    for idx in data.draw(st.lists(st.integers(0, len(pts) - 1), min_size=20, max_size=20)):
        p = pts[idx]
        values = [Fraction(x, SCALE) for x in p]
        assert D.satisfies(d, n, values) == in_mask(mask, k, p)
    assert D.key(d) == D.key(canon(k, list(reversed(cons))))
    assert D.to_str(d, n, [f"c{i}" for i in range(n)]) == D.to_str(
        canon(k, list(reversed(cons))), n, [f"c{i}" for i in range(1, n)]
    )

"""Tests of the compiled DBM core against the Python reference, and of the new
reference functions ``down``, ``extrapolate_m`` and ``post`` of ``dbm.py``.

The compiled core ``checker.domains._cdbm`` must agree with
``checker.domains.dbm`` exactly: same return values, same new lists, and the same
contents left in the lists it updates in place (also for empty zones and for
non-canonical input, where the Python functions' results are "unspecified" but
deterministic).  The differential tests run plain ``random.Random(seed)`` loops
over canonical, non-canonical and empty DBMs of dimensions 1..12, and random runs
of the explorer's operations from the zero zone.

Tests that need the compiled core are skipped when it is not built, except
:func:`test_c_core_is_built_when_required`, which fails then if the environment
variable ``KVRACE_REQUIRE_C`` is ``1`` (CI sets it).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from types import ModuleType
from typing import Any

import pytest

from checker.domains import backend
from checker.domains import dbm as D

C: ModuleType | None
try:
    from checker.domains import _cdbm as C
except ImportError:  # pragma: no cover - depends on the build
    C = None

needs_c = pytest.mark.skipif(
    C is None,
    reason="the C DBM core checker.domains._cdbm is not built "
    "(install kvrace with a C compiler: pip install -e .)",
)

INF = D.INF
LE0 = D.LE_ZERO
FUNCTIONS = (
    "canonicalize", "constrain", "up", "down", "reset", "free", "project", "embed",
    "permute", "includes", "intersect", "subtract", "extrapolate_lu", "extrapolate_m",
    "post", "is_empty", "pack", "unpack", "join", "includes_packed",
)


def c_core() -> Any:
    assert C is not None
    return C


# ------------------------------------------------------------------ generators


def rand_bound(rng: random.Random, lo: int = -6, hi: int = 12) -> int:
    return D.bound(rng.randint(lo, hi), rng.random() < 0.4)


def rand_canonical(rng: random.Random, n: int) -> D.Dbm:
    """A canonical non-empty DBM: the zero zone or the universe, then random
    constraints, time elapse, resets and frees (as zones arise in the explorer)."""
    d = D.zero(n) if rng.random() < 0.3 else D.universe(n)
    for _ in range(rng.randint(0, 3 * n)):
        r = rng.random()
        if r < 0.6:
            i, j = rng.randrange(n), rng.randrange(n)
            if i != j:
                D.constrain(d, n, i, j, rand_bound(rng))
        elif r < 0.75:
            D.up(d, n)
        elif r < 0.9 and n > 1:
            D.reset(d, n, rng.randrange(1, n))
        elif n > 1:
            D.free(d, n, rng.randrange(1, n))
    assert not D.is_empty(d, n)
    return d


def rand_raw(rng: random.Random, n: int) -> D.Dbm:
    """Any DBM: random entries (some INF), diagonal mostly LE_ZERO, maybe empty."""
    d = [INF if rng.random() < 0.3 else rand_bound(rng, -8, 12) for _ in range(n * n)]
    for i in range(n):
        r = rng.random()
        d[i * n + i] = LE0 if r < 0.8 else rand_bound(rng, -2, 2)
    return d


def rand_empty(rng: random.Random, n: int) -> D.Dbm:
    """A non-canonical DBM with a negative cycle (n >= 2)."""
    d = rand_canonical(rng, n)
    i, j = rng.sample(range(n), 2)
    d[i * n + j] = D.bound(-3, False)
    d[j * n + i] = D.bound(2, rng.random() < 0.5)
    return d


def rand_loosened(rng: random.Random, n: int) -> D.Dbm:
    """A non-canonical, non-empty DBM: a canonical one with some entries loosened."""
    d = rand_canonical(rng, n)
    for _ in range(rng.randint(1, n)):
        i, j = rng.randrange(n), rng.randrange(n)
        if i != j and d[i * n + j] < INF:
            d[i * n + j] = INF if rng.random() < 0.5 else d[i * n + j] + rng.randint(1, 6)
    return d


def rand_dbm(rng: random.Random, n: int) -> D.Dbm:
    r = rng.random()
    if r < 0.45:
        return rand_canonical(rng, n)
    if r < 0.65:
        return rand_loosened(rng, n)
    if r < 0.9 or n < 2:
        return rand_raw(rng, n)
    return rand_empty(rng, n)


def related(rng: random.Random, a: D.Dbm, n: int) -> D.Dbm:
    """A canonical DBM sharing entries with the canonical ``a``: a tightened,
    loosened or unrelated variant, so that inclusion and overlap are common."""
    r = rng.random()
    b = a[:]
    if r < 0.3:
        for _ in range(rng.randint(1, 3)):
            i, j = rng.randrange(n), rng.randrange(n)
            if i != j:
                D.constrain(b, n, i, j, rand_bound(rng))
        return b
    if r < 0.5:
        D.up(b, n)
        return b
    if r < 0.7:
        lower = [rng.randint(-1, 8) for _ in range(n)]
        D.extrapolate_lu(b, n, lower, [rng.randint(-1, 8) for _ in range(n)])
        return b
    return rand_canonical(rng, n)


def rand_guard(rng: random.Random, n: int, k: int) -> list[tuple[int, int, int]]:
    out = []
    for _ in range(rng.randint(0, k)):
        if n > 1 and rng.random() < 0.8:
            c = rng.randrange(1, n)
            out.append((c, 0, rand_bound(rng, 0, 12)) if rng.random() < 0.5
                       else (0, c, rand_bound(rng, -12, 0)))
        else:
            out.append((rng.randrange(n), rng.randrange(n), rand_bound(rng)))
    return out


def rand_keep(rng: random.Random, n: int, m: int) -> list[tuple[int, int]]:
    olds = rng.sample(range(1, n), rng.randint(0, min(n - 1, m - 1)))
    news = rng.sample(range(1, m), len(olds))
    return list(zip(olds, news, strict=True))


# ------------------------------------------------------------- comparisons


def same_call(name: str, *args: Any) -> Any:
    """Call ``name`` of both implementations on copies of the arguments; check that
    the results, the arguments after the call, and any exception type agree."""
    c = c_core()
    py_args = [a[:] if isinstance(a, list) else a for a in args]
    c_args = [a[:] if isinstance(a, list) else a for a in args]
    py_exc: type[BaseException] | None = None
    c_exc: type[BaseException] | None = None
    py_res = c_res = None
    try:
        py_res = getattr(D, name)(*py_args)
    except Exception as err:
        py_exc = type(err)
    try:
        c_res = getattr(c, name)(*c_args)
    except Exception as err:
        c_exc = type(err)
    assert c_exc == py_exc, (name, args, py_exc, c_exc)
    assert c_res == py_res, (name, args, py_res, c_res)
    assert type(c_res) is type(py_res)
    assert c_args == py_args, (name, args)
    return py_res


DIMS = range(1, 13)


# ------------------------------------------------------------- availability


def test_c_core_is_built_when_required() -> None:
    required = os.environ.get("KVRACE_REQUIRE_C") == "1"
    if C is None:
        if required:
            pytest.fail("KVRACE_REQUIRE_C=1 but checker.domains._cdbm is not built")
        pytest.skip("the C DBM core is not built (set KVRACE_REQUIRE_C=1 to require it)")
    assert backend.C_AVAILABLE
    assert backend.select("c") is C


def test_backend_select(monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend.select("python") is D
    with pytest.raises(ValueError, match="unknown DBM implementation"):
        backend.select("fortran")
    monkeypatch.setenv("KVRACE_DBM", "python")
    assert backend.select() is D
    monkeypatch.delenv("KVRACE_DBM")
    if backend.C_AVAILABLE:
        assert backend.select() is backend.select("c")
    else:
        assert backend.select() is D
        with pytest.raises(ImportError, match="not built"):
            backend.select("c")
    assert backend.fits(0) and backend.fits(2**40) and backend.fits(-(2**40))
    assert not backend.fits(2**40 + 1)


def test_an_out_of_date_core_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A core built from an older _cdbm.c (without every function of DbmOps) would fail
    in the middle of a run: it is not loaded, with a warning saying to rebuild it."""
    old = ModuleType("checker.domains._cdbm")
    old.__file__ = "_cdbm.so"
    for name in FUNCTIONS:
        if name not in ("pack", "unpack", "includes_packed"):
            setattr(old, name, getattr(D, name))
    monkeypatch.setitem(sys.modules, "checker.domains._cdbm", old)
    monkeypatch.setattr("checker.domains._cdbm", old, raising=False)
    with pytest.warns(RuntimeWarning, match="out of date.*pack, unpack, includes_packed"):
        assert backend._load_c() is None
    for name in ("pack", "unpack", "includes_packed"):
        setattr(old, name, getattr(D, name))
    assert backend._load_c() is old


@needs_c
def test_same_functions_and_signatures() -> None:
    c = c_core()
    for name in FUNCTIONS:
        py_sig = inspect.signature(getattr(D, name))
        c_sig = inspect.signature(getattr(c, name))
        assert list(c_sig.parameters) == list(py_sig.parameters), name
    assert c.INF == INF
    d = D.universe(3)
    assert c.constrain(d=d, n=3, i=1, j=0, b=D.bound(4, False))
    assert d[3] == D.bound(4, False)
    with pytest.raises(TypeError):
        c.constrain(d, 3, 1, 0)
    with pytest.raises(TypeError):
        c.constrain(d, 3, 1, 0, 5, b=5)
    with pytest.raises(TypeError):
        c.up(d, 3, x=1)


# ------------------------------------------------- differential: single ops


@needs_c
def test_canonicalize_and_is_empty_differential() -> None:
    rng = random.Random(1)
    for n in DIMS:
        for _ in range(60):
            d = rand_dbm(rng, n)
            same_call("is_empty", d, n)
            same_call("canonicalize", d, n)
            # canonicalize's output is a fixpoint; emptiness is seen on what it leaves
            e = d[:]
            D.canonicalize(e, n)
            same_call("is_empty", e, n)
            same_call("canonicalize", e, n)


@needs_c
def test_constrain_differential() -> None:
    rng = random.Random(2)
    for n in DIMS:
        for _ in range(60):
            d = rand_dbm(rng, n)
            for _ in range(4):
                i, j = rng.randrange(n), rng.randrange(n)
                b = INF if rng.random() < 0.05 else rand_bound(rng, -10, 14)
                same_call("constrain", d, n, i, j, b)


@needs_c
def test_moves_differential() -> None:
    """up, down, reset, free, project, embed, permute."""
    rng = random.Random(3)
    for n in DIMS:
        for _ in range(40):
            d = rand_dbm(rng, n)
            same_call("up", d, n)
            same_call("down", d, n)
            i = rng.randrange(n)
            same_call("reset", d, n, i)
            same_call("free", d, n, i)
            keep = rng.sample(range(1, n), rng.randint(0, n - 1))
            same_call("project", d, n, keep)
            m = n + rng.randint(0, 3)
            old_to_new = [0, *rng.sample(range(1, m), n - 1)]
            same_call("embed", d, n, old_to_new, m)
            same_call("embed", d, n, old_to_new, n - 1 if n > 1 else 1)  # error case
            perm = [0, *rng.sample(range(1, n), n - 1)]
            same_call("permute", d, n, perm)
            if n > 2:
                same_call("permute", d, n, [0, 1, 1, *range(3, n)])  # not a permutation
            same_call("embed", d, n, [1] * n, n + 1)  # does not map 0 to 0


@needs_c
def test_includes_intersect_subtract_differential() -> None:
    rng = random.Random(4)
    for n in DIMS:
        for _ in range(40):
            a = rand_canonical(rng, n)
            b = related(rng, a, n)
            for x, y in ((a, b), (b, a), (a, a)):
                same_call("includes", x, y, n)
                same_call("intersect", x, y, n)
                same_call("subtract", x, y, n)
        for _ in range(10):  # the algorithms also agree off their contract
            a, b = rand_raw(rng, n), rand_raw(rng, n)
            same_call("intersect", a, b, n)
            same_call("subtract", a, b, n)
            same_call("includes", a, b, n)


def scaled(d: D.Dbm, factor: int) -> D.Dbm:
    """``d`` with every finite entry multiplied by ``factor`` (wider packed entries)."""
    return [v if v >= INF else v * factor for v in d]


WIDTH_FACTORS = (1, 20, 3_000, 200_000_000, 10**15)
"""Scale factors of the random DBMs' entries that give packed widths 1, 2, 4 and 8."""


def least_width(d: D.Dbm) -> int:
    """The entry width the compiled core packs ``d`` in: the least of 1, 2, 4, 8 bytes
    whose largest integer (INF) is above every finite entry and whose least is not
    above any."""
    finite = [v for v in d if v < INF] or [0]
    return next(w for w in (1, 2, 4, 8)
                if -(2 ** (8 * w - 1)) <= min(finite) and max(finite) < 2 ** (8 * w - 1) - 1)


@needs_c
def test_pack_unpack_join_differential() -> None:
    """A packed DBM unpacks to what was packed (INF and large bounds included), in the
    least entry width; the join of a packed hull and a zone is the reference's: None
    exactly when the zone is included, else the entrywise maximum; includes_packed is
    includes, also across widths."""
    c = c_core()
    rng = random.Random(14)
    widths: Counter[int] = Counter()
    for n in DIMS:
        for _ in range(40):
            a = scaled(rand_canonical(rng, n), rng.choice(WIDTH_FACTORS))
            b = related(rng, a, n) if rng.random() < 0.7 else scaled(a, rng.choice((1, 7)))
            big = [v if v >= INF or rng.random() < 0.7 else v + (1 << 60) for v in a]
            for d in (a, b, big, rand_dbm(rng, n)):
                p = c.pack(d, n)
                assert isinstance(p, bytes) and p[0] == least_width(d)
                assert len(p) == 1 + p[0] * n * n
                widths[p[0]] += 1
                assert c.unpack(p, n) == d == D.unpack(D.pack(d, n), n)
            for x, y in ((a, b), (b, a), (a, a)):
                want = D.join(D.pack(x, n), y, n)
                got = c.join(c.pack(x, n), y, n)
                assert (got is None) == (want is None) == D.includes(x, y, n)
                if want is not None:
                    assert got is not None and got[0] == least_width(list(want))
                    assert c.unpack(got, n) == list(want)
                    assert list(want) == [max(u, v) for u, v in zip(x, y, strict=True)]
                px, py = c.pack(x, n), c.pack(y, n)
                assert c.includes_packed(px, py, n) == D.includes(x, y, n)
                assert D.includes_packed(D.pack(x, n), D.pack(y, n), n) == D.includes(x, y, n)
    assert set(widths) == {1, 2, 4, 8}
    d = D.zero(3)
    with pytest.raises(OverflowError):
        c.pack([*d[:-1], 1 << 70], 3)
    with pytest.raises(ValueError):
        c.unpack(c.pack(d, 3), 2)
    with pytest.raises(TypeError):
        c.join(tuple(d), d, 3)
    with pytest.raises(TypeError):
        c.unpack(d, 3)
    for bad in (b"", b"\x03" + bytes(9), b"\x01" + bytes(5), b"\x02" + bytes(9)):
        with pytest.raises(ValueError):
            c.unpack(bad, 3)
        with pytest.raises(ValueError):
            c.includes_packed(bad, bad, 3)
    with pytest.raises(ValueError):
        c.includes_packed(c.pack(D.zero(2), 2), c.pack(D.zero(3), 3), 3)


@needs_c
def test_extrapolate_differential() -> None:
    rng = random.Random(5)
    for n in DIMS:
        for _ in range(50):
            d = rand_dbm(rng, n)
            lower = [rng.choice((-1, 0, 1, 3, 5, 10)) for _ in range(n)]
            upper = [rng.choice((-1, 0, 2, 4, 7, 12)) for _ in range(n)]
            same_call("extrapolate_lu", d, n, lower, upper)
            same_call("extrapolate_m", d, n, [max(a, b) for a, b in zip(lower, upper,
                                                                          strict=True)])


@needs_c
def test_post_differential() -> None:
    rng = random.Random(6)
    for n in DIMS:
        for _ in range(50):
            z = rand_canonical(rng, n)
            m = max(1, n + rng.randint(-2, 2))
            guard = rand_guard(rng, n, 3)
            keep = rand_keep(rng, n, m)
            inv = rand_guard(rng, m, 2)
            same_call("post", z, n, guard, keep, m, inv)
            same_call("post", rand_raw(rng, n), n, guard, keep, m, inv)
            if n > 1 and m > 2:  # keep maps two clocks to one: ValueError in both
                same_call("post", z, n, [], [(1, 1), (n - 1, 1)], m, [])
                same_call("post", z, n, [], [(1, m)], m, [])


@needs_c
def test_explorer_like_runs_differential() -> None:
    """Random runs of the explorer's steps from the zero zone, in lockstep."""
    rng = random.Random(7)
    c = c_core()
    for run in range(120):
        n = rng.randint(1, 10)
        zp, zc = D.zero(n), D.zero(n)
        assert c.canonicalize(zc, n) and zc == zp
        passed: list[tuple[D.Dbm, int]] = []
        for _ in range(25):
            m = max(1, min(12, n + rng.randint(-1, 1)))
            guard, keep, inv = rand_guard(rng, n, 3), rand_keep(rng, n, m), rand_guard(rng, m, 2)
            tp = D.post(zp, n, guard, keep, m, inv)
            tc = c.post(zc, n, guard, keep, m, inv)
            assert tp == tc, run
            if tp is None or tc is None:
                continue
            lower = [rng.randint(-1, 12) for _ in range(m)]
            upper = [rng.randint(-1, 12) for _ in range(m)]
            if rng.random() < 0.5:
                D.extrapolate_lu(tp, m, lower, upper)
                c.extrapolate_lu(tc, m, lower, upper)
            else:
                mm = [max(a, b) for a, b in zip(lower, upper, strict=True)]
                D.extrapolate_m(tp, m, mm)
                c.extrapolate_m(tc, m, mm)
            assert tp == tc
            for g in rand_guard(rng, m, 2):
                assert D.constrain(tp, m, *g) == c.constrain(tc, m, *g)
                assert tp == tc
            for old, dim in passed:
                if dim == m:
                    assert D.includes(old, tp, m) == c.includes(old, tc, m)
                    assert D.includes(tp, old, m) == c.includes(tc, old, m)
                    assert D.subtract(tp, old, m) == c.subtract(tc, old, m)
            zp, zc, n = tp, tc, m
            passed.append((tp[:], m))


# ----------------------------------------------------------- C-only checks


@needs_c
def test_overflow_is_never_silent() -> None:
    c = c_core()
    big = 2**62
    for bad in (big, -big, 2**100, -(2**100), INF + 1, -INF):
        d = D.zero(2)
        d[1] = bad
        for name in ("canonicalize", "is_empty", "down", "extrapolate_m"):
            args: list[Any] = [d, 2] + ([[5, 5]] if name == "extrapolate_m" else [])
            d[3] = bad  # the diagonal entry x_1 - x_1, read by all of them
            before = d[:]
            with pytest.raises(OverflowError):
                getattr(c, name)(*args)
            assert d == before
        with pytest.raises(OverflowError):
            c.includes(D.zero(2), d, 2)
        with pytest.raises(OverflowError):
            c.constrain(D.universe(2), 2, 1, 0, bad)
        with pytest.raises(OverflowError):
            c.extrapolate_lu(D.zero(2), 2, [0, bad], [0, 1])
        with pytest.raises(OverflowError):
            c.post(D.zero(2), 2, [(1, 0, bad)], [], 2, [])
    # The largest accepted entries; INF is accepted as itself.
    d = D.universe(2)
    d[2] = big - 1
    assert c.canonicalize(d, 2) and d[2] == big - 1
    # A closure whose sums leave the 64-bit range raises and leaves d unchanged:
    # x1 - x0 <= 2**62 - 1, x0 - x2 <= 2**62 - 1 gives x1 - x2 <= 2**63 - 3 (fine),
    # then x2 - x3 <= 2**62 - 1 gives a sum beyond 2**63.
    n = 4
    d = [INF] * (n * n)
    for i in range(n):
        d[i * n + i] = LE0
    d[1 * n + 0] = d[0 * n + 2] = d[2 * n + 3] = big - 1
    before = d[:]
    with pytest.raises(OverflowError):
        c.canonicalize(d, n)
    assert d == before
    with pytest.raises(TypeError):
        c.canonicalize([1.0], 1)


@needs_c
def test_c_checks_indices_and_shapes() -> None:
    c = c_core()
    d = D.zero(3)
    with pytest.raises(ValueError):
        c.canonicalize(d, 2)
    with pytest.raises(ValueError):
        c.canonicalize([], 0)
    with pytest.raises(TypeError):
        c.canonicalize(tuple(d), 3)
    with pytest.raises(IndexError):
        c.constrain(d, 3, 3, 0, 1)
    with pytest.raises(IndexError):
        c.reset(d, 3, -1)
    with pytest.raises(IndexError):
        c.project(d, 3, [5])
    with pytest.raises(IndexError):
        c.extrapolate_m(d, 3, [1, 1])
    with pytest.raises(IndexError):
        c.post(d, 3, [(0, 7, 1)], [], 3, [])
    assert d == D.zero(3)


@needs_c
def test_no_reference_leaks() -> None:
    """Repeated calls keep the allocated-block count and INF's refcount flat."""
    c = c_core()
    rng = random.Random(8)
    n = 6
    zones = [rand_canonical(rng, n) for _ in range(8)]

    def work() -> None:
        for a in zones:
            b = related(rng, a, n)
            d = a[:]
            c.canonicalize(d, n)
            c.constrain(d, n, 1, 0, D.bound(3, False))
            c.up(d, n)
            c.down(d, n)
            c.reset(d, n, 2)
            c.free(d, n, 3)
            c.project(d, n, [1, 2])
            c.embed(d, n, list(range(n)), n + 2)
            c.permute(d, n, [0, 2, 1, 3, 4, 5])
            c.includes(a, b, n)
            c.intersect(a, b, n)
            c.subtract(a, b, n)
            c.extrapolate_lu(d, n, [0] * n, [2] * n)
            c.extrapolate_m(d, n, [2] * n)
            c.post(a, n, [(1, 0, 9)], [(1, 1), (2, 3)], n, [(1, 0, 21)])
            c.is_empty(d, n)
            c.unpack(c.join(c.pack(a, n), b, n) or c.pack(b, n), n)
            c.includes_packed(c.pack(a, n), c.pack(scaled(b, 1000), n), n)
            c.unpack(c.pack(scaled(d, 10**6), n), n)
            with contextlib.suppress(OverflowError):
                c.post(a, n, [(1, 0, 2**70)], [], n, [])

    for _ in range(3):
        work()  # warm up caches and free lists
    blocks, refs = sys.getallocatedblocks(), sys.getrefcount(c.INF)
    for _ in range(200):
        work()
    assert sys.getrefcount(c.INF) - refs < 10
    assert sys.getallocatedblocks() - blocks < 200


# ------------------------------------------- the new Python reference functions


def in_past(d: D.Dbm, n: int, v: Sequence[Fraction]) -> bool:
    """Whether some ``t >= 0`` puts ``v + t`` in ``d`` (exactly, over the rationals)."""
    lo, lo_strict = Fraction(0), False  # t >= 0
    hi, hi_strict = None, False
    for i in range(n):
        for j in range(n):
            b = d[i * n + j]
            if b >= INF:
                continue
            c, strict = Fraction(b >> 1), not b & 1
            if i != 0 and j == 0:  # v_i + t (<) c
                t, is_hi = c - v[i], True
            elif i == 0 and j != 0:  # -(v_j + t) (<) c
                t, is_hi = -c - v[j], False
            else:  # unaffected by t
                diff = v[i] - v[j]
                if diff > c or (diff == c and strict):
                    return False
                continue
            if is_hi:
                if hi is None or t < hi or (t == hi and strict):
                    hi, hi_strict = t, strict
            elif t > lo or (t == lo and strict):
                lo, lo_strict = t, strict
    if hi is None:
        return True
    return lo < hi or (lo == hi and not lo_strict and not hi_strict)


def test_down_against_brute_force() -> None:
    """down(Z) holds exactly the points that reach Z by letting time pass, on a
    half-integer grid (fine enough: every bound is an integer)."""
    rng = random.Random(10)
    half = [Fraction(k, 2) for k in range(0, 17)]
    for _ in range(150):
        n = rng.randint(2, 3)
        z = rand_canonical(rng, n)
        d = z[:]
        D.down(d, n)
        assert D.canonicalize(d[:], n)
        closed = d[:]
        D.canonicalize(closed, n)
        assert closed == d, "down keeps the DBM canonical"
        for _ in range(60):
            v = [Fraction(0), *(rng.choice(half) for _ in range(n - 1))]
            assert D.satisfies(d, n, v) == in_past(z, n, v), (z, v)


def composed_post(z: D.Dbm, n: int, guard: Sequence[tuple[int, int, int]],
                  resets: Sequence[int], inv: Sequence[tuple[int, int, int]]) -> D.Dbm | None:
    """The successor step by step, with resets instead of project/embed."""
    d = z[:]
    for g in guard:
        if not D.constrain(d, n, *g):
            return None
    for c in resets:
        D.reset(d, n, c)
    for g in inv:
        if not D.constrain(d, n, *g):
            return None
    D.up(d, n)
    for g in inv:
        if not D.constrain(d, n, *g):
            return None
    return d


def test_post_against_composition() -> None:
    rng = random.Random(11)
    for _ in range(400):
        n = rng.randint(1, 7)
        z = rand_canonical(rng, n)
        guard, inv = rand_guard(rng, n, 3), rand_guard(rng, n, 2)
        resets = [c for c in range(1, n) if rng.random() < 0.3]
        keep = [(c, c) for c in range(1, n) if c not in resets]
        got = D.post(z, n, guard, keep, n, inv)
        assert got == composed_post(z, n, guard, resets, inv)
        if got is not None:
            closed = got[:]
            assert D.canonicalize(closed, n) and closed == got
        # Renaming the target's clocks permutes the result.
        perm = [0, *rng.sample(range(1, n), n - 1)]
        inv_p = [(perm[i], perm[j], b) for i, j, b in inv]
        moved = D.post(z, n, guard, [(o, perm[nw]) for o, nw in keep], n, inv_p)
        assert moved == (None if got is None else D.permute(got, n, perm))


def test_post_changes_dimension_and_leaves_z() -> None:
    z = D.universe(3)
    assert D.constrain(z, 3, 1, 0, D.bound(5, False))  # x1 <= 5
    assert D.constrain(z, 3, 0, 2, D.bound(-2, True))  # x2 > 2
    before = z[:]
    # Keep x2 as new clock 1, drop x1, add a fresh clock 2; invariant x1' <= 9.
    t = D.post(z, 3, [(2, 1, D.bound(0, False))], [(2, 1)], 3, [(1, 0, D.bound(9, False))])
    assert z == before
    assert t is not None
    assert D.to_str(t, 3, ["y", "f"]) == "y > 2 && y <= 9 && f < 7 && y - f <= 5 && f - y < -2"
    # An invariant the reset clocks already break: empty.
    assert D.post(z, 3, [], [], 2, [(0, 1, D.bound(-1, False))]) is None
    # A guard that contradicts z: empty.
    assert D.post(z, 3, [(1, 0, D.bound(-1, False))], [], 1, []) is None


def test_differential_helpers_cover_every_function() -> None:
    assert set(FUNCTIONS) <= set(D.__all__)
    proto: Callable[..., Any]
    for name in FUNCTIONS:
        proto = getattr(backend.DbmOps, name)
        assert list(inspect.signature(proto).parameters)[1:] == list(
            inspect.signature(getattr(D, name)).parameters
        ), name

"""Difference-bound matrices (DBMs) for dense-time zones.

A zone over clocks ``x_1 .. x_{n-1}`` is stored as a flat ``list[int]`` of
``n * n`` encoded bounds, row-major: entry ``d[i * n + j]`` bounds ``x_i - x_j``.
Index 0 is the reference clock, whose value is always 0, so ``d[i * n + 0]`` is the
upper bound of ``x_i`` and ``d[0 * n + j]`` is minus the lower bound of ``x_j``.

Bounds are encoded as single ints so that comparing two bounds is comparing ints:

* ``(<= c)`` is ``2 * c + 1`` and ``(< c)`` is ``2 * c``, so ``(< c)`` is tighter than
  ``(<= c)``, which is tighter than ``(< c + 1)``;
* :data:`INF` (a large int) means "no bound";
* ``LE_ZERO`` is ``(<= 0)`` and ``LT_ZERO`` is ``(< 0)``.

Constants are integers; the caller scales rational constants to integers.

Most operations require a *canonical* DBM: every entry is the tightest bound implied
by the whole matrix (shortest-path closure) and the zone is non-empty, i.e. every
diagonal entry is ``LE_ZERO``.  The canonical form of a non-empty zone is unique, so
canonical DBMs can be compared and hashed (:func:`key`) directly.  All functions
that return or update a DBM keep it canonical unless they report emptiness.

The functions are deliberately plain module-level functions over lists: this module
is the hot path of the explorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from operator import le
from typing import TypeAlias

Dbm: TypeAlias = list[int]
"""A DBM: ``n * n`` encoded bounds, row-major, entry ``i * n + j`` bounds ``x_i - x_j``."""

Packed: TypeAlias = bytes | tuple[int, ...]
"""A DBM kept compactly (:func:`pack`): what the zone explorer's store and the clock
pre-pass's hulls keep.  A tuple here; in the compiled core, bytes: byte 0 the width
``w`` of an entry (1, 2, 4 or 8), then the ``n * n`` entries, each a little-endian
signed integer of ``w`` bytes, the largest one standing for :data:`INF`.  ``w`` is
the least width that holds every finite entry below that largest integer: one byte
for most zones, an eighth of the list's memory.  Only :func:`unpack`, :func:`join`
and :func:`includes_packed` read it."""

INF: int = 1 << 127
"""The encoded "no bound" (``< infinity``).  Every finite bound is far below it:
scaled clock bounds are at most ``2**100`` in magnitude
(:data:`checker.model.interface.MAX_SCALED_BOUND`) and a canonical entry is a sum
of at most one bound per clock."""

LE_ZERO: int = 1
"""The encoded bound ``<= 0``."""

LT_ZERO: int = 0
"""The encoded bound ``< 0``."""


__all__ = [
    "INF",
    "LE_ZERO",
    "LT_ZERO",
    "Dbm",
    "Packed",
    "add",
    "bound",
    "bound_is_strict",
    "bound_value",
    "canonicalize",
    "constrain",
    "down",
    "embed",
    "extrapolate_lu",
    "extrapolate_m",
    "free",
    "includes",
    "includes_packed",
    "intersect",
    "is_empty",
    "join",
    "key",
    "negate",
    "pack",
    "permute",
    "post",
    "project",
    "reset",
    "satisfies",
    "subtract",
    "to_str",
    "universe",
    "unpack",
    "up",
    "zero",
]


# --------------------------------------------------------------------------- bounds


def bound(c: int, strict: bool) -> int:
    """Encode the bound ``< c`` (``strict``) or ``<= c`` as an int."""
    return 2 * c if strict else 2 * c + 1


def bound_value(b: int) -> int:
    """The constant ``c`` of a finite encoded bound (``< c`` or ``<= c``)."""
    return b >> 1


def bound_is_strict(b: int) -> bool:
    """Whether a finite encoded bound is strict (``< c`` rather than ``<= c``)."""
    return not b & 1


def add(a: int, b: int) -> int:
    """Sum of two encoded bounds: ``(c1, ~1) + (c2, ~2) = (c1 + c2, ~)``.

    The result is non-strict only if both operands are; it is :data:`INF` if either
    operand is.  With the encoding ``2c + (1 if <=)`` this is
    ``a + b - ((a | b) & 1)``.
    """
    if a >= INF or b >= INF:
        return INF
    return a + b - ((a | b) & 1)


def negate(b: int) -> int:
    """The bound on ``x_j - x_i`` of the complement of ``x_i - x_j (b)``, for finite ``b``.

    ``not (x_i - x_j <= c)`` is ``x_j - x_i < -c`` and ``not (x_i - x_j < c)`` is
    ``x_j - x_i <= -c``; in the encoding both are ``1 - b``.
    """
    return 1 - b


# --------------------------------------------------------------------- construction


def zero(n: int) -> Dbm:
    """The canonical DBM of dimension ``n`` where every clock equals 0."""
    return [LE_ZERO] * (n * n)


def universe(n: int) -> Dbm:
    """The canonical DBM of dimension ``n`` of all valuations (every clock ``>= 0``)."""
    d = [INF] * (n * n)
    d[0:n] = [LE_ZERO] * n
    d[:: n + 1] = [LE_ZERO] * n
    return d


def key(d: Dbm) -> tuple[int, ...]:
    """A hashable form of a DBM (equal for equal canonical DBMs of the same dimension)."""
    return tuple(d)


# ------------------------------------------------------------------------- closure


def canonicalize(d: Dbm, n: int) -> bool:
    """Close ``d`` in place (Floyd–Warshall); return False if the zone is empty.

    After ``True`` the DBM is canonical.  After ``False`` (a negative cycle) some
    diagonal entry is below ``LE_ZERO`` (so :func:`is_empty` holds) but the other
    contents are unspecified; the caller must treat the zone as empty.
    """
    for k in range(n):
        rk = k * n
        if d[rk + k] < LE_ZERO:
            return False
        # Row k and column k do not change during round k (their updates would go
        # through d[k][k] >= LE_ZERO), so row k can be read once, finite entries only.
        row_k = [(j, v) for j, v in enumerate(d[rk : rk + n]) if v < INF and j != k]
        if not row_k:
            continue
        for i in range(n):
            if i == k:
                continue
            ri = i * n
            dik = d[ri + k]
            if dik >= INF:
                continue
            for j, dkj in row_k:
                s = dik + dkj - ((dik | dkj) & 1)
                if s < d[ri + j]:
                    d[ri + j] = s
    return min(d[:: n + 1]) >= LE_ZERO


def is_empty(d: Dbm, n: int) -> bool:
    """Whether a closed DBM denotes the empty zone (some diagonal entry below ``LE_ZERO``)."""
    return min(d[:: n + 1]) < LE_ZERO


def constrain(d: Dbm, n: int, i: int, j: int, b: int) -> bool:
    """Intersect the canonical DBM ``d`` with ``x_i - x_j (b)``, in place.

    Returns False if the result is empty; ``d`` is then left unchanged, so only the
    return value reports the emptiness (callers must treat the zone as empty).
    Otherwise ``d`` is canonical again, identical to what a full :func:`canonicalize`
    would give.  Runs in O(n^2): a shortest path uses the new edge ``i -> j`` at most once, so
    ``d'[p][q] = min(d[p][q], d[p][i] + b + d[j][q])``.
    """
    ij = i * n + j
    if b >= d[ij]:
        return True
    ji = d[j * n + i]
    if ji < INF and ji + b - ((ji | b) & 1) < LE_ZERO:
        return False
    d[ij] = b
    col_i = d[i::n]
    rj = j * n
    row_j = [(q, v) for q, v in enumerate(d[rj : rj + n]) if v < INF]
    base = 0
    for dpi in col_i:
        if dpi < INF:
            t = dpi + b - ((dpi | b) & 1)
            for q, v in row_j:
                s = t + v - ((t | v) & 1)
                if s < d[base + q]:
                    d[base + q] = s
        base += n
    return True


# ------------------------------------------------------------------ zone operations


def up(d: Dbm, n: int) -> None:
    """Let time elapse (future): drop every upper bound ``x_i - x_0``; stays canonical."""
    d[n::n] = [INF] * (n - 1)


def down(d: Dbm, n: int) -> None:
    """Let time go backwards (past): the time predecessors of the canonical ``d``, in place.

    Stays canonical.  Each lower bound becomes the tightest one the differences still
    imply: ``0 - x_j <= min(0, min_i (x_i - x_j))`` over the clocks ``x_i``.
    """
    for j in range(1, n):
        b = LE_ZERO
        for i in range(1, n):
            c = d[i * n + j]
            if c < b:
                b = c
        d[j] = b


def reset(d: Dbm, n: int, i: int) -> None:
    """Set ``x_i := 0`` in place; stays canonical.

    Row ``i`` becomes row 0 and column ``i`` becomes column 0 (``x_i`` now behaves
    exactly like the reference clock).
    """
    ri = i * n
    d[ri : ri + n] = d[0:n]
    d[i::n] = d[0::n]
    d[ri + i] = LE_ZERO


def free(d: Dbm, n: int, i: int) -> None:
    """Remove every constraint on ``x_i`` except ``x_i >= 0``, in place; stays canonical."""
    ri = i * n
    d[ri : ri + n] = [INF] * n
    d[i::n] = d[0::n]  # x_p - x_i <= x_p - 0, tight since x_i may be 0
    d[ri + i] = LE_ZERO


def project(d: Dbm, n: int, keep: Sequence[int]) -> Dbm:
    """A new DBM over the clocks ``[0] + keep`` (in that order) of the canonical ``d``.

    ``keep`` lists clock indices ``> 0``.  The result is the projection of the zone on
    those clocks (existential quantification of the others), and is canonical because
    the submatrix of a canonical DBM is canonical.
    """
    idx = [0, *keep]
    out: Dbm = []
    for a in idx:
        row = d[a * n : a * n + n]
        out.extend([row[b] for b in idx])
    return out


def embed(d: Dbm, n: int, old_to_new: Sequence[int], m: int) -> Dbm:
    """A new canonical DBM of dimension ``m`` holding the zone ``d`` plus fresh clocks.

    Old clock ``i`` (``1 <= i < n``) becomes new clock ``old_to_new[i]``
    (``old_to_new[0]`` must be 0, the map must be injective).  Every new clock that is
    not the image of an old one is fresh and equal to 0: its row and column copy the
    reference clock's.  This is how clocks join the set of active clocks when reset.
    """
    if len(old_to_new) != n or old_to_new[0] != 0:
        raise ValueError("old_to_new must have length n and map 0 to 0")
    src = [0] * m
    for i in range(1, n):
        t = old_to_new[i]
        if not 0 < t < m or src[t]:
            raise ValueError(f"old_to_new is not an injection into 1..{m - 1}")
        src[t] = i
    out: Dbm = []
    for p in src:
        row = d[p * n : p * n + n]
        out.extend([row[q] for q in src])
    return out


def permute(d: Dbm, n: int, perm: Sequence[int]) -> Dbm:
    """A new DBM where new index ``perm[i]`` holds old clock ``i`` (``perm[0] == 0``)."""
    if len(perm) != n or perm[0] != 0 or sorted(perm) != list(range(n)):
        raise ValueError("perm must be a permutation of range(n) fixing 0")
    inv = [0] * n
    for i, p in enumerate(perm):
        inv[p] = i
    out: Dbm = []
    for p in inv:
        row = d[p * n : p * n + n]
        out.extend([row[q] for q in inv])
    return out


def includes(big: Dbm, small: Dbm, n: int) -> bool:
    """Whether zone ``small`` is a subset of zone ``big`` (both canonical, non-empty).

    For canonical DBMs inclusion is exactly entrywise ``small <= big``.
    """
    return all(map(le, small, big))


def pack(d: Dbm, n: int) -> Packed:
    """A compact copy of ``d`` to keep (see :data:`Packed`)."""
    return tuple(d)


def unpack(p: Packed, n: int) -> Dbm:
    """The DBM (a new list) that :func:`pack` made ``p`` of."""
    return list(p)


def join(h: Packed, z: Dbm, n: int) -> Packed | None:
    """The convex hull of the packed canonical ``h`` and the canonical ``z`` (for
    canonical DBMs, their entrywise maximum, which is canonical), packed; None when
    ``z`` is included in ``h``."""
    if all(map(le, z, h)):
        return None
    return tuple(a if a >= b else b for a, b in zip(h, z, strict=True))


def includes_packed(big: Packed, small: Packed, n: int) -> bool:
    """:func:`includes` of two packed DBMs."""
    return all(map(le, small, big))


def intersect(a: Dbm, b: Dbm, n: int) -> Dbm | None:
    """The canonical intersection of two canonical DBMs, or None if it is empty.

    The arguments are not modified.  When ``b`` tightens only a few entries of ``a``
    they are added with the incremental :func:`constrain`, otherwise the entrywise
    minimum is closed with :func:`canonicalize`; both give the same canonical DBM.
    """
    tighter = [idx for idx, (x, y) in enumerate(zip(a, b, strict=True)) if y < x]
    if not tighter:
        return a[:]
    if len(tighter) < n:
        r = a[:]
        for idx in tighter:
            i, j = divmod(idx, n)
            if not constrain(r, n, i, j, b[idx]):
                return None
        return r
    r = [y if y < x else x for x, y in zip(a, b, strict=True)]
    return r if canonicalize(r, n) else None


def subtract(a: Dbm, b: Dbm, n: int) -> list[Dbm]:
    """The difference ``a \\ b`` of two canonical DBMs as a list of canonical DBMs.

    The result is a federation: the union of the returned non-empty DBMs is exactly
    ``a`` minus ``b`` (the pieces happen to be pairwise disjoint).  With ``b`` the
    conjunction of ``c_1 .. c_k`` (its entries that cut what is left of ``a``):
    ``a \\ b = (a & !c_1) | (a & c_1 & !c_2) | ... | (a & c_1 & .. & c_{k-1} & !c_k)``.
    If ``a`` and ``b`` are disjoint the result is ``[copy of a]``; if ``a`` is included
    in ``b`` it is ``[]``.
    """
    if intersect(a, b, n) is None:
        return [a[:]]
    pieces: list[Dbm] = []
    rest = a[:]
    for idx in range(n * n):
        bb = b[idx]
        if bb >= rest[idx]:
            continue
        i, j = divmod(idx, n)
        piece = rest[:]
        if constrain(piece, n, j, i, 1 - bb):
            pieces.append(piece)
        if not constrain(rest, n, i, j, bb):  # pragma: no cover - a & b is non-empty
            break
    return pieces


def extrapolate_lu(d: Dbm, n: int, lower: Sequence[int], upper: Sequence[int]) -> None:
    """Apply Extra+_LU to the canonical DBM ``d`` in place, then re-canonicalize.

    Extra+_LU is from Behrmann, Bouyer, Larsen and Pelánek, "Lower and upper bounds
    in zone-based abstractions of timed automata" (TACAS 2004 / STTT 2006).  With
    ``(c_ij, ~)`` the entry for ``x_i - x_j``, ``L = lower`` and ``U = upper``, each
    off-diagonal entry becomes

    * ``< inf``        if ``c_ij > L(x_i)``;
    * ``< inf``        if ``-c_0i > L(x_i)``;
    * ``< inf``        if ``-c_0j > U(x_j)`` and ``i != 0``;
    * ``< -U(x_j)``    if ``-c_0j > U(x_j)`` and ``i == 0``;
    * unchanged        otherwise,

    where the conditions read the *original* entries and the first matching case
    applies.  For the reference clock ``L(x_0) = U(x_0) = 0`` (``lower[0]`` and
    ``upper[0]`` are ignored), so row 0 is only touched by the fourth case and column
    0 never by the third.  A negative ``lower[i]`` / ``upper[i]`` (the caller uses
    -1 for "clock never compared") stands for minus infinity, as in the paper; in the
    fourth case ``U(x_j) = -inf`` yields ``x_j >= 0`` (``LE_ZERO``), the intersection
    of ``< +inf`` with the implicit non-negativity of clocks.  Diagonal entries stay
    ``LE_ZERO``.  The result contains the original zone.
    """
    row0 = d[0:n]
    neg_inf = -INF
    lo = [c if c >= 0 else neg_inf for c in lower]
    hi = [c if c >= 0 else neg_inf for c in upper]
    changed = False
    for i in range(1, n):
        li = lo[i]
        ri = i * n
        if -(row0[i] >> 1) > li:
            for j in range(n):
                if j != i and d[ri + j] < INF:
                    d[ri + j] = INF
                    changed = True
            continue
        for j in range(n):
            b = d[ri + j]
            if j == i or b >= INF:
                continue
            if (b >> 1) > li or (j != 0 and -(row0[j] >> 1) > hi[j]):
                d[ri + j] = INF
                changed = True
    for j in range(1, n):
        uj = hi[j]
        if -(row0[j] >> 1) > uj:
            d[j] = LE_ZERO if uj == neg_inf else 2 * -uj
            changed = True
    if changed:
        canonicalize(d, n)


def extrapolate_m(d: Dbm, n: int, m: Sequence[int]) -> None:
    """Apply classic Extra_M (per-clock maximal constants ``m``) to ``d`` in place,
    then re-canonicalize.

    Each off-diagonal entry ``(c_ij, ~)`` becomes ``< inf`` if ``i != 0`` and
    ``c_ij > M(x_i)``, else ``< -M(x_j)`` if ``j != 0`` and ``c_ij < -M(x_j)``, else
    stays.  A negative ``m[i]`` (-1 for "no constant seen") counts as 0, so that
    ``x >= 0`` is never relaxed; ``m[0]`` is ignored.

    Coarser abstractions (Extra+_LU) add valuations that are only *simulated* by
    real ones, which can fake a deadlock; Extra_M adds only valuations that are
    region-equivalent to real ones, so deadlock checks stay exact.
    """
    changed = False
    m = [max(c, 0) for c in m]
    for i in range(n):
        ri = i * n
        mi = m[i]
        for j in range(n):
            if i == j:
                continue
            b = d[ri + j]
            if b >= INF:
                continue
            c = b >> 1
            if i != 0 and c > mi:
                d[ri + j] = INF
                changed = True
            elif j != 0 and c < -m[j]:
                d[ri + j] = 2 * -m[j]
                changed = True
    if changed:
        canonicalize(d, n)


# ------------------------------------------------------------------------ successor


def post(
    z: Dbm,
    n: int,
    guard: Sequence[tuple[int, int, int]],
    keep: Sequence[tuple[int, int]],
    m: int,
    inv: Sequence[tuple[int, int, int]],
) -> Dbm | None:
    """The zone reached from the canonical ``z`` by one discrete step, or None if empty.

    ``z`` is not modified.  The step is, in order:

    1. intersect a copy of ``z`` with every ``x_i - x_j (b)`` of ``guard``
       (``(i, j, b)`` index ``z``'s clocks, ``b`` an encoded bound);
    2. move to the target's clocks (dimension ``m``): each ``(old, new)`` of ``keep``
       carries clock ``old`` of ``z`` over as clock ``new``; every other new clock
       is reset (equal to the reference clock), as :func:`project` then
       :func:`embed` do;
    3. intersect with the target's invariant ``inv`` (indices of the new zone), let
       time pass (:func:`up`), intersect with ``inv`` again.

    The result is canonical.  It is None as soon as step 1 or 3 meets the empty zone.
    """
    d = z[:]
    for i, j, b in guard:
        if not constrain(d, n, i, j, b):
            return None
    zp = project(d, n, [old for old, _ in keep])
    t = embed(zp, len(keep) + 1, [0, *(new for _, new in keep)], m)
    for i, j, b in inv:
        if not constrain(t, m, i, j, b):
            return None
    up(t, m)
    for i, j, b in inv:
        if not constrain(t, m, i, j, b):
            return None
    return t


# ----------------------------------------------------------------------- inspection


def satisfies(d: Dbm, n: int, values: Sequence[Fraction | int]) -> bool:
    """Whether the valuation ``values`` (``values[0] == 0``, the reference) is in ``d``."""
    for i in range(n):
        vi = values[i]
        ri = i * n
        for j in range(n):
            b = d[ri + j]
            if b >= INF:
                continue
            diff = vi - values[j]
            c = b >> 1
            if diff > c or (diff == c and not b & 1):
                return False
    return True


def _fmt_le(name: str, b: int) -> str:
    return f"{name} {'<=' if b & 1 else '<'} {b >> 1}"


def to_str(d: Dbm, n: int, names: Sequence[str]) -> str:
    """A readable, deterministic conjunction of the non-trivial constraints of ``d``.

    ``names`` gives the clock names either for every index (``len(names) == n``,
    ``names[0]`` is ignored) or for clocks ``1 .. n-1`` only (``len(names) == n - 1``).
    Per clock (in index order) its lower then upper bound are listed (``x == c`` when
    they coincide), then for each pair ``i < j`` the bounds on ``x_i - x_j`` and
    ``x_j - x_i`` that are not implied by the clocks' own bounds.  The zone of all
    valuations prints as ``true``, an empty DBM as ``false``.
    """
    if is_empty(d, n):
        return "false"
    if len(names) == n - 1:
        names = ["0", *names]
    elif len(names) != n:
        raise ValueError("names must have n or n - 1 entries")
    parts: list[str] = []
    for i in range(1, n):
        nm = names[i]
        low = d[i]  # -x_i (b)
        upp = d[i * n]  # x_i (b)
        if low & 1 and upp & 1 and upp < INF and (upp >> 1) == -(low >> 1):
            parts.append(f"{nm} == {upp >> 1}")
            continue
        if low != LE_ZERO:
            parts.append(f"{nm} {'>=' if low & 1 else '>'} {-(low >> 1)}")
        if upp < INF:
            parts.append(_fmt_le(nm, upp))
    for i in range(1, n):
        for j in range(i + 1, n):
            bij = d[i * n + j]
            bji = d[j * n + i]
            keep_ij = bij < INF and bij < add(d[i * n], d[j])
            keep_ji = bji < INF and bji < add(d[j * n], d[i])
            diff_ij = f"{names[i]} - {names[j]}"
            if keep_ij and keep_ji and bij & 1 and bji & 1 and (bij >> 1) == -(bji >> 1):
                parts.append(f"{diff_ij} == {bij >> 1}")
                continue
            if keep_ij:
                parts.append(_fmt_le(diff_ij, bij))
            if keep_ji:
                parts.append(_fmt_le(f"{names[j]} - {names[i]}", bji))
    return " && ".join(parts) if parts else "true"

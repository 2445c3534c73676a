"""Readable parameter regions: the safe region of a synthesis as a person writes it.

The exploration's safe region is the ranges minus a union of bad convex pieces,
i.e. a conjunction of clauses, one per bad piece (:func:`checker.smt.synth.
safe_region`).  That form is exact but often long: a clause whose literal the other
clauses make impossible, a clause the others imply.  :func:`readable` builds two
equivalent forms and prints the shorter one (fewer constraints; the conjunctive one
on a tie):

* the **conjunctive form** (CNF), simplified: a literal is dropped from its clause
  when the region (within the ranges) implies the clause without it, and a clause
  is dropped when the others imply it;
* the **disjunctive form** (DNF): the ranges are split by each bad piece into convex
  pieces of the safe region, each piece is grown (a constraint is dropped while the
  piece stays inside the region), its constraints the ranges and the rest of it
  imply are removed, and a piece the others cover is dropped.

Every step keeps the set of values exactly (each is decided by Z3 on the region
itself), so the printed form is equivalent to the computed one within the ranges;
the tests check it by parsing the text back.

The region of a ``reachable`` query (a union of convex pieces) is printed as a short
union (:func:`short_union`): pieces whose union is convex are merged, each piece is
grown and stripped of what the ranges imply, and a piece the others cover is dropped.
:func:`projected` projects a region onto some of its parameters (the others
existentially quantified, as IMITATOR's ``projectresult``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import z3

from checker.results import Coverage
from checker.smt.poly import (
    Lin,
    Z3Context,
    convex_union,
    dedupe,
    eliminate,
    param_var,
    remove_redundant,
)
from checker.smt.synth import (
    SynthResult,
    coverage,
    dnf_smtlib,
    dnf_text,
    dnf_z3,
    essential,
    reach_coverage,
    reach_region,
    region_smtlib,
    region_text,
    region_z3,
    safe_region,
)

MAX_DNF_PIECES = 64
"""Beyond this many convex pieces while splitting, only the conjunctive form is built."""


class Form(enum.Enum):
    """How a region is written."""

    CNF = "cnf"
    """A conjunction of clauses, each a disjunction of constraints."""
    DNF = "dnf"
    """A disjunction of convex pieces, each a conjunction of constraints."""


@dataclass(frozen=True)
class Readable:
    """A region in the form it is printed in, to be read within the ranges."""

    form: Form
    parts: tuple[tuple[Lin, ...], ...]
    """The clauses (CNF) or the pieces (DNF)."""

    def text(self, order: Sequence[str] = ()) -> str:
        """The region as text (``true``, ``false``, or a formula)."""
        parts = [list(p) for p in self.parts]
        return region_text(parts, order) if self.form is Form.CNF else dnf_text(parts, order)

    def z3(self, ranges: Sequence[Lin]) -> z3.BoolRef:
        """The region within ``ranges`` as a Z3 formula over Reals named after the
        parameters."""
        parts = [list(p) for p in self.parts]
        return region_z3(parts, ranges) if self.form is Form.CNF else dnf_z3(parts, ranges)

    @property
    def size(self) -> int:
        """How many constraints it writes."""
        return sum(len(p) for p in self.parts)


TRUE = Readable(Form.CNF, ())
FALSE = Readable(Form.CNF, ((),))


def readable(result: SynthResult) -> Readable:
    """The safe region of a complete synthesis (or one whose bad pieces already cover
    the ranges), as the shorter of its simplified conjunctive and disjunctive forms."""
    cov = coverage(result)
    if cov is Coverage.NONE:
        return FALSE
    if not result.bad.pieces:
        return TRUE
    ctx = Z3Context()
    ranges = list(result.ranges)
    bad = [essential(ctx, piece, ranges) for piece in result.bad.pieces]
    unsafe = z3.Or(*[z3.And(*[ctx.expr(c) for c in piece]) for piece in bad])
    cnf = _simplify_cnf(ctx, ranges, [list(c) for c in safe_region(result)])
    best = Readable(Form.CNF, tuple(tuple(sorted(c)) for c in sorted(cnf)))
    dnf = _dnf(ctx, ranges, bad, unsafe)
    if dnf is not None and sum(len(p) for p in dnf) < best.size:
        best = Readable(Form.DNF, tuple(tuple(sorted(p)) for p in sorted(dnf)))
    return best


def _clause(ctx: Z3Context, clause: Sequence[Lin]) -> z3.BoolRef:
    return z3.Or(*[ctx.expr(c) for c in clause]) if clause else z3.BoolVal(False)


def _simplify_cnf(ctx: Z3Context, ranges: list[Lin], cnf: list[list[Lin]]
                  ) -> list[list[Lin]]:
    """Drop the literals the region makes impossible, then the clauses the others imply."""
    def formula(clauses: Sequence[Sequence[Lin]]) -> z3.BoolRef:
        return z3.And(*[_clause(ctx, c) for c in clauses])

    for j in range(len(cnf)):
        i = 0
        while i < len(cnf[j]) and len(cnf[j]) > 1:
            shorter = cnf[j][:i] + cnf[j][i + 1:]
            # The region implies the shorter clause: no value of it needs the literal.
            if not ctx.sat([*ranges, *(c.negate() for c in shorter)], [formula(cnf)]):
                cnf[j] = shorter
            else:
                i += 1
    j = 0
    while j < len(cnf):
        others = cnf[:j] + cnf[j + 1:]
        if not ctx.sat([*ranges, *(c.negate() for c in cnf[j])], [formula(others)]):
            cnf = others
        else:
            j += 1
    return cnf


def _dnf(ctx: Z3Context, ranges: list[Lin], bad: Sequence[Sequence[Lin]],
         unsafe: z3.BoolRef) -> list[list[Lin]] | None:
    """The safe region as a short union of convex pieces; None when splitting makes
    more than :data:`MAX_DNF_PIECES`."""
    pieces: list[list[Lin]] = [[]]
    for piece in bad:
        split: list[list[Lin]] = []
        for q in pieces:
            acc = list(q)
            for c in piece:
                part = [*acc, c.negate()]
                if ctx.sat([*ranges, *part]):
                    split.append(part)
                acc.append(c)
                if not ctx.sat([*ranges, *acc]):
                    break
        pieces = split
        if len(pieces) > MAX_DNF_PIECES:
            return None
    return _grown(ctx, ranges, pieces, unsafe)


def _grown(ctx: Z3Context, ranges: list[Lin], pieces: Sequence[Sequence[Lin]],
           outside: z3.BoolRef) -> list[list[Lin]]:
    """Pieces of a region (``outside``: its complement) each grown — a constraint
    dropped while the piece stays inside the region — and stripped of what the ranges
    imply; then a piece inside the union of the others is dropped."""
    grown: list[list[Lin]] = []
    for q in pieces:
        q = sorted(set(q))
        i = 0
        while i < len(q):
            wider = q[:i] + q[i + 1:]
            if not ctx.sat([*ranges, *wider], [outside]):
                q = wider
            else:
                i += 1
        q = essential(ctx, q, ranges)
        if q not in grown:
            grown.append(q)
    j = 0
    while j < len(grown):
        others = grown[:j] + grown[j + 1:]
        rest = [z3.Not(z3.And(*[ctx.expr(c) for c in p])) for p in others]
        if not ctx.sat([*ranges, *grown[j]], rest):
            grown = others
        else:
            j += 1
    return grown


@dataclass(frozen=True)
class RegionView:
    """The region ``synth`` prints: how much of the ranges it covers (None: not known,
    a limit), whether it is known, its text, its SMT-LIB script (None: not known), the
    constraints it writes and the ranges it is read within (projected, with a
    projection)."""

    coverage: Coverage | None
    known: bool
    text: str
    smtlib: str | None
    printed: list[Lin]
    ranges: list[Lin]


def region_view(result: SynthResult, query: bool, keep: Sequence[str] | None = None,
                order: Sequence[str] = ()) -> RegionView:
    """The safe region of ``result`` (with ``query``: where the query is reachable) as
    ``synth`` prints it: :func:`readable` (with ``query``: :func:`short_union`), or
    with ``keep`` projected onto those parameters (:func:`projected`; the coverage is
    still the region's before projection).  Raises ValueError when the safe region has
    too many convex pieces to project."""
    cov = reach_coverage(result) if query else coverage(result)
    known = result.complete or cov is (Coverage.ALL if query else Coverage.NONE)
    free = result.free
    if not known:  # what was found so far (not printed as a region)
        text = dnf_text(reach_region(result), order) if query else \
            region_text(safe_region(result), order)
        return RegionView(cov, False, text, None, [], list(result.ranges))
    if keep is not None:
        pieces = reach_region(result) if query else safe_pieces(result)
        if pieces is None:
            raise ValueError("the safe region splits into too many convex pieces to project;"
                             " synthesize over fewer parameters (--free)")
        shown, box = projected(pieces, result.ranges, free, keep)
        return RegionView(cov, True, dnf_text(shown, order), dnf_smtlib(shown, box, keep),
                          [c for piece in shown for c in piece], box)
    if query:
        dnf = reach_region(result)
        short = short_union(result.ranges, dnf)
        return RegionView(cov, True, dnf_text(short, order),
                          dnf_smtlib(dnf, result.ranges, free),
                          [c for piece in short for c in piece], list(result.ranges))
    form = readable(result)
    return RegionView(cov, True, form.text(order),
                      region_smtlib(safe_region(result), result.ranges, free),
                      [c for part in form.parts for c in part], list(result.ranges))


def safe_pieces(result: SynthResult) -> list[list[Lin]] | None:
    """The safe region of a complete synthesis as a union of convex pieces (``[[]]``:
    every value; ``[]``: none), each to be read with the ranges; None when splitting
    the ranges by the bad pieces makes more than :data:`MAX_DNF_PIECES`."""
    cov = coverage(result)
    if cov is Coverage.NONE:
        return []
    if not result.bad.pieces:
        return [[]]
    ctx = Z3Context()
    ranges = list(result.ranges)
    bad = [essential(ctx, piece, ranges) for piece in result.bad.pieces]
    unsafe = z3.Or(*[z3.And(*[ctx.expr(c) for c in piece]) for piece in bad])
    return _dnf(ctx, ranges, bad, unsafe)


def short_union(ranges: Sequence[Lin], pieces: Sequence[Sequence[Lin]]) -> list[list[Lin]]:
    """The union of convex ``pieces`` (each read with the ``ranges``) written shorter:
    two pieces whose union is convex are replaced by it, until none is; then each piece
    is grown (a constraint dropped while the piece stays inside the union) and stripped
    of what the ranges imply, and a piece inside the union of the others is dropped.
    The same set of values within the ranges; ``[[]]`` when it is all of them.  Beyond
    :data:`MAX_DNF_PIECES` pieces (the pairwise steps grow with their square) the pieces
    are returned as they are."""
    if len(pieces) > MAX_DNF_PIECES:
        return sorted(sorted(p) for p in pieces)
    ctx = Z3Context()
    ranges = list(ranges)
    cur: list[list[Lin]] = []
    for piece in pieces:
        got = dedupe([*ranges, *piece])
        if got is not None and ctx.sat(got):
            cur.append(remove_redundant(ctx, got))
    cur = _merged(ctx, cur)
    if not cur:
        return []
    union = z3.Or(*[z3.And(*[ctx.expr(c) for c in p]) for p in cur])
    grown = _grown(ctx, ranges, cur, z3.Not(union))
    if any(not p for p in grown):
        return [[]]
    return sorted(sorted(p) for p in grown)


def _merged(ctx: Z3Context, pieces: list[list[Lin]]) -> list[list[Lin]]:
    """Convex pieces, two whose union is convex replaced by it until none are."""
    cur = list(pieces)
    i = 0
    while i < len(cur):
        for j in range(i + 1, len(cur)):
            hull = convex_union(ctx, cur[i], cur[j])
            if hull is not None:
                cur = [p for k, p in enumerate(cur) if k not in (i, j)] + [hull]
                i = -1
                break
        i += 1
    return cur


def projected(pieces: Sequence[Sequence[Lin]], ranges: Sequence[Lin], free: Sequence[str],
              keep: Sequence[str]) -> tuple[list[list[Lin]], list[Lin]]:
    """A union of convex pieces over ``free`` (each read with the ``ranges``)
    projected onto the parameters ``keep``: the values of those for which some value
    of the others lies in the union (IMITATOR's ``projectresult``).  Each piece is
    projected exactly (Fourier–Motzkin over the reals, strict-aware) and the union of
    the projections written short (:func:`short_union`); returned with the ranges
    projected alike."""
    ctx = Z3Context()
    drop = [param_var(p) for p in free if p not in keep]

    def project(cons: Sequence[Lin]) -> list[Lin] | None:
        cur: list[Lin] | None = dedupe(cons)
        for v in drop:
            if cur is None:
                return None
            cur = eliminate(cur, v)
            if cur is not None:
                cur = remove_redundant(ctx, cur)
        return cur if cur is not None and ctx.sat(cur) else None

    box = project(ranges)
    if box is None:
        return [], []
    out = [got for piece in pieces if (got := project([*ranges, *piece])) is not None]
    return short_union(box, out), box


# ---- the region in the plane of two parameters ------------------------------------------------

Point = tuple[Fraction, Fraction]


@dataclass(frozen=True)
class Polygon:
    """A convex piece of a region over two parameters, clipped to their box: its
    vertices in order, and for the edge from vertex ``i`` to ``i + 1`` whether it lies
    on a strict constraint of the piece (True: the boundary is not in the piece), on a
    non-strict one (False), or on the box (None)."""

    vertices: tuple[Point, ...]
    strict: tuple[bool | None, ...]


def polygons(pieces: Sequence[Sequence[Lin]], x: str, y: str,
             box: tuple[Fraction, Fraction, Fraction, Fraction]) -> list[Polygon]:
    """Each convex piece over parameters ``x`` and ``y`` (other variables must not
    occur) clipped to ``box`` = (x_lo, x_hi, y_lo, y_hi); empty or flat pieces are
    left out.  Exact (Sutherland–Hodgman on rationals)."""
    x_lo, x_hi, y_lo, y_hi = box
    out: list[Polygon] = []
    vx, vy = param_var(x), param_var(y)
    for piece in pieces:
        verts: list[Point] = [(x_lo, y_lo), (x_hi, y_lo), (x_hi, y_hi), (x_lo, y_hi)]
        marks: list[bool | None] = [None, None, None, None]
        for c in piece:
            if any(v not in (vx, vy) for v, _ in c.coefs):
                raise ValueError(f"a constraint over more than {x} and {y}")
            a, b = c.coef(vx), c.coef(vy)
            verts, marks = _clip(verts, marks, a, b, c.const, c.strict)
            if len(verts) < 3:
                break
        if len(verts) >= 3 and _area2(verts) != 0:
            out.append(Polygon(tuple(verts), tuple(marks)))
    return out


def _clip(verts: list[Point], marks: list[bool | None], a: Fraction, b: Fraction,
          k: Fraction, strict: bool) -> tuple[list[Point], list[bool | None]]:
    """The convex polygon cut by ``a*x + b*y + k <= 0``; the new edge is marked
    ``strict``."""
    def val(p: Point) -> Fraction:
        return a * p[0] + b * p[1] + k

    n = len(verts)
    new_v: list[Point] = []
    new_m: list[bool | None] = []

    def emit(v: Point, m: bool | None) -> None:
        new_v.append(v)
        new_m.append(m)

    for i in range(n):
        p, q, m = verts[i], verts[(i + 1) % n], marks[i]
        vp, vq = val(p), val(q)
        if vp <= 0 and vq <= 0:
            emit(p, m)
        elif vp <= 0:  # leaving the half-plane: then along its boundary line
            if vp < 0:
                emit(p, m)
                t = vp / (vp - vq)
                emit((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])), strict)
            else:
                emit(p, strict)
        elif vq < 0:  # entering it
            t = vp / (vp - vq)
            emit((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])), m)
    # Drop repeated vertices (a cut through a vertex).
    keep_v: list[Point] = []
    keep_m: list[bool | None] = []
    for v, m in zip(new_v, new_m, strict=True):
        if keep_v and keep_v[-1] == v:
            keep_m[-1] = m
            continue
        keep_v.append(v)
        keep_m.append(m)
    if len(keep_v) > 1 and keep_v[0] == keep_v[-1]:
        keep_v.pop()
        keep_m.pop()
    return keep_v, keep_m


def _area2(verts: Sequence[Point]) -> Fraction:
    """Twice the signed area."""
    n = len(verts)
    return sum((verts[i][0] * verts[(i + 1) % n][1] - verts[(i + 1) % n][0] * verts[i][1]
                for i in range(n)), Fraction(0))

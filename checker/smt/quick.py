"""Exact satisfiability shortcuts for parametric difference systems, without a solver.

The systems that parametric zone exploration queries are conjunctions of
constraints ``x - y + P(p) + k < 0`` (or ``<= 0``): at most two non-parameter
variables (clocks), with coefficients ``+1`` and ``-1``, plus a linear form
``P`` over the timing parameters.  Read with ``x_0 = 0``, every such
constraint is an edge ``y -> x`` of weight ``-(P(p) + k)`` in a constraint
graph, and for fixed parameter values the system is satisfiable exactly when
the graph has no cycle of negative weight, nor of weight zero through a strict
edge.  Two cheap and exact tests follow:

* **satisfiable**: at one of a few fixed *probe* parameter valuations the
  graph has no such cycle (Bellman–Ford; weights scaled to integers, strict
  edges weighing an infinitesimal less) — the probe and the shortest-path
  potentials are a satisfying point;
* **unsatisfiable**: a cycle of at most three edges through one of the
  constraints just added is infeasible for *every* parameter valuation of
  the box that the system's own single-parameter bounds span (the cycle's
  weight is linear in the parameters, so its supremum over the box is at a
  corner).

Either test may find nothing (``None``); the caller then asks Z3.  Neither
ever answers wrongly: a "satisfiable" comes with a point, an "unsatisfiable"
with a cycle whose weight is negative wherever the system holds.

:func:`fm_decide` decides any small system (of any shape) completely: it
eliminates every variable by Fourier–Motzkin in integer arithmetic, which is
exact over the reals, strict constraints included; it gives up (``None``) only
when the system has too many variables or the elimination too many rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from math import gcd

from checker.smt.lin import Lin

SCALE = 720720
"""Weights are multiplied by this (the lcm of 1..16) to be integers."""
EPS = 1 << 20
"""Room for strict edges: a weight ``w`` is ``w * SCALE * EPS``, less one if strict."""

LEARNT_PROBES = 16
"""How many satisfying valuations found by Z3 become probes too."""

Bound = tuple[Fraction | int, bool]
"""A parameter bound: its value and whether it is strict (open)."""


class _Shape:
    """A constraint read as an edge ``src -> dst`` (``None`` is ``x_0 = 0``): the
    constraint is ``x_dst - x_src + sum(pcoef * p) + const < 0`` (``<= 0``)."""

    __slots__ = ("bound", "const", "dst", "icoef", "iconst", "pcoef", "src", "strict",
                 "weights")

    def __init__(self, src: str | None, dst: str | None, pcoef: tuple[Fraction, ...],
                 const: Fraction, strict: bool) -> None:
        self.src = src
        self.dst = dst
        self.pcoef = pcoef
        self.const = const
        self.strict = strict
        self.weights: list[int | None] | None = None
        """The edge weight at each probe, scaled (None where not an integer)."""
        self.icoef: tuple[int, ...] | None = None
        """``pcoef`` times SCALE, if those are all integers (and ``iconst`` too)."""
        self.iconst = 0
        ic = [a * SCALE for a in pcoef]
        k = const * SCALE
        if k.denominator == 1 and all(a.denominator == 1 for a in ic):
            self.icoef = tuple(int(a) for a in ic)
            self.iconst = int(k)
        self.bound: tuple[int, Fraction | int, bool, bool] | None = None
        """For ``a * p + k < 0`` (one parameter, no clock): (index of p, -k/a,
        strict, whether it is an upper bound)."""
        if src is None and dst is None:
            nz = [(i, a) for i, a in enumerate(pcoef) if a]
            if len(nz) == 1:
                i, a = nz[0]
                v = -const / a
                self.bound = (i, int(v) if v.denominator == 1 else v, strict, a > 0)


def _common(point: Sequence[Fraction]) -> tuple[int, tuple[int, ...]]:
    """``point`` over a common denominator: (denominator, numerators)."""
    den = 1
    for x in point:
        den = den * x.denominator // gcd(den, x.denominator)
    return den, tuple(int(x * den) for x in point)


_UNKNOWN = _Shape(None, None, (), Fraction(0), False)
"""A placeholder: the constraint has not been read yet."""


class Shortcuts:
    """The shortcuts for one exploration: its parameters (by variable name), the
    probe valuations, and per-constraint caches (shapes, probe weights)."""

    def __init__(self, params: Sequence[str], probes: Sequence[Sequence[Fraction]]) -> None:
        self.params = list(params)
        self.index = {p: i for i, p in enumerate(self.params)}
        self.probes = [list(p) for p in probes]
        self.scaled = [_common(p) for p in self.probes]
        """Each probe as (common denominator, integer numerators)."""
        self.fixed = len(self.probes)
        self.order = list(range(len(self.probes)))
        """The probes' indices, the most recently successful first."""
        """The probes given; later ones are learnt from Z3's models (:meth:`add_probe`)."""
        self.shapes: dict[Lin, _Shape | None] = {}
        self.hits_sat = 0
        self.hits_unsat = 0

    # ---- per-constraint caches -------------------------------------------------------
    def shape(self, c: Lin) -> _Shape | None:
        """``c`` as a graph edge, or None if it is not a parametric difference constraint."""
        got = self.shapes.get(c, _UNKNOWN)
        if got is _UNKNOWN:
            got = self._shape(c)
            self.shapes[c] = got
        return got

    def _shape(self, c: Lin) -> _Shape | None:
        src: str | None = None
        dst: str | None = None
        pcoef = [Fraction(0)] * len(self.params)
        for v, a in c.coefs:
            i = self.index.get(v)
            if i is not None:
                pcoef[i] = a
            elif a == 1 and dst is None:
                dst = v
            elif a == -1 and src is None:
                src = v
            else:
                return None
        return _Shape(src, dst, tuple(pcoef), c.const, c.strict)

    def _weights(self, shape: _Shape) -> list[int | None]:
        """The edge weight of ``shape`` at each probe, scaled (None if not an integer);
        computed for the probes added since the last call."""
        ws = shape.weights
        if ws is None:
            ws = []
            shape.weights = ws
        icoef = shape.icoef
        for t in range(len(ws), len(self.probes)):
            if icoef is None:
                ws.append(None)
                continue
            # The weight times SCALE * den[t] (the probe's common denominator): an
            # integer, scaled alike for every edge at this probe.
            den, nums = self.scaled[t]
            w = -(shape.iconst * den + sum(a * x for a, x in zip(icoef, nums, strict=True)))
            ws.append(w * EPS - (1 if shape.strict else 0))
        return ws

    def wants_probe(self) -> bool:
        """Whether :meth:`add_probe` would still take a point."""
        return len(self.probes) < self.fixed + LEARNT_PROBES

    def add_probe(self, point: Sequence[Fraction]) -> None:
        """Try ``point`` (a satisfying valuation Z3 found) from now on, too."""
        point = list(point)
        if self.wants_probe() and point not in self.probes:
            self.order.append(len(self.probes))
            self.probes.append(point)
            self.scaled.append(_common(point))

    # ---- decisions ---------------------------------------------------------------------
    def decide(self, cons: Iterable[Lin], new: Sequence[Lin] = ()) -> bool | None:
        """Whether the conjunction is satisfiable, if a shortcut shows it; else None.

        ``new`` are the constraints just added to a (presumably satisfiable) rest:
        the unsatisfiability test looks for short cycles through them."""
        shapes = self.shapes
        shaped: list[_Shape] = []
        for c in cons:
            sh = shapes.get(c, _UNKNOWN)
            if sh is _UNKNOWN:
                sh = self.shape(c)
            if sh is None:
                return None
            shaped.append(sh)
        n = len(self.probes)
        for sh in shaped:
            ws = sh.weights
            if ws is None or len(ws) < n:
                self._weights(sh)
        if new and self._refuted(shaped, new):
            self.hits_unsat += 1
            return False
        loops: list[list[int | None]] = []
        edges: list[tuple[str | None, str | None, list[int | None]]] = []
        nodes: set[str | None] = {None}
        for sh in shaped:
            ws = sh.weights
            assert ws is not None
            if sh.src == sh.dst:  # a parameter-only constraint: a self-loop
                loops.append(ws)
            else:
                edges.append((sh.src, sh.dst, ws))
                nodes.add(sh.src)
                nodes.add(sh.dst)
        order = self.order
        for k, t in enumerate(order):
            if self._witnessed(loops, edges, nodes, t):
                if k:  # try the successful probe first next time
                    order.insert(0, order.pop(k))
                self.hits_sat += 1
                return True
        return None

    @staticmethod
    def _witnessed(loops: list[list[int | None]],
                   edges: list[tuple[str | None, str | None, list[int | None]]],
                   nodes: set[str | None], t: int) -> bool:
        """Whether the graph at probe ``t`` has no infeasible cycle (then it is
        satisfiable); False when it has one or a weight is not an integer."""
        for ws in loops:
            w = ws[t]
            if w is None or w < 0:
                return False
        es: list[tuple[str | None, str | None, int]] = []
        for src, dst, ws in edges:
            w = ws[t]
            if w is None:
                return False
            es.append((src, dst, w))
        dist = dict.fromkeys(nodes, 0)
        for _ in range(len(nodes)):
            changed = False
            for src, dst, w in es:
                nd = dist[src] + w
                if nd < dist[dst]:
                    dist[dst] = nd
                    changed = True
            if not changed:
                return True
        return False

    def _refuted(self, shaped: list[_Shape], new: Sequence[Lin]) -> bool:
        """Whether a cycle of at most four edges through a ``new`` constraint is
        infeasible for every parameter valuation within the system's own bounds
        (for a new parameter-only constraint: it alone, or it plus one other)."""
        cycles = _Cycles(self, shaped)
        for c in new:
            n = self.shape(c)
            if n is not None and cycles.refuted_through(n):
                return True
        return False

    def _inside(self, lo: Sequence[Bound | None], hi: Sequence[Bound | None]) -> int | None:
        """A probe (among the three most recently successful) inside the box, if any."""
        for t in self.order[:3]:
            point = self.probes[t]
            ok = True
            for x, low, high in zip(point, lo, hi, strict=True):
                if low is not None and (x < low[0] or (low[1] and x == low[0])):
                    ok = False
                    break
                if high is not None and (x > high[0] or (high[1] and x == high[0])):
                    ok = False
                    break
            if ok:
                return t
        return None

    @staticmethod
    def _infeasible(cycle: Sequence[_Shape], lo: Sequence[Bound | None],
                    hi: Sequence[Bound | None]) -> bool:
        """Whether the cycle's weight is negative (or zero through a strict edge) for
        every parameter valuation in the box ``lo``..``hi``."""
        # The cycle reads 0 < (or <=) its weight -(sum pcoef * p + const); it is
        # infeasible everywhere iff the infimum over the box of sum pcoef * p + const
        # is > 0, or = 0 and (a strict edge or the infimum not attained).  Integers
        # (scaled by SCALE) where the coefficients allow.
        strict = False
        scaled = all(sh.icoef is not None for sh in cycle)
        const: Fraction | int = 0
        coefs: list[Fraction | int] = [0] * len(lo)
        for sh in cycle:
            strict = strict or sh.strict
            if scaled:
                const += sh.iconst
                pc: Sequence[Fraction | int] = sh.icoef  # type: ignore[assignment]
            else:
                const += sh.const
                pc = sh.pcoef
            for i, a in enumerate(pc):
                if a:
                    coefs[i] += a
        total = const
        attained = True
        for i, a in enumerate(coefs):
            if not a:
                continue
            b = lo[i] if a > 0 else hi[i]
            if b is None:
                return False
            total += a * b[0]
            attained = attained and not b[1]
        return total > 0 or (total == 0 and (strict or not attained))


class _Cycles:
    """The cycles a :meth:`QuickRefuter._refuted` call looks for, over the shaped system:
    its edges by source, its single-parameter constraints (the self-loops), and the box
    they span, filled on first use."""

    def __init__(self, quick: Shortcuts, shaped: list[_Shape]) -> None:
        self.quick = quick
        self.out: dict[str | None, list[_Shape]] = {}
        self.loops: list[_Shape] = []
        for sh in shaped:
            if sh.src == sh.dst:
                self.loops.append(sh)
                continue
            got = self.out.get(sh.src)
            if got is None:
                self.out[sh.src] = [sh]
            else:
                got.append(sh)
        self.lo: list[Bound | None] = [None] * len(quick.params)
        self.hi: list[Bound | None] = [None] * len(quick.params)
        self.box: list[int | None] = []  # [probe inside the box], once lo and hi are filled

    def fill(self) -> int | None:
        """The box the system's single-parameter bounds span (into lo and hi), and a
        probe inside it, computed on first use."""
        if not self.box:
            lo, hi = self.lo, self.hi
            for sh in self.loops:
                b = sh.bound
                if b is not None:
                    i, v, strict, upper = b
                    side = hi if upper else lo
                    old = side[i]
                    if (old is None or (v < old[0] if upper else v > old[0])
                            or (v == old[0] and strict)):
                        side[i] = (v, strict)
            self.box.append(self.quick._inside(lo, hi))
        return self.box[0]

    def refutes(self, cycle: tuple[_Shape, ...]) -> bool:
        """Whether the cycle is infeasible throughout the box; first, cheaply, whether
        it is feasible at a probe inside the box (then it is not)."""
        t0 = self.fill()
        if t0 is not None:
            total = 0
            for sh in cycle:
                w = sh.weights[t0] if sh.weights is not None else None
                if w is None:
                    break
                total += w
            else:
                if total >= 0:
                    return False
        return self.quick._infeasible(cycle, self.lo, self.hi)

    def refuted_through(self, n: _Shape) -> bool:
        """Whether some short cycle through the new constraint ``n`` is refuted."""
        if n.src == n.dst:
            if n.bound is not None:
                return False
            return self.refutes((n,)) or any(o is not n and self.refutes((n, o))
                                             for o in self.loops)
        return self._closed(n)

    def _closed(self, n: _Shape) -> bool:
        """``n``: src -> dst; whether a cycle closing dst -> src in one to three more
        edges is refuted."""
        out = self.out
        for e1 in out.get(n.dst, ()):
            if e1.dst == n.src:
                if self.refutes((n, e1)):
                    return True
                continue
            for e2 in out.get(e1.dst, ()):
                if e2.dst == n.src:
                    if self.refutes((n, e1, e2)):
                        return True
                    continue
                if e2.dst == n.dst:
                    continue
                for e3 in out.get(e2.dst, ()):
                    if e3.dst == n.src and self.refutes((n, e1, e2, e3)):
                        return True
        return False


_Row = tuple[list[int] | tuple[int, ...], int, bool, int]
"""A row of :func:`fm_decide`: (coefficients, constant, strict, gcd of the coefficients),
for ``coefficients . x + constant < 0`` (``<= 0``)."""


FM_ROWS = 96
""":func:`fm_decide` gives up when an elimination step would exceed this many rows."""
FM_VARS = 8
"""… and on systems of more variables than this."""


def fm_decide(cons: Iterable[Lin], max_rows: int = FM_ROWS, max_vars: int = FM_VARS
              ) -> bool | None:
    """Whether the conjunction is satisfiable over the reals, decided exactly by
    Fourier–Motzkin elimination of every variable in integer arithmetic; None when the
    system has more than ``max_vars`` variables or an elimination step would produce
    more than ``max_rows`` constraints (the caller then asks a solver).

    Each constraint ``sum(a_v * v) + k < 0`` (``<= 0``) is scaled to integers.  Eliminating
    ``v`` keeps the constraints without ``v`` and adds, for each pair of one with a
    positive and one with a negative coefficient of ``v``, their positive combination
    that cancels ``v`` — strict if either is.  This is the exact projection over the
    reals, strict constraints included, so the system is satisfiable iff no constant
    constraint left at the end (or met on the way) is false: ``k > 0``, or ``k = 0``
    and strict.  Per direction only the tightest constraint is kept."""
    names: dict[str, int] = {}
    ints: list[tuple[tuple[tuple[str, int], ...], int, bool]] = []
    for c in cons:
        got = _INTS.get(c)
        if got is None:
            got = _integral(c)
        for v, _ in got[0]:
            if v not in names:
                names[v] = len(names)
        ints.append(got)
    n = len(names)
    if n > max_vars:
        return None
    best: dict[tuple[int, ...], _Row] = {}
    """Primitive direction -> the tightest row along it."""
    for row, k, strict in ints:
        vec = [0] * n
        for v, a in row:
            vec[names[v]] = a
        if not _put(best, vec, k, strict):
            return False
    while best:
        rows = list(best.values())
        j, cost = _pick(rows, n)
        if len(rows) + cost > max_rows:
            return None
        got_best = _eliminate(rows, j)
        if got_best is None:
            return False
        best = got_best
    return True


def _pick(rows: list[_Row], n: int) -> tuple[int, int]:
    """The variable whose elimination adds the fewest rows, and how many it adds
    (negative: it removes some)."""
    pos = [0] * n
    neg = [0] * n
    for vec, _, _, _ in rows:
        for i, x in enumerate(vec):
            if x > 0:
                pos[i] += 1
            elif x < 0:
                neg[i] += 1
    j = -1
    cost = 0
    for v in range(n):
        p, q = pos[v], neg[v]
        if p + q == 0:
            continue
        here = p * q - p - q
        if j < 0 or here < cost:
            j, cost = v, here
    return j, cost


def _eliminate(rows: list[_Row], j: int) -> dict[tuple[int, ...], _Row] | None:
    """The rows without variable ``j`` and every combination of a row with a positive and
    one with a negative coefficient of ``j`` that cancels it (tightest per direction);
    None if one of them is a false constant row."""
    pos_rows = []
    neg_rows = []
    best: dict[tuple[int, ...], _Row] = {}
    for r in rows:
        x = r[0][j]
        if x > 0:
            pos_rows.append(r)
        elif x < 0:
            neg_rows.append(r)
        else:
            best[_direction(r[0], r[3])] = r
    for pv, pk, ps, _ in pos_rows:
        a = pv[j]
        for qv, qk, qs, _ in neg_rows:
            b = -qv[j]
            if a == b:
                vec = [x + y for x, y in zip(pv, qv, strict=True)]
                k = pk + qk
            else:
                g = gcd(a, b)
                fa, fb = b // g, a // g  # fa * p + fb * q cancels variable j
                vec = [fa * x + fb * y for x, y in zip(pv, qv, strict=True)]
                k = fa * pk + fb * qk
            if not _put(best, vec, k, ps or qs):
                return None
    return best


def _direction(vec: list[int] | tuple[int, ...], g: int) -> tuple[int, ...]:
    """The primitive direction of a row whose coefficients have gcd ``g``."""
    return tuple(vec) if g == 1 else tuple([x // g for x in vec])


_INTS: dict[Lin, tuple[tuple[tuple[str, int], ...], int, bool]] = {}
"""Constraints scaled to integer coefficients (:func:`_integral`), memoised."""


def _integral(c: Lin) -> tuple[tuple[tuple[str, int], ...], int, bool]:
    """``c`` times the lcm of its denominators: (integer coefficients, constant, strict)."""
    const = c.const
    den = const.denominator
    for _, a in c.coefs:
        d = a.denominator
        if den % d:
            den = den * d // gcd(den, d)
    got = (tuple([(v, a.numerator * (den // a.denominator)) for v, a in c.coefs]),
           const.numerator * (den // const.denominator), c.strict)
    if len(_INTS) >= 1 << 16:
        _INTS.clear()
    _INTS[c] = got
    return got


def _put(best: dict[tuple[int, ...], _Row], vec: list[int], k: int, strict: bool) -> bool:
    """Add the row ``vec . x + k < 0`` (``<= 0``) to ``best``, keeping the tightest per
    direction; False if it is a constant row that is false."""
    g = 0
    for x in vec:
        if x:
            g = gcd(g, x)
    if g == 0:
        return k < 0 or (k == 0 and not strict)
    h = gcd(g, k)
    if h > 1:  # divide the row by the gcd of all its numbers
        vec = [x // h for x in vec]
        k //= h
        g //= h
    key = tuple(vec) if g == 1 else tuple([x // g for x in vec])
    # Along key the row reads key . x + k / g.
    old = best.get(key)
    if old is not None:
        _, ok, os_, og = old
        # Tighter: the larger k / g (then strict).
        lhs, rhs = k * og, ok * g
        if lhs < rhs or (lhs == rhs and (os_ or not strict)):
            return True
    best[key] = (vec, k, strict, g)
    return True

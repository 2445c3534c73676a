"""Zones as difference-bound matrices: the zone explorer's :class:`ZoneDomain`.

A zone of a discrete state ranges over that state's *live* clocks only (from
the clock-bounds pass, :mod:`checker.semantics.clockbounds`); its extrapolation
uses the state's local LU bounds (Extra+_LU), or the global maximal constants
(Extra_M) when asked.  The DBM operations themselves are the compiled core's
or the Python reference's (:mod:`checker.domains.backend`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from checker.domains import backend, dbm
from checker.limits import LimitHit, zone_over_limit
from checker.model.interface import (
    GE,
    LE,
    LT,
    ClockAtom,
    Edge,
    ModelRuntimeError,
    State,
    Symmetry,
    TimedModel,
)
from checker.semantics.canon import Canonizer
from checker.semantics.clockbounds import Liveness

FRAME_CACHE = 1 << 17
"""Frames kept before the cache is emptied (they are cheap to recompute)."""


def _bits(mask: int) -> tuple[int, ...]:
    out = []
    c = 0
    while mask:
        if mask & 1:
            out.append(c)
        mask >>= 1
        c += 1
    return tuple(out)


class Frame:
    """What the DBM operations need of one discrete state."""

    __slots__ = ("clocks", "deadlines", "lower", "n", "pos", "state", "upper")

    def __init__(self, state: State, clocks: tuple[int, ...], pos: dict[int, int],
                 lower: list[int], upper: list[int], deadlines: Sequence[ClockAtom]) -> None:
        self.state = state
        self.clocks = clocks
        """The live clocks, in order; clock ``clocks[k]`` is index ``k + 1`` of the DBM."""
        self.pos = pos
        """Each live clock's index in the DBM."""
        self.n = len(clocks) + 1
        self.lower = lower
        """L constants by DBM index (index 0, the reference clock, has none)."""
        self.upper = upper
        """U constants by DBM index."""
        self.deadlines = deadlines


class DbmZones:
    """The :class:`checker.semantics.ts.ZoneDomain` of the zone explorer."""

    def __init__(self, model: TimedModel, bounds: Sequence[int], max_memory_mb: int | None,
                 canon: Canonizer | None, live: Liveness, ops: backend.DbmOps,
                 mode: str = "lu") -> None:
        self.model = model
        self.bounds = bounds
        self.max_memory_mb = max_memory_mb
        self.canon = canon
        self.live = live
        self.D = ops
        self.mode = mode
        """``lu`` (local Extra+_LU), ``m`` (global Extra_M) or ``none``."""
        self._frames: dict[State, Frame] = {}
        self._clocksets: dict[int, tuple[tuple[int, ...], dict[int, int]]] = {}
        self._deadlines: dict[State, Sequence[ClockAtom]] = {}

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The model's deadlines in ``s`` (memoised; deadlines are asked for often)."""
        got = self._deadlines.get(s)
        if got is None:
            if len(self._deadlines) > 65536:
                self._deadlines.clear()
            got = self.model.deadlines(s)
            self._deadlines[s] = got
        return got

    def clockset(self, mask: int) -> tuple[tuple[int, ...], dict[int, int]]:
        """The live clocks of a mask, in order, and each one's index in the zone."""
        got = self._clocksets.get(mask)
        if got is None:
            clocks = _bits(mask)
            over = zone_over_limit(len(clocks), self.max_memory_mb)
            if over is not None:
                raise LimitHit(over)
            got = (clocks, {c: k + 1 for k, c in enumerate(clocks)})
            self._clocksets[mask] = got
        return got

    def frame(self, s: State) -> Frame:
        """The live clocks of ``s``, their DBM indices, L and U constants, deadlines
        (memoised)."""
        got = self._frames.get(s)
        if got is None:
            clocks, pos = self.clockset(self.live.mask(s))
            lu = self.live.bounds(s) if self.mode == "lu" else None
            if lu is None:
                lower = [-1] + [self.live.lower[c] for c in clocks]
                upper = [-1] + [self.live.upper[c] for c in clocks]
            else:
                top = self.live.top
                lower = [-1] + [lu.get(c, (top, top))[0] for c in clocks]
                upper = [-1] + [lu.get(c, (top, top))[1] for c in clocks]
            got = Frame(s, clocks, pos, lower, upper, self.deadlines(s))
            if len(self._frames) > FRAME_CACHE:
                self._frames.clear()
            self._frames[s] = got
        return got

    # ---- the zone interface -------------------------------------------------------------
    def zero(self, f: Frame) -> dbm.Dbm:
        """Every live clock at zero."""
        return dbm.zero(f.n)

    def apply(self, z: dbm.Dbm, n: int, pos: dict[int, int], atoms: Sequence[ClockAtom]
              ) -> bool:
        """Intersect ``z`` with clock atoms in place; False if it became empty."""
        D = self.D
        bounds = self.bounds
        for a in atoms:
            i = pos.get(a.clock)
            if i is None:
                raise AssertionError(
                    f"clock {self.model.clock_names[a.clock]} is read but was found dead"
                )
            b = bounds[a.bound]
            op = a.op
            if op == LE:
                ok = D.constrain(z, n, i, 0, dbm.bound(b, False))
            elif op == LT:
                ok = D.constrain(z, n, i, 0, dbm.bound(b, True))
            elif op == GE:
                ok = D.constrain(z, n, 0, i, dbm.bound(-b, False))
            else:
                ok = D.constrain(z, n, 0, i, dbm.bound(-b, True))
            if not ok:
                return False
        return True

    def constrain(self, f: Frame, z: dbm.Dbm, atoms: Sequence[ClockAtom]) -> dbm.Dbm | None:
        """A copy of ``z`` under the atoms, None if empty."""
        g = list(z)
        return g if self.apply(g, f.n, f.pos, atoms) else None

    def reset(self, f: Frame, z: dbm.Dbm, e: Edge, tf: Frame) -> dbm.Dbm:
        """Resets of ``e``, then the target's live clocks (new ones at zero)."""
        tpos = tf.pos
        resets = e.resets
        pos = f.pos
        keep = [c for c in f.clocks if c in tpos and c not in resets]
        zp = self.D.project(z, f.n, [pos[c] for c in keep])
        return self.D.embed(zp, len(keep) + 1, [0] + [tpos[c] for c in keep], tf.n)

    def close(self, f: Frame, z: dbm.Dbm) -> dbm.Dbm | None:
        """Deadlines, time elapse, deadlines again (in place)."""
        inv = f.deadlines
        n = f.n
        if not self.apply(z, n, f.pos, inv):
            return None
        self.D.up(z, n)
        return z if self.apply(z, n, f.pos, inv) else None

    def includes(self, f: Frame, big: dbm.Dbm, small: dbm.Dbm) -> bool:
        """DBM inclusion."""
        return self.D.includes(big, small, len(f.clocks) + 1)

    def extrapolate(self, f: Frame, z: dbm.Dbm) -> dbm.Dbm:
        """Abstract ``z`` by the clocks' constants (in place), keeping it inside the
        deadlines."""
        if self.mode == "none":
            return z
        if self.mode == "m":
            self.D.extrapolate_m(z, f.n, [max(a, b) for a, b in
                                          zip(f.lower, f.upper, strict=True)])
        else:
            self.D.extrapolate_lu(z, f.n, f.lower, f.upper)
        self.apply(z, f.n, f.pos, f.deadlines)
        return z

    def canonical(self, f: Frame, z: dbm.Dbm) -> tuple[State, dbm.Dbm, Symmetry | None]:
        """A canonical image of (s, z) under the symmetries: the least discrete image
        among the candidate permutations, then the least permuted zone."""
        s = f.state
        if self.canon is None:
            return s, z, None
        clocks = f.clocks
        pos = f.pos
        n = f.n

        keys: dict[int, Hashable] = {}

        def clock_key(c: int) -> Hashable:
            """A clock's bounds in the zone, up to a renaming of the other clocks
            (computed when the canonizer asks: it often needs none)."""
            got = keys.get(c)
            if got is None:
                i = pos.get(c)
                if i is None:
                    return None
                row = i * n
                got = (z[row], z[i], tuple(sorted([(z[row + j], z[j * n + i])
                                                   for j in range(1, n) if j != i])))
                keys[c] = got
            return got

        def permuted(sym: Symmetry) -> dbm.Dbm:
            img = sym.clocks
            new_clocks = sorted(img[c] for c in clocks)
            where = {c: i + 1 for i, c in enumerate(new_clocks)}
            return self.D.permute(z, n, [0] + [where[img[c]] for c in clocks])

        def zone_fixed(sym: Symmetry) -> bool:
            img = sym.clocks
            return all(img[c] in pos for c in clocks) and permuted(sym) == z

        best_s, cands = self.canon.candidates(s, clock_key, zone_fixed)
        if cands == [None]:
            return s, z, None
        best_z: dbm.Dbm | None = None
        best_sym: Symmetry | None = None
        for sym in cands:
            tz = z if sym is None else permuted(sym)
            if best_z is None or tz < best_z:
                best_z, best_sym = tz, sym
        assert best_z is not None
        if best_sym is not None and self.live.complete:
            img = best_sym.clocks
            if sorted(img[c] for c in clocks) != list(self.frame(best_s).clocks):
                raise AssertionError("the model's symmetries do not preserve clock liveness")
        return best_s, best_z, best_sym

    # ---- what the explorer checks -------------------------------------------------------
    def meets(self, f: Frame, z: dbm.Dbm, atoms: Sequence[ClockAtom]) -> bool:
        """Whether some valuation of ``z`` satisfies every atom."""
        return self.apply(list(z), f.n, f.pos, atoms)

    def stuck(self, f: Frame, z: dbm.Dbm, edges: Sequence[Edge]) -> bool:
        """Whether some valuation of (s, z) can neither fire an event nor let time pass."""
        if not f.deadlines:
            return False  # time can pass for ever
        n = f.n
        pos = f.pos
        D = self.D
        rest: list[dbm.Dbm] = [z]
        for e in edges:
            enabled = list(z)
            if not self.apply(enabled, n, pos, e.guard):
                continue
            ok = True
            resets = set(e.resets)
            # A violating edge fires (and is reported); it enters no state.
            try:
                target_deadlines = self.deadlines(e.target) if e.failure is None else ()
            except ModelRuntimeError:
                # Entering the target is a model error, reported with the run that
                # enters it: the edge can fire.
                target_deadlines = ()
            for a in target_deadlines:
                if a.clock in resets:
                    b = self.bounds[a.bound]
                    if (a.op == LE and b < 0) or (a.op == LT and b <= 0):
                        ok = False
                        break
                elif a.clock in pos and not self.apply(enabled, n, pos, [a]):
                    ok = False
                    break
                # A target deadline on a clock dead here is reset before it is read.
            if not ok:
                continue
            if enabled == z:
                return False  # this edge can fire from every valuation of the zone
            D.down(enabled, n)
            nxt: list[dbm.Dbm] = []
            for piece in rest:
                nxt.extend(D.subtract(piece, enabled, n))
            rest = nxt
            if not rest:
                return False
        return bool(rest)

    def full_frame(self, s: State) -> Frame:
        """A frame of ``s`` over every clock (for exact replays)."""
        k = len(self.model.clock_names)
        clocks = tuple(range(k))
        return Frame(s, clocks, {c: c + 1 for c in clocks}, [-1] * (k + 1), [-1] * (k + 1),
                     self.model.deadlines(s))

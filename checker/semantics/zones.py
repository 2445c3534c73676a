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
from checker.semantics.clockbounds import Liveness, bits

Entry = tuple[int, int, int]
"""A DBM entry ``(i, j, bound)``: ``x_i - x_j`` within the encoded ``bound``."""

FRAME_CACHE = 1 << 17
"""Frames kept before the cache is emptied (they are cheap to recompute)."""

DEADLINE_CACHE = 1 << 16
"""Discrete states whose deadlines are kept before that memo is emptied."""


def _moved(sym: Symmetry) -> tuple[int, ...]:
    """The clocks ``sym`` moves (memoised on the permutation)."""
    got: tuple[int, ...] | None = sym.__dict__.get("_moved_clocks")
    if got is None:
        got = tuple(c for c, img in enumerate(sym.clocks) if img != c)
        object.__setattr__(sym, "_moved_clocks", got)
    return got


class _ZoneView:
    """What a canonizer asks of one zone (of the live clocks ``pos``): a key per clock
    and whether a permutation maps the zone onto itself."""

    __slots__ = ("D", "keys", "n", "pos", "z")

    def __init__(self, ops: backend.DbmOps, z: dbm.Dbm, n: int, pos: dict[int, int]) -> None:
        self.D = ops
        self.z = z
        self.n = n
        self.pos = pos
        self.keys: dict[int, Hashable] = {}

    def key(self, c: int) -> Hashable:
        """Clock ``c``'s bounds in the zone, up to a renaming of the other clocks: its
        upper and lower bound, then the sorted pairs of its row's and column's entries
        (None for a dead clock; computed when the canonizer asks: it often needs
        none)."""
        got = self.keys.get(c)
        if got is None:
            i = self.pos.get(c)
            if i is None:
                return None
            z, n = self.z, self.n
            row = i * n
            got = (z[row], z[i], tuple(sorted(zip(z[row:row + n], z[i::n], strict=True))))
            self.keys[c] = got
        return got

    def fixed(self, sym: Symmetry) -> bool:
        """Whether ``sym`` maps the live clocks onto live clocks and the zone onto
        itself."""
        z, n, pos = self.z, self.n, self.pos
        img = sym.clocks
        moved = _moved(sym)
        if len(moved) == 2:
            # A transposition of two clocks: only their rows and columns change.
            i, j = pos.get(moved[0]), pos.get(moved[1])
            if i is None or j is None:
                return i is None and j is None
            ri, rj = z[i * n:i * n + n], z[j * n:j * n + n]
            ri[i], ri[j] = ri[j], ri[i]
            if ri != rj:
                return False
            ci, cj = z[i::n], z[j::n]
            ci[i], ci[j] = ci[j], ci[i]
            return ci == cj
        perm = list(range(n))
        for c in moved:
            i = pos.get(c)
            if i is None:
                continue
            j = pos.get(img[c])
            if j is None:
                return False
            perm[i] = j
        return self.D.permute(z, n, perm) == z


class Frame:
    """What the DBM operations need of one discrete state."""

    __slots__ = ("clocks", "deadlines", "entries", "lower", "n", "pos", "state", "upper")

    def __init__(self, state: State, clocks: tuple[int, ...], pos: dict[int, int],
                 lower: Sequence[int], upper: Sequence[int],
                 deadlines: Sequence[ClockAtom]) -> None:
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
        self.entries: Sequence[Entry] | None = None
        """The deadlines as DBM entries (translated when first applied)."""


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
        # Frames of many states hold equal constants and deadline entries: one tuple
        # each, shared (a frame then costs little more than its slots).
        self._vectors: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._entries: dict[tuple[Entry, ...], tuple[Entry, ...]] = {}

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The model's deadlines in ``s`` (memoised; deadlines are asked for often)."""
        got = self._deadlines.get(s)
        if got is None:
            if len(self._deadlines) > DEADLINE_CACHE:
                self._deadlines.clear()
            got = self._deadlines[s] = self.model.deadlines(s)
        return got

    def clockset(self, mask: int) -> tuple[tuple[int, ...], dict[int, int]]:
        """The live clocks of a mask, in order, and each one's index in the zone."""
        got = self._clocksets.get(mask)
        if got is None:
            clocks = tuple(bits(mask))
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
                lower = (-1, *(self.live.lower[c] for c in clocks))
                upper = (-1, *(self.live.upper[c] for c in clocks))
            else:
                top = self.live.top
                lower = (-1, *(lu.get(c, (top, top))[0] for c in clocks))
                upper = (-1, *(lu.get(c, (top, top))[1] for c in clocks))
            vectors = self._vectors
            got = Frame(s, clocks, pos, vectors.setdefault(lower, lower),
                        vectors.setdefault(upper, upper), self.deadlines(s))
            if len(self._frames) > FRAME_CACHE:
                self._frames.clear()
                vectors.clear()
                self._entries.clear()
            self._frames[s] = got
        return got

    # ---- the zone interface -------------------------------------------------------------
    def zero(self, f: Frame) -> dbm.Dbm:
        """Every live clock at zero."""
        return dbm.zero(f.n)

    def entries(self, pos: dict[int, int], atoms: Sequence[ClockAtom]) -> list[Entry]:
        """Clock atoms as DBM entries ``(i, j, bound)`` over the clocks ``pos``."""
        bounds = self.bounds
        out: list[Entry] = []
        for a in atoms:
            i = pos.get(a.clock)
            if i is None:
                raise AssertionError(
                    f"clock {self.model.clock_names[a.clock]} is read but was found dead"
                )
            b = bounds[a.bound]
            op = a.op
            if op == LE:
                out.append((i, 0, dbm.bound(b, False)))
            elif op == LT:
                out.append((i, 0, dbm.bound(b, True)))
            elif op == GE:
                out.append((0, i, dbm.bound(-b, False)))
            else:
                out.append((0, i, dbm.bound(-b, True)))
        return out

    def tighten(self, z: dbm.Dbm, n: int, entries: Sequence[Entry]) -> bool:
        """Intersect ``z`` with DBM entries in place; False if it became empty."""
        constrain = self.D.constrain
        for i, j, b in entries:
            if not constrain(z, n, i, j, b):
                break
        else:
            return True
        return False

    def apply(self, z: dbm.Dbm, n: int, pos: dict[int, int], atoms: Sequence[ClockAtom]
              ) -> bool:
        """Intersect ``z`` with clock atoms in place; False if it became empty."""
        return self.tighten(z, n, self.entries(pos, atoms))

    def within_deadlines(self, f: Frame, z: dbm.Dbm) -> bool:
        """Intersect ``z`` with the deadlines of ``f`` in place; False if it became
        empty."""
        got = f.entries
        if got is None:
            entries = tuple(self.entries(f.pos, f.deadlines))
            got = f.entries = self._entries.setdefault(entries, entries)
        return self.tighten(z, f.n, got)

    def constrain(self, f: Frame, z: dbm.Dbm, atoms: Sequence[ClockAtom]) -> dbm.Dbm | None:
        """A copy of ``z`` under the atoms, None if empty."""
        g = list(z)
        return g if not atoms or self.apply(g, f.n, f.pos, atoms) else None

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
        if not self.within_deadlines(f, z):
            return None
        self.D.up(z, f.n)
        return z if self.within_deadlines(f, z) else None

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
        self.within_deadlines(f, z)
        return z

    def canonical(self, f: Frame, z: dbm.Dbm) -> tuple[State, dbm.Dbm, Symmetry | None]:
        """A canonical image of (s, z) under the symmetries: the least discrete image
        among the candidate permutations, then the least permuted zone."""
        s = f.state
        if self.canon is None:
            return s, z, None
        view = _ZoneView(self.D, z, f.n, f.pos)
        best_s, cands = self.canon.candidates(s, view.key, view.fixed)
        if cands == [None]:
            return s, z, None
        # Liveness is symmetric: every candidate maps the live clocks of s onto those
        # of best_s, whose DBM indices place the permuted zone.
        tpos = self.clockset(self.live.mask(best_s))[1]
        best_z: dbm.Dbm | None = None
        best_sym: Symmetry | None = None
        for sym in cands:
            tz = z if sym is None else self.image(f, z, sym, tpos)
            if tz is None:
                raise AssertionError("the model's symmetries do not preserve clock liveness")
            if best_z is None or tz < best_z:
                best_z, best_sym = tz, sym
        assert best_z is not None
        return best_s, best_z, best_sym

    def image(self, f: Frame, z: dbm.Dbm, sym: Symmetry, tpos: dict[int, int]
              ) -> dbm.Dbm | None:
        """Zone ``z`` (over the live clocks of ``f``) under ``sym``, over the clocks
        ``tpos`` places (None when ``sym`` does not map the one set onto the other)."""
        clocks = f.clocks
        if len(tpos) != len(clocks):
            return None
        img = sym.clocks
        try:
            perm = [0] + [tpos[img[c]] for c in clocks]
        except KeyError:
            return None
        return self.D.permute(z, f.n, perm)

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
        return Frame(s, clocks, {c: c + 1 for c in clocks}, (-1,) * (k + 1), (-1,) * (k + 1),
                     self.model.deadlines(s))

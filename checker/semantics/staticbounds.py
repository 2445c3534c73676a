"""Clock bounds per discrete state from static bounds per process location, on the fly.

A network of processes offers, through :func:`~checker.model.interface.static_clocks_of`,
each process instance's live clocks and their constants per location
(:mod:`checker.model.staticbounds`).  :class:`StaticLiveness` answers the zone domain's
questions (:class:`~checker.semantics.clockbounds.Liveness`: the live clocks of a
discrete state and their local LU bounds) from the owners' current locations, as
TChecker's local LU bounds do: no pass over the discrete states before the first zone,
and memory for one small table per process instance (plus a bounded memo of the bounds
of location vectors met recently).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

from checker.model.interface import LinExpr, LocalClock, State, StaticClocks
from checker.semantics.canon import Canonizer
from checker.semantics.clockbounds import Bounds, Liveness

BOUNDS_CACHE = 1 << 14
"""How many location vectors' merged bounds are memoised."""


class StaticLiveness(Liveness):
    """:class:`Liveness` answered per state from per-location tables (always complete)."""

    def __init__(self, info: StaticClocks, model_bounds: Sequence[LinExpr],
                 scaled: Sequence[int], values: Mapping[str, Fraction], scale: int,
                 n_clocks: int, canon: Canonizer | None = None) -> None:
        top = max(scaled, default=0)
        super().__init__(n_clocks, canon, top)
        known = dict(zip(model_bounds, scaled, strict=True))

        def value(bs: tuple[LinExpr, ...]) -> int:
            # A bound the model never compares a clock with is not among its bounds:
            # rounded up, it can only make the abstraction finer.
            return max((known[b] if b in known else math.ceil(b.evaluate(values) * scale)
                        for b in bs), default=-1)

        def lu(c: LocalClock) -> tuple[int, int]:
            return value(c.lower), value(c.upper)

        lower, upper = [-1] * n_clocks, [-1] * n_clocks

        def widen(c: int, pair: tuple[int, int]) -> None:
            lower[c] = max(lower[c], pair[0])
            upper[c] = max(upper[c], pair[1])

        self.shared_mask = 0
        self.shared: Bounds = {}
        for sc in info.shared:
            self.shared_mask |= 1 << sc.clock
            self.shared[sc.clock] = lu(sc)
            widen(sc.clock, self.shared[sc.clock])
        self.cells: tuple[int, ...] = tuple(p.cell for p in info.processes)
        self.tables: list[dict[int, tuple[int, Bounds]]] = []
        """Per process instance, per location value: its live clocks and their bounds."""
        self.anywhere: list[tuple[int, Bounds]] = []
        """Per process instance, every clock of it with its largest constants (for a
        location value the analysis did not list)."""
        for p in info.processes:
            table: dict[int, tuple[int, Bounds]] = {}
            for v, clocks in p.locations:
                got = {lc.clock: lu(lc) for lc in clocks}
                table[v] = (sum(1 << c for c in got), got)
                for c, pair in got.items():
                    widen(c, pair)
            self.tables.append(table)
        for table in self.tables:
            every: Bounds = {}
            for _, got in table.values():
                for c in got:
                    every[c] = (lower[c], upper[c])
            self.anywhere.append((sum(1 << c for c in every), every))
        self.lower, self.upper = lower, upper
        self.complete = True
        self._memo: dict[tuple[int, ...], Bounds] = {}

    def _entry(self, k: int, s: State) -> tuple[int, Bounds]:
        got = self.tables[k].get(s[self.cells[k]])
        return self.anywhere[k] if got is None else got

    def mask(self, s: State) -> int:
        """The clocks live at the owners' locations in ``s``, and the shared ones."""
        m = self.shared_mask
        for k in range(len(self.cells)):
            m |= self._entry(k, s)[0]
        return m

    def bounds(self, s: State) -> Bounds:
        """The (L, U) constants of the live clocks of ``s`` (memoised per location
        vector)."""
        key = tuple(s[c] for c in self.cells)
        got = self._memo.get(key)
        if got is None:
            got = dict(self.shared)
            for k in range(len(self.cells)):
                got.update(self._entry(k, s)[1])
            if len(self._memo) >= BOUNDS_CACHE:
                self._memo.clear()
            self._memo[key] = got
        return got

"""Symmetry reduction as the engines see it: candidate permutations of a state.

A model may offer a ``canonizer`` (as :class:`checker.model.compiled.SpecModel`
does: sorting values by signature, see :mod:`checker.model.symmetry`); a model
that only lists its permutations (:meth:`TimedModel.symmetries`) gets the
enumerating one here, which tries them all.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

from checker.model.interface import State, Symmetry, TimedModel

ClockKey = Callable[[int], Hashable]


class Canonizer(Protocol):
    """Gives the least image of a state under its candidate permutations."""

    def candidates(self, s: State, clock_key: ClockKey | None = None,
                   zone_fixed: Callable[[Symmetry], bool] | None = None,
                   memo: bool = True) -> tuple[State, list[Symmetry | None]]:
        """The least image of ``s`` and every candidate permutation reaching it
        (None: the identity).  ``clock_key`` describes clocks in the caller's
        current zone (None: not in it) and ``zone_fixed`` says whether a permutation
        maps that zone onto itself; both refine the candidates and may be ignored.
        ``memo`` False: the caller keeps the answer, a canonizer need not."""
        ...

    def generators(self) -> list[Symmetry]:
        """Permutations that generate the whole group."""
        ...


class EnumeratingCanonizer:
    """Tries every permutation the model lists (for models without a canonizer)."""

    def __init__(self, syms: Sequence[Symmetry]) -> None:
        self.syms = list(syms)

    def candidates(self, s: State, clock_key: ClockKey | None = None,
                   zone_fixed: Callable[[Symmetry], bool] | None = None,
                   memo: bool = True) -> tuple[State, list[Symmetry | None]]:
        """See :class:`Canonizer`."""
        best: State = s
        out: list[Symmetry | None] = [None]
        for sym in self.syms:
            t = sym.state(s)
            if t < best:
                best, out = t, [sym]
            elif t == best:
                out.append(sym)
        return best, out

    def generators(self) -> list[Symmetry]:
        """See :class:`Canonizer`."""
        return list(self.syms)


def canonizer(model: TimedModel, enabled: bool = True) -> Canonizer | None:
    """The model's canonizer, None when symmetry reduction is off or there is none."""
    if not enabled:
        return None
    own = getattr(model, "canonizer", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    syms = list(model.symmetries())
    return EnumeratingCanonizer(syms) if syms else None

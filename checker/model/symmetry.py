"""Canonical forms under the symmetric types without enumerating every permutation.

A model with symmetric types ``T1 .. Tk`` is invariant under every permutation
of each type's values.  Symmetry reduction stores one state per orbit; any
element of the orbit is *sound* to store, and storing the same one for every
element of the orbit (a canonical form) is what makes the reduction pay.

Enumerating the ``n!`` permutations of a type per state is hopeless beyond
``n = 7``.  Instead each value gets a *signature*: what the state says about
that value (the cells it indexes, the cells that hold it, the clocks it owns
as the caller describes them), with every other symmetric value abstracted to
"another value".  Signatures are invariant: value ``v`` in ``s`` has the same
signature as ``pi(v)`` in ``pi(s)``.  Sorting the values by signature gives
the candidate permutations: those that put the values in signature order, one
per ordering of each group of equal signatures.  The set of images of ``s``
under its candidates is the same for every element of ``s``'s orbit, so the
least image (and, for the caller, the least zone among the permutations
reaching it) is canonical.

A group whose orderings all give the same image needs one ordering only.  The
values of a group owning no live clock are interchangeable when swapping two of
them leaves the state as it is; for most types (:func:`_swap_safe`: no variable
relates two symmetric values) equal signatures already say so, and nothing is
tried.  The clocks are asked for only for values that share their discrete
signature, and a swap of two clocks is checked on their rows and columns of
the zone.  On Fischer's protocol a canonical form then costs time linear in the
number of processes (the signatures, a sort, the zone's rows of tied values).

When the groups of equal signatures would need more than
:data:`MAX_CANDIDATES` orderings, only the first ones (in a fixed order) are
tried: the result is still in the orbit (sound), only not always canonical
(the search may store a few equivalent states twice).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checker.model import ir
from checker.model.interface import State, Symmetry

MAX_CANDIDATES = 720
"""At most this many candidate permutations are tried per state."""

SYMMETRY_CACHE = 1 << 14
"""How many permutations' :class:`Symmetry` maps are kept."""

_NONE, _SELF, _OTHER = ir.NONE, -2, -3

ClockKey = Callable[[int], Hashable]


def _key(clock_key: ClockKey, c: int) -> tuple[object, ...]:
    got = clock_key(c)
    return () if got is None else (got,)
"""What the caller knows of a clock in the current state (e.g. its bounds in a zone);
must be invariant: the key of clock ``c`` in ``(s, Z)`` equals that of ``pi(c)`` in
``(pi(s), pi(Z))``."""


@dataclass
class _Owned:
    """What one value of a symmetric type indexes, in an order shared by every value
    of the type (by template: variable and index pattern, symmetric indices
    abstracted), so that signatures compare position by position."""

    plain: tuple[int, ...] = ()
    """Cells with a template of their own whose values are not symmetric."""
    symval: tuple[tuple[int, int], ...] = ()
    """(cell, symmetric type index) of cells with symmetric values."""
    multi: tuple[tuple[tuple[int, int], ...], ...] = ()
    """Groups of cells sharing a template (compared as sorted tuples)."""
    clocks: tuple[int, ...] = ()
    """Clocks with a template of their own."""
    clock_multi: tuple[tuple[int, ...], ...] = ()
    """Groups of clocks sharing a template."""


def _split(items: list[tuple[str, int, int]]) -> tuple[list[tuple[int, int]],
                                                        list[list[tuple[int, int]]]]:
    """Items (template, where, kind) sorted by template: the singletons and the groups."""
    items.sort()
    single: list[tuple[int, int]] = []
    multi: list[list[tuple[int, int]]] = []
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and items[j][0] == items[i][0]:
            j += 1
        if j - i == 1:
            single.append((items[i][1], items[i][2]))
        else:
            multi.append([(w, k) for _, w, k in items[i:j]])
        i = j
    return single, multi


def _swap_safe(t: ir.FiniteType, types: Sequence[ir.FiniteType],
               cells: Sequence[tuple[int, tuple[ir.FiniteType, ...], ir.FiniteType | None,
                                     object]]) -> bool:
    """Whether equal discrete signatures of two values ``v``, ``w`` of ``t`` imply that
    swapping them leaves the state unchanged.

    They do when every variable that mentions ``t`` mentions it once and no other
    symmetric type: a cell indexed by ``v`` has its own template (its other indices
    are concrete), so equal signatures give equal values; a cell holding a value of
    ``t`` has its own template too, and only ``v`` could list it, so it holds neither
    ``v`` nor ``w``.  A variable relating two symmetric values (``next: T -> T``, a
    map over two symmetric types) can have equal signatures for values a swap does
    tell apart."""
    for _, domain, vbase, _ in cells:
        own = sum(ft == t for ft in domain) + (vbase == t)
        if not own:
            continue
        other = sum(ft != t and ft.symmetric and ft.size > 1 for ft in domain) + (
            vbase is not None and vbase != t and vbase in types)
        if own > 1 or other:
            return False
    return True


def _image(order: Iterable[int], size: int) -> tuple[int, ...]:
    """The permutation putting the values in ``order``: ``img[v]`` is ``v``'s
    position."""
    img = [0] * size
    for pos, v in enumerate(order):
        img[v] = pos
    return tuple(img)


def _runs(order: list[int], keys: Sequence[object] | Mapping[int, object]) -> list[list[int]]:
    """``order`` cut into runs of values with equal ``keys[v]``."""
    groups: list[list[int]] = [[order[0]]]
    prev = keys[order[0]]
    for v in order[1:]:
        key = keys[v]
        if key == prev:
            groups[-1].append(v)
        else:
            groups.append([v])
            prev = key
    return groups


class SortCanonizer:
    """Candidate permutations by sorted value signatures (see the module docstring)."""

    def __init__(self, sym_types: Sequence[ir.FiniteType],
                 cells: Sequence[tuple[int, tuple[ir.FiniteType, ...], ir.FiniteType | None,
                                       object]],
                 clocks: Sequence[tuple[int, tuple[ir.FiniteType, ...], object]],
                 build: Callable[[tuple[tuple[int, ...], ...]], Symmetry]) -> None:
        """``cells``: per variable (and observer), its first cell, domain, the symmetric
        base type of its values (or None) and a name; ``clocks``: per clock family,
        its first clock, domain and name; ``build`` makes the :class:`Symmetry` of a
        permutation (per type, in the order of ``sym_types``, the image of each value)."""
        self.types = list(sym_types)
        self._build = build
        self._cache: dict[tuple[tuple[int, ...], ...], Symmetry | None] = {}
        tindex = {t: k for k, t in enumerate(self.types)}
        cell_items: list[list[list[tuple[str, int, int]]]] = [
            [[] for _ in t.values()] for t in self.types]
        clock_items: list[list[list[tuple[str, int, int]]]] = [
            [[] for _ in t.values()] for t in self.types]
        held_templates: list[dict[str, int]] = [{} for _ in self.types]
        # holders[k]: (cell, template id per owner value) of cells with values of type k.
        self.holders: list[list[tuple[int, tuple[int, ...]]]] = [[] for _ in self.types]

        def pattern(name: object, domain: tuple[ir.FiniteType, ...], idx: tuple[int, ...],
                    t: ir.FiniteType, v: int) -> str:
            out: list[object] = [name]
            for ft, x in zip(domain, idx, strict=True):
                if ft.symmetric and ft.size > 1:
                    out.append("s" if ft == t and x == v else "o")
                else:
                    out.append(x)
            return repr(tuple(out))

        for first, domain, vbase, name in cells:
            kind = tindex.get(vbase, -1) if vbase is not None else -1
            for idx in ir.domain_points(domain):
                cell = first + ir.cell_index(domain, idx)
                for k, t in enumerate(self.types):
                    for v in sorted({x for ft, x in zip(domain, idx, strict=True) if ft == t}):
                        cell_items[k][v].append((pattern(name, domain, idx, t, v), cell, kind))
                if kind >= 0:
                    t = self.types[kind]
                    ids = held_templates[kind]
                    self.holders[kind].append((cell, tuple(
                        ids.setdefault(pattern(name, domain, idx, t, v), len(ids))
                        for v in t.values())))
        for first, domain, name in clocks:
            for idx in ir.domain_points(domain):
                clock = first + ir.cell_index(domain, idx)
                for k, t in enumerate(self.types):
                    for v in sorted({x for ft, x in zip(domain, idx, strict=True) if ft == t}):
                        clock_items[k][v].append((pattern(name, domain, idx, t, v), clock, -1))
        self.owned: list[list[_Owned]] = []
        for k, t in enumerate(self.types):
            row: list[_Owned] = []
            for v in t.values():
                single, multi = _split(cell_items[k][v])
                csingle, cmulti = _split(clock_items[k][v])
                row.append(_Owned(
                    plain=tuple(c for c, kind in single if kind < 0),
                    symval=tuple((c, kind) for c, kind in single if kind >= 0),
                    multi=tuple(tuple(g) for g in multi),
                    clocks=tuple(c for c, _ in csingle),
                    clock_multi=tuple(tuple(c for c, _ in g) for g in cmulti)))
            self.owned.append(row)
        self.owned_clocks = [[(*o.clocks, *(c for g in o.clock_multi for c in g)) for o in row]
                             for row in self.owned]
        """Per type and value, every clock the value indexes."""
        self.has_clocks = [any(clocks for clocks in row) for row in self.owned_clocks]
        self.single_clock = [tuple(o.clocks[0] for o in row)
                             if all(len(o.clocks) == 1 and not o.clock_multi for o in row)
                             else None for row in self.owned]
        """Per type, when each value owns exactly one clock (by template), that clock."""
        self.swap_safe = [_swap_safe(t, self.types, cells) for t in self.types]
        """Per type: whether two of its values with the same discrete signature can
        always be swapped without changing the state (see :func:`_swap_safe`)."""
        self._swaps: dict[tuple[int, int, int], Symmetry | None] = {}
        self._sigfns: list[Callable[[State], list[tuple[object, ...]]] | None] = [
            None] * len(self.types)
        self._plain: dict[State, tuple[State, list[Symmetry | None]]] = {}
        """Results for states whose own signatures order every value (no zone needed)."""

    # ------------------------------------------------------------------ signatures
    def _compile_signatures(self, k: int) -> Callable[[State], list[tuple[object, ...]]]:
        """A function giving the discrete signature of every value of type ``k``.

        Generated once per type (a tuple expression per value) because it runs for
        every state the engines meet."""
        n = self.types[k].size

        def val(c: int, kind: int, v: int) -> str:
            if kind < 0:
                return f"s[{c}]"
            if kind == k:
                return (f"({_SELF} if s[{c}] == {v} else"
                        f" (s[{c}] if s[{c}] == {_NONE} else {_OTHER}))")
            return f"(s[{c}] if s[{c}] == {_NONE} else {_OTHER})"

        lines = ["def f(s):"]
        consts: dict[str, object] = {}
        if self.holders[k]:
            lines.append(f"    h = [[] for _ in range({n})]")
            for j, (cell, templates) in enumerate(self.holders[k]):
                consts[f"T{j}"] = templates
                lines.append(f"    x = s[{cell}]")
                lines.append(f"    if x != {_NONE}: h[x].append(T{j}[x])")
        items = []
        for v in range(n):
            o = self.owned[k][v]
            plain = "".join(f"s[{c}], " for c in o.plain)
            symval = "".join(val(c, kind, v) + ", " for c, kind in o.symval)
            multi = "".join("tuple(sorted((" + "".join(val(c, kind, v) + ", " for c, kind in g)
                            + "))), " for g in o.multi)
            held = f"tuple(sorted(h[{v}]))" if self.holders[k] else "()"
            items.append(f"(({plain}), ({symval}), ({multi}), {held})")
        lines.append("    return [" + ", ".join(items) + "]")
        ns: dict[str, object] = dict(consts)
        exec(compile("\n".join(lines), "<kvrace:symmetry>", "exec"), ns)
        fn: Callable[[State], list[tuple[object, ...]]] = ns["f"]  # type: ignore[assignment]
        return fn

    def _clock_signature(self, k: int, v: int, clock_key: ClockKey) -> tuple[object, ...]:
        o = self.owned[k][v]
        return (tuple(_key(clock_key, c) for c in o.clocks),
                tuple(tuple(sorted(_key(clock_key, c) for c in g)) for g in o.clock_multi))

    def _order(self, k: int, s: State) -> tuple[list[int], list[Any], bool]:
        """The values of type ``k`` in discrete signature order, their signatures, and
        whether two of them share one."""
        fn = self._sigfns[k]
        if fn is None:
            fn = self._sigfns[k] = self._compile_signatures(k)
        sigs: list[Any] = fn(s)
        # Descending: the values furthest from their initial state come first, so that
        # representatives (and synthesis, which names properties on them) read A first.
        # (A reversed sort keeps equal signatures in increasing order of value.)
        order = sorted(range(len(sigs)), key=sigs.__getitem__, reverse=True)
        ranked = [sigs[v] for v in order]
        return order, sigs, any(map(operator.eq, ranked, ranked[1:]))

    def _groups(self, k: int, order: list[int], sigs: list[Any],
                clock_key: ClockKey | None) -> list[tuple[list[int], bool]]:
        """The values of type ``k`` in signature order, in groups of equal signatures,
        each with whether its values own a clock live in the caller's zone: the
        discrete signature first, then (with ``clock_key``) what the zone says of the
        clocks the value owns.

        Only the values that share their discrete signature need their clocks looked
        at: sorting by (discrete, clock) signature is sorting each group of equal
        discrete signatures by clock signature.  Values with equal clock signatures
        own live clocks alike."""
        groups = _runs(order, sigs)
        if clock_key is None or not self.has_clocks[k]:
            return [(g, False) for g in groups]
        single = self.single_clock[k]
        out: list[tuple[list[int], bool]] = []
        for g in groups:
            if len(g) == 1:
                out.append((g, False))  # alone: never reordered, its clocks never asked
                continue
            csigs: dict[int, tuple[object, ...]]
            if single is None:
                csigs = {v: self._clock_signature(k, v, clock_key) for v in g}
            else:
                # One clock per value: its key alone orders the values as the
                # clock signature ``((key,), ())`` (dead: ``((), ())``) would.
                csigs = {v: () if (key := clock_key(single[v])) is None else (key,)
                         for v in g}
            owned = self.owned_clocks[k]
            for run in _runs(sorted(g, key=csigs.__getitem__, reverse=True), csigs):
                live = any(clock_key(c) is not None for c in owned[run[0]])
                out.append((run, live))
        return out

    # ------------------------------------------------------------------ candidates
    def symmetry(self, images: tuple[tuple[int, ...], ...]) -> Symmetry | None:
        """The :class:`Symmetry` mapping each type's value ``v`` to ``images[k][v]``
        (None for the identity)."""
        if images in self._cache:
            return self._cache[images]
        got = None if all(img == tuple(range(len(img))) for img in images) else \
            self._build(images)
        if len(self._cache) >= SYMMETRY_CACHE:
            self._cache.clear()
        self._cache[images] = got
        return got

    def _swap(self, k: int, a: int, b: int) -> Symmetry | None:
        """The transposition of values ``a`` and ``b`` of type ``k``."""
        key = (k, a, b)
        if key in self._swaps:
            return self._swaps[key]
        images = []
        for kk, t in enumerate(self.types):
            img = list(range(t.size))
            if kk == k:
                img[a], img[b] = b, a
            images.append(tuple(img))
        got = self._swaps[key] = self.symmetry(tuple(images))
        return got

    def generators(self) -> list[Symmetry]:
        """Transpositions of adjacent values, per type: they generate every permutation."""
        out: list[Symmetry] = []
        for k, t in enumerate(self.types):
            for v in range(t.size - 1):
                sym = self._swap(k, v, v + 1)
                if sym is not None:
                    out.append(sym)
        return out

    def _interchangeable(self, k: int, group: list[int], s: State, live: bool,
                         zone_fixed: Callable[[Symmetry], bool] | None) -> bool:
        """Whether every ordering of ``group`` gives the same image of ``s`` and of the
        caller's zone: swapping the first member with each other one leaves ``s``
        unchanged, and either they own no clock live in the caller's zone or
        ``zone_fixed`` says the swap maps the zone onto itself.  Those swaps generate
        every permutation of the group.

        For a type whose values' signatures say everything the state says of them
        (:attr:`swap_safe`), the swaps leave ``s`` unchanged without being tried."""
        if live and zone_fixed is None:
            return False
        safe = self.swap_safe[k]
        if safe and not live:
            return True
        first = group[0]
        for v in group[1:]:
            sym = self._swap(k, first, v)
            if sym is None:
                continue
            if not safe and sym.state(s) != s:
                return False
            if live and zone_fixed is not None and not zone_fixed(sym):
                return False
        return True

    def _type_images(self, k: int, groups: list[tuple[list[int], bool]], s: State,
                     zone_fixed: Callable[[Symmetry], bool] | None) -> list[tuple[int, ...]]:
        """The candidate permutations of type ``k``'s values in ``s``, given their
        signature ``groups``: values in group order, every order within a group whose
        values are not interchangeable (at most ``MAX_CANDIDATES``)."""
        orders: list[list[tuple[int, ...]]] = []
        several = False
        for g, live in groups:
            if len(g) == 1 or self._interchangeable(k, g, s, live, zone_fixed):
                orders.append([tuple(g)])
            else:
                orders.append(list(itertools.islice(itertools.permutations(g), MAX_CANDIDATES)))
                several = True
        size = len(self.owned[k])
        if not several:
            return [_image(itertools.chain.from_iterable(g for g, _ in groups), size)]
        return [_image(itertools.chain.from_iterable(combo), size)
                for combo in itertools.islice(itertools.product(*orders), MAX_CANDIDATES)]

    def candidates(self, s: State, clock_key: ClockKey | None = None,
                   zone_fixed: Callable[[Symmetry], bool] | None = None,
                   memo: bool = True) -> tuple[State, list[Symmetry | None]]:
        """The least image of ``s`` under its candidate permutations, and every
        candidate reaching it (None stands for the identity).

        ``clock_key`` returns None for a clock absent from the caller's zone;
        ``zone_fixed`` says whether a permutation maps the caller's zone onto itself;
        ``memo``: whether an answer the state alone decides is remembered (a caller
        that keeps what it needs of the answer itself passes False)."""
        got = self._plain.get(s)
        if got is not None:
            return got
        ranked = [self._order(k, s) for k in range(len(self.types))]
        if not any(tied for _, _, tied in ranked):
            # The state alone orders the values: the zone cannot change the order.
            sym = self.symmetry(tuple(_image(order, len(order)) for order, _, _ in ranked))
            got = (s if sym is None else sym.state(s)), [sym]
            if memo:
                if len(self._plain) >= SYMMETRY_CACHE * 8:
                    self._plain.clear()
                self._plain[s] = got
            return got
        per_type: list[list[tuple[int, ...]]] = []
        for k, (order, sigs, tied) in enumerate(ranked):
            if not tied or (self.swap_safe[k] and (clock_key is None or not self.has_clocks[k])):
                # Equal signatures, nothing else to tell them apart: any order will do.
                per_type.append([_image(order, len(order))])
            else:
                per_type.append(self._type_images(
                    k, self._groups(k, order, sigs, clock_key), s, zone_fixed))
        single = all(len(images) == 1 for images in per_type)
        if single:
            sym = self.symmetry(tuple(images[0] for images in per_type))
            return (s if sym is None else sym.state(s)), [sym]
        best: State | None = None
        out: list[Symmetry | None] = []
        for combo in itertools.islice(itertools.product(*per_type), MAX_CANDIDATES):
            sym = self.symmetry(tuple(combo))
            img = s if sym is None else sym.state(s)
            if best is None or img < best:
                best, out = img, [sym]
            elif img == best:
                out.append(sym)
        assert best is not None
        return best, out

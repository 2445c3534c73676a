"""The clock-bounds pass: live clocks and local LU bounds per discrete state.

A first pass explores the discrete states, one representative per symmetry
orbit, and solves backwards to a fixpoint, per state ``s``:

* ``live(s)``: the clocks ``s`` may still read before resetting them,
  ``reads(s) | OR over edges s -> t of (live(t) - resets)``.  Every other clock
  is dropped from ``s``'s zone, which keeps models with many indexed clocks
  small and is exact for every property kvrace checks.
* ``L(s, x)`` and ``U(s, x)``: the largest constant ``x`` is compared with from
  below (``x > c``, ``x >= c``) and from above (``x < c``, ``x <= c``, deadlines)
  by a guard, deadline or hazard of ``s`` or of a state reachable from ``s``
  before ``x`` is reset (the local clock bounds of Behrmann et al., "Static
  guard analysis in timed automata verification", TACAS 2003; TChecker's
  clock-bounds analysis).  Zones of ``s`` are extrapolated by ``s``'s own bounds.

The pass over-approximates the reachable graph, in one of two ways:

* **timed** (models with few clocks): each discrete state keeps one zone over
  every clock, the convex hull of the zones that reach it, extrapolated by the
  model's largest constant; an edge counts when its guard meets the hull and
  its target's deadlines leave something.  Every reachable valuation lies in
  its state's hull, so no reachable edge is missed, and the graph is usually
  close to the timed one.  An edge the hull rules out may still look possible
  to the search, which sees fewer clocks; so that the search rules it out too,
  the clocks its guard and its target's deadlines read (those it does not
  reset) count as read by the source.
* **untimed**: clock constraints are ignored (every data-enabled edge counts),
  which can be many times larger when timing orders the events.

The pass runs under the same limits as the search (a
:class:`~checker.explorer.limits.Budget`, with a states limit of its own); when it stops early every
clock counts as live with the model's largest constant, which is still exact.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from checker.explorer.backend import DbmOps
from checker.explorer.canon import Canonizer
from checker.explorer.dbm import LE_ZERO, Dbm, bound
from checker.explorer.limits import Budget, LimitHit, Limits, MemoryLimitHit
from checker.model.interface import (
    LE,
    LT,
    ClockAtom,
    Edge,
    ModelRuntimeError,
    State,
    Symmetry,
    TimedModel,
)

EDGE_CACHE = 1 << 16
"""How many discrete states' edges are memoised (the search expands a state once per zone)."""

Bounds = dict[int, tuple[int, int]]
"""Per live clock, its (L, U) constants; -1 when the clock is never compared that way."""


class Liveness:
    """Per discrete state: the bitmask of live clocks and their local LU bounds.

    Both are stored for the representative of each orbit and mapped back to
    other members on demand.
    """

    def __init__(self, n_clocks: int, canon: Canonizer | None = None, top: int = 0) -> None:
        self.live: dict[State, int] = {}
        self.local: dict[State, Bounds] = {}
        self.all_mask = (1 << n_clocks) - 1
        self.n_clocks = n_clocks
        self.top = top
        """The model's largest constant: the bound of every clock when nothing is known."""
        self.lower = [top] * n_clocks
        self.upper = [top] * n_clocks
        self.complete = False
        self.canon_ = canon
        self._rep: dict[State, tuple[State, Symmetry | None]] = {}
        self._mask_cache: dict[State, int] = {}
        self._lu_cache: dict[State, Bounds | None] = {}

    def canon(self, s: State) -> tuple[State, Symmetry | None]:
        """The representative of ``s`` and the permutation giving it (None: ``s``)."""
        if self.canon_ is None:
            return s, None
        got = self._rep.get(s)
        if got is None:
            best, syms = self.canon_.candidates(s)
            got = (best, syms[0])
            if len(self._rep) > 1 << 18:
                self._rep.clear()
            self._rep[s] = got
        return got

    @staticmethod
    def unmap(mask: int, sym: Symmetry | None) -> int:
        """The mask of ``s`` from the mask of its representative ``sym(s)``."""
        if sym is None:
            return mask
        inv = sym.clock_inverse()
        out = 0
        c = 0
        while mask:
            if mask & 1:
                out |= 1 << inv[c]
            mask >>= 1
            c += 1
        return out

    def mask(self, s: State) -> int:
        """The clocks ``s`` may still read before resetting them (all, if unknown)."""
        got = self.live.get(s)
        if got is not None:
            return got
        if not self.complete or self.canon_ is None:
            return self.all_mask
        got = self._mask_cache.get(s)
        if got is None:
            rep, sym = self.canon(s)
            base = self.live.get(rep)
            got = self.all_mask if base is None else self.unmap(base, sym)
            if len(self._mask_cache) > 1 << 18:
                self._mask_cache.clear()
            self._mask_cache[s] = got
        return got

    def bounds(self, s: State) -> Bounds | None:
        """The local (L, U) constants of ``s``'s live clocks; None if unknown (then
        the global :attr:`lower` and :attr:`upper` apply)."""
        got = self.local.get(s)
        if got is not None or not self.complete or self.canon_ is None:
            return got
        if s in self._lu_cache:
            return self._lu_cache[s]
        rep, sym = self.canon(s)
        base = self.local.get(rep)
        if base is None or sym is None:
            out = base
        else:
            inv = sym.clock_inverse()
            out = {inv[c]: lu for c, lu in base.items()}
        if len(self._lu_cache) > 1 << 18:
            self._lu_cache.clear()
        self._lu_cache[s] = out
        return out


def _atoms_mask(atoms: Sequence[ClockAtom]) -> int:
    m = 0
    for a in atoms:
        m |= 1 << a.clock
    return m


def _note(atoms: Sequence[ClockAtom], bounds: Sequence[int], lu: Bounds) -> None:
    for a in atoms:
        b = bounds[a.bound]
        lo, up = lu.get(a.clock, (-1, -1))
        if a.op in (LT, LE):
            if b > up:
                lu[a.clock] = (lo, b)
        elif b > lo:
            lu[a.clock] = (b, up)
        elif a.clock not in lu:
            lu[a.clock] = (lo, up)


class _TooWide(Exception):
    """The timed pass's hulls would take more than :data:`HULL_BUDGET_MB`."""


HULL_BUDGET_MB = 256
"""The memory the timed pass's hull zones may take (each about (clocks + 1)^2 ints);
past it the pass starts again untimed."""


def clock_bounds(
    model: TimedModel,
    bounds: Sequence[int],
    budget: Budget | None = None,
    canon: Canonizer | None = None,
    edge_cache: dict[State, Sequence[Edge]] | None = None,
    local: bool = True,
    timed: DbmOps | None = None,
) -> Liveness:
    """See :func:`_clock_bounds`; the timed pass falls back to the untimed one when
    its hulls outgrow :data:`HULL_BUDGET_MB`."""
    budget = Budget(Limits()) if budget is None else budget
    args = (model, bounds, budget, canon, edge_cache, local)
    try:
        return _clock_bounds(*args, timed=timed)
    except _TooWide:
        return _clock_bounds(*args, timed=None)


def _clock_bounds(
    model: TimedModel,
    bounds: Sequence[int],
    budget: Budget,
    canon: Canonizer | None = None,
    edge_cache: dict[State, Sequence[Edge]] | None = None,
    local: bool = True,
    timed: DbmOps | None = None,
) -> Liveness:
    """The pre-pass (see the module docstring).

    Stops (leaving :attr:`Liveness.complete` False: every clock live, with the
    largest constant) at a limit of ``budget``: once it holds more states than the
    budget's states limit, at its time limit, past its memory limit.  Without
    ``local``, only liveness and the global per-clock constants are computed.

    With ``timed`` (DBM operations), the pass follows time coarsely: each discrete
    state keeps one zone over every clock, the convex hull of every zone that
    reaches it (extrapolated by the model's largest constant), and an edge counts
    only when its guard meets that hull.  The hull contains every reachable
    valuation of the state, so the graph still over-approximates the reachable one
    (the bounds stay sound), and it is usually much closer to it than the untimed
    graph, which lets events happen in orders no timing allows."""
    n_clocks = len(model.clock_names)
    top = max(bounds, default=0)
    live = Liveness(n_clocks, canon, top)
    index: dict[State, int] = {}
    states: list[State] = []
    reads: list[int] = []
    lus: list[Bounds] = []
    # preds[j]: (i, resets, sym): an edge from states[i] to sym^-1(states[j]).
    preds: list[list[tuple[int, tuple[int, ...], Symmetry | None]]] = []
    queue: deque[int] = deque()
    everything: Bounds | None = None
    # The timed pass: per state its hull, whether it waits, which edges count already.
    n = n_clocks + 1
    hulls: list[Dbm | None] = []
    waiting: list[bool] = []
    counted: list[set[int]] = []
    noted: list[bool] = []
    top_m = [0] + [max(top, 0)] * n_clocks

    def intern(s: State) -> tuple[int, Symmetry | None]:
        rep, sym = live.canon(s)
        j = index.get(rep)
        if j is None:
            j = len(states)
            index[rep] = j
            states.append(rep)
            preds.append([])
            reads.append(0)
            lus.append({})
            if timed is None:
                queue.append(j)
            else:
                hulls.append(None)
                waiting.append(False)
                counted.append(set())
                noted.append(False)
        return j, sym

    def constrain(z: Dbm, atoms: Sequence[ClockAtom]) -> bool:
        assert timed is not None
        for a in atoms:
            b = bounds[a.bound]
            if a.op in (LT, LE):
                ok = timed.constrain(z, n, a.clock + 1, 0, bound(b, a.op == LT))
            else:
                ok = timed.constrain(z, n, 0, a.clock + 1, bound(-b, a.op == ">"))
            if not ok:
                return False
        return True

    dl_memo: dict[State, Sequence[ClockAtom] | ModelRuntimeError] = {}

    def deadlines_of(t: State) -> Sequence[ClockAtom]:
        """The model's deadlines in ``t`` (memoised, faults too)."""
        got = dl_memo.get(t)
        if got is None:
            try:
                got = model.deadlines(t)
            except ModelRuntimeError as err:
                got = err
            dl_memo[t] = got
        if isinstance(got, ModelRuntimeError):
            raise got
        return got

    def settle(t: State, z: Dbm) -> bool:
        """Deadlines, time passing, deadlines, extrapolation (in place)."""
        assert timed is not None
        try:
            inv = deadlines_of(t)
        except ModelRuntimeError:
            inv = []  # reported when the search meets t; the hull only needs to be large
        if not constrain(z, inv):
            return False
        timed.up(z, n)
        if not constrain(z, inv):
            return False
        timed.extrapolate_m(z, n, top_m)
        return constrain(z, inv)

    def merge(j: int, z: Dbm) -> None:
        h = hulls[j]
        if h is None:
            hulls[j] = z
        elif timed is not None and not timed.includes(h, z, n):
            # The entrywise maximum of canonical DBMs is canonical: their convex hull.
            hulls[j] = [a if a >= b else b for a, b in zip(h, z, strict=True)]
        else:
            return
        if not waiting[j]:
            waiting[j] = True
            queue.append(j)

    def unknown(i: int) -> None:
        # A model error here: no constants known, every bound of the model may matter.
        nonlocal everything
        reads[i] = live.all_mask
        if everything is None:
            everything = {c: (top, top) for c in range(n_clocks)}
        lus[i] = dict(everything)

    def expand_timed(i: int, s: State) -> None:
        assert timed is not None
        if len(states) * n * n * 40 > HULL_BUDGET_MB * 2**20:
            raise _TooWide
        budget.count(len(states) - 1)
        z = hulls[i]
        assert z is not None
        lu = lus[i]
        first = not noted[i]
        noted[i] = True
        try:
            edges = edge_cache.get(s) if edge_cache is not None else None
            if edges is None:
                edges = model.edges(s)
                if edge_cache is not None and len(edge_cache) < EDGE_CACHE:
                    edge_cache[s] = edges  # the search expands these states again
            if first:
                dls = deadlines_of(s)
                hz = model.hazards(s)
        except ModelRuntimeError:
            unknown(i)
            return
        if first:
            r = _atoms_mask(dls)
            _note(dls, bounds, lu)
            for h in hz:
                r |= _atoms_mask(h.atoms)
                _note(h.atoms, bounds, lu)
            for e in edges:
                r |= _atoms_mask(e.guard)
                _note(e.guard, bounds, lu)
                if e.failure is not None:
                    continue
                # Whether the edge can fire also depends on its target's deadlines on
                # the clocks it keeps.  The untimed pass gets them from the target's
                # own reads; here the target may never be reached (the hull says the
                # edge cannot fire), and the search, which cannot know that, must
                # still see the conflict: those clocks are read here.
                try:
                    target_dls = deadlines_of(e.target)
                except ModelRuntimeError:
                    target_dls = []
                kept = [a for a in target_dls if a.clock not in e.resets]
                r |= _atoms_mask(kept)
                _note(kept, bounds, lu)
            reads[i] |= r
        seen = counted[i]
        for k, e in enumerate(edges):
            if e.failure is not None:
                continue
            g = list(z)
            if not constrain(g, e.guard):
                continue
            for c in e.resets:
                timed.reset(g, n, c + 1)
            if not settle(e.target, g):
                continue  # the edge cannot fire from the hull: no run takes it
            j, sym = intern(e.target)
            if k not in seen:
                seen.add(k)
                preds[j].append((i, e.resets, sym))
            if sym is not None:
                g = timed.permute(g, n, [0] + [sym.clocks[c] + 1 for c in every_clock])
            merge(j, g)

    every_clock = range(n_clocks)

    try:
        for s in model.initial_states():
            j, sym = intern(s)
            if timed is not None:
                z0 = [LE_ZERO] * (n * n)
                if settle(s, z0):
                    merge(j, z0 if sym is None else timed.permute(
                        z0, n, [0] + [sym.clocks[c] + 1 for c in range(n_clocks)]))
        while queue:
            i = queue.popleft()
            s = states[i]
            if timed is not None:
                waiting[i] = False
                expand_timed(i, s)
                continue
            budget.count(len(states) - 1)
            lu = lus[i]
            failed = False
            try:
                dls = model.deadlines(s)
                hz = model.hazards(s)
            except ModelRuntimeError:
                dls, hz = [], []
                failed = True
            try:
                edges = model.edges(s)
            except ModelRuntimeError:
                edges = []
                failed = True
            else:
                if edge_cache is not None and len(edge_cache) < EDGE_CACHE:
                    edge_cache[s] = edges  # the search expands these representatives again
            r = _atoms_mask(dls)
            _note(dls, bounds, lu)
            for h in hz:
                r |= _atoms_mask(h.atoms)
                _note(h.atoms, bounds, lu)
            for k, e in enumerate(edges):
                if k & 4095 == 4095:
                    budget.check_time()
                r |= _atoms_mask(e.guard)
                _note(e.guard, bounds, lu)
                if e.failure is not None:
                    continue
                j, sym = intern(e.target)
                # The reset clocks, not their bitmask: with thousands of clocks one mask
                # per edge would take more memory than the whole model.
                preds[j].append((i, e.resets, sym))
            reads[i] |= r
            if failed:
                unknown(i)
    except LimitHit as hit:
        if isinstance(hit, MemoryLimitHit):
            raise  # the memory guard's: it ends the whole run
        return live
    # Global constants (for states the search meets that the pass did not, which
    # can only be with symmetry off in one and on in the other: never) and for the
    # liveness-only mode.
    lower, upper = [-1] * n_clocks, [-1] * n_clocks
    for lu in lus:
        for c, (lo, up) in lu.items():
            if lo > lower[c]:
                lower[c] = lo
            if up > upper[c]:
                upper[c] = up
    if canon is not None:
        # Constants were seen on representatives only: make them the same across
        # orbits, closing under generators of the permutation group.
        gens = canon.generators()
        changed = True
        while changed:
            changed = False
            for sym in gens:
                for c, img in enumerate(sym.clocks):
                    if c == img:
                        continue
                    if lower[img] != lower[c] or upper[img] != upper[c]:
                        lower[img] = lower[c] = max(lower[img], lower[c])
                        upper[img] = upper[c] = max(upper[img], upper[c])
                        changed = True
    live.lower, live.upper = lower, upper
    # Backwards to a fixpoint, propagating only what changed since a state was last
    # processed (each bit and each constant moves once per increase).
    mask = list(reads)
    dmask = list(reads)
    dlus: list[Bounds] = [dict(lu) for lu in lus] if local else []
    work = deque(range(len(states)))
    queued = [True] * len(states)
    steps = 0
    while work:
        j = work.popleft()
        queued[j] = False
        mj = dmask[j]
        dmask[j] = 0
        luj: Bounds = {}
        if local:
            luj = dlus[j]
            dlus[j] = {}
        if not mj and not luj:
            continue
        for i, resets, sym in preds[j]:
            if i == j and sym is None:
                continue  # a self-loop adds nothing to what the state already has
            steps += 1
            if steps & 1023 == 0 and budget.over_time():
                return live
            changed = False
            if mj:
                got = Liveness.unmap(mj, sym)
                for c in resets:
                    if got >> c & 1:
                        got ^= 1 << c
                fresh = got & ~mask[i]
                if fresh:
                    mask[i] |= fresh
                    dmask[i] |= fresh
                    changed = True
            if luj:
                lui, dlui = lus[i], dlus[i]
                inv = sym.clock_inverse() if sym is not None else None
                for c2, pair in luj.items():
                    c = inv[c2] if inv is not None else c2
                    if resets and c in resets:
                        continue
                    old = lui.get(c)
                    if old is None:
                        lui[c] = dlui[c] = pair
                        changed = True
                    elif pair[0] > old[0] or pair[1] > old[1]:
                        lui[c] = dlui[c] = (max(pair[0], old[0]), max(pair[1], old[1]))
                        changed = True
            if changed and not queued[i]:
                queued[i] = True
                work.append(i)
    # A state the timed pass never expanded (no valuation reaches it, e.g. an initial
    # state that breaks a deadline) stays unknown: every clock live there.
    known = [k for k in range(len(states)) if timed is None or noted[k]]
    live.live = {states[k]: mask[k] for k in known}
    if local:
        live.local = {states[k]: lus[k] for k in known}
    live.complete = True
    return live


def live_clocks(model: TimedModel, max_states: int | None = None,
                deadline: float | None = None) -> dict[State, int] | None:
    """Per reachable (untimed) discrete state, the bitmask of clocks it may still
    read before resetting them; None if the untimed pass hit ``max_states`` or
    the ``time.monotonic()`` deadline (then every clock counts as live)."""
    budget = Budget(Limits(max_states, deadline=deadline))
    live = clock_bounds(model, [0] * len(model.bounds), budget, local=False)
    return live.live if live.complete else None

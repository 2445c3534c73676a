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

  A hull keeps only the clocks found live in its state so far (what the state
  reads and, back along the edges found so far, what its successors read); the
  others are dropped as zones enter it.  Dropping a clock only enlarges a hull,
  which stays sound, and dropping one that no path reads before resetting it
  changes no guard or deadline met, so the graph stays the same; kept, such
  clocks drift apart from run to run and make the hulls grow again and again
  (on Fischer's protocol every state was expanded a dozen times, each time for
  a dead clock).  When a dropped clock turns out live once the bounds are
  solved, the pass runs again knowing the live clocks it found, which its
  smaller graph cannot exceed: the second round drops only dead clocks.
* **untimed**: clock constraints are ignored (every data-enabled edge counts),
  which can be many times larger when timing orders the events.

Hulls are kept packed (:func:`checker.domains.dbm.pack`: 1 to 8 bytes per entry in
the compiled core) and grown by :func:`~checker.domains.dbm.join`; when they would take
more than :data:`HULL_BUDGET_MB` the timed pass gives way to the untimed one.

The pass runs under the same limits as the search (a
:class:`~checker.limits.Budget`, with a states limit of its own); when it stops early every
clock counts as live with the model's largest constant, which is still exact.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from checker.domains.backend import DbmOps
from checker.domains.dbm import LE_ZERO, Dbm, Packed, bound
from checker.errors import KvraceError
from checker.limits import Budget, LimitHit, Limits, MemoryLimitHit
from checker.model.interface import (
    GT,
    LE,
    LT,
    ClockAtom,
    Edge,
    ModelRuntimeError,
    State,
    Symmetry,
    TimedModel,
    query_atoms,
)
from checker.semantics.canon import Canonizer

EDGE_CACHE = 1 << 16
"""How many discrete states' edges are memoised (the search expands a state once per zone)."""

REP_CACHE = 1 << 18
"""How many states' orbit representatives :class:`Liveness` memoises, for the pass and
for a search that canonicalises with the same canonizer (its labels and frames ask for
them again and again)."""

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
        # The last state looked up by :meth:`mask` or :meth:`bounds`: a frame asks
        # for both, one after the other, and the orbit is then found once.
        self._last: tuple[State, State, Symmetry | None] | None = None
        self.shared_canonizer = True
        """Whether the search canonicalises with the canonizer given here: then the
        orbits of the states looked up are memoised (the search asks for them again);
        otherwise the zone domain's frames keep what a lookup finds, and nothing else
        need (see :meth:`for_search`)."""

    def canon(self, s: State) -> tuple[State, Symmetry | None]:
        """The representative of ``s`` and the permutation giving it (None: ``s``)."""
        if self.canon_ is None:
            return s, None
        got = self._rep.get(s)
        if got is None:
            best, syms = self.canon_.candidates(s)
            got = (best, syms[0])
            if len(self._rep) >= REP_CACHE:
                self._rep.clear()
            self._rep[s] = got
        return got

    def for_search(self, shared_canonizer: bool) -> None:
        """Set :attr:`shared_canonizer` for the search about to use these bounds; a
        search that does not share the canonizer has no use for the pass's memo of
        orbits, which is dropped."""
        self.shared_canonizer = shared_canonizer
        if not shared_canonizer:
            self._rep.clear()

    def _orbit(self, s: State) -> tuple[State, Symmetry | None]:
        """:meth:`canon` of ``s``, remembered for the next lookup of the same state."""
        last = self._last
        if last is not None and last[0] is s:
            return last[1], last[2]
        if self.shared_canonizer or self.canon_ is None:
            rep, sym = self.canon(s)
        else:
            best, syms = self.canon_.candidates(s, memo=False)
            rep, sym = best, syms[0]
        self._last = (s, rep, sym)
        return rep, sym

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
        """The clocks ``s`` may still read before resetting them (all, if unknown).

        Not memoised per state: the zone domain's frames keep what they need of it."""
        got = self.live.get(s)
        if got is not None:
            return got
        if not self.complete or self.canon_ is None:
            return self.all_mask
        rep, sym = self._orbit(s)
        base = self.live.get(rep)
        return self.all_mask if base is None else self.unmap(base, sym)

    def bounds(self, s: State) -> Bounds | None:
        """The local (L, U) constants of ``s``'s live clocks; None if unknown (then
        the global :attr:`lower` and :attr:`upper` apply).  Not memoised per state,
        as :meth:`mask`."""
        got = self.local.get(s)
        if got is not None or not self.complete or self.canon_ is None:
            return got
        rep, sym = self._orbit(s)
        base = self.local.get(rep)
        if base is None or sym is None:
            return base
        inv = sym.clock_inverse()
        return {inv[c]: lu for c, lu in base.items()}


def bits(mask: int) -> list[int]:
    """The clocks of a mask, in order."""
    out = []
    c = 0
    while mask:
        if mask & 1:
            out.append(c)
        mask >>= 1
        c += 1
    return out


def _hull_perm(sym: Symmetry) -> list[int]:
    """Where ``sym`` moves each index of a DBM over every clock (memoised on it)."""
    got: list[int] | None = sym.__dict__.get("_hull_perm")
    if got is None:
        got = [0] + [c + 1 for c in sym.clocks]
        object.__setattr__(sym, "_hull_perm", got)
    return got


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


class _TooWide(KvraceError):
    """The timed pass's hulls would take more than :data:`HULL_BUDGET_MB`."""


ATOM_MEMO = 1 << 16
"""How many atom sequences the timed pass keeps translated to DBM entries."""

HULL_BUDGET_MB = 1024
"""The memory the timed pass's hull zones may take, counted as :data:`HULL_BYTES` per
state; past it the pass starts again untimed.  The count depends on the number of
states and clocks only (not on the constants nor on the DBM implementation), so the
same model takes the same pass, and stores the same zones, at every time scale."""


def hull_bytes(n: int) -> int:
    """What one hull of dimension ``n`` is counted as: 8 bytes per entry, the widest
    the compiled core packs (:func:`checker.domains.dbm.pack`; usually 1), plus the
    object's header.  (The Python reference keeps a tuple, larger when its entries
    are large ints.)"""
    return 8 * n * n + 48


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


class _Pass:
    """The pre-pass (see the module docstring and :func:`_clock_bounds`): the graph
    explored forwards, then the bounds solved backwards."""

    def __init__(self, model: TimedModel, bounds: Sequence[int], budget: Budget,
                 canon: Canonizer | None, edge_cache: dict[State, Sequence[Edge]] | None,
                 local: bool, timed: DbmOps | None, guess: dict[State, int] | None = None,
                 live: Liveness | None = None) -> None:
        self.model = model
        self.bounds = bounds
        self.budget = budget
        self.canon = canon
        # The timed pass lists a state's edges when it finds the state and again when it
        # expands it: it keeps them at least meanwhile.
        self.edge_cache = {} if edge_cache is None and timed is not None else edge_cache
        self.local = local
        self.timed = timed
        self.n_clocks = n_clocks = len(model.clock_names)
        self.top = top = max(bounds, default=0)
        self.live = Liveness(n_clocks, canon, top) if live is None else live
        self.index: dict[State, int] = {}
        self.states: list[State] = []
        self.reads: list[int] = []
        self.lus: list[Bounds] = []
        self.preds: list[list[tuple[int, tuple[int, ...], Symmetry | None]]] = []
        """preds[j]: (i, resets, sym): an edge from states[i] to sym^-1(states[j])."""
        self.queue: deque[int] = deque()
        self.grown: list[int] = []
        """States of the timed pass whose hull grew since they were last expanded."""
        self.everything: Bounds | None = None
        # The timed pass: per state its hull, whether it waits, which edges count already.
        self.n = n_clocks + 1
        self.hulls: list[Packed | None] = []
        """Per state, its hull, packed (:func:`checker.domains.dbm.pack`)."""
        self.waiting: list[bool] = []
        self.counted: list[set[int]] = []
        self.noted: list[bool] = []
        self.faulty: list[bool] = []
        """States whose edges or properties raise a model error (never expanded)."""
        self.guess = guess or {}
        """Clocks known to be live in a state (from an earlier round)."""
        self.alive: list[int] = []
        """Per state, the clocks found live so far: its reads and, back along the edges
        found so far, its successors'.  The others are dropped from its hull."""
        self.dropped: list[int] = []
        """Per state, every clock ever dropped from its hull."""
        self.indices: dict[int, list[int]] = {}
        """The DBM indices of the clocks of a mask."""
        self.top_m = [0] + [max(top, 0)] * n_clocks
        self.dl_memo: dict[State, Sequence[ClockAtom] | ModelRuntimeError] = {}
        self.constrain = self._constrainer()

    def intern(self, s: State) -> tuple[int, Symmetry | None]:
        """The index of the representative of ``s`` (a new one is queued), and the
        permutation that gives it."""
        rep, sym = self.live.canon(s)
        j = self.index.get(rep)
        if j is None:
            j = len(self.states)
            self.index[rep] = j
            self.states.append(rep)
            self.preds.append([])
            self.reads.append(0)
            self.lus.append({})
            if self.timed is None:
                self.queue.append(j)
            else:
                self.hulls.append(None)
                self.waiting.append(False)
                self.counted.append(set())
                self.noted.append(False)
                self.faulty.append(False)
                self.alive.append(0)
                self.dropped.append(0)
                self.discover(j, rep)
        return j, sym

    def discover(self, j: int, s: State) -> None:
        """What a new state of the timed pass reads, before anything enters its hull."""
        try:
            self.first_visit(j, s, self.edges_of(s))
        except ModelRuntimeError:
            self.unknown(j)
            self.faulty[j] = True
        self.revive(j, self.reads[j] | self.guess.get(s, 0))

    def revive(self, j: int, mask: int) -> None:
        """Add ``mask`` to the clocks live in state ``j``, and back along the edges found
        so far to its predecessors (those the edges do not reset)."""
        alive, preds = self.alive, self.preds
        todo = [(j, mask)]
        while todo:
            j, mask = todo.pop()
            fresh = mask & ~alive[j]
            if not fresh:
                continue
            alive[j] |= fresh
            for i, resets, sym in preds[j]:
                got = Liveness.unmap(fresh, sym)
                for c in resets:
                    got &= ~(1 << c)
                if got & ~alive[i]:
                    todo.append((i, got))

    def consistent(self) -> bool:
        """Whether no state of the timed pass dropped a clock that turned out live
        (``reads`` solved): then every hull is the full pass's, up to dead clocks."""
        return all(not (d & r) for d, r in zip(self.dropped, self.reads, strict=True))

    def _constrainer(self) -> Callable[[Dbm, Sequence[ClockAtom]], bool]:
        """Intersect a hull with clock atoms in place; False if it became empty (a
        closure: the timed pass calls it for every edge).  Each atom sequence is
        translated to DBM entries once (keyed by identity, the sequence kept alive
        with its translation so that its identity is not reused)."""
        timed = self.timed
        n = self.n
        bounds = self.bounds
        memo: dict[int, tuple[Sequence[ClockAtom], list[tuple[int, int, int]]]] = {}

        def entries(atoms: Sequence[ClockAtom]) -> list[tuple[int, int, int]]:
            out = []
            for a in atoms:
                b = bounds[a.bound]
                if a.op in (LT, LE):
                    out.append((a.clock + 1, 0, bound(b, a.op == LT)))
                else:
                    out.append((0, a.clock + 1, bound(-b, a.op == GT)))
            if len(memo) >= ATOM_MEMO:
                memo.clear()
            memo[id(atoms)] = (atoms, out)
            return out

        tighten = timed.constrain if timed is not None else None

        def constrain(z: Dbm, atoms: Sequence[ClockAtom]) -> bool:
            assert tighten is not None
            if not atoms:
                return True
            got = memo.get(id(atoms))
            todo = got[1] if got is not None and got[0] is atoms else entries(atoms)
            for i, j, b in todo:
                if not tighten(z, n, i, j, b):
                    break
            else:
                return True
            return False

        return constrain

    def deadlines_of(self, t: State) -> Sequence[ClockAtom]:
        """The model's deadlines in ``t`` (memoised, faults too)."""
        got = self.dl_memo.get(t)
        if got is None:
            try:
                got = self.model.deadlines(t)
            except ModelRuntimeError as err:
                got = err
            self.dl_memo[t] = got
        if isinstance(got, ModelRuntimeError):
            raise got
        return got

    def settle(self, t: State, z: Dbm) -> bool:
        """Deadlines, time passing, deadlines, extrapolation (in place); False when
        the zone breaks the deadlines."""
        timed = self.timed
        assert timed is not None
        constrain = self.constrain
        try:
            inv = self.deadlines_of(t)
        except ModelRuntimeError:
            inv = ()  # reported when the search meets t; the hull only needs to be large
        if not constrain(z, inv):
            return False
        timed.up(z, self.n)
        if not constrain(z, inv):
            return False
        # Extra_M relaxes only bounds beyond the largest constant, which no deadline
        # has: the zone stays inside the deadlines.
        timed.extrapolate_m(z, self.n, self.top_m)
        return True

    def merge(self, j: int, z: Dbm) -> None:
        """Add ``z`` to the hull of state ``j`` (queued again when it grew), without the
        clocks not known to be live there.

        Dropping a clock enlarges the hull, which stays sound whatever the clock; and a
        clock no path reads before resetting it constrains neither a guard nor a
        deadline, so dropping it leaves the graph as it is.  Keeping such clocks would
        only make the hulls grow again and again as their values spread."""
        timed = self.timed
        assert timed is not None
        dead = self.live.all_mask & ~self.alive[j]
        if dead:
            self.dropped[j] |= dead
            indices = self.indices.get(dead)
            if indices is None:
                indices = self.indices[dead] = [c + 1 for c in bits(dead)]
            n, free = self.n, timed.free
            for i in indices:
                free(z, n, i)
        h = self.hulls[j]
        if h is None:
            self.hulls[j] = timed.pack(z, self.n)
        else:
            grown = timed.join(h, z, self.n)
            if grown is None:
                return
            self.hulls[j] = grown
        if not self.waiting[j]:
            self.waiting[j] = True
            self.grown.append(j)

    def unknown(self, i: int) -> None:
        """A model error at state ``i``: no constants known, every bound of the model
        may matter."""
        self.reads[i] = self.live.all_mask
        if self.everything is None:
            self.everything = {c: (self.top, self.top) for c in range(self.n_clocks)}
        self.lus[i] = dict(self.everything)

    def edges_of(self, s: State) -> Sequence[Edge]:
        """The model's edges out of ``s``, kept in the edge cache (the search expands
        these representatives again)."""
        cache = self.edge_cache
        edges = cache.get(s) if cache is not None else None
        if edges is None:
            edges = self.model.edges(s)
            if cache is not None and len(cache) < EDGE_CACHE:
                cache[s] = edges
        return edges

    def first_visit(self, i: int, s: State, edges: Sequence[Edge]) -> None:
        """The clocks the timed pass's state ``i`` reads, and their constants."""
        bounds = self.bounds
        lu = self.lus[i]
        dls = self.deadlines_of(s)
        hz = self.model.hazards(s)
        qa = query_atoms(self.model, s)
        r = _atoms_mask(dls) | _atoms_mask(qa)
        _note(dls, bounds, lu)
        _note(qa, bounds, lu)
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
                target_dls = self.deadlines_of(e.target)
            except ModelRuntimeError:
                target_dls = []
            kept = [a for a in target_dls if a.clock not in e.resets]
            r |= _atoms_mask(kept)
            _note(kept, bounds, lu)
        self.reads[i] |= r

    def expand_timed(self, i: int, s: State) -> None:
        """Expand state ``i`` of the timed pass from its hull."""
        timed = self.timed
        assert timed is not None
        n = self.n
        if len(self.states) * hull_bytes(n) > HULL_BUDGET_MB * 2**20:
            raise _TooWide
        self.budget.count(len(self.states) - 1)
        packed = self.hulls[i]
        assert packed is not None
        z = timed.unpack(packed, n)
        self.noted[i] = True
        if self.faulty[i]:
            return
        edges = self.edges_of(s)
        seen = self.counted[i]
        constrain, settle, intern, merge = self.constrain, self.settle, self.intern, self.merge
        preds = self.preds
        for k, e in enumerate(edges):
            if k & 4095 == 4095:
                self.budget.check_time()
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
                got = Liveness.unmap(self.alive[j], sym)
                for c in e.resets:
                    got &= ~(1 << c)
                self.revive(i, got)
            if sym is not None:
                g = timed.permute(g, n, _hull_perm(sym))
            merge(j, g)

    def expand_untimed(self, i: int, s: State) -> None:
        """Expand state ``i`` of the untimed pass: every data-enabled edge counts."""
        model = self.model
        bounds = self.bounds
        budget = self.budget
        budget.count(len(self.states) - 1)
        lu = self.lus[i]
        failed = False
        try:
            dls = model.deadlines(s)
            hz = model.hazards(s)
            qa = query_atoms(model, s)
        except ModelRuntimeError:
            dls, hz, qa = [], [], []
            failed = True
        try:
            edges = model.edges(s)
        except ModelRuntimeError:
            edges = []
            failed = True
        else:
            cache = self.edge_cache
            if cache is not None and len(cache) < EDGE_CACHE:
                cache[s] = edges  # the search expands these representatives again
        r = _atoms_mask(dls) | _atoms_mask(qa)
        _note(dls, bounds, lu)
        _note(qa, bounds, lu)
        for h in hz:
            r |= _atoms_mask(h.atoms)
            _note(h.atoms, bounds, lu)
        preds = self.preds
        for k, e in enumerate(edges):
            if k & 4095 == 4095:
                budget.check_time()
            r |= _atoms_mask(e.guard)
            _note(e.guard, bounds, lu)
            if e.failure is not None:
                continue
            j, sym = self.intern(e.target)
            # The reset clocks, not their bitmask: with thousands of clocks one mask
            # per edge would take more memory than the whole model.
            preds[j].append((i, e.resets, sym))
        self.reads[i] |= r
        if failed:
            self.unknown(i)

    def explore(self) -> None:
        """The graph, forwards from the initial states."""
        timed = self.timed
        for s in self.model.initial_states():
            j, sym = self.intern(s)
            if timed is not None:
                z0 = [LE_ZERO] * (self.n * self.n)
                if self.settle(s, z0):
                    self.merge(j, z0 if sym is None else timed.permute(
                        z0, self.n, _hull_perm(sym)))
        queue = self.queue
        states = self.states
        if timed is not None:
            # Rounds over the waiting states in order of discovery; a state whose hull
            # grows again during a round waits for the next one.  Any order reaches the
            # same graph (the least fixpoint: every step is monotone); this one expands
            # fewer times than first-in first-out.
            waiting = self.waiting
            todo = self.grown
            while todo:
                batch = sorted(todo)
                todo.clear()
                for i in batch:
                    waiting[i] = False
                for i in batch:
                    if not waiting[i]:
                        self.expand_timed(i, states[i])
        while queue:
            i = queue.popleft()
            self.expand_untimed(i, states[i])

    def global_constants(self) -> None:
        """The largest constants per clock over every state (for states the search
        meets that the pass did not, which can only be with symmetry off in one and on
        in the other: never) and for the liveness-only mode."""
        n_clocks = self.n_clocks
        lower, upper = [-1] * n_clocks, [-1] * n_clocks
        for lu in self.lus:
            for c, (lo, up) in lu.items():
                if lo > lower[c]:
                    lower[c] = lo
                if up > upper[c]:
                    upper[c] = up
        if self.canon is not None:
            # Constants were seen on representatives only: make them the same across
            # orbits, closing under generators of the permutation group.
            gens = self.canon.generators()
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
        self.live.lower, self.live.upper = lower, upper

    def solve(self) -> bool:
        """Backwards to a fixpoint, propagating only what changed since a state was
        last processed (each bit and each constant moves once per increase); False when
        time ran out."""
        local = self.local
        lus, preds = self.lus, self.preds
        mask = list(self.reads)
        dmask = list(self.reads)
        dlus: list[Bounds] = [dict(lu) for lu in lus] if local else []
        work = deque(range(len(self.states)))
        queued = [True] * len(self.states)
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
                if steps & 1023 == 0 and self.budget.over_time():
                    return False
                changed = bool(mj) and _add_live(mask, dmask, i, mj, resets, sym)
                if luj and _add_bounds(lus[i], dlus[i], luj, resets, sym):
                    changed = True
                if changed and not queued[i]:
                    queued[i] = True
                    work.append(i)
        self.reads = mask
        return True


def _add_live(mask: list[int], dmask: list[int], i: int, mj: int, resets: Sequence[int],
              sym: Symmetry | None) -> bool:
    """Add to state ``i`` the clocks its successor reads (``mj``, mapped back through
    ``sym``) that the edge does not reset; whether that added any."""
    got = Liveness.unmap(mj, sym)
    for c in resets:
        if got >> c & 1:
            got ^= 1 << c
    fresh = got & ~mask[i]
    if not fresh:
        return False
    mask[i] |= fresh
    dmask[i] |= fresh
    return True


def _add_bounds(lui: Bounds, dlui: Bounds, luj: Bounds, resets: Sequence[int],
                sym: Symmetry | None) -> bool:
    """Raise state ``i``'s LU bounds (``lui``, its pending part ``dlui``) to its
    successor's (``luj``, mapped back through ``sym``) for the clocks the edge does not
    reset; whether any rose."""
    changed = False
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
    return changed


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
    p = _Pass(model, bounds, budget, canon, edge_cache, local, timed)
    live = p.live
    while True:
        try:
            p.explore()
        except LimitHit as hit:
            if isinstance(hit, MemoryLimitHit):
                raise  # the memory guard's: it ends the whole run
            return live
        p.global_constants()
        if not p.solve():
            return live
        if timed is None or p.consistent():
            break
        # A hull dropped a clock found live later: again, knowing those clocks (the
        # new round's hulls are smaller, so its graph and its live clocks are too).
        guess = {st: p.reads[k] for k, st in enumerate(p.states)}
        p = _Pass(model, bounds, budget, canon, edge_cache, local, timed, guess, live)
    # A state the timed pass never expanded (no valuation reaches it, e.g. an initial
    # state that breaks a deadline) stays unknown: every clock live there.
    states = p.states
    known = [k for k in range(len(states)) if timed is None or p.noted[k]]
    live.live = {states[k]: p.reads[k] for k in known}
    if local:
        live.local = {states[k]: p.lus[k] for k in known}
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

"""Unbounded liveness: ``P leadsto Q``, ``always eventually Q`` and weak fairness.

**Runs.**  A run is an infinite, time-divergent (non-Zeno) run of the timed model,
or a finite run that ends in a deadlock (no event can fire and time cannot pass).
A run that stays in a state where no deadline is active lets time pass for ever:
that is an infinite, time-divergent run too (it shows that a protocol needs a
timer).  Urgent and committed locations stop time (they are deadlines on a hidden
clock), so a run cannot idle in them, and a cycle through them alone is Zeno.

**Fairness.**  ``fair event`` makes each instance of the event weakly fair: a run
in which, from some point on, the instance is always enabled (its guard holds and
its target's deadlines allow it) but never fires again is not a run.

**Properties.**  ``P leadsto Q`` is violated by a run that reaches a state where
``P`` holds and ``Q`` does not, and never meets ``Q`` afterwards (a deadlock counts
as staying in its last state); ``always eventually Q`` is ``true leadsto Q``.

**Algorithm.**

1. *Progress clock* (Tripakis, "Checking timed Büchi automata emptiness on
   simulation graphs", ACM TOCL 2009): the model gets one more clock; every edge
   gets a twin that also requires it to be at least 1 and resets it.  An infinite
   run is time-divergent iff it takes twins infinitely often.
2. *Zone graph*: built once, breadth-first, over the live clocks of each state,
   abstracted by Extra_M with each clock's maximal constant (region-equivalent
   valuations only, so every cycle of the graph is followed by a concrete run and
   every deadlock it shows is real), stored by equality: inclusion covering is not
   sound for cycle detection (a covered node's cycles need not be the coverer's),
   and neither is Extra+_LU for the deadlock part.  Symmetry: an instance such as
   ``served[A]`` is not invariant under swapping A and B, but it is under the
   permutations that fix A; an instance is first checked on the graph reduced by
   those (one instance per orbit: the others hold or fail with it), and what it
   does not show to hold is checked on the full graph
   (:meth:`LivenessChecker._by_symmetry`).
3. *Per property instance*: the graph restricted to the states where ``Q`` does not
   hold is split into strongly connected components (Tarjan).  A component is a
   counterexample when it holds a twin edge (time diverges) and, for every fair
   event instance, an edge firing it or a state where it is disabled by the data
   (generalised Büchi acceptance, one set per fair instance); a state with no
   active deadline is one when no fair instance stays enabled as time passes; a
   deadlocked state is one.  The property is violated when a state where ``P``
   holds and ``Q`` does not reaches one of them without meeting ``Q``.
4. A component that is accepting only when a fair instance counts as disabled by
   its *clock* guard somewhere (the zone holds valuations that disable it) may or
   may not be fair: the answer is then *inconclusive*, never *holds*.

Limits (states, seconds, memory) end a run as inconclusive.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from checker.domains import dbm
from checker.limits import Budget, LimitHit, Limits, peak_rss_mb
from checker.model.interface import (
    GE,
    GT,
    LE,
    LT,
    ClockAtom,
    Edge,
    Hazard,
    LinExpr,
    ModelRuntimeError,
    Param,
    State,
    Symmetry,
    TimedModel,
    Violation,
    scaled_bounds,
)
from checker.semantics.canon import EnumeratingCanonizer
from checker.semantics.clockbounds import clock_bounds
from checker.semantics.traces import PathStep, TraceStep, concrete
from checker.semantics.ts import Extrapolation, LabelKind, Status, Succ, ZoneTS, deadlocked
from checker.semantics.zones import Frame


class LiveStatus(str, enum.Enum):
    """The outcome of one liveness property instance."""

    HOLDS = "holds"
    VIOLATED = "violated"
    INCONCLUSIVE = "inconclusive"

    def __str__(self) -> str:
        return self.value


class LassoKind(str, enum.Enum):
    """How a counterexample run goes on after its stem."""

    CYCLE = "cycle"
    """It repeats a cycle of events for ever (time diverges)."""
    IDLE = "idle"
    """It stays in its last state for ever: no deadline is active there."""
    DEADLOCK = "deadlock"
    """It ends in a deadlock: no event can fire and time cannot pass."""

    def __str__(self) -> str:
        return self.value


@dataclass
class Lasso:
    """A counterexample: ``trace[:loop]`` is the stem; with :attr:`LassoKind.CYCLE`,
    ``trace[loop:]`` is one turn of the cycle, whose last step returns to the state of
    ``trace[loop - 1]`` (the cycle's first state)."""

    kind: LassoKind
    trace: list[TraceStep]
    loop: int
    trigger: int
    """The step at which ``P`` held and ``Q`` did not (the obligation starts)."""


@dataclass
class LiveResult:
    """The outcome of one liveness property instance."""

    name: str
    status: LiveStatus
    message: str = ""
    lasso: Lasso | None = None


@dataclass
class LiveStats:
    """What building the zone graph cost."""

    zones: int = 0
    transitions: int = 0
    seconds: float = 0.0
    progress_clock: bool = False
    """Whether the graph with the progress clock was needed (its zones are counted)."""
    reduced: bool = False
    """Whether some instance was decided on a graph reduced by symmetry."""
    reduced_zones: int = 0
    """Of ``zones``, those of the graphs reduced by symmetry."""
    peak_memory_mb: float = 0.0


@dataclass
class LiveReport:
    """Every liveness property instance's outcome, and the cost."""

    results: list[LiveResult]
    stats: LiveStats = field(default_factory=LiveStats)
    limit: str | None = None
    """Set when a limit ended the run (every result is then inconclusive)."""
    error: str | None = None
    """A model run-time error met while checking (e.g. ``P`` reads ``none``): no
    result is given."""


# ---- the progress clock -------------------------------------------------------------------


class ProgressModel:
    """``base`` with the progress clock: each edge is followed by its twin, which also
    requires the clock to be at least 1 and resets it.  Edge ``2b`` of an event is the
    base model's edge ``b``, edge ``2b + 1`` its twin."""

    def __init__(self, base: TimedModel, twins: bool = True,
                 symmetries: Sequence[Symmetry] = ()) -> None:
        self.base = base
        self.twins = twins
        self._syms = [Symmetry(sym.src, sym.valmaps, (*sym.clocks, len(base.clock_names)),
                               sym.events) for sym in symmetries]
        """The permutations the reduction uses, the progress clock fixed by each."""
        """Without twins the model is the base model without its safety properties
        (their observer clocks are then dead: they do not split zones)."""
        self.tick = len(base.clock_names)
        self.clock_names: list[str] = [*base.clock_names, "<progress>"]
        self.bounds: list[LinExpr] = [*base.bounds, LinExpr(Fraction(1))]
        self._one = len(base.bounds)
        self.name: str = base.name
        self.event_names: Sequence[str] = base.event_names
        self.params: dict[str, Param] = dict(base.params)
        self.values: dict[str, Fraction] = dict(base.values)
        self.param_constraints = base.param_constraints

    def initial_states(self) -> Sequence[State]:
        """The base model's."""
        return self.base.initial_states()

    def edges(self, s: State) -> list[Edge]:
        """Each base edge, then its twin."""
        if not self.twins:
            return list(self.base.edges(s))
        out: list[Edge] = []
        atom = ClockAtom(self.tick, GE, self._one)
        for e in self.base.edges(s):
            out.append(e)
            out.append(Edge(e.event, (*e.guard, atom), (*e.resets, self.tick), e.target,
                            e.failure))
        return out

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The base model's."""
        return self.base.deadlines(s)

    def violations(self, s: State) -> Sequence[Violation]:
        """None: safety is checked on the base model."""
        return ()

    def hazards(self, s: State) -> Sequence[Hazard]:
        """None: safety is checked on the base model."""
        return ()

    def symmetries(self) -> Sequence[Symmetry]:
        """The permutations given (those that leave the property instance checked on
        this model unchanged), the progress clock fixed."""
        return list(self._syms)

    def describe(self, s: State) -> dict[str, object]:
        """The base model's."""
        return self.base.describe(s)


# ---- the zone graph -------------------------------------------------------------------------

EdgeRec = tuple[int, int, int, bool, int, int]
"""An edge of the zone graph: (target node, event, base branch, twin, the clocks it
resets as a bit mask, the clocks its guard bounds below by a positive constant)."""


@dataclass
class ZoneGraph:
    """The reachable zone graph of a :class:`ProgressModel`, stored by equality."""

    state: list[State] = field(default_factory=list)
    zone: list[dbm.Dbm] = field(default_factory=list)
    succ: list[list[EdgeRec]] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    """The breadth-first tree: the node each node was first reached from (-1: initial)."""
    via: list[tuple[int, int]] = field(default_factory=list)
    """The (event, base branch) of the tree edge into each node."""
    dead: list[bool] = field(default_factory=list)
    """The zone holds a deadlocked valuation."""
    idle: list[bool] = field(default_factory=list)
    """No deadline is active in the state: time may pass for ever."""
    fair_off: list[int] = field(default_factory=list)
    """Bit ``k``: fair instance ``k`` has no edge from the state (disabled by the data)."""
    fair_maybe: list[int] = field(default_factory=list)
    """Bit ``k``: some valuation of the zone may disable fair instance ``k``."""
    idle_unfair: list[bool] = field(default_factory=list)
    """Idling for ever here keeps some fair instance enabled (such a run is unfair)."""


def _enabled_forever(e: Edge, target_deadlines: Sequence[ClockAtom], bounds: Sequence[int]
                     ) -> bool:
    """Whether ``e`` stays able to fire as time passes without end in its source: its
    guard has lower bounds only, and its target's deadlines read only clocks it resets
    (with bounds that 0 meets)."""
    if any(a.op in (LE, LT) for a in e.guard):
        return False
    resets = set(e.resets)
    for a in target_deadlines:
        if a.clock not in resets:
            return False
        b = bounds[a.bound]
        if (a.op == LE and b < 0) or (a.op == LT and b <= 0):
            return False
    return True


class _Builder:
    """Builds the :class:`ZoneGraph` under a :class:`Limits` budget."""

    def __init__(self, model: TimedModel, budget: Budget, fair: Sequence[int],
                 progress: bool, symmetries: Sequence[Symmetry] = (),
                 before: int = 0) -> None:
        self.base = model
        self.progress = progress
        self.model = ProgressModel(model, twins=progress, symmetries=symmetries)
        canon = EnumeratingCanonizer(self.model.symmetries()) if symmetries else None
        self.reduced = canon is not None
        """Nodes are images of the states reached under the permutations: along a path
        of the graph a clock of one node is a permuted clock of the next, so which clock
        an edge resets or bounds says nothing of the run (the masks are left empty)."""
        self.limits = budget.limits
        self.before = before
        """The states the run's earlier graphs stored (the states limit is the run's)."""
        self.fair = list(fair)
        self.fair_bit = {e: 1 << k for k, e in enumerate(self.fair)}
        self.bounds, self.scale = scaled_bounds(self.model.bounds, self.model.values)
        self.budget = budget
        # The clock bounds (live clocks, each clock's largest constant) without local LU:
        # the graph is abstracted by Extra_M.
        live = clock_bounds(self.model, self.bounds, self.budget.derived(None), canon,
                            local=False)
        self.ts = ZoneTS(self.model, self.bounds, live, extrapolation=Extrapolation.M,
                         canonical=canon, labels=frozenset({LabelKind.DEADLOCK}),
                         max_memory_mb=budget.limits.max_memory_mb)
        self.dz = self.ts.dz
        self.pq: dict[State, list[tuple[bool, bool]]] = {}
        """``P`` and ``Q`` of every property instance, per discrete state."""


    def build(self) -> ZoneGraph:
        """Breadth-first over the zone graph (:meth:`ZoneTS.next`), every node stored once,
        keyed by :meth:`ZoneTS.key` (equality)."""
        g = ZoneGraph()
        index: dict[Hashable, int] = {}
        ts = self.ts
        queue: deque[int] = deque()

        def add(succ: Succ[dbm.Dbm], parent: int, via: tuple[int, int]) -> int:
            s, z = succ.state, succ.zone
            key = ts.key(s, z)
            got = index.get(key)
            if got is not None:
                if deadlocked(succ.labels):
                    g.dead[got] = True
                return got
            node = len(g.state)
            index[key] = node
            g.dead.append(deadlocked(succ.labels))
            g.state.append(s)
            g.zone.append(z)
            g.succ.append([])
            g.parent.append(parent)
            g.via.append(via)
            if s not in self.pq:
                # Evaluated as states are found, so that a fault of P or Q (a model
                # error) ends the run early.
                self.pq[s] = self.base.leadsto(s)  # type: ignore[attr-defined]
            queue.append(node)
            self.budget.count(self.before + len(g.state))
            return node

        for succ in ts.initial():
            if succ.status is Status.OK:  # (a timelocked initial state is safety's)
                add(succ, -1, (-1, -1))
        while queue:
            node = queue.popleft()
            s, z = g.state[node], g.zone[node]
            out: list[EdgeRec] = []
            for succ in ts.next(s, z):
                if succ.status is not Status.OK:
                    continue  # safety is checked first: a reachable assert was reported
                e = succ.edge
                assert e is not None
                branch = succ.branch
                br, twin = (branch // 2, branch % 2 == 1) if self.progress else (branch, False)
                t = add(succ, node, (e.event, br))
                if self.reduced:
                    out.append((t, e.event, br, twin, 0, 0))
                else:
                    out.append((t, e.event, br, twin, self._mask(e.resets),
                                self._mask([a.clock for a in e.guard if self._positive(a)])))
            g.succ[node] = out
            self._label(g, s, z, ts.edges(s))
        self.budget.count(self.before + len(g.state))
        return g

    @staticmethod
    def _mask(clocks: Sequence[int]) -> int:
        m = 0
        for c in clocks:
            m |= 1 << c
        return m

    def _positive(self, a: ClockAtom) -> bool:
        """Whether ``a`` bounds its clock below by a positive constant."""
        b = self.bounds[a.bound]
        return (a.op == GE and b > 0) or (a.op == GT and b > 0)

    def _label(self, g: ZoneGraph, s: State, z: dbm.Dbm, edges: Sequence[Edge]) -> None:
        """Deadlock, idling and the fair instances' enabledness of one node."""
        dz = self.dz
        base_edges = [e for k, e in enumerate(edges) if k % 2 == 0] if self.progress else edges
        frame = dz.frame(s)
        idle = not frame.deadlines
        g.idle.append(idle)
        off = 0
        maybe = 0
        unfair = False
        for e_id in self.fair:
            # An edge that breaks an assert never fires in a run: it does not count as
            # enabled (safety is checked first, so a reachable one was reported).
            mine = [e for e in base_edges if e.event == e_id and e.failure is None]
            bit = self.fair_bit[e_id]
            if not mine:
                off |= bit
                maybe |= bit
                continue
            whole = False
            for e in mine:
                tdl = dz.deadlines(e.target)
                if idle and _enabled_forever(e, tdl, self.bounds):
                    unfair = True
                if not whole and self._enables_all(frame, z, e, tdl):
                    whole = True
            if not whole:
                maybe |= bit
        g.fair_off.append(off)
        g.fair_maybe.append(maybe)
        g.idle_unfair.append(unfair)


    def _enables_all(self, frame: Frame, z: dbm.Dbm, e: Edge, tdl: Sequence[ClockAtom]
                     ) -> bool:
        """Whether ``e`` can fire from every valuation of ``z``: its guard holds there
        and its target's deadlines hold after its resets."""
        resets = set(e.resets)
        kept = [a for a in tdl if a.clock not in resets]
        if any(a.clock not in frame.pos for a in (*e.guard, *kept)):
            return False
        for a in tdl:
            b = self.bounds[a.bound]
            if a.clock in resets and ((a.op == LE and b < 0) or (a.op == LT and b <= 0)):
                return False
        got = self.dz.constrain(frame, z, (*e.guard, *kept))
        return got is not None and got == z


# ---- strongly connected components ---------------------------------------------------------


def _sccs(nodes: Sequence[int], succ: Sequence[Sequence[EdgeRec]], inside: Sequence[bool]
          ) -> Iterator[list[int]]:
    """Tarjan's components of the subgraph induced by ``inside`` (iteratively)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, i = work[-1]
            es = succ[v]
            while i < len(es) and not inside[es[i][0]]:
                i += 1
            if i < len(es):
                work[-1] = (v, i + 1)
                w = es[i][0]
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp: list[int] = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                yield comp


# ---- the check --------------------------------------------------------------------------------


class _Verdict(enum.Enum):
    """How sure a counterexample target is (lower is surer)."""

    CERTAIN = 1
    ZENO = 2
    """Fair, but maybe Zeno: the graph with the progress clock decides."""
    MAYBE = 3


_Bad = tuple[_Verdict, LassoKind, list[int] | None, int]
"""A counterexample target: its verdict, the lasso's kind, its SCC (for a cycle) and the
clock that proves time diverges along the cycle (-1: none needed or none found)."""


def _backward_reach(g: ZoneGraph, inside: Sequence[bool], targets: set[int]) -> set[int]:
    """The states from which ``targets`` can be reached without leaving ``inside``."""
    pred: dict[int, list[int]] = {}
    for v in range(len(g.state)):
        if inside[v]:
            for t, *_ in g.succ[v]:
                if inside[t]:
                    pred.setdefault(t, []).append(v)
    reach = set(targets)
    work = list(targets)
    while work:
        v = work.pop()
        for u in pred.get(v, ()):
            if u not in reach:
                reach.add(u)
                work.append(u)
    return reach


class LivenessChecker:
    """Checks every unbounded liveness property of a model over one zone graph."""

    def __init__(self, model: TimedModel, limits: Limits | None = None) -> None:
        self.model = model
        self.limits = limits or Limits()
        self.names: list[str] = list(getattr(model, "leadsto_names", ()))
        self.fair: list[int] = sorted(getattr(model, "fair_events", frozenset()))
        self.graph: ZoneGraph | None = None

    def run(self, only: str | None = None, symmetry: bool = True) -> LiveReport:
        """Check every property instance (or those of the property named ``only``);
        ``symmetry``: first on graphs reduced by the permutations that leave an instance
        unchanged (see :meth:`_by_symmetry`)."""
        names = [n for n in self.names if only is None or n == only
                 or n.split("[", 1)[0] == only]
        start = time.monotonic()
        budget = Budget(self.limits, start)
        stats = LiveStats()
        try:
            decided = self._by_symmetry(names, stats, budget) if symmetry else {}
            left = [n for n in names if n not in decided]
            g: ZoneGraph | None = None
            if left:
                builder = _Builder(self.model, budget, self.fair, progress=False,
                                   before=stats.zones)
                g = builder.build()
                stats.zones += len(g.state)
                stats.transitions += sum(len(x) for x in g.succ)
                pq = [builder.pq[s] for s in g.state]
            exact: tuple[ZoneGraph, list[list[tuple[bool, bool]]]] | None = None
            results: list[LiveResult] = []
            for k, name in enumerate(self.names):
                if name not in names:
                    continue
                if name in decided:
                    results.append(decided[name])
                    continue
                assert g is not None
                got = self._check(g, name, [p[k] for p in pq], exact_zeno=False)
                if got is None:
                    # A cycle that may be Zeno decides it: the graph with the progress
                    # clock tells (built once, for every property that needs it).
                    if exact is None:
                        pb = _Builder(self.model, budget, self.fair, progress=True,
                                      before=stats.zones)
                        gp = pb.build()
                        exact = (gp, [pb.pq[s] for s in gp.state])
                        stats.zones += len(gp.state)
                        stats.transitions += sum(len(x) for x in gp.succ)
                        stats.progress_clock = True
                    got = self._check(exact[0], name, [p[k] for p in exact[1]],
                                      exact_zeno=True)
                    assert got is not None
                results.append(got)
        except LimitHit as lim:
            stats.seconds = time.monotonic() - start
            stats.peak_memory_mb = peak_rss_mb()
            return LiveReport([LiveResult(n, LiveStatus.INCONCLUSIVE, lim.what)
                               for n in names], stats, lim.what)
        except ModelRuntimeError as err:
            stats.seconds = time.monotonic() - start
            return LiveReport([], stats, error=err.message)
        self.graph = g
        stats.seconds = time.monotonic() - start
        stats.peak_memory_mb = peak_rss_mb()
        return LiveReport(results, stats)

    def _by_symmetry(self, names: Sequence[str], stats: LiveStats,
                     budget: Budget) -> dict[str, LiveResult]:
        """The instances among ``names`` that hold, decided on reduced graphs.

        A permutation of the symmetric values that maps an instance onto itself is an
        automorphism of the timed model preserving the instance's ``P`` and ``Q``,
        deadlocks and idling: the graph whose nodes are the states reached, each
        replaced by an image under such permutations, has a path or a cycle exactly
        where the full graph has one (a cycle of the reduced graph, repeated, follows a
        run that cycles in the full one, through the same events and the same twin
        edges), so the instance holds on it exactly when it holds on the full graph;
        and the instances a permutation maps onto one another hold together.  Only
        without fairness (a permutation moves the fair instances' acceptance sets), and
        only where the reduced graphs are together smaller than the full one.  An
        instance found violated, or whose cycles may be Zeno, is left to the full graph
        (for its lasso, over the states as they are), and so is everything after a model
        error (the full graph reports it as the run meets it, not in a permuted state)."""
        orbits = getattr(self.model, "leadsto_orbits", None)
        if self.fair or orbits is None:
            return {}
        got = orbits()
        if not got:
            return {}
        index = {n: k for k, n in enumerate(self.names)}
        wanted: dict[int, list[str]] = {}
        for n in names:
            wanted.setdefault(got[index[n]][0], []).append(n)
        # The reduced graph of an instance is up to |its stabiliser| times smaller than
        # the full one (an instance found violated needs the full one too).
        if sum(1 / (len(got[f][1]) + 1) for f in wanted) > 0.75:
            return {}
        out: dict[str, LiveResult] = {}
        for first, members in wanted.items():
            b = _Builder(self.model, budget, self.fair, progress=False,
                         symmetries=got[first][1], before=stats.zones)
            try:
                g = b.build()
            except ModelRuntimeError:
                # Met in a permuted state: the full graph meets it as the run reaches it
                # and names the event instance as it is.
                return out
            stats.zones += len(g.state)
            stats.reduced_zones += len(g.state)
            stats.transitions += sum(len(x) for x in g.succ)
            res = self._check(g, self.names[first], [b.pq[s][first] for s in g.state],
                              exact_zeno=False, lasso=False)
            if res is not None and res.status is LiveStatus.HOLDS:
                out.update((n, LiveResult(n, LiveStatus.HOLDS)) for n in members)
                stats.reduced = True
        return out

    # ---- one property instance --------------------------------------------------------------
    def _check(self, g: ZoneGraph, name: str, pq: Sequence[tuple[bool, bool]],
               exact_zeno: bool, lasso: bool = True) -> LiveResult | None:
        """The outcome of one property instance; None when a cycle of this graph (without
        the progress clock, ``exact_zeno`` False) may be Zeno and that decides it.
        Without ``lasso`` a violation comes without its counterexample (a reduced graph's
        nodes are not a run)."""
        n = len(g.state)
        inside = [not q for _, q in pq]
        bad = self._dead_ends(g, inside)
        self._bad_cycles(g, inside, exact_zeno, bad)
        for want in (_Verdict.CERTAIN, _Verdict.ZENO, _Verdict.MAYBE):
            targets = {v for v, b in bad.items() if b[0] is want}
            if not targets:
                continue
            reach = _backward_reach(g, inside, targets)
            triggers = [v for v in range(n) if inside[v] and pq[v][0] and v in reach]
            if not triggers:
                continue
            if want is _Verdict.ZENO:
                return None
            if want is _Verdict.MAYBE:
                return LiveResult(name, LiveStatus.INCONCLUSIVE,
                                  "a cycle that never meets the response may or may not be"
                                  " fair: a fair event's clock guard decides whether it stays"
                                  " enabled along it, and zones do not tell")
            if not lasso:
                return LiveResult(name, LiveStatus.VIOLATED)
            u = min(triggers, key=lambda v: self._depth(g, v))
            return self._violation(g, name, u, inside, bad, targets)
        return LiveResult(name, LiveStatus.HOLDS)

    @staticmethod
    def _dead_ends(g: ZoneGraph, inside: Sequence[bool]) -> dict[int, _Bad]:
        """The states outside the response where every run ends: deadlocks, and states
        where time may pass for ever with no fair event enabled."""
        bad: dict[int, _Bad] = {}
        for v in range(len(g.state)):
            if not inside[v]:
                continue
            if g.dead[v]:
                bad[v] = (_Verdict.CERTAIN, LassoKind.DEADLOCK, None, -1)
            elif g.idle[v] and not g.idle_unfair[v]:
                bad[v] = (_Verdict.CERTAIN, LassoKind.IDLE, None, -1)
        return bad

    def _bad_cycles(self, g: ZoneGraph, inside: Sequence[bool], exact_zeno: bool,
                    bad: dict[int, _Bad]) -> None:
        """Add to ``bad`` the states of every non-trivial SCC outside the response that
        may carry a fair, time-divergent run (the strongest verdict per state wins)."""
        n = len(g.state)
        for comp in _sccs([v for v in range(n) if inside[v]], g.succ, inside):
            if len(comp) == 1 and not any(t == comp[0] for t, *_ in g.succ[comp[0]]):
                continue
            found = self._cycle_verdict(g, comp, exact_zeno)
            if found is None:
                continue
            verdict, proof = found
            for v in comp:
                if v not in bad or bad[v][0].value > verdict.value:
                    bad[v] = (verdict, LassoKind.CYCLE, comp, proof)

    def _cycle_verdict(self, g: ZoneGraph, comp: list[int],
                       exact_zeno: bool) -> tuple[_Verdict, int] | None:
        """Whether the SCC ``comp`` carries a fair, non-Zeno run, and the clock whose
        reset and lower bound prove time diverges along it (-1: a twin edge does, or
        nothing does); None when it carries none."""
        members = set(comp)
        twin = False
        fired = off = maybe = resets = lower = 0
        for v in comp:
            off |= g.fair_off[v]
            maybe |= g.fair_maybe[v]
            for t, ev, _, tw, rs, lo in g.succ[v]:
                if t in members:
                    twin = twin or tw
                    fired |= self._bit(ev)
                    resets |= rs
                    lower |= lo
        full = (1 << len(self.fair)) - 1
        if (fired | off) == full:
            verdict = _Verdict.CERTAIN
        elif (fired | maybe) == full:
            verdict = _Verdict.MAYBE
        else:
            return None
        # Time diverges along a cycle through a twin edge (progress clock), or through
        # an edge resetting a clock and one requiring it to be at least c > 0.
        if twin:
            return verdict, -1
        both = resets & lower
        if both:
            return verdict, (both & -both).bit_length() - 1
        if exact_zeno:
            return None  # every run along it is Zeno
        return _Verdict.ZENO, -1

    def _bit(self, ev: int) -> int:
        try:
            return 1 << self.fair.index(ev)
        except ValueError:
            return 0

    @staticmethod
    def _depth(g: ZoneGraph, v: int) -> int:
        d = 0
        while g.parent[v] >= 0:
            v = g.parent[v]
            d += 1
        return d

    # ---- the lasso -------------------------------------------------------------------------
    def _violation(self, g: ZoneGraph, name: str, u: int, inside: Sequence[bool],
                   bad: dict[int, _Bad],
                   targets: set[int]) -> LiveResult:
        stem = self._tree_path(g, u)
        mid = self._bfs(g, u, lambda v: v in targets, lambda e: inside[e[0]])
        assert mid is not None
        end = mid[-1][0] if mid else u
        _, kind, comp, proof = bad[end]
        cycle: list[EdgeRec] = []
        if kind is LassoKind.CYCLE:
            assert comp is not None
            cycle = self._cycle(g, end, set(comp), proof)
        steps: list[tuple[int, int, int]] = [(v, ev, br) for v, ev, br in stem]
        steps += [(e[0], e[1], e[2]) for e in mid]
        loop = len(steps)
        steps += [(e[0], e[1], e[2]) for e in cycle]
        path = [PathStep(g.state[v], ev, br, None) for v, ev, br in steps]
        trace = concrete(self.model, path)
        lasso = Lasso(kind, trace, loop, len(stem) - 1)
        msg = {
            LassoKind.CYCLE: "the response never comes: the run repeats a cycle for ever",
            LassoKind.IDLE: "the response never comes: the run waits for ever in a state"
                            " where no deadline is active",
            LassoKind.DEADLOCK: "the response never comes: the run ends in a deadlock",
        }[kind]
        return LiveResult(name, LiveStatus.VIOLATED, msg, lasso)

    @staticmethod
    def _tree_path(g: ZoneGraph, v: int) -> list[tuple[int, int, int]]:
        """The breadth-first tree's path to ``v``: (node, event, base branch) steps."""
        out: list[tuple[int, int, int]] = []
        while v >= 0:
            ev, br = g.via[v]
            out.append((v, ev, br))
            v = g.parent[v]
        out.reverse()
        return out

    @staticmethod
    def _bfs(g: ZoneGraph, start: int, goal_node: object, allowed: object,
             goal_edge: object = None) -> list[EdgeRec] | None:
        """A shortest path of edges from ``start`` (through edges ``allowed`` accepts)
        to a node ``goal_node`` accepts, or ending with an edge ``goal_edge`` accepts."""
        assert callable(goal_node) and callable(allowed)
        if goal_edge is None and goal_node(start):
            return []
        prev: dict[int, tuple[int, EdgeRec] | None] = {start: None}
        queue: deque[int] = deque([start])

        def unwind(v: int, last: EdgeRec | None) -> list[EdgeRec]:
            out: list[EdgeRec] = [] if last is None else [last]
            while True:
                got = prev[v]
                if got is None:
                    break
                v, e = got
                out.append(e)
            out.reverse()
            return out

        while queue:
            v = queue.popleft()
            for e in g.succ[v]:
                if not allowed(e):
                    continue
                if goal_edge is not None and callable(goal_edge) and goal_edge(v, e):
                    return unwind(v, e)
                t = e[0]
                if t in prev:
                    continue
                prev[t] = (v, e)
                if goal_edge is None and goal_node(t):
                    return unwind(t, None)
                queue.append(t)
        return None

    def _cycle(self, g: ZoneGraph, c: int, comp: set[int], proof: int) -> list[EdgeRec]:
        """A cycle from ``c`` inside ``comp`` along which time diverges (through a twin
        edge, or with ``proof`` a clock: through an edge resetting it, then one bounding
        it below by a positive constant) and, for every fair instance, through an edge
        firing it or a state where the data disable it."""
        def allowed(e: EdgeRec) -> bool:
            return e[0] in comp

        def never(v: int) -> bool:
            return False

        cur = c
        out: list[EdgeRec] = []
        if proof < 0:
            seg = self._bfs(g, cur, never, allowed, lambda v, e: e[3])
            assert seg is not None
            out += seg
        else:
            bit = 1 << proof
            for want in (5, 4):  # an edge bounding the clock below, then a reset of it
                if any(e[want] & bit for e in out):
                    continue
                seg = self._bfs(g, out[-1][0] if out else cur, never, allowed,
                                lambda v, e, w=want: bool(e[w] & bit))
                assert seg is not None
                out += seg
        cur = out[-1][0]
        for k, ev in enumerate(self.fair):
            bit = 1 << k
            if any(e[1] == ev for e in out) or any(
                    g.fair_off[v] & bit for v in [c, *(e[0] for e in out)]):
                continue
            best: list[EdgeRec] | None = None
            if any(g.fair_off[v] & bit for v in comp):
                best = self._bfs(g, cur, lambda v, b=bit: bool(g.fair_off[v] & b), allowed)
            fire = self._bfs(g, cur, never, allowed, lambda v, e, x=ev: e[1] == x)
            if best is None or (fire is not None and len(fire) < len(best)):
                best = fire
            assert best is not None
            out += best
            if best:
                cur = best[-1][0]
        back = self._bfs(g, cur, lambda v: v == c, allowed)
        if back is None or (not back and not out):
            back = self._bfs(g, cur, never, allowed, lambda v, e: e[0] == c)
        assert back is not None
        out += back
        return out


def check_liveness(model: TimedModel, limits: Limits | None = None,
                   only: str | None = None, symmetry: bool = True) -> LiveReport:
    """Check the unbounded liveness properties of ``model`` (see the module docstring);
    ``symmetry``: reduce by the permutations that leave a property instance unchanged
    (the verdicts are the same, see :meth:`LivenessChecker._by_symmetry`)."""
    return LivenessChecker(model, limits).run(only, symmetry)

"""One random run of a timed model: the stochastic semantics of ``kvrace simulate``.

The model is a network of event instances racing in dense time (a generalised
semi-Markov process over the zone semantics of :mod:`checker.model.interface`):

* **An edge's own window.**  In a discrete state, an edge (an event instance and one
  convex branch of its guard) may fire after a delay ``d`` inside its *own window*
  ``[lo, hi]``: ``lo`` from its guard's lower bounds (``x >= B``), ``hi`` from its
  guard's upper bounds (``x <= B``), from the deadlines of the state that firing it
  ends (a deadline active here that is not active in its target, or whose clock it
  resets — e.g. ``land`` ends ``in_flight``), and from deadlines of its target that
  are not active here.  Deadlines that stay active (somebody else's) are *not* part
  of an edge's own window: they cap time for everyone (below), they do not hurry
  unrelated events.
* **A sampled time per edge.**  When an edge's window first becomes non-empty, it
  draws a firing time: uniform on ``[lo, hi]`` when ``hi`` is finite, ``lo`` plus an
  exponential delay of rate ``rate`` (default 1 per time unit) when it is not; or,
  when the window's bound is a parameter given a distribution (``--delay
  NAME=DIST``), from that distribution (below).  The edge keeps its time across
  other events as long as it stays enabled, its time stays inside its window, and
  no clock of its guard or its own deadlines is reset; otherwise it draws again.
  So a write posted at ``t`` with a sampled flight time lands at ``t`` plus that
  time whatever else happens meanwhile.
* **The race.**  The edge with the earliest time fires (ties, which have
  probability 0 except for point windows, are broken uniformly at random).  Time
  may not pass the state's deadlines: if no edge's time falls before the earliest
  deadline, time stops there and one of the edges enabled at that instant fires,
  chosen uniformly; if none is, the run is a deadlock (time-lock) — the property
  ``deadlock``.  With no deadline and no edge, nothing can happen any more: the run
  ends (``quiescent``).
* **User distributions.**  ``--delay NAME=DIST`` names a timing parameter.  An edge
  whose own window is bounded above by an atom ``x <= NAME`` (or ``x < NAME``) —
  a guard's or a deadline's — takes the *value of clock x when it fires* from
  ``DIST``, conditioned on the window; if its window has no such upper bound but a
  lower bound ``x >= NAME``, that one is used.  ``T_flight=lognormal(-3.5, 1)``
  thus makes the time a write spends on the wire (``since_post <= T_flight``)
  lognormal, truncated at ``T_flight``.  ``--delay actor.event=DIST`` names an event
  instead: every instance of it takes its *delay since it drew its time* (since its
  window opened) from ``DIST``, conditioned on the window; an event's distribution
  wins over a parameter's.  A distribution with no probability mass in the window
  falls back to the default (counted in :attr:`Simulator.fallbacks`).
* **Properties.**  A run ends at its first violation: an ``assert`` of the edge
  that fires, an invariant of a state entered, a bounded response whose observer
  clock passes its bound while the run stays in a state, or a deadlock.  It also
  ends at the time bound, at the step bound, or when quiescent.

Strict and non-strict bounds are treated alike except in point windows: a sampled
time hits a bound with probability 0.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from checker.limits import Budget
from checker.model.interface import GE, GT, LT, Edge, Hazard, ModelRuntimeError, State, TimedModel
from checker.simulate.distributions import Distribution

INF = math.inf
_EPS = 1e-9

VIOLATION, QUIESCENT, TIME_BOUND, STEP_BOUND = "violation", "quiescent", "time bound", "step bound"
ENDS = (VIOLATION, QUIESCENT, TIME_BOUND, STEP_BOUND)


@dataclass(frozen=True)
class SimConfig:
    """How runs are drawn and when they stop."""

    delays: tuple[tuple[str, Distribution], ...] = ()
    """User distributions, by timing parameter name or event label (``actor.event``)."""
    rate: float = 1.0
    """Rate of the exponential delay of an edge whose window has no upper bound."""
    time_bound: float | None = None
    """Runs stop at this model time (violations after it are not counted)."""
    max_steps: int = 10_000
    """Runs stop after this many events."""


@dataclass(frozen=True)
class RunResult:
    """How one run ended; ``path`` (kept for violating runs only) is the initial state
    then each ``(edge, target state, time)`` fired."""

    index: int
    end: str
    prop: str | None
    message: str | None
    time: float
    steps: int
    path: tuple[tuple[Edge | None, State, float], ...] | None = None


@dataclass
class _EdgeInfo:
    edge: Edge
    key: tuple[object, ...]
    lowers: tuple[tuple[int, int, bool], ...]
    """(clock, bound index, strict): ``clock >= bound`` (``>`` when strict)."""
    uppers: tuple[tuple[int, int, bool], ...]
    """The own upper bounds: ``clock <= bound`` (``<`` when strict)."""
    watch: frozenset[int]
    never: bool
    dist: Distribution | None
    dist_clock: int


@dataclass
class _StateInfo:
    edges: list[_EdgeInfo]
    deadlines: list[tuple[int, int, bool]]
    violation: tuple[str, str] | None
    hazards: list[tuple[Hazard, tuple[tuple[int, int, bool], ...],
                        tuple[tuple[int, int, bool], ...]]]


@dataclass
class _Candidate:
    tau: float
    info: _EdgeInfo
    lo: float
    hi: float


def _split(atoms: object) -> tuple[list[tuple[int, int, bool]], list[tuple[int, int, bool]]]:
    lows: list[tuple[int, int, bool]] = []
    ups: list[tuple[int, int, bool]] = []
    for a in atoms:  # type: ignore[attr-defined]
        if a.op in (GE, GT):
            lows.append((a.clock, a.bound, a.op == GT))
        else:
            ups.append((a.clock, a.bound, a.op == LT))
    return lows, ups


@dataclass
class Simulator:
    """Draws runs of ``model`` under the semantics of the module docstring."""

    model: TimedModel
    config: SimConfig
    fallbacks: int = 0
    budget: Budget | None = None
    """The time limit, checked at every step of a run (one run may be long)."""
    _cache: dict[State, _StateInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        values = self.model.values
        self.bound_values = [float(b.evaluate(values)) for b in self.model.bounds]
        dists: Mapping[str, Distribution] = dict(self.config.delays)
        self.bound_dist: list[Distribution | None] = []
        for b in self.model.bounds:
            name = b.terms[0][0] if (len(b.terms) == 1 and b.terms[0][1] == 1
                                     and b.const == 0) else None
            self.bound_dist.append(dists.get(name) if name is not None else None)
        self.event_dist: list[Distribution | None] = [
            dists.get(label.split("(")[0]) for label in self.model.event_names]
        self.n_clocks = len(self.model.clock_names)
        self._initial = self.model.initial_states()[0]
        for a in self.model.deadlines(self._initial):
            v = self.bound_values[a.bound]
            if v < 0 or (a.op == LT and v <= 0):
                raise ModelRuntimeError(
                    "the initial state breaks a deadline: time cannot even start")

    # ---- per-state analysis (cached) ---------------------------------------------------------
    def info(self, s: State) -> _StateInfo:
        got = self._cache.get(s)
        if got is not None:
            return got
        m = self.model
        bv = self.bound_values
        here = list(m.deadlines(s))
        here_set = {(a.clock, a.op, a.bound) for a in here}
        edges: list[_EdgeInfo] = []
        for e in m.edges(s):
            lows, ups = _split(e.guard)
            resets = set(e.resets)
            never = False
            try:
                there = m.deadlines(e.target)
            except ModelRuntimeError:
                there = []  # entering the target faults: reported when it is entered
            there_set = {(a.clock, a.op, a.bound) for a in there}
            for a in here:
                if (a.clock, a.op, a.bound) not in there_set or a.clock in resets:
                    ups.append((a.clock, a.bound, a.op == LT))
            for a in there:
                if a.clock in resets:
                    b = bv[a.bound]
                    # A violating edge fires whatever its target's deadlines say.
                    if e.failure is None and (b < 0 or (a.op == LT and b <= 0)):
                        never = True
                elif (a.clock, a.op, a.bound) not in here_set:
                    ups.append((a.clock, a.bound, a.op == LT))
            dist = self.event_dist[e.event]
            dist_clock = -1  # an event's distribution: the delay since its time was drawn
            if dist is None:
                for c, b, _ in [*ups, *lows]:
                    if self.bound_dist[b] is not None:
                        dist, dist_clock = self.bound_dist[b], c
                        break
            key = (e.event, tuple((a.clock, a.op, a.bound) for a in e.guard))
            watch = frozenset(c for c, _, _ in [*lows, *ups])
            edges.append(_EdgeInfo(e, key, tuple(lows), tuple(ups), watch, never, dist,
                                   dist_clock))
        viol = m.violations(s)
        hazards = []
        for h in m.hazards(s):
            hl, hu = _split(h.atoms)
            hazards.append((h, tuple(hl), tuple(hu)))
        info = _StateInfo(edges, [(a.clock, a.bound, a.op == LT) for a in here],
                          (viol[0].property, viol[0].message) if viol else None, hazards)
        if len(self._cache) > 200_000:
            self._cache.clear()
        self._cache[s] = info
        return info

    # ---- one run ----------------------------------------------------------------------------
    def _window(self, lows: tuple[tuple[int, int, bool], ...],
                ups: tuple[tuple[int, int, bool], ...], clock: list[float], now: float
                ) -> tuple[float, float, bool]:
        """``[lo, hi]`` of delays satisfying the atoms, and whether it is empty."""
        bv = self.bound_values
        lo, lo_strict = 0.0, False
        for c, b, strict in lows:
            x = bv[b] - (now - clock[c])
            if x > lo or (x == lo and strict):
                lo, lo_strict = x, strict
        hi, hi_strict = INF, False
        for c, b, strict in ups:
            x = bv[b] - (now - clock[c])
            if x < hi or (x == hi and strict):
                hi, hi_strict = x, strict
        empty = hi < lo - _EPS or (abs(hi - lo) <= _EPS and (lo_strict or hi_strict))
        return lo, max(hi, lo), empty

    def _sample(self, rng: random.Random, ei: _EdgeInfo, lo: float, hi: float,
                clock: list[float], now: float) -> float:
        if ei.dist is not None:
            v = 0.0 if ei.dist_clock < 0 else now - clock[ei.dist_clock]
            x = ei.dist.sample_in(rng, v + lo, v + hi)
            if x is not None:
                return min(max(x - v, lo), hi)
            self.fallbacks += 1
        u = rng.random()
        if math.isinf(hi):
            return lo - math.log1p(-u) / self.config.rate
        return lo + u * (hi - lo)

    def run(self, index: int, rng: random.Random, keep_path: bool = True,
            every_path: bool = False) -> RunResult:
        """Draw run ``index`` with ``rng``; the path is returned only if it violates
        (with ``every_path``, whatever the end)."""
        cfg = self.config
        bound = INF if cfg.time_bound is None else cfg.time_bound
        s = self._initial
        clock = [0.0] * self.n_clocks
        now = 0.0
        steps = 0
        path: list[tuple[Edge | None, State, float]] = [(None, s, 0.0)]
        sched: dict[tuple[object, ...], float] = {}
        last_resets: frozenset[int] = frozenset()

        def done(end: str, prop: str | None = None, message: str | None = None,
                 *, at: float) -> RunResult:
            keep = keep_path and (end == VIOLATION or every_path)
            return RunResult(index, end, prop, message, at, steps,
                             tuple(path) if keep else None)

        budget = self.budget
        while True:
            if budget is not None:
                budget.check_time()
            info = self.info(s)
            if info.violation is not None:
                return done(VIOLATION, *info.violation, at=now)
            sched, chosen, delay = self._next_event(rng, info, sched, last_resets, clock, now)
            # Bounded responses broken while the run stays here.
            for h, hl, hu in info.hazards:
                lo, _, empty = self._window(hl, hu, clock, now)
                if not empty and lo < delay and now + lo <= bound:
                    return done(VIOLATION, h.property, h.message, at=now + lo)
            if chosen is None:
                end, prop, message, at = self._stuck(delay, now, bound)
                return done(end, prop, message, at=at)
            if now + delay > bound:
                return done(TIME_BOUND, at=bound)
            if steps >= cfg.max_steps:
                return done(STEP_BOUND, at=now)
            now += delay
            steps += 1
            e = chosen.info.edge
            sched.pop(chosen.info.key, None)
            if keep_path:
                path.append((e, e.target, now))
            if e.failure is not None:
                return done(VIOLATION, "assert", e.failure, at=now)
            for c in e.resets:
                clock[c] = now
            last_resets = frozenset(e.resets)
            s = e.target

    def _next_event(self, rng: random.Random, info: _StateInfo,
                    sched: dict[tuple[object, ...], float], last_resets: frozenset[int],
                    clock: list[float], now: float
                    ) -> tuple[dict[tuple[object, ...], float], _Candidate | None, float]:
        """The new schedule of the edges that may fire (a time kept from the previous
        state while its window holds and no clock it watches was reset, else drawn
        again), the edge that fires (the earliest, ties broken at random; at a deadline,
        one forced to fire there) and the delay before it."""
        bv = self.bound_values
        dmax = INF
        for c, b, _ in info.deadlines:
            dmax = min(dmax, bv[b] - (now - clock[c]))
        dmax = max(dmax, 0.0)
        new_sched: dict[tuple[object, ...], float] = {}
        cands: list[_Candidate] = []
        for ei in info.edges:
            if ei.never:
                continue
            lo, hi, empty = self._window(ei.lowers, ei.uppers, clock, now)
            if empty:
                continue
            tau = sched.get(ei.key)
            if (tau is None or not ei.watch.isdisjoint(last_resets)
                    or not lo - _EPS <= tau - now <= hi + _EPS):
                tau = now + self._sample(rng, ei, lo, hi, clock, now)
            new_sched[ei.key] = tau
            cands.append(_Candidate(tau, ei, lo, hi))
        firing = [c for c in cands if c.tau - now <= dmax + _EPS]
        chosen: _Candidate | None = None
        if firing:
            first = min(c.tau for c in firing)
            ties = [c for c in firing if c.tau == first]
            chosen = ties[0] if len(ties) == 1 else ties[rng.randrange(len(ties))]
            delay = chosen.tau - now
        elif not math.isinf(dmax):
            forced = [c for c in cands if c.lo <= dmax + _EPS and c.hi >= dmax - _EPS]
            delay = dmax
            if forced:
                chosen = forced[0] if len(forced) == 1 else forced[rng.randrange(len(forced))]
        else:
            delay = INF
        return new_sched, chosen, delay

    @staticmethod
    def _stuck(delay: float, now: float, bound: float
               ) -> tuple[str, str | None, str | None, float]:
        """How a run ends when no event fires: quiescent, at the time bound, or in a
        deadlock."""
        if math.isinf(delay):
            return QUIESCENT, None, None, now
        if now + delay > bound:
            return TIME_BOUND, None, None, bound
        return VIOLATION, "deadlock", "no event can fire and time cannot pass", now + delay

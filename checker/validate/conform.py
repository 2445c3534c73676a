"""Timed trace validation: is a log a run of the model?

The monitor tracks the set of symbolic states (a discrete state and a zone) that
the model can be in after the lines of the log read so far, as UPPAAL TRON does:

* the zones carry one extra clock, ``now``, that no event resets: the time since a
  reference instant ``ref`` (ticks since the model started).  An observation at
  ``t`` with uncertainty ``e`` constrains ``now`` to ``[t - e, t + e] - ref`` at the
  instant its event fires; afterwards ``ref`` moves up to ``t - e`` and every zone's
  ``now`` is shifted by the same amount, so the constants in the zones stay of the
  size of the gaps between lines, not of the log's length;
* between two observations the model may fire any number of *unobservable* events
  (events the log does not record); they are explored up to the latest instant the
  next observation allows, with zone inclusion so the set stays small;
* an observable event may happen only where the log says it does: the successor
  set of a line is the set of the observed event's edges from every state, inside
  the observation's window.  An empty set is a deviation;
* each symbolic state carries the first property its run broke: an ``assert`` of an
  edge, an invariant of a state entered, or a bounded response overdue when the run
  leaves the state (the zone of that instant is split at the bound; judging the
  time-elapsed zone would call overdue a response the next line shows in time) or
  still pending at the last line.  A ``run`` line ends a run: its verdict is kept.

Only the set after the current line is kept (no history unless a diagram is asked
for), so time is linear in the log's length and memory does not grow with it.

Zones are DBMs over every clock of the model plus ``now`` (no clock reduction: a
zone must not forget what a later line may ask), abstracted by the model's largest
constant on the model's clocks (Extra_M; ``now`` is kept exact), without symmetry
reduction (a log names requests).  Time is counted in ticks: the model's common
denominator times :data:`TICKS_PER_SECOND`; a timestamp finer than a tick widens
its window outward to whole ticks, never inward.
"""

from __future__ import annotations

import difflib
import enum
import math
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from checker.domains import backend, dbm
from checker.errors import UsageError
from checker.limits import Budget
from checker.model.compiled import SpecModel
from checker.model.interface import (
    MAX_SCALED_BOUND,
    NEGATED_OP,
    ClockAtom,
    Edge,
    Hazard,
    LinExpr,
    Param,
    ParamConstraint,
    State,
    Symmetry,
    Violation,
    scaled_bounds,
)
from checker.model.trace import fmt_time
from checker.results import PropertyKind
from checker.semantics.clockbounds import Liveness
from checker.semantics.ts import Extrapolation, Label, LabelKind, ZoneTS
from checker.semantics.zones import Frame
from checker.validate.log import Entry, LogError, Observation, RunBreak, clip

TICKS_PER_SECOND = 1_000_000
"""The finest time step of a log: a microsecond (times the model's own denominator)."""

NOW_LIMIT = backend.MAX_C_BOUND // 8
"""The largest constant (in ticks) the ``now`` clock may be compared with: the longest
gap between two lines (or from the start to the first line) a log may have."""

NOW = "now"
"""The name of the extra clock."""


class Outcome(str, enum.Enum):
    """What validating a log shows (the ``conformance`` word of the JSON output)."""

    CONFORMS = "conforms"
    """Every line is a step of some run of the model."""
    DEVIATES = "deviates"
    """A line is not possible after the lines before it."""

    def __str__(self) -> str:
        return self.value


class Certainty(str, enum.Enum):
    """How surely the log contains a property violation."""

    CERTAIN = "certain"
    """Every run of the model consistent with the log breaks the property."""
    POSSIBLE = "possible"
    """Some runs consistent with the log break it, others do not."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Broken:
    """A property some run consistent with the log breaks, and where."""

    line: int
    """The log line whose event (or the unobserved events before it) breaks it."""
    kind: PropertyKind
    property: str
    """``assert in decode.land(A, 1)``, ``invariant NAME``, ``property NAME[A]``."""
    message: str
    event: str
    """The event instance that breaks it (or enters the state that does)."""
    name: str = "assert"
    """The property as a trace names it (``assert``, or the property's label)."""
    context: str = ""
    """How the line breaks it, for the reader: ``entering it: EVENT`` (an invariant),
    ``overdue when EVENT fired`` or ``overdue at the log's end`` (a bounded response);
    empty for an ``assert``."""


@dataclass(frozen=True)
class Possible:
    """An observable event instance that could have come next, and when."""

    event: str
    earliest: Fraction
    latest: Fraction | None
    """None: no upper bound up to the horizon looked at."""


@dataclass(frozen=True)
class Deviation:
    """The first line that is not a step of the model."""

    line: int
    observation: Observation
    matched: int
    """The last line of the longest matching prefix (0: none)."""
    possible: tuple[Possible, ...]
    horizon: Fraction
    """The latest time the possible events were looked for."""


@dataclass
class Step:
    """One step of a run the log is consistent with (kept only for a diagram)."""

    event: int
    state: State
    line: int
    """The log line that observed it; 0 for an unobserved event."""
    time: Fraction | None
    """The observed time; None for an unobserved event."""


@dataclass
class Report:
    """The result of validating a log."""

    outcome: Outcome
    lines: int = 0
    """Lines read."""
    observations: int = 0
    runs: int = 1
    matched: int = 0
    """The last line matched."""
    deviation: Deviation | None = None
    broken: Broken | None = None
    certainty: Certainty | None = None
    max_states: int = 0
    """The most symbolic states tracked at once."""
    transitions: int = 0
    path: list[Step] | None = None
    """With ``keep_path``: the steps of a run consistent with the log (a violating one
    when there is one)."""
    path_start: Fraction = Fraction(0)
    """The log time at which the run of :attr:`path` starts."""
    path_end: Fraction | None = None
    """The time of the last line read of the run of :attr:`path` (unobserved events
    after its last observed one happened no later)."""
    observable: tuple[str, ...] = field(default_factory=tuple)


class _NowModel:
    """The model with one more clock (``now``) that no event resets and no deadline
    reads; every other question is the model's."""

    def __init__(self, model: SpecModel, skewed: Sequence[str] = ()) -> None:
        self.inner = model
        self.clock_names: list[str] = [*model.clock_names, NOW,
                                       *(f"{NOW}@{a}" for a in skewed)]

    @property
    def name(self) -> str:
        """The model's name."""
        return self.inner.name

    @property
    def event_names(self) -> Sequence[str]:
        """The model's event instances."""
        return self.inner.event_names

    @property
    def bounds(self) -> Sequence[LinExpr]:
        """The model's clock bounds."""
        return self.inner.bounds

    @property
    def params(self) -> dict[str, Param]:
        """The model's parameters."""
        return dict(self.inner.params)

    @property
    def param_constraints(self) -> Sequence[ParamConstraint]:
        """The model's ``assume`` constraints."""
        return self.inner.param_constraints

    @property
    def values(self) -> dict[str, Fraction]:
        """The model's parameter values."""
        return dict(self.inner.values)

    def initial_states(self) -> Sequence[State]:
        """The model's initial states."""
        return self.inner.initial_states()

    def edges(self, s: State) -> Sequence[Edge]:
        """The model's edges."""
        return self.inner.edges(s)

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The model's deadlines."""
        return self.inner.deadlines(s)

    def violations(self, s: State) -> Sequence[Violation]:
        """The model's invariants broken."""
        return self.inner.violations(s)

    def hazards(self, s: State) -> Sequence[Hazard]:
        """The model's hazards."""
        return self.inner.hazards(s)

    def symmetries(self) -> Sequence[Symmetry]:
        """None: a log names values, so no two are interchangeable."""
        return ()

    def describe(self, s: State) -> dict[str, object]:
        """The model's description of ``s``."""
        return self.inner.describe(s)


class _Node:
    """A tracked symbolic state: discrete state, zone (over the model's clocks and
    ``now``), the violation its run carries (-1: none) and, for a diagram, its run."""

    __slots__ = ("alive", "state", "steps", "viol", "zone")

    def __init__(self, state: State, zone: dbm.Dbm, viol: int,
                 steps: tuple[object, ...] | None) -> None:
        self.state = state
        self.zone = zone
        self.viol = viol
        self.steps = steps
        self.alive = True


class _Store:
    """Nodes by (state, violation), kept only when no other node includes them."""

    def __init__(self, includes: object, n: int) -> None:
        self.includes = includes
        self.n = n
        self.by_key: dict[tuple[State, int], list[_Node]] = {}
        self.count = 0

    def add(self, node: _Node) -> bool:
        """Store ``node`` unless an included one is there; drop those it includes."""
        key = (node.state, node.viol)
        got = self.by_key.get(key)
        inc = self.includes
        n = self.n
        z = node.zone
        if got is None:
            self.by_key[key] = [node]
            self.count += 1
            return True
        for old in got:
            if inc(old.zone, z, n):  # type: ignore[operator]
                return False
        kept = []
        for old in got:
            if inc(z, old.zone, n):  # type: ignore[operator]
                old.alive = False
                self.count -= 1
            else:
                kept.append(old)
        kept.append(node)
        self.by_key[key] = kept
        self.count += 1
        return True

    def nodes(self) -> list[_Node]:
        """Every stored node, in insertion order of their keys."""
        return [nd for group in self.by_key.values() for nd in group]


class EventIndex:
    """The model's event instances by ``actor.event`` and argument values."""

    def __init__(self, model: SpecModel) -> None:
        self.model = model
        self.params: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}
        self.instances: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self._matches: dict[tuple[str, tuple[tuple[str, str], ...]], frozenset[int]] = {}
        for e in range(len(model.event_names)):
            ev, idx = model.instance(e)
            label = ev.label
            if label not in self.params:
                self.params[label] = tuple(
                    (name, tuple(ft.show(v) for ft in (ft,) for v in ft.values()))
                    for name, ft in ev.params)
            values = {name: ft.show(v) for (name, ft), v in zip(ev.params, idx, strict=True)}
            self.instances.setdefault(label, []).append((e, values))

    def names(self) -> list[str]:
        """Every event's ``actor.event``, in declaration order."""
        return list(self.instances)

    def check_name(self, name: str, file: str, line: int) -> None:
        """Refuse an event the spec does not declare (with a did-you-mean)."""
        if name in self.instances:
            return
        close = (difflib.get_close_matches(name, self.names(), n=1, cutoff=0.6)
                 if len(name) <= 200 else [])
        hint = f"; did you mean `{close[0]}`?" if close else (
            f" (it declares: {', '.join(self.names())})")
        raise LogError(file, line, f"unknown event `{clip(name)}`: the spec declares no such"
                       f" event{hint}")

    def match(self, obs: Observation, file: str) -> frozenset[int]:
        """The instances an observation may be: every one whose arguments agree with
        the ones the line gives."""
        key = (obs.event, obs.args)
        got = self._matches.get(key)
        if got is None:
            got = self._match(obs, file)
            if len(self._matches) > 4096:
                self._matches.clear()
            self._matches[key] = got
        return got

    def _match(self, obs: Observation, file: str) -> frozenset[int]:
        self.check_name(obs.event, file, obs.line)
        declared = dict(self.params[obs.event])
        for name, value in obs.args:
            if name not in declared:
                names = ", ".join(declared) or "none"
                raise LogError(file, obs.line, f"`{obs.event}` has no parameter `{clip(name)}`"
                               f" (its parameters: {names})")
            if value not in declared[name]:
                raise LogError(file, obs.line, f"`{clip(value)}` is not a value of parameter"
                               f" `{name}` of `{obs.event}` (its values:"
                               f" {', '.join(declared[name])})")
        given = dict(obs.args)
        return frozenset(e for e, values in self.instances[obs.event]
                         if all(values[k] == v for k, v in given.items()))


class _ObservedTS(ZoneTS):
    """The model's zone graph over its clocks and ``now``, stepped edge by edge for the
    instances a caller allows (an ``assert`` that fails is a step too: the log goes on,
    and the run carries the violation)."""

    m: list[int]
    """The constant of each DBM index for Extra_M (every clock is live in every state)."""

    def steps(self, state: State, zone: dbm.Dbm, allowed: frozenset[int],
              hazards: Sequence[Hazard] = ()
              ) -> Iterator[tuple[Edge, State, dbm.Dbm, Label | None]]:
        """The successors of (state, zone) by the allowed instances: the edge, the
        target, its extrapolated zone, and the property the step breaks (if any).

        ``hazards`` (the bounded responses ``state`` is pending on) are judged at the
        instant the edge fires, when the run leaves ``state``: a hazard is an observer
        clock past its bound, which only grows while the run stays, so the run met it
        exactly when its valuation at that instant does.  The firing zone is split
        into the part that meets a hazard and the parts that meet none."""
        dz = self.dz
        f = dz.frame(state)
        extrapolate, apply = dz.D.extrapolate_m, dz.apply
        m = self.m
        for e in self.edges(state):
            if e.event not in allowed:
                continue
            g = dz.constrain(f, zone, e.guard)
            if g is None:
                continue
            self.transitions += 1
            t = e.target
            tf = dz.frame(t)
            for piece, met in (self.split(f, g, hazards) if hazards else ((g, None),)):
                tz = dz.close(tf, dz.reset(f, piece, e, tf))
                if tz is None:
                    continue
                lab = met
                if lab is None and e.failure is None:
                    viol = self.model.violations(t)
                    if viol:
                        lab = Label(LabelKind.INVARIANT, viol[0].property, viol[0].message)
                extrapolate(tz, tf.n, m)
                apply(tz, tf.n, tf.pos, tf.deadlines)
                yield e, t, tz, lab

    def split(self, f: Frame, z: dbm.Dbm, hazards: Sequence[Hazard]
              ) -> list[tuple[dbm.Dbm, Label | None]]:
        """``z`` cut into disjoint zones: those meeting a hazard (the first, in order),
        with its label, then those meeting none."""
        dz = self.dz
        out: list[tuple[dbm.Dbm, Label | None]] = []
        rest = [z]
        for h in hazards:
            clean: list[dbm.Dbm] = []
            for piece in rest:
                met = dz.constrain(f, piece, h.atoms)
                if met is None:
                    clean.append(piece)
                    continue
                out.append((met, Label(LabelKind.HAZARD, h.property, h.message)))
                # Not every atom holds: the first that fails, the ones before hold.
                prefix: dbm.Dbm | None = piece
                for a in h.atoms:
                    assert prefix is not None
                    neg = dz.constrain(f, prefix, (ClockAtom(a.clock, NEGATED_OP[a.op],
                                                             a.bound),))
                    if neg is not None:
                        clean.append(neg)
                    prefix = dz.constrain(f, prefix, (a,))
                    if prefix is None:
                        break
            rest = clean
        out.extend((piece, None) for piece in rest)
        return out


class Monitor:
    """Feeds a log to the model line by line (see the module docstring).

    ``observable``: the events (``actor.event``, or one instance as the model names it,
    ``decode.allocate(B, s0)``) the log records; every other event may happen
    unobserved between lines.  ``clock_error``: each timestamp's uncertainty, in
    seconds.  ``start``: the log time at which the model starts (with
    ``start_latest``: at an unknown time between the two); ``start_after_first``:
    the start relative to the first line's time instead (``(-120, 0)``: at most two
    minutes before it).  ``skew``: per clock domain (an actor, or actors on one machine
    joined by ``+``: ``decode+router``), the most its clock may be offset from the log's
    reference clock (an unknown constant within ``[-S, S]``, the same for every actor of
    the domain; each domain gets one more time clock, ``now`` plus its offset).
    ``keep_path``: remember a run (for a diagram; memory then grows with the log)."""

    def __init__(self, model: SpecModel, file: str, observable: frozenset[str], *,
                 clock_error: Fraction = Fraction(0), start: Fraction = Fraction(0),
                 start_latest: Fraction | None = None,
                 start_after_first: tuple[Fraction, Fraction | None] | None = None,
                 skew: Mapping[str, Fraction] | None = None,
                 budget: Budget | None = None, keep_path: bool = False) -> None:
        self.model = model
        self.file = file
        self.index = EventIndex(model)
        labels = set(model.event_names)
        for name in sorted(observable):
            if name not in self.index.instances and name not in labels:
                self.index.check_name(name.split("(")[0], "--observable", 1)
                raise LogError("--observable", 1, f"`{name}` is no event instance of the"
                               " spec (instances are written as the spec prints them, e.g."
                               f" `{model.event_names[0]}`)")
        self.observable = observable
        self.clock_error = clock_error
        self.start = start
        self.budget = budget
        self.keep_path = keep_path
        try:
            bounds, scale = scaled_bounds(model.bounds, model.values)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.ticks = scale * TICKS_PER_SECOND // math.gcd(scale, TICKS_PER_SECOND)
        factor = self.ticks // scale
        self.bounds = [b * factor for b in bounds]
        if any(abs(b) > MAX_SCALED_BOUND for b in self.bounds):
            raise LogError(file, 0, "the spec's clock bounds are too large for microsecond"
                           " timestamps")
        top = max((abs(b) for b in self.bounds), default=0)
        self.top = top
        n_clocks = len(model.clock_names)
        domains = [(name, math.ceil(v * self.ticks)) for name, v in sorted((skew or {}).items())]
        self.skew = {a: s for name, s in domains for a in name.split("+")}
        """Each skewed actor's offset bound, in ticks."""
        extra = 1 + len(domains)
        live = Liveness(n_clocks + extra, None, top)
        for c in range(n_clocks, n_clocks + extra):
            live.lower[c] = live.upper[c] = NOW_LIMIT * 2
        ops = backend.select(None if backend.fits(max(top, NOW_LIMIT * 2)) else "python")
        self.ts = _ObservedTS(_NowModel(model, tuple(name for name, _ in domains)), self.bounds,
                              live,
                              extrapolation=Extrapolation.M, canonical=None,
                              labels=frozenset({LabelKind.INVARIANT, LabelKind.HAZARD}),
                              ops=ops)
        self.ts.m = [-1, *(max(lo, up) for lo, up in zip(live.lower, live.upper, strict=True))]
        self.D = ops
        self.n = n_clocks + 1 + extra
        self.now = n_clocks + 1
        """The DBM index of ``now`` (every clock is live: clock ``c`` is index c + 1)."""
        self._clock_domains(domains)
        by_event = {e: self.model.instance(e)[0].label for e in range(len(model.event_names))}
        self.hidden = frozenset(e for e, name in by_event.items()
                                if name not in observable
                                and model.event_names[e] not in observable)
        self.shown = frozenset(by_event) - self.hidden
        self.broken: list[Broken] = []
        self._broken_index: dict[Broken, int] = {}
        self._last_event = ""
        """The last observed event (what a response overdue at the log's end follows)."""
        self._verdict: tuple[Broken, Certainty] | None = None
        """The violation the log shows so far (of a run that ended), and how surely."""
        self._last_path: tuple[list[Step], Fraction, Fraction | None] | None = None
        """With ``keep_path``: the run :attr:`_verdict` is of (else the last run), and
        the log time it starts at."""
        self.report = Report(Outcome.CONFORMS, observable=tuple(sorted(observable)))
        self._last_time: Fraction | None = None
        self._last_hi = 0
        self._last_lo = 0
        """The window's lower end of the latest line so far (ticks since the origin)."""
        self.err_ticks = math.ceil(clock_error * self.ticks)
        self.start_latest = start_latest
        self.start_window: tuple[Fraction, Fraction | None] | None = start_after_first
        self.relative_start = start_after_first
        self.restart(start, start_latest)

    def _clock_domains(self, domains: Sequence[tuple[str, int]]) -> None:
        """The time clocks of the skewed clock domains (name, offset bound in ticks)."""
        self.domains = [(self.now + 1 + k, s) for k, (_, s) in enumerate(domains)]
        """Each clock domain's time clock (its DBM index) and offset bound in ticks."""
        self.skewed = {a: self.now + 1 + k for k, (name, _) in enumerate(domains)
                       for a in name.split("+")}
        """The DBM index of each skewed actor's time clock (``now`` + offset + S)."""
        self.times = (self.now, *(i for i, _ in self.domains))

    # ---- runs ---------------------------------------------------------------------------
    def restart(self, start: Fraction, latest: Fraction | None = None) -> None:
        """Begin a run of the model at log time ``start`` (with ``latest``: at an unknown
        time between ``start`` and ``latest``)."""
        self.origin = start
        self.origin_ticks = math.floor(start * self.ticks)
        self.ref = 0
        """Ticks from ``origin`` to the reference instant ``now`` counts from."""
        width = 0 if latest is None else math.ceil(latest * self.ticks) - self.origin_ticks
        if width > NOW_LIMIT:
            raise LogError(self.file, 0, "the start window is too wide for microsecond"
                           " timestamps")
        self.nodes: list[_Node] = []
        self._last_hi = width
        dz = self.ts.dz
        D, n = self.D, self.n
        for s in self.model.initial_states():
            f = dz.frame(s)
            z0 = dz.zero(f)
            if width > 0:
                # The model starts `now` ticks after the origin, now in [0, width]: every
                # model clock is 0 then, `now` is not.
                D.up(z0, n)
                D.constrain(z0, n, self.now, 0, dbm.bound(width, False))
                for c in range(1, self.now):
                    D.reset(z0, n, c)
            for i, skew in self.domains:
                # The domain's clock reads now + offset + S, the offset in [-S, S].
                D.free(z0, n, i)
                D.constrain(z0, n, self.now, i, dbm.LE_ZERO)
                D.constrain(z0, n, i, self.now, dbm.bound(2 * skew, False))
            z = dz.close(f, z0)
            if z is not None:
                self.nodes.append(_Node(s, z, -1, () if self.keep_path else None))
        self.report.max_states = max(self.report.max_states, len(self.nodes))

    def start_relative(self, first: Fraction) -> None:
        """Resolve a start given relative to the first line (``first-120:first``)."""
        assert self.start_window is not None
        lo, hi = self.start_window
        self.restart(first + lo, None if hi is None else first + hi)
        self.start_window = None

    def new_run(self, line: int, start: Fraction | None) -> None:
        """A run break in the log at ``line``."""
        self._end_run()
        self.report.runs += 1
        self.report.matched = line
        self._last_time = None
        self._last_lo = 0
        if start is not None:
            self.restart(start)
        elif self.relative_start is not None:
            self.start_window = self.relative_start  # resolved at the run's first line
        else:
            self.restart(self.start, self.start_latest)

    # ---- the zone operations on ``now`` -------------------------------------------------
    def _at_most(self, z: dbm.Dbm, hi: int) -> dbm.Dbm | None:
        g = list(z)
        return g if self.D.constrain(g, self.n, self.now, 0, dbm.bound(hi, False)) else None

    def _at_least(self, z: dbm.Dbm, lo: int) -> dbm.Dbm | None:
        if lo <= 0:
            return z
        g = list(z)
        return g if self.D.constrain(g, self.n, 0, self.now, dbm.bound(-lo, False)) else None

    def _within(self, z: dbm.Dbm, i: int, lo: int, hi: int) -> dbm.Dbm | None:
        """``z`` with time clock ``i`` in ``[lo, hi]`` (a copy), None if empty."""
        g = list(z)
        D, n = self.D, self.n
        if not D.constrain(g, n, i, 0, dbm.bound(hi, False)):
            return None
        if lo > 0 and not D.constrain(g, n, 0, i, dbm.bound(-lo, False)):
            return None
        return g

    def _shift(self, z: dbm.Dbm, d: int) -> None:
        """Every time clock ``:= itself - d`` (in place; each is ``>= d`` in ``z``)."""
        n = self.n
        inf = dbm.INF
        two = 2 * d
        times = self.times
        if len(times) == 1:
            i = times[0]
            row = i * n
            for j in range(n):
                if j != i:
                    b = z[row + j]
                    if b != inf:
                        z[row + j] = b - two
                    b = z[j * n + i]
                    if b != inf:
                        z[j * n + i] = b + two
            return
        for i in times:
            row = i * n
            for j in range(n):
                if j in times:
                    continue
                b = z[row + j]
                if b != inf:
                    z[row + j] = b - two
                b = z[j * n + i]
                if b != inf:
                    z[j * n + i] = b + two

    # ---- one line -----------------------------------------------------------------------
    def window(self, obs: Observation) -> tuple[int, int]:
        """The observation's window ``[lo, hi]`` in ticks since the run's origin (whole
        ticks, rounded outward)."""
        t = obs.time
        lo, rem = divmod(t.numerator * self.ticks, t.denominator)
        hi = lo + 1 if rem else lo
        return lo - self.err_ticks - self.origin_ticks, hi + self.err_ticks - self.origin_ticks

    def closure(self, nodes: Sequence[_Node], hi: int, line: int = 0) -> list[_Node]:
        """Every node reachable from ``nodes`` by unobservable events, until ``now``
        reaches ``hi`` (ticks since ``ref``)."""
        store = _Store(self.D.includes, self.n)
        queue: deque[_Node] = deque()
        for nd in nodes:
            z = self._at_most(nd.zone, hi)
            if z is not None:
                node = _Node(nd.state, z, nd.viol, nd.steps)
                if store.add(node):
                    queue.append(node)
        if not self.hidden:
            return store.nodes()
        budget = self.budget
        while queue:
            node = queue.popleft()
            if not node.alive:
                continue
            if budget is not None:
                budget.count(store.count)
            for e, t, tz, lab in self.ts.steps(node.state, node.zone, self.hidden,
                                               self._pending(node)):
                g = self._at_most(tz, hi)
                if g is None:
                    continue
                viol = node.viol
                if viol < 0 and (lab is not None or e.failure is not None):
                    viol = self._broken(line, e, lab)
                steps = None if node.steps is None else (node.steps, Step(e.event, t, 0, None))
                new = _Node(t, g, viol, steps)
                if store.add(new):
                    queue.append(new)
        return store.nodes()

    def _pending(self, node: _Node) -> Sequence[Hazard]:
        """The bounded responses ``node``'s run may still break (none once it broke a
        property: a run carries its first violation)."""
        return () if node.viol >= 0 else self.model.hazards(node.state)

    def _broken(self, line: int, e: Edge | None, lab: Label | None) -> int:
        """The index of the violation a step breaks at ``line`` (the same one for the
        same property, event and line): an ``assert`` of ``e``, or ``lab``; ``e`` None is
        a response overdue at the end of the log."""
        event = self.model.event_names[e.event] if e is not None else self._last_event
        if e is not None and e.failure is not None:
            b = Broken(line, PropertyKind.ASSERT, f"assert in {event}", e.failure, event)
        else:
            assert lab is not None
            if lab.kind is LabelKind.INVARIANT:
                kind, word, how = PropertyKind.INVARIANT, "invariant", f"entering it: {event}"
            else:
                kind, word = PropertyKind.RESPONSE, "property"
                how = (f"overdue when {event} fired" if e is not None
                       else "overdue at the log's end")
            b = Broken(line, kind, f"{word} {lab.name}", lab.message, event, lab.name, how)
        got = self._broken_index.get(b)
        if got is None:
            got = self._broken_index[b] = len(self.broken)
            self.broken.append(b)
        return got

    def _checked_window(self, obs: Observation) -> tuple[int, int]:
        """The observation's window, after checking the line's time against the lines
        before it and the run's start."""
        lo_abs, hi_abs = self.window(obs)
        last = self._last_time
        # Lines of two skewed clocks may be out of order by their offsets.
        slack = 2 * max(self.skew.values(), default=0)
        if last is not None and hi_abs + slack < self._last_lo:
            err = self.clock_error
            raise LogError(self.file, obs.line, f"time goes backwards: t={_show(obs.time)}"
                           f" is before the previous line's t={_show(last)} by more than"
                           f" the clock error ({_show(2 * err)} for two timestamps)")
        if hi_abs + self.skew.get(obs.event.split(".", 1)[0], 0) < 0:
            raise LogError(self.file, obs.line, f"t={_show(obs.time)} is before the run's"
                           f" start (t={_show(self.origin)})")
        if last is None or lo_abs > self._last_lo:
            self._last_time, self._last_lo = obs.time, lo_abs
        return lo_abs, hi_abs

    def feed(self, obs: Observation) -> bool:
        """Take one observation; False (and :attr:`report` says where) if it deviates.
        An observation without an event (an :class:`~checker.validate.log.Until` line)
        only lets time pass until its window."""
        if self.start_window is not None:
            self.start_relative(obs.time)
        rep = self.report
        rep.lines = max(rep.lines, obs.line)
        lo_abs, hi_abs = self._checked_window(obs)
        instances = frozenset[int]()
        if obs.event:
            rep.observations += 1
            instances = self.index.match(obs, self.file) & self.shown
            if not instances:
                raise LogError(self.file, obs.line, f"`{obs.show()}` is not declared"
                               " observable (--observable)")
        lo, hi = lo_abs - self.ref, hi_abs - self.ref
        actor = obs.event.split(".", 1)[0]
        clock = self.skewed.get(actor)
        if clock is not None:
            # The line's time is on the actor's clock: its time clock reads it plus S.
            lo += self.skew[actor]
            hi += self.skew[actor]
        if hi > NOW_LIMIT:
            raise LogError(self.file, obs.line, f"t={_show(obs.time)} is too far after the"
                           " previous line (or the run's start) for microsecond timestamps;"
                           " give the run's start (--start) closer to its first line")
        before = self.nodes
        closed = self.closure(before, hi, obs.line)
        if obs.event:
            out = self._fire(closed, obs, instances, lo, hi, clock)
        else:
            out = [_Node(nd.state, z, nd.viol, nd.steps) for nd in closed
                   if (z := self._at_least(nd.zone, lo)) is not None]
        rep.transitions = self.ts.transitions
        if not out:
            rep.outcome = Outcome.DEVIATES
            rep.deviation = Deviation(obs.line, obs, rep.matched,
                                      *self.possible(before, hi))
            if self.keep_path and before:
                rep.path, rep.path_start = _unwind(before[0].steps), self.origin
            return False
        # now >= lo, or (a skewed line) now >= lo - 2 S: the time clocks stay >= 0.
        d = max(lo if clock is None else lo - 2 * self.skew[actor], 0)
        if d:
            for node in out:
                self._shift(node.zone, d)
            self.ref += d
        self._last_hi = hi - d
        """The last line's window end, in ticks since ``ref``."""
        self.nodes = out
        if obs.event:
            self._last_event = obs.show()
        rep.matched = obs.line
        rep.max_states = max(rep.max_states, len(out))
        return True

    def _fire(self, closed: Sequence[_Node], obs: Observation, instances: frozenset[int],
              lo: int, hi: int, clock: int | None) -> list[_Node]:
        """The nodes after the observed event fires in its window from ``closed``."""
        store = _Store(self.D.includes, self.n)
        budget = self.budget
        for node in closed:
            z = (self._at_least(node.zone, lo) if clock is None
                 else self._within(node.zone, clock, lo, hi))
            if z is None:
                continue
            if budget is not None:
                budget.count(store.count)
            for e, t, tz, lab in self.ts.steps(node.state, z, instances, self._pending(node)):
                viol = node.viol
                if viol < 0 and (lab is not None or e.failure is not None):
                    viol = self._broken(obs.line, e, lab)
                steps = None if node.steps is None else (
                    node.steps, Step(e.event, t, obs.line, obs.time))
                store.add(_Node(t, tz, viol, steps))
        return store.nodes()

    def possible(self, nodes: Sequence[_Node], hi: int) -> tuple[tuple[Possible, ...], Fraction]:
        """The observable instances that could come next (before the line that
        deviates), each with the times it could; looked for until ``hi`` plus the
        model's largest constant (at least a second)."""
        horizon = hi + max(self.top, self.ticks)
        found: dict[str, tuple[int, int | None]] = {}
        dz = self.ts.dz
        n, i = self.n, self.now
        for node in self.closure(nodes, horizon):
            f = dz.frame(node.state)
            for e in self.ts.edges(node.state):
                if e.event not in self.shown:
                    continue
                g = dz.constrain(f, node.zone, e.guard)
                if g is None:
                    continue
                tf = dz.frame(e.target)
                if dz.close(tf, dz.reset(f, g, e, tf)) is None:
                    continue
                lo = -dbm.bound_value(g[i])
                up = g[i * n]
                hi_b = None if up == dbm.INF or dbm.bound_value(up) >= horizon else (
                    dbm.bound_value(up))
                name = self.model.event_names[e.event]
                old = found.get(name)
                if old is None:
                    found[name] = (lo, hi_b)
                else:
                    latest = None if old[1] is None or hi_b is None else max(old[1], hi_b)
                    found[name] = (min(old[0], lo), latest)
        out = [Possible(name, self._abs(lo), None if up is None else self._abs(up))
               for name, (lo, up) in found.items()]
        out.sort(key=lambda p: (p.earliest, p.event))
        return tuple(out), self._abs(horizon)

    def _abs(self, ticks: int) -> Fraction:
        return Fraction(self.origin_ticks + self.ref + ticks, self.ticks)

    # ---- the end ------------------------------------------------------------------------
    def _end_run(self) -> None:
        """Judge the run of the model that just ended (at a ``run`` line or the log's
        end): the property every run consistent with its lines breaks, or some do.
        Unobserved events may still fire until the last line's window ends, and a
        response still pending then is judged there.  The log's verdict keeps the
        first run that surely breaks a property, else the first that may."""
        if self.report.outcome is not Outcome.CONFORMS or not self.nodes:
            return
        line = self.report.matched
        split = self.ts.split
        frame = self.ts.dz.frame
        flags: list[tuple[int, _Node]] = []
        for nd in self.closure(self.nodes, self._last_hi, line):
            hazards = self._pending(nd)
            if not hazards:
                flags.append((nd.viol, nd))
                continue
            for _, lab in split(frame(nd.state), nd.zone, hazards):
                flags.append((-1 if lab is None else self._broken(line, None, lab), nd))
        hit = sorted(((self.broken[v].line, v, nd) for v, nd in flags if v >= 0),
                     key=lambda x: x[:2])
        pick = hit[0][2] if hit else flags[0][1] if flags else self.nodes[0]
        path = (_unwind(pick.steps), self.origin, self._last_time) if self.keep_path else None
        if not hit:
            if self._verdict is None:
                self._last_path = path
            return
        certainty = Certainty.CERTAIN if len(hit) == len(flags) else Certainty.POSSIBLE
        old = self._verdict
        if old is None or (old[1] is Certainty.POSSIBLE and certainty is Certainty.CERTAIN):
            self._verdict = (self.broken[hit[0][1]], certainty)
            self._last_path = path

    def finish(self) -> Report:
        """The report once the log has ended (or deviated)."""
        rep = self.report
        rep.transitions = self.ts.transitions
        if rep.outcome is Outcome.CONFORMS:
            self._end_run()
            if self._verdict is not None:
                rep.broken, rep.certainty = self._verdict
            if self._last_path is not None:
                rep.path, rep.path_start, rep.path_end = self._last_path
        return rep


def _show(t: Fraction) -> str:
    return fmt_time(t)


def _unwind(steps: tuple[object, ...] | None) -> list[Step]:
    """The steps of a node's run, first to last (kept as a linked list of pairs)."""
    out: list[Step] = []
    while steps:
        prev, step = steps
        assert isinstance(step, Step)
        out.append(step)
        steps = prev  # type: ignore[assignment]
    out.reverse()
    return out


def validate(monitor: Monitor, entries: Iterable[Entry]) -> Report:
    """Feed ``entries`` to ``monitor`` until the log ends or deviates."""
    for entry in entries:
        if isinstance(entry, RunBreak):
            monitor.new_run(entry.line, entry.time)
            continue
        obs = entry if isinstance(entry, Observation) else Observation(
            entry.line, entry.time, "", ())
        if not monitor.feed(obs):
            break
    return monitor.finish()

"""Timed trace validation with free parameters: the region a log implies.

The same algorithm as :mod:`checker.validate.conform`, over convex polyhedra in
the clocks, an absolute-time variable and the free timing parameters
(:class:`checker.smt.zones.PolyZones`) instead of DBMs: the set of symbolic
states consistent with the lines so far, each carrying the parameter values
under which it is.  After the last line, the projection of the surviving
polyhedra onto the parameters is the region of values for which the log is a
run of the spec ("this log implies T_flight >= 6").  The empty region is a
deviation.

Time is exact (rationals, no ticks) and the time variable is not re-based:
constants grow with the log, so this is for excerpts, not for long logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from checker.limits import Budget
from checker.model.compiled import SpecModel
from checker.model.interface import NEGATED_OP, ClockAtom, Edge, Hazard, State, Violation
from checker.results import PropertyKind
from checker.smt.lin import Lin, clock_var
from checker.smt.poly import Z3Context, included
from checker.smt.synth import essential, lin_text, range_constraints
from checker.smt.zones import Poly, PolyFrame, PolyZones, zero_constraints
from checker.validate.conform import Broken, Certainty, EventIndex, Outcome, _NowModel
from checker.validate.log import Entry, LogError, Observation, RunBreak


@dataclass
class RegionReport:
    """The result of validating a log with free parameters."""

    outcome: Outcome
    free: tuple[str, ...]
    lines: int = 0
    observations: int = 0
    matched: int = 0
    deviation: Observation | None = None
    """The first line no parameter value inside the ranges allows."""
    pieces: list[list[Lin]] = field(default_factory=list)
    """The region as a union of polyhedra over the free parameters (what the declared
    ranges imply left out); ``[[]]`` is every value in the ranges."""
    max_states: int = 0
    broken: Broken | None = None
    """A property some run consistent with the log breaks (for some value in the
    region), as :class:`checker.validate.conform.Report` has it."""
    certainty: Certainty | None = None
    """``certain``: for every value of the region, every run consistent with the log
    breaks a property."""

    def text(self) -> str:
        """The region as readable text (``true``: every value within the ranges)."""
        if not self.pieces:
            return "false"
        parts = [" and ".join(lin_text(c, self.free) for c in piece) or "true"
                 for piece in self.pieces]
        if "true" in parts:
            return "true"
        return parts[0] if len(parts) == 1 else " or ".join(f"({p})" for p in parts)


class RegionMonitor:
    """Feeds a log to the model with the parameters ``free`` left open (see the
    module docstring); the other options are those of
    :class:`checker.validate.conform.Monitor`."""

    def __init__(self, model: SpecModel, file: str, observable: frozenset[str],
                 free: Sequence[str], *, clock_error: Fraction = Fraction(0),
                 start: Fraction = Fraction(0), start_latest: Fraction | None = None,
                 start_after_first: tuple[Fraction, Fraction | None] | None = None,
                 budget: Budget | None = None) -> None:
        self.model = model
        self.file = file
        self.index = EventIndex(model)
        self.free = tuple(free)
        self.clock_error = clock_error
        self.budget = budget
        self.ctx = Z3Context()
        wrapped = _NowModel(model)
        self.zones = PolyZones(wrapped, self.free, self.ctx, None, None)
        self.n_clocks = len(model.clock_names)
        self.now = clock_var(self.n_clocks)
        self.ranges = range_constraints(model, self.free)
        labels = {e: model.event_names[e] for e in range(len(model.event_names))}
        names = {e: model.instance(e)[0].label for e in labels}
        self.hidden = frozenset(e for e in labels
                                if names[e] not in observable and labels[e] not in observable)
        self.shown = frozenset(labels) - self.hidden
        self.report = RegionReport(Outcome.CONFORMS, self.free)
        self.broken: list[Broken] = []
        self.last_event = ""
        self.start = start
        self.start_latest = start_latest
        self.start_window = start_after_first
        self._last: Fraction | None = None
        self.restart(start, start_latest)

    def _now_at_most(self, hi: Fraction) -> Lin:
        return Lin.make({self.now: Fraction(1)}, -hi, False)

    def _now_at_least(self, lo: Fraction) -> Lin:
        return Lin.make({self.now: Fraction(-1)}, lo, False)

    def restart(self, start: Fraction, latest: Fraction | None = None) -> None:
        """Begin a run at log time ``start`` (or at an unknown time up to ``latest``):
        ``now`` is the time since ``start``."""
        self.origin = start
        width = Fraction(0) if latest is None else latest - start
        self.last_hi = width
        """The last line's window end (time since the origin)."""
        self.nodes: list[tuple[State, Poly, int]] = []
        for s in self.model.initial_states():
            f = self.zones.frame(s)
            z0 = [*zero_constraints(range(self.n_clocks)), self._now_at_least(Fraction(0)),
                  self._now_at_most(width), *self.ranges]
            z = self.zones.close(f, z0)
            if z is not None:
                self.nodes.append((s, z, -1))

    def _split(self, state: State, zone: Poly, viol: int, line: int, event: str,
               end: bool = False) -> list[tuple[Poly, int]]:
        """``zone`` cut where a bounded response ``state`` is pending on is overdue (the
        run leaving the state then, or at the log's end, breaks it) and where none is;
        each part with the violation its run carries."""
        if viol >= 0:
            return [(zone, viol)]
        zones = self.zones
        f = zones.frame(state)
        out: list[tuple[Poly, int]] = []
        rest = [zone]
        for h in self.model.hazards(state):
            clean: list[Poly] = []
            for piece in rest:
                met = zones.constrain(f, piece, h.atoms)
                if met is not None:
                    out.append((met, self._broken(line, h, event, end)))
                prefix: Poly | None = piece
                for a in h.atoms:
                    assert prefix is not None
                    neg = zones.constrain(f, prefix, (ClockAtom(a.clock, NEGATED_OP[a.op],
                                                                a.bound),))
                    if neg is not None:
                        clean.append(neg)
                    prefix = zones.constrain(f, prefix, (a,))
                    if prefix is None:
                        break
            rest = clean
        out.extend((piece, -1) for piece in rest)
        return out

    def _broken(self, line: int, why: Edge | Hazard | Violation, event: str,
                end: bool = False) -> int:
        """The index of a violation: an ``assert`` of an edge, an overdue response, an
        invariant of the state an event enters."""
        if isinstance(why, Edge):
            assert why.failure is not None
            b = Broken(line, PropertyKind.ASSERT, f"assert in {event}", why.failure, event)
        elif isinstance(why, Hazard):
            how = "overdue at the log's end" if end else f"overdue when {event} fired"
            b = Broken(line, PropertyKind.RESPONSE, f"property {why.property}", why.message,
                       event, why.property, how)
        else:
            b = Broken(line, PropertyKind.INVARIANT, f"invariant {why.property}",
                       why.message, event, why.property, f"entering it: {event}")
        if b not in self.broken:
            self.broken.append(b)
        return self.broken.index(b)

    def _steps(self, state: State, zone: Poly, viol: int, allowed: frozenset[int], line: int
               ) -> Iterable[tuple[Edge, State, Poly, int]]:
        zones = self.zones
        f = zones.frame(state)
        for e in self.model.edges(state):
            if e.event not in allowed:
                continue
            g = zones.constrain(f, zone, e.guard)
            if g is None:
                continue
            event = self.model.event_names[e.event]
            for piece, v in self._split(state, g, viol, line, event):
                tf: PolyFrame = zones.frame(e.target)
                f = zones.frame(state)
                tz = zones.reset(f, piece, e, tf)
                tz = zones.close(tf, tz) if tz is not None else None
                if tz is None:
                    continue
                if v < 0 and e.failure is not None:
                    v = self._broken(line, e, event)
                elif v < 0 and self.model.violations(e.target):
                    v = self._broken(line, self.model.violations(e.target)[0], event)
                yield e, e.target, tz, v
            f = zones.frame(state)

    def _add(self, store: list[tuple[State, Poly, int]], s: State, z: Poly, viol: int
             ) -> bool:
        for t, old, v in store:
            if t == s and v == viol and included(self.ctx, z, old):
                return False
        store[:] = [(t, old, v) for t, old, v in store
                    if not (t == s and v == viol and included(self.ctx, old, z))]
        store.append((s, z, viol))
        if self.budget is not None:
            self.budget.count(len(store))
        return True

    def feed(self, obs: Observation) -> bool:
        """Take one observation; False if no parameter value allows it."""
        if self.start_window is not None:
            lo_s, hi_s = self.start_window
            self.restart(obs.time + lo_s, None if hi_s is None else obs.time + hi_s)
            self.start_window = None
        rep = self.report
        rep.lines = max(rep.lines, obs.line)
        rep.observations += 1 if obs.event else 0
        err = self.clock_error
        if self._last is not None and obs.time + err < self._last - err:
            raise LogError(self.file, obs.line, "time goes backwards by more than the clock"
                           " error")
        self._last = obs.time if self._last is None else max(self._last, obs.time)
        instances = self.index.match(obs, self.file) & self.shown if obs.event else (
            frozenset[int]())
        if obs.event and not instances:
            raise LogError(self.file, obs.line, f"`{obs.show()}` is not declared observable"
                           " (--observable)")
        lo = obs.time - err - self.origin
        hi = obs.time + err - self.origin
        closed = self._closure(hi, obs.line)
        out: list[tuple[State, Poly, int]] = []
        floor = self._now_at_least(lo)
        for s, z, v in closed:
            w = self.zones.conj(z, [floor])
            if w is None:
                continue
            if not obs.event:
                self._add(out, s, w, v)  # a line with a time only: time passes
            for _, t, tz, tv in self._steps(s, w, v, instances, obs.line):
                self._add(out, t, tz, tv)
        if not out:
            rep.outcome = Outcome.DEVIATES
            rep.deviation = obs
            return False
        self.nodes = out
        self.last_hi = hi
        if obs.event:
            self.last_event = obs.show()
        rep.matched = obs.line
        rep.max_states = max(rep.max_states, len(out))
        return True

    def _closure(self, hi: Fraction, line: int) -> list[tuple[State, Poly, int]]:
        """The nodes reachable from the current ones by unobservable events, until
        ``now`` reaches ``hi``."""
        cap = self._now_at_most(hi)
        closed: list[tuple[State, Poly, int]] = []
        queue: list[tuple[State, Poly, int]] = []
        for s, z, v in self.nodes:
            g = self.zones.conj(z, [cap])
            if g is not None and self._add(closed, s, g, v):
                queue.append((s, g, v))
        while queue and self.hidden:
            s, z, v = queue.pop(0)
            for _, t, tz, tv in self._steps(s, z, v, self.hidden, line):
                g = self.zones.conj(tz, [cap])
                if g is not None and self._add(closed, t, g, tv):
                    queue.append((t, g, tv))
        return closed

    def _covers(self, pieces: Sequence[Sequence[Lin]]) -> bool:
        """Whether the pieces of the region together hold every value in the ranges."""
        return _covers_ranges(self.ctx, pieces, self.ranges)

    def _judge(self) -> None:
        """The violations of the run the log shows (at its end: a response still pending
        at the last line's window end is overdue if its bound has passed)."""
        rep = self.report
        flags: list[int] = []
        for s, z, v in self._closure(self.last_hi, rep.matched):
            flags += [tv for _, tv in self._split(s, z, v, rep.matched, self.last_event,
                                                   end=True)]
        hit = sorted((self.broken[v].line, v) for v in flags if v >= 0)
        if hit:
            rep.broken = self.broken[hit[0][1]]
            rep.certainty = (Certainty.CERTAIN if len(hit) == len(flags)
                             else Certainty.POSSIBLE)

    def finish(self) -> RegionReport:
        """The report: the region of the surviving states (if the log conforms)."""
        rep = self.report
        if rep.outcome is Outcome.CONFORMS:
            self._judge()
            pieces: list[list[Lin]] = []
            for _, z, _ in self.nodes:
                got = self.zones.params_of(z)
                if got is None:
                    continue
                core = sorted(essential(self.ctx, got, self.ranges))
                if core not in pieces:
                    pieces.append(core)
            # A piece inside another adds nothing to the union.
            kept = [p for i, p in enumerate(pieces)
                    if not any(j != i and included(self.ctx, [*p, *self.ranges],
                                                   [*q, *self.ranges])
                               and not (included(self.ctx, [*q, *self.ranges],
                                                 [*p, *self.ranges]) and j > i)
                               for j, q in enumerate(pieces))]
            rep.pieces = sorted(kept)
            if len(rep.pieces) > 1 and self._covers(rep.pieces):
                rep.pieces = [[]]
            if not rep.pieces:
                rep.outcome = Outcome.DEVIATES
        return rep


def _covers_ranges(ctx: Z3Context, pieces: Sequence[Sequence[Lin]], ranges: Sequence[Lin]
                   ) -> bool:
    """Whether the union of ``pieces`` holds every value of ``ranges``."""
    import z3

    solver = z3.Solver()
    solver.add(*[ctx.expr(c) for c in ranges])
    solver.add(z3.Not(z3.Or(*[z3.And(*[ctx.expr(c) for c in p]) for p in pieces])))
    return bool(solver.check() == z3.unsat)


def validate_region(monitor: RegionMonitor, entries: Iterable[Entry]) -> RegionReport:
    """Feed ``entries`` to ``monitor`` until the log ends or deviates."""
    for entry in entries:
        if isinstance(entry, RunBreak):
            raise LogError(monitor.file, entry.line, "--free does not take a log of several"
                           " runs (a `run` line)")
        obs = entry if isinstance(entry, Observation) else Observation(
            entry.line, entry.time, "", ())
        if not monitor.feed(obs):
            break
    return monitor.finish()

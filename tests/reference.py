"""An integer-time reference explorer, for differential tests of the zone explorer.

Brute force and deliberately simple: a state is a discrete state and a tuple
of *integer* clock values, explored breadth-first.  From a state one may

* fire an edge whose guard holds for the current clock values and whose
  target's deadlines hold after its resets (a reset sets a clock to 0), or
* let one time unit pass, if every deadline of the current state still holds
  after every clock has advanced by 1.

Clock values are capped at (largest constant + 1): above every constant a
clock satisfies the same atoms whatever its value, so exploration terminates.
With ``per_clock=True`` each clock is capped at (largest constant *it* is
compared with + 1) instead: caps start at 1, every atom evaluated on a clock at
or above its cap raises the cap it needs, and the search restarts until no
atom did (a capped value then behaves as the true one in every atom the search
evaluated, so the result is exact); the states are fewer, the verdicts the same.

The properties are those of the zone explorer, with the same meaning:

* ``assert``: an edge that is enabled now and violates an ``assert``;
* a property of :meth:`TimedModel.violations` of a reached state;
* a hazard whose atoms all hold for the current clock values;
* ``deadlock`` (when asked for): the state has active deadlines, one time unit
  cannot pass, and no edge can fire now — in integer time that is all of
  "no edge can fire after any delay";
* ``model error``: the model raised :class:`ModelRuntimeError` (verdict ``error``);
  a fault of a state's own deadlines, invariants or responses is an error of
  that state, found by the run that enters it (an edge into it counts as one
  that can fire).

For *closed* constraints (``<=``, ``>=``) with integer constants, the
reachable discrete states, asserts, invariants and hazards ``c > k`` are the
same in integer and in dense time (every dense run can be digitised, Henzinger,
Manna and Pnueli 1992).  A dense-time deadlock need not show in integer time,
though: with two clocks reset half a unit apart, one guard may need them to be
equal and another need them to differ by 1.  ``grid=g`` explores steps of
``1/g`` (every bound multiplied by ``g``); since a grid state is a dense
state and a grid deadlock leaves no room for any delay, every deadlock found
on any grid is a dense-time deadlock.

This module does not import :mod:`checker.engines`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from checker.model.interface import (
    GE,
    GT,
    LE,
    LT,
    ClockAtom,
    Edge,
    Hazard,
    ModelRuntimeError,
    State,
    TimedModel,
    Violation,
)

HOLDS, VIOLATED, INCONCLUSIVE, ERROR = "holds", "violated", "inconclusive", "error"
ASSERT, DEADLOCK, MODEL_ERROR = "assert", "deadlock", "model error"

Clocks = tuple[int, ...]
Node = tuple[State, Clocks]


class TargetFault(ModelRuntimeError):
    """An edge whose guard holds leads to a state whose deadlines fault: a model
    error of that target state (reached by the edge), not of the source."""

    def __init__(self, message: str, target: State, clocks: Clocks) -> None:
        super().__init__(message, None, target)
        self.target = target
        self.clocks = clocks


class ValuedModel(TimedModel, Protocol):
    """A timed model with concrete parameter values."""

    @property
    def values(self) -> Mapping[str, Fraction]:
        """The value of every timing parameter."""
        ...


@dataclass(frozen=True)
class Finding:
    """A property broken after ``events`` events (the fewest possible), at ``state``
    with clock values ``clocks`` (in units of ``1/grid``)."""

    prop: str
    message: str
    events: int
    state: State
    clocks: Clocks


@dataclass
class RefResult:
    """The outcome of a reference run."""

    verdict: str
    prop: str | None = None
    """The violated property: an invariant or response name, ``assert``, ``deadlock``,
    or ``model error`` when the verdict is ``error``."""
    message: str | None = None
    events: int | None = None
    """Events on a shortest run to the reported finding (an ``assert`` counts the
    event that fails)."""
    states: int = 0
    """Distinct (discrete state, integer clock values) reached."""
    findings: dict[str, Finding] = field(default_factory=dict)
    """Every property found, each with a shortest run (all of them when exhaustive)."""
    strict: bool = False
    """Whether a strict (``<``, ``>``) guard or deadline atom was evaluated: then
    integer time may disagree with dense time."""
    exhaustive: bool = False
    """Whether every reachable state was explored (else the search stopped after the
    first layer with a finding)."""
    caps: list[int] = field(default_factory=list)
    """The cap of each clock's value in the final search."""
    queries: dict[str, int] = field(default_factory=dict)
    """Each ``reachable`` query some explored state satisfies, with the fewest events
    of a run to such a state (complete when exhaustive)."""


def integer_bounds(model: ValuedModel, grid: int = 1) -> list[int]:
    """The model's clock bounds (times ``grid``) as integers; ValueError if one is not."""
    out: list[int] = []
    for b in model.bounds:
        v = b.evaluate(model.values) * grid
        if v.denominator != 1:
            suffix = f" multiple of 1/{grid}" if grid != 1 else ""
            raise ValueError(
                f"clock bound {b} = {b.evaluate(model.values)} is not an integer{suffix}"
            )
        out.append(int(v))
    return out


def untimed_states(model: TimedModel) -> tuple[set[State], set[State]]:
    """The discrete states reachable when clock constraints are ignored, and those
    of them whose edges raise :class:`ModelRuntimeError`."""
    try:
        seen: set[State] = set(model.initial_states())
    except ModelRuntimeError:
        return set(), set()
    todo = list(seen)
    errors: set[State] = set()
    while todo:
        s = todo.pop()
        try:
            edges = model.edges(s)
        except ModelRuntimeError:
            errors.add(s)
            continue
        for e in edges:
            if e.failure is None and e.target not in seen:
                seen.add(e.target)
                todo.append(e.target)
    return seen, errors


class Semantics:
    """The integer-time transition relation of a model (steps of ``1/grid``).

    Clocks are capped at ``caps`` (default: the largest constant + 1, for every
    clock); :attr:`need` records the caps the atoms evaluated so far require.
    The model's answers for a discrete state are memoised."""

    def __init__(self, model: ValuedModel, grid: int = 1, caps: Sequence[int] | None = None
                 ) -> None:
        self.model = model
        self.grid = grid
        self.bounds = integer_bounds(model, grid)
        n = len(model.clock_names)
        self.caps = list(caps) if caps is not None else [max([0, *self.bounds]) + 1] * n
        self.need = list(self.caps)
        self.zero: Clocks = (0,) * n
        self.strict = False
        self._memo: dict[tuple[str, State], object] = {}

    def _ask(self, what: str, s: State) -> Any:
        key = (what, s)
        got = self._memo.get(key)
        if got is None:
            try:
                got = getattr(self.model, what)(s)
            except ModelRuntimeError as err:
                got = err
            self._memo[key] = got
        if isinstance(got, ModelRuntimeError):
            raise got
        return got

    def edges(self, s: State) -> Sequence[Edge]:
        """``model.edges(s)`` (memoised)."""
        edges: Sequence[Edge] = self._ask("edges", s)
        return edges

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """``model.deadlines(s)`` (memoised)."""
        dls: Sequence[ClockAtom] = self._ask("deadlines", s)
        return dls

    def violations(self, s: State) -> Sequence[Violation]:
        """``model.violations(s)`` (memoised)."""
        vs: Sequence[Violation] = self._ask("violations", s)
        return vs

    def hazards(self, s: State) -> Sequence[Hazard]:
        """``model.hazards(s)`` (memoised)."""
        hs: Sequence[Hazard] = self._ask("hazards", s)
        return hs

    def atom(self, a: ClockAtom, clocks: Clocks, hazard: bool = False) -> bool:
        """Whether ``clocks`` satisfy ``a`` (strict atoms are noted, except in hazards)."""
        c = clocks[a.clock]
        k = self.bounds[a.bound]
        if k >= self.need[a.clock]:
            self.need[a.clock] = k + 1
        if a.op == LE:
            return c <= k
        if a.op == GE:
            return c >= k
        if not hazard:
            self.strict = True
        if a.op == LT:
            return c < k
        if a.op == GT:
            return c > k
        raise ValueError(f"unknown clock operator {a.op!r}")

    def all_hold(self, atoms: Sequence[ClockAtom], clocks: Clocks, hazard: bool = False) -> bool:
        """Whether ``clocks`` satisfy every atom."""
        return all(self.atom(a, clocks, hazard) for a in atoms)

    def delay(self, s: State, clocks: Clocks) -> Clocks | None:
        """The clocks one step later, or None if a deadline of ``s`` forbids it."""
        later = tuple(c + 1 if c < cap else cap for c, cap in zip(clocks, self.caps, strict=True))
        return later if self.all_hold(self.deadlines(s), later) else None

    def fire(self, e: Edge, clocks: Clocks) -> Clocks | None:
        """The clocks after taking ``e`` now, or None if it cannot fire (its guard is
        false, or its target's deadlines are broken after the resets).  An edge
        whose ``assert`` fails fires when its guard holds (and leaves ``clocks``)."""
        if not self.all_hold(e.guard, clocks):
            return None
        if e.failure is not None:
            return clocks
        after = list(clocks)
        for c in e.resets:
            after[c] = 0
        t = tuple(after)
        try:
            target = self.deadlines(e.target)
        except ModelRuntimeError as err:
            raise TargetFault(err.message, e.target, t) from None
        return t if self.all_hold(target, t) else None

    def start(self, s: State) -> Clocks | None:
        """The clocks in initial state ``s``, or None if its deadlines exclude 0."""
        return self.zero if self.all_hold(self.deadlines(s), self.zero) else None

    def deadlocked(self, s: State, clocks: Clocks, edges: Sequence[Edge]) -> bool:
        """Active deadlines, no step of time, no edge that can fire (an edge into a
        faulting state can: it reaches a model error)."""
        if not self.deadlines(s) or self.delay(s, clocks) is not None:
            return False
        try:
            return all(self.fire(e, clocks) is None for e in edges)
        except TargetFault:
            return False

    def closure(self, s: State, clocks: set[Clocks]) -> set[Clocks]:
        """``clocks`` and every valuation reachable from them by waiting in ``s``."""
        out = set(clocks)
        todo = list(clocks)
        while todo:
            later = self.delay(s, todo.pop())
            if later is not None and later not in out:
                out.add(later)
                todo.append(later)
        return out


def reference_explore(
    model: ValuedModel,
    *,
    deadlock: bool = True,
    exhaustive: bool = False,
    grid: int = 1,
    per_clock: bool = False,
    max_states: int | None = None,
) -> RefResult:
    """Explore ``model`` in integer time (steps of ``1/grid``) and check its properties.

    Layer ``d`` of the search holds the states whose shortest run has ``d``
    events (waiting is free), so every finding comes with the fewest events
    of a run breaking it.  Without ``exhaustive`` the search stops after the
    first layer with a finding and reports the finding with the fewest events
    (ties: the first found); with it, every reachable state is explored and
    :attr:`RefResult.findings` lists every property broken.  Past
    ``max_states`` the verdict is ``inconclusive``.
    """
    caps = [1] * len(model.clock_names) if per_clock else None
    while True:
        sem = Semantics(model, grid, caps)
        res = _search(model, sem, deadlock, exhaustive, max_states)
        if caps is None or sem.need == caps or res.verdict == INCONCLUSIVE:
            res.caps = sem.caps
            return res
        caps = sem.need  # some atom compared a clock with a constant at or above its cap


def _search(model: ValuedModel, sem: Semantics, deadlock: bool, exhaustive: bool,
            max_states: int | None) -> RefResult:
    try:
        initial = model.initial_states()
    except ModelRuntimeError as err:
        f = Finding(MODEL_ERROR, err.message, 0, (), sem.zero)
        return RefResult(ERROR, MODEL_ERROR, err.message, 0, 0, {MODEL_ERROR: f},
                         exhaustive=exhaustive)
    seen: set[Node] = set()
    findings: dict[str, Finding] = {}
    order: list[str] = []
    query_names: Sequence[str] = getattr(model, "query_names", ())
    reached: dict[str, int] = {}

    def found(prop: str, message: str, events: int, node: Node) -> None:
        old = findings.get(prop)
        if old is None or events < old.events:
            findings[prop] = Finding(prop, message, events, node[0], node[1])
            if old is None:
                order.append(prop)

    def result(verdict: str | None = None) -> RefResult:
        res = RefResult(HOLDS, states=len(seen), findings=dict(findings), strict=sem.strict,
                        exhaustive=exhaustive, queries=dict(reached))
        if findings:
            best = min((findings[p] for p in order), key=lambda f: f.events)
            res.verdict = ERROR if best.prop == MODEL_ERROR else VIOLATED
            res.prop, res.message, res.events = best.prop, best.message, best.events
        if verdict is not None:
            res.verdict = verdict
        return res

    layer: list[Node] = []
    for s in initial:
        try:
            c0 = sem.start(s)
        except ModelRuntimeError as err:
            found(MODEL_ERROR, err.message, 0, (s, sem.zero))
            continue
        if c0 is not None and (s, c0) not in seen:
            seen.add((s, c0))
            layer.append((s, c0))
    depth = 0
    while layer:
        successors: list[Node] = []
        queue = layer  # grows with the states reached by waiting (same layer)
        i = 0
        while i < len(queue):
            if max_states is not None and len(seen) > max_states:
                return result(INCONCLUSIVE)
            node = queue[i]
            i += 1
            s, clocks = node
            # A state whose edges raise is an error, but time may still pass in it
            # (its deadlines permitting) and break an invariant or a response.
            stuck = False
            try:
                if query_names:
                    for m in model.queries(s):  # type: ignore[attr-defined]
                        if any(sem.all_hold(part, clocks) for part in m.parts):
                            reached.setdefault(query_names[m.query], depth)
                for v in sem.violations(s):
                    found(v.property, v.message, depth, node)
                for h in sem.hazards(s):
                    if sem.all_hold(h.atoms, clocks, hazard=True):
                        found(h.property, h.message, depth, node)
                later = sem.delay(s, clocks)
            except ModelRuntimeError as err:
                found(MODEL_ERROR, err.message, depth, node)
                continue
            try:
                fires = False
                for e in sem.edges(s):
                    try:
                        after = sem.fire(e, clocks)
                    except TargetFault as err:
                        found(MODEL_ERROR, err.message, depth + 1, (err.target, err.clocks))
                        fires = True
                        continue
                    if after is None:
                        continue
                    fires = True
                    if e.failure is not None:
                        found(ASSERT, e.failure, depth + 1, node)
                    else:
                        successors.append((e.target, after))
                stuck = bool(sem.deadlines(s)) and later is None and not fires
            except ModelRuntimeError as err:
                found(MODEL_ERROR, err.message, depth, node)
            if later is not None and (s, later) not in seen:
                seen.add((s, later))
                queue.append((s, later))
            if deadlock and stuck:
                found(DEADLOCK, "no event can fire and time cannot pass", depth, node)
        if findings and not exhaustive:
            return result()
        layer = []
        for node in successors:
            if node not in seen:
                seen.add(node)
                layer.append(node)
        depth += 1
    return result()


def replay(model: ValuedModel, start: State, edges: Sequence[Edge], grid: int = 1,
           any_branch: bool = False) -> list[set[Clocks]]:
    """The clock values (in units of ``1/grid``) reachable along a discrete path.

    ``edges`` must be edges of the model, taken in order from ``start``; entry
    ``k`` of the result is the set of valuations possible after the first ``k``
    edges and any waiting (for a last edge that fails an ``assert``: the
    valuations at which it fires).  A set becomes empty when the path cannot
    be followed in integer time.  ValueError if an edge is not the model's.
    With ``any_branch``, a step may take any edge of the same event instance
    to the same target (another convex branch of its guard).
    """
    sem = Semantics(model, grid)
    c0 = sem.start(start)
    vals = sem.closure(start, {c0} if c0 is not None else set())
    out = [vals]
    s = start
    for k, e in enumerate(edges):
        here = sem.edges(s)
        if e not in here:
            raise ValueError(f"step {k + 1}: {e} is not an edge of the model in state {s}")
        options = [e]
        if any_branch:
            options = [x for x in here if (x.event, x.target, x.failure, x.resets)
                       == (e.event, e.target, e.failure, e.resets)]
        nxt: set[Clocks] = set()
        for v in vals:
            for x in options:
                after = sem.fire(x, v)
                if after is not None:
                    nxt.add(after)
        if e.failure is not None:
            out.append(nxt)
            break
        s = e.target
        vals = sem.closure(s, nxt)
        out.append(vals)
    return out


def deadlocks_along(model: ValuedModel, start: State, edges: Sequence[Edge], grid: int = 1,
                    any_branch: bool = False) -> list[Clocks]:
    """The valuations (units of ``1/grid``) at the end of the path that are deadlocked."""
    vals = replay(model, start, edges, grid, any_branch)[-1]
    s = edges[-1].target if edges else start
    sem = Semantics(model, grid)
    return sorted(v for v in vals if sem.deadlocked(s, v, sem.edges(s)))

"""An integer-time reference explorer, for differential tests of the zone explorer.

Brute force and deliberately simple: a state is a discrete state and a tuple
of *integer* clock values, explored breadth-first.  From a state one may

* fire an edge whose guard holds for the current clock values and whose
  target's deadlines hold after its resets (a reset sets a clock to 0), or
* let one time unit pass, if every deadline of the current state still holds
  after every clock has advanced by 1.

Clock values are capped at (largest constant + 1): above every constant a
clock satisfies the same atoms whatever its value, so exploration terminates.

The properties are those of the zone explorer, with the same meaning:

* ``assert``: an edge that is enabled now and violates an ``assert``;
* a property of :meth:`TimedModel.violations` of a reached state;
* a hazard whose atoms all hold for the current clock values;
* ``deadlock`` (when asked for): the state has active deadlines, one time unit
  cannot pass, and no edge can fire now — in integer time that is all of
  "no edge can fire after any delay";
* ``model error``: the model raised :class:`ModelRuntimeError`.

For *closed* constraints (``<=``, ``>=``) with integer constants, the
reachable discrete states, asserts, invariants and hazards ``c > k`` are the
same in integer and in dense time (every dense run can be digitised).  A
dense-time deadlock need not show in integer time, though: with two clocks
reset half a unit apart, a guard may need them to differ by 0 while another
needs them to differ by 1.  ``grid=g`` explores steps of ``1/g`` (all bounds
multiplied by ``g``); every deadlock found on any grid is a dense-time one.

This module does not import :mod:`checker.explorer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

from checker.model.interface import (
    GE,
    GT,
    LE,
    LT,
    ClockAtom,
    Edge,
    ModelRuntimeError,
    State,
    TimedModel,
)

HOLDS, VIOLATED, INCONCLUSIVE, ERROR = "holds", "violated", "inconclusive", "error"
ASSERT, DEADLOCK, MODEL_ERROR = "assert", "deadlock", "model error"

Clocks = tuple[int, ...]
Node = tuple[State, Clocks]


class ValuedModel(TimedModel, Protocol):
    """A timed model with concrete parameter values."""

    values: Mapping[str, Fraction]


@dataclass(frozen=True)
class Finding:
    """A property broken on some run of ``events`` events (the fewest possible)."""

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
    """The violated property: an invariant or response name, ``assert``, ``deadlock``
    or ``model error`` (verdict ``error``)."""
    message: str | None = None
    events: int | None = None
    """Events on a shortest run to the reported finding."""
    states: int = 0
    """Distinct (discrete state, integer clock values) reached."""
    findings: dict[str, Finding] = field(default_factory=dict)
    """Every property found, with its shortest run (all of them when exhaustive)."""
    strict: bool = False
    """Whether a strict (``<``, ``>``) guard or deadline atom was evaluated: then
    integer time may disagree with dense time."""
    grid: int = 1


def integer_bounds(model: ValuedModel, grid: int = 1) -> list[int]:
    """The model's clock bounds (times ``grid``) as integers; ValueError if one is not."""
    out: list[int] = []
    for b in model.bounds:
        v = b.evaluate(model.values) * grid
        if v.denominator != 1:
            raise ValueError(
                f"clock bound {b} = {b.evaluate(model.values)} is not an integer"
                + (f" multiple of 1/{grid}" if grid != 1 else "")
            )
        out.append(int(v))
    return out


class _Run:
    def __init__(self, model: ValuedModel, deadlock: bool, grid: int) -> None:
        self.model = model
        self.deadlock = deadlock
        self.bounds = integer_bounds(model, grid)
        self.cap = max([0, *self.bounds]) + 1
        self.strict = False

    def atom(self, a: ClockAtom, clocks: Clocks, hazard: bool = False) -> bool:
        c = clocks[a.clock]
        k = self.bounds[a.bound]
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

    def all_hold(self, atoms: Sequence[ClockAtom], clocks: Clocks) -> bool:
        return all(self.atom(a, clocks) for a in atoms)

    def delayed(self, clocks: Clocks) -> Clocks:
        cap = self.cap
        return tuple(c + 1 if c < cap else cap for c in clocks)

    @staticmethod
    def reset(clocks: Clocks, resets: Sequence[int]) -> Clocks:
        if not resets:
            return clocks
        out = list(clocks)
        for c in resets:
            out[c] = 0
        return tuple(out)


def reference_explore(
    model: ValuedModel,
    *,
    deadlock: bool = True,
    exhaustive: bool = False,
    grid: int = 1,
    max_states: int | None = None,
) -> RefResult:
    """Explore ``model`` in integer time (steps of ``1/grid``) and check its properties.

    Layer ``d`` of the search holds the states whose shortest run has ``d``
    events (delays are free), so every finding comes with the fewest events of
    a run breaking it.  Without ``exhaustive``, the search stops after the
    first layer with a finding and reports the finding with the fewest events
    (ties: the first found); with it, every reachable state is explored and
    :attr:`RefResult.findings` lists every property broken.
    """
    run = _Run(model, deadlock, grid)
    n_clocks = len(model.clock_names)
    seen: set[Node] = set()
    findings: dict[str, Finding] = {}
    order: list[str] = []

    def found(prop: str, message: str, events: int, node: Node) -> None:
        old = findings.get(prop)
        if old is None or events < old.events:
            findings[prop] = Finding(prop, message, events, node[0], node[1])
            if old is None:
                order.append(prop)

    def result(verdict: str | None = None) -> RefResult:
        res = RefResult(HOLDS, states=len(seen), findings=dict(findings), strict=run.strict,
                        grid=grid)
        if findings:
            best = min((findings[p] for p in order), key=lambda f: f.events)
            res.verdict = ERROR if best.prop == MODEL_ERROR else VIOLATED
            res.prop, res.message, res.events = best.prop, best.message, best.events
        if verdict is not None:
            res.verdict = verdict
        return res

    zero: Clocks = (0,) * n_clocks
    layer: list[Node] = []
    for s in model.initial_states():
        node = (s, zero)
        try:
            ok = run.all_hold(model.deadlines(s), zero)
        except ModelRuntimeError as err:
            found(MODEL_ERROR, err.message, 0, node)
            continue
        if ok and node not in seen:
            seen.add(node)
            layer.append(node)
    depth = 0
    while layer:
        candidates: list[Node] = []
        queue = list(layer)
        i = 0
        while i < len(queue):
            if max_states is not None and len(seen) > max_states:
                return result(INCONCLUSIVE)
            node = queue[i]
            i += 1
            s, clocks = node
            try:
                for v in model.violations(s):
                    found(v.property, v.message, depth, node)
                for h in model.hazards(s):
                    if all(run.atom(a, clocks, hazard=True) for a in h.atoms):
                        found(h.property, h.message, depth, node)
                edges: Sequence[Edge] = model.edges(s)
                deadlines = model.deadlines(s)
                fires = False
                for e in edges:
                    if not run.all_hold(e.guard, clocks):
                        continue
                    if e.failure is not None:
                        fires = True
                        found(ASSERT, e.failure, depth + 1, node)
                        continue
                    after = run.reset(clocks, e.resets)
                    if run.all_hold(model.deadlines(e.target), after):
                        fires = True
                        candidates.append((e.target, after))
                later = run.delayed(clocks)
                can_wait = run.all_hold(deadlines, later)
            except ModelRuntimeError as err:
                found(MODEL_ERROR, err.message, depth, node)
                continue
            if can_wait:
                nxt = (s, later)
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
            elif deadlock and deadlines and not fires:
                found(DEADLOCK, "deadlock: no event can fire and time cannot pass", depth, node)
        if findings and not exhaustive:
            return result()
        layer = []
        for node in candidates:
            if node not in seen:
                seen.add(node)
                layer.append(node)
        depth += 1
    return result()

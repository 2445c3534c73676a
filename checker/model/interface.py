"""The small interface every kvrace engine depends on.

A :class:`TimedModel` is a timed automaton with data, seen from the outside:

* a discrete state is a tuple of ints (``State``); every clock starts at 0;
* :meth:`TimedModel.edges` lists the ways to leave a discrete state: an event
  instance, the clock constraints under which it may fire (a conjunction, so
  zones stay convex; an event whose guard has a disjunction over clocks gives
  one edge per disjunct), the clocks it resets, and the successor state — or
  the message of an ``assert`` the event violated;
* :meth:`TimedModel.deadlines` gives the upper bounds on clocks that hold
  while the model stays in a state (time may not pass them);
* :meth:`TimedModel.violations` and :meth:`TimedModel.hazards` give the
  properties a state breaks outright, or breaks for some clock values.

Clock bounds are linear expressions over the timing parameters
(:class:`LinExpr`), referenced by index into :attr:`TimedModel.bounds`, so
the zone explorer evaluates them once for concrete values and the Z3 layer
can keep them symbolic.  The DSL compiles to this interface
(:mod:`checker.model.compiled`); a hand-written Python model can implement it
too.
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from checker.errors import Inconclusive, ModelError
from checker.results import PropertyKind

State = tuple[int, ...]


class Relation(str, enum.Enum):
    """The comparison of a clock atom, ``clock op bound`` (a member compares equal to,
    and prints as, the operator as written)."""

    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="

    def __str__(self) -> str:
        return self.value


LT, LE, GT, GE = Relation.LT, Relation.LE, Relation.GT, Relation.GE
NEGATED_OP: dict[Relation, Relation] = {LT: GE, LE: GT, GT: LE, GE: LT}
"""The relation of ``not (clock op bound)``."""


@dataclass(frozen=True)
class LinExpr:
    """``const + sum(coef * param)``: a clock bound, linear in the timing parameters."""

    const: Fraction
    terms: tuple[tuple[str, Fraction], ...] = ()

    def evaluate(self, params: Mapping[str, Fraction]) -> Fraction:
        """The value of the bound for concrete parameter values."""
        return self.const + sum((c * params[p] for p, c in self.terms), Fraction(0))

    def __str__(self) -> str:
        parts: list[str] = []
        for p, c in self.terms:
            if c == 1:
                parts.append(p)
            elif c == -1:
                parts.append(f"-{p}")
            else:
                parts.append(f"{_num(c)}*{p}")
        if self.const != 0 or not parts:
            parts.append(_num(self.const))
        text = " + ".join(parts)
        return text.replace("+ -", "- ")


def _num(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"


MAX_SCALED_BOUND = 1 << 100
"""The zone explorer scales every clock bound by the common denominator of all of
them and works on exact integers; each scaled bound must lie within this (so that
no sum of bounds along a difference-bound matrix reaches its "no bound" encoding)."""


def scaled_bounds(bounds: Sequence[LinExpr], values: Mapping[str, Fraction]
                  ) -> tuple[list[int], int]:
    """Every bound's value times their common denominator, and that denominator.

    Raises ValueError, with a readable reason, when a scaled bound exceeds
    :data:`MAX_SCALED_BOUND` in magnitude."""
    vals = [b.evaluate(values) for b in bounds]
    scale = 1
    for v in vals:
        scale = scale * v.denominator // math.gcd(scale, v.denominator)
    out = [int(v * scale) for v in vals]
    for v, b, c in zip(vals, bounds, out, strict=True):
        if abs(c) > MAX_SCALED_BOUND:
            shown = str(b) if not b.terms else f"{b} = {_num(v)}"
            raise ValueError(
                f"the clock bound {shown} is too large for exact zones with these"
                f" parameter values: all clock bounds share the denominator {scale}, so it"
                f" becomes {c}, beyond 2^100; give parameters values with smaller"
                " denominators (fewer decimal places) or smaller magnitudes"
            )
    return out, scale


@dataclass(frozen=True)
class ClockAtom:
    """``clock op bound``: ``clock`` indexes :attr:`TimedModel.clock_names`,
    ``bound`` indexes :attr:`TimedModel.bounds`."""

    clock: int
    op: Relation
    bound: int


@dataclass(frozen=True, slots=True)
class Edge:
    """One way to fire one event instance from a discrete state.  Slotted: the edge
    memos hold many."""

    event: int
    guard: tuple[ClockAtom, ...]
    resets: tuple[int, ...]
    target: State
    failure: str | None = None
    """The message of the ``assert`` this firing violates, if any."""


@dataclass(frozen=True)
class Violation:
    """A property broken by a discrete state, with a readable message."""

    property: str
    message: str
    kind: PropertyKind = PropertyKind.INVARIANT
    """What kind of property ``property`` names."""


@dataclass(frozen=True)
class Hazard:
    """A property broken by the clock valuations of a state that satisfy ``atoms``."""

    property: str
    message: str
    atoms: tuple[ClockAtom, ...]
    kind: PropertyKind = PropertyKind.RESPONSE
    """What kind of property ``property`` names."""


@dataclass(frozen=True)
class QueryMatch:
    """A ``reachable`` query whose data part holds in a discrete state: it holds in a
    symbolic state of that discrete state exactly when some valuation of the zone
    satisfies every atom of one of ``parts`` (a part without atoms: any valuation)."""

    query: int
    """The query's position in the model's ``query_names``."""
    parts: tuple[tuple[ClockAtom, ...], ...]


def query_matches(model: object, s: State) -> Sequence[QueryMatch]:
    """``model.queries(s)`` for a model with ``reachable`` queries (an optional part of
    the interface: ``query_names`` and ``queries``); nothing for any other model."""
    if not getattr(model, "query_names", ()):
        return ()
    got: Sequence[QueryMatch] = model.queries(s)  # type: ignore[attr-defined]
    return got


def query_atoms(model: object, s: State) -> list[ClockAtom]:
    """Every clock atom the ``reachable`` queries read in ``s`` (for the clock-bounds
    pass: those clocks are live there, and their constants count)."""
    return [a for m in query_matches(model, s) for part in m.parts for a in part]


@dataclass(frozen=True)
class ParamConstraint:
    """One linear constraint ``expr < 0`` (``strict``) or ``expr <= 0`` over the timing
    parameters, from an ``assume`` declaration of the spec (an equality is two of these).
    Only parameter values satisfying every constraint are explored, checked or
    simulated."""

    expr: LinExpr
    strict: bool
    text: str
    """The comparison as written, e.g. ``rc_slow_min > rc_fast_max``."""
    where: str
    """Its place, ``FILE:LINE:COL``."""

    def holds(self, values: Mapping[str, Fraction]) -> bool:
        """Whether the constraint holds at concrete parameter values."""
        v = self.expr.evaluate(values)
        return v < 0 if self.strict else v <= 0


@dataclass(frozen=True)
class Param:
    """A timing parameter: its default value and declared range (bounds may be open)."""

    name: str
    default: Fraction
    lo: Fraction | None = None
    lo_open: bool = False
    hi: Fraction | None = None
    hi_open: bool = False

    def contains(self, value: Fraction) -> bool:
        """Whether ``value`` lies in the declared range."""
        if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
            return False
        return not (
            self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi))
        )

    def range_text(self) -> str:
        """The range as written in a spec, e.g. ``(0, 10]``; empty when unbounded."""
        if self.lo is None and self.hi is None:
            return ""
        lo = "(" if self.lo_open else "["
        hi = ")" if self.hi_open else "]"
        lo_v = _num(self.lo) if self.lo is not None else "-inf"
        hi_v = _num(self.hi) if self.hi is not None else "inf"
        return f"{lo}{lo_v}, {hi_v}{hi}"


@dataclass(frozen=True)
class Symmetry:
    """One permutation of the values of the symmetric types.

    ``state`` maps a state to its image; ``clocks[i]`` is the image of clock
    ``i``; ``events[e]`` is the image of event instance ``e``.
    """

    src: tuple[int, ...]
    valmaps: tuple[tuple[int, ...] | None, ...]
    clocks: tuple[int, ...]
    events: tuple[int, ...]

    def __post_init__(self) -> None:
        # The hot path of symmetry reduction: gather with a C-level itemgetter, then
        # rename the few cells that hold symmetric values.
        gather = operator.itemgetter(*self.src) if len(self.src) > 1 else None
        renames = tuple((j, vm) for j, vm in enumerate(self.valmaps) if vm is not None)
        object.__setattr__(self, "_gather", gather)
        object.__setattr__(self, "_renames", renames)

    def clock_inverse(self) -> tuple[int, ...]:
        """``clock_inverse()[c]``: the clock this permutation maps onto ``c``."""
        got: tuple[int, ...] | None = self.__dict__.get("_clock_inverse")
        if got is None:
            inv = [0] * len(self.clocks)
            for c, img in enumerate(self.clocks):
                inv[img] = c
            got = tuple(inv)
            object.__setattr__(self, "_clock_inverse", got)
        return got

    def state(self, s: State) -> State:
        """The image of state ``s`` under this permutation."""
        gather = self._gather  # type: ignore[attr-defined]
        t = [s[j] for j in self.src] if gather is None else list(gather(s))
        for j, vm in self._renames:  # type: ignore[attr-defined]
            t[j] = vm[t[j]]
        return tuple(t)


@dataclass(frozen=True)
class Components:
    """A model seen as a network of components (process instances, shared variables),
    for local-time zones (:mod:`checker.semantics.localtime`): an optional part of the
    interface, which a model offers through a ``components()`` method
    (:func:`components_of`).  Each clock belongs to one component, and each event
    instance synchronises a set of components that includes the owner of everything
    it reads or writes (see :mod:`checker.model.components`)."""

    names: tuple[str, ...]
    """A readable name per component."""
    clocks: tuple[int, ...]
    """The component owning each clock."""
    events: tuple[tuple[int, ...], ...]
    """The components each event instance synchronises, sorted."""
    lower: tuple[tuple[LinExpr, ...], ...]
    """Per clock, every bound it is compared with from below (``>``, ``>=``) anywhere in
    the model."""
    upper: tuple[tuple[LinExpr, ...], ...]
    """Per clock, every bound it is compared with from above (guards and deadlines)."""
    unsupported: str | None = None
    """Why local-time zones cannot check the model soundly (None: they can)."""


def components_of(model: object) -> Components | None:
    """``model.components()`` for a model that offers its component structure; None for
    any other."""
    fn = getattr(model, "components", None)
    if fn is None:
        return None
    got: Components = fn()
    return got


@dataclass(frozen=True)
class LocalClock:
    """One clock's constants where it is live: every bound it is compared with from below
    (``>``, ``>=``) and from above (``<``, ``<=``, deadlines) on some path from there
    before it is reset (the largest, once evaluated, are its L and U)."""

    clock: int
    lower: tuple[LinExpr, ...]
    upper: tuple[LinExpr, ...]


@dataclass(frozen=True)
class ProcessClocks:
    """The clocks of one process instance, per location (see
    :mod:`checker.model.staticbounds`)."""

    cell: int
    """Where the state keeps the instance's location."""
    locations: tuple[tuple[int, tuple[LocalClock, ...]], ...]
    """Per location value, the instance's clocks live there with their constants (a
    clock of the instance not listed is dead there)."""


@dataclass(frozen=True)
class StaticClocks:
    """Clock bounds computed from a network of processes' syntax, per process location:
    an optional part of the interface, which a model offers through a
    ``static_clocks()`` method (:func:`static_clocks_of`).  A state's live clocks are
    those live at each owner's location there, and the shared ones."""

    processes: tuple[ProcessClocks, ...]
    shared: tuple[LocalClock, ...]
    """Clocks live in every state, with their constants over the whole model."""


def static_clocks_of(model: object) -> StaticClocks | None:
    """``model.static_clocks()`` for a model that offers static clock bounds; None for
    any other, and for a model that is not a network of processes."""
    fn = getattr(model, "static_clocks", None)
    if fn is None:
        return None
    got: StaticClocks | None = fn()
    return got


class Undecided(Inconclusive):
    """An engine could not decide a question (a solver's ``unknown``): inconclusive."""


class LimitReached(Inconclusive):
    """A resource limit ended a phase before it finished (e.g. building a model):
    the run is inconclusive, never a verdict."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class ModelRuntimeError(ModelError):
    """A run-time model error: a value outside its domain, a ``none`` dereference.

    Raised by :meth:`TimedModel.edges`; engines report it with the trace that
    reached the state, never as a crash.
    """

    def __init__(self, message: str, event: int | None = None, state: State | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.event = event
        self.state = state


class TimedModel(Protocol):
    """What every engine needs from a model (see the module docstring)."""

    @property
    def name(self) -> str:
        """The model's name."""
        ...

    @property
    def clock_names(self) -> Sequence[str]:
        """A readable name per clock instance, e.g. ``since_post[A, 0]``."""
        ...

    @property
    def event_names(self) -> Sequence[str]:
        """A readable label per event instance, e.g. ``decode.land(A, 0)``."""
        ...

    @property
    def bounds(self) -> Sequence[LinExpr]:
        """The clock bounds that :class:`ClockAtom` refers to by index."""
        ...

    @property
    def params(self) -> Mapping[str, Param]:
        """The timing parameters, by name."""
        ...

    @property
    def values(self) -> Mapping[str, Fraction]:
        """The concrete parameter values this instance of the model uses."""
        ...

    @property
    def param_constraints(self) -> Sequence[ParamConstraint]:
        """The spec's ``assume`` constraints on the parameters (parametric exploration
        starts inside them)."""
        ...

    def initial_states(self) -> Sequence[State]:
        """The initial discrete states (all clocks are 0 there)."""
        ...

    def edges(self, s: State) -> Sequence[Edge]:
        """The edges out of ``s``, in a fixed order; may raise ModelRuntimeError."""
        ...

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """Upper bounds (``<`` or ``<=``) on clocks that hold while in ``s``."""
        ...

    def violations(self, s: State) -> Sequence[Violation]:
        """Properties ``s`` breaks whatever the clocks are."""
        ...

    def hazards(self, s: State) -> Sequence[Hazard]:
        """Properties ``s`` breaks for the clock values satisfying a hazard's atoms."""
        ...

    def symmetries(self) -> Sequence[Symmetry]:
        """The non-identity permutations of symmetric values (empty if none)."""
        ...

    def describe(self, s: State) -> dict[str, object]:
        """A readable valuation of ``s``: variable name (with indices) to value."""
        ...

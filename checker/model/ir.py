"""The typed, elaborated form of a specification.

The elaborator (:mod:`checker.language.elaborate`) produces a :class:`Spec`:
every name resolved to a variable, clock, parameter or local slot, every
expression typed, every domain finite.  :mod:`checker.model.compiled` turns a
``Spec`` and concrete parameter values into a runnable
:class:`~checker.model.interface.TimedModel`.

Values are ints: ``bool`` is 0/1, an enumeration value its position, a range
value itself, and ``none`` is -1.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from checker.diagnostics import Span
from checker.model.interface import LinExpr, Param

NONE = -1


@dataclass(frozen=True)
class FiniteType:
    """A finite type: ``bool``, an enumeration, or an integer range."""

    name: str
    kind: str  # "bool" | "enum" | "range"
    labels: tuple[str, ...] = ()
    lo: int = 0
    hi: int = 1
    symmetric: bool = False

    @property
    def size(self) -> int:
        """Number of values."""
        return self.hi - self.lo + 1

    def values(self) -> range:
        """The encoded values, in order."""
        return range(self.lo, self.hi + 1)

    def show(self, v: int) -> str:
        """The value ``v`` as written in a spec."""
        if v == NONE and self.kind != "range":
            return "none"
        if self.kind == "bool":
            return "true" if v else "false"
        if self.kind == "enum":
            return self.labels[v] if 0 <= v < len(self.labels) else f"<bad {v}>"
        return str(v)

    def __str__(self) -> str:
        return self.name


BOOL = FiniteType("bool", "bool", (), 0, 1)


@dataclass(frozen=True)
class ValueType:
    """The type of a variable's value: a finite type, possibly optional (``T?``)."""

    base: FiniteType
    optional: bool = False

    def show(self, v: int) -> str:
        """The value ``v`` as written in a spec."""
        if self.optional and v == NONE:
            return "none"
        return self.base.show(v)

    def contains(self, v: int) -> bool:
        """Whether ``v`` is a value of this type."""
        return (self.optional and v == NONE) or self.base.lo <= v <= self.base.hi

    def __str__(self) -> str:
        return f"{self.base}?" if self.optional else str(self.base)


def domain_points(domain: tuple[FiniteType, ...]) -> Iterator[tuple[int, ...]]:
    """Every index tuple of a map domain, in row-major order."""
    return itertools.product(*(t.values() for t in domain))


def domain_size(domain: tuple[FiniteType, ...]) -> int:
    """Number of cells of a map domain (1 for a scalar)."""
    n = 1
    for t in domain:
        n *= t.size
    return n


def cell_index(domain: tuple[FiniteType, ...], index: tuple[int, ...]) -> int:
    """The row-major position of ``index`` in ``domain``."""
    pos = 0
    for t, v in zip(domain, index, strict=True):
        pos = pos * t.size + (v - t.lo)
    return pos


def show_index(domain: tuple[FiniteType, ...], index: tuple[int, ...]) -> str:
    """``[A, 0]`` for an index tuple, empty for a scalar."""
    if not domain:
        return ""
    return "[" + ", ".join(t.show(v) for t, v in zip(domain, index, strict=True)) + "]"


@dataclass(frozen=True)
class Var:
    """A state variable: a scalar or a total map over a finite domain."""

    name: str
    domain: tuple[FiniteType, ...]
    value: ValueType
    init: int
    offset: int
    span: Span

    @property
    def size(self) -> int:
        """Number of state cells the variable occupies."""
        return domain_size(self.domain)


@dataclass(frozen=True)
class Clock:
    """A clock declaration: a scalar clock or a family indexed by a finite domain."""

    name: str
    domain: tuple[FiniteType, ...]
    offset: int
    span: Span

    @property
    def size(self) -> int:
        """Number of clock instances."""
        return domain_size(self.domain)


# ---- expressions -------------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """Base class of typed expressions."""


@dataclass(frozen=True)
class Const(Expr):
    """An encoded value."""

    value: int


@dataclass(frozen=True)
class Local(Expr):
    """An event parameter or bound variable, by slot number."""

    slot: int
    name: str


@dataclass(frozen=True)
class Read(Expr):
    """A variable read, ``var[index...]``."""

    var: Var
    index: tuple[Expr, ...]


@dataclass(frozen=True)
class Some(Expr):
    """The value of an option that must not be ``none`` here (checked at run time)."""

    operand: Expr
    site: str


@dataclass(frozen=True)
class InRange(Expr):
    """An int that must lie in ``lo..hi`` here (checked at run time)."""

    operand: Expr
    lo: int
    hi: int
    site: str


@dataclass(frozen=True)
class Unary(Expr):
    """``not`` or ``-``."""

    op: str
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    """``and or => == != < <= > >= + - *``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Member(Expr):
    """``value in {options}``."""

    value: Expr
    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Quant(Expr):
    """``forall``/``exists`` over a finite type, binding a local slot."""

    kind: str
    slot: int
    type: FiniteType
    body: Expr


@dataclass(frozen=True)
class ClockTest(Expr):
    """A clock atom inside a guard, before guards are split into convex branches."""

    clock: Clock
    index: tuple[Expr, ...]
    op: str
    bound: LinExpr


# ---- statements ------------------------------------------------------------------


@dataclass(frozen=True)
class Stmt:
    """Base class of statements."""


@dataclass(frozen=True)
class Assign(Stmt):
    """``var[index] := value`` (with a run-time domain check where needed)."""

    var: Var
    index: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True)
class ResetClock(Stmt):
    """``reset clock[index]``."""

    clock: Clock
    index: tuple[Expr, ...]


@dataclass(frozen=True)
class AssertStmt(Stmt):
    """``assert cond : message`` with formatted holes."""

    cond: Expr
    pieces: tuple[str, ...]
    holes: tuple[tuple[Expr, ValueType | None], ...]
    text: str


@dataclass(frozen=True)
class IfStmt(Stmt):
    """``if cond { then } else { orelse }``."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


# ---- declarations ------------------------------------------------------------------


@dataclass(frozen=True)
class Branch:
    """One convex disjunct of a guard: a data condition and clock atoms."""

    data: Expr
    clocks: tuple[ClockTest, ...]


@dataclass(frozen=True)
class Event:
    """An event declaration, with its guard already split into convex branches."""

    actor: str
    name: str
    params: tuple[tuple[str, FiniteType], ...]
    branches: tuple[Branch, ...]
    body: tuple[Stmt, ...]
    receives: tuple[str, tuple[Expr, ...]] | None
    nslots: int
    span: Span

    @property
    def label(self) -> str:
        """``actor.name``."""
        return f"{self.actor}.{self.name}"


@dataclass(frozen=True)
class Deadline:
    """``deadline name(params): clock <= bound while cond``."""

    name: str
    params: tuple[tuple[str, FiniteType], ...]
    atoms: tuple[ClockTest, ...]
    cond: Expr
    nslots: int
    span: Span


@dataclass(frozen=True)
class Invariant:
    """``invariant name(params): expr`` — must hold in every reachable state."""

    name: str
    params: tuple[tuple[str, FiniteType], ...]
    expr: Expr
    nslots: int
    span: Span


@dataclass(frozen=True)
class Response:
    """``property name(params): P leadsto Q within T`` (bounded response)."""

    name: str
    params: tuple[tuple[str, FiniteType], ...]
    trigger: Expr
    response: Expr
    within: LinExpr
    nslots: int
    span: Span


@dataclass(frozen=True)
class Spec:
    """A fully elaborated specification."""

    name: str
    path: str
    types: tuple[FiniteType, ...]
    params: tuple[Param, ...]
    actors: tuple[str, ...]
    vars: tuple[Var, ...]
    clocks: tuple[Clock, ...]
    events: tuple[Event, ...]
    deadlines: tuple[Deadline, ...]
    invariants: tuple[Invariant, ...]
    responses: tuple[Response, ...]
    state_size: int
    clock_count: int
    source: str = field(default="", compare=False, repr=False)

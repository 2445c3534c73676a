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

import dataclasses
import enum
import itertools
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from checker.diagnostics import Span
from checker.errors import KvraceError
from checker.model.interface import NEGATED_OP, LinExpr, Param, ParamConstraint, Relation

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

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
    ordered: bool = False
    """An ``ordered`` enumeration: its values compare with ``< <= > >=`` and step with
    ``+ 1``/``- 1`` (integer ranges are always ordered; see :attr:`is_ordered`)."""

    @property
    def is_ordered(self) -> bool:
        """Whether values of this type compare by order (ranges and ordered enums)."""
        return self.kind == "range" or self.ordered

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


# ---- operators ---------------------------------------------------------------------
#
# Each member compares equal to, hashes as and prints as the operator as written in a
# spec, so messages and generated code spell it the same.


class UnaryOp(str, enum.Enum):
    """The operator of a :class:`Unary` expression."""

    NOT = "not"
    NEG = "-"

    def __str__(self) -> str:
        return self.value


class BinaryOp(str, enum.Enum):
    """The operator of a :class:`Binary` expression."""

    AND = "and"
    OR = "or"
    IMPLIES = "=>"
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"

    def __str__(self) -> str:
        return self.value

    @property
    def logical(self) -> bool:
        """``and``, ``or``, ``=>``: the right operand is read only when it decides."""
        return self in _LOGICAL

    @property
    def comparison(self) -> bool:
        """``== != < <= > >=``: two values to a bool."""
        return self in _COMPARISON

    @property
    def arithmetic(self) -> bool:
        """``+ - * / %``: two ints to an int."""
        return self in _ARITHMETIC


_LOGICAL = frozenset({BinaryOp.AND, BinaryOp.OR, BinaryOp.IMPLIES})
_COMPARISON = frozenset({BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE, BinaryOp.GT,
                         BinaryOp.GE})
_ARITHMETIC = frozenset({BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV,
                         BinaryOp.MOD})


class Quantifier(str, enum.Enum):
    """The kind of a :class:`Quant` expression."""

    FORALL = "forall"
    EXISTS = "exists"

    def __str__(self) -> str:
        return self.value


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
    what: str = ""
    """The fault message (``{v}`` stands for the value), or empty for the generic one."""

    def fault(self, v: int) -> str:
        """The message of the run-time error when ``v`` is outside ``lo..hi``."""
        if self.what:
            return f"{self.what.replace('{v}', str(v))} at {self.site}"
        return f"value {v} outside {self.lo}..{self.hi} at {self.site}"


@dataclass(frozen=True)
class Unary(Expr):
    """``not`` or ``-``."""

    op: UnaryOp
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    """``and or => == != < <= > >= + - * / %``.

    ``/`` truncates toward zero and ``%`` takes the sign of the dividend (as in C and
    UPPAAL); a zero divisor is a run-time model error reported at ``site``."""

    op: BinaryOp
    left: Expr
    right: Expr
    site: str = ""


def divide(op: BinaryOp, a: int, b: int, site: str) -> int:
    """``a / b`` or ``a % b`` (``op`` is DIV or MOD) with C semantics; raises
    ZeroDivisionError with the message of the model error when ``b`` is 0."""
    if b == 0:
        raise ZeroDivisionError(
            f"{'division' if op == BinaryOp.DIV else 'modulo'} by zero at {site}")
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q if op == BinaryOp.DIV else a - b * q


@dataclass(frozen=True)
class Member(Expr):
    """``value in {options}``."""

    value: Expr
    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Quant(Expr):
    """``forall``/``exists`` over a finite type, binding a local slot."""

    kind: Quantifier
    slot: int
    type: FiniteType
    body: Expr


@dataclass(frozen=True)
class ClockTest(Expr):
    """A clock atom inside a guard, before guards are split into convex branches."""

    clock: Clock
    index: tuple[Expr, ...]
    op: Relation
    bound: LinExpr


@dataclass(frozen=True)
class IndexCheck(Expr):
    """True, after evaluating a clock atom's index (and its run-time checks).

    :func:`split_guard` puts one in a branch's data condition where the guard
    evaluates a clock index that can fault, so that the fault happens exactly
    when the guard, read left to right, reaches that clock atom."""

    index: tuple[Expr, ...]


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


@dataclass(frozen=True)
class Receiver:
    """One receiving event of a broadcast.

    Every binding of ``slots`` (row-major, in the types' order) whose ``guard`` holds
    in the state before the synchronisation takes part: its ``body`` runs after the
    sender's, in that order.  ``instance`` is ``(process, slot)`` for an event of a
    process template: one instance may take part at most once (a flat event's bindings
    each take part)."""

    label: str
    slots: tuple[tuple[int, FiniteType], ...]
    guard: Expr
    body: tuple[Stmt, ...]
    instance: tuple[str, int | None] | None
    """``(process, slot of the instance)``, the slot None for a one-instance template."""


@dataclass(frozen=True)
class Broadcast(Stmt):
    """A broadcast synchronisation: the receivers' guards are evaluated first, then the
    sender's statements run, then each enabled receiver's."""

    channel: str
    sender: tuple[Stmt, ...]
    receivers: tuple[Receiver, ...]

    def twice(self, process: str) -> str:
        """The fault of an instance of ``process`` that could receive twice."""
        return (f"an instance of `{process}` has two enabled receiving events on broadcast"
                f" channel `{self.channel}`; each instance receives a broadcast at most once")


# ---- declarations ------------------------------------------------------------------


@dataclass(frozen=True)
class Branch:
    """One convex disjunct of a guard: a data condition and clock atoms.

    ``data`` is evaluated left to right with short-circuit ``and``; when it is
    true the branch is enabled under the conjunction of ``clocks`` (whose indexes
    no longer fault: ``data`` checked them)."""

    data: Expr
    clocks: tuple[ClockTest, ...]


@dataclass(frozen=True)
class SyncInfo:
    """How an event came from a channel synchronisation, for diagrams: the channel,
    and the lanes (actors) of the sender and of the receivers."""

    channel: str
    broadcast: bool
    sender: str
    receivers: tuple[str, ...]
    sender_params: int
    """How many of the event's parameters are the sender's (the rest, the receiver's)."""
    receiver_args: tuple[int, ...]
    """For a handshake, the receiver's parameters as positions in the event's: a
    parameter the channel fixes is the sender's it equals."""


@dataclass(frozen=True)
class Event:
    """An event declaration, with its guard already split into convex branches."""

    actor: str
    name: str
    params: tuple[tuple[str, FiniteType], ...]
    guard: Expr
    """The guard as written (``Const(1)`` when absent); :attr:`branches` is its split."""
    branches: tuple[Branch, ...]
    body: tuple[Stmt, ...]
    receives: tuple[str, tuple[Expr, ...]] | None
    nslots: int
    span: Span
    sync: SyncInfo | None = None
    fair: bool = False
    """``fair event``: each instance is weakly fair (an instance that stays enabled from
    some point on fires again), for the liveness properties."""

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
    text: str = field(default="", compare=False)
    """The expression as written (whitespace collapsed), for messages."""

    def broken(self) -> str:
        """The message of a state that breaks this invariant."""
        return "the invariant does not hold" + (f": `{self.text}` is false" if self.text
                                                 else "")


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
class LeadsTo:
    """``property name(params): P leadsto Q`` (unbounded) or ``property name: always
    eventually Q`` (``always``; ``trigger`` is ``Const(1)``): on every infinite
    time-divergent run, and every run that ends in a deadlock, each state where ``P``
    holds is followed (or met) by one where ``Q`` holds.  ``P`` and ``Q`` read data
    only (no clock)."""

    name: str
    params: tuple[tuple[str, FiniteType], ...]
    trigger: Expr
    response: Expr
    nslots: int
    span: Span
    always: bool = False


@dataclass(frozen=True)
class ConstDef:
    """``const N in lo..hi = default``: a structural integer constant, fixed at
    elaboration (``value`` is the one this spec was elaborated with)."""

    name: str
    value: int
    default: int
    lo: int | None
    hi: int | None
    span: Span

    def range_text(self) -> str:
        """``lo..hi``, or empty when unbounded."""
        return f"{self.lo}..{self.hi}" if self.lo is not None and self.hi is not None else ""


@dataclass(frozen=True)
class Query:
    """``reachable name: expr`` — the designer claims some reachable state satisfies
    ``expr`` (a sanity check of the model, not a safety property)."""

    name: str
    expr: Expr
    nslots: int
    span: Span
    text: str = field(default="", compare=False)
    """The expression as written (whitespace collapsed), for messages."""
    branches: tuple[Branch, ...] = ()
    """``expr`` split into convex branches, as a guard is (it may test clocks: the
    query then holds in a symbolic state when some valuation of its zone satisfies
    a branch); empty when ``expr`` is about data only."""

    @property
    def parts(self) -> tuple[Branch, ...]:
        """The convex branches of the query (one, without clocks, for a data query)."""
        return self.branches or (Branch(self.expr, ()),)


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
    consts: tuple[ConstDef, ...] = ()
    queries: tuple[Query, ...] = ()
    """The ``reachable`` queries, in declaration order."""
    leadsto: tuple[LeadsTo, ...] = ()
    """The unbounded liveness properties, in declaration order."""
    assumes: tuple[ParamConstraint, ...] = ()
    """The ``assume`` constraints on the parameters, in declaration order."""


# ---- traversal -----------------------------------------------------------------------
#
# The one walk over the IR.  A node is an expression, a statement or a broadcast
# receiver; its children are the nodes held in its fields, read generically from the
# dataclass fields (inside tuples too), so a new node kind is walked, rewritten and
# renumbered without touching this section.  Every search and rewrite of the IR
# (substitution, slot renumbering, the guard splitter's rebuilt atoms, the analyses
# below) goes through children() and with_children(); only the two evaluators,
# checker.model.interp and the code generator of checker.model.compiled, dispatch on
# node kinds, each on its own: the differential tests compare one with the other.

Node = Expr | Stmt | Receiver
"""What :func:`children` returns: the IR values that contain expressions."""

_NODE_TYPES = (Expr, Stmt, Receiver)
N = TypeVar("N", bound=Node)

_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _holds_nodes(hint: object) -> bool:
    if isinstance(hint, type):
        return issubclass(hint, _NODE_TYPES)
    return any(_holds_nodes(a) for a in typing.get_args(hint))


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of IR dataclass ``cls`` whose type can hold a node, in field order."""
    got = _CHILD_FIELDS.get(cls)
    if got is None:
        hints = typing.get_type_hints(cls)
        got = tuple(f.name for f in dataclasses.fields(cls) if _holds_nodes(hints[f.name]))
        _CHILD_FIELDS[cls] = got
    return got


def _gather(value: object, out: list[Node]) -> None:
    if isinstance(value, _NODE_TYPES):
        out.append(value)
    elif isinstance(value, tuple):
        for x in value:
            _gather(x, out)


def children(node: Node) -> tuple[Node, ...]:
    """The nodes directly inside ``node``, in field order (nodes inside tuple fields, and
    inside tuples of tuples, included).  For an expression this is the order in which it
    evaluates them."""
    out: list[Node] = []
    for name in _child_fields(type(node)):
        _gather(getattr(node, name), out)
    return tuple(out)


def _rebuild(value: object, kids: Sequence[Node], at: list[int]) -> object:
    if isinstance(value, _NODE_TYPES):
        at[0] += 1
        return kids[at[0] - 1]
    if isinstance(value, tuple):
        new = tuple(_rebuild(x, kids, at) for x in value)
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    return value


def with_children(node: N, kids: Sequence[Node]) -> N:
    """``node`` with its children (as :func:`children` lists them) replaced by ``kids``,
    every other field kept; ``node`` itself when every kid is the child it replaces."""
    at = [0]
    changes: dict[str, object] = {}
    try:
        for name in _child_fields(type(node)):
            old = getattr(node, name)
            new = _rebuild(old, kids, at)
            if new is not old:
                changes[name] = new
    except IndexError:
        at[0] = len(children(node))
    if at[0] != len(kids):
        raise ValueError(f"{type(node).__name__} has {at[0]} children, not {len(kids)}")
    if not changes:
        return node
    instance: DataclassInstance = node
    return typing.cast(N, dataclasses.replace(instance, **changes))


def walk(node: Node) -> Iterator[Node]:
    """Every node in ``node``, ``node`` first (pre-order, iterative)."""
    stack: list[Node] = [node]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(children(x)))


def walk_block(body: Sequence[Stmt]) -> Iterator[Node]:
    """:func:`walk` over each statement of a block, in order."""
    for st in body:
        yield from walk(st)


def has_clock(e: Expr) -> bool:
    """Whether ``e`` tests a clock."""
    return any(isinstance(x, ClockTest) for x in walk(e))


def reads_state(e: Expr) -> bool:
    """Whether the value of ``e`` depends on the state (reads a variable)."""
    return any(isinstance(x, Read) for x in walk(e))


def can_fault(e: Expr) -> bool:
    """Whether evaluating ``e`` can raise a run-time model error."""
    return any(isinstance(x, (Some, InRange)) or _may_divide_by_zero(x) for x in walk(e))


def _may_divide_by_zero(e: Node) -> bool:
    return (isinstance(e, Binary) and e.op in (BinaryOp.DIV, BinaryOp.MOD)
            and not (isinstance(e.right, Const) and e.right.value != 0))


def substitute(e: Expr, slot: int, value: int) -> Expr:
    """``e`` with local ``slot`` replaced by the constant ``value``."""
    out = _substitute(e, slot, value)
    assert isinstance(out, Expr)
    return out


def substitute_stmt(st: Stmt, slot: int, value: int) -> Stmt:
    """Statement ``st`` with local ``slot`` replaced by the constant ``value`` (an
    unrolled loop's body)."""
    out = _substitute(st, slot, value)
    assert isinstance(out, Stmt)
    return out


def _substitute(node: Node, slot: int, value: int) -> Node:
    if isinstance(node, Local):
        return Const(value) if node.slot == slot else node
    if isinstance(node, Quant) and node.slot == slot:
        return node  # the binder shadows the slot
    if isinstance(node, Receiver) and any(sl == slot for sl, _ in node.slots):
        return node
    return with_children(node, [_substitute(k, slot, value) for k in children(node)])


def statement_exprs(body: Sequence[Stmt]) -> Iterator[Expr]:
    """Every expression a block of statements evaluates at its top (its sub-expressions
    are not listed), nested blocks and broadcast receivers included, in order."""
    stack: list[Node] = list(reversed(body))
    while stack:
        kids = children(stack.pop())
        yield from (k for k in kids if isinstance(k, Expr))
        stack.extend(reversed([k for k in kids if not isinstance(k, Expr)]))


def statements(body: Sequence[Stmt]) -> Iterator[Stmt]:
    """The statements of a block and of its nested ``if`` branches, in order (a broadcast
    is one statement: the sender's and receivers' statements are not listed)."""
    for st in body:
        yield st
        if isinstance(st, IfStmt):
            yield from statements(st.then)
            yield from statements(st.orelse)


def relocate(e: Expr, offset: int) -> Expr:
    """``e`` with every local slot moved up by ``offset`` (to join two events' slots)."""
    return remap(e, lambda slot: slot + offset)


def remap(e: Expr, where: Callable[[int], int]) -> Expr:
    """``e`` with every local slot ``k`` renumbered ``where(k)``."""
    out = _remap(e, where)
    assert isinstance(out, Expr)
    return out


def _remap(node: N, where: Callable[[int], int]) -> N:
    if isinstance(node, Local):
        return dataclasses.replace(node, slot=where(node.slot))
    if isinstance(node, Quant):
        node = dataclasses.replace(node, slot=where(node.slot))
    elif isinstance(node, Receiver):
        inst = node.instance
        node = dataclasses.replace(
            node, slots=tuple((where(sl), ft) for sl, ft in node.slots),
            instance=None if inst is None else (
                inst[0], None if inst[1] is None else where(inst[1])))
    return with_children(node, [_remap(k, where) for k in children(node)])


def relocate_stmts(body: tuple[Stmt, ...], offset: int) -> tuple[Stmt, ...]:
    """:func:`relocate` over a block of statements."""
    return remap_stmts(body, lambda slot: slot + offset)


def remap_stmts(body: tuple[Stmt, ...], where: Callable[[int], int]) -> tuple[Stmt, ...]:
    """:func:`remap` over a block of statements."""
    return tuple(_remap(st, where) for st in body)


def expressions(spec: Spec) -> Iterator[Expr]:
    """Every top-level expression of a spec: guards, bodies, deadlines, invariants,
    responses."""
    for ev in spec.events:
        yield ev.guard
        yield from statement_exprs(ev.body)
        if ev.receives is not None:
            yield from ev.receives[1]
    for dl in spec.deadlines:
        yield dl.cond
        for ct in dl.atoms:
            yield from ct.index
    for inv in spec.invariants:
        yield inv.expr
    for resp in spec.responses:
        yield resp.trigger
        yield resp.response
    for query in spec.queries:
        yield query.expr


def order_dependent_faults(spec: Spec) -> Quant | None:
    """A quantifier over a symmetric type whose body can fault, if any.

    A quantifier stops at the first value that decides it, in the type's order, so
    whether such a body faults can depend on that order: two states that are images
    of each other under a permutation of the type's values may then differ in their
    faults, and symmetry reduction would be unsound."""
    for e in expressions(spec):
        for x in walk(e):
            if isinstance(x, Quant) and x.type.symmetric and can_fault(x.body):
                return x
    return None


def order_dependent_broadcast(spec: Spec) -> Broadcast | None:
    """A broadcast with a receiver over a symmetric type that can fault, if any.

    Receivers are evaluated and run in the type's order, so which fault is met
    first can depend on that order, as for :func:`order_dependent_faults`.  (Whether
    an instance could receive twice does not: that is a property of the set.)"""
    for ev in spec.events:
        for st in ev.body:
            if not isinstance(st, Broadcast):
                continue
            for rc in st.receivers:
                if not any(ft.symmetric for _, ft in rc.slots):
                    continue
                asserts = any(isinstance(x, AssertStmt) for x in statements(rc.body))
                if (asserts or can_fault(rc.guard)
                        or any(can_fault(e) for e in statement_exprs(rc.body))):
                    return st
    return None


# ---- splitting guards into convex branches ----------------------------------------------


class TooManyBranches(KvraceError):
    """A guard over clocks splits into more convex branches (or atoms) than allowed."""


TRUE = Const(1)


def conj(items: list[Expr]) -> Expr:
    """``items[0] and items[1] and ...`` (``true`` when empty), left to right."""
    acc: Expr | None = None
    for x in items:
        acc = x if acc is None else Binary(BinaryOp.AND, acc, x)
    return TRUE if acc is None else acc


def negate(e: Expr) -> Expr:
    """``not e`` for a data condition."""
    if isinstance(e, Unary) and e.op == UnaryOp.NOT:
        return e.operand
    return Unary(UnaryOp.NOT, e)


# A branch under construction: data conditions and clock atoms in evaluation order.
_Item = Expr
_Branches = list[list[_Item]]


class _Splitter:
    def __init__(self, max_branches: int, max_atoms: int) -> None:
        self.max_branches = max_branches
        self.max_atoms = max_atoms
        self.atoms = 0

    def check(self, out: _Branches) -> _Branches:
        if len(out) > self.max_branches:
            raise TooManyBranches(
                f"this guard splits into more than {self.max_branches} convex parts over clocks"
            )
        return out

    def split(self, e: Expr, neg: bool) -> _Branches:
        if not has_clock(e):
            return [[negate(e) if neg else e]]
        if isinstance(e, ClockTest):
            self.atoms += 1
            if self.atoms > self.max_atoms:
                raise TooManyBranches(
                    f"this guard expands into more than {self.max_atoms} clock atoms"
                )
            atom = dataclasses.replace(e, op=NEGATED_OP[e.op]) if neg else e
            return [[IndexCheck(e.index), atom]] if any(map(can_fault, e.index)) else [[atom]]
        if isinstance(e, Unary) and e.op == UnaryOp.NOT:
            return self.split(e.operand, not neg)
        if isinstance(e, Binary):
            if e.op == BinaryOp.IMPLIES:
                left, right = self.split(e.left, not neg), e.right
                is_or = not neg
            else:
                left, right = self.split(e.left, neg), e.right
                is_or = (e.op == BinaryOp.OR) != neg
            if is_or:
                return self.either(left, right, neg)
            return self.both(left, right, neg)
        if isinstance(e, Quant):
            if e.type.size > self.max_branches:
                raise TooManyBranches(
                    f"a quantifier over clocks in a guard may range over at most"
                    f" {self.max_branches} values; {e.type} has {e.type.size}"
                )
            is_or = (e.kind == Quantifier.EXISTS) != neg
            acc: _Branches | None = None
            for v in e.type.values():
                part = substitute(e.body, e.slot, v)
                if acc is None:
                    acc = self.split(part, neg)
                else:
                    acc = self.either(acc, part, neg) if is_or else self.both(acc, part, neg)
            assert acc is not None
            return acc
        raise AssertionError(type(e).__name__)  # pragma: no cover

    def both(self, left: _Branches, right: Expr, neg: bool) -> _Branches:
        # `a and b` reads b only where a is not false: each branch of b follows a
        # branch of a, whose data condition goes first.
        rs = self.split(right, neg)
        return self.check([lb + rb for lb in left for rb in rs])

    def either(self, left: _Branches, right: Expr, neg: bool) -> _Branches:
        # `a or b` reads b only where a is not true, i.e. where no clock-free branch
        # of a holds; that condition guards every branch of b.
        free = [conj(b) for b in left if not any(isinstance(x, ClockTest) for x in b)]
        rs = self.split(right, neg)
        if free:
            skip: Expr = free[0]
            for f in free[1:]:
                skip = Binary(BinaryOp.OR, skip, f)
            rs = [[negate(skip), *rb] for rb in rs]
        return self.check(left + rs)


def split_guard(e: Expr, max_branches: int, max_atoms: int) -> tuple[Branch, ...]:
    """Split a guard into convex branches with left-to-right evaluation.

    The guard is read as written, left to right, with ``and``, ``or`` and ``=>``
    short-circuiting; a clock atom is neither true nor false while reading it
    (only its index is evaluated).  Each branch's data condition reads exactly
    what that left-to-right reading would read before reaching the branch, so a
    run-time fault (a ``none`` dereference, an index out of range) happens in a
    branch exactly when it happens in the guard.  Raises TooManyBranches.
    """
    out: list[Branch] = []
    for items in _Splitter(max_branches, max_atoms).split(e, False):
        data = [x for x in items if not isinstance(x, ClockTest)]
        clocks = tuple(x for x in items if isinstance(x, ClockTest))
        out.append(Branch(conj([d for d in data if d != TRUE]), clocks))
    return tuple(out)

"""The positioned abstract syntax tree of a ``.kvr`` file.

Every node carries the :class:`~checker.diagnostics.Span` it came from, so the
elaborator can point at the exact place of any name, type or domain error.
The tree is plain data: it knows nothing of lark or of the explorer.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from checker.diagnostics import Span

# ---- expressions ---------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """Base class of expressions."""

    span: Span


@dataclass(frozen=True)
class Num(Expr):
    """A numeric literal (integer or decimal)."""

    value: Fraction


@dataclass(frozen=True)
class BoolLit(Expr):
    """``true`` or ``false``."""

    value: bool


@dataclass(frozen=True)
class NoneLit(Expr):
    """``none``: the empty value of an option type."""


@dataclass(frozen=True)
class Ref(Expr):
    """A name, optionally indexed: ``x``, ``phase[r]``, ``write[r, k]``."""

    name: str
    name_span: Span
    index: tuple[Expr, ...] | None


@dataclass(frozen=True)
class Unary(Expr):
    """``not e`` or ``-e``."""

    op: str
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    """Arithmetic (``+ - * /``), comparison (``== != < <= > >=``) or logic (``and or =>``)."""

    op: str
    left: Expr
    right: Expr
    op_span: Span


@dataclass(frozen=True)
class Member(Expr):
    """``e in {a, b}`` (or ``not in`` when ``negated``)."""

    value: Expr
    options: tuple[Expr, ...]
    negated: bool


@dataclass(frozen=True)
class Binder:
    """``name: Type`` in a quantifier, an event, a deadline or a property."""

    name: str
    span: Span
    type: TypeExpr


@dataclass(frozen=True)
class Quant(Expr):
    """``forall x: T . body`` or ``exists x: T . body``."""

    kind: str
    binders: tuple[Binder, ...]
    body: Expr


# ---- types -----------------------------------------------------------------------


@dataclass(frozen=True)
class TypeExpr:
    """Base class of type expressions."""

    span: Span


@dataclass(frozen=True)
class NamedType(TypeExpr):
    """A declared type or ``bool``."""

    name: str


@dataclass(frozen=True)
class EnumType(TypeExpr):
    """An inline enumeration ``{a, b, c}``."""

    values: tuple[tuple[str, Span], ...]


@dataclass(frozen=True)
class RangeType(TypeExpr):
    """An integer range ``lo..hi`` (both inclusive).

    A bound written with constants (``0..N-1``) has its expression in ``lo_expr`` /
    ``hi_expr``, evaluated by the elaborator; ``lo``/``hi`` hold literal bounds."""

    lo: int
    hi: int
    lo_expr: Expr | None = None
    hi_expr: Expr | None = None


@dataclass(frozen=True)
class OptionType(TypeExpr):
    """``T?``: a value of ``T`` or ``none``."""

    inner: TypeExpr


@dataclass(frozen=True)
class MapType(TypeExpr):
    """``D -> V`` or ``(D1, D2) -> V``: a total map over a finite domain."""

    domain: tuple[TypeExpr, ...]
    value: TypeExpr


# ---- statements --------------------------------------------------------------------


@dataclass(frozen=True)
class Stmt:
    """Base class of statements of a ``do`` block."""

    span: Span


@dataclass(frozen=True)
class Assign(Stmt):
    """``target := value``."""

    target: Ref
    value: Expr


@dataclass(frozen=True)
class Reset(Stmt):
    """``reset c1, c2[i]``: set clocks to zero."""

    clocks: tuple[Ref, ...]


@dataclass(frozen=True)
class Assert(Stmt):
    """``assert cond : "message with {expr} holes"``."""

    cond: Expr
    message: str | None
    message_span: Span | None
    holes: tuple[Expr, ...]
    pieces: tuple[str, ...]


@dataclass(frozen=True)
class If(Stmt):
    """``if cond { ... } else { ... }``."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class For(Stmt):
    """``for k: T { ... }``: the body once per value of ``T``, in order (unrolled when
    the spec is elaborated)."""

    binder: Binder
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Skip(Stmt):
    """``skip``: do nothing."""


# ---- declarations ------------------------------------------------------------------


@dataclass(frozen=True)
class Decl:
    """Base class of top-level declarations."""

    span: Span


@dataclass(frozen=True)
class TypeDecl(Decl):
    """``[symmetric] type Name = {..} | lo..hi``."""

    name: str
    name_span: Span
    symmetric: bool
    body: TypeExpr
    ordered: bool = False
    modifier_spans: tuple[Span, ...] = ()
    """Where ``symmetric`` / ``ordered`` are written."""


@dataclass(frozen=True)
class ParamDecl(Decl):
    """``param Name in [lo, hi] = default``; range and default optional in the syntax."""

    name: str
    name_span: Span
    lo: Fraction | None
    lo_open: bool
    hi: Fraction | None
    hi_open: bool
    default: Fraction | None
    default_span: Span | None
    range_span: Span | None = None


@dataclass(frozen=True)
class ConstDecl(Decl):
    """``const Name [in lo..hi] = value``: a structural integer constant."""

    name: str
    name_span: Span
    lo: Expr | None
    hi: Expr | None
    value: Expr


@dataclass(frozen=True)
class ActorDecl(Decl):
    """``actor a, b, c``."""

    names: tuple[tuple[str, Span], ...]


@dataclass(frozen=True)
class VarDecl(Decl):
    """``var name : Type = init``."""

    name: str
    name_span: Span
    type: TypeExpr
    init: Expr | None


@dataclass(frozen=True)
class ClockDecl(Decl):
    """``clock c1, c2 : Domain``."""

    names: tuple[tuple[str, Span], ...]
    domain: tuple[TypeExpr, ...]


@dataclass(frozen=True)
class EventRef:
    """``actor.event(args)`` in a ``receives`` clause."""

    actor: str
    name: str
    span: Span
    args: tuple[Expr, ...]
    name_span: Span | None = None
    """Where ``actor.event`` is written (``span`` covers the whole clause)."""


@dataclass(frozen=True)
class SyncClause:
    """``send chan(args)`` or ``receive chan(args)``: the event takes part in a
    synchronisation on a channel."""

    direction: str  # "send" | "receive"
    channel: str
    channel_span: Span
    args: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class EventDecl(Decl):
    """``[urgent] event actor.name(params) [receives ...] [send|receive ...] [when guard]
    [do stmts]``.

    Events of a process are flattened into this form (see
    :mod:`checker.language.processes`): ``process`` names the template, and the
    template's instance, if it has one, is the first parameter."""

    actor: str
    actor_span: Span
    name: str
    name_span: Span
    params: tuple[Binder, ...]
    receives: EventRef | None
    guard: Expr | None
    body: tuple[Stmt, ...]
    sync: SyncClause | None = None
    urgent: bool = False
    process: str | None = None
    fair: Span | None = None
    """Where ``fair`` is written, when the event is weakly fair."""
    committed: Span | None = None
    """Where ``committed`` is written: the event is urgent and, while it is enabled,
    only committed events may fire."""


@dataclass(frozen=True)
class DeadlineDecl(Decl):
    """``deadline [name(params):] clock <= bound [while cond]``."""

    name: str | None
    params: tuple[Binder, ...]
    bound: Expr
    cond: Expr | None


@dataclass(frozen=True)
class InvariantDecl(Decl):
    """``invariant name(params): expr``."""

    name: str
    name_span: Span
    params: tuple[Binder, ...]
    expr: Expr


@dataclass(frozen=True)
class PropertyDecl(Decl):
    """``property name(params): P leadsto Q within T`` (bounded response), ``P leadsto
    Q`` (unbounded, ``within`` is None) or ``always eventually Q`` (``always``; the
    trigger is ``true``)."""

    name: str
    name_span: Span
    params: tuple[Binder, ...]
    trigger: Expr
    response: Expr
    within: Expr | None
    always: bool = False


@dataclass(frozen=True)
class ChanDecl(Decl):
    """``[urgent] [broadcast] chan name(T1, T2), other``."""

    names: tuple[tuple[str, Span, tuple[TypeExpr, ...]], ...]
    urgent: bool
    broadcast: bool


@dataclass(frozen=True)
class LocationDecl(Decl):
    """``[urgent|committed] location a, b [: deadline]`` inside a process."""

    kind: str  # "" | "urgent" | "committed"
    names: tuple[tuple[str, Span], ...]
    invariant: Expr | None


@dataclass(frozen=True)
class LocalEventDecl(Decl):
    """``[urgent] event name(params) [from a, b] [to c] [send|receive ...] [when g]
    [do stmts]`` inside a process."""

    name: str
    name_span: Span
    params: tuple[Binder, ...]
    urgent: bool
    sources: tuple[tuple[str, Span], ...]
    target: tuple[str, Span] | None
    sync: SyncClause | None
    guard: Expr | None
    body: tuple[Stmt, ...]
    fair: Span | None = None
    committed: Span | None = None


@dataclass(frozen=True)
class ProcessDecl(Decl):
    """``process Name(self: T) { items }``: a template instantiated once per value of
    ``T`` (once when it has no parameter)."""

    name: str
    name_span: Span
    param: Binder | None
    items: tuple[Decl, ...]


@dataclass(frozen=True)
class ProcessInfo(Decl):
    """What flattening a process leaves for the elaborator: the template's name, its
    instance type, and its urgent and committed locations (the location variable is
    ``Name.loc``)."""

    name: str
    name_span: Span
    param: Binder | None
    urgent: tuple[str, ...]
    committed: tuple[str, ...]


@dataclass(frozen=True)
class ReachableDecl(Decl):
    """``reachable name: expr`` — a state the designer claims is reachable."""

    name: str
    name_span: Span
    expr: Expr


@dataclass(frozen=True)
class AssumeDecl(Decl):
    """``assume expr`` — a linear constraint on the timing parameters."""

    expr: Expr


@dataclass(frozen=True)
class SpecFile:
    """A parsed ``.kvr`` file."""

    path: str
    model_name: str
    model_span: Span
    decls: tuple[Decl, ...]

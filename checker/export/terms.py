"""The syntax-neutral network both network exports write: terms, statements, processes.

:mod:`checker.export.network` translates a spec once, into a :class:`NetModel` (bounded
ints and clocks, processes with locations, edges with guards and bodies, synchronisation
vectors); :func:`tchecker_text` writes it in TChecker's system format and
:mod:`checker.export.uppaal` as UPPAAL's XML.  Terms and statements are small trees
(:data:`Term`, :data:`Cond`, :data:`Stmt`), so each syntax is only a printer: the two
files describe the same network by construction, and :func:`evaluate` gives a term's
value (the UPPAAL export uses it to choose a deadline process's initial location).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


class CmpOp(enum.Enum):
    """A comparison (the same symbol in both syntaxes)."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="


class ArithOp(enum.Enum):
    """An integer operator (C's truncating ``/`` and ``%`` in both tools)."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"


class Syntax(enum.Enum):
    """The tool a term is printed for."""

    TCHECKER = "tchecker"
    UPPAAL = "uppaal"


@dataclass(frozen=True)
class Name:
    """A scalar int, a clock, or a body's local, by name."""

    text: str


@dataclass(frozen=True)
class Cell:
    """One cell of an int array: ``array[index]``."""

    array: str
    index: Term


@dataclass(frozen=True)
class Ite:
    """``cond ? then : orelse`` (TChecker: ``if cond then a else b``), always parenthesised."""

    cond: Cond
    then: Term
    orelse: Term


@dataclass(frozen=True)
class Arith:
    """``left op right``, parenthesised unless ``wrap`` is false (an array position's
    product, printed inside its sum)."""

    op: ArithOp
    left: Term
    right: Term
    wrap: bool = True


@dataclass(frozen=True)
class Neg:
    """``(-operand)``."""

    operand: Term


@dataclass(frozen=True)
class Truth:
    """A constant condition (TChecker ``1``/``0``, UPPAAL ``true``/``false``)."""

    value: bool


@dataclass(frozen=True)
class Cmp:
    """``left op right``: a condition."""

    op: CmpOp
    left: Term
    right: Term


@dataclass(frozen=True)
class Conj:
    """``a && b && ...``."""

    parts: tuple[Cond, ...]


Term = int | Name | Cell | Ite | Arith | Neg
"""An integer term (a Python int: a constant folded at export time)."""
Cond = Truth | Cmp | Conj
"""A condition."""

TRUE, FALSE = Truth(True), Truth(False)


@dataclass(frozen=True)
class Assign:
    """``target = value`` (a clock reset assigns 0 to a clock's name)."""

    target: Name | Cell
    value: Term


@dataclass(frozen=True)
class If:
    """``if cond then ... else ... end``."""

    cond: Cond
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Local:
    """A body's local int, declared with its value."""

    name: str
    value: Term


@dataclass(frozen=True)
class Nop:
    """The empty statement."""


Stmt = Assign | If | Local | Nop


# ---- the network ------------------------------------------------------------------------


class DeclKind(enum.Enum):
    """What a declaration declares."""

    INT_ARRAY = "int array"
    """A variable's cells (read as ``v[i]``)."""
    INT = "int"
    """A scalar int (``failed``, an observer's flag)."""
    CLOCK = "clock"


@dataclass(frozen=True)
class Decl:
    """A bounded int (array) or a clock; ``comment`` says what it is in the spec."""

    kind: DeclKind
    name: str
    size: int = 1
    lo: int = 0
    hi: int = 0
    init: int = 0
    comment: str = ""


@dataclass(frozen=True)
class Location:
    """A location; ``labels`` are TChecker's (``bad``, a query's name)."""

    name: str
    initial: bool = False
    committed: bool = False
    urgent: bool = False
    invariant: Cond | None = None
    labels: tuple[str, ...] = ()


class ProcessKind(enum.Enum):
    """What a process stands for."""

    ACTOR = "actor"
    """An actor, or an instance of a process type."""
    DEADLINE = "deadline"
    VERDICT = "verdict"
    QUERY = "query"


@dataclass
class Process:
    """A process and its locations (in declaration order)."""

    name: str
    kind: ProcessKind
    locations: list[Location] = field(default_factory=list)
    comment: str = ""
    at: tuple[str, int] | None = None
    """The int array cell that holds the index of the process's location, when its
    locations are a spec process's (other processes' guards read it there)."""


class EventKind(enum.Enum):
    """Why an event exists."""

    STEP = "step"
    """A spec's event instance (synchronised with the verdict and its deadlines)."""
    FAILING = "failing"
    """The same instance when an assert fails."""
    PROPERTY = "property"
    """A verdict's or query process's own move (not synchronised)."""


@dataclass(frozen=True)
class Event:
    """An event; ``comment`` names the spec's event instance it stands for."""

    name: str
    kind: EventKind
    comment: str = ""


@dataclass(frozen=True)
class Edge:
    """An edge of ``process`` labelled ``event``: guard (a conjunction) and body."""

    process: str
    source: str
    target: str
    event: str
    guard: tuple[Cond, ...] = ()
    do: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Sync:
    """A synchronisation vector: each part is a process and whether it takes part only
    weakly (when it can); the first part is the event's owner, which always takes part."""

    event: str
    parts: tuple[tuple[str, bool], ...]


@dataclass
class NetModel:
    """A spec as a network of timed automata, independent of the tool's syntax."""

    system: str
    header: list[str] = field(default_factory=list)
    """Comment lines (without a comment mark): the model, its parameter values, the
    clock scale."""
    decls: list[Decl] = field(default_factory=list)
    processes: list[Process] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    syncs: list[Sync] = field(default_factory=list)

    def process(self, name: str) -> Process:
        """The process called ``name``."""
        for p in self.processes:
            if p.name == name:
                return p
        raise KeyError(name)

    def queries(self) -> list[tuple[str, str]]:
        """Each query process and the label of its location ``yes``."""
        return [(p.name, p.locations[-1].labels[0]) for p in self.processes
                if p.kind == ProcessKind.QUERY]


# ---- printing terms ---------------------------------------------------------------------


def term_text(t: Term, syntax: Syntax) -> str:
    """``t`` in ``syntax``."""
    if isinstance(t, int):
        return str(t)
    if isinstance(t, Name):
        return t.text
    if isinstance(t, Cell):
        return f"{t.array}[{term_text(t.index, syntax)}]"
    if isinstance(t, Ite):
        c, a, b = cond_text(t.cond, syntax), term_text(t.then, syntax), term_text(t.orelse,
                                                                                   syntax)
        return (f"(if {c} then {a} else {b})" if syntax == Syntax.TCHECKER
                else f"({c} ? {a} : {b})")
    if isinstance(t, Arith):
        text = f"{term_text(t.left, syntax)}{t.op.value}{term_text(t.right, syntax)}"
        return f"({text})" if t.wrap else text
    return f"(-{term_text(t.operand, syntax)})"


def cond_text(c: Cond, syntax: Syntax) -> str:
    """``c`` in ``syntax``."""
    if isinstance(c, Truth):
        if syntax == Syntax.TCHECKER:
            return "1" if c.value else "0"
        return "true" if c.value else "false"
    if isinstance(c, Cmp):
        return f"{term_text(c.left, syntax)}{c.op.value}{term_text(c.right, syntax)}"
    return "&&".join(cond_text(p, syntax) for p in c.parts)


def tchecker_stmt(s: Stmt) -> str:
    """``s`` in TChecker's statement syntax."""
    if isinstance(s, Assign):
        return f"{term_text(s.target, Syntax.TCHECKER)}={term_text(s.value, Syntax.TCHECKER)}"
    if isinstance(s, Local):
        return f"local {s.name}={term_text(s.value, Syntax.TCHECKER)}"
    if isinstance(s, Nop):
        return "nop"
    text = (f"if {cond_text(s.cond, Syntax.TCHECKER)} then "
            f"{';'.join(tchecker_stmt(x) for x in s.then) or 'nop'}")
    if s.orelse:
        text += f" else {';'.join(tchecker_stmt(x) for x in s.orelse)}"
    return text + " end"


# ---- TChecker's system format -----------------------------------------------------------


def _location_line(proc: str, loc: Location) -> str:
    attrs = []
    if loc.initial:
        attrs.append("initial:")
    if loc.committed:
        attrs.append("committed:")
    if loc.labels:
        attrs.append("labels:" + ",".join(loc.labels))
    if loc.invariant is not None:
        attrs.append("invariant:" + cond_text(loc.invariant, Syntax.TCHECKER))
    if loc.urgent:
        attrs.append("urgent:")
    return f"location:{proc}:{loc.name}{{{' : '.join(attrs)}}}"


def edge_line(e: Edge) -> str:
    """``e`` as a TChecker ``edge:`` declaration."""
    attrs = []
    if e.guard:
        attrs.append("provided:" + "&&".join(cond_text(c, Syntax.TCHECKER) for c in e.guard))
    if e.do:
        attrs.append("do:" + ";".join(tchecker_stmt(s) for s in e.do))
    tail = f"{{{' : '.join(attrs)}}}" if attrs else ""
    return f"edge:{e.process}:{e.source}:{e.target}:{e.event}{tail}"


def _decl_lines(d: Decl) -> list[str]:
    lines = [f"# {d.comment}"] if d.comment else []
    if d.kind == DeclKind.CLOCK:
        lines.append(f"clock:1:{d.name}")
    else:
        lines.append(f"int:{d.size}:{d.lo}:{d.hi}:{d.init}:{d.name}")
    return lines


def _event_lines(ev: Event) -> list[str]:
    return ([f"# {ev.name} is {ev.comment}"] if ev.comment else []) + [f"event:{ev.name}"]


def tchecker_text(net: NetModel) -> str:
    """``net`` in TChecker's system format (``tck-reach -a covreach -l bad FILE``)."""
    head = [f"# {line}" for line in net.header]
    if head:
        head[0] += " (kvrace export --tchecker)"
    lines = [*head, "# check: tck-reach -a covreach -l bad FILE", f"system:{net.system}", ""]
    for d in net.decls:
        lines.extend(_decl_lines(d))
    lines.append("")
    for p in net.processes:
        lines.append(f"process:{p.name}")
        if p.comment:
            lines.append(f"# {p.comment}")
        lines.extend(_location_line(p.name, loc) for loc in p.locations)
    lines.append("")
    for kind in (EventKind.STEP, EventKind.PROPERTY):
        for ev in net.events:
            if ev.kind == kind:
                lines.extend(_event_lines(ev))
    lines.append("")
    for ev in net.events:
        if ev.kind == EventKind.FAILING:
            lines.extend(_event_lines(ev))
    lines.extend(edge_line(e) for e in net.edges)
    lines.append("")
    for s in net.syncs:
        lines.append("sync:" + ":".join(f"{p}@{s.event}{'?' if weak else ''}"
                                        for p, weak in s.parts))
    return "\n".join(lines) + "\n"


# ---- values -----------------------------------------------------------------------------


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_ARITH: dict[ArithOp, Callable[[int, int], int]] = {
    ArithOp.ADD: lambda a, b: a + b, ArithOp.SUB: lambda a, b: a - b,
    ArithOp.MUL: lambda a, b: a * b, ArithOp.DIV: _c_div,
    ArithOp.MOD: lambda a, b: a - b * _c_div(a, b)}
_CMP: dict[CmpOp, Callable[[int, int], bool]] = {
    CmpOp.EQ: lambda a, b: a == b, CmpOp.NE: lambda a, b: a != b,
    CmpOp.LT: lambda a, b: a < b, CmpOp.LE: lambda a, b: a <= b,
    CmpOp.GT: lambda a, b: a > b, CmpOp.GE: lambda a, b: a >= b}


def evaluate(t: Term, cells: Mapping[str, Sequence[int]]) -> int:
    """The value of ``t`` when each int (array) ``name`` holds ``cells[name]`` (a clock
    or scalar is a one-cell sequence; both tools compute with C's integer division)."""
    if isinstance(t, int):
        return t
    if isinstance(t, Name):
        return cells[t.text][0]
    if isinstance(t, Cell):
        return cells[t.array][evaluate(t.index, cells)]
    if isinstance(t, Ite):
        return evaluate(t.then if holds(t.cond, cells) else t.orelse, cells)
    if isinstance(t, Arith):
        return _ARITH[t.op](evaluate(t.left, cells), evaluate(t.right, cells))
    return -evaluate(t.operand, cells)


def holds(c: Cond, cells: Mapping[str, Sequence[int]]) -> bool:
    """Whether ``c`` holds (see :func:`evaluate`)."""
    if isinstance(c, Truth):
        return c.value
    if isinstance(c, Cmp):
        return _CMP[c.op](evaluate(c.left, cells), evaluate(c.right, cells))
    return all(holds(p, cells) for p in c.parts)


def initial_cells(net: NetModel) -> dict[str, list[int]]:
    """Every int's and clock's initial cells (clocks start at 0)."""
    return {d.name: [0 if d.kind == DeclKind.CLOCK else d.init] * d.size for d in net.decls}


__all__ = [
    "FALSE", "TRUE", "Arith", "ArithOp", "Assign", "Cell", "Cmp", "CmpOp", "Cond", "Conj",
    "Decl", "DeclKind", "Edge", "Event", "EventKind", "If", "Ite", "Local", "Location",
    "Name", "Neg", "NetModel", "Nop", "Process", "ProcessKind", "Stmt", "Sync", "Syntax",
    "Term", "Truth", "cond_text", "edge_line", "evaluate", "holds", "initial_cells",
    "tchecker_stmt", "tchecker_text", "term_text"]

"""Elaboration: from the positioned AST to the typed :class:`~checker.model.ir.Spec`.

Resolves every name, checks every type and domain, and splits every event
guard into convex branches (a disjunction — or a negation — over clock
constraints becomes several edges, each a conjunction of clock atoms, so every
zone the explorer computes stays convex).  All diagnostics of the phase are
collected and raised together.

Diagnostic codes: KVR1xx names, KVR2xx types, KVR3xx domains and timing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from checker.diagnostics import Diagnostic, Span, SpecError, did_you_mean
from checker.language import ast
from checker.language.processes import LOC, flatten
from checker.model import ir
from checker.model.interface import (
    GE,
    GT,
    LE,
    LT,
    NEGATED_OP,
    LinExpr,
    Param,
    ParamConstraint,
    Relation,
)

MAX_CELLS = 1 << 16
"""Cells of one variable, instances of one clock family, event or property; also
the totals of state cells, clock instances and event instances."""
MAX_BRANCHES = 64
"""Convex branches of one guard, and instances of one quantifier over clocks."""
MAX_GUARD_ATOMS = 4096
"""Clock atoms of one guard once its quantifiers are expanded."""
MAX_ERRORS = 50
"""Diagnostics reported before giving up."""
MAX_LOOP_STATEMENTS = 4096
"""Statements one ``for`` loop may unroll into (nested loops and ``if`` branches
counted)."""
MAX_BINDINGS = 1 << 20
"""Bindings one expression's quantifiers may evaluate, nested ones multiplied: each
state evaluates them all, and no time limit can stop one evaluation half-way."""
MAX_UNROLLED_STATEMENTS = 65_536
"""Statements all the ``for`` loops of a spec may unroll into together."""

_CLOCK_HELP = {
    "an invariant": "help: an invariant is about data; to bound a clock, write"
    " `deadline NAME: clock <= bound while ...`",
    "a `do` block": "help: a `do` block cannot test clocks; put the clock constraint in the"
    " event's `when` guard",
    "a `while` condition": "help: the `while` condition is about data; the clock bound goes"
    " before `while`",
    "a property": ("help: in `P leadsto Q` (with or without `within T`), P and Q are about"
                   " data; a clock belongs in a deadline or in the bound T"),
    "an initial value": "help: every clock starts at 0",
}

_FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, "==": "==", "!=": "!="}


@dataclass(frozen=True)
class Ty:
    """The static type of an expression during checking."""

    kind: str  # bool | int | enum | none | error
    ft: ir.FiniteType | None = None
    optional: bool = False

    def show(self) -> str:
        if self.kind == "int":
            return f"int ({self.ft})" if self.ft is not None else "int"
        if self.kind == "none":
            return "none"
        if self.kind == "error":
            return "<error>"
        base = str(self.ft) if self.ft is not None else self.kind
        return f"{base}?" if self.optional else base


BOOL_T = Ty("bool", ir.BOOL)
INT_T = Ty("int")
NONE_T = Ty("none")
ERR_T = Ty("error")


MAX_CONSTANT = 10**30
"""Bound on a computed constant: its numerator and its denominator stay below this
(number literals have at most 30 digits, see ``syntax.MAX_NUMBER_DIGITS``)."""
_TOO_BIG = "this constant is too large (more than 30 digits in its numerator or denominator)"


def _too_big(x: Fraction) -> bool:
    """Whether ``x`` is outside the numbers kvrace computes with (:data:`MAX_CONSTANT`)."""
    return abs(x.numerator) >= MAX_CONSTANT or x.denominator >= MAX_CONSTANT


def _num(x: Fraction) -> str:
    """A number as written in a spec: ``2``, ``2.5``."""
    for digits in range(40):
        scaled = x * 10**digits
        if scaled.denominator == 1:
            if digits == 0:
                return str(scaled.numerator)
            sign = "-" if scaled < 0 else ""
            whole, frac = divmod(abs(scaled.numerator), 10**digits)
            return f"{sign}{whole}.{frac:0{digits}d}"
    return str(x)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def ty_of(vt: ir.ValueType) -> Ty:
    """The static type of values of ``vt``."""
    ft = vt.base
    kind = {"bool": "bool", "enum": "enum", "range": "int"}[ft.kind]
    return Ty(kind, ft, vt.optional)


@dataclass
class _Parts:
    """The elaborated declarations of a file, by kind, in source order."""

    events: list[ir.Event] = field(default_factory=list)
    synced: list[tuple[ast.EventDecl, ir.Event]] = field(default_factory=list)
    deadlines: list[ir.Deadline] = field(default_factory=list)
    invariants: list[ir.Invariant] = field(default_factory=list)
    responses: list[ir.Response] = field(default_factory=list)
    leadsto: list[ir.LeadsTo] = field(default_factory=list)
    queries: list[ir.Query] = field(default_factory=list)
    assumes: list[ParamConstraint] = field(default_factory=list)


@dataclass
class _Scope:
    names: dict[str, tuple[int, ir.FiniteType]] = field(default_factory=dict)
    next_slot: int = 0
    max_slot: int = 0
    poisoned: set[str] = field(default_factory=set)
    """Bound names whose type was wrong: their uses are not reported again."""


class Elaborator:
    """Checks one parsed file and builds its :class:`~checker.model.ir.Spec`."""

    def __init__(self, spec: ast.SpecFile, source: str,
                 consts: Mapping[str, Fraction] | None = None) -> None:
        """``consts`` overrides the values of structural constants (``-p N=4``); other
        names in it (timing parameters) are ignored here."""
        self.file = spec
        self.source = source
        self.const_overrides: Mapping[str, Fraction] = consts or {}
        self.consts: dict[str, ir.ConstDef] = {}
        self.diags: list[Diagnostic] = []
        self.types: dict[str, ir.FiniteType] = {"bool": ir.BOOL}
        self.type_spans: dict[str, Span] = {}
        self.params: dict[str, Param] = {}
        self.assume_spans: dict[ParamConstraint, Span] = {}
        """Where each ``assume`` constraint was written (for diagnostics)."""
        self.actors: dict[str, Span] = {}
        self.vars: dict[str, ir.Var] = {}
        self.clocks: dict[str, ir.Clock] = {}
        self.labels: dict[str, list[ir.FiniteType]] = {}
        self.event_sigs: dict[tuple[str, str], tuple[ir.FiniteType, ...]] = {}
        self.event_lines: dict[tuple[str, str], int] = {}
        self.global_spans: dict[str, Span] = {}
        self.poisoned: set[str] = set()
        """Names (and ``actor.event`` labels) whose declaration had an error: their uses
        are not reported again."""
        self.scope = _Scope()
        self.clocks_ok = False  # a clock constraint may stand here (guard or deadline, top level)
        self.clock_zone = False  # inside a guard or deadline, maybe under a data operator
        self.place = "an expression"  # where we are, for messages
        self.bound_what = "a clock bound"  # what `linear` is checking, for messages
        self.state_size = 0
        self.clock_count = 0
        self.event_count = 0
        self.urgent_clock: ir.Clock | None = None
        self.channels: dict[str, tuple[tuple[ir.FiniteType, ...], bool, bool, Span]] = {}
        """Channel name to (argument types, urgent, broadcast, where declared)."""
        self.processes: dict[str, ast.ProcessInfo] = {}
        self.unknown_channel = False
        self.receiver_slot: dict[str, int] = {}
        """Where the receiver's slots start in each handshake event (by label)."""
        self.urgent_events: set[tuple[str, str]] = set()
        self.committed_events: set[tuple[str, str]] = set()
        self.unrolled = 0
        """Statements the outermost ``for`` loops unrolled into so far."""
        self.loop_depth = 0
        """``committed event``s (also in :attr:`urgent_events`)."""
        self.sync_args: dict[int, tuple[ir.Expr, ...]] = {}
        """The channel arguments of each synchronising event (by ``id`` of its
        declaration)."""

    # ---- diagnostics -----------------------------------------------------------
    def error(self, code: str, message: str, span: Span | None, *notes: str) -> None:
        if len(self.diags) > MAX_ERRORS:
            return
        if len(self.diags) == MAX_ERRORS:
            code, message, notes = "KVR007", f"too many errors; stopped after {MAX_ERRORS}", ()
        self.diags.append(Diagnostic(code, message, self.file.path, span, tuple(notes)))

    def site(self, span: Span) -> str:
        """``FILE:LINE:COL`` of a run-time check, for the model error it may raise."""
        return f"{self.file.path}:{span.line}:{span.column}"

    def text(self, span: Span) -> str:
        """The source text of a one-line span (empty if it spans lines)."""
        if span.line != span.end_line:
            return ""
        lines = self.source.split("\n", span.line)
        if span.line > len(lines):
            return ""
        return lines[span.line - 1][span.column - 1 : span.end_column - 1]

    def written(self, span: Span) -> str:
        """The source text of a span, over several lines too, whitespace and comments
        collapsed (for messages)."""
        lines = self.source.split("\n")
        if not 1 <= span.line <= span.end_line <= len(lines):
            return ""
        if span.line == span.end_line:
            parts = [lines[span.line - 1][span.column - 1 : span.end_column - 1]]
        else:
            parts = [lines[span.line - 1][span.column - 1 :]]
            parts += lines[span.line : span.end_line - 1]
            parts.append(lines[span.end_line - 1][: span.end_column - 1])
        return " ".join(" ".join(part.split("#", 1)[0].split()) for part in parts).strip()

    def declare_global(self, name: str, span: Span, what: str) -> bool:
        if name == "bool":
            self.error("KVR102", "`bool` is a built-in type and cannot be declared again", span)
            return False
        if name in self.global_spans or name in self.types:
            prev = self.global_spans.get(name)
            where = f" (first declared at line {prev.line})" if prev else ""
            self.error("KVR102", f"`{name}` is already declared{where}", span)
            self.poisoned.add(name)  # which one a use means is unclear: uses are not checked
            return False
        self.global_spans[name] = span
        return True

    # ---- entry -------------------------------------------------------------------
    def run(self) -> ir.Spec:
        self.declare(self.file.decls)
        parts = self.elaborate_decls(self.file.decls)
        events = self.finish_events(parts.events, parts.synced, parts.deadlines)
        self.check_whole(events)
        self.check_property_names()
        self.check_defaults_satisfy(parts.assumes)
        if self.diags:
            raise SpecError(self.diags, self.source)
        return self.spec(parts, events)

    def declare(self, decls: Sequence[ast.Decl]) -> None:
        """Enter the file's names: constants, then types, then the other declarations,
        then the event signatures."""
        for d in decls:
            if isinstance(d, ast.ConstDecl):
                self.const_decl(d)
        for d in decls:
            if isinstance(d, ast.TypeDecl):
                self.type_decl(d)
        table: dict[type, Callable[[Any], None]] = {
            ast.ParamDecl: self.param_decl,
            ast.ActorDecl: self.actor_decl,
            ast.VarDecl: self.var_decl,
            ast.ClockDecl: self.clock_decl,
            ast.ChanDecl: self.chan_decl,
            ast.ProcessInfo: self.process_info,
        }
        for d in decls:
            declare = table.get(type(d))
            if declare is not None:
                declare(d)
        for d in decls:
            if isinstance(d, ast.EventDecl):
                self.event_sig(d)

    def actor_decl(self, d: ast.ActorDecl) -> None:
        """Enter the names of an ``actor`` declaration, reporting repeated ones."""
        for name, sp in d.names:
            if name in self.actors:
                self.error(
                    "KVR102", f"actor `{name}` is already declared (first declared at"
                    f" line {self.actors[name].line})", sp,
                )
            else:
                self.actors[name] = sp

    def process_info(self, d: ast.ProcessInfo) -> None:
        """Record a flattened process, for the messages about its events."""
        self.processes[d.name] = d

    def elaborate_decls(self, decls: Sequence[ast.Decl]) -> _Parts:
        """Elaborate the events, deadlines, properties, queries and assumptions, in
        source order."""
        parts = _Parts()
        table: dict[type, Callable[[Any, _Parts], None]] = {
            ast.AssumeDecl: self.collect_assume,
            ast.EventDecl: self.collect_event,
            ast.DeadlineDecl: self.collect_deadline,
            ast.InvariantDecl: self.collect_invariant,
            ast.PropertyDecl: self.collect_property,
            ast.ReachableDecl: self.collect_reachable,
        }
        for d in decls:
            collect = table.get(type(d))
            if collect is not None:
                collect(d, parts)
        return parts

    def collect_assume(self, d: ast.AssumeDecl, parts: _Parts) -> None:
        """Add the constraints of an ``assume`` declaration."""
        parts.assumes.extend(self.assume_decl(d))

    def collect_event(self, d: ast.EventDecl, parts: _Parts) -> None:
        """Add an event, to the synchronising ones if it has a ``sync`` clause."""
        ev = self.event_decl(d)
        if ev is not None and d.sync is not None:
            parts.synced.append((d, ev))
        elif ev is not None:
            parts.events.append(ev)

    def collect_deadline(self, d: ast.DeadlineDecl, parts: _Parts) -> None:
        """Add a deadline, numbered in declaration order."""
        dl = self.deadline_decl(d, len(parts.deadlines))
        if dl is not None:
            parts.deadlines.append(dl)

    def collect_invariant(self, d: ast.InvariantDecl, parts: _Parts) -> None:
        """Add an invariant."""
        inv = self.invariant_decl(d)
        if inv is not None:
            parts.invariants.append(inv)

    def collect_property(self, d: ast.PropertyDecl, parts: _Parts) -> None:
        """Add a bounded response or an unbounded liveness property."""
        resp = self.property_decl(d)
        if isinstance(resp, ir.LeadsTo):
            parts.leadsto.append(resp)
        elif resp is not None:
            parts.responses.append(resp)

    def collect_reachable(self, d: ast.ReachableDecl, parts: _Parts) -> None:
        """Add a ``reachable`` query."""
        query = self.reachable_decl(d)
        if query is not None:
            parts.queries.append(query)

    def finish_events(self, events: list[ir.Event],
                      synced: list[tuple[ast.EventDecl, ir.Event]],
                      deadlines: list[ir.Deadline]) -> list[ir.Event]:
        """The events after synchronisation, committed events, committed locations and
        urgency (the later passes only while no error was reported)."""
        if synced or self.channels:
            events = self.synchronise(events, synced)
        if not self.diags:
            events = self.commit_events(events)
        if not self.diags:
            events = self.commit(events)
            self.urgency(events, deadlines)
            if self.urgent_clock is not None:
                reset = ir.ResetClock(self.urgent_clock, ())
                events = [dataclasses.replace(ev, body=(*ev.body, reset)) for ev in events]
        return events

    def check_whole(self, events: list[ir.Event]) -> None:
        """Report a model without actors or without events (when nothing else was)."""
        if not self.actors and not self.diags:
            self.error("KVR108", "no actor declared", self.file.model_span,
                       "help: declare the lanes of the diagram, as in `actor router, decode`")
        if not events and not self.diags:
            self.error("KVR109", "no event declared", self.file.model_span,
                       "help: declare one, as in `event ACTOR.NAME(r: Req) when ... do ...`")

    def spec(self, parts: _Parts, events: list[ir.Event]) -> ir.Spec:
        """The elaborated specification."""
        user_types = tuple(t for n, t in self.types.items() if n != "bool")
        return ir.Spec(
            name=self.file.model_name,
            path=self.file.path,
            types=user_types,
            params=tuple(self.params.values()),
            actors=tuple(self.actors),
            vars=tuple(self.vars.values()),
            clocks=tuple(self.clocks.values()),
            events=tuple(events),
            deadlines=tuple(parts.deadlines),
            invariants=tuple(parts.invariants),
            responses=tuple(parts.responses),
            state_size=self.state_size,
            clock_count=self.clock_count,
            source=self.source,
            consts=tuple(self.consts.values()),
            queries=tuple(parts.queries),
            leadsto=tuple(parts.leadsto),
            assumes=tuple(parts.assumes),
        )

    def check_property_names(self) -> None:
        seen: dict[str, Span] = {}
        for d in self.file.decls:
            if not isinstance(d, (ast.InvariantDecl, ast.PropertyDecl, ast.ReachableDecl)):
                continue
            if d.name in seen:
                self.error(
                    "KVR102",
                    f"property `{d.name}` is already declared (first declared at line"
                    f" {seen[d.name].line})",
                    d.name_span,
                )
                continue
            seen[d.name] = d.name_span

    # ---- types -----------------------------------------------------------------------
    def type_decl(self, d: ast.TypeDecl) -> None:
        if not self.declare_global(d.name, d.name_span, "type"):
            return
        body = d.body
        if d.symmetric and d.ordered:
            self.error(
                "KVR306", f"type `{d.name}` cannot be both `symmetric` and `ordered`",
                d.modifier_spans[0].merge(d.modifier_spans[-1]) if d.modifier_spans
                else d.name_span,
                "help: symmetry reduction permutes the values of a symmetric type, which"
                " would not preserve their order; drop one of the two",
            )
            self.poisoned.add(d.name)
            return
        if isinstance(body, ast.EnumType):
            ft = self.enum(body, d.name, d.symmetric, d.ordered)
        elif isinstance(body, ast.RangeType):
            ft = self.range_(body, d.name)
            if ft is not None and d.symmetric:
                # Interchangeable values, shown as their numbers: like a symmetric
                # enumeration (encoded from 0), never compared or stepped.
                labels = tuple(str(v) for v in ft.values())
                ft = ir.FiniteType(d.name, "enum", labels, 0, len(labels) - 1, True)
        else:  # pragma: no cover - grammar allows nothing else
            return
        if ft is not None:
            self.types[d.name] = ft
            self.type_spans[d.name] = d.name_span
        else:
            self.poisoned.add(d.name)

    def enum(self, body: ast.EnumType, name: str | None, symmetric: bool,
             ordered: bool = False) -> ir.FiniteType | None:
        labels: list[str] = []
        for label, sp in body.values:
            if label in labels:
                self.error("KVR102", f"value `{label}` appears twice in this enumeration", sp)
                continue
            if label in ("none", "true", "false"):
                self.error("KVR102", f"`{label}` cannot be an enumeration value", sp)
                continue
            labels.append(label)
        if not labels:
            return None
        tname = name if name is not None else "{" + ", ".join(labels) + "}"
        ft = ir.FiniteType(tname, "enum", tuple(labels), 0, len(labels) - 1, symmetric,
                           ordered)
        for label in labels:
            known = self.labels.setdefault(label, [])
            if ft not in known:
                known.append(ft)
        return ft

    def range_(self, body: ast.RangeType, name: str | None) -> ir.FiniteType | None:
        if body.lo_expr is not None or body.hi_expr is not None:
            lo = self.const_int(body.lo_expr) if body.lo_expr is not None else body.lo
            hi = self.const_int(body.hi_expr) if body.hi_expr is not None else body.hi
            if lo is None or hi is None:
                return None
            written = self.written(body.span) or f"{lo}..{hi}"
            if lo > hi:
                self.error("KVR301", f"empty range {written} (= {lo}..{hi})", body.span)
                return None
            body = ast.RangeType(body.span, lo, hi)
            if name is None:
                name = written.replace(" ", "")
        if body.lo > body.hi:
            self.error("KVR301", f"empty range {body.lo}..{body.hi}", body.span,
                       f"help: the smaller bound comes first: `{body.hi}..{body.lo}`")
            return None
        if body.hi - body.lo >= MAX_CELLS:
            self.error("KVR301", f"range {body.lo}..{body.hi} is too large", body.span)
            return None
        tname = name if name is not None else f"{body.lo}..{body.hi}"
        return ir.FiniteType(tname, "range", (), body.lo, body.hi)

    def finite_type(self, t: ast.TypeExpr) -> ir.FiniteType | None:
        if isinstance(t, ast.NamedType):
            if t.name in self.types:
                return self.types[t.name]
            if t.name == "int":
                self.error("KVR301", "`int` is not finite: use a range such as `0..3`", t.span)
                return None
            if t.name in self.poisoned:
                return None
            self.error(
                "KVR105", f"unknown type `{t.name}`", t.span,
                *did_you_mean(t.name, self.types),
            )
            return None
        if isinstance(t, ast.EnumType):
            return self.enum(t, None, False)
        if isinstance(t, ast.RangeType):
            return self.range_(t, None)
        if isinstance(t, ast.OptionType):
            self.error("KVR201", "an option type `T?` cannot be used here", t.span)
            return None
        self.error("KVR201", "a map type cannot be used here", t.span)
        return None

    def domain(self, ts: Sequence[ast.TypeExpr]) -> tuple[ir.FiniteType, ...] | None:
        out: list[ir.FiniteType] = []
        for t in ts:
            ft = self.finite_type(t)
            if ft is None:
                return None
            out.append(ft)
        return tuple(out)

    # ---- parameters, variables, clocks ------------------------------------------------------
    def param_decl(self, d: ast.ParamDecl) -> None:
        if not self.declare_global(d.name, d.name_span, "parameter"):
            return
        ok = True
        if d.lo is not None and d.hi is not None and (
            d.lo > d.hi or (d.lo == d.hi and (d.lo_open or d.hi_open))
        ):
            rng = Param(d.name, d.lo, d.lo, d.lo_open, d.hi, d.hi_open).range_text()
            self.error(
                "KVR301", f"parameter `{d.name}` has an empty range {rng}",
                d.range_span or d.span,
                "help: the lower bound must be below the upper one (or equal, with `[x, x]`)",
            )
            ok = False
        if d.default is None:
            self.poisoned.add(d.name)
            written = " ".join(self.text(d.span).split()) or f"param {d.name} ..."
            self.error(
                "KVR302", f"parameter `{d.name}` needs a default value", d.name_span,
                f"help: write `{written} = VALUE`; commands can override it",
            )
            return
        p = Param(d.name, d.default, d.lo, d.lo_open, d.hi, d.hi_open)
        if ok and not p.contains(d.default):
            self.error(
                "KVR302",
                f"default {_num(d.default)} of `{d.name}` is outside its range"
                f" {p.range_text()}",
                d.default_span,
            )
        self.params[d.name] = p

    # ---- structural constants ----------------------------------------------------------
    def const_decl(self, d: ast.ConstDecl) -> None:
        if not self.declare_global(d.name, d.name_span, "constant"):
            return
        lo = self.const_int(d.lo) if d.lo is not None else None
        hi = self.const_int(d.hi) if d.hi is not None else None
        default = self.const_int(d.value)
        if (d.lo is not None and lo is None) or (d.hi is not None and hi is None):
            self.poisoned.add(d.name)
            return
        if lo is not None and hi is not None and lo > hi:
            assert d.lo is not None and d.hi is not None
            self.error("KVR301", f"constant `{d.name}` has an empty range {lo}..{hi}",
                       d.lo.span.merge(d.hi.span))
            self.poisoned.add(d.name)
            return
        if default is None:
            self.poisoned.add(d.name)
            return
        if lo is not None and hi is not None and not lo <= default <= hi:
            self.error("KVR308", f"value {default} of `{d.name}` is outside its range {lo}..{hi}",
                       d.value.span)
            self.poisoned.add(d.name)
            return
        value = default
        given = self.const_overrides.get(d.name)
        if given is not None:
            where = d.name_span
            if given.denominator != 1:
                self.error("KVR308", f"-p {d.name}={_num(given)}: `{d.name}` is an integer"
                           " constant", where)
                self.poisoned.add(d.name)
                return
            value = int(given)
            if lo is not None and hi is not None and not lo <= value <= hi:
                self.error("KVR308", f"-p {d.name}={value} is outside the declared range"
                           f" {lo}..{hi} of `{d.name}`", where)
                self.poisoned.add(d.name)
                return
            if lo is None and value != default:
                self.error(
                    "KVR308", f"-p {d.name}={value}: constant `{d.name}` has no range, so"
                    " its value is fixed", where,
                    f"help: declare the values it may take, as in `const {d.name} in"
                    f" {min(default, value)}..{max(default, value)} = {default}`",
                )
                self.poisoned.add(d.name)
                return
        self.consts[d.name] = ir.ConstDef(d.name, value, default, lo, hi, d.name_span)

    def const_int(self, e: ast.Expr) -> int | None:
        """The value of a constant integer expression (literals, earlier constants and
        ``+ - * / %``), or None (reported)."""
        if isinstance(e, ast.Num):
            if e.value.denominator != 1:
                self.error("KVR308", f"{_num(e.value)} is not an integer", e.span)
                return None
            return int(e.value)
        if isinstance(e, ast.Ref) and e.index is None and e.name in self.consts:
            return self.consts[e.name].value
        if isinstance(e, ast.Ref) and e.name in self.poisoned:
            return None
        if isinstance(e, ast.Unary) and e.op == "-":
            v = self.const_int(e.operand)
            return None if v is None else -v
        if isinstance(e, ast.Binary) and e.op in ("+", "-", "*", "/", "%"):
            a = self.const_int(e.left)
            b = self.const_int(e.right)
            if a is None or b is None:
                return None
            if e.op in ("/", "%"):
                if b == 0:
                    self.error("KVR303", "division by zero" if e.op == "/" else "modulo by zero",
                               e.span)
                    return None
                return ir.divide(ir.BinaryOp(e.op), a, b, "")
            v = {"+": a + b, "-": a - b, "*": a * b}[e.op]
            if _too_big(Fraction(v)):
                self.error("KVR307", _TOO_BIG, e.span)
                return None
            return v
        if isinstance(e, ast.Ref) and e.index is None:
            what = ("a timing parameter" if e.name in self.params or any(
                isinstance(x, ast.ParamDecl) and x.name == e.name for x in self.file.decls)
                else None)
            if what is not None:
                self.error("KVR308", f"`{e.name}` is {what}, not a structural constant",
                           e.name_span,
                           f"help: sizes and ranges use constants: `const {e.name} in 1..8 = 4`")
            else:
                self.error("KVR101", f"unknown constant `{e.name}`", e.name_span,
                           *did_you_mean(e.name, self.consts),
                           "help: declare it before its uses, as in `const N in 1..8 = 3`")
            return None
        self.error("KVR308", "a constant expression may use only integers, constants and"
                   " `+ - * / %`", e.span)
        return None

    def var_decl(self, d: ast.VarDecl) -> None:
        if not self.declare_global(d.name, d.name_span, "variable"):
            return
        if not self.var_decl_checked(d):
            self.poisoned.add(d.name)

    def var_decl_checked(self, d: ast.VarDecl) -> bool:
        t = d.type
        dom: tuple[ir.FiniteType, ...] | None = ()
        if isinstance(t, ast.MapType):
            dom = self.domain(t.domain)
            t = t.value
        optional = isinstance(t, ast.OptionType)
        base_ast = t.inner if isinstance(t, ast.OptionType) else t
        # The value type is checked even when the domain is wrong, so that the
        # values of an inline enumeration are known to the rest of the file.
        base = self.finite_type(base_ast)
        if base is None or dom is None:
            return False
        vt = ir.ValueType(base, optional)
        size = ir.domain_size(dom)
        if size > MAX_CELLS:
            self.error(
                "KVR301", f"variable `{d.name}` has too many cells ({size}; at most {MAX_CELLS})",
                d.name_span,
            )
            return False
        if self.state_size + size > MAX_CELLS:
            self.error(
                "KVR301", f"the state has too many cells: `{d.name}` brings it past {MAX_CELLS}",
                d.name_span,
            )
            return False
        init = ir.NONE if optional else base.lo
        if d.init is not None:
            got_init = self.constant(d.init, vt, d.name)
            if got_init is not None:
                init = got_init
        # Declared even with a bad initial value, so its uses are still checked.
        self.vars[d.name] = ir.Var(d.name, dom, vt, init, self.state_size, d.name_span)
        self.state_size += size
        return True

    def constant(self, e: ast.Expr, vt: ir.ValueType, name: str) -> int | None:
        """The encoded value of a constant initialiser of type ``vt``."""
        saved = self.scope
        self.scope = _Scope()
        self.place = "an initial value"
        code, ty = self.expr(e, ty_of(vt))
        self.scope = saved
        if ty.kind == "error":
            return None
        if not self.assignable(ty, vt, e.span, f"`{name}`"):
            return None
        if isinstance(code, ir.Const):
            if not vt.contains(code.value):
                self.error("KVR305", f"initial value {code.value} of `{name}` is outside its type"
                           f" {vt}", e.span)
                return None
            return code.value
        if (isinstance(code, ir.Unary) and code.op == ir.UnaryOp.NEG
                and isinstance(code.operand, ir.Const)):
            v = -code.operand.value
            if not vt.contains(v):
                self.error("KVR305", f"initial value {v} of `{name}` is outside its type {vt}",
                           e.span)
                return None
            return v
        self.error("KVR201", "an initial value must be a constant", e.span)
        return None

    def clock_decl(self, d: ast.ClockDecl) -> None:
        dom = self.domain(d.domain)
        if dom is None:
            for name, sp in d.names:
                if self.declare_global(name, sp, "clock"):
                    self.poisoned.add(name)
            return
        for name, sp in d.names:
            if not self.declare_global(name, sp, "clock"):
                continue
            size = ir.domain_size(dom)
            if size > MAX_CELLS or self.clock_count + size > MAX_CELLS:
                self.error(
                    "KVR301", f"too many clock instances: `{name}` brings the count past"
                    f" {MAX_CELLS}", sp,
                )
                self.poisoned.add(name)
                continue
            clk = ir.Clock(name, dom, self.clock_count, sp)
            self.clocks[name] = clk
            self.clock_count += clk.size

    # ---- scopes ----------------------------------------------------------------------
    def bind(self, name: str, span: Span, ft: ir.FiniteType) -> int:
        slot = self.scope.next_slot
        if name in self.scope.names:
            self.error("KVR102", f"`{name}` is already bound here", span)
        else:
            if (name in self.vars or name in self.clocks or name in self.params
                    or name in self.consts):
                self.error(
                    "KVR102", f"`{name}` shadows a global declaration; choose another name", span
                )
            self.scope.names[name] = (slot, ft)
        self.scope.next_slot += 1
        self.scope.max_slot = max(self.scope.max_slot, self.scope.next_slot)
        return slot

    def binders(self, bs: Sequence[ast.Binder]) -> tuple[tuple[str, ir.FiniteType], ...] | None:
        out: list[tuple[str, ir.FiniteType]] = []
        ok = True
        for b in bs:
            ft = self.finite_type(b.type)
            if ft is None:
                ok = False
                self.scope.poisoned.add(b.name)
                continue
            self.bind(b.name, b.span, ft)
            out.append((b.name, ft))
        if ok and bs and not self.few_instances(tuple(ft for _, ft in out), bs):
            return None
        return tuple(out) if ok else None

    def few_instances(self, dom: tuple[ir.FiniteType, ...], bs: Sequence[ast.Binder]) -> bool:
        n = ir.domain_size(dom)
        if n > MAX_CELLS:
            self.error(
                "KVR301", f"these parameters have too many combinations ({n}; at most"
                f" {MAX_CELLS})", bs[0].span.merge(bs[-1].type.span),
            )
            return False
        return True

    # ---- events ------------------------------------------------------------------------
    def event_sig(self, d: ast.EventDecl) -> None:
        if d.actor not in self.actors:
            self.error(
                "KVR103", f"unknown actor `{d.actor}`", d.actor_span,
                *did_you_mean(d.actor, self.actors),
            )
            self.poisoned.add(f"{d.actor}.{d.name}")
            return
        key = (d.actor, d.name)
        if key in self.event_sigs:
            self.error(
                "KVR102", f"event `{d.actor}.{d.name}` is already declared (first declared at"
                f" line {self.event_lines[key]})", d.name_span,
            )
            return
        sig: list[ir.FiniteType] = []
        for b in d.params:
            ft = self.finite_type(b.type)
            if ft is None:
                self.poisoned.add(f"{d.actor}.{d.name}")
                return
            sig.append(ft)
        n = ir.domain_size(tuple(sig))
        if n <= MAX_CELLS and self.event_count + n > MAX_CELLS:
            self.error(
                "KVR301", f"too many event instances: `{d.actor}.{d.name}` brings the count"
                f" past {MAX_CELLS}", d.name_span,
            )
        self.event_count += n
        self.event_sigs[key] = tuple(sig)
        self.event_lines[key] = d.span.line

    def event_decl(self, d: ast.EventDecl) -> ir.Event | None:
        if (d.actor, d.name) not in self.event_sigs:
            return None
        self.scope = _Scope()
        n_before = len(self.diags)
        params = self.binders(d.params)
        receives: tuple[str, tuple[ir.Expr, ...]] | None = None
        if d.receives is not None:
            self.place = "the arguments of `receives`"
            receives = self.receives(d.receives)
        guard: ir.Expr = ir.Const(1)
        branches: tuple[ir.Branch, ...] = (ir.Branch(guard, ()),)
        if d.guard is not None:
            self.place = "a guard"
            guard, gty = self.clock_expr(d.guard)
            self.expect_bool(gty, d.guard.span, "a guard")
            got = self.split(guard, d.guard.span)
            if got is not None:
                branches = got
        self.place = "a `do` block"
        body = self.stmts(d.body)
        if d.urgent:
            self.urgent_events.add((d.actor, d.name))
        if d.committed is not None:
            self.committed_events.add((d.actor, d.name))
            if d.sync is not None:
                self.error("KVR011", f"the committed event `{d.actor}.{d.name}` cannot take"
                           " part in a channel", d.committed,
                           "help: make the channel `urgent`, or move the synchronisation to"
                           " an event of its own")
        if d.sync is not None:
            self.place = "the arguments of a channel"
            args = self.channel_args(d.sync)
            if args is not None:
                self.sync_args[id(d)] = args
        if params is None or len(self.diags) > n_before:
            return None
        if d.fair is not None and d.sync is not None and d.sync.direction == "receive":
            bcast = self.channels.get(d.sync.channel)
            if bcast is not None and bcast[2]:
                self.error("KVR011", "a receiver of a broadcast cannot be `fair`: it never"
                           " fires on its own, only when the sender does", d.fair,
                           "help: make the sending event `fair`")
        return ir.Event(
            d.actor, d.name, params, guard, branches, body, receives, self.scope.max_slot, d.span,
            fair=d.fair is not None,
        )

    def receives(self, r: ast.EventRef) -> tuple[str, tuple[ir.Expr, ...]] | None:
        sig = self.event_sigs.get((r.actor, r.name))
        where = r.name_span or r.span
        if sig is None:
            if f"{r.actor}.{r.name}" in self.poisoned:
                pass
            elif r.actor not in self.actors:
                self.error("KVR103", f"unknown actor `{r.actor}`", where,
                           *did_you_mean(r.actor, self.actors))
            else:
                names = [f"{a}.{n}" for a, n in self.event_sigs]
                self.error(
                    "KVR104", f"unknown event `{r.actor}.{r.name}`", where,
                    *did_you_mean(f"{r.actor}.{r.name}", names),
                )
            return None
        if len(r.args) != len(sig):
            self.error(
                "KVR202",
                f"`{r.actor}.{r.name}` takes {_plural(len(sig), 'argument')},"
                f" {len(r.args)} given",
                r.span,
            )
            return None
        args: list[ir.Expr] = []
        for a, ft in zip(r.args, sig, strict=True):
            code, ty = self.sub(a, ty_of(ir.ValueType(ft)))
            self.index_ok(ty, ft, a.span, what=f"`{r.actor}.{r.name}` takes")
            args.append(code)
        return (f"{r.actor}.{r.name}", tuple(args))

    # ---- channels, urgency, committed locations ------------------------------------------
    def chan_decl(self, d: ast.ChanDecl) -> None:
        for name, sp, types in d.names:
            if not self.declare_global(name, sp, "channel"):
                continue
            fts = [self.finite_type(t) for t in types]
            if any(ft is None for ft in fts):
                self.poisoned.add(name)
                continue
            self.channels[name] = (tuple(ft for ft in fts if ft is not None), d.urgent,
                                   d.broadcast, sp)

    def channel_args(self, c: ast.SyncClause) -> tuple[ir.Expr, ...] | None:
        chan = self.channels.get(c.channel)
        if chan is None:
            self.unknown_channel = True  # which channel was meant is unclear: no KVR110
            if c.channel not in self.poisoned:
                self.error("KVR104", f"unknown channel `{c.channel}`", c.channel_span,
                           *did_you_mean(c.channel, self.channels),
                           "help: declare it, as in `chan " + c.channel + "(T)`")
            return None
        types = chan[0]
        if len(c.args) != len(types):
            self.error("KVR202", f"channel `{c.channel}` carries"
                       f" {_plural(len(types), 'value')}, {len(c.args)} given", c.span)
            return None
        args: list[ir.Expr] = []
        for a, ft in zip(c.args, types, strict=True):
            code, ty = self.sub(a, ty_of(ir.ValueType(ft)))
            self.index_ok(ty, ft, a.span, what=f"channel `{c.channel}` carries")
            args.append(code)
        return tuple(args)

    def instance_type(self, process: str | None) -> ir.FiniteType | None:
        """The instance type of a process template (None for a flat event or a
        template with one instance)."""
        if process is None:
            return None
        info = self.processes.get(process)
        if info is None or info.param is None:
            return None
        return self.types.get(info.param.type.name) if isinstance(
            info.param.type, ast.NamedType) else self.finite_type(info.param.type)

    def synchronise(self, events: list[ir.Event],
                    synced: list[tuple[ast.EventDecl, ir.Event]]) -> list[ir.Event]:
        """The events with every synchronising pair (or broadcast) joined into one.

        A joined event takes the place of its sender; a handshake becomes one event per
        (sender, receiver) pair, a broadcast one event per sender."""
        senders: dict[str, list[tuple[ast.EventDecl, ir.Event]]] = {}
        receivers: dict[str, list[tuple[ast.EventDecl, ir.Event]]] = {}
        for d, ev in synced:
            if id(d) not in self.sync_args or d.sync is None:
                continue
            side = senders if d.sync.direction == "send" else receivers
            side.setdefault(d.sync.channel, []).append((d, ev))
        declared = {(d.sync.channel, d.sync.direction) for d in self.file.decls
                    if isinstance(d, ast.EventDecl) and d.sync is not None}
        if self.unknown_channel:
            return events
        joined: dict[int, list[ir.Event]] = {}
        for name, (_, _urgent, bcast, sp) in self.channels.items():
            sends, recvs = senders.get(name, []), receivers.get(name, [])
            if not sends and not recvs:
                continue
            if (name, "send") not in declared:
                self.error("KVR110", f"channel `{name}` has receivers but no sender: they"
                           " can never take part", sp,
                           "help: add an event with `send " + name + "(...)`, or remove"
                           " the channel")
                continue
            if (name, "receive") not in declared and not bcast:
                self.error("KVR110", f"channel `{name}` has senders but no receiver: a"
                           " handshake needs both, so they can never take part", sp,
                           "help: add an event with `receive " + name + "(...)`, or declare"
                           " it `broadcast chan` (a broadcast needs no receiver)")
                continue
            if not sends or (not recvs and not bcast):
                continue
            for sd, sev in sends:
                out = joined.setdefault(id(sd), [])
                if bcast:
                    got = self.broadcast(name, sd, sev, recvs)
                    if got is not None:
                        out.append(got)
                else:
                    for rd, rev in recvs:
                        got = self.handshake(name, sd, sev, rd, rev)
                        if got is not None:
                            out.append(got)
        placed: list[tuple[int, int, ir.Event]] = [
            (ev.span.line, i, ev) for i, ev in enumerate(events)]
        for d, _ in synced:
            placed.extend((d.span.line, k, ev) for k, ev in enumerate(joined.get(id(d), [])))
        placed.sort(key=lambda t: (t[0], t[1]))
        return [ev for _, _, ev in placed]

    def _distinct(self, sd: ast.EventDecl, rd: ast.EventDecl, off: int) -> list[ir.Expr]:
        """``self != other`` when both sides are instances of the same template (a
        process does not synchronise with itself)."""
        if sd.process is None or sd.process != rd.process:
            return []
        if self.instance_type(sd.process) is None:
            return [ir.Const(0)]
        return [ir.Binary(ir.BinaryOp.NE, ir.Local(0, "self"), ir.Local(off, "self"))]

    def handshake(self, chan: str, sd: ast.EventDecl, s: ir.Event, rd: ast.EventDecl,
                  r: ir.Event) -> ir.Event | None:
        """The sender and the receiver as one event.

        Its parameters are the sender's, then the receiver's that the channel does
        not fix: in ``receive c(t)``, a receiver parameter ``t`` against a sender
        parameter is that parameter (one instance per pair, not one per value of
        ``t`` with all but one disabled).  Local slots: the parameters first (as
        every event), then the sender's bound variables, then the receiver's."""
        ps, pr = len(s.params), len(r.params)
        sargs, rargs = self.sync_args[id(sd)], self.sync_args[id(rd)]
        unified: dict[int, int] = {}
        for a, b in zip(sargs, rargs, strict=True):
            if (isinstance(b, ir.Local) and b.slot < pr and b.slot not in unified
                    and isinstance(a, ir.Local) and a.slot < ps
                    and r.params[b.slot][1] == s.params[a.slot][1]):
                unified[b.slot] = a.slot
        kept = [j for j in range(pr) if j not in unified]
        place = {j: ps + k for k, j in enumerate(kept)}
        extra = len(kept)
        top = s.nslots + extra

        def smap(i: int) -> int:
            return i if i < ps else i + extra

        def rmap(j: int) -> int:
            if j in unified:
                return unified[j]
            return place[j] if j < pr else top + (j - pr)

        conds = [ir.remap(s.guard, smap), ir.remap(r.guard, rmap)]
        for a, b in zip(sargs, rargs, strict=True):
            if not (isinstance(b, ir.Local) and b.slot in unified
                    and isinstance(a, ir.Local) and unified[b.slot] == a.slot):
                conds.append(ir.Binary(ir.BinaryOp.EQ, ir.remap(a, smap), ir.remap(b, rmap)))
        if sd.process is not None and sd.process == rd.process:
            if self.instance_type(sd.process) is None:
                conds.append(ir.Const(0))
            else:  # an instance does not synchronise with itself
                conds.append(ir.Binary(ir.BinaryOp.NE, ir.Local(0, "self"),
                                       ir.Local(rmap(0), "self")))
        guard = _conj(conds)
        branches = self.split(guard, sd.span)
        if branches is None:
            return None
        body = (*ir.remap_stmts(s.body, smap), *ir.remap_stmts(r.body, rmap))
        shown = tuple(rmap(j) for j in range(pr))
        ev = dataclasses.replace(
            s, name=f"{s.name}+{r.actor}.{r.name}",
            params=(*s.params, *(r.params[j] for j in kept)), guard=guard, branches=branches,
            body=body, nslots=top + (r.nslots - pr),
            sync=ir.SyncInfo(chan, False, s.actor, (r.actor,), ps, shown),
            fair=s.fair or r.fair)
        self.receiver_slot[ev.label] = rmap(0) if pr else -1
        return ev

    def broadcast(self, chan: str, sd: ast.EventDecl, s: ir.Event,
                  recvs: list[tuple[ast.EventDecl, ir.Event]]) -> ir.Event | None:
        off = s.nslots
        parts: list[ir.Receiver] = []
        ok = True
        for rd, r in recvs:
            if ir.has_clock(r.guard):
                self.error("KVR305", "a receiver of a broadcast cannot test clocks in its"
                           " guard", rd.guard.span if rd.guard is not None else rd.span,
                           "help: every ready receiver takes part whatever the time; test"
                           " the clock in the sender, or use a handshake `chan`")
                ok = False
                continue
            conds = [ir.relocate(r.guard, off)]
            for a, b in zip(self.sync_args[id(sd)], self.sync_args[id(rd)], strict=True):
                conds.append(ir.Binary(ir.BinaryOp.EQ, a, ir.relocate(b, off)))
            conds.extend(self._distinct(sd, rd, off))
            slots = tuple((i + off, ft) for i, (_, ft) in enumerate(r.params))
            inst: tuple[str, int | None] | None = None
            if rd.process is not None:
                inst = (rd.process, off if self.instance_type(rd.process) is not None
                        else None)
            part = ir.Receiver(r.label, slots, _conj(conds), ir.relocate_stmts(r.body, off),
                               inst)
            if not self.own_cells(part, rd):
                ok = False
            parts.append(part)
            off += r.nslots
        if not ok:
            return None
        body = (ir.Broadcast(chan, s.body, tuple(parts)),)
        lanes = tuple(dict.fromkeys(r.actor for _, r in recvs))
        return dataclasses.replace(
            s, body=body, nslots=off,
            sync=ir.SyncInfo(chan, True, s.actor, lanes, len(s.params), ()))

    def own_cells(self, part: ir.Receiver, rd: ast.EventDecl) -> bool:
        """Whether a receiver over a symmetric type only writes cells indexed by its own
        binding: receivers run in the type's order, so two that write the same cell
        would make the result depend on that order, and symmetry reduction unsound."""
        if not any(ft.symmetric for _, ft in part.slots):
            return True
        def own(index: tuple[ir.Expr, ...]) -> bool:
            slots = {e.slot for e in index if isinstance(e, ir.Local)}
            return all(sl in slots for sl, ft in part.slots if ft.symmetric)

        written: set[str] = set()
        bad = False
        for st in ir.statements(part.body):
            if not isinstance(st, ir.Assign):
                continue
            written.add(st.var.name)
            bad = bad or not own(st.index)
        for e in ir.statement_exprs(part.body):
            for x in ir.walk(e):
                if isinstance(x, ir.Read) and x.var.name in written and not own(x.index):
                    bad = True
        if bad:
            self.error("KVR307", "a receiver of a broadcast over a symmetric type may only"
                       " write, and read back, cells indexed by its own symmetric parameters",
                       rd.name_span,
                       "help: receivers run one after another; a cell two of them share"
                       " would make the result depend on the order of the symmetric values")
        return not bad

    def at_committed(self, process: str, slot: int | None) -> ir.Expr | None:
        """``Process.loc[inst] in {committed locations}``; None without any."""
        info = self.processes.get(process)
        var = self.vars.get(f"{process}.{LOC}")
        if info is None or not info.committed or var is None:
            return None
        codes = tuple(ir.Const(var.value.base.labels.index(n)) for n in info.committed)
        index: tuple[ir.Expr, ...] = () if slot is None else (ir.Local(slot, "self"),)
        return ir.Member(ir.Read(var, index), codes)

    def commit(self, events: list[ir.Event]) -> list[ir.Event]:
        """The events, restricted as committed locations demand: while some instance is
        in a committed location, only events in which such an instance takes part."""
        some: list[ir.Expr] = []
        for name in self.processes:
            ft = self.instance_type(name)
            code = self.at_committed(name, None if ft is None else -1)
            if code is None:
                continue
            some.append(code if ft is None else ir.Quant(ir.Quantifier.EXISTS, -1, ft, code))
        if not some:
            return events
        out: list[ir.Event] = []
        for ev in events:
            fresh = ev.nslots
            busy = _disj([_reslot(c, fresh) for c in some])
            involved = self.involvement(ev)
            idle = ir.Unary(ir.UnaryOp.NOT, busy)
            allowed = ir.Binary(ir.BinaryOp.OR, idle, involved) if involved else idle
            guard = _conj([ev.guard, allowed])
            branches = self.split(guard, ev.span)
            if branches is None:
                continue
            out.append(dataclasses.replace(ev, guard=guard, branches=branches,
                                           nslots=fresh + 1))
        return out

    def is_committed(self, ev: ir.Event) -> bool:
        return (ev.actor, ev.name.split("+", 1)[0]) in self.committed_events

    def commit_events(self, events: list[ir.Event]) -> list[ir.Event]:
        """The events, restricted as committed events demand: while some committed event
        is enabled (its guard, about data only, holds for some parameters), only
        committed events may fire.  (Time stops then too: see :meth:`urgency`.)"""
        enabled: list[tuple[ir.Expr, int]] = []
        for ev in events:
            if not self.is_committed(ev):
                continue
            if ir.has_clock(ev.guard):
                self.error("KVR305", f"the committed event `{ev.label}` tests a clock in its"
                           " guard", ev.span,
                           "help: a committed event stops time as soon as it is enabled, so"
                           " its guard may only test data (as an urgent event's)")
                continue
            code = ev.guard
            for slot, (_, ft) in reversed(list(enumerate(ev.params))):
                code = ir.Quant(ir.Quantifier.EXISTS, slot, ft, code)
            enabled.append((code, ev.nslots))
        if not enabled or self.diags:
            return events
        out: list[ir.Event] = []
        for ev in events:
            if self.is_committed(ev):
                out.append(ev)
                continue
            # The committed guards are closed (every local is bound inside them): moved
            # past the event's own slots, they share the slots above.
            fresh = ev.nslots
            busy = _disj([ir.relocate(code, fresh) for code, _ in enabled])
            guard = _conj([ev.guard, ir.Unary(ir.UnaryOp.NOT, busy)])
            branches = self.split(guard, ev.span)
            if branches is None:
                continue
            out.append(dataclasses.replace(
                ev, guard=guard, branches=branches,
                nslots=fresh + max(n for _, n in enabled)))
        return out

    def involvement(self, ev: ir.Event) -> ir.Expr | None:
        """Whether one of the event's instances is in a committed location, or None if
        none of them can be."""
        process = ev.actor if ev.actor in self.processes else None
        parts: list[ir.Expr] = []
        if process is not None:
            code = self.at_committed(process, 0 if self.instance_type(process) else None)
            if code is not None:
                parts.append(code)
        if ev.sync is not None and not ev.sync.broadcast:
            # a handshake: the receiver's instance is its first slot after the sender's
            rproc = ev.sync.receivers[0]
            if rproc in self.processes:
                code = self.at_committed(rproc, self.receiver_slot[ev.label]
                                         if self.instance_type(rproc) else None)
                if code is not None:
                    parts.append(code)
        for st in ev.body:
            if isinstance(st, ir.Broadcast):
                for rc in st.receivers:
                    if rc.instance is None:
                        continue
                    code = self.at_committed(rc.instance[0], rc.instance[1])
                    if code is None:
                        continue
                    inner: ir.Expr = ir.Binary(ir.BinaryOp.AND, rc.guard, code)
                    for sl, ft in reversed(rc.slots):
                        inner = ir.Quant(ir.Quantifier.EXISTS, sl, ft, inner)
                    parts.append(inner)
        return _disj(parts) if parts else None

    def urgency(self, events: list[ir.Event], deadlines: list[ir.Deadline]) -> None:
        """Deadlines that stop time: in urgent and committed locations, and while an
        urgent event (or synchronisation on an urgent channel) is enabled.  They bound
        a hidden clock, ``urgent``, that every event resets."""
        wanted: list[tuple[str, tuple[tuple[str, ir.FiniteType], ...], ir.Expr, int, Span]] = []
        for name, info in self.processes.items():
            var = self.vars.get(f"{name}.{LOC}")
            stop = (*info.urgent, *info.committed)
            if var is None or not stop:
                continue
            ft = self.instance_type(name)
            index: tuple[ir.Expr, ...] = () if ft is None else (ir.Local(0, "self"),)
            cond: ir.Expr = ir.Member(
                ir.Read(var, index),
                tuple(ir.Const(var.value.base.labels.index(n)) for n in stop))
            params: tuple[tuple[str, ir.FiniteType], ...] = () if ft is None else (("self", ft),)
            wanted.append((f"{name}.urgent", params, cond, len(params), info.span))
        for ev in events:
            if not self.is_urgent(ev):
                continue
            if ir.has_clock(ev.guard):
                self.error("KVR305", f"the urgent event `{ev.label}` tests a clock in its"
                           " guard", ev.span,
                           "help: an urgent event stops time as soon as it is enabled, so"
                           " its guard may only test data (as in UPPAAL)")
                continue
            wanted.append((f"urgent {ev.label}", ev.params, ev.guard, ev.nslots, ev.span))
        if not wanted or self.diags:
            return
        clk = ir.Clock("urgent", (), self.clock_count, self.file.model_span)
        self.clock_count += 1
        self.clocks["urgent"] = clk
        self.urgent_clock = clk
        zero = (ir.ClockTest(clk, (), LE, LinExpr(Fraction(0))),)
        for name, params, cond, nslots, span in wanted:
            deadlines.append(ir.Deadline(name, params, zero, cond, nslots, span))

    def is_urgent(self, ev: ir.Event) -> bool:
        if ev.sync is not None and self.channels[ev.sync.channel][1]:
            return True
        return (ev.actor, ev.name.split("+", 1)[0]) in self.urgent_events

    # ---- statements ------------------------------------------------------------------------
    def stmts(self, ss: Sequence[ast.Stmt]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in ss:
            out.extend(self.stmt(s))
        return tuple(out)

    def stmt(self, s: ast.Stmt) -> list[ir.Stmt]:
        if isinstance(s, ast.Skip):
            return []
        if isinstance(s, ast.Assign):
            got = self.assign(s)
            return [got] if got is not None else []
        if isinstance(s, ast.Reset):
            resets: list[ir.Stmt] = []
            for c in s.clocks:
                ref = self.clock_ref(c)
                if ref is not None:
                    resets.append(ir.ResetClock(*ref))
            return resets
        if isinstance(s, ast.Assert):
            cond, ty = self.expr(s.cond, BOOL_T)
            self.expect_bool(ty, s.cond.span, "an assertion")
            holes: list[tuple[ir.Expr, ir.ValueType | None]] = []
            for h in s.holes:
                hc, hty = self.expr(h, None)
                vt = ir.ValueType(hty.ft, hty.optional) if hty.ft is not None else None
                holes.append((hc, vt))
            text = s.message if s.message is not None else "assertion failed"
            pieces = s.pieces if s.message is not None else (text,)
            return [ir.AssertStmt(cond, pieces, tuple(holes), text)]
        if isinstance(s, ast.If):
            cond, ty = self.expr(s.cond, BOOL_T)
            self.expect_bool(ty, s.cond.span, "an `if` condition")
            return [ir.IfStmt(cond, self.stmts(s.then), self.stmts(s.orelse))]
        if isinstance(s, ast.For):
            return self.for_stmt(s)
        raise AssertionError(type(s).__name__)  # pragma: no cover

    def for_stmt(self, s: ast.For) -> list[ir.Stmt]:
        """``for k: T { body }`` unrolled: the body once per value of ``T``, in order,
        ``k`` replaced by the value."""
        saved_names = dict(self.scope.names)
        saved_next = self.scope.next_slot
        saved_poisoned = set(self.scope.poisoned)
        b = s.binder
        ft = self.finite_type(b.type)
        slot = -1
        if ft is None:
            self.scope.poisoned.add(b.name)
        else:
            slot = self.bind(b.name, b.span, ft)
        n_before = len(self.diags)
        self.loop_depth += 1
        try:
            body = self.stmts(s.body)
        finally:
            self.loop_depth -= 1
        self.scope.names = saved_names
        self.scope.next_slot = saved_next
        self.scope.poisoned = saved_poisoned
        if ft is None or len(self.diags) > n_before:
            return []
        if ft.symmetric:
            self.error(
                "KVR306", f"a `for` loop cannot range over the symmetric type {ft}", b.type.span,
                "help: the loop would visit the values in an order, which symmetry reduction"
                f" does not respect; give the event a parameter of type {ft} instead (one"
                " instance per value), or declare the type without `symmetric`",
            )
            return []
        size = sum(1 for _ in ir.statements(body))
        if size * ft.size > MAX_LOOP_STATEMENTS:
            self.error(
                "KVR301", f"this loop unrolls into {size * ft.size} statements (at most"
                f" {MAX_LOOP_STATEMENTS})", s.span,
                "help: loop over a smaller type, or split the work into several events",
            )
            return []
        if self.loop_depth == 0:
            self.unrolled += size * ft.size
            if self.unrolled > MAX_UNROLLED_STATEMENTS:
                if self.unrolled - size * ft.size > MAX_UNROLLED_STATEMENTS:
                    return []  # reported at the loop that went over
                self.error(
                    "KVR301", f"the loops of this spec unroll into more than"
                    f" {MAX_UNROLLED_STATEMENTS} statements", s.span,
                    "help: loop over smaller types, or write fewer loops",
                )
                return []
        out: list[ir.Stmt] = []
        for v in ft.values():
            out.extend(ir.substitute_stmt(st, slot, v) for st in body)
        return out

    def assign(self, s: ast.Assign) -> ir.Stmt | None:
        t = s.target
        var = self.vars.get(t.name)
        if t.name in self.poisoned:
            self.sub(s.value, None)
            return None
        if var is None:
            if t.name in self.clocks:
                self.error("KVR205", f"`{t.name}` is a clock: use `reset {t.name}`", t.name_span)
            elif t.name in self.params:
                self.error("KVR205", f"`{t.name}` is a parameter and cannot be assigned",
                           t.name_span)
            elif t.name in self.consts:
                self.error("KVR205", f"`{t.name}` is a constant and cannot be assigned",
                           t.name_span)
            elif t.name in self.scope.names:
                self.error("KVR205", f"`{t.name}` is a bound name and cannot be assigned",
                           t.name_span)
            elif t.name in self.labels or t.name in self.types or t.name in self.actors:
                self.error("KVR205", f"`{t.name}` is not a variable and cannot be assigned",
                           t.name_span)
            elif t.name in self.poisoned:
                pass
            else:
                self.error("KVR101", f"unknown variable `{t.name}`", t.name_span,
                           *did_you_mean(t.name, self.vars))
            self.sub(s.value, None)
            return None
        index = self.index(var.name, var.domain, t)
        value, vty = self.sub(s.value, ty_of(var.value))
        if index is None or vty.kind == "error":
            return None
        if not self.assignable(vty, var.value, s.value.span, f"`{var.name}`"):
            return None
        value = self.coerce(value, vty, var.value, s.value.span, var.name)
        return ir.Assign(var, index, value)

    def assignable(self, ty: Ty, vt: ir.ValueType, span: Span, what: str) -> bool:
        """Whether a value of static type ``ty`` may be stored in ``vt``; reports if not."""
        target = ty_of(vt)
        if ty.kind == "error":
            return False
        if ty.kind == "none":
            if not vt.optional:
                self.error("KVR204", f"{what} is of type {vt}, which has no `none`", span,
                           f"help: declare it as `{vt}?` to allow `none`")
                return False
            return True
        if ty.kind != target.kind or (ty.kind in ("enum",) and ty.ft != target.ft):
            self.error("KVR201", f"{what} expects {vt}, found {ty.show()}", span)
            return False
        return True

    def coerce(self, code: ir.Expr, ty: Ty, vt: ir.ValueType, span: Span,
               name: str = "") -> ir.Expr:
        site = self.site(span)
        if ty.optional and not vt.optional:
            code = ir.Some(code, site)
        if vt.base.kind == "range":
            if isinstance(code, ir.Const) and vt.contains(code.value):
                return code
            if (
                ty.ft is not None and ty.ft.kind == "range"
                and vt.base.lo <= ty.ft.lo and ty.ft.hi <= vt.base.hi
            ):
                return code
            what = (f"value {{v}} outside {vt.base.lo}..{vt.base.hi} (the range of `{name}`)"
                    if name else "")
            return ir.InRange(code, vt.base.lo, vt.base.hi, site, what)
        return code

    def clock_ref(
        self, r: ast.Ref, report: bool = True
    ) -> tuple[ir.Clock, tuple[ir.Expr, ...]] | None:
        clk = self.clocks.get(r.name)
        if r.name in self.poisoned:
            return None
        if clk is None:
            if report:
                self.error("KVR101", f"unknown clock `{r.name}`", r.name_span,
                           *did_you_mean(r.name, self.clocks))
            return None
        index = self.index(clk.name, clk.domain, r, report)
        if index is None:
            return None
        return clk, index

    def index(
        self, name: str, domain: tuple[ir.FiniteType, ...], r: ast.Ref, report: bool = True
    ) -> tuple[ir.Expr, ...] | None:
        given = r.index or ()
        if len(given) != len(domain):
            if report:
                if not domain:
                    self.error("KVR203", f"`{name}` is a scalar and takes no index", r.span)
                else:
                    dom = ", ".join(str(t) for t in domain)
                    self.error(
                        "KVR202",
                        f"`{name}` takes {_plural(len(domain), 'index', 'indexes')} ({dom}),"
                        f" {len(given)} given",
                        r.span,
                    )
            return None
        out: list[ir.Expr] = []
        ok = True
        for e, ft in zip(given, domain, strict=True):
            code, ty = self.sub(e, ty_of(ir.ValueType(ft)))
            if not self.index_ok(ty, ft, e.span, report, f"`{name}` is indexed by"):
                ok = False
                continue
            if ty.optional:
                code = ir.Some(code, self.site(e.span))
            if ft.kind == "range" and not (
                (isinstance(code, ir.Const) and ft.lo <= code.value <= ft.hi)
                or (ty.ft is not None and ft.lo <= ty.ft.lo and ty.ft.hi <= ft.hi)
            ):
                code = ir.InRange(code, ft.lo, ft.hi, self.site(e.span))
            out.append(code)
        return tuple(out) if ok else None

    def index_ok(
        self, ty: Ty, ft: ir.FiniteType, span: Span, report: bool = True, what: str = "expected"
    ) -> bool:
        if ty.kind == "error":
            return False
        want = ty_of(ir.ValueType(ft))
        if ty.kind != want.kind or (ty.kind == "enum" and ty.ft != ft):
            if report:
                self.error("KVR201", f"{what} {ft}, found {ty.show()}", span)
            return False
        return True

    # ---- deadlines and properties ------------------------------------------------------------
    def deadline_decl(self, d: ast.DeadlineDecl, number: int) -> ir.Deadline | None:
        self.scope = _Scope()
        n_before = len(self.diags)
        params = self.binders(d.params)
        self.place = "a deadline"
        code, ty = self.clock_expr(d.bound)
        atoms = None
        if ty.kind != "error":
            atoms = self.upper_bounds(code, d.bound.span)
        cond: ir.Expr = ir.Const(1)
        if d.cond is not None:
            self.place = "a `while` condition"
            cond, cty = self.expr(d.cond, BOOL_T)
            self.expect_bool(cty, d.cond.span, "a `while` condition")
        if params is None or atoms is None or len(self.diags) > n_before:
            return None
        name = d.name if d.name is not None else f"deadline@{d.span.line}"
        return ir.Deadline(name, params, atoms, cond, self.scope.max_slot, d.span)

    def upper_bounds(
        self, code: ir.Expr, span: Span, neg: bool = False, top: bool = True
    ) -> tuple[ir.ClockTest, ...] | None:
        """The clock atoms of a deadline: a conjunction of upper bounds, negations pushed in."""
        if isinstance(code, ir.ClockTest):
            atom = dataclasses.replace(code, op=NEGATED_OP[code.op]) if neg else code
            if atom.op not in (LT, LE):
                self.error(
                    "KVR304",
                    f"a deadline is an upper bound on a clock, but this bounds `{code.clock.name}`"
                    " from below",
                    span,
                    f"help: write `{code.clock.name} <= bound` (or `<`): time may not pass it",
                )
                return None
            return (atom,)
        if isinstance(code, ir.Unary) and code.op == ir.UnaryOp.NOT:
            return self.upper_bounds(code.operand, span, not neg, top)
        if isinstance(code, ir.Binary) and code.op == (ir.BinaryOp.OR if neg else ir.BinaryOp.AND):
            left = self.upper_bounds(code.left, span, neg, False)
            right = self.upper_bounds(code.right, span, neg, False)
            if left is None or right is None:
                return None
            return left + right
        if not self._has_clock(code):
            self.error(
                "KVR304",
                "a deadline must bound a clock, as in `c <= T`" if top else
                "a deadline may only bound clocks; this one also tests data",
                span,
                "help: conditions on data go after `while`, as in `c <= T while x`",
            )
        else:
            self.error(
                "KVR304",
                "a deadline must be a conjunction (`and`) of clock upper bounds such as"
                " `c <= T`",
                span,
                "help: conditions on data go after `while`; several deadlines all hold at once"
                " (an `and`); for a bound that depends on the state, give each case its own"
                " deadline with a `while` condition",
            )
        return None

    def invariant_decl(self, d: ast.InvariantDecl) -> ir.Invariant | None:
        self.scope = _Scope()
        n_before = len(self.diags)
        params = self.binders(d.params)
        self.place = "an invariant"
        code, ty = self.expr(d.expr, BOOL_T)
        self.expect_bool(ty, d.expr.span, "an invariant")
        if params is None or len(self.diags) > n_before:
            return None
        return ir.Invariant(d.name, params, code, self.scope.max_slot, d.span,
                            self.written(d.expr.span))

    def assume_decl(self, d: ast.AssumeDecl) -> list[ParamConstraint]:
        """``assume A and B ...``: each comparison as one constraint (two for ``==``)."""
        self.scope = _Scope()
        atoms: list[ast.Expr] = []
        stack = [d.expr]
        while stack:
            e = stack.pop()
            if isinstance(e, ast.Binary) and e.op == "and":
                stack.extend([e.right, e.left])
            else:
                atoms.append(e)
        out: list[ParamConstraint] = []
        for a in atoms:
            if not (isinstance(a, ast.Binary) and a.op in ("<", "<=", ">", ">=", "==")):
                self.error("KVR303", "an `assume` is a conjunction (`and`) of comparisons `<`,"
                           " `<=`, `>`, `>=`, `==` between expressions linear in parameters",
                           a.span, "help: a union of constraints (`or`, `!=`) is not convex:"
                           " split the model, or synthesize and read the region")
                continue
            left = self.linear(a.left, "an `assume` constraint")
            right = self.linear(a.right, "an `assume` constraint")
            if left is None or right is None:
                continue
            terms = dict(left.terms)
            for p, k in right.terms:
                terms[p] = terms.get(p, Fraction(0)) - k
            const = left.const - right.const
            diff = LinExpr(const, tuple((p, terms[p]) for p in self.params
                                        if terms.get(p, 0) != 0))
            neg = LinExpr(-const, tuple((p, -k) for p, k in diff.terms))
            text = self.written(a.span)
            where = f"{self.file.path}:{a.span.line}:{a.span.column}"
            if a.op in ("<", "<=", "=="):
                out.append(ParamConstraint(diff, a.op == "<", text, where))
            if a.op in (">", ">=", "=="):
                out.append(ParamConstraint(neg, a.op == ">", text, where))
            for made in out:
                self.assume_spans.setdefault(made, a.span)
        return out

    def check_defaults_satisfy(self, assumes: Sequence[ParamConstraint]) -> None:
        """Every ``assume`` holds at the parameters' default values (so a command run at
        the defaults is inside the constraints, and they admit some value)."""
        if self.diags:
            return
        defaults = {p.name: p.default for p in self.params.values()}
        reported: set[str] = set()
        for c in assumes:
            if c.holds(defaults) or c.where in reported:
                continue
            reported.add(c.where)
            span = self.assume_spans[c]
            used = [p for p, _ in c.expr.terms]
            self.error("KVR310", f"the default values ({_values_text(defaults, used)}) do not"
                       f" satisfy `{c.text}`", span,
                       "help: change a default so that every `assume` holds at the defaults")

    def reachable_decl(self, d: ast.ReachableDecl) -> ir.Query | None:
        self.scope = _Scope()
        n_before = len(self.diags)
        self.place = "a `reachable` query"
        code, ty = self.clock_expr(d.expr)
        self.expect_bool(ty, d.expr.span, "a `reachable` query")
        if len(self.diags) > n_before:
            return None
        branches: tuple[ir.Branch, ...] = ()
        if ir.has_clock(code):
            got = self.split(code, d.expr.span)
            if got is None:
                return None
            branches = got
        return ir.Query(d.name, code, self.scope.max_slot, d.span, self.written(d.expr.span),
                        branches)

    def property_decl(self, d: ast.PropertyDecl) -> ir.Response | ir.LeadsTo | None:
        self.scope = _Scope()
        n_before = len(self.diags)
        params = self.binders(d.params)
        self.place = "a property"
        p, pty = self.expr(d.trigger, BOOL_T)
        self.expect_bool(pty, d.trigger.span, "the left side of `leadsto`")
        q, qty = self.expr(d.response, BOOL_T)
        self.expect_bool(qty, d.response.span, "`always eventually`" if d.always
                         else "the right side of `leadsto`")
        if d.within is None:
            if params is None or len(self.diags) > n_before:
                return None
            return ir.LeadsTo(d.name, params, p, q, self.scope.max_slot, d.span, d.always)
        within = self.linear(d.within, "a `within` bound")
        if params is None or within is None or len(self.diags) > n_before:
            return None
        return ir.Response(d.name, params, p, q, within, self.scope.max_slot, d.span)

    # ---- expressions ---------------------------------------------------------------------------
    def expect_bool(self, ty: Ty, span: Span, what: str) -> None:
        if ty.kind not in ("bool", "error"):
            self.error("KVR201", f"{what} must be a boolean, found {ty.show()}", span)

    def is_label(self, e: ast.Expr) -> bool:
        return (
            isinstance(e, ast.Ref)
            and e.index is None
            and e.name not in self.scope.names
            and e.name not in self.vars
            and e.name not in self.params
            and e.name not in self.consts
            and e.name not in self.clocks
            and e.name in self.labels
        )

    def clock_expr(self, e: ast.Expr) -> tuple[ir.Expr, Ty]:
        """A guard or deadline: clock constraints allowed under `and`/`or`/`not`/`=>`."""
        self.clocks_ok = self.clock_zone = True
        try:
            return self.expr(e, BOOL_T)
        finally:
            self.clocks_ok = self.clock_zone = False

    def sub(self, e: ast.Expr, expect: Ty | None) -> tuple[ir.Expr, Ty]:
        """An operand of a data operator: no clock constraint may stand here."""
        saved = self.clocks_ok
        self.clocks_ok = False
        try:
            return self.expr(e, expect)
        finally:
            self.clocks_ok = saved

    def expr(self, e: ast.Expr, expect: Ty | None) -> tuple[ir.Expr, Ty]:
        if isinstance(e, ast.Num):
            if e.value.denominator != 1:
                self.error("KVR201", f"{_num(e.value)} is not an integer; only clock bounds may"
                           " use fractions", e.span)
                return ir.Const(0), ERR_T
            return ir.Const(int(e.value)), INT_T
        if isinstance(e, ast.BoolLit):
            return ir.Const(int(e.value)), BOOL_T
        if isinstance(e, ast.NoneLit):
            return ir.Const(ir.NONE), NONE_T
        if isinstance(e, ast.Ref):
            return self.ref(e, expect)
        if isinstance(e, ast.Unary):
            if e.op == "not":
                code, ty = self.expr(e.operand, BOOL_T)
                self.expect_bool(ty, e.operand.span, "the operand of `not`")
                return ir.Unary(ir.UnaryOp.NOT, code), BOOL_T
            code, ty = self.sub(e.operand, INT_T)
            self.expect_int(ty, e.operand.span)
            if ty.kind != "int":
                return ir.Const(0), ERR_T
            if isinstance(code, ir.Const):
                return ir.Const(-code.value), INT_T
            return ir.Unary(ir.UnaryOp.NEG, code), INT_T
        if isinstance(e, ast.Binary):
            return self.binary(e)
        if isinstance(e, ast.Member):
            return self.member(e)
        if isinstance(e, ast.Quant):
            return self.quant(e)
        raise AssertionError(type(e).__name__)  # pragma: no cover

    def expect_int(self, ty: Ty, span: Span, op: str = "") -> None:
        if ty.kind not in ("int", "error"):
            notes = self.order_help(ty) if op in ("+", "-") else ()
            self.error("KVR201", f"expected an integer, found {ty.show()}", span, *notes)

    def ref(self, e: ast.Ref, expect: Ty | None) -> tuple[ir.Expr, Ty]:
        name = e.name
        if name in self.poisoned and name not in self.scope.names:
            return ir.Const(0), ERR_T
        if name in self.scope.names:
            slot, ft = self.scope.names[name]
            if e.index is not None:
                self.error("KVR203", f"`{name}` is not indexed", e.span)
                return ir.Const(0), ERR_T
            return ir.Local(slot, name), ty_of(ir.ValueType(ft))
        if name in self.vars:
            var = self.vars[name]
            index = self.index(name, var.domain, e)
            if index is None:
                return ir.Const(0), ERR_T
            return ir.Read(var, index), ty_of(var.value)
        if name in self.consts:
            if e.index is not None:
                self.error("KVR203", f"`{name}` is a constant and cannot be indexed", e.span)
                return ir.Const(0), ERR_T
            return ir.Const(self.consts[name].value), INT_T
        if name in self.params:
            self.error(
                "KVR206",
                f"parameter `{name}` can only appear in a clock bound or a `within` bound",
                e.name_span,
                "help: parameters are timing constants, as in `when since_abort[r] >= T_hold`",
            )
            return ir.Const(0), ERR_T
        if name in self.clocks:
            self.clock_as_value(e)
            return ir.Const(0), ERR_T
        if name in self.labels:
            if e.index is not None:
                self.error("KVR203", f"`{name}` is a value and cannot be indexed", e.span)
                return ir.Const(0), ERR_T
            return self.label(name, e.span, expect)
        return self.not_a_value(e)

    def clock_as_value(self, e: ast.Ref) -> None:
        """Report a clock used where only data may stand."""
        name = e.name
        if self.clock_zone:
            self.error(
                "KVR206",
                f"clock `{name}` can only be compared with a bound, as in `{name} <= T`",
                e.name_span,
                "help: a clock constraint is `clock op bound`, with `op` one of"
                " `<`, `<=`, `>`, `>=`, `==` and the bound linear in parameters",
            )
        else:
            self.error(
                "KVR206",
                f"clock `{name}` cannot be used in {self.place}",
                e.name_span,
                _CLOCK_HELP.get(
                    self.place, "help: clocks may only be compared with a bound in a"
                    " `when` guard or a deadline"),
            )

    def not_a_value(self, e: ast.Ref) -> tuple[ir.Expr, Ty]:
        """Report a name that is a type, an actor or unknown (unless already reported)."""
        name = e.name
        if name in self.types:
            self.error("KVR201", f"`{name}` is a type, not a value", e.name_span)
            return ir.Const(0), ERR_T
        if name in self.actors:
            self.error("KVR201", f"`{name}` is an actor, not a value", e.name_span)
            return ir.Const(0), ERR_T
        if name in self.poisoned or name in self.scope.poisoned:
            return ir.Const(0), ERR_T
        candidates = [*self.scope.names, *self.vars, *self.labels, *self.params, *self.clocks,
                      *self.consts]
        self.error("KVR101", f"unknown name `{name}`", e.name_span,
                   *did_you_mean(name, candidates))
        return ir.Const(0), ERR_T

    def label(self, name: str, span: Span, expect: Ty | None) -> tuple[ir.Expr, Ty]:
        types = self.labels[name]
        chosen: ir.FiniteType | None = None
        if expect is not None and expect.ft is not None and expect.ft in types:
            chosen = expect.ft
        elif len(types) == 1:
            chosen = types[0]
        else:
            names = ", ".join(str(t) for t in types)
            self.error(
                "KVR201", f"`{name}` is a value of several types ({names}); which is meant here?",
                span, "help: compare it with a variable of the intended type",
            )
            return ir.Const(0), ERR_T
        if chosen.symmetric:
            self.error(
                "KVR306",
                f"`{name}` is a value of the symmetric type {chosen}; a symmetric type's values"
                " are interchangeable and cannot be named",
                span,
                "help: quantify over the type instead, or drop `symmetric`",
            )
            return ir.Const(0), ERR_T
        return ir.Const(chosen.labels.index(name)), Ty("enum", chosen)

    def pair(self, a: ast.Expr, b: ast.Expr) -> tuple[ir.Expr, Ty, ir.Expr, Ty]:
        """Elaborate two operands, letting each give a bare value name its type."""
        if self.is_label(a) and not self.is_label(b):
            bc, bt = self.sub(b, None)
            ac, at = self.sub(a, bt)
        else:
            ac, at = self.sub(a, None)
            bc, bt = self.sub(b, at)
        return ac, at, bc, bt

    def comparable(self, at: Ty, bt: Ty, span: Span) -> bool:
        if "error" in (at.kind, bt.kind):
            return False
        if at.kind == "none" or bt.kind == "none":
            other = bt if at.kind == "none" else at
            if other.kind == "none" or other.optional:
                return True
            self.error(
                "KVR204", f"a value of type {other.show()} is never `none`", span,
                "help: only a value of an option type, declared as `T?`, can be `none`",
            )
            return False
        if at.kind != bt.kind or (at.kind == "enum" and at.ft != bt.ft):
            self.error(
                "KVR201", f"cannot compare {at.show()} with {bt.show()}: the types differ", span
            )
            return False
        return True

    def binary(self, e: ast.Binary) -> tuple[ir.Expr, Ty]:
        op = e.op
        if op in ("and", "or", "=>"):
            return self.logical(e)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return self.comparison(e)
        if op in ("+", "-", "*", "/", "%"):
            return self.arithmetic(e)
        self.error("KVR201", f"`{op}` is not an operator on values", e.op_span)
        return ir.Const(0), ERR_T

    def logical(self, e: ast.Binary) -> tuple[ir.Expr, Ty]:
        """``and``, ``or``, ``=>``: both sides boolean."""
        op = e.op
        lc, lt = self.expr(e.left, BOOL_T)
        rc, rt = self.expr(e.right, BOOL_T)
        self.expect_bool(lt, e.left.span, f"the left side of `{op}`")
        self.expect_bool(rt, e.right.span, f"the right side of `{op}`")
        return ir.Binary(ir.BinaryOp(op), lc, rc), BOOL_T

    def comparison(self, e: ast.Binary) -> tuple[ir.Expr, Ty]:
        """A comparison of two values, or a clock constraint."""
        op = e.op
        if self.side_reported(e):
            return ir.Const(0), ERR_T
        direct = self._is_clock(e.left) or self._is_clock(e.right)
        if self.clock_zone and not direct and (
            self._mentions_clock(e.left) or self._mentions_clock(e.right)
        ):
            self.error(
                "KVR207", "a clock must stand alone on one side of a clock constraint",
                e.span,
                "help: write `clock op bound`, moving numbers and parameters into the bound,"
                " as in `c <= T - 1`",
            )
            return ir.Const(0), ERR_T
        if direct:
            return self.clock_comparison(e)
        ac, at, bc, bt = self.pair(e.left, e.right)
        if not self.comparable(at, bt, e.span):
            return ir.Const(0), ERR_T
        if op not in ("==", "!=") and not (
            at.kind == "int" or (at.kind == "enum" and at.ft is not None and at.ft.ordered)
        ):
            self.error("KVR201", f"`{op}` compares integers and values of ordered types,"
                       f" not {at.show()}", e.op_span, *self.order_help(at))
            return ir.Const(0), ERR_T
        return ir.Binary(ir.BinaryOp(op), ac, bc), BOOL_T

    def side_reported(self, e: ast.Binary) -> bool:
        """Whether a side of comparison ``e`` names a declaration already reported, or an
        unknown name compared with a parameter (reported here as an unknown clock)."""
        for a, b in ((e.left, e.right), (e.right, e.left)):
            if isinstance(a, ast.Ref) and (
                a.name in self.poisoned or a.name in self.scope.poisoned
            ) and a.name not in self.scope.names:
                return True
            if self._unknown(a) and self._mentions_param(b):
                assert isinstance(a, ast.Ref)
                self.error("KVR101", f"unknown clock `{a.name}`", a.name_span,
                           *did_you_mean(a.name, [*self.clocks, *self.vars]))
                return True
        return False

    def clock_comparison(self, e: ast.Binary) -> tuple[ir.Expr, Ty]:
        """A comparison with a clock on one side: a clock test where one may stand;
        outside guards and deadlines, one error, about the clock."""
        if self.clocks_ok:
            return self.clock_test(e)
        if self.clock_zone:
            self.error(
                "KVR207",
                "a clock constraint cannot be used as a value here",
                e.span,
                "help: combine clock constraints only with `and`, `or`, `not` and `=>`",
            )
            return ir.Const(0), ERR_T
        cref = e.left if self._is_clock(e.left) else e.right
        assert isinstance(cref, ast.Ref)
        self.ref(cref, None)
        return ir.Const(0), ERR_T

    def arithmetic(self, e: ast.Binary) -> tuple[ir.Expr, Ty]:
        """``+``, ``-``, ``*``, ``/``, ``%`` on integers (constants folded), or a step on
        an ordered enumeration."""
        op = e.op
        lc, lt = self.sub(e.left, INT_T)
        rc, rt = self.sub(e.right, INT_T)
        if op in ("+", "-") and lt.kind == "enum" and lt.ft is not None and lt.ft.ordered:
            return self.step(e, lc, lt, rc, rt)
        self.expect_int(lt, e.left.span, e.op)
        self.expect_int(rt, e.right.span, e.op)
        if lt.kind != "int" or rt.kind != "int":
            return ir.Const(0), ERR_T
        site = self.site(e.op_span)
        if op in ("/", "%") and isinstance(rc, ir.Const) and rc.value == 0:
            self.error("KVR303", "division by zero" if op == "/" else "modulo by zero",
                       e.span)
            return ir.Const(0), ERR_T
        if isinstance(lc, ir.Const) and isinstance(rc, ir.Const):
            v = (ir.divide(ir.BinaryOp(op), lc.value, rc.value, site) if op in ("/", "%") else
                 {"+": lc.value + rc.value, "-": lc.value - rc.value,
                  "*": lc.value * rc.value}[op])
            if _too_big(Fraction(v)):
                self.error("KVR307", _TOO_BIG, e.span)
                return ir.Const(0), ERR_T
            return ir.Const(v), INT_T
        return ir.Binary(ir.BinaryOp(op), lc, rc,
                         site if op in ("/", "%") else ""), INT_T

    def step(self, e: ast.Binary, lc: ir.Expr, lt: Ty, rc: ir.Expr,
             rt: Ty) -> tuple[ir.Expr, Ty]:
        """``v + k`` / ``v - k`` on an ordered enumeration: the value ``k`` places later
        (earlier), of the same type; leaving the type is a run-time model error."""
        ft = lt.ft
        assert ft is not None
        self.expect_int(rt, e.right.span, e.op)
        if rt.kind != "int":
            return ir.Const(0), ERR_T
        if lt.optional:
            lc = ir.Some(lc, self.site(e.left.span))
        if rt.optional:
            rc = ir.Some(rc, self.site(e.right.span))
        code: ir.Expr = ir.Binary(ir.BinaryOp(e.op), lc, rc)
        written = self.written(e.span) or f"... {e.op} ..."
        what = (f"`{written}` leaves the ordered type {ft} ({ft.show(ft.lo)}..{ft.show(ft.hi)})")
        if isinstance(lc, ir.Const) and isinstance(rc, ir.Const):
            v = lc.value + rc.value if e.op == "+" else lc.value - rc.value
            if not ft.lo <= v <= ft.hi:
                self.error("KVR305", what, e.span)
                return ir.Const(0), ERR_T
            return ir.Const(v), Ty("enum", ft)
        return ir.InRange(code, ft.lo, ft.hi, self.site(e.span), what), Ty("enum", ft)

    def order_help(self, ty: Ty) -> tuple[str, ...]:
        """The note after an order comparison or a step on a value without order."""
        ft = ty.ft
        if ty.kind != "enum" or ft is None:
            return ()
        if ft.symmetric:
            return (f"help: the values of the symmetric type {ft} are interchangeable and have"
                    " no order; drop `symmetric` and declare it `ordered type` to compare them",)
        return (f"help: declare `ordered type {ft} = {{...}}` to compare its values by their"
                " order and step with `+ 1` / `- 1`",)

    def _unknown(self, e: ast.Expr) -> bool:
        """Whether ``e`` is a name declared nowhere (and not already reported)."""
        if not isinstance(e, ast.Ref):
            return False
        n = e.name
        return not (
            n in self.scope.names or n in self.vars or n in self.params or n in self.clocks
            or n in self.consts or n in self.labels or n in self.types or n in self.actors
            or n in self.poisoned or n in self.scope.poisoned
        )

    def _mentions_param(self, e: ast.Expr) -> bool:
        if isinstance(e, ast.Ref):
            return e.name in self.params and e.name not in self.scope.names
        if isinstance(e, ast.Unary):
            return self._mentions_param(e.operand)
        if isinstance(e, ast.Binary) and e.op in ("+", "-", "*", "/", "%"):
            return self._mentions_param(e.left) or self._mentions_param(e.right)
        return False

    def _mentions_clock(self, e: ast.Expr) -> bool:
        """Whether a clock name occurs in arithmetic ``e`` (``c + 1``, ``-c``)."""
        if isinstance(e, ast.Ref):
            return self._is_clock(e)
        if isinstance(e, ast.Unary) and e.op == "-":
            return self._mentions_clock(e.operand)
        if isinstance(e, ast.Binary) and e.op in ("+", "-", "*", "/", "%"):
            return self._mentions_clock(e.left) or self._mentions_clock(e.right)
        return False

    def _is_clock(self, e: ast.Expr) -> bool:
        return (
            isinstance(e, ast.Ref) and e.name in self.clocks and e.name not in self.scope.names
            and e.name not in self.poisoned
        )

    def clock_test(self, e: ast.Binary) -> tuple[ir.Expr, Ty]:
        if self._is_clock(e.left) and self._is_clock(e.right):
            self.error(
                "KVR207", "comparisons between two clocks are not supported", e.span,
                "help: compare each clock with a bound instead",
            )
            return ir.Const(0), ERR_T
        op = e.op
        if self._is_clock(e.left):
            cref, other = e.left, e.right
        else:
            cref, other, op = e.right, e.left, _FLIP[op]
        assert isinstance(cref, ast.Ref)
        if op == "!=":
            c = self.text(cref.span) or cref.name
            b = self.text(other.span) or "bound"
            self.error(
                "KVR207", "`!=` on a clock is not convex", e.op_span,
                f"help: write `{c} < {b} or {c} > {b}`",
            )
            return ir.Const(0), ERR_T
        got = self.clock_ref(cref)
        bound = self.linear(other)
        if got is None or bound is None:
            return ir.Const(0), ERR_T
        clk, index = got
        if op == "==":
            return ir.Binary(
                ir.BinaryOp.AND, ir.ClockTest(clk, index, GE, bound),
                ir.ClockTest(clk, index, LE, bound)
            ), BOOL_T
        return ir.ClockTest(clk, index, Relation(op), bound), BOOL_T

    def linear(self, e: ast.Expr, what: str = "a clock bound") -> LinExpr | None:
        """A bound linear in parameters, or a reported error."""
        self.bound_what = what
        got = self._linear(e)
        if got is None:
            return None
        const, terms = got
        ordered = tuple((p, terms[p]) for p in self.params if terms.get(p, 0) != 0)
        return LinExpr(const, ordered)

    def _bounded(self, const: Fraction, terms: dict[str, Fraction],
                 span: Span) -> tuple[Fraction, dict[str, Fraction]] | None:
        """``(const, terms)``, or None (reported) when a number in it is too large."""
        if _too_big(const) or any(_too_big(c) for c in terms.values()):
            self.error("KVR307", _TOO_BIG, span)
            return None
        return const, terms

    def _linear(self, e: ast.Expr) -> tuple[Fraction, dict[str, Fraction]] | None:
        if isinstance(e, ast.Num):
            return e.value, {}
        if isinstance(e, ast.Ref) and e.index is None and e.name in self.params:
            return Fraction(0), {e.name: Fraction(1)}
        if (isinstance(e, ast.Ref) and e.index is None and e.name in self.consts
                and e.name not in self.scope.names):
            return Fraction(self.consts[e.name].value), {}
        if isinstance(e, ast.Unary) and e.op == "-":
            got = self._linear(e.operand)
            if got is None:
                return None
            return -got[0], {p: -c for p, c in got[1].items()}
        if isinstance(e, ast.Binary) and e.op == "%":
            self.error("KVR303", f"{self.bound_what} cannot use `%`", e.op_span,
                       "help: `%` is integer arithmetic on data; a bound may use `+`, `-`,"
                       " and `*`/`/` by a number")
            return None
        if isinstance(e, ast.Binary) and e.op in ("+", "-", "*", "/"):
            return self._linear_binary(e)
        if isinstance(e, ast.Ref):
            return self._linear_ref(e)
        self._not_linear(e)
        return None

    def _linear_binary(self, e: ast.Binary) -> tuple[Fraction, dict[str, Fraction]] | None:
        """A bound ``a + b``, ``a - b``, ``a * b`` or ``a / b``, kept linear."""
        left = self._linear(e.left)
        right = self._linear(e.right)
        if left is None or right is None:
            return None
        if e.op in ("+", "-"):
            sign = 1 if e.op == "+" else -1
            terms = dict(left[1])
            for p, c in right[1].items():
                terms[p] = terms.get(p, Fraction(0)) + sign * c
            return self._bounded(left[0] + sign * right[0], terms, e.span)
        if e.op == "*":
            if left[1] and right[1]:
                self.error("KVR303", f"{self.bound_what} must be linear: cannot multiply"
                           " two parameters", e.span)
                return None
            k, (c0, ts) = (left[0], right) if not left[1] else (right[0], left)
            return self._bounded(k * c0, {p: k * c for p, c in ts.items()}, e.span)
        if right[1]:
            self.error("KVR303", f"{self.bound_what} must be linear: cannot divide by a"
                       " parameter", e.span)
            return None
        if right[0] == 0:
            self.error("KVR303", "division by zero", e.span)
            return None
        d = right[0]
        return self._bounded(left[0] / d, {p: c / d for p, c in left[1].items()}, e.span)

    def _linear_ref(self, e: ast.Ref) -> tuple[Fraction, dict[str, Fraction]] | None:
        """A name in a bound that is neither a parameter nor a constant: reported."""
        if e.name in self.poisoned:
            return None
        if self._unknown(e):
            self.error("KVR101", f"unknown parameter `{e.name}`", e.name_span,
                       *did_you_mean(e.name, self.params))
            return None
        if e.name in self.clocks:
            if self.bound_what == "a clock bound":
                self.error("KVR207", "comparisons between two clocks are not supported", e.span,
                           "help: compare each clock with a bound instead")
            else:
                self.error("KVR303", f"a clock cannot be used in {self.bound_what}", e.span,
                           "help: an `assume` constrains the parameters only; a clock"
                           " constraint belongs in a guard, a deadline or a location"
                           if self.bound_what.startswith("an `assume`") else
                           "help: the bound is a number or linear in parameters, as in"
                           " `within 2 * T`")
            return None
        self._not_linear(e)
        return None

    def _not_linear(self, e: ast.Expr) -> None:
        """Report an expression a bound may not contain."""
        self.error(
            "KVR303",
            f"{self.bound_what} may use only numbers, parameters, constants, `+`, `-`, and"
            " `*`/`/` by a number",
            e.span,
        )

    def member(self, e: ast.Member) -> tuple[ir.Expr, Ty]:
        if self.is_label(e.value) and e.options and not all(self.is_label(o) for o in e.options):
            probe = next(o for o in e.options if not self.is_label(o))
            n_before = len(self.diags)
            _, pt = self.sub(probe, None)
            del self.diags[n_before:]  # reported again below, in order
            vc, vt = self.sub(e.value, pt)
        else:
            vc, vt = self.sub(e.value, None)
        opts: list[ir.Expr] = []
        ok = vt.kind != "error"
        for o in e.options:
            oc, ot = self.sub(o, vt)
            if ok and not self.comparable(vt, ot, o.span):
                ok = False
            opts.append(oc)
        if not ok:
            return ir.Const(0), ERR_T
        code: ir.Expr = ir.Member(vc, tuple(opts))
        if e.negated:
            code = ir.Unary(ir.UnaryOp.NOT, code)
        return code, BOOL_T

    def quant(self, e: ast.Quant) -> tuple[ir.Expr, Ty]:
        saved_names = dict(self.scope.names)
        saved_next = self.scope.next_slot
        saved_poisoned = set(self.scope.poisoned)
        bound: list[tuple[int, ir.FiniteType]] = []
        ok = True
        for b in e.binders:
            ft = self.finite_type(b.type)
            if ft is None:
                ok = False
                self.scope.poisoned.add(b.name)
                continue
            bound.append((self.bind(b.name, b.span, ft), ft))
        if ok and not self.few_instances(tuple(ft for _, ft in bound), e.binders):
            ok = False
        body, bty = self.expr(e.body, BOOL_T)
        self.expect_bool(bty, e.body.span, f"the body of `{e.kind}`")
        self.scope.names = saved_names
        self.scope.next_slot = saved_next
        self.scope.poisoned = saved_poisoned
        if not ok:
            return ir.Const(0), ERR_T
        for slot, ft in reversed(bound):
            body = ir.Quant(ir.Quantifier(e.kind), slot, ft, body)
        n = bindings(body)
        if n > MAX_BINDINGS:
            self.error("KVR301", f"this `{e.kind}` evaluates {n:,} bindings (its nested"
                       f" quantifiers multiplied; at most {MAX_BINDINGS:,})", e.span,
                       "help: quantify over smaller types, or split the property")
            return ir.Const(0), ERR_T
        return body, BOOL_T

    # ---- convex splitting ------------------------------------------------------------------------
    def _has_clock(self, e: ir.Expr) -> bool:
        return ir.has_clock(e)

    def split(self, g: ir.Expr, span: Span) -> tuple[ir.Branch, ...] | None:
        """Split a guard into convex branches: data condition plus clock atoms."""
        try:
            return ir.split_guard(g, MAX_BRANCHES, MAX_GUARD_ATOMS)
        except ir.TooManyBranches as exc:
            self.error("KVR208", str(exc), span,
                       "help: simplify the guard, or split the event into several events")
            return None


def bindings(e: ir.Node) -> int:
    """How many bindings evaluating ``e`` may visit: a quantifier's domain times its
    body's (at least one), summed over the parts of an expression."""
    if isinstance(e, ir.Quant):
        return e.type.size * max(1, bindings(e.body))
    return sum(bindings(c) for c in ir.children(e))


def _conj(items: Sequence[ir.Expr]) -> ir.Expr:
    """The conjunction of ``items``, left to right, without ``true`` conjuncts."""
    kept = [e for e in items if not (isinstance(e, ir.Const) and e.value == 1)]
    if not kept:
        return ir.Const(1)
    out = kept[0]
    for e in kept[1:]:
        out = ir.Binary(ir.BinaryOp.AND, out, e)
    return out


def _disj(items: Sequence[ir.Expr]) -> ir.Expr:
    out = items[0]
    for e in items[1:]:
        out = ir.Binary(ir.BinaryOp.OR, out, e)
    return out


def _reslot(e: ir.Expr, slot: int) -> ir.Expr:
    """``e`` with the placeholder slot -1 (an instance quantifier's) renumbered ``slot``."""
    return ir.remap(e, lambda k: slot if k == -1 else k)


def elaborate(spec: ast.SpecFile, source: str,
              consts: Mapping[str, Fraction] | None = None) -> ir.Spec:
    """Check ``spec`` and build its typed form; raises SpecError with every diagnostic.

    ``consts`` sets structural constants (``const N in 2..6 = 3``) by name; names of
    timing parameters in it are ignored (they are set when the model is built)."""
    return Elaborator(flatten(spec, source), source, consts).run()


def _values_text(values: Mapping[str, Fraction], names: Sequence[str]) -> str:
    """``T_a=1, T_b=5/2`` for the parameters ``names``."""
    return ", ".join(f"{n}={_num(values[n])}" for n in names) or "no parameter"

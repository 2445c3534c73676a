"""What the language server knows about one ``.kvr`` text: its diagnostics (those
of ``lint``), its declarations and where each name is used.

Nothing here depends on the protocol library: positions are 0-based (line,
character) pairs as in the Language Server Protocol, ranges end-exclusive.  An
analysis never raises on any text; a text that does not parse still has its
diagnostics, and keeps the symbols of the last text that did.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field

from checker.diagnostics import Diagnostic, Span, SpecError
from checker.language import ast
from checker.language.elaborate import elaborate
from checker.language.fmt import tokens
from checker.language.syntax import parse
from checker.model import ir

Pos = tuple[int, int]
"""A 0-based (line, character) position."""
Range = tuple[Pos, Pos]
"""A 0-based, end-exclusive range."""


class Kind(str, enum.Enum):
    """What a declared name is."""

    TYPE = "type"
    VALUE = "enum value"
    PARAM = "param"
    CONST = "const"
    ACTOR = "actor"
    VAR = "var"
    CLOCK = "clock"
    EVENT = "event"
    CHANNEL = "chan"
    PROCESS = "process"
    LOCATION = "location"
    INVARIANT = "invariant"
    PROPERTY = "property"
    DEADLINE = "deadline"
    REACHABLE = "reachable"
    BINDER = "parameter"


@dataclass
class Symbol:
    """One declared name."""

    name: str
    kind: Kind
    range: Range
    """Where the name is declared."""
    decl: Range
    """The whole declaration."""
    key: str
    """Unique within the file: ``name``, ``Actor.event``, ``Process.local`` or, for a
    binder, ``name@line:col``."""
    detail: str = ""
    """What hover shows below the declaration's text."""
    container: str | None = None
    """The process holding a process-local name."""
    children: list[Symbol] = field(default_factory=list)


KEYWORDS = ("model", "type", "symmetric", "ordered", "param", "const", "actor", "var", "clock",
            "event", "deadline", "invariant", "property", "reachable", "process", "chan",
            "urgent", "fair", "broadcast", "committed", "location", "in", "do", "when", "if",
            "else", "not", "and", "or", "forall", "exists", "receives", "send", "receive",
            "from", "to", "reset", "assert", "while", "leadsto", "within", "none", "true",
            "false", "skip", "always", "eventually", "bool")


def span_range(span: Span | None) -> Range:
    """The 0-based range of a 1-based span (a missing span is the file's start)."""
    if span is None:
        return (0, 0), (0, 1)
    return (span.line - 1, span.column - 1), (span.end_line - 1, span.end_column - 1)


def contains(r: Range, pos: Pos) -> bool:
    """Whether ``pos`` lies in ``r`` (its end included: the cursor just past a name)."""
    return r[0] <= pos <= r[1]


_DID_YOU_MEAN = re.compile(r"did you mean `([^`]+)`\?")


def replacement(d: Diagnostic) -> str | None:
    """The name a diagnostic's ``did you mean`` note proposes, if it has one."""
    for note in d.notes:
        m = _DID_YOU_MEAN.search(note)
        if m:
            return m.group(1)
    return None


def _type_text(t: ir.FiniteType) -> str:
    if t.kind == "enum":
        return f"{t.name} = {{{', '.join(t.labels)}}}" if t.name else "{" + ", ".join(
            t.labels) + "}"
    if t.kind == "range":
        return f"{t.name} = {t.lo}..{t.hi}" if t.name else f"{t.lo}..{t.hi}"
    return t.name or "bool"


def _size(t: ir.FiniteType) -> int:
    if t.kind == "enum":
        return len(t.labels)
    if t.kind == "range":
        return t.hi - t.lo + 1
    return 2


_NAMED: dict[type[ast.Decl], Kind] = {
    ast.TypeDecl: Kind.TYPE, ast.ParamDecl: Kind.PARAM, ast.ConstDecl: Kind.CONST,
    ast.VarDecl: Kind.VAR, ast.EventDecl: Kind.EVENT, ast.LocalEventDecl: Kind.EVENT,
    ast.ProcessDecl: Kind.PROCESS, ast.InvariantDecl: Kind.INVARIANT,
    ast.PropertyDecl: Kind.PROPERTY, ast.ReachableDecl: Kind.REACHABLE,
}
"""Declarations of one name (``name``, ``name_span``)."""
_LISTED: dict[type[ast.Decl], Kind] = {
    ast.ActorDecl: Kind.ACTOR, ast.ClockDecl: Kind.CLOCK, ast.ChanDecl: Kind.CHANNEL,
    ast.LocationDecl: Kind.LOCATION,
}
"""Declarations of a list of names (``names``: name, span, ...)."""


def _enums(t: ast.TypeExpr) -> list[ast.EnumType]:
    """The enumerations written inline in a type."""
    if isinstance(t, ast.EnumType):
        return [t]
    if isinstance(t, ast.OptionType):
        return _enums(t.inner)
    if isinstance(t, ast.MapType):
        return [e for part in (*t.domain, t.value) for e in _enums(part)]
    return []


@dataclass
class Reference:
    """A use (or the declaration) of a symbol, at a place in the text."""

    key: str
    range: Range


class Analysis:
    """Diagnostics, symbols and references of one text."""

    def __init__(self, text: str, path: str, previous: Analysis | None = None) -> None:
        self.text = text
        self.path = path
        self.lines = text.split("\n")
        self.diagnostics: list[Diagnostic] = []
        self.symbols: list[Symbol] = []
        """Top-level declarations, in order (processes hold their locals)."""
        self.by_key: dict[str, Symbol] = {}
        self.references: list[Reference] = []
        self.spec: ir.Spec | None = None
        self.binders: list[tuple[Range, Symbol]] = []
        """Formals and quantifier binders, each with the range it is in scope."""
        self.parsed = False
        tree: ast.SpecFile | None = None
        try:
            tree = parse(text, path)
            self.parsed = True
            self.spec = elaborate(tree, text)
        except SpecError as err:
            self.diagnostics = list(err.diagnostics)
        except RecursionError:
            self.diagnostics = [Diagnostic("KVR005", "the spec is nested too deeply", path)]
        if tree is not None:
            self._collect(tree)
            self._resolve()
        elif previous is not None:
            self.symbols, self.by_key = previous.symbols, previous.by_key
            self.references = previous.references
            self.binders = previous.binders

    # ---- declarations ------------------------------------------------------------------

    def _source(self, r: Range) -> str:
        (l0, c0), (l1, c1) = r
        if l0 == l1:
            return self.lines[l0][c0:c1] if l0 < len(self.lines) else ""
        return "\n".join([self.lines[l0][c0:], *self.lines[l0 + 1:l1], self.lines[l1][:c1]])

    def _first_line(self, decl: Range) -> str:
        line = self.lines[decl[0][0]] if decl[0][0] < len(self.lines) else ""
        code = [t for t in tokens(line) if t.kind != "comment"]
        return line[:code[-1].column + len(code[-1].text)].strip() if code else line.strip()

    def _add(self, name: str, kind: Kind, span: Span | None, decl: Span, key: str | None = None,
             container: Symbol | None = None, detail: str = "") -> Symbol:
        sym = Symbol(name, kind, span_range(span), span_range(decl), key or name, detail,
                     container.name if container else None)
        if container is not None:
            container.children.append(sym)
        else:
            self.symbols.append(sym)
        self.by_key.setdefault(sym.key, sym)
        return sym

    def _binders(self, binders: tuple[ast.Binder, ...], decl: Span) -> None:
        for b in binders:
            self._binder(b, decl)

    def _binder(self, b: ast.Binder, decl: Span) -> None:
        rng = span_range(b.span)
        key = f"{b.name}@{rng[0][0]}:{rng[0][1]}"
        sym = Symbol(b.name, Kind.BINDER, rng, span_range(decl), key,
                     f"ranges over {self._source(span_range(b.type.span))}")
        self.by_key[key] = sym
        self.binders.append((span_range(decl), sym))

    def _collect(self, tree: ast.SpecFile) -> None:
        for d in tree.decls:
            self._collect_decl(d, None)
        self._quantifier_binders(tree)

    def _collect_decl(self, d: ast.Decl, proc: Symbol | None) -> None:
        prefix = f"{proc.name}." if proc else ""
        named = _NAMED.get(type(d))
        if named is not None:
            name: str = getattr(d, "name")  # noqa: B009 - every kind in _NAMED has one
            key = f"{d.actor}.{name}" if isinstance(d, ast.EventDecl) else prefix + name
            sym = self._add(name, named, getattr(d, "name_span"), d.span, key, proc)  # noqa: B009
            if isinstance(d, ast.ProcessDecl):
                if d.param is not None:
                    self._binder(d.param, d.span)
                for item in d.items:
                    self._collect_decl(item, sym)
        listed = _LISTED.get(type(d))
        if listed is not None:
            for entry in getattr(d, "names"):  # noqa: B009 - every kind in _LISTED has them
                self._add(entry[0], listed, entry[1], d.span, prefix + entry[0], proc)
        if isinstance(d, ast.DeadlineDecl) and d.name is not None:
            self._add(d.name, Kind.DEADLINE, None, d.span, prefix + d.name, proc).range = (
                self._name_after(span_range(d.span), "deadline", d.name))
        params = getattr(d, "params", ())
        if isinstance(params, tuple):
            self._binders(params, d.span)
        self._enum_values(d)

    def _enum_values(self, d: ast.Decl) -> None:
        """The values of the enumerations a type or a variable declares."""
        if isinstance(d, ast.TypeDecl) and isinstance(d.body, ast.EnumType):
            for value, sp in d.body.values:
                self._add(value, Kind.VALUE, sp, d.span, detail=f"a value of `{d.name}`")
        elif isinstance(d, ast.VarDecl):
            for enum_type in _enums(d.type):
                for value, sp in enum_type.values:
                    if value not in self.by_key:
                        self._add(value, Kind.VALUE, sp, d.span,
                                  detail=f"a value of `{d.name}`")

    def _name_after(self, decl: Range, word: str, name: str) -> Range:
        line = decl[0][0]
        m = re.search(rf"\b{word}\s+({re.escape(name)})\b", self.lines[line])
        if m is None:
            return decl[0], decl[0]
        return (line, m.start(1)), (line, m.end(1))

    def _quantifier_binders(self, tree: ast.SpecFile) -> None:
        def walk(node: object, decl: Span) -> None:
            if isinstance(node, ast.Quant):
                for b in node.binders:
                    self._binder(b, node.span)
            if isinstance(node, (ast.Expr, ast.Stmt, ast.Decl)):
                for value in vars(node).values():
                    walk(value, decl)
            elif isinstance(node, tuple):
                for x in node:
                    walk(x, decl)

        for d in tree.decls:
            walk(d, d.span)

    # ---- uses -------------------------------------------------------------------------

    def _details(self) -> None:
        """What hover says of types, parameters, variables, clocks and events, from the
        elaborated model (nothing when the text does not elaborate)."""
        if self.spec is not None:
            self._type_details(self.spec)
            self._var_details(self.spec)
            self._event_details(self.spec)

    def _type_details(self, spec: ir.Spec) -> None:
        types = {t.name: t for t in spec.types}
        for name, t in types.items():
            sym = self.by_key.get(name)
            if sym is not None and sym.kind is Kind.TYPE:
                sym.detail = f"{_type_text(t)}: {_size(t)} values" + (
                    ", symmetric" if t.symmetric else "") + (", ordered" if t.ordered else "")
        for p in spec.params:
            sym = self.by_key.get(p.name)
            if sym is not None and sym.kind is Kind.PARAM:
                rng = p.range_text() or "(unbounded)"
                sym.detail = f"timing parameter in {rng}, default {p.default}"
        for c in spec.consts:
            sym = self.by_key.get(c.name)
            if sym is not None and sym.kind is Kind.CONST:
                sym.detail = (f"structural constant = {c.value}"
                              + (f", in {c.range_text()}" if c.range_text() else "")
                              + f" (-p {c.name}=VALUE sets it)")

    def _var_details(self, spec: ir.Spec) -> None:
        for v in spec.vars:
            sym = self.by_key.get(v.name)
            if sym is not None and sym.kind is Kind.VAR:
                base = v.value.base
                values = "{" + ", ".join(base.labels) + "}" if base.kind == "enum" else (
                    f"{base.lo}..{base.hi}" if base.kind == "range" else "false, true")
                if v.value.optional:
                    values += " or none"
                entries = math.prod(_size(t) for t in v.domain) if v.domain else 1
                per = " * ".join(t.name or _type_text(t) for t in v.domain)
                sym.detail = (f"values {values}; initially {v.value.show(v.init)}"
                              + (f"; {entries} entries, one per {per}" if v.domain else ""))
        for c in spec.clocks:
            sym = self.by_key.get(c.name)
            if sym is not None and sym.kind is Kind.CLOCK and c.domain:
                sym.detail = f"{math.prod(_size(t) for t in c.domain)} clocks, one per " + \
                    " * ".join(t.name or _type_text(t) for t in c.domain)

    def _event_details(self, spec: ir.Spec) -> None:
        counts: dict[str, int] = {}
        for e in spec.events:
            # a synchronisation is one event named `send+Other.receive`
            for part in e.name.split("+"):
                key = part if "." in part else f"{e.actor}.{part}"
                counts[key] = counts.get(key, 0) + math.prod(_size(t) for _n, t in e.params)
        for key, n in counts.items():
            sym = self.by_key.get(key)
            if sym is None and "." in key:
                sym = self.by_key.get(key.split(".", 1)[1])
            if sym is not None and sym.kind is Kind.EVENT:
                sym.detail = f"{n} instance{'s' if n != 1 else ''}"

    def _resolve(self) -> None:
        """Find every use of a declared name (a token-level walk over the text)."""
        self._details()
        processes = {s.name: s for s in self.symbols if s.kind is Kind.PROCESS}
        actors = {s.name for s in self.symbols if s.kind is Kind.ACTOR}
        for line_no, line in enumerate(self.lines):
            toks = tokens(line)
            for i, tok in enumerate(toks):
                if tok.kind != "name":
                    continue
                rng: Range = ((line_no, tok.column), (line_no, tok.column + len(tok.text)))
                dot = toks[i - 1] if i >= 1 else None
                member = (i >= 2 and dot is not None and dot.text == "."
                          and dot.column + 1 == tok.column
                          and toks[i - 2].column + len(toks[i - 2].text) == dot.column)
                before = toks[i - 2].text if member else None
                key = self._key_at(tok.text, rng[0], before, processes, actors)
                if key is not None:
                    self.references.append(Reference(key, rng))

    def _key_at(self, name: str, pos: Pos, qualifier: str | None,
                processes: dict[str, Symbol], actors: set[str]) -> str | None:
        if qualifier is not None:
            if qualifier in actors and f"{qualifier}.{name}" in self.by_key:
                return f"{qualifier}.{name}"
            if qualifier in processes and f"{qualifier}.{name}" in self.by_key:
                return f"{qualifier}.{name}"
            return None
        best: tuple[Range, Symbol] | None = None
        for scope, sym in self.binders:
            if sym.name == name and contains(scope, pos) and (
                    best is None or scope[0] >= best[0][0]):
                best = (scope, sym)
        if best is not None:
            return best[1].key
        for proc in processes.values():
            if contains(proc.decl, pos):
                key = f"{proc.name}.{name}"
                if key in self.by_key:
                    return key
        if name in self.by_key:
            return name
        events = [k for k in self.by_key if k.endswith(f".{name}")
                  and self.by_key[k].kind is Kind.EVENT and self.by_key[k].range[0] == pos]
        return events[0] if events else None

    # ---- queries ----------------------------------------------------------------------

    def reference_at(self, pos: Pos) -> Reference | None:
        """The use or declaration of a name under the cursor."""
        for ref in self.references:
            if contains(ref.range, pos):
                return ref
        return None

    def symbol_at(self, pos: Pos) -> Symbol | None:
        """The symbol named under the cursor."""
        ref = self.reference_at(pos)
        return self.by_key.get(ref.key) if ref is not None else None

    def uses(self, key: str) -> list[Range]:
        """Every place the symbol ``key`` is named, its declaration included."""
        return [r.range for r in self.references if r.key == key]

    def hover(self, pos: Pos) -> str | None:
        """Markdown for the name under the cursor: its declaration and what it is."""
        sym = self.symbol_at(pos)
        if sym is None:
            return None
        head = (f"{sym.kind.value} `{sym.name}`" if sym.kind is Kind.BINDER
                else f"```kvrace\n{self._first_line(sym.decl)}\n```")
        lines = [head]
        if sym.kind is not Kind.BINDER:
            lines.append(f"*{sym.kind.value}*" + (f" of process `{sym.container}`"
                                                  if sym.container else ""))
        if sym.detail:
            lines.append(sym.detail)
        return "\n\n".join(lines)

    def completions(self, pos: Pos) -> list[tuple[str, Kind | None]]:
        """Names that can be typed at ``pos``: after ``X.`` the events of actor ``X`` or
        the locals of process ``X``; else the binders in scope, the declarations and
        the keywords."""
        line = self.lines[pos[0]] if pos[0] < len(self.lines) else ""
        m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_0-9]*)$", line[:pos[1]])
        if m is not None:
            prefix = m.group(1) + "."
            return sorted({(k[len(prefix):], s.kind) for k, s in self.by_key.items()
                           if k.startswith(prefix) and s.kind is not Kind.BINDER},
                          key=lambda x: x[0])
        found: dict[str, Kind | None] = {}
        for scope, sym in self.binders:
            if contains(scope, pos):
                found.setdefault(sym.name, sym.kind)
        for sym in self.symbols:
            found.setdefault(sym.name, sym.kind)
            for child in sym.children:
                if contains(sym.decl, pos):
                    found.setdefault(child.name, child.kind)
        for word in KEYWORDS:
            found.setdefault(word, None)
        return sorted(found.items(), key=lambda x: (x[1] is None, x[0]))

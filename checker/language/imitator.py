"""Translation of IMITATOR 3.x models (``.imi``, ``.imiprop``) into kvrace specs.

IMITATOR describes a network of parametric timed automata whose synchronisation
is n-ary: every automaton that declares an action in its ``actions``
(``synclabs``) takes part in each transition on it.  A kvrace spec has no n-ary
channel, so the network is flattened: every automaton becomes an actor with an
enumerated location variable ``loc_A``; every combination of one edge per
participant of an action becomes one flat event whose guard conjoins the
participants' locations and guards and whose statements run all their updates;
an unsynchronised edge becomes an event of its own.  Location invariants become
deadlines (``x <= p while loc_A == l``; ``x = 0`` is ``x <= 0``), urgent
locations a deadline on a clock that every event resets, bounds of the initial
constraint on one parameter the parameter's range (a bound that is not a decimal
number an ``assume`` line, within a decimal range), and its other linear
constraints ``assume`` lines.  Clocks start at 0 in kvrace: when the initial
constraint bounds a clock instead of setting it to 0 (``0 <= x & x <= p``), the
spec starts with a *prelude* — an actor ``initial`` that resets each such clock
once, in any order and after any delays, then starts the model (every other event,
deadline, property and query waits for it) if the bounds hold, resetting the
clocks set to 0 — so the model starts from every valuation the constraint allows.
A ``#synth AGnot(P)`` property becomes ``invariant agnot: not (P)`` (its region
is ``kvrace synth --property agnot``) and ``#synth EF(P)`` a query ``reachable
ef: P`` (``kvrace synth --query ef``); ``projectresult(p, ...)`` is noted in the
header, for ``kvrace synth --project p,...``.

What the translation cannot express faithfully is refused with a
:class:`ImitatorError` at the position of the construct.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

#: Words of the kvrace language that cannot name anything in a spec.
KVRACE_KEYWORDS = frozenset([
    "model", "type", "param", "const", "actor", "var", "clock", "event", "deadline",
    "invariant", "property", "chan", "process", "reachable", "assume", "symmetric", "ordered",
    "in", "receives", "when", "do", "urgent", "fair", "broadcast", "location", "committed",
    "reset", "assert", "if", "else", "skip", "for", "while", "leadsto", "within", "always",
    "eventually", "and", "or", "not", "true", "false", "none", "forall", "exists", "bool"
])

#: At most this many flat events: the product of the participants' edges grows fast.
MAX_EVENTS = 10_000

Linear = dict[str, Fraction]
#: A node of the parse tree (lark types its children loosely: a tree or a token).
Node = Any


class ImitatorError(Exception):
    """A construct of an IMITATOR model that cannot be read or translated."""

    def __init__(self, path: str, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.path, self.line, self.column, self.message = path, line, column, message

    def render(self) -> str:
        """The message as ``FILE:LINE:COL: error: ...``."""
        return f"{self.path}:{self.line}:{self.column}: error: {self.message}"


@dataclass(frozen=True)
class ImportOptions:
    """Choices the IMITATOR model does not make and a kvrace spec needs."""

    #: Upper end of a parameter's range when the initial constraint gives none.
    param_max: int = 100
    #: Range of IMITATOR's unbounded ``discrete``/``int`` variables.
    int_lo: int = -100
    int_hi: int = 100


@lru_cache(maxsize=2)
def _parser(start: str) -> Lark:
    grammar = resources.files("checker.language").joinpath("imitator.lark").read_text("utf-8")
    return Lark(grammar, start=start, parser="lalr", propagate_positions=True)


def parse_imitator(text: str, path: str, start: str = "model") -> Node:
    """The parse tree of an IMITATOR model (``start="model"``) or property file
    (``start="prop_file"``); a syntax error is an :class:`ImitatorError`."""
    try:
        return _parser(start).parse(text)
    except UnexpectedInput as e:
        line, col = max(e.line, 1), max(e.column, 1)
        if isinstance(e, UnexpectedToken):
            tok = e.token
            if tok.type == "$END":
                raise ImitatorError(path, line, col, "unexpected end of file") from None
            raise ImitatorError(
                path, tok.line or line, tok.column or col,
                f"unexpected `{tok}`: not part of the IMITATOR subset kvrace imports") from None
        if isinstance(e, UnexpectedCharacters):
            at = e.pos_in_stream
            ch = text[at] if at is not None and at < len(text) else "?"
            raise ImitatorError(path, line, col, f"unexpected character `{ch}`") from None
        if isinstance(e, UnexpectedEOF):
            raise ImitatorError(path, line, col, "unexpected end of file") from None
        raise ImitatorError(path, line, col, "syntax error") from None


def _pos(node: Node | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line or 1, node.column or 1
    meta = node.meta
    return (getattr(meta, "line", 1), getattr(meta, "column", 1)) if not meta.empty else (1, 1)


@dataclass
class _Edge:
    automaton: str
    source: str
    target: str
    guard: Node
    action: str | None
    updates: list[tuple[Token, Node]]
    node: Node


@dataclass
class _Automaton:
    name: Token
    actions: list[str]
    locations: list[str] = field(default_factory=list)
    urgent: list[str] = field(default_factory=list)
    invariants: dict[str, Node] = field(default_factory=dict)
    edges: list[_Edge] = field(default_factory=list)


@dataclass
class _Init:
    """The initial state of a model as read: parameter ranges (low bound, low open,
    high bound, high open), fixed parameters, ``assume`` lines, initial locations and
    initial values of the discrete variables."""

    ranges: dict[str, list[Fraction | bool | None]]
    fixed: dict[str, Fraction] = field(default_factory=dict)
    assumes: list[str] = field(default_factory=list)
    locations: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)


class _Translator:
    """Reads one parsed model (and property) and writes the kvrace spec."""

    def __init__(self, path: str, options: ImportOptions) -> None:
        self.path = path
        self.options = options
        self.clocks: list[str] = []
        self.params: list[str] = []
        self.ints: list[str] = []
        self.bools: list[str] = []
        self.constants: dict[str, Fraction] = {}
        self.automata: list[_Automaton] = []
        self.idents: dict[str, str] = {}
        self.taken: set[str] = set()
        self.zeroed: set[str] = set()
        self.bounded: list[tuple[str, str]] = []
        """Clocks the initial constraint bounds instead of setting to 0: (clock, atom)."""
        self.prelude = ""
        """With :attr:`bounded`: the condition ``initial_phase == running`` that every
        event, deadline, property and query of the model waits for."""

    # ---- errors and names -----------------------------------------------------
    def error(self, node: Node | Token, message: str) -> ImitatorError:
        line, col = _pos(node)
        return ImitatorError(self.path, line, col, message)

    def ident(self, name: str, key: str | None = None) -> str:
        """A kvrace name for ``name``, unique and not a keyword (``key`` tells apart
        the things that share an IMITATOR name)."""
        k = key or name
        if k in self.idents:
            return self.idents[k]
        base = name + "_" if name in KVRACE_KEYWORDS else name
        out, i = base, 2
        while out in self.taken:
            out, i = f"{base}_{i}", i + 1
        self.taken.add(out)
        self.idents[k] = out
        return out

    def kind(self, name: Token | Node) -> str:
        n = str(name)
        for kind, names in (("clock", self.clocks), ("param", self.params),
                            ("int", self.ints), ("bool", self.bools)):
            if n in names:
                return kind
        if n in self.constants:
            return "const"
        raise self.error(name, f"`{n}` is not declared")

    # ---- declarations ---------------------------------------------------------
    def declare(self, tree: Node) -> None:
        section = next((c for c in tree.children
                        if isinstance(c, Tree) and c.data == "var_section"), None)
        if section is None:
            return
        for group in section.children:
            *items, vtype = group.children
            tname = str(vtype.children[0])
            for item in items:
                name, value = item.children
                n = str(name)
                if n in self.clocks + self.params + self.ints + self.bools or n in self.constants:
                    raise self.error(name, f"`{n}` is declared twice")
                if tname == "constant" or value is not None:
                    # IMITATOR reads a declaration with a value as a constant
                    if tname not in ("constant", "int", "discrete", "rational", "parameter") \
                            or value is None:
                        raise self.error(name, f"constant `{n}` needs a numeric value")
                    lin = self.linear(value)
                    if set(lin) - {""}:
                        raise self.error(value, f"the value of constant `{n}` is not a number")
                    self.constants[n] = lin.get("", Fraction(0))
                    continue
                if tname == "clock":
                    self.clocks.append(n)
                elif tname == "parameter":
                    self.params.append(n)
                elif tname in ("discrete", "int"):
                    self.ints.append(n)
                elif tname == "bool":
                    self.bools.append(n)
                else:
                    raise self.error(vtype, f"variables of type `{tname}` are not supported "
                                            "(clock, parameter, discrete, int, bool, constant are)")
                self.ident(n)

    def read_automata(self, tree: Node) -> None:
        for node in tree.children:
            if isinstance(node, Tree) and node.data == "automaton":
                self.read_automaton(node)

    def read_automaton(self, node: Node) -> None:
        """Read one automaton: its actions, locations and edges."""
        name = node.children[0]
        if any(a.name == name for a in self.automata):
            raise self.error(name, f"automaton `{name}` is declared twice")
        actions: list[str] = []
        locs: list[Node] = []
        for child in node.children[1:]:
            if isinstance(child, Tree) and child.data == "actions":
                actions = [str(a) for a in child.children if a is not None]
            elif isinstance(child, Tree):
                locs.append(child)
        aut = _Automaton(Token("NAME", str(name)) if not isinstance(name, Token) else name,
                         actions)
        self.ident(str(name), "actor:" + str(name))
        for loc in locs:
            self.read_location(aut, loc)
        for e in aut.edges:
            if e.target not in aut.locations:
                tgt = e.node.children[-1]
                raise self.error(tgt, f"`{name}` has no location `{e.target}`")
        self.automata.append(aut)

    def read_location(self, aut: _Automaton, loc: Node) -> None:
        """Read one location of ``aut``: its kind, invariant and outgoing edges."""
        kind, lname, inv, stop, *edges = loc.children
        if stop is not None:
            raise self.error(stop, "stopwatches (`stop`) are not supported")
        if str(lname) in aut.locations:
            raise self.error(lname, f"location `{lname}` is declared twice in `{aut.name}`")
        aut.locations.append(str(lname))
        if kind is not None and str(kind) == "urgent":
            aut.urgent.append(str(lname))
        aut.invariants[str(lname)] = inv
        for edge in edges:
            self.read_edge(aut, str(lname), edge)

    def read_edge(self, aut: _Automaton, source: str, edge: Node) -> None:
        """Read one edge of ``aut`` leaving location ``source``."""
        if edge.data == "transition":
            guard, sync, do, target = edge.children
        else:
            guard, do, sync, target = edge.children
        action = None if sync is None else sync.children[0]
        updates = [] if do is None else [
            (u.children[0], u.children[1]) for u in do.children if u is not None]
        if action is not None and str(action) not in aut.actions:
            raise self.error(action, f"action `{action}` is not declared in the "
                                     f"actions of `{aut.name}`")
        aut.edges.append(_Edge(str(aut.name), source, str(target), guard,
                               None if action is None else str(action), updates, edge))

    # ---- expressions ----------------------------------------------------------
    def linear(self, t: Node | Token) -> Linear:
        """The linear form of a numeric expression: coefficient per name, "" the constant."""
        if isinstance(t, Token):
            raise self.error(t, "unexpected token")
        if t.data == "num":
            return {"": Fraction(str(t.children[0]))}
        if t.data == "name":
            tok = t.children[0]
            kind = self.kind(tok)
            if kind == "const":
                return {"": self.constants[str(tok)]}
            if kind == "bool":
                raise self.error(tok, f"boolean `{tok}` used as a number")
            return {str(tok): Fraction(1)}
        if t.data == "neg":
            return {k: -v for k, v in self.linear(t.children[0]).items()}
        if t.data == "binop":
            a, op, b = t.children
            la, lb = self.linear(a), self.linear(b)
            if op in ("+", "-"):
                sign = 1 if op == "+" else -1
                out = dict(la)
                for k, v in lb.items():
                    out[k] = out.get(k, Fraction(0)) + sign * v
                return {k: v for k, v in out.items() if v != 0 or k == ""}
            if op == "*":
                if set(la) <= {""}:
                    c = la.get("", Fraction(0))
                    return {k: c * v for k, v in lb.items()}
                if set(lb) <= {""}:
                    c = lb.get("", Fraction(0))
                    return {k: c * v for k, v in la.items()}
                raise self.error(t, "a product of two variables is not linear")
            if set(lb) <= {""} and lb.get("", Fraction(0)) != 0:
                c = lb[""]
                return {k: v / c for k, v in la.items()}
            raise self.error(t, "division by a variable (or by zero) is not supported")
        raise self.error(t, "expected a number")

    @staticmethod
    def fmt_num(q: Fraction) -> str:
        return str(q.numerator) if q.denominator == 1 else f"{q.numerator} / {q.denominator}"

    def fmt_linear(self, lin: Linear) -> str:
        """``lin`` written as a kvrace expression (names first, then the constant)."""
        parts: list[str] = []
        for name in sorted(k for k in lin if k and lin[k] != 0):
            c = lin[name]
            ident = self.ident(name)
            mag = abs(c)
            term = ident if mag == 1 else (f"{mag.numerator} * {ident}" if mag.denominator == 1
                                          else f"{mag.numerator} * {ident} / {mag.denominator}")
            parts.append(("- " if c < 0 else "+ ") + term)
        const = lin.get("", Fraction(0))
        if const != 0 or not parts:
            parts.append(("- " if const < 0 else "+ ") + self.fmt_num(abs(const)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def names_in(self, t: Node | Token) -> set[str]:
        if isinstance(t, Token):
            return set()
        if t.data == "name":
            return {self.kind(t.children[0])}
        out: set[str] = set()
        for c in t.children:
            if isinstance(c, Tree):
                out |= self.names_in(c)
        return out

    def atom(self, t: Node, allow_clocks: bool, allow_params: bool) -> str:
        """One comparison in kvrace syntax; a clock comparison as ``clock op bound``."""
        a, op, b = t.children
        kinds = self.names_in(a) | self.names_in(b)
        kop = {"=": "==", "<>": "!="}.get(str(op), str(op))
        if "clock" in kinds:
            if not allow_clocks:
                raise self.error(t, "a clock cannot be compared here")
            if "int" in kinds:
                raise self.error(t, "a comparison mixing clocks and discrete variables "
                                    "is not supported")
            diff = self.linear(a)
            for k, v in self.linear(b).items():
                diff[k] = diff.get(k, Fraction(0)) - v
            clocks = [k for k in diff if k in self.clocks and diff[k] != 0]
            if len(clocks) != 1:
                raise self.error(t, "only comparisons of one clock with parameters and numbers "
                                    "are supported (no diagonal constraints)")
            x = clocks[0]
            c = diff.pop(x)
            bound = {k: -v / c for k, v in diff.items()}
            if kop == "!=":
                raise self.error(op, "`<>` on a clock is not supported")
            if c < 0:
                kop = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(kop, kop)
            return f"{self.ident(x)} {kop} {self.fmt_linear(bound)}"
        if "param" in kinds and not allow_params:
            raise self.error(t, "a comparison of parameters without a clock is not supported here "
                                "(only in the initial constraint)")
        if "param" in kinds and "int" in kinds:
            raise self.error(t, "a comparison mixing parameters and discrete variables "
                                "is not supported")
        if "bool" in kinds:
            if kop not in ("==", "!="):
                raise self.error(op, "booleans compare with `=` and `<>` only")
            return f"{self.expr(a)} {kop} {self.expr(b)}"
        return f"{self.expr(a)} {kop} {self.expr(b)}"

    def expr(self, t: Node) -> str:
        """A discrete (integer or boolean) expression in kvrace syntax."""
        if t.data == "name":
            tok = t.children[0]
            kind = self.kind(tok)
            if kind in ("clock", "param"):
                raise self.error(tok, f"{kind} `{tok}` cannot appear in a discrete expression")
            if kind == "const":
                return self.fmt_num(self.constants[str(tok)])
            return self.ident(str(tok))
        if t.data == "num":
            q = Fraction(str(t.children[0]))
            if q.denominator != 1:
                raise self.error(t, "discrete variables are integers in kvrace")
            return str(q)
        if t.data == "true":
            return "true"
        if t.data == "false":
            return "false"
        if t.data == "neg":
            return f"-({self.expr(t.children[0])})"
        if t.data == "binop":
            a, op, b = t.children
            if op == "/":
                raise self.error(op, "division of discrete variables is not supported")
            return f"({self.expr(a)} {op} {self.expr(b)})"
        raise self.error(t, "expected a discrete expression")

    def condition(self, t: Node, allow_clocks: bool, allow_params: bool = False) -> str:
        """A guard, query or predicate in kvrace syntax."""
        if t.data == "true":
            return "true"
        if t.data == "false":
            return "false"
        if t.data == "and_":
            return " and ".join(self.wrap(c, allow_clocks, allow_params) for c in t.children)
        if t.data == "or_":
            return " or ".join(self.wrap(c, allow_clocks, allow_params) for c in t.children)
        if t.data == "not_":
            return f"not ({self.condition(t.children[0], allow_clocks, allow_params)})"
        if t.data == "compare":
            return self.atom(t, allow_clocks, allow_params)
        if t.data == "loc_test":
            aut_tok, op, loc = t.children
            aut = next((a for a in self.automata if a.name == aut_tok), None)
            if aut is None:
                raise self.error(aut_tok, f"there is no automaton `{aut_tok}`")
            if str(loc) not in aut.locations:
                raise self.error(loc, f"`{aut_tok}` has no location `{loc}`")
            if str(op) not in ("=", "<>"):
                raise self.error(op, "locations compare with `=` and `<>` only")
            kop = "==" if str(op) == "=" else "!="
            return f"{self.loc_var(aut)} {kop} {self.loc_value(aut, str(loc))}"
        if t.data == "name" and self.kind(t.children[0]) == "bool":
            return self.ident(str(t.children[0]))
        raise self.error(t, "expected a condition")

    def wrap(self, t: Node, allow_clocks: bool, allow_params: bool) -> str:
        text = self.condition(t, allow_clocks, allow_params)
        return f"({text})" if t.data in ("and_", "or_") else text

    def loc_var(self, aut: _Automaton) -> str:
        return self.ident("loc_" + str(aut.name), "locvar:" + str(aut.name))

    def loc_value(self, aut: _Automaton, loc: str) -> str:
        base = loc + "_" if loc in KVRACE_KEYWORDS else loc
        return base

    # ---- the spec ---------------------------------------------------------------
    def conjuncts(self, t: Node) -> list[Node]:
        if t.data == "and_":
            return [x for c in t.children for x in self.conjuncts(c)]
        return [t]

    def invariant(self, aut: _Automaton, loc: str) -> str | None:
        atoms: list[str] = []
        for c in self.conjuncts(aut.invariants[loc]):
            if c.data == "true":
                continue
            if c.data != "compare" or "clock" not in self.names_in(c):
                raise self.error(c, "an invariant may only bound clocks from above "
                                    "(a discrete or parameter condition is not supported)")
            text = self.atom(c, allow_clocks=True, allow_params=False)
            if text.endswith(">= 0") and text.count(" ") == 2:
                continue  # clocks are never negative
            clock, op, bound = text.split(" ", 2)
            if op == "==" and bound == "0":
                text, op = f"{clock} <= 0", "<="  # clocks are never negative
            if op not in ("<", "<="):
                raise self.error(c, "an invariant may only bound clocks from above (`<` or `<=`,"
                                    " or `= 0`)")
            atoms.append(text)
        return " and ".join(atoms) if atoms else None

    def edge_parts(self, e: _Edge, aut: _Automaton, written: set[str]
                   ) -> tuple[list[str], list[str]]:
        """The guard atoms and statements of one edge; ``written`` collects the discrete
        variables the combined event writes so far."""
        guard = [f"{self.loc_var(aut)} == {self.loc_value(aut, e.source)}"]
        g = self.condition(e.guard, allow_clocks=True)
        if g != "true":
            guard.append(f"({g})" if e.guard.data == "or_" else g)
        stmts: list[str] = []
        resets: list[str] = []
        for target, value in e.updates:
            kind = self.kind(target)
            if kind == "clock":
                lin = self.linear(value)
                if set(lin) - {""} or lin.get("", Fraction(0)) != 0:
                    raise self.error(value, "a clock can only be reset to 0")
                resets.append(self.ident(str(target)))
                continue
            if kind not in ("int", "bool"):
                raise self.error(target, f"cannot assign to {kind} `{target}`")
            if str(target) in written:
                raise self.error(target, f"`{target}` is assigned twice in one transition")
            # Writing a variable an earlier update read is the same in IMITATOR's
            # simultaneous (before 3.4) and sequential (3.4 on) updates; reading one an
            # earlier update wrote is not.
            used = self._discrete_names(value)
            if used & written:
                raise self.error(value, "this update reads a variable an earlier update of the "
                                        "same transition writes; the order of updates would matter")
            value_text = self.condition(value, False) if kind == "bool" and value.data != "name" \
                else self.expr(value)
            stmts.append(f"{self.ident(str(target))} := {value_text}")
            written.add(str(target))
        if e.target != e.source:
            stmts.append(f"{self.loc_var(aut)} := {self.loc_value(aut, e.target)}")
        if resets:
            stmts.append("reset " + ", ".join(resets))
        return guard, stmts

    def _discrete_names(self, t: Node | Token) -> set[str]:
        if isinstance(t, Token):
            return set()
        if t.data == "name":
            return {str(t.children[0])} if self.kind(t.children[0]) in ("int", "bool") else set()
        return set().union(*(self._discrete_names(c) for c in t.children)) if t.children else set()

    def events(self) -> list[str]:
        """Every flat event: one per combination of the participants' edges of an
        action, one per unsynchronised edge."""
        out: list[str] = []
        names: set[str] = set()

        def fresh(base: str) -> str:
            base = base + "_" if base in KVRACE_KEYWORDS else base
            n, i = base, 2
            while n in names:
                n, i = f"{base}_{i}", i + 1
            names.add(n)
            return n

        actions: list[str] = []
        for aut in self.automata:
            actions += [a for a in aut.actions if a not in actions]
        for action in actions:
            parts = [a for a in self.automata if action in a.actions]
            choices = [[e for e in a.edges if e.action == action] for a in parts]
            count = 1
            for c in choices:
                count *= len(c)
            if len(out) + count > MAX_EVENTS:
                raise self.error(parts[0].name, f"action `{action}` gives more than "
                                                f"{MAX_EVENTS} flat events")
            for combo in itertools.product(*choices):
                guard: list[str] = [self.prelude] if self.prelude else []
                stmts: list[str] = []
                written: set[str] = set()
                for aut, e in zip(parts, combo, strict=True):
                    g, s = self.edge_parts(e, aut, written)
                    guard += g
                    stmts += s
                owner = self.ident(str(parts[0].name), "actor:" + str(parts[0].name))
                out.append(self.event_text(owner, fresh(action), guard, stmts))
        for aut in self.automata:
            for e in aut.edges:
                if e.action is None:
                    g, s = self.edge_parts(e, aut, set())
                    if self.prelude:
                        g = [self.prelude, *g]
                    owner = self.ident(str(aut.name), "actor:" + str(aut.name))
                    out.append(self.event_text(owner, fresh(f"{e.source}_to_{e.target}"), g, s))
        return out

    def event_text(self, owner: str, name: str, guard: list[str], stmts: list[str]) -> str:
        if self.urgent_clock:
            stmts = [*stmts, f"reset {self.urgent_clock}"]
        text = f"event {owner}.{name}\n  when " + " and ".join(guard)
        if stmts:
            text += "\n  do " + "; ".join(stmts)
        return text

    def translate(self, tree: Node, prop: Node | None, model_name: str) -> str:
        self.declare(tree)
        self.read_automata(tree)
        if not self.automata:
            raise self.error(tree, "the model has no automaton")
        urgent = any(a.urgent for a in self.automata)
        self.urgent_clock = self.ident("urgent_clock") if urgent else ""
        init_node = next(c for c in tree.children if isinstance(c, Tree) and c.data == "init")
        init = self.read_init(init_node)
        if self.bounded:
            self.prelude = f"{self.ident('initial_phase')} == running"
        lines = [f"# Translated from {Path(self.path).name} by `kvrace import`."]
        if prop is not None and len(prop.children) > 2 and prop.children[2] is not None:
            names = self.projection(prop.children[2])
            lines.append(f"# IMITATOR projects the result onto {', '.join(names)}"
                         f" (projectresult): kvrace synth --project {','.join(names)}")
        lines += ["", f"model {model_name}", ""]
        param_lines = self.param_lines(init.ranges, init.fixed, init.assumes)
        lines += param_lines
        if param_lines:
            lines.append("")
        lines += self.state_lines(init)
        lines += self.deadline_lines()
        lines.append("")
        for ev in [*self.prelude_events(), *self.events()]:
            lines += [ev, ""]
        if prop is not None:
            lines.append(self.property_line(prop))
        return "\n".join(lines).rstrip("\n") + "\n"

    def read_init(self, node: Node) -> _Init:
        """Read the initial state: locations, discrete values and the constraint on the
        clocks and parameters; checks that it sets every clock and location."""
        init = _Init({p: [Fraction(0), False, None, False] for p in self.params})
        for part in node.children:
            if not isinstance(part, Tree):
                continue
            if part.data == "discrete_part":
                for d in part.children:
                    if d is not None:
                        self.discrete_init(d, init)
            else:
                for c in part.children:
                    self.initial_constraint(c, init.ranges, init.fixed, init.assumes)
        bounded = {c for c, _ in self.bounded}
        for clock in self.clocks:
            ident = self.ident(clock)
            if ident in self.zeroed and ident in bounded:
                raise self.error(node, f"the initial constraint sets clock `{clock}` to 0 and "
                                       "also bounds it")
            if ident not in self.zeroed and ident not in bounded:
                raise self.error(node, f"the initial constraint must set clock `{clock}` to 0 "
                                       "or bound it (IMITATOR leaves an unmentioned clock "
                                       "arbitrary)")
        for aut in self.automata:
            if str(aut.name) not in init.locations:
                raise self.error(aut.name, f"the initial location of `{aut.name}` is not given")
        return init

    def discrete_init(self, d: Node, init: _Init) -> None:
        """Read one initial location or initial value of a discrete variable."""
        if d.data == "loc_init":
            aut_tok, loc = d.children
            aut = next((a for a in self.automata if a.name == aut_tok), None)
            if aut is None:
                raise self.error(aut_tok, f"there is no automaton `{aut_tok}`")
            if str(loc) not in aut.locations:
                raise self.error(loc, f"`{aut_tok}` has no location `{loc}`")
            init.locations[str(aut_tok)] = str(loc)
            return
        var, value = d.children
        kind = self.kind(var)
        if kind not in ("int", "bool"):
            raise self.error(var, f"`{var}` is not a discrete variable")
        init.values[str(var)] = self.expr(value)

    def state_lines(self, init: _Init) -> list[str]:
        """The ``actor``, ``var`` and ``clock`` lines."""
        actors = [self.ident(str(a.name), "actor:" + str(a.name)) for a in self.automata]
        if self.bounded:
            actors.append(self.ident("initial", "actor:<prelude>"))
        lines = ["actor " + ", ".join(actors), ""]
        if self.bounded:
            lines.append(f"var {self.ident('initial_phase')} : {{choosing, running}} = choosing")
            lines += [f"var {self.set_var(c)} : bool = false" for c in self.bounded_clocks()]
        for aut in self.automata:
            values = ", ".join(self.loc_value(aut, loc) for loc in aut.locations)
            lines.append(f"var {self.loc_var(aut)} : {{{values}}} = "
                         f"{self.loc_value(aut, init.locations[str(aut.name)])}")
        for v in self.ints:
            lines.append(f"var {self.ident(v)} : {self.options.int_lo}..{self.options.int_hi} = "
                         f"{init.values.get(v, '0')}")
        for v in self.bools:
            lines.append(f"var {self.ident(v)} : bool = {init.values.get(v, 'false')}")
        clocks = [self.ident(c) for c in self.clocks]
        if self.urgent_clock:
            clocks.append(self.urgent_clock)
        if clocks:
            lines.append("clock " + ", ".join(clocks))
        lines.append("")
        return lines

    def deadline_lines(self) -> list[str]:
        """The deadlines of the location invariants and of the urgent locations (after
        the prelude, if any)."""
        lines: list[str] = []
        started = f"{self.prelude} and " if self.prelude else ""
        for aut in self.automata:
            for loc in aut.locations:
                inv = self.invariant(aut, loc)
                if inv is not None:
                    dname = self.ident(f"inv_{aut.name}_{loc}", f"inv:{aut.name}:{loc}")
                    lines.append(f"deadline {dname}: {inv}\n  while {started}"
                                 f"{self.loc_var(aut)} == {self.loc_value(aut, loc)}")
        if self.urgent_clock:
            where = " or ".join(f"{self.loc_var(a)} == {self.loc_value(a, loc)}"
                                for a in self.automata for loc in a.urgent)
            if started:
                where = f"{started}({where})"
            lines.append(f"deadline urgent_locations: {self.urgent_clock} <= 0\n  while {where}")
        return lines

    def bounded_clocks(self) -> list[str]:
        """The clocks the initial constraint bounds, in order, once each."""
        return list(dict.fromkeys(c for c, _ in self.bounded))

    def set_var(self, clock: str) -> str:
        return self.ident(f"initial_set_{clock}", f"initial_set:{clock}")

    def prelude_events(self) -> list[str]:
        """The prelude's events: each bounded clock reset once, then the start."""
        if not self.bounded:
            return []
        owner = self.ident("initial", "actor:<prelude>")
        phase = self.ident("initial_phase")
        out = [self.event_text(owner, f"set_{c}",
                               [f"{phase} == choosing", f"not {self.set_var(c)}"],
                               [f"{self.set_var(c)} := true", f"reset {c}"])
               for c in self.bounded_clocks()]
        guard = [f"{phase} == choosing", *(self.set_var(c) for c in self.bounded_clocks()),
                 *(text for _, text in self.bounded if text)]
        stmts = [f"{phase} := running"]
        zero = [c for c in (self.ident(k) for k in self.clocks) if c in self.zeroed]
        if zero:
            stmts.append("reset " + ", ".join(zero))
        out.append(self.event_text(owner, "start", guard, stmts))
        return out

    def projection(self, node: Node) -> list[str]:
        """The parameters of ``projectresult(...)`` (in the property file)."""
        names = []
        for tok in node.children:
            if str(tok) not in self.params:
                line, col = _pos(tok)
                raise ImitatorError(self.prop_path, line, col,
                                    f"`{tok}` is not a parameter (projectresult projects the "
                                    "result onto parameters)")
            names.append(self.ident(str(tok)))
        return names

    def property_line(self, prop: Node) -> str:
        """The invariant of an ``AGnot`` property or the query of an ``EF`` one."""
        kind, body = prop.children[:2]
        self.path = self.prop_path
        if str(kind) == "AGnot":
            cond = self.condition(body, allow_clocks=False)
            if self.prelude:
                cond = f"{self.prelude} and ({cond})"
            return f"invariant agnot: not ({cond})"
        cond = self.condition(body, allow_clocks=True)
        return f"reachable ef: {self.prelude} and ({cond})" if self.prelude else \
            f"reachable ef: {cond}"

    def initial_constraint(self, c: Node, ranges: dict[str, list[Fraction | bool | None]],
                           fixed: dict[str, Fraction], assumes: list[str]) -> None:
        for atom in self.conjuncts(c):
            if atom.data == "true":
                continue
            if atom.data != "compare":
                raise self.error(atom, "the initial constraint must be a conjunction "
                                       "of comparisons")
            kinds = self.names_in(atom)
            a, op, b = atom.children
            if "clock" in kinds:
                self.zero_clock(atom)
                continue
            if kinds - {"param", "const"}:
                raise self.error(atom, "the initial constraint may only constrain "
                                       "clocks and parameters")
            if str(op) == "<>":
                raise self.error(op, "`<>` in the initial constraint is not supported")
            diff = self.linear(a)
            for k, v in self.linear(b).items():
                diff[k] = diff.get(k, Fraction(0)) - v
            ps = [k for k in diff if k and diff[k] != 0]
            if not ps:
                kop = {"=": "=="}.get(str(op), str(op))
                if not self.holds({}, kop, -diff.get("", Fraction(0)), {}):
                    raise self.error(atom, "this initial constraint is false")
            elif len(ps) == 1:
                self.param_bound(ps[0], diff, str(op), ranges, fixed)
            else:
                self.param_assume(diff, str(op), atom, assumes)

    def zero_clock(self, atom: Node) -> None:
        """Record the clock that a comparison of the initial constraint sets to 0, or
        the bound it puts on a clock (for the prelude; a lower bound 0 only marks the
        clock arbitrary: clocks are never negative)."""
        text = self.atom(atom, allow_clocks=True, allow_params=False)
        clock, op, bound = text.split(" ", 2)
        if op == "==" and bound == "0":
            self.zeroed.add(clock)
        elif not (op == ">=" and bound == "0"):
            self.bounded.append((clock, text))
        elif clock not in (c for c, _ in self.bounded):
            self.bounded.append((clock, ""))

    @staticmethod
    def param_bound(p: str, diff: Linear, op: str,
                    ranges: dict[str, list[Fraction | bool | None]],
                    fixed: dict[str, Fraction]) -> None:
        """Narrow the range of ``p`` (or fix it) by the constraint ``diff op 0``."""
        coef = diff[p]
        value = -diff.get("", Fraction(0)) / coef
        kop = op
        if coef < 0:
            kop = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(kop, kop)
        r = ranges[p]
        if kop == "=":
            fixed[p] = value
        elif kop in (">", ">="):
            lo = r[0]
            assert isinstance(lo, Fraction)
            if value > lo or (value == lo and kop == ">"):
                r[0], r[1] = value, kop == ">"
        else:
            hi = r[2]
            if hi is None or not isinstance(hi, Fraction) or value < hi or (
                    value == hi and kop == "<"):
                r[2], r[3] = value, kop == "<"

    def param_assume(self, diff: Linear, op: str, atom: Node, assumes: list[str]) -> None:
        """An ``assume`` line for the constraint ``diff op 0`` on several parameters."""
        kop = {"=": "=="}.get(op, op)
        lhs = {k: v for k, v in diff.items() if k}
        if lhs[min(lhs)] < 0:  # written as a person would: `p - q >= 1`, not `-p + q <= -1`
            lhs = {k: -v for k, v in lhs.items()}
            diff = {k: -v for k, v in diff.items()}
            kop = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(kop, kop)
        # positive terms on the left, the rest on the right: `p >= q + 1`
        left = {k: v for k, v in lhs.items() if v > 0}
        right = {k: -v for k, v in lhs.items() if v < 0}
        right[""] = -diff.get("", Fraction(0))
        assumes.append(f"assume {self.fmt_linear(left)} {kop} {self.fmt_linear(right)}")
        self._assume_forms.append((lhs, kop, -diff.get("", Fraction(0)), atom))

    _assume_forms: list[tuple[Linear, str, Fraction, Node]]
    _init_node: Node
    prop_path: str
    urgent_clock: str

    def param_lines(self, ranges: dict[str, list[Fraction | bool | None]],
                    fixed: dict[str, Fraction], assumes: list[str]) -> list[str]:
        """``param`` lines with ranges and defaults that satisfy every ``assume``."""
        box: dict[str, tuple[Fraction, bool, Fraction, bool]] = {}
        for p in self.params:
            if p in fixed:
                continue
            lo, lo_open, hi, hi_open = ranges[p]
            assert isinstance(lo, Fraction)
            if hi is None:
                hi, hi_open = Fraction(max(self.options.param_max, int(lo) + 1)), False
            assert isinstance(hi, Fraction)
            if hi < lo or (hi == lo and (lo_open or hi_open)):
                raise self.error(self._init_node,
                                 f"the initial constraint leaves no value of `{p}`")
            box[p] = (lo, bool(lo_open), hi, bool(hi_open))
        exact = dict(box)
        for p, (lo, lo_open, hi, hi_open) in exact.items():
            box[p] = (*self.range_end(p, lo, lo_open, True, assumes),
                      *self.range_end(p, hi, hi_open, False, assumes))
        default = self.default_point(exact, fixed)
        lines: list[str] = []
        for p in self.params:
            if p in fixed:
                if fixed[p].denominator != 1 or fixed[p] < 0:
                    raise self.error(self._init_node,
                                     f"the value of `{p}` must be a natural number")
                lines.append(f"param {self.ident(p)} = {fixed[p]}")
                continue
            lo, lo_open, hi, hi_open = box[p]
            lo_b, hi_b = "(" if lo_open else "[", ")" if hi_open else "]"
            lines.append(f"param {self.ident(p)} in {lo_b}{self.decimal(lo)}, "
                         f"{self.decimal(hi)}{hi_b} = {self.decimal(default[p])}")
        return lines + assumes

    def range_end(self, p: str, q: Fraction, is_open: bool, low: bool, assumes: list[str]
                  ) -> tuple[Fraction, bool]:
        """One end of the range of ``p``: ``q`` when it is a decimal number; else
        (`40/3 - 1/150`) an ``assume`` line with the exact bound, and the integer just
        outside it as the range's end."""
        if _is_decimal(q):
            return q, is_open
        op = (">" if is_open else ">=") if low else ("<" if is_open else "<=")
        assumes.append(f"assume {self.ident(p)} {op} {self.fmt_num(q)}")
        self._assume_forms.append(({p: Fraction(1)}, op, q, self._init_node))
        return Fraction(math.floor(q) if low else math.ceil(q)), False

    def decimal(self, q: Fraction) -> str:
        if q.denominator == 1:
            return str(q)
        d = q.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        if d != 1 or q < 0:
            raise self.error(self._init_node, f"the bound {q} is not a decimal number")
        text = f"{float(q):.12f}".rstrip("0")
        return text

    def default_point(self, box: dict[str, tuple[Fraction, bool, Fraction, bool]],
                      fixed: dict[str, Fraction]) -> dict[str, Fraction]:
        """A point of the box (simple values, lowest first) inside every ``assume``."""
        names = list(box)
        cands: list[list[Fraction]] = []
        for p in names:
            lo, lo_open, hi, hi_open = box[p]
            mid = (lo + hi) / 2
            raw = [lo, lo + 1, mid, Fraction(int(mid)), hi - 1, hi]
            # the shortest decimal near the middle, for a range with non-decimal ends
            raw += [Fraction(round(mid * 10 ** k), 10 ** k) for k in range(1, 7)]
            ok = sorted({v for v in raw if (v > lo or (v == lo and not lo_open))
                         and (v < hi or (v == hi and not hi_open)) and _is_decimal(v)})
            cands.append(ok[:8])
        for n, point in enumerate(itertools.product(*cands)):
            if n > 200_000:
                break
            values = dict(zip(names, point, strict=True)) | fixed
            if all(self.holds(lhs, op, rhs, values) for lhs, op, rhs, _ in self._assume_forms):
                return dict(zip(names, point, strict=True))
        raise self.error(self._init_node, "no simple parameter value satisfies the initial "
                                          "constraint; kvrace needs a default inside it")

    @staticmethod
    def holds(lhs: Linear, op: str, rhs: Fraction, values: dict[str, Fraction]) -> bool:
        v = sum((c * values[k] for k, c in lhs.items()), Fraction(0))
        return {"<": v < rhs, "<=": v <= rhs, ">": v > rhs, ">=": v >= rhs, "==": v == rhs}[op]


def _is_decimal(q: Fraction) -> bool:
    """Whether ``q`` has a finite decimal expansion (a kvrace number)."""
    d = q.denominator
    for f in (2, 5):
        while d % f == 0:
            d //= f
    return d == 1 and q >= 0


def translate_imitator(text: str, path: str, prop_text: str | None = None,
                       prop_path: str | None = None, model_name: str | None = None,
                       options: ImportOptions | None = None) -> str:
    """The kvrace spec for the IMITATOR model ``text`` (read from ``path``) and,
    when given, its property file; :class:`ImitatorError` when it cannot be
    translated."""
    tree = parse_imitator(text, path)
    prop = None
    if prop_text is not None:
        prop = parse_imitator(prop_text, prop_path or "<property>", start="prop_file")
    tr = _Translator(path, options or ImportOptions())
    tr._assume_forms = []
    init = next(c for c in tree.children if isinstance(c, Tree) and c.data == "init")
    tr._init_node = init
    name = model_name or "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in Path(path).stem)
    if not name or name[0].isdigit():
        name = "m_" + name
    tr.prop_path = prop_path or "<property>"
    return tr.translate(tree, prop, name)

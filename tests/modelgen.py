"""Random small models covering the whole kvrace language, for differential tests.

:func:`render_model` draws one well-formed model as ``.kvr`` text from a
``random.Random``; the same seed always gives the same text.  The models use

* index types of every kind: ``bool``, a plain enumeration, a ``symmetric``
  one and an integer range, as map domains (also tuple domains), clock
  domains, event, deadline, invariant and property parameters and quantifier
  binders;
* optional values ``T?`` and ``none``, dereferenced behind guards that protect
  them and, sometimes, unprotected (a run-time fault: verdict ``error``);
* data-dependent clock and map indices: computed with ``in {...}``,
  ``forall``/``exists``, ``=>``, arithmetic on ranges (which may leave the
  range: another fault) and reads of other variables;
* statements: assignments, resets, ``if``/``else``, ``skip`` and asserts
  whose messages format values;
* guards mixing data and clock atoms with ``and``/``or``/``=>`` in every
  order, also under quantifiers; clock atoms are closed (``<=``, ``>=``,
  ``==``), never under ``not`` nor left of ``=>`` (that would make them
  strict), so the integer-time reference explorer can judge every model;
* parameters with open and closed ranges and integer or rational defaults,
  in clock and ``within`` bounds (linear, always an integer at the defaults,
  as the reference explorer needs);
* deadlines (named or not, indexed, over several clocks, with compound
  ``while`` conditions), invariants, bounded responses and ``receives``.

A symmetric type's values cannot be named (KVR306); they reach guards and
properties through event parameters, binders, quantifiers and variables of
that type compared with one another.

Models stay small (at most three clock instances, two-value index types,
bounds at most 4) so that the reference explorer needs a few thousand states.
:func:`features` counts the language features a model text uses, from its
text and its elaborated IR, to test that the generator covers them.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from checker.language import load_text
from checker.model import ir

# ---- the pieces of a model ---------------------------------------------------------------


@dataclass(frozen=True)
class FT:
    """A finite type as the generator sees it."""

    name: str  # as written in a declaration: "bool", "K", "P", "R", or an inline enum
    kind: str  # "bool" | "enum" | "range"
    values: tuple[str, ...]  # the values as written (for ranges: the numbers)
    symmetric: bool = False

    @property
    def nameable(self) -> bool:
        """Whether the values can be written as constants."""
        return not self.symmetric


BOOL = FT("bool", "bool", ("false", "true"))


@dataclass(frozen=True)
class Var:
    name: str
    domain: tuple[FT, ...]
    value: FT
    optional: bool = False


@dataclass(frozen=True)
class Clock:
    name: str
    domain: FT | None


@dataclass(frozen=True)
class Param:
    name: str
    default: Fraction


@dataclass(frozen=True)
class EventSig:
    actor: str
    name: str
    params: tuple[FT, ...]


@dataclass
class Scope:
    """Bound names in scope (event or declaration parameters, quantifier binders)."""

    names: list[tuple[str, FT]] = field(default_factory=list)

    def of(self, ft: FT) -> list[str]:
        return [n for n, t in self.names if t == ft]

    def plus(self, name: str, ft: FT) -> Scope:
        return Scope([*self.names, (name, ft)])


class Gen:
    """Draws expressions, guards and statements over the declared pieces."""

    def __init__(self, r: random.Random, types: Sequence[FT], gvars: Sequence[Var],
                 clocks: Sequence[Clock], params: Sequence[Param]) -> None:
        self.r = r
        self.types = list(types)
        self.vars = list(gvars)
        self.clocks = list(clocks)
        self.params = list(params)
        self.fresh = 0
        self.fault_rate = r.choice([0.0, 0.05, 0.1, 0.2])
        """How often an unprotected dereference or range overflow is drawn."""
        self.loops = False
        """Whether statements may be bounded loops (``for k: T { ... }``)."""

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def binder(self) -> str:
        self.fresh += 1
        return f"q{self.fresh}"

    # ---- values of a finite type ------------------------------------------------------
    def reads_of(self, ft: FT, optional: bool | None = None, scope: Scope | None = None
                 ) -> list[Var]:
        """Variables with values of ``ft`` (readable in ``scope``, if given)."""
        return [v for v in self.vars if v.value == ft
                and (optional is None or v.optional == optional)
                and (scope is None or not any(self.missing(t, scope) for t in v.domain))]

    def readable(self, scope: Scope) -> list[Var]:
        """Variables whose every cell can be indexed in ``scope``."""
        return [v for v in self.vars if not any(self.missing(t, scope) for t in v.domain)]

    def read(self, v: Var, scope: Scope, depth: int) -> str:
        if not v.domain:
            return v.name
        return f"{v.name}[{', '.join(self.value(t, scope, depth + 1) for t in v.domain)}]"

    def value(self, ft: FT, scope: Scope, depth: int = 0) -> str:
        """An expression of type ``ft`` (not optional): a data-dependent index."""
        r = self.r
        options: list[str] = []
        locals_ = scope.of(ft)
        if locals_:
            options += ["local"] * 4
        if ft.nameable:
            options += ["const"] * 2
        if depth < 2:
            if self.reads_of(ft, False, scope):
                options += ["read"] * 2
            if self.reads_of(ft, True, scope) and self.chance(self.fault_rate * 2):
                options.append("deref")  # may be none here: a fault
            if ft.kind == "bool":
                options += ["cond"] * 3
            if ft.kind == "range":
                options += ["arith"] * 2
        if not options:  # a symmetric type with nothing of it in scope
            options = ["quantified"]
        form = r.choice(options)
        if form == "local":
            return r.choice(locals_)
        if form == "const":
            return r.choice(ft.values)
        if form == "read":
            return self.read(r.choice(self.reads_of(ft, False, scope)), scope, depth)
        if form == "deref":
            return self.read(r.choice(self.reads_of(ft, True, scope)), scope, depth)
        if form == "cond":  # a data-dependent boolean index
            k = r.randint(0, 3)
            if k == 0:
                ph = self.vars[0]  # the phase
                a, b = r.sample(list(ph.value.values), 2)
                return f"{ph.name} in {{{a}, {b}}}" if self.chance(0.7) else \
                    f"{ph.name} not in {{{a}}}"
            if k == 1:
                q, t = self.binder(), r.choice(self.types)
                return f"({r.choice(['forall', 'exists'])} {q}: {t.name} . " \
                    f"{self.cond(scope.plus(q, t), depth + 2)})"
            if k == 2:
                return f"({self.atom(scope, depth + 1)} => {self.atom(scope, depth + 1)})"
            return f"({self.cond(scope, depth + 1)})"
        if form == "arith":
            return self.arith(ft, scope, depth)
        # A symmetric type with no value of it in scope: dereference an option (callers
        # bind a quantifier first where they can, see close()).
        opts = [v for v in self.vars if v.value == ft and not v.domain]
        if not opts:
            raise AssertionError(f"no value of {ft.name} in scope {scope.names}")
        return r.choice(opts).name

    def arith(self, ft: FT, scope: Scope, depth: int) -> str:
        """Arithmetic on a range value; kept inside the range unless a fault is drawn."""
        lo, hi = int(ft.values[0]), int(ft.values[-1])
        a = self.int_term(ft, scope)
        if self.chance(self.fault_rate):
            return f"{a} + 1"  # may leave the range: a fault
        form = self.r.randint(0, 2)
        if form == 0:
            return f"{hi + lo} - {a}"
        # `/` and `%` by hi + 1 on a value in 0..hi: a / (hi + 1) is 0, a % (hi + 1) is a.
        if form == 1:
            return f"{a} % {hi + 1} - {a} + {self.int_term(ft, scope)}"
        return f"{a} / {hi + 1} + {self.r.choice(ft.values)}"

    def int_term(self, ft: FT, scope: Scope) -> str:
        """A value of range type ``ft``: a local or a scalar variable of it, or a number."""
        terms = scope.of(ft)
        terms += [v.name for v in self.vars if v.value == ft and not v.domain
                  and not v.optional]
        if not terms:
            return self.r.choice(ft.values)
        return self.r.choice(terms)

    def missing(self, ft: FT, scope: Scope) -> bool:
        """Whether a value of ``ft`` can only be had by dereferencing an option."""
        return ft.symmetric and not scope.of(ft) and not any(
            v.value == ft and not v.optional and not v.domain for v in self.vars)

    def close(self, domain: Sequence[FT], scope: Scope) -> tuple[Scope, list[str]]:
        """Binders for the symmetric index types of ``domain`` that nothing in scope
        provides: the atom is then written under ``forall``/``exists`` over them."""
        binders: list[str] = []
        for ft in dict.fromkeys(domain):
            if self.missing(ft, scope):
                q = self.binder()
                scope = scope.plus(q, ft)
                binders.append(f"{q}: {ft.name}")
        return scope, binders

    def quantify(self, binders: list[str], body: str) -> str:
        if not binders:
            return body
        return f"({self.r.choice(['forall', 'exists'])} {', '.join(binders)} . {body})"

    # ---- data conditions ------------------------------------------------------------------
    def atom(self, scope: Scope, depth: int) -> str:
        r = self.r
        kinds = ["var"] * 5 + ["quant"] * (2 if depth < 2 else 0) + ["opt"] * 2
        kind = r.choice(kinds)
        if kind == "quant":
            ft = r.choice(self.types)
            q = self.binder()
            body = self.cond(scope.plus(q, ft), depth + 1)
            return f"({r.choice(['forall', 'exists'])} {q}: {ft.name} . {body})"
        opts = [v for v in self.vars if v.optional]
        if kind == "opt" and opts:
            v = r.choice(opts)
            scope, binders = self.close(v.domain, scope)
            return self.quantify(binders, self.opt_atom(v, scope, depth))
        v = r.choice(self.vars)
        scope, binders = self.close(v.domain, scope)
        return self.quantify(binders, self.var_atom(v, scope, depth))

    def opt_atom(self, v: Var, scope: Scope, depth: int) -> str:
        r = self.r
        ref = self.read(v, scope, depth)
        form = r.randint(0, 4)
        if form <= 1:
            return f"{ref} {r.choice(['==', '!='])} none"
        if form == 2 and (scope.of(v.value) or v.value.nameable):
            return f"{ref} == {self.value(v.value, scope, depth + 1)}"
        # A protected dereference: the value is used only where it is not none.
        inner = self.deref_use(v, ref, scope, depth)
        if inner is None:
            return f"{ref} != none"
        return r.choice([f"({ref} != none and {inner})", f"({ref} == none or {inner})",
                        f"({ref} != none => {inner})"])

    def var_atom(self, v: Var, scope: Scope, depth: int) -> str:
        r = self.r
        ref = self.read(v, scope, depth)
        if v.optional:
            return f"{ref} {r.choice(['==', '!='])} none"
        ft = v.value
        if ft.kind == "bool":
            return ref if self.chance(0.6) else f"not {ref}"
        if ft.kind == "enum":
            other = self.value(ft, scope, depth + 1) if depth < 2 else (
                r.choice(ft.values) if ft.nameable else ref)
            form = r.randint(0, 3)
            if form == 0 and ft.name in ORDERED:
                return f"{ref} <= {other}"  # order on an `ordered type`
            if form == 0:
                return f"{ref} == {other}"
            if form == 1:
                return f"{ref} != {other}"
            if form == 2 and ft.nameable and len(ft.values) > 2:
                a, b = r.sample(list(ft.values), 2)
                return f"{ref} in {{{a}, {b}}}"
            if form == 3 and ft.nameable:
                return f"{ref} not in {{{r.choice(ft.values)}}}"
            return f"{ref} == {other}"
        k = r.choice(ft.values)
        form = r.randint(0, 5)
        if form == 0:
            return f"{ref} in {{{k}, {r.choice(ft.values)}}}"
        if form == 1:
            return f"{ref} + {self.int_term(ft, scope)} >= {k}"
        op = r.choice(["==", "!=", "<=", ">=", "<", ">"])
        return f"{ref} {op} {k}"

    def deref_use(self, v: Var, ref: str, scope: Scope, depth: int) -> str | None:
        """A condition that uses the value of optional ``v`` (read as ``ref``)."""
        maps = [m for m in self.vars if m.domain == (v.value,) and not m.optional]
        if maps:
            m = self.r.choice(maps)
            if m.value.kind == "bool":
                return f"{m.name}[{ref}]"
            if m.value.nameable:
                return f"{m.name}[{ref}] == {self.r.choice(m.value.values)}"
        if v.value.kind == "range":
            return f"{ref} + 1 > {self.r.choice(v.value.values)}"
        return None

    def cond(self, scope: Scope, depth: int = 0) -> str:
        """A boolean data condition (no clocks)."""
        r = self.r
        form = r.randint(0, 9) if depth < 2 else 0
        if form <= 4:
            return self.atom(scope, depth)
        a, b = self.atom(scope, depth + 1), self.atom(scope, depth + 1)
        if form == 5:
            return f"not ({a} and {b})"
        if form == 6:
            return f"({a} => {b})"
        if form == 7:
            return f"not {a}"
        return f"({a} {r.choice(['and', 'or'])} {b})"

    # ---- clocks ---------------------------------------------------------------------------
    def bound(self, upper: bool = False) -> str:
        """A clock bound, an integer at the parameters' defaults."""
        r = self.r
        if self.params and self.chance(0.45):
            p = r.choice(self.params)
            d = p.default
            if d.denominator == 1:
                forms = [p.name]
                if d >= 1:
                    forms.append(f"{p.name} - 1")
                if d <= 3:
                    forms.append(f"{p.name} + 1")
                return r.choice(forms)
            # a rational default such as 1.5 or 2.5: an integer bound from it
            frac = d - int(d)
            forms = [f"{p.name} + {_dec(1 - frac)}", f"{p.name} - {_dec(frac)}"]
            if (2 * d).denominator == 1 and 2 * d <= 4:
                forms.append(f"2 * {p.name}")
            return r.choice(forms)
        return str(r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4] if not upper else [1, 2, 2, 3, 3, 4]))

    def usable_clocks(self, scope: Scope) -> list[Clock]:
        return [c for c in self.clocks if c.domain is None or not self.missing(c.domain, scope)]

    def clock_ref(self, scope: Scope, depth: int = 1, c: Clock | None = None) -> str:
        if c is None:
            c = self.r.choice(self.usable_clocks(scope) or self.clocks)
        if c.domain is None:
            return c.name
        return f"{c.name}[{self.value(c.domain, scope, depth)}]"

    def clock_atom(self, scope: Scope) -> str:
        c = self.r.choice(self.clocks)
        scope, binders = self.close((c.domain,) if c.domain is not None else (), scope)
        ref = self.clock_ref(scope, c=c)
        op = self.r.choice(["<=", ">=", ">=", "=="])
        left = self.chance(0.15)  # the bound on the left
        atom = f"{self.bound()} {op} {ref}" if left else f"{ref} {op} {self.bound()}"
        return self.quantify(binders, atom)

    def guard(self, scope: Scope, depth: int = 0) -> str:
        """A guard over data and clocks (closed clock atoms, never negated)."""
        r = self.r
        form = r.randint(0, 11) if depth < 2 else r.choice([0, 1, 1])
        if form == 0:
            return self.cond(scope, 1)
        if form == 1:
            return self.clock_atom(scope)
        if form in (2, 3):
            a, b = self.guard(scope, depth + 1), self.guard(scope, depth + 1)
            return f"{_par(a)} and {_par(b)}"
        if form == 4:
            return f"{_par(self.guard(scope, depth + 1))} or {_par(self.guard(scope, depth + 1))}"
        if form == 5:
            return f"{_par(self.cond(scope, 1))} => {_par(self.guard(scope, depth + 1))}"
        if form == 6:  # data-protected clock atom over an optional value
            opts = [v for v in self.vars if v.optional]
            clocked = [c for c in self.clocks if c.domain is not None]
            opts = [v for v in opts if v in self.readable(scope)]
            if opts:
                v = r.choice(opts)
                use = self.deref_use(v, v.name if not v.domain else self.read(v, scope, 1),
                                     scope, 1)
                cl = [c for c in clocked if c.domain == v.value]
                ref = v.name if not v.domain else self.read(v, scope, 1)
                catom = (f"{cl[0].name}[{ref}] >= {self.bound()}" if cl and self.chance(0.5)
                         else self.clock_atom(scope))
                inner = f"{use} and {catom}" if use else catom
                return r.choice([f"({ref} == none or ({inner}))",
                                 f"({ref} != none and {inner})",
                                 f"({ref} != none => {inner})"])
            return self.clock_atom(scope)
        if form == 7 and self.clocks:  # a quantifier over clocks
            doms = [c.domain for c in self.clocks if c.domain is not None]
            ft = r.choice(doms) if doms else r.choice(self.types)
            q = self.binder()
            inner = self.guard(scope.plus(q, ft), depth + 1)
            return f"({r.choice(['forall', 'exists'])} {q}: {ft.name} . {inner})"
        if form == 8:
            return f"{_par(self.cond(scope, 1))} and {_par(self.clock_atom(scope))}"
        if form == 9:
            return f"{_par(self.clock_atom(scope))} or {_par(self.cond(scope, 1))}"
        if form == 10:
            return f"not {_par(self.cond(scope, 1))} and {_par(self.clock_atom(scope))}"
        return f"{_par(self.cond(scope, 1))} or {_par(self.clock_atom(scope))}"

    # ---- reachable queries ----------------------------------------------------------------
    def queries(self) -> list[str]:
        """``reachable`` queries: guards (data and closed clock atoms in every order),
        a phase with a clock atom, or data alone; they never fault."""
        r = self.r
        self.fault_rate = 0.0
        out: list[str] = []
        for k in range(r.randint(1, 3)):
            form = r.randint(0, 5)
            if form <= 2:
                body = self.guard(Scope())
            elif form <= 4:
                ph = self.vars[0]
                body = f"ph == {r.choice(ph.value.values)} and {_par(self.clock_atom(Scope()))}"
                if form == 4:
                    body += f" and {_par(self.clock_atom(Scope()))}"
            else:
                body = self.cond(Scope())
            out.append(f"reachable rg{k}: {body}")
        return out

    # ---- statements --------------------------------------------------------------------------
    def assign(self, scope: Scope) -> str:
        r = self.r
        cands = [v for v in self.vars if not any(self.missing(t, scope) for t in v.domain)]
        if not cands:
            return "skip"
        v = r.choice(cands)
        ref = self.read(v, scope, 1)
        ft = v.value
        if v.optional:
            if self.chance(0.4):
                return f"{ref} := none"
            if not self.missing(ft, scope):
                return f"{ref} := {self.value(ft, scope, 1)}"
            return f"{ref} := none"
        if ft.kind == "bool":
            value = r.choice(["true", "false", f"not {ref}", self.cond(scope, 1)])
            return f"{ref} := {value}"
        if ft.kind == "range":
            lo, hi = int(ft.values[0]), int(ft.values[-1])
            form = r.randint(0, 5)
            if form == 0 or (form == 1 and self.chance(1 - self.fault_rate * 3)):
                return f"if {ref} < {hi} {{ {ref} := {ref} + 1 }} else {{ {ref} := {lo} }}"
            if form == 1:
                return f"{ref} := {ref} + 1"  # may leave the range: a fault
            if form == 2:
                return f"{ref} := {hi + lo} - {ref}"
            return f"{ref} := {self.value(ft, scope, 1)}"
        return f"{ref} := {self.value(ft, scope, 1)}"

    def reset(self, scope: Scope) -> str:
        if not self.usable_clocks(scope):
            return "skip"
        refs = [self.clock_ref(scope) for _ in range(self.r.choice([1, 1, 1, 2]))]
        return "reset " + ", ".join(dict.fromkeys(refs))

    def assertion(self, scope: Scope) -> str:
        r = self.r
        holes = [n for n, _ in scope.names]
        holes += [v.name for v in self.vars if not v.domain]
        holes += [self.read(v, scope, 1) for v in self.readable(scope)
                  if v.domain and self.chance(0.3)]
        ints = [v.name for v in self.vars if not v.domain and v.value.kind == "range"
                and not v.optional]
        if ints:
            holes.append(f"{r.choice(ints)} + 1")
        chosen = r.sample(holes, min(len(holes), r.randint(0, 3)))
        words = ["at", "with", "and", "then", "but"]
        msg = f"a{r.randint(0, 99)}" + "".join(f" {r.choice(words)} {{{h}}}" for h in chosen)
        cond = self.cond(scope)
        if self.chance(0.6):  # most asserts should hold most of the time
            cond = f"{_par(cond)} or {_par(self.cond(scope, 1))} or {_par(self.atom(scope, 1))}"
        return f'assert {cond} : "{msg}"'

    def stmt(self, scope: Scope, depth: int = 0) -> str:
        if self.loops and depth < 1 and self.chance(0.15):
            return self.loop(scope, depth)
        form = self.r.randint(0, 11) if depth < 1 else self.r.randint(0, 7)
        if form <= 4:
            return self.assign(scope)
        if form <= 6:
            return self.reset(scope)
        if form == 7:
            return self.assertion(scope) if self.chance(0.5) else "skip"
        then = "; ".join(self.stmt(scope, depth + 1) for _ in range(self.r.randint(1, 2)))
        tail = ""
        if self.chance(0.6):
            tail = " else { " + "; ".join(self.stmt(scope, depth + 1)
                                          for _ in range(self.r.randint(1, 2))) + " }"
        return f"if {self.cond(scope)} {{ {then} }}{tail}"


    def loop(self, scope: Scope, depth: int) -> str:
        """``for k: T { ... }`` over a type that is not symmetric, its body using ``k``."""
        ft = self.r.choice([t for t in self.types if not t.symmetric] + [BOOL])
        k = self.binder()
        inner = scope.plus(k, ft)
        body = "; ".join(self.stmt(inner, depth + 1) for _ in range(self.r.randint(1, 3)))
        return f"for {k}: {ft.name} {{ {body} }}"


def _par(s: str) -> str:
    return s if s.startswith("(") and s.endswith(")") and _balanced(s[1:-1]) else f"({s})"


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _dec(x: Fraction) -> str:
    """A non-negative fraction with a finite decimal expansion, as written in a spec."""
    if x.denominator == 1:
        return str(x.numerator)
    for digits in range(1, 8):
        scaled = x * 10**digits
        if scaled.denominator == 1:
            whole, frac = divmod(scaled.numerator, 10**digits)
            return f"{whole}.{frac:0{digits}d}"
    raise ValueError(f"{x} has no short decimal expansion")


# ---- a whole model --------------------------------------------------------------------------

INDEX_TYPES = {
    "K": FT("K", "enum", ("ku", "kv")),
    "P": FT("P", "enum", ("p0", "p1"), symmetric=True),
    "R": FT("R", "range", ("0", "1")),
}
ORDERED = frozenset({"K"})
"""Index types declared ``ordered type`` (their values compare with ``<=``)."""
MAX_CLOCK_INSTANCES = 3
MAX_RESPONSE_INSTANCES = 2


def render_model(r: random.Random, extended: bool = False) -> str:
    """One random well-formed model as ``.kvr`` text.  ``extended`` adds the newer
    constructs: bounded loops among the statements, and ``reachable`` queries over
    data and (closed) clock atoms at the end; without it the draws, and so the text,
    are those of the models before these constructs existed."""
    lines = ["model gen"]
    names = r.sample(sorted(INDEX_TYPES), r.choice([1, 2, 2, 3]))
    types: list[FT] = []
    for n in sorted(names):
        ft = INDEX_TYPES[n]
        if n == "R" and r.random() < 0.3:
            ft = FT("R", "range", ("0", "1", "2"))
        types.append(ft)
        if ft.kind == "range":
            lines.append(f"type R = {ft.values[0]}..{ft.values[-1]}")
        else:
            sym = "symmetric " if ft.symmetric else "ordered " if ft.name in ORDERED else ""
            lines.append(f"{sym}type {ft.name} = {{{', '.join(ft.values)}}}")
    index_types = [*types, BOOL]
    # Parameters: open and closed ranges, integer and rational defaults.
    params: list[Param] = []
    for k in range(r.choice([0, 1, 1, 2, 2])):
        name = f"T{k}"
        if r.random() < 0.35:
            default = r.choice([Fraction(3, 2), Fraction(5, 2), Fraction(1, 2), Fraction(7, 4)])
        else:
            default = Fraction(r.randint(0, 3))
        lo_open = r.random() < 0.4 and default > 0
        hi_open = r.random() < 0.4
        lo = 0 if default >= 0 else -1
        hi = r.choice([4, 5, 10])
        rng = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
        if r.random() < 0.1:
            lines.append(f"param {name} = {_dec(default)}")  # no range
        else:
            lines.append(f"param {name} in {rng} = {_dec(default)}")
        params.append(Param(name, default))
    n_actors = r.randint(1, 2)
    lines.append("actor " + ", ".join(f"a{k}" for k in range(n_actors)))
    # Variables: a phase, then maps and options over the index types.
    gvars: list[Var] = []
    labels = tuple(f"s{x}" for x in range(r.randint(2, 3)))
    phase = FT("{" + ", ".join(labels) + "}", "enum", labels)
    gvars.append(Var("ph", (), phase))
    lines.append(f"var ph : {phase.name} = {r.choice(phase.values)}")
    n_vars = r.randint(2, 5)
    sym = [t for t in types if t.symmetric]
    for k in range(n_vars):
        dom: tuple[FT, ...] = ()
        form = r.random()
        if form < 0.55:
            dom = (r.choice([*types, BOOL]),)
        elif form < 0.65 and len(types) >= 2:
            dom = tuple(r.sample(types, 2))
        if sym and k == 0:
            value, optional = sym[0], True  # an owner-like option over a symmetric type
            dom = r.choice([(), (sym[0],)])
        else:
            value = r.choice([BOOL, BOOL, *types])
            optional = value != BOOL and r.random() < 0.5
        if value.symmetric:
            optional = True  # its initial value cannot be named: it starts as none
        v = Var(f"v{k}", dom, value, optional)
        gvars.append(v)
        dom_text = ""
        if len(dom) == 1:
            dom_text = f"{dom[0].name} -> "
        elif dom:
            dom_text = f"({', '.join(t.name for t in dom)}) -> "
        if optional:
            init = "none" if value.symmetric or r.random() < 0.7 else r.choice(value.values)
        else:
            init = r.choice(value.values)
        lines.append(f"var {v.name} : {dom_text}{value.name}{'?' if optional else ''} = {init}")
    # Clocks: scalar and indexed, at most MAX_CLOCK_INSTANCES instances.
    clocks: list[Clock] = []
    used = 0
    for k in range(r.choice([1, 2, 2, 3])):
        dom_ft: FT | None = None
        if r.random() < 0.5:
            cands = [t for t in index_types if len(t.values) == 2]
            dom_ft = r.choice(cands)
        size = len(dom_ft.values) if dom_ft is not None else 1
        if used + size > MAX_CLOCK_INSTANCES:
            continue
        used += size
        clocks.append(Clock(f"c{k}", dom_ft))
        lines.append(f"clock c{k}" + (f" : {dom_ft.name}" if dom_ft is not None else ""))
    if not clocks:
        clocks.append(Clock("c9", None))
        lines.append("clock c9")
    g = Gen(r, types, gvars, clocks, params)
    g.loops = extended
    # Events.
    n_events = r.randint(3, 5)
    sigs: list[EventSig] = []
    for k in range(n_events):
        n_params = r.choice([0, 1, 1, 1, 2])
        ps = tuple(r.choice(types) for _ in range(n_params))
        sigs.append(EventSig(f"a{r.randrange(n_actors)}", f"e{k}", ps))
    n_asserts = 0
    for k, sig in enumerate(sigs):
        pnames = ["i", "j"][: len(sig.params)]
        scope = Scope(list(zip(pnames, sig.params, strict=True)))
        formals = ", ".join(f"{n}: {t.name}" for n, t in scope.names)
        head = f"event {sig.actor}.{sig.name}({formals})"
        if k > 0 and r.random() < 0.3 and not any(
                g.missing(t, scope) for src in sigs[:k] for t in src.params):
            src = r.choice(sigs[:k])
            args = ", ".join(g.value(t, scope, 1) for t in src.params)
            head += f" receives {src.actor}.{src.name}({args})"
        committed = extended and r.random() < 0.15
        if committed:  # urgent and with priority: its guard may only test data
            head = f"committed {head}\n  when {g.cond(scope)}"
        elif r.random() < 0.9:
            head += f"\n  when {g.guard(scope)}"
        body = [g.stmt(scope) for _ in range(r.randint(1, 3))]
        if r.random() < 0.5:
            body.insert(r.randint(0, len(body)), g.assertion(scope))
            n_asserts += 1
        if r.random() < 0.5:
            phase_to = r.choice(phase.values)
            body.insert(0, f"ph := {phase_to}")
        sep = r.choice(["; ", "\n     "])
        lines.append(f"{head}\n  do " + sep.join(body))
    # Deadlines.
    for k in range(r.choice([0, 1, 1, 2, 2])):
        c = r.choice(clocks)
        while_ = ""
        if c.domain is not None and (r.random() < 0.6 or g.missing(c.domain, Scope())):
            scope = Scope([("d", c.domain)])
            atoms = [f"{c.name}[d] <= {g.bound(upper=True)}"]
            if r.random() < 0.25:
                atoms.append(f"{g.clock_ref(scope)} <= {g.bound(upper=True)}")
            if r.random() < 0.8:
                while_ = f" while {g.cond(scope)}"
            lines.append(f"deadline dl{k}(d: {c.domain.name}): {' and '.join(atoms)}{while_}")
            continue
        scope = Scope()
        atoms = [f"{g.clock_ref(scope, c=c)} <= {g.bound(upper=True)}"]
        if r.random() < 0.25:
            atoms.append(f"{g.clock_ref(scope)} <= {g.bound(upper=True)}")
        if r.random() < 0.85:
            while_ = f" while {g.cond(scope)}"
        named = f"dl{k}: " if r.random() < 0.6 else ""
        lines.append(f"deadline {named}{' and '.join(atoms)}{while_}")
    # Invariants and bounded responses, possibly over a (symmetric) binder.
    if r.random() < 0.5:
        ft = r.choice(types) if r.random() < 0.6 else None
        scope = Scope([("x", ft)]) if ft is not None else Scope()
        binders = f"(x: {ft.name})" if ft is not None else ""
        inv = g.cond(scope) if r.random() < 0.4 else f"not ({g.atom(scope, 1)} and {g.cond(scope)})"
        lines.append(f"invariant inv{binders}: {inv}")
    if r.random() < 0.5:
        ft = r.choice(types) if r.random() < 0.5 else None
        scope = Scope([("x", ft)]) if ft is not None else Scope()
        binders = f"(x: {ft.name})" if ft is not None else ""
        lines.append(f"property resp{binders}: {g.cond(scope)} leadsto {g.cond(scope)} "
                     f"within {g.bound()}")
    if extended:
        lines.extend(g.queries())
    return "\n".join(lines) + "\n"


def widened(text: str, size: int) -> str:
    """A model text with its symmetric type (``P``, two values) given ``size`` values: its
    values are never named, so only the declaration changes."""
    values = ", ".join(f"p{k}" for k in range(size))
    return text.replace("symmetric type P = {p0, p1}", f"symmetric type P = {{{values}}}")


def model_for_seed(seed: int, extended: bool = False) -> str:
    """The model of one seed (the same text on every machine and run); ``extended``:
    with bounded loops and ``reachable`` queries (see :func:`render_model`)."""
    return render_model(random.Random(seed), extended)


# ---- feature counting ----------------------------------------------------------------------

FEATURES = (
    "clock index: in", "clock index: quantifier", "clock index: =>", "clock index: state",
    "map index: in", "map index: quantifier", "map index: arithmetic", "map index: state",
    "forall", "exists", "=>", "if/else", "optional var", "none", "dereference",
    "symmetric type", "symmetric binder in property", "symmetric event parameter",
    "open param range", "closed param range", "rational default", "param in clock bound",
    "deadline: compound while", "deadline: indexed", "deadline: several clocks",
    "bounded response", "invariant", "assert", "formatted assert", "receives",
    "guard: data or clock", "guard: clock or data", "guard: data and clock",
    "guard: clock and data", "guard: data => clock", "guard: none or clock",
    "guard: several branches", "guard: quantifier over clocks",
    "reachable: data", "reachable: clock atom", "for loop", "committed event",
)


def _walk(e: ir.Expr) -> Iterator[ir.Expr]:
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, ir.Read):
            stack.extend(x.index)
        elif isinstance(x, (ir.Some, ir.InRange, ir.Unary)):
            stack.append(x.operand)
        elif isinstance(x, ir.Binary):
            stack.extend((x.left, x.right))
        elif isinstance(x, ir.Member):
            stack.append(x.value)
            stack.extend(x.options)
        elif isinstance(x, ir.Quant):
            stack.append(x.body)
        elif isinstance(x, ir.ClockTest):
            stack.extend(x.index)


def _stmts(ss: Sequence[ir.Stmt]) -> Iterator[ir.Stmt]:
    for s in ss:
        yield s
        if isinstance(s, ir.IfStmt):
            yield from _stmts(s.then)
            yield from _stmts(s.orelse)


def _index_kinds(index: Sequence[ir.Expr]) -> set[str]:
    out: set[str] = set()
    for i in index:
        for x in _walk(i):
            if isinstance(x, ir.Member):
                out.add("in")
            elif isinstance(x, ir.Quant):
                out.add("quantifier")
            elif isinstance(x, ir.Binary) and x.op == "=>":
                out.add("=>")
            elif isinstance(x, ir.Binary) and x.op in "+-*":
                out.add("arithmetic")
            elif isinstance(x, ir.Read):
                out.add("state")
    return out


def _guard_forms(clocks: Sequence[str]) -> dict[str, re.Pattern[str]]:
    """Patterns of the orders of data and clock parts in a guard's text."""
    c = "(?:" + "|".join(re.escape(n) for n in clocks) + r")\b"
    return {
        "guard: data or clock": re.compile(rf"\) or \(*{c}"),
        "guard: clock or data": re.compile(rf"{c}[^()]*\) or \((?!\(?{c})"),
        "guard: data and clock": re.compile(rf"\) and \(*{c}"),
        "guard: clock and data": re.compile(rf"{c}[^()]*\) and \((?!\(?{c})"),
        "guard: data => clock": re.compile(rf"=> \(*{c}"),
        "guard: none or clock": re.compile(rf"== none or \(.*{c}"),
        "guard: quantifier over clocks": re.compile(rf"(forall|exists) \w+: \w+ \. [^)]*{c}"),
    }


def features(text: str) -> Counter[str]:
    """How often each of :data:`FEATURES` occurs in one model (text and elaborated IR)."""
    spec = load_text(text, "<generated>")
    got: Counter[str] = Counter()
    exprs: list[ir.Expr] = []
    stmts = [s for ev in spec.events for s in _stmts(ev.body)]
    for ev in spec.events:
        for br in ev.branches:
            exprs.append(br.data)
            exprs.extend(br.clocks)
        if len(ev.branches) > 1:
            got["guard: several branches"] += 1
        if ev.receives is not None:
            got["receives"] += 1
        if any(ft.symmetric for _, ft in ev.params):
            got["symmetric event parameter"] += 1
    for dl in spec.deadlines:
        exprs.append(dl.cond)
        exprs.extend(dl.atoms)
        if dl.params:
            got["deadline: indexed"] += 1
        if len(dl.atoms) > 1:
            got["deadline: several clocks"] += 1
        if any(isinstance(x, (ir.Binary, ir.Unary)) and x.op in ("and", "or", "not", "=>")
               for x in _walk(dl.cond)):
            got["deadline: compound while"] += 1
    for inv in spec.invariants:
        exprs.append(inv.expr)
        got["invariant"] += 1
    for resp in spec.responses:
        exprs.extend((resp.trigger, resp.response))
        got["bounded response"] += 1
    for decl in (*spec.invariants, *spec.responses):
        if any(ft.symmetric for _, ft in decl.params):
            got["symmetric binder in property"] += 1
    for s in stmts:
        if isinstance(s, ir.Assign):
            exprs.append(s.value)
            exprs.extend(s.index)
            for k in _index_kinds(s.index):
                got[f"map index: {k}"] += 1
        elif isinstance(s, ir.ResetClock):
            exprs.extend(s.index)
            for k in _index_kinds(s.index):
                if k != "arithmetic":
                    got[f"clock index: {k}"] += 1
        elif isinstance(s, ir.AssertStmt):
            exprs.append(s.cond)
            got["assert"] += 1
            if s.holes:
                got["formatted assert"] += 1
        elif isinstance(s, ir.IfStmt):
            exprs.append(s.cond)
            if s.orelse:
                got["if/else"] += 1
    for e in exprs:
        for x in _walk(e):
            if isinstance(x, ir.ClockTest):
                for k in _index_kinds(x.index):
                    if k != "arithmetic":
                        got[f"clock index: {k}"] += 1
            elif isinstance(x, ir.Read):
                for k in _index_kinds(x.index):
                    got[f"map index: {k}"] += 1
            elif isinstance(x, ir.Quant):
                got[x.kind] += 1
            elif isinstance(x, ir.Binary) and x.op == "=>":
                got["=>"] += 1
            elif isinstance(x, ir.Some):
                got["dereference"] += 1
    for query in spec.queries:
        got["reachable: clock atom" if query.branches else "reachable: data"] += 1
        exprs.extend(br.data for br in query.parts)
        exprs.extend(ct for br in query.parts for ct in br.clocks)
    got["optional var"] += sum(v.value.optional for v in spec.vars)
    got["symmetric type"] += sum(t.symmetric for t in spec.types)
    for p in spec.params:
        got["open param range" if (p.lo_open or p.hi_open) else "closed param range"] += 1
        if Fraction(p.default).denominator != 1:
            got["rational default"] += 1
    for e in exprs:
        for x in _walk(e):
            if isinstance(x, ir.ClockTest) and x.bound.terms:
                got["param in clock bound"] += 1
    forms = _guard_forms([c.name for c in spec.clocks]) if spec.clocks else {}
    got["for loop"] += len(re.findall(r"\bfor \w+: \w+ \{", text))
    got["committed event"] += len(re.findall(r"^committed event ", text, re.M))
    for line in text.splitlines():
        words = set(re.findall(r"[A-Za-z_]\w*", line))
        if "none" in words:
            got["none"] += 1
        if line.lstrip().startswith("when"):
            for name, pat in forms.items():
                if pat.search(line):
                    got[name] += 1
    return +got  # without the features counted zero times

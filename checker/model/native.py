"""The compiled successor function: a model-specific C extension for the discrete part
of a :class:`~checker.model.compiled.SpecModel`.

What it is for.  Without symmetry reduction the explorer asks the model, for
each discrete state, for its edges (guards without clocks, bodies, channel
synchronisation, the bounded-response observers), its deadlines and the
invariants it breaks.  In the generated Python each call costs tens of
microseconds, almost all of it interpreter overhead: calling one bound function
per guard branch, copying the state into a list and back into a tuple,
building an ``Edge`` through the frozen dataclass's ``__init__`` (five
``object.__setattr__`` calls), sorting resets.  On the flagship 3/2/2 without
symmetry :meth:`SpecModel.edges` takes about 20 microseconds of CPU per state,
of which building the five ``Edge`` objects alone is about 5.  So the unit that
pays is the whole call, not the guard: as SPIN
does, the spec is translated once into C (one function per guard branch, body,
clock index, deadline condition, invariant and observer, over the state as an
array of 64-bit ints), and one C call per state returns the finished list of
``Edge`` objects (built as ``object.__new__`` plus five plain attribute stores),
the deadline atoms or the broken invariants' ``Violation`` objects.

Exactly the same semantics, by construction.  The C code never builds a
message and never decides a fault: on every run-time model error (``none``
dereferenced, a value out of its range, a division by zero, an instance that
would receive a broadcast twice), every failing ``assert``, every arithmetic
result outside 64 bits, every map index it cannot prove inside its map, a state
that is not a tuple of 64-bit ints, and once a call's time deadline has passed,
it answers None, and the model computes that state's answer with the generated
Python (:mod:`checker.model.compiled`), which raises the same error with the
same message, builds the same failure and target, or ends the run at the time
limit.  Where it answers, it evaluates what the generated Python evaluates in
the same order with the same short-circuits, so the edges (order, guards,
resets, targets) are the generated Python's; the differential tests check both,
and the interpreter (:mod:`checker.model.interp`), on every random model and
every spec.  The C text holds only numbers and generated identifiers: no name,
message or other text of the spec ever reaches it.

When it is used (``KVRACE_NATIVE``).  ``0`` never; ``1`` at once, compiling if
needed (the differential tests and the benchmarks); unset or ``auto``: once
the model has answered :data:`LOAD_AFTER` calls in Python, a build already in
the cache is loaded, and after :data:`COMPILE_AFTER` calls one is compiled, so
a small exploration pays nothing and the second run of a spec pays no
compilation.  Without a C compiler, Python headers, or a safe cache directory,
or for a construct the generator does not translate (:class:`Unsupported`),
the model stays on the generated Python; :attr:`SpecModel.successors` says
which path ran and why (``kvrace check --json``, ``stats.successors``).

The cache.  Builds live in the private per-user cache directory of the parser
(:mod:`checker.model.cache`: mode 0700, this user's, not a link, a parent no
one else can swap), named by a hash of the generated C, this generator's
version, the Python version and the compiler command.  A build is compiled in a
fresh private temporary directory with the compiler and flags Python's own
extensions use (``sysconfig``: ``LDSHARED``, ``CFLAGS``, ``CCSHARED``, ``-O2``,
as the DBM core ``_cdbm`` is built), then copied into the cache under a
temporary name and renamed into place (atomic), and it is loaded only when it
is a regular file of this user's: a planted link or another owner's file is
refused with a warning, and the model stays on Python.  The cache keeps the
:data:`MAX_BUILDS` most recently used builds.
"""

from __future__ import annotations

# shlex, shutil, subprocess, tempfile and importlib.resources are imported where a build
# is made: a run that compiles nothing (most small ones) starts without them.
import contextlib
import enum
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from checker.model import ir
from checker.model.cache import cache_file, prune
from checker.model.interface import GE, GT, LE, LT, ClockAtom, Edge, Violation

if TYPE_CHECKING:
    from checker.model.compiled import SpecModel

GENERATOR_VERSION = 1
"""Part of every build's name: raise it when what the Python side hands a Program
changes meaning (a change of the C text changes the name by itself)."""

ENV_VAR = "KVRACE_NATIVE"
"""``0``: never use the compiled successor function; ``1``: at once; ``auto`` (the
default): see the module docstring."""

LOAD_AFTER = 1_000
"""In ``auto`` mode, calls answered in Python before a cached build is looked for."""

COMPILE_AFTER = 5_000
"""In ``auto`` mode, calls answered in Python before a build is compiled (about a
tenth of a second of Python on the flagship; a compilation takes about 0.35 s of
CPU, once per spec)."""

MAX_BUILDS = 256
"""Builds kept in the cache (about 90 KB each); beyond it the least recently used
are removed after a compilation."""

MAX_SOURCE_CHARS = 8_000_000
"""Generated C beyond this size is not compiled (the model stays on Python)."""

MAX_BINDINGS = 1_024
"""Bindings one broadcast receiver may have (they are kept on the C stack)."""

MAX_CONST = 1 << 62
"""Constants and type bounds of the C code lie within this in magnitude."""

OPS = (LT, LE, GT, GE)
"""The relations by the op code the C code uses."""


class Unsupported(Exception):
    """A construct the generator does not translate: the model stays on Python."""


class NativeProgram(Protocol):
    """The compiled successor function of one model (a ``Program`` of the extension)."""

    def edges(self, s: tuple[int, ...], deadline: float | None) -> list[Edge] | None:
        """The edges out of ``s``, or None: ask the generated Python."""
        ...

    def deadlines(self, s: tuple[int, ...]) -> list[ClockAtom] | None:
        """The deadlines active in ``s``, or None."""
        ...

    def violations(self, s: tuple[int, ...]) -> list[Violation] | None:
        """The invariants ``s`` breaks, or None."""
        ...


# ---- C generation ---------------------------------------------------------------------------


def _lit(v: int) -> str:
    """``v`` as a C literal (Unsupported beyond :data:`MAX_CONST`)."""
    if abs(v) > MAX_CONST:
        raise Unsupported(f"the constant {v} does not fit the compiled successor function")
    return f"{v}LL" if v >= 0 else f"({v}LL)"


class _Fn:
    """The body of one C function being generated: its lines and temporaries."""

    def __init__(self, reads: str) -> None:
        self.reads = reads
        """The array reads go to: ``s`` (a state) or ``n`` (a body's copy)."""
        self.lines: list[str] = []
        self.temps = 0
        self.falls = False

    def temp(self) -> str:
        """A new temporary."""
        self.temps += 1
        return f"t{self.temps}"

    def fall(self, ind: str, cond: str) -> None:
        """Fall back to Python when ``cond`` holds."""
        self.falls = True
        self.lines.append(f"{ind}if ({cond}) goto fb;")


class _CGen:
    """C code for IR expressions and statements, three-address style: an expression's
    statements go to the current function, its value is a temporary, a literal or a
    local slot.  Evaluation order and short-circuits are the generated Python's."""

    def __init__(self, model: SpecModel) -> None:
        self.model = model
        self.ncells = model.state_size
        self.blocks = 0

    # ---- expressions ----------------------------------------------------------------------
    def expr(self, e: ir.Expr, f: _Fn, ind: str) -> str:
        kind = _C_EXPR.get(e.__class__)
        if kind is None:
            raise Unsupported(f"no C translation of {type(e).__name__}")
        return kind(self, e, f, ind)

    def const_expr(self, e: ir.Const, f: _Fn, ind: str) -> str:
        """A constant."""
        return _lit(e.value)

    def local_expr(self, e: ir.Local, f: _Fn, ind: str) -> str:
        """A bound name."""
        return f"a{e.slot}"

    def cell(self, base: int, domain: tuple[ir.FiniteType, ...], index: Sequence[ir.Expr],
             f: _Fn, ind: str, bound: int | None) -> str:
        """The cell (or clock) at ``index`` of a family starting at ``base``, each index
        evaluated in order; an index outside its type falls back (so does a constant
        one, checked against ``bound``: the number of cells, None for clocks)."""
        strides: list[int] = []
        stride = 1
        for ft in reversed(domain):
            strides.append(stride)
            stride *= ft.size
        strides.reverse()
        static = base
        parts: list[str] = []
        wild = False
        for ft, e, st in zip(domain, index, strides, strict=True):
            _lit(ft.lo)
            _lit(ft.hi)
            if isinstance(e, ir.Const):
                static += (e.value - ft.lo) * st
                wild = wild or not ft.lo <= e.value <= ft.hi
                continue
            v = self.expr(e, f, ind)
            f.fall(ind, f"{v} < {_lit(ft.lo)} || {v} > {_lit(ft.hi)}")
            parts.append(f"({v} - {_lit(ft.lo)}) * {_lit(st)}")
        code = " + ".join([*parts, _lit(static)])
        if wild and bound is not None:
            t = f.temp()
            f.lines.append(f"{ind}{t} = {code};")
            f.fall(ind, f"{t} < 0 || {t} >= {bound}")
            return t
        return code

    def read_expr(self, e: ir.Read, f: _Fn, ind: str) -> str:
        """A variable's cell."""
        idx = self.cell(e.var.offset, e.var.domain, e.index, f, ind, self.ncells)
        t = f.temp()
        f.lines.append(f"{ind}{t} = {f.reads}[{idx}];")
        return t

    def some_expr(self, e: ir.Some, f: _Fn, ind: str) -> str:
        """An optional value: ``none`` falls back (the fault is Python's to raise)."""
        v = self.expr(e.operand, f, ind)
        f.fall(ind, f"{v} == {_lit(ir.NONE)}")
        return v

    def in_range_expr(self, e: ir.InRange, f: _Fn, ind: str) -> str:
        """A value checked against its range."""
        v = self.expr(e.operand, f, ind)
        f.fall(ind, f"{v} < {_lit(e.lo)} || {v} > {_lit(e.hi)}")
        return v

    def unary_expr(self, e: ir.Unary, f: _Fn, ind: str) -> str:
        """``not e`` or ``-e``."""
        v = self.expr(e.operand, f, ind)
        t = f.temp()
        if e.op == ir.UnaryOp.NOT:
            f.lines.append(f"{ind}{t} = !{v};")
        else:
            f.fall(ind, f"{v} == LLONG_MIN")
            f.lines.append(f"{ind}{t} = -{v};")
        return t

    def binary_expr(self, e: ir.Binary, f: _Fn, ind: str) -> str:
        """A binary operation (``and``/``or``/``=>`` short-circuit and yield the operand
        that decides, as Python's do)."""
        a = self.expr(e.left, f, ind)
        t = f.temp()
        op = e.op
        if op.logical:
            if op == ir.BinaryOp.AND:
                f.lines.append(f"{ind}{t} = {a};")
                f.lines.append(f"{ind}if ({t}) {{")
            elif op == ir.BinaryOp.OR:
                f.lines.append(f"{ind}{t} = {a};")
                f.lines.append(f"{ind}if (!{t}) {{")
            else:
                f.lines.append(f"{ind}{t} = !{a};")
                f.lines.append(f"{ind}if (!{t}) {{")
            b = self.expr(e.right, f, ind + "    ")
            f.lines.append(f"{ind}    {t} = {b};")
            f.lines.append(f"{ind}}}")
            return t
        b = self.expr(e.right, f, ind)
        if op.comparison:
            f.lines.append(f"{ind}{t} = {a} {op.value} {b};")
        elif op in (ir.BinaryOp.DIV, ir.BinaryOp.MOD):
            f.fall(ind, f"{b} == 0 || ({a} == LLONG_MIN && {b} == -1)")
            f.lines.append(f"{ind}{t} = {a} {'/' if op == ir.BinaryOp.DIV else '%'} {b};")
        else:
            fn = {ir.BinaryOp.ADD: "ADD_OV", ir.BinaryOp.SUB: "SUB_OV",
                  ir.BinaryOp.MUL: "MUL_OV"}[op]
            f.fall(ind, f"{fn}({a}, {b}, &{t})")
        return t

    def member_expr(self, e: ir.Member, f: _Fn, ind: str) -> str:
        """``e in {a, b}``: the value, then every option, then the comparison."""
        v = self.expr(e.value, f, ind)
        opts = [self.expr(o, f, ind) for o in e.options]
        t = f.temp()
        test = " || ".join(f"{v} == {o}" for o in opts) or "0"
        f.lines.append(f"{ind}{t} = {test};")
        return t

    def quant_expr(self, e: ir.Quant, f: _Fn, ind: str) -> str:
        """``forall``/``exists``: the type's values in order, stopping at the first that
        decides; the bound slot is the loop's own (as in Python's generator)."""
        forall = e.kind == ir.Quantifier.FORALL
        t = f.temp()
        s = f"a{e.slot}"
        f.lines.append(f"{ind}{t} = {1 if forall else 0};")
        f.lines.append(f"{ind}{{")
        f.lines.append(f"{ind}    V {s};")
        f.lines.append(f"{ind}    for ({s} = {_lit(e.type.lo)}; {s} <= {_lit(e.type.hi)};"
                       f" {s}++) {{")
        b = self.expr(e.body, f, ind + "        ")
        test = f"!{b}" if forall else b
        f.lines.append(f"{ind}        if ({test}) {{ {t} = {0 if forall else 1}; break; }}")
        f.lines.append(f"{ind}    }}")
        f.lines.append(f"{ind}}}")
        return t

    def index_check_expr(self, e: ir.IndexCheck, f: _Fn, ind: str) -> str:
        """True once every index is evaluated."""
        for i in e.index:
            self.expr(i, f, ind)
        return "1"

    # ---- statements -----------------------------------------------------------------------
    def stmts(self, ss: Sequence[ir.Stmt], f: _Fn, ind: str) -> None:
        """A block of a body, in order, on the copy ``n`` (an ``assert`` that fails falls
        back: its message and target are the generated Python's)."""
        for s in ss:
            if isinstance(s, ir.Assign):
                v = self.expr(s.value, f, ind)
                idx = self.cell(s.var.offset, s.var.domain, s.index, f, ind, self.ncells)
                f.lines.append(f"{ind}n[{idx}] = {v};")
            elif isinstance(s, ir.ResetClock):
                idx = self.cell(s.clock.offset, s.clock.domain, s.index, f, ind, None)
                f.fall(ind, "R->n >= MAX_RESETS")
                f.lines.append(f"{ind}R->r[R->n++] = {idx};")
            elif isinstance(s, ir.AssertStmt):
                c = self.expr(s.cond, f, ind)
                f.fall(ind, f"!{c}")
            elif isinstance(s, ir.IfStmt):
                c = self.expr(s.cond, f, ind)
                f.lines.append(f"{ind}if ({c}) {{")
                self.stmts(s.then, f, ind + "    ")
                if s.orelse:
                    f.lines.append(f"{ind}}} else {{")
                    self.stmts(s.orelse, f, ind + "    ")
                f.lines.append(f"{ind}}}")
            elif isinstance(s, ir.Broadcast):
                self.broadcast(s, f, ind)
            else:
                raise Unsupported(f"no C translation of {type(s).__name__}")

    def broadcast(self, s: ir.Broadcast, f: _Fn, ind: str) -> None:
        """Receivers' bindings on the state before, the at-most-once check per process
        instance, the sender, then each binding's body in order."""
        self.blocks += 1
        k = self.blocks
        for i, rc in enumerate(s.receivers):
            size = 1
            for _, ft in rc.slots:
                size *= ft.size
                _lit(ft.lo)
                _lit(ft.hi)
            if size > MAX_BINDINGS:
                raise Unsupported(f"a broadcast receiver with more than {MAX_BINDINGS}"
                                  " bindings")
            width = max(1, len(rc.slots))
            f.lines.append(f"{ind}V b{k}_{i}[{size * width}];")
            f.lines.append(f"{ind}int c{k}_{i} = 0;")
            f.lines.append(f"{ind}{{")
            inner = ind + "    "
            for sl, _ in rc.slots:
                f.lines.append(f"{inner}V a{sl};")
            for sl, ft in rc.slots:
                f.lines.append(f"{inner}for (a{sl} = {_lit(ft.lo)}; a{sl} <= {_lit(ft.hi)};"
                               f" a{sl}++) {{")
                inner += "    "
            g = self.expr(rc.guard, f, inner)
            f.lines.append(f"{inner}if ({g}) {{")
            for j, (sl, _) in enumerate(rc.slots):
                f.lines.append(f"{inner}    b{k}_{i}[c{k}_{i} * {width} + {j}] = a{sl};")
            f.lines.append(f"{inner}    c{k}_{i}++;")
            f.lines.append(f"{inner}}}")
            for _ in rc.slots:
                inner = inner[:-4]
                f.lines.append(f"{inner}}}")
            f.lines.append(f"{ind}}}")
        self.at_most_once(s, k, f, ind)
        self.stmts(s.sender, f, ind)
        for i, rc in enumerate(s.receivers):
            width = max(1, len(rc.slots))
            f.lines.append(f"{ind}for (int j{k} = 0; j{k} < c{k}_{i}; j{k}++) {{")
            for j, (sl, _) in enumerate(rc.slots):
                f.lines.append(f"{ind}    a{sl} = b{k}_{i}[j{k} * {width} + {j}];")
            self.stmts(rc.body, f, ind + "    ")
            f.lines.append(f"{ind}}}")

    def at_most_once(self, s: ir.Broadcast, k: int, f: _Fn, ind: str) -> None:
        """Fall back when an instance of a process would receive twice."""
        by_process: dict[str, list[tuple[int, int | None]]] = {}
        for i, rc in enumerate(s.receivers):
            if rc.instance is None:
                continue
            pos = None
            if rc.instance[1] is not None:
                pos = [sl for sl, _ in rc.slots].index(rc.instance[1])
            by_process.setdefault(rc.instance[0], []).append((i, pos))
        for members in by_process.values():
            total = " + ".join(f"c{k}_{i}" for i, _ in members)
            f.lines.append(f"{ind}{{")
            f.lines.append(f"{ind}    V w[{total} + 1];")
            f.lines.append(f"{ind}    int nw = 0;")
            for i, pos in members:
                width = max(1, len(s.receivers[i].slots))
                item = "0" if pos is None else f"b{k}_{i}[q * {width} + {pos}]"
                f.lines.append(f"{ind}    for (int q = 0; q < c{k}_{i}; q++) w[nw++] = {item};")
            f.lines.append(f"{ind}    for (int x = 0; x < nw; x++)")
            f.lines.append(f"{ind}        for (int y = x + 1; y < nw; y++)")
            f.lines.append(f"{ind}            if (w[x] == w[y]) goto fb;")
            f.lines.append(f"{ind}}}")
            f.falls = True


_C_EXPR: dict[type, Callable[[_CGen, Any, _Fn, str], str]] = {
    ir.Const: _CGen.const_expr,
    ir.Local: _CGen.local_expr,
    ir.Read: _CGen.read_expr,
    ir.Some: _CGen.some_expr,
    ir.InRange: _CGen.in_range_expr,
    ir.Unary: _CGen.unary_expr,
    ir.Binary: _CGen.binary_expr,
    ir.Member: _CGen.member_expr,
    ir.Quant: _CGen.quant_expr,
    ir.IndexCheck: _CGen.index_check_expr,
}
"""The C translation of each kind of IR expression (ClockTest has none: guards lose
their clock tests before code generation)."""


def _function(name: str, sig: str, nslots: int, f: _Fn, result: str) -> list[str]:
    """A whole C function: slots from ``A``, temporaries, the lines, ``return result``."""
    out = [f"static int {name}({sig}) {{"]
    if nslots:
        out.append("    V " + ", ".join(f"a{i} = A[{i}]" for i in range(nslots)) + ";")
        out.extend(f"    (void)a{i};" for i in range(nslots))
    else:
        out.append("    (void)A;")
    if f.temps:
        out.append("    V " + ", ".join(f"t{i + 1} = 0" for i in range(f.temps)) + ";")
    out.extend(f.lines)
    out.append(f"    return {result};")
    if f.falls:
        out.append("fb:")
        out.append("    return -1;")
    out.append("}")
    return out


_COND_SIG = "const V *s, const V *A"
_CLOCK_SIG = "const V *s, const V *A, V *out"
_BODY_SIG = "V *n, const V *A, Resets *R"


@dataclass
class Generated:
    """One model's part of a build's C code (its identifiers prefixed ``m{index}_``) and
    the Python objects its Program is made with."""

    index: int
    source: str
    branch_atoms: tuple[tuple[ClockAtom, ...] | None, ...]
    dl_atoms: tuple[tuple[ClockAtom, ...] | None, ...]
    violations: tuple[Violation, ...]


class _Tables:
    """A model's functions and tables as C text, built up by :func:`generate`."""

    def __init__(self, model: SpecModel, prefix: str) -> None:
        self.model = model
        self.p = prefix
        self.gen = _CGen(model)
        self.code: list[str] = []
        self.args: list[int] = []
        self.max_atoms = 0

    def add_args(self, args: tuple[int, ...], nslots: int) -> int:
        """An instance's arguments, padded with zeros to its slots as the generated Python
        pads them; their offset in the ARGS table."""
        at = len(self.args)
        for v in (*args, *(0,) * (nslots - len(args))):
            _lit(v)
            self.args.append(v)
        return at

    def cond(self, name: str, e: ir.Expr, nslots: int) -> str:
        """A condition over a state (a guard branch's data, a deadline's ``while``, an
        invariant, an observer's trigger or response)."""
        name = self.p + name
        f = _Fn("s")
        v = self.gen.expr(e, f, "    ")
        self.code.extend(_function(name, _COND_SIG, nslots, f, f"{v} ? 1 : 0"))
        return name

    def clocks(self, name: str, tests: Sequence[ir.ClockTest], nslots: int
               ) -> tuple[str, str, str]:
        """The clock-index function of some atoms, and their op and bound tables."""
        if not tests:
            return "NULL", "NULL", "NULL"
        name = self.p + name
        self.max_atoms = max(self.max_atoms, len(tests))
        f = _Fn("s")
        for k, ct in enumerate(tests):
            idx = self.gen.cell(ct.clock.offset, ct.clock.domain, ct.index, f, "    ", None)
            f.lines.append(f"    out[{k}] = {idx};")
        self.code.extend(_function(name, _CLOCK_SIG, nslots, f, "0"))
        bounds = self.model._bounds
        try:
            ids = [bounds[ct.bound] for ct in tests]
        except KeyError:
            raise Unsupported("a clock bound the model did not number") from None
        ops = ", ".join(str(OPS.index(ct.op)) for ct in tests)
        self.code.append(f"static const int {name}_op[] = {{{ops}}};")
        self.code.append(f"static const int {name}_bd[] = {{{', '.join(map(str, ids))}}};")
        return name, f"{name}_op", f"{name}_bd"

    def body(self, name: str, ev: ir.Event) -> str:
        """An event's body."""
        name = self.p + name
        f = _Fn("n")
        self.gen.stmts(ev.body, f, "    ")
        self.code.extend(_function(name, _BODY_SIG, ev.nslots, f, "0"))
        return name

    def array(self, ctype: str, name: str, rows: list[str]) -> str:
        """A static table (its name, or NULL when it is empty)."""
        if not rows:
            return "NULL"
        self.code.append(f"static const {ctype} {self.p}{name}[] = {{\n    "
                         + ",\n    ".join(rows) + "\n};")
        return self.p + name


def _events(t: _Tables) -> tuple[list[str], int]:
    """The events' functions and tables: the Event array's entries and the largest
    number of branches."""
    spec = t.model.spec
    entries: list[str] = []
    max_branches = 1
    for ei, ev in enumerate(spec.events):
        rows = []
        for bi, br in enumerate(ev.branches):
            g = t.cond(f"g{ei}_{bi}", br.data, ev.nslots)
            k, ops, bds = t.clocks(f"k{ei}_{bi}", br.clocks, ev.nslots)
            rows.append(f"{{{g}, {k}, {len(br.clocks)}, {ops}, {bds}}}")
        max_branches = max(max_branches, len(rows))
        table = t.array("Branch", f"B{ei}", rows)
        body = t.body(f"e{ei}", ev)
        entries.append(f"{{{len(rows)}, {table}, {body}}}")
    return entries, max_branches


def _instances(t: _Tables) -> tuple[list[str], tuple[tuple[ClockAtom, ...] | None, ...]]:
    """The event instances, in the model's order, and each branch's fixed atoms."""
    spec = t.model.spec
    rows: list[str] = []
    branch_atoms: list[tuple[ClockAtom, ...] | None] = []
    for inst in t.model._instances:
        ev = spec.events[inst.event]
        if len(inst.branches) != len(ev.branches):  # pragma: no cover
            raise Unsupported("an event instance has an unexpected number of branches")
        rows.append(f"{{{inst.event}, {t.add_args(inst.args, ev.nslots)}, {len(branch_atoms)}}}")
        branch_atoms.extend(atoms if isinstance(atoms, tuple) else None
                            for _, atoms in inst.branches)
    return rows, tuple(branch_atoms)


def generate(model: SpecModel, index: int = 0) -> Generated:
    """The C code of ``model``'s successor function, as model number ``index`` of its
    build (raises :class:`Unsupported`)."""
    t = _Tables(model, f"m{index}_")
    events, max_branches = _events(t)
    insts, branch_atoms = _instances(t)
    dls, dl_atoms = _deadlines(t)
    invs, violations = _invariants(t)
    obs = _observers(t)
    # Never an empty table: instances without arguments still point into it.
    args = t.array("V", "ARGS", [f"{v}LL" for v in t.args or [0]])
    ev_t, inst_t, dl_t, inv_t, obs_t = (t.array(c, n, rows) for c, n, rows in (
        ("Event", "EVENTS", events), ("Instance", "INSTANCES", insts),
        ("Deadline", "DEADLINES", dls), ("Invariant", "INVARIANTS", invs),
        ("Observer", "OBSERVERS", obs)))
    t.code.append(
        f"static const Model {t.p}MODEL = {{{model.state_size}, {max_branches},"
        f" {max(1, t.max_atoms)}, {len(branch_atoms)}, {len(insts)}, {inst_t}, {ev_t},"
        f" {args}, {len(obs)}, {obs_t}, {len(dls)}, {dl_t}, {len(invs)}, {inv_t}}};")
    source = "\n".join(t.code) + "\n"
    if len(source) > MAX_SOURCE_CHARS:
        raise Unsupported("the model's C code would be too large")
    return Generated(index, source, branch_atoms, dl_atoms, violations)


def _deadlines(t: _Tables) -> tuple[list[str], tuple[tuple[ClockAtom, ...] | None, ...]]:
    """The deadline instances, in the model's order, and each one's fixed atoms."""
    spec, model = t.model.spec, t.model
    rows: list[str] = []
    atoms: list[tuple[ClockAtom, ...] | None] = []
    k = 0
    for di, dl in enumerate(spec.deadlines):
        cond = t.cond(f"d{di}", dl.cond, dl.nslots)
        fn, ops, bds = t.clocks(f"dk{di}", dl.atoms, dl.nslots)
        for idx in ir.domain_points(tuple(ft for _, ft in dl.params)):
            _, fixed_atoms, fixed = model._deadlines[k]
            atoms.append(fixed_atoms if fixed else None)
            at = t.add_args(idx, dl.nslots)
            rows.append(f"{{{cond}, {fn}, {len(dl.atoms)}, {ops}, {bds}, {at}}}")
            k += 1
    if k != len(model._deadlines):  # pragma: no cover
        raise Unsupported("the deadline instances do not match the model's")
    return rows, tuple(atoms)


def _invariants(t: _Tables) -> tuple[list[str], tuple[Violation, ...]]:
    """The invariant instances, in the model's order, and each one's violation."""
    spec, model = t.model.spec, t.model
    rows: list[str] = []
    for ii, inv in enumerate(spec.invariants):
        fn = t.cond(f"v{ii}", inv.expr, inv.nslots)
        for idx in ir.domain_points(tuple(ft for _, ft in inv.params)):
            rows.append(f"{{{fn}, {t.add_args(idx, inv.nslots)}}}")
    if len(rows) != len(model._invariants):  # pragma: no cover
        raise Unsupported("the invariant instances do not match the model's")
    return rows, tuple(Violation(label, message) for _, label, message in model._invariants)


def _observers(t: _Tables) -> list[str]:
    """The observers of the bounded responses, in the model's order."""
    spec, model = t.model.spec, t.model
    rows: list[str] = []
    k = 0
    for ri, resp in enumerate(spec.responses):
        trig = t.cond(f"r{ri}", resp.trigger, resp.nslots)
        done = t.cond(f"q{ri}", resp.response, resp.nslots)
        for idx in ir.domain_points(tuple(ft for _, ft in resp.params)):
            cell, clock = model._obs[k][0], model._obs[k][1]
            rows.append(f"{{{cell}, {clock}, {trig}, {done}, {t.add_args(idx, resp.nslots)}}}")
            k += 1
    if k != len(model._obs):  # pragma: no cover
        raise Unsupported("the observers do not match the model's")
    return rows


@functools.lru_cache(maxsize=1)
def _runtime() -> str:
    """The C runtime every build starts with (``native_rt.c``, package data)."""
    from importlib import resources

    return resources.files("checker.model").joinpath("native_rt.c").read_text("utf-8")


def assemble(parts: Sequence[Generated]) -> str:
    """The C code of a build holding these models (without its module's name)."""
    models = ", ".join(f"&m{g.index}_MODEL" for g in parts)
    return (_runtime() + "".join(g.source for g in parts)
            + f"static const Model *const THE_MODELS[] = {{{models}}};\n")


def module_tail(name: str, count: int) -> str:
    """The module definition and init function of a build called ``name``."""
    return (f'static PyModuleDef MODULE = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, NULL,'
            " NULL, NULL, NULL, NULL};\n"
            f"PyMODINIT_FUNC PyInit_{name}(void) {{"
            f" return init_module(&MODULE, THE_MODELS, {count}); }}\n")


# ---- building, caching and loading ------------------------------------------------------------


class BuildError(Exception):
    """No build could be made or loaded (the reason is the message)."""


def compiler_command() -> list[str] | None:
    """The command that compiles and links one C file into an extension of this Python
    (the source and ``-o OUT`` follow), or None without a compiler or Python headers.

    The flags are those of Python's own extensions, as setuptools uses them for the
    DBM core (``LDSHARED``, ``CFLAGS``, ``CCSHARED``; ``$LDSHARED`` and ``$CFLAGS``
    in the environment count, as for setuptools), then ``-O2`` as ``setup.py`` adds."""
    import shlex
    import shutil

    cfg = sysconfig.get_config_var
    ld = os.environ.get("LDSHARED") or cfg("LDSHARED")
    include = sysconfig.get_paths().get("include", "")
    if not ld or not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    cmd = [*shlex.split(ld), *shlex.split(cfg("CFLAGS") or ""),
           *shlex.split(os.environ.get("CFLAGS", "")), *shlex.split(cfg("CCSHARED") or ""),
           "-O2", f"-I{include}"]
    return cmd if shutil.which(cmd[0]) is not None else None


def _suffix() -> str:
    """The file name ending of an extension of this Python."""
    return str(sysconfig.get_config_var("EXT_SUFFIX") or importlib.machinery.EXTENSION_SUFFIXES[0])


def build_name(source: str, command: Sequence[str]) -> str:
    """The module name of a build: a hash of everything the binary depends on."""
    h = hashlib.sha256("\0".join(
        [str(GENERATOR_VERSION), sys.version, _suffix(), " ".join(command), source]
    ).encode("utf-8")).hexdigest()
    return f"_kvrace_native_{h[:32]}"


_LOADED: dict[str, ModuleType] = {}
"""Builds loaded by this process, by module name (an extension loads once)."""


def _load(name: str, path: str) -> ModuleType:
    """The build ``name`` at ``path``, loaded (once per process)."""
    got = _LOADED.get(name)
    if got is not None:
        return got
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    if spec is None:  # pragma: no cover - spec_from_loader always has a loader here
        raise BuildError("the build could not be loaded")
    try:
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except (ImportError, OSError) as exc:
        raise BuildError(f"the build could not be loaded ({exc})") from None
    _LOADED[name] = mod
    return mod


def _compile(source: str, name: str, command: Sequence[str], dest: str,
             timeout: float | None) -> None:
    """Compile ``source`` in a private temporary directory and move the extension into
    the cache as ``dest`` (atomically: a temporary file in the cache, then a rename)."""
    import shutil
    import subprocess
    import tempfile

    suffix = _suffix()
    with tempfile.TemporaryDirectory(prefix="kvrace-native-") as tmp:
        src = os.path.join(tmp, "model.c")
        out = os.path.join(tmp, name + suffix)
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        try:
            done = subprocess.run([*command, src, "-o", out], capture_output=True, text=True,
                                  timeout=timeout, cwd=tmp, stdin=subprocess.DEVNULL,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise BuildError("the compilation was cut by the time limit") from None
        except OSError as exc:
            raise BuildError(f"the C compiler could not be run ({exc})") from None
        if done.returncode != 0 or not os.path.exists(out):
            first = (done.stderr.strip().splitlines() or ["no message"])[0]
            raise BuildError(f"the C compiler failed ({first})")
        try:
            fd, part = tempfile.mkstemp(prefix=".part-", suffix=suffix,
                                        dir=os.path.dirname(dest))
        except OSError as exc:
            raise BuildError(f"the build could not be written to the cache ({exc})") from None
        try:
            with os.fdopen(fd, "wb") as w, open(out, "rb") as r:
                shutil.copyfileobj(r, w)
            os.replace(part, dest)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(part)
            raise BuildError(f"the build could not be written to the cache ({exc})") from None


_WARNED: set[str] = set()


def _warn(message: str) -> None:
    """Say once per process that the cache was refused (a security event, not a note)."""
    if message not in _WARNED:
        _WARNED.add(message)
        sys.stderr.write(f"kvrace: warning: {message}; the model runs on the generated"
                         " Python\n")
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def build(parts: Sequence[Generated], compile_ok: bool, deadline: float | None
          ) -> ModuleType | None:
    """The extension holding these models: from the cache, else (when ``compile_ok``)
    compiled into it (within ``deadline``, a ``time.monotonic()`` instant); None when
    it is not cached and may not be compiled.  Raises BuildError."""
    command = compiler_command()
    if command is None:
        raise BuildError("no C compiler or Python headers")
    source = assemble(parts)
    name = build_name(source, command)
    if name in _LOADED:
        return _LOADED[name]
    path, present = cache_file(name + _suffix())
    if path is None:
        why = ("the cache directory, or the build's file in it, is unsafe (a link, another"
               " user's, or open to others)")
        _warn(f"the compiled successor function was not used: {why}")
        raise BuildError(why)
    if not present:
        if not compile_ok:
            return None
        timeout = None if deadline is None else max(0.05, deadline - time.monotonic())
        _compile(source + module_tail(name, len(parts)), name, command, path, timeout)
        _prune(os.path.dirname(path), keep=path)
    else:
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept by _prune
    return _load(name, path)


def _prune(directory: str, keep: str) -> None:
    """Remove the least recently used builds beyond :data:`MAX_BUILDS` (only regular
    files of this user's named as builds; ``keep`` stays)."""
    prune(directory, "_kvrace_native_", MAX_BUILDS, keep)


# ---- the model's side ---------------------------------------------------------------------------


class Mode(enum.Enum):
    """When a model uses the compiled successor function (``$KVRACE_NATIVE``)."""

    OFF = "0"
    ON = "1"
    AUTO = "auto"


def mode() -> Mode:
    """The mode ``$KVRACE_NATIVE`` asks for (``auto`` when unset or unknown)."""
    got = os.environ.get(ENV_VAR, "").strip().lower()
    if got in ("0", "off", "no", "false"):
        return Mode.OFF
    if got in ("1", "on", "yes", "true"):
        return Mode.ON
    return Mode.AUTO


def program(gen: Generated, mod: ModuleType) -> NativeProgram:
    """The Program of the model ``gen`` was generated from, in a loaded build
    (BuildError if they do not fit)."""
    from checker.model.compiled import EDGE_CELLS

    try:
        got: NativeProgram = mod.program(gen.index, Edge, ClockAtom, OPS, gen.branch_atoms,
                                         gen.dl_atoms, gen.violations, time.monotonic,
                                         EDGE_CELLS)
    except (TypeError, ValueError, IndexError) as exc:
        raise BuildError(f"the build does not fit the model ({exc})") from None
    return got


def start(model: SpecModel) -> int:
    """Set up ``model`` at construction: the compiled successor function at once in
    ``1`` mode; the number of Python calls before :func:`advance` in ``auto`` mode
    (0: never)."""
    m = mode()
    if m is Mode.OFF:
        model.native_note = f"{ENV_VAR}=0"
        return 0
    if m is Mode.ON:
        _switch(model, compile_ok=True)
        return 0
    return LOAD_AFTER


def advance(model: SpecModel) -> int:
    """The model has answered the calls :func:`start` (or this) asked for in Python: load
    a cached build; failing that, after :data:`COMPILE_AFTER` calls in all, compile one.
    Returns the calls to wait before the next step (0: no more steps)."""
    if model._native_gen is None:
        if _switch(model, compile_ok=False) or model.native_note is not None:
            return 0
        return COMPILE_AFTER - LOAD_AFTER
    _switch(model, compile_ok=True)
    return 0


def _switch(model: SpecModel, compile_ok: bool) -> bool:
    """Give ``model`` its compiled successor function if it can have one now; the
    reason it cannot in :attr:`SpecModel.native_note` (None: not yet, because it is not
    cached and ``compile_ok`` is False)."""
    try:
        gen = model._native_gen
        if gen is None:
            gen = generate(model)
            model._native_gen = gen
        mod = build([gen], compile_ok, model.deadline)
        if mod is None:
            return False
        model._native = program(gen, mod)
    except (Unsupported, BuildError) as exc:
        model.native_note = str(exc)
        model._native_gen = None
        return False
    model._native_gen = None
    model.native_note = None
    return True


def attach_all(models: Sequence[SpecModel]) -> None:
    """Give every model its compiled successor function from one build holding them all
    (one compilation: what the differential tests use for hundreds of models); a model
    the generator does not translate keeps the generated Python, with the reason in its
    ``native_note``.  Raises BuildError."""
    parts: list[Generated] = []
    owners: list[SpecModel] = []
    for m in models:
        try:
            parts.append(generate(m, len(parts)))
        except Unsupported as exc:
            m.native_note = str(exc)
            continue
        owners.append(m)
    if not parts:
        return
    mod = build(parts, compile_ok=True, deadline=None)
    assert mod is not None
    for m, gen in zip(owners, parts, strict=True):
        m._native = program(gen, mod)
        m._native_gen = None
        m._native_wait = 0
        m.native_note = None

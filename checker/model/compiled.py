"""The runnable form of a specification: a :class:`SpecModel` implementing
:class:`~checker.model.interface.TimedModel`.

Guards, bodies, deadlines and properties are compiled once to Python source
(one function each, evaluated on a state tuple), so the explorer's hot path
calls plain functions over tuples of ints.  Every event is instantiated for
every combination of its parameters; clock atoms whose clock index does not
depend on the state are computed once per instance.

Bounded-response properties ``P leadsto Q within T`` are compiled into an
observer: one ``pending`` cell per property instance appended to the state and
one observer clock, reset when ``P`` starts an obligation; the property is
broken by every valuation with ``pending`` and observer clock ``> T``.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from checker.errors import UsageError
from checker.limits import TimeLimitHit
from checker.model import ir, native
from checker.model.interface import (
    GT,
    ClockAtom,
    Components,
    Edge,
    Hazard,
    LimitReached,
    LinExpr,
    ModelRuntimeError,
    Param,
    ParamConstraint,
    QueryMatch,
    Relation,
    State,
    StaticClocks,
    Symmetry,
    Violation,
    scaled_bounds,
)
from checker.model.symmetry import SortCanonizer

EDGE_CELLS = 1 << 18
"""How many cells of target states one call of :meth:`SpecModel.edges` builds between
two checks of its deadline (a few milliseconds of copying)."""

MAX_RESET_TUPLES = 4096
"""Distinct reset tuples kept to be shared by the edges (as the compiled successor
function does: ``MAX_RESET_TUPLES`` in ``native_rt.c``), and distinct deadline tuples
shared by the states."""

MAX_PERMUTATIONS = 5_040
""":meth:`SpecModel.symmetries` lists at most this many permutations (7!); the
engines use :attr:`SpecModel.canonizer`, which never lists them."""


class ParamError(UsageError):
    """An unknown parameter name or a value outside a parameter's range."""


class _Fault(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _some(v: int, site: str) -> int:
    if v == ir.NONE:
        raise _Fault(f"`none` dereferenced at {site}")
    return v


def _rng(v: int, lo: int, hi: int, site: str) -> int:
    if v < lo or v > hi:
        raise _Fault(f"value {v} outside {lo}..{hi} at {site}")
    return v


def _rngm(v: int, check: ir.InRange) -> int:
    if v < check.lo or v > check.hi:
        raise _Fault(check.fault(v))
    return v


def _div(a: int, b: int, site: str) -> int:
    try:
        return ir.divide(ir.BinaryOp.DIV, a, b, site)
    except ZeroDivisionError as exc:
        raise _Fault(str(exc)) from None


def _mod(a: int, b: int, site: str) -> int:
    try:
        return ir.divide(ir.BinaryOp.MOD, a, b, site)
    except ZeroDivisionError as exc:
        raise _Fault(str(exc)) from None


def _touch(*_: int) -> bool:
    return True


class _Gen:
    """Python source generation for IR expressions and statements."""

    def __init__(self) -> None:
        self.consts: dict[str, Any] = {"_some": _some, "_rng": _rng, "_touch": _touch,
                                       "_Fault": _Fault, "_rngm": _rngm, "_div": _div,
                                       "_mod": _mod}
        self.counter = 0

    def const(self, value: Any) -> str:
        self.counter += 1
        name = f"_k{self.counter}"
        self.consts[name] = value
        return name

    def cell(self, base: int, domain: tuple[ir.FiniteType, ...], index: Sequence[ir.Expr],
             st: str) -> str:
        parts: list[str] = []
        static = base
        stride = 1
        for ft, e in reversed(list(zip(domain, index, strict=True))):
            if isinstance(e, ir.Const):
                static += (e.value - ft.lo) * stride
            else:
                code = self.expr(e, st)
                off = f" - {ft.lo}" if ft.lo else ""
                parts.append(f"({code}{off})" if stride == 1 else f"({code}{off}) * {stride}")
            stride *= ft.size
        if not parts:
            return str(static)
        return " + ".join([*reversed(parts), str(static)] if static else list(reversed(parts)))

    def expr(self, e: ir.Expr, st: str) -> str:
        kind = _EXPR_KINDS.get(e.__class__)
        if kind is None:  # pragma: no cover
            raise AssertionError(type(e).__name__)
        return kind(self, e, st)

    def const_expr(self, e: ir.Const, st: str) -> str:
        """A constant."""
        return str(e.value)

    def local_expr(self, e: ir.Local, st: str) -> str:
        """A bound name: the argument of its slot."""
        return f"a{e.slot}"

    def read_expr(self, e: ir.Read, st: str) -> str:
        """A variable's cell of state ``st``."""
        return f"{st}[{self.cell(e.var.offset, e.var.domain, e.index, st)}]"

    def some_expr(self, e: ir.Some, st: str) -> str:
        """An optional value, faulting on ``none``."""
        return f"_some({self.expr(e.operand, st)}, {e.site!r})"

    def in_range_expr(self, e: ir.InRange, st: str) -> str:
        """A value checked against its range."""
        if e.what:
            return f"_rngm({self.expr(e.operand, st)}, {self.const(e)})"
        return f"_rng({self.expr(e.operand, st)}, {e.lo}, {e.hi}, {e.site!r})"

    def unary_expr(self, e: ir.Unary, st: str) -> str:
        """``not e`` or ``-e``."""
        if e.op == ir.UnaryOp.NOT:
            return f"(not {self.expr(e.operand, st)})"
        return f"(-{self.expr(e.operand, st)})"

    def binary_expr(self, e: ir.Binary, st: str) -> str:
        """A binary operation; ``=>`` and the faulting divisions spelled out."""
        a, b = self.expr(e.left, st), self.expr(e.right, st)
        if e.op == ir.BinaryOp.IMPLIES:
            return f"((not {a}) or {b})"
        if e.op in (ir.BinaryOp.DIV, ir.BinaryOp.MOD):
            fn = "_div" if e.op == ir.BinaryOp.DIV else "_mod"
            return f"{fn}({a}, {b}, {e.site!r})"
        return f"({a} {e.op} {b})"

    def member_expr(self, e: ir.Member, st: str) -> str:
        """``e in {a, b}`` as a tuple membership."""
        opts = ", ".join(self.expr(o, st) for o in e.options)
        return f"({self.expr(e.value, st)} in ({opts},))"

    def quant_expr(self, e: ir.Quant, st: str) -> str:
        """``forall`` / ``exists`` as ``all`` / ``any`` over the type's range."""
        fn = "all" if e.kind == ir.Quantifier.FORALL else "any"
        body = self.expr(e.body, st)
        return f"{fn}({body} for a{e.slot} in range({e.type.lo}, {e.type.hi + 1}))"

    def index_check_expr(self, e: ir.IndexCheck, st: str) -> str:
        """True once every index is evaluated."""
        return f"_touch({', '.join(self.expr(i, st) for i in e.index)})"

    def clock_test_expr(self, e: ir.ClockTest, st: str) -> str:
        """Never generated: guards lose their clock tests first."""
        raise AssertionError("clock tests are split out of guards before code generation")

    def stmts(self, ss: Sequence[ir.Stmt], indent: str) -> list[str]:
        out: list[str] = []
        for s in ss:
            if isinstance(s, ir.Assign):
                idx = self.cell(s.var.offset, s.var.domain, s.index, "n")
                val = self.expr(s.value, "n")
                if s.var.value.base.kind == "bool" and not isinstance(s.value, ir.Const):
                    val = f"int({val})"
                out.append(f"{indent}n[{idx}] = {val}")
            elif isinstance(s, ir.ResetClock):
                idx = self.cell(s.clock.offset, s.clock.domain, s.index, "n")
                out.append(f"{indent}r.append({idx})")
            elif isinstance(s, ir.AssertStmt):
                parts: list[str] = []
                for i, piece in enumerate(s.pieces):
                    if piece:
                        parts.append(repr(piece))
                    if i < len(s.holes):
                        hole, vt = s.holes[i]
                        code = self.expr(hole, "n")
                        if vt is None:
                            parts.append(f"str({code})")
                        else:
                            parts.append(f"{self.const(vt)}.show({code})")
                msg = " + ".join(parts) if parts else repr(s.text)
                out.append(f"{indent}if not {self.expr(s.cond, 'n')}:")
                out.append(f"{indent}    return tuple(n), r, {msg}")
            elif isinstance(s, ir.IfStmt):
                out.append(f"{indent}if {self.expr(s.cond, 'n')}:")
                out.extend(self.stmts(s.then, indent + "    ") or [indent + "    pass"])
                if s.orelse:
                    out.append(f"{indent}else:")
                    out.extend(self.stmts(s.orelse, indent + "    "))
            elif isinstance(s, ir.Broadcast):
                out.extend(self.broadcast(s, indent))
            else:  # pragma: no cover
                raise AssertionError(type(s).__name__)
        return out


    def broadcast(self, s: ir.Broadcast, indent: str) -> list[str]:
        """Receivers' guards on the state before, then the sender, then each enabled
        receiver in order (see :class:`~checker.model.ir.Broadcast`)."""
        self.counter += 1
        k = self.counter
        out: list[str] = []
        for i, rc in enumerate(s.receivers):
            guard = self.expr(rc.guard, "n")
            if rc.slots:
                binding = "(" + "".join(f"a{sl}, " for sl, _ in rc.slots) + ")"
                loops = " ".join(f"for a{sl} in range({ft.lo}, {ft.hi + 1})"
                                 for sl, ft in rc.slots)
                out.append(f"{indent}_b{k}_{i} = [{binding} {loops} if {guard}]")
            else:
                out.append(f"{indent}_b{k}_{i} = [()] if {guard} else []")
        by_process: dict[str, list[str]] = {}
        for i, rc in enumerate(s.receivers):
            if rc.instance is not None:
                if rc.instance[1] is None:
                    item = f"[0 for t in _b{k}_{i}]"
                else:
                    pos = [sl for sl, _ in rc.slots].index(rc.instance[1])
                    item = f"[t[{pos}] for t in _b{k}_{i}]"
                by_process.setdefault(rc.instance[0], []).append(item)
        for process, lists in by_process.items():
            out.append(f"{indent}_seen = {' + '.join(lists)}")
            out.append(f"{indent}if len(_seen) != len(set(_seen)):")
            out.append(f"{indent}    raise _Fault({s.twice(process)!r})")
        out.extend(self.stmts(s.sender, indent))
        for i, rc in enumerate(s.receivers):
            target = ", ".join(f"a{sl}" for sl, _ in rc.slots) + "," if rc.slots else "_"
            body = self.stmts(rc.body, indent + "    ") or [indent + "    pass"]
            out.append(f"{indent}for {target} in _b{k}_{i}:")
            out.extend(body)
        return out


_EXPR_KINDS: dict[type, Callable[[_Gen, Any, str], str]] = {
    ir.Const: _Gen.const_expr,
    ir.Local: _Gen.local_expr,
    ir.Read: _Gen.read_expr,
    ir.Some: _Gen.some_expr,
    ir.InRange: _Gen.in_range_expr,
    ir.Unary: _Gen.unary_expr,
    ir.Binary: _Gen.binary_expr,
    ir.Member: _Gen.member_expr,
    ir.Quant: _Gen.quant_expr,
    ir.IndexCheck: _Gen.index_check_expr,
    ir.ClockTest: _Gen.clock_test_expr,
}
"""The source generation of each kind of IR expression."""


def _args_sig(nslots: int) -> str:
    # The state comes last so that instances bind their arguments with a C-level
    # functools.partial (the hot path calls these functions once per state).
    return ", ".join([*(f"a{i}" for i in range(nslots)), "s"])


@dataclass
class _Instance:
    event: int
    args: tuple[int, ...]
    label: str
    branches: list[tuple[Callable[..., bool], tuple[ClockAtom, ...] | Callable[..., Any]]]
    body: Callable[..., tuple[State, list[int], str | None]]
    receives: Callable[..., tuple[int, ...]] | None


def _first_test(guard: ir.Expr, args: tuple[int, ...]) -> tuple[int, frozenset[int]] | None:
    """``(cell, values)`` when the leftmost conjunct of ``guard`` (for an instance with
    these arguments) is a test of one cell against constants that cannot fault: the
    guard is false unless ``s[cell] in values``.

    Only the leftmost conjunct: evaluation is left to right, so skipping a guard on a
    later one could hide a fault an earlier one raises."""
    while isinstance(guard, ir.Binary) and guard.op == ir.BinaryOp.AND:
        guard = guard.left
    if isinstance(guard, ir.Unary) and guard.op == ir.UnaryOp.NOT:
        c = _static_cell(guard.operand, args)
        return None if c is None else (c, frozenset({0}))
    if isinstance(guard, ir.Binary) and guard.op == ir.BinaryOp.EQ:
        return _equality_test(guard, args)
    if isinstance(guard, ir.Member):
        return _member_test(guard, args)
    c = _static_cell(guard, args)
    if c is not None and guard.__class__ is ir.Read and guard.var.value.base.kind == "bool":
        return c, frozenset({1})
    return None


def _static_value(e: ir.Expr, args: tuple[int, ...]) -> int | None:
    """The value of ``e`` when it is a constant or an instance's argument."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Local) and e.slot < len(args):
        return args[e.slot]
    return None


def _static_cell(e: ir.Expr, args: tuple[int, ...]) -> int | None:
    """The cell ``e`` reads when it is a read at static indices within its domain."""
    if not isinstance(e, ir.Read):
        return None
    idx = [_static_value(i, args) for i in e.index]
    if any(i is None for i in idx):
        return None
    point = tuple(i for i in idx if i is not None)
    for ft, v in zip(e.var.domain, point, strict=True):
        if not ft.lo <= v <= ft.hi:
            return None
    return e.var.offset + ir.cell_index(e.var.domain, point)


def _equality_test(guard: ir.Binary, args: tuple[int, ...]
                   ) -> tuple[int, frozenset[int]] | None:
    """``cell == value`` (either way round) as ``(cell, {value})``."""
    for a, b in ((guard.left, guard.right), (guard.right, guard.left)):
        c, v = _static_cell(a, args), _static_value(b, args)
        if c is not None and v is not None:
            return c, frozenset({v})
    return None


def _member_test(guard: ir.Member, args: tuple[int, ...]
                 ) -> tuple[int, frozenset[int]] | None:
    """``cell in {values}`` as ``(cell, values)``."""
    c = _static_cell(guard.value, args)
    opts = [_static_value(o, args) for o in guard.options]
    if c is not None and all(o is not None for o in opts):
        return c, frozenset(o for o in opts if o is not None)
    return None


def _moved(old: int, idx: tuple[int, ...], moves: Sequence[tuple[int, int, int]],
           images: tuple[tuple[int, ...], ...]) -> int:
    """Where a permutation moves the cell or clock ``old`` of a family: each symmetric
    index position ``p`` (of type ``k``, row-major ``stride``) takes its image."""
    new = old
    for p, k, stride in moves:
        new += (images[k][idx[p]] - idx[p]) * stride
    return new


def instantiate_params(spec: ir.Spec, overrides: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """Default parameter values with ``overrides`` applied; checks names and ranges."""
    params = {p.name: p for p in spec.params}
    consts = {c.name: c for c in spec.consts}
    for name, value in overrides.items():
        if name in consts and value == consts[name].value:
            continue  # the value the spec was elaborated with
        if name in consts:
            raise ParamError(
                f"`{name}` is a structural constant: it is set when the spec is loaded"
                f" (this spec was loaded with {name}={consts[name].value})")
        if name not in params:
            known = ", ".join([*params, *consts]) or "none"
            close = difflib.get_close_matches(name, sorted([*params, *consts]), n=1,
                                              cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise ParamError(f"unknown parameter `{name}` (the spec declares: {known}){hint}")
        if not params[name].contains(value):
            raise ParamError(
                f"{name}={value} is outside its declared range {params[name].range_text()}"
            )
    return {n: Fraction(overrides.get(n, p.default)) for n, p in params.items()}


def check_constraints(spec: ir.Spec, values: Mapping[str, Fraction]) -> None:
    """Refuse parameter values outside an ``assume`` of the spec (ParamError naming the
    constraint and its place)."""
    for c in spec.assumes:
        if not c.holds(values):
            used = ", ".join(f"{p}={_fmt(values[p])}" for p, _ in c.expr.terms)
            raise ParamError(f"{used} does not satisfy `assume {c.text}` ({c.where})")


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


class SpecModel:
    """A compiled specification with concrete parameter values."""

    def __init__(self, spec: ir.Spec, values: Mapping[str, Fraction] | None = None,
                 deadline: float | None = None, concrete: bool = True) -> None:
        """``deadline`` (a ``time.monotonic()`` instant, :attr:`deadline`) bounds the
        time spent instantiating events and properties, and then each call of
        :meth:`edges`: past it, LimitReached.  ``concrete``: the
        values must satisfy the spec's ``assume`` constraints (ParamError otherwise);
        False for synthesis and proofs, whose free parameters are symbolic and whose
        exploration conjoins the constraints instead."""
        self.spec = spec
        self.deadline = deadline
        """Past this ``time.monotonic()`` instant, building the model and each call of
        :meth:`edges` end with :class:`~checker.limits.TimeLimitHit` (a run's deadline:
        set to None once the run is over, so that the model serves later queries)."""
        self._built = 0
        self.name = spec.name
        self.params: dict[str, Param] = {p.name: p for p in spec.params}
        self.values = instantiate_params(spec, values or {})
        if concrete:
            check_constraints(spec, self.values)
        self.param_constraints: tuple[ParamConstraint, ...] = spec.assumes
        self._bounds: dict[LinExpr, int] = {}
        self._gen = _Gen()
        clock_names: list[str] = []
        for clk in spec.clocks:
            for idx in ir.domain_points(clk.domain):
                clock_names.append(clk.name + ir.show_index(clk.domain, idx))
        self.state_size = self._compile_observers(clock_names)
        self.clock_names: list[str] = clock_names
        self._compile_events()
        self._compile_deadlines()
        self._compile_invariants()
        self._compile_queries()
        self.bounds: list[LinExpr] = list(self._bounds)
        self.event_count = len(self._instances)
        self._index_instances()
        self._compile_leadsto()
        try:
            scaled_bounds(self.bounds, self.values)
        except ValueError as exc:
            raise ParamError(str(exc)) from None
        self._native: native.NativeProgram | None = None
        self._native_gen: native.Generated | None = None
        self.native_note: str | None = None
        """Why the model does not use the compiled successor function, when it cannot
        (None while it may still: see :mod:`checker.model.native`)."""
        self._native_wait = native.start(self)
        self._resets: dict[tuple[int, ...], tuple[int, ...]] = {}
        """The reset tuples of the edges made so far, each kept once (the clock-bounds
        pass keeps the resets of every edge it counts)."""
        self._deadline_tuples: dict[tuple[int, ...], tuple[ClockAtom, ...]] = {}
        """The deadlines of the states met so far, one tuple for equal ones (by the
        identities of their atoms)."""

    def components(self) -> Components:
        """The model as a network of components, for local-time zones (computed once)."""
        got: Components | None = self.__dict__.get("_components")
        if got is None:
            from checker.model.components import components

            got = self._components = components(self.spec)
        return got

    def static_clocks(self) -> StaticClocks | None:
        """Clock bounds per process location, from the syntax (computed once; None when
        the model is not a network of processes)."""
        if "_static_clocks" not in self.__dict__:
            from checker.model.staticbounds import static_clocks

            self._static_clocks = static_clocks(self.spec, len(self.clock_names))
        got: StaticClocks | None = self._static_clocks
        return got

    @property
    def successors(self) -> str:
        """Which successor function answers: ``native`` (the compiled one, see
        :mod:`checker.model.native`) or ``python`` (the generated Python)."""
        return "python" if self._native is None else "native"

    def _compile_observers(self, clock_names: list[str]) -> int:
        """The observers of bounded-response properties: a cell and a clock each (the
        clocks appended to ``clock_names``); the state's size with their cells."""
        spec, gen = self.spec, self._gen
        self._obs: list[tuple[int, int, Callable[..., bool], Callable[..., bool], int, str]] = []
        self._obs_decl: list[int] = []
        """For each observer, its property's index in ``spec.responses``."""
        obs_cell = spec.state_size
        for ri, resp in enumerate(spec.responses):
            dom = tuple(ft for _, ft in resp.params)
            sig = _args_sig(resp.nslots)
            trig = self._compile(f"def f({sig}): return {gen.expr(resp.trigger, 's')}")
            done = self._compile(f"def f({sig}): return {gen.expr(resp.response, 's')}")
            within = self.bound_id(resp.within)
            for idx in ir.domain_points(dom):
                label = resp.name + ir.show_index(dom, idx)
                clock_names.append(f"<{label}>")
                self._obs.append(
                    (obs_cell, len(clock_names) - 1, self._bind(trig, idx, resp.nslots),
                     self._bind(done, idx, resp.nslots), within, label)
                )
                self._obs_decl.append(ri)
                obs_cell += 1
        return obs_cell

    def _compile_events(self) -> None:
        """Every event instance: its guard branches, body and received message."""
        spec, gen = self.spec, self._gen
        self._instances: list[_Instance] = []
        self.event_names: list[str] = []
        self._instance_of: dict[tuple[int, tuple[int, ...]], int] = {}
        for ei, ev in enumerate(spec.events):
            sig = _args_sig(ev.nslots)
            body_src = [f"def f({sig}):", "    n = list(s)", "    r = []"]
            body_src += gen.stmts(ev.body, "    ")
            body_src.append("    return tuple(n), r, None")
            body = self._compile("\n".join(body_src))
            compiled_branches = []
            for br in ev.branches:
                guard = self._compile(f"def f({sig}): return {gen.expr(br.data, 's')}")
                atoms, static = self._atoms(br.clocks, sig)
                compiled_branches.append((guard, atoms, static))
            recv = None
            if ev.receives is not None:
                items = "".join(f"{gen.expr(a, 's')}, " for a in ev.receives[1])
                recv = self._compile(f"def f({sig}): return ({items})")
            dom = tuple(ft for _, ft in ev.params)
            for idx in ir.domain_points(dom):
                self._tick()
                label = ev.label + (
                    "(" + ", ".join(ft.show(v) for ft, v in zip(dom, idx, strict=True)) + ")"
                )
                branches: list[Any] = []
                for guard, atoms, static in compiled_branches:
                    g = self._bind(guard, idx, ev.nslots)
                    a = self._bind(atoms, idx, ev.nslots)
                    branches.append((g, self._fixed(a) if static else a))
                self._instance_of[(ei, idx)] = len(self._instances)
                self._instances.append(
                    _Instance(ei, idx, label, branches, self._bind(body, idx, ev.nslots),
                              self._bind(recv, idx, ev.nslots) if recv is not None else None)
                )
                self.event_names.append(label)

    def _compile_deadlines(self) -> None:
        """Every deadline instance: its condition and clock atoms."""
        spec, gen = self.spec, self._gen
        self._deadlines: list[tuple[Callable[..., bool], Any, bool]] = []
        self._deadline_decl: list[int] = []
        """For each deadline instance, its declaration's index in ``spec.deadlines``."""
        for di, dl in enumerate(spec.deadlines):
            sig = _args_sig(dl.nslots)
            cond = self._compile(f"def f({sig}): return {gen.expr(dl.cond, 's')}")
            atoms, static = self._atoms(dl.atoms, sig)
            dom = tuple(ft for _, ft in dl.params)
            for idx in ir.domain_points(dom):
                self._tick()
                a = self._bind(atoms, idx, dl.nslots)
                fixed = self._fixed(a) if static else a
                self._deadlines.append(
                    (self._bind(cond, idx, dl.nslots), fixed, isinstance(fixed, tuple))
                )
                self._deadline_decl.append(di)

    def _compile_invariants(self) -> None:
        """Every invariant instance: its condition, name and message."""
        spec, gen = self.spec, self._gen
        self._invariants: list[tuple[Callable[..., bool], str, str]] = []
        for inv in spec.invariants:
            sig = _args_sig(inv.nslots)
            fn = self._compile(f"def f({sig}): return {gen.expr(inv.expr, 's')}")
            dom = tuple(ft for _, ft in inv.params)
            for idx in ir.domain_points(dom):
                self._invariants.append(
                    (self._bind(fn, idx, inv.nslots), inv.name + ir.show_index(dom, idx),
                     inv.broken())
                )

    def _compile_queries(self) -> None:
        """The reachability queries (``reachable NAME: expr``), split into convex
        branches as guards are: (data condition, clock atoms) per branch."""
        spec, gen = self.spec, self._gen
        self._queries: list[list[tuple[Callable[..., bool], Any]]] = []
        for query in spec.queries:
            sig = _args_sig(query.nslots)
            parts: list[tuple[Callable[..., bool], Any]] = []
            for br in query.parts:
                cond = self._compile(f"def f({sig}): return {gen.expr(br.data, 's')}")
                atoms, static = self._atoms(br.clocks, sig)
                a = self._bind(atoms, (), query.nslots)
                parts.append((self._bind(cond, (), query.nslots),
                              self._fixed(a) if static else a))
            self._queries.append(parts)
        self.query_names: list[str] = [query.name for query in spec.queries]

    def _index_instances(self) -> None:
        """Which instances may be enabled, by the value of their guard's first cell."""
        self._always: list[int] = []
        index: dict[int, dict[int, list[int]]] = {}
        for i, inst in enumerate(self._instances):
            test = _first_test(self.spec.events[inst.event].guard, inst.args)
            if test is None:
                self._always.append(i)
            else:
                by_value = index.setdefault(test[0], {})
                for v in sorted(test[1]):
                    by_value.setdefault(v, []).append(i)
        self._by_cell = sorted(index.items())

    def _compile_leadsto(self) -> None:
        """The unbounded liveness properties: per instance, a label and ``P``, ``Q``."""
        gen = self._gen
        self.leadsto_names: list[str] = []
        self._leadsto: list[tuple[Callable[..., bool], Callable[..., bool]]] = []
        self._leadsto_args: list[tuple[str, tuple[ir.FiniteType, ...], tuple[int, ...]]] = []
        for lt in self.spec.leadsto:
            sig = _args_sig(lt.nslots)
            trig = self._compile(f"def f({sig}): return {gen.expr(lt.trigger, 's')}")
            done = self._compile(f"def f({sig}): return {gen.expr(lt.response, 's')}")
            dom = tuple(ft for _, ft in lt.params)
            for idx in ir.domain_points(dom):
                self._leadsto_args.append((lt.name, dom, idx))
                self.leadsto_names.append(lt.name + ir.show_index(dom, idx))
                self._leadsto.append((self._bind(trig, idx, lt.nslots),
                                      self._bind(done, idx, lt.nslots)))
        self.fair_events: frozenset[int] = frozenset(
            i for i, inst in enumerate(self._instances) if self.spec.events[inst.event].fair)

    def leadsto(self, s: State) -> list[tuple[bool, bool]]:
        """For each instance of :attr:`leadsto_names`: whether ``P`` and ``Q`` hold in
        ``s``."""
        out: list[tuple[bool, bool]] = []
        for k, (trig, done) in enumerate(self._leadsto):
            try:
                out.append((bool(trig(s)), bool(done(s))))
            except _Fault as f:
                raise ModelRuntimeError(f"property {self.leadsto_names[k]}: {f.message}",
                                        None, s) from None
        return out

    # ---- compilation helpers --------------------------------------------------------
    def _tick(self) -> None:
        self._built += 1
        if (self.deadline is not None and self._built % 256 == 0
                and time.monotonic() > self.deadline):
            raise LimitReached("time limit reached while building the model")

    def bound_id(self, b: LinExpr) -> int:
        """The index of bound ``b`` in :attr:`bounds` (added if new)."""
        if b not in self._bounds:
            self._bounds[b] = len(self._bounds)
        return self._bounds[b]

    def _atoms(self, tests: Sequence[ir.ClockTest], sig: str
               ) -> tuple[Callable[..., Any], bool]:
        """A function giving the clock atoms of ``tests`` in a state, and whether
        they are the same in every state (no clock index reads the state)."""
        gen = self._gen
        gen.consts["_CA"] = ClockAtom
        gen.consts.update({f"_{rel.name}": rel for rel in Relation})
        items = "".join(
            f"_CA({gen.cell(ct.clock.offset, ct.clock.domain, ct.index, 's')}, "
            f"_{ct.op.name}, {self.bound_id(ct.bound)}), "
            for ct in tests
        )
        fn = self._compile(f"def f({sig}): return ({items})")
        return fn, not any(ir.reads_state(i) for ct in tests for i in ct.index)

    def _fixed(self, atoms: Callable[..., tuple[ClockAtom, ...]]
               ) -> tuple[ClockAtom, ...] | Callable[..., tuple[ClockAtom, ...]]:
        """The atoms of an instance whose clock indexes do not read the state, computed
        once; the function itself if computing them faults (an instance whose guard or
        ``while`` never reaches the faulting index must not fail)."""
        try:
            return atoms((0,) * self.spec.state_size)
        except _Fault:
            return atoms

    def _compile(self, src: str) -> Callable[..., Any]:
        ns: dict[str, Any] = dict(self._gen.consts)
        exec(compile(src, f"<kvrace:{self.name}>", "exec"), ns)
        fn: Callable[..., Any] = ns["f"]
        return fn

    @staticmethod
    def _bind(fn: Callable[..., Any], idx: tuple[int, ...], nslots: int) -> Callable[..., Any]:
        pad = (0,) * (nslots - len(idx))
        full = (*idx, *pad)
        if not full:
            return fn
        return functools.partial(fn, *full)

    # ---- TimedModel ----------------------------------------------------------------
    def initial_states(self) -> list[State]:
        """The single initial state: every variable at its initial value."""
        cells: list[int] = []
        for var in self.spec.vars:
            cells.extend([var.init] * var.size)
        cells.extend([0] * len(self._obs))
        s = tuple(cells)
        resets: list[int] = []
        return [self._observe(s, resets)]

    def _observe(self, t: State, resets: list[int]) -> State:
        if not self._obs:
            return t
        cells = list(t)
        for cell, clock, trig, done, _, _ in self._obs:
            try:
                pending = cells[cell]
                q = done(t)
                if pending:
                    if q:
                        cells[cell] = 0
                elif trig(t) and not q:
                    cells[cell] = 1
                    resets.append(clock)
            except _Fault as f:
                raise ModelRuntimeError(f.message, None, t) from None
        return tuple(cells)

    def edges(self, s: State) -> list[Edge]:
        """Every enabled (event instance, convex guard branch) from ``s``: the compiled
        successor function's answer, or the generated Python's where it has none."""
        prog = self._native
        if prog is not None:
            got = prog.edges(s, self.deadline)
            if got is not None:
                return got
        elif self._native_wait:
            self._native_wait -= 1
            if not self._native_wait:
                self._native_wait = native.advance(self)
        return self.python_edges(s)

    def python_edges(self, s: State) -> list[Edge]:
        """:meth:`edges` computed by the generated Python (the reference of the compiled
        successor function)."""
        out: list[Edge] = []
        ids = list(self._always)
        for c, by_value in self._by_cell:
            got = by_value.get(s[c])
            if got:
                ids.extend(got)
        ids.sort()
        instances = self._instances
        # One call can build many large targets (a state of 65,536 cells, thousands of
        # instances): the deadline is checked every EDGE_CELLS cells of targets built.
        every = max(1, EDGE_CELLS // max(1, len(s)))
        deadline = self.deadline
        for n, i in enumerate(ids):
            if n and deadline is not None and n % every == 0 and time.monotonic() > deadline:
                raise TimeLimitHit("time limit reached")
            inst = instances[i]
            try:
                enabled = [atoms if isinstance(atoms, tuple) else atoms(s)
                           for guard, atoms in inst.branches if guard(s)]
                if not enabled:
                    continue
                if len(enabled) > 1 and () in enabled:
                    # An unconditional branch covers every other one.  Keeping only it
                    # also keeps the edges of symmetric states symmetric: the branches
                    # of a disjunction exclude the data cases of earlier ones, so which
                    # redundant branches survive depends on the order of the values.
                    enabled = [()]
                target, resets, failure = inst.body(s)
            except _Fault as f:
                raise ModelRuntimeError(f"{inst.label}: {f.message}", i, s) from None
            if failure is None:
                target = self._observe(target, resets)
            rs = tuple(sorted(set(resets)))
            if rs:
                if len(self._resets) >= MAX_RESET_TUPLES:
                    self._resets.clear()
                rs = self._resets.setdefault(rs, rs)
            for atoms in enabled:
                out.append(Edge(i, atoms, rs, target, failure))
        return out

    def deadlines(self, s: State) -> Sequence[ClockAtom]:
        """The clock upper bounds active in ``s``: one tuple for the states with the
        same ones (the clock-bounds pass keeps the deadlines of every state)."""
        prog = self._native
        got = None if prog is None else prog.deadlines(s)
        if got is None:
            got = self.python_deadlines(s)
        if not got:
            return ()
        # Keyed by the atoms' identities (most are the model's own constant atoms): the
        # tuple kept holds them, so no other atom can take one of their identities.
        key = tuple(map(id, got))
        shared = self._deadline_tuples.get(key)
        if shared is None:
            if len(self._deadline_tuples) >= MAX_RESET_TUPLES:
                self._deadline_tuples.clear()
            shared = self._deadline_tuples[key] = tuple(got)
        return shared

    def python_deadlines(self, s: State) -> list[ClockAtom]:
        """:meth:`deadlines` computed by the generated Python."""
        out: list[ClockAtom] = []
        for cond, atoms, fixed in self._deadlines:
            try:
                if cond(s):
                    out.extend(atoms if fixed else atoms(s))
            except _Fault as f:
                raise ModelRuntimeError(f"deadline: {f.message}", None, s) from None
        return out

    def unexercised(self, states: Iterable[State]) -> tuple[list[str], list[str]]:
        """What ``states`` never exercise: the deadline declarations active in none of
        them, and the bounded-response properties whose trigger held in none of them
        (in declaration order).  A deadline whose condition faults counts as active:
        the fault is reported by the run that meets it."""
        dl_left = set(range(len(self.spec.deadlines)))
        resp_left = set(range(len(self.spec.responses)))
        for s in states:
            if not dl_left and not resp_left:
                break
            for (cond, _, _), decl in zip(self._deadlines, self._deadline_decl, strict=True):
                if decl in dl_left:
                    try:
                        active = bool(cond(s))
                    except _Fault:
                        active = True
                    if active:
                        dl_left.discard(decl)
            for obs, decl in zip(self._obs, self._obs_decl, strict=True):
                if decl in resp_left:
                    try:
                        triggered = bool(s[obs[0]] or obs[2](s))
                    except _Fault:
                        triggered = True
                    if triggered:
                        resp_left.discard(decl)
        return ([self.spec.deadlines[i].name for i in sorted(dl_left)],
                [self.spec.responses[i].name for i in sorted(resp_left)])

    def violations(self, s: State) -> list[Violation]:
        """The invariants ``s`` breaks."""
        if not self._invariants:
            return []
        prog = self._native
        if prog is not None:
            got = prog.violations(s)
            if got is not None:
                return got
        return self.python_violations(s)

    def python_violations(self, s: State) -> list[Violation]:
        """:meth:`violations` computed by the generated Python."""
        out: list[Violation] = []
        for fn, label, message in self._invariants:
            try:
                ok = fn(s)
            except _Fault as f:
                raise ModelRuntimeError(f"invariant {label}: {f.message}", None, s) from None
            if not ok:
                out.append(Violation(label, message))
        return out

    def queries(self, s: State) -> list[QueryMatch]:
        """The ``reachable`` queries whose data part holds in ``s``, each with the convex
        clock parts under which it holds."""
        out: list[QueryMatch] = []
        for i, parts in enumerate(self._queries):
            try:
                got = [atoms if isinstance(atoms, tuple) else atoms(s)
                       for cond, atoms in parts if cond(s)]
                if got:
                    out.append(QueryMatch(i, ((),) if () in got else
                                          tuple(dict.fromkeys(got))))
            except _Fault as f:
                raise ModelRuntimeError(f"reachable {self.query_names[i]}: {f.message}",
                                        None, s) from None
        return out

    def hazards(self, s: State) -> list[Hazard]:
        """Pending bounded-response obligations: broken once the observer passes ``T``."""
        if not self._obs:
            return []
        out: list[Hazard] = []
        for cell, clock, _, _, within, label in self._obs:
            if s[cell]:
                bound = self.bounds[within]
                out.append(
                    Hazard(label, f"no response within {bound}",
                           (ClockAtom(clock, GT, within),))
                )
        return out

    @property
    def symmetry_off(self) -> str | None:
        """Why the model has no symmetries although it declares symmetric types."""
        q = ir.order_dependent_faults(self.spec)
        if q is None:
            b = ir.order_dependent_broadcast(self.spec)
            if b is None:
                return None
            return (f"a receiver of broadcast channel `{b.channel}` over a symmetric type can"
                    " fault, so faults may depend on the order of its values")
        return (f"a quantifier over the symmetric type {q.type} has a body that can fault,"
                " so faults may depend on the order of its values")

    @functools.cached_property
    def canonizer(self) -> SortCanonizer | None:
        """Canonical forms under the symmetric types by sorted value signatures (None
        without symmetric types, or when :attr:`symmetry_off` says why not)."""
        sym_types = [t for t in self.spec.types if t.symmetric and t.size > 1]
        if not sym_types or self.symmetry_off is not None:
            return None
        cells: list[tuple[int, tuple[ir.FiniteType, ...], ir.FiniteType | None, object]] = []
        for var in self.spec.vars:
            base = var.value.base if var.value.base.symmetric else None
            cells.append((var.offset, var.domain, base, var.name))
        clocks: list[tuple[int, tuple[ir.FiniteType, ...], object]] = [
            (clk.offset, clk.domain, clk.name) for clk in self.spec.clocks]
        cell, clock = self.spec.state_size, self.spec.clock_count
        for resp in self.spec.responses:
            dom = tuple(ft for _, ft in resp.params)
            cells.append((cell, dom, None, ("pending", resp.name)))
            clocks.append((clock, dom, ("observer", resp.name)))
            cell += ir.domain_size(dom)
            clock += ir.domain_size(dom)
        return SortCanonizer(sym_types, cells, clocks, self._permutation)

    def symmetries(self) -> list[Symmetry]:
        """Every non-identity permutation of the values of the symmetric types (none
        when a fault may depend on their order: see :attr:`symmetry_off`; none either
        beyond :data:`MAX_PERMUTATIONS`: enumerate them only for small groups, and
        use :attr:`canonizer` otherwise)."""
        sym_types = [t for t in self.spec.types if t.symmetric and t.size > 1]
        if not sym_types or self.symmetry_off is not None:
            return []
        if math.prod(math.factorial(t.size) for t in sym_types) > MAX_PERMUTATIONS:
            return []
        out: list[Symmetry] = []
        perms_per_type = [list(itertools.permutations(t.values())) for t in sym_types]
        for combo in itertools.product(*perms_per_type):
            if all(p == tuple(t.values()) for t, p in zip(sym_types, combo, strict=True)):
                continue
            out.append(self._permutation(tuple(combo)))
        return out

    def leadsto_orbits(self) -> list[tuple[int, list[Symmetry]]]:
        """Per instance of :attr:`leadsto_names`: the first instance of its orbit under
        :meth:`symmetries` (the instances a permutation maps onto one another hold or
        fail together) and the permutations that map that first instance onto itself
        (they leave its ``P`` and ``Q`` unchanged: a symmetric value cannot be named).
        Empty without symmetries."""
        sym_types = [t for t in self.spec.types if t.symmetric and t.size > 1]
        syms = self.symmetries()
        if not syms:
            return []
        combos = [c for c in itertools.product(
            *(list(itertools.permutations(t.values())) for t in sym_types))
            if not all(p == tuple(t.values()) for t, p in zip(sym_types, c, strict=True))]
        tix = {t: k for k, t in enumerate(sym_types)}
        where = {(name, idx): k for k, (name, _, idx) in enumerate(self._leadsto_args)}

        def image(k: int, combo: tuple[tuple[int, ...], ...]) -> int:
            name, dom, idx = self._leadsto_args[k]
            moved = tuple(combo[tix[ft]][v] if ft in tix else v
                          for ft, v in zip(dom, idx, strict=True))
            return where[(name, moved)]

        out: list[tuple[int, list[Symmetry]]] = []
        for k in range(len(self._leadsto_args)):
            first = min([k, *(image(k, c) for c in combos)])
            fixers = [sym for c, sym in zip(combos, syms, strict=True) if image(first, c) == first]
            out.append((first, fixers))
        return out

    @functools.cached_property
    def _perm_layout(self) -> tuple[list[ir.FiniteType], list[Any], list[Any], list[Any]]:
        """What a permutation moves, precomputed: per family of cells, clocks and event
        instances with symmetric indices, each member's position and index, and the
        stride of each symmetric index position."""
        sym_types = [t for t in self.spec.types if t.symmetric and t.size > 1]
        tix = {t: k for k, t in enumerate(sym_types)}

        def family(first: int, domain: tuple[ir.FiniteType, ...]) -> Any:
            strides = [0] * len(domain)
            acc = 1
            for p in range(len(domain) - 1, -1, -1):
                strides[p] = acc
                acc *= domain[p].size
            moves = [(p, tix[ft], strides[p]) for p, ft in enumerate(domain) if ft in tix]
            if not moves:
                return None
            members = [(first + ir.cell_index(domain, idx), idx)
                       for idx in ir.domain_points(domain)]
            return (members, moves)

        cells: list[Any] = []
        clocks: list[Any] = []
        for var in self.spec.vars:
            vk = tix.get(var.value.base, -1)
            cells.append((var.offset, var.size, family(var.offset, var.domain), vk))
        for clk in self.spec.clocks:
            fam = family(clk.offset, clk.domain)
            if fam is not None:
                clocks.append(fam)
        cell, clock = self.spec.state_size, self.spec.clock_count
        for resp in self.spec.responses:
            dom = tuple(ft for _, ft in resp.params)
            n = ir.domain_size(dom)
            cells.append((cell, n, family(cell, dom), -1))
            fam = family(clock, dom)
            if fam is not None:
                clocks.append(fam)
            cell += n
            clock += n
        events: list[Any] = []
        for i, inst in enumerate(self._instances):
            dom = tuple(ft for _, ft in self.spec.events[inst.event].params)
            moves = [(p, tix[ft]) for p, ft in enumerate(dom) if ft in tix]
            if moves:
                events.append((i, inst.event, inst.args, moves))
        return sym_types, cells, clocks, events

    def _permutation(self, images: tuple[tuple[int, ...], ...]) -> Symmetry:
        """The :class:`Symmetry` moving value ``v`` of the ``k``-th symmetric type to
        ``images[k][v]``."""
        _, cells, clock_fams, events = self._perm_layout
        src = list(range(self.state_size))
        valmaps: list[tuple[int, ...] | None] = [None] * self.state_size
        for first, size, fam, vk in cells:
            if vk >= 0:
                vm = (*images[vk], ir.NONE)
                valmaps[first:first + size] = [vm] * size
            if fam is None:
                continue
            members, moves = fam
            for old, idx in members:
                src[_moved(old, idx, moves, images)] = old
        clocks = list(range(len(self.clock_names)))
        for members, moves in clock_fams:
            for old, idx in members:
                clocks[old] = _moved(old, idx, moves, images)
        evs = list(range(len(self._instances)))
        instance_of = self._instance_of
        for i, event, args, moves in events:
            img = list(args)
            for p, k in moves:
                img[p] = images[k][args[p]]
            evs[i] = instance_of[(event, tuple(img))]
        return Symmetry(tuple(src), tuple(valmaps), tuple(clocks), tuple(evs))

    def describe(self, s: State) -> dict[str, object]:
        """Variable name (with index) to readable value."""
        out: dict[str, object] = {}
        for var in self.spec.vars:
            for idx in ir.domain_points(var.domain):
                v = s[var.offset + ir.cell_index(var.domain, idx)]
                out[var.name + ir.show_index(var.domain, idx)] = var.value.show(v)
        return out

    def receive_of(self, e: int, s: State) -> tuple[str, tuple[int, ...]] | None:
        """The (sender ``actor.event``, arguments) whose message event instance ``e``
        consumes when fired from ``s``, or None if it has no ``receives``."""
        inst = self._instances[e]
        if inst.receives is None:
            return None
        decl = self.spec.events[inst.event]
        assert decl.receives is not None
        try:
            return decl.receives[0], tuple(inst.receives(s))
        except _Fault:
            return None

    def first_mention_permutation(self, events: Sequence[int]) -> Symmetry | None:
        """The renaming of symmetric values that makes them appear in the arguments of
        ``events`` in order (the first one mentioned becomes the type's first value, and
        so on; values never mentioned keep their order after them); None if it is the
        identity or there is no symmetry.  Traces are renamed by it for readability."""
        if self.canonizer is None:
            return None
        sym_types = self._perm_layout[0]
        tix = {t: k for k, t in enumerate(sym_types)}
        order: list[list[int]] = [[] for _ in sym_types]
        for e in events:
            inst = self._instances[e]
            for (_, ft), v in zip(self.spec.events[inst.event].params, inst.args, strict=True):
                k = tix.get(ft)
                if k is not None and v not in order[k]:
                    order[k].append(v)
        images: list[tuple[int, ...]] = []
        for k, t in enumerate(sym_types):
            seq = order[k] + [v for v in t.values() if v not in order[k]]
            img = [0] * t.size
            for pos, v in enumerate(seq):
                img[v] = pos
            images.append(tuple(img))
        if all(img == tuple(range(len(img))) for img in images):
            return None
        return self._permutation(tuple(images))

    def instance(self, e: int) -> tuple[ir.Event, tuple[int, ...]]:
        """The event declaration and argument values of event instance ``e``."""
        inst = self._instances[e]
        return self.spec.events[inst.event], inst.args

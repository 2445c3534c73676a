"""A tree-walking interpreter of the typed IR: the reference semantics of a spec.

:class:`InterpretedModel` implements :class:`~checker.model.interface.TimedModel`
straight from a :class:`~checker.model.ir.Spec`, evaluating guards, statements,
deadlines, invariants and observers by walking their expressions.  It shares no
code with :mod:`checker.model.compiled` (which generates Python source and splits
guards ahead of time); it is slow and meant to be obviously right, so that the
differential tests can compare the compiled model with it state by state and run
the integer-time reference explorer on it.

The semantics it implements, in one place:

* Values are ints (``bool`` is 0/1, ``none`` is -1); reading a map at an index
  outside its domain, dereferencing ``none`` (``Some``) or leaving a range
  (``InRange``) is a run-time model error.
* ``and``, ``or`` and ``=>`` evaluate left to right and short-circuit;
  ``forall``/``exists`` evaluate their body for each value in order and stop
  at the first false/true; ``e in {a, b}`` evaluates ``e`` then every option;
  every other operator evaluates all its operands, left to right.
* A guard is read the same way, at a discrete state and for every clock
  valuation at once: a clock atom's index is evaluated when the reading reaches
  it, and the atom itself is neither true nor false (three-valued logic), so
  ``a or b`` reads ``b`` unless ``a`` is true whatever the clocks are, and
  ``a and b`` reads ``b`` unless ``a`` is false whatever the clocks are.  The
  result is a disjunction of conjunctions of clock atoms: one edge each.
* A body runs its statements in order on a copy of the state; an assignment
  evaluates its value, then its index; the first failing ``assert`` ends the
  body with its message.
* Bounded responses ``P leadsto Q within T`` are observed after every event
  (and in the initial state): with one ``pending`` cell and one observer clock
  per instance, after the state's variables; a pending obligation is discharged
  when ``Q`` holds, and a new one starts (resetting the clock) when ``P`` holds
  and ``Q`` does not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from checker.model import ir
from checker.model.interface import (
    GT,
    NEGATED_OP,
    ClockAtom,
    Edge,
    Hazard,
    LinExpr,
    ModelRuntimeError,
    Param,
    QueryMatch,
    State,
    Symmetry,
    Violation,
)
from checker.model.ir import BinaryOp, Quantifier, UnaryOp

Env = dict[int, int]
Conj = list[ClockAtom]


def _dedup(parts: Sequence[Sequence[ClockAtom]]) -> tuple[tuple[ClockAtom, ...], ...]:
    """Convex parts without repeats, in order; only ``()`` if one part has no atom (it
    covers every other one)."""
    if any(not p for p in parts):
        return ((),)
    return tuple(dict.fromkeys(tuple(p) for p in parts))


class Fault(Exception):
    """A run-time model error met while evaluating an expression or running a statement
    (its message is the model error's)."""


_STRICT: dict[BinaryOp, Callable[[int, int], int]] = {
    BinaryOp.ADD: lambda a, b: a + b,
    BinaryOp.SUB: lambda a, b: a - b,
    BinaryOp.MUL: lambda a, b: a * b,
    BinaryOp.EQ: lambda a, b: int(a == b),
    BinaryOp.NE: lambda a, b: int(a != b),
    BinaryOp.LT: lambda a, b: int(a < b),
    BinaryOp.LE: lambda a, b: int(a <= b),
    BinaryOp.GT: lambda a, b: int(a > b),
    BinaryOp.GE: lambda a, b: int(a >= b),
}
"""The binary operators that evaluate both operands and cannot fault."""


def _label(name: str, domain: tuple[ir.FiniteType, ...], idx: tuple[int, ...]) -> str:
    return name + "(" + ", ".join(t.show(v) for t, v in zip(domain, idx, strict=True)) + ")"


def _env(idx: tuple[int, ...]) -> Env:
    # Parameters take local slots 0, 1, ... in declaration order.
    return dict(enumerate(idx))


class InterpretedModel:
    """A specification with concrete parameter values, run by walking its IR."""

    def __init__(self, spec: ir.Spec, values: Mapping[str, Fraction] | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.params: dict[str, Param] = {p.name: p for p in spec.params}
        self.param_constraints = spec.assumes
        given = dict(values or {})
        self.values: dict[str, Fraction] = {
            p.name: Fraction(given.get(p.name, p.default)) for p in spec.params
        }
        self._bound_ids: dict[LinExpr, int] = {}
        self.bounds: list[LinExpr] = []
        self.clock_names: list[str] = []
        self._clock_base: dict[str, int] = {}
        self._var_base: dict[str, int] = {}
        self._observers: list[tuple[ir.Response, tuple[int, ...], int, int, str]] = []
        """Observers: (response, instance index, pending cell, observer clock, label)."""
        self._layout_clocks()
        self.state_size = self._layout_observers(self._layout_vars())
        self._events: list[tuple[ir.Event, tuple[int, ...]]] = []
        self.event_names: list[str] = []
        self._instantiate_events()
        self.event_count = len(self._events)
        self._number_bounds()
        self._eval_kind: dict[type, Callable[[Any, Sequence[int], Env], int]] = {
            ir.Const: self._eval_const,
            ir.Local: self._eval_local,
            ir.Read: self._eval_read,
            ir.Some: self._eval_some,
            ir.InRange: self._eval_in_range,
            ir.Unary: self._eval_unary,
            ir.Binary: self._eval_binary,
            ir.Member: self._eval_member,
            ir.Quant: self._eval_quant,
            ir.IndexCheck: self._eval_index_check,
        }

    def _layout_clocks(self) -> None:
        """Number the clock instances, family by family."""
        for clk in self.spec.clocks:
            self._clock_base[clk.name] = len(self.clock_names)
            for idx in ir.domain_points(clk.domain):
                self.clock_names.append(clk.name + ir.show_index(clk.domain, idx))

    def _layout_vars(self) -> int:
        """Place the variables' cells in the state; the number of cells."""
        size = 0
        for var in self.spec.vars:
            self._var_base[var.name] = size
            size += ir.domain_size(var.domain)
        return size

    def _layout_observers(self, size: int) -> int:
        """Give each response instance a pending cell after the ``size`` cells of the
        variables and an observer clock; the state's size."""
        for resp in self.spec.responses:
            dom = tuple(ft for _, ft in resp.params)
            for idx in ir.domain_points(dom):
                label = resp.name + ir.show_index(dom, idx)
                self.clock_names.append(f"<{label}>")
                self._observers.append((resp, idx, size, len(self.clock_names) - 1, label))
                size += 1
        return size

    def _instantiate_events(self) -> None:
        """One event instance per combination of its parameters, with its label."""
        for ev in self.spec.events:
            dom = tuple(ft for _, ft in ev.params)
            for idx in ir.domain_points(dom):
                self._events.append((ev, idx))
                self.event_names.append(_label(ev.label, dom, idx))

    def _number_bounds(self) -> None:
        """Number the bounds of guards, deadlines, responses and queries, in that order."""
        for ev in self.spec.events:
            for x in ir.walk(ev.guard):
                if isinstance(x, ir.ClockTest):
                    self._bound(x.bound)
        for dl in self.spec.deadlines:
            for ct in dl.atoms:
                self._bound(ct.bound)
        for resp in self.spec.responses:
            self._bound(resp.within)
        for query in self.spec.queries:
            for x in ir.walk(query.expr):
                if isinstance(x, ir.ClockTest):
                    self._bound(x.bound)

    def _bound(self, b: LinExpr) -> int:
        got = self._bound_ids.get(b)
        if got is None:
            got = self._bound_ids[b] = len(self.bounds)
            self.bounds.append(b)
        return got

    # ---- expressions ---------------------------------------------------------------
    def _cell(self, domain: tuple[ir.FiniteType, ...], index: tuple[ir.Expr, ...],
              s: Sequence[int], env: Env, what: str) -> int:
        pos = 0
        for ft, e in zip(domain, index, strict=True):
            v = self.eval(e, s, env)
            if not ft.lo <= v <= ft.hi:
                raise Fault(f"index {v} of {what} outside {ft}")
            pos = pos * ft.size + (v - ft.lo)
        return pos

    def eval(self, e: ir.Expr, s: Sequence[int], env: Env) -> int:
        """The value of data expression ``e`` in state ``s`` with the local slots bound by
        ``env``; raises :class:`Fault`."""
        kind = self._eval_kind.get(e.__class__)
        if kind is None:
            raise AssertionError(f"cannot evaluate {type(e).__name__} as data")
        return kind(e, s, env)

    @staticmethod
    def _eval_const(e: ir.Const, s: Sequence[int], env: Env) -> int:
        """A constant."""
        return e.value

    @staticmethod
    def _eval_local(e: ir.Local, s: Sequence[int], env: Env) -> int:
        """A bound name's value."""
        return env[e.slot]

    def _eval_read(self, e: ir.Read, s: Sequence[int], env: Env) -> int:
        """A variable's cell."""
        base = self._var_base[e.var.name]
        return s[base + self._cell(e.var.domain, e.index, s, env, e.var.name)]

    def _eval_some(self, e: ir.Some, s: Sequence[int], env: Env) -> int:
        """An optional value known not to be ``none``."""
        v = self.eval(e.operand, s, env)
        if v == ir.NONE:
            raise Fault(f"`none` dereferenced at {e.site}")
        return v

    def _eval_in_range(self, e: ir.InRange, s: Sequence[int], env: Env) -> int:
        """A value checked to be within its range."""
        v = self.eval(e.operand, s, env)
        if not e.lo <= v <= e.hi:
            raise Fault(e.fault(v))
        return v

    def _eval_unary(self, e: ir.Unary, s: Sequence[int], env: Env) -> int:
        """``not e`` or ``-e``."""
        v = self.eval(e.operand, s, env)
        return int(not v) if e.op == UnaryOp.NOT else -v

    def _eval_binary(self, e: ir.Binary, s: Sequence[int], env: Env) -> int:
        """A binary operation: the logical ones short-circuit, the others evaluate both
        operands, left to right."""
        op = e.op
        left = self.eval(e.left, s, env)
        if op == BinaryOp.AND:
            return int(bool(left) and bool(self.eval(e.right, s, env)))
        if op == BinaryOp.OR:
            return int(bool(left) or bool(self.eval(e.right, s, env)))
        if op == BinaryOp.IMPLIES:
            return int(not left or bool(self.eval(e.right, s, env)))
        right = self.eval(e.right, s, env)
        strict = _STRICT.get(op)
        if strict is not None:
            return strict(left, right)
        if op in (BinaryOp.DIV, BinaryOp.MOD):
            try:
                return ir.divide(op, left, right, e.site)
            except ZeroDivisionError as exc:
                raise Fault(str(exc)) from None
        raise AssertionError(f"operator {op}")

    def _eval_member(self, e: ir.Member, s: Sequence[int], env: Env) -> int:
        """``e in {a, b}``: ``e``, then every option."""
        v = self.eval(e.value, s, env)
        options = [self.eval(o, s, env) for o in e.options]
        return int(v in options)

    def _eval_quant(self, e: ir.Quant, s: Sequence[int], env: Env) -> int:
        """``forall`` / ``exists``, stopping at the first false / true body."""
        want = e.kind == Quantifier.EXISTS
        for v in e.type.values():
            if bool(self.eval(e.body, s, {**env, e.slot: v})) == want:
                return int(want)
        return int(not want)

    def _eval_index_check(self, e: ir.IndexCheck, s: Sequence[int], env: Env) -> int:
        """True, once every index is evaluated (each may fault)."""
        for i in e.index:
            self.eval(i, s, env)
        return 1

    def atom(self, ct: ir.ClockTest, s: Sequence[int], env: Env, negated: bool = False
             ) -> ClockAtom:
        """The clock atom of ``ct`` (of its negation if ``negated``) in state ``s``: its
        clock index evaluated; raises :class:`Fault`."""
        pos = self._cell(ct.clock.domain, ct.index, s, env, ct.clock.name)
        op = NEGATED_OP[ct.op] if negated else ct.op
        return ClockAtom(self._clock_base[ct.clock.name] + pos, op, self._bound(ct.bound))

    def deadline_atoms(self, dl: ir.Deadline, idx: tuple[int, ...], s: Sequence[int]
                       ) -> tuple[ClockAtom, ...] | None:
        """The upper bounds of deadline instance ``dl(idx)`` in state ``s``, or None when
        its ``while`` condition does not hold there; raises :class:`Fault`."""
        env = _env(idx)
        if not self.eval(dl.cond, s, env):
            return None
        return tuple(self.atom(ct, s, env) for ct in dl.atoms)

    def guard(self, e: ir.Expr, neg: bool, s: Sequence[int], env: Env) -> list[Conj]:
        """The convex parts of ``e`` (of ``not e`` if ``neg``) in state ``s``, read left
        to right with clock atoms undecided; an empty list is "false"."""
        if isinstance(e, ir.ClockTest):
            return [[self.atom(e, s, env, neg)]]
        if isinstance(e, ir.Unary) and e.op == UnaryOp.NOT:
            return self.guard(e.operand, not neg, s, env)
        if isinstance(e, ir.Binary) and e.op.logical:
            if e.op == BinaryOp.IMPLIES:
                first = self.guard(e.left, not neg, s, env)
                disjunction = not neg
            else:
                first = self.guard(e.left, neg, s, env)
                disjunction = (e.op == BinaryOp.OR) != neg
            return self._combine(first, lambda: self.guard(e.right, neg, s, env), disjunction)
        if isinstance(e, ir.Quant):
            disjunction = (e.kind == Quantifier.EXISTS) != neg
            acc: list[Conj] | None = None
            for v in e.type.values():
                body = functools.partial(self.guard, e.body, neg, s, {**env, e.slot: v})
                acc = body() if acc is None else self._combine(acc, body, disjunction)
            assert acc is not None
            return acc
        return [[]] if bool(self.eval(e, s, env)) != neg else []

    @staticmethod
    def _combine(first: list[Conj], rest: Callable[[], list[Conj]], disjunction: bool
                 ) -> list[Conj]:
        if disjunction:
            if any(not c for c in first):  # true whatever the clocks: the rest is not read
                return first
            return first + rest()
        if not first:  # false whatever the clocks
            return []
        second = rest()
        return [a + b for a in first for b in second]

    # ---- statements ----------------------------------------------------------------
    def _run(self, body: Sequence[ir.Stmt], n: list[int], resets: list[int],
             env: Env) -> str | None:
        for st in body:
            if isinstance(st, ir.Assign):
                value = self.eval(st.value, n, env)
                var = st.var
                pos = self._cell(var.domain, st.index, n, env, var.name)
                if var.value.base.kind == "bool":
                    value = int(bool(value))
                n[self._var_base[var.name] + pos] = value
            elif isinstance(st, ir.ResetClock):
                pos = self._cell(st.clock.domain, st.index, n, env, st.clock.name)
                resets.append(self._clock_base[st.clock.name] + pos)
            elif isinstance(st, ir.AssertStmt):
                if not self.eval(st.cond, n, env):
                    return self._message(st, n, env)
            elif isinstance(st, ir.IfStmt):
                branch = st.then if self.eval(st.cond, n, env) else st.orelse
                failure = self._run(branch, n, resets, env)
                if failure is not None:
                    return failure
            elif isinstance(st, ir.Broadcast):
                failure = self._broadcast(st, n, resets, env)
                if failure is not None:
                    return failure
            else:  # pragma: no cover
                raise AssertionError(type(st).__name__)
        return None

    def _broadcast(self, st: ir.Broadcast, n: list[int], resets: list[int],
                   env: Env) -> str | None:
        """Every receiver binding whose guard holds now takes part, after the sender."""
        ready: list[list[Env]] = []
        for rc in st.receivers:
            mine: list[Env] = []
            for point in ir.domain_points(tuple(ft for _, ft in rc.slots)):
                bound = {**env, **{sl: v for (sl, _), v in zip(rc.slots, point, strict=True)}}
                if self.eval(rc.guard, n, bound):
                    mine.append(bound)
            ready.append(mine)
        taken: dict[str, set[int]] = {}
        for rc, mine in zip(st.receivers, ready, strict=True):
            if rc.instance is None:
                continue
            seen = taken.setdefault(rc.instance[0], set())
            for bound in mine:
                who = 0 if rc.instance[1] is None else bound[rc.instance[1]]
                if who in seen:
                    raise Fault(st.twice(rc.instance[0]))
                seen.add(who)
        failure = self._run(st.sender, n, resets, env)
        if failure is not None:
            return failure
        for rc, mine in zip(st.receivers, ready, strict=True):
            for bound in mine:
                failure = self._run(rc.body, n, resets, bound)
                if failure is not None:
                    return failure
        return None

    def _message(self, st: ir.AssertStmt, n: Sequence[int], env: Env) -> str:
        if not st.pieces and not st.holes:
            return st.text
        out: list[str] = []
        for i in range(max(len(st.pieces), len(st.holes))):
            if i < len(st.pieces):
                out.append(st.pieces[i])
            if i < len(st.holes):
                hole, vt = st.holes[i]
                v = self.eval(hole, n, env)
                out.append(str(v) if vt is None else vt.show(v))
        return "".join(out)

    def _observe(self, t: State, resets: list[int]) -> State:
        if not self._observers:
            return t
        cells = list(t)
        for resp, idx, cell, clock, _ in self._observers:
            env = _env(idx)
            try:
                done = bool(self.eval(resp.response, t, env))
                if t[cell]:
                    if done:
                        cells[cell] = 0
                elif self.eval(resp.trigger, t, env) and not done:
                    cells[cell] = 1
                    resets.append(clock)
            except Fault as f:
                raise ModelRuntimeError(str(f), None, t) from None
        return tuple(cells)

    # ---- TimedModel ----------------------------------------------------------------
    def initial_states(self) -> list[State]:
        """The one initial state: every variable at its initial value."""
        cells: list[int] = []
        for var in self.spec.vars:
            cells.extend([var.init] * ir.domain_size(var.domain))
        cells.extend([0] * len(self._observers))
        return [self._observe(tuple(cells), [])]

    def edges(self, s: State) -> list[Edge]:
        """One edge per convex part of each enabled event instance's guard."""
        out: list[Edge] = []
        for i, (ev, idx) in enumerate(self._events):
            env = _env(idx)
            try:
                parts = self.guard(ev.guard, False, s, env)
                if not parts:
                    continue
                if len(parts) > 1 and any(not p for p in parts):
                    parts = [[]]  # an unconditional part covers every other one
                n = list(s)
                resets: list[int] = []
                failure = self._run(ev.body, n, resets, env)
            except Fault as f:
                raise ModelRuntimeError(f"{self.event_names[i]}: {f}", i, s) from None
            target = tuple(n)
            if failure is None:
                target = self._observe(target, resets)
            rs = tuple(sorted(set(resets)))
            out.extend(Edge(i, tuple(p), rs, target, failure) for p in parts)
        return out

    def deadlines(self, s: State) -> list[ClockAtom]:
        """The upper bounds of every deadline whose ``while`` holds in ``s``."""
        out: list[ClockAtom] = []
        for dl in self.spec.deadlines:
            dom = tuple(ft for _, ft in dl.params)
            for idx in ir.domain_points(dom):
                try:
                    atoms = self.deadline_atoms(dl, idx, s)
                except Fault as f:
                    raise ModelRuntimeError(f"deadline: {f}", None, s) from None
                if atoms is not None:
                    out.extend(atoms)
        return out

    def violations(self, s: State) -> list[Violation]:
        """The invariant instances ``s`` breaks."""
        out: list[Violation] = []
        for inv in self.spec.invariants:
            dom = tuple(ft for _, ft in inv.params)
            for idx in ir.domain_points(dom):
                label = inv.name + ir.show_index(dom, idx)
                try:
                    ok = self.eval(inv.expr, s, _env(idx))
                except Fault as f:
                    raise ModelRuntimeError(f"invariant {label}: {f}", None, s) from None
                if not ok:
                    out.append(Violation(label, inv.broken()))
        return out

    @property
    def query_names(self) -> list[str]:
        """The ``reachable`` queries, in declaration order."""
        return [q.name for q in self.spec.queries]

    def queries(self, s: State) -> list[QueryMatch]:
        """The ``reachable`` queries whose data part holds in ``s``, each with the convex
        clock parts under which it holds (read left to right, as a guard is)."""
        out: list[QueryMatch] = []
        for i, q in enumerate(self.spec.queries):
            try:
                parts = self.guard(q.expr, False, s, {})
            except Fault as f:
                raise ModelRuntimeError(f"reachable {q.name}: {f}", None, s) from None
            if parts:
                out.append(QueryMatch(i, _dedup(parts)))
        return out

    def hazards(self, s: State) -> list[Hazard]:
        """Pending obligations: broken once their observer clock passes the bound."""
        out: list[Hazard] = []
        for resp, _, cell, clock, label in self._observers:
            if s[cell]:
                within = self._bound(resp.within)
                out.append(Hazard(label, f"no response within {resp.within}",
                                  (ClockAtom(clock, GT, within),)))
        return out

    @property
    def leadsto_names(self) -> list[str]:
        """A label per instance of an unbounded liveness property, e.g. ``served[A]``."""
        out: list[str] = []
        for lt in self.spec.leadsto:
            dom = tuple(ft for _, ft in lt.params)
            out.extend(lt.name + ir.show_index(dom, idx) for idx in ir.domain_points(dom))
        return out

    def leadsto(self, s: State) -> list[tuple[bool, bool]]:
        """For each instance of :attr:`leadsto_names`: whether ``P`` and ``Q`` hold in
        ``s`` (``P`` first, then ``Q``, each evaluated whole)."""
        out: list[tuple[bool, bool]] = []
        for lt in self.spec.leadsto:
            dom = tuple(ft for _, ft in lt.params)
            for idx in ir.domain_points(dom):
                label = lt.name + ir.show_index(dom, idx)
                try:
                    p = bool(self.eval(lt.trigger, s, _env(idx)))
                    q = bool(self.eval(lt.response, s, _env(idx)))
                except Fault as f:
                    raise ModelRuntimeError(f"property {label}: {f}", None, s) from None
                out.append((p, q))
        return out

    @property
    def fair_events(self) -> frozenset[int]:
        """The weakly fair event instances (``fair event``)."""
        return frozenset(i for i, (ev, _) in enumerate(self._events) if ev.fair)

    def symmetries(self) -> list[Symmetry]:
        """None: the reference semantics does not reduce."""
        return []

    def describe(self, s: State) -> dict[str, object]:
        """Variable name (with index) to readable value."""
        out: dict[str, object] = {}
        for var in self.spec.vars:
            base = self._var_base[var.name]
            for k, idx in enumerate(ir.domain_points(var.domain)):
                out[var.name + ir.show_index(var.domain, idx)] = var.value.show(s[base + k])
        return out

"""Export a spec as a network of TChecker processes, for TChecker to explore itself.

Where :mod:`checker.export` unfolds every discrete state into one automaton, this
module translates the elaborated spec (:class:`checker.model.ir.Spec`) structure
for structure, so the export stays as small as the spec:

* one process per actor, and per instance of a process type (``Worker_w1``), with
  one location ``run``; every event instance (its parameters fixed) is an edge of
  the process that fires it, one edge per convex branch of its guard: the data
  condition and the clock atoms in ``provided``, the body in ``do``;
* every variable is a bounded ``int`` array (one cell per index, ``none`` is -1),
  every clock cell a clock (``since_post_A_0``);
* a handshake joined by a channel is a strong synchronisation of the sender's and
  the receiver's edges (the joined guard and body sit on the sender's edge, as in
  kvrace's semantics, where the receiver's part runs after the sender's), a
  broadcast a weak one with every instance of the receiving process type;
* a deadline instance is a process ``D_...`` with locations ``off`` and ``on``
  whose invariants (``while`` false; ``while`` true and the clock bound) make it
  follow its condition: every event synchronises with it weakly, and only the
  target that agrees with the new values is valid.  A deadline of urgency (on
  kvrace's hidden ``urgent`` clock, bound 0) is an ``on`` location with TChecker's
  ``urgent:`` attribute instead; the hidden clock is not exported;
* the process ``verdict`` reaches its location ``bad`` (label ``bad``) when an
  ``assert`` fails (the body sets ``failed`` and stops), an invariant breaks, or a
  bounded response's observer (an int and a clock, updated after every event as
  kvrace does) passes its bound; ``committed:`` keeps it from going on;
* each ``reachable`` query is a process ``Q_name`` whose committed location
  ``yes`` carries the query's name as its label.

So ``tck-reach -a covreach -l bad m.tck`` answers ``kvrace check --no-deadlock``.
Not exported: liveness (``leadsto``), model run-time errors (an index out of range,
``none`` dereferenced: TChecker discards such a transition, kvrace reports it), and
a receiver's twice-enabled broadcast.  This module reads the IR and the parameter
values only: it never runs an engine.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from checker.errors import KvraceError
from checker.model import ir
from checker.model.interface import LinExpr, scaled_bounds

_COMPARE = {ir.BinaryOp.EQ: operator.eq, ir.BinaryOp.NE: operator.ne,
            ir.BinaryOp.LT: operator.lt, ir.BinaryOp.LE: operator.le,
            ir.BinaryOp.GT: operator.gt, ir.BinaryOp.GE: operator.ge}

Term = int | str
"""A TChecker integer term, or a constant folded at export time."""

URGENT_CLOCK = "urgent"


class NetworkError(KvraceError):
    """The spec uses something the network export cannot express; ``flat_helps``:
    whether the flat export (``--flat``) can."""

    def __init__(self, message: str, flat_helps: bool = True) -> None:
        super().__init__(message)
        self.flat_helps = flat_helps


def _ident(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "x"
    return name if re.match(r"[A-Za-z_]", name) else "m_" + name


def _cond(t: Term) -> str:
    """``t`` as a TChecker condition (non-zero is true)."""
    return "1" if t == 1 else "0" if t == 0 else f"{t}!=0"


def _ite(c: str, a: Term, b: Term) -> Term:
    return a if c == "1" else b if c == "0" else f"(if {c} then {a} else {b})"


def _bool(t: Term) -> Term:
    """``t`` as 0 or 1."""
    if isinstance(t, int):
        return int(bool(t))
    return _ite(_cond(t), 1, 0)


@dataclass
class Network:
    """A spec as TChecker processes: the text and what it holds."""

    text: str
    processes: list[str] = field(default_factory=list)
    edges: int = 0
    events: int = 0


class _Builder:
    """The translation of one spec at fixed parameter values."""

    def __init__(self, spec: ir.Spec, values: Mapping[str, Fraction], queries: bool) -> None:
        self.spec = spec
        self.values = values
        self.queries = queries
        bounds: list[LinExpr] = []
        for ev in spec.events:
            for x in ir.walk(ev.guard):
                if isinstance(x, ir.ClockTest):
                    bounds.append(x.bound)
        for dl in spec.deadlines:
            bounds.extend(ct.bound for ct in dl.atoms)
        bounds.extend(r.within for r in spec.responses)
        try:
            ints, self.scale = scaled_bounds(bounds, values)
        except ValueError as exc:
            raise NetworkError(str(exc)) from None
        self.bound = dict(zip(bounds, ints, strict=True))
        self.var_name = {v.name: _ident("v_" + v.name) for v in spec.vars}
        self.locals = 0

    # ---- names ------------------------------------------------------------------------
    def clock_cell(self, clk: ir.Clock, index: Sequence[Term]) -> str:
        if any(not isinstance(i, int) for i in index):
            raise NetworkError(f"the clock {clk.name} is indexed by a variable")
        vals = [int(i) for i in index]
        return self.clock_label(clk, tuple(vals))

    @staticmethod
    def clock_label(clk: ir.Clock, idx: tuple[int, ...]) -> str:
        text = clk.name + ("_" + "_".join(t.show(v) for t, v in zip(clk.domain, idx,
                                                                    strict=True))
                           if idx else "")
        return "x_" + _ident(text)

    def cell(self, var: ir.Var, index: Sequence[Term]) -> str:
        pos: Term = 0
        for ft, t in zip(var.domain, index, strict=True):
            part: Term = t - ft.lo if isinstance(t, int) else (f"({t}-{ft.lo})" if ft.lo else t)
            if isinstance(pos, int) and isinstance(part, int):
                pos = pos * ft.size + part
            else:
                pos = f"({pos}*{ft.size}+{part})" if pos != 0 else part
        return f"{self.var_name[var.name]}[{pos}]"

    # ---- expressions --------------------------------------------------------------------
    def term(self, e: ir.Expr, env: dict[int, int]) -> Term:
        """The data expression ``e`` (locals bound by ``env``) as a term."""
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, ir.Local):
            return env[e.slot]
        if isinstance(e, ir.Read):
            return self.cell(e.var, [self.term(i, env) for i in e.index])
        if isinstance(e, ir.Some | ir.InRange):
            return self.term(e.operand, env)
        if isinstance(e, ir.IndexCheck):
            return 1
        if isinstance(e, ir.Unary):
            v = self.term(e.operand, env)
            if e.op == ir.UnaryOp.NOT:
                return 1 - int(bool(v)) if isinstance(v, int) else _ite(_cond(v), 0, 1)
            return -v if isinstance(v, int) else f"(-{v})"
        if isinstance(e, ir.Binary):
            return self.binary(e, env)
        if isinstance(e, ir.Member):
            v = self.term(e.value, env)
            acc: Term = 0
            for o in reversed(e.options):
                acc = self.either(self.compare(ir.BinaryOp.EQ, v, self.term(o, env)), acc)
            return acc
        if isinstance(e, ir.Quant):
            exists = e.kind == ir.Quantifier.EXISTS
            result: Term = 0 if exists else 1
            for val in reversed(e.type.values()):
                body = self.term(e.body, {**env, e.slot: val})
                result = self.either(body, result) if exists else self.both(body, result)
            return result
        raise NetworkError(f"cannot export {type(e).__name__} as data")

    @staticmethod
    def either(a: Term, b: Term) -> Term:
        if isinstance(a, int):
            return 1 if a else _bool(b)
        if b == 0:
            return _bool(a)
        return _ite(_cond(a), 1, _bool(b))

    @staticmethod
    def both(a: Term, b: Term) -> Term:
        if isinstance(a, int):
            return _bool(b) if a else 0
        if b == 1:
            return _bool(a)
        if b == 0:
            return 0
        return _ite(f"{_cond(a)}&&{_cond(b)}", 1, 0)

    @staticmethod
    def compare(op: ir.BinaryOp, a: Term, b: Term) -> Term:
        sym = {ir.BinaryOp.EQ: "==", ir.BinaryOp.NE: "!=", ir.BinaryOp.LT: "<",
               ir.BinaryOp.LE: "<=", ir.BinaryOp.GT: ">", ir.BinaryOp.GE: ">="}[op]
        if isinstance(a, int) and isinstance(b, int):
            return int(_COMPARE[op](a, b))
        return _ite(f"{a}{sym}{b}", 1, 0)

    def binary(self, e: ir.Binary, env: dict[int, int]) -> Term:
        op = e.op
        a = self.term(e.left, env)
        if op == ir.BinaryOp.AND:
            return self.both(a, self.term(e.right, env)) if a != 0 else 0
        if op == ir.BinaryOp.OR:
            return self.either(a, self.term(e.right, env)) if a != 1 else 1
        if op == ir.BinaryOp.IMPLIES:
            na = 1 - int(bool(a)) if isinstance(a, int) else _ite(_cond(a), 0, 1)
            return self.either(na, self.term(e.right, env))
        b = self.term(e.right, env)
        if op in (ir.BinaryOp.EQ, ir.BinaryOp.NE, ir.BinaryOp.LT, ir.BinaryOp.LE,
                  ir.BinaryOp.GT, ir.BinaryOp.GE):
            return self.compare(op, a, b)
        if isinstance(a, int) and isinstance(b, int):
            if op == ir.BinaryOp.ADD:
                return a + b
            if op == ir.BinaryOp.SUB:
                return a - b
            if op == ir.BinaryOp.MUL:
                return a * b
            if b != 0:
                return ir.divide(op, a, b, e.site)
        sym = {ir.BinaryOp.ADD: "+", ir.BinaryOp.SUB: "-", ir.BinaryOp.MUL: "*",
               ir.BinaryOp.DIV: "/", ir.BinaryOp.MOD: "%"}.get(op)
        if sym is None:
            raise NetworkError(f"cannot export the operator {op}")
        return f"({a}{sym}{b})"

    def atom(self, ct: ir.ClockTest, env: dict[int, int]) -> str:
        clock = self.clock_cell(ct.clock, [self.term(i, env) for i in ct.index])
        return f"{clock}{ct.op}{self.bound[ct.bound]}"

    # ---- footprints ---------------------------------------------------------------------
    def reads(self, e: ir.Node, env: dict[int, int]) -> set[tuple[str, int | None]]:
        """The variable cells ``e`` reads (``None``: a cell chosen at run time)."""
        out: set[tuple[str, int | None]] = set()
        for x in ir.walk(e):
            if isinstance(x, ir.Read):
                out.add((x.var.name, self.position(x.var, x.index, env)))
        return out

    def writes(self, stmts: Sequence[ir.Stmt], env: dict[int, int]
               ) -> set[tuple[str, int | None]]:
        """The variable cells ``stmts`` may write."""
        out: set[tuple[str, int | None]] = set()
        for st in stmts:
            for x in ir.walk(st):
                if isinstance(x, ir.Assign):
                    out.add((x.var.name, self.position(x.var, x.index, env)))
        return out

    def position(self, var: ir.Var, index: Sequence[ir.Expr], env: dict[int, int]
                 ) -> int | None:
        pos = 0
        for ft, e in zip(var.domain, index, strict=True):
            try:
                t = self.term(e, env)
            except (KeyError, NetworkError):
                return None  # a receiver's or quantifier's local: any cell
            if not isinstance(t, int):
                return None
            pos = pos * ft.size + (t - ft.lo)
        return pos

    # ---- statements ---------------------------------------------------------------------
    def body(self, stmts: Sequence[ir.Stmt], env: dict[int, int]) -> list[str]:
        """The statements; after an ``assert`` the rest runs only while ``failed`` is 0
        (kvrace stops an event at its first failed assert)."""
        out: list[str] = []
        for k, st in enumerate(stmts):
            out.extend(self.stmt(st, env))
            if self.may_fail(st) and k + 1 < len(stmts):
                rest = self.body(stmts[k + 1:], env)
                if rest:
                    out.append(f"if failed==0 then {';'.join(rest)} end")
                return out
        return out

    @staticmethod
    def may_fail(st: ir.Stmt) -> bool:
        return any(isinstance(x, ir.AssertStmt) for x in ir.walk(st))

    def stmt(self, st: ir.Stmt, env: dict[int, int]) -> list[str]:
        if isinstance(st, ir.Assign):
            value = self.term(st.value, env)
            if st.var.value.base.kind == "bool":
                value = _bool(value)
            return [f"{self.cell(st.var, [self.term(i, env) for i in st.index])}={value}"]
        if isinstance(st, ir.ResetClock):
            if st.clock.name == URGENT_CLOCK and not st.clock.domain:
                return []
            return [f"{self.clock_cell(st.clock, [self.term(i, env) for i in st.index])}=0"]
        if isinstance(st, ir.AssertStmt):
            c = self.term(st.cond, env)
            if c == 1:
                return []
            return [f"if {_cond(c)} then nop else failed=1 end" if c != 0 else "failed=1"]
        if isinstance(st, ir.IfStmt):
            c = self.term(st.cond, env)
            then, orelse = self.body(st.then, env), self.body(st.orelse, env)
            if c == 1:
                return then
            if c == 0:
                return orelse
            text = f"if {_cond(c)} then {';'.join(then) or 'nop'}"
            if orelse:
                text += f" else {';'.join(orelse)}"
            return [text + " end"]
        if isinstance(st, ir.Broadcast):
            return self.broadcast(st, env)
        raise NetworkError(f"cannot export the statement {type(st).__name__}")

    def broadcast(self, st: ir.Broadcast, env: dict[int, int]) -> list[str]:
        """Receivers ready before the sender's part, their parts after it."""
        ready: list[tuple[str, ir.Receiver, dict[int, int]]] = []
        out: list[str] = []
        for rc in st.receivers:
            for point in ir.domain_points(tuple(ft for _, ft in rc.slots)):
                bound = {**env, **{sl: v for (sl, _), v in zip(rc.slots, point, strict=True)}}
                g = self.term(rc.guard, bound)
                if g == 0:
                    continue
                self.locals += 1
                name = f"ready{self.locals}"
                out.append(f"local {name}={_bool(g)}")
                ready.append((name, rc, bound))
        out.extend(self.body(st.sender, env))
        for name, rc, bound in ready:
            part = self.body(rc.body, bound)
            if part:
                out.append(f"if {name}!=0 then {';'.join(part)} end")
        return out


def _instances(spec: ir.Spec) -> dict[str, tuple[ir.FiniteType, ...]]:
    """Each actor's instance type (a process type's ``A.loc`` domain), or ``()``."""
    out: dict[str, tuple[ir.FiniteType, ...]] = {a: () for a in spec.actors}
    for v in spec.vars:
        if v.name.endswith(".loc") and v.name[:-4] in out:
            out[v.name[:-4]] = v.domain
    return out


def _proc(actor: str, dom: tuple[ir.FiniteType, ...], value: int | None) -> str:
    if not dom or value is None:
        return "P_" + _ident(actor)
    return "P_" + _ident(f"{actor}_{dom[0].show(value)}")


Observer = tuple[ir.Response, dict[int, int], str, str]
"""A bounded response instance: the response, its locals, its int and its clock."""
Cells = set[tuple[str, int | None]]


@dataclass
class _Events:
    """The event instances as edges and synchronisations."""

    names: list[tuple[str, str]] = field(default_factory=list)
    """(TChecker event, kvrace event instance)."""
    edges: list[str] = field(default_factory=list)
    syncs: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    """(event, processes taking part strongly, weakly)."""
    writes: dict[str, Cells] = field(default_factory=dict)
    failing: list[tuple[str, str, list[str], list[str]]] = field(default_factory=list)
    """The failing twin of each event with an assert: (event, instance, strong, weak)."""


@dataclass
class _Deadlines:
    """The deadline processes: their declarations and the cells their conditions read."""

    lines: list[str] = field(default_factory=list)
    procs: list[str] = field(default_factory=list)
    reads: dict[str, Cells] = field(default_factory=dict)


def tchecker_network(spec: ir.Spec, values: Mapping[str, Fraction],
                     queries: bool = True) -> Network:
    """``spec`` at parameter ``values`` as a network of TChecker processes (see the
    module docstring).  Raises :class:`NetworkError` for what it cannot express."""
    b = _Builder(spec, values, queries)
    inst = _instances(spec)
    observers = _observers(spec)
    lines = _header(spec, values, b)
    lines.extend(_declarations(spec, b, observers))
    processes: list[str] = []
    for actor in spec.actors:
        dom = inst[actor]
        for value in (dom[0].values() if dom else [None]):
            name = _proc(actor, dom, value)
            processes.append(name)
            lines.append(f"process:{name}")
            lines.append(f"location:{name}:run{{initial:}}")
    ev = _events(spec, b, inst, _observe_text(b, observers))
    dl = _deadlines(spec, b)
    lines.extend(dl.lines)
    lines.append("process:verdict")
    lines.append("location:verdict:ok{initial: : invariant:failed==0}")
    lines.append("location:verdict:bad{committed: : labels:bad : invariant:failed==1}")
    lines.append("location:verdict:broken{committed: : labels:bad}")
    query_procs: list[tuple[str, str, str]] = []
    if queries:
        for q in spec.queries:
            if q.branches:
                raise NetworkError(f"reachable {q.name} (line {q.span.line}) tests clocks,"
                                   " which the export does not translate", flat_helps=False)
            t = b.term(q.expr, {})
            if t != 0:
                query_procs.append(("Q_" + _ident(q.name), _ident(q.name), _cond(t)))
    for pname, label, _ in query_procs:
        lines.append(f"process:{pname}")
        lines.append(f"location:{pname}:no{{initial:}}")
        lines.append(f"location:{pname}:yes{{committed: : labels:{label}}}")
    lines.append("")
    for name, label in ev.names:
        lines.append(f"# {name} is {label}")
        lines.append(f"event:{name}")
    lines.extend(_properties(spec, b, observers, query_procs, ev.edges))
    lines.append("")
    for fname, label, _, _ in ev.failing:
        lines.append(f"# {fname} is {label} failing an assert")
        lines.append(f"event:{fname}")
    lines.extend(_wiring(ev, dl))
    return Network("\n".join(lines) + "\n",
                   processes + dl.procs + ["verdict"] + [p for p, _, _ in query_procs],
                   len(ev.edges), len(ev.names))


def _header(spec: ir.Spec, values: Mapping[str, Fraction], b: _Builder) -> list[str]:
    lines = [f"# kvrace model {spec.name} as a network of processes (kvrace export --tchecker)"]
    if values:
        lines.append("# parameters: " + ", ".join(
            f"{k}={v.numerator if v.denominator == 1 else f'{v.numerator}/{v.denominator}'}"
            for k, v in values.items()))
    lines.append(f"# clock bounds are multiplied by {b.scale}")
    lines.append("# check: tck-reach -a covreach -l bad FILE")
    lines.append(f"system:{_ident(spec.name)}")
    lines.append("")
    return lines


def _observers(spec: ir.Spec) -> list[Observer]:
    out: list[Observer] = []
    for resp in spec.responses:
        dom = tuple(ft for _, ft in resp.params)
        for idx in ir.domain_points(dom):
            label = _ident(resp.name + "_" + "_".join(t.show(x) for t, x in zip(dom, idx,
                                                                             strict=True)))
            out.append((resp, dict(enumerate(idx)), f"pend_{label}", f"obs_{label}"))
    return out


def _declarations(spec: ir.Spec, b: _Builder, observers: list[Observer]) -> list[str]:
    """The ints (variables, ``failed``, observers) and the clocks."""
    lines: list[str] = []
    for v in spec.vars:
        base = v.value.base
        lo = min(base.lo, ir.NONE) if v.value.optional else base.lo
        size = ir.domain_size(v.domain)
        lines.append(f"# {b.var_name[v.name]} is {v.name} ({v.value})")
        lines.append(f"int:{size}:{lo}:{base.hi}:{v.init}:{b.var_name[v.name]}")
    lines.append("int:1:0:1:0:failed")
    for resp, env, pend, _ in observers:
        lines.append(f"int:1:0:1:{_eval_initial(b, resp, env)}:{pend}")
    for clk in spec.clocks:
        if clk.name == URGENT_CLOCK and not clk.domain:
            continue
        for idx in ir.domain_points(clk.domain):
            lines.append(f"# {b.clock_label(clk, idx)} is {clk.name}"
                         f"{ir.show_index(clk.domain, idx)}")
            lines.append(f"clock:1:{b.clock_label(clk, idx)}")
    for _, _, _, obs in observers:
        lines.append(f"clock:1:{obs}")
    lines.append("")
    return lines


def _parties(ev: ir.Event, idx: tuple[int, ...], inst: Mapping[str, tuple[ir.FiniteType, ...]]
             ) -> tuple[str, list[str], list[str]]:
    """The process firing an event instance, and those synchronising with it strongly
    (a handshake's receiver) and weakly (a broadcast's receivers)."""
    sender = ev.sync.sender if ev.sync is not None else ev.actor
    sdom = inst.get(sender, ())
    owner = _proc(sender, sdom, idx[0] if sdom and idx else None)
    strong: list[str] = []
    weak: list[str] = []
    if ev.sync is not None:
        for rcv in ev.sync.receivers:
            rdom = inst.get(rcv, ())
            if ev.sync.broadcast:
                weak.extend(_proc(rcv, rdom, x) for x in (rdom[0].values() if rdom else [None]))
            elif rdom and ev.sync.receiver_args:
                strong.append(_proc(rcv, rdom, idx[ev.sync.receiver_args[0]]))
            else:
                strong.append(_proc(rcv, rdom, None))
    strong = [p for p in strong if p != owner]
    weak = [p for p in weak if p != owner and p not in strong]
    return owner, strong, weak


def _events(spec: ir.Spec, b: _Builder, inst: Mapping[str, tuple[ir.FiniteType, ...]],
            observe: list[str]) -> _Events:
    out = _Events()
    n_event = 0
    for ev in spec.events:
        dom = tuple(ft for _, ft in ev.params)
        for idx in ir.domain_points(dom):
            env = dict(enumerate(idx))
            label = ev.label + ir.show_index(dom, idx)
            owner, strong, weak = _parties(ev, idx, inst)
            do = b.body(ev.body, env)
            if observe:
                do.append(f"if failed==0 then {';'.join(observe)} end")
            name = f"e{n_event}"
            n_event += 1
            mine: list[str] = []
            for br in ev.branches:
                data = b.term(br.data, env)
                if data == 0:
                    continue
                conj = [] if data == 1 else [_cond(data)]
                conj.extend(b.atom(ct, env) for ct in br.clocks)
                attrs = []
                if conj:
                    attrs.append("provided:" + "&&".join(conj))
                if do:
                    attrs.append("do:" + ";".join(do))
                mine.append(f"{{{' : '.join(attrs)}}}")
            if not mine:
                continue
            out.names.append((name, label))
            out.edges.extend(f"edge:{owner}:run:run:{name}{a}" for a in mine)
            out.edges.extend(f"edge:{p}:run:run:{name}" for p in strong + weak)
            out.syncs.append((name, [owner, *strong], weak))
            out.writes[name] = b.writes(ev.body, env)
            if any(b.may_fail(st) for st in ev.body):
                # The same event, when an assert fails: the verdict goes to `bad`
                # and every deadline process out of the way.
                fname = f"f{name[1:]}"
                out.edges.extend(f"edge:{owner}:run:run:{fname}{a}" for a in mine)
                out.edges.extend(f"edge:{p}:run:run:{fname}" for p in strong + weak)
                out.failing.append((fname, label, [owner, *strong], weak))
    return out


def _deadlines(spec: ir.Spec, b: _Builder) -> _Deadlines:
    out = _Deadlines()
    for dl in spec.deadlines:
        dom = tuple(ft for _, ft in dl.params)
        for idx in ir.domain_points(dom):
            env = dict(enumerate(idx))
            cond = b.term(dl.cond, env)
            if cond == 0:
                continue
            pname = "D_" + _ident(dl.name + ("_" + "_".join(t.show(x) for t, x in
                                                           zip(dom, idx, strict=True))
                                             if idx else ""))
            out.reads[pname] = b.reads(dl.cond, env)
            urgent = [ct for ct in dl.atoms if ct.clock.name == URGENT_CLOCK
                      and not ct.clock.domain]
            timed = [b.atom(ct, env) for ct in dl.atoms if ct not in urgent]
            on = [f"invariant:{_cond(cond)}" + "".join("&&" + a for a in timed)]
            if urgent:
                on.append("urgent:")
            out.procs.append(pname)
            out.lines.append(f"process:{pname}")
            out.lines.append(f"# {pname}: deadline {dl.name}{ir.show_index(dom, idx)}")
            out.lines.append(f"location:{pname}:off{{initial: : invariant:{cond}==0}}")
            out.lines.append(f"location:{pname}:on{{initial: : {' : '.join(on)}}}")
            out.lines.append(f"location:{pname}:gone{{}}")
    return out


def _properties(spec: ir.Spec, b: _Builder, observers: list[Observer],
                query_procs: list[tuple[str, str, str]], edges: list[str]) -> list[str]:
    """The events of broken invariants, late responses and reached queries (their
    edges are appended to ``edges``)."""
    lines: list[str] = []
    for inv in spec.invariants:
        dom = tuple(ft for _, ft in inv.params)
        for idx in ir.domain_points(dom):
            t = b.term(inv.expr, dict(enumerate(idx)))
            if t == 1:
                continue
            ename = f"violates_{_ident(inv.name + '_' + '_'.join(str(x) for x in idx))}"
            lines.append(f"event:{ename}")
            guard = "" if t == 0 else f"{{provided:{t}==0}}"
            edges.append(f"edge:verdict:ok:broken:{ename}{guard}")
    for resp, _, pend, obs in observers:
        ename = f"late_{pend[5:]}"
        lines.append(f"event:{ename}")
        edges.append(f"edge:verdict:ok:broken:{ename}"
                     f"{{provided:{pend}==1&&{obs}>{b.bound[resp.within]}}}")
    for pname, qname, cond in query_procs:
        ename = f"reach_{qname}"
        lines.append(f"event:{ename}")
        edges.append(f"edge:{pname}:no:yes:{ename}{{provided:{cond}}}")
    return lines


def _wiring(ev: _Events, dl: _Deadlines) -> list[str]:
    """Every edge, then the synchronisations: an event with the deadline processes
    whose condition reads a cell it may write (each choosing off or on; the others
    keep their location) and with the verdict; a failing twin with every deadline
    process (to ``gone``) and the verdict (to ``bad``)."""
    affected: dict[str, list[str]] = {}
    for name, _ in ev.names:
        mine = [p for p in dl.procs if _overlap(ev.writes[name], dl.reads[p])]
        affected[name] = mine
        for p in mine:
            for src in ("off", "on"):
                for dst in ("off", "on"):
                    ev.edges.append(f"edge:{p}:{src}:{dst}:{name}")
        ev.edges.append(f"edge:verdict:ok:ok:{name}")
    for fname, _, _, _ in ev.failing:
        for p in dl.procs:
            ev.edges.append(f"edge:{p}:off:gone:{fname}")
            ev.edges.append(f"edge:{p}:on:gone:{fname}")
        ev.edges.append(f"edge:verdict:ok:bad:{fname}")
    lines = [*ev.edges, ""]
    for name, strong, weak in ev.syncs:
        parts = [f"{p}@{name}" for p in strong]
        parts += [f"{p}@{name}?" for p in [*weak, *affected[name]]]
        parts.append(f"verdict@{name}")
        lines.append("sync:" + ":".join(parts))
    for fname, _, strong, weak in ev.failing:
        parts = [f"{p}@{fname}" for p in [*strong, *dl.procs, "verdict"]]
        parts += [f"{p}@{fname}?" for p in weak]
        lines.append("sync:" + ":".join(parts))
    return lines


def _overlap(a: set[tuple[str, int | None]], b: set[tuple[str, int | None]]) -> bool:
    """Whether two cell sets may share a cell."""
    for var, pos in a:
        for var2, pos2 in b:
            if var == var2 and (pos is None or pos2 is None or pos == pos2):
                return True
    return False


def _observe_text(b: _Builder, observers: list[tuple[ir.Response, dict[int, int], str, str]]
                  ) -> list[str]:
    """kvrace's observer update after an event: a pending response ends when its
    response holds; one starts (and resets its clock) when its trigger holds alone."""
    out: list[str] = []
    for resp, env, pend, obs in observers:
        r = b.term(resp.response, env)
        t = b.term(resp.trigger, env)
        start = b.both(t, 1 - int(bool(r)) if isinstance(r, int) else _ite(_cond(r), 0, 1))
        stop = f"if {_cond(r)} then {pend}=0 end" if r != 0 else "nop"
        begin = f"if {_cond(start)} then {pend}=1;{obs}=0 end" if start != 0 else "nop"
        out.append(f"if {pend}==1 then {stop} else {begin} end")
    return out


def _eval_initial(b: _Builder, resp: ir.Response, env: dict[int, int]) -> int:
    """Whether the observer of ``resp`` is pending in the initial state."""
    from checker.model.interp import InterpretedModel

    model = InterpretedModel(b.spec, b.values)
    state = model.initial_states()[0]
    trig = model.eval(resp.trigger, state, env)
    done = model.eval(resp.response, state, env)
    return int(bool(trig) and not done)


def count_lines(text: str, kind: str) -> Iterator[str]:
    """The declarations of ``kind`` (``edge``, ``process``, ...) in a TChecker text."""
    return (line for line in text.split("\n") if line.startswith(kind + ":"))


__all__ = ["Network", "NetworkError", "count_lines", "tchecker_network"]

"""Export a spec as a network of TChecker processes, for TChecker to explore itself.

Where :mod:`checker.export.flat` unfolds every discrete state into one automaton, this
module translates the elaborated spec (:class:`checker.model.ir.Spec`) structure
for structure, so the export stays as small as the spec:

* one process per actor, and per instance of a process type (``Worker_w1``);
* an instance of a process type has the type's locations (its ``A.loc`` cell's
  values) as TChecker locations, so that TChecker's clock bounds, computed per
  location of each process, are as local as in a model written for it: every event
  instance is an edge from each location (of each located process taking part)
  where its guard can hold, to the location its body leads to, under an event name
  of its own per such combination; a deadline on that location alone (a location's
  invariant, its urgency) is the location's invariant or ``urgent:``.  The
  location's int stays, for other processes' guards, deadlines and properties.
  A process keeps one location ``run`` (and the int alone) when another process's
  event sets its location, a body sets it to a value known only at run time, or a
  broadcast reaches it by a guard on more than its location (TChecker allows no
  guard on a weakly synchronised edge);
* every event instance (its parameters fixed) has one edge per convex branch of its
  guard: the data condition and the clock atoms in ``provided``, the body in ``do``,
  on the edge of the process whose clocks the guard compares (else the firing
  one's); another process taking part strongly has an unguarded edge with the resets
  of its own clocks that the body always makes (TChecker applies every edge's resets
  after every guard, so where they sit changes nothing but the clock bounds), and,
  where it leaves one location only, the guard requires its location's int to be
  there (for UPPAAL's channels);
* every variable is a bounded ``int`` array (one cell per index, ``none`` is -1),
  every clock cell a clock (``since_post_A_0``);
* a handshake joined by a channel is a strong synchronisation of the sender's and
  the receiver's edges (the body keeps kvrace's order, where the receiver's part
  runs after the sender's), a broadcast a weak one with every instance of the
  receiving process type;
* any other deadline instance is a process ``D_...`` with locations ``off`` and
  ``on`` whose invariants (``while`` false; ``while`` true and the clock bound) make
  it follow its condition: every event that writes a cell the condition reads
  synchronises with it weakly, and only the target that agrees with the new values
  is valid; it starts where the initial values put it.  A deadline of urgency (on
  kvrace's hidden ``urgent`` clock, bound 0) is an ``urgent:`` location instead; the
  hidden clock is not exported;
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

import contextlib
import dataclasses
import functools
import itertools
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from checker.diagnostics import Span
from checker.errors import KvraceError
from checker.export.terms import (
    FALSE,
    TRUE,
    Arith,
    ArithOp,
    Assign,
    Cell,
    Cmp,
    CmpOp,
    Cond,
    Conj,
    Decl,
    DeclKind,
    Edge,
    Event,
    EventKind,
    If,
    Ite,
    Local,
    Location,
    Name,
    Neg,
    NetModel,
    Nop,
    Process,
    ProcessKind,
    Stmt,
    Sync,
    Term,
    holds,
    initial_cells,
    tchecker_text,
)
from checker.model import ir
from checker.model.interface import LinExpr, scaled_bounds

_COMPARE = {ir.BinaryOp.EQ: operator.eq, ir.BinaryOp.NE: operator.ne,
            ir.BinaryOp.LT: operator.lt, ir.BinaryOp.LE: operator.le,
            ir.BinaryOp.GT: operator.gt, ir.BinaryOp.GE: operator.ge}
_CMP_OP = {ir.BinaryOp.EQ: CmpOp.EQ, ir.BinaryOp.NE: CmpOp.NE, ir.BinaryOp.LT: CmpOp.LT,
           ir.BinaryOp.LE: CmpOp.LE, ir.BinaryOp.GT: CmpOp.GT, ir.BinaryOp.GE: CmpOp.GE}
_ARITH_OP = {ir.BinaryOp.ADD: ArithOp.ADD, ir.BinaryOp.SUB: ArithOp.SUB,
             ir.BinaryOp.MUL: ArithOp.MUL, ir.BinaryOp.DIV: ArithOp.DIV,
             ir.BinaryOp.MOD: ArithOp.MOD}

URGENT_CLOCK = "urgent"


class NetworkError(KvraceError):
    """The spec uses something the network export cannot express; ``flat_helps``:
    whether the flat export (``--flat``) can; ``where``: the ``file:line:col`` of the
    construct, when known."""

    def __init__(self, message: str, flat_helps: bool = True, where: str = "") -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        self.flat_helps = flat_helps
        self.where = where


def _where(spec: ir.Spec, span: Span) -> str:
    return f"{spec.path}:{span.line}:{span.column}"


@contextlib.contextmanager
def _at(spec: ir.Spec, span: Span) -> Iterator[None]:
    """Give a :class:`NetworkError` raised inside the ``file:line:col`` of ``span``."""
    try:
        yield
    except NetworkError as exc:
        if exc.where:
            raise
        raise NetworkError(exc.message, exc.flat_helps, _where(spec, span)) from None


def _ident(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "x"
    return name if re.match(r"[A-Za-z_]", name) else "m_" + name


_FLIP = {CmpOp.EQ: CmpOp.NE, CmpOp.NE: CmpOp.EQ, CmpOp.LT: CmpOp.GE, CmpOp.LE: CmpOp.GT,
         CmpOp.GT: CmpOp.LE, CmpOp.GE: CmpOp.LT}


def _cond(t: Term) -> Cond:
    """``t`` as a condition (non-zero is true); a 0-or-1 choice on a condition is that
    condition (or its negation), so guards stay flat conjunctions of comparisons."""
    if isinstance(t, int):
        return TRUE if t else FALSE
    if isinstance(t, Ite) and t.then == 1 and t.orelse == 0:
        return t.cond
    if isinstance(t, Ite) and t.then == 0 and t.orelse == 1 and isinstance(t.cond, Cmp):
        return Cmp(_FLIP[t.cond.op], t.cond.left, t.cond.right)
    return Cmp(CmpOp.NE, t, 0)


def _conj(conds: Sequence[Cond]) -> Cond:
    """The conjunction of ``conds``, flattened, without ``TRUE``."""
    parts: list[Cond] = []
    for c in conds:
        if c == FALSE:
            return FALSE
        if isinstance(c, Conj):
            parts.extend(c.parts)
        elif c != TRUE:
            parts.append(c)
    return TRUE if not parts else parts[0] if len(parts) == 1 else Conj(tuple(parts))


def _ite(c: Cond, a: Term, b: Term) -> Term:
    return a if c == TRUE else b if c == FALSE else Ite(c, a, b)


def _bool(t: Term) -> Term:
    """``t`` as 0 or 1."""
    if isinstance(t, int):
        return int(bool(t))
    return _ite(_cond(t), 1, 0)


def _not(t: Term) -> Term:
    return 1 - int(bool(t)) if isinstance(t, int) else _ite(_cond(t), 0, 1)


@dataclass
class Network:
    """A spec as TChecker processes: the text and what it holds."""

    text: str
    processes: list[str] = field(default_factory=list)
    edges: int = 0
    events: int = 0
    model: NetModel | None = None
    """The network the text is written from."""


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
        self.inst = _instances(spec)
        self.known: dict[tuple[str, int], int] = {}
        """Cells whose value is known here (a process's location on one of its edges):
        reads of them are constants, and assignments to them keep them known while
        the value assigned is a constant."""
        self.tracked: frozenset[tuple[str, int]] = frozenset()
        """The cells :attr:`known` follows through a body."""
        self.owners: dict[str, str] = {}
        """Clock name to the process it belongs to (a process instance's local clock)."""
        self.pull: frozenset[str] = frozenset()
        """Broadcast receivers whose own clock resets sit on their own edges, not in the
        sender's body."""

    # ---- known cells --------------------------------------------------------------------
    def assume(self, cells: Mapping[tuple[str, int], int]) -> None:
        """Read ``cells`` as constants (and follow them through bodies) from now on."""
        self.known = dict(cells)
        self.tracked = frozenset(cells)

    def _assigned(self, target: Cell, value: Term) -> None:
        if not self.tracked or target.array not in {a for a, _ in self.tracked}:
            return
        if isinstance(target.index, int):
            key = (target.array, target.index)
            if key in self.tracked:
                if isinstance(value, int):
                    self.known[key] = value
                else:
                    self.known.pop(key, None)
            return
        for key in [k for k in self.known if k[0] == target.array]:
            del self.known[key]

    def _branches(self, then: Callable[[], list[Stmt]], orelse: Callable[[], list[Stmt]]
                  ) -> tuple[list[Stmt], list[Stmt]]:
        """Both arms of a choice made at run time; afterwards a cell stays known only
        with the same value after either arm."""
        before = dict(self.known)
        a = then()
        after_a, self.known = self.known, before
        b = orelse()
        self.known = {k: v for k, v in after_a.items() if self.known.get(k) == v}
        return a, b

    def owned_reset(self, s: Stmt, proc: str) -> bool:
        """Whether ``s`` resets a clock of ``proc``."""
        return (isinstance(s, Assign) and isinstance(s.target, Name) and s.value == 0
                and self.owners.get(s.target.text) == proc)

    # ---- names ------------------------------------------------------------------------
    def clock_cell(self, clk: ir.Clock, index: Sequence[Term]) -> Name:
        if any(not isinstance(i, int) for i in index):
            raise NetworkError(f"the clock {clk.name} is indexed by a variable")
        vals = [int(i) for i in index if isinstance(i, int)]
        return Name(self.clock_label(clk, tuple(vals)))

    @staticmethod
    def clock_label(clk: ir.Clock, idx: tuple[int, ...]) -> str:
        text = clk.name + ("_" + "_".join(t.show(v) for t, v in zip(clk.domain, idx,
                                                                    strict=True))
                           if idx else "")
        return "x_" + _ident(text)

    def cell(self, var: ir.Var, index: Sequence[Term]) -> Cell:
        pos: Term = 0
        for ft, t in zip(var.domain, index, strict=True):
            part: Term = (t - ft.lo if isinstance(t, int)
                          else Arith(ArithOp.SUB, t, ft.lo) if ft.lo else t)
            if isinstance(pos, int) and isinstance(part, int):
                pos = pos * ft.size + part
            else:
                pos = (Arith(ArithOp.ADD, Arith(ArithOp.MUL, pos, ft.size, wrap=False), part)
                       if pos != 0 else part)
        return Cell(self.var_name[var.name], pos)

    # ---- expressions --------------------------------------------------------------------
    def term(self, e: ir.Expr, env: dict[int, int]) -> Term:
        """The data expression ``e`` (locals bound by ``env``) as a term."""
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, ir.Local):
            return env[e.slot]
        if isinstance(e, ir.Read):
            cell = self.cell(e.var, [self.term(i, env) for i in e.index])
            if isinstance(cell.index, int):
                return self.known.get((cell.array, cell.index), cell)
            return cell
        if isinstance(e, ir.Some | ir.InRange):
            return self.term(e.operand, env)
        if isinstance(e, ir.IndexCheck):
            return 1
        if isinstance(e, ir.Unary):
            v = self.term(e.operand, env)
            if e.op == ir.UnaryOp.NOT:
                return _not(v)
            return -v if isinstance(v, int) else Neg(v)
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
        return _ite(_conj((_cond(a), _cond(b))), 1, 0)

    @staticmethod
    def compare(op: ir.BinaryOp, a: Term, b: Term) -> Term:
        if isinstance(a, int) and isinstance(b, int):
            return int(_COMPARE[op](a, b))
        return _ite(Cmp(_CMP_OP[op], a, b), 1, 0)

    def binary(self, e: ir.Binary, env: dict[int, int]) -> Term:
        op = e.op
        a = self.term(e.left, env)
        if op == ir.BinaryOp.AND:
            return self.both(a, self.term(e.right, env)) if a != 0 else 0
        if op == ir.BinaryOp.OR:
            return self.either(a, self.term(e.right, env)) if a != 1 else 1
        if op == ir.BinaryOp.IMPLIES:
            return self.either(_not(a), self.term(e.right, env))
        b = self.term(e.right, env)
        if op in _CMP_OP:
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
        arith = _ARITH_OP.get(op)
        if arith is None:
            raise NetworkError(f"cannot export the operator {op}")
        return Arith(arith, a, b)

    def atom(self, ct: ir.ClockTest, env: dict[int, int]) -> Cmp:
        clock = self.clock_cell(ct.clock, [self.term(i, env) for i in ct.index])
        return Cmp(CmpOp(ct.op), clock, self.bound[ct.bound])

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
    def body(self, stmts: Sequence[ir.Stmt], env: dict[int, int]) -> list[Stmt]:
        """The statements; after an ``assert`` the rest runs only while ``failed`` is 0
        (kvrace stops an event at its first failed assert)."""
        out: list[Stmt] = []
        for k, st in enumerate(stmts):
            out.extend(self.stmt(st, env))
            if self.may_fail(st) and k + 1 < len(stmts):
                rest = self.body(stmts[k + 1:], env)
                if rest:
                    out.append(If(Cmp(CmpOp.EQ, FAILED, 0), tuple(rest)))
                return out
        return out

    @staticmethod
    def may_fail(st: ir.Stmt) -> bool:
        return any(isinstance(x, ir.AssertStmt) for x in ir.walk(st))

    def stmt(self, st: ir.Stmt, env: dict[int, int]) -> list[Stmt]:
        if isinstance(st, ir.Assign):
            value = self.term(st.value, env)
            if st.var.value.base.kind == "bool":
                value = _bool(value)
            target = self.cell(st.var, [self.term(i, env) for i in st.index])
            self._assigned(target, value)
            return [Assign(target, value)]
        if isinstance(st, ir.ResetClock):
            if st.clock.name == URGENT_CLOCK and not st.clock.domain:
                return []
            return [Assign(self.clock_cell(st.clock, [self.term(i, env) for i in st.index]),
                           0)]
        if isinstance(st, ir.AssertStmt):
            c = self.term(st.cond, env)
            if c == 1:
                return []
            fail = Assign(FAILED, 1)
            return [If(_cond(c), (Nop(),), (fail,)) if c != 0 else fail]
        if isinstance(st, ir.IfStmt):
            c = self.term(st.cond, env)
            if c == 1:
                return self.body(st.then, env)
            if c == 0:
                return self.body(st.orelse, env)
            then, orelse = self._branches(lambda: self.body(st.then, env),
                                          lambda: self.body(st.orelse, env))
            return [If(_cond(c), tuple(then), tuple(orelse))]
        if isinstance(st, ir.Broadcast):
            return self.broadcast(st, env)
        raise NetworkError(f"cannot export the statement {type(st).__name__}")

    def broadcast(self, st: ir.Broadcast, env: dict[int, int]) -> list[Stmt]:
        """Receivers ready before the sender's part, their parts after it."""
        ready: list[tuple[str, ir.Receiver, dict[int, int], bool]] = []
        out: list[Stmt] = []
        for rc in st.receivers:
            for point in ir.domain_points(tuple(ft for _, ft in rc.slots)):
                bound = {**env, **{sl: v for (sl, _), v in zip(rc.slots, point, strict=True)}}
                g = self.term(rc.guard, bound)
                if g == 0:
                    continue
                self.locals += 1
                name = f"ready{self.locals}"
                out.append(Local(name, _bool(g)))
                ready.append((name, rc, bound, g == 1))
        out.extend(self.body(st.sender, env))
        for name, rc, bound, always in ready:
            if always:
                part = self.body(rc.body, bound)
            else:
                part, _ = self._branches(functools.partial(self.body, rc.body, bound), list)
            proc = self.receiver_proc(rc, bound)
            if proc in self.pull:
                part = [s for s in part if not self.owned_reset(s, proc)]
            if part:
                out.append(If(Cmp(CmpOp.NE, Name(name), 0), tuple(part)))
        return out

    def receiver_proc(self, rc: ir.Receiver, bound: Mapping[int, int]) -> str | None:
        """The process instance a broadcast receiver's binding stands for."""
        if rc.instance is None:
            return None
        process, slot = rc.instance
        dom = self.inst.get(process, ())
        return _proc(process, dom, bound[slot] if slot is not None else None)


FAILED = Name("failed")
"""The int an assert's failure sets."""


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

    events: list[Event] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    syncs: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    """(event, processes taking part strongly, weakly)."""
    writes: dict[str, Cells] = field(default_factory=dict)
    failing: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    """The failing twin of each event with an assert: (event, strong, weak)."""


@dataclass
class _Deadlines:
    """The deadline processes and the cells their conditions read."""

    procs: list[Process] = field(default_factory=list)
    reads: dict[str, Cells] = field(default_factory=dict)


def build_network(spec: ir.Spec, values: Mapping[str, Fraction],
                  queries: bool = True) -> NetModel:
    """``spec`` at parameter ``values`` as a syntax-neutral network (see the module
    docstring).  Raises :class:`NetworkError` for what it cannot express, the message
    starting with the ``file:line:col`` of the construct when it has one."""
    skip: set[str] = set()
    while True:
        try:
            return _network(spec, values, queries, skip)
        except _Unlocatable as exc:
            skip.add(exc.actor)


def _network(spec: ir.Spec, values: Mapping[str, Fraction], queries: bool,
             skip: set[str]) -> NetModel:
    """:func:`build_network` with the actors in ``skip`` kept at one location."""
    b = _Builder(spec, values, queries)
    inst = b.inst
    b.owners = _clock_owners(spec, b)
    places = _places(spec, b, skip)
    observers = _observers(spec)
    net = NetModel(_ident(spec.name), _header(spec, values, b))
    net.decls = _declarations(spec, b, observers)
    ev = _events(spec, b, inst, _observe(b, observers), places)
    folded = _Folded()
    dl = _deadlines(spec, b, places, folded)
    for actor in spec.actors:
        dom = inst[actor]
        for value in (dom[0].values() if dom else [None]):
            pname = _proc(actor, dom, value)
            place = places.get(pname)
            locs = [Location("run", initial=True)] if place is None else [
                Location(n, initial=code == place.init, urgent=(pname, n) in folded.urgent,
                         invariant=(_conj(folded.atoms[pname, n])
                                    if (pname, n) in folded.atoms else None))
                for code, n in enumerate(place.names)]
            net.processes.append(Process(pname, ProcessKind.ACTOR, locs,
                                         at=None if place is None else place.cell))
    cells = initial_cells(net)
    for p in dl.procs:
        off, on, gone = p.locations
        starts_on = holds(on.invariant, cells) if on.invariant is not None else True
        p.locations = [dataclasses.replace(off, initial=not starts_on),
                       dataclasses.replace(on, initial=starts_on), gone]
    net.processes.extend(dl.procs)
    net.processes.append(Process("verdict", ProcessKind.VERDICT, [
        Location("ok", initial=True, invariant=Cmp(CmpOp.EQ, FAILED, 0)),
        Location("bad", committed=True, labels=("bad",), invariant=Cmp(CmpOp.EQ, FAILED, 1)),
        Location("broken", committed=True, labels=("bad",))]))
    query_procs = _queries(spec, b) if queries else []
    for pname, label, _ in query_procs:
        net.processes.append(Process(pname, ProcessKind.QUERY, [
            Location("no", initial=True), Location("yes", committed=True, labels=(label,))]))
    net.events = ev.events
    net.edges = ev.edges
    net.events.extend(_properties(spec, b, observers, query_procs, net.edges))
    net.syncs = _wiring(ev, dl)
    return net


def _queries(spec: ir.Spec, b: _Builder) -> list[tuple[str, str, Cond]]:
    """Each ``reachable`` query's process, label and condition."""
    out: list[tuple[str, str, Cond]] = []
    for q in spec.queries:
        if q.branches:
            raise NetworkError(f"reachable {q.name} tests clocks, which the export does"
                               " not translate", flat_helps=False,
                               where=_where(spec, q.span))
        with _at(spec, q.span):
            t = b.term(q.expr, {})
        if t != 0:
            out.append(("Q_" + _ident(q.name), _ident(q.name), _cond(t)))
    return out


def tchecker_network(spec: ir.Spec, values: Mapping[str, Fraction],
                     queries: bool = True) -> Network:
    """``spec`` at parameter ``values`` as a network of TChecker processes (see the
    module docstring).  Raises :class:`NetworkError` for what it cannot express."""
    net = build_network(spec, values, queries)
    steps = sum(1 for e in net.events if e.kind == EventKind.STEP)
    return Network(tchecker_text(net), [p.name for p in net.processes], len(net.edges), steps,
                   net)


def _header(spec: ir.Spec, values: Mapping[str, Fraction], b: _Builder) -> list[str]:
    lines = [f"kvrace model {spec.name} as a network of processes"]
    if values:
        lines.append("parameters: " + ", ".join(
            f"{k}={v.numerator if v.denominator == 1 else f'{v.numerator}/{v.denominator}'}"
            for k, v in values.items()))
    lines.append(f"clock bounds are multiplied by {b.scale}")
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


def _declarations(spec: ir.Spec, b: _Builder, observers: list[Observer]) -> list[Decl]:
    """The ints (variables, ``failed``, observers) and the clocks."""
    out: list[Decl] = []
    for v in spec.vars:
        base = v.value.base
        lo = min(base.lo, ir.NONE) if v.value.optional else base.lo
        out.append(Decl(DeclKind.INT_ARRAY, b.var_name[v.name], ir.domain_size(v.domain), lo,
                        base.hi, v.init, f"{b.var_name[v.name]} is {v.name} ({v.value})"))
    out.append(Decl(DeclKind.INT, FAILED.text, 1, 0, 1, 0))
    for resp, env, pend, _ in observers:
        with _at(spec, resp.span):
            out.append(Decl(DeclKind.INT, pend, 1, 0, 1, _eval_initial(b, resp, env)))
    for clk in spec.clocks:
        if clk.name == URGENT_CLOCK and not clk.domain:
            continue
        for idx in ir.domain_points(clk.domain):
            out.append(Decl(DeclKind.CLOCK, b.clock_label(clk, idx), comment=(
                f"{b.clock_label(clk, idx)} is {clk.name}{ir.show_index(clk.domain, idx)}")))
    for _, _, _, obs in observers:
        out.append(Decl(DeclKind.CLOCK, obs))
    return out


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


class _Unlocatable(Exception):
    """An actor whose location the export cannot follow as its processes' TChecker
    location (a body sets it to a value known only at run time, another process's
    event sets it, ...): its processes keep the one location ``run``."""

    def __init__(self, actor: str) -> None:
        super().__init__(actor)
        self.actor = actor


@dataclass(frozen=True)
class _Place:
    """A process whose spec location is its TChecker location: the cell of the
    location variable (kept as an int too, which other processes' guards, deadlines and
    properties read) and the locations' names by code."""

    actor: str
    cell: tuple[str, int]
    names: tuple[str, ...]
    init: int
    var: str
    """The location variable's name in the spec (as footprints name cells)."""

    def name(self, code: int) -> str:
        return self.names[code]


def _places(spec: ir.Spec, b: _Builder, skip: set[str]) -> dict[str, _Place]:
    """The processes of the actors with locations (a process type's ``A.loc``), but
    those in ``skip``."""
    out: dict[str, _Place] = {}
    for var in spec.vars:
        actor = var.name[:-4]
        if (not var.name.endswith(".loc") or actor not in b.inst or actor in skip
                or var.value.optional or var.value.base.kind != "enum"):
            continue
        dom = b.inst[actor]
        names = tuple(_ident(n) for n in var.value.base.labels)
        for value in (dom[0].values() if dom else [None]):
            cell = b.cell(var, [value] if value is not None else [])
            assert isinstance(cell.index, int)
            out[_proc(actor, dom, value)] = _Place(actor, (cell.array, cell.index), names,
                                                   var.init, var.name)
    return out


def _clock_owners(spec: ir.Spec, b: _Builder) -> dict[str, str]:
    """Each local clock of a process type (``Train.x[T1]``) and its instance's process."""
    out: dict[str, str] = {}
    for clk in spec.clocks:
        actor, dot, _ = clk.name.partition(".")
        if not dot or actor not in b.inst:
            continue
        dom = b.inst[actor]
        if dom and clk.domain[:1] != dom[:1]:
            continue
        for idx in ir.domain_points(clk.domain):
            out[b.clock_label(clk, idx)] = _proc(actor, dom, idx[0] if dom else None)
    return out


@dataclass
class _Variant:
    """An event instance with its participants' locations fixed: ``at`` (process to
    location code), the guard's branches and the body there, each located
    participant's location after it, and the participant whose edge carries guard
    and body (the one whose clocks the guard compares, if there is one)."""

    at: dict[str, int]
    guards: list[tuple[Cond, ...]]
    do: list[Stmt]
    after: dict[str, int]
    carrier: str


def _clocks_of(conds: Sequence[Cond], stmts: Sequence[Stmt], clocks: set[str]) -> set[str]:
    """The clocks ``conds`` compare and ``stmts`` reset."""
    out: set[str] = set()
    for c in conds:
        for part in (c.parts if isinstance(c, Conj) else (c,)):
            if isinstance(part, Cmp) and isinstance(part.left, Name) and part.left.text in clocks:
                out.add(part.left.text)
    for s in stmts:
        if isinstance(s, Assign) and isinstance(s.target, Name) and s.target.text in clocks:
            out.add(s.target.text)
        elif isinstance(s, If):
            out |= _clocks_of((), s.then + s.orelse, clocks)
    return out


def _variants(b: _Builder, ev: ir.Event, env: dict[int, int], parts: list[str],
              places: Mapping[str, _Place], observe: list[Stmt],
              clocks: set[str]) -> list[_Variant]:
    """The event instance once per combination of its strong participants' locations
    where its guard can hold."""
    fixed = [p for p in parts if p in places]
    out: list[_Variant] = []
    for combo in itertools.product(*(range(len(places[p].names)) for p in fixed)):
        at = dict(zip(fixed, combo, strict=True))
        b.assume({places[p].cell: v for p, v in at.items()})
        guards: list[tuple[Cond, ...]] = []
        for br in ev.branches:
            data = b.term(br.data, env)
            if data == 0:
                continue
            conj = [] if data == 1 else [_cond(data)]
            conj.extend(b.atom(ct, env) for ct in br.clocks)
            guards.append(tuple(conj))
        if not guards:
            continue
        do = b.body(ev.body, env)
        after: dict[str, int] = {}
        for p in fixed:
            code = b.known.get(places[p].cell)
            if code is None:
                raise _Unlocatable(places[p].actor)
            after[p] = code
        if observe:
            do.append(If(Cmp(CmpOp.EQ, FAILED, 0), tuple(observe)))
        owners = {b.owners.get(x) for x in _clocks_of([c for g in guards for c in g], (),
                                                      clocks)}
        carrier = next(iter(owners)) if len(owners) == 1 else None
        out.append(_Variant(at, guards, do, after,
                            carrier if carrier in parts else parts[0]))
    b.assume({})
    return out


WeakEdge = tuple[int, int, tuple[Stmt, ...]]
"""A located broadcast receiver's edge: source and target codes, body."""


def _receiving(b: _Builder, ev: ir.Event, env: dict[int, int], proc: str
               ) -> Iterator[tuple[ir.Receiver, dict[int, int]]]:
    """The bindings of the event's broadcast receivers that stand for ``proc``."""
    for st in ev.body:
        if not isinstance(st, ir.Broadcast):
            continue
        for rc in st.receivers:
            for point in ir.domain_points(tuple(ft for _, ft in rc.slots)):
                bound = {**env, **{sl: v for (sl, _), v in zip(rc.slots, point, strict=True)}}
                if b.receiver_proc(rc, bound) == proc:
                    yield rc, bound


def _weak_edges(b: _Builder, ev: ir.Event, env: dict[int, int], proc: str,
                place: _Place) -> list[WeakEdge]:
    """A located broadcast receiver's edges: from each location where one of its
    receiving events is enabled, one edge to where that event takes it, with the resets
    of its own clocks.  TChecker's weak synchronisation takes part from every location
    with an edge and allows no guard on such an edge, so a receiving event must be
    enabled wherever it is at all: a guard that depends on more than the location
    makes the receiver's actor unlocatable."""
    nested = [x for x in ir.walk_block(ev.body) if isinstance(x, ir.Broadcast)]
    if any(x not in ev.body for x in nested):
        raise _Unlocatable(place.actor)
    out: list[WeakEdge] = []
    for code in range(len(place.names)):
        found: list[tuple[Term, list[Stmt], int | None]] = []
        for rc, bound in _receiving(b, ev, env, proc):
            b.assume({place.cell: code})
            g = b.term(rc.guard, bound)
            if g != 0:
                part = b.body(rc.body, bound)
                found.append((g, part, b.known.get(place.cell)))
        b.assume({})
        if len(found) > 1 or (found and (found[0][0] != 1 or found[0][2] is None)):
            raise _Unlocatable(place.actor)
        if found:
            _, part, target = found[0]
            assert target is not None
            out.append((code, target, tuple(s for s in part if b.owned_reset(s, proc))))
    return out


def _foreign_writes(b: _Builder, ev: ir.Event, env: dict[int, int], proc: str | None
                    ) -> Cells:
    """The cells the event instance may write outside ``proc``'s broadcast receivers."""
    out: Cells = set()
    for st in ev.body:
        if not isinstance(st, ir.Broadcast):
            out |= b.writes([st], env)
            continue
        out |= b.writes(st.sender, env)
        for rc in st.receivers:
            for point in ir.domain_points(tuple(ft for _, ft in rc.slots)):
                bound = {**env, **{sl: v for (sl, _), v in zip(rc.slots, point, strict=True)}}
                if proc is None or b.receiver_proc(rc, bound) != proc:
                    out |= b.writes(rc.body, bound)
    return out


def _check_movers(b: _Builder, ev: ir.Event, env: dict[int, int],
                  places: Mapping[str, _Place], strong: Sequence[str],
                  weak: Sequence[str]) -> None:
    """That only a process itself moves its location: another process's event setting
    it makes its actor unlocatable."""
    everything = _foreign_writes(b, ev, env, None)
    for proc, place in places.items():
        if proc in strong:
            continue
        writes = _foreign_writes(b, ev, env, proc) if proc in weak else everything
        if _overlap(writes, {(place.var, place.cell[1])}):
            raise _Unlocatable(place.actor)


def _events(spec: ir.Spec, b: _Builder, inst: Mapping[str, tuple[ir.FiniteType, ...]],
            observe: list[Stmt], places: Mapping[str, _Place]) -> _Events:
    out = _Events()
    n_event = 0
    clocks = set(_clock_names(spec, b))
    for ev in spec.events:
        dom = tuple(ft for _, ft in ev.params)
        for idx in ir.domain_points(dom):
            env = dict(enumerate(idx))
            label = ev.label + ir.show_index(dom, idx)
            owner, strong, weak = _parties(ev, idx, inst)
            name = f"e{n_event}"
            n_event += 1
            with _at(spec, ev.span):
                _check_movers(b, ev, env, places, [owner, *strong], weak)
                b.pull = frozenset(r for r in weak if r in places)
                variants = _variants(b, ev, env, [owner, *strong], places, observe, clocks)
                weak_edges = {r: _weak_edges(b, ev, env, r, places[r]) for r in b.pull}
                b.pull = frozenset()
            writes = b.writes(ev.body, env)
            may_fail = any(b.may_fail(st) for st in ev.body)
            for k, var in enumerate(variants):
                vname = name if len(variants) == 1 else f"{name}_{k}"
                where = ", ".join(places[p].name(c) for p, c in var.at.items())
                comment = f"{label} at {where}" if where else label
                _emit(out, b, _Step(vname, comment, var, [owner, *strong], weak, writes),
                      places, weak_edges, may_fail)
    return out


@dataclass
class _Step:
    """One variant of an event instance, to be written as edges."""

    name: str
    comment: str
    variant: _Variant
    strong: list[str]
    weak: list[str]
    writes: Cells


def _emit(out: _Events, b: _Builder, step: _Step, places: Mapping[str, _Place],
          weak_edges: Mapping[str, list[WeakEdge]], may_fail: bool) -> None:
    """The edges and synchronisation of ``step`` and, when its body may fail an assert,
    of its failing twin, where the located participants stay where they are (the
    verdict's ``bad`` ends the run there).  The carrier's edge has the guard and the
    body; another process that must take part has an unguarded edge, with the resets
    of its own clocks that the body always makes (before any assert): TChecker's
    clock bounds are then local to the locations where the clock is live."""
    var = step.variant
    carrier = var.carrier
    others = [p for p in step.strong if p != carrier]

    def loc(p: str, after: bool) -> str:
        if p not in places:
            return "run"
        return places[p].name(var.after[p] if after else var.at[p])

    pins = tuple(Cmp(CmpOp.EQ, Cell(*places[p].cell), var.at[p]) for p in others
                 if p in places)
    # A clock reset the body always makes moves to the edge of the clock's process.
    resets = {p: tuple(s for s in var.do if b.owned_reset(s, p)) for p in others}
    do = tuple(s for s in var.do if not any(s in r for r in resets.values()))
    for event, kind, moved in ((step.name, EventKind.STEP, True),
                               (f"f{step.name[1:]}", EventKind.FAILING, False)):
        if kind == EventKind.FAILING and not may_fail:
            break
        out.edges.extend(Edge(carrier, loc(carrier, False), loc(carrier, moved), event,
                              pins + g, do) for g in var.guards)
        out.edges.extend(Edge(p, loc(p, False), loc(p, moved), event, (), resets[p])
                         for p in others)
        for r in step.weak:
            if r not in places:
                out.edges.append(Edge(r, "run", "run", event))
                continue
            for src, dst, do in weak_edges[r]:
                out.edges.append(Edge(r, places[r].name(src),
                                      places[r].name(dst if moved else src), event, (), do))
        if kind == EventKind.STEP:
            out.events.append(Event(event, kind, step.comment))
            out.syncs.append((event, [carrier, *others], step.weak))
            out.writes[event] = step.writes
        else:
            out.events.append(Event(event, kind, f"{step.comment} failing an assert"))
            out.failing.append((event, [carrier, *others], step.weak))


def _clock_names(spec: ir.Spec, b: _Builder) -> Iterator[str]:
    for clk in spec.clocks:
        for idx in ir.domain_points(clk.domain):
            yield b.clock_label(clk, idx)


@dataclass
class _Folded:
    """Location invariants from deadlines: per (process, location), the clock atoms
    and whether time may not pass there at all."""

    atoms: dict[tuple[str, str], list[Cond]] = field(default_factory=dict)
    urgent: set[tuple[str, str]] = field(default_factory=set)


def _fold(b: _Builder, dl: ir.Deadline, env: dict[int, int],
          by_cell: Mapping[tuple[str, int], str], places: Mapping[str, _Place],
          folded: _Folded) -> bool:
    """Fold a deadline instance whose condition reads only one located process's
    location into that process's location invariants; False if it reads more."""
    reads = b.reads(dl.cond, env)
    if len(reads) != 1:
        return False
    (var, pos), = reads
    proc = by_cell.get((b.var_name[var], pos)) if pos is not None else None
    if proc is None:
        return False
    place = places[proc]
    holds_at: list[int] = []
    for code in range(len(place.names)):
        b.assume({place.cell: code})
        t = b.term(dl.cond, env)
        if not isinstance(t, int):
            b.assume({})
            return False
        if t:
            holds_at.append(code)
    b.assume({})
    for code in holds_at:
        key = (proc, place.name(code))
        for ct in dl.atoms:
            if ct.clock.name == URGENT_CLOCK and not ct.clock.domain:
                folded.urgent.add(key)
            else:
                folded.atoms.setdefault(key, []).append(b.atom(ct, env))
    return True


def _deadlines(spec: ir.Spec, b: _Builder, places: Mapping[str, _Place],
               folded: _Folded) -> _Deadlines:
    """The deadline processes, but for the deadlines folded into location invariants
    (into ``folded``)."""
    out = _Deadlines()
    by_cell = {p.cell: name for name, p in places.items()}
    for dl in spec.deadlines:
        dom = tuple(ft for _, ft in dl.params)
        for idx in ir.domain_points(dom):
            env = dict(enumerate(idx))
            with _at(spec, dl.span):
                if _fold(b, dl, env, by_cell, places, folded):
                    continue
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
            out.procs.append(Process(pname, ProcessKind.DEADLINE, [
                Location("off", initial=True, invariant=_cond(_not(cond))),
                Location("on", initial=True, urgent=bool(urgent),
                         invariant=_conj((_cond(cond), *timed))),
                Location("gone")], f"{pname}: deadline {dl.name}{ir.show_index(dom, idx)}"))
    return out


def _properties(spec: ir.Spec, b: _Builder, observers: list[Observer],
                query_procs: list[tuple[str, str, Cond]], edges: list[Edge]) -> list[Event]:
    """The events of broken invariants, late responses and reached queries (their
    edges are appended to ``edges``)."""
    events: list[Event] = []
    for inv in spec.invariants:
        dom = tuple(ft for _, ft in inv.params)
        for idx in ir.domain_points(dom):
            with _at(spec, inv.span):
                t = b.term(inv.expr, dict(enumerate(idx)))
            if t == 1:
                continue
            ename = f"violates_{_ident(inv.name + '_' + '_'.join(str(x) for x in idx))}"
            events.append(Event(ename, EventKind.PROPERTY))
            guard = () if t == 0 else (Cmp(CmpOp.EQ, t, 0),)
            edges.append(Edge("verdict", "ok", "broken", ename, guard))
    for resp, _, pend, obs in observers:
        ename = f"late_{pend[5:]}"
        events.append(Event(ename, EventKind.PROPERTY))
        edges.append(Edge("verdict", "ok", "broken", ename, (Conj((
            Cmp(CmpOp.EQ, Name(pend), 1), Cmp(CmpOp.GT, Name(obs), b.bound[resp.within]))),)))
    for pname, qname, cond in query_procs:
        ename = f"reach_{qname}"
        events.append(Event(ename, EventKind.PROPERTY))
        edges.append(Edge(pname, "no", "yes", ename, (cond,)))
    return events


def _wiring(ev: _Events, dl: _Deadlines) -> list[Sync]:
    """The edges of the deadline processes and the verdict (appended to ``ev.edges``),
    and the synchronisations: an event with the deadline processes whose condition
    reads a cell it may write (each choosing off or on; the others keep their
    location) and with the verdict; a failing twin with every deadline process (to
    ``gone``) and the verdict (to ``bad``)."""
    affected: dict[str, list[str]] = {}
    procs = [p.name for p in dl.procs]
    for name, _, _ in ev.syncs:
        mine = [p for p in procs if _overlap(ev.writes[name], dl.reads[p])]
        affected[name] = mine
        for p in mine:
            for src in ("off", "on"):
                for dst in ("off", "on"):
                    ev.edges.append(Edge(p, src, dst, name))
        ev.edges.append(Edge("verdict", "ok", "ok", name))
    for fname, _, _ in ev.failing:
        for p in procs:
            ev.edges.append(Edge(p, "off", "gone", fname))
            ev.edges.append(Edge(p, "on", "gone", fname))
        ev.edges.append(Edge("verdict", "ok", "bad", fname))
    syncs: list[Sync] = []
    for name, strong, weak in ev.syncs:
        parts = [(p, False) for p in strong] + [(p, True) for p in [*weak, *affected[name]]]
        syncs.append(Sync(name, (*parts, ("verdict", False))))
    for fname, strong, weak in ev.failing:
        parts = [(p, False) for p in [*strong, *procs, "verdict"]]
        syncs.append(Sync(fname, (*parts, *((p, True) for p in weak))))
    return syncs


def _overlap(a: set[tuple[str, int | None]], b: set[tuple[str, int | None]]) -> bool:
    """Whether two cell sets may share a cell."""
    for var, pos in a:
        for var2, pos2 in b:
            if var == var2 and (pos is None or pos2 is None or pos == pos2):
                return True
    return False


def _observe(b: _Builder, observers: list[Observer]) -> list[Stmt]:
    """kvrace's observer update after an event: a pending response ends when its
    response holds; one starts (and resets its clock) when its trigger holds alone."""
    out: list[Stmt] = []
    for resp, env, pend, obs in observers:
        with _at(b.spec, resp.span):
            r = b.term(resp.response, env)
            t = b.term(resp.trigger, env)
        start = b.both(t, _not(r))
        flag = Name(pend)
        stop: Stmt = If(_cond(r), (Assign(flag, 0),)) if r != 0 else Nop()
        begin: Stmt = (If(_cond(start), (Assign(flag, 1), Assign(Name(obs), 0)))
                       if start != 0 else Nop())
        out.append(If(Cmp(CmpOp.EQ, flag, 1), (stop,), (begin,)))
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


__all__ = ["Network", "NetworkError", "build_network", "count_lines", "tchecker_network"]

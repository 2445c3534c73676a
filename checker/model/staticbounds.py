"""Static clock bounds per process location, from the syntax of a network of processes.

For a clock owned by a process instance (a local ``clock c`` of ``process P(self: T)``,
flattened to ``P.c[self]``) and each location of that instance, the analysis finds
whether the clock is *live* there (some path of the owner's automaton from the location
reads it, in a guard or a deadline, before resetting it) and its local (L, U)
constants: every bound it is compared with from below (``>``, ``>=``) or from above
(``<``, ``<=``, deadlines and location invariants) along such paths (Behrmann et al.,
"Static guard analysis in timed automata verification", TACAS 2003; TChecker's local LU
bounds).  Data is ignored: every edge of the automaton counts whatever the variables, an
over-approximation of what can happen, so the bounds are sound.  A global state's bounds
are then those of each owner's current location (:mod:`checker.semantics.staticbounds`),
with no exploration before the first zone.

The owner's automaton is read off the flat IR: an event instance (or one receiver
binding of a broadcast) *moves* instance ``p`` from the locations its guard pins with a
top-level conjunct ``P.loc[p] == a`` (or ``in {a, b}``) to the location its single
unconditional assignment ``P.loc[p] := b`` gives (any location when the assignment is
conditional or computed; the same location without one).  A write of ``P.loc[p]``
without a pinning guard moves ``p`` from every location.

Wherever the syntax does not pin things down, a clock is **shared**: live in every
state, with its largest constants over the whole model.  That is the case of a clock
not owned by a process instance with locations (a top-level clock, the hidden
``urgent`` clock, a bounded response's observer), and of one that is tested or reset by
an event whose guard does not pin its owner's location (another process's event, a
top-level event, an event without ``from``), through an index the analysis cannot fix,
outside a guard's convex branches, by a deadline whose condition does not pin its
owner's location, by a ``reachable`` query or any property.  Only the IR is read; no
engine runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from checker.model import ir
from checker.model.components import _Analysis, _points
from checker.model.interface import (
    GE,
    GT,
    LinExpr,
    LocalClock,
    ProcessClocks,
    StaticClocks,
)

ANY = -1
"""A move's target when the syntax does not fix it: every location."""
STAY = -2
"""A move's target when the context does not write the location."""


@dataclass
class _Context:
    """What one event instance (or one receiver binding of a broadcast) does."""

    env: dict[int, int]
    pins: dict[int, frozenset[int]]
    """Location cells its guard pins, to the values it allows."""
    tests: list[tuple[int, bool, LinExpr]] = field(default_factory=list)
    """Clock atoms of the guard's branches: clock, whether from below, bound."""
    resets: set[int] = field(default_factory=set)
    """Clocks reset unconditionally."""
    touched: set[int] = field(default_factory=set)
    """Every clock tested or reset in any way."""
    writes: dict[int, int] = field(default_factory=dict)
    """Location cells written, to the target (:data:`ANY` when not fixed)."""


@dataclass
class _Move:
    """One edge of an owner's automaton: from ``sources`` to ``target``."""

    sources: tuple[int, ...]
    target: int
    tests: list[tuple[int, bool, LinExpr]]
    resets: frozenset[int]


class _Static:
    """The analysis of one spec."""

    def __init__(self, spec: ir.Spec, n_clocks: int) -> None:
        self.spec = spec
        self.an = _Analysis(spec)
        self.n_clocks = n_clocks
        self.loc_vars = {v.name[:-4]: v for v in spec.vars
                         if v.name.endswith(".loc") and v.name[:-4] in spec.actors}
        self.cells: dict[int, tuple[int, ...]] = {}
        """Each process instance's location cell, to its locations."""
        for v in self.loc_vars.values():
            for p in ir.domain_points(v.domain):
                self.cells[v.offset + ir.cell_index(v.domain, p)] = tuple(v.value.base.values())
        self.owner: list[int | None] = [self.owner_cell(c) for c in range(n_clocks)]
        self.shared: set[int] = {c for c in range(n_clocks) if self.owner[c] is None}
        self.lower: list[set[LinExpr]] = [set() for _ in range(n_clocks)]
        self.upper: list[set[LinExpr]] = [set() for _ in range(n_clocks)]
        self.moves: dict[int, list[_Move]] = {cell: [] for cell in self.cells}
        self.reads: dict[int, list[tuple[tuple[int, ...], int, bool, LinExpr]]] = {
            cell: [] for cell in self.cells}
        """Per location cell, the deadline atoms: locations, clock, from below, bound."""

    def owner_cell(self, c: int) -> int | None:
        """The location cell of the process instance owning clock ``c`` (None: shared)."""
        if c >= self.an.n_clocks:
            return None  # a bounded response's observer
        clk = self.an.clock_decl[c]
        o = self.an.named_owner(clk.name, clk.domain, self.an.clock_index[c])
        v = None if o is None else self.loc_vars.get(o[0])
        if o is None or v is None:
            return None
        if o[1] is None:
            return v.offset if not v.domain else None
        return v.offset + ir.cell_index(v.domain, (o[1],))

    # ---- reading the IR ---------------------------------------------------------------
    def note(self, c: int, below: bool | None, b: LinExpr) -> None:
        """A constant clock ``c`` is compared with (None: count it both ways)."""
        if below is None or below:
            self.lower[c].add(b)
        if below is None or not below:
            self.upper[c].add(b)

    def clocks_of(self, ct: ir.ClockTest | ir.ResetClock, env: dict[int, int]) -> list[int]:
        """The clocks a test or reset may denote."""
        base = self.an.clock_base[ct.clock.name]
        return [base + ir.cell_index(ct.clock.domain, p)
                for p in _points(ct.clock.domain, ct.index, env)]

    def pins(self, e: ir.Expr, env: dict[int, int], out: dict[int, frozenset[int]]) -> None:
        """The location cells the top-level conjuncts of ``e`` pin."""
        if isinstance(e, ir.Binary) and e.op is ir.BinaryOp.AND:
            self.pins(e.left, env, out)
            self.pins(e.right, env, out)
            return
        read: ir.Expr | None = None
        opts: tuple[ir.Expr, ...] = ()
        if isinstance(e, ir.Binary) and e.op is ir.BinaryOp.EQ:
            read, opts = (e.left, (e.right,)) if isinstance(e.left, ir.Read) else (
                e.right, (e.left,))
        elif isinstance(e, ir.Member):
            read, opts = e.value, e.options
        if not isinstance(read, ir.Read) or not all(isinstance(o, ir.Const) for o in opts):
            return
        cell = self.cell_of(read.var, read.index, env)
        if cell is not None:
            vals = frozenset(o.value for o in opts if isinstance(o, ir.Const))
            out[cell] = out[cell] & vals if cell in out else vals

    def cell_of(self, var: ir.Var, index: Sequence[ir.Expr], env: dict[int, int]) -> int | None:
        """The location cell ``var[index]`` denotes, when it is one and fixed."""
        pts = list(_points(var.domain, index, env))
        if len(pts) != 1:
            return None
        cell = var.offset + ir.cell_index(var.domain, pts[0])
        return cell if cell in self.cells else None

    def stmts(self, body: Sequence[ir.Stmt], ctx: _Context, top: bool,
              subs: list[_Context]) -> None:
        """Record what statements do (``top``: unconditionally); the receivers of a
        broadcast become contexts of their own (``subs``)."""
        for st in body:
            if isinstance(st, ir.Broadcast):
                self.stmts(st.sender, ctx, top, subs)
                for rc in st.receivers:
                    subs.extend(self.receiver(rc, ctx.env))
                continue
            if isinstance(st, ir.IfStmt):
                self.expr(st.cond, ctx)
                self.stmts(st.then, ctx, False, subs)
                self.stmts(st.orelse, ctx, False, subs)
                continue
            if isinstance(st, ir.ResetClock):
                got = self.clocks_of(st, ctx.env)
                ctx.touched.update(got)
                if top and len(got) == 1:
                    ctx.resets.add(got[0])
                continue
            if isinstance(st, ir.Assign) and st.var.name.endswith(".loc"):
                self.write(st, ctx, top)
            for kid in ir.children(st):
                if isinstance(kid, ir.Expr):
                    self.expr(kid, ctx)

    def write(self, st: ir.Assign, ctx: _Context, top: bool) -> None:
        """An assignment to a location variable: a move of the instances it may denote."""
        pts = list(_points(st.var.domain, st.index, ctx.env))
        for p in pts:
            cell = st.var.offset + ir.cell_index(st.var.domain, p)
            if cell not in self.cells:
                continue
            fixed = (top and len(pts) == 1 and isinstance(st.value, ir.Const)
                     and cell not in ctx.writes)
            ctx.writes[cell] = st.value.value if fixed and isinstance(
                st.value, ir.Const) else ANY

    def expr(self, e: ir.Expr, ctx: _Context) -> None:
        """A clock tested outside a guard's branches: shared."""
        for node in ir.walk(e):
            if isinstance(node, ir.ClockTest):
                for c in self.clocks_of(node, ctx.env):
                    self.shared.add(c)
                    self.note(c, None, node.bound)

    def receiver(self, rc: ir.Receiver, env: dict[int, int]) -> Iterator[_Context]:
        """Each binding of a broadcast's receiving event, as a context of its own."""
        types = tuple(t for _, t in rc.slots)
        for p in ir.domain_points(types):
            inner = dict(env)
            inner.update((slot, v) for (slot, _), v in zip(rc.slots, p, strict=True))
            ctx = _Context(inner, {})
            self.pins(rc.guard, inner, ctx.pins)
            self.expr(rc.guard, ctx)
            subs: list[_Context] = []
            self.stmts(rc.body, ctx, True, subs)
            yield ctx
            yield from subs

    def event(self, ev: ir.Event, args: tuple[int, ...]) -> None:
        """One event instance: its contexts, then the moves they make."""
        env = dict(enumerate(args))
        ctx = _Context(env, {})
        self.pins(ev.guard, env, ctx.pins)
        in_branches: set[int] = set()
        for br in ev.branches:
            self.expr(br.data, ctx)
            for ct in br.clocks:
                got = self.clocks_of(ct, env)
                if len(got) != 1:
                    self.shared.update(got)
                below = ct.op in (GE, GT)
                for c in got:
                    self.note(c, below, ct.bound)
                    ctx.tests.append((c, below, ct.bound))
                    in_branches.add(c)
        for node in ir.walk(ev.guard):
            if isinstance(node, ir.ClockTest):
                got = self.clocks_of(node, env)
                ctx.touched.update(got)
                self.shared.update(c for c in got if c not in in_branches)
        if ev.receives is not None:
            for e in ev.receives[1]:
                self.expr(e, ctx)
        subs: list[_Context] = []
        self.stmts(ev.body, ctx, True, subs)
        contexts = [ctx, *subs]
        moved: set[int] = set()
        for n, k in enumerate(contexts):
            k.touched.update(c for c, _, _ in k.tests)
            mine = set(k.pins) | set(k.writes)
            for c in k.touched:
                o = self.owner[c]
                if o is None or o not in k.pins:
                    self.shared.add(c)
                else:
                    mine.add(o)
            if n == 0:
                moved = mine
            else:
                # Moved by the sender and by a receiver in one firing: not analysed.  The
                # receivers of one instance are alternatives (it receives at most once).
                for cell in mine & moved:
                    self.share_owned(cell)
            for cell in mine:
                self.moves[cell].append(_Move(
                    tuple(v for v in self.cells[cell] if v in k.pins.get(cell, (v,))),
                    k.writes.get(cell, STAY),
                    [t for t in k.tests if self.owner[t[0]] == cell],
                    frozenset(c for c in k.resets if self.owner[c] == cell)))

    def share_owned(self, cell: int) -> None:
        """Every clock of one instance becomes shared."""
        self.shared.update(c for c in range(self.n_clocks) if self.owner[c] == cell)

    def deadline(self, dl: ir.Deadline, args: tuple[int, ...]) -> None:
        """One deadline instance: its atoms are read where its condition pins their owner."""
        env = dict(enumerate(args))
        pins: dict[int, frozenset[int]] = {}
        self.pins(dl.cond, env, pins)
        ctx = _Context(env, pins)
        self.expr(dl.cond, ctx)
        for ct in dl.atoms:
            got = self.clocks_of(ct, env)
            below = ct.op in (GE, GT)
            for c in got:
                self.note(c, below, ct.bound)
                o = self.owner[c]
                if len(got) != 1 or o is None or o not in pins:
                    self.shared.add(c)
                else:
                    where = tuple(v for v in self.cells[o] if v in pins[o])
                    self.reads[o].append((where, c, below, ct.bound))

    def properties(self) -> None:
        """Clocks read by queries and properties: shared, with their constants."""
        spec = self.spec
        for q in spec.queries:
            ctx = _Context({}, {})
            for br in q.parts:
                for ct in br.clocks:
                    for c in self.clocks_of(ct, {}):
                        self.shared.add(c)
                        self.note(c, ct.op in (GE, GT), ct.bound)
                self.expr(br.data, ctx)
            self.expr(q.expr, ctx)
        exprs: list[ir.Expr] = [i.expr for i in spec.invariants]
        exprs += [e for r in spec.responses for e in (r.trigger, r.response)]
        exprs += [e for r in spec.leadsto for e in (r.trigger, r.response)]
        for e in exprs:
            self.expr(e, _Context({}, {}))
        k = self.an.n_clocks
        for r in spec.responses:
            for _ in ir.domain_points(tuple(t for _, t in r.params)):
                self.note(k, True, r.within)
                k += 1


Table = dict[int, dict[int, tuple[set[LinExpr], set[LinExpr]]]]
"""Per location, the live clocks with the constants they are compared with."""


def _add(out: Table, v: int, c: int, lo: set[LinExpr], up: set[LinExpr]) -> bool:
    """Clock ``c`` live at ``v`` with at least these constants; whether that added any."""
    got = out[v].get(c)
    if got is None:
        out[v][c] = (set(lo), set(up))
        return True
    if lo <= got[0] and up <= got[1]:
        return False
    got[0].update(lo)
    got[1].update(up)
    return True


def _solve(moves: list[_Move], reads: list[tuple[tuple[int, ...], int, bool, LinExpr]],
           locations: tuple[int, ...], clocks: set[int]) -> Table:
    """Per location, the live clocks among ``clocks`` with their constants: what is read
    there, then backwards along the moves to a fixpoint."""
    out: Table = {v: {} for v in locations}
    direct = [(where, c, below, b) for where, c, below, b in reads]
    direct += [(m.sources, c, below, b) for m in moves for c, below, b in m.tests]
    for where, c, below, b in direct:
        if c in clocks:
            for v in where:
                _add(out, v, c, {b} if below else set(), set() if below else {b})
    changed = True
    while changed:
        changed = False
        for m in moves:
            for v in m.sources:
                targets = (v,) if m.target == STAY else (
                    locations if m.target == ANY else (m.target,))
                for t in targets:
                    for c, (lo, up) in list(out.get(t, {}).items()):
                        if c not in m.resets and _add(out, v, c, lo, up):
                            changed = True
    return out


def _sorted(bs: set[LinExpr]) -> tuple[LinExpr, ...]:
    return tuple(sorted(bs, key=str))


def static_clocks(spec: ir.Spec, n_clocks: int) -> StaticClocks | None:
    """The static clock bounds of ``spec`` (``n_clocks``: the model's clock count,
    observers of bounded responses included); None when no clock is owned by a process
    instance with locations (not a network of processes: nothing to gain)."""
    st = _Static(spec, n_clocks)
    for ev in spec.events:
        for args in ir.domain_points(tuple(t for _, t in ev.params)):
            st.event(ev, args)
    for dl in spec.deadlines:
        for args in ir.domain_points(tuple(t for _, t in dl.params)):
            st.deadline(dl, args)
    st.properties()
    owned = {c for c in range(n_clocks) if c not in st.shared}
    if not owned:
        return None
    procs: list[ProcessClocks] = []
    for cell, locations in sorted(st.cells.items()):
        mine = {c for c in owned if st.owner[c] == cell}
        if not mine:
            continue
        got = _solve(st.moves[cell], st.reads[cell], locations, mine)
        procs.append(ProcessClocks(cell, tuple(
            (v, tuple(LocalClock(c, _sorted(lo), _sorted(up))
                      for c, (lo, up) in sorted(got[v].items())))
            for v in locations)))
    shared = tuple(LocalClock(c, _sorted(st.lower[c]), _sorted(st.upper[c]))
                   for c in sorted(st.shared))
    return StaticClocks(tuple(procs), shared)

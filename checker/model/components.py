"""The components of a specification, for local-time zones (:mod:`checker.semantics.localtime`).

A flat model (:class:`checker.model.ir.Spec`) is seen as a network of components, each
owning part of the state; an event instance is a synchronisation of the components
whose state it reads or writes.  Local-time zones let each component's time run on its
own between the events it takes part in, so the analysis must never split what an
event touches: the rule is that **an event instance synchronises the owner of every
cell and clock it reads or writes** (and its own process instance).

* A process instance (``process Node(self: Station)``, instance ``S1``) owns its
  location, its local variables (``Node.x[S1, ...]``) and its clocks (``Node.c[S1]``):
  any event that reads or writes one of them synchronises with it, whatever process
  it belongs to.  A one-instance process, and a top-level actor, is one component.
* A top-level variable or clock accessed by the events of one component only belongs
  to it; one accessed by several is a component of its own (the standard encoding of
  a shared variable as a process), synchronised by every event that accesses it.
* A broadcast evaluates every potential receiver's guard (each binding of its
  receiving event), so it reads the state of every instance that could receive: it
  synchronises them all, whether or not they receive.
* A deadline of a clock whose condition reads another component's cells couples them:
  every event that writes such a cell also synchronises the clock's owner, so that
  the deadline changes only at instants where both agree on the time.

An index the analysis cannot fix (a quantified or computed one) stands for every cell
of the variable: coarser, never unsound.  Only the IR is read; no engine runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from checker.model import ir
from checker.model.interface import Components, LinExpr, Relation

Cell = tuple[str, tuple[int, ...]]
"""A variable cell: the variable's name and its index."""
Owner = tuple[str, int | None]
"""A component: an actor or process, and the instance (None: one instance), or
``("var NAME", None)``/``("clock NAME", None)`` for a shared variable or clock."""
LOWER_OPS = (Relation.GE, Relation.GT)


@dataclass
class _Access:
    """What one event instance (or deadline instance) touches."""

    home: Owner
    reads: set[Cell] = field(default_factory=set)
    writes: set[Cell] = field(default_factory=set)
    clocks: set[int] = field(default_factory=set)
    parties: set[Owner] = field(default_factory=set)
    """Components taking part by their own event (the receivers of a broadcast)."""


def _value(e: ir.Expr, env: Mapping[int, int]) -> int | None:
    """The value of an index expression, when fixed by the bound slots."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Local):
        return env.get(e.slot)
    if isinstance(e, (ir.InRange, ir.Some)):
        return _value(e.operand, env)
    return None


def _points(domain: tuple[ir.FiniteType, ...], index: Sequence[ir.Expr],
            env: Mapping[int, int]) -> Iterator[tuple[int, ...]]:
    """The cells an index may denote (every cell matching the fixed positions)."""
    fixed = [_value(e, env) for e in index]
    for p in ir.domain_points(domain):
        if all(f is None or f == v for f, v in zip(fixed, p, strict=False)):
            yield p


class _Analysis:
    """The component structure of one spec."""

    def __init__(self, spec: ir.Spec) -> None:
        self.spec = spec
        self.clock_base: dict[str, int] = {}
        k = 0
        for clk in spec.clocks:
            self.clock_base[clk.name] = k
            k += ir.domain_size(clk.domain)
        self.n_clocks = k
        self.clock_decl: list[ir.Clock] = [clk for clk in spec.clocks
                                           for _ in ir.domain_points(clk.domain)]
        self.clock_index: list[tuple[int, ...]] = [p for clk in spec.clocks
                                                   for p in ir.domain_points(clk.domain)]
        # A process's instance type is the index type of its location variable.
        self.instance_type: dict[str, ir.FiniteType | None] = {}
        for v in spec.vars:
            actor, dot, rest = v.name.partition(".")
            if dot and rest == "loc" and actor in spec.actors:
                self.instance_type[actor] = v.domain[0] if v.domain else None
        self.lower: list[set[LinExpr]] = [set() for _ in range(k)]
        self.upper: list[set[LinExpr]] = [set() for _ in range(k)]

    # ---- ownership by name ------------------------------------------------------------
    def named_owner(self, name: str, domain: tuple[ir.FiniteType, ...],
                    idx: tuple[int, ...]) -> Owner | None:
        """The process instance owning a process's variable or clock, by its name."""
        actor, dot, _ = name.partition(".")
        if not dot or actor not in self.spec.actors:
            return None
        t = self.instance_type.get(actor)
        if t is not None and domain and domain[0] == t:
            return (actor, idx[0])
        return (actor, None)

    def home(self, ev: ir.Event, args: tuple[int, ...]) -> Owner:
        """The component an event instance belongs to."""
        t = self.instance_type.get(ev.actor)
        if t is not None and ev.params and ev.params[0][1] == t:
            return (ev.actor, args[0])
        return (ev.actor, None)

    # ---- what a piece of IR touches ---------------------------------------------------
    def visit(self, node: ir.Node, env: dict[int, int], acc: _Access) -> None:
        """Record the cells and clocks ``node`` reads and writes."""
        if isinstance(node, ir.Broadcast):
            for st in node.sender:
                self.visit(st, env, acc)
            for rc in node.receivers:
                self.receiver(rc, env, acc)
            return
        if isinstance(node, ir.Read):
            acc.reads.update((node.var.name, p) for p in
                             _points(node.var.domain, node.index, env))
        elif isinstance(node, ir.Assign):
            acc.writes.update((node.var.name, p) for p in
                              _points(node.var.domain, node.index, env))
        elif isinstance(node, (ir.ClockTest, ir.ResetClock)):
            base = self.clock_base[node.clock.name]
            for p in _points(node.clock.domain, node.index, env):
                c = base + ir.cell_index(node.clock.domain, p)
                acc.clocks.add(c)
                if isinstance(node, ir.ClockTest):
                    (self.lower if node.op in LOWER_OPS else self.upper)[c].add(node.bound)
        for kid in ir.children(node):
            self.visit(kid, env, acc)

    def receiver(self, rc: ir.Receiver, env: dict[int, int], acc: _Access) -> None:
        """Every binding of a broadcast's receiving event: each evaluates its guard."""
        types = tuple(t for _, t in rc.slots)
        for p in ir.domain_points(types):
            inner = dict(env)
            inner.update((slot, v) for (slot, _), v in zip(rc.slots, p, strict=True))
            if rc.instance is not None:
                proc, slot = rc.instance
                acc.parties.add((proc, None if slot is None else inner.get(slot)))
            self.visit(rc.guard, inner, acc)
            for st in rc.body:
                self.visit(st, inner, acc)

    def events(self) -> list[_Access]:
        """What each event instance touches, in the model's order of instances."""
        out: list[_Access] = []
        for ev in self.spec.events:
            for args in ir.domain_points(tuple(t for _, t in ev.params)):
                env = dict(enumerate(args))
                acc = _Access(self.home(ev, args))
                self.visit(ev.guard, env, acc)
                for br in ev.branches:
                    self.visit(br.data, env, acc)
                    for ct in br.clocks:
                        self.visit(ct, env, acc)
                for st in ev.body:
                    self.visit(st, env, acc)
                if ev.receives is not None:
                    for e in ev.receives[1]:
                        self.visit(e, env, acc)
                out.append(acc)
        return out

    def deadlines(self) -> list[_Access]:
        """What each deadline instance reads, and its clocks."""
        out: list[_Access] = []
        for dl in self.spec.deadlines:
            for args in ir.domain_points(tuple(t for _, t in dl.params)):
                env = dict(enumerate(args))
                acc = _Access(("", None))
                self.visit(dl.cond, env, acc)
                for ct in dl.atoms:
                    self.visit(ct, env, acc)
                out.append(acc)
        return out

    # ---- ownership --------------------------------------------------------------------
    def owners(self, events: list[_Access]) -> tuple[dict[Cell, Owner], list[Owner]]:
        """The owner of every cell and of every clock."""
        var_of = {v.name: v for v in self.spec.vars}
        users: dict[Cell, set[Owner]] = {}
        clock_users: dict[int, set[Owner]] = {}
        for acc in events:
            for cell in acc.reads | acc.writes:
                users.setdefault(cell, set()).add(acc.home)
            for c in acc.clocks:
                clock_users.setdefault(c, set()).add(acc.home)
        cells: dict[Cell, Owner] = {}
        for cell, who in users.items():
            v = var_of[cell[0]]
            named = self.named_owner(v.name, v.domain, cell[1])
            if named is not None:
                cells[cell] = named
            elif len(who) == 1:
                cells[cell] = next(iter(who))
            else:
                cells[cell] = (f"var {v.name}", None)
        clocks: list[Owner] = []
        for c in range(self.n_clocks):
            clk = self.clock_decl[c]
            named = self.named_owner(clk.name, clk.domain, self.clock_index[c])
            who = clock_users.get(c, set())
            if named is not None:
                clocks.append(named)
            elif len(who) == 1:
                clocks.append(next(iter(who)))
            else:
                clocks.append((f"clock {clk.name}", None))
        return cells, clocks


def _show(o: Owner, types: Mapping[str, ir.FiniteType | None]) -> str:
    t = types.get(o[0])
    return o[0] if o[1] is None or t is None else f"{o[0]}[{t.show(o[1])}]"


def unsupported(spec: ir.Spec) -> str | None:
    """Why local-time zones cannot check ``spec`` soundly (None: they can)."""
    if any(clk.name == "urgent" and not clk.domain for clk in spec.clocks):
        return ("urgent and committed events (an urgent channel, a committed location)"
                " stop every process's time at once")
    if spec.responses:
        return ("bounded responses (`leadsto ... within`) are judged on clock values,"
                " which local time does not keep synchronised")
    if any(br.clocks for q in spec.queries for br in q.branches):
        return ("a `reachable` query compares clocks, which local time does not keep"
                " synchronised")
    return None


def components(spec: ir.Spec) -> Components:
    """The component structure of ``spec``."""
    an = _Analysis(spec)
    events = an.events()
    deadlines = an.deadlines()
    cells, clock_owner = an.owners(events)
    order: dict[Owner, int] = {}

    def comp(o: Owner) -> int:
        return order.setdefault(o, len(order))

    clocks = tuple(comp(o) for o in clock_owner)
    coupled = [({cells[c] for c in d.reads if c in cells}, {clock_owner[c] for c in d.clocks},
                d.reads) for d in deadlines]
    syncs: list[tuple[int, ...]] = []
    for acc in events:
        mine = {acc.home, *acc.parties}
        mine.update(cells[c] for c in acc.reads | acc.writes)
        mine.update(clock_owner[c] for c in acc.clocks)
        for _, owners, reads in coupled:
            if owners and not acc.writes.isdisjoint(reads):
                mine.update(owners)
        syncs.append(tuple(sorted(comp(o) for o in mine)))
    names = [""] * len(order)
    for o, i in order.items():
        names[i] = _show(o, an.instance_type)
    lower = tuple(tuple(sorted(bs, key=str)) for bs in an.lower)
    upper = tuple(tuple(sorted(bs, key=str)) for bs in an.upper)
    return Components(tuple(names), clocks, tuple(syncs), lower, upper, unsupported(spec))

"""Export a spec as a network of UPPAAL timed automata (``kvrace export --uppaal``).

The network is the one :mod:`checker.export.network` builds for TChecker
(:func:`~checker.export.network.build_network`), written in UPPAAL's XML format
(the ``nta`` document of UPPAAL's flat-system DTD) instead of TChecker's text:

* one template per process (actor or process instance ``P_...``, deadline instance
  ``D_...``, ``verdict``, query ``Q_...``), each instantiated once by ``system``;
  the locations and edges are TChecker's, one transition per TChecker edge;
* the ints as global bounded ints (``int[lo,hi] v_x[n]``), the clocks as clocks;
  an event's body is a function ``do_eN()`` called by the transition's update;
* a synchronisation vector of two processes that both must take part is a binary
  channel (``chan eN``: the owner sends ``eN!``, the other receives ``eN?``); a
  larger one a broadcast channel (``broadcast chan eN``) sent by the event's owner
  (the vector's first process, whose edge carries the guard and the body).
  That is exact because every other process that must take part has an unguarded
  edge whose body resets clocks only, and either leaves each of its locations that
  has an edge at all, or leaves one only and the sender's guard requires it to be
  there (its location's int holds it); a process that takes part weakly (a broadcast
  receiver) has unguarded edges whose bodies reset clocks only (this module checks
  both): UPPAAL's receivers of a broadcast then take part exactly when TChecker's
  strong and weak participants do, and take the same edges.  The property events
  (``violates_...``, ``late_...``, ``reach_...``) are transitions without a channel;
* ``committed``/``urgent`` locations where TChecker has ``committed:``/``urgent:``;
  invariants on ints as UPPAAL allows (a state breaking one does not exist, as in
  TChecker);
* the queries ``A[] not (verdict.bad or verdict.broken)`` (the properties: it holds
  exactly when ``kvrace check --no-deadlock`` does) and ``E<> Q_NAME.yes`` for each
  ``reachable NAME`` in the ``<queries>`` section, so ``verifyta FILE`` answers them.

A value outside a variable's range, or an index outside an array, stops UPPAAL's
verification with an error (TChecker drops such a transition; kvrace reports a
model run-time error).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from xml.sax.saxutils import escape, quoteattr

from checker.export.flat import UPPAAL_DOCTYPE
from checker.export.network import NetworkError, build_network
from checker.export.terms import (
    Assign,
    Cell,
    Cmp,
    CmpOp,
    Cond,
    Decl,
    DeclKind,
    Edge,
    EventKind,
    If,
    Local,
    Location,
    Name,
    NetModel,
    Nop,
    Process,
    Stmt,
    Sync,
    Syntax,
    cond_text,
    holds,
    initial_cells,
    term_text,
)
from checker.model import ir

BAD_QUERY = "A[] not (verdict.bad or verdict.broken)"
"""The properties' query: no location labelled ``bad`` is reachable."""


@dataclass
class UppaalNetwork:
    """A spec as an UPPAAL network: the XML and its size."""

    text: str
    templates: list[str]
    locations: int
    transitions: int
    model: NetModel


def uppaal_network(spec: ir.Spec, values: Mapping[str, Fraction],
                   queries: bool = True) -> UppaalNetwork:
    """``spec`` at parameter ``values`` as UPPAAL XML (see the module docstring); raises
    :class:`NetworkError` for what it cannot express."""
    net = build_network(spec, values, queries)
    return UppaalNetwork(uppaal_xml(net), [p.name for p in net.processes],
                         sum(len(p.locations) for p in net.processes), len(net.edges), net)


# ---- the channels -----------------------------------------------------------------------


class _Channel:
    """How one synchronisation vector is written: its channel and who sends it."""

    def __init__(self, sync: Sync) -> None:
        self.event = sync.event
        self.sender = sync.parts[0][0]
        self.binary = len(sync.parts) == 2 and not any(weak for _, weak in sync.parts)
        self.parts = sync.parts

    def declaration(self) -> str:
        return f"{'chan' if self.binary else 'broadcast chan'} {self.event};"

    def label(self, process: str) -> str:
        return f"{self.event}{'!' if process == self.sender else '?'}"


def _check_receivers(net: NetModel, channels: Mapping[str, _Channel]) -> None:
    """That UPPAAL's channels make the same moves as TChecker's vectors (see the module
    docstring); a failure is a bug of the translation, not of the spec."""
    by_proc: dict[tuple[str, str], list[Edge]] = {}
    for e in net.edges:
        by_proc.setdefault((e.process, e.event), []).append(e)
    clocks = {d.name for d in net.decls if d.kind == DeclKind.CLOCK}
    procs = {p.name: p for p in net.processes}
    for ch in channels.values():
        for proc, weak in ch.parts[1:]:
            mine = by_proc.get((proc, ch.event), [])
            if any(e.guard or not all(_is_reset(s, clocks) for s in e.do) for e in mine):
                raise NetworkError(f"internal: {proc}'s edge on {ch.event} is guarded",
                                   flat_helps=True)
            if weak:
                continue
            moving = {e.source for e in net.edges if e.process == proc}
            if not moving <= {e.source for e in mine} and not _pinned(
                    procs[proc], mine, by_proc.get((ch.sender, ch.event), [])):
                raise NetworkError(f"internal: {proc} cannot always take part in"
                                   f" {ch.event}", flat_helps=True)


def _pinned(proc: Process, mine: list[Edge], sent: list[Edge]) -> bool:
    """Whether ``proc`` leaves one location on the event and every sender's edge
    requires it to be there (its location's int holds that location's index)."""
    sources = {e.source for e in mine}
    if proc.at is None or len(sources) != 1:
        return False
    index = [loc.name for loc in proc.locations].index(sources.pop())
    pin = Cmp(CmpOp.EQ, Cell(*proc.at), index)
    return bool(sent) and all(pin in e.guard for e in sent)


def _is_reset(s: Stmt, clocks: set[str]) -> bool:
    return (isinstance(s, Assign) and isinstance(s.target, Name) and s.target.text in clocks
            and s.value == 0)


# ---- printing ---------------------------------------------------------------------------


def _locals(stmts: tuple[Stmt, ...]) -> list[str]:
    out: list[str] = []
    for s in stmts:
        if isinstance(s, Local):
            out.append(s.name)
        elif isinstance(s, If):
            out.extend(_locals(s.then) + _locals(s.orelse))
    return out


def uppaal_stmt(s: Stmt, indent: str) -> list[str]:
    """``s`` as lines of UPPAAL's C-like statements (a local is declared at the top of
    its function, as UPPAAL's blocks want, and assigned here)."""
    if isinstance(s, Assign):
        return [f"{indent}{term_text(s.target, Syntax.UPPAAL)} = "
                f"{term_text(s.value, Syntax.UPPAAL)};"]
    if isinstance(s, Local):
        return [f"{indent}{s.name} = {term_text(s.value, Syntax.UPPAAL)};"]
    if isinstance(s, Nop):
        return [f"{indent};"]
    lines = [f"{indent}if ({cond_text(s.cond, Syntax.UPPAAL)}) {{"]
    for x in s.then:
        lines.extend(uppaal_stmt(x, indent + "    "))
    if s.orelse:
        lines.append(f"{indent}}} else {{")
        for x in s.orelse:
            lines.extend(uppaal_stmt(x, indent + "    "))
    lines.append(f"{indent}}}")
    return lines


def _function(name: str, body: tuple[Stmt, ...]) -> list[str]:
    lines = [f"void {name}() {{"]
    lines.extend(f"    int {n};" for n in _locals(body))
    for s in body:
        lines.extend(uppaal_stmt(s, "    "))
    lines.append("}")
    return lines


def _comment(text: str) -> str:
    """Text safe in a ``//`` comment."""
    return " ".join(text.split())


def _decl_line(d: Decl) -> str:
    if d.kind == DeclKind.CLOCK:
        return f"clock {d.name};"
    if d.kind == DeclKind.INT:
        return f"int[{d.lo},{d.hi}] {d.name} = {d.init};"
    return (f"int[{d.lo},{d.hi}] {d.name}[{d.size}] = "
            f"{{{', '.join([str(d.init)] * d.size)}}};")


def _conj(conds: tuple[Cond, ...]) -> str:
    return " && ".join(cond_text(c, Syntax.UPPAAL) for c in conds)


def _initial(p: Process, cells: Mapping[str, list[int]]) -> Location:
    """The location ``p`` starts in: its only initial one, or the initial one whose
    invariant the initial values satisfy (a deadline process's ``off`` or ``on``)."""
    first = [loc for loc in p.locations if loc.initial]
    if len(first) == 1:
        return first[0]
    valid = [loc for loc in first if loc.invariant is None or holds(loc.invariant, cells)]
    if len(valid) != 1:
        raise NetworkError(f"{p.name} has {len(valid)} possible initial locations",
                           flat_helps=True)
    return valid[0]


def _global_declaration(net: NetModel, channels: Mapping[str, _Channel],
                        bodies: Mapping[tuple[Stmt, ...], str]) -> list[str]:
    head = [f"// {_comment(line)}" for line in net.header]
    if head:
        head[0] += " (kvrace export --uppaal)"
    lines = [*head, "// check: verifyta FILE (the queries below)", ""]
    for d in net.decls:
        if d.comment:
            lines.append(f"// {_comment(d.comment)}")
        lines.append(_decl_line(d))
    lines.append("")
    comments = {ev.name: ev.comment for ev in net.events}
    for ch in channels.values():
        if comments.get(ch.event):
            lines.append(f"// {ch.event} is {_comment(comments[ch.event])}")
        lines.append(ch.declaration())
    for body, name in bodies.items():
        lines.append("")
        lines.extend(_function(name, body))
    return lines


def _template(p: Process, edges: list[Edge], channels: Mapping[str, _Channel],
              bodies: Mapping[tuple[Stmt, ...], str], ids: dict[tuple[str, str], str],
              cells: Mapping[str, list[int]]) -> list[str]:
    out = ["  <template>", f"    <name>{escape(p.name)}</name>"]
    if p.comment:
        out.append(f"    <declaration>{escape('// ' + _comment(p.comment))}</declaration>")
    for k, loc in enumerate(p.locations):
        ids[p.name, loc.name] = f"id{len(ids)}"
        out.append(f"    <location id={quoteattr(ids[p.name, loc.name])} x=\"{200 * k}\""
                   " y=\"0\">")
        out.append(f"      <name x=\"{200 * k - 20}\" y=\"-34\">{escape(loc.name)}</name>")
        if loc.invariant is not None:
            out.append(f"      <label kind=\"invariant\">"
                       f"{escape(cond_text(loc.invariant, Syntax.UPPAAL))}</label>")
        if loc.labels:
            out.append(f"      <label kind=\"comments\">labels: "
                       f"{escape(', '.join(loc.labels))}</label>")
        if loc.urgent:
            out.append("      <urgent/>")
        if loc.committed:
            out.append("      <committed/>")
        out.append("    </location>")
    out.append(f"    <init ref={quoteattr(ids[p.name, _initial(p, cells).name])}/>")
    for e in edges:
        out.append("    <transition>")
        out.append(f"      <source ref={quoteattr(ids[p.name, e.source])}/>")
        out.append(f"      <target ref={quoteattr(ids[p.name, e.target])}/>")
        if e.guard:
            out.append(f"      <label kind=\"guard\">{escape(_conj(e.guard))}</label>")
        ch = channels.get(e.event)
        if ch is not None:
            out.append(f"      <label kind=\"synchronisation\">{ch.label(p.name)}</label>")
        if e.do:
            out.append(f"      <label kind=\"assignment\">{bodies[e.do]}()</label>")
        out.append(f"      <label kind=\"comments\">{escape(e.event)}</label>")
        out.append("    </transition>")
    out.append("  </template>")
    return out


def _queries(net: NetModel) -> list[str]:
    items = [(BAD_QUERY, "no property is violated (kvrace check --no-deadlock holds)")]
    items.extend((f"E<> {pname}.yes", f"reachable {label}") for pname, label in net.queries())
    out = ["  <queries>"]
    for formula, comment in items:
        out.append("    <query>")
        out.append(f"      <formula>{escape(formula)}</formula>")
        out.append(f"      <comment>{escape(comment)}</comment>")
        out.append("    </query>")
    out.append("  </queries>")
    return out


def uppaal_xml(net: NetModel) -> str:
    """``net`` as UPPAAL's XML (see the module docstring)."""
    channels = {s.event: _Channel(s) for s in net.syncs}
    _check_receivers(net, channels)
    synced = {ev.name for ev in net.events if ev.kind != EventKind.PROPERTY}
    if set(channels) != synced:  # pragma: no cover -- the builder pairs them
        raise NetworkError("internal: an event without its synchronisation")
    bodies: dict[tuple[Stmt, ...], str] = {}
    names: set[str] = set()
    for e in net.edges:
        if e.do and e.do not in bodies:
            name = f"do_{e.event}"
            bodies[e.do] = name if name not in names else f"{name}_{e.process}"
            names.add(bodies[e.do])
    cells = initial_cells(net)
    out = ['<?xml version="1.0" encoding="utf-8"?>', UPPAAL_DOCTYPE, "<nta>"]
    decl = _global_declaration(net, channels, bodies)
    out.append(f"  <declaration>{escape(chr(10).join(decl))}</declaration>")
    ids: dict[tuple[str, str], str] = {}
    for p in net.processes:
        mine = [e for e in net.edges if e.process == p.name]
        out.extend(_template(p, mine, channels, bodies, ids, cells))
    out.append(f"  <system>system {', '.join(p.name for p in net.processes)};</system>")
    out.extend(_queries(net))
    out.append("</nta>")
    return "\n".join(out) + "\n"


__all__ = ["BAD_QUERY", "UppaalNetwork", "uppaal_network", "uppaal_stmt", "uppaal_xml"]

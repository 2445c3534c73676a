"""``kvrace export --uppaal``: the network of UPPAAL templates.

* The XML must have the shape UPPAAL's flat-system DTD gives an ``nta`` (element
  order, label kinds, references resolved, one ``init`` per template, the system
  line instantiating every template, the queries).
* The strong check: a reader of the UPPAAL document (a parser of the C-like
  expressions, statements and declarations it uses, written here, independent of
  the exporter's printers) rebuilds the network and writes it in TChecker's format;
  that must be the TChecker network export, declaration by declaration (the same
  ints and clocks, processes, locations, edges with their guards and bodies, and
  synchronisations), so both exports describe the same network.  Two differences
  are by design and checked as such: a deadline process starts in one location
  (TChecker marks both ``off`` and ``on`` initial and keeps the one whose
  invariant holds), and a broadcast channel does not say which receivers TChecker
  calls strong (each of those has an unguarded edge from every location it can
  leave, so it takes part whenever it would have to).
* Where ``verifyta`` is on PATH (or named by ``$VERIFYTA``), UPPAAL itself must
  answer the properties' query as ``kvrace check --no-deadlock`` does.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from test_export import QUERY_SPEC, SMALL

from checker import api
from checker.engines import Options
from checker.export.network import NetworkError, build_network, tchecker_network
from checker.export.terms import (
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
    Truth,
    evaluate,
    holds,
    initial_cells,
    tchecker_text,
)
from checker.export.uppaal import BAD_QUERY, uppaal_network, uppaal_xml
from checker.language import load, load_text
from checker.model.compiled import SpecModel

SPECS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "spec").rglob("*.kvr"))

# ---- UPPAAL's document shape ----------------------------------------------------------

NTA_ORDER = ["imports", "declaration", "template", "instantiation", "system", "queries"]
TEMPLATE_ORDER = ["name", "parameter", "declaration", "location", "branchpoint", "init",
                  "transition"]
LOCATION_ORDER = ["name", "label", "urgent", "committed"]
TRANSITION_ORDER = ["source", "target", "label", "nail"]
LOCATION_LABELS = {"invariant", "exponentialrate", "comments"}
TRANSITION_LABELS = {"select", "guard", "synchronisation", "assignment", "probability",
                     "comments", "testcodeEnter", "testcodeExit"}


def _in_order(children: list[ET.Element], order: list[str]) -> None:
    ranks = [order.index(c.tag) for c in children]  # ValueError: an element the DTD lacks
    assert ranks == sorted(ranks), [c.tag for c in children]


def check_shape(xml: str) -> ET.Element:
    """The document's shape: what UPPAAL's loader expects of an ``nta``."""
    assert xml.startswith('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE nta PUBLIC')
    root = ET.fromstring(xml.encode("utf-8"))
    assert root.tag == "nta"
    _in_order(list(root), NTA_ORDER)
    assert [c.tag for c in root].count("system") == 1
    assert [c.tag for c in root].count("declaration") == 1
    ids: set[str] = set()
    names: list[str] = []
    for tpl in root.iter("template"):
        _in_order(list(tpl), TEMPLATE_ORDER)
        name = tpl.findtext("name") or ""
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name not in names
        names.append(name)
        mine: set[str] = set()
        loc_names: set[str] = set()
        for loc in tpl.findall("location"):
            _in_order(list(loc), LOCATION_ORDER)
            lid = loc.get("id") or ""
            assert lid and lid not in ids, lid  # an XML ID: unique in the document
            ids.add(lid)
            mine.add(lid)
            lname = loc.findtext("name") or ""
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", lname) and lname not in loc_names
            loc_names.add(lname)
            assert re.fullmatch(r"-?[0-9]+", loc.get("x", "")), lid
            assert re.fullmatch(r"-?[0-9]+", loc.get("y", "")), lid
            assert {lab.get("kind") for lab in loc.findall("label")} <= LOCATION_LABELS
            assert len(loc.findall("urgent")) + len(loc.findall("committed")) <= 1
        inits = tpl.findall("init")
        assert len(inits) == 1 and inits[0].get("ref") in mine
        for tr in tpl.findall("transition"):
            _in_order(list(tr), TRANSITION_ORDER)
            src, dst = tr.find("source"), tr.find("target")
            assert src is not None and src.get("ref") in mine
            assert dst is not None and dst.get("ref") in mine
            kinds = [lab.get("kind") for lab in tr.findall("label")]
            assert set(kinds) <= TRANSITION_LABELS and len(kinds) == len(set(kinds)), kinds
    system = (root.findtext("system") or "").strip()
    m = re.fullmatch(r"system ([A-Za-z0-9_, ]+);", system)
    assert m and m.group(1).split(", ") == names, system
    formulas = [q.findtext("formula") for q in root.iter("query")]
    assert formulas and formulas[0] == BAD_QUERY
    assert all(re.fullmatch(r"E<> Q_[A-Za-z0-9_]+\.yes", f or "") for f in formulas[1:])
    return root


# ---- reading the UPPAAL network back ------------------------------------------------------

TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)"
                   r"|(&&|\|\||==|!=|<=|>=|[-+*/%<>!?:()\[\]{};,=]))")
CMP = {op.value: op for op in CmpOp}
ADD = {"+": ArithOp.ADD, "-": ArithOp.SUB}
MUL = {"*": ArithOp.MUL, "/": ArithOp.DIV, "%": ArithOp.MOD}


def tokens(text: str) -> list[str]:
    text = re.sub(r"//[^\n]*", "", text)
    out: list[str] = []
    pos = 0
    while text[pos:].strip():
        m = TOKEN.match(text, pos)
        assert m, f"cannot read {text[pos:pos + 40]!r}"
        out.append(m.group(0).strip())
        pos = m.end()
    return out


@dataclass
class Reader:
    """A recursive-descent parser of the UPPAAL expressions, statements and declarations
    the export writes (C's precedences; a negative literal is a number)."""

    toks: list[str]
    pos: int = 0
    locals_: tuple[set[str], ...] = ()

    def peek(self) -> str:
        return self.toks[self.pos] if self.pos < len(self.toks) else ""

    def take(self, want: str | None = None) -> str:
        t = self.peek()
        assert t and (want is None or t == want), (want, t, self.toks[self.pos - 5:self.pos + 5])
        self.pos += 1
        return t

    def number(self) -> int:
        """An integer literal, perhaps negative."""
        sign = -1 if self.peek() == "-" and self.take() else 1
        return sign * int(self.take())

    def done(self) -> bool:
        return self.pos == len(self.toks)

    # expressions: ternary > && > comparison > additive > multiplicative > unary > primary
    def expr(self) -> Term | Cond:
        c = self.conj()
        if self.peek() != "?":
            return c
        self.take("?")
        a = self.expr()
        self.take(":")
        b = self.expr()
        return Ite(as_cond(c), as_term(a), as_term(b))

    def conj(self) -> Term | Cond:
        first = self.compare()
        parts = [first]
        while self.peek() == "&&":
            self.take()
            parts.append(self.compare())
        return first if len(parts) == 1 else Conj(tuple(as_cond(p) for p in parts))

    def compare(self) -> Term | Cond:
        a = self.additive()
        if self.peek() in CMP:
            op = CMP[self.take()]
            return Cmp(op, a, self.additive())
        return a

    def additive(self) -> Term:
        a = self.multiplicative()
        while self.peek() in ADD:
            a = Arith(ADD[self.take()], a, self.multiplicative(), wrap=False)
        return a

    def multiplicative(self) -> Term:
        a = self.unary()
        while self.peek() in MUL:
            a = Arith(MUL[self.take()], a, self.unary(), wrap=False)
        return a

    def unary(self) -> Term:
        if self.peek() == "-":
            self.take()
            if self.peek().isdigit():
                return -int(self.take())  # a negative constant
            return Neg(self.unary())
        return as_term(self.primary())

    def primary(self) -> Term | Cond:
        t = self.take()
        if re.fullmatch(r"-?\d+", t):
            return int(t)
        if t in ("true", "false"):
            return Truth(t == "true")
        if t == "(":
            e = self.expr()
            self.take(")")
            return Arith(e.op, e.left, e.right) if isinstance(e, Arith) else e
        assert re.fullmatch(r"[A-Za-z_]\w*", t), t
        if self.peek() == "[":
            self.take("[")
            index = as_term(self.expr())
            self.take("]")
            return Cell(t, index)
        return Name(t)

    # statements
    def block(self) -> tuple[Stmt, ...]:
        self.take("{")
        out: list[Stmt] = []
        while self.peek() != "}":
            out.append(self.stmt())
        self.take("}")
        return tuple(out)

    def stmt(self) -> Stmt:
        if self.peek() == ";":
            self.take()
            return Nop()
        if self.peek() == "if":
            self.take()
            self.take("(")
            c = as_cond(self.expr())
            self.take(")")
            then = self.block()
            orelse: tuple[Stmt, ...] = ()
            if self.peek() == "else":
                self.take()
                orelse = self.block()
            return If(c, then, orelse)
        target = self.primary()
        assert isinstance(target, Name | Cell), target
        self.take("=")
        value = as_term(self.expr())
        self.take(";")
        if isinstance(target, Name) and self.locals_ and target.text in self.locals_[0]:
            self.locals_[0].discard(target.text)  # its one assignment declares it
            return Local(target.text, value)
        return Assign(target, value)

    def function(self) -> tuple[str, tuple[Stmt, ...]]:
        self.take("void")
        name = self.take()
        self.take("(")
        self.take(")")
        self.take("{")
        declared: set[str] = set()
        while self.peek() == "int":
            self.take()
            declared.add(self.take())
            self.take(";")
        self.locals_ = (declared,)
        body: list[Stmt] = []
        while self.peek() != "}":
            body.append(self.stmt())
        self.take("}")
        assert not declared, f"{name}: locals never assigned: {declared}"
        self.locals_ = ()
        return name, tuple(body)


def as_term(e: Term | Cond) -> Term:
    assert isinstance(e, int | Name | Cell | Ite | Arith | Neg), e
    return e


def as_cond(e: Term | Cond) -> Cond:
    assert isinstance(e, Truth | Cmp | Conj), e
    return e


def parse_cond(text: str) -> tuple[Cond, ...]:
    """A guard or invariant: its top-level conjuncts."""
    r = Reader(tokens(text))
    e = r.expr()
    assert r.done(), text
    return e.parts if isinstance(e, Conj) else (as_cond(e),)


@dataclass
class Globals:
    """What the global declaration declares."""

    decls: list[Decl]
    channels: dict[str, bool]
    """Each channel and whether it is a broadcast channel."""
    functions: dict[str, tuple[Stmt, ...]]


def read_globals(text: str) -> Globals:
    r = Reader(tokens(text))
    g = Globals([], {}, {})
    while not r.done():
        t = r.peek()
        if t == "void":
            name, body = r.function()
            g.functions[name] = body
        elif t in ("chan", "broadcast"):
            broadcast = r.take() == "broadcast"
            if broadcast:
                r.take("chan")
            g.channels[r.take()] = broadcast
            r.take(";")
        elif t == "clock":
            r.take()
            g.decls.append(Decl(DeclKind.CLOCK, r.take()))
            r.take(";")
        else:
            g.decls.append(read_int(r))
    return g


def read_int(r: Reader) -> Decl:
    r.take("int")
    r.take("[")
    lo = r.number()
    r.take(",")
    hi = r.number()
    r.take("]")
    name = r.take()
    if r.peek() == "[":
        r.take()
        size = r.number()
        r.take("]")
        r.take("=")
        r.take("{")
        inits = [r.number()]
        while r.peek() == ",":
            r.take()
            inits.append(r.number())
        r.take("}")
        r.take(";")
        assert len(inits) == size and len(set(inits)) == 1, name
        return Decl(DeclKind.INT_ARRAY, name, size, lo, hi, inits[0])
    r.take("=")
    init = r.number()
    r.take(";")
    return Decl(DeclKind.INT, name, 1, lo, hi, init)


@dataclass
class Readback:
    """The network read from an UPPAAL document, and what TChecker's format cannot say."""

    net: NetModel
    init: dict[str, str]
    """Each template's initial location."""
    broadcast: dict[str, bool]
    sender: dict[str, str]


def read_uppaal(xml: str) -> Readback:
    root = ET.fromstring(xml.encode("utf-8"))
    g = read_globals(root.findtext("declaration") or "")
    net = NetModel("system", decls=g.decls)
    init: dict[str, str] = {}
    senders: dict[str, str] = {}
    parts: dict[str, list[str]] = {}
    events: list[str] = []
    for tpl in root.iter("template"):
        pname = tpl.findtext("name") or ""
        names: dict[str, str] = {}
        proc = Process(pname, ProcessKind.ACTOR)
        for loc in tpl.findall("location"):
            lname = loc.findtext("name") or ""
            names[loc.get("id") or ""] = lname
            inv = loc.find("label[@kind='invariant']")
            comment = loc.findtext("label[@kind='comments']") or ""
            labels = tuple(comment.removeprefix("labels: ").split(", ")) if comment else ()
            invariant = parse_cond(inv.text or "") if inv is not None else None
            proc.locations.append(Location(
                lname, committed=loc.find("committed") is not None,
                urgent=loc.find("urgent") is not None, labels=labels,
                invariant=(invariant[0] if len(invariant) == 1 else Conj(invariant))
                if invariant else None))
        ref = tpl.find("init")
        assert ref is not None
        init[pname] = names[ref.get("ref") or ""]
        net.processes.append(proc)
        for tr in tpl.findall("transition"):
            src, dst = tr.find("source"), tr.find("target")
            assert src is not None and dst is not None
            guard = tr.findtext("label[@kind='guard']")
            sync = tr.findtext("label[@kind='synchronisation']")
            update = tr.findtext("label[@kind='assignment']")
            event = tr.findtext("label[@kind='comments']") or ""
            if sync is not None:
                m = re.fullmatch(r"(\w+)([!?])", sync)
                assert m and m.group(1) == event and event in g.channels, sync
                if m.group(2) == "!":
                    assert senders.setdefault(event, pname) == pname
                elif pname not in parts.setdefault(event, []):
                    parts[event].append(pname)
            if event not in events:
                events.append(event)
            body: tuple[Stmt, ...] = ()
            if update is not None:
                m = re.fullmatch(r"(\w+)\(\)", update)
                assert m and m.group(1) in g.functions, update
                body = g.functions[m.group(1)]
            net.edges.append(Edge(pname, names[src.get("ref") or ""],
                                  names[dst.get("ref") or ""], event,
                                  parse_cond(guard) if guard else (), body))
    net.events = [Event(e, EventKind.STEP) for e in events]
    for ev, sender in senders.items():
        net.syncs.append(Sync(ev, ((sender, False), *((p, True) for p in parts.get(ev, [])))))
    assert set(senders) == set(g.channels), "a channel nobody sends"
    return Readback(net, init, g.channels, senders)


# ---- comparing the two exports --------------------------------------------------------------


def declarations(text: str) -> dict[str, list[str]]:
    """A TChecker text's declarations by kind (comments and blank lines dropped)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            out.setdefault(line.split(":", 1)[0], []).append(line)
    return out


def without_initial(line: str) -> str:
    return re.sub(r"\binitial:(?: : )?", "", line).replace(" : }", "}")


def compare(path: str, queries: bool = True) -> Readback:
    """Export ``path`` both ways and require the same network (see the module docstring)."""
    return compare_model(SpecModel(load(ROOT / path)), queries)


def compare_model(model: SpecModel, queries: bool = True) -> Readback:
    """:func:`compare` on a compiled spec."""
    tck = tchecker_network(model.spec, model.values, queries)
    upp = uppaal_network(model.spec, model.values, queries)
    check_shape(upp.text)
    back = read_uppaal(upp.text)
    want, got = declarations(tck.text), declarations(tchecker_text(back.net))
    for kind in ("int", "clock", "process", "event", "edge"):
        assert sorted(got.get(kind, [])) == sorted(want.get(kind, [])), kind
    # Locations: the same, apart from `initial`, which the next block checks.
    assert ([without_initial(x) for x in got["location"]]
            == [without_initial(x) for x in want["location"]])
    net = tck.model
    assert net is not None
    cells = initial_cells(net)
    for p in net.processes:
        first = [loc for loc in p.locations if loc.initial]
        valid = [loc.name for loc in first if loc.invariant is None
                 or holds(loc.invariant, cells)]
        assert valid == [back.init[p.name]], (p.name, valid, back.init[p.name])
    # Synchronisations: the owner sends; the channel's participants are the vector's.
    assert len(back.net.syncs) == len(net.syncs)
    strong_edges: dict[tuple[str, str], set[str]] = {}
    for e in net.edges:
        strong_edges.setdefault((e.process, e.event), set()).add(e.source)
    for s in net.syncs:
        owner = s.parts[0][0]
        assert back.sender[s.event] == owner
        two_strong = len(s.parts) == 2 and not s.parts[1][1]
        assert back.broadcast[s.event] == (not two_strong), s
        mine = next(x for x in back.net.syncs if x.event == s.event)
        assert sorted(p for p, _ in mine.parts[1:]) == sorted(p for p, _ in s.parts[1:])
        for proc, weak in s.parts[1:]:
            edges = [e for e in net.edges if e.process == proc and e.event == s.event]
            assert edges, (proc, s.event)
            if weak:
                check_weak_edges(net, edges)
                continue
            assert all(not e.guard and only_resets(net, e) for e in edges), (proc, s.event)
            moving = {e.source for e in net.edges if e.process == proc}
            if moving <= strong_edges[proc, s.event]:
                continue  # it can take part wherever it can move at all
            # or it leaves one location, where every edge of the sender requires it
            assert len(strong_edges[proc, s.event]) == 1, (proc, s.event)
            check_pinned(net, net.process(proc), edges[0].source,
                         [e for e in net.edges if e.process == owner and e.event == s.event])
    # The property events have no channel; the step events have one each.
    step = {e.name for e in net.events if e.kind != EventKind.PROPERTY}
    assert set(back.broadcast) == step
    return back


def valuations(net: NetModel, n: int, seed: int) -> list[dict[str, list[int]]]:
    """``n`` random values of the network's ints, in their ranges."""
    rnd = random.Random(seed)
    ints = [d for d in net.decls if d.kind != DeclKind.CLOCK]
    return [{d.name: [rnd.randint(d.lo, d.hi) for _ in range(d.size)] for d in ints}
            for _ in range(n)]


def check_weak_edges(net: NetModel, edges: list[Edge]) -> None:
    """A weak participant's edges on one event: unguarded (as TChecker requires), with
    bodies that reset clocks only; a spec process's own has one edge from each
    location (a deadline process two, whose target's invariant chooses), so it takes
    part in UPPAAL's broadcast as in TChecker's weak synchronisation."""
    for e in edges:
        assert not e.guard and only_resets(net, e), e
    if net.process(edges[0].process).at is not None:
        sources = [e.source for e in edges]
        assert len(sources) == len(set(sources)), edges


def only_resets(net: NetModel, e: Edge) -> bool:
    """Whether ``e``'s body only resets clocks."""
    clocks = {d.name for d in net.decls if d.kind == DeclKind.CLOCK}
    return all(isinstance(x, Assign) and isinstance(x.target, Name)
               and x.target.text in clocks and x.value == 0 for x in e.do)


def check_pinned(net: NetModel, proc: Process, source: str, sent: list[Edge]) -> None:
    """Every sender's edge requires ``proc`` to be at ``source``: its guard fails on
    every sampled valuation whose location int says otherwise."""
    assert proc.at is not None and sent
    array, pos = proc.at
    index = [loc.name for loc in proc.locations].index(source)
    for cells in valuations(net, 200, index):
        if cells[array][pos] != index:
            for e in sent:
                assert not all(holds(c, cells) for c in e.guard), (e, cells)


@pytest.mark.parametrize("path", [p if i < 15 else pytest.param(p, marks=pytest.mark.slow)
                                  for i, p in enumerate(SPECS)])
def test_uppaal_and_tchecker_describe_the_same_network(path: str) -> None:
    compare(path)


def test_the_comparison_sees_a_difference() -> None:
    """The reader is not blind: a changed guard, body or location is found."""
    model = SpecModel(load(ROOT / "spec/classic/train_gate.kvr"))
    upp = uppaal_network(model.spec, model.values)
    tck = tchecker_network(model.spec, model.values).text
    for old, new in (("x_Train_x_T1&gt;=10", "x_Train_x_T1&gt;=11"),
                     ("v_Train_loc[0] = 1;", "v_Train_loc[0] = 2;"),
                     ("<committed/>", "")):
        back = read_uppaal(upp.text.replace(old, new, 1))
        assert declarations(tchecker_text(back.net)) != declarations(tck), old


# ---- pinned figures -------------------------------------------------------------------------

FIGURES = {
    # templates, locations, transitions, broadcast channels, binary channels
    "spec/classic/train_gate.kvr": (8, 30, 265, 21, 0),
    "spec/sglang/immediate_release.kvr": (12, 30, 216, 22, 0),
    "spec/sglang/early_reject.kvr": (8, 18, 104, 12, 12),
}


def figures(xml: str) -> tuple[int, int, int, int, int]:
    root = check_shape(xml)
    decl = root.findtext("declaration") or ""
    return (len(root.findall("template")), len(root.findall("template/location")),
            len(root.findall("template/transition")),
            len(re.findall(r"^broadcast chan \w+;$", decl, re.M)),
            len(re.findall(r"^chan \w+;$", decl, re.M)))


@pytest.mark.parametrize("path", sorted(FIGURES))
def test_pinned_figures(path: str) -> None:
    model = SpecModel(load(ROOT / path))
    upp = uppaal_network(model.spec, model.values)
    assert figures(upp.text) == FIGURES[path]
    assert (len(upp.templates), upp.locations, upp.transitions) == FIGURES[path][:3]
    assert upp.text == uppaal_network(model.spec, model.values).text  # deterministic


def test_train_gate_templates() -> None:
    model = SpecModel(load(ROOT / "spec/classic/train_gate.kvr"))
    root = check_shape(uppaal_network(model.spec, model.values).text)
    names = [t.findtext("name") for t in root.iter("template")]
    assert names[:4] == ["P_Train_T1", "P_Train_T2", "P_Train_T3", "P_Gate"]
    # The processes' locations are the spec's; the committed location is urgent (the
    # guards keep the other events out), with no hidden clock.
    assert names[-1] == "verdict" and "D_Gate_urgent" not in names
    gate = next(t for t in root.iter("template") if t.findtext("name") == "P_Gate")
    assert [(loc.findtext("name"), loc.find("urgent") is not None)
            for loc in gate.iter("location")] == [
        ("free", False), ("occupied", False), ("notified", True)]
    assert "clock urgent" not in (root.findtext("declaration") or "")
    verdict = next(t for t in root.iter("template") if t.findtext("name") == "verdict")
    assert [loc.findtext("name") for loc in verdict.iter("location")
            if loc.find("committed") is not None] == ["bad", "broken"]


def test_a_receiver_not_pinned_is_refused() -> None:
    """The channel check is not blind: without the sender's guard on the receiver's
    location, a receiver that leaves one location only could miss a broadcast."""
    model = SpecModel(load(ROOT / "spec/classic/train_gate.kvr"))
    net = build_network(model.spec, model.values)
    gate = net.process("P_Gate")
    assert gate.at is not None
    net.edges = [dataclasses.replace(e, guard=tuple(
        c for c in e.guard if not (isinstance(c, Cmp) and c.left == Cell(*gate.at))))
        for e in net.edges]
    with pytest.raises(NetworkError, match="P_Gate cannot always take part"):
        uppaal_xml(net)


# ---- the terms' values ------------------------------------------------------------------------


def test_evaluate_follows_c() -> None:
    cells = {"a": [7], "v": [0, -7, 3]}
    assert evaluate(Arith(ArithOp.DIV, Cell("v", 1), 2), cells) == -3
    assert evaluate(Arith(ArithOp.MOD, Cell("v", 1), 2), cells) == -1
    assert evaluate(Ite(Cmp(CmpOp.GT, Name("a"), 5), Neg(Name("a")), 0), cells) == -7
    assert holds(Conj((Cmp(CmpOp.EQ, Cell("v", Arith(ArithOp.ADD, 1, 1)), 3),
                       Truth(True))), cells)


# ---- queries --------------------------------------------------------------------------------


def test_queries_are_in_the_xml(tmp_path: Path) -> None:
    text = QUERY_SPEC.replace("x == 2", "x == 2\nreachable past: x > 2")
    model = SpecModel(load_text(text, "q.kvr"))
    upp = uppaal_network(model.spec, model.values)
    root = check_shape(upp.text)
    assert [q.findtext("formula") for q in root.iter("query")] == [
        BAD_QUERY, "E<> Q_granted.yes", "E<> Q_past.yes"]
    q = next(t for t in root.iter("template") if t.findtext("name") == "Q_granted")
    yes = next(loc for loc in q.iter("location") if loc.findtext("name") == "yes")
    assert yes.find("committed") is not None
    back = compare_model(model)
    assert back.init["Q_granted"] == "no"
    assert upp.text.count("<query>") == 3
    # a.step synchronises only with the verdict, which must take part: a binary channel
    assert "\nchan e0;\n" in upp.text and "<label kind=\"synchronisation\">e0!</label>" in upp.text
    none = uppaal_network(model.spec, model.values, queries=False).text
    assert "Q_granted" not in none and none.count("<query>") == 1


# ---- the command line -----------------------------------------------------------------------


def test_cli_writes_the_network_by_default(tmp_path: Path) -> None:
    spec = str(ROOT / "spec/classic/train_gate.kvr")
    out = tmp_path / "m.xml"
    code, text, err = run_cli("export", spec, "--uppaal", str(out))
    assert code == 0, err
    assert text == f"wrote {out} (8 templates, 30 locations, 265 transitions)\n"
    check_shape(out.read_text(encoding="utf-8"))
    code, text, err = run_cli("export", spec, "--uppaal", str(out), "--flat")
    assert code == 0, err
    assert "<name>Model</name>" in out.read_text(encoding="utf-8")
    assert re.fullmatch(rf"wrote {re.escape(str(out))} \(\d+ locations, \d+ transitions\)\n",
                        text)


def test_cli_both_share_one_network(tmp_path: Path) -> None:
    spec = str(ROOT / "spec/sglang/all_ranks_ack.kvr")
    code, text, err = run_cli("export", spec, "--uppaal", str(tmp_path / "m.xml"),
                              "--tchecker", str(tmp_path / "m.tck"))
    assert code == 0, err
    assert "(19 templates, " in text and "(19 processes, " in text
    back = read_uppaal((tmp_path / "m.xml").read_text(encoding="utf-8"))
    assert (sorted(declarations(tchecker_text(back.net))["edge"])
            == sorted(declarations((tmp_path / "m.tck").read_text(encoding="utf-8"))["edge"]))


BAD_SPECS = {
    "clock_index": ("model ci\ntype R = 0..1\nactor a\nclock c : R\nvar k : R = 0\n"
                    "event a.go when c[k] >= 1 do k := 1\n",
                    "ci.kvr:6:1: kvrace export: the clock c is indexed by a variable;"
                    " --flat unfolds"),
    "clock_query": ("model cq\nactor a\nclock c\nvar x : 0..1 = 0\n"
                    "event a.go when x == 0 do x := 1\nreachable late: x == 1 and c > 3\n",
                    "cq.kvr:6:1: kvrace export: reachable late tests clocks"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_cli_refuses_what_it_cannot_export(case: str, tmp_path: Path) -> None:
    text, want = BAD_SPECS[case]
    name = want.split(":", 1)[0]
    spec = tmp_path / name
    spec.write_text(text)
    code, _, err = run_cli("export", str(spec), "--uppaal", str(tmp_path / "m.xml"))
    assert code == 2, err
    assert "Traceback" not in err
    assert err.startswith(str(tmp_path / want.split(":", 1)[0])), err
    assert want.split(":", 1)[1] in err, err
    assert not (tmp_path / "m.xml").exists()


# ---- UPPAAL itself --------------------------------------------------------------------------

VERIFYTA = os.environ.get("VERIFYTA") or shutil.which("verifyta")
needs_uppaal = pytest.mark.skipif(VERIFYTA is None or not os.access(VERIFYTA, os.X_OK),
                                  reason="verifyta (UPPAAL) is not installed")


def verifyta(xml: str, tmp_path: Path) -> list[bool]:
    """UPPAAL's answer to each query of the document, in order."""
    assert VERIFYTA is not None
    f = tmp_path / "m.xml"
    f.write_text(xml, encoding="utf-8")
    proc = subprocess.run([VERIFYTA, "-q", str(f)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answers = re.findall(r"Formula is (NOT )?satisfied", proc.stdout)
    return [not neg for neg in answers]


@pytest.mark.slow
@needs_uppaal
@pytest.mark.parametrize("path", sorted({*SMALL, "spec/classic/train_gate.kvr",
                                         "spec/sglang/deferred_release.kvr"}))
def test_uppaal_agrees(path: str, tmp_path: Path) -> None:
    model = SpecModel(load(ROOT / path))
    answers = verifyta(uppaal_network(model.spec, model.values, queries=False).text, tmp_path)
    want = api.check(ROOT / path, options=Options(deadlock=False))
    assert answers == [want.verdict != api.VIOLATED]


@pytest.mark.slow
@needs_uppaal
def test_uppaal_answers_the_queries(tmp_path: Path) -> None:
    text = QUERY_SPEC.replace("x == 2", "x == 2\nreachable past: x > 2")
    model = SpecModel(load_text(text, "q.kvr"))
    assert verifyta(uppaal_network(model.spec, model.values).text, tmp_path) == [
        True, True, False]


def test_build_network_is_shared() -> None:
    model = SpecModel(load(ROOT / "spec/classic/fischer.kvr"))
    net = build_network(model.spec, model.values)
    assert tchecker_text(net) == tchecker_network(model.spec, model.values).text
    assert [p.kind for p in net.processes].count(ProcessKind.VERDICT) == 1

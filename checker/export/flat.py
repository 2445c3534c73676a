"""Export a compiled spec as one flat timed automaton for UPPAAL or TChecker.

This is the form of ``kvrace export --uppaal`` and of ``--tchecker --flat``; the
default TChecker export is a network of processes (:mod:`checker.export.network`),
which stays the size of the spec where this one grows with its discrete states.

A kvrace spec compiles to a :class:`~checker.model.interface.TimedModel`: a
timed automaton with data.  Other tools have their own data languages, so the
export unfolds the data: every discrete state the model can reach when clock
constraints are ignored becomes a location of one flat automaton, with

* as invariant, the state's deadlines (upper bounds on clocks);
* one transition per :class:`~checker.model.interface.Edge` (its clock guard,
  its clock resets, the event instance as its label);
* a transition to the location ``violation`` for every way the state breaks a
  property: an ``assert`` an edge fails (guarded like that edge), a property
  broken outright (:meth:`violations`, unguarded) or for some clock values
  (:meth:`hazards`, guarded by the hazard's clock atoms); a model run-time error
  (a ``none`` dereference, a value out of its domain) leads to ``fault``.

The timed semantics is unchanged: a location is reachable in the exported
automaton exactly when its discrete state is reachable in kvrace, so
``E<> violation`` (UPPAAL) or reachability of the label ``bad`` (TChecker,
``tck-reach -a reach -l bad``) holds exactly when ``kvrace check --no-deadlock``
finds a violation.  Unfolding ignores clocks, so it can list discrete states the
timed model never reaches (they are unreachable in the export too).  Parameters
take concrete values (``-p``); clock bounds are scaled by their common
denominator to integers (the scale is written in a comment).

This module only walks the discrete states of a compiled model (it depends on
:mod:`checker.model.interface` alone): it never runs the zone explorer or Z3.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from xml.sax.saxutils import escape

from checker.errors import KvraceError
from checker.model.interface import (
    ClockAtom,
    ModelRuntimeError,
    State,
    TimedModel,
    query_matches,
    scaled_bounds,
)

MAX_LOCATIONS = 20_000
"""Discrete states an export may unfold (a larger automaton is of little use to a
simulator, and would take long to write)."""

MAX_CONSTANT = 2**31 - 1
"""The largest clock constant UPPAAL and TChecker take (32-bit integers)."""

UPPAAL_DOCTYPE = ("<!DOCTYPE nta PUBLIC '-//Uppaal Team//DTD Flat System 1.1//EN'"
                  " 'http://www.it.uu.se/research/group/darts/uppaal/flat-1_2.dtd'>")


class ExportError(KvraceError):
    """The model cannot be exported; the message is meant for the user."""


@dataclass(frozen=True)
class Transition:
    """One transition of the unfolded automaton (locations by number; ``-1`` is
    ``violation``, ``-2`` is ``fault``)."""

    source: int
    target: int
    label: str
    guard: tuple[ClockAtom, ...]
    resets: tuple[int, ...]


VIOLATION, FAULT = -1, -2


@dataclass(frozen=True)
class Automaton:
    """A model unfolded into one flat timed automaton."""

    name: str
    clocks: tuple[str, ...]
    """Readable clock names, by index (exported as ``c0, c1, ...``)."""
    states: tuple[State, ...]
    """Discrete state of each location ``s0, s1, ...``; ``s0`` is initial."""
    describe: tuple[str, ...]
    """A readable valuation of each location's discrete state."""
    invariants: tuple[tuple[ClockAtom, ...], ...]
    transitions: tuple[Transition, ...]
    bounds: tuple[int, ...]
    """Every clock bound, scaled to an integer."""
    scale: int
    """The common denominator the bounds were multiplied by."""
    params: tuple[tuple[str, str], ...]
    has_fault: bool
    queries: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Each ``reachable`` query and the locations whose discrete state satisfies it."""


def unfold(model: TimedModel, max_locations: int = MAX_LOCATIONS) -> Automaton:
    """The discrete states of ``model`` (clock constraints ignored) as one automaton.

    Raises :class:`ExportError` above ``max_locations`` states or when a clock
    bound cannot be scaled to an integer of reasonable size."""
    try:
        bounds, scale = scaled_bounds(model.bounds, model.values)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if any(abs(b) > MAX_CONSTANT for b in bounds):
        raise ExportError(
            f"a clock bound becomes {max(bounds, key=abs)} once every bound is an integer"
            f" (scaled by {scale}); UPPAAL and TChecker take 32-bit constants: give the"
            " parameters values with fewer decimal places or smaller magnitudes")
    index: dict[State, int] = {}
    order: list[State] = []
    queue: deque[State] = deque()
    for s in model.initial_states():
        if s not in index:
            index[s] = len(order)
            order.append(s)
            queue.append(s)
    transitions: list[Transition] = []
    invariants: list[tuple[ClockAtom, ...]] = []
    has_fault = False
    names = model.event_names
    while queue:
        s = queue.popleft()
        src = index[s]
        invariants.append(tuple(model.deadlines(s)))
        for v in model.violations(s):
            transitions.append(Transition(src, VIOLATION, f"violates {v.property}", (), ()))
        for h in model.hazards(s):
            transitions.append(Transition(src, VIOLATION, f"violates {h.property}",
                                          tuple(h.atoms), ()))
        try:
            edges = model.edges(s)
        except ModelRuntimeError as exc:
            has_fault = True
            transitions.append(Transition(src, FAULT, f"model error: {exc.message}", (), ()))
            continue
        for e in edges:
            label = names[e.event]
            if e.failure is not None:
                transitions.append(Transition(src, VIOLATION, label, e.guard, e.resets))
                continue
            t = e.target
            if t not in index:
                if len(order) >= max_locations:
                    raise ExportError(
                        f"the model has more than {max_locations} discrete states; it is"
                        " too large to export as one flat automaton")
                index[t] = len(order)
                order.append(t)
                queue.append(t)
            transitions.append(Transition(src, index[t], label, e.guard, e.resets))
    if len(invariants) != len(order):  # pragma: no cover -- every state was dequeued
        raise AssertionError("unfolding lost a state")
    describe = []
    for s in order:
        cells = model.describe(s)
        describe.append(", ".join(f"{k}={_show(v)}" for k, v in cells.items()))
    return Automaton(
        name=model.name, clocks=tuple(model.clock_names), states=tuple(order),
        describe=tuple(describe), invariants=tuple(invariants),
        transitions=tuple(transitions), bounds=tuple(bounds), scale=scale,
        params=tuple((k, _fraction_text(v)) for k, v in model.values.items()),
        has_fault=has_fault,
        queries=_query_locations(model, order),
    )


def _query_locations(model: TimedModel, order: Sequence[State]
                     ) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each ``reachable`` query of ``model`` and the locations (positions in
    ``order``) whose state satisfies it."""
    names: list[str] = list(getattr(model, "query_names", ()))
    hits: list[list[int]] = [[] for _ in names]
    if names:
        for k, s in enumerate(order):
            try:
                for m in query_matches(model, s):
                    if m.parts != ((),):
                        raise ExportError(f"reachable {names[m.query]} tests clocks, which"
                                          " the export does not translate")
                    hits[m.query].append(k)
            except ModelRuntimeError:
                pass  # its edges already lead to `fault`
    return tuple((n, tuple(h)) for n, h in zip(names, hits, strict=True))


def _show(v: object) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _fraction_text(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def _comment_text(text: str) -> str:
    """Text safe inside a one-line comment of either format."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", text).replace("--", "- -")


def _atom(a: ClockAtom, bounds: Sequence[int]) -> str:
    return f"c{a.clock}{a.op}{bounds[a.bound]}"


def _loc(i: int) -> str:
    return {VIOLATION: "violation", FAULT: "fault"}.get(i, f"s{i}")


def _header(a: Automaton, comment: str) -> list[str]:
    lines = [f"{comment} kvrace model {_comment_text(a.name)}, unfolded into one automaton:"
             f" {len(a.states)} locations, {len(a.transitions)} transitions"]
    if a.params:
        lines.append(f"{comment} parameters: "
                     + ", ".join(f"{k}={v}" for k, v in a.params))
    lines.append(f"{comment} clock bounds are multiplied by {a.scale}")
    for i, c in enumerate(a.clocks):
        lines.append(f"{comment} c{i} is {_comment_text(c)}")
    return lines


# ---- TChecker -------------------------------------------------------------------------


def tchecker_text(a: Automaton) -> str:
    """``a`` in TChecker's system format (``tck-reach -a reach -l bad``; a location
    whose state satisfies a ``reachable`` query carries its name as a label)."""
    out = _header(a, "#")
    name = _ident(a.name)
    out.append(f"system:{name}")
    out.append("")
    if a.clocks:
        out.append(f"clock:{len(a.clocks)}:c")
    out.append("process:P")
    events = sorted({t.label for t in a.transitions})
    event_id = {label: f"e{i}" for i, label in enumerate(events)}
    for label in events:
        out.append(f"# {event_id[label]} is {_comment_text(label)}")
        out.append(f"event:{event_id[label]}")
    out.append("")
    labels: dict[int, list[str]] = {}
    for qname, where in a.queries:
        for k in where:
            labels.setdefault(k, []).append(_ident(qname))
    for i, inv in enumerate(a.invariants):
        attrs = ["initial:"] if i == 0 else []
        if inv:
            attrs.append("invariant:" + "&&".join(_tck_atom(x, a.bounds) for x in inv))
        if i in labels:
            attrs.append("labels:" + ",".join(labels[i]))
        out.append(f"# s{i}: {_comment_text(a.describe[i])}")
        out.append(f"location:P:s{i}{{{' : '.join(attrs)}}}")
    out.append("location:P:violation{labels:bad}")
    if a.has_fault:
        out.append("location:P:fault{labels:fault}")
    out.append("")
    for t in a.transitions:
        attrs = []
        if t.guard:
            attrs.append("provided:" + "&&".join(_tck_atom(x, a.bounds) for x in t.guard))
        if t.resets:
            attrs.append("do:" + ";".join(f"c[{c}]=0" for c in t.resets))
        out.append(f"edge:P:{_loc(t.source)}:{_loc(t.target)}:{event_id[t.label]}"
                   f"{{{' : '.join(attrs)}}}")
    return "\n".join(out) + "\n"


def _tck_atom(x: ClockAtom, bounds: Sequence[int]) -> str:
    return f"c[{x.clock}]{x.op}{bounds[x.bound]}"


def _ident(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if re.match(r"[A-Za-z_]", name) else "m_" + name


# ---- UPPAAL ---------------------------------------------------------------------------


def uppaal_xml(a: Automaton) -> str:
    """``a`` as an UPPAAL network of timed automata (flat-system XML format) with the
    query ``E<> Model.violation``."""
    out = ['<?xml version="1.0" encoding="utf-8"?>', UPPAAL_DOCTYPE, "<nta>"]
    decl = _header(a, "//")
    if a.clocks:
        decl.append(f"clock c[{len(a.clocks)}];")
    out.append(f"  <declaration>{escape(chr(10).join(decl))}</declaration>")
    out.append("  <template>")
    out.append("    <name>Model</name>")
    rows = 2 + len(a.states) // 20
    for i, inv in enumerate(a.invariants):
        x, y = 200 * (i % 20), 150 * (i // 20)
        out.append(f'    <location id="s{i}" x="{x}" y="{y}">')
        out.append(f"      <name>s{i}</name>")
        if inv:
            text = " && ".join(_upp_atom(c, a.bounds) for c in inv)
            out.append(f'      <label kind="invariant">{escape(text)}</label>')
        out.append(f'      <label kind="comments">{escape(_comment_text(a.describe[i]))}</label>')
        out.append("    </location>")
    specials = [("violation", "a property is violated")]
    if a.has_fault:
        specials.append(("fault", "a model run-time error"))
    for k, (name, what) in enumerate(specials):
        out.append(f'    <location id="{name}" x="{200 * k}" y="{150 * rows}">')
        out.append(f"      <name>{name}</name>")
        out.append(f'      <label kind="comments">{escape(what)}</label>')
        out.append("    </location>")
    out.append('    <init ref="s0"/>')
    for t in a.transitions:
        out.append("    <transition>")
        out.append(f'      <source ref="{_loc(t.source)}"/>')
        out.append(f'      <target ref="{_loc(t.target)}"/>')
        if t.guard:
            text = " && ".join(_upp_atom(c, a.bounds) for c in t.guard)
            out.append(f'      <label kind="guard">{escape(text)}</label>')
        if t.resets:
            text = ", ".join(f"c[{c}] = 0" for c in t.resets)
            out.append(f'      <label kind="assignment">{escape(text)}</label>')
        out.append(f'      <label kind="comments">{escape(_comment_text(t.label))}</label>')
        out.append("    </transition>")
    out.append("  </template>")
    out.append("  <system>system Model;</system>")
    out.append("  <queries>")
    out.append("    <query>")
    out.append(f"      <formula>{escape('E<> Model.violation')}</formula>")
    out.append(f"      <comment>{escape('a violation is reachable')}</comment>")
    out.append("    </query>")
    for qname, where in a.queries:
        states = " || ".join(f"Model.s{k}" for k in where) or "false"
        out.append("    <query>")
        out.append(f"      <formula>{escape(f'E<> ({states})')}</formula>")
        out.append(f"      <comment>{escape(f'reachable {_comment_text(qname)}')}</comment>")
        out.append("    </query>")
    out.append("  </queries>")
    out.append("</nta>")
    return "\n".join(out) + "\n"


def _upp_atom(x: ClockAtom, bounds: Sequence[int]) -> str:
    return f"c[{x.clock}] {x.op} {bounds[x.bound]}"


__all__ = ["Automaton", "ExportError", "tchecker_text", "unfold", "uppaal_xml"]

"""Diagrams: DOT generation for traces and state graphs, and rendering with Graphviz.

This is the only module that talks to Graphviz.  It depends on
:mod:`checker.model.trace`, :func:`checker.diagnostics.printable` and the standard
library only; it never runs the explorer, the language or Z3.

* :func:`sequence_dot` draws a :class:`~checker.model.trace.Trace` as a
  message-sequence chart: one vertical lane per actor, time running down, one
  row per step, an arrow for every ``receives`` link, the ``owner[...]``
  changes (who holds which slot) written on the lane of the step that made
  them, the violating step and its incoming arrow in red, the release and the
  reuse of the victim's slot in orange, long idle gaps drawn broken.
* :func:`state_graph_dot` draws a state graph given as plain data.
* :func:`render` writes DOT source to a file, rendered to SVG, PNG or PDF by
  the Graphviz ``dot`` program (run through the ``graphviz`` package, with a
  timeout) when it is installed; without it, it still writes the ``.dot`` file
  and says how to render it.  Quoting of DOT IDs is the ``graphviz`` package's.

DOT generation is pure and deterministic: the same input gives the same bytes
(no set iteration order, timestamps or machine paths in the output).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import subprocess
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import graphviz
from graphviz.backend import dot_command, execute
from graphviz.quoting import quote as _gv_quote

from checker.diagnostics import printable
from checker.errors import KvraceError
from checker.model.trace import JsonValue, Step, Trace, fmt_time, show_value
from checker.results import QueryStatus, Verdict

__all__ = [
    "FORMATS",
    "RenderError",
    "RenderOutcome",
    "render",
    "render_hint",
    "sequence_dot",
    "state_graph_dot",
]

# ---- style ------------------------------------------------------------------------

FONT = "Helvetica"
RED = "#c62828"
OWNER = "#1a4f9c"
REUSE = "#e65100"
"""The release that freed the victim's slot, and the allocation that reused it."""
REUSE_FILL = "#fff3e0"
GREY = "#757575"
LANE = "#9e9e9e"
HEADER_FILL = "#eceff1"
NOTE_FILL = "#fdecea"

MAX_OTHER_CHANGES = 3
"""Changes other than ``owner[...]`` listed per step before an ellipsis."""

OWNER_VAR = "owner"
"""Cells of this variable tell the slot-ownership story (``none`` reads "free")."""

LANE_GAP = 2.2
"""Minimum horizontal room between two lanes, in inches."""

LONG_GAP = 4
"""A time gap between two steps this many times the median gap, or longer, is drawn
broken (the chart is not to scale; the break says how long the gap is)."""

NOTE_REACH = 0.55
"""How far a note reaches from its lane towards the next, as a fraction of the lane distance
(used to keep notes out of the way of arrows)."""


# ---- small helpers ----------------------------------------------------------------


def _html(text: str) -> str:
    r"""Escape text for a Graphviz HTML-like label.

    Graphviz expands ``\N``, ``\G``, ``\L``... even inside HTML labels, so a
    backslash is doubled; control characters (which make the label invalid XML)
    become U+FFFD and newlines spaces.
    """
    return printable(
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\\", "\\\\")
        .replace("\r\n", " ")
        .replace("\n", " ")
        .replace("\t", " ")
    )


def _one_line(text: str) -> str:
    """Text for a DOT ``//`` comment."""
    return printable(" ".join(text.splitlines()).replace("\t", " "))


def _quote(text: str) -> str:
    """A DOT ID for literal ``text``: bare when it is a plain ID, else double-quoted
    (Graphviz's own quoting; backslashes are literal, newlines become centred line
    breaks)."""
    text = printable(text.replace("\r\n", "\n"))
    quoted: str = _gv_quote(graphviz.nohtml(graphviz.escape(text).replace("\n", "\\n")))
    return quoted


def _attrs(**kw: str | float | int | bool) -> str:
    """``[a=1, b="x"]`` with keys in the given order; ``label_html`` is an HTML label."""
    parts: list[str] = []
    for key, value in kw.items():
        if key.endswith("label_html"):
            parts.append(f"{key[:-5]}=<{value}>")
        elif isinstance(value, bool):
            parts.append(f"{key}={'true' if value else 'false'}")
        elif isinstance(value, (int, float)):
            parts.append(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}")
        else:
            parts.append(f"{key}={_quote(value)}")
    return "[" + ", ".join(parts) + "]"


def _event_text(step: Step) -> str:
    """``post(A, 0)``: the event name without its actor, with its arguments."""
    if step.event is None:
        return step.label
    name = step.event.split(".", 1)[1] if "." in step.event else step.event
    if step.sync is not None:
        channel, _lanes, nsend, rpos = step.sync
        sender, _, receiver = name.partition("+")
        text = f"{sender}({', '.join(step.args[:nsend])}) \u2192 {channel}"
        if receiver:
            rargs = [step.args[k] for k in rpos if k < len(step.args)]
            return text + f" \u2192 {receiver}({', '.join(rargs)})"
        return text + " (broadcast)"
    return f"{name}({', '.join(step.args)})"


def _owner_key(cell: str) -> str | None:
    """``owner[s0]`` -> ``s0``; other cells -> None."""
    prefix = OWNER_VAR + "["
    if cell.startswith(prefix) and cell.endswith("]"):
        return cell[len(prefix):-1]
    return None


def _owner_value(v: JsonValue) -> str:
    return "free" if v is None else show_value(v)


def _changes(step: Step) -> tuple[list[str], list[str]]:
    """The ownership changes and the other changes of a step, as short lines."""
    owners: list[str] = []
    others: list[str] = []
    for cell, (old, new) in step.changes.items():
        key = _owner_key(cell)
        if key is not None:
            owners.append(f"{key}: {_owner_value(old)} \u2192 {_owner_value(new)}")
        else:
            others.append(f"{cell}: {show_value(old)} \u2192 {show_value(new)}")
    if len(others) > MAX_OTHER_CHANGES:
        others = [*others[:MAX_OTHER_CHANGES], "\u2026"]
    return owners, others


def _violating(trace: Trace) -> int | None:
    """Position (in ``trace.steps``) of the violating step, if any."""
    for pos, step in enumerate(trace.steps):
        if step.failure is not None:
            return pos
    if trace.verdict == Verdict.VIOLATED and len(trace.steps) > 1:
        return len(trace.steps) - 1
    return None


@dataclass(frozen=True)
class _SlotStory:
    """The release that freed the victim's slot and the allocation that reused it."""

    slot: str
    victim: str
    release: int
    """Position in ``trace.steps`` of the step that freed the slot."""
    reuse: int
    """Position of the step that gave the slot to another owner."""
    owner: str
    """That other owner."""
    stale: int | None
    """Position of the victim's first step after the reuse that lands in the slot (a
    message naming the victim received by the slot's holder, or a change of a cell
    of the slot)."""


def _slot_story(trace: Trace, bad_pos: int | None) -> _SlotStory | None:
    """The last release of an ``owner[...]`` slot before the violation that was followed
    by a reuse by another owner, preferring a slot whose freed owner the violating
    step names (its arguments or its message): the victim of a stale write."""
    if bad_pos is None:
        return None
    bad = trace.steps[bad_pos]
    named = set(bad.args) | set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*",
                                           bad.failure or trace.message or ""))
    freed: dict[str, tuple[int, str]] = {}
    stories: list[_SlotStory] = []
    for pos, step in enumerate(trace.steps[: bad_pos + 1]):
        for cell, (old, new) in step.changes.items():
            slot = _owner_key(cell)
            if slot is None:
                continue
            if old is not None and new is None:
                freed[slot] = (pos, show_value(old))
            elif old is None and new is not None and slot in freed:
                rel, victim = freed.pop(slot)
                if show_value(new) != victim:
                    stories.append(_SlotStory(slot, victim, rel, pos, show_value(new), None))
    if not stories:
        return None
    story = max(stories, key=lambda s: (s.victim in named, s.release, s.reuse))
    holder = trace.steps[story.reuse].actor
    for pos in range(story.reuse + 1, bad_pos + 1):
        step = trace.steps[pos]
        lands = step.receives is not None and step.actor == holder  # a message to the memory
        touches = any(re.search(rf"[\[ ,]{re.escape(story.slot)}[\],]", c) for c in step.changes)
        if story.victim in step.args and (lands or touches):
            return dataclasses.replace(story, stale=pos)
    return story


# ---- sequence chart ---------------------------------------------------------------


def _title(trace: Trace) -> str:
    params = ", ".join(f"{k}={fmt_time(v)}" for k, v in trace.params.items())
    rows = [f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="14"><B>{_html(trace.model)}</B></FONT>'
            + (f'<FONT POINT-SIZE="12">   {_html(params)}</FONT>' if params else "")
            + "</TD></TR>"]
    if trace.verdict == Verdict.VIOLATED:
        what = trace.property or "property"
        text = f"violated: {what}" + (f" \u2014 {trace.message}" if trace.message else "")
        rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="12" COLOR="{RED}">'
                    f"{_html(text)}</FONT></TD></TR>")
    elif trace.verdict == QueryStatus.REACHABLE and trace.property:
        # The witness of a `reachable` query: what it reaches, not a failure.
        text = f"witness of {trace.property}" + (f" \u2014 {trace.message}"
                                                 if trace.message else "")
        rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="12">{_html(text)}'
                    "</FONT></TD></TR>")
    elif trace.verdict:
        rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="12">{_html(trace.verdict)}'
                    "</FONT></TD></TR>")
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">'
            + "".join(rows) + "</TABLE>")


@dataclass(frozen=True)
class _Arrow:
    """A ``receives`` link: from the sender's row and lane to the receiver's."""

    src_row: int
    src_lane: int
    dst_row: int
    dst_lane: int
    sender: Step
    receiver: Step


def _place(arrows: Sequence[_Arrow], row: int, lane: int) -> tuple[str, str]:
    """Where the note of the step at ``row`` on ``lane`` goes, away from arrows.

    Returns the side (``left``/``right`` of the lane) and the vertical placement
    (``center`` on the point, ``above`` it when the step's own arrow leaves on that
    side — arrows run downwards — or ``below`` it when its own arrow arrives there).
    """
    own_in = {"left": False, "right": False}
    own_out = {"left": False, "right": False}
    passing = {"left": 0, "right": 0}
    for a in arrows:
        if a.src_lane == a.dst_lane:
            continue
        if a.src_row == row and a.src_lane == lane:
            own_out["right" if a.dst_lane > lane else "left"] = True
        elif a.dst_row == row and a.dst_lane == lane:
            own_in["right" if a.src_lane > lane else "left"] = True
        elif a.src_row < row < a.dst_row:
            # Where the straight arrow crosses this row, in lane units.
            x = a.src_lane + (a.dst_lane - a.src_lane) * (row - a.src_row) / (
                a.dst_row - a.src_row)
            if lane - NOTE_REACH < x < lane:
                passing["left"] += 1
            elif lane < x < lane + NOTE_REACH:
                passing["right"] += 1

    def cost(side: str) -> int:
        own = int(own_in[side]) + int(own_out[side])
        return 10 * passing[side] + (100 if own == 2 else own)

    side = "left" if cost("left") < cost("right") else "right"
    vertical = "above" if own_out[side] else "below" if own_in[side] else "center"
    return side, vertical


# Line heights in points of the rows of a note (Graphviz: 1.2 x font size + padding).
_LINE_EVENT = 12 * 1.2 + 2
_LINE_OTHER = 10 * 1.2 + 2
_LINE_FAILURE = 12 * 1.2 + 10


def _note(step: Step, side: str, vertical: str, failure: str | None,
          received: tuple[str, bool] | None = None, story: str | None = None,
          story_color: str = REUSE) -> str:
    """The HTML label of a step's note: event, the message it received (the arrow's
    label, in the note so that no two labels can overlap), ownership and other
    changes, the part it plays in the slot's reuse, failure."""
    align = "RIGHT" if side == "left" else "LEFT"
    owners, others = _changes(step)
    bad = failure is not None
    rows = [f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="12"'
            + (f' COLOR="{RED}"' if bad else "") + f"><B>{_html(_event_text(step))}</B>"
            "</FONT></TD></TR>"]
    height = _LINE_EVENT
    if received is not None:
        text, red = received
        rows.append(f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="10"'
                    f' COLOR="{RED if red else "black"}">{_html(text)}</FONT></TD></TR>')
        height += _LINE_OTHER
    for line in owners:
        if story is not None:
            rows.append(f'<TR><TD ALIGN="{align}" BGCOLOR="{REUSE_FILL}" BORDER="1"'
                        f' COLOR="{REUSE}"><FONT POINT-SIZE="12" COLOR="{REUSE}"><B>'
                        f"{_html(line)}</B></FONT></TD></TR>")
        else:
            rows.append(f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="12" COLOR="{OWNER}"><B>'
                        f"{_html(line)}</B></FONT></TD></TR>")
        height += _LINE_EVENT
    if story is not None:
        rows.append(f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="10" COLOR="{story_color}"><I>'
                    f"{_html(story)}</I></FONT></TD></TR>")
        height += _LINE_OTHER
    for line in others:
        rows.append(f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="10" COLOR="{GREY}">'
                    f"{_html(line)}</FONT></TD></TR>")
        height += _LINE_OTHER
    if failure is not None:
        rows.append(f'<TR><TD ALIGN="{align}" BORDER="1" COLOR="{RED}" BGCOLOR="{NOTE_FILL}"'
                    f' CELLPADDING="4"><FONT POINT-SIZE="12" COLOR="{RED}"><B>\u2717 '
                    f"{_html(failure)}</B></FONT></TD></TR>")
        height += _LINE_FAILURE
    # Off-centre notes: an empty row as tall as the text puts the point at its edge.
    filler = f'<TR><TD HEIGHT="{round(height)}"></TD></TR>'
    if vertical == "above":
        rows.append(filler)
    elif vertical == "below":
        rows.insert(0, filler)
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            + "".join(rows) + "</TABLE>")


def _step_node(note: str, side: str, bad: bool, story: bool = False) -> str:
    """A step's point (port ``p``, on the lane) with its note on one side."""
    color = RED if bad else REUSE if story else "black"
    point = (f'<TD PORT="p" WIDTH="10" HEIGHT="10" FIXEDSIZE="TRUE" STYLE="rounded"'
             f' BGCOLOR="{color}"></TD>')
    gap = '<TD WIDTH="6"></TD>'
    cells = [f"<TD>{note}</TD>", gap, point] if side == "left" else [
        point, gap, f"<TD>{note}</TD>"]
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0"><TR>'
            + "".join(cells) + "</TR></TABLE>")


# A point of a lane where no event happens: a sliver of the lane line itself, which
# fills the small gap dot leaves between two straight edges meeting at a node.
_LANE_POINT = _attrs(shape="box", width=0.0175, height=0.04, fixedsize=True, style="filled",
                     fillcolor=LANE, peripheries=0, label="")


_LANE_EDGE = _attrs(color=LANE, penwidth=1.2, arrowhead="none", weight=100, headclip=False,
                    tailclip=False)

# The mark of a lane's break at a long idle gap.
_BREAK = _attrs(shape="plaintext", fontsize=14, fontcolor=GREY, margin=0, width=0.2,
                height=0.2, label="\u2248")


def _time_label(step: Step, bad: bool) -> str:
    color = f' COLOR="{RED}"' if bad else ""
    if step.time is None:
        return f'<FONT POINT-SIZE="12"{color}>#{step.index}</FONT>'
    return (f'<FONT POINT-SIZE="12"{color}>t={_html(fmt_time(step.time))}</FONT>'
            f'<FONT POINT-SIZE="10" COLOR="{RED if bad else GREY}">  #{step.index}</FONT>')


def _received_text(a: _Arrow) -> str:
    """The label of a ``receives`` arrow, written in the receiver's note."""
    text = f"\u2190 {a.sender.actor}: {_event_text(a.sender)}"
    if a.sender.time is not None and a.receiver.time is not None:
        text += f"  (\u0394t={fmt_time(a.receiver.time - a.sender.time)})"
    return text


def _long_gaps(steps: Sequence[Step]) -> dict[int, Fraction]:
    """Rows (1-based) preceded by a long idle gap, with the gap's length."""
    gaps = []
    for r in range(2, len(steps) + 1):
        t0, t1 = steps[r - 2].time, steps[r - 1].time
        if t0 is not None and t1 is not None and t1 > t0:
            gaps.append((r, t1 - t0))
    if len(gaps) < 2:
        return {}
    ordered = sorted(g for _, g in gaps)
    median = ordered[(len(ordered) - 1) // 2]
    return {r: g for r, g in gaps if g >= LONG_GAP * median and g > ordered[0]}


def sequence_dot(trace: Trace) -> str:
    """A message-sequence chart of ``trace`` as DOT source.

    One lane per actor (in ``trace.actors`` order; an actor a step names that
    is not listed gets a lane at the right), time running down, one row per
    step after the initial state, and a time axis on the left (``t=3`` and the
    step number, or the step number alone when times are unknown).  Each step
    is a point on its actor's lane with a note beside it: the event
    (``post(A, 0)``), its ``owner[...]`` changes in blue (``s0: A → free``;
    ``none`` reads "free") and up to three other changes in grey.  A
    ``receives`` link is a straight arrow from the sender's point to the
    receiver's; the receiver's note says what it received and the time between
    them (``← prefill: post(A, 0)  (Δt=3)``): labels live in notes, which are
    nodes, so no two labels can overlap however the arrows cross.
    The violating step (the one with a ``failure``, or the last one of a
    ``violated`` trace), its incoming arrow and the property message are red.
    The release that freed the victim's slot (the owner the violating step names)
    and the allocation that reused it are orange, each note saying which step is
    the other; the victim's stale write into the reused slot is red too when it
    is not the violating step itself.  A gap between two steps of at least
    :data:`LONG_GAP` times the median gap is drawn as a break in every lane, marked
    with its length
    (``≈ 29 idle``), since rows are not to scale.
    The title gives the model, the parameter values and the violation.
    """
    return _SequenceChart(trace).dot()


class _SequenceChart:
    """The layout of :func:`sequence_dot`: lanes, rows, arrows and highlights, then
    the DOT text, part by part."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        actors: list[str] = list(trace.actors)
        for step in trace.steps:
            if step.actor is not None and step.actor not in actors:
                actors.append(step.actor)
        self.actors = actors
        self.lane_of = {a: i for i, a in enumerate(actors)}
        self.has_initial = bool(trace.steps) and trace.steps[0].event is None
        self.steps = list(trace.steps[1:] if self.has_initial else trace.steps)
        self.bad_pos = _violating(trace)
        self.bad_row = (self.bad_pos + (0 if self.has_initial else 1)
                        if self.bad_pos is not None else None)
        self.last = len(self.steps) + 1  # a short tail below the last step
        self.arrows = self._arrows()
        self.syncs = [_Arrow(r, self.lane_of[s.actor], r, self.lane_of[d], s, s)
                      for r, s in enumerate(self.steps, start=1)
                      if s.sync is not None and s.actor is not None
                      for d in s.sync[1] if d in self.lane_of]
        self.story_rows: dict[int, str] = {}
        self.stale_row: int | None = None
        self._story()
        self.red_rows = {self.bad_row, self.stale_row}
        self.received = {a.dst_row: (_received_text(a), a.dst_row in self.red_rows)
                         for a in self.arrows}
        self.gaps = _long_gaps(self.steps)
        self.ported: set[str] = set()
        self.out: list[str] = []

    def _arrows(self) -> list[_Arrow]:
        """One arrow per ``receives`` link to an earlier step."""
        row_of_index = {s.index: r for r, s in enumerate(self.steps, start=1)}
        arrows: list[_Arrow] = []
        for r, s in enumerate(self.steps, start=1):
            sr = row_of_index.get(s.receives) if s.receives is not None else None
            if sr is None or sr >= r:
                continue
            sender = self.steps[sr - 1]
            if sender.actor is None or s.actor is None:
                continue
            arrows.append(_Arrow(sr, self.lane_of[sender.actor], r, self.lane_of[s.actor],
                                 sender, s))
        return arrows

    def _story(self) -> None:
        """The notes of the release, the reuse and the stale write (see
        :func:`_slot_story`)."""
        trace = self.trace
        story = _slot_story(trace, self.bad_pos)
        if story is None:
            return
        off = 0 if self.has_initial else 1
        reuser = trace.steps[story.reuse]
        self.story_rows[story.release + off] = (f"frees {story.victim}'s slot {story.slot};"
                                                f" reused at #{reuser.index}")
        # Only a write of the victim's that lands later shows that one was still on its
        # way: without one, the reuse is all the trace shows.
        still = (f", while {story.victim}'s writes may still land"
                 if story.stale is not None else "")
        self.story_rows[story.reuse + off] = (f"reuses {story.slot}, freed at"
                                              f" #{trace.steps[story.release].index}{still}")
        if story.stale is not None and story.stale + off != self.bad_row:
            # (the violating step, when it is the stale write, says so in red already)
            self.stale_row = story.stale + off
            self.story_rows[self.stale_row] = (
                f"stale: {story.victim}'s write lands in {story.slot},"
                f" {story.owner}'s since #{reuser.index}")

    def dot(self) -> str:
        """The whole DOT source."""
        self._header()
        for r, s in enumerate(self.steps, start=1):
            self._step(r, s)
        self._tail()
        self._lanes()
        self._messages()
        self.out.append("}")
        return "\n".join(self.out) + "\n"

    def _header(self) -> None:
        """The graph's attributes and the header row: the time axis title and one box
        per actor, spacers between."""
        w = self.out.append
        w(f"// message-sequence chart: {_one_line(self.trace.model)}")
        w("digraph trace {")
        w("  graph " + _attrs(
            fontname=FONT, fontsize=12, labelloc="t", labeljust="l",
            label_html=_title(self.trace), newrank=True, rankdir="TB", splines="false",
            nodesep=0.12, ranksep=0.22, pad=0.3, outputorder="edgesfirst",
        ) + ";")
        w("  node " + _attrs(fontname=FONT, fontsize=11) + ";")
        w("  edge " + _attrs(fontname=FONT, fontsize=10) + ";")
        w("")
        w("  // header: one box per actor")
        head = ["time_h"]
        w("  time_h " + _attrs(shape="plaintext",
                               label_html=f'<FONT COLOR="{GREY}">time</FONT>') + ";")
        for i, actor in enumerate(self.actors):
            if i > 0:
                gap = f"gap_{i}"
                w(f"  {gap} " + _attrs(shape="box", style="invis", label="", width=LANE_GAP,
                                       height=0.02, fixedsize=True) + ";")
                head.append(gap)
            w(f"  L{i}_0 " + _attrs(
                shape="box", style="rounded,filled", fillcolor=HEADER_FILL, color="#607d8b",
                fontsize=14, margin="0.15,0.06", label_html=f"<B>{_html(actor)}</B>",
            ) + ";")
            head.append(f"L{i}_0")
        w("  { rank=same; " + " -> ".join(head) + " [style=invis]; }")
        w("")

    def _step(self, r: int, s: Step) -> None:
        """Row ``r``: its time, and a point on its actor's lane with a note beside it.

        Point and note are one node (so nothing can come between them); the lane
        edges attach to the point's port, which keeps the lane straight."""
        w = self.out.append
        bad = r == self.bad_row
        if r in self.gaps:
            self._gap(r)
        w(f"  // step {s.index}: {_one_line(s.label)}")
        w(f"  T_{r} " + _attrs(shape="plaintext", label_html=_time_label(s, bad)) + ";")
        lane = self.lane_of[s.actor] if s.actor is not None else -1
        side, vertical = (_place([*self.arrows, *self.syncs], r, lane) if lane >= 0
                          else ("right", "center"))
        failure = (s.failure or self.trace.message or "property violated") if bad else None
        stale = r == self.stale_row
        note = _note(s, side, vertical, failure, self.received.get(r), self.story_rows.get(r),
                     RED if stale else REUSE)
        chain = [f"T_{r}"]
        if lane < 0:  # a step no actor owns: its note next to the time axis
            w(f"  N_{r} " + _attrs(shape="plaintext", margin=0, label_html=note) + ";")
            chain.append(f"N_{r}")
        for i in range(len(self.actors)):
            node = f"L{i}_{r}"
            chain.append(node)
            if i != lane:
                w(f"  {node} " + _LANE_POINT + ";")
                continue
            self.ported.add(node)
            w(f"  {node} " + _attrs(shape="plaintext", margin=0,
                                    label_html=_step_node(note, side, bad or stale,
                                                          r in self.story_rows))
              + ";")
        w("  { rank=same; " + " -> ".join(chain) + " [style=invis, weight=0]; }")

    def _gap(self, r: int) -> None:
        """A long idle gap before row ``r``: a break in every lane, with its length on
        the time axis."""
        w = self.out.append
        gap = self.gaps[r]
        w(f"  // idle for {fmt_time(gap)}")
        w(f"  G_{r} " + _attrs(shape="plaintext", label_html=(
            f'<FONT POINT-SIZE="10" COLOR="{GREY}"><I>\u2248 {_html(fmt_time(gap))}'
            " idle</I></FONT>")) + ";")
        for i in range(len(self.actors)):
            w(f"  B{i}_{r} " + _BREAK + ";")
        w("  { rank=same; " + " -> ".join(
            [f"G_{r}"] + [f"B{i}_{r}" for i in range(len(self.actors))])
          + " [style=invis, weight=0]; }")

    def _tail(self) -> None:
        """A short row below the last step."""
        w = self.out.append
        last = self.last
        w("  // tail")
        tail = [f"T_{last}"] + [f"L{i}_{last}" for i in range(len(self.actors))]
        w(f"  T_{last} " + _attrs(shape="plaintext", label="") + ";")
        for i in range(len(self.actors)):
            w(f"  L{i}_{last} " + _LANE_POINT + ";")
        w("  { rank=same; " + " -> ".join(tail) + " [style=invis]; }")
        w("")

    def at(self, node: str) -> str:
        """An edge's end at ``node``.

        The compass point keeps an edge on the port's centre; without it dot shifts
        the end of a lane edge between two ports with notes on opposite sides, and
        the lane shows a kink."""
        return f"{node}:p:c" if node in self.ported else node

    def _lanes(self) -> None:
        """The time axis, and one lane per actor."""
        w, at, last = self.out.append, self.at, self.last
        w("  // lanes and the time axis")
        axis = ["time_h"]
        for r in range(1, last + 1):
            axis += [f"G_{r}", f"T_{r}"] if r in self.gaps else [f"T_{r}"]
        w("  " + " -> ".join(axis) + " " + _attrs(style="invis", weight=100) + ";")
        for i in range(len(self.actors)):
            # A lane is one chain of edges between its breaks; around a break, it is
            # dashed and stops short of the break mark.
            piece = [at(f"L{i}_0")]
            for r in range(1, last + 1):
                if r in self.gaps:
                    if len(piece) > 1:
                        w("  " + " -> ".join(piece) + " " + _LANE_EDGE + ";")
                    w(f"  {at(f'L{i}_{r - 1}')} -> B{i}_{r} -> {at(f'L{i}_{r}')} " + _attrs(
                        color=LANE, penwidth=1.2, arrowhead="none", weight=100,
                        style="dashed") + ";")
                    piece = [at(f"L{i}_{r}")]
                else:
                    piece.append(at(f"L{i}_{r}"))
            if len(piece) > 1:
                w("  " + " -> ".join(piece) + " " + _LANE_EDGE + ";")
        w("")

    def _messages(self) -> None:
        """The synchronisation arrows (in a row) and the message arrows (between rows)."""
        w, at, lane_of = self.out.append, self.at, self.lane_of
        if self.syncs:
            w("  // synchronisations: an arrow from the sender's lane to each receiver's, in"
              " its row")
        for r, s in enumerate(self.steps, start=1):
            if s.sync is None or s.actor is None:
                continue
            for dest in s.sync[1]:
                if dest not in lane_of or dest == s.actor:
                    continue
                bad = r in self.red_rows
                w(f"  {at(f'L{lane_of[s.actor]}_{r}')} -> {at(f'L{lane_of[dest]}_{r}')} "
                  + _attrs(color=RED if bad else "black", penwidth=1.2, arrowsize=0.8,
                           weight=0, constraint=False) + ";")
        w("  // messages: one arrow per receives link")
        for a in self.arrows:
            bad = a.dst_row in self.red_rows
            w(f"  {at(f'L{a.src_lane}_{a.src_row}')} -> {at(f'L{a.dst_lane}_{a.dst_row}')} "
              + _attrs(color=RED if bad else "black", penwidth=2.4 if bad else 1.2,
                       arrowsize=0.9, weight=0, constraint=False) + ";")


# ---- state graph ------------------------------------------------------------------


def state_graph_dot(
    nodes: Sequence[tuple[Hashable, str]],
    edges: Sequence[tuple[Hashable, Hashable, str]],
    highlight: Sequence[Hashable] = (),
    title: str = "",
) -> str:
    """A state graph as DOT source.

    ``nodes`` are ``(id, label)`` pairs and ``edges`` ``(src, dst, label)``
    triples, drawn in the order given (ids are any hashable values; the DOT
    names are ``s0, s1, ...`` by position, so ids need no quoting).  Nodes in
    ``highlight`` (the violating path, in order) are red; so are the edges
    between consecutive nodes of it, and the last one is filled.  A label may
    span several lines (``\\n``); lines are left-aligned.  Raises ValueError
    for an edge between unknown nodes or a duplicate node id.
    """
    name: dict[Hashable, str] = {}
    for i, (nid, _) in enumerate(nodes):
        if nid in name:
            raise ValueError(f"duplicate node id {nid!r}")
        name[nid] = f"s{i}"
    marked = [h for h in highlight if h in name]
    on_path = set(marked)
    path_edges = set(itertools.pairwise(marked))

    out: list[str] = []
    w = out.append
    w("digraph states {")
    gattrs: dict[str, str | float | int | bool] = {
        "fontname": FONT, "fontsize": 14, "labelloc": "t", "labeljust": "l",
        "rankdir": "TB", "nodesep": 0.3, "ranksep": 0.4, "pad": 0.2,
    }
    if title:
        gattrs["label"] = title
    w("  graph " + _attrs(**gattrs) + ";")
    w("  node " + _attrs(fontname=FONT, fontsize=10, shape="box", style="rounded",
                         margin="0.12,0.06") + ";")
    w("  edge " + _attrs(fontname=FONT, fontsize=10, color="#424242") + ";")
    final = marked[-1] if marked else None
    for nid, label in nodes:
        text = printable(label.replace("\r\n", "\n"))
        dot_label = "\\l".join(graphviz.escape(x) for x in text.split("\n")) + "\\l"
        extra = ""
        if nid in on_path:
            extra = ", " + _attrs(color=RED, fontcolor=RED, penwidth=2)[1:-1]
            if nid == final:
                extra += ", " + _attrs(style="rounded,filled", fillcolor=NOTE_FILL)[1:-1]
        w(f"  {name[nid]} [label={_gv_quote(graphviz.nohtml(dot_label))}{extra}];")
    for src, dst, label in edges:
        for end in (src, dst):
            if end not in name:
                raise ValueError(f"edge {src!r} -> {dst!r}: unknown node {end!r}")
        attrs: dict[str, str | float | int | bool] = {}
        if label:
            attrs["label"] = " " + label
        if (src, dst) in path_edges:
            attrs.update(color=RED, fontcolor=RED, penwidth=2.2)
        w(f"  {name[src]} -> {name[dst]}" + (" " + _attrs(**attrs) if attrs else "") + ";")
    w("}")
    return "\n".join(out) + "\n"


# ---- rendering --------------------------------------------------------------------

FORMATS = (".dot", ".svg", ".png", ".pdf")
"""Output formats, by file extension (each but ``.dot`` one of ``graphviz.FORMATS``)."""

DOT_TIMEOUT = 60.0
"""Seconds the ``dot`` program may run."""

MAX_DIAGRAM_CELLS = 100_000
"""Steps times actors of one message-sequence chart (a counterexample has tens by a
few; 2,000 by 1,000 would be a 300 MB source that Graphviz cannot lay out)."""

MAX_DOT_BYTES = 32 * 2**20
"""Bytes of one diagram's DOT source."""

_OWN_SOURCE = (b"// message-sequence chart: ", b"digraph states {")
"""How a DOT source written by kvrace begins (see :func:`render`)."""

_VERSION_COMMENT = re.compile(rb"<!-- Generated by graphviz version .*?-->\r?\n", re.S)


class RenderError(KvraceError):
    """A diagram could not be written; the message is meant for the user."""


@dataclass(frozen=True)
class RenderOutcome:
    """What :func:`render` wrote."""

    dot: Path
    """The DOT source, written unless ``kept`` says why not."""
    output: Path | None
    """The rendered file; ``None`` when ``dot`` is not installed (see ``hint``)."""
    hint: str | None = None
    """One line saying how to render the ``.dot`` by hand, when it was not rendered."""
    kept: str | None = None
    """Why the source next to the rendered file was not written (a file of that name
    that kvrace did not write is left as it is)."""

    @property
    def rendered(self) -> bool:
        """Whether the requested format was written."""
        return self.output is not None


def render_hint(dot_path: Path, out_path: Path) -> str:
    """The one-line hint shown when Graphviz is missing."""
    fmt = out_path.suffix.lstrip(".").lower()
    return (f"Graphviz 'dot' not found: wrote {dot_path}; render it with "
            f"`dot -T{fmt} {dot_path} -o {out_path}` after installing Graphviz "
            "(`apt-get install graphviz` on Debian/Ubuntu, `brew install graphviz` on macOS)")


def diagram_too_large(trace: Trace) -> str | None:
    """Why ``trace`` is too large to draw as a message-sequence chart, or None (checked
    before the source is generated: its size is steps times actors)."""
    actors = max(1, len(trace.actors))
    cells = len(trace.steps) * actors
    if cells > MAX_DIAGRAM_CELLS:
        return (f"the trace has {len(trace.steps):,} steps by {actors:,} actors ({cells:,}"
                f" cells; a diagram has at most {MAX_DIAGRAM_CELLS:,}): draw a shorter trace")
    return None


def _write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: through a temporary file in its folder,
    removed on any failure or interrupt."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RenderError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _own_source(path: Path) -> bool:
    """Whether the file at ``path`` is a DOT source kvrace wrote (or is missing)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return head.startswith(_OWN_SOURCE)


def render(dot_source: str, out_path: str | Path) -> RenderOutcome:
    """Write ``dot_source`` to ``out_path`` in the format its extension names.

    ``.dot`` writes the source; ``.svg``, ``.png`` and ``.pdf`` run Graphviz
    ``dot`` and also write the source next to the output (``out.svg`` ->
    ``out.dot``) unless a file of that name exists that kvrace did not write (it
    is left as it is, and ``kept`` says so).  The SVG loses Graphviz's version
    comment, so it is the same bytes across Graphviz versions.  When ``dot`` is not
    installed, only the ``.dot`` is written and the outcome carries a hint.  Every
    file is written whole or not at all; an interrupt while Graphviz runs removes
    the source this call wrote.  Raises :class:`RenderError` for an unknown
    extension, a source larger than ``MAX_DOT_BYTES``, a failing or hanging ``dot``,
    or a file that cannot be written.
    """
    out = Path(out_path)
    ext = out.suffix.lower()
    if ext not in FORMATS:
        shown = f"'{out.suffix}'" if out.suffix else "no extension"
        raise RenderError(f"cannot write a diagram to {out}: unknown format ({shown}); "
                          "use .dot, .svg, .png or .pdf")
    source = dot_source.encode("utf-8")
    if len(source) > MAX_DOT_BYTES:
        raise RenderError(f"the diagram's source would be {len(source) / 2**20:,.0f} MiB"
                          f" (at most {MAX_DOT_BYTES // 2**20} MiB)")
    dot_path = out if ext == ".dot" else out.with_suffix(".dot")
    if ext == ".dot":
        _write(dot_path, source)
        return RenderOutcome(dot=dot_path, output=out)
    kept = None
    if not _own_source(dot_path):
        kept = (f"{dot_path} exists and is not a diagram kvrace wrote: left as it is, the"
                " source was not written")
    new_source = kept is None and not dot_path.exists()
    if kept is None:
        _write(dot_path, source)
    env = dict(os.environ)
    env.setdefault("SOURCE_DATE_EPOCH", "0")  # reproducible PDF metadata
    try:
        proc = execute.run_check(
            dot_command.command("dot", ext[1:]), input=source, capture_output=True,
            timeout=DOT_TIMEOUT, env=env, quiet=True,
        )
    except graphviz.ExecutableNotFound:
        if kept is not None:
            raise RenderError(f"Graphviz 'dot' not found, and {kept}") from None
        return RenderOutcome(dot=dot_path, output=None, hint=render_hint(dot_path, out))
    except subprocess.TimeoutExpired:
        raise RenderError(f"Graphviz 'dot' did not finish within {DOT_TIMEOUT:g} s "
                          f"rendering {out}") from None
    except graphviz.CalledProcessError as exc:
        stderr = exc.stderr if isinstance(exc.stderr, bytes) else b""
        err = stderr.decode("utf-8", "replace").strip() or f"exit code {exc.returncode}"
        raise RenderError(f"Graphviz 'dot' failed rendering {out}: {err}") from None
    except OSError as exc:
        raise RenderError(f"cannot run Graphviz 'dot': {exc.strerror or exc}") from None
    except BaseException:
        if new_source:  # an interrupt: leave nothing this call started
            dot_path.unlink(missing_ok=True)
        raise
    data = proc.stdout
    if ext == ".svg":
        data = _VERSION_COMMENT.sub(b"", data, count=1)
    _write(out, data)
    return RenderOutcome(dot=dot_path, output=out, kept=kept)


# ---- lassos (liveness counterexamples) -----------------------------------------------

LOOP = "#6a1b9a"
"""The colour of a lasso's repeating block and its back arrow."""


def lasso_dot(trace: Trace) -> str:
    """:func:`sequence_dot` of a liveness counterexample: the cycle's rows bracketed on
    the time axis (``repeats for ever``) with an arrow from its last row back to its
    first; a run that waits for ever, or ends in a deadlock, says so below its last
    row.  A trace that is not a lasso is drawn as :func:`sequence_dot` draws it."""
    dot = sequence_dot(trace)
    if trace.lasso is None:
        return dot
    has_initial = bool(trace.steps) and trace.steps[0].event is None
    off = 0 if has_initial else 1
    last_row = len(trace.steps) - 1 + off
    tail = last_row + 1
    lines: list[str] = ["  // the lasso"]
    if trace.lasso == "cycle" and trace.loop is not None and trace.loop <= len(trace.steps) - 1:
        first = trace.loop + off
        repeat = ("repeats for ever, same delays" if trace.repeats_exactly
                  else "repeats for ever")
        lines.append("  LOOP_top " + _attrs(shape="plaintext", label_html=(
            f'<FONT POINT-SIZE="10" COLOR="{LOOP}"><B>\u250c cycle</B></FONT>')) + ";")
        above = f"T_{first - 1}" if first > 1 else "time_h"
        lines.append(f"  {above} -> LOOP_top -> T_{first} "
                     + _attrs(style="invis", weight=0) + ";")
        lines.append(f"  T_{last_row} -> T_{first} " + _attrs(
            color=LOOP, penwidth=1.6, arrowsize=0.9, constraint=False, style="dashed",
            tailport="w", headport="w",
            xlabel_html=f'<FONT POINT-SIZE="10" COLOR="{LOOP}"><I>\u21ba {repeat}</I></FONT>',
        ) + ";")
        lines.append(f"  T_{tail} " + _attrs(shape="plaintext", label_html=(
            f'<FONT POINT-SIZE="10" COLOR="{LOOP}"><B>\u2514 back to #{trace.loop}</B>'
            "</FONT>")) + ";")
    else:
        what = ("waits for ever: no deadline" if trace.lasso == "idle"
                else "deadlock: time cannot pass")
        lines.append(f"  T_{tail} " + _attrs(shape="plaintext", label_html=(
            f'<FONT POINT-SIZE="10" COLOR="{LOOP}"><I>{_html(what)}</I></FONT>')) + ";")
    body = dot.rstrip("\n")
    assert body.endswith("}")
    return body[:-1] + "\n".join(lines) + "\n}\n"

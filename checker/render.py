"""Diagrams: DOT generation for traces and state graphs, and rendering with Graphviz.

This is the only module that talks to Graphviz.  It depends on
:mod:`checker.model.trace` and the standard library only; it never runs the
explorer, the language or Z3.

* :func:`sequence_dot` draws a :class:`~checker.model.trace.Trace` as a
  message-sequence chart: one vertical lane per actor, time running down, one
  row per step, an arrow for every ``receives`` link, the ``owner[...]``
  changes (who holds which slot) written on the lane of the step that made
  them, and the violating step and its incoming arrow in red.
* :func:`state_graph_dot` draws a state graph given as plain data.
* :func:`render` writes DOT source to a file, rendered to SVG, PNG or PDF by
  the Graphviz ``dot`` program when it is installed; without it, it still
  writes the ``.dot`` file and says how to render it.

DOT generation is pure and deterministic: the same input gives the same bytes
(no set iteration order, timestamps or machine paths in the output).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

from checker.model.trace import JsonValue, Step, Trace, fmt_time, show_value

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
GREY = "#757575"
LANE = "#9e9e9e"
HEADER_FILL = "#eceff1"
NOTE_FILL = "#fdecea"

MAX_OTHER_CHANGES = 3
"""Changes other than ``owner[...]`` listed per step before an ellipsis."""

OWNER_VAR = "owner"
"""Cells of this variable tell the slot-ownership story (``none`` reads "free")."""

LANE_GAP = 2.6
"""Minimum horizontal room between two lanes, in inches."""


# ---- small helpers ----------------------------------------------------------------


def _html(text: str) -> str:
    """Escape text for a Graphviz HTML-like label."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\n", " ")
    )


def _quote(text: str) -> str:
    """A DOT double-quoted string (newlines become centred line breaks)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


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
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|-?[0-9.]+", value) and value not in _KEYWORDS:
            parts.append(f"{key}={value}")
        else:
            parts.append(f"{key}={_quote(value)}")
    return "[" + ", ".join(parts) + "]"


_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}


def _event_text(step: Step) -> str:
    """``post(A, 0)``: the event name without its actor, with its arguments."""
    if step.event is None:
        return step.label
    name = step.event.split(".", 1)[1] if "." in step.event else step.event
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
    if trace.verdict == "violated" and len(trace.steps) > 1:
        return len(trace.steps) - 1
    return None


# ---- sequence chart ---------------------------------------------------------------


def _title(trace: Trace) -> str:
    params = ", ".join(f"{k}={fmt_time(v)}" for k, v in trace.params.items())
    rows = [f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="14"><B>{_html(trace.model)}</B></FONT>'
            + (f'<FONT POINT-SIZE="12">   {_html(params)}</FONT>' if params else "")
            + "</TD></TR>"]
    if trace.verdict == "violated":
        what = trace.property or "property"
        text = f"violated: {what}" + (f" \u2014 {trace.message}" if trace.message else "")
        rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="12" COLOR="{RED}">'
                    f"{_html(text)}</FONT></TD></TR>")
    elif trace.verdict:
        rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="12">{_html(trace.verdict)}'
                    "</FONT></TD></TR>")
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">'
            + "".join(rows) + "</TABLE>")


def _note(step: Step, align: str, failure: str | None) -> str:
    owners, others = _changes(step)
    bad = failure is not None
    rows = [f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="12"'
            + (f' COLOR="{RED}"' if bad else "") + f"><B>{_html(_event_text(step))}</B>"
            "</FONT></TD></TR>"]
    for line in owners:
        rows.append(f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="12" COLOR="{OWNER}"><B>'
                    f"{_html(line)}</B></FONT></TD></TR>")
    for line in others:
        rows.append(f'<TR><TD ALIGN="{align}"><FONT POINT-SIZE="10" COLOR="{GREY}">'
                    f"{_html(line)}</FONT></TD></TR>")
    if failure is not None:
        rows.append(f'<TR><TD ALIGN="LEFT" BORDER="1" COLOR="{RED}" BGCOLOR="{NOTE_FILL}"'
                    f' CELLPADDING="4"><FONT POINT-SIZE="12" COLOR="{RED}"><B>\u2717 '
                    f"{_html(failure)}</B></FONT></TD></TR>")
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            + "".join(rows) + "</TABLE>")


def _time_label(step: Step) -> str:
    if step.time is None:
        return f'<FONT POINT-SIZE="11" COLOR="{GREY}">#{step.index}</FONT>'
    return (f'<FONT POINT-SIZE="12">t={_html(fmt_time(step.time))}</FONT>'
            f'<FONT POINT-SIZE="10" COLOR="{GREY}">  #{step.index}</FONT>')


def sequence_dot(trace: Trace) -> str:
    """A message-sequence chart of ``trace`` as DOT source.

    One lane per actor (in ``trace.actors`` order; an actor a step names that
    is not listed gets a lane at the right), time running down, one row per
    step after the initial state, a time axis on the left (the step's time,
    or its number when times are unknown).  Each step is a point on its
    actor's lane with a note: the event, its ``owner[...]`` changes in blue
    (``s0: A → free``), up to three other changes in grey.  A ``receives`` link
    is an arrow from the sender's point to the receiver's point.  The violating
    step (the one with a ``failure``, or the last one of a ``violated`` trace),
    its incoming arrow and the property message are red.
    """
    actors: list[str] = list(trace.actors)
    for step in trace.steps[1:]:
        if step.actor is not None and step.actor not in actors:
            actors.append(step.actor)
    lane_of = {a: i for i, a in enumerate(actors)}
    steps = [s for s in trace.steps if s.event is not None or s is not trace.steps[0]]
    if trace.steps and trace.steps[0].event is None:
        steps = list(trace.steps[1:])
    else:
        steps = list(trace.steps)
    row_of = {id(s): r for r, s in enumerate(steps, start=1)}
    pos_of_index = {s.index: r for r, s in enumerate(steps, start=1)}
    bad_pos = _violating(trace)
    bad_step = trace.steps[bad_pos] if bad_pos is not None else None
    bad_row = row_of.get(id(bad_step)) if bad_step is not None else None
    last = len(steps) + 1  # a short tail below the last step

    # Message arrows: (sender row, sender lane, receiver row, receiver lane, label).
    arrows: list[tuple[int, int, int, int, Step]] = []
    for r, s in enumerate(steps, start=1):
        if s.receives is None or s.receives not in pos_of_index:
            continue
        sr = pos_of_index[s.receives]
        sender = steps[sr - 1]
        if sr >= r or sender.actor is None or s.actor is None:
            continue
        arrows.append((sr, lane_of[sender.actor], r, lane_of[s.actor], sender))

    def side(r: int, lane: int) -> str:
        """Which side of its lane the note of row ``r`` goes: away from arrows."""
        left = right = 0
        for sr, sl, rr, rl, _ in arrows:
            lo, hi = min(sl, rl), max(sl, rl)
            touches = sr == r or rr == r
            if (sr <= r <= rr) and touches or sr < r < rr:
                if lo <= lane - 1 < hi:
                    left += 1
                if lo <= lane < hi:
                    right += 1
        if lane == len(actors) - 1 and right == 0:
            return "right"
        if lane == 0 and left == 0 and right > 0:
            return "left"
        return "left" if left < right else "right"

    out: list[str] = []
    w = out.append
    w("digraph trace {")
    w("  graph " + _attrs(
        fontname=FONT, fontsize=12, labelloc="t", labeljust="l",
        label_html=_title(trace), newrank=True, rankdir="TB", splines="false",
        nodesep=0.12, ranksep=0.22, pad=0.3, outputorder="edgesfirst",
    ) + ";")
    w("  node " + _attrs(fontname=FONT, fontsize=11) + ";")
    w("  edge " + _attrs(fontname=FONT, fontsize=10) + ";")
    w("")

    # Header row: the time axis title and one box per actor, spacers between.
    w("  // header: one box per actor")
    head = ["time_h"]
    w("  time_h " + _attrs(shape="plaintext", label_html=f'<FONT COLOR="{GREY}">time</FONT>')
      + ";")
    for i, a in enumerate(actors):
        if i > 0:
            gap = f"gap_{i}"
            w(f"  {gap} " + _attrs(shape="point", style="invis", width=LANE_GAP) + ";")
            head.append(gap)
        w(f"  L{i}_0 " + _attrs(
            shape="box", style="rounded,filled", fillcolor=HEADER_FILL, color="#607d8b",
            fontsize=14, margin="0.15,0.06", label_html=f"<B>{_html(a)}</B>",
        ) + ";")
        head.append(f"L{i}_0")
    w("  { rank=same; " + " -> ".join(head) + " [style=invis]; }")
    w("")

    notes: dict[int, tuple[str, int]] = {}
    for r, s in enumerate(steps, start=1):
        w(f"  // step {s.index}: {s.label}")
        w(f"  T_{r} " + _attrs(shape="plaintext", label_html=_time_label(s)) + ";")
        lane = lane_of[s.actor] if s.actor is not None else None
        chain = [f"T_{r}"]
        for i in range(len(actors)):
            node = f"L{i}_{r}"
            if i == lane:
                bad = r == bad_row
                w(f"  {node} " + _attrs(
                    shape="circle", style="filled", width=0.13, fixedsize=True, label="",
                    color=RED if bad else "black", fillcolor=RED if bad else "black",
                ) + ";")
                where = side(r, i)
                failure = None
                if bad:
                    failure = s.failure or trace.message or "property violated"
                note = f"N_{r}"
                w(f"  {note} " + _attrs(
                    shape="plaintext", margin=0.02,
                    label_html=_note(s, "RIGHT" if where == "left" else "LEFT", failure),
                ) + ";")
                notes[r] = (where, i)
                chain += [note, node] if where == "left" else [node, note]
            else:
                w(f"  {node} " + _attrs(shape="point", width=0.01, color=LANE) + ";")
                chain.append(node)
        w("  { rank=same; " + " -> ".join(chain) + " [style=invis]; }")
    w("  // tail")
    tail = [f"T_{last}"] + [f"L{i}_{last}" for i in range(len(actors))]
    w(f"  T_{last} " + _attrs(shape="plaintext", label="") + ";")
    for i in range(len(actors)):
        w(f"  L{i}_{last} " + _attrs(shape="point", width=0.01, color=LANE) + ";")
    w("  { rank=same; " + " -> ".join(tail) + " [style=invis]; }")
    w("")

    w("  // lanes and the time axis")
    axis = ["time_h"] + [f"T_{r}" for r in range(1, last + 1)]
    w("  " + " -> ".join(axis) + " " + _attrs(style="invis", weight=100) + ";")
    for i in range(len(actors)):
        lane_nodes = [f"L{i}_{r}" for r in range(last + 1)]
        w("  " + " -> ".join(lane_nodes) + " " + _attrs(
            color=LANE, penwidth=1.2, arrowhead="none", weight=100) + ";")
    w("")

    w("  // messages (receives)")
    for sr, sl, rr, rl, sender in arrows:
        bad = rr == bad_row
        label = _event_text(sender)
        if sender.time is not None and steps[rr - 1].time is not None:
            dt = steps[rr - 1].time - sender.time  # type: ignore[operator]
            label += f"  (\u0394t={fmt_time(dt)})"
        w(f"  L{sl}_{sr} -> L{rl}_{rr} " + _attrs(
            color=RED if bad else "black", penwidth=2.4 if bad else 1.2,
            arrowsize=0.9, weight=0, constraint=False,
            xlabel_html=f'<FONT COLOR="{RED if bad else "black"}">{_html(label)}</FONT>',
        ) + ";")
    w("}")
    return "\n".join(out) + "\n"


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
    path_edges = {(a, b) for a, b in zip(marked, marked[1:])}

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
        text = label.replace("\r\n", "\n")
        dot_label = "\\l".join(
            x.replace("\\", "\\\\").replace('"', '\\"') for x in text.split("\n")) + "\\l"
        extra = ""
        if nid in on_path:
            extra = ", " + _attrs(color=RED, fontcolor=RED, penwidth=2)[1:-1]
            if nid == final:
                extra += ", " + _attrs(style="rounded,filled", fillcolor=NOTE_FILL)[1:-1]
        w(f'  {name[nid]} [label="{dot_label}"{extra}];')
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
"""Output formats, by file extension."""

DOT_TIMEOUT = 60.0
"""Seconds the ``dot`` program may run."""

_VERSION_COMMENT = re.compile(rb"^<!-- Generated by graphviz version [^\n]*-->\r?\n", re.M)


class RenderError(Exception):
    """A diagram could not be written; the message is meant for the user."""


@dataclass(frozen=True)
class RenderOutcome:
    """What :func:`render` wrote."""

    dot: Path
    """The DOT source, always written."""
    output: Path | None
    """The rendered file; ``None`` when ``dot`` is not installed (see ``hint``)."""
    hint: str | None = None
    """One line saying how to render the ``.dot`` by hand, when it was not rendered."""

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


def _write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise RenderError(f"cannot write {path}: {exc.strerror or exc}") from None


def render(dot_source: str, out_path: str | Path) -> RenderOutcome:
    """Write ``dot_source`` to ``out_path`` in the format its extension names.

    ``.dot`` writes the source; ``.svg``, ``.png`` and ``.pdf`` run Graphviz
    ``dot`` and also write the source next to the output (``out.svg`` ->
    ``out.dot``).  The SVG loses Graphviz's version comment, so it is the same
    bytes across Graphviz versions.  When ``dot`` is not installed, only the
    ``.dot`` is written and the outcome carries a hint.  Raises
    :class:`RenderError` for an unknown extension, a failing or hanging
    ``dot``, or a file that cannot be written.
    """
    out = Path(out_path)
    ext = out.suffix.lower()
    if ext not in FORMATS:
        shown = f"'{out.suffix}'" if out.suffix else "no extension"
        raise RenderError(f"cannot write a diagram to {out}: unknown format ({shown}); "
                          "use .dot, .svg, .png or .pdf")
    source = dot_source.encode("utf-8")
    dot_path = out if ext == ".dot" else out.with_suffix(".dot")
    _write(dot_path, source)
    if ext == ".dot":
        return RenderOutcome(dot=dot_path, output=out)
    exe = shutil.which("dot")
    if exe is None:
        return RenderOutcome(dot=dot_path, output=None, hint=render_hint(dot_path, out))
    env = dict(os.environ)
    env.setdefault("SOURCE_DATE_EPOCH", "0")  # reproducible PDF metadata
    try:
        proc = subprocess.run(
            [exe, f"-T{ext[1:]}"], input=source, capture_output=True,
            timeout=DOT_TIMEOUT, env=env, check=False,
        )
    except subprocess.TimeoutExpired:
        raise RenderError(f"Graphviz 'dot' did not finish within {DOT_TIMEOUT:g} s "
                          f"rendering {out}") from None
    except OSError as exc:
        raise RenderError(f"cannot run Graphviz 'dot': {exc.strerror or exc}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        raise RenderError(f"Graphviz 'dot' failed rendering {out}: {err}")
    data = proc.stdout
    if ext == ".svg":
        data = _VERSION_COMMENT.sub(b"", data, count=1)
    _write(out, data)
    return RenderOutcome(dot=dot_path, output=out)

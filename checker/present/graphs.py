"""The explored state graph as a networkx graph: its structure and its export.

:func:`checker.api.state_graph` builds a :class:`networkx.DiGraph` of the zone
graph (node attributes ``label`` and ``highlight``, edge attribute ``label``).
This module summarises it with networkx's algorithms (strongly connected
components, the path to the violation, states without successors) and writes
it as GraphML or GEXF, for tools such as Gephi, yEd or a script.  It never runs
the explorer.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

EXPORT_FORMATS = (".graphml", ".gexf")
"""File extensions :func:`write_graph` writes (anything else is drawn by Graphviz)."""

_GEXF_DATE = re.compile(rb'\s*lastmodifieddate="[^"]*"')


@dataclass(frozen=True)
class GraphSummary:
    """The shape of a state graph."""

    states: int
    """Symbolic states (the node a failed assert leads to is not one)."""
    edges: int
    """Edges between states."""
    components: int
    """Strongly connected components."""
    largest_component: int
    """States in the largest strongly connected component."""
    cyclic_components: int
    """Components with a cycle (more than one state, or a state with a self loop):
    where the system can run forever."""
    dead_ends: int
    """States without a successor."""
    violation_path: tuple[int, ...]
    """The counterexample's path from the initial state (ids, ending at the node of a
    failed assert when the violation is one), or ``()``."""
    failed_assert: bool = False
    """Whether the path's last edge is an event whose assert fails."""

    def line(self) -> str:
        """The summary in one line."""
        big = self.largest_component
        text = (f"{self.states} states, {self.edges} edges, {self.components} strongly"
                f" connected components (the largest of {big} state{'s' if big != 1 else ''},"
                f" {self.cyclic_components} with a cycle), {self.dead_ends} states without"
                " a successor")
        if self.violation_path:
            steps = len(self.violation_path) - 1
            text += f"; the violation is {steps} step{'s' if steps != 1 else ''} from the start"
            if self.failed_assert:
                text += " (the last one fails an assert)"
        return text


def violation_path(g: nx.DiGraph) -> tuple[int, ...]:
    """The highlighted path of ``g``: from node 0 along the highlighted edges (the
    counterexample :func:`checker.api.state_graph` marks).  A graph with highlighted
    nodes but no highlighted edge (built by hand) gets the shortest path to the last
    highlighted node that node 0 reaches."""
    if 0 not in g:
        return ()
    marked = [n for n in g.nodes if g.nodes[n].get("highlight")]
    if not marked:
        return ()
    if any(d.get("highlight") for _, _, d in g.edges(data=True)):
        path = [0]
        seen = {0}
        while True:
            nxt = [b for b in g.successors(path[-1])
                   if g.edges[path[-1], b].get("highlight") and b not in seen]
            if not nxt:
                return tuple(path)
            path.append(min(nxt))
            seen.add(path[-1])
    bad = max(marked, key=lambda n: (nx.shortest_path_length(g, 0, n)
                                     if nx.has_path(g, 0, n) else -1, n))
    return tuple(nx.shortest_path(g, 0, bad)) if nx.has_path(g, 0, bad) else ()


def summarise(g: nx.DiGraph) -> GraphSummary:
    """The strongly connected components, dead ends and violation path of ``g``
    (node 0 is the initial state; see :func:`violation_path`)."""
    failure = {n for n in g.nodes if g.nodes[n].get("assert_failure")}
    states = g.subgraph(n for n in g.nodes if n not in failure) if failure else g
    comps = list(nx.strongly_connected_components(states))
    cyclic = sum(1 for c in comps if len(c) > 1 or any(states.has_edge(n, n) for n in c))
    path = violation_path(g)
    return GraphSummary(
        states=states.number_of_nodes(), edges=states.number_of_edges(),
        components=len(comps), largest_component=max((len(c) for c in comps), default=0),
        cyclic_components=cyclic,
        dead_ends=sum(1 for n in states.nodes if g.out_degree(n) == 0),
        violation_path=path, failed_assert=bool(path) and path[-1] in failure,
    )


def graph_bytes(g: nx.DiGraph, fmt: str) -> bytes:
    """``g`` as GraphML (``.graphml``) or GEXF (``.gexf``), byte for byte the same on
    every run (GEXF's modification date is left out)."""
    buf = io.BytesIO()
    if fmt == ".graphml":
        nx.write_graphml(g, buf, encoding="utf-8", prettyprint=True)
        return buf.getvalue()
    if fmt == ".gexf":
        nx.write_gexf(g, buf, encoding="utf-8", prettyprint=True)
        return _GEXF_DATE.sub(b"", buf.getvalue(), count=1)
    raise ValueError(f"unknown graph format {fmt!r}; use {' or '.join(EXPORT_FORMATS)}")


def write_graph(g: nx.DiGraph, path: str | Path) -> None:
    """Write ``g`` to ``path`` in the format its extension names (OSError if it cannot)."""
    p = Path(path)
    data = graph_bytes(g, p.suffix.lower())
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)

"""The state graph through networkx: its summary, and GraphML/GEXF export."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from helpers import FLAGSHIPS, ROOT, run_cli

from checker.graphs import graph_bytes, summarise, write_graph

IMMEDIATE = str(ROOT / FLAGSHIPS[1])


def small() -> nx.DiGraph:
    g = nx.DiGraph()
    for i in range(5):
        g.add_node(i, label=f"s{i}", highlight=i in (0, 1, 3))
    g.add_edges_from([(0, 1, {"label": "a"}), (1, 2, {"label": "b"}), (2, 1, {"label": "c"}),
                      (1, 3, {"label": "d"}), (0, 3, {"label": "e"}), (3, 3, {"label": "f"}),
                      (0, 4, {"label": "g"})])
    return g


def test_summary_of_a_small_graph() -> None:
    s = summarise(small())
    assert (s.states, s.edges, s.components, s.largest_component) == (5, 7, 4, 2)
    assert s.cyclic_components == 2  # {1, 2} and the self loop of 3
    assert s.dead_ends == 1  # state 4
    assert s.violation_path == (0, 3)  # the shortest path to the last highlighted state
    assert "4 strongly connected components (the largest of 2 states, 2 with a cycle)" in s.line()


@pytest.mark.parametrize("ext", [".graphml", ".gexf"])
def test_export_round_trips(tmp_path: Path, ext: str) -> None:
    g = small()
    path = tmp_path / f"g{ext}"
    write_graph(g, path)
    back = nx.read_graphml(path) if ext == ".graphml" else nx.read_gexf(path)
    assert back.number_of_nodes() == 5 and back.number_of_edges() == 7
    assert graph_bytes(g, ext) == path.read_bytes()  # the same bytes every time
    assert b"lastmodifieddate" not in path.read_bytes()


def test_unknown_export_format() -> None:
    with pytest.raises(ValueError, match=r"graphml or \.gexf"):
        graph_bytes(small(), ".xml")


@pytest.mark.parametrize("ext", [".graphml", ".gexf"])
def test_cli_exports_the_flagship_graph(tmp_path: Path, ext: str) -> None:
    out = tmp_path / f"g{ext}"
    code, text, err = run_cli("graph", IMMEDIATE, "-o", str(out))
    assert code == 0, err
    assert ("41 states, 72 edges, 41 strongly connected components (the largest of 1 state,"
            " 0 with a cycle), 15 states without a successor; the violation is 6 steps from"
            " the start") in text
    g = nx.read_graphml(out) if ext == ".graphml" else nx.read_gexf(out)
    assert g.number_of_nodes() == 41 and g.number_of_edges() == 72
    assert sum(1 for n in g.nodes if g.nodes[n]["highlight"]) == 7


def test_cli_refuses_an_unknown_graph_format(tmp_path: Path) -> None:
    code, _, err = run_cli("graph", IMMEDIATE, "-o", str(tmp_path / "g.xml"))
    assert code == 2 and ".graphml or .gexf" in err

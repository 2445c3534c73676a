"""The state graph through networkx: its summary, and GraphML/GEXF export."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import networkx as nx
import pytest
from helpers import FLAGSHIPS, ROOT, run_cli

from checker.api import check, state_graph
from checker.language import load
from checker.model.compiled import SpecModel
from checker.present.graphs import graph_bytes, summarise, write_graph

IMMEDIATE = str(ROOT / FLAGSHIPS[1])
DEFERRED = str(ROOT / FLAGSHIPS[0])

LEASE = """\
# A lease on a slot: a reader may finish after its lease G has expired and the
# slot was leased to the next request (for G < T_read).
model lease_grace
symmetric type Req = {A, B}
param G      in (0, 10] = 3
param T_read in (0, 10] = 2
actor server, client
var holder : Req? = none
var phase  : Req -> {idle, granted, reading, done} = idle
clock since_grant : Req
event server.grant(r: Req)
  when holder == none and phase[r] == idle
  do holder := r; phase[r] := granted; reset since_grant[r]
event server.expire(r: Req)
  when holder == r and since_grant[r] >= G
  do holder := none
event client.read(r: Req)
  when phase[r] == granted
  do phase[r] := reading
event client.finish(r: Req)
  when phase[r] == reading
  do phase[r] := done
     assert holder in {none, r} : "{r} finishes its read on a slot leased to {holder}"
     if holder == r { holder := none }
deadline read_in_time(r: Req): since_grant[r] <= T_read while phase[r] in {granted, reading}
"""


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
    assert code == 1, err  # the graph holds check's violation: check's exit code
    assert ("41 states, 72 edges, 41 strongly connected components (the largest of 1 state,"
            " 0 with a cycle), 15 states without a successor; the violation is 6 steps from"
            " the start (the last one fails an assert)") in text
    assert "VIOLATED: assert: write of A chunk 0 lands in slot s0 owned by B" in text
    g = nx.read_graphml(out) if ext == ".graphml" else nx.read_gexf(out)
    # the 41 states and the node the failing land(A, 0) leads to
    assert g.number_of_nodes() == 42 and g.number_of_edges() == 73
    assert sum(1 for n in g.nodes if g.nodes[n]["highlight"]) == 7


def test_cli_refuses_an_unknown_graph_format(tmp_path: Path) -> None:
    code, _, err = run_cli("graph", IMMEDIATE, "-o", str(tmp_path / "g.xml"))
    assert code == 2 and ".graphml or .gexf" in err


def highlighted_events(g: nx.DiGraph) -> list[str]:
    """The labels of the highlighted path's edges (check's event names)."""
    path = summarise(g).violation_path
    return [g.edges[a, b]["label"] for a, b in itertools.pairwise(path)]


def test_the_highlighted_path_is_checks_trace_and_ends_at_the_failing_land() -> None:
    model = SpecModel(load(IMMEDIATE))
    g = state_graph(model, 300)
    assert g is not None and g.graph["verdict"] == "violated"
    s = summarise(g)
    assert s.violation_path == (0, 1, 2, 6, 14, 25, 41) and s.failed_assert
    # The last edge is the violating land(A, 0) out of node 25, drawn and highlighted.
    assert g.edges[25, 41] == {"label": "decode.land(A, 0)", "highlight": True}
    assert g.nodes[41]["assert_failure"] and "owned by B" in g.nodes[41]["label"]
    # Node 25's other edge is not on the path (the path used to end with it).
    assert not g.edges[25, 40]["highlight"]
    events = [step.label for step in check(IMMEDIATE).trace.steps[1:]]
    assert len(events) == 6
    labels = highlighted_events(g)
    assert labels[-1] == "decode.land(A, 0)" and labels[-2] == "decode.allocate(B, s0)"
    assert [lab.split("\n")[0] for lab in labels] == [
        "decode.allocate(A, s0)", "prefill.post(A, 0)", "router.abort(A)",
        "decode.release(A)", "decode.allocate(B, s0)", "decode.land(A, 0)"]


@pytest.mark.parametrize("symmetry", [True, False])
def test_the_lease_graph_ends_at_the_violating_event(tmp_path: Path, symmetry: bool) -> None:
    spec = tmp_path / "lease.kvr"
    spec.write_text(LEASE)
    flags = [] if symmetry else ["--no-symmetry"]
    code, out, _ = run_cli("check", str(spec), "-p", "G=1.5", *flags, "--json")
    assert code == 1
    trace = [s["#meta"]["label"] for s in json.loads(out)["trace"]["states"][1:]]
    assert trace == ["server.grant(A)", "server.expire(A)", "server.grant(B)",
                     "client.read(A)", "client.finish(A)"]
    stored = json.loads(out)["stats"]["zones"]
    code, out, _ = run_cli("graph", str(spec), "-p", "G=1.5", *flags, "-o",
                           str(tmp_path / "g.graphml"), "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["property"]) == (1, "violated", "assert")
    assert doc["message"] == "A finishes its read on a slot leased to B"
    assert doc["states"] == stored == (12 if symmetry else 20)
    g = nx.read_graphml(tmp_path / "g.graphml", node_type=int)
    labels = highlighted_events(g)
    assert len(labels) == 5 and labels[-1] == "client.finish(A)"
    if not symmetry:  # without symmetry the graph's events are the trace's own
        assert labels == trace
    else:  # the graph names representatives: the same run, B and A swapped from step 3
        assert [lab.split("\n")[0] for lab in labels] == [
            "server.grant(A)", "server.expire(A)", "server.grant(B)", "client.read(B)",
            "client.finish(A)"]
    assert g.nodes[doc["violation_path"][-1]]["assert_failure"]


def test_graph_counts_the_states_check_counts() -> None:
    code, out, _ = run_cli("check", DEFERRED, "--json")
    stats = json.loads(out)["stats"]
    assert code == 0 and stats["zones"] == 120
    g = state_graph(SpecModel(load(DEFERRED)), 300)
    assert g is not None and g.graph["verdict"] == "holds"
    # Zones retired by a larger zone of the same state are not nodes (they were: 160).
    assert g.number_of_nodes() == 120 and not summarise(g).violation_path
    assert not any(g.nodes[n]["highlight"] for n in g.nodes)


def test_graph_json_reports_the_holding_verdict(tmp_path: Path) -> None:
    code, out, _ = run_cli("graph", DEFERRED, "-o", str(tmp_path / "g.dot"), "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["states"]) == (0, "holds", 120)
    assert doc["property"] is None and doc["violation_path"] == []


def test_graph_of_a_model_error_says_so(tmp_path: Path) -> None:
    spec = tmp_path / "err.kvr"
    spec.write_text("model err\nactor a\nvar x : 0..2 = 0\n"
                    "event a.step() when true do x := x + 1\n")
    code, out, _ = run_cli("graph", str(spec), "-o", str(tmp_path / "g.dot"), "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"]) == (2, "error")  # as check: exit 2, not "holds"
    assert doc["errors"][0]["code"] == "model-error"
    assert "value 3 outside 0..2" in doc["errors"][0]["message"]

"""``kvrace graph``."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from checker.api import state_graph
from checker.cli.common import EXIT_OK, EXIT_VIOLATION, Session, load_spec, make_parent, params_of
from checker.errors import UsageError
from checker.model.interface import ModelRuntimeError
from checker.present import dot, graphs, jsonout

if TYPE_CHECKING:
    import networkx as nx


def run(args: argparse.Namespace, session: Session) -> int:
    """Draw or export the explored state graph."""
    out, err = session.out, session.err
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in graphs.EXPORT_FORMATS and ext not in dot.FORMATS:
        raise UsageError(f"cannot draw {args.output}: unknown format; use .dot, .svg, .png,"
                         " .pdf (drawn), .graphml or .gexf (the graph as data)")
    spec = load_spec(args.spec, args)
    model = session.model(spec, params_of(args), args.timeout)
    g = state_graph(model, args.max_nodes, zones=args.zones, symmetry=not args.no_symmetry,
                    timeout=args.timeout)
    if g is None:
        raise UsageError(f"kvrace graph: the state graph has more than {args.max_nodes}"
                         " symbolic states; it would be unreadable.  Raise --max-nodes or"
                         " draw a smaller model.")
    if g.graph.get("verdict") == "error":
        # As `check` says it: a model error, not a graph to read a verdict from.
        raise ModelRuntimeError(g.graph.get("message", ""))
    summary = graphs.summarise(g)
    # The graph's exploration is check's: a violation it shows is check's verdict.
    violated = g.graph.get("verdict") == "violated"
    code = EXIT_VIOLATION if violated else EXIT_OK
    facts: dict[str, object] = {
        "states": summary.states, "edges": summary.edges,
        "property": g.graph.get("property") if violated else None,
        "message": g.graph.get("message") if violated else None,
        "violation_path": list(summary.violation_path)}
    if ext in graphs.EXPORT_FORMATS:
        try:
            graphs.write_graph(g, args.output)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        if args.json:
            out.write(jsonout.document("graph", code, {
                "spec": args.spec, "model": spec.name, "output": args.output,
                "wrote": True, "note": None, **facts}))
        else:
            out.write(f"wrote {args.output} ({summary.line()})\n")
            if violated:
                out.write(violation_line(g))
        return code
    nodes = [(n, g.nodes[n]["label"]) for n in g.nodes]
    edges = [(a, b, g.edges[a, b]["label"]) for a, b in g.edges]
    highlight = list(summary.violation_path)
    source = dot.state_graph_dot(nodes, edges, highlight, title=f"{spec.name}: state graph")
    make_parent(args.output)
    try:
        outcome = dot.render(source, args.output)
    except dot.RenderError as exc:
        raise UsageError(f"cannot draw {args.output}: {exc}") from None
    if outcome.hint:
        err.write(outcome.hint + "\n")
    elif not args.json:
        out.write(f"wrote {args.output} ({summary.line()})\n")
    if outcome.kept is not None:
        err.write(f"kvrace: warning: {outcome.kept}\n")
    if args.json:
        out.write(jsonout.document("graph", code, {
            "spec": args.spec, "model": spec.name, "output": args.output,
            "wrote": not outcome.hint, "note": outcome.hint, **facts}))
    elif violated:
        out.write(violation_line(g))
    return code


def violation_line(g: nx.DiGraph) -> str:
    """The violation the highlighted path leads to, as ``check`` names it."""
    prop, message = g.graph.get("property", ""), g.graph.get("message", "")
    return f"VIOLATED: {prop}: {message} (the highlighted path is check's trace)\n"

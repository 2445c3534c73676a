"""``kvrace graph``."""

from __future__ import annotations

import argparse
import os

from checker import graphs
from checker.api import state_graph
from checker.cli.common import EXIT_OK, Session, load_spec, make_parent, params_of
from checker.errors import UsageError
from checker.present import dot, jsonout


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
    summary = graphs.summarise(g)
    if ext in graphs.EXPORT_FORMATS:
        try:
            graphs.write_graph(g, args.output)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        if args.json:
            out.write(jsonout.document("graph", EXIT_OK, {
                "spec": args.spec, "model": spec.name, "output": args.output,
                "wrote": True, "note": None,
                "states": g.number_of_nodes(), "edges": g.number_of_edges()}))
        else:
            out.write(f"wrote {args.output} ({summary.line()})\n")
        return EXIT_OK
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
        out.write(jsonout.document("graph", EXIT_OK, {
            "spec": args.spec, "model": spec.name, "output": args.output,
            "wrote": not outcome.hint, "note": outcome.hint,
            "states": g.number_of_nodes(), "edges": g.number_of_edges()}))
    return EXIT_OK

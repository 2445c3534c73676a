"""``kvrace draw``."""

from __future__ import annotations

import argparse

from checker.cli.common import EXIT_OK, Session, draw_trace
from checker.cli.tracefile import read_trace
from checker.present import jsonout


def run(args: argparse.Namespace, session: Session) -> int:
    """Draw a trace file."""
    out, err = session.out, session.err
    note = draw_trace(read_trace(args.trace), args.output)
    if args.json:
        out.write(jsonout.document("draw", EXIT_OK, {
            "input": args.trace, "output": args.output, "wrote": note.startswith("wrote "),
            "note": note}))
        if not note.startswith("wrote "):
            err.write(note + "\n")
    elif note.startswith("wrote "):
        out.write(note + "\n")
    else:
        err.write(note + "\n")
    return EXIT_OK

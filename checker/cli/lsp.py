"""``kvrace lsp``: the language server, on stdin and stdout."""

from __future__ import annotations

import argparse
import importlib.util

from checker.cli.common import EXIT_BAD_INPUT, EXIT_OK, Session


def run(args: argparse.Namespace, session: Session) -> int:
    """Serve the Language Server Protocol until the client exits."""
    if importlib.util.find_spec("pygls") is None:
        session.err.write("kvrace lsp: the language server needs pygls:"
                          " pip install 'kvrace[lsp]'\n")
        return EXIT_BAD_INPUT
    from checker.lsp.server import main

    main(args.check_timeout)
    session.out.stream = None  # the server has closed stdout: nothing is left to flush
    return EXIT_OK

"""``kvrace lint``."""

from __future__ import annotations

import argparse

from checker.cli.common import EXIT_BAD_INPUT, EXIT_OK, BadSpec, Session, load_spec
from checker.present import jsonout


def run(args: argparse.Namespace, session: Session) -> int:
    """Lint every spec given: ``ok`` or its diagnostics."""
    out, err = session.out, session.err
    status = EXIT_OK
    files: list[dict[str, object]] = []
    errors: list[dict[str, object]] = []
    for path in args.specs:
        try:
            spec = load_spec(path)
        except BadSpec as e:
            err.write(e.error.render() + "\n")
            status = EXIT_BAD_INPUT
            found = jsonout.diagnostic_errors(e.error.diagnostics)
            errors += found
            files.append({"path": path, "ok": False, "model": None, "errors": found})
            continue
        files.append({"path": path, "ok": True, "model": spec.name, "errors": []})
        if not args.json:
            out.write(f"{path}: ok\n")
    if args.json:
        out.write(jsonout.document("lint", status, {"files": files}, errors))
    return status

"""``kvrace lint``."""

from __future__ import annotations

import argparse

from checker.cli.ci import refuse_same_file, write_lint_reports
from checker.cli.common import EXIT_BAD_INPUT, EXIT_OK, BadSpec, Session, load_spec
from checker.present import jsonout
from checker.present.cases import LintedFile


def run(args: argparse.Namespace, session: Session) -> int:
    """Lint every spec given: ``ok`` or its diagnostics; then the CI reports."""
    out, err = session.out, session.err
    refuse_same_file(args)
    status = EXIT_OK
    files: list[dict[str, object]] = []
    errors: list[dict[str, object]] = []
    linted: list[LintedFile] = []
    for path in args.specs:
        try:
            spec = load_spec(path)
        except BadSpec as e:
            rendered = e.error.render()
            err.write(rendered + "\n")
            status = EXIT_BAD_INPUT
            found = jsonout.diagnostic_errors(e.error.diagnostics)
            errors += found
            files.append({"path": path, "ok": False, "model": None, "errors": found})
            linted.append(LintedFile(path, None, tuple(e.error.diagnostics), rendered))
            continue
        files.append({"path": path, "ok": True, "model": spec.name, "errors": []})
        linted.append(LintedFile(path, spec.name))
        if not args.json:
            out.write(f"{path}: ok\n")
    if args.json:
        out.write(jsonout.document("lint", status, {"files": files}, errors))
    out.flush()
    write_lint_reports(args, err, linted)
    return status

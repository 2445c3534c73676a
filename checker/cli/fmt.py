"""``kvrace fmt``: lay specs out canonically (see :mod:`checker.language.fmt`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from checker.cli.common import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION, Session
from checker.diagnostics import SpecError
from checker.language import read_source
from checker.language.fmt import format_text, unified_diff


def spec_files(paths: list[str]) -> list[str]:
    """The files named, a directory standing for its ``.kvr`` files (recursively, sorted)."""
    files: list[str] = []
    for path in paths:
        p = Path(path)
        if path != "-" and p.is_dir():
            files += sorted(str(f) for f in p.rglob("*.kvr") if f.is_file())
        else:
            files.append(path)
    return files


def run(args: argparse.Namespace, session: Session) -> int:
    """Format every spec given: in place, or with ``--check``/``--diff`` only report.

    Exit 0 when nothing is (or would be) changed, 1 when ``--check``/``--diff`` find a
    file to change, 2 when a file does not parse (its diagnostics, as ``lint`` prints
    them; such a file is left as it is)."""
    out, err = session.out, session.err
    status = EXIT_OK
    changed = 0
    report_only = args.check or args.diff
    for path in spec_files(args.specs):
        try:
            source = sys.stdin.read() if path == "-" else read_source(path)
            result = format_text(source, "<stdin>" if path == "-" else path)
        except SpecError as e:
            err.write(e.render() + "\n")
            status = EXIT_BAD_INPUT
            continue
        if path == "-" and not report_only:
            out.raw_write(result)
            continue
        if result == source:
            continue
        changed += 1
        if args.diff:
            out.raw_write(unified_diff(source, result, path))
        elif args.check:
            out.write(f"{path}: would be reformatted\n")
        else:
            try:
                Path(path).write_text(result, encoding="utf-8")
            except OSError as exc:
                err.write(f"{path}: cannot write: {exc.strerror}\n")
                status = EXIT_BAD_INPUT
                continue
            out.write(f"{path}: reformatted\n")
    if status == EXIT_OK and changed and report_only:
        status = EXIT_VIOLATION
    return status

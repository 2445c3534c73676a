"""``--junit FILE`` and ``--sarif FILE`` of ``check`` and ``lint``: the CI reports,
written after the verdict like every side output (a failure to write one is a
warning; the exit code stays the verdict's)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from checker.cli.common import Output, make_parent, side_output
from checker.errors import UsageError

if TYPE_CHECKING:
    from checker.present.cases import CheckReport, LintedFile


def write_text(path: str, text: str) -> str:
    """Write ``text`` to ``path`` (UTF-8, ``\\n`` line ends); returns the note for the
    user."""
    make_parent(path)
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return f"wrote {path}"


def refuse_same_file(args: argparse.Namespace) -> None:
    """Refuse, before any work, one file for both reports."""
    if args.junit is not None and args.junit == args.sarif:
        raise UsageError(f"--junit and --sarif name the same file ({args.junit})")


def _write(err: Output, path: str | None, render: Callable[[], str]) -> None:
    if path is not None:
        side_output(err, path, lambda: write_text(path, render()))


def write_check_reports(args: argparse.Namespace, err: Output, report: CheckReport) -> None:
    """``check --junit/--sarif``."""
    from checker.present import junit, sarif  # with xml.etree: only for these reports

    _write(err, args.junit, lambda: junit.check_junit(report))
    _write(err, args.sarif, lambda: sarif.check_sarif(report))


def write_lint_reports(args: argparse.Namespace, err: Output,
                       files: Sequence[LintedFile]) -> None:
    """``lint --junit/--sarif``."""
    from checker.present import junit, sarif

    _write(err, args.junit, lambda: junit.lint_junit(files))
    _write(err, args.sarif, lambda: sarif.lint_sarif(files))

"""The JSON contract of ``kvrace ... --json``: one envelope for every command.

Every document a command prints under ``--json`` starts with the same fields,
described by the JSON Schema ``docs/schema/kvrace-output-1.schema.json``:

* ``schema`` — :data:`SCHEMA`, the version of this contract (a change that
  removes or renames a field, or changes its meaning, bumps it);
* ``command`` — the subcommand (``check``, ``prove``, ...);
* ``kvrace_version`` — the version of kvrace that wrote it;
* ``verdict`` — one of :data:`VERDICTS`, matching the exit code
  (:data:`EXIT_OF`);
* ``exit_code`` — the process's exit code;
* ``errors`` — what went wrong, as objects (``code``, ``message``, ``file``,
  ``line``, ``col``); empty unless the verdict is ``error`` or ``interrupted``.

The command's own fields follow.  A run that fails before it has anything to
report (bad usage, a broken spec, an interrupt) still prints the envelope.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from checker.diagnostics import Diagnostic
from checker.results import PropertyKind, PropertyRef, Verdict

if TYPE_CHECKING:
    from checker.model.trace import Trace

SCHEMA = "kvrace-output/1"
"""The version of the JSON contract; also the schema file's ``$id`` suffix."""

HOLDS, VIOLATED, INCONCLUSIVE, ERROR, INTERRUPTED = (
    Verdict.HOLDS, Verdict.VIOLATED, Verdict.INCONCLUSIVE, Verdict.ERROR, Verdict.INTERRUPTED)
UNREACHABLE = Verdict.UNREACHABLE
"""``check`` only: every property holds, but a ``reachable`` query is never reachable."""
VERDICTS = (HOLDS, VIOLATED, INCONCLUSIVE, ERROR, UNREACHABLE, INTERRUPTED)
"""The verdict words, in the order of the schema's ``enum``."""

EXIT_OF = {HOLDS: 0, VIOLATED: 1, ERROR: 2, INCONCLUSIVE: 3, UNREACHABLE: 5}
"""Exit code of each verdict (``interrupted`` is 130 or 143, an internal error 70;
``check --strict`` exits 4 for a vacuous HOLDS, whose verdict stays ``holds``)."""


def verdict_of_exit(code: int) -> Verdict:
    """The verdict a command's exit code stands for."""
    if code in (130, 143):
        return INTERRUPTED
    return {0: HOLDS, 1: VIOLATED, 3: INCONCLUSIVE, 4: HOLDS, 5: UNREACHABLE}.get(code, ERROR)


def error(code: str, message: str, file: str | None = None, line: int | None = None,
          col: int | None = None, **extra: object) -> dict[str, object]:
    """One entry of ``errors``."""
    return {"code": code, "message": message, "file": file, "line": line, "col": col,
            **extra}


_POSITION = re.compile(r"(?P<file>[^\s:`'\"]+):(?P<line>\d+):(?P<col>\d+)")


def error_from_text(code: str, message: str, file: str | None = None) -> dict[str, object]:
    """An error whose message may name its place (``FILE:LINE:COL``): that place is
    also given as ``file``, ``line`` and ``col``."""
    m = _POSITION.search(message)
    if m is None:
        return error(code, message, file)
    return error(code, message, m.group("file"), int(m.group("line")), int(m.group("col")))


def diagnostic_errors(diagnostics: Sequence[Diagnostic]) -> list[dict[str, object]]:
    """A spec's diagnostics as ``errors`` entries."""
    out: list[dict[str, object]] = []
    for d in diagnostics:
        sp = d.span
        entry = error(d.code, d.message, d.file, sp.line if sp else None,
                      sp.column if sp else None)
        if sp is not None:
            entry["end_line"], entry["end_col"] = sp.end_line, sp.end_column
        if d.notes:
            entry["notes"] = list(d.notes)
        out.append(entry)
    return out


def envelope(command: str, verdict: Verdict, exit_code: int,
             errors: Sequence[dict[str, object]] = ()) -> dict[str, Any]:
    """The fields every ``--json`` document starts with."""
    from checker.cli import version

    return {"schema": SCHEMA, "command": command, "kvrace_version": version(),
            "verdict": verdict, "exit_code": exit_code, "errors": list(errors)}


def document(command: str, exit_code: int, fields: dict[str, Any],
             errors: Sequence[dict[str, object]] = ()) -> str:
    """A complete ``--json`` document, as text (with its final newline)."""
    doc = envelope(command, verdict_of_exit(exit_code), exit_code, errors)
    doc.update(fields)
    return json.dumps(doc, indent=2) + "\n"


def property_fields(ref: PropertyRef | None, trace: Trace | None) -> dict[str, object]:
    """The violated property's full name and kind.

    An assert is named after the event instance whose assert failed (``assert in
    decode.land(A, 0)``), invariants and bounded responses after their declaration
    and instance (``invariant mutex``, ``property bounded_release[A]``).  ``ref`` is
    ``None`` when nothing is violated (a model error is in ``errors``).
    """
    if ref is None:
        return {"property": None, "property_kind": None}
    if ref.kind is PropertyKind.ASSERT:
        last = trace.steps[-1] if trace is not None and trace.steps else None
        where = f" in {last.label}" if last is not None and last.event else ""
        return {"property": f"assert{where}", "property_kind": ref.kind}
    if ref.kind is PropertyKind.DEADLOCK:
        return {"property": "deadlock freedom", "property_kind": ref.kind}
    if ref.kind is PropertyKind.INVARIANT:
        return {"property": f"invariant {ref.label}", "property_kind": ref.kind}
    if ref.kind is PropertyKind.RESPONSE:
        return {"property": f"property {ref.label}", "property_kind": ref.kind}
    return {"property": ref.label, "property_kind": ref.kind}

"""SARIF 2.1.0 reports (``check --sarif FILE``, ``lint --sarif FILE``), for code
scanning.

One run of the ``kvrace`` tool.  ``lint`` gives one result per diagnostic, its rule
the diagnostic's code (``KVR101``).  ``check`` gives one result per property it did
not show to hold, its rule the property's kind (``invariant``, ``response``,
``assert``, ``deadlock``, ``liveness``, ``reachable``; ``model-error`` for a model
run-time error), located at the property's declaration (an assert: its event), with
the counterexample as a code flow through the events' declarations.  A violated
property or a query never reachable is a failure (level ``error`` and ``warning``),
an undecided one an open result (level ``none``); a spec that does not load gives
its diagnostics.

Columns count Unicode code points (``columnKind``), as kvrace's diagnostics do; an
end column is the one after the region, as a span's is.  The output is
deterministic (no times, no absolute paths but those given).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePosixPath, PureWindowsPath

from checker import version
from checker.diagnostics import Diagnostic, Span
from checker.present.cases import CheckReport, LintedFile, PropertyCase
from checker.results import PropertyKind, Verdict

SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
              "sarif-schema-2.1.0.json")
"""The ``$schema`` of every document: the OASIS schema's own id."""

_KIND_RULES: dict[str, str] = {
    str(PropertyKind.INVARIANT): "An invariant is false in a reachable state.",
    str(PropertyKind.RESPONSE): "A bounded response is not given in time.",
    str(PropertyKind.ASSERT): "An assert in an event's effect fails.",
    str(PropertyKind.DEADLOCK): "A reachable state lets no event fire and time not pass.",
    str(PropertyKind.LIVENESS): "An unbounded liveness property is broken by a lasso.",
    str(PropertyKind.QUERY): "A `reachable` query is satisfied by no reachable state.",
    "model-error": "The model fails at run time (an index or a value out of range, ...).",
    str(PropertyKind.OTHER): "A property is violated.",
}
"""The rules of ``check``: one per kind of property, with what breaking it means."""


def _uri(path: str) -> str:
    """``path`` as a URI reference: relative paths stay relative (to the checkout),
    with forward slashes."""
    if PureWindowsPath(path).is_absolute() and not path.startswith("/"):
        return PureWindowsPath(path).as_uri()
    p = PurePosixPath(path.replace("\\", "/"))
    return p.as_uri() if p.is_absolute() else str(p)


def _region(span: Span) -> dict[str, int]:
    return {"startLine": span.line, "startColumn": span.column,
            "endLine": span.end_line, "endColumn": span.end_column}


def _location(path: str, span: Span | None) -> dict[str, object]:
    physical: dict[str, object] = {"artifactLocation": {"uri": _uri(path)}}
    if span is not None:
        physical["region"] = _region(span)
    return {"physicalLocation": physical}


def _diagnostic_result(d: Diagnostic, rules: list[str]) -> dict[str, object]:
    text = d.message + "".join(f"\n= {n}" for n in d.notes)
    return {"ruleId": d.code, "ruleIndex": rules.index(d.code), "kind": "fail",
            "level": "error", "message": {"text": text},
            "locations": [_location(d.file, d.span)]}


def _code_flow(path: str, case: PropertyCase, events: dict[str, Span]
               ) -> list[dict[str, object]]:
    """The counterexample as one thread flow: a location per step, at its event."""
    assert case.trace is not None
    steps: list[dict[str, object]] = []
    for step in case.trace.steps:
        span = events.get(step.event) if step.event is not None else None
        where = _location(path, span)
        where["message"] = {"text": f"{step.index}: {step.label}"}
        steps.append({"location": where})
    return [{"threadFlows": [{"locations": steps}]}]


def _case_result(report: CheckReport, case: PropertyCase, rules: list[str]
                 ) -> dict[str, object]:
    rule = "model-error" if case.status is Verdict.ERROR else str(case.ref.kind)
    if case.status in (Verdict.VIOLATED, Verdict.ERROR):
        kind, level = "fail", "error"
    elif case.status is Verdict.UNREACHABLE:
        kind, level = "fail", "warning"
    else:
        kind, level = "open", "none"
    text = f"{case.title}: {case.message}" if case.message else case.title
    result: dict[str, object] = {
        "ruleId": rule, "ruleIndex": rules.index(rule), "kind": kind, "level": level,
        "message": {"text": text},
        "locations": [_location(report.path, case.span)],
        "properties": {"property": case.title, "status": str(case.status),
                       "params": report.params},
    }
    if case.trace is not None:
        result["codeFlows"] = _code_flow(report.path, case, report.events)
    return result


def _document(category: str, rules: list[dict[str, object]],
              results: list[dict[str, object]]) -> str:
    """The document of one run; ``category`` tells code scanning which analysis it is
    (the reports of several specs uploaded together stay apart)."""
    run = {
        "automationDetails": {"id": category},
        "tool": {"driver": {"name": "kvrace", "version": version(),
                            "semanticVersion": version(), "rules": rules}},
        "invocations": [{"executionSuccessful": True}],
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    doc = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _code_rules(codes: list[str]) -> list[dict[str, object]]:
    return [{"id": c} for c in codes]


def lint_sarif(files: Sequence[LintedFile]) -> str:
    """The SARIF document of one ``lint`` run."""
    diags = [d for f in files for d in f.diagnostics]
    codes = sorted({d.code for d in diags})
    results = [_diagnostic_result(d, codes) for d in diags]
    return _document("kvrace/lint/", _code_rules(codes), results)


def check_sarif(report: CheckReport) -> str:
    """The SARIF document of one ``check`` run."""
    if report.diagnostics:
        codes = sorted({d.code for d in report.diagnostics})
        return _document(_category(report), _code_rules(codes),
                         [_diagnostic_result(d, codes) for d in report.diagnostics])
    names = list(_KIND_RULES)
    rules: list[dict[str, object]] = [
        {"id": k, "shortDescription": {"text": text}} for k, text in _KIND_RULES.items()]
    results = [_case_result(report, c, names) for c in report.cases
               if c.status is not Verdict.HOLDS]
    return _document(_category(report), rules, results)


def _category(report: CheckReport) -> str:
    """``kvrace/check/SPEC/``: one analysis per spec."""
    return f"kvrace/check/{_uri(report.path)}/"

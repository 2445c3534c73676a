"""JUnit XML reports (``check --junit FILE``, ``lint --junit FILE``), for the test
views of CI systems.

The documents follow the JUnit schema of Jenkins' xunit plugin (``junit-10.xsd``,
the Ant/Surefire format most CI systems read).  ``check`` writes one ``testsuite``
(the spec) with one ``testcase`` per property: a violated property (or a query never
reachable) is a ``failure`` whose text is the counterexample, a model run-time error
an ``error``, a property not decided (a limit, or the run stopped at another
property's violation) ``skipped``.  ``lint`` writes one ``testcase`` per file, a
``failure`` listing its diagnostics.

The output is deterministic: no ``time``, ``timestamp`` or ``hostname`` attribute.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from checker.present.cases import CheckReport, LintedFile, PropertyCase
from checker.results import Verdict

_FAILED = (Verdict.VIOLATED, Verdict.UNREACHABLE)


def _text(s: str) -> str:
    """``s`` without the characters XML 1.0 cannot hold (C0 controls but tab and
    newline): a spec's text may carry any."""
    return "".join(ch for ch in s if ch in "\t\n\r" or ord(ch) >= 0x20)


def _case(parent: ET.Element, classname: str, case: PropertyCase) -> None:
    """One ``testcase`` for ``case``."""
    el = ET.SubElement(parent, "testcase", name=_text(case.title), classname=classname)
    if case.status in _FAILED:
        first = case.message.split("\n", 1)[0]
        failure = ET.SubElement(el, "failure", type=str(case.ref.kind),
                                message=_text(first))
        failure.text = _text(case.detail)
    elif case.status is Verdict.ERROR:
        error = ET.SubElement(el, "error", type="model-error", message=_text(case.message))
        error.text = _text(case.detail)
    elif case.status is not Verdict.HOLDS:
        ET.SubElement(el, "skipped", message=_text(case.message))


def _counts(suite: ET.Element, cases: Sequence[ET.Element]) -> None:
    """The ``tests``, ``failures``, ``errors`` and ``skipped`` attributes of ``suite``."""
    def count(tag: str) -> str:
        return str(sum(1 for c in cases if c.find(tag) is not None))

    suite.set("tests", str(len(cases)))
    suite.set("failures", count("failure"))
    suite.set("errors", count("error"))
    suite.set("skipped", count("skipped"))


def _document(root: ET.Element) -> str:
    """The XML text of ``root``, indented, with its declaration and final newline."""
    ET.indent(root, space="  ")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ET.tostring(root, encoding="unicode") + "\n")


def _suites(name: str, suites: Sequence[ET.Element]) -> ET.Element:
    """The ``testsuites`` root over ``suites``, with their totals."""
    root = ET.Element("testsuites", name=name)
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in suites)))
    root.extend(suites)
    return root


def check_junit(report: CheckReport) -> str:
    """The JUnit XML document of one ``check`` run."""
    suite = ET.Element("testsuite", name=_text(report.model or report.path))
    suite.set("file", _text(report.path))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="spec", value=_text(report.path))
    ET.SubElement(props, "property", name="params", value=_text(report.params))
    ET.SubElement(props, "property", name="verdict", value=str(report.verdict))
    classname = f"kvrace.{report.model or 'spec'}"
    if report.diagnostics:
        el = ET.SubElement(suite, "testcase", name="spec loads", classname=classname)
        first = report.diagnostics[0]
        failure = ET.SubElement(el, "failure", type=first.code,
                                message=_text(first.message))
        failure.text = _text(report.rendered)
    for case in report.cases:
        _case(suite, classname, case)
    _counts(suite, suite.findall("testcase"))
    return _document(_suites("kvrace check", [suite]))


def lint_junit(files: Sequence[LintedFile]) -> str:
    """The JUnit XML document of one ``lint`` run: one case per file."""
    suite = ET.Element("testsuite", name="kvrace lint")
    for f in files:
        el = ET.SubElement(suite, "testcase", name=_text(f.path), classname="kvrace.lint")
        if f.diagnostics:
            first = f.diagnostics[0]
            n = len(f.diagnostics)
            failure = ET.SubElement(
                el, "failure", type=first.code,
                message=_text(f"{n} diagnostic{'s' if n != 1 else ''}: {first.message}"))
            failure.text = _text(f.rendered)
    _counts(suite, suite.findall("testcase"))
    return _document(_suites("kvrace lint", [suite]))

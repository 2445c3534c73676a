"""``check``/``lint`` ``--junit FILE`` and ``--sarif FILE``: the CI reports, validated
against the published schemas (``tests/schemas``: OASIS's SARIF 2.1.0 JSON schema,
Jenkins' JUnit ``junit-10.xsd``), one case per property, the counterexample as the
failure text, deterministic, and the exit codes and printed output unchanged."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from helpers import ROOT, run_cli

from checker import api
from checker.model import trace as tr

SCHEMAS = ROOT / "tests" / "schemas"
IMMEDIATE = "spec/sglang/immediate_release.kvr"
TRAIN_GATE = "spec/classic/train_gate.kvr"
HANDOFF = "tests/queries/handoff.kvr"
FISCHER_LIVE = "docs/liveness/fischer.kvr"
BAD = "tests/diagnostics/broadcast_receiver_clock.kvr"


@cache
def _sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


@cache
def _junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))


def _sarif(path: Path) -> dict[str, object]:
    """The SARIF document at ``path``, after validating it against the schema and the
    rules of SARIF the schema cannot state (§3.27.9: a level other than ``none`` only
    with kind ``fail``; a rule index that points at its rule)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    errors = sorted(e.message for e in _sarif_validator().iter_errors(doc))
    assert errors == []
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    for r in run["results"]:
        assert r["level"] == "none" or r["kind"] == "fail"
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    return doc


def _junit(path: Path) -> ET.Element:
    """The JUnit document at ``path``, after validating it against ``junit-10.xsd``."""
    _junit_schema().validate(str(path))
    return ET.parse(path).getroot()


def _cases(root: ET.Element) -> list[tuple[str, str]]:
    """Each test case's name and outcome (``pass``, ``failure``, ``error``,
    ``skipped``)."""
    out = []
    for case in root.iter("testcase"):
        child = next(iter(case), None)
        out.append((case.get("name", ""), "pass" if child is None else child.tag))
    return out


def _check(tmp_path: Path, *argv: str) -> tuple[int, str, ET.Element, dict[str, object]]:
    junit, sarif = tmp_path / "r.xml", tmp_path / "r.sarif"
    code, out, err = run_cli("check", "-q", *argv, "--junit", str(junit), "--sarif", str(sarif))
    assert f"wrote {junit}" in err and f"wrote {sarif}" in err
    return code, out, _junit(junit), _sarif(sarif)


def test_the_schemas_refuse_what_they_should() -> None:
    # The validation has teeth: a suite without its counts, a run without its tool's
    # name.
    assert not _junit_schema().is_valid('<testsuites><testsuite name="x"/></testsuites>')
    assert not _sarif_validator().is_valid({"version": "2.1.0",
                                            "runs": [{"tool": {"driver": {}}}]})


def test_an_assert_violation_fails_its_case_with_the_trace(in_root: Path,
                                                          tmp_path: Path) -> None:
    code, _, root, doc = _check(tmp_path, IMMEDIATE)
    assert code == 1
    assert _cases(root) == [("assert in decode.land", "failure"),
                            ("deadlock freedom", "skipped")]
    suite = root.find("testsuite")
    assert suite is not None
    assert {k: suite.get(k) for k in ("name", "file", "tests", "failures", "errors",
                                      "skipped")} == {
        "name": "immediate_release", "file": IMMEDIATE, "tests": "2", "failures": "1",
        "errors": "0", "skipped": "1"}
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props == {"spec": IMMEDIATE, "params": "T_prop=2, T_chunk=2, T_flight=3",
                     "verdict": "violated"}
    failure = root.find(".//failure")
    assert failure is not None
    outcome = api.check(IMMEDIATE)
    assert outcome.trace is not None
    assert failure.get("type") == "assert"
    assert failure.get("message") == "assert: write of A chunk 0 lands in slot s0 owned by B"
    assert failure.text == (f"assert: write of A chunk 0 lands in slot s0 owned by B\n\n"
                            f"counterexample, 6 events:\n{tr.to_text(outcome.trace)}\n")
    skipped = root.find(".//skipped")
    assert skipped is not None and skipped.get("message") == (
        "not decided: the exploration stopped at the first violation (assert)")
    (run,) = doc["runs"]  # type: ignore[attr-defined]
    result, undecided = run["results"]
    assert (result["ruleId"], result["kind"], result["level"]) == ("assert", "fail", "error")
    assert (undecided["ruleId"], undecided["kind"], undecided["level"]) == (
        "deadlock", "open", "none")
    assert undecided["locations"] == [{"physicalLocation": {
        "artifactLocation": {"uri": IMMEDIATE}}}]
    assert result["message"]["text"] == ("assert in decode.land: assert: write of A chunk 0"
                                         " lands in slot s0 owned by B")
    spec = outcome.spec
    land = next(ev for ev in spec.events if ev.label == "decode.land")
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": IMMEDIATE},
        "region": {"startLine": land.span.line, "startColumn": land.span.column,
                   "endLine": land.span.end_line, "endColumn": land.span.end_column}}
    flow = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [f["location"]["message"]["text"] for f in flow] == [
        f"{s.index}: {s.label}" for s in outcome.trace.steps]
    assert flow[-1]["location"]["physicalLocation"]["region"]["startLine"] == land.span.line
    assert "region" not in flow[0]["location"]["physicalLocation"]  # the initial state
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["automationDetails"] == {"id": f"kvrace/check/{IMMEDIATE}/"}


def test_a_response_violation_leaves_the_invariant_undecided(in_root: Path,
                                                             tmp_path: Path) -> None:
    code, _, root, doc = _check(tmp_path, TRAIN_GATE, "-p", "W=20")
    assert code == 1
    assert _cases(root) == [("invariant one_on_bridge", "skipped"),
                            ("property crosses_in_time", "failure"),
                            ("deadlock freedom", "skipped")]
    failure = root.find(".//failure")
    assert failure is not None and failure.get("type") == "response"
    assert (failure.get("message") or "").startswith("crosses_in_time[T2]: ")
    results = doc["runs"][0]["results"]  # type: ignore[index]
    assert [(r["ruleId"], r["kind"], r["level"]) for r in results] == [
        ("invariant", "open", "none"), ("response", "fail", "error"),
        ("deadlock", "open", "none")]
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 57


def test_holding_properties_pass_and_a_never_reachable_query_fails(in_root: Path,
                                                                    tmp_path: Path) -> None:
    code, _, root, doc = _check(tmp_path, HANDOFF)
    assert code == 5
    assert _cases(root) == [("invariant posted_first", "pass"),
                            ("deadlock freedom", "pass"),
                            ("reachable both_flying", "pass"),
                            ("reachable landed_and_flying", "pass"),
                            ("reachable landed_unposted", "failure")]
    failure = root.find(".//failure")
    assert failure is not None and failure.get("type") == "reachable"
    assert failure.get("message") == (
        "no reachable state satisfies exists r: Req . phase[r] == landed and not posted[r]")
    results = doc["runs"][0]["results"]  # type: ignore[index]
    assert [(r["ruleId"], r["kind"], r["level"], r["properties"]["property"])
            for r in results] == [("reachable", "fail", "warning",
                                   "reachable landed_unposted")]


def test_query_only_reports_that_query(in_root: Path, tmp_path: Path) -> None:
    code, _, root, doc = _check(tmp_path, HANDOFF, "--query", "both_flying")
    assert code == 0
    assert _cases(root) == [("reachable both_flying", "pass")]
    assert doc["runs"][0]["results"] == []  # type: ignore[index]


@pytest.mark.slow
def test_liveness_cases_fail_with_their_lasso(in_root: Path, tmp_path: Path) -> None:
    code, _, root, _ = _check(tmp_path, FISCHER_LIVE)
    assert code == 1
    assert _cases(root) == [("invariant mutex", "pass"), ("deadlock freedom", "pass"),
                            ("liveness enters", "failure"),
                            ("liveness someone_enters", "failure")]


def test_one_liveness_property_and_its_lasso(in_root: Path, tmp_path: Path) -> None:
    code, _, root, doc = _check(tmp_path, FISCHER_LIVE, "--property", "someone_enters")
    assert code == 1
    assert _cases(root) == [("invariant mutex", "pass"), ("deadlock freedom", "pass"),
                            ("liveness someone_enters", "failure")]
    failure = root.find(".//failure")
    assert failure is not None and failure.text is not None
    assert failure.get("type") == "liveness"
    assert "lasso counterexample, 2 events:\n" in failure.text
    assert failure.text.rstrip().endswith(
        "--- then nothing happens for ever: no deadline is active, time passes without"
        " end ---")
    (result,) = doc["runs"][0]["results"]  # type: ignore[index]
    assert (result["ruleId"], result["locations"][0]["physicalLocation"]["region"]
            ["startLine"]) == ("liveness", 56)


COUNTER = """\
model small_counter
actor a
var n : 0..3 = 0
event a.inc() when n < 3 do n := n + 1
invariant small: n < 2
property done: n == 0 leadsto n == 3
"""

OVERFLOW = """\
model overflow
actor a
var n : 0..1 = 0
event a.inc() do n := n + 1
invariant nonneg: n >= 0
"""


def test_safety_violated_leaves_liveness_unchecked(tmp_path: Path) -> None:
    spec = tmp_path / "counter.kvr"
    spec.write_text(COUNTER)
    code, _, root, _ = _check(tmp_path, str(spec), "--no-deadlock")
    assert code == 1
    assert _cases(root) == [("invariant small", "failure"), ("liveness done", "skipped")]
    assert [s.get("message") for s in root.iter("skipped")] == [
        "not checked: safety does not hold"]
    code, _, root, _ = _check(tmp_path, str(spec), "--no-deadlock", "--no-liveness")
    assert _cases(root) == [("invariant small", "failure")]


def test_a_model_error_is_an_error_case_at_its_place(tmp_path: Path) -> None:
    spec = tmp_path / "overflow.kvr"
    spec.write_text(OVERFLOW)
    code, _, root, doc = _check(tmp_path, str(spec))
    assert code == 2
    assert _cases(root) == [("model error", "error"), ("invariant nonneg", "skipped"),
                            ("deadlock freedom", "skipped")]
    error = root.find(".//error")
    assert error is not None
    assert error.get("message") == (f"model error: a.inc(): value 2 outside 0..1 (the range"
                                    f" of `n`) at {spec}:4:23")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "0", "1")
    first = doc["runs"][0]["results"][0]  # type: ignore[index]
    assert (first["ruleId"], first["kind"], first["level"]) == ("model-error", "fail", "error")
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": spec.as_uri()},
        "region": {"startLine": 4, "startColumn": 23, "endLine": 4, "endColumn": 24}}


def test_a_limit_leaves_every_property_undecided(in_root: Path, tmp_path: Path) -> None:
    code, _, root, doc = _check(tmp_path, IMMEDIATE, "--max-states", "3")
    assert code == 3
    assert _cases(root) == [("assert in decode.land", "skipped"),
                            ("deadlock freedom", "skipped")]
    assert {s.get("message") for s in root.iter("skipped")} == {
        "inconclusive: state limit (3) reached"}
    assert [r["kind"] for r in doc["runs"][0]["results"]] == ["open", "open"]  # type: ignore[index]


def test_a_broken_spec_reports_its_diagnostics(in_root: Path, tmp_path: Path) -> None:
    junit, sarif = tmp_path / "r.xml", tmp_path / "r.sarif"
    code, _, _ = run_cli("check", BAD, "--junit", str(junit), "--sarif", str(sarif))
    assert code == 2
    root = _junit(junit)
    assert _cases(root) == [("spec loads", "failure")]
    failure = root.find(".//failure")
    assert failure is not None and failure.get("type") == "KVR305"
    (result,) = _sarif(sarif)["runs"][0]["results"]  # type: ignore[index]
    assert result["ruleId"] == "KVR305"
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 10, "startColumn": 50, "endLine": 10, "endColumn": 55}


def test_lint_one_case_per_file_one_result_per_diagnostic(in_root: Path,
                                                          tmp_path: Path) -> None:
    junit, sarif = tmp_path / "l.xml", tmp_path / "l.sarif"
    plain = run_cli("lint", BAD, FISCHER_LIVE)
    code, out, err = run_cli("lint", BAD, FISCHER_LIVE, "--junit", str(junit),
                             "--sarif", str(sarif))
    assert (code, out) == plain[:2] == (2, f"{FISCHER_LIVE}: ok\n")
    assert err == plain[2] + f"wrote {junit}\nwrote {sarif}\n"
    root = _junit(junit)
    assert _cases(root) == [(BAD, "failure"), (FISCHER_LIVE, "pass")]
    failure = root.find(".//failure")
    assert failure is not None and failure.text is not None
    assert failure.text + "\n" == plain[2]
    doc = _sarif(sarif)
    (run,) = doc["runs"]  # type: ignore[attr-defined]
    assert run["tool"]["driver"]["rules"] == [{"id": "KVR305"}]
    assert run["automationDetails"] == {"id": "kvrace/lint/"}
    (result,) = run["results"]
    assert result["message"]["text"] == (
        "a receiver of a broadcast cannot test clocks in its guard\n= help: every ready"
        " receiver takes part whatever the time; test the clock in the sender, or use a"
        " handshake `chan`")


def test_lint_clean_files_give_an_empty_sarif(in_root: Path, tmp_path: Path) -> None:
    sarif = tmp_path / "l.sarif"
    code, _, _ = run_cli("lint", FISCHER_LIVE, IMMEDIATE, "--sarif", str(sarif))
    assert code == 0
    doc = _sarif(sarif)
    assert doc["runs"][0]["results"] == []  # type: ignore[index]


def test_reports_are_deterministic_and_change_nothing_else(in_root: Path,
                                                           tmp_path: Path) -> None:
    plain = run_cli("check", "-q", TRAIN_GATE, "-p", "W=20")
    texts = []
    for n in (1, 2):
        junit, sarif = tmp_path / f"{n}.xml", tmp_path / f"{n}.sarif"
        code, out, _ = run_cli("check", "-q", TRAIN_GATE, "-p", "W=20", "--junit",
                               str(junit), "--sarif", str(sarif))
        assert (code, _without_timing(out)) == (plain[0], _without_timing(plain[1]))
        texts.append((junit.read_bytes(), sarif.read_bytes()))
    assert texts[0] == texts[1]
    code, out, _ = run_cli("check", "-q", "--json", IMMEDIATE, "--junit",
                           str(tmp_path / "j.xml"))
    assert code == 1 and json.loads(out)["verdict"] == "violated"


def _without_timing(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("explored "))


def test_one_file_for_both_reports_is_refused(in_root: Path, tmp_path: Path) -> None:
    same = str(tmp_path / "r.out")
    code, _, err = run_cli("check", IMMEDIATE, "--junit", same, "--sarif", same)
    assert (code, err) == (2, f"--junit and --sarif name the same file ({same})\n")
    assert not Path(same).exists()


def test_an_unwritable_report_is_a_warning_the_verdict_stands(in_root: Path,
                                                               tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = run_cli("check", "-q", IMMEDIATE, "--junit", str(blocker / "r.xml"))
    assert code == 1 and "VIOLATED" in out
    assert err.startswith(f"kvrace: warning: cannot write {blocker / 'r.xml'}")
    assert err.rstrip().endswith("the verdict above stands")

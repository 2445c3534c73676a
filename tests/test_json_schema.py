"""Every command's ``--json`` output against ``docs/schema/kvrace-output-1.schema.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run_cli
from jsonschema import Draft202012Validator

from checker import jsonout

SCHEMA_PATH = ROOT / "docs" / "schema" / "kvrace-output-1.schema.json"
IMMEDIATE = "spec/sglang/immediate_release.kvr"
DEFERRED = "spec/sglang/deferred_release.kvr"
CHECKSUM = "spec/sglang/kv_checksum.kvr"
BROKEN = "tests/diagnostics/clock_as_value.kvr"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def valid(validator: Draft202012Validator, code: int, out: str) -> dict[str, Any]:
    """The one JSON document on stdout, checked against the schema and the exit code."""
    doc = json.loads(out)
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in validator.iter_errors(doc)]
    assert not problems, problems
    assert doc["schema"] == jsonout.SCHEMA == "kvrace-output/1"
    assert doc["exit_code"] == code
    return doc


def test_schema_version_matches_its_id(validator: Draft202012Validator) -> None:
    assert validator.schema["$id"].endswith(jsonout.SCHEMA)
    assert validator.schema["properties"]["verdict"]["enum"] == list(jsonout.VERDICTS)


CASES = [
    (["check", IMMEDIATE, "-q"], 1, "violated"),
    (["check", DEFERRED, "-q"], 0, "holds"),
    (["check", DEFERRED, "-q", "--max-states", "5"], 3, "inconclusive"),
    (["check", DEFERRED, "-q", "-p", "T_hold=7", "--explain"], 1, "violated"),
    (["check", CHECKSUM, "-q"], 1, "violated"),
    (["check", "tests/vacuity/vacuous.kvr", "--strict"], 4, "holds"),
    (["check", "tests/queries/handoff.kvr", "-q"], 5, "unreachable"),
    (["check", "tests/queries/handoff.kvr", "-q", "--query", "both_flying"], 0, "holds"),
    (["check", "tests/queries/handoff.kvr", "-q", "--max-states", "4"], 3, "inconclusive"),
    (["check", "tests/queries/handoff.kvr", "--query", "nope"], 2, "error"),
    (["show", "tests/queries/handoff.kvr"], 0, "holds"),
    (["check", "no/such.kvr"], 2, "error"),
    (["check", BROKEN], 2, "error"),
    (["check", IMMEDIATE, "-p", "T_nope=1"], 2, "error"),
    (["check", IMMEDIATE, "--max-states", "-1"], 2, "error"),
    (["check"], 2, "error"),
    (["frobnicate"], 2, "error"),
    (["prove", DEFERRED, "--assume", "T_hold > T_prop + T_flight"], 1, "violated"),
    pytest.param(["prove", DEFERRED, "--assume", "T_hold > T_prop + T_chunk + T_flight"], 0,
                 "holds", marks=pytest.mark.slow),
    (["prove", DEFERRED, "--assume", "T_hold >"], 2, "error"),
    (["prove", DEFERRED, "--assume", "T_hold > 1", "--max-states", "3"], 3, "inconclusive"),
    (["synth", DEFERRED], 0, "holds"),
    (["synth", DEFERRED, "--max-states", "3"], 3, "inconclusive"),
    (["synth", DEFERRED, "--free", "T_nope"], 2, "error"),
    # No parameter value is safe: not holds, whatever a CI script reads.
    (["synth", IMMEDIATE], 1, "violated"),
    (["synth", "tests/queries/handoff.kvr", "--query", "both_flying"], 0, "holds"),
    (["synth", DEFERRED, "--free", "T_flight,T_hold", "--project", "T_hold", "--no-merge"], 0,
     "holds"),
    (["synth", DEFERRED, "--property", "nope"], 2, "error"),
    (["prove", DEFERRED, "--assume", "T_hold > 50"], 2, "error"),
    (["lint", IMMEDIATE, DEFERRED], 0, "holds"),
    (["show", "spec/classic/fischer.kvr"], 0, "holds"),
    (["show", BROKEN], 2, "error"),
    (["lint", IMMEDIATE, BROKEN], 2, "error"),
    (["graph", "spec/sglang/immediate_release.kvr", "-o", "{tmp}/g.dot"], 1, "violated"),
    (["graph", DEFERRED, "-o", "{tmp}/g.graphml"], 0, "holds"),
    (["graph", IMMEDIATE, "-o", "{tmp}/g.dot", "--max-nodes", "3"], 2, "error"),
    (["draw", "no/such.json", "-o", "{tmp}/d.dot"], 2, "error"),
    # A simulation never says holds: no violation sampled is an estimate (exit 0).
    (["simulate", IMMEDIATE, "--runs", "200", "--seed", "1", "-q"], 1, "violated"),
    (["simulate", DEFERRED, "--runs", "50", "--seed", "1", "-q"], 0, "inconclusive"),
    (["simulate", DEFERRED, "--runs", "100000000000", "--timeout", "0.5", "-q"], 3,
     "inconclusive"),
    (["simulate", IMMEDIATE, "--delay", "T_nope=exp(1)"], 2, "error"),
    (["export", IMMEDIATE, "--tchecker", "{tmp}/m.tck", "--uppaal", "{tmp}/m.xml"], 0,
     "holds"),
    (["export", IMMEDIATE], 2, "error"),
    (["validate", DEFERRED, "tests/data/logs/deferred_release_ok.jsonl"], 0, "holds"),
    (["validate", DEFERRED, "tests/data/logs/deferred_early_release.jsonl"], 6, "deviates"),
    (["validate", IMMEDIATE, "tests/data/logs/immediate_race.jsonl"], 1, "violated"),
    (["validate", DEFERRED, "tests/data/logs/malformed.jsonl"], 2, "error"),
    (["validate", "spec/vllm/lease_expired_read.kvr", "tests/data/logs/aws_do_eks_84_prefill.log",
      "--map", "spec/mappings/vllm_nixl.toml", "--clock-error", "1", "--start",
      "first-120:first"], 0, "holds"),
    (["validate", DEFERRED, "tests/data/logs/deferred_release_ok.jsonl", "--free", "T_hold"], 0,
     "holds"),
    (["validate", DEFERRED, "tests/data/logs/never_allocated.jsonl", "--free", "T_hold"], 6,
     "deviates"),
    (["schedules", IMMEDIATE], 1, "violated"),
    (["schedules", DEFERRED], 0, "holds"),
    (["schedules", DEFERRED, "--free", "T_hold", "--kind", "boundary"], 0, "holds"),
    (["schedules", "spec/sglang/strict_no_release_on_timeout.kvr", "--kind", "violation"], 1,
     "violated"),
    (["schedules", IMMEDIATE, "--kind", "nothing"], 2, "error"),
    (["validate", IMMEDIATE, "tests/data/logs/sglang_35049_off.jsonl", "--observable",
      "prefill.post,decode.release,decode.land,decode.allocate(B, s0)", "--clock-error",
      "0.01", "--free", "T_flight"], 1, "violated"),
    (["validate", "spec/sglang/strict_no_release_on_timeout.kvr",
      "tests/data/logs/bounded_release_lost.jsonl"], 1, "violated"),
]


@pytest.mark.parametrize(("argv", "code", "verdict"), CASES,
                         ids=[" ".join(v[0][:3]) + f"->{v[2]}"
                              for v in (getattr(c, "values", c) for c in CASES)])
def test_every_output_follows_the_schema(validator: Draft202012Validator, in_root: Path,
                                         tmp_path: Path, argv: list[str], code: int,
                                         verdict: str) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    got, out, _ = run_cli(*argv, "--json")
    assert got == code
    doc = valid(validator, code, out)
    assert doc["verdict"] == verdict
    assert doc["command"] == (argv[0] if argv[0] != "frobnicate" else "kvrace")
    assert (doc["errors"] != []) == (verdict == "error")


def test_check_names_the_property_in_full(validator: Draft202012Validator,
                                          in_root: Path) -> None:
    code, out, _ = run_cli("check", IMMEDIATE, "-q", "--json")
    doc = valid(validator, code, out)
    assert (doc["property"], doc["property_kind"]) == ("assert in decode.land(A, 0)", "assert")
    assert doc["message"] == "write of A chunk 0 lands in slot s0 owned by B"
    code, out, _ = run_cli("check", CHECKSUM, "-q", "--json")
    doc = valid(validator, code, out)
    assert (doc["property"], doc["property_kind"]) == (
        "invariant no_undetected_corruption[B]", "invariant")
    code, out, _ = run_cli("check", DEFERRED, "-q", "--json")
    doc = valid(validator, code, out)
    assert (doc["property"], doc["property_kind"], doc["trace"]) == (None, None, None)


def test_errors_are_positioned_objects(validator: Draft202012Validator, in_root: Path) -> None:
    code, out, err = run_cli("check", BROKEN, "--json")
    doc = valid(validator, code, out)
    assert doc["errors"] == [{"code": "KVR207", "file": BROKEN, "line": 7, "col": 14,
                              "end_line": 7, "end_col": 20,
                              "message": "a clock constraint cannot be used as a value here",
                              "notes": ["help: combine clock constraints only with `and`,"
                                        " `or`, `not` and `=>`"]}]
    assert "error[KVR207]" in err  # the human-readable diagnostic is still on stderr
    code, out, _ = run_cli("lint", IMMEDIATE, BROKEN, "--json")
    doc = valid(validator, code, out)
    assert [(f["path"], f["ok"], f["model"]) for f in doc["files"]] == [
        (IMMEDIATE, True, "immediate_release"), (BROKEN, False, None)]
    assert doc["files"][1]["errors"] == doc["errors"]
    code, out, _ = run_cli("check", IMMEDIATE, "--timeout", "0", "--json")
    doc = valid(validator, code, out)
    assert doc["errors"][0]["code"] == "usage" and "--timeout" in doc["errors"][0]["message"]


def test_show_summarises_the_spec(validator: Draft202012Validator, in_root: Path) -> None:
    code, out, _ = run_cli("show", IMMEDIATE, "--json")
    doc = valid(validator, code, out)
    assert doc["types"][0] == {"name": "Req", "kind": "enum", "symmetric": True,
                               "values": ["A", "B"]}
    assert doc["types"][2] == {"name": "Chunk", "kind": "range", "symmetric": False,
                               "lo": 0, "hi": 1}
    assert doc["params"][2] == {"name": "T_flight", "range": "(0, 10]", "default": "3"}
    assert doc["actors"] == ["router", "prefill", "decode"]
    assert [(e["name"], e["receives"], e["instances"]) for e in doc["events"]] == [
        ("decode.allocate", None, 2), ("prefill.post", None, 4),
        ("decode.land", "prefill.post", 4), ("router.abort", None, 2),
        ("prefill.learn_abort", "router.abort", 2), ("decode.release", None, 2),
        ("decode.finish", None, 2)]


def test_a_model_error_is_positioned(validator: Draft202012Validator, tmp_path: Path) -> None:
    spec = tmp_path / "fault.kvr"
    spec.write_text("model fault\ntype R = {A, B}\nactor a\nvar o : R? = none\n"
                    "var f : R -> bool = false\nevent a.go()\n  when true\n  do f[o] := true\n")
    code, out, _ = run_cli("check", str(spec), "-q", "--json")
    doc = valid(validator, code, out)
    assert (code, doc["verdict"], doc["property"]) == (2, "error", None)
    assert doc["errors"] == [{
        "code": "model-error", "message": f"a.go(): `none` dereferenced at {spec}:8:8",
        "file": str(spec), "line": 8, "col": 8}]
    assert [s["#meta"]["label"] for s in doc["trace"]["states"]] == ["initial"]  # before a.go()


def test_draw_accepts_check_json_output(validator: Draft202012Validator, in_root: Path,
                                        tmp_path: Path) -> None:
    _, out, _ = run_cli("check", IMMEDIATE, "-q", "--json")
    result = tmp_path / "result.json"
    result.write_text(out, encoding="utf-8")
    code, out, _ = run_cli("draw", str(result), "-o", str(tmp_path / "x.dot"), "--json")
    doc = valid(validator, code, out)
    assert (code, doc["verdict"], doc["wrote"]) == (0, "holds", True)
    assert "decode.land" in (tmp_path / "x.dot").read_text(encoding="utf-8")
    _, out, _ = run_cli("check", DEFERRED, "-q", "--json")
    result.write_text(out, encoding="utf-8")
    code, _, err = run_cli("draw", str(result), "-o", str(tmp_path / "y.dot"))
    assert code == 2 and "without a counterexample (verdict: 'holds')" in err

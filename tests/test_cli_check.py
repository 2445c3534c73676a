"""The ``kvrace check`` / ``draw`` / ``graph`` command line: exit codes, outputs, goldens."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, run_cli, stable

from checker.model import trace as tr

SPECS = sorted((ROOT / "spec").rglob("*.kvr"))
GOLDEN = ROOT / "tests" / "golden" / "cli"
IMMEDIATE = str(ROOT / "spec/sglang/immediate_release.kvr")
DEFERRED = str(ROOT / "spec/sglang/deferred_release.kvr")


@pytest.mark.parametrize("spec", [
    pytest.param(p, marks=pytest.mark.slow) if p.stem == "all_ranks_ack" else p
    for p in SPECS], ids=[p.stem for p in SPECS])
def test_check_golden(spec: Path) -> None:
    rel = spec.relative_to(ROOT).as_posix()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code, out, err = run_cli("check", rel, "--quiet")
    finally:
        os.chdir(cwd)
    golden = GOLDEN / f"{spec.stem}.check.txt"
    text = f"exit {code}\n{stable(out)}"
    if os.environ.get("KVRACE_UPDATE_GOLDEN"):
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    assert err == ""


def test_exit_codes() -> None:
    assert run_cli("check", IMMEDIATE, "-q")[0] == 1
    assert run_cli("check", DEFERRED, "-q")[0] == 0
    assert run_cli("check", DEFERRED, "-q", "-p", "T_hold=7")[0] == 1
    assert run_cli("check", DEFERRED, "-q", "-p", "T_hold=7.5")[0] == 0
    assert run_cli("check", DEFERRED, "-q", "--max-states", "10")[0] == 3


def test_inconclusive_says_what_was_explored() -> None:
    code, out, _ = run_cli("check", DEFERRED, "-q", "--max-states", "10")
    assert code == 3
    assert "INCONCLUSIVE: state limit (10) reached" in out
    m = re.search(r"explored (\d+) states, (\d+) zones", out)
    assert m is not None and 0 < int(m[2]) <= 10  # 10 stored, some retired since


def test_unknown_parameter_is_bad_input() -> None:
    code, out, err = run_cli("check", DEFERRED, "-p", "T_hld=3")
    assert code == 2 and out == ""
    assert "unknown parameter `T_hld`" in err and "Traceback" not in err


def test_parameter_outside_its_range() -> None:
    code, _, err = run_cli("check", DEFERRED, "-p", "T_flight=0")
    assert code == 2
    assert "T_flight=0 is outside its declared range (0, 10]" in err


@pytest.mark.parametrize("bad", ["T_hold", "T_hold=abc", "T_hold=1/0"])
def test_malformed_parameter(bad: str) -> None:
    code, _, err = run_cli("check", DEFERRED, "-p", bad)
    assert code == 2 and err.strip()


def test_missing_file() -> None:
    code, _, err = run_cli("check", "no/such/spec.kvr")
    assert code == 2
    assert "no/such/spec.kvr: error[KVR000]: no such file" in err


def test_usage_errors_exit_2() -> None:
    assert run_cli()[0] == 2
    assert run_cli("frobnicate")[0] == 2
    assert run_cli("check")[0] == 2
    assert run_cli("check", DEFERRED, "--max-states", "-1")[0] == 2


def test_json_output() -> None:
    code, out, _ = run_cli("check", IMMEDIATE, "--json", "-q")
    doc = json.loads(out)
    assert code == 1
    assert doc["verdict"] == "violated" and doc["property"] == "assert in decode.land(A, 0)"
    assert (doc["schema"], doc["command"], doc["exit_code"]) == ("kvrace-output/1", "check", 1)
    assert doc["params"] == {"T_prop": "2", "T_chunk": "2", "T_flight": "3"}
    states = doc["trace"]["states"]
    assert [s["#meta"]["label"] for s in states][-1] == "decode.land(A, 0)"
    assert states[-1]["#meta"]["receives"] == 2
    assert doc["stats"]["zones"] == 41


def test_trace_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "race.json"
    code, _, _ = run_cli("check", IMMEDIATE, "-q", "--trace", str(path))
    assert code == 1
    trace = tr.from_itf(json.loads(path.read_text()))
    assert trace.steps[-1].failure == "write of A chunk 0 lands in slot s0 owned by B"
    assert [s.time for s in trace.steps] == [0, 1, 2, 3, 3, 4, 5]
    assert json.loads(path.read_text()) == tr.to_itf(trace)


def test_explain_gives_the_bound() -> None:
    code, out, _ = run_cli("check", DEFERRED, "-q", "-p", "T_hold=7", "--explain")
    assert code == 1
    assert "possible exactly when: T_hold <= T_prop + T_chunk + T_flight" in out


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs the Graphviz dot program")
def test_diagram_svg(tmp_path: Path) -> None:
    svg = tmp_path / "race.svg"
    code, _, err = run_cli("check", IMMEDIATE, "-q", "--diagram", str(svg))
    assert code == 1 and err == f"wrote {svg} (and its source {tmp_path / 'race.dot'})\n"
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "land(A, 0)" in text
    assert (tmp_path / "race.dot").exists()


def test_diagram_without_dot_keeps_exit_code(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    svg = tmp_path / "race.svg"
    code, _, err = run_cli("check", IMMEDIATE, "-q", "--diagram", str(svg))
    assert code == 1
    assert (tmp_path / "race.dot").exists() and not svg.exists()
    assert "dot -Tsvg" in err and "graphviz" in err.lower()


def test_diagram_unknown_extension(tmp_path: Path) -> None:
    code, _, err = run_cli("check", IMMEDIATE, "-q", "--diagram", str(tmp_path / "x.gif"))
    assert code == 2 and "gif" in err


def test_trace_file_is_announced_only_when_written(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    code, _, err = run_cli("check", IMMEDIATE, "-q", "--trace", str(trace))
    assert code == 1 and err == f"wrote {trace}\n" and trace.exists()
    held = tmp_path / "held.json"
    code, _, err = run_cli("check", DEFERRED, "-q", "--trace", str(held), "--diagram",
                       str(tmp_path / "held.svg"))
    assert code == 0 and not held.exists() and not (tmp_path / "held.svg").exists()
    assert err == ("no trace file: there is no counterexample\n"
                   "no diagram: there is no counterexample to draw\n")


def test_draw_from_trace_file(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    run_cli("check", IMMEDIATE, "-q", "--trace", str(trace))
    dot = tmp_path / "t.dot"
    code, out, _ = run_cli("draw", str(trace), "-o", str(dot))
    assert code == 0 and "wrote" in out
    assert dot.read_text() == (ROOT / "counterexamples/immediate_release.dot").read_text()


def test_draw_rejects_garbage(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert run_cli("draw", str(bad), "-o", str(tmp_path / "x.dot"))[0] == 2
    bad.write_text('{"states": 3}')
    code, _, err = run_cli("draw", str(bad), "-o", str(tmp_path / "x.dot"))
    assert code == 2 and "not a kvrace trace" in err
    assert run_cli("draw", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.dot"))[0] == 2


def test_graph_refuses_hairballs(tmp_path: Path) -> None:
    code, _, err = run_cli("graph", DEFERRED, "-o", str(tmp_path / "g.dot"), "--max-nodes", "50")
    assert code == 2 and "more than 50" in err


def test_graph_highlights_the_violating_path(tmp_path: Path) -> None:
    out_dot = tmp_path / "g.dot"
    code, out, _ = run_cli("graph", IMMEDIATE, "-o", str(out_dot))
    assert code == 1 and "41 states" in out  # check's verdict: violated
    text = out_dot.read_text()
    # The six events of the race (and the states they reach) are drawn in red, the
    # last one the failing land(A, 0) into a node of its own.
    red = [line for line in text.splitlines() if "->" in line and 'color="#c62828"' in line]
    assert len(red) == 6 and 'label=" decode.land(A, 0)"' in red[-1]

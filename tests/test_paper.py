"""The paper's inputs are what kvrace computes, and paper/paper.pdf is built from them.

The slow measurements (``paper/data/``) are rerun in full by
``python -m tools.artifacts``; here every cheap part of them is recomputed
and compared, and the expensive parts are spot-checked (the two smallest
context lengths, the fastest synthesis runs, the smallest benchmark cases).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tools import artifacts
from tools.artifacts import measurements as me
from tools.artifacts import paper, study

pytestmark = pytest.mark.slow

ROOT = artifacts.ROOT
REGENERATE = "run `python -m tools.artifacts` to regenerate"
FAST_SYNTH_SECONDS = 3.0  # recorded synthesis time under which a row is recomputed
SMALL_BENCH_ZONES = 1_000  # recorded zone count under which a benchmark case is rerun


def data(name: str) -> Any:
    return json.loads((ROOT / "paper" / "data" / name).read_text(encoding="utf-8"))


def test_generated_paper_inputs_are_fresh() -> None:
    problems = artifacts.stale(ROOT, artifacts.select(["paper"]))
    assert problems == [], f"{REGENERATE}:\n" + "\n".join(problems)


def test_spec_measurements_reproduce() -> None:
    committed = data("specs.json")
    assert me.masked(committed["specs"]) == me.masked(me.spec_rows(ROOT)), REGENERATE
    assert committed["ablation"] == me.ablation(ROOT), REGENERATE
    assert committed["boundary"] == me.boundary(ROOT), REGENERATE


def test_every_spec_is_measured() -> None:
    stems = sorted(p.stem for p in (ROOT / "spec" / "sglang").glob("*.kvr"))
    assert [r["stem"] for r in data("specs.json")["specs"]] == stems
    assert [r["stem"] for r in data("synth.json")["synth"]] == stems


def test_fast_synthesis_measurements_reproduce() -> None:
    from checker.api import load_spec
    from checker.model.compiled import SpecModel
    from checker.smt import synth as sy
    from checker.smt.regions import readable

    rows = [r for r in data("synth.json")["synth"] if r["seconds"] <= FAST_SYNTH_SECONDS]
    assert len(rows) >= 3
    for row in rows:
        spec = load_spec(ROOT / "spec" / "sglang" / f"{row['stem']}.kvr")
        result = sy.explore_parametric(SpecModel(spec), row["free"])
        assert result.complete == row["complete"]
        assert readable(result).text(row["free"]) == row["region"], REGENERATE
        assert result.stats.symbolic_states == row["symbolic_states"], REGENERATE
        plain = sy.explore_parametric(SpecModel(spec), row["free"], merge=False)
        assert plain.stats.symbolic_states == row["no_merge"]["symbolic_states"], REGENERATE
        assert sy.same_safe_values(result, plain)


def test_the_papers_claims_about_proofs_match_the_data() -> None:
    exact, weak = data("specs.json")["prove"]
    assert exact["assumption"] == "T_hold > T_prop + T_chunk + T_flight"
    assert exact["status"] == "proved" and exact["tight"] and not exact["vacuous"]
    assert exact["witness_verdict"] == "violated"
    assert weak["status"] == "refuted" and weak["witness_verdict"] == "violated"
    deferred = next(r for r in data("synth.json")["synth"] if r["stem"] == "deferred_release")
    assert deferred["region"] == exact["assumption"]


def test_context_length_study_reproduces_for_small_contexts() -> None:
    rows = study.study(ROOT, ["8k", "32k"], ("chunked",))
    assert [(r.context, r.chunk_tokens, r.calls) for r in rows] == [("8k", 8192, 1),
                                                                     ("32k", 8192, 1)]
    for r in rows:
        for w in (r.typical, r.errored):
            assert w.bound == w.sum and w.strict
            assert (w.below, w.at, w.above) == ("violated", "violated", "holds")
        assert r.typical.T_flight == Fraction("0.048") and r.typical.default_hold_safe
        assert r.errored.T_flight == Fraction("30.576") and not r.errored.default_hold_safe
    committed = study.read_csv(ROOT / "paper" / "data" / "context_length.csv")
    fresh = list(csv.DictReader(study.csv_text(rows).splitlines()))
    assert fresh == committed[:2], REGENERATE


def test_context_length_study_inputs_are_derived() -> None:
    # DeepSeek-V3 MLA: 61 layers x (512 + 64) values x 2 bytes.
    assert study.KV_BYTES_PER_TOKEN == 70_272
    chunk = study.CHUNK_TOKENS * study.KV_BYTES_PER_TOKEN
    assert round(chunk / study.GB, 2) == 0.58
    # 12-50 ms on the wire at 50-12 GB/s.
    assert study.ceil_ms(Fraction(chunk, study.LINK_FAST)) == Fraction("0.012")
    assert study.ceil_ms(Fraction(chunk, study.LINK_SLOW)) == Fraction("0.048")
    # Mooncake's budget: about 1.07 s per GiB on top of 30 s.
    assert round(float(study.MOONCAKE_PER_BYTE * 2**30), 2) == 1.07
    assert study.call_time(chunk, "errored") == Fraction("30.576")
    # T_chunk is the rest of the current chunk's calls, whatever the context length.
    assert study.layout(1_048_576, "chunked") == (8192, 1, chunk)
    assert study.layout(1_048_576, "split") == (8192, 8, 1024 * 70_272)
    assert study.layout(1_048_576, "unchunked") == (1_048_576, 1, 1_048_576 * 70_272)
    assert study.layout(1_048_576, "split_p64") == (8192, 1, chunk)
    # An errored chunk costs one deadline: the send stops at its first failed batch.
    assert study.parameters(8, 1024 * 70_272, "errored") == {
        "T_prop": 1, "T_chunk": 7 * Fraction("0.006"), "T_flight": Fraction("30.072")}
    assert study.typical_cover_tokens() == 4_952_185


def test_context_length_csv_is_consistent() -> None:
    rows = study.read_csv(ROOT / "paper" / "data" / "context_length.csv")
    assert [(r["layout"], r["context"]) for r in rows] == [
        (layout, context) for layout in study.LAYOUTS for context in study.SIZES]
    for r in rows:
        for case in study.CASES:
            assert r[f"{case}_bound"] == r[f"{case}_sum"] and r[f"{case}_strict"] == "True", r
            assert (r[f"{case}_below"], r[f"{case}_at"], r[f"{case}_above"]) == \
                ("violated", "violated", "holds"), r
        # The paper's claim: the default 30 s hold covers every typical window
        # and no errored one.
        assert r["typical_default_hold_safe"] == "True", r
        assert r["errored_default_hold_safe"] == "False", r
    # With chunked prefill the window does not grow with the context.
    assert {r["errored_bound"] for r in rows if r["layout"] == "chunked"} == {"31.576"}
    # An errored chunk costs one deadline: splitting adds only the other batches'
    # typical time, and at page size 64 a chunk is one call again.
    assert {r["errored_bound"] for r in rows if r["layout"] == "split"} == {"31.114"}
    assert {r["errored_bound"] for r in rows if r["layout"] == "split_p64"} == {"31.576"}
    assert [r["errored_bound"] for r in rows if r["layout"] == "unchunked"] == [
        "31.576", "33.303", "40.211", "67.843", "104.686"]
    assert [r["typical_bound"] for r in rows if r["layout"] == "unchunked"] == [
        "1.048", "1.192", "1.768", "4.071", "7.141"]


def test_small_benchmark_cases_reproduce() -> None:
    runs = [r for r in data("bench.json")["runs"] if r["zones"] <= SMALL_BENCH_ZONES]
    assert len(runs) >= 2
    fresh = me.bench_rows(ROOT, tuple(r["case"] for r in runs))
    assert me.masked(fresh) == me.masked(runs), REGENERATE


def test_masking_hides_only_run_times(tmp_path: Path) -> None:
    doc = {"runs": [{"zones": 5, "seconds": 1.0, "peak_mib": 30.0}]}
    (tmp_path / "x.json").write_text(json.dumps(doc))
    same = {"runs": [{"zones": 5, "seconds": 9.0, "peak_mib": 99.0}]}
    other = {"runs": [{"zones": 6, "seconds": 1.0, "peak_mib": 30.0}]}
    assert me.equal(tmp_path, "x.json", json.dumps(same).encode())
    assert not me.equal(tmp_path, "x.json", json.dumps(other).encode())


# ----------------------------------------------------------------------------- LaTeX


def test_math_rendering_of_regions() -> None:
    assert paper.math("T_hold > T_prop + T_flight") == \
        r"$T_{\mathit{hold}} > T_{\mathit{prop}} + T_{\mathit{flight}}$"
    assert paper.math("T_a <= 2 and T_b >= 1") == \
        r"$T_{\mathit{a}} \leq 2 \wedge T_{\mathit{b}} \geq 1$"
    assert "false" in paper.math("false") and "true" in paper.math("true")
    assert paper.tex("a_b & 50%") == r"a\_b \& 50\%"


def test_every_kv_key_the_paper_uses_is_generated() -> None:
    import re

    numbers = (ROOT / "paper" / "generated" / "numbers.tex").read_text(encoding="utf-8")
    defined = set(re.findall(r"\\csname kv@(.+?)\\endcsname", numbers))
    used: set[str] = set()
    for tex in [ROOT / "paper" / "paper.tex", *sorted((ROOT / "paper" / "sections").glob("*.tex"))]:
        text = re.sub(r"(?<!\\)%.*", "", tex.read_text(encoding="utf-8"))  # comments
        used |= set(re.findall(r"\\kv\{([^}#]*)\}", text))
    assert used - defined == set()


def test_every_generated_input_is_used() -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in
                   [ROOT / "paper" / "paper.tex", *(ROOT / "paper" / "sections").glob("*.tex")])
    for path in sorted((ROOT / "paper" / "generated").glob("*.tex")):
        if path.name == "numbers.tex":
            continue
        assert f"generated/{path.stem}" in text, f"{path.name} is generated but not included"


# ----------------------------------------------------------------------------- the PDF


def test_paper_pdf_is_built_from_the_current_sources() -> None:
    pdf = ROOT / "paper" / "paper.pdf"
    assert pdf.exists(), "paper/paper.pdf is missing; run `bash paper/build.sh`"
    stamped = paper.pdf_digest(pdf.read_bytes())
    assert stamped is not None, "paper/paper.pdf carries no sources digest"
    assert stamped == paper.sources_digest(ROOT), (
        "paper/paper.pdf is stale: its sources changed since it was built; "
        "run `bash paper/build.sh`")


def test_digest_changes_with_any_source(tmp_path: Path) -> None:
    for rel in ("paper/paper.tex", "paper/sections/intro.tex", "paper/generated/numbers.tex"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    before = paper.sources_digest(tmp_path)
    (tmp_path / "paper/sections/intro.tex").write_text("y")
    assert paper.sources_digest(tmp_path) != before


@pytest.mark.skipif(shutil.which("latexmk") is None or shutil.which("dot") is None,
                    reason="needs TeX Live (latexmk) and Graphviz; .ci/run installs them")
def test_paper_builds_from_a_clean_copy(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for rel in ("paper", "counterexamples", "checker", "tools", "pyproject.toml"):
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, copy / rel,
                            ignore=shutil.ignore_patterns("_build", "__pycache__", "paper.pdf"))
        else:
            shutil.copy2(src, copy / rel)
    env = {**os.environ, "PYTHONPATH": str(copy), "KVRACE_PYTHON": sys.executable}
    done = subprocess.run(["bash", str(copy / "paper" / "build.sh")], cwd=copy, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    built = (copy / "paper" / "paper.pdf").read_bytes()
    assert built.startswith(b"%PDF")
    assert paper.pdf_digest(built) == paper.sources_digest(copy)
    log = (copy / "paper" / "_build" / "paper.log").read_text(encoding="utf-8", errors="replace")
    assert "There were undefined references" not in log
    assert "Citation" not in log or "undefined" not in log

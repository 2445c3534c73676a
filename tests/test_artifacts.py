"""The committed counterexamples are up to date (the other parts: test_paper, test_tutorial)."""

from __future__ import annotations

from checker import artifacts
from checker.artifacts import counterexamples


def test_artifacts_are_fresh() -> None:
    problems = artifacts.stale(artifacts.ROOT, artifacts.select(["counterexamples"]))
    assert problems == [], (
        "generated artifacts are stale; run `python -m checker.artifacts`:\n" + "\n".join(problems)
    )


def test_every_violated_spec_has_a_counterexample() -> None:
    files = counterexamples.generate(artifacts.ROOT)
    readme = files["spec/README.md"].decode()
    rows = [line for line in readme.splitlines() if line.startswith("| `spec/")]
    assert any("| violated" in line for line in rows)
    for line in rows:
        if "| violated" in line:
            spec = line.split("`")[1]
            stem = spec.rsplit("/", 1)[1].removesuffix(".kvr")
            assert f"counterexamples/{stem}.json" in files
            assert f"counterexamples/{stem}.dot" in files

"""The committed counterexamples are up to date (the other parts: test_paper, test_tutorial)."""

from __future__ import annotations

import pytest

from tools import artifacts
from tools.artifacts import counterexamples

pytestmark = pytest.mark.slow


def test_artifacts_are_fresh() -> None:
    problems = artifacts.stale(artifacts.ROOT, artifacts.select(["counterexamples"]))
    assert problems == [], (
        "generated artifacts are stale; run `python -m tools.artifacts`:\n" + "\n".join(problems)
    )


def test_every_violated_spec_has_a_counterexample() -> None:
    files = counterexamples.generate(artifacts.ROOT)
    readme = files["spec/README.md"].decode()
    # The spec table's rows (the version matrix and the study follow it).
    rows = [line for line in readme.splitlines() if line.startswith("| `spec/")]
    assert len(rows) == len(list((artifacts.ROOT / "spec").glob("*/*.kvr")))
    violated = [row for row in rows if "| violated" in row]
    assert violated
    for line in violated:
        spec = line.split("`")[1]
        stem = spec.rsplit("/", 1)[1].removesuffix(".kvr")
        assert f"counterexamples/{stem}.json" in files
        assert f"counterexamples/{stem}.dot" in files

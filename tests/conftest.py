"""Shared fixtures of the kvrace test suite."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from checker.cli import main

ROOT = Path(__file__).resolve().parent.parent
"""The repository root: spec paths in golden outputs are relative to it."""

FLAGSHIPS = ("spec/sglang/deferred_release.kvr", "spec/sglang/immediate_release.kvr")
"""The flagship specs, relative to :data:`ROOT`."""


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``kvrace ARGV`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def in_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from the repository root (so relative spec paths resolve)."""
    monkeypatch.chdir(ROOT)
    return ROOT

"""Shared fixtures of the kvrace test suite (shared functions and paths: ``helpers``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT


@pytest.fixture
def in_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from the repository root (so relative spec paths resolve)."""
    monkeypatch.chdir(ROOT)
    return ROOT

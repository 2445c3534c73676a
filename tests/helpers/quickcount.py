"""A pytest plugin for one ``--collect-only`` run: prints how many of the collected
tests the quick subset (``-m "not slow"``) selects, so that one collection gives both
of the README's counts."""

from __future__ import annotations

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    """Print ``quick: N``, the collected tests that carry no ``slow`` mark."""
    quick = sum(1 for item in session.items if item.get_closest_marker("slow") is None)
    print(f"\nquick: {quick}")

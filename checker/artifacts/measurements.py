"""Placeholder."""

from __future__ import annotations

from pathlib import Path


def generate(root: Path) -> dict[str, bytes]:
    """Nothing yet."""
    return {}


def equal(root: Path, rel: str, data: bytes) -> bool:
    """Byte equality."""
    return (root / rel).read_bytes() == data

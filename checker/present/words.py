"""Counted nouns for text a person reads: ``1 state``, ``2 states``, ``1 query``."""

from __future__ import annotations

__all__ = ["count"]


def count(n: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``n`` and ``noun``, the noun in the plural unless ``n`` is 1 (``plural``
    defaults to ``noun + "s"``); ``grouped`` writes ``12,345``."""
    shown = f"{n:,}" if grouped else str(n)
    return f"{shown} {noun if n == 1 else (plural or noun + 's')}"

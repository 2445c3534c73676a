"""The dense-time explicit-state explorer (zones as difference-bound matrices).

This package depends only on :mod:`checker.model.interface`; it never imports
lark, z3 or graphviz.
"""

from checker.explorer.search import (
    CheckResult,
    Limits,
    Options,
    QueryResult,
    Stats,
    TraceStep,
    explore,
)

__all__ = ["CheckResult", "Limits", "Options", "QueryResult", "Stats", "TraceStep", "explore"]

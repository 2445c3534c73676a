"""Engines: the algorithms wired to a model, its semantics and its limits.

* :mod:`checker.engines.search` — the zone explorer of ``check``: the clock-bounds
  pass, ``covreach`` with the first-violation goal, the restart under Extra_M and
  the result with its trace;
* :mod:`checker.engines.distributed` — the same search partitioned over Ray
  workers (:mod:`checker.engines.partition`, :mod:`checker.engines.raysession`).

The parametric engine (``prove``, ``synth``) is :mod:`checker.smt.synth`, since it
needs Z3.  This package never imports lark, z3 or graphviz.
"""

from checker.engines.search import (
    CheckResult,
    Limits,
    Options,
    Prepass,
    QueryResult,
    Stats,
    TraceStep,
    explore,
)

__all__ = ["CheckResult", "Limits", "Options", "Prepass",
           "QueryResult", "Stats", "TraceStep", "explore"]

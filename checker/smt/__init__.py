"""The Z3 timing layer: the only part of kvrace that imports z3.

* :mod:`checker.smt.timing` — timestamps for a counterexample and the
  parameter region in which its sequence of events is feasible;
* :mod:`checker.smt.lin` — linear constraints over clocks and parameters (plain
  Python, shared by the two below);
* :mod:`checker.smt.poly` — convex polyhedra over clocks and parameters
  (Fourier–Motzkin projection, Z3 for satisfiability and implication);
* :mod:`checker.smt.quick` — exact solver-free decisions for the parametric
  difference systems synthesis queries most (a probe valuation without an
  infeasible cycle, or a short cycle infeasible throughout the parameters);
* :mod:`checker.smt.zones` — the polyhedra as a zone domain of the shared
  reachability loop (:mod:`checker.algorithms.covreach`);
* :mod:`checker.smt.synth` — parametric zone exploration (EFsynth):
  ``prove`` and ``synth``.

Every query uses a fixed random seed and a timeout; Z3's ``unknown`` is its
own outcome (:class:`SolverUnknown`), never "safe".

Z3 does not install its own SIGINT handler (its ``ctrl_c`` parameter is off):
a Ctrl-C or SIGTERM reaches Python's handler, and :func:`interrupt_solvers`
(called by the command line from a watcher thread) stops a query in progress,
so the signal is acted on at once instead of being swallowed by Z3.
"""

import z3

from checker.model.timeline import TraceShape
from checker.smt.timing import SolverUnknown, lasso_timestamps, timestamps

z3.set_param("ctrl_c", False)


def interrupt_solvers() -> None:
    """Stop the Z3 query running now, if any (safe to call from any thread).

    The query returns ``unknown``; the caller is expected to end the run (the
    interruption also cancels later queries of the same context).
    """
    z3.main_ctx().interrupt()


__all__ = ["SolverUnknown", "TraceShape", "interrupt_solvers", "lasso_timestamps", "timestamps"]

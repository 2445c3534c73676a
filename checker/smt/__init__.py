"""The Z3 timing layer: the only part of kvrace that imports z3.

* :mod:`checker.smt.timing` — timestamps for a counterexample and the
  parameter region in which its sequence of events is feasible;
* :mod:`checker.smt.poly` — convex polyhedra over clocks and parameters
  (Fourier–Motzkin projection, Z3 for satisfiability and implication);
* :mod:`checker.smt.synth` — parametric zone exploration (EFsynth):
  ``prove`` and ``synth``.

Every query uses a fixed random seed and a timeout; Z3's ``unknown`` is its
own outcome (:class:`SolverUnknown`), never "safe".
"""

from checker.smt.timing import SolverUnknown, TraceShape, timestamps

__all__ = ["SolverUnknown", "TraceShape", "timestamps"]

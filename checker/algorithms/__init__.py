"""Algorithms over a symbolic transition system (:mod:`checker.semantics.ts`).

* :mod:`checker.algorithms.covreach` — reachability with inclusion covering
  (``covreach(ts, store, waiting, goal, budget)``), the one search loop of
  ``check``, ``prove`` and ``synth``;
* :mod:`checker.algorithms.liveness` — Büchi emptiness for ``leadsto``,
  ``always eventually`` and weak fairness (lasso counterexamples).

They see a transition system, a store, a waiting list, a goal and a budget;
never a model's syntax, an engine, lark or z3.
"""

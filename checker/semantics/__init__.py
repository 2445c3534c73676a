"""The symbolic semantics of a timed model: what every algorithm explores.

* :mod:`checker.semantics.ts` — the symbolic transition system (``initial()``,
  ``next(state, zone)``, successors with a status and labels);
* :mod:`checker.semantics.zones` — the DBM zone domain of the zone graph, with
  extrapolation over the live clocks;
* :mod:`checker.semantics.clockbounds` — the clock-bounds analysis (live clocks
  and LU bounds per discrete state) that the extrapolation uses;
* :mod:`checker.semantics.staticbounds` — the same asked per state of a network of
  processes from bounds per process location, with no pre-pass;
* :mod:`checker.semantics.canon` — symmetry: candidate permutations of a state;
* :mod:`checker.semantics.traces` — from a symbolic path to a concrete timed run.

It depends on :mod:`checker.model.interface`, :mod:`checker.domains` and
:mod:`checker.limits`; never on an algorithm, an engine, lark or z3.
"""

"""Zone domains: difference-bound matrices (DBMs) over clocks.

:mod:`checker.domains.dbm` is the pure-Python reference of the DBM operations,
``checker.domains._cdbm`` (from ``_cdbm.c``) their compiled core, and
:mod:`checker.domains.backend` chooses between the two.  This package knows
nothing of models, states or searches: it depends on no other part of kvrace.
The polyhedral domain over clocks and parameters lives in :mod:`checker.smt.poly`,
because it needs Z3.
"""

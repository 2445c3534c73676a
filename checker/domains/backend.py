"""The implementation of the DBM operations: the compiled core or the Python reference.

:mod:`checker.domains.dbm` is the reference implementation, in pure Python, of the
difference-bound-matrix operations.  ``checker.domains._cdbm`` (built from
``_cdbm.c`` when kvrace is installed, if a C compiler is available) implements the
same functions, with the same signatures, on the same ``list[int]`` DBMs, and gives
the same results, but only for bounds below ``2**62`` in magnitude: larger ones
raise OverflowError.  The explorer picks an implementation with :func:`select` and
uses the compiled one only when :func:`fits` says the model's scaled bounds are
small enough that no sum of them comes near that limit.

The environment variable ``KVRACE_DBM=python`` makes the default choice the
Python reference (to compare, or to rule the C core out when chasing a bug).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Protocol

from checker.domains import dbm
from checker.domains.dbm import Dbm, Packed

__all__ = ["C_AVAILABLE", "ENV_VAR", "MAX_C_BOUND", "DbmOps", "fits", "select"]

ENV_VAR = "KVRACE_DBM"
"""The environment variable that, set to ``python``, makes :func:`select` default
to the Python reference."""

MAX_C_BOUND: int = 2**40
"""The largest scaled clock bound (in magnitude) for which the explorer uses the C
core.  A canonical entry is a sum of at most one bound per clock, so with this limit
any zone over fewer than about a million clocks stays far below ``2**62``."""


class DbmOps(Protocol):
    """The DBM operations an implementation provides (see :mod:`checker.domains.dbm`
    for their meaning).  Both :mod:`checker.domains.dbm` and the compiled
    ``checker.domains._cdbm`` module satisfy it."""

    def canonicalize(self, d: Dbm, n: int) -> bool: ...

    def is_empty(self, d: Dbm, n: int) -> bool: ...

    def constrain(self, d: Dbm, n: int, i: int, j: int, b: int) -> bool: ...

    def up(self, d: Dbm, n: int) -> None: ...

    def down(self, d: Dbm, n: int) -> None: ...

    def reset(self, d: Dbm, n: int, i: int) -> None: ...

    def free(self, d: Dbm, n: int, i: int) -> None: ...

    def project(self, d: Dbm, n: int, keep: Sequence[int]) -> Dbm: ...

    def embed(self, d: Dbm, n: int, old_to_new: Sequence[int], m: int) -> Dbm: ...

    def permute(self, d: Dbm, n: int, perm: Sequence[int]) -> Dbm: ...

    def pack(self, d: Dbm, n: int) -> Packed: ...

    def unpack(self, p: Packed, n: int) -> Dbm: ...

    def join(self, h: Packed, z: Dbm, n: int) -> Packed | None: ...

    def includes(self, big: Dbm, small: Dbm, n: int) -> bool: ...

    def includes_packed(self, big: Packed, small: Packed, n: int) -> bool: ...

    def intersect(self, a: Dbm, b: Dbm, n: int) -> Dbm | None: ...

    def subtract(self, a: Dbm, b: Dbm, n: int) -> list[Dbm]: ...

    def extrapolate_lu(
        self, d: Dbm, n: int, lower: Sequence[int], upper: Sequence[int]
    ) -> None: ...

    def extrapolate_m(self, d: Dbm, n: int, m: Sequence[int]) -> None: ...

    def post(
        self,
        z: Dbm,
        n: int,
        guard: Sequence[tuple[int, int, int]],
        keep: Sequence[tuple[int, int]],
        m: int,
        inv: Sequence[tuple[int, int, int]],
    ) -> Dbm | None: ...


def _load_c() -> DbmOps | None:
    try:
        from checker.domains import _cdbm
    except ImportError:
        return None
    missing = [name for name in vars(DbmOps)
               if not name.startswith("_") and not hasattr(_cdbm, name)]
    if missing:
        # Built from an older _cdbm.c: using it would fail in the middle of a run.
        warnings.warn(f"the compiled DBM core {_cdbm.__file__} is out of date (it lacks"
                      f" {', '.join(missing)}): the Python reference is used; rebuild it"
                      " with pip install -e .", RuntimeWarning, stacklevel=2)
        return None
    return _cdbm


_C_CORE: DbmOps | None = _load_c()

C_AVAILABLE: bool = _C_CORE is not None
"""Whether the compiled core ``checker.domains._cdbm`` was built and imports."""

_PYTHON: DbmOps = dbm


def fits(max_abs_bound: int) -> bool:
    """Whether the C core may be used for a model whose scaled clock bounds are at
    most ``max_abs_bound`` in magnitude (i.e. whether it is at most
    :data:`MAX_C_BOUND`)."""
    return abs(max_abs_bound) <= MAX_C_BOUND


def select(name: str | None = None) -> DbmOps:
    """The DBM implementation called ``name``.

    ``"c"`` is the compiled core (ImportError if it was not built), ``"python"`` the
    reference :mod:`checker.domains.dbm`.  ``None`` picks the compiled core when it
    is available, unless the environment variable ``KVRACE_DBM`` is ``python``.
    Other names raise ValueError.  The caller still has to check :func:`fits`
    before using the compiled core.
    """
    if name is None:
        if os.environ.get(ENV_VAR) == "python" or _C_CORE is None:
            return _PYTHON
        return _C_CORE
    if name == "python":
        return _PYTHON
    if name == "c":
        if _C_CORE is None:
            raise ImportError(
                "the C DBM core checker.domains._cdbm is not built: reinstall kvrace"
                " (pip install -e .) on a machine with a C compiler and the Python"
                " headers, or use the 'python' DBM implementation"
            )
        return _C_CORE
    raise ValueError(f"unknown DBM implementation {name!r}: expected 'c' or 'python'")

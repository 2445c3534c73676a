#!/usr/bin/env python3
"""Micro-benchmark of the DBM operations: the C core against the Python reference.

For dimensions 4, 8 and 16 (the reference clock plus 3, 7 and 15 clocks) it times
``canonicalize``, ``constrain``, ``post``, ``includes`` and ``extrapolate_lu`` of
``checker.domains.dbm`` (Python) and ``checker.domains._cdbm`` (C) on the same
pools of zones, made the way the explorer makes them (constraints, time elapse and
resets from the zero zone), and prints operations per second and the speedup.

    python benchmarks/dbm_micro.py              # about 10 s
    python benchmarks/dbm_micro.py --time 1.0   # longer, steadier runs per cell

A call on a zone the operation updates in place includes copying the zone (a list
slice), in both columns.  The script imports the ``checker`` package next to it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker.domains import backend
from checker.domains import dbm as D

DIMS = (4, 8, 16)
POOL = 64


def zone(rng: random.Random, n: int) -> D.Dbm:
    """A reachable-looking zone: from the zero zone, steps of guard, resets, up."""
    d = D.zero(n)
    D.up(d, n)
    for _ in range(3 * n):
        c = rng.randrange(1, n)
        r = rng.random()
        if r < 0.4:
            t = d[:]
            if D.constrain(t, n, c, 0, D.bound(rng.randint(5, 400), rng.random() < 0.3)):
                d = t
        elif r < 0.7:
            t = d[:]
            if D.constrain(t, n, 0, c, D.bound(-rng.randint(0, 300), rng.random() < 0.3)):
                d = t
        elif r < 0.9:
            D.reset(d, n, c)
        else:
            D.up(d, n)
    return d


def cases(n: int, rng: random.Random) -> dict[str, tuple[Callable[[Any, Any], Any], list[Any]]]:
    """Per operation: a caller taking (implementation, argument tuple) and a pool."""
    zones = [zone(rng, n) for _ in range(POOL)]
    loose = []
    for z in zones:  # canonical zones with entries dropped: the closure has work
        d = z[:]
        for i in range(1, n):
            d[i * n + rng.randrange(n)] = D.INF if rng.random() < 0.5 else d[i * n]
        for i in range(n):
            d[i * n + i] = D.LE_ZERO
        loose.append(d)
    tight = []
    for z in zones:  # constraints that do cut the zone (the O(n^2) update runs)
        c = rng.randrange(1, n)
        up = z[c * n]
        b = D.bound(rng.randint(1, 300), False) if up >= D.INF else up - 2
        tight.append((z, c, b))
    posts = []
    for z in zones:
        guard = [(rng.randrange(1, n), 0, D.bound(rng.randint(100, 500), False))]
        keep = [(c, c) for c in range(1, n) if rng.random() < 0.7]
        inv = [(rng.randrange(1, n), 0, D.bound(rng.randint(300, 900), False))]
        posts.append((z, guard, keep, inv))
    lower = [-1] + [rng.randint(-1, 300) for _ in range(n - 1)]
    upper = [-1] + [rng.randint(-1, 300) for _ in range(n - 1)]
    incl = []
    for z in zones:  # a zone and a separately computed superset: a full scan
        big = z[:]
        D.extrapolate_lu(big, n, lower, upper)
        incl.append((big, z))
    return {
        "canonicalize": (lambda f, a: f(a[:], n), loose),
        "constrain": (lambda f, a: f(a[0][:], n, a[1], 0, a[2]), tight),
        "post": (lambda f, a: f(a[0], n, a[1], a[2], n, a[3]), posts),
        "includes": (lambda f, a: f(a[0], a[1], n), incl),
        "extrapolate_lu": (lambda f, a: f(a[:], n, lower, upper), zones),
    }


def rate(call: Callable[[Any, Any], Any], func: Callable[..., Any], pool: list[Any],
         seconds: float) -> float:
    """Calls per second of ``call(func, item)`` cycling over ``pool``."""
    reps = 1
    while True:
        start = time.perf_counter()
        for _ in range(reps):
            for item in pool:
                call(func, item)
        took = time.perf_counter() - start
        if took >= seconds:
            return reps * len(pool) / took
        reps = max(reps * 2, int(reps * seconds / max(took, 1e-9) * 1.1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time", type=float, default=0.3, help="seconds per cell (default 0.3)")
    args = ap.parse_args()
    py = backend.select("python")
    c = backend.select("c") if backend.C_AVAILABLE else None
    if c is None:
        print("the C core is not built: only the Python column is measured", file=sys.stderr)
    print(f"{'operation':<15} {'n':>3} {'python ops/s':>14} {'C ops/s':>14} {'speedup':>8}")
    for n in DIMS:
        for name, (call, pool) in cases(n, random.Random(n)).items():
            if c is not None:  # the two must agree on the pool
                for item in pool:
                    assert repr(call(getattr(py, name), item)) == repr(
                        call(getattr(c, name), item))
            p = rate(call, getattr(py, name), pool, args.time)
            if c is None:
                print(f"{name:<15} {n:>3} {p:>14,.0f} {'-':>14} {'-':>8}")
                continue
            q = rate(call, getattr(c, name), pool, args.time)
            print(f"{name:<15} {n:>3} {p:>14,.0f} {q:>14,.0f} {q / p:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

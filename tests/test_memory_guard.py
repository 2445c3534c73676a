"""``--max-memory`` is enforced while a run builds and explores its model."""

from __future__ import annotations

import pytest

from checker.limits import (
    LimitHit,
    MemoryGuard,
    MemoryLimitHit,
    rss_mb,
    zone_over_limit,
)
from checker.model.interface import LimitReached


def test_the_guard_stops_a_growing_loop() -> None:
    limit = int(rss_mb()) + 40
    hoard: list[bytes] = []
    with pytest.raises(MemoryLimitHit) as info, MemoryGuard(limit) as guard:
        for _ in range(600):  # up to 600 MiB, a MiB at a time: stopped long before
            hoard.append(b"x" * 2**20)
    assert guard.tripped
    assert info.value.what == f"memory limit ({limit} MiB) reached"
    # Stopped within a sampling interval (and a GIL switch) of allocation past the limit.
    assert len(hoard) < 300
    # Both the explorer's and the model's limit exceptions: every phase ends it cleanly.
    assert isinstance(info.value, LimitHit) and isinstance(info.value, LimitReached)


def test_no_limit_no_guard() -> None:
    with MemoryGuard(None) as guard:
        data = [b"y" * 2**20 for _ in range(5)]
    assert not guard.tripped and len(data) == 5


def test_a_guard_that_did_not_trip_leaves_nothing_behind() -> None:
    with MemoryGuard(int(rss_mb()) + 500) as guard:
        total = sum(range(10_000))
    assert not guard.tripped and total == 49_995_000


def test_zones_are_checked_before_they_are_built() -> None:
    assert zone_over_limit(10, None) is None
    assert zone_over_limit(10, 10_000) is None
    # 2,008 clocks: 4 million entries per zone, three zones alive at once.
    why = zone_over_limit(2008, int(rss_mb()) + 100)
    assert why is not None and why.startswith("memory limit (") and "2008 live clocks" in why
    assert "needs about 554 MiB" in why
    big = zone_over_limit(6000, None)
    assert big is not None and "6000 live clocks needs" in big


def test_a_hit_that_was_lost_is_raised_again() -> None:
    """The first hit lands where it is caught and ignored (as Python ignores an
    exception raised in a finaliser, such as Z3's ``__del__``): the guard raises it
    again while the guarded code keeps running, instead of letting it run unguarded."""
    import time

    limit = 1  # MiB: any process is over it
    lost = 0
    start = time.monotonic()
    with pytest.raises(MemoryLimitHit), MemoryGuard(limit) as guard:
        while time.monotonic() - start < 10:
            try:
                while time.monotonic() - start < 10:
                    sum(range(100))
            except MemoryLimitHit:
                if lost:
                    raise
                lost += 1
    assert guard.tripped and lost == 1
    assert time.monotonic() - start < MemoryGuard.refire + 1.5


def test_a_hit_lost_in_a_finaliser_ends_the_run_at_the_budgets_next_check(
        capfd: pytest.CaptureFixture[str]) -> None:
    """Every hit lands in a finaliser, where Python would print it and go on: the run's
    budget, checked between runs or states, raises it at once, and nothing is printed."""
    import time

    from checker.limits import Budget, Limits

    class Finalised:
        def __init__(self) -> None:
            self.me = self  # only the cycle collector frees it

        def __del__(self) -> None:
            total = 0
            for i in range(20_000):
                total += i

    budget = Budget(Limits(max_memory_mb=1))
    start = time.monotonic()
    checks = 0
    with pytest.raises(MemoryLimitHit), MemoryGuard(1) as guard:
        while time.monotonic() - start < 10:
            Finalised()
            budget.check_time()
            checks += 1
    assert guard.tripped
    assert time.monotonic() - start < 2, f"{checks} checks"
    assert capfd.readouterr().err == ""

"""``--max-memory`` is enforced while a run builds and explores its model."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from checker.language import load_text
from checker.limits import (
    LimitHit,
    LimitKind,
    MemoryGuard,
    MemoryLimitHit,
    TimeLimitHit,
    available_mb,
    rss_mb,
    safety_limit_mb,
    zone_over_limit,
)
from checker.model.compiled import SpecModel
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


WIDE = """model wide
type T = 0..{top}
actor a
var on : (T, T) -> bool = false
event a.go(i: T, j: T) when not on[i, j] do on[i, j] := true
"""
"""A state of (top + 1)^2 cells with as many successors, each a fresh copy of it:
one call of ``edges`` builds (top + 1)^4 cells."""


def test_without_max_memory_a_run_ends_inconclusive_before_the_memory_runs_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command run without ``--max-memory`` is guarded at most of the memory available
    (here, as if only 300 MiB more were): it ends as inconclusive with its exit code 3,
    not killed by the kernel."""
    from checker.cli import app

    spec = tmp_path / "wide.kvr"
    spec.write_text(WIDE.format(top=127))  # 2 GiB of targets from the first state
    monkeypatch.setattr(app, "safety_limit_mb", lambda: int(rss_mb()) + 300)
    out, err = io.StringIO(), io.StringIO()
    assert app.main(["check", str(spec), "-q", "--timeout", "30"], out, err) == 3, err.getvalue()
    assert "INCONCLUSIVE: memory limit (" in out.getvalue()
    assert "of the memory available at the start; --max-memory sets another) reached" \
        in out.getvalue()


def test_the_safety_limit_is_what_is_held_plus_most_of_what_is_available() -> None:
    avail = available_mb()
    assert avail is not None and avail > 0  # Linux: /proc/meminfo
    limit = safety_limit_mb()
    assert limit is not None
    assert rss_mb() + 0.8 * avail <= limit <= rss_mb() + avail


def test_one_call_of_edges_ends_at_the_models_deadline() -> None:
    """Building the 16,384 successors of the first state (each 16,384 cells) takes
    seconds; past its deadline the call ends within a few milliseconds."""
    model = SpecModel(load_text(WIDE.format(top=127), "wide.kvr"))
    s0 = model.initial_states()[0]
    model.deadline = time.monotonic() + 0.2
    start = time.monotonic()
    with pytest.raises(TimeLimitHit) as info:
        model.edges(s0)
    assert time.monotonic() - start < 1.0
    assert isinstance(info.value, LimitHit) and isinstance(info.value, LimitReached)
    assert info.value.kind is LimitKind.TIME
    model.deadline = None
    small = SpecModel(load_text(WIDE.format(top=3), "small.kvr"))
    small.deadline = time.monotonic() - 1  # a call too small to reach a check
    assert len(small.edges(small.initial_states()[0])) == 16

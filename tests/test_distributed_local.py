"""``check --workers N`` on this machine: the workers forked from the driver
(:mod:`checker.engines.localpool`), against the single-process explorer, and how a run
with them ends (limits, a worker killed or failing, signals).

These start no Ray: the comparisons are quick (``tests/test_distributed.py`` runs the
same ones on Ray, marked slow).  Every comparison is exact, as there: the same verdict,
property, message and trace, and with HOLDS the same discrete states, events fired and
counts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run_cli
from helpers.distributed import COUNTS, SPECS
from modelgen import model_for_seed

from checker.engines import distributed as dist
from checker.engines import localpool
from checker.engines.partition import Partition
from checker.engines.proctree import descendants
from checker.engines.search import CheckResult, Options, explore
from checker.language import load, load_text
from checker.limits import Limits, rss_mb
from checker.model import ir
from checker.model.compiled import SpecModel

FLAGSHIP = ROOT / "spec/sglang/deferred_release.kvr"

BIG = """model big
actor p
var a : 0..250 = 0
var b : 0..250 = 0
var c : 0..250 = 0
event p.x() when a < 250 do a := a + 1
event p.y() when b < 250 do b := b + 1
event p.z() when c < 250 do c := c + 1
invariant fine: a + b + c >= 0
"""
"""Sixteen million discrete states, breadth-first: a search that runs for minutes,
with a round of a few hundred to thousands of states (rounds end often)."""


def both(spec: ir.Spec, limits: Limits | None = None, options: Options | None = None,
         workers: int = 2) -> tuple[CheckResult, CheckResult]:
    one = explore(SpecModel(spec, {}), limits, options)
    two = forked(spec, limits, options, workers)
    return one, two


def forked(spec: ir.Spec, limits: Limits | None = None, options: Options | None = None,
           workers: int = 2) -> CheckResult:
    return dist.explore_distributed(SpecModel(spec, {}), functools.partial(SpecModel, spec, {}),
                                    dist.Cluster(workers), limits, options)


def assert_same(one: CheckResult, two: CheckResult) -> None:
    assert (two.verdict, two.prop, two.message, two.limit) == (
        one.verdict, one.prop, one.message, one.limit)
    assert two.trace == one.trace
    assert [(q.name, q.status, q.trace) for q in two.queries] == [
        (q.name, q.status, q.trace) for q in one.queries]
    if one.verdict == "holds":
        assert two.reached == one.reached
        assert two.fired == one.fired
        for k in COUNTS:
            assert getattr(two.stats, k) == getattr(one.stats, k), k


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    """Every run reaps its workers: none is left behind, whatever ended it (processes
    that were there before the test, such as a Ray instance an earlier test in this
    process started and keeps, are not its own)."""
    before = {pid for pid, _ in descendants()}
    yield
    assert [d for d in descendants() if d[0] not in before] == []


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.slow) if p.stem == "all_ranks_ack" else p for p in SPECS],
    ids=[p.stem for p in SPECS])
def test_spec_library(path: Path) -> None:
    one, two = both(load(path))
    assert_same(one, two)
    d = two.distributed
    assert isinstance(d, dist.DistStats)
    assert d.workers == 2 and d.rounds >= 1


def test_pinned_counts_on_the_flagship() -> None:
    two = forked(load(FLAGSHIP))
    assert (two.verdict, two.stats.states, two.stats.zones, two.stats.transitions) == (
        "holds", 120, 120, 216)
    d = two.distributed
    assert isinstance(d, dist.DistStats)
    assert d.rounds == two.stats.depth + 1 == 17
    # The partition (a hash of the discrete state) is Ray's: the same numbers.
    assert d.zones_per_worker == (53, 67)
    assert (d.explored, d.successors_sent, d.batches) == (120, 126, 24)
    assert d.control_bytes == 24 * 120
    assert 45 * 126 < d.bytes_sent < 150 * 126
    assert len(d.cpu_per_worker) == 2 and all(c > 0 for c in d.cpu_per_worker)


@pytest.mark.parametrize("seed", [*range(0, 40, 2), 187, 375])
def test_random_models(seed: int) -> None:
    spec = load_text(model_for_seed(seed), "<generated>")
    assert_same(*both(spec, Limits(max_states=20_000)))


def test_three_workers_and_no_symmetry() -> None:
    spec = load(ROOT / "spec/sglang/premature_ack.kvr")
    assert_same(*both(spec, workers=3))
    assert_same(*both(spec, options=Options(symmetry=False, clock_reduction=False)))


def test_queries_equal_single_process() -> None:
    one, two = both(load(ROOT / "tests/queries/handoff.kvr"))
    assert_same(one, two)
    assert [q.status for q in two.queries] == ["reachable", "reachable", "unreachable"]


def test_the_workers_are_forked_not_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model is built once (the driver's) and the pre-pass runs once, before the
    fork: a builder that is called fails the run."""
    spec = load(FLAGSHIP)

    def never() -> SpecModel:
        raise AssertionError("a worker rebuilt the model")

    calls: list[int] = []
    original = Partition.load

    def counted(self: Partition, *a: Any) -> tuple[str, str | None]:
        calls.append(os.getpid())
        return original(self, *a)

    monkeypatch.setattr(Partition, "load", counted)
    two = dist.explore_distributed(SpecModel(spec, {}), never, dist.Cluster(2))
    assert two.verdict == "holds"
    assert calls == [os.getpid()]


# ---- limits and failures -------------------------------------------------------------------

def test_state_limit_is_inconclusive() -> None:
    two = forked(load(FLAGSHIP), Limits(max_states=50))
    assert (two.verdict, two.limit) == ("inconclusive", "state limit (50) reached")
    assert two.stats.stored >= 50


def test_time_limit_in_the_pre_pass_is_inconclusive() -> None:
    two = forked(load(FLAGSHIP), Limits(timeout=1e-6))
    assert (two.verdict, two.limit) == ("inconclusive", "time limit (1e-06 s) reached")


def test_memory_limit_per_worker_is_inconclusive() -> None:
    two = forked(load(FLAGSHIP), Limits(max_memory_mb=1))
    assert two.verdict == "inconclusive"
    assert two.limit is not None and two.limit.startswith("memory limit (1 MiB)")


def test_time_limit_mid_search_within_a_second() -> None:
    t0 = time.monotonic()
    two = forked(load_text(BIG, "big.kvr"), Limits(timeout=0.4),
                 Options(clock_reduction=False))
    assert (two.verdict, two.limit) == ("inconclusive", "time limit (0.4 s) reached")
    assert time.monotonic() - t0 < 1.4


def test_a_worker_stuck_past_the_deadline_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that never answers (here: asleep in ``receive``) does not hold the run
    past the deadline by more than :data:`localpool.GRACE`."""
    def asleep(self: Partition, *a: Any) -> Any:
        time.sleep(60)

    monkeypatch.setattr(Partition, "receive", asleep)
    t0 = time.monotonic()
    two = forked(load(FLAGSHIP), Limits(timeout=0.3))
    assert (two.verdict, two.limit) == ("inconclusive", "time limit (0.3 s) reached")
    assert time.monotonic() - t0 < 0.3 + localpool.GRACE + 0.5


def test_memory_limit_in_a_worker_outside_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that grows where the search checks no limit (here: in ``receive``
    before storing) is stopped by its memory guard."""
    original = Partition.receive
    hoard: list[bytearray] = []

    def greedy(self: Partition, *a: Any) -> Any:
        if self.index == 1:
            for _ in range(40):
                hoard.append(bytearray(10 * 2**20))
                time.sleep(0.005)
        return original(self, *a)

    monkeypatch.setattr(Partition, "receive", greedy)
    limit = int(rss_mb()) + 150
    two = forked(load(FLAGSHIP), Limits(max_memory_mb=limit))
    assert (two.verdict, two.limit) == ("inconclusive", f"memory limit ({limit} MiB) reached")


def test_a_killed_worker_ends_the_run_never_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    search = dist._Driver.search

    def kill_one(self: Any, zc: Any, mode: Any) -> CheckResult:
        pool = self.pool
        assert isinstance(pool, localpool.Children)
        os.kill(pool.pids[1], signal.SIGKILL)
        return search(self, zc, mode)

    monkeypatch.setattr(dist._Driver, "search", kill_one)
    two = forked(load(FLAGSHIP))
    assert (two.verdict, two.limit) == ("inconclusive", "worker 1 died: killed by SIGKILL")
    monkeypatch.undo()
    assert_same(*both(load(FLAGSHIP)))  # the next run forks fresh workers


def test_a_worker_that_raises_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Partition.expand

    def broken(self: Partition, ranks: bytes) -> list[object]:
        if self.index == 1 and self.depth == 3:
            raise RuntimeError("disk on fire")
        return original(self, ranks)

    monkeypatch.setattr(Partition, "expand", broken)
    two = forked(load(FLAGSHIP))
    assert (two.verdict, two.limit) == (
        "inconclusive", "worker 1 failed: RuntimeError: disk on fire")


# ---- the command line ----------------------------------------------------------------------

def test_cli_json_equals_single_process_without_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real(name, *a))
    spec = str(FLAGSHIP)
    c1, o1, _ = run_cli("check", spec, "--json", "-q")
    c2, o2, _ = run_cli("check", spec, "--json", "-q", "--workers", "2")
    assert c1 == c2 == 0
    d1, d2 = json.loads(o1), json.loads(o2)
    assert d2["distributed"]["workers"] == 2
    for d in (d1, d2):
        d.pop("distributed", None)
        for k in ("seconds", "zones_per_second", "peak_memory_mib", "successors",
                  "successors_note"):
            d["stats"].pop(k)
    assert d1 == d2
    code, _, err = run_cli("check", spec, "--workers", "2", "--backend", "ray")
    assert (code, err) == (2, "--backend ray needs Ray, which is not installed:"
                              " pip install 'kvrace[ray]'\n")


def test_cli_refuses_backend_misuse() -> None:
    spec = str(FLAGSHIP)
    code, _, err = run_cli("check", spec, "--backend", "local")
    assert (code, err) == (2, "--backend local needs --workers N\n")
    code, _, err = run_cli("check", spec, "--ray", "auto", "--backend", "local")
    assert (code, err) == (2, "--backend local runs on this machine: drop --ray, or"
                              " --backend\n")


def _start_big(tmp_path: Path) -> tuple[subprocess.Popen[str], list[tuple[int, int]]]:
    """``kvrace check --workers 2`` of :data:`BIG` in another process, once its two
    workers run; the process and its workers."""
    spec = tmp_path / "big.kvr"
    spec.write_text(BIG, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "checker", "check", str(spec), "--workers", "2", "-q",
         "--no-clock-reduction", "--timeout", "60"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 20
    kids: list[tuple[int, int]] = []
    while time.monotonic() < deadline and len(kids) < 2:
        time.sleep(0.02)
        # The workers: forks of the driver (not a compiler it may run).
        kids = [p for p in descendants(proc.pid) if _cmdline(p[0]) == _cmdline(proc.pid)]
    assert len(kids) == 2, "the workers did not start"
    time.sleep(0.1)  # into the rounds
    return proc, kids


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _gone(kids: list[tuple[int, int]]) -> bool:
    """Whether every one of ``kids`` has exited.  A worker orphaned by its driver's death
    is a zombie until its new parent reaps it; that parent is this process when it is a
    child subreaper (Ray makes the process that starts it one), and then reaps it here."""
    alive = False
    for pid, _ in kids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive = True
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return not alive


@pytest.mark.slow  # a fresh interpreter, its model compiled
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_cli_signal_tears_the_workers_down(tmp_path: Path, signum: int) -> None:
    proc, kids = _start_big(tmp_path)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 128 + signum, err
    assert "interrupted by" in err and "Traceback" not in err
    assert _gone(kids)


@pytest.mark.slow  # a fresh interpreter, its model compiled
def test_cli_killed_driver_takes_its_workers(tmp_path: Path) -> None:
    proc, kids = _start_big(tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while not _gone(kids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(kids)


@pytest.mark.slow  # a fresh interpreter, its model compiled
def test_cli_kill_9_of_a_worker_is_inconclusive(tmp_path: Path) -> None:
    proc, kids = _start_big(tmp_path)
    os.kill(kids[0][0], signal.SIGKILL)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 3, err
    assert "INCONCLUSIVE: worker 0 died: killed by SIGKILL" in out
    assert _gone(kids)

"""Distributed exploration (``check --workers/--ray``) against the single-process explorer.

One local Ray instance with 2 CPUs serves the whole module; its two workers are reused
from run to run.  Every comparison is exact: the same verdict, property, message and
trace (step by step), and with HOLDS the same discrete states in the same order, the
same events fired and the same counts of states, zones, transitions, stored and
explored zones (the owner of a discrete state stores its zones in the single-process
order, so even the covering is the same).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

# Every test here starts Ray or talks to it: slow, and all on one xdist worker, so that
# one Ray instance serves the module (a second worker would start a second one).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

ray = pytest.importorskip("ray")

from helpers import ROOT, run_cli  # noqa: E402
from helpers.distributed import COUNTS, SPECS  # noqa: E402
from modelgen import model_for_seed  # noqa: E402

from checker.engines import distributed as dist  # noqa: E402
from checker.engines.search import CheckResult, Options, explore  # noqa: E402
from checker.language import load, load_text  # noqa: E402
from checker.limits import Limits  # noqa: E402
from checker.model import ir  # noqa: E402
from checker.model.compiled import SpecModel  # noqa: E402

RAY2 = dist.Cluster(2, backend=dist.Backend.RAY)
"""Two workers on the module's local Ray instance."""


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    started = not ray.is_initialized()
    if started:
        dist.init_local(2)
    yield
    if started:
        ray.shutdown()


def both(spec: ir.Spec, limits: Limits | None = None, options: Options | None = None,
         workers: int = 2) -> tuple[CheckResult, CheckResult]:
    one = explore(SpecModel(spec, {}), limits, options)
    two = dist.explore_distributed(SpecModel(spec, {}), functools.partial(SpecModel, spec, {}),
                                   dist.Cluster(workers, backend=dist.Backend.RAY), limits, options)
    return one, two


def assert_same(one: CheckResult, two: CheckResult) -> None:
    assert (two.verdict, two.prop, two.message, two.limit) == (
        one.verdict, one.prop, one.message, one.limit)
    assert two.trace == one.trace
    if one.verdict == "holds":
        assert two.reached == one.reached
        assert two.fired == one.fired
        for k in COUNTS:
            assert getattr(two.stats, k) == getattr(one.stats, k), k


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_spec_library(path: Path) -> None:
    one, two = both(load(path))
    assert_same(one, two)
    d = two.distributed
    assert isinstance(d, dist.DistStats)
    assert d.workers == 2 and d.rounds >= 1


def test_pinned_counts_on_the_flagship() -> None:
    _, two = both(load(ROOT / "spec/sglang/deferred_release.kvr"))
    assert (two.verdict, two.stats.states, two.stats.zones, two.stats.transitions) == (
        "holds", 120, 120, 216)
    d = two.distributed
    assert isinstance(d, dist.DistStats)
    # The initial level and 16 below it: 17 rounds expand a non-empty frontier.
    assert d.rounds == two.stats.depth + 1 == 17
    # The partition (a hash of the discrete state) and what crossed it.
    assert d.zones_per_worker == (53, 67)
    assert (d.explored, d.successors_sent, d.batches) == (120, 126, 24)
    # Each frontier node's key goes up (16 bytes) and its rank comes down (8 bytes).
    assert d.control_bytes == 24 * 120
    # A pickled successor: its state, packed zone and pointers, 45 to 150 bytes (about
    # 59 with the compiled core's packing, one byte per entry of the zone).
    assert 45 * 126 < d.bytes_sent < 150 * 126


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_models(seed: int) -> None:
    spec = load_text(model_for_seed(seed), "<generated>")
    assert_same(*both(spec, Limits(max_states=20_000)))


def test_random_model_error_in_an_initial_state() -> None:
    # Seed 187: a deadline of the initial state dereferences `none`.
    one, two = both(load_text(model_for_seed(187), "<generated>"))
    assert (one.verdict, len(one.trace)) == ("error", 1)
    assert_same(one, two)


def test_random_model_restarted_with_extra_m() -> None:
    # Seed 375: a deadlock of the LU abstraction that the exact replay does not confirm;
    # both runs start again with Extra_M and agree.
    one, two = both(load_text(model_for_seed(375), "<generated>"))
    assert (one.verdict, one.stats.extrapolation) == ("holds", "m")
    assert two.stats.extrapolation == "m"
    assert_same(one, two)


@pytest.mark.parametrize("seed", range(40, 120, 4))
def test_random_models_more(seed: int) -> None:
    """A sample of later seeds through Ray; ``tests/test_differential.py`` runs the
    partitions in process on 100 seeds, with two and three workers."""
    spec = load_text(model_for_seed(seed), "<generated>")
    assert_same(*both(spec, Limits(max_states=20_000)))


def test_three_workers_and_no_symmetry() -> None:
    spec = load(ROOT / "spec/sglang/premature_ack.kvr")
    assert_same(*both(spec, workers=3))
    assert_same(*both(spec, options=Options(symmetry=False, clock_reduction=False)))


# ---- limits and failures -------------------------------------------------------------------

def test_state_limit_is_inconclusive() -> None:
    spec = load(ROOT / "spec/sglang/deferred_release.kvr")
    _, two = both(spec, Limits(max_states=50))
    assert two.verdict == "inconclusive"
    assert two.limit == "state limit (50) reached"
    assert two.stats.stored >= 50


def test_time_limit_is_inconclusive() -> None:
    spec = load(ROOT / "spec/sglang/deferred_release.kvr")
    two = dist.explore_distributed(SpecModel(spec, {}), functools.partial(SpecModel, spec, {}),
                                   RAY2, Limits(timeout=1e-6))
    assert (two.verdict, two.limit) == ("inconclusive", "time limit (1e-06 s) reached")


def test_memory_limit_per_worker_is_inconclusive() -> None:
    spec = load(ROOT / "spec/sglang/deferred_release.kvr")
    two = dist.explore_distributed(SpecModel(spec, {}), functools.partial(SpecModel, spec, {}),
                                   RAY2, Limits(max_memory_mb=1))
    assert two.verdict == "inconclusive"
    assert two.limit is not None and two.limit.startswith("memory limit (1 MiB)")


def test_a_dead_worker_ends_the_run_never_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load(ROOT / "spec/sglang/deferred_release.kvr")
    search = dist._Driver.search

    def kill_one(self: Any, ex: Any, mode: str) -> CheckResult:
        ray.kill(self.actors[1], no_restart=True)
        return search(self, ex, mode)

    monkeypatch.setattr(dist._Driver, "search", kill_one)
    two = dist.explore_distributed(SpecModel(spec, {}), functools.partial(SpecModel, spec, {}),
                                   RAY2)
    assert two.verdict == "inconclusive"
    assert two.limit is not None and two.limit.startswith("worker 1 died: ")
    monkeypatch.undo()
    # The next run starts fresh workers.
    assert_same(*both(spec))


# ---- the command line ----------------------------------------------------------------------

def _without_timing(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("distributed", None)
    stats = dict(doc["stats"])
    # Run facts, not results: times, memory, and which successor function answered (the
    # driver of a distributed run computes no successors).
    for k in ("seconds", "zones_per_second", "peak_memory_mib", "successors",
              "successors_note"):
        stats.pop(k)
    doc["stats"] = stats
    return doc


@pytest.mark.parametrize("name", ["premature_ack", "deferred_release"])
def test_cli_json_equals_single_process(name: str) -> None:
    spec = str(ROOT / f"spec/sglang/{name}.kvr")
    c1, o1, _ = run_cli("check", spec, "--json", "-q")
    c2, o2, _ = run_cli("check", spec, "--json", "-q", "--workers", "2", "--backend", "ray")
    assert c1 == c2
    d1, d2 = json.loads(o1), json.loads(o2)
    schema = json.loads((ROOT / "docs/schema/kvrace-output-1.schema.json").read_text())
    Draft202012Validator(schema).validate(d2)
    assert d2["distributed"]["workers"] == 2
    assert d2["distributed"]["bytes_per_explored_zone"] > 0
    if d1["verdict"] == "violated":
        # The single-process run stops at the violation, the distributed one at the end of
        # its round: the same verdict and trace, not the same counts.
        d1.pop("stats"), d2.pop("stats")
        d1.pop("never_fired"), d2.pop("never_fired")
        assert d1 == {k: v for k, v in d2.items() if k != "distributed"}
    else:
        assert _without_timing(d1) == _without_timing(d2)


def test_cli_text_adds_one_line() -> None:
    spec = str(ROOT / "spec/sglang/premature_ack.kvr")
    _, o1, _ = run_cli("check", spec, "-q")
    code, o2, _ = run_cli("check", spec, "-q", "--workers", "2", "--backend", "ray")
    assert code == 1
    lines1, lines2 = o1.splitlines(), o2.splitlines()
    assert lines2[-1].startswith("distributed: 2 workers, ")
    # Everything above the statistics is the same.
    assert lines2[:-2] == lines1[:-1]


def test_cli_refuses_dfs_and_missing_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = str(ROOT / "spec/sglang/premature_ack.kvr")
    code, _, err = run_cli("check", spec, "--workers", "2", "--dfs")
    assert (code, err) == (2, "--workers/--ray explore breadth-first: drop --dfs\n")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real(name, *a))
    code, _, err = run_cli("check", spec, "--ray", "auto")
    assert (code, err) == (2, "--ray needs Ray, which is not installed:"
                              " pip install 'kvrace[ray]'\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _names_port(current: Path, port: int) -> bool:
    """Whether Ray's address file ``current`` names the cluster on ``port``."""
    try:
        return current.read_text().strip().endswith(f":{port}")
    except OSError:
        return False


def test_ray_auto_on_a_started_cluster(tmp_path: Path) -> None:
    """``ray start --head`` then ``kvrace check --ray auto`` in another process: the
    package travels to the cluster's workers, the verdicts are the single-process ones."""
    port = _free_port()
    env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{port}", "RAY_AUTH_MODE": "token",
           "PYTHONPATH": str(ROOT)}
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
         f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
         "--disable-usage-stats"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    current = Path("/tmp/ray/ray_current_cluster")
    try:
        deadline = time.monotonic() + 90
        while not _names_port(current, port) and time.monotonic() < deadline:
            time.sleep(0.2)  # `ray start` writes its address once the head node is up
        assert _names_port(current, port), "the head node did not start"
        for name in ("premature_ack", "deferred_release"):  # violated, holds
            spec = str(ROOT / f"spec/sglang/{name}.kvr")
            got = subprocess.run([sys.executable, "-m", "checker", "check", spec, "--json",
                                  "-q", "--ray", "auto"], env=env, capture_output=True,
                                 text=True, timeout=240)
            want = subprocess.run([sys.executable, "-m", "checker", "check", spec, "--json",
                                   "-q"], env=env, capture_output=True, text=True, timeout=60)
            assert got.returncode == want.returncode, got.stderr[-2000:]
            d1, d2 = json.loads(want.stdout), json.loads(got.stdout)
            assert d2["distributed"]["workers"] == 2
            assert (d2["verdict"], d2["property"], d2["trace"]) == (
                d1["verdict"], d1["property"], d1["trace"])
    finally:
        head.send_signal(signal.SIGTERM)
        head.wait(timeout=60)
        # `ray start` leaves its address for a later `ray.init()`; the head is gone.
        if _names_port(current, port):
            with contextlib.suppress(OSError):
                current.unlink()


# ---- reachable queries ---------------------------------------------------------------------

def _same_queries(one: CheckResult, two: CheckResult) -> None:
    assert [(q.name, q.status, q.trace) for q in two.queries] == [
        (q.name, q.status, q.trace) for q in one.queries]


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_queries_on_ray_equal_single_process() -> None:
    """Each query's status and witness, on Ray, are the single-process ones: with HOLDS,
    and after a violation that stops the single-process run in the round where another
    worker meets a query (which stays inconclusive)."""
    spec = load(ROOT / "tests/queries/handoff.kvr")
    one, two = both(spec)
    assert_same(one, two)
    _same_queries(one, two)
    assert [q.status for q in two.queries] == ["reachable", "reachable", "unreachable"]
    early = ("model early\nactor p\nvar s : 0..9 = 0\n"
             "event p.a() when s == 0 do s := 1\nevent p.b() when s == 0 do s := 3\n"
             "event p.c() when s == 1 do s := 8\nevent p.d() when s == 3 do s := 9\n"
             "invariant no8: s != 8\nreachable nine: s == 9\nreachable one: s == 1\n")
    one, two = both(load_text(early, "early.kvr"))
    assert (two.verdict, [q.status for q in two.queries]) == (
        "violated", ["inconclusive", "reachable"])
    assert_same(one, two)
    _same_queries(one, two)
    one, two = both(spec, options=Options(query="landed_and_flying"))
    assert two.verdict == "holds"
    _same_queries(one, two)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_cli_queries_json_equals_single_process() -> None:
    spec = str(ROOT / "tests/queries/handoff.kvr")
    c1, o1, _ = run_cli("check", spec, "--json", "-q")
    c2, o2, _ = run_cli("check", spec, "--json", "-q", "--workers", "2", "--backend", "ray")
    assert c1 == c2 == 5
    d1, d2 = json.loads(o1), json.loads(o2)
    assert [q["status"] for q in d2["queries"]] == ["reachable", "reachable", "unreachable"]
    assert _without_timing(d1) == _without_timing(d2)

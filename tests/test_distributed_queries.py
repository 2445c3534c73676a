"""``reachable`` queries in the distributed explorer, against the single-process one.

The partitions run in this process (:class:`InProcess` stands in for the Ray actors;
their arguments and results are still pickled where Ray's would be), so these tests
need no Ray; ``tests/test_distributed.py`` runs a few of the same comparisons on Ray.

Every comparison is exact: each query's status and witness trace (the first state the
single-process breadth-first search generates satisfying it, covered or not), the
verdict, property, message and trace.  The hand-written models pin the two ways a
round could go wrong: a query met in the same round as the violation that stops the
single-process run, but after it (it stays inconclusive), and a query met by two
workers in one round (the witness is the one first in the single-process order, not the
first worker's).
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
import pickle
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from helpers import ROOT, run_cli
from modelgen import model_for_seed
from test_queries import _queries_for

from checker.engines import distributed as dist
from checker.engines.search import (
    INCONCLUSIVE,
    REACHABLE,
    UNREACHABLE,
    CheckResult,
    Options,
    explore,
)
from checker.language import load, load_text
from checker.limits import Limits
from checker.model import ir
from checker.model.compiled import SpecModel

COUNTS = ("states", "zones", "transitions", "stored", "explored", "depth")
LIMITS = Limits(max_states=20_000)


class _Ref:
    """An object reference: the value a call returned."""

    def __init__(self, value: object) -> None:
        self.value = value


class _Method:
    """An actor method: ``remote`` calls it at once."""

    def __init__(self, f: Callable[..., object], returns: int | None = None) -> None:
        self.f = f
        self.returns = returns

    def options(self, num_returns: int) -> _Method:
        return _Method(self.f, num_returns)

    def remote(self, *args: object) -> object:
        out = self.f(*(a.value if isinstance(a, _Ref) else a for a in args))
        if self.returns is None:
            return _Ref(out)
        assert isinstance(out, list) and len(out) == self.returns
        return [_Ref(x) for x in out]


class _Actor:
    """An actor handle over a partition object of this process."""

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self.obj, name))


class InProcess:
    """Stands in for the workers (:class:`checker.engines.localpool.Children`): each
    partition is an object in this process, a call a method call, a result pickled and
    unpickled."""

    def __init__(self, cluster: dist.Cluster, worker: type, deadline: float | None,
                 timeout: float | None) -> None:
        self.cluster = cluster
        self.worker = worker
        self.actors: list[_Actor] = []

    def spawn(self) -> int:
        n = self.cluster.workers or 2
        self.actors = [_Actor(self.worker(i, n)) for i in range(n)]
        return n

    def left(self) -> float | None:
        return None

    def get(self, refs: Sequence[_Ref]) -> list[object]:
        return [pickle.loads(pickle.dumps(r.value)) for r in refs]

    def load(self, build: Callable[[], object], limits: Limits, left: float | None,
             options: Options) -> list[object]:
        return [a.obj.load(build, limits, left, options) for a in self.actors]

    def shutdown(self, dead: bool) -> None:
        self.actors = []


@pytest.fixture(autouse=True)
def in_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The partitions in this process; ``check --workers`` believes Ray is installed."""
    monkeypatch.setattr(dist, "Children", InProcess)
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec("ray", None) if name == "ray" else real(
            name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    yield


def both(spec: ir.Spec, options: Options | None = None, workers: int = 2,
         limits: Limits = LIMITS) -> tuple[CheckResult, CheckResult]:
    """The single-process run and the distributed one (partitions in this process)."""
    one = explore(SpecModel(spec), limits, options)
    two = dist.explore_distributed(SpecModel(spec), functools.partial(SpecModel, spec),
                                   dist.Cluster(workers), limits, options)
    return one, two


def assert_same(one: CheckResult, two: CheckResult, what: str = "") -> None:
    """The same verdict, trace and queries (statuses and witnesses); with HOLDS over the
    whole model, the same discrete states and counts."""
    assert (two.verdict, two.prop, two.message, two.limit) == (
        one.verdict, one.prop, one.message, one.limit), what
    assert two.trace == one.trace, what
    assert [(q.name, q.status) for q in two.queries] == [
        (q.name, q.status) for q in one.queries], what
    for q1, q2 in zip(one.queries, two.queries, strict=True):
        assert q2.trace == q1.trace, f"{what}: witness of {q1.name}"
    if one.verdict == "holds":
        assert two.reached == one.reached, what
        if not one.queries or len(one.queries) > 1 or one.queries[0].status != REACHABLE:
            for k in COUNTS:
                assert getattr(two.stats, k) == getattr(one.stats, k), f"{what}: {k}"


def statuses(res: CheckResult) -> list[tuple[str, str]]:
    return [(q.name, q.status) for q in res.queries]


def labels(res: CheckResult, name: str) -> list[str]:
    """The events of a query's witness."""
    q = next(q for q in res.queries if q.name == name)
    return [s.label for s in q.trace]


# ---- hand-written models ---------------------------------------------------------------------

EARLY = """model early
actor p
var s : 0..9 = 0
event p.a() when s == 0 do s := 1
event p.b() when s == 0 do s := 3
event p.c() when s == 1 do s := {first}
event p.d() when s == 3 do s := {second}
invariant no8: s != 8
reachable nine: s == 9
"""
"""Two states one event deep, on different workers (with 2 and with 3); expanding the
first gives ``s = first``, the second ``s = second``.  The first state the single-process
run expands comes first in every worker's round."""


@pytest.mark.parametrize("workers", [2, 3])
def test_a_query_met_after_the_violation_in_its_round_stays_inconclusive(
        workers: int) -> None:
    # The violation (s = 8) comes first: the single-process run never generates s = 9,
    # though another worker does in the same round.
    one, two = both(load_text(EARLY.format(first=8, second=9), "early.kvr"),
                    workers=workers)
    assert (one.verdict, one.prop, statuses(one)) == ("violated", "no8",
                                                      [("nine", INCONCLUSIVE)])
    assert_same(one, two)


@pytest.mark.parametrize("workers", [2, 3])
def test_a_query_met_before_the_violation_in_its_round_is_reachable(workers: int) -> None:
    one, two = both(load_text(EARLY.format(first=9, second=8), "early.kvr"),
                    workers=workers)
    assert (one.verdict, one.prop, statuses(one)) == ("violated", "no8",
                                                      [("nine", REACHABLE)])
    assert labels(one, "nine") == ["initial", "p.a()", "p.c()"]
    assert_same(one, two)


FIRST = """model first
actor p
var s : 0..9 = 0
event p.a() when s == 0 do s := 1
event p.b() when s == 0 do s := 3
event p.c() when s == 1 do s := 8
event p.d() when s == 3 do s := 9
reachable late: s >= 8
"""
"""A query met by two workers in the same round: the witness is the one the single-process
run meets first (through ``p.a``), whichever worker reports first."""


@pytest.mark.parametrize("workers", [2, 3])
def test_the_witness_is_the_first_in_the_single_process_order(workers: int) -> None:
    spec = load_text(FIRST, "first.kvr")
    one, two = both(spec, workers=workers)
    assert (one.verdict, statuses(one)) == ("holds", [("late", REACHABLE)])
    assert labels(two, "late") == ["initial", "p.a()", "p.c()"]
    assert_same(one, two)
    one, two = both(spec, Options(query="late"), workers=workers)
    assert labels(two, "late") == ["initial", "p.a()", "p.c()"]
    assert_same(one, two)


def test_a_query_of_an_initial_state_and_one_never_reached() -> None:
    spec = load_text("model m\nactor p\nvar n : 0..3 = 0\n"
                     "event p.inc() when n < 3 do n := n + 1\n"
                     "reachable zero: n == 0\nreachable four: n == 3 and n != 3\n", "m.kvr")
    for workers in (1, 2, 3):
        one, two = both(spec, workers=workers)
        assert statuses(two) == [("zero", REACHABLE), ("four", UNREACHABLE)]
        assert labels(two, "zero") == ["initial"]
        assert_same(one, two)


def test_query_option_ignores_asserts_and_stops_at_the_witness() -> None:
    spec = load_text("model m\nactor p\nvar n : 0..5 = 0\n"
                     "event p.inc() when n < 5 do assert n != 1; n := n + 1\n"
                     "event p.jump() when n == 1 do n := 4\n"
                     "reachable four: n == 4\n", "m.kvr")
    one, two = both(spec)
    assert (one.verdict, one.prop) == ("violated", "assert")
    assert_same(one, two)
    one, two = both(spec, Options(query="four"))
    assert (two.verdict, statuses(two)) == ("holds", [("four", REACHABLE)])
    assert labels(two, "four") == ["initial", "p.inc()", "p.jump()"]
    assert_same(one, two)


def test_the_lu_to_m_restart_forgets_the_lu_witnesses() -> None:
    # An unconfirmed LU deadlock starts the search again under Extra_M: both runs report
    # the queries of the Extra_M search.
    text = (ROOT / "tests/regressions/lu_spurious_deadlock.kvr").read_text()
    spec = load_text(text + "reachable flipped: f\nreachable soon: f and x <= 1\n"
                     "reachable never: x > 10\n", "lu.kvr")
    for workers in (2, 3):
        one, two = both(spec, workers=workers)
        assert (one.verdict, one.stats.extrapolation) == ("holds", "m")
        assert two.stats.extrapolation == "m"
        assert statuses(two) == [("flipped", REACHABLE), ("soon", REACHABLE),
                                 ("never", UNREACHABLE)]
        assert labels(two, "soon") == ["initial", "a.flip()", "a.go()"]
        assert_same(one, two)


# ---- specs -----------------------------------------------------------------------------------

HANDOFF = ROOT / "tests/queries/handoff.kvr"


@pytest.mark.parametrize("workers", [2, 3])
def test_handoff(workers: int) -> None:
    spec = load(HANDOFF)
    want = [("both_flying", REACHABLE), ("landed_and_flying", REACHABLE),
            ("landed_unposted", UNREACHABLE)]
    for opts in (Options(), Options(symmetry=False), Options(deadlock=False,
                                                             clock_reduction=False)):
        one, two = both(spec, opts, workers)
        assert statuses(two) == want
        assert_same(one, two, str(opts))
    for name, status in want:
        one, two = both(spec, Options(query=name), workers)
        assert statuses(two) == [(name, status)]
        assert_same(one, two, name)


LIBRARY = {
    "sglang/deferred_release": "holds",
    "sglang/premature_ack": "violated",
    "classic/fischer": "holds",
    "vllm/lease_expired_read": "violated",
}
"""Library specs (none declares queries) with random queries over their variables."""


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_specs_with_random_queries(name: str) -> None:
    base = load(ROOT / "spec" / f"{name}.kvr")
    queries = _queries_for(base, random.Random(name), 6)
    text = (ROOT / "spec" / f"{name}.kvr").read_text() + "\n".join(queries) + "\n"
    spec = load_text(text, f"{name}.kvr")
    one, two = both(spec)
    assert one.verdict == LIBRARY[name]
    assert_same(one, two, name)
    assert [q.status for q in two.queries] == LIBRARY_STATUSES[name]


R, U, N = REACHABLE, UNREACHABLE, INCONCLUSIVE
LIBRARY_STATUSES = {
    "classic/fischer": [U, R, R, R, R, R],
    "sglang/deferred_release": [R, R, R, R, U, R],
    "sglang/premature_ack": [R, R, R, R, R, R],
    "vllm/lease_expired_read": [R, R, R, R, N, R],
}
"""Each query's status (``rq0`` to ``rq5``), the same in both runs."""


# ---- random models ---------------------------------------------------------------------------

SEEDS = range(60)
COVERED = (9, 10, 22, 54, 60, 108)
"""Seeds where a witness of the single-process run is a covered (or later retired)
zone: a larger zone of its discrete state is stored, possibly on another worker."""


@pytest.mark.parametrize("seed", [
    s if s < 10 or s in COVERED else pytest.param(s, marks=pytest.mark.slow)
    for s in sorted({*SEEDS, *COVERED})])
def test_random_models_with_queries(seed: int) -> None:
    spec = load_text(model_for_seed(seed, extended=True), "<generated>")
    for opts in (Options(), Options(symmetry=False, deadlock=False)):
        one, two = both(spec, opts, workers=2 + seed % 2)
        assert_same(one, two, f"seed {seed} {opts}")


@pytest.mark.parametrize("seed", [s if s % 12 == 0 else pytest.param(s, marks=pytest.mark.slow)
                                  for s in range(0, 60, 4)])
def test_random_models_one_query_at_a_time(seed: int) -> None:
    spec = load_text(model_for_seed(seed, extended=True), "<generated>")
    for q in spec.queries:
        one, two = both(spec, Options(query=q.name), workers=3)
        assert_same(one, two, f"seed {seed} {q.name}")


@pytest.mark.slow
def test_pinned_statuses_of_random_models() -> None:
    """The statuses over the first seeds (both runs agree on each, above): the
    comparison covers every kind of outcome."""
    got: dict[str, int] = {}
    for seed in SEEDS:
        spec = load_text(model_for_seed(seed, extended=True), "<generated>")
        _, two = both(spec)
        for q in two.queries:
            key = f"{two.verdict}/{q.status}"
            got[key] = got.get(key, 0) + 1
    assert got == PINNED


PINNED = {"violated/inconclusive": 32, "violated/reachable": 45, "holds/reachable": 24,
          "holds/unreachable": 19}


# ---- the command line ------------------------------------------------------------------------

def _same_but_distributed(d1: dict[str, Any], d2: dict[str, Any]) -> None:
    assert d2.pop("distributed")["workers"] == 2
    for d in (d1, d2):
        for k in ("seconds", "zones_per_second", "peak_memory_mib", "successors",
                  "successors_note"):
            d["stats"].pop(k)
    if d1["verdict"] == "violated":
        # The single-process run stops at the violation, the distributed one at the end
        # of its round: not the same counts.
        for d in (d1, d2):
            d.pop("stats"), d.pop("never_fired", None)
    assert d1 == d2


@pytest.mark.parametrize("first", [8, 9])
def test_cli_json_and_text_equal_single_process(first: int, tmp_path: Any) -> None:
    path = tmp_path / "early.kvr"
    path.write_text(EARLY.format(first=first, second=17 - first))
    c1, o1, e1 = run_cli("check", str(path), "--json", "-q")
    c2, o2, e2 = run_cli("check", str(path), "--json", "-q", "--workers", "2")
    assert (c1, e1) == (c2, e2) == (1, "")
    d1, d2 = json.loads(o1), json.loads(o2)
    assert [q["status"] for q in d2["queries"]] == (
        ["inconclusive"] if first == 8 else ["reachable"])
    _same_but_distributed(d1, d2)
    _, t1, _ = run_cli("check", str(path), "-q")
    _, t2, _ = run_cli("check", str(path), "-q", "--workers", "2")
    lines1, lines2 = t1.splitlines(), t2.splitlines()
    assert lines2[-1].startswith("distributed: 2 workers, ")
    assert lines2[:-2] == lines1[:-1]


def test_cli_handoff_json_and_witness(tmp_path: Any) -> None:
    spec = str(HANDOFF)
    c1, o1, _ = run_cli("check", spec, "--json", "-q")
    c2, o2, _ = run_cli("check", spec, "--json", "-q", "--workers", "2")
    assert c1 == c2 == 5
    _same_but_distributed(json.loads(o1), json.loads(o2))
    for args in (["--query", "landed_and_flying"], ["--query", "landed_unposted"]):
        c1, o1, _ = run_cli("check", spec, "--json", "-q", *args)
        c2, o2, _ = run_cli("check", spec, "--json", "-q", "--workers", "2", *args)
        assert c1 == c2
        d1, d2 = json.loads(o1), json.loads(o2)
        if d1["queries"][0]["status"] == "reachable":
            # Stopped at the witness: the counts differ.
            d1.pop("stats"), d2.pop("stats")
            d2.pop("distributed")
            assert d1 == d2
        else:
            _same_but_distributed(d1, d2)
    t1, t2 = tmp_path / "one.json", tmp_path / "two.json"
    run_cli("check", spec, "-q", "--witness", "both_flying", "--trace", str(t1))
    run_cli("check", spec, "-q", "--witness", "both_flying", "--trace", str(t2),
            "--workers", "2")
    assert json.loads(t1.read_text()) == json.loads(t2.read_text())

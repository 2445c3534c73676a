"""Random simulation and statistical model checking (``kvrace simulate``).

The estimator is checked against models whose violation probability has a closed
form; on the flagship, no violation is sampled where synthesis proves safety, and
every violation sampled replays in the exact zone semantics.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker import api
from checker.model.compiled import SpecModel
from checker.simulate import (
    Runner,
    SimConfig,
    Sprt,
    chernoff_runs,
    clopper_pearson,
    parse_distribution,
    simulate,
)
from checker.simulate.distributions import DistributionError

RACE = ROOT / "tests/sim/race.kvr"
RACE_EXP = ROOT / "tests/sim/race_exp.kvr"
DEFERRED = ROOT / "spec/sglang/deferred_release.kvr"
IMMEDIATE = ROOT / "spec/sglang/immediate_release.kvr"


# ---- the statistics ---------------------------------------------------------------------------


def test_clopper_pearson_known_values() -> None:
    lo, hi = clopper_pearson(5, 10, 0.95)
    assert (round(lo, 4), round(hi, 4)) == (0.1871, 0.8129)
    assert clopper_pearson(0, 10, 0.95)[0] == 0.0
    assert round(clopper_pearson(0, 10, 0.95)[1], 4) == 0.3085  # 1 - 0.025^(1/10)
    assert round(1 - 0.025 ** (1 / 10), 4) == 0.3085
    assert clopper_pearson(10, 10, 0.95)[1] == 1.0
    lo, hi = clopper_pearson(123, 1000, 0.99)
    assert lo < 0.123 < hi


def test_chernoff_hoeffding_runs() -> None:
    assert chernoff_runs(0.01, 0.05) == 18445
    assert chernoff_runs(0.1, 0.01) == 265


def test_sprt_decides_both_ways() -> None:
    rng = random.Random(1)
    high = Sprt(0.3, 0.05, 0.05, 0.05)
    while high.add(rng.random() < 0.5) is None:
        pass
    assert high.decision == "accept"
    low = Sprt(0.3, 0.05, 0.05, 0.05)
    while low.add(rng.random() < 0.1) is None:
        pass
    assert low.decision == "reject"
    with pytest.raises(ValueError):
        Sprt(0.005, 0.01, 0.05, 0.05)


def test_distributions_sample_inside_the_window() -> None:
    rng = random.Random(0)
    for text in ("uniform(1, 5)", "exp(2)", "lognormal(0, 1)"):
        d = parse_distribution(text)
        for _ in range(200):
            x = d.sample_in(rng, 2.0, 3.0)
            assert x is not None and 2.0 <= x <= 3.0
    assert parse_distribution("uniform(1, 2)").sample_in(rng, 3.0, 4.0) is None
    for bad in ("normal(0,1)", "exp(0)", "uniform(3,1)", "lognormal(0)", "exp(x)"):
        with pytest.raises(DistributionError):
            parse_distribution(bad)


def test_empirical_distribution(tmp_path: Path) -> None:
    f = tmp_path / "lat.csv"
    f.write_text("latency\n0.5\n1.5\n2.5\n")
    d = parse_distribution(f"empirical({f})")
    assert d.data == (0.5, 1.5, 2.5)
    rng = random.Random(0)
    assert {d.sample_in(rng, 1.0, 3.0) for _ in range(50)} == {1.5, 2.5}
    assert d.sample_in(rng, 3.0, 4.0) is None
    f.write_text("latency\n0.5\nfast\n")
    with pytest.raises(DistributionError, match=r"lat.csv:3"):
        parse_distribution(f"empirical({f})")


# ---- the estimator against closed forms --------------------------------------------------------


def _coverage(path: Path, exact: float, seeds: int, runs: int, confidence: float,
              config: SimConfig | None = None, **params: Fraction) -> tuple[int, int]:
    """Seeds whose interval covers ``exact``, and the total violations over all seeds."""
    model = SpecModel(api.load_spec(path), params)
    covered = total = 0
    with Runner(model, config or SimConfig()) as runner:
        for seed in range(seeds):
            res = simulate(runner, runs, seed, confidence)
            covered += res.lo <= exact <= res.hi
            total += res.violations
    return covered, total


@pytest.mark.slow
def test_interval_covers_two_uniform_delays_racing() -> None:
    # P(U[0,3] < U[0,2]) = 1/3.  At 90% confidence, Clopper-Pearson covers the exact
    # value in at least 90% of the seeds (it is conservative).
    covered, total = _coverage(RACE, 1 / 3, seeds=200, runs=100, confidence=0.9)
    assert covered >= 180
    assert abs(total / 20_000 - 1 / 3) < 0.01
    assert (covered, total) == (182, 6632)


@pytest.mark.slow
def test_interval_covers_uniform_against_exponential() -> None:
    # P(U[0,3] < Exp(1)) = (1 - e^-3) / 3: the default delay without an upper bound.
    exact = (1 - math.exp(-3)) / 3
    covered, total = _coverage(RACE_EXP, exact, seeds=200, runs=100, confidence=0.9)
    assert covered >= 180
    assert abs(total / 20_000 - exact) < 0.01
    assert (covered, total) == (188, 6335)


def test_interval_covers_a_user_distribution() -> None:
    # --delay A=exp(1) with A=10: fa fires at Exp(1) truncated to [0, 10], so
    # P(U[0,3] < X) = ((1 - e^-3) - 3 e^-10) / (3 (1 - e^-10)).
    exact = ((1 - math.exp(-3)) - 3 * math.exp(-10)) / (3 * (1 - math.exp(-10)))
    cfg = SimConfig(delays=(("A", parse_distribution("exp(1)")),))
    covered, total = _coverage(RACE, exact, seeds=100, runs=100, confidence=0.9, config=cfg,
                               A=Fraction(10))
    assert covered >= 90
    assert abs(total / 10_000 - exact) < 0.015
    assert (covered, total) == (93, 3193)


def test_an_event_distribution_is_its_delay_since_enabled() -> None:
    # fa is enabled from the start with x = 0, so `p.fa=exp(1)` draws exactly what
    # `A=exp(1)` draws: the same runs, the same counts.
    cfg = SimConfig(delays=(("p.fa", parse_distribution("exp(1)")),))
    assert _coverage(RACE, 0.3167, seeds=100, runs=100, confidence=0.9, config=cfg,
                     A=Fraction(10)) == (93, 3193)


def test_time_bound_cuts_runs() -> None:
    # With a time bound of 1, fb fires first by t=1 with probability
    # P(Ub < Ua, Ub <= 1) = integral_0^1 (1/3) (1 - u/2) du = 1/4.
    cfg = SimConfig(time_bound=1.0)
    covered, total = _coverage(RACE, 0.25, seeds=100, runs=100, confidence=0.9, config=cfg)
    assert covered >= 90
    assert abs(total / 10_000 - 0.25) < 0.015
    assert (covered, total) == (93, 2502)


# ---- the flagship --------------------------------------------------------------------------------


@pytest.mark.slow
def test_no_violation_inside_the_synthesised_safe_region() -> None:
    # At random values of the other parameters, synthesis over T_hold gives the exact
    # safe bound (T_hold > T_prop + T_chunk + T_flight); no run above it leaks.
    spec = api.load_spec(DEFERRED)
    rng = random.Random(7)
    for _ in range(3):
        tp, tc = (Fraction(rng.randint(0, 40), 4) for _ in range(2))
        tf = Fraction(rng.randint(1, 40), 4)
        others = {"T_prop": tp, "T_chunk": tc, "T_flight": tf}
        bound = api.safe_threshold(spec, "T_hold", others)
        assert bound is not None and bound.above and bound.strict
        assert bound.value == tp + tc + tf
        th = min(bound.value + Fraction(rng.randint(1, 8), 8), Fraction(40))
        res = api.simulate(spec, others, runs=300, seed=3, T_hold=th)
        assert res.violations == 0, (others, th)
    # On the bound itself a leak needs every delay at its maximum: probability 0.
    assert api.simulate(spec, runs=300, T_hold=7).violations == 0


def test_every_sampled_violation_replays_in_the_zone_explorer() -> None:
    for path, params in ((DEFERRED, {"T_hold": 4}), (DEFERRED, {"T_hold": 1}),
                         (IMMEDIATE, {})):
        spec = api.load_spec(path)
        res = api.simulate(spec, params, runs=300, seed=1, keep=300)
        assert res.violations == len(res.examples) > 0
        assert all(api.replays(spec, res, run) for run in res.examples)
        assert {r.prop for r in res.examples} == {"assert"}


@pytest.mark.slow
def test_sampled_invariant_and_response_violations_replay() -> None:
    for path, prop in (("spec/sglang/kv_checksum.kvr", "no_undetected_corruption"),
                       ("spec/sglang/strict_no_release_on_timeout.kvr", "bounded_release")):
        spec = api.load_spec(ROOT / path)
        res = api.simulate(spec, runs=150, seed=0, keep=150)
        assert res.violations > 0
        assert {e.prop for e in res.by_property} == {prop}
        assert all(api.replays(spec, res, run) for run in res.examples)


def test_flagship_estimate_is_pinned() -> None:
    res = api.simulate(DEFERRED, runs=2000, seed=0, T_hold=4)
    assert (res.runs, res.violations) == (2000, 82)
    assert res.ends == {"violation": 82, "quiescent": 1918, "time bound": 0, "step bound": 0}
    assert [e.first_run for e in res.by_property] == [19]


def test_results_do_not_depend_on_the_number_of_processes() -> None:
    spec = api.load_spec(DEFERRED)
    one = api.simulate(spec, runs=600, seed=5, T_hold=3, keep=50)
    two = api.simulate(spec, runs=600, seed=5, T_hold=3, keep=50, jobs=2)
    assert (one.violations, one.ends, one.steps) == (two.violations, two.ends, two.steps)
    assert [r.index for r in one.examples] == [r.index for r in two.examples]
    assert [r.path for r in one.examples] == [r.path for r in two.examples]


@pytest.mark.slow
def test_sprt_stops_in_run_order() -> None:
    spec = api.load_spec(DEFERRED)
    a = api.simulate(spec, runs=5000, seed=2, T_hold=0, sprt=Sprt(0.2, 0.05, 0.05, 0.05))
    assert a.sprt is not None and a.sprt.decision == "accept"
    assert a.runs == a.sprt.runs < 5000
    b = api.simulate(spec, runs=5000, seed=2, T_hold=0, sprt=Sprt(0.2, 0.05, 0.05, 0.05),
                     jobs=2)
    assert (b.runs, b.violations) == (a.runs, a.violations)


# ---- the command line ----------------------------------------------------------------------------


def test_cli_exit_codes(in_root: Path) -> None:
    code, out, _ = run_cli("simulate", "spec/sglang/deferred_release.kvr", "--runs", "200",
                           "-q")
    assert code == 0
    assert "NO VIOLATION SAMPLED in 200 runs: P(violation) <= 0.01828" in out
    assert "not a proof" in out
    code, out, _ = run_cli("simulate", "spec/sglang/deferred_release.kvr", "-p", "T_hold=2",
                           "--runs", "200", "-q")
    assert code == 1
    assert "VIOLATION SAMPLED in" in out
    for bad in (["--delay", "T_nope=exp(1)"], ["--delay", "T_flight=gauss(1)"],
                ["--delay", "decode.nope=exp(1)"],
                ["--runs", "0"], ["--confidence", "1"], ["--epsilon", "0.1"],
                ["--sweep", "T_hold=5:1:1"], ["--plot", "x.svg"], ["-p", "T_hold=99"],
                ["--sprt", "0.001"]):
        code, _, err = run_cli("simulate", "spec/sglang/deferred_release.kvr", *bad)
        assert code == 2, (bad, err)
        assert "Traceback" not in err


def test_cli_epsilon_delta_sets_the_runs(in_root: Path) -> None:
    code, out, _ = run_cli("simulate", "tests/sim/race.kvr", "--epsilon", "0.1", "--delta",
                           "0.05", "--json", "-q")
    doc = json.loads(out)
    assert code == 1
    assert doc["runs"] == chernoff_runs(0.1, 0.05) == 185
    assert doc["by_property"][0]["property"] == "assert"


def test_cli_traces_are_drawable(in_root: Path, tmp_path: Path) -> None:
    code, _, err = run_cli("simulate", "spec/sglang/deferred_release.kvr", "-p", "T_hold=4",
                           "--runs", "300", "--traces", str(tmp_path), "--max-traces", "2",
                           "-q")
    assert code == 1
    files = sorted(tmp_path.glob("run-*.json"))
    assert len(files) == 2, err
    doc = json.loads(files[0].read_text())
    assert doc["#meta"]["verdict"] == "violated"
    assert doc["states"][-1]["#meta"]["failure"].startswith("write of")
    code, _, err = run_cli("draw", str(files[0]), "-o", str(tmp_path / "run.dot"))
    assert code == 0, err
    assert "digraph trace" in (tmp_path / "run.dot").read_text()


@pytest.mark.slow
def test_cli_sweep_writes_csv_and_a_deterministic_plot(in_root: Path, tmp_path: Path) -> None:
    args = ["simulate", "spec/sglang/deferred_release.kvr", "--sweep", "T_hold=0:8:4",
            "--runs", "100", "-q"]
    code, out, _ = run_cli(*args, "--csv", str(tmp_path / "a.csv"), "--plot",
                           str(tmp_path / "a.svg"))
    assert code == 1
    assert "exact safe region (synth, T_hold free): T_hold > 7" in out
    rows = (tmp_path / "a.csv").read_text().splitlines()
    assert rows[0] == "T_hold,runs,violations,p,lo,hi"
    assert [r.split(",")[:3] for r in rows[1:]] == [["0", "100", "44"], ["4", "100", "4"],
                                                    ["8", "100", "0"]]
    run_cli(*args, "--plot", str(tmp_path / "b.svg"))
    a, b = (tmp_path / "a.svg").read_bytes(), (tmp_path / "b.svg").read_bytes()
    assert a == b
    assert a.startswith(b"<?xml")


def test_cli_model_error_is_bad_input(tmp_path: Path) -> None:
    spec = tmp_path / "fault.kvr"
    spec.write_text("model fault\ntype R = {a, b}\nactor p\nvar m : R -> bool = false\n"
                    "var x : R? = none\nevent p.go()\n  when not m[a]\n  do m[x] := true\n")
    code, _, err = run_cli("simulate", str(spec), "--runs", "10", "-q")
    assert code == 2
    assert "model error: p.go(): `none` dereferenced at" in err


def test_cli_sprt_line(in_root: Path) -> None:
    code, out, _ = run_cli("simulate", "spec/sglang/deferred_release.kvr", "-p", "T_hold=0",
                           "--sprt", "0.2", "--indifference", "0.05", "--runs", "5000", "-q")
    assert code == 1
    assert "SPRT P(violation) >= 0.2: accepted after" in out


@pytest.mark.slow
def test_simulation_study_data_reproduces_at_one_hold() -> None:
    # paper/data/simulation.json is regenerated by `python -m tools.artifacts`
    # (measurements); one of its rows is recomputed here, exactly.
    from tools.artifacts import simulation

    doc = json.loads((ROOT / simulation.DATA).read_text())
    spec, values, dist = simulation.scenario(ROOT)
    assert doc["delay"] == f"T_flight={dist}"
    row = next(r for r in doc["rows"] if r["T_hold"] == "1")
    cfg = SimConfig(delays=(("T_flight", parse_distribution(dist)),))
    model = SpecModel(spec, {**values, "T_hold": Fraction(1)})
    with Runner(model, cfg) as runner:
        res = simulate(runner, simulation.RUNS, simulation.SEED, simulation.CONFIDENCE)
    assert (res.runs, res.violations, res.lo, res.hi) == (row["runs"], row["violations"],
                                                          row["lo"], row["hi"])

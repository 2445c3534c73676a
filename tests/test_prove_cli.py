"""``kvrace prove`` and ``kvrace synth`` through :func:`checker.cli.main`.

* prove is refuted under a too weak assumption, and the parameter values it prints
  violate at the zone explorer; it proves the exact assumption and reports the bound
  tight with a boundary counterexample; ``--json`` carries the same facts;
* bad ``--assume`` text exits 2 with a positioned diagnostic on ``<--assume>``;
* limits give exit 3 (inconclusive), never 0;
* ``synth --json``: the ``smtlib`` field parses with Z3 and is the expected region.

The parametric exploration of deferred_release (about 20 s) is computed once per
session (``test_synth.deferred_synth``): ``checker.smt.synth.explore_parametric``
is wrapped so that a call with exactly the same arguments reuses it; every other call
(limits, other specs, other parameters) runs for real.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
import z3
from helpers import ROOT, run_cli
from test_synth import (
    DEFERRED_RANGES,
    DEFERRED_SAFE,
    FREE,
    RELAY,
    R,
    assumption_z3,
    deferred_synth,
    equivalent,
    in_range,
)

import checker.smt.synth as synth_module
from checker.api import check

DEFERRED = str(ROOT / "spec/sglang/deferred_release.kvr")
WEAK = "T_hold > T_prop + T_flight"
EXACT = "T_hold > T_prop + T_chunk + T_flight"

_real_explore = synth_module.explore_parametric


@pytest.fixture
def cached_deferred(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Reuse the session's deferred_release exploration for identical calls; returns
    the list of calls served from the cache."""
    hits: list[str] = []
    defaults = {"T_prop": 2, "T_chunk": 2, "T_flight": 3, "T_hold": 8}

    def explore(model, free, base=(), max_states=None, timeout=None, symmetry=True,
                deadlock=True, target=synth_module.EVERY_PROPERTY, merge=True):
        if (model.name == "deferred_release" and list(free) == FREE and not base
                and max_states is None and timeout is None and symmetry and deadlock
                and target == synth_module.EVERY_PROPERTY and merge
                and dict(model.values) == defaults):
            hits.append(model.name)
            return deferred_synth()
        return _real_explore(model, free, base, max_states, timeout, symmetry, deadlock,
                             target=target, merge=merge)

    monkeypatch.setattr(synth_module, "explore_parametric", explore)
    return hits


def parse_point(text: str) -> dict[str, Fraction]:
    """``T_prop=2, T_chunk=2.5`` as exact values (as printed)."""
    point = {}
    for part in text.split(","):
        name, _, value = part.strip().partition("=")
        point[name] = Fraction(value)
    return point


def window(p: dict[str, Fraction]) -> Fraction:
    return p["T_prop"] + p["T_chunk"] + p["T_flight"]


def within_ranges(p: dict[str, Fraction]) -> bool:
    return (0 <= p["T_prop"] <= 10 and 0 <= p["T_chunk"] <= 10 and 0 < p["T_flight"] <= 10
            and 0 <= p["T_hold"] <= 40)


def assert_violates(point: dict[str, Fraction], spec: str = DEFERRED) -> None:
    outcome = check(spec, point)  # type: ignore[arg-type]
    assert outcome.verdict == "violated", f"no violation at {point}: {outcome.summary()}"
    assert outcome.prop not in (None, "deadlock"), outcome.summary()


# ---- prove on the flagship ----------------------------------------------------------------

@pytest.mark.slow  # about a second: kept out of the quick subset
def test_prove_is_refuted_under_a_too_weak_assumption(cached_deferred: list[str]) -> None:
    code, out, err = run_cli("prove", DEFERRED, "--assume", WEAK)
    assert code == 1, out + err
    assert cached_deferred == ["deferred_release"]
    m = re.search(r"REFUTED: at (.*) \(inside the assumption\)", out)
    assert m is not None, out
    point = parse_point(m.group(1))
    assert set(point) == set(FREE)
    assert within_ranges(point)
    # Inside the assumption, outside the safe region ...
    assert point["T_hold"] > point["T_prop"] + point["T_flight"]
    assert point["T_hold"] <= window(point)
    # ... and the zone explorer confirms the violation at exactly the printed values.
    assert_violates(point)
    assert "write of A chunk 0 lands in slot s0 owned by B" in out


def test_prove_is_refuted_json(cached_deferred: list[str]) -> None:
    code, out, _ = run_cli("prove", DEFERRED, "--assume", WEAK, "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["status"] == "refuted"
    assert doc["assume"] == WEAK
    assert doc["free"] == FREE
    point = {k: Fraction(v) for k, v in doc["counterexample"].items()}
    assert point["T_hold"] > point["T_prop"] + point["T_flight"]
    assert point["T_hold"] <= window(point)
    assert_violates(point)
    assert doc["trace"]["states"], "the JSON carries the counterexample trace"
    # The same facts as the text output.
    _, text, _ = run_cli("prove", DEFERRED, "--assume", WEAK)
    m = re.search(r"REFUTED: at (.*) \(inside the assumption\)", text)
    assert m is not None and parse_point(m.group(1)) == point


def test_prove_holds_under_the_exact_assumption_and_the_bound_is_tight(
        cached_deferred: list[str]) -> None:
    code, out, err = run_cli("prove", DEFERRED, "--assume", EXACT)
    assert code == 0, out + err
    assert "PROVED" in out
    m = re.search(r"tight: a property breaks on its boundary, at (.*)", out)
    assert m is not None, out
    point = parse_point(m.group(1))
    assert within_ranges(point)
    assert point["T_hold"] == window(point), f"{point} is not on the boundary"
    assert_violates(point)
    # JSON: the same facts.
    code, out, _ = run_cli("prove", DEFERRED, "--assume", EXACT, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["status"] == "proved"
    assert "counterexample" not in doc
    boundary = {k: Fraction(v) for k, v in doc["boundary_counterexample"].items()}
    assert boundary == point
    assert cached_deferred == ["deferred_release"] * 2


def test_prove_equivalent_assumption_forms(cached_deferred: list[str]) -> None:
    # The same constraint written differently: moved terms, a conjunction, a scale.
    for text in ("T_hold - T_flight > T_prop + T_chunk",
                 "2 * T_hold > 2 * (T_prop + T_chunk + T_flight) and T_prop <= 10",
                 "T_prop + T_chunk + T_flight < T_hold"):
        code, out, err = run_cli("prove", DEFERRED, "--assume", text)
        assert code == 0, (text, out + err)
    # On the boundary (not strict) there is a counterexample.
    code, out, _ = run_cli("prove", DEFERRED, "--assume", "T_hold >= T_prop + T_chunk + T_flight")
    assert code == 1
    m = re.search(r"REFUTED: at (.*) \(inside the assumption\)", out)
    assert m is not None
    point = parse_point(m.group(1))
    assert point["T_hold"] == window(point)
    assert_violates(point)


# ---- bad --assume text ----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("assume", "code_id", "column"),
    [
        ("T_hodl > T_prop", "KVR101", 1),                      # unknown parameter
        ("T_hold > T_prop + T_flihgt", "KVR101", 19),          # unknown, not first
        ("T_hold * T_prop > 3", "KVR303", 1),                  # nonlinear
        ("T_hold > 3 / T_prop", "KVR303", 10),                 # nonlinear (division)
        ("T_hold > > 3", None, 10),                            # syntax error
        ("T_hold > 3 or T_prop < 2", "KVR201", 1),             # not a conjunction
        ("T_hold", "KVR201", 1),                               # not a comparison
    ],
)
def test_bad_assumption_is_a_positioned_error(assume: str, code_id: str | None,
                                              column: int) -> None:
    code, out, err = run_cli("prove", DEFERRED, "--assume", assume)
    assert code == 2, out + err
    assert out == ""
    m = re.search(r"<--assume>:(\d+):(\d+): error\[(KVR\d+)\]", err)
    assert m is not None, err
    assert int(m.group(1)) == 1
    assert int(m.group(2)) == column, err
    if code_id is not None:
        assert m.group(3) == code_id, err
    assert assume in err, "the diagnostic quotes the assumption"
    assert "^" in err


def test_unknown_free_parameter_is_bad_input() -> None:
    code, _, err = run_cli("prove", DEFERRED, "--assume", EXACT, "--free", "T_nope")
    assert code == 2
    assert "T_nope" in err


# ---- limits: inconclusive, never proved ----------------------------------------------------

@pytest.mark.parametrize("limit", [["--timeout", "0.001"], ["--max-states", "3"]])
@pytest.mark.parametrize("assume", [EXACT, WEAK])
def test_prove_limits_are_inconclusive(limit: list[str], assume: str) -> None:
    code, out, err = run_cli("prove", DEFERRED, "--assume", assume, *limit)
    assert code == 3, out + err
    assert "PROVED" not in out
    assert "INCONCLUSIVE" in out
    code, out, _ = run_cli("prove", DEFERRED, "--assume", assume, *limit, "--json")
    assert code == 3
    assert json.loads(out)["status"] == "inconclusive"


def test_synth_limit_is_inconclusive() -> None:
    code, out, _ = run_cli("synth", DEFERRED, "--max-states", "3", "--json")
    assert code == 3
    doc = json.loads(out)
    assert doc["complete"] is False
    assert doc["smtlib"] is None and doc["safe_region"] is None


# ---- synth --json ------------------------------------------------------------------------

def smtlib_region(text: str) -> z3.BoolRef:
    parsed = z3.parse_smt2_string(text)
    assert len(parsed) >= 1
    return z3.And(*parsed)


def test_synth_json_smtlib_is_the_flagship_region(cached_deferred: list[str]) -> None:
    code, out, err = run_cli("synth", DEFERRED, "--json")
    assert code == 0, err
    assert cached_deferred == ["deferred_release"]
    doc = json.loads(out)
    assert doc["complete"] is True
    assert doc["free"] == FREE
    region = smtlib_region(doc["smtlib"])
    assert equivalent(region, DEFERRED_SAFE)
    # The readable text says the same.
    assert equivalent(z3.And(DEFERRED_RANGES, assumption_z3(doc["safe_region"], FREE)),
                      DEFERRED_SAFE)


def test_synth_json_small_spec_end_to_end(tmp_path: Path) -> None:
    spec = tmp_path / "relay.kvr"
    spec.write_text(RELAY)
    ranges = z3.And(in_range("T_a", 0, 5), in_range("T_b", 0, 5), in_range("T_hold", 0, 20))
    code, out, err = run_cli("synth", str(spec), "--json")
    assert code == 0, err
    region = smtlib_region(json.loads(out)["smtlib"])
    assert equivalent(region, z3.And(ranges, R["T_hold"] > R["T_a"] + R["T_b"]))
    # With some parameters fixed.
    code, out, err = run_cli("synth", str(spec), "--json", "--free", "T_hold", "-p", "T_a=1.5",
                          "-p", "T_b=1/3")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["free"] == ["T_hold"]
    region = smtlib_region(doc["smtlib"])
    assert equivalent(region, z3.And(in_range("T_hold", 0, 20),
                                     R["T_hold"] > z3.RealVal("11/6")))


def test_prove_small_spec_with_fixed_parameters(tmp_path: Path) -> None:
    spec = tmp_path / "relay.kvr"
    spec.write_text(RELAY)
    base = ["prove", str(spec), "--free", "T_hold", "-p", "T_a=1", "-p", "T_b=2"]
    code, out, _ = run_cli(*base, "--assume", "T_hold > 3")
    assert code == 0, out
    m = re.search(r"tight: a property breaks on its boundary, at (.*)", out)
    assert m is not None
    point = parse_point(m.group(1))
    assert point == {"T_a": 1, "T_b": 2, "T_hold": 3}
    assert_violates(point, str(spec))
    # A fixed parameter inside the assumption is substituted: T_hold > T_a + 1 = 2.
    code, out, _ = run_cli(*base, "--assume", "T_hold > T_a + 1")
    assert code == 1, out
    m = re.search(r"REFUTED: at (.*) \(inside the assumption\)", out)
    assert m is not None
    point = parse_point(m.group(1))
    assert 2 < point["T_hold"] <= 3
    assert_violates(point, str(spec))


# ---- exactness and honesty of what prove / synth print ------------------------------------

# Safe exactly when 3 * T_a < 1: every breaking point has T_a >= 1/3, a value that
# no decimal expansion represents exactly.
THIRD = """model third
actor a
param T_a in [0, 10] = 0
var ph : {s0, s1, s2} = s0
clock x
event a.bad() when ph == s0 and x >= 1 do ph := s2
event a.escape() when ph == s0 do ph := s1
deadline x <= 3 * T_a while ph == s0
invariant ok: ph != s2
"""


def test_printed_counterexample_values_are_exact(tmp_path: Path) -> None:
    spec = tmp_path / "third.kvr"
    spec.write_text(THIRD)
    assert check(str(spec), {"T_a": Fraction(1, 3)}).verdict == "violated"
    code, out, _ = run_cli("prove", str(spec), "--assume", "T_a >= 0")
    assert code == 1, out
    m = re.search(r"REFUTED: at (.*) \(inside the assumption\)", out)
    assert m is not None, out
    assert_violates(parse_point(m.group(1)), str(spec))


def test_synth_region_text_is_exact(tmp_path: Path) -> None:
    spec = tmp_path / "third.kvr"
    spec.write_text(THIRD)
    code, out, _ = run_cli("synth", str(spec), "--json")
    assert code == 0
    doc = json.loads(out)
    exact = z3.And(in_range("T_a", 0, 10), z3.Real("T_a") < z3.RealVal("1/3"))
    assert equivalent(smtlib_region(doc["smtlib"]), exact)  # the SMT-LIB is exact
    text = z3.And(in_range("T_a", 0, 10), assumption_z3(doc["safe_region"], ["T_a"]))
    assert equivalent(text, exact), doc["safe_region"]


@pytest.mark.parametrize("assume", ["T_hold > 15", "T_hold == T_a + T_b + 1"])
def test_not_tight_claim_is_true(tmp_path: Path, assume: str) -> None:
    spec = tmp_path / "relay.kvr"
    spec.write_text(RELAY)
    code, out, _ = run_cli("prove", str(spec), "--assume", assume)
    assert code == 0, out
    # Outside the assumption there is a violation, e.g. at the defaults with T_hold = 1.
    outside = {"T_a": Fraction(1), "T_b": Fraction(1), "T_hold": Fraction(1)}
    assert_violates(outside, str(spec))
    assert "no violation anywhere in the ranges outside it" not in out, out


ERRORING = """model erroring
actor a
param T in [0, 10] = 1
var n : 0..2 = 0
clock x
event a.inc() when x >= T do n := n + 1; reset x
"""


@pytest.mark.parametrize("command", [["prove", "--assume", "T > 1"], ["synth"]])
def test_model_runtime_error_is_exit_2(tmp_path: Path, command: list[str]) -> None:
    spec = tmp_path / "erroring.kvr"
    spec.write_text(ERRORING)
    assert run_cli("check", str(spec))[0] == 2  # check reports it as bad input
    code, _, err = run_cli(command[0], str(spec), *command[1:])
    assert code == 2
    assert "outside 0..2" in err


# Safe exactly when 3 * T_a <= 1: the bad region 3 * T_a > 1 is open at the boundary.
THIRD_CLOSED = THIRD.replace("x >= 1 do ph := s2", "x > 1 do ph := s2")


def test_tight_when_violations_only_approach_a_closed_boundary(tmp_path: Path) -> None:
    spec = tmp_path / "third_closed.kvr"
    spec.write_text(THIRD_CLOSED)
    assert check(str(spec), {"T_a": Fraction(1, 3)}).verdict == "holds"
    code, out, _ = run_cli("prove", str(spec), "--assume", "3 * T_a <= 1")
    assert code == 0, out
    m = re.search(r"tight: no violation on its boundary itself, but violations arbitrarily"
                  r" close to it, e.g. at (.*)", out)
    assert m is not None, out
    point = parse_point(m.group(1))
    assert Fraction(1, 3) < point["T_a"] <= Fraction(1, 3) + Fraction(1, 1000)
    assert_violates(point, str(spec))
    code, out, _ = run_cli("prove", str(spec), "--assume", "3 * T_a <= 1", "--json")
    doc = json.loads(out)
    assert doc["tight"] is True and "near_boundary_counterexample" in doc
    # A strictly stronger assumption is not tight.
    code, out, _ = run_cli("prove", str(spec), "--assume", "T_a <= 0.3")
    assert code == 0 and "not tight" in out, out

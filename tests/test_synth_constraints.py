"""``assume`` constraints on the parameters, as IMITATOR's initial constraints.

* synthesis starts inside them: a violation that needs values outside is never
  found (no bad piece, coverage ``all``), and the region with them equals the region
  without them intersected with them (Z3) — the differential check, on the root
  contention model and on small models;
* ``prove --assume`` is conjoined with them;
* ``check -p`` and ``simulate`` refuse a value outside one (exit 2, the constraint's
  ``file:line:col``); ``synth``/``prove`` refuse fixed values that leave no free value
  (KVR309).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker.language import load_text
from checker.model.compiled import ParamError, SpecModel
from checker.results import Coverage
from checker.smt import synth as sy

ROOT_CONTENTION = ROOT / "benchmarks/models/root_contention.kvr"

# Breaks only when T <= 3; the constraint keeps T above 3.
LOW = """model low
actor a
param T in [0, 10] = 5
param U in [0, 10] = 6
assume T > 3 and U >= T
var n : 0..1 = 0
clock x
event a.bad() when x >= T and x <= 3 do assert n == 1: "early"
event a.late() when x >= U and x <= 7 do assert n == 1: "late"
"""


def _plain(text: str) -> str:
    """The spec without its ``assume`` lines."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("assume "))


def _synth(text: str, path: str = "<spec>") -> sy.SynthResult:
    spec = load_text(text, path)
    result = sy.explore_parametric(SpecModel(spec, concrete=False),
                                   [p.name for p in spec.params])
    assert result.complete
    return result


def _write(tmp_path: Path, text: str, name: str = "low") -> str:
    path = tmp_path / f"{name}.kvr"
    path.write_text(text)
    return str(path)


def test_nothing_outside_the_constraint_is_explored() -> None:
    with_it = _synth(LOW)
    without = _synth(_plain(LOW))
    # Without the constraint, T <= 3 is bad; with it, that part is never reached ...
    assert any(sy.lin_text(c, ["T", "U"]) == "T <= 3" for piece in without.bad.pieces
               for c in piece), without.bad.pieces
    assert all(sy.lin_text(c, ["T", "U"]) != "T <= 3" for piece in with_it.bad.pieces
               for c in piece), with_it.bad.pieces
    # ... and inside it the two runs agree.
    assert sy.same_safe_values(with_it, without, with_it.ranges)
    assert len(with_it.bad.pieces) < len(without.bad.pieces)
    assert sy.coverage(with_it) is Coverage.SOME


@pytest.mark.slow  # about a second: kept out of the quick subset
def test_root_contention_region_with_and_without_its_constraint() -> None:
    text = ROOT_CONTENTION.read_text(encoding="utf-8")
    with_it = _synth(text, str(ROOT_CONTENTION))
    without = _synth(_plain(text))
    assert sy.same_safe_values(with_it, without, with_it.ranges)
    assert with_it.stats.symbolic_states < without.stats.symbolic_states
    order = ["delay", "fast_min", "fast_max", "slow_min", "slow_max"]
    assert sy.region_text(sy.safe_region(with_it), order) == \
        "slow_min > delay + fast_max and fast_min > 0"


def test_synth_prints_the_constraints_it_covers(tmp_path: Path) -> None:
    spec = _write(tmp_path, LOW)
    code, out, _ = run_cli("synth", spec)
    assert code == 0, out
    assert "  within T in [0, 10], U in [0, 10], assuming T > 3 and U >= T\n" in out, out
    code, out, _ = run_cli("synth", spec, "--json")
    doc = json.loads(out)
    assert doc["verdict"] == "holds" and doc["coverage"] == "some"


def test_prove_conjoins_the_constraints(tmp_path: Path) -> None:
    spec = _write(tmp_path, LOW)
    # `U > 7` is enough inside the constraint (T > 3 keeps `bad` off) ...
    code, out, _ = run_cli("prove", spec, "--assume", "U > 7")
    assert code == 0 and "PROVED" in out, out
    # ... but not without it: T <= 3 breaks.
    plain = _write(tmp_path, _plain(LOW), "plain")
    code, out, _ = run_cli("prove", plain, "--assume", "U > 7")
    assert code == 1 and "REFUTED" in out, out
    # An assumption that contradicts the spec's constraints is vacuous: an error.
    code, _, err = run_cli("prove", spec, "--assume", "U < 3")
    assert code == 2 and "KVR309" in err and "the spec's `assume` constraints" in err, err


def test_check_and_simulate_refuse_values_outside(tmp_path: Path) -> None:
    spec = _write(tmp_path, LOW)
    code, out, err = run_cli("check", spec, "-p", "T=2")
    assert code == 2 and out == ""
    assert f"T=2 does not satisfy `assume T > 3` ({spec}:5:8)" in err, err
    code, out, _ = run_cli("check", spec, "-p", "U=4", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["verdict"] == "error"
    assert "`assume U >= T`" in doc["errors"][0]["message"]
    code, _, err = run_cli("simulate", spec, "-p", "T=1", "--runs", "5")
    assert code == 2 and "does not satisfy `assume T > 3`" in err, err
    code, _, err = run_cli("simulate", spec, "--sweep", "T=2:6:1", "--runs", "5")
    assert code == 2 and "T=2" in err, err
    assert run_cli("check", spec, "-p", "T=4", "-p", "U=8")[0] == 0
    with pytest.raises(ParamError, match="assume T > 3"):
        SpecModel(load_text(LOW, "<low>"), {"T": 3})


def test_fixed_values_leaving_no_free_value_are_refused(tmp_path: Path) -> None:
    spec = _write(tmp_path, LOW)
    code, _, err = run_cli("synth", spec, "--free", "U", "-p", "T=4", "--json")
    assert code == 0, err
    code, out, err = run_cli("synth", spec, "--free", "T", "-p", "U=2")
    assert code == 2 and out == "", out
    assert f"{spec}:5:18:" in err and "error[KVR309]" in err and "with U=2" in err, err
    code, _, err = run_cli("prove", spec, "--free", "T", "-p", "U=2", "--assume", "T > 5")
    assert code == 2 and "KVR309" in err, err


def test_show_lists_the_constraints(tmp_path: Path) -> None:
    code, out, _ = run_cli("show", _write(tmp_path, LOW))
    assert code == 0
    assert "  U in [0, 10] = 6\n  assume T > 3\n  assume U >= T\n" in out, out

"""The contract of ``synth`` and ``prove`` at the edges of the parameter space.

* ``synth`` with no safe parameter value is *violated* (exit 1), never ``holds``:
  also when the bad pieces cover the ranges only together, and when a limit cut the
  run short but the unsafe values found already cover the ranges;
* the JSON's ``coverage`` says whether the region is ``all``, ``some`` or ``none``
  of the ranges, checked against an independent Z3 query on the region;
* ``prove --assume A`` where no value in the ranges satisfies ``A`` is an error
  (KVR309, exit 2), never PROVED.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import z3
from helpers import ROOT, run_cli
from test_synth import assumption_z3, in_range

from checker import api
from checker.diagnostics import SpecError
from checker.model.compiled import SpecModel
from checker.results import Coverage
from checker.smt import synth as sy
from checker.smt.lin import Lin, param_var

IMMEDIATE = str(ROOT / "spec/sglang/immediate_release.kvr")
FENCE_COMPLETED = str(ROOT / "docs/tutorial/fence_completed.kvr")
THIRD_SPEC = """model third
actor a
param T_a in [0, 10] = 0
var ph : {s0, s1, s2} = s0
clock x
event a.go() when ph == s0 and x >= 1 and x <= 2 do ph := s1; reset x
event a.late() when ph == s1 and x >= T_a do ph := s2
event a.bad() when ph == s2 do assert false: "too late"
"""

# Two events break a property on complementary halves of T's range: no single bad
# piece covers the range, their union does.
SPLIT = """model split
actor a
param T in [0, 10] = 5
var n : 0..1 = 0
clock x
event a.low() when x >= T and x <= 5 do assert n == 1: "low"
event a.high() when x >= 5 and x <= T do assert n == 1: "high"
"""
# The same with a gap: T in (5, 6) is safe.
GAPPED = SPLIT.replace("x >= 5 and x <= T", "x >= 6 and x <= T")


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.kvr"
    path.write_text(text)
    return str(path)


def _region_is_empty(doc: dict[str, object]) -> bool:
    """Independently of ``coverage``: whether the printed region has no point in the
    ranges (T in [0, 10])."""
    if doc["safe_region"] == "false":
        return True
    s = z3.Solver()
    s.add(in_range("T", 0, 10), assumption_z3(str(doc["safe_region"]), ["T"]))
    return s.check() == z3.unsat


def test_synth_with_no_safe_value_is_violated() -> None:
    code, out, _ = run_cli("synth", IMMEDIATE)
    assert code == 1, out
    assert out.splitlines()[1] == "VIOLATED: no parameter value in the ranges is safe"
    assert "SAFE REGION: empty" in out
    code, out, _ = run_cli("synth", IMMEDIATE, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1
    assert doc["verdict"] == "violated" and doc["coverage"] == "none"
    assert doc["complete"] is True and doc["safe_region"] == "false"


def test_bad_pieces_covering_the_ranges_together_are_violated(tmp_path: Path) -> None:
    spec = _write(tmp_path, "split", SPLIT)
    result = sy.explore_parametric(SpecModel(api.load_spec(spec)), ["T"])
    assert result.complete and len(result.bad.pieces) == 2
    assert sy.coverage(result) is Coverage.NONE
    assert sy.safe_region(result) == [[]]
    code, out, _ = run_cli("synth", spec, "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["coverage"]) == (1, "violated", "none")
    assert _region_is_empty(doc)


def test_some_and_all_coverage(tmp_path: Path) -> None:
    spec = _write(tmp_path, "gapped", GAPPED)
    code, out, _ = run_cli("synth", spec, "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["coverage"]) == (0, "holds", "some")
    assert not _region_is_empty(doc)
    s = z3.Solver()  # the region is exactly 5 < T < 6
    T = z3.Real("T")
    s.add(z3.Not(assumption_z3(str(doc["safe_region"]), ["T"]) == z3.And(T > 5, T < 6)),
          in_range("T", 0, 10))
    assert s.check() == z3.unsat, doc["safe_region"]
    code, out, _ = run_cli("synth", FENCE_COMPLETED, "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["coverage"], doc["safe_region"]) == (
        0, "holds", "all", "true")


def _result(complete: bool, pieces: list[list[Lin]]) -> sy.SynthResult:
    t = param_var("T")
    ranges = [Lin.make({t: Fraction(-1)}, Fraction(0), False),
              Lin.make({t: Fraction(1)}, Fraction(-10), False)]
    return sy.SynthResult(complete, ["T"], ranges, sy.Region(pieces), sy.SynthStats())


def _le(k: int) -> Lin:
    """T <= k."""
    return Lin.make({param_var("T"): Fraction(1)}, Fraction(-k), False)


def _gt(k: int) -> Lin:
    """T > k."""
    return Lin.make({param_var("T"): Fraction(-1)}, Fraction(k), True)


@pytest.mark.parametrize(("complete", "pieces", "expected"), [
    (True, [], Coverage.ALL),
    (False, [], None),
    (True, [[_le(4)]], Coverage.SOME),
    (False, [[_le(4)]], None),
    (True, [[_le(4)], [_gt(4)]], Coverage.NONE),
    # A limit cut the run short, but the unsafe values found cover the ranges already.
    (False, [[_le(4)], [_gt(4)]], Coverage.NONE),
    (True, [[_le(4)], [_gt(5)]], Coverage.SOME),
])
def test_coverage_of_bad_regions(complete: bool, pieces: list[list[Lin]],
                                 expected: Coverage | None) -> None:
    assert sy.coverage(_result(complete, pieces)) is expected


def test_prove_under_an_assumption_no_value_satisfies_is_an_error(tmp_path: Path) -> None:
    spec = _write(tmp_path, "third", THIRD_SPEC)
    code, out, err = run_cli("prove", spec, "--assume", "T_a > 20")
    assert code == 2 and out == "", out
    assert "<--assume>:1:1: error[KVR309]: no parameter value in the ranges (T_a in [0, 10])" \
        " satisfies the assumption" in err
    assert "PROVED" not in out + err
    code, out, _ = run_cli("prove", spec, "--assume", "T_a > 5 and T_a < 4", "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"]) == (2, "error")
    assert doc["errors"][0]["code"] == "KVR309"
    # A fixed parameter's value counts: T_a = 0 is outside `T_a >= 1`.
    two = _write(tmp_path, "two", THIRD_SPEC.replace(
        "param T_a in [0, 10] = 0", "param T_a in [0, 10] = 0\nparam T_b in [0, 10] = 0"))
    code, _, err = run_cli("prove", two, "--free", "T_b", "--assume", "T_a >= 1 and T_b < 3")
    assert code == 2, err
    assert "(T_b in [0, 10]), with T_a=0 satisfies" in err, err
    with pytest.raises(SpecError, match="KVR309"):
        api.prove(spec, "T_a >= 11")
    # An assumption touching the range at one point is not vacuous.
    code, out, _ = run_cli("prove", spec, "--assume", "T_a >= 10")
    assert code in (0, 1) and "vacuous" not in out, out

"""Integer arithmetic (``/``, ``%``), ordered types and structural constants: exact
values, run-time faults, ``-p`` for constants, ``show``, the Python API."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import run_cli
from oracle import compare_models

from checker import api
from checker.diagnostics import SpecError
from checker.language import load_text
from checker.model import ir
from checker.model.compiled import ParamError, SpecModel
from checker.model.interface import ModelRuntimeError
from checker.model.interp import InterpretedModel

DIVS = """model divs
actor a
var x: -10..10 = -7
var q1: -10..10 = 0
var q2: -10..10 = 0
var q3: -10..10 = 0
var m1: -10..10 = 0
var m2: -10..10 = 0
var m3: -10..10 = 0
var k: -10..10 = 0
event a.go() when q1 == 0 do
  q1 := x / 2; q2 := 7 / (0 - 2); q3 := x / (0 - 2)
  m1 := x % 3; m2 := 7 % (0 - 3); m3 := x % (0 - 3)
  k := (0 - 9) / 4 * 4 + (0 - 9) % 4
"""


def _fire_once(model: SpecModel | InterpretedModel) -> dict[str, object]:
    (s,) = model.initial_states()
    (edge,) = model.edges(s)
    return model.describe(edge.target)


@pytest.mark.parametrize("kind", ["compiled", "interpreted"])
def test_division_truncates_toward_zero_and_modulo_has_the_dividends_sign(kind: str) -> None:
    spec = load_text(DIVS, "divs.kvr")
    model = SpecModel(spec) if kind == "compiled" else InterpretedModel(spec)
    got = _fire_once(model)
    assert {k: got[k] for k in ("q1", "q2", "q3", "m1", "m2", "m3", "k")} == {
        "q1": "-3", "q2": "-3", "q3": "3", "m1": "-1", "m2": "1", "m3": "-1", "k": "-9"}


def test_divide_helper_matches_c() -> None:
    cases = [(7, 2, 3, 1), (-7, 2, -3, -1), (7, -2, -3, 1), (-7, -2, 3, -1), (0, 5, 0, 0)]
    for a, b, q, m in cases:
        assert (ir.divide("/", a, b, ""), ir.divide("%", a, b, "")) == (q, m)
    with pytest.raises(ZeroDivisionError, match="modulo by zero at here"):
        ir.divide("%", 1, 0, "here")


def test_constant_operands_are_folded_with_the_same_semantics() -> None:
    spec = load_text("model m\nactor a\nvar x: -5..5 = 0\n"
                     "event a.go() do x := (0 - 7) / 2 + (0 - 7) % 3\n", "m.kvr")
    (st,) = spec.events[0].body
    assert isinstance(st, ir.Assign) and st.value == ir.Const(-4)


DIV_ZERO = """model z
actor a
var d: 0..3 = 1
var x: 0..9 = 0
event a.dec() when d > 0 do d := d - 1
event a.div() when x == 0 do x := 6 / d
"""


def test_division_by_zero_is_a_model_error_with_its_site_and_trace(tmp_path: Path) -> None:
    path = tmp_path / "z.kvr"
    path.write_text(DIV_ZERO)
    code, out, _ = run_cli("check", str(path))
    assert code == 2
    assert f"MODEL ERROR: a.div(): division by zero at {path}:6:37" in out
    assert "a  dec()" in out  # the trace leads to d = 0
    outcome = api.check(path)
    assert outcome.verdict == api.ERROR
    assert outcome.message == f"a.div(): division by zero at {path}:6:37"


def test_division_by_zero_agrees_in_compiled_and_interpreted_models() -> None:
    spec = load_text(DIV_ZERO, "z.kvr")
    cmp = compare_models(spec)
    assert cmp.problems == [] and cmp.complete
    interp = InterpretedModel(spec)
    s = (0, 0)
    with pytest.raises(ModelRuntimeError, match=r"division by zero at z\.kvr:6:37"):
        interp.edges(s)


def test_assignment_out_of_range_names_the_variable_value_and_range(tmp_path: Path) -> None:
    path = tmp_path / "r.kvr"
    path.write_text("model r\nactor a\nvar x: 0..5 = 0\nevent a.up() do x := x * 2 + 1\n")
    code, out, _ = run_cli("check", str(path))
    assert code == 2
    assert (f"MODEL ERROR: a.up(): value 7 outside 0..5 (the range of `x`) at"
            f" {path}:4:22") in out


ORDERED = """model o
ordered type Rank = {r0, r1, r2}
actor a
var rk: Rank = r0
var top: bool = false
event a.up() when rk < r2 do rk := rk + 1
event a.down() when rk >= r1 and not top do rk := rk - 1; top := rk == r0
event a.over() when top do rk := rk + 2
"""


def test_ordered_type_compares_and_steps_and_faults_past_its_end() -> None:
    spec = load_text(ORDERED, "o.kvr")
    (rank,) = spec.types
    assert rank.ordered and rank.is_ordered and not rank.symmetric
    assert compare_models(spec).problems == []
    outcome = api.check(spec)
    assert outcome.verdict == api.ERROR
    assert outcome.message == ("a.over(): `rk + 2` leaves the ordered type Rank (r0..r2) at"
                               " o.kvr:8:34")


RING = """model ring
const N in 2..6 = 3
type Node = 0..N-1
param D in [1, 10] = 2
actor node
var token: Node = 0
var served: Node -> bool = false
clock x
event node.pass() when x >= 1 and x <= D do
  served[token] := true; token := (token + 1) % N; reset x
deadline x <= D
invariant fair: forall i: Node . served[i] or i >= token or token == 0
"""


def test_const_from_p_sizes_the_model_with_pinned_state_counts(tmp_path: Path) -> None:
    path = tmp_path / "ring.kvr"
    path.write_text(RING)
    counts = {}
    for n in (2, 4):
        code, out, _ = run_cli("check", str(path), "-p", f"N={n}", "-p", "D=3")
        assert code == 0, out
        assert out.startswith(f"model ring  (N={n}, D=3)\nHOLDS")
        counts[n] = out.split("explored ", 1)[1].split(" states")[0]
    assert counts == {2: "4", 4: "8"}  # 2N: token positions, before and after a full round
    assert SpecModel(load_text(RING, "ring.kvr", {"N": Fraction(5)})).state_size == 6


FISCHER = Path(__file__).resolve().parent / "regressions" / "fischer_const.kvr"


def test_fischer_with_a_const_number_of_processes() -> None:
    states = {}
    for n in (2, 3, 4):
        outcome = api.check(FISCHER, {"N": n})
        assert outcome.verdict == api.HOLDS
        assert outcome.spec.consts[0].value == n
        states[n] = outcome.stats.states
    assert states == {2: 10, 3: 18, 4: 28}
    broken = api.check(FISCHER, N=3, K=1)
    assert broken.verdict == api.VIOLATED and broken.prop == "mutex"


def test_api_elaborates_a_loaded_spec_again_for_another_const() -> None:
    spec = api.load_spec(FISCHER)
    assert [(c.name, c.value, c.default, c.range_text()) for c in spec.consts] == [
        ("N", 3, 3, "2..6")]
    outcome = api.check(spec, {"N": 2})
    assert outcome.spec.consts[0].value == 2 and outcome.stats.states == 10
    with pytest.raises(SpecError, match=r"-p N=9 is outside the declared range 2\.\.6"):
        api.check(spec, {"N": 9})
    with pytest.raises(ValueError, match="structural constant"):
        api.synth(spec, free=["N"])
    syn = api.synth(FISCHER, {"N": 2}, free=["D", "K"])
    assert syn.region == "D < K"


def test_model_refuses_a_const_it_was_not_elaborated_with() -> None:
    spec = api.load_spec(FISCHER)
    SpecModel(spec, {"N": Fraction(3)})  # the value it has: accepted
    with pytest.raises(ParamError, match="`N` is a structural constant"):
        SpecModel(spec, {"N": Fraction(4)})
    with pytest.raises(ParamError, match=r"unknown parameter `M` \(the spec declares: D, K, N\)"):
        SpecModel(spec, {"M": Fraction(4)})


def test_cli_const_errors_exit_2(in_root: Path) -> None:
    spec = "tests/regressions/fischer_const.kvr"
    code, out, err = run_cli("check", spec, "-p", "N=9")
    assert code == 2 and out == ""
    assert err.startswith(f"{spec}:5:7: error[KVR308]: -p N=9 is outside the declared range"
                          " 2..6 of `N`")
    code, _, err = run_cli("check", spec, "-p", "N=2.5")
    assert code == 2 and "`N` is an integer constant" in err
    code, _, err = run_cli("check", spec, "-p", "M=2")
    assert code == 2
    assert "unknown parameter `M` (the spec declares: D, K, N)" in err
    code, _, err = run_cli("synth", spec, "--free", "N")
    assert code == 2 and "`N` is a structural constant" in err


def test_synth_and_prove_with_a_const_set_by_p(in_root: Path) -> None:
    spec = "tests/regressions/fischer_const.kvr"
    code, out, _ = run_cli("synth", spec, "-p", "N=2", "--free", "D,K")
    assert code == 0 and "SAFE REGION: D < K" in out
    code, out, _ = run_cli("prove", spec, "-p", "N=2", "--free", "D,K", "--assume", "D < K")
    assert code == 0 and "PROVED" in out


def test_show_lists_constants_and_ordered_types(in_root: Path) -> None:
    code, out, _ = run_cli("show", "tests/regressions/fischer_const.kvr", "-p", "N=4")
    assert code == 0
    assert "types:\n  symmetric Proc = {1, 2, 3, 4}\nconstants:\n  N in 2..6 = 4 (default 3)\n" \
           "parameters:\n  D in [1, 10] = 2\n  K in [1, 10] = 3\n" in out
    code, out, _ = run_cli("show", "tests/regressions/fischer_const.kvr", "--json")
    doc = json.loads(out)
    assert doc["consts"] == [{"name": "N", "value": 3, "default": 3, "range": "2..6"}]
    assert doc["types"][0]["values"] == ["1", "2", "3"]


def test_constants_in_types_ranges_and_clock_bounds() -> None:
    spec = load_text("""model c
const N in 1..8 = 4
const K = N * 2 - 1
type Chunk = 0..N-1
param T in [0, 10] = 1
actor a
var c: Chunk = N - 1
var w: 0..K = K
clock x
event a.go() when x <= T + N / 2 and c < N - 1 do c := c + 1
""", "c.kvr")
    chunk = spec.types[0]
    assert (chunk.name, chunk.lo, chunk.hi) == ("Chunk", 0, 3)
    assert [(v.name, v.value.base.lo, v.value.base.hi, v.init) for v in spec.vars] == [
        ("c", 0, 3, 3), ("w", 0, 7, 7)]
    (br,) = spec.events[0].branches
    assert str(br.clocks[0].bound) == "T + 2"

"""Soundness: the IR interpreter as an oracle, and regressions of wrong verdicts.

Every model under ``tests/regressions/`` once got a wrong verdict or crashed;
each is pinned here with its right verdict.  The interpreter
(:mod:`checker.model.interp`) is compared with the compiled model state by state
on every spec of the library, and the integer-time reference explorer runs on
the interpreter, so a compilation bug cannot hide behind the shared code.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from oracle import compare_models
from reference import reference_explore

from checker.engines import explore
from checker.language import load, load_text
from checker.model import compiled as compiled_mod
from checker.model import ir
from checker.model.compiled import ParamError, SpecModel
from checker.model.interface import ModelRuntimeError
from checker.model.interp import InterpretedModel
from checker.smt.synth import explore_parametric, safe_region

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
SPECS = sorted((ROOT / "spec").rglob("*.kvr"))


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


# ---- the interpreter agrees with the compiled model --------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("path", SPECS + sorted(REGRESSIONS.glob("*.kvr")),
                         ids=lambda p: p.stem)
def test_interpreter_agrees_with_compiled_model(path: Path) -> None:
    spec = load(path)
    got = compare_models(spec, max_states=1500)
    assert not got.problems, "\n".join(got.problems)
    if got.states == 0:  # only a model whose initial state errs, in both models
        with pytest.raises(ModelRuntimeError):
            SpecModel(spec).initial_states()
        with pytest.raises(ModelRuntimeError):
            InterpretedModel(spec, SpecModel(spec).values).initial_states()


def _shallow_reads_state(e: ir.Expr) -> bool:
    # The old hand-written walk: it did not look inside `in {...}` or quantifiers.
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Read):
            return True
        if isinstance(x, (ir.Some, ir.InRange, ir.Unary)):
            stack.append(x.operand)
        elif isinstance(x, ir.Binary):
            stack.extend((x.left, x.right))
    return False


def test_the_oracle_catches_a_clock_index_evaluated_once(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """With the old static-index walk the compiled model is wrong; the comparison and
    the reference explorer on the interpreter both show it."""
    spec = load(REGRESSIONS / "clock_index_in_member.kvr")
    monkeypatch.setattr(compiled_mod.ir, "reads_state", _shallow_reads_state)
    got = compare_models(spec)
    assert any(p.startswith("deadlines differ") for p in got.problems), got.problems
    assert explore(SpecModel(spec)).verdict == "holds"  # the wrong verdict of old
    ref = reference_explore(InterpretedModel(spec), exhaustive=True, deadlock=True)
    assert (ref.verdict, ref.prop) == ("violated", "assert")


# ---- regressions -------------------------------------------------------------------------------

def test_clock_index_in_member_is_violated(in_root: Path) -> None:
    code, out, _ = run_cli("check", rel(REGRESSIONS / "clock_index_in_member.kvr"))
    assert code == 1 and "VIOLATED: assert: fin reached" in out


@pytest.mark.parametrize("value", ["3", "3.3333333333333335", "10/3", "2.9999999999999999999"])
def test_rational_parameters_never_overflow_the_zones(in_root: Path, value: str) -> None:
    code, out, _ = run_cli("check", rel(REGRESSIONS / "rational_overflow.kvr"), "-p",
                           f"A={value}")
    assert code == 1 and "VIOLATED: deadlock" in out


def test_a_deadlock_trace_says_until_when_time_may_pass(in_root: Path) -> None:
    code, out, _ = run_cli("check", rel(REGRESSIONS / "rational_overflow.kvr"))
    assert code == 1 and "VIOLATED: deadlock: no event can fire and time cannot pass" in out
    assert "the deadlines let time pass until t=300 at most (x <= 300)" in out


def test_a_denominator_beyond_exact_zones_is_refused(in_root: Path) -> None:
    code, out, err = run_cli("check", rel(REGRESSIONS / "rational_overflow.kvr"), "-p",
                             "A=1/" + "7" * 28)
    assert code == 2 and out == ""
    assert "too large for exact zones" in err and "Traceback" not in err


def test_short_circuit_guard_holds(in_root: Path) -> None:
    code, out, _ = run_cli("check", rel(REGRESSIONS / "short_circuit_guard.kvr"))
    assert code == 0 and "HOLDS" in out


def test_short_circuit_means_the_same_with_and_without_a_clock() -> None:
    text = (REGRESSIONS / "short_circuit_guard.kvr").read_text()
    untimed = text.replace("(f[o] and x >= 1)", "f[o]")
    for t in (text, untimed):
        assert explore(SpecModel(load_text(t, "<m>"))).verdict == "holds"


def test_an_unreached_faulting_clock_index_is_no_error(in_root: Path) -> None:
    code, out, err = run_cli("check", rel(REGRESSIONS / "unreached_clock_index.kvr"))
    assert (code, err) == (0, "") and "HOLDS" in out


def test_a_reached_faulting_clock_index_is_a_model_error(in_root: Path) -> None:
    code, out, err = run_cli("check", rel(REGRESSIONS / "reached_clock_index.kvr"))
    assert code == 2 and "Traceback" not in out + err
    where = "tests/regressions/reached_clock_index.kvr:8:49"
    assert f"MODEL ERROR: p.go(1): value 2 outside 0..1 at {where}" in out


# ---- exact rationals against exact synthesis ---------------------------------------------------

DEFERRED = ROOT / "spec" / "sglang" / "deferred_release.kvr"


def _inside(cnf: list[list[object]], point: dict[str, Fraction]) -> bool:
    def holds(c: object) -> bool:
        total = c.const + sum(a * point[v.removeprefix("p:")] for v, a in c.coefs)  # type: ignore[attr-defined]
        return bool(total < 0 if c.strict else total <= 0)  # type: ignore[attr-defined]
    return all(any(holds(c) for c in clause) for clause in cnf)


@pytest.mark.slow
def test_adversarial_rationals_agree_with_synthesis() -> None:
    """Values with huge denominators, on and next to the synthesized boundary and the
    range ends: the zone explorer's verdict is the synthesized region's."""
    spec = load(DEFERRED)
    base = SpecModel(spec)
    free = ["T_flight", "T_hold"]
    result = explore_parametric(base, free)
    assert result.complete
    cnf = safe_region(result)
    r = random.Random(11)
    points: list[dict[str, Fraction]] = []
    for _ in range(6):
        flight = Fraction(r.randrange(1, 10**13), 10**12 + r.randrange(10**11))
        flight = min(flight, Fraction(10))
        on = base.values["T_prop"] + base.values["T_chunk"] + flight
        eps = Fraction(1, 10**r.randrange(6, 15))
        points += [{"T_flight": flight, "T_hold": on + d} for d in (-eps, Fraction(0), eps)]
    points.append({"T_flight": Fraction(10), "T_hold": Fraction(40)})
    points.append({"T_flight": Fraction(1, 10**25), "T_hold": Fraction(4)})
    seen = set()
    for point in points:
        want = _inside(cnf, point)
        got = explore(SpecModel(spec, point)).verdict
        assert got == ("holds" if want else "violated"), point
        seen.add(want)
    assert seen == {True, False}


def test_parameter_values_are_checked_when_the_model_is_built() -> None:
    spec = load(REGRESSIONS / "rational_overflow.kvr")
    with pytest.raises(ParamError, match="beyond 2\\^100"):
        SpecModel(spec, {"A": Fraction(1, 3**70)})


# ---- synthesis and proof cover deadlocks -------------------------------------------------------

@pytest.mark.parametrize(("name", "region"), [("timelocked_start", "D >= 5"),
                                              ("parametric_deadlock", "A >= B")])
def test_synth_excludes_deadlocks(in_root: Path, name: str, region: str) -> None:
    path = rel(REGRESSIONS / f"{name}.kvr")
    code, out, _ = run_cli("synth", path)
    assert code == 0 and f"SAFE REGION: {region}\n" in out
    assert "covers: every assert, invariant and bounded response, and deadlock freedom" in out
    code, out, _ = run_cli("synth", path, "--no-deadlock")
    assert code == 0 and "SAFE REGION: every parameter value in the ranges" in out


def test_prove_refutes_a_timelocked_start(in_root: Path) -> None:
    path = rel(REGRESSIONS / "timelocked_start.kvr")
    code, out, _ = run_cli("prove", path, "--assume", "D < 5")
    assert code == 1 and "REFUTED: at D=4" in out
    assert "the initial state breaks a deadline" in out
    code, out, _ = run_cli("prove", path, "--assume", "D >= 5")
    assert code == 0 and "PROVED" in out


def test_prove_refutes_a_parametric_deadlock(in_root: Path) -> None:
    code, out, _ = run_cli("prove", rel(REGRESSIONS / "parametric_deadlock.kvr"),
                           "--assume", "A >= B - 1")
    assert code == 1 and "REFUTED" in out and "deadlock" in out


# ---- vacuity ---------------------------------------------------------------------------------

def test_a_holds_whose_events_never_fire_says_so(in_root: Path, tmp_path: Path) -> None:
    text = DEFERRED.read_text().replace("  when write[r, k] == flying\n",
                                        "  when write[r, k] == flying and false\n")
    assert "and false" in text
    broken = tmp_path / "broken_land.kvr"
    broken.write_text(text)
    code, out, _ = run_cli("check", str(broken), "--no-deadlock")
    assert code == 0 and "HOLDS" in out
    assert "warning: these events never fired" in out and "decode.land" in out
    code, out, _ = run_cli("check", str(broken), "--no-deadlock", "--json")
    assert json.loads(out)["never_fired"] == ["decode.land", "decode.finish"]


def test_a_holds_that_exercises_every_event_has_no_warning(in_root: Path) -> None:
    code, out, _ = run_cli("check", rel(DEFERRED), "--strict")
    assert code == 0 and "warning" not in out
    code, out, _ = run_cli("check", rel(DEFERRED), "--json")
    doc = json.loads(out)
    assert doc["never_fired"] == doc["never_active_deadlines"] == doc["never_triggered"] == []
    assert doc["vacuous"] is False


def test_strict_gives_a_vacuous_holds_its_own_exit_code(in_root: Path, tmp_path: Path) -> None:
    text = DEFERRED.read_text().replace("  when write[r, k] == flying\n",
                                        "  when write[r, k] == flying and false\n")
    broken = tmp_path / "broken_land.kvr"
    broken.write_text(text)
    code, out, _ = run_cli("check", str(broken), "--no-deadlock", "--strict")
    assert code == 4 and "HOLDS" in out and "decode.land" in out
    code, out, _ = run_cli("check", str(broken), "--no-deadlock", "--strict", "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["exit_code"], doc["vacuous"]) == (4, "holds", 4, True)


VACUOUS = ROOT / "tests" / "vacuity" / "vacuous.kvr"


def test_deadlines_never_active_and_responses_never_triggered_are_named() -> None:
    path = VACUOUS
    code, out, _ = run_cli("check", str(path))
    assert code == 0 and "HOLDS" in out
    assert ("warning: these deadlines were active in no reachable state, so they never"
            " bounded time: stuck") in out
    assert ("warning: the trigger of these bounded responses held in no reachable state,"
            " so they hold vacuously: answered") in out
    assert "events never fired" not in out
    code, out, _ = run_cli("check", str(path), "--json", "--strict")
    doc = json.loads(out)
    assert code == 4
    assert (doc["never_fired"], doc["never_active_deadlines"], doc["never_triggered"]) == (
        [], ["stuck"], ["answered"])

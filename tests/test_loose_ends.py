"""One number syntax, events without `()`, the `-p` and argument typos, counted nouns,
and no "(please report)" note for a legitimate input."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker import numbers
from checker.diagnostics import SpecError
from checker.language import ast, load_text
from checker.language.syntax import parse

IMMEDIATE = str(ROOT / "spec/sglang/immediate_release.kvr")


def _write(tmp_path: Path, text: str, name: str = "m.kvr") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# ---- numbers ---------------------------------------------------------------------------


def test_the_grammar_reads_numbers_as_the_command_line_does() -> None:
    grammar = (ROOT / "checker/language/kvrace.lark").read_text(encoding="utf-8")
    assert f"UNUMBER: /{numbers.LITERAL}/" in grammar


@pytest.mark.parametrize(("text", "value"), [
    ("1e3", Fraction(1000)), ("1e-29", Fraction(1, 10**29)), ("2.5E+1", Fraction(25)),
    ("1.5e-2", Fraction(3, 200)), ("7", Fraction(7)), ("0.25", Fraction(1, 4)),
])
def test_a_spec_literal_has_the_value_of_the_same_cli_number(text: str,
                                                           value: Fraction) -> None:
    spec = parse(f"model m\nactor p\nparam T in [0, 1e30] = {text}\n")
    d = spec.decls[-1]
    assert isinstance(d, ast.ParamDecl) and d.default == value
    assert numbers.parse_number(text) == value


@pytest.mark.parametrize(("text", "why"), [
    ("1e31", "an exponent outside [-30, 30]"), ("1e-31", "an exponent outside [-30, 30]"),
    ("1" * 31, "more than 30 digits"),
])
def test_a_spec_literal_is_bounded_like_a_cli_number(text: str, why: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(f"model m\nactor p\nparam T = {text}\n", "t.kvr")
    d = exc.value.diagnostics[0]
    assert (d.code, d.message) == ("KVR008", f"number with {why}")
    assert d.span is not None and (d.span.line, d.span.column) == (3, 11)
    with pytest.raises(ValueError):
        numbers.parse_number(text)


def test_an_exponent_in_a_guard_is_checked(tmp_path: Path) -> None:
    spec = _write(tmp_path, "model n\nactor a\nvar x: 0..2 = 0\nclock c\n"
                  "event a.e when x == 0 and c >= 15e-1 do x := 1\n"
                  "reachable early: x == 1\n")
    code, out, _ = run_cli("check", spec)
    assert code == 0
    assert "    1  t=1.5     a  e()" in out


# ---- events without () -------------------------------------------------------------------


def test_a_flat_event_without_parameters_needs_no_parentheses() -> None:
    bare = load_text("model m\nactor p\nvar x: 0..1 = 0\nevent p.go when x == 0 do x := 1\n")
    paren = load_text("model m\nactor p\nvar x: 0..1 = 0\nevent p.go() when x == 0 do x := 1\n")
    assert [e.label for e in bare.events] == [e.label for e in paren.events] == ["p.go"]
    assert bare.events[0].params == paren.events[0].params == ()
    other = parse("model m\nactor p\nevent p.go do skip\nevent p.stop receives p.go() do skip\n")
    assert [d.name for d in other.decls if isinstance(d, ast.EventDecl)] == ["go", "stop"]


# ---- the command line ---------------------------------------------------------------------


def test_a_parameter_given_twice_is_refused() -> None:
    code, out, err = run_cli("check", IMMEDIATE, "-q", "-p", "T_prop=1", "-p", "T_prop=4")
    assert (code, out) == (2, "")
    assert err == ("-p T_prop is given twice (T_prop=1 and T_prop=4); give each parameter"
                   " once\n")


def test_an_unknown_parameter_gets_a_did_you_mean() -> None:
    code, _, err = run_cli("check", IMMEDIATE, "-q", "-p", "T_prp=1")
    assert code == 2
    assert err.endswith("unknown parameter `T_prp` (the spec declares: T_prop, T_chunk,"
                        " T_flight); did you mean `T_prop`?\n")


def test_unrecognized_arguments_name_the_subcommand_and_suggest() -> None:
    code, _, err = run_cli("check", IMMEDIATE, "--no-symetry")
    assert (code, err) == (2, "kvrace check: unrecognized arguments: --no-symetry; did you"
                           " mean `--no-symmetry`?\n")
    code, _, err = run_cli("synth", IMMEDIATE, "--zzz")
    assert (code, err) == (2, "kvrace synth: unrecognized arguments: --zzz\n")
    code, _, err = run_cli("chek", IMMEDIATE)
    assert code == 2 and err.endswith("; did you mean `check`?\n")


def test_counts_of_one_are_singular(tmp_path: Path) -> None:
    spec = _write(tmp_path, "model one\nactor a\nvar x: 0..1 = 0\n"
                  "event a.e when x == 0 do x := 1\n")
    code, out, _ = run_cli("check", spec)
    assert code == 0
    assert re.search(r"^explored 2 states, 2 zones, 1 transition in ", out, re.M)
    quiet = _write(tmp_path, "model still\nactor a\nvar x: 0..1 = 0\n"
                   "event a.e when x == 1 do x := 0\n", "n.kvr")
    code, out, _ = run_cli("check", quiet)
    assert re.search(r"^explored 1 state, 1 zone, 0 transitions in ", out, re.M)


# ---- no "(please report)" for a legitimate input -------------------------------------------


def test_an_initial_state_that_breaks_a_deadline_is_timed_at_zero(tmp_path: Path) -> None:
    spec = _write(tmp_path, "model d\nparam D in [0, 10] = 2\nactor a\nvar x: 0..3 = 0\n"
                  "clock c\nevent a.e when x == 0 and c >= 5 do x := 1\n"
                  "deadline late: c < D while x == 0\n")
    code, out, err = run_cli("check", spec, "-p", "D=0")
    assert code == 2 and err == ""
    assert "please report" not in out and "timestamps unavailable" not in out
    assert ("MODEL ERROR: the initial state breaks a deadline: time cannot even start:"
            " broken at t=0 by deadline late (c < D (= 0))") in out
    assert "    0  t=0          initial state\n" in out
    code, out, _ = run_cli("check", spec, "-p", "D=0", "--json")
    assert code == 2 and "please report" not in out


# ---- the docs say what the tools do -------------------------------------------------------


def test_the_tutorial_says_what_synth_covers_as_synth_says_it() -> None:
    from checker.present.text import covers

    text = " ".join((ROOT / "docs/tutorial.md").read_text(encoding="utf-8").split())
    assert f"covers: {covers(False)}" in text  # the output the prose explains
    claim = re.search(r"`synth` and `prove` cover ([^;.]*)", text)
    assert claim is not None
    assert "deadlock freedom" in claim[1]
    assert not re.search(r"deadlock freedom is checked by `check` only", text)


def test_a_refutation_whose_concrete_check_hits_a_limit_is_not_a_disagreement() -> None:
    import dataclasses

    from checker import api
    from checker.present.reports import ProveReport
    from checker.present.text import prove_text
    from checker.results import ProofStatus, Verdict
    from checker.smt.synth import SynthStats

    ok = api.check(ROOT / "spec/sglang/deferred_release.kvr", T_hold=7)
    limited = dataclasses.replace(ok, verdict=Verdict.INCONCLUSIVE,
                                  message="state limit (10) reached", trace=None)
    point = {"T_prop": Fraction(2), "T_chunk": Fraction(2), "T_flight": Fraction(3),
             "T_hold": Fraction(7)}
    report = ProveReport(model="deferred_release", assume="T_hold > 6", free=["T_hold"],
                         fixed={}, status=ProofStatus.REFUTED, witness=limited,
                         counterexample=point, boundary=None, near=None, outside=None,
                         vacuous=False, limit=None, stats=SynthStats(), no_deadlock=False)
    text = prove_text(report)
    assert "please report" not in text
    assert ("INCONCLUSIVE: the concrete check at T_prop=2, T_chunk=2, T_flight=3, T_hold=7"
            " did not decide (state limit (10) reached)") in text
    holds = dataclasses.replace(limited, verdict=Verdict.HOLDS, message=None)
    assert "disagree" in prove_text(dataclasses.replace(report, witness=holds))


def test_interrupt_and_synth_lines_count_in_the_singular() -> None:
    from checker.cli.signals import explored_text, interrupted_line
    from checker.engines import Stats
    from checker.present.text import parametric_stats_text
    from checker.smt.synth import SynthStats

    one = Stats(states=1, zones=1, seconds=0.5)
    assert explored_text(one) == ("; had explored at least 1 state, 1 zone in 0.5 s, with no"
                                  " violation")
    assert interrupted_line("check", 2, one).endswith(
        "(had explored at least 1 state, 1 zone in 0.5 s)")
    assert parametric_stats_text(SynthStats(1, 1, 0, 1, 0.5)) == (
        "1 discrete state, 1 symbolic state, 1 solver query, 0.5 s")
    assert parametric_stats_text(SynthStats(2, 3, 0, 4, 1.0)) == (
        "2 discrete states, 3 symbolic states, 4 solver queries, 1.0 s")

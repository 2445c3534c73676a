"""``kvrace fmt``: canonical, idempotent, meaning-preserving; the committed specs are
formatted; broken input is refused with lint's diagnostics."""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from pathlib import Path

import fuzz
import pytest
from helpers import ROOT, run_cli
from modelgen import model_for_seed

from checker.diagnostics import Span, SpecError
from checker.language import load_text
from checker.language.fmt import format_text, tokens

COMMITTED = sorted([*(ROOT / "spec").rglob("*.kvr"), *(ROOT / "docs" / "liveness").glob("*.kvr")])
"""The specs the repository ships: they are formatted."""

ALL_KVR = sorted({*COMMITTED, *(ROOT / "tests").rglob("*.kvr")})


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _parses(path: Path) -> bool:
    try:
        format_text(path.read_text(encoding="utf-8"))
    except (SpecError, UnicodeDecodeError):
        return False
    return True


@functools.cache
def parseable() -> tuple[Path, ...]:
    """The ``.kvr`` files of the repository that parse (built on first use, not when the
    module is collected)."""
    return tuple(p for p in ALL_KVR if _parses(p))


def shape(obj: object) -> object:
    """An elaborated model as nested tuples, each span and site cut to its lines
    (formatting moves columns, never lines)."""
    if isinstance(obj, Span):
        return ("span", obj.line, obj.end_line)
    if isinstance(obj, str):
        return re.sub(r"(:\d+):\d+\b", r"\1", obj)  # a site, `file:line:col`
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (type(obj).__name__, *(
            (f.name, shape(getattr(obj, f.name))) for f in dataclasses.fields(obj)
            if f.compare))
    if isinstance(obj, (tuple, list)):
        return tuple(shape(x) for x in obj)
    if isinstance(obj, dict):
        return tuple(sorted((repr(k), shape(v)) for k, v in obj.items()))
    if isinstance(obj, (frozenset, set)):
        return tuple(sorted(repr(shape(x)) for x in obj))
    return obj


def scramble(text: str, rng: random.Random) -> str:
    """``text`` with its whitespace shuffled but its tokens and lines kept: every gap
    of one or more blanks becomes 1-3 blanks, some tight pairs get a blank, and lines
    are re-indented (alignment is lost, meaning is not)."""
    out = []
    for line in text.split("\n"):
        toks = tokens(line)
        if not toks:
            out.append("")
            continue
        parts = [" " * rng.randrange(0, 4)]
        for i, tok in enumerate(toks):
            if i:
                before = toks[i - 1]
                gap = tok.column - (before.column + len(before.text))
                if gap or tok.kind == "comment":
                    parts.append(" " * rng.randrange(1, 4))
                elif tok.kind in ("name", "number", "keyword") and before.kind in (
                        "name", "number", "keyword"):
                    parts.append("")  # never reached: adjacent words are one token
                else:
                    parts.append(" " * rng.randrange(0, 2))
            parts.append(tok.text)
        out.append("".join(parts) + " " * rng.randrange(0, 2))
    return "\n".join(out)


def test_committed_specs_are_formatted() -> None:
    unformatted = [_rel(p) for p in COMMITTED
                   if format_text(p.read_text(encoding="utf-8"), _rel(p))
                   != p.read_text(encoding="utf-8")]
    assert len(COMMITTED) > 40
    assert not unformatted, f"run `kvrace fmt {' '.join(unformatted)}`"


@pytest.mark.slow
def test_formatting_is_idempotent() -> None:
    assert len(parseable()) > 150
    for path in parseable():
        once = format_text(path.read_text(encoding="utf-8"), _rel(path))
        assert format_text(once) == once, _rel(path)


def test_formatting_fixes_spacing_and_keeps_lines() -> None:
    messy = ("model   m\n\n"
             "type R={a,b}\n"
             "actor p\n"
             "var x:R ->0..3=0   # a comment\n"
             "clock c:R\n"
             "event p.go( r:R )\n"
             "     when x[ r ]<3 and forall q:R.x[q]>=0\n"
             "        do x[r]:=x[r]+1 ; reset c[ r ]\n"
             "  if x[r]==3 {x[r]:=-1+1}\n"
             "deadline soon(r:R):c[r]<=2 while x[r]>0\n\n\n")
    want = ("model m\n\n"
            "type R = {a, b}\n"
            "actor p\n"
            "var x : R -> 0..3 = 0 # a comment\n"
            "clock c : R\n"
            "event p.go(r: R)\n"
            "  when x[r] < 3 and forall q: R . x[q] >= 0\n"
            "  do x[r] := x[r] + 1; reset c[r]\n"
            "  if x[r] == 3 { x[r] := -1 + 1 }\n"
            "deadline soon(r: R): c[r] <= 2 while x[r] > 0\n")
    assert format_text(messy) == want
    assert shape(load_text(messy)) == shape(load_text(want))


def test_alignment_is_kept_when_it_fits_and_dropped_when_not() -> None:
    text = ("model m\n"
            "param a   in [0, 1] = 1   # first\n"
            "param bbb in [0, 1] = 1   # second\n")
    assert format_text(text) == text
    grown = text.replace("param a   in", "param aaaaaa in")
    assert format_text(grown).split("\n")[1] == "param aaaaaa in [0, 1] = 1   # first"


def test_process_bodies_are_indented_by_depth() -> None:
    text = ("model m\nprocess P {\n        location idle, busy\n    clock x\n"
            "event go from idle to busy\n      do reset x\n}\n")
    assert format_text(text) == ("model m\nprocess P {\n  location idle, busy\n  clock x\n"
                                 "  event go from idle to busy\n    do reset x\n}\n")


@pytest.mark.slow
def test_formatting_scrambled_specs_gives_the_same_model() -> None:
    # The committed specs are their own formatting: scramble their whitespace first,
    # then the formatted text must elaborate to the model of the original.
    for path in COMMITTED:
        text = path.read_text(encoding="utf-8")
        rng = random.Random(_rel(path))
        messy = scramble(text, rng)
        assert messy != text, _rel(path)
        formatted = format_text(messy, _rel(path))
        assert format_text(formatted) == formatted, _rel(path)
        assert shape(load_text(formatted, _rel(path))) == shape(load_text(text, _rel(path))), (
            _rel(path))


@pytest.mark.slow
def test_generated_models_format_idempotently_to_the_same_model() -> None:
    for seed in range(40):
        text = model_for_seed(seed)
        once = format_text(text)
        assert format_text(once) == once, seed
        assert shape(load_text(once)) == shape(load_text(text)), seed


@pytest.mark.slow
def test_many_generated_models_format_idempotently() -> None:
    for seed in range(40, 120):
        text = model_for_seed(seed)
        once = format_text(text)
        assert format_text(once) == once, seed
        assert shape(load_text(once)) == shape(load_text(text)), seed


def _mutants(count: int) -> list[str]:
    seeds = fuzz.corpus()
    return [fuzz.lint_input(33, i, seeds)[1] for i in range(count)]


def _fmt_mutant(text: str) -> None:
    try:
        once = format_text(text, "mutant.kvr")
    except SpecError as err:
        assert err.diagnostics and all(d.code.startswith("KVR") for d in err.diagnostics)
        return
    assert format_text(once) == once
    try:
        before = shape(load_text(text, "mutant.kvr"))
    except SpecError as err:
        with pytest.raises(SpecError) as again:
            load_text(once, "mutant.kvr")
        lines = [(d.code, d.span.line if d.span else None) for d in err.diagnostics]
        assert [(d.code, d.span.line if d.span else None)
                for d in again.value.diagnostics] == lines
        return
    assert shape(load_text(once, "mutant.kvr")) == before


@pytest.mark.slow
def test_mutants_are_refused_or_formatted_without_changing_meaning() -> None:
    for text in _mutants(150):
        _fmt_mutant(text)


@pytest.mark.slow
def test_many_mutants_are_refused_or_formatted_without_changing_meaning() -> None:
    for text in _mutants(800):
        _fmt_mutant(text)


# ---- the command line --------------------------------------------------------------------


def test_cli_check_and_diff_report_and_change_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "m.kvr"
    messy = "model m\nactor a\nvar x:0..3=0\nevent a.go() do x:=1\n"
    spec.write_text(messy)
    code, out, _ = run_cli("fmt", "--check", str(spec))
    assert (code, out) == (1, f"{spec}: would be reformatted\n")
    code, out, _ = run_cli("fmt", "--diff", str(spec))
    assert code == 1
    assert out.endswith(" model m\n actor a\n-var x:0..3=0\n-event a.go() do x:=1\n"
                        "+var x : 0..3 = 0\n+event a.go() do x := 1\n")
    assert spec.read_text() == messy
    code, out, _ = run_cli("fmt", str(tmp_path))
    assert (code, out) == (0, f"{spec}: reformatted\n")
    assert spec.read_text() == format_text(messy)
    assert run_cli("fmt", "--check", str(spec)) == (0, "", "")


@pytest.mark.slow
def test_cli_check_passes_on_the_committed_specs() -> None:
    code, out, err = run_cli("fmt", "--check", str(ROOT / "spec"), str(ROOT / "docs/liveness"))
    assert (code, out, err) == (0, "", "")


@pytest.mark.parametrize("name", ["syntax_missing_do.kvr", "syntax_not_utf8.kvr",
                                  "syntax_bad_hole.kvr", "syntax_empty.kvr"])
def test_cli_refuses_a_broken_file_with_lints_diagnostics(tmp_path: Path, name: str) -> None:
    path = ROOT / "tests" / "diagnostics" / name
    before = path.read_bytes()
    code, out, err = run_cli("fmt", str(path))
    lint_code, _, lint_err = run_cli("lint", str(path))
    assert (code, out) == (2, "")
    assert lint_code == 2 and err == lint_err and re.search(r":\d+:\d+: error\[KVR", err)
    assert path.read_bytes() == before


def test_cli_missing_file_is_bad_input() -> None:
    code, _, err = run_cli("fmt", "/nonexistent/x.kvr")
    assert code == 2 and "KVR000" in err and "no such file" in err

"""Robustness of the front end: no input gives a traceback.

* A Hypothesis property test mutates the flagship specs (tokens, characters,
  lines) and checks that ``load_text`` either succeeds — and then the compiled
  model builds and runs its first step — or raises ``SpecError`` whose every
  diagnostic points inside the file.
* Hostile inputs (binary garbage, invalid UTF-8, huge files, very deep
  nesting) give positioned diagnostics and exit code 2 through the CLI, fast.
* Whatever nesting the front end accepts, the compiled model can compile
  (Python has its own limits on nested parentheses and indentation).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import FLAGSHIPS, ROOT, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.diagnostics import SpecError
from checker.language import load, load_text
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.model.interface import ModelRuntimeError

SOURCES = [(ROOT / p).read_text(encoding="utf-8") for p in FLAGSHIPS]
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|[A-Za-z_][A-Za-z0-9_]*|[0-9]+(?:\.[0-9]+)?'
    r"|:=|==|!=|<=|>=|=>|->|\.\.|\S"
)
TOKENS = [[m for m in _TOKEN.finditer(s) if not m.group().startswith("#")] for s in SOURCES]
ODD_CHARS = [*"()[]{}.,:;=<>!?-+*/#\"'\\ \n\tx0_&|@$%", "\x00", "\r", "\x7f", "\u00e9",
             "\u200b", "\ufeff", "\u4e2d"]


def check_diagnostics(source: str, error: SpecError) -> None:
    """Every diagnostic names the file and a span inside it; rendering works."""
    lines = source.split("\n")
    assert error.diagnostics
    for d in error.diagnostics:
        assert d.file == "mutant.kvr"
        assert d.span is not None, d
        sp = d.span
        assert 1 <= sp.line <= len(lines), d
        assert 1 <= sp.column <= len(lines[sp.line - 1]) + 1, d
        assert (sp.end_line, sp.end_column) > (sp.line, sp.column), d
        assert re.fullmatch(r"KVR\d{3}", d.code)
    text = error.render()
    assert text.endswith("found")


def check_source(source: str) -> str:
    """Load ``source``; on success, build the model and take its first step."""
    try:
        spec = load_text(source, "mutant.kvr")
    except SpecError as e:
        check_diagnostics(source, e)
        return "error"
    model = SpecModel(spec)
    try:
        for state in model.initial_states():
            model.edges(state)
            model.deadlines(state)
            model.violations(state)
    except ModelRuntimeError:
        return "runtime error"
    return "ok"


@st.composite
def mutants(draw: st.DrawFn) -> str:
    which = draw(st.integers(0, len(SOURCES) - 1))
    s = SOURCES[which]
    for _ in range(draw(st.integers(1, 3))):
        toks = [m for m in _TOKEN.finditer(s) if not m.group().startswith("#")]
        kind = draw(st.sampled_from(
            ["del_tok", "dup_tok", "swap_tok", "other_tok", "del_chr", "ins_chr", "rep_chr",
             "del_line"]
        ))
        if kind in ("del_tok", "dup_tok", "other_tok"):
            m = toks[draw(st.integers(0, len(toks) - 1))]
            if kind == "del_tok":
                s = s[: m.start()] + s[m.end():]
            elif kind == "dup_tok":
                s = s[: m.end()] + " " + m.group() + s[m.end():]
            else:
                other = draw(st.sampled_from(TOKENS[which])).group()
                s = s[: m.start()] + other + s[m.end():]
        elif kind == "swap_tok":
            i = draw(st.integers(0, len(toks) - 2))
            a, b = toks[i], toks[i + 1]
            s = s[: a.start()] + b.group() + s[a.end(): b.start()] + a.group() + s[b.end():]
        elif kind == "del_line":
            lines = s.split("\n")
            del lines[draw(st.integers(0, len(lines) - 1))]
            s = "\n".join(lines)
        else:
            i = draw(st.integers(0, len(s) - 1))
            ch = draw(st.sampled_from(ODD_CHARS))
            if kind == "del_chr":
                s = s[:i] + s[i + 1:]
            elif kind == "ins_chr":
                s = s[:i] + ch + s[i:]
            else:
                s = s[:i] + ch + s[i + 1:]
    return s


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@pytest.mark.slow
@given(mutants())
def test_mutated_flagships_never_crash(source: str) -> None:
    check_source(source)


@pytest.mark.parametrize("index", range(len(SOURCES)))
def test_unmutated_flagships_run(index: int) -> None:
    assert check_source(SOURCES[index]) == "ok"


@pytest.mark.slow
def test_every_single_line_deletion() -> None:
    """Exhaustively: the flagship with any one line removed."""
    lines = SOURCES[0].split("\n")
    outcomes = [check_source("\n".join(lines[:i] + lines[i + 1:])) for i in range(len(lines))]
    assert outcomes.count("error") >= 20  # most code lines matter


# ---- hostile inputs ------------------------------------------------------------------------


def lint_file(tmp_path: Path, data: bytes, limit: float = 5.0) -> str:
    """Lint ``data`` through the CLI: exit 2, diagnostics on stderr, within ``limit`` s of
    CPU time (in this process, so a loaded machine cannot inflate it: these tests need
    not run alone)."""
    path = tmp_path / "hostile.kvr"
    path.write_bytes(data)
    start = time.process_time()
    code, out, err = run_cli("lint", str(path))
    elapsed = time.process_time() - start
    assert (code, out) == (2, ""), err
    assert err.startswith(f"{path}"), err
    assert err.endswith("found\n")
    assert "Traceback" not in err
    assert elapsed < limit, f"took {elapsed:.1f} s of CPU time"
    return err


def positioned(err: str) -> list[str]:
    """The ``line:col: error[CODE]`` heads of a lint output."""
    return re.findall(r"^\S+?:(\d+:\d+): error\[(KVR\d{3})\]", err, re.MULTILINE)


@pytest.mark.parametrize("seed", range(8))
def test_binary_garbage(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    data = bytes(rng.randrange(256) for _ in range(rng.choice([1, 7, 200, 5000])))
    err = lint_file(tmp_path, data)
    assert positioned(err) or "KVR000" in err


@pytest.mark.parametrize("seed", range(8))
def test_random_bytes_through_load(tmp_path: Path, seed: int) -> None:
    rng = random.Random(100 + seed)
    # Mostly ASCII, so decoding often succeeds and the parser sees the garbage.
    alphabet = b"model actor var event do when :=[](){}.,;#\"\n\t xyz019\x00\xff\xc3\xa9"
    data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 3000)))
    path = tmp_path / "garbage.kvr"
    path.write_bytes(data)
    with pytest.raises(SpecError) as exc:
        load(path)
    for d in exc.value.diagnostics:
        assert d.span is not None and d.span.line >= 1 and d.span.column >= 1


@pytest.mark.parametrize(
    ("data", "code", "where"),
    [
        (b"", "KVR002", "1:1"),
        (b"   \n\n\t\n", "KVR002", "1:1"),
        (b"# nothing\n", "KVR002", "1:1"),
        (b"model m\x00\n", "KVR001", "1:8"),
        (b"model m\n# \xc3\xa9\xff\n", "KVR001", "2:4"),
        (b"\xef\xbb\xbfmodel \xff", "KVR001", "1:7"),
        (b"\xfe\xff\x00m\x00o", "KVR001", "1:1"),
    ],
)
def test_small_hostile_files(tmp_path: Path, data: bytes, code: str, where: str) -> None:
    err = lint_file(tmp_path, data)
    assert positioned(err)[0] == (where, code)


def test_ten_megabytes(tmp_path: Path) -> None:
    err = lint_file(tmp_path, b"model m\n" + b"actor p\n" * 1_310_720, limit=2.0)
    assert "error[KVR000]: file is too large (10485768 bytes; the limit is 4194304)" in err


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"when " + b"(" * 10_000 + b"x" + b")" * 10_000 + b" do skip", "KVR006"),
        (b"when " + b"not " * 10_000 + b"x do skip", "KVR006"),
        (b"when " + b"-" * 10_000 + b"1 == x do skip", "KVR006"),
        (b"when " + b"x[" * 10_000 + b"0" + b"]" * 10_000 + b" do skip", "KVR006"),
        (b"do " + b"if x { " * 10_000 + b"skip" + b" }" * 10_000, "KVR006"),
        (b"when " + b" and ".join([b"x"] * 10_000) + b" do skip", "KVR006"),
        (b'do assert x : "' + b"{x}" * 5_000 + b'"', "KVR010"),
        (b'do assert x : "{' + b"(" * 5_000 + b"x" + b")" * 5_000 + b'}"', "KVR010"),
    ],
    ids=["parens", "nots", "minus", "index", "ifs", "ands", "holes", "hole-parens"],
)
def test_deep_and_long_declarations(tmp_path: Path, body: bytes, code: str) -> None:
    err = lint_file(tmp_path, b"model m\nactor p\nvar x : bool = false\nevent p.go()\n  " + body)
    heads = positioned(err)
    assert heads and heads[0][1] == code
    # At the place nesting passes the limit (line 5), or at the start of a
    # declaration that is too long (line 4).
    assert heads[0][0].startswith(("4:", "5:"))


@pytest.mark.slow
def test_megabytes_of_small_declarations(tmp_path: Path) -> None:
    err = lint_file(tmp_path, b"model m\n" + b"actor p\n" * 400_000)
    assert positioned(err) == [("25002:1", "KVR006")]
    assert "specification is too long (more than 50000 tokens)" in err


def test_megabytes_of_errors_stop_early(tmp_path: Path) -> None:
    err = lint_file(tmp_path, b"model m\n" + b"var = \n" * 500_000)
    assert [c for _, c in positioned(err)] == ["KVR003"] * 50 + ["KVR007"]


def test_one_very_long_line(tmp_path: Path) -> None:
    err = lint_file(tmp_path, b"model m # " + b"x" * 3_000_000 + b"\nactor p\nevent q.go() do skip")
    assert positioned(err) == [("3:7", "KVR103")]


# ---- what the front end accepts, the compiler compiles ---------------------------------------

DEPTH_HEAD = (
    "model m\nactor p\nvar x : bool = false\nvar v : 0..3 -> 0..3 = 0\n"
    "var o : 0..3 -> 0..3? = none\n"
)


def _deepest(make: Callable[[int], str]) -> tuple[int, ir.Spec]:
    """The largest n for which ``make(n)`` elaborates (n >= 1), and its spec."""
    lo, hi = 1, 400
    best = load_text(make(1))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            best = load_text(make(mid))
            lo = mid
        except SpecError as e:
            # too deep, (in an assert message) a hole too long, or (nested quantifiers)
            # too many bindings
            assert {d.code for d in e.diagnostics} <= {"KVR006", "KVR010", "KVR301"}, e.render()
            hi = mid - 1
    return lo, load_text(make(lo)) if lo else best


@pytest.mark.parametrize(
    "make",
    [
        lambda n: DEPTH_HEAD + "event p.go() when " + "not " * n + "x do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() when " + "(x == " * n + "x" + ")" * n + " do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() when " + "v[" * n + "0" + "]" * n + " == 0 do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() when " + "o[" * n + "0" + "]" * n + " == 0 do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() when " + "(" * n + "x" + " in {x})" * n + " do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() when " + "x in {" * n + "x" + "}" * n + " do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() when "
        + "".join(f"forall k{i}: 0..1 . " for i in range(n)) + "x do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() do " + "if x { " * n + "x := true" + " }" * n + "\n",
        lambda n: DEPTH_HEAD + "event p.go() do " + "if x { skip } else " * n + "{ skip }\n",
        lambda n: DEPTH_HEAD + "event p.go() do v[0] := " + "(" * n + "1" + " + 1)" * n + "\n",
        lambda n: DEPTH_HEAD + "invariant i: " + "x => " * n + "x\nevent p.go() do skip\n",
        lambda n: DEPTH_HEAD + "event p.go() do assert x : \"{" + "not " * n + "x}\"\n",
    ],
    ids=["not", "eq", "index", "option", "member-value", "member-option", "forall", "if",
         "else-if", "arith", "implies", "hole"],
)
def test_deepest_accepted_nesting_compiles(make: Callable[[int], str]) -> None:
    depth, spec = _deepest(make)
    assert depth >= 20  # the limit is not absurdly low
    model = SpecModel(spec)
    try:
        for s in model.initial_states():
            model.edges(s)
            model.violations(s)
    except ModelRuntimeError:
        pass  # e.g. `none` dereferenced: a model error, reported with a trace

"""The compiled successor function (``checker/model/native.py``) against the generated
Python and the interpreter, and its cache's safety.

Differential: every spec under ``spec/`` and random models of the differential suite
(``modelgen`` with the first half of the seeds of ``test_differential.py``, and the
``syncgen`` channel models) are compiled, and in every discrete state the untimed
exploration reaches (up to 8,000 per spec), the compiled function must give the
generated Python's edges, deadlines and violations (the same objects, in the same
order) or fall back exactly where the generated Python raises a model error or breaks
an ``assert``; the generated Python is compared with the interpreter in the same
states (``oracle.compare_models``).  Models are compiled together, many to one build
(``native.attach_all``), so that hundreds of models cost a few compilations.  A
deliberately broken generator is caught.

Cache: builds live in the private per-user directory only; a link, another user's file
or a directory open to others is refused (the model stays on Python, with a warning);
a second run compiles nothing; the C code holds no text of the spec.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from modelgen import model_for_seed
from oracle import compare_models, native_problem
from syncgen import sync_model

from checker.language import load, load_text, speccache
from checker.limits import TimeLimitHit
from checker.model import compiled as compiled_mod
from checker.model import ir, native
from checker.model.compiled import SpecModel

needs_cc = pytest.mark.skipif(native.compiler_command() is None,
                              reason="no C compiler or Python headers")

SPECS = sorted((ROOT / "spec").glob("**/*.kvr"))
RANDOM_SEEDS = range(150)
"""Half the random models of ``test_differential.py`` (the campaign, `tests/campaign.py`
with ``KVRACE_NATIVE=1``, runs thousands more)."""
BUNDLE = 50
"""Models per build."""


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """Builds go to a cache of this test session's (the user's cache is left alone), and
    each test starts with no build loaded and no warning given; models start on Python
    (``KVRACE_NATIVE=0``) unless a test says otherwise."""
    base = tmp_path_factory.getbasetemp() / "xdg-cache"
    base.mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(base))
    monkeypatch.setenv(native.ENV_VAR, "0")
    monkeypatch.setattr(native, "_LOADED", {})
    monkeypatch.setattr(native, "_WARNED", set())
    return base


def _chunks(items: Sequence[SpecModel], size: int) -> Iterator[Sequence[SpecModel]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _compare_all(models: Sequence[SpecModel], max_states: int) -> list[str]:
    """Compile the models (in bundles) and compare each, state by state; the problems."""
    for chunk in _chunks(models, BUNDLE):
        native.attach_all(chunk)
    problems: list[str] = []
    for m in models:
        assert m.successors == "native", (m.name, m.native_note)
        got = compare_models(m.spec, m.values, max_states=max_states, compiled=m)
        problems.extend(f"{m.spec.path}: {p}" for p in got.problems)
    return problems


def _random_models(seeds: Sequence[int]) -> list[SpecModel]:
    models = [SpecModel(load_text(model_for_seed(seed, extended=True), f"<seed {seed}>"))
              for seed in seeds]
    models += [SpecModel(load_text(sync_model(seed), f"<sync {seed}>")) for seed in range(40)]
    models += [SpecModel(load_text(sync_model(seed, committed=True), f"<committed {seed}>"))
               for seed in range(60)]
    return models


# ---- differential ----------------------------------------------------------------------------


@needs_cc
@pytest.mark.slow
def test_every_spec_agrees_with_the_generated_python_and_the_interpreter() -> None:
    models = [SpecModel(load(path)) for path in SPECS]
    assert _compare_all(models, max_states=8_000) == []


@needs_cc
@pytest.mark.slow
def test_every_random_model_agrees_with_the_generated_python_and_the_interpreter() -> None:
    assert _compare_all(_random_models(RANDOM_SEEDS), max_states=5_000) == []


@needs_cc
def test_a_few_models_agree_in_every_reachable_state() -> None:
    models = [SpecModel(load(ROOT / "spec" / "classic" / "train_gate.kvr"))]
    models += [SpecModel(load_text(model_for_seed(seed, extended=True), f"<seed {seed}>"))
               for seed in range(2)]
    assert _compare_all(models, max_states=500) == []


@needs_cc
def test_a_broken_generator_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # `<` compiled as `<=`: the comparison must see it on the random models that compare.
    original = native._CGen.binary_expr

    def broken(self: native._CGen, e: ir.Binary, f: native._Fn, ind: str) -> str:
        if e.op == ir.BinaryOp.LT:
            e = ir.Binary(ir.BinaryOp.LE, e.left, e.right, e.site)
        return original(self, e, f, ind)

    monkeypatch.setattr(native._CGen, "binary_expr", broken)
    monkeypatch.setitem(native._C_EXPR, ir.Binary, broken)
    seeds = [s for s in range(40) if " < " in model_for_seed(s, extended=True)][:3]
    assert seeds
    models = [SpecModel(load_text(model_for_seed(seed, extended=True), f"<seed {seed}>"))
              for seed in seeds]
    problems = _compare_all(models, max_states=2_000)
    assert any("compiled successor function" in p for p in problems)


@needs_cc
def test_the_fall_back_is_exactly_where_python_faults_or_an_assert_fails() -> None:
    text = """model faults
type T = 0..3
var x : 0..3 = 0
var opt : T? = none
actor A
event A.step when x < 3 do x := x + 1
event A.read when x == 2 do x := opt
event A.check when x == 1 do assert x == 0 : "x is {x}"
"""
    m = SpecModel(load_text(text, "<faults>"))
    native.attach_all([m])
    assert m.successors == "native"
    prog = m._native
    assert prog is not None
    assert prog.edges((0, -1), None) == m.python_edges((0, -1))
    assert prog.edges((1, -1), None) is None  # the assert fails: the message is Python's
    assert [e.failure for e in m.edges((1, -1))] == [None, "x is 1"]
    assert prog.edges((2, -1), None) is None  # `none` dereferenced
    with pytest.raises(compiled_mod.ModelRuntimeError, match="`none` dereferenced"):
        m.edges((2, -1))
    assert native_problem(m, (2, -1)) is None
    assert prog.edges((0, -1, 5), None) is None  # not a state of this model
    assert prog.edges((1 << 70, -1), None) is None  # beyond 64 bits


# ---- when it is used ---------------------------------------------------------------------------


@needs_cc
def test_auto_mode_loads_a_cached_build_and_compiles_only_after_many_calls(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "auto")
    monkeypatch.setattr(native, "LOAD_AFTER", 3)
    monkeypatch.setattr(native, "COMPILE_AFTER", 6)
    spec = load(ROOT / "spec" / "classic" / "fischer.kvr")
    m = SpecModel(spec)
    s0 = m.initial_states()[0]
    for _ in range(5):
        m.edges(s0)
    assert m.successors == "python" and m.native_note is None
    assert _builds(tmp_path / "kvrace") == []  # not compiled yet
    m.edges(s0)
    assert m.successors == "native"
    # A new model of the same spec finds the build after LOAD_AFTER calls.
    again = SpecModel(spec)
    for _ in range(3):
        again.edges(s0)
    assert again.successors == "native"


def test_kvrace_native_0_keeps_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV_VAR, "0")
    m = SpecModel(load(ROOT / "spec" / "classic" / "fischer.kvr"))
    assert m.successors == "python" and m.native_note == "KVRACE_NATIVE=0"


def test_without_a_compiler_the_model_runs_on_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV_VAR, "1")
    monkeypatch.setenv("LDSHARED", "/nonexistent/cc -shared")
    m = SpecModel(load(ROOT / "spec" / "classic" / "fischer.kvr"))
    assert m.successors == "python"
    assert m.native_note == "no C compiler or Python headers"
    assert m.edges(m.initial_states()[0])


@needs_cc
def test_a_construct_the_generator_refuses_leaves_python_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV_VAR, "1")
    monkeypatch.setattr(native, "MAX_BINDINGS", 2)
    m = SpecModel(load(ROOT / "spec" / "classic" / "csma_cd.kvr"))
    assert m.successors == "python"
    assert m.native_note == "a broadcast receiver with more than 2 bindings"


@needs_cc
def test_a_time_limit_inside_a_call_ends_in_python_with_the_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled_mod, "EDGE_CELLS", 1)  # look at the clock every instance
    m = _fischer()
    native.attach_all([m])
    s0 = m.initial_states()[0]
    prog = m._native
    assert prog is not None
    assert prog.edges(s0, time.monotonic() + 3600) == m.python_edges(s0)
    assert prog.edges(s0, time.monotonic() - 1) is None
    m.deadline = time.monotonic() - 1
    with pytest.raises(TimeLimitHit):
        m.edges(s0)


def test_check_json_says_which_successor_function_ran(in_root: Path) -> None:
    code, out, _ = run_cli("check", "spec/classic/fischer.kvr", "--json", "-q")
    assert code == 0
    assert '"successors": "python"' in out and '"successors_note": "KVRACE_NATIVE=0"' in out


# ---- the cache ------------------------------------------------------------------------------


def _builds(directory: Path) -> list[Path]:
    """The builds in the cache ``directory`` (it also holds the specs loaded)."""
    return sorted(directory.glob("_kvrace_native_*"))


def _fischer() -> SpecModel:
    return SpecModel(load(ROOT / "spec" / "classic" / "fischer.kvr"))


def _build_path(m: SpecModel, cache: Path) -> Path:
    gen = native.generate(m)
    command = native.compiler_command()
    assert command is not None
    name = native.build_name(native.assemble([gen]), command)
    return cache / "kvrace" / (name + native._suffix())


def _fischer_build(session_cache: Path) -> Path:
    """Fischer's build in the session's cache (compiled by the first test that asks)."""
    m = _fischer()
    native.attach_all([m])
    path = _build_path(m, session_cache)
    assert path.is_file()
    return path


def _cache_holding(tmp_path: Path, build: Path | None) -> Path:
    """A fresh private cache directory under ``tmp_path``, holding a copy of ``build``."""
    directory = tmp_path / "kvrace"
    directory.mkdir(mode=0o700)
    if build is not None:
        (directory / build.name).write_bytes(build.read_bytes())
        (directory / build.name).chmod(0o600)
    return directory


@needs_cc
def test_builds_are_private_and_written_whole(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "1")
    m = _fischer()
    assert m.successors == "native"
    directory = tmp_path / "kvrace"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    (built,) = _builds(directory)
    st = built.lstat()
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) & 0o077 == 0
    assert built == _build_path(m, tmp_path)


@needs_cc
@pytest.mark.slow
def test_a_second_run_compiles_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), native.ENV_VAR: "1",
           "PYTHONPATH": str(ROOT)}
    script = (
        "import sys\n"
        "from checker.model import native\n"
        "from checker.language import load\n"
        "from checker.model.compiled import SpecModel\n"
        "compiled = []\n"
        "real = native._compile\n"
        "native._compile = lambda *a: (compiled.append(1), real(*a))\n"
        "m = SpecModel(load(sys.argv[1]))\n"
        "print(m.successors, len(compiled))\n")
    spec = str(ROOT / "spec" / "classic" / "fischer.kvr")
    runs = [subprocess.run([sys.executable, "-c", script, spec], env=env, capture_output=True,
                           text=True, check=True, cwd=tmp_path).stdout for _ in range(2)]
    assert runs == ["native 1\n", "native 0\n"]


@needs_cc
def test_a_planted_link_is_refused_with_a_warning(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, private_cache: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    planted = _fischer_build(private_cache)
    native._LOADED.clear()
    _cache_holding(tmp_path, None)
    path = _build_path(_fischer(), tmp_path)
    path.symlink_to(planted)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "1")
    with pytest.warns(RuntimeWarning, match="unsafe"):
        again = _fischer()
    assert again.successors == "python"
    assert again.native_note is not None and "unsafe" in again.native_note
    assert "kvrace: warning: the compiled successor function was not used" in \
        capsys.readouterr().err
    assert path.is_symlink()  # refused, not replaced


@needs_cc
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="giving a file to another user needs root")
def test_another_users_build_is_refused(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path, private_cache: Path) -> None:
    build = _fischer_build(private_cache)
    native._LOADED.clear()
    os.chown(_cache_holding(tmp_path, build) / build.name, 65534, 65534)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "1")
    with pytest.warns(RuntimeWarning, match="unsafe"):
        again = _fischer()
    assert again.successors == "python"


@needs_cc
def test_a_cache_directory_open_to_others_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "1")
    _cache_holding(tmp_path, None).chmod(0o755)
    with pytest.warns(RuntimeWarning, match="unsafe"):
        m = _fischer()
    assert m.successors == "python"
    assert _builds(tmp_path / "kvrace") == []  # nothing compiled into it


@needs_cc
def test_a_cached_build_is_loaded_without_compiling(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path, private_cache: Path) -> None:
    build = _fischer_build(private_cache)
    native._LOADED.clear()
    _cache_holding(tmp_path, build)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "1")

    def no_compiling(*_: object) -> None:
        raise AssertionError("compiled although the build is in the cache")

    monkeypatch.setattr(native, "_compile", no_compiling)
    assert _fischer().successors == "native"


def test_a_failed_compilation_leaves_nothing_and_says_why(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "1")
    failing = [sys.executable, "-c", "import sys; sys.exit('cc: no such thing')"]
    monkeypatch.setattr(native, "compiler_command", lambda: failing)
    m = _fischer()
    assert m.successors == "python"
    assert m.native_note == "the C compiler failed (cc: no such thing)"
    assert _builds(tmp_path / "kvrace") == []


def test_the_cache_keeps_the_most_recently_used_builds(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path,
                                                       private_cache: Path) -> None:
    build = _fischer_build(private_cache)
    native._LOADED.clear()
    directory = _cache_holding(tmp_path, None)
    for k in range(4):
        old = directory / f"_kvrace_native_{k:032x}{native._suffix()}"
        old.write_bytes(b"")
        os.utime(old, (1000 + k, 1000 + k))
    other = directory / "parser-0.lark"
    other.write_bytes(b"")
    os.utime(other, (1, 1))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(native.ENV_VAR, "1")
    monkeypatch.setattr(native, "MAX_BUILDS", 3)
    assert _fischer().successors == "native"  # compiled: the oldest two builds go
    names = sorted(p.name for p in directory.iterdir()
                   if not p.name.startswith(speccache.PREFIX))  # the loaded spec
    assert names == sorted([build.name, "parser-0.lark",
                            f"_kvrace_native_{2:032x}{native._suffix()}",
                            f"_kvrace_native_{3:032x}{native._suffix()}"])


def test_the_runtime_is_package_data() -> None:
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "*.c" in meta["tool"]["setuptools"]["package-data"]["checker.model"]
    assert (ROOT / "checker" / "model" / "native_rt.c").is_file()


def test_the_c_code_holds_no_text_of_the_spec() -> None:
    text = '''model zqx_model_name
type ZqxType = {Zqx_a, Zqx_b}
var zqx_var : ZqxType = Zqx_a
clock zqx_clock
actor ZqxActor
event ZqxActor.zqx_event when zqx_var == Zqx_a and zqx_clock <= 3
  do assert zqx_var == Zqx_b : "zqx */ \\" #include <stdio.h> {zqx_var}"; zqx_var := Zqx_b
deadline zqx_deadline: zqx_clock <= 5 while zqx_var == Zqx_a
invariant zqx_invariant: zqx_var == Zqx_a or zqx_var == Zqx_b
'''
    m = SpecModel(load_text(text, "<zqx>"))
    source = native.assemble([native.generate(m)])
    assert "zqx" not in source.lower()
    assert "stdio" not in source

"""The cache of elaborated specs (``checker/language/speccache.py``): a spec file loaded
again comes from the private cache, equal to what parsing it gives, without importing
the parser, lark or the elaborator; an edit, other structural constants, a broken
entry or an unsafe cache directory only cost a parse; a spec with errors is never
cached; and ``kvrace check`` prints the same bytes either way."""

from __future__ import annotations

import ast
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT, run_cli, stable

import checker.language as language
from checker.diagnostics import SpecError
from checker.language import load, speccache
from checker.model import ir

SPECS = sorted((ROOT / "spec").rglob("*.kvr"))
FISCHER = ROOT / "spec" / "classic" / "fischer.kvr"
PROCESSES = ROOT / "spec" / "classic" / "fischer_processes.kvr"
"""Fischer with ``const N in 2..8 = 3`` processes."""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache of this test's own (``$XDG_CACHE_HOME/kvrace``)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "kvrace"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths :func:`checker.language.load` parses (the others came from the cache)."""
    seen: list[str] = []
    real = language.load_text

    def counted(source: str, path: str = "<input>",
                consts: dict[str, Fraction] | None = None) -> ir.Spec:
        seen.append(path)
        return real(source, path, consts)

    monkeypatch.setattr(language, "load_text", counted)
    return seen


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"{speccache.PREFIX}*"))


def _same(a: ir.Spec, b: ir.Spec) -> bool:
    """Equal as specs, and in what equality leaves out (the source) and their text."""
    return a == b and a.source == b.source and repr(a) == repr(b)


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_every_spec_comes_back_from_the_cache_as_parsed(cache: Path, parses: list[str],
                                                        path: Path) -> None:
    first = load(path)
    again = load(path)
    assert _same(again, first)
    assert again is not first
    assert parses == [str(path)]  # parsed once, then read back
    (entry,) = _entries(cache)
    assert entry.stat().st_mode & 0o777 == 0o600


def test_an_edited_file_is_parsed_again(cache: Path, parses: list[str], tmp_path: Path
                                        ) -> None:
    spec = tmp_path / "f.kvr"
    text = FISCHER.read_text(encoding="utf-8")
    spec.write_text(text, encoding="utf-8")
    assert load(spec).name == "fischer"
    spec.write_text(text.replace("model fischer", "model fischer_edited", 1),
                    encoding="utf-8")
    assert load(spec).name == "fischer_edited"
    assert load(spec).name == "fischer_edited"
    assert parses == [str(spec), str(spec)]
    assert len(_entries(cache)) == 2


def test_the_same_text_under_another_path_is_another_entry(cache: Path, parses: list[str],
                                                           tmp_path: Path) -> None:
    # Positions in diagnostics and traces name the file as it was given.
    text = FISCHER.read_text(encoding="utf-8")
    (tmp_path / "a.kvr").write_text(text, encoding="utf-8")
    (tmp_path / "b.kvr").write_text(text, encoding="utf-8")
    assert load(tmp_path / "a.kvr").path == str(tmp_path / "a.kvr")
    assert load(tmp_path / "b.kvr").path == str(tmp_path / "b.kvr")
    assert len(parses) == 2


def test_structural_constants_decide_whether_the_entry_serves(cache: Path,
                                                              parses: list[str]) -> None:
    default = load(PROCESSES)
    assert [(c.name, c.value) for c in default.consts] == [("N", 3)]
    assert load(PROCESSES, {"N": Fraction(3)}) is not default  # the default: served
    assert load(PROCESSES, {"k": Fraction(7)}).consts == default.consts  # not a constant
    assert len(parses) == 1
    five = load(PROCESSES, {"N": Fraction(5)})
    assert [c.value for c in five.consts] == [5]
    assert len(parses) == 2
    assert _same(five, language.load_text(PROCESSES.read_text(encoding="utf-8"),
                                          str(PROCESSES), {"N": Fraction(5)}))
    assert _same(load(PROCESSES, {"N": Fraction(5)}), five)
    assert len(parses) == 3  # the load_text just above
    # The entry now holds N=5: no constant given means N=3, which it is not.
    assert _same(load(PROCESSES), default)
    assert len(parses) == 4
    with pytest.raises(SpecError, match="KVR308"):
        load(PROCESSES, {"N": Fraction(9, 2)})


@pytest.mark.parametrize("text", [
    "model m\nactor p\nevent e do x := 1\n",  # unknown variable: elaboration fails
    "model m\nactor p\nevent e do do\n",  # a syntax error
])
def test_a_spec_with_errors_is_never_cached(cache: Path, tmp_path: Path, text: str) -> None:
    spec = tmp_path / "bad.kvr"
    spec.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as first:
        load(spec)
    with pytest.raises(SpecError) as again:
        load(spec)
    assert again.value.render() == first.value.render()
    assert _entries(cache) == []


class _Payload:
    """Unpickling this creates the file ``marker``: proof that a pickle was loaded."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.marker, "w"))


def _header(entry: Path) -> bytes:
    """An entry's header: the format's line, then its key's."""
    return b"\n".join(entry.read_bytes().split(b"\n", 2)[:2]) + b"\n"


def _parsed(path: Path) -> ir.Spec:
    """The spec at ``path``, parsed and elaborated without the cache (or ``load_text``)."""
    from checker.language.elaborate import elaborate
    from checker.language.syntax import parse

    source = path.read_text(encoding="utf-8")
    return elaborate(parse(source, str(path)), source)


_BREAKAGES: dict[str, Callable[[bytes, bytes], bytes]] = {
    "empty": lambda head, data: b"",
    "truncated": lambda head, data: data[: len(data) // 2],
    "header only": lambda head, data: head,
    "no header": lambda head, data: data[len(head):],
    "another key's header": lambda head, data: head[:-5] + b"0000\n" + data[len(head):],
    "garbage": lambda head, data: head + os.urandom(200),
    "not a spec": lambda head, data: head + pickle.dumps({"name": "fischer"}),
    "another file's spec": lambda head, data: head + pickle.dumps(
        _parsed(ROOT / "spec" / "classic" / "train_gate.kvr")),
    "a missing module": lambda head, data: data.replace(b"checker.model.ir",
                                                        b"checker.model.xx"),
}


@pytest.mark.parametrize("breakage", sorted(_BREAKAGES))
def test_a_broken_entry_is_ignored_and_replaced(cache: Path, parses: list[str],
                                                breakage: str) -> None:
    fresh = load(FISCHER)
    (entry,) = _entries(cache)
    data = entry.read_bytes()
    entry.write_bytes(_BREAKAGES[breakage](_header(entry), data))
    assert _same(load(FISCHER), fresh)
    assert len(parses) == 2  # parsed again ...
    assert entry.read_bytes() == data  # ... and cached again
    assert _same(load(FISCHER), fresh)
    assert len(parses) == 2


def test_an_entry_that_is_a_link_is_refused(cache: Path, parses: list[str],
                                            tmp_path: Path) -> None:
    load(FISCHER)
    (entry,) = _entries(cache)
    elsewhere = tmp_path / "elsewhere"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    load(FISCHER)
    assert len(parses) == 2
    assert entry.is_symlink()  # neither read nor written through


def test_an_unsafe_cache_directory_is_neither_read_nor_written(
        cache: Path, parses: list[str], tmp_path: Path) -> None:
    load(FISCHER)
    (entry,) = _entries(cache)
    marker = tmp_path / "pwned"
    entry.write_bytes(_header(entry) + pickle.dumps(_Payload(str(marker))))
    cache.chmod(0o755)
    source = FISCHER.read_text(encoding="utf-8")
    assert speccache.entry(source, str(FISCHER)) is None
    assert load(FISCHER).name == "fischer"
    assert not marker.exists()
    assert len(parses) == 2
    # The same entry in a private directory is loaded (the check above is what stops it).
    cache.chmod(0o700)
    load(FISCHER)
    assert marker.exists()


def test_old_entries_are_pruned(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path) -> None:
    monkeypatch.setattr(speccache, "MAX_ENTRIES", 2)
    text = FISCHER.read_text(encoding="utf-8")
    entries = []
    for k in range(4):
        spec = tmp_path / f"f{k}.kvr"
        spec.write_text(text, encoding="utf-8")
        load(spec)
        found = speccache.entry(text, str(spec))
        assert found is not None and found.present
        os.utime(found.file, (1000 + k, 1000 + k))  # the later, the more recently used
        entries.append(Path(found.file))
    assert _entries(cache) == sorted(entries[2:])


def test_the_key_covers_every_module_the_parser_and_elaborator_import() -> None:
    # An edit of any of them must invalidate the cache: each is in speccache.DECIDING.
    package = ROOT / "checker"
    todo = ["checker.language", "checker.language.syntax", "checker.language.elaborate",
            "checker.language.speccache"]
    seen: set[Path] = set()
    while todo:
        name = todo.pop()
        parts = name.split(".")
        path = ROOT.joinpath(*parts).with_suffix(".py")
        if not path.exists():
            path = ROOT.joinpath(*parts, "__init__.py")
        if not path.exists() or path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith("checker.")]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.startswith("checker"):
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    modules = {p.relative_to(package).as_posix() for p in seen}
    assert "language/elaborate.py" in modules and "model/ir.py" in modules
    assert modules <= set(speccache.DECIDING)
    assert "language/kvrace.lark" in speccache.DECIDING
    for name in speccache.DECIDING:
        assert (package / name).is_file(), name


@pytest.mark.parametrize("argv", [
    ("check", "spec/sglang/immediate_release.kvr", "--json"),
    ("check", "spec/sglang/immediate_release.kvr"),
    ("check", "spec/classic/fischer_processes.kvr", "-p", "N=4", "-p", "k=3"),
    ("lint", "spec/classic/fischer.kvr", "spec/sglang/deferred_release.kvr"),
])
def test_the_output_is_the_same_from_the_cache(cache: Path, parses: list[str],
                                               in_root: Path, argv: tuple[str, ...]) -> None:
    code, out, err = run_cli(*argv)
    assert parses and _entries(cache)
    parses.clear()
    again = run_cli(*argv)
    assert parses == []
    assert again[0] == code and again[2] == err
    assert stable(again[1]) == stable(out)


HEAVY = ("lark", "checker.language.syntax", "checker.language.elaborate",
         "checker.language.ast", "checker.simulate", "checker.present.dot", "graphviz",
         "checker.present.junit", "xml.etree.ElementTree", "checker.engines.distributed",
         "checker.engines.partition", "checker.smt", "z3", "subprocess", "tempfile")
"""Modules ``kvrace check`` of a cached spec does without (a simple run: no diagram,
no CI report, one process, text output)."""

_RUN = f"""
import sys
from checker.cli import entry_point
sys.argv = ["kvrace", *sys.argv[1:]]
try:
    entry_point()
except SystemExit:
    pass
watched = ("checker.language.speccache", *{HEAVY!r})
sys.stderr.write("\\nloaded: " + " ".join(m for m in watched if m in sys.modules) + "\\n")
"""


def test_a_cached_check_imports_neither_lark_nor_the_elaborator(
        cache: Path, parses: list[str], in_root: Path) -> None:
    argv = ("check", "spec/classic/fischer.kvr")
    code, out, _ = run_cli(*argv)  # parses, and caches the spec
    assert code == 0 and parses == ["spec/classic/fischer.kvr"]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache.parent), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _RUN, *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.stderr.endswith("\nloaded: checker.language.speccache\n"), done.stderr
    assert stable(done.stdout) == stable(out)

"""The parser cache cannot be used to run code: lark's predictable file in the
shared temporary directory is never read, and the private cache directory is
refused when anyone else could write into it."""

from __future__ import annotations

import os
import pickle
import tempfile
from importlib import resources
from pathlib import Path

import pytest
from lark import Lark

from checker.language import syntax

GRAMMAR = resources.files("checker.language").joinpath("kvrace.lark").read_text("utf-8")


class _Payload:
    """Unpickling this creates the file ``marker``: proof that a pickle was loaded."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.marker, "w"))


def _old_kwargs() -> dict[str, object]:
    """The options the parser was once built with, including lark's ``cache=True``."""
    return dict(parser="lalr", start=["header", "decl", "expr"], propagate_positions=True,
                maybe_placeholders=True, lexer_callbacks={"NAME": syntax._reserve_keywords},
                cache=True)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private TMPDIR and XDG cache home for this test only."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp


def _plant(tmp: Path, scratch: Path) -> tuple[Path, Path]:
    """Learn lark's predictable cache name (by letting lark write it into ``scratch``)
    and plant a payload under that name in ``tmp``; returns (planted file, marker)."""
    scratch.mkdir()
    saved = tempfile.tempdir
    tempfile.tempdir = str(scratch)
    try:
        Lark(GRAMMAR, **_old_kwargs())  # type: ignore[arg-type]
    finally:
        tempfile.tempdir = saved
    (name,) = [p.name for p in scratch.iterdir()]
    marker = tmp.parent / "pwned"
    planted = tmp / name
    planted.write_bytes(b"0" * 64 + b"\n" + pickle.dumps(_Payload(str(marker))))
    return planted, marker


@pytest.mark.slow
def test_a_planted_pickle_in_the_temp_dir_is_never_loaded(
    private_tmp: Path, tmp_path: Path
) -> None:
    planted, marker = _plant(private_tmp, tmp_path / "scratch")
    parser = syntax.build_parser(GRAMMAR)
    assert parser.parse("model m", start="header") is not None
    parser = syntax.build_parser(GRAMMAR)  # the second time, from the private cache
    assert not marker.exists()
    cached = list((tmp_path / "cache" / "kvrace").iterdir())
    assert len(cached) == 1 and planted.exists()
    # The planted file is a real exploit: the old way of building the parser runs it.
    Lark(GRAMMAR, **_old_kwargs())  # type: ignore[arg-type]
    assert marker.exists()


def test_the_cache_directory_is_private(private_tmp: Path, tmp_path: Path) -> None:
    path = syntax.parser_cache_file(GRAMMAR)
    assert path is not None
    directory = Path(path).parent
    assert directory == tmp_path / "cache" / "kvrace"
    assert directory.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o755, pytest.param(0o770, marks=pytest.mark.slow),
                                  pytest.param(0o707, marks=pytest.mark.slow)])
def test_a_directory_others_can_read_or_write_is_refused(
    private_tmp: Path, tmp_path: Path, mode: int
) -> None:
    path = syntax.parser_cache_file(GRAMMAR)
    assert path is not None
    Path(path).parent.chmod(mode)
    assert syntax.parser_cache_file(GRAMMAR) is None
    marker = tmp_path / "pwned"
    Path(path).write_bytes(b"0\n" + pickle.dumps(_Payload(str(marker))))
    syntax.build_parser(GRAMMAR)
    assert not marker.exists()


def test_a_symlinked_cache_directory_is_refused(private_tmp: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "cache").mkdir()
    os.symlink(elsewhere, tmp_path / "cache" / "kvrace")
    assert syntax.parser_cache_file(GRAMMAR) is None


def test_a_parent_others_can_write_is_refused(private_tmp: Path, tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache").chmod(0o777)
    assert syntax.parser_cache_file(GRAMMAR) is None

"""Golden diagnostics: every broken spec in ``tests/diagnostics/`` is linted
in-process and its stderr compared, byte for byte, with ``NAME.expected``.

To regenerate the expected files after an intended change of wording::

    KVRACE_UPDATE_GOLDEN=1 python -m pytest tests/test_diagnostics_golden.py

then review every changed file by eye (``git diff tests/diagnostics``): the
message must be right, helpful, and the caret under the right column.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker.diagnostics import Diagnostic, Span, SpecError

CORPUS = ROOT / "tests" / "diagnostics"
CASES = sorted(p.stem for p in CORPUS.glob("*.kvr"))
UPDATE = os.environ.get("KVRACE_UPDATE_GOLDEN") == "1"


def _lint(name: str) -> tuple[int, str, str]:
    return run_cli("lint", f"tests/diagnostics/{name}.kvr")


def test_corpus_is_large_and_complete() -> None:
    assert len(CASES) >= 30
    missing = [n for n in CASES if not (CORPUS / f"{n}.expected").exists() and not UPDATE]
    assert not missing, f"no .expected file for {missing}"
    orphans = sorted(
        p.stem for p in CORPUS.glob("*.expected") if not (CORPUS / f"{p.stem}.kvr").exists()
    )
    assert not orphans, f".expected files without a spec: {orphans}"


@pytest.mark.parametrize("name", CASES)
def test_golden(name: str, in_root: Path) -> None:
    code, out, err = _lint(name)
    expected_path = CORPUS / f"{name}.expected"
    if UPDATE:
        expected_path.write_text(err, encoding="utf-8", newline="\n")
    assert code == 2, f"{name}: exit code {code}, stdout {out!r}"
    assert out == ""
    assert err == expected_path.read_text(encoding="utf-8")


def _codes_in_front_end() -> set[str]:
    lang = ROOT / "checker" / "language"
    sources = [lang / "__init__.py", lang / "syntax.py", lang / "elaborate.py",
               ROOT / "checker" / "diagnostics.py"]
    found: set[str] = set()
    for src in sources:
        found |= set(re.findall(r'"(KVR\d{3})"', src.read_text(encoding="utf-8")))
    return found


def test_every_code_has_a_golden_case() -> None:
    """Each diagnostic code the front end emits is pinned by some golden file.

    KVR000 (unreadable file: missing, a directory, too large) cannot be a spec
    file of the corpus; ``tests/test_cli_lint_show.py`` covers it.
    """
    seen: set[str] = set()
    for name in CASES:
        path = CORPUS / f"{name}.expected"
        if path.exists():
            seen |= set(re.findall(r"error\[(KVR\d{3})\]", path.read_text(encoding="utf-8")))
    assert _codes_in_front_end() - {"KVR000"} <= seen, sorted(_codes_in_front_end() - seen)


def test_carets_lie_inside_their_line() -> None:
    """Every caret line is no wider than the source line it underlines (+1 for
    an error at the end of a line)."""
    for name in CASES:
        path = CORPUS / f"{name}.expected"
        if not path.exists():
            continue
        lines = path.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            m = re.match(r" (\d+) \| (.*)$", line)
            if not m or i + 1 >= len(lines):
                continue
            caret = re.match(r" +\| ( *)(\^+)$", lines[i + 1])
            assert caret, f"{name}: no caret under line {m.group(1)}"
            start, width = len(caret.group(1)), len(caret.group(2))
            assert start + width <= len(m.group(2)) + 1, f"{name}: caret past the line end"


# ---- rendering ---------------------------------------------------------------------------------


def _render(line: int, col: int, end_line: int, end_col: int, source: str) -> str:
    d = Diagnostic("KVR101", "msg", "f.kvr", Span(line, col, end_line, end_col), ("help: h",))
    return d.render(source)


def test_render_basic_and_notes() -> None:
    assert _render(2, 3, 2, 6, "model m\n  abc def\n") == (
        "f.kvr:2:3: error[KVR101]: msg\n 2 |   abc def\n   |   ^^^\n   = help: h"
    )


def test_render_without_span_or_source() -> None:
    assert Diagnostic("KVR000", "no such file", "f.kvr").render("x") == (
        "f.kvr: error[KVR000]: no such file"
    )
    assert _render(1, 1, 1, 2, "") == "f.kvr:1:1: error[KVR101]: msg\n 1 |\n   | ^\n   = help: h"
    d = Diagnostic("KVR101", "msg", "f.kvr", Span(9, 1, 9, 2))
    assert d.render("one line") == "f.kvr:9:1: error[KVR101]: msg"


def test_render_crlf_tabs_and_control_characters() -> None:
    assert _render(1, 3, 1, 4, "a\tb\r\n").split("\n")[1:3] == [" 1 | a b", "   |   ^"]
    assert _render(1, 2, 1, 3, "a\x01b\x7f").split("\n")[1] == " 1 | a\ufffdb\ufffd"


def test_render_multi_line_span_underlines_to_the_end_of_its_first_line() -> None:
    assert _render(1, 3, 2, 2, "x abcd\nyz").split("\n")[2] == "   |   ^^^^"


def test_render_cuts_very_long_lines_around_the_caret() -> None:
    line = "a" * 500 + "X" + "b" * 500
    text, caret = _render(1, 501, 1, 502, line).split("\n")[1:3]
    assert text.startswith(" 1 | ...") and text.endswith("...")
    assert len(text) < 200
    assert text[caret.index("^")] == "X"


def test_many_diagnostics_are_counted_not_all_shown() -> None:
    diags = [Diagnostic("KVR101", f"m{i}", "f.kvr", Span(1, 1, 1, 2)) for i in range(150)]
    text = SpecError(diags, "x\n").render()
    assert text.count("error[KVR101]") == 100
    assert text.endswith("... and 50 more\n\n150 errors found")

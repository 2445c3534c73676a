"""The README's figures about the test suite stay true: the test counts it quotes are
within 10 % of what pytest collects (the full suite and the quick subset)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers import ROOT

TOLERANCE = 0.10


def readme_test_paragraph() -> str:
    """The README's paragraph on the test suite's size and duration."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("The full test suite runs in parallel")
    return text[start:text.index("\n\n", start)]


def quoted_counts(paragraph: str) -> tuple[int, int]:
    """The counts the paragraph quotes: of the full suite, then of the quick subset."""
    counts = [int(n.replace(",", "")) for n in re.findall(r"\b(\d[\d,]*) tests\b", paragraph)]
    assert len(counts) == 2, f"expected the full and the quick count in: {paragraph!r}"
    return counts[0], counts[1]


def collected_counts() -> tuple[int, int]:
    """What pytest collects: (all tests, those of the quick subset ``-m "not slow"``),
    from one collection (``tests/helpers/quickcount.py`` counts the tests without the
    ``slow`` mark)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=",
         "-p", "no:cacheprovider", "-p", "helpers.quickcount"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT / "tests"), os.environ.get("PYTHONPATH")) if p)})
    full = re.search(r"^(\d+) tests? collected", proc.stdout, re.M)
    quick = re.search(r"^quick: (\d+)$", proc.stdout, re.M)
    assert proc.returncode == 0 and full and quick, proc.stdout[-2000:] + proc.stderr[-2000:]
    return int(full.group(1)), int(quick.group(1))


def test_the_paragraph_quotes_both_counts() -> None:
    assert quoted_counts("The full test suite takes about 1 min (3,210 tests); the quick"
                         " subset, 987 tests, 5 s.") == (3210, 987)
    with pytest.raises(AssertionError):
        quoted_counts("The full test suite takes about 1 min.")


@pytest.mark.slow  # collects the whole suite in another process
def test_readme_test_counts_are_current() -> None:
    full, quick = quoted_counts(readme_test_paragraph())
    real_full, real_quick = collected_counts()
    assert abs(full - real_full) <= TOLERANCE * real_full, (
        f"README.md quotes {full:,} tests, pytest collects {real_full:,}: update the figure")
    assert abs(quick - real_quick) <= TOLERANCE * real_quick, (
        f"README.md quotes {quick:,} quick tests, pytest collects {real_quick:,} with"
        ' -m "not slow": update the figure')

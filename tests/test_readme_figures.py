"""The README's figures about the test suite stay true: the test counts it quotes are
within 10 % of what pytest collects (the full suite and the quick subset)."""

from __future__ import annotations

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


def _collected(*marks: str) -> int:
    """How many tests pytest selects (with ``-m`` and ``marks``, if given)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=",
         "-p", "no:cacheprovider", *(("-m", *marks) if marks else ())],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    m = re.search(r"^(\d+)(?:/\d+)? tests? collected", proc.stdout, re.M)
    assert proc.returncode == 0 and m, proc.stdout[-2000:] + proc.stderr[-2000:]
    return int(m.group(1))


def collected_counts() -> tuple[int, int]:
    """What pytest collects: (all tests, those of the quick subset ``-m "not slow"``,
    which does not import the modules marked ``slow`` as a whole)."""
    return _collected(), _collected("not slow")


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

"""What the test modules share: the repository's paths and the ways a test runs kvrace.

Test modules import it as ``from helpers import ...`` (pytest puts ``tests/`` on the
path, as it does for the campaign modules beside it); fixtures live in ``conftest.py``.
"""

from __future__ import annotations

import functools
import io
import re
from fractions import Fraction
from pathlib import Path

from checker.api import Outcome, check
from checker.cli import main
from checker.engines import Options, explore
from checker.engines.search import CheckResult
from checker.language import load, load_text
from checker.model.compiled import SpecModel

ROOT = Path(__file__).resolve().parent.parent.parent
"""The repository root: spec paths in golden outputs are relative to it."""

SGLANG = ROOT / "spec" / "sglang"
"""The SGLang release protocols: the flagships and their variants."""

FLAGSHIPS = ("spec/sglang/deferred_release.kvr", "spec/sglang/immediate_release.kvr")
"""The flagship specs, relative to :data:`ROOT`."""


def run_cli(*argv: str, stderr: io.StringIO | None = None) -> tuple[int, str, str]:
    """``kvrace ARGV`` in-process: exit code, stdout, stderr (``stderr``: the stream
    to write it to, e.g. one that claims to be a terminal)."""
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def stable(text: str) -> str:
    """``kvrace`` output with what depends on the run masked: the statistics line's time,
    speed and memory (text), and the same figures of ``--json``'s ``stats``."""
    text = re.sub(r"in [0-9.]+ s \([0-9,]+ zones/s\), peak memory [0-9]+ MiB",
                  "in <time>", text)
    text = re.sub(r"(?m)^(liveness: [0-9,]+ zones, [0-9,]+ transitions) in [0-9.]+ s",
                  r"\1 in <time>", text)
    return re.sub(r'"(seconds|zones_per_second|peak_memory_mib)": [0-9.e+-]+',
                  r'"\1": 0', text)


def sglang_spec(name: str) -> Path:
    """The path of ``spec/sglang/NAME.kvr``."""
    return SGLANG / f"{name}.kvr"


def edited(name: str, *edits: tuple[str, str]) -> str:
    """The text of ``spec/sglang/NAME.kvr`` with textual edits ``(old, new)`` applied;
    each ``old`` must occur exactly once."""
    text = sglang_spec(name).read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


@functools.cache
def check_sglang(name: str, **params: int | str) -> Outcome:
    """Check ``spec/sglang/NAME.kvr`` at ``params`` (cached: several tests read the
    same outcome)."""
    return check(sglang_spec(name), params)


def check_variant(name: str, *edits: tuple[str, str], options: Options | None = None,
                  **params: int | str) -> Outcome:
    """Check ``spec/sglang/NAME.kvr`` with :func:`edited`'s edits applied."""
    return check(load_text(edited(name, *edits), str(sglang_spec(name))), params,
                 options=options)


def check_text(text: str, **params: int | str) -> Outcome:
    """Check a spec given as text."""
    return check(load_text(text, "<test>"), params)


def explore_file(path: Path, values: dict[str, Fraction] | None = None,
                 **opts: bool) -> CheckResult:
    """The explorer's result on the spec at ``path`` with parameter ``values`` and
    explorer options ``opts`` (``symmetry=False``, ...)."""
    model = SpecModel(load(path), values or {})
    return explore(model, options=Options(**opts))  # type: ignore[arg-type]


def labels(o: Outcome) -> list[str]:
    """The event labels of an outcome's trace, step by step."""
    assert o.trace is not None
    return [s.label for s in o.trace.steps]

"""Progress of check, prove and synth on stderr: live on a terminal, periodic lines
otherwise, nothing with --quiet."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import run_cli

from checker.engines import Stats
from checker.present.progress import Progress, mode_for
from checker.smt import synth as sy

DEFERRED = "spec/sglang/deferred_release.kvr"
PREPASS_STATES = 120
"""The discrete states of the flagship's clock pre-pass (its timed pass, symmetry-reduced)."""
WEAK = "T_hold > T_prop + T_flight"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_modes() -> None:
    assert mode_for(_Terminal(), quiet=False) == "live"
    assert mode_for(io.StringIO(), quiet=False) == "lines"
    assert mode_for(_Terminal(), quiet=True) == "off"


def test_the_line_names_phase_and_counters() -> None:
    p = Progress(io.StringIO(), "check", "lines")
    assert re.fullmatch(r"kvrace check: 0\.\d s, starting", p.line())
    st = Stats(states=3210, zones=4619, depth=14, queued=112, seconds=2.0)
    p.explorer(st)
    assert p.line().endswith(", exploring: 4,619 zones, 3,210 states, 112 queued,"
                             " depth 14, 2,310 zones/s")
    p.watch_synth(Stats(states=7, stored=12, transitions=30))
    assert p.line().endswith(", parametric exploration: 12 symbolic states,"
                             " 7 discrete states, 30 transitions")


@pytest.mark.parametrize("argv", [
    ["synth", DEFERRED],
    pytest.param(["prove", DEFERRED, "--assume", WEAK], marks=pytest.mark.slow),
], ids=["synth", "prove"])
def test_periodic_lines_when_not_a_terminal(in_root: Path, monkeypatch: pytest.MonkeyPatch,
                                            argv: list[str]) -> None:
    monkeypatch.setenv("KVRACE_PROGRESS_INTERVAL", "0.05")
    err = io.StringIO()
    code, out = run_cli(*argv, stderr=err)[:2]
    lines = err.getvalue().splitlines()
    assert code in (0, 1) and out
    assert len(lines) >= 2
    pattern = rf"kvrace {argv[0]}: [0-9.]+ s, [\w ()-]+(: [\w ,]+)?"
    assert all(re.fullmatch(pattern, line) for line in lines), lines
    assert any(", parametric exploration: " in line for line in lines), lines
    assert sy.STATS_OBSERVERS == []  # the observer is removed afterwards


def test_check_lines_and_quiet(in_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVRACE_PROGRESS_INTERVAL", "0.02")
    err = io.StringIO()
    code, _ = run_cli("check", "spec/sglang/kv_checksum.kvr", stderr=err)[:2]
    lines = err.getvalue().splitlines()
    assert code == 1 and lines
    pattern = (r"kvrace check: [0-9.]+ s, (model and clock pre-pass|exploring"
               r"|clock pre-pass: [0-9,]+ discrete states?|exploring: [0-9,]+ zones,"
               r" [0-9,]+ states, [0-9,]+ queued, depth [0-9]+, [0-9,]+ zones/s)")
    assert all(re.fullmatch(pattern, line) for line in lines), lines
    for argv in (["check", DEFERRED, "-q"], ["synth", DEFERRED, "--quiet", "--max-states", "50"],
                 ["prove", DEFERRED, "--assume", WEAK, "-q", "--max-states", "50"]):
        err = io.StringIO()
        run_cli(*argv, stderr=err)
        assert err.getvalue() == "", argv


@pytest.mark.slow
def test_live_display_on_a_terminal_is_erased(in_root: Path) -> None:
    err = _Terminal()
    code, out = run_cli("synth", DEFERRED, stderr=err)[:2]
    shown = err.getvalue()
    assert code == 0 and out.startswith("model deferred_release: synthesis")
    assert "kvrace synth: " in shown and "\x1b[2K" in shown  # drawn, then erased
    assert shown.endswith("\x1b[2K") or shown.rstrip("\n").endswith("\x1b[?25h") or \
        "\x1b[1A\x1b[2K" in shown


def test_the_pre_pass_tells_its_discrete_states(in_root: Path) -> None:
    """The explorer names the clock pre-pass as a phase whose counter is the number of
    discrete states it has reached, then the search ("exploring")."""
    from checker.api import check
    from checker.engines import Options

    told: list[tuple[str, str]] = []
    fields: list[Callable[[], str]] = []

    def hook(name: str, counters: Callable[[], str] | None = None) -> None:
        told.append((name, "" if counters is None else counters()))
        if counters is not None:
            fields.append(counters)

    out = check(DEFERRED, options=Options(on_phase=hook))
    assert out.verdict.value == "holds"
    assert [name for name, _ in told] == ["clock pre-pass", "exploring"]
    assert told[0][1] == "1 discrete state"  # at its start
    assert fields[0]() == f"{PREPASS_STATES:,} discrete states"  # where it ended

"""Honest interrupts: SIGINT and SIGTERM end every long command within about a
second with exit 130 / 143 and one line saying so — never a traceback, never
the exit code of a verdict — including while Z3 is solving (``synth``,
``prove``).  Signals are sent at random (seeded) moments of real runs."""

from __future__ import annotations

import atexit
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import ROOT

# Every case times how fast a process reacts to a signal.
# GRACE leaves room for a second test running beside it: the reaction takes ~0.3 s.
pytestmark = pytest.mark.slow

DEFERRED = ROOT / "spec" / "sglang" / "deferred_release.kvr"
SPEC = Path(tempfile.mkdtemp(prefix="kvrace-interrupts-")) / "big.kvr"
atexit.register(shutil.rmtree, SPEC.parent, True)
"""The flagship with four requests and two slots: every command below runs for
minutes, far longer than the latest signal."""
SPEC.write_text(DEFERRED.read_text()
                .replace("symmetric type Req = {A, B}", "symmetric type Req = {A, B, C, D}")
                .replace("symmetric type Slot = {s0}", "symmetric type Slot = {s0, s1}"))
COMMANDS = {
    "check": ["check", str(SPEC), "--no-symmetry", "--no-clock-reduction"],
    "prove": ["prove", str(SPEC), "--assume", "T_hold > T_prop + T_chunk + T_flight"],
    "synth": ["synth", str(SPEC)],
}
GRACE = 3.0
"""Seconds a run may take to end after the signal (1 s asked, with room for a busy machine)."""


def _interrupt(command: str, signum: int, delay: float) -> tuple[int, str, float]:
    """Start ``kvrace COMMAND``, send ``signum`` after ``delay`` seconds; returns the exit
    code, stderr and how long the run took to end after the signal."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "checker", *COMMANDS[command]], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        time.sleep(delay)
        assert proc.poll() is None, f"{command} ended before the signal"
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err.decode("utf-8", "replace"), took


def _schedule() -> list[tuple[str, float]]:
    """13 (command, delay) pairs, the same in every run of the test."""
    rng = random.Random(19)
    runs = [(c, rng.uniform(0.4, 1.6)) for c in sorted(COMMANDS) for _ in range(4)]
    runs.append(("synth", rng.uniform(2.0, 3.0)))  # well inside the solver work
    return runs


def test_sigint_at_random_moments_exits_130_without_traceback() -> None:
    failures: list[str] = []
    for command, delay in _schedule():
        code, err, took = _interrupt(command, signal.SIGINT, delay)
        lines = err.strip().splitlines()
        ok = (code == 130 and "Traceback" not in err and took < GRACE and len(lines) == 1
              and lines[0].startswith(f"kvrace {command}: interrupted by SIGINT; "))
        if not ok:
            failures.append(f"{command} at {delay:.2f} s: exit {code} after {took:.2f} s,"
                            f" stderr {err[-400:]!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sigterm_exits_143(command: str) -> None:
    code, err, took = _interrupt(command, signal.SIGTERM, 1.0)
    assert code == 143, err
    assert f"kvrace {command}: interrupted by SIGTERM" in err
    assert "Traceback" not in err and took < GRACE

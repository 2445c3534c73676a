"""Oversized models under small limits: every run ends in time and within its memory.

Each case runs ``python -m checker`` in its own process on a model far too big
for its limits and asserts that it ends as inconclusive (exit 3) or with a
positioned error (exit 2) within its time limit plus one second (plus the
interpreter's start-up), with a peak memory (as the run reports it: its own
high-water mark) within ``--max-memory`` plus 10 %.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT

# Every case but the memory ones bounds a process's wall-clock time, and carries `alone`.
pytestmark = pytest.mark.slow

DEFERRED = ROOT / "spec" / "sglang" / "deferred_release.kvr"
STARTUP = 1.5
"""Seconds the interpreter and the imports may take before a command starts (a loaded
two-core machine), on top of the limit plus one second."""


def scaled_flagship(requests: int, slots: int) -> str:
    text = DEFERRED.read_text()
    reqs = ", ".join("ABCDEFGH"[:requests])
    text = text.replace("symmetric type Req = {A, B}", f"symmetric type Req = {{{reqs}}}")
    names = ", ".join(f"s{i}" for i in range(slots))
    text = text.replace("symmetric type Slot = {s0}", f"symmetric type Slot = {{{names}}}")
    assert reqs in text and names in text
    return text


WIDE_CLOCKS = """model wide_clocks
type T = 0..255
actor a
clock c : (T, T)
event a.go(i: T, j: T) when c[i, j] >= 1 do reset c[i, j]
"""

WIDE_INVARIANT = """model wide_invariant
type T = 0..255
actor a
var on : (T, T) -> bool = false
event a.go(i: T, j: T) when not on[i, j] do on[i, j] := true
invariant all: forall i: T . forall j: T . on[i, j] or not on[i, j]
"""

CUBE_INVARIANT = """model cube
type T = 0..65535
actor a
var n : 0..3 = 0
clock c
event a.go() when n < 3 and c >= 1 do n := n + 1; reset c
invariant all: forall i: T . forall j: T . forall k: T . n < 5 or i == j or j == k
"""

# As many bindings as lint allows (2**20): each state costs a fraction of a second.
EDGE_INVARIANT = """model edge
type T = 0..1023
actor a
var n : 0..1000 = 0
event a.go() when n < 1000 do n := n + 1
invariant all: forall i: T . forall j: T . n < 2000 or i == j
"""

BIG_SYMMETRY = """model big_symmetry
symmetric type P = {p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11}
actor a
var st : P -> 0..6 = 0
clock x : P
event a.step(p: P) when st[p] < 6 and x[p] >= 1 do st[p] := st[p] + 1; reset x[p]
"""


def nested_quantifiers(depth: int) -> str:
    binders = "".join(f"forall q{i}: bool . " for i in range(depth))
    return f"""model nested
actor a
clock c
event a.go() when {binders}c >= 1 do skip
"""


def run(tmp_path: Path, text: str, *argv: str) -> tuple[int, str, str, float, float]:
    """Exit code, stdout, stderr and seconds of one ``kvrace`` process (peak memory: see
    :func:`run_measured`)."""
    spec = tmp_path / "m.kvr"
    spec.write_text(text)
    args = [sys.executable, "-m", "checker", argv[0], str(spec), *argv[1:]]
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            text=True)
    out, err = proc.communicate(timeout=120)
    seconds = time.monotonic() - start
    return proc.returncode, out, err, seconds, 0.0


def peak_of(out: str) -> float:
    """The peak memory a ``check`` run reports (its own address space's high-water
    mark: ``wait4``'s figure would include the parent's, which survives ``execve``)."""
    m = re.search(r"peak memory ([0-9.]+) MiB", out)
    assert m is not None, out
    return float(m.group(1))


CASES = [
    ("flagship 6x4, check --timeout 2", scaled_flagship(6, 4), ("check", "--timeout", "2"), 2),
    ("flagship 6x4, check --max-states 100", scaled_flagship(6, 4),
     ("check", "--max-states", "100"), 5),
    ("flagship 4x2, synth --timeout 3", scaled_flagship(4, 2), ("synth", "--timeout", "3"), 3),
    ("flagship 4x2, prove --timeout 3", scaled_flagship(4, 2),
     ("prove", "--assume", "T_hold > T_prop + T_chunk + T_flight", "--timeout", "3"), 3),
    ("flagship 6x4, graph --timeout 2", scaled_flagship(6, 4),
     ("graph", "-o", "{tmp}/g.dot", "--max-nodes", "1000000", "--timeout", "2"), 2),
    ("12 symmetric values, check --timeout 2", BIG_SYMMETRY, ("check", "--timeout", "2"), 2),
    ("65,536 clocks, check --timeout 4", WIDE_CLOCKS, ("check", "--timeout", "4"), 4),
    ("65,536-wide invariant, check --timeout 3", WIDE_INVARIANT, ("check", "--timeout", "3"), 3),
    ("2**20-binding invariant, check --timeout 2", EDGE_INVARIANT, ("check", "--timeout", "2"), 2),
    ("2**20-binding invariant, synth --timeout 3", EDGE_INVARIANT, ("synth", "--timeout", "3"), 3),
    ("2**20-binding invariant, simulate --timeout 2", EDGE_INVARIANT,
     ("simulate", "--runs", "1000000", "--timeout", "2"), 2),
]


@pytest.mark.alone
def test_a_product_of_quantifiers_past_the_bound_is_refused_at_once(tmp_path: Path) -> None:
    lint_seconds = 0.0
    for command in ("lint", "check", "synth", "simulate"):
        limit = () if command == "lint" else ("--timeout", "5")
        code, out, err, seconds, _ = run(tmp_path, CUBE_INVARIANT, command, *limit)
        assert code == 2, f"{command}: exit {code}\n{out}\n{err}"
        assert "m.kvr:7:30: error[KVR301]: this `forall` evaluates 4,294,967,296 bindings" in err
        if command == "lint":
            lint_seconds = seconds
        # refused as fast as lint refuses it, whatever the machine's load
        assert seconds <= lint_seconds + 1, f"{command}: {seconds:.1f} s, lint {lint_seconds:.1f} s"


@pytest.mark.alone
@pytest.mark.parametrize(("text", "argv", "limit"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_time_limits_hold(tmp_path: Path, text: str, argv: tuple[str, ...], limit: float
                          ) -> None:
    argv = tuple(a.replace("{tmp}", str(tmp_path)) for a in argv)
    code, out, err, seconds, _ = run(tmp_path, text, *argv)
    assert code == 3, f"exit {code}\n{out}\n{err}"
    assert "INCONCLUSIVE" in out or "inconclusive" in (out + err).lower()
    assert "Traceback" not in err
    assert seconds <= limit + 1 + STARTUP, f"{seconds:.1f} s for a {limit} s limit"


@pytest.mark.parametrize(("text", "argv"), [
    (WIDE_CLOCKS, ("check", "--max-memory", "300", "--timeout", "20")),
    (scaled_flagship(6, 4), ("check", "--max-memory", "150", "--timeout", "60")),
], ids=["65,536 clocks", "flagship 6x4"])
def test_memory_limit_holds(tmp_path: Path, text: str, argv: tuple[str, ...]) -> None:
    code, out, err, _, _ = run(tmp_path, text, *argv)
    peak = peak_of(out)
    budget = int(argv[argv.index("--max-memory") + 1])
    assert code == 3, f"exit {code}\n{out}\n{err}"
    assert "memory limit" in out
    assert peak <= budget * 1.1, f"peak {peak:.0f} MiB for --max-memory {budget}"


@pytest.mark.alone
def test_nested_quantifiers_over_clocks_are_refused_quickly(tmp_path: Path) -> None:
    code, out, err, seconds, _ = run(tmp_path, nested_quantifiers(24), "lint")
    # Refused by the nesting limit (KVR208) or, first, by the bindings limit (KVR301).
    assert code == 2 and ("error[KVR208]" in out + err or "error[KVR301]" in out + err), \
        out + err
    assert "m.kvr:4:" in out + err
    assert seconds <= 1 + STARTUP

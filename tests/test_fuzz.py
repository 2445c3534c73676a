"""The robustness campaign (``tests/fuzz.py``): a CI-sized slice, its mutator, and
every failing input it ever found (``tests/fuzz_regressions/``).

A regression is ``NAME.kvr`` with ``NAME.json``: the command line (``SPEC`` stands
for the ``.kvr``, or for ``"spec"`` when given), the exit code, text the output must
contain, and optionally the most memory (MiB, peak resident), seconds and CPU seconds
it may take.
Each runs as a fresh ``kvrace`` process, as a user would run it.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "tests"))
import fuzz

CORPUS = ROOT / "tests" / "fuzz_regressions"
CASES = sorted(p.stem for p in CORPUS.glob("*.json"))


# The command line in a fresh process that reports its own peak resident memory at the
# end (VmHWM: the kernel's rusage of a child would include this test process's).
_WRAPPER = (
    "import re, sys\n"
    "from checker.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())\n"
    "print(f'process peak {int(hwm.group(1)) / 1024:.1f} MiB' if hwm else '', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def run_kvrace(argv: list[str], limit: float) -> tuple[int, str, float, float]:
    """Exit code, stdout + stderr, seconds and CPU seconds of one process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, *argv], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    seconds = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return proc.returncode, out.decode("utf-8", "replace"), seconds, cpu


def test_corpus_is_complete() -> None:
    assert CASES, "no regressions"
    for name in CASES:
        assert (CORPUS / f"{name}.kvr").exists(), name


@pytest.mark.slow  # a kvrace process per case
@pytest.mark.alone  # the cases bound its wall-clock time
@pytest.mark.parametrize("name", CASES)
def test_regression(name: str) -> None:
    case = json.loads((CORPUS / f"{name}.json").read_text(encoding="utf-8"))
    spec = case.get("spec", str((CORPUS / f"{name}.kvr").relative_to(ROOT)))
    argv = [spec if a == "SPEC" else a for a in case["argv"]]
    limit = float(case.get("max_seconds", 30))
    code, out, seconds, cpu = run_kvrace(argv, limit + 10)
    assert code == case["exit"], out
    assert case["stdout"] in out, out
    assert "Traceback" not in out and "internal error" not in out
    assert seconds <= limit, f"{seconds:.1f} s"
    if "max_cpu_seconds" in case:  # the time a loaded machine cannot inflate
        assert cpu <= case["max_cpu_seconds"], f"{cpu:.1f} s of CPU time"
    peak = _peak_reported(out)
    if "max_memory_mib" in case:
        assert peak is not None and peak <= case["max_memory_mib"], f"peak {peak} MiB"


def _peak_reported(out: str) -> float | None:
    """The peak resident memory of the whole process, as the wrapper reports it."""
    m = re.search(r"process peak ([0-9.]+) MiB", out)
    return float(m.group(1)) if m else None


def test_mutations_are_deterministic_and_varied() -> None:
    seeds = fuzz.corpus()
    assert len(seeds) >= 100
    a = [fuzz.lint_input(0, i, seeds) for i in range(200)]
    assert a == [fuzz.lint_input(0, i, seeds) for i in range(200)]
    kinds = {k for _, _, done in a for k in done}
    assert {"number", "ident", "type", "enum", "del_decl", "dup_decl", "del_tok"} <= kinds
    text = "type T = {a, b}\nvar x : T = a\n"
    out, done = fuzz.mutate(random.Random(3), text, 4)
    assert (out, done) == fuzz.mutate(random.Random(3), text, 4)


@pytest.mark.slow  # a campaign of processes
def test_ci_slice(tmp_path: Path) -> None:
    """Deterministic: 400 lint inputs, 20 check and 3 synth command lines of seed 1
    (about 20 s)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fuzz.py"), "--seed", "1", "--lint", "400",
         "--check", "20", "--synth", "3", "--out", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert last.startswith("lint 400 inputs, check 20 runs, synth 3 runs"), last
    assert " 0 tracebacks, 0 hangs, 0 over memory, 0 unpositioned diagnostics," in last

"""``simulate`` under its limits and with hostile inputs: ``--timeout`` and
``--max-memory`` end it as inconclusive with the runs done; empirical files and the
``--traces`` folder are read and written safely."""

from __future__ import annotations

import argparse
import io
import json
import os
import time
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker.cli.app import _failure
from checker.cli.common import Output, Session
from checker.cli.parser import COMMANDS, MEMORY_LIMITED, build_parser

DEFERRED = str(ROOT / "spec" / "sglang" / "deferred_release.kvr")
IMMEDIATE = str(ROOT / "spec" / "sglang" / "immediate_release.kvr")

# Each state costs about 0.2 s (2**20 bindings), a run 1,000 states.
SLOW_STATES = """model slow
type T = 0..1023
actor a
var n : 0..1000 = 0
event a.go() when n < 1000 do n := n + 1
invariant all: forall i: T . forall j: T . n < 2000 or i == j
"""


# ---- --timeout and --max-memory ----------------------------------------------------------------


@pytest.mark.slow
def test_a_huge_number_of_runs_ends_at_the_time_limit() -> None:
    start = time.monotonic()
    code, out, err = run_cli("simulate", DEFERRED, "--runs", "100000000000", "--timeout", "1")
    seconds = time.monotonic() - start
    assert code == 3, err
    assert seconds < 2.5, f"{seconds:.1f} s for a 1 s limit"
    line = out.splitlines()[3]
    assert line.startswith("INCONCLUSIVE: time limit (1 s) reached after ")
    assert line.endswith(" of 100000000000 runs; the estimate below covers those runs")
    assert "NO VIOLATION SAMPLED in " in out and "Traceback" not in err


@pytest.mark.slow
def test_one_long_run_ends_at_the_time_limit(tmp_path: Path) -> None:
    spec = tmp_path / "slow.kvr"
    spec.write_text(SLOW_STATES)
    start = time.monotonic()
    code, out, err = run_cli("simulate", str(spec), "--runs", "10", "--timeout", "1", "--json")
    seconds = time.monotonic() - start
    assert code == 3, err
    assert seconds < 2.5, f"{seconds:.1f} s for a 1 s limit"
    doc = json.loads(out)
    assert (doc["verdict"], doc["exit_code"], doc["runs"], doc["planned_runs"]) == (
        "inconclusive", 3, 0, 10)
    assert doc["limit"] == "time limit (1 s) reached"


@pytest.mark.slow
def test_a_sampled_violation_stays_a_violation_at_the_limit() -> None:
    code, out, _ = run_cli("simulate", IMMEDIATE, "--runs", "100000000000", "--timeout", "1")
    assert code == 1
    assert "INCONCLUSIVE: time limit (1 s) reached after " in out
    assert "VIOLATION SAMPLED in " in out


@pytest.mark.slow
def test_a_sweep_stops_at_the_time_limit() -> None:
    code, out, _ = run_cli("simulate", DEFERRED, "--sweep", "T_hold=30:40:1", "--runs",
                           "100000000", "--timeout", "1")
    assert code == 3
    assert "the later points were not simulated" in out
    assert "exact safe region" not in out


def test_the_memory_limit_ends_a_simulation() -> None:
    code, out, err = run_cli("simulate", DEFERRED, "--runs", "100000000000",
                             "--max-memory", "1")
    assert code == 3, err
    assert "memory limit (1 MiB) reached" in out
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_worker_processes_end_at_the_time_limit() -> None:
    start = time.monotonic()
    code, out, _ = run_cli("simulate", DEFERRED, "--runs", "100000000000", "--timeout", "2",
                           "-j", "2", "-q")
    assert code == 3
    assert time.monotonic() - start < 4.5
    assert "INCONCLUSIVE: time limit (2 s) reached after " in out


def test_out_of_memory_advice_names_only_options_that_exist() -> None:
    subparsers = next(a for a in build_parser()._actions
                      if isinstance(a, argparse._SubParsersAction))
    for command in COMMANDS:
        options = {o for a in subparsers.choices[command]._actions for o in a.option_strings}
        assert ("--max-memory" in options) == (command in MEMORY_LIMITED), command
        err = io.StringIO()
        session = Session(Output(io.StringIO()), Output(err), False)
        assert _failure(MemoryError(), command, session) == 3
        assert ("--max-memory" in err.getvalue()) == (command in MEMORY_LIMITED), command


# ---- empirical(FILE) ---------------------------------------------------------------------------


def _empirical(path: Path | str) -> tuple[int, str, str]:
    return run_cli("simulate", DEFERRED, "--runs", "10", "--delay",
                   f"T_flight=empirical({path})")


HUGE_FIELD = "lat.csv:3: a field of more than 131,072 characters"


@pytest.mark.parametrize("content, words", [
    (b"latency\n1\n" + b"9" * 200_000 + b"\n", HUGE_FIELD),
    (b"1\n2\n\"unterminated\n" + b"x" * 200_000, HUGE_FIELD),
    (b"\xef\xbb\xbf1.5\n2\n", None),
    (b"\xef\xbb\xbflatency\n1.5\n2\n", None),
    (b"1\n\x002\n", "lat.csv:2:1: a NUL character"),
    (b"1\n2\n\xff\n", "lat.csv:3: not a UTF-8 text file"),
])
def test_empirical_files_are_read_with_clean_errors(tmp_path: Path, content: bytes,
                                                    words: str | None) -> None:
    path = tmp_path / "lat.csv"
    path.write_bytes(content)
    code, out, err = _empirical(path)
    if words is None:
        assert code == 0, err
        # the BOM is not part of the first sample: both samples are kept
        assert "empirical(" in out and ", 2 samples)" in out
    else:
        assert (code, out) == (2, ""), err
        assert err.startswith("--delay T_flight: ") and words in err, err
        assert len(err) < 300


def test_a_bom_alone_does_not_hide_the_first_sample(tmp_path: Path) -> None:
    from checker.simulate.distributions import read_samples

    path = tmp_path / "lat.csv"
    path.write_bytes(b"\xef\xbb\xbf3\n1\n")
    assert read_samples(str(path)) == (1.0, 3.0)


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "folder", "fifo"])
def test_empirical_reads_regular_files_only(tmp_path: Path, special: str) -> None:
    if special == "folder":
        path = str(tmp_path)
    elif special == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    else:
        path = special
    start = time.monotonic()
    code, out, err = _empirical(path)
    assert time.monotonic() - start < 5
    assert (code, out) == (2, ""), err
    assert f"--delay T_flight: {path}: not a regular file" in err


def test_an_empirical_file_has_a_bounded_size(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.simulate import distributions

    monkeypatch.setattr(distributions, "MAX_SAMPLE_BYTES", 100)
    path = tmp_path / "lat.csv"
    path.write_text("1.5\n" * 40)
    code, _, err = _empirical(path)
    assert code == 2
    assert f"{path}: larger than 100 bytes" in err
    path.write_text("1.5\n" * 20)
    assert _empirical(path)[0] == 0


# ---- --traces DIR ------------------------------------------------------------------------------


def test_traces_are_written_without_following_a_planted_link(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # The first violating run of the immediate spec at seed 0 is run 4.
    (folder / "run-4.json").symlink_to(victim)
    code, _, err = run_cli("simulate", IMMEDIATE, "--runs", "20", "--traces", str(folder))
    assert code == 1
    assert victim.read_text() == "precious\n"
    assert f"kvrace: warning: cannot write {folder / 'run-4.json'}: it is a link" in err
    assert "verdict above stands" in err


def test_traces_are_not_written_into_a_folder_open_to_others(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    code, out, err = run_cli("simulate", IMMEDIATE, "--runs", "20", "--traces", str(folder))
    assert (code, out) == (2, "")
    assert err.startswith(f"{folder}: writable by others: kvrace writes predictable names")
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a folder to another user needs root")
def test_traces_are_not_written_into_someone_elses_folder(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o755)
    os.chown(folder, 12345, 12345)
    code, out, err = run_cli("simulate", IMMEDIATE, "--runs", "20", "--traces", str(folder))
    assert (code, out) == (2, "")
    assert err.startswith(f"{folder}: owned by another user")
    assert list(folder.iterdir()) == []


def test_traces_are_not_written_through_a_linked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    code, _, err = run_cli("simulate", IMMEDIATE, "--runs", "20", "--traces",
                           str(tmp_path / "link"))
    assert code == 2
    assert f"{tmp_path / 'link'}: a link or not a folder" in err
    assert list(real.iterdir()) == []


def test_traces_are_written_where_they_are_safe(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "traces"
    code, _, err = run_cli("simulate", IMMEDIATE, "--runs", "20", "--traces", str(folder))
    assert code == 1, err
    names = sorted(p.name for p in folder.iterdir())
    assert names and all(n.startswith("run-") and n.endswith(".json") for n in names)
    assert json.loads((folder / names[0]).read_text())["#meta"]["verdict"] == "violated"
    assert (folder.stat().st_mode & 0o777) == 0o700

"""``kvrace lint`` and ``kvrace show`` in-process: outputs, exit codes, and the
file-level errors (KVR000) that the golden corpus cannot hold."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FLAGSHIPS, run_cli

from checker.language import MAX_FILE_BYTES

SHOW_BODY = """\

types:
  symmetric Req = {A, B}
  symmetric Slot = {s0}
  Chunk = 0..1
parameters:
  T_prop in [0, 10] = 2
  T_chunk in [0, 10] = 2
  T_flight in (0, 10] = 3
@HOLD@actors: router, prefill, decode
variables:
  owner : Slot -> Req? = none  [1 cell]
  slot : Req -> Slot? = none  [2 cells]
  phase : Req -> {waiting, transferring, aborted, done, freed} = waiting  [2 cells]
  sent : Req -> 0..2 = 0  [2 cells]
  write : (Req, Chunk) -> {unsent, flying, landed} = unsent  [4 cells]
  told : Req -> bool = false  [2 cells]
clocks:
  since_abort : Req  [2 instances]
  since_told : Req  [2 instances]
  since_post : Req, Chunk  [4 instances]
events:
  decode.allocate(r: Req, s: Slot)  [2 instances]
  prefill.post(r: Req, k: Chunk)  [4 instances, 2 convex guard branches]
  decode.land(r: Req, k: Chunk) receives prefill.post  [4 instances]
  router.abort(r: Req)  [2 instances]
  prefill.learn_abort(r: Req) receives router.abort  [2 instances]
  decode.release(r: Req)  [2 instances]
  decode.finish(r: Req)  [2 instances]
deadlines: @DEADLINES@
properties: every assert, deadlock freedom
size: 18 event instances, 8 clock instances, 13 state cells
"""



def _show(name: str, hold: str, deadlines: str) -> str:
    head = f"model {name}  (spec/sglang/{name}.kvr)\n"
    return head + SHOW_BODY.replace("@HOLD@", hold).replace("@DEADLINES@", deadlines)


SHOW = {
    "spec/sglang/deferred_release.kvr": _show(
        "deferred_release", "  T_hold in [0, 40] = 8\n", "in_flight, propagation"
    ),
    "spec/sglang/immediate_release.kvr": _show(
        "immediate_release", "", "in_flight, propagation, free_at_once"
    ),
}


@pytest.mark.parametrize("spec", FLAGSHIPS)
def test_show_golden(spec: str, in_root: Path) -> None:
    code, out, err = run_cli("show", spec)
    assert (code, err) == (0, "")
    assert out == SHOW[spec]


@pytest.mark.parametrize("spec", FLAGSHIPS)
def test_lint_ok(spec: str, in_root: Path) -> None:
    assert run_cli("lint", spec) == (0, f"{spec}: ok\n", "")


def test_lint_every_spec_in_the_repository(in_root: Path) -> None:
    specs = sorted(str(p.relative_to(in_root)) for p in (in_root / "spec").rglob("*.kvr"))
    code, out, err = run_cli("lint", *specs)
    assert (code, err) == (0, "")
    assert out == "".join(f"{s}: ok\n" for s in specs)


def test_lint_several_files_reports_each(in_root: Path) -> None:
    good = FLAGSHIPS[0]
    bad = "tests/diagnostics/syntax_missing_do.kvr"
    code, out, err = run_cli("lint", good, bad, good)
    assert code == 2
    assert out == f"{good}: ok\n{good}: ok\n"
    assert err.startswith(f"{bad}:7:3: error[KVR003]")


def test_show_of_a_broken_spec(in_root: Path) -> None:
    code, out, err = run_cli("show", "tests/diagnostics/name_unknown_type.kvr")
    assert (code, out) == (2, "")
    assert "error[KVR105]: unknown type `Rq`" in err


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.kvr"
    assert run_cli("lint", str(path)) == (
        2, "", f"{path}: error[KVR000]: no such file\n\n1 error found\n"
    )


def test_directory(tmp_path: Path) -> None:
    assert run_cli("lint", str(tmp_path)) == (
        2, "", f"{tmp_path}: error[KVR000]: is a directory, not a spec file\n\n1 error found\n"
    )


def test_file_too_large(tmp_path: Path) -> None:
    path = tmp_path / "huge.kvr"
    size = MAX_FILE_BYTES + 1
    path.write_bytes(b"#" * size)
    assert run_cli("lint", str(path)) == (
        2, "", f"{path}: error[KVR000]: file is too large ({size} bytes; the limit is"
        f" {MAX_FILE_BYTES})\n\n1 error found\n",
    )


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.kvr"
    path.write_text("model m\n")
    path.chmod(0)
    try:
        if path.stat().st_mode & 0o777 == 0 and _readable(path):
            pytest.skip("running as a user who can read any file")
        code, out, err = run_cli("lint", str(path))
    finally:
        path.chmod(0o600)
    assert (code, out) == (2, "")
    assert err == f"{path}: error[KVR000]: cannot read: Permission denied\n\n1 error found\n"


def _readable(path: Path) -> bool:
    try:
        path.read_bytes()
    except OSError:
        return False
    return True

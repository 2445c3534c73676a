"""What ``--workers`` and ``--ray`` trust and expose: Ray with token authentication only,
a token only its user can read, and SIGINT/SIGTERM ending a run with its exit code and
nothing left running.  The tests that start Ray are ``slow``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import types
import uuid
from pathlib import Path

import pytest
from helpers import ROOT

from checker.engines import raysession
from checker.engines.raysession import RayMissing

SCALED = ROOT / "spec" / "sglang" / "deferred_release.kvr"


# ---- without Ray: the rules -------------------------------------------------------------------


@pytest.fixture
def token_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of its own, and no Ray variables set."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH",
                 "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_a_ray_without_token_authentication_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(__version__="2.51.0"))
    with pytest.raises(RayMissing, match=r"need Ray >= 2\.52, which has token authentication"
                                         r" \(this is Ray 2\.51\.0\)"):
        raysession.ray_module()
    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(__version__="2.52.0rc1"))
    assert raysession.ray_module() is sys.modules["ray"]


def test_the_floor_in_pyproject_is_the_token_authentication_one() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    floor = "ray>={}.{}".format(*raysession.MIN_RAY)
    assert text.count(floor) == 2 and "ray>=2.9" not in text


@pytest.mark.parametrize("mode", ["disabled", "none", ""])
def test_authentication_turned_off_is_refused(token_home: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              mode: str) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", mode)
    for local in (True, False):
        with pytest.raises(RayMissing, match=f"RAY_AUTH_MODE={mode}: kvrace runs Ray only"
                                             " with token authentication"):
            raysession.require_token_auth(local)
    assert not (token_home / ".ray").exists()


def test_a_local_instance_gets_a_private_token(token_home: Path) -> None:
    raysession.require_token_auth(local=True)
    token = token_home / ".ray" / "auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(token.parent.stat().st_mode) == 0o700
    assert len(token.read_text()) == 64
    assert os.environ["RAY_AUTH_MODE"] == "token"
    first = token.read_text()
    raysession.require_token_auth(local=True)
    assert token.read_text() == first  # an existing token is kept


def test_a_token_others_can_read_is_made_private(token_home: Path) -> None:
    token = token_home / ".ray" / "auth_token"
    token.parent.mkdir()
    token.write_text("x" * 64)
    token.chmod(0o644)
    raysession.require_token_auth(local=False)
    assert stat.S_IMODE(token.stat().st_mode) == 0o600


def test_joining_a_cluster_needs_its_token(token_home: Path) -> None:
    with pytest.raises(RayMissing, match="joining a Ray cluster needs its token"):
        raysession.require_token_auth(local=False)
    assert not (token_home / ".ray").exists()  # never made up for a remote cluster


def test_the_token_may_come_from_the_environment(token_home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_TOKEN", "y" * 64)
    raysession.require_token_auth(local=False)
    assert os.environ["RAY_AUTH_MODE"] == "token"
    assert not (token_home / ".ray").exists()


# ---- with Ray -----------------------------------------------------------------------------------


def _marked(mark: str) -> list[int]:
    """The processes whose environment carries ``mark`` (a run and all it started)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if f"KVRACE_TEST_MARK={mark}".encode() in f.read():
                    out.append(int(name))
        except OSError:
            pass
    return out


WORKING = "model and clock pre-pass in the workers"
"""The progress phase of a distributed run while its workers load the model."""


def _scaled_spec(tmp_path: Path) -> Path:
    """The flagship with six requests and four slots: minutes of search."""
    text = SCALED.read_text()
    text = text.replace("symmetric type Req = {A, B}", "symmetric type Req = {A, B, C, D, E, F}")
    text = text.replace("symmetric type Slot = {s0}", "symmetric type Slot = {s0, s1, s2, s3}")
    path = tmp_path / "big.kvr"
    path.write_text(text)
    return path


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
@pytest.mark.parametrize(("phase", "signum", "code"), [
    pytest.param(None, signal.SIGINT, 130, id="while Ray starts-SIGINT"),
    pytest.param(None, signal.SIGTERM, 143, id="while Ray starts-SIGTERM"),
    pytest.param(WORKING, signal.SIGINT, 130, id="while the workers work-SIGINT"),
])
def test_a_signal_ends_a_distributed_run_and_all_its_processes(
        tmp_path: Path, signum: int, code: int, phase: str | None) -> None:
    """Signalled while Ray starts (3 s after its first processes), or while the
    workers run the model's pre-pass (a second after the progress line says so)."""
    mark = uuid.uuid4().hex
    env = {**os.environ, "KVRACE_TEST_MARK": mark, "PYTHONPATH": str(ROOT),
           "HOME": str(tmp_path), "KVRACE_PROGRESS_INTERVAL": "0.2"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "checker", "check", str(_scaled_spec(tmp_path)), "--workers",
         "2", "--backend", "ray"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=ROOT)
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")),
                              daemon=True)
    reader.start()
    try:
        start = time.monotonic()
        while len(_marked(mark)) < 4 and time.monotonic() - start < 60:
            time.sleep(0.1)
        assert len(_marked(mark)) >= 4, "Ray did not start"
        if phase is None:
            time.sleep(3.0)
        else:
            while not any(phase in line for line in lines) and time.monotonic() - start < 90:
                time.sleep(0.1)
            assert any(phase in line for line in lines), "".join(lines[-5:])
            time.sleep(1.0)
        assert proc.poll() is None, "the run ended before the signal"
        sent = time.monotonic()
        proc.send_signal(signum)
        proc.wait(timeout=60)
        seconds = time.monotonic() - sent
        reader.join(timeout=10)
        err = "".join(line for line in lines if not line.startswith("kvrace check: ")
                      or "interrupted" in line)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    name = signal.Signals(signum).name
    assert err.endswith(f"kvrace check: interrupted by {name}; no verdict\n") or err.endswith(
        f"kvrace: interrupted by {name}; stopped\n"), err
    for noise in ("Traceback", "SystemExit", "*** SIG", "logging.cc"):
        assert noise not in err, err
    assert seconds < 5, f"{seconds:.1f} s after {name}"
    left = _marked(mark)
    for _ in range(20):  # a process killed a moment ago may still be reaped
        if not left:
            break
        time.sleep(0.25)
        left = _marked(mark)
    described = [_described(p) for p in left]
    for pid in left:  # the test's own cleanup; the assertion below still fails
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert left == [], f"still running after {name}: {described}"


def _described(pid: int) -> str:
    """A leftover process: its pid, parent, command line, and whether it carries the
    run's own mark (``KVRACE_RUN_MARK``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        with open(f"/proc/{pid}/environ", "rb") as f:
            own = b"KVRACE_RUN_MARK=" in f.read()
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        ppid = stat[stat.rfind(b")") + 2:].split()[1].decode()
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} (parent {ppid}, {'marked' if own else 'unmarked'}): {cmd[:200]}"


PROBE = """
import json, os, stat, subprocess, sys
from pathlib import Path
from checker.engines import raysession
from checker.engines.proctree import descendants
raysession.init_local(1)
import ray
ray.get(ray.remote(lambda: 1).remote())
mine = {p for p, _ in descendants()} | {os.getpid()}
ss = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines()
listening = sorted({line.split()[3] for line in ss if any(f"pid={p}," in line for p in mine)})
token = Path.home() / ".ray" / "auth_token"
import urllib.error, urllib.request
http = {}
for line in ss:
    if any(f"pid={p}," in line for p in mine) and "RuntimeEnv" in line:
        addr = line.split()[3]
        try:
            urllib.request.urlopen(urllib.request.Request(f"http://{addr}/get_or_create_runtime_env",
                                                          data=b"x", method="POST"), timeout=10)
            http[addr] = 200
        except urllib.error.HTTPError as e:
            http[addr] = e.code
print(json.dumps({"auth": raysession.auth_is_on(), "listening": listening, "http": http,
                  "gcs": ray.get_runtime_context().gcs_address,
                  "token_mode": oct(stat.S_IMODE(token.stat().st_mode))}))
sys.stdout.flush()
intruder = subprocess.run(
    [sys.executable, "-c", "import ray, sys; ray.init(address=sys.argv[1]); print('IN')",
     ray.get_runtime_context().gcs_address],
    env={**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64,
         "RAY_NUM_REDIS_GET_RETRIES": "3"},  # refused at once; retrying 20 times is 20 s
    capture_output=True, text=True, timeout=120)
print(json.dumps({"intruder_code": intruder.returncode, "intruder_in": "IN" in intruder.stdout,
                  "intruder_err": intruder.stderr[-3000:]}))
raysession.stop_local_ray(ray)
"""


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_the_local_instance_needs_the_token_on_every_port(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(name, None)
    got = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert got.returncode == 0, got.stderr[-3000:]
    first, second = (json.loads(line) for line in got.stdout.splitlines()[-2:])
    assert first["auth"] is True
    assert first["token_mode"] == "0o600"
    assert first["listening"], "no listening socket found for the Ray instance"
    # the runtime-environment agent's HTTP port wants the token too
    assert first["http"] and set(first["http"].values()) == {401}, first["http"]
    # Ray binds its servers to every interface (it maps a loopback node address to the
    # node's own): the token is what keeps others out.
    assert second["intruder_in"] is False and second["intruder_code"] != 0
    assert "auth" in second["intruder_err"].lower() or "token" in second["intruder_err"].lower()

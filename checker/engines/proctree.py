"""The processes a kvrace process started, found from ``/proc``: what an interrupt or
the end of a Ray session must not leave running."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import time

__all__ = ["MARK", "descendants", "kill", "kill_run", "mark_run", "marked"]

MARK = "KVRACE_RUN_MARK"
"""The environment variable whose value marks every process a run of kvrace started
(set before a local Ray starts: its processes inherit it, even those that outlive
their parent and are reparented)."""


def _stat(pid: int) -> tuple[int, int] | None:
    """The parent and start time of ``pid`` (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # pid (comm) state ppid ... starttime (field 22): comm may hold spaces and parentheses
    fields = stat[stat.rfind(b")") + 2:].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def descendants(pid: int | None = None) -> list[tuple[int, int]]:
    """The processes started by ``pid`` (this one by default), their children and so
    on, each as (pid, start time); empty where there is no ``/proc``."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[tuple[int, int]]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if name.isdigit():
            got = _stat(int(name))
            if got is not None:
                children.setdefault(got[0], []).append((int(name), got[1]))
    out: list[tuple[int, int]] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def kill(procs: list[tuple[int, int]]) -> int:
    """SIGKILL each of ``procs`` still running (the same process: same start time, so a
    reused pid is spared); returns how many were."""
    n = 0
    for pid, start in procs:
        got = _stat(pid)
        if got is not None and got[1] == start:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                n += 1
    return n


def marked(value: str) -> list[tuple[int, int]]:
    """The processes of this user whose environment has ``MARK=value`` (not this one),
    each as (pid, start time); empty where there is no ``/proc``."""
    want = f"{MARK}={value}".encode()
    me = os.getpid()
    out: list[tuple[int, int]] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read(1 << 20)
        except OSError:
            continue
        if want in env.split(b"\0"):
            got = _stat(int(name))
            if got is not None:
                out.append((int(name), got[1]))
    return out


_OWN: list[str] = []
"""The mark this process set (:func:`mark_run`), if any: a mark inherited from a parent
names the parent's processes, which are not this one's to end."""

_SINCE: list[int] = []
"""When :func:`mark_run` ran, in the clock ticks of ``/proc/PID/stat``'s start time."""

PR_SET_CHILD_SUBREAPER = 36


def _now_ticks() -> int:
    """The time since boot in clock ticks (0 where there is no ``/proc``)."""
    try:
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def _adopt_orphans(on: bool = True) -> None:
    """Make this process the subreaper of what it starts (or no longer, once the run
    ended): a process whose parent ends is reparented here rather than to init, so it
    stays among :func:`descendants` (Ray's agents lose their raylet during a shutdown,
    and their title, written over the start of their environment, may erase the mark;
    best effort)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def mark_run() -> None:
    """Mark the processes this one starts from now on (a fresh value of :data:`MARK`)."""
    value = f"{os.getpid()}-{secrets.token_hex(8)}"
    _OWN[:] = [value]
    _SINCE[:] = [_now_ticks()]
    os.environ[MARK] = value
    _adopt_orphans()


def _of_run() -> list[tuple[int, int]]:
    """The processes of the run: those marked, and this process's descendants started
    since :func:`mark_run` (whose mark may have been written over)."""
    since = _SINCE[0] - 1 if _SINCE else 0
    found = set(marked(_OWN[0]))
    found.update(p for p in descendants() if p[1] >= since)
    return sorted(found)


def _reap(procs: list[tuple[int, int]]) -> None:
    """Collect the exit status of those of ``procs`` that were this process's children
    (adopted orphans would stay zombies); a ``subprocess.Popen`` whose child is reaped
    here reads it as ended."""
    for pid, _ in procs:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def kill_run(settle: float = 1.0) -> int:
    """SIGKILL every process started since this process's :func:`mark_run`; returns how
    many were.

    A process may fork between the scan of ``/proc`` and the kill (a Ray instance
    caught starting its workers), so the scan is repeated until it finds nothing, for
    at most ``settle`` seconds."""
    if not _OWN:
        return 0
    ended: set[tuple[int, int]] = set()
    deadline = time.monotonic() + settle
    try:
        while True:
            found = [p for p in _of_run() if _alive(p[0])]
            if not found:
                return len(ended)
            kill(found)
            ended.update(found)
            if time.monotonic() > deadline:
                return len(ended)
            time.sleep(0.02)
    finally:
        time.sleep(0.02)
        _reap(sorted(ended))
        _adopt_orphans(False)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is running (not a zombie, which a kill cannot end)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] not in (b"Z", b"X")

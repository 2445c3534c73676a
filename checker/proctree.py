"""The processes a kvrace process started, found from ``/proc``: what an interrupt or
the end of a Ray session must not leave running."""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = ["descendants", "kill"]


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

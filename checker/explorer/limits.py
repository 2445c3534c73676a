"""Resource limits shared by the explorer's passes.

A limit ends a run as *inconclusive*, with what was explored; never as *holds*.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

MAX_ZONE_MB = 4096
"""Without --max-memory, the largest zone (difference-bound matrix) a run may build."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run; ``None`` means unlimited."""

    max_states: int | None = None
    timeout: float | None = None
    max_memory_mb: int | None = None
    deadline: float | None = None
    """An absolute ``time.monotonic()`` instant the run must end by (the command's
    start plus its timeout, so that the phases before exploration count too)."""


class LimitHit(Exception):
    """A limit ended the run; ``what`` says which, in words."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def peak_rss_mb() -> float:
    """This process's peak resident memory, in MiB.

    Linux's ``ru_maxrss`` survives ``execve``: a process started by a large one
    reports the parent's peak.  ``VmHWM`` belongs to the process's own address
    space, so it is read first."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # in kB
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

"""Resource limits shared by the explorer's passes.

A limit ends a run as *inconclusive*, with what was explored; never as *holds*.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import gc
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checker.errors import Inconclusive
from checker.model.interface import LimitReached

if TYPE_CHECKING:
    from checker.algorithms.covreach import Stats

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


class LimitKind(enum.Enum):
    """Which resource limit ended a run."""

    STATES = "states"
    TIME = "time"
    MEMORY = "memory"

    @classmethod
    def of_text(cls, what: str) -> LimitKind | None:
        """The kind of a limit reported only as its message (by another process)."""
        word, limit, _ = what.partition(" limit")
        words = {"state": cls.STATES, "time": cls.TIME, "memory": cls.MEMORY}
        return words.get(word) if limit else None


class LimitHit(Inconclusive):
    """A limit ended the run; ``what`` says which, in words, and ``kind`` which
    limit it was (``None`` only for a message of unknown origin)."""

    def __init__(self, what: str, kind: LimitKind | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.kind = kind if kind is not None else LimitKind.of_text(what)


class Budget:
    """Every limit of a run (states, time, memory), and its progress reports.

    A limit ends the run with :class:`LimitHit`, as *inconclusive*.  ``start`` is when
    the run's time began (its ``timeout`` counts from there); ``progress`` is called
    with the statistics about every ``progress_interval`` seconds."""

    def __init__(self, limits: Limits, start: float | None = None,
                 progress: Callable[[Stats], None] | None = None,
                 progress_interval: float = 1.0) -> None:
        self.limits = limits
        self.start = time.monotonic() if start is None else start
        ends = [t for t in (limits.deadline,
                            self.start + limits.timeout if limits.timeout is not None else None)
                if t is not None]
        self.deadline = min(ends) if ends else None
        """The ``time.monotonic()`` instant the run ends by, if any."""
        self.progress = progress
        self.progress_interval = progress_interval
        self.last_progress = time.monotonic()
        self._checks = 0
        self.counted = 0
        """The last count :meth:`count` was given (for a progress display)."""

    def derived(self, max_states: int | None) -> Budget:
        """The same time and memory limits with another states limit (a pre-pass's)."""
        lim = self.limits
        return Budget(Limits(max_states, lim.timeout, lim.max_memory_mb, self.deadline),
                      self.start)

    def time_limit(self) -> LimitHit:
        """The limit hit when time is up."""
        t = self.limits.timeout
        return LimitHit(f"time limit ({t:g} s) reached" if t is not None
                        else "time limit reached")

    def over_time(self) -> bool:
        """Whether the time limit has passed."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def check_time(self) -> None:
        """End the run at the time limit (or at a memory limit its guard has seen)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise self.time_limit()
        _raise_pending_memory_hit()

    def count(self, n: int) -> None:
        """End the run once ``n`` (states so far) reaches the states limit, at the time
        limit, or (checked every 256 calls) past the memory limit."""
        self.counted = n
        lim = self.limits
        if lim.max_states is not None and n >= lim.max_states:
            raise LimitHit(f"state limit ({lim.max_states}) reached")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise self.time_limit()
        _raise_pending_memory_hit()
        self._checks += 1
        mem = lim.max_memory_mb
        if mem is not None and self._checks % 256 == 0 and peak_rss_mb() > mem:
            raise LimitHit(f"memory limit ({mem} MiB) reached")

    def tick(self, st: Stats, waiting: Sized) -> None:
        """:meth:`count` the symbolic states stored, and report progress when due;
        called for every node stored or expanded."""
        self.count(st.stored)
        if self.progress is not None:
            now = time.monotonic()
            if now - self.last_progress >= self.progress_interval:
                self.last_progress = now
                st.seconds = now - self.start
                st.queued = len(waiting)
                self.progress(st)


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


NO_FULL_COLLECTIONS = 1 << 30
"""The garbage collector's third threshold within :func:`young_collections_only`: no
count of younger collections reaches it."""


@contextlib.contextmanager
def young_collections_only() -> Iterator[None]:
    """Within: the cyclic garbage collector collects only its young generations.

    What an exploration keeps (the store, the memos, the clock-bounds pass's
    results) lives until the run ends and holds no reference cycle, so a full
    collection frees nothing; yet each one walks every container object kept, and
    they come again as the store grows: on a run of a few hundred thousand zones they
    took about a third of the time.  Cycles made and dropped meanwhile are still
    collected with the young generations; the threshold is set back on the way out
    (unless something else changed it meanwhile)."""
    t0, t1, t2 = gc.get_threshold()
    gc.set_threshold(t0, t1, NO_FULL_COLLECTIONS)
    try:
        yield
    finally:
        if gc.get_threshold() == (t0, t1, NO_FULL_COLLECTIONS):
            gc.set_threshold(t0, t1, t2)


class MemoryLimitHit(LimitHit, LimitReached):
    """The memory limit ended the run: raised in the guarded thread by
    :class:`MemoryGuard`, wherever it is (building the model, the clock-bounds
    pass, the search).  It is both the explorer's :class:`LimitHit` and the
    model's :class:`LimitReached`, so each phase ends it as inconclusive."""

    limit_mb: int = 0
    what_text: str | None = None

    def __init__(self, what: str | None = None) -> None:
        super().__init__(what or self.what_text or f"memory limit ({self.limit_mb} MiB) reached",
                         LimitKind.MEMORY)


class TimeLimitHit(LimitHit, LimitReached):
    """The time limit, met inside a model's call (one :meth:`edges` that builds
    thousands of large states): both the explorer's :class:`LimitHit` and the
    model's :class:`LimitReached`, so each phase ends it as inconclusive."""

    def __init__(self, what: str = "time limit reached") -> None:
        super().__init__(what, LimitKind.TIME)


def rss_mb() -> float:
    """This process's resident memory now, in MiB (0 where it cannot be read)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


_PAGE = resource.getpagesize()


_PENDING: dict[int, type[MemoryLimitHit]] = {}
"""The memory limit hit each :class:`MemoryGuard` has raised in its thread (by thread
id), until the guard ends: the budget's checks raise it again at their safe points."""


def _raise_pending_memory_hit() -> None:
    """Raise the memory limit hit this thread's guard has seen, if any."""
    hit = _PENDING.get(threading.get_ident())
    if hit is not None:
        raise hit()


SAFETY_SHARE = 0.9
"""Of the memory available when a command starts, the share it may take without
``--max-memory`` (past it the command ends as inconclusive rather than be killed by
the kernel, or make the machine swap until no time limit holds)."""


def _read_int(path: str) -> int | None:
    """The integer in a one-line file, or None (absent, unreadable, ``max``)."""
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def available_mb() -> float | None:
    """The memory this process could still take, in MiB: the kernel's estimate of
    what is available (``MemAvailable``), within the cgroup's limit if it has one;
    None where neither can be read."""
    avail = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) / 1024.0
                    break
    except (OSError, ValueError, IndexError):
        pass
    cap, used = _read_int("/sys/fs/cgroup/memory.max"), _read_int("/sys/fs/cgroup/memory.current")
    if cap is not None and used is not None:
        left = max(0.0, (cap - used) / 2**20)
        avail = left if avail is None else min(avail, left)
    return avail


def safety_limit_mb() -> int | None:
    """The memory limit of a command run without ``--max-memory``: what it holds now
    plus :data:`SAFETY_SHARE` of what is available (None where that is unknown)."""
    avail = available_mb()
    if avail is None or rss_mb() <= 0:
        return None
    return int(rss_mb() + SAFETY_SHARE * avail)


class MemoryGuard:
    """Enforces ``--max-memory`` while a command runs, whatever it is doing.

    A daemon thread samples the resident memory every :attr:`interval` seconds;
    when it passes the limit, :class:`MemoryLimitHit` is raised asynchronously in
    the guarded thread (at its next Python instruction), so a single expansion
    or a phase that never calls the explorer's limit checks cannot overshoot by
    more than one sampling interval of allocation.  Use as a context manager;
    ``limit_mb=None`` guards nothing.
    """

    interval = 0.01
    refire = 0.5
    """Seconds after which a limit hit is raised again if the guarded code still runs
    (it may have been lost, or caught and ignored); longer than a limit's own handling
    takes, so a hit that was handled is not raised twice."""

    def __init__(self, limit_mb: int | None, what: str | None = None,
                 interval: float | None = None) -> None:
        """``what``: the message of the hit (default: the limit in MiB); ``interval``:
        seconds between samples (default :attr:`interval`)."""
        self.limit_mb = limit_mb
        self.what = what
        if interval is not None:
            self.interval = interval
        self.tripped = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._target = threading.get_ident()
        self._exc: type[MemoryLimitHit] = MemoryLimitHit
        self._hook: Callable[[Any], object] = sys.unraisablehook

    def __enter__(self) -> MemoryGuard:
        if self.limit_mb is not None and rss_mb() > 0:
            self._target = threading.get_ident()
            # A subclass per guard carries the limit into the message (an asynchronous
            # exception is raised by class, without arguments).
            self._exc = type("MemoryLimitHit", (MemoryLimitHit,),
                             {"limit_mb": self.limit_mb, "what_text": self.what})
            self._thread = threading.Thread(target=self._watch, name="kvrace-memory-guard",
                                            daemon=True)
            self._hook = sys.unraisablehook
            sys.unraisablehook = self._unraisable
            self._thread.start()
        return self

    def _unraisable(self, info: Any) -> None:
        """A hit that landed in a finaliser is not news (the budget raises it again):
        anything else goes to the hook this guard replaced."""
        if not isinstance(info.exc_value, MemoryLimitHit):
            self._hook(info)

    def _watch(self) -> None:
        limit = self.limit_mb
        assert limit is not None
        wait = self.interval
        while not self._stop.wait(wait):
            if rss_mb() > limit:
                self.tripped = True
                _PENDING[self._target] = self._exc
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._target), ctypes.py_object(self._exc))
                # Python drops an exception raised in a finaliser (a ``__del__`` the
                # collector runs, such as Z3's) with "Exception ignored", and the code
                # it was meant for goes on: the budget's checks raise it from
                # _PENDING, and until the code leaves the guard it is raised again
                # after :attr:`refire` seconds.
                wait = self.refire

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        try:
            if self._thread is not None:
                self._thread.join()
            if self.tripped:
                # Still pending if the guarded code finished first: too late to matter.
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), None)
        except MemoryLimitHit:
            pass
        finally:
            _PENDING.pop(self._target, None)
            if self._thread is not None and sys.unraisablehook == self._unraisable:
                sys.unraisablehook = self._hook


class TimeAlarm:
    """Enforces a time limit in code that never reaches the budget's checks: a regular
    expression of a mapping matching a log line (possibly for ever: catastrophic
    backtracking), a pass over a huge file.  At ``deadline`` (``time.monotonic()``) a
    ``SIGALRM`` raises ``hit()`` in the main thread, and again every :attr:`refire`
    seconds until the guarded code ends (in case it was swallowed); Python runs the
    handler even inside a match of :mod:`re`, which checks for signals.  Use as a
    context manager in the main thread; elsewhere, or without ``setitimer``, or with
    no deadline, it guards nothing."""

    refire = 0.5

    def __init__(self, deadline: float | None, hit: Callable[[], LimitHit]) -> None:
        self.deadline = deadline
        self.hit = hit
        self.active = False
        self._previous: Any = None

    def _fire(self, signum: int, frame: object) -> None:
        if self.active:
            raise self.hit()

    def __enter__(self) -> TimeAlarm:
        if (self.deadline is None or not hasattr(signal, "setitimer")
                or threading.current_thread() is not threading.main_thread()):
            return self
        self._previous = signal.signal(signal.SIGALRM, self._fire)
        self.active = True
        signal.setitimer(signal.ITIMER_REAL, max(self.deadline - time.monotonic(), 1e-3),
                         self.refire)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.active:
            return
        self.active = False  # first: a signal already pending finds the alarm off
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)


ZONE_ENTRY_BYTES = 48
"""What one entry of a zone can cost: its list slot (8 bytes) and, for a bound
that is not a small integer, an int object of its own (up to 40)."""

ZONE_COPIES = 3
"""Zones of one expansion alive at once: the source, a successor and its
extrapolated or canonical form."""


def zone_over_limit(n_clocks: int, max_memory_mb: int | None) -> str | None:
    """Why a zone over ``n_clocks`` clocks cannot be built within the memory limit (the
    headroom left by what the process holds already), or ``None`` when it fits.

    The limit is checked before the zone is built: a zone is built by single calls
    that no limit check can interrupt."""
    need = (n_clocks + 1) ** 2 * ZONE_ENTRY_BYTES * ZONE_COPIES / 2**20
    if max_memory_mb is None:
        if need > MAX_ZONE_MB:
            return (f"memory limit: one zone over {n_clocks} live clocks needs"
                    f" {need:,.0f} MiB")
        return None
    left = max_memory_mb - rss_mb()
    if need > left:
        return (f"memory limit ({max_memory_mb} MiB): a zone over {n_clocks} live clocks"
                f" needs about {need:,.0f} MiB, {max(left, 0):,.0f} MiB are left")
    return None

"""Progress of a long command (``check``, ``prove``, ``synth``) on stderr.

Three modes:

* ``live`` (stderr is a terminal): a one-line display drawn by ``rich`` — a
  spinner, the phase, the engine's counters and the elapsed time — refreshed a
  few times a second and erased at the end;
* ``lines`` (stderr is a file or a pipe): one plain line every ``interval``
  seconds, as TLC does (``kvrace check: 20 s, exploring: 4,619 zones, 3,210
  states, 112 queued, depth 14, 230 zones/s``), so a long run in CI or under
  ``nohup`` shows it is alive;
* ``off`` (``--quiet``): nothing.

The engines report through the callbacks they already have: the zone
explorer's ``Options.progress`` (:meth:`Progress.explorer`), and the
parametric explorer's live :class:`~checker.algorithms.covreach.Stats`
(:meth:`Progress.watch_synth`); phases are named by the command
(:meth:`Progress.phase`).  The display runs in its own thread, so a phase that
reports nothing (the pre-pass, a long solver query) still shows its elapsed
time.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO, Any, Protocol, cast

from checker.present.words import count

INTERVAL = 10.0
"""Seconds between two lines in ``lines`` mode (``KVRACE_PROGRESS_INTERVAL`` overrides)."""


class _Stream(Protocol):
    def write(self, text: str) -> int: ...

    def flush(self) -> None: ...

    def isatty(self) -> bool: ...


class _Raw:
    """A stream's raw writes, for rich's terminal codes (the command's stderr wrapper
    replaces control characters in what it is given)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return int(getattr(self.stream, "raw_write", self.stream.write)(text))

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(self.stream.isatty())

    def fileno(self) -> int:
        raise OSError("no file descriptor")  # rich then asks isatty() and the size below


def mode_for(stream: _Stream, quiet: bool) -> str:
    """``off`` with ``--quiet``, ``live`` on a terminal, ``lines`` otherwise."""
    if quiet:
        return "off"
    try:
        return "live" if stream.isatty() else "lines"
    except (OSError, ValueError):
        return "lines"


def _interval() -> float:
    try:
        value = float(os.environ.get("KVRACE_PROGRESS_INTERVAL", INTERVAL))
    except ValueError:
        return INTERVAL
    return value if value > 0 else INTERVAL


class Progress:
    """The progress display of one command; a context manager."""

    def __init__(self, stream: _Stream, command: str, mode: str,
                 interval: float | None = None) -> None:
        self.stream = stream
        self.command = command
        self.mode = mode
        self.interval = _interval() if interval is None else interval
        self.start = time.monotonic()
        self._phase = "starting"
        self._fields: Callable[[], str] = lambda: ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Any = None
        self._task: Any = None

    # ---- what the command and the engines report --------------------------------------

    def phase(self, name: str, fields: Callable[[], str] | None = None) -> None:
        """Enter a phase (``pre-pass``, ``exploring``, ``timing the trace``, ...);
        ``fields`` gives its counters as text whenever the display is drawn."""
        self._phase = name
        self._fields = fields if fields is not None else (lambda: "")

    def explorer(self, stats: Any) -> None:
        """The zone explorer's ``Options.progress`` callback."""
        rate = stats.zones / stats.seconds if stats.seconds else 0.0
        text = (f"{count(stats.zones, 'zone', grouped=True)},"
                f" {count(stats.states, 'state', grouped=True)}, {stats.queued:,} queued,"
                f" depth {stats.depth}, {rate:,.0f} zones/s")
        self.phase("exploring", lambda: text)

    def watch_synth(self, stats: Any) -> None:
        """Show a parametric exploration's live statistics (see
        ``checker.smt.synth.STATS_OBSERVERS``)."""
        self.phase("parametric exploration", lambda: (
            f"{count(stats.stored, 'symbolic state', grouped=True)},"
            f" {count(stats.states, 'discrete state', grouped=True)},"
            f" {count(stats.transitions, 'transition', grouped=True)}"))

    def line(self) -> str:
        """The current progress as one line."""
        elapsed = time.monotonic() - self.start
        fields = self._fields()
        shown = f"{elapsed:.1f}" if elapsed < 10 else f"{elapsed:.0f}"
        return (f"kvrace {self.command}: {shown} s, {self._phase}"
                + (f": {fields}" if fields else ""))

    # ---- drawing --------------------------------------------------------------------

    def __enter__(self) -> Progress:
        if self.mode == "live":
            self._start_live()
        if self.mode in ("live", "lines"):
            self._thread = threading.Thread(target=self._run, name="kvrace-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop the display (a live one is erased)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._live is not None:
            live, self._live = self._live, None
            with contextlib.suppress(Exception):  # a display that cannot be erased is no failure
                live.stop()

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.progress import Progress as RichProgress
        from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(file=cast("IO[str]", _Raw(self.stream)), force_terminal=True,
                          highlight=False, soft_wrap=False, width=_width())
        self._live = RichProgress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
            console=console, transient=True, auto_refresh=False,
        )
        self._task = self._live.add_task(self._describe(), total=None)
        self._live.start()

    def _describe(self) -> str:
        fields = self._fields()
        text = f"kvrace {self.command}: {self._phase}" + (f": {fields}" if fields else "")
        return text.replace("[", "\\[")  # rich markup

    def _run(self) -> None:
        step = 0.25 if self.mode == "live" else self.interval
        while not self._stop.wait(step):
            try:
                if self._live is not None:
                    self._live.update(self._task, description=self._describe(), refresh=True)
                else:
                    self.stream.write(self.line() + "\n")
                    self.stream.flush()
            except Exception:  # progress must never end the run
                return


def _width() -> int:
    try:
        columns = os.get_terminal_size(2).columns
    except OSError:
        return 100
    return columns if columns >= 40 else 100

"""SIGINT and SIGTERM: an interrupt ends a command with exit code 128 + the signal."""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from checker.engines.proctree import descendants, kill, kill_run
from checker.present.words import count

if TYPE_CHECKING:
    from checker.engines import Stats

_SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: the run ends with exit code 128 + the signal number.

    A BaseException, like KeyboardInterrupt, so that no ``except Exception`` in
    an engine can swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(_SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}"))
        self.signum = signum


class SignalWatcher:
    """Turns SIGINT and SIGTERM into :class:`Interrupted` in the main thread.

    Python runs signal handlers only between bytecodes, so a long Z3 query would
    delay them: a wakeup file descriptor tells a watcher thread that a signal
    arrived, and the thread stops the running query
    (:func:`checker.smt.interrupt_solvers`); the handler then raises in the main
    thread.  A second signal while the first is being reported is ignored, and so
    is a signal the process was started ignoring (``nohup``, a background job).
    """

    active: SignalWatcher | None = None
    """The watcher of this process, once installed."""

    def __init__(self) -> None:
        self.received: int | None = None
        """The first signal received."""
        self.reporting = False
        """Set while the interrupt is being reported: later signals are ignored."""
        self.explored: Callable[[], Stats | None] = lambda: None
        """What the running command last reported it explored (set by ``main``), for
        an interrupt that arrives outside the command's own handling."""
        self.reader, writer = socket.socketpair()
        writer.setblocking(False)
        self.writer = writer
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored stays ignored
                signal.signal(signum, self.handle)
        self.default_hook = sys.unraisablehook
        sys.unraisablehook = self.unraisable
        threading.Thread(target=self.watch, name="kvrace-signals", daemon=True).start()
        SignalWatcher.active = self

    def handle(self, signum: int, frame: object) -> None:
        """The Python-level handler: raise in the main thread until it is reported."""
        if self.received is None:
            self.received = signum
        if not self.reporting:
            raise Interrupted(self.received)

    def unraisable(self, info: sys.UnraisableHookArgs) -> None:
        """An :class:`Interrupted` raised where Python cannot propagate it (a destructor)
        is not printed; the watcher thread raises it again in ordinary code."""
        if isinstance(info.exc_value, Interrupted) or self.received is not None:
            # The watcher raises the interrupt again; and after an interrupt, objects
            # it left half-built (a Z3 solver) may fail in their destructors: noise.
            return
        self.default_hook(info)

    def watch(self) -> None:
        """The watcher thread: on a signal, stop the solver query in progress; then,
        until the main thread reports the interrupt, raise it there again every
        :data:`RETRY` seconds (in case the exception was swallowed: by ctypes, a
        destructor, a library's ``except``), and after :data:`DEADLINE` seconds end
        the process with the interrupt's exit code whatever it is doing."""
        first: float | None = None
        signum: int = signal.SIGINT
        while True:
            self.reader.settimeout(None if first is None else self.RETRY)
            try:
                data = self.reader.recv(64)
            except TimeoutError:
                data = None
            except OSError:
                return
            if data == b"":
                return
            if data:
                signum = self.received or data[0]
                if first is None:
                    first = time.monotonic()
            self.stop_solvers()
            if first is None:
                continue
            if time.monotonic() - first > self.DEADLINE:
                with contextlib.suppress(OSError):
                    os.write(2, f"kvrace: interrupted by {signal_name(signum)}; stopped\n"
                             .encode())
                kill(descendants())  # e.g. a Ray instance caught half-way starting
                kill_run()
                os._exit(128 + signum)
            if not self.reporting:
                _thread.interrupt_main(signal.Signals(signum))

    RETRY = 0.2
    """Seconds between two attempts to raise the interrupt in the main thread."""
    DEADLINE = 3.0
    """Seconds after the first signal at which the process is ended regardless."""

    @staticmethod
    def stop_solvers() -> None:
        """Stop the Z3 query in progress, if Z3 is in use (best effort)."""
        smt = sys.modules.get("checker.smt")
        if smt is not None:
            with contextlib.suppress(Exception):
                smt.interrupt_solvers()


def signal_name(signum: int) -> str:
    """``SIGINT``, ``SIGTERM``, or ``signal N``."""
    return _SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}")


def explored_text(st: Stats | None) -> str:
    """What the last progress report (``st``) said was explored, as a clause (or
    nothing)."""
    if st is None:
        return "; nothing was explored"
    return (f"; had explored at least {count(st.states, 'state')}, {count(st.zones, 'zone')} in"
            f" {st.seconds:.1f} s, with no violation")


def interrupted_line(command: str, signum: int, st: Stats | None) -> str:
    """The line that says the command was interrupted, and what it had explored."""
    name = _SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}")
    what = {"check": "no verdict", "prove": "nothing is proved",
            "synth": "no safe region is claimed"}.get(command, "stopped")
    line = f"kvrace {command}: interrupted by {name}; {what}"
    if st is not None:
        line += (f" (had explored at least {count(st.states, 'state')},"
                 f" {count(st.zones, 'zone')} in"
                 f" {st.seconds:.1f} s)")
    return line

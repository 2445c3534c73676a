"""Running one command line: parse it, dispatch to the command's module, and turn
every failure into its message and exit code (never a traceback)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from checker import version
from checker.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_OK,
    BadSpec,
    Output,
    Session,
    short,
)
from checker.cli.parser import COMMANDS, MEMORY_LIMITED, MODULES, shared_parser
from checker.cli.signals import Interrupted, SignalWatcher, explored_text, interrupted_line
from checker.engines.proctree import kill_run
from checker.errors import UsageError
from checker.limits import SAFETY_SHARE, MemoryGuard, safety_limit_mb
from checker.model.interface import LimitReached, ModelRuntimeError, Undecided
from checker.present import jsonout

Command = Callable[[argparse.Namespace, Session], int]
"""A command: its parsed arguments and the session in, the exit code out."""


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting.

    Output goes through :class:`~checker.cli.common.Output`: control characters
    coming from a spec are replaced, and a closed or full stdout is reported on
    stderr as a warning while the exit code stays the verdict's.
    """
    words = list(argv) if argv is not None else sys.argv[1:]
    session = Session(Output(stdout if stdout is not None else sys.stdout),
                      Output(stderr if stderr is not None else sys.stderr), "--json" in words)
    out, err = session.out, session.err
    if SignalWatcher.active is not None:
        SignalWatcher.active.explored = lambda: session.explored
    code = _run_command(words, session)
    if session.json and session.errors:
        out.write(jsonout.document(command_of(words), code, {}, session.errors))
    watcher = SignalWatcher.active
    if watcher is not None and watcher.received is not None and not watcher.reporting:
        # The signal's exception was swallowed (Z3 was cancelled, or it was raised in a
        # destructor): whatever the command concluded from that, it was interrupted.
        watcher.reporting = True
        err.write(interrupted_line(command_of(argv or sys.argv[1:]), watcher.received,
                                   session.explored) + "\n")
        code = 128 + watcher.received
    out.flush()
    if out.error is not None and not isinstance(out.error, BrokenPipeError):
        err.write(f"kvrace: warning: the output could not be written ({short(out.error)});"
                  f" exit code {code} is the result\n")
    err.flush()
    return code


def _run_command(words: list[str], session: Session) -> int:
    """Parse ``words`` and run the command they name; every failure is reported here."""
    command = "kvrace"
    try:
        parser = shared_parser()
        args = parser.parse_args(words)
        if args.show_version:
            session.out.write(f"kvrace {version()}\n")
            return EXIT_OK
        if args.command is None:
            parser.print_help(session.err if session.json else session.out)
            session.fail("usage", "no command given")
            return EXIT_BAD_INPUT
        command = args.command
        # Each command's module is imported when it runs: `kvrace lint` does not load Z3.
        module = MODULES.get(command, command)
        run: Command = importlib.import_module(f"checker.cli.{module}").run
        with _safety_net(args):
            return run(args, session)
    except Interrupted as e:
        if SignalWatcher.active is not None:
            SignalWatcher.active.reporting = True
        return _interrupted(command, e.signum, session)
    except KeyboardInterrupt:
        return _interrupted(command, signal.SIGINT, session)
    except Exception as exc:  # the last line of defence: never a traceback
        return _failure(exc, command, session)


def _safety_net(args: argparse.Namespace) -> MemoryGuard:
    """Without ``--max-memory``, a guard at most of the memory available: a run that
    would take it all ends as inconclusive instead of being killed by the kernel (or
    of swapping until no time limit holds)."""
    if getattr(args, "max_memory", None) is not None:
        return MemoryGuard(None)
    limit = safety_limit_mb()
    what = (None if limit is None else f"memory limit ({limit:,} MiB, {SAFETY_SHARE:.0%} of"
            " the memory available at the start; --max-memory sets another) reached")
    return MemoryGuard(limit, what, interval=0.05)


def _interrupted(command: str, signum: int, session: Session) -> int:
    """Report an interrupt: exit code 128 + the signal number."""
    line = interrupted_line(command, signum, session.explored)
    session.err.write(line + "\n")
    session.fail("interrupted", line)
    return 128 + signum


def _failure(exc: Exception, command: str, session: Session) -> int:
    """Report a failure of ``command`` (a usage error, a broken spec, a limit reached
    before exploring, a model error, a bug) and return its exit code."""
    out, err = session.out, session.err
    if isinstance(exc, UsageError):
        err.write(f"{exc}\n")
        session.fail("usage", str(exc))
        return EXIT_BAD_INPUT
    if isinstance(exc, BadSpec):
        err.write(exc.error.render() + "\n")
        session.errors = jsonout.diagnostic_errors(exc.error.diagnostics)
        return EXIT_BAD_INPUT
    if isinstance(exc, Undecided):
        err.write(f"kvrace: the solver could not decide a query ({exc}); inconclusive\n")
        session.fail("solver-unknown", f"the solver could not decide a query ({exc})")
        return EXIT_INCONCLUSIVE
    if isinstance(exc, LimitReached):
        if session.json:
            session.fail("limit", f"{exc.what}; nothing was explored")
        else:
            out.write(f"INCONCLUSIVE: {exc.what}; nothing was explored\n")
        return EXIT_INCONCLUSIVE
    if isinstance(exc, ModelRuntimeError):
        err.write(f"kvrace: model error: {exc.message}\n"
                  "  (run `kvrace check` at concrete values for the trace)\n")
        session.fail("model-error", exc.message)
        return EXIT_BAD_INPUT
    if isinstance(exc, RecursionError):
        err.write("kvrace: the spec is nested too deeply to process\n")
        session.fail("too-deep", "the spec is nested too deeply to process")
        return EXIT_BAD_INPUT
    if isinstance(exc, MemoryError):
        out.write(f"INCONCLUSIVE: out of memory{explored_text(session.explored)}\n")
        advice = ("use --max-memory to stop earlier, with the statistics of what was"
                  " explored" if command in MEMORY_LIMITED else
                  "a smaller model (fewer values in its types) needs less memory")
        err.write(f"kvrace {command}: out of memory; no verdict ({advice})\n")
        return EXIT_INCONCLUSIVE
    watcher = SignalWatcher.active
    if watcher is not None and watcher.received is not None:
        # e.g. ctypes.ArgumentError wrapping the interrupt raised in a Z3 call:
        # main() reports the interrupt.
        return 128 + watcher.received
    err.write(f"kvrace {command}: internal error: {type(exc).__name__}: {short(exc)}\n"
              "  this is a bug in kvrace, not a verdict; please report it with the"
              " command and the spec\n")
    session.fail("internal", f"{type(exc).__name__}: {short(exc)}")
    return EXIT_INTERNAL


def command_of(argv: Sequence[str]) -> str:
    """The subcommand named on the command line, for messages printed before parsing."""
    return next((a for a in argv if a in COMMANDS), "kvrace")


def entry_point(early_signals: Sequence[int] = ()) -> None:
    """Console-script entry: ``kvrace``.

    ``early_signals`` are signals caught while the program was starting (see
    ``checker/__main__.py``): the run ends at once as interrupted.
    """
    try:
        SignalWatcher()
        if early_signals:
            raise Interrupted(early_signals[0])
        code = main(None, sys.stdout, sys.stderr)
    except (Interrupted, KeyboardInterrupt) as e:  # outside main's own handling
        if SignalWatcher.active is not None:
            SignalWatcher.active.reporting = True
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        watcher = SignalWatcher.active
        explored = watcher.explored() if watcher is not None else None
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(interrupted_line(command_of(sys.argv[1:]), signum, explored)
                             + "\n")
        code = 128 + signum
    if sys.stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        # Keep Python from complaining about a closed pipe or a full disk at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    if "ray" in sys.modules:
        # Ray's C++ threads can crash the interpreter's finalisation (SIGSEGV, exit -11)
        # after ray.shutdown(): everything is written and Ray is stopped, so end here.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
        kill_run()  # what of a local instance is still running (e.g. an interrupted start)
        os._exit(code)
    sys.exit(code)

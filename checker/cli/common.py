"""What the commands share: exit codes, the output streams and the session of one
run, loading a spec, and side outputs (files written after the verdict)."""

from __future__ import annotations

import argparse
import errno
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TextIO

from checker.cli.values import parse_param
from checker.diagnostics import SpecError, printable
from checker.engines import Limits, Options, Prepass, Stats
from checker.errors import KvraceError, UsageError
from checker.language import load
from checker.model import ir
from checker.model.compiled import ParamError, SpecModel
from checker.model.trace import Trace
from checker.present import jsonout
from checker.present.progress import Progress, mode_for

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 3
EXIT_VACUOUS = 4
"""``check --strict``: every property holds, but part of the model was never exercised."""
EXIT_UNREACHABLE = 5
"""``check``: every property holds, but a ``reachable`` query is never reachable (with
``--query NAME``: that query is never reachable)."""
EXIT_DEVIATES = 6
"""``validate``: the log is not a run of the spec (a line deviates)."""
EXIT_INTERNAL = 70
"""An internal error (a bug in kvrace, or out of memory): never a verdict."""
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
"""Interrupted by SIGINT (Ctrl-C) or SIGTERM: 128 + the signal number."""


class Output:
    """A text stream for the command's output.

    Control characters other than newline and tab are replaced (U+FFFD), so an
    assert message cannot send terminal escapes; JSON output is unaffected
    (json escapes them).  A write that fails — stdout closed, a reader gone
    (``| head``), a full disk — is remembered in :attr:`error` and later writes
    are dropped: the command still runs to its verdict and exit code.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.error: BaseException | None = None if stream is not None else OSError(
            "the stream is closed")

    def write(self, text: str) -> int:
        """Write ``text`` without its control characters."""
        return self.raw_write(printable(text))

    def raw_write(self, text: str) -> int:
        """Write ``text`` as it is (the progress line's own terminal codes)."""
        if self.error is None and self.stream is not None:
            try:
                self.stream.write(text)
            except (OSError, ValueError) as exc:  # ValueError: the file was closed
                self.error = exc
        return len(text)

    def flush(self) -> None:
        """Flush the stream, remembering a failure."""
        if self.error is None and self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self.error = exc

    def isatty(self) -> bool:
        """Whether the stream is a terminal."""
        try:
            return self.stream is not None and self.error is None and self.stream.isatty()
        except (OSError, ValueError):
            return False


class BadSpec(KvraceError):
    """A spec that failed to load: its diagnostics are printed, exit code 2."""

    def __init__(self, error: SpecError) -> None:
        super().__init__(error.render())
        self.error = error


@dataclass
class Session:
    """One run of the command line: its streams, when it started (a ``--timeout``
    counts from there), what the explorer last reported (for the line printed on an
    interrupt) and, for ``--json``, why it failed."""

    out: Output
    err: Output
    json: bool = False
    started: float = field(default_factory=time.monotonic)
    explored: Stats | None = None
    """The last statistics an engine reported."""
    errors: list[dict[str, object]] = field(default_factory=list)
    """Why the command failed, as JSON ``errors`` entries (printed under ``--json``)."""

    def fail(self, code: str, message: str, file: str | None = None) -> None:
        """Record why the command failed (one ``errors`` entry; its place, if the
        message names one, as ``file``, ``line`` and ``col``)."""
        self.errors = [jsonout.error_from_text(code, message, file)]

    def deadline(self, timeout: float | None) -> float | None:
        """The instant a command with ``--timeout`` must end by."""
        return None if timeout is None else self.started + timeout

    def left(self, timeout: float | None) -> float | None:
        """What is left of a command's ``--timeout`` now."""
        end = self.deadline(timeout)
        return None if end is None else max(end - time.monotonic(), 0.001)

    def limits(self, args: argparse.Namespace) -> Limits:
        """The limits of ``--max-states``, ``--timeout`` and ``--max-memory``."""
        for name in ("max_states", "timeout", "max_memory"):
            v = getattr(args, name)
            if v is not None and v <= 0:
                raise UsageError(f"--{name.replace('_', '-')} must be positive")
        return Limits(args.max_states, args.timeout, args.max_memory,
                      self.deadline(args.timeout))

    def model(self, spec: ir.Spec, params: dict[str, Fraction],
              timeout: float | None = None, concrete: bool = True) -> SpecModel:
        """The spec compiled at ``params``; a bad parameter is a usage error
        (``concrete``: as for :class:`SpecModel`)."""
        try:
            return SpecModel(spec, params, self.deadline(timeout), concrete)
        except ParamError as e:
            raise UsageError(f"{spec.path}: error[KVR400]: {e}") from None

    def progress(self, command: str, quiet: bool) -> Progress:
        """The progress display of a long command on stderr (see
        :mod:`checker.present.progress`)."""
        return Progress(self.err, command, mode_for(self.err, quiet))

    def explorer_progress(self, display: Progress) -> Callable[[Stats], None]:
        """The zone explorer's progress callback: remembers the statistics (for the
        line printed on an interrupt) and shows them."""

        def report(st: Stats) -> None:
            """Remember and show the statistics."""
            self.explored = st
            display.explorer(st)

        return report

    def search_options(self, args: argparse.Namespace, display: Progress) -> Options:
        """The explorer's options of ``check``'s search flags."""
        return Options(
            search="dfs" if args.dfs else "bfs",
            symmetry=not args.no_symmetry,
            clock_reduction=not args.no_clock_reduction,
            deadlock=not args.no_deadlock,
            local_time=getattr(args, "local_time", False),
            prepass=Prepass(getattr(args, "clock_bounds", "timed")),
            progress=self.explorer_progress(display),
            on_phase=display.phase,
        )


def load_spec(path: str, args: argparse.Namespace | None = None) -> ir.Spec:
    """The spec at ``path``; with ``args``, its structural constants take their ``-p``
    values, and ``params_of(args)`` then leaves them out (they are not timing parameters)."""
    consts = params_of(args) if args is not None and getattr(args, "param", None) else None
    try:
        spec = load(path, consts)
    except SpecError as e:
        raise BadSpec(e) from None
    if args is not None:
        args.const_names = [c.name for c in spec.consts]
    return spec


def params_of(args: argparse.Namespace) -> dict[str, Fraction]:
    """The ``-p NAME=VALUE`` timing parameters (not the structural constants)."""
    out: dict[str, Fraction] = {}
    given: dict[str, str] = {}
    consts = getattr(args, "const_names", ())
    for text in args.param:
        name, value = parse_param(text)
        if name in given:
            raise UsageError(f"-p {name} is given twice ({given[name]} and {text.strip()});"
                             " give each parameter once")
        given[name] = text.strip()
        if name not in consts:
            out[name] = value
    return out


def make_parent(path: str) -> None:
    """Create the folder an output file goes to (``out/`` in ``--diagram out/x.svg``)."""
    parent = os.path.dirname(path)
    if parent:
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_json(path: str, doc: object) -> str:
    """Write ``doc`` to ``path`` as JSON; returns the note for the user."""
    make_parent(path)
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return f"wrote {path}"


def private_folder(path: str, create: bool = True) -> int | None:
    """A file descriptor of the folder ``path`` to write files into by name: created
    (mode 0700) if missing and ``create``, else refused unless it is a real folder (not
    a link) owned by the user and writable by no one else, where nobody else can plant
    a link under a predictable name.  None when it is missing and not ``create``."""
    if create and not os.path.lexists(path):
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {path}: {exc.strerror or exc}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            return None
        raise UsageError(f"cannot open {path}: it vanished") from None
    except OSError as exc:
        bad = os.path.islink(path) or not os.path.isdir(path)
        raise UsageError(f"{path}: {'a link or not a folder' if bad else exc.strerror or exc}"
                         ) from None
    st = os.fstat(fd)
    why: str | None = None
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        why = "owned by another user"
    elif st.st_mode & 0o022:
        why = "writable by others"
    if why is not None:
        os.close(fd)
        raise UsageError(f"{path}: {why}: kvrace writes predictable names there only into"
                         " a folder of your own")
    return fd


def write_json_in(folder_fd: int, folder: str, name: str, doc: object) -> str:
    """Write ``doc`` as JSON to the file ``name`` of an open folder (see
    :func:`private_folder`), never through a link; returns the file's path."""
    path = os.path.join(folder, name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o644, dir_fd=folder_fd)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    except OSError as exc:
        why = "it is a link" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise UsageError(f"cannot write {path}: {why}") from None
    return path


def side_output(err: Output, path: str, write: Callable[[], str | None]) -> None:
    """Write a side output (a trace file, a diagram) after the verdict was printed.

    ``write`` returns what to tell the user (``wrote FILE``).  If it fails, for
    any reason, the failure is a warning on stderr and the exit code stays the
    verdict's: a side output can never lose or change a verdict.
    """
    try:
        note = write()
    except UsageError as exc:
        note = f"kvrace: warning: {exc}; the verdict above stands"
    except Exception as exc:  # any failure of a side output is a warning
        note = (f"kvrace: warning: could not write {path} ({short(exc)}); the verdict above"
                " stands")
    if note:
        err.write(note + "\n")


def short(exc: BaseException, width: int = 200) -> str:
    """An exception as one short line for a message."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= width else text[: width - 3] + "..."


def check_diagram_path(path: str) -> None:
    """Refuse, before any work, a diagram file whose format kvrace cannot write."""
    from checker.present import dot  # with graphviz: only when a diagram is asked for

    suffix = os.path.splitext(path)[1]
    if suffix.lower() not in dot.FORMATS:
        shown = f"'{suffix}'" if suffix else "no extension"
        raise UsageError(f"cannot write a diagram to {path}: unknown format ({shown});"
                         " use .dot, .svg, .png or .pdf")


def draw_trace(trace: Trace, path: str) -> str:
    """Render ``trace`` to ``path``; returns what to tell the user (stderr)."""
    from checker.present import dot

    too_large = dot.diagram_too_large(trace)
    if too_large is not None:
        raise UsageError(f"cannot draw {path}: {too_large}")
    make_parent(path)
    try:
        result = dot.render(dot.lasso_dot(trace), path)
    except dot.RenderError as exc:
        raise UsageError(f"cannot draw {path}: {exc}") from None
    if result.hint:
        return result.hint
    if result.kept is not None:
        return f"wrote {result.output}; warning: {result.kept}"
    if result.dot != result.output:
        return f"wrote {result.output} (and its source {result.dot})"
    return f"wrote {result.output}"


def free_params(args: argparse.Namespace, spec: ir.Spec) -> list[str]:
    """The parameters of ``--free`` (default: every one with a declared range), in
    declaration order."""
    names = [n.strip() for text in args.free for n in text.split(",") if n.strip()]
    declared = [p.name for p in spec.params]
    consts = {c.name: c.value for c in spec.consts}
    for n in names:
        if n in consts:
            raise UsageError(f"--free: `{n}` is a structural constant, not a timing parameter:"
                             f" it cannot be synthesized; fix it with -p {n}=VALUE (now"
                             f" {consts[n]}) and run once per value")
        if n not in declared:
            raise UsageError(f"--free: unknown parameter `{n}` (the spec declares:"
                             f" {', '.join(declared)})")
    if not names:
        names = [p.name for p in spec.params if p.lo is not None or p.hi is not None]
    return [p for p in declared if p in names]


def query_name(spec: ir.Spec, name: str, option: str) -> str:
    """``name`` if the spec declares ``reachable name``; a usage error otherwise."""
    names = [q.name for q in spec.queries]
    if name not in names:
        raise UsageError(f"{option}: no query `reachable {name}` in {spec.path}"
                         f" (it declares: {', '.join(names) or 'none'})")
    return name

"""The tutorial artifact: ``docs/tutorial.md``, with every command's real output.

The tutorial marks what generation maintains with two HTML comments, each on
the line right before a fenced code block:

* ``<!-- run -->`` -- the block is a console session.  A line starting with
  ``$ `` is a command; the lines after it, up to the next command or the end
  of the block, are its output, ending with ``[exit N]`` (the exit status,
  always shown).  Generation reruns every command and rewrites its output.
* ``<!-- file: PATH -->`` -- the block shows the file ``PATH`` (relative to
  the repository root) in full; generation copies the file's text in.

Commands run without a shell: a command line is split as a POSIX shell would
split it (quotes work), but pipes, redirections, ``&&``, variables and globs
are not available.  A leading ``kvrace`` runs ``python -m checker`` with this
interpreter, and a leading ``python`` runs this interpreter; any other program
is looked up on ``PATH``.  Every block runs in its own scratch directory that
holds copies of the repository's ``spec/`` and ``docs/``, so commands see the
paths a reader sees in a clone and nothing they write reaches the repository.
Blocks run concurrently (one per CPU); the commands of a block run in order,
so a command may read what an earlier one in the same block wrote.  A file
that a command writes under ``docs/tutorial/`` in the scratch copy (a
counterexample diagram, say) is a generated artifact too.

The environment is fixed (locale, time zone, terminal width, hash seed, no
git configuration), so the output is byte-for-byte deterministic apart from
the run times, peak memory and rates that kvrace measures.  :func:`equal`
compares modulo those numbers, and :func:`generate` returns the committed
bytes of a file when the fresh ones differ from them only there: the
committed tutorial keeps the real numbers of the run that last changed it,
and regenerating does not churn them.

A command that fails unexpectedly makes generation raise
:class:`TutorialError`: a Python traceback in its output, a kvrace exit status
other than 0-3, any exit status of 126 or more (cannot run, not found,
crashed), a program that is not installed, death by a signal, or a run longer
than :data:`COMMAND_TIMEOUT` seconds.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import checker
from tools.artifacts import counterexamples

TUTORIAL = "docs/tutorial.md"
GENERATED_DIR = "docs/tutorial"  # files commands write here are artifacts
COPIED = ("spec", "docs", "benchmarks")  # what each scratch directory holds, at the same paths
COMMAND_TIMEOUT = 300.0  # seconds; a longer command is an error
KVRACE_EXIT_CODES = (0, 1, 2, 3, 6)  # 6: validate, the log deviates

RUN_MARK = re.compile(r"^<!--\s*run\s*-->\s*$")
FILE_MARK = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->\s*$")
FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})[^`]*$")
EXIT_LINE = re.compile(r"^\[exit -?[0-9]+\]$")
PROMPT = "$ "
SHELL_ONLY = {"|", "||", "&", "&&", ";", ">", ">>", "<", "2>", "2>&1"}

# Run-dependent numbers in kvrace's output, with what replaces them when
# comparing.  `check`: "in 0.04 s (1,356 zones/s), peak memory 45 MiB";
# `synth` / `prove`: "..., 6957 solver queries, 9.6 s"; `--json`: "seconds",
# "zones_per_second" and "peak_memory_mib".
TIMINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"in [0-9.]+ s \([0-9,.]+ zones/s\), peak memory [0-9.]+ MiB"),
     "in <seconds> s (<rate> zones/s), peak memory <memory> MiB"),
    (re.compile(r"solver (query|queries), [0-9.]+ s\b"), r"solver \1, <seconds> s"),
    (re.compile(r"transitions in [0-9.]+ s \(no symmetry"),
     "transitions in <seconds> s (no symmetry"),
    (re.compile(r'"(seconds|zones_per_second|peak_memory_mib)": [0-9.eE+-]+'), r'"\1": <n>'),
)


class TutorialError(RuntimeError):
    """The tutorial cannot be generated: a broken marker or a command that failed."""


@dataclass
class RunBlock:
    """A ``<!-- run -->`` block: its fence lines and its commands."""

    line: int  # 1-based line of the first command, for messages
    opener: str
    closer: str
    commands: list[str]


@dataclass
class FileBlock:
    """A ``<!-- file: PATH -->`` block: its fence lines and the file it shows."""

    line: int
    opener: str
    closer: str
    path: str


Piece = str | RunBlock | FileBlock


@dataclass
class Ran:
    """One command's result, as the tutorial shows it."""

    command: str
    output: str
    code: int


def mask(text: str) -> str:
    """``text`` with every run-dependent number replaced by a placeholder."""
    for pattern, replacement in TIMINGS:
        text = pattern.sub(replacement, text)
    return text


def parse(text: str) -> list[Piece]:
    """Split the tutorial into verbatim lines and the blocks generation maintains."""
    lines = text.splitlines(keepends=True)
    pieces: list[Piece] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.rstrip("\n")
        run = RUN_MARK.match(stripped)
        file = FILE_MARK.match(stripped)
        if not (run or file):
            pieces.append(line)
            i += 1
            continue
        pieces.append(line)
        opening = FENCE_OPEN.match(lines[i + 1].rstrip("\n")) if i + 1 < len(lines) else None
        if opening is None:
            raise TutorialError(f"{TUTORIAL}:{i + 1}: a marker must be followed by a fenced"
                                " code block (``` on the next line)")
        opener = lines[i + 1]
        fence = opening.group(1)
        end = i + 2
        while end < len(lines) and lines[end].rstrip("\n") != fence:
            end += 1
        if end >= len(lines):
            raise TutorialError(f"{TUTORIAL}:{i + 2}: code block is not closed")
        body = lines[i + 2:end]
        if run:
            commands = [b.rstrip("\n")[len(PROMPT):] for b in body if b.startswith(PROMPT)]
            if not commands or not body[0].startswith(PROMPT):
                raise TutorialError(f"{TUTORIAL}:{i + 3}: a run block starts with a command"
                                    f" line (`{PROMPT}...`)")
            pieces.append(RunBlock(i + 3, opener, lines[end], commands))
        else:
            assert file is not None
            pieces.append(FileBlock(i + 3, opener, lines[end], file.group(1)))
        i = end + 1
    return pieces


def _env(home: Path) -> dict[str, str]:
    """The fixed environment every command runs in."""
    package_parent = Path(checker.__file__).resolve().parent.parent
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "COLUMNS": "80",
        "LINES": "24",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",  # stdout and stderr interleave in the order written
        "PYTHONIOENCODING": "utf-8",
        "PYTHONPATH": str(package_parent),  # the checker this interpreter imports
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "SOURCE_DATE_EPOCH": "0",
    }


def _argv(command: str, where: str) -> list[str]:
    """The program and arguments of one command line."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise TutorialError(f"{where}: cannot split `{command}`: {exc}") from None
    if not words:
        raise TutorialError(f"{where}: empty command")
    shell = sorted(set(words) & SHELL_ONLY)
    if shell:
        raise TutorialError(f"{where}: `{command}` uses {' '.join(shell)}; commands run"
                            " without a shell")
    if words[0] == "kvrace":
        return [sys.executable, "-m", "checker", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    exe = shutil.which(words[0])
    if exe is None:
        raise TutorialError(f"{where}: `{words[0]}` is not installed (not on PATH)")
    return [exe, *words[1:]]


def run_command(command: str, cwd: Path, where: str = TUTORIAL) -> Ran:
    """Run one command line in ``cwd``; raise TutorialError if it fails unexpectedly."""
    argv = _argv(command, where)
    try:
        done = subprocess.run(argv, cwd=cwd, env=_env(cwd), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=COMMAND_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise TutorialError(f"{where}: `{command}` ran longer than {COMMAND_TIMEOUT:g} s"
                            ) from None
    except OSError as exc:
        raise TutorialError(f"{where}: cannot run `{command}`: {exc}") from None
    output = done.stdout.decode("utf-8", "replace")
    code = done.returncode
    problem = None
    if "Traceback (most recent call last)" in output:
        problem = "its output holds a Python traceback"
    elif code < 0:
        problem = f"it was killed by signal {-code}"
    elif argv[:3] == [sys.executable, "-m", "checker"] and code not in KVRACE_EXIT_CODES:
        problem = f"kvrace exited {code}, which is none of its exit codes"
    elif code >= 126:
        problem = f"it exited {code}: it could not run, or it crashed"
    elif str(cwd) in output:
        problem = "its output names the scratch directory (use relative paths)"
    if problem is None:
        for line in output.splitlines():
            if line.startswith(PROMPT) or line.startswith(("```", "~~~")) or EXIT_LINE.match(line):
                problem = f"its output has a line the tutorial would misread: {line!r}"
                break
    if problem:
        raise TutorialError(f"{where}: `{command}` failed unexpectedly: {problem}; its output:\n"
                            f"{output}")
    if output and not output.endswith("\n"):
        output += "\n"
    return Ran(command, output, code)


def _snapshot(folder: Path) -> dict[Path, tuple[int, int]]:
    """Every file under ``folder`` with its modification time and size."""
    if not folder.is_dir():
        return {}
    return {p: (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_block(root: Path, scratch: Path, block: RunBlock) -> tuple[list[Ran], dict[str, bytes]]:
    """Run a block's commands in a fresh copy of ``spec/`` and ``docs/``.

    Returns their results and the files they wrote under ``docs/tutorial/``.
    """
    scratch.mkdir(parents=True)
    for name in COPIED:
        if (root / name).is_dir():
            shutil.copytree(root / name, scratch / name, symlinks=False)
    watched = scratch / GENERATED_DIR
    before = _snapshot(watched)
    results = []
    for k, command in enumerate(block.commands):
        where = f"{TUTORIAL}:{block.line} (command {k + 1} of its block)"
        results.append(run_command(command, scratch, where))
    written = {
        path.relative_to(scratch).as_posix(): path.read_bytes()
        for path, stamp in _snapshot(watched).items() if before.get(path) != stamp
    }
    return results, written


def _workers() -> int:
    """How many blocks run at once: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _weight(block: RunBlock) -> int:
    """A rough cost, to start the slow blocks first (parametric runs are slow)."""
    return sum(10 if c.split()[1:2] in (["synth"], ["prove"]) else 1 for c in block.commands)


def render_run(block: RunBlock, results: Sequence[Ran]) -> str:
    """A run block's text: each command, its output and its exit status."""
    out = [block.opener]
    for r in results:
        out.append(f"{PROMPT}{r.command}\n{r.output}[exit {r.code}]\n")
    out.append(block.closer)
    return "".join(out)


def render_file(root: Path, block: FileBlock) -> str:
    """A file block's text: the file, in full."""
    path = root / block.path
    if not path.is_file():
        raise TutorialError(f"{TUTORIAL}:{block.line}: no such file: {block.path}")
    text = path.read_text(encoding="utf-8")
    fence = block.closer.rstrip("\n")
    if any(line.startswith(fence) for line in text.splitlines()):
        raise TutorialError(f"{TUTORIAL}:{block.line}: {block.path} holds a line starting"
                            f" with {fence}; use a longer fence")
    if text and not text.endswith("\n"):
        text += "\n"
    return block.opener + text + block.closer


def _needs_graphviz(pieces: Sequence[Piece]) -> bool:
    """Whether a command draws a diagram (and so needs Graphviz ``dot``)."""
    return any(isinstance(p, RunBlock) and any("--diagram" in c or c.startswith("kvrace graph")
                                               or c.startswith("kvrace draw")
                                               for c in p.commands)
               for p in pieces)


def generate(root: Path) -> dict[str, bytes]:
    """``docs/tutorial.md`` with every command rerun and every file block refreshed,
    plus the files its commands write under ``docs/tutorial/``.

    A file whose fresh bytes differ from the committed ones only where
    :func:`equal` does not look is returned as committed.
    """
    source = root / TUTORIAL
    if not source.is_file():
        raise TutorialError(f"no {TUTORIAL} under {root}")
    pieces = parse(source.read_text(encoding="utf-8"))
    if _needs_graphviz(pieces) and shutil.which("dot") is None:
        raise TutorialError("the tutorial draws diagrams: install Graphviz `dot`"
                            " (`bash .ci/setup`)")
    blocks = [p for p in pieces if isinstance(p, RunBlock)]
    order = sorted(range(len(blocks)), key=lambda i: -_weight(blocks[i]))
    results: dict[int, list[Ran]] = {}
    written: dict[str, bytes] = {}
    with (tempfile.TemporaryDirectory(prefix="kvrace-tutorial-") as tmp,
          ThreadPoolExecutor(max_workers=_workers()) as pool):
        futures = {i: pool.submit(_run_block, root, Path(tmp) / f"block{i}", blocks[i])
                   for i in order}
        for i in order:
            try:
                ran, files = futures[i].result()
            except BaseException:
                for future in futures.values():
                    future.cancel()  # do not start the blocks still waiting
                raise
            results[i] = ran
            for rel, data in files.items():
                if rel in written:
                    raise TutorialError(f"{TUTORIAL}:{blocks[i].line}: {rel} is written"
                                        " by two blocks")
                written[rel] = data
    text = []
    index = {id(b): i for i, b in enumerate(blocks)}
    for piece in pieces:
        if isinstance(piece, RunBlock):
            text.append(render_run(piece, results[index[id(piece)]]))
        elif isinstance(piece, FileBlock):
            text.append(render_file(root, piece))
        else:
            text.append(piece)
    fresh = {TUTORIAL: "".join(text).encode("utf-8"), **written}
    return {rel: (root / rel).read_bytes()
            if (root / rel).is_file() and equal(root, rel, data) else data
            for rel, data in sorted(fresh.items())}


def equal(root: Path, rel: str, data: bytes) -> bool:
    """Whether the committed ``rel`` equals ``data`` apart from run-dependent numbers.

    Markdown is compared with :func:`mask` applied to both sides; an SVG
    rendered by a Graphviz other than the one that rendered the committed
    diagrams counts as equal (its ``.dot`` source is compared byte for byte
    instead); anything else byte for byte.
    """
    path = root / rel
    if not path.is_file():
        return False
    committed = path.read_bytes()
    if rel.endswith(".md"):
        return mask(committed.decode("utf-8", "replace")) == mask(data.decode("utf-8", "replace"))
    if rel.endswith(".svg") and not counterexamples.same_graphviz(
            root, counterexamples.dot_version()):
        return True
    return committed == data

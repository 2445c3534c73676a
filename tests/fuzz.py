"""A robustness campaign: mutated specs and command lines never give a traceback.

    python tests/fuzz.py --lint 100000 --check 5000 --seed 0 [--out DIR]

Every input of a campaign is a function of ``(seed, phase, index)`` only, so a
campaign is the same on every machine and any failing input can be rebuilt
(``--only lint:123`` or ``--only check:45`` replays one input and prints it).
``--viewer N`` then sends N requests to the viewer's API (``tests/fuzz_viewer.py``;
``--only viewer:7`` prints one).

Inputs are the specs of ``spec/`` and ``tests/`` mutated by a grammar-aware
mutator (:func:`mutate`): numbers replaced by extreme values, identifiers by
other identifiers or keywords, types by other type expressions, enumerations
grown, declarations deleted, duplicated or moved, and tokens, lines and
characters deleted, duplicated or swapped.

* ``lint`` inputs run in-process (``load_text``): a failure is any exception
  other than :class:`~checker.diagnostics.SpecError`, a diagnostic without a
  position inside the file, or a run longer than ``--lint-limit`` seconds.
* ``check`` runs (and a few ``show``/``graph`` runs) use mutated command lines
  too (options, ``-p`` values, limits).  Each runs the real command line
  (``checker.cli.main``) in a forked child of this process, with ``--timeout``
  and ``--max-memory``.  A failure is exit code 70 (an internal error: the
  exception the command line caught as its last defence, a ``MemoryError``),
  an uncaught exception, a run longer than its timeout + 1 s (a hang), or a
  peak resident memory over ``--max-memory`` + 10 %.  ``--synth N`` adds ``synth``
  runs (mutated specs, ``--timeout``, ``--free``), judged the same way, after the
  others (their own random stream: they change no other input).  A run past its timeout
  + 1 s that used less CPU time than that was kept waiting by the machine's other
  work: it is counted (``slow``) and written out, but is not a failure.

The last line of stdout is the summary; every failing input is written to
``--out`` (default ``fuzz-out``) as ``PHASE-INDEX.kvr`` with its command line and
the failure in a header comment, ready to become a regression test
(``tests/fuzz_regressions/``).  Exit 0 when nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from checker.diagnostics import SpecError  # noqa: E402
from checker.language import load_text  # noqa: E402

# ---- the corpus --------------------------------------------------------------------------

_SKIP_DIRS = ("fuzz_regressions",)


def corpus() -> list[tuple[str, str]]:
    """The seed specs: every ``.kvr`` under ``spec/`` and ``tests/`` (path, text), sorted."""
    out = []
    for top in ("spec", "tests"):
        for p in sorted((ROOT / top).rglob("*.kvr")):
            if any(d in p.parts for d in _SKIP_DIRS) or p.stat().st_size > 20_000:
                continue
            out.append((str(p.relative_to(ROOT)), p.read_text(encoding="utf-8", errors="replace")))
    return out


# ---- the mutator -------------------------------------------------------------------------

_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|[A-Za-z_][A-Za-z0-9_]*|[0-9]+(?:\.[0-9]+)?'
    r"|:=|==|!=|<=|>=|=>|->|\.\.|\S"
)
KEYWORDS = ("model", "type", "symmetric", "param", "actor", "var", "clock", "event",
            "deadline", "invariant", "property", "when", "do", "receives", "reset", "assert",
            "if", "else", "skip", "while", "leadsto", "within", "in", "forall", "exists",
            "true", "false", "none", "not", "and", "or", "bool")
NUMBERS = ("0", "1", "2", "3", "7", "10", "100", "1000", "65536", "1000000", "4294967296",
           "999999999999999999999999999999", "9" * 40, "0.5", "0.0001", "1.000001", "0.0",
           "007", "-1", "-0", "-1000000", "1e9", "1.", ".5", "2.5", "1/3")
TYPES = ("{a}", "{}", "{a, a}", "0..0", "1..0", "0..1000000", "-5..5", "0..99999999999999",
         "bool", "bool?", "Req", "Req?", "Slot -> Req?", "(Req, Req) -> bool", "Req -> Req -> bool",
         "{x, y, z}", "-1..-2", "0..65535", "Nope")
ODD = ("(", ")", "[", "]", "{", "}", ".", ",", ":", ";", "=", "<", ">", "!", "?", "-", "+",
       "*", "/", "#", '"', "'", "\\", " ", "\n", "\t", "x", "0", "_", "&", "|", "@", "\x00",
       "\r", "\x7f", "\u00e9", "\u200b", "\ufeff", ":=", "..", "->", "=>")
_DECL = re.compile(r"^(?:symmetric\s+type|type|param|actor|var|clock|event|deadline|invariant"
                   r"|property|model)\b")
_ENUM = re.compile(r"\{\s*[A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*\s*\}")
_RANGE = re.compile(r"-?[0-9]+\s*\.\.\s*-?[0-9]+")


def _tokens(s: str) -> list[re.Match[str]]:
    return [m for m in _TOKEN.finditer(s) if not m.group().startswith("#")]


def _declarations(s: str) -> list[tuple[int, int]]:
    """Line ranges ``[start, end)`` of the top-level declarations of ``s``."""
    lines = s.split("\n")
    starts = [i for i, ln in enumerate(lines) if _DECL.match(ln)]
    if not starts:
        return []
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]


def _splice(s: str, m: re.Match[str], new: str) -> str:
    return s[: m.start()] + new + s[m.end():]


def _mutate_once(rng: random.Random, s: str) -> tuple[str, str]:
    """One mutation of ``s``: the new text and what was done, in words."""
    toks = _tokens(s)
    if not toks:
        return s + rng.choice(ODD), "append"
    kind = rng.choice(("number", "number", "ident", "ident", "keyword", "type", "enum", "range",
                       "del_decl", "dup_decl", "move_decl", "del_tok", "dup_tok", "swap_tok",
                       "del_line", "dup_line", "char"))
    if kind == "number":
        nums = [m for m in toks if m.group()[0].isdigit()]
        if nums:
            return _splice(s, rng.choice(nums), rng.choice(NUMBERS)), kind
    if kind in ("ident", "keyword"):
        names = [m for m in toks if m.group()[0].isalpha() or m.group()[0] == "_"]
        if names:
            m = rng.choice(names)
            new = rng.choice(KEYWORDS) if kind == "keyword" else rng.choice(names).group()
            return _splice(s, m, new), kind
    if kind == "type":
        spots = [m for pat in (_ENUM, _RANGE) for m in pat.finditer(s)]
        spots += [m for m in re.finditer(r"(?<=:)\s*[A-Z][A-Za-z0-9_]*", s)]
        if spots:
            return _splice(s, rng.choice(spots), " " + rng.choice(TYPES)), kind
    if kind == "enum":
        spots = list(_ENUM.finditer(s))
        if spots:
            m = rng.choice(spots)
            extra = ", ".join(f"g{k}" for k in range(rng.choice((1, 2, 4, 8, 12, 30))))
            return _splice(s, m, m.group()[:-1].rstrip() + ", " + extra + "}"), kind
    if kind == "range":
        spots = list(_RANGE.finditer(s))
        if spots:
            lo, hi = rng.choice((0, -3, 5, -10**12)), rng.choice((0, 1, 50, 1000, 10**6, 10**15))
            return _splice(s, rng.choice(spots), f"{lo}..{hi}"), kind
    lines = s.split("\n")
    decls = _declarations(s)
    if kind in ("del_decl", "dup_decl", "move_decl") and decls:
        a, b = rng.choice(decls)
        block = lines[a:b]
        if kind == "del_decl":
            return "\n".join(lines[:a] + lines[b:]), kind
        if kind == "dup_decl":
            return "\n".join(lines[:b] + block + lines[b:]), kind
        rest = lines[:a] + lines[b:]
        at = rng.randint(0, len(rest))
        return "\n".join(rest[:at] + block + rest[at:]), kind
    if kind in ("del_line", "dup_line"):
        i = rng.randrange(len(lines))
        if kind == "del_line":
            return "\n".join(lines[:i] + lines[i + 1:]), kind
        return "\n".join(lines[: i + 1] + lines[i:]), kind
    if kind in ("del_tok", "dup_tok"):
        m = rng.choice(toks)
        return _splice(s, m, "" if kind == "del_tok" else m.group() + " " + m.group()), kind
    if kind == "swap_tok" and len(toks) > 1:
        i = rng.randrange(len(toks) - 1)
        a, b = toks[i], toks[i + 1]
        return s[: a.start()] + b.group() + s[a.end(): b.start()] + a.group() + s[b.end():], kind
    i = rng.randrange(len(s)) if s else 0
    op = rng.randrange(3)
    ch = rng.choice(ODD)
    if op == 0:
        return s[:i] + s[i + 1:], "del_char"
    if op == 1:
        return s[:i] + ch + s[i:], "ins_char"
    return s[:i] + ch + s[i + 1:], "rep_char"


def mutate(rng: random.Random, s: str, count: int) -> tuple[str, list[str]]:
    """``count`` mutations of ``s`` in a row."""
    done = []
    for _ in range(count):
        s, what = _mutate_once(rng, s)
        done.append(what)
    return s, done


# ---- lint ---------------------------------------------------------------------------------


@dataclass
class Failure:
    """One failing input."""

    phase: str
    index: int
    source: str
    origin: str
    mutations: list[str]
    argv: list[str]
    kind: str
    detail: str


class _Hang(BaseException):
    """The time limit of one in-process lint ran out."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Hang()


def lint_input(seed: int, index: int, seeds: list[tuple[str, str]]
               ) -> tuple[str, str, list[str]]:
    """The lint input number ``index`` of a campaign: (origin, text, mutations)."""
    rng = random.Random(f"{seed}:lint:{index}")
    origin, text = seeds[rng.randrange(len(seeds))]
    text, done = mutate(rng, text, rng.choice((1, 1, 1, 2, 2, 3, 5)))
    return origin, text, done


def lint_one(text: str, limit: float) -> tuple[str, str] | None:
    """Lint ``text`` in-process: ``None`` when it gave a clean verdict, else (kind, detail)."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.monotonic()
    try:
        load_text(text, "mutant.kvr")
    except SpecError as e:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return _positioned(text, e)
    except _Hang:
        return "hang", f"lint ran over {limit:g} s"
    except RecursionError:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return "traceback", "RecursionError\n" + traceback.format_exc(limit=-4)
    except BaseException as e:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if isinstance(e, KeyboardInterrupt):
            raise
        return "traceback", f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=-4)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if time.monotonic() - t0 > limit:
        return "hang", f"lint took {time.monotonic() - t0:.1f} s"
    return None


def _positioned(text: str, e: SpecError) -> tuple[str, str] | None:
    """Every diagnostic of a failed lint names the file and a span inside it."""
    lines = text.split("\n")
    for d in e.diagnostics:
        sp = d.span
        if d.file != "mutant.kvr" or sp is None:
            return "unpositioned", f"{d.code}: {d.message}"
        if not (1 <= sp.line <= len(lines) and 1 <= sp.column <= len(lines[sp.line - 1]) + 1):
            return "unpositioned", f"{d.code} at {sp.line}:{sp.column}: {d.message}"
    try:
        e.render()
    except Exception as exc:
        return "traceback", f"render: {type(exc).__name__}: {exc}"
    return None


# ---- check (forked children) ------------------------------------------------------------

OPTIONS = ("--dfs", "--no-symmetry", "--no-clock-reduction", "--no-deadlock", "--json",
           "--explain", "--quiet")
BAD_VALUES = ("-1", "0", "abc", "nan", "inf", "1e400", "1/0", "", "99999999999999999999999",
              "0.0000001", "--json", "1_000", "٣")
PARAM_VALUES = ("0", "1", "2", "0.5", "-1", "1000000", "1/3", "1e3", "x", "",
                "99999999999999999999999999999999", "3.25", "60", "inf")


@dataclass
class CheckRun:
    """One command line of the check phase."""

    origin: str
    text: str
    mutations: list[str]
    argv: list[str]
    timeout: float | None
    max_memory: int | None


def _loads(text: str) -> bool:
    try:
        load_text(text, "mutant.kvr")
    except Exception:
        return False
    return True


def valid_seeds(seeds: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The seed specs that load (the broken ones of ``tests/diagnostics`` do not)."""
    return [(o, t) for o, t in seeds if _loads(t)]


def check_input(seed: int, index: int, seeds: list[tuple[str, str]], spec_path: str,
                out_dir: str) -> CheckRun:
    """The check run number ``index`` of a campaign."""
    rng = random.Random(f"{seed}:check:{index}")
    origin, base = seeds[rng.randrange(len(seeds))]
    n = rng.choice((0, 1, 1, 1, 2, 3))
    # Most runs get a mutant that loads, so that the explorer is what is exercised.
    for _ in range(8 if rng.random() < 0.8 else 1):
        text, done = mutate(rng, base, n)
        if _loads(text):
            break
    command = rng.choices(("check", "show", "graph"), (90, 5, 5))[0]
    timeout: float | None = rng.choice((0.5, 1.0, 1.0, 2.0, 3.0))
    max_memory: int | None = rng.choice((150, 200, 300, 400))
    argv = [command, spec_path]
    if command in ("check", "graph"):
        argv += ["--timeout", f"{timeout:g}"]
    else:
        timeout = None
    if command == "check":
        argv += ["--max-memory", str(max_memory)]
        for opt in OPTIONS:
            if rng.random() < 0.2:
                argv.append(opt)
        if rng.random() < 0.2:
            argv += ["--max-states", rng.choice(("1", "2", "50", "100000"))]
        if rng.random() < 0.1:
            argv += ["--trace", os.path.join(out_dir, "trace.json")]
        if rng.random() < 0.1:
            argv += ["--diagram", os.path.join(out_dir, rng.choice(("d.svg", "d.dot", "d.txt")))]
        names = re.findall(r"^\s*param\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.MULTILINE)
        for _ in range(rng.choice((0, 0, 1, 2))):
            name = rng.choice(names) if names and rng.random() < 0.8 else "nosuch"
            argv += ["-p", f"{name}={rng.choice(PARAM_VALUES)}"]
    else:
        max_memory = None
        if command == "graph":
            argv += ["-o", os.path.join(out_dir, rng.choice(("g.dot", "g.svg", "g.txt")))]
            if rng.random() < 0.3:
                argv += ["--max-nodes", rng.choice(("1", "5", "300"))]
    if rng.random() < 0.08:
        # a mutated option value: the command line must refuse it cleanly
        where = [i for i, a in enumerate(argv) if i > 1 and not a.startswith("-")]
        if where:
            argv[rng.choice(where)] = rng.choice(BAD_VALUES)
    if rng.random() < 0.03:
        argv.insert(rng.randrange(1, len(argv) + 1), rng.choice(("--bogus", "-", "--", "-x")))
    return CheckRun(origin, text, done, argv, timeout, max_memory)


def synth_input(seed: int, index: int, seeds: list[tuple[str, str]], spec_path: str
                ) -> CheckRun:
    """The synth run number ``index`` of a campaign (its own random stream, so that
    adding synth runs changes no lint input or check run)."""
    rng = random.Random(f"{seed}:synth:{index}")
    origin, base = seeds[rng.randrange(len(seeds))]
    n = rng.choice((0, 1, 1, 2))
    for _ in range(8):
        text, done = mutate(rng, base, n)
        if _loads(text):
            break
    timeout = rng.choice((1.0, 2.0, 3.0))
    argv = ["synth", spec_path, "--timeout", f"{timeout:g}"]
    for opt in ("--json", "--no-deadlock"):
        if rng.random() < 0.3:
            argv.append(opt)
    names = re.findall(r"^\s*param\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.MULTILINE)
    if names and rng.random() < 0.3:
        argv += ["--free", ",".join(rng.sample(names, rng.randint(1, len(names))))]
    return CheckRun(origin, text, done, argv, timeout, None)


def _preload() -> None:
    """Import what a command imports, once, before the children are forked."""
    import checker.api
    import checker.cli
    import checker.engines.search
    import checker.model.compiled
    import checker.render  # noqa: F401


def run_forked(argv: list[str], kill_after: float, out_dir: str
               ) -> tuple[int | None, float, float, float, str]:
    """Run ``kvrace ARGV`` in a forked child: exit code (``None`` when it was killed),
    seconds, CPU seconds, peak resident memory in MiB, and its stderr."""
    err_path = os.path.join(out_dir, "stderr.txt")
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: the real command line, as `kvrace` runs it
        code = 99
        try:
            fd_out = os.open(os.devnull, os.O_WRONLY)
            fd_err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd_out, 1)
            os.dup2(fd_err, 2)
            sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8")
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), encoding="utf-8",
                                          write_through=True)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            from checker.cli import main
            code = main(argv)
            sys.stdout.flush()
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            code = 98
        os._exit(code)
    status = 0
    rusage = None
    while True:
        got, status, rusage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            break
        if time.monotonic() - t0 > kill_after:
            os.kill(pid, signal.SIGKILL)
            _, status, rusage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - t0
    peak = rusage.ru_maxrss / 1024.0 if rusage is not None else 0.0
    cpu = rusage.ru_utime + rusage.ru_stime if rusage is not None else 0.0
    try:
        err = Path(err_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        err = ""
    code = os.waitstatus_to_exitcode(status)
    return (None if code < 0 else code), seconds, cpu, peak, err


def judge(run: CheckRun, code: int | None, seconds: float, cpu: float, peak: float, err: str
          ) -> tuple[str, str] | None:
    """``None`` for a clean run, else (kind, detail).

    A run past its timeout + 1 s is a hang when it also used that much CPU time;
    one that did not was kept waiting by the machine's other work (``slow``)."""
    if code is None or (run.timeout is not None and seconds > run.timeout + 1.0):
        kind = "hang" if code is None or cpu > run.timeout + 1.0 else "slow"
        return kind, f"exit {code}, {seconds:.2f} s, {cpu:.2f} s CPU (timeout {run.timeout})"
    if code in (70, 98, 99) or "Traceback" in err:
        return "traceback", f"exit {code}: {err.strip()[-1500:]}"
    if run.max_memory is not None and peak > run.max_memory * 1.1:
        return "memory", f"peak {peak:.0f} MiB over --max-memory {run.max_memory}"
    # 5: `check` found every property holding and a `reachable` query never reachable
    # (a mutant that keeps a query and breaks what it asks for); 4 needs --strict.
    expected = {0, 1, 2, 3} | ({5} if run.argv[:1] == ["check"] else set()) | (
        {4} if "--strict" in run.argv else set())
    if code not in expected:
        return "exit code", f"exit {code}: {err.strip()[-500:]}"
    return None


# ---- the campaign --------------------------------------------------------------------------


@dataclass
class Summary:
    """What a campaign found."""

    lint: int = 0
    check: int = 0
    synth: int = 0
    exits: Counter[int | None] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    max_seconds_over: float = 0.0
    max_cpu_over: float = 0.0
    max_memory_ratio: float = 0.0

    def line(self, seconds: float) -> str:
        """The summary line."""
        k = self.kinds
        return (f"lint {self.lint} inputs, check {self.check} runs"
                + (f", synth {self.synth} runs" if self.synth else "") +
                f" (exit codes {dict(sorted(self.exits.items(), key=str))}):"
                f" {k['traceback']} tracebacks, {k['hang']} hangs, {k['memory']} over memory,"
                f" {k['unpositioned']} unpositioned diagnostics, {k['exit code']} odd exit codes,"
                f" {k['slow']} slow only by wall clock; worst run {self.max_seconds_over:+.2f} s"
                f" ({self.max_cpu_over:+.2f} s CPU) past its timeout, peak memory"
                f" {100 * self.max_memory_ratio:.0f} % of --max-memory; {seconds:.0f} s")


def campaign(seed: int, n_lint: int, n_check: int, lint_limit: float = 5.0, start: int = 0,
             progress: Callable[[str], None] | None = None,
             only: tuple[str, int] | None = None, summary: Summary | None = None,
             found: Callable[[Failure], None] | None = None, n_synth: int = 0) -> Summary:
    """Run a campaign; see the module's docstring.

    Lint inputs and check runs are interleaved (the lint inputs spread evenly
    between the check runs), so that a campaign stopped early has covered both
    in proportion.  ``found`` is called with each failure as it is found;
    ``summary`` (filled in as the campaign goes) lets a caller report an
    interrupted campaign."""
    all_seeds = corpus()
    summary = summary if summary is not None else Summary()
    last = [time.monotonic()]
    lint_range = range(start, start + n_lint) if only is None else (
        [only[1]] if only[0] == "lint" else [])
    check_range = range(start, start + n_check) if only is None else (
        [only[1]] if only[0] == "check" else [])
    synth_range = range(start, start + n_synth) if only is None else (
        [only[1]] if only[0] == "synth" else [])
    check_seeds: list[tuple[str, str]] = []
    if check_range or synth_range:
        _preload()
        check_seeds = valid_seeds(all_seeds)

    def report() -> None:
        if progress is not None and time.monotonic() - last[0] > 10:
            last[0] = time.monotonic()
            k = summary.kinds
            progress(f"lint {summary.lint}/{n_lint}, check {summary.check}/{n_check}:"
                     f" {k['traceback']} tracebacks, {k['hang']} hangs, {k['memory']} over"
                     f" memory, {k['unpositioned']} unpositioned, {k['slow']} slow;"
                     f" exits {dict(sorted(summary.exits.items(), key=str))}")

    def add(f: Failure) -> None:
        summary.kinds[f.kind] += 1
        summary.failures.append(f)
        if found is not None:
            found(f)

    def do_lint(i: int) -> None:
        origin, text, done = lint_input(seed, i, all_seeds)
        bad = lint_one(text, lint_limit)
        summary.lint += 1
        if bad is not None:
            add(Failure("lint", i, text, origin, done, ["lint"], *bad))
        report()

    def do_check(i: int, tmp: str, phase: str = "check") -> None:
        spec_path = os.path.join(tmp, "mutant.kvr")
        run = (check_input(seed, i, check_seeds, spec_path, tmp) if phase == "check"
               else synth_input(seed, i, check_seeds, spec_path))
        Path(spec_path).write_text(run.text, encoding="utf-8", errors="surrogateescape")
        kill = (run.timeout or 10.0) + 8.0
        code, seconds, cpu, peak, err = run_forked(run.argv, kill, tmp)
        if phase == "check":
            summary.check += 1
        else:
            summary.synth += 1
        summary.exits[code] += 1
        if run.timeout is not None:
            summary.max_seconds_over = max(summary.max_seconds_over, seconds - run.timeout)
            summary.max_cpu_over = max(summary.max_cpu_over, cpu - run.timeout)
        if run.max_memory is not None:
            summary.max_memory_ratio = max(summary.max_memory_ratio, peak / run.max_memory)
        bad = judge(run, code, seconds, cpu, peak, err)
        if bad is not None:
            argv = [a.replace(tmp, "TMP") for a in run.argv]
            add(Failure(phase, i, run.text, run.origin, run.mutations, argv, *bad))
        report()

    lints = iter(lint_range)
    per = -(-len(lint_range) // max(len(check_range), 1))
    with tempfile.TemporaryDirectory(prefix="kvrace-fuzz-") as tmp:
        for i in check_range:
            for j in itertools.islice(lints, per):
                do_lint(j)
            do_check(i, tmp)
        for i in synth_range:
            do_check(i, tmp, "synth")
    for j in lints:
        do_lint(j)
    return summary


def write_failure(out: Path, f: Failure) -> Path:
    """The failing input as a spec file whose header comment says what failed."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{f.phase}-{f.index}.kvr"
    header = [f"# fuzz {f.phase} {f.index}: {f.kind}",
              f"#   from {f.origin}: {', '.join(f.mutations)}",
              f"#   kvrace {' '.join(f.argv)}"]
    header += [f"#   {ln}" for ln in f.detail.splitlines()]
    path.write_text("\n".join(header) + "\n" + f.source, encoding="utf-8", errors="surrogateescape")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lint", type=int, default=1000, help="lint inputs")
    ap.add_argument("--check", type=int, default=100, help="check (show, graph) runs")
    ap.add_argument("--synth", type=int, default=0, help="synth runs (after the others)")
    ap.add_argument("--viewer", type=int, default=0, metavar="N",
                    help="requests to the viewer's API (last; see tests/fuzz_viewer.py)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first input index")
    ap.add_argument("--lint-limit", type=float, default=5.0, help="seconds a lint may take")
    ap.add_argument("--only", metavar="PHASE:INDEX", help="replay one input and print it")
    ap.add_argument("--out", default="fuzz-out", help="where failing inputs are written")
    args = ap.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    only = None
    if args.only:
        phase, _, idx = args.only.partition(":")
        only = (phase, int(idx))
    t0 = time.monotonic()
    summary = Summary()

    def found(f: Failure) -> None:
        path = write_failure(Path(args.out), f)
        print(f"{f.kind}: {path}: {f.detail.splitlines()[0] if f.detail else ''}", flush=True)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        campaign(args.seed, args.lint, args.check, args.lint_limit, args.start,
                 progress=lambda s: print(s, file=sys.stderr, flush=True), only=only,
                 summary=summary, found=found, n_synth=args.synth)
    except KeyboardInterrupt:
        print(f"interrupted after {summary.lint} lint inputs, {summary.check} check runs and"
              f" {summary.synth} synth runs")
    viewer_failed = False
    if args.viewer and only is None:
        import fuzz_viewer

        vs = fuzz_viewer.ViewerSummary()
        try:
            fuzz_viewer.viewer_campaign(args.seed, args.viewer, args.start, summary=vs,
                                        progress=lambda s: print(s, file=sys.stderr, flush=True))
        except KeyboardInterrupt:
            print(f"interrupted after {vs.count} viewer requests")
        for i, kind, detail in vs.failures:
            print(f"{kind}: viewer:{i}: {detail}", flush=True)
        print(vs.line(time.monotonic() - t0))
        viewer_failed = any(kind != "slow" for _, kind, _ in vs.failures)
    if only is not None:
        seeds = corpus()
        if only[0] == "viewer":
            import fuzz_viewer

            print(fuzz_viewer.replay(args.seed, only[1]))
        elif only[0] == "lint":
            print(lint_input(args.seed, only[1], seeds)[1])
        elif only[0] == "synth":
            run = synth_input(args.seed, only[1], valid_seeds(seeds), "mutant.kvr")
            print("kvrace " + " ".join(run.argv))
            print(run.text)
        else:
            run = check_input(args.seed, only[1], valid_seeds(seeds), "mutant.kvr", "TMP")
            print("kvrace " + " ".join(run.argv))
            print(run.text)
    print(summary.line(time.monotonic() - t0))
    return 1 if viewer_failed or any(f.kind != "slow" for f in summary.failures) else 0


if __name__ == "__main__":
    sys.exit(main())

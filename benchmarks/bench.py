#!/usr/bin/env python3
"""Scaling benchmark of the kvrace zone explorer on the flagship spec and on Fischer.

The flagship ``spec/sglang/deferred_release.kvr`` is scaled along four axes by
careful line substitution (every substitution must apply exactly once, or the
script stops with an error):

* requests  2..4  ``symmetric type Req = {A, B}``  ->  ``{A, B, C}`` ...
* slots     1..3  ``symmetric type Slot = {s0}``   ->  ``{s0, s1}`` ...
* chunks    1..4  ``type Chunk = 0..1`` -> ``0..k-1`` and ``var sent : Req -> 0..2`` -> ``0..k``
* scale     x1, x10, x1000: every number of the ``param`` lines' ranges and defaults
  is multiplied (the zone graph should not depend on it).

Fischer's mutual exclusion ``spec/classic/fischer.kvr`` is scaled in its number of
processes (``symmetric type Proc = {P1, P2, P3}`` -> ``{P1, ..., PN}``).

Each case runs in a fresh subprocess (this script with ``--one CASE``) so that
the peak resident memory (``ru_maxrss``) is that case's alone.  A case that
hits its time cap is reported as ``inconclusive`` with what it explored.

    python benchmarks/bench.py --quick            # a small subset, ~1 minute
    python benchmarks/bench.py --cap 10           # the full table (108 cases)
    python benchmarks/bench.py --quick --ablation # + without symmetry / clock reduction
    python benchmarks/bench.py --fischer 6,8,10   # Fischer, with and without symmetry
    python benchmarks/bench.py --fischer 4 --dbm-compare   # compiled DBM core vs Python
    python benchmarks/bench.py --tchecker         # zone counts next to TChecker's
    python benchmarks/bench.py --peer tchecker    # run TChecker itself on the exports
    python benchmarks/bench.py --targets          # the engine's time targets, PASS/MISS
    python benchmarks/bench.py --prove-synth --no-table
    python benchmarks/bench.py --editor           # fmt on spec/, LSP diagnostics latency
    python benchmarks/bench.py --cold-start 21    # kvrace check's start-up, fresh processes
    python benchmarks/bench.py --synth-suite      # synthesis with/without `assume` constraints
    python benchmarks/bench.py --validate 10000,100000   # kvrace validate on simulated logs
    python benchmarks/bench.py --one r=3,s=1,c=2,x=1   # one case, in this process
    python benchmarks/bench.py --one fischer:n=5,sym=0,dbm=python

See ``benchmarks/README.md`` for the columns.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "spec" / "sglang" / "deferred_release.kvr"
FISCHER_SPEC = REPO / "spec" / "classic" / "fischer.kvr"

REQ_NAMES = "ABCDEFGH"
FULL_GRID: dict[str, tuple[int, ...]] = {
    "r": (2, 3, 4), "s": (1, 2, 3), "c": (1, 2, 3, 4), "x": (1, 10, 1000),
}
QUICK_GRID: dict[str, tuple[int, ...]] = {"r": (2, 3), "s": (1, 2), "c": (1, 2), "x": (1, 1000)}
PROVE_SYNTH_REQUESTS = (2, 3)
ASSUMPTION = "T_hold > T_prop + T_chunk + T_flight"
EXPECTED_PARAMS = ("T_prop", "T_chunk", "T_flight", "T_hold")
FISCHER_PROCESSES = 3
"""The number of processes of ``spec/classic/fischer.kvr`` as written."""
MAX_PROCESSES = 64

TASKS = ("check", "prove", "synth")
MODELS = ("flagship", "fischer", "train_gate", "csma_cd")
DBMS = ("auto", "c", "python")
CHECK_FIELDS = ("r", "s", "c", "x", "sym", "clk", "dl", "dbm", "cb")
FISCHER_FIELDS = ("n", "sym", "clk", "dl", "dbm", "cb")
CLOCK_BOUNDS = ("timed", "untimed", "static")
"""Where the clock bounds come from (``check --clock-bounds``; the case field ``cb``)."""
FILTER_FIELDS = ("r", "s", "c", "x", "sym", "clk", "dl")

# Stored-state counts of TChecker on the flagship with the same requests/slots/chunks
# (scale x1).  Measured with `tck-reach -a covreach` on an equivalent automaton:
# inclusion subsumption, local LU bounds, no symmetry reduction.  kvrace's comparable
# configuration is symmetry off and no deadlock check (sym=0,dl=0).
TCHECKER_STATES: dict[tuple[int, int, int], int] = {
    (2, 1, 2): 235,
    (2, 2, 2): 2_301,
    (3, 1, 2): 1_700,
    (3, 2, 2): 54_147,
}


# Benchmark the checker next to this script (a snapshot or worktree), not whatever
# copy happens to be installed.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


class BenchError(Exception):
    """A substitution that did not apply, a bad --cases filter, a bad case key."""


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One benchmark run: a variant of a spec and how to explore it.

    ``model`` is ``flagship`` (fields ``r s c x``) or ``fischer`` (field ``n``)."""

    r: int = 2
    s: int = 1
    c: int = 2
    x: int = 1
    sym: bool = True
    clk: bool = True
    task: str = "check"
    model: str = "flagship"
    n: int = FISCHER_PROCESSES
    dl: bool = True
    """Check for deadlocks (Options.deadlock)."""
    dbm: str = "auto"
    """The DBM implementation asked for: ``auto``, ``c`` or ``python``."""
    cb: str = "timed"
    """Where the clock bounds come from (:data:`CLOCK_BOUNDS`)."""

    @property
    def key(self) -> str:
        """The ``--one`` / ``--cases`` form, e.g. ``r=3,s=1,c=2,x=1``, ``prove:r=2,...``
        or ``fischer:n=8,sym=0``."""
        if self.model != "flagship":
            text = f"n={self.n}"
        else:
            text = f"r={self.r},s={self.s},c={self.c},x={self.x}"
        text += self.options_suffix
        if self.model != "flagship":
            return f"{self.model}:{text}"
        return text if self.task == "check" else f"{self.task}:{text}"

    @property
    def options_suffix(self) -> str:
        text = ""
        if not self.sym:
            text += ",sym=0"
        if not self.clk:
            text += ",clk=0"
        if not self.dl:
            text += ",dl=0"
        if self.dbm != "auto":
            text += f",dbm={self.dbm}"
        if self.cb != "timed":
            text += f",cb={self.cb}"
        return text

    @property
    def reductions(self) -> str:
        """``sym+clk`` (both on, the default), ``no-sym``, ``no-clk`` or ``none``; then
        `` no-dl`` when the deadlock check is off."""
        if self.sym and self.clk:
            text = "sym+clk"
        elif self.sym or self.clk:
            text = "no-sym" if self.clk else "no-clk"
        else:
            text = "none"
        return text if self.dl else text + " no-dl"

    def sort_key(self) -> tuple[int, ...]:
        return (MODELS.index(self.model), TASKS.index(self.task), self.r, self.s, self.c,
                self.x, self.n, int(not self.sym), int(not self.clk), int(not self.dl),
                DBMS.index(self.dbm))


def _fields(text: str, allowed: Sequence[str] = CHECK_FIELDS) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or name not in allowed or not value:
            raise BenchError(f"bad field {part!r} in {text!r}: expected "
                             + ", ".join(f"{f}=..." for f in allowed)
                             + ", separated by commas")
        out[name] = value
    return out


def _int(name: str, value: str, lo: int, hi: int) -> int:
    try:
        v = int(value)
    except ValueError:
        raise BenchError(f"{name}={value!r} is not an integer") from None
    if not lo <= v <= hi:
        raise BenchError(f"{name}={v} is outside {lo}..{hi}")
    return v


def parse_case(text: str) -> Case:
    """A case from its key, e.g. ``r=3,s=1,c=2,x=1``, ``synth:r=3`` or
    ``fischer:n=8,sym=0``; missing fields take the spec's own values (flagship:
    r=2, s=1, c=2, x=1; Fischer: n=3), every reduction on, the deadlock check on,
    the DBM implementation ``auto``."""
    task, model = "check", "flagship"
    head, colon, rest = text.partition(":")
    if colon:
        if head in ("fischer", "train_gate", "csma_cd"):
            model = head
        elif head in TASKS:
            task = head
        else:
            raise BenchError(f"unknown prefix {head!r} in {text!r} (tasks: {', '.join(TASKS)};"
                             " or fischer, train_gate, csma_cd)")
        text = rest
    if model != "flagship":
        allowed: Sequence[str] = FISCHER_FIELDS
    elif task == "check":
        allowed = CHECK_FIELDS
    else:
        allowed = ("r", "s", "c", "x", "sym", "clk")
    f = _fields(text, allowed)
    case = Case(task=task, model=model)
    if "r" in f:
        case = replace(case, r=_int("r", f["r"], 1, len(REQ_NAMES)))
    if "s" in f:
        case = replace(case, s=_int("s", f["s"], 1, 16))
    if "c" in f:
        case = replace(case, c=_int("c", f["c"], 1, 16))
    if "x" in f:
        case = replace(case, x=_int("x", f["x"], 1, 10**9))
    if "n" in f:
        case = replace(case, n=_int("n", f["n"], 1, MAX_PROCESSES))
    if "sym" in f:
        case = replace(case, sym=bool(_int("sym", f["sym"], 0, 1)))
    if "clk" in f:
        case = replace(case, clk=bool(_int("clk", f["clk"], 0, 1)))
    if "dl" in f:
        case = replace(case, dl=bool(_int("dl", f["dl"], 0, 1)))
    if "dbm" in f:
        if f["dbm"] not in DBMS:
            raise BenchError(f"dbm={f['dbm']!r}: expected one of {', '.join(DBMS)}")
        case = replace(case, dbm=f["dbm"])
    if "cb" in f:
        if f["cb"] not in CLOCK_BOUNDS:
            raise BenchError(f"cb={f['cb']!r}: expected one of {', '.join(CLOCK_BOUNDS)}")
        case = replace(case, cb=f["cb"])
    return case


def grid(g: dict[str, tuple[int, ...]]) -> list[Case]:
    """Every combination of the grid's values, both reductions on."""
    return [Case(r, s, c, x) for r, s, c, x in itertools.product(g["r"], g["s"], g["c"], g["x"])]


def parse_filters(texts: Sequence[str]) -> list[dict[str, str]]:
    """``--cases`` values: each ``;``-separated item is a conjunction of fields."""
    out = []
    for text in texts:
        for item in text.split(";"):
            if item.strip():
                out.append(_fields(item, FILTER_FIELDS))
    return out


def matches(case: Case, filt: dict[str, str]) -> bool:
    """Whether ``case`` has every field value of the filter."""
    have = {"r": case.r, "s": case.s, "c": case.c, "x": case.x,
            "sym": int(case.sym), "clk": int(case.clk), "dl": int(case.dl)}
    for name, value in filt.items():
        try:
            if have[name] != int(value):
                return False
        except ValueError:
            raise BenchError(f"--cases: {name}={value!r} is not an integer") from None
    return True


def wants_grid(args: argparse.Namespace) -> bool:
    """Whether the flagship grid runs: unless ``--no-table``, when it is asked for
    (``--quick``, ``--cases``, ``--ablation``) or when no other family is
    (``--fischer``, ``--tchecker``, ``--targets``)."""
    if args.no_table:
        return False
    if args.quick or args.cases or args.ablation:
        return True
    return not (args.fischer or args.tchecker or args.targets)


def select_cases(args: argparse.Namespace) -> list[Case]:
    """The flagship check cases of this run, in table order."""
    base = grid(QUICK_GRID if args.quick else FULL_GRID)
    cases = list(base)
    if args.ablation:
        for c in grid(QUICK_GRID):
            cases += [replace(c, sym=False), replace(c, clk=False)]
    if args.cases:
        filters = parse_filters(args.cases)
        if filters:
            cases = [c for c in cases if any(matches(c, f) for f in filters)]
        if not cases:
            raise BenchError(f"--cases {' '.join(args.cases)} selects no case of the"
                             f" {'quick' if args.quick else 'full'} grid")
    return sorted(set(cases), key=Case.sort_key)


def parse_processes(text: str) -> list[int]:
    """``--fischer`` value: comma-separated process counts, e.g. ``6,8,10``."""
    out = []
    for part in text.split(","):
        if part.strip():
            out.append(_int("--fischer", part.strip(), 1, MAX_PROCESSES))
    if not out:
        raise BenchError(f"--fischer {text!r}: expected process counts such as 6,8,10")
    return sorted(set(out))


def fischer_cases(counts: Iterable[int]) -> list[Case]:
    """Fischer with ``n`` processes, with symmetry reduction on and off."""
    return [Case(model="fischer", n=n, sym=sym) for n in counts for sym in (True, False)]


def dbm_pair(case: Case) -> list[Case]:
    """``case`` with the compiled DBM core and with the Python reference."""
    return [replace(case, dbm="c"), replace(case, dbm="python")]


# --------------------------------------------------------------------------- variants


def _scale_number(token: str, factor: int) -> str:
    got = Decimal(token) * factor
    return format(got.normalize(), "f")


def _sub_one(lines: list[str], what: str, pattern: str, make: Callable[[re.Match[str]], str],
             spec: Path = SPEC) -> None:
    """Replace the one line matching ``pattern`` by ``make(match)``; fail loudly otherwise."""
    rx = re.compile(pattern)
    hits = [i for i, line in enumerate(lines) if rx.fullmatch(line)]
    if len(hits) != 1:
        raise BenchError(
            f"substitution '{what}' applies to {len(hits)} lines of {spec.name} (expected"
            f" exactly 1; pattern {pattern!r}) — has {spec.relative_to(REPO)} changed?"
        )
    i = hits[0]
    m = rx.fullmatch(lines[i])
    assert m is not None
    lines[i] = make(m)


def variant_text(base: str, case: Case) -> str:
    """The flagship's text scaled to ``case`` (requests, slots, chunks, time scale)."""
    if not 1 <= case.r <= len(REQ_NAMES):
        raise BenchError(f"r={case.r}: at most {len(REQ_NAMES)} requests")
    lines = base.split("\n")
    reqs = ", ".join(REQ_NAMES[: case.r])
    slots = ", ".join(f"s{i}" for i in range(case.s))
    _sub_one(lines, "requests", r"(symmetric\s+type\s+Req\s*=\s*)\{A, B\}(\s*(?:#.*)?)",
             lambda m: f"{m[1]}{{{reqs}}}{m[2]}")
    _sub_one(lines, "slots", r"(symmetric\s+type\s+Slot\s*=\s*)\{s0\}(\s*(?:#.*)?)",
             lambda m: f"{m[1]}{{{slots}}}{m[2]}")
    _sub_one(lines, "chunks", r"(type\s+Chunk\s*=\s*)0\.\.1(\s*(?:#.*)?)",
             lambda m: f"{m[1]}0..{case.c - 1}{m[2]}")
    _sub_one(lines, "sent counter", r"(var\s+sent\s*:\s*Req\s*->\s*)0\.\.2(\s.*)",
             lambda m: f"{m[1]}0..{case.c}{m[2]}")
    # Time scale: every number in the range and default of each `param` line.
    rx = re.compile(r"(param\s+(\w+)\s+in\s+)([^#]*?)(\s*#.*)?")
    seen: list[str] = []
    for i, line in enumerate(lines):
        if not line.startswith("param"):
            continue
        m = rx.fullmatch(line)
        if m is None:
            raise BenchError(f"time scale: cannot parse the param line {line!r}")
        numbers = re.findall(r"\d+(?:\.\d+)?", m[3])
        if len(numbers) != 3 or not re.fullmatch(
            r"[\[(]\s*-?[\d.]+\s*,\s*-?[\d.]+\s*[\])]\s*=\s*-?[\d.]+\s*", m[3]
        ):
            raise BenchError(f"time scale: expected `NAME in [lo, hi] = default` with three"
                             f" numbers, got {line!r}")
        body = re.sub(r"\d+(?:\.\d+)?", lambda n: _scale_number(n[0], case.x), m[3])
        lines[i] = f"{m[1]}{body}{m[4] or ''}"
        seen.append(m[2])
    if tuple(seen) != EXPECTED_PARAMS:
        raise BenchError(f"time scale: expected the param lines {EXPECTED_PARAMS}, found"
                         f" {tuple(seen)}")
    text = "\n".join(lines)
    if case.r == 2 and case.s == 1 and case.c == 2 and case.x == 1 and text != base:
        raise BenchError("the identity variant differs from the flagship (substitution bug)")
    return text


def fischer_text(base: str, n: int) -> str:
    """``spec/classic/fischer.kvr`` with ``n`` processes ``P1 .. Pn``."""
    if not 1 <= n <= MAX_PROCESSES:
        raise BenchError(f"n={n}: between 1 and {MAX_PROCESSES} processes")
    lines = base.split("\n")
    procs = ", ".join(f"P{i + 1}" for i in range(n))
    _sub_one(lines, "processes",
             r"(symmetric\s+type\s+Proc\s*=\s*)\{P1, P2, P3\}(\s*(?:#.*)?)",
             lambda m: f"{m[1]}{{{procs}}}{m[2]}", FISCHER_SPEC)
    text = "\n".join(lines)
    if n == FISCHER_PROCESSES and text != base:
        raise BenchError("the identity variant differs from fischer.kvr (substitution bug)")
    return text


def csma_cd_tck_text(n: int) -> str:
    """TChecker's ``examples/csmacd.sh N`` (lambda 808, sigma 26) as a kvrace spec: a
    bus and ``n`` stations on handshake channels; after a collision the bus, in a
    committed location, signals ``cd`` to each station in turn (its counter ``j``)."""
    if not 1 <= n <= MAX_PROCESSES:
        raise BenchError(f"n={n}: between 1 and {MAX_PROCESSES} stations")
    names = ", ".join(f"S{i + 1}" for i in range(n))
    signals = "\n".join(
        f"  event cd_{i + 1} from loop to loop send cd(S{i + 1}) when j == {i + 1}"
        f" do j := {i + 2}" for i in range(n))
    return f"""model csma_cd_tck

type Station = {{{names}}}

chan begin_tx, busy, end_tx
chan cd(Station)

process Bus {{
  clock y
  var j : 1..{n + 1} = 1
  location idle, active
  location collision: y < 26
  committed location loop

  event grab from idle to active receive begin_tx do reset y
  event collide from active to collision receive begin_tx when y < 26 do reset y
  event signal_busy from active to active send busy when y >= 26
  event finish from active to idle receive end_tx do reset y
  event detect from collision to loop when y < 26 do j := 1
  event back from loop to idle when j == {n + 1} and y < 26 do reset y; j := 1
{signals}
}}

process Node(self: Station) {{
  clock x
  location waiting
  location start: x <= 808
  location retry: x < 52

  event send_first from waiting to start send begin_tx do reset x
  event backoff from waiting to retry receive busy do reset x
  event ignore from waiting to waiting receive cd(self) do reset x
  event collided from waiting to retry receive cd(self) do reset x
  event done from start to waiting send end_tx when x == 808 do reset x
  event abort from start to retry receive cd(self) when x < 26 do reset x
  event again from retry to start send begin_tx when x < 52 do reset x
  event wait_more from retry to retry receive busy when x < 52 do reset x
  event heard from retry to retry receive cd(self) when x < 52 do reset x
}}
"""


def train_gate_tck_text(n: int) -> str:
    """TChecker's ``examples/train_gate.sh N`` as a kvrace spec: ``n`` trains, a gate
    with a circular queue (``buffer``, ``head``, ``length``, every cell initially the
    first train), plain channels (``go`` is not urgent) and no property.  Explored
    without symmetry and deadlock check it stores TChecker's ``covreach`` zone count
    (215,375 at n = 5)."""
    if not 1 <= n <= MAX_PROCESSES:
        raise BenchError(f"n={n}: between 1 and {MAX_PROCESSES} trains")
    names = ", ".join(f"T{i + 1}" for i in range(n))
    return f"""model train_gate_tck

type TrainId = {{{names}}}
type Slot = 0..{n - 1}

chan appr(TrainId), stop(TrainId), go(TrainId), leave(TrainId)

process Train(self: TrainId) {{
  clock x
  location safe
  location approaching: x <= 20
  location stopped
  location starting: x <= 15
  location crossing: x <= 5

  event approach from safe to approaching send appr(self) do reset x
  event pass from approaching to crossing when x >= 10 do reset x
  event halt from approaching to stopped receive stop(self) when x <= 10
  event resume from stopped to starting receive go(self) do reset x
  event enter from starting to crossing when x >= 7 do reset x
  event depart from crossing to safe send leave(self) when x >= 3
}}

process Gate {{
  var buffer : Slot -> TrainId = T1
  var head : 0..{n - 1} = 0
  var length : 0..{n} = 0
  location free, occupied
  committed location notified

  event release(t: TrainId) from free to occupied send go(t)
    when length > 0 and buffer[head] == t
  event admit(t: TrainId) from free to occupied receive appr(t) when length == 0
    do buffer[(head + length) % {n}] := t; length := length + 1
  event enqueue(t: TrainId) from occupied to notified receive appr(t)
    do buffer[(head + length) % {n}] := t; length := length + 1
  event dequeue(t: TrainId) from occupied to free receive leave(t)
    when length > 0 and buffer[head] == t
    do head := (head + 1) % {n}; length := length - 1
  event halt_newest(t: TrainId) from notified to occupied send stop(t)
    when length > 0 and buffer[(head + length - 1) % {n}] == t
}}
"""


TRAIN_GATE_SPEC = REPO / "spec" / "classic" / "train_gate.kvr"
CSMA_CD_SPEC = REPO / "spec" / "classic" / "csma_cd.kvr"


def case_text(case: Case) -> tuple[str, Path]:
    """The spec text of ``case`` and the file it was derived from (for the TChecker
    train-gate, the classic one it is a variant of)."""
    if case.model == "train_gate":
        return train_gate_tck_text(case.n), TRAIN_GATE_SPEC
    if case.model == "fischer":
        return fischer_text(FISCHER_SPEC.read_text(encoding="utf-8"), case.n), FISCHER_SPEC
    if case.model == "csma_cd":
        return csma_cd_tck_text(case.n), CSMA_CD_SPEC
    return variant_text(SPEC.read_text(encoding="utf-8"), case), SPEC


def build(case: Case) -> Any:
    """The elaborated spec of ``case``, checked against what the variant should be."""
    from checker.language import load_text

    text, path = case_text(case)
    spec = load_text(text, f"{path.name}[{case.key}]")
    sizes = {t.name: t.size for t in spec.types}
    if case.model == "train_gate":
        if sizes.get("TrainId") != case.n:
            raise BenchError(f"variant {case.key}: type TrainId has {sizes.get('TrainId')}"
                             f" values, expected {case.n}")
        return spec
    if case.model == "csma_cd":
        if sizes.get("Station") != case.n:
            raise BenchError(f"variant {case.key}: type Station has {sizes.get('Station')}"
                             f" values, expected {case.n}")
        return spec
    if case.model == "fischer":
        if sizes.get("Proc") != case.n:
            raise BenchError(f"variant {case.key}: type Proc has {sizes.get('Proc')} values,"
                             f" expected {case.n}")
        return spec
    want = {"Req": case.r, "Slot": case.s, "Chunk": case.c}
    for name, size in want.items():
        if sizes.get(name) != size:
            raise BenchError(f"variant {case.key}: type {name} has {sizes.get(name)} values,"
                             f" expected {size}")
    orig = {p.name: p for p in load_text(SPEC.read_text(encoding="utf-8"), str(SPEC)).params}
    for p in spec.params:
        o = orig[p.name]
        if p.default != o.default * case.x or p.hi != (None if o.hi is None else o.hi * case.x):
            raise BenchError(f"variant {case.key}: parameter {p.name} was not scaled")
    return spec


# ------------------------------------------------------------------------- one case


def _peak_mib() -> float:
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024.0 * 1024.0) if sys.platform == "darwin" else rss / 1024.0


def _base_row(case: Case, cap: float) -> dict[str, Any]:
    row: dict[str, Any] = {"task": case.task, "case": case.key, "model": case.model}
    if case.model != "flagship":
        row["processes"] = case.n
    else:
        row.update({"requests": case.r, "slots": case.s, "chunks": case.c, "scale": case.x})
    row.update({
        "symmetry": case.sym, "clock_reduction": case.clk, "reductions": case.reductions,
        "cap_seconds": cap,
    })
    if case.task == "check":
        row.update({"deadlock": case.dl, "dbm_requested": case.dbm})
    return row


def _dbm_name(impl: Any) -> str:
    """``c`` or ``python``: which DBM implementation ``impl`` (a module) is."""
    from checker.domains import dbm

    return "python" if impl is dbm else "c"


def run_check(case: Case, cap: float) -> dict[str, Any]:
    """Build the variant and run the zone explorer once (in this process)."""
    from checker.domains import backend
    from checker.engines import Limits, Options, Prepass, explore, search
    from checker.model.compiled import SpecModel

    row = _base_row(case, cap)
    row["c_available"] = backend.C_AVAILABLE
    row["baseline_mib"] = round(_peak_mib(), 1)
    t0 = time.monotonic()
    children0 = _child_cpu()
    model = SpecModel(build(case))
    row["build_seconds"] = round(time.monotonic() - t0, 3)
    # Instrument (in this process only) the untimed clock-bounds pre-pass, to say how
    # much of a run it takes, and the choice of DBM implementation, to say which ran.
    # search.py looks both names up in its module namespaces at call time.
    search_ns, backend_ns = vars(search), vars(backend)
    original_bounds = search_ns["clock_bounds"]
    original_select = backend_ns["select"]
    pre: dict[str, Any] = {}
    chosen: list[str] = []

    def timed_bounds(*a: Any, **kw: Any) -> Any:
        t = time.monotonic()
        live = original_bounds(*a, **kw)
        pre.update(seconds=time.monotonic() - t, complete=live.complete,
                   states=len(live.live) if live.complete else None)
        return live

    def noted_select(*a: Any, **kw: Any) -> Any:
        impl = original_select(*a, **kw)
        chosen.append(_dbm_name(impl))
        return impl

    search_ns["clock_bounds"] = timed_bounds
    backend_ns["select"] = noted_select
    cpu0 = time.process_time()
    try:
        res = explore(model, Limits(timeout=cap),
                      Options(symmetry=case.sym, clock_reduction=case.clk, deadlock=case.dl,
                              dbm=case.dbm, prepass=Prepass(case.cb)))
    finally:
        search_ns["clock_bounds"] = original_bounds
        backend_ns["select"] = original_select
    cpu = time.process_time() - cpu0
    st = res.stats
    row.update({
        "verdict": res.verdict, "limit": res.limit, "property": res.prop,
        "message": res.message, "dbm": chosen[-1] if chosen else None,
        "states": st.states, "zones": st.zones, "transitions": st.transitions,
        "stored": st.stored, "explored": st.explored, "extrapolation": st.extrapolation,
        "depth": st.depth, "queued": st.queued if res.verdict == "inconclusive" else 0,
        "seconds": round(st.seconds, 3), "cpu_seconds": round(cpu, 3),
        "prepass_seconds": round(pre["seconds"], 3) if pre else None,
        "prepass_states": pre.get("states"), "prepass_complete": pre.get("complete"),
        "zones_per_second": round(st.zones / st.seconds, 1) if st.seconds > 0 else None,
        "peak_mib": round(_peak_mib(), 1),
        "clocks": len(model.clock_names), "event_instances": len(model.event_names),
        "successors": model.successors, "successors_note": model.native_note,
        # A compilation of the successor function runs in a child (the C compiler):
        # not in cpu_seconds, so counted here.
        "compile_cpu_seconds": round(_child_cpu() - children0, 3),
    })
    return row


def _assumption(model: Any, free: Sequence[str]) -> list[Any]:
    """``ASSUMPTION`` as constraints over the free parameters (as ``kvrace prove`` does)."""
    from checker.api import assumption

    return assumption(model, ASSUMPTION, list(free))


def run_parametric(case: Case, cap: float) -> dict[str, Any]:
    """Time ``prove`` (under ``ASSUMPTION``) or ``synth`` (all parameters free)."""
    from checker.model.compiled import SpecModel
    from checker.smt import SolverUnknown
    from checker.smt import synth as sy

    row = _base_row(case, cap)
    row["baseline_mib"] = round(_peak_mib(), 1)
    spec = build(case)
    model = SpecModel(spec)
    free = [p.name for p in spec.params if p.lo is not None or p.hi is not None]
    order = [p.name for p in spec.params]
    row["free"] = free
    t0 = time.monotonic()
    cpu0 = time.process_time()
    result = None
    try:
        if case.task == "prove":
            pr = sy.prove(model, _assumption(model, free), free, None, cap)
            result = pr.synth
            verdict = pr.status
            if pr.status == "proved":
                row["detail"] = ("tight: breaks just outside, at " + ", ".join(
                    f"{k}={v}" for k, v in pr.boundary.items())) if pr.boundary else "not tight"
            elif pr.status == "refuted" and pr.counterexample is not None:
                row["detail"] = "counterexample inside the assumption at " + ", ".join(
                    f"{k}={v}" for k, v in pr.counterexample.items())
        else:
            result = sy.explore_parametric(model, free, (), None, cap)
            verdict = "complete" if result.complete else "inconclusive"
            if result.complete:
                row["detail"] = "safe region: " + sy.region_text(sy.safe_region(result), order)
    except SolverUnknown as exc:
        verdict = "solver unknown"
        row["detail"] = str(exc)
    total = time.monotonic() - t0
    if result is not None and not result.complete:
        lim = result.limit or ""
        verdict = "timeout" if "time" in lim else "inconclusive"
        row["detail"] = lim
    row["verdict"] = verdict
    if result is not None:
        st = result.stats
        row.update({"states": st.states, "symbolic_states": st.symbolic_states,
                    "transitions": st.transitions, "queries": st.queries,
                    "explore_seconds": round(st.seconds, 3)})
    row["seconds"] = round(total, 3)
    row["cpu_seconds"] = round(time.process_time() - cpu0, 3)
    row["peak_mib"] = round(_peak_mib(), 1)
    return row


def run_one(case: Case, cap: float) -> dict[str, Any]:
    """One case in this process."""
    return run_check(case, cap) if case.task == "check" else run_parametric(case, cap)


def run_in_subprocess(case: Case, cap: float, env: dict[str, str] | None = None
                      ) -> dict[str, Any]:
    """One case in a fresh interpreter (so ``ru_maxrss`` is the case's own peak), with
    the environment ``env`` (default: this one's).

    The child stops itself at ``cap``; if it overruns by a wide margin it is killed
    and the row says so (no numbers are made up)."""
    grace = max(30.0, 0.5 * cap)
    # The child takes --cap for a check and --synth-cap for prove/synth: pass both.
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", case.key,
           "--cap", repr(cap), "--synth-cap", repr(cap), "--json"]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=cap + grace,
                              cwd=REPO, check=False, env=env)
    except subprocess.TimeoutExpired:
        row = _base_row(case, cap)
        row.update({"verdict": "killed", "seconds": round(time.monotonic() - t0, 3),
                    "limit": f"no answer within cap + {grace:g} s; the process was killed"})
        return row
    try:
        rows = json.loads(proc.stdout)
        assert isinstance(rows, list) and len(rows) == 1
        return dict(rows[0])
    except (ValueError, AssertionError):
        row = _base_row(case, cap)
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        row.update({"verdict": "crashed", "limit": f"exit {proc.returncode}: {tail}",
                    "seconds": round(time.monotonic() - t0, 3)})
        return row


def _proc_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of ``pid`` so far, from ``/proc`` (None when gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_tree(cmd: Sequence[str], timeout: float, period: float = 0.05
             ) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run ``cmd``; (its result, wall seconds, CPU seconds of its whole process tree).

    ``/usr/bin/time`` and ``RUSAGE_CHILDREN`` count only the processes that were waited
    for (Ray's workers are not): every ``period`` seconds the tree is read from
    ``/proc`` and each process's last CPU reading kept; the larger of their sum and the
    reaped children's CPU is the tree's."""
    from checker.engines.proctree import descendants

    seen: dict[tuple[int, int], float] = {}
    before = _child_cpu()
    t0 = time.monotonic()
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(period):
            for p in [(proc.pid, 0), *descendants(proc.pid)]:
                cpu = _proc_cpu(p[0])
                if cpu is not None:
                    seen[p] = max(seen.get(p, 0.0), cpu)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    reaped = _child_cpu() - before
    return (subprocess.CompletedProcess(proc.args, proc.returncode, out, err), wall,
            max(reaped, sum(seen.values())))


WORKER_BACKENDS = ("local", "ray")


def workers_compare(cases: Sequence[Case], counts: Sequence[int], cap: float,
                    backends: Sequence[str] = ("local",), repeat: int = 3
                    ) -> list[dict[str, Any]]:
    """Each case as a whole ``kvrace check`` command in a fresh process, once alone and
    once per number of workers and backend (``--workers N --backend B``), ``repeat``
    times in turn (so that a busy spell of the machine hits every configuration); one
    row per configuration, with the median wall time and the median CPU time of the
    process tree (the driver, its workers and, with Ray, Ray's processes)."""
    import tempfile

    configs: list[tuple[int, str | None]] = [(0, None)]
    configs += [(n, b) for b in backends for n in counts]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if case.model != "flagship" and case.model not in ("fischer", "train_gate"):
                raise BenchError(f"--workers-compare: {case.key} is not a check case")
            build(case)  # the variant is what it claims to be
            path = Path(tmp) / f"{case.model}.kvr"
            path.write_text(case_text(case)[0], encoding="utf-8")
            base = [sys.executable, "-m", "checker", "check", str(path), "--json", "-q",
                    "--no-liveness", "--timeout", repr(cap)]
            base += ["--no-symmetry"] * (not case.sym) + ["--no-clock-reduction"] * (
                not case.clk) + ["--no-deadlock"] * (not case.dl)
            runs: dict[tuple[int, str | None], list[dict[str, Any]]] = {c: [] for c in configs}
            for _ in range(repeat):
                for n, backend in configs:
                    extra = [] if n == 0 else ["--workers", str(n), "--backend", str(backend)]
                    got, wall, cpu = run_tree([*base, *extra], cap + 120)
                    try:
                        doc = json.loads(got.stdout)
                    except ValueError:
                        tail = (got.stderr.strip().splitlines() or ["(no output)"])[-1]
                        doc = {"verdict": "crashed", "limit": f"exit {got.returncode}: {tail}"}
                    runs[(n, backend)].append({"wall": wall, "cpu": cpu, "doc": doc})
            for (n, backend), got_runs in runs.items():
                doc = got_runs[-1]["doc"]
                d = doc.get("distributed") or {}
                stats = doc.get("stats") or {}
                rows.append({
                    "case": case.key, "workers": n, "backend": backend,
                    "verdict": doc.get("verdict"), "limit": doc.get("limit"),
                    "zones": stats.get("zones"),
                    "wall_seconds": round(statistics.median(r["wall"] for r in got_runs), 3),
                    "tree_cpu_seconds": round(statistics.median(r["cpu"] for r in got_runs),
                                              3),
                    "walls": [round(r["wall"], 2) for r in got_runs],
                    "cpus": [round(r["cpu"], 2) for r in got_runs],
                    "startup_seconds": d.get("startup_seconds"), "rounds": d.get("rounds"),
                    "bytes_per_zone": d.get("bytes_per_explored_zone"),
                    "cpu_per_worker": d.get("cpu_seconds_per_worker")})
    return rows


def workers_table(rows: Sequence[dict[str, Any]]) -> str:
    """The --workers-compare table: the whole command's wall and process-tree CPU time
    (medians), and the speed-up in wall time against one process."""
    header = ["case", "run", "verdict", "zones", "wall s", "tree cpu s", "speed-up",
              "start-up s", "max worker cpu s", "rounds", "bytes/zone", "wall s each",
              "note"]
    base = {r["case"]: r["wall_seconds"] for r in rows if r["workers"] == 0}
    body = []
    for r in rows:
        b = base.get(r["case"])
        up = f"{b / r['wall_seconds']:.2f}" if b and r["wall_seconds"] > 0 else "-"
        run = ("1 process" if r["workers"] == 0 else
               f"{r['workers']} {'worker' if r['workers'] == 1 else 'workers'}, {r['backend']}")
        body.append([
            r["case"], run, str(r["verdict"]), _num(r["zones"]), _num(r["wall_seconds"], 2),
            _num(r["tree_cpu_seconds"], 2), up, _num(r.get("startup_seconds"), 2),
            _num(max(r["cpu_per_worker"]) if r.get("cpu_per_worker") else None, 2),
            _num(r.get("rounds")), _num(r.get("bytes_per_zone"), 0),
            " ".join(f"{w:.2f}" for w in r["walls"]), r.get("limit") or "",
        ])
    return _render(header, body, right=set(range(3, 11)))


# ------------------------------------------------------------------------------ tables


def _num(v: Any, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _render(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def _check_note(row: dict[str, Any]) -> str:
    v = row.get("verdict")
    if v == "inconclusive":
        note = f"{row.get('limit')}; {row.get('queued', 0):,} zones still queued"
        if row.get("prepass_complete") is False:
            note += ("; the cap was hit in the clock-bounds pre-pass, so the zone search ran"
                     " without clock reduction")
        elif (row.get("prepass_seconds") or 0) > 0.5 * row.get("cap_seconds", 0):
            note += f"; the clock-bounds pre-pass took {row['prepass_seconds']:.1f} s of it"
        return note
    if v == "violated":
        return f"{row.get('property')}: {row.get('message')}"
    if v in ("error", "killed", "crashed"):
        return str(row.get("limit") or row.get("message"))
    if row.get("extrapolation") == "m":
        return "restarted with Extra_M (a deadlock of the LU abstraction was not confirmed)"
    return ""


def _dbm_cell(row: dict[str, Any]) -> str:
    """The DBM implementation that ran (or the one asked for, if the run gave no answer)."""
    asked = row.get("dbm_requested", "auto")
    ran = row.get("dbm")
    if ran is None:
        return "-" if asked == "auto" else f"{asked}?"
    return ran if asked in ("auto", ran) else f"{ran} ({asked} asked)"


def check_table(rows: Iterable[dict[str, Any]]) -> str:
    """The flagship zone-explorer table."""
    header = ["req", "slots", "chunks", "scale", "reductions", "dbm", "verdict", "states",
              "zones", "transitions", "seconds", "cpu s", "pre-pass s", "pre-pass states",
              "zones/s", "peak MiB", "note"]
    body = []
    for r in rows:
        pre_states = r.get("prepass_states")
        if r.get("prepass_complete") is False:
            pre_states = "cut"
        body.append([
            str(r["requests"]), str(r["slots"]), str(r["chunks"]), f"x{r['scale']}",
            r["reductions"], _dbm_cell(r), r["verdict"], _num(r.get("states")),
            _num(r.get("zones")), _num(r.get("transitions")), _num(r.get("seconds"), 2),
            _num(r.get("cpu_seconds"), 2), _num(r.get("prepass_seconds"), 2),
            _num(pre_states), _num(r.get("zones_per_second"), 0), _num(r.get("peak_mib"), 1),
            _check_note(r),
        ])
    return _render(header, body, right=set(range(7, 16)))


def fischer_table(rows: Iterable[dict[str, Any]]) -> str:
    """The Fischer zone-explorer table."""
    header = ["processes", "reductions", "dbm", "verdict", "states", "zones", "transitions",
              "seconds", "cpu s", "zones/s", "peak MiB", "note"]
    body = []
    for r in rows:
        body.append([
            str(r["processes"]), r["reductions"], _dbm_cell(r), r["verdict"],
            _num(r.get("states")), _num(r.get("zones")), _num(r.get("transitions")),
            _num(r.get("seconds"), 2), _num(r.get("cpu_seconds"), 2),
            _num(r.get("zones_per_second"), 0), _num(r.get("peak_mib"), 1), _check_note(r),
        ])
    return _render(header, body, right={0, *range(4, 11)})


def _without_dbm(key: str) -> str:
    return re.sub(r",dbm=\w+", "", key)


def dbm_pairs(rows: Iterable[dict[str, Any]]
              ) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The (case, compiled-core row, Python row) pairs among ``rows``, in row order."""
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        if r.get("dbm_requested") in ("c", "python"):
            by.setdefault(_without_dbm(r["case"]), {})[r["dbm_requested"]] = r
    return [(k, v["c"], v["python"]) for k, v in by.items() if "c" in v and "python" in v]


def dbm_speedup(c: dict[str, Any], py: dict[str, Any]) -> float | None:
    """How many times faster the compiled core ran: its zones per second over the
    Python reference's (python seconds / c seconds when both explored the same zones)."""
    zc, zp = c.get("zones_per_second"), py.get("zones_per_second")
    if not zc or not zp:
        return None
    return round(float(zc) / float(zp), 2)


def dbm_table(rows: Iterable[dict[str, Any]]) -> str:
    """Per case: the compiled DBM core against the pure-Python reference."""
    header = ["case", "verdict", "zones c", "s c", "zones/s c", "zones py", "s py",
              "zones/s py", "python/c", "note"]
    body = []
    for key, c, py in dbm_pairs(rows):
        verdict = c["verdict"] if c["verdict"] == py["verdict"] else \
            f"{c['verdict']} / {py['verdict']}"
        note = ""
        if c.get("dbm") not in (None, "c"):
            note = f"the c run used the {c['dbm']} DBMs (constants too large for the core)"
        elif (c["verdict"] == py["verdict"] and c["verdict"] in ("holds", "violated")
              and c.get("zones") != py.get("zones")):
            note = "zone counts differ"
        speed = dbm_speedup(c, py)
        body.append([
            key, verdict, _num(c.get("zones")), _num(c.get("seconds"), 2),
            _num(c.get("zones_per_second"), 0), _num(py.get("zones")),
            _num(py.get("seconds"), 2), _num(py.get("zones_per_second"), 0),
            "-" if speed is None else f"{speed:.2f}x", note,
        ])
    return _render(header, body, right=set(range(2, 9)))


def _conclusive(row: dict[str, Any]) -> bool:
    return row.get("verdict") in ("holds", "violated", "complete", "proved", "refuted")


def _zones_cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    if row.get("zones") is None:
        return str(row.get("verdict"))
    return _num(row["zones"]) + ("" if _conclusive(row) else f" ({row['verdict']})")


def tchecker_cases() -> list[tuple[tuple[int, int, int], Case, Case]]:
    """Per TChecker reference: the comparable case (no symmetry, no deadlock check)
    and the defaults."""
    return [((r, s, c), Case(r=r, s=s, c=c, sym=False, dl=False), Case(r=r, s=s, c=c))
            for (r, s, c) in TCHECKER_STATES]


def tchecker_table(found: Callable[[Case], dict[str, Any] | None]) -> str:
    """kvrace's zone counts next to TChecker's stored states."""
    header = ["case", "TChecker states", "kvrace zones no-sym no-dl", "s",
              "kvrace zones defaults", "s", "ratio"]
    body = []
    for (r, s, c), comparable, default in tchecker_cases():
        a, b = found(comparable), found(default)
        ratio = a.get("tchecker_ratio") if a else None
        body.append([
            f"{r}/{s}/{c}", _num(TCHECKER_STATES[(r, s, c)]), _zones_cell(a),
            _num(a.get("seconds") if a else None, 2), _zones_cell(b),
            _num(b.get("seconds") if b else None, 2),
            "-" if ratio is None else f"{ratio:.3f}",
        ])
    return _render(header, body, right=set(range(1, 7)))


PEER_ROWS: tuple[tuple[str, Case | Path], ...] = (
    ("flagship 2/1/2", Case(r=2, s=1, c=2)),
    ("flagship 2/2/2", Case(r=2, s=2, c=2)),
    ("flagship 3/1/2", Case(r=3, s=1, c=2)),
    ("flagship 3/2/2", Case(r=3, s=2, c=2)),
    ("fischer", REPO / "spec" / "classic" / "fischer.kvr"),
    ("train_gate", REPO / "spec" / "classic" / "train_gate.kvr"),
    ("csma_cd", REPO / "spec" / "classic" / "csma_cd.kvr"),
)
"""The rows of ``--peer tchecker``: flagship variants and classic models."""


def tck_reach() -> str | None:
    """TChecker's ``tck-reach``: ``$TCK_REACH``, or on PATH."""
    import shutil

    path = os.environ.get("TCK_REACH") or shutil.which("tck-reach")
    return path if path and os.access(path, os.X_OK) else None


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def peer_row(name: str, source: Case | Path, tck: str, cap: float) -> dict[str, Any]:
    """One model explored by kvrace (no symmetry, no deadlock check: TChecker has
    neither) and, exported as a network of processes, by ``tck-reach -a covreach``."""
    import tempfile

    from checker.api import check
    from checker.engines import Limits, Options
    from checker.export.network import tchecker_network
    from checker.language import load
    from checker.model.compiled import SpecModel

    spec = build(source) if isinstance(source, Case) else load(source)
    model = SpecModel(spec)
    row: dict[str, Any] = {"row": name}
    cpu = time.process_time()
    out = check(spec, limits=Limits(timeout=cap), options=Options(symmetry=False,
                                                                 deadlock=False))
    row["kvrace_cpu"] = round(time.process_time() - cpu, 3)
    row["kvrace_verdict"] = str(out.verdict.value)
    row["kvrace_states"] = out.raw[1].stats.zones if out.raw is not None else None
    text = tchecker_network(spec, model.values, queries=False).text
    with tempfile.NamedTemporaryFile("w", suffix=".tck", delete=False) as f:
        f.write(text)
    before = _child_cpu()
    try:
        proc = subprocess.run([tck, "-a", "covreach", "-l", "bad", f.name],
                              capture_output=True, text=True, timeout=cap, check=False)
        got = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
        row["tchecker_verdict"] = {"true": "violated", "false": "holds"}.get(
            got.get("REACHABLE", ""), "error")
        row["tchecker_states"] = int(got["STORED_STATES"]) if "STORED_STATES" in got else None
    except subprocess.TimeoutExpired:
        row["tchecker_verdict"], row["tchecker_states"] = "timeout", None
    finally:
        os.unlink(f.name)
    row["tchecker_cpu"] = round(_child_cpu() - before, 3)
    ks, ts = row["kvrace_states"], row["tchecker_states"]
    row["states_ratio"] = round(ks / ts, 3) if ks and ts else None
    kc, tc = row["kvrace_cpu"], row["tchecker_cpu"]
    row["cpu_ratio"] = round(kc / tc, 2) if kc and tc else None
    return row


def peer_table(rows: Sequence[dict[str, Any]]) -> str:
    """kvrace next to TChecker: verdicts, stored states, CPU seconds, ratios."""
    header = ["model", "kvrace", "TChecker", "kvrace states", "TChecker states",
              "states ratio", "kvrace cpu s", "TChecker cpu s", "cpu ratio"]
    body = [[r["row"], r["kvrace_verdict"], r["tchecker_verdict"], _num(r["kvrace_states"]),
             _num(r["tchecker_states"]),
             "-" if r["states_ratio"] is None else f"{r['states_ratio']:.3f}",
             _num(r["kvrace_cpu"], 2), _num(r["tchecker_cpu"], 2),
             "-" if r["cpu_ratio"] is None else f"{r['cpu_ratio']:.2f}"] for r in rows]
    return _render(header, body, right=set(range(3, 9)))


PEER_LARGE_ROWS: tuple[tuple[str, Case], ...] = (
    ("flagship 3/2/3", Case(r=3, s=2, c=3)),
    ("flagship 4/2/2", Case(r=4, s=2, c=2)),
    ("flagship 4/2/3", Case(r=4, s=2, c=3)),
    ("Fischer N=9", Case(model="fischer", n=9)),
    ("Fischer N=10", Case(model="fischer", n=10)),
    ("CSMA/CD N=11", Case(model="csma_cd", n=11)),
    ("train-gate N=5", Case(model="train_gate", n=5)),
)
"""The rows of ``--peer tchecker --large``: the models of the README's comparison, each
with a few hundred thousand zones or more."""


def _tck_run(tck: str, text: str, cap: float, label: str | None) -> dict[str, Any]:
    """``tck-reach -a covreach`` on a TChecker file (looking for ``label``; None: every
    state is explored): its verdict, stored states, CPU seconds (its children's rusage)
    and peak memory (its own ``MEMORY_MAX_RSS``)."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".tck", delete=False) as f:
        f.write(text)
    before = _child_cpu()
    out: dict[str, Any] = {}
    try:
        look = [] if label is None else ["-l", label]
        # Through a shell that forks it: a child forked from this interpreter would
        # report the interpreter's resident size as its own peak.
        proc = subprocess.run(["sh", "-c", '"$@"; exit $?', "sh", tck, "-a", "covreach",
                               *look, f.name],
                              capture_output=True, text=True, timeout=cap, check=False)
        got = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
        out["verdict"] = {"true": "violated", "false": "holds"}.get(
            got.get("REACHABLE", ""), "error")
        out["states"] = int(got["STORED_STATES"]) if "STORED_STATES" in got else None
        rss = got.get("MEMORY_MAX_RSS")
        out["peak_mib"] = round(int(rss) / 1024, 1) if rss else None
    except subprocess.TimeoutExpired:
        out.update({"verdict": "timeout", "states": None, "peak_mib": None})
    finally:
        os.unlink(f.name)
    out["cpu"] = round(_child_cpu() - before, 3)
    return out


TCK_EXAMPLES = {"fischer": "fischer.sh", "csma_cd": "csmacd.sh", "train_gate": "train_gate.sh"}
"""TChecker's own generator of each classic model (in its source tree's ``examples``)."""


def _tck_example(tck: str, case: Case) -> tuple[str, str] | None:
    """TChecker's own model of ``case`` (its example generator's output, the generator
    found in ``$TCK_EXAMPLES`` or beside the source tree ``tck`` was built in) and what
    it is; None for the flagship or when the generator is not found."""
    script = TCK_EXAMPLES.get(case.model)
    if script is None:
        return None
    where = os.environ.get("TCK_EXAMPLES")
    dirs = [Path(where)] if where else [p / "examples" for p in Path(tck).resolve().parents]
    for d in dirs:
        if (d / script).is_file():
            proc = subprocess.run(["bash", str(d / script), str(case.n)], capture_output=True,
                                  text=True, timeout=60, check=False)
            if proc.returncode == 0 and proc.stdout:
                return proc.stdout, f"examples/{script} {case.n}"
    return None


def peer_large_row(name: str, case: Case, tck: str, cap: float) -> dict[str, Any]:
    """One large model: kvrace without symmetry and deadlock check, then with its
    default reductions (no deadlock check either), each in a fresh process (its own
    peak memory), and TChecker on its own model (or on the network export)."""
    from checker.export.network import tchecker_network
    from checker.model.compiled import SpecModel

    plain = replace(case, sym=False, dl=False)
    row: dict[str, Any] = {"row": name, "case": plain.key}
    k = run_in_subprocess(plain, cap)
    row.update({"kvrace_verdict": k.get("verdict"), "kvrace_states": k.get("zones"),
                "kvrace_cpu": k.get("cpu_seconds"), "kvrace_peak_mib": k.get("peak_mib")})
    d = run_in_subprocess(replace(case, dl=False), cap)
    row.update({"defaults_verdict": d.get("verdict"), "defaults_cpu": d.get("cpu_seconds")})
    row.update({"static_verdict": None, "static_states": None, "static_cpu": None,
                "static_peak_mib": None})
    if case.model != "flagship":
        st = run_in_subprocess(replace(plain, cb="static"), cap)
        # A model that is not a network of processes gets the pre-pass instead.
        if st.get("prepass_seconds") is None:
            row.update({"static_verdict": st.get("verdict"), "static_states": st.get("zones"),
                        "static_cpu": st.get("cpu_seconds"),
                        "static_peak_mib": st.get("peak_mib")})
    own = _tck_example(tck, case)
    label: str | None = None
    if own is not None:
        text, row["tchecker_model"] = own
    else:
        label = "bad"
        spec = build(case)
        text = tchecker_network(spec, SpecModel(spec).values, queries=False).text
        row["tchecker_model"] = "kvrace's network export"
    tc = _tck_run(tck, text, cap, label)
    row.update({f"tchecker_{key}": value for key, value in tc.items()})
    ks, ts = row["kvrace_states"], row["tchecker_states"]
    km, tm = row["kvrace_peak_mib"], row["tchecker_peak_mib"]
    row["bytes_per_zone_ratio"] = (round((km / ks) / (tm / ts), 2)
                                   if ks and ts and km and tm else None)
    kc, tcpu = row["kvrace_cpu"], row["tchecker_cpu"]
    row["cpu_ratio"] = (round(kc / tcpu, 2) if kc and tcpu and row["tchecker_states"]
                        and row["kvrace_verdict"] in ("holds", "violated") else None)
    return row


def peer_large_table(rows: Sequence[dict[str, Any]]) -> str:
    """The large models next to TChecker: states, CPU, memory per zone; for a network of
    processes also with the clock bounds per process location (``--clock-bounds
    static``)."""
    header = ["model", "TChecker's model", "TChecker stored", "TChecker cpu s", "TChecker MiB",
              "kvrace zones",
              "kvrace cpu s", "kvrace MiB", "cpu ratio", "memory/zone ratio",
              "static zones", "static cpu s", "static MiB", "kvrace sym cpu s"]

    def cpu(verdict: object, value: object) -> str:
        return _num(value, 1) if verdict in ("holds", "violated") else f"> {_num(value, 0)}"

    body = [[r["row"], r["tchecker_model"], _num(r["tchecker_states"]),
             cpu(r["tchecker_verdict"], r["tchecker_cpu"]), _num(r["tchecker_peak_mib"], 1),
             _num(r["kvrace_states"]), cpu(r["kvrace_verdict"], r["kvrace_cpu"]),
             _num(r["kvrace_peak_mib"], 1),
             "-" if r["cpu_ratio"] is None else f"{r['cpu_ratio']:.2f}",
             "-" if r["bytes_per_zone_ratio"] is None else f"{r['bytes_per_zone_ratio']:.2f}",
             _num(r["static_states"]),
             "-" if r["static_verdict"] is None else cpu(r["static_verdict"], r["static_cpu"]),
             _num(r["static_peak_mib"], 1),
             cpu(r["defaults_verdict"], r["defaults_cpu"])] for r in rows]
    return _render(header, body, right=set(range(2, 14)))


@dataclass(frozen=True)
class Target:
    """A time the engine should stay under, on one case."""

    name: str
    case: Case
    seconds: float


TARGETS: tuple[Target, ...] = (
    Target("flagship 3/2/2, defaults", Case(r=3, s=2, c=2), 2.0),
    Target("flagship 3/2/3, defaults", Case(r=3, s=2, c=3), 20.0),
    Target("flagship 4/2/2, defaults", Case(r=4, s=2, c=2), 60.0),
    Target("flagship 4/2/3, defaults", Case(r=4, s=2, c=3), 120.0),
    Target("Fischer N=8, no symmetry", Case(model="fischer", n=8, sym=False), 60.0),
    Target("Fischer N=10, symmetry", Case(model="fischer", n=10), 10.0),
    Target("Fischer N=40, symmetry", Case(model="fischer", n=40), 120.0),
    Target("synth of the flagship (2/1/2)", Case(task="synth"), 1.0),
)


def target_result(row: dict[str, Any], target: Target) -> tuple[str, str]:
    """``PASS`` or ``MISS``, and why it missed."""
    if _conclusive(row) and (row.get("seconds") or 0) < target.seconds:
        return "PASS", ""
    if _conclusive(row):
        return "MISS", f"{row['seconds'] / target.seconds:.1f}x the target"
    cap = row.get("cap_seconds", 0)
    if row.get("verdict") in ("inconclusive", "timeout"):
        why = f"hit the cap ({cap:g} s{', below the target' if cap < target.seconds else ''})"
        if row.get("prepass_complete") is False:
            why += " in the clock-bounds pre-pass"
        elif (row.get("prepass_seconds") or 0) > 0.5 * cap:
            why += f" after a {row['prepass_seconds']:.1f} s clock-bounds pre-pass"
        return "MISS", why
    return "MISS", f"{row.get('verdict')}: {row.get('limit') or row.get('message') or ''}"


def target_cap(t: Target, cap: float) -> float:
    """The time a target's run may take: ``--cap``, or the target when it is longer."""
    return max(cap, t.seconds)


def targets_table(found: Callable[..., dict[str, Any] | None], cap: float) -> str:
    """The engine's targets, each with its measured time and PASS or MISS."""
    header = ["target", "case", "under s", "verdict", "seconds", "cpu s", "pre-pass s",
              "result", "note"]
    body = []
    for t in TARGETS:
        row = found(t.case, target_cap(t, cap))
        if row is None:
            continue
        body.append([
            t.name, t.case.key, f"{t.seconds:g}", row.get("verdict", "-"),
            _num(row.get("seconds"), 2), _num(row.get("cpu_seconds"), 2),
            _num(row.get("prepass_seconds"), 2), row.get("target_result", "-"),
            row.get("target_note", ""),
        ])
    return _render(header, body, right={2, 4, 5, 6})


def parametric_table(rows: Iterable[dict[str, Any]]) -> str:
    """The prove/synth table."""
    header = ["task", "req", "slots", "chunks", "verdict", "states", "symbolic", "transitions",
              "queries", "explore s", "total s", "cpu s", "peak MiB", "detail"]
    body = []
    for r in rows:
        body.append([
            r["task"], str(r["requests"]), str(r["slots"]), str(r["chunks"]), r["verdict"],
            _num(r.get("states")), _num(r.get("symbolic_states")), _num(r.get("transitions")),
            _num(r.get("queries")), _num(r.get("explore_seconds"), 1), _num(r.get("seconds"), 1),
            _num(r.get("cpu_seconds"), 1), _num(r.get("peak_mib"), 1),
            str(r.get("detail") or r.get("limit") or ""),
        ])
    return _render(header, body, right=set(range(5, 13)))


def host_line() -> str:
    """CPUs and load average: timings are wall-clock, so a busy host slows every case."""
    try:
        load = "/".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        load = "?"
    return f"{os.cpu_count()} CPUs, load average (1/5/15 min) {load}"


def code_line() -> str:
    """Which checker was measured: its directory, commit, whether it has local edits,
    and whether its compiled DBM core is built."""
    import checker
    from checker.domains import backend

    where = Path(checker.__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                "checker"], capture_output=True, text=True, check=True).stdout
        rev = f"commit {head}" + (" + uncommitted changes to checker/" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        rev = "not a git checkout"
    core = "C DBM core built" if backend.C_AVAILABLE else "C DBM core NOT built (Python DBMs)"
    return f"{where} ({rev}; {core})"


# ---------------------------------------------------------------------------------- plan

GROUPS = ("flagship", "fischer", "tchecker", "targets", "prove-synth")


def default_group(case: Case) -> str:
    if case.task != "check":
        return "prove-synth"
    return case.model


class Plan:
    """The runs of this invocation, each once (a case may serve several tables)."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Case, float]] = []
        self.groups: list[list[str]] = []
        self._index: dict[tuple[str, float], int] = {}

    def add(self, case: Case, cap: float, group: str) -> None:
        k = self._index.get((case.key, cap))
        if k is None:
            k = len(self.jobs)
            self._index[(case.key, cap)] = k
            self.jobs.append((case, cap))
            self.groups.append([])
        if group not in self.groups[k]:
            self.groups[k].append(group)


def annotate(rows: Sequence[dict[str, Any]], cap: float
             ) -> Callable[..., dict[str, Any] | None]:
    """Add the TChecker, target and DBM-comparison fields to the rows; return a
    lookup of a check run at ``cap`` by case."""
    by_key = {(r["case"], r["cap_seconds"]): r for r in rows}

    def found(case: Case, at: float | None = None) -> dict[str, Any] | None:
        """The row of ``case`` run at ``cap`` (or at ``at``)."""
        return by_key.get((case.key, cap if at is None else at))

    for (r, s, c), comparable, default in tchecker_cases():
        for case in (comparable, default):
            row = found(case)
            if row is None or "tchecker" not in row.get("groups", ()):
                continue
            ref = TCHECKER_STATES[(r, s, c)]
            row["tchecker_states"] = ref
            if _conclusive(row) and row.get("zones") is not None:
                row["tchecker_ratio"] = round(row["zones"] / ref, 3)
    for t in TARGETS:
        row = found(t.case, target_cap(t, cap))
        if row is None or "targets" not in row.get("groups", ()):
            continue
        result, note = target_result(row, t)
        row.update({"target": t.name, "target_seconds": t.seconds, "target_result": result,
                    "target_note": note})
    for _, c_row, py_row in dbm_pairs(rows):
        speed = dbm_speedup(c_row, py_row)
        c_row["dbm_speedup"] = py_row["dbm_speedup"] = speed
    return found


def print_tables(rows: Sequence[dict[str, Any]], cap: float, as_json: bool) -> None:
    found = annotate(rows, cap)
    if as_json:
        print(json.dumps(list(rows), indent=2))
        return

    def group(name: str) -> list[dict[str, Any]]:
        return [r for r in rows if name in r.get("groups", ())]

    sections: list[str] = []
    flagship, fischer = group("flagship"), group("fischer")
    if flagship:
        sections.append(f"Flagship ({SPEC.relative_to(REPO)})\n" + check_table(flagship))
        if dbm_pairs(flagship):
            sections.append("Flagship: compiled DBM core (c) vs Python reference\n"
                            + dbm_table(flagship))
    if fischer:
        sections.append(f"Fischer ({FISCHER_SPEC.relative_to(REPO)})\n" + fischer_table(fischer))
    if group("train_gate"):
        sections.append("Train-gate (TChecker's examples/train_gate.sh as a kvrace spec)\n"
                        + fischer_table(group("train_gate")))
        if dbm_pairs(fischer):
            sections.append("Fischer: compiled DBM core (c) vs Python reference\n"
                            + dbm_table(fischer))
    if group("tchecker"):
        sections.append("Flagship against TChecker (tck-reach -a covreach, no symmetry)\n"
                        + tchecker_table(found))
    if group("targets"):
        sections.append("Targets\n" + targets_table(found, cap))
    params = group("prove-synth")
    if params:
        sections.append("prove / synth\n" + parametric_table(params))
    print("\n\n".join(sections))


def _progress(i: int, n: int, row: dict[str, Any]) -> None:
    if row["task"] == "check":
        what = f"{_num(row.get('zones'))} zones"
    else:
        what = f"{_num(row.get('symbolic_states'))} symbolic states"
    print(f"[{i}/{n}] {row['case']:<34} {row['verdict']:<13} {_num(row.get('seconds'), 2):>8} s"
          f"  {what}", file=sys.stderr, flush=True)


# -------------------------------------------------------------------------------- editor

FMT_TARGET = 2.0
"""Seconds for ``kvrace fmt --check spec`` (the whole tree, a fresh process)."""
LSP_TARGET = 0.2
"""Seconds from an edit of the largest spec to its diagnostics (median)."""
LSP_EDITS = 50


def editor_rows() -> list[dict[str, Any]]:
    """The editor measurements: fmt on ``spec/`` (a fresh process, best of three; wall
    and CPU time, the target judged on the wall time) and the language server's
    latency (``tools/lsp_session.py --latency``)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs, cpus = [], []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "checker", "fmt", "--check", "spec"],
                              cwd=REPO, env=env, capture_output=True, text=True, check=False)
        runs.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise BenchError(f"kvrace fmt --check spec: exit {proc.returncode}\n{proc.stdout}")
    files = len(list((REPO / "spec").rglob("*.kvr")))
    largest = max((REPO / "spec").rglob("*.kvr"), key=lambda p: p.stat().st_size)
    sys.path.insert(0, str(REPO / "tools"))
    import lsp_session

    lat = lsp_session.latency(largest, LSP_EDITS)
    return [
        {"what": f"kvrace fmt --check spec ({files} files)", "seconds": min(runs),
         "target": FMT_TARGET},
        {"what": f"kvrace fmt --check spec ({files} files), CPU time", "seconds": min(cpus),
         "target": None},
        {"what": f"lsp diagnostics, {largest.relative_to(REPO)} (median of {LSP_EDITS} edits)",
         "seconds": lat["median"], "target": LSP_TARGET},
        {"what": f"lsp diagnostics, {largest.relative_to(REPO)} (worst of {LSP_EDITS} edits)",
         "seconds": lat["worst"], "target": None},
    ]


def editor_table(rows: Sequence[dict[str, Any]]) -> str:
    """The editor rows with PASS or MISS against their targets."""
    body = []
    for r in rows:
        target = r["target"]
        verdict = "" if target is None else ("PASS" if r["seconds"] < target else "MISS")
        body.append([r["what"], f"{r['seconds'] * 1000:.0f} ms",
                     "" if target is None else f"< {target * 1000:.0f} ms", verdict])
    return "Editor\n" + _render(["measure", "time", "target", ""], body, {1, 2})


COLD_START_SPEC = "spec/classic/fischer.kvr"
"""The small spec whose ``kvrace check`` times the start-up (18 zones: the exploration
itself takes about a millisecond)."""
COLD_START_TARGET = 0.3
"""Seconds of wall time for ``kvrace check`` of :data:`COLD_START_SPEC` (median)."""


def cold_start_rows(runs: int) -> list[dict[str, Any]]:
    """Wall time of ``kvrace check spec/classic/fischer.kvr`` in ``runs`` fresh processes
    (``python -m checker`` of this tree), after one run that fills the caches (bytecode,
    parser, the spec's elaborated form), and of ``python -c pass`` alternately with it:
    the interpreter's own start-up (with this environment's ``site``), for reference."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed kvrace has its bytecode
    commands = {
        f"kvrace check {COLD_START_SPEC}": [sys.executable, "-m", "checker", "check",
                                            COLD_START_SPEC],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    times: dict[str, list[float]] = {what: [] for what in commands}
    for k in range(runs + 1):
        for what, command in commands.items():
            start = time.perf_counter()
            proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                                  check=False)
            took = time.perf_counter() - start
            if proc.returncode != 0:
                raise BenchError(f"{what}: exit {proc.returncode}\n{proc.stderr}")
            if k > 0:  # the first run fills the caches
                times[what].append(took)
    return [{"what": what, "runs": runs, "median": statistics.median(ts), "min": min(ts),
             "target": COLD_START_TARGET if what.startswith("kvrace") else None}
            for what, ts in times.items()]


def cold_start_table(rows: Sequence[dict[str, Any]]) -> str:
    """The ``--cold-start`` rows: median and fastest wall time, PASS or MISS."""
    body = []
    for r in rows:
        target = r["target"]
        verdict = "" if target is None else ("PASS" if r["median"] < target else "MISS")
        body.append([r["what"], f"{r['median'] * 1000:.0f} ms", f"{r['min'] * 1000:.0f} ms",
                     str(r["runs"]), "" if target is None else f"< {target * 1000:.0f} ms",
                     verdict])
    return ("Cold start (wall time, fresh processes)\n"
            + _render(["command", "median", "min", "runs", "target", ""], body, {1, 2, 3, 4}))


# -------------------------------------------------------------------------------- main


def make_plan(args: argparse.Namespace) -> Plan:
    """Every run the options ask for; fails (BenchError) before any run if a variant
    cannot be generated or the compiled DBM core is asked for and not built."""
    plan = Plan()
    table: list[tuple[Case, str]] = []
    if wants_grid(args):
        table += [(c, "flagship") for c in select_cases(args)]
    if args.fischer:
        table += [(c, "fischer") for c in fischer_cases(parse_processes(args.fischer))]
    for case, group in table:
        for c in dbm_pair(case) if args.dbm_compare else [case]:
            plan.add(c, args.cap, group)
    if args.tchecker:
        for _, comparable, default in tchecker_cases():
            plan.add(comparable, args.cap, "tchecker")
            plan.add(default, args.cap, "tchecker")
    if args.targets:
        for t in TARGETS:  # a run may take as long as its target
            plan.add(t.case, target_cap(t, args.cap), "targets")
    if args.prove_synth:
        for task in ("prove", "synth"):
            for r in PROVE_SYNTH_REQUESTS:
                plan.add(Case(r=r, task=task), args.synth_cap, "prove-synth")
    if not plan.jobs:
        raise BenchError("nothing to run")
    for c, _ in plan.jobs:  # fail loudly before any run if a variant cannot be generated
        case_text(c)
    if any(c.dbm == "c" for c, _ in plan.jobs):
        from checker.domains import backend

        if not backend.C_AVAILABLE:
            raise BenchError("the compiled DBM core checker.domains._cdbm is not built"
                             " (build it with `python setup.py build_ext --inplace`)")
    return plan


def train_gate_text(n: int) -> str:
    """``docs/liveness/train_gate.kvr`` with ``n`` trains (a queue of ``n``, W = 300)."""
    text = (REPO / "docs" / "liveness" / "train_gate.kvr").read_text(encoding="utf-8")
    names = ", ".join(f"T{i + 1}" for i in range(n))
    shift = "; ".join(f"queue[{i}] := queue[{i + 1}]" for i in range(n - 1))
    for old, new in (
        ("symmetric type TrainId = {T1, T2, T3}", f"symmetric type TrainId = {{{names}}}"),
        ("type Slot = 0..2", f"type Slot = 0..{n - 1}"),
        ("var len : 0..3 = 0", f"var len : 0..{n} = 0"),
        ("queue[0] := queue[1]; queue[1] := queue[2]; queue[2] := none",
         (shift + "; " if shift else "") + f"queue[{n - 1}] := none"),
        ("param W in [0, 300] = 60", "param W in [0, 300] = 300"),
    ):
        if old not in text:
            raise BenchError(f"train-gate variant: `{old}` not found")
        text = text.replace(old, new)
    return text


def liveness_train_gate(counts: Sequence[int]) -> list[dict[str, Any]]:
    """Safety and liveness of train-gate with N trains, each with and without symmetry."""
    from checker import api
    from checker.engines import Options
    from checker.language import load_text

    rows: list[dict[str, Any]] = []
    for n in counts:
        spec = load_text(train_gate_text(n), f"<train_gate {n}>")
        row: dict[str, Any] = {"trains": n}
        out = None
        for sym in (True, False):
            t0 = time.monotonic()
            out = api.check(spec, options=Options(symmetry=sym), timestamps=False)
            key = "safety" if sym else "safety_nosym"
            row[key] = {"verdict": str(out.verdict), "zones": out.stats.zones,
                        "seconds": round(time.monotonic() - t0, 3)}
        assert out is not None and out.raw is not None
        for sym in (True, False):
            t0 = time.monotonic()
            live = api.check_liveness(out.raw[0], timestamps=False, symmetry=sym)
            row["liveness" if sym else "liveness_nosym"] = {
                "verdict": live.verdict, "zones": live.zones,
                "transitions": live.transitions, "seconds": round(time.monotonic() - t0, 3)}
        rows.append(row)
    return rows


MODEL_DIR = Path(__file__).resolve().parent / "models"
SYNTH_SUITE = ("root_contention",)
"""The parametric models of ``benchmarks/models/`` whose ``assume`` constraints cut the
parameter box (IMITATOR-style initial constraints)."""


def synth_suite(names: Sequence[str], cap: float) -> list[dict[str, Any]]:
    """Synthesis of each model with its ``assume`` constraints and without them (the
    ``assume`` lines dropped): symbolic states, solver queries, seconds, and whether the
    two regions agree inside the constraints (Z3)."""
    from checker.language import load_text
    from checker.model.compiled import SpecModel
    from checker.smt import synth as sy

    rows: list[dict[str, Any]] = []
    for name in names:
        text = (MODEL_DIR / f"{name}.kvr").read_text(encoding="utf-8")
        plain = "\n".join(line for line in text.splitlines()
                          if not line.startswith("assume "))
        results = {}
        for label, src in (("with", text), ("without", plain)):
            spec = load_text(src, f"benchmarks/models/{name}.kvr")
            free = [p.name for p in spec.params]
            res = sy.explore_parametric(SpecModel(spec, concrete=False), free, timeout=cap)
            results[label] = res
            rows.append({"model": name, "assume": label, "complete": res.complete,
                         "discrete_states": res.stats.states,
                         "symbolic_states": res.stats.symbolic_states,
                         "solver_queries": res.stats.queries,
                         "seconds": round(res.stats.seconds, 3)})
        a, b = results["with"], results["without"]
        agree = a.complete and b.complete and sy.same_safe_values(a, b, a.ranges)
        for row in rows[-2:]:
            row["regions_agree"] = agree
    return rows


IMITATOR_DATA = REPO / "tests" / "data" / "imitator"
IMITATOR_SUITE = (
    ("FischerPS08-2", "FischerPS08-AGnot"), ("FischerPS08-3", "FischerPS08-AGnot"),
    ("FischerPS08-4", "FischerPS08-AGnot"), ("Train1PTA", "Train1PTA-AGnot"),
    ("coffee", "coffee-EF"), ("BRPDKRT97", "BRPDKRT97-AGnot"), ("RCP_CS01", "RCP_CS01-EF"),
    ("FMTV_1_A1", "FMTV_1_A1-EF"))
"""IMITATOR library models (``kvrace import``ed on the fly) and their property: an
``AGnot`` one is ``--property agnot``, an ``EF`` one ``--query ef``."""
IMITATOR_IMPORT = {"FMTV_1_A1": {"int_lo": 0, "int_hi": 200, "param_max": 200}}
"""Import options a model needs (``--int-range``, ``--param-max``): FMTV numbers its
frames up to 200 and its end-to-end latency exceeds 100."""


def spec_suite(cap: float) -> list[dict[str, Any]]:
    """Synthesis of every spec of ``spec/`` with parameters, over the parameters the
    paper's table frees (``tools.artifacts.measurements.SYNTH_FREE``, else every one
    with a range), with merging and without: symbolic states, merges, solver queries,
    CPU seconds, and whether the two regions are the same (Z3)."""
    from checker.api import load_spec
    from checker.model.compiled import SpecModel
    from checker.smt import synth as sy
    from tools.artifacts.measurements import SYNTH_FREE

    rows: list[dict[str, Any]] = []
    for path in sorted((REPO / "spec").rglob("*.kvr")):
        spec = load_spec(path)
        free = list(SYNTH_FREE.get(path.stem, [p.name for p in spec.params
                                               if p.lo is not None or p.hi is not None]))
        if not free:
            continue
        row: dict[str, Any] = {"spec": str(path.relative_to(REPO)), "free": free}
        results = []
        for merge in (True, False):
            cpu = time.process_time()
            res = sy.explore_parametric(SpecModel(spec, concrete=False), free, timeout=cap,
                                        merge=merge)
            results.append(res)
            row["merge" if merge else "no_merge"] = {
                "complete": res.complete, "symbolic_states": res.stats.symbolic_states,
                "final_symbolic_states": res.stats.final_states,
                "merges": res.stats.merges, "solver_queries": res.stats.queries,
                "cpu_seconds": round(time.process_time() - cpu, 3)}
        row["same_region"] = (all(r.complete for r in results)
                              and sy.same_safe_values(*results))
        rows.append(row)
    return rows


def spec_suite_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`spec_suite` as a text table, with a line of totals."""
    header = ["spec", "states (merge)", "merges", "cpu s", "states (no merge)", "cpu s",
              "same region"]
    body = [[r["spec"].removeprefix("spec/").removesuffix(".kvr"),
             f"{_num(r['merge']['symbolic_states'])} / "
             f"{_num(r['merge']['final_symbolic_states'])}",
             _num(r["merge"]["merges"]), f"{r['merge']['cpu_seconds']:.2f}",
             f"{_num(r['no_merge']['symbolic_states'])} / "
             f"{_num(r['no_merge']['final_symbolic_states'])}",
             f"{r['no_merge']['cpu_seconds']:.2f}", "yes" if r["same_region"] else "NO"]
            for r in rows]
    total = [sum(r[k]["cpu_seconds"] for r in rows) for k in ("merge", "no_merge")]
    states = [sum(r[k]["symbolic_states"] for r in rows) for k in ("merge", "no_merge")]
    body.append(["total", _num(states[0]), "", f"{total[0]:.2f}", _num(states[1]),
                 f"{total[1]:.2f}", ""])
    return _render(header, body, {1, 2, 3, 4, 5})


def imitator_published() -> dict[str, Any]:
    """IMITATOR 3.1's published results for the models (``tests/data/imitator/
    published.json``: states, computed states, seconds, region, printed length)."""
    data: dict[str, Any] = json.loads((IMITATOR_DATA / "published.json").read_text("utf-8"))
    return data


SMALL_RUN = 0.1
"""An IMITATOR library run shorter than this many CPU seconds is repeated ..."""
SMALL_REPEAT = 9
"""... this many times, and its median taken (a single run of a few ms is noise)."""


def imitator_suite(cap: float) -> list[dict[str, Any]]:
    """Synthesis of each translated model of :data:`IMITATOR_SUITE` for its property,
    with merging and without (``--no-merge``): symbolic states (stored, and at the end),
    merges, solver queries, wall and CPU seconds of the exploration (the translation and
    the model's construction excluded; the median of :data:`SMALL_REPEAT` runs when one
    takes under :data:`SMALL_RUN` seconds); with merging,
    the printed region (projected as the property file asks), how many comparisons it
    writes, and whether it equals IMITATOR's published region (Z3, within the ranges);
    IMITATOR's published states, computed states and seconds next to them."""
    from checker.language import load_text
    from checker.language.imitator import ImportOptions, translate_imitator
    from checker.model.compiled import SpecModel
    from checker.smt import synth as sy
    from checker.smt.regions import region_view

    published = imitator_published()["models"]
    rows: list[dict[str, Any]] = []
    for model, prop in IMITATOR_SUITE:
        imi, imiprop = IMITATOR_DATA / f"{model}.imi", IMITATOR_DATA / f"{prop}.imiprop"
        text = translate_imitator(imi.read_text(encoding="utf-8"), str(imi),
                                  imiprop.read_text(encoding="utf-8"), str(imiprop),
                                  options=ImportOptions(**IMITATOR_IMPORT.get(model, {})))
        spec = load_text(text, f"{model}.kvr")
        free = [p.name for p in spec.params]
        ef = prop.endswith("-EF")
        target = (sy.Target(sy.TargetKind.QUERY, "ef") if ef
                  else sy.Target(sy.TargetKind.PROPERTY, "agnot"))
        pub = published[model]
        row: dict[str, Any] = {"model": model, "property": "EF" if ef else "AGnot",
                               "imitator": {k: pub[k] for k in ("states", "computed",
                                                                "seconds", "printed")}}
        result = None
        for merge in (True, False):
            cpus: list[float] = []
            while len(cpus) < (1 if cpus and cpus[0] >= SMALL_RUN else SMALL_REPEAT):
                model_ = SpecModel(spec, concrete=False)
                cpu = time.process_time()
                res = sy.explore_parametric(model_, free, timeout=cap, target=target,
                                            merge=merge)
                cpus.append(time.process_time() - cpu)
            row["merge" if merge else "no_merge"] = {
                "complete": res.complete, "discrete_states": res.stats.states,
                "symbolic_states": res.stats.symbolic_states,
                "final_symbolic_states": res.stats.final_states,
                "merges": res.stats.merges, "solver_queries": res.stats.queries,
                "seconds": round(res.stats.seconds, 3),
                "cpu_seconds": round(statistics.median(cpus), 4)}
            result = result or res
        assert result is not None
        if result.complete:
            view = region_view(result, ef, pub.get("project"), free)
            row["region"] = view.text
            row["printed"] = len(view.printed)
            row["same_region"] = _same_as_published(view, pub, free)
        rows.append(row)
    return rows


def _same_as_published(view: Any, pub: dict[str, Any], free: list[str]) -> bool:
    """Whether a region (:class:`checker.smt.regions.RegionView`) equals IMITATOR's
    published one within the ranges it is read in."""
    import z3

    from checker.api import region_formula
    from checker.smt import synth as sy

    names = pub.get("project") or free
    theirs = sy.formula_z3(region_formula(pub["region"], names, names, {}))
    ours = z3.And(*z3.parse_smt2_string(view.smtlib))
    solver = z3.Solver()
    solver.add(ours != z3.And(sy.region_z3([], view.ranges), theirs))
    return bool(solver.check() == z3.unsat)


def imitator_suite_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`imitator_suite` as a text table."""
    header = ["IMITATOR model", "property", "states (merge)", "merges", "cpu s",
              "states (no merge)", "cpu s", "IMITATOR states", "computed", "s",
              "same region", "printed (IMITATOR)"]
    body = []
    for r in rows:
        m, n, imi = r["merge"], r["no_merge"], r["imitator"]

        def states(x: dict[str, Any]) -> str:
            done = "" if x["complete"] else " (cut)"
            return f"{_num(x['symbolic_states'])} / {_num(x['final_symbolic_states'])}{done}"

        same = {True: "yes", False: "NO"}.get(r.get("same_region"), "-")
        printed = f"{r['printed']} ({imi['printed']})" if "printed" in r else "-"
        body.append([r["model"], r["property"], states(m), _num(m["merges"]),
                     f"{m['cpu_seconds']:.3f}", states(n), f"{n['cpu_seconds']:.3f}",
                     _num(imi["states"]), _num(imi["computed"]), f"{imi['seconds']:.3f}",
                     same, printed])
    return _render(header, body, {2, 3, 4, 5, 6, 7, 8, 9, 11})


def synth_suite_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`synth_suite` as a text table."""
    header = ["model", "assume", "complete", "discrete", "symbolic", "queries", "s",
              "same region"]
    body = [[r["model"], r["assume"], "yes" if r["complete"] else "no",
             _num(r["discrete_states"]), _num(r["symbolic_states"]),
             _num(r["solver_queries"]), f"{r['seconds']:.2f}",
             "yes" if r["regions_agree"] else "NO"] for r in rows]
    return _render(header, body, {3, 4, 5, 6})


def liveness_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`liveness_train_gate` as a text table."""
    header = ["trains", "safety zones", "s", "no-sym zones", "s", "liveness", "zones", "s",
              "no-sym zones", "s"]
    body = [[str(r["trains"]), _num(r["safety"]["zones"]), f"{r['safety']['seconds']:.2f}",
             _num(r["safety_nosym"]["zones"]), f"{r['safety_nosym']['seconds']:.2f}",
             r["liveness"]["verdict"], _num(r["liveness"]["zones"]),
             f"{r['liveness']['seconds']:.2f}", _num(r["liveness_nosym"]["zones"]),
             f"{r['liveness_nosym']['seconds']:.2f}"] for r in rows]
    return _render(header, body, {0, 1, 2, 3, 4, 6, 7, 8, 9})


VALIDATE_TARGET_S = 10.0
"""``kvrace validate`` on a 100,000-line simulated log of the flagship: under 10 s."""
VALIDATE_SPEC = REPO / "spec" / "sglang" / "immediate_release.kvr"


def validate_bench(counts: Sequence[int], work: Path) -> list[dict[str, Any]]:
    """``kvrace validate`` on logs of ``counts`` event lines of the flagship (runs of the
    simulator one after the other, seed 1), each in a fresh process: wall and CPU
    seconds, peak memory, the verdict."""
    sys.path.insert(0, str(REPO))
    from checker.language import load
    from checker.model.compiled import SpecModel
    from checker.validate import simlog

    model = SpecModel(load(str(VALIDATE_SPEC)), {})
    rows: list[dict[str, Any]] = []
    for n in counts:
        log = work / f"flagship-{n}.jsonl"
        with open(log, "w", encoding="utf-8") as f:
            for line in simlog.simulated_log(model, 1, n):
                f.write(line + "\n")
        cmd = [sys.executable, "-m", "checker", "validate", str(VALIDATE_SPEC), str(log),
               "--clock-error", "0.000001", "--json"]
        result = work / f"flagship-{n}.json"
        t0 = time.monotonic()
        with open(result, "wb") as out:
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.DEVNULL)
            # wait4, not communicate: the rusage of this child alone (its peak memory).
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        doc = json.loads(result.read_text(encoding="utf-8"))
        rows.append({"lines": n, "log_lines": doc.get("lines"), "runs": doc.get("runs"),
                     "conformance": doc.get("conformance"), "verdict": doc.get("verdict"),
                     "exit_code": os.waitstatus_to_exitcode(status),
                     "wall_s": round(wall, 2), "validate_s": doc.get("seconds"),
                     "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                     "max_states": doc.get("max_states"),
                     "peak_mib": round(usage.ru_maxrss / 1024.0, 1)})
    return rows


def validate_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`validate_bench`, with PASS or MISS at 100,000 lines (on the
    validation's wall time: on a loaded machine, compare its CPU time)."""
    header = ["events", "lines", "runs", "verdict", "validate s", "process s", "cpu s",
              "peak MiB", "target"]
    body = []
    for r in rows:
        target = ""
        if r["lines"] >= 100_000:
            target = "PASS" if (r["validate_s"] or 1e9) < VALIDATE_TARGET_S else "MISS"
        body.append([_num(r["lines"]), _num(r["log_lines"]), _num(r["runs"]),
                     str(r["verdict"]), f"{r['validate_s']:.2f}", f"{r['wall_s']:.2f}",
                     f"{r['cpu_s']:.2f}", f"{r['peak_mib']:.0f}", target])
    return _render(header, body, {0, 1, 2, 4, 5, 6, 7})


NATIVE_CASES = ("r=3,s=2,c=2,x=1,sym=0,dl=0", "r=3,s=2,c=3,x=1,sym=0,dl=0",
                "r=4,s=2,c=2,x=1,sym=0,dl=0", "fischer:n=9,sym=0,dl=0",
                "train_gate:n=5,sym=0,dl=0", "r=3,s=2,c=2,x=1")
"""The cases of ``--native-compare`` by default: the issue's TChecker rows without
symmetry and deadlock check (as ``--peer tchecker`` runs them), and one with the
defaults."""


def native_compare(cases: Sequence[Case], repeat: int, cap: float) -> list[dict[str, Any]]:
    """Each case with the compiled successor function off and on (``KVRACE_NATIVE=0``
    and ``auto``), alternately, ``repeat`` times each, every run a fresh process; the
    "on" runs find their build in a cache that a first run (``auto``, empty cache: it
    compiles when the model has answered ``native.COMPILE_AFTER`` calls) filled.  The
    runs must agree on verdict, states, zones and transitions."""
    import statistics
    import tempfile

    rows: list[dict[str, Any]] = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="kvrace-bench-cache-") as cache:
            env = {**os.environ, "XDG_CACHE_HOME": cache}
            first = run_in_subprocess(case, cap, {**env, "KVRACE_NATIVE": "auto"})
            runs: dict[str, list[dict[str, Any]]] = {"0": [], "auto": []}
            for _ in range(repeat):
                for mode in runs:
                    runs[mode].append(run_in_subprocess(case, cap,
                                                        {**env, "KVRACE_NATIVE": mode}))
        answers = {(r["verdict"], r.get("states"), r.get("zones"), r.get("transitions"))
                   for r in [first, *runs["0"], *runs["auto"]]}
        off = [r["cpu_seconds"] for r in runs["0"] if r.get("cpu_seconds") is not None]
        on = [r["cpu_seconds"] for r in runs["auto"] if r.get("cpu_seconds") is not None]
        rows.append({
            "case": case.key, "verdict": first["verdict"], "zones": first.get("zones"),
            "same_answer": len(answers) == 1,
            "successors": sorted({str(r.get("successors")) for r in runs["auto"]}),
            "python_cpu": off, "native_cpu": on,
            "python_cpu_median": statistics.median(off) if off else None,
            "native_cpu_median": statistics.median(on) if on else None,
            "speedup": (round(statistics.median(off) / statistics.median(on), 2)
                        if off and on and statistics.median(on) > 0 else None),
            "first_run_cpu": first.get("cpu_seconds"),
            "first_run_compile_cpu": first.get("compile_cpu_seconds"),
            "first_run_successors": first.get("successors"),
        })
        print(f"bench: {case.key} done", file=sys.stderr, flush=True)
    return rows


def native_micro(cases: Sequence[Case], states: int) -> list[dict[str, Any]]:
    """CPU microseconds per discrete state of the model's edges and deadlines, in the
    generated Python and in the compiled successor function, over the first ``states``
    states of a breadth-first exploration that ignores clocks (in this process; the
    build is compiled into the user's cache if it is not there)."""
    from collections import deque

    from checker.model import native
    from checker.model.compiled import SpecModel

    rows: list[dict[str, Any]] = []
    for case in cases:
        model = SpecModel(build(case))
        native.attach_all([model])
        prog = model._native
        if prog is None:
            raise BenchError(f"{case.key}: no compiled successor function"
                             f" ({model.native_note})")
        init = model.initial_states()
        seen, queue, order = set(init), deque(init), []
        while queue and len(order) < states:
            s = queue.popleft()
            order.append(s)
            for e in model.python_edges(s):
                if e.failure is None and e.target not in seen:
                    seen.add(e.target)
                    queue.append(e.target)
        row: dict[str, Any] = {"case": case.key, "states": len(order)}
        for name, fn in (("python_edges_us", model.python_edges),
                         ("native_edges_us", lambda s, p=prog: p.edges(s, None)),
                         ("python_deadlines_us", model.python_deadlines),
                         ("native_deadlines_us", prog.deadlines)):
            t0 = time.process_time()
            for s in order:
                fn(s)
            row[name] = round((time.process_time() - t0) / max(1, len(order)) * 1e6, 2)
        rows.append(row)
    return rows


def native_table(rows: Sequence[dict[str, Any]]) -> str:
    """The ``--native-compare`` rows: CPU seconds with the generated Python and with the
    compiled successor function (median of the runs), and what the first run paid."""
    header = ["case", "verdict", "zones", "python cpu s", "auto cpu s", "speed-up",
              "successors", "first run cpu s", "+ compile cpu s", "same answer"]
    body = [[r["case"], r["verdict"], _num(r["zones"]), _num(r["python_cpu_median"], 2),
             _num(r["native_cpu_median"], 2),
             "-" if r["speedup"] is None else f"{r['speedup']:.2f}",
             "/".join(r["successors"]), _num(r["first_run_cpu"], 2),
             _num(r["first_run_compile_cpu"], 2), "yes" if r["same_answer"] else "NO"]
            for r in rows]
    return _render(header, body, right={2, 3, 4, 5, 7, 8})


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Scale the flagship spec (requests, slots, chunks, time scale) and"
        " Fischer's protocol (processes) and time the zone explorer; optionally time prove"
        " and synth.")
    ap.add_argument("--cap", type=float, default=60.0,
                    help="time cap of one explorer run, seconds (default 60)")
    ap.add_argument("--quick", action="store_true",
                    help="a small subset: requests 2-3, slots 1-2, chunks 1-2, scale x1 and x1000")
    ap.add_argument("--cases", action="append", default=[], metavar="FILTER",
                    help="only cases matching FILTER, e.g. r=3,s=1,c=2,x=1 (fields r s c x sym"
                    " clk dl; a missing field matches anything; ';' or a repeated option"
                    " means 'or')")
    ap.add_argument("--ablation", action="store_true",
                    help="for the quick subset, also run without symmetry (sym=0) and without"
                    " clock reduction (clk=0)")
    ap.add_argument("--fischer", metavar="N[,N...]",
                    help="also run Fischer's protocol with N processes, with and without"
                    " symmetry reduction (e.g. 6,8,10)")
    ap.add_argument("--dbm-compare", action="store_true",
                    help="run every flagship and Fischer case twice, with the compiled DBM"
                    " core (dbm=c) and with the Python reference (dbm=python)")
    ap.add_argument("--tchecker", action="store_true",
                    help="the flagship at 2/1/2, 2/2/2, 3/1/2, 3/2/2 without symmetry and"
                    " deadlock check, and with defaults, next to TChecker's stored states")
    ap.add_argument("--peer", choices=["tchecker"],
                    help="run each model of the peer table (flagship 2/1/2 .. 3/2/2,"
                    " fischer, train_gate, csma_cd) in kvrace and, exported as a network of"
                    " processes, in TChecker's tck-reach -a covreach ($TCK_REACH or PATH):"
                    " verdicts, stored states, CPU seconds and their ratios")
    ap.add_argument("--large", action="store_true",
                    help="with --peer tchecker: the large rows instead (flagship 3/2/3, 4/2/2,"
                    " 4/2/3, Fischer N=9 and 10, CSMA/CD N=11, train-gate N=5), kvrace in a"
                    " fresh process per run, with peak memory and memory per zone")
    ap.add_argument("--targets", action="store_true",
                    help="run the engine's time targets and print PASS or MISS for each")
    ap.add_argument("--prove-synth", action="store_true",
                    help="also time prove (assuming " + ASSUMPTION + ") and synth (all four"
                    " parameters free) on the flagship at 2 and 3 requests")
    ap.add_argument("--synth-cap", type=float, default=600.0,
                    help="time cap of one prove/synth run, seconds (default 600)")
    ap.add_argument("--no-table", action="store_true",
                    help="skip the flagship grid (e.g. with --prove-synth)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="cases run at once (default 1; more is faster but timings get noisier)")
    ap.add_argument("--json", action="store_true", help="print a JSON list of rows")
    ap.add_argument("--workers-compare", action="append", default=[], metavar="CASE",
                    help="run `kvrace check` of CASE (e.g. r=3,s=2,c=2,x=1 or"
                    " fischer:n=6) in one process and with each --worker-counts on each"
                    " --worker-backend, --repeat times: median wall time and CPU time of the"
                    " whole process tree; repeatable")
    ap.add_argument("--worker-counts", default="2", metavar="N[,N...]",
                    help="with --workers-compare: the numbers of workers (default 2)")
    ap.add_argument("--worker-backend", default="local", metavar="B[,B...]",
                    help="with --workers-compare: local (forked workers, the default), ray"
                    " (a local Ray instance, needs Ray) or local,ray")
    ap.add_argument("--liveness-train-gate", metavar="N[,N...]",
                    help="train-gate with N trains: safety (with and without symmetry)"
                    " against unbounded liveness (every approaching train crosses): zones"
                    " and seconds")
    ap.add_argument("--editor", action="store_true",
                    help="the editor targets: `kvrace fmt --check spec` (< 2 s) and the"
                    " language server's edit-to-diagnostics latency on the largest spec"
                    " (< 200 ms), PASS or MISS")
    ap.add_argument("--cold-start", type=int, nargs="?", const=21, metavar="N",
                    help="the start-up target: wall time of `kvrace check "
                    + COLD_START_SPEC + "` in N fresh processes (default 21) after one that"
                    " fills the caches, median and fastest (< 300 ms), and of `python -c"
                    " pass` for reference")
    ap.add_argument("--synth-suite", action="store_true",
                    help="synthesis of the models of benchmarks/models/ with and without"
                    " their `assume` constraints (states, queries, seconds; the regions"
                    " compared inside the constraints); of the IMITATOR library models of"
                    " tests/data/imitator/ and of every spec of spec/ with parameters, with"
                    " and without merging, next to IMITATOR's published results; the cap"
                    " is --synth-cap")
    ap.add_argument("--validate", metavar="N[,N...]",
                    help="kvrace validate on simulated logs of the flagship with N event"
                    " lines each (target: 100,000 lines in under 10 s, memory flat)")
    ap.add_argument("--native-compare", nargs="*", metavar="CASE",
                    help="each CASE (default: " + ", ".join(NATIVE_CASES) + ") with the"
                    " compiled successor function off and on, alternately (--repeat times"
                    " each, fresh processes), and the first run's compilation: CPU seconds")
    ap.add_argument("--native-micro", nargs="*", metavar="CASE",
                    help="CPU microseconds per discrete state of the edges and deadlines of"
                    " each CASE (default: flagship 3/2/2, fischer:n=9, train_gate:n=5) in"
                    " the generated Python and in the compiled successor function")
    ap.add_argument("--repeat", type=int, default=3,
                    help="with --native-compare and --workers-compare: runs per mode"
                    " (default 3)")
    ap.add_argument("--one", metavar="CASE",
                    help="run one case in this process (e.g. r=3,s=1,c=2,x=1, fischer:n=8,sym=0"
                    " or prove:r=2); the cap is --cap, or --synth-cap for prove/synth")
    args = ap.parse_args(argv)
    try:
        if args.editor:
            rows = editor_rows()
            print(json.dumps(rows, indent=1) if args.json else editor_table(rows))
            return 0
        if args.cold_start is not None:
            rows = cold_start_rows(_int("--cold-start", str(args.cold_start), 1, 1000))
            print(json.dumps(rows, indent=1) if args.json else cold_start_table(rows))
            return 0
        if args.synth_suite:
            rows = synth_suite(SYNTH_SUITE, args.synth_cap)
            imi = imitator_suite(args.synth_cap)
            specs = spec_suite(args.synth_cap)
            if args.json:
                print(json.dumps({"assume": rows, "imitator": imi, "specs": specs}, indent=1))
            else:
                print(synth_suite_table(rows) + "\n\n" + imitator_suite_table(imi) + "\n\n"
                      + spec_suite_table(specs))
            return 0
        if args.validate:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                counts = sorted({_int("--validate", p.strip(), 1, 10**8)
                                 for p in args.validate.split(",") if p.strip()})
                vrows = validate_bench(counts, Path(tmp))
            print(json.dumps(vrows, indent=1) if args.json else validate_table(vrows))
            return 0
        if args.peer == "tchecker":
            tck = tck_reach()
            if tck is None:
                raise BenchError("--peer tchecker: tck-reach is not on PATH (nor $TCK_REACH)")
            rows = []
            if args.large:
                for name, case in PEER_LARGE_ROWS:
                    rows.append(peer_large_row(name, case, tck, args.cap))
                    print(f"bench: {name} done", file=sys.stderr, flush=True)
                print(json.dumps(rows, indent=1) if args.json else peer_large_table(rows))
                return 0
            for name, source in PEER_ROWS:
                rows.append(peer_row(name, source, tck, args.cap))
                print(f"bench: {name} done", file=sys.stderr, flush=True)
            print(json.dumps(rows, indent=1) if args.json else peer_table(rows))
            return 0
        if args.liveness_train_gate:
            rows = liveness_train_gate(parse_processes(args.liveness_train_gate))
            print(json.dumps(rows, indent=1) if args.json else liveness_table(rows))
            return 0
        if args.workers_compare:
            counts = parse_processes(args.worker_counts)
            backends = [b.strip() for b in args.worker_backend.split(",") if b.strip()]
            if not backends or any(b not in WORKER_BACKENDS for b in backends):
                raise BenchError(f"--worker-backend {args.worker_backend}: local, ray or"
                                 " local,ray")
            rows = workers_compare([parse_case(c) for c in args.workers_compare], counts,
                                   args.cap, backends, args.repeat)
            print(json.dumps(rows, indent=1) if args.json else workers_table(rows))
            return 0
        if args.native_micro is not None:
            cases = [parse_case(c) for c in (args.native_micro
                                             or ("r=3,s=2,c=2,x=1", "fischer:n=9",
                                                 "train_gate:n=5"))]
            rows = native_micro(cases, 20_000)
            print(json.dumps(rows, indent=1) if args.json else _render(
                ["case", "states", "edges py µs", "edges C µs", "deadlines py µs",
                 "deadlines C µs"],
                [[r["case"], _num(r["states"]), _num(r["python_edges_us"], 2),
                  _num(r["native_edges_us"], 2), _num(r["python_deadlines_us"], 2),
                  _num(r["native_deadlines_us"], 2)] for r in rows], {1, 2, 3, 4, 5}))
            return 0
        if args.native_compare is not None:
            cases = [parse_case(c) for c in (args.native_compare or NATIVE_CASES)]
            for c in cases:
                case_text(c)
            rows = native_compare(cases, max(1, args.repeat), args.cap)
            print(json.dumps(rows, indent=1) if args.json else native_table(rows))
            return 0
        if args.one is not None:
            case = parse_case(args.one)
            cap = args.cap if case.task == "check" else args.synth_cap
            row = run_one(case, cap)
            row["groups"] = [default_group(case)]
            print_tables([row], cap, args.json)
            return 0
        plan = make_plan(args)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    jobs = plan.jobs
    rows: list[dict[str, Any] | None] = [None] * len(jobs)
    start = time.monotonic()
    host_start = host_line()
    code = code_line()
    print(f"bench: {len(jobs)} runs; checker: {code}; host: {host_start}", file=sys.stderr,
          flush=True)
    lock = threading.Lock()
    done = 0

    def work(k: int) -> None:
        nonlocal done
        case, cap = jobs[k]
        row = run_in_subprocess(case, cap)
        row["groups"] = list(plan.groups[k])
        with lock:
            rows[k] = row
            done += 1
            _progress(done, len(jobs), row)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(work, range(len(jobs))))
    got = [r for r in rows if r is not None]
    host_end = host_line()
    print(f"bench: {len(got)} runs in {time.monotonic() - start:.0f} s; host: {host_end}",
          file=sys.stderr)
    print_tables(got, args.cap, args.json)
    if not args.json:
        print(f"\nchecker: {code}\nhost at start: {host_start}\nhost at end:   {host_end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

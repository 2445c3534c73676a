#!/usr/bin/env python3
"""Scaling benchmark of the kvrace zone explorer on the flagship spec.

The flagship ``spec/sglang/deferred_release.kvr`` is scaled along four axes by
careful line substitution (every substitution must apply exactly once, or the
script stops with an error):

* requests  2..4  ``symmetric type Req = {A, B}``  ->  ``{A, B, C}`` ...
* slots     1..3  ``symmetric type Slot = {s0}``   ->  ``{s0, s1}`` ...
* chunks    1..4  ``type Chunk = 0..1`` -> ``0..k-1`` and ``var sent : Req -> 0..2`` -> ``0..k``
* scale     x1, x10, x1000: every number of the ``param`` lines' ranges and defaults
  is multiplied (the zone graph should not depend on it).

Each case runs in a fresh subprocess (this script with ``--one CASE``) so that
the peak resident memory (``ru_maxrss``) is that case's alone.  A case that
hits its time cap is reported as ``inconclusive`` with what it explored.

    python benchmarks/bench.py --quick            # a small subset, ~1 minute
    python benchmarks/bench.py --cap 10           # the full table (108 cases)
    python benchmarks/bench.py --quick --ablation # + without symmetry / clock reduction
    python benchmarks/bench.py --prove-synth --no-table
    python benchmarks/bench.py --one r=3,s=1,c=2,x=1   # one case, in this process

See ``benchmarks/README.md`` for the columns.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "spec" / "sglang" / "deferred_release.kvr"

REQ_NAMES = "ABCDEFGH"
FULL_GRID: dict[str, tuple[int, ...]] = {
    "r": (2, 3, 4), "s": (1, 2, 3), "c": (1, 2, 3, 4), "x": (1, 10, 1000),
}
QUICK_GRID: dict[str, tuple[int, ...]] = {"r": (2, 3), "s": (1, 2), "c": (1, 2), "x": (1, 1000)}
PROVE_SYNTH_REQUESTS = (2, 3)
ASSUMPTION = "T_hold > T_prop + T_chunk + T_flight"
EXPECTED_PARAMS = ("T_prop", "T_chunk", "T_flight", "T_hold")

TASKS = ("check", "prove", "synth")

# Benchmark the checker next to this script (a snapshot or worktree), not whatever
# copy happens to be installed.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


class BenchError(Exception):
    """A substitution that did not apply, a bad --cases filter, a bad case key."""


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One benchmark run: a variant of the flagship and how to explore it."""

    r: int = 2
    s: int = 1
    c: int = 2
    x: int = 1
    sym: bool = True
    clk: bool = True
    task: str = "check"

    @property
    def key(self) -> str:
        """The ``--one`` / ``--cases`` form, e.g. ``r=3,s=1,c=2,x=1`` or ``prove:r=2,...``."""
        text = f"r={self.r},s={self.s},c={self.c},x={self.x}"
        if not self.sym:
            text += ",sym=0"
        if not self.clk:
            text += ",clk=0"
        return text if self.task == "check" else f"{self.task}:{text}"

    @property
    def reductions(self) -> str:
        """``sym+clk`` (both on, the default), ``no-sym``, ``no-clk`` or ``none``."""
        if self.sym and self.clk:
            return "sym+clk"
        if self.sym or self.clk:
            return "no-sym" if self.clk else "no-clk"
        return "none"

    def sort_key(self) -> tuple[int, ...]:
        return (TASKS.index(self.task), self.r, self.s, self.c, self.x,
                int(not self.sym), int(not self.clk))


def _fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or name not in ("r", "s", "c", "x", "sym", "clk") or not value:
            raise BenchError(f"bad field {part!r} in {text!r}: expected r=N, s=N, c=N, x=N,"
                             " sym=0|1 or clk=0|1, separated by commas")
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
    """A case from its key, e.g. ``r=3,s=1,c=2,x=1`` or ``synth:r=3``; missing fields
    take the flagship's values (r=2, s=1, c=2, x=1, both reductions on)."""
    task = "check"
    head, colon, rest = text.partition(":")
    if colon:
        if head not in TASKS:
            raise BenchError(f"unknown task {head!r} in {text!r} (tasks: {', '.join(TASKS)})")
        task, text = head, rest
    f = _fields(text)
    case = Case(task=task)
    if "r" in f:
        case = replace(case, r=_int("r", f["r"], 1, len(REQ_NAMES)))
    if "s" in f:
        case = replace(case, s=_int("s", f["s"], 1, 16))
    if "c" in f:
        case = replace(case, c=_int("c", f["c"], 1, 16))
    if "x" in f:
        case = replace(case, x=_int("x", f["x"], 1, 10**9))
    if "sym" in f:
        case = replace(case, sym=bool(_int("sym", f["sym"], 0, 1)))
    if "clk" in f:
        case = replace(case, clk=bool(_int("clk", f["clk"], 0, 1)))
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
                out.append(_fields(item))
    return out


def matches(case: Case, filt: dict[str, str]) -> bool:
    """Whether ``case`` has every field value of the filter."""
    have = {"r": case.r, "s": case.s, "c": case.c, "x": case.x,
            "sym": int(case.sym), "clk": int(case.clk)}
    for name, value in filt.items():
        try:
            if have[name] != int(value):
                return False
        except ValueError:
            raise BenchError(f"--cases: {name}={value!r} is not an integer") from None
    return True


def select_cases(args: argparse.Namespace) -> list[Case]:
    """The check cases of this run, in table order."""
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


# --------------------------------------------------------------------------- variants


def _scale_number(token: str, factor: int) -> str:
    got = Decimal(token) * factor
    return format(got.normalize(), "f")


def _sub_one(lines: list[str], what: str, pattern: str, make: Any) -> None:
    """Replace the one line matching ``pattern`` by ``make(match)``; fail loudly otherwise."""
    rx = re.compile(pattern)
    hits = [i for i, line in enumerate(lines) if rx.fullmatch(line)]
    if len(hits) != 1:
        raise BenchError(
            f"substitution '{what}' applies to {len(hits)} lines of {SPEC.name} (expected"
            f" exactly 1; pattern {pattern!r}) — has the flagship changed?"
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


def build(case: Case) -> Any:
    """The elaborated spec of ``case``, checked against what the variant should be."""
    from checker.language import load_text

    base = SPEC.read_text(encoding="utf-8")
    spec = load_text(variant_text(base, case), f"{SPEC.name}[{case.key}]")
    sizes = {t.name: t.size for t in spec.types}
    want = {"Req": case.r, "Slot": case.s, "Chunk": case.c}
    for name, size in want.items():
        if sizes.get(name) != size:
            raise BenchError(f"variant {case.key}: type {name} has {sizes.get(name)} values,"
                             f" expected {size}")
    orig = {p.name: p for p in load_text(base, str(SPEC)).params}
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
    return {
        "task": case.task, "case": case.key, "requests": case.r, "slots": case.s,
        "chunks": case.c, "scale": case.x, "symmetry": case.sym, "clock_reduction": case.clk,
        "reductions": case.reductions, "cap_seconds": cap,
    }


def run_check(case: Case, cap: float) -> dict[str, Any]:
    """Build the variant and run the zone explorer once (in this process)."""
    from checker.explorer import Limits, Options, explore, search
    from checker.model.compiled import SpecModel

    row = _base_row(case, cap)
    row["baseline_mib"] = round(_peak_mib(), 1)
    t0 = time.monotonic()
    model = SpecModel(build(case))
    row["build_seconds"] = round(time.monotonic() - t0, 3)
    # Instrument (in this process only) the untimed clock-liveness pre-pass, to
    # say how much of a run it takes.
    original = search._liveness
    pre: dict[str, Any] = {}

    def timed_liveness(*a: Any, **kw: Any) -> Any:
        t = time.monotonic()
        live = original(*a, **kw)
        pre.update(seconds=time.monotonic() - t, complete=live.complete,
                   states=len(live.live) if live.complete else None)
        return live

    search._liveness = timed_liveness
    cpu0 = time.process_time()
    try:
        res = explore(model, Limits(timeout=cap),
                      Options(symmetry=case.sym, clock_reduction=case.clk))
    finally:
        search._liveness = original
    cpu = time.process_time() - cpu0
    st = res.stats
    row.update({
        "verdict": res.verdict, "limit": res.limit, "property": res.prop,
        "message": res.message, "states": st.states, "zones": st.zones,
        "transitions": st.transitions, "depth": st.depth,
        "queued": st.queued if res.verdict == "inconclusive" else 0,
        "seconds": round(st.seconds, 3), "cpu_seconds": round(cpu, 3),
        "prepass_seconds": round(pre["seconds"], 3) if pre else None,
        "prepass_states": pre.get("states"), "prepass_complete": pre.get("complete"),
        "zones_per_second": round(st.zones / st.seconds, 1) if st.seconds > 0 else None,
        "peak_mib": round(_peak_mib(), 1),
        "clocks": len(model.clock_names), "event_instances": len(model.event_names),
    })
    return row


def _assumption(model: Any, free: Sequence[str]) -> list[Any]:
    """``ASSUMPTION`` as constraints over the free parameters (as ``kvrace prove`` does)."""
    from checker.language.assume import parse_assumption
    from checker.smt.poly import Lin, param_var

    out: list[Any] = []
    for (coefs, const), op in parse_assumption(ASSUMPTION, list(model.params)):
        fixed = sum((a * model.values[p] for p, a in coefs.items() if p not in free),
                    Fraction(0))
        cs = {param_var(p): a for p, a in coefs.items() if p in free}
        c0 = const + fixed
        neg = {k: -v for k, v in cs.items()}
        if op in ("<", "<="):
            out.append(Lin.make(cs, c0, op == "<"))
        elif op in (">", ">="):
            out.append(Lin.make(neg, -c0, op == ">"))
        else:
            out += [Lin.make(cs, c0, False), Lin.make(neg, -c0, False)]
    return out


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


def run_in_subprocess(case: Case, cap: float) -> dict[str, Any]:
    """One case in a fresh interpreter (so ``ru_maxrss`` is the case's own peak).

    The child stops itself at ``cap``; if it overruns by a wide margin it is killed
    and the row says so (no numbers are made up)."""
    grace = max(30.0, 0.5 * cap)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", case.key,
           "--cap", repr(cap), "--json"]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=cap + grace,
                              cwd=REPO, check=False)
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
            note += ("; the cap was hit in the liveness pre-pass, so the zone search ran"
                     " without clock reduction")
        elif (row.get("prepass_seconds") or 0) > 0.5 * row.get("cap_seconds", 0):
            note += f"; the liveness pre-pass took {row['prepass_seconds']:.1f} s of it"
        return note
    if v == "violated":
        return f"{row.get('property')}: {row.get('message')}"
    if v in ("error", "killed", "crashed"):
        return str(row.get("limit") or row.get("message"))
    return ""


def check_table(rows: Iterable[dict[str, Any]]) -> str:
    """The zone-explorer table."""
    header = ["req", "slots", "chunks", "scale", "reductions", "verdict", "states", "zones",
              "transitions", "seconds", "cpu s", "pre-pass s", "pre-pass states", "zones/s",
              "peak MiB", "note"]
    body = []
    for r in rows:
        pre_states = r.get("prepass_states")
        if r.get("prepass_complete") is False:
            pre_states = "cut"
        body.append([
            str(r["requests"]), str(r["slots"]), str(r["chunks"]), f"x{r['scale']}",
            r["reductions"], r["verdict"], _num(r.get("states")), _num(r.get("zones")),
            _num(r.get("transitions")), _num(r.get("seconds"), 2),
            _num(r.get("cpu_seconds"), 2), _num(r.get("prepass_seconds"), 2),
            _num(pre_states), _num(r.get("zones_per_second"), 0), _num(r.get("peak_mib"), 1),
            _check_note(r),
        ])
    return _render(header, body, right=set(range(6, 15)))


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
    """Which checker was measured: its directory, commit and whether it has local edits."""
    import checker

    where = Path(checker.__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                "checker"], capture_output=True, text=True, check=True).stdout
        rev = f"commit {head}" + (" + uncommitted changes to checker/" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        rev = "not a git checkout"
    return f"{where} ({rev})"


def print_tables(rows: Sequence[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(list(rows), indent=2))
        return
    checks = [r for r in rows if r["task"] == "check"]
    params = [r for r in rows if r["task"] != "check"]
    if checks:
        print(check_table(checks))
    if params:
        if checks:
            print()
        print(parametric_table(params))


def _progress(i: int, n: int, row: dict[str, Any]) -> None:
    if row["task"] == "check":
        what = f"{_num(row.get('zones'))} zones"
    else:
        what = f"{_num(row.get('symbolic_states'))} symbolic states"
    print(f"[{i}/{n}] {row['case']:<34} {row['verdict']:<13} {_num(row.get('seconds'), 2):>8} s"
          f"  {what}", file=sys.stderr, flush=True)


# -------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Scale the flagship spec (requests, slots, chunks, time scale) and time"
        " the zone explorer; optionally time prove and synth.")
    ap.add_argument("--cap", type=float, default=60.0,
                    help="time cap of one explorer run, seconds (default 60)")
    ap.add_argument("--quick", action="store_true",
                    help="a small subset: requests 2-3, slots 1-2, chunks 1-2, scale x1 and x1000")
    ap.add_argument("--cases", action="append", default=[], metavar="FILTER",
                    help="only cases matching FILTER, e.g. r=3,s=1,c=2,x=1 (fields r s c x sym clk;"
                    " a missing field matches anything; ';' or a repeated option means 'or')")
    ap.add_argument("--ablation", action="store_true",
                    help="for the quick subset, also run without symmetry (sym=0) and without"
                    " clock reduction (clk=0)")
    ap.add_argument("--prove-synth", action="store_true",
                    help="also time prove (assuming " + ASSUMPTION + ") and synth (all four"
                    " parameters free) on the flagship at 2 and 3 requests")
    ap.add_argument("--synth-cap", type=float, default=600.0,
                    help="time cap of one prove/synth run, seconds (default 600)")
    ap.add_argument("--no-table", action="store_true",
                    help="skip the zone-explorer table (e.g. with --prove-synth)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="cases run at once (default 1; more is faster but timings get noisier)")
    ap.add_argument("--json", action="store_true", help="print a JSON list of rows")
    ap.add_argument("--one", metavar="CASE",
                    help="run one case in this process (e.g. r=3,s=1,c=2,x=1 or prove:r=2);"
                    " the cap is --cap, or --synth-cap for prove/synth")
    args = ap.parse_args(argv)
    try:
        if args.one is not None:
            case = parse_case(args.one)
            cap = args.cap if case.task == "check" else args.synth_cap
            print_tables([run_one(case, cap)], args.json)
            return 0
        jobs: list[tuple[Case, float]] = []
        if not args.no_table:
            jobs += [(c, args.cap) for c in select_cases(args)]
        if args.prove_synth:
            jobs += [(Case(r=r, task=t), args.synth_cap)
                     for t in ("prove", "synth") for r in PROVE_SYNTH_REQUESTS]
        if not jobs:
            raise BenchError("nothing to run")
        for c, _ in jobs:  # fail loudly before any run if a variant cannot be generated
            variant_text(SPEC.read_text(encoding="utf-8"), c)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
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
    print_tables(got, args.json)
    if not args.json:
        print(f"\nchecker: {code}\nhost at start: {host_start}\nhost at end:   {host_end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The measurements the paper reports, written to ``paper/data/``.

* ``specs.json``: every spec under ``spec/sglang/`` checked at its defaults
  (verdict, property, counts, counterexample length); the flagships' state
  counts under every combination of reductions; the deferred release around
  its bound (verdicts, the ``--explain`` region); ``prove`` of the exact bound
  and of a weaker one.
* ``synth.json``: the safe region synthesized for every spec with all of its
  parameters free (parametric zone exploration), or the limit it hit, and the
  symbolic states without merging (``--no-merge``).
* ``context_length.csv``: the context-length study (:mod:`tools.artifacts.study`).
* ``lease_study.csv``: vLLM's lease against context length
  (:mod:`tools.artifacts.lease_study`).
* ``simulation.json``: the simulation study, P(leak) against ``T_hold`` under
  realistic write times (:mod:`tools.artifacts.simulation`, about two minutes).
* ``bench.json``: zone-explorer runs on scaled variants of the flagship,
  one subprocess per case (``benchmarks/bench.py``); the flagship rows compared
  with TChecker; Fischer's protocol with and without symmetry; the compiled DBM
  core against the Python reference.

Everything but the run times and memory peaks is deterministic; :func:`equal`
compares with those masked.  Regenerating takes about 8 minutes on 2 cores.
"""

from __future__ import annotations

import io
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from checker import api
from checker.engines import Options
from checker.model.compiled import SpecModel
from checker.smt import synth as sy
from checker.smt.regions import readable
from tools.artifacts.counterexamples import liveness_violation, summary_line

SPECS = Path("spec") / "sglang"
FLAGSHIP = SPECS / "deferred_release.kvr"
IMMEDIATE = SPECS / "immediate_release.kvr"
SYNTH_TIMEOUT = 300.0
EXACT_BOUND = "T_hold > T_prop + T_chunk + T_flight"
WEAK_BOUND = "T_hold > T_prop + T_flight"
BOUNDARY_HOLDS = ("7", "7.5", "8")
SYNTH_FREE: dict[str, tuple[str, ...]] = {
    # Its bounded response fails for every bound because acks can be lost for
    # ever; that is the question, so synthesize over the bound alone.
    "strict_no_release_on_timeout": ("T_bound",),
    # Full synthesis takes minutes (two destination sessions per chunk).
    "single_ack_fanout": ("T_flight", "T_timeout"),
    # Over every parameter these run past five minutes (a lease renewed in a cycle);
    # the lease study synthesizes them over the lease alone.
    "lease_renewal": ("E",),
    "push_write_after_expiry": ("L",),
}
"""Specs synthesized over some of their parameters (the others at their defaults)."""
BENCH_CASES = (
    "r=2,s=1,c=1,x=1", "r=2,s=1,c=2,x=1", "r=2,s=1,c=2,x=1000", "r=2,s=2,c=1,x=1",
    "r=2,s=2,c=2,x=1", "r=3,s=1,c=1,x=1", "r=3,s=1,c=2,x=1", "r=3,s=2,c=1,x=1",
    "r=3,s=2,c=2,x=1",
)
BENCH_CAP = 120.0
TIMING_KEYS = frozenset({
    "seconds", "cpu_seconds", "build_seconds", "prepass_seconds", "zones_per_second",
    "peak_mib", "baseline_mib", "machine",
})
"""Fields that are measurements of the machine, not of the model."""


def _frac(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(x)


def _specs(root: Path) -> list[Path]:
    return sorted((root / SPECS).glob("*.kvr"))


def spec_rows(root: Path) -> list[dict[str, Any]]:
    """Every spec checked at its default parameter values."""
    rows = []
    for path in _specs(root):
        spec = api.load_spec(path)
        o = api.check(spec)
        verdict, prop, message, trace = o.verdict, o.prop, o.message, o.trace
        # A spec whose safety holds may still break an unbounded liveness property:
        # its row (and the paper's figure) is that lasso's, as in spec/README.md.
        live = liveness_violation(spec) if verdict == api.HOLDS else None
        if live is not None:
            verdict, (prop, message, trace) = api.VIOLATED, live
        rows.append({
            "stem": path.stem,
            "path": path.relative_to(root).as_posix(),
            "summary": summary_line(path),
            "params": {k: _frac(v) for k, v in o.params.items()},
            "verdict": verdict,
            "property": prop,
            "message": message,
            "states": o.stats.states,
            "zones": o.stats.zones,
            "transitions": o.stats.transitions,
            "events": len(trace.steps) - 1 if trace is not None else None,
            "seconds": round(o.stats.seconds, 2),
            "liveness": live is not None,
        })
    return rows


def ablation(root: Path) -> list[dict[str, Any]]:
    """The two flagships' counts under every combination of the reductions."""
    rows = []
    for path in (IMMEDIATE, FLAGSHIP):
        spec = api.load_spec(root / path)
        for sym in (True, False):
            for clk in (True, False):
                for dl in (True, False):
                    o = api.check(spec, options=Options(symmetry=sym, clock_reduction=clk,
                                                        deadlock=dl), timestamps=False)
                    rows.append({"spec": path.stem, "symmetry": sym, "clock_reduction": clk,
                                 "deadlock": dl, "verdict": o.verdict,
                                 "states": o.stats.states, "zones": o.stats.zones,
                                 "transitions": o.stats.transitions})
    return rows


def boundary(root: Path) -> dict[str, Any]:
    """The flagship around its bound: verdicts, and the region of the violation."""
    spec = api.load_spec(root / FLAGSHIP)
    points = []
    explain = None
    for hold in BOUNDARY_HOLDS:
        o = api.check(spec, T_hold=hold)
        points.append({"T_hold": hold, "verdict": o.verdict, "states": o.stats.states,
                       "zones": o.stats.zones,
                       "events": len(o.trace.steps) - 1 if o.trace is not None else None})
        if o.verdict == api.VIOLATED and explain is None:
            explain = {"T_hold": hold, "region": api.explain(o)}
    return {"points": points, "explain": explain}


def _prove(root: Path, assumption: str) -> dict[str, Any]:
    """``kvrace prove FLAGSHIP --assume ASSUMPTION --json``, and the witness re-checked."""
    from checker.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(["prove", str(root / FLAGSHIP), "--assume", assumption, "--json",
                 "--timeout", str(SYNTH_TIMEOUT)], out, err)
    if code not in (0, 1):
        raise RuntimeError(f"kvrace prove --assume {assumption!r} exited {code}: {err.getvalue()}")
    doc = json.loads(out.getvalue())
    row: dict[str, Any] = {"assumption": assumption, "exit": code, "status": doc["status"]}
    for key in ("counterexample", "boundary_counterexample", "outside_counterexample",
                "vacuous", "tight"):
        if key in doc:
            row[key] = doc[key]
    witness = doc.get("counterexample") or doc.get("boundary_counterexample")
    if witness is not None:
        row["witness_verdict"] = api.check(api.load_spec(root / FLAGSHIP), witness,
                                           timestamps=False).verdict
    stats = doc["stats"]
    row["symbolic_states"] = stats["symbolic_states"]
    row["seconds"] = stats["seconds"]
    return row


def synth_rows(root: Path, stems: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The safe region of every spec (or of ``stems``) with its parameters free."""
    rows = []
    for path in _specs(root):
        if stems is not None and path.stem not in stems:
            continue
        spec = api.load_spec(path)
        free = list(SYNTH_FREE.get(path.stem, [p.name for p in spec.params]))
        result = sy.explore_parametric(SpecModel(spec), free, timeout=SYNTH_TIMEOUT)
        row: dict[str, Any] = {"stem": path.stem, "free": free, "complete": result.complete,
                               "limit": result.limit}
        if result.complete:
            cnf = sy.safe_region(result)
            row["region"] = readable(result).text(free)
            row["clauses"] = [[sy.lin_text(c, free) for c in clause] for clause in cnf]
        plain = sy.explore_parametric(SpecModel(spec), free, timeout=SYNTH_TIMEOUT, merge=False)
        row.update({"discrete_states": result.stats.states,
                    "symbolic_states": result.stats.symbolic_states,
                    "merges": result.stats.merges,
                    "queries": result.stats.queries,
                    "seconds": round(result.stats.seconds, 1),
                    "no_merge": {"complete": plain.complete,
                                 "symbolic_states": plain.stats.symbolic_states,
                                 "queries": plain.stats.queries,
                                 "seconds": round(plain.stats.seconds, 1)}})
        rows.append(row)
    return rows


def bench_rows(root: Path, cases: tuple[str, ...] = BENCH_CASES) -> list[dict[str, Any]]:
    """Scaled variants of the flagship, each in a fresh process (``bench.py``)."""
    rows = []
    for case in cases:
        done = subprocess.run(
            [sys.executable, str(root / "benchmarks" / "bench.py"), "--json", "--cap",
             str(BENCH_CAP), "--cases", case, "--jobs", "1"],
            capture_output=True, text=True, check=False, cwd=root)
        if done.returncode != 0:
            raise RuntimeError(f"bench.py --cases {case} failed:\n{done.stderr}")
        rows.extend(json.loads(done.stdout))
    keep = ("case", "requests", "slots", "chunks", "scale", "verdict", "limit", "states",
            "zones", "transitions", "depth", "seconds", "peak_mib")
    return [{k: r.get(k) for k in keep} for r in rows]


BENCH_KEEP = ("case", "requests", "slots", "chunks", "scale", "processes", "symmetry",
              "deadlock", "dbm", "verdict", "limit", "states", "zones", "transitions",
              "extrapolation", "tchecker_states", "seconds", "peak_mib")
FISCHER_CASES = ("fischer:n=4", "fischer:n=4,sym=0", "fischer:n=6", "fischer:n=6,sym=0",
                 "fischer:n=8", "fischer:n=8,sym=0", "fischer:n=10")
DBM_CASES = ("r=3,s=2,c=2,x=1,dbm=c", "r=3,s=2,c=2,x=1,dbm=python",
             "fischer:n=7,sym=0,dbm=c", "fischer:n=7,sym=0,dbm=python")


def _bench_json(root: Path, *argv: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "bench.py"), "--json", "--cap",
         str(BENCH_CAP), "--jobs", "1", *argv],
        capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        raise RuntimeError(f"bench.py {' '.join(argv)} failed:\n{done.stderr}")
    got = json.loads(done.stdout)
    rows = got if isinstance(got, list) else [got]
    return [{k: r.get(k) for k in BENCH_KEEP if k in r} for r in rows]


def tchecker_rows(root: Path) -> list[dict[str, Any]]:
    """The flagship rows measured against TChecker (``bench.py --tchecker``)."""
    return _bench_json(root, "--tchecker")


def one_rows(root: Path, cases: tuple[str, ...]) -> list[dict[str, Any]]:
    """Single cases (Fischer's protocol, the DBM core on and off), one process each."""
    rows: list[dict[str, Any]] = []
    for case in cases:
        rows.extend(_bench_json(root, "--one", case))
    return rows


def machine() -> dict[str, Any]:
    """Where the measurements were taken."""
    return {"python": platform.python_version(), "system": platform.system(),
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d")}


def _json(doc: object) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def generate(root: Path) -> dict[str, bytes]:
    """Every file of ``paper/data/``, measured afresh (about 8 minutes)."""
    from tools.artifacts import lease_study, study

    specs_doc = {
        "specs": spec_rows(root),
        "ablation": ablation(root),
        "boundary": boundary(root),
        "prove": [_prove(root, EXACT_BOUND), _prove(root, WEAK_BOUND)],
    }
    rows = study.study(root)
    from tools.artifacts import simulation

    return simulation.data_files(root) | {
        "paper/data/specs.json": _json(specs_doc),
        "paper/data/synth.json": _json({"machine": machine(), "synth": synth_rows(root)}),
        "paper/data/context_length.csv": study.csv_text(rows).encode(),
        "paper/data/lease_study.csv": lease_study.csv_text(lease_study.lease_study(root)).encode(),
        "paper/data/bench.json": _json({
            "machine": machine(), "runs": bench_rows(root), "tchecker": tchecker_rows(root),
            "fischer": one_rows(root, FISCHER_CASES), "dbm": one_rows(root, DBM_CASES)}),
    }


def masked(doc: object) -> object:
    """``doc`` without its run-dependent fields (see :data:`TIMING_KEYS`)."""
    if isinstance(doc, Mapping):
        return {k: masked(v) for k, v in doc.items() if k not in TIMING_KEYS}
    if isinstance(doc, list):
        return [masked(v) for v in doc]
    return doc


def equal(root: Path, rel: str, data: bytes) -> bool:
    """Whether the committed file equals ``data`` apart from run times."""
    old = (root / rel).read_bytes()
    if rel.endswith(".json"):
        return masked(json.loads(old)) == masked(json.loads(data))
    return old == data

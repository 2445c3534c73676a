"""The JSON contract of ``kvrace ... --json``: one envelope for every command.

Every document a command prints under ``--json`` starts with the same fields,
described by the JSON Schema ``docs/schema/kvrace-output-1.schema.json``:

* ``schema`` — :data:`SCHEMA`, the version of this contract (a change that
  removes or renames a field, or changes its meaning, bumps it);
* ``command`` — the subcommand (``check``, ``prove``, ...);
* ``kvrace_version`` — the version of kvrace that wrote it;
* ``verdict`` — one of :data:`VERDICTS`, matching the exit code
  (:data:`EXIT_OF`);
* ``exit_code`` — the process's exit code;
* ``errors`` — what went wrong, as objects (``code``, ``message``, ``file``,
  ``line``, ``col``); empty unless the verdict is ``error`` or ``interrupted``.

The command's own fields follow.  A run that fails before it has anything to
report (bad usage, a broken spec, an interrupt) still prints the envelope.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from checker import version
from checker.diagnostics import Diagnostic
from checker.model import ir
from checker.model import trace as tr
from checker.model.trace import Trace, fmt_time
from checker.results import Coverage, ProofStatus, PropertyKind, PropertyRef, Verdict

if TYPE_CHECKING:
    from checker.api import LivenessRun, Outcome, QueryOutcome
    from checker.engines import Stats
    from checker.model.compiled import SpecModel
    from checker.present.reports import ProveReport, SimReport, SynthReport
    from checker.simulate.runner import SimResult
    from checker.smt.synth import SynthStats

SCHEMA = "kvrace-output/1"
"""The version of the JSON contract; also the schema file's ``$id`` suffix."""

HOLDS, VIOLATED, INCONCLUSIVE, ERROR, INTERRUPTED = (
    Verdict.HOLDS, Verdict.VIOLATED, Verdict.INCONCLUSIVE, Verdict.ERROR, Verdict.INTERRUPTED)
UNREACHABLE = Verdict.UNREACHABLE
"""``check`` only: every property holds, but a ``reachable`` query is never reachable."""
DEVIATES = Verdict.DEVIATES
"""``validate`` only: the log is not a run of the spec."""
VERDICTS = (HOLDS, VIOLATED, INCONCLUSIVE, ERROR, UNREACHABLE, INTERRUPTED, DEVIATES)
"""The verdict words, in the order of the schema's ``enum``."""

EXIT_OF = {HOLDS: 0, VIOLATED: 1, ERROR: 2, INCONCLUSIVE: 3, UNREACHABLE: 5, DEVIATES: 6}
"""Exit code of each verdict (``interrupted`` is 130 or 143, an internal error 70;
``check --strict`` exits 4 for a vacuous HOLDS, whose verdict stays ``holds``)."""


def verdict_of_exit(code: int) -> Verdict:
    """The verdict a command's exit code stands for."""
    if code in (130, 143):
        return INTERRUPTED
    return {0: HOLDS, 1: VIOLATED, 3: INCONCLUSIVE, 4: HOLDS, 5: UNREACHABLE,
            6: DEVIATES}.get(code, ERROR)


def error(code: str, message: str, file: str | None = None, line: int | None = None,
          col: int | None = None, **extra: object) -> dict[str, object]:
    """One entry of ``errors``."""
    return {"code": code, "message": message, "file": file, "line": line, "col": col,
            **extra}


_POSITION = re.compile(r"(?P<file>[^\s:`'\"]+):(?P<line>\d+):(?P<col>\d+)")


def error_from_text(code: str, message: str, file: str | None = None) -> dict[str, object]:
    """An error whose message may name its place (``FILE:LINE:COL``): that place is
    also given as ``file``, ``line`` and ``col``."""
    m = _POSITION.search(message)
    if m is None:
        return error(code, message, file)
    return error(code, message, m.group("file"), int(m.group("line")), int(m.group("col")))


def diagnostic_errors(diagnostics: Sequence[Diagnostic]) -> list[dict[str, object]]:
    """A spec's diagnostics as ``errors`` entries."""
    out: list[dict[str, object]] = []
    for d in diagnostics:
        sp = d.span
        entry = error(d.code, d.message, d.file, sp.line if sp else None,
                      sp.column if sp else None)
        if sp is not None:
            entry["end_line"], entry["end_col"] = sp.end_line, sp.end_column
        if d.notes:
            entry["notes"] = list(d.notes)
        out.append(entry)
    return out


def envelope(command: str, verdict: Verdict, exit_code: int,
             errors: Sequence[dict[str, object]] = ()) -> dict[str, object]:
    """The fields every ``--json`` document starts with."""
    return {"schema": SCHEMA, "command": command, "kvrace_version": version(),
            "verdict": verdict, "exit_code": exit_code, "errors": list(errors)}


def document(command: str, exit_code: int, fields: dict[str, object],
             errors: Sequence[dict[str, object]] = ()) -> str:
    """A complete ``--json`` document, as text (with its final newline)."""
    doc = envelope(command, verdict_of_exit(exit_code), exit_code, errors)
    doc.update(fields)
    return json.dumps(doc, indent=2) + "\n"


def property_fields(ref: PropertyRef | None, trace: Trace | None) -> dict[str, object]:
    """The violated property's full name and kind.

    An assert is named after the event instance whose assert failed (``assert in
    decode.land(A, 0)``), invariants and bounded responses after their declaration
    and instance (``invariant mutex``, ``property bounded_release[A]``).  ``ref`` is
    ``None`` when nothing is violated (a model error is in ``errors``).
    """
    if ref is None:
        return {"property": None, "property_kind": None}
    if ref.kind is PropertyKind.ASSERT:
        last = trace.steps[-1] if trace is not None and trace.steps else None
        where = f" in {last.label}" if last is not None and last.event else ""
        return {"property": f"assert{where}", "property_kind": ref.kind}
    if ref.kind is PropertyKind.DEADLOCK:
        return {"property": "deadlock freedom", "property_kind": ref.kind}
    if ref.kind is PropertyKind.INVARIANT:
        return {"property": f"invariant {ref.label}", "property_kind": ref.kind}
    if ref.kind is PropertyKind.RESPONSE:
        return {"property": f"property {ref.label}", "property_kind": ref.kind}
    return {"property": ref.label, "property_kind": ref.kind}


def spec_summary(spec: ir.Spec, model: SpecModel) -> dict[str, object]:
    """The ``kvrace show --json`` summary of a spec (what
    :func:`checker.present.text.describe_spec` prints)."""
    counts: dict[str, int] = {}
    for name in model.event_names:
        key = name.split("(", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    return {
        "model": spec.name,
        **({"consts": [{"name": c.name, "value": c.value, "default": c.default,
                        "range": c.range_text() or None} for c in spec.consts]}
           if spec.consts else {}),
        "types": [{"name": t.name, "kind": t.kind, "symmetric": t.symmetric,
                   **({"ordered": True} if t.ordered else {}),
                   **({"lo": t.lo, "hi": t.hi} if t.kind == "range" else
                      {"values": [t.show(v) for v in t.values()]})} for t in spec.types],
        "params": [{"name": p.name, "range": p.range_text() or None,
                    "default": fmt_time(p.default)} for p in spec.params],
        "actors": list(spec.actors),
        "variables": [{"name": v.name, "domain": [str(t) for t in v.domain],
                       "type": str(v.value), "init": v.value.show(v.init), "cells": v.size}
                      for v in spec.vars],
        "clocks": [{"name": c.name, "domain": [str(t) for t in c.domain],
                    "instances": c.size} for c in spec.clocks],
        "events": [{"name": ev.label, "params": [{"name": n, "type": str(t)}
                                                 for n, t in ev.params],
                    "receives": str(ev.receives[0]) if ev.receives else None,
                    "instances": counts[ev.label], "guard_branches": len(ev.branches)}
                   for ev in spec.events],
        "deadlines": [d.name for d in spec.deadlines],
        "properties": ([f"invariant {i.name}" for i in spec.invariants]
                       + [f"response {r.name}" for r in spec.responses]
                       + ["every assert", "deadlock freedom"]),
        "queries": [q.name for q in spec.queries],
        "size": {"event_instances": model.event_count,
                 "clock_instances": len(model.clock_names), "state_cells": model.state_size},
    }


def stats_json(st: Stats) -> dict[str, object]:
    """The statistics of a run as JSON."""
    return {
        "states": st.states, "zones": st.zones, "transitions": st.transitions,
        "seconds": round(st.seconds, 3), "zones_per_second": round(st.states_per_second, 1),
        "peak_memory_mib": round(st.peak_memory_mb, 1), "depth": st.depth,
        "stored": st.stored, "explored": st.explored, "extrapolation": st.extrapolation,
    }


def successors_json(outcome: Outcome) -> dict[str, object]:
    """Which successor function the run's model used (``native``: the compiled one, or
    ``python``) and, when it was not the compiled one, why (None: the run was too small
    to ask for it)."""
    if outcome.raw is None:
        return {}
    model = outcome.raw[0]
    return {"successors": model.successors, "successors_note": model.native_note}


def query_json(q: QueryOutcome) -> dict[str, object]:
    """One ``reachable`` query's outcome, with its witness."""
    return {"name": q.name, "expression": q.text, "status": q.status,
            "events": len(q.trace.steps) - 1 if q.trace is not None else None,
            "trace": tr.to_itf(q.trace) if q.trace is not None else None,
            "timing_note": q.timing_note}


def sim_json(r: SimResult) -> dict[str, object]:
    """The estimate of one simulation."""
    doc: dict[str, object] = {
        "params": {k: fmt_time(v) for k, v in r.params.items()},
        "runs": r.runs, "violations": r.violations, "p": r.p,
        "interval": [r.lo, r.hi], "confidence": r.confidence,
        "by_property": [{"property": e.prop, "runs": e.runs, "p": e.p,
                         "interval": [e.lo, e.hi], "first_run": e.first_run,
                         "message": e.message} for e in r.by_property],
        "ends": r.ends, "mean_steps": r.steps / r.runs if r.runs else 0.0,
        "distribution_fallbacks": r.fallbacks,
    }
    if r.limit is not None:
        doc["limit"] = r.limit
        doc["planned_runs"] = r.planned
    if r.sprt is not None:
        s = r.sprt
        doc["sprt"] = {"p0": s.p0, "indifference": s.indifference, "alpha": s.alpha,
                       "beta": s.beta, "decision": s.decision, "runs": s.runs}
    return doc


def check_fields(path: str, spec: ir.Spec, outcome: Outcome, query: str | None,
                 explanation: str | None, distributed: dict[str, object] | None
                 ) -> dict[str, object]:
    """The fields of ``check --json`` after the envelope (``path``: the spec's file as
    given; ``query``: the one query checked; ``explanation``: the feasible region of
    ``--explain``; ``distributed``: what distribution cost)."""
    doc: dict[str, object] = {
        "spec": path, "model": spec.name,
        "params": {k: fmt_time(v) for k, v in outcome.params.items()},
        **property_fields(outcome.ref, outcome.trace),
        "message": outcome.message,
        "limit": outcome.limit, "stats": {**stats_json(outcome.stats),
                                          **successors_json(outcome)},
        "trace": tr.to_itf(outcome.trace) if outcome.trace is not None else None,
        "never_fired": list(outcome.never_fired),
        "never_active_deadlines": list(outcome.never_active),
        "never_triggered": list(outcome.never_triggered),
        "vacuous": outcome.vacuous,
    }
    if spec.queries:
        doc["queries"] = [query_json(q) for q in outcome.queries]
        doc["query"] = query
    if explanation is not None:
        doc["feasible_region"] = explanation
    if distributed is not None:
        doc["distributed"] = distributed
    return doc


def liveness_json(live: LivenessRun) -> list[dict[str, object]]:
    """Each checked liveness property instance for ``check --json``."""
    return [{"name": r.name, "status": r.status, "message": r.message,
             "trace": tr.to_itf(r.trace) if r.trace is not None else None,
             "timing_note": r.timing_note} for r in live.results]


def parametric_stats_json(st: SynthStats, transitions: bool = True) -> dict[str, object]:
    """What a parametric exploration did (``prove`` leaves out ``transitions``)."""
    return {"discrete_states": st.states, "symbolic_states": st.symbolic_states,
            "final_symbolic_states": st.final_states, "merges": st.merges,
            **({"transitions": st.transitions} if transitions else {}),
            "solver_queries": st.queries, "seconds": round(st.seconds, 3)}


def synth_fields(path: str, r: SynthReport) -> dict[str, object]:
    """The fields of ``synth --json`` after the envelope."""
    return {
        "spec": path, "model": r.model, "free": r.free,
        "fixed": {k: fmt_time(v) for k, v in r.fixed.items()},
        "complete": r.complete, "limit": r.limit,
        "coverage": r.coverage,
        **_target_fields(r),
        **({"project": r.project} if r.project is not None else {}),
        "provenance": [
            {"constraint": c, "sources": [
                {"kind": s.kind, "element": s.name, "bound": s.text,
                 "file": s.where.rsplit(":", 1)[0], "line": int(s.where.rsplit(":", 1)[1])}
                for s in found]}
            for c, found in r.provenance],
        "smtlib": r.smtlib,
        "bad_region_so_far": r.bad,
        "stats": parametric_stats_json(r.stats),
    }


def _target_fields(r: SynthReport) -> dict[str, object]:
    """``safe_region`` (with ``--property``: for that property), or with ``--query``
    ``reachable_region`` (null, like ``safe_region``, while not known)."""
    if r.query is not None:
        known = r.complete or r.coverage is Coverage.ALL
        return {"query": r.query, "safe_region": None,
                "reachable_region": r.region if known else None}
    known = r.complete or r.coverage is Coverage.NONE
    extra: dict[str, object] = {"property": r.property} if r.property is not None else {}
    return {**extra, "safe_region": r.region if known else None}


def prove_fields(path: str, r: ProveReport) -> dict[str, object]:
    """The fields of ``prove --json`` after the envelope."""
    doc: dict[str, object] = {"spec": path, "model": r.model, "assume": r.assume,
                              "free": r.free, "status": r.status}
    if r.status is ProofStatus.REFUTED:
        assert r.counterexample is not None and r.witness is not None
        doc["counterexample"] = _point(r.counterexample)
        if r.confirmed:
            doc.update(property_fields(r.witness.ref, r.witness.trace))
            doc["message"] = r.witness.message
            if r.witness.trace is not None:
                doc["trace"] = tr.to_itf(r.witness.trace)
    elif r.status is ProofStatus.PROVED:
        if r.boundary is not None:
            doc["boundary_counterexample"] = _point(r.boundary)
        elif r.near is not None:
            doc["near_boundary_counterexample"] = _point(r.near)
        elif r.outside is not None:
            doc["outside_counterexample"] = _point(r.outside)
        doc["tight"] = r.boundary is not None or r.near is not None
        doc["vacuous"] = r.vacuous
    doc["stats"] = parametric_stats_json(r.stats, transitions=False)
    return doc


def _point(values: dict[str, Fraction]) -> dict[str, str]:
    """A parameter valuation, each value as an exact number."""
    return {k: fmt_time(v) for k, v in values.items()}


def simulate_document(path: str, r: SimReport) -> str:
    """The whole ``simulate --json`` document.  An estimate is not a verdict: no
    violation sampled proves nothing, so its verdict is ``inconclusive`` (exit 0)."""
    doc: dict[str, object] = {
        "spec": path, "model": r.model, "seed": r.seed, "runs": r.runs,
        "time_bound": r.cfg.time_bound, "max_steps": r.cfg.max_steps, "rate": r.cfg.rate,
        "delays": {n: d.text() for n, d in r.cfg.delays},
    }
    if r.sweep is None:
        doc.update(sim_json(r.results[0]))
    else:
        doc["sweep"] = r.sweep.name
        doc["points"] = [{"value": fmt_time(x), **sim_json(res)}
                         for x, res in zip(r.sweep.values, r.results, strict=True)]
        doc["safe_threshold"] = r.threshold.text(r.sweep.name) if r.threshold else None
    bad = r.any_violation
    limited = any(x.limit is not None for x in r.results)
    env = envelope("simulate", VIOLATED if bad else INCONCLUSIVE,
                   1 if bad else 3 if limited else 0)
    env.update(doc)
    return json.dumps(env, indent=2) + "\n"

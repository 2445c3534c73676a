"""The text kvrace prints: verdicts, statistics, summaries of specs and of runs.

Every function here turns a result (an :class:`~checker.api.Outcome`, the
statistics of a run, a simulation's estimates) into text; none runs an engine.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from checker.model import ir
from checker.model import trace as tr
from checker.model.trace import fmt_time
from checker.present.words import count
from checker.results import Coverage, ProofStatus, QueryStatus, Verdict

if TYPE_CHECKING:
    from checker.api import LivenessRun, Outcome
    from checker.engines import Stats
    from checker.model.compiled import SpecModel
    from checker.present.reports import ProveReport, SimReport, Sweep, SynthReport
    from checker.simulate import SimConfig
    from checker.simulate.runner import SimResult
    from checker.smt.synth import SynthStats


def fmt(x: Fraction) -> str:
    """An exact number: an integer, a short decimal, or a fraction ``a/b``."""
    return fmt_time(x)


def describe_spec(spec: ir.Spec, model: SpecModel) -> str:
    """The ``kvrace show`` summary of a spec (``model``: the spec compiled, for its
    sizes)."""
    lines = [f"model {spec.name}  ({spec.path})", "", "types:"]
    for t in spec.types:
        sym = "symmetric " if t.symmetric else ""
        body = "{" + ", ".join(t.labels) + "}" if t.kind == "enum" else f"{t.lo}..{t.hi}"
        kind = "ordered " if t.ordered else ""
        lines.append(f"  {sym}{kind}{t.name} = {body}")
    if spec.consts:
        lines.append("constants:")
        for k in spec.consts:
            rng = f" in {k.range_text()}" if k.lo is not None else ""
            dflt = f" (default {k.default})" if k.value != k.default else ""
            lines.append(f"  {k.name}{rng} = {k.value}{dflt}")
    lines.append("parameters:")
    for p in spec.params:
        rng = p.range_text() or "(fixed)"
        lines.append(f"  {p.name} in {rng} = {fmt(p.default)}")
    shown: list[str] = []
    for a in spec.assumes:
        if a.where not in shown:
            shown.append(a.where)
            lines.append(f"  assume {a.text}")
    lines.append("actors: " + ", ".join(spec.actors))
    lines.append("variables:")
    for v in spec.vars:
        dom = ""
        if v.domain:
            names = ", ".join(str(t) for t in v.domain)
            dom = f"({names}) -> " if len(v.domain) > 1 else f"{names} -> "
        cells = count(v.size, "cell")
        lines.append(f"  {v.name} : {dom}{v.value} = {v.value.show(v.init)}  [{cells}]")
    lines.append("clocks:")
    for c in spec.clocks:
        dom = " : " + ", ".join(str(t) for t in c.domain) if c.domain else ""
        lines.append(f"  {c.name}{dom}  [{count(c.size, 'instance')}]")
    lines.append("events:")
    counts: dict[str, int] = {}
    for name in model.event_names:
        key = name.split("(", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    for ev in spec.events:
        params = ", ".join(f"{n}: {t}" for n, t in ev.params)
        recv = f" receives {ev.receives[0]}" if ev.receives else ""
        nb = len(ev.branches)
        br = f", {nb} convex guard branches" if nb > 1 else ""
        lines.append(f"  {ev.label}({params}){recv}  [{count(counts[ev.label], 'instance')}{br}]")
    lines.append("deadlines: " + (", ".join(d.name for d in spec.deadlines) or "none"))
    props = [f"invariant {i.name}" for i in spec.invariants]
    props += [f"response {r.name}" for r in spec.responses]
    props += ["every assert", "deadlock freedom"]
    lines.append("properties: " + ", ".join(props))
    if spec.queries:
        lines.append("queries: " + ", ".join(f"reachable {q.name}" for q in spec.queries))
    lines.append(
        f"size: {model.event_count} event instances, {len(model.clock_names)} clock instances,"
        f" {model.state_size} state cells"
    )
    return "\n".join(lines)


def stats_line(st: Stats) -> str:
    """The statistics of a run in one line."""
    line = (
        f"explored {count(st.states, 'state')}, {count(st.zones, 'zone')},"
        f" {count(st.transitions, 'transition')}"
        f" in {st.seconds:.2f} s ({st.states_per_second:,.0f} zones/s),"
        f" peak memory {st.peak_memory_mb:.0f} MiB"
    )
    if st.extrapolation == "m":
        line += ("; a deadlock of the LU abstraction was not confirmed by exact replay,"
                 " so the counts are those of the rerun with Extra_M")
    return line


def param_text(values: dict[str, Fraction]) -> str:
    """``NAME=VALUE, ...``."""
    return ", ".join(f"{k}={fmt(v)}" for k, v in values.items())


def point_text(point: dict[str, Fraction]) -> str:
    """A parameter valuation, ``NAME=VALUE, ...``."""
    return ", ".join(f"{k}={fmt(v)}" for k, v in point.items())


def verdict_text(outcome: Outcome) -> str:
    """The verdict line of ``check``."""
    if outcome.verdict == Verdict.HOLDS:
        return "HOLDS: every property holds (exploration complete)"
    if outcome.verdict == Verdict.VIOLATED:
        return f"VIOLATED: {outcome.prop}: {outcome.message}"
    if outcome.verdict == Verdict.INCONCLUSIVE:
        return f"INCONCLUSIVE: {outcome.limit}; no violation in what was explored"
    if outcome.verdict == Verdict.UNREACHABLE:
        never = ", ".join(q.name for q in outcome.queries if q.status is QueryStatus.UNREACHABLE)
        return ("UNREACHABLE: every property holds (exploration complete), but these"
                f" `reachable` queries are never reachable: {never}")
    return f"MODEL ERROR: {outcome.message}"


def query_verdict_text(outcome: Outcome, name: str) -> str:
    """The verdict line of ``check --query NAME``."""
    if outcome.verdict in (Verdict.VIOLATED, Verdict.ERROR) or not outcome.queries:
        return verdict_text(outcome)
    q = outcome.query(name)
    if q.status is QueryStatus.REACHABLE:
        return f"REACHABLE: {name}: `{q.text}` (witness below)"
    if q.status is QueryStatus.UNREACHABLE:
        return (f"NEVER REACHABLE: {name}: no reachable state satisfies `{q.text}`"
                " (exploration complete)")
    return f"INCONCLUSIVE: {outcome.limit}; `reachable {name}` not found in what was explored"


def queries_text(outcome: Outcome, bfs: bool) -> str:
    """Each query's outcome, with its witness trace."""
    out = []
    for q in outcome.queries:
        if q.status is QueryStatus.REACHABLE:
            assert q.trace is not None
            n = len(q.trace.steps) - 1
            kind = "shortest " if bfs else ""
            out.append(f"\nreachable {q.name}: REACHABLE: `{q.text}`; {kind}witness,"
                       f" {n} event{'s' if n != 1 else ''}:\n{tr.to_text(q.trace)}\n")
            if q.timing_note:
                out.append(f"  ({q.timing_note})\n")
        elif q.status is QueryStatus.UNREACHABLE:
            out.append(f"\nreachable {q.name}: NEVER REACHABLE: no reachable state satisfies"
                       f" `{q.text}` (exploration complete)\n")
        else:
            out.append(f"\nreachable {q.name}: INCONCLUSIVE: not found in what was explored"
                       " (the run ended first)\n")
    return "".join(out)


def vacuity_text(outcome: Outcome) -> str:
    """The warning block of a HOLDS that some part of the model never exercised."""
    lines = []
    if outcome.never_fired:
        lines.append("warning: these events never fired, so their asserts were never"
                     " evaluated and what the properties say about them holds vacuously: "
                     + ", ".join(outcome.never_fired))
    if outcome.never_active:
        lines.append("warning: these deadlines were active in no reachable state, so they"
                     " never bounded time: " + ", ".join(outcome.never_active))
    if outcome.never_triggered:
        lines.append("warning: the trigger of these bounded responses held in no reachable"
                     " state, so they hold vacuously: " + ", ".join(outcome.never_triggered))
    return "".join(line + "\n" for line in lines)


def covers(no_deadlock: bool, liveness: int = 0) -> str:
    """What a parametric verdict covers (``liveness``: how many unbounded liveness
    properties the spec declares, which it does not cover)."""
    if no_deadlock:
        text = ("every assert, invariant and bounded response; not deadlock freedom"
                " (--no-deadlock)")
    else:
        text = "every assert, invariant and bounded response, and deadlock freedom"
    if liveness:
        text += ("; not the unbounded liveness properties (`leadsto` without `within`,"
                 " `always eventually`): `kvrace check` checks them at fixed values")
    return text


def liveness_verdict_text(live: LivenessRun | None) -> str | None:
    """The verdict line when liveness changes it (None: the safety verdict's line)."""
    if live is None or live.verdict == Verdict.HOLDS:
        return None
    if live.error is not None:
        return f"MODEL ERROR: {live.error}"
    bad = next(r for r in live.results if r.status == live.verdict)
    if live.verdict == Verdict.VIOLATED:
        return f"VIOLATED: {bad.name}: {bad.message}"
    return (f"INCONCLUSIVE: {bad.name}: {bad.message}; the safety properties hold"
            " (exploration complete)")


def _reduction(live: LivenessRun) -> str:
    """How symmetry reduction took part in a liveness run."""
    if live.reduced:
        return "symmetry reduction per instance"
    if live.reduced_zones:
        return (f"{live.reduced_zones:,} of the zones on graphs reduced by symmetry"
                " that decided nothing")
    return "no symmetry reduction"


def liveness_text(live: LivenessRun | None) -> str:
    """The liveness section of ``check``'s text output."""
    if live is None:
        return ""
    lines = ["", "liveness (infinite time-divergent runs, and runs that end in a deadlock):"]
    words = {Verdict.HOLDS: "holds", Verdict.VIOLATED: "VIOLATED",
             Verdict.INCONCLUSIVE: "inconclusive"}
    for r in live.results:
        lines.append(f"  {r.name}: {words[Verdict(r.status)]}"
                     + (f" ({r.message})" if r.status == Verdict.INCONCLUSIVE else ""))
    shown = next((r for r in live.results if r.trace is not None), None)
    if shown is not None and shown.trace is not None:
        n = len(shown.trace.steps) - 1
        lines.append(f"\nlasso counterexample of {shown.name}, {n} event"
                     f"{'s' if n != 1 else ''}:")
        lines.append(tr.lasso_text(shown.trace))
        if shown.timing_note:
            lines.append(f"  ({shown.timing_note})")
    lines.append(f"liveness: {count(live.zones, 'zone', grouped=True)},"
                 f" {count(live.transitions, 'transition', grouped=True)} in"
                 f" {live.seconds:.2f} s ({_reduction(live)}, equality store)")
    return "\n".join(lines) + "\n"


def g4(x: float) -> str:
    """A probability or a rate, to 4 significant digits."""
    return f"{x:.4g}"


def sim_text(r: SimResult) -> str:
    """The estimate of one simulation: P(violation), per property, the SPRT, how
    runs ended."""
    out: list[str] = []
    conf = f"{r.confidence * 100:.4g}%"
    if r.limit is not None:
        out.append(f"INCONCLUSIVE: {r.limit} after {r.runs} of {r.planned} runs; the"
                   " estimate below covers those runs\n")
    if r.violations:
        out.append(f"VIOLATION SAMPLED in {r.violations} of {count(r.runs, 'run')}\n")
        out.append(f"  P(violation) = {g4(r.p)}  in [{g4(r.lo)}, {g4(r.hi)}]"
                   f"  (Clopper-Pearson, {conf} confidence)\n")
        width = max(len(e.prop) for e in r.by_property)
        for e in r.by_property:
            out.append(f"  {e.prop:<{width}}  {count(e.runs, 'run')}, P = {g4(e.p)} in"
                       f" [{g4(e.lo)}, {g4(e.hi)}]; first in run {e.first_run}: {e.message}\n")
    else:
        out.append(f"NO VIOLATION SAMPLED in {count(r.runs, 'run')}: P(violation) <= {g4(r.hi)}"
                   f" ({conf} Clopper-Pearson upper bound)\n")
    if r.sprt is not None:
        s = r.sprt
        test = f"P(violation) >= {g4(s.p0)}"
        if s.decision is None:
            out.append(f"SPRT {test}: undecided after {count(s.runs, 'run')} (indifference"
                       f" +-{g4(s.indifference)}); give more --runs\n")
        else:
            verdict = "accepted" if s.decision == "accept" else "rejected"
            out.append(f"SPRT {test}: {verdict} after {count(s.runs, 'run')} (error probabilities"
                       f" {g4(s.alpha)}, indifference +-{g4(s.indifference)})\n")
    ends = r.ends
    out.append(f"runs ended: {ends['violation']} by a violation, {ends['quiescent']} with"
               f" nothing left to fire, {ends['time bound']} at the time bound,"
               f" {ends['step bound']} at the step bound;"
               f" {r.steps / max(r.runs, 1):.1f} events per run on average\n")
    if r.fallbacks:
        out.append(f"note: {count(r.fallbacks, 'delay')} had no probability mass in their"
                   " window under the given distribution and were drawn by the default rule\n")
    return "".join(out)


def sim_header(cfg: SimConfig, runs: int, seed: int) -> str:
    """What a simulation draws: runs, seed, bounds, delays."""
    tb = f"time bound {g4(cfg.time_bound)}" if cfg.time_bound is not None else "no time bound"
    delays = "; ".join(f"{n}={d.text()}" for n, d in cfg.delays)
    lines = [f"simulation: {runs} runs, seed {seed}, {tb}, at most {cfg.max_steps}"
             " events per run",
             "delays: uniform within an edge's own bound, else exponential (rate"
             f" {g4(cfg.rate)})" + (f"; {delays}" if delays else "")]
    return "\n".join(lines) + "\n"


def check_text(spec: ir.Spec, outcome: Outcome, query: str | None, bfs: bool,
               explanation: str | None, distributed: str | None,
               symmetry_off: str | None, live: LivenessRun | None = None) -> str:
    """What ``check`` prints: the model and its values, the verdict, the vacuity
    warnings, the trace, the feasible region (``--explain``), the queries and the
    statistics.  ``query``: the one query checked (``--query``); ``bfs``: traces are
    shortest; ``distributed``: the line of what distribution cost; ``symmetry_off``:
    why symmetry reduction was off although asked for; ``live``: the liveness check
    after safety, if it ran."""
    out: list[str] = []
    shown = {**{c.name: Fraction(c.value) for c in spec.consts}, **outcome.params}
    shown_params = param_text(shown)
    out.append(f"model {spec.name}" + (f"  ({shown_params})" if shown_params else "") + "\n")
    out.append((query_verdict_text(outcome, query) if query is not None
                else liveness_verdict_text(live) or verdict_text(outcome)) + "\n")
    out.append(vacuity_text(outcome))
    if outcome.trace is not None:
        kind = "shortest " if bfs else ""
        n = len(outcome.trace.steps) - 1
        out.append(f"\n{kind}trace, {n} event{'s' if n != 1 else ''}:\n")
        out.append(tr.to_text(outcome.trace) + "\n")
        if outcome.timing_note:
            out.append(f"  ({outcome.timing_note})\n")
    if explanation is not None:
        out.append(f"\nthis sequence of events is possible exactly when: {explanation}\n")
    out.append(queries_text(outcome, bfs))
    out.append(liveness_text(live))
    out.append("\n" + stats_line(outcome.stats) + "\n")
    if distributed is not None:
        out.append(distributed + "\n")
    if symmetry_off is not None:
        out.append(f"note: no symmetry reduction: {symmetry_off}\n")
    return "".join(out)


def parametric_stats_text(st: SynthStats) -> str:
    """What a parametric exploration did, as a clause."""
    merged = f" ({count(st.merges, 'merge')})" if st.merges else ""
    return (f"{count(st.states, 'discrete state')},"
            f" {count(st.symbolic_states, 'symbolic state')}{merged},"
            f" {count(st.queries, 'solver query', 'solver queries')}, {st.seconds:.1f} s")


def synth_text(r: SynthReport) -> str:
    """What ``synth`` prints: the safe region (or what was found unsafe so far), the
    algorithm and what the region covers."""
    what = (f" for `reachable {r.query}`" if r.query is not None
            else f" for property {r.property}" if r.property is not None else "")
    out = [f"model {r.model}: synthesis over {', '.join(r.free) or 'no parameter'}{what}",
           f"  (fixed: {param_text(r.fixed)})\n" if r.fixed else "\n"]
    if r.project is not None:
        out.append(f"projected onto {', '.join(r.project)}: the values for which some value"
                   " of the other free parameters is in the region\n")
    status = "complete" if r.complete else f"INCONCLUSIVE: {r.limit}"
    if r.query is not None:
        out += _reach_lines(r, status)
    elif r.coverage is Coverage.NONE:
        out.append("VIOLATED: no parameter value in the ranges is safe\n"
                   "SAFE REGION: empty — a property breaks for every parameter value"
                   " in the ranges\n")
        if not r.complete:
            out.append("  (the unsafe values found before the limit already cover"
                       " the ranges)\n")
        if r.ranges:
            out.append(f"  within {r.ranges}\n")
    elif r.complete:
        if r.region == "true":
            out.append("SAFE REGION: every parameter value in the ranges\n")
        else:
            out.append(f"SAFE REGION: {r.region}\n")
        if r.ranges:
            out.append(f"  within {r.ranges}\n")
    else:
        out.append(f"{status}; no safe region is claimed\n")
        if r.bad:
            bad = " or ".join("(" + " and ".join(piece) + ")" for piece in r.bad)
            out.append(f"  unsafe so far: {bad}\n")
    if r.query is not None:
        scope = f"reachability of `reachable {r.query}` (no property is checked)"
    elif r.property is not None:
        scope = (f"property {r.property} only (the other properties are not checked)"
                 if r.property not in ("deadlock", "assert") else
                 "deadlock freedom only" if r.property == "deadlock" else "every assert only")
    else:
        scope = covers(r.no_deadlock, r.liveness)
    if r.show_provenance and r.provenance:
        out.append("provenance (the model elements whose bounds mention each constraint's"
                   " parameters):\n")
        for constraint, found in r.provenance:
            out.append(f"  {constraint}\n")
            out.extend(f"    {s.describe()}\n" for s in found)
            if not found:
                out.append("    (no element bounds these parameters)\n")
    out.append(f"\nalgorithm: parametric zone exploration (EFsynth), {status};"
               f" {parametric_stats_text(r.stats)}\n"
               f"covers: {scope}\n")
    return "".join(out)


def _reach_lines(r: SynthReport, status: str) -> list[str]:
    """The region of ``synth --query``: where the query's state is reachable."""
    within = [f"  within {r.ranges}\n"] if r.ranges else []
    if r.coverage is Coverage.NONE:
        return [f"UNREACHABLE: `reachable {r.query}` is reachable for no parameter value"
                " in the ranges\n", *within]
    if r.coverage is Coverage.ALL:
        return ["REACHABLE FOR: every parameter value in the ranges\n", *within]
    if r.complete:
        return [f"REACHABLE FOR: {r.region}\n", *within]
    out = [f"{status}; no region is claimed\n"]
    if r.bad:
        found = " or ".join("(" + " and ".join(piece) + ")" for piece in r.bad)
        out.append(f"  reachable so far for: {found}\n")
    return out


def prove_text(r: ProveReport) -> str:
    """What ``prove`` prints."""
    lines = [f"model {r.model}: prove over {', '.join(r.free)} assuming {r.assume}"
             + (f"  (fixed: {param_text(r.fixed)})" if r.fixed else "")]
    if r.status is ProofStatus.REFUTED:
        assert r.counterexample is not None and r.witness is not None
        point = point_text(r.counterexample)
        if not r.confirmed and r.witness.verdict is Verdict.INCONCLUSIVE:
            lines.append(f"INCONCLUSIVE: the concrete check at {point} did not decide"
                         f" ({r.witness.message})")
        elif not r.confirmed:
            lines.append("INCONCLUSIVE: the parametric and the concrete explorer disagree at"
                         f" {point} (please report)")
        else:
            lines.append(f"REFUTED: at {point} (inside the assumption)")
            lines.append(f"  {r.witness.prop}: {r.witness.message}")
            if r.witness.trace is not None:
                lines.append(tr.to_text(r.witness.trace))
    elif r.status is ProofStatus.INCONCLUSIVE:
        lines.append(f"INCONCLUSIVE: {r.limit}; nothing is proved")
    else:
        lines += _proved_lines(r)
    lines.append(f"parametric zone exploration (EFsynth): {parametric_stats_text(r.stats)}")
    lines.append(f"covers: {covers(r.no_deadlock, r.liveness)}")
    return "\n".join(lines) + "\n"


def _proved_lines(r: ProveReport) -> list[str]:
    """The lines of a proof: vacuous or not, tight or not."""
    lines = ["PROVED: every property holds for every parameter value in the ranges"
             " satisfying the assumption"]
    if r.vacuous:
        lines.append("  warning: no parameter value in the ranges satisfies the assumption;"
                     " the proof is vacuous")
    if r.boundary is not None:
        lines.append(f"  tight: a property breaks on its boundary, at {point_text(r.boundary)}")
    elif r.near is not None:
        lines.append("  tight: no violation on its boundary itself, but violations"
                     f" arbitrarily close to it, e.g. at {point_text(r.near)}")
    elif r.outside is not None:
        lines.append("  not tight: no violation on its boundary; the nearest violation"
                     f" outside it is at {point_text(r.outside)}")
    else:
        lines.append("  not needed: no violation anywhere in the ranges")
    return lines


def simulate_text(r: SimReport) -> str:
    """What ``simulate`` prints."""
    shown_text = param_text(r.shown)
    out = [f"model {r.model}" + (f"  ({shown_text})" if shown_text else "") + "\n",
           sim_header(r.cfg, r.runs, r.seed)]
    if r.sweep is None:
        out.append(sim_text(r.results[0]))
    else:
        name = r.sweep.name
        w = max(len(name), 6)
        out.append(f"{name:>{w}}  {'runs':>6}  {'viol':>6}  {'P':>8}  interval\n")
        for x, res in zip(r.sweep.values, r.results, strict=True):
            out.append(f"{fmt(x):>{w}}  {res.runs:>6}  {res.violations:>6}  {g4(res.p):>8}"
                       f"  [{g4(res.lo)}, {g4(res.hi)}]\n")
        limit = r.results[-1].limit if r.results else None
        if limit is not None:
            out.append(f"INCONCLUSIVE: {limit} at {r.sweep.name}={fmt(r.sweep.values[-1])}"
                       f" ({r.results[-1].runs} runs); the later points were not"
                       " simulated\n")
        if r.threshold is not None:
            out.append(f"exact safe region (synth, {name} free): {r.threshold.text(name)}\n")
        elif r.synth:
            out.append(f"exact safe region (synth, {name} free): not a single bound on"
                       f" {name}, or synthesis did not finish\n")
    out.append("an estimate from random runs, not a proof: use `kvrace check` or"
               " `kvrace prove` for a verdict\n")
    return "".join(out)


def sweep_csv(sweep: Sweep, results: list[SimResult]) -> str:
    """The estimates of a sweep as CSV (``--csv``)."""
    lines = [f"{sweep.name},runs,violations,p,lo,hi"]
    for x, r in zip(sweep.values, results, strict=True):
        lines.append(f"{fmt(x)},{r.runs},{r.violations},{r.p!r},{r.lo!r},{r.hi!r}")
    return "\n".join(lines) + "\n"

"""``kvrace check``: explore every interleaving at concrete parameter values."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
from fractions import Fraction
from typing import TYPE_CHECKING

from checker import api
from checker.cli.ci import refuse_same_file, write_check_reports
from checker.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_VACUOUS,
    EXIT_VIOLATION,
    BadSpec,
    Session,
    check_diagram_path,
    draw_trace,
    load_spec,
    params_of,
    query_name,
    side_output,
    write_json,
)
from checker.diagnostics import Diagnostic
from checker.errors import UsageError
from checker.model import ir
from checker.model import trace as tr
from checker.model.compiled import ParamError
from checker.present import jsonout, text
from checker.results import Verdict

if TYPE_CHECKING:
    from checker.engines.distributed import Cluster, DistStats
    from checker.present.cases import CheckReport

EXIT_OF_VERDICT = {Verdict.HOLDS: EXIT_OK, Verdict.VIOLATED: EXIT_VIOLATION,
                   Verdict.INCONCLUSIVE: EXIT_INCONCLUSIVE, Verdict.ERROR: EXIT_BAD_INPUT,
                   Verdict.UNREACHABLE: EXIT_UNREACHABLE}
"""The exit code of each verdict of ``check``."""


def run(args: argparse.Namespace, session: Session) -> int:
    """Check ``args.spec``; print the verdict, then write the side outputs."""
    refuse_same_file(args)
    try:
        spec = load_spec(args.spec, args)
    except BadSpec as e:
        write_check_reports(args, session.err, _error_report(
            args, "", tuple(e.error.diagnostics), e.error.render()))
        raise
    params = params_of(args)
    limits = session.limits(args)
    _refuse_bad_usage(args, spec)
    cluster = cluster_of(args)
    live_wanted = _liveness_wanted(args, spec, cluster is not None)
    if args.local_time:
        _refuse_local_time(args, cluster is not None, live_wanted)
    live: api.LivenessRun | None = None
    out, err = session.out, session.err
    display = session.progress("check", args.quiet)
    options = dataclasses.replace(session.search_options(args, display), query=args.query)
    try:
        with display:
            display.phase("model and clock pre-pass" if cluster is None
                          else "starting the workers")
            outcome = api.check(spec, params, limits=limits, options=options,
                                cluster=cluster)
            if live_wanted and outcome.verdict in (Verdict.HOLDS, Verdict.UNREACHABLE) \
                    and outcome.raw is not None:
                display.phase("liveness (zone graph, cycles)")
                live = api.check_liveness(outcome.raw[0], limits, args.live_property,
                                          symmetry=options.symmetry)
            if args.explain and outcome.trace is not None and outcome.verdict == api.VIOLATED:
                display.phase("explaining the trace (Z3)")
                explanation = api.explain(outcome)
            else:
                explanation = None
    except ParamError as e:
        err.write(f"{args.spec}: error[KVR400]: {e}\n")
        if args.json:
            out.write(jsonout.document("check", EXIT_BAD_INPUT, {},
                                       [jsonout.error("KVR400", str(e), args.spec)]))
        out.flush()
        bad = Diagnostic("KVR400", str(e), args.spec)
        write_check_reports(args, err, _error_report(
            args, spec.name, (bad,), f"{args.spec}: error[KVR400]: {e}"))
        return EXIT_BAD_INPUT
    code = _liveness_code(EXIT_OF_VERDICT[outcome.verdict], live)
    if args.strict and outcome.vacuous and code == EXIT_OK:
        code = EXIT_VACUOUS
    dist = _dist_stats(outcome)
    # The verdict first: no failure of a side output below can lose or change it.
    if args.json:
        doc = jsonout.check_fields(args.spec, spec, outcome, args.query, explanation,
                                   dist.as_json() if dist is not None else None)
        if live is not None:
            doc["liveness"] = jsonout.liveness_json(live)
        errors = ([jsonout.error_from_text("model-error", outcome.message or "", args.spec)]
                  if outcome.verdict == api.ERROR else [])
        out.write(jsonout.document("check", code, doc, errors))
    else:
        off = outcome.raw[0].symmetry_off if outcome.raw is not None else None
        out.write(text.check_text(spec, outcome, args.query, options.search == "bfs",
                                  explanation, dist.line() if dist is not None else None,
                                  off if options.symmetry else None, live))
    out.flush()
    _side_outputs(args, session, outcome, live)
    if args.junit is not None or args.sarif is not None:
        write_check_reports(args, err, _report(args, spec, outcome, live))
    return code


def _error_report(args: argparse.Namespace, name: str, diagnostics: tuple[Diagnostic, ...],
                  shown: str) -> CheckReport:
    """What ``--junit`` and ``--sarif`` report of a spec that could not be checked."""
    from checker.present.cases import CheckReport

    return CheckReport(args.spec, name, "", Verdict.ERROR, (), diagnostics, shown)


def _report(args: argparse.Namespace, spec: ir.Spec, outcome: api.Outcome,
            live: api.LivenessRun | None) -> CheckReport:
    """What ``--junit`` and ``--sarif`` report of this run: one case per property."""
    from checker.present.cases import CheckReport, check_cases, event_spans

    asked = ([] if args.query is not None or args.no_liveness
             else [lt.name for lt in spec.leadsto
                   if args.live_property in (None, lt.name)])
    cases = check_cases(spec, outcome, live, deadlock=not args.no_deadlock,
                        query=args.query, liveness=asked)
    verdict = outcome.verdict if live is None or live.verdict is Verdict.HOLDS \
        else live.verdict
    shown = {**{c.name: Fraction(c.value) for c in spec.consts}, **outcome.params}
    return CheckReport(args.spec, spec.name, text.param_text(shown), verdict, tuple(cases),
                       events=event_spans(spec))


def _liveness_wanted(args: argparse.Namespace, spec: ir.Spec, distributed: bool) -> bool:
    """Whether ``check`` checks liveness after safety; usage errors for what it cannot."""
    names = [lt.name for lt in spec.leadsto]
    if args.live_property is not None and args.live_property not in names:
        raise UsageError(f"--property: no unbounded liveness property `{args.live_property}`"
                         f" in {spec.path} (it declares: {', '.join(names) or 'none'})")
    if args.no_liveness or not names or args.query is not None:
        return False
    if distributed:
        raise UsageError("--workers/--ray do not check unbounded liveness properties ("
                         + ", ".join(names) + "): add --no-liveness, or run in one process"
                         " (drop --workers/--ray)")
    return True


def _liveness_code(code: int, live: api.LivenessRun | None) -> int:
    """The exit code once liveness is checked: a violation wins, then inconclusive."""
    if live is None:
        return code
    return {Verdict.ERROR: EXIT_BAD_INPUT, Verdict.VIOLATED: EXIT_VIOLATION,
            Verdict.INCONCLUSIVE: EXIT_INCONCLUSIVE}.get(live.verdict, code)


def _refuse_bad_usage(args: argparse.Namespace, spec: ir.Spec) -> None:
    """Refuse, before any work, a diagram format kvrace cannot write and queries the
    spec does not declare."""
    if args.diagram:
        check_diagram_path(args.diagram)
    if args.query is not None:
        query_name(spec, args.query, "--query")
    if args.witness is not None:
        query_name(spec, args.witness, "--witness")
        if args.query is not None and args.witness != args.query:
            raise UsageError(f"--witness {args.witness}: with --query {args.query}, only"
                             f" `reachable {args.query}` is checked")


def _refuse_local_time(args: argparse.Namespace, distributed: bool, liveness: bool) -> None:
    """Refuse what ``--local-time`` cannot do (the engine refuses what the model needs)."""
    if distributed:
        raise UsageError("--local-time explores in one process: drop --workers/--ray")
    if liveness:
        raise UsageError("--local-time does not check unbounded liveness properties: add"
                         " --no-liveness")
    if not args.no_deadlock and args.query is None:
        raise UsageError("--local-time does not preserve deadlocks: add --no-deadlock"
                         " (deadlock freedom is then not checked), or drop --local-time")


def cluster_of(args: argparse.Namespace) -> Cluster | None:
    """The cluster of ``check --workers/--ray``, or None for one process."""
    if args.workers is None and args.ray is None:
        if args.backend is not None:
            raise UsageError(f"--backend {args.backend} needs --workers N")
        return None
    if args.dfs:
        raise UsageError("--workers/--ray explore breadth-first: drop --dfs")
    if args.ray is not None and args.backend == "local":
        raise UsageError("--backend local runs on this machine: drop --ray, or --backend")
    from checker.engines.distributed import Backend, Cluster

    backend = Backend.LOCAL if args.backend in (None, "local") else Backend.RAY
    cluster = Cluster(args.workers, args.ray, backend)
    if not cluster.local and importlib.util.find_spec("ray") is None:
        what = "--ray" if args.ray is not None else "--backend ray"
        raise UsageError(f"{what} needs Ray, which is not installed:"
                         " pip install 'kvrace[ray]'")
    return cluster


def _dist_stats(outcome: api.Outcome) -> DistStats | None:
    """What the distribution of a ``--workers/--ray`` run cost (None for one process)."""
    raw = outcome.raw[1].distributed if outcome.raw is not None else None
    if raw is None:
        return None
    from checker.engines.distributed import DistStats

    return raw if isinstance(raw, DistStats) else None


def _side_outputs(args: argparse.Namespace, session: Session, outcome: api.Outcome,
                  live: api.LivenessRun | None) -> None:
    """``--trace`` and ``--diagram``: the counterexample (a lasso when a liveness property
    fails), or the witness of a query."""
    err = session.err
    trace = outcome.trace
    if trace is None and live is not None:
        trace = next((r.trace for r in live.results if r.trace is not None), None)
    witness = args.witness or args.query
    what = "there is no counterexample"
    if witness is not None:
        trace = outcome.query(witness).trace if outcome.queries else None
        what = f"`reachable {witness}` has no witness"
    if args.trace:
        if trace is None:
            err.write(f"no trace file: {what}\n")
        else:
            found = trace
            side_output(err, args.trace, lambda: write_json(args.trace, tr.to_itf(found)))
    if args.diagram:
        if trace is None:
            err.write(f"no diagram: {what}\n" if witness is not None
                      else "no diagram: there is no counterexample to draw\n")
        else:
            drawn = trace
            side_output(err, args.diagram, lambda: draw_trace(drawn, args.diagram))

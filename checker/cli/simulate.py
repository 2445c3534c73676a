"""``kvrace simulate``: random runs, and the probability that one violates a property
(statistical model checking).  An estimate, never a verdict."""

from __future__ import annotations

import argparse
import os
import time
from fractions import Fraction

from checker import api
from checker.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATION,
    Session,
    load_spec,
    params_of,
    private_folder,
    side_output,
    write_json_in,
)
from checker.cli.values import clip, parse_number
from checker.errors import UsageError
from checker.limits import Budget, Limits, MemoryGuard
from checker.model import ir
from checker.model import trace as tr
from checker.model.compiled import ParamError, SpecModel
from checker.present import jsonout, text
from checker.present.reports import SimReport, Sweep
from checker.simulate import (
    Distribution,
    DistributionError,
    Runner,
    SimConfig,
    SimResult,
    Sprt,
    chernoff_runs,
    parse_distribution,
    run_trace,
    simulate,
)
from checker.simulate.plot import PlotError, sweep_plot


def run(args: argparse.Namespace, session: Session) -> int:
    """Estimate the probability of a violation from random runs."""
    out, err = session.out, session.err
    spec = load_spec(args.spec, args)
    params = params_of(args)
    cfg = sim_config(args, spec)
    runs = _runs(args)
    sweep = sweep_values(args.sweep, spec) if args.sweep else None
    if (args.csv or args.plot) and sweep is None:
        raise UsageError("--csv and --plot go with --sweep")
    if sweep is not None and args.traces:
        raise UsageError("--traces does not go with --sweep")
    if args.traces:
        fd = private_folder(args.traces, create=False)  # refused before any run
        if fd is not None:
            os.close(fd)
    points = [params] if sweep is None else [{**params, sweep.name: v} for v in sweep.values]
    budget = Budget(Limits(None, args.timeout, args.max_memory,
                           session.deadline(args.timeout)), session.started)
    models = []
    with MemoryGuard(args.max_memory):
        for values in points:
            try:
                models.append(SpecModel(spec, values, budget.deadline))
            except ParamError as e:
                err.write(f"{args.spec}: error[KVR400]: {e}\n")
                return EXIT_BAD_INPUT
        results = _simulate_all(args, session, models, cfg, runs, sweep, budget)
    if sweep is not None and len(results) < len(sweep.values):
        sweep = Sweep(sweep.name, sweep.values[:len(results)])  # a limit ended the sweep
    threshold = None
    limited = any(r.limit is not None for r in results)
    if sweep is not None and not args.no_synth and not limited:
        threshold = api.safe_threshold(spec, sweep.name, params, _synth_timeout(session, args))
    report = SimReport(
        model=spec.name,
        shown={k: v for k, v in models[0].values.items() if sweep is None or k != sweep.name},
        cfg=cfg, runs=runs, seed=args.seed, results=results, sweep=sweep,
        threshold=threshold, synth=not args.no_synth and not limited)
    if args.json:
        out.write(jsonout.simulate_document(args.spec, report))
    else:
        out.write(text.simulate_text(report))
    out.flush()
    _side_outputs(args, session, report, models[0])
    if report.any_violation:
        return EXIT_VIOLATION
    return EXIT_INCONCLUSIVE if limited else EXIT_OK


def _synth_timeout(session: Session, args: argparse.Namespace) -> float:
    """How long the sweep's synthesis may take: its usual 60 s, within ``--timeout``."""
    left = session.left(args.timeout)
    return 60.0 if left is None else min(60.0, left)


def _runs(args: argparse.Namespace) -> int:
    """How many runs: ``--runs``, or as many as ``--epsilon``/``--delta`` need (1000 by
    default); a bad ``--sprt`` is refused here, before any run."""
    if (args.epsilon is None) != (args.delta is None):
        raise UsageError("--epsilon and --delta go together")
    if args.epsilon is not None and args.runs is not None:
        raise UsageError("give either --runs or --epsilon/--delta (which set the runs)")
    runs: int = args.runs if args.runs is not None else 1000
    if args.epsilon is not None:
        runs = chernoff_runs(args.epsilon, args.delta)
    if args.sprt is not None:
        try:
            Sprt(args.sprt, args.indifference, 1 - args.confidence, 1 - args.confidence)
        except ValueError as exc:
            raise UsageError(f"--sprt: {exc}") from None
    return runs


def _simulate_all(args: argparse.Namespace, session: Session, models: list[SpecModel],
                  cfg: SimConfig, runs: int, sweep: Sweep | None,
                  budget: Budget) -> list[SimResult]:
    """Simulate each model (one per point of the sweep), with progress lines on stderr;
    a limit ends the simulation where it is (the points after it are not simulated)."""
    err = session.err
    last = [time.monotonic()]

    def progress(done: int, total: int, bad: int) -> None:
        """A progress line every two seconds at most (not with ``--quiet``)."""
        if args.quiet or time.monotonic() - last[0] < 2.0:
            return
        last[0] = time.monotonic()
        err.raw_write(f"kvrace simulate: {done}/{total} runs, {bad} violating\n")
        err.flush()

    results = []
    for i, model in enumerate(models):
        sprt = (Sprt(args.sprt, args.indifference, 1 - args.confidence, 1 - args.confidence)
                if args.sprt is not None else None)
        with Runner(model, cfg, args.jobs, budget) as runner:
            res = simulate(runner, runs, args.seed, args.confidence, args.max_traces, sprt,
                           progress)
        results.append(res)
        if res.limit is not None:
            break
        if sweep is not None and not args.quiet and len(models) > 1:
            err.raw_write(f"kvrace simulate: {sweep.name}={text.fmt(sweep.values[i])}:"
                          f" {res.violations}/{res.runs} violating\n")
    return results


def _side_outputs(args: argparse.Namespace, session: Session, report: SimReport,
                  model: SpecModel) -> None:
    """``--traces``, ``--csv`` and ``--plot``, after the estimate was printed."""
    err = session.err
    results, sweep = report.results, report.sweep
    if args.traces and results[0].examples:

        def write_traces() -> str:
            """Write each violating run as a trace file."""
            folder = private_folder(args.traces)
            assert folder is not None
            try:
                names = [write_json_in(folder, args.traces, f"run-{run.index}.json",
                                       tr.to_itf(run_trace(model, run)))
                         for run in results[0].examples]
            finally:
                os.close(folder)
            return "wrote " + ", ".join(names)

        side_output(err, args.traces, write_traces)
    if sweep is not None and args.csv:
        csv_path: str = args.csv

        def write_csv() -> str:
            """Write the sweep as CSV."""
            try:
                with open(csv_path, "w", encoding="utf-8") as f:
                    f.write(text.sweep_csv(sweep, results))
            except OSError as exc:
                raise UsageError(f"cannot write {csv_path}: {exc.strerror or exc}") from None
            return f"wrote {csv_path}"

        side_output(err, csv_path, write_csv)
    if sweep is not None and args.plot:
        plot_path: str = args.plot

        def write_plot() -> str:
            """Plot the sweep."""
            try:
                sweep_plot(plot_path, sweep.name, sweep.values, results, report.threshold,
                           f"{report.model}: {report.runs} runs per point, seed {report.seed}")
            except PlotError as exc:
                raise UsageError(str(exc)) from None
            return f"wrote {plot_path}"

        side_output(err, plot_path, write_plot)


def sim_config(args: argparse.Namespace, spec: ir.Spec) -> SimConfig:
    """The stochastic semantics of ``--delay``, ``--rate``, ``--time-bound`` and
    ``--max-steps``."""
    declared = [p.name for p in spec.params]
    delays: dict[str, Distribution] = {}
    for given in args.delay:
        if "=" not in given:
            raise UsageError(f"--delay expects NAME=DIST, got {clip(given)}")
        name, _, dist = (x.strip() for x in given.partition("="))
        events = [ev.label for ev in spec.events]
        if "." in name and name not in events:
            raise UsageError(f"--delay: unknown event `{name}` (the spec declares:"
                             f" {', '.join(events) or 'none'})")
        if "." not in name and name not in declared:
            raise UsageError(f"--delay: unknown parameter `{name}` (the spec declares:"
                             f" {', '.join(declared) or 'none'})")
        try:
            delays[name] = parse_distribution(dist)
        except DistributionError as exc:
            raise UsageError(f"--delay {name}: {exc}") from None
    return SimConfig(tuple(delays.items()), args.rate, args.time_bound, args.max_steps)


def sweep_values(given: str, spec: ir.Spec) -> Sweep:
    """The points of ``--sweep NAME=LO:HI:STEP`` (at most 1001)."""
    name, eq, rng = given.partition("=")
    name = name.strip()
    parts = rng.split(":")
    if not eq or len(parts) != 3:
        raise UsageError(f"--sweep expects NAME=LO:HI:STEP, got {clip(given)}")
    if name not in [p.name for p in spec.params]:
        raise UsageError(f"--sweep: unknown parameter `{name}` (the spec declares:"
                         f" {', '.join(p.name for p in spec.params) or 'none'})")
    try:
        lo, hi, step = (parse_number(x) for x in parts)
    except ValueError as exc:
        raise UsageError(f"--sweep {name}: {exc}") from None
    if step <= 0 or hi < lo:
        raise UsageError(f"--sweep {name}: need LO <= HI and STEP > 0")
    if (hi - lo) / step > 1000:
        raise UsageError(f"--sweep {name}: more than 1001 points")
    out: list[Fraction] = []
    v = lo
    while v <= hi:
        out.append(v)
        v += step
    return Sweep(name, out)

"""``kvrace synth``: the exact parameter region in which every property holds."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator, Sequence

from checker import api
from checker.cli.common import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_VIOLATION,
    Session,
    free_params,
    load_spec,
    params_of,
    query_name,
    side_output,
)
from checker.errors import UsageError
from checker.model import ir
from checker.model.interface import TimedModel
from checker.model.trace import fmt_time
from checker.present import jsonout, text
from checker.present.progress import Progress
from checker.present.regionplot import FORMATS, region_plot
from checker.present.reports import SynthReport
from checker.results import Coverage
from checker.smt import synth as sy
from checker.smt.regions import polygons, region_view


@contextlib.contextmanager
def watching_synth(display: Progress) -> Iterator[None]:
    """Show the statistics of every parametric exploration run inside the block."""
    sy.STATS_OBSERVERS.append(display.watch_synth)
    try:
        yield
    finally:
        sy.STATS_OBSERVERS.remove(display.watch_synth)


def require_admitted(model: TimedModel, free: Sequence[str]) -> None:
    """A usage error (KVR309, at the ``assume``) when no value of the free parameters in
    their ranges satisfies the spec's ``assume`` constraints, the others at their values."""
    c = sy.unsatisfiable_constraint(model, free)
    if c is None:
        return
    ranges = ", ".join(f"{p} in {model.params[p].range_text()}" for p in free
                       if model.params[p].range_text())
    fixed = ", ".join(f"{p}={fmt_time(model.values[p])}" for p, _ in c.expr.terms
                      if p not in free)
    raise UsageError(
        f"{c.where}: error[KVR309]: no value of the free parameters"
        + (f" ({ranges})" if ranges else "") + (f" with {fixed}" if fixed else "")
        + f" satisfies `assume {c.text}` and the constraints before it")


def domain_text(model: TimedModel, free: Sequence[str]) -> str:
    """The parameter space synthesis covers: the free parameters' ranges and the spec's
    ``assume`` constraints that mention a free parameter."""
    parts = [f"{p} in {model.params[p].range_text()}" for p in free
             if model.params[p].range_text()]
    seen: list[str] = []
    for c in model.param_constraints:
        if c.where not in seen and any(p in free for p, _ in c.expr.terms):
            seen.append(c.where)
            parts.append(c.text)
    return ", ".join(parts[:len(parts) - len(seen)]) + (
        (", assuming " if len(parts) > len(seen) else "assuming ")
        + " and ".join(parts[len(parts) - len(seen):]) if seen else "")


def run(args: argparse.Namespace, session: Session) -> int:
    """Synthesise the safe parameter region."""
    spec = load_spec(args.spec, args)
    free = free_params(args, spec)
    target = _target(args, spec)
    keep = _projection(args, free)
    if args.plot is not None:
        if keep is not None:
            raise UsageError("--plot draws the region over both free parameters; it does not"
                             " go with --project")
        _check_plot(args.plot, spec, free)
    display = session.progress("synth", args.quiet)
    with display, watching_synth(display):
        display.phase("building the model")
        model = session.model(spec, params_of(args), args.timeout, concrete=False)
        require_admitted(model, free)
        display.phase("clock pre-pass")
        result = sy.explore_parametric(model, free, (), args.max_states,
                                       session.left(args.timeout),
                                       deadlock=not args.no_deadlock, target=target,
                                       merge=not args.no_merge)
        display.phase("simplifying the region (Z3)")
        order = [p.name for p in spec.params]
        try:
            view = region_view(result, target.kind is sy.TargetKind.QUERY, keep, order)
        except ValueError as e:
            raise UsageError(f"--project: {e}") from None
        cov, known, printed = view.coverage, view.known, view.printed
    report = SynthReport(
        model=spec.name, free=free,
        fixed={k: v for k, v in model.values.items() if k not in free},
        ranges=domain_text(model, free),
        complete=result.complete, limit=result.limit,
        region=view.text, smtlib=view.smtlib,
        bad=[[sy.lin_text(c, order) for c in piece] for piece in result.bad.pieces],
        stats=result.stats, no_deadlock=args.no_deadlock,
        liveness=len(spec.leadsto), coverage=cov,
        property=args.property, query=args.query,
        provenance=api.constraint_provenance(spec, printed, order),
        show_provenance=args.provenance,
        project=keep)
    code = _exit_code(result.complete, cov, target.kind is sy.TargetKind.QUERY)
    if args.json:
        session.out.write(jsonout.document("synth", code, jsonout.synth_fields(args.spec,
                                                                               report)))
    else:
        session.out.write(text.synth_text(report))
    if args.plot is not None:
        side_output(session.err, args.plot,
                    lambda: _plot(args.plot, model, free, result, report, known))
    return code


def _projection(args: argparse.Namespace, free: Sequence[str]) -> list[str] | None:
    """The parameters of ``--project`` (free ones, in declaration order), if given."""
    if args.project is None:
        return None
    names = [n.strip() for n in args.project.split(",") if n.strip()]
    for n in names:
        if n not in free:
            raise UsageError(f"--project {n}: not a free parameter (free: {', '.join(free)})")
    if not names:
        raise UsageError("--project needs at least one free parameter")
    return [p for p in free if p in names]


def _check_plot(path: str, spec: ir.Spec, free: Sequence[str]) -> None:
    """Refuse, before any work, a plot that cannot be drawn."""
    if os.path.splitext(path)[1].lower() not in FORMATS:
        raise UsageError(f"--plot {path}: use .svg, .png or .pdf")
    if len(free) != 2:
        raise UsageError(f"--plot needs exactly two free parameters (here: {len(free)});"
                         " choose them with --free A,B")
    params = {p.name: p for p in spec.params}
    for p in free:
        if params[p].lo is None or params[p].hi is None:
            raise UsageError(f"--plot: parameter `{p}` has no bounded range")


def _plot(path: str, model: TimedModel, free: Sequence[str], result: sy.SynthResult,
          report: SynthReport, known: bool) -> str:
    """Draw the region (the pieces found) over the two free parameters."""
    if not known:
        raise UsageError(f"--plot {path}: the synthesis did not finish, no region to draw")
    x, y = free
    px, py = model.params[x], model.params[y]
    assert px.lo is not None and px.hi is not None and py.lo is not None and py.hi is not None
    pieces = polygons(result.bad.pieces, x, y, (px.lo, px.hi, py.lo, py.hi))
    what = f" for `reachable {report.query}`" if report.query else (
        f" for property {report.property}" if report.property else "")
    region_plot(path, x, y, (px.lo, px.hi, py.lo, py.hi), pieces,
                f"{report.model}: synthesis over {x}, {y}{what}", report.region,
                report.query)
    return f"wrote {path}"


def _exit_code(complete: bool, cov: Coverage | None, query: bool = False) -> int:
    """Violated 1 when no value in the ranges is safe (known even from a run a limit cut
    short: every bad value found is a real violation); otherwise 0 when the region is
    exact, 3 (inconclusive) when a limit was hit.  With a query (``cov`` is then the
    reachable region's): unreachable 5 when it is reachable for no value."""
    if query:
        if cov is Coverage.NONE:
            return EXIT_UNREACHABLE
        return EXIT_OK if complete or cov is Coverage.ALL else EXIT_INCONCLUSIVE
    if cov is Coverage.NONE:
        return EXIT_VIOLATION
    return EXIT_OK if complete else EXIT_INCONCLUSIVE


def _target(args: argparse.Namespace, spec: ir.Spec) -> sy.Target:
    """What ``--property`` or ``--query`` asks for (every property by default)."""
    if args.query is not None:
        return sy.Target(sy.TargetKind.QUERY, query_name(spec, args.query, "--query"))
    if args.property is None:
        return sy.EVERY_PROPERTY
    name = args.property
    names = [*(i.name for i in spec.invariants), *(r.name for r in spec.responses)]
    if name in (lt.name for lt in spec.leadsto):
        raise UsageError(f"--property {name}: an unbounded liveness property; synthesis"
                         " covers asserts, invariants, bounded responses and deadlock"
                         " freedom (`kvrace check` checks it at fixed values)")
    if name == "deadlock" and args.no_deadlock:
        raise UsageError("--property deadlock does not go with --no-deadlock")
    if name not in (*names, "deadlock", "assert"):
        raise UsageError(f"--property: no invariant or bounded response `{name}` in"
                         f" {spec.path} (it declares: {', '.join(names) or 'none'};"
                         " also `deadlock` and `assert`)")
    return sy.Target(sy.TargetKind.PROPERTY, name)

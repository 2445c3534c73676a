"""``kvrace synth``: the exact parameter region in which every property holds."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from checker.cli.common import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    Session,
    free_params,
    load_spec,
    params_of,
)
from checker.present import jsonout, text
from checker.present.reports import SynthReport
from checker.progress import Progress
from checker.smt import synth as sy


@contextlib.contextmanager
def watching_synth(display: Progress) -> Iterator[None]:
    """Show the statistics of every parametric exploration run inside the block."""
    sy.STATS_OBSERVERS.append(display.watch_synth)
    try:
        yield
    finally:
        sy.STATS_OBSERVERS.remove(display.watch_synth)


def run(args: argparse.Namespace, session: Session) -> int:
    """Synthesise the safe parameter region."""
    spec = load_spec(args.spec, args)
    free = free_params(args, spec)
    display = session.progress("synth", args.quiet)
    with display, watching_synth(display):
        display.phase("building the model")
        model = session.model(spec, params_of(args), args.timeout)
        display.phase("clock pre-pass")
        result = sy.explore_parametric(model, free, (), args.max_states,
                                       session.left(args.timeout),
                                       deadlock=not args.no_deadlock)
        display.phase("simplifying the region (Z3)")
        cnf = sy.safe_region(result)
    order = [p.name for p in spec.params]
    report = SynthReport(
        model=spec.name, free=free,
        fixed={k: v for k, v in model.values.items() if k not in free},
        ranges=", ".join(f"{p} in {model.params[p].range_text()}" for p in free
                         if model.params[p].range_text()),
        complete=result.complete, limit=result.limit,
        region=sy.region_text(cnf, order),
        smtlib=sy.region_smtlib(cnf, result.ranges, free) if result.complete else None,
        bad=[[sy.lin_text(c, order) for c in piece] for piece in result.bad.pieces],
        stats=result.stats, no_deadlock=args.no_deadlock,
        liveness=len(spec.leadsto))
    code = EXIT_OK if result.complete else EXIT_INCONCLUSIVE
    if args.json:
        session.out.write(jsonout.document("synth", code, jsonout.synth_fields(args.spec,
                                                                               report)))
    else:
        session.out.write(text.synth_text(report))
    return code

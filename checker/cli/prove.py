"""``kvrace prove``: every property, for every parameter value satisfying an
assumption."""

from __future__ import annotations

import argparse
from fractions import Fraction

from checker import api
from checker.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATION,
    Session,
    free_params,
    load_spec,
    params_of,
)
from checker.cli.synth import require_admitted, watching_synth
from checker.diagnostics import SpecError
from checker.engines import Options
from checker.present import jsonout, text
from checker.present.reports import ProveReport
from checker.results import ProofStatus
from checker.smt import synth as sy


def run(args: argparse.Namespace, session: Session) -> int:
    """Prove every property under an assumption on the parameters."""
    out, err = session.out, session.err
    spec = load_spec(args.spec, args)
    free = free_params(args, spec)
    model = session.model(spec, params_of(args), args.timeout, concrete=False)
    require_admitted(model, free)
    try:
        assumption = api.assumption(model, args.assume, free)
    except SpecError as e:
        err.write(e.render() + "\n")
        if args.json:
            out.write(jsonout.document("prove", EXIT_BAD_INPUT, {},
                                       jsonout.diagnostic_errors(e.diagnostics)))
        return EXIT_BAD_INPUT
    display = session.progress("prove", args.quiet)
    witness: api.Outcome | None = None
    with display, watching_synth(display):
        display.phase("clock pre-pass")
        res = sy.prove(model, assumption, free, args.max_states, session.left(args.timeout),
                       deadlock=not args.no_deadlock)
        if res.status is ProofStatus.REFUTED and res.counterexample is not None:
            display.phase("checking the counterexample")
            point = {**model.values, **res.counterexample}
            witness = api.check(spec, point, options=Options(deadlock=not args.no_deadlock))

    def at(values: dict[str, Fraction] | None) -> dict[str, Fraction] | None:
        """A point of the free parameters with the others at their values."""
        return None if values is None else {**model.values, **values}

    report = ProveReport(
        model=spec.name, assume=args.assume, free=free,
        fixed={k: v for k, v in model.values.items() if k not in free},
        status=res.status, witness=witness, counterexample=at(res.counterexample),
        boundary=at(res.boundary), near=at(res.near), outside=at(res.outside),
        vacuous=res.vacuous, limit=res.synth.limit, stats=res.synth.stats,
        no_deadlock=args.no_deadlock,
        liveness=len(spec.leadsto))
    code = _exit_code(report)
    if args.json:
        out.write(jsonout.document("prove", code, jsonout.prove_fields(args.spec, report)))
    else:
        out.write(text.prove_text(report))
    return code


def _exit_code(r: ProveReport) -> int:
    """Proved 0, refuted 1 (a model error at the counterexample refutes too),
    inconclusive 3 (also when the concrete check does not confirm the refutation)."""
    if r.status is ProofStatus.REFUTED:
        return EXIT_VIOLATION if r.confirmed else EXIT_INCONCLUSIVE
    return EXIT_INCONCLUSIVE if r.status is ProofStatus.INCONCLUSIVE else EXIT_OK

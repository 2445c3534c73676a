"""``kvrace schedules``: timed test schedules for the implementation, from the spec's
counterexample."""

from __future__ import annotations

import argparse

from checker import api
from checker.cli.common import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATION,
    Session,
    load_spec,
    params_of,
)
from checker.model.trace import fmt_time
from checker.present import jsonout
from checker.results import Verdict
from checker.validate.schedules import Schedule, from_trace


def run(args: argparse.Namespace, session: Session) -> int:
    """Check the spec; print the schedule of its counterexample (none if it holds).
    Exit 1 with a schedule of a violation, 0 when every property holds."""
    spec = load_spec(args.spec, args)
    params = params_of(args)
    limits = session.limits(args)
    outcome = api.check(spec, params, limits=limits)
    names = {ev.label: tuple(p for p, _ in ev.params) for ev in spec.events}
    schedules: list[Schedule] = []
    if outcome.verdict is Verdict.VIOLATED and outcome.trace is not None:
        schedules.append(from_trace("counterexample", outcome.trace, names))
    code = {Verdict.INCONCLUSIVE: EXIT_INCONCLUSIVE, Verdict.VIOLATED: EXIT_VIOLATION}.get(
        outcome.verdict, EXIT_OK)
    out = session.out
    values = ", ".join(f"{k}={fmt_time(v)}" for k, v in outcome.params.items())
    if args.json:
        out.write(jsonout.document("schedules", code, {
            "spec": args.spec, "model": spec.name,
            "params": {k: fmt_time(v) for k, v in outcome.params.items()},
            "check_verdict": outcome.verdict,
            "schedules": [s.json() for s in schedules]}))
        return code
    out.write(f"model {spec.name}  ({values})\n")
    if code == EXIT_INCONCLUSIVE:
        out.write(f"INCONCLUSIVE: {outcome.limit}; no schedule\n")
        return code
    if not schedules:
        out.write("every property holds: no violation to schedule\n")
        return code
    for s in schedules:
        out.write(f"\nschedule {s.name}: breaks {s.property}: {s.message}\n")
        out.write(s.table() + "\n")
    return code

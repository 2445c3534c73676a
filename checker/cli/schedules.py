"""``kvrace schedules``: timed test schedules for the implementation: a counterexample of
each property the spec breaks, a shortest run firing each event, and the points just
inside and just outside each boundary of the synthesized safe region."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from checker.cli.common import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATION,
    Session,
    free_params,
    load_spec,
    params_of,
)
from checker.errors import UsageError
from checker.limits import Budget, LimitHit, Limits, MemoryGuard
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.model.trace import fmt_time
from checker.present import jsonout
from checker.results import Verdict
from checker.validate import schedules as sc

KINDS = ("violation", "event", "boundary")
"""The values of ``--kind``."""


@dataclass
class _Found:
    """What the command found, in the order it prints it."""

    schedules: list[sc.Schedule] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    holding: list[str] = field(default_factory=list)
    never: list[str] = field(default_factory=list)
    """Events no run fires without breaking a property first."""
    boundary_note: str | None = None
    limit: str | None = None


def _kinds(args: argparse.Namespace) -> set[str]:
    names = {n.strip() for text in args.kind for n in text.split(",") if n.strip()}
    for n in names:
        if n not in KINDS:
            raise UsageError(f"--kind: unknown kind `{n}` (one of {', '.join(KINDS)})")
    if not names:
        names = {"violation", "event"} | ({"boundary"} if args.free else set())
    if "boundary" in names and not args.free:
        raise UsageError("--kind boundary needs --free NAMES: the parameters of the region")
    return names


def _collect(spec: ir.Spec, model: SpecModel, args: argparse.Namespace, limits: Limits,
             budget: Budget, found: _Found) -> None:
    """Fill ``found`` (a limit ends the work where it is: what was found stays)."""
    kinds = _kinds(args)
    free = free_params(args, spec) if args.free else []
    if "violation" in kinds:
        for target in sc.properties(spec):
            sched, result = sc.violation_schedule(model, target, limits)
            if result.verdict == Verdict.INCONCLUSIVE:
                raise LimitHit(result.limit or "a limit was reached")
            if sched is None:
                found.holding.append(target)
            else:
                found.broken.append(target)
                found.schedules.append(sched)
    if "event" in kinds:
        events, found.never = sc.event_schedules(model, budget)
        found.schedules += events
    if "boundary" in kinds:
        left = None if limits.deadline is None else max(limits.deadline - budget.start, 0.0)
        bounds, found.boundary_note = sc.boundaries(spec, dict(model.values), free, left)
        for b in bounds:
            found.schedules += sc.boundary_schedules(spec, b, limits)


def run(args: argparse.Namespace, session: Session) -> int:
    """Print the schedules.  Exit 1 when a property is broken at the given values, 0
    otherwise, 3 when a limit ended the work (with what was found before it)."""
    spec = load_spec(args.spec, args)
    params = params_of(args)
    limits = session.limits(args)
    _kinds(args)
    model = session.model(spec, params, args.timeout)
    budget = Budget(limits, session.started)
    found = _Found()
    with MemoryGuard(limits.max_memory_mb):
        try:
            _collect(spec, model, args, limits, budget, found)
        except LimitHit as lim:
            found.limit = lim.what
    code = EXIT_INCONCLUSIVE if found.limit else EXIT_VIOLATION if found.broken else EXIT_OK
    out = session.out
    values = {k: fmt_time(v) for k, v in model.values.items()}
    if args.json:
        out.write(jsonout.document("schedules", code, {
            "spec": args.spec, "model": spec.name, "params": values,
            "check_verdict": (Verdict.INCONCLUSIVE if found.limit else Verdict.VIOLATED
                              if found.broken else Verdict.HOLDS),
            "broken": found.broken, "holding": found.holding, "never_fired": found.never,
            "boundary_note": found.boundary_note, "inconclusive_reason": found.limit,
            "schedules": [s.json() for s in found.schedules]}))
        return code
    out.write(f"model {spec.name}  ({', '.join(f'{k}={v}' for k, v in values.items())})\n")
    if found.broken or found.holding:
        out.write(f"broken: {', '.join(found.broken) or 'none'}; holding:"
                  f" {', '.join(found.holding) or 'none'}\n")
    for s in found.schedules:
        out.write(f"\n{s.title()}\n{s.table()}\n")
    if found.never:
        out.write(f"\nno run fires {', '.join(found.never)} without breaking a property"
                  " first\n")
    if found.boundary_note:
        out.write(f"\nno boundary schedule: {found.boundary_note}\n")
    if found.limit:
        out.write(f"\nINCONCLUSIVE: {found.limit}; the schedules above are those found"
                  " before it\n")
    return code

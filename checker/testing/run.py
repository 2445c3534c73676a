"""The runs that decide a spec's expectations: ``check`` (then the unbounded liveness
properties, as the command does) and ``synth`` for an expected region."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from checker import api
from checker.engines import Limits
from checker.model import ir
from checker.present import text
from checker.present.cases import PropertyCase, check_cases
from checker.results import Verdict


@dataclass(frozen=True)
class SpecRun:
    """What ``check`` found for one spec: each property's case, the verdict of the
    whole run (liveness included, as ``kvrace check`` gives it) and its text."""

    spec: ir.Spec
    outcome: api.Outcome
    live: api.LivenessRun | None
    cases: tuple[PropertyCase, ...]
    verdict: Verdict
    report: str
    """What ``kvrace check`` prints for this run (the counterexample included)."""


def check_spec(spec: ir.Spec, params: dict[str, Fraction], timeout: float | None
               ) -> SpecRun:
    """Check ``spec`` at ``params`` (safety, then liveness when safety holds), within
    ``timeout`` seconds for each phase.  Raises ParamError for a bad parameter."""
    limits = Limits(timeout=timeout)
    outcome = api.check(spec, params, limits=limits)
    live = None
    names = [lt.name for lt in spec.leadsto]
    if names and outcome.verdict in (Verdict.HOLDS, Verdict.UNREACHABLE) \
            and outcome.raw is not None:
        live = api.check_liveness(outcome.raw[0], Limits(timeout=timeout))
    verdict = outcome.verdict
    if live is not None and live.verdict is not Verdict.HOLDS:
        verdict = live.verdict
    cases = check_cases(spec, outcome, live, liveness=names)
    report = text.check_text(spec, outcome, None, True, None, None, None, live)
    return SpecRun(spec, outcome, live, tuple(cases), verdict, report)


def region_mismatch(spec: ir.Spec, params: dict[str, Fraction], expected: str,
                    timeout: float | None) -> str | None:
    """``None`` when ``synth`` finds exactly the ``expected`` region (equivalent within
    the parameters' ranges), else why not: the region found and a parameter point
    inside one region but not the other."""
    found = api.synth(spec, params, timeout=timeout)
    if not found.complete:
        return f"synthesis inconclusive: {found.limit}"
    point = api.region_difference(found, expected)
    if point is None:
        return None
    values = ", ".join(f"{k}={text.fmt(v)}" for k, v in point.values.items())
    side = "found safe but not expected" if point.in_found else "expected safe but not found"
    return (f"expected the safe region {expected}\n"
            f"found {found.region}\n"
            f"they differ at {values} ({side})")

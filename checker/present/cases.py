"""What a run of ``check`` or ``lint`` says about each property and each file, as
the CI reports (:mod:`checker.present.junit`, :mod:`checker.present.sarif`) write it.

``check`` stops at the first safety violation, so one run decides at most one
violated property: every other safety property is then *not decided* (an
inconclusive case), never reported as holding.  A property holds only when the
exploration finished without breaking it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from checker.diagnostics import Diagnostic, Span
from checker.model import ir
from checker.model import trace as tr
from checker.results import PropertyKind, PropertyRef, QueryStatus, Verdict

if TYPE_CHECKING:
    from checker.api import LivenessOutcome, LivenessRun, Outcome


@dataclass(frozen=True)
class PropertyCase:
    """One property of a spec and what a ``check`` run found about it."""

    ref: PropertyRef
    """The property (its kind and declared name; ``""`` for an event's asserts and for
    deadlock freedom)."""
    title: str
    """How reports name it: ``invariant mutex``, ``assert in decode.land``,
    ``deadlock freedom``, ``liveness served``, ``reachable both_sent``."""
    status: Verdict
    """``holds``, ``violated``, ``unreachable`` (a query never reachable),
    ``inconclusive`` (a limit, or another property's violation, ended the run first) or
    ``error`` (a model run-time error)."""
    message: str
    """One line: what was found (empty when the property holds)."""
    trace: tr.Trace | None = None
    """The counterexample (a lasso for a liveness property)."""
    span: Span | None = None
    """Where the property is declared (an assert: its event)."""

    @property
    def detail(self) -> str:
        """The failure text: the message, then the counterexample step by step."""
        if self.trace is None:
            return self.message
        n = len(self.trace.steps) - 1
        events = f"{n} event{'s' if n != 1 else ''}"
        if self.ref.kind is PropertyKind.LIVENESS:
            return (f"{self.message}\n\nlasso counterexample, {events}:\n"
                    f"{tr.lasso_text(self.trace)}\n")
        return f"{self.message}\n\ncounterexample, {events}:\n{tr.to_text(self.trace)}\n"


@dataclass(frozen=True)
class CheckReport:
    """A ``check`` run for the CI reports: the spec's file as given, its model, the
    parameter values and one case per property."""

    path: str
    model: str
    params: str
    """The parameter values, ``T_prop=2, T_chunk=2``."""
    verdict: Verdict
    cases: tuple[PropertyCase, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    """When the spec did not load: its diagnostics (there is no case then)."""
    rendered: str = ""
    """The diagnostics as ``lint`` prints them."""
    events: dict[str, Span] = field(default_factory=dict, compare=False)
    """Each event's declaration, by the name a trace step gives it (``actor.name``):
    where the SARIF code flow of a counterexample steps."""


@dataclass(frozen=True)
class LintedFile:
    """One file of a ``lint`` run: its model's name when it loads, else its
    diagnostics (and their text as ``lint`` prints them)."""

    path: str
    model: str | None
    diagnostics: tuple[Diagnostic, ...] = ()
    rendered: str = ""


def event_spans(spec: ir.Spec) -> dict[str, Span]:
    """The declaration of each event, by the name a trace step gives it
    (``actor.name``)."""
    return {ev.label: ev.span for ev in spec.events}


def _assert_events(spec: ir.Spec) -> list[ir.Event]:
    """The events whose effect contains an ``assert``, in declaration order."""
    return [ev for ev in spec.events
            if any(isinstance(n, ir.AssertStmt) for n in ir.walk_block(ev.body))]


def _safety_cases(spec: ir.Spec, deadlock: bool) -> list[PropertyCase]:
    """Every safety property ``check`` explores for, undecided yet."""
    undecided = Verdict.INCONCLUSIVE
    out = [PropertyCase(PropertyRef(PropertyKind.INVARIANT, i.name), f"invariant {i.name}",
                        undecided, "", span=i.span) for i in spec.invariants]
    out += [PropertyCase(PropertyRef(PropertyKind.RESPONSE, r.name), f"property {r.name}",
                         undecided, "", span=r.span) for r in spec.responses]
    out += [PropertyCase(PropertyRef(PropertyKind.ASSERT, ev.label), f"assert in {ev.label}",
                         undecided, "", span=ev.span) for ev in _assert_events(spec)]
    if deadlock:
        out.append(PropertyCase(PropertyRef(PropertyKind.DEADLOCK), "deadlock freedom",
                                undecided, ""))
    return out


def _matches(case: PropertyCase, ref: PropertyRef, trace: tr.Trace | None) -> bool:
    """Whether the violation of ``ref`` (shown by ``trace``) is ``case``'s."""
    if case.ref.kind is not ref.kind:
        return False
    if ref.kind is PropertyKind.ASSERT:
        last = trace.steps[-1] if trace is not None and trace.steps else None
        return last is not None and last.event == case.ref.name
    return ref.kind is PropertyKind.DEADLOCK or case.ref.name == ref.name


def _decide_safety(cases: list[PropertyCase], outcome: Outcome) -> list[PropertyCase]:
    """The safety cases once ``outcome`` is known."""
    v = outcome.verdict
    if v in (Verdict.HOLDS, Verdict.UNREACHABLE):
        return [_with(c, Verdict.HOLDS, "") for c in cases]
    if v is Verdict.INCONCLUSIVE:
        return [_with(c, Verdict.INCONCLUSIVE, f"inconclusive: {outcome.limit}")
                for c in cases]
    if v is Verdict.ERROR:
        why = f"not decided: a model error ended the run ({outcome.message})"
        error = PropertyCase(PropertyRef(PropertyKind.OTHER, "model error"), "model error",
                             Verdict.ERROR, f"model error: {outcome.message}",
                             outcome.trace, _place(outcome.message or ""))
        return [error, *(_with(c, Verdict.INCONCLUSIVE, why) for c in cases)]
    ref = outcome.ref or PropertyRef(PropertyKind.OTHER, outcome.prop or "")
    found = f"{outcome.prop}: {outcome.message}"
    why = f"not decided: the exploration stopped at the first violation ({outcome.prop})"
    out: list[PropertyCase] = []
    hit = False
    for c in cases:
        if not hit and _matches(c, ref, outcome.trace):
            hit = True
            out.append(PropertyCase(c.ref, c.title, Verdict.VIOLATED, found, outcome.trace,
                                    c.span))
        else:
            out.append(_with(c, Verdict.INCONCLUSIVE, why))
    if not hit:
        out.insert(0, PropertyCase(ref, outcome.prop or ref.label, Verdict.VIOLATED, found,
                                   outcome.trace))
    return out


_AT = re.compile(r" at \S+:(\d+):(\d+)$")


def _place(message: str) -> Span | None:
    """Where a model run-time error happened (its message ends ``at FILE:LINE:COL``)."""
    m = _AT.search(message)
    if m is None:
        return None
    line, col = int(m.group(1)), int(m.group(2))
    return Span(line, col, line, col + 1)


def _with(case: PropertyCase, status: Verdict, message: str) -> PropertyCase:
    return PropertyCase(case.ref, case.title, status, message, None, case.span)


def _query_cases(spec: ir.Spec, outcome: Outcome, only: str | None) -> list[PropertyCase]:
    """One case per ``reachable`` query checked (``only``: ``--query``'s)."""
    found = {q.name: q for q in outcome.queries}
    status_of = {QueryStatus.REACHABLE: Verdict.HOLDS,
                 QueryStatus.UNREACHABLE: Verdict.UNREACHABLE,
                 QueryStatus.INCONCLUSIVE: Verdict.INCONCLUSIVE}
    out: list[PropertyCase] = []
    for q in spec.queries:
        if only is not None and q.name != only:
            continue
        ref = PropertyRef(PropertyKind.QUERY, q.name)
        got = found.get(q.name)
        status = status_of[got.status] if got is not None else Verdict.INCONCLUSIVE
        message = {Verdict.HOLDS: "",
                   Verdict.UNREACHABLE: f"no reachable state satisfies {q.text}"}.get(
            status, f"not decided: the run ended before `reachable {q.name}` was shown"
            " either way")
        out.append(PropertyCase(ref, f"reachable {q.name}", status, message, span=q.span))
    return out


def _liveness_case(decl: ir.LeadsTo, results: Sequence[LivenessOutcome],
                   live: LivenessRun | None, why_not: str) -> PropertyCase:
    """The case of one liveness declaration from its instances' results."""
    ref = PropertyRef(PropertyKind.LIVENESS, decl.name)
    title = f"liveness {decl.name}"
    if live is None:
        return PropertyCase(ref, title, Verdict.INCONCLUSIVE, why_not, span=decl.span)
    if live.error is not None:
        return PropertyCase(ref, title, Verdict.ERROR, f"model error: {live.error}",
                            span=decl.span)
    for r in results:
        if r.status == Verdict.VIOLATED:
            return PropertyCase(ref, title, Verdict.VIOLATED, f"{r.name}: {r.message}",
                                r.trace, decl.span)
    for r in results:
        if r.status != Verdict.HOLDS:
            return PropertyCase(ref, title, Verdict.INCONCLUSIVE,
                                f"inconclusive: {r.name}: {r.message}", span=decl.span)
    return PropertyCase(ref, title, Verdict.HOLDS, "", span=decl.span)


def check_cases(spec: ir.Spec, outcome: Outcome, live: LivenessRun | None, *,
                deadlock: bool = True, query: str | None = None,
                liveness: Sequence[str] = ()) -> list[PropertyCase]:
    """One case per property a ``check`` run was asked to decide, in the order: safety
    (invariants, bounded responses, the asserts of each event, deadlock freedom), the
    ``reachable`` queries, the unbounded liveness properties.

    ``deadlock``: whether deadlock freedom was checked; ``query``: the one query of
    ``--query`` (then nothing else is checked); ``liveness``: the liveness properties
    that were to be checked after safety (``live`` is their run, ``None`` when safety
    did not hold)."""
    if query is not None:
        return _query_cases(spec, outcome, query)
    cases = _decide_safety(_safety_cases(spec, deadlock), outcome)
    cases += _query_cases(spec, outcome, None)
    why_not = ("not checked: safety does not hold" if outcome.verdict is Verdict.VIOLATED
               else f"not checked: safety is {outcome.verdict}")
    for decl in spec.leadsto:
        if decl.name not in liveness:
            continue
        results = [r for r in (live.results if live is not None else ())
                   if r.name.split("[", 1)[0] == decl.name]
        cases.append(_liveness_case(decl, results, live, why_not))
    return cases

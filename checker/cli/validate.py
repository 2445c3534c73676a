"""``kvrace validate``: is a log of the running system a run of the spec?"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import time
from collections.abc import Callable, Iterator
from fractions import Fraction

from checker.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_DEVIATES,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATION,
    Session,
    check_diagram_path,
    draw_trace,
    free_params,
    load_spec,
    params_of,
    side_output,
)
from checker.errors import UsageError
from checker.limits import Budget, LimitHit, MemoryGuard, TimeAlarm
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.model.trace import fmt_time
from checker.numbers import parse_number
from checker.present import jsonout
from checker.validate.conform import (
    Broken,
    Certainty,
    EventIndex,
    Monitor,
    Outcome,
    Report,
    validate,
)
from checker.validate.log import Entry, LogError, LogLines, Observation, read_json_lines
from checker.validate.mapping import Mapping, TextLog, load_mapping


def _seconds(text: str | None, option: str) -> Fraction:
    if text is None:
        return Fraction(0)
    try:
        value = parse_number(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None
    return value


def _skews(args: argparse.Namespace, model: SpecModel) -> dict[str, Fraction]:
    """``--skew ACTOR[+ACTOR...]=SECONDS``: the most each clock domain (an actor, or
    actors on one machine sharing its clock) is offset from the log's clock."""
    out: dict[str, Fraction] = {}
    actors = list(model.spec.actors)
    seen: set[str] = set()
    for text in args.skew:
        names, eq, value = text.partition("=")
        if not eq:
            raise UsageError(f"--skew expects ACTOR[+ACTOR...]=SECONDS, got {text!r}")
        group = [a.strip() for a in names.split("+")]
        for actor in group:
            if actor not in actors:
                close = difflib.get_close_matches(actor, actors, n=1, cutoff=0.6)
                hint = (f"; did you mean `{close[0]}`?" if close
                        else f" (actors: {', '.join(actors)})")
                raise UsageError(f"--skew: the spec has no actor `{actor}`{hint}")
            if actor in seen:
                raise UsageError(f"--skew: `{actor}` is in two clock domains")
            seen.add(actor)
        seconds = _seconds(value, "--skew")
        if seconds < 0:
            raise UsageError("--skew: an offset bound is 0 or more seconds")
        out["+".join(group)] = seconds
    return out


def _split(text: str) -> list[str]:
    """``EV,EV(A, B),...``: split at the commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    out.append(cur)
    return out


def _endpoint(text: str) -> tuple[bool, Fraction]:
    """One end of ``--start``: a time, or ``first`` with an optional offset."""
    t = text.strip()
    if t.startswith("first"):
        rest = t[len("first"):].strip()
        return True, _seconds(rest, "--start") if rest else Fraction(0)
    return False, _seconds(t, "--start")


def _start(text: str | None) -> tuple[Fraction, Fraction | None,
                                      tuple[Fraction, Fraction | None] | None]:
    """``--start``: ``T``, ``LO:HI`` (the model started at an unknown time between), or
    either relative to the first line (``first-120:first``)."""
    if text is None:
        return Fraction(0), None, None
    lo_text, colon, hi_text = text.partition(":")
    lo_rel, lo = _endpoint(lo_text)
    hi_rel, hi = _endpoint(hi_text) if colon else (lo_rel, lo)
    if lo_rel != hi_rel:
        raise UsageError("--start: give both ends relative to `first`, or neither")
    if hi < lo:
        raise UsageError(f"--start {text}: the window ends before it begins")
    latest = hi if colon and hi != lo else None
    if lo_rel:
        return Fraction(0), None, (lo, latest)
    return lo, latest, None


def _observable(args: argparse.Namespace, index: EventIndex, mapping: Mapping | None
                ) -> frozenset[str]:
    """``--observable``, or every event the mapping names, or every event the log names
    (a first pass over the log, streamed; names the spec lacks are reported, with
    their line, by the second)."""
    names = [n.strip() for text in args.observable for n in _split(text) if n.strip()]
    if names:
        return frozenset(" ".join(n.replace(",", ", ").split()).replace("( ", "(")
                         for n in names)
    if mapping is not None:
        return frozenset(n for n in mapping.events() if n in index.instances)
    seen: set[str] = set()
    known = index.instances
    for line in LogLines(args.log):
        # An event name is an identifier pair: no escapes, so a plain search finds it
        # (a malformed line is reported, with its place, by the main pass).
        for m in _EVENT_FIELD.finditer(line):
            if m.group(1) in known:
                seen.add(m.group(1))
    return frozenset(seen)


_EVENT_FIELD = re.compile(r'"event"\s*:\s*"([A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*)"')


def _entries(args: argparse.Namespace, mapping: Mapping | None, index: EventIndex,
             lines: LogLines) -> Iterator[Entry]:
    if mapping is None:
        return read_json_lines(args.log, lines)
    text = TextLog(mapping, args.log)
    text.domains = {ev: dict(params) for ev, params in index.params.items()}
    return text.entries(lines)


def run(args: argparse.Namespace, session: Session) -> int:
    """Validate the log; print the verdict, then draw the run if asked.  A bad line of
    the log or the mapping is exit 2 with its ``FILE:LINE``."""
    try:
        return _run(args, session)
    except LogError as exc:
        session.err.write(f"{exc}\n")
        session.errors = [jsonout.error("bad-log", exc.message, exc.file,
                                        exc.line if exc.line > 0 else None)]
        return EXIT_BAD_INPUT


def _run(args: argparse.Namespace, session: Session) -> int:
    out, err = session.out, session.err
    spec = load_spec(args.spec, args)
    params = params_of(args)
    limits = session.limits(args)
    if args.diagram:
        check_diagram_path(args.diagram)
    clock_error = _seconds(args.clock_error, "--clock-error")
    if clock_error < 0:
        raise UsageError("--clock-error must be 0 or more seconds")
    start, latest, relative = _start(args.start)
    mapping = load_mapping(args.map) if args.map else None
    model = session.model(spec, params, args.timeout)
    index = EventIndex(model)
    if mapping is not None:
        mapping.check({ev: dict(params) for ev, params in index.params.items()},
                      index.check_name)
    if args.free:
        return _run_free(args, session, model, index, mapping, clock_error,
                         (start, latest, relative))
    begun = time.monotonic()
    budget = Budget(limits, session.started)
    reason: str | None = None
    lines = LogLines(args.log)
    with MemoryGuard(limits.max_memory_mb):
        try:
            with TimeAlarm(budget.deadline, budget.time_limit):
                observable = _observable(args, index, mapping)
                monitor = Monitor(model, args.log, observable, clock_error=clock_error,
                                  start=start, start_latest=latest,
                                  start_after_first=relative, skew=_skews(args, model),
                                  budget=budget, keep_path=bool(args.diagram))
                report = validate(monitor, _entries(args, mapping, index, lines))
        except LimitHit as lim:
            reason = lim.what
            report = monitor.report if "monitor" in locals() else Report(Outcome.CONFORMS)
        report.lines = max(report.lines, lines.read)
    seconds = time.monotonic() - begun
    if reason is not None:
        code = EXIT_INCONCLUSIVE
    elif report.outcome is Outcome.DEVIATES:
        code = EXIT_DEVIATES
    elif report.broken is not None and report.certainty is Certainty.CERTAIN:
        code = EXIT_VIOLATION
    else:
        code = EXIT_OK
    if args.json:
        out.write(jsonout.document("validate", code, _json(args, model, report, reason,
                                                           clock_error, seconds)))
    else:
        out.write(_text(args, report, reason, _clock_of(mapping)))
    if args.diagram and reason is None and report.path is not None:
        trace = _trace(model, report, report.path_start)
        side_output(err, args.diagram, lambda: draw_trace(trace, args.diagram))
    return code


Clock = Callable[[Fraction], str]
"""How a time is shown: seconds, or the log's own date format."""


def _clock_of(mapping: Mapping | None) -> Clock:
    """Times as the log writes them when its mapping parses dates (the seconds after)."""
    fmt = mapping.time_format if mapping is not None else None
    if fmt is None:
        return fmt_time

    def show(t: Fraction) -> str:
        whole = math.floor(t)
        text = time.strftime(fmt, time.gmtime(whole))
        frac = t - whole
        if frac:
            text += fmt_time(frac).lstrip("0")
        return text

    return show


def _run_free(args: argparse.Namespace, session: Session, model: SpecModel,
              index: EventIndex, mapping: Mapping | None, clock_error: Fraction,
              start: tuple[Fraction, Fraction | None, tuple[Fraction, Fraction | None] | None]
              ) -> int:
    """``--free``: the parameter region the log implies (polyhedra, :mod:`checker.smt`)."""
    from checker.smt.conform import RegionMonitor, RegionReport, validate_region

    if args.diagram:
        raise UsageError("--diagram does not go with --free")
    if args.skew:
        raise UsageError("--skew does not go with --free yet")
    free = free_params(args, model.spec)
    limits = session.limits(args)
    budget = Budget(limits, session.started)
    begun = time.monotonic()
    reason: str | None = None
    observable: frozenset[str] = frozenset()
    report = RegionReport(Outcome.CONFORMS, tuple(free))
    lines = LogLines(args.log)
    with MemoryGuard(limits.max_memory_mb):
        try:
            with TimeAlarm(budget.deadline, budget.time_limit):
                observable = _observable(args, index, mapping)
                monitor = RegionMonitor(model, args.log, observable, free,
                                        clock_error=clock_error, start=start[0],
                                        start_latest=start[1], start_after_first=start[2],
                                        budget=budget)
                report = monitor.report
                report = validate_region(monitor, _entries(args, mapping, index, lines))
        except LimitHit as lim:
            reason = lim.what
        report.lines = max(report.lines, lines.read)
    clock = _clock_of(mapping)
    names = ", ".join(free)
    if reason is not None:
        code, text = EXIT_INCONCLUSIVE, f"INCONCLUSIVE: {reason}"
    elif report.outcome is Outcome.DEVIATES:
        code = EXIT_DEVIATES
        obs = report.deviation
        if obs is None:
            text = f"DEVIATES: no value of {names} within their ranges makes {args.log} a run"
        else:
            prefix = (f"the longest matching prefix ends at line {report.matched}"
                      if report.matched else "no line matches")
            text = (f"DEVIATES at {args.log}:{obs.line}: {_observed(obs, clock)} is not"
                    f" possible for any value of {names} within their ranges; {prefix}")
    else:
        certain = report.broken is not None and report.certainty is Certainty.CERTAIN
        code = EXIT_VIOLATION if certain else EXIT_OK
        verb = "is" if report.observations == 1 else "are"
        text = (f"CONFORMS: the {_count(report.observations, 'event')} of {args.log} {verb}"
                f" a run of the spec exactly when {report.text()}")
        if report.broken is not None:
            text += "\n" + _violation_line(args.log, report.broken, report.certainty, True)
    ranges = "; ".join(f"{p} in {model.params[p].range_text()}" for p in free
                       if model.params[p].range_text())
    if args.json:
        session.out.write(jsonout.document("validate", code, {
            "spec": args.spec, "model": model.name, "log": args.log, "map": args.map,
            "conformance": None if reason is not None else report.outcome,
            "params": {k: fmt_time(v) for k, v in model.values.items() if k not in free},
            "free": list(free),
            "region": report.text() if code in (EXIT_OK, EXIT_VIOLATION) else None,
            "observable": sorted(observable), "clock_error": fmt_time(clock_error),
            "start": args.start or "0", "lines": report.lines,
            "observations": report.observations, "runs": 1,
            "matched_until": report.matched, "deviation": None if report.deviation is None
            else {"line": report.deviation.line, "event": report.deviation.show(),
                  "t": fmt_time(report.deviation.time),
                  "message": text, "possible": [], "horizon": fmt_time(report.deviation.time)},
            "violation": None if reason is not None else _violation_json(
                report.broken, report.certainty),
            "max_states": report.max_states, "transitions": 0,
            "seconds": round(time.monotonic() - begun, 3), "inconclusive_reason": reason}))
    else:
        session.out.write(text + "\n")
        if ranges:
            session.out.write(f"  within {ranges}\n")
    return code


def _violation_line(log: str, b: Broken, certainty: Certainty | None, free: bool = False
                    ) -> str:
    """The line saying which property the log shows broken, and how surely."""
    where = f"{log}:{b.line}" + (f" ({b.context})" if b.context else "")
    if certainty is Certainty.CERTAIN:
        scope = " for every value of that region," if free else ""
        return (f"VIOLATED:{scope} this log contains a violation of {b.property} at"
                f" {where}: {b.message}")
    scope = " (for some values of the region)" if free else ""
    return (f"warning: some runs consistent with this log break {b.property} at {where}:"
            f" {b.message}; others do not{scope}")


def _violation_json(b: Broken | None, certainty: Certainty | None) -> dict[str, object] | None:
    """The ``violation`` object of the JSON output."""
    return None if b is None else {
        "line": b.line, "property": b.property, "property_kind": b.kind,
        "message": b.message, "event": b.event, "certainty": certainty}


def _observed(obs: Observation, clock: Clock = fmt_time) -> str:
    """A line as a deviation names it: ```decode.release(A)` at t=6``, or, for a line with
    a time only, ``no observable event until t=63``."""
    if not obs.event:
        return f"no observable event until t={clock(obs.time)}"
    return f"`{obs.show()}` at t={clock(obs.time)}"


def _possible_text(report: Report, clock: Clock = fmt_time) -> str:
    dev = report.deviation
    assert dev is not None
    if not dev.possible:
        return (f"no observable event was possible next (looked until"
                f" t={clock(dev.horizon)})")
    parts = []
    for p in dev.possible:
        if p.latest is None:
            when = f"from t={clock(p.earliest)}"
        elif p.latest == p.earliest:
            when = f"at t={clock(p.earliest)}"
        else:
            when = f"at t in [{clock(p.earliest)}, {clock(p.latest)}]"
        parts.append(f"`{p.event}` {when}")
    return "possible next events were " + ", ".join(parts)


def _text(args: argparse.Namespace, report: Report, reason: str | None,
          clock: Clock = fmt_time) -> str:
    lines: list[str] = []
    if reason is not None:
        where = (f"{args.log} matches the spec up to line {report.matched}"
                 if report.matched else f"before any line of {args.log} was matched")
        lines.append(f"INCONCLUSIVE: {reason}; {where}")
        return "\n".join(lines) + "\n"
    if report.outcome is Outcome.DEVIATES:
        dev = report.deviation
        assert dev is not None
        obs = dev.observation
        prefix = (f"the longest matching prefix ends at line {dev.matched}" if dev.matched
                  else "no line matches")
        lines.append(f"DEVIATES at {args.log}:{dev.line}: {_observed(obs, clock)} is not"
                     " possible here;"
                     f" {_possible_text(report, clock)}; {prefix}")
    else:
        verb = "is" if report.observations == 1 else "are"
        what = (f" in {report.runs} runs {verb} runs" if report.runs > 1 else f" {verb} a run")
        lines.append(f"CONFORMS: the {_count(report.observations, 'event')} of"
                     f" {args.log}{what} of the spec")
    b = report.broken
    if b is not None and report.outcome is Outcome.CONFORMS:
        lines.append(_violation_line(args.log, b, report.certainty))
    if report.observations == 0 and report.outcome is Outcome.CONFORMS:
        why = ("no line matches a regex of the mapping" if args.map
               else "it has no event line")
        lines.append(f"warning: {args.log} shows nothing: {why}")
    lines.append(f"  {_count(report.lines, 'line')}, {_count(report.observations, 'event')},"
                 f" at most {_count(report.max_states, 'symbolic state')} at once,"
                 f" observable: {', '.join(report.observable) or 'none'}")
    return "\n".join(lines) + "\n"


def _count(n: int, word: str) -> str:
    """``1 line``, ``2 lines``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _json(args: argparse.Namespace, model: SpecModel, report: Report, reason: str | None,
          clock_error: Fraction, seconds: float) -> dict[str, object]:
    dev = report.deviation
    deviation = None
    if dev is not None and reason is None:
        deviation = {
            "line": dev.line, "event": dev.observation.show(),
            "t": fmt_time(dev.observation.time),
            "message": f"{_observed(dev.observation)} is not possible here;"
                       f" {_possible_text(report)}",
            "possible": [{"event": p.event, "earliest": fmt_time(p.earliest),
                          "latest": None if p.latest is None else fmt_time(p.latest)}
                         for p in dev.possible],
            "horizon": fmt_time(dev.horizon)}
    violation = None if reason is not None else _violation_json(report.broken,
                                                                report.certainty)
    return {
        "spec": args.spec, "model": model.name, "log": args.log, "map": args.map,
        "conformance": None if reason is not None else report.outcome,
        "params": {k: fmt_time(v) for k, v in model.values.items()},
        "observable": list(report.observable), "clock_error": fmt_time(clock_error),
        "start": args.start or "0", "lines": report.lines,
        "observations": report.observations, "runs": report.runs,
        "matched_until": report.matched, "deviation": deviation, "violation": violation,
        "max_states": report.max_states, "transitions": report.transitions,
        "seconds": round(seconds, 3), "inconclusive_reason": reason,
    }


def _trace(model: SpecModel, report: Report, start: Fraction) -> tr.Trace:
    """The run the log is consistent with as a trace, for the diagram: observed events
    at their logged times, an unobserved one at the time of the next line read (it
    happened no later)."""
    assert report.path is not None
    states = list(model.initial_states()[:1])
    events: list[object] = [None]
    receives: list[object] = [None]
    failures: list[str | None] = [None]
    labels = ["initial"]
    times: list[Fraction] = [start]
    pending: list[int] = []
    for step in report.path:
        prev = states[-1]
        events.append(model.instance(step.event))
        receives.append(model.receive_of(step.event, prev))
        edge = next((e for e in model.edges(prev)
                     if e.event == step.event and e.target == step.state), None)
        failures.append(edge.failure if edge is not None else None)
        labels.append(model.event_names[step.event])
        states.append(step.state)
        if step.time is None:
            pending.append(len(times))
            times.append(Fraction(0))
        else:
            for k in pending:
                times[k] = step.time
            pending = []
            times.append(step.time)
    for k in pending:
        times[k] = report.path_end if report.path_end is not None else times[k - 1]
    b = report.broken
    dev = report.deviation
    verdict: str
    if dev is not None:
        verdict = (f"the log deviates at line {dev.line}:"
                   f" {_observed(dev.observation).replace('`', '')} is not possible after"
                   " this run")
    elif b is not None:
        verdict = jsonout.VIOLATED
    else:
        verdict = f"the log conforms: a run of the spec ({report.observations} events)"
    return tr.build(model.spec, model.values, verdict, b.name if b else None,
                    b.message if b else None, labels, states, events,  # type: ignore[arg-type]
                    receives, failures, times)  # type: ignore[arg-type]

"""``kvrace view``."""

from __future__ import annotations

import argparse
from typing import Any

from checker import api
from checker.cli.common import EXIT_BAD_INPUT, EXIT_OK, Session, load_spec, params_of
from checker.cli.tracefile import read_trace
from checker.errors import UsageError
from checker.model.compiled import ParamError, SpecModel
from checker.model.trace import Trace
from checker.present.text import liveness_verdict_text, verdict_text
from checker.results import Verdict
from checker.view import page, server, steps


def run(args: argparse.Namespace, session: Session) -> int:
    """Step through a counterexample in a browser, or write it as one HTML file."""
    out, err = session.out, session.err
    spec = load_spec(args.spec, args)
    overrides = params_of(args)
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port: {args.port} is not a port number (0 to 65535)")
    live: api.LivenessRun | None = None
    try:
        trace: Trace | None
        if args.trace:
            trace = read_trace(args.trace)
            known = {p.name for p in spec.params}
            model = SpecModel(spec, {**{k: v for k, v in trace.params.items() if k in known},
                                     **overrides})
        else:
            limits = session.limits(args)
            outcome = api.check(spec, overrides, limits=limits)
            trace = outcome.trace
            model = outcome.raw[0] if outcome.raw is not None else SpecModel(spec, overrides)
            if trace is None and spec.leadsto and outcome.raw is not None and \
                    outcome.verdict in (Verdict.HOLDS, Verdict.UNREACHABLE):
                # Safety holds: the lasso of a liveness property that fails, if one does.
                live = api.check_liveness(model, limits)
                trace = next((r.trace for r in live.results if r.trace is not None), None)
            out.write((liveness_verdict_text(live) or verdict_text(outcome)) + "\n")
    except ParamError as e:
        err.write(f"{args.spec}: error[KVR400]: {e}\n")
        return EXIT_BAD_INPUT
    try:
        run = steps.run_of_trace(model, trace) if trace is not None else steps.Run(model)
    except steps.RunError as exc:
        where = args.trace or args.spec
        raise UsageError(f"{where}: cannot replay the trace on {args.spec}: {exc}") from None
    check = steps.check_info(trace) if trace is not None else None
    if check is not None and not args.trace and outcome.verdict is Verdict.VIOLATED \
            and outcome.raw is not None and spec.params:
        check["explain"] = _explanation(outcome)
    if check is None and not args.trace:
        message = outcome.limit
        if live is not None and live.verdict != Verdict.HOLDS:
            message = live.error or live.limit or next(
                (f"{r.name}: {r.message}" for r in live.results if r.status == live.verdict),
                None)
        check = {"verdict": live.verdict if live is not None else outcome.verdict,
                 "property": None, "message": message, "violating": None}
    view = steps.view_json(run)
    start = _start_step(args.step, view, check)
    if args.html:
        text = page.page_html(view, check, live=False, start=start)
        try:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {args.html}: {exc.strerror or exc}") from None
        out.write(f"wrote {args.html}\n")
        return EXIT_OK
    try:
        srv = server.make_server(model, view, check, args.port, start=start)
    except OSError as exc:
        raise UsageError(f"cannot serve on 127.0.0.1:{args.port}:"
                         f" {exc.strerror or exc}") from None
    try:
        out.write(f"kvrace view: {spec.name} at {srv.url}  (Ctrl-C stops)\n")
        out.flush()
        srv.serve_forever()
    finally:
        srv.server_close()
    return EXIT_OK


def _explanation(outcome: api.Outcome) -> dict[str, Any]:
    """For the page: the parameter region in which the counterexample's sequence of
    events is possible (``check --explain``), and each of its constraints with the
    model elements whose bounds mention its parameters (file:line)."""
    found = api.explanation(outcome)
    return {"region": found.text,
            "provenance": [{"constraint": c, "sources": [s.describe() for s in srcs]}
                           for c, srcs in found.provenance]}


def _start_step(text: str, view: dict[str, Any], check: dict[str, Any] | None) -> int | str:
    """The step ``--step`` names: a number within the run, or ``race``."""
    last = len(view["steps"]) - 1
    if text in ("race", "lasso"):
        if check is None or check.get("violating") is None:
            raise UsageError(f"--step {text}: the run shown has no violating step")
        return "race"
    if not (text.isascii() and text.isdigit()):
        raise UsageError(f"--step: expected a step number or `race`, got {text!r}")
    n = int(text)
    if n > last:
        raise UsageError(f"--step {n}: the run has steps 0 to {last}")
    return n

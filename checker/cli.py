"""The ``kvrace`` command line.

Exit codes (the same for every subcommand):

* 0 — the spec is fine / every property holds / proved; ``simulate``: no violation
  was sampled (an estimate, never "holds");
* 1 — a violation was found (with its trace); ``simulate``: a violation was sampled;
* 2 — bad input or usage: a broken spec, an unknown parameter, a missing file;
* 3 — inconclusive: a limit was hit (states, time, memory) or the solver said unknown;
* 70 — internal error: an exception escaped (a bug in kvrace) or memory ran out; never
  a verdict;
* 130 / 143 — interrupted by SIGINT (Ctrl-C) / SIGTERM; one line says so.

The verdict is printed first.  A side output that fails afterwards (``--trace``,
``--diagram``, a closed or full stdout) is a warning on stderr; the exit code
stays the verdict's.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from checker.diagnostics import SpecError, printable
from checker.explorer import Limits, Options, Stats
from checker.model import ir
from checker.model.interface import LimitReached, ModelRuntimeError, Undecided

if TYPE_CHECKING:
    from checker.progress import Progress

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 3
EXIT_VACUOUS = 4
"""``check --strict``: every property holds, but part of the model was never exercised."""
EXIT_UNREACHABLE = 5
"""``check``: every property holds, but a ``reachable`` query is never reachable (with
``--query NAME``: that query is never reachable)."""
EXIT_INTERNAL = 70
"""An internal error (a bug in kvrace, or out of memory): never a verdict."""
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
"""Interrupted by SIGINT (Ctrl-C) or SIGTERM: 128 + the signal number."""


class UsageError(Exception):
    """A command-line mistake: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kvrace",
        description="Model checking of release protocols for remotely written memory.",
        epilog="exit codes: 0 holds, 1 violation, 2 bad input, 3 inconclusive,"
        " 4 vacuous (check --strict), 5 a `reachable` query never reachable (check),"
        " 70 internal error, 130 SIGINT, 143 SIGTERM",
    )
    p.add_argument("--version", action=_VersionAction, nargs=0, dest="show_version",
                   default=False, help="print kvrace's version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    lint = sub.add_parser("lint", help="check specs for errors; print diagnostics")
    lint.add_argument("specs", nargs="+", metavar="SPEC")
    lint.add_argument("--json", action="store_true", help="print the result as JSON")
    show = sub.add_parser("show", help="summarise a spec: types, parameters, actors, ...")
    show.add_argument("spec", metavar="SPEC")
    show.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_param_args(show)

    check = sub.add_parser(
        "check",
        help="explore every interleaving and check every property",
        description="Explore the zone graph of SPEC at concrete parameter values and check"
        " every assert, invariant, bounded-response property and deadlock freedom; then,"
        " if they hold, every unbounded liveness property (`P leadsto Q` without"
        " `within`, `always eventually Q`: a lasso counterexample)."
        " Exit 0 = every property holds, 1 = violation (with a shortest trace),"
        " 2 = bad input, 3 = inconclusive (a limit was hit), 5 = every property holds but"
        " a `reachable` query is never reachable.",
    )
    check.add_argument("spec", metavar="SPEC")
    _add_param_args(check)
    check.add_argument("--json", action="store_true", help="print the result as JSON")
    check.add_argument("--trace", metavar="FILE", help="write the trace as ITF-shaped JSON")
    check.add_argument("--diagram", metavar="FILE",
                       help="write the counterexample diagram (.dot, .svg, .png or .pdf)")
    check.add_argument("--explain", action="store_true",
                       help="print the parameter region in which the counterexample's"
                       " sequence of events is feasible")
    check.add_argument("--strict", action="store_true",
                       help="a vacuous HOLDS (an event that never fired, a deadline never"
                       " active, a response never triggered) exits with code 4")
    _add_query_args(check)
    _add_liveness_args(check)
    _add_search_args(check)
    _add_cluster_args(check)

    prove = sub.add_parser(
        "prove",
        help="prove every property for all parameter values satisfying an assumption",
        description="Parametric zone exploration (EFsynth): every assert, invariant and"
        " bounded-response property, and deadlock freedom, holds for every valuation of the"
        " free parameters inside their declared ranges that satisfies --assume.  Complete"
        " when exploration finishes; a limit gives inconclusive (exit 3), never proved."
        "  Exit 0 = proved, 1 = counterexample inside the assumption, 2 = bad input,"
        " 3 = inconclusive.",
    )
    prove.add_argument("spec", metavar="SPEC")
    prove.add_argument("--assume", required=True, metavar="CONSTRAINT",
                       help='linear constraint(s) on parameters, e.g. "T_hold > T_prop + T_flight"')
    _add_free_args(prove)
    prove.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_limit_args(prove)
    prove.add_argument("--no-deadlock", action="store_true",
                       help="do not require deadlock freedom")
    prove.add_argument("--quiet", "-q", action="store_true", help="no progress display")

    synth = sub.add_parser(
        "synth",
        help="synthesise the exact parameter region in which every property holds",
        description="Parametric zone exploration (EFsynth) over the free parameters (by"
        " default every parameter with a declared range): the exact set of valuations inside"
        " the ranges for which every assert, invariant and bounded-response property holds"
        " and the model is free of deadlocks (time-locks included)."
        " Complete when exploration finishes; a limit gives inconclusive (exit 3)."
        "  Exit 0 = region computed, 2 = bad input, 3 = inconclusive.",
    )
    synth.add_argument("spec", metavar="SPEC")
    _add_free_args(synth)
    synth.add_argument("--json", action="store_true",
                       help="print the result as JSON, with the region in SMT-LIB")
    _add_limit_args(synth)
    synth.add_argument("--no-deadlock", action="store_true",
                       help="leave deadlock freedom out of the region")
    synth.add_argument("--quiet", "-q", action="store_true", help="no progress display")

    draw = sub.add_parser("draw", help="draw a trace file (from check --trace) as a diagram")
    draw.add_argument("trace", metavar="TRACE.json")
    draw.add_argument("-o", "--output", required=True, metavar="FILE",
                      help="output file: .dot, .svg, .png or .pdf")
    draw.add_argument("--json", action="store_true", help="print the result as JSON")

    _add_export_parser(sub)
    graph = sub.add_parser("graph", help="draw or export the explored state graph")
    graph.add_argument("spec", metavar="SPEC")
    _add_param_args(graph)
    graph.add_argument("-o", "--output", required=True, metavar="FILE",
                       help="output file: .dot, .svg, .png or .pdf (drawn); .graphml or"
                            " .gexf (the graph as data)")
    graph.add_argument("--max-nodes", type=positive_int, default=300, metavar="N",
                       help="refuse to draw more symbolic states than this (default 300)")
    graph.add_argument("--zones", action="store_true", help="print each node's zone")
    graph.add_argument("--no-symmetry", action="store_true")
    graph.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                       help="stop (inconclusive) after this many seconds")
    graph.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_view_parser(sub)
    _add_simulate_parser(sub)
    return p


def _add_view_parser(sub: Any) -> None:
    view = sub.add_parser(
        "view",
        help="step through a counterexample and simulate runs in a web browser",
        description="Serve an interactive viewer on 127.0.0.1 (a free port unless --port):"
        " the counterexample of SPEC (or the trace of --trace) step by step, with the state,"
        " the clocks and the zone, and a simulator that fires the events enabled at any"
        " step.  With --html, write the step-through as one self-contained HTML file"
        " instead (no server, works offline).  Ctrl-C stops the server.",
    )
    view.add_argument("spec", metavar="SPEC")
    _add_param_args(view)
    view.add_argument("--trace", metavar="TRACE.json",
                      help="show this trace (from check --trace) instead of checking SPEC;"
                      " its parameter values are used unless -p overrides them")
    view.add_argument("--html", metavar="FILE",
                      help="write a self-contained HTML viewer to FILE and exit")
    view.add_argument("--port", type=int, default=0, metavar="N",
                      help="serve on this port (default: a free one)")
    _add_limit_args(view)
    view.set_defaults(max_memory=None)


class _VersionAction(argparse.Action):
    """``--version``: the version is read from the package metadata only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        namespace.show_version = True


def version() -> str:
    """The installed package's version (its metadata), or the source tree's."""
    from importlib import metadata

    try:
        return metadata.version("kvrace")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        from checker import __version__

        return __version__


def _make_parent(path: str) -> None:
    """Create the folder an output file goes to (``out/`` in ``--diagram out/x.svg``)."""
    parent = os.path.dirname(path)
    if parent:
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _add_export_parser(sub: Any) -> None:
    export = sub.add_parser(
        "export", help="translate a spec into UPPAAL's XML or TChecker's format",
        description="Unfold the spec's discrete states into one timed automaton and write"
                    " it for UPPAAL (XML, with the query E<> Model.violation) and/or"
                    " TChecker (reachability of the label `bad`).")
    export.add_argument("spec", metavar="SPEC")
    _add_param_args(export)
    export.add_argument("--uppaal", metavar="FILE.xml", help="write UPPAAL's XML here")
    export.add_argument("--tchecker", metavar="FILE.tck", help="write TChecker's format here")
    export.add_argument("--max-locations", type=positive_int, metavar="N",
                        help="refuse to unfold more discrete states (default 20000)")
    export.add_argument("--json", action="store_true", help="print the result as JSON")


def _add_free_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--free", action="append", default=[], metavar="NAMES",
                   help="comma-separated parameters to treat as unknown (default: every"
                   " parameter with a declared range); the others stay at their defaults")
    _add_param_args(p)


def _add_param_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="set a timing parameter or a structural constant (repeatable);"
                   " others keep their defaults")


def positive_int(text: str) -> int:
    """An option value that counts something: a whole number, at least 1."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {_clip(text)}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {_clip(text)}")
    return value


def positive_seconds(text: str) -> float:
    """A time limit: a finite number of seconds, more than 0."""
    try:
        value = float(parse_number(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds, got {_clip(text)}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {_clip(text)}")
    return value


def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("distribution (needs Ray: pip install 'kvrace[ray]')")
    g.add_argument("--workers", type=positive_int, metavar="N",
                   help="explore in N processes (a local Ray instance; breadth-first, the"
                   " same verdict and trace as one process)")
    g.add_argument("--ray", metavar="ADDRESS",
                   help="explore on the Ray cluster at ADDRESS (auto: the one started here"
                   " with `ray start --head`; ray://HOST:10001: a remote head), one worker"
                   " per CPU unless --workers says")


def _cluster(args: argparse.Namespace) -> Any:
    """The cluster of ``check --workers/--ray``, or None for one process."""
    if args.workers is None and args.ray is None:
        return None
    if args.dfs:
        raise UsageError("--workers/--ray explore breadth-first: drop --dfs")
    import importlib.util

    from checker.explorer.distributed import Cluster

    if importlib.util.find_spec("ray") is None:
        raise UsageError("--workers and --ray need Ray, which is not installed:"
                         " pip install 'kvrace[ray]'")
    return Cluster(args.workers, args.ray)


def _add_limit_args(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--max-states", type=positive_int, metavar="N",
                   help="stop (inconclusive) after storing N symbolic states")
    p.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                   help="stop (inconclusive) after this many seconds")


def _add_query_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--query", metavar="NAME",
                   help="check only the query `reachable NAME`: stop at its first witness"
                   " (exit 0), or exit 5 if it is never reachable; no other property is"
                   " checked")
    p.add_argument("--witness", metavar="NAME",
                   help="--trace and --diagram write the witness of `reachable NAME`"
                   " instead of the counterexample")


def _add_liveness_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-liveness", action="store_true",
                   help="do not check the unbounded liveness properties (`P leadsto Q`"
                   " without `within`, `always eventually Q`)")
    p.add_argument("--property", metavar="NAME", dest="live_property",
                   help="of the unbounded liveness properties, check only NAME")


def _liveness_wanted(args: argparse.Namespace, spec: ir.Spec, cluster: object) -> bool:
    """Whether ``check`` checks liveness after safety; usage errors for what it cannot."""
    names = [lt.name for lt in spec.leadsto]
    if args.live_property is not None and args.live_property not in names:
        raise UsageError(f"--property: no unbounded liveness property `{args.live_property}`"
                         f" in {spec.path} (it declares: {', '.join(names) or 'none'})")
    if args.no_liveness or not names or args.query is not None:
        return False
    if cluster is not None:
        raise UsageError("--workers/--ray do not check unbounded liveness properties ("
                         + ", ".join(names) + "): add --no-liveness, or run in one process"
                         " (drop --workers/--ray)")
    return True


def _run_liveness(args: argparse.Namespace, outcome: Any, limits: Any, display: Any
                  ) -> Any:
    """The liveness check of ``check``, after safety held (None when it is not run)."""
    from checker import api

    if outcome.verdict not in (api.HOLDS, api.UNREACHABLE) or outcome.raw is None:
        return None
    display.phase("liveness (zone graph, cycles)")
    return api.check_liveness(outcome.raw[0], limits, args.live_property)


def _liveness_code(code: int, live: Any) -> int:
    """The exit code once liveness is checked: a violation wins, then inconclusive."""
    from checker import api

    if live is None:
        return code
    if live.verdict == api.ERROR:
        return EXIT_BAD_INPUT
    if live.verdict == api.VIOLATED:
        return EXIT_VIOLATION
    if live.verdict == api.INCONCLUSIVE:
        return EXIT_INCONCLUSIVE
    return code


def _liveness_verdict_text(outcome: Any, live: Any) -> str | None:
    """The verdict line when liveness changes it (None: the safety verdict's line)."""
    from checker import api

    if live is None or live.verdict == api.HOLDS:
        return None
    if live.error is not None:
        return f"MODEL ERROR: {live.error}"
    bad = next(r for r in live.results if r.status == live.verdict)
    if live.verdict == api.VIOLATED:
        return f"VIOLATED: {bad.name}: {bad.message}"
    return (f"INCONCLUSIVE: {bad.name}: {bad.message}; the safety properties hold"
            " (exploration complete)")


def _liveness_text(live: Any) -> str:
    """The liveness section of ``check``'s text output."""
    from checker import api
    from checker.model import trace as tr

    if live is None:
        return ""
    lines = ["", "liveness (infinite time-divergent runs, and runs that end in a deadlock):"]
    for r in live.results:
        text = {api.HOLDS: "holds", api.VIOLATED: "VIOLATED",
                api.INCONCLUSIVE: "inconclusive"}[r.status]
        lines.append(f"  {r.name}: {text}" + (f" ({r.message})" if r.status
                                                == api.INCONCLUSIVE else ""))
    shown = next((r for r in live.results if r.trace is not None), None)
    if shown is not None and shown.trace is not None:
        n = len(shown.trace.steps) - 1
        lines.append(f"\nlasso counterexample of {shown.name}, {n} event"
                     f"{'s' if n != 1 else ''}:")
        lines.append(tr.lasso_text(shown.trace))
        if shown.timing_note:
            lines.append(f"  ({shown.timing_note})")
    lines.append(f"liveness: {live.zones:,} zones, {live.transitions:,} transitions in"
                 f" {live.seconds:.2f} s (no symmetry reduction, equality store)")
    return "\n".join(lines) + "\n"


def _liveness_json(live: Any) -> list[dict[str, object]]:
    """Each checked liveness property instance for ``check --json``."""
    from checker.model import trace as tr

    return [{"name": r.name, "status": r.status, "message": r.message,
             "trace": tr.to_itf(r.trace) if r.trace is not None else None,
             "timing_note": r.timing_note} for r in live.results]


def _query_name(spec: ir.Spec, name: str, option: str) -> str:
    """``name`` if the spec declares ``reachable name``; a usage error otherwise."""
    names = [q.name for q in spec.queries]
    if name not in names:
        raise UsageError(f"{option}: no query `reachable {name}` in {spec.path}"
                         f" (it declares: {', '.join(names) or 'none'})")
    return name


def _query_json(q: Any) -> dict[str, object]:
    from checker.model import trace as tr

    return {"name": q.name, "expression": q.text, "status": q.status,
            "events": len(q.trace.steps) - 1 if q.trace is not None else None,
            "trace": tr.to_itf(q.trace) if q.trace is not None else None,
            "timing_note": q.timing_note}


def _queries_text(outcome: Any, bfs: bool) -> str:
    """Each query's outcome, with its witness trace."""
    from checker import api
    from checker.model import trace as tr

    out = []
    for q in outcome.queries:
        if q.status == api.REACHABLE:
            assert q.trace is not None
            n = len(q.trace.steps) - 1
            kind = "shortest " if bfs else ""
            out.append(f"\nreachable {q.name}: REACHABLE: `{q.text}`; {kind}witness,"
                       f" {n} event{'s' if n != 1 else ''}:\n{tr.to_text(q.trace)}\n")
            if q.timing_note:
                out.append(f"  ({q.timing_note})\n")
        elif q.status == api.UNREACHABLE:
            out.append(f"\nreachable {q.name}: NEVER REACHABLE: no reachable state satisfies"
                       f" `{q.text}` (exploration complete)\n")
        else:
            out.append(f"\nreachable {q.name}: INCONCLUSIVE: not found in what was explored"
                       " (the run ended first)\n")
    return "".join(out)


def _add_search_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("search")
    _add_limit_args(g)
    g.add_argument("--max-memory", type=positive_int, metavar="MIB",
                   help="stop (inconclusive) when the process uses more memory")
    g.add_argument("--dfs", action="store_true",
                   help="depth-first search (traces are then not the shortest)")
    g.add_argument("--no-symmetry", action="store_true",
                   help="do not reduce by the symmetric types")
    g.add_argument("--no-clock-reduction", action="store_true",
                   help="keep every clock in every zone")
    g.add_argument("--no-deadlock", action="store_true", help="do not check deadlock freedom")
    g.add_argument("--quiet", "-q", action="store_true", help="no progress display")


_NUMBER = re.compile(
    r"(?P<sign>[+-]?)(?P<mant>\d+(?:\.\d*)?|\.\d+)(?:[eE](?P<exp>[+-]?\d+))?"
    r"|(?P<num>[+-]?\d+)/(?P<den>\d+)"
)


def parse_number(text: str) -> Fraction:
    """A command-line number: decimal (``7.5``, ``1e3``) or fraction (``15/2``).

    Like a spec's literals it has at most ``MAX_NUMBER_DIGITS`` digits, and an
    exponent of at most that size, so no value can make kvrace compute for ever
    (``1e99999999999``).  Raises ValueError with a message for the user.
    """
    from checker.language.syntax import MAX_NUMBER_DIGITS

    m = _NUMBER.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a number (write e.g. 7, 7.5, 15/2 or 1e3)")
    if sum(ch.isdigit() for ch in text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"{_clip(text)} has more than {MAX_NUMBER_DIGITS} digits")
    if m.group("exp") is not None and abs(int(m.group("exp"))) > MAX_NUMBER_DIGITS:
        raise ValueError(f"{_clip(text)}: the exponent is outside"
                         f" [-{MAX_NUMBER_DIGITS}, {MAX_NUMBER_DIGITS}]")
    if m.group("den") is not None and int(m.group("den")) == 0:
        raise ValueError(f"{_clip(text)} divides by zero")
    return Fraction(text.strip())


def _clip(text: str, width: int = 40) -> str:
    """``text`` quoted, shortened to about ``width`` characters for a message."""
    return repr(text if len(text) <= width else text[:width] + "...")


def parse_param(text: str) -> tuple[str, Fraction]:
    """``NAME=VALUE`` with a decimal or fractional value."""
    if "=" not in text:
        raise UsageError(f"--param expects NAME=VALUE, got {_clip(text)}")
    name, _, value = text.partition("=")
    try:
        return name.strip(), parse_number(value)
    except ValueError as exc:
        raise UsageError(f"--param {name.strip()}: {exc}") from None


class _BadSpec(Exception):
    """A spec that failed to load: its diagnostics are printed, exit code 2."""

    def __init__(self, error: SpecError) -> None:
        super().__init__(error.render())
        self.error = error


def _load(path: str, args: argparse.Namespace | None = None) -> ir.Spec:
    """The spec at ``path``; with ``args``, its structural constants take their ``-p``
    values, and ``_params(args)`` then leaves them out (they are not timing parameters)."""
    from checker.language import load

    consts = _params(args) if args is not None and getattr(args, "param", None) else None
    try:
        spec = load(path, consts)
    except SpecError as e:
        raise _BadSpec(e) from None
    if args is not None:
        args.const_names = [c.name for c in spec.consts]
    return spec


def cmd_lint(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import jsonout

    status = EXIT_OK
    files: list[dict[str, object]] = []
    errors: list[dict[str, object]] = []
    for path in args.specs:
        try:
            spec = _load(path)
        except _BadSpec as e:
            err.write(e.error.render() + "\n")
            status = EXIT_BAD_INPUT
            found = jsonout.diagnostic_errors(e.error.diagnostics)
            errors += found
            files.append({"path": path, "ok": False, "model": None, "errors": found})
            continue
        files.append({"path": path, "ok": True, "model": spec.name, "errors": []})
        if not args.json:
            out.write(f"{path}: ok\n")
    if args.json:
        out.write(jsonout.document("lint", status, {"files": files}, errors))
    return status


def _fmt(x: Fraction) -> str:
    """An exact number: an integer, a short decimal, or a fraction ``a/b``."""
    from checker.model.trace import fmt_time

    return fmt_time(x)


def describe_spec(spec: ir.Spec) -> str:
    """The ``kvrace show`` summary of a spec."""
    from checker.model.compiled import SpecModel

    model = SpecModel(spec)
    lines = [f"model {spec.name}  ({spec.path})", "", "types:"]
    for t in spec.types:
        sym = "symmetric " if t.symmetric else ""
        body = "{" + ", ".join(t.labels) + "}" if t.kind == "enum" else f"{t.lo}..{t.hi}"
        kind = "ordered " if t.ordered else ""
        lines.append(f"  {sym}{kind}{t.name} = {body}")
    if spec.consts:
        lines.append("constants:")
        for k in spec.consts:
            rng = f" in {k.range_text()}" if k.lo is not None else ""
            dflt = f" (default {k.default})" if k.value != k.default else ""
            lines.append(f"  {k.name}{rng} = {k.value}{dflt}")
    lines.append("parameters:")
    for p in spec.params:
        rng = p.range_text() or "(fixed)"
        lines.append(f"  {p.name} in {rng} = {_fmt(p.default)}")
    lines.append("actors: " + ", ".join(spec.actors))
    lines.append("variables:")
    for v in spec.vars:
        dom = ""
        if v.domain:
            names = ", ".join(str(t) for t in v.domain)
            dom = f"({names}) -> " if len(v.domain) > 1 else f"{names} -> "
        lines.append(f"  {v.name} : {dom}{v.value} = {v.value.show(v.init)}  [{v.size} cell(s)]")
    lines.append("clocks:")
    for c in spec.clocks:
        dom = " : " + ", ".join(str(t) for t in c.domain) if c.domain else ""
        lines.append(f"  {c.name}{dom}  [{c.size} instance(s)]")
    lines.append("events:")
    counts: dict[str, int] = {}
    for name in model.event_names:
        key = name.split("(", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    for ev in spec.events:
        params = ", ".join(f"{n}: {t}" for n, t in ev.params)
        recv = f" receives {ev.receives[0]}" if ev.receives else ""
        nb = len(ev.branches)
        br = f", {nb} convex guard branches" if nb > 1 else ""
        lines.append(f"  {ev.label}({params}){recv}  [{counts[ev.label]} instance(s){br}]")
    lines.append("deadlines: " + (", ".join(d.name for d in spec.deadlines) or "none"))
    props = [f"invariant {i.name}" for i in spec.invariants]
    props += [f"response {r.name}" for r in spec.responses]
    props += ["every assert", "deadlock freedom"]
    lines.append("properties: " + ", ".join(props))
    if spec.queries:
        lines.append("queries: " + ", ".join(f"reachable {q.name}" for q in spec.queries))
    lines.append(
        f"size: {model.event_count} event instances, {len(model.clock_names)} clock instances,"
        f" {model.state_size} state cells"
    )
    return "\n".join(lines)


def spec_summary(spec: ir.Spec) -> dict[str, object]:
    """The ``kvrace show --json`` summary of a spec (what :func:`describe_spec` prints)."""
    from checker.model.compiled import SpecModel

    model = SpecModel(spec)
    counts: dict[str, int] = {}
    for name in model.event_names:
        key = name.split("(", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    return {
        "model": spec.name,
        **({"consts": [{"name": c.name, "value": c.value, "default": c.default,
                        "range": c.range_text() or None} for c in spec.consts]}
           if spec.consts else {}),
        "types": [{"name": t.name, "kind": t.kind, "symmetric": t.symmetric,
                   **({"ordered": True} if t.ordered else {}),
                   **({"lo": t.lo, "hi": t.hi} if t.kind == "range" else
                      {"values": [t.show(v) for v in t.values()]})} for t in spec.types],
        "params": [{"name": p.name, "range": p.range_text() or None,
                    "default": _fmt(p.default)} for p in spec.params],
        "actors": list(spec.actors),
        "variables": [{"name": v.name, "domain": [str(t) for t in v.domain],
                       "type": str(v.value), "init": v.value.show(v.init), "cells": v.size}
                      for v in spec.vars],
        "clocks": [{"name": c.name, "domain": [str(t) for t in c.domain],
                    "instances": c.size} for c in spec.clocks],
        "events": [{"name": ev.label, "params": [{"name": n, "type": str(t)}
                                                 for n, t in ev.params],
                    "receives": str(ev.receives[0]) if ev.receives else None,
                    "instances": counts[ev.label], "guard_branches": len(ev.branches)}
                   for ev in spec.events],
        "deadlines": [d.name for d in spec.deadlines],
        "properties": ([f"invariant {i.name}" for i in spec.invariants]
                       + [f"response {r.name}" for r in spec.responses]
                       + ["every assert", "deadlock freedom"]),
        "queries": [q.name for q in spec.queries],
        "size": {"event_instances": model.event_count,
                 "clock_instances": len(model.clock_names), "state_cells": model.state_size},
    }


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spec = _load(args.spec, args)
    if args.json:
        from checker import jsonout

        out.write(jsonout.document("show", EXIT_OK, {"spec": args.spec,
                                                     **spec_summary(spec)}))
    else:
        out.write(describe_spec(spec) + "\n")
    return EXIT_OK


def _params(args: argparse.Namespace) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    consts = getattr(args, "const_names", ())
    for text in args.param:
        name, value = parse_param(text)
        if name not in consts:
            out[name] = value
    return out


def _limits(args: argparse.Namespace) -> Limits:
    for name in ("max_states", "timeout", "max_memory"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
    return Limits(args.max_states, args.timeout, args.max_memory, _deadline(args.timeout))


_STARTED = [time.monotonic()]
"""When the current command started: a --timeout counts from there."""


def _deadline(timeout: float | None) -> float | None:
    """The instant a command with ``--timeout`` must end by."""
    return None if timeout is None else _STARTED[0] + timeout


def _left(timeout: float | None) -> float | None:
    """What is left of a command's ``--timeout`` now."""
    end = _deadline(timeout)
    return None if end is None else max(end - time.monotonic(), 0.001)


def _progress_display(err: TextIO, command: str, quiet: bool) -> Progress:
    """The progress display of a long command on stderr (see :mod:`checker.progress`)."""
    from checker.progress import Progress, mode_for

    return Progress(err, command, mode_for(err, quiet))


def _progress(display: Progress) -> Callable[[Stats], None]:
    """The zone explorer's progress callback: remembers the statistics (for the line
    printed on an interrupt) and shows them."""

    def report(st: Stats) -> None:
        _Explored.stats = st
        display.explorer(st)

    return report


@contextlib.contextmanager
def _watching_synth(display: Progress) -> Iterator[None]:
    """Show the statistics of every parametric exploration run inside the block."""
    from checker.smt import synth as sy

    sy.STATS_OBSERVERS.append(display.watch_synth)
    try:
        yield
    finally:
        sy.STATS_OBSERVERS.remove(display.watch_synth)


def _options(args: argparse.Namespace, display: Progress) -> Options:
    return Options(
        search="dfs" if args.dfs else "bfs",
        symmetry=not args.no_symmetry,
        clock_reduction=not args.no_clock_reduction,
        deadlock=not args.no_deadlock,
        progress=_progress(display),
    )


def stats_line(st: Stats) -> str:
    """The statistics of a run in one line."""
    line = (
        f"explored {st.states} states, {st.zones} zones, {st.transitions} transitions"
        f" in {st.seconds:.2f} s ({st.states_per_second:,.0f} zones/s),"
        f" peak memory {st.peak_memory_mb:.0f} MiB"
    )
    if st.extrapolation == "m":
        line += ("; a deadlock of the LU abstraction was not confirmed by exact replay,"
                 " so the counts are those of the rerun with Extra_M")
    return line


def stats_json(st: Stats) -> dict[str, object]:
    """The statistics of a run as JSON."""
    return {
        "states": st.states, "zones": st.zones, "transitions": st.transitions,
        "seconds": round(st.seconds, 3), "zones_per_second": round(st.states_per_second, 1),
        "peak_memory_mib": round(st.peak_memory_mb, 1), "depth": st.depth,
        "stored": st.stored, "explored": st.explored, "extrapolation": st.extrapolation,
    }


def _param_text(values: dict[str, Fraction]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import api, jsonout
    from checker.explorer.distributed import RayMissing
    from checker.model import trace as tr
    from checker.model.compiled import ParamError

    spec = _load(args.spec, args)
    params = _params(args)
    limits = _limits(args)
    if args.diagram:
        _check_diagram_path(args.diagram)
    if args.query is not None:
        _query_name(spec, args.query, "--query")
    if args.witness is not None:
        _query_name(spec, args.witness, "--witness")
        if args.query is not None and args.witness != args.query:
            raise UsageError(f"--witness {args.witness}: with --query {args.query}, only"
                             f" `reachable {args.query}` is checked")
    cluster = _cluster(args)
    live_wanted = _liveness_wanted(args, spec, cluster)
    live: Any = None
    if cluster is not None and spec.queries:
        raise UsageError("--workers/--ray do not check `reachable` queries yet: run them in"
                         " one process (drop --workers/--ray)")
    display = _progress_display(err, "check", args.quiet)
    options = dataclasses.replace(_options(args, display), query=args.query)
    try:
        with display:
            display.phase("model and clock pre-pass" if cluster is None
                          else "starting the workers")
            outcome = api.check(spec, params, limits=limits, options=options,
                                cluster=cluster)
            if live_wanted:
                live = _run_liveness(args, outcome, limits, display)
            if args.explain and outcome.trace is not None and outcome.verdict == api.VIOLATED:
                display.phase("explaining the trace (Z3)")
                explanation = api.explain(outcome)
            else:
                explanation = None
    except RayMissing as e:
        raise UsageError(str(e)) from None
    except ParamError as e:
        err.write(f"{args.spec}: error[KVR400]: {e}\n")
        if args.json:
            out.write(jsonout.document("check", EXIT_BAD_INPUT, {},
                                       [jsonout.error("KVR400", str(e), args.spec)]))
        return EXIT_BAD_INPUT
    code = {api.HOLDS: EXIT_OK, api.VIOLATED: EXIT_VIOLATION,
            api.INCONCLUSIVE: EXIT_INCONCLUSIVE, api.ERROR: EXIT_BAD_INPUT,
            api.UNREACHABLE: EXIT_UNREACHABLE}[outcome.verdict]
    code = _liveness_code(code, live)
    if args.strict and outcome.vacuous and code == EXIT_OK:
        code = EXIT_VACUOUS
    dist: Any = outcome.raw[1].distributed if outcome.raw is not None else None
    # The verdict first: no failure of a side output below can lose or change it.
    if args.json:
        doc: dict[str, object] = {
            "spec": args.spec, "model": spec.name,
            "params": {k: _fmt(v) for k, v in outcome.params.items()},
            **jsonout.property_fields(spec, outcome.prop, outcome.trace),
            "message": outcome.message,
            "limit": outcome.limit, "stats": stats_json(outcome.stats),
            "trace": tr.to_itf(outcome.trace) if outcome.trace is not None else None,
            "never_fired": list(outcome.never_fired),
            "never_active_deadlines": list(outcome.never_active),
            "never_triggered": list(outcome.never_triggered),
            "vacuous": outcome.vacuous,
        }
        if spec.queries:
            doc["queries"] = [_query_json(q) for q in outcome.queries]
            doc["query"] = args.query
        if explanation is not None:
            doc["feasible_region"] = explanation
        if dist is not None:
            doc["distributed"] = dist.as_json()
        if live is not None:
            doc["liveness"] = _liveness_json(live)
        errors = ([jsonout.error_from_text("model-error", outcome.message or "", args.spec)]
                  if outcome.verdict == api.ERROR else [])
        out.write(jsonout.document("check", code, doc, errors))
    else:
        shown = {**{c.name: Fraction(c.value) for c in spec.consts}, **outcome.params}
        shown_params = _param_text(shown)
        out.write(f"model {spec.name}" + (f"  ({shown_params})" if shown_params else "")
                  + "\n")
        out.write((_query_verdict_text(outcome, args.query) if args.query is not None
                   else _liveness_verdict_text(outcome, live) or _verdict_text(outcome))
                  + "\n")
        out.write(_vacuity_text(outcome))
        if outcome.trace is not None:
            kind = "shortest " if options.search == "bfs" else ""
            n = len(outcome.trace.steps) - 1
            out.write(f"\n{kind}trace, {n} event{'s' if n != 1 else ''}:\n")
            out.write(tr.to_text(outcome.trace) + "\n")
            if outcome.timing_note:
                out.write(f"  ({outcome.timing_note})\n")
        if explanation is not None:
            out.write(f"\nthis sequence of events is possible exactly when: {explanation}\n")
        out.write(_queries_text(outcome, options.search == "bfs"))
        out.write(_liveness_text(live))
        out.write("\n" + stats_line(outcome.stats) + "\n")
        if dist is not None:
            out.write(dist.line() + "\n")
        off = outcome.raw[0].symmetry_off if outcome.raw is not None else None
        if options.symmetry and off is not None:
            out.write(f"note: no symmetry reduction: {off}\n")
    out.flush()
    trace = outcome.trace
    if trace is None and live is not None:
        trace = next((r.trace for r in live.results if r.trace is not None), None)
    witness = args.witness or args.query
    what = "there is no counterexample"
    if witness is not None:
        trace = outcome.query(witness).trace if outcome.queries else None
        what = f"`reachable {witness}` has no witness"
    if args.trace:
        if trace is None:
            err.write(f"no trace file: {what}\n")
        else:
            _side_output(err, args.trace, lambda: _write_json(args.trace, tr.to_itf(trace)))
    if args.diagram:
        if trace is None:
            err.write(f"no diagram: {what}\n" if witness is not None
                      else "no diagram: there is no counterexample to draw\n")
        else:
            _side_output(err, args.diagram, lambda: _draw(trace, args.diagram))
    return code


def _side_output(err: TextIO, path: str, write: Callable[[], str | None]) -> None:
    """Write a side output (a trace file, a diagram) after the verdict was printed.

    ``write`` returns what to tell the user (``wrote FILE``).  If it fails, for
    any reason, the failure is a warning on stderr and the exit code stays the
    verdict's: a side output can never lose or change a verdict.
    """
    try:
        note = write()
    except UsageError as exc:
        note = f"kvrace: warning: {exc}; the verdict above stands"
    except Exception as exc:  # any failure of a side output is a warning
        note = (f"kvrace: warning: could not write {path} ({_short(exc)}); the verdict above"
                " stands")
    if note:
        err.write(note + "\n")


def _verdict_text(outcome: Any) -> str:
    from checker import api

    if outcome.verdict == api.HOLDS:
        return "HOLDS: every property holds (exploration complete)"
    if outcome.verdict == api.VIOLATED:
        return f"VIOLATED: {outcome.prop}: {outcome.message}"
    if outcome.verdict == api.INCONCLUSIVE:
        return f"INCONCLUSIVE: {outcome.limit}; no violation in what was explored"
    if outcome.verdict == api.UNREACHABLE:
        never = ", ".join(q.name for q in outcome.queries if q.status == api.UNREACHABLE)
        return ("UNREACHABLE: every property holds (exploration complete), but these"
                f" `reachable` queries are never reachable: {never}")
    return f"MODEL ERROR: {outcome.message}"


def _query_verdict_text(outcome: Any, name: str) -> str:
    """The verdict line of ``check --query NAME``."""
    from checker import api

    if outcome.verdict in (api.VIOLATED, api.ERROR) or not outcome.queries:
        return _verdict_text(outcome)
    q = outcome.query(name)
    if q.status == api.REACHABLE:
        return f"REACHABLE: {name}: `{q.text}` (witness below)"
    if q.status == api.UNREACHABLE:
        return (f"NEVER REACHABLE: {name}: no reachable state satisfies `{q.text}`"
                " (exploration complete)")
    return f"INCONCLUSIVE: {outcome.limit}; `reachable {name}` not found in what was explored"


def _write_json(path: str, doc: object) -> str:
    """Write ``doc`` to ``path`` as JSON; returns the note for the user."""
    _make_parent(path)
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return f"wrote {path}"


def _check_diagram_path(path: str) -> None:
    """Refuse, before any work, a diagram file whose format kvrace cannot write."""
    from checker import render

    suffix = os.path.splitext(path)[1]
    if suffix.lower() not in render.FORMATS:
        shown = f"'{suffix}'" if suffix else "no extension"
        raise UsageError(f"cannot write a diagram to {path}: unknown format ({shown});"
                         " use .dot, .svg, .png or .pdf")


def _draw(trace: Any, path: str) -> str:
    """Render ``trace`` to ``path``; returns what to tell the user (stderr)."""
    from checker import render

    _make_parent(path)
    try:
        result = render.render(render.lasso_dot(trace), path)
    except render.RenderError as exc:
        raise UsageError(f"cannot draw {path}: {exc}") from None
    if result.hint:
        return result.hint
    if result.dot != result.output:
        return f"wrote {result.output} (and its source {result.dot})"
    return f"wrote {result.output}"


def _free(args: argparse.Namespace, spec: ir.Spec) -> list[str]:
    names = [n.strip() for text in args.free for n in text.split(",") if n.strip()]
    declared = [p.name for p in spec.params]
    consts = {c.name: c.value for c in spec.consts}
    for n in names:
        if n in consts:
            raise UsageError(f"--free: `{n}` is a structural constant, not a timing parameter:"
                             f" it cannot be synthesized; fix it with -p {n}=VALUE (now"
                             f" {consts[n]}) and run once per value")
        if n not in declared:
            raise UsageError(f"--free: unknown parameter `{n}` (the spec declares:"
                             f" {', '.join(declared)})")
    if not names:
        names = [p.name for p in spec.params if p.lo is not None or p.hi is not None]
    return [p for p in declared if p in names]


def _model(spec: ir.Spec, params: dict[str, Fraction], timeout: float | None = None) -> Any:
    from checker.model.compiled import ParamError, SpecModel

    try:
        return SpecModel(spec, params, _deadline(timeout))
    except ParamError as e:
        raise UsageError(f"{spec.path}: error[KVR400]: {e}") from None


def _point_text(point: dict[str, Fraction]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in point.items())


def _vacuity_text(outcome: Any) -> str:
    """The warning block of a HOLDS that some part of the model never exercised."""
    lines = []
    if outcome.never_fired:
        lines.append("warning: these events never fired, so their asserts were never"
                     " evaluated and what the properties say about them holds vacuously: "
                     + ", ".join(outcome.never_fired))
    if outcome.never_active:
        lines.append("warning: these deadlines were active in no reachable state, so they"
                     " never bounded time: " + ", ".join(outcome.never_active))
    if outcome.never_triggered:
        lines.append("warning: the trigger of these bounded responses held in no reachable"
                     " state, so they hold vacuously: " + ", ".join(outcome.never_triggered))
    return "".join(line + "\n" for line in lines)


def cmd_synth(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import jsonout
    from checker.smt import synth as sy

    spec = _load(args.spec, args)
    free = _free(args, spec)
    display = _progress_display(err, "synth", args.quiet)
    with display, _watching_synth(display):
        display.phase("building the model")
        model = _model(spec, _params(args), args.timeout)
        display.phase("clock pre-pass")
        result = sy.explore_parametric(model, free, (), args.max_states, _left(args.timeout),
                                       deadlock=not args.no_deadlock)
        display.phase("simplifying the region (Z3)")
        cnf = sy.safe_region(result)
    order = [p.name for p in spec.params]
    text = sy.region_text(cnf, order)
    ranges = ", ".join(f"{p} in {model.params[p].range_text()}" for p in free
                       if model.params[p].range_text())
    fixed = {k: v for k, v in model.values.items() if k not in free}
    st = result.stats
    status = "complete" if result.complete else f"INCONCLUSIVE: {result.limit}"
    if args.json:
        doc = {
            "spec": args.spec, "model": spec.name, "free": free,
            "fixed": {k: _fmt(v) for k, v in fixed.items()},
            "complete": result.complete, "limit": result.limit,
            "safe_region": text if result.complete else None,
            "smtlib": sy.region_smtlib(cnf, result.ranges, free) if result.complete else None,
            "bad_region_so_far": [[sy.lin_text(c, order) for c in piece]
                                  for piece in result.bad.pieces],
            "stats": {"discrete_states": st.states, "symbolic_states": st.symbolic_states,
                      "transitions": st.transitions, "solver_queries": st.queries,
                      "seconds": round(st.seconds, 3)},
        }
        out.write(jsonout.document("synth", EXIT_OK if result.complete else EXIT_INCONCLUSIVE,
                                   doc))
    else:
        out.write(f"model {spec.name}: synthesis over {', '.join(free) or 'no parameter'}")
        out.write(f"  (fixed: {_param_text(fixed)})\n" if fixed else "\n")
        if result.complete:
            if text == "false":
                out.write("SAFE REGION: empty — a property breaks for every parameter value"
                          " in the ranges\n")
            elif text == "true":
                out.write("SAFE REGION: every parameter value in the ranges\n")
            else:
                out.write(f"SAFE REGION: {text}\n")
            if ranges:
                out.write(f"  within {ranges}\n")
        else:
            out.write(f"{status}; no safe region is claimed\n")
            if result.bad.pieces:
                bad = " or ".join("(" + " and ".join(sy.lin_text(c, order) for c in piece) + ")"
                                  for piece in result.bad.pieces)
                out.write(f"  unsafe so far: {bad}\n")
        out.write(
            f"\nalgorithm: parametric zone exploration (EFsynth), {status};"
            f" {st.states} discrete states, {st.symbolic_states} symbolic states,"
            f" {st.queries} solver queries, {st.seconds:.1f} s\n"
            f"covers: {_covers(args.no_deadlock, len(spec.leadsto))}\n"
        )
    return EXIT_OK if result.complete else EXIT_INCONCLUSIVE


def _covers(no_deadlock: bool, liveness: int = 0) -> str:
    """What a parametric verdict covers (``liveness``: how many unbounded liveness
    properties the spec declares, which it does not cover)."""
    if no_deadlock:
        text = ("every assert, invariant and bounded response; not deadlock freedom"
                " (--no-deadlock)")
    else:
        text = "every assert, invariant and bounded response, and deadlock freedom"
    if liveness:
        text += ("; not the unbounded liveness properties (`leadsto` without `within`,"
                 " `always eventually`): `kvrace check` checks them at fixed values")
    return text


def cmd_prove(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import api, jsonout
    from checker.model import trace as tr
    from checker.smt import synth as sy

    spec = _load(args.spec, args)
    free = _free(args, spec)
    params = _params(args)
    model = _model(spec, params, args.timeout)
    try:
        assumption = api.assumption(model, args.assume, free)
    except SpecError as e:
        err.write(e.render() + "\n")
        if args.json:
            out.write(jsonout.document("prove", EXIT_BAD_INPUT, {},
                                       jsonout.diagnostic_errors(e.diagnostics)))
        return EXIT_BAD_INPUT
    display = _progress_display(err, "prove", args.quiet)
    witness: api.Outcome | None = None
    with display, _watching_synth(display):
        display.phase("clock pre-pass")
        res = sy.prove(model, assumption, free, args.max_states, _left(args.timeout),
                       deadlock=not args.no_deadlock)
        if res.status == "refuted" and res.counterexample is not None:
            display.phase("checking the counterexample")
            point = {**model.values, **res.counterexample}
            witness = api.check(spec, point, options=Options(deadlock=not args.no_deadlock))
    st = res.synth.stats
    stats = (f"parametric zone exploration (EFsynth): {st.states} discrete states,"
             f" {st.symbolic_states} symbolic states, {st.queries} solver queries,"
             f" {st.seconds:.1f} s")
    doc: dict[str, object] = {"spec": args.spec, "model": spec.name, "assume": args.assume,
                              "free": free, "status": res.status}
    fixed = {k: v for k, v in model.values.items() if k not in free}
    lines = [f"model {spec.name}: prove over {', '.join(free)} assuming {args.assume}"
             + (f"  (fixed: {_param_text(fixed)})" if fixed else "")]
    code = EXIT_OK
    if res.status == "refuted":
        assert res.counterexample is not None and witness is not None
        outcome = witness
        doc["counterexample"] = {k: _fmt(v) for k, v in point.items()}
        # A model error there (e.g. the initial state breaking a deadline) refutes too.
        if outcome.verdict not in (api.VIOLATED, api.ERROR):
            lines.append("INCONCLUSIVE: the parametric and the concrete explorer disagree at"
                         f" {_point_text(point)} (please report)")
            code = EXIT_INCONCLUSIVE
        else:
            lines.append(f"REFUTED: at {_point_text(point)} (inside the assumption)")
            lines.append(f"  {outcome.prop}: {outcome.message}")
            doc.update(jsonout.property_fields(spec, outcome.prop, outcome.trace))
            doc["message"] = outcome.message
            if outcome.trace is not None:
                lines.append(tr.to_text(outcome.trace))
                doc["trace"] = tr.to_itf(outcome.trace)
            code = EXIT_VIOLATION
    elif res.status == "inconclusive":
        lines.append(f"INCONCLUSIVE: {res.synth.limit}; nothing is proved")
        code = EXIT_INCONCLUSIVE
    else:
        lines.append("PROVED: every property holds for every parameter value in the ranges"
                     " satisfying the assumption")
        if res.vacuous:
            lines.append("  warning: no parameter value in the ranges satisfies the assumption;"
                         " the proof is vacuous")
        if res.boundary is not None:
            point = {**model.values, **res.boundary}
            lines.append(f"  tight: a property breaks on its boundary, at {_point_text(point)}")
            doc["boundary_counterexample"] = {k: _fmt(v) for k, v in point.items()}
        elif res.near is not None:
            point = {**model.values, **res.near}
            lines.append("  tight: no violation on its boundary itself, but violations"
                         f" arbitrarily close to it, e.g. at {_point_text(point)}")
            doc["near_boundary_counterexample"] = {k: _fmt(v) for k, v in point.items()}
        elif res.outside is not None:
            point = {**model.values, **res.outside}
            lines.append("  not tight: no violation on its boundary; the nearest violation"
                         f" outside it is at {_point_text(point)}")
            doc["outside_counterexample"] = {k: _fmt(v) for k, v in point.items()}
        else:
            lines.append("  not needed: no violation anywhere in the ranges")
        doc["tight"] = res.boundary is not None or res.near is not None
        doc["vacuous"] = res.vacuous
    lines.append(stats)
    lines.append(f"covers: {_covers(args.no_deadlock, len(spec.leadsto))}")
    if args.json:
        doc["stats"] = {"discrete_states": st.states, "symbolic_states": st.symbolic_states,
                        "solver_queries": st.queries, "seconds": round(st.seconds, 3)}
        out.write(jsonout.document("prove", code, doc))
    else:
        out.write("\n".join(lines) + "\n")
    return code


MAX_TRACE_BYTES = 16 * 2**20
"""Largest trace file ``draw`` reads."""
MAX_TRACE_STEPS = 2000
"""Most steps ``draw`` draws (a shortest counterexample has tens)."""
MAX_TRACE_TEXT = 4000
"""Longest string in a trace file (names, labels, assert messages)."""


class _BadTrace(Exception):
    """A trace file that does not follow the trace schema; the message says where."""


def _text(v: object, where: str, optional: bool = False) -> None:
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise _BadTrace(f"{where}: expected a string{' or null' if optional else ''},"
                        f" found {_json_kind(v)}")
    if len(v) > MAX_TRACE_TEXT:
        raise _BadTrace(f"{where}: a string longer than {MAX_TRACE_TEXT} characters")


def _whole(v: object, where: str, optional: bool = False) -> None:
    if v is None and optional:
        return
    if not isinstance(v, int) or isinstance(v, bool):
        raise _BadTrace(f"{where}: expected an integer{' or null' if optional else ''},"
                        f" found {_json_kind(v)}")
    if abs(v) >= 10**9:
        raise _BadTrace(f"{where}: {v} is out of range")


def _time_value(v: object, where: str) -> None:
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if not isinstance(v, str):
        raise _BadTrace(f"{where}: expected a number written as a string (\"7.5\", \"15/2\"),"
                        f" found {_json_kind(v)}")
    try:
        parse_number(v)
    except ValueError as exc:
        raise _BadTrace(f"{where}: {exc}") from None


def _scalar(v: object, where: str) -> None:
    if v is None or isinstance(v, bool):
        return
    if isinstance(v, str):
        _text(v, where)
    elif isinstance(v, int):
        _whole(v, where)
    else:
        raise _BadTrace(f"{where}: expected a value (string, integer, boolean or null),"
                        f" found {_json_kind(v)}")


def _json_kind(v: object) -> str:
    """How a JSON value is called in a message."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    return "an object"


def _members(v: object, where: str, required: Sequence[str]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _BadTrace(f"{where}: expected an object, found {_json_kind(v)}")
    for key in required:
        if key not in v:
            raise _BadTrace(f"{where}: missing `{key}`")
    return v


def _list(v: object, where: str, limit: int) -> list[Any]:
    if not isinstance(v, list):
        raise _BadTrace(f"{where}: expected a list, found {_json_kind(v)}")
    if len(v) > limit:
        raise _BadTrace(f"{where}: more than {limit} entries")
    return v


def validate_trace(data: object) -> None:
    """Check that ``data`` (a parsed JSON file) is a kvrace trace, as written by
    ``check --trace``, with every value of the type and size ``draw`` expects.

    Raises :class:`_BadTrace` naming the first offending place
    (``states[3].#meta.event``)."""
    if isinstance(data, dict) and "verdict" in data and "#meta" not in data:
        raise _BadTrace("this is the output of `kvrace check --json` without a"
                        f" counterexample (verdict: {_clip(str(data['verdict']))});"
                        " there is no trace to draw")
    top = _members(data, "the file", ["#meta", "vars", "states"])
    meta = _members(top["#meta"], "#meta", ["model", "actors"])
    _text(meta["model"], "#meta.model")
    for i, a in enumerate(_list(meta["actors"], "#meta.actors", 1000)):
        _text(a, f"#meta.actors[{i}]")
    for key in ("source", "verdict"):
        if key in meta:
            _text(meta[key], f"#meta.{key}")
    for key in ("property", "message"):
        if key in meta:
            _text(meta[key], f"#meta.{key}", optional=True)
    params = _members(meta.get("params", {}), "#meta.params", [])
    if len(params) > 1000:
        raise _BadTrace("#meta.params: more than 1000 entries")
    for k, v in params.items():
        _time_value(v, f"#meta.params.{k}")
    names = _list(top["vars"], "vars", 65_536)
    for i, n in enumerate(names):
        _text(n, f"vars[{i}]")
    states = _list(top["states"], "states", MAX_TRACE_STEPS)
    if not states:
        raise _BadTrace("states: a trace has at least one state")
    for i, raw in enumerate(states):
        where = f"states[{i}]"
        st = _members(raw, where, ["#meta", *names])
        m = _members(st["#meta"], f"{where}.#meta", ["index", "label"])
        _whole(m["index"], f"{where}.#meta.index")
        _whole(m.get("receives"), f"{where}.#meta.receives", optional=True)
        _text(m["label"], f"{where}.#meta.label")
        for key in ("actor", "event", "failure"):
            _text(m.get(key), f"{where}.#meta.{key}", optional=True)
        for j, a in enumerate(_list(m.get("args", []), f"{where}.#meta.args", 100)):
            _text(a, f"{where}.#meta.args[{j}]")
        if "time" in m:
            _time_value(m["time"], f"{where}.#meta.time")
        for n in names:
            v = st[n]
            if not isinstance(v, dict):
                _scalar(v, f"{where}.{n}")
                continue
            entries = _list(_members(v, f"{where}.{n}", ["#map"])["#map"], f"{where}.{n}",
                            65_536)
            for j, entry in enumerate(entries):
                at = f"{where}.{n}[{j}]"
                if not isinstance(entry, list) or len(entry) != 2:
                    raise _BadTrace(f"{at}: expected a [key, value] pair")
                key, value = entry
                if isinstance(key, dict):
                    parts = _list(_members(key, at, ["#tup"])["#tup"], at, 100)
                    for part in parts:
                        _scalar(part, at)
                else:
                    _scalar(key, at)
                _scalar(value, at)


def cmd_draw(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    note = _draw(_read_trace(args.trace), args.output)
    if args.json:
        from checker import jsonout

        out.write(jsonout.document("draw", EXIT_OK, {
            "input": args.trace, "output": args.output, "wrote": note.startswith("wrote "),
            "note": note}))
        if not note.startswith("wrote "):
            err.write(note + "\n")
    elif note.startswith("wrote "):
        out.write(note + "\n")
    else:
        err.write(note + "\n")
    return EXIT_OK


def _read_trace(path: str) -> Any:
    """The :class:`~checker.model.trace.Trace` in a trace file; UsageError if it is not
    one."""
    from checker.model import trace as tr

    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TRACE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_TRACE_BYTES:
        raise UsageError(f"{path}: larger than {MAX_TRACE_BYTES // 2**20} MiB;"
                         " not a trace written by `kvrace check --trace`")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a JSON trace (not UTF-8 text)") from None
    except RecursionError:
        raise UsageError(f"{path}: not a JSON trace (nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError, or an integer too long to read
        raise UsageError(f"{path}: not a JSON trace ({_short(exc)})") from None
    if isinstance(data, dict) and "#meta" not in data and isinstance(data.get("trace"), dict):
        data = data["trace"]  # the output of `check --json` or `prove --json`: its trace
    try:
        validate_trace(data)
        return tr.from_itf(data)
    except _BadTrace as exc:
        raise UsageError(f"{path}: not a kvrace trace: {exc}") from None
    except tr.TraceFormatError as exc:
        raise UsageError(f"{path}: {exc}") from None


def cmd_graph(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import graphs, render
    from checker.api import state_graph

    ext = os.path.splitext(args.output)[1].lower()
    if ext not in graphs.EXPORT_FORMATS and ext not in render.FORMATS:
        raise UsageError(f"cannot draw {args.output}: unknown format; use .dot, .svg, .png,"
                         " .pdf (drawn), .graphml or .gexf (the graph as data)")
    spec = _load(args.spec, args)
    model = _model(spec, _params(args), args.timeout)
    g = state_graph(model, args.max_nodes, zones=args.zones, symmetry=not args.no_symmetry,
                    timeout=args.timeout)
    if g is None:
        raise UsageError(f"kvrace graph: the state graph has more than {args.max_nodes}"
                         " symbolic states; it would be unreadable.  Raise --max-nodes or"
                         " draw a smaller model.")
    summary = graphs.summarise(g)
    if ext in graphs.EXPORT_FORMATS:
        try:
            graphs.write_graph(g, args.output)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        if args.json:
            from checker import jsonout

            out.write(jsonout.document("graph", EXIT_OK, {
                "spec": args.spec, "model": spec.name, "output": args.output,
                "wrote": True, "note": None,
                "states": g.number_of_nodes(), "edges": g.number_of_edges()}))
        else:
            out.write(f"wrote {args.output} ({summary.line()})\n")
        return EXIT_OK
    nodes = [(n, g.nodes[n]["label"]) for n in g.nodes]
    edges = [(a, b, g.edges[a, b]["label"]) for a, b in g.edges]
    highlight = list(summary.violation_path)
    dot = render.state_graph_dot(nodes, edges, highlight, title=f"{spec.name}: state graph")
    _make_parent(args.output)
    try:
        outcome = render.render(dot, args.output)
    except render.RenderError as exc:
        raise UsageError(f"cannot draw {args.output}: {exc}") from None
    if outcome.hint:
        err.write(outcome.hint + "\n")
    elif not args.json:
        out.write(f"wrote {args.output} ({summary.line()})\n")
    if args.json:
        from checker import jsonout

        out.write(jsonout.document("graph", EXIT_OK, {
            "spec": args.spec, "model": spec.name, "output": args.output,
            "wrote": not outcome.hint, "note": outcome.hint,
            "states": g.number_of_nodes(), "edges": g.number_of_edges()}))
    return EXIT_OK


def cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import export

    if not args.uppaal and not args.tchecker:
        raise UsageError("kvrace export: give --uppaal FILE.xml and/or --tchecker FILE.tck")
    spec = _load(args.spec, args)
    model = _model(spec, _params(args))
    try:
        auto = export.unfold(model, args.max_locations or export.MAX_LOCATIONS)
    except export.ExportError as exc:
        raise UsageError(f"kvrace export: {exc}") from None
    outputs = [(args.uppaal, export.uppaal_xml), (args.tchecker, export.tchecker_text)]
    wrote: list[str] = []
    for path, make in outputs:
        if not path:
            continue
        _make_parent(path)
        try:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(make(auto))
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        wrote.append(path)
        if not args.json:
            out.write(f"wrote {path} ({len(auto.states)} locations,"
                      f" {len(auto.transitions)} transitions)\n")
    if args.json:
        from checker import jsonout

        out.write(jsonout.document("export", EXIT_OK, {
            "spec": args.spec, "model": spec.name, "wrote": wrote,
            "locations": len(auto.states), "transitions": len(auto.transitions)}))
    return EXIT_OK


def cmd_view(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import api
    from checker.model.compiled import ParamError, SpecModel
    from checker.view import page, server, steps

    spec = _load(args.spec, args)
    overrides = _params(args)
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port: {args.port} is not a port number (0 to 65535)")
    try:
        if args.trace:
            trace = _read_trace(args.trace)
            known = {p.name for p in spec.params}
            model = SpecModel(spec, {**{k: v for k, v in trace.params.items() if k in known},
                                     **overrides})
        else:
            outcome = api.check(spec, overrides, limits=_limits(args))
            trace = outcome.trace
            model = outcome.raw[0] if outcome.raw is not None else SpecModel(spec, overrides)
            out.write(_verdict_text(outcome) + "\n")
    except ParamError as e:
        err.write(f"{args.spec}: error[KVR400]: {e}\n")
        return EXIT_BAD_INPUT
    try:
        run = steps.run_of_trace(model, trace) if trace is not None else steps.Run(model)
    except steps.RunError as exc:
        where = args.trace or args.spec
        raise UsageError(f"{where}: cannot replay the trace on {args.spec}: {exc}") from None
    check = steps.check_info(trace) if trace is not None else None
    if check is None and not args.trace:
        check = {"verdict": outcome.verdict, "property": None, "message": outcome.limit,
                 "violating": None}
    view = steps.view_json(run)
    if args.html:
        text = page.page_html(view, check, live=False)
        try:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {args.html}: {exc.strerror or exc}") from None
        out.write(f"wrote {args.html}\n")
        return EXIT_OK
    try:
        srv = server.make_server(model, view, check, args.port)
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

# ---- simulate ------------------------------------------------------------------------------


def _add_simulate_parser(sub: Any) -> None:
    sim = sub.add_parser(
        "simulate",
        help="random runs: estimate the probability of a violation (statistical model"
        " checking)",
        description="Draw random runs of SPEC under a stochastic semantics (each edge draws"
        " a firing time uniform within its own upper bound, exponential where it has none;"
        " the earliest fires) and estimate the probability that a run violates a property,"
        " with a Clopper-Pearson interval.  An estimate, never a proof: a simulation never"
        " says 'holds'.  Exit 0 = no violation sampled, 1 = a violation was sampled,"
        " 2 = bad input.",
    )
    sim.add_argument("spec", metavar="SPEC")
    _add_param_args(sim)
    sim.add_argument("--runs", type=positive_int, metavar="N",
                     help="number of runs (default 1000; with --sprt, the most it may use)")
    sim.add_argument("--seed", type=int, default=0, metavar="S",
                     help="random seed (default 0); run i draws from (S, i) alone")
    sim.add_argument("--delay", action="append", default=[], metavar="NAME=DIST",
                     help="distribution of the clock bounded by parameter NAME when the edge"
                     " it bounds fires, or (NAME = actor.event) of that event's delay since"
                     " it became enabled: uniform(a,b), exp(rate), lognormal(mu,sigma),"
                     " empirical(FILE.csv) or mixture(w1*D1, w2*D2, ...); truncated to the"
                     " edge's window (repeatable)")
    sim.add_argument("--rate", type=_positive_float, default=1.0, metavar="R",
                     help="rate of the exponential delay of an edge without an upper bound"
                     " (default 1 per time unit)")
    sim.add_argument("--time-bound", type=_positive_float, metavar="T",
                     help="estimate P(violation by model time T): runs stop at T")
    sim.add_argument("--max-steps", type=positive_int, default=10_000, metavar="K",
                     help="runs stop after K events (default 10000)")
    sim.add_argument("--confidence", type=_probability, default=0.95, metavar="C",
                     help="confidence of the intervals (default 0.95)")
    sim.add_argument("--epsilon", type=_probability, metavar="E",
                     help="with --delta: as many runs as the Chernoff-Hoeffding bound needs"
                     " for the estimate to be within E with probability 1-delta")
    sim.add_argument("--delta", type=_probability, metavar="D")
    sim.add_argument("--sprt", type=_probability, metavar="P0",
                     help="sequential test of P(violation) >= P0 (Wald's SPRT, error"
                     " probabilities 1-confidence); stops as soon as it decides")
    sim.add_argument("--indifference", type=_probability, default=0.01, metavar="D",
                     help="half-width of the SPRT's indifference region (default 0.01)")
    sim.add_argument("--jobs", "-j", type=positive_int, default=1, metavar="N",
                     help="worker processes (results do not depend on N)")
    sim.add_argument("--traces", metavar="DIR",
                     help="write violating runs as traces DIR/run-<i>.json (kvrace draw reads"
                     " them)")
    sim.add_argument("--max-traces", type=positive_int, default=5, metavar="K",
                     help="write at most K traces (the first violating runs; default 5)")
    sim.add_argument("--sweep", metavar="NAME=LO:HI:STEP",
                     help="estimate at every value of parameter NAME from LO to HI")
    sim.add_argument("--csv", metavar="FILE", help="with --sweep: write the estimates as CSV")
    sim.add_argument("--plot", metavar="FILE",
                     help="with --sweep: plot P(violation) against NAME (.svg, .png, .pdf)")
    sim.add_argument("--no-synth", action="store_true",
                     help="with --sweep: do not compute the exact safe bound by synthesis")
    sim.add_argument("--json", action="store_true", help="print the result as JSON")
    sim.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def _positive_float(text: str) -> float:
    try:
        value = float(parse_number(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"expected a number, got {_clip(text)}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {_clip(text)}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(parse_number(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"expected a number, got {_clip(text)}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {_clip(text)}")
    return value


def _sim_config(args: argparse.Namespace, spec: ir.Spec) -> Any:
    from checker.simulate import DistributionError, SimConfig, parse_distribution

    declared = [p.name for p in spec.params]
    delays: dict[str, Any] = {}
    for text in args.delay:
        if "=" not in text:
            raise UsageError(f"--delay expects NAME=DIST, got {_clip(text)}")
        name, _, dist = (x.strip() for x in text.partition("="))
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


def _sweep_values(text: str, spec: ir.Spec) -> tuple[str, list[Fraction]]:
    name, eq, rng = text.partition("=")
    name = name.strip()
    parts = rng.split(":")
    if not eq or len(parts) != 3:
        raise UsageError(f"--sweep expects NAME=LO:HI:STEP, got {_clip(text)}")
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
    out = []
    v = lo
    while v <= hi:
        out.append(v)
        v += step
    return name, out


def _g(x: float) -> str:
    return f"{x:.4g}"


def _sim_json(r: Any) -> dict[str, object]:
    doc: dict[str, object] = {
        "params": {k: _fmt(v) for k, v in r.params.items()},
        "runs": r.runs, "violations": r.violations, "p": r.p,
        "interval": [r.lo, r.hi], "confidence": r.confidence,
        "by_property": [{"property": e.prop, "runs": e.runs, "p": e.p,
                         "interval": [e.lo, e.hi], "first_run": e.first_run,
                         "message": e.message} for e in r.by_property],
        "ends": r.ends, "mean_steps": r.steps / r.runs if r.runs else 0.0,
        "distribution_fallbacks": r.fallbacks,
    }
    if r.sprt is not None:
        s = r.sprt
        doc["sprt"] = {"p0": s.p0, "indifference": s.indifference, "alpha": s.alpha,
                       "beta": s.beta, "decision": s.decision, "runs": s.runs}
    return doc


def _sim_text(r: Any, out: TextIO) -> None:
    conf = f"{r.confidence * 100:.4g}%"
    if r.violations:
        out.write(f"VIOLATION SAMPLED in {r.violations} of {r.runs} runs\n")
        out.write(f"  P(violation) = {_g(r.p)}  in [{_g(r.lo)}, {_g(r.hi)}]"
                  f"  (Clopper-Pearson, {conf} confidence)\n")
        width = max(len(e.prop) for e in r.by_property)
        for e in r.by_property:
            out.write(f"  {e.prop:<{width}}  {e.runs} runs, P = {_g(e.p)} in"
                      f" [{_g(e.lo)}, {_g(e.hi)}]; first in run {e.first_run}: {e.message}\n")
    else:
        out.write(f"NO VIOLATION SAMPLED in {r.runs} runs: P(violation) <= {_g(r.hi)}"
                  f" ({conf} Clopper-Pearson upper bound)\n")
    if r.sprt is not None:
        s = r.sprt
        test = f"P(violation) >= {_g(s.p0)}"
        if s.decision is None:
            out.write(f"SPRT {test}: undecided after {s.runs} runs (indifference"
                      f" +-{_g(s.indifference)}); give more --runs\n")
        else:
            verdict = "accepted" if s.decision == "accept" else "rejected"
            out.write(f"SPRT {test}: {verdict} after {s.runs} runs (error probabilities"
                      f" {_g(s.alpha)}, indifference +-{_g(s.indifference)})\n")
    e = r.ends
    out.write(f"runs ended: {e['violation']} by a violation, {e['quiescent']} with nothing"
              f" left to fire, {e['time bound']} at the time bound, {e['step bound']} at the"
              f" step bound; {r.steps / max(r.runs, 1):.1f} events per run on average\n")
    if r.fallbacks:
        out.write(f"note: {r.fallbacks} delays had no probability mass in their window under"
                  " the given distribution and were drawn by the default rule\n")


def _sim_header(spec: ir.Spec, args: argparse.Namespace, cfg: Any, runs: int) -> str:
    tb = f"time bound {_g(cfg.time_bound)}" if cfg.time_bound is not None else "no time bound"
    delays = "; ".join(f"{n}={d.text()}" for n, d in cfg.delays)
    lines = [f"simulation: {runs} runs, seed {args.seed}, {tb}, at most {cfg.max_steps}"
             " events per run",
             "delays: uniform within an edge's own bound, else exponential (rate"
             f" {_g(cfg.rate)})" + (f"; {delays}" if delays else "")]
    return "\n".join(lines) + "\n"


def cmd_simulate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import api
    from checker.model import trace as tr
    from checker.model.compiled import ParamError, SpecModel
    from checker.simulate import Runner, Sprt, chernoff_runs, run_trace, simulate
    from checker.simulate.plot import PlotError, sweep_plot

    spec = _load(args.spec, args)
    params = _params(args)
    cfg = _sim_config(args, spec)
    if (args.epsilon is None) != (args.delta is None):
        raise UsageError("--epsilon and --delta go together")
    if args.epsilon is not None and args.runs is not None:
        raise UsageError("give either --runs or --epsilon/--delta (which set the runs)")
    runs = args.runs if args.runs is not None else 1000
    if args.epsilon is not None:
        runs = chernoff_runs(args.epsilon, args.delta)
    if args.sprt is not None:
        try:
            Sprt(args.sprt, args.indifference, 1 - args.confidence, 1 - args.confidence)
        except ValueError as exc:
            raise UsageError(f"--sprt: {exc}") from None
    sweep = _sweep_values(args.sweep, spec) if args.sweep else None
    if (args.csv or args.plot) and sweep is None:
        raise UsageError("--csv and --plot go with --sweep")
    if sweep is not None and args.traces:
        raise UsageError("--traces does not go with --sweep")
    points = [(None, params)] if sweep is None else [
        (v, {**params, sweep[0]: v}) for v in sweep[1]]
    models = []
    for _, values in points:
        try:
            models.append(SpecModel(spec, values))
        except ParamError as e:
            err.write(f"{args.spec}: error[KVR400]: {e}\n")
            return EXIT_BAD_INPUT
    raw = getattr(err, "raw_write", err.write)
    last = [time.monotonic()]

    def progress(done: int, total: int, bad: int) -> None:
        if args.quiet or time.monotonic() - last[0] < 2.0:
            return
        last[0] = time.monotonic()
        raw(f"kvrace simulate: {done}/{total} runs, {bad} violating\n")
        err.flush()

    results = []
    for (x, _), model in zip(points, models, strict=True):
        sprt = (Sprt(args.sprt, args.indifference, 1 - args.confidence, 1 - args.confidence)
                if args.sprt is not None else None)
        with Runner(model, cfg, args.jobs) as runner:
            res = simulate(runner, runs, args.seed, args.confidence, args.max_traces, sprt,
                           progress)
        results.append(res)
        if sweep is not None and not args.quiet and len(points) > 1:
            raw(f"kvrace simulate: {sweep[0]}={_fmt(x)}: {res.violations}/{res.runs}"  # type: ignore[arg-type]
                " violating\n")
    threshold = None
    if sweep is not None and not args.no_synth:
        threshold = api.safe_threshold(spec, sweep[0], params)
    any_bad = any(r.violations for r in results)
    if args.json:
        doc: dict[str, object] = {
            "spec": args.spec, "model": spec.name, "seed": args.seed, "runs": runs,
            "time_bound": cfg.time_bound, "max_steps": cfg.max_steps, "rate": cfg.rate,
            "delays": {n: d.text() for n, d in cfg.delays},
        }
        if sweep is None:
            doc.update(_sim_json(results[0]))
        else:
            doc["sweep"] = sweep[0]
            doc["points"] = [{"value": _fmt(x), **_sim_json(r)}  # type: ignore[arg-type]
                             for (x, _), r in zip(points, results, strict=True)]
            doc["safe_threshold"] = threshold.text(sweep[0]) if threshold else None
        from checker import jsonout

        # An estimate is not a verdict: no violation sampled proves nothing.
        env = jsonout.envelope("simulate",
                               jsonout.VIOLATED if any_bad else jsonout.INCONCLUSIVE,
                               EXIT_VIOLATION if any_bad else EXIT_OK)
        env.update(doc)
        out.write(json.dumps(env, indent=2) + "\n")
    else:
        shown = {k: v for k, v in models[0].values.items() if sweep is None or k != sweep[0]}
        shown_text = _param_text(shown)
        out.write(f"model {spec.name}" + (f"  ({shown_text})" if shown_text else "") + "\n")
        out.write(_sim_header(spec, args, cfg, runs))
        if sweep is None:
            _sim_text(results[0], out)
        else:
            name = sweep[0]
            w = max(len(name), 6)
            out.write(f"{name:>{w}}  {'runs':>6}  {'viol':>6}  {'P':>8}  interval\n")
            for (x, _), r in zip(points, results, strict=True):
                out.write(f"{_fmt(x):>{w}}  {r.runs:>6}  {r.violations:>6}  {_g(r.p):>8}"  # type: ignore[arg-type]
                          f"  [{_g(r.lo)}, {_g(r.hi)}]\n")
            if threshold is not None:
                out.write(f"exact safe region (synth, {name} free): {threshold.text(name)}\n")
            elif not args.no_synth:
                out.write(f"exact safe region (synth, {name} free): not a single bound on"
                          f" {name}, or synthesis did not finish\n")
        out.write("an estimate from random runs, not a proof: use `kvrace check` or"
                  " `kvrace prove` for a verdict\n")
    out.flush()
    if args.traces and results[0].examples:
        model = models[0]

        def write_traces() -> str:
            os.makedirs(args.traces, exist_ok=True)
            names = []
            for run in results[0].examples:
                path = os.path.join(args.traces, f"run-{run.index}.json")
                _write_json(path, tr.to_itf(run_trace(model, run)))
                names.append(path)
            return "wrote " + ", ".join(names)

        _side_output(err, args.traces, write_traces)
    if sweep is not None and args.csv:
        csv_path: str = args.csv

        def write_csv() -> str:
            lines = [f"{sweep[0]},runs,violations,p,lo,hi"]
            for (x, _), r in zip(points, results, strict=True):
                lines.append(f"{_fmt(x)},{r.runs},{r.violations},{r.p!r},{r.lo!r},{r.hi!r}")  # type: ignore[arg-type]
            try:
                with open(csv_path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
            except OSError as exc:
                raise UsageError(f"cannot write {csv_path}: {exc.strerror or exc}") from None
            return f"wrote {csv_path}"

        _side_output(err, csv_path, write_csv)
    if sweep is not None and args.plot:
        plot_path: str = args.plot

        def write_plot() -> str:
            try:
                sweep_plot(plot_path, sweep[0], sweep[1], results, threshold,
                           f"{spec.name}: {runs} runs per point, seed {args.seed}")
            except PlotError as exc:
                raise UsageError(str(exc)) from None
            return f"wrote {plot_path}"

        _side_output(err, plot_path, write_plot)
    return EXIT_VIOLATION if any_bad else EXIT_OK

def _short(exc: BaseException, width: int = 200) -> str:
    """An exception as one short line for a message."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= width else text[: width - 3] + "..."


_SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: the run ends with exit code 128 + the signal number.

    A BaseException, like KeyboardInterrupt, so that no ``except Exception`` in
    an engine can swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(_SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}"))
        self.signum = signum


class _Explored:
    """The last statistics an engine reported, for the line printed on an interrupt."""

    stats: Stats | None = None


def _explored_text() -> str:
    """What the last progress report said was explored, as a clause (or nothing)."""
    st = _Explored.stats
    if st is None:
        return "; nothing was explored"
    return (f"; had explored at least {st.states} states, {st.zones} zones in"
            f" {st.seconds:.1f} s, with no violation")


def _interrupted_line(command: str, signum: int) -> str:
    name = _SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}")
    what = {"check": "no verdict", "prove": "nothing is proved",
            "synth": "no safe region is claimed"}.get(command, "stopped")
    line = f"kvrace {command}: interrupted by {name}; {what}"
    st = _Explored.stats
    if st is not None:
        line += (f" (had explored at least {st.states} states, {st.zones} zones in"
                 f" {st.seconds:.1f} s)")
    return line


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting.

    Output goes through :class:`_Output`: control characters coming from a spec
    are replaced, and a closed or full stdout is reported on stderr as a warning
    while the exit code stays the verdict's.
    """
    out = _Output(stdout if stdout is not None else sys.stdout)
    err = _Output(stderr if stderr is not None else sys.stderr)
    code = _run(argv, out, err)
    watcher = _SignalWatcher.active
    if watcher is not None and watcher.received is not None and not watcher.reporting:
        # The signal's exception was swallowed (Z3 was cancelled, or it was raised in a
        # destructor): whatever the command concluded from that, it was interrupted.
        watcher.reporting = True
        err.write(_interrupted_line(_command_of(argv or sys.argv[1:]), watcher.received) + "\n")
        code = 128 + watcher.received
    out.flush()
    if out.error is not None and not isinstance(out.error, BrokenPipeError):
        err.write(f"kvrace: warning: the output could not be written ({_short(out.error)});"
                  f" exit code {code} is the result\n")
    err.flush()
    return code


def _run(argv: Sequence[str] | None, out: _Output, err: _Output) -> int:
    words = list(argv) if argv is not None else sys.argv[1:]
    json_mode = "--json" in words
    code = _run_command(words, out, err, json_mode)
    if json_mode and _Failure.errors:
        from checker import jsonout

        out.write(jsonout.document(_command_of(words), code, {}, _Failure.errors))
    return code


class _Failure:
    """Why the current command failed, as JSON ``errors`` entries (for ``--json``)."""

    errors: ClassVar[list[dict[str, object]]] = []


def _failed(code: str, message: str, file: str | None = None) -> None:
    from checker import jsonout

    _Failure.errors = [jsonout.error_from_text(code, message, file)]


def _run_command(words: list[str], out: _Output, err: _Output, json_mode: bool) -> int:
    _STARTED[0] = time.monotonic()
    command = "kvrace"
    _Explored.stats = None
    _Failure.errors = []
    try:
        parser = _build_parser()
        args = parser.parse_args(words)
        if args.show_version:
            out.write(f"kvrace {version()}\n")
            return EXIT_OK
        if args.command is None:
            parser.print_help(err if json_mode else out)
            _failed("usage", "no command given")
            return EXIT_BAD_INPUT
        command = args.command
        handler = {
            "lint": cmd_lint, "show": cmd_show, "check": cmd_check, "prove": cmd_prove,
            "synth": cmd_synth, "draw": cmd_draw, "graph": cmd_graph, "view": cmd_view,
            "simulate": cmd_simulate, "export": cmd_export,
        }[args.command]
        return handler(args, out, err)  # type: ignore[arg-type]
    except UsageError as e:
        err.write(f"{e}\n")
        _failed("usage", str(e))
        return EXIT_BAD_INPUT
    except _BadSpec as e:
        from checker import jsonout

        err.write(e.error.render() + "\n")
        _Failure.errors = jsonout.diagnostic_errors(e.error.diagnostics)
        return EXIT_BAD_INPUT
    except Undecided as e:
        err.write(f"kvrace: the solver could not decide a query ({e}); inconclusive\n")
        _failed("solver-unknown", f"the solver could not decide a query ({e})")
        return EXIT_INCONCLUSIVE
    except LimitReached as e:
        if json_mode:
            _failed("limit", f"{e.what}; nothing was explored")
        else:
            out.write(f"INCONCLUSIVE: {e.what}; nothing was explored\n")
        return EXIT_INCONCLUSIVE
    except ModelRuntimeError as e:
        err.write(f"kvrace: model error: {e.message}\n"
                  "  (run `kvrace check` at concrete values for the trace)\n")
        _failed("model-error", e.message)
        return EXIT_BAD_INPUT
    except RecursionError:
        err.write("kvrace: the spec is nested too deeply to process\n")
        _failed("too-deep", "the spec is nested too deeply to process")
        return EXIT_BAD_INPUT
    except Interrupted as e:
        if _SignalWatcher.active is not None:
            _SignalWatcher.active.reporting = True
        err.write(_interrupted_line(command, e.signum) + "\n")
        _failed("interrupted", _interrupted_line(command, e.signum))
        return 128 + e.signum
    except KeyboardInterrupt:
        err.write(_interrupted_line(command, signal.SIGINT) + "\n")
        _failed("interrupted", _interrupted_line(command, signal.SIGINT))
        return EXIT_SIGINT
    except MemoryError:
        out.write(f"INCONCLUSIVE: out of memory{_explored_text()}\n")
        err.write(f"kvrace {command}: out of memory; no verdict (use --max-memory to stop"
                  " earlier, with the statistics of what was explored)\n")
        return EXIT_INCONCLUSIVE
    except Exception as exc:  # the last line of defence: never a traceback
        watcher = _SignalWatcher.active
        if watcher is not None and watcher.received is not None:
            # e.g. ctypes.ArgumentError wrapping the interrupt raised in a Z3 call:
            # main() reports the interrupt.
            return 128 + watcher.received
        err.write(f"kvrace {command}: internal error: {type(exc).__name__}: {_short(exc)}\n"
                  "  this is a bug in kvrace, not a verdict; please report it with the"
                  " command and the spec\n")
        _failed("internal", f"{type(exc).__name__}: {_short(exc)}")
        return EXIT_INTERNAL


class _Output:
    """A text stream for the command's output.

    Control characters other than newline and tab are replaced (U+FFFD), so an
    assert message cannot send terminal escapes; JSON output is unaffected
    (json escapes them).  A write that fails — stdout closed, a reader gone
    (``| head``), a full disk — is remembered in :attr:`error` and later writes
    are dropped: the command still runs to its verdict and exit code.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.error: BaseException | None = None if stream is not None else OSError(
            "the stream is closed")

    def write(self, text: str) -> int:
        """Write ``text`` without its control characters."""
        return self.raw_write(printable(text))

    def raw_write(self, text: str) -> int:
        """Write ``text`` as it is (the progress line's own terminal codes)."""
        if self.error is None and self.stream is not None:
            try:
                self.stream.write(text)
            except (OSError, ValueError) as exc:  # ValueError: the file was closed
                self.error = exc
        return len(text)

    def flush(self) -> None:
        """Flush the stream, remembering a failure."""
        if self.error is None and self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self.error = exc

    def isatty(self) -> bool:
        """Whether the stream is a terminal."""
        try:
            return self.stream is not None and self.error is None and self.stream.isatty()
        except (OSError, ValueError):
            return False


class _SignalWatcher:
    """Turns SIGINT and SIGTERM into :class:`Interrupted` in the main thread.

    Python runs signal handlers only between bytecodes, so a long Z3 query would
    delay them: a wakeup file descriptor tells a watcher thread that a signal
    arrived, and the thread stops the running query
    (:func:`checker.smt.interrupt_solvers`); the handler then raises in the main
    thread.  A second signal while the first is being reported is ignored, and so
    is a signal the process was started ignoring (``nohup``, a background job).
    """

    active: _SignalWatcher | None = None
    """The watcher of this process, once installed."""

    def __init__(self) -> None:
        self.received: int | None = None
        """The first signal received."""
        self.reporting = False
        """Set while the interrupt is being reported: later signals are ignored."""
        self.reader, writer = socket.socketpair()
        writer.setblocking(False)
        self.writer = writer
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored stays ignored
                signal.signal(signum, self.handle)
        self.default_hook = sys.unraisablehook
        sys.unraisablehook = self.unraisable
        threading.Thread(target=self.watch, name="kvrace-signals", daemon=True).start()
        _SignalWatcher.active = self

    def handle(self, signum: int, frame: object) -> None:
        """The Python-level handler: raise in the main thread until it is reported."""
        if self.received is None:
            self.received = signum
        if not self.reporting:
            raise Interrupted(self.received)

    def unraisable(self, info: Any) -> None:
        """An :class:`Interrupted` raised where Python cannot propagate it (a destructor)
        is not printed; the watcher thread raises it again in ordinary code."""
        if isinstance(info.exc_value, Interrupted) or self.received is not None:
            # The watcher raises the interrupt again; and after an interrupt, objects
            # it left half-built (a Z3 solver) may fail in their destructors: noise.
            return
        self.default_hook(info)

    def watch(self) -> None:
        """The watcher thread: on a signal, stop the solver query in progress; then,
        until the main thread reports the interrupt, raise it there again every
        :data:`RETRY` seconds (in case the exception was swallowed: by ctypes, a
        destructor, a library's ``except``), and after :data:`DEADLINE` seconds end
        the process with the interrupt's exit code whatever it is doing."""
        first: float | None = None
        signum: int = signal.SIGINT
        while True:
            self.reader.settimeout(None if first is None else self.RETRY)
            try:
                data = self.reader.recv(64)
            except TimeoutError:
                data = None
            except OSError:
                return
            if data == b"":
                return
            if data:
                signum = self.received or data[0]
                if first is None:
                    first = time.monotonic()
            self.stop_solvers()
            if first is None:
                continue
            if time.monotonic() - first > self.DEADLINE:
                with contextlib.suppress(OSError):
                    os.write(2, f"kvrace: interrupted by {_signal_name(signum)}; stopped\n"
                             .encode())
                os._exit(128 + signum)
            if not self.reporting:
                _thread.interrupt_main(signal.Signals(signum))

    RETRY = 0.2
    """Seconds between two attempts to raise the interrupt in the main thread."""
    DEADLINE = 3.0
    """Seconds after the first signal at which the process is ended regardless."""

    @staticmethod
    def stop_solvers() -> None:
        """Stop the Z3 query in progress, if Z3 is in use (best effort)."""
        smt = sys.modules.get("checker.smt")
        if smt is not None:
            with contextlib.suppress(Exception):
                smt.interrupt_solvers()


def _signal_name(signum: int) -> str:
    """``SIGINT``, ``SIGTERM``, or ``signal N``."""
    return _SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}")


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand named on the command line, for messages printed before parsing."""
    commands = ("lint", "show", "check", "prove", "synth", "draw", "graph", "view",
                "simulate", "export")
    return next((a for a in argv if a in commands), "kvrace")


def entry_point(early_signals: Sequence[int] = ()) -> None:
    """Console-script entry: ``kvrace``.

    ``early_signals`` are signals caught while the program was starting (see
    ``checker/__main__.py``): the run ends at once as interrupted.
    """
    try:
        _SignalWatcher()
        if early_signals:
            raise Interrupted(early_signals[0])
        code = main(None, sys.stdout, sys.stderr)
    except (Interrupted, KeyboardInterrupt) as e:  # outside main's own handling
        if _SignalWatcher.active is not None:
            _SignalWatcher.active.reporting = True
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(_interrupted_line(_command_of(sys.argv[1:]), signum) + "\n")
        code = 128 + signum
    if sys.stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        # Keep Python from complaining about a closed pipe or a full disk at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    sys.exit(code)

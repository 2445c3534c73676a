"""The ``kvrace`` command line.

Exit codes (the same for every subcommand):

* 0 — the spec is fine / every property holds / proved;
* 1 — a violation was found (with its trace);
* 2 — bad input or usage: a broken spec, an unknown parameter, a missing file;
* 3 — inconclusive: a limit was hit (states, time, memory) or the solver said unknown.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TextIO

from checker.diagnostics import SpecError
from checker.explorer import Limits, Options, Stats
from checker.model import ir

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class UsageError(Exception):
    """A command-line mistake: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kvrace",
        description="Model checking of release protocols for remotely written memory.",
        epilog="exit codes: 0 holds, 1 violation, 2 bad input, 3 inconclusive",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    lint = sub.add_parser("lint", help="check specs for errors; print diagnostics")
    lint.add_argument("specs", nargs="+", metavar="SPEC")
    show = sub.add_parser("show", help="summarise a spec: types, parameters, actors, ...")
    show.add_argument("spec", metavar="SPEC")

    check = sub.add_parser(
        "check",
        help="explore every interleaving and check every property",
        description="Explore the zone graph of SPEC at concrete parameter values and check"
        " every assert, invariant, bounded-response property and deadlock freedom."
        " Exit 0 = every property holds, 1 = violation (with a shortest trace),"
        " 2 = bad input, 3 = inconclusive (a limit was hit).",
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
    _add_search_args(check)
    return p


def _add_param_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="set a timing parameter (repeatable); others keep their defaults")


def _add_search_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("search")
    g.add_argument("--max-states", type=int, metavar="N",
                   help="stop (inconclusive) after storing N symbolic states")
    g.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="stop (inconclusive) after this many seconds")
    g.add_argument("--max-memory", type=int, metavar="MIB",
                   help="stop (inconclusive) when the process uses more memory")
    g.add_argument("--dfs", action="store_true",
                   help="depth-first search (traces are then not the shortest)")
    g.add_argument("--no-symmetry", action="store_true",
                   help="do not reduce by the symmetric types")
    g.add_argument("--no-clock-reduction", action="store_true",
                   help="keep every clock in every zone")
    g.add_argument("--no-deadlock", action="store_true", help="do not check deadlock freedom")
    g.add_argument("--quiet", "-q", action="store_true", help="no progress line")


def parse_param(text: str) -> tuple[str, Fraction]:
    """``NAME=VALUE`` with a decimal or fractional value."""
    if "=" not in text:
        raise UsageError(f"--param expects NAME=VALUE, got {text!r}")
    name, _, value = text.partition("=")
    try:
        return name.strip(), Fraction(value.strip())
    except (ValueError, ZeroDivisionError):
        raise UsageError(f"--param {name}: {value!r} is not a number") from None


def _load(path: str) -> ir.Spec:
    from checker.language import load

    return load(path)


def cmd_lint(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status = EXIT_OK
    for path in args.specs:
        try:
            _load(path)
        except SpecError as e:
            err.write(e.render() + "\n")
            status = EXIT_BAD_INPUT
            continue
        out.write(f"{path}: ok\n")
    return status


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(float(x))


def describe_spec(spec: ir.Spec) -> str:
    """The ``kvrace show`` summary of a spec."""
    from checker.model.compiled import SpecModel

    model = SpecModel(spec)
    lines = [f"model {spec.name}  ({spec.path})", "", "types:"]
    for t in spec.types:
        sym = "symmetric " if t.symmetric else ""
        body = "{" + ", ".join(t.labels) + "}" if t.kind == "enum" else f"{t.lo}..{t.hi}"
        lines.append(f"  {sym}{t.name} = {body}")
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
    lines.append(
        f"size: {model.event_count} event instances, {len(model.clock_names)} clock instances,"
        f" {model.state_size} state cells"
    )
    return "\n".join(lines)


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        spec = _load(args.spec)
    except SpecError as e:
        err.write(e.render() + "\n")
        return EXIT_BAD_INPUT
    out.write(describe_spec(spec) + "\n")
    return EXIT_OK


def _params(args: argparse.Namespace) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for text in args.param:
        name, value = parse_param(text)
        out[name] = value
    return out


def _limits(args: argparse.Namespace) -> Limits:
    for name in ("max_states", "timeout", "max_memory"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
    return Limits(args.max_states, args.timeout, args.max_memory)


def _progress(err: TextIO, quiet: bool) -> Callable[[Stats], None] | None:
    if quiet or not err.isatty():
        return None

    def show(st: Stats) -> None:
        rate = st.zones / st.seconds if st.seconds else 0.0
        err.write(f"\r  {st.zones} zones, {st.states} states, depth {st.depth},"
                  f" {st.queued} queued, {rate:,.0f} zones/s   ")
        err.flush()

    return show


def _options(args: argparse.Namespace, err: TextIO) -> Options:
    return Options(
        search="dfs" if args.dfs else "bfs",
        symmetry=not args.no_symmetry,
        clock_reduction=not args.no_clock_reduction,
        deadlock=not args.no_deadlock,
        progress=_progress(err, args.quiet),
    )


def stats_line(st: Stats) -> str:
    """The statistics of a run in one line."""
    return (
        f"explored {st.states} states, {st.zones} zones, {st.transitions} transitions"
        f" in {st.seconds:.2f} s ({st.states_per_second:,.0f} zones/s),"
        f" peak memory {st.peak_memory_mb:.0f} MiB"
    )


def stats_json(st: Stats) -> dict[str, object]:
    """The statistics of a run as JSON."""
    return {
        "states": st.states, "zones": st.zones, "transitions": st.transitions,
        "seconds": round(st.seconds, 3), "zones_per_second": round(st.states_per_second, 1),
        "peak_memory_mib": round(st.peak_memory_mb, 1), "depth": st.depth,
    }


def _param_text(values: dict[str, Fraction]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from checker import api
    from checker.model import trace as tr
    from checker.model.compiled import ParamError

    try:
        spec = _load(args.spec)
    except SpecError as e:
        err.write(e.render() + "\n")
        return EXIT_BAD_INPUT
    params = _params(args)
    limits = _limits(args)
    options = _options(args, err)
    try:
        outcome = api.check(spec, params, limits=limits, options=options)
    except ParamError as e:
        err.write(f"{args.spec}: error[KVR400]: {e}\n")
        return EXIT_BAD_INPUT
    finally:
        if options.progress is not None:
            err.write("\r\033[K")
    code = {api.HOLDS: EXIT_OK, api.VIOLATED: EXIT_VIOLATION,
            api.INCONCLUSIVE: EXIT_INCONCLUSIVE, api.ERROR: EXIT_BAD_INPUT}[outcome.verdict]
    explanation = None
    if args.explain and outcome.trace is not None and outcome.verdict == api.VIOLATED:
        explanation = api.explain(outcome)
    if args.trace and outcome.trace is not None:
        _write_json(args.trace, tr.to_itf(outcome.trace))
    diagram_note = None
    if args.diagram:
        if outcome.trace is None:
            diagram_note = "no diagram: there is no counterexample to draw"
        else:
            diagram_note = _draw(outcome.trace, args.diagram)
    if args.json:
        doc: dict[str, object] = {
            "spec": args.spec, "model": spec.name,
            "params": {k: _fmt(v) for k, v in outcome.params.items()},
            "verdict": outcome.verdict, "property": outcome.prop, "message": outcome.message,
            "limit": outcome.limit, "stats": stats_json(outcome.stats),
            "trace": tr.to_itf(outcome.trace) if outcome.trace is not None else None,
        }
        if explanation is not None:
            doc["feasible_region"] = explanation
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write(f"model {spec.name}  ({_param_text(outcome.params)})\n")
        out.write(_verdict_text(outcome) + "\n")
        if outcome.trace is not None:
            kind = "shortest " if options.search == "bfs" else ""
            n = len(outcome.trace.steps) - 1
            out.write(f"\n{kind}trace, {n} event{'s' if n != 1 else ''}:\n")
            out.write(tr.to_text(outcome.trace) + "\n")
            if outcome.timing_note:
                out.write(f"  ({outcome.timing_note})\n")
        if explanation is not None:
            out.write(f"\nthis sequence of events is possible exactly when: {explanation}\n")
        out.write("\n" + stats_line(outcome.stats) + "\n")
    if diagram_note:
        err.write(diagram_note + "\n")
    return code


def _verdict_text(outcome: Any) -> str:
    from checker import api

    if outcome.verdict == api.HOLDS:
        return "HOLDS: every property holds (exploration complete)"
    if outcome.verdict == api.VIOLATED:
        return f"VIOLATED: {outcome.prop}: {outcome.message}"
    if outcome.verdict == api.INCONCLUSIVE:
        return f"INCONCLUSIVE: {outcome.limit}; no violation in what was explored"
    return f"MODEL ERROR: {outcome.message}"


def _write_json(path: str, doc: object) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _draw(trace: Any, path: str) -> str | None:
    from checker import render

    try:
        result = render.render(render.sequence_dot(trace), path)
    except render.RenderError as exc:
        raise UsageError(f"cannot draw {path}: {exc}") from None
    return result.hint


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = _build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else sys.argv[1:])
        if args.command is None:
            parser.print_help(out)
            return EXIT_BAD_INPUT
        handler = {"lint": cmd_lint, "show": cmd_show, "check": cmd_check}[args.command]
        return handler(args, out, err)
    except UsageError as e:
        err.write(f"{e}\n")
        return EXIT_BAD_INPUT
    except RecursionError:
        err.write("kvrace: the spec is nested too deeply to process\n")
        return EXIT_BAD_INPUT


def entry_point() -> None:
    """Console-script entry: ``kvrace``."""
    sys.exit(main())

"""The ``kvrace`` argument parser: one sub-parser per command."""

from __future__ import annotations

import argparse
import difflib
import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from checker.cli.values import (
    positive_float,
    positive_int,
    positive_seconds,
    probability,
    whole_int,
)
from checker.errors import UsageError

if TYPE_CHECKING:
    # What ``add_subparsers`` returns (its class is private to argparse).
    Subparsers: TypeAlias = argparse._SubParsersAction["_Parser"]

COMMANDS = ("lint", "show", "check", "prove", "synth", "draw", "graph", "view", "simulate",
            "export", "fmt", "lsp", "validate", "schedules", "import")
#: The module of a command whose name is not a usable module name.
MODULES = {"import": "importcmd"}
"""The subcommands; each is run by the module of its name in :mod:`checker.cli`."""


class _Parser(argparse.ArgumentParser):
    """Bad usage raises :class:`UsageError` (one line, exit 2) instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Raise the usage error instead of printing it and exiting."""
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if m is not None:
            choices = re.findall(r"'([^']*)'", m[2])
            message += _suggestion(m[1], choices)
        raise UsageError(f"{self.prog}: {message}")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None,
    ) -> argparse.Namespace:
        """The parsed command line; words no option takes are refused in the name of the
        subcommand they were given to (``kvrace check: unrecognized arguments: --depht;
        did you mean `--depth`?``)."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            sub = self._subparser(getattr(ns, "command", None))
            prog = sub.prog if sub is not None else self.prog
            options = [o for a in (sub or self)._actions for o in a.option_strings]
            hint = next((h for w in extras if w.startswith("-")
                         for h in [_suggestion(w.partition("=")[0], options)] if h), "")
            raise UsageError(f"{prog}: unrecognized arguments: {' '.join(extras)}{hint}")
        return ns

    def _subparser(self, command: str | None) -> argparse.ArgumentParser | None:
        """The parser of subcommand ``command``, if there is one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command is not None:
                found: argparse.ArgumentParser | None = action.choices.get(command)
                return found
        return None


def _suggestion(word: str, candidates: Sequence[str]) -> str:
    """``; did you mean `X`?`` for the candidate closest to ``word``, or ``""``."""
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.7)
    return f"; did you mean `{close[0]}`?" if close else ""


class _VersionAction(argparse.Action):
    """``--version``: the version is read from the package metadata only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        namespace.show_version = True


@functools.cache
def shared_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line, built once per process: parsing leaves it
    unchanged, and an in-process caller (the language server, the Python API's
    callers, a test suite) runs many commands."""
    return build_parser()


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line."""
    p = _Parser(
        prog="kvrace",
        description="Model checking of release protocols for remotely written memory.",
        epilog="exit codes: 0 holds, 1 violation, 2 bad input, 3 inconclusive,"
        " 4 vacuous (check --strict), 5 a `reachable` query never reachable (check),"
        " 6 the log deviates from the spec (validate),"
        " 70 internal error, 130 SIGINT, 143 SIGTERM",
    )
    p.add_argument("--version", action=_VersionAction, nargs=0, dest="show_version",
                   default=False, help="print kvrace's version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_lint_parser(sub)
    _add_check_parser(sub)
    _add_prove_parser(sub)
    _add_synth_parser(sub)
    _add_draw_parser(sub)
    _add_export_parser(sub)
    _add_graph_parser(sub)
    _add_view_parser(sub)
    _add_simulate_parser(sub)
    _add_editor_parsers(sub)
    _add_validate_parser(sub)
    _add_schedules_parser(sub)
    _add_import_parser(sub)
    return p


def _add_import_parser(sub: Subparsers) -> None:
    """``import``."""
    imp = sub.add_parser(
        "import", help="translate an IMITATOR 3.x model (.imi) into a kvrace spec",
        description="Translate an IMITATOR 3.x network of parametric timed automata into a"
        " .kvr spec (n-ary synchronisation flattened into one event per combination of"
        " edges).  A `#synth AGnot(P)` property becomes `invariant agnot` (synth --property"
        " agnot), `#synth EF(P)` becomes `reachable ef` (synth --query ef).  Exit 0 ="
        " translated, 2 = a construct cannot be read or translated (FILE:LINE:COL).")
    imp.add_argument("model", metavar="MODEL.imi")
    imp.add_argument("--property", metavar="FILE.imiprop",
                     help="the IMITATOR property file (#synth AGnot(...) or EF(...))")
    imp.add_argument("-o", "--output", metavar="OUT.kvr", help="write here (default: stdout)")
    imp.add_argument("--param-max", type=int, default=100, metavar="N",
                     help="upper end of a parameter's range when the model gives none")
    imp.add_argument("--int-range", default="-100..100", metavar="LO..HI",
                     help="range of the model's unbounded integer variables")


def _add_lint_parser(sub: Subparsers) -> None:
    """``lint`` and ``show``."""
    lint = sub.add_parser("lint", help="check specs for errors; print diagnostics")
    lint.add_argument("specs", nargs="+", metavar="SPEC")
    lint.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_ci_args(lint, "one test case per file, failing with its diagnostics",
                 "one result per diagnostic, its rule the diagnostic's code")
    show = sub.add_parser("show", help="summarise a spec: types, parameters, actors, ...")
    show.add_argument("spec", metavar="SPEC")
    show.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_param_args(show)


def _add_editor_parsers(sub: Subparsers) -> None:
    """``fmt`` and ``lsp``."""
    fmt = sub.add_parser(
        "fmt", help="lay specs out canonically (in place; --check/--diff for CI)",
        description="Lay out each SPEC canonically: spacing, indentation, kept alignment;"
        " tokens and line breaks never change.  A directory stands for its .kvr files,"
        " `-` for standard input (formatted to standard output).  Exit 0 = nothing to"
        " change, 1 = --check/--diff found a file to change, 2 = a file does not parse.")
    fmt.add_argument("specs", nargs="+", metavar="SPEC")
    mode = fmt.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="change nothing; list the files that would change (exit 1)")
    mode.add_argument("--diff", action="store_true",
                      help="change nothing; print the changes as a unified diff (exit 1)")
    lsp = sub.add_parser(
        "lsp", help="run the language server (for editors) on stdin/stdout",
        description="The Language Server Protocol over standard input and output:"
        " diagnostics, hover, definitions, references, symbols, completion, formatting"
        " and a `check` code lens.  Needs the `lsp` extra (pip install kvrace[lsp]).")
    lsp.add_argument("--check-timeout", type=positive_seconds, default=30.0,
                     metavar="SECONDS",
                     help="time limit of the `check this spec` command (default 30)")


def _add_check_parser(sub: Subparsers) -> None:
    """``check``."""
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
    _add_ci_args(check, "one test case per property, a violation failing with its"
                 " counterexample", "one result per property not shown to hold, at its"
                 " declaration, its rule the property's kind")
    _add_query_args(check)
    _add_liveness_args(check)
    _add_search_args(check)
    _add_cluster_args(check)


def _add_prove_parser(sub: Subparsers) -> None:
    """``prove``."""
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


def _add_synth_parser(sub: Subparsers) -> None:
    """``synth``."""
    synth = sub.add_parser(
        "synth",
        help="synthesise the exact parameter region in which every property holds",
        description="Parametric zone exploration (EFsynth) over the free parameters (by"
        " default every parameter with a declared range): the exact set of valuations inside"
        " the ranges for which every assert, invariant and bounded-response property holds"
        " and the model is free of deadlocks (time-locks included)."
        " Complete when exploration finishes; a limit gives inconclusive (exit 3)."
        "  Exit 0 = region computed (some value is safe), 1 = no value in the ranges is"
        " safe, 2 = bad input, 3 = inconclusive, 5 = (--query) never reachable.",
    )
    synth.add_argument("spec", metavar="SPEC")
    _add_free_args(synth)
    target = synth.add_mutually_exclusive_group()
    target.add_argument("--property", metavar="NAME",
                        help="the region in which this one invariant or bounded response"
                        " holds (or `deadlock`: deadlock freedom; `assert`: every assert);"
                        " the other properties are not checked")
    target.add_argument("--query", metavar="NAME",
                        help="the region in which the state of `reachable NAME` is reachable"
                        " (IMITATOR's EF synthesis); no property is checked")
    synth.add_argument("--project", metavar="A,B",
                       help="print the region projected onto these free parameters: their"
                       " values for which some value of the other free parameters is safe"
                       " (with --query: reachable), as IMITATOR's projectresult")
    synth.add_argument("--provenance", action="store_true",
                       help="after the region, each of its constraints with the guards,"
                       " deadlines, bounds and `assume` constraints (file:line) whose bounds"
                       " mention its parameters (always in --json)")
    synth.add_argument("--plot", metavar="FILE",
                       help="with exactly two free parameters with bounded ranges: draw the"
                       " region in their plane (.svg, .png or .pdf)")
    synth.add_argument("--json", action="store_true",
                       help="print the result as JSON, with the region in SMT-LIB")
    _add_limit_args(synth)
    synth.add_argument("--no-deadlock", action="store_true",
                       help="leave deadlock freedom out of the region")
    synth.add_argument("--no-merge", action="store_true",
                       help="do not merge symbolic states of one discrete state whose union is"
                       " convex (merging is on by default; the region is the same either way,"
                       " only the number of symbolic states and the time differ)")
    synth.add_argument("--quiet", "-q", action="store_true", help="no progress display")


def _add_draw_parser(sub: Subparsers) -> None:
    """``draw``."""
    draw = sub.add_parser("draw", help="draw a trace file (from check --trace) as a diagram")
    draw.add_argument("trace", metavar="TRACE.json")
    draw.add_argument("-o", "--output", required=True, metavar="FILE",
                      help="output file: .dot, .svg, .png or .pdf")
    draw.add_argument("--json", action="store_true", help="print the result as JSON")


def _add_graph_parser(sub: Subparsers) -> None:
    """``graph``."""
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


def _add_view_parser(sub: Subparsers) -> None:
    """``view``."""
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
    view.add_argument("--port", type=whole_int, default=0, metavar="N",
                      help="serve on this port (default: a free one)")
    view.add_argument("--step", default="0", metavar="N|race",
                      help="open the page at step N, or at the violating step (race); an"
                      " address ending in #step=N or #race does the same")
    _add_limit_args(view)
    view.set_defaults(max_memory=None)


def _add_export_parser(sub: Subparsers) -> None:
    """``export``."""
    export = sub.add_parser(
        "export", help="translate a spec into UPPAAL's XML or TChecker's format",
        description="Write the spec as a network of processes (one per actor or process"
                    " instance, one per deadline instance, a verdict process whose"
                    " location `bad` answers the properties, one per reachable query):"
                    " for TChecker (tck-reach -a covreach -l bad FILE) and/or for UPPAAL"
                    " (XML, one template per process, the queries in the file: verifyta"
                    " FILE).  --flat writes one automaton with a location per discrete"
                    " state instead.")
    export.add_argument("spec", metavar="SPEC")
    _add_param_args(export)
    export.add_argument("--uppaal", metavar="FILE.xml", help="write UPPAAL's XML here")
    export.add_argument("--tchecker", metavar="FILE.tck", help="write TChecker's format here")
    export.add_argument("--max-locations", type=positive_int, metavar="N",
                        help="refuse to unfold more discrete states (default 20000)")
    export.add_argument("--flat", action="store_true",
                        help="one automaton with a location per discrete state instead of"
                        " a network of processes (both formats)")
    export.add_argument("--json", action="store_true", help="print the result as JSON")


def _add_ci_args(p: argparse.ArgumentParser, junit: str, sarif: str) -> None:
    """``--junit FILE`` and ``--sarif FILE``: the CI reports."""
    p.add_argument("--junit", metavar="FILE", help=f"write a JUnit XML report: {junit}")
    p.add_argument("--sarif", metavar="FILE",
                   help=f"write a SARIF 2.1.0 report for code scanning: {sarif}")


def _add_free_args(p: argparse.ArgumentParser) -> None:
    """``--free`` (and ``-p``)."""
    p.add_argument("--free", action="append", default=[], metavar="NAMES",
                   help="comma-separated parameters to treat as unknown (default: every"
                   " parameter with a declared range); the others stay at their defaults")
    _add_param_args(p)


def _add_param_args(p: argparse.ArgumentParser) -> None:
    """``-p NAME=VALUE``."""
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="set a timing parameter or a structural constant (repeatable);"
                   " others keep their defaults")


def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    """``--workers``, ``--backend`` and ``--ray``."""
    g = p.add_argument_group("distribution (breadth-first; the same verdict and trace as"
                             " one process)")
    g.add_argument("--workers", type=positive_int, metavar="N",
                   help="explore in N worker processes on this machine (forked from this"
                   " one; no Ray needed unless --backend ray)")
    g.add_argument("--backend", choices=["local", "ray"], default=None,
                   help="what runs --workers on this machine: local (default: forked"
                   " processes over pipes) or ray (a local Ray instance started for the"
                   " run; needs pip install 'kvrace[ray]')")
    g.add_argument("--ray", metavar="ADDRESS",
                   help="explore on the Ray cluster at ADDRESS (auto: the one started here"
                   " with `ray start --head`; ray://HOST:10001: a remote head), one worker"
                   " per CPU unless --workers says (needs pip install 'kvrace[ray]')")


MEMORY_DEFAULT = " (default: 90%% of the memory available at the start)"
"""What every ``--max-memory`` says of its default (see :data:`checker.limits.SAFETY_SHARE`)."""

MEMORY_LIMITED = ("check", "simulate", "validate")
"""The commands with ``--max-memory`` (the advice of an out-of-memory message names it
only for them)."""


def _add_limit_args(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--max-states`` and ``--timeout``."""
    p.add_argument("--max-states", type=positive_int, metavar="N",
                   help="stop (inconclusive) after storing N symbolic states")
    p.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                   help="stop (inconclusive) after this many seconds")


def _add_query_args(p: argparse.ArgumentParser) -> None:
    """``--query`` and ``--witness``."""
    p.add_argument("--query", metavar="NAME",
                   help="check only the query `reachable NAME`: stop at its first witness"
                   " (exit 0), or exit 5 if it is never reachable; no other property is"
                   " checked")
    p.add_argument("--witness", metavar="NAME",
                   help="--trace and --diagram write the witness of `reachable NAME`"
                   " instead of the counterexample")


def _add_liveness_args(p: argparse.ArgumentParser) -> None:
    """``--no-liveness`` and ``--property``."""
    p.add_argument("--no-liveness", action="store_true",
                   help="do not check the unbounded liveness properties (`P leadsto Q`"
                   " without `within`, `always eventually Q`)")
    p.add_argument("--property", metavar="NAME", dest="live_property",
                   help="of the unbounded liveness properties, check only NAME")


def _add_search_args(p: argparse.ArgumentParser) -> None:
    """The search options of ``check``."""
    g = p.add_argument_group("search")
    _add_limit_args(g)
    g.add_argument("--max-memory", type=positive_int, metavar="MIB",
                   help="stop (inconclusive) when the process uses more memory"
                   + MEMORY_DEFAULT)
    g.add_argument("--dfs", action="store_true",
                   help="depth-first search (traces are then not the shortest)")
    g.add_argument("--no-symmetry", action="store_true",
                   help="do not reduce by the symmetric types")
    g.add_argument("--no-clock-reduction", action="store_true",
                   help="keep every clock in every zone")
    g.add_argument("--no-deadlock", action="store_true", help="do not check deadlock freedom")
    g.add_argument("--clock-bounds", choices=["timed", "untimed", "static"], default="timed",
                   help="where each discrete state's live clocks and LU bounds come from:"
                   " timed (default: a pre-pass over the discrete states following time"
                   " coarsely), untimed (a pre-pass ignoring clocks), static (per process"
                   " location from the syntax, computed as states are met, no pre-pass;"
                   " for networks of processes, others get the timed pre-pass)")
    g.add_argument("--local-time", action="store_true",
                   help="explore local-time zones (each process's time runs on its own"
                   " between the events it takes part in): fewer zones for loosely"
                   " coupled processes; checks invariants, asserts and queries without"
                   " clocks; needs --no-deadlock, no symmetry reduction, one process")
    g.add_argument("--quiet", "-q", action="store_true", help="no progress display")


def _add_simulate_parser(sub: Subparsers) -> None:
    """``simulate``."""
    sim = sub.add_parser(
        "simulate",
        help="random runs: estimate the probability of a violation (statistical model"
        " checking)",
        description="Draw random runs of SPEC under a stochastic semantics (each edge draws"
        " a firing time uniform within its own upper bound, exponential where it has none;"
        " the earliest fires) and estimate the probability that a run violates a property,"
        " with a Clopper-Pearson interval.  An estimate, never a proof: a simulation never"
        " says 'holds'.  Exit 0 = no violation sampled, 1 = a violation was sampled,"
        " 2 = bad input, 3 = --timeout or --max-memory ended it before a violation was"
        " sampled.",
    )
    sim.add_argument("spec", metavar="SPEC")
    _add_param_args(sim)
    sim.add_argument("--runs", type=positive_int, metavar="N",
                     help="number of runs (default 1000; with --sprt, the most it may use)")
    sim.add_argument("--seed", type=whole_int, default=0, metavar="S",
                     help="random seed (default 0); run i draws from (S, i) alone")
    sim.add_argument("--delay", action="append", default=[], metavar="NAME=DIST",
                     help="distribution of the clock bounded by parameter NAME when the edge"
                     " it bounds fires, or (NAME = actor.event) of that event's delay since"
                     " it became enabled: uniform(a,b), exp(rate), lognormal(mu,sigma),"
                     " empirical(FILE.csv) or mixture(w1*D1, w2*D2, ...); truncated to the"
                     " edge's window (repeatable)")
    sim.add_argument("--rate", type=positive_float, default=1.0, metavar="R",
                     help="rate of the exponential delay of an edge without an upper bound"
                     " (default 1 per time unit)")
    sim.add_argument("--time-bound", type=positive_float, metavar="T",
                     help="estimate P(violation by model time T): runs stop at T")
    sim.add_argument("--max-steps", type=positive_int, default=10_000, metavar="K",
                     help="runs stop after K events (default 10000)")
    sim.add_argument("--confidence", type=probability, default=0.95, metavar="C",
                     help="confidence of the intervals (default 0.95)")
    sim.add_argument("--epsilon", type=probability, metavar="E",
                     help="with --delta: as many runs as the Chernoff-Hoeffding bound needs"
                     " for the estimate to be within E with probability 1-delta")
    sim.add_argument("--delta", type=probability, metavar="D")
    sim.add_argument("--sprt", type=probability, metavar="P0",
                     help="sequential test of P(violation) >= P0 (Wald's SPRT, error"
                     " probabilities 1-confidence); stops as soon as it decides")
    sim.add_argument("--indifference", type=probability, default=0.01, metavar="D",
                     help="half-width of the SPRT's indifference region (default 0.01)")
    sim.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                     help="stop after this many seconds (exit 3, inconclusive, unless a"
                     " violation was sampled; the estimate covers the runs done)")
    sim.add_argument("--max-memory", type=positive_int, metavar="MIB",
                     help="stop (as --timeout does) when the process uses more memory"
                     + MEMORY_DEFAULT)
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


def _add_validate_parser(sub: Subparsers) -> None:
    """``validate``."""
    val = sub.add_parser(
        "validate",
        help="check that a log of the running system is a run of the spec",
        description="Timed trace validation: follow the set of symbolic states of SPEC"
        " consistent with LOG line by line (zones with an absolute-time clock), letting"
        " unobservable events happen between lines.  LOG is JSON lines"
        " ({\"t\": 881.28, \"event\": \"decode.release\", \"args\": {\"r\": \"A\"}}),"
        " or text lines read through --map.  Exit 0 = the log conforms, 1 = it conforms"
        " and every run consistent with it breaks a property, 2 = bad input,"
        " 3 = inconclusive (a limit), 6 = the log deviates (the first line that is not"
        " possible, and what was).",
    )
    val.add_argument("spec", metavar="SPEC")
    val.add_argument("log", metavar="LOG")
    _add_param_args(val)
    val.add_argument("--map", metavar="MAP.toml",
                     help="read LOG as text lines through this mapping (a regex per event)")
    val.add_argument("--observable", action="append", default=[], metavar="EV,...",
                     help="the events (actor.event, or one instance as the spec prints it:"
                     " 'decode.allocate(B, s0)') the log records; others may happen"
                     " unobserved between lines (default: every event the log, or the"
                     " mapping, names)")
    val.add_argument("--clock-error", metavar="SECONDS",
                     help="uncertainty of each timestamp (default 0): an event logged at t"
                     " happened in [t - e, t + e]")
    val.add_argument("--skew", action="append", default=[], metavar="ACTOR[+ACTOR...]=SECONDS",
                     help="the lines of these actors' events are stamped by one clock (a"
                     " machine's) offset from the log's by an unknown constant of at most"
                     " SECONDS (repeatable, one clock domain each; the other actors share"
                     " the log's clock)")
    val.add_argument("--start", metavar="T|LO:HI",
                     help="the log time at which the model starts (default 0); LO:HI: at an"
                     " unknown time between; either end may be relative to the first line,"
                     " e.g. first-120:first (at most two minutes before it)")
    val.add_argument("--free", action="append", default=[], metavar="NAMES",
                     help="comma-separated parameters to leave open: print the region of"
                     " their values for which the log is a run of the spec (polyhedra; for"
                     " excerpts, not long logs)")
    val.add_argument("--diagram", metavar="FILE",
                     help="draw the run the log is consistent with (.dot, .svg, .png, .pdf);"
                     " the run is kept in memory")
    val.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_limit_args(val)
    val.add_argument("--max-memory", type=positive_int, metavar="MIB",
                     help="stop (inconclusive) when the process uses more memory"
                     + MEMORY_DEFAULT)


def _add_schedules_parser(sub: Subparsers) -> None:
    """``schedules``."""
    sch = sub.add_parser(
        "schedules",
        help="timed test schedules for the implementation: each violation, each event,"
        " each boundary of the safe region",
        description="Timed test schedules for the implementation of SPEC: a counterexample"
        " of each property it breaks, a shortest run firing each event, and with --free"
        " the points just inside and just outside each boundary of the synthesized safe"
        " region.  Each event is an action at its time; a delivery (an event that"
        " receives an earlier one) is the delay to inject after its sender.  Exit 1 when"
        " a property is broken at the given values, 0 otherwise, 2 = bad input, 3 ="
        " inconclusive (a limit).",
    )
    sch.add_argument("spec", metavar="SPEC")
    _add_param_args(sch)
    sch.add_argument("--kind", action="append", default=[], metavar="KINDS",
                     help="which schedules, comma-separated: violation, event, boundary"
                     " (default: violation and event, and boundary with --free)")
    sch.add_argument("--free", action="append", default=[], metavar="NAMES",
                     help="synthesize the safe region over these parameters and schedule"
                     " its boundaries (comma-separated)")
    sch.add_argument("--json", action="store_true", help="print the schedules as JSON")
    _add_limit_args(sch)
    sch.set_defaults(max_memory=None)

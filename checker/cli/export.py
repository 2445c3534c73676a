"""``kvrace export``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from checker.cli.common import EXIT_OK, Session, load_spec, make_parent, params_of
from checker.errors import UsageError
from checker.export import flat as export
from checker.export import network as export_network
from checker.export import terms as export_terms
from checker.export import uppaal as export_uppaal
from checker.model.compiled import SpecModel
from checker.present import jsonout
from checker.present.words import count

Output = tuple[str, Callable[[], tuple[str, str]]]
"""A file to write and what writes it: its text and a summary for the user."""


def _network(model: SpecModel) -> export_terms.NetModel:
    """The spec as a network of processes, or a usage error saying why not (at the
    construct's ``file:line:col``)."""
    try:
        return export_network.build_network(model.spec, model.values)
    except export_network.NetworkError as exc:
        hint = ("; --flat unfolds the discrete states into one automaton instead"
                if exc.flat_helps else "")
        where = f"{exc.where}: " if exc.where else ""
        raise UsageError(f"{where}kvrace export: {exc.message}{hint}") from None


def _flat_outputs(args: argparse.Namespace, auto: export.Automaton) -> list[Output]:
    what = (f"{count(len(auto.states), 'location')},"
            f" {count(len(auto.transitions), 'transition')}")
    out: list[Output] = []
    if args.uppaal:
        out.append((args.uppaal, lambda: (export.uppaal_xml(auto), what)))
    if args.tchecker:
        out.append((args.tchecker, lambda: (export.tchecker_text(auto), what)))
    return out


def _network_outputs(args: argparse.Namespace, net: export_terms.NetModel) -> list[Output]:
    procs = count(len(net.processes), "process", "processes")
    steps = sum(1 for e in net.events if e.kind == export_terms.EventKind.STEP)
    out: list[Output] = []
    if args.uppaal:
        def uppaal() -> tuple[str, str]:
            text = export_uppaal.uppaal_xml(net)
            locs = sum(len(p.locations) for p in net.processes)
            return text, (f"{count(len(net.processes), 'template')},"
                          f" {count(locs, 'location')}, {count(len(net.edges), 'transition')}")
        out.append((args.uppaal, uppaal))
    if args.tchecker:
        out.append((args.tchecker, lambda: (
            export_terms.tchecker_text(net),
            f"{procs}, {count(len(net.edges), 'edge')}, {count(steps, 'event')}")))
    return out


def _write(path: str, text: str) -> None:
    make_parent(path)
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace, session: Session) -> int:
    """Write the spec for TChecker and/or UPPAAL: a network of processes, or with
    ``--flat`` one automaton with a location per discrete state."""
    out = session.out
    if not args.uppaal and not args.tchecker:
        raise UsageError("kvrace export: give --uppaal FILE.xml and/or --tchecker FILE.tck")
    spec = load_spec(args.spec, args)
    model = session.model(spec, params_of(args))
    counts: dict[str, object] = {}
    if args.flat:
        try:
            auto = export.unfold(model, args.max_locations or export.MAX_LOCATIONS)
        except export.ExportError as exc:
            raise UsageError(f"kvrace export: {exc}") from None
        outputs = _flat_outputs(args, auto)
        counts = {"locations": len(auto.states), "transitions": len(auto.transitions)}
    else:
        net = _network(model)
        outputs = _network_outputs(args, net)
        counts = {"processes": len(net.processes), "edges": len(net.edges)}
    wrote: list[str] = []
    for path, make in outputs:
        text, what = make()
        _write(path, text)
        wrote.append(path)
        if not args.json:
            out.write(f"wrote {path} ({what})\n")
    if args.json:
        out.write(jsonout.document("export", EXIT_OK, {
            "spec": args.spec, "model": spec.name, "wrote": wrote, **counts}))
    return EXIT_OK

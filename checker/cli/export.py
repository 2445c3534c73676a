"""``kvrace export``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from checker import export, export_network
from checker.cli.common import EXIT_OK, Session, load_spec, make_parent, params_of
from checker.errors import UsageError
from checker.present import jsonout
from checker.present.words import count


def run(args: argparse.Namespace, session: Session) -> int:
    """Write the spec for TChecker (a network of processes, or flat) and/or UPPAAL."""
    out = session.out
    if not args.uppaal and not args.tchecker:
        raise UsageError("kvrace export: give --uppaal FILE.xml and/or --tchecker FILE.tck")
    spec = load_spec(args.spec, args)
    model = session.model(spec, params_of(args))
    auto: export.Automaton | None = None
    network: dict[str, object] = {}
    if args.uppaal or args.flat:
        try:
            auto = export.unfold(model, args.max_locations or export.MAX_LOCATIONS)
        except export.ExportError as exc:
            raise UsageError(f"kvrace export: {exc}") from None
    outputs: list[tuple[str, Callable[[], tuple[str, str]]]] = []
    if args.uppaal and auto is not None:
        flat = auto
        outputs.append((args.uppaal, lambda: (
            export.uppaal_xml(flat),
            f"{count(len(flat.states), 'location')},"
            f" {count(len(flat.transitions), 'transition')}")))
    if args.tchecker:
        if args.flat and auto is not None:
            flat_t = auto
            outputs.append((args.tchecker, lambda: (
                export.tchecker_text(flat_t),
                f"{count(len(flat_t.states), 'location')},"
                f" {count(len(flat_t.transitions), 'transition')}")))
        else:
            try:
                net = export_network.tchecker_network(model.spec, model.values)
            except export_network.NetworkError as exc:
                hint = ("; --flat unfolds the discrete states into one automaton instead"
                        if exc.flat_helps else "")
                raise UsageError(f"kvrace export: {exc}{hint}") from None
            outputs.append((args.tchecker, lambda: (
                net.text, f"{count(len(net.processes), 'process', 'processes')},"
                f" {count(net.edges, 'edge')}, {count(net.events, 'event')}")))
            network = {"processes": len(net.processes), "edges": net.edges}
    wrote: list[str] = []
    counts: dict[str, object] = {}
    if auto is not None:
        counts = {"locations": len(auto.states), "transitions": len(auto.transitions)}
    for path, make in outputs:
        make_parent(path)
        text, what = make()
        try:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        wrote.append(path)
        if not args.json:
            out.write(f"wrote {path} ({what})\n")
    if args.json:
        out.write(jsonout.document("export", EXIT_OK, {
            "spec": args.spec, "model": spec.name, "wrote": wrote, **counts, **network}))
    return EXIT_OK

"""``kvrace export``."""

from __future__ import annotations

import argparse

from checker import export
from checker.cli.common import EXIT_OK, Session, load_spec, make_parent, params_of
from checker.errors import UsageError
from checker.present import jsonout
from checker.present.words import count


def run(args: argparse.Namespace, session: Session) -> int:
    """Write the spec as one timed automaton for UPPAAL and/or TChecker."""
    out = session.out
    if not args.uppaal and not args.tchecker:
        raise UsageError("kvrace export: give --uppaal FILE.xml and/or --tchecker FILE.tck")
    spec = load_spec(args.spec, args)
    model = session.model(spec, params_of(args))
    try:
        auto = export.unfold(model, args.max_locations or export.MAX_LOCATIONS)
    except export.ExportError as exc:
        raise UsageError(f"kvrace export: {exc}") from None
    outputs = [(args.uppaal, export.uppaal_xml), (args.tchecker, export.tchecker_text)]
    wrote: list[str] = []
    for path, make in outputs:
        if not path:
            continue
        make_parent(path)
        try:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(make(auto))
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        wrote.append(path)
        if not args.json:
            out.write(f"wrote {path} ({count(len(auto.states), 'location')},"
                      f" {count(len(auto.transitions), 'transition')})\n")
    if args.json:
        out.write(jsonout.document("export", EXIT_OK, {
            "spec": args.spec, "model": spec.name, "wrote": wrote,
            "locations": len(auto.states), "transitions": len(auto.transitions)}))
    return EXIT_OK

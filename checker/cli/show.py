"""``kvrace show``: a summary of a spec (types, parameters, actors, sizes)."""

from __future__ import annotations

import argparse

from checker.cli.common import EXIT_OK, Session, load_spec
from checker.model.compiled import SpecModel
from checker.present import jsonout
from checker.present.text import describe_spec


def run(args: argparse.Namespace, session: Session) -> int:
    """Summarise a spec."""
    spec = load_spec(args.spec, args)
    model = SpecModel(spec)  # at the defaults: for the sizes
    if args.json:
        session.out.write(jsonout.document("show", EXIT_OK, {
            "spec": args.spec, **jsonout.spec_summary(spec, model)}))
    else:
        session.out.write(describe_spec(spec, model) + "\n")
    return EXIT_OK

"""``kvrace import``: translate IMITATOR models (see :mod:`checker.language.imitator`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from checker.cli.common import EXIT_BAD_INPUT, EXIT_OK, Session
from checker.language.imitator import ImitatorError, ImportOptions, translate_imitator


def _read(path: str, session: Session) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        session.err.write(f"{path}: error: cannot read: {getattr(exc, 'strerror', None) or exc}\n")
        return None


def run(args: argparse.Namespace, session: Session) -> int:
    """Translate ``args.model`` (and ``--property``) into a spec on stdout or ``-o``.

    Exit 0 when translated, 2 when a file cannot be read or a construct cannot be
    translated (``FILE:LINE:COL: error: ...``)."""
    m = re.fullmatch(r"(-?[0-9]{1,9})\.\.(-?[0-9]{1,9})", args.int_range)
    if m is None or int(m.group(1)) > int(m.group(2)) or args.param_max < 1:
        session.err.write("error: --int-range must be LO..HI (LO <= HI) and --param-max positive\n")
        return EXIT_BAD_INPUT
    text = _read(args.model, session)
    if text is None:
        return EXIT_BAD_INPUT
    prop_text = None
    if args.property is not None:
        prop_text = _read(args.property, session)
        if prop_text is None:
            return EXIT_BAD_INPUT
    options = ImportOptions(param_max=args.param_max, int_lo=int(m.group(1)),
                            int_hi=int(m.group(2)))
    try:
        spec = translate_imitator(text, args.model, prop_text, args.property, options=options)
    except ImitatorError as e:
        session.err.write(e.render() + "\n")
        return EXIT_BAD_INPUT
    if args.output:
        try:
            Path(args.output).write_text(spec, encoding="utf-8")
        except OSError as exc:
            session.err.write(f"{args.output}: error: cannot write: {exc.strerror}\n")
            return EXIT_BAD_INPUT
    else:
        session.out.raw_write(spec)
    return EXIT_OK

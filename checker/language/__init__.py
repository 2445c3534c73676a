"""The ``.kvr`` language: grammar, parser and elaborator.

This is the only part of kvrace that imports lark.  :func:`load` reads a file
and returns its typed :class:`~checker.model.ir.Spec`, or raises
:class:`~checker.diagnostics.SpecError` with every diagnostic of the first
failing phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

from checker.diagnostics import Diagnostic, SpecError
from checker.language.elaborate import elaborate
from checker.language.syntax import decode_source, parse
from checker.model.ir import Spec

MAX_FILE_BYTES = 4 * 1024 * 1024


def load_text(source: str, path: str = "<input>",
              consts: Mapping[str, Fraction] | None = None) -> Spec:
    """Parse and elaborate spec text; ``consts`` sets structural constants by name (other
    names in it, such as timing parameters, are ignored)."""
    return elaborate(parse(source, path), source, consts)


def read_source(path: str | Path) -> str:
    """The text of the spec file at ``path``, or :class:`SpecError` (KVR000 for a file
    that cannot be read or is too large, KVR001 for one that is not UTF-8)."""
    p = Path(path)
    name = str(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise SpecError([Diagnostic("KVR000", "no such file", name)]) from None
    except IsADirectoryError:
        raise SpecError([Diagnostic("KVR000", "is a directory, not a spec file", name)]) from None
    except OSError as exc:
        raise SpecError([Diagnostic("KVR000", f"cannot read: {exc.strerror}", name)]) from None
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(
            [Diagnostic("KVR000", f"file is too large ({len(data)} bytes; the limit is"
                        f" {MAX_FILE_BYTES})", name)]
        )
    return decode_source(data, name)


def load(path: str | Path, consts: Mapping[str, Fraction] | None = None) -> Spec:
    """Read, parse and elaborate the spec file at ``path`` (``consts`` as for
    :func:`load_text`)."""
    return load_text(read_source(path), str(path), consts)


__all__ = ["SpecError", "load", "load_text", "read_source"]

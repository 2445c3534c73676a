"""The ``.kvr`` language: grammar, parser and elaborator.

This is the only part of kvrace that imports lark.  :func:`load` reads a file
and returns its typed :class:`~checker.model.ir.Spec`, or raises
:class:`~checker.diagnostics.SpecError` with every diagnostic of the first
failing phase.  A file loaded before comes from the private cache
(:mod:`checker.language.speccache`) without importing the parser (and lark) or the
elaborator: this module imports them only when a spec is parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

from checker.diagnostics import Diagnostic, Span, SpecError
from checker.language import speccache
from checker.model.ir import Spec

MAX_FILE_BYTES = 4 * 1024 * 1024


def load_text(source: str, path: str = "<input>",
              consts: Mapping[str, Fraction] | None = None) -> Spec:
    """Parse and elaborate spec text; ``consts`` sets structural constants by name (other
    names in it, such as timing parameters, are ignored)."""
    from checker.language.elaborate import elaborate
    from checker.language.syntax import parse

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


def decode_source(data: bytes, path: str) -> str:
    """Decode a spec file's bytes as UTF-8, or raise a positioned :class:`SpecError`."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        # Columns count characters, like the parser's; the bytes before the
        # first bad one decode fine.
        col = len(data[line_start : exc.start].decode("utf-8")) + 1
        if line == 1 and data.startswith(b"\xef\xbb\xbf"):
            col -= 1  # the byte-order mark is not shown
        raise SpecError(
            [Diagnostic("KVR001", f"file is not UTF-8 text (byte 0x{data[exc.start]:02x})",
                        path, Span(line, col, line, col + 1),
                        ("help: save the file as UTF-8",))],
            data.decode("utf-8", "replace").removeprefix("\ufeff"),
        ) from None


def load(path: str | Path, consts: Mapping[str, Fraction] | None = None) -> Spec:
    """Read, parse and elaborate the spec file at ``path`` (``consts`` as for
    :func:`load_text`); a file loaded before comes from the cache when its text and
    constants are the same (see :mod:`checker.language.speccache`)."""
    source, name = read_source(path), str(path)
    found = speccache.entry(source, name)
    spec = speccache.read(found, source, name, consts) if found is not None else None
    if spec is None:
        spec = load_text(source, name, consts)
        if found is not None:
            speccache.write(found, spec)
    return spec


__all__ = ["SpecError", "load", "load_text", "read_source"]

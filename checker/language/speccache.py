"""The elaborated specs of files loaded before, kept in the private cache.

On a small spec, ``kvrace check`` spends longer starting than checking: importing
lark, loading its parser, parsing and elaborating take more time than the
exploration.  So once a file has been parsed and elaborated without an error, its
typed :class:`~checker.model.ir.Spec` is pickled into the private per-user cache
directory (:mod:`checker.model.cache`), under a name made of everything that
decides it: the file's text and path as given, the source of the modules that
parse and elaborate (the grammar among them), the Python version and the installed
lark.  A later load of the same file reads it back without importing lark, the
parser or the elaborator, if its structural constants have the values asked for
(the only thing the elaborator reads of the constants it is given; other names,
such as timing parameters, it ignores).

A file that fails to parse or elaborate is never cached: its diagnostics always
come from a fresh run.  An entry that cannot be used (unreadable, truncated,
corrupt, written for another key, not a spec) is ignored: the file is parsed and
elaborated again and the entry replaced.  At most :data:`MAX_ENTRIES` entries are
kept, the least recently used going first.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import pickle
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from checker.model import ir
from checker.model.cache import cache_file, prune, write_file

MAX_ENTRIES = 256
"""Cached specs kept; the least recently used beyond these are removed."""

PREFIX = "spec-"
"""The names of the cache's spec entries start with this."""

_MAGIC = b"kvrace-spec 1\n"

DECIDING = (
    "language/__init__.py", "language/speccache.py", "language/syntax.py",
    "language/kvrace.lark", "language/ast.py", "language/processes.py",
    "language/elaborate.py", "model/__init__.py", "model/ir.py", "model/interface.py",
    "model/cache.py",
    "diagnostics.py", "errors.py", "numbers.py", "results.py",
)
"""The files of the package (relative to it) that decide what a spec elaborates to:
the parser, the elaborator and every module of the package they import."""


@dataclass(frozen=True)
class Entry:
    """Where one spec's elaborated form is cached: the file, and the header that an
    entry for exactly this key starts with."""

    file: str
    header: bytes
    present: bool


@functools.lru_cache(maxsize=1)
def code_identity() -> bytes | None:
    """A digest of what decides an elaborated spec besides the spec file: the bytes of
    :data:`DECIDING`, the Python version and where lark is installed (its file's path,
    size and modification time: found without importing it).  None when one of them
    cannot be read (then nothing is cached)."""
    digest = hashlib.sha256()
    digest.update(f"{sys.version}\0{sys.implementation.cache_tag}\0".encode())
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        for name in DECIDING:
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            digest.update(f"{name}\0{len(data)}\0".encode())
            digest.update(data)
        lark = importlib.util.find_spec("lark")
        if lark is None or lark.origin is None:
            return None
        st = os.stat(lark.origin)
    except (OSError, ImportError, ValueError):
        return None
    digest.update(f"{lark.origin}\0{st.st_size}\0{st.st_mtime_ns}".encode(
        "utf-8", "surrogateescape"))
    return digest.digest()


def _key(source: str, path: str) -> str | None:
    """The hex digest naming the entry of ``source`` read from ``path``."""
    code = code_identity()
    if code is None:
        return None
    digest = hashlib.sha256(code)
    digest.update(f"{len(path)}\0{path}\0".encode("utf-8", "surrogateescape"))
    digest.update(source.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def entry(source: str, path: str) -> Entry | None:
    """The cache entry of ``source``, the text of the file ``path``; None when there is
    no safe cache (see :mod:`checker.model.cache`)."""
    key = _key(source, path)
    if key is None:
        return None
    file, present = cache_file(f"{PREFIX}{key}.pickle")
    if file is None:
        return None
    return Entry(file, _MAGIC + key.encode("ascii") + b"\n", present)


def same_constants(spec: ir.Spec, consts: Mapping[str, Fraction] | None) -> bool:
    """Whether elaborating ``spec``'s source with ``consts`` gives ``spec``: each of its
    structural constants has the value ``consts`` sets, or its default when not set.
    (A value set to a constant's default elaborates as if it were not set.)"""
    given = consts or {}
    for c in spec.consts:
        want = given.get(c.name)
        if c.value != (c.default if want is None else want):
            return False
    return True


def read(found: Entry, source: str, path: str,
         consts: Mapping[str, Fraction] | None) -> ir.Spec | None:
    """The spec cached in ``found`` if it is ``source`` from ``path`` elaborated with
    ``consts``; None when it is missing, cannot be used or has other constants."""
    if not found.present:
        return None
    try:
        with open(found.file, "rb") as f:
            data = f.read()
        if not data.startswith(found.header):
            return None
        spec = pickle.loads(memoryview(data)[len(found.header):])
    except Exception:  # a truncated or corrupt entry, whatever the unpickler says of it
        return None
    if (not isinstance(spec, ir.Spec) or spec.path != path or spec.source != source
            or not same_constants(spec, consts)):
        return None
    with contextlib.suppress(OSError):
        os.utime(found.file)  # recently used: kept by the pruning
    return spec


def write(found: Entry, spec: ir.Spec) -> None:
    """Cache ``spec`` (elaborated without an error) in ``found``; a failure to pickle
    or to write leaves the cache as it was."""
    try:
        data = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # e.g. nesting too deep to pickle: the spec is simply not cached
        return
    if write_file(found.file, found.header + data):
        prune(os.path.dirname(found.file), PREFIX, MAX_ENTRIES, keep=found.file)

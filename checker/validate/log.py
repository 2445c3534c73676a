"""Reading a log: one :class:`Observation` per line, streamed.

A log in the JSON-lines format (``docs/schema/kvrace-log-1.schema.json``) has one
JSON object per line::

    {"t": 881.28, "event": "decode.release", "args": {"r": "A"}}

``t`` is the time in seconds (a number, or a decimal string for exactness),
``event`` the spec's ``actor.event``, ``args`` the event's parameters by name
(all, some or none: missing ones match every value).  Blank lines and lines whose
first non-blank character is ``#`` are skipped; a line ``{"run": ...}`` starts a
new run of the model (the log of several independent runs, one after the other); a
line with a time only, ``{"t": 63}``, says the log was kept until then with no
observable event since the line before (a response still pending then is overdue if
its bound has passed).

A text log is read through a mapping (:mod:`checker.validate.mapping`).  Either
way a bad line is a :class:`LogError` naming ``LOG:LINE``; nothing of the log is
kept but the current line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from checker.errors import UsageError


class LogError(UsageError):
    """A line of a log (or of a mapping) that cannot be read: ``FILE:LINE: message``."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: error: {message}")
        self.file = file
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Observation:
    """One observed event: where it was read, when, which event and which arguments."""

    line: int
    time: Fraction
    """Seconds, exactly as written (a float is read through its shortest decimal)."""
    event: str
    """``actor.event``."""
    args: tuple[tuple[str, str], ...]
    """Parameter name and value text, in the order written."""

    def show(self) -> str:
        """``decode.release(A)``: the event with the values of its arguments."""
        if not self.args:
            return self.event
        return f"{self.event}({', '.join(v for _, v in self.args)})"


@dataclass(frozen=True)
class RunBreak:
    """A ``{"run": ...}`` line: the next line starts a new run of the model, at the
    line's ``t`` if it has one."""

    line: int
    time: Fraction | None = None


@dataclass(frozen=True)
class Until:
    """A line with a time and no event (``{"t": 63}``): the log was kept until then, and
    no observable event happened since the line before."""

    line: int
    time: Fraction


Entry = Observation | RunBreak | Until
"""What a log line holds."""


class _Number(str):
    """A JSON number's text as written (read exactly, not through a float)."""


class _DuplicateKey(ValueError):
    """An object of a line names a key twice (JSON leaves the meaning open)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


_DECODE = json.JSONDecoder(parse_float=_Number, parse_int=_Number, object_pairs_hook=_object)

MAX_LINE = 1 << 20
"""The longest line a log may have, in characters (a longer one is refused, not read
into memory whole)."""


def clip(text: object, limit: int = 60) -> str:
    """``text`` (a value read from a log, quoted in a message) cut to ``limit``
    characters."""
    shown = str(text)
    return shown if len(shown) <= limit else shown[:limit] + f"... ({len(shown):,} characters)"


class LogLines:
    """The lines of a log, streamed (iterate once): a byte that is not UTF-8 becomes
    U+FFFD, a byte-order mark at the start is dropped, and a line longer than
    :data:`MAX_LINE` is a :class:`LogError` (read up to that length only).
    :attr:`read` counts the lines read so far."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.read = 0

    def __iter__(self) -> Iterator[str]:
        try:
            f = open(self.path, encoding="utf-8-sig", errors="replace")  # noqa: SIM115
        except OSError as exc:
            raise UsageError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        with f:
            while True:
                line = f.readline(MAX_LINE + 1)
                if not line:
                    return
                self.read += 1
                if len(line) > MAX_LINE and not line.endswith("\n"):
                    raise LogError(self.path, self.read, f"the line is longer than"
                                   f" {MAX_LINE:,} characters: not a log line")
                yield line


def exact_time(value: object) -> Fraction | None:
    """A timestamp as an exact rational: a JSON number through its shortest decimal
    text (``881.28`` is 88128/100), or a string of a decimal or a ratio (``1/3``); None
    if it is not one."""
    if isinstance(value, _Number):
        if len(value) > 40:
            return None
        if "e" in value or "E" in value:
            d = Decimal(value)
            return Fraction(d) if abs(d.adjusted()) <= 30 else None
        return Fraction(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return Fraction(Decimal(repr(value)))
    if isinstance(value, str):
        text = value.strip()
        if _RATIO.fullmatch(text):
            num, den = text.split("/")
            return Fraction(int(num), int(den)) if int(den) else None
        try:
            d = Decimal(text)
        except InvalidOperation:
            return None
        return Fraction(d) if d.is_finite() and abs(d.adjusted()) <= 30 else None
    return None


_RATIO = re.compile(r"[-+]?[0-9]{1,30}/[0-9]{1,30}")
"""A time written as an exact ratio (``1/3``), as kvrace prints the times it cannot
write as decimals."""


def arg_text(value: object) -> str | None:
    """An argument value as the spec writes it (``A``, ``0``, ``true``); None if it is
    not a string, an integer or a boolean."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _Number):
        return str(value) if value.lstrip("-").isdigit() else None
    if isinstance(value, int | str):
        return str(value)
    return None


def read_json_lines(path: str, lines: Iterable[str]) -> Iterator[Entry]:
    """The entries of a JSON-lines log, one per non-blank line."""
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            doc = _DECODE.decode(text)
        except _DuplicateKey as exc:
            raise LogError(path, number, f"the key `{clip(exc.key)}` appears twice in one"
                           " object") from None
        except (json.JSONDecodeError, ValueError, RecursionError) as exc:
            reason = (exc.msg if isinstance(exc, json.JSONDecodeError)
                      else "nested too deeply" if isinstance(exc, RecursionError)
                      else "not JSON")
            raise LogError(path, number, f"not a JSON object: {reason}") from None
        if not isinstance(doc, dict):
            raise LogError(path, number, "not a JSON object")
        if "run" in doc and "event" not in doc:
            extra = sorted(set(doc) - {"run", "t", "note"})
            if extra:
                raise LogError(path, number, f"unknown field `{clip(extra[0])}` (a run line"
                               " has run, an optional t and an optional note)")
            yield RunBreak(number, None if "t" not in doc else _time(path, number, doc))
            continue
        if "event" not in doc and "t" in doc and set(doc) <= {"t", "note"}:
            yield Until(number, _time(path, number, doc))
            continue
        yield observation_of(path, number, doc)


def _time(path: str, number: int, doc: dict[str, object]) -> Fraction:
    """The line's ``t``, exactly."""
    t = exact_time(doc["t"])
    if t is None:
        raise LogError(path, number, f"timestamp `t` is not a number: {clip(repr(doc['t']))}")
    return t


def observation_of(path: str, number: int, doc: dict[str, object]) -> Observation:
    """The observation of one decoded log line."""
    unknown = sorted(set(doc) - {"t", "event", "args", "note"})
    if unknown:
        raise LogError(path, number, f"unknown field `{clip(unknown[0])}` (a line has t,"
                       " event, args and an optional note)")
    if "t" not in doc:
        raise LogError(path, number, "no timestamp `t`")
    t = _time(path, number, doc)
    event = doc.get("event")
    if not isinstance(event, str) or not event:
        raise LogError(path, number, "no event name `event` (a string `actor.event`)")
    args_doc = doc.get("args", {})
    if not isinstance(args_doc, dict):
        raise LogError(path, number, "`args` is not an object of parameter values")
    args: list[tuple[str, str]] = []
    for name, value in args_doc.items():
        shown = arg_text(value)
        if shown is None:
            raise LogError(path, number, f"argument `{clip(name)}` is not a string, an"
                           " integer or a boolean")
        args.append((name, shown))
    return Observation(number, t, event, tuple(args))

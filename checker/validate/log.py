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


_DECODE = json.JSONDecoder(parse_float=_Number, parse_int=_Number)


def exact_time(value: object) -> Fraction | None:
    """A timestamp as an exact rational: a JSON number through its shortest decimal
    text (``881.28`` is 88128/100), or a decimal string; None if it is not one."""
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
        try:
            d = Decimal(value.strip())
        except InvalidOperation:
            return None
        return Fraction(d) if d.is_finite() and abs(d.adjusted()) <= 30 else None
    return None


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
        except (json.JSONDecodeError, ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not JSON"
            raise LogError(path, number, f"not a JSON object: {reason}") from None
        if not isinstance(doc, dict):
            raise LogError(path, number, "not a JSON object")
        if "run" in doc and "event" not in doc:
            start = None
            if "t" in doc:
                start = exact_time(doc["t"])
                if start is None:
                    raise LogError(path, number, f"timestamp `t` is not a number: {doc['t']!r}")
            yield RunBreak(number, start)
            continue
        if "event" not in doc and "t" in doc and set(doc) <= {"t", "note"}:
            t = exact_time(doc["t"])
            if t is None:
                raise LogError(path, number, f"timestamp `t` is not a number: {doc['t']!r}")
            yield Until(number, t)
            continue
        yield observation_of(path, number, doc)


def observation_of(path: str, number: int, doc: dict[str, object]) -> Observation:
    """The observation of one decoded log line."""
    unknown = sorted(set(doc) - {"t", "event", "args", "note"})
    if unknown:
        raise LogError(path, number, f"unknown field `{unknown[0]}` (a line has t, event,"
                       " args and an optional note)")
    if "t" not in doc:
        raise LogError(path, number, "no timestamp `t`")
    t = exact_time(doc["t"])
    if t is None:
        raise LogError(path, number, f"timestamp `t` is not a number: {doc['t']!r}")
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
            raise LogError(path, number, f"argument `{name}` is not a string, an integer"
                           " or a boolean")
        args.append((name, shown))
    return Observation(number, t, event, tuple(args))

"""Text logs: a mapping file turns the lines a system prints into observations.

A mapping is a TOML file::

    # time: a named group `t` in each event's regex, in `unit` (s, ms, us, ns), or
    # parsed with `time_format` (strptime; read as UTC seconds)
    unit = "s"
    time_format = "%Y-%m-%d %H:%M:%S"     # optional

    [values]
    r = "order"                # the i-th distinct value seen is the type's i-th value
    # r = { "0a1b" = "A" }    # or an explicit table

    [[event]]
    event = "decode.release"
    regex = 'Abort .* rid=(?P<r>\\S+)'     # named groups bind the event's parameters
    args = { s = "s0" }                    # optional fixed arguments

Each line of the log is matched (``re.search``) against the events' regexes in
the file's order; the first that matches gives the observation, a line that no
regex matches is not an event and is skipped.  Errors in the mapping name
``MAP:LINE``; a line whose timestamp cannot be read names ``LOG:LINE``.
"""

from __future__ import annotations

import calendar
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from checker.validate.log import Entry, LogError, Observation, clip, exact_time

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

UNITS = {"s": Fraction(1), "ms": Fraction(1, 1000), "us": Fraction(1, 10**6),
         "ns": Fraction(1, 10**9)}
"""The units a timestamp group may be in."""


@dataclass(frozen=True)
class EventRule:
    """One event's regex and where it is written."""

    event: str
    regex: re.Pattern[str]
    fixed: tuple[tuple[str, str], ...]
    line: int
    """The line of its ``regex`` key."""
    event_line: int = 0
    """The line of its ``event`` key."""
    args_line: int = 0
    """The line of its ``args`` key (its header's when it has none)."""


@dataclass
class Mapping:
    """A parsed mapping file."""

    path: str
    rules: list[EventRule]
    unit: Fraction = Fraction(1)
    time_format: str | None = None
    values: dict[str, dict[str, str] | str] = field(default_factory=dict)
    """Per parameter: an explicit table log value -> model value, or ``order``."""
    values_line: int = 1
    """The line of the ``[values]`` table."""

    def check(self, params: dict[str, dict[str, tuple[str, ...]]],
              close: Callable[[str, str, int], None]) -> None:
        """Check the mapping against the spec: ``params`` gives each event's parameters
        and their values; ``close(name, file, line)`` refuses an unknown event (with a
        did-you-mean).  Named groups and fixed arguments must be parameters of their
        event (a fixed value one of the parameter's), not both at once, and each
        ``[values]`` parameter one of a mapped event's."""
        named: set[str] = set()
        for r in self.rules:
            close(r.event, self.path, r.event_line or r.line)
            declared = params[r.event]
            names = ", ".join(declared) or "none"
            groups = [g for g in r.regex.groupindex if g != "t"]
            for g in groups:
                if g not in declared:
                    raise LogError(self.path, r.line, f"the regex of {r.event} names a group"
                                   f" `{g}`, which is no parameter of {r.event} (its"
                                   f" parameters: {names})")
            for name, value in r.fixed:
                if name not in declared:
                    raise LogError(self.path, r.args_line, f"[[event]] {r.event}: `args` names"
                                   f" `{clip(name)}`, which is no parameter of {r.event}"
                                   f" (its parameters: {names})")
                if name in groups:
                    raise LogError(self.path, r.args_line, f"[[event]] {r.event}: `{name}` is"
                                   " both a group of the regex and a fixed argument")
                if value not in declared[name]:
                    raise LogError(self.path, r.args_line, f"[[event]] {r.event}: `{clip(value)}`"
                                   f" is not a value of `{name}` (its values:"
                                   f" {', '.join(declared[name])})")
            named.update(declared)
        for name in self.values:
            if name not in named:
                raise LogError(self.path, self.values_line, f"[values]: `{clip(name)}` is no"
                               " parameter of the events the mapping names")

    def events(self) -> list[str]:
        """The events the mapping names (its default observable set), in file order."""
        seen: list[str] = []
        for r in self.rules:
            if r.event not in seen:
                seen.append(r.event)
        return seen


def _key_lines(text: str) -> list[dict[str, int]]:
    """For each ``[[event]]`` table, in order: the line of its header (key ``""``) and
    of each key written at the start of a line in it."""
    out: list[dict[str, int]] = []
    current: dict[str, int] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if s.startswith("["):
            current = None  # another table: its keys are not an event's
            if s.startswith("[[") and s.strip("[] \t").split("#")[0].strip() == "event":
                current = {"": number}
                out.append(current)
            continue
        m = re.match(r"([A-Za-z_][A-Za-z0-9_-]*)\s*=", s)
        if current is not None and m and m.group(1) not in current:
            current[m.group(1)] = number
    return out


def load_mapping(path: str) -> Mapping:
    """Read and check a mapping file; every error names ``MAP:LINE``."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise LogError(path, 0, f"cannot read the mapping: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise LogError(path, 1, "the mapping is not UTF-8 text") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise LogError(path, int(m.group(1)) if m else 1,
                       f"not a TOML mapping: {str(exc).split(' (at')[0]}") from None
    known = {"unit", "time_format", "values", "event"}
    for key in doc:
        if key not in known:
            raise LogError(path, _line_of(text, key), f"unknown key `{key}` (a mapping has"
                           " unit, time_format, values and [[event]] tables)")
    unit_name = doc.get("unit", "s")
    if unit_name not in UNITS:
        raise LogError(path, _line_of(text, "unit"), f"unknown time unit {unit_name!r}"
                       f" (one of {', '.join(UNITS)})")
    fmt = doc.get("time_format")
    if fmt is not None and not isinstance(fmt, str):
        raise LogError(path, _line_of(text, "time_format"), "time_format is not a string")
    values = doc.get("values", {})
    if not isinstance(values, dict) or not all(
            v == "order" or (isinstance(v, dict) and all(isinstance(x, str) for x in v.values()))
            for v in values.values()):
        raise LogError(path, _line_of(text, "values"), "[values]: each parameter is"
                       " \"order\" or a table of log value = model value")
    return Mapping(path, _rules(path, text, doc), UNITS[unit_name], fmt, dict(values),
                   _line_of(text, "values"))


def _rules(path: str, text: str, doc: dict[str, object]) -> list[EventRule]:
    """The ``[[event]]`` tables of a mapping."""
    tables = doc.get("event", [])
    if not isinstance(tables, list) or not tables:
        raise LogError(path, _line_of(text, "event") if "event" in doc else 1,
                       "no [[event]] table: the mapping names no event")
    places = _key_lines(text)
    rules: list[EventRule] = []
    for k, table in enumerate(tables):
        lines = places[k] if k < len(places) else {"": _line_of(text, "event")}
        header = lines[""]
        regex_line = lines.get("regex", header)
        if not isinstance(table, dict):
            raise LogError(path, header, "`event` is not a list of [[event]] tables")
        event = table.get("event")
        if not isinstance(event, str):
            raise LogError(path, header, "[[event]] without `event = \"actor.event\"`")
        pattern = table.get("regex")
        if pattern is None:
            raise LogError(path, header, f"[[event]] {event}: no `regex`")
        if not isinstance(pattern, str):
            raise LogError(path, regex_line, f"[[event]] {event}: `regex` is not a string")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise LogError(path, regex_line, f"the regex of {event} does not compile:"
                           f" {exc.msg} at position {exc.pos}") from None
        extra = sorted(set(table) - {"event", "regex", "args"})
        if extra:
            raise LogError(path, header, f"[[event]] {event}: unknown key `{extra[0]}`")
        fixed = table.get("args", {})
        if not isinstance(fixed, dict):
            raise LogError(path, header, f"[[event]] {event}: `args` is not a table")
        groups = set(regex.groupindex)
        if "t" not in groups:
            raise LogError(path, regex_line, f"the regex of {event} has no timestamp group"
                           " (?P<t>...)")
        rules.append(EventRule(event, regex, tuple((str(a), str(v)) for a, v in fixed.items()),
                               regex_line, lines.get("event", header),
                               lines.get("args", header)))
    return rules


def _line_of(text: str, key: str) -> int:
    for number, raw in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*\[?{re.escape(key)}\b", raw):
            return number
    return 1


class TextLog:
    """A text log read through a mapping: its observations, one per matched line."""

    def __init__(self, mapping: Mapping, path: str) -> None:
        self.mapping = mapping
        self.path = path
        self.order: dict[str, dict[str, str]] = {}
        """For ``order`` parameters: the log values seen so far, to model values."""
        self.domains: dict[str, dict[str, tuple[str, ...]]] = {}
        """Per event, the values of each parameter (set by the caller from the spec)."""

    def time_of(self, text: str, line: int) -> Fraction:
        """A timestamp group's text in seconds."""
        m = self.mapping
        if m.time_format is not None:
            frac = Fraction(0)
            base = text
            if "." in text and "%f" not in m.time_format:
                base, _, digits = text.partition(".")
                if digits.isdigit():
                    frac = Fraction(int(digits), 10 ** len(digits))
            try:
                parsed = time.strptime(base, m.time_format)
            except ValueError:
                raise LogError(self.path, line, f"timestamp {clip(repr(text))} does not match the"
                               f" mapping's time_format {m.time_format!r}") from None
            return Fraction(calendar.timegm(parsed)) + frac
        value = exact_time(text)
        if value is None:
            raise LogError(self.path, line, f"timestamp {clip(repr(text))} is not a number")
        return value * m.unit

    def value(self, event: str, name: str, raw: str, line: int) -> str:
        """A log value of parameter ``name`` as the spec's value."""
        how = self.mapping.values.get(name)
        if how is None:
            return raw
        if isinstance(how, dict):
            if raw not in how:
                raise LogError(self.path, line, f"value {clip(repr(raw))} of `{name}` is not in the"
                               f" mapping's [values] table for `{name}`")
            return how[raw]
        seen = self.order.setdefault(name, {})
        got = seen.get(raw)
        if got is None:
            domain = self.domains.get(event, {}).get(name, ())
            if len(seen) >= len(domain):
                raise LogError(self.path, line, f"value {clip(repr(raw))} of `{name}` is the"
                               f" {len(seen) + 1}th distinct one, but the spec's type has"
                               f" {len(domain)} values ({', '.join(domain)})")
            got = domain[len(seen)]
            seen[raw] = got
        return got

    def entries(self, lines: Iterable[str]) -> Iterator[Entry]:
        """The observations of the matched lines."""
        rules = self.mapping.rules
        for number, raw in enumerate(lines, 1):
            for rule in rules:
                m = rule.regex.search(raw)
                if m is None:
                    continue
                t = self.time_of(m.group("t"), number)
                args = [(k, v) for k, v in rule.fixed]
                for name, got in m.groupdict().items():
                    if name == "t" or got is None:
                        continue
                    args.append((name, self.value(rule.event, name, got, number)))
                yield Observation(number, t, rule.event, tuple(args))
                break

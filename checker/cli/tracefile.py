"""Reading a trace file (``check --trace``) for ``draw`` and ``view``."""

from __future__ import annotations

import json
from collections.abc import Sequence

from checker.cli.common import short
from checker.cli.values import clip, parse_number
from checker.errors import KvraceError, UsageError
from checker.model import trace as tr

MAX_TRACE_BYTES = 16 * 2**20
"""Largest trace file ``draw`` reads."""


MAX_TRACE_STEPS = 2000
"""Most steps ``draw`` draws (a shortest counterexample has tens)."""


MAX_TRACE_TEXT = 4000
"""Longest string in a trace file (names, labels, assert messages)."""


class _BadTrace(KvraceError):
    """A trace file that does not follow the trace schema; the message says where."""


def _text(v: object, where: str, optional: bool = False) -> None:
    """``v`` is a string of bounded length (or None, when optional)."""
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise _BadTrace(f"{where}: expected a string{' or null' if optional else ''},"
                        f" found {_json_kind(v)}")
    if len(v) > MAX_TRACE_TEXT:
        raise _BadTrace(f"{where}: a string longer than {MAX_TRACE_TEXT} characters")


def _whole(v: object, where: str, optional: bool = False) -> None:
    """``v`` is an integer of bounded magnitude (or None, when optional)."""
    if v is None and optional:
        return
    if not isinstance(v, int) or isinstance(v, bool):
        raise _BadTrace(f"{where}: expected an integer{' or null' if optional else ''},"
                        f" found {_json_kind(v)}")
    if abs(v) >= 10**9:
        raise _BadTrace(f"{where}: {v} is out of range")


def _time_value(v: object, where: str) -> None:
    """``v`` is a number written as a string (or an integer)."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if not isinstance(v, str):
        raise _BadTrace(f"{where}: expected a number written as a string (\"7.5\", \"15/2\"),"
                        f" found {_json_kind(v)}")
    try:
        parse_number(v)
    except ValueError as exc:
        raise _BadTrace(f"{where}: {exc}") from None


def _scalar(v: object, where: str) -> None:
    """``v`` is a string, an integer, a boolean or null."""
    if v is None or isinstance(v, bool):
        return
    if isinstance(v, str):
        _text(v, where)
    elif isinstance(v, int):
        _whole(v, where)
    else:
        raise _BadTrace(f"{where}: expected a value (string, integer, boolean or null),"
                        f" found {_json_kind(v)}")


def _json_kind(v: object) -> str:
    """How a JSON value is called in a message."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    return "an object"


def _members(v: object, where: str, required: Sequence[str]) -> dict[str, object]:
    """``v`` is an object with the ``required`` keys; returns it."""
    if not isinstance(v, dict):
        raise _BadTrace(f"{where}: expected an object, found {_json_kind(v)}")
    for key in required:
        if key not in v:
            raise _BadTrace(f"{where}: missing `{key}`")
    return v


def _list(v: object, where: str, limit: int) -> list[object]:
    """``v`` is a list of at most ``limit`` entries; returns it."""
    if not isinstance(v, list):
        raise _BadTrace(f"{where}: expected a list, found {_json_kind(v)}")
    if len(v) > limit:
        raise _BadTrace(f"{where}: more than {limit} entries")
    return v


def validate_trace(data: object) -> None:
    """Check that ``data`` (a parsed JSON file) is a kvrace trace, as written by
    ``check --trace``, with every value of the type and size ``draw`` expects.

    Raises :class:`_BadTrace` naming the first offending place
    (``states[3].#meta.event``)."""
    if isinstance(data, dict) and "verdict" in data and "#meta" not in data:
        raise _BadTrace("this is the output of `kvrace check --json` without a"
                        f" counterexample (verdict: {clip(str(data['verdict']))});"
                        " there is no trace to draw")
    top = _members(data, "the file", ["#meta", "vars", "states"])
    _validate_meta(top["#meta"])
    names: list[str] = []
    for i, n in enumerate(_list(top["vars"], "vars", 65_536)):
        _text(n, f"vars[{i}]")
        names.append(str(n))
    states = _list(top["states"], "states", MAX_TRACE_STEPS)
    if not states:
        raise _BadTrace("states: a trace has at least one state")
    for i, raw in enumerate(states):
        _validate_state(raw, f"states[{i}]", names)


def _validate_meta(v: object) -> None:
    """The trace's ``#meta``: model, actors, source, verdict, property, parameters."""
    meta = _members(v, "#meta", ["model", "actors"])
    _text(meta["model"], "#meta.model")
    for i, a in enumerate(_list(meta["actors"], "#meta.actors", 1000)):
        _text(a, f"#meta.actors[{i}]")
    for key in ("source", "verdict"):
        if key in meta:
            _text(meta[key], f"#meta.{key}")
    for key in ("property", "message"):
        if key in meta:
            _text(meta[key], f"#meta.{key}", optional=True)
    params = _members(meta.get("params", {}), "#meta.params", [])
    if len(params) > 1000:
        raise _BadTrace("#meta.params: more than 1000 entries")
    for k, value in params.items():
        _time_value(value, f"#meta.params.{k}")


def _validate_state(raw: object, where: str, names: list[str]) -> None:
    """One state of the trace: its step's ``#meta`` and a value of every variable."""
    st = _members(raw, where, ["#meta", *names])
    m = _members(st["#meta"], f"{where}.#meta", ["index", "label"])
    _whole(m["index"], f"{where}.#meta.index")
    _whole(m.get("receives"), f"{where}.#meta.receives", optional=True)
    _text(m["label"], f"{where}.#meta.label")
    for key in ("actor", "event", "failure"):
        _text(m.get(key), f"{where}.#meta.{key}", optional=True)
    for j, a in enumerate(_list(m.get("args", []), f"{where}.#meta.args", 100)):
        _text(a, f"{where}.#meta.args[{j}]")
    if "time" in m:
        _time_value(m["time"], f"{where}.#meta.time")
    for n in names:
        v = st[n]
        if isinstance(v, dict):
            _validate_map(v, f"{where}.{n}")
        else:
            _scalar(v, f"{where}.{n}")


def _validate_map(v: object, where: str) -> None:
    """A variable with indexes: ``{"#map": [[key, value], ...]}``, a key a scalar or
    ``{"#tup": [...]}``."""
    entries = _list(_members(v, where, ["#map"])["#map"], where, 65_536)
    for j, entry in enumerate(entries):
        at = f"{where}[{j}]"
        if not isinstance(entry, list) or len(entry) != 2:
            raise _BadTrace(f"{at}: expected a [key, value] pair")
        key, value = entry
        if isinstance(key, dict):
            parts = _list(_members(key, at, ["#tup"])["#tup"], at, 100)
            for part in parts:
                _scalar(part, at)
        else:
            _scalar(key, at)
        _scalar(value, at)


def read_trace(path: str) -> tr.Trace:
    """The :class:`~checker.model.trace.Trace` in a trace file; UsageError if it is not
    one."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TRACE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_TRACE_BYTES:
        raise UsageError(f"{path}: larger than {MAX_TRACE_BYTES // 2**20} MiB;"
                         " not a trace written by `kvrace check --trace`")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a JSON trace (not UTF-8 text)") from None
    except RecursionError:
        raise UsageError(f"{path}: not a JSON trace (nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError, or an integer too long to read
        raise UsageError(f"{path}: not a JSON trace ({short(exc)})") from None
    if isinstance(data, dict) and "#meta" not in data and isinstance(data.get("trace"), dict):
        data = data["trace"]  # the output of `check --json` or `prove --json`: its trace
    try:
        validate_trace(data)
        return tr.from_itf(data)
    except _BadTrace as exc:
        raise UsageError(f"{path}: not a kvrace trace: {exc}") from None
    except tr.TraceFormatError as exc:
        raise UsageError(f"{path}: {exc}") from None

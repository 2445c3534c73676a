"""Counterexample traces: a readable, engine-independent record of a run.

A :class:`Trace` is what the diagrams, the text output and the JSON files are
made from.  Its JSON form follows the shape of the ITF trace format
(``#meta``, ``vars``, ``states`` with one object per state; maps as
``{"#map": [[key, value], ...]}``, tuples as ``{"#tup": [...]}``); an option's
``none`` is JSON ``null``.  Each state's ``#meta`` says which event led to it,
at what time, and which earlier step's message it consumed (``receives``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from checker.errors import UsageError
from checker.model import ir
from checker.model.interface import State
from checker.numbers import parse_count, parse_number

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"

JsonValue = Any


@dataclass(frozen=True)
class Step:
    """One step of a trace: the initial state (index 0) or an event firing."""

    index: int
    label: str
    """``decode.land(A, 0)``, or ``initial``."""
    actor: str | None
    event: str | None
    """``decode.land`` (actor and event name), ``None`` for the initial state."""
    args: tuple[str, ...]
    time: Fraction | None
    state: dict[str, JsonValue]
    """Every state cell (``owner[s0]``) to its value after the step."""
    changes: dict[str, tuple[JsonValue, JsonValue]]
    """Cells this step changed: before and after."""
    receives: int | None = None
    """Index of the earlier step whose message this step consumes."""
    failure: str | None = None
    """The assertion message this step violates, if any."""
    sync: tuple[str, tuple[str, ...], int, tuple[int, ...]] | None = None
    """For a channel synchronisation: the channel, the receivers' lanes, how many of
    :attr:`args` are the sender's, and which of them are a handshake receiver's."""


@dataclass(frozen=True)
class Trace:
    """A run of a model that ends in a property violation (or any run)."""

    model: str
    source: str
    actors: tuple[str, ...]
    params: dict[str, Fraction]
    verdict: str
    property: str | None
    message: str | None
    steps: tuple[Step, ...]
    vars: tuple[str, ...] = field(default_factory=tuple)
    loop: int | None = None
    """For a liveness counterexample that repeats a cycle: the index of the first step
    of one turn; the turn's last step returns to the state of step ``loop - 1``, and
    the run repeats ``steps[loop:]`` for ever."""
    lasso: str | None = None
    """For a liveness counterexample, how it goes on: ``cycle`` (repeats
    ``steps[loop:]``), ``idle`` (stays in its last state for ever, time passing) or
    ``deadlock`` (ends: nothing can fire and time cannot pass)."""
    repeats_exactly: bool = False
    """With ``cycle``: repeating the turn's delays repeats the run (every clock the turn
    resets reads the same at its end as at its start)."""

    def __repr__(self) -> str:
        n = len(self.steps) - 1 if self.steps and self.steps[0].event is None else len(
            self.steps)
        what = f"{self.verdict} {self.property}" if self.property else self.verdict
        lasso = f", lasso: {self.lasso}" if self.lasso is not None else ""
        return f"<Trace {self.model}: {what}, {n} event{'s' if n != 1 else ''}{lasso}>"

    def _repr_html_(self) -> str:
        import html

        text = lasso_text(self) if self.lasso is not None else to_text(self)
        return f"<pre>{html.escape(repr(self))}\n{html.escape(text)}</pre>"


def json_value(vt: ir.ValueType, v: int) -> JsonValue:
    """An encoded value as JSON: bool, int, enumeration label, or null for none."""
    if vt.optional and v == ir.NONE:
        return None
    if vt.base.kind == "bool":
        return bool(v)
    if vt.base.kind == "enum":
        return vt.base.labels[v]
    return v


def show_value(v: JsonValue) -> str:
    """A JSON value as written in a spec."""
    if v is None:
        return "none"
    if v is True:
        return "true"
    if v is False:
        return "false"
    return str(v)


def cells(spec: ir.Spec, s: State) -> dict[str, JsonValue]:
    """Every cell of state ``s``, named like ``write[A, 0]``, with its JSON value."""
    out: dict[str, JsonValue] = {}
    for var in spec.vars:
        for idx in ir.domain_points(var.domain):
            v = s[var.offset + ir.cell_index(var.domain, idx)]
            out[var.name + ir.show_index(var.domain, idx)] = json_value(var.value, v)
    return out


def build(
    spec: ir.Spec,
    params: Mapping[str, Fraction],
    verdict: str,
    prop: str | None,
    message: str | None,
    labels: Sequence[str],
    states: Sequence[State],
    events: Sequence[tuple[ir.Event, tuple[int, ...]] | None],
    receives: Sequence[tuple[str, tuple[int, ...]] | None],
    failures: Sequence[str | None],
    times: Sequence[Fraction] | None,
    tick: Callable[[], None] | None = None,
) -> Trace:
    """Assemble a :class:`Trace` from the states and event instances of a run
    (calling ``tick``, when given, at each step: it may raise to stop the work).

    ``receives[i]`` is the (sender ``actor.event``, argument values) the event of
    step ``i`` consumes; it is matched with the latest earlier unmatched firing of
    that sender with those arguments.
    """
    steps: list[Step] = []
    prev: dict[str, JsonValue] | None = None
    sent: list[tuple[str, tuple[int, ...], int]] = []
    for i, s in enumerate(states):
        if tick is not None:
            tick()
        now = cells(spec, s)
        changes: dict[str, tuple[JsonValue, JsonValue]] = {}
        if prev is not None:
            changes = {k: (prev[k], v) for k, v in now.items() if prev[k] != v}
        ev = events[i]
        actor = event = None
        args: tuple[str, ...] = ()
        recv_index = None
        if ev is not None:
            decl, values = ev
            actor, event = decl.actor, decl.label
            args = tuple(ft.show(v) for (_, ft), v in zip(decl.params, values, strict=True))
            want = receives[i]
            if want is not None:
                for k in range(len(sent) - 1, -1, -1):
                    if sent[k][0] == want[0] and sent[k][1] == want[1]:
                        recv_index = sent[k][2]
                        del sent[k]
                        break
            sent.append((decl.label, values, i))
        sync = None
        if ev is not None and ev[0].sync is not None:
            info = ev[0].sync
            sync = (info.channel, info.receivers, info.sender_params, info.receiver_args)
        steps.append(
            Step(i, labels[i], actor, event, args, times[i] if times is not None else None,
                 now, changes, recv_index, failures[i], sync)
        )
        prev = now
    return Trace(
        model=spec.name,
        source=spec.path,
        actors=spec.actors,
        params=dict(params),
        verdict=verdict,
        property=prop,
        message=message,
        steps=tuple(steps),
        vars=tuple(v.name for v in spec.vars),
    )


# ---- text -------------------------------------------------------------------------


def fmt_time(t: Fraction | None) -> str:
    """A rational as exact short text: ``3``, ``7.5``, or ``1/3`` (never rounded)."""
    if t is None:
        return "?"
    if t.denominator == 1:
        return str(t.numerator)
    d = t.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1 and t.denominator <= 10**6:
        text = f"{float(t):.6f}".rstrip("0")
        if Fraction(text) == t:
            return text
    return f"{t.numerator}/{t.denominator}"


def to_text(trace: Trace) -> str:
    """A readable trace: one line per event with what it changed."""
    lines: list[str] = []
    width = max((len(a) for a in trace.actors), default=6)
    timed = any(s.time is not None for s in trace.steps)
    for s in trace.steps:
        when = f"t={fmt_time(s.time):<7} " if timed else ""
        if s.event is None:
            lines.append(f"  {s.index:>3}  {when}{'':<{width}}  initial state")
            continue
        name = s.event.split(".", 1)[1] + ("(" + ", ".join(s.args) + ")" if s.args else "()")
        line = f"  {s.index:>3}  {when}{s.actor or '':<{width}}  {name}"
        if s.receives is not None:
            line += f"  <- step {s.receives}"
        lines.append(line)
        for cell, (old, new) in s.changes.items():
            lines.append(f"  {'':>3}  {' ' * len(when)}{'':<{width}}    {cell}: "
                         f"{show_value(old)} -> {show_value(new)}")
        if s.failure is not None:
            lines.append(f"  {'':>3}  {' ' * len(when)}{'':<{width}}    ** assertion violated:"
                         f" {s.failure}")
    return "\n".join(lines)


# ---- JSON (ITF shape) ------------------------------------------------------------------


def _split_cell(name: str) -> tuple[str, list[str] | None]:
    if "[" not in name:
        return name, None
    base, _, rest = name.partition("[")
    return base, [p.strip() for p in rest.rstrip("]").split(",")]


def _key(parts: list[str], template: dict[str, JsonValue]) -> JsonValue:
    def atom(p: str) -> JsonValue:
        try:
            return int(p)
        except ValueError:
            return {"true": True, "false": False}.get(p, p)

    if len(parts) == 1:
        return atom(parts[0])
    return {"#tup": [atom(p) for p in parts]}


def to_itf(trace: Trace, tick: Callable[[], None] | None = None) -> dict[str, JsonValue]:
    """The trace as an ITF-shaped JSON object (calling ``tick``, when given, at each
    step: it may raise to stop the work)."""
    states: list[dict[str, JsonValue]] = []
    for s in trace.steps:
        if tick is not None:
            tick()
        meta: dict[str, JsonValue] = {"index": s.index, "label": s.label}
        if s.event is not None:
            meta["actor"] = s.actor
            meta["event"] = s.event
            meta["args"] = list(s.args)
        if s.time is not None:
            meta["time"] = fmt_time(s.time)
        if s.receives is not None:
            meta["receives"] = s.receives
        if s.failure is not None:
            meta["failure"] = s.failure
        if s.sync is not None:
            meta["sync"] = {"channel": s.sync[0], "receivers": list(s.sync[1]),
                            "sender_args": s.sync[2], "receiver_args": list(s.sync[3])}
        obj: dict[str, JsonValue] = {"#meta": meta}
        grouped: dict[str, list[tuple[list[str] | None, JsonValue]]] = {}
        for cell, value in s.state.items():
            base, parts = _split_cell(cell)
            grouped.setdefault(base, []).append((parts, value))
        for base, entries in grouped.items():
            if len(entries) == 1 and entries[0][0] is None:
                obj[base] = entries[0][1]
            else:
                obj[base] = {"#map": [[_key(p or [], {}), v] for p, v in entries]}
        states.append(obj)
    return {
        "#meta": {
            "format": "ITF",
            "format-description": ITF_DESCRIPTION,
            "source": trace.source,
            "model": trace.model,
            "actors": list(trace.actors),
            "params": {k: fmt_time(v) for k, v in trace.params.items()},
            "verdict": trace.verdict,
            "property": trace.property,
            "message": trace.message,
        },
        "vars": list(trace.vars) or sorted({_split_cell(c)[0] for c in trace.steps[0].state}),
        "states": states,
        **_lasso_itf(trace),
    }


def _lasso_itf(trace: Trace) -> dict[str, JsonValue]:
    """The ITF ``loop`` index of a lasso (the first state of the repeated part) and
    kvrace's ``lasso`` description; nothing for a finite trace."""
    if trace.lasso is None:
        return {}
    out: dict[str, JsonValue] = {"lasso": {"kind": trace.lasso,
                                           "repeats_exactly": trace.repeats_exactly}}
    if trace.loop is not None:
        # ITF's loop is the index of the state the run returns to.
        out["loop"] = trace.loop - 1
    return out


def lasso_text(trace: Trace) -> str:
    """A readable lasso: the stem, then the cycle marked as repeating (or what the
    run does after its last step)."""
    lines = to_text(trace).split("\n")
    if trace.lasso == "cycle" and trace.loop is not None:
        # Step lines start with the index right-aligned in 5 columns.
        at = next((i for i, ln in enumerate(lines)
                   if ln[:5].strip() == str(trace.loop)), len(lines))
        turn = trace.steps[trace.loop:]
        t0 = trace.steps[trace.loop - 1].time
        t1 = turn[-1].time if turn else None
        period = f", {fmt_time(t1 - t0)} time units per turn" if (
            t0 is not None and t1 is not None) else ""
        head = (f"  --- cycle: steps {trace.loop}..{trace.steps[-1].index} return to the"
                f" state of step {trace.loop - 1}{period} ---")
        tail = ("  --- the cycle repeats for ever (the same delays every turn) ---"
                if trace.repeats_exactly else
                "  --- the cycle repeats for ever (times shown for one turn) ---")
        lines = [*lines[:at], head, *lines[at:], tail]
    elif trace.lasso == "idle":
        lines.append("  --- then nothing happens for ever: no deadline is active, time"
                     " passes without end ---")
    elif trace.lasso == "deadlock":
        lines.append("  --- deadlock: no event can fire and time cannot pass ---")
    return "\n".join(lines)


class TraceFormatError(UsageError):
    """A trace file that is not a kvrace ITF trace."""


def _key_text(k: JsonValue) -> str:
    if isinstance(k, dict) and "#tup" in k:
        return ", ".join(show_value(x) for x in k["#tup"])
    return show_value(k)


def _fraction(v: object) -> Fraction:
    """A time or parameter value read back from a trace file, through the CLI's
    bounded number parser (``Fraction("1e99999999999")`` would not return)."""
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a number")
    if isinstance(v, int | float):
        return Fraction(v)
    return parse_number(str(v))


def _index(v: object) -> int:
    """A whole number read back from a trace file, in ASCII digits."""
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a whole number")
    return v if isinstance(v, int) else parse_count(str(v))


def from_itf(data: JsonValue) -> Trace:
    """Read back a trace written by :func:`to_itf`; raises TraceFormatError."""
    try:
        meta = data["#meta"]
        steps: list[Step] = []
        prev: dict[str, JsonValue] | None = None
        for raw in data["states"]:
            m = raw["#meta"]
            cells_now: dict[str, JsonValue] = {}
            for name in data["vars"]:
                v = raw[name]
                if isinstance(v, dict) and "#map" in v:
                    for k, val in v["#map"]:
                        cells_now[f"{name}[{_key_text(k)}]"] = val
                else:
                    cells_now[name] = v
            changes = {}
            if prev is not None:
                changes = {k: (prev.get(k), v) for k, v in cells_now.items() if prev.get(k) != v}
            time = _fraction(m["time"]) if "time" in m else None
            steps.append(
                Step(_index(m["index"]), str(m["label"]), m.get("actor"), m.get("event"),
                     tuple(m.get("args", [])), time, cells_now, changes, m.get("receives"),
                     m.get("failure"), _sync_of(m.get("sync")))
            )
            prev = cells_now
        return Trace(
            model=str(meta["model"]),
            source=str(meta.get("source", "")),
            actors=tuple(meta["actors"]),
            params={k: _fraction(v) for k, v in meta.get("params", {}).items()},
            verdict=str(meta.get("verdict", "")),
            property=meta.get("property"),
            message=meta.get("message"),
            steps=tuple(steps),
            vars=tuple(data["vars"]),
            loop=(_index(data["loop"]) + 1) if "loop" in data else None,
            lasso=str(data["lasso"]["kind"]) if "lasso" in data else None,
            repeats_exactly=bool(data["lasso"].get("repeats_exactly", False))
            if "lasso" in data else False,
        )
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise TraceFormatError(f"not a kvrace trace: {exc!r}") from None


def _sync_of(raw: object) -> tuple[str, tuple[str, ...], int, tuple[int, ...]] | None:
    """The ``sync`` of a step read back from a trace file."""
    if not isinstance(raw, dict):
        return None
    return (str(raw.get("channel", "")), tuple(str(r) for r in raw.get("receivers", [])),
            int(raw.get("sender_args", 0)),
            tuple(int(k) for k in raw.get("receiver_args", [])))

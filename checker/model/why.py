"""Why a property failed, in the words of the spec: the details appended to the
message of a counterexample.

* an invariant: the values of its binders and of every state cell its expression
  read (in the order read, short-circuits respected);
* a deadlock (time cannot pass and no event can fire): the deadline instances that
  stop time, with their clock bounds, the event instances whose data guard holds
  but whose clock guard blocks them, and the events that write what a blocking
  deadline's ``while`` condition reads;
* an overdue bounded response: the event instance that was enabled while the
  obligation waited and would have made the response true — not forced to fire by
  any deadline — or that there was none.

Expressions are evaluated by the reference interpreter
(:class:`~checker.model.interp.InterpretedModel`), whose state layout is the
compiled model's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import overload

from checker.model import ir
from checker.model.interface import GE, GT, LE, LT, ClockAtom, Edge, State, TimedModel
from checker.model.interp import InterpretedModel

MAX_CELLS = 12
"""Cells listed in an invariant's message (the rest are counted)."""
MAX_EVENTS = 6
"""Event instances listed in a deadlock's message (the rest are counted)."""


class _Recorder(Sequence[int]):
    """A state that records which cells are read, in order."""

    def __init__(self, s: State) -> None:
        self.s = s
        self.read: list[int] = []

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[int]: ...
    def __getitem__(self, i: int | slice) -> int | Sequence[int]:
        if isinstance(i, slice):  # pragma: no cover - the interpreter reads single cells
            raise TypeError("a recorded state is read one cell at a time")
        if i not in self.read:
            self.read.append(i)
        return self.s[i]

    def __len__(self) -> int:
        return len(self.s)


def _cell_names(spec: ir.Spec) -> dict[int, tuple[str, ir.ValueType]]:
    out: dict[int, tuple[str, ir.ValueType]] = {}
    for var in spec.vars:
        for idx in ir.domain_points(var.domain):
            out[var.offset + ir.cell_index(var.domain, idx)] = (
                var.name + ir.show_index(var.domain, idx), var.value)
    return out


def _instances(name: str, params: tuple[tuple[str, ir.FiniteType], ...]
               ) -> Iterator[tuple[str, tuple[int, ...]]]:
    dom = tuple(ft for _, ft in params)
    for idx in ir.domain_points(dom):
        yield name + ir.show_index(dom, idx), idx


def _binders(params: tuple[tuple[str, ir.FiniteType], ...], idx: tuple[int, ...]) -> str:
    return ", ".join(f"{n} = {ft.show(v)}" for (n, ft), v in zip(params, idx, strict=True))


def _reads(interp: InterpretedModel, spec: ir.Spec, e: ir.Expr, s: State,
           idx: tuple[int, ...]) -> str:
    """``cell = value, ...`` for the cells evaluating ``e`` in ``s`` reads."""
    rec = _Recorder(s)
    # A fault: the cells read until then are still the story.
    with contextlib.suppress(Exception):
        interp.eval(e, rec, dict(enumerate(idx)))
    names = _cell_names(spec)
    shown = [f"{names[c][0]} = {names[c][1].show(s[c])}" for c in rec.read if c in names]
    more = len(shown) - MAX_CELLS
    text = ", ".join(shown[:MAX_CELLS])
    return text + (f" and {more} more" if more > 0 else "")


def invariant_detail(spec: ir.Spec, label: str, s: State) -> str | None:
    """`` for p = A, q = B, where pc[A] = cs, pc[B] = cs`` (to append to the message)
    for invariant instance ``label`` broken in ``s``; None if ``label`` is not an
    invariant."""
    interp = InterpretedModel(spec)
    for inv in spec.invariants:
        for name, idx in _instances(inv.name, inv.params):
            if name != label:
                continue
            text = " for " + _binders(inv.params, idx) if inv.params else ""
            reads = _reads(interp, spec, inv.expr, s, idx)
            if reads:
                text += ", where " + reads
            return text or None
    return None


# ---- deadlocks ---------------------------------------------------------------------------


def _reset_times(edges: Sequence[Edge], times: Sequence[Fraction]) -> dict[int, Fraction]:
    reset_at: dict[int, Fraction] = {}
    for i, e in enumerate(edges):
        for c in e.resets:
            reset_at[c] = times[i + 1]
    return reset_at


def _active_deadlines(interp: InterpretedModel, spec: ir.Spec, s: State
                      ) -> Iterator[tuple[str, ir.Deadline, tuple[ClockAtom, ...]]]:
    """The deadline instances whose ``while`` holds in ``s`` (those whose evaluation
    faults are left out): their names, declarations and clock atoms."""
    for dl in spec.deadlines:
        for name, idx in _instances(dl.name, dl.params):
            try:
                atoms = interp.deadline_atoms(dl, idx, s)
            except Exception:
                continue
            if atoms is not None:
                yield name, dl, atoms


def _deadline_text(interp: InterpretedModel, name: str, atoms: Sequence[ClockAtom]) -> str:
    return ("deadline " + name.replace("[", "(").replace("]", ")") + " ("
            + " and ".join(_atom_text(interp, a) for a in atoms) + ")")


def _atom_text(model: TimedModel, a: ClockAtom) -> str:
    """``clock op bound``, with the bound's value when it has parameters."""
    bound = model.bounds[a.bound]
    shown = str(bound)
    if bound.terms:
        shown += f" (= {_num(bound.evaluate(model.values))})"
    return f"{model.clock_names[a.clock]} {a.op} {shown}"


def _num(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _list(items: list[str], limit: int = MAX_EVENTS) -> str:
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def _clock_blocked(model: TimedModel, final: State) -> list[str]:
    """The events whose data guards hold in ``final``, each with the clock guard that
    keeps it from firing."""
    try:
        waiting = model.edges(final)
    except Exception:
        waiting = []
    blocked: list[str] = []
    for e in waiting:
        label = model.event_names[e.event]
        if e.guard:
            label += " (needs " + " and ".join(_atom_text(model, a) for a in e.guard) + ")"
        if label not in blocked:
            blocked.append(label)
    return blocked


def _writers(spec: ir.Spec, deadlines: Sequence[ir.Deadline]) -> list[str]:
    """The events that write a variable some deadline's `while` condition reads."""
    writers: list[str] = []
    for dl in deadlines:
        read = {x.var.name for x in ir.walk(dl.cond) if isinstance(x, ir.Read)}
        for ev in spec.events:
            if ev.label not in writers and any(
                    isinstance(st, ir.Assign) and st.var.name in read
                    for st in ir.statements(ev.body)):
                writers.append(ev.label)
    return writers


def deadlock_detail(spec: ir.Spec, model: TimedModel, states: Sequence[State],
                    edges: Sequence[Edge], times: Sequence[Fraction] | None) -> str | None:
    """What stops time in the last state of a deadlock trace, and what could have
    released it (see the module docstring)."""
    final = states[-1]
    interp = InterpretedModel(spec, model.values)
    reset_at = _reset_times(edges, times) if times is not None else {}
    active: list[tuple[Fraction | None, str, ir.Deadline]] = []
    for name, dl, atoms in _active_deadlines(interp, spec, final):
        expiry: Fraction | None = None
        if times is not None:
            for a in atoms:
                at = (reset_at.get(a.clock, Fraction(0))
                      + interp.bounds[a.bound].evaluate(interp.values))
                expiry = at if expiry is None else min(expiry, at)
        text = _deadline_text(interp, name, atoms)
        active.append((expiry, text, dl))
    if not active:
        return None
    known = [x for x in active if x[0] is not None]
    if known:
        first = min(x[0] for x in known if x[0] is not None)
        blocking = [x for x in known if x[0] == first]
        where = f" at t={_num(first)}"
    else:
        blocking, where = active, ""
    parts = ["time is stopped" + where + " by " + "; ".join(x[1] for x in blocking)]
    blocked = _clock_blocked(model, final)
    if blocked:
        parts.append("blocked only by their clock guards: " + _list(blocked))
    else:
        parts.append("no event's data guard holds")
    writers = _writers(spec, [dl for _, _, dl in blocking])
    if writers:
        parts.append("events that could end it by writing what its `while` condition reads: "
                     + _list(writers))
    elif all(isinstance(dl.cond, ir.Const) for _, _, dl in blocking):
        parts.append("its `while` condition is always true")
    return "; ".join(parts)


# ---- overdue bounded responses ------------------------------------------------------------


def _window(atoms: Sequence[ClockAtom], model: TimedModel, reset_at: dict[int, Fraction],
            lo: Fraction, hi: Fraction) -> tuple[Fraction, Fraction] | None:
    """The instants in ``[lo, hi]`` that satisfy every atom (each clock read since its
    last reset), as their closure ``(first, last)``; None if there are none."""
    lo_strict = hi_strict = False
    for a in atoms:
        at = reset_at.get(a.clock, Fraction(0)) + model.bounds[a.bound].evaluate(model.values)
        if a.op in (GE, GT):
            if at > lo or (at == lo and a.op == GT):
                lo, lo_strict = at, a.op == GT
        elif a.op in (LE, LT) and (at < hi or (at == hi and a.op == LT)):
            hi, hi_strict = at, a.op == LT
    if lo < hi or (lo == hi and not lo_strict and not hi_strict):
        return lo, hi
    return None


def response_detail(spec: ir.Spec, model: TimedModel, label: str, states: Sequence[State],
                    edges: Sequence[Edge], times: Sequence[Fraction] | None) -> str | None:
    """For bounded-response instance ``label`` overdue at the end of the trace: the
    first event instance enabled while it waited whose firing would have made the
    response true (and when), or that there was none."""
    interp = InterpretedModel(spec, model.values)
    cell = spec.state_size
    found: tuple[ir.Response, tuple[int, ...], int] | None = None
    for resp in spec.responses:
        for name, idx in _instances(resp.name, resp.params):
            if name == label:
                found = (resp, idx, cell)
            cell += 1
    if found is None:
        return None
    resp, idx, pending = found
    start = len(states) - 1
    while start > 0 and states[start - 1][pending]:
        start -= 1
    env = dict(enumerate(idx))
    reset_at = _reset_times(edges[:start], times) if times is not None else {}
    for j in range(start, len(states)):
        if times is not None and j > 0:
            for c in edges[j - 1].resets:
                reset_at[c] = times[j]
        found_at = _response_at(model, interp, resp, env, states, edges, times, reset_at, j)
        if found_at is not None:
            return found_at
    return "no event enabled while the response was awaited would have made it true"


def _response_at(model: TimedModel, interp: InterpretedModel, resp: ir.Response,
                 env: dict[int, int], states: Sequence[State], edges: Sequence[Edge],
                 times: Sequence[Fraction] | None, reset_at: dict[int, Fraction],
                 j: int) -> str | None:
    """The explanation from the first event enabled at step ``j`` whose firing would have
    made the response true; None when there is none."""
    try:
        out = model.edges(states[j])
    except Exception:
        return None
    for e in out:
        if e.failure is not None:
            continue
        try:
            if not interp.eval(resp.response, e.target, env):
                continue
        except Exception:
            continue
        when = ""
        if times is not None and len(times) > j:
            hi = times[j + 1] if j + 1 < len(times) else times[-1]
            win = _window(e.guard, model, reset_at, times[j], hi)
            if win is None:
                continue
            lo, hi = win
            when = f" (t={_num(lo)})" if lo == hi else f" (t={_num(lo)}..{_num(hi)})"
        what = (f"{model.event_names[e.event]}, enabled after step {j}{when}, would have"
                " made the response true")
        for k in range(j + 1, len(states)):
            if not _responds(model, interp, resp, env, states[k], e.event):
                return (f"{what}, but step {k} ({model.event_names[edges[k - 1].event]})"
                        " disabled it first")
        try:
            bounded = bool(model.deadlines(states[-1]))
        except Exception:
            bounded = False
        if bounded:
            return f"{what}, but the deadlines let it wait past the bound"
        return f"{what}, but nothing forces it to fire (no deadline bounds it)"
    return None


def _responds(model: TimedModel, interp: InterpretedModel, resp: ir.Response,
              env: dict[int, int], s: State, event: int) -> bool:
    """Whether event instance ``event`` can fire from ``s`` (its data guard) into a state
    where the response holds."""
    try:
        return any(e.event == event and e.failure is None
                   and interp.eval(resp.response, e.target, env) for e in model.edges(s))
    except Exception:
        return False


def initial_deadline_detail(spec: ir.Spec, model: TimedModel, s: State) -> str | None:
    """The deadline instances the initial state ``s`` breaks with every clock at zero."""
    interp = InterpretedModel(spec, model.values)
    broken: list[str] = []
    for name, _, atoms in _active_deadlines(interp, spec, s):
        bad = [a for a in atoms
               if not _holds_at_zero(a.op, interp.bounds[a.bound].evaluate(interp.values))]
        if bad:
            broken.append(_deadline_text(interp, name, bad))
    return ("broken at t=0 by " + "; ".join(broken)) if broken else None


def _holds_at_zero(op: str, bound: Fraction) -> bool:
    return bound > 0 if op == LT else bound >= 0

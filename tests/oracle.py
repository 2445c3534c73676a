"""State-by-state comparison of the compiled model with the IR interpreter.

:func:`compare_models` explores the discrete states of a spec (ignoring clock
constraints, so it covers every state any timed run can reach and more) and, in
each, asks both :class:`~checker.model.compiled.SpecModel` and
:class:`~checker.model.interp.InterpretedModel` for their edges, deadlines,
violations, hazards and readable valuation.  Clock atoms are compared by clock
name, operator and bound expression, since the two number their bounds
independently.  When the compiled model runs on its compiled successor function
(:mod:`checker.model.native`), :func:`native_problem` also holds that function to the
generated Python in every state: the same objects in the same order, or a fall-back
exactly where the generated Python raises a model error or breaks an ``assert``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from checker.model import ir
from checker.model.compiled import SpecModel
from checker.model.interface import ClockAtom, ModelRuntimeError, State, TimedModel
from checker.model.interp import InterpretedModel


def _atoms(m: TimedModel, atoms: Sequence[ClockAtom]) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted((m.clock_names[a.clock], a.op, str(m.bounds[a.bound])) for a in atoms))


def _view(m: TimedModel, what: str, s: State) -> Any:
    """One model's answer to ``what`` in ``s``, in a form comparable across models."""
    try:
        if what == "edges":
            return sorted(
                (m.event_names[e.event], _atoms(m, e.guard),
                 tuple(sorted(m.clock_names[c] for c in e.resets)), e.target, e.failure or "")
                for e in m.edges(s))
        if what == "deadlines":
            return sorted(set(_atoms(m, m.deadlines(s))))
        if what == "violations":
            return [(v.property, v.message) for v in m.violations(s)]
        if what == "hazards":
            return sorted((h.property, h.message, _atoms(m, h.atoms)) for h in m.hazards(s))
        if what == "queries":
            return sorted((q.query, sorted(_atoms(m, p) for p in q.parts))
                          for q in m.queries(s))  # type: ignore[attr-defined]
        if what == "describe":
            return m.describe(s)
    except ModelRuntimeError as exc:
        event = m.event_names[exc.event] if exc.event is not None else None
        return ("model error", event)
    raise AssertionError(what)


@dataclass
class Comparison:
    """The outcome of :func:`compare_models`."""

    states: int
    problems: list[str]
    complete: bool


def native_problem(m: SpecModel, s: State) -> str | None:
    """How the compiled successor function of ``m`` differs from the generated Python in
    ``s`` (None: it does not).  It must answer exactly what the generated Python does, or
    fall back (None) exactly where the generated Python raises a model error, or breaks an
    ``assert`` (edges)."""
    prog = m._native
    assert prog is not None
    for what in ("edges", "deadlines", "violations"):
        err: ModelRuntimeError | None = None
        try:
            py: Any = getattr(m, f"python_{what}")(s)
        except ModelRuntimeError as exc:
            py, err = None, exc
        nat = prog.edges(s, None) if what == "edges" else getattr(prog, what)(s)
        if nat is None:
            failing = what == "edges" and py is not None and any(
                e.failure is not None for e in py)
            if err is None and not failing:
                return f"native {what} fell back where the generated Python gives {py}"
        elif err is not None:
            return (f"native {what} gave {nat} where the generated Python raises"
                    f" {err.message!r}")
        elif nat != py:
            return f"{what} differ:\n    native: {nat}\n    generated Python: {py}"
    return None


def compare_models(spec: ir.Spec, values: Mapping[str, Fraction] | None = None,
                   max_states: int = 20_000, max_problems: int = 5,
                   compiled: SpecModel | None = None) -> Comparison:
    """Compare the compiled model of ``spec`` (``compiled``, or a new one) with its
    interpretation, state by state, and the compiled successor function, if it has one,
    with the generated Python."""
    if compiled is None:
        compiled = SpecModel(spec, values)
    oracle = InterpretedModel(spec, compiled.values)
    problems: list[str] = []
    if compiled.event_names != oracle.event_names:
        problems.append("event instances differ")
    if compiled.clock_names != oracle.clock_names:
        problems.append("clock instances differ")
    try:
        init = compiled.initial_states()
    except ModelRuntimeError:
        init = []
    try:
        init_o = oracle.initial_states()
    except ModelRuntimeError:
        init_o = []
    if init != init_o:
        problems.append(f"initial states differ: {init} vs {init_o}")
    seen: set[State] = set(init)
    queue = deque(init)
    while queue and not problems:
        if len(seen) > max_states:
            return Comparison(len(seen), problems, False)
        s = queue.popleft()
        if compiled._native is not None:
            why = native_problem(compiled, s)
            if why is not None:
                problems.append(f"compiled successor function in {compiled.describe(s)}: {why}")
        for what in ("edges", "deadlines", "violations", "hazards", "queries", "describe"):
            a, b = _view(compiled, what, s), _view(oracle, what, s)
            if a != b:
                problems.append(f"{what} differ in {compiled.describe(s)}:\n"
                                f"    compiled: {a}\n    interpreted: {b}")
                if len(problems) >= max_problems:
                    break
        try:
            edges = compiled.edges(s)
        except ModelRuntimeError:
            continue
        for e in edges:
            if e.failure is None and e.target not in seen:
                seen.add(e.target)
                queue.append(e.target)
    return Comparison(len(seen), problems, True)

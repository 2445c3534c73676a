"""State-by-state comparison of the compiled model with the IR interpreter.

:func:`compare_models` explores the discrete states of a spec (ignoring clock
constraints, so it covers every state any timed run can reach and more) and, in
each, asks both :class:`~checker.model.compiled.SpecModel` and
:class:`~checker.model.interp.InterpretedModel` for their edges, deadlines,
violations, hazards and readable valuation.  Clock atoms are compared by clock
name, operator and bound expression, since the two number their bounds
independently.
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


def compare_models(spec: ir.Spec, values: Mapping[str, Fraction] | None = None,
                   max_states: int = 20_000, max_problems: int = 5) -> Comparison:
    """Compare the compiled model of ``spec`` with its interpretation, state by state."""
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

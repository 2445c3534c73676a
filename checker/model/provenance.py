"""Where the parameters of a synthesized region come from: the model elements whose
bounds mention them.

A constraint of a synthesized region is a linear combination of the clock bounds
the model's guards, deadlines, bounded responses and ``assume`` constraints state;
each of its parameters entered it through some of them.  :func:`sources` lists
every such element with its place, and :func:`provenance` the ones that mention a
parameter of a constraint: a reader who finds ``T_flight`` missing from a bound
sees which elements bring ``T_flight`` in (and so which of them the exploration
found irrelevant, for example a deadline that forces the event first).

The attribution is syntactic: an element is listed when its bound mentions one of
the constraint's parameters, not only when the exploration used it for that
constraint (which would need the derivation of every bad piece).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from checker.model import ir


@dataclass(frozen=True)
class Source:
    """A model element that states a bound on parameters."""

    kind: str
    """``guard``, ``deadline``, ``within`` or ``assume``."""
    name: str
    """The element: ``event decode.land``, ``deadline in_flight``, ``property p``."""
    text: str
    """The bound as written, e.g. ``since_post <= T_flight``."""
    where: str
    """``FILE:LINE``."""
    params: frozenset[str]

    def describe(self) -> str:
        """``guard of event decode.land: x >= T (spec.kvr:12)``."""
        what = {"guard": f"guard of {self.name}", "deadline": self.name,
                "within": f"{self.name} within", "assume": "assume"}[self.kind]
        return f"{what}: {self.text} ({self.where})"


def _atom_text(atom: ir.ClockTest) -> str:
    return f"{atom.clock.name} {atom.op} {atom.bound}"


def sources(spec: ir.Spec) -> list[Source]:
    """Every element of ``spec`` whose bound mentions a parameter, in source order."""
    out: list[Source] = []
    seen: set[tuple[str, str, str]] = set()

    def add(kind: str, name: str, text: str, line: int, params: frozenset[str]) -> None:
        key = (kind, name, text)
        if params and key not in seen:
            seen.add(key)
            out.append(Source(kind, name, text, f"{spec.path}:{line}", params))

    for ev in spec.events:
        atoms = [n for n in ir.walk(ev.guard) if isinstance(n, ir.ClockTest)]
        atoms += [a for b in ev.branches for a in b.clocks]
        for a in atoms:
            add("guard", f"event {ev.label}", _atom_text(a), ev.span.line,
                frozenset(p for p, _ in a.bound.terms))
    for dl in spec.deadlines:
        for a in dl.atoms:
            add("deadline", f"deadline {dl.name}", _atom_text(a), dl.span.line,
                frozenset(p for p, _ in a.bound.terms))
    for r in spec.responses:
        add("within", f"property {r.name}", str(r.within), r.span.line,
            frozenset(p for p, _ in r.within.terms))
    for c in spec.assumes:
        line = int(c.where.rsplit(":", 2)[1])
        add("assume", "assume", c.text, line, frozenset(p for p, _ in c.expr.terms))
    return sorted(out, key=lambda s: (int(s.where.rsplit(":", 1)[1]), s.kind, s.text))


def provenance(params: Sequence[str], among: Sequence[Source]) -> list[Source]:
    """The sources that mention one of ``params``."""
    want = set(params)
    return [s for s in among if s.params & want]

"""Expectations written in a spec's comments, and whether a run meets them: what the
pytest plugin (:mod:`checker.testing.pytest_plugin`) collects and runs.

A spec carries its expectations as comment lines, anywhere in the file::

    # expect: violated                 the verdict of `kvrace check` (one word:
                                         holds, violated, unreachable, inconclusive, error)
    # expect mutex: holds              one property: an invariant, a bounded or unbounded
                                         response, or `deadlock` (deadlock freedom):
                                         holds or violated
    # expect both_flying: reachable    one `reachable` query: reachable or unreachable
    # expect region: T_hold > T_prop + T_chunk + T_flight
                                       the safe region of `kvrace synth`, compared by
                                         equivalence within the parameters' ranges
    # expect params: T_hold=7, N=3      the parameter values of the run (optional)

``region`` and ``params`` are reserved: a property so named cannot carry an
expectation.  A property holds only when the run decided it: ``check`` stops at the
first safety violation, so every other safety property is then *not decided*, and an
expectation that it holds fails with that reason.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from checker.errors import KvraceError
from checker.present.cases import PropertyCase
from checker.results import PropertyKind, Verdict

if TYPE_CHECKING:
    from checker.model import ir

_LINE = re.compile(r"^\s*#\s*expect(?:\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*))?\s*:(?P<rest>.*)$")

VERDICT_WORDS = ("holds", "violated", "unreachable", "inconclusive", "error")
"""What ``# expect:`` may say: a verdict of ``check``."""
PROPERTY_WORDS = ("holds", "violated")
QUERY_WORDS = ("reachable", "unreachable")


class ExpectKind(enum.Enum):
    """What an expectation is about."""

    VERDICT = "verdict"
    """The verdict of the whole ``check`` run."""
    PROPERTY = "property"
    """One property's outcome (or a query's)."""
    REGION = "region"
    """The safe region of ``synth``."""


class ExpectationError(KvraceError):
    """A malformed expectation: the message names its ``file:line``."""


@dataclass(frozen=True)
class Expectation:
    """One ``# expect`` line."""

    kind: ExpectKind
    name: str
    """The property's or query's name; ``check`` for the verdict, ``region`` for the
    region: the test item's name."""
    word: str
    """``holds``, ``violated``, ``reachable``, ... or the region's formula."""
    line: int
    """1-based."""


@dataclass(frozen=True)
class Expectations:
    """A spec's expectations and the parameter values they are checked at."""

    items: tuple[Expectation, ...]
    params: dict[str, Fraction]
    params_line: int | None = None


def _parse_params(text: str, where: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for part in (p.strip() for p in text.split(",")):
        name, eq, value = part.partition("=")
        try:
            if not eq or not name.strip().isidentifier():
                raise ValueError(part)
            out[name.strip()] = Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ExpectationError(f"{where}: `# expect params:` takes NAME=VALUE, ...;"
                                   f" not `{part}`") from None
    return out


def parse(text: str, path: str) -> Expectations:
    """The ``# expect`` lines of a spec's text.  Raises :class:`ExpectationError` for a
    malformed one, or one said twice."""
    items: list[Expectation] = []
    params: dict[str, Fraction] = {}
    params_line: int | None = None
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if m is None:
            continue
        where = f"{path}:{number}"
        name, rest = m.group("name"), m.group("rest").strip()
        key = name or ""
        if key in seen:
            what = f"`# expect {name}:`" if name else "`# expect:`"
            raise ExpectationError(f"{where}: {what} again (first at line {seen[key]})")
        seen[key] = number
        if name == "params":
            params, params_line = _parse_params(rest, where), number
        elif name == "region":
            if not rest:
                raise ExpectationError(f"{where}: `# expect region:` needs the region")
            items.append(Expectation(ExpectKind.REGION, "region", rest, number))
        elif name is None:
            if rest not in VERDICT_WORDS:
                raise ExpectationError(f"{where}: `# expect:` takes one verdict ("
                                       f"{', '.join(VERDICT_WORDS)}), not `{rest}`")
            items.append(Expectation(ExpectKind.VERDICT, "check", rest, number))
        else:
            if rest not in PROPERTY_WORDS + QUERY_WORDS:
                raise ExpectationError(
                    f"{where}: `# expect {name}:` takes holds or violated (a property),"
                    f" reachable or unreachable (a query), not `{rest}`")
            items.append(Expectation(ExpectKind.PROPERTY, name, rest, number))
    return Expectations(tuple(items), params, params_line)


def has_expectations(text: str) -> bool:
    """Whether some line of ``text`` is an ``# expect`` line (the plugin collects only
    such specs)."""
    return any(_LINE.match(line) for line in text.splitlines())


def check_names(spec: ir.Spec, expectations: Expectations, path: str) -> None:
    """Refuse an expectation about a property the spec does not declare, or a word
    that does not fit its kind."""
    queries = {q.name for q in spec.queries}
    props = ({i.name for i in spec.invariants} | {r.name for r in spec.responses}
             | {lt.name for lt in spec.leadsto} | {"deadlock"})
    for e in expectations.items:
        if e.kind is not ExpectKind.PROPERTY:
            continue
        where = f"{path}:{e.line}"
        if e.name in queries:
            if e.word not in QUERY_WORDS:
                raise ExpectationError(f"{where}: `{e.name}` is a `reachable` query: expect"
                                       " reachable or unreachable")
        elif e.name in props:
            if e.word not in PROPERTY_WORDS:
                raise ExpectationError(f"{where}: `{e.name}` is a property: expect holds or"
                                       " violated")
        else:
            known = ", ".join(sorted(props | queries))
            raise ExpectationError(f"{where}: `{spec.name}` declares no property or query"
                                   f" `{e.name}` (it declares: {known})")


def case_of(cases: Sequence[PropertyCase], name: str) -> PropertyCase | None:
    """The case of the property or query ``name`` (``deadlock``: deadlock freedom)."""
    for c in cases:
        if name == "deadlock" and c.ref.kind is PropertyKind.DEADLOCK:
            return c
        if c.ref.kind in (PropertyKind.INVARIANT, PropertyKind.RESPONSE,
                          PropertyKind.LIVENESS, PropertyKind.QUERY) and c.ref.name == name:
            return c
    return None


_MEANS = {"holds": Verdict.HOLDS, "violated": Verdict.VIOLATED,
          "reachable": Verdict.HOLDS, "unreachable": Verdict.UNREACHABLE}


def judge_property(e: Expectation, cases: Sequence[PropertyCase]) -> str | None:
    """``None`` when the run meets ``e``, else why not (with the counterexample)."""
    case = case_of(cases, e.name)
    if case is None:
        return f"`{e.name}` was not checked"
    if case.status is _MEANS[e.word]:
        return None
    got = {Verdict.HOLDS: "reachable" if case.ref.kind is PropertyKind.QUERY else "holds"
           }.get(case.status, str(case.status))
    return f"expected {case.title} {e.word}, got {got}: {case.detail or case.message}"


def judge_verdict(e: Expectation, verdict: Verdict, summary: str) -> str | None:
    """``None`` when ``verdict`` is the expected one, else why not (``summary``: what
    the run printed, the counterexample included)."""
    if str(verdict) == e.word:
        return None
    return f"expected {e.word}, got {verdict}\n\n{summary}"

"""The typed vocabulary every engine and every output shares: verdicts, the
kinds of property, and a reference to one property (instance).

The enums are string enums whose values are the words of the JSON contract
(``docs/schema/kvrace-output-1.schema.json``), so a member compares equal to,
and serialises as, that word.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Verdict(str, enum.Enum):
    """What a run shows, one word per outcome of the JSON contract."""

    HOLDS = "holds"
    """Every property holds (exploration complete); for ``prove``, proved; for
    ``synth``, the region is exact and some parameter value in it is safe."""
    VIOLATED = "violated"
    """A property is broken; a trace shows it (``synth``: for every parameter value
    in the ranges)."""
    UNREACHABLE = "unreachable"
    """``check``: every property holds, but a ``reachable`` query is never reachable."""
    INCONCLUSIVE = "inconclusive"
    """A limit (states, time, memory) or the solver's ``unknown`` ended the run first."""
    ERROR = "error"
    """Bad input, bad usage, or a model run-time error."""
    INTERRUPTED = "interrupted"
    """SIGINT or SIGTERM."""
    DEVIATES = "deviates"
    """``validate``: a line of the log is not a step of any run of the spec."""

    def __str__(self) -> str:
        return self.value


class QueryStatus(str, enum.Enum):
    """The outcome of one ``reachable`` query."""

    REACHABLE = "reachable"
    """A reachable state satisfies it; a witness trace shows one."""
    UNREACHABLE = "unreachable"
    """Exploration finished and no reachable state satisfies it."""
    INCONCLUSIVE = "inconclusive"
    """The run ended (a limit, a violation, a model error) before either was shown."""

    def __str__(self) -> str:
        return self.value


class ProofStatus(str, enum.Enum):
    """The outcome of ``prove``: the words of its ``status`` field."""

    PROVED = "proved"
    """No violation for any parameter value satisfying the assumption."""
    REFUTED = "refuted"
    """A parameter value inside the assumption breaks a property."""
    INCONCLUSIVE = "inconclusive"
    """A limit ended the parametric exploration first: nothing is proved."""

    def __str__(self) -> str:
        return self.value


class Coverage(str, enum.Enum):
    """How much of the parameter ranges a synthesised safe region covers."""

    ALL = "all"
    """Every parameter value in the ranges is safe."""
    SOME = "some"
    """Some values are safe, some are not."""
    NONE = "none"
    """No value in the ranges is safe: a property breaks for each."""

    def __str__(self) -> str:
        return self.value


class PropertyKind(str, enum.Enum):
    """The kinds of property a violation can break."""

    ASSERT = "assert"
    INVARIANT = "invariant"
    RESPONSE = "response"
    """A bounded response ``P leadsto Q within T``."""
    DEADLOCK = "deadlock"
    """Deadlock freedom: some event can fire or time can pass."""
    LIVENESS = "liveness"
    """An unbounded liveness property (``P leadsto Q`` without ``within``, ``always
    eventually Q``): checked after safety, broken by a lasso.  The CI reports' word
    (``--junit``, ``--sarif``); the JSON contract's ``property_kind`` never holds it."""
    QUERY = "reachable"
    """A ``reachable`` query, in the CI reports: it fails when never reachable."""
    OTHER = "other"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class PropertyRef:
    """One property, or one instance of a parametrised property.

    ``name`` is the declared name (``""`` for ``assert`` and deadlock freedom);
    ``instance`` the binder values in brackets as the model prints them
    (``"[A]"``), or ``""``."""

    kind: PropertyKind
    name: str = ""
    instance: str = ""

    @classmethod
    def of_label(cls, kind: PropertyKind, label: str) -> PropertyRef:
        """The reference of a property instance named as the model names it
        (``bounded_release[A]``: name ``bounded_release``, instance ``[A]``).  An
        ``assert`` and deadlock freedom have no name (the engines call them ``assert``
        and ``deadlock``)."""
        if kind in (PropertyKind.ASSERT, PropertyKind.DEADLOCK):
            return cls(kind)
        name, bracket, rest = label.partition("[")
        return cls(kind, name, bracket + rest)

    @property
    def label(self) -> str:
        """The name with its instance: what the model's messages call it."""
        return f"{self.name}{self.instance}"


ASSERT_REF = PropertyRef(PropertyKind.ASSERT)
"""A failed ``assert`` (which one is the event of the trace's last step)."""
DEADLOCK_REF = PropertyRef(PropertyKind.DEADLOCK)
"""Deadlock freedom."""

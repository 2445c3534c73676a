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
    ``synth``, the region is exact."""
    VIOLATED = "violated"
    """A property is broken; a trace shows it."""
    UNREACHABLE = "unreachable"
    """``check``: every property holds, but a ``reachable`` query is never reachable."""
    INCONCLUSIVE = "inconclusive"
    """A limit (states, time, memory) or the solver's ``unknown`` ended the run first."""
    ERROR = "error"
    """Bad input, bad usage, or a model run-time error."""
    INTERRUPTED = "interrupted"
    """SIGINT or SIGTERM."""

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

    @property
    def label(self) -> str:
        """The name with its instance: what the model's messages call it."""
        return f"{self.name}{self.instance}"

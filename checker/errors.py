"""The one root of kvrace's exceptions, and the families below it.

Every exception kvrace raises on purpose derives from :class:`KvraceError`,
so that an application embedding kvrace can catch them all, and the CLI can
tell a reported failure (exit 2 or 3) from a bug (exit 70).
"""

from __future__ import annotations


class KvraceError(Exception):
    """Something kvrace reports rather than crashes on."""


class UsageError(KvraceError):
    """Bad usage: an option, a parameter value, a file that cannot be read."""


class ModelError(KvraceError):
    """A model that is well formed but faults when it runs (an index out of range,
    a value outside its type, a division by zero)."""


class Inconclusive(KvraceError):
    """A run ended before it could decide: a limit, or the solver's ``unknown``.

    ``reason`` says which, in words a person reads (``"state limit (1000)
    reached"``)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason

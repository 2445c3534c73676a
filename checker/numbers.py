"""Numbers typed by a user: one syntax and one bound for a spec's literals,
``-p NAME=VALUE``, ``--assume``, ``--timeout`` and the viewer's firing times.

A number is a decimal with an optional exponent (``7``, ``7.5``, ``1e3``,
``2.5e-29``); outside a spec, where no expression is parsed, it may also carry a
sign and be a fraction (``-3``, ``15/2``), which a spec writes as an expression.

:class:`~fractions.Fraction` alone would compute ``10**(10**14)`` for the 18
characters ``1e99999999999999``; every number is therefore bounded first: at most
:data:`MAX_NUMBER_DIGITS` digits and an exponent of at most that size.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["LITERAL", "MAX_NUMBER_DIGITS", "literal_problem", "parse_count", "parse_float",
           "parse_number"]

MAX_NUMBER_DIGITS = 30
"""Digits of one number (a spec literal, ``--assume`` or ``-p NAME=VALUE``), and
the largest exponent in absolute value."""

LITERAL = r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?"
"""An unsigned number literal; the ``UNUMBER`` terminal of ``kvrace.lark`` is this
pattern (a test keeps the two equal)."""

# ASCII digits only: Python's ``\d``, ``int()`` and ``float()`` also take ``٣`` (an
# Arabic-Indic three) or ``1_000``, which a spec's literals do not.
_NUMBER = re.compile(
    rf"(?P<sign>[+-]?)(?P<lit>{LITERAL})"
    r"|(?P<num>[+-]?[0-9]+)/(?P<den>[0-9]+)"
)
_DECIMAL = re.compile(rf"[+-]?{LITERAL}")
_COUNT = re.compile(r"[+-]?[0-9]+")


def _clip(text: str, width: int = 40) -> str:
    """``text`` quoted, shortened to about ``width`` characters for a message."""
    return repr(text if len(text) <= width else text[:width] + "...")


def literal_problem(text: str) -> str | None:
    """Why the number ``text`` (matching :data:`LITERAL` or a fraction) is out of
    bounds, as the end of "number with ...", or None when it is not."""
    if sum(ch in "0123456789" for ch in text) > MAX_NUMBER_DIGITS:
        return f"more than {MAX_NUMBER_DIGITS} digits"
    _, e, exp = text.lower().partition("e")
    if e and abs(int(exp)) > MAX_NUMBER_DIGITS:
        return f"an exponent outside [-{MAX_NUMBER_DIGITS}, {MAX_NUMBER_DIGITS}]"
    return None


def parse_number(text: str) -> Fraction:
    """A number typed by a user: decimal (``7.5``, ``1e3``, ``-2``) or fraction
    (``15/2``), bounded by :func:`literal_problem`.  Raises ValueError with a
    message for the user."""
    m = _NUMBER.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{_clip(text)} is not a number (write e.g. 7, 7.5, 15/2 or 1e3)")
    problem = literal_problem(text.strip())
    if problem is not None and problem.startswith("an exponent"):
        raise ValueError(f"{_clip(text)}: the exponent is outside"
                         f" [-{MAX_NUMBER_DIGITS}, {MAX_NUMBER_DIGITS}]")
    if problem is not None:
        raise ValueError(f"{_clip(text)} has {problem}")
    if m.group("den") is not None and int(m.group("den")) == 0:
        raise ValueError(f"{_clip(text)} divides by zero")
    return Fraction(text.strip())


def parse_float(text: str) -> float:
    """A decimal number as a float (``2.5``, ``1e-3``), in ASCII digits only.

    The values of ``--delay`` and the samples of an empirical file: ``float()``
    alone would also take ``٣``, ``1_0``, ``inf`` and ``nan``.  Raises ValueError.
    """
    t = text.strip()
    if _DECIMAL.fullmatch(t) is None:
        raise ValueError(f"{_clip(text)} is not a number")
    problem = literal_problem(t.lstrip("+-"))
    if problem is not None:
        raise ValueError(f"{_clip(text)} has {problem}")
    return float(t)


def parse_count(text: str) -> int:
    """A whole number in ASCII digits (``--runs 1000``); raises ValueError."""
    t = text.strip()
    if _COUNT.fullmatch(t) is None or len(t) > MAX_NUMBER_DIGITS + 1:
        raise ValueError(f"{_clip(text)} is not a whole number")
    return int(t)

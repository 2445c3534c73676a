"""Numbers typed by a user: the bounded parser behind ``-p NAME=VALUE``, ``--timeout``
and the viewer's firing times.

:class:`~fractions.Fraction` alone would compute ``10**(10**14)`` for the 18
characters ``1e99999999999999``; :func:`parse_number` bounds the digits and the
exponent first, as the spec language bounds its literals.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["MAX_NUMBER_DIGITS", "parse_count", "parse_float", "parse_number"]

MAX_NUMBER_DIGITS = 30
"""Digits of one number: a spec's literal, ``-p NAME=VALUE``, a time in a trace file."""

# ASCII digits only: Python's ``\d``, ``int()`` and ``float()`` also take ``٣`` (an
# Arabic-Indic three) or ``1_000``, which a spec's literals do not.
_NUMBER = re.compile(
    r"(?P<sign>[+-]?)(?P<mant>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exp>[+-]?[0-9]+))?"
    r"|(?P<num>[+-]?[0-9]+)/(?P<den>[0-9]+)"
)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_COUNT = re.compile(r"[+-]?[0-9]+")


def _clip(text: str, width: int = 40) -> str:
    """``text`` quoted, shortened to about ``width`` characters for a message."""
    return repr(text if len(text) <= width else text[:width] + "...")


def parse_number(text: str) -> Fraction:
    """A number typed by a user: decimal (``7.5``, ``1e3``) or fraction (``15/2``).

    Like a spec's literals it has at most ``MAX_NUMBER_DIGITS`` digits, and an
    exponent of at most that size, so no value can make kvrace compute for ever
    (``1e99999999999``).  Raises ValueError with a message for the user.
    """
    m = _NUMBER.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a number (write e.g. 7, 7.5, 15/2 or 1e3)")
    if sum(ch in "0123456789" for ch in text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"{_clip(text)} has more than {MAX_NUMBER_DIGITS} digits")
    if m.group("exp") is not None and abs(int(m.group("exp"))) > MAX_NUMBER_DIGITS:
        raise ValueError(f"{_clip(text)}: the exponent is outside"
                         f" [-{MAX_NUMBER_DIGITS}, {MAX_NUMBER_DIGITS}]")
    if m.group("den") is not None and int(m.group("den")) == 0:
        raise ValueError(f"{_clip(text)} divides by zero")
    return Fraction(text.strip())


def parse_float(text: str) -> float:
    """A decimal number as a float (``2.5``, ``1e-3``), in ASCII digits only.

    The values of ``--delay`` and the samples of an empirical file: ``float()``
    alone would also take ``٣``, ``1_0``, ``inf`` and ``nan``.  Raises ValueError.
    """
    if _DECIMAL.fullmatch(text.strip()) is None:
        raise ValueError(f"{_clip(text)} is not a number")
    return float(text.strip())


def parse_count(text: str) -> int:
    """A whole number in ASCII digits (``--runs 1000``); raises ValueError."""
    t = text.strip()
    if _COUNT.fullmatch(t) is None or len(t) > MAX_NUMBER_DIGITS + 1:
        raise ValueError(f"{_clip(text)} is not a whole number")
    return int(t)

"""Numbers typed by a user: the bounded parser behind ``-p NAME=VALUE``, ``--timeout``
and the viewer's firing times.

:class:`~fractions.Fraction` alone would compute ``10**(10**14)`` for the 18
characters ``1e99999999999999``; :func:`parse_number` bounds the digits and the
exponent first, as the spec language bounds its literals.
"""

from __future__ import annotations

import re
from fractions import Fraction

from checker.language.syntax import MAX_NUMBER_DIGITS

__all__ = ["parse_number"]

_NUMBER = re.compile(
    r"(?P<sign>[+-]?)(?P<mant>\d+(?:\.\d*)?|\.\d+)(?:[eE](?P<exp>[+-]?\d+))?"
    r"|(?P<num>[+-]?\d+)/(?P<den>\d+)"
)


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
    if sum(ch.isdigit() for ch in text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"{_clip(text)} has more than {MAX_NUMBER_DIGITS} digits")
    if m.group("exp") is not None and abs(int(m.group("exp"))) > MAX_NUMBER_DIGITS:
        raise ValueError(f"{_clip(text)}: the exponent is outside"
                         f" [-{MAX_NUMBER_DIGITS}, {MAX_NUMBER_DIGITS}]")
    if m.group("den") is not None and int(m.group("den")) == 0:
        raise ValueError(f"{_clip(text)} divides by zero")
    return Fraction(text.strip())

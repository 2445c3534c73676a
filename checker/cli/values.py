"""Values of command-line options: numbers, counts, durations, probabilities."""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

from checker.errors import UsageError
from checker.numbers import parse_count
from checker.numbers import parse_number as parse_number


def clip(text: str, width: int = 40) -> str:
    """``text`` quoted, shortened to about ``width`` characters for a message."""
    return repr(text if len(text) <= width else text[:width] + "...")


def parse_param(text: str) -> tuple[str, Fraction]:
    """``NAME=VALUE`` with a decimal or fractional value."""
    if "=" not in text:
        raise UsageError(f"--param expects NAME=VALUE, got {clip(text)}")
    name, _, value = text.partition("=")
    try:
        return name.strip(), parse_number(value)
    except ValueError as exc:
        raise UsageError(f"--param {name.strip()}: {exc}") from None


def positive_int(text: str) -> int:
    """An option value that counts something: a whole number, at least 1."""
    try:
        value = parse_count(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {clip(text)}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {clip(text)}")
    return value


def whole_int(text: str) -> int:
    """An option value that is any whole number in ASCII digits (a seed, a port)."""
    try:
        return parse_count(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {clip(text)}") from None


def positive_seconds(text: str) -> float:
    """A time limit: a finite number of seconds, more than 0."""
    try:
        value = float(parse_number(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds, got {clip(text)}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {clip(text)}")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0."""
    try:
        value = float(parse_number(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"expected a number, got {clip(text)}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {clip(text)}")
    return value


def probability(text: str) -> float:
    """A number strictly between 0 and 1."""
    try:
        value = float(parse_number(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"expected a number, got {clip(text)}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {clip(text)}")
    return value

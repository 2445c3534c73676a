"""Delay distributions for the simulator, and their truncated sampling.

A distribution describes a *clock value at firing*: ``--delay T_flight=lognormal(0, 1)``
says how long the clock bounded by ``T_flight`` has run when the edge it bounds fires
(see :mod:`checker.simulate.engine`).  The simulator only ever needs samples of that
value conditioned on an interval ``[lo, hi]`` (the edge's window), so every
distribution here samples by inverting its distribution function on that interval:
one uniform number per sample, deterministic for a given random generator.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
import os
import random
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

from checker.errors import UsageError
from checker.numbers import parse_float

_STD_NORMAL = NormalDist()


class DistributionError(UsageError, ValueError):
    """A distribution that cannot be parsed or read (a message for the user)."""


@dataclass(frozen=True)
class Distribution:
    """One of ``uniform(a,b)``, ``exp(rate)``, ``lognormal(mu,sigma)``,
    ``empirical(FILE.csv)`` (its sorted samples in :attr:`data`) or
    ``mixture(w1*D1, w2*D2, ...)`` (weights in :attr:`args`, components in
    :attr:`parts`)."""

    kind: str
    args: tuple[float, ...] = ()
    data: tuple[float, ...] = ()
    source: str = ""
    parts: tuple[Distribution, ...] = ()

    def text(self) -> str:
        """The distribution as written on the command line."""
        if self.kind == "empirical":
            return f"empirical({self.source}, {len(self.data)} samples)"
        if self.kind == "mixture":
            return "mixture(" + ", ".join(f"{w:g}*{d.text()}"
                                          for w, d in zip(self.args, self.parts, strict=True)) + ")"
        return f"{self.kind}({', '.join(f'{a:g}' for a in self.args)})"

    def mass(self, lo: float, hi: float) -> float:
        """The probability of ``[lo, hi]``."""
        if hi < lo:
            return 0.0
        if self.kind == "uniform":
            a, b = self.args
            if a == b:
                return 1.0 if lo <= a <= hi else 0.0
            return max(0.0, min(b, hi) - max(a, lo)) / (b - a)
        if self.kind == "exp":
            (rate,) = self.args
            start = max(lo, 0.0)
            if hi < start:
                return 0.0
            return math.exp(-rate * start) - (0.0 if math.isinf(hi) else math.exp(-rate * hi))
        if self.kind == "lognormal":
            mu, sigma = self.args
            if hi <= 0.0:
                return 0.0
            pa = 0.0 if lo <= 0.0 else _STD_NORMAL.cdf((math.log(lo) - mu) / sigma)
            pb = 1.0 if math.isinf(hi) else _STD_NORMAL.cdf((math.log(hi) - mu) / sigma)
            return max(pb - pa, 0.0)
        if self.kind == "empirical":
            n = bisect.bisect_right(self.data, hi) - bisect.bisect_left(self.data, lo)
            return n / len(self.data)
        if self.kind == "mixture":
            return sum(w * d.mass(lo, hi) for w, d in zip(self.args, self.parts, strict=True))
        raise AssertionError(self.kind)  # pragma: no cover

    def sample_in(self, rng: random.Random, lo: float, hi: float) -> float | None:
        """A sample conditioned on ``[lo, hi]`` (``hi`` may be ``inf``), or None when
        the distribution has no probability mass there."""
        if hi < lo:
            return None
        if self.kind == "mixture":
            return self._mixture_in(rng, lo, hi)
        u = rng.random()
        truncated = _TRUNCATED.get(self.kind)
        if truncated is None:  # pragma: no cover
            raise AssertionError(self.kind)
        return truncated(self, u, lo, hi)

    def _mixture_in(self, rng: random.Random, lo: float, hi: float) -> float | None:
        """A part picked by its weighted mass in ``[lo, hi]``, then sampled there."""
        weights = [w * d.mass(lo, hi) for w, d in zip(self.args, self.parts, strict=True)]
        total = sum(weights)
        if total <= 0.0:
            return None
        pick = rng.random() * total
        last = self.parts[-1]
        for w, d in zip(weights, self.parts, strict=True):
            if w > 0.0:
                last = d
                if pick < w:
                    break
                pick -= w
        return last.sample_in(rng, lo, hi)

    def _uniform_in(self, u: float, lo: float, hi: float) -> float | None:
        """The uniform distribution on the overlap of its interval with ``[lo, hi]``."""
        a, b = self.args
        a2, b2 = max(a, lo), min(b, hi)
        if b2 < a2:
            return None
        return a2 + u * (b2 - a2)

    def _exp_in(self, u: float, lo: float, hi: float) -> float | None:
        """The exponential distribution truncated to ``[lo, hi]``, by inversion."""
        (rate,) = self.args
        start = max(lo, 0.0)
        if hi < start:
            return None
        # Memoryless: X | X >= start is start + Exp(rate), truncated at hi.
        span = hi - start
        mass = 1.0 if math.isinf(span) else -math.expm1(-rate * span)
        if mass <= 0.0:
            return start
        return min(start - math.log1p(-u * mass) / rate, hi)

    def _lognormal_in(self, u: float, lo: float, hi: float) -> float | None:
        """The log-normal distribution truncated to ``[lo, hi]``, by inversion."""
        mu, sigma = self.args
        if hi <= 0.0:
            return None
        pa = 0.0 if lo <= 0.0 else _STD_NORMAL.cdf((math.log(lo) - mu) / sigma)
        pb = 1.0 if math.isinf(hi) else _STD_NORMAL.cdf((math.log(hi) - mu) / sigma)
        if pb - pa <= 1e-15:
            return None
        p = min(max(pa + u * (pb - pa), 1e-300), 1.0 - 1e-16)
        x = math.exp(mu + sigma * _STD_NORMAL.inv_cdf(p))
        return min(max(x, lo), hi)

    def _empirical_in(self, u: float, lo: float, hi: float) -> float | None:
        """One of the samples in ``[lo, hi]``, each equally likely."""
        i = bisect.bisect_left(self.data, lo)
        j = bisect.bisect_right(self.data, hi)
        if i >= j:
            return None
        return self.data[i + min(int(u * (j - i)), j - i - 1)]


_TRUNCATED: dict[str, Callable[[Distribution, float, float, float], float | None]] = {
    "uniform": Distribution._uniform_in,
    "exp": Distribution._exp_in,
    "lognormal": Distribution._lognormal_in,
    "empirical": Distribution._empirical_in,
}
"""Sampling of each kind of distribution, truncated to an interval, from a uniform
draw."""


_CALL = re.compile(r"\s*([a-z]+)\s*\((.*)\)\s*", re.DOTALL)


def _numbers(text: str, count: int, what: str) -> tuple[float, ...]:
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    if len(parts) != count:
        raise DistributionError(f"{what} takes {count} number{'s' if count > 1 else ''},"
                                f" got {len(parts)}")
    out: list[float] = []
    for p in parts:
        try:
            v = parse_float(p)
        except ValueError:
            raise DistributionError(f"{what}: {p!r} is not a number") from None
        if not math.isfinite(v):
            raise DistributionError(f"{what}: {p!r} is not a finite number")
        out.append(v)
    return tuple(out)


def parse_distribution(text: str) -> Distribution:
    """``uniform(a,b)``, ``exp(rate)``, ``lognormal(mu,sigma)`` or ``empirical(FILE)``;
    raises DistributionError with a message for the user."""
    m = _CALL.fullmatch(text)
    if m is None:
        raise DistributionError(
            f"{text!r} is not a distribution (write uniform(a,b), exp(rate),"
            " lognormal(mu,sigma) or empirical(FILE.csv))")
    kind, inner = m.group(1), m.group(2)
    if kind == "mixture":
        return _mixture(inner)
    if kind == "uniform":
        a, b = _numbers(inner, 2, "uniform(a,b)")
        if not 0 <= a <= b:
            raise DistributionError(f"uniform({a:g},{b:g}): need 0 <= a <= b")
        return Distribution("uniform", (a, b))
    if kind == "exp":
        (rate,) = _numbers(inner, 1, "exp(rate)")
        if rate <= 0:
            raise DistributionError(f"exp({rate:g}): the rate must be above 0")
        return Distribution("exp", (rate,))
    if kind == "lognormal":
        mu, sigma = _numbers(inner, 2, "lognormal(mu,sigma)")
        if sigma <= 0:
            raise DistributionError(f"lognormal({mu:g},{sigma:g}): sigma must be above 0")
        return Distribution("lognormal", (mu, sigma))
    if kind == "empirical":
        return Distribution("empirical", (), read_samples(inner.strip()), inner.strip())
    raise DistributionError(f"unknown distribution {kind!r} (known: uniform, exp, lognormal,"
                            " empirical, mixture)")


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += (ch == "(") - (ch == ")")
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _mixture(inner: str) -> Distribution:
    weights: list[float] = []
    parts: list[Distribution] = []
    for term in _top_level(inner):
        w, star, dist = term.partition("*")
        if not star:
            raise DistributionError(f"mixture: write each component as WEIGHT*DIST, got"
                                    f" {term.strip()!r}")
        try:
            weight = parse_float(w)
        except ValueError:
            raise DistributionError(f"mixture: {w.strip()!r} is not a weight") from None
        if not (math.isfinite(weight) and weight > 0):
            raise DistributionError(f"mixture: the weight {w.strip()} must be above 0")
        d = parse_distribution(dist)
        if d.kind == "mixture":
            raise DistributionError("mixture: components may not be mixtures")
        weights.append(weight)
        parts.append(d)
    total = sum(weights)
    return Distribution("mixture", tuple(w / total for w in weights), parts=tuple(parts))


MAX_SAMPLES = 10_000_000
"""Samples in one empirical file."""
MAX_SAMPLE_BYTES = 256 * 2**20
"""Bytes of one empirical file (ten million samples of twenty digits fit)."""


def _read_text(path: str) -> str:
    """The text of a regular file of at most ``MAX_SAMPLE_BYTES`` (a leading UTF-8 BOM
    dropped); a device, a pipe or a folder is refused before anything is read."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer would wait for ever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise DistributionError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DistributionError(f"{path}: not a regular file")
        if st.st_size > MAX_SAMPLE_BYTES:
            raise DistributionError(f"{path}: larger than {MAX_SAMPLE_BYTES:,} bytes")
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            data = f.read(MAX_SAMPLE_BYTES + 1)
    except OSError as exc:
        raise DistributionError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_SAMPLE_BYTES:  # it grew while being read
        raise DistributionError(f"{path}: larger than {MAX_SAMPLE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DistributionError(f"{path}:{line}: not a UTF-8 text file") from None
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        col = nul - text.rfind("\n", 0, nul)
        raise DistributionError(f"{path}:{line}:{col}: a NUL character")
    return text


def read_samples(path: str) -> tuple[float, ...]:
    """The numbers in the first column of a CSV file (a non-numeric first row is a
    header), sorted; raises DistributionError naming ``file:line``."""
    out: list[float] = []
    reader = csv.reader(io.StringIO(_read_text(path), newline=""))
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            limit = csv.field_size_limit()
            why = (f"a field of more than {limit:,} characters" if "field limit" in str(exc)
                   else f"not a CSV file ({exc})")
            raise DistributionError(f"{path}:{line}: {why}") from None
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        try:
            v = parse_float(row[0])
        except ValueError:
            if line == 1:
                continue  # a header
            raise DistributionError(
                f"{path}:{line}: {row[0].strip()[:40]!r} is not a number") from None
        if not math.isfinite(v) or v < 0:
            raise DistributionError(
                f"{path}:{line}: a latency must be a finite number >= 0, got {v:g}")
        out.append(v)
        if len(out) > MAX_SAMPLES:
            raise DistributionError(f"{path}: more than {MAX_SAMPLES} samples")
    if not out:
        raise DistributionError(f"{path}: no samples")
    return tuple(sorted(out))

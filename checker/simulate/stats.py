"""The estimators of statistical model checking: exact binomial confidence intervals
(Clopper–Pearson), Wald's sequential probability ratio test, and the number of runs
that the Chernoff–Hoeffding bound asks for.

Pure Python and deterministic: the incomplete beta function by its continued fraction,
quantiles by bisection.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified
    Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` (a, b > 0)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
          + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``q``-quantile of Beta(a, b), by bisection (to within 1e-13)."""
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-13:
        mid = (lo + hi) / 2.0
        if beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@functools.lru_cache(maxsize=4096)
def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The exact (Clopper–Pearson) two-sided interval for a binomial proportion after
    ``k`` successes in ``n`` trials: it covers the true proportion with probability at
    least ``confidence``, whatever that proportion is."""
    if n <= 0:
        return 0.0, 1.0
    alpha = 1.0 - confidence
    lo = 0.0 if k == 0 else beta_quantile(alpha / 2.0, k, n - k + 1)
    hi = 1.0 if k == n else beta_quantile(1.0 - alpha / 2.0, k + 1, n - k)
    return lo, hi


def chernoff_runs(epsilon: float, delta: float) -> int:
    """Runs after which the observed frequency is within ``epsilon`` of the probability
    with probability at least ``1 - delta`` (Chernoff–Hoeffding:
    ``n >= ln(2/delta) / (2 epsilon^2)``)."""
    return math.ceil(math.log(2.0 / delta) / (2.0 * epsilon * epsilon))


@dataclass
class Sprt:
    """Wald's sequential test of ``H0: p >= p0 + indifference`` against
    ``H1: p <= p0 - indifference`` with error probabilities ``alpha`` (rejecting H0
    when it holds) and ``beta`` (accepting H0 when H1 holds).

    Feed it one run at a time with :meth:`add`; :attr:`decision` becomes
    ``"accept"`` (P >= p0) or ``"reject"`` (P < p0) once the log-likelihood ratio
    leaves the band, and stays ``None`` until then."""

    p0: float
    indifference: float
    alpha: float
    beta: float
    llr: float = 0.0
    runs: int = 0
    successes: int = 0
    decision: str | None = None

    def __post_init__(self) -> None:
        self.p_high = min(self.p0 + self.indifference, 1.0)
        self.p_low = max(self.p0 - self.indifference, 0.0)
        if not 0.0 < self.p_low < self.p_high < 1.0:
            raise ValueError(f"the indifference region [{self.p_low:g}, {self.p_high:g}]"
                             " around p0 must lie strictly inside (0, 1)")
        self.upper = math.log((1.0 - self.beta) / self.alpha)
        self.lower = math.log(self.beta / (1.0 - self.alpha))

    def add(self, success: bool) -> str | None:
        """Account for one run; returns the decision once there is one."""
        if self.decision is not None:
            return self.decision
        self.runs += 1
        if success:
            self.successes += 1
            self.llr += math.log(self.p_low / self.p_high)
        else:
            self.llr += math.log((1.0 - self.p_low) / (1.0 - self.p_high))
        if self.llr >= self.upper:
            self.decision = "reject"
        elif self.llr <= self.lower:
            self.decision = "accept"
        return self.decision

"""Random simulation and statistical model checking (``kvrace simulate``).

* :mod:`checker.simulate.engine` — the stochastic semantics: one random run;
* :mod:`checker.simulate.distributions` — user delay distributions;
* :mod:`checker.simulate.runner` — many runs, in parallel, with results independent of
  the number of processes; estimates and traces of violating runs;
* :mod:`checker.simulate.stats` — Clopper–Pearson, SPRT, Chernoff–Hoeffding;
* :mod:`checker.simulate.plot` — the sweep plot (matplotlib).

Depends on the model (and the explorer's trace records), never on lark or z3.
"""

from checker.simulate.distributions import Distribution, DistributionError, parse_distribution
from checker.simulate.engine import RunResult, SimConfig, Simulator
from checker.simulate.runner import Runner, SimResult, run_trace, simulate, trace_steps
from checker.simulate.stats import Sprt, chernoff_runs, clopper_pearson

__all__ = [
    "Distribution",
    "DistributionError",
    "RunResult",
    "Runner",
    "SimConfig",
    "SimResult",
    "Simulator",
    "Sprt",
    "chernoff_runs",
    "clopper_pearson",
    "parse_distribution",
    "run_trace",
    "simulate",
    "trace_steps",
]

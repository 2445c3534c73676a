"""Many runs, in order, in one process or several; the estimates drawn from them.

Run ``i`` of a simulation with seed ``S`` draws its random numbers from a generator
seeded with ``(S, i)`` alone, and results are consumed in run order, so every number
reported — estimates, the runs saved as traces, where a sequential test stops — is
the same whatever the number of processes.
"""

from __future__ import annotations

import itertools
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from fractions import Fraction
from multiprocessing import get_context

from checker.engines.search import VIOLATED
from checker.limits import Budget, LimitHit
from checker.model import ir
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.semantics.traces import TraceStep
from checker.simulate.engine import ENDS, VIOLATION, RunResult, SimConfig, Simulator
from checker.simulate.stats import Sprt, clopper_pearson

BLOCK = 256
"""Runs per unit of work handed to a process."""


def run_rng(seed: int, index: int) -> random.Random:
    """The random generator of run ``index`` (string seeding hashes with SHA-512: the
    same numbers on every platform and Python version)."""
    return random.Random(f"kvrace-simulate:{seed}:{index}")


def run_block(sim: Simulator, seed: int, start: int, stop: int) -> list[RunResult]:
    """Runs ``start`` to ``stop - 1``."""
    return [sim.run(i, run_rng(seed, i)) for i in range(start, stop)]


_WORKER: list[Simulator] = []


def _init_worker(spec: ir.Spec, values: dict[str, Fraction], config: SimConfig) -> None:
    # Ctrl-C reaches the whole process group: the parent reports it and stops the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER[:] = [Simulator(SpecModel(spec, values), config)]


def _work(seed: int, start: int, stop: int) -> tuple[list[RunResult], int]:
    sim = _WORKER[0]
    before = sim.fallbacks
    out = run_block(sim, seed, start, stop)
    return out, sim.fallbacks - before


class Runner:
    """Produces the runs of one model, in order, with ``jobs`` processes."""

    def __init__(self, model: SpecModel, config: SimConfig, jobs: int = 1,
                 budget: Budget | None = None) -> None:
        self.model = model
        self.config = config
        self.jobs = jobs
        self.budget = budget
        """The time limit a worker's block is waited for by (the caller checks the rest)."""
        self.sim = Simulator(model, config, budget=budget)
        self.fallbacks = 0
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(abort=exc_type is not None)

    def close(self, abort: bool = False) -> None:
        """Stop the worker processes, if any; ``abort``: at once, without waiting for
        the blocks they are running (a limit or an interrupt ended the simulation)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if abort:
            procs = list(getattr(pool, "_processes", {}).values())
            for proc in procs:
                proc.terminate()
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            pool.shutdown(wait=True, cancel_futures=True)

    def _wait(self, future: Future[tuple[list[RunResult], int]]) -> tuple[list[RunResult], int]:
        """A worker's block, waited for until the time limit at most."""
        budget = self.budget
        if budget is None or budget.deadline is None:
            return future.result()
        try:
            return future.result(timeout=max(budget.deadline - time.monotonic(), 0.0))
        except FutureTimeout:
            raise budget.time_limit() from None

    def runs(self, seed: int, count: int) -> Iterator[RunResult]:
        """Runs ``0`` to ``count - 1`` of ``seed``, in order (the caller may stop early)."""
        # Lazily: 10**11 runs are 4 * 10**8 blocks, too many to list.
        blocks = ((a, min(a + BLOCK, count)) for a in range(0, count, BLOCK))
        if self.jobs <= 1 or count <= BLOCK:
            for a, b in blocks:
                before = self.sim.fallbacks
                yield from run_block(self.sim, seed, a, b)
                self.fallbacks += self.sim.fallbacks - before
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs, mp_context=get_context("spawn"),
                initializer=_init_worker,
                initargs=(self.model.spec, dict(self.model.values), self.config))
        pending: list[Future[tuple[list[RunResult], int]]] = []
        todo = blocks
        for a, b in itertools.islice(todo, 2 * self.jobs):
            pending.append(self._pool.submit(_work, seed, a, b))
        try:
            while pending:
                got, fb = self._wait(pending.pop(0))
                self.fallbacks += fb
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(self._pool.submit(_work, seed, *nxt))
                yield from got
        finally:
            for f in pending:
                f.cancel()


@dataclass(frozen=True)
class PropertyEstimate:
    """Runs whose first violation is of ``prop`` (named without its index)."""

    prop: str
    runs: int
    p: float
    lo: float
    hi: float
    first_run: int
    message: str


@dataclass
class SimResult:
    """The outcome of a simulation: counts, Clopper–Pearson intervals, examples."""

    model: str
    params: dict[str, Fraction]
    config: SimConfig
    seed: int
    confidence: float
    runs: int = 0
    violations: int = 0
    lo: float = 0.0
    hi: float = 1.0
    by_property: list[PropertyEstimate] = field(default_factory=list)
    ends: dict[str, int] = field(default_factory=dict)
    examples: list[RunResult] = field(default_factory=list)
    sprt: Sprt | None = None
    fallbacks: int = 0
    steps: int = 0
    seconds: float = 0.0
    planned: int = 0
    """The runs asked for (``runs`` is fewer when the SPRT decided or a limit hit)."""
    limit: str | None = None
    """The limit (time, memory) that ended the simulation early, in words; its
    estimates cover the runs done."""

    @property
    def p(self) -> float:
        """The observed frequency of violating runs."""
        return self.violations / self.runs if self.runs else 0.0

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={tr.fmt_time(v)}" for k, v in self.params.items())
        conf = f"{self.confidence * 100:.4g}%"
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        if self.violations:
            what = (f"violation sampled in {self.violations} of {runs}, P(violation) ="
                    f" {self.p:.4g} in [{self.lo:.4g}, {self.hi:.4g}] ({conf})")
        else:
            what = (f"no violation sampled in {runs}, P(violation) <= {self.hi:.4g}"
                    f" ({conf})")
        return f"<SimResult {self.model} ({params}), seed {self.seed}: {what}>"


Progress = Callable[[int, int, int], None]
"""Called with (runs done, runs planned, violating runs) after every block."""


def simulate(runner: Runner, runs: int, seed: int, confidence: float = 0.95,
             keep: int = 5, sprt: Sprt | None = None,
             progress: Progress | None = None) -> SimResult:
    """Draw ``runs`` runs (fewer if ``sprt`` decides earlier, or the runner's budget
    ends the simulation: then :attr:`SimResult.limit` says which limit) and estimate,
    per property and overall, the probability that a run violates it."""
    start = time.monotonic()
    model = runner.model
    res = SimResult(model.name, dict(model.values), runner.config, seed, confidence,
                    planned=runs)
    counts: Counter[str] = Counter()
    firsts: dict[str, RunResult] = {}
    ends: Counter[str] = Counter()
    fallbacks0 = runner.fallbacks
    try:
        _draw(runner, runs, seed, keep, sprt, progress, res, counts, firsts, ends)
    except LimitHit as hit:
        res.limit = hit.what
        runner.close(abort=True)
    res.fallbacks = runner.fallbacks - fallbacks0
    res.lo, res.hi = clopper_pearson(res.violations, res.runs, confidence)
    for name in sorted(counts, key=lambda n: (-counts[n], n)):
        k = counts[name]
        lo, hi = clopper_pearson(k, res.runs, confidence)
        first = firsts[name]
        res.by_property.append(PropertyEstimate(name, k, k / res.runs, lo, hi, first.index,
                                                first.message or ""))
    res.ends = {e: ends[e] for e in ENDS}
    res.sprt = sprt
    res.seconds = time.monotonic() - start
    return res


def _draw(runner: Runner, runs: int, seed: int, keep: int, sprt: Sprt | None,
          progress: Progress | None, res: SimResult, counts: Counter[str],
          firsts: dict[str, RunResult], ends: Counter[str]) -> None:
    """The runs of :func:`simulate`, counted into ``res`` and the counters as they come
    (so that a limit leaves the counts of the runs done)."""
    budget = runner.budget
    for r in runner.runs(seed, runs):
        if budget is not None:
            budget.check_time()
        res.runs += 1
        res.steps += r.steps
        ends[r.end] += 1
        bad = r.end == VIOLATION
        if bad:
            assert r.prop is not None
            res.violations += 1
            name = r.prop.split("[")[0]
            counts[name] += 1
            firsts.setdefault(name, r)
            if len(res.examples) < keep:
                res.examples.append(r)
        if progress is not None and res.runs % BLOCK == 0:
            progress(res.runs, runs, res.violations)
        if sprt is not None and sprt.add(bad) is not None:
            break


def _exact_time(t: float) -> Fraction:
    """A sampled time as an exact decimal (microseconds), for traces."""
    return Fraction(round(t * 1_000_000), 1_000_000)


def trace_steps(model: SpecModel, run: RunResult) -> list[TraceStep]:
    """The discrete run of a violating ``run``, for :func:`checker.semantics.traces.replay_zone`."""
    assert run.path is not None
    out: list[TraceStep] = []
    for e, s, _ in run.path:
        if e is None:
            out.append(TraceStep(None, "initial", None, s))
        else:
            out.append(TraceStep(e.event, model.event_names[e.event], e, s))
    return out


def run_trace(model: SpecModel, run: RunResult) -> tr.Trace:
    """A violating run as a :class:`~checker.model.trace.Trace` with its sampled times
    (rounded to microseconds): what ``kvrace draw`` and the diagrams read."""
    assert run.path is not None
    states = [s for _, s, _ in run.path]
    events: list[tuple[ir.Event, tuple[int, ...]] | None] = [None]
    receives: list[tuple[str, tuple[int, ...]] | None] = [None]
    failures: list[str | None] = [None]
    labels = ["initial"]
    for (_, prev, _), (e, _, _) in itertools.pairwise(run.path):
        assert e is not None
        events.append(model.instance(e.event))
        receives.append(model.receive_of(e.event, prev))
        failures.append(e.failure)
        labels.append(model.event_names[e.event])
    times = [_exact_time(t) for _, _, t in run.path]
    return tr.build(model.spec, model.values, VIOLATED, run.prop, run.message, labels,
                    states, events, receives, failures, times)

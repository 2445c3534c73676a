"""Logs of simulated runs: what a perfectly instrumented system would print.

Every event of a run of :class:`~checker.simulate.engine.Simulator` becomes one
JSON-lines log entry (its time rounded to the microsecond, as traces are); the
tests and the benchmark feed them to the monitor, which must find them
conforming."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction

from checker.model.compiled import SpecModel
from checker.model.trace import fmt_time
from checker.simulate.engine import RunResult, SimConfig, Simulator
from checker.simulate.runner import run_rng


def micro(t: float) -> Fraction:
    """A simulated time as an exact number of microseconds."""
    return Fraction(round(t * 1_000_000), 1_000_000)


def log_line(model: SpecModel, event: int, t: Fraction) -> str:
    """The JSON-lines entry of event instance ``event`` at time ``t``."""
    ev, idx = model.instance(event)
    args = {name: ft.show(v) for (name, ft), v in zip(ev.params, idx, strict=True)}
    return ('{"t": ' + fmt_time(t) + ', "event": ' + json.dumps(ev.label)
            + ', "args": ' + json.dumps(args) + "}")


def run_lines(model: SpecModel, run: RunResult, offset: Fraction = Fraction(0)
              ) -> list[tuple[int, Fraction]]:
    """The events of a run with a path, each as (event instance, time + offset)."""
    assert run.path is not None
    return [(e.event, micro(t) + offset) for e, _, t in run.path[1:] if e is not None]


def simulated_runs(model: SpecModel, seed: int, count: int, config: SimConfig | None = None
                   ) -> Iterator[RunResult]:
    """Runs ``0 .. count - 1`` of seed ``seed``, every one with its path."""
    sim = Simulator(model, config or SimConfig())
    for i in range(count):
        yield sim.run(i, run_rng(seed, i), keep_path=True, every_path=True)


def simulated_log(model: SpecModel, seed: int, lines: int, gap: Fraction = Fraction(1),
                  config: SimConfig | None = None) -> Iterator[str]:
    """A log of at least ``lines`` event lines: runs one after the other, each after a
    ``{"run": i, "t": T}`` line starting it ``gap`` seconds after the previous one
    ended (the first run starts at 0 with no such line)."""
    written = 0
    start = Fraction(0)
    sim = Simulator(model, config or SimConfig())
    i = 0
    while written < lines:
        run = sim.run(i, run_rng(seed, i), keep_path=True, every_path=True)
        if i:
            yield '{"run": ' + str(i) + ', "t": ' + fmt_time(start) + "}"
        last = start
        for event, t in run_lines(model, run, start):
            yield log_line(model, event, t)
            written += 1
            last = t
        start = last + gap
        i += 1

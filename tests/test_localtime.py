"""``check --local-time``: local-time zone graphs (checker/semantics/localtime.py).

Differential: on random loosely coupled networks (tests/localgen.py) the local-time
search and the global one agree on every verdict, every query and, when the properties
hold, on the set of reachable discrete states.  The classic process models give their
verdicts with pinned local-time zone counts.  Two models guard the synchronisation
rules of checker/model/components.py: each holds, and would be reported violated (a
state reached only out of time order) if the rule were dropped — checked here by
dropping it.  And what local time cannot check soundly is refused (exit 2).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from localgen import local_model

from checker.engines import CheckResult, Limits, Options, explore
from checker.errors import UsageError
from checker.language import load, load_text
from checker.model.compiled import SpecModel
from checker.model.interface import Components
from checker.results import Verdict

LOCAL = Options(local_time=True, deadlock=False, symmetry=False)
GLOBAL = Options(deadlock=False, symmetry=False)

SHARED_VAR = """model shared_var
var g : 0..1 = 0
process A {
  clock x
  location a0, a1
  event set from a0 to a1 when x >= 5 do g := 1
}
process B {
  clock y
  location b0, b1
  event look from b0 to b1 when g == 1 and y <= 2
}
invariant never_b1: not (B.loc == b1)
"""
"""B can read g = 1 only at its time 0..2, A writes it at its time 5 or later: unless
both synchronise with g, local time lets B read the value before it is written."""

BROADCAST = """model broadcast_receivers
broadcast chan go
process S {
  clock x
  location s0, s1
  event fire from s0 to s1 when x >= 5 send go
}
process R {
  clock y
  location r0, r1, r2
  event leave from r0 to r1 when y == 3
  event hear from r1 to r2 receive go
}
invariant always_heard: not (S.loc == s1 and R.loc == r1)
"""
"""R can enter r1 at time 3 only, S broadcasts at time 5 or later: R is then in r1 and
hears.  Were only the instances that receive synchronised, S could broadcast at its time
5 while R, at its time below 3, is in r0 and does not receive; R then enters r1 and
never hears."""


def _run(model: SpecModel, options: Options, max_states: int = 50_000) -> CheckResult:
    return explore(model, Limits(max_states=max_states), options)


QUICK_SEEDS = 30
"""Seeds below this run in the quick subset, one test each; the others up to 90 in one
slow test."""

SLOW_SEEDS = {48}
"""Seeds whose models take seconds (local time stores 24,694 zones for seed 48, where
global time stores 8,771: every process writes the shared variable)."""


@pytest.mark.parametrize("seed", [s for s in range(QUICK_SEEDS) if s not in SLOW_SEEDS])
def test_random_networks_agree_with_global_time(seed: int) -> None:
    spec = load_text(local_model(seed))
    lo = _run(SpecModel(spec), LOCAL)
    gl = _run(SpecModel(spec), GLOBAL)
    assert lo.verdict == gl.verdict, (seed, lo.prop, gl.prop)
    assert [(q.name, q.status) for q in lo.queries] == [(q.name, q.status) for q in gl.queries]
    if gl.verdict == Verdict.HOLDS:
        assert set(lo.reached) == set(gl.reached)
    if gl.verdict == Verdict.VIOLATED:
        # The counterexample is the global-time run's: the same trace.
        assert (lo.prop, lo.trace) == (gl.prop, gl.trace)


@pytest.mark.slow
def test_more_random_networks_agree_with_global_time() -> None:
    for seed in [*SLOW_SEEDS, *range(QUICK_SEEDS, 90)]:
        test_random_networks_agree_with_global_time(seed)


def test_random_networks_have_varied_verdicts() -> None:
    verdicts = set()
    for seed in range(30):
        spec = load_text(local_model(seed))
        res = _run(SpecModel(spec), LOCAL)
        verdicts.add((res.verdict, tuple(q.status for q in res.queries)))
    assert len(verdicts) >= 3


@pytest.mark.parametrize(("name", "zones", "global_zones", "states"), [
    ("csma_cd.kvr", 53, 26, 23),
    ("fischer_processes.kvr", 127, 65, 65),
])
def test_classic_models(name: str, zones: int, global_zones: int, states: int) -> None:
    spec = load(str(ROOT / "spec" / "classic" / name))
    lo = _run(SpecModel(spec), LOCAL)
    gl = _run(SpecModel(spec), GLOBAL)
    assert lo.verdict == gl.verdict == Verdict.HOLDS
    assert set(lo.reached) == set(gl.reached)
    assert (lo.stats.zones, len(lo.reached)) == (zones, states)
    assert gl.stats.zones == global_zones


def _workers(n: int) -> str:
    """``n`` workers that share nothing: each cycles on its own clock."""
    ids = ", ".join(f"W{i}" for i in range(n))
    return f"""model independent_workers
type Id = {{{ids}}}
process Worker(self: Id) {{
  clock x
  location idle: x <= 5
  location busy: x <= 3
  location done
  event start from idle to busy when x >= 2 do reset x
  event finish from busy to idle when x >= 1 do reset x
  event stop from busy to done when x >= 2
}}
reachable all_done: forall i: Id . Worker.loc[i] == done
"""


@pytest.mark.parametrize(("n", "zones", "global_zones"), [(3, 27, 85), (4, 81, 707)])
def test_independent_processes_need_one_zone_per_state(n: int, zones: int,
                                                       global_zones: int) -> None:
    """Where local time pays: processes that share nothing.  Global time keeps the
    order of every pair of clocks (85 zones for 3 workers, 707 for 4); local time one
    zone per discrete state (3^n)."""
    spec = load_text(_workers(n))
    lo = _run(SpecModel(spec), LOCAL)
    gl = _run(SpecModel(spec), GLOBAL)
    assert lo.verdict == gl.verdict == Verdict.HOLDS
    assert [q.status for q in lo.queries] == [q.status for q in gl.queries]
    assert set(lo.reached) == set(gl.reached)
    assert (lo.stats.zones, len(lo.reached), gl.stats.zones) == (zones, 3 ** n, global_zones)


TCK = os.environ.get("TCK_REACH") or shutil.which("tck-reach")


def _workers_tck(n: int) -> str:
    """:func:`_workers` written for TChecker by hand (no verdict process, nothing
    shared)."""
    lines = ["system:workers", "event:start", "event:finish", "event:stop"]
    for i in range(n):
        lines += [f"process:W{i}", f"clock:1:x{i}",
                  f"location:W{i}:idle{{initial: : invariant: x{i}<=5}}",
                  f"location:W{i}:busy{{invariant: x{i}<=3}}", f"location:W{i}:done",
                  f"edge:W{i}:idle:busy:start{{provided: x{i}>=2 : do: x{i}=0}}",
                  f"edge:W{i}:busy:idle:finish{{provided: x{i}>=1 : do: x{i}=0}}",
                  f"edge:W{i}:busy:done:stop{{provided: x{i}>=2}}"]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(TCK is None, reason="tck-reach is not installed (see README)")
@pytest.mark.parametrize("n", [3, 4])
def test_independent_processes_against_tchecker_concur19(tmp_path: Path, n: int) -> None:
    """TChecker's local-time algorithm (``-a concur19``) and its global one
    (``-a covreach``) store as many zones as kvrace's local-time and at least as many as its
    global explorer."""
    assert TCK is not None
    path = tmp_path / "workers.tck"
    path.write_text(_workers_tck(n), encoding="utf-8")
    stored = {}
    for algo in ("concur19", "covreach"):
        out = subprocess.run([TCK, "-a", algo, str(path)], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        stored[algo] = int(got["STORED_STATES"])
    spec = load_text(_workers(n))
    assert _run(SpecModel(spec), LOCAL).stats.zones == stored["concur19"]
    assert _run(SpecModel(spec), GLOBAL).stats.zones <= stored["covreach"]


def _dropped(model: SpecModel, event: str, component: str) -> Components:
    """The model's components with ``component`` left out of ``event``'s synchronisation."""
    comps = model.components()
    e = model.event_names.index(event)
    c = comps.names.index(component)
    events = list(comps.events)
    events[e] = tuple(k for k in events[e] if k != c)
    return dataclasses.replace(comps, events=tuple(events))


@pytest.mark.parametrize(("text", "event", "component"), [
    (SHARED_VAR, "B.look()", "var g"),
    (BROADCAST, "S.fire()", "R"),
])
def test_synchronisation_rules_matter(text: str, event: str, component: str) -> None:
    spec = load_text(text)
    model = SpecModel(spec)
    assert component in [model.components().names[k] for k in
                         model.components().events[model.event_names.index(event)]]
    assert _run(model, LOCAL).verdict == _run(SpecModel(spec), GLOBAL).verdict == Verdict.HOLDS
    # Without the rule, local time reaches a state global time does not: the engine's
    # own cross-check (the global-time run finds no violation) catches it.
    crippled = SpecModel(spec)
    broken = _dropped(crippled, event, component)
    crippled.components = lambda: broken  # type: ignore[method-assign]
    with pytest.raises(AssertionError, match="global time does not"):
        _run(crippled, LOCAL)


def test_violation_trace_is_a_global_run() -> None:
    text = SHARED_VAR.replace("y <= 2", "y <= 9")
    lo = _run(SpecModel(load_text(text)), LOCAL)
    assert lo.verdict == Verdict.VIOLATED and lo.prop == "never_b1"
    assert [s.label for s in lo.trace][1:] == ["A.set()", "B.look()"]


@pytest.mark.parametrize(("options", "text", "message"), [
    (Options(local_time=True, symmetry=False), SHARED_VAR, "does not preserve deadlocks"),
    (LOCAL, SHARED_VAR.replace("event look", "urgent event look").replace(" and y <= 2", ""),
     "urgent"),
    (LOCAL, SHARED_VAR + "property p: A.loc == a1 leadsto B.loc == b1 within 3\n",
     "bounded responses"),
    (LOCAL, SHARED_VAR + "reachable late: A.loc == a1 and A.x >= 7\n", "compares clocks"),
    (dataclasses.replace(LOCAL, record_graph=True), SHARED_VAR, "state graph"),
])
def test_refusals(options: Options, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        explore(SpecModel(load_text(text)), Limits(), options)


def test_model_without_components_is_refused() -> None:
    class Plain:
        def __init__(self, model: SpecModel) -> None:
            self.m = model

        def __getattr__(self, name: str) -> object:
            if name == "components":
                raise AttributeError(name)
            return getattr(self.m, name)

    with pytest.raises(UsageError, match="describes its components"):
        explore(Plain(SpecModel(load_text(SHARED_VAR))), Limits(), LOCAL)  # type: ignore[arg-type]


def test_cli(tmp_path: Path) -> None:
    spec = tmp_path / "s.kvr"
    spec.write_text(SHARED_VAR)
    code, out, _ = run_cli("check", str(spec), "--local-time", "--no-deadlock", "-q")
    assert code == 0 and "HOLDS" in out
    for extra, message in [((), "--no-deadlock"), (("--no-deadlock", "--workers", "2"),
                                                   "one process")]:
        code, out, err = run_cli("check", str(spec), "--local-time", *extra, "-q")
        assert code == 2 and message in out + err
    code, out, err = run_cli("check", str(ROOT / "spec/classic/train_gate.kvr"),
                             "--local-time", "--no-deadlock", "-q")
    assert code == 2 and "urgent" in out + err

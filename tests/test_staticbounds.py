"""Static clock bounds per process location (``check --clock-bounds static``).

Differential: on random networks of processes the static bounds give the verdicts, the
query outcomes and the reached discrete states of the timed pre-pass and of no clock
reduction at all, with no more zones than the latter.  Unit: the live clocks and (L, U)
constants per location of small automata, pinned.  Conservative rules: a clock read by
another process is shared (live everywhere, its constants over the whole model).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT
from localgen import local_model
from syncgen import sync_model

from checker.engines import CheckResult, Limits, Options, Prepass, explore
from checker.language import load, load_text
from checker.model.compiled import SpecModel
from checker.model.interface import static_clocks_of
from checker.results import Verdict
from checker.semantics.staticbounds import StaticLiveness

STATIC = Options(prepass=Prepass.STATIC, symmetry=False)
TIMED = Options(prepass=Prepass.TIMED, symmetry=False)
FULL = Options(clock_reduction=False, symmetry=False)


def _run(text: str, options: Options) -> CheckResult:
    return explore(SpecModel(load_text(text)), Limits(max_states=50_000), options)


QUICK_SEEDS = 20
"""Random models of each generator in the quick subset (one test each); the slow test
takes them up to 50."""

ORDER_EFFECT = {("local", 3)}
"""Models where breadth-first covering stores one zone more with clock reduction than
without (the timed pre-pass as well as static bounds): not a coarser abstraction, the
order in which zones cover each other."""


def _agree(text: str, case: tuple[str, int], zones: bool = True) -> None:
    """Static bounds against the timed pre-pass and against no clock reduction (with
    ``zones``, static bounds store no more zones than no reduction, as on the quick
    seeds; not a theorem: breadth-first covering with local LU bounds and dead clocks
    dropped stores more zones than Extra_M on some models, the timed pre-pass too)."""
    st, ti, fu = (_run(text, o) for o in (STATIC, TIMED, FULL))
    if not zones and fu.verdict == Verdict.INCONCLUSIVE:
        fu = ti  # without clock reduction past the states limit (local seed 48)
    assert st.verdict == ti.verdict == fu.verdict
    assert st.verdict != Verdict.INCONCLUSIVE
    assert ([(q.name, q.status) for q in st.queries] == [(q.name, q.status) for q in ti.queries]
            == [(q.name, q.status) for q in fu.queries])
    if st.verdict == Verdict.HOLDS:
        assert set(st.reached) == set(ti.reached) == set(fu.reached)
        if not zones:
            pass
        elif case in ORDER_EFFECT:
            assert st.stats.zones == ti.stats.zones == fu.stats.zones + 1
        else:
            assert st.stats.zones <= fu.stats.zones
    else:
        assert st.prop == ti.prop == fu.prop


@pytest.mark.parametrize("seed", range(QUICK_SEEDS))
def test_random_local_networks(seed: int) -> None:
    text = local_model(seed)
    assert static_clocks_of(SpecModel(load_text(text))) is not None
    _agree(text, ("local", seed))


@pytest.mark.parametrize("seed", range(QUICK_SEEDS))
def test_random_sync_networks(seed: int) -> None:
    """Urgent and committed locations, urgent channels, broadcasts, symmetric types."""
    _agree(sync_model(seed, committed=seed % 2 == 1), ("sync", seed))


@pytest.mark.slow
def test_more_random_networks() -> None:
    for seed in range(QUICK_SEEDS, 50):
        _agree(local_model(seed), ("local", seed), zones=False)
        _agree(sync_model(seed, committed=seed % 2 == 1), ("sync", seed), zones=False)


@pytest.mark.parametrize("seed", range(12))
def test_random_sync_networks_with_symmetry(seed: int) -> None:
    """With symmetry reduction on, the static bounds are symmetric (the canonical forms
    rely on it) and the outcomes those of the timed pre-pass."""
    text = sync_model(seed, committed=seed % 2 == 1)
    st = _run(text, Options(prepass=Prepass.STATIC))
    ti = _run(text, Options())
    assert (st.verdict, st.prop) == (ti.verdict, ti.prop)
    assert [q.status for q in st.queries] == [q.status for q in ti.queries]


UNIT = """model lu_unit
process P {
  clock x, y
  location a
  location b: x <= 5
  location c
  event go from a to b when y >= 3 do reset x
  event on from b to c when x > 1
  event back from c to a when y < 7 do reset y
}
"""


def _table(text: str) -> dict[int, dict[str, tuple[int, int]]]:
    """Per location of the only process, its live clocks with their (L, U)."""
    model = SpecModel(load_text(text))
    info = static_clocks_of(model)
    assert info is not None
    live = StaticLiveness(info, model.bounds, [int(b.const) for b in model.bounds], {}, 1,
                          len(model.clock_names))
    (proc,) = info.processes
    out = {}
    for v, _ in proc.locations:
        s = [0] * model.state_size
        s[proc.cell] = v
        lu = live.bounds(tuple(s))
        out[v] = {model.clock_names[c]: lu[c] for c in range(len(model.clock_names))
                  if live.mask(tuple(s)) >> c & 1}
    return out


def test_unit_bounds_per_location() -> None:
    """a reads y (>= 3) and reaches b without resetting it, where y is read (< 7) on the
    way to c; x is reset on entering b, read there (its invariant, > 1) and dead
    elsewhere; c resets y when it leaves."""
    assert _table(UNIT) == {
        0: {"P.y": (3, 7)},
        1: {"P.x": (1, 5), "P.y": (-1, 7)},
        2: {"P.y": (-1, 7)},
    }


def test_unit_target_any_and_no_source() -> None:
    """An event without ``from`` leaves every location; an assignment of the location
    under a condition may go anywhere: from c, ``home`` reaches a, whence ``jump``
    reaches b, where x is read."""
    text = """model lu_any
process P {
  clock x
  var n : 0..1 = 0
  location a, b, c
  event read from b to c when x <= 4
  event jump from a do if n == 0 { loc := b } else { loc := c }
  event home to a
}
"""
    assert _table(text) == {0: {"P.x": (-1, 4)}, 1: {"P.x": (-1, 4)}, 2: {"P.x": (-1, 4)}}


def test_unit_reset_without_source_is_shared() -> None:
    """A clock reset by an event that does not pin its owner's location is shared."""
    model = SpecModel(load_text(UNIT.replace("event back from c to a", "event back to a")))
    info = static_clocks_of(model)
    assert info is not None
    assert [model.clock_names[c.clock] for c in info.shared] == ["P.y"]
    assert [tuple(map(str, c.lower + c.upper)) for c in info.shared] == [("3", "7")]


FOREIGN = """model foreign
process P {
  clock x
  location a
  event tick from a to a when x <= 1
}
process Q {
  clock y
  location q0, q1
  event see from q0 to q1 when P.x >= 3 and y <= 2
}
invariant never_seen: not (Q.loc == q1)
"""
"""x and y start together and are never reset: Q sees x >= 3 only with y >= 3, so it
never does.  Were x given P's local bounds (L = -1, U = 1), Extra+_LU would forget how
x and y relate once x passes 1 and Q would seem to see; were x dead in P's location, the
zone would lack the clock Q reads."""


def test_clock_read_by_another_process_is_shared() -> None:
    model = SpecModel(load_text(FOREIGN))
    info = static_clocks_of(model)
    assert info is not None
    x = model.clock_names.index("P.x")
    assert [c.clock for c in info.shared] == [x]
    assert [(str(b) for b in c.lower) and tuple(map(str, c.lower)) for c in info.shared] == [
        ("3",)]
    assert all(x not in {lc.clock for _, cs in p.locations for lc in cs}
               for p in info.processes)
    for opts in (STATIC, Options(prepass=Prepass.STATIC)):
        res = explore(model, Limits(), opts)
        assert res.verdict == Verdict.HOLDS


def test_not_a_process_network() -> None:
    """A model without processes has no static bounds: the timed pre-pass runs."""
    text = (ROOT / "spec" / "classic" / "fischer.kvr").read_text(encoding="utf-8")
    model = SpecModel(load_text(text))
    assert static_clocks_of(model) is None
    st = explore(model, Limits(), Options(prepass=Prepass.STATIC))
    ti = explore(model, Limits(), Options())
    assert (st.verdict, st.stats.zones) == (ti.verdict, ti.stats.zones)


@pytest.mark.parametrize(("name", "sym", "zones", "timed_zones", "states"), [
    ("train_gate.kvr", False, 214, 121, 91),
    ("fischer_processes.kvr", False, 65, 65, 65),
    ("csma_cd.kvr", False, 32, 26, 23),
    ("train_gate.kvr", True, None, None, None),
    ("fischer_processes.kvr", True, None, None, None),
    ("csma_cd.kvr", True, None, None, None),
])
def test_classic_process_models(name: str, sym: bool, zones: int | None,
                                timed_zones: int | None, states: int | None) -> None:
    model = SpecModel(load(str(ROOT / "spec" / "classic" / name)))
    st = explore(model, Limits(), Options(prepass=Prepass.STATIC, symmetry=sym))
    ti = explore(model, Limits(), Options(symmetry=sym))
    assert st.verdict == ti.verdict == Verdict.HOLDS
    if zones is not None:
        assert (st.stats.zones, ti.stats.zones, len(st.reached)) == (zones, timed_zones,
                                                                     states)
        assert set(st.reached) == set(ti.reached)


def _train_gate(n: int) -> SpecModel:
    from benchmarks.bench import train_gate_tck_text

    return SpecModel(load_text(train_gate_tck_text(n)))


def test_tchecker_train_gate() -> None:
    """TChecker's train-gate with 3 trains: static bounds store TChecker's ``covreach``
    count (765), as its local LU bounds per location do, and so does the pre-pass."""
    model = _train_gate(3)
    for cb in (Prepass.STATIC, Prepass.TIMED):
        res = explore(model, Limits(), Options(prepass=cb, symmetry=False, deadlock=False))
        assert (res.verdict, res.stats.zones) == (Verdict.HOLDS, 765)


TCK = os.environ.get("TCK_REACH") or shutil.which("tck-reach")


@pytest.mark.skipif(TCK is None, reason="tck-reach is not installed (see README)")
@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 4])
def test_train_gate_against_tchecker(tmp_path: Path, n: int) -> None:
    """The same count as TChecker's ``covreach`` on its own generator's model."""
    assert TCK is not None
    script = Path(TCK).resolve().parents[2] / "examples" / "train_gate.sh"
    if not script.exists():
        pytest.skip(f"no {script}")
    path = tmp_path / "tg.tck"
    path.write_text(subprocess.run(["bash", str(script), str(n)], capture_output=True,
                                   text=True, check=True, timeout=60).stdout, encoding="utf-8")
    out = subprocess.run([TCK, "-a", "covreach", str(path)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    res = explore(_train_gate(n), Limits(), Options(prepass=Prepass.STATIC, symmetry=False,
                                                    deadlock=False))
    assert res.stats.zones == int(got["STORED_STATES"])


def _csma_cd(n: int) -> SpecModel:
    from benchmarks.bench import csma_cd_tck_text

    return SpecModel(load_text(csma_cd_tck_text(n)))


@pytest.mark.parametrize(("n", "tchecker", "timed"), [(3, 70, 56), (4, 258, 194), (5, 850, 610)])
def test_tcheckers_csmacd_stores_its_counts(n: int, tchecker: int, timed: int) -> None:
    """TChecker's CSMA/CD (``examples/csmacd.sh``) written in kvrace: with bounds per
    process location it stores exactly TChecker's ``covreach`` count (pinned here from
    ``tck-reach``), with the pre-pass's bounds per discrete state fewer."""
    model = _csma_cd(n)
    got = {cb: explore(model, Limits(), Options(prepass=cb, symmetry=False, deadlock=False))
           for cb in (Prepass.STATIC, Prepass.TIMED)}
    assert {r.verdict for r in got.values()} == {Verdict.HOLDS}
    assert set(got[Prepass.STATIC].reached) == set(got[Prepass.TIMED].reached)
    assert (got[Prepass.STATIC].stats.zones, got[Prepass.TIMED].stats.zones) == (tchecker, timed)


@pytest.mark.skipif(TCK is None, reason="tck-reach is not installed (see README)")
@pytest.mark.parametrize("n", [3, 4])
def test_csmacd_against_tchecker(tmp_path: Path, n: int) -> None:
    """The same count as TChecker's ``covreach`` on its own generator's model."""
    assert TCK is not None
    script = Path(TCK).resolve().parents[2] / "examples" / "csmacd.sh"
    if not script.exists():
        pytest.skip(f"no {script}")
    path = tmp_path / "csmacd.tck"
    path.write_text(subprocess.run(["bash", str(script), str(n)], capture_output=True,
                                   text=True, check=True, timeout=60).stdout, encoding="utf-8")
    out = subprocess.run([TCK, "-a", "covreach", str(path)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    res = explore(_csma_cd(n), Limits(), Options(prepass=Prepass.STATIC, symmetry=False,
                                                 deadlock=False))
    assert res.stats.zones == int(got["STORED_STATES"])


COND_RESET = """model cond_reset
process P {
  clock x, y
  var n : 0..1 = 0
  location a
  location b
  location c: x <= 4
  event wait from a to b do n := 1
  event go from b to c when y >= 6 do if n == 0 { reset x }
}
reachable at_c: P.loc == c
"""
"""x and y are never reset (``go``'s reset never runs), so ``go`` fires at x = y >= 6,
above c's invariant: c is unreachable.  Were the conditional reset counted as one, x
would be dead in b and enter c at 0."""


def test_conditional_reset_keeps_the_clock_live() -> None:
    model = SpecModel(load_text(COND_RESET))
    info = static_clocks_of(model)
    assert info is not None
    (proc,) = info.processes
    x = model.clock_names.index("P.x")
    assert [v for v, cs in proc.locations if x in {lc.clock for lc in cs}] == [0, 1, 2]
    for opts in (STATIC, TIMED, FULL):
        res = explore(model, Limits(), opts)
        assert [(q.name, q.status) for q in res.queries] == [("at_c", "unreachable")]

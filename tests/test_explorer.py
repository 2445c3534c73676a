"""Verdicts, traces and exact state counts of the zone explorer on the flagship specs."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT, explore_file

from checker.engines import Limits, explore
from checker.language import load, load_text
from checker.model.compiled import SpecModel

IMMEDIATE = ROOT / "spec/sglang/immediate_release.kvr"
DEFERRED = ROOT / "spec/sglang/deferred_release.kvr"

RACE = [
    "initial",
    "decode.allocate(A, s0)",
    "prefill.post(A, 0)",
    "router.abort(A)",
    "decode.release(A)",
    "decode.allocate(B, s0)",
    "decode.land(A, 0)",
]


def test_immediate_release_is_the_race() -> None:
    r = explore_file(IMMEDIATE)
    assert r.verdict == "violated"
    assert r.prop == "assert"
    assert r.message == "write of A chunk 0 lands in slot s0 owned by B"
    assert [s.label for s in r.trace] == RACE


@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("cr", [True, False])
def test_race_trace_is_the_same_with_and_without_reductions(sym: bool, cr: bool) -> None:
    r = explore_file(IMMEDIATE, symmetry=sym, clock_reduction=cr)
    assert [s.label for s in r.trace] == RACE


def test_deferred_release_verdicts() -> None:
    assert explore_file(DEFERRED).verdict == "holds"
    low = explore_file(DEFERRED, {"T_hold": Fraction(7)})
    assert low.verdict == "violated" and low.prop == "assert"
    assert low.trace[-1].label == "decode.land(A, 0)"
    assert explore_file(DEFERRED, {"T_hold": Fraction(15, 2)}).verdict == "holds"


# Exact sizes: (symmetry, clock reduction, deadlock check) -> (states, zones, transitions).
# A guard `a or b` has no edge for b where a holds without clocks (b is not read there).
# Zones are those stored at the end (a zone covered later by a larger one is retired).
# Without symmetry, with clock reduction, the flagship's 235 zones are exactly the
# states TChecker's covreach stores for the same automaton (one zone per discrete state).
DEFERRED_COUNTS = {
    (True, True, True): (120, 120, 216),
    (True, True, False): (120, 120, 216),
    (True, False, True): (120, 723, 1165),
    (True, False, False): (120, 723, 1165),
    (False, True, True): (235, 235, 430),
    (False, True, False): (235, 235, 430),
    (False, False, True): (235, 1445, 2328),
    (False, False, False): (235, 1445, 2328),
}
IMMEDIATE_COUNTS = {
    (True, True, True): (41, 41, 74),
    (False, True, True): (69, 69, 120),
    (True, False, True): (40, 49, 75),
    (False, False, True): (68, 84, 125),
}


@pytest.mark.parametrize("key", sorted(DEFERRED_COUNTS))
def test_deferred_counts(key: tuple[bool, bool, bool]) -> None:
    sym, cr, dl = key
    r = explore_file(DEFERRED, symmetry=sym, clock_reduction=cr, deadlock=dl)
    assert r.verdict == "holds"
    assert (r.stats.states, r.stats.zones, r.stats.transitions) == DEFERRED_COUNTS[key]


@pytest.mark.parametrize("key", sorted(IMMEDIATE_COUNTS))
def test_immediate_counts(key: tuple[bool, bool, bool]) -> None:
    sym, cr, dl = key
    r = explore_file(IMMEDIATE, symmetry=sym, clock_reduction=cr, deadlock=dl)
    assert r.verdict == "violated"
    assert (r.stats.states, r.stats.zones, r.stats.transitions) == IMMEDIATE_COUNTS[key]


def test_symmetry_halves_the_discrete_states() -> None:
    with_sym = explore_file(DEFERRED, symmetry=True)
    without = explore_file(DEFERRED, symmetry=False)
    # Two interchangeable requests: every state but the symmetric ones has a twin.
    assert with_sym.stats.states < without.stats.states <= 2 * with_sym.stats.states


def _scaled(path: Path, k: int) -> str:
    """The spec with every time constant (ranges and defaults) multiplied by ``k``."""

    def scale(m: re.Match[str]) -> str:
        return str(Fraction(m.group(0)) * k)

    out = []
    for line in path.read_text().splitlines():
        if line.startswith("param "):
            head, _, rest = line.partition(" in ")
            rest = re.sub(r"\d+(\.\d+)?", scale, rest.split("#")[0])
            line = f"{head} in {rest}"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("k", [10, 1000])
@pytest.mark.parametrize("path", [IMMEDIATE, DEFERRED], ids=["immediate", "deferred"])
def test_zone_graph_invariant_under_time_scaling(path: Path, k: int) -> None:
    base = explore(SpecModel(load(path)))
    scaled = explore(SpecModel(load_text(_scaled(path, k), str(path))))
    assert scaled.verdict == base.verdict
    assert (scaled.stats.states, scaled.stats.zones, scaled.stats.transitions) == (
        base.stats.states, base.stats.zones, base.stats.transitions
    )


def test_state_limit_is_inconclusive_never_holds() -> None:
    model = SpecModel(load(DEFERRED))
    r = explore(model, Limits(max_states=20))
    assert r.verdict == "inconclusive"
    assert r.limit is not None and "state limit" in r.limit
    assert r.stats.stored == 20
    assert r.stats.zones <= 20


def test_time_limit_is_inconclusive() -> None:
    model = SpecModel(load(DEFERRED))
    r = explore(model, Limits(timeout=1e-9))
    assert r.verdict == "inconclusive"


def test_dfs_finds_the_violation_too() -> None:
    r = explore_file(IMMEDIATE, search="dfs")  # type: ignore[arg-type]
    assert r.verdict == "violated" and r.prop == "assert"


def test_traces_replay_on_the_model() -> None:
    model = SpecModel(load(IMMEDIATE))
    r = explore(model)
    s = model.initial_states()[0]
    for step in r.trace[1:]:
        assert step.edge is not None
        assert step.edge in model.edges(s)
        s = step.edge.target
        assert s == step.state

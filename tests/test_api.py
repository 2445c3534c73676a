"""The Python API that protocol authors use from pytest."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT

from checker.api import Limits, check, load_spec
from checker.diagnostics import SpecError
from checker.model.compiled import ParamError

DEFERRED = ROOT / "spec/sglang/deferred_release.kvr"
IMMEDIATE = ROOT / "spec/sglang/immediate_release.kvr"


def test_assert_holds_and_violated() -> None:
    check(DEFERRED).assert_holds()
    check(DEFERRED, T_hold=7).assert_violated("assert")
    check(DEFERRED, {"T_hold": "7.5"}).assert_holds()
    check(DEFERRED, T_hold=7.5).assert_holds()
    check(DEFERRED, T_hold=Fraction(15, 2)).assert_holds()


@pytest.mark.slow
def test_assertions_fail_loudly() -> None:
    with pytest.raises(AssertionError, match="violated: assert: write of A chunk 0"):
        check(IMMEDIATE).assert_holds()
    with pytest.raises(AssertionError, match="expected a violation, got: holds"):
        check(DEFERRED).assert_violated()
    with pytest.raises(AssertionError, match="expected deadlock to be violated"):
        check(IMMEDIATE).assert_violated("deadlock")


def test_outcome_carries_trace_times_and_stats() -> None:
    o = check(IMMEDIATE)
    assert o.verdict == "violated"
    assert o.trace is not None
    assert [s.label for s in o.trace.steps][-1] == "decode.land(A, 0)"
    assert [s.time for s in o.trace.steps] == [0, 1, 2, 3, 3, 4, 5]
    assert o.trace.steps[-1].receives == 2
    assert o.stats.zones == 41
    assert o.params == {"T_prop": 2, "T_chunk": 2, "T_flight": 3}


def test_inconclusive_is_not_holds() -> None:
    o = check(DEFERRED, limits=Limits(max_states=5))
    assert o.verdict == "inconclusive"
    with pytest.raises(AssertionError, match="inconclusive: state limit"):
        o.assert_holds()


def test_bad_inputs_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ParamError, match="unknown parameter `nope`"):
        check(DEFERRED, nope=1)
    broken = tmp_path / "broken.kvr"
    broken.write_text("model m\nactor a\nevent a.e() when x do skip\n")
    with pytest.raises(SpecError) as info:
        load_spec(broken)
    assert "unknown name `x`" in info.value.render()

"""``api.region_difference``: a synthesised region compared with a region a test
expects, by equivalence within the free parameters' ranges (what ``# expect region:``
of the pytest plugin checks)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers import ROOT

from checker import api
from checker.diagnostics import SpecError
from checker.language import load_text

WINDOW = """\
model window
param T in [0, 10] = 3
param U in [0, 10] = 1
actor a
var done : bool = false
clock x
event a.go() when not done and x >= T do done := true
deadline x <= 5 while not done
"""
"""Safe exactly when T <= 5 (else the deadline stops time before `go`); U is unused."""


@pytest.fixture(scope="module")
def window() -> api.Synthesis:
    found = api.synth(load_text(WINDOW, "window.kvr"))
    assert (found.complete, found.region) == (True, "T <= 5")
    return found


@pytest.mark.parametrize("text", [
    "T <= 5", "not (T > 5)", "T < 5 or T == 5", "T > 5 => false", "T <= 5 and U >= 0",
    "T <= 5 or T < 0", "5 >= T", "2*T <= 10", "T <= 5 and (U != 3 or U == 3)",
])
def test_equivalent_regions_match(window: api.Synthesis, text: str) -> None:
    assert api.region_difference(window, text) is None


@pytest.mark.parametrize(("text", "in_found"), [
    ("T < 5", True), ("T <= 6", False), ("true", False), ("false", True),
    ("T <= 5 and U > 1", True), ("T != 5", True),
])
def test_a_different_region_gives_a_point_where_they_differ(
        window: api.Synthesis, text: str, in_found: bool) -> None:
    point = api.region_difference(window, text)
    assert point is not None and point.in_found is in_found
    assert set(point.values) == {"T", "U"}
    t = point.values["T"]
    assert Fraction(0) <= t <= Fraction(10)
    assert (t <= 5) is in_found  # inside the synthesised region exactly when T <= 5


def test_fixed_parameters_take_their_values() -> None:
    found = api.synth(ROOT / "spec" / "sglang" / "deferred_release.kvr", free=["T_hold"])
    assert found.region == "T_hold > 7"
    assert api.region_difference(found, "T_hold > T_prop + T_chunk + T_flight") is None
    point = api.region_difference(found, "T_hold > T_prop + T_flight")
    assert point is not None and point.in_found is False
    assert Fraction(5) < point.values["T_hold"] <= Fraction(7)


def test_a_region_that_does_not_parse_is_a_diagnostic(window: api.Synthesis) -> None:
    with pytest.raises(SpecError) as info:
        api.region_difference(window, "T <= V")
    assert "unknown parameter `V`" in str(info.value)
    with pytest.raises(SpecError) as info:
        api.region_difference(window, "T + 1")
    assert "error[KVR201]: a region combines comparisons" in str(info.value)

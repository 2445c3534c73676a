"""How API results show in the REPL and in Jupyter: a one-line repr, and HTML/SVG with
the verdict and the diagram."""

from __future__ import annotations

import shutil

import pytest
from helpers import ROOT

from checker import api

IMMEDIATE = str(ROOT / "spec/sglang/immediate_release.kvr")
DEFERRED = str(ROOT / "spec/sglang/deferred_release.kvr")
RACE = "write of A chunk 0 lands in slot s0 owned by B"


def test_outcome_and_trace_display() -> None:
    race = api.check(IMMEDIATE)
    assert repr(race) == ("<Outcome immediate_release (T_prop=2, T_chunk=2, T_flight=3):"
                          f" violated: assert: {RACE}; trace of 6 events>")
    assert repr(race.trace) == "<Trace immediate_release: violated assert, 6 events>"
    assert race.trace is not None
    assert "decode   land(A, 0)  &lt;- step 2" in race.trace._repr_html_()
    page = race._repr_html_()
    assert page.startswith("<div><b>immediate_release</b> (T_prop=2, T_chunk=2, T_flight=3)"
                           "</div>\n<div style=\"color:#c62828\"><b>VIOLATED</b>: assert: "
                           + RACE + "</div>\n")
    if shutil.which("dot"):
        svg = race._repr_svg_()
        assert svg is not None and svg.lstrip().startswith("<?xml") and "land(A, 0)" in svg
        assert "<svg" in page and "<?xml" not in page
    else:
        assert race._repr_svg_() is None and "<pre>" in page
    viewer = race.viewer()
    assert repr(viewer).startswith("<kvrace viewer page, ")
    assert viewer._repr_html_().startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;')  # type: ignore[attr-defined]


def test_holds_shows_no_diagram() -> None:
    ok = api.check(DEFERRED)
    assert repr(ok) == ("<Outcome deferred_release (T_prop=2, T_chunk=2, T_flight=3, T_hold=8):"
                        " holds>")
    assert ok._repr_svg_() is None
    assert ok._repr_html_() == ('<div><b>deferred_release</b> (T_prop=2, T_chunk=2, T_flight=3,'
                                ' T_hold=8)</div>\n<div style="color:#2e7d32"><b>HOLDS</b></div>')
    with pytest.raises(ValueError, match="no trace to view: holds"):
        ok.viewer()


@pytest.mark.slow
def test_synth_and_prove_display() -> None:
    region = api.synth(DEFERRED, free=["T_hold"])
    assert repr(region) == ("<Synthesis deferred_release over T_hold; fixed T_prop=2, T_chunk=2,"
                            " T_flight=3: safe region: T_hold > 7>")
    assert "<code>T_hold &gt; 7</code>" in region._repr_html_()
    proof = api.prove(DEFERRED, "T_hold > T_prop + T_flight", free=["T_hold"])
    assert repr(proof) == ("<Proof deferred_release assuming T_hold > T_prop + T_flight: refuted"
                           f" at T_prop=2, T_chunk=2, T_flight=3, T_hold=7: violated: assert:"
                           f" {RACE}>")
    assert "<b>REFUTED</b>" in proof._repr_html_()
    proof = api.prove(DEFERRED, "T_hold > 7", free=["T_hold"])
    assert repr(proof) == "<Proof deferred_release assuming T_hold > 7: proved (tight)>"
    assert proof._repr_svg_() is None
    with pytest.raises(ValueError, match="unknown parameter 'T_x'"):
        api.synth(DEFERRED, free=["T_x"])


def test_a_simulation_shows_in_one_line() -> None:
    bad = api.simulate(ROOT / "spec/sglang/immediate_release.kvr", runs=50)
    assert repr(bad) == ("<SimResult immediate_release (T_prop=2, T_chunk=2, T_flight=3),"
                         " seed 0: violation sampled in 13 of 50 runs, P(violation) = 0.26 in"
                         " [0.1463, 0.4034] (95%)>")
    ok = api.simulate(DEFERRED, runs=20)
    assert repr(ok) == ("<SimResult deferred_release (T_prop=2, T_chunk=2, T_flight=3,"
                        " T_hold=8), seed 0: no violation sampled in 20 runs, P(violation)"
                        " <= 0.1684 (95%)>")

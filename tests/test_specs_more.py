"""Verdicts of the fix-variant specs.

Specs: strict_no_release_on_timeout, early_reject, paired_abort, kv_checksum,
repro_harness (spec/sglang/).  Each is pinned at its defaults (verdict,
property, message, the last event of the shortest trace) and at parameter
points on both sides of any bound; textual variants show that the verdict
comes from the mechanism the spec is about.  For paired_abort the
synthesized safe region is checked with Z3 to be exactly
``T_hold > T_route + T_chunk + T_flight`` within the ranges.  The
context-length study is tested in test_paper.py.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import z3

from checker.api import Outcome, check
from checker.explorer import Options
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt import synth as sy

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "spec" / "sglang"


def spec(name: str) -> Path:
    return SPECS / f"{name}.kvr"


@functools.cache
def run(name: str, **params: int | str) -> Outcome:
    """Check ``name`` at ``params`` (cached: several tests read the same outcome)."""
    return check(spec(name), params)


def text_of(name: str, *edits: tuple[str, str]) -> str:
    """The spec's text with edits applied (each must match exactly once)."""
    text = spec(name).read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def variant(name: str, *edits: tuple[str, str], options: Options | None = None,
            **params: int | str) -> Outcome:
    return check(load_text(text_of(name, *edits), str(spec(name))), params, options=options)


def labels(o: Outcome) -> list[str]:
    assert o.trace is not None
    return [s.label for s in o.trace.steps]


def synth(text: str, free: list[str]) -> sy.SynthResult:
    result = sy.explore_parametric(SpecModel(load_text(text, "<variant>")), free)
    assert result.complete, result.limit
    return result


# ---- strict_no_release_on_timeout -------------------------------------------------------

STRICT = "strict_no_release_on_timeout"
LOSSY_ACK = ("event decode.ack_lost(r: Req) receives prefill.ack(r)\n"
             "  when ack_msg[r]\n  do ack_msg[r] := false\n", "")
NO_PROPERTY = ("property bounded_release(r: Req): phase[r] == aborted leadsto phase[r] == freed"
               " within T_bound\n", "")


def test_strict_mode_holds_a_slot_past_the_release_bound() -> None:
    o = run(STRICT)
    assert o.verdict == "violated"
    assert o.prop == "bounded_release[A]"
    assert o.message == "no response within T_bound"
    got = labels(o)
    assert got[-1] == "decode.send_abort(A)"
    # The slot stays held because acks are lost, again and again; nothing is freed.
    assert got.count("decode.ack_lost(A)") == 2
    assert got.count("decode.send_abort(A)") == 3
    assert not any(x.startswith(("decode.ack_arrives", "decode.release")) for x in got)
    assert o.timing_note is not None and "its bound has passed" in o.timing_note


def test_strict_mode_never_leaks_and_never_deadlocks() -> None:
    # Every assert (the leak), and deadlock freedom, with the bounded release left out.
    variant(STRICT, NO_PROPERTY).assert_holds()


def test_strict_mode_is_unbounded_only_because_acks_are_lost() -> None:
    # Without loss the slot is back within 2*T_prop + T_flight = 7 (ABORT, drain, ack) ...
    assert variant(STRICT, LOSSY_ACK, T_bound=7).verdict == "holds"
    o = variant(STRICT, LOSSY_ACK, T_bound="6.99")
    assert o.verdict == "violated" and o.prop == "bounded_release[A]"
    # ... with loss, not even within the largest bound of the range.
    assert run(STRICT, T_bound=200).prop == "bounded_release[A]"


def test_strict_mode_release_is_unbounded_for_every_bound() -> None:
    lossy = synth(spec(STRICT).read_text(encoding="utf-8"), ["T_bound"])
    assert sy.safe_region(lossy) == [[]]  # "false": no T_bound in [0, 200] is safe
    assert set(lossy.properties.values()) == {"bounded_release[A]"}
    lossless = synth(text_of(STRICT, LOSSY_ACK), ["T_bound"])
    assert sy.region_text(sy.safe_region(lossless), ["T_bound"]) == "T_bound >= 7"


# ---- early_reject -----------------------------------------------------------------------

EARLY = "early_reject"
NO_DISCONNECT = ("  when phase[r] == transferring\n  do phase[r] := aborted; reset since_abort[r]",
                 "  when false\n  do phase[r] := aborted; reset since_abort[r]")


def test_early_reject_still_leaks_through_a_client_disconnect() -> None:
    o = run(EARLY)
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == "write of B chunk 0 lands in slot s0 owned by A"
    got = labels(o)
    assert got[-1] == "decode.land(B, 0)"
    assert "router.disconnect(B)" in got and "decode.release(B)" in got
    # The rejection path is not used: both requests fit and nobody is rejected.
    assert [x for x in got if x.startswith("router.arrive")] == \
        ["router.arrive(A, fits)", "router.arrive(B, fits)"]
    assert not any("reject" in x for x in got)


def test_early_reject_leaks_even_with_the_smallest_window() -> None:
    o = run(EARLY, T_prop=0, T_chunk=0, T_flight="0.001")
    assert o.verdict == "violated" and labels(o)[-1] == "decode.land(B, 0)"


def test_early_reject_closes_the_rejection_path() -> None:
    # Without client disconnects nothing leaks, and a too-long request never gets a slot.
    variant(EARLY, NO_DISCONNECT).assert_holds()


def test_without_early_reject_the_rejection_path_leaks() -> None:
    # Before early reject, a too-long request was bootstrapped and then rejected
    # by prefill mid-transfer, with the same immediate release.
    o = variant(
        EARLY, NO_DISCONNECT,
        ("event router.reject(r: Req)\n  when phase[r] == queued and size[r] == too_long\n"
         "  do phase[r] := rejected",
         "event prefill.reject(r: Req)\n  when phase[r] == transferring and size[r] == too_long\n"
         "  do phase[r] := aborted; reset since_abort[r]; told[r] := true; reset since_told[r]"),
        ("when phase[r] == queued and size[r] == fits and owner[s] == none",
         "when phase[r] == queued and owner[s] == none"),
        ("invariant rejected_never_allocated(r: Req): size[r] == too_long => slot[r] == none\n",
         ""),
    )
    assert o.verdict == "violated" and o.prop == "assert"
    assert labels(o) == ["initial", "router.arrive(A, fits)", "router.arrive(B, too_long)",
                         "decode.allocate(B, s0)", "prefill.reject(B)", "prefill.post(B, 0)",
                         "decode.release(B)", "decode.allocate(A, s0)", "decode.land(B, 0)"]


# ---- paired_abort -----------------------------------------------------------------------

PAIRED = "paired_abort"


@pytest.mark.parametrize(("params", "verdict"), [
    ({}, "holds"),                                      # T_hold=7 > 1 + 2 + 3
    ({"T_hold": 6}, "violated"),                        # = the bound: strict
    ({"T_hold": "6.01"}, "holds"),
    ({"T_route": 0, "T_hold": 5}, "violated"),
    ({"T_route": 0, "T_hold": "5.01"}, "holds"),
    ({"T_route": 2, "T_hold": 7}, "violated"),          # T_route = T_prop: the old bound
    ({"T_route": 2, "T_hold": "7.01"}, "holds"),
    ({"T_route": "0.5", "T_chunk": 0, "T_flight": 1, "T_hold": "1.5"}, "violated"),
    ({"T_route": "0.5", "T_chunk": 0, "T_flight": 1, "T_hold": "1.51"}, "holds"),
])
def test_paired_abort_straddles_its_bound(params: dict[str, int | str], verdict: str) -> None:
    o = run(PAIRED, **params)
    assert o.verdict == verdict, o.summary()
    if verdict == "violated":
        assert o.prop == "assert"
        assert o.message == "write of A chunk 0 lands in slot s0 owned by B"
        got = labels(o)
        assert got[-1] == "decode.land(A, 0)"
        # A's write is posted after the cancel (before prefill learns of it, or within
        # T_chunk after) and lands after decode gave A's slot to B.
        assert got.index("router.cancel_pair(A)") < got.index("prefill.post(A, 0)") \
            < got.index("decode.release(A)") < got.index("decode.allocate(B, s0)")


@pytest.fixture(scope="module")
def paired_synth() -> sy.SynthResult:
    free = ["T_route", "T_chunk", "T_flight", "T_hold"]
    return synth(spec(PAIRED).read_text(encoding="utf-8"), free)


def test_paired_abort_synthesized_region_is_the_smaller_bound(
        paired_synth: sy.SynthResult) -> None:
    cnf = sy.safe_region(paired_synth)
    got = sy.region_z3(cnf, paired_synth.ranges)
    ranges = sy.region_z3([], paired_synth.ranges)
    hold, route, chunk, flight = (z3.Real(n) for n in ("T_hold", "T_route", "T_chunk",
                                                       "T_flight"))
    expected = z3.And(ranges, hold > route + chunk + flight)
    s = z3.Solver()
    s.add(got != expected)
    assert s.check() == z3.unsat
    # and the range really is the declared one (a vacuous region would pass the above)
    s = z3.Solver()
    s.add(ranges, hold == 13, route == 2, chunk == 5, flight == 5)
    assert s.check() == z3.sat
    assert sy.region_text(cnf, paired_synth.free) == "T_hold > T_route + T_chunk + T_flight"


# ---- kv_checksum ------------------------------------------------------------------------

CHECKSUM = "kv_checksum"


def test_checksum_misses_a_stale_write_landing_after_verification() -> None:
    o = run(CHECKSUM)
    assert o.verdict == "violated"
    assert o.prop == "no_undetected_corruption[B]"
    got = labels(o)
    assert got[-1] == "decode.land(A, 0)"
    assert got.index("decode.release(A)") < got.index("decode.allocate(B, s0)") \
        < got.index("decode.verify(B)") < len(got) - 1
    assert o.trace is not None
    last = o.trace.steps[-1]
    assert last.changes["page[s0, 0]"] == ("B", "A")
    assert last.receives is not None and o.trace.steps[last.receives].label == "prefill.post(A, 0)"


def test_checksum_catches_a_stale_write_landing_before_verification() -> None:
    # Detection is reachable, and the run that reaches it lands A's write before B verifies.
    o = variant(CHECKSUM, ("invariant no_undetected_corruption(r: Req):",
                           "invariant never_detected: not detected\n"
                           "invariant no_undetected_corruption(r: Req):"))
    assert o.verdict == "violated" and o.prop == "never_detected"
    got = labels(o)
    assert got[-1] == "decode.verify(B)"
    assert got.index("decode.land(A, 0)") < got.index("decode.verify(B)")


def test_checksum_covers_every_write_that_lands_before_verification() -> None:
    # Forbid writes landing in the pages of a request that already passed
    # verification: then nothing goes unnoticed.
    o = variant(CHECKSUM, (
        "event decode.land(r: Req, k: Chunk) receives prefill.post(r, k)\n"
        "  when write[r, k] == flying\n",
        "event decode.land(r: Req, k: Chunk) receives prefill.post(r, k)\n"
        "  when write[r, k] == flying\n"
        "       and not (owner[slot[r]] != none and owner[slot[r]] != r\n"
        "                and phase[owner[slot[r]]] == decoding)\n"),
        options=Options(deadlock=False))
    o.assert_holds()


# ---- repro_harness ----------------------------------------------------------------------

HARNESS = "repro_harness"


def test_repro_harness_leaks_at_a_shallow_depth() -> None:
    o = run(HARNESS)
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == "write of A chunk 0 lands in slot s0 owned by B"
    assert labels(o) == ["initial", "decode.allocate(A, s0)", "prefill.post(A, 0)",
                         "client.disconnect(A)", "decode.release(A)", "decode.allocate(B, s0)",
                         "decode.land(A, 0)"]


@pytest.mark.parametrize(("params", "verdict"), [
    ({"T_hold": 7}, "violated"),                        # = T_prop + T_chunk + T_flight
    ({"T_hold": "7.01"}, "holds"),
    ({"T_hold": 8}, "holds"),
    ({"T_prop": 0, "T_chunk": 0, "T_flight": 1, "T_hold": 1}, "violated"),
    ({"T_prop": 0, "T_chunk": 0, "T_flight": 1, "T_hold": "1.01"}, "holds"),
])
def test_repro_harness_with_a_sufficient_hold(params: dict[str, int | str], verdict: str
                                              ) -> None:
    o = run(HARNESS, **params)
    assert o.verdict == verdict, o.summary()
    if verdict == "violated":
        assert o.prop == "assert" and labels(o)[-1] == "decode.land(A, 0)"

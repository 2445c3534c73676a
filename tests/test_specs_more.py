"""Verdicts of the fix-variant specs.

Specs: strict_no_release_on_timeout, early_reject, paired_abort, kv_checksum,
repro_harness (spec/sglang/).  Each is pinned at its defaults (verdict,
property, message, the last event of the shortest trace) and at parameter
points on both sides of any bound; textual variants show that the verdict
comes from the mechanism the spec is about.  For paired_abort the
synthesized safe region over T_flight and T_timeout is pinned as
``T_flight < T_timeout``.  The context-length study is tested in test_paper.py.
"""

from __future__ import annotations

import pytest
from helpers import check_sglang, check_variant, edited, labels

from checker.engines import Options
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt import synth as sy


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
    o = check_sglang(STRICT)
    assert o.verdict == "violated"
    assert o.prop == "bounded_release[A]"
    assert o.message == ("no response within T_bound: decode.ack_arrives(A), enabled after"
                         " step 4 (t=3..4), would have made the response true, but step 5"
                         " (decode.ack_lost(A)) disabled it first")
    got = labels(o)
    assert got[-1] == "decode.ack_lost(A)"
    # The slot stays held because the ack was lost; no ABORT is re-sent, nothing is freed.
    assert got.count("decode.send_abort(A)") == 1
    assert not any(x.startswith(("decode.ack_arrives", "decode.release")) for x in got)
    assert o.timing_note is not None and "its bound has passed" in o.timing_note


def test_strict_mode_never_leaks_and_never_deadlocks() -> None:
    # Every assert (the leak), and deadlock freedom, with the bounded release left out.
    check_variant(STRICT, NO_PROPERTY).assert_holds()


def test_strict_mode_is_unbounded_only_because_acks_are_lost() -> None:
    # Without loss the slot is back within 2*T_prop + T_flight = 7 (ABORT, drain, ack) ...
    assert check_variant(STRICT, LOSSY_ACK, T_bound=7).verdict == "holds"
    o = check_variant(STRICT, LOSSY_ACK, T_bound="6.99")
    assert o.verdict == "violated" and o.prop == "bounded_release[A]"
    # ... with loss, not even within the largest bound of the range.
    assert check_sglang(STRICT, T_bound=200).prop == "bounded_release[A]"


@pytest.mark.slow
def test_strict_mode_release_is_unbounded_for_every_bound() -> None:
    lossy = synth(edited(STRICT), ["T_bound"])
    assert sy.safe_region(lossy) == [[]]  # "false": no T_bound in [0, 200] is safe
    assert set(lossy.properties.values()) == {"bounded_release[A]"}
    lossless = synth(edited(STRICT, LOSSY_ACK), ["T_bound"])
    assert sy.region_text(sy.safe_region(lossless), ["T_bound"]) == "T_bound >= 7"


# ---- early_reject -----------------------------------------------------------------------

EARLY = "early_reject"
NO_EARLY_REJECT = ("var early_reject : bool = true ", "var early_reject : bool = false")


def test_early_reject_closes_the_stale_page_read() -> None:
    o = check_sglang(EARLY)
    o.assert_holds()
    assert o.stats is not None


def test_without_early_reject_a_rejected_request_decodes_over_unwritten_pages() -> None:
    o = check_variant(EARLY, NO_EARLY_REJECT)
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == "A decodes over pages of slot s0 never written for it"
    assert labels(o) == ["initial", "router.arrive(A, too_long)", "decode.allocate(A, s0)",
                         "prefill.post(A, 0)", "prefill.placeholder(A)", "decode.land(A, 0)",
                         "decode.start(A)"]


# ---- paired_abort -----------------------------------------------------------------------

PAIRED = "paired_abort"


@pytest.mark.parametrize(("params", "verdict"), [
    ({}, "violated"),                                   # 33 s call, 30 s timeout
    ({"T_timeout": 33}, "violated"),                    # = the bound: strict
    ({"T_timeout": "33.01"}, "holds"),
    ({"T_route": 0, "T_status": 0, "T_flight": 5, "T_timeout": 5}, "violated"),
    ({"T_route": 2, "T_status": 2, "T_flight": 5, "T_timeout": "5.01"}, "holds"),
])
def test_paired_abort_straddles_its_bound(params: dict[str, int | str], verdict: str) -> None:
    o = check_sglang(PAIRED, **params)
    assert o.verdict == verdict, o.summary()
    if verdict == "violated":
        assert o.message == "write of A lands in slot s0 owned by B"
        got = labels(o)
        assert got.index("prefill.cancel(A)") < got.index("decode.timeout(A)") \
            < got.index("decode.allocate(B, s0)") < got.index("decode.land(A)")


@pytest.mark.slow
def test_paired_abort_synthesized_region() -> None:
    result = synth(edited(PAIRED), ["T_flight", "T_timeout"])
    assert sy.region_text(sy.safe_region(result), result.free) == "T_flight < T_timeout"


# ---- kv_checksum ------------------------------------------------------------------------

CHECKSUM = "kv_checksum"
FULL_DIGEST = ("var full_digest : bool = false", "var full_digest : bool = true ")
NO_LATE_LANDING = (
    "event decode.land(r: Req, l: Layers) receives prefill.post(r)\n"
    "  when write[r, l] == flying\n",
    "event decode.land(r: Req, l: Layers) receives prefill.post(r)\n"
    "  when write[r, l] == flying\n"
    "       and not (owner[slot[r]] != none and owner[slot[r]] != r\n"
    "                and phase[owner[slot[r]]] == decoding)\n")
"""Forbid writes landing in the pages of a request that already passed verification."""
STALE_PREFIX = ["initial", "decode.allocate(A, s0)", "prefill.post(A)", "router.abort(A)",
                "decode.release(A)", "decode.allocate(B, s0)", "prefill.post(B)",
                "decode.land(B, sampled)", "decode.land(B, unsampled)"]


def test_sampled_digest_misses_a_stale_write_into_unsampled_layers() -> None:
    # At the defaults (SAMPLED level) the shortest leak is caught by nobody
    # before verification: A's write to the layers outside B's sample lands
    # after B's own, B's sampled layers still match, and B decodes over A's KV.
    o = check_sglang(CHECKSUM)
    assert o.verdict == "violated"
    assert o.prop == "no_undetected_corruption[B]"
    assert labels(o) == [*STALE_PREFIX, "decode.land(A, unsampled)", "decode.verify(B)"]
    assert o.trace is not None
    last = o.trace.steps[-1]
    assert last.changes == {"phase[B]": ("transferring", "decoding")}
    assert last.state["page[s0, sampled]"] == "B" and last.state["page[s0, unsampled]"] == "A"
    assert last.state["write[A, sampled]"] == "flying" and last.state["detected"] is False
    stale = o.trace.steps[-2]
    assert stale.receives is not None and o.trace.steps[stale.receives].label == "prefill.post(A)"
    assert stale.changes["page[s0, unsampled]"] == ("B", "A")


@pytest.mark.slow  # about a second: kept out of the quick subset
def test_sampled_digest_misses_it_even_with_no_late_landing() -> None:
    # The escape is the sample's, not a write after verification.
    o = check_variant(CHECKSUM, NO_LATE_LANDING, options=Options(deadlock=False))
    assert o.verdict == "violated" and o.prop == "no_undetected_corruption[B]"
    assert labels(o)[-2:] == ["decode.land(A, unsampled)", "decode.verify(B)"]


def test_full_digest_is_still_damaged_after_verification() -> None:
    # With every layer digested, the shortest leak is a write landing after B verified.
    o = check_variant(CHECKSUM, FULL_DIGEST)
    assert o.verdict == "violated" and o.prop == "no_undetected_corruption[B]"
    assert labels(o) == [*STALE_PREFIX, "decode.verify(B)", "decode.land(A, sampled)"]
    assert o.trace is not None
    last = o.trace.steps[-1]
    assert last.changes["page[s0, sampled]"] == ("B", "A")
    assert last.state["phase[B]"] == "decoding" and last.state["detected"] is False
    assert last.receives is not None and o.trace.steps[last.receives].label == "prefill.post(A)"


def test_full_digest_catches_every_write_that_lands_before_verification() -> None:
    check_variant(CHECKSUM, FULL_DIGEST, NO_LATE_LANDING, options=Options(deadlock=False)
                  ).assert_holds()


def test_checksum_catches_a_stale_write_into_sampled_layers() -> None:
    # Detection is reachable: A's write to B's sampled layers lands after B's
    # own and before B verifies, and the mismatch frees B.
    o = check_variant(CHECKSUM, ("invariant no_undetected_corruption(r: Req):",
                                 "invariant never_detected: not detected\n"
                                 "invariant no_undetected_corruption(r: Req):"))
    assert o.verdict == "violated" and o.prop == "never_detected"
    got = labels(o)
    assert got[-1] == "decode.verify(B)"
    assert got.index("decode.land(B, sampled)") < got.index("decode.land(A, sampled)") \
        < got.index("decode.verify(B)")
    assert o.trace is not None
    assert o.trace.steps[-1].changes["phase[B]"] == ("transferring", "freed")


@pytest.mark.slow
def test_checksum_synthesized_region_is_empty() -> None:
    result = synth(edited(CHECKSUM), ["T_prop", "T_chunk", "T_flight"])
    assert result.complete
    assert sy.region_text(sy.safe_region(result), result.free) == "false"


# ---- repro_harness ----------------------------------------------------------------------

HARNESS = "repro_harness"


def test_repro_harness_leaks_at_a_shallow_depth() -> None:
    o = check_sglang(HARNESS)
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
    o = check_sglang(HARNESS, **params)
    assert o.verdict == verdict, o.summary()
    if verdict == "violated":
        assert o.prop == "assert" and labels(o)[-1] == "decode.land(A, 0)"

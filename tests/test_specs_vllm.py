"""The vLLM NIXL spec family (spec/vllm/): leases, turn-2 expiry, multiple handles.

Each spec is pinned at its defaults (verdict, counterexample) and by its
synthesized region, over the parameters said at each test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.api import Outcome, check
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt import synth as sy

SPECS = Path(__file__).resolve().parent.parent / "spec" / "vllm"


def run(name: str, *edits: tuple[str, str], **params: int | str) -> Outcome:
    text = (SPECS / f"{name}.kvr").read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return check(load_text(text, str(SPECS / f"{name}.kvr")), params)


def labels(o: Outcome) -> list[str]:
    assert o.trace is not None
    return [s.label for s in o.trace.steps]


def region(name: str, free: list[str], *edits: tuple[str, str]) -> str:
    text = (SPECS / f"{name}.kvr").read_text(encoding="utf-8")
    for old, new in edits:
        text = text.replace(old, new)
    result = sy.explore_parametric(SpecModel(load_text(text)), free, timeout=120)
    assert result.complete, result.limit
    return sy.region_text(sy.safe_region(result), free)


# ---- the measured case: aws-samples/aws-do-eks #84 ---------------------------------------


def test_measured_case_reads_released_blocks_and_answers_200() -> None:
    o = run("lease_expired_read")
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == ("client of A gets HTTP 200 from KV blocks P released and gave to B"
                         " (P logged it: true)")
    assert labels(o) == ["initial", "prefill.expire()", "prefill.reuse()", "decode.read()",
                         "decode.read_done()", "decode.respond()"]
    assert o.trace is not None
    times = [s.time for s in o.trace.steps]
    assert times[1] == 30 and times[3] is not None and 50 <= times[3] <= 62


@pytest.mark.parametrize(("params", "verdict"), [
    ({"L": 300}, "holds"),                        # #84's remedy: KV_LEASE_DURATION=300
    ({"L": "63.01"}, "holds"),                    # 62 s gap + 1 s read < L: strict bound
    ({"L": 63}, "violated"),
    ({"Q_min": 0, "Q_max": 28, "T_read": 1}, "holds"),
])
def test_measured_case_straddles_its_bound(params: dict[str, int | str], verdict: str) -> None:
    assert run("lease_expired_read", **params).verdict == verdict


def test_measured_case_region() -> None:
    assert region("lease_expired_read", ["L", "Q_max", "T_read"]) == (
        "(L > Q_max or Q_max >= 50) and (L > Q_max + T_read or Q_max < 50)"
        " and (L <= Q_max or Q_max >= 50)")


# ---- the design: lease renewal by heartbeat (#41383) -------------------------------------


def test_lease_renewal_holds_at_the_defaults() -> None:
    run("lease_renewal").assert_holds()


LOSSY = ("var hb_lossy : bool = false", "var hb_lossy : bool = true ")


def test_lease_renewal_with_lost_heartbeats_expires_under_the_wait() -> None:
    o = run("lease_renewal", LOSSY)
    assert o.verdict == "violated"
    names = labels(o)
    assert names.index("decode.enter()") < names.index("prefill.expire()") \
        < names.index("prefill.reuse()") < names.index("decode.read()")
    assert "prefill.renew()" not in names


def test_lease_renewal_first_heartbeat_must_beat_the_initial_lease() -> None:
    assert run("lease_renewal", T_enter=24, T_hb=1).verdict == "violated"
    run("lease_renewal", T_enter="23.9", T_hb=1).assert_holds()


def test_lease_renewal_region_over_entry_and_heartbeat_delay() -> None:
    # T_enter + H + T_hb < L at H = 5, L = 30
    assert region("lease_renewal", ["T_enter", "T_hb"]) == "T_enter + T_hb < 25"


def test_lease_renewal_region_over_the_extension() -> None:
    # H + T_hb < E at H = 5, T_hb = 1
    assert region("lease_renewal", ["E"]) == "E > 6"


def test_lease_renewal_lossy_no_timing_is_safe() -> None:
    assert region("lease_renewal", ["T_enter", "T_hb"], LOSSY) == "false"


# ---- turn-2 reads of D's blocks (#47021) ------------------------------------------------


def test_turn2_with_the_expiry_check_holds() -> None:
    run("turn2_expiry_check").assert_holds()


def test_turn2_before_47021_reads_reused_blocks() -> None:
    o = run("turn2_expiry_check", ("var check : bool = true ", "var check : bool = false"))
    assert o.verdict == "violated"
    assert labels(o) == ["initial", "decode.expire()", "decode.reuse()", "prefill.read()",
                         "prefill.read_done()"]


def test_turn2_region() -> None:
    # P reads only while now + M < deadline (strict): equality is safe
    assert region("turn2_expiry_check", ["M", "T_skew", "T_read"]) == "M >= T_skew + T_read"


# ---- several handles per request (#56104) ------------------------------------------------


def test_multi_handle_first_err_invalidates_under_a_sibling() -> None:
    o = run("multi_handle_invalidation")
    assert o.message == "handle h1 of A lands in blocks owned by B"
    assert labels(o) == ["initial", "nixl.post()", "nixl.error(h0)", "decode.invalidate()",
                         "decode.reassign()", "nixl.land(h1)"]
    assert region("multi_handle_invalidation", ["T_flight"]) == "false"


def test_multi_handle_with_56104_holds() -> None:
    fixed = ("var wait_all : bool = false", "var wait_all : bool = true ")
    run("multi_handle_invalidation", fixed).assert_holds()
    assert region("multi_handle_invalidation", ["T_flight"], fixed) == "true"


# ---- the lease reaper's ordering (#58222, #50789) -----------------------------------------

SCAN_ALL = ("var scan_all : bool = false", "var scan_all : bool = true ")
TTL_HEAD = ("var ttl_head : bool = false", "var ttl_head : bool = true ")


def test_reaper_strands_an_expired_lease_behind_a_heartbeated_head() -> None:
    o = run("lease_reaper_order")
    assert o.verdict == "violated" and o.prop == "bounded_release"
    assert labels(o) == ["initial", "reaper.b_lease_ends()"]
    assert o.trace is not None and o.trace.steps[1].time == 30


def test_reaper_region_over_the_heads_wait() -> None:
    # B is freed only when A leaves: T_bound >= W_max - L + T_step
    assert region("lease_reaper_order", ["W_max", "T_bound"]) == (
        "T_bound >= 1 and (W_max <= T_bound + 29 or W_max < 30)")


def test_reaper_behind_a_480s_bidirectional_entry() -> None:
    o = run("lease_reaper_order", TTL_HEAD, W_max=600)
    assert o.verdict == "violated" and o.prop == "bounded_release"
    assert region("lease_reaper_order", ["T_bound"], TTL_HEAD,
                  ("param W_max   in [0, 600] = 62", "param W_max   in [0, 600] = 600")) \
        == "T_bound >= 452"


def test_reaper_scanning_the_whole_map_holds() -> None:
    run("lease_reaper_order", SCAN_ALL).assert_holds()
    run("lease_reaper_order", SCAN_ALL, TTL_HEAD, W_max=600).assert_holds()
    assert region("lease_reaper_order", ["T_bound"], SCAN_ALL) == "T_bound >= 1"


# ---- push mode: the lease ends under P's WRITE (#53095, #53244, #55470) -------------------

PUSH = "push_write_after_expiry"
HB_RENEWS = ("var hb_renews      : bool = false", "var hb_renews      : bool = true ")
DROP = ("var drop_after_end : bool = false", "var drop_after_end : bool = true ")
HOLD = ("var hold_inflight  : bool = false", "var hold_inflight  : bool = true ")


def test_push_lease_ends_under_the_write_and_the_client_gets_200() -> None:
    o = run(PUSH)
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == ("client of A gets HTTP 200 from KV that P wrote out of blocks it had"
                         " given to B")
    assert labels(o) == ["initial", "decode.enter()", "decode.heartbeat()", "decode.register()",
                         "prefill.post()", "prefill.expire()", "prefill.reuse()", "decode.land()",
                         "decode.respond()"]


@pytest.mark.slow  # about a second: kept out of the quick subset
def test_push_region_without_renewal() -> None:
    # the WRITE must end before L: R_max + T_enter + T_hs + T_write < L
    assert region(PUSH, ["R_max", "T_hs"]) == "R_max + T_hs < 28"


def test_push_55470_alone_leaves_the_posted_write() -> None:
    o = run(PUSH, DROP)
    assert o.verdict == "violated"
    assert "prefill.defer()" not in labels(o)
    assert run(PUSH, HOLD).verdict == "violated"        # the deferred WRITE after the end


def test_push_55470_with_no_expiry_in_flight_holds() -> None:
    run(PUSH, DROP, HOLD).assert_holds()


@pytest.mark.slow
def test_push_53244_renewals_hold_while_they_keep_up() -> None:
    run(PUSH, HB_RENEWS).assert_holds()
    assert region(PUSH, ["T_enter", "T_hb"], HB_RENEWS) == "T_enter + T_hb < 25"
    assert region(PUSH, ["E"], HB_RENEWS) == "E > 6"


# ---- the clock-offset handshake itself (#47021) ------------------------------------------

FORWARD_DROPPED = ("var forwarded : bool = true ", "var forwarded : bool = false")


def test_offset_handshake_holds_at_the_defaults() -> None:
    run("offset_handshake").assert_holds()


def test_offset_handshake_region() -> None:
    # RTT/2 + T_drift + T_read <= M at M = 5
    assert region("offset_handshake", ["RTT", "T_drift", "T_read"]) == (
        "RTT + 2*T_drift + 2*T_read <= 10")


def test_offset_handshake_error_beyond_the_margin_reads_reused_blocks() -> None:
    o = run("offset_handshake", M=2)
    assert o.verdict == "violated"
    assert labels(o) == ["initial", "owner.store()", "reader.estimate_late()", "reader.read()",
                         "owner.expire()", "owner.reuse()", "reader.read_done()"]


def test_offset_handshake_router_without_the_expiry_skips_the_check() -> None:
    o = run("offset_handshake", FORWARD_DROPPED)
    assert o.verdict == "violated"
    assert "reader.decline()" not in labels(o)
    assert region("offset_handshake", ["RTT", "T_drift", "T_read"], FORWARD_DROPPED) == "false"

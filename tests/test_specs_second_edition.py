"""The specs added by the second edition of the SGLang library (issue #12).

Each is pinned at its defaults (verdict, the counterexample's key events) and,
where it has a safe region, by its synthesized region (over a subset of the
parameters where full synthesis is slow; said at each test).
"""

from __future__ import annotations

import pytest
from helpers import check_variant, labels, sglang_spec

from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt import synth as sy


def region(name: str, free: list[str]) -> str:
    spec = load_text(sglang_spec(name).read_text(encoding="utf-8"))
    result = sy.explore_parametric(SpecModel(spec), free, timeout=120)
    assert result.complete, result.limit
    return sy.region_text(sy.safe_region(result), free)


def test_heartbeat_loss_posts_the_queued_chunk_after_the_release() -> None:
    o = check_variant("heartbeat_loss")
    assert labels(o) == ["initial", "decode.allocate(A, s0)", "prefill.hang()",
                         "decode.heartbeat_lost(A)", "decode.allocate(B, s0)",
                         "prefill.resume()", "prefill.post(A)", "decode.land(A)"]
    assert o.message == "write of A lands in slot s0 owned by B"


@pytest.mark.parametrize("params", [{"T_hb": 30, "T_flight": "0.01"}, {"T_hb": "0.1"}])
def test_heartbeat_loss_unsafe_for_every_timing(params: dict[str, int | str]) -> None:
    assert check_variant("heartbeat_loss", **params).verdict == "violated"


def test_prefill_source_release_reads_the_next_requests_kv() -> None:
    o = check_variant("prefill_source_release")
    assert o.message == "write call of A reads source p0 now holding B's KV"
    names = labels(o)
    assert names.index("prefill.post(A)") < names.index("prefill.release(A)") \
        < names.index("prefill.compute(B, p0)") < names.index("prefill.read(A)")


def test_prefill_source_release_with_the_hold_holds() -> None:
    check_variant("prefill_source_release",
        ("var hold_source : bool = false", "var hold_source : bool = true ")).assert_holds()


def test_radix_prefix_poison_reaches_the_second_victim() -> None:
    o = check_variant("radix_prefix_poison")
    assert o.verdict == "violated"
    assert o.message == ("C shares B's cached prefix page g0, which holds A's KV"
                         " (B read it too: true)")
    names = labels(o)
    assert names.index("decode.timeout(A)") < names.index("decode.land(B)") \
        < names.index("decode.land(A)") < names.index("decode.start(B)") \
        < names.index("decode.finish_and_cache(B)")
    assert names[-1] == "decode.match_prefix(C, g0)"
    assert o.trace is not None and o.trace.steps[-1].state["victim[B]"] is True


def test_radix_prefix_poison_holds_when_the_timeout_covers_the_call() -> None:
    check_variant("radix_prefix_poison", T_flight=20).assert_holds()


def test_failed_send_no_ack_never_acks_a_poisoned_room() -> None:
    check_variant("failed_send_no_ack").assert_holds()
    # without the poison check it is error_return_ack again
    o = check_variant("failed_send_no_ack",
                      ("  when owed[r] and outstanding[r] == 0 and not poisoned[r]\n",
                       "  when owed[r] and outstanding[r] == 0\n"))
    assert o.verdict == "violated"


# ---- synthesized regions ----------------------------------------------------------------


@pytest.mark.slow
def test_room_reuse_region() -> None:
    # restricted to T_flight, T_timeout (full synthesis over five parameters: ~25 s,
    # the same bound T_timeout > T_prop + T_ack + T_flight)
    assert region("room_reuse", ["T_flight", "T_timeout"]) == "T_timeout > T_flight + 3"


@pytest.mark.slow
def test_single_ack_fanout_region() -> None:
    # restricted to T_timeout (full synthesis takes minutes; over T_flight and
    # T_timeout it gives T_timeout > T_prop + 2 T_flight, in about two minutes)
    # at the defaults the bound is T_timeout > 68: no timeout in [0, 60] is safe
    assert region("single_ack_fanout", ["T_timeout"]) == "false"


@pytest.mark.parametrize("name", ["error_return_ack", "premature_ack", "heartbeat_loss"])
def test_no_timing_is_safe(name: str) -> None:
    spec = load_text(sglang_spec(name).read_text(encoding="utf-8"))
    free = [p.name for p in spec.params]
    result = sy.explore_parametric(SpecModel(spec), free, timeout=120)
    assert result.complete
    assert sy.safe_region(result) == [[]]

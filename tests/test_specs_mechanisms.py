"""SGLang mechanisms of the third edition's second part: state rows reused with
req_pool_idx, HiSparse host destinations, layer-wise streaming, NIXL's
notification count.

Each spec is pinned at its defaults (verdict, counterexample) and with its fix
switch, and by its synthesized region over the timing parameters named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.api import Outcome, check
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt import synth as sy

SPECS = Path(__file__).resolve().parent.parent / "spec" / "sglang"


def _text(name: str, edits: tuple[tuple[str, str], ...]) -> str:
    text = (SPECS / f"{name}.kvr").read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def run(name: str, *edits: tuple[str, str], **params: int | str) -> Outcome:
    return check(load_text(_text(name, edits), str(SPECS / f"{name}.kvr")), params)


def labels(o: Outcome) -> list[str]:
    assert o.trace is not None
    return [s.label for s in o.trace.steps]


def region(name: str, free: list[str], *edits: tuple[str, str]) -> str:
    result = sy.explore_parametric(SpecModel(load_text(_text(name, edits))), free,
                                   timeout=120)
    assert result.complete, result.limit
    return sy.region_text(sy.safe_region(result), free)


HOLD = ("var hold_until_drained : bool = false", "var hold_until_drained : bool = true ")


# ---- non-KV state rows indexed by req_pool_idx -------------------------------------------


@pytest.mark.slow  # about a second: kept out of the quick subset
def test_state_rows_of_the_reused_slot_take_the_late_write() -> None:
    o = run("state_slot_reuse")
    assert o.verdict == "violated" and o.prop == "b_decodes_its_own_state"
    names = labels(o)
    assert names.index("prefill.post_state(A)") < names.index("router.abort()") \
        < names.index("decode.release_a()") < names.index("decode.admit(B)") \
        < names.index("decode.land_state(B)") < names.index("decode.land_state(A)") \
        < names.index("decode.start_b()")
    assert region("state_slot_reuse", ["T_prop", "T_flight"]) == "false"


def test_state_rows_held_until_the_drained_ack_hold() -> None:
    run("state_slot_reuse", HOLD).assert_holds()
    assert region("state_slot_reuse", ["T_prop", "T_flight"], HOLD) == "true"


# ---- HiSparse host destinations ----------------------------------------------------------


def test_hisparse_swap_in_loads_the_late_write_from_host() -> None:
    o = run("hisparse_host_dest")
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == "B's swap-in loads A's KV from its host slots"
    assert labels(o) == ["initial", "decode.admit(A)", "prefill.post(A)", "router.abort()",
                         "decode.release_a()", "decode.admit(B)", "prefill.post(B)",
                         "decode.land(B)", "decode.land(A)", "decode.start_b()",
                         "decode.swap_in()"]
    assert region("hisparse_host_dest", ["T_prop", "T_flight"]) == "false"


def test_hisparse_host_slots_held_until_the_drained_ack_hold() -> None:
    run("hisparse_host_dest", HOLD).assert_holds()
    assert region("hisparse_host_dest", ["T_prop", "T_flight"], HOLD) == "true"


# ---- layer-wise streaming ----------------------------------------------------------------

NOT_COUNTED = ("var ack_counts_streamed : bool = true ",
               "var ack_counts_streamed : bool = false")


def test_layerwise_counted_ack_holds_at_the_defaults() -> None:
    run("layerwise_streamed").assert_holds()


def test_layerwise_counted_ack_region() -> None:
    assert region("layerwise_streamed", ["T_prop", "T_close", "T_flight"]) == (
        "T_prop + T_close + T_flight < 30")


def test_layerwise_timeout_exit_straddles_the_bound() -> None:
    assert run("layerwise_streamed", T_flight="25.9").verdict == "holds"
    assert run("layerwise_streamed", T_flight=26).verdict == "violated"


def test_layerwise_ack_that_ignores_streamed_calls_leaks() -> None:
    o = run("layerwise_streamed", NOT_COUNTED)
    assert o.verdict == "violated"
    assert o.message == "a streamed layer call of A lands in the slot decode gave to B"
    assert labels(o) == ["initial", "decode.admit(A)", "router.abort()",
                         "prefill.learn_abort()", "prefill.ack()", "prefill.stream(0)",
                         "decode.release_on_ack()", "decode.admit(B)", "decode.land(0)",
                         "decode.finish_b()"]
    assert region("layerwise_streamed", ["T_close", "T_flight"], NOT_COUNTED) == "false"


# ---- NIXL: the notification count under prefill TP > decode TP ---------------------------

PER_RANK = ("var per_rank_count   : bool = false", "var per_rank_count   : bool = true ")
OVERTAKE = ("var notif_after_data : bool = true ", "var notif_after_data : bool = false")


def test_nixl_first_ranks_notifications_complete_the_room() -> None:
    o = run("nixl_notification_count")
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == ("decode starts the request before a prefill rank's head slice of"
                         " the chunk has landed")
    names = labels(o)
    assert "decode.kv_notif(P0)" in names and "decode.aux_notif(P0)" in names
    assert "decode.land_kv(P1)" not in names
    assert region("nixl_notification_count", ["T_flight"]) == "false"


def test_nixl_counting_per_rank_holds() -> None:
    run("nixl_notification_count", PER_RANK).assert_holds()
    assert region("nixl_notification_count", ["T_flight"], PER_RANK) == "true"


def test_nixl_per_rank_count_needs_notifications_after_their_data() -> None:
    assert run("nixl_notification_count", PER_RANK, OVERTAKE).verdict == "violated"

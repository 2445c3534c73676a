"""The specs added or split by the third edition of the SGLang library (issue #27).

Each version a spec models is pinned: its verdict, the counterexample's key
events and, where it has a safe region, the synthesized region.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import z3

from checker import api
from checker.api import Outcome, check
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt import synth as sy

ROOT = Path(__file__).resolve().parent.parent / "spec"


def run(name: str, *edits: tuple[str, str], system: str = "sglang",
        **params: int | str) -> Outcome:
    path = ROOT / system / f"{name}.kvr"
    text = path.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    spec = load_text(text, str(path), {k: Fraction(v) for k, v in params.items()})
    timing = {p.name for p in spec.params}
    return check(spec, {k: v for k, v in params.items() if k in timing})


def labels(o: Outcome) -> list[str]:
    assert o.trace is not None
    return [s.label for s in o.trace.steps]


def region(name: str, free: list[str] | None = None, *edits: tuple[str, str],
           system: str = "sglang") -> str:
    """The safe region of ``spec/SYSTEM/NAME.kvr`` with ``edits`` applied, synthesized
    over ``free`` (every parameter when None)."""
    text = (ROOT / system / f"{name}.kvr").read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    spec = load_text(text)
    names = [p.name for p in spec.params] if free is None else free
    result = sy.explore_parametric(SpecModel(spec), names, timeout=120)
    assert result.complete, result.limit
    return sy.region_text(sy.safe_region(result), names)


# ---- admission rejection: before #36988, #36988, #38935 ----------------------------------


def test_retire_aborted_prefill_36988_holds() -> None:
    o = run("retire_aborted_prefill")
    o.assert_holds()


def test_before_36988_the_stub_is_decoded_over_unwritten_pages() -> None:
    o = run("retire_aborted_prefill", RETIRE=0)
    assert o.verdict == "violated" and o.prop == "assert"
    assert o.message == "A decodes over pages of slot s0 never written for it"
    assert labels(o) == ["initial", "router.arrive(A, too_long)", "decode.allocate(A, s0)",
                         "prefill.post(A, 0)", "prefill.placeholder(A)", "decode.land(A, 0)",
                         "decode.start(A)"]


# ---- prefill-reported failure: the other ranks are told, a running call still leaks --------


def test_prefill_failure_release_leaks_only_a_running_call() -> None:
    o = run("prefill_failure_release")
    names = labels(o)
    assert names.index("prefill.post(A, p0)") < names.index("prefill.fail(A, p1)")
    # telling p0 (clear) cannot stop the call it already started
    guard = "  when not failed[r, p] and exists q: Rank . origin[r, q]\n"
    told = run("prefill_failure_release", (guard, guard + "       and write[r, p] == unsent\n"))
    assert told.verdict == "violated"


@pytest.mark.slow
def test_paired_abort_v1_no_timing_is_safe() -> None:
    assert region("paired_abort_v1", ["T_route", "T_status", "T_flight"]) == "false"


@pytest.mark.slow
def test_paired_abort_38961_region() -> None:
    assert region("paired_abort", ["T_flight", "T_timeout"]) == "T_flight < T_timeout"


@pytest.mark.slow
def test_premature_ack_with_36707_safe_for_every_timing() -> None:
    spec = load_text((ROOT / "sglang" / "premature_ack.kvr").read_text(encoding="utf-8")
                     .replace("var fix_36707   : bool = false", "var fix_36707   : bool = true "))
    free = [p.name for p in spec.params]
    result = sy.explore_parametric(SpecModel(spec), free, timeout=120)
    assert result.complete
    assert sy.region_text(sy.safe_region(result), free) == "true"


# ---- #31357 QUIESCE_V1 (proposal): closes the early ack, leaves the engine's early -1 ------


ENGINE_WAITS = ("var engine_waits : bool = false", "var engine_waits : bool = true ")


def test_quiesce_v1_still_leaks_through_the_engines_early_error_return() -> None:
    o = run("quiesce_v1")
    assert o.message == "write of A lands in slot s0 owned by B"
    assert labels(o) == ["initial", "decode.allocate(A, s0)", "prefill.post(A)",
                         "prefill.error_return(A)", "prefill.report_failed(A)",
                         "decode.poll_failed(A)", "decode.allocate(B, s0)", "decode.land(A)"]
    assert region("quiesce_v1", ["T_prop", "T_ack", "T_flight"]) == "false"


def test_quiesce_v1_with_an_engine_that_waits_holds() -> None:
    run("quiesce_v1", ENGINE_WAITS).assert_holds()


# ---- new mechanisms: RL memory release, the staging ring -----------------------------------


def test_memory_release_clears_the_queue_under_a_running_write() -> None:
    o = run("memory_release_rl")
    assert o.message == "A's write lands in pages owned by B"
    assert labels(o) == ["initial", "decode.allocate_a()", "prefill.post()", "trainer.release()",
                         "trainer.resume()", "decode.allocate_b()", "decode.land()"]
    assert region("memory_release_rl", ["T_prop", "T_flight"]) == "false"


def test_memory_release_with_abort_and_drain_first_holds() -> None:
    run("memory_release_rl", ("var drain_first : bool = false", "var drain_first : bool = true ")
        ).assert_holds()


def test_staging_ring_late_write_corrupts_the_next_rooms_scatter() -> None:
    o = run("staging_ring")
    assert o.message == "room B scatters ring data written by A"
    names = labels(o)
    assert names.index("decode.fail()") < names.index("decode.assign(B)") \
        < names.index("decode.land(B)") < names.index("decode.land(A)") \
        < names.index("decode.scatter()")
    assert region("staging_ring", ["T_prop", "T_flight"]) == "false"


def test_staging_ring_held_until_the_drained_ack_holds() -> None:
    run("staging_ring", ("var hold_ring : bool = false", "var hold_ring : bool = true ")
        ).assert_holds()


# ---- #37077 (proposal): Mori drains a failed transfer before it acks ------------------------


def test_mori_drain_ack_holds_for_every_timing() -> None:
    run("mori_drain_ack").assert_holds()
    assert region("mori_drain_ack", ["T_prop", "T_ack", "T_flight"]) == "true"


def test_mori_drain_ack_counting_the_error_as_drained_is_error_return_ack() -> None:
    o = run("mori_drain_ack", ("  do call[r] := error; failed[r] := true\n",
                               "  do call[r] := error; failed[r] := true; outstanding[r] := 0\n"
                               "     reset since_ready[r]\n"))
    assert o.verdict == "violated"
    assert o.message == "write of A lands in slot s0 owned by B"


# ---- concurrent room sharing by n>1 samples (#40297) ---------------------------------------


def test_shared_room_second_sample_decodes_unwritten_pages() -> None:
    o = run("shared_room_samples")
    assert o.message == ("sample S2 decodes over pages never written for it"
                         " (its room's Success was another sample's)")
    assert labels(o) == ["initial", "decode.register(S1)", "decode.register(S2)",
                         "prefill.post(R1)", "decode.land(R1)", "decode.start(S2)"]
    assert region("shared_room_samples", ["T_flight"]) == "false"


def test_shared_room_with_distinct_rooms_holds() -> None:
    run("shared_room_samples",
        ("var distinct_rooms : bool = false", "var distinct_rooms : bool = true ")).assert_holds()


# ---- unbounded liveness: strict release, Mori's wait without a limit -----------------------


def live(name: str, *edits: tuple[str, str], **params: int) -> api.LivenessRun:
    """The unbounded liveness check of ``spec/sglang/NAME.kvr`` with ``edits`` applied;
    its safety must hold first (liveness never takes an ``assert`` edge)."""
    path = ROOT / "sglang" / f"{name}.kvr"
    text = path.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    spec = load_text(text, str(path))
    check(spec, dict(params)).assert_holds()
    return api.check_liveness(SpecModel(spec, {k: Fraction(v) for k, v in params.items()}))


def statuses(run: api.LivenessRun) -> list[tuple[str, str]]:
    return [(r.name, r.status) for r in run.results]


def lasso(run: api.LivenessRun, name: str) -> tuple[str | None, list[str]]:
    (r,) = [r for r in run.results if r.name == name]
    assert r.status == "violated" and r.trace is not None
    return r.trace.lasso, [s.label for s in r.trace.steps]


TIMER = ("var timer_free : bool = false", "var timer_free : bool = true ")


def test_strict_never_freed_a_lost_ack_keeps_the_slot_for_ever() -> None:
    lv = live("strict_never_freed")
    assert statuses(lv) == [("released[A]", "violated"), ("released[B]", "violated")]
    assert lasso(lv, "released[A]") == ("idle", [
        "initial", "decode.allocate(A, s0)", "decode.send_abort(A)", "prefill.learn_abort(A)",
        "prefill.ack(A)", "decode.ack_lost(A)"])
    # the bounded sibling agrees: the slot is not back within T_bound
    bounded = run("strict_no_release_on_timeout")
    assert bounded.ref is not None and bounded.ref.name == "bounded_release"


def test_strict_never_freed_second_timer_frees_the_slot() -> None:
    lv = live("strict_never_freed", TIMER)
    assert lv.verdict == "holds"
    assert statuses(lv) == [("released[A]", "holds"), ("released[B]", "holds")]


def test_strict_never_freed_second_timer_leaks_when_it_is_shorter_than_a_write() -> None:
    o = run("strict_never_freed", TIMER, T_timeout=1)
    assert o.message == "write of A chunk 0 lands in slot s0 owned by B"
    assert labels(o) == ["initial", "decode.allocate(A, s0)", "decode.send_abort(A)",
                         "decode.timeout_keep(A)", "prefill.post(A, 0)",
                         "decode.timeout_free(A)", "decode.allocate(B, s0)",
                         "decode.land(A, 0)"]


@pytest.mark.slow
def test_strict_never_freed_second_timer_region() -> None:
    spec = load_text((ROOT / "sglang" / "strict_never_freed.kvr").read_text(encoding="utf-8")
                     .replace(*TIMER))
    free = ["T_prop", "T_flight", "T_timeout"]
    result = sy.explore_parametric(SpecModel(spec), free, timeout=120)
    assert result.complete, result.limit
    cnf = sy.safe_region(result)
    # The same region as without merging symbolic states, whose bad pieces printed
    # `(2*T_timeout > T_prop + T_flight or T_flight < T_timeout) and (2*T_timeout >
    # T_prop + T_flight or T_prop < T_timeout)`: within the ranges the second
    # disjuncts together imply the first.
    prop, flight, timeout = z3.Reals("T_prop T_flight T_timeout")
    old = z3.And(z3.Or(2 * timeout > prop + flight, flight < timeout),
                 z3.Or(2 * timeout > prop + flight, prop < timeout))
    solver = z3.Solver()
    solver.add(sy.region_z3([], result.ranges), sy.region_z3(cnf, result.ranges) != old)
    assert solver.check() == z3.unsat
    assert sy.region_text(cnf, free) == "2*T_timeout > T_prop + T_flight"


SLA_ON = ("var sla_on       : bool = false", "var sla_on       : bool = true ")
WAIT_RETURNS = ("var wait_returns : bool = false", "var wait_returns : bool = true ")
# assumption: a wedged transfer's writes never land
WEDGED_WRITE_LOST = ("  when data[r] == flying\n",
                     "  when data[r] == flying and status[r] != wedged\n")


def test_mori_wait_without_a_limit_never_concludes_a_wedged_room() -> None:
    lv = live("mori_unbounded_wait")
    assert statuses(lv) == [("concluded[A]", "violated"), ("concluded[B]", "violated")]
    assert lasso(lv, "concluded[A]") == ("idle", [
        "initial", "prefill.dequeue(A)", "prefill.wedge(A)"])


def test_mori_sla_frees_pages_under_a_wedged_write() -> None:
    o = run("mori_unbounded_wait", SLA_ON)
    assert o.message == "write of A lands in pages decode freed on the SLA's Failed"
    assert labels(o) == ["initial", "prefill.dequeue(A)", "prefill.wedge(A)",
                         "prefill.sla(A)", "decode.land(A)"]
    # the fix of the wait loop does not change that
    assert run("mori_unbounded_wait", SLA_ON, WAIT_RETURNS).message == o.message


def test_mori_sla_leaves_the_worker_waiting_so_the_next_room_starves() -> None:
    lv = live("mori_unbounded_wait", SLA_ON, WEDGED_WRITE_LOST)
    assert statuses(lv) == [("concluded[A]", "holds"), ("concluded[B]", "violated")]
    assert lasso(lv, "concluded[B]") == ("idle", [
        "initial", "prefill.dequeue(A)", "prefill.wedge(A)", "prefill.sla(A)"])


def test_mori_sla_with_a_wait_that_returns_concludes_every_room() -> None:
    lv = live("mori_unbounded_wait", SLA_ON, WAIT_RETURNS, WEDGED_WRITE_LOST)
    assert statuses(lv) == [("concluded[A]", "holds"), ("concluded[B]", "holds")]


# ---- #32564 (proposal): the Mooncake transfer ownership barrier -----------------------------


NO_QUARANTINE = ("var quarantine : bool = true ", "var quarantine : bool = false")
# a prefill that stays up: the one way the barrier's wait ends
PREFILL_STAYS_UP = ("  when not dead\n  do dead := true", "  when false\n  do dead := true")


def test_ownership_barrier_leaks_a_write_that_outlives_the_quarantine() -> None:
    o = run("ownership_barrier")
    assert o.message == "write of A lands in slot s0 owned by B"
    assert labels(o) == ["initial", "decode.allocate(A, s0)", "prefill.post(A)",
                         "prefill.error_return(A)", "decode.poll_failed(A)", "prefill.close(A)",
                         "prefill.ack(A)", "decode.release(A)", "decode.allocate(B, s0)",
                         "decode.land(A)"]
    assert o.trace is not None
    steps = {s.label: s for s in o.trace.steps}
    # the polled Failed is held, not released; the ack waits out the 30 s quarantine
    assert steps["decode.poll_failed(A)"].changes["phase[A]"] == ("transferring", "armed")
    error, ack = steps["prefill.error_return(A)"].time, steps["prefill.ack(A)"].time
    assert error is not None and ack is not None and ack - error == 30


@pytest.mark.parametrize(("params", "verdict"), [
    ({"T_flight": 30}, "violated"),          # = T_quar: the landing may come last
    ({"T_flight": "29.99"}, "holds"),
    ({"T_quar": 33}, "violated"),
    ({"T_quar": "33.01"}, "holds"),
])
def test_ownership_barrier_straddles_the_quarantine(params: dict[str, int | str],
                                                    verdict: str) -> None:
    assert run("ownership_barrier", **params).verdict == verdict


def test_ownership_barrier_region() -> None:
    assert region("ownership_barrier", ["T_flight", "T_quar"]) == "T_flight < T_quar"


def test_ownership_barrier_region_over_every_delay() -> None:
    assert region("ownership_barrier") == "T_flight < T_quar"


def test_ownership_barrier_as_first_pushed_counts_the_error_return_as_drained() -> None:
    o = run("ownership_barrier", NO_QUARANTINE, T_flight=1)
    assert o.message == "write of A lands in slot s0 owned by B"
    names = labels(o)
    assert names.index("prefill.error_return(A)") < names.index("prefill.ack(A)") \
        < names.index("decode.release(A)") < names.index("decode.land(A)")
    assert region("ownership_barrier", None, NO_QUARANTINE) == "false"


def test_ownership_barrier_keeps_the_slot_for_ever_when_prefill_never_acks() -> None:
    lv = live("ownership_barrier", T_flight=29)
    assert statuses(lv) == [("released[A]", "violated"), ("released[B]", "violated")]
    assert lasso(lv, "released[A]") == ("idle", [
        "initial", "decode.allocate(A, s0)", "decode.abort(A)", "prefill.die()"])


def test_ownership_barrier_with_a_prefill_that_stays_up_releases_every_slot() -> None:
    lv = live("ownership_barrier", PREFILL_STAYS_UP, T_flight=29)
    assert statuses(lv) == [("released[A]", "holds"), ("released[B]", "holds")]


# ---- synthesized regions of the specs whose other tests pin points only --------------------


@pytest.mark.parametrize(("name", "edits", "expected"), [
    ("early_reject", (), "true"),
    ("early_reject", (("var early_reject : bool = true ", "var early_reject : bool = false"),),
     "false"),
    ("retire_aborted_prefill", (), "true"),
    ("failed_send_no_ack", (), "true"),
    ("prefill_source_release", (), "false"),
    ("prefill_source_release",
     (("var hold_source : bool = false", "var hold_source : bool = true "),), "true"),
    ("radix_prefix_poison", (), "T_timeout > T_prop + T_flight"),
    ("mori_unbounded_wait", (), "true"),      # safety only: its claim is the lasso
    ("mori_unbounded_wait", (SLA_ON,), "false"),
    pytest.param("repro_harness", (), "T_hold > T_prop + T_chunk + T_flight",
                 marks=pytest.mark.slow),   # about a second
], ids=["early_reject", "early_reject-off", "retire_aborted_prefill", "failed_send_no_ack",
        "prefill_source_release", "prefill_source_release-hold_source", "radix_prefix_poison",
        "mori_unbounded_wait", "mori_unbounded_wait-sla_on", "repro_harness"])
def test_synthesized_region(name: str, edits: tuple[tuple[str, str], ...],
                            expected: str) -> None:
    assert region(name, None, *edits) == expected


# ---- #38961 item 2 (proposal): one ack target per decode rank -------------------------------


SEVERAL_TARGETS = ("var several_targets : bool = false", "var several_targets : bool = true ")
NO_TIMEOUT_EXIT = ("  when phase[r] == armed and since_arm[r] >= T_timeout\n",
                   "  when false and since_arm[r] >= T_timeout\n")
RELEASED = ("# outcome=timeout: \"releasing anyway\".\n",
            "property released(r: Req): phase[r] == armed leadsto phase[r] == freed\n\n"
            "# outcome=timeout: \"releasing anyway\".\n")


@pytest.mark.slow  # about a second
def test_several_ack_targets_still_leak_through_the_timeout_exit() -> None:
    o = run("single_ack_fanout", SEVERAL_TARGETS)
    assert o.message == "write of A to rank d0 lands in slot s0 owned by B"
    names = labels(o)
    assert names.index("prefill.mark_failed(A, d1)") < names.index("decode.timeout(A)") \
        < names.index("decode.land(A, d0)")


@pytest.mark.slow  # about two seconds
def test_several_ack_targets_timeout_region_is_still_empty() -> None:
    assert region("single_ack_fanout", ["T_timeout"], SEVERAL_TARGETS) == "false"


def test_one_ack_target_without_the_timeout_keeps_a_slot_for_ever() -> None:
    lv = live("single_ack_fanout", NO_TIMEOUT_EXIT, RELEASED)
    assert statuses(lv) == [("released[A]", "violated"), ("released[B]", "violated")]
    assert lasso(lv, "released[A]") == ("idle", [
        "initial", "decode.allocate(A, s0)", "decode.abort(A)", "prefill.mark_failed(A, d0)",
        "prefill.mark_failed(A, d1)", "prefill.ack(A, d1)", "decode.ack_in(A, d1)"])


def test_several_ack_targets_without_the_timeout_release_every_slot_safely() -> None:
    lv = live("single_ack_fanout", SEVERAL_TARGETS, NO_TIMEOUT_EXIT, RELEASED)
    assert statuses(lv) == [("released[A]", "holds"), ("released[B]", "holds")]
    assert region("single_ack_fanout", None, SEVERAL_TARGETS, NO_TIMEOUT_EXIT) == "true"

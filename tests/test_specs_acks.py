"""Verdicts of the ABORT/ABORT_ACK specs (spec/sglang/*ack*.kvr and their kin).

Each spec models one way SGLang's PD KV transfer released (or could release)
an aborted or failed request's KV slot on an acknowledgement; these tests pin
the verdict at the defaults, the last event of the counterexample, verdicts on
both sides of every bound, and, for ``drained_ack_or_timeout``, that the
synthesized safe region is exactly the derived bound.
"""

from __future__ import annotations

import io
import re
from fractions import Fraction

import pytest
import z3
from helpers import check_sglang, check_variant, labels, sglang_spec

from checker.api import check, load_spec
from checker.cli import main
from checker.model.compiled import SpecModel
from checker.smt import synth as sy

# ---- verdicts at the defaults ---------------------------------------------------------------

VIOLATED_AT_DEFAULTS = [
    # spec, message, last event
    ("abort_ack_before_drain", "write of A lands in slot s0 owned by B", "decode.land(A)"),
    ("drained_ack_or_timeout", "write of A lands in slot s0 owned by B", "decode.land(A)"),
    ("single_ack_fanout", "write of A to rank d0 lands in slot s0 owned by B",
     "decode.land(A, d0)"),
    ("prefill_failure_release", "write of A from rank p0 lands in slot s0 owned by B",
     "decode.land(A, p0)"),
    ("error_return_ack", "write of A lands in slot s0 owned by B", "decode.land(A)"),
    ("all_ranks_ack", "write of A from rank p0 lands in slot s0 owned by B",
     "decode.land(A, p0)"),
    ("generation_tagged_ack", "write of A lands in slot s0 owned by B", "decode.land(A)"),
    ("room_reuse", "write of B lands in slot s0 owned by C", "decode.land(B)"),
    ("paired_abort", "write of A lands in slot s0 owned by B", "decode.land(A)"),
]


@pytest.mark.parametrize(("name", "message", "last"), [
    pytest.param(*v, marks=pytest.mark.slow) if v[0] == "all_ranks_ack" else v
    for v in VIOLATED_AT_DEFAULTS], ids=[v[0] for v in VIOLATED_AT_DEFAULTS])
def test_violated_at_defaults(name: str, message: str, last: str) -> None:
    o = check_sglang(name)
    assert o.verdict == "violated"
    assert o.prop == "assert"
    assert o.message == message
    assert o.trace is not None
    end = o.trace.steps[-1]
    assert end.label == last
    assert end.failure == message
    # The leaking write is one posted earlier in the same trace.
    assert end.receives is not None
    assert o.trace.steps[end.receives].event == "prefill.post"


@pytest.mark.parametrize("name", ["failed_send_no_ack"])
def test_holds_at_defaults(name: str) -> None:
    o = check_sglang(name)
    assert o.verdict == "holds", o.summary()
    assert o.trace is None


# ---- the counterexamples tell each mechanism's own story ---------------------------------------


def test_abort_ack_before_drain_acks_while_the_write_flies() -> None:
    o = check_sglang("abort_ack_before_drain")
    assert labels(o) == [
        "initial", "decode.allocate(A, s0)", "prefill.post(A)", "decode.abort(A)",
        "prefill.ack(A)", "decode.release(A)", "decode.allocate(B, s0)", "decode.land(A)",
    ]
    assert o.trace is not None
    # the ack answers the ABORT, the release consumes the ack
    assert o.trace.steps[4].receives == 3 and o.trace.steps[5].receives == 4


def test_drained_ack_or_timeout_leaks_through_the_timeout_exit() -> None:
    o = check_sglang("drained_ack_or_timeout")
    names = labels(o)
    assert "decode.timeout(A)" in names
    assert "prefill.ack(A)" not in names and "decode.release(A)" not in names
    assert o.trace is not None
    steps = {s.label: s for s in o.trace.steps}
    # the slot is released 30 s (T_timeout) after decode armed the room, with the
    # ABORT received and the ack still owed (A's write is outstanding)
    arm, timeout = steps["decode.abort(A)"], steps["decode.timeout(A)"]
    assert arm.time is not None and timeout.time is not None
    assert timeout.time - arm.time == 30
    assert timeout.state["owed[A]"] is True and timeout.state["outstanding[A]"] == 1
    assert timeout.changes["owner[s0]"] == ("A", None)


def test_single_ack_fanout_second_abort_overwrites_the_target() -> None:
    o = check_sglang("single_ack_fanout")
    assert labels(o) == [
        "initial", "decode.allocate(A, s0)", "decode.abort(A)", "prefill.post(A, d0)",
        "prefill.mark_failed(A, d0)", "prefill.mark_failed(A, d1)", "decode.timeout(A)",
        "decode.allocate(B, s0)", "decode.land(A, d0)",
    ]
    assert o.trace is not None
    steps = {s.label: s for s in o.trace.steps}
    assert steps["prefill.mark_failed(A, d1)"].changes["target[A]"] == ("d0", "d1")
    arm, timeout = steps["decode.abort(A)"], steps["decode.timeout(A)"]
    assert arm.time is not None and timeout.time is not None
    assert timeout.time - arm.time == 30


def test_premature_ack_skip_path_erases_the_errored_groups_count() -> None:
    o = check_sglang("premature_ack")
    assert labels(o) == [
        "initial", "decode.allocate(A, s0)", "prefill.post(A)", "prefill.xfer_error(A, x0)",
        "prefill.skip_queued(A)", "decode.abort(A)", "prefill.mark_failed(A)",
        "prefill.ack(A)", "decode.release(A)", "decode.allocate(B, s0)",
        "decode.land(A, x1)",
    ]
    assert o.trace is not None
    skip = o.trace.steps[4]
    assert skip.changes["outstanding[A]"] == (1, 0)
    assert skip.changes["queued[A]"] == (True, False)
    assert skip.state["xfer[A, x1]"] == "flying"


def test_premature_ack_with_36707_holds() -> None:
    check_variant("premature_ack", ("var fix_36707   : bool = false",
                                    "var fix_36707   : bool = true ")).assert_holds()


def test_error_return_ack_acks_after_the_error_return() -> None:
    names = labels(check_sglang("error_return_ack"))
    assert names.index("prefill.error_return(A)") < names.index("prefill.ack(A)")
    assert names.index("decode.release(A)") < names.index("decode.allocate(B, s0)")
    assert names[-1] == "decode.land(A)"


@pytest.mark.slow
def test_all_ranks_ack_leaks_through_one_ranks_error_return() -> None:
    names = labels(check_sglang("all_ranks_ack"))
    assert "prefill.error_return(A, p0)" in names
    assert "decode.ack_in(A, p0)" in names and "decode.ack_in(A, p1)" in names


def test_room_reuse_counts_As_late_ack_for_B() -> None:
    o = check_sglang("room_reuse")
    names = labels(o)
    assert o.trace is not None
    assert names.index("decode.timeout(A)") < names.index("decode.allocate(B, s0)")
    assert names.index("decode.abort(B)") < names.index("decode.ack_in(A)")
    stale = o.trace.steps[names.index("decode.ack_in(A)")]
    assert stale.changes["owner[s0]"] == ("B", None)
    assert stale.state["data[B]"] == "flying"
    assert names.index("decode.ack_in(A)") < names.index("decode.allocate(C, s0)")
    assert o.trace.steps[-1].state["owner[s0]"] == "C"


def test_generation_tagged_ack_leaks_through_the_error_return() -> None:
    names = labels(check_sglang("generation_tagged_ack"))
    assert names.index("prefill.error_return(A)") < names.index("prefill.ack(A)")
    assert names.index("decode.ack_in(A)") < names.index("decode.allocate(B, s0)")


def test_paired_abort_cancels_prefill_first_and_releases_at_the_timeout() -> None:
    # the #38961 proposal on #40645: the ABORT for the cleared room is registered and
    # owed, but the write call outlives the timeout
    o = check_sglang("paired_abort")
    names = labels(o)
    assert names.index("router.disconnect(A)") < names.index("prefill.cancel(A)")
    assert names.index("prefill.cancel(A)") < names.index("decode.abort(A)")
    assert "prefill.ack(A)" not in names and "decode.timeout(A)" in names
    assert o.trace is not None
    assert o.trace.steps[names.index("prefill.cancel(A)")].changes["cleared[A]"] == (False, True)
    assert o.trace.steps[names.index("prefill.mark_failed(A)")].changes["owed[A]"] == (False, True)


def test_paired_abort_v1_frees_the_polled_failure_at_once() -> None:
    o = check_sglang("paired_abort_v1")
    assert labels(o) == [
        "initial", "decode.allocate(A, s0)", "prefill.post(A)", "router.disconnect(A)",
        "prefill.cancel(A)", "decode.poll_failed(A)", "decode.allocate(B, s0)",
        "decode.land(A)",
    ]
    assert o.message == "write of A lands in slot s0 owned by B"


def test_prefill_failure_release_is_immediate() -> None:
    o = check_sglang("prefill_failure_release")
    assert labels(o) == [
        "initial", "decode.allocate(A, s0)", "prefill.post(A, p0)", "prefill.fail(A, p1)",
        "decode.release(A, p1)", "decode.allocate(B, s0)", "decode.land(A, p0)",
    ]


# ---- verdicts on both sides of the bounds -----------------------------------------------------


@pytest.mark.parametrize(
    ("params", "verdict"),
    [
        ({"T_timeout": 35}, "violated"),          # T_timeout == T_prop + T_flight: simultaneous
        ({"T_timeout": "35.01"}, "holds"),
        ({"T_flight": 28}, "violated"),
        ({"T_flight": "27.99"}, "holds"),
        ({"T_prop": 0, "T_flight": 30}, "violated"),
        ({"T_prop": 0, "T_flight": "29.5"}, "holds"),
        ({"T_ack": 10, "T_timeout": 36}, "holds"),   # the ack's delay is not in the bound
        ({"T_ack": 0, "T_timeout": 34}, "violated"),
    ],
)
def test_drained_ack_or_timeout_bound(params: dict[str, int | str], verdict: str) -> None:
    o = check_sglang("drained_ack_or_timeout", **params)
    assert o.verdict == verdict, o.summary()
    if verdict == "violated":
        assert "decode.timeout(A)" in labels(o)


@pytest.mark.parametrize(
    ("params", "verdict"),
    [
        ({"T_timeout": 36}, "violated"),    # T_timeout == T_prop + T_ack + T_flight
        ({"T_timeout": "36.01"}, "holds"),
        ({"T_ack": 0, "T_prop": 0, "T_timeout": "33.01"}, "holds"),
    ],
)
def test_room_reuse_bound(params: dict[str, int | str], verdict: str) -> None:
    o = check_sglang("room_reuse", **params)
    assert o.verdict == verdict, o.summary()


POINTS = [
    {"T_prop": 0, "T_ack": 0, "T_flight": "0.5"},
    {"T_prop": 10, "T_ack": 10, "T_flight": "0.001"},
    {"T_prop": 10, "T_ack": 0, "T_flight": 60},
]


@pytest.mark.slow
@pytest.mark.parametrize("params", POINTS)
@pytest.mark.parametrize("name", ["abort_ack_before_drain", "premature_ack", "error_return_ack",
                                  "all_ranks_ack"])
def test_unsafe_for_every_timing(name: str, params: dict[str, int | str]) -> None:
    assert check_sglang(name, **params).verdict == "violated"


@pytest.mark.parametrize("params", POINTS)
def test_failed_send_no_ack_safe_for_every_timing(params: dict[str, int | str]) -> None:
    check_sglang("failed_send_no_ack", **params).assert_holds()


@pytest.mark.parametrize(
    "params",
    [{"T_status": 0, "T_flight": "0.5"}, {"T_status": 10, "T_flight": "0.001"},
     {"T_status": 10, "T_flight": 60}],
)
def test_prefill_failure_release_unsafe_for_every_timing(params: dict[str, int | str]) -> None:
    assert check_sglang("prefill_failure_release", **params).verdict == "violated"


# ---- the fixes, applied to the broken specs, close each hole -----------------------------------


@pytest.mark.slow
def test_all_ranks_ack_without_the_error_return_holds() -> None:
    check_variant("all_ranks_ack", ("  when write[r, p] == flying\n  do write[r, p] := errored",
                                    "  when false\n  do write[r, p] := errored")).assert_holds()


@pytest.mark.slow
def test_all_ranks_ack_with_a_single_ack_target_leaks() -> None:
    o = check_variant("all_ranks_ack", ("if forall q: Rank . acked[r, q] {", "if true {"),
                      ("  when write[r, p] == flying\n  do write[r, p] := errored",
                       "  when false\n  do write[r, p] := errored"))
    assert o.verdict == "violated" and o.message is not None
    assert "from rank" in o.message


def test_room_reuse_with_generations_holds() -> None:
    check_variant("room_reuse", ("var generations : bool = false", "var generations : bool = true")
                  ).assert_holds()


def test_generation_tagged_ack_without_the_error_return_holds() -> None:
    check_variant("generation_tagged_ack",
                  ("  when call[r] == running and data[r] == flying\n  do call[r] := error",
                   "  when false\n  do call[r] := error")).assert_holds()


def test_paired_abort_acks_when_the_timeout_covers_the_call() -> None:
    # the drained ack comes (#40645); with the call inside the timeout it is the exit
    o = check_variant("paired_abort",
                ("param T_flight  in (0, 60] = 33", "param T_flight  in (0, 60] = 29"))
    o.assert_holds()


# ---- synthesis: no safe timing for the broken specs; exactly the derived bound for the timeout --


@pytest.mark.slow
@pytest.mark.parametrize("name", ["abort_ack_before_drain", "premature_ack",
                                  "prefill_failure_release", "error_return_ack",
                                  "paired_abort_v1",
                                  "all_ranks_ack", "generation_tagged_ack"])
def test_no_timing_is_safe(name: str) -> None:
    sp = load_spec(sglang_spec(name))
    result = sy.explore_parametric(SpecModel(sp, {}), [p.name for p in sp.params], timeout=120)
    assert result.complete, result.limit
    region = sy.region_z3(sy.safe_region(result), result.ranges)
    s = z3.Solver()
    s.add(region)
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(sy.region_z3([], result.ranges))
    assert s.check() == z3.sat  # the ranges themselves are not empty



@pytest.fixture(scope="module")
def drained_synth() -> sy.SynthResult:
    sp = load_spec(sglang_spec("drained_ack_or_timeout"))
    model = SpecModel(sp, {})
    return sy.explore_parametric(model, [p.name for p in sp.params], timeout=600)


def _equivalent(a: z3.BoolRef, b: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(z3.Not(a == b))
    return s.check() == z3.unsat


def test_synthesized_region_is_the_derived_bound(drained_synth: sy.SynthResult) -> None:
    result = drained_synth
    assert result.complete, result.limit
    assert result.free == ["T_prop", "T_ack", "T_flight", "T_timeout"]
    cnf = sy.safe_region(result)
    region = sy.region_z3(cnf, result.ranges)
    ranges = sy.region_z3([], result.ranges)
    t_prop, t_ack, t_flight, t_timeout = z3.Reals("T_prop T_ack T_flight T_timeout")
    derived = z3.And(ranges, t_timeout > t_prop + t_flight)
    assert _equivalent(region, derived)
    # the check discriminates: neighbouring bounds are not equivalent
    assert not _equivalent(region, z3.And(ranges, t_timeout >= t_prop + t_flight))
    assert not _equivalent(region, z3.And(ranges, t_timeout > t_prop + t_flight + t_ack))
    assert not _equivalent(region, ranges)
    assert sy.region_text(cnf, result.free) == "T_timeout > T_prop + T_flight"


def test_defaults_lie_outside_the_synthesized_region(drained_synth: sy.SynthResult) -> None:
    region = sy.region_z3(sy.safe_region(drained_synth), drained_synth.ranges)
    defaults = {"T_prop": 2, "T_ack": 1, "T_flight": 33, "T_timeout": 30}
    s = z3.Solver()
    s.add(region)
    s.add(*[z3.Real(k) == v for k, v in defaults.items()])
    assert s.check() == z3.unsat


def test_prove_the_bound_and_its_tightness() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["prove", str(sglang_spec("drained_ack_or_timeout")),
                 "--assume", "T_timeout > T_prop + T_flight"], out, err)
    text = out.getvalue()
    assert code == 0, text + err.getvalue()
    assert "PROVED" in text and "tight" in text
    # the tightness witness printed is on the boundary and violated there
    tight = re.search(r"^  tight: .* at (.*)$", text, re.MULTILINE)
    assert tight is not None, text
    witness = tight.group(1)
    point = {k: Fraction(v) for k, v in (kv.split("=") for kv in witness.split(", "))}
    assert point["T_timeout"] == point["T_prop"] + point["T_flight"]
    assert check(sglang_spec("drained_ack_or_timeout"), point).verdict == "violated"

"""Each kind of property, on small specs whose answers are known by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers import check_text

from checker.api import check
from checker.engines import Options
from checker.language import load_text

RESPONSE = """
model response
param T in [0, 10] = 4
param W in [0, 10] = 5
actor client, server
var asked : bool = false
var served : bool = false
clock c
event client.ask() when not asked do asked := true; reset c
event server.serve() when asked and not served and c >= T do served := true
deadline answer: c <= T + 1 while asked and not served
property prompt: asked leadsto served within W
"""


@pytest.mark.parametrize(("w", "verdict"), [(5, "holds"), (4.5, "violated"), (6, "holds")])
def test_bounded_response_boundary(w: float, verdict: str) -> None:
    # The server answers at the latest T+1 = 5 after the request.
    o = check_text(RESPONSE, W=str(w))
    assert o.verdict == verdict
    if verdict == "violated":
        assert o.prop == "prompt"
        assert o.message == ("no response within W: server.serve(), enabled after step 1"
                             " (t=5..6), would have made the response true, but the"
                             " deadlines let it wait past the bound")


def test_response_violation_trace_ends_before_the_response() -> None:
    o = check_text(RESPONSE, W=2)
    assert o.trace is not None
    assert [s.label for s in o.trace.steps] == ["initial", "client.ask()"]
    assert o.timing_note is not None and "its bound has passed" in o.timing_note


INVARIANT = """
model inv
type N = 0..3
actor a
var n : N = 0
event a.inc() when n < 3 do n := n + 1
invariant small: n <= 2
"""


def test_invariant_violation_is_shortest() -> None:
    o = check_text(INVARIANT)
    assert o.verdict == "violated" and o.prop == "small"
    assert o.trace is not None and len(o.trace.steps) == 4


DEADLOCK = """
model stuck
actor a
var go : bool = false
clock c
event a.start() when not go do go := true; reset c
event a.finish() when go and c >= 3 do go := false
deadline hurry: c <= 2 while go
"""


def test_deadlock_when_a_deadline_blocks_time() -> None:
    o = check_text(DEADLOCK)
    assert o.verdict == "violated" and o.prop == "deadlock"
    assert o.trace is not None and [s.label for s in o.trace.steps] == ["initial", "a.start()"]
    no_dl = check(load_text(DEADLOCK, "<test>"), options=Options(deadlock=False))
    assert no_dl.verdict == "holds"


def test_no_deadlock_when_time_can_pass_for_ever() -> None:
    text = DEADLOCK.replace("deadline hurry: c <= 2 while go\n", "")
    assert check_text(text).verdict == "holds"


def test_deadlock_respects_strict_guards() -> None:
    # finish needs c > 2 but time stops at c = 2: a deadlock, exactly at the boundary.
    text = DEADLOCK.replace("c >= 3", "c > 2")
    assert check_text(text).prop == "deadlock"
    text = DEADLOCK.replace("c >= 3", "c >= 2")
    assert check_text(text).verdict == "holds"


ERROR = """
model err
type Slot = {s0}
actor a
var slot : bool -> Slot? = none
var used : Slot -> bool = false
event a.touch() when not used[s0] do used[slot[true]] := true
"""


def test_runtime_none_dereference_is_a_model_error() -> None:
    o = check_text(ERROR)
    assert o.verdict == "error"
    assert o.message is not None and "`none` dereferenced" in o.message
    assert "a.touch()" in o.message


RANGE = """
model rng
type N = 0..2
actor a
var n : N = 0
event a.inc() do n := n + 1
"""


def test_runtime_out_of_range_is_a_model_error() -> None:
    o = check_text(RANGE)
    assert o.verdict == "error"
    assert o.message is not None and "value 3 outside 0..2" in o.message
    assert o.trace is not None and len(o.trace.steps) == 3


STRICT = """
model strict
param T in [0, 10] = 3
actor a
var x : bool = false
var y : bool = false
clock c
event a.first() when not x and c < T do x := true
event a.second() when x and not y do y := true
invariant never_both_late: not (x and y)
"""


def test_strict_bounds_are_exact() -> None:
    assert check_text(STRICT).prop == "never_both_late"
    assert check_text(STRICT, T=0).verdict == "holds"  # `c < 0` never holds
    assert check_text(STRICT, T="0.001").prop == "never_both_late"


def test_deadline_closed_at_the_boundary_is_a_deadlock() -> None:
    # At c = T exactly, `c < T` no longer holds and the deadline stops time.
    text = STRICT.replace("invariant", "deadline d: c <= T while not x\ninvariant")
    assert check_text(text).prop == "deadlock"


def test_initial_state_breaking_a_deadline_is_a_model_error() -> None:
    text = STRICT.replace("invariant", "deadline d: c < T while not x\ninvariant")
    o = check_text(text, T=0)
    assert o.verdict == "error"
    assert o.message is not None and "initial state" in o.message


def test_fraction_parameters_scale_exactly() -> None:
    o = check_text(RESPONSE, T="1/3", W="4/3")
    assert o.verdict == "holds"
    assert check_text(RESPONSE, T="1/3", W="1.3").verdict == "violated"
    assert Fraction("1/3") + 1 == Fraction(4, 3)

"""`reachable` queries that test clocks: reachable exactly when some valuation of a
reachable zone satisfies them, in every explorer configuration, with a timed witness."""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers import run_cli

from checker import api
from checker.diagnostics import SpecError
from checker.engines import Options, explore
from checker.engines.search import REACHABLE, UNREACHABLE
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.model.interp import InterpretedModel

SPEC = """model q
param T in [0, 10] = 2
actor a
var x: 0..3 = 0
clock c, d
event a.e when x == 0 and c >= 1 do x := 1; reset c
event a.f when x == 1 and c >= 1 do x := 2
deadline c <= 3 while x == 1
reachable over: x == 1 and c > 3
reachable at_bound: x == 1 and c >= 3
reachable joint: x == 1 and c >= 3 and d >= 5
reachable tight: x == 1 and c >= 3 and d <= 2 + T
reachable below: x == 1 and c >= 3 and d < 2 + T
reachable either: x == 2 and (c < 1 or d > 100)
reachable never_early: x == 2 and c < 1
reachable late: x == 1 and c >= T + 1
reachable data: x == 2
"""
WANT = {"over": UNREACHABLE, "at_bound": REACHABLE, "joint": REACHABLE,
        "tight": REACHABLE, "below": UNREACHABLE, "either": REACHABLE, "never_early": UNREACHABLE,
        "late": REACHABLE, "data": REACHABLE}
"""In x == 1 the clock c runs from 0 to the deadline 3 while d = c + (the time of e, at
least 1): c reaches 3 exactly, d is then at least 4 (and unbounded above)."""

CONFIGS = [
    {}, {"symmetry": False}, {"clock_reduction": False}, {"search": "dfs"},
    {"dbm": "python"}, {"extrapolation": "m"}, {"prepass": "untimed"},
]


@pytest.mark.parametrize("opts", CONFIGS, ids=lambda o: ",".join(o) or "default")
def test_a_clock_query_is_reachable_exactly_when_a_zone_meets_it(
        opts: dict[str, object]) -> None:
    model = SpecModel(load_text(SPEC, "q.kvr"))
    res = explore(model, options=Options(deadlock=False, **opts))  # type: ignore[arg-type]
    assert res.verdict == "holds"
    assert {q.name: q.status for q in res.queries} == WANT


def test_the_bound_of_a_clock_query_may_be_a_parameter() -> None:
    # At c = 3, d = 3 + (time of e) >= 4: `d <= 2 + T` needs T >= 2.
    spec = load_text(SPEC, "q.kvr")
    for t, tight in ((2, REACHABLE), (Fraction(3, 2), UNREACHABLE), (1, UNREACHABLE)):
        got = {q.name: q.status for q in api.check(spec, {"T": t}).queries}
        assert (got["tight"], got["below"], got["over"]) == (tight, UNREACHABLE, UNREACHABLE)
    assert api.check(spec, {"T": Fraction(5, 2)}).query("below").status is REACHABLE


def test_the_witness_is_timed_to_an_instant_where_the_query_holds() -> None:
    out = api.check(load_text(SPEC, "q.kvr"))
    joint = out.query("joint")
    assert joint.trace is not None and joint.timing_note == "`joint` holds at t=5"
    assert [s.time for s in joint.trace.steps] == [0, 2]  # e at t=2: c = 3 and d = 5 at t=5
    either = out.query("either")
    assert either.timing_note == "`either` holds at t=101"
    data = out.query("data")
    assert data.timing_note is None


def test_check_prints_the_witness_and_its_instant(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "q.kvr"
    path.write_text(SPEC, encoding="utf-8")
    code, out, err = run_cli("check", str(path), "--query", "joint")
    assert (code, err) == (0, "")
    assert "  (`joint` holds at t=5)\n" in out
    code, out, _ = run_cli("check", str(path), "--query", "over")
    assert code == 5
    assert "no reachable state satisfies `x == 1 and c > 3`" in out


def test_the_interpreter_gives_the_compiled_models_parts() -> None:
    spec = load_text(SPEC, "q.kvr")
    compiled, interp = SpecModel(spec), InterpretedModel(spec, {"T": Fraction(2)})
    s = (2,)
    for model in (compiled, interp):
        got = {m.query: [[(model.clock_names[a.clock], a.op.value,
                           model.bounds[a.bound].evaluate(model.values)) for a in p]
                          for p in m.parts] for m in model.queries(s)}
        assert got == {5: [[("c", "<", 1)], [("d", ">", 100)]], 6: [[("c", "<", 1)]],
                       8: [[]]}


def test_a_clock_that_only_a_query_reads_stays_live() -> None:
    # d is read by no guard or deadline: without the query it is dead everywhere.
    text = ("model live\nactor a\nvar x: 0..1 = 0\nclock c, d\n"
            "event a.e when x == 0 and c >= 1 do x := 1; reset c\n"
            "reachable apart: x == 1 and d >= c + 0 and d >= 7 and c <= 2\n")
    with pytest.raises(SpecError):
        load_text(text, "l.kvr")  # a clock stands alone: `d >= c + 0` is refused
    text = text.replace("d >= c + 0 and ", "")
    for opts in ({}, {"clock_reduction": False}):
        res = explore(SpecModel(load_text(text, "l.kvr")),
                      options=Options(**opts))  # type: ignore[arg-type]
        assert [(q.name, q.status) for q in res.queries] == [("apart", REACHABLE)]


def test_a_clock_query_with_not_equal_is_refused() -> None:
    with pytest.raises(SpecError) as exc:
        load_text("model m\nactor a\nclock c\nreachable r: c != 5\n", "m.kvr")
    d = exc.value.diagnostics[0]
    assert (d.code, d.message) == ("KVR207", "`!=` on a clock is not convex")

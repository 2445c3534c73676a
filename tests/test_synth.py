"""Parametric synthesis (``checker.smt.synth``): exact safe regions, checked by Z3
equivalence and cross-checked point by point against the zone explorer.

* the flagship: deferred_release is safe exactly when
  ``T_hold > T_prop + T_chunk + T_flight`` (within the declared ranges), and
  immediate_release is never safe;
* a few hundred deterministic parameter points, on both sides of the synthesized
  boundary and exactly on it, each checked by ``checker.api.check`` at those values;
* small hand-written parametric specs with a known exact region;
* ``trace_region`` (what ``check --explain`` prints): the region of the deferred
  counterexample, and its agreement with ``timestamps``.

The deferred_release synthesis (about a second) runs once per session:
:func:`deferred_synth` is cached, and ``tests/test_prove_cli.py`` reuses it.
"""

from __future__ import annotations

import functools
import io
import random
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction

import pytest
import z3
from helpers import ROOT

from checker.api import check
from checker.cli import main
from checker.language import load, load_text
from checker.language.assume import parse_assumption
from checker.model.compiled import SpecModel
from checker.smt.synth import (
    SynthResult,
    explore_parametric,
    region_text,
    region_z3,
    safe_region,
    trace_region,
)
from checker.smt.timing import TraceShape, timestamps

IMMEDIATE = ROOT / "spec/sglang/immediate_release.kvr"
DEFERRED = ROOT / "spec/sglang/deferred_release.kvr"
FREE = ["T_prop", "T_chunk", "T_flight", "T_hold"]

R = {p: z3.Real(p) for p in [*FREE, "T_timeout", "T_write", "A", "B", "D", "D_max", "T",
                              "T_a", "T_b"]}


# ---- Z3 helpers ---------------------------------------------------------------------------

def equivalent(a: z3.BoolRef, b: z3.BoolRef) -> bool:
    """Whether two formulas are equivalent (Z3 must decide)."""
    s = z3.Solver()
    s.set("timeout", 20_000)
    s.add(a != b)
    got = s.check()
    assert got != z3.unknown, "z3 could not decide an equivalence"
    return bool(got == z3.unsat)


def satisfiable(a: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(a)
    got = s.check()
    assert got != z3.unknown
    return bool(got == z3.sat)


def member(region: z3.BoolRef, point: Mapping[str, Fraction]) -> bool:
    """Whether a concrete point lies in a Z3 region (by substitution, no solving)."""
    subst = [(z3.Real(p), z3.RealVal(str(v))) for p, v in point.items()]
    got = z3.simplify(z3.substitute(region, *subst))
    assert z3.is_true(got) or z3.is_false(got), f"{got} is not closed at {point}"
    return bool(z3.is_true(got))


def q(x: Fraction | int) -> z3.ArithRef:
    return z3.RealVal(str(Fraction(x)))


def in_range(name: str, lo: Fraction | int, hi: Fraction | int, lo_open: bool = False,
             hi_open: bool = False) -> z3.BoolRef:
    v = R[name]
    return z3.And(v > q(lo) if lo_open else v >= q(lo), v < q(hi) if hi_open else v <= q(hi))


DEFERRED_RANGES = z3.And(
    in_range("T_prop", 0, 10), in_range("T_chunk", 0, 10), in_range("T_flight", 0, 10, True),
    in_range("T_hold", 0, 40),
)
DEFERRED_SAFE = z3.And(
    DEFERRED_RANGES, R["T_hold"] > R["T_prop"] + R["T_chunk"] + R["T_flight"]
)
IMMEDIATE_RANGES = z3.And(
    in_range("T_prop", 0, 10), in_range("T_chunk", 0, 10), in_range("T_flight", 0, 10, True)
)


def assumption_z3(text: str, params: Sequence[str]) -> z3.BoolRef:
    """Constraint text (as printed by kvrace) parsed back into a Z3 formula."""
    parts = []
    for (coefs, const), op in parse_assumption(text, params):
        term = q(const) + z3.Sum([q(a) * z3.Real(p) for p, a in coefs.items()] or [q(0)])
        parts.append({"<": term < 0, "<=": term <= 0, ">": term > 0, ">=": term >= 0,
                      "==": term == 0}[op])
    return z3.And(*parts)


# ---- the flagship synthesis (once per session) ---------------------------------------------

@functools.cache
def deferred_synth() -> SynthResult:
    """``explore_parametric`` of deferred_release over every parameter (cached)."""
    return explore_parametric(SpecModel(load(DEFERRED)), FREE)


@pytest.fixture(scope="module")
def deferred() -> SynthResult:
    return deferred_synth()


@pytest.fixture(scope="module")
def deferred_region(deferred: SynthResult) -> z3.BoolRef:
    return region_z3(safe_region(deferred), deferred.ranges)


def test_deferred_synthesis_is_complete_and_exact(deferred: SynthResult,
                                                  deferred_region: z3.BoolRef) -> None:
    assert deferred.complete, deferred.limit
    assert deferred.limit is None
    assert deferred.free == FREE
    assert deferred.bad.pieces, "the bad region is not empty"
    assert set(deferred.properties.values()) == {"assert"}
    assert equivalent(region_z3([], deferred.ranges), DEFERRED_RANGES)
    assert equivalent(deferred_region, DEFERRED_SAFE)
    # Strictness matters: the boundary itself is unsafe.
    assert not equivalent(deferred_region, z3.And(
        DEFERRED_RANGES, R["T_hold"] >= R["T_prop"] + R["T_chunk"] + R["T_flight"]))


def test_deferred_bad_region_is_the_complement(deferred: SynthResult) -> None:
    bad = z3.Or(*[region_z3([[c] for c in piece], []) for piece in deferred.bad.pieces])
    assert equivalent(z3.And(DEFERRED_RANGES, bad),
                      z3.And(DEFERRED_RANGES, z3.Not(DEFERRED_SAFE)))


def test_immediate_release_is_never_safe() -> None:
    result = explore_parametric(SpecModel(load(IMMEDIATE)), ["T_prop", "T_chunk", "T_flight"])
    assert result.complete
    cnf = safe_region(result)
    region = region_z3(cnf, result.ranges)
    assert satisfiable(IMMEDIATE_RANGES)  # the ranges themselves are not empty
    assert equivalent(region_z3([], result.ranges), IMMEDIATE_RANGES)
    assert not satisfiable(region)
    assert region_text(cnf) == "false"
    # ... and every point of the ranges (T_flight > 0) is bad.
    bad = z3.Or(*[region_z3([[c] for c in piece], []) for piece in result.bad.pieces])
    assert equivalent(z3.And(IMMEDIATE_RANGES, bad), IMMEDIATE_RANGES)


# ---- cross-check: the synthesized region against the zone explorer -------------------------

def deferred_points() -> list[dict[str, Fraction]]:
    """Deterministic points: random ones inside the ranges (small denominators), and
    points exactly on the boundary T_hold = T_prop + T_chunk + T_flight and just either
    side of it."""
    r = random.Random(1729)

    def rat(lo: int, hi: int, positive: bool = False) -> Fraction:
        while True:
            den = r.choice([1, 1, 2, 3, 4, 5, 10])
            x = Fraction(r.randint(lo * den, hi * den), den)
            if not positive or x > 0:
                return x

    points: list[dict[str, Fraction]] = []
    for _ in range(80):  # anywhere in the ranges
        points.append({"T_prop": rat(0, 10), "T_chunk": rat(0, 10),
                       "T_flight": rat(0, 10, True), "T_hold": rat(0, 40)})
    for _ in range(50):  # on the boundary and just either side of it
        base = {"T_prop": rat(0, 6), "T_chunk": rat(0, 6), "T_flight": rat(0, 6, True)}
        window = sum(base.values(), Fraction(0))
        eps = r.choice([Fraction(1, 100), Fraction(1, 3), Fraction(1, 1000)])
        points.append({**base, "T_hold": window})
        points.append({**base, "T_hold": window + eps})
        if window - eps >= 0:
            points.append({**base, "T_hold": window - eps})
    # Corners of the ranges.
    points.append({"T_prop": Fraction(0), "T_chunk": Fraction(0), "T_flight": Fraction(1, 10),
                   "T_hold": Fraction(0)})
    points.append({"T_prop": Fraction(0), "T_chunk": Fraction(0), "T_flight": Fraction(1, 10),
                   "T_hold": Fraction(1, 5)})
    points.append({"T_prop": Fraction(10), "T_chunk": Fraction(10), "T_flight": Fraction(10),
                   "T_hold": Fraction(30)})
    points.append({"T_prop": Fraction(10), "T_chunk": Fraction(10), "T_flight": Fraction(10),
                   "T_hold": Fraction(40)})
    return points


@pytest.mark.slow
def test_region_agrees_with_the_zone_explorer(deferred_region: z3.BoolRef) -> None:
    points = deferred_points()
    assert len(points) >= 200
    inside = 0
    on_boundary = 0
    spec = load(DEFERRED)
    for point in points:
        safe = member(deferred_region, point)
        # The expected region and the synthesized one agree here (sanity of both).
        assert safe == member(DEFERRED_SAFE, point)
        outcome = check(spec, point, timestamps=False)
        assert outcome.verdict in ("holds", "violated"), outcome.summary()
        assert (outcome.verdict == "holds") == safe, (
            f"at {point}: the region says {'safe' if safe else 'unsafe'}, the explorer"
            f" says {outcome.summary()}"
        )
        if outcome.verdict == "violated":
            assert outcome.prop == "assert"
        inside += safe
        on_boundary += point["T_hold"] == point["T_prop"] + point["T_chunk"] + point["T_flight"]
    assert 60 <= inside <= len(points) - 60, f"{inside} of {len(points)} points are safe"
    assert on_boundary >= 50


def test_region_agrees_with_the_explorer_given_a_path() -> None:
    # The same through the path-taking form of the API, on a few boundary points.
    for point in ({"T_hold": 7}, {"T_hold": Fraction(71, 10)}, {"T_hold": Fraction(7000001, 10**6)},
                  {"T_prop": 1, "T_hold": 6}, {"T_prop": 1, "T_hold": Fraction(61, 10)}):
        values = {"T_prop": 2, "T_chunk": 2, "T_flight": 3, **point}
        safe = values["T_hold"] > values["T_prop"] + values["T_chunk"] + values["T_flight"]
        outcome = check(DEFERRED, point)  # type: ignore[arg-type]
        assert outcome.verdict == ("holds" if safe else "violated"), (point, outcome.summary())


# ---- small hand-written parametric specs with a known exact region -------------------------

TIMEOUT_RACE = """model timeout_race
actor writer, owner
param T_write in (0, 10] = 3
param T_timeout in [0, 20] = 5
var state : {posted, landed} = posted
var freed : bool = false
clock x
event writer.land() when state == posted
  do state := landed; assert not freed : "late write"
deadline x <= T_write while state == posted
event owner.timeout() when not freed and state == posted and x >= T_timeout do freed := true
"""

STRICT_WINDOW = """model strict_window
actor a
param A in [0, 10] = 2
param B in [0, 10] = 5
var ph : {s0, s1} = s0
clock x
event a.bad() when ph == s0 and x > B and x < A do ph := s1
invariant ok: ph == s0
"""

RESPONSE = """model response
actor a
param D in [0, 5] = 1
param D_max in [5, 10] = 6
param T in [0, 20] = 8
var req : bool = false
var ack : bool = false
clock x
event a.ask() when not req do req := true; reset x
event a.answer() when req and not ack and x >= D do ack := true
deadline x <= D_max while req and not ack
property p: req leadsto ack within T
"""

RELAY = """model relay
actor a, b
param T_a in [0, 5] = 1
param T_b in [0, 5] = 1
param T_hold in [0, 20] = 3
var ph : {idle, sent, relayed, arrived} = idle
var freed : bool = false
clock x, y
event a.send() when ph == idle do ph := sent; reset x, y
event b.relay() when ph == sent do ph := relayed; reset x
deadline x <= T_a while ph == sent
event b.arrive() when ph == relayed do ph := arrived; assert not freed : "arrived after free"
deadline x <= T_b while ph == relayed
event a.free() when ph != idle and not freed and y >= T_hold do freed := true
"""

SMALL: dict[str, tuple[str, z3.BoolRef, z3.BoolRef]] = {
    # name: (spec, ranges, exact safe region within the ranges)
    "timeout-race": (TIMEOUT_RACE,
                     z3.And(in_range("T_write", 0, 10, True), in_range("T_timeout", 0, 20)),
                     R["T_timeout"] > R["T_write"]),
    "strict-window": (STRICT_WINDOW, z3.And(in_range("A", 0, 10), in_range("B", 0, 10)),
                      R["A"] <= R["B"]),
    "response": (RESPONSE,
                 z3.And(in_range("D", 0, 5), in_range("D_max", 5, 10), in_range("T", 0, 20)),
                 R["D_max"] <= R["T"]),
    "relay": (RELAY,
              z3.And(in_range("T_a", 0, 5), in_range("T_b", 0, 5), in_range("T_hold", 0, 20)),
              R["T_hold"] > R["T_a"] + R["T_b"]),
}


def small_points(spec_text: str, r: random.Random, n: int) -> list[dict[str, Fraction]]:
    """``n`` random points inside the declared ranges (small denominators)."""
    spec = load_text(spec_text)
    out = []
    while len(out) < n:
        point = {}
        for p in spec.params:
            assert p.lo is not None and p.hi is not None
            den = r.choice([1, 2, 3, 4, 10])
            x = Fraction(r.randint(int(p.lo * den), int(p.hi * den)), den)
            point[p.name] = x
        if all(p.contains(point[p.name]) for p in spec.params):
            out.append(point)
    return out


def boundary_points(name: str) -> list[dict[str, Fraction]]:
    """Points exactly on each small spec's boundary and just either side of it."""
    F = Fraction
    if name == "timeout-race":
        return [{"T_write": w, "T_timeout": w + d} for w in (F(1, 3), F(3), F(10))
                for d in (F(0), F(1, 100), F(-1, 100))]
    if name == "strict-window":
        return [{"A": a, "B": a + d} for a in (F(0), F(5, 2), F(9)) for d in (F(0), F(1, 10))] \
            + [{"A": F(5, 2), "B": F(5, 2) - F(1, 10)}]
    if name == "response":
        return [{"D": F(1), "D_max": m, "T": m + d} for m in (F(5), F(13, 2), F(10))
                for d in (F(0), F(1, 100), F(-1, 100))]
    return [{"T_a": a, "T_b": b, "T_hold": a + b + d} for a, b in ((F(0), F(1, 3)), (F(2), F(3)))
            for d in (F(0), F(1, 100), F(-1, 100))]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_spec_synthesis_is_exact(name: str) -> None:
    text, ranges, safe = SMALL[name]
    spec = load_text(text, f"<{name}>")
    free = [p.name for p in spec.params]
    result = explore_parametric(SpecModel(spec), free)
    assert result.complete
    region = region_z3(safe_region(result), result.ranges)
    assert equivalent(region_z3([], result.ranges), ranges)
    assert equivalent(region, z3.And(ranges, safe)), region_text(safe_region(result), free)
    # Cross-check with the zone explorer at >= 30 points, boundary points included.
    points = small_points(text, random.Random(name), 30) + boundary_points(name)
    verdicts = set()
    for point in points:
        expected = member(z3.And(ranges, safe), point)
        assert member(region, point) == expected
        outcome = check(spec, point, timestamps=False)
        verdicts.add(outcome.verdict)
        assert outcome.verdict == ("holds" if expected else "violated"), (
            f"{name} at {point}: region says {'safe' if expected else 'unsafe'},"
            f" the explorer: {outcome.summary()}"
        )
    assert verdicts == {"holds", "violated"}


def test_synthesis_over_a_subset_of_the_parameters() -> None:
    # Fixed parameters are substituted: relay with T_a = 1, T_b = 2 over T_hold only.
    spec = load_text(RELAY)
    result = explore_parametric(SpecModel(spec, {"T_a": Fraction(1), "T_b": Fraction(2)}),
                                ["T_hold"])
    assert result.complete
    region = region_z3(safe_region(result), result.ranges)
    assert equivalent(region, z3.And(in_range("T_hold", 0, 20), R["T_hold"] > 3))


def test_synthesis_limits_are_inconclusive() -> None:
    spec = load_text(RELAY)
    result = explore_parametric(SpecModel(spec), ["T_a", "T_b", "T_hold"], max_states=2)
    assert not result.complete
    assert result.limit is not None and "limit" in result.limit


# ---- trace_region: the region `check --explain` prints --------------------------------------

def shape_of(outcome) -> tuple[SpecModel, TraceShape]:
    model, result = outcome.raw
    states = [s.state for s in result.trace]
    edges = [s.edge for s in result.trace[1:]]
    hazard = ()
    for h in model.hazards(states[-1]):
        if h.property == result.prop:
            hazard = h.atoms
    return model, TraceShape(states, edges, hazard)


def lins_z3(lins) -> z3.BoolRef:
    return region_z3([[c] for c in lins], [])


@pytest.mark.parametrize(
    ("params", "window"),
    # Both shortest traces found post the chunk after prefill learned of the abort,
    # so the sequence needs the whole window (a post before learning needs only
    # T_prop + T_flight: see test_trace_region_of_a_post_before_learning).
    [({"T_hold": 7}, R["T_prop"] + R["T_chunk"] + R["T_flight"]),
     ({"T_hold": 4, "T_prop": 1}, R["T_prop"] + R["T_chunk"] + R["T_flight"])],
    ids=["hold7", "hold4-prop1"],
)
def test_trace_region_of_the_deferred_counterexample(params: dict[str, int],
                                                     window: z3.ArithRef) -> None:
    outcome = check(DEFERRED, params)  # type: ignore[arg-type]
    assert outcome.verdict == "violated"
    model, shape = shape_of(outcome)
    region = trace_region(model, shape, FREE)
    assert equivalent(z3.And(DEFERRED_RANGES, lins_z3(region)),
                      z3.And(DEFERRED_RANGES, R["T_hold"] <= window))


def test_trace_region_of_a_post_before_learning() -> None:
    """The run in which prefill posts the chunk after the abort but before it learns
    of it (allocate, abort, post, learn, release, allocate B, land) is feasible
    exactly when T_hold <= T_prop + T_flight."""
    model = SpecModel(load(DEFERRED))
    labels = ["decode.allocate(A, s0)", "router.abort(A)", "prefill.post(A, 0)",
              "prefill.learn_abort(A)", "decode.release(A)", "decode.allocate(B, s0)",
              "decode.land(A, 0)"]
    s = model.initial_states()[0]
    states, edges = [s], []
    for label in labels:
        (e,) = [e for e in model.edges(s) if model.event_names[e.event] == label]
        edges.append(e)
        s = e.target
        states.append(s)
    region = trace_region(model, TraceShape(states, edges, ()), FREE)
    assert equivalent(z3.And(DEFERRED_RANGES, lins_z3(region)),
                      z3.And(DEFERRED_RANGES, R["T_hold"] <= R["T_prop"] + R["T_flight"]))


def test_check_explain_prints_the_trace_region() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", str(DEFERRED), "-p", "T_hold=7", "--explain"], out, err)
    assert code == 1, err.getvalue()
    m = re.search(r"this sequence of events is possible exactly when: (.*)", out.getvalue())
    assert m is not None, out.getvalue()
    printed = assumption_z3(m.group(1), FREE)
    assert equivalent(z3.And(DEFERRED_RANGES, printed), z3.And(
        DEFERRED_RANGES, R["T_hold"] <= R["T_prop"] + R["T_chunk"] + R["T_flight"]))


def test_trace_region_agrees_with_timestamps() -> None:
    # The deferred trace at T_hold=7 can be timed exactly at the points of its region:
    # timestamps() finds times inside it and reports the trace infeasible outside it.
    outcome = check(DEFERRED, T_hold=7)
    model, shape = shape_of(outcome)
    region = z3.And(DEFERRED_RANGES, lins_z3(trace_region(model, shape, FREE)))
    seen = {True: 0, False: 0}
    for point in deferred_points()[:60:3] + [
        {"T_prop": Fraction(2), "T_chunk": Fraction(2), "T_flight": Fraction(3),
         "T_hold": h} for h in (Fraction(7), Fraction(7, 1) + Fraction(1, 1000))
    ]:
        feasible = member(region, point)
        seen[feasible] += 1
        if feasible:
            timestamps(model, point, shape)
        else:
            with pytest.raises(ValueError):
                timestamps(model, point, shape)
    assert seen[True] >= 3 and seen[False] >= 3


def test_trace_region_of_small_counterexamples() -> None:
    cases = [
        (TIMEOUT_RACE, {"T_timeout": 2}, R["T_timeout"] <= R["T_write"]),
        (STRICT_WINDOW, {"A": 6}, R["B"] < R["A"]),
        (RESPONSE, {"T": 2}, R["T"] < R["D_max"]),
        (RELAY, {"T_hold": 2}, R["T_hold"] <= R["T_a"] + R["T_b"]),
    ]
    for text, params, expected in cases:
        spec = load_text(text)
        outcome = check(spec, params)  # type: ignore[arg-type]
        assert outcome.verdict == "violated", (spec.name, outcome.summary())
        model, shape = shape_of(outcome)
        free = [p.name for p in spec.params]
        got = lins_z3(trace_region(model, shape, free))
        ranges = SMALL[{"timeout_race": "timeout-race", "strict_window": "strict-window",
                        "response": "response", "relay": "relay"}[spec.name]][1]
        assert equivalent(z3.And(ranges, got), z3.And(ranges, expected)), spec.name

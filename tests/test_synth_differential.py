"""Differential tests of synthesis: the synthesized region against the zone explorer.

Random small models with timing parameters in guards, deadlines and response
bounds; for each, ``synth`` (deadlock freedom included) gives a region, and at
many rational points of the ranges — on the grid where the region's boundaries
lie — ``check`` must say HOLDS exactly inside the region, and find a violation
(or a model error, for a time-locked start) exactly outside it.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from checker.engines import Limits, Options, explore
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt.poly import Lin
from checker.smt.synth import (
    Region,
    SynthResult,
    Target,
    TargetKind,
    explore_parametric,
    reach_region,
    safe_region,
    same_safe_values,
)

pytestmark = pytest.mark.slow

PARAMS = ("A", "B")


def render(r: random.Random) -> str:
    """One random model over parameters A and B."""
    lo = r.choice(["[0", "(0"])
    lines = ["model synthrand",
             f"param A in [0, {r.choice([3, 4])}] = 1",
             f"param B in {lo}, {r.choice([3, 4])}] = 2",
             "actor p, q",
              "var ph : {s0, s1, s2, s3} = s0",
              "var n : 0..2 = 0",
              "clock x, y"]
    bounds = ["A", "B", "1", "2", "A + 1", "B - 1", "A + B", "2 * A"]

    def bound() -> str:
        return r.choice(bounds)

    def clock_atom() -> str:
        return f"{r.choice(['x', 'y'])} {r.choice(['<=', '>=', '<', '>'])} {bound()}"

    phases = ["s0", "s1", "s2", "s3"]
    for i in range(r.randint(3, 5)):
        src, dst = r.choice(phases), r.choice(phases)
        actor = r.choice(["p", "q"])
        guard = f"ph == {src}"
        for _ in range(r.randint(0, 2)):
            guard += f" {r.choice(['and', 'and', 'or'])} {clock_atom()}"
        body = [f"ph := {dst}"]
        if r.random() < 0.5:
            body.append(f"reset {r.choice(['x', 'y'])}")
        if r.random() < 0.3:
            body.append("if n < 2 { n := n + 1 }")
        if r.random() < 0.25:
            body.append(f'assert n < 2 or ph != {r.choice(phases)} : "bad"')
        lines.append(f"event {actor}.e{i}() when {guard} do " + "; ".join(body))
    for j in range(r.randint(1, 2)):
        lines.append(f"deadline d{j}: {r.choice(['x', 'y'])} <= {bound()}"
                     f" while ph == {r.choice(phases)}")
    if r.random() < 0.4:
        lines.append(f"property resp: ph == {r.choice(phases)} leadsto"
                     f" ph == {r.choice(phases)} within {bound()}")
    return "\n".join(lines) + "\n"


def inside(cnf: list[list[Lin]], point: dict[str, Fraction]) -> bool:
    def holds(c: Lin) -> bool:
        total = c.const + sum((a * point[v.removeprefix("p:")] for v, a in c.coefs),
                              Fraction(0))
        return total < 0 if c.strict else total <= 0
    return all(any(holds(c) for c in clause) for clause in cnf)


def grid(model: SpecModel, r: random.Random, n: int) -> list[dict[str, Fraction]]:
    points = []
    for _ in range(n):
        point = {}
        for name in PARAMS:
            p = model.params[name]
            assert p.lo is not None and p.hi is not None
            while True:
                v = Fraction(r.randint(int(p.lo) * 2, int(p.hi) * 2), 2)
                if p.contains(v):
                    break
            point[name] = v
        points.append(point)
    return points


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_synthesized_region_agrees_with_the_explorer(seed: int) -> None:
    r = random.Random(seed)
    text = render(r)
    spec = load_text(text, "<synthrand>")
    base = SpecModel(spec)
    result = explore_parametric(base, PARAMS, max_states=500, timeout=20)
    if not result.complete:
        pytest.skip("parametric exploration did not finish")
    cnf = safe_region(result)
    for point in grid(base, r, 12):
        res = explore(SpecModel(spec, point), Limits(max_states=50_000),
                      Options(deadlock=True))
        assert res.verdict != "inconclusive"
        want = inside(cnf, point)
        got = res.verdict == "holds"
        assert got == want, (
            f"at {point}: synth says {'safe' if want else 'unsafe'}, check says"
            f" {res.verdict} {res.prop} {res.message}\n{text}")


# ---- the solver-free shortcuts change nothing ----------------------------------------------

def _plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every query to Z3: no shortcut, coverage by one query with disjunctions."""
    from checker.smt import quick, synth

    monkeypatch.setattr(quick.Shortcuts, "decide", lambda self, cons, new=(): None)
    monkeypatch.setattr(synth, "COVER_SPLIT_PIECES", 0)


@pytest.mark.parametrize("seed", range(40, 70))
def test_shortcuts_leave_the_synthesis_unchanged(seed: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The exploration takes the same decisions with or without the shortcuts (they
    # are exact), so the bad pieces come out identical, constraint for constraint.
    text = render(random.Random(seed))
    model = SpecModel(load_text(text, "<synthrand>"))
    fast = explore_parametric(model, PARAMS, max_states=150, timeout=3)
    with monkeypatch.context() as m:
        _plain(m)
        plain = explore_parametric(model, PARAMS, max_states=150, timeout=3)
    if "time" in f"{fast.limit} {plain.limit}":
        pytest.skip("a time limit makes the two runs incomparable")
    assert (fast.complete, fast.limit) == (plain.complete, plain.limit)
    assert fast.bad.pieces == plain.bad.pieces, text
    assert fast.properties == plain.properties
    assert fast.stats.symbolic_states == plain.stats.symbolic_states
    assert fast.stats.queries <= plain.stats.queries


# ---- `assume` constraints: the region inside them, unchanged --------------------------------

ASSUMES = ("B > A", "A + B <= 4", "2 * A <= B", "A < B and A > 1/2", "B - A >= 1 and A <= 2",
           "A == 1")
"""Constraints the defaults (A = 1, B = 2) satisfy."""


@pytest.mark.parametrize("seed", range(100, 115))
def test_assume_constraints_leave_the_region_inside_them_unchanged(seed: int) -> None:
    # Exploring only inside the constraints finds exactly the bad values inside them
    # that exploring the whole box finds; and the explorer agrees at points inside.
    r = random.Random(seed)
    text = render(r)
    assume = r.choice(ASSUMES)
    lines = text.splitlines()
    lines.insert(3, f"assume {assume}")
    constrained = "\n".join(lines) + "\n"
    spec = load_text(constrained, "<synthrand>")
    model = SpecModel(spec, concrete=False)
    with_it = explore_parametric(model, PARAMS, max_states=500, timeout=20)
    without = explore_parametric(SpecModel(load_text(text, "<synthrand>")), PARAMS,
                                 max_states=500, timeout=20)
    if not (with_it.complete and without.complete):
        pytest.skip("parametric exploration did not finish")
    assert same_safe_values(with_it, without, with_it.ranges), constrained
    assert with_it.stats.symbolic_states <= without.stats.symbolic_states
    cnf = safe_region(with_it)
    for point in grid(model, r, 12):
        if not all(c.holds(point) for c in spec.assumes):
            continue
        res = explore(SpecModel(spec, point), Limits(max_states=50_000),
                      Options(deadlock=True))
        assert (res.verdict == "holds") == inside(cnf, point), (point, constrained)


# ---- per-property synthesis and reachability synthesis --------------------------------------

def _with_properties(r: random.Random) -> str:
    """A random model with an invariant and a query besides its other properties."""
    text = render(r)
    phases = ["s0", "s1", "s2", "s3"]
    return (text + f"invariant inv: ph != {r.choice(phases[1:])} or n < 2\n"
            f"reachable q: ph == {r.choice(phases[1:])}\n")


@pytest.mark.parametrize("seed", range(137, 145))
def test_per_property_regions_intersect_to_the_region(seed: int) -> None:
    # Every property's bad values, each found by its own exploration (which explores on
    # past the other properties' violations), make up the bad values of all of them.
    r = random.Random(seed)
    text = _with_properties(r)
    spec = load_text(text, "<synthrand>")
    model = SpecModel(spec)
    every = explore_parametric(model, PARAMS, max_states=500, timeout=20)
    names = ["inv", "deadlock", "assert", *(p.name for p in spec.responses)]
    parts = [explore_parametric(model, PARAMS, max_states=500, timeout=20,
                                target=Target(TargetKind.PROPERTY, n)) for n in names]
    if not every.complete or not all(p.complete for p in parts):
        pytest.skip("parametric exploration did not finish")
    union = SynthResult(True, every.free, every.ranges,
                        Region([c for p in parts for c in p.bad.pieces]), every.stats)
    assert same_safe_values(every, union), text


@pytest.mark.parametrize("seed", range(160, 178))
def test_query_region_agrees_with_the_explorer(seed: int) -> None:
    # The values for which `reachable q` is reachable, against the zone explorer's
    # answer for the query at grid points.
    r = random.Random(seed)
    text = _with_properties(r)
    spec = load_text(text, "<synthrand>")
    model = SpecModel(spec)
    result = explore_parametric(model, PARAMS, max_states=500, timeout=20,
                                target=Target(TargetKind.QUERY, "q"))
    if not result.complete:
        pytest.skip("parametric exploration did not finish")
    dnf = reach_region(result)
    for point in grid(model, r, 12):
        res = explore(SpecModel(spec, point), Limits(max_states=50_000),
                      Options(deadlock=False, query="q"))
        status = res.queries[0].status
        want = any(inside([[c] for c in piece], point) for piece in dnf)
        if res.verdict == "error":
            # A time-locked start: no run at all, so nothing is reachable.
            assert "time cannot even start" in str(res.message) and not want, (point, text)
            continue
        assert status in ("reachable", "unreachable"), status
        assert (status == "reachable") == want, (point, status, text)

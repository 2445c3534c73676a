"""The random model generator (tests/modelgen.py): well-formed, deterministic, closed clocks,
and a feature counter that sees what a model uses."""

from __future__ import annotations

import pytest
from modelgen import FEATURES, features, model_for_seed

from checker.diagnostics import SpecError
from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.model.interface import GE, LE

ELABORATION_SEEDS = range(300, 550)
"""Seeds beyond those the differential tests run (which elaborate 0..299 themselves)."""


@pytest.mark.slow
def test_consecutive_seeds_all_elaborate() -> None:
    # A generated model that fails to elaborate is a generator bug.
    broken: list[str] = []
    for seed in ELABORATION_SEEDS:
        text = model_for_seed(seed)
        try:
            load_text(text, f"<seed {seed}>")
        except SpecError as err:
            broken.append(f"seed {seed}:\n{text}\n{err}")
    assert not broken, f"{len(broken)} generated models do not elaborate; the first:\n" \
        + broken[0]


def test_the_same_seed_gives_the_same_model() -> None:
    assert model_for_seed(7) == model_for_seed(7)
    assert len({model_for_seed(s) for s in range(50)}) == 50


@pytest.mark.slow
def test_clock_constraints_are_closed_with_integer_bounds() -> None:
    # What the integer-time reference explorer needs to judge a model exactly.
    for seed in range(150):
        spec = load_text(model_for_seed(seed), f"<seed {seed}>")
        for ev in spec.events:
            for br in ev.branches:
                assert all(ct.op in (LE, GE) for ct in br.clocks), f"seed {seed}: {ev.name}"
        for dl in spec.deadlines:
            assert all(ct.op == LE for ct in dl.atoms), f"seed {seed}: {dl.name}"
        try:
            model = SpecModel(spec)
        except Exception:  # KB5: a clock index computed at build time may fault
            continue
        for b in model.bounds:
            v = b.evaluate(model.values)
            assert v.denominator == 1 and 0 <= v <= 5, f"seed {seed}: bound {b} = {v}"


FULL = """model full
type K = {ku, kv}
symmetric type P = {p0, p1}
type R = 0..1
param T0 in (0, 4] = 1.5
param T1 in [0, 4] = 2
actor a0, a1
var ph : {s0, s1} = s0
var o : P? = none
var f : P -> bool = false
var g : bool -> R = 0
var n : R = 0
clock c : bool
clock x
event a0.go(i: P)
  when (o == none or (f[o] and x >= 2 * T0)) and (ph == s0) and (x <= T1)
  do o := i; reset c[forall q: P . f[q]]
     if n < 1 { n := n + 1 } else { g[ph in {s1}] := 1 - n }
     assert exists q: K . g[q == ku] == 0 : "n is {n}, o is {o}"
committed event a1.tidy when n == 2 do n := 1
event a1.back(i: P) receives a0.go(i)
  when (f[i] => c[ph in {s0}] >= 1) or (exists q: P . c[f[q]] >= T1)
  do o := none; ph := s1; for k: K { skip }
deadline dl(d: bool): c[d] <= 3 and x <= T1 + 1 while n >= 1 and not (o == none => f[o])
invariant inv(j: P): not (o == j and f[j] and n == 2)
property resp(j: P): o == j leadsto o == none within T1
reachable late: n >= 1 and (x >= 3 or c[true] >= T1)
reachable back: ph == s1
"""


def test_features_of_a_model_that_uses_everything() -> None:
    got = features(FULL)
    missing = [f for f in FEATURES if not got[f]]
    assert missing == ["clock index: =>", "map index: quantifier", "map index: arithmetic",
                       "guard: data or clock", "guard: clock and data"], missing
    assert got["guard: several branches"] == 2  # go: one per side of `or`; back: 1 + 2
    # clock atoms with a parameter in the bound, per convex branch: go 2 * T0 and x <= T1
    # twice, back c[...] >= T1 in both branches of `exists`, the deadline's T1 + 1, and
    # the query's c[true] >= T1
    assert got["param in clock bound"] == 7
    assert (got["reachable: clock atom"], got["reachable: data"]) == (1, 1)


def test_features_of_a_minimal_model() -> None:
    got = features("model m\nactor a\nvar b : bool = false\nevent a.go() do b := true\n")
    assert set(got) == set(), got

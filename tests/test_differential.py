"""Differential tests: the zone explorer against the integer-time reference.

For closed clock constraints (``<=``, ``>=``, ``==``) with integer constants,
integer time and dense time reach the same discrete states and break the same
asserts, invariants and bounded-response properties (digitisation), so the two
engines must agree.  Deadlock is the exception in one direction: a dense-time
deadlock may need clock values between integers (see HALF in this file), so a
deadlock the zone explorer reports and integer time does not see is accepted
only once it is confirmed on a finer grid along the explorer's own trace.

Every verdict of the zone explorer is also checked on its own: its trace must
be a run of the model in integer time (a grid for deadlocks) that ends
breaking the reported property.  In breadth-first order the trace must be
shortest: the explorer reports, in round ``r``, the properties of the states
it generates from states of depth ``r`` (invariants, responses, asserts: ``r``
+ 1 events) and the errors and deadlocks of states of depth ``r`` itself; the
round it reports in must be the earliest round of any reference finding.

(a) every spec in ``spec/`` with every parameter at 1, at its defaults and at
a few more integer points (deterministic state limits, no time budget, so the
same points are compared on every machine); (b) 300 small
random models from ``modelgen.py`` (fixed seeds), covering the whole language
(a test counts the features they use), each checked by ten zone explorer
runs (symmetry and clock reduction on and off, breadth- and depth-first,
deadlock checking on and off), which must also agree among themselves.
The comparison itself lives in ``diffcheck.py``, shared with the long
campaign command.

Every disagreement fails with the model text and both results.  The bugs
these tests found in the zone explorer (KB1–KB4) are fixed; each has a
regression test at the end.  ``known_bug`` / ``TOLERATE_KNOWN_BUGS`` remain as
the mechanism for tolerating a future known bug while it is being fixed;
``diffcheck.OPEN_BUGS`` tolerates the open ones that show as crashes (KB5),
each with a regression spec in ``tests/regressions/`` whose test is
``xfail(strict=True)`` until the bug is fixed.
"""

from __future__ import annotations

import functools
import pickle
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Generic, TypeVar

import pytest
from diffcheck import (
    STATS,
    ZONE_CONFIGS,
    Outcome,
    compare_model,
    deadlock_grid,
    disagreement,
    known_bug,
    known_problem,
    record,
    show_zone,
    zone_graph_orbits,
    zone_run,
)
from helpers import ROOT
from modelgen import FEATURES, features, model_for_seed, widened
from reference import (
    DEADLOCK,
    INCONCLUSIVE,
    MODEL_ERROR,
    RefResult,
    reference_explore,
    replay,
)
from syncgen import sync_model

from checker.algorithms.covreach import (
    BreadthFirst,
    Budget,
    DepthFirst,
    Passed,
    Waiting,
    covreach,
)
from checker.domains import backend
from checker.engines import CheckResult, Limits, Options, explore
from checker.language import load, load_text
from checker.limits import LimitHit
from checker.model.compiled import SpecModel
from checker.model.interface import ModelRuntimeError, State, scaled_bounds
from checker.model.interp import InterpretedModel
from checker.semantics.ts import Extrapolation, PackedZoneTS, Status, Succ, ZoneTS

pytestmark = pytest.mark.slow

SPECS = sorted((ROOT / "spec").glob("**/*.kvr"))
Z = TypeVar("Z")

# ---- (a) the specs in spec/ ------------------------------------------------------------------
#
# Every spec with every parameter at 1 (small constants keep the integer state space small),
# at its defaults, then at the other points.  Limits are counts, not seconds, so the same
# cases are compared on every machine: a case whose reference needs more than
# REF_MAX_STATES states is skipped, and a zone run that hits ZONE_LIMITS (without clock
# reduction, a spec with twenty clocks is large) is left out of the comparison, never
# counted as agreement.

ZONE_LIMITS = Limits(max_states=5_000)
REF_MAX_STATES = 25_000


def param_points(model: SpecModel) -> list[dict[str, Fraction]]:
    """Every parameter at 1, and the last one at n - 1 and at n (n parameters): for a
    bound ``last > sum of the others`` these sit on both sides of it."""
    names = list(model.params)
    points: list[dict[str, Fraction]] = []
    if names:
        ones = {p: Fraction(1) for p in names}
        points.append(ones)
        for last in (len(names) - 1, len(names)):
            points.append({**ones, names[-1]: Fraction(last)})
    out: list[dict[str, Fraction]] = []
    for pt in points:
        if all(model.params[p].contains(v) for p, v in pt.items()) and pt not in out:
            out.append(pt)
    return out


def _spec_cases() -> Sequence[object]:
    ones: list[object] = []
    defaults: list[object] = []
    others: list[object] = []
    for path in SPECS:
        defaults.append(pytest.param(path, {}, id=f"{path.stem}[defaults]"))
        for k, pt in enumerate(param_points(SpecModel(load(path)))):
            label = ",".join(f"{name}={v}" for name, v in pt.items())
            (others if k else ones).append(pytest.param(path, pt, id=f"{path.stem}[{label}]"))
    return ones + defaults + others


def _spec_configs(model: SpecModel,
                  point: dict[str, Fraction]) -> list[tuple[str, dict[str, object]]]:
    """Every configuration at the first point (every parameter at 1); elsewhere all but
    the Python DBM core, which ``test_engine`` compares with the compiled one on every
    spec, state for state."""
    first = param_points(model)[:1]
    if (not point and not model.params) or [point] == first:
        return ZONE_CONFIGS
    return [(name, opts) for name, opts in ZONE_CONFIGS if opts.get("dbm") != "python"]


@pytest.mark.parametrize(("path", "point"), _spec_cases())
def test_spec_engines_agree(path: Path, point: dict[str, Fraction]) -> None:
    spec = load(path)
    model = SpecModel(spec, point)
    oracle = InterpretedModel(spec, model.values)  # the reference runs on the interpreter
    try:
        ref = reference_explore(oracle, per_clock=True, max_states=REF_MAX_STATES)
    except ValueError as err:
        pytest.skip(f"not an integer-time model here: {err}")
    if ref.strict:
        pytest.skip("strict clock constraints: integer time differs from dense time")
    if ref.verdict == INCONCLUSIVE:
        pytest.skip(f"more than {REF_MAX_STATES} states for the reference explorer")
    problems, compared, bugs = [], [], set()
    for name, opts in _spec_configs(SpecModel(spec), point):
        res = zone_run(model, opts, ZONE_LIMITS)
        if isinstance(res, str):
            problems.append(f"{name}: {res}")
            continue
        if res.verdict == INCONCLUSIVE:
            continue
        compared.append(name)
        why = disagreement(model, res, ref, deadlock=True, bfs=name.startswith("bfs"),
                           exhaustive=lambda: reference_explore(
                               oracle, per_clock=True, exhaustive=True,
                               max_states=REF_MAX_STATES))
        if why is not None:
            bug = known_bug(model, res, ref, deadlock=True, opts=opts)
            if bug is not None:
                bugs.add(bug)
                continue
            problems.append(f"{name}: {why}\n    zone: {show_zone(model, res)}")
    assert not problems, (
        f"{path.name} at {point or 'defaults'}: reference {ref.verdict} {ref.prop} after "
        f"{ref.events} events ({ref.states} states)\n" + "\n".join(problems)
    )
    for bug in bugs:
        STATS[f"spec {bug}"] += 1
    if not compared:
        pytest.skip(f"every zone explorer run hit {ZONE_LIMITS}")


# ---- (b) random models -----------------------------------------------------------------------
#
# RANDOM_SEEDS models of tests/modelgen.py (fixed seeds: the same models on every run), each
# compared by ten zone explorer runs with the reference.  A problem explained by an open bug
# (diffcheck.known_problem) is counted, not failed; every other one fails with the model text.

RANDOM_SEEDS = range(300)
OUTCOMES: dict[int, Outcome] = {}
MIN_MODELS_PER_FEATURE = 5
MIN_MODELS_PER_VERDICT = {"holds": 10, "violated": 10, "error": 5}
"""The least number of the RANDOM_SEEDS models with each verdict (model errors are the
rarest: 9 of the 300)."""


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_generated_models_engines_agree(seed: int) -> None:
    out = compare_model(model_for_seed(seed, extended=True))
    record(out)
    OUTCOMES[seed] = out
    unexplained = [p for p in out.problems if known_problem(p) is None]
    for bug in {b for p in out.problems if (b := known_problem(p)) is not None}:
        STATS[f"{bug} (open)"] += 1
    assert not unexplained, f"seed {seed}: " + out.report()


def test_generated_models_cover_the_language() -> None:
    # Counted from each model's text and elaborated IR, independently of the generator's
    # own choices: every feature of modelgen.FEATURES appears in enough of the models.
    per_feature: Counter[str] = Counter()
    for seed in RANDOM_SEEDS:
        per_feature.update(set(features(model_for_seed(seed, extended=True))))
    rare = {f: per_feature[f] for f in FEATURES if per_feature[f] < MIN_MODELS_PER_FEATURE}
    assert not rare, f"features in fewer than {MIN_MODELS_PER_FEATURE} of " \
        f"{len(RANDOM_SEEDS)} models: {rare}"
    print("\nmodels per feature: " + ", ".join(f"{f} {per_feature[f]}" for f in FEATURES))


def test_generated_models_have_varied_verdicts() -> None:
    if len(OUTCOMES) < len(RANDOM_SEEDS):
        pytest.skip("test_generated_models_engines_agree did not run for every seed")
    compared = [o for o in OUTCOMES.values() if o.verdict is not None]
    verdicts = Counter(o.verdict for o in compared)
    props = Counter(o.prop for o in compared if o.prop is not None)
    low = {v: verdicts[v] for v, least in MIN_MODELS_PER_VERDICT.items()
           if verdicts[v] < least}
    assert not low, f"too few models with these verdicts: {low} (all: {verdicts})"
    assert {"deadlock", "assert", "model error"} <= set(props), props
    assert any(p.startswith("resp") for p in props), f"no late response found: {props}"
    assert any(p.startswith("inv") for p in props), f"no broken invariant found: {props}"
    skipped = sum(o.skipped for o in OUTCOMES.values())
    assert skipped <= len(RANDOM_SEEDS) // 20, f"{skipped} models too big for the reference"
    print(f"\n{len(compared)} models compared; verdicts {dict(verdicts)}; "
          f"properties broken {dict(props)}; {STATS}")


# ---- (c) wider symmetric types -----------------------------------------------------------------
#
# The random models' symmetric type has two values, so a group of values with equal
# signatures has at most two members.  The same models with three values exercise groups
# the canonizer must order by their clocks or try in several orders; compare_model checks
# that every reduction keeps the verdict, the breadth-first round and (when the model holds)
# the discrete states reached, up to the permutations.

WIDE_SEEDS = [seed for seed in RANDOM_SEEDS
              if "symmetric type P" in model_for_seed(seed, extended=True)][:120]


def test_generated_models_with_three_symmetric_values() -> None:
    failed: list[str] = []
    for seed in WIDE_SEEDS:
        out = compare_model(widened(model_for_seed(seed, extended=True), 3))
        if any(known_problem(p) is None for p in out.problems):
            failed.append(f"seed {seed}: " + out.report())
    assert not failed, f"{len(failed)} of {len(WIDE_SEEDS)} models:\n" + "\n".join(failed)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_fischer_zone_graph_reduced_by_symmetry_is_the_whole_up_to_permutations(n: int) -> None:
    """Every node symmetry reduction keeps is an image of a node of the whole zone graph,
    and every orbit of it is kept (the zones compared exactly, not only the verdicts)."""
    procs = ", ".join(f"P{k}" for k in range(1, n + 1))
    text = (ROOT / "spec" / "classic" / "fischer.kvr").read_text().replace(
        "symmetric type Proc = {P1, P2, P3}", f"symmetric type Proc = {{{procs}}}")
    model = SpecModel(load_text(text, "fischer.kvr"))
    reduced = zone_graph_orbits(model, True)
    assert reduced is not None and reduced == zone_graph_orbits(model, False)
    assert len(reduced) == {3: 18, 4: 28, 5: 40}[n]


# ---- regression specs: disagreements found, as named models ------------------------------------
#
# tests/regressions/NAME.kvr: a model whose first lines say `# expect: VERDICT` and, while the
# bug is open, `# xfail: REASON` (the test is then xfail(strict=True): it fails once the bug
# is fixed, so that the marker is removed).

REGRESSIONS = sorted((ROOT / "tests" / "regressions").glob("*.kvr"))


def _header(path: Path, key: str) -> str | None:
    """The value of a ``# key: ...`` header line (continued by ``#   ...`` lines)."""
    lines = path.read_text().splitlines()
    for k, line in enumerate(lines):
        if line.startswith(f"# {key}:"):
            words = [line.split(":", 1)[1].strip()]
            for more in lines[k + 1:]:
                if not more.startswith("#   "):
                    break
                words.append(more[1:].strip())
            return " ".join(words)
    return None


def _regression_cases() -> list[object]:
    cases: list[object] = []
    for path in REGRESSIONS:
        reason = _header(path, "xfail")
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)
                 ] if reason else []
        cases.append(pytest.param(path, id=path.stem, marks=marks))
    return cases


@pytest.mark.parametrize("path", _regression_cases())
def test_regression_spec(path: Path) -> None:
    expected = _header(path, "expect")
    assert expected in ("holds", "violated", "error"), f"{path.name}: no `# expect:` line"
    out = compare_model(path.read_text())
    assert not out.problems, out.report()
    assert out.verdict == expected, f"{path.name}: {out.verdict} ({out.prop}), not {expected}"


# ---- the language's synchronisation semantics, on small named models -------------------------
#
# tests/semantics/NAME.kvr: processes, channels (handshake, broadcast), urgent and committed
# locations, urgent channels and events; each pins a verdict that the construct's meaning
# decides (and a variant without the construct pins the other verdict).

SEMANTICS = sorted((ROOT / "tests" / "semantics").glob("*.kvr"))


@pytest.mark.parametrize("path", SEMANTICS, ids=[p.stem for p in SEMANTICS])
def test_semantics_spec(path: Path) -> None:
    expected = _header(path, "expect")
    assert expected in ("holds", "violated", "error"), f"{path.name}: no `# expect:` line"
    out = compare_model(path.read_text())
    assert not out.problems, out.report()
    assert out.verdict == expected, f"{path.name}: {out.verdict} ({out.prop}), not {expected}"


@pytest.mark.parametrize("seed", range(40))
def test_random_sync_models(seed: int) -> None:
    """Random models with processes, channels and urgency (``tests/syncgen.py``)."""
    out = compare_model(sync_model(seed))
    assert not out.problems, out.report()


@pytest.mark.parametrize("seed", range(60))
def test_random_sync_models_with_committed_events(seed: int) -> None:
    """The same random models with some committed events among those of no channel."""
    out = compare_model(sync_model(seed, committed=True))
    assert not out.problems, out.report()


# ---- bugs the differential tests found in the zone explorer (all fixed) -------------------------
#
# While a bug is known but not fixed, diffcheck.TOLERATE_KNOWN_BUGS lets known_bug() count
# the disagreements it explains instead of failing, so the random test keeps checking the rest.
#
# KB1 (fixed in the explorer): deadlocked() returned False as soon as the state had an
#      edge failing an assert, even one never enabled in the zone: a missed deadlock.
# KB2 (fixed in the explorer): the clock-liveness pre-pass skipped every state whose
#      edges raise ModelRuntimeError, so a clock compared only there kept the constants -1
#      and extrapolation forgot how it relates to the other clocks: false deadlocks and
#      false late responses.
# KB3 (fixed in the explorer): a ModelRuntimeError from deadlines(), violations() or
#      initial_states() escaped explore() instead of giving the verdict `error`.
# KB4 (fixed in the explorer): with symmetry, trace() kept the representative's guard
#      branch index although the permutation permutes the branches of a guard over a
#      symmetric index: an infeasible trace.

# ---- known semantic difference: dense-only deadlocks ------------------------------------------

HALF = """model half
actor a
var ph : {start, armed, done} = start
clock x, y
event a.arm() when ph == start do ph := armed; reset y
deadline x <= 1 while ph == start
event a.same() when ph == armed and x >= 2 and y >= 2 do ph := done
event a.apart() when ph == armed and x >= 2 and y <= 1 do ph := done
deadline x <= 2 while ph == armed
"""


def test_dense_only_deadlock_is_confirmed_on_a_grid() -> None:
    # y is reset d in [0, 1] after x; at x = 2, `same` needs d = 0 and `apart` d = 1:
    # every 0 < d < 1 deadlocks.  Integer time cannot see it; the half grid can.
    model = SpecModel(load_text(HALF))
    ref = reference_explore(model, exhaustive=True)
    assert ref.verdict == "holds"
    for name, opts in ZONE_CONFIGS:
        res = explore(model, options=Options(**opts))  # type: ignore[arg-type]
        assert (res.verdict, res.prop) == ("violated", DEADLOCK), name
        assert deadlock_grid(model, res) == 2
        assert disagreement(model, res, ref, deadlock=True, bfs=True) is None



# ---- disagreements found: known bugs of the zone explorer --------------------------------------
#
# Each test states the right answer (the reference's, checked by hand in the comments); they
# are regression tests for the fixed bugs.

def _both(text: str) -> tuple[SpecModel, RefResult]:
    model = SpecModel(load_text(text, "<known-bug>"))
    return model, reference_explore(model, exhaustive=True)


KB1_TEXT = """model kb1
actor a
var b : bool = false
clock x
event a.go() when x >= 3 do assert b
deadline x <= 2
"""


@pytest.mark.parametrize("name", [n for n, _ in ZONE_CONFIGS])
def test_kb1_never_enabled_failing_edge_does_not_hide_a_deadlock(name: str) -> None:
    # Fixed (KB1: deadlocked() returned False as soon as the state had an assert-failing
    # edge, enabled or not).
    # Time stops at x = 2 (deadline); `go` needs x >= 3, so it never fires (and its assert
    # never fails): at x = 2 nothing can happen — a deadlock, after 0 events.
    model, ref = _both(KB1_TEXT)
    assert (ref.verdict, ref.prop, ref.events) == ("violated", DEADLOCK, 0)
    res = explore(model, options=Options(**dict(ZONE_CONFIGS)[name]))  # type: ignore[arg-type]
    assert (res.verdict, res.prop, len(res.trace) - 1) == ("violated", DEADLOCK, 0)


KB2_REACHABLE = """model kb2
actor a
var n : 0..1 = 0
clock x, y
event a.go() when n == 0 do n := 1
event a.boom() when n == 1 and y >= 1 do n := n + 1
deadline x <= 0 while n == 0
"""

KB2_UNREACHABLE = """model kb2u
actor a
var n : 0..1 = 0
clock x, y
event a.spin() when n == 0 do skip
event a.go() when x >= 1 do n := 1
event a.boom() when n == 1 and y >= 1 do n := n + 1
deadline x <= 0
"""


KB2_RESPONSE = """model kb2r
actor a
var n : 0..1 = 0
clock x
event a.go() when n == 0 do n := 1
event a.boom() when n == 1 do n := n + 1
deadline x <= 0 while n == 1
property p: n == 1 leadsto n == 0 within 0
"""


KB2_CASES = [
    # `go` fires at once (n = 1, where `boom`'s body overflows n): a model error after 1
    # event.  y is compared only in `boom`, in the state the liveness pass skips.
    pytest.param(KB2_REACHABLE, ("error", MODEL_ERROR, 1), id="error-reachable"),
    # x is frozen at 0, so `go` never fires and n = 1 is unreachable; `spin` can always
    # fire: no deadlock, nothing broken.  The skipped state is reachable only untimed.
    pytest.param(KB2_UNREACHABLE, ("holds", None, -1), id="error-unreachable"),
    # `go` must fire at time 0 (x <= 0 afterwards, never reset) and starts the response
    # clock there; time is frozen at n = 1, so the response clock stays 0: no late
    # response, only the overflow.  With x > -1 in the initial zone, the explorer let
    # `go` fire at x = -1/2 and then wait half a unit: "p: no response within 0".
    pytest.param(KB2_RESPONSE, ("error", MODEL_ERROR, 1), id="false-response"),
]


def _zone_key(model: SpecModel, opts: Options) -> tuple[str, str | None, int]:
    res = explore(model, options=opts)
    prop = MODEL_ERROR if res.verdict == "error" else res.prop
    return res.verdict, prop, len(res.trace) - 1


@pytest.mark.parametrize(("text", "expected"), KB2_CASES)
def test_kb2_extra_m_keeps_clocks_without_constants_nonnegative(
    text: str, expected: tuple[str, str | None, int]
) -> None:
    # Fixed for Extra_M (deadlock checking on): these gave a deadlock after 0 events, a
    # deadlock after 0 events, and "p" after 1 event with clock reduction.
    model, ref = _both(text)
    assert (ref.verdict, ref.prop, ref.events if ref.events is not None else -1) == expected
    for cr in (False, True):
        assert _zone_key(model, Options(clock_reduction=cr)) == expected, f"clock_reduction={cr}"


KB2_LU = """model kb2lu
actor a
var n : 0..1 = 0
clock x, y
event a.go() when n == 0 and x >= 1 do n := 1
event a.boom() when n == 1 do n := n + 1
deadline y <= 1 while n == 1
property p: n == 1 leadsto n == 0 within 0
"""


@pytest.mark.parametrize("search", ["bfs", "dfs"])
def test_kb2_lu_false_late_response(search: str) -> None:
    # x and y are never reset: both are the time.  `go` needs x >= 1 and enters n = 1,
    # whose deadline y <= 1 then holds only if `go` fires at time 1 exactly; time is
    # frozen there, so the response clock (reset by `go`) stays 0 and `p` holds.  n = 1
    # is a model error (`boom` overflows n) after 1 event.  With clock reduction and
    # deadlock checking off, the explorer reports "p: no response within 0" instead.
    model, ref = _both(KB2_LU)
    assert (ref.verdict, ref.prop, ref.events) == ("error", MODEL_ERROR, 1)
    assert "p" not in ref.findings
    for cr in (False, True):
        key = _zone_key(model, Options(search=search, deadlock=False, clock_reduction=cr))
        assert key == ("error", MODEL_ERROR, 1), f"clock_reduction={cr}"


KB3_TEXTS = {
    "deadline": "deadline x <= 2 while f[o]",
    "invariant": "invariant i: f[o]",
    "response": "property p: f[o] leadsto true within 1",
}


@pytest.mark.parametrize("where", list(KB3_TEXTS))
def test_kb3_runtime_error_outside_edges_crashes(where: str) -> None:
    # `o` is none in the initial state, so `f[o]` dereferences none at once.
    text = f"""model kb3
actor a
var o : 0..1? = none
var f : 0..1 -> bool = false
clock x
event a.go() when x >= 1 do f[0] := true
{KB3_TEXTS[where]}
"""
    model, ref = _both(text)
    assert (ref.verdict, ref.prop, ref.events) == ("error", MODEL_ERROR, 0)
    res = explore(model)
    assert res.verdict == "error"


KB4_TEXT = """model kb4
symmetric type P = {p, q}
actor a
var done : bool = false
var ticked : bool = false
clock c : P
event a.tick(i: P) when not ticked and c[i] >= 1 do ticked := true; reset c[i]
event a.fin() when ticked and not done and (exists k: P . c[k] >= 2) do done := true
deadline d(j: P): c[j] <= 2
invariant never: not done
"""


@pytest.mark.parametrize("name", [n for n, o in ZONE_CONFIGS if o.get("symmetry", True)])
def test_kb4_symmetric_trace_takes_the_right_guard_branch(name: str) -> None:
    # Fixed (KB4: the trace kept the representative's branch index, taking c[p] >= 2).
    # tick(p) at t in [1, 2] resets c[p]; the deadlines stop time when c[q] = 2, and then
    # c[p] = 2 - t <= 1, so `fin` can only take its branch c[q] >= 2.
    model, ref = _both(KB4_TEXT)
    assert (ref.verdict, ref.prop, ref.events) == ("violated", "never", 2)
    res = explore(model, options=Options(**dict(ZONE_CONFIGS)[name]))  # type: ignore[arg-type]
    assert (res.verdict, res.prop, len(res.trace) - 1) == ("violated", "never", 2)
    edges = [s.edge for s in res.trace[1:] if s.edge is not None]
    assert replay(model, res.trace[0].state, edges, any_branch=True)[-1]  # the right path
    assert replay(model, res.trace[0].state, edges)[-1], "the trace is infeasible"


# ---- (c) the engine seam: the transition system, covreach, the restart, the partitions -----
#
# Every engine is covreach (one loop) over a symbolic transition system (ts.py) with a goal.
# These compare each piece with an independent statement of what it must give, on the
# random models of (b): a plain breadth-first search over the same transition system
# without covering, a direct Extra_M run for the restart, and the distributed rounds run
# in this process (no Ray) for the partitions.

SEAM_SEEDS = range(0, 300, 3)
SEAM_LIMITS = Limits(max_states=3_000)
SEAM_NAIVE_NODES = 20_000


def _seam_model(seed: int) -> SpecModel:
    return SpecModel(load_text(model_for_seed(seed), "<generated>"))


class _Everything(Generic[Z]):
    """A goal that never stops: every stored node is queued, every label seen recorded
    (with the state it labels)."""

    def __init__(self, store: Passed[Z], waiting: Waiting) -> None:
        self.store = store
        self.waiting = waiting
        self.seen: set[tuple[State, str, str]] = set()

    def reached(self, succ: Succ[Z], node: int | None, parent: int, depth: int
                ) -> None:
        if succ.status is not Status.OK:
            self.seen.add((succ.state, succ.status.value, ""))
            return
        for lab in succ.labels:
            self.seen.add((succ.state, lab.kind.value, lab.name))
        if node is not None:
            self.waiting.push(node)

    def expand(self, node: int) -> bool:
        return True

    def exhausted(self) -> None:
        return None


def _plain_search(ts: ZoneTS) -> tuple[set[State], set[tuple[State, str, str]]] | None:
    """Breadth-first search over ``ts`` storing every node (equality by ``ts.key``, no
    covering): the discrete states and the labels met; None past SEAM_NAIVE_NODES."""
    seen_keys = set()
    labels: set[tuple[State, str, str]] = set()
    todo: deque[tuple[State, list[int]]] = deque()

    def visit(succ: Succ[list[int]]) -> None:
        if succ.status is not Status.OK:
            labels.add((succ.state, succ.status.value, ""))
            return
        labels.update((succ.state, lab.kind.value, lab.name) for lab in succ.labels)
        key = ts.key(succ.state, succ.zone)
        if key not in seen_keys:
            seen_keys.add(key)
            todo.append((succ.state, succ.zone))

    for succ in ts.initial():
        visit(succ)
    while todo:
        if len(seen_keys) > SEAM_NAIVE_NODES:
            return None
        s, z = todo.popleft()
        for succ in ts.next(s, z):
            visit(succ)
    return {k[0] for k in seen_keys}, labels


@pytest.mark.parametrize("extrapolation", [Extrapolation.LU, Extrapolation.M])
def test_covreach_meets_what_a_plain_search_of_the_transition_system_meets(
        extrapolation: Extrapolation) -> None:
    """Covering with inclusion (and retiring) keeps every discrete state and every label:
    a covered zone's successors are included in the covering zone's, and each label
    (a property broken by some valuation) is monotone in the zone."""
    compared = 0
    for seed in SEAM_SEEDS:
        model = _seam_model(seed)
        bounds, _ = scaled_bounds(model.bounds, model.values)
        try:
            naive = _plain_search(ZoneTS(model, bounds, extrapolation=extrapolation))
        except ModelRuntimeError:
            continue
        if naive is None:
            continue
        ts = ZoneTS(model, bounds, extrapolation=extrapolation)
        store: Passed[list[int]] = Passed(ts.includes, keep_shallower=True)
        waiting = BreadthFirst()
        goal = _Everything(store, waiting)
        covreach(ts, store, waiting, goal, Budget(Limits()))
        states, labels = naive
        assert set(store.by_state) == states, f"seed {seed}: discrete states differ"
        assert goal.seen == labels, f"seed {seed}: labels differ"
        compared += 1
    assert compared >= len(SEAM_SEEDS) // 2


def _stored(store: Passed[Z], zone: Callable[[State, Z], list[int]]
            ) -> list[tuple[State, list[int]]]:
    """The symbolic states a store holds at the end, in node order."""
    return [(store.state[k], zone(store.state[k], store.zone[k]))
            for k in sorted(k for ks in store.by_state.values() for k in ks)]


@pytest.mark.parametrize("order", [BreadthFirst, DepthFirst])
def test_the_packed_store_is_the_plain_store(order: Callable[[], Waiting]) -> None:
    """The zone explorer stores zones packed into bytes (PackedZoneTS, includes_packed)
    and releases the zones of retired nodes: on random models, with either DBM
    implementation, the search is the one over plain zones that keeps every zone, node
    for node (same zones stored, same parents, same labels met), and the zone of every
    node it expands is still there when the node is expanded."""
    released = 0
    for seed in SEAM_SEEDS:
        model = _seam_model(seed)
        bounds, _ = scaled_bounds(model.bounds, model.values)
        for ops in {backend.select("python"), backend.select()}:
            plain_ts = ZoneTS(model, bounds, ops=ops)
            plain: Passed[list[int]] = Passed(plain_ts.includes, keep_shallower=True)
            packed_ts = PackedZoneTS(ZoneTS(model, bounds, ops=ops))
            packed: Passed[bytes] = Passed(packed_ts.includes, keep_shallower=True,
                                           released=b"")
            seen = []
            try:
                for ts, store in ((plain_ts, plain), (packed_ts, packed)):
                    waiting = order()
                    goal = _Everything(store, waiting)
                    covreach(ts, store, waiting, goal, Budget(SEAM_LIMITS))
                    seen.append(goal.seen)
            except ModelRuntimeError:
                continue
            except LimitHit:
                continue
            what = f"seed {seed}, {ops.__name__}"  # type: ignore[attr-defined]
            assert packed.stats == plain.stats, what
            assert seen[1] == seen[0], what
            unpack, frame = ops.unpack, packed_ts.zones.dz.frame
            assert _stored(packed, lambda s, z, u=unpack, f=frame: u(z, f(s).n)) == _stored(
                plain, lambda s, z: z), what
            assert (packed.state, packed.parent, packed.event, packed.branch, packed.depth,
                    packed.alive) == (plain.state, plain.parent, plain.event, plain.branch,
                                      plain.depth, plain.alive), what
            gone = [k for k, z in enumerate(packed.zone) if z == b""]
            assert all(not packed.alive[k] or packed.expanded[k] for k in gone), what
            released += len(gone)
    assert released > 0


def _same_run(one: CheckResult, two: CheckResult, what: str, counts: bool = True) -> None:
    assert (two.verdict, two.prop, two.message, two.limit) == (
        one.verdict, one.prop, one.message, one.limit), what
    assert two.trace == one.trace, what
    keys = ("states", "zones", "transitions", "stored", "explored", "depth") if counts else ()
    for k in keys:
        assert getattr(two.stats, k) == getattr(one.stats, k), f"{what}: {k}"


def test_the_lu_to_m_restart_is_a_fresh_extra_m_search() -> None:
    """An unconfirmed LU deadlock restarts the search on a new transition system: the
    run then is exactly a run that used Extra_M from the start."""
    restarted = 0
    models = [("regression", SpecModel(load(ROOT / "tests/regressions/lu_spurious_deadlock.kvr")))]
    models += [(f"seed {seed}", _seam_model(seed)) for seed in SEAM_SEEDS]
    for what, model in models:
        for search in ("bfs", "dfs"):
            lu = explore(model, SEAM_LIMITS, Options(search=search))
            if lu.stats.extrapolation != "m":
                continue
            restarted += 1
            m = explore(model, SEAM_LIMITS, Options(search=search, extrapolation="m"))
            assert m.stats.extrapolation == "m"
            _same_run(m, lu, f"{what} {search}")
    assert restarted >= 2


class _Ref:
    def __init__(self, value: object) -> None:
        self.value = value


class _Method:
    def __init__(self, f: Callable[..., object], returns: int | None = None) -> None:
        self.f = f
        self.returns = returns

    def options(self, num_returns: int) -> _Method:
        return _Method(self.f, num_returns)

    def remote(self, *args: object) -> object:
        out = self.f(*(a.value if isinstance(a, _Ref) else a for a in args))
        if self.returns is None:
            return _Ref(out)
        assert isinstance(out, list) and len(out) == self.returns
        return [_Ref(x) for x in out]


class _Actor:
    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self.obj, name))


class _InProcess:
    """Stands in for the Ray actors: each partition is an object in this process, and a
    call is a method call (its arguments and results still pickled where Ray's are)."""

    def __init__(self, cluster: object, worker: type, deadline: float | None,
                 timeout: float | None) -> None:
        self.cluster = cluster
        self.worker = worker
        self.actors: list[_Actor] = []

    def spawn(self) -> int:
        n = self.cluster.workers  # type: ignore[attr-defined]
        self.actors = [_Actor(self.worker(i, n)) for i in range(n)]
        return int(n)

    def left(self) -> float | None:
        return None

    def get(self, refs: Sequence[_Ref]) -> list[object]:
        return [pickle.loads(pickle.dumps(r.value)) for r in refs]

    def load(self, build: Callable[[], object], limits: object, left: float | None,
             options: object) -> list[object]:
        return [a.obj.load(build, limits, left, options) for a in self.actors]

    def shutdown(self, dead: bool) -> None:
        self.actors = []


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("pool", ["in-process", "forked"])
def test_partitions_explore_exactly_like_one_process(workers: int, pool: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The distributed rounds (partitions storing in the single-process order) give the
    one-process verdict, trace, discrete states, events fired and counts: the partitions
    as objects of this process, and as the forked workers of ``check --workers N``."""
    from checker.engines import distributed as dist

    if pool == "in-process":
        monkeypatch.setattr(dist, "Children", _InProcess)
    compared = 0
    # Forking costs a few milliseconds a run: every fourth seed.
    seeds = SEAM_SEEDS if pool == "in-process" else SEAM_SEEDS[::4]
    for seed in seeds:
        text = model_for_seed(seed)
        spec = load_text(text, "<generated>")
        for opts in (Options(), Options(symmetry=False, deadlock=False)):
            one = explore(SpecModel(spec), SEAM_LIMITS, opts)
            if one.verdict == "inconclusive":
                continue
            two = dist.explore_distributed(SpecModel(spec), functools.partial(SpecModel, spec),
                                           dist.Cluster(workers), SEAM_LIMITS, opts)
            # Counts agree when exploration is complete (rounds store a level at once).
            _same_run(one, two, f"seed {seed} {opts}", counts=one.verdict == "holds")
            if one.verdict == "holds":
                assert (two.reached, two.fired) == (one.reached, one.fired), f"seed {seed}"
            compared += 1
    assert compared >= len(seeds)


# ---- the pre-pass kept per model ------------------------------------------------------------

_PREPASS_CASES = [pytest.param(ROOT / f"spec/sglang/{name}.kvr", id=name)
                  for name in ("deferred_release", "immediate_release", "premature_ack",
                               "quiesce_v1")]
_PREPASS_CASES += [pytest.param(seed, id=f"seed{seed}") for seed in range(20)]


def _outcome(res: CheckResult) -> tuple[object, ...]:
    return (res.verdict, res.prop, res.message, res.limit, res.trace, res.reached, res.fired,
            res.stats.states, res.stats.zones, res.stats.transitions)


def test_a_pre_pass_stopped_by_time_is_not_kept() -> None:
    """A check whose time ran out in the pre-pass leaves nothing behind: the next check
    of the same model explores exactly as on a fresh one."""
    spec = load(ROOT / "spec/sglang/deferred_release.kvr")
    shared = SpecModel(spec, {})
    late = explore(shared, Limits(deadline=time.monotonic() - 1))
    assert late.verdict == INCONCLUSIVE
    assert _outcome(explore(shared)) == _outcome(explore(SpecModel(spec, {})))


@pytest.mark.parametrize("case", _PREPASS_CASES)
def test_a_model_checked_again_explores_as_a_fresh_one(case: Path | int) -> None:
    """The clock-bounds pre-pass is kept per model and reused by a later check of the
    same model: every configuration, run in turn on one model, gives exactly what it
    gives on a model of its own."""
    spec = load(case) if isinstance(case, Path) else load_text(model_for_seed(case),
                                                               "<generated>")
    point = {p: Fraction(1) for p in SpecModel(spec).params} if isinstance(case, Path) else {}
    shared = SpecModel(spec, point)
    for name, opts in ZONE_CONFIGS:
        again = explore(shared, ZONE_LIMITS, Options(**opts))  # type: ignore[arg-type]
        fresh = explore(SpecModel(spec, point), ZONE_LIMITS, Options(**opts))  # type: ignore[arg-type]
        assert _outcome(again) == _outcome(fresh), name

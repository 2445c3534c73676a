"""The symbolic search engine: zone-graph sizes pinned against TChecker's, symmetry
without enumerating permutations, the LU abstraction's deadlock check, and the
compiled DBM core against the Python reference."""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Hashable
from pathlib import Path

import pytest
from helpers import ROOT

from checker.domains import backend, dbm
from checker.engines import Options, explore, search
from checker.language import load, load_text
from checker.model.compiled import SpecModel
from checker.model.interface import State, Symmetry, scaled_bounds
from checker.semantics.canon import canonizer
from checker.semantics.clockbounds import clock_bounds
from checker.semantics.ts import Status, ZoneTS
from checker.semantics.zones import DbmZones, Frame

FLAGSHIP = ROOT / "spec" / "sglang" / "deferred_release.kvr"
FISCHER = ROOT / "spec" / "classic" / "fischer.kvr"
REGRESSION = ROOT / "tests" / "regressions" / "lu_spurious_deadlock.kvr"


def flagship(requests: int, slots: int) -> SpecModel:
    """The flagship with more requests and slots (as ``benchmarks/bench.py`` scales it)."""
    text = FLAGSHIP.read_text()
    reqs = ", ".join("ABCDEFGH"[:requests])
    text = text.replace("symmetric type Req = {A, B}", f"symmetric type Req = {{{reqs}}}")
    slot_names = ", ".join(f"s{i}" for i in range(slots))
    text = text.replace("symmetric type Slot = {s0}", f"symmetric type Slot = {{{slot_names}}}")
    return SpecModel(load_text(text, str(FLAGSHIP)))


def fischer(n: int) -> SpecModel:
    """Fischer's protocol with ``n`` processes."""
    procs = ", ".join(f"P{i}" for i in range(1, n + 1))
    text = re.sub(r"symmetric type Proc = \{[^}]*\}", f"symmetric type Proc = {{{procs}}}",
                  FISCHER.read_text())
    return SpecModel(load_text(text, str(FISCHER)))


def counts(model: SpecModel, **opts: object) -> tuple[str, int, int, int]:
    r = explore(model, None, Options(**opts))  # type: ignore[arg-type]
    return r.verdict, r.stats.states, r.stats.zones, r.stats.transitions


# TChecker (covreach, inclusion, local LU bounds, no symmetry) stores 235, 2,301 and
# 1,700 states on these variants of the flagship: kvrace without symmetry stores as
# many, with symmetry far fewer.
@pytest.mark.parametrize(("r", "s", "no_sym", "with_sym"), [
    (2, 1, (235, 235, 430), (120, 120, 216)),
    (2, 2, (1719, 2301, 7096), (445, 584, 1794)),
    (3, 1, (1700, 1700, 3225), (350, 350, 651)),
])
@pytest.mark.slow
def test_flagship_zone_graph_is_as_small_as_tcheckers(
        r: int, s: int, no_sym: tuple[int, int, int], with_sym: tuple[int, int, int]) -> None:
    model = flagship(r, s)
    assert counts(model, symmetry=False, deadlock=False) == ("holds", *no_sym)
    assert counts(model, symmetry=False) == ("holds", *no_sym)
    assert counts(model) == ("holds", *with_sym)


@pytest.mark.parametrize(("n", "no_sym", "with_sym"), [
    (3, (65, 65, 150), (18, 18, 44)),
    (4, (220, 220, 648), (28, 28, 90)),
    (5, (727, 727, 2610), (40, 40, 160)),
])
def test_fischer_counts(n: int, no_sym: tuple[int, int, int],
                        with_sym: tuple[int, int, int]) -> None:
    model = fischer(n)
    assert counts(model, symmetry=False) == ("holds", *no_sym)
    assert counts(model) == ("holds", *with_sym)


# With symmetry, the counts the signature-sorting canonizer gave before its candidates
# were computed from sorted orders, liveness flags and single-row zone checks: the
# faster canonizer chooses the same forms, so the counts are the same.
@pytest.mark.parametrize(("n", "with_sym"), [
    (8, (88, 88, 564)),
    (12, (180, 180, 1742)),
    pytest.param(16, (304, 304, 3944), marks=pytest.mark.slow),
    pytest.param(20, (460, 460, 7490), marks=pytest.mark.slow),
])
def test_fischer_counts_with_many_processes(n: int, with_sym: tuple[int, int, int]) -> None:
    assert counts(fischer(n)) == ("holds", *with_sym)


def _reachable_nodes(ts: ZoneTS, limit: int) -> list[tuple[State, Frame, dbm.Dbm]]:
    """Up to ``limit`` nodes of the zone graph ``ts`` (breadth-first), each with its
    frame."""
    from collections import deque

    out: list[tuple[State, Frame, dbm.Dbm]] = []
    seen: set[Hashable] = set()
    todo = deque(ts.initial())
    while todo and len(out) < limit:
        node = todo.popleft()
        key = ts.key(node.state, node.zone)
        if node.status is not Status.OK or key in seen:
            continue
        seen.add(key)
        out.append((node.state, ts.dz.frame(node.state), node.zone))
        todo.extend(ts.next(node.state, node.zone))
    return out


def _image(dz: DbmZones, sym: Symmetry, s: State, z: dbm.Dbm) -> tuple[State, dbm.Dbm]:
    """(s, z) under ``sym``, the zone permuted by the Python reference."""
    t = sym.state(s)
    f, tf = dz.frame(s), dz.frame(t)
    return t, dbm.permute(z, f.n, [0] + [tf.pos[sym.clocks[c]] for c in f.clocks])


@pytest.mark.parametrize(("which", "size"), [("fischer4", 150), ("flagship3x2", 60)])
def test_canonical_zones_are_images_and_the_same_across_an_orbit(which: str,
                                                                  size: int) -> None:
    """Every (state, zone) the canonizer gives is the image of its input under the
    permutation it reports (sound: a member of the orbit), and every image of a
    reachable node under every permutation gets the same one (canonical)."""
    model = fischer(4) if which == "fischer4" else flagship(3, 2)
    perms = model.symmetries()
    bounds, _ = scaled_bounds(model.bounds, model.values)
    live = clock_bounds(model, bounds, None, canonizer(model), timed=backend.select(None))
    # Without symmetry reduction, so that every member of an orbit can turn up.
    nodes = _reachable_nodes(ZoneTS(model, bounds, live), size)
    dz = ZoneTS(model, bounds, live, canonical=model.canonizer).dz
    moved = 0
    for s, f, z in nodes:
        cs, cz, sym = dz.canonical(f, list(z))
        if sym is None:
            assert (cs, cz) == (s, z)
        else:
            assert (cs, cz) == _image(dz, sym, s, z)
            moved += 1
        for pi in perms:
            t, tz = _image(dz, pi, s, z)
            assert dz.canonical(dz.frame(t), tz)[:2] == (cs, cz), (s, pi.clocks)
    assert len(nodes) == size and moved > size // 5, moved


@pytest.mark.slow
def test_fischer_with_ten_processes_never_enumerates_permutations() -> None:
    """10! = 3,628,800 permutations: the canonizer builds only the ones it needs."""
    model = fischer(10)
    canon = model.canonizer
    assert canon is not None
    s0 = model.initial_states()[0]
    best, cands = canon.candidates(s0)
    assert best == s0 and cands == [None]  # ten idle processes: one candidate
    built: list[tuple[tuple[int, ...], ...]] = []
    original = canon._build

    def counting(images: tuple[tuple[int, ...], ...]) -> object:
        built.append(images)
        return original(images)

    canon._build = counting  # type: ignore[assignment]
    r = explore(model)
    assert r.verdict == "holds"
    assert (r.stats.states, r.stats.zones, r.stats.transitions) == (130, 130, 1045)
    # Permutations built over the whole run (each once): a few hundred, not millions.
    assert len(built) == len(set(built)) < 1_000, len(built)


def test_canonical_forms_are_the_same_across_an_orbit() -> None:
    """Every image of a reachable state has the same canonical form (no truncation
    happens at this size)."""
    model = flagship(3, 2)
    canon = model.canonizer
    assert canon is not None
    rng = random.Random(3)
    states = [model.initial_states()[0]]
    seen = set(states)
    while len(states) < 300:
        s = rng.choice(states)
        for e in model.edges(s):
            if e.failure is None and e.target not in seen:
                seen.add(e.target)
                states.append(e.target)
    perms = [canon.symmetry((a, b)) for a in itertools.permutations(range(3))
             for b in itertools.permutations(range(2))]
    for s in states:
        rep = canon.candidates(s)[0]
        for sym in perms:
            image = s if sym is None else sym.state(s)
            assert canon.candidates(image)[0] == rep


@pytest.mark.slow
def test_the_timed_clock_bounds_pass_explores_far_fewer_states() -> None:
    """The untimed pass lets events happen in orders no timing allows; the timed one
    (a hull zone per state) stays near the timed graph, and the bounds it gives
    explore the same zone graph here."""
    from checker.model.interface import scaled_bounds
    from checker.semantics.canon import canonizer
    from checker.semantics.clockbounds import clock_bounds

    model = flagship(3, 2)
    bounds, _ = scaled_bounds(model.bounds, model.values)
    canon = canonizer(model)
    untimed = clock_bounds(model, bounds, None, canon)
    timed = clock_bounds(model, bounds, None, canon, timed=backend.select(None))
    assert untimed.complete and timed.complete
    assert (len(untimed.live), len(timed.live)) == (19998, 3025)
    for s, mask in timed.live.items():  # a subgraph: never more live clocks
        assert mask & ~untimed.live[s] == 0
    a = explore(model, None, Options(prepass="timed"))
    b = explore(model, None, Options(prepass="untimed"))
    assert (a.stats.states, a.stats.zones, a.stats.transitions) == (
        b.stats.states, b.stats.zones, b.stats.transitions) == (3079, 4619, 15318)


def test_an_unconfirmed_lu_deadlock_restarts_with_extra_m() -> None:
    model = SpecModel(load(REGRESSION))
    r = explore(model)
    assert r.verdict == "holds"
    assert r.stats.extrapolation == "m"
    assert explore(model, None, Options(deadlock=False)).stats.extrapolation == "lu"


def test_without_confirmation_the_lu_abstraction_reports_a_fake_deadlock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What the confirmation is for: the LU zone holds a stuck valuation no run reaches."""
    monkeypatch.setattr(search.ZoneCheck, "confirm_deadlock", lambda self, trace: None)
    r = explore(SpecModel(load(REGRESSION)))
    assert (r.verdict, r.prop) == ("violated", "deadlock")


@pytest.mark.slow
@pytest.mark.skipif(not backend.C_AVAILABLE, reason="the compiled DBM core is not built")
@pytest.mark.parametrize("spec", sorted((ROOT / "spec").rglob("*.kvr")), ids=lambda p: p.stem)
def test_compiled_core_explores_exactly_like_the_reference(spec: Path) -> None:
    model = SpecModel(load(spec))
    c = explore(model, None, Options(dbm="c"))
    py = explore(model, None, Options(dbm="python"))
    assert (c.verdict, c.prop, [t.label for t in c.trace]) == (
        py.verdict, py.prop, [t.label for t in py.trace])
    assert (c.stats.states, c.stats.zones, c.stats.transitions) == (
        py.stats.states, py.stats.zones, py.stats.transitions)


def _bounds_of(model: SpecModel) -> tuple[object, ...]:
    """The timed pre-pass's whole result on ``model``."""
    bounds, _ = scaled_bounds(model.bounds, model.values)
    live = clock_bounds(model, bounds, None, canonizer(model), timed=backend.select(None))
    assert live.complete
    return (sorted(live.live.items()), sorted((s, sorted(lu.items()))
                                               for s, lu in live.local.items()),
            live.lower, live.upper)


def _pass_with(model: SpecModel, impl: str) -> tuple[object, ...] | None:
    """The timed pre-pass's whole result with one DBM implementation (None when a
    model error stops it)."""
    from checker.model.interface import ModelRuntimeError

    bounds, _ = scaled_bounds(model.bounds, model.values)
    try:
        live = clock_bounds(model, bounds, None, canonizer(model), timed=backend.select(impl))
    except ModelRuntimeError:
        return None
    return (live.complete, sorted(live.live.items()),
            sorted((s, sorted(lu.items())) for s, lu in live.local.items()),
            live.lower, live.upper)


@pytest.mark.skipif(not backend.C_AVAILABLE, reason="the C DBM core is not built")
@pytest.mark.parametrize("seeds", [
    pytest.param(range(12), id="quick"),
    pytest.param(range(12, 300), id="long", marks=pytest.mark.slow),
])
def test_the_timed_pass_is_the_same_with_the_compiled_core_and_the_reference(
        seeds: range) -> None:
    """The timed pre-pass keeps its hulls packed and joins them in the compiled core
    (``pack``, ``join``, ``unpack``) or in the Python reference: the same states, live
    clocks and bounds on random models and on the flagship and Fischer."""
    from modelgen import model_for_seed

    models = [flagship(2, 1) if seeds.start == 0 else flagship(2, 2), fischer(4)]
    models += [SpecModel(load_text(model_for_seed(seed))) for seed in seeds]
    compared = 0
    for model in models:
        if len(model.clock_names) > search.TIMED_PREPASS_CLOCKS:
            continue
        c, py = _pass_with(model, "c"), _pass_with(model, "python")
        assert c == py
        compared += c is not None and bool(c[1])
    assert compared >= len(seeds) * 3 // 4


def _keeping_every_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the timed pre-pass keep every clock in its hulls (none dropped)."""
    from checker.semantics import clockbounds

    found = clockbounds._Pass.discover

    def discover(self: clockbounds._Pass, j: int, s: State) -> None:
        found(self, j, s)
        self.revive(j, self.live.all_mask)

    monkeypatch.setattr(clockbounds._Pass, "discover", discover)


@pytest.mark.slow
def test_dropping_dead_clocks_from_the_hulls_changes_no_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The timed pre-pass drops from each hull the clocks not known to be live (and runs
    again when one turns out live): the same live clocks and bounds as keeping them, on
    every spec and the flagship at 3 requests and 2 slots."""
    models = {p.stem: SpecModel(load(p)) for p in sorted((ROOT / "spec").rglob("*.kvr"))}
    models["flagship 3/2"] = flagship(3, 2)
    timed = {name: m for name, m in models.items()
             if len(m.clock_names) <= search.TIMED_PREPASS_CLOCKS}
    dropped = {name: _bounds_of(m) for name, m in timed.items()}
    _keeping_every_clock(monkeypatch)
    differ = [name for name, m in timed.items() if _bounds_of(m) != dropped[name]]
    assert not differ and len(timed) > 40, differ


def test_the_timed_pass_expands_each_fischer_state_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Fischer's idle processes keep clocks no path reads before resetting them; kept in
    the hulls, their values spread and the hulls grow again and again."""
    from checker.semantics import clockbounds

    model = fischer(12)
    expanded: list[int] = []
    expand = clockbounds._Pass.expand_timed

    def counting(self: clockbounds._Pass, i: int, s: State) -> None:
        expanded.append(i)
        expand(self, i, s)

    monkeypatch.setattr(clockbounds._Pass, "expand_timed", counting)
    dropped = _bounds_of(model)
    assert sorted(expanded) == list(range(180))
    expanded.clear()
    _keeping_every_clock(monkeypatch)
    assert _bounds_of(model) == dropped
    assert len(expanded) == 1033


@pytest.mark.slow
def test_the_timed_pass_falls_back_to_untimed_past_its_memory_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.model.interface import scaled_bounds
    from checker.semantics import clockbounds as liveness
    from checker.semantics.canon import canonizer

    model = flagship(2, 2)
    bounds, _ = scaled_bounds(model.bounds, model.values)
    timed = backend.select("python")
    small = liveness.clock_bounds(model, bounds, None, canonizer(model), timed=timed)
    monkeypatch.setattr(liveness, "HULL_BUDGET_MB", 0)
    wide = liveness.clock_bounds(model, bounds, None, canonizer(model), timed=timed)
    untimed = liveness.clock_bounds(model, bounds, None, canonizer(model))
    assert len(small.live) < len(wide.live) == len(untimed.live)
    assert counts(model) == ("holds", 445, 584, 1794)


@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted((ROOT / "spec" / "sglang").glob("*.kvr")),
                         ids=lambda p: p.stem)
def test_traces_name_symmetric_values_in_order_of_first_mention(spec: Path) -> None:
    """A counterexample is a run up to a permutation of symmetric values: it is shown
    with the first value mentioned of each type named first (A before B)."""
    model = SpecModel(load(spec))
    r = explore(model)
    if r.verdict != "violated" or model.canonizer is None:
        pytest.skip("no counterexample, or no symmetric type")
    seen: dict[str, list[int]] = {}
    for step in r.trace[1:]:
        assert step.event is not None
        decl, args = model.instance(step.event)
        for (_, ft), v in zip(decl.params, args, strict=True):
            if ft.symmetric and v not in seen.setdefault(ft.name, []):
                seen[ft.name].append(v)
    for values in seen.values():
        assert values == list(range(len(values)))


def test_a_trace_naming_b_first_is_renamed() -> None:
    from checker.semantics.traces import TraceStep, renamed

    model = SpecModel(load(ROOT / "spec" / "sglang" / "immediate_release.kvr"))
    trace = explore(model).trace
    canon = model.canonizer
    assert canon is not None
    swap = canon.symmetry(tuple((1, 0) if t.size == 2 else tuple(range(t.size))
                                for t in canon.types))
    assert swap is not None
    s = trace[0].state
    swapped = [trace[0]]
    for st in trace[1:]:
        assert st.edge is not None
        (edge,) = [e for e in model.edges(s) if e.event == swap.events[st.edge.event]]
        swapped.append(TraceStep(edge.event, model.event_names[edge.event], edge, edge.target))
        s = edge.target
    assert [t.label for t in swapped] != [t.label for t in trace]  # B first
    assert [t.label for t in renamed(model, swapped)] == [t.label for t in trace]

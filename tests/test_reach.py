"""The shared reachability loop and the trace semantics stated once.

* :func:`checker.algorithms.covreach.covreach` runs over any symbolic transition
  system: one over a toy domain (no clocks at all) turns it into plain discrete
  reachability, and its waiting list and store behave as documented;
* :func:`checker.model.timeline.timeline` is the one statement of a trace's
  timing, which the zone replay, the timestamps and ``--explain`` interpret.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Generic, TypeVar

import pytest
from helpers import ROOT

from checker.algorithms.covreach import (
    BreadthFirst,
    Budget,
    DepthFirst,
    Passed,
    Waiting,
    covreach,
    waiting_list,
)
from checker.domains import backend
from checker.engines import search
from checker.language import load, load_text
from checker.limits import NO_FULL_COLLECTIONS, young_collections_only
from checker.model.compiled import SpecModel
from checker.model.interface import ClockAtom, Edge, State, Symmetry, scaled_bounds
from checker.model.timeline import Elapse, Holds, Reset, TraceShape, timeline
from checker.semantics.traces import TraceStep, replay_zone
from checker.semantics.ts import DomainTS, Status, Succ
from checker.smt import synth
from checker.smt.timing import timestamps

FISCHER = ROOT / "spec/classic/fischer.kvr"
Z = TypeVar("Z")


class Untimed:
    """A zone domain with a single zone: reachability of discrete states."""

    def frame(self, s: State) -> State:
        return s

    def zero(self, f: State) -> tuple[()]:
        return ()

    def constrain(self, f: State, z: tuple[()], atoms: Sequence[ClockAtom]) -> tuple[()]:
        return ()

    def reset(self, f: State, z: tuple[()], e: Edge, tf: State) -> tuple[()]:
        return ()

    def close(self, f: State, z: tuple[()]) -> tuple[()]:
        return ()

    def includes(self, f: State, big: tuple[()], small: tuple[()]) -> bool:
        return True

    def extrapolate(self, f: State, z: tuple[()]) -> tuple[()]:
        return z

    def canonical(self, f: State, z: tuple[()]) -> tuple[State, tuple[()], Symmetry | None]:
        return f, z, None


class Count(Generic[Z]):
    """A goal that queues every stored node and counts the discrete states."""

    def __init__(self, store: Passed[Z], waiting: Waiting) -> None:
        self.store = store
        self.waiting = waiting

    def reached(self, succ: Succ[Z], node: int | None, parent: int, depth: int
                ) -> int | None:
        if node is not None:
            self.waiting.push(node)
        return None

    def expand(self, node: int) -> int | bool:
        return True

    def exhausted(self) -> int:
        return self.store.stats.states


def _count(model: SpecModel, order: str = "bfs") -> int:
    ts = DomainTS(model, Untimed())
    store: Passed[tuple[()]] = Passed(ts.includes, keep_shallower=True)
    waiting = waiting_list(order)
    return covreach(ts, store, waiting, Count(store, waiting), Budget(search.Limits()))


def _fischer() -> SpecModel:
    from checker.language import load

    return SpecModel(load(FISCHER), {})


def test_an_untimed_domain_gives_discrete_reachability() -> None:
    model = _fischer()
    # Ignoring time (clock atoms always true), the loop is a plain graph search:
    # it meets the discrete states a breadth-first search over the edges meets.
    seen = set(model.initial_states())
    todo = list(seen)
    while todo:
        for e in model.edges(todo.pop()):
            if e.failure is None and e.target not in seen:
                seen.add(e.target)
                todo.append(e.target)
    got = _count(model)
    assert got == len(seen) == 152
    assert _count(model, "dfs") == 152
    zones = search.explore(model, options=search.Options(symmetry=False))
    assert zones.stats.states < got  # timing prunes states (mutual exclusion holds)


def test_waiting_lists_order() -> None:
    for w, want in ((BreadthFirst(), [1, 2, 3]), (DepthFirst(), [3, 2, 1])):
        for k in (1, 2, 3):
            w.push(k)
        assert len(w) == 3
        assert [w.pop() for _ in range(3)] == want
        assert len(w) == 0


def _intervals(keep_shallower: bool) -> Passed[tuple[int, int]]:
    def includes(s: State, big: tuple[int, int], small: tuple[int, int]) -> bool:
        return big[0] <= small[0] and small[1] <= big[1]

    return Passed(includes, keep_shallower)


def _succ(s: State, z: tuple[int, int]) -> Succ[tuple[int, int]]:
    return Succ(s, z, None, 0, None, Status.OK, ())


def test_store_covers_and_retires() -> None:
    passed = _intervals(keep_shallower=False)
    s = (0,)
    a = passed.add(_succ(s, (1, 2)), -1, 0)
    assert a == 0
    assert passed.add(_succ(s, (1, 2)), -1, 1) is None  # covered
    assert passed.subsumer == 0
    b = passed.add(_succ(s, (0, 5)), -1, 1)  # includes a: a retires
    assert b == 1 and passed.alive[a] == 0
    st = passed.stats
    assert (st.states, st.zones, st.stored, st.depth) == (1, 1, 2, 1)
    assert passed.by_state[s] == [b]
    c = passed.add(_succ((1,), (0, 0)), b, 2)
    assert passed.path(c) == [b, c]


def test_store_keeps_a_shallower_waiting_node_for_shortest_traces() -> None:
    passed = _intervals(keep_shallower=True)
    a = passed.add(_succ((0,), (1, 2)), -1, 0)
    b = passed.add(_succ((0,), (0, 5)), -1, 3)
    assert b is not None
    assert passed.alive[a] == 1  # still expanded: it is shallower than b
    assert passed.stats.zones == 1  # but no longer stored


def test_store_releases_the_zones_it_cannot_need() -> None:
    """With ``released``, a retired node's zone is dropped once the node will not be
    expanded (retired before, or already expanded) and, for a shallower one kept
    waiting, when it is expanded; stored zones stay.  The nodes of one discrete state
    share one state tuple."""
    def includes(s: State, big: tuple[int, int], small: tuple[int, int]) -> bool:
        return big[0] <= small[0] and small[1] <= big[1]

    gone = (9, -9)
    passed: Passed[tuple[int, int]] = Passed(includes, True, released=gone)
    s = (0,)
    a = passed.add(_succ(tuple([0]), (1, 2)), -1, 1)
    b = passed.add(_succ(tuple([0]), (0, 3)), -1, 1)  # same depth: a is dropped
    assert a is not None and b is not None
    assert passed.zone[a] == gone and not passed.alive[a]
    passed.expanded[b] = 1
    c = passed.add(_succ(tuple([0]), (0, 4)), -1, 2)  # b expanded: dropped
    assert c is not None and passed.zone[b] == gone
    d = passed.add(_succ(tuple([0]), (0, 6)), -1, 5)  # c waits, shallower: kept
    assert d is not None and passed.zone[c] == (0, 4) and passed.alive[c]
    assert passed.held == {c}
    passed.release(c)
    assert passed.zone[c] == gone and not passed.held
    assert passed.zone[d] == (0, 6) and passed.by_state[s] == [d]
    assert passed.state[d] is passed.state[c] is passed.state[b] is passed.state[a]
    with pytest.raises(ValueError, match="merges"):
        Passed(includes, True, merge=lambda s, x, y: None, released=gone)


class _Intervals:
    """A transition system over interval zones: 0 -> 1 (0, 0) and 0 -> 2 (0, 1), then
    1 -> 2 (0, 5): state 2's first zone is retired by a deeper one while it waits."""

    transitions = 0

    def __init__(self) -> None:
        self.graph = {0: [(1, (0, 0)), (2, (0, 1))], 1: [(2, (0, 5))], 2: []}
        self.expanded: list[tuple[State, tuple[int, int]]] = []

    def initial(self) -> Iterator[Succ[tuple[int, int]]]:
        yield _succ((0,), (0, 0))

    def next(self, state: State, zone: tuple[int, int]) -> Iterator[Succ[tuple[int, int]]]:
        self.expanded.append((state, zone))
        for t, z in self.graph[state[0]]:
            yield _succ((t,), z)

    def includes(self, state: State, big: tuple[int, int], small: tuple[int, int]) -> bool:
        return big[0] <= small[0] and small[1] <= big[1]

    def equal(self, state: State, a: tuple[int, int], b: tuple[int, int]) -> bool:
        return a == b

    def key(self, state: State, zone: tuple[int, int]) -> tuple[State, tuple[int, int]]:
        return state, zone


def test_covreach_expands_a_held_node_from_its_zone_then_releases_it() -> None:
    """A retired node kept waiting (shallower than the zone that retired it) is expanded
    from its own zone, which is released then."""
    ts = _Intervals()
    gone = (9, -9)
    store: Passed[tuple[int, int]] = Passed(ts.includes, True, released=gone)
    waiting = BreadthFirst()
    covreach(ts, store, waiting, Count(store, waiting), Budget(search.Limits()))
    assert ts.expanded == [((0,), (0, 0)), ((1,), (0, 0)), ((2,), (0, 1)), ((2,), (0, 5))]
    assert store.zone == [(0, 0), (0, 0), gone, (0, 5)] and not store.held
    assert store.by_state[(2,)] == [3]


def test_the_explorer_releases_exactly_the_retired_zones() -> None:
    """At the end of a run, the zone explorer's store holds the zone of every node
    stored and of no node retired (the flagship without symmetry retires 80); the
    compiled core packs them in one byte per entry."""
    model = SpecModel(load(ROOT / "spec/sglang/deferred_release.kvr"))
    zc = search.ZoneCheck(model, search.Limits(), search.Options(symmetry=False))
    res = zc.run()
    store = zc.store
    assert res.holds and (store.stats.stored, store.stats.zones) == (315, 235)
    stored = {k for ks in store.by_state.values() for k in ks}
    assert [k for k, z in enumerate(store.zone) if z != b""] == sorted(stored)
    if backend.C_AVAILABLE:  # one byte per entry (the README says so)
        assert {store.zone[k][0] for k in stored} == {1}


def test_a_run_makes_no_full_garbage_collection() -> None:
    """During a run the collector's third threshold is out of reach (only the young
    generations are collected); it is set back after the run, unless something else
    changed it meanwhile."""
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    model = SpecModel(load(ROOT / "spec/sglang/deferred_release.kvr"))
    options = search.Options(progress=lambda st: seen.append(gc.get_threshold()),
                             progress_interval=0.0)
    assert search.explore(model, options=options).holds
    assert seen and all(t == (*before[:2], NO_FULL_COLLECTIONS) for t in seen)
    assert gc.get_threshold() == before
    try:
        with young_collections_only():
            gc.set_threshold(500, 5, 5)
        assert gc.get_threshold() == (500, 5, 5)
    finally:
        gc.set_threshold(*before)


def test_every_engine_runs_the_shared_loop() -> None:
    """No engine has a search loop of its own: each is covreach over a transition
    system, with a goal."""
    import inspect

    from checker.engines import distributed
    from checker.smt import zones

    assert "covreach(" in inspect.getsource(search.ZoneCheck.search)
    assert "covreach(" in inspect.getsource(synth._synth)
    assert issubclass(zones.PolyTS, DomainTS)
    assert "while waiting" not in inspect.getsource(distributed)


SPEC = """
model timeline_demo
actor a
var ph : {s0, s1, s2} = s0
clock x
clock y
param T in [1, 9] = 3
event a.go() when ph == s0 and x >= 1 do ph := s1; reset x
event a.stop() when ph == s1 and y >= 6 do ph := s2
deadline hurry: x <= T while ph == s1
deadline start: y <= 2 while ph == s0
"""


def _run(t: int) -> tuple[SpecModel, list[State], list[Edge]]:
    model = SpecModel(load_text(SPEC), {"T": Fraction(t)})
    s0 = model.initial_states()[0]
    go = model.edges(s0)[0]
    stop = model.edges(go.target)[0]
    return model, [s0, go.target, stop.target], [go, stop]


def _show(model: SpecModel, ops: list[object]) -> list[str]:
    out = []
    for op in ops:
        if isinstance(op, Elapse):
            out.append("elapse")
        elif isinstance(op, Reset):
            out.append("reset " + ",".join(model.clock_names[c] for c in op.clocks))
        else:
            assert isinstance(op, Holds)
            atoms = " & ".join(f"{model.clock_names[a.clock]}{a.op}{model.bounds[a.bound]}"
                               for a in op.atoms)
            out.append(f"{op.why} {atoms}".rstrip())
    return out


def test_timeline_states_the_trace_semantics() -> None:
    model, states, edges = _run(3)
    ops = list(timeline(model, TraceShape(states, edges)))
    assert _show(model, ops) == [
        "deadline y<=2",
        "elapse", "deadline y<=2", "guard x>=1", "reset x", "deadline x<=T",
        "elapse", "deadline x<=T", "guard y>=6", "deadline",
    ]
    closed = _show(model, list(timeline(model, TraceShape(states, edges), closed=True)))
    assert closed[-2:] == ["elapse", "deadline"]


def _replay(model: SpecModel, states: list[State], edges: list[Edge]) -> bool:
    bounds, _ = scaled_bounds(model.bounds, model.values)
    steps = [TraceStep(None, "initial", None, states[0])] + [
        TraceStep(e.event, model.event_names[e.event], e, t)
        for e, t in zip(edges, states[1:], strict=True)]
    return replay_zone(model, bounds, steps) is not None


def test_the_three_interpretations_agree() -> None:
    # go happens by y = 2 (the start deadline), stop at y >= 6, and x (reset by go)
    # must stay <= T meanwhile: the run is feasible exactly when T >= 4.
    model, states, edges = _run(3)
    shape = TraceShape(states, edges)
    assert [synth.lin_text(c) for c in synth.trace_region(model, shape, ["T"])] == ["T >= 4"]
    assert not _replay(model, states, edges)
    with pytest.raises(ValueError):
        timestamps(model, model.values, shape)
    model, states, edges = _run(5)
    assert _replay(model, states, edges)
    assert timestamps(model, model.values, TraceShape(states, edges)) == [0, 1, 6]

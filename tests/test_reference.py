"""Unit tests of the integer-time reference explorer (tests/reference.py) on tiny
models whose state spaces are counted by hand.

State counts: a state is (discrete state, integer clock values); clocks are
capped at (largest constant + 1) unless ``per_clock=True``.  A run stops after
the first layer (states reachable with the same number of events) that breaks
a property, unless it is exhaustive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

import pytest
from reference import (
    ASSERT,
    DEADLOCK,
    ERROR,
    HOLDS,
    INCONCLUSIVE,
    MODEL_ERROR,
    VIOLATED,
    Semantics,
    deadlocks_along,
    reference_explore,
    replay,
)

from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.model.interface import (
    GE,
    GT,
    LE,
    ClockAtom,
    Edge,
    Hazard,
    LinExpr,
    Param,
    State,
    Symmetry,
    Violation,
)

Atom = tuple[int, str, int]  # (clock, op, constant)


class TableModel:
    """A hand-written TimedModel: discrete states ``(k,)``, edges from a table."""

    def __init__(
        self,
        clocks: Sequence[str],
        edges: Mapping[int, Sequence[tuple[str, Sequence[Atom], Sequence[int], int | None]]],
        deadlines: Mapping[int, Sequence[Atom]] | None = None,
        violations: Mapping[int, Sequence[str]] | None = None,
        hazards: Mapping[int, Sequence[tuple[str, Sequence[Atom]]]] | None = None,
        failures: Mapping[tuple[int, str], str] | None = None,
        constants: Sequence[Fraction] = (),
    ) -> None:
        self.name = "table"
        self.clock_names = list(clocks)
        self.params: dict[str, Param] = {}
        self.values: dict[str, Fraction] = {}
        self.bounds: list[LinExpr] = [LinExpr(Fraction(c)) for c in constants]
        self.event_names: list[str] = []
        self._edges: dict[int, list[Edge]] = {}
        fails = failures or {}
        for s, rows in edges.items():
            out = []
            for name, guard, resets, target in rows:
                if name not in self.event_names:
                    self.event_names.append(name)
                failure = fails.get((s, name))
                out.append(Edge(self.event_names.index(name), self._atoms(guard),
                                tuple(resets), (target if target is not None else s,), failure))
            self._edges[s] = out
        self._deadlines = {s: self._atoms(a) for s, a in (deadlines or {}).items()}
        self._violations = dict(violations or {})
        self._hazards = {s: [Hazard(p, p, self._atoms(a)) for p, a in hs]
                         for s, hs in (hazards or {}).items()}

    def _bound(self, c: int) -> int:
        b = LinExpr(Fraction(c))
        if b not in self.bounds:
            self.bounds.append(b)
        return self.bounds.index(b)

    def _atoms(self, atoms: Sequence[Atom]) -> tuple[ClockAtom, ...]:
        return tuple(ClockAtom(c, op, self._bound(k)) for c, op, k in atoms)

    def initial_states(self) -> list[State]:
        return [(0,)]

    def edges(self, s: State) -> list[Edge]:
        return list(self._edges.get(s[0], []))

    def deadlines(self, s: State) -> list[ClockAtom]:
        return list(self._deadlines.get(s[0], ()))

    def violations(self, s: State) -> list[Violation]:
        return [Violation(p, p) for p in self._violations.get(s[0], ())]

    def hazards(self, s: State) -> list[Hazard]:
        return list(self._hazards.get(s[0], []))

    def symmetries(self) -> list[Symmetry]:
        return []

    def describe(self, s: State) -> dict[str, object]:
        return {"at": s[0]}


def kvr(text: str, **values: int) -> SpecModel:
    return SpecModel(load_text(text, "<test>"), {k: Fraction(v) for k, v in values.items()})


X = 0  # the first clock


# ---- a timed lock, reachable only after a delay

def lock_model(deadline: bool) -> TableModel:
    # s0 --lock [x >= 3]--> s1, and s1 breaks "locked"; optionally x <= 2 in s0.
    return TableModel(
        ["x"],
        {0: [("lock", [(X, GE, 3)], [], 1)]},
        deadlines={0: [(X, LE, 2)]} if deadline else None,
        violations={1: ["locked"]},
    )


@pytest.mark.parametrize("exhaustive", [False, True])
def test_lock_reachable_after_a_delay(exhaustive: bool) -> None:
    r = reference_explore(lock_model(False), exhaustive=exhaustive)
    assert (r.verdict, r.prop, r.events) == (VIOLATED, "locked", 1)
    # Layer 0: s0 with x = 0..4 (cap 4); layer 1: s1 with x = 3, 4.
    assert r.states == 7
    f = r.findings["locked"]
    assert (f.state, f.clocks) == ((1,), (3,))  # the lock needs 3 units of waiting


def test_lock_behind_a_deadline_is_unreachable_but_deadlocks() -> None:
    r = reference_explore(lock_model(True), deadlock=False)
    assert (r.verdict, r.states) == (HOLDS, 3)  # s0 with x = 0, 1, 2
    r = reference_explore(lock_model(True))
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, DEADLOCK, 0, 3)
    assert r.findings[DEADLOCK].clocks == (2,)


def test_lock_kvr() -> None:
    text = """model lock
actor a
var locked : bool = false
clock x
event a.lock() when not locked and x >= 3 do locked := true
invariant free: not locked
"""
    r = reference_explore(kvr(text), exhaustive=True)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, "free", 1, 7)
    assert r.findings["free"].clocks == (3,)


# ---- a deadline that forces an event

def forced_model(deadline: bool) -> TableModel:
    # s0 --go [x >= 1], reset x--> s1; hazard "late" in s0 when x > 2.
    return TableModel(
        ["x"],
        {0: [("go", [(X, GE, 1)], [X], 1)]},
        deadlines={0: [(X, LE, 2)]} if deadline else None,
        hazards={0: [("late", [(X, GT, 2)])]},
    )


def test_deadline_forces_the_event() -> None:
    r = reference_explore(forced_model(True))
    # cap 3: s0 with x = 0..2, then s1 with x = 0..3.
    assert (r.verdict, r.states) == (HOLDS, 7)
    assert DEADLOCK not in r.findings


def test_without_the_deadline_the_event_may_be_late() -> None:
    r = reference_explore(forced_model(False))
    # Layer 0 (s0, x = 0..3) already breaks "late" at x = 3.
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, "late", 0, 4)
    assert r.findings["late"].clocks == (3,)


FORCED_KVR = """model forced
actor a
var done : bool = false
clock x
event a.go() when not done and x >= 1 do done := true
{deadline}
property prompt: not done leadsto done within 2
"""


def test_deadline_forces_the_event_kvr() -> None:
    m = kvr(FORCED_KVR.format(deadline="deadline x <= 2 while not done"))
    r = reference_explore(m, exhaustive=True)
    # Clocks (x, <prompt>), cap 3: pending with 0..2; done with 1..3 (go at 1 or 2).
    assert (r.verdict, r.states) == (HOLDS, 6)
    m = kvr(FORCED_KVR.format(deadline=""))
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, "prompt", 0, 4)


# ---- a deadlock

DEADLOCK_KVR = """model ticks
actor a
var n : 0..2 = 0
clock x
event a.tick() when n < 2 and x == 1 do n := n + 1; reset x
deadline x <= 1
"""


@pytest.mark.parametrize("exhaustive", [False, True])
def test_deadlock_kvr(exhaustive: bool) -> None:
    r = reference_explore(kvr(DEADLOCK_KVR), exhaustive=exhaustive)
    # n = 0, 1, 2 with x = 0, 1 each; n = 2 at x = 1 can neither tick nor wait.
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, DEADLOCK, 2, 6)
    assert (r.findings[DEADLOCK].state, r.findings[DEADLOCK].clocks) == ((2,), (1,))


def test_deadlock_checking_off() -> None:
    r = reference_explore(kvr(DEADLOCK_KVR), deadlock=False)
    assert (r.verdict, r.states) == (HOLDS, 6)


def test_no_deadlock_without_deadlines() -> None:
    # Nothing can fire, but time passes for ever: not a deadlock.
    m = TableModel(["x"], {0: [("never", [(X, LE, 0), (X, GE, 1)], [], 1)]})
    r = reference_explore(m)
    assert (r.verdict, r.states) == (HOLDS, 3)  # x = 0, 1, 2 (the cap: constants 0 and 1)


def test_deadlock_python_model() -> None:
    # s0 must leave by x = 2, but its only edge needs x >= 3.
    m = TableModel(["x"], {0: [("late", [(X, GE, 3)], [], 1)]}, deadlines={0: [(X, LE, 2)]})
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, DEADLOCK, 0, 3)


def test_an_edge_into_a_broken_deadline_does_not_fire() -> None:
    # s0 --go [x >= 2]--> s1, which demands y <= 1; y is never reset: go cannot fire.
    m = TableModel(
        ["x", "y"],
        {0: [("go", [(0, GE, 2)], [], 1)]},
        deadlines={0: [(0, LE, 2)], 1: [(1, LE, 1)]},
        violations={1: ["reached"]},
    )
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, DEADLOCK, 0, 3)
    # Resetting y on the way makes it fire.
    m = TableModel(
        ["x", "y"],
        {0: [("go", [(0, GE, 2)], [1], 1)]},
        deadlines={0: [(0, LE, 2)], 1: [(1, LE, 1)]},
        violations={1: ["reached"]},
    )
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.events) == (VIOLATED, "reached", 1)


# ---- a hazard

HAZARD_KVR = """model slow
actor a
var req : bool = false
var done : bool = false
clock x
event a.ask() when not req do req := true; reset x
event a.serve() when req and not done and x >= 3 do done := true
property resp: req leadsto done within 2
"""


def test_hazard_kvr() -> None:
    m = kvr(HAZARD_KVR)
    # Clocks (x, <resp>), cap 4.  Layer 0: idle, both clocks 0..4 (5 states); ask
    # resets both; layer 1: pending, 0..4 (5 states; <resp> > 2 at 3); layer 2:
    # served at 3 or 4 (2 states).
    r = reference_explore(m, exhaustive=True)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, "resp", 1, 12)
    assert r.findings["resp"].clocks == (3, 3)
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, "resp", 1, 10)


def test_hazard_held_off_by_a_deadline() -> None:
    m = kvr(HAZARD_KVR.replace("x >= 3", "x >= 1") + "deadline x <= 2 while req and not done\n")
    r = reference_explore(m, exhaustive=True)
    assert r.verdict == HOLDS


def test_hazard_python_model() -> None:
    m = TableModel(["x"], {0: []}, hazards={0: [("slow", [(X, GT, 1), (X, LE, 1)])]},
                   constants=[Fraction(1)])
    r = reference_explore(m)
    assert r.verdict == HOLDS  # the hazard's atoms never hold together
    m = TableModel(["x"], {0: []}, hazards={0: [("slow", [(X, GT, 1)])]})
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.states) == (VIOLATED, "slow", 3)
    assert not r.strict  # `>` in a hazard is exact in integer time


# ---- an assert

ASSERT_KVR = """model count
actor p
var n : 0..3 = 0
clock x
event p.step() when n < 3 and x >= 1 do n := n + 1; reset x
event p.check() when n == 2 do assert n != 2 : "n reached {n}"
"""


def test_assert_kvr() -> None:
    m = kvr(ASSERT_KVR)
    r = reference_explore(m)
    # n = 0, 1, 2 with x = 0..2 (cap 2); check fails at n = 2: 3 events.
    assert (r.verdict, r.prop, r.message, r.events, r.states) == (
        VIOLATED, ASSERT, "n reached 2", 3, 9)
    r = reference_explore(m, exhaustive=True)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, ASSERT, 3, 12)


def test_assert_python_model() -> None:
    # The failing edge needs x >= 2, but a deadline x <= 1 forbids it: no violation.
    edges = {0: [("bad", [(X, GE, 2)], [], None), ("ok", [(X, GE, 1)], [X], 1)]}
    fails = {(0, "bad"): "boom"}
    m = TableModel(["x"], edges, deadlines={0: [(X, LE, 1)]}, failures=fails)
    r = reference_explore(m)
    assert (r.verdict, r.states) == (HOLDS, 6)  # s0: x = 0, 1; s1: x = 0..3 (cap 3)
    m = TableModel(["x"], edges, deadlines={0: [(X, LE, 2)]}, failures=fails)
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.message, r.events) == (VIOLATED, ASSERT, "boom", 1)


def test_never_enabled_assert_does_not_hide_a_deadlock() -> None:
    # s0 must leave by x = 2; its only edge (x >= 3) would fail an assert.
    m = TableModel(["x"], {0: [("bad", [(X, GE, 3)], [], None)]},
                   deadlines={0: [(X, LE, 2)]}, failures={(0, "bad"): "boom"})
    r = reference_explore(m)
    assert (r.verdict, r.prop, r.events, r.states) == (VIOLATED, DEADLOCK, 0, 3)


# ---- model errors, bounds, strictness

def test_model_error() -> None:
    text = """model overflow
actor a
var n : 0..1 = 0
clock x
event a.inc() when x >= 1 do n := n + 1; reset x
"""
    r = reference_explore(kvr(text))
    # n = 0 with x = 0..2; inc at x = 1 or 2 reaches n = 1, x = 0, where inc overflows
    # (time still passes there: x = 0..2 again).
    assert (r.verdict, r.prop, r.events, r.states) == (ERROR, MODEL_ERROR, 1, 6)
    assert r.message is not None and "outside 0..1" in r.message


def test_bounds_must_be_integers() -> None:
    text = """model half
param T in [0, 5] = 1.5
actor a
var done : bool = false
clock x
event a.go() when not done and x >= T do done := true
deadline x <= T while not done
"""
    with pytest.raises(ValueError, match="not an integer"):
        reference_explore(kvr(text))
    r = reference_explore(kvr(text, T=2))
    assert (r.verdict, r.states) == (HOLDS, 5)  # x = 0..2, then done at 2 and 3 (cap 3)
    # On a grid of half units, 1.5 is 3 steps.
    r = reference_explore(kvr(text), grid=2)
    assert (r.verdict, r.states) == (HOLDS, 6)  # x = 0..3 halves, done at 3 and 4 (cap 4)


def test_strict_constraints_are_noted() -> None:
    # Dense time fires `go` at x = 0.5; integer time never can.
    text = """model strict
actor a
var done : bool = false
clock x
event a.go() when not done and x > 0 and x < 1 do done := true
invariant never: not done
"""
    r = reference_explore(kvr(text))
    assert r.verdict == HOLDS and r.strict
    r = reference_explore(kvr(text), grid=2)
    assert (r.verdict, r.prop) == (VIOLATED, "never")
    r = reference_explore(kvr(ASSERT_KVR))
    assert not r.strict


def test_max_states() -> None:
    assert reference_explore(kvr(ASSERT_KVR), max_states=4).verdict == INCONCLUSIVE


# ---- dense-only deadlocks and the grid

HALF_KVR = """model half
actor a
var ph : {start, armed, done} = start
clock x, y
event a.arm() when ph == start do ph := armed; reset y
deadline x <= 1 while ph == start
event a.same() when ph == armed and x >= 2 and y >= 2 do ph := done
event a.apart() when ph == armed and x >= 2 and y <= 1 do ph := done
deadline x <= 2 while ph == armed
"""


def test_dense_deadlock_invisible_in_integer_time() -> None:
    # y is reset d in [0, 1] after x; at x = 2 `same` needs d = 0 and `apart` d = 1.
    # Any 0 < d < 1 deadlocks in dense time; integer time only has d = 0 or 1.
    m = kvr(HALF_KVR)
    assert reference_explore(m, exhaustive=True).verdict == HOLDS
    r = reference_explore(m, grid=2)
    assert (r.verdict, r.prop, r.events) == (VIOLATED, DEADLOCK, 1)
    assert r.findings[DEADLOCK].clocks == (4, 3)  # x = 2, y = 1.5


def test_replay_follows_a_path() -> None:
    m = kvr(HALF_KVR)
    s0 = m.initial_states()[0]
    arm = m.edges(s0)[0]
    vals = replay(m, s0, [arm])
    assert vals[0] == {(0, 0), (1, 1)}
    assert vals[1] == {(0, 0), (1, 1), (2, 2), (1, 0), (2, 1)}
    assert deadlocks_along(m, s0, [arm]) == []
    assert deadlocks_along(m, s0, [arm], grid=2) == [(4, 3)]
    other = m.edges(arm.target)[0]
    with pytest.raises(ValueError, match="not an edge"):
        replay(m, s0, [other])


# ---- per-clock caps

@pytest.mark.parametrize("text", [DEADLOCK_KVR, HAZARD_KVR, ASSERT_KVR, HALF_KVR,
                                  FORCED_KVR.format(deadline="")])
def test_per_clock_caps_change_counts_not_verdicts(text: str) -> None:
    m = kvr(text)
    a = reference_explore(m, exhaustive=True)
    b = reference_explore(m, exhaustive=True, per_clock=True)
    assert (a.verdict, a.prop, a.events) == (b.verdict, b.prop, b.events)
    assert {p: f.events for p, f in a.findings.items()} == \
        {p: f.events for p, f in b.findings.items()}
    assert b.states <= a.states


def test_clock_caps() -> None:
    m = kvr(HAZARD_KVR)
    assert Semantics(m).caps == [4, 4]
    assert reference_explore(m, exhaustive=True).caps == [4, 4]
    # Learned: x is compared with 3, <resp> with 2.
    assert reference_explore(m, exhaustive=True, per_clock=True).caps == [4, 3]
    # A clock never compared keeps the initial cap, 1.
    m = kvr(HALF_KVR.replace("and y <= 1", "").replace("and y >= 2", ""))
    assert reference_explore(m, exhaustive=True, per_clock=True).caps == [3, 1]


@pytest.mark.parametrize("decl", [
    "deadline x <= 2 while f[o]",
    "invariant i: f[o]",
    "property p: f[o] leadsto true within 1",  # raises in initial_states() (the observer)
])
def test_model_errors_outside_edges(decl: str) -> None:
    text = f"""model oops
actor a
var o : 0..1? = none
var f : 0..1 -> bool = false
clock x
event a.go() when x >= 1 do f[0] := true
{decl}
"""
    r = reference_explore(kvr(text))
    assert (r.verdict, r.prop, r.events) == (ERROR, MODEL_ERROR, 0)
    assert r.message is not None and "`none` dereferenced" in r.message


def test_time_passes_in_an_error_state() -> None:
    # After `go`, every edge raises; time still passes there, so the response is late.
    text = """model late
actor a
var n : 0..1 = 0
clock x
event a.go() when n == 0 do n := 1
event a.boom() when n == 1 do n := n + 1
property p: n == 1 leadsto n == 0 within 1
"""
    r = reference_explore(kvr(text), exhaustive=True)
    assert set(r.findings) == {MODEL_ERROR, "p"}
    assert (r.findings["p"].events, r.findings["p"].clocks) == (1, (2, 2))
    assert r.findings[MODEL_ERROR].events == 1

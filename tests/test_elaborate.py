"""Elaboration: facts pinned for the flagship specs, the convex splitting of
guards, and the typed IR of every construct."""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers import FLAGSHIPS, ROOT

from checker.diagnostics import SpecError
from checker.language import load, load_text
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.model.interface import GE, GT, LE, LT, LinExpr, Param

# ---- the flagship specs --------------------------------------------------------------------

CLOCKS = [
    "since_abort[A]", "since_abort[B]", "since_told[A]", "since_told[B]",
    "since_post[A, 0]", "since_post[A, 1]", "since_post[B, 0]", "since_post[B, 1]",
]
EVENTS = [
    "decode.allocate(A, s0)", "decode.allocate(B, s0)",
    "prefill.post(A, 0)", "prefill.post(A, 1)", "prefill.post(B, 0)", "prefill.post(B, 1)",
    "decode.land(A, 0)", "decode.land(A, 1)", "decode.land(B, 0)", "decode.land(B, 1)",
    "router.abort(A)", "router.abort(B)",
    "prefill.learn_abort(A)", "prefill.learn_abort(B)",
    "decode.release(A)", "decode.release(B)",
    "decode.finish(A)", "decode.finish(B)",
]
PARAMS = [
    Param("T_prop", Fraction(2), Fraction(0), False, Fraction(10), False),
    Param("T_chunk", Fraction(2), Fraction(0), False, Fraction(10), False),
    Param("T_flight", Fraction(3), Fraction(0), True, Fraction(10), False),
]


@pytest.fixture(scope="module", params=FLAGSHIPS)
def flagship(request: pytest.FixtureRequest) -> ir.Spec:
    return load(ROOT / request.param)


def test_flagship_types_and_symmetry(flagship: ir.Spec) -> None:
    types = {t.name: t for t in flagship.types}
    assert list(types) == ["Req", "Slot", "Chunk"]
    assert types["Req"] == ir.FiniteType("Req", "enum", ("A", "B"), 0, 1, True)
    assert types["Slot"] == ir.FiniteType("Slot", "enum", ("s0",), 0, 0, True)
    assert types["Chunk"] == ir.FiniteType("Chunk", "range", (), 0, 1, False)
    assert [t.name for t in flagship.types if t.symmetric] == ["Req", "Slot"]
    assert len(SpecModel(flagship).symmetries()) == 1  # swap A and B


def test_flagship_parameters(flagship: ir.Spec) -> None:
    if flagship.name == "deferred_release":
        hold = Param("T_hold", Fraction(8), Fraction(0), False, Fraction(40), False)
        assert list(flagship.params) == [*PARAMS, hold]
    else:
        assert list(flagship.params) == PARAMS
    assert [p.range_text() for p in PARAMS] == ["[0, 10]", "[0, 10]", "(0, 10]"]


def test_flagship_sizes(flagship: ir.Spec) -> None:
    model = SpecModel(flagship)
    assert flagship.actors == ("router", "prefill", "decode")
    assert [(v.name, v.size, v.offset) for v in flagship.vars] == [
        ("owner", 1, 0), ("slot", 2, 1), ("phase", 2, 3), ("sent", 2, 5), ("write", 4, 7),
        ("told", 2, 11),
    ]
    assert flagship.state_size == 13 and model.state_size == 13
    assert flagship.clock_count == 8
    assert model.clock_names == CLOCKS
    assert model.event_count == 18
    assert model.event_names == EVENTS
    assert model.initial_states() == [(-1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]


def test_flagship_events_and_branches(flagship: ir.Spec) -> None:
    events = {e.label: e for e in flagship.events}
    assert list(events) == [
        "decode.allocate", "prefill.post", "decode.land", "router.abort",
        "prefill.learn_abort", "decode.release", "decode.finish",
    ]
    branches = {label: len(e.branches) for label, e in events.items()}
    assert branches == {label: 2 if label == "prefill.post" else 1 for label in events}
    post = events["prefill.post"].branches
    assert post[0].clocks == ()  # not told[r]
    (atom,) = post[1].clocks  # since_told[r] <= T_chunk
    assert (atom.clock.name, atom.op, atom.bound) == (
        "since_told", LE, LinExpr(Fraction(0), (("T_chunk", Fraction(1)),))
    )
    assert events["decode.land"].receives is not None
    assert events["decode.land"].receives[0] == "prefill.post"
    assert events["prefill.learn_abort"].receives is not None
    assert events["prefill.learn_abort"].receives[0] == "router.abort"
    release = events["decode.release"].branches
    if flagship.name == "deferred_release":
        (hold,) = release[0].clocks
        assert (hold.clock.name, hold.op, str(hold.bound)) == ("since_abort", GE, "T_hold")
    else:
        assert release[0].clocks == ()


def test_flagship_deadlines(flagship: ir.Spec) -> None:
    got = [(d.name, [(a.clock.name, a.op, str(a.bound)) for a in d.atoms])
           for d in flagship.deadlines]
    expected = [
        ("in_flight", [("since_post", LE, "T_flight")]),
        ("propagation", [("since_abort", LE, "T_prop")]),
    ]
    if flagship.name == "immediate_release":
        expected.append(("free_at_once", [("since_abort", LE, "0")]))
    assert got == expected
    assert flagship.invariants == () and flagship.responses == ()


def test_flagship_assert_message(flagship: ir.Spec) -> None:
    (land,) = [e for e in flagship.events if e.label == "decode.land"]
    (_, check) = land.body
    assert isinstance(check, ir.AssertStmt)
    assert check.pieces == ("write of ", " chunk ", " lands in slot ", " owned by ", "")
    assert [str(vt) if vt else None for _, vt in check.holes] == ["Req", "Chunk", "Slot?", "Req?"]


# ---- convex splitting of guards ------------------------------------------------------------

CLOCK_HEAD = """\
model m
type K = {a, b}
param T in [0, 10] = 5
param U in [0, 10] = 2
actor p
var x : bool = false
var y : K -> bool = false
clock c
clock d : K
"""


def event(guard: str) -> ir.Event:
    spec = load_text(CLOCK_HEAD + f"event p.go() when {guard} do skip\n")
    (ev,) = spec.events
    return ev


def atoms(br: ir.Branch) -> list[str]:
    out = []
    for a in br.clocks:
        idx = ", ".join(str(getattr(i, "value", "?")) for i in a.index)
        out.append(f"{a.clock.name}{f'[{idx}]' if idx else ''} {a.op} {a.bound}")
    return out


def test_data_only_guard_is_one_branch() -> None:
    (br,) = event("x or not x").branches
    assert br.clocks == ()
    assert isinstance(br.data, ir.Binary) and br.data.op == "or"


def test_disjunction_over_a_clock_gives_two_branches() -> None:
    first, second = event("x or c <= T").branches
    assert isinstance(first.data, ir.Read) and first.clocks == ()
    # `or` reads its right operand only where the left one is false.
    assert second.data == ir.Unary("not", first.data) and atoms(second) == ["c <= T"]


def test_a_clock_atom_on_the_left_does_not_protect_the_right() -> None:
    first, second = event("c <= T or x").branches
    assert first.data == ir.Const(1) and atoms(first) == ["c <= T"]
    assert isinstance(second.data, ir.Read) and second.clocks == ()


def test_or_protects_the_right_operand_where_the_left_is_true() -> None:
    spec = load_text(CLOCK_HEAD + "var o : K? = none\n"
                     "event p.go() when o == none or (y[o] and c >= 1) do skip\n")
    first, second = spec.events[0].branches
    assert first.clocks == ()
    assert isinstance(second.data, ir.Binary) and second.data.op == "and"
    assert second.data.left == ir.Unary("not", first.data)
    assert atoms(second) == ["c >= 1"]


def test_a_faulting_clock_index_is_checked_where_the_guard_reads_it() -> None:
    spec = load_text(CLOCK_HEAD + "clock e : 0..1\n"
                     "event p.go(i: 0..1) when i == 0 and e[i + 1] >= 1 do skip\n")
    (br,) = spec.events[0].branches
    assert isinstance(br.data, ir.Binary) and br.data.op == "and"
    assert isinstance(br.data.right, ir.IndexCheck)


def test_negation_is_pushed_into_the_atom() -> None:
    (br,) = event("not (c > T)").branches
    assert atoms(br) == ["c <= T"]
    (br2,) = event("not (c <= T and d[a] < U)").branches[:1]
    assert len(event("not (c <= T and d[a] < U)").branches) == 2
    assert atoms(br2) == ["c > T"]


def test_conjunction_stays_one_branch_and_equality_is_two_atoms() -> None:
    (br,) = event("x and c >= 1 and c < T + U and c == 2 * T").branches
    assert atoms(br) == ["c >= 1", "c < T + U", "c >= 2*T", "c <= 2*T"]
    assert isinstance(br.data, ir.Read)


def test_forall_over_clocks_expands() -> None:
    (br,) = event("forall k: K . d[k] <= T").branches
    assert atoms(br) == ["d[0] <= T", "d[1] <= T"]
    ex = event("exists k: K . y[k] and d[k] > U").branches
    assert [atoms(b) for b in ex] == [["d[0] > U"], ["d[1] > U"]]


def test_implication_over_clocks() -> None:
    left, right = event("x => c <= T").branches
    assert isinstance(left.data, ir.Unary) and left.clocks == ()
    assert isinstance(right.data, ir.Read) and atoms(right) == ["c <= T"]


def test_flipped_and_scaled_bounds() -> None:
    (br,) = event("T >= c and 2 * U - 1 < d[b] and c <= T / 2 + 0.5").branches
    assert atoms(br) == ["c <= T", "d[1] > 2*U - 1", "c <= 0.5*T + 0.5"]
    assert [a.op for a in br.clocks] == [LE, GT, LE]


def test_data_inside_a_quantifier_stays_data() -> None:
    (br,) = event("forall k: K . y[k]").branches
    assert isinstance(br.data, ir.Quant) and br.clocks == ()


def test_deadline_accepts_pushed_negation_and_conjunction() -> None:
    spec = load_text(CLOCK_HEAD + "deadline one: not (c > T) while x\n"
                     "deadline two(k: K): c < U and d[k] <= T\nevent p.go() do skip\n")
    one, two = spec.deadlines
    assert [(a.op, str(a.bound)) for a in one.atoms] == [(LE, "T")]
    assert [(a.op, str(a.bound)) for a in two.atoms] == [(LT, "U"), (LE, "T")]
    assert two.params[0][0] == "k"
    assert isinstance(one.cond, ir.Read)
    assert isinstance(two.cond, ir.Const)


# ---- the IR of other constructs ------------------------------------------------------------

KITCHEN = """\
model kitchen
symmetric type Req = {A, B}
type Chunk = 0..1
type Offset = -2..2
param T in [0, 10] = 2.5
param W = 4
actor p, q
var owner : Req? = none
var level : Offset = -1
var phase : Req -> {idle, busy, gone} = idle
var grid : (Req, Chunk) -> bool = false
var count : 0..3 = 0
clock since : Req
clock tick
event p.start(r: Req)
  when phase[r] == idle and owner == none and count < 3
  do owner := r; phase[r] := busy; count := count + 1; reset since[r], tick
event q.serve(r: Req) receives p.start(r)
  when phase[r] in {busy} and phase[r] not in {gone} and since[r] >= T
  do if owner == r { owner := none } else if count > 2 { level := level - 1 } else { skip }
     phase[r] := gone
     assert forall k: Chunk . not grid[r, k] : "grid of {r} at level {level} is dirty"
invariant bounded(r: Req): phase[r] == gone => count >= 1
property served(r: Req): phase[r] == busy leadsto phase[r] == gone within 2 * T + W
deadline soon(r: Req): since[r] <= T + W while phase[r] == busy
"""


def test_kitchen_sink_elaborates_and_compiles() -> None:
    spec = load_text(KITCHEN, "kitchen.kvr")
    assert spec.name == "kitchen" and spec.path == "kitchen.kvr"
    assert [p.default for p in spec.params] == [Fraction(5, 2), Fraction(4)]
    assert spec.params[1].range_text() == ""
    level = next(v for v in spec.vars if v.name == "level")
    assert (level.value.base.lo, level.value.base.hi, level.init) == (-2, 2, -1)
    phase = next(v for v in spec.vars if v.name == "phase")
    assert phase.value.base.labels == ("idle", "busy", "gone")
    assert [r.name for r in spec.responses] == ["served"]
    assert str(spec.responses[0].within) == "2*T + W"
    assert [i.name for i in spec.invariants] == ["bounded"]
    start, serve = spec.events
    assert len(start.body) == 5  # the reset of two clocks is two statements
    assert [type(s).__name__ for s in start.body[3:]] == ["ResetClock", "ResetClock"]
    assert serve.receives is not None and serve.receives[0] == "p.start"
    model = SpecModel(spec)
    assert model.event_count == 4
    assert model.clock_names == ["since[A]", "since[B]", "tick", "<served[A]>", "<served[B]>"]
    (s0,) = model.initial_states()
    edges = model.edges(s0)
    assert [model.event_names[e.event] for e in edges] == ["p.start(A)", "p.start(B)"]


def test_option_values_are_checked_where_dereferenced() -> None:
    spec = load_text(
        "model m\ntype R = {a, b}\nactor p\nvar o : R? = none\nvar m : R -> bool = false\n"
        "event p.go() when m[o] do skip\n"
    )
    (br,) = spec.events[0].branches
    assert isinstance(br.data, ir.Read)
    (idx,) = br.data.index
    assert isinstance(idx, ir.Some) and idx.site == "<input>:6:21"


def test_ranges_are_checked_where_they_may_overflow() -> None:
    spec = load_text(
        "model m\nactor p\nvar n : 0..3 = 0\nvar small : 0..1 = 0\n"
        "event p.go() do n := n + 1; n := small; n := 2\n"
    )
    inc, widen, const = spec.events[0].body
    assert isinstance(inc, ir.Assign) and isinstance(inc.value, ir.InRange)
    assert (inc.value.lo, inc.value.hi) == (0, 3)
    assert isinstance(widen, ir.Assign) and isinstance(widen.value, ir.Read)
    assert isinstance(const, ir.Assign) and const.value == ir.Const(2)


def test_bare_value_names_take_their_type_from_the_other_side() -> None:
    spec = load_text(
        "model m\ntype S = {idle, busy}\ntype T = {idle, gone}\nactor p\n"
        "var s : S = idle\nvar t : T = idle\n"
        "event p.go() when s == idle and idle == t and t in {idle, gone} do s := busy\n"
    )
    assert spec.vars[0].init == 0 and spec.vars[1].init == 0


def test_quantifier_slots_are_reused_and_counted() -> None:
    spec = load_text(
        "model m\ntype K = {a, b}\nactor p\nvar y : (K, K) -> bool = false\n"
        "event p.go(k: K) when forall i: K . exists j: K . y[i, j] or y[k, j] do skip\n"
    )
    ev = spec.events[0]
    assert ev.nslots == 3
    (br,) = ev.branches
    assert isinstance(br.data, ir.Quant) and br.data.slot == 1
    assert isinstance(br.data.body, ir.Quant) and br.data.body.slot == 2


def test_all_errors_of_the_phase_are_reported_together() -> None:
    with pytest.raises(SpecError) as exc:
        load_text(CLOCK_HEAD + "event p.go() when z do w := 1\nevent q.go() do skip\n"
                  "invariant i: c <= T\n")
    got = [(d.code, d.span.line if d.span else 0) for d in exc.value.diagnostics]
    assert got == [("KVR101", 10), ("KVR101", 10), ("KVR103", 11), ("KVR206", 12)]


def test_large_but_legal_sizes_elaborate() -> None:
    spec = load_text(
        "model m\ntype Big = 0..255\nactor p\nvar m : (Big, Big) -> bool = false\n"
        "event p.go(i: Big, j: Big) do m[i, j] := true\n"
    )
    assert spec.state_size == 65536


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("clock c : (0..300, 0..300)", "too many clock instances"),
        ("event p.go(i: 0..300, j: 0..300) do skip", "too many combinations"),
        ("invariant big: forall i: 0..300, j: 0..300 . true", "too many combinations"),
        ("var a : (0..200, 0..200) -> bool\nvar b : (0..200, 0..200) -> bool",
         "the state has too many cells"),
        ("clock c : 0..99\nevent p.go() when forall k: 0..99 . c[k] <= 1 do skip",
         "may range over at most 64 values"),
    ],
)
def test_size_limits(extra: str, message: str) -> None:
    with pytest.raises(SpecError) as exc:
        load_text(f"model m\nactor p\nevent p.tick() do skip\n{extra}\n")
    assert any(message in d.message for d in exc.value.diagnostics), exc.value.render()
    assert all(d.span is not None for d in exc.value.diagnostics)

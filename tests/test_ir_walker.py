"""The IR walker (``ir.children``/``ir.with_children``) and what is built on it:
substitution, slot renumbering and the operator enums.

Every node kind of the IR must occur in the models walked here (the random model
generator's and a few spec files'), so a node kind the walker mishandles cannot hide.
Renumbering and substitution are checked against the reference interpreter: an
expression evaluates, state by state, as it did before with the slots moved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from modelgen import model_for_seed

from checker.language import load, load_text
from checker.model import ir
from checker.model.interface import LE, LT, NEGATED_OP, ModelRuntimeError, Relation, State
from checker.model.interp import Fault, InterpretedModel

ROOT = Path(__file__).resolve().parent.parent
SPECS = [
    "tests/semantics/broadcast.kvr", "tests/semantics/broadcast_handshake.kvr",
    "tests/semantics/committed.kvr", "tests/regressions/clock_index_fault.kvr",
    "tests/regressions/none_or_clock_index.kvr", "spec/classic/fischer.kvr",
    "spec/sglang/deferred_release.kvr",
]
SEEDS = range(40)
UNUSED_SLOT = 10_000


def _specs() -> Iterator[tuple[str, ir.Spec]]:
    for name in SPECS:
        yield name, load(ROOT / name)
    for seed in SEEDS:
        yield f"seed {seed}", load_text(model_for_seed(seed), f"<seed {seed}>")


@pytest.fixture(scope="module")
def specs() -> list[tuple[str, ir.Spec]]:
    return list(_specs())


def _roots(spec: ir.Spec) -> Iterator[ir.Node]:
    """Every top-level node of a spec, split guards included."""
    for ev in spec.events:
        yield ev.guard
        for br in ev.branches:
            yield br.data
            yield from br.clocks
        yield from ev.body
        if ev.receives is not None:
            yield from ev.receives[1]
    for dl in spec.deadlines:
        yield dl.cond
        yield from dl.atoms
    for inv in spec.invariants:
        yield inv.expr
    for resp in spec.responses:
        yield resp.trigger
        yield resp.response
    for q in spec.queries:
        yield q.expr


def _kinds(base: type) -> set[type]:
    out: set[type] = set()
    for sub in base.__subclasses__():
        out.add(sub)
        out |= _kinds(sub)
    return out


def _states(model: InterpretedModel, limit: int = 40) -> list[State]:
    """Up to ``limit`` reachable discrete states, breadth first (faulting ones skipped)."""
    seen = list(model.initial_states())
    i = 0
    while i < len(seen) and len(seen) < limit:
        try:
            targets = [e.target for e in model.edges(seen[i]) if e.failure is None]
        except ModelRuntimeError:
            targets = []
        for t in targets:
            if t not in seen and len(seen) < limit:
                seen.append(t)
        i += 1
    return seen


def _value(model: InterpretedModel, e: ir.Expr, s: State, env: dict[int, int]) -> object:
    try:
        return model.eval(e, s, env)
    except Fault as f:
        return f"fault: {f}"


def _guard(model: InterpretedModel, e: ir.Expr, s: State, env: dict[int, int]) -> object:
    try:
        return model.guard(e, False, s, env)
    except Fault as f:
        return f"fault: {f}"


def test_every_node_kind_is_walked(specs: list[tuple[str, ir.Spec]]) -> None:
    seen: set[type] = set()
    for _, spec in specs:
        for root in _roots(spec):
            seen.update(type(x) for x in ir.walk(root))
    wanted = _kinds(ir.Expr) | _kinds(ir.Stmt) | {ir.Receiver}
    assert wanted - seen == set(), "node kinds the walker test never meets"


def test_children_are_the_fields_in_order() -> None:
    var = ir.Var("v", (), ir.ValueType(ir.BOOL), 0, 0, None)  # type: ignore[arg-type]
    a, b, c = ir.Const(1), ir.Local(0, "p"), ir.Read(var, ())
    assert ir.children(ir.Binary(ir.BinaryOp.ADD, a, b)) == (a, b)
    assert ir.children(ir.Member(c, (a, b))) == (c, a, b)
    assert ir.children(ir.Const(3)) == ()
    st = ir.AssertStmt(c, ("x = ", ""), ((b, None), (a, ir.ValueType(ir.BOOL))), "t")
    assert ir.children(st) == (c, b, a)
    rc = ir.Receiver("r", ((1, ir.BOOL),), c, (st,), None)
    assert ir.children(ir.Broadcast("ch", (st,), (rc,))) == (st, rc)
    assert ir.children(rc) == (c, st)
    new = ir.with_children(st, [a, c, b])
    assert new == ir.AssertStmt(a, st.pieces, ((c, None), (b, ir.ValueType(ir.BOOL))), "t")
    with pytest.raises(ValueError, match="3 children, not 2"):
        ir.with_children(st, [a, b])


def test_rebuilding_with_the_same_children_is_the_identity(
        specs: list[tuple[str, ir.Spec]]) -> None:
    for name, spec in specs:
        for root in _roots(spec):
            for x in ir.walk(root):
                assert ir.with_children(x, ir.children(x)) is x, name
            if isinstance(root, ir.Expr):
                assert ir.substitute(root, UNUSED_SLOT, 7) is root, name
                assert ir.remap(root, lambda k: k) == root, name
            else:
                assert ir.remap_stmts((root,), lambda k: k) == (root,), name


def test_remap_moves_every_slot_and_back(specs: list[tuple[str, ir.Spec]]) -> None:
    def slots(node: ir.Node) -> list[int]:
        out: list[int] = []
        for x in ir.walk(node):
            if isinstance(x, (ir.Local, ir.Quant)):
                out.append(x.slot)
            elif isinstance(x, ir.Receiver):
                out.extend(sl for sl, _ in x.slots)
                if x.instance is not None and x.instance[1] is not None:
                    out.append(x.instance[1])
        return out

    moved = 0
    for name, spec in specs:
        for ev in spec.events:
            body = ir.remap_stmts(ev.body, lambda k: k + 5)
            assert [sl for st in body for sl in slots(st)] == \
                [sl + 5 for st in ev.body for sl in slots(st)], name
            assert ir.remap_stmts(body, lambda k: k - 5) == ev.body, name
            guard = ir.relocate(ev.guard, 5)
            assert slots(guard) == [sl + 5 for sl in slots(ev.guard)], name
            assert ir.relocate(guard, -5) == ev.guard, name
            moved += len(slots(ev.guard)) + sum(len(slots(st)) for st in ev.body)
    assert moved > 500  # not vacuous


def test_substitution_and_renumbering_agree_with_evaluation(
        specs: list[tuple[str, ir.Spec]]) -> None:
    compared = 0
    for name, spec in specs:
        model = InterpretedModel(spec)
        states = _states(model)
        decls: list[tuple[tuple[tuple[str, ir.FiniteType], ...], list[ir.Expr]]] = [
            (ev.params, [ev.guard]) for ev in spec.events]
        decls += [(inv.params, [inv.expr]) for inv in spec.invariants]
        decls += [(dl.params, [dl.cond]) for dl in spec.deadlines]
        decls += [(r.params, [r.trigger, r.response]) for r in spec.responses]
        for params, exprs in decls:
            if not params:
                continue
            first = params[0][1]
            rest = {k: ft.lo for k, (_, ft) in enumerate(params) if k > 0}
            for e in exprs:
                clocks = ir.has_clock(e)
                judge = _guard if clocks else _value
                for v in first.values():
                    fixed = ir.substitute(e, 0, v)
                    assert not any(isinstance(x, ir.Local) and x.slot == 0
                                   for x in ir.walk(fixed)), name
                    shifted = ir.relocate(e, 3)
                    for s in states:
                        want = judge(model, e, s, {0: v, **rest})
                        # slot 0 is bound to a wrong value: the substituted copy must
                        # not read it
                        assert judge(model, fixed, s, {0: first.hi + 1, **rest}) == want, name
                        moved = {k + 3: x for k, x in {0: v, **rest}.items()}
                        assert judge(model, shifted, s, moved) == want, name
                        compared += 1
    assert compared > 5000


def test_operators_are_enum_members(specs: list[tuple[str, ir.Spec]]) -> None:
    for name, spec in specs:
        for root in _roots(spec):
            for x in ir.walk(root):
                if isinstance(x, ir.Binary):
                    assert type(x.op) is ir.BinaryOp, name
                elif isinstance(x, ir.Unary):
                    assert type(x.op) is ir.UnaryOp, name
                elif isinstance(x, ir.Quant):
                    assert type(x.kind) is ir.Quantifier, name
                elif isinstance(x, ir.ClockTest):
                    assert type(x.op) is Relation, name


def test_operators_read_and_print_as_written() -> None:
    assert [str(op) for op in ir.BinaryOp] == [
        "and", "or", "=>", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"]
    assert f"{ir.BinaryOp.IMPLIES}" == "=>" and ir.UnaryOp("not") is ir.UnaryOp.NOT
    assert [op for op in ir.BinaryOp if op.logical] == ["and", "or", "=>"]
    assert [op for op in ir.BinaryOp if op.arithmetic] == ["+", "-", "*", "/", "%"]
    assert sum(op.comparison for op in ir.BinaryOp) == 6
    assert {NEGATED_OP[r] for r in Relation} == set(Relation)
    assert NEGATED_OP[LT] == ">=" and hash(LE) == hash("<=")

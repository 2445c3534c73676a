"""Bounded loops in statements: `for k: T { ... }` is the body once per value of T, in
order, unrolled when the spec is loaded (so every engine sees plain statements)."""

from __future__ import annotations

import pytest
from helpers import run_cli

from checker import api
from checker.diagnostics import SpecError
from checker.language import ast, load_text
from checker.language.syntax import parse
from checker.model.compiled import SpecModel
from checker.model.interp import InterpretedModel

HEAD = """model m
type Chunk = 0..2
type Mode = {fast, slow}
actor p
var w : (Mode, Chunk) -> 0..3 = 0
var n : 0..9 = 0
clock c : Chunk
"""


def test_the_parser_reads_a_loop() -> None:
    spec = parse(HEAD + "event p.go do for k: Chunk { w[fast, k] := 1; reset c[k] } n := 1\n")
    ev = spec.decls[-1]
    assert isinstance(ev, ast.EventDecl)
    loop, after = ev.body
    assert isinstance(loop, ast.For) and isinstance(after, ast.Assign)
    assert loop.binder.name == "k" and len(loop.body) == 2


def _graph(text: str) -> dict[tuple[int, ...], list[tuple[object, ...]]]:
    """Every reachable discrete state's edges: event, guard, resets, target, failure."""
    model = SpecModel(load_text(text, "g.kvr"))
    out: dict[tuple[int, ...], list[tuple[object, ...]]] = {}
    todo = list(model.initial_states())
    while todo:
        s = todo.pop()
        if s in out:
            continue
        edges = model.edges(s)
        out[s] = [(model.event_names[e.event], e.guard, tuple(sorted(e.resets)), e.target,
                   e.failure) for e in edges]
        todo.extend(e.target for e in edges if e.failure is None)
    return out


def test_a_loop_behaves_as_its_unrolled_body() -> None:
    loop = ("event p.go when n < 3 do for m: Mode { for k: Chunk {\n"
            "  if k > 0 and m == slow { w[m, k] := w[m, k - 1] + 1 } reset c[k] } }\n"
            "  n := n + 1; assert n < 3 : \"n is {n}\"\n")
    body = []
    for mode in ("fast", "slow"):
        for k in range(3):
            if k > 0 and mode == "slow":
                body.append(f"w[{mode}, {k}] := w[{mode}, {k - 1}] + 1")
            body.append(f"reset c[{k}]")
    body.append('n := n + 1; assert n < 3 : "n is {n}"')
    flat = "event p.go when n < 3 do " + "; ".join(body) + "\n"
    got, want = _graph(HEAD + loop), _graph(HEAD + flat)
    assert got == want and len(got) == 3


def test_a_loop_runs_in_order_in_both_models() -> None:
    text = HEAD + ("event p.go when n == 0 do for k: Chunk { n := n + 1; w[fast, k] := n }\n"
                   "event p.check when n == 3\n"
                   "  do for k: Chunk { assert w[fast, k] == k + 1 : \"w[{k}] is {w[fast, k]}\" }"
                   "\n     n := 9\n"
                   "reachable done: n == 9\n")
    spec = load_text(text, "o.kvr")
    out = api.check(spec)
    assert out.verdict is api.HOLDS and out.query("done").status is api.REACHABLE
    compiled, interp = SpecModel(spec), InterpretedModel(spec, {})
    (s0,) = compiled.initial_states()
    assert [e.target for e in compiled.edges(s0)] == [e.target for e in interp.edges(s0)]
    (e,) = compiled.edges(s0)
    assert compiled.describe(e.target)["w[fast, 2]"] == "3"


def test_an_assert_in_a_loop_names_the_iteration(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "a.kvr"
    path.write_text(HEAD + "event p.go when n == 0 do for k: Chunk {"
                    " assert k < 2 : \"chunk {k} is too far\" }\n", encoding="utf-8")
    code, out, _ = run_cli("check", str(path))
    assert code == 1
    assert "VIOLATED: assert: chunk 2 is too far" in out


def test_a_loop_inside_a_process() -> None:
    spec = load_text(HEAD + "process Q {\n  var m : Chunk -> bool = false\n"
                     "  location idle, busy\n"
                     "  event go from idle to busy do for k: Chunk { m[k] := true }\n"
                     "}\nreachable all: forall k: Chunk . Q.m[k]\n", "p.kvr")
    assert api.check(spec).query("all").status is api.REACHABLE


@pytest.mark.parametrize(("body", "code", "message"), [
    ("for r: Req { n := 1 }", "KVR306",
     "a `for` loop cannot range over the symmetric type Req"),
    ("for k: Chnk { n := 1 }", "KVR105", "unknown type `Chnk`"),
    ("for k: Chunk { k := 1 }", "KVR205", "`k` is a bound name and cannot be assigned"),
    ("for n: Chunk { skip }", "KVR102", "`n` shadows a global declaration; choose another name"),
    ("for k: Chunk { for k: Mode { skip } }", "KVR102", "`k` is already bound here"),
    ("for k: 0..999 { for j: 0..99 { n := 0 } }", "KVR301",
     "this loop unrolls into 100000 statements (at most 4096)"),
])
def test_loop_errors(body: str, code: str, message: str) -> None:
    with pytest.raises(SpecError) as exc:
        load_text(HEAD + "symmetric type Req = {A, B}\n" + f"event p.go do {body}\n", "e.kvr")
    d = exc.value.diagnostics[0]
    assert (d.code, d.message) == (code, message)


def test_the_loops_of_a_spec_unroll_into_a_bounded_total() -> None:
    events = "".join(f"event p.e{i} do for a: 0..63 {{ for b: 0..63 {{ n := 0 }} }}\n"
                     for i in range(20))
    with pytest.raises(SpecError) as exc:
        load_text(HEAD + events, "big.kvr")
    (d,) = exc.value.diagnostics  # reported once, at the loop that goes over
    assert (d.code, d.message) == (
        "KVR301", "the loops of this spec unroll into more than 65536 statements")
    assert d.span is not None and d.span.line == HEAD.count("\n") + 17

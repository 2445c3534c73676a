"""The parser: every construct of the grammar, the lexer's corner cases, and
the positions (spans) the AST carries."""

from __future__ import annotations

from fractions import Fraction

import pytest

from checker.diagnostics import Span, SpecError
from checker.language import ast, decode_source
from checker.language.syntax import parse, parse_expression

HEAD = "model m\nactor p\n"


def decl(text: str) -> ast.Decl:
    """The single declaration of ``HEAD + text``."""
    spec = parse(HEAD + text)
    assert len(spec.decls) == 2, spec.decls
    return spec.decls[1]


def guard(text: str) -> ast.Expr:
    d = decl(f"event p.go() when {text} do skip")
    assert isinstance(d, ast.EventDecl) and d.guard is not None
    return d.guard


def body(text: str) -> tuple[ast.Stmt, ...]:
    d = decl(f"event p.go() do {text}")
    assert isinstance(d, ast.EventDecl)
    return d.body


def errors(source: str) -> list[tuple[str, int, int, str]]:
    with pytest.raises(SpecError) as exc:
        parse(source, "t.kvr")
    return [
        (d.code, d.span.line if d.span else 0, d.span.column if d.span else 0, d.message)
        for d in exc.value.diagnostics
    ]


# ---- header and layout -----------------------------------------------------------------


def test_header_and_declaration_order() -> None:
    spec = parse("# leading comment\nmodel deferred\n\nactor a, b\n", "x.kvr")
    assert spec.model_name == "deferred"
    assert spec.path == "x.kvr"
    assert spec.model_span == Span(2, 1, 2, 15)
    (actors,) = spec.decls
    assert isinstance(actors, ast.ActorDecl)
    assert [n for n, _ in actors.names] == ["a", "b"]
    assert actors.names[1][1] == Span(4, 10, 4, 11)


def test_declarations_may_span_lines_and_share_lines_with_comments() -> None:
    d = decl("event p.go()   # trailing comment\n  when true\n  # a comment line\n  do skip")
    assert isinstance(d, ast.EventDecl)
    assert d.span.line == 3 and d.span.end_line == 6


def test_crlf_tabs_and_byte_order_mark() -> None:
    src = ("\ufeffmodel m\r\nactor p\r\nvar x : bool = false\r\n"
           "event p.go()\r\n\twhen x\r\n\tdo skip\r\n")
    spec = parse(src)
    ev = spec.decls[-1]
    assert isinstance(ev, ast.EventDecl) and ev.guard is not None
    assert ev.guard.span == Span(5, 7, 5, 8)
    assert decode_source(b"\xef\xbb\xbfmodel m", "f") == "model m"


# ---- types, parameters, variables, clocks -------------------------------------------------


def test_enum_and_range_types() -> None:
    d = decl("symmetric type Req = {A, B,}")
    assert isinstance(d, ast.TypeDecl) and d.symmetric and d.name == "Req"
    assert isinstance(d.body, ast.EnumType)
    assert [v for v, _ in d.body.values] == ["A", "B"]
    r = decl("type Offset = -2..2")
    assert isinstance(r, ast.TypeDecl) and not r.symmetric
    assert r.body == ast.RangeType(Span(3, 15, 3, 20), -2, 2)
    neg = decl("type Low = -5..-3")
    assert isinstance(neg, ast.TypeDecl) and isinstance(neg.body, ast.RangeType)
    assert (neg.body.lo, neg.body.hi) == (-5, -3)


def test_range_lexing_does_not_read_decimals() -> None:
    # `0..2` is 0, `..`, 2 — not the decimal `0.` followed by `.2`.
    d = decl("var sent : 0..2 = 0")
    assert isinstance(d, ast.VarDecl)
    assert d.type == ast.RangeType(Span(3, 12, 3, 16), 0, 2)
    tight = decl("var k:0..10=10")
    assert isinstance(tight, ast.VarDecl) and isinstance(tight.type, ast.RangeType)
    assert tight.type.hi == 10


@pytest.mark.parametrize(
    ("text", "lo", "lo_open", "hi", "hi_open", "default"),
    [
        ("param T in [0, 10] = 2", 0, False, 10, False, 2),
        ("param T in (0, 10] = 3", 0, True, 10, False, 3),
        ("param T in [0.5, 2.25) = 1.75", Fraction(1, 2), False, Fraction(9, 4), True,
         Fraction(7, 4)),
        ("param T = 4", None, False, None, False, 4),
    ],
)
def test_parameters(
    text: str, lo: Fraction | None, lo_open: bool, hi: Fraction | None, hi_open: bool,
    default: Fraction,
) -> None:
    d = decl(text)
    assert isinstance(d, ast.ParamDecl)
    assert (d.lo, d.lo_open, d.hi, d.hi_open, d.default) == (lo, lo_open, hi, hi_open, default)
    assert d.default_span is not None and d.default_span.end_line == 3


def test_parameter_without_default_parses() -> None:
    # The elaborator, not the parser, asks for the default (with a better message).
    d = decl("param T in [0, 10]")
    assert isinstance(d, ast.ParamDecl) and d.default is None
    assert d.range_span == Span(3, 12, 3, 19)


def test_variable_types() -> None:
    opt = decl("var owner : Slot -> Req? = none")
    assert isinstance(opt, ast.VarDecl) and isinstance(opt.type, ast.MapType)
    assert isinstance(opt.type.value, ast.OptionType)
    assert opt.type.value.inner == ast.NamedType(Span(3, 21, 3, 24), "Req")
    assert isinstance(opt.init, ast.NoneLit)
    tup = decl("var write : (Req, Chunk) -> {unsent, flying, landed} = unsent")
    assert isinstance(tup, ast.VarDecl) and isinstance(tup.type, ast.MapType)
    assert [t.name for t in tup.type.domain if isinstance(t, ast.NamedType)] == ["Req", "Chunk"]
    assert isinstance(tup.type.value, ast.EnumType)
    scalar = decl("var n : 0..3")
    assert isinstance(scalar, ast.VarDecl) and scalar.init is None
    inline_dom = decl("var m : {x, y} -> bool = true")
    assert isinstance(inline_dom, ast.VarDecl) and isinstance(inline_dom.type, ast.MapType)
    assert isinstance(inline_dom.type.domain[0], ast.EnumType)


def test_clocks() -> None:
    plain = decl("clock c, d")
    assert isinstance(plain, ast.ClockDecl)
    assert [n for n, _ in plain.names] == ["c", "d"] and plain.domain == ()
    fam = decl("clock since_post : (Req, Chunk)")
    assert isinstance(fam, ast.ClockDecl) and len(fam.domain) == 2


# ---- events and statements -----------------------------------------------------------------


def test_event_parts() -> None:
    d = decl("event decode.land(r: Req, k: Chunk) receives prefill.post(r, k)\n"
             "  when write[r, k] == flying\n  do write[r, k] := landed")
    assert isinstance(d, ast.EventDecl)
    assert (d.actor, d.name) == ("decode", "land")
    assert d.actor_span == Span(3, 7, 3, 13) and d.name_span == Span(3, 14, 3, 18)
    assert [b.name for b in d.params] == ["r", "k"]
    assert d.receives is not None
    assert (d.receives.actor, d.receives.name, len(d.receives.args)) == ("prefill", "post", 2)
    assert d.receives.name_span == Span(3, 46, 3, 58)
    assert isinstance(d.body[0], ast.Assign)


def test_event_without_guard_and_with_no_parameters() -> None:
    d = decl("event p.tick() do skip")
    assert isinstance(d, ast.EventDecl)
    assert d.guard is None and d.params == () and d.receives is None
    assert isinstance(d.body[0], ast.Skip)


def test_statements_separated_by_semicolons_or_newlines() -> None:
    stmts = body("x := 1; y := 2\n  reset c, d[r], e[r, k];")
    assert [type(s).__name__ for s in stmts] == ["Assign", "Assign", "Reset"]
    reset = stmts[2]
    assert isinstance(reset, ast.Reset)
    assert [(c.name, len(c.index or ())) for c in reset.clocks] == [("c", 0), ("d", 1), ("e", 2)]


def test_if_else_if_else() -> None:
    (stmt,) = body("if a { x := 1 } else if b { x := 2; y := 3 } else { skip }")
    assert isinstance(stmt, ast.If)
    assert len(stmt.then) == 1
    (inner,) = stmt.orelse
    assert isinstance(inner, ast.If) and len(inner.then) == 2
    assert isinstance(inner.orelse[0], ast.Skip)
    (empty,) = body("if a { }")
    assert isinstance(empty, ast.If) and empty.then == () and empty.orelse == ()


def test_assert_message_holes_and_their_positions() -> None:
    (stmt,) = body('assert owner[s] in {none, r} : "slot {s} owned by {owner[s]}!"')
    assert isinstance(stmt, ast.Assert)
    assert stmt.pieces == ("slot ", " owned by ", "!")
    assert stmt.message == "slot {s} owned by {owner[s]}!"
    s_hole, owner_hole = stmt.holes
    # `event p.go() do assert owner[s] in {none, r} : "` is 48 characters.
    assert s_hole == ast.Ref(Span(3, 55, 3, 56), "s", Span(3, 55, 3, 56), None)
    assert isinstance(owner_hole, ast.Ref) and owner_hole.name == "owner"
    assert owner_hole.span == Span(3, 68, 3, 76)
    assert stmt.message_span == Span(3, 48, 3, 79)


def test_assert_without_message_and_escapes() -> None:
    (bare,) = body("assert x")
    assert isinstance(bare, ast.Assert) and bare.message is None and bare.holes == ()
    (esc,) = body(r'assert x : "a \"quoted\" \{brace\} {x}"')
    assert isinstance(esc, ast.Assert)
    assert esc.pieces == ('a "quoted" {brace} ', "")
    assert len(esc.holes) == 1


# ---- expressions -----------------------------------------------------------------------------


def test_precedence() -> None:
    e = guard("a or b and not c => d")
    assert isinstance(e, ast.Binary) and e.op == "=>"
    assert isinstance(e.left, ast.Binary) and e.left.op == "or"
    assert isinstance(e.left.right, ast.Binary) and e.left.right.op == "and"
    assert isinstance(e.left.right.right, ast.Unary) and e.left.right.right.op == "not"
    arith = guard("x + 2 * y - 1 <= 3")
    assert isinstance(arith, ast.Binary) and arith.op == "<="
    assert isinstance(arith.left, ast.Binary) and arith.left.op == "-"
    assert isinstance(arith.left.left, ast.Binary) and arith.left.left.op == "+"


def test_implication_is_right_associative() -> None:
    e = guard("a => b => c")
    assert isinstance(e, ast.Binary) and isinstance(e.right, ast.Binary)
    assert e.right.op == "=>"


def test_membership() -> None:
    e = guard("phase[r] in {aborted, freed}")
    assert isinstance(e, ast.Member) and not e.negated and len(e.options) == 2
    n = guard("phase[r] not in {done}")
    assert isinstance(n, ast.Member) and n.negated


def test_quantifiers_with_several_binders() -> None:
    e = guard("forall r: Req, k: 0..1 . exists s: {x, y} . w[r, k] == s")
    assert isinstance(e, ast.Quant) and e.kind == "forall"
    assert [b.name for b in e.binders] == ["r", "k"]
    assert isinstance(e.binders[1].type, ast.RangeType)
    assert isinstance(e.body, ast.Quant) and e.body.kind == "exists"
    assert isinstance(e.body.binders[0].type, ast.EnumType)


def test_literals_and_unary_minus() -> None:
    e = guard("x == -3 and y == 2.5 and z == none and t == true and f == false")
    parts: list[ast.Expr] = []
    while isinstance(e, ast.Binary) and e.op == "and":
        parts.insert(0, e.right)
        e = e.left
    parts.insert(0, e)
    rhs = [p.right for p in parts if isinstance(p, ast.Binary)]
    assert isinstance(rhs[0], ast.Unary) and rhs[0].op == "-"
    assert rhs[1] == ast.Num(rhs[1].span, Fraction(5, 2))
    assert isinstance(rhs[2], ast.NoneLit)
    assert [getattr(r, "value", None) for r in rhs[3:]] == [True, False]


def test_names_that_look_like_keywords() -> None:
    # `format`, `index`, `done`, `into`, `model_x` are names: only whole keywords are reserved.
    spec = parse(HEAD + "type S = {done, format, index, into, model_x, doing}\n"
                 "var index : S = done\nevent p.go() when index == format do index := done\n")
    ty = spec.decls[1]
    assert isinstance(ty, ast.TypeDecl) and isinstance(ty.body, ast.EnumType)
    assert [v for v, _ in ty.body.values] == ["done", "format", "index", "into", "model_x",
                                              "doing"]


@pytest.mark.parametrize("keyword", ["do", "in", "when", "reset", "none", "within", "symmetric"])
def test_keywords_are_reserved(keyword: str) -> None:
    (err,) = errors(HEAD + f"var {keyword} : bool = false\n")
    assert err[:3] == ("KVR003", 3, 5)
    assert f"keyword `{keyword}`" in err[3]


def test_operator_spans() -> None:
    e = guard("since[r] <= T_hold")
    assert isinstance(e, ast.Binary)
    assert e.op_span == Span(3, 28, 3, 30)
    assert e.span == Span(3, 19, 3, 37)
    assert isinstance(e.left, ast.Ref) and e.left.name_span == Span(3, 19, 3, 24)


# ---- deadlines, invariants, properties -------------------------------------------------------


def test_deadline_forms() -> None:
    named = decl("deadline in_flight(r: Req, k: Chunk): since_post[r, k] <= T\n"
                 "  while write[r, k] == flying")
    assert isinstance(named, ast.DeadlineDecl)
    assert named.name == "in_flight" and [b.name for b in named.params] == ["r", "k"]
    assert named.cond is not None
    bare_named = decl("deadline soon: c < 3")
    assert isinstance(bare_named, ast.DeadlineDecl)
    assert bare_named.name == "soon" and bare_named.params == () and bare_named.cond is None
    anon = decl("deadline c <= T while busy")
    assert isinstance(anon, ast.DeadlineDecl) and anon.name is None and anon.cond is not None
    anon_bare = decl("deadline c <= T")
    assert isinstance(anon_bare, ast.DeadlineDecl) and anon_bare.cond is None


def test_invariant_and_property() -> None:
    inv = decl("invariant exclusive(s: Slot): owner[s] != none => busy")
    assert isinstance(inv, ast.InvariantDecl)
    assert inv.name == "exclusive" and len(inv.params) == 1
    assert inv.name_span == Span(3, 11, 3, 20)
    plain = decl("invariant safe: true")
    assert isinstance(plain, ast.InvariantDecl) and plain.params == ()
    prop = decl("property served(r: Req): phase[r] == waiting leadsto phase[r] == done"
                " within 2 * T + 1")
    assert isinstance(prop, ast.PropertyDecl)
    assert isinstance(prop.trigger, ast.Binary) and isinstance(prop.response, ast.Binary)
    assert isinstance(prop.within, ast.Binary) and prop.within.op == "+"


# ---- errors: where they point ------------------------------------------------------------------


def test_every_declaration_reports_its_first_error() -> None:
    got = errors(HEAD + "var x : = 1\nvar y : bool\nvar z : bool = = 2\nevent p.go() do\n")
    assert [(c, line, col) for c, line, col, _ in got] == [
        ("KVR003", 3, 9), ("KVR003", 5, 16), ("KVR005", 6, 14),
    ]


def test_hole_error_points_into_the_string() -> None:
    (err,) = errors(HEAD + 'event p.go() do assert x : "value {x +} here"\n')
    assert err[:3] == ("KVR010", 3, 36)


def test_nesting_limits_are_positioned() -> None:
    deep_not = errors(HEAD + "event p.go() when " + "not " * 120 + "x do skip\n")
    assert [(c, line) for c, line, _, _ in deep_not] == [("KVR006", 3)]
    assert deep_not[0][2] > 18  # inside the guard, not at the start of the declaration
    deep_if = errors(HEAD + "event p.go() do " + "if x { " * 60 + "skip" + " }" * 60 + "\n")
    assert [c for c, *_ in deep_if] == ["KVR006"]


def test_depth_just_under_the_limit_parses() -> None:
    parse(HEAD + "event p.go() when " + "(" * 90 + "x" + ")" * 90 + " do skip\n")
    parse(HEAD + "event p.go() when " + "not " * 90 + "x do skip\n")
    parse(HEAD + "event p.go() do " + "if x { " * 45 + "skip" + " }" * 45 + "\n")


def test_nul_and_non_utf8_are_positioned() -> None:
    assert errors("model m\nactor p\x00\n") == [
        ("KVR001", 2, 8, "file contains NUL bytes; is it a binary file?")
    ]
    with pytest.raises(SpecError) as exc:
        decode_source("model m\n# caf\u00e9 ok\nx \xff".encode("latin-1"), "f.kvr")
    (d,) = exc.value.diagnostics
    assert d.code == "KVR001" and d.span == Span(2, 6, 2, 7)


def test_multibyte_characters_count_as_one_column() -> None:
    with pytest.raises(SpecError) as exc:
        decode_source("model m\n# d\u00e9j\u00e0 vu\n".encode() + b"# \xff", "f.kvr")
    assert exc.value.diagnostics[0].span == Span(3, 3, 3, 4)
    (err,) = errors("model m\n# d\u00e9j\u00e0\nactor \u00e9\n")
    assert err[:3] == ("KVR004", 3, 7)


# ---- stand-alone expressions (e.g. `--assume`) ------------------------------------------------


def test_parse_expression() -> None:
    e = parse_expression("T_hold > T_prop + T_chunk and T_prop <= 5", "<--assume>")
    assert isinstance(e, ast.Binary) and e.op == "and"
    assert isinstance(e.left, ast.Binary) and e.left.span == Span(1, 1, 1, 26)


@pytest.mark.parametrize(
    ("text", "code", "column"),
    [
        ("T > ", "KVR005", 3),
        ("T >> 1", "KVR003", 4),
        ("T && U", "KVR004", 3),
        ("T > " + "-" * 5000 + "1", "KVR006", 1),
        ("T > " + "(" * 200 + "1" + ")" * 200, "KVR006", 105),
        ("T > " + "-" * 150 + "1", "KVR006", 105),
        (" and ".join(["T > 1"] * 500), "KVR006", 1),
    ],
)
def test_parse_expression_errors(text: str, code: str, column: int) -> None:
    with pytest.raises(SpecError) as exc:
        parse_expression(text, "<--assume>")
    (d,) = exc.value.diagnostics
    assert (d.code, d.file) == (code, "<--assume>")
    assert d.span is not None and (d.span.line, d.span.column) == (1, column)

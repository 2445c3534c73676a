"""Parsing ``.kvr`` text into the positioned AST, with friendly syntax errors.

The file is first cut into top-level declarations (a declaration starts on a
line whose first word is a declaration keyword).  Each piece is parsed on its
own, so one syntax error does not hide the next: every declaration's first
syntax error is reported in one run.  Positions are shifted back to the
coordinates of the whole file.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from checker.diagnostics import Diagnostic, Span, SpecError
from checker.language import ast

MAX_NESTING = 200
MAX_ERRORS = 50

_DECL_START = re.compile(
    r"^[ \t]*(?:symmetric[ \t]+type|type|param|actor|var|clock|event|deadline|invariant"
    r"|property|model)\b",
    re.MULTILINE,
)

_TOKEN_WORDS = {
    "NAME": "a name",
    "UNUMBER": "a number",
    "SIGNED_INT": "an integer",
    "STRING": 'a string "..."',
    "CMP_OP": "a comparison",
    "ADD_OP": "`+` or `-`",
    "MUL_OP": "`*` or `/`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "OPTION": "`?`",
    "SYMMETRIC": "`symmetric`",
    "$END": "end of input",
}


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("checker.language").joinpath("kvrace.lark").read_text("utf-8")
    return Lark(
        grammar,
        parser="lalr",
        start=["header", "decl", "expr"],
        propagate_positions=True,
        maybe_placeholders=True,
    )


def _describe_expected(expected: set[str]) -> str:
    parser = _parser()
    words: set[str] = set()
    for name in expected:
        if name in _TOKEN_WORDS:
            words.add(_TOKEN_WORDS[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            words.add(name.lower())
            continue
        if pattern.type == "str":
            words.add(f"`{pattern.value}`")
        else:
            words.add(name.lower())
    ordered = sorted(words)
    if len(ordered) > 8:
        ordered = [*ordered[:8], "..."]
    return ", ".join(ordered)


_COMMENT_ONLY = re.compile(r"(?:\s|#[^\n]*)*")


def _first_token_span(chunk: _Chunk) -> Span:
    m = re.compile(r"(?:\s|#[^\n]*)*").match(chunk.text)
    skipped = m.end() if m else 0
    line = chunk.line + chunk.text.count("\n", 0, skipped)
    col = skipped - (chunk.text.rfind("\n", 0, skipped) + 1) + 1
    word = re.match(r"\S*", chunk.text[skipped:])
    width = min(40, len(word.group(0))) if word else 1
    return Span(line, col, line, col + max(1, width))


class _Chunk:
    """A slice of the source handed to the parser, with its place in the file."""

    def __init__(self, text: str, line: int, offset: int) -> None:
        self.text = text
        self.line = line  # 1-based line of the chunk's first character
        self.offset = offset


def _split(source: str) -> list[_Chunk]:
    starts = [m.start() for m in _DECL_START.finditer(source)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    chunks = []
    line = 1
    prev = 0
    for i, start in enumerate(starts):
        line += source.count("\n", prev, start)
        prev = start
        end = starts[i + 1] if i + 1 < len(starts) else len(source)
        chunks.append(_Chunk(source[start:end], line, start))
    return chunks


class _Converter:
    """Turns lark trees of one chunk into AST nodes, in file coordinates."""

    def __init__(self, path: str, chunk: _Chunk, first_line_column: int = 0) -> None:
        self.path = path
        self.dl = chunk.line - 1
        self.dc = first_line_column

    def _col(self, line: int, col: int) -> int:
        return col + self.dc if line == 1 else col

    def span(self, node: Tree[Any] | Token) -> Span:
        if isinstance(node, Token):
            line = node.line or 1
            col = node.column or 1
            end_line = node.end_line or line
            end_col = node.end_column or col + len(node)
            return Span(
                line + self.dl, self._col(line, col), end_line + self.dl,
                self._col(end_line, end_col),
            )
        meta = node.meta
        if getattr(meta, "empty", True):
            return Span(1 + self.dl, 1 + self.dc, 1 + self.dl, 2 + self.dc)
        return Span(
            meta.line + self.dl, self._col(meta.line, meta.column),
            meta.end_line + self.dl, self._col(meta.end_line, meta.end_column),
        )

    # ---- expressions ----
    def expr(self, t: Tree[Any] | Token) -> ast.Expr:
        sp = self.span(t)
        if isinstance(t, Token):
            if t.type == "UNUMBER":
                return ast.Num(sp, Fraction(str(t)))
            if t.type == "NAME":
                return ast.Ref(sp, str(t), sp, None)
            raise AssertionError(f"unexpected token {t.type}")
        d = t.data
        if d == "ref":
            return self.ref(t)
        if d == "num":
            return ast.Num(sp, Fraction(str(t.children[0])))
        if d == "true":
            return ast.BoolLit(sp, True)
        if d == "false":
            return ast.BoolLit(sp, False)
        if d == "none":
            return ast.NoneLit(sp)
        if d == "not_":
            return ast.Unary(sp, "not", self.expr(t.children[0]))
        if d == "neg":
            return ast.Unary(sp, "-", self.expr(t.children[0]))
        if d in ("and_", "or_", "implies"):
            op = {"and_": "and", "or_": "or", "implies": "=>"}[d]
            left, right = t.children
            lsp, rsp = self.span(left), self.span(right)
            op_span = Span(lsp.end_line, lsp.end_column, rsp.line, rsp.column)
            return ast.Binary(sp, op, self.expr(left), self.expr(right), op_span)
        if d in ("compare", "binop"):
            left, op, right = t.children
            return ast.Binary(sp, str(op), self.expr(left), self.expr(right), self.span(op))
        if d in ("member", "not_member"):
            value, args = t.children
            return ast.Member(sp, self.expr(value), self.args(args), d == "not_member")
        if d in ("forall_q", "exists_q"):
            kind = "forall" if d == "forall_q" else "exists"
            binders = tuple(self.binder(b) for b in t.children[:-1])
            return ast.Quant(sp, kind, binders, self.expr(t.children[-1]))
        raise AssertionError(f"unexpected tree {d}")

    def args(self, t: Tree[Any] | None) -> tuple[ast.Expr, ...]:
        if t is None:
            return ()
        return tuple(self.expr(c) for c in t.children)

    def ref(self, t: Tree[Any]) -> ast.Ref:
        name = t.children[0]
        index = self.args(t.children[1]) if t.children[1] is not None else None
        return ast.Ref(self.span(t), str(name), self.span(name), index)

    def binder(self, t: Tree[Any]) -> ast.Binder:
        name, typ = t.children
        return ast.Binder(str(name), self.span(name), self.type(typ))

    # ---- types ----
    def type(self, t: Tree[Any]) -> ast.TypeExpr:
        sp = self.span(t)
        d = t.data
        if d == "named_type":
            return ast.NamedType(sp, str(t.children[0]))
        if d == "enum_type":
            return ast.EnumType(sp, tuple((str(c), self.span(c)) for c in t.children))
        if d == "range_type":
            lo, hi = (int(str(c.children[0])) for c in t.children)
            return ast.RangeType(sp, lo, hi)
        if d == "value_type":
            inner = self.type(t.children[0])
            return ast.OptionType(sp, inner) if t.children[1] is not None else inner
        if d == "map_type":
            dom, val = t.children
            return ast.MapType(sp, self.domain(dom), self.type(val))
        raise AssertionError(f"unexpected type tree {d}")

    def domain(self, t: Tree[Any]) -> tuple[ast.TypeExpr, ...]:
        return tuple(self.type(c) for c in t.children)

    # ---- statements ----
    def stmts(self, t: Tree[Any] | None) -> tuple[ast.Stmt, ...]:
        if t is None:
            return ()
        return tuple(self.stmt(c) for c in t.children)

    def stmt(self, t: Tree[Any]) -> ast.Stmt:
        sp = self.span(t)
        d = t.data
        if d == "assign":
            return ast.Assign(sp, self.ref(t.children[0]), self.expr(t.children[1]))
        if d == "reset":
            return ast.Reset(sp, tuple(self.ref(c) for c in t.children))
        if d == "skip":
            return ast.Skip(sp)
        if d == "if_stmt":
            cond, then, orelse = t.children
            return ast.If(sp, self.expr(cond), self.stmts(then), self.else_part(orelse))
        if d == "assert_stmt":
            return self.assert_stmt(t)
        raise AssertionError(f"unexpected statement {d}")

    def else_part(self, t: Tree[Any] | None) -> tuple[ast.Stmt, ...]:
        if t is None:
            return ()
        if t.data == "else_if":
            return (self.stmt(t.children[0]),)
        return self.stmts(t.children[0])

    def assert_stmt(self, t: Tree[Any]) -> ast.Assert:
        cond, msg = t.children
        if msg is None:
            return ast.Assert(self.span(t), self.expr(cond), None, None, (), ())
        raw = str(msg)[1:-1]
        text = re.sub(r"\\(.)", r"\1", raw)
        msg_span = self.span(msg)
        pieces: list[str] = []
        holes: list[ast.Expr] = []
        pos = 0
        for m in re.finditer(r"\{([^{}]*)\}", text):
            pieces.append(text[pos : m.start()])
            pos = m.end()
            hole_src = m.group(1)
            # Holes are parsed as expressions; their spans point into the string literal.
            col = msg_span.column + 1 + m.start(1)
            hole_span = Span(msg_span.line, col, msg_span.line, col + len(hole_src))
            holes.append(_parse_hole(self.path, hole_src, hole_span))
        pieces.append(text[pos:])
        return ast.Assert(
            self.span(t), self.expr(cond), text, msg_span, tuple(holes), tuple(pieces)
        )

    # ---- declarations ----
    def decl(self, t: Tree[Any]) -> ast.Decl:
        sp = self.span(t)
        d = t.data
        c = t.children
        if d == "type_decl":
            sym, name, body = c
            return ast.TypeDecl(sp, str(name), self.span(name), sym is not None, self.type(body))
        if d == "param_decl":
            name, rng, default = c
            lo = hi = None
            lo_open = hi_open = False
            if rng is not None:
                lo_b, lo_n, hi_n, hi_b = rng.children
                lo_open = lo_b.data == "open"
                hi_open = hi_b.data == "open"
                lo = Fraction(str(lo_n.children[0]))
                hi = Fraction(str(hi_n.children[0]))
            dflt = Fraction(str(default.children[0])) if default is not None else None
            dspan = self.span(default) if default is not None else None
            return ast.ParamDecl(
                sp, str(name), self.span(name), lo, lo_open, hi, hi_open, dflt, dspan
            )
        if d == "actor_decl":
            return ast.ActorDecl(sp, tuple((str(n), self.span(n)) for n in c))
        if d == "var_decl":
            name, typ, init = c
            init_e = self.expr(init) if init is not None else None
            return ast.VarDecl(sp, str(name), self.span(name), self.type(typ), init_e)
        if d == "clock_decl":
            names = tuple((str(n), self.span(n)) for n in c if isinstance(n, Token))
            doms = [n for n in c if isinstance(n, Tree)]
            domain = self.domain(doms[0]) if doms else ()
            return ast.ClockDecl(sp, names, domain)
        if d == "event_decl":
            actor, name, formals, recv, guard, body = c
            params = tuple(self.binder(f) for f in formals.children) if formals else ()
            receives = None
            if recv is not None:
                ra, rn, rargs = recv.children
                receives = ast.EventRef(str(ra), str(rn), self.span(recv), self.args(rargs))
            g = self.expr(guard.children[0]) if guard is not None else None
            return ast.EventDecl(
                sp, str(actor), self.span(actor), str(name), self.span(name), params,
                receives, g, self.stmts(body),
            )
        if d == "deadline_decl":
            name, binders, bound, wp = c
            return ast.DeadlineDecl(
                sp, str(name), self.binders(binders), self.expr(bound), self.while_part(wp)
            )
        if d == "anon_deadline":
            bound, wp = c
            return ast.DeadlineDecl(sp, None, (), self.expr(bound), self.while_part(wp))
        if d == "invariant_decl":
            name, binders, e = c
            return ast.InvariantDecl(
                sp, str(name), self.span(name), self.binders(binders), self.expr(e)
            )
        if d == "property_decl":
            name, binders, p, q, w = c
            return ast.PropertyDecl(
                sp, str(name), self.span(name), self.binders(binders),
                self.expr(p), self.expr(q), self.expr(w),
            )
        raise AssertionError(f"unexpected declaration {d}")

    def binders(self, t: Tree[Any] | None) -> tuple[ast.Binder, ...]:
        if t is None:
            return ()
        return tuple(self.binder(f) for f in t.children[0].children)

    def while_part(self, t: Tree[Any] | None) -> ast.Expr | None:
        return self.expr(t.children[0]) if t is not None else None


def _tree_depth_ok(tree: Tree[Any]) -> bool:
    stack: list[tuple[Tree[Any] | Token, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return False
        if isinstance(node, Tree):
            stack.extend((c, depth + 1) for c in node.children if c is not None)
    return True


class _HoleError(Exception):
    def __init__(self, diag: Diagnostic) -> None:
        self.diag = diag


def _parse_hole(path: str, text: str, span: Span) -> ast.Expr:
    try:
        tree = _parser().parse(text, start="expr")
    except UnexpectedInput as exc:
        raise _HoleError(
            Diagnostic(
                "KVR010", f"cannot parse `{{{text}}}` in the assert message as an expression",
                path, span,
            )
        ) from exc
    return _Converter(path, _Chunk(text, span.line, 0), span.column - 1).expr(tree)


def _syntax_diagnostic(path: str, chunk: _Chunk, exc: UnexpectedInput) -> Diagnostic:
    line = (getattr(exc, "line", 1) or 1) + chunk.line - 1
    col = getattr(exc, "column", 1) or 1
    if isinstance(exc, UnexpectedCharacters):
        ch = chunk.text[exc.pos_in_stream] if exc.pos_in_stream < len(chunk.text) else "?"
        notes: tuple[str, ...] = ()
        if ch == "=":
            notes = ("help: compare with `==`; assign with `:=`",)
        elif ch == "&" or ch == "|":
            notes = ("help: write `and` / `or`",)
        elif ch == "!":
            notes = ("help: write `not e` or `a != b`",)
        return Diagnostic(
            "KVR004", f"unexpected character {ch!r}", path, Span(line, col, line, col + 1), notes
        )
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        expected = set(exc.accepts or exc.expected)
        if tok.type == "$END":
            return _eof_diagnostic(path, chunk, expected)
        text = str(tok)
        end_col = col + max(1, len(text))
        notes = _hints(tok, expected)
        what = f"`{text}`" if text else tok.type
        return Diagnostic(
            "KVR003",
            f"unexpected {what}; expected {_describe_expected(expected)}",
            path,
            Span(line, col, line, end_col),
            notes,
        )
    if isinstance(exc, UnexpectedEOF):
        return _eof_diagnostic(path, chunk, set(exc.expected))
    return Diagnostic("KVR003", "syntax error", path, Span(line, col, line, col + 1))


def _eof_diagnostic(path: str, chunk: _Chunk, expected: set[str]) -> Diagnostic:
    stripped = chunk.text.rstrip()
    last_line = chunk.line + stripped.count("\n")
    last_col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    notes: tuple[str, ...] = ()
    if "RBRACE" in expected or any(e == "RBRACE" for e in expected):
        notes = ("help: a `{` is not closed",)
    elif "RSQB" in expected:
        notes = ("help: a `[` is not closed",)
    elif "RPAR" in expected:
        notes = ("help: a `(` is not closed",)
    elif "DO" in expected:
        notes = ("help: an event needs `do` followed by its statements (use `do skip` for none)",)
    return Diagnostic(
        "KVR005",
        f"declaration ends too early; expected {_describe_expected(expected)}",
        path,
        Span(last_line, max(1, last_col - 1), last_line, max(2, last_col)),
        notes,
    )


def _hints(tok: Token, expected: set[str]) -> tuple[str, ...]:
    text = str(tok)
    if text == "=" and "CMP_OP" in expected:
        return ("help: compare with `==`; assign with `:=`",)
    if text == "=" and "__ANON_0" not in expected and any("ASSIGN" in e for e in expected):
        return ("help: assign with `:=`",)
    if "DO" in expected and tok.type != "DO":
        return ("help: an event's statements follow `do` (use `do skip` for none)",)
    if tok.type in ("RBRACE", "RPAR", "RSQB"):
        return (f"help: this `{text}` has no matching opening bracket",)
    if text in ("&&", "||"):
        return ("help: write `and` / `or`",)
    return ()


def parse(source: str, path: str = "<input>") -> ast.SpecFile:
    """Parse ``source`` into a :class:`~checker.language.ast.SpecFile`.

    Raises :class:`~checker.diagnostics.SpecError` with every syntax error found.
    """
    diags: list[Diagnostic] = []
    if "\x00" in source:
        line = source.count("\n", 0, source.index("\x00")) + 1
        raise SpecError(
            [Diagnostic("KVR001", "file contains NUL bytes; is it a binary file?", path,
                        Span(line, 1, line, 2))],
            source,
        )
    if not source.strip():
        raise SpecError(
            [Diagnostic("KVR002", "empty specification: expected `model NAME`", path,
                        Span(1, 1, 1, 2))],
            source,
        )
    chunks = [c for c in _split(source) if _COMMENT_ONLY.fullmatch(c.text) is None]
    model_name = ""
    model_span = Span(1, 1, 1, 2)
    rest = chunks
    first = chunks[0] if chunks else None
    if first is not None and first.text.lstrip().startswith("model"):
        rest = chunks[1:]
        try:
            tree = _parser().parse(first.text, start="header")
            model_name = str(tree.children[0])
            model_span = _Converter(path, first).span(tree)
        except UnexpectedInput as exc:
            diags.append(_syntax_diagnostic(path, first, exc))
    else:
        sp = _first_token_span(chunks[0]) if chunks else Span(1, 1, 1, 2)
        diags.append(
            Diagnostic("KVR002", "a specification starts with `model NAME`", path, sp)
        )
        if chunks and _DECL_START.match(chunks[0].text) is None:
            rest = chunks[1:]  # not a declaration either: reported once, above

    decls: list[ast.Decl] = []
    for chunk in rest:
        if len(diags) >= MAX_ERRORS:
            diags.append(
                Diagnostic("KVR007", f"too many errors; stopped after {MAX_ERRORS}", path, None)
            )
            break
        try:
            tree = _parser().parse(chunk.text, start="decl")
        except UnexpectedInput as exc:
            diags.append(_syntax_diagnostic(path, chunk, exc))
            continue
        conv = _Converter(path, chunk)
        if not _tree_depth_ok(tree):
            diags.append(
                Diagnostic(
                    "KVR006",
                    f"declaration nested too deeply (more than {MAX_NESTING} levels)",
                    path,
                    conv.span(tree),
                )
            )
            continue
        try:
            decls.append(conv.decl(tree))
        except _HoleError as err:
            diags.append(err.diag)
    if diags:
        raise SpecError(diags, source)
    return ast.SpecFile(path, model_name, model_span, tuple(decls))


def decode_source(data: bytes, path: str) -> str:
    """Decode a spec file's bytes as UTF-8, or raise a positioned :class:`SpecError`."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError(
            [Diagnostic("KVR001", f"file is not UTF-8 text (byte 0x{data[exc.start]:02x})",
                        path, Span(line, col, line, col + 1))],
            None,
        ) from None

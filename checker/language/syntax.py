"""Parsing ``.kvr`` text into the positioned AST, with friendly syntax errors.

The file is first cut into top-level declarations (a declaration starts on a
line whose first word is a declaration keyword).  Each piece is parsed on its
own, so one syntax error does not hide the next: every declaration's first
syntax error is reported in one run.  Positions are shifted back to the
coordinates of the whole file.

Keywords are reserved: a keyword where a name is expected is a syntax error
that says so.  Pathological input (very long or very deeply nested
declarations) is rejected with a positioned diagnostic before it can make the
parser slow or a later phase recurse too deeply.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from typing import Any

import lark
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from checker.diagnostics import Diagnostic, Span, SpecError
from checker.language import ast
from checker.model.cache import cache_file
from checker.numbers import MAX_NUMBER_DIGITS as MAX_NUMBER_DIGITS
from checker.numbers import literal_problem

MAX_NESTING = 100
"""Deepest nesting of brackets, expressions and statements in one declaration."""
MAX_ERRORS = 50
"""Syntax errors reported before giving up."""
MAX_DECL_TOKENS = 2000
"""Tokens in one declaration (a real one has well under a hundred)."""
MAX_TOKENS = 50_000
"""Tokens in one file (keeps the worst-case parse time to a few seconds)."""
MAX_PROCESS_TOKENS = 20_000
"""Tokens in one ``process`` declaration, its body included."""
MAX_HOLE_CHARS = 200
"""Length of one ``{expr}`` hole in an assert message."""
MAX_MESSAGE_CHARS = 1000
"""Length of an assert message."""

_DECL_START = re.compile(
    r"^[ \t]*(?:(?:(?:symmetric|ordered)[ \t]+)+type|type|param|const|actor|var|clock|event"
    r"|deadline|invariant|property|reachable|assume|model|process|chan|urgent|fair|broadcast"
    r"|committed"
    r"|location)\b",
    re.MULTILINE,
)

# A cheap scanner, independent of the grammar: strings (possibly unterminated),
# comments, words and numbers, and single punctuation characters.
_SCAN = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?|#[^\n]*|[A-Za-z0-9_]+|[^\sA-Za-z0-9_"#]')
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_CLOSER_TERMINAL = {")": "RPAR", "]": "RSQB", "}": "RBRACE"}

_TOKEN_WORDS = {
    "NAME": "a name",
    "UNUMBER": "a number",
    "SIGNED_INT": "an integer",
    "STRING": 'a string "..."',
    "CMP_OP": "a comparison",
    "ADD_OP": "`+` or `-`",
    "MUL_OP": "`*`, `/` or `%`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "OPTION": "`?`",
    "SYMMETRIC": "`symmetric`",
    "ORDERED": "`ordered`",
    "$END": "end of input",
}
_EXPR_START = frozenset(
    {"NAME", "UNUMBER", "TRUE", "FALSE", "NONE", "LPAR", "FORALL", "EXISTS", "MINUS"}
)
"""The tokens an operand can start with (after `not`, also `not` itself)."""
_OPERATORS = frozenset({"CMP_OP", "ADD_OP", "MUL_OP", "AND", "OR", "IN", "NOT"})

_KEYWORDS: dict[str, str] = {}
"""Keyword text to its terminal name (filled when the parser is built)."""
_PUNCT: dict[str, str] = {}
"""Anonymous punctuation terminal name (``__ANON_n``) to its text, e.g. ``:=``."""


SOFT_KEYWORDS = frozenset({"send", "receive", "from", "to", "fair", "always", "eventually"})
"""Keywords that stay usable as names (an event called ``send``): they only appear
where no name can, so the contextual lexer tells them apart."""


def _reserve_keywords(tok: Token) -> Token:
    # The contextual lexer would read `do` as a NAME where no `do` can follow;
    # retyping it makes keywords reserved everywhere (and errors say "keyword").
    kind = _KEYWORDS.get(str(tok))
    if kind is not None and str(tok) not in SOFT_KEYWORDS:
        tok.type = kind
    return tok


def parser_cache_file(grammar: str) -> str | None:
    """Where the pickled parser for ``grammar`` is kept, or None for no cache.

    The file lives in the private per-user cache directory
    (:mod:`checker.model.cache`); a directory that is a symlink, owned by someone
    else, or open to other users is refused, and so is a file under the parser's
    name that is not a regular file of this user's (no cache, the parser is built
    in memory: about 0.1 s).  The name depends on the grammar and the lark and
    Python versions, so installs do not collide.  lark's own ``cache=True`` is not
    used: it reads a predictable file in the shared temporary directory, which any
    local user could plant.
    """
    key = hashlib.sha256(
        "\0".join([grammar, lark.__version__, sys.version]).encode("utf-8")
    ).hexdigest()[:32]
    path, _ = cache_file(f"parser-{key}.lark")
    return path


def build_parser(grammar: str) -> Lark:
    """The LALR parser of ``grammar``, loaded from the private cache when it is there."""
    cache = parser_cache_file(grammar)
    return Lark(
        grammar,
        parser="lalr",
        start=["header", "decl", "expr"],
        propagate_positions=True,
        maybe_placeholders=True,
        lexer_callbacks={"NAME": _reserve_keywords},
        cache=cache if cache is not None else False,
    )


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("checker.language").joinpath("kvrace.lark").read_text("utf-8")
    parser = build_parser(grammar)
    for term in parser.terminals:
        if term.pattern.type != "str":
            continue
        text = str(term.pattern.value)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
            _KEYWORDS[text] = term.name
        elif term.name.startswith("__"):
            _PUNCT[term.name] = text
    return parser


def _terminal(text: str) -> str:
    """The terminal name lark gave to the punctuation ``text``."""
    _parser()
    for name, value in _PUNCT.items():
        if value == text:
            return name
    return text


@lru_cache(maxsize=1024)
def _parse_small(text: str, start: str) -> Tree[Any]:
    return _parser().parse(text, start=start)


def _parse(text: str, start: str) -> Tree[Any]:
    """Parse one chunk; identical small chunks (the usual case when a file is
    re-checked after an edit) are parsed once."""
    if len(text) <= 4096:
        return _parse_small(text, start)
    return _parser().parse(text, start=start)


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


def _describe_expected(expected: set[str]) -> str:
    """The expected tokens in words, with expression starts and operators grouped."""
    parser = _parser()
    rest = set(expected)
    if "DO" in rest:
        # after a guard (or an event's head), `do` is what is nearly always missing
        rest -= {"$END", "SEND", "RECEIVE"}
    if "DOT" in rest and ("LSQB" in rest or _terminal(":=") in rest or len(rest) > 3):
        rest.discard("DOT")  # `Process.local`, after a name: rarely what was meant
    words: set[str] = set()
    if rest >= _EXPR_START:
        words.add("an expression")
        rest -= {*_EXPR_START, "NOT"}
    operators = {*_OPERATORS, _terminal("=>")}
    if len(rest & operators) >= 3:
        words.add("an operator")
        rest -= operators
        rest.discard("LSQB")  # indexing, after a name
    for name in rest:
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
    # Descriptions ("an expression") first, then tokens, each alphabetically.
    ordered = sorted(words, key=lambda w: (w.startswith("`"), w))
    if len(ordered) > 8:
        return ", ".join([*ordered[:8], "..."])
    return _join(ordered)


# A line holds more than blanks and a comment iff its first non-blank is not `#`.
_NOT_BLANK = re.compile(r"^[ \t\r\f\v]*[^\s#]", re.MULTILINE)


class _Chunk:
    """A slice of the source handed to the parser, with its place in the file."""

    def __init__(self, text: str, line: int, offset: int) -> None:
        self.text = text
        self.line = line  # 1-based line of the chunk's first character
        self.offset = offset

    def position(self, offset: int) -> tuple[int, int]:
        """File line and column of ``offset`` into the chunk (chunks start a line)."""
        line = self.line + self.text.count("\n", 0, offset)
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return line, col

    def span(self, start: int, end: int) -> Span:
        """The file span of ``text[start:end]``, cut at the end of its first line."""
        line, col = self.position(start)
        nl = self.text.find("\n", start, end)
        width = (nl if nl != -1 else end) - start
        return Span(line, col, line, col + max(1, width))


_PROCESS_START = re.compile(r"[ \t]*process\b")


def _block_end(source: str, start: int) -> int:
    """The offset just past the ``}`` that closes the body of the process declared at
    ``start`` (the end of ``source`` if it is never closed)."""
    parens = 0
    depth = 0
    for m in _SCAN.finditer(source, start):
        tok = m.group()
        if tok in ("(", "["):
            parens += 1
        elif tok in (")", "]"):
            parens = max(0, parens - 1)
        elif tok == "{" and (depth or not parens):
            depth += 1
        elif tok == "}" and depth:
            depth -= 1
            if depth == 0:
                return m.end()
    return len(source)


def _split(source: str) -> Iterator[_Chunk]:
    """The declarations of ``source``, lazily (a huge file may be given up on early).

    A ``process`` declaration is one chunk, up to the brace closing its body: the
    declarations inside it are parsed with it."""
    starts = (m.start() for m in _DECL_START.finditer(source))
    start = 0
    line = 1
    skip_to = 0
    for nxt in itertools.chain(starts, [len(source)]):
        if nxt == 0 or (nxt < skip_to and nxt != len(source)):
            continue
        yield _Chunk(source[start:nxt], line, start)
        line += source.count("\n", start, nxt)
        start = nxt
        if _PROCESS_START.match(source, start):
            skip_to = _block_end(source, start)


def _first_token_span(chunk: _Chunk) -> Span:
    for m in _SCAN.finditer(chunk.text):
        if not m.group().startswith("#"):
            word = re.match(r"\S{1,40}", chunk.text[m.start():])
            return chunk.span(m.start(), m.start() + (len(word.group()) if word else 1))
    return Span(chunk.line, 1, chunk.line, 2)


def _last_token_span(chunk: _Chunk) -> Span:
    last: re.Match[str] | None = None
    for m in _SCAN.finditer(chunk.text):
        if not m.group().startswith("#"):
            last = m
    if last is None:
        return Span(chunk.line, 1, chunk.line, 2)
    return chunk.span(last.start(), last.end())


def _open_brackets(text: str, end: int | None = None) -> list[tuple[str, int]]:
    """The brackets still open at offset ``end`` of ``text`` (innermost last)."""
    stack: list[tuple[str, int]] = []
    for m in _SCAN.finditer(text, 0, len(text) if end is None else end):
        ch = m.group()
        if ch in _OPENERS:
            stack.append((ch, m.start()))
        elif ch in _CLOSERS:
            opener = _CLOSERS[ch]
            for i in range(len(stack) - 1, -1, -1):
                if stack[i][0] == opener:
                    del stack[i:]
                    break
    return stack


@dataclass
class _Limits:
    """Where a chunk first passes the size limits, if it does."""

    tokens: int
    too_long: int | None = None
    too_deep: int | None = None


def _check_limits(text: str, budget: int, most: int = MAX_DECL_TOKENS) -> _Limits:
    """Count tokens and bracket depth; stop at the first limit passed."""
    count = 0
    depth = 0
    for m in _SCAN.finditer(text):
        tok = m.group()
        if tok.startswith("#"):
            continue
        count += 1
        if count > most or count > budget:
            return _Limits(count, too_long=m.start())
        if tok in _OPENERS:
            depth += 1
            if depth > MAX_NESTING:
                return _Limits(count, too_deep=m.start())
        elif tok in _CLOSERS:
            depth = max(0, depth - 1)
    return _Limits(count)


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

    def number(self, tok: Tree[Any] | Token) -> Fraction:
        """The value of a number literal, refused when it has too many digits."""
        text = str(tok)
        problem = literal_problem(text)
        if problem is not None:
            raise _ConvertError(Diagnostic(
                "KVR008", f"number with {problem}", self.path,
                self.span(tok),
                ("help: times and bounds are small numbers; scale the time unit instead",),
            ))
        return Fraction(text)

    # ---- expressions ----
    def expr(self, t: Tree[Any] | Token) -> ast.Expr:
        if isinstance(t, Token):
            return self.token_expr(t)
        convert = _EXPR_KINDS.get(t.data)
        if convert is None:
            raise AssertionError(f"unexpected tree {t.data}")
        return convert(self, t)

    def token_expr(self, t: Token) -> ast.Expr:
        """A number or a name standing alone as an expression."""
        sp = self.span(t)
        if t.type == "UNUMBER":
            return ast.Num(sp, self.number(t))
        if t.type == "NAME":
            return ast.Ref(sp, str(t), sp, None)
        raise AssertionError(f"unexpected token {t.type}")

    def cref(self, t: Tree[Any]) -> ast.Expr:
        """A clock named in a constraint."""
        sp = self.span(t)
        return ast.Ref(sp, str(t.children[0]), sp, None)

    def num(self, t: Tree[Any]) -> ast.Expr:
        """A number literal."""
        return ast.Num(self.span(t), self.number(t.children[0]))

    def true(self, t: Tree[Any]) -> ast.Expr:
        """``true``."""
        return ast.BoolLit(self.span(t), True)

    def false(self, t: Tree[Any]) -> ast.Expr:
        """``false``."""
        return ast.BoolLit(self.span(t), False)

    def none(self, t: Tree[Any]) -> ast.Expr:
        """``none``."""
        return ast.NoneLit(self.span(t))

    def not_(self, t: Tree[Any]) -> ast.Expr:
        """``not e``."""
        return ast.Unary(self.span(t), "not", self.expr(t.children[0]))

    def neg(self, t: Tree[Any]) -> ast.Expr:
        """``-e``."""
        return ast.Unary(self.span(t), "-", self.expr(t.children[0]))

    def logical(self, t: Tree[Any]) -> ast.Expr:
        """``a and b``, ``a or b``, ``a => b``: the operator spans the gap between them."""
        op = {"and_": "and", "or_": "or", "implies": "=>"}[t.data]
        left, right = t.children
        lsp, rsp = self.span(left), self.span(right)
        op_span = Span(lsp.end_line, lsp.end_column, rsp.line, rsp.column)
        return ast.Binary(self.span(t), op, self.expr(left), self.expr(right), op_span)

    def binop(self, t: Tree[Any]) -> ast.Expr:
        """A comparison or an arithmetic operation."""
        left, op_tok, right = t.children
        return ast.Binary(
            self.span(t), str(op_tok), self.expr(left), self.expr(right), self.span(op_tok)
        )

    def member(self, t: Tree[Any]) -> ast.Expr:
        """``e in {a, b}`` or ``e not in {a, b}``."""
        value, args = t.children
        return ast.Member(self.span(t), self.expr(value), self.args(args),
                          t.data == "not_member")

    def quant(self, t: Tree[Any]) -> ast.Expr:
        """``forall`` or ``exists`` over binders."""
        kind = "forall" if t.data == "forall_q" else "exists"
        binders = tuple(self.binder(b) for b in t.children[:-1])
        return ast.Quant(self.span(t), kind, binders, self.expr(t.children[-1]))

    def args(self, t: Tree[Any] | None) -> tuple[ast.Expr, ...]:
        if t is None:
            return ()
        return tuple(self.expr(c) for c in t.children)

    def ref(self, t: Tree[Any]) -> ast.Ref:
        name, member, idx = t.children
        index = self.args(idx) if idx is not None else None
        if member is not None:  # `Process.local`: a process's local, over its instances
            return ast.Ref(self.span(t), f"{name}.{member}",
                           self.span(name).merge(self.span(member)), index)
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
            lo_e, hi_e = (self.expr(c) for c in t.children)
            lo, hi = _literal_int(lo_e), _literal_int(hi_e)
            return ast.RangeType(
                sp, lo if lo is not None else 0, hi if hi is not None else 0,
                None if lo is not None else lo_e, None if hi is not None else hi_e,
            )
        if d == "value_type":
            inner = self.type(t.children[0])
            return ast.OptionType(sp, inner) if t.children[1] is not None else inner
        if d == "map_type":
            dom, val = t.children
            return ast.MapType(sp, self.domain(dom), self.type(val))
        raise AssertionError(f"unexpected type tree {d}")

    def domain(self, t: Tree[Any]) -> tuple[ast.TypeExpr, ...]:
        return tuple(self.type(c) for c in t.children)

    def event_mode(self, mode: Tree[Any] | None) -> tuple[bool, Span | None]:
        """``urgent`` or ``committed`` before ``event``: whether the event is urgent (a
        committed one is), and where ``committed`` is written."""
        if mode is None:
            return False, None
        tok = mode.children[0]
        return True, self.span(tok) if str(tok) == "committed" else None

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
        if d == "for_stmt":
            binder, body = t.children
            return ast.For(sp, self.binder(binder), self.stmts(body))
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
        msg_span = self.span(msg)
        if len(raw) > MAX_MESSAGE_CHARS:
            raise _ConvertError(Diagnostic(
                "KVR010", f"assert message is too long (more than {MAX_MESSAGE_CHARS}"
                " characters)", self.path,
                Span(msg_span.line, msg_span.column, msg_span.line, msg_span.column + 1),
            ))
        pieces: list[str] = []
        holes: list[ast.Expr] = []
        sources: list[str] = []
        piece: list[str] = []
        # `\x` is the character x (so `\{` is a literal brace); `{expr}` is a hole.
        for m in re.finditer(r"\\(.)|\{([^{}]*)\}|.", raw):
            if m.group(2) is None:
                piece.append(m.group(1) if m.group(1) is not None else m.group())
                continue
            pieces.append("".join(piece))
            piece = []
            # Holes are parsed as expressions; their spans point into the string literal.
            col = msg_span.column + 1 + m.start(2)
            hole_span = Span(msg_span.line, col, msg_span.line, col + max(1, len(m.group(2))))
            holes.append(_parse_hole(self.path, m.group(2), hole_span))
            sources.append("{" + m.group(2) + "}")
        pieces.append("".join(piece))
        text = "".join(p + (sources[i] if i < len(sources) else "") for i, p in enumerate(pieces))
        return ast.Assert(
            self.span(t), self.expr(cond), text, msg_span, tuple(holes), tuple(pieces)
        )

    # ---- declarations ----
    def decl(self, t: Tree[Any]) -> ast.Decl:
        """The AST of one declaration (a ``*_decl`` rule, or a process item)."""
        build = getattr(self, "_" + t.data, None)
        if build is None:
            raise AssertionError(f"unexpected declaration {t.data}")
        got: ast.Decl = build(self.span(t), t.children)
        return got

    def _type_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``type_decl``."""
        *mods, name, body = c
        words = [str(m) for m in mods]
        return ast.TypeDecl(
            sp, str(name), self.span(name), "symmetric" in words, self.type(body),
            "ordered" in words, tuple(self.span(m) for m in mods),
        )

    def _const_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``const_decl``."""
        name, rng, value = c
        clo: ast.Expr | None = None
        chi: ast.Expr | None = None
        if rng is not None:
            clo, chi = (self.expr(x) for x in rng.children)
        return ast.ConstDecl(sp, str(name), self.span(name), clo, chi, self.expr(value))

    def _param_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``param_decl``."""
        name, rng, default = c
        lo = hi = None
        lo_open = hi_open = False
        if rng is not None:
            lo_b, lo_n, hi_n, hi_b = rng.children
            lo_open = lo_b.data == "open"
            hi_open = hi_b.data == "open"
            lo = self.number(lo_n.children[0])
            hi = self.number(hi_n.children[0])
        dflt = self.number(default.children[0]) if default is not None else None
        dspan = self.span(default) if default is not None else None
        return ast.ParamDecl(
            sp, str(name), self.span(name), lo, lo_open, hi, hi_open, dflt, dspan,
            self.span(rng.children[0]).merge(self.span(rng.children[3]))
            if rng is not None else None,
        )

    def _actor_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``actor_decl``."""
        return ast.ActorDecl(sp, tuple((str(n), self.span(n)) for n in c))

    def _var_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``var_decl``."""
        name, typ, init = c
        init_e = self.expr(init) if init is not None else None
        return ast.VarDecl(sp, str(name), self.span(name), self.type(typ), init_e)

    def _clock_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``clock_decl``."""
        names = tuple((str(n), self.span(n)) for n in c if isinstance(n, Token))
        doms = [n for n in c if isinstance(n, Tree)]
        domain = self.domain(doms[0]) if doms else ()
        return ast.ClockDecl(sp, names, domain)

    def _event_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``event_decl``."""
        fair, mode, actor, name, formals, recv, sync, guard, body = c
        is_urgent, committed = self.event_mode(mode)
        sync = self.one_sync(sync, guard.children[1] if guard is not None else None)
        params = tuple(self.binder(f) for f in formals.children) if formals else ()
        receives = None
        if recv is not None:
            ra, rn, rargs = recv.children
            receives = ast.EventRef(
                str(ra), str(rn), self.span(recv), self.args(rargs),
                self.span(ra).merge(self.span(rn)),
            )
        g = self.expr(guard.children[0]) if guard is not None else None
        return ast.EventDecl(
            sp, str(actor), self.span(actor), str(name), self.span(name), params,
            receives, g, self.do_part(body), self.sync(sync), is_urgent,
            fair=self.span(fair) if fair is not None else None, committed=committed,
        )

    def _chan_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``chan_decl``."""
        urgent, bcast, *items = c
        chans = tuple(
            (str(it.children[0]), self.span(it.children[0]),
             tuple(self.type(x) for x in it.children[1:] if x is not None))
            for it in items
        )
        return ast.ChanDecl(sp, chans, urgent is not None, bcast is not None)

    def _process_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``process_decl``."""
        name, formal, *items = c
        param = self.binder(formal) if formal is not None else None
        return ast.ProcessDecl(sp, str(name), self.span(name), param,
                               tuple(self.decl(x) for x in items))

    def _location_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``location_decl``."""
        kind, *locs, inv = c
        return ast.LocationDecl(
            sp, str(kind.children[0]) if kind is not None else "",
            tuple((str(n), self.span(n)) for n in locs),
            self.expr(inv) if inv is not None else None,
        )

    def _local_event(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``local_event``."""
        fair, mode, name, formals, src, dst, sync, guard, body = c
        is_urgent, committed = self.event_mode(mode)
        sync = self.one_sync(sync, guard.children[1] if guard is not None else None)
        params = tuple(self.binder(f) for f in formals.children) if formals else ()
        return ast.LocalEventDecl(
            sp, str(name), self.span(name), params, is_urgent,
            tuple((str(n), self.span(n)) for n in src.children) if src is not None else (),
            (str(dst.children[0]), self.span(dst.children[0])) if dst is not None else None,
            self.sync(sync),
            self.expr(guard.children[0]) if guard is not None else None,
            self.do_part(body),
            self.span(fair) if fair is not None else None,
            committed,
        )

    def _deadline_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``deadline_decl``."""
        name, binders, bound, wp = c
        return ast.DeadlineDecl(
            sp, str(name), self.binders(binders), self.expr(bound), self.while_part(wp)
        )

    def _anon_deadline(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``anon_deadline``."""
        bound, wp = c
        return ast.DeadlineDecl(sp, None, (), self.expr(bound), self.while_part(wp))

    def _invariant_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``invariant_decl``."""
        name, binders, e = c
        return ast.InvariantDecl(
            sp, str(name), self.span(name), self.binders(binders), self.expr(e)
        )

    def _property_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``property_decl``."""
        name, binders, p, q, w = c
        return ast.PropertyDecl(
            sp, str(name), self.span(name), self.binders(binders),
            self.expr(p), self.expr(q), self.expr(w) if w is not None else None,
        )

    def _always_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``always_decl``."""
        name, binders, q = c
        return ast.PropertyDecl(
            sp, str(name), self.span(name), self.binders(binders),
            ast.BoolLit(self.span(q), True), self.expr(q), None, always=True,
        )

    def _reachable_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``reachable_decl``."""
        name, e = c
        return ast.ReachableDecl(sp, str(name), self.span(name), self.expr(e))

    def _assume_decl(self, sp: Span, c: list[Any]) -> ast.Decl:
        """``assume_decl``."""
        return ast.AssumeDecl(sp, self.expr(c[0]))

    def one_sync(self, before: Tree[Any] | None, after: Tree[Any] | None) -> Tree[Any] | None:
        """The synchronisation, written before or after the guard, but once."""
        if before is not None and after is not None:
            raise _ConvertError(Diagnostic(
                "KVR003", "an event takes part in at most one synchronisation", self.path,
                self.span(after),
                ("help: to talk on two channels, split it into two events with a committed"
                 " location between them",)))
        return before if before is not None else after

    def do_part(self, t: Tree[Any] | None) -> tuple[ast.Stmt, ...]:
        return self.stmts(t.children[0]) if t is not None else ()

    def sync(self, t: Tree[Any] | None) -> ast.SyncClause | None:
        if t is None:
            return None
        chan, args = t.children
        return ast.SyncClause("send" if t.data == "send_sync" else "receive", str(chan),
                              self.span(chan), self.args(args), self.span(t))

    def binders(self, t: Tree[Any] | None) -> tuple[ast.Binder, ...]:
        if t is None:
            return ()
        return tuple(self.binder(f) for f in t.children[0].children)

    def while_part(self, t: Tree[Any] | None) -> ast.Expr | None:
        return self.expr(t.children[0]) if t is not None else None


_EXPR_KINDS: dict[str, Callable[[_Converter, Tree[Any]], ast.Expr]] = {
    "ref": _Converter.ref,
    "cref": _Converter.cref,
    "num": _Converter.num,
    "true": _Converter.true,
    "false": _Converter.false,
    "none": _Converter.none,
    "not_": _Converter.not_,
    "neg": _Converter.neg,
    "and_": _Converter.logical,
    "or_": _Converter.logical,
    "implies": _Converter.logical,
    "compare": _Converter.binop,
    "binop": _Converter.binop,
    "member": _Converter.member,
    "not_member": _Converter.member,
    "forall_q": _Converter.quant,
    "exists_q": _Converter.quant,
}
"""The conversion of each kind of expression tree."""


def _literal_int(e: ast.Expr) -> int | None:
    """The value of an integer literal, possibly negated (a range bound), else None."""
    if isinstance(e, ast.Num) and e.value.denominator == 1:
        return int(e.value)
    if isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.operand, ast.Num):
        v = e.operand.value
        return -int(v) if v.denominator == 1 else None
    return None


def _too_deep(tree: Tree[Any]) -> Tree[Any] | Token | None:
    """The first node nested more than :data:`MAX_NESTING` levels deep, if any."""
    stack: list[tuple[Tree[Any] | Token, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return node
        if isinstance(node, Tree):
            stack.extend((c, depth + 1) for c in reversed(node.children) if c is not None)
    return None


def _nesting_diagnostic(path: str, span: Span) -> Diagnostic:
    return Diagnostic(
        "KVR006", f"nested too deeply (more than {MAX_NESTING} levels)", path, span,
        ("help: split the expression, or name parts of it with a quantifier or a variable",),
    )


class _ConvertError(Exception):
    """A diagnostic found while converting one declaration; the declaration is dropped."""

    def __init__(self, diag: Diagnostic) -> None:
        self.diag = diag


def _parse_hole(path: str, text: str, span: Span) -> ast.Expr:
    if len(text) > MAX_HOLE_CHARS:
        raise _ConvertError(
            Diagnostic("KVR010", f"this `{{...}}` hole of the assert message is too long"
                       f" (more than {MAX_HOLE_CHARS} characters)", path, span)
        )
    try:
        tree = _parse(text, "expr")
    except UnexpectedInput as exc:
        raise _ConvertError(
            Diagnostic(
                "KVR010", f"cannot parse `{{{text}}}` in the assert message as an expression",
                path, span,
                ("help: a `{...}` hole holds an expression whose value is shown, such as `{r}`",),
            )
        ) from exc
    conv = _Converter(path, _Chunk(text, span.line, 0), span.column - 1)
    deep = _too_deep(tree)
    if deep is not None:
        raise _ConvertError(_nesting_diagnostic(path, span))
    return conv.expr(tree)


_CHAR_HINTS = {
    "&&": "help: write `and`",
    "||": "help: write `or`",
    "&": "help: write `and`",
    "|": "help: write `or`",
    "!": "help: write `not e` to negate, `a != b` to compare",
    "'": 'help: strings are written in double quotes: "..."',
    '"': 'help: a string ends with `"` on the same line',
}


def _show_char(ch: str) -> str:
    if ch.isprintable() and not ch.isspace():
        return f"`{ch}`"
    return f"character U+{ord(ch):04X}"


def _syntax_diagnostic(path: str, chunk: _Chunk, exc: UnexpectedInput) -> Diagnostic:
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        line, col = chunk.position(pos)
        ch = chunk.text[pos] if pos < len(chunk.text) else "?"
        if chunk.text.startswith(("&&", "||"), pos):
            ch = chunk.text[pos : pos + 2]
        hint = _CHAR_HINTS.get(ch)
        what = "unexpected " + (_show_char(ch) if len(ch) == 1 else f"`{ch}`")
        if ch == '"':
            what = "unterminated string"
        return Diagnostic(
            "KVR004", what, path, Span(line, col, line, col + len(ch)),
            (hint,) if hint else (),
        )
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        expected = set(exc.accepts or exc.expected)
        if tok.type == "$END":
            return _eof_diagnostic(path, chunk, expected)
        pos = tok.start_pos or 0
        text = str(tok)
        line, col = chunk.position(pos)
        span = Span(line, col, line, col + max(1, len(text.split("\n", 1)[0])))
        if text in _CLOSERS and not any(
            op == _CLOSERS[text] for op, _ in _open_brackets(chunk.text, pos)
        ):
            return Diagnostic(
                "KVR003", f"unmatched `{text}`: there is no `{_CLOSERS[text]}` before it",
                path, span,
            )
        notes = _hints(chunk, tok, expected)
        kind = "keyword " if tok.type in _KEYWORDS.values() else ""
        return Diagnostic(
            "KVR003",
            f"unexpected {kind}`{text}`; expected {_describe_expected(expected)}",
            path,
            span,
            notes,
        )
    if isinstance(exc, UnexpectedEOF):
        return _eof_diagnostic(path, chunk, set(exc.expected))
    return Diagnostic("KVR003", "syntax error", path, _first_token_span(chunk))


def _unclosed_note(chunk: _Chunk, opener: tuple[str, int]) -> str:
    line, col = chunk.position(opener[1])
    return f"help: the `{opener[0]}` at line {line}, column {col} is not closed"


def _eof_diagnostic(path: str, chunk: _Chunk, expected: set[str]) -> Diagnostic:
    last = _last_token_span(chunk)
    stack = _open_brackets(chunk.text)
    if stack:
        opener = stack[-1]
        closer = _OPENERS[opener[0]]
        if _CLOSER_TERMINAL[closer] in expected:
            return Diagnostic(
                "KVR005",
                f"this `{opener[0]}` is never closed",
                path,
                chunk.span(opener[1], opener[1] + 1),
                (f"help: add `{closer}` before the declaration ends (line {last.line})",),
            )
    notes: tuple[str, ...] = ()
    if stack:
        notes = (_unclosed_note(chunk, stack[-1]),)
    elif "DO" in expected:
        notes = ("help: an event needs `do` followed by its statements (use `do skip` for none)",)
    return Diagnostic(
        "KVR005",
        f"declaration ends too early; expected {_describe_expected(expected)}",
        path,
        last,
        notes,
    )


def _hints(chunk: _Chunk, tok: Token, expected: set[str]) -> tuple[str, ...]:
    text = str(tok)
    before = re.search(r"\b(next|prev|succ|pred)[ \t]*$", chunk.text[: tok.start_pos or 0])
    if text == "(" and before is not None:
        up = before.group(1) in ("next", "succ")
        return (f"help: there is no `{before.group(1)}(...)`; the"
                f" {'successor' if up else 'predecessor'} of a value `v` of an ordered type"
                f" is written `v {'+' if up else '-'} 1`",)
    if text in ("location", "committed") and not chunk.text[: tok.start_pos or 0].strip():
        return ("help: locations belong to a process: declare them inside"
                " `process NAME { ... }`",)
    assign = _terminal(":=")
    if text in ("=", "==") and assign in expected:
        return ("help: assign with `:=`",)
    if text == "=" and "CMP_OP" in expected:
        return ("help: compare with `==`; assign with `:=`",)
    if text.startswith("-") and "UNUMBER" in expected:
        return ("help: parameter bounds and values cannot be negative",)
    if tok.type in _KEYWORDS.values() and "NAME" in expected:
        # Only when the keyword is followed by what follows a declared name.
        after = chunk.text[tok.end_pos or 0 :].lstrip(" \t")
        if after[:1] in (":", ",", "=", "(", ")", "}", ".", "["):
            return (f"help: `{text}` is a keyword and cannot be used as a name",)
    stack = _open_brackets(chunk.text, tok.start_pos or 0)
    # A bracket open here and never closed in the declaration is the likely culprit.
    if stack and _CLOSER_TERMINAL[_OPENERS[stack[-1][0]]] in expected and (
        stack[-1] in _open_brackets(chunk.text)
    ):
        return (_unclosed_note(chunk, stack[-1]),)
    if "DO" in expected and not expected & {*_OPERATORS, "NAME", "LPAR"}:
        return ("help: an event's statements follow `do` (use `do skip` for none)",)
    line_start = chunk.text.rfind("\n", 0, tok.start_pos or 0) + 1
    if expected <= {"$END", "SEMICOLON", "COMMA"} and not chunk.text[
        line_start : tok.start_pos
    ].strip():
        return ("help: a declaration starts on a new line with its keyword: `type`, `param`,"
                " `const`, `actor`, `var`, `clock`, `event`, `deadline`, `invariant`,"
                " `property`, `reachable`, `assume`, `process` or `chan`",)
    return ()


def _header(path: str, chunk: _Chunk) -> tuple[str, Span, Diagnostic | None]:
    try:
        tree = _parse(chunk.text, "header")
    except UnexpectedInput as exc:
        return "", Span(1, 1, 1, 2), _syntax_diagnostic(path, chunk, exc)
    return str(tree.children[0]), _Converter(path, chunk).span(tree), None


def _is_header(chunk: _Chunk) -> bool:
    return re.match(r"[ \t]*model\b", chunk.text) is not None


def parse(source: str, path: str = "<input>") -> ast.SpecFile:
    """Parse ``source`` into a :class:`~checker.language.ast.SpecFile`.

    Raises :class:`~checker.diagnostics.SpecError` with every syntax error found.
    """
    source = source.removeprefix("\ufeff")
    _refuse_binary(source, path)
    blank = not source.strip()
    chunks = (c for c in _split("" if blank else source) if _NOT_BLANK.search(c.text))
    first = next(chunks, None)
    if first is None:
        what = "empty specification" if blank else "the file holds only comments"
        raise SpecError(
            [Diagnostic("KVR002", f"{what}: expected `model NAME`", path, Span(1, 1, 1, 2),
                        ("help: a specification starts with `model NAME`, then declares"
                         " types, actors, variables and events",))],
            source,
        )
    diags: list[Diagnostic] = []
    model_name, model_span, rest = _model_header(path, first, chunks, diags)
    decls = _declarations(path, rest, diags)
    if diags:
        raise SpecError(diags, source)
    return ast.SpecFile(path, model_name, model_span, tuple(decls))


def _refuse_binary(source: str, path: str) -> None:
    """Raise a :class:`SpecError` at the first NUL byte of ``source``, if any."""
    if "\x00" in source:
        at = source.index("\x00")
        line = source.count("\n", 0, at) + 1
        col = at - (source.rfind("\n", 0, at) + 1) + 1
        raise SpecError(
            [Diagnostic("KVR001", "file contains NUL bytes; is it a binary file?", path,
                        Span(line, col, line, col + 1))],
            source,
        )


def _model_header(path: str, first: _Chunk, chunks: Iterator[_Chunk],
                  diags: list[Diagnostic]) -> tuple[str, Span, Iterable[_Chunk]]:
    """The model's name and span, and the chunks after its header; a missing or late
    header is reported in ``diags``."""
    if _is_header(first):
        model_name, model_span, err = _header(path, first)
        if err is not None:
            diags.append(err)
        return model_name, model_span, chunks
    model_name = ""
    model_span = Span(1, 1, 1, 2)
    listed = [first, *chunks]
    later = next((c for c in listed if _is_header(c)), None)
    if later is not None:
        diags.append(Diagnostic(
            "KVR002", "`model NAME` must come before every other declaration", path,
            _first_token_span(later), ("help: move this line to the top of the file",),
        ))
        model_name, model_span, err = _header(path, later)
        if err is not None:
            diags.append(err)
        listed = [c for c in listed if c is not later]
    else:
        diags.append(Diagnostic(
            "KVR002", "a specification starts with `model NAME`", path,
            _first_token_span(first),
            ("help: add a first line such as `model my_protocol`",),
        ))
    if listed and _DECL_START.match(listed[0].text) is None:
        listed = listed[1:]  # not a declaration either: reported once, above
    return model_name, model_span, listed


def _declarations(path: str, rest: Iterable[_Chunk], diags: list[Diagnostic]
                  ) -> list[ast.Decl]:
    """The declarations of the chunks after the header, their errors added to
    ``diags``, within the limits on errors and tokens."""
    decls: list[ast.Decl] = []
    budget = MAX_TOKENS
    for chunk in rest:
        if len(diags) >= MAX_ERRORS:
            diags.append(Diagnostic(
                "KVR007", f"too many errors; stopped after {MAX_ERRORS}", path,
                _first_token_span(chunk),
            ))
            break
        if _is_header(chunk):
            diags.append(Diagnostic(
                "KVR002", "a file holds one model; this is a second `model` header", path,
                _first_token_span(chunk),
            ))
            continue
        most = MAX_PROCESS_TOKENS if _PROCESS_START.match(chunk.text) else MAX_DECL_TOKENS
        limits = _check_limits(chunk.text, budget, most)
        budget -= limits.tokens
        if limits.too_long is not None:
            if limits.tokens > most:
                msg = f"declaration is too long (more than {most} tokens)"
            else:
                msg = f"specification is too long (more than {MAX_TOKENS} tokens)"
            diags.append(Diagnostic("KVR006", msg, path, _first_token_span(chunk)))
            if budget <= 0:
                break
            continue
        decl = _declaration(path, chunk, limits, diags)
        if decl is not None:
            decls.append(decl)
    return decls


def _declaration(path: str, chunk: _Chunk, limits: _Limits, diags: list[Diagnostic]
                 ) -> ast.Decl | None:
    """The declaration of one chunk within the token limits, or None with its error
    added to ``diags``."""
    if limits.too_deep is not None:
        diags.append(_nesting_diagnostic(
            path, chunk.span(limits.too_deep, limits.too_deep + 1)))
        return None
    try:
        tree = _parse(chunk.text, "decl")
    except UnexpectedInput as exc:
        diags.append(_syntax_diagnostic(path, chunk, exc))
        return None
    conv = _Converter(path, chunk)
    deep = _too_deep(tree)
    if deep is not None:
        sp = conv.span(deep)
        diags.append(_nesting_diagnostic(path, Span(sp.line, sp.column, sp.line,
                                                    sp.column + 1)))
        return None
    try:
        return conv.decl(tree)
    except _ConvertError as err:
        diags.append(err.diag)
        return None


def parse_expression(text: str, path: str = "<input>") -> ast.Expr:
    """Parse a stand-alone expression, such as a command-line assumption.

    The same limits and friendly diagnostics as for declarations apply; spans
    are positions in ``text``.  Raises :class:`~checker.diagnostics.SpecError`.
    """
    chunk = _Chunk(text, 1, 0)
    limits = _check_limits(text, MAX_TOKENS)
    if limits.too_long is not None:
        raise SpecError([Diagnostic(
            "KVR006", f"expression is too long (more than {MAX_DECL_TOKENS} tokens)", path,
            _first_token_span(chunk),
        )], text)
    if limits.too_deep is not None:
        raise SpecError(
            [_nesting_diagnostic(path, chunk.span(limits.too_deep, limits.too_deep + 1))], text
        )
    try:
        tree = _parse(text, "expr")
    except UnexpectedInput as exc:
        raise SpecError([_syntax_diagnostic(path, chunk, exc)], text) from None
    conv = _Converter(path, chunk)
    deep = _too_deep(tree)
    if deep is not None:
        sp = conv.span(deep)
        raise SpecError(
            [_nesting_diagnostic(path, Span(sp.line, sp.column, sp.line, sp.column + 1))], text
        )
    try:
        return conv.expr(tree)
    except _ConvertError as err:
        raise SpecError([err.diag], text) from None

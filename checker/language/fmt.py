"""The canonical layout of ``.kvr`` text (``kvrace fmt``).

The formatter changes whitespace only, never a token or a line break, so a
formatted file parses to the same declarations, with every diagnostic on the
same line.  Within a line it puts canonical spacing between tokens (one space
around binary operators and after commas, none inside index brackets and enum
braces, one inside statement braces, ...), gives declaration and clause lines
(``when``, ``do``, ``while``, ...) their canonical indentation, and strips
trailing blanks, blank lines at the end and a byte-order mark.

Alignment is kept: where the source puts two or more spaces before a token
that canonically follows one space and a token of another line of the
paragraph starts in the same column (a column of ``:`` in a run of ``var``
declarations, of ``in`` and ``=`` in a run of ``param`` declarations), the
token keeps its column when the text before it still fits; otherwise it
follows one space.  A trailing comment keeps its column in the same way
(comments are often aligned to a column of the file, not of a block).  A
formatted file is its own formatting (idempotence), and the layout of the
committed specs is the canonical one.

A file that does not parse is refused with the parser's diagnostics (those
``lint`` prints); the token sequence of the result is checked against the
source's, so a formatting bug can never change what a spec means.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from checker.diagnostics import Diagnostic, SpecError
from checker.language.syntax import parse
from checker.numbers import LITERAL

_TOKEN = re.compile(
    r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'  # a string (the parser has rejected an open one)
    r"|#[^\n]*"
    r"|[A-Za-z_][A-Za-z0-9_]*"
    rf"|{LITERAL}"  # the grammar's number literal (exponents included)
    r"|:=|=>|->|==|!=|<=|>=|\.\."
    r"|\S"
)

_DECL_WORDS = frozenset({
    "model", "type", "symmetric", "ordered", "param", "const", "actor", "var", "clock",
    "event", "deadline", "invariant", "property", "reachable", "process", "chan",
    "urgent", "fair", "broadcast", "committed", "location",
})
"""Words that start a declaration when they start a line."""

_CLAUSE_WORDS = frozenset({"when", "do", "while", "receives", "send", "receive", "from", "to"})
"""Words that start a clause of the declaration above when they start a line."""

_KEYWORDS = frozenset({
    *_DECL_WORDS, "in", "do", "when", "if", "else", "not", "and", "or", "forall", "exists",
    "receives", "send", "receive", "from", "to", "reset", "assert", "while", "leadsto",
    "within", "none", "true", "false", "skip", "always", "eventually",
})
_SOFT = frozenset({"send", "receive", "from", "to", "fair", "always", "eventually"})
"""Keywords that may also be names (see :data:`checker.language.syntax.SOFT_KEYWORDS`)."""

_OPERAND_END = frozenset({")", "]", "}", "?"})
"""Punctuation an operand can end with (a ``-`` after it is binary)."""

_TIGHT_BEFORE = frozenset({",", ";", ")", "]", "?", ".."})
_TIGHT_AFTER = frozenset({"(", "[", ".."})


@dataclass
class Token:
    """One token of a line: its text, its column (0-based) and what it is."""

    text: str
    column: int
    kind: str
    """``name``, ``keyword``, ``number``, ``string``, ``comment`` or ``punct``."""
    message: bool = False
    """A ``:`` that introduces an assert message."""
    quantifier: bool = False
    """A ``.`` that ends the binders of ``forall``/``exists``."""


@lru_cache(maxsize=4096)
def _kind(text: str) -> str:
    ch = text[0]
    if ch == "#":
        return "comment"
    if ch == '"':
        return "string"
    if ch.isdigit():
        return "number"
    if ch.isalpha() or ch == "_":
        return "keyword" if text in _KEYWORDS else "name"
    return "punct"


def tokens(line: str) -> list[Token]:
    """The tokens of one line of spec text."""
    return [Token(m.group(), m.start(), _kind(m.group())) for m in _TOKEN.finditer(line)]


class _Context:
    """What the spacing of a token depends on beyond its two neighbours: open
    brackets, and whether the current declaration is a ``var`` or a ``clock``."""

    def __init__(self) -> None:
        self.brackets: list[str] = []
        """Open brackets: ``(``, ``[``, ``{`` (a set or enum) or ``b`` (a block)."""
        self.quantifiers: list[int] = []
        """Bracket depth of each ``forall``/``exists`` whose ``.`` is still to come."""
        self.decl = ""
        self.colon_seen = False

    def start_decl(self, word: str) -> None:
        """A declaration starts with ``word``."""
        self.decl = word
        self.colon_seen = False


def _is_keyword(tok: Token, prev: Token | None) -> bool:
    """Whether ``tok`` is used as a keyword (a soft keyword after ``event`` or ``.``
    is a name)."""
    if tok.kind != "keyword":
        return False
    return not (tok.text in _SOFT and prev is not None and prev.text in ("event", "."))


def _ends_operand(tok: Token, prev: Token | None) -> bool:
    """Whether ``tok`` can end an operand (so that a ``-`` after it is binary)."""
    if tok.kind in ("name", "number", "string"):
        return True
    if tok.kind == "keyword":
        return tok.text in ("true", "false", "none") or not _is_keyword(tok, prev)
    return tok.text in _OPERAND_END


def _gap(prev2: Token | None, prev: Token, tok: Token, ctx: _Context) -> int:
    """The canonical number of spaces between ``prev`` and ``tok``."""
    t, p = tok.text, prev.text
    if tok.kind == "comment":
        return 1
    if t in _TIGHT_BEFORE or p in _TIGHT_AFTER:
        return 0
    if t == ".":
        return 1 if ctx.quantifiers and ctx.quantifiers[-1] == len(ctx.brackets) else 0
    if p == ".":
        return 1 if prev.quantifier else 0
    if t == ":":
        first_of_decl = ctx.decl in ("var", "clock") and not ctx.colon_seen
        return 1 if first_of_decl or tok.message else 0
    if p == "-" and prev2 is not None and not _ends_operand(prev2, None):
        return 0  # a unary minus
    if p == "-" and prev2 is None:
        return 0
    if t in ("(", "["):
        tight = prev.kind == "name" or (prev.kind == "keyword" and not _is_keyword(prev, prev2))
        return 0 if tight or (p in (")", "]") and t == "[") else 1
    if p == "{":
        return 0 if ctx.brackets and ctx.brackets[-1] == "{" else 1
    if t == "}":
        return 0 if ctx.brackets and ctx.brackets[-1] == "{" else 1
    return 1


def _open_brace_kind(prev: Token | None) -> str:
    """``{`` for the braces of an enum or a set, ``b`` for a block of statements or a
    process body."""
    if prev is None:
        return "b"
    if prev.text in ("in", "=", "->", ":", ",", "(", "{"):
        return "{"
    return "b"


def _mark(line_tokens: list[Token], nxt_line: list[Token] | None) -> None:
    """Flag the ``:`` tokens that introduce an assert message (followed by a string,
    possibly on the next line)."""
    for i, tok in enumerate(line_tokens):
        if tok.text != ":":
            continue
        after = line_tokens[i + 1] if i + 1 < len(line_tokens) else None
        if after is None and nxt_line:
            after = nxt_line[0]
        if after is not None and after.kind == "string":
            tok.message = True


def _layout_line(toks: list[Token], indent: int, ctx: _Context,
                 prev_tail: tuple[Token | None, Token | None], columns: frozenset[int]) -> str:
    """One line, its tokens at their canonical (or kept aligned) columns; ``columns``
    are where the tokens of the lines above and below start (what a token can be
    aligned with)."""
    out: list[str] = [" " * indent]
    col = indent
    prev2, prev = prev_tail
    for i, tok in enumerate(toks):
        if i > 0:
            assert prev is not None
            gap = _gap(prev2, prev, tok, ctx)
            source_gap = tok.column - (toks[i - 1].column + len(toks[i - 1].text))
            aligned = tok.kind == "comment" or tok.column in columns
            if gap == 1 and source_gap >= 2 and tok.column > col and aligned:
                gap = tok.column - col  # an aligned column, kept
            out.append(" " * gap)
            col += gap
        out.append(tok.text)
        col += len(tok.text)
        _advance(ctx, prev, tok)
        if tok.kind != "comment":
            prev2, prev = prev, tok
    return "".join(out)


def _advance(ctx: _Context, prev: Token | None, tok: Token) -> None:
    """Update the context past ``tok``."""
    t = tok.text
    if t in ("(", "["):
        ctx.brackets.append(t)
    elif t == "{":
        ctx.brackets.append(_open_brace_kind(prev))
    elif t in (")", "]", "}"):
        if ctx.brackets:
            ctx.brackets.pop()
        while ctx.quantifiers and ctx.quantifiers[-1] > len(ctx.brackets):
            ctx.quantifiers.pop()
    elif t in ("forall", "exists"):
        ctx.quantifiers.append(len(ctx.brackets))
    elif t == "." and ctx.quantifiers and ctx.quantifiers[-1] == len(ctx.brackets):
        ctx.quantifiers.pop()
        tok.quantifier = True
    elif t == ":" and ctx.decl in ("var", "clock"):
        ctx.colon_seen = True


def _decl_word(toks: list[Token]) -> str | None:
    """The declaration keyword that starts the line, or None for a continuation."""
    for tok in toks:
        if tok.text in ("symmetric", "ordered", "urgent", "fair", "broadcast", "committed"):
            continue
        return tok.text if tok.text in _DECL_WORDS else None
    return None


def _paragraph_columns(lexed: list[list[Token]]) -> list[frozenset[int]]:
    """For each line, the columns where a token of another line of its paragraph
    (the lines between two blank lines) starts: what its tokens can be aligned with."""
    result: list[frozenset[int]] = [frozenset()] * len(lexed)
    start = 0
    for end in [*(i for i, toks in enumerate(lexed) if not toks), len(lexed)]:
        counts: dict[int, int] = {}
        for toks in lexed[start:end]:
            for col in {t.column for t in toks}:
                counts[col] = counts.get(col, 0) + 1
        for i in range(start, end):
            own = {t.column for t in lexed[i]}
            result[i] = frozenset(c for c, n in counts.items() if n > (c in own))
        start = end + 1
    return result


def format_text(source: str, path: str = "<input>") -> str:
    """The canonical layout of ``source``.

    Raises :class:`~checker.diagnostics.SpecError` (the parser's diagnostics) when
    it does not parse."""
    source = source.removeprefix("\ufeff")
    parse(source, path)
    result = _layout(source)
    # A kept alignment can lose the column it was aligned with: lay out again until
    # nothing changes (each round keeps fewer alignments, so this ends).
    for _ in range(1000):
        again = _layout(result)
        if again == result:
            break
        result = again
    _same_tokens(source, result, path)
    return result


def _layout(source: str) -> str:
    """One round of layout of parsed text."""
    lines = source.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    lexed = [tokens(line) for line in lines]
    for i, toks in enumerate(lexed):
        _mark(toks, lexed[i + 1] if i + 1 < len(lexed) else None)
    columns = _paragraph_columns(lexed)
    ctx = _Context()
    depth = 0  # process bodies open
    decl_indent = 0
    tail: tuple[Token | None, Token | None] = (None, None)
    out: list[str] = []
    for i, (line, toks) in enumerate(zip(lines, lexed, strict=True)):
        if not toks:
            out.append("")
            continue
        first = toks[0]
        word = _decl_word(toks) if not ctx.brackets or ctx.brackets == ["b"] * depth else None
        if first.kind == "comment":
            indent = len(line) - len(line.lstrip(" \t"))
        elif word is not None:
            ctx.start_decl(word)
            if depth == 0:
                ctx.brackets.clear()
                ctx.quantifiers.clear()
            indent = decl_indent = 2 * depth
            tail = (None, None)
        elif first.text == "}" and depth and ctx.brackets == ["b"] * depth:
            indent = 2 * (depth - 1)
        elif first.text in _CLAUSE_WORDS and not ctx.brackets[depth:]:
            indent = decl_indent + 2
        else:
            indent = max(decl_indent + 2, len(line) - len(line.lstrip(" \t")))
        before = len(ctx.brackets)
        out.append(_layout_line(toks, indent, ctx, tail, columns[i]))
        code = [t for t in toks if t.kind != "comment"]
        if code:
            tail = (code[-2] if len(code) > 1 else tail[1], code[-1])
        if word == "process":
            depth += 1
        elif first.text == "}" and depth and before == depth and len(ctx.brackets) < before:
            depth -= 1
    result = "\n".join(out).rstrip("\n")
    return result + "\n" if result else ""


def _same_tokens(source: str, result: str, path: str) -> None:
    """Refuse a result whose tokens or lines differ from the source's (a bug here)."""
    def words(text: str) -> list[list[str]]:
        return [_TOKEN.findall(line) for line in text.rstrip().split("\n")]

    if words(source.rstrip()) != words(result.rstrip()):
        raise SpecError([Diagnostic(
            "KVR000", "internal error: formatting would change the spec's tokens; the file"
            " is left as it is", path)])


def unified_diff(source: str, result: str, path: str) -> str:
    """The change formatting makes, as a unified diff (empty when there is none)."""
    return "".join(difflib.unified_diff(
        source.splitlines(keepends=True), result.splitlines(keepends=True),
        fromfile=path, tofile=f"{path} (formatted)"))

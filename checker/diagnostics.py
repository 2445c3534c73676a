"""Positioned diagnostics shared by every phase of kvrace.

A diagnostic names a file, a span in it, a stable code (``KVRnnn``) and a
message; rendered, it looks like a compiler error with the offending source
line and a caret under the span::

    spec/x.kvr:12:8: error[KVR101]: unknown name `phse`
       12 |   when phse[r] == waiting
          |        ^^^^
          = help: did you mean `phase`?

Phases collect every diagnostic they find and raise :class:`SpecError` once,
so a user sees all the problems of a phase in one run.

Codes of the spec front end (``tests/diagnostics/`` holds an example of each):

* KVR000 the file cannot be read (missing, a directory, too large);
* KVR001 not text (NUL bytes, not UTF-8); KVR002 no or misplaced ``model NAME``;
  KVR003 unexpected token; KVR004 unexpected character; KVR005 a declaration
  ends too early (or leaves a bracket open); KVR006 too deeply nested or too
  long; KVR007 too many errors; KVR008 a number with too many digits; KVR010 a bad
  ``{expr}`` hole in an assert message;
* KVR101 unknown name, variable or clock; KVR102 declared twice or shadowing;
  KVR103 unknown actor; KVR104 unknown event; KVR105 unknown type;
  KVR108 no actor; KVR109 no event;
* KVR201 type mismatch; KVR202 wrong number of indexes or arguments; KVR203
  index on a scalar; KVR204 ``none`` where no option is; KVR205 assignment to a
  non-variable; KVR206 a clock or parameter outside a clock bound; KVR207 a
  clock constraint that is not ``clock op bound`` (``!=``, two clocks, nested in
  data); KVR208 a guard that splits into too many convex parts;
* KVR301 empty, infinite or too large domain (or quantifiers over more than 2**20
  bindings in one expression); KVR302 parameter default missing
  or outside its range; KVR303 a bound that is not linear in parameters;
  KVR304 a deadline that is not a conjunction of upper bounds; KVR305 initial
  value outside its type; KVR306 misuse of ``symmetric``; KVR307 a computed constant
  too large (more than 30 digits in its numerator or denominator); KVR310 an
  ``assume`` the parameters' default values do not satisfy.

Outside the front end: KVR309 a parameter constraint no value in the ranges
satisfies (``prove --assume``, or the spec's ``assume`` with the fixed parameters
at their values under ``synth``/``prove``); KVR400 a parameter value a command
refuses (unknown, outside its range or outside an ``assume``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from checker.errors import KvraceError

MAX_SHOWN = 100
"""Diagnostics rendered by :meth:`SpecError.render` (the rest are counted)."""


@dataclass(frozen=True)
class Span:
    """A region of a source file: 1-based line/column, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def merge(self, other: Span) -> Span:
        """The smallest span covering both ``self`` and ``other``."""
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(start[0], start[1], end[0], end[1])


@dataclass(frozen=True)
class Diagnostic:
    """One error found in a specification or on the command line."""

    code: str
    message: str
    file: str
    span: Span | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def sort_key(self) -> tuple[str, int, int, str]:
        """Order diagnostics by file and position, so output is deterministic."""
        if self.span is None:
            return (self.file, 0, 0, self.code)
        return (self.file, self.span.line, self.span.column, self.code)

    def render(self, source: str | None) -> str:
        """The diagnostic as text, with the source line and a caret when available."""
        return self.render_lines(source.split("\n") if source is not None else None)

    def render_lines(self, src_lines: Sequence[str] | None) -> str:
        """:meth:`render`, given the source already split into lines."""
        if self.span is None:
            head = f"{self.file}: error[{self.code}]: {self.message}"
            return "\n".join([head, *(f"   = {n}" for n in self.notes)])
        sp = self.span
        head = f"{self.file}:{sp.line}:{sp.column}: error[{self.code}]: {self.message}"
        lines = [head]
        if src_lines is not None and 1 <= sp.line <= len(src_lines):
            text = src_lines[sp.line - 1].removesuffix("\r")  # CRLF line ends
            col = sp.column
            if len(text) > 200:
                # Very long lines (minified or garbage input) are cut around the caret.
                start = max(0, sp.column - 80)
                cut = text[start : start + 160]
                col = sp.column - start
                if start > 0:
                    cut = "..." + cut
                    col += 3
                if start + 160 < len(text):
                    cut += "..."
                text = cut
            text = _printable(text)
            one_line = sp.end_line == sp.line
            width = sp.end_column - sp.column if one_line else len(text) - col + 1
            width = max(1, min(width, len(text) - col + 2))
            gutter = str(sp.line)
            pad = " " * len(gutter)
            lines.append(f" {gutter} | {text}".rstrip())
            lines.append(f" {pad} | {' ' * (col - 1)}{'^' * width}")
            lines.extend(f" {pad} = {n}" for n in self.notes)
            return "\n".join(lines)
        lines.extend(f"   = {n}" for n in self.notes)
        return "\n".join(lines)


def _printable(line: str) -> str:
    """A source line safe to print: tabs as spaces, other control characters as U+FFFD,
    one character each so the caret stays aligned."""
    out = line.replace("\t", " ")
    if any(ord(c) < 32 or ord(c) == 127 for c in out):
        out = "".join("\ufffd" if ord(c) < 32 or ord(c) == 127 else c for c in out)
    return out


_CONTROL = {c: "\ufffd" for c in (*range(32), 127, *range(0x80, 0xA0)) if c not in (9, 10)}


def printable(text: str) -> str:
    """``text`` safe for a terminal or a diagram label: every control character but
    newline and tab (ESC, BEL, carriage return, the C1 controls, ...) becomes U+FFFD,
    so text from a spec (an assert message) cannot drive the terminal."""
    return text.translate(_CONTROL)


class SpecError(KvraceError):
    """Raised by a phase that found one or more diagnostics."""

    def __init__(self, diagnostics: Sequence[Diagnostic], source: str | None = None) -> None:
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        """All diagnostics, rendered, separated by blank lines."""
        src_lines = self.source.split("\n") if self.source is not None else None
        parts = [d.render_lines(src_lines) for d in self.diagnostics[:MAX_SHOWN]]
        n = len(self.diagnostics)
        if n > MAX_SHOWN:
            parts.append(f"... and {n - MAX_SHOWN} more")
        parts.append(f"{n} error{'s' if n != 1 else ''} found")
        return "\n\n".join(parts)


def did_you_mean(name: str, candidates: Iterable[str]) -> tuple[str, ...]:
    """A ``help:`` note suggesting the closest known name, if one is close."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.7)
    return (f"help: did you mean `{close[0]}`?",) if close else ()

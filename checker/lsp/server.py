"""``kvrace lsp``: the Language Server Protocol over stdio, on pygls.

Each open document is analysed (:class:`~checker.lsp.analysis.Analysis`) when it
is opened or changed; the server publishes its diagnostics (those of ``lint``,
with ``did you mean`` notes as related information and quick fixes) and answers
hover, definition, references, document symbols, completion and formatting from
that analysis.  A code lens on the ``model`` line runs ``kvrace check`` on the
document's text in a subprocess with a time limit and shows the verdict.

A request never fails because of the text: any exception raised while answering
is logged and answered with nothing (the server stays up).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from checker.diagnostics import Diagnostic, SpecError
from checker.language.fmt import format_text
from checker.lsp.analysis import Analysis, Kind, Range, replacement, span_range

CHECK_COMMAND = "kvrace.check"
"""The command the code lens runs: ``check`` on the document."""

_SYMBOL_KINDS = {
    Kind.TYPE: lsp.SymbolKind.Enum, Kind.VALUE: lsp.SymbolKind.EnumMember,
    Kind.PARAM: lsp.SymbolKind.Constant, Kind.CONST: lsp.SymbolKind.Constant,
    Kind.ACTOR: lsp.SymbolKind.Object, Kind.VAR: lsp.SymbolKind.Variable,
    Kind.CLOCK: lsp.SymbolKind.Variable, Kind.EVENT: lsp.SymbolKind.Event,
    Kind.CHANNEL: lsp.SymbolKind.Interface, Kind.PROCESS: lsp.SymbolKind.Class,
    Kind.LOCATION: lsp.SymbolKind.Field, Kind.INVARIANT: lsp.SymbolKind.Boolean,
    Kind.PROPERTY: lsp.SymbolKind.Boolean, Kind.DEADLINE: lsp.SymbolKind.Boolean,
    Kind.REACHABLE: lsp.SymbolKind.Boolean, Kind.BINDER: lsp.SymbolKind.TypeParameter,
}
_COMPLETION_KINDS = {
    Kind.TYPE: lsp.CompletionItemKind.Enum, Kind.VALUE: lsp.CompletionItemKind.EnumMember,
    Kind.PARAM: lsp.CompletionItemKind.Constant, Kind.CONST: lsp.CompletionItemKind.Constant,
    Kind.ACTOR: lsp.CompletionItemKind.Module, Kind.VAR: lsp.CompletionItemKind.Variable,
    Kind.CLOCK: lsp.CompletionItemKind.Variable, Kind.EVENT: lsp.CompletionItemKind.Event,
    Kind.CHANNEL: lsp.CompletionItemKind.Interface, Kind.PROCESS: lsp.CompletionItemKind.Class,
    Kind.LOCATION: lsp.CompletionItemKind.Field, Kind.BINDER: lsp.CompletionItemKind.Variable,
}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VERDICTS = {0: "holds", 1: "violated", 2: "bad input", 3: "inconclusive", 4: "vacuous",
             5: "unreachable"}
"""What ``check``'s exit codes mean."""

log = logging.getLogger("kvrace.lsp")
P = ParamSpec("P")
R = TypeVar("R")


class KvraceServer(LanguageServer):
    """The server: the latest analysis of each open document."""

    def __init__(self, check_timeout: float = 30.0) -> None:
        super().__init__("kvrace", "0.1.0")
        self.check_timeout = check_timeout
        self.analyses: dict[str, Analysis] = {}

    def analyse(self, uri: str) -> Analysis:
        """Analyse the document's current text and publish its diagnostics."""
        doc = self.workspace.get_text_document(uri)
        path = os.path.basename(doc.path if doc.path else uri)
        try:
            analysis = Analysis(doc.source, path, self.analyses.get(uri))
        except Exception as exc:  # a bug in kvrace: say so in the editor, stay up
            log.exception("kvrace lsp: analysis failed")
            analysis = Analysis("", path, self.analyses.get(uri))
            analysis.text, analysis.lines = doc.source, doc.source.split("\n")
            analysis.diagnostics = [Diagnostic(
                "KVR000", f"internal error: {type(exc).__name__}: {exc} (a bug in kvrace;"
                " please report it with the spec)", path)]
        self.analyses[uri] = analysis
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=doc.version,
            diagnostics=[to_lsp_diagnostic(d, uri, analysis) for d in analysis.diagnostics]))
        return analysis

    def analysis(self, uri: str) -> Analysis:
        """The document's analysis (made now if the document was never analysed)."""
        found = self.analyses.get(uri)
        return found if found is not None else self.analyse(uri)


def _range(r: Range) -> lsp.Range:
    return lsp.Range(start=lsp.Position(line=r[0][0], character=r[0][1]),
                     end=lsp.Position(line=r[1][0], character=r[1][1]))


def to_lsp_diagnostic(d: Diagnostic, uri: str, analysis: Analysis) -> lsp.Diagnostic:
    """A kvrace diagnostic as the protocol's: code, range, notes in the message, and
    the proposed name (``did you mean``) as related information."""
    rng = span_range(d.span)
    related: list[lsp.DiagnosticRelatedInformation] = []
    proposed = replacement(d)
    if proposed is not None:
        target = analysis.by_key.get(proposed)
        where = target.range if target is not None else rng
        related.append(lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=uri, range=_range(where)),
            message=f"did you mean `{proposed}`?"))
    message = d.message + "".join(f"\n{n}" for n in d.notes)
    return lsp.Diagnostic(range=_range(rng), message=message, code=d.code, source="kvrace",
                          severity=lsp.DiagnosticSeverity.Error,
                          related_information=related or None,
                          data={"replacement": proposed} if proposed else None)


def safe(fn: Callable[P, R]) -> Callable[P, R | None]:
    """Answer nothing instead of failing when a handler raises (the error is logged)."""
    @functools.wraps(fn)
    def inner(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except Exception:  # never let one request take the server down
            log.exception("kvrace lsp: %s failed", fn.__name__)
            return None
    return inner


def run_check(text: str, name: str, timeout: float) -> tuple[int | None, str]:
    """``kvrace check`` on ``text`` in a subprocess: its exit code (None when the time
    limit ran out) and output, the temporary file's path replaced by ``name``."""
    fd, path = tempfile.mkstemp(suffix=".kvr", prefix="kvrace-lsp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "checker", "check", path, "--timeout", str(timeout)],
                capture_output=True, text=True, timeout=timeout + 10, check=False)
        except subprocess.TimeoutExpired:
            return None, f"check did not finish within {timeout:g} s"
        out = (proc.stdout + proc.stderr).replace(path, name)
        return proc.returncode, out
    finally:
        os.unlink(path)


def build_server(check_timeout: float = 30.0) -> KvraceServer:
    """The server with every feature registered."""
    server = KvraceServer(check_timeout)
    _documents(server)
    _navigation(server)
    _editing(server)
    _checking(server)
    return server


def _documents(server: KvraceServer) -> None:
    """Opening, changing and closing documents: each change is analysed."""

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @safe
    def did_open(ls: KvraceServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    @safe
    def did_change(ls: KvraceServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.analyse(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @safe
    def did_close(ls: KvraceServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.analyses.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


def _navigation(server: KvraceServer) -> None:
    """Hover, definition, references, the outline and completion."""

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @safe
    def hover(ls: KvraceServer, params: lsp.HoverParams) -> lsp.Hover | None:
        a = ls.analysis(params.text_document.uri)
        pos = (params.position.line, params.position.character)
        text = a.hover(pos)
        ref = a.reference_at(pos)
        if text is None or ref is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                         range=_range(ref.range))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @safe
    def definition(ls: KvraceServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        a = ls.analysis(params.text_document.uri)
        sym = a.symbol_at((params.position.line, params.position.character))
        if sym is None:
            return None
        return lsp.Location(uri=params.text_document.uri, range=_range(sym.range))

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    @safe
    def references(ls: KvraceServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
        a = ls.analysis(params.text_document.uri)
        ref = a.reference_at((params.position.line, params.position.character))
        if ref is None:
            return None
        sym = a.by_key.get(ref.key)
        uses = a.uses(ref.key)
        if not params.context.include_declaration and sym is not None:
            uses = [u for u in uses if u != sym.range]
        return [lsp.Location(uri=params.text_document.uri, range=_range(u)) for u in uses]

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @safe
    def symbols(ls: KvraceServer, params: lsp.DocumentSymbolParams
                ) -> list[lsp.DocumentSymbol] | None:
        a = ls.analysis(params.text_document.uri)

        def one(sym: Any) -> lsp.DocumentSymbol:
            decl = sym.decl if sym.decl[0] <= sym.range[0] else sym.range
            return lsp.DocumentSymbol(
                name=sym.name, kind=_SYMBOL_KINDS[sym.kind], range=_range(
                    (min(decl[0], sym.range[0]), max(decl[1], sym.range[1]))),
                selection_range=_range(sym.range), detail=sym.kind.value,
                children=[one(c) for c in sym.children] or None)

        return [one(s) for s in a.symbols if s.kind is not Kind.VALUE]

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["."]))
    @safe
    def completion(ls: KvraceServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
        a = ls.analysis(params.text_document.uri)
        items = [lsp.CompletionItem(
            label=name, kind=_COMPLETION_KINDS.get(kind, lsp.CompletionItemKind.Value)
            if kind is not None else lsp.CompletionItemKind.Keyword,
            detail=kind.value if kind is not None else "keyword")
            for name, kind in a.completions((params.position.line, params.position.character))]
        return lsp.CompletionList(is_incomplete=False, items=items)


def _editing(server: KvraceServer) -> None:
    """Formatting and the quick fixes of ``did you mean``."""

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @safe
    def formatting(ls: KvraceServer, params: lsp.DocumentFormattingParams
                   ) -> list[lsp.TextEdit] | None:
        doc = ls.workspace.get_text_document(params.text_document.uri)
        try:
            result = format_text(doc.source)
        except SpecError:
            return None  # the diagnostics say why
        if result == doc.source:
            return []
        lines = doc.source.split("\n")
        end = lsp.Position(line=len(lines) - 1, character=len(lines[-1]))
        return [lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end),
                             new_text=result)]

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    @safe
    def code_action(ls: KvraceServer, params: lsp.CodeActionParams
                    ) -> list[lsp.CodeAction] | None:
        actions = []
        lines = ls.workspace.get_text_document(params.text_document.uri).source.split("\n")
        for d in params.context.diagnostics:
            proposed = d.data.get("replacement") if isinstance(d.data, dict) else None
            start, end = d.range.start, d.range.end
            if not proposed or start.line != end.line or start.line >= len(lines):
                continue
            if not _NAME.fullmatch(lines[start.line][start.character:end.character]):
                continue  # the diagnostic does not point at the name to replace
            edit = lsp.WorkspaceEdit(changes={params.text_document.uri: [
                lsp.TextEdit(range=d.range, new_text=proposed)]})
            actions.append(lsp.CodeAction(title=f"Replace with `{proposed}`",
                                          kind=lsp.CodeActionKind.QuickFix, diagnostics=[d],
                                          edit=edit, is_preferred=True))
        return actions


def _checking(server: KvraceServer) -> None:
    """The ``check this spec`` code lens and its command."""

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    @safe
    def code_lens(ls: KvraceServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens] | None:
        a = ls.analysis(params.text_document.uri)
        line = next((i for i, text in enumerate(a.lines) if text.startswith("model")), 0)
        return [lsp.CodeLens(range=_range(((line, 0), (line, 5))), command=lsp.Command(
            title="check this spec", command=CHECK_COMMAND,
            arguments=[params.text_document.uri]))]

    @server.command(CHECK_COMMAND)
    @server.thread()
    @safe
    def check(ls: KvraceServer, uri: str) -> dict[str, Any]:
        doc = ls.workspace.get_text_document(uri)
        name = os.path.basename(doc.path) if doc.path else uri
        code, output = run_check(doc.source, name, ls.check_timeout)
        verdict = "timeout" if code is None else _VERDICTS.get(code, f"exit {code}")
        first = "\n".join(output.strip().split("\n")[:12])
        ls.window_show_message(lsp.ShowMessageParams(
            type=lsp.MessageType.Info if code == 0 else lsp.MessageType.Warning,
            message=f"kvrace check {name}: {verdict}\n{first}"))
        return {"verdict": verdict, "exit": code, "output": output}


def main(check_timeout: float = 30.0) -> None:
    """Serve over stdin/stdout until the client exits."""
    build_server(check_timeout).start_io()

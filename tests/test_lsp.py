"""``kvrace lsp`` end to end: a real client (pytest-lsp) talks to the server over stdio.

Diagnostics carry lint's codes and positions; hover, definition, references,
symbols, completion, formatting, the quick fix and the ``check`` code lens answer
on every spec in ``spec/``; half-typed text (the mutation fuzzer's inputs) never
takes the server down.
"""

from __future__ import annotations

import gc
import os
import random
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

import fuzz  # noqa: E402
from helpers import ROOT, run_cli  # noqa: E402
from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from checker.diagnostics import SpecError  # noqa: E402
from checker.language import load_text  # noqa: E402
from checker.lsp.analysis import Analysis, Kind  # noqa: E402

SPECS = sorted((ROOT / "spec").rglob("*.kvr"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "checker", "lsp", "--check-timeout", "20"],
    server_env=ENV))
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A client with an initialized session."""
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), root_uri=ROOT.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, path: Path, text: str | None = None
                ) -> list[lsp.Diagnostic]:
    """Open ``path`` (with ``text``, else its contents) and wait for its diagnostics."""
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="kvrace", version=1,
        text=text if text is not None else path.read_text(encoding="utf-8"))))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


def _doc(path: Path) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=path.as_uri())


def _pos(line: int, char: int) -> lsp.Position:
    return lsp.Position(line=line, character=char)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_every_spec_answers_every_request(client: LanguageClient) -> None:
    for path in SPECS:
        text = path.read_text(encoding="utf-8")
        diags = await _open(client, path)
        assert diags == [], (path, diags)
        a = Analysis(text, path.name)
        doc = _doc(path)
        outline = await client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(text_document=doc))
        assert outline is not None
        names = [s.name for s in outline if isinstance(s, lsp.DocumentSymbol)]
        assert names == [s.name for s in a.symbols if s.kind is not Kind.VALUE]
        var = next((s for s in a.by_key.values() if s.kind in (Kind.VAR, Kind.CLOCK)), None)
        assert var is not None, path
        uses = [u for u in a.uses(var.key) if u != var.range]
        assert uses, (path, var.name)
        (line, char), _ = uses[-1]
        hover = await client.text_document_hover_async(
            lsp.HoverParams(text_document=doc, position=_pos(line, char)))
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        assert var.name in hover.contents.value and var.kind.value in hover.contents.value
        found = await client.text_document_definition_async(
            lsp.DefinitionParams(text_document=doc, position=_pos(line, char)))
        assert isinstance(found, lsp.Location)
        assert (found.range.start.line, found.range.start.character) == var.range[0]
        refs = await client.text_document_references_async(lsp.ReferenceParams(
            text_document=doc, position=_pos(line, char),
            context=lsp.ReferenceContext(include_declaration=True)))
        assert refs is not None and len(refs) == len(a.uses(var.key)) == len(uses) + 1
        event = next(s for s in a.by_key.values() if s.kind is Kind.EVENT)
        hover = await client.text_document_hover_async(
            lsp.HoverParams(text_document=doc, position=_pos(*event.range[0])))
        assert hover is not None and re.search(r"\b\d+ instances?\b", hover.contents.value), (
            path, event.key)
        edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
            text_document=doc, options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)))
        assert edits is not None and list(edits) == []  # the committed specs are formatted
        client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=doc))
        await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)


FISCHER = ROOT / "docs" / "liveness" / "fischer.kvr"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_hover_definition_references_on_fischer(client: LanguageClient) -> None:
    text = FISCHER.read_text(encoding="utf-8")
    await _open(client, FISCHER)
    lines = text.split("\n")
    use = next(i for i, ln in enumerate(lines) if ln.startswith("  when pc[p] == idle"))
    doc = _doc(FISCHER)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=doc, position=_pos(use, 8)))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "var pc : Proc -> {idle, req, wait, cs} = idle" in hover.contents.value
    assert ("values {idle, req, wait, cs}; initially idle; 3 entries, one per Proc"
            in hover.contents.value)
    decl = next(i for i, ln in enumerate(lines) if ln.startswith("var pc"))
    found = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=doc, position=_pos(use, 8)))
    assert isinstance(found, lsp.Location) and found.range.start == _pos(decl, 4)
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc, position=_pos(decl, 5),
        context=lsp.ReferenceContext(include_declaration=False)))
    assert refs is not None
    assert len(refs) == sum(ln.count("pc[") for ln in lines if not ln.startswith("#"))
    # an event: its instance count; a parameter: its range and default
    ev = next(i for i, ln in enumerate(lines) if ln.startswith("event proc.try"))
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=doc, position=_pos(ev, 12)))
    assert hover is not None and "3 instances" in str(hover.contents)
    k = next(i for i, ln in enumerate(lines) if ln.startswith("param k"))
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=doc, position=_pos(k, 6)))
    assert hover is not None and "timing parameter in [1, 100], default 10" in str(
        hover.contents)
    # a binder
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=doc, position=_pos(use, 10)))
    assert hover is not None and "parameter `p`" in str(hover.contents)
    items = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=doc, position=_pos(use, 7)))
    assert isinstance(items, lsp.CompletionList)
    labels = {i.label for i in items.items}
    assert {"pc", "id", "x", "Proc", "k", "p", "idle", "when", "forall"} <= labels


@pytest.mark.asyncio
async def test_diagnostics_match_lint_with_a_quick_fix(client: LanguageClient,
                                                       tmp_path: Path) -> None:
    text = FISCHER.read_text(encoding="utf-8").replace(
        "do pc[p] := req; reset x[p]", "do pcc[p] := req; reset x[p]")
    path = tmp_path / "typo.kvr"
    path.write_text(text, encoding="utf-8")
    diags = await _open(client, path, text)
    with pytest.raises(SpecError) as err:
        load_text(text, str(path))
    want = [(d.code, d.span.line - 1, d.span.column - 1) for d in err.value.diagnostics
            if d.span]
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diags] == want
    code, _, lint_err = run_cli("lint", str(path))
    assert code == 2 and f":{want[0][1] + 1}:{want[0][2] + 1}: error[{want[0][0]}]" in lint_err
    d = diags[0]
    assert d.related_information and "did you mean `pc`?" in d.related_information[0].message
    decl = next(i for i, ln in enumerate(text.split("\n")) if ln.startswith("var pc"))
    assert d.related_information[0].location.range.start == _pos(decl, 4)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=_doc(path), range=d.range, context=lsp.CodeActionContext(diagnostics=[d])))
    assert actions and isinstance(actions[0], lsp.CodeAction)
    assert actions[0].edit is not None and actions[0].edit.changes is not None
    (edit,) = actions[0].edit.changes[path.as_uri()]
    assert edit.new_text == "pc" and edit.range == d.range


@pytest.mark.slow
@pytest.mark.asyncio
async def test_formatting_and_the_check_code_lens(client: LanguageClient,
                                                  tmp_path: Path) -> None:
    path = tmp_path / "small.kvr"
    text = ("model small\nactor a\nvar x:0..3=0\nevent a.go() when x<3 do x:=x+1\n"
            "invariant low: x <= 2\n")
    diags = await _open(client, path, text)
    assert diags == []
    edits = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        text_document=_doc(path), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)))
    assert edits and edits[0].new_text == ("model small\nactor a\nvar x : 0..3 = 0\n"
                                           "event a.go() when x < 3 do x := x + 1\n"
                                           "invariant low: x <= 2\n")
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=_doc(path)))
    assert lenses and lenses[0].command is not None
    assert lenses[0].command.title == "check this spec"
    result = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command=lenses[0].command.command, arguments=lenses[0].command.arguments))
    assert result["verdict"] == "violated" and result["exit"] == 1
    assert "VIOLATED: low: the invariant does not hold" in result["output"]
    assert any("violated" in m.message for m in client.messages)


def _lint_positions(text: str) -> list[tuple[str, int, int]]:
    """What lint reports on ``text``: code and 0-based start of each diagnostic."""
    try:
        load_text(text, "mutant.kvr")
    except SpecError as err:
        return [(d.code, d.span.line - 1 if d.span else 0, d.span.column - 1 if d.span else 0)
                for d in err.diagnostics]
    except RecursionError:
        return [("KVR005", 0, 0)]
    return []


def _mutant_edits(count: int) -> list[str]:
    seeds = fuzz.corpus()
    return [fuzz.lint_input(33, i, seeds)[1] for i in range(count)]


def _probe(a: Analysis, rng: random.Random) -> None:
    """Every query of the analysis at a few random places (none may raise)."""
    for _ in range(3):
        line = rng.randrange(len(a.lines))
        pos = (line, rng.randrange(len(a.lines[line]) + 1))
        a.hover(pos)
        a.completions(pos)
        ref = a.reference_at(pos)
        if ref is not None:
            a.uses(ref.key)


# The full campaign, 10**4 edits (about 6 minutes): KVRACE_LSP_FUZZ=10000.
FUZZ_EDITS = int(os.environ.get("KVRACE_LSP_FUZZ", "600"))


@pytest.mark.parametrize("count", [pytest.param(100, id="quick"),
                                   pytest.param(FUZZ_EDITS, id="slow",
                                                marks=[pytest.mark.slow, pytest.mark.alone])])
def test_analysis_survives_half_typed_files(count: int) -> None:
    rng = random.Random(33)
    previous = None
    worst = 0.0
    # What earlier tests in this process left is not the analysis's: a full collection
    # walking it would be charged to whichever analysis triggered it.
    gc.collect()
    gc.freeze()
    try:
        for text in _mutant_edits(count):
            # CPU time: the machine may be shared, the analysis's own work must stay small
            start = time.process_time()
            a = Analysis(text, "mutant.kvr", previous)
            worst = max(worst, time.process_time() - start)
            _probe(a, rng)
            previous = a
    finally:
        gc.unfreeze()
    assert worst < 1.0, f"the slowest analysis took {worst:.2f} s"


@pytest.mark.parametrize("count", [pytest.param(60, id="quick"),
                                   pytest.param(max(60, FUZZ_EDITS // 5), id="slow",
                                                marks=pytest.mark.slow)])
@pytest.mark.slow
@pytest.mark.asyncio
async def test_server_survives_a_stream_of_broken_edits(client: LanguageClient,
                                                        count: int) -> None:
    path = ROOT / "mutant.kvr"
    uri = path.as_uri()
    await _open(client, path, "model m\n")
    for version, text in enumerate(_mutant_edits(count), start=2):
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if version % 10 == 0:  # the same diagnostics as lint
            got = [(d.code, d.range.start.line, d.range.start.character)
                   for d in client.diagnostics[uri]]
            assert got == _lint_positions(text), text
        await client.text_document_hover_async(
            lsp.HoverParams(text_document=_doc(path), position=_pos(0, 1)))
    outline = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=_doc(path)))
    assert outline is not None


def test_analysis_of_a_process_spec() -> None:
    # In process: constants, locations, process-local names and `Proc.local` uses.
    path = ROOT / "spec" / "classic" / "fischer_processes.kvr"
    a = Analysis(path.read_text(encoding="utf-8"), path.name)
    assert a.diagnostics == []
    const = next(i for i, ln in enumerate(a.lines) if ln.startswith("const N"))
    assert a.hover((const, 6)) == (
        "```kvrace\nconst N in 2..8 = 3\n```\n\n*const*\n\n"
        "structural constant = 3, in 2..8 (-p N=VALUE sets it)")
    worker = a.by_key["Worker"]
    assert worker.kind is Kind.PROCESS
    locals_ = {c.key: c.kind for c in worker.children}
    assert locals_["Worker.idle"] is Kind.LOCATION
    uses = [i for i, ln in enumerate(a.lines) if "Worker.loc" in ln]
    assert uses  # `Worker.loc` is the location variable, declared by no one
    loc = a.lines[uses[0]].index("Worker.loc")
    assert a.symbol_at((uses[0], loc)) is worker
    assert a.symbol_at((uses[0], loc + len("Worker.") + 1)) is None
    idle = next(i for i, ln in enumerate(a.lines) if "location idle" in ln)
    assert len(a.uses("Worker.idle")) > 1
    assert a.hover((idle, a.lines[idle].index("idle") + 1)) is not None
    items = dict(a.completions((uses[0], loc + len("Worker."))))
    assert items.get("idle") is Kind.LOCATION

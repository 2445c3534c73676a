"""The package's layering rules, read from the import statements of every module:
only ``checker/smt`` imports z3, only ``checker/language`` imports lark, the
engine core (``domains``, ``semantics``, ``algorithms``, ``engines``) imports
neither the language nor z3 and is layered one way, and the presentation layer
runs no engine (it may name engine types for type checking only)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from helpers import ROOT

PACKAGE = ROOT / "checker"


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """The modules ``path`` imports at run time (not under ``if TYPE_CHECKING``)."""
    nodes = list(ast.walk(_tree(path)))
    typing_only = [(n.lineno, n.end_lineno or n.lineno) for n in nodes
                   if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    out: set[str] = set()
    for node in nodes:
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or any(
                lo <= node.lineno <= hi for lo, hi in typing_only):
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return frozenset(out)


def _modules(folder: str = "") -> dict[str, frozenset[str]]:
    root = PACKAGE / folder if folder else PACKAGE
    return {str(p.relative_to(ROOT)): _imports(p) for p in sorted(root.rglob("*.py"))}


def _offenders(mods: dict[str, frozenset[str]], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(f"{m}: {i}" for m, imps in mods.items() for i in imps
                  if any(i == p or i.startswith(p + ".") for p in prefixes))


def test_only_smt_imports_z3() -> None:
    mods = {m: i for m, i in _modules().items() if not m.startswith("checker/smt/")}
    assert _offenders(mods, ("z3",)) == []


def test_only_the_language_imports_lark() -> None:
    mods = {m: i for m, i in _modules().items() if not m.startswith("checker/language/")}
    assert _offenders(mods, ("lark",)) == []


_ENGINE_CORE = ("domains", "semantics", "algorithms", "engines")
_OUTSIDE = ("lark", "z3", "checker.language", "checker.smt", "checker.cli", "checker.present",
            "checker.api", "checker.view", "checker.simulate")


def test_the_engine_core_imports_neither_the_language_nor_z3() -> None:
    for folder in _ENGINE_CORE:
        assert _offenders(_modules(folder), _OUTSIDE) == [], folder


def test_the_engine_core_is_layered_one_way() -> None:
    # domains <- semantics <- algorithms <- engines: no folder imports one above it.
    for i, folder in enumerate(_ENGINE_CORE):
        above = tuple(f"checker.{f}" for f in _ENGINE_CORE[i + 1:])
        assert _offenders(_modules(folder), above) == [], folder


def test_the_domains_know_no_model() -> None:
    assert _offenders(_modules("domains"), ("checker.model", "checker.limits")) == []


def test_the_presentation_runs_no_engine() -> None:
    assert _offenders(_modules("present"),
                      ("checker.engines", "checker.smt", "checker.simulate", "checker.api",
                       "checker.cli", "z3")) == []


def test_the_translations_run_no_engine() -> None:
    assert _offenders(_modules("export"),
                      ("checker.engines", "checker.algorithms", "checker.semantics",
                       "checker.smt", "checker.simulate", "checker.api", "checker.cli",
                       "checker.present", "z3", "lark")) == []


def test_the_top_level_holds_only_the_shared_vocabulary() -> None:
    # Every module has a folder by its role; the top level keeps what every layer
    # shares, the Python API, and two former names kept importable.
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "api.py", "diagnostics.py", "errors.py",
                   "jsonout.py", "limits.py", "numbers.py", "render.py", "results.py"]


def test_the_rules_see_imports() -> None:
    # The checker itself must see what it polices.
    assert "z3" in _imports(PACKAGE / "smt" / "synth.py") or any(
        "z3" in i for i in _imports(PACKAGE / "smt" / "poly.py"))
    assert any(i.startswith("checker.engines") for i in _imports(PACKAGE / "api.py"))


def test_no_function_is_over_120_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(_tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 120:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert long == []

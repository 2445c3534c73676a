"""Regenerate every committed artifact with one command.

    python -m tools.artifacts                 # rewrite every artifact (about 8 minutes)
    python -m tools.artifacts --check         # exit 1 and list what is stale or missing
    python -m tools.artifacts --only tutorial # one part (see --help for the names)

The parts, each a module of this package:

* ``counterexamples``: ``counterexamples/`` and ``spec/README.md``;
* ``measurements``: ``paper/data/``, the numbers the paper reports (verdicts,
  state counts, synthesized bounds, the context-length study, the benchmark).
  Its deterministic columns are reproduced exactly; its run times are
  measurements of the machine that wrote them.  It is the slow part, so
  ``--check`` leaves it out unless ``--all`` is given (the test suite checks
  a subset of it instead);
* ``paper``: ``paper/generated/``, the LaTeX tables, macros, plot data and
  diagram sources the paper includes, computed from ``paper/data/`` and from
  short kvrace runs;
* ``tutorial``: the outputs shown in ``docs/tutorial.md``, rerun.

Output is byte-for-byte deterministic apart from the measured run times.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Part:
    """One family of generated files."""

    name: str
    generate: Callable[[Path], dict[str, bytes]]
    owns: tuple[str, ...]  # folders every file of which this part generates
    slow: bool = False
    equal: Callable[[Path, str, bytes], bool] | None = None  # custom comparison


def _parts() -> list[Part]:
    # Imported lazily: the parts pull in the whole checker.
    from tools.artifacts import counterexamples, measurements, paper, tutorial

    return [
        Part("counterexamples", counterexamples.generate, ("counterexamples",),
             equal=counterexamples.equal),
        Part("measurements", measurements.generate, ("paper/data",), slow=True,
             equal=measurements.equal),
        Part("paper", paper.generate, ("paper/generated",)),
        Part("tutorial", tutorial.generate, (), equal=tutorial.equal),
    ]


PART_NAMES = ("counterexamples", "measurements", "paper", "tutorial")


def select(names: Sequence[str] | None = None, slow: bool = True) -> list[Part]:
    """The parts named (all by default), leaving out the slow ones unless ``slow``."""
    parts = _parts()
    if names:
        unknown = sorted(set(names) - {p.name for p in parts})
        if unknown:
            raise ValueError(f"unknown part(s): {', '.join(unknown)}")
        return [p for p in parts if p.name in names]
    return [p for p in parts if slow or not p.slow]


def generate(root: Path, parts: Sequence[Part] | None = None) -> dict[str, bytes]:
    """Every artifact's path (relative to ``root``) and bytes, computed afresh."""
    files: dict[str, bytes] = {}
    for part in parts if parts is not None else select():
        files.update(part.generate(root))
    return files


def stale(root: Path, parts: Sequence[Part] | None = None) -> list[str]:
    """Artifacts that differ from what generation gives now (or are missing / extra)."""
    chosen = list(parts) if parts is not None else select(slow=False)
    problems = []
    for part in chosen:
        fresh = part.generate(root)
        for rel, data in sorted(fresh.items()):
            path = root / rel
            if not path.exists():
                problems.append(f"missing: {rel}")
            elif not (part.equal or _same_bytes)(root, rel, data):
                problems.append(f"stale: {rel}")
        for folder in part.owns:
            for path in sorted((root / folder).rglob("*")):
                rel = path.relative_to(root).as_posix()
                if path.is_file() and rel not in fresh:
                    problems.append(f"not generated (remove it): {rel}")
    return problems


def _same_bytes(root: Path, rel: str, data: bytes) -> bool:
    return (root / rel).read_bytes() == data


def write(root: Path, parts: Sequence[Part] | None = None) -> list[str]:
    """Regenerate the artifacts of ``parts`` (all by default); returns the paths written."""
    written: list[str] = []
    for part in parts if parts is not None else select():
        fresh = part.generate(root)
        for folder in part.owns:
            for path in sorted((root / folder).rglob("*")):
                if path.is_file() and path.relative_to(root).as_posix() not in fresh:
                    path.unlink()
        for rel, data in sorted(fresh.items()):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
            written.append(rel)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tools.artifacts [--check] [--all] [--only PART,...]``."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.artifacts",
        description="Regenerate (or check) the committed artifacts of kvrace.")
    parser.add_argument("--check", action="store_true",
                        help="report stale or missing artifacts instead of writing them")
    parser.add_argument("--all", action="store_true",
                        help="with --check, also rerun the slow measurements")
    parser.add_argument("--only", metavar="PART,...",
                        help=f"only these parts ({', '.join(PART_NAMES)})")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    try:
        parts = select(names, slow=args.all or not args.check)
    except ValueError as e:
        parser.error(str(e))
    if args.check:
        problems = stale(ROOT, parts)
        for p in problems:
            print(p)
        if problems:
            print("run `python -m tools.artifacts` to regenerate")
        return 1 if problems else 0
    for part in parts:
        print(f"{part.name}:", file=sys.stderr)
        for rel in write(ROOT, [part]):
            print(f"  wrote {rel}")
    return 0

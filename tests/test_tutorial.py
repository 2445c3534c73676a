"""docs/tutorial.md is current, its specs say what it says, and its machinery works."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checker import api, cli
from checker.engines import Stats
from checker.language import load_text
from tools import artifacts
from tools.artifacts import tutorial

pytestmark = pytest.mark.slow

ROOT = artifacts.ROOT
SPECS = ROOT / "docs" / "tutorial"
REGENERATE = "run `python -m tools.artifacts --only tutorial`"


@pytest.fixture(scope="module")
def fresh() -> dict[str, bytes]:
    """The tutorial's files, generated afresh (every command rerun: about 20 s)."""
    return tutorial.generate(ROOT)


@pytest.mark.xdist_group("tutorial")  # one worker generates the tutorial, once
def test_tutorial_is_current(fresh: dict[str, bytes]) -> None:
    assert tutorial.TUTORIAL in fresh
    stale = [rel for rel, data in sorted(fresh.items()) if not tutorial.equal(ROOT, rel, data)]
    assert stale == [], f"stale: {', '.join(stale)}; {REGENERATE}"


@pytest.mark.xdist_group("tutorial")
def test_every_file_of_docs_tutorial_is_a_spec_or_generated(fresh: dict[str, bytes]) -> None:
    for path in sorted(SPECS.rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file():
            assert path.suffix == ".kvr" or rel in fresh, f"{rel} is not generated; remove it"


def test_every_tutorial_spec_appears_in_the_tutorial() -> None:
    text = (ROOT / tutorial.TUTORIAL).read_text(encoding="utf-8")
    for path in sorted(SPECS.glob("*.kvr")):
        assert path.relative_to(ROOT).as_posix() in text


@pytest.mark.parametrize(("name", "verdict", "prop"), [
    ("fence_posted", api.VIOLATED, "assert"),
    ("fence_completed", api.HOLDS, None),
    ("fence_bounded", api.HOLDS, None),
    ("fence_lossy", api.VIOLATED, "bounded_release[A]"),
])
def test_fence_specs(name: str, verdict: str, prop: str | None) -> None:
    outcome = api.check(api.load_spec(SPECS / f"{name}.kvr"))
    assert outcome.verdict == verdict, outcome.summary()
    assert outcome.prop == prop



# ---- section 6: a release in two steps --------------------------------------------

RELEASE = SPECS / "release_committed.kvr"


def _release_variant(*edits: tuple[str, str]) -> api.Outcome:
    """The committed release spec with each ``(old, new)`` text replaced, checked."""
    text = RELEASE.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return api.check(load_text(text, "variant.kvr"))


def test_release_specs() -> None:
    split = api.check(api.load_spec(SPECS / "release_split.kvr"))
    assert (split.verdict, split.prop) == (api.VIOLATED, "assert"), split.summary()
    fixed = api.check(api.load_spec(RELEASE))
    assert fixed.verdict == api.HOLDS, fixed.summary()
    assert [(q.name, q.status) for q in fixed.queries] == [
        ("reused", api.REACHABLE), ("slow_chunk", api.REACHABLE)]


def test_an_urgent_second_step_does_not_make_the_release_atomic() -> None:
    out = _release_variant(("committed event decode.clear", "urgent event decode.clear"))
    assert (out.verdict, out.prop) == (api.VIOLATED, "assert"), out.summary()
    assert out.trace is not None
    race = [(s.label, s.time) for s in out.trace.steps[-3:]]
    assert [label for label, _ in race] == [
        "decode.free(A)", "decode.allocate(B, s0)", "decode.start(B)"], race
    assert len({time for _, time in race}) == 1  # every step of the race at one instant


def test_clearing_the_flags_first_needs_no_committed_event() -> None:
    out = _release_variant(
        ("committed event decode.clear", "event decode.clear"),
        ("  do owner[slot[r]] := none; phase[r] := releasing",
         "  do for k: Chunk { got[slot[r], k] := false }\n     phase[r] := releasing"),
        ("  do for k: Chunk { got[slot[r], k] := false }\n     slot[r] := none; phase[r] := freed",
         "  do owner[slot[r]] := none; slot[r] := none; phase[r] := freed"),
    )
    assert out.verdict == api.HOLDS, out.summary()


def test_fence_specs_have_a_one_line_summary() -> None:
    for path in sorted(SPECS.glob("*.kvr")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# ") and first.endswith("."), f"{path.name}: {first!r}"


# ---- the comparison masks run times and nothing else --------------------------------

def _check_output(stats: Stats) -> str:
    return (
        "model m  (T=1)\nHOLDS: every property holds (exploration complete)\n\n"
        + cli.stats_line(stats) + "\n"
        + json.dumps({"stats": cli.stats_json(stats)}, indent=2) + "\n"
        + "algorithm: parametric zone exploration (EFsynth), complete; 226 discrete states,"
        f" 441 symbolic states, 6957 solver queries, {stats.seconds:.1f} s\n"
    )


def _doc(output: str) -> str:
    return f"# t\n\n<!-- run -->\n```console\n$ kvrace check m.kvr\n{output}[exit 0]\n```\n"


def test_equal_masks_only_run_dependent_numbers(tmp_path: Path) -> None:
    committed = _doc(_check_output(Stats(41, 48, 92, 0.04, 45.0, 6)))
    (tmp_path / "docs").mkdir()
    (tmp_path / tutorial.TUTORIAL).write_text(committed, encoding="utf-8")

    def same(output: str) -> bool:
        return tutorial.equal(tmp_path, tutorial.TUTORIAL, _doc(output).encode())

    assert same(_check_output(Stats(41, 48, 92, 12.5, 1234.0, 6)))
    assert not same(_check_output(Stats(42, 48, 92, 0.04, 45.0, 6)))  # a state more
    assert not same(_check_output(Stats(41, 48, 92, 0.04, 45.0, 7)))  # depth
    assert not same(_check_output(Stats(41, 48, 92, 0.04, 45.0, 6)).replace("6957", "6958"))
    assert not same(_check_output(Stats(41, 48, 92, 0.04, 45.0, 6)).replace("HOLDS", "VIOLATED"))
    assert not tutorial.equal(tmp_path, "docs/missing.md", b"")


# ---- generation ---------------------------------------------------------------------

def _root(tmp_path: Path, doc: str) -> Path:
    """A repository root holding ``doc`` as the tutorial and one tutorial spec."""
    (tmp_path / "docs" / "tutorial").mkdir(parents=True)
    (tmp_path / "spec").mkdir()
    shutil.copy(SPECS / "fence_posted.kvr", tmp_path / "docs" / "tutorial" / "x.kvr")
    (tmp_path / tutorial.TUTORIAL).write_text(doc, encoding="utf-8")
    return tmp_path


def test_generate_refreshes_outputs_files_and_collects_written_files(tmp_path: Path) -> None:
    doc = (
        "intro\n\n"
        "<!-- file: docs/tutorial/x.kvr -->\n```kvr\nold text\n```\n\n"
        "<!-- run -->\n```console\n$ kvrace lint docs/tutorial/x.kvr\nstale\n[exit 9]\n"
        "$ kvrace check docs/tutorial/x.kvr -q --diagram docs/tutorial/x.dot\n"
        "```\n"
    )
    root = _root(tmp_path, doc)
    files = tutorial.generate(root)
    assert sorted(files) == ["docs/tutorial.md", "docs/tutorial/x.dot"]
    text = files["docs/tutorial.md"].decode()
    spec = (root / "docs/tutorial/x.kvr").read_text(encoding="utf-8")
    assert f"<!-- file: docs/tutorial/x.kvr -->\n```kvr\n{spec}```\n" in text
    assert "$ kvrace lint docs/tutorial/x.kvr\ndocs/tutorial/x.kvr: ok\n[exit 0]\n" in text
    assert "VIOLATED: assert: write of A lands in slot s0 owned by B" in text
    assert text.rstrip().endswith("[exit 1]\n```")
    assert files["docs/tutorial/x.dot"].startswith(b"// message-sequence chart")
    assert not (root / "docs/tutorial/x.dot").exists()  # nothing written into the root
    # Regenerating over the result changes nothing.
    (root / tutorial.TUTORIAL).write_bytes(files["docs/tutorial.md"])
    (root / "docs/tutorial/x.dot").write_bytes(files["docs/tutorial/x.dot"])
    assert tutorial.generate(root) == files


@pytest.mark.parametrize(("command", "complaint"), [
    ("python -c \"raise RuntimeError('boom')\"", "Python traceback"),
    ("python -c \"import sys; sys.exit(129)\"", "could not run"),
    ("kvrace-no-such-program", "not installed"),
    ("kvrace lint docs/tutorial/x.kvr | head", "without a shell"),
    ("python -c \"print('$ looks like a command')\"", "would misread"),
])
def test_a_failing_command_is_reported(tmp_path: Path, command: str, complaint: str) -> None:
    root = _root(tmp_path, f"<!-- run -->\n```console\n$ {command}\n```\n")
    with pytest.raises(tutorial.TutorialError, match=complaint) as info:
        tutorial.generate(root)
    assert "docs/tutorial.md:3" in str(info.value)


@pytest.mark.parametrize(("doc", "complaint"), [
    ("<!-- run -->\ntext\n", "followed by a fenced code block"),
    ("<!-- run -->\n```console\n$ kvrace lint x\n", "not closed"),
    ("<!-- run -->\n```console\noutput first\n```\n", "starts with a command"),
    ("<!-- file: docs/nothing.kvr -->\n```\n```\n", "no such file"),
])
def test_a_broken_marker_is_reported(tmp_path: Path, doc: str, complaint: str) -> None:
    with pytest.raises(tutorial.TutorialError, match=complaint):
        tutorial.generate(_root(tmp_path, doc))

"""Diagrams: DOT generation (golden files) and rendering with Graphviz.

DOT generation is pure and tested byte for byte against ``tests/golden/``;
regenerate the golden files with ``KVRACE_UPDATE_GOLDEN=1 python -m pytest
tests/test_render.py``.  Only the rendering tests need the Graphviz ``dot``
program; they are skipped when it is not installed (CI installs it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

from checker import render as render_mod
from checker.model.trace import Step, Trace, from_itf
from checker.render import (
    RED,
    RenderError,
    render,
    sequence_dot,
    state_graph_dot,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("KVRACE_UPDATE_GOLDEN") == "1"
HAVE_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(
    not HAVE_DOT, reason="Graphviz 'dot' is not installed (apt-get install graphviz)")

SVG = "{http://www.w3.org/2000/svg}"
MESSAGE = "write of A chunk 0 lands in slot s0 owned by B"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    assert path.exists(), f"missing {path}; create it with KVRACE_UPDATE_GOLDEN=1"
    want = path.read_text(encoding="utf-8")
    assert text == want, f"{path} is stale; regenerate with KVRACE_UPDATE_GOLDEN=1"


# ---- the immediate-release race, by hand ------------------------------------------

INITIAL: dict[str, Any] = {
    "owner[s0]": None,
    "slot[A]": None, "slot[B]": None,
    "phase[A]": "waiting", "phase[B]": "waiting",
    "sent[A]": 0, "sent[B]": 0,
    "write[A, 0]": "unsent", "write[A, 1]": "unsent",
    "write[B, 0]": "unsent", "write[B, 1]": "unsent",
    "told[A]": False, "told[B]": False,
}

# (actor, event, args, time, updates, receives)
RACE: list[tuple[str, str, tuple[str, ...], int, dict[str, Any], int | None]] = [
    ("decode", "allocate", ("A", "s0"), 0,
     {"owner[s0]": "A", "slot[A]": "s0", "phase[A]": "transferring"}, None),
    ("prefill", "post", ("A", "0"), 0, {"sent[A]": 1, "write[A, 0]": "flying"}, None),
    ("router", "abort", ("A",), 0, {"phase[A]": "aborted"}, None),
    ("decode", "release", ("A",), 0, {"owner[s0]": None, "phase[A]": "freed"}, None),
    ("decode", "allocate", ("B", "s0"), 0,
     {"owner[s0]": "B", "slot[B]": "s0", "phase[B]": "transferring"}, None),
    ("prefill", "learn_abort", ("A",), 2, {"told[A]": True}, 3),
    ("decode", "land", ("A", "0"), 3, {"write[A, 0]": "landed"}, 2),
]


def race_trace(timed: bool = True, failure: bool = True) -> Trace:
    """A abort-and-reuse race: A's chunk 0, posted at t=0, lands in B's slot at t=3."""
    state = dict(INITIAL)
    steps = [Step(0, "initial", None, None, (), Fraction(0) if timed else None, dict(state), {})]
    for i, (actor, event, args, t, updates, receives) in enumerate(RACE, start=1):
        new = {**state, **updates}
        changes = {k: (state[k], v) for k, v in new.items() if state[k] != v}
        last = i == len(RACE)
        steps.append(Step(
            i, f"{actor}.{event}({', '.join(args)})", actor, f"{actor}.{event}", args,
            Fraction(t) if timed else None, new, changes, receives,
            MESSAGE if last and failure else None,
        ))
        state = new
    return Trace(
        model="immediate_release",
        source="spec/sglang/immediate_release.kvr",
        actors=("router", "prefill", "decode"),
        params={"T_prop": Fraction(2), "T_chunk": Fraction(2), "T_flight": Fraction(3)},
        verdict="violated",
        property="assert",
        message=MESSAGE,
        steps=tuple(steps),
        vars=("owner", "slot", "phase", "sent", "write", "told"),
    )


# ---- sequence_dot ---------------------------------------------------------------------


def test_race_golden_dot() -> None:
    check_golden("race.dot", sequence_dot(race_trace()))


def test_race_from_golden_itf_gives_the_same_diagram() -> None:
    data = json.loads((GOLDEN / "race.itf.json").read_text(encoding="utf-8"))
    trace = from_itf(data)
    assert sequence_dot(trace) == sequence_dot(race_trace())


def test_deterministic() -> None:
    assert sequence_dot(race_trace()) == sequence_dot(race_trace())


@pytest.mark.slow
def test_deterministic_across_hash_seeds() -> None:
    code = ("import sys; sys.path[:0] = sys.argv[1:]; import test_render as t; "
            "from checker.render import sequence_dot; "
            "sys.stdout.write(sequence_dot(t.race_trace()))")
    here = Path(__file__).resolve().parent
    outs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", code, str(here), str(here.parent)],
                              capture_output=True, text=True, env=env, check=True,
                              encoding="utf-8")
        outs.add(proc.stdout)
    assert outs == {sequence_dot(race_trace())}


def test_dot_tells_the_race() -> None:
    dot = sequence_dot(race_trace())
    # title: model, parameters in the trace's order, the violation
    assert "immediate_release" in dot
    assert "T_prop=2, T_chunk=2, T_flight=3" in dot
    assert f"violated: assert \u2014 {MESSAGE}" in dot
    # one header per actor, in order
    assert dot.index("<B>router</B>") < dot.index("<B>prefill</B>") < dot.index("<B>decode</B>")
    # the slot-ownership story, with none read as "free"
    for line in ("s0: free \u2192 A", "s0: A \u2192 free", "s0: free \u2192 B"):
        assert line in dot
    # event labels and the time axis
    assert "post(A, 0)" in dot and "land(A, 0)" in dot
    assert "t=3" in dot and "t=2" in dot
    # the RDMA write prefill -> decode (rows 2 -> 7) is red and bold, with its flight time
    write = next(ln for ln in dot.splitlines() if ln.strip().startswith("L1_2:p:c -> L2_7:p:c"))
    assert f'color="{RED}"' in write and "penwidth=2.4" in write
    # its label is in the receiver's note (no label of an arrow can overlap another)
    assert "label" not in write
    note = next(ln for ln in dot.splitlines() if ln.strip().startswith("L2_7 "))
    assert f'COLOR="{RED}">\u2190 prefill: post(A, 0)  (\u0394t=3)</FONT>' in note
    # the abort router -> prefill (rows 3 -> 6) is an ordinary arrow
    abort = next(ln for ln in dot.splitlines() if ln.strip().startswith("L0_3:p:c -> L1_6:p:c"))
    assert "color=black" in abort
    # no machine paths
    assert "spec/sglang" not in dot


def test_other_changes_are_capped() -> None:
    trace = race_trace()
    first = trace.steps[1]
    many = dict(first.changes)
    for k in range(5):
        many[f"extra[{k}]"] = (0, 1)
    steps = (trace.steps[0], Step(**{**first.__dict__, "changes": many}), *trace.steps[2:])
    dot = sequence_dot(Trace(**{**trace.__dict__, "steps": steps}))
    # slot[A], phase[A], extra[0], then an ellipsis
    assert "extra[0]: 0 \u2192 1" in dot and "extra[1]" not in dot
    assert "\u2026" in dot


def test_untimed_trace_prints_step_numbers() -> None:
    dot = sequence_dot(race_trace(timed=False))
    assert not re.search(r"\bt=\d", dot)
    assert "#7" in dot
    assert "\u0394t" not in dot


def test_violation_from_verdict_alone_is_the_last_step() -> None:
    dot = sequence_dot(race_trace(failure=False))
    write = next(ln for ln in dot.splitlines() if ln.strip().startswith("L1_2:p:c -> L2_7:p:c"))
    assert RED in write
    assert f"\u2717 {MESSAGE}" in dot


def test_escapes_html() -> None:
    trace = race_trace()
    odd = Trace(**{**trace.__dict__, "model": 'm<&>"', "message": "a < b & c"})
    dot = sequence_dot(odd)
    assert "m&lt;&amp;&gt;&quot;" in dot and "a &lt; b &amp; c" in dot


def test_holding_trace_has_no_red() -> None:
    trace = race_trace(failure=False)
    ok = Trace(**{**trace.__dict__, "verdict": "holds", "property": None, "message": None})
    assert RED not in sequence_dot(ok)


def odd_traces() -> list[Trace]:
    trace = race_trace()
    lone = Step(1, "tick", None, None, (), None, {}, {"x": (0, 1)})
    stranger = Step(1, "outsider.go()", "outsider", "outsider.go", (), None, {}, {}, receives=99)
    return [Trace(**{**trace.__dict__, "steps": steps}) for steps in (
        (), trace.steps[:1], (lone,), (*trace.steps[:1], stranger))]


@pytest.mark.parametrize("trace", odd_traces(), ids=["empty", "initial", "no-actor", "stranger"])
def test_odd_traces(tmp_path: Path, trace: Trace) -> None:
    dot = sequence_dot(trace)
    if trace.steps and trace.steps[-1].actor == "outsider":
        assert "<B>outsider</B>" in dot  # an actor not listed gets a lane
    if HAVE_DOT:
        out = render(dot, tmp_path / "odd.svg").output
        assert out is not None
        ET.fromstring(out.read_bytes())


# ---- state_graph_dot ----------------------------------------------------------------

NODES = [
    (0, "owner[s0]=none\nphase[A]=waiting"),
    (1, "owner[s0]=A\nphase[A]=transferring"),
    (2, "owner[s0]=none\nphase[A]=freed"),
    (3, "owner[s0]=B\nwrite[A, 0]=landed"),
    (4, 'a "quoted" \\ label'),
]
EDGES = [
    (0, 1, "decode.allocate(A, s0)"),
    (1, 2, "decode.release(A)"),
    (2, 3, "decode.land(A, 0)"),
    (1, 4, ""),
]


def test_state_graph_golden() -> None:
    dot = state_graph_dot(NODES, EDGES, [0, 1, 2, 3], "immediate_release: zone graph")
    check_golden("state_graph.dot", dot)
    assert dot == state_graph_dot(NODES, EDGES, [0, 1, 2, 3], "immediate_release: zone graph")


def test_state_graph_highlight() -> None:
    dot = state_graph_dot(NODES, EDGES, [0, 1, 2, 3], "")
    lines = dot.splitlines()
    assert RED in next(x for x in lines if x.strip().startswith("s0 -> s1"))
    assert RED not in next(x for x in lines if x.strip().startswith("s1 -> s4"))
    assert RED not in next(x for x in lines if x.strip().startswith("s4 ["))


def test_state_graph_rejects_unknown_nodes() -> None:
    with pytest.raises(ValueError, match="unknown node"):
        state_graph_dot(NODES, [(0, 9, "x")], [], "")
    with pytest.raises(ValueError, match="duplicate"):
        state_graph_dot([(0, "a"), (0, "b")], [], [], "")


# ---- render ---------------------------------------------------------------------------


def test_render_dot_writes_source(tmp_path: Path) -> None:
    src = sequence_dot(race_trace())
    outcome = render(src, tmp_path / "race.dot")
    assert outcome.output == tmp_path / "race.dot" and outcome.dot == outcome.output
    assert outcome.hint is None
    assert (tmp_path / "race.dot").read_text(encoding="utf-8") == src


@pytest.mark.parametrize("name", ["race.jpg", "race", "race.SVGZ"])
def test_unknown_extension(tmp_path: Path, name: str) -> None:
    with pytest.raises(RenderError, match=r"unknown format.*\.dot, \.svg, \.png or \.pdf"):
        render("digraph {}", tmp_path / name)
    assert not list(tmp_path.iterdir())


def test_without_graphviz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    out = tmp_path / "race.svg"
    outcome = render(sequence_dot(race_trace()), out)
    assert not outcome.rendered and outcome.output is None
    assert (tmp_path / "race.dot").read_text(encoding="utf-8") == sequence_dot(race_trace())
    assert not out.exists()
    hint = outcome.hint
    assert hint is not None and "\n" not in hint
    assert f"dot -Tsvg {tmp_path / 'race.dot'} -o {out}" in hint
    assert "apt-get install graphviz" in hint and "brew install graphviz" in hint


def test_dot_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def hang(*args: Any, **kwargs: Any) -> Any:
        raise subprocess.TimeoutExpired(cmd="dot", timeout=1)

    monkeypatch.setattr(render_mod.subprocess, "run", hang)
    with pytest.raises(RenderError, match="did not finish"):
        render("digraph {}", tmp_path / "x.png")
    assert (tmp_path / "x.dot").exists()


@needs_dot
def test_failing_dot_reports_stderr(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"(?i)syntax error"):
        render("digraph { a -> ", tmp_path / "bad.svg")


@needs_dot
def test_render_svg(tmp_path: Path) -> None:
    out = tmp_path / "race.svg"
    outcome = render(sequence_dot(race_trace()), out)
    assert outcome.rendered and outcome.output == out and outcome.hint is None
    assert (tmp_path / "race.dot").exists()
    data = out.read_bytes()
    assert b"Generated by graphviz" not in data
    root = ET.fromstring(data)  # well-formed
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    for actor in ("router", "prefill", "decode"):
        assert actor in texts
    assert any(MESSAGE in t for t in texts)
    edges = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == "edge":
            title = g.find(f"{SVG}title")
            assert title is not None
            edges[re.sub(r":[a-z:]+", "", title.text or "")] = g  # ports dropped
    write = edges["L1_2->L2_7"]
    path = write.find(f"{SVG}path")
    assert path is not None and path.get("stroke", "").lower() == RED
    assert float(path.get("stroke-width", "1")) > 2
    abort = edges["L0_3->L1_6"].find(f"{SVG}path")
    assert abort is not None and abort.get("stroke") == "black"
    # the same bytes again
    again = render(sequence_dot(race_trace()), tmp_path / "again.svg")
    assert again.output is not None and again.output.read_bytes() == data


@needs_dot
@pytest.mark.parametrize("name", ["premature_ack", "single_ack_fanout", "kv_checksum"])
def test_lanes_are_straight(tmp_path: Path, name: str) -> None:
    # Notes alternate sides along these lanes; every lane segment must still be
    # vertical (a kink appears when an edge end leaves its port's centre).
    root_dir = ROOT
    trace = from_itf(json.loads(
        (root_dir / "counterexamples" / f"{name}.json").read_text(encoding="utf-8")))
    out = tmp_path / f"{name}.svg"
    render(sequence_dot(trace), out)
    root = ET.fromstring(out.read_bytes())
    segments = [p.get("d", "") for p in root.iter(f"{SVG}path")
                if p.get("stroke") == "#9e9e9e"]
    assert len(segments) >= 2 * len(trace.steps)
    for d in segments:
        xs = {round(float(x), 1) for x in re.findall(r"([-0-9.]+),[-0-9.]+", d)}
        assert len(xs) == 1, f"a lane segment of {name} is not vertical: {d}"


@needs_dot
@pytest.mark.parametrize("ext,magic", [(".png", b"\x89PNG"), (".pdf", b"%PDF")])
def test_render_binary(tmp_path: Path, ext: str, magic: bytes) -> None:
    out = tmp_path / "sub" / f"race{ext}"
    outcome = render(sequence_dot(race_trace()), out)
    assert outcome.output == out and out.read_bytes().startswith(magic)
    assert (tmp_path / "sub" / "race.dot").exists()


@needs_dot
def test_render_state_graph_svg(tmp_path: Path) -> None:
    out = tmp_path / "states.svg"
    render(state_graph_dot(NODES, EDGES, [0, 1, 2, 3], "zone graph"), out)
    ET.fromstring(out.read_bytes())


# ---- the module boundary ---------------------------------------------------------------


def test_render_imports_no_engine() -> None:
    code = ("import sys, checker.render; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('z3', 'lark') "
            "or m.startswith(('checker.engines', 'checker.language', 'checker.smt'))); "
            "print(','.join(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert proc.stdout.strip() == ""


# ---- long traces: the slot's reuse, idle gaps, labels that cannot overlap ------------

COUNTEREXAMPLES = ROOT / "counterexamples"


def counterexample(name: str) -> Trace:
    return from_itf(json.loads((COUNTEREXAMPLES / f"{name}.json").read_text(encoding="utf-8")))


def test_the_release_and_the_reuse_are_highlighted() -> None:
    dot = sequence_dot(race_trace())
    release = next(ln for ln in dot.splitlines() if ln.strip().startswith("L2_4 "))
    reuse = next(ln for ln in dot.splitlines() if ln.strip().startswith("L2_5 "))
    assert "frees A's slot s0; reused at #5" in release
    assert "reuses s0, freed at #4, while A's writes may still land" in reuse
    for line in (release, reuse):
        assert 'BGCOLOR="#e65100"' in line  # the step's point
        assert 'BGCOLOR="#fff3e0" BORDER="1" COLOR="#e65100"' in line  # the owner change
    first = next(ln for ln in dot.splitlines() if ln.strip().startswith("L2_1 "))
    assert "#e65100" not in first  # the first allocation plays no part


def test_a_reuse_after_every_write_landed_claims_no_write_in_flight(tmp_path: Path) -> None:
    # release_split: A's three chunks have all landed when B gets the slot; the race is
    # the stale flags, not a write.
    out = tmp_path / "split.dot"
    subprocess.run([sys.executable, "-m", "checker", "check",
                    str(ROOT / "docs/tutorial/release_split.kvr"), "-q", "--diagram", str(out)],
                   cwd=ROOT, capture_output=True, check=False, timeout=120)
    dot = out.read_text(encoding="utf-8")
    assert "frees A's slot s0; reused at #8" in dot
    assert "reuses s0, freed at #7<" in dot or 'reuses s0, freed at #7"' in dot
    assert "may still land" not in dot


def test_a_trace_without_reuse_highlights_nothing() -> None:
    trace = race_trace()
    released_only = dataclasses.replace(trace, steps=trace.steps[:5], verdict="holds")
    assert "#e65100" not in sequence_dot(released_only)


def test_long_idle_gaps_are_broken_with_their_length() -> None:
    dot = sequence_dot(counterexample("paired_abort"))  # t = 5 -> 34
    assert dot.count("// idle for") == 1 and "// idle for 29" in dot
    assert "\u2248 29 idle" in dot
    assert "T_7 -> G_8 -> T_8" in dot  # on the time axis, between the two steps
    for i in range(3):  # every lane is broken there, dashed around the mark
        assert f"L{i}_7" in dot and f"B{i}_8 -> " in dot
    assert "// idle for" not in sequence_dot(race_trace())  # gaps of 0 to 3: no break


@needs_dot
@pytest.mark.parametrize("name", sorted(p.stem for p in COUNTEREXAMPLES.glob("*.json")))
def test_no_two_labels_overlap(tmp_path: Path, name: str) -> None:
    out = tmp_path / f"{name}.svg"
    render(sequence_dot(counterexample(name)), out)
    root = ET.fromstring(out.read_bytes())
    boxes = []
    for t in root.iter(f"{SVG}text"):
        text = "".join(t.itertext()).strip()
        if not text:
            continue
        x, y = float(t.get("x", "0")), float(t.get("y", "0"))
        size = float(t.get("font-size", "14"))
        width = 0.5 * size * len(text)  # a narrow estimate: a true overlap still shows
        anchor = t.get("text-anchor", "start")
        x0 = x - width / 2 if anchor == "middle" else x - width if anchor == "end" else x
        boxes.append((x0, y - 0.7 * size, x0 + width, y, text))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if abs(a[3] - b[3]) < 0.5:
                continue  # one line of one label, laid out by Graphviz side by side
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)


def test_the_stale_write_is_red_when_it_is_not_the_violation() -> None:
    dot = sequence_dot(counterexample("radix_prefix_poison"))  # C reads A's KV at #12
    note = next(ln for ln in dot.splitlines() if ln.strip().startswith("L1_9 "))
    assert f'COLOR="{RED}"><I>stale: A\'s write lands in g0, B\'s since #6</I>' in note
    assert f'BGCOLOR="{RED}"' in note  # its point
    write = next(ln for ln in dot.splitlines() if ln.strip().startswith("L0_3:p:c -> L1_9:p:c"))
    assert f'color="{RED}"' in write
    assert dot.count("stale: ") == 1
    assert "stale: " not in sequence_dot(race_trace())  # there the violation is the write

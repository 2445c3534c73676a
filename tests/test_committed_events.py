"""`committed event`: urgent (time stops while it is enabled) and with priority (while
one is enabled, only committed events fire)."""

from __future__ import annotations

from helpers import ROOT

from checker import api
from checker.language import ast, load_text
from checker.language.syntax import parse
from checker.model.compiled import SpecModel

SEMANTICS = ROOT / "tests" / "semantics"


def test_the_parser_marks_committed_events() -> None:
    spec = parse("model m\nactor p\ncommitted event p.go do skip\nurgent event p.now do skip\n"
                 "process Q {\n  location a, b\n  committed event hop from a to b\n}\n")
    go, now, proc = spec.decls[1:]
    assert isinstance(go, ast.EventDecl) and go.urgent and go.committed is not None
    assert isinstance(now, ast.EventDecl) and now.urgent and now.committed is None
    assert isinstance(proc, ast.ProcessDecl)
    hop = proc.items[1]
    assert isinstance(hop, ast.LocalEventDecl) and hop.committed is not None


def test_only_committed_events_fire_while_one_is_enabled() -> None:
    spec = load_text((SEMANTICS / "committed_event.kvr").read_text(encoding="utf-8"), "c.kvr")
    model = SpecModel(spec)
    (s0,) = model.initial_states()
    after_start = next(e.target for e in model.edges(s0) if "start" in model.event_names[e.event])
    names = sorted(model.event_names[e.event] for e in model.edges(after_start))
    assert names == ["a.finish(true)"]  # poke and finish(false) wait; finish(true) is enabled
    assert api.check(spec).verdict is api.HOLDS
    off = load_text((SEMANTICS / "committed_event_off.kvr").read_text(encoding="utf-8"), "o.kvr")
    out = api.check(off)
    assert (out.verdict, out.message) == (api.VIOLATED, "poke saw the half-done phase")


def test_committed_events_do_not_block_one_another_and_stop_time() -> None:
    text = ("model two\nactor a\nvar x : 0..3 = 0\nclock c\n"
            "committed event a.one when x == 1 do x := 2\n"
            "committed event a.other when x == 1 do x := 3\n"
            "event a.go when x == 0 do x := 1; reset c\n"
            "event a.late when c >= 1 and x == 1 do x := 0\n"
            "reachable two: x == 2\nreachable three: x == 3\nreachable waited: x == 1 and c > 0\n")
    out = api.check(load_text(text, "t.kvr"))
    got = {q.name: q.status for q in out.queries}
    assert got == {"two": api.REACHABLE, "three": api.REACHABLE, "waited": api.UNREACHABLE}


def test_a_committed_event_in_a_process() -> None:
    text = ("model p\nactor obs\nvar seen : 0..2 = 0\nprocess Q {\n  location a, b, c\n"
            "  event hop from a to b\n  committed event on from b to c\n}\n"
            "event obs.look when seen == 0 do seen := 1\n"
            "  assert not (Q.loc == b) : \"saw Q in b\"\n")
    assert api.check(load_text(text, "p.kvr")).verdict is api.HOLDS
    plain = api.check(load_text(text.replace("committed event on", "event on"), "p.kvr"))
    assert plain.verdict is api.VIOLATED

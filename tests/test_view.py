"""The viewer's data, page and server without a browser (see test_view_browser.py)."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from checker import api
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.view import page, server, steps
from tests.conftest import ROOT, run_cli

IMMEDIATE = str(ROOT / "spec/sglang/immediate_release.kvr")
DEFERRED = str(ROOT / "spec/sglang/deferred_release.kvr")


@pytest.fixture(scope="module")
def flagship() -> tuple[SpecModel, api.Outcome]:
    outcome = api.check(IMMEDIATE)
    assert outcome.raw is not None
    return outcome.raw[0], outcome


def test_counterexample_becomes_a_run_with_the_solved_times(
        flagship: tuple[SpecModel, api.Outcome]) -> None:
    model, outcome = flagship
    assert outcome.trace is not None
    run = steps.run_of_trace(model, outcome.trace)
    assert [model.event_names[e.event] for e in run.edges] == [
        "decode.allocate(A, s0)", "prefill.post(A, 0)", "router.abort(A)",
        "decode.release(A)", "decode.allocate(B, s0)", "decode.land(A, 0)"]
    assert run.times == [Fraction(t) for t in (0, 1, 2, 3, 3, 4, 5)]
    assert run.moves == [0, 0, 2, 3, 0, 2]
    assert run.ended
    assert run.edges[-1].failure == "write of A chunk 0 lands in slot s0 owned by B"


def test_view_of_the_flagship(flagship: tuple[SpecModel, api.Outcome]) -> None:
    model, outcome = flagship
    assert outcome.trace is not None
    view = steps.view_json(steps.run_of_trace(model, outcome.trace))
    assert view["violating"] == 6
    assert view["verdict"] == "violated"
    last = view["steps"][6]
    assert last["changes"] == {"write[A, 0]": ["flying", "landed"]}
    assert last["state"]["owner[s0]"] == "B"
    assert last["clocks"] == [["since_abort[A]", "2"], ["since_post[A, 0]", "3"]]
    assert last["zone"] == ["since_abort[A] <= 2", "since_post[A, 0] <= 3",
                            "since_abort[A] - since_post[A, 0] <= 0"]
    assert last["enabled"] == []
    assert last["notes"] == ["assertion violated: write of A chunk 0 lands in slot s0 owned by B"]
    # After the abort, the deadline free_at_once lets no time pass: every window is t = 3.
    assert [(e["label"], e["window"]) for e in view["steps"][3]["enabled"]] == [
        ("prefill.post(A, 1)", "t = 3"), ("decode.land(A, 0)", "t = 3"),
        ("prefill.learn_abort(A)", "t = 3"), ("decode.release(A)", "t = 3")]
    # Before the race: the write may still land (the in_flight deadline: until t=5), and
    # landing now is the violation.
    assert [e["delay"] for e in view["steps"][3]["enabled"]] == ["wait 0"] * 4
    assert view["steps"][0]["enabled"][0]["delay"] == "wait [0, \u221e)"
    before = view["steps"][5]["enabled"]
    assert [e["delay"] for e in before] == ["wait [0, 1]"] * 5
    assert [(e["label"], e["window"], e["fails"]) for e in before] == [
        ("prefill.post(A, 1)", "[4, 5]", False), ("prefill.post(B, 0)", "[4, 5]", False),
        ("decode.land(A, 0)", "[4, 5]", True), ("router.abort(B)", "[4, 5]", False),
        ("prefill.learn_abort(A)", "[4, 5]", False)]
    assert view["steps"][2]["zone"] == ["since_post[A, 0] <= 3"]


def test_windows_and_errors_of_firing(flagship: tuple[SpecModel, api.Outcome]) -> None:
    model, _ = flagship
    run = steps.Run(model, [(0, Fraction(1)), (0, Fraction(2))])  # allocate(A), post(A, 0)
    got = {model.event_names[c.edge.event]: c.window.text() for c in run.choices(2)}
    assert got == {"prefill.post(A, 1)": "[2, 5]", "decode.land(A, 0)": "[2, 5]",
                   "router.abort(A)": "[2, 5]"}
    with pytest.raises(steps.RunError, match=r"step 3: decode.land\(A, 0\) cannot fire at"
                       r" t=5.5; its window is \[2, 5\]"):
        run.fire(1, Fraction(11, 2))
    with pytest.raises(steps.RunError, match="no enabled event number 7"):
        run.fire(7, Fraction(3))
    run.fire(1, Fraction(5))  # land(A, 0) at the latest moment
    assert run.states[-1] != run.states[-2] and not run.ended


def test_window_text_and_points() -> None:
    w = steps.Window(Fraction(2), True, Fraction(3), False)
    assert (w.text(), w.pick(), w.points()) == ("(2, 3]", Fraction(5, 2),
                                                [Fraction(5, 2), Fraction(3)])
    w = steps.Window(Fraction(1), False, None, False)
    assert (w.text(), w.pick(), w.points()) == ("[1, \u221e)", 1, [1, 2])
    assert steps.Window(Fraction(3), False, Fraction(3), False).text() == "t = 3"


def test_random_steps_are_deterministic(flagship: tuple[SpecModel, api.Outcome]) -> None:
    model, _ = flagship

    def walk(seed: int) -> list[tuple[int, Fraction]]:
        run = steps.Run(model)
        for k in range(8):
            if not run.random_step(seed + k):
                break
        return list(zip(run.moves, run.times[1:], strict=True))

    assert walk(1) == walk(1)
    assert walk(1) != walk(2)
    assert len(walk(1)) >= 3


def test_a_simulated_run_saves_as_a_trace_that_replays(
        flagship: tuple[SpecModel, api.Outcome]) -> None:
    model, _ = flagship
    run = steps.Run(model)
    for k in range(6):
        run.random_step(10 + k)
    itf = tr.to_itf(run.trace())
    again = steps.run_of_trace(model, tr.from_itf(json.loads(json.dumps(itf))))
    assert again.moves == run.moves and again.times == run.times


def test_page_is_self_contained_and_escapes_its_data(
        flagship: tuple[SpecModel, api.Outcome]) -> None:
    model, outcome = flagship
    assert outcome.trace is not None
    view = steps.view_json(steps.run_of_trace(model, outcome.trace))
    view["model"] = "evil</script><script>alert(1)</script>"
    text = page.page_html(view, steps.check_info(outcome.trace), live=False)
    assert text.count("</script>") == 2  # the data's and the code's, nothing injected
    assert "__DATA__" not in text and "__JS__" not in text and "__CSS__" not in text
    assert not re.search(r"""(src|href)=["']?https?:""", text)
    assert "<title>kvrace view: evil&lt;/script&gt;" in text
    data = re.search(r'<script type="application/json" id="kvrace-data">(.*?)</script>',
                     text, re.S)
    assert data is not None
    assert json.loads(data.group(1))["view"]["model"] == view["model"]


def test_cli_html_and_trace_file(tmp_path: Path) -> None:
    out = tmp_path / "race.html"
    trace = tmp_path / "race.json"
    code, _, _ = run_cli("check", IMMEDIATE, "--trace", str(trace))
    assert code == 1
    code, stdout, stderr = run_cli("view", IMMEDIATE, "--trace", str(trace), "--html", str(out))
    assert (code, stdout, stderr) == (0, f"wrote {out}\n", "")
    text = out.read_text()
    assert '"violating": 6' in text and '"live": false' in text
    # Straight from the spec: the check's verdict, then the file.
    code, stdout, _ = run_cli("view", IMMEDIATE, "--html", str(out))
    assert code == 0
    assert stdout == ("VIOLATED: assert: write of A chunk 0 lands in slot s0 owned by B\n"
                      f"wrote {out}\n")


def test_cli_rejects_a_trace_of_another_spec(tmp_path: Path) -> None:
    trace = tmp_path / "race.json"
    run_cli("check", IMMEDIATE, "--trace", str(trace))
    code, _, stderr = run_cli("view", DEFERRED, "--trace", str(trace), "--html",
                              str(tmp_path / "x.html"))
    assert code == 2
    assert "cannot replay the trace" in stderr and "Traceback" not in stderr
    code, _, stderr = run_cli("view", IMMEDIATE, "--trace", str(tmp_path / "missing.json"))
    assert (code, stderr) == (2, f"{tmp_path / 'missing.json'}: no such file\n")


def test_cli_holds_gives_a_simulator_from_the_initial_state(tmp_path: Path) -> None:
    out = tmp_path / "holds.html"
    code, stdout, _ = run_cli("view", DEFERRED, "--html", str(out))
    assert code == 0 and stdout.startswith("HOLDS")
    data = json.loads(re.search(r'id="kvrace-data">(.*?)</script>', out.read_text(),
                                re.S).group(1))  # type: ignore[union-attr]
    assert len(data["view"]["steps"]) == 1
    assert data["check"] == {"verdict": "holds", "property": None, "message": None,
                             "violating": None}


@pytest.fixture
def served(flagship: tuple[SpecModel, api.Outcome]) -> Iterator[server.ViewServer]:
    model, outcome = flagship
    assert outcome.trace is not None
    view = steps.view_json(steps.run_of_trace(model, outcome.trace))
    srv = server.make_server(model, view, steps.check_info(outcome.trace))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _post(srv: server.ViewServer, path: str, body: object) -> tuple[int, dict[str, object]]:
    req = urllib.request.Request(srv.origin + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json",
                                  server.TOKEN_HEADER: srv.token})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_server_api(served: server.ViewServer) -> None:
    assert served.url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(served.url, timeout=30) as resp:
        assert '"live": true' in resp.read().decode()
    status, doc = _post(served, "/api/run", {"moves": [[0, "1"], [1, "1.5"]]})
    assert status == 200
    assert [s["label"] for s in doc["steps"]] == [  # type: ignore[union-attr]
        "initial", "decode.allocate(A, s0)", "router.abort(A)"]
    status, doc = _post(served, "/api/run", {"moves": [[0, "1"], [0, "0"]]})
    assert (status, doc) == (400, {"error": "step 2: prefill.post(A, 0) cannot fire at t=0;"
                                            " its window is [1, \u221e)"})
    status, doc = _post(served, "/api/random", {"moves": [[0, "1"]], "seed": 5})
    assert status == 200 and len(doc["steps"]) == 3  # type: ignore[arg-type]
    status, doc = _post(served, "/api/trace", {"moves": [[0, "1"]]})
    assert status == 200 and tr.from_itf(doc).steps[1].label == "decode.allocate(A, s0)"
    for bad in ({"moves": "x"}, {"moves": [[0]]}, {"moves": [[0, "1/0"]]}):
        status, doc = _post(served, "/api/run", bad)
        assert status == 400 and "error" in doc
    status, doc = _post(served, "/api/nothing", {"moves": []})
    assert (status, doc) == (400, {"error": "no such request: /api/nothing"})


@pytest.mark.parametrize(("spec", "verdict", "violating", "note"), [
    ("tests/regressions/parametric_deadlock.kvr", "violated", 0,
     "no event can fire and time cannot pass beyond t=3: deadlock"),
    ("tests/regressions/deadline_fault_on_entry.kvr", "error", 1,
     "model error: deadline: value 2 outside 0..1 at"
     " tests/regressions/deadline_fault_on_entry.kvr:11:15"),
    ("spec/sglang/strict_no_release_on_timeout.kvr", "violated", 5,
     "bounded_release[A]: no response within T_bound if the run is still here after t=62"),
])
def test_deadlocks_model_errors_and_deadlines_are_shown(
        spec: str, verdict: str, violating: int, note: str, tmp_path: Path,
        in_root: Path) -> None:
    out = tmp_path / "v.html"
    code, _, stderr = run_cli("view", spec, "--html", str(out))
    assert (code, stderr) == (0, "")
    data = json.loads(re.search(r'id="kvrace-data">(.*?)</script>', out.read_text(),
                                re.S).group(1))  # type: ignore[union-attr]
    assert data["check"]["verdict"] == verdict
    assert data["check"]["violating"] == violating
    assert data["view"]["steps"][violating]["notes"] == [note]


def test_server_answers_local_names_only(served: server.ViewServer) -> None:
    port = served.server_address[1]
    for host, status in ((f"localhost:{port}", 200), ("evil.example:80", 403),
                         (f"127.0.0.1.evil.example:{port}", 403)):
        req = urllib.request.Request(served.url, headers={"Host": host})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                got = resp.status
        except urllib.error.HTTPError as exc:
            got = exc.code
        assert (host, got) == (host, status)

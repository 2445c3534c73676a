"""The viewer's data, page and server without a browser (see test_view_browser.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import socket
import struct
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from time import monotonic, sleep
from typing import Any

import pytest
from helpers import ROOT, run_cli

from checker import api
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.view import page, server, steps

sys.path.insert(0, str(ROOT / "tests"))

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


FISCHER = str(ROOT / "docs/liveness/fischer.kvr")
STRICT = str(ROOT / "docs/liveness/strict_release.kvr")
FISCHER_CYCLE = {"kind": "cycle", "loop": 2, "last": 8, "repeats_exactly": True,
                 "text": "cycle: steps 2..8 repeat for ever (the same delays every turn)"}


def _page_data(text: str) -> dict[str, Any]:
    m = re.search(r'id="kvrace-data">(.*?)</script>', text, re.S)
    assert m is not None
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_the_page_explains_the_counterexample_with_provenance(tmp_path: Path) -> None:
    # The region in which the run is possible (check --explain), and where each of its
    # constraints' parameters come from: the viewer's provenance.
    out = tmp_path / "race.html"
    code, _, _ = run_cli("view", DEFERRED, "-p", "T_hold=7", "--html", str(out))
    assert code == 0
    explain = _page_data(out.read_text())["check"]["explain"]
    assert explain["region"] == "T_hold <= T_prop + T_chunk + T_flight"
    [(constraint, found)] = [(p["constraint"], p["sources"]) for p in explain["provenance"]]
    assert constraint == explain["region"]
    assert found == [
        f"guard of event prefill.post: since_told <= T_chunk ({DEFERRED}:62)",
        f"deadline in_flight: since_post <= T_flight ({DEFERRED}:74)",
        f"deadline propagation: since_abort <= T_prop ({DEFERRED}:85)",
        f"guard of event decode.release: since_abort >= T_hold ({DEFERRED}:88)"]
    # A trace file has no model run behind it to explain.
    trace = tmp_path / "race.json"
    run_cli("check", DEFERRED, "-p", "T_hold=7", "--trace", str(trace))
    run_cli("view", DEFERRED, "--trace", str(trace), "--html", str(out))
    assert "explain" not in _page_data(out.read_text())["check"]


def test_a_liveness_lasso_opens_when_safety_holds(tmp_path: Path) -> None:
    """Safety holds in Fischer's mutex but a process may never enter: the page opens at
    the lasso, its cycle marked; from the spec and from a trace file of ``check``."""
    out = tmp_path / "fischer.html"
    code, stdout, _ = run_cli("view", FISCHER, "--html", str(out))
    assert (code, stdout) == (0, "VIOLATED: enters[P1]: the response never comes: the run"
                              " repeats a cycle for ever; the obligation starts at step 1\n"
                              f"wrote {out}\n")
    text = out.read_text()
    assert '<div id="lasso"></div>' in text
    data = _page_data(text)
    assert data["check"]["lasso"] == FISCHER_CYCLE
    assert data["check"]["property"] == "enters[P1]" and data["check"]["violating"] == 8
    assert [s["label"] for s in data["view"]["steps"][1:]] == [
        "proc.try(P1)", "proc.try(P2)", "proc.set(P1)", "proc.set(P2)", "proc.enter(P2)",
        "proc.retry(P1)", "proc.leave(P2)", "proc.try(P1)"]
    # The cycle's last step returns to the state before its first.
    view_steps = data["view"]["steps"]
    assert view_steps[8]["state"] == view_steps[1]["state"]
    trace = tmp_path / "fischer.json"
    assert run_cli("check", FISCHER, "--trace", str(trace))[0] == 1
    again = tmp_path / "again.html"
    code, stdout, _ = run_cli("view", FISCHER, "--trace", str(trace), "--html", str(again))
    assert (code, stdout) == (0, f"wrote {again}\n")
    from_file = _page_data(again.read_text())
    assert from_file["check"] == data["check"] and from_file["view"] == data["view"]


def test_an_idle_lasso_says_that_nothing_happens_for_ever(tmp_path: Path) -> None:
    out = tmp_path / "strict.html"
    code, stdout, _ = run_cli("view", STRICT, "--html", str(out))
    assert code == 0 and stdout.startswith("VIOLATED: released[A]: the response never comes:"
                                           " the run waits for ever")
    lasso = _page_data(out.read_text())["check"]["lasso"]
    assert lasso == {"kind": "idle", "loop": None, "last": None, "repeats_exactly": False,
                     "text": "then nothing happens for ever: no deadline is active, time"
                     " passes without end"}


def test_check_info_of_a_lasso_and_of_a_finite_trace(
        flagship: tuple[SpecModel, api.Outcome]) -> None:
    assert "lasso" not in steps.check_info(flagship[1].trace)  # type: ignore[arg-type]
    model = SpecModel(api.load_spec(FISCHER), {})
    live = api.check_liveness(model)
    found = next(r.trace for r in live.results if r.trace is not None)
    assert found is not None
    assert steps.lasso_info(found) == FISCHER_CYCLE
    dead = dataclasses.replace(found, lasso="deadlock", loop=None, repeats_exactly=False)
    assert steps.lasso_info(dead) == {
        "kind": "deadlock", "loop": None, "last": None, "repeats_exactly": False,
        "text": "deadlock: no event can fire and time cannot pass"}


def test_the_server_sends_the_lasso_with_its_page() -> None:
    model = SpecModel(api.load_spec(FISCHER), {})
    found = next(r.trace for r in api.check_liveness(model).results if r.trace is not None)
    assert found is not None
    view = steps.view_json(steps.run_of_trace(model, found))
    srv = server.make_server(model, view, steps.check_info(found))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(srv.url, timeout=30) as resp:
            data = _page_data(resp.read().decode())
        assert data["live"] is True and data["check"]["lasso"] == FISCHER_CYCLE
        # A simulated run from the lasso's moves is an ordinary run, without the marker.
        code, run = _post(srv, "/api/run", {"moves": [[s["move"], s["time"]]
                                                      for s in view["steps"][1:]]})
        assert code == 200 and "lasso" not in run
        assert run["steps"][8]["state"] == view["steps"][8]["state"]
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def served(flagship: tuple[SpecModel, api.Outcome]) -> Iterator[server.ViewServer]:
    model, outcome = flagship
    assert outcome.trace is not None
    view = steps.view_json(steps.run_of_trace(model, outcome.trace))
    srv = server.make_server(model, view, steps.check_info(outcome.trace))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
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


# ---- hardening: bounded numbers, the token, origins, slow clients, long runs --------------


def _raw(srv: server.ViewServer, method: str, path: str, headers: dict[str, str],
         body: bytes = b"", timeout: float = 10.0) -> tuple[int | None, bytes]:
    """One request over a new connection with exactly these headers (``Host`` added):
    the status (None without an answer) and the answer's body."""
    head = [f"{method} {path} HTTP/1.0", f"Host: 127.0.0.1:{srv.server_address[1]}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection(srv.server_address[:2], timeout=timeout) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        got = b""
        while chunk := sock.recv(1 << 16):
            got += chunk
    status_line, _, rest = got.partition(b"\r\n")
    parts = status_line.split()
    return (int(parts[1]) if len(parts) > 1 else None), rest.partition(b"\r\n\r\n")[2]


def _api(srv: server.ViewServer, body: bytes, **headers: str) -> tuple[int | None, bytes]:
    """A POST to /api/run as the page sends it, with ``headers`` changed (an empty value
    leaves the header out)."""
    base = {"Content-Type": "application/json", server.TOKEN_HEADER: srv.token,
            "Content-Length": str(len(body))}
    base.update({k.replace("_", "-"): v for k, v in headers.items()})
    return _raw(srv, "POST", "/api/run", {k: v for k, v in base.items() if v}, body)


def test_numbers_are_parsed_with_bounded_digits_and_exponents() -> None:
    from checker import numbers
    from checker.cli import values

    assert values.parse_number is numbers.parse_number  # one parser for -p and the viewer
    assert numbers.parse_number("7/2") == Fraction(7, 2)
    assert numbers.parse_number("1e30") == 10**30
    for text, why in (("1e99999999999999", "exponent is outside [-30, 30]"),
                      ("1" * 31, "more than 30 digits"), ("1/0", "divides by zero"),
                      ("x", "is not a number")):
        with pytest.raises(ValueError, match=re.escape(why)):
            numbers.parse_number(text)


@pytest.mark.parametrize("time", ["1e99999999999999", "1e9999999", "-1e9999999",
                                  "1" * 31 + "/3", "\u0663", "1\u0660", "\uff17.5", "1_0"])
def test_a_huge_time_is_refused_at_once(served: server.ViewServer, time: str) -> None:
    t0 = monotonic()
    status, doc = _post(served, "/api/run", {"moves": [[0, time]]})
    assert monotonic() - t0 < 5
    assert status == 400
    assert str(doc["error"]).startswith(f"step 1: {time[:40]!r}")


def test_every_request_needs_the_token(served: server.ViewServer) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{40,}", served.url)
    other = server.make_server(served.model, {"steps": []}, None)
    try:
        assert other.token != served.token  # a secret per session
    finally:
        other.server_close()
    assert _raw(served, "GET", "/?token=" + served.token, {})[0] == 200
    for path in ("/", "/?token=", "/?token=" + served.token[:-1], "/index.html"):
        assert _raw(served, "GET", path, {})[0] == 403
    body = b'{"moves": []}'
    assert _api(served, body)[0] == 200
    for token in ("", served.token[:-1] + "x", served.token + "x", "\u00e9" * 43):
        status, answer = _api(served, body, X_Kvrace_Token=token)
        assert status == 403 and b"token" in answer


def test_a_post_from_another_origin_is_refused(served: server.ViewServer) -> None:
    """What a page elsewhere can send (a no-cors text/plain POST, with the token even)
    is refused; so is a JSON POST from another origin or site."""
    body = b'{"moves": [[0, "1"]]}'
    status, _ = _api(served, body, X_Kvrace_Token="", Content_Type="text/plain",
                     Origin="http://evil.example", Sec_Fetch_Site="cross-site")
    assert status == 403
    assert _api(served, body, Content_Type="text/plain")[0] == 415
    assert _api(served, body, Content_Type="application/x-www-form-urlencoded")[0] == 415
    assert _api(served, body, Content_Type="")[0] == 415
    for origin in ("http://evil.example", "null", f"http://localhost:{served.server_address[1]}",
                   served.origin + ".evil.example"):
        assert _api(served, body, Origin=origin)[0] == 403
    for site in ("cross-site", "same-site"):
        assert _api(served, body, Sec_Fetch_Site=site)[0] == 403
    status, answer = _api(served, body, Origin=served.origin, Sec_Fetch_Site="same-origin",
                          Content_Type="application/json; charset=utf-8")
    assert status == 200 and json.loads(answer)["steps"][1]["label"] == "decode.allocate(A, s0)"


@pytest.mark.parametrize(("body", "headers", "status"), [
    (b"[" * 100_000, {}, 400),
    (b'{"moves": ' + b"[" * 5000 + b"]" * 5000 + b"}", {}, 400),
    (b'{"a":' * 3000 + b"1" + b"}" * 3000, {}, 400),
    (b"\xff\xfe{}", {}, 400),
    (b'{"moves": [', {}, 400),
    (b"[]", {}, 400),
    (b'{"moves": [[0, "1"]], "seed": 1e999}', {}, 200),
    (b'{"moves": [[1e999, "1"]]}', {}, 400),
    (b'{"moves": [[' + b"9" * 5000 + b', "1"]]}', {}, 400),
    (b'{"moves": [[true, "1"]]}', {}, 400),
    (b'{"moves": []}', {"Content-Length": ""}, 411),
    (b'{"moves": []}', {"Content-Length": "-1"}, 400),
    (b'{"moves": []}', {"Content-Length": "1e3"}, 400),
    (b'{"moves": []}', {"Content-Length": "99999999999999999999"}, 400),
    (b"x" * (server.MAX_BODY + 1), {}, 413),
    (b'{"moves": []}', {"Transfer-Encoding": "chunked"}, 411),
    (b'{"moves": []}', {"Content-Length": "5"}, 400),
])
def test_every_malformed_body_is_a_clean_refusal(
        served: server.ViewServer, capfd: pytest.CaptureFixture[str], body: bytes,
        headers: dict[str, str], status: int) -> None:
    got, answer = _api(served, body, **{k.replace("-", "_"): v for k, v in headers.items()})
    assert got == status
    assert "error" in json.loads(answer) or status == 200
    assert capfd.readouterr().err == ""


def test_a_seed_must_be_a_whole_number(served: server.ViewServer) -> None:
    for seed in (True, 1.5, "1", None):
        status, doc = _post(served, "/api/random", {"moves": [], "seed": seed})
        assert (status, doc) == (400, {"error": "seed: expected a whole number"})


def test_a_silent_or_slow_client_delays_no_one(served: server.ViewServer) -> None:
    """Two connections that never finish their request; the others are answered at
    once (the server's timeouts here are the defaults, far longer than this test)."""
    port = served.server_address[1]
    silent = socket.create_connection(("127.0.0.1", port))
    lying = socket.create_connection(("127.0.0.1", port))
    lying.sendall(f"POST /api/run HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type:"
                  f" application/json\r\n{server.TOKEN_HEADER}: {served.token}\r\n"
                  "Content-Length: 1000\r\n\r\n{}".encode())
    try:
        t0 = monotonic()
        for _ in range(3):
            assert _post(served, "/api/run", {"moves": [[0, "1"]]})[0] == 200
            assert _raw(served, "GET", "/?token=" + served.token, {})[0] == 200
        assert monotonic() - t0 < server.IDLE_TIMEOUT
    finally:
        silent.close()
        lying.close()


@pytest.fixture
def impatient(flagship: tuple[SpecModel, api.Outcome]) -> Iterator[server.ViewServer]:
    """A server with short timeouts and two handlers."""
    model, _ = flagship
    srv = server.make_server(model, {"steps": []}, None, idle_timeout=0.5,
                             request_timeout=1.0, max_handlers=2)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sends before it closes ``sock``; fails if it is still open after
    ``seconds``."""
    sock.settimeout(seconds)
    got = b""
    while chunk := sock.recv(1 << 16):
        got += chunk
    return got


@pytest.mark.slow
def test_slow_clients_are_cut_off(impatient: server.ViewServer,
                                  capfd: pytest.CaptureFixture[str]) -> None:
    port = impatient.server_address[1]
    silent = socket.create_connection(("127.0.0.1", port))
    assert _closed_within(silent, 5) == b""  # after the idle timeout
    # A request that lies about its length: 408 after the idle timeout.
    lying = socket.create_connection(("127.0.0.1", port))
    lying.sendall(f"POST /api/run HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type:"
                  f" application/json\r\n{server.TOKEN_HEADER}: {impatient.token}\r\n"
                  "Content-Length: 1000\r\n\r\n{}".encode())
    assert _closed_within(lying, 5).startswith(b"HTTP/1.0 408 ")
    # One byte at a time, each within the idle timeout: cut at the request's deadline.
    dripping = socket.create_connection(("127.0.0.1", port))
    t0 = monotonic()
    with pytest.raises(OSError):
        for ch in f"GET /?token={impatient.token} HTTP/1.0\r\nX: {'y' * 100}".encode():
            dripping.send(bytes([ch]))
            sleep(0.1)
            if monotonic() - t0 > 6:
                pytest.fail("a client sending one byte every 0.1 s was never cut off")
    assert monotonic() - t0 < 6
    dripping.close()
    for sock in (silent, lying):
        sock.close()
    assert capfd.readouterr().err == ""


@pytest.mark.slow
def test_handlers_are_bounded(flagship: tuple[SpecModel, api.Outcome]) -> None:
    """With both handlers held by silent clients, a third connection is told the
    viewer is busy (after waiting a second for a free one); once they are gone,
    requests are answered again."""
    srv = server.make_server(flagship[0], {"steps": []}, None, idle_timeout=10,
                             request_timeout=10, max_handlers=2)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    port = srv.server_address[1]
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    try:
        sleep(0.1)
        status, answer = _raw(srv, "GET", "/?token=" + srv.token, {})
        assert status == 503 and b"busy" in answer
        for sock in held:
            sock.close()
        sleep(0.2)
        assert _raw(srv, "GET", "/?token=" + srv.token, {})[0] == 200
    finally:
        for sock in held:
            sock.close()
        srv.shutdown()
        srv.server_close()


def test_many_clients_at_once_are_all_answered(served: server.ViewServer) -> None:
    results: list[int | None] = []
    lock = threading.Lock()

    def get() -> None:
        status = _raw(served, "GET", "/?token=" + served.token, {}, timeout=30)[0]
        with lock:
            results.append(status)

    threads = [threading.Thread(target=get) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [200] * 100


def test_a_client_that_goes_away_leaves_no_traceback(
        served: server.ViewServer, capfd: pytest.CaptureFixture[str]) -> None:
    """Clients that close (with a reset) before reading the answer, at every stage."""
    port = served.server_address[1]
    run = json.dumps({"moves": [[0, "1"], [0, "2"], [2, "3"]]}).encode()
    requests = [
        f"GET /?token={served.token} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(),
        (f"POST /api/run HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json"
         f"\r\n{server.TOKEN_HEADER}: {served.token}\r\nContent-Length: {len(run)}\r\n\r\n"
         ).encode() + run,
        b"GET / HTTP/1.0\r\nHost: 127.0.0.1:",
        b"",
    ]
    for _ in range(10):
        for req in requests:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.sendall(req)
            sock.close()
    sleep(0.5)
    assert _post(served, "/api/run", {"moves": []})[0] == 200
    assert capfd.readouterr().err == ""


def test_the_server_listens_on_loopback_only(served: server.ViewServer) -> None:
    assert served.socket.family == socket.AF_INET
    host, port = served.socket.getsockname()
    assert host == "127.0.0.1"
    # The kernel's table of listening sockets: this port, on 127.0.0.1 only.
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, _, hexport = local.partition(":")
            if state == "0A" and int(hexport, 16) == port:
                listening.append(addr)
    if os.path.exists("/proc/net/tcp"):
        assert listening == ["0100007F"]  # 127.0.0.1, little-endian
    # Through another address of this machine, nothing answers.
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: it picks the outgoing address
        mine = probe.getsockname()[0]
    except OSError:
        mine = "0.0.0.0"
    finally:
        probe.close()
    if not mine.startswith("127.") and mine != "0.0.0.0":
        with pytest.raises(OSError):
            socket.create_connection((mine, port), timeout=2).close()


@pytest.mark.parametrize("name", ["__JS__", "__CSS__", "__DATA__", "__TITLE__"])
def test_a_model_named_like_a_placeholder(flagship: tuple[SpecModel, api.Outcome],
                                          name: str) -> None:
    model, outcome = flagship
    assert outcome.trace is not None
    view = steps.view_json(steps.run_of_trace(model, outcome.trace))
    view["model"] = name
    text = page.page_html(view, steps.check_info(outcome.trace), live=True)
    assert f"<title>kvrace view: {name}</title>" in text
    assert text.count("</script>") == 2 and text.count("<style>") == 1
    assert text.count('"use strict"') == 1
    data = re.search(r'<script type="application/json" id="kvrace-data">(.*?)</script>',
                     text, re.S)
    assert data is not None and json.loads(data.group(1))["view"]["model"] == name


def test_a_spec_named_like_a_placeholder_views(tmp_path: Path) -> None:
    spec = tmp_path / "placeholder.kvr"
    spec.write_text(Path(IMMEDIATE).read_text().replace("model immediate_release",
                                                        "model __JS__"))
    out = tmp_path / "v.html"
    code, _, stderr = run_cli("view", str(spec), "--html", str(out))
    assert (code, stderr) == (0, "")
    text = out.read_text()
    assert "<title>kvrace view: __JS__</title>" in text and text.count("</script>") == 2


# ---- zones: incremental, and the same as a replay from the start ---------------------------


def _replayed_zone(run: steps.Run, i: int) -> list[str]:
    """The zone after step ``i`` replayed from the initial state (the reference)."""
    from checker.domains import dbm
    from checker.model.interface import ModelRuntimeError, scaled_bounds
    from checker.semantics.traces import TraceStep, replay_zone

    bounds, scale = scaled_bounds(run.model.bounds, run.model.values)
    trail = [TraceStep(None, "initial", None, run.states[0])] + [
        TraceStep(e.event, "", e, s)
        for e, s in zip(run.edges[:i], run.states[1:i + 1], strict=True)]
    try:
        z = replay_zone(run.model, bounds, trail)
    except ModelRuntimeError:
        return ["unknown: the model errs here"]
    if z is None:
        return ["false"]
    n = len(run.model.clock_names) + 1
    keep = sorted(run.resets[i])
    return steps.zone_lines(dbm.project(z, n, [c + 1 for c in keep]), len(keep) + 1,
                            ["0", *(run.model.clock_names[c] for c in keep)], scale)


def _model(path: str) -> SpecModel:
    from checker.language import load

    return SpecModel(load(str(ROOT / path)), {})


def _random_run(model: SpecModel, length: int, seed: int = 0) -> steps.Run:
    """A random run of at most ``length`` steps, as :meth:`steps.Run.random_step` takes
    them but from one generator (``random_step`` seeds itself from the whole history,
    which costs time quadratic in a long run's length)."""
    run = steps.Run(model)
    rng = random.Random(seed)
    for _ in range(length):
        options = run.choices(len(run) - 1)
        if not options:
            break
        ch = rng.choice(options)
        run.fire(ch.index, rng.choice(ch.window.points()))
    return run


@pytest.mark.parametrize("path", [
    "spec/sglang/immediate_release.kvr", "spec/sglang/heartbeat_loss.kvr",
    "spec/sglang/strict_no_release_on_timeout.kvr", "spec/sglang/all_ranks_ack.kvr",
    "tests/regressions/deadline_fault_on_entry.kvr", "tests/regressions/fischer_const.kvr",
    "tests/regressions/parametric_deadlock.kvr"])
def test_incremental_zones_equal_replayed_ones(path: str) -> None:
    model = _model(path)
    kinds = set()
    for seed in range(4):
        run = _random_run(model, 60, seed)
        for i in range(len(run)):
            got = run.zone(i)
            assert got == _replayed_zone(run, i), (seed, i)
            kinds.add(got[0])
    if path.endswith("deadline_fault_on_entry.kvr"):
        assert "unknown: the model errs here" in kinds


@pytest.mark.slow
def test_a_long_run_costs_linear_work() -> None:
    """The view of a run of 2,000 moves evaluates each state's deadlines a bounded
    number of times (a replay from the start at each step: about 2,000,000)."""
    model = _model("spec/sglang/heartbeat_loss.kvr")
    moves = list(zip(*(lambda r: (r.moves, r.times[1:]))(_random_run(model, 2000)),
                     strict=True))
    assert len(moves) == 2000
    calls = [0]
    deadlines = model.deadlines

    def counted(s: Any) -> Any:
        calls[0] += 1
        return deadlines(s)

    model.deadlines = counted  # type: ignore[method-assign]
    view = steps.view_json(steps.Run(model, moves))
    assert len(view["steps"]) == 2001
    assert calls[0] <= 10 * len(moves), calls[0]


@pytest.mark.slow
def test_a_run_of_5000_moves_is_answered_quickly() -> None:
    """Through the server, with the budget lifted: the view of 5,000 moves (a quadratic
    replay took about 90 s on the machine that measured 3 s for this)."""
    model = _model("spec/sglang/heartbeat_loss.kvr")
    run = _random_run(model, 5000, seed=3)
    body = {"moves": [[m, tr.fmt_time(t)] for m, t in zip(run.moves, run.times[1:],
                                                          strict=True)]}
    srv = server.make_server(model, {"steps": []}, None, answer_budget=60.0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        t0 = monotonic()
        status, doc = _post(srv, "/api/run", body)
        assert status == 200 and len(doc["steps"]) == 5001  # type: ignore[arg-type]
        assert monotonic() - t0 < 45
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def longest_run() -> tuple[SpecModel, steps.Run]:
    """A run of the longest length the server accepts (heartbeat_loss never ends)."""
    model = _model("spec/sglang/heartbeat_loss.kvr")
    run = _random_run(model, server.MAX_MOVES, seed=5)
    assert len(run.moves) == server.MAX_MOVES
    return model, run


@pytest.mark.slow
@pytest.mark.alone  # its bound is time, which a busy sibling core inflates
@pytest.mark.parametrize("path", ["/api/run", "/api/random", "/api/trace", "/api/symbolic",
                                  "/api/concretise"])
def test_the_longest_request_ends_within_the_answer_budget(
        longest_run: tuple[SpecModel, steps.Run], path: str) -> None:
    """A run of MAX_MOVES moves (and, for the symbolic pair, MAX_MOVES events: Z3
    choosing times for 2,000 of them took 15 s) to every endpoint: answered within
    about a second, either in full or as an inconclusive 503 that says why."""
    model, run = longest_run
    symbolic = path in ("/api/symbolic", "/api/concretise")
    body: dict[str, object] = {"moves": list(run.moves) if symbolic else [
        [m, tr.fmt_time(t)] for m, t in zip(run.moves, run.times[1:], strict=True)]}
    if path == "/api/random":
        body["seed"] = 1
    srv = server.make_server(model, {"steps": []}, None)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        t0 = monotonic()
        status, doc = _post(srv, path, body)
        took = monotonic() - t0
    finally:
        srv.shutdown()
        srv.server_close()
    assert took < server.ANSWER_BUDGET + 0.75, took
    assert status in ((400,) if path == "/api/concretise" else (200, 503)), (status, doc)
    if status == 503:
        assert doc["status"] == "inconclusive"
        assert str(doc["error"]).startswith("inconclusive: ")
    if path == "/api/concretise":  # refused outright: longer than MAX_CONCRETE
        assert (status, doc) == (400, {"error": "concretise: at most 300 events can be given"
                                       " times at once (this run has 10000); go back some"
                                       " steps"})


@pytest.mark.slow
@pytest.mark.alone  # its bound is time, which a busy sibling core inflates
def test_the_longest_run_that_concretises_is_answered_within_the_budget(
        longest_run: tuple[SpecModel, steps.Run]) -> None:
    """MAX_CONCRETE events to /api/concretise: answered in about a second with the
    times, or an inconclusive 503; one more event is refused."""
    from checker.view import symbolic

    model, run = longest_run
    srv = server.make_server(model, {"steps": []}, None)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        t0 = monotonic()
        status, doc = _post(srv, "/api/concretise",
                            {"moves": run.moves[:symbolic.MAX_CONCRETE]})
        took = monotonic() - t0
        over, _ = _post(srv, "/api/concretise",
                        {"moves": run.moves[:symbolic.MAX_CONCRETE + 1]})
    finally:
        srv.shutdown()
        srv.server_close()
    assert took < server.ANSWER_BUDGET + 0.75, took
    assert status in (200, 503)
    if status == 200:
        assert len(doc["steps"]) == symbolic.MAX_CONCRETE + 1  # type: ignore[arg-type]
    assert over == 400


def test_an_answer_over_its_budget_is_inconclusive() -> None:
    """A budget of zero: every answer that has work to do is a 503 that says it is
    inconclusive, never a partial view; an empty run is still answered."""
    model = _model("spec/sglang/heartbeat_loss.kvr")
    srv = server.make_server(model, {"steps": []}, None, answer_budget=0.0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        for path, moves in (("/api/run", [[0, "0"]]), ("/api/random", []),
                            ("/api/trace", [[0, "0"]]), ("/api/symbolic", [0]),
                            ("/api/concretise", [0])):
            status, doc = _post(srv, path, {"moves": moves})
            assert status == 503, (path, status, doc)
            assert doc == {"status": "inconclusive", "error": doc["error"]}
            assert "inconclusive: " in str(doc["error"]), doc
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_run_too_long_to_concretise_is_refused_before_any_work() -> None:
    """Past MAX_CONCRETE events /api/concretise is a 400 that says why, even with a
    budget of zero: the refusal comes before the symbolic run is built (which, for a
    long run on a loaded machine, used up the budget and answered 503)."""
    from checker.view import symbolic

    model = _model("spec/sglang/heartbeat_loss.kvr")
    srv = server.make_server(model, {"steps": []}, None, answer_budget=0.0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        status, doc = _post(srv, "/api/concretise", {"moves": [0] * (symbolic.MAX_CONCRETE + 1)})
    finally:
        srv.shutdown()
        srv.server_close()
    assert status == 400, (status, doc)
    assert doc["error"] == (f"concretise: at most {symbolic.MAX_CONCRETE} events can be given"
                            f" times at once (this run has {symbolic.MAX_CONCRETE + 1}); go back"
                            " some steps")


def test_concretising_honours_a_deadline() -> None:
    """Z3's times for a symbolic run stop at the budget's deadline with OverBudget, and
    within the budget they are the same times as without one."""
    from checker.view import symbolic

    model = _model("spec/sglang/heartbeat_loss.kvr")
    events = _random_run(model, 30, seed=5).moves
    free = symbolic.SymbolicRun(model, events).concretise()
    bounded = symbolic.SymbolicRun(model, events, steps.Budget(30.0)).concretise()
    assert bounded.times == free.times and len(free.times) == 31
    spent = symbolic.SymbolicRun(model, events, steps.Budget(30.0))
    spent.budget.deadline = monotonic() - 1  # type: ignore[union-attr]
    with pytest.raises(steps.OverBudget, match="no times were chosen within the 30 s"):
        spent.concretise()


# ---- the API fuzzed: a slice of tests/fuzz.py --viewer ------------------------------------


@pytest.mark.slow
@pytest.mark.alone  # its bound is CPU time, which a busy sibling core inflates
def test_fuzzed_api_requests(capfd: pytest.CaptureFixture[str]) -> None:
    """300 hostile requests: each answered within a second (of CPU time), with a
    documented status, and nothing on stderr."""
    import fuzz_viewer

    summary = fuzz_viewer.viewer_campaign(seed=7, count=300)
    assert summary.failures == [] or all(k == "slow" for _, k, _ in summary.failures), \
        summary.failures[:5]
    assert summary.count == 300
    assert set(summary.statuses) <= fuzz_viewer.ALLOWED
    assert summary.statuses[200] >= 20 and summary.statuses[400] >= 100
    assert capfd.readouterr().err == ""


@pytest.mark.slow
def test_the_command_prints_an_address_with_its_token() -> None:
    """``kvrace view`` as a user runs it: the printed address opens the page, the same
    address without its token does not, a cross-site POST is refused, and Ctrl-C
    ends it with 130 and nothing but the verdict and the address on the terminal."""
    import signal
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "checker", "view", IMMEDIATE], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("VIOLATED: assert:")
        line = proc.stdout.readline()
        m = re.fullmatch(r"kvrace view: immediate_release at (http://127\.0\.0\.1:(\d+)/"
                         r"\?token=([\w-]+))  \(Ctrl-C stops\)\n", line)
        assert m is not None, line
        url, port = m.group(1), int(m.group(2))
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert '"live": true' in resp.read().decode()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30)
        assert refused.value.code == 403
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/run",
                                     b'{"moves": [[0, "1e99999999999999"]]}',
                                     {"Content-Type": "text/plain",
                                      "Origin": "http://evil.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=30)
        assert refused.value.code == 403
        for _ in range(5):  # clients that vanish
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.sendall(f"GET /?token={m.group(3)} HTTP/1.0\r\nHost: 127.0.0.1:{port}"
                         "\r\n\r\n".encode())
            sock.close()
        sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert "Traceback" not in err and "Error" not in err, err


def test_view_step_option(tmp_path: Path) -> None:
    """``--step`` opens the page at a step of the run, or refuses with exit 2."""
    spec = str(ROOT / "spec/sglang/immediate_release.kvr")
    out = tmp_path / "v.html"
    code, text, _ = run_cli("view", spec, "--html", str(out), "--step", "race")
    assert code == 0 and text.endswith(f"wrote {out}\n")
    data = re.search(r'<script type="application/json" id="kvrace-data">(.*?)</script>',
                     out.read_text(), re.S)
    assert data is not None and json.loads(data.group(1))["start"] == "race"
    code, _, err = run_cli("view", spec, "--html", str(out), "--step", "7")
    assert code == 2 and "--step 7: the run has steps 0 to 6" in err
    code, _, err = run_cli("view", spec, "--html", str(out), "--step", "\u0663")
    assert code == 2 and "--step: expected a step number or `race`" in err
    holds = str(ROOT / "spec/sglang/deferred_release.kvr")
    code, _, err = run_cli("view", holds, "--html", str(out), "--step", "race")
    assert code == 2 and "--step race: the run shown has no violating step" in err

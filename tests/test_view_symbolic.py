"""The viewer's symbolic simulator: zones per step, windows of absolute time, and
concretisation, checked against the concrete runs Z3 times."""

from __future__ import annotations

import json
import random
import urllib.request
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT

from checker import api
from checker.model.compiled import SpecModel
from checker.view import server, steps
from checker.view.steps import RunError
from checker.view.symbolic import SymbolicRun, symbolic_view_json

IMMEDIATE = ROOT / "spec/sglang/immediate_release.kvr"
SPECS = [IMMEDIATE, ROOT / "spec/sglang/deferred_release.kvr",
         ROOT / "spec/classic/fischer.kvr", ROOT / "spec/vllm/lease_renewal.kvr"]


def _model(path: Path) -> SpecModel:
    return SpecModel(api.load_spec(path), {})


def _inside(window: str, t: Fraction) -> bool:
    """Whether ``t`` lies in a window written ``t ∈ [lo, hi)``."""
    body = window.removeprefix("t \u2208 ")
    lo_text, hi_text = body[1:-1].split(", ")
    lo = Fraction(lo_text)
    if t < lo or (body[0] == "(" and t == lo):
        return False
    if hi_text == "\u221e":
        return True
    hi = Fraction(hi_text)
    return t < hi or (body[-1] == "]" and t == hi)


def test_the_counterexample_is_a_symbolic_run() -> None:
    outcome = api.check(IMMEDIATE)
    assert outcome.raw is not None and outcome.trace is not None
    model = outcome.raw[0]
    run = steps.run_of_trace(model, outcome.trace)
    sym = SymbolicRun(model, run.moves)
    assert sym.states == run.states and sym.ended
    view = symbolic_view_json(sym)
    assert view["symbolic"] is True and view["violating"] == len(run.moves)
    assert view["steps"][-1]["notes"][0].startswith("assertion violated: ")
    for i, st in enumerate(view["steps"][1:], start=1):
        assert _inside(st["window"], run.times[i]), (i, st["window"], run.times[i])
    # The zone after the abort bounds the write's time on the wire.
    assert "since_post[A, 0] <= 3" in view["steps"][2]["zone"]
    assert "since_post[A, 0] <= t" in view["steps"][2]["zone"]
    assert view["steps"][0]["zone"] == ["true"]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_random_symbolic_runs_concretise_within_their_windows(path: Path) -> None:
    model = _model(path)
    rng = random.Random(f"symbolic:{path.stem}")
    for _ in range(6):
        sym = SymbolicRun(model)
        for _ in range(rng.randrange(1, 14)):
            options = sym.choices(len(sym) - 1)
            if not options:
                break
            sym.fire(rng.choice(options).index)
        run = sym.concretise()
        assert run.states == sym.states and run.moves == sym.moves
        view = symbolic_view_json(sym)
        for i in range(1, len(sym)):
            assert _inside(view["steps"][i]["window"], run.times[i])
            # What can fire after a concrete history can fire after the symbolic one.
            concrete = {c.index for c in run.choices(i)}
            symbolic = {c.index for c in sym.choices(i)}
            assert concrete <= symbolic


def test_an_event_the_zone_excludes_cannot_fire() -> None:
    model = _model(IMMEDIATE)
    sym = SymbolicRun(model)
    offered = {c.index for c in sym.choices(0)}
    missing = next(k for k in range(len(model.edges(sym.states[0])) + 1) if k not in offered)
    with pytest.raises(RunError, match="no enabled event number"):
        sym.fire(missing)


def test_the_server_answers_symbolic_requests() -> None:
    model = _model(IMMEDIATE)
    view = steps.view_json(steps.Run(model))
    srv = server.make_server(model, view, None)
    import threading

    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        def post(path: str, body: object) -> tuple[int, dict[str, object]]:
            req = urllib.request.Request(
                f"http://127.0.0.1:{srv.server_address[1]}{path}",
                data=json.dumps(body).encode(), method="POST",
                headers={"Content-Type": "application/json", "X-Kvrace-Token": srv.token,
                         "Host": f"127.0.0.1:{srv.server_address[1]}"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        code, got = post("/api/symbolic", {"moves": [0, 0]})
        assert code == 200 and got["symbolic"] is True and len(got["steps"]) == 3
        code, got = post("/api/concretise", {"moves": [0, 0]})
        assert code == 200 and "symbolic" not in got
        assert [s["time"] for s in got["steps"]] == ["0", "1", "2"]
        code, got = post("/api/symbolic", {"moves": [0, 99]})
        assert code == 400 and "step 2: no enabled event number 99" in str(got["error"])
        code, got = post("/api/symbolic", {"moves": [True]})
        assert code == 400
    finally:
        srv.shutdown()
        srv.server_close()

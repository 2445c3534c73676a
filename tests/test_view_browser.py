"""The viewer in a real browser: headless Chromium driven by Playwright.

The browser is the system's (Debian's ``chromium`` package), so Playwright
downloads nothing.  Without Chromium or Playwright these tests skip, saying why
— unless ``KVRACE_REQUIRE_BROWSER`` is set (``.ci/run`` sets it), when they
fail instead, so CI cannot skip them silently.

Screenshots are kept as artifacts in ``$KVRACE_ARTIFACTS`` (default
``tests/artifacts/``, ignored by git).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run_cli

from checker import api
from checker.model import trace as tr
from checker.view import server, steps

IMMEDIATE = str(ROOT / "spec/sglang/immediate_release.kvr")
FISCHER = str(ROOT / "docs/liveness/fischer.kvr")
ARTIFACTS = Path(os.environ.get("KVRACE_ARTIFACTS", ROOT / "tests" / "artifacts"))
RACE = "write of A chunk 0 lands in slot s0 owned by B"


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _unavailable(why: str) -> None:
    if os.environ.get("KVRACE_REQUIRE_BROWSER"):
        pytest.fail(f"KVRACE_REQUIRE_BROWSER is set but {why}")
    pytest.skip(f"{why} (install Debian's chromium and `pip install playwright`;"
                " set KVRACE_REQUIRE_BROWSER=1 to make this a failure)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = _chromium()
    if exe is None:
        _unavailable("no Chromium on the PATH (chromium, chromium-browser)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the Python package playwright is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    pg = browser.new_page(viewport={"width": 1400, "height": 820}, accept_downloads=True)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    pg.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def _shot(pg: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    pg.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    return path


def _state(pg: Any) -> dict[str, tuple[str, bool]]:
    """The state table: cell -> (value, highlighted as changed)."""
    rows = pg.locator("#state-table tbody tr")
    out = {}
    for k in range(rows.count()):
        row = rows.nth(k)
        out[row.get_attribute("data-cell")] = (
            row.locator("td.value").inner_text().strip(),
            "changed" in (row.get_attribute("class") or ""))
    return out


def _steps_drawn(pg: Any) -> int:
    return int(pg.locator("#diagram-svg g.step").count())


@pytest.mark.slow
@pytest.mark.xdist_group("browser")  # one worker starts Chromium, once
def test_self_contained_html_steps_to_the_race(page: Any, tmp_path: Path) -> None:
    out = tmp_path / "race.html"
    assert run_cli("view", IMMEDIATE, "--html", str(out))[0] == 0
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    assert page.inner_text("#verdict") == f"VIOLATED: assert: {RACE}"
    assert page.inner_text("#step-counter") == "step 0 / 6"
    assert _steps_drawn(page) == 0
    assert page.is_enabled("#btn-race") and not page.is_enabled("#btn-prev")
    # The diagram grows one step at a time; the state table shows what changed.
    page.click("#btn-next")
    assert page.inner_text("#step-counter") == "step 1 / 6"
    assert _steps_drawn(page) == 1
    state = _state(page)
    assert state["owner[s0]"] == ("A", True)
    assert state["phase[B]"] == ("waiting", False)
    page.click("#btn-next")
    page.click("#btn-next")
    assert _steps_drawn(page) == 3
    assert page.inner_text("#step-head") == "t=3router.abort(A)"
    page.click("#btn-prev")
    assert page.inner_text("#step-counter") == "step 2 / 6"
    # The race: the late write lands in B's slot.
    page.click("#btn-race")
    assert page.inner_text("#step-counter") == "step 6 / 6"
    assert _steps_drawn(page) == 6
    state = _state(page)
    assert state["owner[s0]"] == ("B", False)
    assert state["write[A, 0]"] == ("landed", True)
    assert [k for k, (_, changed) in state.items() if changed] == ["write[A, 0]"]
    assert page.inner_text("#notes") == f"assertion violated: {RACE}"
    assert page.locator("#clock-table tbody tr").all_inner_texts() == [
        "since_abort[A]\t2", "since_post[A, 0]\t3"]
    assert page.locator("#zone li").all_inner_texts() == [
        "since_abort[A] <= 2", "since_post[A, 0] <= 3", "since_abort[A] - since_post[A, 0] <= 0"]
    assert page.locator("#diagram-svg line.message").count() == 1  # post(A, 0) -> land(A, 0)
    # A static page lists what could fire instead, without the simulator's controls.
    page.click("#btn-prev")
    assert page.locator("#enabled tbody tr").count() == 5
    assert page.locator("#enabled button").count() == 0
    assert not page.is_visible("#btn-random")
    page.click("#btn-race")
    _shot(page, "view-html-race.png")
    assert requests == [out.as_uri()]  # nothing fetched from anywhere


@pytest.fixture
def served() -> Iterator[server.ViewServer]:
    outcome = api.check(IMMEDIATE)
    assert outcome.raw is not None and outcome.trace is not None
    model = outcome.raw[0]
    view = steps.view_json(steps.run_of_trace(model, outcome.trace))
    srv = server.make_server(model, view, steps.check_info(outcome.trace))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.mark.slow
@pytest.mark.xdist_group("browser")  # one worker starts Chromium, once
def test_simulator_picks_events_goes_back_and_saves(page: Any, served: server.ViewServer,
                                                    tmp_path: Path) -> None:
    page.goto(served.url)
    page.click("#btn-race")
    assert page.inner_text("#step-counter") == "step 6 / 6"
    # Back to just after the release, and let prefill learn of the abort instead.
    for _ in range(3):
        page.click("#btn-prev")
    assert page.inner_text("#step-counter") == "step 3 / 6"
    assert page.inner_text("#step-head") == "t=3router.abort(A)"
    row = page.locator('#enabled tr[data-label="decode.release(A)"]')
    assert row.locator("td.window").inner_text() == "t = 3"
    row.locator("button.fire").click()
    page.wait_for_function("document.getElementById('step-counter').textContent"
                           " === 'step 4 / 4'")
    row = page.locator('#enabled tr[data-label="prefill.learn_abort(A)"]')
    assert row.locator("td.window").inner_text() == "[3, 5]"
    assert row.locator("td.delay").inner_text() == "wait [0, 2]"
    row.locator("input").fill("4.5")
    row.locator("button.fire").click()
    page.wait_for_function("document.getElementById('step-counter').textContent"
                           " === 'step 5 / 5'")
    assert page.inner_text("#step-head") == "t=4.5prefill.learn_abort(A) \u2190 step 3"
    assert _state(page)["told[A]"] == ("true", True)
    assert page.locator("#diagram-svg line.message").count() == 1  # abort -> learn_abort
    # A time outside the window is refused, with the window in the message.
    row = page.locator('#enabled tr[data-label="decode.allocate(B, s0)"]')
    row.locator("input").fill("9")
    row.locator("button.fire").click()
    page.wait_for_function("document.getElementById('sim-status').textContent !== ''")
    assert page.inner_text("#sim-status") == (
        "step 6: decode.allocate(B, s0) cannot fire at t=9; its window is [4.5, 5]")
    assert page.inner_text("#step-counter") == "step 5 / 5"
    page.click("#btn-random")
    page.wait_for_function("document.getElementById('step-counter').textContent"
                           " === 'step 6 / 6'")
    assert _steps_drawn(page) == 6
    _shot(page, "view-simulator.png")
    with page.expect_download() as got:
        page.click("#btn-save")
    saved = tmp_path / "run.json"
    got.value.save_as(str(saved))
    trace = tr.from_itf(json.loads(saved.read_text()))
    assert [s.label for s in trace.steps[:6]] == [
        "initial", "decode.allocate(A, s0)", "prefill.post(A, 0)", "router.abort(A)",
        "decode.release(A)", "prefill.learn_abort(A)"]
    assert len(trace.steps) == 7 and trace.steps[5].time == tr.Fraction(9, 2)
    # "show me the race" brings the counterexample back.
    page.click("#btn-race")
    assert page.inner_text("#step-counter") == "step 6 / 6"
    assert page.inner_text("#notes") == f"assertion violated: {RACE}"


@pytest.mark.slow
@pytest.mark.xdist_group("browser")  # one worker starts Chromium, once
def test_a_lasso_marks_its_cycle_and_steps_round_it(page: Any, tmp_path: Path) -> None:
    """Fischer's lasso (a trace file of ``check``): the cycle's steps 2..8 in a band with
    its sentence, and a step on from step 8 goes back to step 2, the next turn."""
    trace, out = tmp_path / "fischer.json", tmp_path / "fischer.html"
    assert run_cli("check", FISCHER, "--trace", str(trace))[0] == 1
    assert run_cli("view", FISCHER, "--trace", str(trace), "--html", str(out))[0] == 0
    page.goto(out.as_uri())
    cycle = "cycle: steps 2..8 repeat for ever (the same delays every turn)"
    assert page.inner_text("#lasso") == "\u21ba " + cycle
    assert page.inner_text("#btn-race") == "show me the lasso"
    page.click("#btn-next")
    assert page.locator("#diagram-svg g.cycle").count() == 0  # step 1: the stem
    page.click("#btn-next")
    assert page.text_content("#diagram-svg text.cycle-label") == cycle
    page.click("#btn-race")
    assert page.inner_text("#step-counter") == "step 8 / 8"
    assert page.is_enabled("#btn-next")
    assert page.text_content("#diagram-svg text.lasso-end") == (
        "\u21ba back to step 2: the cycle repeats for ever")
    _shot(page, "view-lasso.png")
    page.click("#btn-next")
    assert page.inner_text("#step-counter") == "step 2 / 8 (turn 2)"
    assert page.inner_text("#step-head") == "t=15proc.try(P2)"
    page.click("#btn-prev")
    assert page.inner_text("#step-counter") == "step 8 / 8"
    page.click("#btn-prev")
    assert page.inner_text("#step-counter") == "step 7 / 8"


@pytest.mark.slow
@pytest.mark.xdist_group("browser")
def test_the_symbolic_simulator_steps_by_zones_and_concretises(
        page: Any, served: server.ViewServer) -> None:
    page.goto(served.url)
    # From step 3 of the counterexample (the abort), go on symbolically.
    page.goto(served.url + "#step=3")
    assert page.inner_text("#step-counter") == "step 3 / 6"
    page.click("#btn-symbolic")
    page.wait_for_function("document.getElementById('run-kind').textContent"
                           " === 'your symbolic run'")
    assert page.inner_text("#step-counter") == "step 3 / 3"
    assert page.is_enabled("#btn-concretise") and not page.is_enabled("#btn-save")
    head = page.inner_text("#step-head")
    assert head.startswith("t \u2208 ") and head.endswith("router.abort(A)")
    zone = page.locator("#zone li").all_inner_texts()
    assert "since_abort[A] <= t" in zone or "since_abort[A] = 0" in zone
    row = page.locator('#enabled tr[data-label="prefill.learn_abort(A)"]')
    assert row.locator("td.window").inner_text().startswith("t \u2208 ")
    assert row.locator("input").count() == 0
    row.locator("button.fire").click()
    page.wait_for_function("document.getElementById('step-counter').textContent"
                           " === 'step 4 / 4'")
    assert page.inner_text("#step-head").endswith("prefill.learn_abort(A) \u2190 step 3")
    page.click("#btn-concretise")
    page.wait_for_function("document.getElementById('run-kind').textContent"
                           " === 'your run'")
    assert page.inner_text("#step-counter") == "step 4 / 4"
    assert page.inner_text("#step-head").startswith("t=")
    assert page.is_enabled("#btn-save") and page.is_enabled("#btn-symbolic")
    _shot(page, "view-symbolic.png")


LONG = str(ROOT / "tests/regressions/long_assert_message.kvr")


@pytest.mark.slow
@pytest.mark.xdist_group("browser")
def test_a_long_message_wraps_inside_the_diagram(page: Any, tmp_path: Path) -> None:
    out = tmp_path / "long.html"
    assert run_cli("view", LONG, "--html", str(out), "--step", "race")[0] == 0
    page.goto(out.as_uri())
    assert page.inner_text("#step-counter") == "step 1 / 1"
    width, right = page.evaluate("""() => {
      const svg = document.getElementById("diagram-svg");
      let right = 0;
      for (const t of svg.querySelectorAll("text")) {
        const box = t.getBBox();
        right = Math.max(right, box.x + box.width);
      }
      return [Number(svg.getAttribute("width")), right];
    }""")
    assert right <= width
    red = page.locator("#diagram-svg g.step tspan[fill='#c62828']").all_text_contents()
    assert len(red) >= 3 and all(len(line) <= 64 for line in red)
    assert " ".join(red) == (
        "this assertion message is long on purpose: it names the pages, the request that owns"
        " them, the write that lands in them and the abort that should have stopped it, so"
        " that a viewer that draws it on one line runs far past the diagram's right edge")


@pytest.mark.slow
@pytest.mark.xdist_group("browser")
def test_the_address_names_the_step(page: Any, tmp_path: Path) -> None:
    out = tmp_path / "race.html"
    assert run_cli("view", IMMEDIATE, "--html", str(out))[0] == 0
    page.goto(out.as_uri() + "#race")
    assert page.inner_text("#step-counter") == "step 6 / 6"
    page.goto(out.as_uri() + "#step=2")
    assert page.inner_text("#step-counter") == "step 2 / 6"
    page.click("#btn-next")
    assert page.evaluate("location.hash") == "#step=3"
    page.reload()
    assert page.inner_text("#step-counter") == "step 3 / 6"
    page.evaluate("location.hash = '#step=99'")  # past the end: the last step
    page.wait_for_function("document.getElementById('step-counter').textContent"
                           " === 'step 6 / 6'")
    started = tmp_path / "started.html"
    assert run_cli("view", IMMEDIATE, "--html", str(started), "--step", "4")[0] == 0
    page.goto(started.as_uri())
    assert page.inner_text("#step-counter") == "step 4 / 6"


def test_a_missing_browser_fails_only_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVRACE_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="KVRACE_REQUIRE_BROWSER is set but no"):
        _unavailable("no Chromium")
    monkeypatch.delenv("KVRACE_REQUIRE_BROWSER")
    with pytest.raises(pytest.skip.Exception,
                       match=r"no Chromium \(install Debian's chromium and `pip install"):
        _unavailable("no Chromium")


@pytest.mark.slow
@pytest.mark.xdist_group("browser")
def test_the_explanation_unfolds_into_provenance(page: Any, tmp_path: Path) -> None:
    out = tmp_path / "explain.html"
    spec = str(ROOT / "spec/sglang/deferred_release.kvr")
    assert run_cli("view", spec, "-p", "T_hold=7", "--html", str(out))[0] == 0
    page.goto(out.as_uri())
    summary = page.locator("#explain summary")
    assert summary.inner_text() == ("this sequence of events is possible exactly when:"
                                    " T_hold <= T_prop + T_chunk + T_flight")
    assert not page.locator("#explain-sources").is_visible()
    summary.click()
    items = page.locator("#explain-sources > li > ul > li").all_inner_texts()
    assert items[1] == f"deadline in_flight: since_post <= T_flight ({spec}:74)"
    assert len(items) == 4

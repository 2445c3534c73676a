"""The viewer's local web server (``kvrace view SPEC``).

It serves the page (:mod:`checker.view.page`) and answers the simulator's
requests, which carry the whole run (a list of ``[move, time]``: the position of
the edge taken in the model's ``edges`` of the state it left, and the time it
fired); the server keeps no session, so a reload, a second tab or going back
never disagree with it:

* ``POST /api/run`` ``{"moves": [...]}`` — the view of that run;
* ``POST /api/random`` ``{"moves": [...], "seed": N}`` — the run with one
  random step more (deterministic for a run and a seed);
* ``POST /api/trace`` ``{"moves": [...]}`` — the run as an ITF trace file.

Errors are ``400`` with ``{"error": message}``.  The server binds 127.0.0.1
only, answers only requests addressed to it by that name or ``localhost`` (a
web page elsewhere cannot reach it through a DNS name of its own) and handles one
request at a time.
"""

from __future__ import annotations

import json
from fractions import Fraction
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from checker.errors import UsageError
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.model.interface import ModelRuntimeError
from checker.view.page import page_html
from checker.view.steps import Run, RunError, view_json

__all__ = ["MAX_MOVES", "ViewServer", "make_server"]

MAX_MOVES = 10_000
"""The longest run the simulator accepts."""
MAX_BODY = 4 << 20
"""The largest request body, in bytes."""


class BadRequest(UsageError):
    """A request the server cannot answer; the message goes back to the page."""


def _moves(body: dict[str, Any]) -> list[tuple[int, Fraction]]:
    raw = body.get("moves")
    if not isinstance(raw, list) or len(raw) > MAX_MOVES:
        raise BadRequest(f"moves: expected a list of at most {MAX_MOVES} [move, time] pairs")
    out: list[tuple[int, Fraction]] = []
    for i, m in enumerate(raw):
        if (not isinstance(m, list) or len(m) != 2 or not isinstance(m[0], int)
                or isinstance(m[0], bool) or not isinstance(m[1], str) or len(m[1]) > 60):
            raise BadRequest(f"moves[{i}]: expected [move, time]")
        try:
            t = Fraction(m[1])
        except (ValueError, ZeroDivisionError):
            raise BadRequest(f"step {i + 1}: {m[1]!r} is not a time (write e.g. 3, 3.5 or"
                             " 7/2)") from None
        out.append((m[0], t))
    return out


class ViewServer(HTTPServer):
    """An HTTP server bound to one model and the page of its first run."""

    def __init__(self, model: SpecModel, page: str, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.model = model
        self.page = page.encode("utf-8")

    @property
    def url(self) -> str:
        """The page's address."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"

    def run_of(self, body: dict[str, Any]) -> Run:
        """The run a request's ``moves`` describe."""
        try:
            return Run(self.model, _moves(body))
        except RunError as exc:
            raise BadRequest(str(exc)) from None

    def api(self, path: str, body: dict[str, Any]) -> object:
        """The answer to a POST to ``path``."""
        if path == "/api/run":
            return view_json(self.run_of(body))
        if path == "/api/random":
            run = self.run_of(body)
            seed = body.get("seed", 0)
            if not isinstance(seed, int):
                raise BadRequest("seed: expected a whole number")
            if not run.random_step(seed):
                raise BadRequest("no event can fire here")
            return view_json(run)
        if path == "/api/trace":
            return tr.to_itf(self.run_of(body).trace())
        raise BadRequest(f"no such request: {path}")


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the terminal shows the address and nothing else

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, doc: object) -> None:
        self._send(status, json.dumps(doc).encode("utf-8"), "application/json")

    def _local(self) -> bool:
        """Whether the request is addressed to this server by a local name; if not,
        it is refused (403)."""
        port = self.server.server_address[1]
        if self.headers.get("Host", "") in (f"127.0.0.1:{port}", f"localhost:{port}"):
            return True
        self._json(HTTPStatus.FORBIDDEN, {"error": "only local requests are answered"})
        return False

    def do_GET(self) -> None:
        if not self._local():
            return
        if self.path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8")
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {self.path}"})

    def do_POST(self) -> None:
        if not self._local():
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
            if not 0 <= length <= MAX_BODY:
                raise BadRequest("request too large")
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise BadRequest("expected a JSON object")
            doc = self.server.api(self.path, body)
        except (BadRequest, ValueError) as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        except ModelRuntimeError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"model error: {exc.message}"})
            return
        self._json(HTTPStatus.OK, doc)


def make_server(model: SpecModel, view: dict[str, Any], check: dict[str, Any] | None,
                port: int = 0) -> ViewServer:
    """A server for ``model`` whose page starts with ``view`` (and the ``check`` that
    found it); ``port`` 0 takes a free port."""
    return ViewServer(model, page_html(view, check, live=True), port)

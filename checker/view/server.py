"""The viewer's local web server (``kvrace view SPEC``).

It serves the page (:mod:`checker.view.page`) and answers the simulator's
requests, which carry the whole run (a list of ``[move, time]``: the position of
the edge taken in the model's ``edges`` of the state it left, and the time it
fired); the server keeps no session, so a reload, a second tab or going back
never disagree with it:

* ``POST /api/run`` ``{"moves": [...]}`` — the view of that run;
* ``POST /api/random`` ``{"moves": [...], "seed": N}`` — the run with one
  random step more (deterministic for a run and a seed);
* ``POST /api/trace`` ``{"moves": [...]}`` — the run as an ITF trace file;
* ``POST /api/symbolic`` ``{"moves": [k, ...]}`` — a symbolic run (events without
  times: edge positions only) with the zone of each step
  (:mod:`checker.view.symbolic`);
* ``POST /api/concretise`` ``{"moves": [k, ...]}`` — that symbolic run with times
  chosen for every step, as the view of a concrete run.

Errors are JSON ``{"error": message}``: ``400`` for a body the server cannot use,
``403`` for a request it refuses, ``411``/``413``/``415`` for a missing length, a
body too large or not JSON, ``408`` for a client too slow, ``503`` when every handler
is busy or the answer needs more work than :data:`ANSWER_BUDGET` allows (an
inconclusive answer: nothing is said about the run).

What it trusts and what it exposes (the README's "Security" section):

* it listens on 127.0.0.1 only, and answers only requests addressed to it by
  that name or ``localhost`` (a web page elsewhere cannot reach it through a DNS
  name of its own);
* every request carries the session's secret token — the page's address has it
  in its query (``/?token=...``), the page sends it in the ``X-Kvrace-Token``
  header — so another user of the machine, or a page that guessed the port,
  gets ``403``;
* an API call must come from the page's own origin (``Origin``, when the browser
  sends it, and ``Sec-Fetch-Site``) and be ``Content-Type: application/json``,
  which a cross-site form or a ``no-cors`` fetch cannot send;
* times are parsed by :func:`checker.numbers.parse_number`, which bounds digits
  and exponents; a body is at most :data:`MAX_BODY` bytes, a run at most
  :data:`MAX_MOVES` moves, and the work on one answer at most :data:`ANSWER_BUDGET`
  seconds;
* each connection has its own thread (at most :data:`MAX_HANDLERS` at a time),
  an idle timeout and a deadline for sending its request, so a slow or silent
  client delays no one else; a client that goes away is forgotten quietly.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import socket
import sys
import threading
import time
from fractions import Fraction
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from checker.errors import UsageError
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.model.interface import ModelRuntimeError
from checker.numbers import parse_number
from checker.view.page import page_html
from checker.view.steps import Budget, OverBudget, Run, RunError, view_json
from checker.view.symbolic import SymbolicRun, symbolic_view_json, too_long_to_concretise

__all__ = ["ANSWER_BUDGET", "MAX_BODY", "MAX_HANDLERS", "MAX_MOVES", "TOKEN_HEADER", "ViewServer",
           "make_server"]

MAX_MOVES = 10_000
"""The longest run the simulator accepts."""
MAX_BODY = 1 << 20
"""The largest request body, in bytes (a run of :data:`MAX_MOVES` moves takes at most
about 700 KB)."""
ANSWER_BUDGET = 0.6
"""How long (seconds) the work on one answer may take: past it the answer is ``503``,
inconclusive (a long run's view, or Z3 choosing times for a long symbolic run)."""
MAX_TIME_TEXT = 60
"""The longest firing time, in characters."""
MAX_HANDLERS = 16
"""How many connections are served at once; more wait in the listen queue."""
SLOT_WAIT = 1.0
"""How long (seconds) a new connection waits for a free handler before it is refused
(503)."""
IDLE_TIMEOUT = 5.0
"""How long (seconds) a connection may stay silent while it sends its request or reads
the answer."""
REQUEST_TIMEOUT = 10.0
"""How long (seconds) a client may take to send its whole request."""
LINGER = 0.5
"""How long (seconds) the server reads what is left of a refused request before it
closes the connection."""
TOKEN_HEADER = "X-Kvrace-Token"
"""The header in which the page sends the session's token with each API call."""

_API = ("/api/run", "/api/random", "/api/trace", "/api/symbolic", "/api/concretise")


class BadRequest(UsageError):
    """A request the server cannot answer; the message goes back to the page."""


class _Refused(Exception):
    """A request refused before its body is read, with its status."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _moves(body: dict[str, Any]) -> list[tuple[int, Fraction]]:
    raw = body.get("moves")
    if not isinstance(raw, list) or len(raw) > MAX_MOVES:
        raise BadRequest(f"moves: expected a list of at most {MAX_MOVES} [move, time] pairs")
    out: list[tuple[int, Fraction]] = []
    for i, m in enumerate(raw):
        if (not isinstance(m, list) or len(m) != 2 or not isinstance(m[0], int)
                or isinstance(m[0], bool) or not isinstance(m[1], str)
                or len(m[1]) > MAX_TIME_TEXT):
            raise BadRequest(f"moves[{i}]: expected [move, time]")
        try:
            t = parse_number(m[1])
        except ValueError as exc:
            raise BadRequest(f"step {i + 1}: {exc}") from None
        out.append((m[0], t))
    return out


class _DeadlineReader:
    """The request stream of one connection: each read waits at most the idle timeout,
    and all of them together end at the request's deadline (a client that sends one
    byte every few seconds is cut off like a silent one)."""

    def __init__(self, conn: socket.socket, idle: float, total: float) -> None:
        self._conn = conn
        self._buf = conn.makefile("rb")
        self._idle = idle
        self._deadline = time.monotonic() + total

    def _arm(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request took too long")
        self._conn.settimeout(min(self._idle, left))

    def readline(self, limit: int = -1) -> bytes:
        out = bytearray()
        while limit < 0 or len(out) < limit:
            self._arm()
            chunk = self._buf.peek(1)  # at most one read from the socket
            if not chunk:
                break
            want = len(chunk) if limit < 0 else min(len(chunk), limit - len(out))
            nl = chunk.find(b"\n", 0, want)
            out += self._buf.read(want if nl < 0 else nl + 1)  # from the buffer
            if nl >= 0:
                break
        return bytes(out)

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            raise ValueError("the request stream is read by length only")
        out = bytearray()
        while len(out) < size:
            self._arm()
            chunk = self._buf.read1(min(size - len(out), 1 << 16))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self._buf.close()


class ViewServer(ThreadingHTTPServer):
    """An HTTP server bound to one model and the page of its first run, on 127.0.0.1."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, model: SpecModel, page: str, port: int = 0, *,
                 token: str | None = None, idle_timeout: float = IDLE_TIMEOUT,
                 request_timeout: float = REQUEST_TIMEOUT,
                 max_handlers: int = MAX_HANDLERS,
                 answer_budget: float = ANSWER_BUDGET) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.answer_budget = answer_budget
        self.model = model
        self.page = page.encode("utf-8")
        self.token = token if token is not None else secrets.token_urlsafe(32)
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self._slots = threading.BoundedSemaphore(max_handlers)

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``: the page's origin."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def url(self) -> str:
        """The page's address, with the session's token: what the user opens."""
        return f"{self.origin}/?token={self.token}"

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(timeout=SLOT_WAIT):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away or was too slow is forgotten; anything else is one
        line on stderr, never a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return
        sys.stderr.write(f"kvrace view: internal error: {type(exc).__name__}: {exc}\n")

    def run_of(self, body: dict[str, Any], budget: Budget | None = None) -> Run:
        """The run a request's ``moves`` describe, with the answer's budget."""
        moves = _moves(body)
        try:
            return Run(self.model, moves, budget)
        except RunError as exc:
            raise BadRequest(str(exc)) from None

    def api(self, path: str, body: dict[str, Any], budget: Budget | None = None) -> object:
        """The answer to a POST to ``path``, within ``budget`` (:class:`OverBudget`
        past it)."""
        if path == "/api/run":
            return view_json(self.run_of(body, budget))
        if path == "/api/random":
            run = self.run_of(body, budget)
            seed = body.get("seed", 0)
            if not isinstance(seed, int) or isinstance(seed, bool):
                raise BadRequest("seed: expected a whole number")
            if not run.random_step(seed):
                raise BadRequest("no event can fire here")
            return view_json(run)
        if path == "/api/trace":
            run = self.run_of(body, budget)
            return tr.to_itf(run.trace(), run.budget.tick if run.budget is not None else None)
        if path == "/api/symbolic":
            return symbolic_view_json(self.symbolic_of(body, budget))
        if path == "/api/concretise":
            raw = body.get("moves")
            refused = too_long_to_concretise(len(raw)) if isinstance(raw, list) else None
            if refused is not None:  # before the symbolic run, which alone can use the budget
                raise BadRequest(refused)
            try:
                return view_json(self.symbolic_of(body, budget).concretise())
            except RunError as exc:
                raise BadRequest(str(exc)) from None
        raise BadRequest(f"no such request: {path}")

    def symbolic_of(self, body: dict[str, Any], budget: Budget | None = None) -> SymbolicRun:
        """The symbolic run a request's ``moves`` (edge positions, no times) describe."""
        raw = body.get("moves")
        if not isinstance(raw, list) or len(raw) > MAX_MOVES or not all(
                isinstance(m, int) and not isinstance(m, bool) for m in raw):
            raise BadRequest(f"moves: expected a list of at most {MAX_MOVES} event numbers")
        try:
            return SymbolicRun(self.model, raw, budget)
        except RunError as exc:
            raise BadRequest(str(exc)) from None


def _refuse_busy(request: socket.socket) -> None:
    """Tell a connection that found every handler busy (best effort, never blocking)."""
    body = b'{"error": "the viewer is busy; try again"}'
    try:
        request.setblocking(False)
        request.send(b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    except OSError:
        pass


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode())


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    _unread = False  # whether the answer goes before the request's body was read

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout)
        self.rfile.close()
        self.rfile = _DeadlineReader(  # type: ignore[assignment]
            self.connection, self.server.idle_timeout, self.server.request_timeout)

    def finish(self) -> None:
        super().finish()
        if self._unread:
            self._drain()

    def _drain(self) -> None:
        """Read what is left of a refused request's body before the connection closes
        (closing with unread data resets it, and the client may lose the answer)."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER
            left = MAX_BODY
            while left > 0 and time.monotonic() < deadline:
                self.connection.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = self.connection.recv(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the terminal shows the address and nothing else

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.connection.settimeout(self.server.idle_timeout)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, doc: object) -> None:
        self._send(status, json.dumps(doc).encode("utf-8"), "application/json")

    def _check_host(self) -> None:
        """Refuse (403) a request not addressed to this server by a local name."""
        port = self.server.server_address[1]
        if self.headers.get("Host", "") not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            raise _Refused(HTTPStatus.FORBIDDEN, "only local requests are answered")

    def _check_token(self, given: str | None) -> None:
        if given is None or not _same(given, self.server.token):
            raise _Refused(HTTPStatus.FORBIDDEN, "this viewer answers only its own page:"
                           " open the address `kvrace view` printed (it carries a token)")

    def _check_origin(self) -> None:
        """Refuse (403) an API call from another origin than the page's."""
        origin = self.headers.get("Origin")
        if origin is not None and origin != "http://" + self.headers.get("Host", ""):
            raise _Refused(HTTPStatus.FORBIDDEN, "requests from other origins are refused")
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            raise _Refused(HTTPStatus.FORBIDDEN, "requests from other sites are refused")

    def _body(self) -> dict[str, Any]:
        """The request's JSON object, read within the request's deadline."""
        if self.headers.get_content_type() != "application/json":
            raise _Refused(HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                           "expected Content-Type: application/json")
        if self.headers.get("Transfer-Encoding") is not None:
            raise _Refused(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length")
        text = self.headers.get("Content-Length")
        if text is None:
            raise _Refused(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length")
        if not (text.isascii() and text.isdigit() and len(text) <= 12):
            raise _Refused(HTTPStatus.BAD_REQUEST, "Content-Length: not a length")
        length = int(text)
        if length > MAX_BODY:
            raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                           f"request too large (at most {MAX_BODY} bytes)")
        raw = self.rfile.read(length)
        self._unread = False
        if len(raw) < length:
            raise BadRequest("the body is shorter than its Content-Length")
        try:
            body = json.loads(raw or b"{}")
        except RecursionError:
            raise BadRequest("the body is nested too deeply") from None
        except ValueError as exc:  # also UnicodeDecodeError
            raise BadRequest(f"not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("expected a JSON object")
        return body

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        try:
            self._check_host()
            self._check_token(parse_qs(url.query).get("token", [None])[-1])
        except _Refused as exc:
            self._json(exc.status, {"error": str(exc)})
            return
        if url.path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8")
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})

    def do_POST(self) -> None:
        self._unread = True
        try:
            self._check_host()
            self._check_token(self.headers.get(TOKEN_HEADER))
            self._check_origin()
            body = self._body()
            # The budget covers the work and the answer's encoding, not the client's
            # sending (REQUEST_TIMEOUT bounds that).
            budget = Budget(self.server.answer_budget)
            doc = self.server.api(self.path, body, budget)
            answer = json.dumps(doc).encode("utf-8")
            budget.tick()
        except _Refused as exc:
            self.close_connection = True
            self._json(exc.status, {"error": str(exc)})
            return
        except TimeoutError:
            self.close_connection = True
            self._json(HTTPStatus.REQUEST_TIMEOUT, {"error": "the request took too long"})
            return
        except BadRequest as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        except OverBudget as exc:
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc),
                                                        "status": "inconclusive"})
            return
        except ModelRuntimeError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"model error: {exc.message}"})
            return
        except (OSError, MemoryError):
            raise
        except Exception as exc:  # a bug: the page and the terminal get one line
            sys.stderr.write(f"kvrace view: internal error on {self.path}:"
                             f" {type(exc).__name__}: {exc}\n")
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR,
                       {"error": f"internal error: {type(exc).__name__}"})
            return
        self._send(HTTPStatus.OK, answer, "application/json")


def make_server(model: SpecModel, view: dict[str, Any], check: dict[str, Any] | None,
                port: int = 0, start: int | str = 0, **options: Any) -> ViewServer:
    """A server for ``model`` whose page starts with ``view`` (and the ``check`` that
    found it) at step ``start``; ``port`` 0 takes a free port.  ``options`` go to
    :class:`ViewServer` (``token``, timeouts, ``max_handlers``, ``answer_budget``)."""
    return ViewServer(model, page_html(view, check, live=True, start=start), port, **options)

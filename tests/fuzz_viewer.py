"""The viewer's API fuzzed: hostile request bodies and headers never hang the server,
never give a traceback and never get an answer outside the documented statuses.

    python tests/fuzz.py --lint 0 --check 0 --viewer 100000 --seed 0

Every request is a function of ``(seed, index)`` only (:func:`viewer_input`), so a
failing one can be rebuilt.  Requests go, one at a time, over real sockets to a
:class:`~checker.view.server.ViewServer` in this process, serving two models: the
flagship counterexample (a run that ends in a violated assert) and a model with
unbounded runs.  The bodies are valid runs of those models, mutations of them
(moves and times replaced by extreme or ill-typed values, moves dropped,
duplicated or swapped, bytes flipped, inserted or cut), random JSON, huge numbers,
deep nesting and wrong types; about one request in seven also has its headers
mutated (no token, a wrong token, another origin, ``text/plain``, a missing,
wrong or lying ``Content-Length``, chunked encoding).

A failure is a status outside :data:`ALLOWED` (a ``500`` is a bug), no answer, an
answer later than :data:`LIMIT` seconds that took that much CPU time (an answer
late only by the wall clock was kept waiting by the machine's other work: it is
counted as ``slow``), or anything the server writes on stderr.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import resource
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from checker.language import load  # noqa: E402
from checker.model import trace as tr  # noqa: E402
from checker.model.compiled import SpecModel  # noqa: E402
from checker.view import server, steps  # noqa: E402

MODELS = ("spec/sglang/immediate_release.kvr", "spec/sglang/heartbeat_loss.kvr")
"""The models served: runs that end in a violation, and runs that never end."""
ALLOWED = frozenset({200, 400, 403, 404, 408, 411, 413, 415, 503})
"""The statuses a request may get (``503``: an answer over the server's budget of work,
inconclusive)."""
LIMIT = 1.0
"""Seconds (of wall clock and CPU time both) a request may take."""
PATHS = ("/api/run", "/api/random", "/api/trace", "/api/symbolic", "/api/concretise")
SYMBOLIC = ("/api/symbolic", "/api/concretise")
"""The paths whose runs are event numbers only (no times)."""

_TIMES = ("0", "1", "2.5", "7/2", "-1", "1e30", "1e31", "1e-30", "1e99999999999999",
          "1e9999999", "9" * 30, "9" * 31, "9" * 60, "9" * 61, "1/0", "0/0", "nan", "inf",
          "-inf", "1_000", "0x10", " 3 ", "", ".", "1.", ".5", "+1", "--1", "1e", "e5",
          "\u0663", "\uff13", "3\x00", "1/" + "9" * 40, "1" + "0" * 29 + "/3", "10e-31")
_MOVES: tuple[object, ...] = (0, 1, 2, 3, -1, 99, 2**31, 2**63, 10**40, True, False, None,
                              1.5, "0", [], {})
_SCALARS: tuple[object, ...] = (None, True, False, 0, -1, 1.5, 1e308, "", "x", "moves",
                                2**70, -(2**70))


@dataclass
class Request:
    """One request: the path, the headers (``None`` values are left out) and the body."""

    path: str
    headers: dict[str, str]
    body: bytes
    mutations: list[str]


Runs = list[tuple[int, list[list[object]]]]
"""Valid runs: (model index, moves as the page sends them)."""


def valid_runs(models: list[SpecModel], per_model: int = 24) -> Runs:
    """A pool of valid runs: (model index, moves as the page sends them)."""
    out: list[tuple[int, list[list[object]]]] = []
    for mi, model in enumerate(models):
        for k in range(per_model):
            run = steps.Run(model)
            length = (3, 8, 20, 60, 150)[k % 5]
            for j in range(length):
                if not run.random_step(1000 * k + j):
                    break
            out.append((mi, [[m, tr.fmt_time(t)] for m, t in
                             zip(run.moves, run.times[1:], strict=True)]))
    return out


def _random_json(rng: random.Random, depth: int) -> object:
    r = rng.random()
    if depth <= 0 or r < 0.4:
        return rng.choice(_SCALARS)
    if r < 0.7:
        return [_random_json(rng, depth - 1) for _ in range(rng.randrange(4))]
    return {rng.choice(("moves", "seed", "x", "")): _random_json(rng, depth - 1)
            for _ in range(rng.randrange(4))}


def _deep(rng: random.Random) -> str:
    k = rng.choice((100, 900, 1000, 1100, 5000, 100_000, 400_000))
    kind = rng.randrange(3)
    if kind == 0:
        return "[" * k + "]" * k
    if kind == 1:
        return '{"moves": ' + "[" * k + "]" * k + "}"
    return '{"a":' * k + "1" + "}" * k


def _mutate_moves(rng: random.Random, moves: list[Any], done: list[str]) -> object:
    moves = [list(m) if isinstance(m, list) else m for m in moves]
    for _ in range(rng.choice((1, 1, 2, 3))):
        op = rng.randrange(9)
        pairs = [i for i, m in enumerate(moves) if isinstance(m, list) and len(m) == 2]
        if op in (0, 1, 7) and moves and not pairs:  # a symbolic run: event numbers only
            moves[rng.randrange(len(moves))] = rng.choice(_MOVES)
            done.append("event")
        elif op == 0 and pairs:
            moves[rng.choice(pairs)][1] = rng.choice(_TIMES)
            done.append("time")
        elif op == 1 and pairs:
            moves[rng.choice(pairs)][0] = rng.choice(_MOVES)
            done.append("move")
        elif op == 2 and moves:
            del moves[rng.randrange(len(moves))]
            done.append("drop")
        elif op == 3 and moves:
            i = rng.randrange(len(moves))
            moves.insert(i, copy.deepcopy(moves[i]))
            done.append("duplicate")
        elif op == 4 and len(moves) > 1:
            i, j = rng.randrange(len(moves)), rng.randrange(len(moves))
            moves[i], moves[j] = moves[j], moves[i]
            done.append("swap")
        elif op == 5 and moves:
            i = rng.randrange(len(moves))
            moves[i] = rng.choice(([], [0], [0, "1", 2], "x", None, {"0": 1}, [[0, "1"]]))
            done.append("shape")
        elif op == 6:
            done.append("type")
            return rng.choice((None, "x", 7, {}, {"0": moves}, [moves]))
        elif op == 7 and pairs:
            # a time just past the end of its window, or far past it
            i = rng.choice(pairs)
            t = str(moves[i][1])
            moves[i][1] = rng.choice((t + "1", "-" + t, t + "/7", t + "e1"))
            done.append("late")
        else:
            moves = moves * rng.choice((2, 40, 300))
            done.append("repeat")
    return moves


def _mutate_bytes(rng: random.Random, b: bytes, done: list[str]) -> bytes:
    data = bytearray(b)
    for _ in range(rng.choice((1, 2, 4))):
        if not data:
            break
        i = rng.randrange(len(data))
        op = rng.randrange(4)
        if op == 0:
            data[i] = rng.randrange(256)
        elif op == 1:
            data.insert(i, rng.choice(b'[]{}",:0e-\\\x00\xff'))
        elif op == 2:
            del data[i]
        else:
            del data[i:]
        done.append(("flip", "insert", "delete", "cut")[op])
    return bytes(data)


def viewer_input(seed: int, index: int, runs: Runs,
                 addresses: Sequence[tuple[str, str]]) -> tuple[int, Request]:
    """Request number ``index`` of a campaign: (model index, request).  ``addresses``
    are the (``Host`` header, token) of each model's server."""
    rng = random.Random(f"{seed}:viewer:{index}")
    mi, pairs = runs[rng.randrange(len(runs))]
    host, token = addresses[mi]
    path = rng.choice(PATHS)
    moves: list[Any] = [m[0] for m in pairs] if path in SYMBOLIC else pairs
    done: list[str] = []
    r = rng.random()
    doc: object
    text: str | None = None
    if r < 0.15:
        valid: dict[str, object] = {"moves": moves}
        if path == "/api/random" and rng.random() < 0.8:
            valid["seed"] = rng.randrange(10**6)
        doc = valid
        done.append("valid")
    elif r < 0.55:
        doc = {"moves": _mutate_moves(rng, moves, done)}
        if rng.random() < 0.3:
            doc["seed"] = rng.choice((0, 1, -1, 2**64, 1.5, "1", None, True, [1], 10**30))
            done.append("seed")
    elif r < 0.65:
        doc = _random_json(rng, rng.randrange(1, 7))
        done.append("random JSON")
    elif r < 0.72:
        text = _deep(rng)
        done.append("deep")
    elif r < 0.78:
        num = rng.choice(("1e999999", "-1e999999", "9" * rng.choice((20, 4300, 4301, 100_000)),
                          "1" + "0" * 5000 + ".5", "NaN", "Infinity", "-0.0e-99999"))
        key = rng.choice(("seed", "moves"))
        text = f'{{"{key}": {num}}}' if rng.random() < 0.5 else (
            '{"moves": [[' + num + ', "1"]], "seed": 1}')
        done.append("huge number")
    elif r < 0.82:
        text = rng.choice(("", "{}", "[]", "null", "0", '"x"', "{", '{"moves": [', "\ufeff{}",
                           '{"moves": []}' * 2, '{"moves": [], "moves": 3}'))
        done.append("odd body")
    else:
        doc = {"moves": moves, "seed": 1}
        done.append("bytes")
    body = (text if text is not None else json.dumps(doc)).encode("utf-8")
    if "bytes" in done:
        body = _mutate_bytes(rng, body, done)
    headers = {"Host": host, "Content-Type": "application/json",
               server.TOKEN_HEADER: token, "Content-Length": str(len(body))}
    if rng.random() < 1 / 7:
        op = rng.randrange(12)
        done.append(f"header {op}")
        if op == 0:
            del headers[server.TOKEN_HEADER]
        elif op == 1:
            headers[server.TOKEN_HEADER] = token[:-1] + ("A" if token[-1] != "A" else "B")
        elif op == 2:
            headers[server.TOKEN_HEADER] = "\u00e9" * 43
        elif op == 3:
            headers["Origin"] = rng.choice(("http://evil.example", "null", f"http://{host}.x"))
        elif op == 4:
            headers["Content-Type"] = rng.choice(("text/plain", "application/x-www-form-urlencoded",
                                                  "multipart/form-data; boundary=x", ""))
        elif op == 5:
            del headers["Content-Length"]
        elif op == 6:
            headers["Content-Length"] = rng.choice(("-1", "x", "1e3", " 5", "99999999999999999",
                                                    str(2**20 + 1)))
        elif op == 7:
            headers["Content-Length"] = str(len(body) + rng.choice((1, 100)))  # lies: waits
        elif op == 8:
            headers["Content-Length"] = str(max(0, len(body) - rng.randrange(1, 10)))
        elif op == 9:
            headers["Transfer-Encoding"] = "chunked"
        elif op == 10:
            headers["Sec-Fetch-Site"] = rng.choice(("cross-site", "same-site"))
        else:
            path = rng.choice(("/api/nothing", "/api/run?x=1", "//api/run", "/", "/api/run/"))
    return mi, Request(path, headers, body, done)


def send(port: int, req: Request, timeout: float = 10.0) -> int | None:
    """Send ``req`` over a new connection; the answer's status, or None without one."""
    lines = [f"POST {req.path} HTTP/1.0"] + [f"{k}: {v}" for k, v in req.headers.items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # The server may answer (413, 415) and close before the body is all sent.
        with contextlib.suppress(OSError):
            sock.sendall(head + req.body)
        got = bytearray()
        with contextlib.suppress(OSError):
            while True:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                got += chunk
    first = bytes(got).split(b"\r\n", 1)[0].split()
    if len(first) < 2 or not first[1].isdigit():
        return None
    return int(first[1])


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@dataclass
class ViewerSummary:
    """What a campaign found."""

    count: int = 0
    statuses: Counter[int | None] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    max_seconds: float = 0.0
    max_cpu: float = 0.0
    failures: list[tuple[int, str, str]] = field(default_factory=list)

    def line(self, seconds: float) -> str:
        k = self.kinds
        return (f"viewer: {self.count} requests, statuses"
                f" {dict(sorted(self.statuses.items(), key=str))}: {k['traceback']} tracebacks,"
                f" {k['hang']} hangs, {k['status']} odd statuses, {k['slow']} slow only by"
                f" wall clock; slowest {self.max_seconds:.3f} s ({self.max_cpu:.3f} s CPU);"
                f" {seconds:.0f} s")


@contextlib.contextmanager
def serving(idle: float = 0.3, total: float = 0.6) -> Iterator[list[server.ViewServer]]:
    """The fuzzed servers, one per model of :data:`MODELS`, with short timeouts (a
    request whose ``Content-Length`` lies waits for them)."""
    servers = []
    try:
        for path in MODELS:
            model = SpecModel(load(str(ROOT / path)), {})
            view = steps.view_json(steps.Run(model))
            srv = server.make_server(model, view, None, idle_timeout=idle, request_timeout=total)
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            servers.append(srv)
        yield servers
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()


def viewer_campaign(seed: int, count: int, start: int = 0,
                    progress: Callable[[str], None] | None = None,
                    summary: ViewerSummary | None = None) -> ViewerSummary:
    """Send ``count`` requests; see the module's docstring.  The server's stderr is
    captured: any output there is a failure (a traceback or an internal error)."""
    summary = summary if summary is not None else ViewerSummary()
    last = time.monotonic()
    err = io.StringIO()
    real_err = sys.stderr
    with serving() as servers:
        runs = valid_runs([srv.model for srv in servers])
        addresses = [(f"127.0.0.1:{srv.server_address[1]}", srv.token) for srv in servers]
        sys.stderr = err
        try:
            for i in range(start, start + count):
                mi, req = viewer_input(seed, i, runs, addresses)
                port = servers[mi].server_address[1]
                said = err.tell()
                t0, c0 = time.monotonic(), _cpu()
                try:
                    status = send(port, req)
                except OSError as exc:
                    status = None
                    summary.kinds["hang"] += 1
                    summary.failures.append((i, "hang", f"{type(exc).__name__}: {exc}"))
                seconds, cpu = time.monotonic() - t0, _cpu() - c0
                summary.count += 1
                summary.statuses[status] += 1
                summary.max_seconds = max(summary.max_seconds, seconds)
                summary.max_cpu = max(summary.max_cpu, cpu)
                out = err.getvalue()[said:]
                where = f"{req.path} {', '.join(req.mutations)}"
                if out:
                    summary.kinds["traceback"] += 1
                    summary.failures.append((i, "traceback", f"{where}: {out.strip()[:300]}"))
                elif status is None or status not in ALLOWED:
                    summary.kinds["status"] += 1
                    summary.failures.append((i, "status", f"{where}: {status}"))
                elif seconds > LIMIT and cpu > LIMIT:
                    summary.kinds["hang"] += 1
                    summary.failures.append((i, "hang", f"{where}: {seconds:.2f} s"))
                elif seconds > LIMIT:
                    summary.kinds["slow"] += 1
                if progress is not None and time.monotonic() - last > 10:
                    last = time.monotonic()
                    sys.stderr = real_err
                    progress(summary.line(0))
                    sys.stderr = err
        finally:
            sys.stderr = real_err
        # Still answering after all of it.
        for srv, (host, token) in zip(servers, addresses, strict=True):
            ok = Request("/api/run", {"Host": host, "Content-Type": "application/json",
                                      server.TOKEN_HEADER: token, "Content-Length": "13"},
                         b'{"moves": []}', [])
            if send(srv.server_address[1], ok) == 200:
                continue
            summary.kinds["hang"] += 1
            summary.failures.append((-1, "hang", "the server stopped answering"))
    return summary


def replay(seed: int, index: int) -> str:
    """Request number ``index``, as text (for a failure's report)."""
    models = [SpecModel(load(str(ROOT / p)), {}) for p in MODELS]
    mi, req = viewer_input(seed, index, valid_runs(models), [("127.0.0.1:PORT", "TOKEN")] * 2)
    body = req.body[:2000].decode("utf-8", "backslashreplace")
    return (f"# model {MODELS[mi]}; {', '.join(req.mutations)}\nPOST {req.path}\n"
            + "".join(f"{k}: {v}\n" for k, v in req.headers.items()) + "\n" + body)


__all__ = ["ALLOWED", "LIMIT", "Request", "ViewerSummary", "replay", "send",
           "serving", "valid_runs", "viewer_campaign", "viewer_input"]

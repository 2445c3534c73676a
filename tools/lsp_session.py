#!/usr/bin/env python3
"""Talk to ``kvrace lsp`` over stdio as an editor does, and print the conversation.

A minimal Language Server Protocol client (JSON-RPC with ``Content-Length``
framing, no dependencies): it starts the server, opens a spec, edits it (a typo,
then the fix), asks for hover, definition, references, the outline, completion
and formatting, runs the ``check this spec`` lens, and shuts the server down.
Each message is printed in one line (``-->`` to the server, ``<--`` from it),
long payloads cut.  ``--latency N`` instead measures the time from an edit to
its diagnostics over N edits of the spec (what ``benchmarks/bench.py --editor``
reports).

    python tools/lsp_session.py spec/classic/fischer.kvr
    python tools/lsp_session.py --latency 50 spec/sglang/room_reuse.kvr
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]


class Client:
    """One server process and the messages exchanged with it."""

    def __init__(self, log: IO[str] | None) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "checker", "lsp"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, cwd=ROOT)
        self.log = log
        self.next_id = 0
        self.pending: list[dict[str, Any]] = []

    def _show(self, arrow: str, msg: dict[str, Any]) -> None:
        if self.log is None:
            return
        text = json.dumps(msg, separators=(",", ":"))
        if len(text) > 300:
            text = text[:297] + "..."
        self.log.write(f"{arrow} {text}\n")

    def send(self, msg: dict[str, Any]) -> None:
        """Write one message to the server."""
        msg = {"jsonrpc": "2.0", **msg}
        self._show("-->", msg)
        body = json.dumps(msg).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        """Read one message from the server."""
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        msg: dict[str, Any] = json.loads(self.proc.stdout.read(length))
        self._show("<--", msg)
        return msg

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification."""
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and wait for its response (answering the server's own
        requests, keeping its notifications)."""
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        while True:
            msg = self.receive()
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")
            if "method" in msg and "id" in msg:
                self.send({"id": msg["id"], "result": None})
            else:
                self.pending.append(msg)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The next notification ``method`` (kept ones first)."""
        for i, msg in enumerate(self.pending):
            if msg.get("method") == method:
                return self.pending.pop(i)
        while True:
            msg = self.receive()
            if msg.get("method") == method:
                return msg
            if "method" in msg and "id" in msg:
                self.send({"id": msg["id"], "result": None})

    def start(self) -> None:
        """The initialize handshake."""
        self.request("initialize", {"processId": os.getpid(), "rootUri": ROOT.as_uri(),
                                    "capabilities": {}})
        self.notify("initialized", {})

    def stop(self) -> int:
        """Shut the server down; its exit code."""
        self.request("shutdown", {})
        self.notify("exit", {})
        return self.proc.wait(timeout=10)


def _pos(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def conversation(path: Path, out: IO[str]) -> int:
    """The scripted editing session on ``path``, printed to ``out``."""
    text = path.read_text(encoding="utf-8")
    uri = path.resolve().as_uri()
    doc = {"uri": uri}
    lines = text.split("\n")
    client = Client(out)
    client.start()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "kvrace", "version": 1, "text": text}})
    client.wait_for("textDocument/publishDiagnostics")
    # the first variable's first use, with a typo, then the fix
    var = next(i for i, ln in enumerate(lines) if ln.startswith("var "))
    name = lines[var].split()[1]
    use = next(i for i in range(var + 1, len(lines))
               if f"{name}[" in lines[i] and not lines[i].lstrip().startswith("#"))
    col = lines[use].index(f"{name}[")
    typo = [*lines[:use], lines[use][:col] + name + "x" + lines[use][col + len(name):],
            *lines[use + 1:]]
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"text": "\n".join(typo)}]})
    diags = client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"]
    if diags:
        client.request("textDocument/codeAction", {
            "textDocument": doc, "range": diags[0]["range"],
            "context": {"diagnostics": diags[:1]}})
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": text}]})
    client.wait_for("textDocument/publishDiagnostics")
    where = {"textDocument": doc, "position": _pos(use, col)}
    client.request("textDocument/hover", where)
    client.request("textDocument/definition", where)
    client.request("textDocument/references", {**where, "context": {
        "includeDeclaration": True}})
    client.request("textDocument/documentSymbol", {"textDocument": doc})
    client.request("textDocument/completion", {"textDocument": doc,
                                               "position": _pos(use, col + 1)})
    client.request("textDocument/formatting", {"textDocument": doc, "options": {
        "tabSize": 2, "insertSpaces": True}})
    lenses = client.request("textDocument/codeLens", {"textDocument": doc})
    if lenses:
        command = lenses[0]["command"]
        client.request("workspace/executeCommand", {
            "command": command["command"], "arguments": command["arguments"]})
    return client.stop()


def latency(path: Path, edits: int) -> dict[str, float]:
    """Seconds from a change of ``path``'s text to its diagnostics: median and worst
    over ``edits`` changes (each inserts a comment line at another place of the file,
    so every text is new and every declaration after it moves)."""
    text = path.read_text(encoding="utf-8")
    uri = path.resolve().as_uri()
    client = Client(None)
    client.start()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "kvrace", "version": 1, "text": text}})
    client.wait_for("textDocument/publishDiagnostics")
    times = []
    lines = text.split("\n")
    for k in range(edits):
        at = (k * 7919) % len(lines)
        changed = "\n".join([*lines[:at], f"# edit {k}", *lines[at:]])
        start = time.perf_counter()
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": k + 2},
            "contentChanges": [{"text": changed}]})
        client.wait_for("textDocument/publishDiagnostics")
        times.append(time.perf_counter() - start)
    client.stop()
    return {"median": statistics.median(times), "worst": max(times), "edits": edits}


def main(argv: list[str] | None = None) -> int:
    """Run the session (or the latency measurement) on the spec named."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", type=Path)
    ap.add_argument("--latency", type=int, metavar="N", default=0,
                    help="measure edit-to-diagnostics latency over N edits instead")
    args = ap.parse_args(argv)
    if args.latency:
        result = latency(args.spec, args.latency)
        print(f"{args.spec}: diagnostics {result['median'] * 1000:.0f} ms median,"
              f" {result['worst'] * 1000:.0f} ms worst over {args.latency} edits")
        return 0
    return conversation(args.spec, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())

"""The workers of ``check --workers N`` on this machine: forked children of the driver,
spoken to through anonymous pipes.

:class:`Children` stands where :class:`checker.engines.raysession.Actors` stands for
Ray, with the same calls (``handle.method.remote(*args)``, ``.options(num_returns=k)``,
:meth:`Children.get`), so the driver's rounds are the same on both.  What differs:

* **Start-up.**  The model is built and its clock-bounds pre-pass run once, here, in
  one worker object (:meth:`Children.load`); the workers are then forked from it, so
  none builds the model again (a compiled model's generated code cannot be pickled and
  needs no pickling here) and none repeats the pre-pass.  Starting N workers costs a
  fork each: milliseconds, against seconds for Ray.
* **Batches** from one worker to another go through the driver: a worker's answer to
  ``expand`` holds its batches (pickled bytes), and the driver passes them on in the
  owner's ``receive``.  Only this process's own children are ever unpickled.
* **Ends.**  A child that dies (its pipe reaches end of file) ends the run as
  :class:`WorkerDied`, a child that raises as ``worker N failed: ...``; a limit a child
  hits mid-call as :class:`LimitHit`.  The children ignore SIGINT (the driver handles
  Ctrl-C and kills them), die with the driver (``PR_SET_PDEATHSIG``), and are killed
  and reaped at the end of every run, whatever ended it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from checker.engines.raysession import (
    WAIT_SLICE,
    Cluster,
    WorkerDied,
    first_line,
    signals_held,
)
from checker.limits import LimitHit, MemoryGuard, young_collections_only

GRACE = 0.5
"""Seconds past the run's deadline after which the driver stops waiting for a worker
(each worker watches the deadline itself; this is the backstop)."""

PR_SET_PDEATHSIG = 1

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class _Reply:
    """The answer a worker owes to one call: its value once read, or what went wrong."""

    def __init__(self, worker: int) -> None:
        self.worker = worker
        self.done = False
        self.value: Any = None
        self.failure: tuple[str, str] | None = None
        """``("limit", what)`` or ``("failed", message)``."""


class _Part:
    """One of the values of a call answered with several (``options(num_returns=k)``)."""

    def __init__(self, reply: _Reply, index: int) -> None:
        self.reply = reply
        self.index = index


_Ref = _Reply | _Part


class _Method:
    """A worker's method: :meth:`remote` sends the call at once."""

    def __init__(self, pool: Children, worker: int, name: str, returns: int | None = None
                 ) -> None:
        self.pool = pool
        self.worker = worker
        self.name = name
        self.returns = returns

    def options(self, num_returns: int) -> _Method:
        return _Method(self.pool, self.worker, self.name, num_returns)

    def remote(self, *args: Any) -> Any:
        reply = self.pool.send(self.worker, self.name, args)
        if self.returns is None:
            return reply
        return [_Part(reply, i) for i in range(self.returns)]


class Handle:
    """A worker, as the driver calls it (``handle.expand.remote(ranks)``)."""

    def __init__(self, pool: Children, worker: int) -> None:
        self._pool = pool
        self._worker = worker

    def __getattr__(self, name: str) -> _Method:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Method(self._pool, self._worker, name)


class Children:
    """The workers of one run as forked children of this process.  ``worker``: the
    worker class (:class:`~checker.engines.partition.Partition`); ``deadline``: the
    run's ``time.monotonic()`` end, if any; ``timeout``: its time limit in seconds
    (for the message)."""

    def __init__(self, cluster: Cluster, worker: type, deadline: float | None,
                 timeout: float | None) -> None:
        self.cluster = cluster
        self.worker = worker
        self.deadline = deadline
        self.timeout = timeout
        self.n = 0
        self.actors: list[Handle] = []
        self.pids: list[int] = []
        self.inbox: list[Connection] = []
        """Per worker: the pipe the driver reads its answers from."""
        self.outbox: list[Connection] = []
        """Per worker: the pipe the driver writes its calls to."""
        self.pending: list[deque[_Reply]] = []
        self.memory_mb: int | None = None
        self.ended: dict[int, str] = {}
        """How each worker reaped after its death ended."""

    def left(self) -> float | None:
        """Seconds left before the deadline."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    def spawn(self) -> int:
        """How many workers (one per CPU unless the cluster says); they are forked by
        :meth:`load`."""
        self.n = self.cluster.workers or os.cpu_count() or 1
        return self.n

    def load(self, build: Callable[[], Any], limits: Any, left: float | None, options: Any
             ) -> list[tuple[str, str | None]]:
        """Build the model and run the pre-pass in one worker object here, then fork the
        workers from it; each worker's answer (all the same: ``("ok", None)``, or the
        limit or model error, in which case no worker is started)."""
        proto = self.worker(0, self.n)
        with young_collections_only():
            status: tuple[str, str | None] = proto.load(build, limits, left, options)
        if status[0] == "ok":
            self.memory_mb = limits.max_memory_mb
            self._fork(proto)
        return [status] * self.n

    def _fork(self, proto: Any) -> None:
        """Fork the ``n`` workers from ``proto`` (each gets its index)."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        # Everything alive now is the children's too: frozen, the collector of a child
        # does not walk (and so copy) it.  SIGINT and SIGTERM wait until a child has put
        # its own handlers in place (an interrupt here reaches the driver's handler).
        gc.freeze()
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            for i in range(self.n):
                calls_r, calls_w = os.pipe()
                answers_r, answers_w = os.pipe()
                pid = os.fork()
                if pid == 0:  # the child: never returns
                    os.close(calls_w)
                    os.close(answers_r)
                    _child(proto, i, Connection(calls_r, writable=False),
                           Connection(answers_w, readable=False),
                           [c for c in (*self.inbox, *self.outbox)], self.memory_mb)
                os.close(calls_r)
                os.close(answers_w)
                self.pids.append(pid)
                self.inbox.append(Connection(answers_r, writable=False))
                self.outbox.append(Connection(calls_w, readable=False))
                self.pending.append(deque())
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
            gc.unfreeze()
        self.actors = [Handle(self, i) for i in range(self.n)]

    def send(self, worker: int, name: str, args: Sequence[Any]) -> _Reply:
        """Send a call to ``worker`` (arguments that are answers of earlier calls are
        sent as their values); the answer it owes."""
        values = tuple(self._value(a) if isinstance(a, _Reply | _Part) else a for a in args)
        data = pickle.dumps((name, values), protocol=pickle.HIGHEST_PROTOCOL)
        reply = _Reply(worker)
        try:
            self.outbox[worker].send_bytes(data)
        except OSError:
            reply.done = True
            reply.failure = ("died", self._death(worker))
        self.pending[worker].append(reply)
        return reply

    def get(self, refs: Sequence[Any]) -> list[Any]:
        """The values of ``refs`` (in order); a dead worker raises :class:`WorkerDied`,
        a worker past the deadline or its memory limit :class:`LimitHit`."""
        self._wait({r.worker for r in (x.reply if isinstance(x, _Part) else x for x in refs)
                    if not r.done})
        return [self._value(r) for r in refs]

    def _value(self, ref: _Ref) -> Any:
        reply = ref.reply if isinstance(ref, _Part) else ref
        if not reply.done:
            self._wait({reply.worker})
        if reply.failure is not None:
            kind, what = reply.failure
            if kind == "limit":
                raise LimitHit(what)
            raise WorkerDied(f"worker {reply.worker} {what}")
        return reply.value[ref.index] if isinstance(ref, _Part) else reply.value

    def _wait(self, workers: set[int]) -> None:
        """Read answers until every worker of ``workers`` has answered all its calls."""
        end = None if self.deadline is None else self.deadline + GRACE
        todo = {w for w in workers if self.pending[w]}
        while todo:
            slice_ = WAIT_SLICE if end is None else min(WAIT_SLICE, end - time.monotonic())
            if slice_ <= 0:
                raise LimitHit(f"time limit ({self.timeout:g} s) reached"
                               if self.timeout is not None else "time limit reached")
            for conn in wait([self.inbox[w] for w in todo], timeout=slice_):
                assert isinstance(conn, Connection)
                w = self.inbox.index(conn)
                self._read(w)
                if not self.pending[w]:
                    todo.discard(w)

    def _read(self, w: int) -> None:
        """Read one answer of worker ``w`` (the oldest call it owes)."""
        reply = self.pending[w].popleft()
        reply.done = True
        try:
            data = self.inbox[w].recv_bytes()
        except (EOFError, OSError):
            reply.failure = ("died", self._death(w))
            for later in self.pending[w]:
                later.done, later.failure = True, reply.failure
            self.pending[w].clear()
            return
        kind, value = pickle.loads(data)
        if kind == "ok":
            reply.value = value
        else:
            reply.failure = (kind, value)

    def _death(self, w: int) -> str:
        """How worker ``w`` ended (its pipe closed): reaped here, so it leaves no zombie."""
        pid = self.pids[w]
        if pid <= 0:
            return self.ended.get(w, "died")
        status = None
        deadline = time.monotonic() + 1.0
        with contextlib.suppress(ChildProcessError):
            while time.monotonic() < deadline:
                got, status = os.waitpid(pid, os.WNOHANG)
                if got:
                    break
                time.sleep(0.01)
            else:
                status = None
        if status is None:
            return "died: its pipe closed"
        self.pids[w] = -1
        if os.WIFSIGNALED(status):
            how = f"died: killed by {signal.Signals(os.WTERMSIG(status)).name}"
        else:
            how = f"died: exit code {os.waitstatus_to_exitcode(status)}"
        self.ended[w] = how
        return how

    def shutdown(self, dead: bool) -> None:
        """Kill the workers and reap them, close the pipes (every run, whatever ended
        it: a fork is cheap, so workers are not kept).  A second interrupt waits until
        they are reaped."""
        with signals_held():
            for pid in self.pids:
                if pid > 0:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            for pid in self.pids:
                if pid > 0:
                    with contextlib.suppress(ChildProcessError, OSError):
                        os.waitpid(pid, 0)
        for conn in (*self.inbox, *self.outbox):
            conn.close()
        self.pids, self.inbox, self.outbox, self.pending, self.actors = [], [], [], [], []
        self.ended = {}


def _child(proto: Any, index: int, calls: Connection, answers: Connection,
           inherited: Sequence[Connection], memory_mb: int | None) -> None:
    """A forked worker: serve calls until the driver closes the pipe, then exit (never
    returns into the driver's code)."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)  # the driver's signal watcher is not this process's
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        with contextlib.suppress(OSError, AttributeError, TypeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:  # the driver died before the line above
            os._exit(1)
        for conn in inherited:  # the other workers' pipes: theirs to close
            conn.close()
        proto.index = index
        # A worker keeps what it stores until it ends: full collections free nothing.
        with young_collections_only():
            _serve(proto, calls, answers, memory_mb)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _serve(worker: Any, calls: Connection, answers: Connection, memory_mb: int | None
           ) -> None:
    """Answer the driver's calls, in order: ``("ok", value)``, ``("limit", what)`` or
    ``("failed", message)``."""
    from checker.engines.raysession import reset_peak_memory

    reset_peak_memory()
    while True:
        try:
            data = calls.recv_bytes()
        except EOFError:
            return
        name, args = pickle.loads(data)
        try:
            with MemoryGuard(memory_mb):
                out: tuple[str, Any] = ("ok", getattr(worker, name)(*args))
        except LimitHit as lim:
            out = ("limit", lim.what)
        except Exception as exc:
            out = ("failed", f"failed: {type(exc).__name__}: {first_line(exc)}")
        answers.send_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))

"""The boundary with Ray: starting or joining a Ray session and running the workers of
:mod:`checker.engines.distributed` as Ray actors.

Ray is an optional dependency (``pip install 'kvrace[ray]'``), imported here only, and
lazily.  Its API is untyped: the module, actor handles and object references are
``Any`` here, and nowhere else in the explorer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.errors import Inconclusive, UsageError
from checker.limits import LimitHit

ActorHandle = Any
"""A Ray actor handle (Ray's API is untyped)."""


class RayMissing(UsageError):
    """Ray is not installed, cannot start, or the cluster cannot be reached."""


@dataclass(frozen=True)
class Cluster:
    """Where to run: ``workers`` actors, on a local Ray instance started for the run
    (``address`` None) or on the Ray cluster at ``address`` (``auto``: the local one;
    ``ray://host:10001``: a remote head).  ``workers`` None: one per CPU of the cluster."""

    workers: int | None = None
    address: str | None = None


def ray_module() -> Any:
    """The ``ray`` module (raises :class:`RayMissing` without it)."""
    try:
        import ray
    except ImportError as exc:
        raise RayMissing("--workers and --ray need Ray: pip install 'kvrace[ray]'"
                         f" (or pip install 'ray>=2.9'); {exc}") from None
    return ray


def package_root() -> str:
    """The directory that holds the ``checker`` package this process runs."""
    import checker

    return str(Path(checker.__path__[0]).resolve().parent)


def init_local(num_cpus: int) -> None:
    """Start a local Ray instance quietly, its workers importing this copy of kvrace."""
    ray = ray_module()
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
             configure_logging=True, logging_level=logging.ERROR,
             runtime_env={"env_vars": {"PYTHONPATH": package_root()}})


def connect(address: str) -> None:
    """Join the Ray cluster at ``address``, shipping this copy of the ``checker``
    package to its workers."""
    ray = ray_module()
    reachable(address)
    ray.init(address=address, log_to_driver=False, configure_logging=True,
             logging_level=logging.ERROR,
             runtime_env={"py_modules": [str(Path(package_root()) / "checker")]})


POOL: dict[str, Any] = {}
"""The workers of the last run in a Ray session this module did not start (``session``:
the job id, ``actors``), reused by the next run with as many workers."""


def drop_pool(ray: Any) -> None:
    for a in POOL.get("actors", []):
        with contextlib.suppress(Exception):
            ray.kill(a)
    POOL.clear()


def reachable(address: str, seconds: float = 10.0) -> None:
    """Fail fast when nothing listens at a ``host:port`` address (Ray itself retries for
    minutes); ``auto`` and ``ray://`` addresses are left to Ray."""
    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc.strerror or exc})"
                              ) from None


class WorkerDied(Inconclusive):
    """A worker died or failed: the run ends as inconclusive."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class Actors:
    """The workers of one run: Ray actors of ``worker`` (a class), started on the
    cluster (a Ray session started or joined for the run, or the one running), and the
    calls to them.  ``deadline``: the run's ``time.monotonic()`` end, if any;
    ``timeout``: its time limit in seconds (for the message)."""

    def __init__(self, cluster: Cluster, worker: type, deadline: float | None,
                 timeout: float | None) -> None:
        self.ray = ray_module()
        self.cluster = cluster
        self.worker = worker
        self.deadline = deadline
        self.timeout = timeout
        self.started_ray = False
        self.actors: list[ActorHandle] = []

    def left(self) -> float | None:
        """Seconds left before the deadline."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    def get(self, refs: Sequence[Any]) -> list[Any]:
        """The values of ``refs`` (one per worker, in order); a dead worker raises
        :class:`WorkerDied`, a run past its deadline :class:`LimitHit`."""
        ray = self.ray
        left = self.left()
        # The workers watch the deadline themselves; this is the backstop.
        _, pending = ray.wait(list(refs), num_returns=len(refs),
                              timeout=None if left is None else left + 10.0)
        out = []
        for i, ref in enumerate(refs):
            if ref in pending:
                raise LimitHit(f"time limit ({self.timeout:g} s) reached"
                               if self.timeout is not None else "time limit reached")
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayActorError as exc:
                raise WorkerDied(f"worker {i} died: {first_line(exc)}") from None
            except ray.exceptions.RayTaskError as exc:
                raise WorkerDied(f"worker {i} failed: {first_line(exc)}") from None
        return out

    def spawn(self) -> int:
        """Start Ray if needed, and the workers (or reuse those of an earlier run in the
        same Ray session)."""
        ray = self.ray
        if not ray.is_initialized():
            try:
                if self.cluster.address is None:
                    init_local(self.cluster.workers or os.cpu_count() or 1)
                else:
                    connect(self.cluster.address)
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, Exception
                where = ("start a local Ray instance" if self.cluster.address is None
                         else f"connect to the Ray cluster at {self.cluster.address}")
                hint = ("" if self.cluster.address is None
                        or str(exc).startswith("nothing answers") else
                        " (a cluster with token authentication needs RAY_AUTH_MODE=token here"
                        " too)")
                with contextlib.suppress(Exception):
                    ray.shutdown()
                raise RayMissing(f"cannot {where}: {first_line(exc)}{hint}") from None
            self.started_ray = True
        n = self.cluster.workers
        if n is None:
            n = max(1, int(ray.cluster_resources().get("CPU", 1)))
        session = ray.get_runtime_context().get_job_id()
        if POOL.get("session") == session and len(POOL.get("actors", [])) == n:
            self.actors = list(POOL["actors"])
            return n
        drop_pool(ray)
        # One CPU each, or a share when the cluster has fewer CPUs than workers (an
        # actor waiting for a CPU that never frees would wait for ever).
        cpus = float(ray.cluster_resources().get("CPU", n))
        cls = ray.remote(num_cpus=min(1.0, cpus / n), max_restarts=0)(self.worker)
        self.actors = [cls.remote(i, n) for i in range(n)]
        if not self.started_ray:
            POOL.update(session=session, actors=list(self.actors))
        return n

    def shutdown(self, dead: bool) -> None:
        """Let the workers go: kept for the next run in a Ray session someone else
        started; otherwise (or after a death) killed, and Ray stopped if started here."""
        ray = self.ray
        if dead or self.started_ray:
            drop_pool(ray)
            for a in self.actors:
                with contextlib.suppress(Exception):  # an actor already gone
                    ray.kill(a)
        self.actors = []
        if self.started_ray:
            ray.shutdown()


def reset_peak_memory() -> None:
    # A worker serves run after run: its peak memory (VmHWM) starts again at each.
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__



"""The boundary with Ray: starting or joining a Ray session and running the workers of
:mod:`checker.engines.distributed` as Ray actors.

Ray is an optional dependency (``pip install 'kvrace[ray]'``), imported here only, and
lazily.  Its API is untyped: the module, actor handles and object references are
``Any`` here, and nowhere else in the explorer.
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import logging
import os
import secrets
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.engines.proctree import descendants, kill, kill_run, mark_run
from checker.errors import Inconclusive, UsageError
from checker.limits import LimitHit

ActorHandle = Any
"""A Ray actor handle (Ray's API is untyped)."""


class RayMissing(UsageError):
    """Ray is not installed, cannot start, or the cluster cannot be reached."""


class Backend(enum.Enum):
    """What runs the workers of ``--workers N`` on this machine."""

    LOCAL = "local"
    """Forked children of the driver, over pipes (:mod:`checker.engines.localpool`)."""
    RAY = "ray"
    """Actors of a local Ray instance started for the run."""


@dataclass(frozen=True)
class Cluster:
    """Where to run: ``workers`` workers on this machine (``address`` None: forked
    children, or with ``backend`` RAY actors of a local Ray instance started for the
    run) or on the Ray cluster at ``address`` (``auto``: the local one;
    ``ray://host:10001``: a remote head).  ``workers`` None: one per CPU of the machine
    or the cluster."""

    workers: int | None = None
    address: str | None = None
    backend: Backend = Backend.LOCAL

    @property
    def local(self) -> bool:
        """Whether the workers are forked children (no Ray)."""
        return self.address is None and self.backend is Backend.LOCAL


MIN_RAY = (2, 52)
"""The first Ray with token authentication (``RAY_AUTH_MODE=token``)."""

AUTH_MODE = "RAY_AUTH_MODE"


def ray_module() -> Any:
    """The ``ray`` module (raises :class:`RayMissing` without it, or when it is older
    than :data:`MIN_RAY`)."""
    # Ray's C++ core would catch SIGTERM first: a stack dump, then an abort (exit -6).
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    constants: Any = sys.modules.get("ray._private.ray_constants")
    if constants is not None:  # read when Ray was imported
        constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
    try:
        import ray
    except ImportError as exc:
        raise RayMissing("--backend ray and --ray need Ray: pip install 'kvrace[ray]'"
                         f" (or pip install 'ray>=2.52'); {exc}") from None
    if _version(getattr(ray, "__version__", "0")) < MIN_RAY:
        raise RayMissing(f"--backend ray and --ray need Ray >= {MIN_RAY[0]}.{MIN_RAY[1]}, which"
                         f" has token authentication (this is Ray {ray.__version__}):"
                         " pip install -U 'kvrace[ray]'")
    return ray


def _version(text: str) -> tuple[int, ...]:
    """The leading numbers of a version string (``2.60.0rc1`` -> ``(2, 60, 0)``)."""
    out: list[int] = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch in "0123456789")
        if not digits or not part.startswith(digits):
            if digits:
                out.append(int(digits))
            break
        out.append(int(digits))
    return tuple(out)


def token_path() -> Path:
    """Where Ray reads its token: ``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``."""
    given = os.environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(given) if given else Path.home() / ".ray" / "auth_token"


def ensure_token(create: bool) -> bool:
    """Make sure Ray finds a token only its user can read: the file is created (mode
    0600, its folder 0700) when ``create`` and there is none, and an existing one that
    others can read is made 0600.  Returns whether a token is available."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return True
    path = token_path()
    try:
        st = path.stat()
    except FileNotFoundError:
        if not create:
            return False
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(32))
        return True
    if stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.getuid():
        path.chmod(0o600)
    return True


def require_token_auth(local: bool) -> None:
    """Turn on Ray's token authentication for this process (and the Ray it starts), or
    refuse: a local instance always gets a token; joining a cluster needs the
    cluster's token here (``RAY_AUTH_TOKEN`` or the token file).  Raises
    :class:`RayMissing` when ``RAY_AUTH_MODE`` says otherwise or no token is found."""
    mode = os.environ.get(AUTH_MODE)
    if mode is not None and mode.lower() != "token":
        raise RayMissing(f"{AUTH_MODE}={mode}: kvrace runs Ray only with token"
                         f" authentication (unset {AUTH_MODE} or set it to token)")
    if not ensure_token(create=local):
        raise RayMissing("joining a Ray cluster needs its token authentication: put the"
                         f" cluster's token in {token_path()} (or RAY_AUTH_TOKEN) and set"
                         f" {AUTH_MODE}=token; see docs/distributed.md")
    os.environ[AUTH_MODE] = "token"
    if "ray._raylet" in sys.modules:  # Ray read its configuration when imported
        sys.modules["ray._raylet"].Config.initialize("")


def auth_is_on() -> bool:
    """Whether this process's Ray uses token authentication."""
    raylet: Any = importlib.import_module("ray._raylet")
    return bool(raylet.get_authentication_mode() == raylet.AuthenticationMode.TOKEN)


@contextlib.contextmanager
def own_signals(ray: Any) -> Iterator[None]:
    """Keep this process's SIGINT and SIGTERM handlers and wakeup descriptor across
    ``ray.init``, which installs a SIGTERM handler raising ``SystemExit(15)`` (exit 15,
    Ray's processes left running): its installer is made a no-op while it runs, and
    the handlers are put back after it in any case."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    main = threading.current_thread() is threading.main_thread()
    wakeup = signal.set_wakeup_fd(-1) if main else -1
    if main:
        signal.set_wakeup_fd(wakeup)
    utils: Any = getattr(getattr(ray, "_private", None), "utils", None)
    installer = getattr(utils, "set_sigterm_handler", None)
    if installer is not None:
        utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if installer is not None:
            utils.set_sigterm_handler = installer
        if main:
            for signum, handler in handlers.items():
                if handler is not None:
                    signal.signal(signum, handler)
            signal.set_wakeup_fd(wakeup)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM while Ray shuts down (an interrupt is already being
    handled; a second one must not leave Ray's processes behind), then restore them."""
    main = threading.current_thread() is threading.main_thread()
    if not main:
        yield
        return
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for signum in handlers:
        signal.signal(signum, signal.SIG_IGN)
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            if handler is not None:
                signal.signal(signum, handler)


def package_root() -> str:
    """The directory that holds the ``checker`` package this process runs."""
    import checker

    return str(Path(checker.__path__[0]).resolve().parent)


def init_local(num_cpus: int) -> None:
    """Start a local Ray instance quietly, with token authentication, its workers
    importing this copy of kvrace.

    Ray's servers listen on every interface whatever ``_node_ip_address`` says (Ray
    turns a loopback address into the node's own, ``services.resolve_ip_for_localhost``),
    so the token is what keeps others out: it is required, and checked after the
    start."""
    require_token_auth(local=True)
    ray = ray_module()
    # Every process of the instance inherits the mark, so none outlives the run unseen.
    mark_run()
    with own_signals(ray):
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                 log_to_driver=False, configure_logging=True, logging_level=logging.ERROR,
                 runtime_env={"env_vars": {"PYTHONPATH": package_root(),
                                           AUTH_MODE: "token"}})
    _check_auth(ray)


def connect(address: str) -> None:
    """Join the Ray cluster at ``address`` (with its token), shipping this copy of the
    ``checker`` package to its workers."""
    require_token_auth(local=False)
    ray = ray_module()
    reachable(address)
    with own_signals(ray):
        ray.init(address=address, log_to_driver=False, configure_logging=True,
                 logging_level=logging.ERROR,
                 runtime_env={"py_modules": [str(Path(package_root()) / "checker")]})
    _check_auth(ray)


def _check_auth(ray: Any) -> None:
    """Refuse a Ray session without token authentication."""
    if not auth_is_on():
        with signals_held(), contextlib.suppress(Exception):
            ray.shutdown()
        raise RayMissing("Ray started without token authentication; kvrace does not run"
                         " on a Ray anyone on the network can use")


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


WAIT_SLICE = 0.25
"""Seconds of one wait for the workers' answers."""


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
        # The workers watch the deadline themselves; this is the backstop.  Waiting in
        # short slices lets SIGINT and SIGTERM be handled (Ray's wait blocks in C).
        end = None if left is None else time.monotonic() + left + 10.0
        pending = list(refs)
        while pending:
            wait = WAIT_SLICE if end is None else min(WAIT_SLICE, end - time.monotonic())
            if wait <= 0:
                break
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=wait)
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
            except RayMissing:
                raise
            except BaseException as exc:
                if not isinstance(exc, Exception):  # an interrupt while Ray starts
                    stop_local_ray(ray)
                    raise
                # Ray raises ConnectionError, RuntimeError, Exception
                where = ("start a local Ray instance" if self.cluster.address is None
                         else f"connect to the Ray cluster at {self.cluster.address}")
                hint = ("" if self.cluster.address is None
                        or str(exc).startswith("nothing answers") else
                        f" (the cluster's token goes in {token_path()} or RAY_AUTH_TOKEN)")
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

    def load(self, build: Any, limits: Any, left: float | None, options: Any
             ) -> list[tuple[str, str | None]]:
        """Each worker builds the model (``build``) and runs its pre-pass; their answers
        (``("ok", None)``, ``("limit", what)`` or ``("error", message)``)."""
        return self.get([a.load.remote(build, limits, left, options) for a in self.actors])

    def shutdown(self, dead: bool) -> None:
        """Let the workers go: kept for the next run in a Ray session someone else
        started; otherwise (or after a death) killed, and Ray stopped if started here."""
        ray = self.ray
        with signals_held():
            if dead or self.started_ray:
                drop_pool(ray)
                for a in self.actors:
                    with contextlib.suppress(Exception):  # an actor already gone
                        ray.kill(a)
            self.actors = []
            if self.started_ray:
                self.started_ray = False
                if self.cluster.address is None:
                    stop_local_ray(ray)
                else:
                    ray.shutdown()


def stop_local_ray(ray: Any) -> None:
    """``ray.shutdown()`` of the instance this process started, then kill what of it
    survived: Ray's agents outlive a raylet stopped during its start-up (reparented, so
    they are listed before the shutdown)."""
    before = descendants()
    with signals_held():
        with contextlib.suppress(Exception):
            ray.shutdown()
        if before:
            time.sleep(0.2)  # let what is stopping stop
            kill(before)
        kill_run()


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



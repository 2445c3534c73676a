"""Shared fixtures of the kvrace test suite (shared functions and paths: ``helpers``)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT

# Cache compiled bytecode and rewritten test modules even where the environment says
# not to (PYTHONDONTWRITEBYTECODE): each xdist worker and each `kvrace` subprocess a
# test starts would otherwise compile the package and the tests from source again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# `pytester`: the tests of the pytest plugin (checker/testing/pytest_plugin.py) run
# pytest on generated projects.
pytest_plugins = ["pytester"]


@pytest.fixture
def in_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from the repository root (so relative spec paths resolve)."""
    monkeypatch.chdir(ROOT)
    return ROOT


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with open(path, "a+b") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


_SLOW_MODULE = re.compile(r"^pytestmark = pytest\.mark\.slow$", re.M)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under the quick subset's ``-m "not slow"``, a module marked ``slow`` as a whole is
    not imported: every test in it would be deselected, and building its parameters
    (some parse every spec) would cost each xdist worker seconds for nothing."""
    if (config.getoption("markexpr", "").strip() != "not slow"
            or collection_path.suffix != ".py" or not collection_path.name.startswith("test_")):
        return None
    try:
        text = collection_path.read_text(encoding="utf-8")
    except OSError:
        return None
    return True if _SLOW_MODULE.search(text) else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``alone`` tests run on one xdist worker (never two waiting for each other).

    pytest-xdist's ``--dist loadgroup`` sends the tests of one ``xdist_group`` to one
    worker by suffixing their node ids with ``@GROUP``; since pytest 9.2 a node id lives
    in ``Node._id`` and xdist (3.8)'s suffix no longer takes, so it is set here."""
    for item in items:
        if item.get_closest_marker("alone") is not None:
            item.add_marker(pytest.mark.xdist_group("alone"))
    if not (hasattr(config, "workerinput") and config.getvalue("loadgroup")):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest < 9.2: xdist's own suffix works
        return
    for item in items:
        groups = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                  for m in item.iter_markers("xdist_group")}
        if groups and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(groups))}")


_HAS_ALONE = pytest.StashKey[bool]()


def _session_has_alone_tests(session: pytest.Session) -> bool:
    """Whether any selected test is marked ``alone`` (every worker selects the same
    tests): without one, no test needs the locks."""
    if _HAS_ALONE not in session.stash:
        session.stash[_HAS_ALONE] = any(
            item.get_closest_marker("alone") is not None for item in session.items)
    return session.stash[_HAS_ALONE]


class _Exclusive:
    """The exclusive lock while this worker runs its ``alone`` tests: taken by the
    first, kept through the ones that follow it (the ``alone`` group runs on one worker,
    one test after another), let go before the next other test or at the session's
    end."""

    def __init__(self) -> None:
        self._held: contextlib.ExitStack | None = None

    def take(self, turnstile: Path, room: Path) -> None:
        if self._held is None:
            stack = contextlib.ExitStack()
            with _flock(turnstile, fcntl.LOCK_EX):
                stack.enter_context(_flock(room, fcntl.LOCK_EX))
            self._held = stack

    def release(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None


_EXCLUSIVE = _Exclusive()


@pytest.fixture(autouse=True)
def _alone_when_marked(request: pytest.FixtureRequest,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests marked ``alone`` bound a run's wall-clock time: while they run, no other
    test of this session runs in another xdist worker (every other test holds a shared
    lock, the ``alone`` ones an exclusive one).  A turnstile lets a waiting ``alone``
    test in before the next shared holder.  Consecutive ``alone`` tests keep the
    exclusive lock between them, so the group waits once for the other workers' tests
    to end instead of once per test."""
    if not _session_has_alone_tests(request.session):
        yield
        return
    # Under xdist every worker's base temp dir is a child of the same session dir.
    root = tmp_path_factory.getbasetemp()
    if root.name.startswith("popen-gw"):
        root = root.parent
    turnstile, room = root / "alone.turnstile", root / "alone.lock"
    if request.node.get_closest_marker("alone") is None:
        _EXCLUSIVE.release()
        with _flock(turnstile, fcntl.LOCK_EX):
            pass
        with _flock(room, fcntl.LOCK_SH):
            yield
        return
    _EXCLUSIVE.take(turnstile, room)
    yield


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Let go of the exclusive lock if the session ended on an ``alone`` test."""
    _EXCLUSIVE.release()

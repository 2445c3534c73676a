"""The private per-user cache directory: where kvrace keeps what it may load as code.

Three things are cached there: the pickled parser (:mod:`checker.language.syntax`),
the pickled elaborated specs (:mod:`checker.language.speccache`) and the compiled
successor functions (:mod:`checker.model.native`).  Loading any of them runs code,
so a file is only ever read from a directory that no one else can write into or
swap: ``$XDG_CACHE_HOME/kvrace`` (default ``~/.cache/kvrace``), created with mode
0700, refused when it is a symlink, someone else's, or open to other users, or when
its parent could be swapped by another user; and a file in it is refused unless it
is a regular file (not a link) of this user's.
"""

from __future__ import annotations

import contextlib
import os
import stat

CACHE_DIR_NAME = "kvrace"
"""The per-user cache directory, under ``$XDG_CACHE_HOME`` (default ``~/.cache``)."""


def private_dir(path: str) -> bool:
    """Whether ``path`` is a real directory (not a link) owned by this user that no
    one else may write, read or list."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.getuid()
        and stat.S_IMODE(st.st_mode) & 0o077 == 0
    )


def safe_parent(path: str) -> bool:
    """Whether no other user can swap the cache directory inside ``path`` for their
    own: ``path`` is owned by this user or root and is not writable by others, or
    is sticky (like ``/tmp``)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if st.st_uid not in (0, os.getuid()):
        return False
    return stat.S_IMODE(st.st_mode) & 0o022 == 0 or bool(st.st_mode & stat.S_ISVTX)


def cache_dir() -> str | None:
    """The private cache directory (created if missing), or None when there is none
    that is safe to use (no home, a platform without user ids, a directory that
    fails the checks of the module docstring)."""
    if not hasattr(os, "getuid"):
        return None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    directory = os.path.join(base, CACHE_DIR_NAME)
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    if not (safe_parent(base) and private_dir(directory)):
        return None
    return directory


def cache_file(name: str) -> tuple[str | None, bool]:
    """Where the cached file ``name`` is kept, and whether it is there now.

    ``(None, False)`` when it must not be used: no safe directory, or something
    under that name that is not a regular file of this user's (a planted link, a
    file of another owner)."""
    directory = cache_dir()
    if directory is None:
        return None, False
    path = os.path.join(directory, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path, False
    except OSError:
        return None, False
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        return None, False
    return path, True


def write_file(path: str, data: bytes) -> bool:
    """Write ``data`` to the cache file ``path`` (from :func:`cache_file`) atomically: a
    new file of this user's (mode 0600, never through a link) beside it, then a rename,
    so a reader sees the old file or the whole new one.  Whether it was written."""
    part = f"{path}.{os.getpid()}.part"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(part, flags, 0o600)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(part, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(part)
        return False
    return True


def prune(directory: str, prefix: str, most: int, keep: str) -> None:
    """Remove the least recently modified files named ``prefix...`` beyond the ``most``
    newest (only regular files of this user's; ``keep``, a path, stays)."""
    try:
        entries = [e for e in os.scandir(directory)
                   if e.name.startswith(prefix) and e.is_file(follow_symlinks=False)]
        if len(entries) <= most:
            return
        stats = [(e.stat(follow_symlinks=False), e.path) for e in entries]
    except OSError:
        return
    mine = sorted((st.st_mtime, path) for st, path in stats
                  if st.st_uid == os.getuid() and path != keep)
    for _, path in mine[:len(stats) - most]:
        with contextlib.suppress(OSError):
            os.unlink(path)

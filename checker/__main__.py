"""``python -m checker``: the ``kvrace`` command.

SIGINT and SIGTERM are caught from the first line: one that arrives while the
command is still importing is acted on (exit 130 / 143) as soon as it has
started, never as a traceback.
"""

import signal
from types import FrameType

_early: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    """Keep a signal that arrives during start-up for :func:`checker.cli.entry_point`."""
    _early.append(signum)


for _signum in (signal.SIGINT, signal.SIGTERM):
    if signal.getsignal(_signum) is not signal.SIG_IGN:  # e.g. a background job: stays ignored
        signal.signal(_signum, _remember)

from checker.cli import entry_point  # noqa: E402 - after the handlers, on purpose

entry_point(_early)

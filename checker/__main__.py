"""``python -m checker``: the ``kvrace`` command."""

from checker.cli import entry_point

entry_point()

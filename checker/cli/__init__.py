"""The ``kvrace`` command line.

Exit codes (the same for every subcommand):

* 0 — the spec is fine / every property holds / proved; ``simulate``: no violation
  was sampled (an estimate, never "holds");
* 1 — a violation was found (with its trace); ``simulate``: a violation was sampled;
* 2 — bad input or usage: a broken spec, an unknown parameter, a missing file;
* 3 — inconclusive: a limit was hit (states, time, memory) or the solver said unknown;
* 6 — ``validate``: the log deviates from the spec;
* 70 — internal error: an exception escaped (a bug in kvrace) or memory ran out; never
  a verdict;
* 130 / 143 — interrupted by SIGINT (Ctrl-C) / SIGTERM; one line says so.

The verdict is printed first.  A side output that fails afterwards (``--trace``,
``--diagram``, a closed or full stdout) is a warning on stderr; the exit code
stays the verdict's.

The package is a parser (:mod:`checker.cli.parser`), the run of one command line
(:mod:`checker.cli.app`: dispatch, and every failure as its message and exit
code), and one module per command (``checker.cli.check``, ``prove``, ``synth``,
``draw``, ``graph``, ``view``, ``simulate``, ``export``, ``validate``,
``schedules``, ``lint``, ``show``), each
with ``run(args, session) -> exit code``.  What they print is made by
:mod:`checker.present` from the results.
"""

from __future__ import annotations

from checker import version
from checker.cli.app import entry_point, main
from checker.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_DEVIATES,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_UNREACHABLE,
    EXIT_VACUOUS,
    EXIT_VIOLATION,
)
from checker.cli.signals import Interrupted
from checker.errors import UsageError
from checker.present.jsonout import stats_json
from checker.present.text import stats_line

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_DEVIATES",
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_UNREACHABLE",
    "EXIT_VACUOUS",
    "EXIT_VIOLATION",
    "Interrupted",
    "UsageError",
    "entry_point",
    "main",
    "stats_json",
    "stats_line",
    "version",
]

"""What an interrupt leaves running: :func:`checker.engines.proctree.kill_run` ends every
process a run started, even those forked while it was ending them."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT

FORKER = """
import os, subprocess, sys, time
from checker.engines import proctree
proctree.mark_run()
code = ("import os, time\\n"
        "while True:\\n"
        "    if os.fork() == 0:\\n"
        "        time.sleep(60); os._exit(0)\\n"
        "    time.sleep(0.002)\\n")
parent = subprocess.Popen([sys.executable, "-c", code])
time.sleep(0.4)
settle = float(sys.argv[1])
ended = proctree.kill_run(settle=settle)
time.sleep(0.2)
left = proctree.marked(proctree._OWN[0])
proctree.kill_run()
parent.wait()
print(ended, len(left))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_run_ends_what_forks_while_it_is_ending_it() -> None:
    def run(settle: float) -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", FORKER, str(settle)], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout
        ended, left = out.split()
        return int(ended), int(left)

    ended, left = run(1.0)
    assert ended > 10 and left == 0
    # a single scan of /proc (no settling) is what leaves children behind
    ended, left = run(0.0)
    assert ended > 10 and left > 0


ORPHAN = """
import ctypes, os, subprocess, sys, time
from checker.engines import proctree
proctree.mark_run()
code = ("import ctypes, os, sys, time\\n"
        "if os.fork():\\n"
        "    os._exit(0)\\n"  # the parent ends: the child is an orphan
        "stat = open('/proc/self/stat', 'rb').read()\\n"
        "fields = stat[stat.rfind(b')') + 2:].split()\\n"
        "start, end = int(fields[47]), int(fields[48])\\n"
        "ctypes.memset(start, 0, end - start)\\n"  # what a process title does
        "print(os.getpid(), flush=True)\\n"
        "null = os.open(os.devnull, os.O_WRONLY)\\n"
        "os.dup2(null, 1), os.dup2(null, 2)\\n"
        "time.sleep(60)\\n")
child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
pid = int(child.stdout.readline())
child.wait()
before = proctree.marked(proctree._OWN[0])
ended = proctree.kill_run()
time.sleep(0.2)
alive = os.path.exists(f"/proc/{pid}")
if alive:
    os.kill(pid, 9)
print(len(before), ended, alive)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_run_ends_an_orphan_whose_mark_was_written_over() -> None:
    out = subprocess.run([sys.executable, "-c", ORPHAN], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    before, ended, alive = out.split()
    # the mark is gone from its environment, yet it is ended (and reaped)
    assert (before, ended, alive) == ("0", "1", "False")

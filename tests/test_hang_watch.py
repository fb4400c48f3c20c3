"""The hang watchdog (tests/support/hang_watch.py) on a process stuck in C code holding the GIL:
it prints the stacks and a summary naming the test, then kills the process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

STUCK = """
import ctypes, sys
sys.path.insert(0, {support!r})
from hang_watch import HangWatch
watch = HangWatch.start(1.0)
watch.test_started("tests/x.py::test_stuck")
while True:  # C code that keeps the GIL (SIGUSR1's dump cuts a sleep short)
    ctypes.PyDLL(None).sleep(60)
"""


def test_a_test_stuck_in_c_is_reported_and_killed():
    support = str(Path(__file__).parent / "support")
    done = subprocess.run([sys.executable, "-c", STUCK.format(support=support)],
                          capture_output=True, text=True, timeout=150)
    assert done.returncode == -9
    summary = done.stderr[done.stderr.index("==== hang watch: summary"):].splitlines()
    assert summary[-1].startswith("HANG: tests/x.py::test_stuck ran 1 s")
    assert any(line.startswith("py  Current thread") and "<module> (<string>:8)" in line
               for line in summary)


def test_a_finished_run_stops_the_watchdog():
    done = subprocess.run([sys.executable, "-c", (
        "import sys; sys.path.insert(0, {support!r}); from hang_watch import HangWatch\n"
        "watch = HangWatch.start(1.0); watch.test_started('a'); watch.test_ended(); "
        "watch.stop()").format(support=str(Path(__file__).parent / "support"))],
        capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == ""

"""A watchdog process that reports, then ends, a test run stuck in one test.

Contract: `HangWatch.start(limit_s)` spawns this file as a child of the pytest process and
registers a Python stack dump on SIGUSR1; `test_started(nodeid)` / `test_ended()` tell it where
the run is. When one test (setup, call and teardown together) passes `limit_s`, the watchdog:
1. sends SIGUSR1: faulthandler writes every thread's Python stack to a file, from a C signal
   handler, so this works while the main thread is stuck inside C code holding the GIL;
2. attaches gdb, where installed, for every thread's native stack;
3. prints the whole of both, then a summary ending with the test's id, so that the last lines
   of a CI log (often all that is kept) say which test hung and where;
4. kills the pytest process, which makes the run fail in minutes instead of sitting out its budget.

Why: pytest-timeout's SIGALRM handler runs only between bytecodes, and faulthandler's own timeout
prints before anything can follow it, so the test's frames scroll out of a log's tail. CI once
sat out its whole budget in a test stuck in C, and once printed only the outermost frames.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO


class HangWatch:
    """The pytest process's end: the pipe to the watchdog and the stack-dump file."""

    def __init__(self, process: subprocess.Popen, stacks: IO[str]) -> None:
        self._process = process
        self._stacks = stacks

    @classmethod
    def start(cls, limit_s: float) -> HangWatch:
        # Open for the whole run: the signal handler writes to its descriptor.
        stacks = tempfile.NamedTemporaryFile("w+", prefix="heron-hang-", suffix=".txt")  # noqa: SIM115
        faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True, chain=False)
        process = subprocess.Popen(
            [sys.executable, __file__, str(os.getpid()), str(limit_s), stacks.name],
            stdin=subprocess.PIPE, text=True)
        return cls(process, stacks)

    def test_started(self, nodeid: str) -> None:
        self._send(f"start {nodeid}")

    def test_ended(self) -> None:
        self._send("end")

    def stop(self) -> None:
        faulthandler.unregister(signal.SIGUSR1)
        assert self._process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self._process.stdin.close()
        self._process.wait(timeout=10)
        self._stacks.close()

    def _send(self, line: str) -> None:
        assert self._process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # the watchdog is gone: tests go on unwatched
            self._process.stdin.write(line + "\n")
            self._process.stdin.flush()


# -- the watchdog process -------------------------------------------------------------------------

def _watch(pid: int, limit_s: float, stacks_path: str) -> None:
    nodeid: str | None = None
    started = 0.0
    pending = ""
    while True:
        wait = None if nodeid is None else max(0.0, started + limit_s - time.monotonic())
        ready, _, _ = select.select([sys.stdin], [], [], wait)
        if not ready:
            _report(pid, nodeid or "?", time.monotonic() - started, Path(stacks_path))
            return
        chunk = os.read(sys.stdin.fileno(), 65536).decode()
        if not chunk:  # the pytest process closed the pipe: the run is over
            return
        pending += chunk
        *lines, pending = pending.split("\n")
        for line in lines:
            if line.startswith("start "):
                nodeid, started = line[6:], time.monotonic()
            elif line == "end":
                nodeid = None


def _report(pid: int, nodeid: str, elapsed: float, stacks_path: Path) -> None:
    os.kill(pid, signal.SIGUSR1)
    time.sleep(2)  # the dump is written by the signal handler, which returns at once
    python = stacks_path.read_text(errors="replace")
    native = _native_stacks(pid)
    out = sys.stderr
    print(f"\n==== hang watch: Python stacks of pytest (pid {pid}) ====\n{python}", file=out)
    print(f"==== hang watch: native stacks ====\n{native}", file=out)
    print("==== hang watch: summary ====", file=out)
    for line in _python_summary(python) + _native_summary(native):
        print(line, file=out)
    print(f"HANG: {nodeid} ran {elapsed:.0f} s; the run is killed (stacks above)", file=out,
          flush=True)
    os.kill(pid, signal.SIGKILL)


def _native_stacks(pid: int) -> str:
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(gdb is not installed)"
    try:
        done = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-iex",
                               "set auto-load python-scripts off", "-ex",
                               "thread apply all bt 40"], capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return "(gdb did not finish in 120 s)"
    return done.stdout + done.stderr


def _python_summary(dump: str) -> list[str]:
    """Per thread, its innermost three frames on one line."""
    lines = []
    for block in re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump.strip()):
        head, *frames = block.splitlines()
        where = [re.sub(r'^\s*File "(?:.*/)?([^"]+)", line (\d+) in (\S+)', r"\3 (\1:\2)", f)
                 for f in frames[:3]]
        lines.append(f"py  {head.split(' (most')[0]}: " + " < ".join(where))
    return lines


def _native_summary(dump: str) -> list[str]:
    """Distinct native stacks, innermost eight named functions each, with their thread count."""
    stacks: dict[str, int] = {}
    for block in re.split(r"\n(?=Thread \d+ )", dump):
        names = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?([^\s(]+)", block, re.MULTILINE)
        if names:
            key = " < ".join(name[:60] for name in names[:8])
            stacks[key] = stacks.get(key, 0) + 1
    return [f"c   {count} thread(s): {key}" for key, count in stacks.items()]


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C ends pytest, which closes the pipe
    _watch(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3])

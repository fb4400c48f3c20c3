"""Watching processes from the tests: whether one still runs, waiting for a condition.

`alive(pid)` is whether process `pid` runs (a zombie, dead but not yet reaped, counts as gone);
`wait_for(condition, timeout)` polls `condition` every 20 ms and says whether it held in time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False

"""Whether a process still runs, from /proc (tests that kill or watch processes).

`alive(pid)`: a zombie, dead but not yet reaped, counts as gone.
"""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"

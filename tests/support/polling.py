"""`wait_for(predicate, timeout)`: poll until `predicate()` returns something truthy and return
it; AssertionError after `timeout` seconds (tests watching another session or thread)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
POLL_S = 0.05


def wait_for(predicate: Callable[[], T], timeout: float = 30.0) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")

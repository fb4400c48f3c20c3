"""What the sessions read of the catalog, read once per catalog generation for all of them.

Contract: `SharedReads().get(generation, key, load)` is what `load()` returned for `key` at
`generation` (the server's count of statements that may change the catalog), loading it on the
first call of a generation; a new generation forgets the old one's reads. A caller asks only for
what is the same in every session that asks: a read that depends on the session (its search
path) has it in `key`, and a session whose DuckDB snapshot may be older than the generation (in
a transaction block) or that holds objects of its own (temporary tables and views: a session
that ran DDL) reads for itself. Values are shared between threads and never changed. Safe from
any thread; two threads that load the same key at once both load it, and the first one kept
serves.

Why: a new session's first statements read the catalog to classify them (the relations and
their columns, ~3 ms on the demo database, and the views calling AI functions, ~1 ms): more than
the rest of opening a session, and paid per connection by clients that connect per request
(50 connections each running 100 small queries spent ~25 % of the server's CPU on them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class SharedReads:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation: int | None = None
        self._kept: dict[Hashable, Any] = {}

    def get(self, generation: int, key: Hashable, load: Callable[[], T]) -> T:
        with self._lock:
            if generation == self._generation and key in self._kept:
                return self._kept[key]
        value = load()  # (outside the lock: one session's slow read holds up no other's)
        with self._lock:
            if generation != self._generation:
                if self._generation is not None and generation < self._generation:
                    return value  # read for an older generation than the one kept
                self._generation, self._kept = generation, {}
            return self._kept.setdefault(key, value)

"""How many threads DuckDB may run one statement on: all of them, unless the server is busy
with small statements only.

Contract: `Parallelism(set_threads, threads)` starts with DuckDB at `threads`. Each call that
may run DuckDB work reports how long it took, `ran(seconds)`, from whichever thread ran it, and
`starting()` is said before a call runs. Once a stretch of `WINDOW_S` has seen calls at a rate
of at least `SMALL_CALLS_PER_S` and none lasting `LONG_S` or more, DuckDB runs each statement on
the thread that runs it alone (`set_threads(1)`). The first long call, a stretch at a lower
rate, or a pause of two stretches without calls gives it every thread back
(`set_threads(threads)`). `set_threads` runs only on a change, on the thread whose report
brought it; a change that fails leaves DuckDB as it was and is tried again at the next one.
Safe from any thread.

Why: DuckDB's background threads wake for every statement, whether or not it has work to share.
A prepared `SELECT $1::int + 1` takes ~100 us of wall and ~117 us of CPU with one background
thread (2 cores), ~62 us with none, and more with more threads (8: ~170 us). Under 50
connections of small queries that is ~9 % of the server's queries per second (bench/NOTES.md,
2026-12-07). A statement of milliseconds gains from the threads; one of 100 us cannot, and when
small statements come in their hundreds per second the cores are busy with them and their
clients anyway (as PostgreSQL's parallel workers are scarce under load). The price: a long
statement that starts while the server is in that state runs on one thread; it gives the
threads back to the statements after it.

DuckDB's `threads` is one setting for the whole database: a superuser's `SET threads` holds
until the next change made here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

WINDOW_S = 1.0  # the stretch of calls each choice looks at
SMALL_CALLS_PER_S = 200  # the rate of short calls, at least, for one thread per statement
LONG_S = 0.02  # a call this long may gain from DuckDB's threads (the worker pool's long call)


class Parallelism:
    def __init__(self, set_threads: Callable[[int], None], threads: int, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.threads = threads  # DuckDB's, when a statement may use them all
        self._set_threads = set_threads
        self._clock = clock
        self._lock = threading.Lock()
        self._single = False  # DuckDB runs each statement on the thread that runs it alone
        self._window_started = clock()
        self._calls = 0  # that ended in the current window
        self._long = False  # a long call ended in the current window

    @property
    def single(self) -> bool:
        """Whether DuckDB runs each statement on one thread now."""
        return self._single

    def starting(self) -> None:
        """A call is about to run (it reads no lock unless a change may be due)."""
        if self._single and self._clock() - self._window_started >= 2 * WINDOW_S:
            with self._lock:
                self._decide(self._clock())

    def ran(self, seconds: float) -> None:
        """A call that may have run DuckDB work took `seconds`."""
        with self._lock:
            self._calls += 1
            if seconds >= LONG_S:
                self._long = True
                if self._single:
                    self._change(False)
            now = self._clock()
            if now - self._window_started >= WINDOW_S:
                self._decide(now)

    def _decide(self, now: float) -> None:
        """At a window's end (the lock held): choose for the next one."""
        elapsed = now - self._window_started
        if elapsed < WINDOW_S:
            return  # another thread has just decided
        # A window that ran past two is a pause: the rate before it says nothing now.
        busy = elapsed < 2 * WINDOW_S and self._calls >= SMALL_CALLS_PER_S * elapsed
        self._window_started, self._calls, long, self._long = now, 0, self._long, False
        if (busy and not long) != self._single:
            self._change(not self._single)

    def _change(self, single: bool) -> None:
        try:
            self._set_threads(1 if single else self.threads)
        except Exception:  # noqa: BLE001 - DuckDB stays as it was; the next change tries again
            return
        self._single = single

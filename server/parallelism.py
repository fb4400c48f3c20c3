"""How many threads DuckDB may run one statement on: all of them, unless the server is busy
with statements known to be small, and only those.

Contract: `Parallelism(set_threads, threads)` starts with DuckDB at `threads`. Each statement
that may run DuckDB work is bracketed by `enter()` and `leave()` (a portal's later Executes
too); before a statement starts, `starting(sql)` names it: a plain SELECT by its text, anything
else by None; after a plain SELECT's first rows are read, `ran(sql, seconds)` says how long that
took. A SELECT is small once a run of it (on any connection; `KEPT` texts are kept) would have
taken less than `LONG_S` on one thread (less than `LONG_S / threads` while DuckDB may use them
all), and until one takes `LONG_S` or more. Once a stretch of `WINDOW_S` has seen runs of small
SELECTs at a rate of at least `SMALL_RUNS_PER_S` and no other statement starting, DuckDB runs
each statement on the thread that runs it alone (`set_threads(1)`), from the next moment no
statement is between `enter()` and `leave()`: fewer threads waits for the tasks running on
them (a big query's, seconds). A statement not known to be small gives it every thread back
before it starts (`set_threads(threads)`, which waits for nothing), as do a long run, a stretch
at a lower rate, and a pause of two stretches. `set_threads` runs only on a change, on the
thread that brings it; a change that fails leaves DuckDB as it was and is tried again at the
next one. Safe from any thread.

Why: DuckDB's background threads wake for every statement, whether or not it has work to share.
A prepared `SELECT $1::int + 1` (`python bench/duckdb_threads.py`) takes ~97 us of wall and CPU
on one thread; with 2 threads ~130 us and ~145 us of CPU on the 2-core dev machine, and on a
16-core one 115-180 us and 165-240 us of CPU at 4 to 16 threads. The server's statements run
one at a time on its event loop's thread once they are known quick, so that wall is the
server's throughput: under 50 connections of small queries, one thread gave ~9 % more queries
per second (bench/NOTES.md, 2026-12-07). A statement of 100 us has no work to share; one of
milliseconds does (a 20M-row aggregate: 192 ms on one thread, 15 ms on 16), which is why a
statement of unknown pace never runs in the one-thread state: only statements that ran quick
before do, and only while they come in their hundreds per second.

DuckDB's `threads` is one setting for the whole database: a superuser's `SET threads` holds
until the next change made here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from heron.server.worker import LONG_CALL_S

WINDOW_S = 1.0  # the stretch of runs each choice looks at
SMALL_RUNS_PER_S = 200  # the rate of small runs, at least, for one thread per statement
LONG_S = LONG_CALL_S  # a run this long has work to share
KEPT = 4096  # the texts of small SELECTs kept; past it, the set starts again


class Parallelism:
    def __init__(self, set_threads: Callable[[int], None], threads: int, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.threads = threads  # DuckDB's, when a statement may use them all
        self._set_threads = set_threads
        self._clock = clock
        self._lock = threading.Lock()
        self._single = False  # DuckDB runs each statement on the thread that runs it alone
        self._window_started = clock()
        self._small: set[str] = set()  # the texts of the SELECTs known to be small
        self._runs = 0  # small runs that ended in the current window
        self._shared = False  # a statement that may share work started in the current window
        self._running = 0  # statements between enter() and leave()
        self._want_single = False  # one thread chosen, waiting for no statement to run

    @property
    def single(self) -> bool:
        """Whether DuckDB runs each statement on one thread now."""
        return self._single

    def enter(self) -> None:
        """A statement's DuckDB work begins (or a portal's next rows are read)."""
        with self._lock:
            self._running += 1

    def leave(self) -> None:
        """... and ends."""
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._want_single and not self._single:
                self._change(True)

    def starting(self, sql: str | None) -> None:
        """A statement is about to start: a plain SELECT's text, else None."""
        if sql in self._small:  # (a set's lookup, atomic)
            if self._single and self._clock() - self._window_started >= 2 * WINDOW_S:
                with self._lock:  # (a pause: the rate before it says nothing now)
                    self._decide(self._clock())
            return
        with self._lock:
            self._shared = True
            self._want_single = False
            if self._single:
                self._change(False)

    def ran(self, sql: str, seconds: float) -> None:
        """Reading the first rows of the SELECT `sql` took `seconds`."""
        with self._lock:
            if seconds >= LONG_S:
                self._small.discard(sql)
                self._shared = True
                self._want_single = False
                if self._single:
                    self._change(False)
            elif self._single or seconds * self.threads < LONG_S:
                if len(self._small) >= KEPT and sql not in self._small:
                    self._small.clear()
                self._small.add(sql)
                self._runs += 1
            now = self._clock()
            if now - self._window_started >= WINDOW_S:
                self._decide(now)

    def _decide(self, now: float) -> None:
        """At a window's end (the lock held): choose for the next one."""
        elapsed = now - self._window_started
        if elapsed < WINDOW_S:
            return  # another thread has just decided
        busy = elapsed < 2 * WINDOW_S and self._runs >= SMALL_RUNS_PER_S * elapsed
        self._want_single = busy and not self._shared
        self._window_started, self._runs, self._shared = now, 0, False
        if self._single and not self._want_single:
            self._change(False)
        elif self._want_single and not self._single and self._running == 0:
            self._change(True)

    def _change(self, single: bool) -> None:
        try:
            self._set_threads(1 if single else self.threads)
        except Exception:  # noqa: BLE001 - DuckDB stays as it was; the next change tries again
            return
        self._single = single

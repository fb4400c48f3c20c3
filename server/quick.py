"""Statements short enough to run on the event loop, and the watchdog that keeps a slow one off it.

Contract: `QuickStatements` (one per connection) remembers what each statement's last run cost
and `allows` running it on the event loop when it is a plain SELECT (no AI function: nothing but
DuckDB reading) whose last run cost less than `QUICK_S`, and that cannot block on a read (its
first run, on a worker, says so: `unvetted`); the connection adds what only it knows (the first
rows of a Bind portal, the session's DuckDB connection without a transaction or streaming rows,
so that interrupting the statement leaves nothing behind). A statement the watchdog had to
interrupt is `demote`d: it runs on the connection's worker from then on.

`Watchdog.run(fn, interrupt)` (one per server, its daemon thread started on first use) calls
`fn()` on the calling thread. If the same call is still running at two of the watchdog's looks,
`LIMIT_S` apart (so after `LIMIT_S` to `2 × LIMIT_S`), the watchdog calls `interrupt()` from its
thread, and `run` raises `TooSlow` once `fn` returned or raised — whatever it returned: an
interrupt may have landed on rows still streaming. The caller undoes the run and runs the
statement again, on its worker. While nothing runs, the watchdog sleeps.

Why: on the loop a short statement costs no thread hand-off. On a worker it costs three (the
worker woken, the GIL passed to it and back around each DuckDB call, the loop woken with the
result): with 50 busy connections on 2 cores these context switches cost more CPU than the
statement (bench/NOTES.md, 2026-12-01, 50 connections). The price is that the loop serves no
one else while a statement runs on it: hence only statements measured quick, and the watchdog,
so a statement that turns slow (a table that grew, a parameter that selects much more) holds
the loop at most `2 × LIMIT_S` once; cancel requests, other sessions and statement_timeout (its
own timer thread) work as for any statement after that.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from heron.planner import Kind, Statement

T = TypeVar("T")

QUICK_S = 0.001  # a statement whose last run cost less runs on the event loop
LIMIT_S = 0.01  # the watchdog's period: a statement on the loop runs at most twice this
REMEMBERED = 512  # statements whose cost a connection remembers


class TooSlow(Exception):  # noqa: N818 - what happened, not an error of the client's
    """The watchdog interrupted a statement running on the event loop."""


class QuickStatements:
    def __init__(self) -> None:
        # Seconds a statement's last run cost; infinite: never on the loop (it may block on a
        # read, or the watchdog had to interrupt it).
        self._costs: collections.OrderedDict[str, float] = collections.OrderedDict()

    def allows(self, statement: Statement) -> bool:
        """Whether `statement` may run on the event loop (see the module's contract)."""
        return _kind_allowed(statement) and self._costs.get(statement.sql, math.inf) < QUICK_S

    def unvetted(self, statement: Statement) -> bool:
        """Whether `statement` could run on the loop but a quick run on a worker must first say
        that it cannot block (`Session.may_block`): record only the costs of vetted runs."""
        return _kind_allowed(statement) and statement.sql not in self._costs

    def record(self, statement: Statement, seconds: float) -> None:
        """What a run of `statement` cost (CPU time on a worker, wall time on the loop)."""
        sql = statement.sql
        if self._costs.get(sql) == math.inf:
            return  # off the loop for good
        self._costs[sql] = seconds
        self._costs.move_to_end(sql)
        if len(self._costs) > REMEMBERED:
            self._costs.popitem(last=False)

    def demote(self, statement: Statement) -> None:
        """Never on the loop again (the watchdog interrupted it there)."""
        self._costs[statement.sql] = math.inf


def _kind_allowed(statement: Statement) -> bool:
    """A plain SELECT: nothing but DuckDB reading."""
    return statement.kind is Kind.SELECT and statement.ai is None


class _Call:
    def __init__(self, interrupt: Callable[[], None]) -> None:
        self.interrupt = interrupt
        self.interrupted = False


class Watchdog:
    def __init__(self, limit_s: float = LIMIT_S) -> None:
        self.limit_s = limit_s
        self._lock = threading.Lock()  # `_running` and the interrupt decision
        self._running: _Call | None = None
        self._busy = threading.Event()  # a call ran since the watchdog last found none
        self._thread: threading.Thread | None = None

    def run(self, fn: Callable[[], T], interrupt: Callable[[], None]) -> T:
        call = _Call(interrupt)
        self._running = call  # (one event loop thread calls run: no other writer but ours)
        if not self._busy.is_set():
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="heron-watchdog",
                                                daemon=True)
                self._thread.start()
            self._busy.set()
        try:
            result = fn()
        except Exception:
            if call.interrupted:
                raise TooSlow from None
            raise
        finally:
            with self._lock:
                self._running = None
        if call.interrupted:
            raise TooSlow
        return result

    def _watch(self) -> None:
        seen: _Call | None = None
        while True:
            self._busy.wait()
            time.sleep(self.limit_s)
            with self._lock:
                call = self._running
                if call is not None and call is seen:
                    call.interrupted = True
                    call.interrupt()
                seen = call
                if call is None:
                    self._busy.clear()
                    if self._running is not None:  # one started as we cleared: watch it
                        self._busy.set()

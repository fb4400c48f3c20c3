"""Where the connections' blocking calls (planning, DuckDB, the engine) run: a server-wide pool
of threads, and one ordered lane of it per connection.

Contract: `WorkerPool(threads)` keeps `threads` threads ready for calls. `pool.lane(loop)` makes a
connection's `Worker`: `submit(fn, *args)` (on `loop`'s thread) queues a call and returns an
`asyncio.Future` of `loop` that the call's result or exception settles; a lane's calls run one
at a time, in the order submitted, and a call whose future was cancelled before it started does
not run. `busy` says whether a call is queued or running. `close()` lets the calls queued before
it finish; calls submitted after it fail with `RuntimeError`. A call that has run for
`LONG_CALL_S` no longer counts as one of the pool's ready threads: while calls wait and fewer than
`threads` threads are free or running short calls, the pool starts another thread, which ends
once it is surplus again. So a session that waits (on the engine, on a blocking read, on a long
scan) never holds up another's `SELECT 1` for more than about `2 * LONG_CALL_S`, as PostgreSQL's
process per connection never does. The threads are daemons: one stuck in a call that never
returns (a read of a FIFO that no one writes) never keeps the server from exiting.

A call known to be quick runs on the event loop's thread instead (`Pace`): handing it to a pool
thread and its outcome back costs two thread wake-ups, more than a small statement's own work.
`Pace` keeps how long one kind of call (a statement's first rows, on one connection) took on its
recent runs: after `QUICK_RUNS` runs in a row of at most `QUICK_S` each, `quick` says the next
may run on the loop; one slower run, and it goes back to the pool. A call that may wait for
another session (an advisory lock, a table lock) must never run on the loop, whose thread that
session needs to go on: the caller decides which calls a `Pace` may time, and `never()` rules
one out for good.

Why a few shared threads rather than a thread per connection: the calls' Python work holds one
GIL, and each DuckDB call releases and takes it again several times. Fifty connection threads
with a call each then spend more on GIL hand-offs and context switches than on the statements
(measured on 2 cores, 50 connections x 100 small queries: 820 us of server CPU per query with a
thread per connection, 610 us with two shared threads, +30 % queries per second). Why asyncio
futures settled through `call_soon_threadsafe` rather than `concurrent.futures` wrapped for the
loop: a statement costs one hand-off each way, and the wrapping's chained futures cost the event
loop more than a small statement's own work.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

LONG_CALL_S = 0.02  # a call running longer stops counting as one of the pool's ready threads
# The calls' Python work shares one GIL: beyond a few threads more of them only add hand-offs
# (2 cores, 50 connections: 1 thread 1,870 q/s, 2 threads 2,140, 4 threads 1,900-1,990).
DEFAULT_THREADS = max(2, min(4, os.cpu_count() or 2))

# A call that ran at most this long counts as quick: it costs the loop's other connections
# little, and the two thread hand-offs it saves (~100-150 us of server CPU on the 2-core dev
# machine) are a good part of it. Not less: under load a pool thread's call waits for the GIL
# too (50 busy connections, a prepared `SELECT $1 + 1`: 0.9 ms median, 1.8 ms at p90), and at 1
# ms 16 % of those calls ran on the loop, at 2 ms 95 %.
QUICK_S = 0.002
QUICK_RUNS = 3  # quick runs in a row before the next runs on the event loop's thread

_Call = tuple["Worker", asyncio.Future[Any], Callable[..., Any], tuple[Any, ...]]


class Pace:
    """How long one kind of call took on its recent runs (see the module contract). Used by
    one connection, whose calls run one at a time: no lock."""

    __slots__ = ("_quick_runs", "_never", "last_s")

    def __init__(self) -> None:
        self._quick_runs = 0  # the latest runs that were quick, in a row
        self._never = False
        self.last_s = 0.0  # how long the latest run took

    @property
    def quick(self) -> bool:
        """Whether the next run may be on the event loop's thread."""
        return self._quick_runs >= QUICK_RUNS and not self._never

    def never(self) -> None:
        """The call may wait for another session: it never runs on the loop."""
        self._never = True

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`, timed (on whichever thread)."""
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.last_s = time.perf_counter() - started
            quick = self.last_s <= QUICK_S
            self._quick_runs = self._quick_runs + 1 if quick else 0


class WorkerPool:
    def __init__(self, threads: int = DEFAULT_THREADS, *, long_call_s: float = LONG_CALL_S
                 ) -> None:
        if threads < 1:
            raise ValueError(f"a worker pool needs at least one thread, got {threads}")
        self.threads = threads
        self._long_call_s = long_call_s
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards _started (the running dict is GIL-atomic)
        self._started = 0  # threads alive
        self._running: dict[int, float] = {}  # thread ident -> when its current call started
        self._waiting = threading.Event()  # calls were queued since the watch last found none
        for _ in range(threads):
            self._start_thread()
        threading.Thread(target=self._watch, name="heron-pool-watch", daemon=True).start()

    def lane(self, loop: asyncio.AbstractEventLoop) -> Worker:
        """A connection's ordered lane, settling its futures on `loop`."""
        return Worker(self, loop)

    @property
    def alive(self) -> int:
        """Threads alive now (`threads`, plus those started beside long calls)."""
        return self._started

    def _queue(self, call: _Call) -> None:
        self._calls.put(call)
        if not self._waiting.is_set():
            self._waiting.set()

    def _start_thread(self) -> None:
        with self._lock:
            self._started += 1
        threading.Thread(target=self._serve, name="heron-worker", daemon=True).start()

    def _serve(self) -> None:
        me = threading.get_ident()
        while True:
            lane, future, fn, args = self._calls.get()
            self._running[me] = time.monotonic()
            result, error = None, None
            if not future.cancelled():  # (a racy read is harmless: the call then runs)
                try:
                    result = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - the caller gets it with the future
                    error = exc
            del self._running[me]
            retire = self._surplus() and self._retire()
            # Settled last: the loop's thread wakes to it and waits for the GIL until this
            # thread blocks in get(), so no work of ours may stand between the two.
            lane._settled(future, result, error)
            if retire:
                return

    def _ready(self) -> int:
        """Threads free or running a call that is not long yet."""
        now = time.monotonic()
        long_calls = sum(1 for started in list(self._running.values())
                         if now - started >= self._long_call_s)
        return self._started - long_calls

    def _surplus(self) -> bool:
        return self._started > self.threads and self._ready() > self.threads

    def _retire(self) -> bool:
        with self._lock:
            if self._started > self.threads:
                self._started -= 1
                return True
        return False

    def _watch(self) -> None:
        """While calls are queued, add a thread each time the long calls leave fewer than
        `threads` ready ones."""
        while True:
            self._waiting.wait()
            time.sleep(self._long_call_s / 2)
            if self._calls.empty():
                self._waiting.clear()
                if self._calls.empty():  # (else a call came between the look and the clear)
                    continue
                self._waiting.set()
            elif self._ready() < self.threads:
                self._start_thread()


class Worker:
    """A connection's lane of a `WorkerPool`: its calls run one at a time, in order."""

    def __init__(self, pool: WorkerPool, loop: asyncio.AbstractEventLoop) -> None:
        self._pool = pool
        self._loop = loop
        self._closed = False
        # The loop's thread alone touches these two.
        self._unsettled = 0  # calls submitted and not settled yet
        self._later: collections.deque[_Call] = collections.deque()  # behind the running one

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        if self._closed:
            raise RuntimeError("the connection's worker is closed")
        future: asyncio.Future[T] = self._loop.create_future()
        call: _Call = (self, future, fn, args)
        self._unsettled += 1
        if self._unsettled == 1:
            self._pool._queue(call)
        else:
            self._later.append(call)
        return future

    @property
    def busy(self) -> bool:
        return self._unsettled > 0

    def close(self) -> None:
        self._closed = True

    def _settled(self, future: asyncio.Future[Any], result: Any, error: BaseException | None
                 ) -> None:
        """On the pool's thread: hand the outcome to the loop."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: no one waits
            self._loop.call_soon_threadsafe(self._settle, future, result, error)

    def _settle(self, future: asyncio.Future[Any], result: Any, error: BaseException | None
                ) -> None:
        self._unsettled -= 1
        if self._later:
            self._pool._queue(self._later.popleft())
        if future.cancelled():
            return
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

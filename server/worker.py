"""A connection's own worker thread: where its blocking calls (planning, DuckDB, the engine) run.

Contract: `Worker(name, loop)` starts one daemon thread; `submit(fn, *args)` (on `loop`'s thread)
queues a call and returns an `asyncio.Future` of `loop` that the call's result or exception
settles; calls run one at a time, in the order submitted, and a call whose future was cancelled
before it started does not run. `busy` says whether a call is queued or running. `close()` lets
the thread end once the calls queued before it are done; calls submitted after it fail with
`RuntimeError`. The thread is a daemon: one stuck in a call that never returns (a read of a FIFO
that no one writes) never keeps the server from exiting.

Why a thread per connection, as PostgreSQL has a process per connection: a shared, bounded pool
lets the sessions that wait (on the engine, on a blocking read) take every thread, and then
`SELECT 1` of any other session waits too. Idle threads cost little, and `--max-connections`
bounds how many there are. Why asyncio futures settled through `call_soon_threadsafe` rather
than `concurrent.futures` wrapped for the loop: a statement costs one hand-off each way, and the
wrapping's chained futures cost the event loop more than a small statement's own work.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[asyncio.Future[Any], Callable[..., Any], tuple[Any, ...]]


class Worker:
    def __init__(self, name: str, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._closed = False
        self._unsettled = 0  # calls submitted and not settled yet (the loop's thread only)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        if self._closed:
            raise RuntimeError("the connection's worker is closed")
        future: asyncio.Future[T] = self._loop.create_future()
        self._unsettled += 1
        self._calls.put((future, fn, args))
        return future

    @property
    def busy(self) -> bool:
        return self._unsettled > 0

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._calls.put(None)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args = call
            result, error = None, None
            if not future.cancelled():  # (a racy read is harmless: the call then runs)
                try:
                    result = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - the caller gets it with the future
                    error = exc
            with contextlib.suppress(RuntimeError):  # the loop is closed: no one waits
                self._loop.call_soon_threadsafe(self._settle, future, result, error)

    def _settle(self, future: asyncio.Future[Any], result: Any, error: BaseException | None
                ) -> None:
        self._unsettled -= 1
        if future.cancelled():
            return
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

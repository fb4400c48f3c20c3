"""A connection's own worker thread: where its blocking calls (planning, DuckDB, the engine) run.

Contract: `Worker(name)` starts one daemon thread; `submit(fn, *args)` queues a call and returns
its `concurrent.futures.Future`; calls run one at a time, in the order submitted. `close()` lets
the thread end once the calls queued before it are done; calls submitted after it fail with
`RuntimeError`. The thread is a daemon: one stuck in a call that never returns (a read of a FIFO
that no one writes) never keeps the server from exiting.

Why a thread per connection, as PostgreSQL has a process per connection: a shared, bounded pool
lets the sessions that wait (on the engine, on a blocking read) take every thread, and then
`SELECT 1` of any other session waits too. Idle threads cost little, and `--max-connections`
bounds how many there are.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]]


class Worker:
    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        if self._closed:
            raise RuntimeError("the connection's worker is closed")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._calls.put((future, fn, args))
        return future

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._calls.put(None)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args = call
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - the caller gets it with the future
                future.set_exception(exc)
            else:
                future.set_result(result)

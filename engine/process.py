"""``EngineProcess``: the resident engine, a child process that owns the model and KV cache.

The parent (the server) never imports torch. ``EngineProcess(config)`` spawns a child with the
multiprocessing "spawn" context, handing it the ``EngineConfig`` whole (pickled); the child
builds ``LocalEngine(config)`` and serves requests over a ``Pipe``.
Messages are pickled frozen dataclasses (``_Answer``, ``_CountTokens``, ``_Stop`` one way;
``_Ready``, ``_Done``, ``_Failed`` back).

Guarantees:
- start-up failures in the child (unknown model, bad weights) raise ``EngineError`` in the parent
  with the child's message, as soon as the child reports or dies, or after
  ``config.startup_timeout_s`` at the latest;
- a call never hangs on a dead child: the parent polls the pipe and the child's liveness, and
  raises ``EngineError`` if it exits mid-call (after which the engine is closed);
- calls are serialized by a lock, so several server threads may share one instance;
- ``close()`` stops the child (politely, then by terminate) and is idempotent.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from heron.engine.api import (
    Answers,
    CancelFlag,
    EngineCancelled,
    EngineError,
    ModelInfo,
    Request,
)
from heron.engine.config import EngineConfig

_POLL_SECONDS = 0.05
_STOP_GRACE_SECONDS = 5.0


# Requests (parent -> child)
@dataclass(frozen=True)
class _Answer:
    request: Request


@dataclass(frozen=True)
class _CountTokens:
    texts: tuple[str, ...]


@dataclass(frozen=True)
class _Stop:
    pass


# Replies (child -> parent)
@dataclass(frozen=True)
class _Ready:
    info: ModelInfo


@dataclass(frozen=True)
class _Done:
    value: Any  # Answers for _Answer, list[int] for _CountTokens


@dataclass(frozen=True)
class _Failed:
    message: str
    detail: str  # the child's traceback, for logs
    cancelled: bool = False


def _serve(conn: Connection, stop_call: CancelFlag, config: EngineConfig) -> None:
    """Child process main: build the engine, report readiness, answer requests until _Stop."""
    # Must precede the torch import: spinning OpenMP workers collapse (10-30x slower) when the
    # host is shared and a core is taken by another process; passive waiting costs ~nothing.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from heron.engine.local import LocalEngine  # noqa: PLC0415 - torch lives only in the child

        engine = LocalEngine(config)
    except Exception as exc:  # noqa: BLE001 - every start-up failure must reach the parent
        conn.send(_Failed(_message(exc), traceback.format_exc()))
        return
    conn.send(_Ready(engine.info))
    while True:
        try:
            request = conn.recv()
        except EOFError:  # parent went away
            return
        if isinstance(request, _Stop):
            engine.close()
            return
        try:
            if isinstance(request, _Answer):
                reply: _Done | _Failed = _Done(engine.answer(request.request, stop_call))
            elif isinstance(request, _CountTokens):
                reply = _Done(engine.count_tokens(request.texts))
            else:
                reply = _Failed(f"unknown engine request {type(request).__name__}", "")
        except EngineCancelled as exc:
            reply = _Failed(str(exc), "", cancelled=True)
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            reply = _Failed(_message(exc), traceback.format_exc())
        conn.send(reply)


def _message(exc: BaseException) -> str:
    from heron.engine.api import EngineError as _EngineError  # noqa: PLC0415

    return str(exc) if isinstance(exc, _EngineError) else f"{type(exc).__name__}: {exc}"


class EngineProcess:
    """Parent-side handle of the resident engine; implements ``engine.api.Engine``."""

    info: ModelInfo

    def __init__(self, config: EngineConfig) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        # Set by the parent to stop the call in flight; the child polls it between chunks.
        self._stop_call = context.Event()
        self._process = context.Process(
            target=_serve,
            args=(child_conn, self._stop_call, config),
            name=f"heron-engine[{config.model}]",
            daemon=True,  # never outlive the server
        )
        self._lock = threading.Lock()
        self._closed = False
        self._process.start()
        child_conn.close()  # so the parent sees EOF if the child dies
        try:
            reply = self._receive(
                deadline=time.monotonic() + config.startup_timeout_s, what="start-up"
            )
        except EngineError:
            self._kill()
            raise
        if isinstance(reply, _Failed):
            self._kill()
            raise EngineError(f"engine failed to start: {reply.message}")
        assert isinstance(reply, _Ready)
        self.info = reply.info

    def answer(self, request: Request, cancel: CancelFlag | None = None) -> Answers:
        result = self._call(_Answer(request), cancel)
        assert isinstance(result, Answers)
        return result

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return list(self._call(_CountTokens(tuple(texts))))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(OSError):  # the child may already be gone
                self._conn.send(_Stop())
            self._process.join(_STOP_GRACE_SECONDS)
            self._kill()

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, request: _Answer | _CountTokens, cancel: CancelFlag | None = None) -> Any:
        # Wait for the engine in slices, so a caller cancelled while queued behind another
        # session's call gives up without ever reaching the child.
        while not self._lock.acquire(timeout=_POLL_SECONDS):
            if cancel is not None and cancel.is_set():
                raise EngineCancelled()
        try:
            if self._closed:
                raise EngineError("engine is closed")
            if cancel is not None and cancel.is_set():
                raise EngineCancelled()
            self._stop_call.clear()
            try:
                self._conn.send(request)
                reply = self._receive(deadline=None, what="a call", cancel=cancel)
            except EngineError:
                self._closed = True
                self._kill()
                raise
            except OSError as exc:
                self._closed = True
                self._kill()
                raise EngineError(f"engine process unreachable: {exc}") from exc
        finally:
            self._lock.release()
        if isinstance(reply, _Failed):
            raise (EngineCancelled if reply.cancelled else EngineError)(reply.message)
        return reply.value

    def _receive(self, deadline: float | None, what: str, cancel: CancelFlag | None = None
                 ) -> Any:
        # Poll instead of a blocking recv: a child killed by the OOM killer or a segfault never
        # replies, and the pipe alone may not report EOF promptly.
        while not self._conn.poll(_POLL_SECONDS):
            if cancel is not None and cancel.is_set():
                self._stop_call.set()  # the child stops after its current chunk and replies
            if not self._process.is_alive():
                if self._conn.poll(0):  # it replied, then exited (e.g. a start-up failure)
                    break
                raise EngineError(
                    f"engine process exited with code {self._process.exitcode} during {what}"
                )
            if deadline is not None and time.monotonic() > deadline:
                raise EngineError(f"engine process did not finish {what} in time")
        try:
            return self._conn.recv()
        except EOFError as exc:
            raise EngineError(f"engine process closed its pipe during {what}") from exc

    def _kill(self) -> None:
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(_STOP_GRACE_SECONDS)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()

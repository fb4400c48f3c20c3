"""``EngineProcess``: the resident engine, a child process that owns the model and KV arena.

The parent (the server) never imports torch. ``EngineProcess(config)`` spawns a child with the
multiprocessing "spawn" context, handing it the ``EngineConfig`` whole (pickled); the child
builds ``LocalEngine(config)`` and serves calls over a ``Pipe``. Every message is a pickled frozen
dataclass: ``_Answer``, ``_More``, ``_NoMore``, ``_Check``, ``_CountTokens``, ``_Health``,
``_Cancel``, ``_Stop`` to the child; ``_Ready``, ``_StartFailed``, ``_Started``, ``_Progress``,
``_Done``, ``_Failed`` back. Calls carry an id, so any number run at once: the child answers each
``_Answer`` in a thread of its own (the engine's scheduler interleaves their chunks) and the
others at once, and a reader thread in the parent routes every reply to the caller waiting for
that id. A streamed call (``answer(..., more=parts)``) sends its ``_Answer`` first, then each
part as a ``_More`` as the caller's iterator yields it (handling the replies that came meanwhile:
progress callbacks run between parts), then ``_NoMore``; the child's call thread takes the
parts from a queue as they come.

Guarantees:
- start-up failures in the child (unknown model, bad weights) raise ``EngineError`` in the parent
  with the child's message, as soon as the child reports or dies, or after
  ``config.startup_timeout_s`` at the latest;
- a call never hangs on a dead child: the reader thread notices the child's exit (or a closed
  pipe) and fails every waiting call with ``EngineDied`` (saying whether the child had begun it:
  it acknowledges each ``_Answer`` with ``_Started``; a streamed call whose parts were taken from
  the caller's iterator counts as begun, since it could not be asked again whole), after which
  the engine is closed and ``died`` is set; ``kill(reason)`` ends a child that stopped answering
  the same way;
- ``health(timeout)`` asks the child whether it still answers, and how long its step loop has
  been inside one step (``Health``); no answer within ``timeout`` raises ``EngineError``;
- the child never outlives its server: it exits at once when the pipe reports the parent gone,
  and a watchdog thread exits it when its parent process changes (the parent was killed);
- a caller's cancel flag is forwarded as ``_Cancel(id)``: it stops that call only (and a stream
  sends no more parts);
- a ``progress`` callback is called in the caller's thread with each ``_Progress`` of its call;
- ``close()`` stops the child (politely, then by terminate), fails calls still waiting, and is
  idempotent.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from heron.engine.api import (
    Answers,
    CancelFlag,
    EngineCancelled,
    EngineError,
    Metrics,
    ModelInfo,
    ProgressCallback,
    Request,
    prompt_table,
    prompts_from_table,
)
from heron.engine.config import EngineConfig
from heron.engine.prompts import Prompt

_POLL_SECONDS = 0.05
_STOP_GRACE_SECONDS = 5.0
_PARENT_POLL_SECONDS = 0.25  # how often the child checks that its server still runs


class EngineDied(EngineError):
    """The engine process exited (or was killed) while the call waited for it. ``started``:
    whether the child had begun the call (a call it never received can run elsewhere)."""

    def __init__(self, message: str, started: bool = True) -> None:
        super().__init__(message)
        self.started = started


@dataclass(frozen=True)
class Health:
    """The child's answer to ``EngineProcess.health``."""

    step_seconds: float  # how long its step loop has been inside the current step (0: idle)


# Parent -> child
@dataclass(frozen=True)
class _Answer:
    call: int
    request: Request
    progress: bool  # whether to send _Progress messages
    streamed: bool = False  # whether _More parts follow, then _NoMore


@dataclass(frozen=True)
class _More:
    call: int
    prompts: tuple[Prompt, ...]  # the next part of a streamed call

    def __reduce__(self) -> tuple[Callable[..., _More], tuple[object, ...]]:
        return _more_from_table, (self.call, *prompt_table(self.prompts))


def _more_from_table(call: int, texts: tuple[str, ...], index: list[int]) -> _More:
    return _More(call, prompts_from_table(texts, index))


@dataclass(frozen=True)
class _NoMore:
    call: int


@dataclass(frozen=True)
class _Check:
    call: int
    request: Request


@dataclass(frozen=True)
class _CountTokens:
    call: int
    texts: tuple[str, ...]


@dataclass(frozen=True)
class _Health:
    call: int


@dataclass(frozen=True)
class _Cancel:
    call: int


@dataclass(frozen=True)
class _Stop:
    pass


# Child -> parent
@dataclass(frozen=True)
class _Ready:
    info: ModelInfo


@dataclass(frozen=True)
class _StartFailed:
    message: str
    detail: str  # the child's traceback, for logs


@dataclass(frozen=True)
class _Started:
    call: int


@dataclass(frozen=True)
class _Progress:
    call: int
    metrics: Metrics


@dataclass(frozen=True)
class _Done:
    call: int
    value: Any  # Answers for _Answer, list[int] for _CountTokens, Health for _Health, None for
    # _Check


@dataclass(frozen=True)
class _Failed:
    call: int
    error: EngineError  # raised in the caller as it is (EngineCancelled, PromptTooLong, ...)
    detail: str  # the child's traceback, for logs

_Reply = _Started | _Progress | _Done | _Failed


def _exit_with(parent: int) -> None:
    """Watchdog thread of the child: exit as soon as the server process is gone (the child is
    then re-parented), even while every other thread is busy."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(1)


def _serve(conn: Connection, config: EngineConfig, parent: int) -> None:
    """Child process main: build the engine, report readiness, serve calls until _Stop."""
    threading.Thread(target=_exit_with, args=(parent,), name="heron-parent-watch",
                     daemon=True).start()
    # Must precede the torch import: spinning OpenMP workers collapse (10-30x slower) when the
    # host is shared and a core is taken by another process; passive waiting costs ~nothing.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from heron.engine.local import LocalEngine  # noqa: PLC0415 - torch lives only in the child

        engine = LocalEngine(config)
    except Exception as exc:  # noqa: BLE001 - every start-up failure must reach the parent
        conn.send(_StartFailed(_message(exc), traceback.format_exc()))
        return
    sending = threading.Lock()

    def send(message: _Reply) -> None:
        with sending, contextlib.suppress(OSError):  # the parent may be gone
            conn.send(message)

    cancels: dict[int, threading.Event] = {}
    streams: dict[int, queue.SimpleQueue[tuple[Prompt, ...] | None]] = {}  # parts to come

    def answer(message: _Answer, cancel: threading.Event,
               parts: queue.SimpleQueue[tuple[Prompt, ...] | None]) -> None:
        def progress(metrics: Metrics) -> None:
            send(_Progress(message.call, metrics))

        try:
            reply: _Reply = _Done(message.call, engine.answer(
                message.request, cancel, progress if message.progress else None,
                more=iter(parts.get, None) if message.streamed else ()))
        except EngineError as exc:
            reply = _Failed(message.call, exc, traceback.format_exc())
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            reply = _Failed(message.call, EngineError(_message(exc)), traceback.format_exc())
        cancels.pop(message.call, None)
        streams.pop(message.call, None)
        send(reply)

    conn.send(_Ready(engine.info))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the server went away without a word: no one to answer
            os._exit(1)
        if isinstance(message, _Stop):
            break
        if isinstance(message, _Answer):
            send(_Started(message.call))
            cancel = cancels[message.call] = threading.Event()
            parts = streams[message.call] = queue.SimpleQueue()
            threading.Thread(target=answer, args=(message, cancel, parts), daemon=True,
                             name=f"heron-call-{message.call}").start()
        elif isinstance(message, _More | _NoMore):
            if message.call in streams:  # else the call ended already
                streams[message.call].put(message.prompts if isinstance(message, _More) else None)
        elif isinstance(message, _Cancel):
            if message.call in cancels:
                cancels[message.call].set()
        elif isinstance(message, _Check):
            try:
                engine.check(message.request)
                send(_Done(message.call, None))
            except EngineError as exc:
                send(_Failed(message.call, exc, traceback.format_exc()))
        elif isinstance(message, _CountTokens):
            send(_Done(message.call, engine.count_tokens(message.texts)))
        elif isinstance(message, _Health):
            busy_since = engine.scheduler.busy_since
            send(_Done(message.call, Health(
                0.0 if busy_since is None else time.monotonic() - busy_since)))
    engine.close()


def _message(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"


class _Waiter:
    """The parent's side of one call in flight: its replies as they come, its cancel flag."""

    def __init__(self, engine: EngineProcess, call: int, replies: queue.SimpleQueue[_Reply],
                 cancel: CancelFlag | None, progress: ProgressCallback | None) -> None:
        self.engine = engine
        self.call = call
        self.replies = replies
        self.cancel = cancel
        self.progress = progress
        self.started = False  # whether the child began it
        self.cancel_sent = False

    def forward_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set() and not self.cancel_sent:
            self.cancel_sent = True
            self.engine._send_quietly(_Cancel(self.call))

    def take(self, reply: _Reply) -> _Done | _Failed | None:
        """Act on a reply; the call's last one is returned."""
        if isinstance(reply, _Started):
            self.started = True
            return None
        if isinstance(reply, _Progress):
            if self.progress is not None:
                try:
                    self.progress(reply.metrics)
                except BaseException:  # the caller gives up on the call: stop it
                    self.withdraw()
                    raise
            return None
        return reply

    def withdraw(self) -> None:
        """The caller gives up on the call: no replies are routed to it, the child stops it."""
        self.engine._forget(self.call)
        self.engine._send_quietly(_Cancel(self.call))


class EngineProcess:
    """Parent-side handle of the resident engine; implements ``engine.api.Engine``."""

    info: ModelInfo

    def __init__(self, config: EngineConfig) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(
            target=_serve,
            args=(child_conn, config, os.getpid()),
            name=f"heron-engine[{config.model}]",
            daemon=True,  # never outlive the server
        )
        self._sending = threading.Lock()
        self._waiting: dict[int, queue.SimpleQueue[_Reply]] = {}
        self._calls = itertools.count(1)
        self._closed = False
        self._failure: EngineError = EngineError("engine is closed")  # for waiting, later calls
        self._kill_reason: str | None = None  # why `kill` ended the child
        self.died = threading.Event()  # the child went away on its own or was killed
        self._process.start()
        child_conn.close()  # so the parent sees EOF if the child dies
        try:
            reply = self._startup_reply(time.monotonic() + config.startup_timeout_s)
        except EngineError:
            self._kill()
            raise
        if isinstance(reply, _StartFailed):
            self._kill()
            raise EngineError(f"engine failed to start: {reply.message}")
        assert isinstance(reply, _Ready)
        self.info = reply.info
        self._reader = threading.Thread(target=self._read, name="heron-engine-replies",
                                        daemon=True)
        self._reader.start()

    def answer(
        self,
        request: Request,
        cancel: CancelFlag | None = None,
        progress: ProgressCallback | None = None,
        *,
        more: Iterable[Sequence[Prompt]] = (),
    ) -> Answers:
        if cancel is not None and cancel.is_set():
            raise EngineCancelled()
        streamed = more != ()
        result = self._call(lambda call: _Answer(call, request, progress is not None, streamed),
                            cancel, progress, more=more if streamed else None)
        assert isinstance(result, Answers)
        return result

    def check(self, request: Request) -> None:
        self._call(lambda call: _Check(call, request))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return list(self._call(lambda call: _CountTokens(call, tuple(texts))))

    def health(self, timeout: float) -> Health:
        """Whether the child still answers (``EngineError`` when it does not within
        ``timeout`` seconds), and how long its current step has run."""
        result = self._call(lambda call: _Health(call), timeout=timeout)
        assert isinstance(result, Health)
        return result

    @property
    def alive(self) -> bool:
        """Whether the child runs and serves calls (a child that just exited may still be
        ``alive`` for the few milliseconds before the reader thread notices)."""
        return not self._closed and self._process.is_alive()

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self._process.pid

    @property
    def failure(self) -> str:
        """What calls are told once the engine is closed (how the child died, after ``died``)."""
        return str(self._failure)

    def kill(self, reason: str) -> None:
        """End a child that must not go on (it stopped answering); every waiting call fails
        with ``EngineDied`` naming ``reason``."""
        self._kill_reason = reason
        with contextlib.suppress(ProcessLookupError):
            if self._process.pid is not None:
                os.kill(self._process.pid, signal.SIGKILL)

    def close(self) -> None:
        with self._sending:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(OSError):  # the child may already be gone
                self._conn.send(_Stop())
        self._process.join(_STOP_GRACE_SECONDS)
        self._kill()
        self._fail_waiting()

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, message: Any, cancel: CancelFlag | None = None,
              progress: ProgressCallback | None = None, timeout: float | None = None,
              more: Iterable[Sequence[Prompt]] | None = None) -> Any:
        replies: queue.SimpleQueue[_Reply] = queue.SimpleQueue()
        with self._sending:
            if self._closed:
                raise type(self._failure)(str(self._failure))  # EngineDied: never started
            call = next(self._calls)
            self._waiting[call] = replies
            # If the child is gone the send fails; the reader thread then tells every caller why.
            with contextlib.suppress(OSError):
                self._conn.send(message(call))
        waiter = _Waiter(self, call, replies, cancel, progress)
        last = None if more is None else self._stream(waiter, more)
        deadline = None if timeout is None else time.monotonic() + timeout
        while last is None:
            # Checked before every wait, not only after a quiet one: progress replies may come
            # faster than the poll interval.
            waiter.forward_cancel()
            try:
                reply = replies.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if deadline is not None and time.monotonic() > deadline:
                    self._forget(call)
                    raise EngineError(
                        f"the engine process did not answer within {timeout} s") from None
                continue
            last = waiter.take(reply)
        if isinstance(last, _Failed):
            if isinstance(last.error, EngineDied):
                raise EngineDied(str(last.error), waiter.started)
            raise last.error
        return last.value

    def _stream(self, waiter: _Waiter, more: Iterable[Sequence[Prompt]]) -> _Done | _Failed | None:
        """Send the parts of a streamed call as ``more`` yields them, taking the replies that
        come meanwhile; the call's last reply if it came before the parts ended."""
        try:
            for part in more:
                waiter.started = True  # its parts are taken: it cannot be asked again whole
                while True:
                    try:
                        reply = waiter.replies.get_nowait()
                    except queue.Empty:
                        break
                    last = waiter.take(reply)
                    if last is not None:
                        return last
                waiter.forward_cancel()
                if waiter.cancel_sent:
                    break
                self._send_quietly(_More(waiter.call, tuple(part)))
        except BaseException:  # the caller's parts failed: the call is given up
            waiter.withdraw()
            raise
        finally:
            self._send_quietly(_NoMore(waiter.call))
        return None

    def _forget(self, call: int) -> None:
        with self._sending:
            self._waiting.pop(call, None)

    def _send_quietly(self, message: _Cancel | _More | _NoMore) -> None:
        with self._sending, contextlib.suppress(OSError):
            if not self._closed:
                self._conn.send(message)

    def _read(self) -> None:
        """Route replies to their callers until the child exits or the engine is closed."""
        while True:
            try:
                # Poll instead of blocking: a child killed by the OOM killer or a segfault never
                # replies, and the pipe alone may not report EOF promptly.
                reply = self._conn.recv() if self._conn.poll(_POLL_SECONDS) else None
            except (EOFError, OSError):
                break
            if reply is not None:
                route = self._waiting.get(reply.call)
                if route is not None:
                    route.put(reply)
                    if isinstance(reply, _Done | _Failed):
                        self._waiting.pop(reply.call, None)
            elif self._closed or not self._process.is_alive():
                break
        with self._sending:
            if not self._closed:  # the child went away on its own, or `kill` ended it
                # Joined in steps, not once: another thread joining the child at the same time
                # may be the one that reaps it, and its exit code shows up here a moment later.
                deadline = time.monotonic() + _STOP_GRACE_SECONDS
                while self._process.exitcode is None and time.monotonic() < deadline:
                    self._process.join(0.01)
                self._failure = EngineDied(self._death())
                self._closed = True
        self._fail_waiting()
        self.died.set()

    def _death(self) -> str:
        """How the child ended, for the calls it leaves unanswered."""
        if self._kill_reason is not None:
            return f"the engine process was killed: {self._kill_reason}"
        code = self._process.exitcode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"the engine process was killed by {signal.Signals(-code).name}"
        return f"the engine process exited with code {code}"

    def _fail_waiting(self) -> None:
        with self._sending:
            waiting, self._waiting = self._waiting, {}
        for call, replies in waiting.items():
            replies.put(_Failed(call, type(self._failure)(str(self._failure)), ""))

    def _startup_reply(self, deadline: float) -> Any:
        while not self._conn.poll(_POLL_SECONDS):
            if not self._process.is_alive():
                if self._conn.poll(0):  # it replied, then exited (e.g. a start-up failure)
                    break
                raise EngineError(
                    f"engine process exited with code {self._process.exitcode} during start-up"
                )
            if time.monotonic() > deadline:
                raise EngineError("engine process did not finish start-up in time")
        try:
            return self._conn.recv()
        except EOFError as exc:
            raise EngineError("engine process closed its pipe during start-up") from exc

    def _kill(self) -> None:
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(_STOP_GRACE_SECONDS)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()

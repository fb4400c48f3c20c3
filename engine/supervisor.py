"""``EngineSupervisor``: the resident engine kept alive — restarted when it dies or hangs.

Contract: ``EngineSupervisor(config, policy)`` starts the engine process (``EngineProcess``;
a start-up failure raises ``EngineError`` as it does) and implements ``engine.api.Engine`` over
it, and over each engine started after it. A watch thread asks the engine every
``policy.heartbeat_s`` whether it still answers (``EngineProcess.health``):

- an engine that exited (killed by the OOM killer or a signal, crashed), that does not answer
  within ``policy.unresponsive_s``, or whose step loop spent longer than ``policy.stuck_step_s``
  in one step, is killed if need be and started again;
- the calls it was serving fail at once with an ``EngineError`` that says what happened and
  that the engine is being restarted (the caller may run the statement again); no call the
  engine had begun is retried behind the caller's back (the statement may be what killed it),
  while one it never received, and token counting and prompt checks, go to the next engine;
- restarts back off: the first waits ``policy.first_restart_delay_s``, each failed start doubles
  the wait up to ``policy.max_restart_delay_s``; an engine that ran ``policy.stable_s`` before it
  died restarts without the accumulated wait;
- a call made while the engine restarts waits for it (stopping with ``EngineCancelled`` when its
  cancel flag is set); while the last start failed it fails at once, with that failure and when
  the next attempt is due.

``info`` is the first engine's (a restart loads the same model); ``pid`` the running engine
process's. ``close()`` stops the watch thread and the engine; later calls fail with
``EngineError``. ``restarts`` counts the engines started after the first.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from heron.engine.api import (
    Answers,
    CancelFlag,
    EngineCancelled,
    EngineError,
    ModelInfo,
    ProgressCallback,
    Request,
)
from heron.engine.config import EngineConfig
from heron.engine.process import EngineDied, EngineProcess
from heron.engine.prompts import Prompt

_WAIT_SECONDS = 0.05  # how often a call waiting for a restart looks at its cancel flag
_CLOSE_WAIT_SECONDS = 5.0  # how long close() waits for the watch thread


@dataclass(frozen=True)
class Supervision:
    """When an engine counts as dead or hung, and how restarts back off (seconds)."""

    heartbeat_s: float = 1.0
    unresponsive_s: float = 30.0
    stuck_step_s: float = 600.0
    first_restart_delay_s: float = 0.25
    max_restart_delay_s: float = 60.0
    stable_s: float = 60.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise EngineError(f"supervision {name} must be a number of seconds > 0, "
                                  f"got {value!r}")


class _State(enum.Enum):
    RUNNING = "running"
    RESTARTING = "restarting"  # a start is due or under way
    FAILED = "failed"  # the last start failed; another is due later
    CLOSED = "closed"


class EngineSupervisor:
    info: ModelInfo

    def __init__(self, config: EngineConfig, policy: Supervision | None = None) -> None:
        self.config = config
        self.policy = policy or Supervision()
        self._engine: EngineProcess | None = EngineProcess(config)
        self.info = self._engine.info
        self.restarts = 0
        self._state = _State.RUNNING
        self._problem = ""  # why the engine is not running (RESTARTING, FAILED)
        self._retry_at = 0.0  # when the next start is due (FAILED)
        self._delay = self.policy.first_restart_delay_s
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._watch = threading.Thread(target=self._supervise, name="heron-engine-supervisor",
                                       daemon=True)
        self._watch.start()

    # -- Engine --------------------------------------------------------------------------------

    def answer(self, request: Request, cancel: CancelFlag | None = None,
               progress: ProgressCallback | None = None, *,
               more: Iterable[Sequence[Prompt]] = ()) -> Answers:
        while True:
            engine = self._running(cancel)
            try:
                return engine.answer(request, cancel, progress, more=more)
            except EngineDied as exc:
                if exc.started:
                    raise EngineError(f"{exc} while answering this statement; the engine is "
                                      f"being restarted, run the statement again") from None
                # It died before it took the call: the next engine answers it.

    def check(self, request: Request) -> None:
        while True:
            try:
                return self._running(None).check(request)
            except EngineDied:
                pass  # checking runs no model: ask the next engine

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        while True:
            try:
                return self._running(None).count_tokens(texts)
            except EngineDied:
                pass  # counting runs no model: ask the next engine

    @property
    def pid(self) -> int | None:
        """The running engine process's id (None while it restarts)."""
        engine = self._engine
        return None if engine is None else engine.pid

    def close(self) -> None:
        with self._lock:
            self._state = _State.CLOSED
            engine, self._engine = self._engine, None
        self._closing.set()
        # A start under way finishes on its own (and closes what it started): do not wait it out.
        self._watch.join(_CLOSE_WAIT_SECONDS)
        if engine is not None:
            engine.close()

    def __enter__(self) -> EngineSupervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls ---------------------------------------------------------------------------------

    def _running(self, cancel: CancelFlag | None) -> EngineProcess:
        """The running engine, waiting while it restarts."""
        while True:
            with self._lock:
                state, engine = self._state, self._engine
                if state is _State.RUNNING and engine is not None and engine.alive:
                    return engine
                if state is _State.CLOSED:
                    raise EngineError("engine is closed")
                if state is _State.FAILED:
                    wait = max(0.0, self._retry_at - time.monotonic())
                    raise EngineError(f"the engine is not running: {self._problem}; the next "
                                      f"attempt to start it is in {wait:.0f} s")
            if cancel is not None and cancel.is_set():
                raise EngineCancelled()
            self._closing.wait(_WAIT_SECONDS)

    # -- the watch thread ----------------------------------------------------------------------

    def _supervise(self) -> None:
        while not self._closing.is_set():
            engine = self._engine
            if engine is None:
                self._restart()
            elif engine.died.wait(self.policy.heartbeat_s):
                self._lost(engine, engine.failure)
            else:
                self._check(engine)

    def _check(self, engine: EngineProcess) -> None:
        """Kill an engine that does not answer or whose step loop hangs (it then dies, and the
        next round restarts it)."""
        try:
            health = engine.health(self.policy.unresponsive_s)
        except EngineError:
            if not engine.died.is_set() and not self._closing.is_set():
                engine.kill(f"it did not answer for {self.policy.unresponsive_s:g} s")
            return
        if health.step_seconds > self.policy.stuck_step_s:
            engine.kill(f"one step of its loop ran for {health.step_seconds:.0f} s")

    def _lost(self, engine: EngineProcess, why: str) -> None:
        with self._lock:
            if self._engine is not engine or self._state is _State.CLOSED:
                return
            self._engine = None
            self._state = _State.RESTARTING
            self._problem = why
            if time.monotonic() - self._started >= self.policy.stable_s:
                self._delay = self.policy.first_restart_delay_s
        engine.close()

    def _restart(self) -> None:
        if self._closing.wait(self._delay):
            return
        with self._lock:
            if self._state is _State.CLOSED:
                return
            self._state = _State.RESTARTING
        try:
            engine = EngineProcess(self.config)
        except EngineError as exc:
            with self._lock:
                if self._state is not _State.CLOSED:
                    self._state = _State.FAILED
                    self._problem = f"it could not be restarted: {exc}"
                    self._delay = min(2 * self._delay, self.policy.max_restart_delay_s)
                    self._retry_at = time.monotonic() + self._delay
            return
        with self._lock:
            if self._state is _State.CLOSED:
                closing = engine
            else:
                closing = None
                self._engine = engine
                self._state = _State.RUNNING
                self._started = time.monotonic()
                self.restarts += 1
                self._delay = min(2 * self._delay, self.policy.max_restart_delay_s)
        if closing is not None:
            closing.close()

"""Progress of the AI operators a statement runs, reported while they run.

Contract: an `Executor` given a `ProgressListener` reports to it, in the statement's thread, an
`OperatorProgress` snapshot whenever something about one of its operators changes: when the
operator starts a stage (asking a sample to measure its selectivity, or answering its
candidates), when it sends an engine request, after every engine chunk that held the request's
work (the engine's progress callback), when the request returns, and once at the end of the
stage: `State.DONE` when it asked what it had to, `State.STOPPED` when its statement ended
first (an error, a cancel). Nothing more comes for a stage after its end. A snapshot is a frozen
value — the operator, how many of its candidates are answered out of how many, the engine work
so far, how long it has run, its rate and an estimate of the time left — and `describe()` words
it for a NOTICE.

`OperatorRun` is the executor's side: one stage of one operator, its counts, and the snapshots
it reports. Rates and estimates come from the engine work measured so far in the stage: the
time left is the candidates still to answer at the seconds per prompt the engine took so far
(none before the engine answered one).
"""

from __future__ import annotations

import dataclasses
import enum
import time
from dataclasses import dataclass
from typing import Protocol

from heron.engine.api import Metrics, ProgressCallback
from heron.planner.logical import AiOperator


class Stage(enum.Enum):
    SAMPLING = "sampling"  # asking a few candidates to measure the operator's selectivity
    ANSWERING = "answering"  # asking its candidates


class State(enum.Enum):
    RUNNING = "running"
    DONE = "done"  # the stage asked what it had to
    STOPPED = "stopped"  # its statement ended before the stage did


@dataclass(frozen=True, slots=True)
class OperatorProgress:
    """Where one stage of one AI operator stands."""

    operator: AiOperator
    stage: Stage
    state: State
    ordinal: int | None  # the operator's place in the order operators run (None while sampling)
    operators: int  # AI operators in the statement
    done: int  # candidates answered so far (by the engine, the answer store or a sample)
    total: int  # candidates the stage answers; a LIMIT may stop it sooner (`may_stop_early`)
    may_stop_early: bool
    metrics: Metrics  # the engine's work so far; `seconds`: time spent waiting for it
    elapsed: float  # seconds since the stage started
    started: float  # when the stage started (time.time())
    requested: float | None  # when its engine request in flight was sent (time.monotonic())
    queued: bool  # that request waits for the engine's first chunk of its work

    @property
    def tokens_per_second(self) -> float | None:
        """Input tokens answered per second of waiting for the engine."""
        m = self.metrics
        return m.input_tokens / m.seconds if m.seconds > 0 and m.prompts else None

    @property
    def seconds_left(self) -> float | None:
        """The candidates still to answer at the engine's seconds per prompt so far."""
        m = self.metrics
        if self.state is not State.RUNNING or not m.prompts:
            return None
        return max(0, self.total - self.done) * m.seconds / m.prompts

    def describe(self) -> str:
        """The NOTICE text."""
        op = self.operator
        where = f" {self.ordinal} of {self.operators}" if self.ordinal is not None else ""
        name = f"{op.label} ({op.call.spelling}){where}"
        if self.stage is Stage.SAMPLING:
            name += ", measuring selectivity on a sample"
        m = self.metrics
        counts = (f"{self.done} of {self.total} prompts answered, {m.input_tokens} input tokens, "
                  f"{m.fresh_tokens} fresh")
        rate = self.tokens_per_second
        speed = f", {rate:.0f} input tokens/s" if rate is not None else ""
        if self.state is State.DONE:
            early = " (stopped early: LIMIT reached)" if self.done < self.total else ""
            return f"{name} done: {counts}{speed}, {self.elapsed:.1f} s{early}"
        left = self.seconds_left
        eta = "time left unknown yet" if left is None else (
            f"{'at most' if self.may_stop_early else 'about'} {left:.0f} s left")
        return f"{name}: {counts}{speed}, {self.elapsed:.1f} s elapsed, {eta}"


class ProgressListener(Protocol):
    """Told how a statement's AI operators progress (in the statement's thread)."""

    def report(self, progress: OperatorProgress) -> None: ...


class OperatorRun:
    """One stage of one operator in one execution, reporting to a listener. Used from the
    statement's thread only (the engine calls progress callbacks in the caller's thread)."""

    def __init__(self, listener: ProgressListener, operator: AiOperator, operators: int,
                 stage: Stage, total: int, *, done: int = 0, ordinal: int | None = None,
                 may_stop_early: bool = False) -> None:
        self.listener = listener
        self.operator = operator
        self.operators = operators
        self.stage = stage
        self.ordinal = ordinal
        self.total = total
        self.may_stop_early = may_stop_early
        self.state = State.RUNNING
        self._done = done  # answered before the request in flight
        self._before = Metrics()  # engine work before the request in flight
        self._current = Metrics()  # the request in flight's, as the engine last reported
        self._requested: float | None = None
        self._queued = False
        self._started = time.monotonic()
        self._started_wall = time.time()
        self._report()

    def from_store(self, count: int) -> None:
        """`count` candidates were answered without the engine (the answer store)."""
        if count:
            self._done += count
            self._report()

    def request(self, prompts: int, before: Metrics) -> ProgressCallback:
        """An engine request for `prompts` prompts is being sent, the stage's engine work so far
        being `before`; the callback to give the engine."""
        self._before = dataclasses.replace(before)
        self._current = Metrics()
        self._requested = time.monotonic()
        self._queued = True
        self._report()

        def progress(metrics: Metrics) -> None:
            self._current = metrics
            self._queued = False
            self._report()

        return progress

    def returned(self, after: Metrics) -> None:
        """The request in flight was answered; the stage's engine work is now `after`."""
        self._done += after.prompts - self._before.prompts
        self._before = dataclasses.replace(after)
        self._current = Metrics()
        self._requested = None
        self._queued = False
        self._report()

    def end(self, state: State) -> None:
        """The stage ended (DONE or STOPPED); reported once, later calls do nothing."""
        if self.state is State.RUNNING:
            self.state = state
            self._requested = None
            self._queued = False
            self._report()

    def snapshot(self) -> OperatorProgress:
        now = time.monotonic()
        metrics = self._before
        if self._requested is not None:  # the request in flight counts as it goes
            metrics = metrics + dataclasses.replace(self._current,
                                                    seconds=now - self._requested)
        return OperatorProgress(self.operator, self.stage, self.state, self.ordinal,
                                self.operators, self._done + self._current.prompts, self.total,
                                self.may_stop_early, metrics, now - self._started,
                                self._started_wall, self._requested, self._queued)

    def _report(self) -> None:
        self.listener.report(self.snapshot())

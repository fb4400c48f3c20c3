"""Progress of the AI operators a statement runs, reported while they run.

Contract: an `Executor` given a `ProgressListener` reports to it, in the statement's thread, an
`OperatorProgress` snapshot whenever something about one of its operators changes: when the
operator starts a stage (asking a sample to measure its selectivity, or answering its
candidates), when it sends an engine request, after every engine chunk that held the request's
work (the engine's progress callback), when the request returns, and once at the end of the
stage: `State.DONE` when it asked what it had to, `State.STOPPED` when its statement ended
first (an error, a cancel). Nothing more comes for a stage after its end. A snapshot is a frozen
value — the operator, how many of its candidates are answered out of how many, the engine work
so far, how long it has run, its rate and an estimate of the time left — that `later` ages to a
later moment (the counts stay, the clock runs, the estimate counts down) and `describe()` words
for a NOTICE.

`OperatorRun` is the executor's side: one stage of one operator, its counts, and the snapshots
it reports. Its rates are the engine's between its reports of the last `RATE_WINDOW_S` (at
least the last two; with one report, since the stage started), so they follow the engine when
other statements start or stop sharing it; the time left is the candidates still to answer at
those seconds per prompt (unknown before the engine answered one).
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import time
from collections.abc import Callable
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


RATE_WINDOW_S = 10.0


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
    tokens_per_second: float | None  # input tokens per second of engine time, lately
    seconds_per_prompt: float | None  # of engine time, lately
    since_update: float = 0.0  # seconds since these counts were taken (see `later`)

    def later(self, seconds: float) -> OperatorProgress:
        """The same counts, `seconds` later."""
        return dataclasses.replace(self, elapsed=self.elapsed + seconds,
                                   since_update=self.since_update + seconds)

    @property
    def seconds_left(self) -> float | None:
        """The candidates still to answer at the recent seconds per prompt, less the time
        since the counts were taken."""
        if self.state is not State.RUNNING or self.seconds_per_prompt is None:
            return None
        return max(0.0, max(0, self.total - self.done) * self.seconds_per_prompt
                   - self.since_update)

    def describe(self) -> str:
        """The NOTICE text."""
        op = self.operator
        name = f"{op.label} ({op.call.spelling})"
        if self.ordinal is not None and self.operators > 1:
            name += f", operator {self.ordinal} of {self.operators}"
        if self.stage is Stage.SAMPLING:
            name += ", measuring selectivity on a sample"
        m = self.metrics
        counts = (f"{self.done} of {self.total} prompts answered, {m.input_tokens} input tokens, "
                  f"{m.fresh_tokens} fresh")
        if self.state is State.DONE:  # the stage's rate as a whole
            speed = (f", {m.input_tokens / m.seconds:.0f} input tokens/s"
                     if m.prompts and m.seconds > 0 else "")
            early = " (stopped early: LIMIT reached)" if self.done < self.total else ""
            return f"{name} done: {counts}{speed}, {self.elapsed:.1f} s{early}"
        rate = self.tokens_per_second
        speed = f", {rate:.0f} input tokens/s" if rate is not None else ""
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
                 may_stop_early: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.listener = listener
        self.clock = clock
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
        self._started = self.clock()
        self._started_wall = time.time()
        # The stage's engine work after each engine report (its clock's time, work), oldest
        # first: the rates' window.
        self._history: collections.deque[tuple[float, Metrics]] = collections.deque()
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
        self._requested = self.clock()
        self._queued = True
        self._report()

        def progress(metrics: Metrics) -> None:
            self._current = metrics
            self._queued = False
            self._observe()
            self._report()

        return progress

    def returned(self, after: Metrics) -> None:
        """The request in flight was answered; the stage's engine work is now `after`."""
        self._done += after.prompts - self._before.prompts
        self._before = dataclasses.replace(after)
        self._current = Metrics()
        self._requested = None
        self._queued = False
        self._observe()
        self._report()

    def end(self, state: State) -> None:
        """The stage ended (DONE or STOPPED); reported once, later calls do nothing."""
        if self.state is State.RUNNING:
            self.state = state
            self._requested = None
            self._queued = False
            self._report()

    def _work(self, now: float) -> Metrics:
        """The stage's engine work until `now`: the request in flight counts as it goes."""
        if self._requested is None:
            return self._before
        return self._before + dataclasses.replace(self._current, seconds=now - self._requested)

    def _observe(self) -> None:
        """Keep the engine's latest report, and the one just older than the window."""
        now = self.clock()
        self._history.append((now, self._work(now)))
        while len(self._history) > 2 and now - self._history[1][0] >= RATE_WINDOW_S:
            self._history.popleft()

    def _rates(self) -> tuple[float | None, float | None]:
        """(input tokens per second, seconds per prompt) of the engine between the oldest
        report kept and the latest (the start's warm-up and queueing left out); from the
        stage's start while there is one report, or that span answered nothing."""
        if not self._history:
            return None, None
        latest = self._history[-1][1]
        for since in (self._history[0][1], Metrics()):
            prompts, seconds = latest.prompts - since.prompts, latest.seconds - since.seconds
            if prompts > 0 and seconds > 0:
                return (latest.input_tokens - since.input_tokens) / seconds, seconds / prompts
        return None, None

    def snapshot(self) -> OperatorProgress:
        now = self.clock()
        tokens_per_second, seconds_per_prompt = self._rates()
        return OperatorProgress(self.operator, self.stage, self.state, self.ordinal,
                                self.operators, self._done + self._current.prompts, self.total,
                                self.may_stop_early, self._work(now), now - self._started,
                                self._started_wall, self._requested, self._queued,
                                tokens_per_second, seconds_per_prompt)

    def _report(self) -> None:
        self.listener.report(self.snapshot())

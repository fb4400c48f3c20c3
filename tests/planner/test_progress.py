"""Progress reports of running AI operators (planner.progress), through the real executor and a
real engine: a tiny random-weight Qwen3 in process, with small chunks so that one statement's
engine request reports progress several times."""

from __future__ import annotations

import dataclasses

import pytest

from heron import engine
from heron.catalog import Database
from heron.engine.api import Metrics
from heron.planner import Planner, SqlError, SqlState
from heron.planner.progress import OperatorProgress, OperatorRun, Stage, State

DOCUMENTS = 40


@pytest.fixture(scope="module")
def small_chunks(tiny_qwen3):
    from heron.engine.local import LocalEngine

    instance = LocalEngine(engine.EngineConfig(model=str(tiny_qwen3[0]), chunk_tokens=64,
                                               prefix_block_tokens=16))
    yield instance
    instance.close()


class Recorder:
    """A progress listener keeping every snapshot (optionally acting on each)."""

    def __init__(self) -> None:
        self.seen: list[OperatorProgress] = []
        self.on_report = None

    def report(self, progress: OperatorProgress) -> None:
        self.seen.append(progress)
        if self.on_report is not None:
            self.on_report(progress)


@pytest.fixture
def recorded(tmp_path, small_chunks):
    database = Database(tmp_path, load_demo=False)
    con = database.connect()
    con.execute(f"CREATE TABLE docs AS SELECT i AS id, 'Document ' || i || ' tells of ' || "
                f"repeat('many things ', i % 7 + 1) AS body FROM range({DOCUMENTS}) t(i)")
    recorder = Recorder()
    planner = Planner(con, small_chunks, progress=recorder)
    yield planner, recorder
    database.close()


def run(planner: Planner, sql: str):
    result = planner.execute(planner.prepare(sql))
    result.rows.read_all()
    return result


def test_a_filter_reports_growing_progress_then_done(recorded):
    planner, recorder = recorded
    result = run(planner, "SELECT id FROM docs WHERE AI.IF(('Is it long? ', body))")
    seen = recorder.seen
    first, last = seen[0], seen[-1]
    assert (first.stage, first.state, first.done, first.total) == (
        Stage.ANSWERING, State.RUNNING, 0, DOCUMENTS)
    assert (first.ordinal, first.operators, first.may_stop_early) == (1, 1, False)
    assert last.state is State.DONE and last.done == last.total == DOCUMENTS
    # Counts and engine work only grow, and the engine reported between start and end.
    for before, after in zip(seen, seen[1:], strict=False):
        assert after.done >= before.done
        assert after.metrics.input_tokens >= before.metrics.input_tokens
    assert len({p.done for p in seen if 0 < p.done < DOCUMENTS}) >= 2
    # The request is queued until the engine's first chunk of it comes back.
    assert seen[1].queued and seen[1].requested is not None
    assert not seen[-2].queued and seen[-2].metrics.prompts > 0
    # The last report is the operator's work, as the statement's result tells it.
    work = result.work[0].metrics
    assert dataclasses.replace(last.metrics, seconds=0) == dataclasses.replace(work, seconds=0)
    assert last.metrics.seconds == pytest.approx(work.seconds)


def test_answers_from_the_store_count_as_done_without_a_request(recorded):
    planner, recorder = recorded
    sql = "SELECT id FROM docs WHERE AI.IF(('Is it short? ', body))"
    run(planner, sql)
    recorder.seen.clear()
    run(planner, sql)
    assert [(p.state, p.done) for p in recorder.seen] == [
        (State.RUNNING, 0), (State.RUNNING, DOCUMENTS), (State.DONE, DOCUMENTS)]
    assert all(p.requested is None for p in recorder.seen)


def test_unknown_selectivities_are_measured_in_a_sampling_stage_first(recorded):
    planner, recorder = recorded
    run(planner, "SELECT id FROM docs WHERE AI.IF(('Is it about birds? ', body)) "
                 "AND AI.IF(('Is it about trees? ', body))")
    stages = [(p.stage, p.ordinal) for p in recorder.seen if p.state is State.DONE]
    assert stages[:2] == [(Stage.SAMPLING, None)] * 2
    assert stages[2:] == [(Stage.ANSWERING, 1), (Stage.ANSWERING, 2)]
    sampled = [p for p in recorder.seen if p.stage is Stage.SAMPLING]
    assert all(p.total == 8 and p.operators == 2 for p in sampled)


def test_under_a_limit_the_stage_may_stop_early(recorded):
    planner, recorder = recorded
    run(planner, "SELECT id FROM docs WHERE AI.IF(('Does it tell of things? ', body)) LIMIT 1")
    last = recorder.seen[-1]
    assert last.may_stop_early and last.state is State.DONE
    assert last.done < last.total == DOCUMENTS
    assert "stopped early" in last.describe()


def test_a_cancelled_statement_ends_its_stage_stopped(recorded):
    planner, recorder = recorded

    def cancel_once_answering(progress: OperatorProgress) -> None:
        if progress.metrics.prompts:
            planner.interrupt()

    recorder.on_report = cancel_once_answering
    with pytest.raises(SqlError) as caught:
        run(planner, "SELECT id FROM docs WHERE AI.IF(('Is it about fish? ', body))")
    assert caught.value.sqlstate == SqlState.QUERY_CANCELED
    last = recorder.seen[-1]
    assert last.state is State.STOPPED and last.done < DOCUMENTS
    assert last.seconds_left is None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_rates_and_time_left_follow_the_last_seconds_of_engine_work(recorded):
    planner, recorder = recorded
    run(planner, "SELECT id FROM docs WHERE AI.IF(('Is it about rain? ', body))")
    operator = recorder.seen[0].operator
    listener, clock = Recorder(), Clock()
    stage = OperatorRun(listener, operator, 1, Stage.ANSWERING, 100, ordinal=1, clock=clock)
    assert listener.seen[-1].seconds_left is None  # nothing answered yet
    assert "time left unknown yet" in listener.seen[-1].describe()
    progress = stage.request(100, Metrics())
    clock.now = 10.0  # 10 prompts in the first 10 s: one a second
    progress(Metrics(prompts=10, input_tokens=1000, fresh_tokens=1000))
    first = listener.seen[-1]
    assert (first.done, first.tokens_per_second, first.seconds_per_prompt) == (10, 100, 1)
    assert first.seconds_left == 90
    assert "10 of 100 prompts answered, 1000 input tokens, 1000 fresh, 100 input tokens/s, " \
           "10.0 s elapsed, about 90 s left" in first.describe()
    # The clock runs between reports: the estimate counts down, the counts stay.
    aged = first.later(4.0)
    assert (aged.done, aged.elapsed, aged.seconds_left) == (10, 14.0, 86)
    clock.now = 45.0  # then 70 more in 35 s: the window forgets the slow start
    progress(Metrics(prompts=80, input_tokens=5000, fresh_tokens=5000))
    fast = listener.seen[-1]
    assert fast.seconds_per_prompt == pytest.approx(35 / 70)
    assert fast.tokens_per_second == pytest.approx(4000 / 35)
    assert fast.seconds_left == pytest.approx(20 * 0.5)
    clock.now = 46.0
    stage.returned(Metrics(prompts=100, input_tokens=6000, fresh_tokens=6000, seconds=46.0))
    stage.end(State.DONE)
    done = listener.seen[-1]
    assert done.seconds_left is None
    assert done.describe().endswith(" done: 100 of 100 prompts answered, 6000 input tokens, "
                                    "6000 fresh, 130 input tokens/s, 46.0 s")
    assert "at most" in dataclasses.replace(first, may_stop_early=True).describe()

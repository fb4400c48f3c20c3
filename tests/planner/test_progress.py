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
from heron.planner.progress import OperatorProgress, Stage, State

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


def _progress(recorded_progress: OperatorProgress, **changes) -> OperatorProgress:
    return dataclasses.replace(recorded_progress, **changes)


def test_rate_and_time_left_come_from_the_engine_work_so_far(recorded):
    planner, recorder = recorded
    run(planner, "SELECT id FROM docs WHERE AI.IF(('Is it about rain? ', body))")
    base = recorder.seen[0]
    running = _progress(base, done=10, total=40, metrics=Metrics(
        prompts=8, input_tokens=400, fresh_tokens=300, cached_tokens=100, seconds=2.0))
    assert running.tokens_per_second == 200
    assert running.seconds_left == pytest.approx(30 * 2.0 / 8)  # 30 left at 0.25 s a prompt
    assert "10 of 40 prompts answered" in running.describe()
    assert "about 8 s left" in running.describe()
    assert "at most 8 s left" in _progress(running, may_stop_early=True).describe()
    # Before the engine answered anything neither is known.
    unknown = _progress(base, metrics=Metrics(seconds=1.0))
    assert unknown.tokens_per_second is None and unknown.seconds_left is None
    assert "time left unknown yet" in unknown.describe()
    done = _progress(running, state=State.DONE, done=40)
    assert done.seconds_left is None and " done: 40 of 40 prompts answered" in done.describe()

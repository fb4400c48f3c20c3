"""An operator's prompts reach the engine in parts (one streamed call), with a real tiny engine:
the same answers and work as one request, the answer store consulted and filled per part,
progress and metrics adding up over parts, cancel mid-parts and the token budget (a prompt too
long in a late part: `test_bounds`)."""

from __future__ import annotations

import dataclasses
import threading

import duckdb
import pytest

from heron.engine.api import Metrics
from heron.planner import Planner, SqlError, SqlState, executor
from heron.planner.progress import OperatorProgress, Stage, State

FILTER = "SELECT id, AI.IF(('Is the plot long? ', body)) AS long FROM docs ORDER BY id"
JOIN = ("SELECT d.id, t.id FROM docs d JOIN topics t ON AI_FILTER(PROMPT("
        "'Document: {0} Does it mention {1}?', d.body, t.name)) ORDER BY 1, 2")


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute("CREATE TABLE docs AS SELECT range AS id, 'Document ' || range || ': a plot '"
                " || repeat('that winds ', (range % 4)::INTEGER) AS body FROM range(30)")
    con.execute("CREATE TABLE topics AS SELECT range AS id, 'topic ' || range AS name "
                "FROM range(3)")
    yield con
    con.close()


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "PART_FIRST", 4)
    monkeypatch.setattr(executor, "PART_MOST", 8)


class _Listener:
    def __init__(self) -> None:
        self.seen: list[OperatorProgress] = []

    def report(self, progress: OperatorProgress) -> None:
        self.seen.append(progress)


class _Parts:
    """The engine, with the parts of each call it was given."""

    def __init__(self, inner, after_part=None) -> None:  # noqa: ANN001 - any Engine
        self.inner, self.info, self.calls, self.checked = inner, inner.info, [], 0
        self.after_part = after_part  # called once a part was taken

    def answer(self, request, cancel=None, progress=None, *, more=()):  # noqa: ANN001, ANN201
        parts = [len(request.prompts)]
        self.calls.append(parts)
        return self.inner.answer(request, cancel, progress, more=self._counted(more, parts))

    def _counted(self, more, parts):  # noqa: ANN001, ANN202
        for part in more:
            parts.append(len(part))
            yield part
            if self.after_part is not None:
                self.after_part()

    def check(self, request) -> None:  # noqa: ANN001
        self.checked += 1
        self.inner.check(request)

    def count_tokens(self, texts):  # noqa: ANN001, ANN201
        return self.inner.count_tokens(texts)


def _rows(result) -> list:  # noqa: ANN001
    return [tuple(r.values()) for r in result.rows.read_all().to_pylist()]


def _answers(planner: Planner, sql: str) -> tuple[list, Metrics]:
    result = planner.execute(planner.prepare(sql))
    return _rows(result), result.work[0].metrics


def test_parts_answer_like_one_request(con, tiny_engine, monkeypatch) -> None:  # noqa: ANN001
    planner = Planner(con, tiny_engine)
    planner.publish_settings({"heron.reuse_answers": "off"})
    whole = {sql: _answers(planner, sql) for sql in (FILTER, JOIN)}
    engine = _Parts(tiny_engine)
    planner = Planner(con, engine)
    planner.publish_settings({"heron.reuse_answers": "off"})
    monkeypatch.setattr(executor, "PART_FIRST", 4)
    monkeypatch.setattr(executor, "PART_MOST", 8)
    for sql, (rows, metrics) in whole.items():
        engine.calls.clear()
        got, parted = _answers(planner, sql)
        assert got == rows
        assert (parted.prompts, parted.input_tokens) == (metrics.prompts, metrics.input_tokens)
        assert sum(engine.calls[-1]) == metrics.prompts
        if sql == FILTER:
            assert engine.calls[-1][:3] == [4, 8, 8]
        else:  # the join's first part is its leaders: one pair of each anchor
            leaders = engine.calls[-1][0]
            assert 2 <= leaders < 4 and engine.calls[-1][1:3] == [2 * leaders, 8]
    assert engine.checked == 2  # every prompt checked, once the first part was sent


def test_the_answer_store_is_consulted_and_filled_per_part(con, tiny_engine,  # noqa: ANN001
                                                           small_parts) -> None:
    engine = _Parts(tiny_engine)
    planner = Planner(con, engine)
    some = _answers(planner, FILTER.replace("FROM docs", "FROM docs WHERE id % 3 = 0"))[0]
    listener = _Listener()
    planner.executor.progress = listener
    rows, metrics = _answers(planner, FILTER)
    assert {r for r in rows if r[0] % 3 == 0} == set(some)
    assert metrics.prompts == 20  # the 10 stored were not asked
    work = planner.execute(planner.prepare(FILTER)).work[0]
    assert work.reused == 30 and work.metrics.prompts == 0  # all from the store now
    done = [p for p in listener.seen if p.state is State.DONE and p.stage is Stage.ANSWERING]
    assert done[0].done == done[0].total == 30 and done[0].metrics.prompts == 20


def test_progress_and_metrics_add_up_over_parts(con, tiny_engine, small_parts) -> None:  # noqa: ANN001
    planner = Planner(con, tiny_engine)
    planner.publish_settings({"heron.reuse_answers": "off"})
    listener = _Listener()
    planner.executor.progress = listener
    result = planner.execute(planner.prepare(JOIN))
    metrics = result.work[0].metrics
    assert metrics.prompts == 90 and metrics.first_chunk_at is not None
    running = [p for p in listener.seen if p.state is State.RUNNING and p.metrics.prompts]
    assert [p.done for p in running] == sorted(p.done for p in running)
    assert all(p.done <= p.total == 90 for p in listener.seen)
    last = listener.seen[-1]
    assert last.state is State.DONE and last.done == 90 and last.metrics.prompts == 90
    assert last.metrics.input_tokens == metrics.input_tokens
    lines = [r[0] for r in _rows(planner.execute(planner.prepare("EXPLAIN ANALYZE " + JOIN)))]
    actual = next(line.split() for line in lines if line.split()[0] == "prompts")
    assert actual[-1] == "90"


def test_cancel_mid_parts_stops_the_statement(con, tiny_engine, small_parts) -> None:  # noqa: ANN001
    """The statement is cancelled (from another thread) while its third part is made."""
    planner = Planner(con, tiny_engine)

    def cancel() -> None:
        thread = threading.Thread(target=planner.interrupt)
        thread.start()
        thread.join()

    engine = _Parts(tiny_engine, after_part=cancel)
    planner.engine = engine
    planner.publish_settings({"heron.reuse_answers": "off"})
    with pytest.raises(SqlError) as info:
        planner.execute(planner.prepare(JOIN))
    assert info.value.sqlstate is SqlState.QUERY_CANCELED
    assert engine.calls[-1] == [3, 6, 8]  # the part made when the cancel came was the last
    # (the first part is the 3 leaders: one pair of each topic, the anchors)
    assert not tiny_engine.scheduler.jobs  # the call was withdrawn
    engine.after_part = None
    rows, metrics = _answers(planner, FILTER)  # the engine still serves
    assert len(rows) == 30 and metrics.prompts == 30


def test_the_token_budget_stops_a_statement_mid_parts(con, tiny_engine, small_parts) -> None:  # noqa: ANN001
    engine = _Parts(tiny_engine)
    planner = Planner(con, engine)
    planner.publish_settings({"heron.reuse_answers": "off", "heron.max_tokens": "100000"})
    spent = _answers(planner, FILTER)[1].input_tokens
    planner.publish_settings({"heron.reuse_answers": "off",
                              "heron.max_tokens": str(spent // 2)})
    with pytest.raises(SqlError, match="statement (stopped|would have)") as info:
        planner.execute(planner.prepare(FILTER))
    assert info.value.sqlstate is SqlState.PROGRAM_LIMIT_EXCEEDED



class _FirstPart(_Parts):
    """The engine, keeping the prompts of the first part of each call; `chunk_tokens` as its
    info says."""

    def __init__(self, inner, chunk_tokens: int) -> None:  # noqa: ANN001 - any Engine
        super().__init__(inner)
        self.info = dataclasses.replace(inner.info, chunk_tokens=chunk_tokens)
        self.first: list = []

    def answer(self, request, cancel=None, progress=None, *, more=()):  # noqa: ANN001, ANN201
        self.first.append(request.prompts)
        self.sent = list(request.prompts)
        return super().answer(request, cancel, progress, more=self._sent(more))

    def _sent(self, more):  # noqa: ANN001, ANN202
        for part in more:
            self.sent += part
            yield part


@pytest.mark.parametrize(("chunk_tokens", "leaders"), [(4096, 3), (90, 2), (1, 1)])
def test_a_join_leads_with_one_pair_of_as_many_anchors_as_a_chunk_computes(  # noqa: ANN001
        con, tiny_engine, chunk_tokens: int, leaders: int) -> None:
    """The first prompts a join sends are one pair of each of the first anchors (the topics:
    their documents then fill the engine's first chunk), then the pairs anchor by anchor; the
    answers do not depend on it."""
    planner = Planner(con, tiny_engine)
    planner.publish_settings({"heron.reuse_answers": "off"})
    rows, metrics = _answers(planner, JOIN)
    engine = _FirstPart(tiny_engine, chunk_tokens)
    planner = Planner(con, engine)
    planner.publish_settings({"heron.reuse_answers": "off"})
    got, led = _answers(planner, JOIN)
    assert got == rows and (led.prompts, led.input_tokens) == (metrics.prompts,
                                                               metrics.input_tokens)
    prefixes = [p.prefix for p in engine.sent]
    assert len(set(prefixes)) == 3 and len(set(prefixes[:leaders])) == leaders
    if leaders > 1:  # the leaders are the first part: the engine starts on their documents
        assert len(engine.first[-1]) == leaders
    rest = prefixes[leaders:] if leaders > 1 else prefixes
    runs = sum(1 for a, b in zip(rest, rest[1:], strict=False) if a != b) + 1
    assert runs == 3  # then anchor by anchor


def test_prompts_render_as_they_are_read() -> None:
    """`_Rendered` renders up to the prompt read, in order, and reads like a list."""
    made: list[int] = []

    def rendering():  # noqa: ANN202
        for i in range(10):
            made.append(i)
            yield i

    prompts = executor._Rendered(rendering(), 10)
    assert prompts[2] == 2 and made == [0, 1, 2]
    assert prompts[-3] == 7 and len(made) == 8
    assert list(prompts) == list(range(10)) and prompts[3:5] == [3, 4] and len(prompts) == 10
    with pytest.raises(IndexError):
        prompts[10]

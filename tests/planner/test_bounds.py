"""Bounded AI work in the planner: EXPLAIN returns within a second on any table size (it never
runs the candidate query), `heron.max_tokens` refuses a statement whose estimate exceeds it and
stops one whose work passes it, and a prompt longer than the model's context is refused with
54000 before the model runs."""

from __future__ import annotations

import time

import duckdb
import pytest
from support.hash_engine import HashEngine

from heron.planner import Planner, SqlError, SqlState


@pytest.fixture(scope="module")
def big():
    """10k x 10k documents for a join, and a view of a billion rows."""
    con = duckdb.connect()
    con.execute("CREATE TABLE a AS SELECT range AS id, 'document ' || range || ' about things' "
                "AS body FROM range(10000)")
    con.execute("CREATE TABLE b AS SELECT range AS id, 'other ' || range AS body "
                "FROM range(10000)")
    con.execute("CREATE VIEW billion AS SELECT range AS id, 'row ' || range AS body "
                "FROM range(1000000000)")
    yield con
    con.close()


def _lines(planner: Planner, sql: str) -> list[str]:
    result = planner.execute(planner.prepare(sql))
    assert result.rows is not None
    return result.rows.read_all().column(0).to_pylist()


def _estimated(lines: list[str], label: str) -> str:
    return next(line.split()[-1] for line in lines if line.strip().startswith(label))


@pytest.mark.parametrize(("sql", "candidates"), [
    ("SELECT a.id, b.id FROM a JOIN b ON AI_FILTER(PROMPT('Is {0} like {1}?', a.body, b.body))",
     10**8),
    ("SELECT id FROM billion WHERE AI.IF(('Is it good? ', body))", 10**9),
    ("SELECT id FROM billion WHERE id % 3 = 0 AND AI.IF(('Is it good? ', body)) "
     "AND AI.IF(('Is it bad? ', body))", None),
])
def test_explain_returns_within_a_second_on_any_size(big, sql, candidates):
    planner = Planner(big, HashEngine())
    started = time.monotonic()
    lines = _lines(planner, "EXPLAIN " + sql)
    assert time.monotonic() - started < 1.0
    estimated = _estimated(lines, "candidates")
    assert estimated.startswith("~")  # too many to count: DuckDB's estimate
    if candidates is not None:
        assert float(estimated[1:]) == candidates
    assert float(_estimated(lines, "input tokens")[1:]) > 0  # from the first rows found
    assert not planner.executor.engine.requests  # nothing asked


def test_explain_counts_exactly_when_counting_is_cheap(big):
    planner = Planner(big, HashEngine())
    lines = _lines(planner, "EXPLAIN SELECT id FROM a WHERE id < 100 AND AI.IF(('Good? ', body))")
    assert _estimated(lines, "candidates") == "100"


def test_a_statement_over_its_token_budget_is_refused_before_it_runs(big):
    engine = HashEngine()
    planner = Planner(big, engine)
    planner.publish_settings({"heron.max_tokens": "1000"})
    sql = "SELECT id FROM a WHERE id < 200 AND AI.IF(('Is it good? ', body))"
    lines = _lines(planner, "EXPLAIN " + sql)
    assert any(line.startswith("Token budget (heron.max_tokens): 1000; estimated")
               and "refused" in line for line in lines)
    with pytest.raises(SqlError) as info:
        planner.execute(planner.prepare(sql))
    assert info.value.sqlstate is SqlState.PROGRAM_LIMIT_EXCEEDED
    assert "more than heron.max_tokens allows (1,000)" in info.value.message
    assert "SET heron.max_tokens" in info.value.hint
    assert not engine.requests
    planner.publish_settings({"heron.max_tokens": "100000"})
    result = planner.execute(planner.prepare(sql))
    assert result.rows is not None and result.work[0].metrics.prompts == 200


def test_a_statement_that_passes_its_budget_while_running_is_stopped(big):
    """The estimate assumes half the rows pass the first question; all do, so the second asks
    twice the rows the estimate counted on."""
    engine = HashEngine(rates={"Always": 1.0})
    planner = Planner(big, engine)
    sql = ("SELECT id FROM a WHERE id < 400 AND AI.IF(('Always so? ', body)) "
           "AND AI.IF(('Is it good? ', body))")
    planner.publish_settings({"heron.order": "as_written", "heron.max_tokens": "1000000000"})
    estimate = float(next(line for line in _lines(planner, "EXPLAIN " + sql)
                          if line.startswith("Token budget")).split()[5])
    budget = int(estimate * 1.15)
    planner.publish_settings({"heron.order": "as_written", "heron.max_tokens": str(budget)})
    with pytest.raises(SqlError, match=r"statement stopped: it had the model read [\d,]+ "
                                       r"tokens, more than heron.max_tokens allows") as info:
        planner.execute(planner.prepare(sql))
    assert info.value.sqlstate is SqlState.PROGRAM_LIMIT_EXCEEDED
    assert len(engine.requests) == 2  # the first question ran, the second was stopped


def test_a_bad_budget_is_refused_like_a_postgres_setting(big):
    planner = Planner(big, HashEngine())
    with pytest.raises(SqlError, match='invalid value for parameter "heron.max_tokens": "-5"'):
        planner.publish_settings({"heron.max_tokens": "-5"})


@pytest.mark.parametrize("parts", ["one part", "parts of 4 and 8"])
def test_a_prompt_longer_than_the_context_is_refused_with_54000(tiny_llama3, parts,
                                                                 monkeypatch):
    """Also when the operator's prompts go to the engine in parts and the long one is in a
    late part: every prompt is checked before the second part is sent."""
    from heron.engine.config import EngineConfig
    from heron.engine.local import LocalEngine
    from heron.planner import executor

    if parts != "one part":
        monkeypatch.setattr(executor, "PART_FIRST", 4)
        monkeypatch.setattr(executor, "PART_MOST", 8)
    engine = LocalEngine(EngineConfig(model=str(tiny_llama3[0])))  # 256 tokens of context
    con = duckdb.connect()
    con.execute("CREATE TABLE docs AS SELECT range AS id, CASE WHEN range = 37 THEN "
                "repeat('many words ', 300) ELSE 'short ' || range END AS body FROM range(40)")
    planner = Planner(con, engine)
    with pytest.raises(SqlError) as info:
        planner.execute(planner.prepare("SELECT id FROM docs WHERE AI.IF(('Long? ', body))"))
    error = info.value
    assert error.sqlstate is SqlState.PROGRAM_LIMIT_EXCEEDED
    assert "more than the model's context of 256 tokens" in error.message
    assert "many words" in error.detail and "left(body" in error.hint
    # Refused before the model ran more than the first part (4 short prompts: one chunk).
    assert engine.scheduler.steps <= (0 if parts == "one part" else 1)
    engine.close()

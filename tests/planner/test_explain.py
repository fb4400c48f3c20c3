"""EXPLAIN on every statement shape without asking the model; EXPLAIN ANALYZE with estimates
and actual work side by side; refusals that say what to write instead."""

import pytest
from support.hash_engine import HashEngine
from support.shapes import SHAPES

from heron.planner import Planner, SqlError


def explain(planner: Planner, sql: str) -> list[str]:
    result = planner.execute(planner.prepare(sql))
    return result.rows.read_all().column(0).to_pylist()


@pytest.mark.parametrize(("sql", "compare"), SHAPES)
def test_explain_plans_every_shape_without_asking(con, sql, compare):
    engine = HashEngine()
    planner = Planner(con.cursor(), engine)
    lines = explain(planner, "EXPLAIN " + sql)
    operators = [line for line in lines if line.split("#")[0].strip() in {
        "AI Filter", "AI Join", "AI Column", "AI Score", "AI Classify", "AI Complete"}]
    assert len(operators) == len(planner.prepare(sql).ai.operators)
    assert lines[-1].startswith("Relational part (DuckDB): ")
    assert engine.prompts == 0


def test_explain_without_a_model(con):
    planner = Planner(con.cursor(), None)
    lines = explain(planner, "EXPLAIN SELECT id FROM reviews WHERE AI.IF(('Is it good? ', body))"
                             " AND AI.IF(('Is it short? ', title))")
    assert sum(line.startswith("AI Filter #") for line in lines) == 2
    with pytest.raises(SqlError) as info:
        explain(planner, "EXPLAIN ANALYZE SELECT id FROM reviews WHERE AI.IF(('x ', body))")
    assert info.value.sqlstate == "55000"


def test_analyze_shows_estimates_beside_the_actual_work(con):
    planner = Planner(con.cursor(), HashEngine())
    lines = explain(planner, "EXPLAIN ANALYZE SELECT r.id FROM reviews r JOIN aspects a ON "
                             "AI_FILTER(PROMPT('Does {0} discuss {1}?', r.body, a.aspect)) "
                             "WHERE AI.IF(('Is it positive? ', r.body))")
    table = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("  ")
             and line.split()[0] in {"prompts", "candidates"}}
    header = next(line for line in lines if "estimated" in line)
    assert header.split() == ["estimated", "actual"]
    assert len(table["prompts"]) == 2  # estimated, actual
    assert any(line.startswith("  Anchor: ") for line in lines)
    assert lines[-1].startswith("Result: ")


@pytest.mark.parametrize(("sql", "sqlstate", "hint"), [
    ("SELECT AI.IF(('x ', upper(r.body || a.aspect))) FROM reviews r, aspects a", "0A000",
     "separate prompt values"),
    ("SELECT 1 FROM reviews r, aspects a, movies m WHERE AI.IF(PROMPT('Do {0}, {1} and {2} "
     "agree?', r.body, a.aspect, m.plot))", "0A000", "one AI function per pair"),
    ("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE "
     "AI.IF(('Go on? ', n::VARCHAR))) SELECT * FROM t", "0A000", "CREATE TEMP TABLE"),
    ("SELECT AI.IF(('Is it big? ', random()::VARCHAR))", "0A000", "Materialize it first"),
    ("SELECT AI_SENTIMENT(body) FROM reviews", "0A000", "AI.CLASSIFY"),
    ("SELECT AI.CLASSIFY(body, ['only']) FROM reviews", "22023", "AI.CLASSIFY(body, ["),
    ("SELECT AI_COMPLETE(body, 'long') FROM reviews", "22023", "AI_COMPLETE(("),
    ("SELECT AI.IF(body) FROM reviews", "22023", "AI.IF(("),
    ("ALTER TABLE reviews ADD COLUMN x BOOLEAN DEFAULT AI.IF('y')", "0A000", "SELECT"),
])
def test_refusals_say_what_to_write_instead(con, sql, sqlstate, hint):
    planner = Planner(con.cursor(), HashEngine())
    with pytest.raises(SqlError) as info:
        planner.execute(planner.prepare(sql))
    assert info.value.sqlstate == sqlstate
    assert hint in (info.value.hint or ""), info.value


def test_a_plain_statement_is_untouched(con):
    planner = Planner(con.cursor(), HashEngine())
    assert planner.prepare("SELECT count(*) FROM reviews").ai is None

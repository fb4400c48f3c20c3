"""EXPLAIN of statements DuckDB runs: PostgreSQL's options, QUERY PLAN rows, tag EXPLAIN."""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import Planner, pg_semantics, relational_explain
from heron.planner.errors import SqlError, SqlState
from heron.planner.relational_explain import Explained


@pytest.fixture
def planner() -> Planner:
    con = duckdb.connect()
    pg_semantics.configure(con)
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("INSERT INTO items VALUES (1, 'a'), (2, 'b')")
    return Planner(con)


@pytest.mark.parametrize(("sql", "expected"), [
    ("EXPLAIN SELECT 1", Explained(False, "SELECT 1")),
    ("explain analyze select 1", Explained(True, "select 1")),
    ("EXPLAIN VERBOSE SELECT 1", Explained(False, "SELECT 1")),
    ("EXPLAIN ANALYZE VERBOSE SELECT 1", Explained(True, "SELECT 1")),
    ("EXPLAIN (ANALYZE, BUFFERS) SELECT 1", Explained(True, "SELECT 1")),
    ("EXPLAIN (ANALYZE off, COSTS false, FORMAT TEXT) SELECT 1", Explained(False, "SELECT 1")),
    ("EXPLAIN (costs off)\nSELECT (1)", Explained(False, "SELECT (1)")),
    ("SELECT 1", None),
])
def test_read(sql, expected):
    assert relational_explain.read(sql) == expected


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("EXPLAIN (FORMAT JSON) SELECT 1", SqlState.FEATURE_NOT_SUPPORTED),
    ("EXPLAIN (FORMAT CSV) SELECT 1", SqlState.INVALID_PARAMETER_VALUE),
    ("EXPLAIN (COSTS maybe) SELECT 1", SqlState.SYNTAX_ERROR),
    ("EXPLAIN (FOO) SELECT 1", SqlState.SYNTAX_ERROR),
])
def test_refused_options(sql, sqlstate):
    with pytest.raises(SqlError) as caught:
        relational_explain.read(sql)
    assert caught.value.sqlstate is sqlstate


def test_plans_are_query_plan_rows(planner):
    stmt = planner.prepare("EXPLAIN (COSTS OFF) SELECT name FROM items WHERE id = $1")
    assert stmt.param_count == 1
    assert [c.name for c in planner.describe(stmt)] == ["QUERY PLAN"]
    result = planner.execute(stmt, (1,))
    lines = result.rows.next().column(0).to_pylist()
    assert result.command_tag == "EXPLAIN" and [c.name for c in result.columns] == ["QUERY PLAN"]
    assert len(lines) > 1 and any("items" in line for line in lines)
    assert all("\n" not in line for line in lines)


def test_explain_analyze_runs_the_statement(planner):
    result = planner.execute(planner.prepare(
        "EXPLAIN ANALYZE INSERT INTO items VALUES (3, 'c')"))
    assert result.command_tag == "EXPLAIN"
    assert planner.con.execute("SELECT count(*) FROM items").fetchone() == (3,)
    with pytest.raises(SqlError) as caught:  # PostgreSQL's error, not a plan
        planner.execute(planner.prepare("EXPLAIN SELECT * FROM missing"))
    assert caught.value.sqlstate is SqlState.UNDEFINED_TABLE

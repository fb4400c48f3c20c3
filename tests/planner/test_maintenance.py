"""VACUUM, ANALYZE, REINDEX and CLUSTER with PostgreSQL's options (`planner.maintenance`)
through the planner facade: names looked up, DuckDB's statistics refreshed where they analyze."""

from __future__ import annotations

import pytest
from support.planning import run

from heron.planner.errors import SqlError


@pytest.mark.parametrize("sql", [
    "VACUUM", "VACUUM s", "VACUUM FULL FREEZE VERBOSE ANALYZE s",
    "VACUUM (VERBOSE, ANALYZE) s (v), s",
    "ANALYZE", "ANALYSE VERBOSE s (id)", "ANALYZE (VERBOSE) s", "REINDEX TABLE s",
    "REINDEX INDEX s_v", "REINDEX SCHEMA main", "REINDEX DATABASE memory",
    "REINDEX (VERBOSE) TABLE CONCURRENTLY s", "CLUSTER", "CLUSTER VERBOSE s USING s_v",
])
def test_accepted_and_tagged_by_their_command(planner, sql):
    run(planner, "CREATE TABLE s (id int PRIMARY KEY, v int)")
    run(planner, "CREATE INDEX s_v ON s (v)")
    assert planner.execute(planner.prepare(sql)).command_tag == sql.split()[0].replace(
        "ANALYSE", "ANALYZE")


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("VACUUM nope", "42P01"), ("ANALYZE s, nope", "42P01"), ("REINDEX INDEX nope", "42P01"),
    ("REINDEX SCHEMA nope", "3F000"), ("REINDEX DATABASE other", "0A000"),
    ("CLUSTER s", "42704"), ("CLUSTER s USING nope", "42704"),
])
def test_missing_names_are_postgresql_s_errors(planner, sql, sqlstate):
    run(planner, "CREATE TABLE s (id int PRIMARY KEY, v int)")
    run(planner, "CREATE INDEX s_v ON s (v)")
    with pytest.raises(SqlError) as info:
        run(planner, sql)
    assert info.value.sqlstate.value == sqlstate

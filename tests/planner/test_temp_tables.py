"""Temporary tables' ON COMMIT DROP and DELETE ROWS (`planner.temp_tables`) through the planner
facade, in transactions and outside them (where DuckDB commits each statement)."""

from __future__ import annotations

import pytest
from support.planning import rows, run

from heron.planner import temp_tables
from heron.planner.errors import SqlError


def test_read_takes_the_clause_out_of_the_statement_only():
    read = temp_tables.read("CREATE TEMP TABLE t (a text DEFAULT 'ON COMMIT DROP') ON COMMIT "
                            "DELETE ROWS")
    assert read == temp_tables.OnCommit(
        "CREATE TEMP TABLE t (a text DEFAULT 'ON COMMIT DROP')", "t", False)
    assert temp_tables.read("CREATE TEMP TABLE t (a text DEFAULT 'ON COMMIT DROP')") is None
    assert temp_tables.read("CREATE TEMP TABLE t ON COMMIT DROP AS SELECT 1").create == (
        "CREATE TEMP TABLE t AS SELECT 1")
    with pytest.raises(SqlError) as info:
        temp_tables.read("CREATE TABLE t (a int) ON COMMIT DROP")
    assert info.value.sqlstate.value == "42P16"


def test_dropped_or_emptied_at_commit(planner):
    planner.begin()
    run(planner, "CREATE TEMP TABLE d (a int) ON COMMIT DROP")
    run(planner, "INSERT INTO d VALUES (1)")
    assert rows(planner, "SELECT a FROM d") == [(1,)]
    planner.commit()
    with pytest.raises(SqlError):
        run(planner, "SELECT a FROM d")
    run(planner, "CREATE TEMP TABLE e (a int) ON COMMIT DELETE ROWS")
    run(planner, "INSERT INTO e VALUES (1)")  # outside a block: its own transaction
    assert rows(planner, "SELECT count(*) FROM e") == [(0,)]
    planner.begin()
    run(planner, "INSERT INTO e VALUES (2)")
    assert rows(planner, "SELECT a FROM e") == [(2,)]
    planner.commit()
    assert rows(planner, "SELECT count(*) FROM e") == [(0,)]
    planner.begin()
    run(planner, "CREATE TEMP TABLE f ON COMMIT DROP AS SELECT 1 AS x")
    planner.rollback()
    run(planner, "CREATE TEMP TABLE f (a int)")  # the rolled back one is forgotten
    planner.begin()
    run(planner, "INSERT INTO f VALUES (1)")
    planner.commit()
    assert rows(planner, "SELECT a FROM f") == [(1,)]

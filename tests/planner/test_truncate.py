"""TRUNCATE (`planner.truncate`) and sequence restarts (`planner.sequences`) through the planner
facade on a plain DuckDB connection, where they differ from PostgreSQL or are not seen on the
wire (the agreement with PostgreSQL: tests/oracle/test_ddl_statements.py)."""

from __future__ import annotations

import pytest
from support.planning import run

from heron.planner import sequences, truncate
from heron.planner.errors import SqlError
from heron.planner.planner import Planner


def first(planner: Planner, sql: str):
    return list(run(planner, sql).rows.read_all().to_pylist()[0].values())[0]


def test_read():
    assert truncate.read('TRUNCATE TABLE ONLY a, s."B" * RESTART IDENTITY CASCADE;') == \
        truncate.Truncate((("a",), ("s", "B")), True, True)
    assert truncate.read("truncate t") == truncate.Truncate((("t",),), False, False)
    assert truncate.read("TRUNCATE t WHERE x") is None
    assert sequences.read_setval("SELECT setval('s', 1) AS v") is not None
    assert sequences.read_setval("SELECT setval('s', 1), 2") is None


def test_tables_that_reference_each_other_in_a_transaction_block(planner):
    run(planner, "CREATE TABLE p (id serial PRIMARY KEY)")
    run(planner, "CREATE TABLE c (pid int REFERENCES p(id))")
    run(planner, "INSERT INTO p DEFAULT VALUES")
    run(planner, "INSERT INTO c VALUES (1)")
    planner.begin()  # (DuckDB's own keys refused it: `foreign_keys`)
    run(planner, "TRUNCATE c, p")
    assert first(planner, "SELECT count(*) FROM p") == 0
    planner.rollback()
    assert first(planner, "SELECT count(*) FROM c") == 1
    run(planner, "TRUNCATE p CASCADE")
    assert first(planner, "SELECT count(*) FROM c") == 0


def test_a_restart_keeps_the_sequence_s_other_readers_and_options(planner):
    run(planner, "CREATE SEQUENCE shared INCREMENT BY 5 MAXVALUE 1000")
    run(planner, "CREATE TABLE a (id int DEFAULT nextval('shared'), v int)")
    run(planner, "CREATE TABLE b (id int DEFAULT nextval('shared'), v int)")
    assert first(planner, "SELECT setval('shared', 100)") == 100
    assert first(planner, "INSERT INTO a (v) VALUES (1) RETURNING id") == 105
    assert first(planner, "INSERT INTO b (v) VALUES (1) RETURNING id") == 110
    with pytest.raises(SqlError) as info:
        run(planner, "SELECT setval('shared', 1001)")
    assert info.value.sqlstate.value == "22003"

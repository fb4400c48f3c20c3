"""CREATE TABLE ... AS and SELECT ... INTO keep the types the query's columns declare
(`planner.create_table_as`), through the planner facade."""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import column_origins, create_table_as, pg_types
from heron.planner.errors import SqlError
from heron.planner.planner import Planner

JSONB, VARCHAR = pg_types.JSONB.oid, pg_types.VARCHAR.oid


@pytest.fixture
def planner():
    instance = Planner(duckdb.connect())
    for sql in ("CREATE TABLE t (id int, j jsonb, v varchar(3), k json)",
                "INSERT INTO t VALUES (1, '{\"b\": 1, \"a\": 2}', 'abc', '[]')"):
        run(instance, sql)
    yield instance
    instance.close()


def run(planner: Planner, sql: str):
    return planner.execute(planner.prepare(sql))


def declared(planner: Planner, table: str, schema: str = "main") -> list[tuple[str, int, int]]:
    """A table's columns as the catalog declares them: (name, type OID or 0, typmod)."""
    return [(name, o.type_oid, o.typmod) for name, o in column_origins.Relations.load(
        planner.con).by_name[(schema, table)]]


def test_the_query_and_its_options_are_read_as_written():
    created = create_table_as.parse(
        'CREATE TEMP TABLE IF NOT EXISTS s."T" (a, b) AS (SELECT 1, \'as\' AS "as") '
        "WITH NO DATA")
    assert created is not None
    assert (created.table.name, created.table.db, created.names, created.query) == (
        "T", "s", ("a", "b"), "(SELECT 1, 'as' AS \"as\")")
    assert (created.temporary, created.if_not_exists, created.with_data, created.replace) == (
        True, True, False, False)
    for sql in ("CREATE TABLE t (id int)", "CREATE VIEW v AS SELECT 1", "SELECT 1 AS x"):
        assert create_table_as.parse(sql) is None


def test_columns_read_unchanged_keep_varchar_n_and_jsonb(planner):
    assert run(planner, "CREATE TABLE t2 AS SELECT * FROM t").command_tag == "SELECT 1"
    assert declared(planner, "t2") == [
        ("id", 0, -1), ("j", JSONB, -1), ("v", VARCHAR, 7), ("k", 0, -1)]
    error = pytest.raises(SqlError, run, planner, "INSERT INTO t2 (v) VALUES ('abcd')").value
    assert (error.sqlstate, error.message) == ("22001",
                                               "value too long for type character varying(3)")
    assert run(planner, "SELECT j FROM t2").columns[0].origin.type_oid == JSONB


def test_expressions_are_typed_as_postgresql_types_them(planner):
    run(planner, "CREATE TEMP TABLE tt (a, b) AS SELECT v::varchar(2), j -> 'b', v || 'x' AS c, "
                 "k, 'x'::varchar(5) AS e, upper(v) AS f FROM t")
    assert declared(planner, "tt", "") == [
        ("a", VARCHAR, 6), ("b", JSONB, -1), ("c", 0, -1), ("k", 0, -1), ("e", VARCHAR, 9),
        ("f", 0, -1)]


def test_select_into_is_create_table_as(planner):
    assert run(planner, "SELECT id, v INTO t3 FROM t").command_tag == "SELECT 1"
    assert declared(planner, "t3") == [("id", 0, -1), ("v", VARCHAR, 7)]
    run(planner, "SELECT * INTO TEMP t4 FROM t WHERE false")
    assert declared(planner, "t4", "")[1] == ("j", JSONB, -1)


def test_tags_notices_and_errors_are_postgresql_s(planner):
    assert run(planner, "CREATE TABLE t5 AS SELECT v FROM t WITH NO DATA").command_tag == (
        "CREATE TABLE AS")
    assert planner.con.execute("SELECT count(*) FROM t5").fetchall() == [(0,)]
    result = run(planner, "CREATE TABLE IF NOT EXISTS t5 AS SELECT v FROM t")
    assert (result.command_tag, result.notices) == (
        "CREATE TABLE AS", ('relation "t5" already exists, skipping',))
    assert planner.con.execute("SELECT count(*) FROM t5").fetchall() == [(0,)]
    # without a declared column DuckDB creates it, tagged the same
    assert run(planner, "CREATE TABLE t6 AS SELECT id FROM t WITH NO DATA").command_tag == (
        "CREATE TABLE AS")
    assert run(planner, "CREATE TABLE t7 AS SELECT id FROM t").command_tag == "SELECT 1"
    assert pytest.raises(SqlError, run, planner, "CREATE TABLE t8 (a, b) AS SELECT v FROM t"
                         ).value.sqlstate == "42601"
    assert pytest.raises(SqlError, run, planner, "CREATE TABLE t AS SELECT v FROM t"
                         ).value.sqlstate == "42P07"

"""Materialized views (`planner.materialized_views`) through the planner facade: a table of the
query's rows beside a hidden view of the query, shown by the catalog as relkind 'm'."""

from __future__ import annotations

import pytest
from support.planning import rows, run

from heron.planner.errors import SqlError


def test_created_refreshed_and_dropped_as_postgresql_s(planner):
    run(planner, "CREATE TABLE t (a int, b varchar(5))")
    run(planner, "INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    assert run(planner, "CREATE MATERIALIZED VIEW m AS SELECT a, b FROM t WHERE a > 1"
               ).command_tag == "SELECT 1"
    run(planner, "INSERT INTO t VALUES (3, 'z')")
    assert rows(planner, "SELECT a FROM m ORDER BY a") == [(2,)]
    run(planner, "REFRESH MATERIALIZED VIEW m")
    assert rows(planner, "SELECT a FROM m ORDER BY a") == [(2,), (3,)]
    run(planner, "CREATE MATERIALIZED VIEW e (n) AS SELECT a FROM t WITH NO DATA")
    assert rows(planner, "SELECT relname, relkind FROM pg_class WHERE relname IN ('m', 'e', "
                         "'t', 'heron_matview_m') ORDER BY 1") == [
        ("e", "m"), ("m", "m"), ("t", "r")]
    assert rows(planner, "SELECT matviewname, ispopulated FROM pg_matviews ORDER BY 1") == [
        ("e", False), ("m", True)]
    assert rows(planner, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                         "attrelid = 'm'::regclass AND attname = 'b'") == [
        ("character varying(5)",)]
    run(planner, "DROP MATERIALIZED VIEW e, m")
    assert rows(planner, "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE "
                         "'heron_matview_%'") == [(0,)]


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("CREATE MATERIALIZED VIEW t AS SELECT 1", "42P07"),
    ("REFRESH MATERIALIZED VIEW t", "0A000"), ("REFRESH MATERIALIZED VIEW nope", "42P01"),
    ("DROP MATERIALIZED VIEW t", "42809"), ("DROP MATERIALIZED VIEW nope", "42P01"),
])
def test_wrong_names_are_postgresql_s_errors(planner, sql, sqlstate):
    run(planner, "CREATE TABLE t (a int)")
    with pytest.raises(SqlError) as info:
        run(planner, sql)
    assert info.value.sqlstate.value == sqlstate


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("INSERT INTO m VALUES (5)", "42809", 'cannot change materialized view "m"'),
    ("UPDATE main.m SET a = 1", "42809", 'cannot change materialized view "m"'),
    ("DELETE FROM m", "42809", 'cannot change materialized view "m"'),
    ("TRUNCATE t, m", "42809", '"m" is not a table'),
    ("COPY m TO STDOUT", "42809", 'cannot copy from materialized view "m"'),
    ("COPY m FROM STDIN", "42809", 'cannot copy to materialized view "m"'),
    ("SELECT * FROM e", "55000", 'materialized view "e" has not been populated'),
    ("SELECT 1 FROM t WHERE a IN (SELECT n FROM e)", "55000",
     'materialized view "e" has not been populated'),
    ("CREATE TABLE c AS SELECT * FROM e", "55000", 'materialized view "e" has not been populated'),
    ("COPY (SELECT * FROM e) TO STDOUT", "55000", 'materialized view "e" has not been populated'),
])
def test_changing_one_or_reading_one_not_populated_is_refused(planner, sql, sqlstate, message):
    run(planner, "CREATE TABLE t (a int)")
    run(planner, "CREATE MATERIALIZED VIEW m AS SELECT a FROM t")
    run(planner, "CREATE MATERIALIZED VIEW e (n) AS SELECT a FROM t WITH NO DATA")
    with pytest.raises(SqlError) as info:
        run(planner, sql)
    assert (info.value.sqlstate.value, str(info.value)) == (sqlstate, message)


def test_what_names_one_without_reading_it_is_allowed(planner):
    run(planner, "CREATE TABLE t (a int)")
    run(planner, "CREATE MATERIALIZED VIEW e AS SELECT a FROM t WITH NO DATA")
    run(planner, "CREATE INDEX e_a ON e (a)")
    run(planner, "CREATE VIEW v AS SELECT * FROM e")
    run(planner, "COMMENT ON MATERIALIZED VIEW e IS 'later'")
    assert rows(planner, "WITH e AS (SELECT 1) SELECT * FROM e") == [(1,)]
    run(planner, "REFRESH MATERIALIZED VIEW e")
    assert rows(planner, "SELECT * FROM e") == []

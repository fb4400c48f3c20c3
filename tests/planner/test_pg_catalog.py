"""The pg_catalog shim's rewrites and TEMP objects, on an in-memory DuckDB connection."""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import pg_catalog


@pytest.fixture
def catalog():
    con = duckdb.connect()
    catalog = pg_catalog.Catalog(con, "alice", "16.4 (Heron 0.1.0)")
    pg_catalog.publish_settings(con, {"jit": "off", "TimeZone": "UTC"})
    yield catalog
    con.close()


def query(catalog: pg_catalog.Catalog, sql: str) -> list[tuple]:
    """`sql` as the planner runs it: rewritten, on fresh snapshots of the catalog."""
    sql = pg_catalog.rewrite(sql)
    catalog.refresh(sql)
    return catalog.con.sql(sql).fetchall()


def test_ordinary_statements_are_untouched():
    sql = "SELECT a ~ 'x', b::text FROM t  -- pg_class"
    assert pg_catalog.rewrite(sql) == sql


def test_rewrites():
    out = pg_catalog.rewrite(
        "SELECT pg_catalog.pg_get_userbyid(c.relowner), c.oid::pg_catalog.regclass"
        " FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$'"
        " COLLATE pg_catalog.default")
    assert "pg_catalog" not in out and "COLLATE" not in out
    assert "REGEXP_MATCHES(c.relname, '^(t)$')" in out
    assert "HERON_REGCLASS_NAME(c.oid)" in out
    assert pg_catalog.rewrite("SELECT table_name FROM information_schema.tables") == (
        "SELECT table_name FROM heron_information_schema_tables AS tables")


def test_macros(catalog):
    con = catalog.con
    con.execute("CREATE SCHEMA s; CREATE TABLE s.t (a DECIMAL(12,3), b VARCHAR, c INTEGER[])")
    assert con.sql("SELECT version()").fetchall()[0][0].startswith("PostgreSQL 16.4 (Heron")
    assert con.sql("SELECT current_setting('JIT'), current_setting('timezone')").fetchall() == [
        ("off", "UTC")]
    with pytest.raises(duckdb.Error, match="unrecognized configuration parameter"):
        con.sql("SELECT current_setting('nope')").fetchall()
    assert query(catalog, "SELECT pg_catalog.format_type(a.atttypid, a.atttypmod), "
                      "pg_get_userbyid(10) FROM pg_catalog.pg_attribute a "
                      "WHERE a.attrelid = 's.t'::regclass ORDER BY attnum") == [
        ("numeric(12,3)", "alice"), ("text", "alice"), ("integer[]", "alice")]
    assert query(catalog, "SELECT pg_catalog.pg_table_is_visible(oid) FROM pg_catalog.pg_class"
                      " WHERE relname = 't'") == [(False,)]  # s is not on the search path

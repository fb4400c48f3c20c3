"""psql's meta-commands and catalog functions against `heron serve` (the pg_catalog shim)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed"),
]


def psql(server, command: str) -> str:
    result = subprocess.run(
        ["psql", "-X", "-h", server.host, "-p", str(server.port), "-U", "heron", "-d", "heron",
         "-c", command],
        capture_output=True, text=True, timeout=30,
        env={"PGCONNECT_TIMEOUT": "5", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert "ERROR" not in result.stderr, result.stderr
    return result.stdout


def rows(output: str) -> list[list[str]]:
    """The table body of psql's aligned output, cells stripped."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if set(line) <= set("-+") and line) + 1
    return [[c.strip() for c in line.split("|")] for line in lines[start:]
            if line and not line.startswith("(")]


@pytest.fixture(scope="module")
def catalog_server(heron_server):
    psql(heron_server, "CREATE TABLE IF NOT EXISTS cat_types (a BIGINT, b DOUBLE, c BOOLEAN, "
                       "d DATE, e TIMESTAMP, f DECIMAL(10,2), g SMALLINT, h TEXT, i INTEGER[])")
    psql(heron_server, "CREATE OR REPLACE VIEW cat_view AS SELECT 1 AS x")
    return heron_server


def test_dt_demo_schema(catalog_server):
    out = psql(catalog_server, r"\dt demo.*")
    assert "List of relations" in out
    assert rows(out) == [["demo", "aspects", "table", "heron"], ["demo", "reviews", "table",
                                                                 "heron"]]


def test_dt_and_d_list_visible_relations(catalog_server):
    tables = rows(psql(catalog_server, r"\dt"))
    assert ["public", "cat_types", "table", "heron"] in tables
    # The demo schema is on the search path (after public), so its tables are visible too.
    assert ["demo", "reviews", "table", "heron"] in tables
    assert {r[0] for r in tables} == {"public", "demo"}
    relations = rows(psql(catalog_server, r"\d"))
    assert ["public", "cat_view", "view", "heron"] in relations
    assert rows(psql(catalog_server, r"\dv")) == [["public", "cat_view", "view", "heron"]]


def test_describe_demo_reviews(catalog_server):
    out = psql(catalog_server, r"\d demo.reviews")
    assert 'Table "demo.reviews"' in out
    assert [r[:2] for r in rows(out)] == [
        ["id", "integer"], ["movie", "text"], ["body", "text"], ["stars", "integer"],
        ["sentiment", "text"], ["aspects", "text"]]


def test_describe_postgres_type_names(catalog_server):
    out = psql(catalog_server, r"\d cat_types")
    assert [r[1] for r in rows(out)] == [
        "bigint", "double precision", "boolean", "date", "timestamp without time zone",
        "numeric(10,2)", "smallint", "text", "integer[]"]


def test_dn_l_df(catalog_server):
    schemas = rows(psql(catalog_server, r"\dn"))
    # As in PostgreSQL 15, pg_database_owner owns `public`.
    assert ["demo", "heron"] in schemas and ["public", "pg_database_owner"] in schemas
    databases = rows(psql(catalog_server, r"\l"))
    assert databases[0][:3] == ["heron", "heron", "UTF8"]
    assert "List of functions" in psql(catalog_server, r"\df")
    psql(catalog_server, r"\du")
    psql(catalog_server, r"\dt+")


def test_version_and_current_setting_psycopg(heron_server):
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        version, = conn.execute("SELECT version()").fetchone()
        assert version.startswith("PostgreSQL 16") and "Heron" in version
        assert conn.execute("SELECT version() AS v").description[0].name == "v"
        assert conn.execute("SELECT current_setting('jit')").fetchone() == ("off",)
        assert conn.execute("SELECT current_setting('server_version_num')").fetchone() == (
            "160004",)
        conn.execute("SET application_name = 'cat-test'")
        assert conn.execute("SELECT current_setting('application_name')").fetchone() == (
            "cat-test",)
        assert conn.execute("SELECT current_setting('nope', true)").fetchone() == (None,)
        assert conn.execute("SELECT 'demo.reviews'::regclass = c.oid FROM pg_catalog.pg_class c"
                            " WHERE c.relname = 'reviews'").fetchone() == (True,)


# DuckDB column types, each with the PostgreSQL type the catalog describes it as.
WIRE_TYPES = {
    "BOOLEAN": "boolean", "TINYINT": "smallint", "SMALLINT": "smallint", "INTEGER": "integer",
    "BIGINT": "bigint", "HUGEINT": "numeric", "UTINYINT": "smallint", "USMALLINT": "integer",
    "UINTEGER": "oid", "UBIGINT": "numeric", "REAL": "real", "DOUBLE": "double precision",
    "DECIMAL(10,2)": "numeric(10,2)", "VARCHAR": "text", "BLOB": "bytea", "DATE": "date",
    "TIME": "time without time zone", "TIMESTAMP": "timestamp without time zone",
    "TIMESTAMPTZ": "timestamp with time zone", "INTERVAL": "interval", "UUID": "uuid",
    "JSON": "json", "TIMETZ": "time with time zone", "BIT": "text", "UUID[]": "uuid[]",
    "INTEGER[]": "integer[]", "VARCHAR[]": "text[]", "INTEGER[3]": "integer[]",
    "DOUBLE[]": "double precision[]", "STRUCT(a INTEGER)": "text", "VARCHAR[][]": "text",
    "MAP(VARCHAR, INTEGER)": "text",
}


def test_catalog_types_are_the_types_sent(heron_server):
    """What pg_attribute says a column is, RowDescription says of its values: for every DuckDB
    column type."""
    psycopg = pytest.importorskip("psycopg")
    columns = ", ".join(f"c{i} {t}" for i, t in enumerate(WIRE_TYPES))
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE cat_wire ({columns})")
        sent = [c.type_code for c in conn.execute("SELECT * FROM cat_wire").description]
        described = conn.execute(
            "SELECT a.atttypid, pg_catalog.format_type(a.atttypid, a.atttypmod), t.typname "
            "FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_type t "
            "ON t.oid = a.atttypid WHERE a.attrelid = 'cat_wire'::regclass AND a.attnum > 0 "
            "ORDER BY a.attnum").fetchall()
    assert [oid for oid, _, _ in described] == sent
    assert [name for _, name, _ in described] == list(WIRE_TYPES.values())
    assert all(typname is not None for _, _, typname in described)  # every type is in pg_type


def test_result_columns_named_as_postgresql_names_them(heron_server):
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        def names(sql: str) -> list[str]:
            return [c.name for c in conn.execute(sql).description]

        assert names("SELECT 'a', NULL, 1 + 1, true, count(*), lower('A')") == [
            "?column?", "?column?", "?column?", "bool", "count", "lower"]
        # A number literal is ?column? too; a column named "1" keeps its name.
        assert names("SELECT 1, 2.5 AS x") == ["?column?", "x"]
        assert names("SELECT 1 UNION ALL SELECT 2") == ["?column?"]
        assert names('SELECT "1" FROM (SELECT 7 AS "1")') == ["1"]
        assert names("SHOW timezone") == ["TimeZone"]
        assert names("SHOW TRANSACTION ISOLATION LEVEL") == ["transaction_isolation"]
        assert names("SHOW search_path") == ["search_path"]
        # Catalog statements fold unquoted aliases to lower case, as PostgreSQL does.
        assert names('SELECT relname AS TABLE_NAME, relkind AS "Kind" FROM pg_catalog.pg_class '
                     "LIMIT 1") == ["table_name", "Kind"]


def test_catalog_lookups_fail_with_postgresql_s_sqlstates(heron_server):
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.UndefinedTable, match='relation "no_such" does not'):
            conn.execute("SELECT 'no_such'::regclass")
        with pytest.raises(psycopg.errors.UndefinedObject, match="unrecognized configuration"):
            conn.execute("SELECT current_setting('no_such_setting')")
        # An oid is DuckDB's UINTEGER, named as the type it is sent as.
        with pytest.raises(psycopg.errors.InvalidTextRepresentation,
                           match='invalid input syntax for type oid: "x"'):
            conn.execute("SELECT 'x'::oid FROM pg_catalog.pg_class")
        assert conn.execute("SELECT 1").fetchone() == (1,)  # the session goes on

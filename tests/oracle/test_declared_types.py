"""Declared column types (varchar(n), jsonb) through every statement that makes or changes
columns, against PostgreSQL 15: ALTER TABLE ADD COLUMN and ALTER COLUMN TYPE, RETURNING (and
pg_typeof), CREATE TABLE AS and SELECT INTO, COPY TO STDOUT.

Each script runs statement by statement on both servers through libpq (the simple protocol, then
the extended one in text and in binary): what a client sees must be equal — per statement the
command tag, or the SQLSTATE and message; per result column its name, type OID and typmod; the
values' bytes as sent. psql's `\\d` of the tables made must print the same, and COPY's bytes be
PostgreSQL's.
"""

from __future__ import annotations

import contextlib
import shutil

import pytest
from oracle.test_catalog_psql import psql

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(180)

_DOC = '{"b": [1.50, 1e2], "a": "x\\\\y", "b": {"zz": null, "y": true}}'
_DROP = tuple(f"DROP TABLE IF EXISTS {name}" for name in (  # (Heron drops one at a time)
    "d_child", "d_parent", "d_t", "d_t2", "d_t3", "d_t4", "d_t5", "d_tt"))
_SETUP = (
    *_DROP,
    "CREATE TABLE d_t (id int, j jsonb, v varchar(3))",
    f"INSERT INTO d_t VALUES (1, '{_DOC}', 'abc'), (2, NULL, NULL)",
)


@pytest.fixture(scope="module", autouse=True)
def _tables_dropped_after(request, heron_server):
    """The servers are the session's: tables left behind would show in other modules'
    catalogs (psql's \\dt lists them on one server and not the other)."""
    yield
    servers = [heron_server]
    with contextlib.suppress(pytest.skip.Exception):  # no PostgreSQL 15: nothing made there
        servers.append(request.getfixturevalue("postgres15"))
    for server in servers:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for sql in _DROP:
                conn.execute(sql)

SCRIPTS: dict[str, tuple[str, ...]] = {
    "add_column": (
        "ALTER TABLE d_t ADD COLUMN w varchar(3) DEFAULT 'abcd'",
        "ALTER TABLE d_t ADD COLUMN w varchar(3) NOT NULL",
        "ALTER TABLE d_t ADD COLUMN w character varying(3) NOT NULL DEFAULT 'ab'",
        "ALTER TABLE d_t ADD COLUMN k jsonb DEFAULT '{\"z\": 1, \"a\": [1.0]}'",
        "ALTER TABLE d_t ADD COLUMN w varchar(3)",
        "ALTER TABLE d_t ADD COLUMN IF NOT EXISTS w varchar(3)",
        "ALTER TABLE d_t ADD COLUMN p int CHECK (p > 0) DEFAULT 0",
        "ALTER TABLE d_no_such ADD COLUMN w varchar(3)",
        "ALTER TABLE IF EXISTS d_no_such ADD COLUMN w varchar(3)",
        "SELECT * FROM d_t ORDER BY id",
        "INSERT INTO d_t (id, w) VALUES (3, 'abcd')",
        "UPDATE d_t SET w = 'wxyz'",
        "INSERT INTO d_t (id, w) VALUES (3, NULL)",
        "INSERT INTO d_t (id, w, k) VALUES (3, 'xyz', '[1, {\"b\": 2, \"a\": 1}]') RETURNING *",
        "SELECT attname::text AS attname, atttypid::int AS atttypid, atttypmod, "
        "format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'd_t'::regclass AND attnum > 0 ORDER BY attnum",
    ),
    "empty_table_defaults": (
        "DELETE FROM d_t",
        "ALTER TABLE d_t ADD COLUMN w varchar(3) DEFAULT 'abcd'",
        "ALTER TABLE d_t ADD COLUMN w varchar(3) NOT NULL",
        "INSERT INTO d_t (id) VALUES (1)",
    ),
    "alter_column_type": (
        "ALTER TABLE d_t ADD COLUMN s text DEFAULT 'abcdef'",
        "ALTER TABLE d_t ALTER COLUMN s TYPE varchar(3)",
        "ALTER TABLE d_t ALTER COLUMN s TYPE varchar(6)",
        "ALTER TABLE d_t ALTER COLUMN v TYPE text",
        "ALTER TABLE d_t ALTER COLUMN id TYPE varchar(2) USING id::text || 'x'",
        "ALTER TABLE d_t ALTER COLUMN v SET DATA TYPE jsonb USING ('"' || v || '"')::jsonb",
        "ALTER TABLE d_t ALTER COLUMN v TYPE varchar(10)",
        "INSERT INTO d_t (s) VALUES ('abcdefg')",
        "SELECT * FROM d_t ORDER BY id",
    ),
    "returning": (
        f"INSERT INTO d_t (id, j, v) VALUES (3, '{_DOC}', 'xy') RETURNING j, pg_typeof(j), v, "
        "pg_typeof(v), id, pg_typeof(id)",
        "UPDATE d_t SET v = 'z' WHERE id = 1 RETURNING *, v || 'y' AS vy, length(v)",
        "DELETE FROM d_t WHERE id = 2 RETURNING d_t.j, d_t.v, pg_typeof(j -> 'a')",
        "INSERT INTO d_t (v) VALUES ('abcd') RETURNING v",
    ),
    "create_table_as": (
        "CREATE TABLE d_t2 AS SELECT * FROM d_t",
        "CREATE TABLE IF NOT EXISTS d_t2 AS SELECT * FROM d_t",
        "CREATE TABLE d_t3 (a, b) AS SELECT id, v FROM d_t WITH NO DATA",
        "SELECT * INTO d_t4 FROM d_t WHERE id = 1",
        "CREATE TEMP TABLE d_tt AS SELECT v::varchar(2) AS w, j -> 'a' AS x, v || 'x' AS y, "
        "'q'::varchar(5) AS z, upper(v) AS u FROM d_t",
        "CREATE TABLE d_t5 (a, b, c, d) AS SELECT id, v FROM d_t",
        "INSERT INTO d_t2 (v) VALUES ('abcd')",
        "INSERT INTO d_t4 (v) VALUES ('abcd')",
        "INSERT INTO d_t3 (b) VALUES ('abcd')",
        "SELECT * FROM d_t2 ORDER BY id",
        "SELECT * FROM d_tt",
        "SELECT a.attname::text AS attname, format_type(a.atttypid, a.atttypmod) "
        "FROM pg_attribute a WHERE a.attrelid = 'd_tt'::regclass AND a.attnum > 0 ORDER BY 1",
    ),
    "referenced_table": (
        "CREATE TABLE d_parent (id int PRIMARY KEY)",
        "CREATE TABLE d_child (p int REFERENCES d_parent (id))",
        "ALTER TABLE d_parent ADD COLUMN w varchar(3)",
    ),
}
# What Heron cannot do as PostgreSQL does, with the reason (strict: a gap that closes fails).
EXPECTED_FAILURES: dict[str, str] = {}


def _observe(server, statements: tuple[str, ...], mode: str) -> list[object]:
    """Each statement's outcome on a fresh copy of the setup: ('ok', tag, columns, values) with
    columns as (name, type OID, typmod) and values as the bytes sent, or ('error', SQLSTATE,
    message). `mode`: simple, or extended with text or binary results."""
    seen: list[object] = []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        for sql in _SETUP:
            conn.execute(sql)
        pgconn = conn.pgconn
        for sql in statements:
            if mode == "simple":
                result = pgconn.exec_(sql.encode())
            else:
                result = pgconn.exec_params(sql.encode(), [],
                                            result_format=1 if mode == "binary" else 0)
            error = result.error_field(psycopg.pq.DiagnosticField.SQLSTATE)
            if error is not None:
                message = result.error_field(psycopg.pq.DiagnosticField.MESSAGE_PRIMARY)
                seen.append((sql, "error", error, message))
                continue
            columns = [(result.fname(i), result.ftype(i), result.fmod(i))
                       for i in range(result.nfields)]
            values = [tuple(result.get_value(r, c) for c in range(result.nfields))
                      for r in range(result.ntuples)]
            seen.append((sql, "ok", result.command_status, columns, values))
    return seen


def _params() -> list[object]:
    return [pytest.param(name, mode, id=f"{name}-{mode}", marks=[pytest.mark.xfail(
        reason=EXPECTED_FAILURES[name], strict=True)] if name in EXPECTED_FAILURES else [])
        for name in SCRIPTS for mode in ("simple", "text", "binary")]


@pytest.mark.parametrize(("name", "mode"), _params())
def test_the_client_sees_what_postgresql_shows(heron_server, postgres15, name, mode):
    expected = _observe(postgres15, SCRIPTS[name], mode)
    assert _observe(heron_server, SCRIPTS[name], mode) == expected


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_describes_the_tables_made_alike(heron_server, postgres15):
    statements = ("ALTER TABLE d_t ADD COLUMN w varchar(3) NOT NULL DEFAULT 'ab'",
                  "ALTER TABLE d_t ADD COLUMN k jsonb",
                  "CREATE TABLE d_t2 AS SELECT * FROM d_t",
                  "SELECT id, j -> 'a' AS a, v::varchar(2) AS v2 INTO d_t3 FROM d_t",
                  "ALTER TABLE d_t3 ALTER COLUMN id TYPE varchar(5)")
    for server in (heron_server, postgres15):
        _observe(server, statements, "simple")
    for command in (r"\d d_t", r"\d d_t2", r"\d d_t3"):
        assert psql(heron_server, command) == psql(postgres15, command), command


@pytest.mark.parametrize("copy", [
    "COPY d_t TO STDOUT",
    "COPY d_t TO STDOUT (FORMAT csv, HEADER)",
    "COPY (SELECT j, v FROM d_t ORDER BY id) TO STDOUT (FORMAT binary)",
    "COPY d_t (j) TO STDOUT (FORMAT binary)",
])
def test_copy_to_stdout_sends_jsonb_as_postgresql_does(heron_server, postgres15, copy):
    sent = []
    for server in (postgres15, heron_server):
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for sql in _SETUP:
                conn.execute(sql)
            with conn.cursor().copy(copy) as data:
                sent.append(b"".join(bytes(block) for block in data))
    assert b"x\\\\" in sent[0]  # the document is there (normalized, as PostgreSQL sends it)
    assert sent[1] == sent[0]

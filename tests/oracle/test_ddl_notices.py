"""DDL over objects that may not exist, Heron beside PostgreSQL 15: DROP of several names, and
the NOTICE each IF [NOT] EXISTS skip sends (psql prints them, migration tools log them).

Each case runs its statements in order on both servers (`servers`: the same catalog schema)
through psycopg, on one connection, and compares what each statement answered: its command tag
and notices, or its SQLSTATE, message and hint. Objects are prefixed `x_`; each case drops what
it made.
"""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)

CASES = {
    "drop_several_tables": (
        "CREATE TABLE x_a (i int)", "CREATE TABLE x_b (i int)", "DROP TABLE x_a, x_b",
        "SELECT count(*) FROM pg_class WHERE relname IN ('x_a', 'x_b')"),
    "drop_with_a_missing_name_drops_nothing": (
        "CREATE TABLE x_a (i int)", "DROP TABLE x_a, x_nope",
        "SELECT count(*) FROM pg_class WHERE relname = 'x_a'", "DROP TABLE x_a"),
    "drop_if_exists_notices": (
        "CREATE TABLE x_a (i int)", "DROP TABLE IF EXISTS x_nope, x_a, x_nowhere.t CASCADE",
        "DROP VIEW IF EXISTS x_v", "DROP INDEX IF EXISTS x_i", "DROP SEQUENCE IF EXISTS x_q",
        "DROP TYPE IF EXISTS x_t", "DROP SCHEMA IF EXISTS x_s"),
    "drop_missing_without_if_exists": (
        "DROP TABLE x_nope", "DROP VIEW x_nope", "DROP INDEX x_nope", "DROP SEQUENCE x_nope",
        "DROP TYPE x_nope", "DROP SCHEMA x_nope", "DROP TABLE x_nowhere.t"),
    "drop_of_the_wrong_kind": (
        "CREATE TABLE x_a (i int)", "CREATE VIEW x_v AS SELECT 1 AS one",
        "DROP TABLE IF EXISTS x_v", "DROP VIEW x_a", "DROP VIEW x_v", "DROP TABLE x_a"),
    "drop_several_sequences_and_schemas": (
        "CREATE SEQUENCE x_q", "CREATE SCHEMA x_s", "DROP SEQUENCE IF EXISTS public.x_q, x_r",
        "DROP SCHEMA x_s, x_nope", "DROP SCHEMA IF EXISTS x_s, x_nope"),
    "create_if_not_exists_notices": (
        "CREATE TABLE x_a (i int)", "CREATE TABLE IF NOT EXISTS x_a (i int)",
        "CREATE INDEX IF NOT EXISTS x_i ON x_a (i)", "CREATE INDEX IF NOT EXISTS x_i ON x_a (i)",
        "CREATE SEQUENCE IF NOT EXISTS x_q", "CREATE SEQUENCE IF NOT EXISTS x_q",
        "CREATE SCHEMA IF NOT EXISTS public", "CREATE TEMP TABLE IF NOT EXISTS x_a (i int)",
        "DROP TABLE x_a", "DROP TABLE x_a", "DROP SEQUENCE x_q"),
    "alter_if_exists_notices": (
        "CREATE TABLE x_a (i int)", "ALTER TABLE IF EXISTS x_nope ADD COLUMN j int",
        "ALTER TABLE x_a ADD COLUMN IF NOT EXISTS i int",
        "ALTER TABLE x_a DROP COLUMN IF EXISTS x_zz",
        "ALTER TABLE x_a ADD COLUMN IF NOT EXISTS j int",
        "ALTER TABLE x_a DROP COLUMN IF EXISTS j", "DROP TABLE x_a"),
    "drop_in_a_transaction_block": (
        "BEGIN", "CREATE TABLE x_a (i int)", "DROP TABLE x_a, x_b", "ROLLBACK",
        "SELECT count(*) FROM pg_class WHERE relname = 'x_a'"),
}


def _answers(server, statements: tuple[str, ...]) -> list[tuple]:
    answers = []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary))
        for sql in statements:
            notices.clear()
            try:
                cursor = conn.execute(sql)
                rows = cursor.fetchall() if cursor.description else None
                answers.append((sql, cursor.statusmessage, rows, tuple(notices)))
            except psycopg.Error as exc:
                diag = exc.diag
                answers.append((sql, diag.sqlstate, diag.message_primary, diag.message_hint))
    return answers


@pytest.mark.parametrize("case", CASES)
def test_ddl_answers_and_notices_as_postgresql(servers, case):
    heron, postgres = servers
    assert _answers(heron, CASES[case]) == _answers(postgres, CASES[case])

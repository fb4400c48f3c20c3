"""DDL that depends on whether the objects it names exist (`planner.existence`), through the
planner facade on a plain DuckDB connection: DROP of several names, IF [NOT] EXISTS notices."""

from __future__ import annotations

import pytest
from support.planning import run

from heron.planner import existence
from heron.planner.errors import SqlError
from heron.planner.planner import Planner


def tables(planner: Planner) -> list[str]:
    return sorted(n for (n,) in planner.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall())


def test_read_takes_lists_quoted_and_qualified_names():
    drop = existence.read('DROP TABLE IF EXISTS a, "B,c" , s.t CASCADE;')
    assert drop == existence.Drop("TABLE", (("a",), ("B,c",), ("s", "t")), True, "CASCADE")
    assert existence.read("drop sequence q") == existence.Drop("SEQUENCE", (("q",),), False, "")
    assert existence.read("CREATE TEMP TABLE IF NOT EXISTS T (a int)") == \
        existence.CreateIfNotExists("TABLE", ("t",), True)
    assert existence.read("ALTER TABLE t ADD COLUMN IF NOT EXISTS \"C\" int") == \
        existence.AlterIfExists(("t",), False, "ADD", "C")
    for other in ("DROP FUNCTION f(int)", "CREATE TABLE t (a int)", "ALTER TABLE t ADD b int",
                  "DROP ROLE r", "SELECT 1"):
        assert existence.read(other) is None, other


def test_drop_of_several_tables_drops_them_all(planner):
    for name in ("a", "b", "c"):
        run(planner, f"CREATE TABLE {name} (x int)")
    result = run(planner, "DROP TABLE a, b")
    assert (result.command_tag, result.notices) == ("DROP TABLE", ())
    assert tables(planner) == ["c"]


def test_a_missing_name_drops_nothing_and_is_postgresqls_error(planner):
    run(planner, "CREATE TABLE a (x int)")
    with pytest.raises(SqlError) as info:
        run(planner, "DROP TABLE a, nope")
    assert (info.value.sqlstate.value, info.value.message) == (
        "42P01", 'table "nope" does not exist')
    assert tables(planner) == ["a"]


def test_if_exists_skips_missing_names_with_a_notice_each(planner):
    run(planner, "CREATE TABLE a (x int)")
    result = run(planner, "DROP TABLE IF EXISTS nope, a, a, nos.t")
    assert result.notices == ('table "nope" does not exist, skipping',
                              'schema "nos" does not exist, skipping')
    assert tables(planner) == []


def test_a_view_is_not_a_table(planner):
    run(planner, "CREATE VIEW v AS SELECT 1")
    with pytest.raises(SqlError) as info:
        run(planner, "DROP TABLE IF EXISTS v")
    assert (info.value.sqlstate.value, info.value.message, info.value.hint) == (
        "42809", '"v" is not a table', "Use DROP VIEW to remove a view.")


@pytest.mark.parametrize(("create", "drop", "notice"), [
    ("CREATE SEQUENCE q", "DROP SEQUENCE IF EXISTS q, r", 'sequence "r" does not exist'),
    ("CREATE TABLE t (x int); CREATE INDEX i ON t (x)", "DROP INDEX IF EXISTS r, i",
     'index "r" does not exist'),
    ("CREATE TYPE mood AS ENUM ('a')", "DROP TYPE IF EXISTS mood, r", 'type "r" does not exist'),
    ("CREATE SCHEMA s", "DROP SCHEMA IF EXISTS s, r CASCADE", 'schema "r" does not exist'),
])
def test_each_kind(planner, create, drop, notice):
    for sql in create.split("; "):
        run(planner, sql)
    assert run(planner, drop).notices == (f"{notice}, skipping",)
    again = run(planner, drop).notices  # now both are gone
    assert len(again) == 2 and f"{notice}, skipping" in again


def test_create_and_alter_if_not_exists_say_what_they_skip(planner):
    run(planner, "CREATE TABLE t (a int)")
    assert run(planner, "CREATE TABLE IF NOT EXISTS t (a int)").notices == (
        'relation "t" already exists, skipping',)
    assert run(planner, "CREATE TEMP TABLE IF NOT EXISTS t (a int)").notices == ()
    assert run(planner, "CREATE SCHEMA IF NOT EXISTS main").notices == (
        'schema "main" already exists, skipping',)
    assert run(planner, "ALTER TABLE IF EXISTS nope ADD COLUMN b int").notices == (
        'relation "nope" does not exist, skipping',)
    assert run(planner, "ALTER TABLE t ADD COLUMN IF NOT EXISTS a int").notices == (
        'column "a" of relation "t" already exists, skipping',)
    assert run(planner, "ALTER TABLE t DROP COLUMN IF EXISTS zz").notices == (
        'column "zz" of relation "t" does not exist, skipping',)
    assert run(planner, "ALTER TABLE t ADD COLUMN IF NOT EXISTS b int").notices == ()


def test_a_failed_drop_in_a_transaction_block_keeps_earlier_work_for_rollback(planner):
    planner.begin()
    run(planner, "CREATE TABLE a (x int)")
    with pytest.raises(SqlError):
        run(planner, "DROP TABLE a, nope")
    planner.rollback()
    assert tables(planner) == []

"""LANGUAGE sql functions as DuckDB macros (`planner.sql_functions`), through a bare Planner.

The differential case `sql_functions` (tests/oracle/test_ddl_statements.py) compares whole
answers with PostgreSQL 15's; these pin the reading and what is refused.
"""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import Planner, pg_semantics, sql_functions
from heron.planner.errors import SqlError, SqlState


@pytest.fixture
def run():
    con = duckdb.connect()
    pg_semantics.configure(con)
    planner = Planner(con)

    def run(sql: str) -> list[tuple]:
        result = planner.execute(planner.prepare(sql))
        return [] if result.rows is None else [
            tuple(row.values()) for batch in iter(result.rows.next, None)
            for row in batch.to_pylist()]
    return run


def test_read_create():
    create = sql_functions.read(
        "CREATE OR REPLACE FUNCTION public.f(double precision, x timestamp with time zone, "
        "name text DEFAULT 'a,b', IN y numeric(10, 2) = 1) RETURNS SETOF int LANGUAGE 'sql' "
        "STABLE RETURNS NULL ON NULL INPUT PARALLEL SAFE AS $body$ SELECT 1; $body$")
    assert create == sql_functions.CreateFunction(
        ("public", "f"), True, (
            sql_functions.Argument("heron_arg1", "double precision", None),
            sql_functions.Argument("x", "timestamp with time zone", None),
            sql_functions.Argument("name", "text", "'a,b'"),
            sql_functions.Argument("y", "numeric(10, 2)", "1")),
        "", ("f",), "SELECT 1", False, True)
    assert sql_functions.read("CREATE FUNCTION g() RETURNS int AS 'SELECT ''x'' = ''x''' "
                              "LANGUAGE sql").body == "SELECT 'x' = 'x'"
    assert sql_functions.read("CREATE FUNCTION h(a int) RETURNS int BEGIN ATOMIC SELECT a; "
                              "END").body == "SELECT a"
    assert sql_functions.read("CREATE FUNCTION r() RETURNS TABLE (id int, rows bigint) "
                              "LANGUAGE sql AS 'SELECT 1, 2'").columns == ("id", "rows")
    assert sql_functions.read("SELECT 1") is None


@pytest.mark.parametrize("sql", [
    "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$",
    "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ DELETE FROM t $$",
    "CREATE FUNCTION f(OUT a int) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$",
    "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; SELECT 2 $$",
])
def test_what_a_macro_cannot_be_is_refused(sql):
    with pytest.raises(SqlError) as caught:
        sql_functions.read(sql)
    assert caught.value.sqlstate is SqlState.FEATURE_NOT_SUPPORTED


@pytest.mark.parametrize("sql", [
    "CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW EXECUTE FUNCTION f()",
    "DO $$ BEGIN NULL; END $$", "CREATE OR REPLACE PROCEDURE p() LANGUAGE sql AS $$ $$"])
def test_other_routines_are_refused_clearly(run, sql):
    with pytest.raises(SqlError) as caught:
        run(sql)
    assert caught.value.sqlstate is SqlState.FEATURE_NOT_SUPPORTED


def test_functions_run_as_macros(run):
    run("CREATE TABLE people (id int, first text)")
    run("INSERT INTO people VALUES (1, 'ada'), (2, 'alan')")
    run("CREATE FUNCTION shout(t text) RETURNS text LANGUAGE sql AS $$ SELECT upper(t) || '!' $$")
    run("CREATE FUNCTION plus(integer, integer DEFAULT 10) RETURNS bigint STRICT "
        "LANGUAGE sql AS 'SELECT $1 + $2'")
    run("CREATE FUNCTION how_many() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM people'")
    run("CREATE FUNCTION named(n int) RETURNS TABLE (k int, who text) LANGUAGE sql AS "
        "$$ SELECT id, first FROM people WHERE id <= n $$")
    assert run("SELECT shout(first), plus(id), plus(id, 1), plus(NULL), how_many() "
               "FROM people ORDER BY id") == [("ADA!", 11, 2, None, 2), ("ALAN!", 12, 3, None, 2)]
    assert run("SELECT * FROM named(1)") == [(1, "ada")]
    with pytest.raises(SqlError) as caught:  # typed arguments: PostgreSQL finds no function
        run("SELECT plus('x')")
    assert caught.value.sqlstate in (SqlState.UNDEFINED_FUNCTION,
                                     SqlState.INVALID_TEXT_REPRESENTATION)
    with pytest.raises(SqlError) as caught:
        run("CREATE FUNCTION shout(t text) RETURNS text LANGUAGE sql AS $$ SELECT t $$")
    assert caught.value.sqlstate is SqlState.DUPLICATE_FUNCTION
    run("CREATE OR REPLACE FUNCTION shout(t text) RETURNS text LANGUAGE sql AS $$ SELECT t $$")
    assert run("SELECT shout('x')") == [("x",)]
    run("DROP FUNCTION shout(text), plus, how_many(), named(int)")
    with pytest.raises(SqlError) as caught:
        run("DROP FUNCTION shout(text)")
    assert caught.value.sqlstate is SqlState.UNDEFINED_FUNCTION
    assert caught.value.message == "function shout(text) does not exist"

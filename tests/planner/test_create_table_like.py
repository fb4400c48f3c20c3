"""CREATE TABLE ... (LIKE source ...) through the planner facade (`planner.create_table_like`):
what each INCLUDING option copies, declared types always."""

from __future__ import annotations

import pytest
from support.planning import run

from heron.planner.errors import SqlError


def definition(planner, table: str) -> str:
    return planner.con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = ?",
                               [table]).fetchall()[0][0]


def test_like_copies_types_and_not_null_and_what_its_options_include(planner):
    run(planner, "CREATE TABLE s (id serial PRIMARY KEY, v varchar(5) NOT NULL DEFAULT 'x' "
                 "UNIQUE, j jsonb, q int CHECK (q > 0))")
    run(planner, "CREATE TABLE a (LIKE s)")
    assert definition(planner, "a") == (
        "CREATE TABLE a(id INTEGER NOT NULL, v VARCHAR NOT NULL, j JSON, q INTEGER, "
        "CHECK((length(v) <= 5)), CHECK(json_valid(j)));")  # varchar(5), jsonb: their CHECKs
    run(planner, "CREATE TABLE b (LIKE s INCLUDING ALL EXCLUDING CONSTRAINTS, extra text)")
    assert definition(planner, "b") == (
        "CREATE TABLE b(id INTEGER DEFAULT(nextval('s_id_seq')) PRIMARY KEY, v VARCHAR "
        "DEFAULT('x') NOT NULL UNIQUE, j JSON, q INTEGER, extra VARCHAR, "
        "CHECK((length(v) <= 5)), CHECK(json_valid(j)));")
    run(planner, "CREATE TABLE c (LIKE s INCLUDING CONSTRAINTS)")
    assert "CHECK((q > 0))" in definition(planner, "c")
    with pytest.raises(SqlError) as info:
        run(planner, "CREATE TABLE d (LIKE nope)")
    assert info.value.sqlstate.value == "42P01"

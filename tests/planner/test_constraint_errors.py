"""Constraint violations worded as PostgreSQL words them (`statement._constraint_named`;
foreign keys': `foreign_keys`): the constraint's name, the tables, the key's columns of the side
PostgreSQL names. (The differential suite, tests/oracle/test_error_messages.py, holds the same
cases against PostgreSQL 15.)"""

from __future__ import annotations

import pytest
from support.planning import run

from heron.planner.errors import SqlError


@pytest.fixture
def keyed(planner):
    for sql in ("CREATE TABLE parent (id int PRIMARY KEY, k int, u int, UNIQUE (k, u))",
                "CREATE TABLE child (id int, p int REFERENCES parent (id), a int, b int, "
                "FOREIGN KEY (a, b) REFERENCES parent (k, u))",
                "INSERT INTO parent VALUES (5, 1, 2)", "INSERT INTO child VALUES (1, 5, 1, 2)"):
        run(planner, sql)
    return planner


@pytest.mark.parametrize(("sql", "sqlstate", "message", "detail"), [
    ("INSERT INTO parent VALUES (5, 3, 4)", "23505",
     'duplicate key value violates unique constraint "parent_pkey"',
     "Key (id)=(5) already exists."),
    ("INSERT INTO child VALUES (2, 6, NULL, NULL)", "23503",
     'insert or update on table "child" violates foreign key constraint "child_p_fkey"',
     'Key (p)=(6) is not present in table "parent".'),
    ("UPDATE main.child SET b = 3", "23503",
     'insert or update on table "child" violates foreign key constraint "child_a_b_fkey"',
     'Key (a, b)=(1, 3) is not present in table "parent".'),
    ("DELETE FROM parent", "23503",
     'update or delete on table "parent" violates foreign key constraint "child_p_fkey" on '
     'table "child"', 'Key (id)=(5) is still referenced from table "child".'),
])
def test_violations_name_the_constraint_and_tables(keyed, sql, sqlstate, message, detail):
    with pytest.raises(SqlError) as info:
        run(keyed, sql)
    error = info.value
    assert (error.sqlstate.value, error.message, error.detail) == (sqlstate, message, detail)


def test_a_check_violation_names_the_check_of_its_expression(planner):
    # (named as PostgreSQL names them: a CHECK reading several columns is `<table>_check`)
    run(planner, "CREATE TABLE checked (id int, w int CHECK (w > 0), v varchar(3), "
                 "CHECK (id < 100), CHECK (id <> 50 AND w <> 50))")
    for sql, name in (("INSERT INTO checked VALUES (1, -1, NULL)", "checked_w_check"),
                      ("INSERT INTO checked VALUES (101, 1, NULL)", "checked_id_check"),
                      ("INSERT INTO checked VALUES (50, 1, NULL)", "checked_check")):
        with pytest.raises(SqlError) as info:
            run(planner, sql)
        assert (info.value.sqlstate, info.value.message) == (
            "23514", f'new row for relation "checked" violates check constraint "{name}"')
    with pytest.raises(SqlError) as info:  # varchar(3)'s CHECK is its type's: PostgreSQL's words
        run(planner, "INSERT INTO checked VALUES (1, 1, 'abcd')")
    assert info.value.sqlstate == "22001"

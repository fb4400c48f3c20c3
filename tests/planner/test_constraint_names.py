"""Names given to constraints (`constraint_names`), kept in the table where DuckDB keeps none:
shown by the catalog and error messages, used by DROP CONSTRAINT, following renames, gone with
a rolled-back transaction. (tests/oracle/test_ddl_statements.py holds cases against PostgreSQL.)"""

from __future__ import annotations

import pytest
from support.planning import run

from heron.planner import constraint_names
from heron.planner.errors import SqlError


def names(planner, table: str) -> list[tuple[str, str]]:
    return run(planner, "SELECT conname, contype FROM pg_constraint "
                        f"WHERE conrelid = '{table}'::regclass ORDER BY 1").rows.read_all(
                        ).to_pylist()


def test_a_named_check_tests_what_it_tested(planner):
    run(planner, "CREATE TABLE t (w int CONSTRAINT w_pos CHECK (w > 0))")
    run(planner, "INSERT INTO t VALUES (NULL), (1)")  # (NULL passes a CHECK, as before)
    with pytest.raises(SqlError) as info:
        run(planner, "INSERT INTO t VALUES (-1)")
    assert info.value.message == 'new row for relation "t" violates check constraint "w_pos"'
    assert run(planner, "SELECT pg_get_constraintdef(oid) AS d FROM pg_constraint WHERE conname = "
                        "'w_pos'").rows.read_all().to_pylist() == [
        {"d": "CHECK ((w > 0))"}]


def test_keys_show_their_names_and_no_marks(planner):
    run(planner, "CREATE TABLE p (id int CONSTRAINT \"P Key\" PRIMARY KEY, "
                 "v text, CONSTRAINT p_v UNIQUE (v))")
    run(planner, "CREATE TABLE c (p int, CONSTRAINT c_p FOREIGN KEY (p) REFERENCES p (id))")
    assert names(planner, "p") == [{"conname": "P Key", "contype": "p"},
                                   {"conname": "p_v", "contype": "u"}]
    assert names(planner, "c") == [{"conname": "c_p", "contype": "f"}]
    with pytest.raises(SqlError) as info:
        run(planner, "INSERT INTO c VALUES (7)")
    assert '"c_p"' in info.value.message


def test_drop_constraint_takes_the_name_and_its_mark(planner):
    run(planner, "CREATE TABLE t (id int, v text, CONSTRAINT t_v UNIQUE (v))")
    run(planner, "ALTER TABLE t DROP CONSTRAINT t_v")
    assert names(planner, "t") == []
    sql = run(planner, "SELECT sql FROM duckdb_tables() WHERE table_name = 't'").rows.read_all(
        ).to_pylist()[0]["sql"]
    assert "heron:" not in sql
    run(planner, "INSERT INTO t VALUES (1, 'a'), (2, 'a')")  # no longer unique


def test_names_follow_renamed_columns_and_tables(planner):
    run(planner, "CREATE TABLE t (id int, v text CONSTRAINT t_v UNIQUE, "
                 "w int CONSTRAINT w_pos CHECK (w > 0))")
    run(planner, "ALTER TABLE t RENAME COLUMN v TO vv")
    run(planner, "ALTER TABLE t RENAME COLUMN w TO ww")
    run(planner, "ALTER TABLE t RENAME TO u")
    assert names(planner, "u") == [{"conname": "t_v", "contype": "u"},
                                   {"conname": "w_pos", "contype": "c"}]


def test_a_rolled_back_add_constraint_leaves_no_name(planner):
    run(planner, "CREATE TABLE t (id int, w int)")
    planner.begin()
    run(planner, "ALTER TABLE t ADD CONSTRAINT t_w UNIQUE (w)")
    assert names(planner, "t") == [{"conname": "t_w", "contype": "u"}]
    planner.rollback()
    assert names(planner, "t") == []


def test_like_copies_check_names_and_names_keys_anew(planner):
    run(planner, "CREATE TABLE t (id int CONSTRAINT t_id PRIMARY KEY, "
                 "w int CONSTRAINT w_pos CHECK (w > 0))")
    run(planner, "CREATE TABLE u (LIKE t INCLUDING ALL)")
    assert names(planner, "u") == [{"conname": "u_pkey", "contype": "p"},
                                   {"conname": "w_pos", "contype": "c"}]


@pytest.mark.parametrize(("constraint", "name", "given", "items"), [
    ("CONSTRAINT uq UNIQUE (e)", "uq", True,
     ("UNIQUE (e)", "CHECK (\"e\" IS NULL OR NOT 'heron:u:uq' IS NULL)")),
    ("CONSTRAINT t_pkey PRIMARY KEY (id)", "t_pkey", True, ("PRIMARY KEY (id)",)),
    ("FOREIGN KEY (a, b) REFERENCES u (x, y)", "t_a_b_fkey", False,
     ("CHECK (\"a\" IS NULL OR \"b\" IS NULL OR NOT 'heron:r:{\"name\":\"t_a_b_fkey\","
      "\"table\":\"u\",\"columns\":[\"x\",\"y\"],\"on_delete\":\"a\",\"on_update\":\"a\"}' "
      "IS NULL)",)),
    ("CHECK (a > 0 AND a < b)", "t_check", False, ("CHECK (a > 0 AND a < b)",)),
    ("CHECK (a > 0 AND a < 4)", "t_a_check", False, ("CHECK (a > 0 AND a < 4)",)),
    ("CONSTRAINT \"It's\" CHECK (a > 0)", "It's", True,
     ("CHECK ((a > 0) OR 'heron:c:It''s' IS NULL)",)),
])
def test_added_constraints_are_named_as_postgresql_names_them(constraint, name, given, items):
    added = constraint_names.Added.read(constraint, "t", lambda schema, name: None)
    assert (added.name, added.given, added.items) == (name, given, items)

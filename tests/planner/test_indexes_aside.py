"""ALTER TABLE on a table with indexes (`planner.indexes_aside`): DuckDB renames, drops or retypes
nothing an index covers; Heron sets the indexes aside and makes them again, as PostgreSQL keeps
them (renamed along, dropped with a column they cover)."""

from __future__ import annotations

import pytest
from support.planning import rows, run

from heron.planner.errors import SqlError


@pytest.fixture
def indexed(planner):
    for sql in ("CREATE TABLE t (id int PRIMARY KEY, a int, b text, c int)",
                "CREATE INDEX t_a ON t (a)", "CREATE UNIQUE INDEX t_bc ON t (lower(b), c)",
                "COMMENT ON INDEX t_a IS 'by a'", "INSERT INTO t VALUES (1, 1, 'x', 2)"):
        run(planner, sql)
    return planner


def indexes(planner) -> list[tuple]:
    return rows(planner, "SELECT index_name, sql, comment FROM duckdb_indexes() ORDER BY 1")


def test_renames_keep_the_indexes_on_the_new_names(indexed):
    run(indexed, "ALTER TABLE t RENAME TO t2")
    run(indexed, "ALTER TABLE t2 RENAME COLUMN a TO a2")
    assert indexes(indexed) == [
        ("t_a", 'CREATE INDEX t_a ON t2(a2);', "by a"),
        ("t_bc", "CREATE UNIQUE INDEX t_bc ON t2((lower(b)), c);", None)]
    with pytest.raises(SqlError) as info:  # the unique index is there again
        run(indexed, "INSERT INTO t2 VALUES (2, 5, 'X', 2)")
    assert info.value.sqlstate.value == "23505"


def test_a_dropped_column_takes_its_indexes_with_it_and_a_retyped_one_keeps_them(indexed):
    run(indexed, "ALTER TABLE t DROP COLUMN c")
    run(indexed, "ALTER TABLE t ALTER COLUMN a TYPE bigint")
    assert [name for name, _, _ in indexes(indexed)] == ["t_a"]
    assert rows(indexed, "SELECT a, typeof(a) FROM t") == [(1, "BIGINT")]


def test_a_failed_change_leaves_the_indexes_as_they_were(indexed):
    before = indexes(indexed)
    with pytest.raises(SqlError):
        run(indexed, "ALTER TABLE t ALTER COLUMN b TYPE integer")  # 'x' is no integer
    assert indexes(indexed) == before


def test_inside_a_block_drops_and_type_changes_are_rebuilds(indexed):
    # (a migration tool's transaction: DuckDB sees a dropped index gone only once committed)
    run(indexed, "BEGIN")
    run(indexed, "ALTER TABLE t RENAME COLUMN a TO a2")
    run(indexed, "ALTER TABLE t DROP COLUMN c")
    run(indexed, "ALTER TABLE t ALTER COLUMN a2 TYPE bigint")
    run(indexed, "ALTER TABLE t ALTER COLUMN b SET NOT NULL")
    assert indexes(indexed) == [("t_a", "CREATE INDEX t_a ON t(a2);", "by a")]  # t_bc: with c
    assert rows(indexed, "SELECT a2, typeof(a2), b FROM t") == [(1, "BIGINT", "x")]
    run(indexed, "ROLLBACK")
    assert [name for name, _, _ in indexes(indexed)] == ["t_a", "t_bc"]
    assert rows(indexed, "SELECT * FROM t") == [(1, 1, "x", 2)]


def test_a_column_before_a_key_is_dropped_by_a_rebuild(planner):
    # DuckDB drops no column a PRIMARY KEY or UNIQUE after it depends on (Django's
    # django_content_type.name, before its unique (app_label, model))
    run(planner, "CREATE TABLE p (name text PRIMARY KEY)")
    run(planner, "INSERT INTO p VALUES ('a')")
    run(planner, "CREATE TABLE k (id int PRIMARY KEY, name text, app text REFERENCES p (name), "
                 "model text, UNIQUE (app, model), CHECK (name <> ''))")
    run(planner, "INSERT INTO k VALUES (1, 'n', 'a', 'm')")
    run(planner, "ALTER TABLE k DROP COLUMN name")  # (its CHECK goes; p's name is no column of k)
    assert rows(planner, "SELECT * FROM k") == [(1, "a", "m")]
    for sql, sqlstate in (("INSERT INTO k VALUES (2, 'a', 'm')", "23505"),
                          ("INSERT INTO k VALUES (2, 'b', 'm')", "23503")):
        with pytest.raises(SqlError) as info:
            run(planner, sql)
        assert info.value.sqlstate.value == sqlstate


def test_alter_index_rename_makes_it_again_under_the_new_name(indexed):
    run(indexed, "ALTER INDEX t_a RENAME TO t_a_renamed")
    assert indexes(indexed)[0] == ("t_a_renamed", "CREATE INDEX t_a_renamed ON t(a);", "by a")
    assert run(indexed, "ALTER INDEX IF EXISTS nope RENAME TO x").notices == (
        'relation "nope" does not exist, skipping',)
    for sql, sqlstate in (("ALTER INDEX nope RENAME TO x", "42P01"),
                          ("ALTER INDEX t_bc RENAME TO t", "42P07")):
        with pytest.raises(SqlError) as info:
            run(indexed, sql)
        assert info.value.sqlstate.value == sqlstate

"""ALTER TABLE ... ADD COLUMN of columns with a CHECK (varchar(n), jsonb, a client's), which
DuckDB cannot add in place: `planner.alter_table` through the planner facade."""

from __future__ import annotations

import pytest
from support.planning import rows, run

from heron.planner import alter_table, column_origins, pg_semantics, pg_types
from heron.planner.errors import SqlError
from heron.planner.planner import Planner


def fails(planner: Planner, sql: str) -> SqlError:
    with pytest.raises(SqlError) as info:
        run(planner, sql)
    return info.value


def declared(planner: Planner, table: str, schema: str = "main") -> list[tuple[str, int, int]]:
    """A table's columns as the catalog declares them: (name, type OID or 0, typmod)."""
    return [(name, o.type_oid, o.typmod) for name, o in column_origins.Relations.load(
        planner.con).by_name[(schema, table)]]


def parsed(sql: str) -> alter_table.AddColumns | alter_table.AlterType | None:
    return alter_table.parse(pg_semantics.rewrite(sql))


def test_adding_columns_with_a_check_and_changing_types_are_taken_from_duckdb():
    added = parsed("ALTER TABLE IF EXISTS s.t ADD COLUMN w varchar(3), ADD k jsonb, ADD n int")
    assert isinstance(added, alter_table.AddColumns)
    assert (added.schema, added.table, added.if_exists) == ("s", "t", True)
    assert [c.name for c in added.columns] == ["w", "k", "n"]
    assert parsed("ALTER TABLE t ADD COLUMN x int CHECK (x > 0)") is not None
    for sql in ("ALTER TABLE t ADD COLUMN n int", "ALTER TABLE t ADD COLUMN v text NOT NULL",
                "ALTER TABLE t ADD COLUMN w varchar(3), DROP COLUMN n",
                "ALTER TABLE t ALTER COLUMN v SET DEFAULT 'a'", "SELECT 'ADD CHECK'"):
        assert parsed(sql) is None, sql
    # the declared type survives pg_semantics' rewrite (which spells it for this module)
    for sql, spelled in (("ALTER TABLE t ALTER COLUMN v TYPE character varying(3)", "VARCHAR(3)"),
                         ("ALTER TABLE t ALTER v SET DATA TYPE char(2) USING v::text",
                          "BPCHAR(2)"),
                         ("ALTER TABLE t ALTER COLUMN v TYPE jsonb", "JSONB"),
                         ("ALTER TABLE t ALTER COLUMN v TYPE int", "INT")):
        altered = parsed(sql)
        assert isinstance(altered, alter_table.AlterType), sql
        assert (altered.column, altered.type.sql(dialect="postgres")) == ("v", spelled)


def test_an_added_varchar_column_is_declared_and_enforced(planner):
    run(planner, "CREATE TABLE t (id int, v varchar(3))")
    run(planner, "INSERT INTO t VALUES (1, 'abc'), (2, NULL)")
    assert run(planner, "ALTER TABLE t ADD COLUMN w varchar(3) NOT NULL DEFAULT 'ab'"
               ).command_tag == "ALTER TABLE"
    run(planner, "ALTER TABLE t ADD COLUMN c character varying(2), ADD COLUMN d char(4)")
    assert rows(planner, "SELECT * FROM t ORDER BY id") == [
        (1, "abc", "ab", None, None), (2, None, "ab", None, None)]
    assert declared(planner, "t") == [
        ("id", 0, -1), ("v", 1043, 7), ("w", 1043, 7), ("c", 1043, 6), ("d", 1042, 8)]
    for sql in ("INSERT INTO t (id, w) VALUES (3, 'abcd')", "UPDATE t SET c = 'abc'"):
        error = fails(planner, sql)
        assert (error.sqlstate, error.message) == (
            "22001", f"value too long for type character varying({3 if 'w' in sql else 2})")
    assert fails(planner, "INSERT INTO t (id, w) VALUES (3, NULL)").sqlstate == "23502"


def test_the_defaults_of_existing_rows_must_fit(planner):
    run(planner, "CREATE TABLE t (id int)")
    # PostgreSQL casts a constant default when the column is added, rows or none
    error = fails(planner, "ALTER TABLE t ADD COLUMN w varchar(3) DEFAULT 'abcd'")
    assert (error.sqlstate, error.message) == ("22001",
                                               "value too long for type character varying(3)")
    assert fails(planner, "ALTER TABLE t ADD COLUMN w varchar(2) DEFAULT 'a' || 'bc'"
                 ).sqlstate == "22001"
    run(planner, "ALTER TABLE t ADD COLUMN n varchar(3) NOT NULL")  # no rows: no nulls
    run(planner, "INSERT INTO t VALUES (1, 'x')")
    error = fails(planner, "ALTER TABLE t ADD COLUMN m varchar(3) NOT NULL")
    assert (error.sqlstate, error.message) == (
        "23502", 'column "m" of relation "t" contains null values')
    # a default computed per row is checked on each row
    assert fails(planner, "ALTER TABLE t ADD COLUMN r varchar(3) DEFAULT repeat('x', 4)"
                 ).sqlstate == "22001"
    error = fails(planner, "ALTER TABLE t ADD COLUMN p int CHECK (p > 0) DEFAULT 0")
    assert (error.sqlstate, error.message) == (
        "23514", 'check constraint "t_p_check" of relation "t" is violated by some row')
    assert rows(planner, "SELECT * FROM t") == [(1, "x")]
    run(planner, "ALTER TABLE t ADD COLUMN p int CHECK (p > 0) DEFAULT 1")
    assert fails(planner, "UPDATE t SET p = 0").sqlstate == "23514"


def test_an_added_jsonb_column_is_jsonb(planner):
    run(planner, "CREATE TABLE docs (id int)")
    run(planner, "ALTER TABLE docs ADD COLUMN k jsonb, ADD COLUMN j json")
    assert declared(planner, "docs") == [
        ("id", 0, -1), ("k", pg_types.JSONB.oid, -1), ("j", 0, -1)]


def test_the_table_keeps_what_it_had(planner):
    for sql in (
            "CREATE SEQUENCE ids",
            "CREATE TABLE parent (id int PRIMARY KEY)",
            "INSERT INTO parent VALUES (1)",
            "CREATE TABLE t (id int PRIMARY KEY DEFAULT nextval('ids'), v varchar(3) UNIQUE, "
            "p int REFERENCES parent (id), g int GENERATED ALWAYS AS (id * 2), "
            "CHECK (id < 100))",
            "INSERT INTO t (v, p) VALUES ('a', 1), ('b', 1)",
            "CREATE INDEX t_p ON t (p)",
            "COMMENT ON TABLE t IS 'the table'",
            "COMMENT ON COLUMN t.v IS 'a column'",
            "CREATE VIEW tv AS SELECT * FROM t"):
        run(planner, sql)
    before = planner.con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 't'"
                                 ).fetchall()[0][0]
    run(planner, "ALTER TABLE t ADD COLUMN w varchar(3) DEFAULT 'x'")
    after = planner.con.execute("SELECT sql, comment FROM duckdb_tables() WHERE table_name = 't'"
                                ).fetchall()[0]
    assert after[0] == before.replace(", CHECK", ", w VARCHAR DEFAULT('x'), CHECK", 1).replace(
        ");", ", CHECK((length(w) <= 3)));")
    assert after[1] == "the table"
    assert planner.con.execute("SELECT column_name, comment FROM duckdb_columns() WHERE "
                               "table_name = 't' AND comment IS NOT NULL").fetchall() == [
        ("v", "a column")]
    assert planner.con.execute("SELECT index_name FROM duckdb_indexes()").fetchall() == [("t_p",)]
    assert rows(planner, "SELECT * FROM tv ORDER BY id") == [
        (1, "a", 1, 2, "x"), (2, "b", 1, 4, "x")]
    run(planner, "INSERT INTO t (v, p) VALUES ('c', 1)")  # the sequence goes on
    assert rows(planner, "SELECT max(id) FROM t") == [(3,)]
    assert fails(planner, "INSERT INTO t (v, p) VALUES ('c', 1)").sqlstate == "23505"
    assert fails(planner, "INSERT INTO t (v, p) VALUES ('d', 2)").sqlstate == "23503"
    assert fails(planner, "INSERT INTO t (id) VALUES (100)").sqlstate == "23514"
    assert planner.con.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == [(2,)]


def test_schemas_temporary_tables_and_names_that_need_quotes(planner):
    run(planner, "CREATE SCHEMA s")
    run(planner, 'CREATE TABLE s."Odd (Name)" (id int)')
    run(planner, 'ALTER TABLE s."Odd (Name)" ADD COLUMN "W w" varchar(2)')
    assert declared(planner, "odd (name)", "s") == [("id", 0, -1), ("w w", 1043, 6)]
    run(planner, "CREATE TEMP TABLE tt (id int)")
    run(planner, "INSERT INTO tt VALUES (1)")
    run(planner, "ALTER TABLE tt ADD COLUMN k jsonb DEFAULT '{}'")
    assert rows(planner, "SELECT temporary FROM duckdb_tables() WHERE table_name = 'tt'") == [
        (True,)]
    assert declared(planner, "tt", "") == [("id", 0, -1), ("k", pg_types.JSONB.oid, -1)]


def test_existing_and_missing_names(planner):
    run(planner, "CREATE TABLE t (id int, w text)")
    error = fails(planner, "ALTER TABLE t ADD COLUMN W varchar(3)")
    assert (error.sqlstate, error.message) == ("42701",
                                               'column "w" of relation "t" already exists')
    result = run(planner, "ALTER TABLE t ADD COLUMN IF NOT EXISTS w varchar(3), ADD x jsonb")
    assert result.notices == ('column "w" of relation "t" already exists, skipping',)
    assert [name for name, _, _ in declared(planner, "t")] == ["id", "w", "x"]
    error = fails(planner, "ALTER TABLE nosuch ADD COLUMN w varchar(3)")
    assert (error.sqlstate, error.message) == ("42P01", 'relation "nosuch" does not exist')
    assert run(planner, "ALTER TABLE IF EXISTS nosuch ADD COLUMN w varchar(3)").notices == (
        'relation "nosuch" does not exist, skipping',)


def test_in_a_transaction_it_rolls_back_with_it(planner):
    run(planner, "CREATE TABLE t (id int)")
    planner.begin()
    run(planner, "ALTER TABLE t ADD COLUMN w varchar(3)")
    assert [name for name, _, _ in declared(planner, "t")] == ["id", "w"]
    planner.rollback()
    assert [name for name, _, _ in declared(planner, "t")] == ["id"]


def test_a_table_other_tables_reference_is_altered_with_their_keys_set_aside(planner):
    run(planner, "CREATE TABLE parent (id int PRIMARY KEY)")
    run(planner, "CREATE TABLE child (p int REFERENCES parent (id))")
    run(planner, "ALTER TABLE parent ADD COLUMN w varchar(3)")  # (a rebuild)
    assert declared(planner, "parent") == [("id", 0, -1), ("w", 1043, 7)]
    assert fails(planner, "INSERT INTO child VALUES (1)").sqlstate == "23503"


def test_a_column_changed_to_varchar_n_or_jsonb_is_declared_and_checked(planner):
    run(planner, "CREATE TABLE t (id int, s text, k json, v varchar(3), n int CHECK (n > 0))")
    run(planner, "INSERT INTO t VALUES (1, 'abcdef', '{\"b\": 1}', 'abc', 1)")
    error = fails(planner, "ALTER TABLE t ALTER COLUMN s TYPE varchar(3)")
    assert (error.sqlstate, error.message) == ("22001",
                                               "value too long for type character varying(3)")
    run(planner, "ALTER TABLE t ALTER COLUMN s TYPE varchar(6)")
    run(planner, "ALTER TABLE t ALTER COLUMN k SET DATA TYPE jsonb")
    run(planner, "ALTER TABLE t ALTER COLUMN v TYPE text")  # its length CHECK goes
    run(planner, "ALTER TABLE t ALTER COLUMN id TYPE varchar(2) USING id::text || 'x'")
    run(planner, "ALTER TABLE t ALTER COLUMN n TYPE bigint")  # the client's CHECK stays
    assert declared(planner, "t") == [
        ("id", 1043, 6), ("s", 1043, 10), ("k", pg_types.JSONB.oid, -1), ("v", 0, -1),
        ("n", 0, -1)]
    assert rows(planner, "SELECT * FROM t") == [("1x", "abcdef", '{"b": 1}', "abc", 1)]
    run(planner, "INSERT INTO t (v) VALUES ('abcdefgh')")
    assert fails(planner, "INSERT INTO t (s) VALUES ('abcdefg')").sqlstate == "22001"
    error = fails(planner, "INSERT INTO t (n) VALUES (0)")
    assert error.sqlstate == "23514"
    error = fails(planner, "ALTER TABLE t ALTER COLUMN n TYPE int USING n - 1")
    assert (error.sqlstate, error.message) == (
        "23514", 'check constraint "t_n_check" of relation "t" is violated by some row')
    error = fails(planner, "ALTER TABLE t ALTER COLUMN nosuch TYPE varchar(3)")
    assert (error.sqlstate, error.message) == (
        "42703", 'column "nosuch" of relation "t" does not exist')
    assert run(planner, "ALTER TABLE t ALTER COLUMN id TYPE text").command_tag == "ALTER TABLE"


def test_added_foreign_keys_and_checks_hold_for_old_and_new_rows(planner):
    run(planner, "CREATE TABLE parent (id int PRIMARY KEY)")
    run(planner, "CREATE TABLE child (id int, parent_id int, qty int)")
    run(planner, "INSERT INTO parent VALUES (1)")
    run(planner, "INSERT INTO child VALUES (1, 1, 5), (2, 2, 5)")
    assert fails(planner, "ALTER TABLE child ADD CONSTRAINT child_fk FOREIGN KEY (parent_id) "
                          "REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED"
                 ).sqlstate.value == "23503"  # row 2's parent is missing: nothing changed
    run(planner, "DELETE FROM child WHERE id = 2")
    run(planner, "ALTER TABLE child ADD CONSTRAINT child_fk FOREIGN KEY (parent_id) "
                 "REFERENCES parent (id) NOT VALID")
    run(planner, "ALTER TABLE child ADD CHECK (qty > 0)")
    assert fails(planner, "INSERT INTO child VALUES (3, 9, 1)").sqlstate.value == "23503"
    assert fails(planner, "INSERT INTO child VALUES (3, 1, -1)").sqlstate.value == "23514"
    assert rows(planner, "SELECT id, parent_id, qty FROM child") == [(1, 1, 5)]


def test_constraints_are_dropped_by_the_names_the_catalog_shows(planner):
    run(planner, "CREATE TABLE dp (id int PRIMARY KEY)")
    run(planner, "INSERT INTO dp VALUES (1)")
    run(planner, 'CREATE TABLE dc (id int PRIMARY KEY, v text UNIQUE, w int CHECK (w > 0), '
                 'unique_id int, "Odd, name" varchar(3), p int REFERENCES dp (id), '
                 "UNIQUE (w, unique_id), CHECK (unique_id <> 0))")
    run(planner, "INSERT INTO dc VALUES (1, 'a', 1, 1, 'abc', 1)")
    names = ("SELECT conname FROM pg_constraint WHERE conrelid = 'dc'::regclass "
             "ORDER BY conname")
    assert rows(planner, names) == [("dc_p_fkey",), ("dc_pkey",), ("dc_unique_id_check",),
                                   ("dc_v_key",), ("dc_w_check",), ("dc_w_unique_id_key",)]
    for name in ("dc_pkey", "dc_v_key", "dc_w_check", "dc_w_unique_id_key", "DC_UNIQUE_ID_CHECK",
                 "dc_p_fkey"):
        assert run(planner, f"ALTER TABLE dc DROP CONSTRAINT {name}").command_tag == "ALTER TABLE"
    assert rows(planner, names) == []
    # what they kept out now goes in; the primary key's column stays NOT NULL, as in PostgreSQL,
    # and the varchar(3) its length
    run(planner, "INSERT INTO dc VALUES (1, 'a', -1, 0, 'xyz', 99)")
    assert fails(planner, "INSERT INTO dc VALUES (NULL, 'a', 1, 1, 'x', 1)").sqlstate == "23502"
    assert fails(planner, "INSERT INTO dc VALUES (2, 'a', 1, 1, 'abcd', 1)").sqlstate == "22001"
    assert rows(planner, "SELECT count(*) FROM dc") == [(2,)]
    run(planner, "DROP TABLE dp")  # no longer referenced


def test_dropping_a_missing_constraint(planner):
    run(planner, "CREATE TABLE dm (id int, CHECK (id > 0))")
    error = fails(planner, "ALTER TABLE dm DROP CONSTRAINT nope")
    assert (error.sqlstate, error.message) == (
        "42704", 'constraint "nope" of relation "dm" does not exist')
    assert run(planner, "ALTER TABLE dm DROP CONSTRAINT IF EXISTS nope CASCADE").notices == (
        'constraint "nope" of relation "dm" does not exist, skipping',)
    assert fails(planner, "ALTER TABLE nosuch DROP CONSTRAINT x").sqlstate == "42P01"
    assert run(planner, "ALTER TABLE IF EXISTS nosuch DROP CONSTRAINT x").notices == (
        'relation "nosuch" does not exist, skipping',)


def test_a_table_with_foreign_keys_is_renamed_and_rebuilt_without_harm_to_what_they_reference(
        planner):
    run(planner, "CREATE TABLE cust (id int PRIMARY KEY)")
    run(planner, "INSERT INTO cust VALUES (1), (2), (3)")
    run(planner, "CREATE TABLE ord (id int, c int REFERENCES cust (id))")
    run(planner, "CREATE INDEX ord_c ON ord (c)")
    run(planner, "INSERT INTO ord VALUES (1, 1)")
    run(planner, "ALTER TABLE ord ADD COLUMN note varchar(10)")  # a rebuild
    run(planner, "ALTER TABLE ord RENAME TO ord2")
    assert rows(planner, "SELECT id, c, note FROM ord2") == [(1, 1, None)]
    assert rows(planner, "SELECT indexname FROM pg_indexes WHERE tablename = 'ord2'") == [
        ("ord_c",)]
    assert fails(planner, "INSERT INTO ord2 VALUES (2, 9, NULL)").sqlstate == "23503"
    assert fails(planner, "DELETE FROM cust WHERE id = 1").sqlstate == "23503"
    run(planner, "DELETE FROM cust WHERE id = 2")
    run(planner, "ALTER TABLE ord2 DROP CONSTRAINT ord_c_fkey")  # (named once, as PostgreSQL)
    run(planner, "DELETE FROM cust WHERE id = 1")
    run(planner, "DROP TABLE ord2")
    run(planner, "DROP TABLE cust")


def test_a_referenced_table_is_dropped_only_with_cascade_which_drops_the_keys(planner):
    run(planner, "CREATE TABLE rp (id int PRIMARY KEY)")
    run(planner, "CREATE TABLE rc (id int, p int REFERENCES rp (id))")
    error = fails(planner, "DROP TABLE rp")
    assert (error.sqlstate, error.message, error.detail) == (
        "2BP01", "cannot drop table rp because other objects depend on it",
        "constraint rc_p_fkey on table rc depends on table rp")
    assert run(planner, "DROP TABLE rp CASCADE").notices == (
        "drop cascades to constraint rc_p_fkey on table rc",)
    run(planner, "INSERT INTO rc VALUES (1, 99)")  # the key went, the table stays
    assert rows(planner, "SELECT count(*) FROM pg_constraint WHERE conrelid = 'rc'::regclass"
                ) == [(0,)]

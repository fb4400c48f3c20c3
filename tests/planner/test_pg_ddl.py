"""pg_dump's DDL spellings as DuckDB reads them (`planner.pg_ddl`), each rewrite run by DuckDB.

The differential tests (tests/oracle/test_ddl_statements.py `pg_dump_spellings`, and
test_pg_dump_restore.py) compare whole answers with PostgreSQL 15's; these pin the rewrites.
"""

from __future__ import annotations

import duckdb
import pytest

from heron.planner.errors import SqlError
from heron.planner.pg_ddl import rewrite


@pytest.mark.parametrize(("sql", "expected"), [
    ("CREATE SEQUENCE public.q AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE "
     "CACHE 1",
     "CREATE SEQUENCE public.q START WITH 1 INCREMENT BY 1 MAXVALUE 2147483647 NO MINVALUE"),
    ("CREATE SEQUENCE q AS smallint INCREMENT BY -1", "CREATE SEQUENCE q INCREMENT BY -1 "
                                                      "MINVALUE -32768"),
    ("CREATE SEQUENCE q AS bigint MAXVALUE 10", "CREATE SEQUENCE q MAXVALUE 10"),
    ("CREATE SEQUENCE q CACHE 20", "CREATE SEQUENCE q"),
    ("CREATE INDEX i ON public.t USING btree (a, b DESC)", "CREATE INDEX i ON public.t(a, b DESC)"),
    ("CREATE UNIQUE INDEX i ON t USING hash (a)", "CREATE UNIQUE INDEX i ON t(a)"),
    ("CREATE INDEX i ON t (a) INCLUDE (b) WHERE a > 0", "CREATE INDEX i ON t(a)"),
    ("CREATE UNIQUE INDEX i ON t (a, abs(b) DESC) WHERE id > 0",
     "CREATE UNIQUE INDEX i ON t((CASE WHEN id > 0 THEN a END), "
     "(CASE WHEN id > 0 THEN ABS(b) END) DESC)"),
    ('CREATE INDEX i ON t (a int4_ops, b COLLATE "C" DESC)', "CREATE INDEX i ON t(a, b DESC)"),
    ("ALTER TABLE ONLY public.t ALTER COLUMN id SET DEFAULT nextval('public.s'::regclass)",
     "ALTER TABLE public.t ALTER COLUMN id SET DEFAULT NEXTVAL('public.s')"),
    ("ALTER TABLE IF EXISTS ONLY t ADD CONSTRAINT t_pkey PRIMARY KEY (id)",
     "ALTER TABLE IF EXISTS t ADD CONSTRAINT t_pkey PRIMARY KEY (id)"),
    ("CREATE TABLE t2 (id integer DEFAULT nextval('s'::regclass) NOT NULL)",
     "CREATE TABLE t2 (id INT DEFAULT NEXTVAL('s') NOT NULL)"),
    ("DROP INDEX CONCURRENTLY IF EXISTS public.i", "DROP INDEX IF EXISTS public.i"),
    ("CREATE SCHEMA IF NOT EXISTS app AUTHORIZATION heron", "CREATE SCHEMA IF NOT EXISTS app"),
    ('CREATE SCHEMA AUTHORIZATION "Alice";', 'CREATE SCHEMA "Alice";'),
    ("ALTER TABLE ONLY t RENAME a TO a2", "ALTER TABLE t RENAME COLUMN a TO a2"),
    ("CREATE UNLOGGED TABLE IF NOT EXISTS jobs (id int)",
     "CREATE TABLE IF NOT EXISTS jobs (id int)"),
    ("CREATE TABLE t3 (id int PRIMARY KEY, u int UNIQUE DEFERRABLE INITIALLY "
     "DEFERRED, note text CHECK (note <> ' DEFERRABLE') NOT DEFERRABLE)",
     "CREATE TABLE t3 (id int PRIMARY KEY, u int UNIQUE, note text CHECK (note <> "
     "' DEFERRABLE'))"),
])
def test_rewrites_run_on_duckdb(sql, expected):
    assert rewrite(sql) == expected
    con = duckdb.connect()
    con.execute("CREATE SEQUENCE s; CREATE TABLE t (id integer NOT NULL, a int, b int)")
    con.execute(expected.replace("public.", ""))


def test_a_foreign_keys_deferral_stays_for_foreign_keys():
    # (`foreign_keys` reads it; NOT DEFERRABLE and INITIALLY IMMEDIATE are the defaults)
    assert rewrite("CREATE TABLE c (p int REFERENCES t (id) ON DELETE CASCADE DEFERRABLE "
                   "INITIALLY DEFERRED, q int REFERENCES t NOT DEFERRABLE INITIALLY IMMEDIATE, "
                   "CONSTRAINT f FOREIGN KEY (q) REFERENCES t (\"(\") DEFERRABLE, "
                   "u int UNIQUE DEFERRABLE)") == (
        "CREATE TABLE c (p int REFERENCES t (id) ON DELETE CASCADE DEFERRABLE INITIALLY "
        "DEFERRED, q int REFERENCES t, CONSTRAINT f FOREIGN KEY (q) REFERENCES t (\"(\") "
        "DEFERRABLE, u int UNIQUE)")
    assert rewrite("ALTER TABLE c ADD CONSTRAINT f FOREIGN KEY (p) REFERENCES t (id) DEFERRABLE "
                   "INITIALLY DEFERRED NOT VALID") == (
        "ALTER TABLE c ADD CONSTRAINT f FOREIGN KEY (p) REFERENCES t (id) DEFERRABLE INITIALLY "
        "DEFERRED")


@pytest.mark.parametrize("sql", [
    "SELECT nextval('s'::regclass)",  # not a default: the catalog rewrite reads the cast
    "ALTER TABLE t ADD COLUMN c int",
    "CREATE SEQUENCE s START 3",
    "CREATE TABLE t (id serial)",
    "CREATE TABLE t (a text DEFAULT ') PARTITION BY LIST (')",
])
def test_other_statements_are_untouched(sql):
    assert rewrite(sql) == sql


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("CREATE INDEX i ON t USING gin (a)", "0A000"), ("CREATE INDEX i ON t USING nope (a)", "42704"),
    ("CREATE TABLE m (id int, at date) PARTITION BY RANGE (at)", "0A000"),
    ("CREATE TABLE m1 PARTITION OF m FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')", "0A000"),
])
def test_what_duckdb_lacks_is_refused(sql, sqlstate):
    with pytest.raises(SqlError) as info:
        rewrite(sql)
    assert info.value.sqlstate.value == sqlstate


def test_an_index_without_a_name_is_named_as_postgresql_names_it():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a int, b text); CREATE INDEX t_a_idx ON t (b)")
    assert rewrite("CREATE INDEX ON t (a, lower(b))", con) == (
        "CREATE INDEX t_a_lower_idx ON t(a, LOWER(b))")
    assert rewrite("CREATE INDEX ON t (a)", con) == "CREATE INDEX t_a_idx1 ON t(a)"
    assert rewrite("CREATE INDEX ON t (a)") == "CREATE INDEX ON t (a)"  # no connection

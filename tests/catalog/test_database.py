"""The data directory: DuckDB file, demo tables on first start only, persistence across opens."""

import duckdb

from heron.catalog import Database, demo
from heron.planner import foreign_keys


def test_first_start_creates_the_demo_tables_once(tmp_path):
    with Database(tmp_path) as database:
        con = database.connect()
        assert con.sql("SELECT count(*) FROM demo.reviews").fetchall() == [(demo.REVIEW_COUNT,)]
        assert con.sql("SELECT count(*) FROM demo.aspects").fetchall() == [(6,)]
        con.execute("DELETE FROM demo.reviews WHERE id > 10")
        # The demo schema is on the search path, behind the user's own tables.
        assert con.sql("SELECT count(*) FROM reviews").fetchall() == [(10,)]
        con.execute("CREATE TABLE reviews (id INTEGER)")
        assert con.sql("SELECT count(*) FROM reviews").fetchall() == [(0,)]
        con.execute("DROP TABLE public.reviews")
    # A later start keeps what the user did instead of reloading the demo.
    with Database(tmp_path) as database:
        assert database.connect().sql("SELECT count(*) FROM demo.reviews").fetchall() == [(10,)]


def test_tables_survive_reopening(tmp_path):
    with Database(tmp_path, load_demo=False) as database:
        con = database.connect()
        con.execute("CREATE TABLE t (id INTEGER, body VARCHAR)")
        con.execute("INSERT INTO t VALUES (1, 'a'), (2, NULL)")
    with Database(tmp_path, load_demo=False) as database:
        rows = database.connect().sql("SELECT * FROM t ORDER BY id").fetchall()
    assert rows == [(1, "a"), (2, None)]


def test_demo_reviews_are_deterministic_and_plant_their_labels():
    first, second = demo.reviews(), demo.reviews()
    assert first.equals(second)
    for body, sentiment, aspects in zip(first.column("body").to_pylist(),
                                        first.column("sentiment").to_pylist(),
                                        first.column("aspects").to_pylist(), strict=True):
        assert sentiment in {"positive", "negative"}
        assert aspects and body.endswith(".")


def test_user_tables_live_in_public(tmp_path):
    with Database(tmp_path, load_demo=False) as database:
        con = database.connect()
        con.execute("CREATE TABLE t (id INTEGER)")
        assert con.sql("SELECT current_schema()").fetchall() == [("public",)]
        assert con.sql("SELECT schema_name FROM duckdb_tables() WHERE table_name = 't'"
                       ).fetchall() == [("public",)]
        assert con.sql("SELECT current_setting('search_path')").fetchall() == [("public",)]


def _legacy_data_dir(path):
    """A data directory as Heron made it before `public`: user objects in DuckDB's `main`."""
    path.mkdir()
    con = duckdb.connect(str(path / "heron.duckdb"))
    con.execute("""
        CREATE SEQUENCE ids START 5; SELECT nextval('ids'); SELECT nextval('ids');
        CREATE TABLE "Authors" (id INTEGER PRIMARY KEY, name VARCHAR UNIQUE);
        CREATE TABLE books (id INTEGER DEFAULT nextval('ids') PRIMARY KEY,
                            title VARCHAR NOT NULL, author INTEGER REFERENCES "Authors"(id),
                            CHECK (id > 0));
        INSERT INTO "Authors" VALUES (1, 'Le Guin');
        INSERT INTO books (title, author) VALUES ('The Dispossessed', 1);
        CREATE INDEX books_title ON books (title);
        CREATE VIEW titles AS SELECT title FROM main.books;
        CREATE MACRO twice(x) AS 2 * x;
    """)
    con.close()


def test_a_data_dir_of_an_earlier_heron_is_migrated_to_public(tmp_path):
    _legacy_data_dir(tmp_path / "old")
    with Database(tmp_path / "old") as database:
        con = database.connect()
        assert sorted(con.sql("SELECT schema_name, table_name FROM duckdb_tables() WHERE "
                              "schema_name <> 'demo'").fetchall()) == [
            ("public", "Authors"), ("public", "books")]
        assert con.sql("SELECT * FROM titles").fetchall() == [("The Dispossessed",)]
        # The sequence goes on where it was; constraints and the index came along.
        con.execute("INSERT INTO books (title, author) VALUES ('Lathe of Heaven', 1)")
        assert con.sql("SELECT id FROM public.books ORDER BY id").fetchall() == [(7,), (8,)]
        # DuckDB's own foreign key became Heron's (`alter_table.own_foreign_keys`)
        assert [(k.name, k.table, k.columns, k.referenced, k.referenced_columns)
                for k in foreign_keys.read(con)] == [
            ("books_author_fkey", "books", ("author",), "Authors", ("id",))]
        assert not con.sql("SELECT * FROM duckdb_constraints() "
                           "WHERE constraint_type = 'FOREIGN KEY'").fetchall()
        assert con.sql("SELECT schema_name FROM duckdb_indexes()").fetchall() == [("public",)]
        # The macro stays in main, which therefore stays on the search path.
        assert con.sql("SELECT twice(21)").fetchall() == [(42,)]
        assert con.sql("SELECT current_setting('search_path')").fetchall() == [
            ("public,main",)]
    with Database(tmp_path / "old") as database:  # the migration runs once
        assert database.connect().sql("SELECT count(*) FROM books").fetchall() == [(2,)]


def test_a_sessions_search_path_is_found_once_per_catalog_generation(tmp_path):
    """`connect(generation)` keeps the search path found for a catalog generation (finding it
    scans the catalog): a table created in `main` puts `main` on the path of the sessions of the
    next generation; without a generation it looks again, and so it does when a schema of the
    path it kept is gone (the server advances the generation after each DDL statement, but a
    session may start in between)."""
    def path(con):
        return con.sql("SELECT current_setting('search_path')").fetchall()[0][0]

    with Database(tmp_path) as database:
        first = database.connect(1)
        assert path(first) == "public,demo"
        first.execute("CREATE TABLE main.legacy (id INTEGER)")
        assert path(database.connect(1)) == "public,demo"  # the same generation: kept
        assert path(database.connect(2)) == "public,main,demo"
        assert path(database.connect()) == "public,main,demo"
        first.execute("DROP SCHEMA demo CASCADE")
        assert path(database.connect(2)) == "public,main"
        first.execute("DROP TABLE main.legacy")
        assert path(database.connect(2)) == "public,main"  # kept: main itself is still there
        assert path(database.connect(3)) == "public"

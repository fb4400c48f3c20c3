"""Result-column origins (`heron.planner.column_origins`) over a real DuckDB catalog.

The differential test `tests/oracle/test_result_columns.py` compares what RowDescription says
with PostgreSQL 15; these pin the resolver's rules one by one, with OIDs read from DuckDB.
"""

from __future__ import annotations

import dataclasses

import duckdb
import pyarrow as pa
import pytest
import sqlglot

from heron.planner.column_origins import (
    NO_ORIGIN,
    Origin,
    Relations,
    announced,
    declared,
    moved_columns,
    numeric,
    origins,
    varchar,
    wire_type,
)
from heron.planner.pg_types import CHAR, INT2, JSON, JSONB, NUMERIC, TEXT, VARCHAR

SCHEMA = """
CREATE SCHEMA other;
CREATE TABLE books (id INTEGER, title VARCHAR CHECK (length(title) <= 20), price DECIMAL(8, 2));
CREATE TABLE authors (id INTEGER, name VARCHAR);
CREATE TABLE other.books (isbn VARCHAR);
CREATE VIEW cheap AS SELECT title, price * 2 AS twice FROM books;
CREATE VIEW cheaper AS SELECT * FROM cheap;
CREATE TEMP TABLE scratch (note VARCHAR CHECK (length(note) <= 5));
CREATE TABLE events (id INTEGER, payload JSON CHECK (json_valid(payload)), raw JSON,
                     v VARCHAR CHECK (json_valid(v)));
CREATE VIEW payloads AS SELECT payload, raw FROM events;
"""


@pytest.fixture(scope="module")
def con():
    con = duckdb.connect()
    con.execute(SCHEMA)
    yield con
    con.close()


@pytest.fixture(scope="module")
def relations(con) -> Relations:
    return Relations.load(con)


def _oid(con, name: str, schema: str = "main") -> int:
    return con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = ? AND "
                       "schema_name = ? UNION ALL SELECT view_oid FROM duckdb_views() WHERE "
                       "view_name = ? AND schema_name = ?", [name, schema, name, schema]
                       ).fetchall()[0][0]


def test_table_columns_carry_their_declared_types(con, relations):
    books = _oid(con, "books")
    assert origins("SELECT * FROM books", relations) == (
        Origin(books, 1), Origin(books, 2, VARCHAR.oid, 24),
        Origin(books, 3, NUMERIC.oid, numeric(8, 2).typmod))


def test_aliases_derived_tables_and_ctes_are_followed(con, relations):
    books, title = _oid(con, "books"), Origin(_oid(con, "books"), 2, VARCHAR.oid, 24)
    assert origins("SELECT b.title AS t, (b.id) FROM books AS b", relations) == (
        dataclasses.replace(title, name="t"), Origin(books, 1, name="id"))
    assert origins("SELECT s.x FROM (SELECT title FROM books) AS s(x)", relations) == (title,)
    assert origins("WITH c AS (SELECT title FROM books) SELECT * FROM c", relations) == (title,)
    assert origins("SELECT t.* FROM (SELECT id FROM books) t", relations) == (Origin(books, 1),)


def test_computed_columns_have_none(relations):
    assert origins("SELECT id + 1, upper(title), count(*) FROM books GROUP BY 1, 2",
                   relations) == (Origin(name="?column?"), Origin(name="upper"),
                                  Origin(name="count"))
    assert origins("SELECT 1", relations) is None  # nothing to follow: not even parsed


def test_casts_declare_their_types(relations):
    assert _unnamed(origins("SELECT 'x'::varchar(3), CAST(1 AS numeric(4, 1)), 2::numeric, "
                            "'y'::varchar, 3::int FROM books", relations)) == (
        varchar(3), numeric(4, 1), NO_ORIGIN, varchar(None), NO_ORIGIN)


def test_views_are_their_own_origin_with_the_types_their_definitions_declare(con, relations):
    cheap, cheaper = _oid(con, "cheap"), _oid(con, "cheaper")
    assert origins("SELECT * FROM cheap", relations) == (
        Origin(cheap, 1, VARCHAR.oid, 24), Origin(cheap, 2))
    assert origins("SELECT title FROM cheaper", relations) == (
        Origin(cheaper, 1, VARCHAR.oid, 24),)


def test_names_resolve_through_schemas_and_temporary_tables(con, relations):
    assert origins("SELECT isbn FROM other.books", relations) == (
        Origin(_oid(con, "books", "other"), 1),)
    scratch = con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = 'scratch'"
                          ).fetchall()[0][0]
    assert origins("SELECT note FROM scratch", relations) == (
        Origin(scratch, 1, VARCHAR.oid, 9),)
    assert origins("SELECT x FROM nowhere", relations) == (NO_ORIGIN,)
    assert origins("SELECT * FROM nowhere", relations) is None


def test_ambiguous_and_unknown_references_have_no_origin(relations):
    assert origins("SELECT id FROM books, authors", relations) == (NO_ORIGIN,)
    assert origins("SELECT id FROM books, read_csv('x.csv')", relations) == (NO_ORIGIN,)
    assert origins("SELECT * FROM books, generate_series(1, 2)", relations) is None
    assert origins("SELECT * EXCLUDE (id) FROM books", relations, dialect="duckdb") is None


def test_joins_using_list_the_merged_columns_first(con, relations):
    books, authors = _oid(con, "books"), _oid(con, "authors")
    assert origins("SELECT * FROM authors JOIN books USING (id)", relations) == (
        Origin(authors, 1), Origin(authors, 2), Origin(books, 2, VARCHAR.oid, 24),
        Origin(books, 3, NUMERIC.oid, numeric(8, 2).typmod))
    assert origins("SELECT id FROM authors RIGHT JOIN books USING (id)", relations) == (
        Origin(books, 1),)
    assert origins("SELECT id, name FROM authors NATURAL FULL JOIN books", relations) == (
        NO_ORIGIN, Origin(authors, 2))
    assert origins("SELECT * FROM authors NATURAL JOIN books", relations) == (
        Origin(authors, 1), Origin(authors, 2), *origins("SELECT title, price FROM books",
                                                         relations))
    cheap = _oid(con, "cheap")
    title = Origin(books, 2, VARCHAR.oid, 24)
    assert origins("SELECT * FROM books NATURAL JOIN cheap", relations) == (  # moved first
        title, Origin(books, 1), Origin(books, 3, NUMERIC.oid, numeric(8, 2).typmod),
        Origin(cheap, 2))
    assert origins("SELECT * FROM books JOIN cheap USING (title), authors", relations) == (
        title, Origin(books, 1), Origin(books, 3, NUMERIC.oid, numeric(8, 2).typmod),
        Origin(cheap, 2), Origin(authors, 1), Origin(authors, 2))
    # a full join's merged column is computed, of the type both sides declare
    assert origins("SELECT * FROM books FULL JOIN cheap USING (title)", relations)[0] == (
        varchar(20))


def test_chains_of_joins_list_each_join_s_merged_columns_first(con, relations):
    books, authors, cheap = _oid(con, "books"), _oid(con, "authors"), _oid(con, "cheap")
    chain = (Origin(books, 2, VARCHAR.oid, 24), Origin(authors, 1), Origin(authors, 2),
             Origin(books, 3, NUMERIC.oid, numeric(8, 2).typmod), Origin(cheap, 2))
    for sql in ("SELECT * FROM authors JOIN books USING (id) JOIN cheap USING (title)",
                "SELECT * FROM (authors JOIN books USING (id)) NATURAL JOIN cheap",
                "SELECT * FROM authors NATURAL JOIN books JOIN cheap USING (title)",
                "WITH j AS (SELECT * FROM authors NATURAL JOIN books) "
                "SELECT * FROM j JOIN cheap USING (title)",
                "SELECT * FROM (SELECT * FROM authors JOIN books USING (id)) AS j "
                "NATURAL JOIN cheap"):
        assert origins(sql, relations) == chain, sql
    assert origins("SELECT name, title FROM authors NATURAL JOIN books NATURAL JOIN cheap",
                   relations) == (Origin(authors, 2), Origin(books, 2, VARCHAR.oid, 24))


def test_stars_duckdb_cannot_be_made_to_list_as_postgresql_are_unknown(relations):
    # a comma before a join USING: PostgreSQL joins `books JOIN cheap` first
    assert origins("SELECT * FROM authors, books JOIN cheap USING (title)", relations) is None
    # a moved column's name is another column's too
    assert origins("SELECT * FROM books NATURAL JOIN cheap CROSS JOIN cheap AS c2",
                   relations) is None
    assert origins("SELECT * FROM authors JOIN books USING (id) CROSS JOIN authors AS a2",
                   relations) is not None  # (where DuckDB's star has it: nothing moved)
    # a side's columns are unknown
    assert origins("SELECT * FROM books NATURAL JOIN read_csv('x.csv')", relations) is None
    # PostgreSQL refuses a common column the left side has twice
    assert origins("SELECT * FROM books JOIN books AS b2 ON true NATURAL JOIN cheap",
                   relations) is None


def test_moved_columns_are_the_merged_ones_postgresql_lists_first(relations):
    def moved(sql: str, known: Relations | None = None) -> tuple[str, ...]:
        return moved_columns(sqlglot.parse_one(sql, read="postgres"), known or relations)

    assert moved("SELECT * FROM books NATURAL JOIN cheap") == ("title",)
    assert moved("SELECT * FROM authors NATURAL JOIN books") == ()  # DuckDB's order already
    assert moved("SELECT * FROM books JOIN authors USING (id) JOIN cheap USING (title)") == (
        "title", "id")
    assert moved("SELECT * FROM books JOIN cheap USING (title, price)") == ()  # no cheap.price
    # unknown columns: one join USING is moved all the same, a chain is left as it is
    nothing = Relations({}, ())
    assert moved("SELECT * FROM books JOIN cheap USING (twice, id)", nothing) == (
        "twice", "id")
    assert moved("SELECT * FROM books JOIN cheap USING (title) JOIN authors USING (id)",
                 nothing) == ()

    def unreadable() -> Relations:
        raise AssertionError("read")

    assert moved_columns(sqlglot.parse_one("SELECT * FROM books JOIN cheap ON true"),
                         unreadable) == ()


def test_set_operations_take_the_first_branch_type(relations):
    assert origins("SELECT title FROM books UNION SELECT title FROM books", relations) == (
        varchar(20),)
    assert origins("SELECT title FROM books UNION SELECT name FROM authors", relations) == (
        varchar(None),)
    assert origins("SELECT name FROM authors UNION SELECT title FROM books", relations) == (
        NO_ORIGIN,)


def test_relations_are_read_only_when_the_query_names_one():
    def unreadable() -> Relations:
        raise AssertionError("read")

    assert _unnamed(origins("SELECT 'x'::varchar(2) FROM (VALUES (1)) v", unreadable)) == (
        varchar(2),)


def test_a_column_is_announced_as_declared_only_where_it_encodes_alike():
    assert announced(TEXT.oid, varchar(3)) == (VARCHAR.oid, 7)
    assert announced(NUMERIC.oid, numeric(4, 1)) == (NUMERIC.oid, numeric(4, 1).typmod)
    assert announced(23, varchar(3)) == (23, -1)  # an integer's values are no varchar's
    assert announced(TEXT.oid, NO_ORIGIN) == (TEXT.oid, -1)


# -- the catalog shim's relations ---------------------------------------------------------------

def test_catalog_columns_read_the_catalog_table_and_declare_char_and_name():
    found = origins("SELECT t.typname, t.typtype, n.nspname FROM pg_catalog.pg_type t "
                    "JOIN pg_namespace n ON n.oid = t.typnamespace", lambda: pytest.fail(
                        "a catalog query needs no user relations"))
    assert found == (Origin(1247, 2, 19), Origin(1247, 7, 18), Origin(2615, 2, 19))


def test_char_through_a_union_only_where_both_branches_are():
    relations = Relations({}, ())
    both = origins("SELECT typtype FROM pg_type UNION ALL SELECT relkind FROM pg_class", relations)
    assert both == (Origin(type_oid=18),)
    mixed = origins("SELECT typtype FROM pg_type UNION ALL SELECT typname FROM pg_type", relations)
    assert mixed == (NO_ORIGIN,)


def test_wire_type_announces_char_over_text_only():
    char = Origin(1259, 17, 18)
    assert wire_type(pa.string(), char) == (CHAR, -1)
    assert wire_type(pa.int16(), char) == (INT2, -1)
    assert wire_type(pa.string(), NO_ORIGIN) == (TEXT, -1)
    assert wire_type(pa.string(), varchar(5)) == (VARCHAR, 9)


def test_jsonb_is_a_declared_type(con, relations):
    events, payloads = _oid(con, "events"), _oid(con, "payloads")
    jsonb = Origin(type_oid=JSONB.oid)
    # Heron's DDL marks a jsonb column with json_valid(col) (on a JSON column only).
    assert origins("SELECT * FROM events", relations) == (
        Origin(events, 1), Origin(events, 2, JSONB.oid), Origin(events, 3), Origin(events, 4))
    assert origins("SELECT * FROM payloads", relations) == (
        Origin(payloads, 1, JSONB.oid), Origin(payloads, 2))
    assert origins("WITH c AS (SELECT payload AS p FROM events) SELECT p FROM c", relations) == (
        Origin(events, 2, JSONB.oid),)
    # a cast, -> and #> of jsonb (not of json), the jsonb functions DuckDB computes
    assert _unnamed(origins(
        "SELECT '{}'::jsonb, CAST(raw AS jsonb), payload -> 'a', payload -> 'a' -> 0, "
        "payload #> '{a}', raw -> 'a', payload ->> 'a', jsonb_build_object('a', 1), "
        "jsonb_build_array(1), jsonb_agg(id), jsonb_object_agg('k', id), "
        "json_build_object('a', 1) FROM events", relations)) == (
        jsonb, jsonb, jsonb, jsonb, jsonb, NO_ORIGIN, NO_ORIGIN, jsonb, jsonb, jsonb, jsonb,
        NO_ORIGIN)
    assert _unnamed(origins("SELECT jsonb_build_object('a', 1)", relations)) == (  # no FROM
        jsonb,)
    assert origins("SELECT payload FROM events UNION ALL SELECT '{}'", relations) == (jsonb,)


def test_jsonb_is_announced_over_json_values_only():
    jsonb = Origin(type_oid=JSONB.oid)
    assert announced(JSON.oid, jsonb) == (JSONB.oid, -1)
    assert announced(TEXT.oid, jsonb) == (TEXT.oid, -1)
    assert wire_type(pa.json_(), jsonb) == (JSONB, -1)
    assert wire_type(pa.json_(), NO_ORIGIN) == (JSON, -1)


def test_returning_columns_are_followed_as_the_target_table_s(con, relations):
    events = _oid(con, "events")
    payload, raw = Origin(events, 2, JSONB.oid), Origin(events, 3)
    assert origins("INSERT INTO events (id, payload) VALUES (1, '{}') RETURNING payload, raw, "
                   "payload -> 'a', id + 1", relations) == (
        payload, raw, Origin(type_oid=JSONB.oid, name="?column?"), Origin(name="?column?"))
    # a star is the target's columns (DuckDB's RETURNING lists no FROM item's)
    assert origins("UPDATE events AS e SET id = 2 FROM books b WHERE b.id = e.id "
                   "RETURNING *, b.title, e.payload", relations) == (
        Origin(events, 1), payload, raw, Origin(events, 4),
        Origin(_oid(con, "books"), 2, VARCHAR.oid, 24), payload)
    assert origins("WITH c AS (SELECT 1) DELETE FROM scratch USING c RETURNING note",
                   relations)[0].typmod == 9
    assert origins("INSERT INTO events VALUES (1)", relations) is None


def test_an_expression_s_declared_type_is_found_where_it_stands(relations):
    tree = sqlglot.parse_one(
        "SELECT (SELECT max(title) FROM books WHERE title = e.v) FROM events e "
        "WHERE e.payload -> 'a' IS NOT NULL", read="postgres")
    title = next(c for c in tree.find_all(sqlglot.exp.Column) if c.name == "title")
    arrow = tree.find(sqlglot.exp.JSONExtract)
    assert declared(title, relations).type_oid == VARCHAR.oid
    assert declared(arrow, relations) == Origin(type_oid=JSONB.oid)
    returning = sqlglot.parse_one("INSERT INTO scratch VALUES ('a') RETURNING note",
                                  read="postgres")
    assert declared(returning.args["returning"].expressions[0], relations).typmod == 9
    assert declared(sqlglot.parse_one("SELECT 1", read="postgres").expressions[0],
                    relations) == NO_ORIGIN


def _unnamed(found: tuple[Origin, ...] | None) -> tuple[Origin, ...] | None:
    """`found` without the names `result_names` gives (`tests/planner/test_result_names.py`)."""
    return None if found is None else tuple(dataclasses.replace(o, name=None) for o in found)

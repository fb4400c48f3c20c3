"""pg_get_viewdef's text of DuckDB's view statements, against PostgreSQL 15's for the same views.

The expected texts were printed by PostgreSQL 15 (pg_get_viewdef(view, true), and once without
the pretty flag) for the same CREATE VIEW statements on the same tables.
"""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import pg_catalog
from heron.planner.pg_catalog_rewrite import rewrite

TABLES = ("CREATE TABLE cat_books (id INTEGER, title VARCHAR CHECK (length(title) <= 200), "
          "author_id INTEGER, price DECIMAL(10,2), published DATE)",
          "CREATE TABLE cat_authors (id INTEGER, name VARCHAR)")
VIEWS = {
    "SELECT id, title FROM cat_books WHERE price < 10":
        " SELECT cat_books.id,\n    cat_books.title\n   FROM cat_books\n"
        "  WHERE cat_books.price < 10::numeric;",
    "SELECT b.id, b.title AS t, a.name FROM cat_books b JOIN cat_authors a ON a.id = "
    "b.author_id WHERE b.price > 5 AND a.name <> 'x' ORDER BY b.id LIMIT 3":
        " SELECT b.id,\n    b.title AS t,\n    a.name\n   FROM cat_books b\n"
        "     JOIN cat_authors a ON a.id = b.author_id\n"
        "  WHERE b.price > 5::numeric AND a.name <> 'x'::text\n  ORDER BY b.id\n LIMIT 3;",
    "SELECT author_id, count(*) AS n, sum(price) FROM cat_books GROUP BY author_id "
    "HAVING count(*) > 0":
        " SELECT cat_books.author_id,\n    count(*) AS n,\n    sum(cat_books.price) AS sum\n"
        "   FROM cat_books\n  GROUP BY cat_books.author_id\n HAVING count(*) > 0;",
    "SELECT id, lower(title), price * 2 AS p2, published >= '2000-01-01' AS recent, "
    "coalesce(price, 0) FROM cat_books WHERE title LIKE 'S%' OR id IN (1, 2)":
        " SELECT cat_books.id,\n    lower(cat_books.title::text) AS lower,\n"
        "    cat_books.price * 2::numeric AS p2,\n"
        "    cat_books.published >= '2000-01-01'::date AS recent,\n"
        "    COALESCE(cat_books.price, 0::numeric) AS \"coalesce\"\n   FROM cat_books\n"
        "  WHERE cat_books.title::text ~~ 'S%'::text OR (cat_books.id = ANY (ARRAY[1, 2]));",
    "SELECT * FROM cat_authors":
        " SELECT cat_authors.id,\n    cat_authors.name\n   FROM cat_authors;",
    "SELECT id, CAST(author_id AS BIGINT), [1, 2] AS arr FROM cat_books WHERE id BETWEEN 1 "
    "AND 5 AND title IS NOT NULL AND author_id NOT IN (3, 4) AND published > DATE '2020-01-01'":
        " SELECT cat_books.id,\n    cat_books.author_id::bigint AS author_id,\n"
        "    ARRAY[1, 2] AS arr\n   FROM cat_books\n  WHERE cat_books.id >= 1 AND cat_books.id"
        " <= 5 AND cat_books.title IS NOT NULL AND (cat_books.author_id <> ALL (ARRAY[3, 4]))"
        " AND cat_books.published > '2020-01-01'::date;",
    "SELECT DISTINCT name FROM cat_authors":
        " SELECT DISTINCT cat_authors.name\n   FROM cat_authors;",
    "SELECT a.name, (SELECT count(*) FROM cat_books b WHERE b.author_id = a.id) AS books "
    "FROM cat_authors a LEFT JOIN cat_books c ON c.author_id = a.id":
        " SELECT a.name,\n    ( SELECT count(*) AS count\n           FROM cat_books b\n"
        "          WHERE b.author_id = a.id) AS books\n   FROM cat_authors a\n"
        "     LEFT JOIN cat_books c ON c.author_id = a.id;",
}
NOT_PRETTY = (
    " SELECT b.id,\n    b.title AS t,\n    a.name\n   FROM (cat_books b\n"
    "     JOIN cat_authors a ON ((a.id = b.author_id)))\n"
    "  WHERE ((b.price > (5)::numeric) AND (a.name <> 'x'::text))\n  ORDER BY b.id\n LIMIT 3;")


@pytest.fixture(scope="module")
def catalog():
    con = duckdb.connect()
    catalog = pg_catalog.Catalog(con)
    for sql in TABLES:
        con.execute(sql)
    for number, query in enumerate(VIEWS):
        con.execute(f"CREATE VIEW v{number} AS {query}")
    yield catalog
    con.close()


def viewdef(catalog: pg_catalog.Catalog, view: str, *pretty: bool) -> str:
    flag = "".join(f", {p}" for p in pretty)
    sql = rewrite(f"SELECT pg_catalog.pg_get_viewdef('{view}'::regclass{flag})")
    catalog.refresh(sql)
    return catalog.con.sql(sql).fetchall()[0][0]


@pytest.mark.parametrize("number", range(len(VIEWS)))
def test_pretty_text_is_postgresql_s(catalog, number):
    assert viewdef(catalog, f"v{number}", True) == list(VIEWS.values())[number]


def test_text_without_pretty_flag_is_postgresql_s(catalog):
    assert viewdef(catalog, "v1") == NOT_PRETTY


@pytest.mark.parametrize("query", [
    "SELECT id FROM cat_authors UNION SELECT id FROM cat_books",
    "SELECT CASE WHEN id > 1 THEN 'big' END FROM cat_authors",
    "SELECT row_number() OVER (ORDER BY id) FROM cat_authors",
    "SELECT * EXCLUDE (name) FROM cat_authors",
    "SELECT id FROM cat_authors GROUP BY ALL",
    "SELECT id FROM cat_authors LEFT JOIN cat_books USING (id)",
])
def test_unknown_shapes_fall_back_to_duckdb_s_text(catalog, query):
    con = catalog.con
    con.execute(f"CREATE OR REPLACE VIEW w AS {query}")
    stored = con.sql("SELECT sql FROM duckdb_views() WHERE view_name = 'w'").fetchall()[0][0]
    assert viewdef(catalog, "w", True) == stored.split(" AS ", 1)[1]

"""What RowDescription tells of result columns, Heron against PostgreSQL 15 on the same schema.

Beside a column's name and type, PostgreSQL announces the table column it reads unchanged (the
relation's OID and the column's number) and the type modifier it declares (varchar(n),
numeric(p, s)); pgjdbc's ResultSetMetaData and asyncpg's attributes read them. Each query's
columns are compared as (name, type OID, typmod, relation name, column number), the relation
named through each server's pg_class (the two number relations differently), over the simple
protocol, in binary and as a prepared statement.
"""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)

QUERIES = {
    "star": "SELECT * FROM cat_books",
    "join_aliases": "SELECT b.title AS t, b.price, a.name FROM cat_books b "
                    "JOIN cat_authors a ON a.id = b.author_id",
    "qualified_star": "SELECT a.*, b.id FROM cat_authors a, cat_books b",
    "join_using": "SELECT * FROM cat_books b JOIN cat_cheap_books c USING (id, title)",
    "right_join_using": "SELECT *, title FROM cat_books RIGHT JOIN cat_cheap_books USING (title)",
    "full_join_using": "SELECT * FROM cat_books FULL JOIN cat_cheap_books USING (id)",
    "natural_join": "SELECT * FROM cat_authors NATURAL JOIN cat_books",
    "view": "SELECT * FROM cat_cheap_books",
    "view_column": "SELECT title FROM public.cat_cheap_books",
    "derived_table": "SELECT s.title FROM (SELECT title, price FROM cat_books) AS s",
    "derived_renamed": "SELECT * FROM (SELECT title, price FROM cat_books) AS s(x)",
    "cte": "WITH c AS (SELECT title, price FROM cat_books) SELECT price, title FROM c",
    "computed": "SELECT title || '!' AS shout, price * 2 AS twice, count(*) OVER () AS n "
                "FROM cat_books",
    "casts": "SELECT 'abc'::varchar(5) AS v, 1.5::numeric(4, 2) AS n, "
             "CAST(title AS varchar(10)) AS t FROM cat_books",
    "union": "SELECT title FROM cat_books UNION ALL SELECT title FROM cat_cheap_books",
    "union_mixed": "SELECT title FROM cat_books UNION SELECT name FROM cat_authors",
    "union_text_first": "SELECT name FROM cat_authors UNION SELECT title FROM cat_books",
    "union_numeric": "SELECT price FROM cat_books UNION SELECT price FROM cat_books "
                     "EXCEPT SELECT 1",
    "parenthesized": "(SELECT (title), price FROM cat_books)",
    "no_from": "SELECT 1 AS one, 'x' AS x",
    "catalog_char": "SELECT t.typtype, t.typdelim, c.relkind FROM pg_catalog.pg_type t "
                    "JOIN pg_class c ON c.oid = t.typrelid WHERE c.relname = 'cat_books'",
    "regtype": "SELECT pg_typeof(1) AS t, 'int4'::regtype AS r, 'cat_books'::regclass AS c",
    "jsonb_columns": "SELECT payload, raw, payload -> 'kind' AS kind, raw -> 'kind' AS r, "
                     "payload ->> 'kind' AS t FROM cat_events",
    "jsonb_view": "SELECT * FROM cat_event_payloads",
    "jsonb_computed": "SELECT '{}'::jsonb AS c, jsonb_build_object('a', id) AS o, "
                      "jsonb_agg(id) OVER () AS a FROM cat_events",
}


# How the query is sent: psycopg uses the simple protocol for a text query without parameters,
# the extended one for binary results; `prepare` names a server-side prepared statement.
MODES = {"simple": {}, "binary": {"binary": True}, "prepared": {"prepare": True}}


def _described(server, sql: str, mode: str) -> list[tuple]:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute(sql, **MODES[mode])
        result = cur.pgresult
        columns = []
        for i in range(result.nfields):
            table = result.ftable(i)
            name = None if table == 0 else conn.execute(
                "SELECT relname FROM pg_catalog.pg_class WHERE oid = %s", (table,)).fetchone()[0]
            columns.append((result.fname(i).decode(), result.ftype(i), result.fmod(i), name,
                            result.ftablecol(i)))
        return columns


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", QUERIES)
def test_result_columns_are_described_as_postgresql_does(servers, query, mode):
    heron, postgres = servers
    sql = QUERIES[query]
    assert _described(heron, sql, mode) == _described(postgres, sql, mode)


# Unaliased expressions, named after what they are (FigureColname), and aliases, folded to lower
# case unless quoted: only the names are compared (some of these types are DuckDB's).
NAMED = {
    "aliases": "SELECT id AS Id, title AS \"Title\", price AS PRICE FROM cat_books",
    "casts": "SELECT 'x'::varchar(3), CAST(1 AS numeric(4, 1)), 1::text, id::text, "
             "CAST(title AS text), 2::int, true::boolean, '2020-01-01'::date FROM cat_books",
    "case": "SELECT CASE WHEN id = 1 THEN 'a' END, CASE WHEN id = 1 THEN 'a' ELSE title END, "
            "CASE id WHEN 1 THEN upper(title) ELSE lower(title) END FROM cat_books",
    "operators": "SELECT id + 1, -id, title || '!', id = 1, title ~ 'S', title LIKE 'S%', "
                 "id IS NULL, NOT true, 5 % 2, 1, 'x', NULL FROM cat_books",
    "functions": "SELECT upper(title), lower(title), length(title), abs(-1), round(price), "
                 "power(2, 3), mod(5, 2), ceil(1.5), ceiling(1.5), floor(1.5), initcap(title), "
                 "chr(65), replace(title, 'a', 'b'), concat(title, 'x') FROM cat_books",
    "special_syntax": "SELECT trim(' a '), trim(leading 'x' from title), substr(title, 1, 2), "
                      "substring(title from 1 for 2), position('o' in title), "
                      "coalesce(price, 0), nullif(id, 1), greatest(1, 2), least(1, 2), "
                      "current_date, extract(year from published), "
                      "date_part('year', published) FROM cat_books",
    "aggregates": "SELECT count(*), count(id), sum(id), max(title), string_agg(title, ','), "
                  "array_agg(id), bool_and(true) FROM cat_books",
    "windows": "SELECT row_number() OVER (), rank() OVER (ORDER BY id), "
               "sum(id) OVER () FROM cat_books",
    "constructors": "SELECT ARRAY[1, 2], (ARRAY[1, 2])[2], tags[1], ROW(1, 2), "
                    "EXISTS (SELECT 1), (SELECT max(id) FROM cat_authors), "
                    "(SELECT name AS n FROM cat_authors LIMIT 1) FROM cat_books",
    "nested": "SELECT CAST(id + 1 AS text), CAST(initcap(title) AS text), (id), "
              "upper(id::text), (ceil(price))::int, count(DISTINCT id), "
              "percentile_cont(0.5) WITHIN GROUP (ORDER BY price), "
              "title COLLATE \"C\", array_length(tags, 1), date_trunc('day', published), "
              "interval '1 day', min(published) + 1 FROM cat_books "
              "GROUP BY id, title, tags, published, price",
    "quoted_call": "SELECT \"upper\"(title), pg_catalog.lower(title) FROM cat_books",
    "union": "SELECT id + 1, title AS T FROM cat_books UNION SELECT 1, 'x'",
    "no_from": "SELECT 1, 'a', 1 AS One, now() IS NOT NULL, version() IS NULL, upper('a')",
}


def _names(server, sql: str) -> list[str]:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.execute(sql)
        return [column.name for column in cur.description]


@pytest.mark.parametrize("query", NAMED)
def test_result_columns_are_named_as_postgresql_names_them(servers, query):
    heron, postgres = servers
    assert _names(heron, NAMED[query]) == _names(postgres, NAMED[query])

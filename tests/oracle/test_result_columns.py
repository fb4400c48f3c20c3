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

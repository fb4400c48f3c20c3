"""GROUP BY a primary key (`grouped_keys`): the table's other columns grouped too, as PostgreSQL's
functional dependency lets a query select them. (tests/oracle/test_ddl_statements.py
`group_by_a_primary_key` compares answers with PostgreSQL 15.)"""

from __future__ import annotations

import pytest
from support.planning import rows, run

from heron.planner.errors import SqlError


@pytest.fixture
def keyed(planner):
    for sql in ("CREATE TABLE author (id int PRIMARY KEY, name text, born date)",
                "CREATE TABLE book (id int PRIMARY KEY, author_id int, pages int)",
                "CREATE TABLE pair (a int, b int, note text, PRIMARY KEY (a, b))",
                "INSERT INTO author VALUES (1, 'Ann', NULL), (2, 'Bob', '2000-01-01')",
                "INSERT INTO book VALUES (1, 1, 10), (2, 1, 20), (3, 2, 5)",
                "INSERT INTO pair VALUES (1, 1, 'x'), (1, 2, 'y')"):
        run(planner, sql)
    return planner


@pytest.mark.parametrize(("sql", "expected"), [
    # Django's annotate(Count(...)): grouped by the key, every column selected
    ('SELECT "author"."id", "author"."name", "author"."born", COUNT("book"."id") AS "n" '
     'FROM "author" LEFT OUTER JOIN "book" ON ("author"."id" = "book"."author_id") '
     'GROUP BY "author"."id" ORDER BY "author"."name"',
     [(1, "Ann", None, 2), (2, "Bob", "2000-01-01", 1)]),
    ("SELECT a.name, sum(b.pages) FROM author a JOIN book b ON a.id = b.author_id "
     "GROUP BY a.id ORDER BY 1", [("Ann", 30), ("Bob", 5)]),
    ("SELECT name, count(*) FROM author GROUP BY id ORDER BY 1", [("Ann", 1), ("Bob", 1)]),
    ("SELECT note FROM pair GROUP BY a, b ORDER BY 1", [("x",), ("y",)]),
    ("SELECT x.name FROM (SELECT a.name FROM author a GROUP BY a.id) x ORDER BY 1",
     [("Ann",), ("Bob",)]),
])
def test_a_query_grouped_by_a_key_selects_the_tables_columns(keyed, sql, expected):
    found = [tuple(str(v) if hasattr(v, "isoformat") else v for v in row)
             for row in rows(keyed, sql)]
    assert found == expected


@pytest.mark.parametrize("sql", [
    "SELECT pages, count(*) FROM book GROUP BY author_id",  # not a key
    "SELECT note FROM pair GROUP BY a",  # part of a key
    "SELECT name FROM author GROUP BY ROLLUP (id)",
])
def test_a_query_grouped_otherwise_is_refused_as_before(keyed, sql):
    with pytest.raises(SqlError) as info:
        rows(keyed, sql)
    assert info.value.sqlstate == "42803"

"""A star over joins that merge columns (USING, NATURAL), Heron against PostgreSQL 15.

PostgreSQL's star over `l JOIN r USING (cols)` (or NATURAL, the common columns in the left
side's order) lists the merged columns first, then the rest of the left side, then the rest of
the right side; over a chain of joins the left side is itself the joined relation. Each query is
compared as `test_result_columns` compares columns (name, type OID, typmod, relation name,
column number) and by its rows, over the simple protocol, in binary and prepared. The tables are
this module's own: created on both servers before its tests and dropped after them.
"""

from __future__ import annotations

import pytest
from oracle.test_result_columns import MODES

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)

TABLES = {
    "star_a": ("(p INTEGER, x INTEGER, y VARCHAR(10), q NUMERIC(6,2))",
               "(1, 1, 'one', 1.50), (2, 2, 'two', 2.50), (3, 3, 'three', NULL)"),
    "star_b": ("(y VARCHAR(10), r TEXT, x INTEGER)",
               "('one', 'r1', 1), ('two', 'r2', 2), ('four', 'r4', 4)"),
    "star_c": ("(s INTEGER, r TEXT, t INTEGER)",
               "(10, 'r1', 100), (20, 'r4', 200), (30, 'r9', 300)"),
    "star_d": ("(t INTEGER, u TEXT)", "(100, 'u100'), (300, 'u300')"),
}

QUERIES = {
    # NATURAL: the common columns (x, y) are not the left side's first ones
    "natural": "SELECT * FROM star_a NATURAL JOIN star_b",
    "natural_left": "SELECT * FROM star_a NATURAL LEFT JOIN star_b",
    "natural_right": "SELECT * FROM star_a NATURAL RIGHT JOIN star_b",
    "natural_full": "SELECT * FROM star_a NATURAL FULL JOIN star_b",
    "natural_full_right_first": "SELECT * FROM star_b NATURAL FULL OUTER JOIN star_a",
    # USING: two columns in an order neither table has them in; outer joins
    "using_reordered": "SELECT * FROM star_a JOIN star_b USING (y, x)",
    "using_left": "SELECT * FROM star_a LEFT JOIN star_b USING (x)",
    "using_right": "SELECT * FROM star_a RIGHT JOIN star_b USING (x)",
    "using_full": "SELECT * FROM star_a FULL JOIN star_b USING (x)",
    "using_full_two": "SELECT * FROM star_a AS a FULL JOIN star_b AS b USING (y, x)",
    # chains: the left side is the joined relation, with its own order
    "chain_using": "SELECT * FROM star_a JOIN star_b USING (x) JOIN star_c USING (r)",
    "chain_three": "SELECT * FROM star_a NATURAL JOIN star_b JOIN star_c USING (r) "
                   "JOIN star_d USING (t)",
    "chain_on_then_using": "SELECT * FROM star_a JOIN star_c ON star_a.p * 10 = star_c.s "
                           "JOIN star_b USING (r)",
    "chain_using_then_on": "SELECT * FROM star_a JOIN star_b USING (x) "
                           "JOIN star_c ON star_c.r = star_b.r",
    "chain_cross_then_using": "SELECT * FROM star_a CROSS JOIN star_d JOIN star_c USING (t)",
    "chain_parenthesized": "SELECT * FROM (star_a JOIN star_b USING (x)) JOIN star_c USING (r)",
    "chain_outer": "SELECT * FROM star_a FULL JOIN star_b USING (x) LEFT JOIN star_c USING (r)",
    "chain_natural_outer": "SELECT * FROM star_b NATURAL FULL JOIN star_a "
                           "NATURAL LEFT JOIN star_c",
    # a star among other items, twice, qualified
    "star_mixed": "SELECT p AS first, *, x FROM star_a NATURAL JOIN star_b",
    "star_and_qualified": "SELECT star_b.*, * FROM star_a NATURAL JOIN star_b",
    "qualified": "SELECT star_a.* FROM star_a JOIN star_b USING (x)",
    "qualified_full": "SELECT b.*, a.* FROM star_a a FULL JOIN star_b b USING (x)",
    "qualified_chain": "SELECT star_c.*, star_a.* FROM star_a JOIN star_b USING (x) "
                       "JOIN star_c USING (r)",
    # nested: a derived table, a CTE
    "subquery": "SELECT * FROM (SELECT * FROM star_a NATURAL JOIN star_b) AS s",
    "subquery_qualified": "SELECT s.* FROM (SELECT * FROM star_a JOIN star_b USING (y, x)) AS s "
                          "WHERE s.p > 0",
    "subquery_joined": "SELECT * FROM star_c JOIN (SELECT * FROM star_a NATURAL JOIN star_b) "
                       "AS ab USING (r)",
    "cte": "WITH j AS (SELECT * FROM star_a JOIN star_b USING (x, y)) "
           "SELECT * FROM j NATURAL JOIN star_c",
    # the star's order decides positions
    "order_by_position": "SELECT * FROM star_a NATURAL FULL JOIN star_b ORDER BY 1 DESC LIMIT 2",
}


@pytest.fixture(scope="module")
def star_servers(servers):
    for server in servers:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for name, (columns, rows) in TABLES.items():
                conn.execute(f"CREATE TABLE {name} {columns}")
                conn.execute(f"INSERT INTO {name} VALUES {rows}")
    yield servers
    for server in servers:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for name in TABLES:
                conn.execute(f"DROP TABLE {name}")


def _observed(server, sql: str, mode: str) -> tuple[list[tuple], list[tuple]]:
    """The columns as `test_result_columns` describes them, and the rows (sorted unless the
    query orders them)."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        rows = cur.execute(sql, **MODES[mode]).fetchall()
        result, columns = cur.pgresult, []
        for i in range(result.nfields):
            table = result.ftable(i)
            name = None if table == 0 else conn.execute(
                "SELECT relname FROM pg_catalog.pg_class WHERE oid = %s", (table,)).fetchone()[0]
            columns.append((result.fname(i).decode(), result.ftype(i), result.fmod(i), name,
                            result.ftablecol(i)))
    return columns, rows if "ORDER BY" in sql else sorted(rows, key=repr)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", QUERIES)
def test_star_over_merging_joins_is_postgresql_s(star_servers, query, mode):
    heron, postgres = star_servers
    sql = QUERIES[query]
    assert _observed(heron, sql, mode) == _observed(postgres, sql, mode)

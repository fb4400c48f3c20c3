"""Views' dependencies (`planner.view_dependencies`): DROP of a relation a view reads is
PostgreSQL's 2BP01 naming the dependents, or drops them too under CASCADE."""

from __future__ import annotations

import pytest
from support.planning import rows, run

from heron.planner.errors import SqlError


@pytest.fixture
def views(planner):
    for sql in ("CREATE TABLE t (a int)", "CREATE TABLE u (a int)",
                "CREATE VIEW v AS SELECT * FROM t", "CREATE VIEW w AS SELECT * FROM v JOIN "
                "main.u USING (a)", "CREATE MATERIALIZED VIEW m AS SELECT a FROM u",
                "CREATE VIEW over_m AS SELECT * FROM m",
                "CREATE VIEW shadowed AS WITH t AS (SELECT 1 AS a) SELECT * FROM t"):
        run(planner, sql)
    return planner


@pytest.mark.parametrize(("sql", "message", "detail"), [
    ("DROP TABLE t", "cannot drop table t because other objects depend on it",
     "view v depends on table t\nview w depends on view v"),
    ("DROP VIEW v", "cannot drop view v because other objects depend on it",
     "view w depends on view v"),
    ("DROP TABLE u RESTRICT", "cannot drop table u because other objects depend on it",
     "view w depends on table u\nmaterialized view m depends on table u\n"
     "view over_m depends on materialized view m"),
    ("DROP MATERIALIZED VIEW m", "cannot drop materialized view m because other objects "
     "depend on it", "view over_m depends on materialized view m"),
])
def test_a_relation_views_read_is_not_dropped(views, sql, message, detail):
    with pytest.raises(SqlError) as info:
        run(views, sql)
    error = info.value
    assert (error.sqlstate.value, error.message, error.detail, error.hint) == (
        "2BP01", message, detail, "Use DROP ... CASCADE to drop the dependent objects too.")
    assert rows(views, "SELECT count(*) FROM duckdb_views() WHERE view_name IN ('v', 'w')"
                ) == [(2,)]


def test_cascade_drops_the_dependents_too(views):
    assert run(views, "DROP TABLE t CASCADE").notices == (
        "drop cascades to 2 other objects",)
    assert run(views, "DROP MATERIALIZED VIEW m CASCADE").notices == (
        "drop cascades to view over_m",)
    assert rows(views, "SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT "
                       "temporary ORDER BY 1") == [("shadowed",)]


def test_views_dropped_together_or_reading_a_cte_of_the_name_are_no_dependents(views):
    run(views, "DROP VIEW w, v")
    run(views, "DROP TABLE t")  # `shadowed` reads its own CTE t

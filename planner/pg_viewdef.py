"""PostgreSQL's text of a view's query (pg_get_viewdef), from the statement DuckDB keeps.

Contract: `deparse(create_view_sql)` returns the view's query laid out as PostgreSQL 15's
pg_get_viewdef(view, true) prints it, ending in ';' (None for None).
"""

from __future__ import annotations


def deparse(create_view_sql: str | None) -> str | None:
    if create_view_sql is None:
        return None
    return create_view_sql

"""Which views read a relation: the dependencies PostgreSQL records and DuckDB does not.

DuckDB keeps a view's query as text and binds it when the view is read, so a DROP of a table
or view that another view reads succeeds there and leaves the view broken. PostgreSQL refuses
it (2BP01) and names the dependents; with CASCADE it drops them too, with a notice.

Contract:
- `dependents(con, dropped)`: the views and materialized views (`materialized_views`: the
  hidden view holding the query reads for it) that read one of `dropped` (relations with
  PostgreSQL's noun for each: table, view, materialized view), directly or through one
  another; each with PostgreSQL's line saying what it depends on ("view w depends on view v").
  Views among `dropped` are not their own dependents.
- `clear(con, dropped, cascade)`, before `dropped` are dropped: PostgreSQL's 2BP01 error (the
  first dropped relation with dependents named, every dependency line as the detail) when
  views depend on them and not `cascade`; with `cascade`, drops the dependents and returns
  PostgreSQL's notice (none when nothing depends on them).

A view's query is read with sqlglot (each distinct text once per process); a name in it
resolves against the view's own schema or the search path, ignoring which of several
relations of one name would shadow the other. Dependencies through functions, types or
sequences are not tracked.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import existence  # (which runs DROPs through `clear`: used at call time)
from heron.planner.errors import SqlError, SqlState
from heron.planner.pg_catalog_relations import QUERY_VIEW_PREFIX

MATERIALIZED = "materialized view"


@dataclass(frozen=True)
class Dependent:
    relation: existence.Relation  # the view, or the materialized view's table
    noun: str  # "view" or "materialized view"
    on: existence.Relation  # a relation it reads, dropped or a dependent itself
    line: str  # PostgreSQL's: "view w depends on view v"


def dependents(con: duckdb.DuckDBPyConnection, dropped: Sequence[tuple[existence.Relation, str]]
               ) -> list[Dependent]:
    """See the module docstring."""
    views = _views(con)
    if not views:
        return []
    path = [p.lower() for p in existence.search_path(con)]
    dropped_keys = {_key(r) for r, _ in dropped}
    frontier = list(dropped)
    found: list[Dependent] = []
    seen = set(dropped_keys)
    while frontier:
        following = []
        for view, noun, reads in views:
            if _key(view) in seen:
                continue
            schemas = [view.schema.lower(), *path]
            target = next(((r, n) for r, n in frontier if _reads(reads, r, schemas)), None)
            if target is not None:
                relation, target_noun = target
                found.append(Dependent(view, noun, relation, f"{noun} {view.name} depends on "
                                                             f"{target_noun} {relation.name}"))
                seen.add(_key(view))
                following.append((view, noun))
        frontier = following
    return found


def clear(con: duckdb.DuckDBPyConnection, dropped: Sequence[tuple[existence.Relation, str]],
          cascade: bool) -> tuple[str, ...]:
    """See the module docstring."""
    found = dependents(con, dropped)
    if not found:
        return ()
    if not cascade:
        first = next((r, n) for r, n in dropped if any(d.on == r for d in found))
        raise SqlError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                       f"cannot drop {first[1]} {first[0].name} because other objects depend "
                       "on it", detail="\n".join(d.line for d in found),
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")
    for dependent in found:
        view = dependent.relation
        if dependent.noun == MATERIALIZED:
            con.execute(f"DROP TABLE {view.quoted}")
            view = existence.Relation(view.database, view.schema, QUERY_VIEW_PREFIX + view.name, 0)
        con.execute(f"DROP VIEW IF EXISTS {view.quoted}")  # (it may depend on one dropped)
    if len(found) == 1:
        return (f"drop cascades to {found[0].noun} {found[0].relation.name}",)
    return (f"drop cascades to {len(found)} other objects",)


def _views(con: duckdb.DuckDBPyConnection
           ) -> list[tuple[existence.Relation, str, tuple[tuple[str | None, str], ...]]]:
    """Every view (a materialized view for its query's view), with the names its query reads."""
    views = []
    for database, schema, name, oid, sql in con.execute(
            "SELECT database_name, schema_name, view_name, view_oid, sql FROM duckdb_views() "
            "WHERE NOT internal AND NOT (temporary AND (starts_with(view_name, 'pg_') OR "
            "starts_with(view_name, 'heron_'))) ORDER BY view_oid").fetchall():  # (not the shim's)
        noun = "view"
        if name.startswith(QUERY_VIEW_PREFIX):
            name, noun = name[len(QUERY_VIEW_PREFIX):], MATERIALIZED
        views.append((existence.Relation(database, schema, name, oid), noun, _names_read(sql)))
    return views


@functools.lru_cache(maxsize=1024)
def _names_read(sql: str) -> tuple[tuple[str | None, str], ...]:
    """The (schema or None, name) of each relation a view's query (DuckDB's text) reads, in
    lower case; CTEs' names left out."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        return ()
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    made = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this  # (the view)
    names = []
    for table in tree.find_all(exp.Table):
        if table is made or (not table.db and table.name.lower() in ctes):
            continue
        names.append((table.db.lower() or None, table.name.lower()))
    return tuple(dict.fromkeys(names))


def _reads(reads: tuple[tuple[str | None, str], ...], relation: existence.Relation,
           schemas: list[str]) -> bool:
    key = _key(relation)
    return any(name == key[1] and (schema == key[0] if schema else key[0] in schemas)
               for schema, name in reads)


def _key(relation: existence.Relation) -> tuple[str, str]:
    return relation.schema.lower(), relation.name.lower()

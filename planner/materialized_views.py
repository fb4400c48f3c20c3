"""Materialized views, which DuckDB lacks: a table holding the query's rows, beside a view
holding the query.

A materialized view `m` is the table `m` (its rows, read as any table's: indexes may be made on
it) and the view `heron_matview_m` in the same schema (its query, which REFRESH runs again and
pg_get_viewdef prints); both live in DuckDB's catalog, so they come and go with transactions as
other DDL does. The catalog (`pg_catalog_relations`) shows the table as relkind 'm', lists it in
pg_matviews, and hides the view.

Contract:
- `read(sql)`: `CREATE MATERIALIZED VIEW [IF NOT EXISTS] name [(column, ...)] AS query [WITH
  [NO] DATA]` as a `Create`, `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]` as
  a `Refresh`, `DROP MATERIALIZED VIEW [IF EXISTS] name [, ...] [CASCADE | RESTRICT]` as a
  `Drop`; None for anything else. `QUERY_VIEW_PREFIX` names the views that hold the queries.
- `run(con, command, execute)` runs one, in one transaction (the session's when one is open),
  the query's own statements through `execute` (the planner: PostgreSQL's semantics, declared
  types, AI functions): CREATE is tagged `SELECT n` (the rows it holds), or CREATE MATERIALIZED
  VIEW WITH NO DATA (then empty); REFRESH runs the query again into the table; DROP drops both.
  An existing name is 42P07 (a notice under IF NOT EXISTS), a missing one 42P01 (a notice
  under IF EXISTS), a relation that is no materialized view 42809, as PostgreSQL words them.

- `check_use(sql, relations)` refuses a statement as PostgreSQL does when it changes a
  materialized view (INSERT, UPDATE, DELETE, MERGE: 42809 "cannot change materialized view";
  TRUNCATE: 42809 "is not a table"; COPY to or from one: 42809) or reads one created WITH NO
  DATA and not refreshed since (55000 "has not been populated", with REFRESH as the hint).

DROP TABLE or DROP VIEW of one is 42809, as there (`existence`).

DROP TABLE or DROP VIEW of what its query reads is 2BP01, or drops it too under CASCADE
(`view_dependencies`).

Differences from PostgreSQL: an unpopulated one is refused where a statement names it, also in
a CTE the query never reads (PostgreSQL refuses the scan, so only where it runs), and read as
empty through a view over it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
from sqlglot import exp

from heron.planner import copy_statement, dialect, existence, truncate, view_dependencies
from heron.planner.column_origins import Relations
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.pg_catalog_relations import QUERY_VIEW_PREFIX, UNPOPULATED
from heron.planner.statement import Result, atomic

_NAME = rf"{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})?"
_CREATE = re.compile(
    rf"^\s*CREATE\s+MATERIALIZED\s+VIEW\s+(?P<exists>IF\s+NOT\s+EXISTS\s+)?(?P<name>{_NAME})\s*"
    r"(?P<columns>\([^()]*\))?\s*(?:USING\s+\w+\s+)?(?:WITH\s*\([^()]*\)\s*)?"
    r"(?:TABLESPACE\s+\w+\s+)?AS\s+(?P<query>.*?)(?:\s+WITH\s+(?P<no>NO\s+)?DATA)?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)
_REFRESH = re.compile(
    rf"^\s*REFRESH\s+MATERIALIZED\s+VIEW\s+(?P<concurrently>CONCURRENTLY\s+)?(?P<name>{_NAME})"
    r"(?:\s+WITH\s+(?P<no>NO\s+)?DATA)?\s*;?\s*$", re.IGNORECASE)
_DROP = re.compile(
    rf"^\s*DROP\s+MATERIALIZED\s+VIEW\s+(?P<exists>IF\s+EXISTS\s+)?(?P<names>{_NAME}"
    rf"(?:\s*,\s*{_NAME})*)\s*(?P<behaviour>CASCADE|RESTRICT)?\s*;?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Create:
    name: tuple[str, ...]  # the name's parts
    columns: str | None  # the column list as written, parentheses included
    query: str
    data: bool  # WITH DATA (the default), else WITH NO DATA
    if_not_exists: bool
    verb: str = "CREATE MATERIALIZED VIEW"


@dataclass(frozen=True)
class Refresh:
    name: tuple[str, ...]
    data: bool
    concurrently: bool
    verb: str = "REFRESH MATERIALIZED VIEW"


@dataclass(frozen=True)
class Drop:
    names: tuple[tuple[str, ...], ...]
    if_exists: bool
    cascade: bool
    verb: str = "DROP MATERIALIZED VIEW"


def read(sql: str) -> Create | Refresh | Drop | None:
    """`sql` as a materialized view's statement, or None (see the module docstring)."""
    if m := _CREATE.match(sql):
        return Create(existence.name_parts(m["name"]), m["columns"], m["query"], not m["no"],
                      bool(m["exists"]))
    if m := _REFRESH.match(sql):
        return Refresh(existence.name_parts(m["name"]), not m["no"], bool(m["concurrently"]))
    if m := _DROP.match(sql):
        names = re.findall(_NAME, m["names"])
        return Drop(tuple(existence.name_parts(n) for n in names), bool(m["exists"]),
                    (m["behaviour"] or "").upper() == "CASCADE")
    return None


def check_use(sql: str, relations: Callable[[], Relations]) -> None:
    """Refuse `sql` if it changes a materialized view or reads an unpopulated one (see the module
    docstring); `relations` is asked only when the statement may name one."""
    if not _MAY_USE.match(sql) or not _NAMES_RELATION.search(sql):
        return
    found = relations()
    if not found.named(sql, found.materialized):
        return

    def materialized(schema: str | None, name: str) -> tuple[str, str] | None:
        """The key of the materialized view (schema.)name names, if it names one."""
        key = found.key_of(schema.lower() if schema else None, name.lower())
        return key if key in found.materialized else None

    if (copy := copy_statement.read_copy(sql)) is not None:
        if copy.query is not None:
            check_use(copy.query, relations)
        elif key := materialized(copy.table[-2] if len(copy.table) > 1 else None, copy.table[-1]):
            way = "to" if copy.from_client else "from"
            raise SqlError(SqlState.WRONG_OBJECT_TYPE, f'cannot copy {way} materialized view '
                           f'"{key[1]}"', hint=None if copy.from_client else (
                               "Try the COPY (SELECT ...) TO variant."))
        return
    if (emptied := truncate.read(sql)) is not None:
        for parts in emptied.tables:
            if key := materialized(parts[-2] if len(parts) > 1 else None, parts[-1]):
                raise SqlError(SqlState.WRONG_OBJECT_TYPE, f'"{key[1]}" is not a table')
        return
    try:
        tree = dialect.parse(sql)
    except SqlError:
        return  # DuckDB words the error
    target = tree.this if isinstance(tree, exp.DML | exp.Merge) else None
    if isinstance(target, exp.Schema):  # INSERT INTO t (columns)
        target = target.this
    if isinstance(target, exp.Table) and (key := materialized(target.db, target.name)):
        raise SqlError(SqlState.WRONG_OBJECT_TYPE, f'cannot change materialized view "{key[1]}"')
    if isinstance(tree, exp.Create) and tree.kind == "VIEW":
        return  # a view reads nothing as it is made
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if table is target or (not table.db and table.name.lower() in ctes):
            continue
        if (key := materialized(table.db, table.name)) and not found.materialized[key]:
            raise SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                           f'materialized view "{key[1]}" has not been populated',
                           hint="Use the REFRESH MATERIALIZED VIEW command.")


# Statements that may change or read a relation's rows (not EXPLAIN, CREATE INDEX, COMMENT...).
_MAY_USE = re.compile(r"\s*\(*\s*(?:SELECT|WITH|INSERT|UPDATE|DELETE|MERGE|TRUNCATE|COPY|TABLE|"
                      r"VALUES|CREATE\s+(?:(?:TEMP|TEMPORARY)\s+)?(?:TABLE|VIEW|OR\s+REPLACE))\b",
                      re.IGNORECASE)
# ... and name a relation where it does (`SELECT 1` reads none: the catalog is not asked).
_NAMES_RELATION = re.compile(r"\b(?:FROM|INTO|UPDATE|TRUNCATE|COPY|TABLE)\b", re.IGNORECASE)


def run(con: duckdb.DuckDBPyConnection, command: Create | Refresh | Drop,
        execute: Callable[[str], Result]) -> Result:
    """Run `command` (see the module docstring)."""
    try:
        with atomic(con):
            if isinstance(command, Create):
                return _create(con, command, execute)
            if isinstance(command, Refresh):
                table, view = _names(con, command.name, "relation",
                                     SqlState.FEATURE_NOT_SUPPORTED)
                if command.concurrently and not _populated(con, view):
                    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "CONCURRENTLY cannot be used "
                                   "when the materialized view is not populated")
                con.execute(f"DELETE FROM {table.quoted}")
                if command.data:
                    con.execute(f"INSERT INTO {table.quoted} SELECT * FROM {view}")
                _mark(con, view, command.data)
                return Result(command.verb, None, None)
            return _drop(con, command)
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None


def _create(con: duckdb.DuckDBPyConnection, create: Create, execute: Callable[[str], Result]
            ) -> Result:
    try:
        existence.find_relation(con, create.name)
    except SqlError:
        pass  # not there: made below
    else:
        if not create.if_not_exists:
            raise SqlError(SqlState.DUPLICATE_TABLE,
                           f'relation "{create.name[-1]}" already exists')
        return Result(create.verb, None, None, notices=(
            f'relation "{create.name[-1]}" already exists, skipping',))
    table = ".".join(dialect.quoted(p) for p in create.name)
    view = ".".join(dialect.quoted(p) for p in _query_view(create.name))
    execute(f"CREATE VIEW {view} {create.columns or ''} AS {create.query}")
    filled = execute(f"CREATE TABLE {table} AS SELECT * FROM {view}"
                     f"{'' if create.data else ' WITH NO DATA'}")
    _mark(con, view, create.data)
    return filled if create.data else Result(create.verb, None, None)


def _drop(con: duckdb.DuckDBPyConnection, drop: Drop) -> Result:
    notices, found = [], []
    for parts in drop.names:
        try:
            found.append(_names(con, parts, "materialized view"))
        except SqlError as error:
            if not (drop.if_exists and error.sqlstate is SqlState.UNDEFINED_TABLE):
                raise
            notices.append(f'materialized view "{parts[-1]}" does not exist, skipping')
    notices.extend(view_dependencies.clear(
        con, [(table, view_dependencies.MATERIALIZED) for table, _ in found], drop.cascade))
    for table, view in found:
        con.execute(f"DROP TABLE {table.quoted}")
        con.execute(f"DROP VIEW {view}")
    return Result(drop.verb, None, None, notices=tuple(notices))


def _query_view(name: tuple[str, ...]) -> tuple[str, ...]:
    return (*name[:-1], QUERY_VIEW_PREFIX + name[-1])


def _mark(con: duckdb.DuckDBPyConnection, view: str, populated: bool) -> None:
    """Whether the materialized view of the query's `view` holds its rows: the view's comment
    (the view is the catalog's to read, hidden from clients)."""
    con.execute(f"COMMENT ON VIEW {view} IS {'NULL' if populated else repr(UNPOPULATED)}")


def _populated(con: duckdb.DuckDBPyConnection, view: str) -> bool:
    comment = con.execute("SELECT comment FROM duckdb_views() WHERE database_name || '.' || "
                          "schema_name || '.' || view_name = ?",
                          [".".join(existence.name_parts(view))]).fetchall()
    return not comment or comment[0][0] != UNPOPULATED


def _names(con: duckdb.DuckDBPyConnection, name: tuple[str, ...], noun: str,
           not_one: SqlState = SqlState.WRONG_OBJECT_TYPE) -> tuple[existence.Relation, str]:
    """The table and the query's view (quoted) of the materialized view `name`; 42P01 when no
    relation has the name (the `noun` does not exist), `not_one` when it is no materialized
    view."""
    try:
        relation = existence.find_relation(con, name)
    except SqlError:
        raise SqlError(SqlState.UNDEFINED_TABLE, f'{noun} "{name[-1]}" does not exist') from None
    view = (relation.database, relation.schema, QUERY_VIEW_PREFIX + relation.name)
    if existence.missing(con, "VIEW", view[1:]) is not None:
        raise SqlError(not_one, f'"{name[-1]}" is not a materialized view',
                       hint="Use DROP TABLE to remove a table." if (
                           not_one is SqlState.WRONG_OBJECT_TYPE) else None)
    return relation, ".".join(dialect.quoted(p) for p in view)

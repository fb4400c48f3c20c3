"""ALTER TABLE actions DuckDB refuses while indexes depend on the table, run with them set aside.

DuckDB renames no table that has an index of its own (CREATE INDEX's: "Cannot alter entry ...
because there are entries that depend on it"), and renames, drops or retypes no column such an
index covers ("an index depends on it"). PostgreSQL does all four, which migrations do: it
renames the index's table or column along, keeps the index over a retyped column, and drops an
index with a column it covers.

Contract:
- `read(sql)`: an ALTER TABLE (DuckDB's text, as `pg_semantics.rewrite` prints it) whose actions
  rename the table, rename or drop columns, or change a column's type, as an `Aside` (the
  table's name parts, its new name, the renamed columns, the dropped ones); None otherwise.
- `run(con, aside, execute)` runs the statement (`execute()`, which returns its `Result`) with
  the table's own indexes dropped first (none: it just runs it) and made again after, on the
  table's new name and the renamed columns' new names, each with its comment; an index over a
  dropped column is not made again. Renames run in one transaction (the session's when one is
  open). DuckDB sees a dropped index gone only once the drop is committed, so a DROP COLUMN or
  a type change commits each step, and makes the indexes again as they were if the statement
  fails; inside a transaction block it is 0A000 (with what to do instead). Indexes of PRIMARY
  KEY and UNIQUE constraints are the table's own in DuckDB and never in the way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import dialect, existence
from heron.planner.errors import SqlError, SqlState
from heron.planner.statement import Result, atomic, in_transaction


@dataclass(frozen=True)
class Aside:
    table: tuple[str, ...]  # the name's parts
    renamed_to: str | None = None  # the table's new name
    columns: dict[str, str] = field(default_factory=dict)  # renamed: old -> new, in lower case
    dropped: frozenset[str] = frozenset()  # in lower case
    retyped: bool = False  # a column's type changes


def read(sql: str) -> Aside | None:
    """See the module docstring."""
    if "ALTER" not in sql.upper():
        return None
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        return None
    if not isinstance(tree, exp.Alter) or not isinstance(tree.this, exp.Table):
        return None
    renamed_to, columns, dropped, retyped = None, {}, set(), False
    for action in tree.args.get("actions") or ():
        if isinstance(action, exp.AlterRename):
            renamed_to = action.this.name
        elif isinstance(action, exp.RenameColumn):
            columns[action.this.name.lower()] = action.args["to"].name
        elif isinstance(action, exp.Drop) and action.args.get("kind") == "COLUMN":
            dropped |= {column.name.lower() for column in action.args.get("tables") or ()}
        elif isinstance(action, exp.AlterColumn) and action.args.get("dtype") is not None:
            retyped = True
    if renamed_to is None and not columns and not dropped and not retyped:
        return None
    table = tuple(part.name for part in tree.this.parts)
    return Aside(table, renamed_to, columns, frozenset(dropped), retyped)


def run(con: duckdb.DuckDBPyConnection, aside: Aside, execute: Callable[[], Result]) -> Result:
    """See the module docstring."""
    try:
        table = existence.find_relation(con, aside.table, views=False)
    except SqlError:
        return execute()  # (not there: the statement says so)
    indexes = con.execute(
        "SELECT index_name, sql, comment FROM duckdb_indexes() WHERE database_name = ? AND "
        "schema_name = ? AND table_name = ? AND sql IS NOT NULL ORDER BY index_oid",
        [table.database, table.schema, table.name]).fetchall()
    if not indexes:
        return execute()
    if not aside.dropped and not aside.retyped:
        with atomic(con):
            _drop(con, table, indexes)
            result = execute()
            _make(con, table, indexes, aside)
        return result
    if in_transaction(con):
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "cannot drop or change the type of a "
                       f'column of table "{table.name}" inside a transaction block while it has '
                       "indexes", hint="Run the ALTER TABLE outside a transaction block, or "
                       "drop the table's indexes before it and create them again after it.")
    _drop(con, table, indexes)
    try:
        result = execute()
    except BaseException:
        _make(con, table, indexes, Aside(aside.table))  # as they were
        raise
    _make(con, table, indexes, aside)
    return result


def _drop(con: duckdb.DuckDBPyConnection, table: existence.Relation,
          indexes: list[tuple[str, str, str | None]]) -> None:
    for name, _, _ in indexes:
        con.execute(f"DROP INDEX {_qualified(table, name)}")


def _make(con: duckdb.DuckDBPyConnection, table: existence.Relation,
          indexes: list[tuple[str, str, str | None]], aside: Aside) -> None:
    for name, sql, comment in indexes:
        made = _made_again(sql, table, aside)
        if made is not None:
            con.execute(made)
            if comment:
                con.execute(f"COMMENT ON INDEX {_qualified(table, name)} IS "
                            f"'{comment.replace(chr(39), chr(39) * 2)}'")


def _made_again(sql: str, table: existence.Relation, aside: Aside) -> str | None:
    """An index's CREATE INDEX on the table's (qualified) and columns' new names; None when it
    covers a dropped column."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    index = tree.this
    for column in index.find_all(exp.Column):
        name = column.name.lower()
        if name in aside.dropped:
            return None
        if name in aside.columns:
            column.set("this", exp.to_identifier(aside.columns[name], quoted=True))
    index.set("table", exp.table_(aside.renamed_to or table.name, table.schema, table.database,
                                  quoted=True))
    return tree.sql(dialect="duckdb")


def _qualified(table: existence.Relation, index: str) -> str:
    return ".".join(dialect.quoted(p) for p in (table.database, table.schema, index))

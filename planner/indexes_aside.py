"""ALTER TABLE actions DuckDB refuses while indexes depend on the table, run with them set aside;
and ALTER INDEX ... RENAME TO, which DuckDB lacks, as the index made again under its new name.

DuckDB renames no table that has an index of its own (CREATE INDEX's: "Cannot alter entry ...
because there are entries that depend on it"), sets or drops no NOT NULL of its columns nor adds a
NOT NULL column (the same), and renames, drops or retypes no column such an index covers ("an index
depends on it"). PostgreSQL does all of these, which migrations do: it renames the index's table or
column along, keeps the index over a retyped column, and drops an index with a column it covers.

Contract:
- `read(sql)`: an ALTER TABLE (DuckDB's text, as `pg_semantics.rewrite` prints it) whose actions
  rename the table, rename or drop columns, change a column's type, set or drop its NOT NULL or
  add a NOT NULL column, as an `Aside` (the table's name parts, its new name, the renamed
  columns, the dropped ones); None otherwise.
- `run(con, aside, execute, rebuild)` runs the statement (`execute()`, which returns its
  `Result`) with the table's own indexes dropped first (none: it just runs it) and made again
  after, on the table's new name and the renamed columns' new names, each with its comment; an
  index over a dropped column is not made again. Renames run in one transaction (the session's
  when one is open). DuckDB sees a dropped index gone only once the drop is committed, so a
  DROP COLUMN or a type change commits each step, and makes the indexes again as they were if
  the statement fails. Inside a transaction block the statement runs as `rebuild()` where the
  caller gives one (the table made again: `alter_table`'s for a type change; None: nothing to
  rebuild, and the statement runs); without one it is 0A000 (with what to do instead; a
  statement that only drops columns is `alter_table.drop_columns`'s there).
  Indexes of PRIMARY KEY and UNIQUE constraints are the table's own in DuckDB and never in the
  way. `covers(sql, columns)`: whether the index CREATE INDEX `sql` makes covers one of
  `columns`.
- `read_rename(sql)`: `ALTER INDEX [IF EXISTS] name RENAME TO new` as a `RenameIndex`, else None;
  `rename(con, rename)` drops the index and makes it again under the new name (its comment
  kept), in one transaction: a missing index is 42P01 (a notice under IF EXISTS), a new name a
  relation or index of the schema has 42P07, as PostgreSQL words them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import dialect, existence
from heron.planner.commands import IDENTIFIER, identifier
from heron.planner.errors import SqlError, SqlState
from heron.planner.pg_catalog_types import literal
from heron.planner.statement import Result, atomic, in_transaction


@dataclass(frozen=True)
class Aside:
    table: tuple[str, ...]  # the name's parts
    renamed_to: str | None = None  # the table's new name
    columns: dict[str, str] = field(default_factory=dict)  # renamed: old -> new, in lower case
    dropped: frozenset[str] = frozenset()  # in lower case
    retyped: bool = False  # a column's type changes
    only_drops: bool = False  # every action drops a column
    nullability: bool = False  # a column's NOT NULL is set or dropped


@dataclass(frozen=True)
class RenameIndex:
    index: tuple[str, ...]  # the name's parts
    new: str
    if_exists: bool


_RENAME = re.compile(rf"^\s*ALTER\s+INDEX\s+(?P<exists>IF\s+EXISTS\s+)?(?P<name>{IDENTIFIER}"
                     rf"(?:\s*\.\s*{IDENTIFIER})?)\s+RENAME\s+TO\s+(?P<new>{IDENTIFIER})\s*;?\s*$",
                     re.IGNORECASE)


def read_rename(sql: str) -> RenameIndex | None:
    """See the module docstring."""
    if (m := _RENAME.match(sql)) is None:
        return None
    return RenameIndex(existence.name_parts(m["name"]), identifier(m["new"]), bool(m["exists"]))


def rename(con: duckdb.DuckDBPyConnection, rename: RenameIndex) -> Result:
    """See the module docstring."""
    name, schema = rename.index[-1], rename.index[-2] if len(rename.index) > 1 else None
    found = con.execute(
        "SELECT database_name, schema_name, table_name, sql, comment FROM duckdb_indexes() "
        "WHERE index_name = ? AND sql IS NOT NULL AND (schema_name IN "
        "(SELECT unnest(?::VARCHAR[])) OR (? AND database_name = 'temp')) "
        "ORDER BY database_name <> 'temp'",
        [name, [schema] if schema else existence.search_path(con), schema is None]).fetchall()
    if not found:
        if rename.if_exists:
            return Result("ALTER INDEX", None, None,
                          notices=(f'relation "{name}" does not exist, skipping',))
        raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{name}" does not exist')
    database, schema_name, table, sql, comment = found[0]
    if con.execute(
            "SELECT count(*) FROM (SELECT index_name AS n, database_name d, schema_name s FROM "
            "duckdb_indexes() UNION ALL SELECT table_name, database_name, schema_name FROM "
            "duckdb_tables() UNION ALL SELECT view_name, database_name, schema_name FROM "
            "duckdb_views() UNION ALL SELECT sequence_name, database_name, schema_name FROM "
            "duckdb_sequences()) WHERE n = ? AND d = ? AND s = ?",
            [rename.new, database, schema_name]).fetchall()[0][0]:
        raise SqlError(SqlState.DUPLICATE_TABLE, f'relation "{rename.new}" already exists')
    relation = existence.Relation(database, schema_name, table, 0)
    tree = sqlglot.parse_one(sql, read="duckdb")
    tree.this.set("this", exp.to_identifier(rename.new, quoted=True))
    tree.this.set("table", exp.table_(table, schema_name, database, quoted=True))
    with atomic(con):
        _drop(con, relation, [(name, sql, comment)])
        con.execute(tree.sql(dialect="duckdb"))
        if comment:
            _comment(con, relation, rename.new, comment)
    return Result("ALTER INDEX", None, None)


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
    renamed_to, columns, dropped, retyped, nullability = None, {}, set(), False, False
    actions = tree.args.get("actions") or ()
    for action in actions:
        if isinstance(action, exp.AlterRename):
            renamed_to = action.this.name
        elif isinstance(action, exp.RenameColumn):
            columns[action.this.name.lower()] = action.args["to"].name
        elif isinstance(action, exp.Drop) and action.args.get("kind") == "COLUMN":
            dropped |= {column.name.lower() for column in action.args.get("tables") or ()}
        elif isinstance(action, exp.AlterColumn) and action.args.get("dtype") is not None:
            retyped = True
        elif isinstance(action, exp.AlterColumn) and action.args.get("allow_null") is not None:
            nullability = True
        elif isinstance(action, exp.ColumnDef) and any(
                isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
                for c in action.args.get("constraints") or ()):
            nullability = True  # (a NOT NULL column added: refused while indexes depend)
    if renamed_to is None and not columns and not dropped and not retyped and not nullability:
        return None
    table = tuple(part.name for part in tree.this.parts)
    only_drops = all(isinstance(a, exp.Drop) and a.args.get("kind") == "COLUMN" for a in actions)
    return Aside(table, renamed_to, columns, frozenset(dropped), retyped, only_drops,
                 nullability)


def run(con: duckdb.DuckDBPyConnection, aside: Aside, execute: Callable[[], Result],
        rebuild: Callable[[], Result | None] | None = None) -> Result:
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
        if rebuild is not None:
            result = rebuild()  # (None: nothing to rebuild, for DuckDB to say)
            return execute() if result is None else result
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
                _comment(con, table, name, comment)


def _comment(con: duckdb.DuckDBPyConnection, table: existence.Relation, index: str,
             comment: str) -> None:
    con.execute(f"COMMENT ON INDEX {_qualified(table, index)} IS {literal(comment)}")


def covers(sql: str, columns: frozenset[str]) -> bool:
    """Whether the index CREATE INDEX `sql` makes covers one of `columns` (lower case)."""
    return any(column.name.lower() in columns
               for column in sqlglot.parse_one(sql, read="duckdb").this.find_all(exp.Column))


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

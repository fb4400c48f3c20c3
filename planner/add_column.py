"""ALTER TABLE ... ADD COLUMN of columns that carry a CHECK, which DuckDB cannot add in place.

A CHECK is how Heron keeps what PostgreSQL declares beyond DuckDB's types (`pg_semantics`): a
varchar(n) column's length, which it enforces, and a jsonb column's mark; a client may also give
a new column a CHECK of its own. DuckDB's parser refuses a CHECK in ADD COLUMN ("not supported
yet") and DuckDB adds no CHECK to an existing table (ALTER TABLE ... ADD CHECK is "not
implemented"), so such a column is added the one way DuckDB keeps a CHECK: by creating the table
again with it, its rows copied, in one transaction. The CHECKs are then DuckDB's own, enforced
on every later write and read back by the catalog (`pg_catalog_relations`, `column_origins`)
like those of CREATE TABLE.

Contract:
- `parse(sql)`: the columns an ALTER TABLE adds (DuckDB's text, as `pg_semantics.rewrite` prints
  it) when every action of it adds a column and one of them carries a CHECK; else None (DuckDB
  runs the statement as it is).
- `run(con, change)` adds them as PostgreSQL would: the table keeps its columns, rows, defaults,
  constraints, indexes and comments, the new columns come last, each existing row gets the new
  columns' defaults (evaluated per row, NULL without one) and must pass their constraints. A
  constant default longer than a varchar(n) column's length is refused even in an empty table
  (22001), as PostgreSQL evaluates it at once; a NOT NULL column without a default in a table
  with rows is 23502 ("contains null values"); an existing row failing a client's CHECK is
  23514; an existing column is 42701 (skipped with a notice under IF NOT EXISTS), a missing
  table 42P01 (skipped with a notice under IF EXISTS). Runs inside the session's transaction
  when one is open, else in its own. Differences from PostgreSQL: the table gets a new OID
  (pg_class.oid; DuckDB gives a new table one), and a table that other tables' foreign keys
  reference is refused (0A000): DuckDB cannot drop or rename it while they do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import column_origins, pg_semantics
from heron.planner.errors import SqlError, SqlState, from_duckdb, value_too_long
from heron.planner.statement import Result, atomic

# Cheap test before parsing: an ALTER TABLE adding a column with a CHECK.
_MAY_ADD_CHECKED = re.compile(r"\bADD\b.*\bCHECK\b", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class AddColumns:
    """What one ALTER TABLE adds: its table (schema or None, name) and column definitions."""

    schema: str | None
    table: str
    columns: tuple[exp.ColumnDef, ...]
    if_exists: bool  # ALTER TABLE IF EXISTS


def parse(sql: str) -> AddColumns | None:
    """The columns `sql` adds, when DuckDB cannot add them itself (see the module docstring)."""
    if _MAY_ADD_CHECKED.search(sql) is None:
        return None
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        return None
    if not isinstance(tree, exp.Alter) or (tree.args.get("kind") or "").upper() != "TABLE":
        return None
    actions = tree.args.get("actions") or []
    if not actions or not all(isinstance(a, exp.ColumnDef) for a in actions) or not any(
            _checks(column) for column in actions):
        return None
    table = tree.this
    if table.args.get("catalog") is not None:
        return None  # another database's table: DuckDB's to refuse
    return AddColumns(table.db or None, table.name, tuple(actions), bool(tree.args.get("exists")))


def run(con: duckdb.DuckDBPyConnection, change: AddColumns) -> Result:
    """Add `change`'s columns by rebuilding the table (see the module docstring)."""
    table = _Table.find(con, change.schema, change.table)
    if table is None:
        if change.if_exists:
            return _done(f'relation "{change.table}" does not exist, skipping')
        raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{change.table}" does not exist')
    added: list[exp.ColumnDef] = []
    notices = []
    for column in change.columns:
        taken = {c.lower() for c in table.columns} | {a.name.lower() for a in added}
        if column.name.lower() in taken:
            name = column.name if column.this.quoted else column.name.lower()  # as PostgreSQL
            message = f'column "{name}" of relation "{table.name}" already exists'
            if not column.args.get("exists"):
                raise SqlError(SqlState.DUPLICATE_COLUMN, message)
            notices.append(message + ", skipping")
            continue
        _check_constant_default(con, column)
        added.append(column)
    if not added:
        return _done(*notices)
    if table.referenced_by:
        raise SqlError(
            SqlState.FEATURE_NOT_SUPPORTED,
            f'cannot add column "{added[0].name}" to table "{table.name}" while foreign keys '
            f'of {", ".join(table.referenced_by)} reference it',
            hint="Heron adds a column with a CHECK (varchar(n), jsonb) by creating the table "
                 "again, which DuckDB refuses while other tables reference it: drop those "
                 "foreign keys first, or add the column as text or json.")
    if table.has_rows(con):
        for column in added:
            if _not_null(column) and _default(column) is None:
                raise SqlError(SqlState.NOT_NULL_VIOLATION, f'column "{column.name}" of '
                               f'relation "{table.name}" contains null values')
    with atomic(con):
        for statement in table.rebuild(added):
            try:
                con.execute(statement)
            except duckdb.Error as exc:
                raise _existing_rows_error(from_duckdb(exc), table.name, added) from None
    return _done(*notices)


def _done(*notices: str) -> Result:
    return Result("ALTER TABLE", None, None, notices=notices)


def _constraints(column: exp.ColumnDef) -> list[exp.Expression]:
    return [c.kind for c in column.args.get("constraints") or ()
            if isinstance(c, exp.ColumnConstraint)]


def _checks(column: exp.ColumnDef) -> list[exp.CheckColumnConstraint]:
    return [c for c in _constraints(column) if isinstance(c, exp.CheckColumnConstraint)]


def _not_null(column: exp.ColumnDef) -> bool:
    return any(isinstance(c, exp.NotNullColumnConstraint) and not c.args.get("allow_null")
               for c in _constraints(column))


def _default(column: exp.ColumnDef) -> exp.Expression | None:
    return next((c.this for c in _constraints(column)
                 if isinstance(c, exp.DefaultColumnConstraint)), None)


def _check_constant_default(con: duckdb.DuckDBPyConnection, column: exp.ColumnDef) -> None:
    """Refuse a constant default longer than a varchar(n) column's length: PostgreSQL casts a
    default that needs no row to the column's type when the column is added, rows or none.
    Only a default of literals, casts and operators is evaluated here (a function's value, such
    as nextval's, is the rows' to take)."""
    limits = [n for check in _checks(column) if (n := pg_semantics.length_limit(check))]
    value = _default(column)
    if not limits or value is None or any(
            isinstance(node, exp.Column | exp.Subquery) or (
                isinstance(node, exp.Func) and not isinstance(node, exp.Cast))
            for node in value.walk()):
        return
    text = exp.cast(exp.Paren(this=value.copy()), "VARCHAR").sql(dialect="duckdb")
    try:
        length = con.execute(f"SELECT length({text})").fetchall()[0][0]
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    if length is not None and length > min(limits):
        raise value_too_long(min(limits))


def _existing_rows_error(error: SqlError, table: str, added: list[exp.ColumnDef]) -> SqlError:
    """An error copying the rows, as PostgreSQL words it for ALTER TABLE: a client's CHECK on
    the one new column that has one, failed by an existing row (its default)."""
    if error.sqlstate is not SqlState.CHECK_VIOLATION:
        return error
    checked = [c.name for c in added
               if any(not pg_semantics.declares_type(check) for check in _checks(c))]
    if len(checked) != 1:
        return error
    # PostgreSQL's (and DuckDB's) name of a column's CHECK
    return SqlError(SqlState.CHECK_VIOLATION, f'check constraint "{table}_{checked[0]}_check" '
                    f'of relation "{table}" is violated by some row')


@dataclass(frozen=True)
class _Table:
    """A table as DuckDB's catalog describes it, with what a rebuild must restore."""

    oid: int
    database: str
    schema: str
    name: str
    sql: str  # its CREATE TABLE statement (duckdb_tables().sql)
    comment: str | None
    columns: tuple[str, ...]
    stored: tuple[str, ...]  # the columns that are not generated
    column_comments: tuple[tuple[str, str], ...]
    indexes: tuple[tuple[str, str, str | None], ...]  # (name, CREATE INDEX, comment)
    referenced_by: tuple[str, ...]  # the other tables whose foreign keys reference it

    @classmethod
    def find(cls, con: duckdb.DuckDBPyConnection, schema: str | None, name: str
             ) -> _Table | None:
        """The table a (schema-qualified or plain) name names, looked up as statements do
        (`column_origins.Relations`: temporary tables first, then the search path)."""
        key = column_origins.Relations.load(con).key_of(
            None if schema is None else schema.lower(), name.lower())
        if key is None:
            return None
        found = con.execute(_TABLE, [key[0] == "", key[0] or "main", key[1]]).fetchall()
        if not found:
            return None  # a view
        oid, database, schema_name, table_name, sql, comment = found[0]
        columns = con.execute(_COLUMNS, [oid]).fetchall()
        return cls(oid, database, schema_name, table_name, sql, comment,
                   tuple(c for c, _, _ in columns),
                   tuple(c for c, generated, _ in columns if not generated),
                   tuple((c, text) for c, _, text in columns if text is not None),
                   tuple(con.execute(_INDEXES, [oid]).fetchall()),
                   tuple(r for (r,) in con.execute(_REFERENCING, [oid, table_name]).fetchall()))

    def qualified(self, name: str | None = None) -> str:
        """The table's quoted name, database and schema included (or another's beside it)."""
        return ".".join(_quoted(p) for p in (self.database, self.schema, name or self.name))

    def has_rows(self, con: duckdb.DuckDBPyConnection) -> bool:
        return bool(con.execute(f"SELECT EXISTS (FROM {self.qualified()})").fetchall()[0][0])

    def rebuild(self, added: list[exp.ColumnDef]) -> list[str]:
        """The statements that give the table `added` as its last columns: its indexes dropped
        (DuckDB renames no table with indexes), the table renamed aside, created again from its
        own CREATE TABLE with the new columns appended (a column may follow the table's
        constraints), its rows copied (the new columns take their defaults), the old one
        dropped, indexes and comments restored."""
        aside = f"__heron_rebuilt_{self.oid}"
        body = _body(self.sql)
        new = ", ".join(_definition(column) for column in added)
        temporary = "TEMPORARY " if self.database == "temp" else ""
        stored = ", ".join(_quoted(c) for c in self.stored)
        comments = [f"COMMENT ON TABLE {self.qualified()} IS {_literal(self.comment)}"
                    ] if self.comment is not None else []
        comments += [f"COMMENT ON COLUMN {self.qualified()}.{_quoted(c)} IS {_literal(text)}"
                     for c, text in self.column_comments]
        comments += [f"COMMENT ON INDEX {self.qualified(index)} IS {_literal(text)}"
                     for index, _, text in self.indexes if text is not None]
        return [
            *(f"DROP INDEX {self.qualified(index)}" for index, _, _ in self.indexes),
            f"ALTER TABLE {self.qualified()} RENAME TO {_quoted(aside)}",
            f"CREATE {temporary}TABLE {self.qualified()} {body[:-1]}, {new})",
            f"INSERT INTO {self.qualified()} ({stored}) SELECT {stored} "
            f"FROM {self.qualified(aside)}",
            f"DROP TABLE {self.qualified(aside)}",
            *(sql for _, sql, _ in self.indexes),
            *comments,
        ]


def _body(create: str) -> str:
    """The parenthesized column and constraint list of DuckDB's CREATE TABLE text (it follows
    the table's name, the first parenthesis outside a quoted identifier)."""
    quoted = False
    for i, char in enumerate(create):
        if char == '"':
            quoted = not quoted
        elif char == "(" and not quoted:
            return create[i:].rstrip().rstrip(";").rstrip()
    raise SqlError(SqlState.INTERNAL_ERROR, f"cannot read the table definition {create!r}")


def _definition(column: exp.ColumnDef) -> str:
    """A new column's definition for CREATE TABLE (without ADD COLUMN's IF NOT EXISTS)."""
    defined = column.copy()
    defined.set("exists", False)
    return defined.sql(dialect="duckdb")


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect="duckdb")


def _literal(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="duckdb")


_TABLE = """SELECT table_oid, database_name, schema_name, table_name, sql, comment
            FROM duckdb_tables()
            WHERE database_name = CASE WHEN ? THEN 'temp' ELSE current_database() END
              AND lower(schema_name) = ? AND lower(table_name) = ?"""
_COLUMNS = """SELECT column_name, is_generated, comment FROM duckdb_columns()
              WHERE table_oid = ? ORDER BY column_index"""
_INDEXES = """SELECT index_name, sql, comment FROM duckdb_indexes()
              WHERE table_oid = ? AND sql IS NOT NULL"""
# DuckDB names a foreign key's referenced table without its schema: any table of that name.
_REFERENCING = """SELECT DISTINCT table_name FROM duckdb_constraints()
                  WHERE constraint_type = 'FOREIGN KEY' AND table_oid <> ?
                    AND lower(referenced_table) = lower(?)"""

"""CREATE TABLE ... (LIKE source [INCLUDING | EXCLUDING option ...]), which DuckDB's grammar
lacks: the source table's column definitions written in its place.

Contract: `rewrite(con, sql)` is `sql` with each LIKE item replaced by the columns of the table
it names (looked up as a statement finds it: 42P01 when missing) as DuckDB keeps them, filtered
as PostgreSQL copies them: always the names, the types (a varchar(n)'s length and a jsonb's
mark, the CHECKs `pg_semantics` gives a column for its declared type, included) and NOT NULL (a
primary key's columns' too); defaults with INCLUDING DEFAULTS (a serial column's nextval of the
source's sequence, as PostgreSQL's); CHECK constraints with INCLUDING CONSTRAINTS; primary key
and unique constraints with INCLUDING INDEXES; generated columns' expressions with INCLUDING
GENERATED; all of these with INCLUDING ALL, less what EXCLUDING names afterwards. Foreign keys
are never copied, as there. Any other statement comes back unchanged (a cheap test first).

Differences from PostgreSQL: INCLUDING INDEXES copies no index but those of the primary key and
unique constraints; INCLUDING COMMENTS copies no comment; an identity column, which Heron keeps
as a serial one (`serial_columns`), copies its default (the source's sequence) with INCLUDING
DEFAULTS, not a sequence of its own with INCLUDING IDENTITY.
"""

from __future__ import annotations

import re

import duckdb
import sqlglot
from sqlglot import exp

from heron.planner import constraint_names, dialect, existence, pg_semantics

_MAY_BE = re.compile(r"^\s*CREATE\b[^(]*\bTABLE\b[^(]*\(\s*LIKE\b", re.IGNORECASE | re.DOTALL)
# A column's constraints that LIKE copies only with an option (the others it always copies).
_CONSTRAINT_OPTIONS = ((exp.DefaultColumnConstraint, "DEFAULTS"),
                       (exp.PrimaryKeyColumnConstraint, "INDEXES"),
                       (exp.UniqueColumnConstraint, "INDEXES"),
                       (exp.GeneratedAsIdentityColumnConstraint, "GENERATED"),
                       (exp.CheckColumnConstraint, "CONSTRAINTS"),
                       (exp.Reference, "NEVER"))  # a foreign key
_OPTIONS = frozenset({"COMMENTS", "COMPRESSION", "CONSTRAINTS", "DEFAULTS", "GENERATED",
                      "IDENTITY", "INDEXES", "STATISTICS", "STORAGE"})


def rewrite(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`sql` with its LIKE items as the columns they copy (see the module docstring)."""
    if _MAY_BE.match(sql) is None:
        return sql
    tree = dialect.read_postgres(sql)
    if not isinstance(tree, exp.Create) or not isinstance(tree.this, exp.Schema) or not any(
            isinstance(e, exp.LikeProperty) for e in tree.this.expressions):
        return sql
    items: list[exp.Expression] = []
    for item in tree.this.expressions:
        items += _copied(con, item) if isinstance(item, exp.LikeProperty) else [item]
    tree.this.set("expressions", items)
    return tree.sql(dialect=dialect.PostgresSql)


def _included(like: exp.LikeProperty) -> set[str]:
    """The options a LIKE item includes, its INCLUDING and EXCLUDING read in order."""
    included: set[str] = set()
    for option in like.expressions:
        names = _OPTIONS if option.text("value").upper() == "ALL" else {
            option.text("value").upper()}
        if option.name.upper() == "INCLUDING":
            included |= names
        else:
            included -= names
    return included


def _copied(con: duckdb.DuckDBPyConnection, like: exp.LikeProperty) -> list[exp.Expression]:
    """The column definitions and constraints `like` copies."""
    source = existence.find_relation(con, tuple(p.name for p in like.this.parts), views=False)
    text = con.execute("SELECT sql FROM duckdb_tables() WHERE table_oid = ?",
                       [source.oid]).fetchall()[0][0]
    table = sqlglot.parse_one(text, read="duckdb").this
    included = _included(like)
    copied: list[exp.Expression] = []
    not_null: set[str] = set()  # the primary key's columns, when the key is not copied
    for item in table.expressions:
        if isinstance(item, exp.ColumnDef):
            copied.append(_column(item, included))
        elif isinstance(item, exp.CheckColumnConstraint):
            check = exp.CheckColumnConstraint(this=item.this.unnest())
            if constraint_names.is_key_mark(check):
                continue  # (the copied keys are named after the new table, as PostgreSQL's)
            if "CONSTRAINTS" in included or pg_semantics.declares_type(check):
                copied.append(item)
        elif isinstance(item, exp.PrimaryKey | exp.UniqueColumnConstraint):
            if "INDEXES" in included:
                copied.append(item)
            elif isinstance(item, exp.PrimaryKey):
                not_null |= {c.name for c in item.expressions}
    for column in copied:
        if isinstance(column, exp.ColumnDef) and column.name in not_null:
            _not_null(column)
    return copied


def _column(column: exp.ColumnDef, included: set[str]) -> exp.ColumnDef:
    """A source column as LIKE copies it: the constraints `included` names, and NOT NULL."""
    copy = column.copy()
    kept, key = [], False
    for constraint in copy.args.get("constraints") or []:
        kind = constraint.kind
        option = next((o for t, o in _CONSTRAINT_OPTIONS if isinstance(kind, t)), None)
        if option is None or option in included:
            kept.append(constraint)  # NOT NULL, collation and the like: always
        else:  # a primary key not copied leaves its NOT NULL
            key |= isinstance(kind, exp.PrimaryKeyColumnConstraint)
    copy.set("constraints", kept)
    if key:
        _not_null(copy)
    return copy


def _not_null(column: exp.ColumnDef) -> None:
    constraints = column.args.get("constraints") or []
    if not any(isinstance(c.kind, exp.NotNullColumnConstraint) for c in constraints):
        column.set("constraints", [*constraints,
                                   exp.ColumnConstraint(kind=exp.NotNullColumnConstraint())])

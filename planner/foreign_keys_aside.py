"""ALTER TABLE on a table other tables' foreign keys reference, run with those keys set aside.

DuckDB alters no table that another table's foreign key references: ADD COLUMN, SET / DROP NOT
NULL, ALTER COLUMN TYPE, ADD CONSTRAINT, RENAME TO and the rest fail with "Cannot alter entry
... because there are entries that depend on it" (only SET / DROP DEFAULT pass). Migrations do
all of them to the tables everything references (users, accounts), and PostgreSQL runs them.

Contract:
- `read(con, sql)`: an ALTER TABLE (DuckDB's text, as `pg_semantics.rewrite` prints it) of a
  table other tables' foreign keys reference, with an action DuckDB refuses on it, as an
  `Aside` (the table, its new name if renamed, its renamed columns, the keys); None otherwise
  (no such table, no such key, or only SET / DROP DEFAULT). The table's own keys over a
  column it renames are set aside too (DuckDB renames no column a key covers).
- `run(con, aside, execute)` runs the statement (`execute()`, which returns its `Result`) in one
  transaction (the session's when one is open) with the referencing tables created again
  without those keys first and with them after (`alter_table.rebuild`: their rows copied each
  time, and checked against the altered table at the end), each key referencing the table's
  new name and its columns' new names; a referencing table that other keys reference in turn
  has those set aside the same way while it is created again. A key the altered table no
  longer satisfies (a dropped or retyped key column, rows it no longer holds) fails the
  statement with DuckDB's error, and nothing changes.

Differences from PostgreSQL: the referencing tables are copied twice and get new OIDs
(`alter_table`); DROP COLUMN of a referenced column fails when the key is put back (PostgreSQL:
2BP01, or CASCADE).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import alter_table, dialect, existence
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError
from heron.planner.statement import Result, atomic

# What DuckDB still runs on a referenced table: defaults set or dropped, nothing else.
_DEFAULTS_ONLY = re.compile(
    r"^\s*ALTER\s+TABLE\s+.*?\s+ALTER\s+(?:COLUMN\s+)?\S+\s+(?:SET\s+DEFAULT\b.*|DROP\s+DEFAULT)"
    r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_ALTER_TABLE = re.compile(r"^\s*ALTER\s+TABLE\b", re.IGNORECASE)


@dataclass(frozen=True)
class Key:
    """One foreign key set aside: another table's referencing the altered one, or the altered
    table's own over a column it renames."""

    table: existence.Relation  # the table whose key it is
    text: str  # its definition in that table's CREATE TABLE (duckdb_constraints' text)
    columns: tuple[str, ...]  # its own columns
    referenced_table: str
    referenced: tuple[str, ...]  # the referenced table's columns


@dataclass(frozen=True)
class Aside:
    table: existence.Relation
    keys: tuple[Key, ...]
    renamed_to: str | None = None
    columns: dict[str, str] = field(default_factory=dict)  # renamed: old -> new, in lower case


def read(con: duckdb.DuckDBPyConnection, sql: str) -> Aside | None:
    """See the module docstring."""
    if not _ALTER_TABLE.match(sql) or _DEFAULTS_ONLY.match(sql):
        return None
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        tree = None
    name = _table_name(sql) if not isinstance(tree, exp.Alter) else tuple(
        part.name for part in tree.this.parts)
    if not name:
        return None
    renamed_to, columns = None, {}
    for action in tree.args.get("actions") or () if isinstance(tree, exp.Alter) else ():
        if isinstance(action, exp.AlterRename):
            renamed_to = action.this.name
        elif isinstance(action, exp.RenameColumn):
            columns[action.this.name.lower()] = action.args["to"].name
    return _aside(con, name, renamed_to, columns)


def _aside(con: duckdb.DuckDBPyConnection, name: tuple[str, ...], renamed_to: str | None = None,
           columns: dict[str, str] | None = None) -> Aside | None:
    """The keys to set aside around an ALTER TABLE of the table `name` names, which renames it
    to `renamed_to` and its `columns`; None when there is no such table, or no such key."""
    try:
        table = existence.find_relation(con, name, views=False)
    except SqlError:
        return None  # (not there: the statement says so)
    renamed = columns or {}
    keys = tuple(Key(existence.Relation(database, schema, owner, oid), text, tuple(own),
                     referenced_table, tuple(referenced))
                 for database, schema, owner, oid, text, own, referenced_table, referenced
                 in con.execute(_KEYS, [table.database, table.schema, table.name, table.oid,
                                        table.oid, table.oid]).fetchall()
                 # (its own keys only where it renames one of their columns)
                 if oid != table.oid or any(c.lower() in renamed for c in own) or (
                     referenced_table.lower() == table.name.lower()
                     and any(c.lower() in renamed for c in referenced)))
    return Aside(table, keys, renamed_to, renamed) if keys else None


def run(con: duckdb.DuckDBPyConnection, aside: Aside, execute: Callable[[], Result]) -> Result:
    """See the module docstring."""
    with atomic(con):
        return _around(con, aside, execute, frozenset({aside.table.oid}))


def _around(con: duckdb.DuckDBPyConnection, aside: Aside, execute: Callable[[], Result],
            seen: frozenset[int]) -> Result:
    """`execute()` with the keys of `aside` set aside; a referencing table that other keys
    reference in turn has those set aside while it is created again (`seen`: the tables
    whose keys are set aside already, which a cycle of keys reaches again)."""
    by_table: dict[existence.Relation, list[Key]] = {}
    for key in aside.keys:
        by_table.setdefault(key.table, []).append(key)
    for table, keys in by_table.items():
        _rebuild(con, table, seen, dropped=[key.text for key in keys])
    result = execute()
    # (back in the reverse order: the altered table's own keys before those referencing it)
    for table, keys in reversed(by_table.items()):
        _rebuild(con, table, seen, checks=[_key_again(key, aside) for key in keys])
    return result


def _rebuild(con: duckdb.DuckDBPyConnection, table: existence.Relation, seen: frozenset[int],
             *, dropped: Sequence[str] = (), checks: Sequence[str] = ()) -> None:
    def rebuild() -> Result:
        alter_table.rebuild(con, table, dropped=dropped, checks=checks)
        return Result("ALTER TABLE", None, None)

    inner = _aside(con, (table.schema, table.name))
    if inner is None or inner.table.oid in seen:
        rebuild()
    else:
        _around(con, inner, rebuild, seen | {inner.table.oid})


def _key_again(key: Key, aside: Aside) -> str:
    """The key's definition with the altered table's new name and column names."""
    def named(columns: tuple[str, ...], renamed: bool) -> str:
        return ", ".join(dialect.quoted(aside.columns.get(c.lower(), c) if renamed else c)
                         for c in columns)

    own = key.table.oid == aside.table.oid
    itself = own and key.referenced_table.lower() == aside.table.name.lower()
    target = key.referenced_table if own else aside.renamed_to or aside.table.name
    return (f"FOREIGN KEY ({named(key.columns, own)}) REFERENCES {dialect.quoted(target)}"
            f"({named(key.referenced, not own or itself)})")


_TABLE_NAME = re.compile(rf"^\s*ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?"
                         rf"(?P<name>{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER}){{0,2}})", re.IGNORECASE)


def _table_name(sql: str) -> tuple[str, ...]:
    """The altered table's name parts, for a statement sqlglot does not read."""
    m = _TABLE_NAME.match(sql)
    return existence.name_parts(m["name"]) if m else ()


# The other tables' foreign keys referencing a table (DuckDB keys reference within a schema),
# then the table's own.
_KEYS = """SELECT database_name, schema_name, table_name, table_oid, constraint_text,
                  constraint_column_names, referenced_table, referenced_column_names
           FROM duckdb_constraints()
           WHERE constraint_type = 'FOREIGN KEY' AND (database_name = ? AND schema_name = ?
             AND lower(referenced_table) = lower(?) AND table_oid <> ? OR table_oid = ?)
           ORDER BY table_oid = ?, table_oid, constraint_index"""

"""DDL whose outcome depends on whether the objects it names exist, run as PostgreSQL runs it.

DuckDB drops one object per statement (`DROP TABLE a, b` is its 0A000 "Can only drop one object
at a time") and skips a missing object under IF EXISTS, or an existing one under IF NOT EXISTS,
without a word. PostgreSQL drops a list of names in one statement, and sends a NOTICE for each
name it skips (`table "t" does not exist, skipping`, `relation "t" already exists, skipping`),
which psql prints and migration tools log.

Contract:
- `read(sql)` reads DuckDB's text of one statement (as `pg_semantics.rewrite` prints it): a
  `Drop` for DROP TABLE / VIEW / INDEX / SEQUENCE / TYPE / SCHEMA [IF EXISTS] of one or more
  names [CASCADE | RESTRICT];
  a `CreateIfNotExists` for CREATE [TEMP] TABLE / INDEX / SEQUENCE / SCHEMA IF NOT EXISTS; None
  otherwise. Nothing runs.
- `run(con, drop)` runs a `Drop` and returns its `Result`: it looks every name up first, then
  drops each object once (a table with the sequences its serial and identity columns own,
  `serial_columns`) (a name given twice is dropped once), all in one transaction (the
  session's when one is open): a missing name is skipped with PostgreSQL's notice under IF
  EXISTS, else PostgreSQL's error (42P01, 42704, 3F000) comes before anything is dropped; a
  DROP TABLE of a view, or DROP VIEW of a table, is 42809 as there. Views that read a dropped
  table or view are PostgreSQL's 2BP01, or dropped too under CASCADE (`view_dependencies`);
  so are other tables' foreign keys that reference a dropped table (under CASCADE the keys are
  dropped, `alter_table`, not their tables); so are the columns of tables whose type is a
  dropped enum type (under CASCADE those columns are dropped, where DuckDB's CASCADE would drop
  their tables).
- `find_relation(con, parts)`: the table or view a name names (`Relation`, its OID
  pg_class's), 42P01 when none. `search_path(con)` is the schemas DuckDB's search path names;
  `owned_sequences(con, table)` the sequences a table's serial and identity columns own
  (quoted names); `split_names(text)` a comma-separated list's names; `missing(con, kind,
  parts)` PostgreSQL's error for an object of a kind (TABLE, VIEW, INDEX, SEQUENCE, TYPE,
  SCHEMA) that is not there, else None; `name_parts(text)` a name's parts as PostgreSQL folds
  them; `references(con)`
  the tables each table's foreign keys reference it from, `referencing_first(tables, refs)`
  the tables in an order that empties or drops referencing ones first.
- `skipped(con, ddl)`, asked before DuckDB runs a `CreateIfNotExists` or an `AlterIfExists`
  (ALTER TABLE IF EXISTS, or one ADD COLUMN IF NOT EXISTS / DROP COLUMN IF EXISTS): PostgreSQL's
  notice when the object is there (the table missing, the column there or missing) and the
  statement will skip it, else None.
  Names resolve as DuckDB's DDL resolves them: qualified by schema, or through the search path
  (temporary objects first).

Differences left: PostgreSQL's relations share one namespace (a CREATE TABLE IF NOT EXISTS of a
sequence's name is skipped there); DuckDB keeps tables and views apart from indexes and
sequences, and so does the lookup here.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import duckdb
from duckdb import _seam

from heron.planner import dialect, foreign_keys, serial_columns, view_dependencies
from heron.planner.commands import IDENTIFIER as _IDENT
from heron.planner.commands import identifier
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.pg_catalog_relations import (
    ENUM_TEXT,
    QUERY_VIEW_PREFIX,
    constraint_name,
)
from heron.planner.statement import Result, atomic

_NAME = rf"{_IDENT}(?:\s*\.\s*{_IDENT}){{0,2}}"
_KINDS = r"TABLE|VIEW|INDEX|SEQUENCE|TYPE|SCHEMA"
_DROP = re.compile(
    rf"^\s*DROP\s+(?P<kind>{_KINDS})\s+(?P<exists>IF\s+EXISTS\s+)?"
    rf"(?P<names>{_NAME}(?:\s*,\s*{_NAME})*)\s*(?P<behaviour>CASCADE|RESTRICT)?\s*;?\s*$",
    re.IGNORECASE)
_CREATE = re.compile(
    rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?P<temp>(?:(?:GLOBAL|LOCAL)\s+)?TEMP(?:ORARY)?\s+)?"
    r"(?:UNLOGGED\s+)?(?:UNIQUE\s+)?(?P<kind>TABLE|INDEX|SEQUENCE|SCHEMA)\s+IF\s+NOT\s+EXISTS\s+"
    rf"(?P<name>{_NAME})", re.IGNORECASE)
_ALTER = re.compile(
    rf"^\s*ALTER\s+TABLE\s+(?P<exists>IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<name>{_NAME})\s+"
    rf"(?:(?P<action>ADD|DROP)\s+(?:COLUMN\s+)?(?P<column_exists>IF\s+(?:NOT\s+)?EXISTS\s+)"
    rf"(?P<column>{_IDENT}))?", re.IGNORECASE)
_PART = re.compile(_IDENT)

# Where DuckDB lists the objects of each kind a search-path lookup finds: (function, name column).
_LISTS = {"INDEX": ("duckdb_indexes", "index_name"),
          "SEQUENCE": ("duckdb_sequences", "sequence_name"),
          "TYPE": ("duckdb_types", "type_name")}


@dataclass(frozen=True)
class Drop:
    kind: str  # TABLE, VIEW, INDEX, SEQUENCE, TYPE or SCHEMA
    names: tuple[tuple[str, ...], ...]  # each name's parts, resolved as PostgreSQL folds them
    if_exists: bool
    behaviour: str  # "CASCADE", "RESTRICT" or ""


@dataclass(frozen=True)
class CreateIfNotExists:
    kind: str  # TABLE, INDEX, SEQUENCE or SCHEMA
    name: tuple[str, ...]
    temporary: bool


@dataclass(frozen=True)
class AlterIfExists:
    table: tuple[str, ...]
    if_exists: bool  # ALTER TABLE IF EXISTS
    action: str  # "ADD" (a column IF NOT EXISTS), "DROP" (a column IF EXISTS) or ""
    column: str


def read(sql: str) -> Drop | CreateIfNotExists | AlterIfExists | None:
    """The statement as one of this module's, or None (see the module docstring)."""
    if m := _DROP.match(sql):
        names = tuple(name_parts(n) for n in split_names(m["names"]))
        return Drop(m["kind"].upper(), names, bool(m["exists"]),
                    (m["behaviour"] or "").upper())
    if m := _CREATE.match(sql):
        return CreateIfNotExists(m["kind"].upper(), name_parts(m["name"]), bool(m["temp"]))
    if (m := _ALTER.match(sql)) and (m["exists"] or m["column_exists"]):
        return AlterIfExists(name_parts(m["name"]), bool(m["exists"]),
                             (m["action"] or "").upper() if m["column_exists"] else "",
                             identifier(m["column"] or ""))
    return None


def run(con: duckdb.DuckDBPyConnection, drop: Drop) -> Result:
    """Run `drop` (see the module docstring)."""
    notices = []
    with atomic(con):
        present: dict[tuple[str, ...], tuple[str, ...]] = {}
        for parts in drop.names:
            if (error := missing(con, drop.kind, parts)) is None:
                # (DuckDB's names are case-insensitive: "T" and t name one table there)
                present.setdefault(tuple(p.lower() for p in parts), parts)
            elif drop.if_exists:
                notices.append(f"{error.message}, skipping")
            else:
                raise error
        if drop.kind in ("TABLE", "VIEW"):
            relations = [find_relation(con, parts, views=drop.kind == "VIEW")
                         for parts in present.values()]
            notices.extend(view_dependencies.clear(
                con, [(r, drop.kind.lower()) for r in relations], drop.behaviour == "CASCADE"))
        if drop.kind == "TABLE":  # (other tables' foreign keys: 2BP01, or dropped)
            notices.extend(cascaded(_foreign_keys_cleared(con, relations,
                                                          drop.behaviour == "CASCADE")))
            targets = [(t.quoted, owned_sequences(con, t)) for t in relations]
        else:
            if drop.kind == "SCHEMA":
                notices.extend(_schemas_cleared(con, [p[-1] for p in present.values()],
                                                drop.behaviour == "CASCADE"))
            if drop.kind == "TYPE":
                notices.extend(_typed_columns_cleared(con, list(present.values()),
                                                      drop.behaviour == "CASCADE"))
            targets = [(".".join(dialect.quoted(p) for p in parts), [])
                       for parts in present.values()]
        # DuckDB's CASCADE of a type drops the tables whose columns have it: never asked for
        behaviour = "" if drop.kind == "TYPE" else drop.behaviour
        for name, owned in targets:
            try:
                con.execute(f"DROP {drop.kind} {name} {behaviour}")
                for sequence in owned:  # (after: the table's defaults depend on them)
                    con.execute(f"DROP SEQUENCE {sequence}")
            except duckdb.Error as exc:
                raise from_duckdb(exc) from None
    return Result(f"DROP {drop.kind}", None, None, notices=tuple(notices))


def skipped(con: duckdb.DuckDBPyConnection, ddl: CreateIfNotExists | AlterIfExists
            ) -> str | None:
    """Before DuckDB runs `ddl`: PostgreSQL's notice when IF [NOT] EXISTS will skip it (or the
    column it adds or drops), else None."""
    if isinstance(ddl, AlterIfExists):
        return _alter_skipped(con, ddl)
    parts = ddl.name
    if ddl.temporary and len(parts) == 1:
        parts = ("temp", "main", parts[0])
    if missing(con, ddl.kind, parts, of_kind=False) is not None:
        return None
    noun = "schema" if ddl.kind == "SCHEMA" else "relation"
    return f'{noun} "{ddl.name[-1]}" already exists, skipping'


def _alter_skipped(con: duckdb.DuckDBPyConnection, alter: AlterIfExists) -> str | None:
    if _seam.table_kind(con, alter.table) == "none":
        return f'relation "{alter.table[-1]}" does not exist, skipping' if alter.if_exists else None
    if not alter.action:
        return None
    name = ".".join(dialect.quoted(p) for p in alter.table)
    columns = {c.lower() for c in _seam.bind(con, f"SELECT * FROM {name}").names}
    there = alter.column.lower() in columns
    if there != (alter.action == "ADD"):
        return None
    state = "already exists" if there else "does not exist"
    return f'column "{alter.column}" of relation "{alter.table[-1]}" {state}, skipping'


def with_notice(result: Result, notice: str | None) -> Result:
    """`result` with `notice` before its own notices."""
    if notice is None:
        return result
    return dataclasses.replace(result, notices=(notice, *result.notices))


# What PostgreSQL's DROP reports for a missing object of each kind.
_UNDEFINED = {"TABLE": SqlState.UNDEFINED_TABLE, "VIEW": SqlState.UNDEFINED_TABLE,
              "SEQUENCE": SqlState.UNDEFINED_TABLE, "INDEX": SqlState.UNDEFINED_OBJECT,
              "TYPE": SqlState.UNDEFINED_OBJECT, "SCHEMA": SqlState.INVALID_SCHEMA_NAME}


def missing(con: duckdb.DuckDBPyConnection, kind: str, parts: tuple[str, ...], *,
             of_kind: bool = True) -> SqlError | None:
    """None when the object exists, else PostgreSQL's error for the one that does not (the
    schema of a qualified name first). A table named where a view is meant, or a view where a
    table is, is PostgreSQL's 42809 error, raised, when `of_kind` (a CREATE TABLE ... IF NOT
    EXISTS skips either)."""
    name, schema = parts[-1], parts[-2] if len(parts) > 1 else None
    schemas = _schemas(con)
    if kind == "SCHEMA":
        found = name in schemas
    elif schema is not None and schema not in schemas:
        return SqlError(SqlState.INVALID_SCHEMA_NAME, f'schema "{schema}" does not exist')
    elif kind in ("TABLE", "VIEW"):
        found_kind = _seam.table_kind(con, parts)
        found = found_kind != "none"
        if found and of_kind and found_kind == "table" and _materialized(con, parts):
            raise SqlError(SqlState.WRONG_OBJECT_TYPE, f'"{name}" is not a {kind.lower()}',
                           hint="Use DROP MATERIALIZED VIEW to remove a materialized view.")
        if found and of_kind and found_kind != kind.lower():
            other = "VIEW" if kind == "TABLE" else "TABLE"
            raise SqlError(SqlState.WRONG_OBJECT_TYPE, f'"{name}" is not a {kind.lower()}',
                           hint=f"Use DROP {other} to remove a {other.lower()}.")
    else:
        function, column = _LISTS[kind]
        path = [schema] if schema is not None else search_path(con)
        found = bool(con.execute(
            f"SELECT count(*) FROM {function}() WHERE {column} = ? AND (schema_name IN "
            "(SELECT unnest(?::VARCHAR[])) OR (? AND database_name = 'temp'))",
            [name, path, schema is None]).fetchall()[0][0])
    return None if found else SqlError(_UNDEFINED[kind],
                                       f'{kind.lower()} "{name}" does not exist')


def _materialized(con: duckdb.DuckDBPyConnection, parts: tuple[str, ...]) -> bool:
    """Whether the table `parts` names is a materialized view's (`materialized_views`)."""
    table = find_relation(con, parts, views=False)
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE database_name = ? AND schema_name = ? AND "
        "view_name = ?", [table.database, table.schema, QUERY_VIEW_PREFIX + table.name]
    ).fetchall()[0][0])


def owned_sequences(con: duckdb.DuckDBPyConnection, table: Relation) -> list[str]:
    """The sequences a table's serial and identity columns own (`serial_columns`), as quoted
    names."""
    owned = []
    for column, default in con.execute(
            "SELECT column_name, column_default FROM duckdb_columns() WHERE database_name = ? "
            "AND schema_name = ? AND table_name = ?",
            [table.database, table.schema, table.name]).fetchall():
        sequence = serial_columns.owned(table.name, table.schema, column, default)
        if sequence is not None:
            owned.append(".".join(dialect.quoted(p) for p in (table.database, table.schema,
                                                              sequence)))
    return owned


def _schemas(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {s for (s,) in con.execute(
        "SELECT schema_name FROM duckdb_schemas() WHERE database_name IN "
        "(current_database(), 'temp')").fetchall()}


@dataclass(frozen=True)
class Relation:
    """A table or view as a statement finds it: where it is, and its OID (pg_class's)."""

    database: str
    schema: str
    name: str
    oid: int

    @property
    def quoted(self) -> str:
        return ".".join(dialect.quoted(p) for p in (self.database, self.schema, self.name))


def find_relation(con: duckdb.DuckDBPyConnection, parts: tuple[str, ...], *,
                  views: bool = True) -> Relation:
    """The table (or view, with `views`) a name names, found as a statement finds it
    (temporary first, then the search path's schemas in order); 42P01 when there is none."""
    schemas = [parts[-2]] if len(parts) > 1 else search_path(con)
    views_sql = ("UNION ALL SELECT database_name, schema_name, view_name, view_oid, temporary "
                 "FROM duckdb_views() WHERE NOT internal" if views else "")
    found = con.execute(
        "SELECT database_name, schema_name, name, oid FROM (SELECT database_name, schema_name, "
        "table_name AS name, table_oid AS oid, temporary FROM duckdb_tables() "
        f"{views_sql}) r WHERE name = ? AND (schema_name IN (SELECT unnest(?::VARCHAR[])) OR "
        "(? AND temporary)) ORDER BY NOT temporary, list_position(?::VARCHAR[], schema_name)",
        [parts[-1], schemas, len(parts) == 1, schemas]).fetchall()
    if not found:
        raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{".".join(parts)}" does not exist')
    return Relation(*found[0])


def _schemas_cleared(con: duckdb.DuckDBPyConnection, schemas: list[str], cascade: bool
                     ) -> list[str]:
    """Before `schemas` are dropped: PostgreSQL's 2BP01 while they hold relations; with
    `cascade`, the foreign keys of other schemas' tables referencing their tables dropped, and
    PostgreSQL's notice of what goes with them."""
    held = con.execute(
        "SELECT database_name, schema_name, name, oid, kind FROM (SELECT database_name, "
        "schema_name, table_name AS name, table_oid AS oid, 'table' AS kind FROM duckdb_tables() "
        "UNION ALL SELECT database_name, schema_name, view_name, view_oid, 'view' "
        "FROM duckdb_views() WHERE NOT internal) WHERE database_name = current_database() "
        "AND list_contains(?, lower(schema_name)) ORDER BY oid",
        [[s.lower() for s in schemas]]).fetchall()
    if held and not cascade:
        raise SqlError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                       f"cannot drop schema {held[0][1]} because other objects depend on it",
                       detail="\n".join(f"{kind} {schema}.{name} depends on schema {schema}"
                                        for _, schema, name, _, kind in held),
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")
    keys = _foreign_keys_cleared(con, [Relation(*row[:4]) for row in held if row[4] == "table"],
                                 cascade)
    return cascaded([*(f"{kind} {schema}.{name}" for _, schema, name, _, kind in held), *keys])


# The columns of tables whose type is an enum type (or an array of it), by the type's name: the
# type they depend on (the array type for an array), their table and column.
_ENUM_COLUMNS = f"""
    SELECT e.type_name || CASE WHEN c.data_type LIKE '%]' THEN '[]' ELSE '' END,
           c.database_name, c.schema_name, c.table_name, c.column_name
    FROM duckdb_types() e
    JOIN duckdb_columns() c ON c.data_type IN ({ENUM_TEXT}, {ENUM_TEXT} || '[]')
    JOIN duckdb_tables() t ON t.table_oid = c.table_oid
    WHERE e.logical_type = 'ENUM' AND NOT e.internal AND lower(e.type_name) = lower(?)
          AND (? IS NULL OR lower(e.schema_name) = lower(?))
    ORDER BY c.table_oid, c.column_index"""


def _typed_columns_cleared(con: duckdb.DuckDBPyConnection, types: list[tuple[str, ...]],
                           cascade: bool) -> list[str]:
    """Before enum `types` are dropped: PostgreSQL's 2BP01 while columns have them; with
    `cascade`, those columns dropped (not their tables, which DuckDB's CASCADE drops), as
    PostgreSQL's notice names them."""
    found = [row for parts in types for row in con.execute(
        _ENUM_COLUMNS, [parts[-1], parts[-2] if len(parts) > 1 else None,
                        parts[-2] if len(parts) > 1 else None]).fetchall()]
    if not found:
        return []
    if not cascade:
        raise SqlError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                       f"cannot drop type {found[0][0].removesuffix('[]')} because other objects "
                       "depend on it",
                       detail="\n".join(f"column {column} of table {table} depends on type "
                                        f"{kind}" for kind, _, _, table, column in found),
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")
    from heron.planner import alter_table  # (which finds tables through this module)

    tables: dict[tuple[str, str, str], list[str]] = {}
    for _, database, schema, table, column in found:
        tables.setdefault((database, schema, table), []).append(column)
    for parts, columns in tables.items():
        if alter_table.drop_columns(con, parts, frozenset(c.lower() for c in columns)) is None:
            quoted = ".".join(dialect.quoted(p) for p in parts)
            for column in columns:
                con.execute(f"ALTER TABLE {quoted} DROP COLUMN {dialect.quoted(column)}")
    return cascaded([f"column {column} of table {table}" for _, _, _, table, column in found])


def _foreign_keys_cleared(con: duckdb.DuckDBPyConnection, tables: list[Relation],
                          cascade: bool) -> list[str]:
    """Before `tables` are dropped: PostgreSQL's 2BP01 when foreign keys of other tables
    reference one of them; with `cascade`, those foreign keys dropped (`alter_table`), as
    PostgreSQL's notice names them."""
    dropped = {t.oid for t in tables}
    found = [(name, Relation(database, schema, table, oid), referenced)
             for name, database, schema, table, oid, _, referenced, referenced_oid
             in con.execute(_REFERENCING_KEYS).fetchall()
             if referenced_oid in dropped and oid not in dropped]
    if not found:
        return []
    if not cascade:
        raise SqlError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                       f"cannot drop table {found[0][2]} because other objects depend on it",
                       detail="\n".join(f"constraint {name} on table {table.name} depends on "
                                        f"table {referenced}" for name, table, referenced in found),
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")
    from heron.planner import alter_table  # (which finds tables through this module)

    for name, table, _ in found:
        alter_table.drop_constraint(con, table, name)
    return [f"constraint {name} on table {table.name}" for name, table, _ in found]


def cascaded(objects: list[str]) -> list[str]:
    """PostgreSQL's notice of the other objects (`constraint c on table t`, `table s.t`) a DROP
    ... CASCADE drops (none without any)."""
    if len(objects) <= 1:
        return [f"drop cascades to {o}" for o in objects]
    return [f"drop cascades to {len(objects)} other objects"]


# Each foreign key: its name, its table (database, schema, name, OID), the table it references
# (schema, name, OID).
_REFERENCING_KEYS = f"""
    SELECT {constraint_name('c')}, c.database_name, c.schema_name, c.table_name, c.table_oid,
           c.referenced_schema, c.referenced_table, t.table_oid
    FROM {foreign_keys.CONSTRAINTS} c JOIN duckdb_tables() t
         ON t.database_name = c.database_name AND t.schema_name = c.referenced_schema
         AND t.table_name = c.referenced_table
    WHERE c.constraint_type = 'FOREIGN KEY'"""


def references(con: duckdb.DuckDBPyConnection) -> dict[Relation, list[Relation]]:
    """For each table some foreign key references: the tables whose keys reference it."""
    found: dict[Relation, list[Relation]] = {}
    for _, database, schema, table, oid, referenced_schema, referenced, referenced_oid in (
            con.execute(_REFERENCING_KEYS).fetchall()):
        found.setdefault(Relation(database, referenced_schema, referenced, referenced_oid),
                         []).append(
            Relation(database, schema, table, oid))
    return found


def referencing_first(tables: list[Relation], references: dict[Relation, list[Relation]]
                      ) -> list[Relation]:
    """`tables` ordered so that a table comes after every other one of them referencing it (a
    cycle of references: in the given order)."""
    remaining, ordered = list(tables), []
    while remaining:
        free = next((t for t in remaining if not any(
            child in remaining and child != t for child in references.get(t, ()))), remaining[0])
        ordered.append(free)
        remaining.remove(free)
    return ordered


def search_path(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The schemas DuckDB's search path names (the last part of each entry)."""
    # (duckdb_settings(): a session's current_setting() is PostgreSQL's, which has no such path)
    path, current = con.execute(
        "SELECT (SELECT value FROM duckdb_settings() WHERE name = 'search_path'), "
        "current_schema()").fetchall()[0]
    entries = [name_parts(e)[-1] for e in split_names(path)] if path else []
    return entries or [current]


def split_names(text: str) -> list[str]:
    """A comma-separated list of names (commas inside quotes, and inside parentheses such as a
    name's column list, kept)."""
    names, current, quoted, depth = [], [], False, 0
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted:
            depth += (ch == "(") - (ch == ")")
        if ch == "," and not quoted and depth == 0:
            names.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    names.append("".join(current).strip())
    return [n for n in names if n]


def name_parts(name: str) -> tuple[str, ...]:
    """A (maybe qualified, maybe quoted) name's parts, folded as PostgreSQL folds them."""
    return tuple(identifier(p) for p in _PART.findall(name))

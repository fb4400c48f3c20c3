"""PostgreSQL's maintenance commands, which change no rows: VACUUM, ANALYZE, REINDEX, CLUSTER.

Maintenance scripts and tools run these. DuckDB's grammar has plain VACUUM and ANALYZE only, and
none of PostgreSQL's options; its tables need no vacuuming (deleted rows are reclaimed as it
checkpoints), its indexes no rebuilding, and it keeps no physical order a CLUSTER could set.

Contract:
- `read(sql)`: `VACUUM [FULL] [FREEZE] [VERBOSE] [ANALYZE] | VACUUM (option [, ...]) [table
  [(columns)] [, ...]]`, `ANALYZE [VERBOSE] | ANALYZE (option [, ...]) [table [(columns)] [,
  ...]]`, `REINDEX [(option [, ...])] {INDEX | TABLE | SCHEMA | DATABASE | SYSTEM}
  [CONCURRENTLY] name` and `CLUSTER [VERBOSE] [table [USING index]]` as a `Maintenance`; None
  for anything else.
- `run(con, maintenance)` looks every name up (42P01 for a missing table or index, 3F000 for a
  missing schema; another database than the current one is 0A000, as PostgreSQL's REINDEX
  DATABASE says), then runs DuckDB's ANALYZE of the tables where the command analyzes
  (ANALYZE, VACUUM ... ANALYZE), which refreshes the statistics its planner uses; the rest has
  nothing to do. VACUUM inside a transaction block is 25001, as there. `CLUSTER table` without
  USING is PostgreSQL's 42704 (no index was ever clustered on here). Tagged as PostgreSQL tags
  it (VACUUM, ANALYZE, REINDEX, CLUSTER).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

from heron.planner import existence
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.statement import Result, in_transaction

_NAME = rf"{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})?"
_TABLES = rf"(?P<tables>{_NAME}(?:\s*\([^)]*\))?(?:\s*,\s*{_NAME}(?:\s*\([^)]*\))?)*)?"
_OPTIONS = r"\((?P<options>[^)]*)\)"
_COMMANDS = {
    "VACUUM": re.compile(rf"^\s*VACUUM\s*(?:{_OPTIONS}|(?P<words>(?:\s*\b(?:FULL|FREEZE|VERBOSE|"
                         rf"ANALYZE|ANALYSE)\b)*))\s*{_TABLES}\s*;?\s*$", re.IGNORECASE),
    "ANALYZE": re.compile(rf"^\s*ANALY[SZ]E\s*(?:{_OPTIONS}|(?P<words>(?:\s*\bVERBOSE\b)?))\s*"
                          rf"{_TABLES}\s*;?\s*$", re.IGNORECASE),
    "REINDEX": re.compile(rf"^\s*REINDEX\s*(?:{_OPTIONS})?\s*(?P<kind>INDEX|TABLE|SCHEMA|DATABASE|"
                          rf"SYSTEM)\s+(?:CONCURRENTLY\s+)?(?P<name>{_NAME})?\s*;?\s*$",
                          re.IGNORECASE),
    "CLUSTER": re.compile(rf"^\s*CLUSTER\s*(?:\bVERBOSE\b)?\s*(?:(?P<table>{_NAME})(?:\s+USING\s+"
                          rf"(?P<index>{IDENTIFIER}))?)?\s*;?\s*$", re.IGNORECASE),
}
_COLUMNS = re.compile(r"\s*\([^)]*\)\s*$")


@dataclass(frozen=True)
class Maintenance:
    command: str  # VACUUM, ANALYZE, REINDEX, CLUSTER
    tables: tuple[tuple[str, ...], ...]  # the tables named (each name's parts)
    analyzes: bool  # whether DuckDB's statistics are refreshed (ANALYZE, VACUUM ANALYZE)
    index: tuple[str, ...] | None = None  # REINDEX INDEX's, CLUSTER ... USING's
    schema: str | None = None  # REINDEX SCHEMA's
    database: str | None = None  # REINDEX DATABASE's or SYSTEM's
    clustered: bool = False  # CLUSTER table without USING


def read(sql: str) -> Maintenance | None:
    """`sql` as a `Maintenance`, or None (see the module docstring)."""
    for command, pattern in _COMMANDS.items():
        if (m := pattern.match(sql)) is not None:
            return _maintenance(command, m)
    return None


def _maintenance(command: str, m: re.Match[str]) -> Maintenance:
    if command == "REINDEX":
        kind, name = m["kind"].upper(), m["name"]
        if name is None and kind in ("INDEX", "TABLE", "SCHEMA"):
            raise SqlError(SqlState.SYNTAX_ERROR, "syntax error at end of input")
        parts = existence.name_parts(name) if name else ()
        return Maintenance(command, (parts,) if kind == "TABLE" else (), False,
                           index=parts if kind == "INDEX" else None,
                           schema=parts[-1] if kind == "SCHEMA" else None,
                           database=(parts[-1] if parts else "") if kind in (
                               "DATABASE", "SYSTEM") else None)
    if command == "CLUSTER":
        table = existence.name_parts(m["table"]) if m["table"] else None
        index = existence.name_parts(m["index"]) if m["index"] else None
        return Maintenance(command, (table,) if table else (), False, index=index,
                           clustered=table is not None and index is None)
    words = (m["options"] or m["words"] or "").upper()
    tables = tuple(existence.name_parts(_COLUMNS.sub("", t))
                   for t in existence.split_names(m["tables"] or ""))
    analyzes = command == "ANALYZE" or re.search(r"\bANALY[SZ]E\b", words) is not None
    return Maintenance(command, tables, analyzes)


def run(con: duckdb.DuckDBPyConnection, maintenance: Maintenance) -> Result:
    """Run `maintenance` (see the module docstring)."""
    if maintenance.command == "VACUUM" and in_transaction(con):
        raise SqlError(SqlState.ACTIVE_SQL_TRANSACTION,
                       "VACUUM cannot run inside a transaction block")
    relations = [existence.find_relation(con, parts, views=False) for parts in maintenance.tables]
    if maintenance.index is not None and existence.missing(
            con, "INDEX", maintenance.index) is not None:
        name = ".".join(maintenance.index)
        if maintenance.command == "CLUSTER":
            raise SqlError(SqlState.UNDEFINED_OBJECT, f'index "{name}" for table '
                           f'"{maintenance.tables[0][-1]}" does not exist')
        raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{name}" does not exist')
    if maintenance.schema is not None and (
            error := existence.missing(con, "SCHEMA", (maintenance.schema,))) is not None:
        raise error
    if maintenance.database:
        current = con.execute("SELECT current_database()").fetchall()[0][0]
        if maintenance.database != current:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "can only reindex the currently open database")
    if maintenance.clustered:
        raise SqlError(SqlState.UNDEFINED_OBJECT, "there is no previously clustered index for "
                       f'table "{maintenance.tables[0][-1]}"')
    if maintenance.analyzes:
        try:
            for relation in relations or [None]:
                con.execute("ANALYZE" if relation is None else f"ANALYZE {relation.quoted}")
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None
    return Result(maintenance.command, None, None)

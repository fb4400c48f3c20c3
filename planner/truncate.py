"""TRUNCATE as PostgreSQL runs it: several tables, CASCADE, RESTART IDENTITY, its command tag.

DuckDB's TRUNCATE is a DELETE of one table (tagged `DELETE n`), refuses CASCADE and knows no
RESTART IDENTITY; test suites empty their tables between tests with exactly these
(`TRUNCATE a, b RESTART IDENTITY CASCADE`).

Contract:
- `read(sql)`: TRUNCATE [TABLE] [ONLY] name [*] [, ...] [RESTART IDENTITY | CONTINUE IDENTITY]
  [CASCADE | RESTRICT] as a `Truncate`; None for any other statement.
- `run(con, truncate)` empties the tables in one transaction (the session's when one is
  open) and is tagged `TRUNCATE TABLE`: with CASCADE, also every table whose foreign keys
  reference one being emptied (transitively), referencing tables first; without it, a table
  referenced by another's foreign key that is not emptied too is PostgreSQL's 0A000; each table
  CASCADE adds is named in a NOTICE, as there. A missing
  table is 42P01. RESTART IDENTITY restarts the sequences the tables' serial and identity
  columns own (`sequences.restart_at_start`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

from heron.planner import existence, sequences
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.existence import find_relation
from heron.planner.statement import Result, atomic

_NAME = rf"{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER}){{0,2}}(?:\s*\*)?"
_TRUNCATE = re.compile(
    rf"^\s*TRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?(?P<names>{_NAME}(?:\s*,\s*(?:ONLY\s+)?{_NAME})*)"
    r"(?:\s+(?P<identity>RESTART|CONTINUE)\s+IDENTITY)?(?:\s+(?P<behaviour>CASCADE|RESTRICT))?"
    r"\s*;?\s*$", re.IGNORECASE)
_ONLY = re.compile(r"^\s*ONLY\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Truncate:
    tables: tuple[tuple[str, ...], ...]  # each name's parts
    restart_identity: bool
    cascade: bool


def read(sql: str) -> Truncate | None:
    """`sql` as a `Truncate`, or None (see the module docstring)."""
    m = _TRUNCATE.match(sql)
    if m is None:
        return None
    names = [_ONLY.sub("", n).rstrip("* \t") for n in m["names"].split(",")]
    return Truncate(tuple(existence.name_parts(n) for n in names),
                    (m["identity"] or "").upper() == "RESTART",
                    (m["behaviour"] or "").upper() == "CASCADE")


def run(con: duckdb.DuckDBPyConnection, truncate: Truncate) -> Result:
    """Run `truncate` (see the module docstring)."""
    with atomic(con):
        tables = [find_relation(con, parts, views=False) for parts in truncate.tables]
        emptied = list(dict.fromkeys(tables))
        references = existence.references(con)
        notices = []
        pending = list(emptied)
        while pending:  # the tables that reference those being emptied
            table = pending.pop()
            for child in references.get(table, ()):
                if child in emptied:
                    continue
                if not truncate.cascade:
                    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                                   "cannot truncate a table referenced in a foreign key "
                                   "constraint", f'Table "{child.name}" references '
                                   f'"{table.name}".', f'Truncate table "{child.name}" at '
                                   "the same time, or use TRUNCATE ... CASCADE.")
                emptied.append(child)
                pending.append(child)
                notices.append(f'truncate cascades to table "{child.name}"')
        for table in emptied:
            try:
                con.execute(f"DELETE FROM {table.quoted}")
            except duckdb.Error as exc:
                raise from_duckdb(exc) from None
        if truncate.restart_identity:
            for table in emptied:
                for sequence in existence.owned_sequences(con, table):
                    sequences.restart_at_start(con, sequence)
    return Result("TRUNCATE TABLE", None, None, notices=tuple(notices))


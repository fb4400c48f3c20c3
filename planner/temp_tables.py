"""Temporary tables' ON COMMIT DROP and ON COMMIT DELETE ROWS, which DuckDB lacks (it has ON
COMMIT PRESERVE ROWS, PostgreSQL's default, only).

Contract:
- `read(sql)`: `CREATE [GLOBAL | LOCAL] {TEMP | TEMPORARY} TABLE ... ON COMMIT {DROP | DELETE
  ROWS} ...` (the clause after the column list, or before AS of a CREATE TABLE AS) as an
  `OnCommit`: the statement without the clause, the table's name and the action; None for any
  other statement. ON COMMIT on a table that is not temporary is PostgreSQL's 42P16.
- `OnCommitActions`, a session's: `add(on_commit)` once its table was created;
  `before_commit(con)` runs the actions in the transaction about to commit, or after a statement
  DuckDB committed by itself (outside a transaction block: a temporary table is the session's
  alone, so no one sees the difference): the tables to drop dropped and forgotten, those to
  empty emptied, a table gone since (dropped, or its creation rolled back) forgotten.
  `rolled_back()` forgets the tables to drop (they were created in the transaction that ended).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import duckdb

from heron.planner import dialect, existence
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError, SqlState, from_duckdb

_CREATE = re.compile(
    rf"^\s*CREATE\s+(?P<temp>(?:(?:GLOBAL|LOCAL)\s+)?(?:TEMP|TEMPORARY)\s+)?TABLE\s+"
    rf"(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})?)\b",
    re.IGNORECASE)
_CLAUSE = re.compile(r"\s+ON\s+COMMIT\s+(?P<action>DROP|DELETE\s+ROWS)\b", re.IGNORECASE)
_STRING = re.compile(r"'(?:[^']|'')*'")


@dataclass(frozen=True)
class OnCommit:
    create: str  # the CREATE TABLE without its ON COMMIT clause
    table: str  # the table's name as written
    drop: bool  # ON COMMIT DROP (else DELETE ROWS)


def read(sql: str) -> OnCommit | None:
    """`sql` as an `OnCommit`, or None (see the module docstring)."""
    if (m := _CREATE.match(sql)) is None:
        return None
    # (the clause outside string literals: blank them out where it is looked for)
    blanked = _STRING.sub(lambda s: " " * len(s.group()), sql)
    clause = next((c for c in _CLAUSE.finditer(blanked) if _depth(blanked, c.start()) == 0), None)
    if clause is None:
        return None
    if not m["temp"]:
        raise SqlError(SqlState.INVALID_TABLE_DEFINITION,
                       "ON COMMIT can only be used on temporary tables")
    return OnCommit(sql[:clause.start()] + sql[clause.end():], m["name"],
                    clause["action"].upper() == "DROP")


def _depth(text: str, position: int) -> int:
    """How many parentheses are open at `position` (the column list's, a query's)."""
    return text.count("(", 0, position) - text.count(")", 0, position)


@dataclass
class OnCommitActions:
    """A session's temporary tables with ON COMMIT DROP or DELETE ROWS."""

    _tables: dict[str, bool] = field(default_factory=dict)  # name -> drop (else empty)

    def add(self, on_commit: OnCommit) -> None:
        self._tables[existence.name_parts(on_commit.table)[-1]] = on_commit.drop

    def before_commit(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self._tables:
            return
        try:
            present = {name for (name,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
            for name, drop in list(self._tables.items()):
                table = f"temp.main.{dialect.quoted(name)}"
                if name not in present:
                    del self._tables[name]  # dropped, or its creation rolled back
                elif drop:
                    con.execute(f"DROP TABLE {table}")
                    del self._tables[name]
                else:
                    con.execute(f"DELETE FROM {table}")
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None

    def rolled_back(self) -> None:
        for name in [n for n, drop in self._tables.items() if drop]:
            del self._tables[name]

"""Restarting or renaming a sequence, which DuckDB cannot do in place: setval, ALTER SEQUENCE,
and what TRUNCATE ... RESTART IDENTITY does to the sequences of serial and identity columns.

DuckDB has no setval and no ALTER SEQUENCE ... RESTART, and refuses to drop a sequence that a
column's default reads. A restart is done as its outcome requires: the defaults that read the
sequence are dropped, the sequence is created again (its increment, bounds and cycle kept)
starting at the value the next nextval must give, and the defaults are set back, all in one
transaction (the session's when one is open). Test suites restart their keys between tests
this way (Django's sequence reset, Rails' and DatabaseCleaner's TRUNCATE ... RESTART IDENTITY).

Contract:
- `restart_at_start(con, name)`: the sequence `name` (text as a regclass is written: maybe
  schema-qualified, maybe quoted; found through the search path, temporary first) gives its
  first value (its MINVALUE ascending, MAXVALUE descending) at its next nextval. An unknown
  sequence is 42P01; setval's and ALTER SEQUENCE's values outside its bounds 22003, in
  PostgreSQL's words.
- `read_alter(sql)`: ALTER SEQUENCE [IF EXISTS] name RESTART [[WITH] n], OWNED BY ... or
  RENAME TO new as an `AlterSequence`; `run_alter(con, alter)` restarts it (at n, else at its
  first value), takes OWNED BY as said (see `run_alter`), or renames it: made again under the
  new name where it stood, its readers' defaults reading the new name (DuckDB renames no
  sequence); a name another sequence of the schema has is 42P07.
- `follow_rename(con, table, renamed_to, columns)`, after a table or its columns were renamed:
  the sequences of its serial and identity columns renamed to the new `<table>_<column>_seq`,
  which is how Heron knows them as the columns' own (see the function).
- `read_setval(sql)`: a SELECT whose only item is setval(sequence, value [, is_called]) (with
  or without FROM) as a `SetVal`; None for anything else.
- `run_setval(con, setval)` runs it (`result_columns(setval)` describes its rows): its
  arguments are computed by the same query, then each row restarts its sequence (at value +
  increment, or at value when is_called is false) and answers `value`, as PostgreSQL's setval
  does (bigint, named setval or the item's alias).

setval(sequence, value) also makes `value` the session's currval of the sequence, as
PostgreSQL's does (`session_sequences`).

Differences from PostgreSQL: the sequence gets a new OID; RESTART IDENTITY restarts at MINVALUE
(MAXVALUE descending), not at an identity's own START WITH once it differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
import pyarrow as pa
from sqlglot import exp

from heron.planner import dialect, existence, serial_columns, session_sequences
from heron.planner.commands import IDENTIFIER, identifier
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.pg_catalog_types import literal
from heron.planner.statement import Column, Result, Rows, atomic

_MAY_BE_SETVAL = re.compile(r"^\s*SELECT\s+(?:pg_catalog\s*\.\s*)?setval\s*\(", re.IGNORECASE)


_ALTER = re.compile(
    rf"^\s*ALTER\s+SEQUENCE\s+(?P<exists>IF\s+EXISTS\s+)?(?P<name>{IDENTIFIER}"
    rf"(?:\s*\.\s*{IDENTIFIER}){{0,2}})\s+(?:(?P<restart>RESTART)(?:\s+(?:WITH\s+)?"
    r"(?P<value>[+-]?\d+))?|OWNED\s+BY\s+(?P<owner>\S+)|"
    rf"RENAME\s+TO\s+(?P<new>{IDENTIFIER}))\s*;?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class AlterSequence:
    """ALTER SEQUENCE name RESTART [[WITH] n], OWNED BY table.column | NONE, or RENAME TO new."""

    name: str
    if_exists: bool
    restart: bool
    value: int | None  # RESTART WITH's; None: the sequence's first value
    renamed_to: str | None = None


def read_alter(sql: str) -> AlterSequence | None:
    """`sql` as an `AlterSequence`, or None."""
    m = _ALTER.match(sql)
    if m is None:
        return None
    return AlterSequence(m["name"], bool(m["exists"]), bool(m["restart"]),
                         int(m["value"]) if m["value"] else None,
                         identifier(m["new"]) if m["new"] else None)


def run_alter(con: duckdb.DuckDBPyConnection, alter: AlterSequence) -> Result:
    """RESTART restarts the sequence (`restart`); OWNED BY is taken as said and changes nothing
    here: a sequence named `<table>_<column>_seq` that the column's default reads is dropped
    with its table already (`serial_columns`), as pg_dump's serial columns are."""
    try:
        found = _find(con, alter.name)
    except SqlError:
        if not alter.if_exists:
            raise
        return Result("ALTER SEQUENCE", None, None, notices=(
            f'relation "{alter.name}" does not exist, skipping',))
    if alter.restart:
        _restart(con, found, found.first if alter.value is None else alter.value)
    if alter.renamed_to is not None:
        _rename(con, found, alter.renamed_to)
    return Result("ALTER SEQUENCE", None, None)


def follow_rename(con: duckdb.DuckDBPyConnection, table: tuple[str, ...], renamed_to: str | None,
                  columns: dict[str, str]) -> None:
    """After a table (now `renamed_to`, if renamed) or its columns (`columns`: old -> new, in
    lower case) were renamed: the sequences its serial and identity columns own renamed to
    `<table>_<column>_seq` of the new names, which is how they are known as the columns' own
    (`serial_columns.owned`): so they still go with the table, answer pg_get_serial_sequence,
    and restart with TRUNCATE ... RESTART IDENTITY (one whose new name another sequence has
    keeps its name, and is the column's no more). PostgreSQL records the ownership and keeps
    the old name."""
    if renamed_to is None and not columns:
        return
    old_name = table[-1]
    try:
        now = existence.find_relation(con, (*table[:-1], renamed_to or old_name), views=False)
    except SqlError:
        return  # (ALTER TABLE IF EXISTS of no table: nothing was renamed)
    for column, default in con.execute(
            "SELECT column_name, column_default FROM duckdb_columns() WHERE database_name = ? "
            "AND schema_name = ? AND table_name = ?",
            [now.database, now.schema, now.name]).fetchall():
        old_column = next((old for old, new in columns.items() if new.lower() == column.lower()),
                          column)
        owned = serial_columns.owned(old_name, now.schema, old_column, default)
        wanted = f"{now.name}_{column}_seq"
        if owned is not None and owned != wanted and not _taken(con, now.database, now.schema,
                                                                 wanted):
            _rename(con, _find(con, _quoted(now.database, now.schema, owned)), wanted)


def _taken(con: duckdb.DuckDBPyConnection, database: str, schema: str, name: str) -> bool:
    """Whether a sequence of the schema has the name."""
    return bool(con.execute("SELECT count(*) FROM duckdb_sequences() WHERE database_name = ? "
                            "AND schema_name = ? AND sequence_name = ?",
                            [database, schema, name]).fetchall()[0][0])


def _rename(con: duckdb.DuckDBPyConnection, sequence: _Sequence, new: str) -> None:
    """The sequence made again under the name `new` (in its schema), where it stood: DuckDB
    renames no sequence (0A000 "not yet supported")."""
    if _taken(con, sequence.database, sequence.schema, new):
        raise SqlError(SqlState.DUPLICATE_TABLE, f'relation "{new}" already exists')
    _remake(con, sequence, sequence.next, _quoted(sequence.database, sequence.schema, new),
            serial_columns.nextval_defaults(sequence.schema, new)[0])


@dataclass(frozen=True)
class SetVal:
    arguments: str  # DuckDB's query of setval's arguments, one row per call
    name: str  # the result column's name


def read_setval(sql: str) -> SetVal | None:
    """`sql` as a `SetVal`, or None (see the module docstring)."""
    if _MAY_BE_SETVAL.match(sql) is None:
        return None
    tree = dialect.read_postgres(sql)
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1:
        return None
    item = tree.expressions[0]
    call = item.this if isinstance(item, exp.Alias) else item
    if not isinstance(call, exp.Anonymous) or call.name.lower() != "setval" or not (
            2 <= len(call.expressions) <= 3):
        return None
    arguments = tree.copy()
    arguments.set("expressions", [
        exp.alias_(exp.cast(value.copy(), kind), f"heron_{i}") for i, (value, kind) in enumerate(
            zip(call.expressions, ("VARCHAR", "BIGINT", "BOOLEAN"), strict=False))])
    return SetVal(arguments.sql(dialect="duckdb"), item.alias if isinstance(item, exp.Alias)
                  else "setval")


def run_setval(con: duckdb.DuckDBPyConnection, setval: SetVal) -> Result:
    """Run `setval` (see the module docstring)."""
    try:
        calls = con.execute(setval.arguments).fetchall()
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    values = []
    with atomic(con):
        for name, value, *called in calls:
            if name is None or value is None or (called and called[0] is None):
                values.append(None)  # strict, as PostgreSQL's setval
                continue
            found = _find(con, name)
            is_called = not called or called[0]
            _restart(con, found, value + found.increment if is_called else value, shown=value)
            if is_called:  # (the session's currval and lastval, as PostgreSQL's)
                session_sequences.set_on(con, name, value)
            values.append(value)
    table = pa.table({setval.name: pa.array(values, pa.int64())})
    return Result(f"SELECT {len(values)}", result_columns(setval), Rows.of(table))


def result_columns(setval: SetVal) -> tuple[Column, ...]:
    """What `run_setval` answers: one bigint column."""
    return (Column(setval.name, pa.int64()),)


@dataclass(frozen=True)
class _Sequence:
    quoted: str  # its name, database and schema included, quoted
    database: str
    schema: str
    name: str
    temporary: bool
    minimum: int
    maximum: int
    increment: int
    cycle: bool
    start: int
    last: int | None  # the value nextval gave last (None: never yet)
    readers: tuple[tuple[str, str, str], ...]  # (quoted table, quoted column, default text)
    comment: str | None  # kept by a restart (an identity column's mark: `serial_columns`)

    @property
    def next(self) -> int:
        """What its next nextval gives (an exhausted sequence's last value again)."""
        if self.last is None:
            return self.start
        following = self.last + self.increment
        if self.minimum <= following <= self.maximum:
            return following
        return self.first if self.cycle else self.last

    @property
    def first(self) -> int:
        """Where RESTART starts it: MINVALUE ascending, MAXVALUE descending."""
        return self.minimum if self.increment > 0 else self.maximum


def restart_at_start(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Make `name`'s next nextval give its first value (see the module docstring)."""
    found = _find(con, name)
    _restart(con, found, found.first)


def _restart(con: duckdb.DuckDBPyConnection, sequence: _Sequence, next_value: int, *,
             shown: int | None = None) -> None:
    """Make the sequence's next nextval give `next_value`; `shown` is the value an
    out-of-bounds error names (setval's argument)."""
    if not sequence.minimum <= (shown if shown is not None else next_value) <= sequence.maximum:
        raise SqlError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE,
                       f"setval: value {shown if shown is not None else next_value} is out of "
                       f'bounds for sequence "{sequence.name}" ({sequence.minimum}..'
                       f"{sequence.maximum})")
    _remake(con, sequence, next_value)


def _remake(con: duckdb.DuckDBPyConnection, sequence: _Sequence, next_value: int,
            quoted: str | None = None, default: str | None = None) -> None:
    """The sequence dropped and created again (as `quoted`, by default its own name) to give
    `next_value` next, its readers' defaults set back (to `default`, by default their own)."""
    temporary = "TEMPORARY " if sequence.temporary else ""
    quoted = quoted or sequence.quoted
    try:
        with atomic(con):
            for table, column, _ in sequence.readers:
                con.execute(f"ALTER TABLE {table} ALTER COLUMN {column} DROP DEFAULT")
            con.execute(f"DROP SEQUENCE {sequence.quoted}")
            con.execute(
                f"CREATE {temporary}SEQUENCE {quoted} INCREMENT BY "
                f"{sequence.increment} MINVALUE {sequence.minimum} MAXVALUE {sequence.maximum} "
                f"START WITH {next_value}{' CYCLE' if sequence.cycle else ''}")
            if sequence.comment:
                con.execute(f"COMMENT ON SEQUENCE {quoted} IS {literal(sequence.comment)}")
            for table, column, reader_default in sequence.readers:
                con.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET DEFAULT "
                            f"{default or reader_default}")
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None


def _find(con: duckdb.DuckDBPyConnection, name: str) -> _Sequence:
    parts = existence.name_parts(name)
    if not parts:
        raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{name}" does not exist')
    schemas = [parts[-2]] if len(parts) > 1 else existence.search_path(con)
    found = con.execute(
        "SELECT database_name, schema_name, sequence_name, temporary, min_value, max_value, "
        "increment_by, cycle, start_value, last_value, comment FROM duckdb_sequences() WHERE "
        "sequence_name = ? AND "
        "(schema_name IN (SELECT unnest(?::VARCHAR[])) OR (? AND temporary)) "
        "ORDER BY NOT temporary",
        [parts[-1], schemas, len(parts) == 1]).fetchall()
    if not found:
        raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{name}" does not exist')
    (database, schema, sequence, temporary, minimum, maximum, increment, cycle, start, last,
     comment) = found[0]
    readers = con.execute(
        "SELECT database_name, schema_name, table_name, column_name, column_default "
        "FROM duckdb_columns() WHERE column_default IN (?, ?)",
        list(serial_columns.nextval_defaults(schema, sequence))).fetchall()
    return _Sequence(
        _quoted(database, schema, sequence), database, schema, sequence, temporary, minimum,
        maximum, increment, cycle, start, last,
        tuple((_quoted(d, s, t), dialect.quoted(c), default) for d, s, t, c, default in readers),
        comment)


def _quoted(*parts: str) -> str:
    return ".".join(dialect.quoted(p) for p in parts)

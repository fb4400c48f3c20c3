"""Statements: splitting a query string, deciding what each statement is, running it, tagging it.

Contract: this module is the one place that answers "what kind of statement is this?".
`split(sql)` cuts a query string at top-level semicolons (quotes, dollar quotes, quoted
identifiers and comments respected) and drops empty statements. `classify(con, sql)` decides one
statement's `Kind` without running it — the commands Heron answers itself (SET, RESET, SHOW,
transaction control and savepoints, PREPARE/EXECUTE/DEALLOCATE, DISCARD, cursors, LISTEN/NOTIFY,
COPY with the client: `planner.commands`, `planner.copy_statement`) by their syntax, everything
else as DuckDB parses it — and returns a `Statement`, the frozen value that travels from the
wire layer to execution, with its parameters' types as PostgreSQL would infer them
(`planner.parameters`).

Running on DuckDB: `run(con, statement, params)` returns a `Result` — the rows (`Rows`, Arrow
record batches; with `stream=True` a SELECT's rows are read from DuckDB as the client takes them,
in bounded memory) and the command tag PostgreSQL would send ("SELECT 3", "INSERT 0 2", "CREATE
TABLE", ...; SELECT and FETCH are tagged by `Result.tag` with the rows returned). With a
connection's `PreparedStatements`, a statement with parameters (or one without, from its second
run on) runs as EXECUTE of a DuckDB prepared statement with its values as typed literals
(`literal`), the fast twin of binding the values (and of planning the statement again).
`describe` and `bind_columns` report result columns by binding, without running anything;
`insert_many` runs one INSERT ... VALUES for many parameter rows at once (an Arrow table);
`insert_rows` runs an INSERT reading a registered Arrow batch (COPY); `atomic(con)` runs
statements as one, in the open transaction or in their own. DuckDB's errors become `SqlError`s
(`errors.from_duckdb`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as dt
import decimal
import enum
import functools
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import sqlglot
from duckdb import _seam
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError, TokenError
from sqlglot.tokens import TokenType

from heron.planner import (
    commands,
    copy_statement,
    foreign_keys,
    parameters,
    pg_catalog_relations,
)
from heron.planner.column_origins import NO_ORIGIN, Origin
from heron.planner.commands import (
    CloseCommand,
    ConstraintsCommand,
    DeclareCommand,
    DiscardCommand,
    ExecuteCommand,
    FetchCommand,
    ListenCommand,
    LockCommand,
    NotifyCommand,
    PrepareCommand,
    SavepointCommand,
    SessionCommand,
    TransactionOptions,
)
from heron.planner.copy_statement import CopyCommand
from heron.planner.errors import SqlError, SqlState, from_duckdb

if TYPE_CHECKING:
    from heron.planner.logical import AiPlan, OperatorWork

_TOKENIZER = Postgres().tokenizer_class
BATCH_ROWS = 8192  # rows per Arrow batch read from a streamed DuckDB result


class Kind(enum.Enum):
    """What a statement is, as far as who answers it and how it is tagged."""

    EMPTY = "empty"  # only whitespace and comments
    SELECT = "select"  # rows whose columns binding tells (SELECT, VALUES, FROM ..., SHOW ...)
    UTILITY_ROWS = "utility rows"  # rows known only by running it (EXPLAIN, PRAGMA, CALL)
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    MERGE = "merge"
    CREATE = "create"
    COPY = "copy"  # COPY to or from a file of the server: DuckDB runs it
    BEGIN = "begin"  # BEGIN, START TRANSACTION: the session answers
    COMMIT = "commit"  # COMMIT, END: the session answers
    ROLLBACK = "rollback"  # ROLLBACK, ABORT: the session answers
    TRANSACTION = "transaction"  # other transaction control, for DuckDB
    SET = "set"  # the session answers the settings it knows, DuckDB the others
    RESET = "reset"
    SHOW = "show"
    DEALLOCATE = "deallocate"  # protocol-level prepared statements: the connection answers
    PREPARE = "prepare"  # SQL's PREPARE and EXECUTE of them: the connection answers too
    EXECUTE = "execute"
    DISCARD = "discard"  # the session answers (DISCARD ALL: with the connection)
    ROLE = "role"  # CREATE/ALTER/DROP ROLE, GRANT/REVOKE, ALTER ... OWNER TO: role_statements
    COPY_IN = "copy in"  # COPY ... FROM STDIN: the connection runs the COPY sub-protocol
    COPY_OUT = "copy out"  # COPY ... TO STDOUT
    SAVEPOINT = "savepoint"  # SAVEPOINT, RELEASE, ROLLBACK TO: the session answers
    RELEASE = "release"
    ROLLBACK_TO = "rollback to"
    DECLARE = "declare"  # SQL cursors: the session answers
    FETCH = "fetch"  # FETCH and MOVE
    CLOSE = "close"
    LISTEN = "listen"  # LISTEN and UNLISTEN: the session answers, the connection delivers
    NOTIFY = "notify"
    LOCK = "lock"  # LOCK TABLE: the session answers
    SET_CONSTRAINTS = "set constraints"  # the session answers (every constraint is immediate)
    OTHER = "other"  # the rest (DDL, ...): tagged with its leading keywords

    # Members are singletons compared by identity: hashing them by identity is as sound, and
    # Enum's own __hash__ is Python code that hashes the name (kinds are looked up in sets
    # several times per statement).
    __hash__ = object.__hash__


Command = (SessionCommand | TransactionOptions | SavepointCommand | DeclareCommand | FetchCommand
           | CloseCommand | CopyCommand | ListenCommand | NotifyCommand | LockCommand
           | ConstraintsCommand | PrepareCommand | ExecuteCommand | DiscardCommand)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: pa.DataType
    origin: Origin = NO_ORIGIN  # the table column it reads, its declared type (RowDescription)


@dataclass(frozen=True, slots=True)
class Statement:
    """One classified statement: what it is, its parameters, whether it returns rows, and (for
    statements calling AI functions) its plan. Immutable: a prepared statement runs it many
    times."""

    sql: str
    kind: Kind
    verb: str = ""  # the leading keywords, upper case: "SELECT", "CREATE TABLE", "BEGIN", ...
    param_count: int = 0
    param_types: tuple[int, ...] = ()  # per parameter: the type OID the statement implies, or 0
    returns_rows: bool = False
    bindable: bool = False  # its result columns can be found by binding it, without running
    command: Command | None = None  # what the session answers itself (SET, FETCH, COPY, ...)
    ai: AiPlan | None = None
    # per result column, when known (a query's, a RETURNING clause's; a CREATE TABLE AS's: its
    # query's columns)
    origins: tuple[Origin, ...] | None = None


class Rows:
    """A result's rows: Arrow record batches, read once and in order.

    Rows streamed from a live DuckDB result (`live`) hold its connection: nothing else may run on
    it until they are read out, `close`d, or `detach`ed (the rest is then buffered in memory).
    """

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch], *,
                 live: bool = False, close: Callable[[], None] | None = None) -> None:
        self.schema = schema
        self.live = live
        self._batches: Iterator[pa.RecordBatch] | None = batches
        self._close = close
        self._pending: list[pa.RecordBatch] = []  # read, not handed out yet

    @classmethod
    def of(cls, table: pa.Table) -> Rows:
        return cls(table.schema, iter(table.to_batches()))

    @classmethod
    def streaming(cls, reader: pa.RecordBatchReader, schema: pa.Schema | None = None) -> Rows:
        """Rows read from DuckDB as they are taken (`schema`: the reader's, when at hand)."""
        return cls(reader.schema if schema is None else schema, iter(reader), live=True,
                   close=reader.close)

    def next(self, max_rows: int = 0) -> pa.RecordBatch | None:
        """The next rows, at most `max_rows` of them (any number when 0); None once all were
        read. Errors of the running statement surface here as `SqlError`."""
        while True:
            if self._pending:
                batch = self._pending.pop(0)
            elif (batch := self._read()) is None:
                return None
            if batch.num_rows == 0:
                continue
            if 0 < max_rows < batch.num_rows:
                self._pending.insert(0, batch.slice(max_rows))
                batch = batch.slice(0, max_rows)
            return batch

    def _read(self) -> pa.RecordBatch | None:
        if self._batches is None:
            return None
        try:
            return next(self._batches)
        except StopIteration:
            self.close()
            return None
        except (pa.ArrowException, OSError) as exc:
            self.close()
            raise from_duckdb(exc) from None  # DuckDB's error, passed on by Arrow's stream

    def detach(self) -> None:
        """Read what DuckDB still holds into memory, so its connection is free."""
        if self.live:
            while (batch := self._read()) is not None:
                self._pending.append(batch)
        self.live = False

    def read_all(self) -> pa.Table:
        batches = []
        while (batch := self.next()) is not None:
            batches.append(batch)
        return pa.Table.from_batches(batches, self.schema)

    def close(self) -> None:
        self._batches = None
        if self._close is not None:
            self._close()
            self._close = None
        self.live = False


# Tags counted by the rows a portal returns (PostgreSQL tags an Execute with its own rows).
_ROW_COUNTED_TAGS = ("SELECT", "FETCH")


@dataclass(frozen=True, slots=True)
class Result:
    command_tag: str  # complete, except SELECT/FETCH, which `tag` counts
    columns: tuple[Column, ...] | None  # None: the statement returns no rows
    rows: Rows | None
    notices: tuple[str, ...] = ()  # sent to the client as NOTICE messages
    work: tuple[OperatorWork, ...] = ()  # the AI work this statement did, per operator
    warnings: tuple[str, ...] = ()  # sent to the client as WARNING messages

    def tag(self, rows_returned: int) -> str:
        """The command tag once `rows_returned` rows went to the client."""
        verb = self.command_tag.split(" ", 1)[0]
        if self.columns is None or verb not in _ROW_COUNTED_TAGS:
            return self.command_tag
        return f"{verb} {rows_returned}"


# Query strings up to this long have their statements kept (`split`, `split_known`): a client
# sends the same short texts again and again, and tokenizing costs ~1 us per character.
SPLIT_KEPT_CHARS = 4096
SPLIT_KEPT = 1024  # texts kept; past it, the oldest are forgotten first
_splits: collections.OrderedDict[str, tuple[str, ...]] = collections.OrderedDict()


def split_known(sql: str) -> list[str] | None:
    """The statements of a query string `split` has seen lately, or None (cheap: a look-up)."""
    statements = _splits.get(sql)
    return None if statements is None else list(statements)


def split(sql: str) -> list[str]:
    """The statements of a query string, in order, without their semicolons."""
    known = split_known(sql)
    if known is not None:
        return known
    statements = _split(sql)
    if len(sql) <= SPLIT_KEPT_CHARS:
        _splits[sql] = tuple(statements)
        if len(_splits) > SPLIT_KEPT:
            with contextlib.suppress(KeyError):  # (another thread may have dropped it first)
                _splits.popitem(last=False)
    return statements


def _split(sql: str) -> list[str]:
    try:
        tokens = _TOKENIZER().tokenize(sql)
    except TokenError as exc:
        raise SqlError(SqlState.SYNTAX_ERROR, f"syntax error: {exc}") from None
    statements, start = [], None
    end = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                statements.append(sql[start : end + 1])
            start = None
        else:
            if start is None:
                start = token.start
            end = token.end
    if start is not None:
        statements.append(sql[start : end + 1])
    return statements


# -- classification ----------------------------------------------------------------------------

_TRANSACTION_VERBS = re.compile(
    r"^\s*(?P<verb>BEGIN|START|COMMIT|END|ROLLBACK|ABORT)\b(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL)
_TRANSACTION_KINDS = {"BEGIN": Kind.BEGIN, "START": Kind.BEGIN, "COMMIT": Kind.COMMIT,
                      "END": Kind.COMMIT, "ROLLBACK": Kind.ROLLBACK, "ABORT": Kind.ROLLBACK}

_ROLE = re.compile(r"^\s*(?:(?P<verb>CREATE|ALTER|DROP)\s+(?:ROLE|USER)\b|"
                   r"(?P<grant>GRANT|REVOKE)\b)", re.IGNORECASE)
# ALTER ... OWNER TO, which pg_dump writes after each object: the session answers it with the roles
_OWNER_TO = re.compile(
    rf"^\s*ALTER\s+(?P<kind>TABLE|VIEW|MATERIALIZED\s+VIEW|SEQUENCE|TYPE|SCHEMA)\s+"
    rf"(?:IF\s+EXISTS\s+)?"
    rf"{commands.IDENTIFIER}(?:\s*\.\s*{commands.IDENTIFIER})?\s+OWNER\s+TO\s+"
    rf"{commands.IDENTIFIER}\s*;?\s*$", re.IGNORECASE)

_VERB = re.compile(r"\s*(\w+)" + r"(?:\s+(\w+))?" * 4)
_DUCKDB_KINDS = {
    "SELECT": Kind.SELECT, "RELATION": Kind.SELECT, "EXPLAIN": Kind.UTILITY_ROWS,
    "PRAGMA": Kind.UTILITY_ROWS, "CALL": Kind.UTILITY_ROWS, "INSERT": Kind.INSERT,
    "UPDATE": Kind.UPDATE, "DELETE": Kind.DELETE, "MERGE_INTO": Kind.MERGE, "CREATE": Kind.CREATE,
    "COPY": Kind.COPY, "TRANSACTION": Kind.TRANSACTION,
}
_DML = {Kind.INSERT, Kind.UPDATE, Kind.DELETE, Kind.MERGE}
# Statements that never change what names bind to (the others may: DDL, settings, USE...).
DATA_KINDS = frozenset({Kind.EMPTY, Kind.SELECT, Kind.UTILITY_ROWS, *_DML, Kind.COPY,
                        Kind.COPY_IN, Kind.COPY_OUT, Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK,
                        Kind.SAVEPOINT, Kind.RELEASE, Kind.ROLLBACK_TO, Kind.DECLARE, Kind.FETCH,
                        Kind.CLOSE, Kind.SHOW, Kind.DEALLOCATE, Kind.PREPARE, Kind.EXECUTE,
                        Kind.LISTEN, Kind.NOTIFY, Kind.LOCK, Kind.SET_CONSTRAINTS})
_TWO_WORD_VERBS = {"CREATE", "DROP", "ALTER"}
_CREATE_MODIFIERS = {"OR", "REPLACE", "TEMP", "TEMPORARY", "UNIQUE", "UNLOGGED", "PERSISTENT"}

# Commands Heron answers itself, recognized before DuckDB parses anything: reader, kind, verb.
_OWN_COMMANDS: tuple[tuple[Callable[[str], Command | None], Kind, str], ...] = (
    (commands.read_rollback_to, Kind.ROLLBACK_TO, "ROLLBACK"),
    (commands.read_savepoint, Kind.SAVEPOINT, "SAVEPOINT"),
    (commands.read_release, Kind.RELEASE, "RELEASE"),
    (commands.read_close, Kind.CLOSE, "CLOSE"),
    (commands.read_deallocate, Kind.DEALLOCATE, "DEALLOCATE"),
    (commands.read_prepare, Kind.PREPARE, "PREPARE"),
    (commands.read_execute, Kind.EXECUTE, "EXECUTE"),
    (commands.read_discard, Kind.DISCARD, "DISCARD"),
    (commands.read_notify, Kind.NOTIFY, "NOTIFY"),
    (commands.read_lock, Kind.LOCK, "LOCK TABLE"),
    (commands.read_set_constraints, Kind.SET_CONSTRAINTS, "SET CONSTRAINTS"),
)


def classify(con: duckdb.DuckDBPyConnection, sql: str) -> Statement:
    """What `sql` (one statement) is; nothing runs."""
    if not split(sql):
        return Statement(sql, Kind.EMPTY)
    for read, kind, verb in _OWN_COMMANDS:
        if (command := read(sql)) is not None:
            return Statement(sql, kind, verb=verb, command=command)
    if m := _TRANSACTION_VERBS.match(sql):
        kind = _TRANSACTION_KINDS[m["verb"].upper()]
        options = commands.read_begin(sql) if kind is Kind.BEGIN else None
        return Statement(sql, kind, verb=m["verb"].upper(), command=options)
    if m := _ROLE.match(sql):  # DuckDB has no roles: none of these parse there
        verb = f"{m['verb'].upper()} ROLE" if m["verb"] else m["grant"].upper()
        return Statement(sql, Kind.ROLE, verb=verb)
    if m := _OWNER_TO.match(sql):
        return Statement(sql, Kind.ROLE, verb="ALTER " + " ".join(m["kind"].upper().split()))
    if (listen := commands.read_listen(sql)) is not None:
        return Statement(sql, Kind.LISTEN, verb="LISTEN" if listen.listen else "UNLISTEN",
                         command=listen)
    if (fetch := commands.read_fetch(sql)) is not None:
        return Statement(sql, Kind.FETCH, verb="MOVE" if fetch.move else "FETCH",
                         returns_rows=not fetch.move, command=fetch)
    if (declare := commands.read_declare(sql)) is not None:
        query = classify(con, declare.query)
        return Statement(sql, Kind.DECLARE, "DECLARE CURSOR", query.param_count,
                         query.param_types, command=declare)
    if (copy := copy_statement.read_copy(sql)) is not None:
        kind = Kind.COPY_IN if copy.from_client else Kind.COPY_OUT
        return Statement(sql, kind, verb="COPY", command=copy)
    session = _session_command(sql)
    try:
        parsed = con.extract_statements(sql)
    except duckdb.Error as exc:
        if session is None:
            raise from_duckdb(exc) from None
        # A session command DuckDB cannot read (SET TIME ZONE ...): the session answers it, or
        # running it reports DuckDB's error.
        return Statement(sql, session[0], verb=session[0].name, returns_rows=session[0] is
                         Kind.SHOW, command=session[1])
    if len(parsed) != 1:
        raise SqlError(SqlState.SYNTAX_ERROR,
                       "cannot insert multiple commands into a prepared statement")
    duck_type = parsed[0].type.name
    kind = session[0] if session else _DUCKDB_KINDS.get(duck_type, Kind.OTHER)
    returns_rows = (duck_type in {"SELECT", "RELATION", "EXPLAIN", "PRAGMA", "CALL"}
                    or (kind in _DML and _has_token(sql, TokenType.RETURNING)))
    if duck_type == "CALL" and _verb(sql) == "CHECKPOINT":
        returns_rows = False  # (DuckDB's answers a row; PostgreSQL's none, tagged CHECKPOINT)
    count = len(parsed[0].named_parameters)
    # DuckDB's binder gives the columns of queries and of RETURNING clauses without running.
    bindable = duck_type in {"SELECT", "RELATION"} or (kind in _DML and returns_rows)
    return Statement(sql, kind, _verb(sql), count, parameters.parameter_types(con, sql, count),
                     returns_rows, bindable=bindable, command=session[1] if session else None)


def _session_command(sql: str) -> tuple[Kind, SessionCommand] | None:
    command = commands.read_session_command(sql)
    if command is None:
        return None
    word = sql.split(None, 1)[0].upper()
    return {"SET": Kind.SET, "RESET": Kind.RESET, "SHOW": Kind.SHOW}[word], command


def _verb(sql: str) -> str:
    words = [w.upper() for w in (_VERB.match(sql) or _VERB.match("_")).groups() if w]
    if not words:
        return ""
    if words[0] in _TWO_WORD_VERBS:
        rest = [w for w in words[1:] if w not in _CREATE_MODIFIERS]
        return f"{words[0]} {rest[0]}" if rest else words[0]
    return words[0]


def _has_token(sql: str, token_type: TokenType, *, top_level: bool = False) -> bool:
    """Whether `sql` holds a token of `token_type` (with `top_level`, outside parentheses)."""
    try:
        tokens = _TOKENIZER().tokenize(sql)
    except TokenError:
        return False
    depth = 0
    for token in tokens:
        depth += (token.token_type is TokenType.L_PAREN) - (token.token_type is TokenType.R_PAREN)
        if token.token_type == token_type and (depth == 0 or not top_level):
            return True
    return False


# -- running on DuckDB -------------------------------------------------------------------------


def describe(
    con: duckdb.DuckDBPyConnection,
    statement: Statement,
    sql: str | None = None,
    params: Sequence[Any] | None = None,
) -> tuple[Column, ...] | None:
    """Result columns of a row-returning statement, found by binding (not running) it, with the
    given parameter values (their types can decide the columns' types) or NULLs; None when it
    returns no rows or its columns are known only by running it. `sql` replaces the text (a
    rewritten AI statement)."""
    if not statement.returns_rows or not statement.bindable:
        return None
    return tuple(column for column, _ in bind_columns(con, sql or statement.sql, params))


class PreparedStatements:
    """DuckDB prepared statements of one connection, by statement text.

    A statement with parameters runs as `EXECUTE name(literal, ...)` of a statement DuckDB
    prepared once for its text, its values written as literals of the types DuckDB gives the
    Python values (`literal`): binding the values each time costs DuckDB several times more. A
    statement without parameters runs as `EXECUTE name` from the second time its text runs on
    (a prepared `SELECT 1` takes DuckDB half the time; a text that runs once, as most literal
    statements do, is not worth preparing). The newest `capacity` texts are kept (and as many
    seen once). Running the text with the values bound (`submit`) is the reference; tests compare
    the two on random values. DuckDB binds a prepared statement again when the catalog changed.
    `columns_of` gives a prepared text's result columns, the same tuple while its rows' schema
    stays the same (most executions: the columns are not made again for each)."""

    KINDS = frozenset({Kind.SELECT, Kind.INSERT, Kind.UPDATE, Kind.DELETE, Kind.MERGE})

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._names: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        # By text, as _names: the schema and origins the columns were made for, the columns.
        self._columns: dict[str, tuple[pa.Schema, tuple[Origin, ...] | None,
                                       tuple[Column, ...]]] = {}
        self._next = 0

    def execute_text(self, con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]
                     ) -> str | None:
        """The EXECUTE that runs `sql` with `params`, preparing it first if needed; None when
        DuckDB cannot prepare it, a value has no literal (then the values are bound), or `sql`
        has no parameters and did not run before (then it runs as it is)."""
        try:
            arguments = ", ".join(literal(value) for value in params)
        except ValueError:
            return None
        name = self._names.get(sql)
        if name is None and not params and not self._seen_before(sql):
            return None
        if name is None:
            name = f"__heron_prepared_{self._next}"
            try:
                _seam.submit(con, f"PREPARE {name} AS {sql}", None).drain()
            except duckdb.Error:
                return None  # running it with bound values reports the error
            self._next += 1
            self._names[sql] = name
            if len(self._names) > self.capacity:
                text, evicted = self._names.popitem(last=False)
                self._columns.pop(text, None)
                with contextlib.suppress(duckdb.Error):
                    _seam.submit(con, f"DEALLOCATE {evicted}", None).drain()
        else:
            self._names.move_to_end(sql)
        return f"EXECUTE {name}({arguments})" if params else f"EXECUTE {name}"

    def columns_of(self, sql: str, schema: pa.Schema, origins: tuple[Origin, ...] | None = None
                   ) -> tuple[Column, ...]:
        """`with_origins(columns_of(schema), origins)` for a run of the prepared `sql` (whose
        statement gives these `origins`); made once per schema it returns (a comparison of
        schemas costs a third of making the columns again)."""
        kept = self._columns.get(sql)
        # (DDL may give the same text other origins: a table made again has another OID)
        if kept is not None and kept[1] is origins and kept[0].equals(schema):
            return kept[2]
        columns = with_origins(columns_of(schema, sql), origins)
        if sql in self._names:
            self._columns[sql] = (schema, origins, columns)
        return columns

    def _seen_before(self, sql: str) -> bool:
        """Whether `sql` ran before (remembering that it did now)."""
        if sql in self._seen:
            del self._seen[sql]
            return True
        self._seen[sql] = None
        if len(self._seen) > self.capacity:
            self._seen.popitem(last=False)
        return False


def literal(value: Any) -> str:
    """`value` as a DuckDB SQL literal of the type DuckDB gives it as a bound parameter (int:
    INTEGER, BIGINT, UBIGINT or (U)HUGEINT by size; Decimal: DECIMAL of its digits, DOUBLE beyond
    38; str: VARCHAR; ...). ValueError for a value without one."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        if -2**31 < value < 2**31:
            # DuckDB reads a bare number in this range as an INTEGER value; a cast costs an
            # EXECUTE a fifth of its time. (-2**31 is minus a BIGINT literal: cast.)
            return f"{value:d}"
        return f"CAST({value} AS {_integer_type(value)})"
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, decimal.Decimal):
        return _decimal_literal(value)
    if isinstance(value, str):
        if "\0" in value:
            raise ValueError("NUL in a string")
        return "CAST('" + value.replace("'", "''") + "' AS VARCHAR)"
    if isinstance(value, bytes | bytearray | memoryview):
        text = "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x5C, 0x27) else f"\\x{b:02X}"
                       for b in bytes(value))
        return f"CAST('{text}' AS BLOB)"
    if isinstance(value, dt.datetime):
        kind = "TIMESTAMPTZ" if value.tzinfo is not None else "TIMESTAMP"
        return f"CAST('{value.isoformat(sep=' ')}' AS {kind})"
    if isinstance(value, dt.date):
        return f"CAST('{value.isoformat()}' AS DATE)"
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            raise ValueError("time with a time zone")
        return f"CAST('{value.isoformat()}' AS TIME)"
    if isinstance(value, dt.timedelta):
        micros = value.seconds * 1_000_000 + value.microseconds
        return (f"(to_days(CAST({value.days} AS INTEGER)) + "
                f"to_microseconds(CAST({micros} AS BIGINT)))")
    if isinstance(value, uuid.UUID):
        return f"CAST('{value}' AS UUID)"
    if isinstance(value, list) and value and all(
            v is None or type(v) is type(next(x for x in value if x is not None)) for v in value):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise ValueError(f"no literal for {type(value).__name__}")


def _integer_type(value: int) -> str:
    if -2**31 <= value < 2**31:
        return "INTEGER"
    if -2**63 <= value < 2**63:
        return "BIGINT"
    if 0 <= value < 2**64:
        return "UBIGINT"
    if -2**127 <= value < 2**127:
        return "HUGEINT"
    if 0 <= value < 2**128:
        return "UHUGEINT"
    raise ValueError("integer too large")


def _decimal_literal(value: decimal.Decimal) -> str:
    if not value.is_finite():
        return f"CAST('{'nan' if value.is_nan() else ('-inf' if value < 0 else 'inf')}' AS FLOAT)"
    _, digits, exponent = value.as_tuple()
    exponent = int(exponent)
    scale = max(0, -exponent)
    # DuckDB's typing of a Decimal: its digits, one more when they do not fill the scale.
    precision = len(digits) + max(0, exponent) if len(digits) >= scale else scale + 1
    if precision > 38:
        return f"CAST('{value}' AS DOUBLE)"
    return f"CAST('{value:f}' AS DECIMAL({precision}, {scale}))"


def run(
    con: duckdb.DuckDBPyConnection,
    statement: Statement,
    params: Sequence[Any] = (),
    sql: str | None = None,
    *,
    stream: bool = False,
    prepared: PreparedStatements | None = None,
) -> Result:
    """Execute on DuckDB. `sql` replaces the statement text (a rewritten AI statement, whose
    parameters are already bound). With `stream`, a SELECT's rows stay in DuckDB until read
    (`Rows.live`); everything else is read out before this returns. With `prepared`, a statement
    runs through DuckDB's prepared statements (`PreparedStatements`). The result's columns
    carry the statement's origins when it runs its own text (`with_origins`)."""
    streamed = stream and statement.kind is Kind.SELECT
    given = sql or statement.sql  # what the result's columns are named from
    text, values = given, list(params) or None
    executes = False  # runs as EXECUTE of a statement `prepared` holds
    if prepared is not None and sql is None and statement.kind in prepared.KINDS:
        execute = prepared.execute_text(con, text, values or ())
        if execute is not None:
            text, values, executes = execute, None, True
    try:
        result = _seam.submit(con, text, values, "stream" if streamed else "arrow", BATCH_ROWS)
        if streamed:
            reader = result.arrow_reader()
            schema = reader.schema
            origins = None if sql is not None else statement.origins
            columns = (prepared.columns_of(statement.sql, schema, origins) if executes and prepared
                       else with_origins(columns_of(schema, given), origins))
            return Result("SELECT", columns, Rows.streaming(reader, schema))
        table = result.arrow_table() if result.description else None
    except duckdb.Error as exc:
        raise _enum_named(con, _constraint_named(con, statement.sql, from_duckdb(exc),
                                                 str(exc))) from None
    if result.return_type == "query_result" and statement.returns_rows and table is not None:
        columns = columns_of(table.schema, given)
        return Result(_tag(statement, table.num_rows), columns if sql is not None else (
            with_origins(columns, statement.origins)), Rows.of(table))
    changed = result.return_type == "changed_rows" and table is not None and table.num_rows
    return Result(_tag(statement, int(table.column(0)[0].as_py()) if changed else 0), None, None)


_ADDED_TO = re.compile(rf"^\s*ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<table>"
                       rf"{commands.IDENTIFIER}(?:\s*\.\s*{commands.IDENTIFIER})*)\s+ADD\b",
                       re.IGNORECASE)
_NULL_IN = re.compile(r'null value in column "(?P<column>[^"]+)" of relation "(?P<table>[^"]+)"')
_KEY_DETAIL = re.compile(r"^Key \((?P<columns>.*)\)=\((?P<key>.*)\)|"
                         r"^Key \((?P<values>.*)\) already exists\.$")


def _constraint_named(con: duckdb.DuckDBPyConnection, sql: str, error: SqlError,
                      duckdb_text: str) -> SqlError:
    """A unique or check violation of the table `sql` writes, worded as PostgreSQL words it, where
    DuckDB's message (`duckdb_text`) names neither the constraint nor the table (`errors`): a
    unique violation names its constraint (`t_pkey`, DuckDB's `t_v_key` of a UNIQUE column: the
    one over the key's columns, or the table's one unique constraint of as many columns as the
    key has values) and the key's columns; a check violation names the CHECK of the expression
    DuckDB's message shows; a column ALTER TABLE ... ADD finds there names the table, and one
    it adds NOT NULL over rows says they "contain null values". `error` unchanged otherwise.
    (Foreign keys are Heron's: `foreign_keys` words their violations.)"""
    if error.sqlstate is SqlState.CHECK_VIOLATION:
        return _check_named(con, error, duckdb_text)
    if error.sqlstate is SqlState.DUPLICATE_COLUMN and (
            added := _ADDED_TO.match(sql)) is not None:  # ALTER TABLE ... ADD COLUMN
        name = commands.identifier(re.findall(commands.IDENTIFIER, added["table"])[-1])
        return dataclasses.replace(error, message=error.message.replace(
            " already exists", f' of relation "{name}" already exists', 1))
    if error.sqlstate is SqlState.NOT_NULL_VIOLATION and _ADDED_TO.match(sql) and (
            null := _NULL_IN.match(error.message)) is not None:  # a NOT NULL column added
        return dataclasses.replace(error, message=f'column "{null["column"]}" of relation '
                                                  f'"{null["table"]}" contains null values')
    detail = _KEY_DETAIL.match(error.detail or "")
    if error.sqlstate is not SqlState.UNIQUE_VIOLATION or detail is None:
        return error
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, TokenError, ValueError):
        return error
    target = tree.this if isinstance(tree, exp.Insert | exp.Update | exp.Delete) else None
    target = target.this if isinstance(target, exp.Schema) else target
    if not isinstance(target, exp.Table):
        return error
    try:  # (on a cursor of its own: the error may have aborted the statement's transaction)
        with con.cursor() as cursor:
            return _unique_named(cursor, target, detail, error)
    except duckdb.Error:
        return error


def _enum_named(con: duckdb.DuckDBPyConnection, error: SqlError) -> SqlError:
    """A text that is no label of an enum, worded as PostgreSQL words it: DuckDB's message
    names the enum by its labels (`ENUM('sad', 'ok')`), PostgreSQL's by its name."""
    bad = _NOT_A_LABEL.match(error.message) if (
        error.sqlstate is SqlState.INVALID_TEXT_REPRESENTATION) else None
    if bad is None:
        return error
    labels = [label.replace("''", "'") for label in re.findall(r"'((?:[^']|'')*)'",
                                                                bad["labels"])]
    try:  # (on a cursor of its own: the error may have aborted the statement's transaction)
        with con.cursor() as cursor:
            found = cursor.execute(
                "SELECT type_name FROM duckdb_types() WHERE logical_type = 'ENUM' AND "
                "NOT internal AND labels = ?::VARCHAR[] LIMIT 1", [labels]).fetchall()
    except duckdb.Error:
        return error
    name = found[0][0] if found else "anonymous_enum"
    return dataclasses.replace(
        error, message=f'invalid input value for enum {name}: "{bad["value"]}"')


_NOT_A_LABEL = re.compile(r"^Could not convert string '(?P<value>.*)' to ENUM\((?P<labels>.*)\)$",
                          re.DOTALL)
_FAILED_CHECK = re.compile(r'CHECK constraint failed on table "?(?P<table>[^"\s]+)"? with '
                           r"expression (?P<check>CHECK\(.*\))\s*$", re.DOTALL)


def _check_named(con: duckdb.DuckDBPyConnection, error: SqlError, duckdb_text: str
                 ) -> SqlError:
    failed = _FAILED_CHECK.search(duckdb_text)
    if failed is None:
        return error
    try:  # (on a cursor of its own: the error may have aborted the statement's transaction)
        with con.cursor() as cursor:
            names = {name for (name,) in cursor.execute(
                f"SELECT {pg_catalog_relations.constraint_name('c')} "
                f"FROM {foreign_keys.CONSTRAINTS} c "
                f"WHERE table_name = ? AND constraint_text = ? "
                f"AND {pg_catalog_relations.shown_constraint('c')}",
                [failed["table"], failed["check"]]).fetchall()}
    except duckdb.Error:
        return error
    if len(names) != 1:
        return error
    return dataclasses.replace(error, message=f'{error.message} "{names.pop()}"')


def _unique_named(cursor: duckdb.DuckDBPyConnection, target: exp.Table, detail: re.Match[str],
                  error: SqlError) -> SqlError:
    rows = cursor.execute(
        f"SELECT {pg_catalog_relations.constraint_name('c')}, constraint_column_names "
        f"FROM {foreign_keys.CONSTRAINTS} c "
        "WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND table_name = ? "
        "AND (? IS NULL OR schema_name = ?)",
        [target.name, target.db or None, target.db or None]).fetchall()
    if detail["columns"] is not None:
        rows = [row for row in rows if ", ".join(row[1]) == detail["columns"]]
    elif len(rows) > 1:  # the constraints of as many columns as the key has values
        rows = [row for row in rows if len(row[1]) == detail["values"].count(", ") + 1]
    if not rows and detail["columns"] is not None:
        return _unique_index_named(cursor, target, detail, error)
    if len(rows) != 1:
        return error
    name, columns = rows[0]
    found = dataclasses.replace(error, message=f'{error.message} "{name}"')
    if detail["values"] is not None:
        found.detail = f"Key ({', '.join(columns)})=({detail['values']}) already exists."
    return found


# A partial unique index's key as DuckDB's message shows it (`pg_ddl`): the key where the
# predicate holds, else NULL.
_PARTIAL_KEY = re.compile(r"CASE\s+WHEN .*? THEN \((?P<key>.*?)\) ELSE CAST\(NULL AS [^)]*\) END")


def _unique_index_named(cursor: duckdb.DuckDBPyConnection, target: exp.Table,
                        detail: re.Match[str], error: SqlError) -> SqlError:
    """A violation of a unique index (not a constraint) named by the index whose keys the
    message shows; a partial one's keys shown as written (`pg_ddl` made them CASEs)."""
    columns = _PARTIAL_KEY.sub(lambda m: m["key"], detail["columns"])
    shown = [_bare(c) for c in columns.split(", ")]
    for name, sql in cursor.execute(
            "SELECT index_name, sql FROM duckdb_indexes() WHERE is_unique AND table_name = ? "
            "AND (? IS NULL OR schema_name = ?)",
            [target.name, target.db or None, target.db or None]).fetchall():
        try:
            index = sqlglot.parse_one(sql, read="duckdb")
        except (SqlglotError, TokenError, ValueError):
            continue
        keys = [k.this if isinstance(k, exp.Ordered) else k
                for k in index.find(exp.IndexParameters).args.get("columns") or []]
        keys = [k.unnest() for k in keys]
        keys = [k.args["ifs"][0].args["true"] if isinstance(k, exp.Case) and k.args.get("ifs")
                else k for k in keys]
        if [_bare(k.sql(dialect="duckdb")) for k in keys] == shown:
            return dataclasses.replace(error, message=f'{error.message} "{name}"',
                                       detail=f"Key ({columns})=({detail['key']}) already exists.")
    return error


def _bare(key: str) -> str:
    """A key expression's text compared without case, spaces or parentheses."""
    return re.sub(r"[\s()]", "", key).lower()


def bind_columns(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None
                 ) -> tuple[tuple[Column, str], ...]:
    """The result columns of `sql` and their DuckDB type names, by binding it (with `params`'
    values, whose types can decide the columns'). A column whose type depends only on a
    parameter left open is text, as PostgreSQL resolves an unknown type."""
    try:
        signature = _seam.bind(con, sql, values=list(params or ()) or None)
        types = [_seam.parse_type(con, "VARCHAR") if str(t) == "UNKNOWN" else t
                 for t in signature.types]
        schema = _seam.arrow_schema(con, signature.names, types)
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    # DuckDB's Arrow schema makes names unique (id, id_1); a result may repeat one
    schema = pa.schema([f.with_name(n) for f, n in zip(schema, signature.names, strict=True)])
    return tuple((column, str(duckdb_type)) for column, duckdb_type
                 in zip(columns_of(schema, sql), types, strict=True))


_BATCH = "__heron_insert_batch"


@functools.lru_cache(maxsize=256)
def _insert_select(sql: str) -> str | None:
    """`INSERT INTO t [(cols)] VALUES (<expressions of $1..$n>)` as an INSERT ... SELECT of the
    same expressions over a table of parameter rows (columns p1..pn), or None for any other
    shape (RETURNING and ON CONFLICT answer per row, several VALUES rows, parameters outside)."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Insert) or tree.args.get("returning") or tree.args.get(
            "conflict") or not isinstance(tree.expression, exp.Values):
        return None
    rows = tree.expression.expressions
    if len(rows) != 1 or not isinstance(rows[0], exp.Tuple):
        return None
    row = rows[0]
    parameters = list(tree.find_all(exp.Parameter, exp.Placeholder))
    if not parameters:
        return None
    for parameter in parameters:
        if parameter.find_ancestor(exp.Values) is None:
            return None  # a parameter outside the row (in a WITH, say)
        number = parameter.name if isinstance(parameter, exp.Parameter) else parameter.this
        if not str(number).isdigit():
            return None
        parameter.replace(exp.column(f"p{number}"))
    tree.set("expression", exp.select(*row.expressions).from_(_BATCH))
    return tree.sql(dialect="duckdb")


def insert_many(con: duckdb.DuckDBPyConnection, statement: Statement,
                rows: Sequence[Sequence[Any]]) -> bool:
    """Run an INSERT of one VALUES row once per parameter row, as one DuckDB statement over an
    Arrow table of the rows (a pipelining client's batch). False, with nothing run, when the
    statement's shape or the values' types do not allow it; errors are `SqlError`s."""
    sql = _insert_select(statement.sql)
    if sql is None or not rows:
        return False
    try:
        table = pa.table({f"p{i + 1}": pa.array([row[i] for row in rows])
                          for i in range(statement.param_count)})
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False  # values Arrow cannot hold in one column: run them one by one
    inserted = insert_rows(con, sql, _BATCH, table)
    if inserted != len(rows):
        raise SqlError(SqlState.INTERNAL_ERROR,
                       f"a batch of {len(rows)} INSERTs inserted {inserted} rows")
    return True


@contextlib.contextmanager
def atomic(con: duckdb.DuckDBPyConnection, *, opened: bool | None = None) -> Iterator[None]:
    """The statements run within as one: in the transaction open on `con` (the session's, which
    a failure aborts), else in one begun here, committed at the end or rolled back on an error.
    (A BEGIN inside an open transaction would fail, and abort it.) `opened`: whether one is
    open, where the caller knows (else DuckDB is asked: two queries)."""
    if in_transaction(con) if opened is None else opened:
        yield
        return
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def in_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a transaction is open on `con`: two statements share a transaction id only
    inside one (outside, each gets its own)."""
    first, second = (con.execute("SELECT current_transaction_id()").fetchall()[0][0]
                     for _ in range(2))
    return first == second


def insert_rows(con: duckdb.DuckDBPyConnection, sql: str, name: str,
                rows: pa.RecordBatch | pa.Table) -> int:
    """Run an INSERT that reads `rows` under `name`; the number of rows it inserted."""
    con.register(name, rows)
    try:
        result = _seam.submit(con, sql, None, "arrow")
        return int(result.arrow_table().column(0)[0].as_py())
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses even this
            con.unregister(name)


def column_defaults(con: duckdb.DuckDBPyConnection, table: str) -> tuple[str, ...]:
    rows = con.execute("SELECT column_default FROM duckdb_columns() WHERE lower(table_name) = "
                       "lower(?) AND column_default IS NOT NULL", [table]).fetchall()
    return tuple(row[0] for row in rows)


# DuckDB names an unaliased call after its whole text ("count_star()", "lower(body)");
# PostgreSQL names it after the function ("count", "lower"), which is what clients display.
# Names DuckDB quotes when it prints them (`"version"()`) lose their quotes.
_CALL_NAME = re.compile(r'^"?(?P<function>[A-Za-z_]\w*)"?\(.*\)$', re.DOTALL)
_RENAMED_FUNCTIONS = {"count_star": "count"}
# DuckDB names an unaliased constant or operator expression after its text ("'a'", "NULL",
# "(a + 1)"); PostgreSQL names it "?column?" (and a boolean constant "bool"). A number is
# named so too, but only where the statement's select list has the number itself
# (`_bare_numbers`): a column may be named "1" (a PIVOT's, a CSV header's).
_UNNAMED = re.compile(r"^(?:'(?:[^']|'')*'|NULL|\(.*\))$", re.DOTALL)
_NUMBER = re.compile(r"^[0-9][0-9.eE+-]*$")


def with_origins(columns: tuple[Column, ...], origins: tuple[Origin, ...] | None
                 ) -> tuple[Column, ...]:
    """`columns` with the origins a statement's text gives them (as they are when it gives
    none, or not as many: the text did not say what DuckDB ran)."""
    if origins is None or len(origins) != len(columns):
        return columns
    return tuple(Column(c.name if o.name is None else o.name, c.type, o)
                 for c, o in zip(columns, origins, strict=True))


def columns_of(schema: pa.Schema, sql: str | None = None) -> tuple[Column, ...]:
    """Result columns named as PostgreSQL would name them (`sql`: the statement that gave
    them, for the names of bare numbers)."""
    names = [_pg_name(field.name) for field in schema]
    if sql is not None and any(_NUMBER.match(name) for name in names):
        for i in _bare_numbers(sql):
            if i < len(names):
                names[i] = "?column?"
    return tuple(Column(name, field.type) for name, field in zip(names, schema, strict=True))


@functools.lru_cache(maxsize=1024)
def _bare_numbers(sql: str) -> frozenset[int]:
    """The positions of `sql`'s result columns that its select list (the first of a set
    operation's) gives as unaliased number literals; none where a star comes first."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, TokenError, ValueError):
        return frozenset()
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    if not isinstance(tree, exp.Select):
        return frozenset()
    found = set()
    for i, item in enumerate(tree.expressions):
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                          and isinstance(item.this, exp.Star)):
            break  # the columns after it are not the list's
        if isinstance(item, exp.Literal) and item.is_number:
            found.add(i)
    return frozenset(found)


@functools.lru_cache(maxsize=4096)
def _pg_name(name: str) -> str:
    if _UNNAMED.match(name):
        return "?column?"
    if name in ("true", "false"):
        return "bool"
    m = _CALL_NAME.match(name)
    if m is None:
        return name
    function = m["function"].lower()
    return _RENAMED_FUNCTIONS.get(function, function)


def _tag(statement: Statement, n: int) -> str:
    """PostgreSQL's command tag; `n` counts the rows returned, or those DuckDB says it changed."""
    kind = statement.kind
    if kind is Kind.INSERT:
        return f"INSERT 0 {n}"
    if kind in {Kind.UPDATE, Kind.DELETE, Kind.MERGE}:
        return f"{kind.name} {n}"
    if statement.returns_rows:
        return f"SELECT {n}"
    if kind is Kind.CREATE and statement.verb == "CREATE TABLE" and _has_token(
            statement.sql, TokenType.ALIAS, top_level=True):  # (not a generated column's AS)
        return f"SELECT {n}"  # PostgreSQL tags CREATE TABLE AS with the row count
    if kind is Kind.COPY:
        return f"COPY {n}"
    return statement.verb

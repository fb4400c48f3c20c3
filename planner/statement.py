"""Statements: splitting a query string, deciding what each statement is, running it, tagging it.

Contract: this module is the one place that answers "what kind of statement is this?".
`split(sql)` cuts a query string at top-level semicolons (quotes, dollar quotes, quoted
identifiers and comments respected) and drops empty statements. `classify(con, sql)` decides one
statement's `Kind` without running it — the session commands PostgreSQL clients send (SET, RESET,
SHOW, BEGIN/START, COMMIT/END, ROLLBACK/ABORT, DEALLOCATE) by their syntax, everything else as
DuckDB parses it — and returns a `Statement`, the frozen value that travels from the wire layer to
execution. `run(con, statement, params)` executes it on a DuckDB connection and returns a
`Result`: the rows as an Arrow table (for statements that return rows) and the command tag
PostgreSQL would send ("SELECT 3", "INSERT 0 2", "CREATE TABLE", ...). `describe` reports the
result columns without executing anything that has effects.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.parameters import cast_parameter_types

if TYPE_CHECKING:
    from heron.planner.logical import AiPlan, OperatorWork

_TOKENIZER = Postgres().tokenizer_class


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
    COPY = "copy"
    BEGIN = "begin"  # BEGIN, START TRANSACTION: the session answers
    COMMIT = "commit"  # COMMIT, END: the session answers
    ROLLBACK = "rollback"  # ROLLBACK, ABORT: the session answers
    TRANSACTION = "transaction"  # other transaction control, for DuckDB
    SET = "set"  # the session answers the settings it knows, DuckDB the others
    RESET = "reset"
    SHOW = "show"
    DEALLOCATE = "deallocate"  # protocol-level prepared statements: the connection answers
    ROLE = "role"  # CREATE/ALTER/DROP ROLE, GRANT/REVOKE: the session answers (role_statements)
    OTHER = "other"  # the rest (DDL, ...): tagged with its leading keywords


@dataclass(frozen=True, slots=True)
class SessionCommand:
    """The operand of SET/RESET/SHOW (a setting) or DEALLOCATE (a statement name)."""

    name: str  # as written (case kept); DEALLOCATE: folded unless quoted, "" for ALL
    value: str | None = None  # SET: the value, quotes removed; None for DEFAULT


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: pa.DataType


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
    command: SessionCommand | None = None
    ai: AiPlan | None = None


@dataclass(frozen=True, slots=True)
class Result:
    command_tag: str
    columns: tuple[Column, ...] | None  # None: the statement returns no rows
    table: pa.Table | None
    notices: tuple[str, ...] = ()  # sent to the client as NOTICE messages
    work: tuple[OperatorWork, ...] = ()  # the AI work this statement did, per operator


def split(sql: str) -> list[str]:
    """The statements of a query string, in order, without their semicolons."""
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

_SET = re.compile(
    r"^\s*SET\s+(?:SESSION\s+|LOCAL\s+)?(?:(?P<tz>TIME\s+ZONE)\s+(?P<tzvalue>.+?)|"
    r"(?P<name>[\w.]+)\s*(?:=|\s+TO\s+)\s*(?P<value>.+?))\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_RESET = re.compile(r"^\s*RESET\s+(?P<name>[\w.]+)\s*;?\s*$", re.IGNORECASE)
_SHOW = re.compile(r"^\s*SHOW\s+(?P<name>[\w.]+(?:\s+[\w.]+)*)\s*;?\s*$", re.IGNORECASE)
_TRANSACTION_VERBS = re.compile(
    r"^\s*(?P<verb>BEGIN|START|COMMIT|END|ROLLBACK|ABORT)\b(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL)
_TRANSACTION_KINDS = {"BEGIN": Kind.BEGIN, "START": Kind.BEGIN, "COMMIT": Kind.COMMIT,
                      "END": Kind.COMMIT, "ROLLBACK": Kind.ROLLBACK, "ABORT": Kind.ROLLBACK}
_DEALLOCATE = re.compile(r'^\s*DEALLOCATE\s+(?:PREPARE\s+)?(?:(?P<quoted>")?(?P<name>[^"\s;]+)"?)'
                         r"\s*;?\s*$", re.IGNORECASE)

_ROLE = re.compile(r"^\s*(?:(?P<verb>CREATE|ALTER|DROP)\s+(?:ROLE|USER)\b|"
                   r"(?P<grant>GRANT|REVOKE)\b)", re.IGNORECASE)

_VERB = re.compile(r"\s*(\w+)" + r"(?:\s+(\w+))?" * 4)
_DUCKDB_KINDS = {
    "SELECT": Kind.SELECT, "RELATION": Kind.SELECT, "EXPLAIN": Kind.UTILITY_ROWS,
    "PRAGMA": Kind.UTILITY_ROWS, "CALL": Kind.UTILITY_ROWS, "INSERT": Kind.INSERT,
    "UPDATE": Kind.UPDATE, "DELETE": Kind.DELETE, "MERGE_INTO": Kind.MERGE, "CREATE": Kind.CREATE,
    "COPY": Kind.COPY, "TRANSACTION": Kind.TRANSACTION,
}
_DML = {Kind.INSERT, Kind.UPDATE, Kind.DELETE, Kind.MERGE}
_TWO_WORD_VERBS = {"CREATE", "DROP", "ALTER"}
_CREATE_MODIFIERS = {"OR", "REPLACE", "TEMP", "TEMPORARY", "UNIQUE", "UNLOGGED", "PERSISTENT"}


def classify(con: duckdb.DuckDBPyConnection, sql: str) -> Statement:
    """What `sql` (one statement) is; nothing runs."""
    if not split(sql):
        return Statement(sql, Kind.EMPTY)
    if m := _TRANSACTION_VERBS.match(sql):
        kind = _TRANSACTION_KINDS[m["verb"].upper()]
        # ROLLBACK TO SAVEPOINT is DuckDB's to accept or refuse.
        if not (kind is Kind.ROLLBACK and re.match(r"\s*TO\b", m["rest"], re.IGNORECASE)):
            return Statement(sql, kind, verb=m["verb"].upper())
    if m := _DEALLOCATE.match(sql):
        name = m["name"]
        if name.upper() == "ALL" and not m["quoted"]:
            name = ""
        elif not m["quoted"]:
            name = name.lower()
        return Statement(sql, Kind.DEALLOCATE, verb="DEALLOCATE", command=SessionCommand(name))
    if m := _ROLE.match(sql):  # DuckDB has no roles: none of these parse there
        verb = f"{m['verb'].upper()} ROLE" if m["verb"] else m["grant"].upper()
        return Statement(sql, Kind.ROLE, verb=verb)
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
    count = len(parsed[0].named_parameters)
    casts = cast_parameter_types(sql)
    return Statement(sql, kind, _verb(sql), count, tuple(casts.get(i + 1, 0) for i in range(count)),
                     returns_rows, bindable=duck_type in {"SELECT", "RELATION"},
                     command=session[1] if session else None)


def _session_command(sql: str) -> tuple[Kind, SessionCommand] | None:
    if m := _SET.match(sql):
        if m["tz"]:
            return Kind.SET, SessionCommand("TimeZone", _unquote(m["tzvalue"]))
        return Kind.SET, SessionCommand(m["name"], _unquote(m["value"]))
    if m := _RESET.match(sql):
        return Kind.RESET, SessionCommand(m["name"])
    if m := _SHOW.match(sql):
        return Kind.SHOW, SessionCommand(m["name"])
    return None


_LIST_ITEM = re.compile(r"\s*('(?:[^']|'')*'|[^,]+)\s*,?")  # one item of a SET value list


def _unquote(value: str) -> str | None:
    """A SET value without its quotes; None for DEFAULT."""
    value = value.strip()
    if value.upper() == "DEFAULT":
        return None
    parts = [p.strip() for p in _LIST_ITEM.findall(value)]
    return ", ".join(p[1:-1].replace("''", "'") if len(p) >= 2 and p[0] == p[-1] == "'" else p
                     for p in parts if p.strip())


def _verb(sql: str) -> str:
    words = [w.upper() for w in (_VERB.match(sql) or _VERB.match("_")).groups() if w]
    if not words:
        return ""
    if words[0] in _TWO_WORD_VERBS:
        rest = [w for w in words[1:] if w not in _CREATE_MODIFIERS]
        return f"{words[0]} {rest[0]}" if rest else words[0]
    return words[0]


def _has_token(sql: str, token_type: TokenType) -> bool:
    try:
        tokens = _TOKENIZER().tokenize(sql)
    except TokenError:
        return False
    return any(t.token_type == token_type for t in tokens)


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
    if params is None:
        params = [None] * statement.param_count
    try:
        # DESCRIBE binds without evaluating anything (a LIMIT 0 query would still run volatile
        # functions such as nextval); typed NULLs then give DuckDB's own Arrow types.
        text = sql or statement.sql
        described = con.execute(f"DESCRIBE {text}", list(params) or None).fetchall()
        typed_nulls = ", ".join(f'CAST(NULL AS {type_}) AS "{name.replace(chr(34), chr(34) * 2)}"'
                                for name, type_, *_ in described)
        schema = con.sql(f"SELECT {typed_nulls} LIMIT 0").to_arrow_table().schema
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    return columns_of(schema)


def run(
    con: duckdb.DuckDBPyConnection,
    statement: Statement,
    params: Sequence[Any] = (),
    sql: str | None = None,
) -> Result:
    """Execute on DuckDB. `sql` replaces the statement text (a rewritten AI statement, whose
    parameters are already bound)."""
    try:
        relation = con.sql(sql or statement.sql, params=list(params) or None)
        table = relation.to_arrow_table() if relation is not None else None
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    if statement.returns_rows and table is not None:
        return Result(_tag(statement, table.num_rows), columns_of(table.schema), table)
    return Result(_tag(statement, _count(table)), None, None)


# DuckDB names an unaliased call after its whole text ("count_star()", "lower(body)");
# PostgreSQL names it after the function ("count", "lower"), which is what clients display.
# Names DuckDB quotes when it prints them (`"version"()`) lose their quotes.
_CALL_NAME = re.compile(r'^"?(?P<function>[A-Za-z_]\w*)"?\(.*\)$', re.DOTALL)
_RENAMED_FUNCTIONS = {"count_star": "count"}
# DuckDB names an unaliased constant or operator expression after its text ("'a'", "NULL",
# "(a + 1)"); PostgreSQL names it "?column?" (and a boolean constant "bool"). A number keeps
# its text: a column may be named so (a PIVOT's, a CSV header's) and cannot be told from it.
_UNNAMED = re.compile(r"^(?:'(?:[^']|'')*'|NULL|\(.*\))$", re.DOTALL)


def columns_of(schema: pa.Schema) -> tuple[Column, ...]:
    """Result columns named as PostgreSQL would name them."""
    return tuple(Column(_pg_name(field.name), field.type) for field in schema)


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


def _count(table: pa.Table | None) -> int:
    """The row count DuckDB reports for a statement without rows (0 when it reports none)."""
    if table is None or table.num_columns != 1 or table.schema.names[0] != "Count":
        return 0
    return int(table.column(0)[0].as_py()) if table.num_rows else 0


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
            statement.sql, TokenType.ALIAS):
        return f"SELECT {n}"  # PostgreSQL tags CREATE TABLE AS with the row count
    if kind is Kind.COPY:
        return f"COPY {n}"
    return statement.verb

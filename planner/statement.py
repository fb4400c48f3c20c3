"""Statements: splitting a query string, classifying each statement, running it, tagging the result.

Contract: `split(sql)` cuts a query string at top-level semicolons (quotes, dollar quotes, quoted
identifiers and comments respected) and drops empty statements. `prepare(sql)` classifies one
statement without running it. `run(con, prepared, params)` executes it on a DuckDB connection and
returns a `Result`: the rows as an Arrow table (for statements that return rows) and the command tag
PostgreSQL would send ("SELECT 3", "INSERT 0 2", "CREATE TABLE", ...). `describe` reports the
result columns without executing anything that has effects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from heron.planner.errors import SqlError, SqlState, from_duckdb

_TOKENIZER = Postgres().tokenizer_class


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: pa.DataType


@dataclass(frozen=True, slots=True)
class Result:
    command_tag: str
    columns: tuple[Column, ...] | None  # None: the statement returns no rows
    table: pa.Table | None
    notices: tuple[str, ...] = ()  # sent to the client as NOTICE messages


@dataclass(frozen=True, slots=True)
class Prepared:
    """One classified statement: what it is, how many parameters it takes, whether it has rows."""

    sql: str
    kind: str  # DuckDB's statement type name: SELECT, INSERT, CREATE, TRANSACTION, ...
    verb: str  # the leading keywords, upper case: "SELECT", "CREATE TABLE", "BEGIN", ...
    param_count: int
    returns_rows: bool


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


_VERB = re.compile(r"\s*(\w+)" + r"(?:\s+(\w+))?" * 4)
_ROW_KINDS = {"SELECT", "EXPLAIN", "PRAGMA", "CALL", "RELATION"}
_TWO_WORD_VERBS = {"CREATE", "DROP", "ALTER"}
_CREATE_MODIFIERS = {"OR", "REPLACE", "TEMP", "TEMPORARY", "UNIQUE", "UNLOGGED", "PERSISTENT"}


def prepare(con: duckdb.DuckDBPyConnection, sql: str) -> Prepared:
    try:
        parsed = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    if len(parsed) != 1:
        raise SqlError(SqlState.SYNTAX_ERROR,
                       "cannot insert multiple commands into a prepared statement")
    statement = parsed[0]
    kind = statement.type.name
    verb = _verb(sql)
    dml = kind in {"INSERT", "UPDATE", "DELETE", "MERGE_INTO"}
    returns_rows = kind in _ROW_KINDS or (dml and _has_token(sql, TokenType.RETURNING))
    return Prepared(sql, kind, verb, len(statement.named_parameters), returns_rows)


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


def describe(
    con: duckdb.DuckDBPyConnection,
    prepared: Prepared,
    sql: str | None = None,
    params: Sequence[Any] | None = None,
) -> tuple[Column, ...] | None:
    """Result columns of a row-returning statement, found by binding (not running) it, with the
    given parameter values (their types can decide the columns' types) or NULLs."""
    if not prepared.returns_rows:
        return None
    if prepared.kind not in {"SELECT", "RELATION"}:
        return None  # known only by running it; the server describes the portal after Execute
    if params is None:
        params = [None] * prepared.param_count
    try:
        # DESCRIBE binds without evaluating anything (a LIMIT 0 query would still run volatile
        # functions such as nextval); typed NULLs then give DuckDB's own Arrow types.
        described = con.execute(f"DESCRIBE {sql or prepared.sql}", list(params) or None).fetchall()
        typed_nulls = ", ".join(f'CAST(NULL AS {type_}) AS "{name.replace(chr(34), chr(34) * 2)}"'
                                for name, type_, *_ in described)
        schema = con.sql(f"SELECT {typed_nulls} LIMIT 0").to_arrow_table().schema
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    return columns_of(schema)


def run(
    con: duckdb.DuckDBPyConnection,
    prepared: Prepared,
    params: Sequence[Any] = (),
    sql: str | None = None,
) -> Result:
    """Execute on DuckDB. `sql` replaces the statement text (a rewritten AI statement)."""
    if len(params) != prepared.param_count:
        raise SqlError(
            SqlState.PROTOCOL_VIOLATION,
            f"bind message supplies {len(params)} parameters, "
            f"but prepared statement requires {prepared.param_count}",
        )
    try:
        relation = con.sql(sql or prepared.sql, params=list(params) or None)
        table = relation.to_arrow_table() if relation is not None else None
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    if prepared.returns_rows and table is not None:
        return Result(_tag(prepared, table.num_rows), columns_of(table.schema), table)
    return Result(_tag(prepared, _count(table)), None, None)


# DuckDB names an unaliased call after its whole text ("count_star()", "lower(body)");
# PostgreSQL names it after the function ("count", "lower"), which is what clients display.
# Names DuckDB quotes when it prints them (`"version"()`) lose their quotes.
_CALL_NAME = re.compile(r'^"?(?P<function>[A-Za-z_]\w*)"?\(.*\)$', re.DOTALL)
_RENAMED_FUNCTIONS = {"count_star": "count"}


def columns_of(schema: pa.Schema) -> tuple[Column, ...]:
    """Result columns named as PostgreSQL would name them."""
    return tuple(Column(_pg_name(field.name), field.type) for field in schema)


def _pg_name(name: str) -> str:
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


def _tag(prepared: Prepared, n: int) -> str:
    """PostgreSQL's command tag; `n` counts the rows returned, or those DuckDB says it changed."""
    if prepared.kind == "INSERT":
        return f"INSERT 0 {n}"
    if prepared.kind in {"UPDATE", "DELETE"}:
        return f"{prepared.kind} {n}"
    if prepared.kind == "MERGE_INTO":
        return f"MERGE {n}"
    if prepared.returns_rows:
        return f"SELECT {n}"
    if prepared.verb == "CREATE TABLE" and _has_token(prepared.sql, TokenType.ALIAS):
        return f"SELECT {n}"  # PostgreSQL tags CREATE TABLE AS with the row count
    if prepared.kind == "TRANSACTION":
        return _transaction_tag(prepared.verb)
    if prepared.kind == "COPY":
        return f"COPY {n}"
    return prepared.verb


def _transaction_tag(verb: str) -> str:
    return {"BEGIN": "BEGIN", "START": "START TRANSACTION", "COMMIT": "COMMIT", "END": "COMMIT",
            "ROLLBACK": "ROLLBACK", "ABORT": "ROLLBACK"}.get(verb, verb)

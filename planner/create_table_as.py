"""CREATE TABLE ... AS (and SELECT ... INTO, which `pg_semantics` reads as one): the new table's
columns keep the types their query's columns declare.

PostgreSQL gives a CREATE TABLE AS column the type of its query's column, typmod included: one
read unchanged from a varchar(3) column (or cast to varchar(3)) is varchar(3), from a char(3)
one character(3), a jsonb value jsonb. DuckDB's own CREATE TABLE AS types a column by its values
only (VARCHAR, JSON), so Heron creates such a table itself: with the columns DuckDB's binder
gives the query, those whose origin (`column_origins`, from the client's text) declares
varchar(n), char(n) or jsonb defined as `pg_semantics.column_definition` defines them in CREATE
TABLE (the length CHECK, the jsonb mark), then fills it with the query's rows.

Contract:
- `parse(sql)`: a CREATE TABLE ... AS query (DuckDB's text, as `pg_semantics.rewrite` prints
  it) as a `CreateAs`; None for any other statement.
- `run(con, create, stmt)` runs it (the classified `stmt`, whose `origins` are its query's
  columns', None when unknown) as PostgreSQL would: with no declared column, DuckDB's own
  CREATE TABLE AS; else the table created with them and filled, in one transaction. Tagged as
  PostgreSQL tags it: `SELECT n` with the rows stored, `CREATE TABLE AS` for WITH NO DATA and
  for IF NOT EXISTS over an existing relation (skipped with a notice). A column list longer
  than the query's columns is 42601. A statement calling AI functions runs as the executor
  rewrites it, through DuckDB's CREATE TABLE AS (its columns typed by their values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
import sqlglot
from duckdb import _seam
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError, TokenError
from sqlglot.tokens import TokenType

from heron.planner import dialect, pg_semantics, statement
from heron.planner.column_origins import Origin
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.pg_types import BPCHAR, JSONB, VARCHAR
from heron.planner.statement import Result

# Cheap test before parsing.
_MAY_BE = re.compile(r"^\s*CREATE\b.*\bTABLE\b.*\bAS\b", re.IGNORECASE | re.DOTALL)
_WITH_DATA = re.compile(r"\s+WITH\s+(?:NO\s+)?DATA\s*;?\s*$", re.IGNORECASE)
_TAG = "CREATE TABLE AS"


@dataclass(frozen=True)
class CreateAs:
    """One CREATE TABLE ... AS: its table and options, and its query's text."""

    sql: str  # the whole statement, as DuckDB runs it
    table: exp.Table
    names: tuple[str, ...]  # the column list's (empty: the query's own names)
    query: str
    temporary: bool
    replace: bool
    if_not_exists: bool
    with_data: bool


def parse(sql: str) -> CreateAs | None:
    """`sql` as a CREATE TABLE ... AS, or None."""
    if _MAY_BE.match(sql) is None:
        return None
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        return None
    query = _query_text(sql)
    if not isinstance(tree, exp.Create) or (tree.kind or "").upper() != "TABLE" or (
            query is None or not isinstance(tree.expression, exp.Query | exp.Subquery)):
        return None
    target = tree.this
    names = tuple(c.name for c in target.expressions) if isinstance(target, exp.Schema) else ()
    table = target.this if isinstance(target, exp.Schema) else target
    properties = tree.args.get("properties")
    found = properties.expressions if properties is not None else []
    no_data = any(isinstance(p, exp.WithDataProperty) and p.args.get("no") for p in found)
    return CreateAs(sql, table, names, query,
                    any(isinstance(p, exp.TemporaryProperty) for p in found),
                    bool(tree.args.get("replace")), bool(tree.args.get("exists")), not no_data)


def run(con: duckdb.DuckDBPyConnection, create: CreateAs, stmt: statement.Statement) -> Result:
    """Run `create`, the statement `stmt` (see the module docstring): `stmt.origins` are its
    query's columns' (None: unknown)."""
    origins = stmt.origins
    if create.if_not_exists and _exists(con, create.table):
        return Result(_TAG, None, None, notices=(
            f'relation "{create.table.name}" already exists, skipping',))
    columns = statement.bind_columns(con, create.query)
    if len(create.names) > len(columns):
        raise SqlError(SqlState.SYNTAX_ERROR, "too many column names were specified")
    declared = [_declared(duckdb_type, origin) for (_, duckdb_type), origin in zip(
        columns, origins or (), strict=False)] if origins is not None and len(origins) == len(
        columns) else []
    if not any(declared):
        result = statement.run(con, stmt)
        return result if create.with_data else Result(_TAG, None, None)
    names = [*create.names, *(c.name for c, _ in columns[len(create.names):])]
    definitions = [
        pg_semantics.column_definition(exp.ColumnDef(
            this=exp.to_identifier(name, quoted=True), kind=kind)).sql(dialect="duckdb")
        if kind is not None else f"{dialect.quoted(name)} {duckdb_type}"
        for name, (_, duckdb_type), kind in zip(names, columns, declared, strict=True)]
    head = "CREATE OR REPLACE" if create.replace else "CREATE"
    temporary = " TEMPORARY" if create.temporary else ""
    table = create.table.sql(dialect="duckdb")
    try:
        with statement.atomic(con):
            con.execute(f"{head}{temporary} TABLE {table} ({', '.join(definitions)})")
            if not create.with_data:
                return Result(_TAG, None, None)
            inserted = con.execute(f"INSERT INTO {table} {create.query}").fetchall()[0][0]
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    return Result(f"SELECT {inserted}", None, None)


def _declared(duckdb_type: str, origin: Origin) -> exp.DataType | None:
    """The PostgreSQL type a column of `duckdb_type` values is created as when its origin
    declares more (varchar(n) or char(n) over text, jsonb over JSON); None when the values'
    type says it all."""
    if origin.type_oid == VARCHAR.oid and origin.typmod >= 4 and duckdb_type == "VARCHAR":
        return exp.DataType.build(f"VARCHAR({origin.typmod - 4})")
    if origin.type_oid == BPCHAR.oid and origin.typmod >= 4 and duckdb_type == "VARCHAR":
        return exp.DataType.build(f"CHAR({origin.typmod - 4})")
    if origin.type_oid == JSONB.oid and duckdb_type == "JSON":
        return exp.DataType.build("JSONB")
    return None


def _query_text(sql: str) -> str | None:
    """The query of a CREATE TABLE ... AS as written: after its first AS outside parentheses,
    without a trailing WITH [NO] DATA (so that it runs as the client wrote it)."""
    depth = 0
    try:
        tokens = Postgres().tokenizer_class().tokenize(sql)
    except TokenError:
        return None
    for token in tokens:
        if token.token_type is TokenType.L_PAREN:
            depth += 1
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1
        elif token.token_type is TokenType.ALIAS and depth == 0:
            return _WITH_DATA.sub("", sql[token.end + 1:]).strip().rstrip(";")
    return None


def _exists(con: duckdb.DuckDBPyConnection, table: exp.Table) -> bool:
    return _seam.table_kind(con, tuple(part.name for part in table.parts)) != "none"


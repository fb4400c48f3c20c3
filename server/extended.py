"""The extended query protocol: named statements and portals.

Contract: an `ExtendedQuery` holds one connection's prepared statements and portals and answers
Parse, Bind, Describe, Execute and Close with PostgreSQL's semantics: named and unnamed
statements and portals, parameter types the client leaves open taken from the statement, Describe
without execution (a portal whose columns are known only by running it, such as INSERT ...
RETURNING, runs at Describe and Execute then sends the rows it kept), Execute with a row limit
(PortalSuspended), rows sent with exactly the types promised by an earlier Describe, and portals
dropped when their transaction ends (`end_of_transaction`). DEALLOCATE, SQL's handle on these
statements, is answered here too. Handlers append replies through their `Host` (the connection)
and raise `SqlError`; the connection reports it and discards messages until Sync.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from heron.planner import Column, Kind, Result, SqlError, SqlState, Statement
from heron.planner.errors import bind_count_mismatch
from heron.server import decode, encode, protocol
from heron.server.session import Session, TransactionStatus

T = TypeVar("T")


class Host(Protocol):
    """What the handlers need from their connection."""

    session: Session

    def send(self, message: bytes) -> None: ...

    async def call(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def run_statement(self, statement: Statement, params: Sequence[Any]) -> Result: ...

    async def send_rows(self, table: pa.Table, formats: Sequence[int]) -> None: ...

    def send_parameter_changes(self) -> None: ...


@dataclass
class PreparedStatement:
    statement: Statement
    param_oids: tuple[int, ...]  # the client's, else the type the statement implies, else 0
    columns: tuple[Column, ...] | None = None
    described: bool = False


@dataclass
class Portal:
    prepared: PreparedStatement
    params: list[Any]
    result_formats: tuple[int, ...]
    result: Result | None = None
    sent: int = 0  # rows already returned by earlier Executes
    # The columns the client was told about (Describe of the statement or portal); rows must be
    # sent with exactly these types even when the parameters changed what DuckDB inferred.
    promised: tuple[Column, ...] | None = None


class ExtendedQuery:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.statements: dict[str, PreparedStatement] = {}
        self.portals: dict[str, Portal] = {}

    def end_of_transaction(self) -> None:
        """Portals live until the end of their transaction; outside a transaction block each
        Sync (or simple Query) ends the implicit one."""
        if self.host.session.transaction_status is TransactionStatus.IDLE:
            self.portals.clear()

    def deallocate(self, statement: Statement) -> Result:
        """DEALLOCATE [PREPARE] name|ALL (psycopg sends DEALLOCATE ALL after a failed
        transaction)."""
        assert statement.command is not None
        self.host.session.admit(statement)
        name = statement.command.name
        if not name:
            self.statements.clear()
            return Result("DEALLOCATE ALL", None, None)
        if self.statements.pop(name, None) is None:
            raise SqlError(SqlState.INVALID_SQL_STATEMENT_NAME,
                           f'prepared statement "{name}" does not exist')
        return Result("DEALLOCATE", None, None)

    async def parse(self, message: protocol.Parse) -> None:
        if message.name and message.name in self.statements:
            raise SqlError(SqlState.DUPLICATE_PREPARED_STATEMENT,
                           f'prepared statement "{message.name}" already exists')
        if not message.name:
            self.statements.pop("", None)  # replaced even if this Parse fails
        statement = await self.host.call(self.host.session.prepare, message.sql)
        # Types the client left open (0) are the ones the statement implies.
        given = message.param_oids
        implied = statement.param_types
        oids = tuple(given[i] if i < len(given) and given[i] else
                     (implied[i] if i < len(implied) else 0)
                     for i in range(max(statement.param_count, len(given))))
        self.statements[message.name] = PreparedStatement(statement, oids)
        self.host.send(protocol.parse_complete())

    async def bind(self, message: protocol.Bind) -> None:
        prepared = self.statements.get(message.statement)
        if prepared is None:
            raise SqlError(SqlState.INVALID_SQL_STATEMENT_NAME,
                           f'prepared statement "{message.statement}" does not exist')
        if message.portal and message.portal in self.portals:
            raise SqlError(SqlState.DUPLICATE_CURSOR, f'cursor "{message.portal}" already exists')
        count = len(prepared.param_oids)
        if len(message.params) != count:
            raise bind_count_mismatch(len(message.params), count, message.statement)
        param_formats = _expand_formats(message.param_formats, count)
        if param_formats is None:
            raise SqlError(SqlState.PROTOCOL_VIOLATION,
                           f"bind message has {len(message.param_formats)} parameter "
                           f"formats but {count} parameters")
        for code in (*param_formats, *message.result_formats):
            if code not in (0, 1):
                raise SqlError(SqlState.INVALID_PARAMETER_VALUE, f"unsupported format code: {code}")
        values = [decode.decode_param(data, oid, fmt) for data, oid, fmt
                  in zip(message.params, prepared.param_oids, param_formats, strict=True)]
        # Types beyond those the statement uses (PostgreSQL allows declaring extra ones) are
        # accepted and not bound.
        used = prepared.statement.param_count
        # A client that described the statement decodes rows with those types.
        promised = prepared.columns if prepared.described else None
        self.portals[message.portal] = Portal(prepared, values[:used], message.result_formats,
                                              promised=promised)
        self.host.send(protocol.bind_complete())

    async def describe(self, message: protocol.Describe) -> None:
        if message.kind == "S":
            prepared = self.statements.get(message.name)
            if prepared is None:
                raise SqlError(SqlState.INVALID_SQL_STATEMENT_NAME,
                               f'prepared statement "{message.name}" does not exist')
            self.host.send(protocol.parameter_description(
                [decode.parameter_type(oid) for oid in prepared.param_oids]))
            columns = await self._statement_columns(prepared)
            self.host.send(protocol.no_data() if columns is None else
                       protocol.row_description(encode.fields(columns, [0] * len(columns))))
            return
        portal = self._portal(message.name)
        if not portal.prepared.statement.returns_rows:
            self.host.send(protocol.no_data())
            return
        # The portal's parameter values take part (DuckDB infers a bare $1 from its value), so the
        # row types announced here are the ones Execute produces. Statements whose columns are
        # known only by running (INSERT ... RETURNING, EXPLAIN) run now; Execute sends their rows.
        columns = portal.promised
        if columns is None and portal.result is None:
            columns = await self.host.call(self.host.session.describe, portal.prepared.statement,
                                           portal.params)
        if columns is None:
            if portal.result is None:
                portal.result = await self._run_portal(portal)
            columns = portal.result.columns
        if columns is None:
            self.host.send(protocol.no_data())
            return
        portal.promised = columns
        formats = _result_formats(portal.result_formats, len(columns))
        self.host.send(protocol.row_description(encode.fields(columns, formats)))

    async def _statement_columns(self, prepared: PreparedStatement) -> tuple[Column, ...] | None:
        if not prepared.described:
            if prepared.statement.returns_rows:
                prepared.columns = await self.host.call(self.host.session.describe,
                                                        prepared.statement)
            prepared.described = True
        return prepared.columns

    async def _run_portal(self, portal: Portal) -> Result:
        await self.host.call(self.host.session.begin_implicit)
        try:
            return await self.host.run_statement(portal.prepared.statement, portal.params)
        finally:
            self.host.send_parameter_changes()

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise SqlError(SqlState.INVALID_CURSOR_NAME, f'portal "{name}" does not exist')
        return portal

    async def execute(self, message: protocol.Execute) -> None:
        portal = self._portal(message.portal)
        if portal.prepared.statement.kind is Kind.EMPTY:
            self.host.send(protocol.empty_query_response())
            return
        if portal.result is None:
            portal.result = await self._run_portal(portal)
        result = portal.result
        if result.columns is None or result.table is None:
            self.host.send(protocol.command_complete(result.command_tag))
            return
        table = result.table
        if portal.promised is not None:
            table = _conform(table, portal.promised)
        total = table.num_rows
        start = portal.sent
        end = total if message.max_rows <= 0 else min(total, start + message.max_rows)
        formats = _result_formats(portal.result_formats, table.num_columns)
        await self.host.send_rows(table.slice(start, end - start), formats)
        portal.sent = end
        if end < total:
            self.host.send(protocol.portal_suspended())
            return
        # PostgreSQL tags a SELECT portal with the rows this Execute returned.
        tag = result.command_tag
        if tag.startswith("SELECT"):
            tag = f"SELECT {end - start}"
        self.host.send(protocol.command_complete(tag))

    async def close(self, message: protocol.Close) -> None:
        if message.kind == "S":
            self.statements.pop(message.name, None)
        else:
            self.portals.pop(message.name, None)
        self.host.send(protocol.close_complete())


def _expand_formats(codes: Sequence[int], count: int) -> list[int] | None:
    """Bind's format codes for `count` items: none means all text, one applies to all, else
    one per item; None when the counts disagree (the caller words the 08P01 error)."""
    if not codes:
        return [0] * count
    if len(codes) == 1:
        return [codes[0]] * count
    return list(codes) if len(codes) == count else None


def _result_formats(codes: Sequence[int], columns: int) -> list[int]:
    formats = _expand_formats(codes, columns)
    if formats is None:
        raise SqlError(SqlState.PROTOCOL_VIOLATION,
                       f"bind message has {len(codes)} result formats but query has "
                       f"{columns} columns")
    return formats


def _conform(table: pa.Table, columns: Sequence[Column]) -> pa.Table:
    """The result cast to the column types the client was promised."""
    if len(columns) != table.num_columns:
        # PostgreSQL's words when a prepared statement's result shape changes.
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "cached plan must not change result type")
    # A column described as NULL-typed (a bare parameter bound to NULL) is sent as text.
    targets = [pa.string() if pa.types.is_null(c.type) else c.type for c in columns]
    if targets == table.schema.types:
        return table
    try:
        return pa.table([col if col.type == target else col.cast(target)
                         for col, target in zip(table.columns, targets, strict=True)],
                        names=[c.name for c in columns])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "cached plan must not change result type",
                       detail=str(exc)) from None

"""One client connection: the PostgreSQL v3 protocol state machine over a `Session`.

Contract: `Connection(reader, writer, context).run()` serves one socket until the client leaves,
sends Terminate or breaks the protocol. It answers SSLRequest/GSSENCRequest with 'N', honours
CancelRequest through the shared `CancelRegistry`, authenticates with trust, and then speaks the
simple and extended query protocols with PostgreSQL's semantics: named and unnamed statements and
portals, Describe without execution, Execute with a row limit (PortalSuspended), discarding
messages after an error until Sync, and dropping portals when the transaction ends at Sync.
Every session call (planning, DuckDB, the engine) runs on the shared thread pool; calls of one
connection are awaited one at a time, so they stay ordered. Errors reach the client as
ErrorResponse; protocol violations are fatal (08P01) and close only this connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import re
import secrets
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

from heron.catalog import Database
from heron.engine.api import Engine
from heron.planner import Column, Kind, Result, SqlError, SqlState, Statement, split
from heron.planner.errors import bind_count_mismatch
from heron.server import decode, encode, protocol
from heron.server.protocol import FieldDescription, ProtocolError
from heron.server.session import Session, TransactionStatus

T = TypeVar("T")

STARTUP_TIMEOUT_S = 60.0  # PostgreSQL's authentication_timeout default
ENCODE_BATCH_ROWS = 8192  # rows encoded per thread-pool call, so huge results stream
FLUSH_BYTES = 64 * 1024  # buffered output that triggers a write before Sync/Flush


class CancelRegistry:
    """Backend keys of live connections, for CancelRequest from another socket."""

    def __init__(self) -> None:
        self._connections: dict[int, tuple[int, Connection]] = {}

    def add(self, connection: Connection) -> tuple[int, int]:
        while True:
            pid = secrets.randbelow(2**31 - 1) + 1
            if pid not in self._connections:
                break
        secret = secrets.randbits(31)
        self._connections[pid] = (secret, connection)
        return pid, secret

    def remove(self, pid: int) -> None:
        self._connections.pop(pid, None)

    def cancel(self, pid: int, secret: int) -> bool:
        entry = self._connections.get(pid)
        if entry is None or not secrets.compare_digest(entry[0].to_bytes(4), secret.to_bytes(4)):
            return False
        entry[1].cancel()
        return True

    def connections(self) -> list[Connection]:
        return [c for _, c in self._connections.values()]


@dataclass
class ServerContext:
    """What every connection shares: the database, the engine, the thread pool, cancel keys."""

    database: Database
    engine: Engine | None
    executor: concurrent.futures.Executor
    registry: CancelRegistry = field(default_factory=CancelRegistry)


@dataclass
class PreparedStatement:
    statement: Statement
    param_oids: tuple[int, ...]  # as given by the client, 0 where it left the type open
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


class _Fatal(Exception):
    """Ends the connection after the error has been sent."""


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 context: ServerContext) -> None:
        self.reader = reader
        self.writer = writer
        self.context = context
        self.session: Session | None = None
        self.statements: dict[str, PreparedStatement] = {}
        self.portals: dict[str, Portal] = {}
        self._out = bytearray()
        self._pid = 0
        self._reported: dict[str, str] = {}
        self._running = False  # a statement is executing: CancelRequest interrupts it
        self._pending: concurrent.futures.Future[Any] | None = None
        self._skip_until_sync = False

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            if await self._startup():
                await self._serve()
        except (asyncio.IncompleteReadError, ConnectionError, _Fatal):
            pass
        except ProtocolError as exc:
            await self._fatal(SqlState.PROTOCOL_VIOLATION, str(exc))
        except asyncio.CancelledError:
            # Server shutdown: tell the client why, like PostgreSQL's "terminating connection".
            await self._fatal(SqlState.ADMIN_SHUTDOWN,
                              "terminating connection due to administrator command")
            raise
        finally:
            await self._cleanup()

    def cancel(self) -> None:
        """Interrupt the running statement, if any (called on the event loop)."""
        if self._running and self.session is not None:
            self.session.cancel()

    async def _cleanup(self) -> None:
        if self._pid:
            self.context.registry.remove(self._pid)
        if self._pending is not None and not self._pending.done():
            # The worker thread still uses the session: interrupt it and wait before closing.
            self.cancel()
            with contextlib.suppress(BaseException):  # its outcome no longer matters
                await asyncio.wrap_future(self._pending)
        if self.session is not None:
            try:
                await self._call(self.session.close)
            except Exception:  # noqa: BLE001 - closing must not take the server down
                traceback.print_exc(file=sys.stderr)
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()

    async def _fatal(self, sqlstate: str, message: str) -> None:
        try:
            self._out += protocol.error_response(sqlstate, message, severity="FATAL")
            await self._flush()
        except (ConnectionError, OSError):
            pass

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work on the thread pool, one call at a time for this connection."""
        self._pending = self.context.executor.submit(fn, *args)
        return await asyncio.wrap_future(self._pending)

    # -- output ----------------------------------------------------------------------------

    def _send(self, message: bytes) -> None:
        self._out += message

    async def _flush(self) -> None:
        if self._out:
            self.writer.write(bytes(self._out))
            self._out.clear()
        await self.writer.drain()

    async def _maybe_flush(self) -> None:
        if len(self._out) >= FLUSH_BYTES:
            await self._flush()

    def _send_error(self, exc: BaseException) -> None:
        if isinstance(exc, SqlError):
            self._send(protocol.error_response(exc.sqlstate, exc.message, severity=exc.severity,
                                               detail=exc.detail, hint=exc.hint))
        else:
            # A bug of ours: report it, keep the connection usable, keep the trace for us.
            traceback.print_exception(exc, file=sys.stderr)
            self._send(protocol.error_response(SqlState.INTERNAL_ERROR,
                                               str(exc) or type(exc).__name__))

    def _send_parameter_changes(self) -> None:
        assert self.session is not None
        for name, value in self.session.reported().items():
            if self._reported.get(name) != value:
                self._reported[name] = value
                self._send(protocol.parameter_status(name, value))

    def _send_ready(self) -> None:
        assert self.session is not None
        self._send(protocol.ready_for_query(self.session.transaction_status))

    # -- start-up --------------------------------------------------------------------------

    async def _startup(self) -> bool:
        """Negotiate and authenticate; False when the connection was a CancelRequest."""
        for _ in range(3):  # at most SSLRequest, GSSENCRequest, then the real start-up
            message = await asyncio.wait_for(protocol.read_startup(self.reader),
                                             STARTUP_TIMEOUT_S)
            if isinstance(message, protocol.SSLRequest | protocol.GSSENCRequest):
                self.writer.write(b"N")  # no TLS/GSS: the client continues in plain text
                await self.writer.drain()
                continue
            if isinstance(message, protocol.CancelRequest):
                self.context.registry.cancel(message.pid, message.secret)
                return False
            return await self._start_session(message)
        raise ProtocolError("too many negotiation requests before start-up")

    async def _start_session(self, startup: protocol.Startup) -> bool:
        major, minor = startup.version >> 16, startup.version & 0xFFFF
        if major != 3:
            await self._fatal(SqlState.FEATURE_NOT_SUPPORTED,
                              f"unsupported frontend protocol {major}.{minor}: "
                              "server supports 3.0 to 3.0")
            return False
        params = startup.parameters
        extensions = [k for k in params if k.startswith("_pq_.")]
        if minor > 0 or extensions:
            self._send(protocol.negotiate_protocol_version(0, extensions))
        user = params.get("user")
        if not user:
            await self._fatal(SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
                              "no PostgreSQL user name specified in startup packet")
            return False
        settings = {k: v for k, v in params.items()
                    if k not in {"user", "database", "options", "replication"}
                    and not k.startswith("_pq_.")}
        if "client_encoding" in settings:
            # PostgreSQL ignores everything but letters and digits in encoding names; asyncpg
            # sends "'utf-8'".
            settings["client_encoding"] = re.sub(r"[^A-Za-z0-9]", "", settings["client_encoding"])
        try:
            self.session = await self._call(
                lambda: Session(self.context.database, self.context.engine, user=user,
                                database_name=params.get("database") or user,
                                parameters=settings))
        except SqlError as exc:
            await self._fatal(exc.sqlstate, exc.message)
            return False
        self._pid, secret = self.context.registry.add(self)
        self._send(protocol.authentication_ok())
        self._send_parameter_changes()
        self._send(protocol.backend_key_data(self._pid, secret))
        self._send_ready()
        await self._flush()
        return True

    # -- message loop ----------------------------------------------------------------------

    async def _serve(self) -> None:
        handlers = {
            protocol.Query: self._query,
            protocol.Parse: self._parse,
            protocol.Bind: self._bind,
            protocol.Describe: self._describe,
            protocol.Execute: self._execute,
            protocol.Close: self._close,
        }
        while True:
            message = await protocol.read_message(self.reader)
            if isinstance(message, protocol.Terminate):
                return
            if isinstance(message, protocol.Sync):
                # Sync ends the implicit transaction of the messages before it.
                await self._end_implicit(failed=self._skip_until_sync)
                self._skip_until_sync = False
                self._end_of_transaction_portals()
                self._send_ready()
                await self._flush()
                continue
            if isinstance(message, protocol.Flush):
                await self._flush()
                continue
            if self._skip_until_sync:
                continue  # PostgreSQL discards extended-protocol messages after an error
            try:
                await handlers[type(message)](message)
            except Exception as exc:  # noqa: BLE001 - every failure becomes ErrorResponse
                self._send_error(exc)
                if isinstance(message, protocol.Query):
                    self._send_ready()
                else:
                    self._skip_until_sync = True
            if isinstance(message, protocol.Query):
                await self._flush()
            else:
                await self._maybe_flush()

    def _end_of_transaction_portals(self) -> None:
        # Portals live until the end of their transaction; outside a transaction block each
        # Sync (or simple Query) ends the implicit one.
        assert self.session is not None
        if self.session.transaction_status is TransactionStatus.IDLE:
            self.portals.clear()

    # -- simple query ----------------------------------------------------------------------

    async def _query(self, message: protocol.Query) -> None:
        assert self.session is not None
        self.portals.pop("", None)
        statements = await self._call(split, message.sql)
        if not statements:
            self._send(protocol.empty_query_response())
        if len(statements) > 1:  # all or nothing, as in PostgreSQL
            await self._call(self.session.begin_implicit)
        failed = True
        try:
            for sql in statements:
                try:
                    statement = await self._call(self.session.prepare, sql)
                    result = await self._run_statement(statement, [])
                    if result.columns is not None:
                        formats = [0] * len(result.columns)
                        self._send(protocol.row_description(_fields(result.columns, formats)))
                        if result.table is not None:
                            await self._send_rows(result.table, formats)
                    self._send(protocol.command_complete(result.command_tag))
                finally:
                    self._send_parameter_changes()
            failed = False
        finally:
            await self._call(self.session.end_implicit, failed)
        self._end_of_transaction_portals()
        self._send_ready()

    def _deallocate(self, statement: Statement) -> Result:
        """DEALLOCATE [PREPARE] name|ALL: SQL's handle on protocol-level prepared statements,
        which live here (psycopg sends DEALLOCATE ALL after a failed transaction)."""
        assert self.session is not None and statement.command is not None
        self.session.admit(statement)
        name = statement.command.name
        if not name:
            self.statements.clear()
            return Result("DEALLOCATE ALL", None, None)
        if self.statements.pop(name, None) is None:
            raise SqlError(SqlState.INVALID_SQL_STATEMENT_NAME,
                           f'prepared statement "{name}" does not exist')
        return Result("DEALLOCATE", None, None)

    async def _run_statement(self, statement: Statement, params: Sequence[Any]) -> Result:
        assert self.session is not None
        if statement.kind is Kind.DEALLOCATE:
            return self._deallocate(statement)
        self._running = True
        try:
            result = await self._call(self.session.execute, statement, params)
        finally:
            self._running = False
        for text in result.notices:
            self._send(protocol.error_response(SqlState.SUCCESSFUL_COMPLETION,
                                               text, severity="NOTICE", notice=True))
        return result

    async def _send_rows(self, table: pa.Table, formats: Sequence[int]) -> None:
        timezone = encode.session_timezone(self.session.setting("TimeZone"))
        for start in range(0, table.num_rows, ENCODE_BATCH_ROWS):
            batch = table.slice(start, ENCODE_BATCH_ROWS)
            rows = await self._call(_encode_rows, batch, formats, timezone)
            for row in rows:
                self._send(row)
            await self._maybe_flush()

    # -- extended query --------------------------------------------------------------------

    async def _parse(self, message: protocol.Parse) -> None:
        assert self.session is not None
        if message.name and message.name in self.statements:
            raise SqlError(SqlState.DUPLICATE_PREPARED_STATEMENT,
                           f'prepared statement "{message.name}" already exists')
        if not message.name:
            self.statements.pop("", None)  # replaced even if this Parse fails
        statement = await self._call(self.session.prepare, message.sql)
        # Types the client left open (0) are the ones the statement implies.
        given = message.param_oids
        implied = statement.param_types
        oids = tuple(given[i] if i < len(given) and given[i] else
                     (implied[i] if i < len(implied) else 0)
                     for i in range(max(statement.param_count, len(given))))
        self.statements[message.name] = PreparedStatement(statement, oids)
        self._send(protocol.parse_complete())

    async def _bind(self, message: protocol.Bind) -> None:
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
        self._send(protocol.bind_complete())

    async def _describe(self, message: protocol.Describe) -> None:
        if message.kind == "S":
            prepared = self.statements.get(message.name)
            if prepared is None:
                raise SqlError(SqlState.INVALID_SQL_STATEMENT_NAME,
                               f'prepared statement "{message.name}" does not exist')
            self._send(protocol.parameter_description(
                [decode.parameter_type(oid) for oid in prepared.param_oids]))
            columns = await self._statement_columns(prepared)
            self._send(protocol.no_data() if columns is None else
                       protocol.row_description(_fields(columns, [0] * len(columns))))
            return
        portal = self._portal(message.name)
        if not portal.prepared.statement.returns_rows:
            self._send(protocol.no_data())
            return
        # The portal's parameter values take part (DuckDB infers a bare $1 from its value), so the
        # row types announced here are the ones Execute produces. Statements whose columns are
        # known only by running (INSERT ... RETURNING, EXPLAIN) run now; Execute sends their rows.
        columns = portal.promised
        if columns is None and portal.result is None:
            assert self.session is not None
            columns = await self._call(self.session.describe, portal.prepared.statement,
                                       portal.params)
        if columns is None:
            if portal.result is None:
                portal.result = await self._run_portal(portal)
            columns = portal.result.columns
        if columns is None:
            self._send(protocol.no_data())
            return
        portal.promised = columns
        formats = _result_formats(portal.result_formats, len(columns))
        self._send(protocol.row_description(_fields(columns, formats)))

    async def _statement_columns(self, prepared: PreparedStatement) -> tuple[Column, ...] | None:
        if not prepared.described:
            if prepared.statement.returns_rows:
                assert self.session is not None
                prepared.columns = await self._call(self.session.describe, prepared.statement)
            prepared.described = True
        return prepared.columns

    async def _end_implicit(self, failed: bool) -> None:
        if self.session is not None and self.session.implicit:
            try:
                await self._call(self.session.end_implicit, failed)
            except Exception as exc:  # noqa: BLE001 - a failed COMMIT is the client's error
                self._send_error(exc)

    async def _run_portal(self, portal: Portal) -> Result:
        assert self.session is not None
        await self._call(self.session.begin_implicit)
        try:
            return await self._run_statement(portal.prepared.statement, portal.params)
        finally:
            self._send_parameter_changes()

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise SqlError(SqlState.INVALID_CURSOR_NAME, f'portal "{name}" does not exist')
        return portal

    async def _execute(self, message: protocol.Execute) -> None:
        portal = self._portal(message.portal)
        if portal.prepared.statement.kind is Kind.EMPTY:
            self._send(protocol.empty_query_response())
            return
        if portal.result is None:
            portal.result = await self._run_portal(portal)
        result = portal.result
        if result.columns is None or result.table is None:
            self._send(protocol.command_complete(result.command_tag))
            return
        table = result.table
        if portal.promised is not None:
            table = _conform(table, portal.promised)
        total = table.num_rows
        start = portal.sent
        end = total if message.max_rows <= 0 else min(total, start + message.max_rows)
        formats = _result_formats(portal.result_formats, table.num_columns)
        await self._send_rows(table.slice(start, end - start), formats)
        portal.sent = end
        if end < total:
            self._send(protocol.portal_suspended())
            return
        # PostgreSQL tags a SELECT portal with the rows this Execute returned.
        tag = result.command_tag
        if tag.startswith("SELECT"):
            tag = f"SELECT {end - start}"
        self._send(protocol.command_complete(tag))

    async def _close(self, message: protocol.Close) -> None:
        if message.kind == "S":
            self.statements.pop(message.name, None)
        else:
            self.portals.pop(message.name, None)
        self._send(protocol.close_complete())


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


def _fields(columns: Sequence[Column], formats: Sequence[int]) -> list[FieldDescription]:
    out = []
    for column, fmt in zip(columns, formats, strict=True):
        pg = encode.pg_type(column.type)
        out.append(FieldDescription(column.name, pg.oid, pg.typlen, format=fmt))
    return out


def _encode_rows(table: pa.Table, formats: Sequence[int], timezone: dt.tzinfo) -> list[bytes]:
    """DataRow messages for a slice of a result (runs on the thread pool)."""
    columns = [encode.encode_column(table.column(i), fmt, timezone)
               for i, fmt in enumerate(formats)]
    return list(protocol.data_rows(columns, table.num_rows))

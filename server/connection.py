"""One client connection: the PostgreSQL v3 protocol state machine over a `Session`.

Contract: `Connection(reader, writer, context).run()` serves one socket until the client leaves,
sends Terminate or breaks the protocol. It answers SSLRequest with 'S' and a TLS handshake when
the server has a certificate (else 'N', as GSSENCRequest always), honours CancelRequest through
the shared `CancelRegistry`, authenticates the start-up user against the data directory's roles
(`server.auth`: trust or SCRAM-SHA-256, FATAL 28000/28P01 on failure), and then runs the
message loop: the simple query protocol here (several statements of one Query in one implicit
transaction, all or nothing), the extended one in `server.extended`, whose messages are
discarded after an error until Sync, where the implicit transaction ends. Every session call
(planning, DuckDB, the engine) runs on the shared thread pool; calls of one connection are
awaited one at a time, so they stay ordered. Errors reach the client as ErrorResponse; protocol
violations are fatal (08P01) and close only this connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import re
import secrets
import ssl
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

from heron.catalog import Database
from heron.engine.api import Engine
from heron.planner import Kind, Result, SqlError, SqlState, Statement, split
from heron.server import auth, encode, protocol
from heron.server.config import AuthMethod
from heron.server.extended import ExtendedQuery
from heron.server.protocol import ProtocolError
from heron.server.session import Session

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
    auth: AuthMethod = AuthMethod.TRUST
    tls: ssl.SSLContext | None = None
    certificate_pem: str | None = None  # of `tls`, for SCRAM channel binding


class _Fatal(Exception):
    """Ends the connection after the error has been sent."""


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 context: ServerContext) -> None:
        self.reader = reader
        self.writer = writer
        self.context = context
        self.session: Session | None = None
        self.extended = ExtendedQuery(self)
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
                await self.call(self.session.close)
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

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work on the thread pool, one call at a time for this connection."""
        self._pending = self.context.executor.submit(fn, *args)
        return await asyncio.wrap_future(self._pending)

    # -- output ----------------------------------------------------------------------------

    def send(self, message: bytes) -> None:
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
            self.send(protocol.error_response(exc.sqlstate, exc.message, severity=exc.severity,
                                               detail=exc.detail, hint=exc.hint))
        else:
            # A bug of ours: report it, keep the connection usable, keep the trace for us.
            traceback.print_exception(exc, file=sys.stderr)
            self.send(protocol.error_response(SqlState.INTERNAL_ERROR,
                                               str(exc) or type(exc).__name__))

    def send_parameter_changes(self) -> None:
        assert self.session is not None
        for name, value in self.session.reported().items():
            if self._reported.get(name) != value:
                self._reported[name] = value
                self.send(protocol.parameter_status(name, value))

    def _send_ready(self) -> None:
        assert self.session is not None
        self.send(protocol.ready_for_query(self.session.transaction_status))

    # -- start-up --------------------------------------------------------------------------

    async def _startup(self) -> bool:
        """Negotiate and authenticate; False when the connection was a CancelRequest."""
        for _ in range(3):  # at most SSLRequest, GSSENCRequest, then the real start-up
            message = await asyncio.wait_for(protocol.read_startup(self.reader),
                                             STARTUP_TIMEOUT_S)
            if isinstance(message, protocol.SSLRequest) and self.context.tls is not None:
                await self._start_tls(self.context.tls)
                continue
            if isinstance(message, protocol.SSLRequest | protocol.GSSENCRequest):
                self.writer.write(b"N")  # no TLS/GSS: the client continues in plain text
                await self.writer.drain()
                continue
            if isinstance(message, protocol.CancelRequest):
                self.context.registry.cancel(message.pid, message.secret)
                return False
            return await self._start_session(message)
        raise ProtocolError("too many negotiation requests before start-up")

    async def _start_tls(self, context: ssl.SSLContext) -> None:
        if self.writer.get_extra_info("ssl_object") is not None:
            raise ProtocolError("SSL request received on an encrypted connection")
        # Bytes sent after SSLRequest but before the handshake would be plain text that a
        # man in the middle injected (PostgreSQL's CVE-2021-23214 check).
        if getattr(self.reader, "_buffer", b""):
            raise ProtocolError("received unencrypted data after SSL request")
        self.writer.write(b"S")
        await self.writer.drain()
        await self.writer.start_tls(context, ssl_handshake_timeout=STARTUP_TIMEOUT_S)

    async def _authenticate(self, user: str) -> bool:
        """Run the configured exchange for `user`; False (after a FATAL) when it failed."""

        async def send(message: bytes) -> None:
            self.send(message)
            await self._flush()

        tls = self.writer.get_extra_info("ssl_object") is not None
        exchange = auth.Exchange(self.reader, send, STARTUP_TIMEOUT_S,
                                 self.context.certificate_pem if tls else None)
        try:
            await auth.authenticate(exchange, self.context.auth,
                                    self.context.database.roles.get(user), user)
        except SqlError as exc:
            await self._fatal(exc.sqlstate, exc.message)
            return False
        return True

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
            self.send(protocol.negotiate_protocol_version(0, extensions))
        user = params.get("user")
        if not user:
            await self._fatal(SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
                              "no PostgreSQL user name specified in startup packet")
            return False
        if not await self._authenticate(user):
            return False
        settings = {k: v for k, v in params.items()
                    if k not in {"user", "database", "options", "replication"}
                    and not k.startswith("_pq_.")}
        if "client_encoding" in settings:
            # PostgreSQL ignores everything but letters and digits in encoding names; asyncpg
            # sends "'utf-8'".
            settings["client_encoding"] = re.sub(r"[^A-Za-z0-9]", "", settings["client_encoding"])
        try:
            self.session = await self.call(
                lambda: Session(self.context.database, self.context.engine, user=user,
                                database_name=params.get("database") or user,
                                parameters=settings))
        except SqlError as exc:
            await self._fatal(exc.sqlstate, exc.message)
            return False
        self._pid, secret = self.context.registry.add(self)
        self.send(protocol.authentication_ok())
        self.send_parameter_changes()
        self.send(protocol.backend_key_data(self._pid, secret))
        self._send_ready()
        await self._flush()
        return True

    # -- message loop ----------------------------------------------------------------------

    async def _serve(self) -> None:
        handlers = {
            protocol.Query: self._query,
            protocol.Parse: self.extended.parse,
            protocol.Bind: self.extended.bind,
            protocol.Describe: self.extended.describe,
            protocol.Execute: self.extended.execute,
            protocol.Close: self.extended.close,
        }
        while True:
            message = await protocol.read_message(self.reader)
            if isinstance(message, protocol.Terminate):
                return
            if isinstance(message, protocol.Sync):
                # Sync ends the implicit transaction of the messages before it.
                await self._end_implicit(failed=self._skip_until_sync)
                self._skip_until_sync = False
                self.extended.end_of_transaction()
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

    # -- simple query ----------------------------------------------------------------------

    async def _query(self, message: protocol.Query) -> None:
        assert self.session is not None
        self.extended.portals.pop("", None)
        statements = await self.call(split, message.sql)
        if not statements:
            self.send(protocol.empty_query_response())
        if len(statements) > 1:  # all or nothing, as in PostgreSQL
            await self.call(self.session.begin_implicit)
        failed = True
        try:
            for sql in statements:
                try:
                    statement = await self.call(self.session.prepare, sql)
                    result = await self.run_statement(statement, [])
                    if result.columns is not None:
                        formats = [0] * len(result.columns)
                        self.send(protocol.row_description(encode.fields(result.columns, formats)))
                        if result.table is not None:
                            await self.send_rows(result.table, formats)
                    self.send(protocol.command_complete(result.command_tag))
                finally:
                    self.send_parameter_changes()
            failed = False
        finally:
            await self.call(self.session.end_implicit, failed)
        self.extended.end_of_transaction()
        self._send_ready()

    async def run_statement(self, statement: Statement, params: Sequence[Any]) -> Result:
        assert self.session is not None
        if statement.kind is Kind.DEALLOCATE:
            return self.extended.deallocate(statement)
        self._running = True
        try:
            result = await self.call(self.session.execute, statement, params)
        finally:
            self._running = False
        for text in result.notices:
            self.send(protocol.error_response(SqlState.SUCCESSFUL_COMPLETION,
                                               text, severity="NOTICE", notice=True))
        return result

    async def send_rows(self, table: pa.Table, formats: Sequence[int]) -> None:
        timezone = encode.session_timezone(self.session.setting("TimeZone"))
        for start in range(0, table.num_rows, ENCODE_BATCH_ROWS):
            batch = table.slice(start, ENCODE_BATCH_ROWS)
            rows = await self.call(_encode_rows, batch, formats, timezone)
            for row in rows:
                self.send(row)
            await self._maybe_flush()

    # -- extended query --------------------------------------------------------------------

    async def _end_implicit(self, failed: bool) -> None:
        if self.session is not None and self.session.implicit:
            try:
                await self.call(self.session.end_implicit, failed)
            except Exception as exc:  # noqa: BLE001 - a failed COMMIT is the client's error
                self._send_error(exc)


def _encode_rows(table: pa.Table, formats: Sequence[int], timezone: dt.tzinfo) -> list[bytes]:
    """DataRow messages for a slice of a result (runs on the thread pool)."""
    columns = [encode.encode_column(table.column(i), fmt, timezone)
               for i, fmt in enumerate(formats)]
    return list(protocol.data_rows(columns, table.num_rows))

"""One client connection: the PostgreSQL v3 protocol state machine over a `Session`.

Contract: `Connection(reader, writer, context).run()` serves one socket until the client leaves,
sends Terminate or breaks the protocol. It answers SSLRequest with 'S' and a TLS handshake when
the server has a certificate (else 'N', as GSSENCRequest always), honours CancelRequest through
the shared `CancelRegistry`, authenticates the start-up user against the data directory's roles
(`server.auth`: trust or SCRAM-SHA-256, FATAL 28000/28P01 on failure), and then runs the
message loop: the simple query protocol here (several statements of one Query in one implicit
transaction, all or nothing), the extended one in `server.extended`, whose messages are
discarded after an error until Sync, where the implicit transaction ends, and the COPY
sub-protocol in `server.copy`. A portal's rows go out as they are read: each call to the
connection's worker reads and encodes at most `ENCODE_BATCH_ROWS` rows (vectorized,
`encode.encode_values`), and the output is flushed whenever `FLUSH_BYTES` are buffered, so a
result of any size streams in bounded memory. Every session call (planning, DuckDB, the engine)
runs on the connection's lane of the server's worker pool (`server.worker`), so a session that
waits never holds up another for long; calls are awaited one at a time, so they stay ordered,
and a statement without a large result costs one call. A SELECT's first rows run on the event
loop's thread instead once its recent runs were quick (`worker.Pace`, one per statement), unless
it calls the server's own SQL functions (an advisory lock may wait); a short Query text seen
lately is split without a call. While a call runs, what the client sends is read ahead; a client
that closes its end meanwhile cancels the running statement (its work stops, as PostgreSQL's
`client_connection_check_interval` does). A connection whose session
LISTENs passes on notifications (`server.notify`) while it waits for the client, outside
transaction blocks, and after each Query or Sync publishes the NOTIFYs its session committed.
Errors reach the client as ErrorResponse. A message whose frame is sound but whose fields are not
(`protocol.Malformed`) is an ERROR like any other, and the connection goes on; broken framing is
fatal (08P01) and closes only this connection. Past `ServerContext.max_connections` sessions, a
new one is refused after its start-up packet with FATAL 53300, as PostgreSQL does.

Each authenticated connection has its `Backend` in the server's `Activity` (pg_stat_activity):
it reports the query a Query, Parse or Execute starts working on and the idle state at each
ReadyForQuery. The backend reaches back through the thread-safe `post_*` methods: a NOTICE (an
AI statement's progress, a signal's WARNING) is written to the socket at once, while the
statement still runs on a worker thread, and before anything the connection sends after that
statement; pg_cancel_backend does what a CancelRequest does, pg_terminate_backend what the
server's shutdown does to one connection (FATAL 57P01, then the usual clean-up).
"""

from __future__ import annotations

import asyncio
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
from heron.planner import (
    Column,
    Kind,
    Result,
    SqlError,
    SqlState,
    Statement,
    pg_activity,
    pg_advisory,
    split,
)
from heron.planner.column_origins import NO_ORIGIN, wire_type
from heron.planner.pg_types import PgType
from heron.planner.statement import split_known
from heron.server import auth, copy, encode, protocol
from heron.server.activity import PROGRESS_TICK_S, Activity, Backend, Client, Severity
from heron.server.config import AuthMethod
from heron.server.extended import ExtendedQuery, result_formats
from heron.server.notify import Notification, Notifications
from heron.server.parallelism import Parallelism
from heron.server.portal import Portal
from heron.server.protocol import ProtocolError
from heron.server.session import CatalogGeneration, Session
from heron.server.transaction import TransactionStatus
from heron.server.worker import Pace, WorkerPool
from heron.server.write_conflicts import Writers

T = TypeVar("T")

STARTUP_TIMEOUT_S = 60.0  # PostgreSQL's authentication_timeout default
ENCODE_BATCH_ROWS = 8192  # rows read and encoded per thread-pool call, so huge results stream
# Below this many rows the row-at-a-time reference encoders are faster than the vectorized ones
# (whose numpy and Arrow calls cost a fixed few microseconds each); both send the same bytes.
VECTORIZED_MIN_ROWS = 64
FLUSH_BYTES = 64 * 1024  # buffered output that triggers a write before Sync/Flush
WATCH_CLIENT_AFTER_S = 0.05  # a call lasting longer has the client's messages read meanwhile
# Statements that run no DuckDB work that threads could share (`server.parallelism`).
_SHARES_NO_WORK = frozenset({
    Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK, Kind.TRANSACTION, Kind.SET, Kind.RESET, Kind.SHOW,
    Kind.SAVEPOINT, Kind.RELEASE, Kind.ROLLBACK_TO, Kind.CLOSE, Kind.LISTEN, Kind.NOTIFY,
    Kind.LOCK, Kind.SET_CONSTRAINTS, Kind.ROLE})
PACES_KEPT = 256  # statements whose `Pace` a connection keeps; past it, the map starts again


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


class LongCalls:
    """The connections' running calls (`Connection.call`), looked at by one timer every half
    `WATCH_CLIENT_AFTER_S` while any run: a call that has run `WATCH_CLIENT_AFTER_S` has its
    client watched (within half that again). A call costs a dict entry, not a timer of its own
    set and cancelled. On the event loop's thread only."""

    def __init__(self) -> None:
        self._running: dict[asyncio.Future[Any], tuple[Connection, float]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def started(self, call: asyncio.Future[Any], connection: Connection,
                loop: asyncio.AbstractEventLoop) -> None:
        self._running[call] = (connection, loop.time())
        if self._timer is None:
            self._timer = loop.call_later(WATCH_CLIENT_AFTER_S / 2, self._look, loop)

    def ended(self, call: asyncio.Future[Any]) -> None:
        self._running.pop(call, None)

    def _look(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        lasted = loop.time() - WATCH_CLIENT_AFTER_S
        for call, (connection, started) in list(self._running.items()):
            if started <= lasted:
                del self._running[call]
                if not call.done():
                    connection._watch_client(call)
        if self._running:
            self._timer = loop.call_later(WATCH_CLIENT_AFTER_S / 2, self._look, loop)


@dataclass
class ServerContext:
    """What every connection shares: the database, the engine, how many sessions may be open at
    once (`sessions` counts them), the server's defaults of session settings, cancel keys, the
    catalog generation (which tells sessions when their cached statements are stale), the
    tally of their transactions that write (`write_conflicts`), the notification hub, the
    worker pool that runs the sessions' blocking calls and the timer that finds the calls that
    last."""

    database: Database
    engine: Engine | None
    max_connections: int = 100
    settings: dict[str, str] = field(default_factory=dict)
    sessions: int = 0
    registry: CancelRegistry = field(default_factory=CancelRegistry)
    auth: AuthMethod = AuthMethod.TRUST
    tls: ssl.SSLContext | None = None
    certificate_pem: str | None = None  # of `tls`, for SCRAM channel binding
    generation: CatalogGeneration = field(default_factory=CatalogGeneration)
    writers: Writers = field(default_factory=Writers)  # their transactions that write
    notifications: Notifications = field(default_factory=Notifications)
    workers: WorkerPool = field(default_factory=WorkerPool)
    calls: LongCalls = field(default_factory=LongCalls)  # the running ones, for the long ones
    activity: Activity = field(init=False)  # what pg_stat_activity shows and signals reach
    parallelism: Parallelism = field(init=False)  # DuckDB's threads for one statement

    def __post_init__(self) -> None:
        self.parallelism = Parallelism(self.database.set_threads, self.database.threads)
        self.activity = Activity(self.database.roles, self.database.catalog_name)
        # The functions pg_stat_activity and friends call live as long as the connection that
        # registered them: one kept for the server's lifetime.
        self._functions = self.database.connect()
        pg_activity.register(self._functions, self.activity)
        pg_advisory.register(self._functions, self.activity)


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 context: ServerContext) -> None:
        self.reader = reader
        self.writer = writer
        self.context = context
        self.session: Session | None = None
        self.backend: Backend | None = None  # once authenticated
        self.extended = ExtendedQuery(self)
        self._out = bytearray()
        self._pid = 0
        self._admitted = False  # counted in `context.sessions`
        self._loop = asyncio.get_running_loop()
        self._worker = context.workers.lane(self._loop)
        self._reported: dict[str, str] = {}
        self._running = False  # a statement is executing: CancelRequest interrupts it
        self._client_left = False  # the client closed its end while a call ran
        self._skip_until_sync = False
        self.messages: protocol.MessageReader | None = None  # after start-up
        self._listening: set[str] = set()  # channels this connection is subscribed to
        self._inbox: list[Notification] = []
        self._notified = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None
        self._ticking: asyncio.TimerHandle | None = None  # Backend.tick's next call
        self._closing = False  # nothing more is written but the FATAL of the end
        self._encodings = _Encodings()  # how prepared statements' rows are sent
        # The pace of statements' first rows, by the statement's id (held: its key)
        self._paces: dict[int, tuple[Statement, Pace]] = {}

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self) -> None:
        self._task = asyncio.current_task()
        try:
            if await self._startup():
                await self._serve()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except ProtocolError as exc:
            await self._fatal(exc.sqlstate, str(exc))
        except asyncio.CancelledError:
            # Server shutdown: tell the client why, like PostgreSQL's "terminating connection".
            await self._fatal(SqlState.ADMIN_SHUTDOWN,
                              "terminating connection due to administrator command")
            raise
        finally:
            await self._cleanup()

    def _start_running(self) -> None:
        """From now until the statement is done, a CancelRequest cancels it."""
        if not self._running:
            assert self.session is not None
            self.session.expect_cancel()
            self._running = True

    def cancel(self) -> None:
        """Interrupt the running statement, if any (called on the event loop)."""
        if self._running and self.session is not None:
            self.session.cancel()

    # -- what other threads ask (server.activity.Peer) ---------------------------------------

    def post_notice(self, severity: Severity, text: str) -> None:
        """Send a NOTICE or WARNING to the client now, even while a statement runs: the
        protocol allows one at any time. Any thread; messages already buffered go first, and
        one posted by a statement's thread precedes what the connection sends after that
        statement returns (both come through the event loop, in order)."""
        code = SqlState.WARNING if severity is Severity.WARNING else SqlState.SUCCESSFUL_COMPLETION
        message = protocol.error_response(code, text, severity=severity.value, notice=True)
        if self.backend is not None and self.backend.on_loop:
            # The statement runs on the loop's thread, which waits for it: a callback would run
            # after what the statement sends.
            self._out += message
            return
        self._soon(self._write_now, message)

    def post_cancel(self) -> None:
        """pg_cancel_backend: what a CancelRequest does (any thread)."""
        self._soon(self.cancel)

    def post_terminate(self) -> None:
        """pg_terminate_backend: what the server's shutdown does to this connection — FATAL
        57P01, its statement interrupted, its session closed (any thread)."""
        if self._task is not None:
            self._soon(self._task.cancel)

    def post_ticks(self) -> None:
        """Have the backend look at its running AI operators regularly (any thread)."""
        self._soon(self._tick_soon)

    def _soon(self, callback: Callable[..., object], *args: Any) -> None:
        """Run `callback` on the event loop; nothing once the server has stopped it."""
        with contextlib.suppress(RuntimeError):  # the loop is closed
            self._loop.call_soon_threadsafe(callback, *args)

    def _tick_soon(self) -> None:
        if self._ticking is None and not self._closing:
            self._ticking = self._loop.call_later(PROGRESS_TICK_S, self._tick)

    def _tick(self) -> None:
        self._ticking = None
        if self.backend is not None and self.backend.tick():
            self._tick_soon()

    def _write_now(self, message: bytes) -> None:
        if self._closing or self.writer.is_closing():
            return
        self._out += message
        self.writer.write(bytes(self._out))
        self._out.clear()

    async def _cleanup(self) -> None:
        self._closing = True
        if self._ticking is not None:
            self._ticking.cancel()
        self.context.notifications.unsubscribe(self)
        if self._pid:
            self.context.registry.remove(self._pid)
        if self._admitted:
            self.context.sessions -= 1
        if self._worker.busy:
            # A worker thread still uses the session: interrupt it (the session closes after,
            # on the same thread).
            self.cancel()
        if self.session is not None:
            try:
                await self.call(self.session.close)
            except Exception:  # noqa: BLE001 - closing must not take the server down
                traceback.print_exc(file=sys.stderr)
        self._worker.close()
        if self.backend is not None:
            self.context.activity.close(self.backend)
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()

    async def _fatal(self, sqlstate: str, message: str) -> None:
        self._closing = True
        try:
            self._out += protocol.error_response(sqlstate, message, severity="FATAL")
            await self.flush()
        except (ConnectionError, OSError):
            pass

    async def call(self, fn: Callable[..., T], *args: Any, pace: Pace | None = None) -> T:
        """Run blocking work on the connection's lane of the worker pool, one call at a time. A
        call that lasts (`WATCH_CLIENT_AFTER_S`) has the client's next messages read ahead
        meanwhile: if it closes its end, the work is cancelled (it would be for no one) and the
        connection ends without running what the client sent before. With a `pace`, the call
        is timed, and runs on the loop's thread when it is quick and the lane idle; one that
        called the server's SQL functions never runs there again."""
        if pace is not None:
            backend = self.backend
            assert backend is not None
            calls = backend.server_calls
            try:
                if pace.quick and not self._worker.busy:
                    backend.on_loop = True
                    try:
                        return pace.run(fn, *args)
                    finally:
                        backend.on_loop = False
                return await self.call(pace.run, fn, *args)
            finally:
                if backend.server_calls != calls:
                    pace.never()
        done = self._worker.submit(fn, *args)
        if self.messages is None or self.messages.closed:
            return await done
        # Watching costs a task and a loop turn or two, more than a small statement's own
        # work on the loop: most calls are over before it would start, also under load, when
        # a short call waits milliseconds for the GIL (at 5 ms, 50 busy connections watched
        # most of their calls: 4-8 % of their queries per second). The server's one timer
        # (`LongCalls`) finds the calls that last, not a timer set and cancelled per call.
        calls = self.context.calls
        calls.started(done, self, self._loop)
        try:
            result = await done
        except Exception:
            if self._client_left:
                raise ConnectionResetError("the client closed the connection") from None
            raise
        finally:
            calls.ended(done)
        if self._client_left:
            raise ConnectionResetError("the client closed the connection")
        return result

    def _watch_client(self, call: asyncio.Future[Any]) -> None:
        """Read the client's messages while `call` runs; cancel its work if the client leaves."""
        if self._closing or self.messages is None:
            return  # (the connection is ending: no one to watch)
        reading = asyncio.ensure_future(self.messages.read_ahead())
        call.add_done_callback(lambda _: reading.cancel())

        def read(task: asyncio.Future[None]) -> None:
            if task.cancelled():
                return
            task.exception()  # (a broken connection counts as closed)
            if not call.done():
                self._client_left = True
                if self.session is not None:
                    self.session.cancel()

        reading.add_done_callback(read)

    # -- output ----------------------------------------------------------------------------

    def send(self, message: bytes) -> None:
        self._out += message

    async def flush(self) -> None:
        transport = self.writer.transport
        if self._out:
            transport.write(bytes(self._out))
            self._out.clear()
        # Waiting is for a client that reads slower than we write (or has gone): when the
        # socket took everything, drain() would return at once, three coroutines later.
        if transport.get_write_buffer_size() or transport.is_closing():
            await self.writer.drain()

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
                if name == "application_name" and self.backend is not None:
                    self.backend.application_name = value

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
            await self.flush()

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
        if self.context.sessions >= self.context.max_connections:
            await self._fatal(SqlState.TOO_MANY_CONNECTIONS, "sorry, too many clients already")
            return False
        self.context.sessions += 1
        self._admitted = True
        user = params.get("user")
        if not user:
            await self._fatal(SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
                              "no PostgreSQL user name specified in startup packet")
            return False
        if not await self._authenticate(user):
            return False
        # The backend's PID first: the session's catalog answers pg_backend_pid() with it.
        self._pid, secret = self.context.registry.add(self)
        address = self.writer.get_extra_info("peername")
        client = Client(str(address[0]), int(address[1])) if isinstance(address, tuple) else (
            Client(None, -1))
        self.backend = self.context.activity.open(self._pid, user, client, "", self)
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
                                parameters=settings, generation=self.context.generation,
                                writers=self.context.writers,
                                server_settings=self.context.settings,
                                backend=self.backend))
        except SqlError as exc:
            await self._fatal(exc.sqlstate, exc.message)
            return False
        self.send(protocol.authentication_ok())
        self.send_parameter_changes()
        self.send(protocol.backend_key_data(self._pid, secret))
        self._send_ready()
        await self.flush()
        return True

    # -- message loop ----------------------------------------------------------------------

    async def read_message(self) -> protocol.FrontendMessage:
        if self.messages is None:
            self.messages = protocol.MessageReader(self.reader)
        return await self.messages.next()

    async def _serve(self) -> None:
        handlers = {
            protocol.Query: self._query,
            protocol.Parse: self.extended.parse,
            protocol.Bind: self.extended.bind,
            protocol.Describe: self.extended.describe,
            protocol.Execute: self.extended.execute,
            protocol.Close: self.extended.close,
            protocol.Malformed: self._malformed,
        }
        while True:
            message = self.messages.take() if self.messages is not None else None
            if message is None:
                # (straight to the reader when no notification can come: two frames fewer to
                # go through each time the connection's task wakes)
                message = await (self.messages.next() if self.messages is not None and (
                    not self._listening) else self._next_message())
            kind = type(message)
            if kind not in _STATEMENT_MESSAGES:  # one look-up for the usual messages
                if kind is protocol.Sync:
                    # Sync ends the implicit transaction of the messages before it.
                    await self._end_implicit(failed=self._skip_until_sync)
                    self._skip_until_sync = False
                    self._command_done()
                    await self.flush()
                    continue
                if kind is protocol.Terminate:
                    return
                if kind is protocol.Flush:
                    await self.flush()
                    continue
                if kind in _COPY_MESSAGES or (
                        kind is protocol.Malformed and message.kind in _COPY_KINDS):
                    continue  # after a failed COPY the client's remaining copy data is dropped
                if kind is protocol.Malformed and message.kind == b"X":
                    return  # a Terminate ends the connection, whatever its body
                if kind is protocol.Malformed and message.kind == b"S":
                    await self._malformed_sync(message)
                    continue
            if self._skip_until_sync:
                continue  # PostgreSQL discards extended-protocol messages after an error
            if kind is protocol.Execute or kind is protocol.Parse or kind is protocol.Query:
                self._report_active(message)
            simple = _simple(message)
            try:
                await handlers[kind](message)
            except ConnectionError:
                raise  # the client is gone: no one to answer
            except Exception as exc:  # noqa: BLE001 - every failure becomes ErrorResponse
                self._send_error(exc)
                if simple:
                    self._command_done()
                else:
                    self._skip_until_sync = True
            if simple or len(self._out) >= FLUSH_BYTES:
                await self.flush()

    async def _malformed(self, message: protocol.Malformed) -> None:
        raise self._malformed_error(message)

    async def _malformed_sync(self, message: protocol.Malformed) -> None:
        """A malformed Sync is its error, then still a Sync: the implicit transaction ends
        (failed), skipping ends, ReadyForQuery follows."""
        self._send_error(self._malformed_error(message))
        await self._end_implicit(failed=True)
        self._skip_until_sync = False
        self._command_done()
        await self.flush()

    def _malformed_error(self, message: protocol.Malformed) -> SqlError:
        """The error of a message whose fields could not be read, as PostgreSQL reports it; a
        transaction block it came in fails, as after any error."""
        assert self.session is not None
        self.session.transaction.fail()
        return SqlError(SqlState(message.sqlstate), message.message)

    def _report_active(self, message: protocol.FrontendMessage) -> None:
        """pg_stat_activity: the query a message starts working on (a Query's whole text, the
        statement of a Parse or of the portal an Execute runs)."""
        assert self.backend is not None and self.session is not None
        if isinstance(message, protocol.Query | protocol.Parse):
            self.backend.active(message.sql)
        elif isinstance(message, protocol.Execute):
            portal = self.session.portals.get(message.portal)
            self.backend.active(portal.statement.sql if portal is not None else "")

    # -- notifications ---------------------------------------------------------------------

    def notify(self, notification: Notification) -> None:
        """A notification for this connection's client (from the hub, on the event loop)."""
        self._inbox.append(notification)
        self._notified.set()

    def _command_done(self) -> None:
        """ReadyForQuery after a Query or a Sync; the notifications of what committed go out
        first (to this client too, when it listens)."""
        assert self.session is not None
        session = self.session
        if session.outbox:
            self.context.notifications.publish(self._pid, session.outbox)
            session.outbox.clear()
        if session.listening != self._listening:
            self._listening = set(session.listening)
            self.context.notifications.subscribe(self, self._listening)
        self._deliver()
        assert self.backend is not None
        self.backend.idle(session.transaction_status)
        self._send_ready()

    def _deliver(self) -> None:
        """Send the notifications received, unless a transaction block is open (PostgreSQL
        holds them until it ends)."""
        assert self.session is not None
        if self._inbox and self.session.transaction_status is TransactionStatus.IDLE:
            for n in self._inbox:
                self.send(protocol.notification_response(n.pid, n.channel, n.payload))
            self._inbox.clear()
        self._notified.clear()

    async def _next_message(self) -> protocol.FrontendMessage:
        """The client's next message; while waiting for it, a listening connection passes on
        the notifications that arrive."""
        while self._listening and not (self.messages and self.messages.pending):
            reading = asyncio.ensure_future(self.read_message())
            notified = asyncio.ensure_future(self._notified.wait())
            await asyncio.wait({reading, notified}, return_when=asyncio.FIRST_COMPLETED)
            notified.cancel()
            if reading.done():
                return reading.result()
            reading.cancel()  # no bytes are lost: MessageReader reads whole chunks
            with contextlib.suppress(asyncio.CancelledError):
                return await reading  # it completed before the cancellation took
            self._deliver()
            await self.flush()
        return await self.read_message()

    # -- simple query ----------------------------------------------------------------------

    async def _query(self, message: protocol.Query) -> None:
        assert self.session is not None
        statements = split_known(message.sql)
        if statements is None:
            statements = await self.call(split, message.sql)
        if not statements:
            self.send(protocol.empty_query_response())
        if len(statements) > 1:  # all or nothing, as in PostgreSQL
            self.session.begin_implicit()
        failed = True
        try:
            for sql in statements:
                try:
                    portal = await self._simple_portal(sql)
                    await self.execute_portal(portal, 0, describe=True)
                finally:
                    self.send_parameter_changes()
            failed = False
        finally:
            await self._end_implicit(failed)
        self._command_done()

    async def _simple_portal(self, sql: str) -> Portal:
        """The unnamed portal of one statement of a Query message."""
        assert self.session is not None
        statement = self.session.cached(sql)
        if statement is None:
            self._start_running()  # a CancelRequest while it is prepared cancels it
            try:
                statement = await self.call(self.session.prepare, sql)
            except BaseException:
                self._running = False
                raise
        else:
            self.session.admit(statement)
        portal = Portal(statement, [])
        if statement.kind is Kind.EXECUTE:
            portal = await self.extended.executed(portal)
        self.session.bind("", portal)
        return portal

    async def execute_portal(self, portal: Portal, max_rows: int, *, describe: bool = False
                             ) -> None:
        """Run (or go on reading) a portal: its rows, at most `max_rows` of them (all when 0),
        then CommandComplete, or PortalSuspended when rows are left. `describe` (the simple
        protocol) announces the rows with a RowDescription first."""
        assert self.session is not None
        statement = portal.statement
        if statement.kind is Kind.DEALLOCATE:
            self.send(protocol.command_complete(self.extended.deallocate(statement).command_tag))
            return
        if statement.kind is Kind.PREPARE:
            self.send(protocol.command_complete((await self.extended.prepare(statement)
                                                 ).command_tag))
            return
        if statement.kind is Kind.DISCARD:
            result = await self.call(self.session.execute, statement)
            if result.command_tag == "DISCARD ALL":  # (the session's part done: DEALLOCATE ALL)
                self.extended.statements.clear()
            self.send(protocol.command_complete(result.command_tag))
            return
        if statement.kind is Kind.EMPTY:
            self.send(protocol.empty_query_response())
            return
        self._start_running()
        pace = self._pace(portal)
        parallelism = self.context.parallelism if statement.kind not in _SHARES_NO_WORK else None
        if parallelism is not None:
            parallelism.enter()
            if not portal.started:
                # (a plain SELECT is known by its text; anything else may have work to share)
                parallelism.starting(statement.sql if pace is not None else None)
        try:
            if statement.kind in (Kind.COPY_IN, Kind.COPY_OUT):
                tag = await copy.run(self, portal)
                self.send(protocol.command_complete(tag))
                return
            timezone = encode.session_timezone(self.session.setting("TimeZone"))
            chunk = await self.call(_next_rows, self.session, portal, max_rows, timezone,
                                    self._encodings, pace=pace)
            if pace is not None and parallelism is not None:
                parallelism.ran(statement.sql, pace.last_s)
            result = portal.result
            assert result is not None
            self._send_notices(result)
            if describe and result.columns is not None:
                formats = result_formats(portal.formats, len(result.columns))
                self.send(encode.row_description(tuple(result.columns), tuple(formats)))
            sent = 0
            while chunk.rows:
                self.send(chunk.messages)
                sent += chunk.rows
                if len(self._out) >= FLUSH_BYTES:
                    await self.flush()
                if chunk.done or (max_rows > 0 and sent >= max_rows):
                    break
                chunk = await self.call(_next_rows, self.session, portal, max_rows - sent if
                                        max_rows > 0 else 0, timezone, self._encodings)
            if max_rows > 0 and sent >= max_rows and not chunk.done:
                self.send(protocol.portal_suspended())
                return
            self.send(protocol.command_complete(result.tag(sent)))
        finally:
            self._running = False
            if parallelism is not None:
                parallelism.leave()
            # statement_timeout counts while a message is worked on, not while a suspended
            # portal waits for the client's next Execute.
            self.session.disarm_timeout()

    def _pace(self, portal: Portal) -> Pace | None:
        """The pace of the portal's first rows, where they may run on the loop's thread: a
        SELECT's without AI functions (the engine's work is long, and reports progress
        through the loop)."""
        statement = portal.statement
        if portal.started or statement.kind is not Kind.SELECT or statement.ai is not None or (
                statement.command is not None):
            return None
        kept = self._paces.get(id(statement))
        if kept is not None and kept[0] is statement:
            return kept[1]
        if len(self._paces) >= PACES_KEPT:
            self._paces.clear()
        pace = Pace()
        self._paces[id(statement)] = (statement, pace)
        return pace

    def _send_notices(self, result: Result) -> None:
        for text in result.warnings:
            self.send(protocol.error_response(SqlState.WARNING, text, severity="WARNING",
                                               notice=True))
        for text in result.notices:
            self.send(protocol.error_response(SqlState.SUCCESSFUL_COMPLETION, text,
                                               severity="NOTICE", notice=True))

    # -- implicit transactions -------------------------------------------------------------

    async def _end_implicit(self, failed: bool) -> None:
        """End the protocol's implicit transaction (after a Query's statements, at Sync)."""
        session = self.session
        if session is None:
            return
        try:
            if session.ends_without_duckdb():
                session.end_implicit(failed)  # bookkeeping only: no need for the thread pool
            else:
                await self.call(session.end_implicit, failed)
        except Exception as exc:  # noqa: BLE001 - a failed COMMIT is the client's error
            self._send_error(exc)


# Malformed messages of these kinds are dropped, as the rest of a failed COPY's data is.
_COPY_KINDS = frozenset({b"d", b"c", b"f"})
_COPY_MESSAGES = frozenset({protocol.CopyData, protocol.CopyDone, protocol.CopyFail})
# The messages that work on statements and portals (the rest: Sync, Flush, ends, leftovers).
_STATEMENT_MESSAGES = frozenset({protocol.Query, protocol.Parse, protocol.Bind,
                                 protocol.Describe, protocol.Execute, protocol.Close})


def _simple(message: protocol.FrontendMessage) -> bool:
    """Whether a message belongs to the simple query protocol (answered with ReadyForQuery;
    the extended protocol's messages are skipped up to Sync after an error)."""
    kind = type(message)
    return kind is protocol.Query or (kind is protocol.Malformed and message.kind == b"Q")


@dataclass(frozen=True, slots=True)
class _Chunk:
    messages: bytes  # DataRow messages
    rows: int
    done: bool  # the portal has no rows left


def _next_rows(session: Session, portal: Portal, max_rows: int, timezone: dt.tzinfo,
               encodings: _Encodings) -> _Chunk:
    """Start the portal if it has not run yet, then read and encode its next rows: at most
    `ENCODE_BATCH_ROWS` (and `max_rows` when > 0). Runs on the thread pool."""
    if not portal.started:
        session.start(portal)
    else:
        session.arm_timeout()  # a suspended portal's next Execute
    result = portal.result
    assert result is not None
    if result.columns is None:
        return _Chunk(b"", 0, True)
    want = ENCODE_BATCH_ROWS if max_rows <= 0 else min(max_rows, ENCODE_BATCH_ROWS)
    batches, count = [], 0
    while count < want:
        batch = session.read(portal, want - count)
        if batch is None:
            break
        batches.append(batch)
        count += batch.num_rows
    done = count < want
    if not batches:
        return _Chunk(b"", 0, True)
    # One batch (a small result's) is encoded as it is, without a table around it.
    rows: pa.RecordBatch | pa.Table = batches[0] if len(batches) == 1 else (
        pa.Table.from_batches(batches))
    plan = encodings.plan(result.columns, portal.promised, portal.formats, rows.schema)
    if plan.targets is not None:
        assert portal.promised is not None
        rows = _conform(pa.Table.from_batches(batches), portal.promised, plan.targets)
    if count < VECTORIZED_MIN_ROWS:
        values = [encode.encode_column(rows.column(i), fmt, timezone, wire)
                  for i, (fmt, wire) in enumerate(zip(plan.formats, plan.wires, strict=True))]
        return _Chunk(b"".join(protocol.data_rows(values, count)), count, done)
    columns = [encode.encode_values(rows.column(i), fmt, timezone, wire)
               for i, (fmt, wire) in enumerate(zip(plan.formats, plan.wires, strict=True))]
    return _Chunk(protocol.row_messages(columns), count, done)


@dataclass(frozen=True, slots=True)
class _Encoding:
    """How rows of one schema go out for one set of described columns and result formats."""

    described: tuple[Column, ...]  # the columns it was made for (held: the key is their id)
    schema: pa.Schema  # the rows' schema, as DuckDB gave it
    # The promised columns' types, where the rows must be cast to them (`_conform`); else None.
    targets: tuple[pa.DataType, ...] | None
    formats: tuple[int, ...]  # per column
    wires: tuple[PgType, ...]  # per column: the type RowDescription announces and values take


class _Encodings:
    """A connection's `_Encoding`s, by the described columns and result format codes: a
    prepared statement's executions bring the same columns (the same tuple: the session's
    caches keep it), formats and schema, so what they imply is found once, not per execution.
    Safe from the worker threads (the connection's calls run one at a time)."""

    LIMIT = 256  # encodings kept; past it, the map starts again

    def __init__(self) -> None:
        self._kept: dict[tuple[int, tuple[int, ...]], _Encoding] = {}

    def plan(self, columns: tuple[Column, ...], promised: tuple[Column, ...] | None,
             codes: tuple[int, ...], schema: pa.Schema) -> _Encoding:
        """How to send rows of `schema` of a result whose columns are `columns`, as `promised`
        (when the client was told about them) in Bind's format `codes`; raises `_conform`'s
        and `result_formats`' errors."""
        described = columns if promised is None else promised
        key = (id(described), codes)
        kept = self._kept.get(key)
        if kept is not None and kept.described is described and kept.schema.equals(schema):
            return kept
        types = schema.types
        targets = None
        if promised is not None:
            if len(promised) != len(types):
                # PostgreSQL's words when a prepared statement's result shape changes.
                raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                               "cached plan must not change result type")
            # A column described as NULL-typed (a bare parameter bound to NULL) is sent as text.
            promised_types = [pa.string() if pa.types.is_null(c.type) else c.type
                              for c in promised]
            if promised_types != types:
                targets = tuple(promised_types)
            types = promised_types
        formats = tuple(result_formats(codes, len(types)))
        # Each column encoded as the type RowDescription announces (its origin may declare one).
        origins = [c.origin for c in described] if len(described) == len(types) else (
            [NO_ORIGIN] * len(types))
        wires = tuple(wire_type(t, origin)[0] for t, origin in zip(types, origins, strict=True))
        encoding = _Encoding(described, schema, targets, formats, wires)
        if len(self._kept) >= self.LIMIT:
            self._kept.clear()
        self._kept[key] = encoding
        return encoding


def _conform(table: pa.Table, columns: Sequence[Column], targets: Sequence[pa.DataType]
             ) -> pa.Table:
    """The result cast to the column types the client was promised (`targets`: those of
    `columns`, one per column of `table`, as `_Encodings.plan` found them)."""
    try:
        return pa.table([col if col.type == target else col.cast(target)
                         for col, target in zip(table.columns, targets, strict=True)],
                        names=[c.name for c in columns])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "cached plan must not change result type",
                       detail=str(exc)) from None

"""A client session: run-time parameters, its transaction, its portals, and statement dispatch.

Contract: one `Session` per client connection, used from one worker thread at a time (the protocol
code runs it off the event loop); `cancel()` may be called from any thread. Statements are
prepared by the `Planner`, which decides their `Kind`; the session answers what PostgreSQL
clients ask of the session itself — SET/RESET/SHOW of the parameters it knows (DateStyle,
statement_timeout, ...; `SET SESSION CHARACTERISTICS AS TRANSACTION` and `SET TRANSACTION`
included), transaction control with savepoints (`server.transaction`), SQL cursors (DECLARE,
FETCH, MOVE, CLOSE over `server.portal`), LISTEN / UNLISTEN / NOTIFY, which take effect when
their transaction commits (`listening`; committed notifications wait in `outbox` for the
connection to publish), and LOCK TABLE (in the server's lock table, `Backend.locks`, until the
block ends) — and hands everything else to the planner. A block's SET LOCALs, and every SET of
a block that rolls back, are undone when it ends, as PostgreSQL's; the TimeZone setting is
DuckDB's too, so timestamptz text is read, and days cut, in the session's zone.

COPY's rows go in batch by batch through `copy_in` (one transaction), a pipelined batch of
INSERTs in one go through `insert_many`. Statements are classified once per text while no DDL
ran in any session (`CatalogGeneration`).

The session's DuckDB connection runs one statement at a time: a portal whose rows are still
streaming from DuckDB is detached (its remaining rows buffered) before anything else runs there.
Portals end with their transaction, except cursors declared WITH HOLD, which are read into memory
at COMMIT. `statement_timeout` interrupts a statement (its start and the reading of its rows)
that runs longer, with 57014 as in PostgreSQL. A statement alone in its transaction that fails on
a write conflict runs again once the transaction it met may have ended, as PostgreSQL's writer
waits on the row's lock (`write_conflicts`; lock_timeout bounds the wait, 55P03).

A session of a server has its `backend` (`server.activity`): its planner's catalog acts as it
(pg_backend_pid, pg_stat_activity, pg_cancel_backend, ...), the AI operators it runs report
their progress to it, and `heron.progress` / `heron.progress_interval` (on, 2s by default)
decide how often the backend words that progress as NOTICEs.
"""

from __future__ import annotations

import collections
import contextlib
import re
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from heron.catalog import Database
from heron.catalog.database import TIME_ZONE
from heron.engine.api import Engine
from heron.planner import (
    Column,
    Kind,
    Planner,
    Result,
    SqlError,
    SqlState,
    Statement,
    constraint_names,
    dialect,
    pg_semantics,
    shared_macros,
)
from heron.planner import settings as planner_settings
from heron.planner.access import Privileges
from heron.planner.commands import (
    CloseCommand,
    ConstraintsCommand,
    DeclareCommand,
    DiscardCommand,
    FetchCommand,
    Isolation,
    ListenCommand,
    LockCommand,
    NotifyCommand,
    SavepointCommand,
    SessionCommand,
    TransactionOptions,
    read_transaction_settings,
)
from heron.planner.copy_statement import CopyCommand
from heron.planner.errors import in_failed_transaction, query_canceled
from heron.planner.existence import find_relation
from heron.planner.pg_activity import NO_SERVER
from heron.planner.pg_advisory import Mode
from heron.planner.pg_types import is_list
from heron.planner.role_statements import run as run_role_statement
from heron.planner.shared_reads import SharedReads
from heron.planner.statement import DATA_KINDS, Rows
from heron.server import write_conflicts
from heron.server.activity import Backend
from heron.server.portal import Portal
from heron.server.transaction import READ_ONLY_KINDS, Transaction, TransactionStatus
from heron.server.write_conflicts import Writer, Writers

SERVER_VERSION = "16.4 (Heron 0.1.0)"
SERVER_VERSION_NUM = "160004"  # PostgreSQL's integer spelling of 16.4

# Reported to the client in ParameterStatus at start-up and whenever they change (PostgreSQL 16's
# set); the keys keep PostgreSQL's spelling, look-ups are case-insensitive.
REPORTED_DEFAULTS = {
    "application_name": "",
    "client_encoding": "UTF8",
    "DateStyle": "ISO, MDY",
    "default_transaction_read_only": "off",
    "in_hot_standby": "off",
    "integer_datetimes": "on",
    "IntervalStyle": "postgres",
    "is_superuser": "on",
    "scram_iterations": "4096",
    "server_encoding": "UTF8",
    "server_version": SERVER_VERSION,
    "session_authorization": "",
    "standard_conforming_strings": "on",
    "TimeZone": TIME_ZONE,
}
# Settable and showable, but not reported.
OTHER_DEFAULTS = {
    "extra_float_digits": "1",
    "search_path": '"$user", public',
    "statement_timeout": "0",
    "lock_timeout": "0",
    "idle_in_transaction_session_timeout": "0",
    "client_min_messages": "notice",
    "bytea_output": "hex",
    "max_identifier_length": "63",
    # DuckDB's snapshot isolation is PostgreSQL's REPEATABLE READ (PostgreSQL's own default is
    # READ COMMITTED); any level may be asked for and is shown, the behavior stays the same.
    "default_transaction_isolation": "repeatable read",
    "default_transaction_deferrable": "off",
    "jit": "off",
    "server_version_num": SERVER_VERSION_NUM,
    # What pg_dump's scripts set first; Heron's behavior is these values' whatever is set.
    "check_function_bodies": "on",
    "xmloption": "content",
    "row_security": "on",
    "default_tablespace": "",
    "default_table_access_method": "heap",
    # While an AI statement runs, a NOTICE per operator this often (server.activity).
    "heron.progress": "on",
    "heron.progress_interval": "2s",
    **planner_settings.DEFAULTS,
}
READ_ONLY = {"server_version", "server_version_num", "server_encoding", "integer_datetimes",
             "in_hot_standby", "is_superuser", "max_identifier_length", "session_authorization"}
# Settings of the open transaction: the session's `Transaction` holds them.
TRANSACTION_SETTINGS = {"transaction_isolation", "transaction_read_only",
                        "transaction_deferrable"}

CLASSIFIED_CACHE = 512  # statement texts whose classification a session keeps
_SHOW_ALIASES = {"transaction isolation level": "transaction_isolation", "time zone": "TimeZone"}
# A time setting: a number and an optional unit (milliseconds without one), as PostgreSQL reads it.
_DURATION = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|min|h|d)?\s*$",
                       re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_BOOLEAN = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False,
            "no": False, "0": False}


class CatalogGeneration:
    """How many statements that can change what a name binds to (DDL, DuckDB settings, the end
    of a transaction that ran DDL) have run, in any session of one database: a statement
    classified at a generation binds the same way while it lasts. `reads` are what the
    sessions read of the catalog alike, kept per generation."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()
        self.reads = SharedReads()

    def advance(self) -> None:
        with self._lock:
            self.value += 1


# What a failed transaction block still runs.
_RUN_IN_FAILED_BLOCK = frozenset({Kind.COMMIT, Kind.ROLLBACK, Kind.ROLLBACK_TO, Kind.EMPTY})


@dataclass
class Session:
    database: Database
    engine: Engine | None = None
    user: str = "heron"
    database_name: str = "heron"
    parameters: dict[str, str] = field(default_factory=dict)
    generation: CatalogGeneration = field(default_factory=CatalogGeneration)
    # The server's own defaults (`heron serve` flags), in place of the built-in ones: what RESET
    # goes back to, as postgresql.conf's values are in PostgreSQL.
    server_settings: dict[str, str] = field(default_factory=dict)
    backend: Backend | None = None  # the server's entry for this session (pg_stat_activity)
    writers: Writers = field(default_factory=Writers)  # the server's (`write_conflicts`)

    def __post_init__(self) -> None:
        self._settings = {k.lower(): (k, v) for k, v in self._defaults_by_name().items()}
        self._settings["session_authorization"] = ("session_authorization", self.user)
        # Settings a transaction block changed: their values before it, and whether SET LOCAL
        self._before_block: dict[str, tuple[tuple[str, str], bool]] = {}
        role = self.database.roles.get(self.user)
        self._settings["is_superuser"] = ("is_superuser",
                                          "on" if role is not None and role.superuser else "off")
        for name, value in list(self.parameters.items()):
            self._set(name, value)
        con = self.database.connect(self.generation.value)  # (`pg_semantics.configure`d)
        self.planner = Planner(con, self.engine, statistics=self.database.statistics,
                               answers=self.database.answers, user=self.user,
                               server_version=SERVER_VERSION,
                               caller=self.backend.caller if self.backend else NO_SERVER,
                               progress=self.backend, settings=self._published(),
                               generation=lambda: self.generation.value,
                               shared=self.generation.reads)
        if self._settings["timezone"][1] != TIME_ZONE:  # (new connections start in it)
            self._time_zone(self._settings["timezone"][1])
        self.transaction = Transaction(self.planner, Writer(self.writers))
        if self.backend is not None:  # an advisory lock's wait gives up when this is set
            self.backend.cancelled = self.planner.cancelled
        self.portals: dict[str, Portal] = {}
        self._live: list[Rows] = []  # rows still streaming from the DuckDB connection
        self._timer: threading.Timer | None = None
        self._classified: collections.OrderedDict[str, tuple[int, Statement]] = (
            collections.OrderedDict())
        self._catalog_changed_in_block = False
        self._privileges = Privileges(
            lambda: self.database.table_functions(self.generation.value))
        self.listening: set[str] = set()  # channels LISTENed on, as of the last commit
        self.outbox: list[tuple[str, str]] = []  # committed NOTIFYs: (channel, payload)
        self._listen_changes: list[ListenCommand] = []  # of the open block
        self._notifies: list[tuple[str, str]] = []  # of the open block
        self._timed_out = threading.Event()
        self._settings_changed(published=True)

    @property
    def transaction_status(self) -> TransactionStatus:
        return self.transaction.status

    # -- parameters -----------------------------------------------------------------------

    def reported(self) -> dict[str, str]:
        """The ParameterStatus values, keyed by PostgreSQL's spelling."""
        return {k: self._settings[k.lower()][1] for k in REPORTED_DEFAULTS}

    def setting(self, name: str) -> str:
        key = name.lower()
        if key == "transaction_isolation":
            return self.transaction.isolation.value if self._in_block() else self.setting(
                "default_transaction_isolation")
        if key == "transaction_read_only":
            read_only = self.transaction.read_only if self._in_block() else self._flag(
                "default_transaction_read_only")
            return "on" if read_only else "off"
        if key == "transaction_deferrable":
            return self.setting("default_transaction_deferrable")
        try:
            return self._settings[key][1]
        except KeyError:
            raise SqlError(SqlState.UNDEFINED_OBJECT,
                           f'unrecognized configuration parameter "{name}"') from None

    def _in_block(self) -> bool:
        return self.transaction.status is not TransactionStatus.IDLE

    def _flag(self, name: str) -> bool:
        return _BOOLEAN.get(self.setting(name).lower(), False)

    def _show_column(self, name: str) -> str:
        """SHOW's result column: the setting's name as PostgreSQL spells it (TimeZone)."""
        name = _SHOW_ALIASES.get(name.lower(), name)
        return self._settings.get(name.lower(), (name.lower(), ""))[0]

    def _published(self) -> dict[str, str]:
        """The settings as current_setting() in SQL reads them."""
        return {k: v for k, (_, v) in self._settings.items()}

    def _settings_changed(self, *, published: bool = False) -> None:
        """Let current_setting() in SQL see the session's settings (unless the planner was just
        given them); keep what statements read of them at hand."""
        if not published:
            self.planner.publish_settings(self._published())
        self._timeout_ms = _duration_ms(self.setting("statement_timeout"))
        self._lock_timeout_ms = _duration_ms(self.setting("lock_timeout"))
        if self.backend is not None:
            self.backend.progress_interval = _duration_ms(self.setting(
                "heron.progress_interval")) / 1000 if self._flag("heron.progress") else None
        self._defaults = TransactionOptions(
            isolation=Isolation(self.setting("default_transaction_isolation")),
            read_only=self._flag("default_transaction_read_only"))

    def _set(self, name: str, value: str) -> None:
        key = name.lower()
        if key in READ_ONLY:
            raise SqlError(SqlState.CANT_CHANGE_RUNTIME_PARAM,
                           f'parameter "{name}" cannot be changed')
        if key == "client_encoding" and value.upper().replace("-", "") not in {"UTF8", "UNICODE"}:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f"client encoding {value!r} is not supported; use UTF8")
        canonical = self._settings.get(key, (name, ""))[0]
        value = planner_settings.check(key, value)
        if key == "client_encoding":
            value = "UTF8"
        elif key in ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
                     "heron.progress_interval"):
            value = _duration_text(name, value)
        elif key in ("default_transaction_isolation", "transaction_isolation"):
            value = _isolation(value).value
        elif key in ("default_transaction_read_only", "transaction_read_only",
                     "default_transaction_deferrable", "transaction_deferrable",
                     "heron.progress", "check_function_bodies", "row_security"):
            value = "on" if _boolean(name, value) else "off"
        elif key in _CHOICES:
            value = _choice(name, value, _CHOICES[key])
        if key in TRANSACTION_SETTINGS:
            self._set_transaction(key, value)
            return
        if key == "timezone" and hasattr(self, "planner"):  # (at start-up: once it exists)
            self._time_zone(value)
        self._settings[key] = (canonical, value)

    def _time_zone(self, zone: str) -> None:
        """DuckDB's TimeZone made the session's: a timestamptz literal, now()::date, date_trunc
        and extract of a timestamptz then read and cut days in the session's zone, as
        PostgreSQL's do (the wire's text of a timestamptz already uses it)."""
        try:
            self.planner.con.execute("SET TimeZone = ?", [zone])
        except duckdb.Error:
            raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                           f'invalid value for parameter "TimeZone": "{zone}"') from None

    def _set_transaction(self, key: str, value: str) -> None:
        """SET transaction_isolation / transaction_read_only: only inside a block, as
        PostgreSQL's SET TRANSACTION (outside one it warns and does nothing)."""
        if not self._in_block():
            return
        if key == "transaction_isolation":
            self.transaction.set_options(TransactionOptions(isolation=Isolation(value)))
        elif key == "transaction_read_only":
            self.transaction.set_options(TransactionOptions(read_only=value == "on"))

    # -- statements -----------------------------------------------------------------------

    def prepare(self, sql: str) -> Statement:
        """Classify and plan `sql` (or take it from the cache, see `cached`)."""
        try:
            statement = self.cached(sql)
            if statement is None:
                generation = self.generation.value
                self._free_connection()  # planning may query DuckDB (the catalog, AI views)
                statement = self.planner.plan(self.planner.classify(sql))
                if statement.ai is None:  # AI plans bind to the catalog: planned every time
                    self._classified[sql] = (generation, statement)
                    if len(self._classified) > CLASSIFIED_CACHE:
                        self._classified.popitem(last=False)
            self.admit(statement)
            return statement
        except SqlError:
            self.transaction.fail()
            raise

    def cached(self, sql: str) -> Statement | None:
        """`sql`'s statement as classified before, if no DDL ran since (drivers send the same
        text again and again); cheap enough for the event loop."""
        entry = self._classified.get(sql)
        if entry is None or entry[0] != self.generation.value:
            return None
        self._classified.move_to_end(sql)
        return entry[1]

    def admit(self, statement: Statement) -> None:
        """Refuse (25P02) what a failed transaction block does not run: all but its end, a
        rollback to a savepoint (and the empty query); refuse (42501) what the session's role may
        not run."""
        self._admit(statement, self._answers(statement))

    def _admit(self, statement: Statement, answers: bool) -> None:
        """`admit`, `answers` being `_answers(statement)`."""
        if self.transaction.status is TransactionStatus.FAILED and statement.kind not in (
                _RUN_IN_FAILED_BLOCK):
            raise in_failed_transaction()
        if not answers:
            self._privileges.check(self.planner.con, statement.sql,
                                   self.database.roles.get(self.user),
                                   main_database=self.database.catalog_name,
                                   generation=self.generation.value)

    def _answers(self, statement: Statement) -> bool:
        """Whether the session answers this statement itself (else the planner runs it)."""
        if statement.kind not in (Kind.SET, Kind.RESET, Kind.SHOW):
            return statement.kind in _SESSION_KINDS
        if statement.command is None:
            return False
        name = _SHOW_ALIASES.get(statement.command.name.lower(), statement.command.name).lower()
        return (name in self._settings or name in TRANSACTION_SETTINGS
                or (statement.kind is Kind.RESET and name == "all"))

    def describe(self, statement: Statement, params: Sequence[Any] | None = None
                 ) -> tuple[Column, ...] | None:
        """See `Planner.describe`; nothing runs."""
        if statement.kind is Kind.SHOW and self._answers(statement):
            assert isinstance(statement.command, SessionCommand)
            return (Column(self._show_column(statement.command.name), pa.string()),)
        if statement.kind is Kind.FETCH and isinstance(statement.command, FetchCommand):
            portal = self.portals.get(statement.command.cursor)
            return None if portal is None or portal.result is None else portal.result.columns
        if self._answers(statement):
            return None
        return self.planner.describe(statement, params)

    def execute(self, statement: Statement, params: Sequence[Any] = (), *, stream: bool = False
                ) -> Result:
        """Run one statement; with `stream`, a SELECT's rows are read from DuckDB as they are
        taken (see `Rows`)."""
        answers = self._answers(statement)
        self._admit(statement, answers)
        try:
            if answers:
                return self._command(statement, params)
            return self._run(statement, tuple(params), stream=stream)
        except SqlError:
            self.transaction.fail()
            raise

    def _run(self, statement: Statement, params: tuple[Any, ...], *, stream: bool) -> Result:
        """A statement for the planner (DuckDB and the engine), under statement_timeout."""
        self._free_connection()
        self.transaction.before(statement)
        self.arm_timeout()
        changes = statement.kind not in DATA_KINDS
        if changes:
            self._changes_catalog()
        try:
            result = self._execute_waiting(statement, params, stream)
        except SqlError as exc:
            self.disarm_timeout()
            raise self._canceled(exc) from None
        finally:
            if changes and self.transaction.status is TransactionStatus.IDLE:
                # Done and committed: what was looked up while it ran is stale again.
                self.generation.advance()
        if result.rows is not None and result.rows.live:
            self._live.append(result.rows)  # the timeout stays armed while its rows stream
        else:
            self.disarm_timeout()
        if statement.kind in (Kind.SET, Kind.RESET) or statement.verb == "USE":
            shared_macros.use(self.planner.con)  # DuckDB's search path may have been replaced
        self.transaction.after(statement, params, result)
        return result

    def _execute_waiting(self, statement: Statement, params: tuple[Any, ...], stream: bool
                         ) -> Result:
        """The planner's run of `statement`. One that fails on a write conflict while it is alone
        in its transaction runs again on a new snapshot once the rival's transaction may have
        ended, as PostgreSQL's waits on the row's lock (`write_conflicts`): a wait that passes
        lock_timeout fails with 55P03, one cancelled or past statement_timeout with 57014."""
        writer = self.transaction.writer
        deadline = (time.monotonic() + self._lock_timeout_ms / 1000
                    if self._lock_timeout_ms > 0 else None)
        conflicts = 0
        while True:
            autocommit = self.transaction.status is TransactionStatus.IDLE and (
                statement.kind not in READ_ONLY_KINDS)
            since = writer.ended_elsewhere()
            if autocommit:
                writer.begins()
            try:
                return self.planner.execute(statement, params, stream=stream)
            except SqlError as exc:
                if exc.sqlstate is not SqlState.SERIALIZATION_FAILURE or not (
                        self.transaction.alone):
                    raise
                conflict = exc
            finally:
                if autocommit:
                    writer.ends()
            if not autocommit:
                self.transaction.restore(0)  # (alone: nothing before it to replay)
            self._wait_for_writers(since, deadline, conflict)
            conflicts += 1
            write_conflicts.backoff(conflicts)
            self.transaction.before(statement)

    def _wait_for_writers(self, since: int, deadline: float | None, conflict: SqlError
                          ) -> None:
        """Wait until a statement that met a write conflict may run again (`Writer.wait`), or
        raise why it will not."""
        backend = self.backend
        cancelled = self.planner.cancelled

        def stop() -> bool:
            return cancelled.is_set() or (backend is not None and backend.gone.is_set()) or (
                deadline is not None and time.monotonic() >= deadline)

        if self.transaction.writer.wait(since, stop):
            return
        if cancelled.is_set():
            cancelled.clear()  # (the planner clears it after its own statements)
            raise query_canceled()
        if deadline is not None and time.monotonic() >= deadline:
            raise SqlError(SqlState.LOCK_NOT_AVAILABLE, "canceling statement due to lock timeout")
        raise conflict

    def insert_many(self, statement: Statement, rows: Sequence[Sequence[Any]]) -> bool:
        """Run an INSERT for each parameter row in one DuckDB statement (a pipelined batch).
        True once all are in; False, with the transaction as it was before, when the batch
        cannot run that way or failed — the caller then runs the rows one by one, so the client
        gets PostgreSQL's answer for each."""
        self.admit(statement)
        self._free_connection()
        self.transaction.before(statement)
        mark = self.transaction.mark()
        try:
            done = self.planner.insert_many(statement, rows)
        except SqlError:
            self.transaction.fail()
            if self.transaction.restore(mark):
                return False
            raise
        if done:
            tag = Result("INSERT 0 1", None, None)
            for params in rows:
                self.transaction.after(statement, tuple(params), tag)
        return done

    def read(self, portal: Portal, max_rows: int) -> pa.RecordBatch | None:
        """A portal's next rows (see `Portal.next`), under statement_timeout."""
        try:
            batch = portal.next(max_rows)
        except SqlError as exc:
            self.disarm_timeout()
            self.transaction.fail()
            raise self._canceled(exc) from None
        if batch is None:
            self.disarm_timeout()
        return batch

    def _changes_catalog(self) -> None:
        """A statement may change what names bind to: cached classifications are stale, now
        and (for the other sessions, which see it then) when its transaction ends."""
        self.generation.advance()
        self._catalog_changed_in_block = self.transaction.status is not (
            TransactionStatus.IDLE)

    def _free_connection(self) -> None:
        """Detach rows still streaming, so the DuckDB connection can run something else."""
        for rows in self._live:
            rows.detach()
        self._live.clear()

    # -- statement_timeout ------------------------------------------------------------------

    def arm_timeout(self) -> None:
        """Start statement_timeout's clock (PostgreSQL runs it while a message is worked on)."""
        self.disarm_timeout()
        if self._timeout_ms > 0:
            self._timed_out.clear()
            self._timer = threading.Timer(self._timeout_ms / 1000, self._time_out)
            self._timer.daemon = True
            self._timer.start()

    def _time_out(self) -> None:
        self._timed_out.set()
        self.planner.interrupt()

    def disarm_timeout(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _canceled(self, exc: SqlError) -> SqlError:
        if exc.sqlstate is SqlState.QUERY_CANCELED and self._timed_out.is_set():
            self._timed_out.clear()
            return query_canceled("statement timeout")
        return exc

    # -- commands the session answers -------------------------------------------------------

    def _command(self, statement: Statement, params: Sequence[Any]) -> Result:
        kind, command = statement.kind, statement.command
        if kind in _TRANSACTION_KINDS:
            return self._transaction(statement)
        if kind is Kind.ROLE:
            return run_role_statement(statement.sql, self.database.roles, self.user,
                                      self.planner.con)
        if kind in {Kind.DECLARE, Kind.FETCH, Kind.CLOSE}:
            return self._cursor(statement, params)
        if kind is Kind.COPY_OUT:
            return self._copy_out(statement)
        if isinstance(command, ListenCommand):
            self._listen_changes.append(command)
            if not self._in_block():
                self._settle_notifications(committed=True)
            return Result(statement.verb, None, None)
        if isinstance(command, DiscardCommand):
            return self._discard(command)
        if isinstance(command, LockCommand):
            return self._lock(command)
        if isinstance(command, ConstraintsCommand):
            return self._set_constraints(command)
        if isinstance(command, NotifyCommand):
            if (command.channel, command.payload) not in self._notifies:  # as PostgreSQL folds
                self._notifies.append((command.channel, command.payload))
            if not self._in_block():
                self._settle_notifications(committed=True)
            return Result("NOTIFY", None, None)
        if kind is Kind.COPY_IN:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "COPY FROM STDIN is answered by the COPY sub-protocol")
        assert isinstance(command, SessionCommand)
        if kind is Kind.SHOW:
            name = _SHOW_ALIASES.get(command.name.lower(), command.name)
            column = self._show_column(command.name)
            table = pa.table({column: [self.setting(name)]})
            return Result("SHOW", (Column(column, pa.string()),), Rows.of(table))
        if kind is Kind.SET and command.local and not self._explicit_block():
            # PostgreSQL's SET LOCAL outside a block lasts as long as its statement: no effect
            return Result("SET", None, None,
                          warnings=("SET LOCAL can only be used in transaction blocks",))
        if self._explicit_block():  # what the block's end gives back (`_block_ended`)
            for name in [s.name for s in read_transaction_settings(statement.sql) or (command,)]:
                key = name.lower()
                if key in self._settings and key not in TRANSACTION_SETTINGS:
                    saved = self._before_block.setdefault(key, (self._settings[key], False))
                    self._before_block[key] = (saved[0], saved[1] or command.local)
        if kind is Kind.SET:
            for setting in read_transaction_settings(statement.sql) or (command,):
                if setting.value is None:
                    self._reset(setting.name)
                else:
                    self._set(setting.name, setting.value)
        else:
            self._reset(command.name)
        self._settings_changed()
        return Result(kind.name, None, None)

    def _discard(self, command: DiscardCommand) -> Result:
        """DISCARD, as PostgreSQL's: TEMP drops the session's temporary tables, views and
        sequences; SEQUENCES forgets what currval and lastval answer; PLANS the statements
        classified; ALL (not in a block: 25001) does all three after CLOSE ALL, RESET ALL,
        UNLISTEN * and pg_advisory_unlock_all() (the connection then forgets its prepared
        statements, DEALLOCATE ALL)."""
        what = command.what
        if what == "ALL":
            if self._explicit_block():
                raise SqlError(SqlState.ACTIVE_SQL_TRANSACTION,
                               "DISCARD ALL cannot run inside a transaction block")
            for name in [n for n, p in self.portals.items() if p.cursor is not None]:
                self.close_portal(name)
            self._reset("all")
            self._settings_changed()
            self._listen_changes.append(ListenCommand(None, listen=False))
            self._settle_notifications(committed=True)
            if self.backend is not None:
                self.backend.locks.release_all(self.backend.pid, transaction_too=False)
        if what in ("ALL", "TEMP"):
            self._drop_temporary()
        if what in ("ALL", "SEQUENCES"):
            self.planner.discard_sequences()
        if what in ("ALL", "PLANS"):
            self._classified.clear()
        return Result(f"DISCARD {what}", None, None)

    def _drop_temporary(self) -> None:
        """The session's temporary views, tables and sequences dropped, each as a DROP the
        client sent (so what Heron keeps of a table goes with it)."""
        found = self.planner.con.execute(
            "SELECT 'VIEW', view_name FROM duckdb_views() WHERE temporary AND NOT internal "
            "UNION ALL SELECT 'TABLE', table_name FROM duckdb_tables() WHERE temporary "
            "UNION ALL SELECT 'SEQUENCE', sequence_name FROM duckdb_sequences() "
            "WHERE temporary").fetchall()
        for kind, name in found:
            quoted = '"' + name.replace('"', '""') + '"'
            self.execute(self.prepare(f"DROP {kind} IF EXISTS temp.main.{quoted} CASCADE"))

    def _explicit_block(self) -> bool:
        return self._in_block() and not self.transaction.implicit

    def _restore_block_settings(self, *, committed: bool) -> None:
        """At a block's end: the settings a rolled-back block SET, or any block SET LOCAL, go
        back to their values before it, as PostgreSQL's do."""
        saved, self._before_block = self._before_block, {}
        restored = False
        for key, (before, local) in saved.items():
            if local or not committed:
                if key == "timezone":
                    self._time_zone(before[1])
                self._settings[key] = before
                restored = True
        if restored:
            self._settings_changed()

    def _set_constraints(self, command: ConstraintsCommand) -> Result:
        """SET CONSTRAINTS: in a transaction block, the planner's (`Planner.set_constraints`:
        only DEFERRABLE foreign keys defer, other named constraints set DEFERRED are 42809). A
        name no constraint has is 42704; outside a transaction block, a warning, as
        PostgreSQL's."""
        for parts in command.names:
            if not constraint_names.exists(self.planner.con, parts):
                raise SqlError(SqlState.UNDEFINED_OBJECT,
                               f'constraint "{parts[-1]}" does not exist')
        if not self._explicit_block():
            return Result("SET CONSTRAINTS", None, None, warnings=(
                "SET CONSTRAINTS can only be used in transaction blocks",))
        self.planner.set_constraints(command.names, command.deferred)
        return Result("SET CONSTRAINTS", None, None)

    def _lock(self, command: LockCommand) -> Result:
        """LOCK TABLE: each table's lock taken for the rest of the block, in the server's lock
        table beside the advisory locks (`Backend.locks`, keyed by the table's OID, in its
        mode): DuckDB has no table locks, so only LOCK TABLEs wait on each other (what
        migration tools use them for). Waits end on cancel or statement_timeout (57014);
        NOWAIT fails at once (55P03)."""
        if not self._explicit_block():
            raise SqlError(SqlState.NO_ACTIVE_SQL_TRANSACTION,
                           "LOCK TABLE can only be used in transaction blocks")
        relations = [find_relation(self.planner.con, parts) for parts in command.tables]
        backend = self.backend
        if backend is None:  # a session without a server: nobody to wait for
            return Result("LOCK TABLE", None, None)
        self.arm_timeout()
        try:
            for relation in relations:
                if not backend.locks.acquire(
                        backend.pid, (LOCK_KEY_SPACE, relation.oid, 0),
                        mode=Mode(command.mode), transaction=True,
                        wait=not command.nowait,
                        stop=lambda: backend.cancelled.is_set() or backend.gone.is_set()):
                    if command.nowait:
                        raise SqlError(SqlState.LOCK_NOT_AVAILABLE,
                                       f'could not obtain lock on relation "{relation.name}"')
                    raise self._canceled(query_canceled())
        finally:
            self.disarm_timeout()
            self.planner.cancelled.clear()  # (the planner clears it after its own statements)
        return Result("LOCK TABLE", None, None)

    def _defaults_by_name(self) -> dict[str, str]:
        return {**OTHER_DEFAULTS, **REPORTED_DEFAULTS, **self.server_settings}

    def _reset(self, name: str) -> None:
        key = name.lower()
        defaults = {k.lower(): v for k, v in self._defaults_by_name().items()}
        if key == "all":
            for setting, value in defaults.items():
                if setting not in READ_ONLY:
                    self._set(setting, value)
        elif key in defaults:
            self._set(key, defaults[key])

    def _transaction(self, statement: Statement) -> Result:
        kind, command = statement.kind, statement.command
        if kind is Kind.BEGIN:
            options = command if isinstance(command, TransactionOptions) else TransactionOptions()
            warning = self.transaction.begin(options, self._defaults)
            return Result("BEGIN", None, None, warnings=_warning(warning))
        if kind in {Kind.COMMIT, Kind.ROLLBACK}:
            return self._end(commit=kind is Kind.COMMIT)
        assert isinstance(command, SavepointCommand)
        if kind is Kind.SAVEPOINT:
            self.transaction.savepoint(command.name)
            return Result("SAVEPOINT", None, None)
        if kind is Kind.RELEASE:
            self.transaction.release(command.name)
            return Result("RELEASE", None, None)
        self._free_connection()
        try:
            self.transaction.rollback_to(command.name)
        finally:
            if self._catalog_changed_in_block:  # the replay may have undone DDL
                self.generation.advance()
        return Result("ROLLBACK", None, None)

    def _end(self, *, commit: bool) -> Result:
        """COMMIT or ROLLBACK of the open block (portals end with it)."""
        committed = commit and self.transaction.status is TransactionStatus.IN_BLOCK
        self._end_portals(commit=committed)
        try:
            tag, warning = self.transaction.commit() if commit else self.transaction.rollback()
        except SqlError:
            committed = False
            raise
        finally:
            self._block_ended(committed=committed)
        return Result(tag, None, None, warnings=_warning(warning))

    def _block_ended(self, *, committed: bool) -> None:
        self._settle_notifications(committed=committed)
        self._restore_block_settings(committed=committed)
        self._release_transaction_locks()
        if self._catalog_changed_in_block:  # committed, or rolled back: either way, news
            self._catalog_changed_in_block = False
            self.generation.advance()

    def _settle_notifications(self, *, committed: bool) -> None:
        """LISTEN/UNLISTEN take effect and NOTIFYs are sent when their transaction commits;
        a rollback forgets them."""
        if not (self._listen_changes or self._notifies):
            return
        if committed:
            for change in self._listen_changes:
                if change.channel is None:
                    self.listening.clear()
                elif change.listen:
                    self.listening.add(change.channel)
                else:
                    self.listening.discard(change.channel)
            self.outbox.extend(self._notifies)
        self._listen_changes.clear()
        self._notifies.clear()

    def begin_implicit(self) -> None:
        self.transaction.begin_implicit(self._defaults)

    def ends_without_duckdb(self) -> bool:
        """Whether ending the implicit block is bookkeeping only (DuckDB's transaction was never
        begun and no portal still streams), so it need not go to a worker thread."""
        return not self.transaction.opened and not any(
            p.rows is not None and p.rows.live for p in self.portals.values())

    def end_implicit(self, failed: bool = False) -> None:
        """Commit the implicit block, or roll it back if a statement failed."""
        if self.transaction.implicit:
            committed = not failed and self.transaction.status is TransactionStatus.IN_BLOCK
            self._end_portals(commit=committed)
            try:
                self.transaction.end_implicit(failed)
            except SqlError:
                committed = False
                raise
            finally:
                self._block_ended(committed=committed)
        elif self.transaction.status is TransactionStatus.IDLE:
            self._end_portals(commit=True)
            self._release_transaction_locks()

    def _release_transaction_locks(self) -> None:
        """pg_advisory_xact_lock's and LOCK TABLE's locks end with their transaction."""
        if self.backend is not None:
            self.backend.locks.end_transaction(self.backend.pid)

    def _end_portals(self, *, commit: bool) -> None:
        """Portals end with their transaction; cursors WITH HOLD are kept (read into memory)
        when it commits."""
        for name, portal in list(self.portals.items()):
            if portal.cursor is not None and portal.cursor.hold and commit:
                portal.hold()
            else:
                portal.close()
                del self.portals[name]
        if self._live:
            self._free_connection()

    # -- portals and cursors ----------------------------------------------------------------

    def bind(self, name: str, portal: Portal) -> None:
        """Bind: the unnamed portal is replaced; a named one must not exist yet."""
        if name and name in self.portals:
            raise SqlError(SqlState.DUPLICATE_CURSOR, f'cursor "{name}" already exists')
        old = self.portals.pop(name, None)
        if old is not None:
            old.close()
        self.portals[name] = portal

    def portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise SqlError(SqlState.INVALID_CURSOR_NAME, f'portal "{name}" does not exist')
        return portal

    def close_portal(self, name: str) -> None:
        portal = self.portals.pop(name, None)
        if portal is not None:
            portal.close()

    def start(self, portal: Portal) -> Result:
        """Run a portal's statement (its rows stream)."""
        result = self.execute(portal.statement, portal.params, stream=True)
        portal.start(result)
        return result

    def _cursor(self, statement: Statement, params: Sequence[Any]) -> Result:
        command = statement.command
        if isinstance(command, DeclareCommand):
            return self._declare(command, params)
        if isinstance(command, CloseCommand):
            names = [command.name] if command.name is not None else [
                n for n, p in self.portals.items() if p.cursor is not None]
            for name in names:
                if name not in self.portals:
                    raise SqlError(SqlState.INVALID_CURSOR_NAME,
                                   f'cursor "{name}" does not exist')
                self.close_portal(name)
            return Result("CLOSE CURSOR", None, None)
        assert isinstance(command, FetchCommand)
        portal = self.portals.get(command.cursor)
        if portal is None or not portal.started:
            raise SqlError(SqlState.INVALID_CURSOR_NAME,
                           f'cursor "{command.cursor}" does not exist')
        if portal.result is None or portal.result.columns is None:
            raise SqlError(SqlState.INVALID_CURSOR_STATE,
                           f'cursor "{command.cursor}" does not return rows')
        return portal.fetch(command)

    def _declare(self, command: DeclareCommand, params: Sequence[Any]) -> Result:
        if not command.hold and (self.transaction.status is TransactionStatus.IDLE
                                 or self.transaction.implicit):
            raise SqlError(SqlState.NO_ACTIVE_SQL_TRANSACTION,
                           "DECLARE CURSOR can only be used in transaction blocks")
        if command.binary:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "BINARY cursors are not supported",
                           hint="Declare the cursor without BINARY, or use the extended "
                                "protocol's binary result format.")
        if command.name in self.portals:
            raise SqlError(SqlState.DUPLICATE_CURSOR, f'cursor "{command.name}" already exists')
        query = self.prepare(command.query)
        if not query.returns_rows:
            raise SqlError(SqlState.INVALID_CURSOR_DEFINITION,
                           f"cannot open {query.verb or 'this'} query as cursor")
        portal = Portal(query, list(params), cursor=command)
        self.start(portal)
        self.portals[command.name] = portal
        return Result("DECLARE CURSOR", None, None)

    # -- COPY -------------------------------------------------------------------------------

    def copy_target(self, command: CopyCommand) -> tuple[CopyColumn, ...]:
        """The columns a COPY ... FROM STDIN fills: those it names, else all of the table's."""
        names = ", ".join(dialect.quoted(c) for c in command.columns) if command.columns else "*"
        return tuple(CopyColumn(column.name, column.type, duckdb_type) for column, duckdb_type
                     in self.planner.bind_columns(f"SELECT {names} FROM {command.table_sql}"))

    def copy_in(self, statement: Statement, columns: Sequence[CopyColumn],
                batches: Generator[pa.RecordBatch, None, None]) -> int:
        """Insert the batches of a COPY ... FROM STDIN, all or nothing; the number of rows."""
        command = statement.command
        assert isinstance(command, CopyCommand)
        own_block = self.transaction.status is TransactionStatus.IDLE
        if own_block:  # several inserts: one transaction, as PostgreSQL's COPY is one statement
            self.begin_implicit()
        failed = True
        try:
            self.admit(statement)
            self._free_connection()
            self.transaction.before(statement)
            # (the rows' foreign keys checked once, after the last batch)
            with self.planner.keys_checked(f"INSERT INTO {command.table_sql} "
                                           f"SELECT * FROM {_COPY_BATCH}"):
                rows = sum(self.planner.insert_rows(_copy_insert(command, columns, batch),
                                                    _COPY_BATCH, _listed(batch, columns))
                           for batch in batches)
            self.transaction.after(statement, (), Result(f"COPY {rows}", None, None))
            failed = False
            return rows
        except SqlError:
            self.transaction.fail()
            raise
        finally:
            batches.close()  # the parser stops reading the client's data
            if own_block:
                self.end_implicit(failed)

    def _copy_out(self, statement: Statement) -> Result:
        """COPY ... TO STDOUT: the rows of its table or query, streamed."""
        command = statement.command
        assert isinstance(command, CopyCommand)
        if command.query is not None:
            sql = command.query
        else:
            names = (", ".join(dialect.quoted(c) for c in command.columns) if command.columns
                     else "*")
            sql = f"SELECT {names} FROM {command.table_sql}"
        query = self.prepare(sql)
        if not query.returns_rows:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           "COPY query must have a RETURNING clause or return rows")
        result = self._run(query, (), stream=True)
        return Result("COPY", result.columns, result.rows)

    # -- lifecycle --------------------------------------------------------------------------

    def expect_cancel(self) -> None:
        """A statement is about to be prepared or run: a cancel from now on is for it."""
        if self.planner.cancelled.is_set():  # (clearing takes the event's lock: only if needed)
            self.planner.cancelled.clear()

    def cancel(self) -> None:
        self.planner.interrupt()

    def close(self) -> None:
        self.disarm_timeout()
        for portal in self.portals.values():
            portal.close()
        self.portals.clear()
        self._live.clear()
        with contextlib.suppress(SqlError):
            self.transaction.rollback()
        self.planner.close()


_TRANSACTION_KINDS = {Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK, Kind.SAVEPOINT, Kind.RELEASE,
                      Kind.ROLLBACK_TO}
_SESSION_KINDS = _TRANSACTION_KINDS | {Kind.DECLARE, Kind.FETCH, Kind.CLOSE, Kind.COPY_IN,
                                       Kind.COPY_OUT, Kind.LISTEN, Kind.NOTIFY, Kind.ROLE,
                                       Kind.LOCK, Kind.SET_CONSTRAINTS, Kind.DISCARD}
LOCK_KEY_SPACE = 3  # LOCK TABLE's keys in the lock table: (3, the table's OID, 0)


@dataclass(frozen=True, slots=True)
class CopyColumn:
    """A column a COPY fills: its name, its Arrow type, its DuckDB type."""

    name: str
    type: pa.DataType
    duckdb_type: str


_COPY_BATCH = "__heron_copy_batch"


def _listed(batch: pa.RecordBatch, columns: Sequence[CopyColumn]) -> pa.RecordBatch:
    """Text input for list columns read as PostgreSQL array literals (lists of element text,
    which DuckDB's cast then converts element by element)."""
    arrays = list(batch.columns)
    for index, (column, array) in enumerate(zip(columns, arrays, strict=True)):
        if pa.types.is_string(array.type) and is_list(column.type):
            arrays[index] = pa.array([None if v is None else pg_semantics.parse_array_literal(
                v, str) for v in array.to_pylist()], _text_list(column.type))
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def _text_list(t: pa.DataType) -> pa.DataType:
    """The list type of the same nesting with text elements."""
    return pa.list_(_text_list(t.value_type)) if is_list(t) else pa.string()


def _copy_insert(command: CopyCommand, columns: Sequence[CopyColumn], batch: pa.RecordBatch
                 ) -> str:
    """The INSERT of one batch of COPY input (registered as `_COPY_BATCH`), converting
    PostgreSQL's text input where the batch holds text."""
    values = []
    for column, source_field in zip(columns, batch.schema, strict=True):
        source = dialect.quoted(source_field.name)
        text = pa.types.is_string(source_field.type) and not pa.types.is_string(column.type) and (
            not is_list(column.type))
        values.append(f"{pg_semantics.text_input(source, column.duckdb_type) if text else source}"
                      f" AS {dialect.quoted(column.name)}")
    names = ", ".join(dialect.quoted(c.name) for c in columns)
    select = f"SELECT {', '.join(values)} FROM {_COPY_BATCH}"
    if command.where is not None:
        select = f"SELECT * FROM ({select}) WHERE {command.where}"
    return f"INSERT INTO {command.table_sql} ({names}) {select}"


def _warning(text: str | None) -> tuple[str, ...]:
    return () if text is None else (text,)


def _duration_ms(text: str) -> float:
    m = _DURATION.match(text)
    assert m is not None  # stored values were checked by _duration_text
    return float(m["number"]) * _UNIT_MS[(m["unit"] or "ms").lower()]


def _duration_text(name: str, value: str) -> str:
    """A time setting as PostgreSQL shows it: the largest unit that divides it, '0' for off."""
    m = _DURATION.match(value)
    if m is None:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f'invalid value for parameter "{name}": "{value}"',
                       hint='Valid units for this parameter are "ms", "s", "min", "h", and "d".')
    milliseconds = round(float(m["number"]) * _UNIT_MS[(m["unit"] or "ms").lower()])
    if milliseconds == 0:
        return "0"
    for unit in ("d", "h", "min", "s"):
        if milliseconds % _UNIT_MS[unit] == 0:
            return f"{milliseconds // _UNIT_MS[unit]}{unit}"
    return f"{milliseconds}ms"


def _isolation(value: str) -> Isolation:
    try:
        return Isolation(" ".join(value.lower().split()))
    except ValueError:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f'invalid value for parameter "transaction_isolation": "{value}"',
                       hint='Available values: serializable, repeatable read, read committed, '
                            'read uncommitted.') from None


# Settings of a few values: an enumeration, and the one tablespace and table access method Heron
# has (PostgreSQL's: the hint lists an enumeration's values; the detail says an object is
# missing).
_CHOICES = {"xmloption": (("content", "document"), None),
            "default_tablespace": (("", "pg_default"), 'Tablespace "{}" does not exist.'),
            "default_table_access_method": (("heap",), 'Table access method "{}" does not exist.')}


def _choice(name: str, value: str, choices: tuple[tuple[str, ...], str | None]) -> str:
    values, missing = choices
    if value.strip().lower() not in values:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f'invalid value for parameter "{name}": "{value}"',
                       detail=missing.format(value) if missing else None,
                       hint=None if missing else f"Available values: {', '.join(values)}.")
    return value.strip().lower()


def _boolean(name: str, value: str) -> bool:
    try:
        return _BOOLEAN[value.strip().lower()]
    except KeyError:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f'parameter "{name}" requires a Boolean value') from None


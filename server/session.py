"""A client session: run-time parameters, transaction state, and statement dispatch.

Contract: one `Session` per client connection, used from one worker thread at a time (the protocol
code runs it off the event loop); `cancel()` may be called from any thread. Statements are
prepared by the `Planner`, which decides their `Kind`; the session answers the commands PostgreSQL
clients send about the session itself (SET/RESET/SHOW of the parameters it knows, such as
DateStyle or application_name; BEGIN/COMMIT/ROLLBACK) and hands everything else to the planner,
which also owns the transactions of the database connection. It keeps PostgreSQL's transaction
states for ReadyForQuery (`TransactionStatus`): idle, in a transaction block, or in a failed block,
where only ROLLBACK (or COMMIT, which rolls back) runs.

Like PostgreSQL, statements outside an explicit block run in an implicit transaction that the
protocol opens (`begin_implicit`: several statements of one Query message, or the extended-protocol
messages up to Sync) and closes (`end_implicit`): committed when all succeeded, rolled back after
an error. BEGIN inside it turns it into an explicit block; COMMIT or ROLLBACK inside it end it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from heron.catalog import Database
from heron.engine.api import Engine
from heron.planner import Column, Kind, Planner, Result, SqlError, SqlState, Statement
from heron.planner.access import check as check_privileges
from heron.planner.errors import in_failed_transaction
from heron.planner.role_statements import run as run_role_statement

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
    "TimeZone": "UTC",
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
    "transaction_isolation": "serializable",
    "default_transaction_isolation": "serializable",
    "transaction_read_only": "off",
    "datestyle": "ISO, MDY",
    "jit": "off",
    "server_version_num": SERVER_VERSION_NUM,
}
READ_ONLY = {"server_version", "server_version_num", "server_encoding", "integer_datetimes",
             "in_hot_standby", "is_superuser", "max_identifier_length", "session_authorization"}

_SHOW_ALIASES = {"transaction isolation level": "transaction_isolation", "time zone": "TimeZone"}


class TransactionStatus(enum.StrEnum):
    """PostgreSQL's transaction states, as ReadyForQuery reports them."""

    IDLE = "I"
    IN_BLOCK = "T"
    FAILED = "E"  # only ROLLBACK (or COMMIT, which rolls back) runs


@dataclass
class Session:
    database: Database
    engine: Engine | None = None
    user: str = "heron"
    database_name: str = "heron"
    parameters: dict[str, str] = field(default_factory=dict)
    transaction_status: TransactionStatus = TransactionStatus.IDLE
    implicit: bool = False  # the open block was opened by the protocol, not by BEGIN

    def __post_init__(self) -> None:
        self._settings = {k.lower(): (k, v) for k, v in {**OTHER_DEFAULTS,
                                                         **REPORTED_DEFAULTS}.items()}
        self._settings["session_authorization"] = ("session_authorization", self.user)
        role = self.database.roles.get(self.user)
        self._settings["is_superuser"] = ("is_superuser",
                                          "on" if role is not None and role.superuser else "off")
        for name, value in list(self.parameters.items()):
            self._set(name, value)
        self.planner = Planner(self.database.connect(), self.engine, user=self.user,
                               server_version=SERVER_VERSION)
        self._publish_settings()

    # -- parameters -----------------------------------------------------------------------

    def reported(self) -> dict[str, str]:
        """The ParameterStatus values, keyed by PostgreSQL's spelling."""
        return {k: self._settings[k.lower()][1] for k in REPORTED_DEFAULTS}

    def setting(self, name: str) -> str:
        try:
            return self._settings[name.lower()][1]
        except KeyError:
            raise SqlError(SqlState.UNDEFINED_OBJECT,
                           f'unrecognized configuration parameter "{name}"') from None

    def _show_column(self, name: str) -> str:
        """SHOW's result column: the setting's name as PostgreSQL spells it (TimeZone)."""
        name = _SHOW_ALIASES.get(name.lower(), name)
        return self._settings.get(name.lower(), (name.lower(), ""))[0]

    def _publish_settings(self) -> None:
        """Let current_setting() in SQL see the session's settings."""
        self.planner.publish_settings({k: v for k, (_, v) in self._settings.items()})

    def _set(self, name: str, value: str) -> None:
        key = name.lower()
        if key in READ_ONLY:
            raise SqlError(SqlState.CANT_CHANGE_RUNTIME_PARAM,
                           f'parameter "{name}" cannot be changed')
        if key == "client_encoding" and value.upper().replace("-", "") not in {"UTF8", "UNICODE"}:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f"client encoding {value!r} is not supported; use UTF8")
        canonical = self._settings.get(key, (name, ""))[0]
        if key == "client_encoding":
            value = "UTF8"
        self._settings[key] = (canonical, value)

    # -- statements -----------------------------------------------------------------------

    def prepare(self, sql: str) -> Statement:
        try:
            statement = self.planner.classify(sql)
            self.admit(statement)
            return self.planner.plan(statement)
        except SqlError:
            self._fail()
            raise

    def admit(self, statement: Statement) -> None:
        """Refuse (25P02) what a failed transaction block does not run: all but its end (and
        the empty query); refuse (42501) what the session's role may not run."""
        if self.transaction_status is TransactionStatus.FAILED and statement.kind not in {
                Kind.COMMIT, Kind.ROLLBACK, Kind.EMPTY}:
            raise in_failed_transaction()
        if not self._answers(statement):
            check_privileges(self.planner.con, statement.sql, self.database.roles.get(self.user),
                         main_database=self.database.catalog_name)

    def _answers(self, statement: Statement) -> bool:
        """Whether the session answers this statement itself (else the planner runs it)."""
        if statement.kind in {Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK, Kind.ROLE}:
            return True
        if statement.kind not in {Kind.SET, Kind.RESET, Kind.SHOW} or statement.command is None:
            return False
        name = _SHOW_ALIASES.get(statement.command.name.lower(), statement.command.name).lower()
        return name in self._settings or (statement.kind is Kind.RESET and name == "all")

    def describe(self, statement: Statement, params: Sequence[Any] | None = None
                 ) -> tuple[Column, ...] | None:
        """See `Planner.describe`; nothing runs."""
        if not self._answers(statement):
            return self.planner.describe(statement, params)
        if statement.kind is Kind.SHOW:
            assert statement.command is not None
            return (Column(self._show_column(statement.command.name), pa.string()),)
        return None

    def execute(self, statement: Statement, params: Sequence[Any] = ()) -> Result:
        self.admit(statement)
        try:
            if self._answers(statement):
                return self._command(statement)
            return self.planner.execute(statement, params)
        except SqlError:
            self._fail()
            raise

    def _fail(self) -> None:
        if self.transaction_status is TransactionStatus.IN_BLOCK:
            self.transaction_status = TransactionStatus.FAILED

    def _command(self, statement: Statement) -> Result:
        kind, command = statement.kind, statement.command
        if kind in {Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK}:
            return self._transaction(kind)
        if kind is Kind.ROLE:
            return run_role_statement(statement.sql, self.database.roles, self.user)
        assert command is not None
        if kind is Kind.SHOW:
            name = _SHOW_ALIASES.get(command.name.lower(), command.name)
            column = self._show_column(command.name)
            table = pa.table({column: [self.setting(name)]})
            return Result("SHOW", (Column(column, pa.string()),), table)
        if kind is Kind.SET and command.value is not None:
            self._set(command.name, command.value)
        else:  # RESET, or SET ... TO DEFAULT
            key = command.name.lower()
            defaults = {k.lower(): v for k, v in {**OTHER_DEFAULTS, **REPORTED_DEFAULTS}.items()}
            if key == "all":
                for name, value in defaults.items():
                    if name not in READ_ONLY:
                        self._set(name, value)
            elif key in defaults:
                self._set(key, defaults[key])
        self._publish_settings()
        return Result(kind.name, None, None)

    # -- transactions ---------------------------------------------------------------------

    def begin_implicit(self) -> None:
        if self.transaction_status is TransactionStatus.IDLE:
            self.planner.begin()
            self.transaction_status = TransactionStatus.IN_BLOCK
            self.implicit = True

    def end_implicit(self, failed: bool = False) -> None:
        """Commit the implicit block, or roll it back if a statement failed."""
        if self.implicit:
            ok = not failed and self.transaction_status is TransactionStatus.IN_BLOCK
            self._transaction(Kind.COMMIT if ok else Kind.ROLLBACK)

    def _transaction(self, kind: Kind) -> Result:
        if kind is Kind.BEGIN:
            if self.transaction_status is TransactionStatus.IDLE:
                self.planner.begin()
                self.transaction_status = TransactionStatus.IN_BLOCK
            self.implicit = False
            return Result("BEGIN", None, None)
        was = self.transaction_status
        self.transaction_status = TransactionStatus.IDLE
        self.implicit = False
        if kind is Kind.COMMIT and was is TransactionStatus.IN_BLOCK:
            self.planner.commit()
        elif was is not TransactionStatus.IDLE:
            self.planner.rollback()
        return Result("COMMIT" if kind is Kind.COMMIT and was is not TransactionStatus.FAILED
                      else "ROLLBACK", None, None)

    def cancel(self) -> None:
        self.planner.interrupt()

    def close(self) -> None:
        if self.transaction_status is not TransactionStatus.IDLE:
            self.planner.rollback()
        self.planner.close()

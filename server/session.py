"""A client session: run-time parameters, transaction state, and statement dispatch.

Contract: one `Session` per client connection, used from one worker thread at a time (the protocol
code runs it off the event loop); `cancel()` may be called from any thread. The session answers
the commands PostgreSQL clients send about the session itself (SET/RESET/SHOW of client parameters
such as DateStyle or application_name, redundant BEGIN/COMMIT) and hands everything else to its
`Planner`. It keeps PostgreSQL's transaction states for ReadyForQuery: 'I' idle, 'T' in a
transaction block, 'E' in a failed block, where only ROLLBACK (or COMMIT, which rolls back) runs.

Like PostgreSQL, statements outside an explicit block run in an implicit transaction that the
protocol opens (`begin_implicit`: several statements of one Query message, or the extended-protocol
messages up to Sync) and closes (`end_implicit`): committed when all succeeded, rolled back after
an error. BEGIN inside it turns it into an explicit block; COMMIT or ROLLBACK inside it end it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from heron.catalog import Database
from heron.planner import Column, Plan, Planner, Result, SqlError, split
from heron.planner.errors import SqlState, from_duckdb

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

_SET = re.compile(
    r"^\s*SET\s+(?:SESSION\s+|LOCAL\s+)?(?:(?P<tz>TIME\s+ZONE)\s+(?P<tzvalue>.+?)|"
    r"(?P<name>[\w.]+)\s*(?:=|\s+TO\s+)\s*(?P<value>.+?))\s*$",
    re.IGNORECASE | re.DOTALL,
)
_RESET = re.compile(r"^\s*RESET\s+(?P<name>[\w.]+)\s*$", re.IGNORECASE)
_SHOW = re.compile(r"^\s*SHOW\s+(?P<name>[\w.]+(?:\s+[\w.]+)*)\s*$", re.IGNORECASE)
_SHOW_ALIASES = {"transaction isolation level": "transaction_isolation", "time zone": "TimeZone"}
_TRANSACTION_VERBS = re.compile(
    r"^\s*(?P<verb>BEGIN|START|COMMIT|END|ROLLBACK|ABORT)\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL
)


@dataclass(frozen=True, slots=True)
class SessionCommand:
    """A command the session answers itself."""

    kind: str  # "set", "reset", "show", "begin", "commit", "rollback"
    name: str = ""
    value: str | None = None


@dataclass(frozen=True, slots=True)
class Statement:
    """A prepared statement: planner work or a session command."""

    sql: str
    param_count: int
    returns_rows: bool
    plan: Plan | None = None
    command: SessionCommand | None = None


@dataclass
class Session:
    database: Database
    engine: Any = None
    user: str = "heron"
    database_name: str = "heron"
    parameters: dict[str, str] = field(default_factory=dict)
    transaction_status: str = "I"
    implicit: bool = False  # the open block was opened by the protocol, not by BEGIN

    def __post_init__(self) -> None:
        self._settings = {k.lower(): (k, v) for k, v in {**OTHER_DEFAULTS,
                                                         **REPORTED_DEFAULTS}.items()}
        self._settings["session_authorization"] = ("session_authorization", self.user)
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

    def split(self, sql: str) -> list[str]:
        return split(sql)

    def prepare(self, sql: str) -> Statement:
        command = _session_command(sql)
        if command is not None and self._answers(command):
            return Statement(sql, 0, command.kind == "show", command=command)
        try:
            plan = self.planner.prepare(sql)
        except SqlError:
            if self.transaction_status == "T":
                self.transaction_status = "E"
            raise
        return Statement(sql, plan.param_count, plan.returns_rows, plan=plan)

    def _answers(self, command: SessionCommand) -> bool:
        """Whether the session answers this command itself (else DuckDB sees it)."""
        name = _SHOW_ALIASES.get(command.name.lower(), command.name).lower()
        return command.kind not in {"set", "reset", "show"} or name in self._settings or (
            command.kind == "reset" and name == "all")

    def describe(self, statement: Statement, params: Sequence[Any] | None = None
                 ) -> tuple[Column, ...] | None:
        """See `Planner.describe`; nothing runs."""
        if statement.command is not None:
            if statement.command.kind == "show":
                return (Column(statement.command.name.lower(), pa.string()),)
            return None
        return self.planner.describe(statement.plan, params)

    def execute(self, statement: Statement, params: Sequence[Any] = ()) -> Result:
        command = statement.command
        if self.transaction_status == "E" and (command is None or command.kind not in
                                               {"commit", "rollback"}):
            raise SqlError(SqlState.IN_FAILED_SQL_TRANSACTION,
                           "current transaction is aborted, commands ignored until end "
                           "of transaction block")
        try:
            if command is not None:
                return self._command(command)
            return self.planner.execute(statement.plan, params)
        except SqlError:
            if self.transaction_status == "T":
                self.transaction_status = "E"
            raise

    def _command(self, command: SessionCommand) -> Result:
        if command.kind in {"set", "reset"} and command.value is not None:
            self._set(command.name, command.value)
            self._publish_settings()
            return Result("SET", None, None)
        if command.kind in {"set", "reset"}:
            key = command.name.lower()
            defaults = {k.lower(): v for k, v in {**OTHER_DEFAULTS, **REPORTED_DEFAULTS}.items()}
            if key == "all":
                for name, value in defaults.items():
                    if name not in READ_ONLY:
                        self._set(name, value)
            elif key in defaults:
                self._set(key, defaults[key])
            self._publish_settings()
            return Result(command.kind.upper(), None, None)
        if command.kind == "show":
            name = _SHOW_ALIASES.get(command.name.lower(), command.name)
            table = pa.table({command.name.lower(): [self.setting(name)]})
            return Result("SHOW", (Column(command.name.lower(), pa.string()),), table)
        return self._transaction(command.kind)

    def begin_implicit(self) -> None:
        if self.transaction_status == "I":
            self._run(self.planner.con, "BEGIN TRANSACTION")
            self.transaction_status = "T"
            self.implicit = True

    def end_implicit(self, failed: bool = False) -> None:
        """Commit the implicit block, or roll it back if a statement failed."""
        if self.implicit:
            ok = not failed and self.transaction_status == "T"
            self._transaction("commit" if ok else "rollback")

    def _transaction(self, kind: str) -> Result:
        con = self.planner.con
        if kind == "begin":
            if self.transaction_status == "I":
                self._run(con, "BEGIN TRANSACTION")
                self.transaction_status = "T"
            self.implicit = False
            return Result("BEGIN", None, None)
        was = self.transaction_status
        self.transaction_status = "I"
        self.implicit = False
        if was == "I":
            return Result("COMMIT" if kind == "commit" else "ROLLBACK", None, None)
        if kind == "commit" and was == "T":
            try:
                self._run(con, "COMMIT")
            except SqlError:
                self._run(con, "ROLLBACK", quiet=True)
                raise
            return Result("COMMIT", None, None)
        self._run(con, "ROLLBACK", quiet=True)
        return Result("ROLLBACK", None, None)

    @staticmethod
    def _run(con: duckdb.DuckDBPyConnection, sql: str, quiet: bool = False) -> None:
        try:
            con.execute(sql)
        except duckdb.Error as exc:
            if not quiet:
                raise from_duckdb(exc) from None

    def cancel(self) -> None:
        self.planner.interrupt()

    def close(self) -> None:
        if self.transaction_status != "I":
            self._run(self.planner.con, "ROLLBACK", quiet=True)
        self.planner.con.close()


def _session_command(sql: str) -> SessionCommand | None:
    if m := _SET.match(sql):
        if m["tz"]:
            return SessionCommand("set", "TimeZone", _unquote(m["tzvalue"]))
        return SessionCommand("set", m["name"], _unquote(m["value"]))
    if m := _RESET.match(sql):
        return SessionCommand("reset", m["name"])
    if m := _SHOW.match(sql):
        return SessionCommand("show", m["name"])
    if m := _TRANSACTION_VERBS.match(sql):
        verb = m["verb"].upper()
        kind = {"BEGIN": "begin", "START": "begin", "COMMIT": "commit", "END": "commit",
                "ROLLBACK": "rollback", "ABORT": "rollback"}[verb]
        if kind == "rollback" and re.match(r"\s*TO\b", m["rest"], re.IGNORECASE):
            return None  # ROLLBACK TO SAVEPOINT: DuckDB decides
        return SessionCommand(kind)
    return None


def _unquote(value: str) -> str | None:
    """A SET value without its quotes; None for DEFAULT."""
    value = value.strip()
    if value.upper() == "DEFAULT":
        return None
    parts = [p.strip() for p in value.split(",")]
    return ", ".join(p[1:-1].replace("''", "'") if len(p) >= 2 and p[0] == p[-1] == "'" else p
                     for p in parts)

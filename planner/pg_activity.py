"""The server's sessions as SQL sees and steers them: pg_stat_activity, heron_stat_ai and the
backend functions.

Contract: `register(con, activity)` registers, once per server on a DuckDB connection that
outlives every session, the two Python functions that read and signal the server's backends
through `activity` (an `Activity`: the server's registry). `install(con, caller)` creates on
one session's connection, outside any transaction, the TEMP views and macros over them:

- `pg_stat_activity`: PostgreSQL 16's columns and types (text for `name` and `inet`), one row
  per client backend;
- `heron_stat_ai`: one row per running stage of an AI operator (sampling its selectivity or
  answering its candidates): prompts done and total, engine tokens, rate, estimated time left,
  and where its engine request stands (`queue_position` 0 while the engine computes it, n while
  it waits behind n-1 requests sent earlier for the engine's first chunk of it, NULL between
  requests; `engine_requests`: the requests of all sessions in the engine now);
- `pg_backend_pid()`, `pg_cancel_backend(pid)` and `pg_terminate_backend(pid [, timeout])`
  with PostgreSQL's results and errors: true once signalled, false (after a WARNING the
  `Activity` sends) for a PID that is no backend, 42501 with PostgreSQL's message and detail
  when the caller may not signal it, 22023 for a negative timeout, 57014 for cancelling one's
  own statement.

A `Caller` names the session asking: its PID and a secret token. TEMP macros are visible to
their own connection only, so a session's views and macros are the only place its token is
written; DuckDB functions, by contrast, belong to the whole database and any session may call
them with any argument, so the `Activity` checks the token before it answers or signals.
Without `register` (a planner used without a server) the views are empty, `pg_backend_pid()`
is the caller's PID and the functions signal nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import duckdb

BACKENDS_FUNCTION = "heron_stat_backends"  # (pid, token) -> pg_stat_activity's rows
OPERATORS_FUNCTION = "heron_stat_operators"  # (pid, token) -> heron_stat_ai's rows
SIGNAL_FUNCTION = "heron_signal_backend"  # (pid, token, target, signal, timeout ms) -> Outcome


@dataclass(frozen=True, slots=True)
class Caller:
    """The session asking: its backend's PID and the token that proves it."""

    pid: int
    token: str


NO_SERVER = Caller(0, "")  # a session of a planner used without a server


class Signal(enum.StrEnum):
    CANCEL = "cancel"  # as a CancelRequest: the running statement stops with 57014
    TERMINATE = "terminate"  # as the server's shutdown: FATAL 57P01, the connection closes


class Outcome(enum.IntEnum):
    """What a signal came to; the macros turn each into PostgreSQL's answer."""

    SENT = 0  # true
    NO_BACKEND = 1  # false (the Activity warned)
    TIMED_OUT = 2  # false: terminated, but still there after the timeout (the Activity warned)
    SUPERUSER_ONLY = 3  # 42501: the target is a superuser's backend
    NOT_PERMITTED = 4  # 42501: the target is another role's backend
    OWN_STATEMENT = 5  # 57014: the caller cancelled itself


@dataclass(frozen=True, slots=True)
class BackendRow:
    """One row of pg_stat_activity (PostgreSQL 16's columns)."""

    datid: int | None
    datname: str | None
    pid: int
    leader_pid: int | None
    usesysid: int | None
    usename: str | None
    application_name: str | None
    client_addr: str | None
    client_hostname: str | None
    client_port: int | None
    backend_start: dt.datetime | None
    xact_start: dt.datetime | None
    query_start: dt.datetime | None
    state_change: dt.datetime | None
    wait_event_type: str | None
    wait_event: str | None
    state: str | None
    backend_xid: int | None
    backend_xmin: int | None
    query_id: int | None
    query: str | None
    backend_type: str | None


@dataclass(frozen=True, slots=True)
class OperatorRow:
    """One row of heron_stat_ai: a running stage of an AI operator."""

    pid: int
    operator: str  # "AI Filter", "AI Join", ...
    function: str  # as written: "AI.IF", "AI_FILTER", ...
    question: str | None
    stage: str  # "sampling" or "answering"
    ordinal: int | None  # its place in the order the statement's operators run
    operators: int  # AI operators in the statement
    prompts_done: int | None
    prompts_total: int | None
    input_tokens: int | None
    fresh_tokens: int | None
    cached_tokens: int | None
    tokens_per_second: float | None  # input tokens per second of engine time
    stage_start: dt.datetime | None
    seconds: float | None  # since the stage started
    seconds_left: float | None  # estimated; at most this when a LIMIT may stop it sooner
    queue_position: int | None
    engine_requests: int | None


class Activity(Protocol):
    """The server's backends as one caller may see and signal them (any thread)."""

    def backends(self, caller: Caller) -> Sequence[BackendRow]: ...

    def operators(self, caller: Caller) -> Sequence[OperatorRow]: ...

    def signal(self, caller: Caller, target: int, signal: Signal, timeout: float) -> Outcome: ...


# The DuckDB type of each field type; fields holding OIDs, transaction ids and counts are BIGINT.
_TYPES = {int: "INTEGER", str: "VARCHAR", float: "DOUBLE", dt.datetime: "TIMESTAMPTZ"}
_BIGINT = frozenset({"datid", "usesysid", "backend_xid", "backend_xmin", "query_id",
                     "prompts_done", "prompts_total", "input_tokens", "fresh_tokens",
                     "cached_tokens"})
# Each view: its rows' type and the function that lists them.
_VIEWS = {"pg_stat_activity": (BackendRow, BACKENDS_FUNCTION),
          "heron_stat_ai": (OperatorRow, OPERATORS_FUNCTION)}
RELATIONS = frozenset(_VIEWS)


def _columns(row_type: type) -> dict[str, str]:
    """The view's columns and their DuckDB types, in the order of the row's fields."""
    hints = typing.get_type_hints(row_type)
    columns = {}
    for f in dataclasses.fields(row_type):
        python_type = next(t for t in typing.get_args(hints[f.name]) or (hints[f.name],)
                           if t is not type(None))
        columns[f.name] = "BIGINT" if f.name in _BIGINT else _TYPES[python_type]
    return columns


def register(con: duckdb.DuckDBPyConnection, activity: Activity) -> None:
    """Register the functions the views and macros call, on a connection that outlives every
    session (a Python function belongs to the whole DuckDB database but lives as long as the
    connection that registered it: calling it after that crashes the process)."""

    def lister(list_rows: typing.Callable[[Caller], Sequence[object]]
               ) -> typing.Callable[[int, str], list[dict[str, object]]]:
        def rows(pid: int, token: str) -> list[dict[str, object]]:
            return [dataclasses.asdict(row) for row in list_rows(Caller(pid, token))]
        return rows

    def signal(pid: int, token: str, target: int, kind: str, timeout_ms: int) -> int:
        return activity.signal(Caller(pid, token), target, Signal(kind), timeout_ms / 1000)

    for row_type, function, list_rows in ((BackendRow, BACKENDS_FUNCTION, activity.backends),
                                          (OperatorRow, OPERATORS_FUNCTION,
                                           activity.operators)):
        con.create_function(function, lister(list_rows), ["INTEGER", "VARCHAR"],
                            duckdb.list_type(duckdb.struct_type(_columns(row_type))),
                            side_effects=True)
    con.create_function(SIGNAL_FUNCTION, signal,
                        ["INTEGER", "VARCHAR", "INTEGER", "VARCHAR", "BIGINT"], "INTEGER",
                        side_effects=True)


def install(con: duckdb.DuckDBPyConnection, caller: Caller) -> None:
    """Create the views and macros on one session's connection (outside a transaction)."""
    registered = con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = ?",
                             [SIGNAL_FUNCTION]).fetchall()[0][0]
    for view, (row_type, function) in _VIEWS.items():
        if registered:
            rows = (f"(SELECT unnest({function}({caller.pid}, {_quote(caller.token)}), "
                    f"recursive := true)) a")
            # The database's OID is the catalog's to tell (pg_database).
            sql = (f"SELECT a.* REPLACE (CAST((SELECT d.oid FROM pg_database d WHERE d.datname "
                   f"= a.datname) AS {_columns(row_type)['datid']}) AS datid) FROM {rows}"
                   if view == "pg_stat_activity" else f"SELECT * FROM {rows}")
        else:
            sql = "SELECT " + ", ".join(f"NULL::{t} AS {name}" for name, t
                                        in _columns(row_type).items()) + " WHERE false"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {sql}")
    macros = {"pg_backend_pid": f"() AS {caller.pid}"}
    if registered:
        cancel, terminate = (_signalled(caller, signal) for signal in Signal)
        macros["pg_cancel_backend"] = f"(pid_arg) AS {cancel.format(timeout='0')}"
        macros["pg_terminate_backend"] = (
            f"(pid_arg) AS {terminate.format(timeout='0')}, "
            f"(pid_arg, timeout_arg) AS CASE WHEN timeout_arg < 0 THEN "
            f"{_error(NEGATIVE_TIMEOUT)} ELSE {terminate.format(timeout='timeout_arg')} END")
    else:
        macros["pg_cancel_backend"] = "(pid_arg) AS false"
        macros["pg_terminate_backend"] = "(pid_arg) AS false, (pid_arg, timeout_arg) AS false"
    for name, body in macros.items():
        con.execute(f"CREATE OR REPLACE TEMP MACRO {name}{body}")


# PostgreSQL 16's words when a signal is refused (message, then detail).
_REFUSALS = {
    Signal.CANCEL: (
        "permission denied to cancel query",
        "Only roles with the SUPERUSER attribute may cancel queries of roles with the SUPERUSER "
        "attribute.",
        "Only roles with privileges of the role whose query is being canceled or with "
        'privileges of the "pg_signal_backend" role may cancel this query.'),
    Signal.TERMINATE: (
        "permission denied to terminate process",
        "Only roles with the SUPERUSER attribute may terminate processes of roles with the "
        "SUPERUSER attribute.",
        "Only roles with privileges of the role whose process is being terminated or with "
        'privileges of the "pg_signal_backend" role may terminate this process.'),
}
CANCELED = "canceling statement due to user request"
NEGATIVE_TIMEOUT = '"timeout" must not be negative'


def _signalled(caller: Caller, signal: Signal) -> str:
    """The SQL of a signal's boolean result for `pid_arg`, with `{timeout}` (milliseconds) left
    to fill. The function runs once (a lambda's argument; a CASE on it would call it once per
    branch), and each refusal raises PostgreSQL's error (message and detail on two lines)."""
    message, superuser_only, not_permitted = _REFUSALS[signal]
    call = (f"{SIGNAL_FUNCTION}({caller.pid}, {_quote(caller.token)}, pid_arg, "
            f"{_quote(signal.value)}, {{timeout}})")
    answers = {Outcome.SENT: "true", Outcome.NO_BACKEND: "false", Outcome.TIMED_OUT: "false",
               Outcome.SUPERUSER_ONLY: _error(message, superuser_only),
               Outcome.NOT_PERMITTED: _error(message, not_permitted),
               Outcome.OWN_STATEMENT: _error(CANCELED)}
    whens = " ".join(f"WHEN {int(o)} THEN {sql}" for o, sql in answers.items())
    return f"list_transform([{call}], lambda heron_o: CASE heron_o {whens} END)[1]"


def _error(message: str, detail: str | None = None) -> str:
    """DuckDB's error() with PostgreSQL's text: `errors.from_duckdb` reads a second line as the
    detail."""
    lines = [_quote(message)] if detail is None else [_quote(message), _quote(detail)]
    return f"error({' || chr(10) || '.join(lines)})"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

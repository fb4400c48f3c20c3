"""The extended query protocol: named statements and portals.

Contract: an `ExtendedQuery` holds one connection's prepared statements and answers Parse, Bind,
Describe, Execute and Close with PostgreSQL's semantics: named and unnamed statements and
portals (the portals live in the session, beside SQL cursors), parameter types the client leaves
open taken from the statement, Describe without execution (a portal whose columns are known only
by running it, such as INSERT ... RETURNING, runs at Describe and Execute then sends the rows it
kept), Execute with a row limit (PortalSuspended; the rest of a SELECT stays in DuckDB until the
next Execute), and rows sent with exactly the types promised by an earlier Describe. Describe of
a repeated statement is answered from a cache (per statement and parameter types, as long as no
DDL ran). An Execute of an INSERT ... VALUES portal followed, already in the socket, by more
Bind [Describe] Execute groups of the same statement (a driver's executemany or batch) runs them
all as one batch (`Session.insert_many`) and answers each as PostgreSQL would; a batch that fails
falls back to running them one by one, for PostgreSQL's exact answers. SQL's handles on these
statements are answered here too, in the same namespace, as in PostgreSQL: PREPARE name [(types)]
AS statement makes a named statement as Parse does; EXECUTE name [(arguments)] is bound to the
portal of that statement, its parameters the arguments' values (each cast to its declared type),
and Describe of an EXECUTE describes that statement's rows; DEALLOCATE drops one or all.
Handlers append replies through their `Host` (the connection) and raise `SqlError`; the
connection reports it and discards messages until Sync.
"""

from __future__ import annotations

import collections
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from heron.planner import Column, Kind, Result, SqlError, SqlState, Statement
from heron.planner.commands import ExecuteCommand, PrepareCommand
from heron.planner.errors import bind_count_mismatch
from heron.planner.pg_types import UNKNOWN
from heron.server import decode, encode, protocol
from heron.server.portal import Portal
from heron.server.session import Session

T = TypeVar("T")


class Host(Protocol):
    """What the handlers need from their connection."""

    session: Session
    messages: protocol.MessageReader | None  # the client's messages that arrived already

    def send(self, message: bytes) -> None: ...

    async def call(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def execute_portal(self, portal: Portal, max_rows: int) -> None: ...


@dataclass
class PreparedStatement:
    statement: Statement
    param_oids: tuple[int, ...]  # the client's, else the type the statement implies, else 0
    columns: tuple[Column, ...] | None = None
    described: bool = False
    declared: tuple[str, ...] = ()  # SQL PREPARE's parameter types, as written


DESCRIBED_CACHE = 512  # portal descriptions a connection keeps
MAX_BATCH_ROWS = 10_000  # pipelined INSERT executions run as one batch
_OPEN_TYPES = (0, UNKNOWN.oid)  # parameter types a client leaves to the server
_TYPMOD = re.compile(r"\s*\([^()]*\)")  # a type name's modifiers: (10, 2) of numeric(10, 2)


class ExtendedQuery:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.statements: dict[str, PreparedStatement] = {}
        self._bound_from: dict[str, str] = {}  # portal -> the prepared statement it binds
        # Describe of portals by statement and the Python types of their parameter values (which
        # decide the columns' types): libpq describes the portal of every execution. Keyed by
        # the statement's identity (hashing a Statement hashes all its fields), which the entry
        # holds.
        self._described: collections.OrderedDict[
            tuple[int, tuple[type, ...]], tuple[Statement, tuple[Column, ...] | None]] = (
            collections.OrderedDict())
        # RowDescription messages by columns (their identity: the caches above and the session's
        # give the same tuple at each execution; the entry holds it) and result format codes.
        self._descriptions: dict[tuple[int, tuple[int, ...]], tuple[tuple[Column, ...], bytes]] = {}

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
        if not message.name:
            self.statements.pop("", None)  # replaced even if this Parse fails
        self.statements[message.name] = await self._prepared(message.name, message.sql,
                                                             message.param_oids)
        self.host.send(protocol.parse_complete())

    async def prepare(self, statement: Statement) -> Result:
        """SQL's PREPARE (see the module contract)."""
        command = statement.command
        assert isinstance(command, PrepareCommand)
        self.host.session.admit(statement)
        prepared = await self._prepared(command.name, command.body, ())
        prepared.declared = command.types
        self.statements[command.name] = prepared
        return Result("PREPARE", None, None)

    async def _prepared(self, name: str, sql: str, given: Sequence[int]) -> PreparedStatement:
        """`sql` prepared as the statement `name` (not yet kept), its parameters of the types
        `given` where given."""
        if name and name in self.statements:
            raise SqlError(SqlState.DUPLICATE_PREPARED_STATEMENT,
                           f'prepared statement "{name}" already exists')
        session = self.host.session
        statement = session.cached(sql)
        if statement is None:
            statement = await self.host.call(session.prepare, sql)
        else:
            session.admit(statement)
        # Types the client left open (0, or unknown as pg8000 sends them) are the ones the
        # statement implies.
        implied = statement.param_types
        oids = tuple(given[i] if i < len(given) and given[i] not in _OPEN_TYPES else
                     (implied[i] if i < len(implied) else 0)
                     for i in range(max(statement.param_count, len(given))))
        return PreparedStatement(statement, oids)

    async def executed(self, portal: Portal) -> Portal:
        """The portal that EXECUTE `portal` runs (see the module contract)."""
        command = portal.statement.command
        assert isinstance(command, ExecuteCommand)
        prepared = self._named(command.name)
        count = max(len(prepared.param_oids), len(prepared.declared))
        if len(command.arguments) != count:
            raise SqlError(SqlState.SYNTAX_ERROR, "wrong number of parameters for prepared "
                           f'statement "{command.name}"',
                           detail=f"Expected {count} parameters but got "
                                  f"{len(command.arguments)}.")
        values: list[Any] = []
        if command.arguments:
            # (PostgreSQL ignores a parameter type's modifiers: numeric(10,2) is numeric)
            items = ", ".join(f"CAST(({argument}) AS {_TYPMOD.sub('', prepared.declared[i])})"
                              if i < len(prepared.declared) else f"({argument})"
                              for i, argument in enumerate(command.arguments))
            values = await self.host.call(self._values, f"SELECT {items}", portal.params)
        promised = prepared.columns if prepared.described else None
        return Portal(prepared.statement, values[: prepared.statement.param_count],
                      portal.formats, promised=promised)

    def _values(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """The one row `sql` gives (EXECUTE's arguments)."""
        session = self.host.session
        rows = session.execute(session.prepare(sql), params).rows
        batch = rows.next() if rows is not None else None
        assert batch is not None and batch.num_rows == 1
        return [column[0].as_py() for column in batch.columns]

    def _named(self, name: str) -> PreparedStatement:
        prepared = self.statements.get(name)
        if prepared is None:
            raise SqlError(SqlState.INVALID_SQL_STATEMENT_NAME,
                           f'prepared statement "{name}" does not exist')
        return prepared

    async def bind(self, message: protocol.Bind) -> None:
        prepared, values = self._bound(message)
        # A client that described the statement decodes rows with those types.
        promised = prepared.columns if prepared.described else None
        portal = Portal(prepared.statement, values, message.result_formats, promised=promised)
        if prepared.statement.kind is Kind.EXECUTE:
            portal = await self.executed(portal)
        self.host.session.bind(message.portal, portal)
        self._bound_from[message.portal] = message.statement
        self.host.send(protocol.bind_complete())

    def _bound(self, message: protocol.Bind) -> tuple[PreparedStatement, list[Any]]:
        """Bind's statement and parameter values, checked as PostgreSQL checks them."""
        prepared = self._named(message.statement)
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
        return prepared, values[: prepared.statement.param_count]

    async def describe(self, message: protocol.Describe) -> None:
        if message.kind == "S":
            prepared = self._named(message.name)
            self.host.send(protocol.parameter_description(
                [decode.parameter_type(oid) for oid in prepared.param_oids]))
            columns = await self._statement_columns(prepared)
            self.host.send(protocol.no_data() if columns is None else
                           encode.row_description(tuple(columns), (0,) * len(columns)))
            return
        portal = self.host.session.portal(message.name)
        if not portal.statement.returns_rows and portal.cursor is None:
            self.host.send(protocol.no_data())
            return
        # The portal's parameter values take part (DuckDB infers a bare $1 from its value), so the
        # row types announced here are the ones Execute produces. Statements whose columns are
        # known only by running (INSERT ... RETURNING, EXPLAIN) run now; Execute sends their rows.
        columns = portal.promised
        if columns is None and not portal.started:
            columns = await self._portal_columns(portal)
        if columns is None:
            if not portal.started:
                self.host.session.begin_implicit()
                await self.host.call(self.host.session.start, portal)
            assert portal.result is not None
            columns = portal.result.columns
        if columns is None:
            self.host.send(protocol.no_data())
            return
        portal.promised = columns
        self.host.send(self._row_description(columns, portal.formats))

    def _row_description(self, columns: tuple[Column, ...], codes: tuple[int, ...]) -> bytes:
        """RowDescription of `columns` sent in Bind's result formats `codes`, made once for
        each (a prepared statement announces the same at every execution)."""
        key = (id(columns), codes)
        kept = self._descriptions.get(key)
        if kept is not None and kept[0] is columns:
            return kept[1]
        description = _row_description(columns, codes)
        if len(self._descriptions) >= DESCRIBED_CACHE:
            self._descriptions.clear()
        self._descriptions[key] = (columns, description)
        return description

    async def _portal_columns(self, portal: Portal) -> tuple[Column, ...] | None:
        """The columns of a portal's rows, by binding (cached per statement and parameter types
        while the catalog stays the same: DDL changes the cached statements too)."""
        if portal.statement.ai is not None or not portal.statement.bindable:
            # AI plans, and what the session answers (FETCH's columns are its cursor's).
            return await self.host.call(self.host.session.describe, portal.statement,
                                        portal.params)
        statement = portal.statement
        key = (id(statement), tuple(map(type, portal.params)))
        kept = self._described.get(key)
        if kept is not None and kept[0] is statement and self.host.session.cached(
                statement.sql) is statement:
            self._described.move_to_end(key)
            return kept[1]
        columns = await self.host.call(self.host.session.describe, statement, portal.params)
        self._described[key] = (statement, columns)
        if len(self._described) > DESCRIBED_CACHE:
            self._described.popitem(last=False)
        return columns

    async def _statement_columns(self, prepared: PreparedStatement) -> tuple[Column, ...] | None:
        command = prepared.statement.command
        if isinstance(command, ExecuteCommand):  # (its columns are the executed statement's)
            return await self._statement_columns(self._named(command.name))
        if not prepared.described:
            if prepared.statement.returns_rows:
                # Bound with values of the parameters' types, as its executions will be.
                samples = [decode.sample_value(oid) for oid in
                           prepared.param_oids[: prepared.statement.param_count]]
                prepared.columns = await self.host.call(self.host.session.describe,
                                                        prepared.statement, samples)
            prepared.described = True
        return prepared.columns

    async def execute(self, message: protocol.Execute) -> None:
        portal = self.host.session.portal(message.portal)
        if portal.statement.kind is Kind.EMPTY:
            self.host.send(protocol.empty_query_response())
            return
        # The messages up to Sync are one implicit transaction (bookkeeping only until a
        # statement needs DuckDB's).
        self.host.session.begin_implicit()
        if message.max_rows == 0 and _batchable(portal.statement):
            rows = self._pipelined_rows(message.portal)
            if rows and await self._execute_many(portal, rows):
                return
        await self.host.execute_portal(portal, message.max_rows)

    def _pipelined_rows(self, name: str) -> list[_PipelinedRow]:
        """The Bind [Describe] Execute groups that follow in the client's pipeline, binding the
        same statement to the same portal (an executemany): already here, not yet read."""
        pending = self.host.messages.pending if self.host.messages is not None else ()
        statement = self._bound_from.get(name)
        items = list(itertools.islice(pending, 0, 3 * MAX_BATCH_ROWS))
        rows: list[_PipelinedRow] = []
        i = 0
        while i < len(items):
            bind = items[i]
            if not (isinstance(bind, protocol.Bind) and bind.portal == name
                    and bind.statement == statement):
                break
            j = i + 1
            described = j < len(items) and items[j] == protocol.Describe("P", name)
            j += described
            if j >= len(items) or items[j] != protocol.Execute(name, 0):
                break
            try:
                _, values = self._bound(bind)
            except SqlError:
                break  # answered one by one, with its error in its place
            rows.append(_PipelinedRow(values, described, j - i + 1))
            i = j + 1
        return rows

    async def _execute_many(self, portal: Portal, rows: list[_PipelinedRow]) -> bool:
        """Run this Execute and the pipelined ones after it as one batch, answering each as
        PostgreSQL would; False (nothing answered, nothing changed) when the batch could not run
        as one, and they run one by one."""
        session = self.host.session
        done = await self.host.call(session.insert_many, portal.statement,
                                    [portal.params, *(row.values for row in rows)])
        if not done:
            return False
        tag = protocol.command_complete("INSERT 0 1")
        self.host.send(tag)
        assert self.host.messages is not None
        for row in rows:
            for _ in range(row.messages):
                self.host.messages.pending.popleft()
            self.host.send(protocol.bind_complete())
            if row.described:
                self.host.send(protocol.no_data())
            self.host.send(tag)
        return True

    async def close(self, message: protocol.Close) -> None:
        if message.kind == "S":
            self.statements.pop(message.name, None)
        else:
            await self.host.call(self.host.session.close_portal, message.name)
        self.host.send(protocol.close_complete())


@dataclass(frozen=True, slots=True)
class _PipelinedRow:
    values: list[Any]  # the Bind's parameter values
    described: bool  # a Describe of the portal came between Bind and Execute
    messages: int  # how many of the client's messages it is


def _batchable(statement: Statement) -> bool:
    """An INSERT whose pipelined executions may run as one batch (`Session.insert_many`)."""
    return (statement.kind is Kind.INSERT and statement.param_count > 0
            and not statement.returns_rows and statement.ai is None)


def _expand_formats(codes: Sequence[int], count: int) -> list[int] | None:
    """Bind's format codes for `count` items: none means all text, one applies to all, else
    one per item; None when the counts disagree (the caller words the 08P01 error)."""
    if not codes:
        return [0] * count
    if len(codes) == 1:
        return [codes[0]] * count
    return list(codes) if len(codes) == count else None


def _row_description(columns: Sequence[Column], codes: Sequence[int]) -> bytes:
    """RowDescription of `columns` sent in the formats of Bind's result format `codes`."""
    return encode.row_description(tuple(columns), tuple(result_formats(codes, len(columns))))


def result_formats(codes: Sequence[int], columns: int) -> list[int]:
    """The format of each result column, from Bind's result format codes."""
    formats = _expand_formats(codes, columns)
    if formats is None:
        raise SqlError(SqlState.PROTOCOL_VIOLATION,
                       f"bind message has {len(codes)} result formats but query has "
                       f"{columns} columns")
    return formats

"""A session's transaction: PostgreSQL's transaction semantics over a DuckDB connection.

Contract: one `Transaction` per session, driven from the session's worker thread.
- States are PostgreSQL's, as ReadyForQuery reports them (`TransactionStatus`): idle, in a block,
  or in a failed block where only ROLLBACK (or COMMIT, which rolls back) and ROLLBACK TO run.
- Blocks are explicit (BEGIN ... COMMIT) or implicit, opened by the protocol around several
  statements of one Query message or the extended-protocol messages up to Sync: all or nothing.
- DuckDB's transaction is begun lazily, where PostgreSQL takes its snapshot: before the first
  statement of an explicit block, and in an implicit block before the first statement that writes
  (a statement that only reads needs none: PostgreSQL gives each statement of an implicit block
  its own snapshot). A block that never reached DuckDB ends without a COMMIT there.
- READ ONLY transactions (BEGIN READ ONLY, SET TRANSACTION READ ONLY,
  default_transaction_read_only) refuse statements that write (25006).
- DuckDB has no savepoints; they are emulated. Every statement with effects run in the block is
  journaled. RELEASE forgets savepoints; ROLLBACK TO a savepoint after which nothing was written
  (and nothing failed, which aborts DuckDB's transaction) costs nothing; otherwise DuckDB's
  transaction is rolled back and the journal up to the savepoint replayed in a new one. A replay
  must reproduce each statement's command tag, or the transaction fails with 40001 (another
  session changed what it read, as a serializable transaction would be told). A statement that
  cannot be replayed exactly — one drawing from a sequence or calling a volatile function (itself
  or through a column default), running AI functions, or COPY FROM STDIN — makes ROLLBACK TO a
  savepoint after it fail with 0A000 and a hint, leaving the transaction failed: the client then
  rolls it back whole. After a replay the transaction continues on a fresh snapshot.
- Its transactions that write take part in the server's `write_conflicts.Writers` (from the
  first write until they end), and `alone` says whether the statement about to run is the first
  of its DuckDB transaction (an autocommit statement, or the first to begin the block's there),
  which a write conflict may then run again on a new snapshot.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import Kind, Planner, Result, SqlError, SqlState, Statement
from heron.planner.commands import Isolation, TransactionOptions
from heron.server.write_conflicts import Writer, Writers


class TransactionStatus(enum.StrEnum):
    """PostgreSQL's transaction states, as ReadyForQuery reports them."""

    IDLE = "I"
    IN_BLOCK = "T"
    FAILED = "E"  # only ROLLBACK (or COMMIT, which rolls back) and ROLLBACK TO run


# Statements that never change the database (everything else might).
READ_ONLY_KINDS = frozenset({Kind.EMPTY, Kind.SELECT, Kind.SHOW, Kind.FETCH, Kind.CLOSE,
                             Kind.COPY_OUT, Kind.DEALLOCATE, Kind.PREPARE, Kind.LISTEN, Kind.NOTIFY,
                             Kind.LOCK, Kind.SET_CONSTRAINTS})
# Why a statement's text makes a replay inexact: volatile functions and sequences.
_VOLATILE = re.compile(
    r"\b(random|gen_random_uuid|uuid|uuidv4|uuidv7|nextval|setval|now|current_timestamp|"
    r"current_date|current_time|localtimestamp|localtime|transaction_timestamp|"
    r"statement_timestamp|clock_timestamp|get_current_time|get_current_timestamp|setseed)\b",
    re.IGNORECASE)
_WRITES_INTO = (Kind.INSERT, Kind.UPDATE, Kind.MERGE)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One statement with effects, as it ran in the block."""

    statement: Statement
    params: tuple[Any, ...]
    tag: str  # compared with the replay's


@dataclass(frozen=True, slots=True)
class _Savepoint:
    name: str
    mark: int  # journal entries before it


@dataclass
class Transaction:
    planner: Planner
    writer: Writer = field(default_factory=lambda: Writer(Writers()))
    status: TransactionStatus = TransactionStatus.IDLE
    implicit: bool = False  # the open block was opened by the protocol, not by BEGIN
    isolation: Isolation = Isolation.REPEATABLE_READ
    read_only: bool = False
    _open: bool = False  # DuckDB's transaction was begun
    _aborted: bool = False  # a statement failed inside DuckDB's transaction
    _alone: bool = True  # the statement `before` let in is the first of its DuckDB transaction
    _journal: list[_Entry] = field(default_factory=list)
    _savepoints: list[_Savepoint] = field(default_factory=list)

    @property
    def opened(self) -> bool:
        """Whether DuckDB's transaction was begun (ending the block then commits or rolls back
        there)."""
        return self._open

    # -- blocks ----------------------------------------------------------------------------

    def begin(self, options: TransactionOptions, defaults: TransactionOptions) -> str | None:
        """BEGIN: opens an explicit block (or makes the implicit one explicit). Returns a warning
        for the client when a block was already open, as PostgreSQL does."""
        if self.status is not TransactionStatus.IDLE and not self.implicit:
            return "there is already a transaction in progress"
        if self.status is TransactionStatus.IDLE:
            self._start(defaults)
        self.implicit = False
        self.set_options(options)
        return None

    def begin_implicit(self, defaults: TransactionOptions) -> None:
        if self.status is TransactionStatus.IDLE:
            self._start(defaults)
            self.implicit = True

    def _start(self, defaults: TransactionOptions) -> None:
        self.status = TransactionStatus.IN_BLOCK
        self.isolation = defaults.isolation or Isolation.REPEATABLE_READ
        self.read_only = bool(defaults.read_only)

    def set_options(self, options: TransactionOptions) -> None:
        """SET TRANSACTION (or BEGIN's modes) for the open block."""
        if options.isolation is not None:
            if self._open:
                raise SqlError(SqlState.ACTIVE_SQL_TRANSACTION, "SET TRANSACTION ISOLATION LEVEL "
                               "must be called before any query")
            self.isolation = options.isolation
        if options.read_only is not None:
            self.read_only = options.read_only

    def end_implicit(self, failed: bool) -> None:
        """Commit the implicit block, or roll it back if a statement failed."""
        if self.implicit:
            if failed or self.status is TransactionStatus.FAILED:
                self.rollback()
            else:
                self.commit()

    def commit(self) -> tuple[str, str | None]:
        """COMMIT: (tag, warning). A failed block rolls back and is tagged ROLLBACK."""
        if self.status is TransactionStatus.IDLE:
            return "COMMIT", "there is no transaction in progress"
        failed = self.status is TransactionStatus.FAILED
        if failed:
            self._end(commit=False)
            return "ROLLBACK", None
        self._end(commit=True)
        return "COMMIT", None

    def rollback(self) -> tuple[str, str | None]:
        if self.status is TransactionStatus.IDLE:
            return "ROLLBACK", "there is no transaction in progress"
        self._end(commit=False)
        return "ROLLBACK", None

    def _end(self, *, commit: bool) -> None:
        opened = self._open
        self.status = TransactionStatus.IDLE
        self.implicit = False
        self._open = self._aborted = False
        self._journal.clear()
        self._savepoints.clear()
        try:
            if opened and commit:
                self.planner.commit()  # raises after rolling back when DuckDB refuses
            elif opened:
                self.planner.rollback()
        finally:
            self.writer.ends()

    # -- statements ------------------------------------------------------------------------

    def before(self, statement: Statement) -> None:
        """Called before a statement reaches DuckDB: refuses writes in a read-only transaction
        and begins DuckDB's transaction where the block needs it."""
        self._alone = not self._open
        if self.status is not TransactionStatus.IN_BLOCK:
            return
        writes = statement.kind not in READ_ONLY_KINDS
        if writes and self.read_only:
            raise SqlError(SqlState.READ_ONLY_SQL_TRANSACTION,
                           f"cannot execute {statement.verb or statement.kind.name} in a "
                           "read-only transaction")
        if writes:
            self.writer.begins()
        if not self._open and (writes or not self.implicit):
            self.planner.begin()
            self._open = True

    @property
    def alone(self) -> bool:
        """Whether the statement `before` let in is the first to run in its DuckDB transaction
        (nothing there was seen before it)."""
        return self._alone

    def after(self, statement: Statement, params: tuple[Any, ...], result: Result) -> None:
        """Journal a statement that ran in the block and may have changed something."""
        if self._open and statement.kind not in READ_ONLY_KINDS:
            self._journal.append(_Entry(statement, params, result.command_tag))

    def fail(self) -> None:
        """A statement failed: an explicit block becomes FAILED; DuckDB's transaction (if any)
        is aborted."""
        if self.status is TransactionStatus.IN_BLOCK:
            self.status = TransactionStatus.FAILED
        if self._open:
            self._aborted = True

    def mark(self) -> int:
        """Where the block stands, to come back to with `restore` (an implicit savepoint)."""
        return len(self._journal)

    def restore(self, mark: int) -> bool:
        """Undo what ran since `mark` (DuckDB's transaction may have failed): True once done;
        False when a statement before it cannot be replayed (the block is then failed)."""
        try:
            self._replay("(batch)", self._journal[:mark])
        except SqlError as exc:
            if exc.sqlstate is SqlState.FEATURE_NOT_SUPPORTED:
                return False
            raise
        if self.status is TransactionStatus.FAILED:
            self.status = TransactionStatus.IN_BLOCK
        return True

    # -- savepoints ------------------------------------------------------------------------

    def savepoint(self, name: str) -> None:
        self._require_block("SAVEPOINT")
        self._savepoints.append(_Savepoint(name, len(self._journal)))

    def release(self, name: str) -> None:
        self._require_block("RELEASE SAVEPOINT")
        index = self._find(name)
        del self._savepoints[index:]

    def rollback_to(self, name: str) -> None:
        """ROLLBACK TO SAVEPOINT: undo what ran after it (see the module docstring)."""
        self._require_block("ROLLBACK TO SAVEPOINT")
        index = self._find(name)
        mark = self._savepoints[index].mark
        del self._savepoints[index + 1 :]
        if self._aborted or len(self._journal) > mark:
            self._replay(name, self._journal[:mark])
        self.status = TransactionStatus.IN_BLOCK

    def _require_block(self, verb: str) -> None:
        if self.status is TransactionStatus.IDLE or self.implicit:
            raise SqlError(SqlState.NO_ACTIVE_SQL_TRANSACTION,
                           f"{verb} can only be used in transaction blocks")

    def _find(self, name: str) -> int:
        for index in range(len(self._savepoints) - 1, -1, -1):
            if self._savepoints[index].name == name:
                return index
        raise SqlError(SqlState.INVALID_SAVEPOINT_SPECIFICATION,
                       f'savepoint "{name}" does not exist')

    def _replay(self, name: str, entries: list[_Entry]) -> None:
        """Roll DuckDB's transaction back and run `entries` again in a new one, each checked for
        being repeatable (against the catalog as the replay has rebuilt it so far) and for giving
        the command tag it gave the first time."""
        self.planner.rollback()
        self.writer.ends()
        self._open = self._aborted = False
        self._journal = []
        if not entries:
            return
        self.writer.begins()  # (every journaled statement may write)
        self.planner.begin()
        self._open = True
        for position, entry in enumerate(entries, 1):
            reason = self._not_replayable(entry.statement)
            if reason is not None:
                self.fail()
                raise SqlError(
                    SqlState.FEATURE_NOT_SUPPORTED,
                    f'cannot roll back to savepoint "{name}": statement {position} of the '
                    f"transaction ({entry.statement.verb}) {reason}",
                    detail="Heron emulates savepoints by replaying the transaction's earlier "
                           "statements, and this one would not give the same result twice.",
                    hint="Roll back the whole transaction and run it again.")
            try:
                tag = self.planner.execute(entry.statement, entry.params).command_tag
            except SqlError as exc:
                tag = f"error {exc.sqlstate}"
            if tag != entry.tag:
                self.fail()
                raise SqlError(
                    SqlState.SERIALIZATION_FAILURE,
                    "could not serialize access due to concurrent update",
                    detail=f'Rolling back to savepoint "{name}" replays the transaction, and '
                           f"{entry.statement.verb} gave {tag!r} instead of {entry.tag!r}.",
                    hint="Roll back and retry the transaction.")
            self._journal.append(entry)

    def _not_replayable(self, statement: Statement) -> str | None:
        """Why running `statement` again could give another result, or None."""
        if statement.ai is not None:
            return "calls AI functions"
        if statement.kind is Kind.COPY_IN:
            return "copied rows from the client"
        if m := _VOLATILE.search(statement.sql):
            return f"calls {m[1].lower()}()"
        if statement.kind in _WRITES_INTO:
            for default in self._column_defaults(statement.sql):
                if m := _VOLATILE.search(default):
                    return f"fills a column with its default {default}"
        return None

    def _column_defaults(self, sql: str) -> list[str]:
        """The column defaults of the table an INSERT, UPDATE or MERGE writes into."""
        try:
            tree = sqlglot.parse_one(sql, read="postgres")
        except SqlglotError:
            return []
        target = tree.find(exp.Table)
        if target is None:
            return []
        return list(self.planner.column_defaults(target.name))

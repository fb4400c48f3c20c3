"""PostgreSQL's advisory locks: pg_advisory_lock and its family, held across the server.

Migration tools take one before they migrate (Rails and golang-migrate pg_advisory_lock or
pg_try_advisory_lock, Prisma pg_advisory_lock(72707369)), so that two deploys never migrate at
once; applications use them as named mutexes.

Contract:
- `LockTable` is one server's lock table, safe to use from any thread, with PostgreSQL's
  eight lock modes (`Mode`) and their conflicts (`CONFLICTS`): advisory locks are SHARE and
  EXCLUSIVE ones, LOCK TABLE takes its mode (`server.session`). A holder (a backend's PID)
  `acquire`s a key — (1, key, 0) for a bigint key, (2, key1, key2) for two int keys, as
  PostgreSQL keeps the two kinds apart; (3, oid, 0) for a table — in a mode, for its session
  or for its transaction, waiting or not. A holder's own locks never conflict with each other,
  and each acquisition is counted; another holder's lock of the key in a conflicting mode
  keeps it waiting. While it waits, `acquire` asks `stop()` every `POLL_S` and gives up
  (False) once it says so: the session's statement was cancelled or timed out or its client
  left (the SQL function then fails with 57014, which the session words as a timeout where it
  was one). `release` gives back one session-level
  acquisition of a mode (False when the holder has none), `end_transaction` every
  transaction-level one, `release_all` everything of a holder (the session's end;
  pg_advisory_unlock_all keeps the transaction's, as PostgreSQL does).
- `register(con, locks)` registers `FUNCTION` on a connection that outlives every session (as
  `pg_activity.register`): `FUNCTION(pid, token, action, space, key1, key2)` does `action` for
  the session that proves its PID with its token (`pg_activity.Caller`); `locks` is that
  check's owner (the server's `Activity`). `install(con, caller)` creates a session's TEMP
  macros, each passing its caller: pg_advisory_lock, pg_advisory_lock_shared,
  pg_try_advisory_lock(_shared), pg_advisory_xact_lock(_shared),
  pg_try_advisory_xact_lock(_shared), pg_advisory_unlock(_shared), pg_advisory_unlock_all,
  each of a bigint key or of two int keys. Without `register` (a planner used without a
  server) every lock is granted at once and unlocking finds none held.

Differences from PostgreSQL: the functions PostgreSQL types void answer '' typed text; the
locks do not show in pg_locks; a wait is not part of deadlock detection (two sessions waiting
on each other wait until cancelled or statement_timeout).
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from collections.abc import Callable
from typing import Protocol

import duckdb

from heron.planner.errors import SqlError, carried, query_canceled
from heron.planner.pg_activity import Caller

FUNCTION = "heron_advisory"
POLL_S = 0.05  # how often a waiting acquisition asks whether to give up
VOID = "''"  # what a function PostgreSQL types void answers (its text form)

Key = tuple[int, int, int]  # (1, key, 0) or (2, key1, key2); (3, a table's OID, 0): LOCK TABLE


class Mode(enum.IntEnum):
    """PostgreSQL's lock modes (advisory locks are SHARE and EXCLUSIVE ones)."""

    ACCESS_SHARE = 1
    ROW_SHARE = 2
    ROW_EXCLUSIVE = 3
    SHARE_UPDATE_EXCLUSIVE = 4
    SHARE = 5
    SHARE_ROW_EXCLUSIVE = 6
    EXCLUSIVE = 7
    ACCESS_EXCLUSIVE = 8


# PostgreSQL's conflict table: the modes each mode cannot be taken beside (another holder's).
CONFLICTS = {
    Mode.ACCESS_SHARE: {Mode.ACCESS_EXCLUSIVE},
    Mode.ROW_SHARE: {Mode.EXCLUSIVE, Mode.ACCESS_EXCLUSIVE},
    Mode.ROW_EXCLUSIVE: {Mode.SHARE, Mode.SHARE_ROW_EXCLUSIVE, Mode.EXCLUSIVE,
                         Mode.ACCESS_EXCLUSIVE},
    Mode.SHARE_UPDATE_EXCLUSIVE: {Mode.SHARE_UPDATE_EXCLUSIVE, Mode.SHARE,
                                  Mode.SHARE_ROW_EXCLUSIVE, Mode.EXCLUSIVE,
                                  Mode.ACCESS_EXCLUSIVE},
    Mode.SHARE: {Mode.ROW_EXCLUSIVE, Mode.SHARE_UPDATE_EXCLUSIVE, Mode.SHARE_ROW_EXCLUSIVE,
                 Mode.EXCLUSIVE, Mode.ACCESS_EXCLUSIVE},
    Mode.SHARE_ROW_EXCLUSIVE: {Mode.ROW_EXCLUSIVE, Mode.SHARE_UPDATE_EXCLUSIVE, Mode.SHARE,
                               Mode.SHARE_ROW_EXCLUSIVE, Mode.EXCLUSIVE, Mode.ACCESS_EXCLUSIVE},
    Mode.EXCLUSIVE: set(Mode) - {Mode.ACCESS_SHARE},
    Mode.ACCESS_EXCLUSIVE: set(Mode),
}


@dataclasses.dataclass
class _Held:
    """What one holder holds of one key: acquisitions by (mode, transaction level)."""

    counts: dict[tuple[Mode, bool], int] = dataclasses.field(default_factory=dict)

    def modes(self) -> set[Mode]:
        return {mode for (mode, _), n in self.counts.items() if n > 0}


class LockTable:
    """One server's lock table (see the module docstring)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held: dict[Key, dict[int, _Held]] = {}  # key -> holder -> what it holds

    def acquire(self, holder: int, key: Key, *, mode: Mode, transaction: bool, wait: bool,
                stop: Callable[[], bool] = lambda: False) -> bool:
        with self._changed:
            while self._conflicts(holder, key, mode):
                if not wait or stop():
                    return False
                self._changed.wait(POLL_S)
            held = self._held.setdefault(key, {}).setdefault(holder, _Held())
            held.counts[(mode, transaction)] = held.counts.get((mode, transaction), 0) + 1
            return True

    def release(self, holder: int, key: Key, *, mode: Mode) -> bool:
        with self._changed:
            held = self._held.get(key, {}).get(holder)
            if held is None or held.counts.get((mode, False), 0) == 0:
                return False
            held.counts[(mode, False)] -= 1
            self._forget_empty(key, holder)
            self._changed.notify_all()
            return True

    def end_transaction(self, holder: int) -> None:
        self._drop(holder, lambda transaction: transaction)

    def release_all(self, holder: int, *, transaction_too: bool = True) -> None:
        self._drop(holder, lambda transaction: transaction_too or not transaction)

    def held(self, holder: int) -> list[tuple[Key, Mode, bool, int]]:
        """What `holder` holds: (key, mode, transaction level, count), for tests and views."""
        with self._changed:
            return sorted((key, mode, transaction, n) for key, holders in self._held.items()
                          for h, held in holders.items() if h == holder
                          for (mode, transaction), n in held.counts.items() if n > 0)

    def _drop(self, holder: int, which: Callable[[bool], bool]) -> None:
        """Release every acquisition of `holder` whose transaction level `which` picks."""
        with self._changed:
            for key in list(self._held):
                held = self._held[key].get(holder)
                if held is None:
                    continue
                for mode, transaction in list(held.counts):
                    if which(transaction):
                        held.counts[(mode, transaction)] = 0
                self._forget_empty(key, holder)
            self._changed.notify_all()

    def _conflicts(self, holder: int, key: Key, mode: Mode) -> bool:
        """Whether another holder's lock of `key` keeps `holder` from taking it in `mode`."""
        return any(other != holder and held.modes() & CONFLICTS[mode]
                   for other, held in self._held.get(key, {}).items())

    def _forget_empty(self, key: Key, holder: int) -> None:
        holders = self._held[key]
        if not holders[holder].modes():
            del holders[holder]
        if not holders:
            del self._held[key]


class Locks(Protocol):
    """The server side of `FUNCTION`: checks the caller, then does `action` for it (its
    `SqlError` is the statement's)."""

    def advisory(self, caller: Caller, action: str, key: Key) -> bool: ...


def register(con: duckdb.DuckDBPyConnection, locks: Locks) -> None:
    """Register `FUNCTION` (see the module docstring) on a connection that outlives every
    session."""

    def call(pid: int, token: str, action: str, space: int, key1: int, key2: int) -> bool:
        try:
            granted = locks.advisory(Caller(pid, token), action, (space, key1, key2))
        except SqlError as exc:
            raise carried(exc) from None
        if not granted and action.split()[0] == "lock":
            # The wait was given up (the statement cancelled or timed out, its client gone): an
            # error of its own, as DuckDB may finish the statement before it sees its interrupt
            # (then pg_advisory_lock answered as if granted).
            raise carried(query_canceled())
        return granted

    con.create_function(FUNCTION, call, ["INTEGER", "VARCHAR", "VARCHAR", "INTEGER", "BIGINT",
                                         "BIGINT"], "BOOLEAN", side_effects=True)


# The SQL functions: name -> (action, what it returns: a boolean, or void as '').
_FUNCTIONS = {
    "pg_advisory_lock": ("lock", False), "pg_advisory_lock_shared": ("lock shared", False),
    "pg_try_advisory_lock": ("try", True), "pg_try_advisory_lock_shared": ("try shared", True),
    "pg_advisory_xact_lock": ("lock xact", False),
    "pg_advisory_xact_lock_shared": ("lock shared xact", False),
    "pg_try_advisory_xact_lock": ("try xact", True),
    "pg_try_advisory_xact_lock_shared": ("try shared xact", True),
    "pg_advisory_unlock": ("unlock", True), "pg_advisory_unlock_shared": ("unlock shared", True),
}


def install(con: duckdb.DuckDBPyConnection, caller: Caller) -> None:
    """Create the session's macros (see the module docstring)."""
    registered = con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = ?",
                             [FUNCTION]).fetchall()[0][0]
    token = caller.token.replace("'", "''")

    def call(action: str, key: str) -> str:
        if not registered:  # no server: every lock granted, none held to unlock
            return "false" if action in ("unlock", "unlock shared") else "true"
        return f"{FUNCTION}({caller.pid}, '{token}', '{action}', {key})"

    for name, (action, boolean) in _FUNCTIONS.items():
        overloads = []
        for args, key in (("key_arg", "1, key_arg, 0"),
                          ("key1_arg, key2_arg", "2, key1_arg, key2_arg")):
            body = call(action, key)
            value = body if boolean else f"CASE WHEN {body} THEN {VOID} END"
            overloads.append(f"({args}) AS {value}")
        con.execute(f"CREATE OR REPLACE TEMP MACRO {name}{', '.join(overloads)}")
    con.execute(f"CREATE OR REPLACE TEMP MACRO pg_advisory_unlock_all() AS "
                f"CASE WHEN {call('unlock all', '0, 0, 0')} THEN {VOID} END")

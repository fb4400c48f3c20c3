"""The lock table (`planner.pg_advisory.LockTable`) alone, and its SQL functions on
a planner without a server (every lock granted at once)."""

from __future__ import annotations

import threading

import duckdb
import pytest

from heron.planner.pg_advisory import LockTable, Mode
from heron.planner.planner import Planner

KEY = (1, 7, 0)


def test_modes_conflict_as_postgresqls():
    locks = LockTable()
    assert locks.acquire(1, KEY, mode=Mode.SHARE, transaction=False, wait=False)
    assert locks.acquire(2, KEY, mode=Mode.SHARE, transaction=False, wait=False)
    assert not locks.acquire(2, KEY, mode=Mode.EXCLUSIVE, transaction=False, wait=False)
    assert locks.release(2, KEY, mode=Mode.SHARE)
    assert not locks.release(2, KEY, mode=Mode.SHARE)  # none left of that mode
    assert locks.acquire(1, KEY, mode=Mode.EXCLUSIVE, transaction=True, wait=False)  # its own
    assert not locks.acquire(2, KEY, mode=Mode.SHARE, transaction=False, wait=False)
    locks.end_transaction(1)
    assert locks.held(1) == [(KEY, Mode.SHARE, False, 1)]
    locks.release_all(1)
    assert locks.held(1) == [] and locks.acquire(2, KEY, mode=Mode.EXCLUSIVE, transaction=False,
                                                 wait=False)


def test_table_lock_modes_conflict_as_postgresqls():
    locks = LockTable()
    assert locks.acquire(1, KEY, mode=Mode.SHARE_UPDATE_EXCLUSIVE, transaction=True, wait=False)
    assert locks.acquire(2, KEY, mode=Mode.ACCESS_SHARE, transaction=True, wait=False)
    assert locks.acquire(2, KEY, mode=Mode.ROW_EXCLUSIVE, transaction=True, wait=False)
    assert not locks.acquire(2, KEY, mode=Mode.SHARE_UPDATE_EXCLUSIVE, transaction=True,
                             wait=False)
    assert not locks.acquire(3, KEY, mode=Mode.SHARE, transaction=True, wait=False)
    locks.end_transaction(1)
    assert not locks.acquire(3, KEY, mode=Mode.SHARE, transaction=True, wait=False)  # 2's
    locks.end_transaction(2)
    assert locks.acquire(3, KEY, mode=Mode.ACCESS_EXCLUSIVE, transaction=True, wait=False)


def test_a_wait_gives_up_when_told_to_stop():
    locks = LockTable()
    locks.acquire(1, KEY, mode=Mode.EXCLUSIVE, transaction=False, wait=False)
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    assert not locks.acquire(2, KEY, mode=Mode.EXCLUSIVE, transaction=False, wait=True,
                             stop=stop.is_set)
    assert locks.held(2) == []


def test_a_wait_is_granted_on_release():
    locks = LockTable()
    locks.acquire(1, KEY, mode=Mode.EXCLUSIVE, transaction=False, wait=False)
    threading.Timer(0.2, lambda: locks.release(1, KEY, mode=Mode.EXCLUSIVE)).start()
    assert locks.acquire(2, KEY, mode=Mode.EXCLUSIVE, transaction=False, wait=True)
    assert locks.held(2) == [(KEY, Mode.EXCLUSIVE, False, 1)]


@pytest.fixture
def planner():
    instance = Planner(duckdb.connect())
    yield instance
    instance.close()


def test_without_a_server_every_lock_is_granted_and_none_is_held(planner):
    result = planner.execute(planner.prepare(
        "SELECT pg_advisory_lock(1), pg_try_advisory_lock(1, 2), pg_advisory_unlock(1), "
        "pg_advisory_xact_lock_shared(3), pg_advisory_unlock_all()"))
    assert list(result.rows.read_all().to_pylist()[0].values()) == ["", True, False, "", ""]


def test_an_interruption_is_57014_whatever_class_it_reaches_python_as():
    """(An interrupted wait of the lock function once surfaced as XX000 under statement_timeout
    in CI: the message, not only the exception's class, says it was an interruption.)"""
    from heron.planner.errors import from_duckdb

    for error in (duckdb.Error, duckdb.InternalException, duckdb.InterruptException):
        assert from_duckdb(error("INTERRUPT Error: Interrupted!")).sqlstate.value == "57014"

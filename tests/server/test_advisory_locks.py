"""Advisory locks and LOCK TABLE across sessions of one server (`planner.pg_advisory`,
`server.activity`, `server.session`): waits, try-locks, shared locks, transaction-level locks,
and the ends that release them."""

from __future__ import annotations

import threading
import time

import pytest

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def other(heron_server):
    with psycopg.connect(heron_server.dsn, autocommit=True) as connection:
        yield connection


def one(conn, sql: str):
    return conn.execute(sql).fetchone()[0]


def test_a_held_lock_keeps_others_out_until_it_is_unlocked(conn, other):
    assert one(conn, "SELECT pg_advisory_lock(41)") == ""
    assert one(conn, "SELECT pg_try_advisory_lock(41)") is True  # a holder's own: counted
    assert one(other, "SELECT pg_try_advisory_lock(41)") is False
    assert one(other, "SELECT pg_try_advisory_lock(0, 41)") is True  # the other kind of key
    assert one(conn, "SELECT pg_advisory_unlock(41)") is True
    assert one(other, "SELECT pg_try_advisory_lock(41)") is False  # still held once
    assert one(conn, "SELECT pg_advisory_unlock(41)") is True
    assert one(other, "SELECT pg_try_advisory_lock(41)") is True
    other.execute("SELECT pg_advisory_unlock_all()")


def test_a_waiting_lock_is_granted_when_the_holder_lets_go(conn, other):
    conn.execute("SELECT pg_advisory_lock(42)")
    granted = []

    def wait():
        started = time.monotonic()
        other.execute("SELECT pg_advisory_lock(42)")
        granted.append(time.monotonic() - started)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    assert not granted
    conn.execute("SELECT pg_advisory_unlock(42)")
    waiter.join(10)
    assert granted and granted[0] >= 0.4
    assert one(conn, "SELECT pg_try_advisory_lock(42)") is False  # the waiter holds it now
    other.execute("SELECT pg_advisory_unlock(42)")


def test_unlocking_what_is_not_held_warns(conn):
    warnings = []
    conn.add_notice_handler(lambda d: warnings.append((d.severity, d.message_primary)))
    assert one(conn, "SELECT pg_advisory_unlock(43)") is False
    assert one(conn, "SELECT pg_advisory_unlock_shared(43)") is False
    assert warnings == [("WARNING", "you don't own a lock of type ExclusiveLock"),
                        ("WARNING", "you don't own a lock of type ShareLock")]


def test_shared_locks_share_and_keep_an_exclusive_one_out(conn, other):
    conn.execute("SELECT pg_advisory_lock_shared(44)")
    assert one(other, "SELECT pg_try_advisory_lock_shared(44)") is True
    assert one(other, "SELECT pg_try_advisory_lock(44)") is False  # conn's shared one
    assert one(conn, "SELECT pg_try_advisory_lock(44)") is False  # other's shared one
    assert one(other, "SELECT pg_advisory_unlock_shared(44)") is True
    assert one(conn, "SELECT pg_try_advisory_lock(44)") is True  # its own shared: no conflict
    conn.execute("SELECT pg_advisory_unlock_all()")


def test_transaction_locks_end_with_their_transaction(conn, other):
    conn.execute("BEGIN")
    conn.execute("SELECT pg_advisory_xact_lock(45)")
    assert one(other, "SELECT pg_try_advisory_lock(45)") is False
    conn.execute("SELECT pg_advisory_unlock_all()")  # session locks only
    assert one(other, "SELECT pg_try_advisory_lock(45)") is False
    conn.execute("COMMIT")
    assert one(other, "SELECT pg_try_advisory_lock(45)") is True
    other.execute("SELECT pg_advisory_unlock(45)")
    one(conn, "SELECT pg_try_advisory_xact_lock(45)")  # autocommit: over with the statement
    assert one(other, "SELECT pg_try_advisory_lock(45)") is True
    other.execute("SELECT pg_advisory_unlock(45)")


def test_a_session_that_ends_lets_its_locks_go(heron_server, other):
    with psycopg.connect(heron_server.dsn, autocommit=True) as leaving:
        leaving.execute("SELECT pg_advisory_lock(46)")
        assert one(other, "SELECT pg_try_advisory_lock(46)") is False
    deadline = time.monotonic() + 10
    while one(other, "SELECT pg_try_advisory_lock(46)") is False:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    other.execute("SELECT pg_advisory_unlock(46)")


def test_a_wait_ends_with_the_statement_timeout(conn, other):
    conn.execute("SELECT pg_advisory_lock(47)")
    other.execute("SET statement_timeout = 300")
    started = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        other.execute("SELECT pg_advisory_lock(47)")
    assert time.monotonic() - started < 5
    other.execute("RESET statement_timeout")
    assert one(other, "SELECT pg_try_advisory_lock(47)") is False  # not granted after all
    conn.execute("SELECT pg_advisory_unlock(47)")


def test_lock_table_waits_for_another_block_s_lock_of_the_table(conn, other):
    conn.execute("DROP TABLE IF EXISTS lock_target")
    conn.execute("CREATE TABLE lock_target (i int)")
    conn.execute("BEGIN")
    conn.execute("LOCK TABLE lock_target IN SHARE UPDATE EXCLUSIVE MODE")  # Ecto's migration lock
    other.execute("BEGIN")
    with pytest.raises(psycopg.errors.LockNotAvailable):
        other.execute("LOCK TABLE lock_target IN EXCLUSIVE MODE NOWAIT")
    other.execute("ROLLBACK")
    other.execute("BEGIN")
    other.execute("LOCK TABLE lock_target IN ACCESS SHARE MODE")  # shared: no conflict
    other.execute("ROLLBACK")
    granted = []

    def wait():
        with other.transaction():
            other.execute("LOCK TABLE lock_target")
            granted.append(time.monotonic())

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    assert not granted
    released = time.monotonic()
    conn.execute("COMMIT")
    waiter.join(10)
    assert granted and granted[0] >= released
    other.execute("SET statement_timeout = 300")
    conn.execute("BEGIN")
    conn.execute("LOCK TABLE lock_target")
    other.execute("BEGIN")
    with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
        other.execute("LOCK TABLE lock_target")
    other.execute("ROLLBACK")
    other.execute("RESET statement_timeout")
    conn.execute("ROLLBACK")
    assert one(other, "SELECT 1") == 1  # nothing left cancelled


def _answers_meanwhile(heron_server) -> float:
    """Seconds a third session's `SELECT 1` takes (the server must not stop for a wait)."""
    with psycopg.connect(heron_server.dsn, autocommit=True) as third:
        started = time.monotonic()
        assert one(third, "SELECT 1") == 1
        return time.monotonic() - started


def test_a_lock_statement_that_ran_quick_many_times_still_waits_apart(heron_server, conn,
                                                                      other):
    # Quick runs of a statement could have the next run on the event loop's thread; one that
    # called a lock function never does, so its wait holds up no other session.
    for _ in range(6):
        conn.execute("SELECT pg_advisory_lock(48)", prepare=True)
    for _ in range(6):
        assert one(conn, "SELECT pg_advisory_unlock(48)") is True
    other.execute("SELECT pg_advisory_lock(48)")
    granted = []

    def wait():
        conn.execute("SELECT pg_advisory_lock(48)", prepare=True)
        granted.append(time.monotonic())

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)
    assert _answers_meanwhile(heron_server) < 1.0
    assert not granted
    other.execute("SELECT pg_advisory_unlock(48)")
    waiter.join(10)
    assert granted
    conn.execute("SELECT pg_advisory_unlock(48)")


def test_a_quick_statement_that_calls_a_lock_at_last_never_stops_the_server(heron_server, conn,
                                                                             other):
    sql = "SELECT pg_advisory_lock(49) FROM (SELECT 1) AS t WHERE %s"
    for _ in range(10):  # no row: the lock function is not called, and the runs are quick
        assert conn.execute(sql, [False], prepare=True).fetchall() == []
    other.execute("SELECT pg_advisory_lock(49)")
    outcomes = []

    def run():
        try:
            conn.execute(sql, [True], prepare=True)
        except psycopg.errors.LockNotAvailable as exc:
            # It ran on the loop's thread, where it cannot wait: said so, and the next run
            # waits apart.
            assert exc.diag.message_hint == "Run it again: it will wait."
            outcomes.append("55P03")
            conn.execute(sql, [True], prepare=True)
        outcomes.append("granted")

    runner = threading.Thread(target=run)
    runner.start()
    time.sleep(0.3)
    assert _answers_meanwhile(heron_server) < 1.0
    assert "granted" not in outcomes
    other.execute("SELECT pg_advisory_unlock(49)")
    runner.join(10)
    assert outcomes in (["granted"], ["55P03", "granted"])
    assert one(conn, "SELECT pg_advisory_unlock(49)") is True

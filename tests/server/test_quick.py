"""Statements run on the event loop (`server.quick`): the watchdog moves one that turns slow off
the loop, and the statement still answers, can be cancelled and times out as any other; the
policy runs only quick, vetted plain SELECTs there."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from heron.catalog import Database
from heron.planner import Kind, Statement
from heron.server.quick import LIMIT_S, QUICK_S, QuickStatements, TooSlow, Watchdog
from heron.server.session import Session

# Quick with a small bound (a thousand rows), seconds of DuckDB's work with a large one; as
# psycopg writes it, and as the server sees it.
COUNT = "SELECT count(*) FROM range(%s::bigint) t(i) WHERE i %% 7 = 3"
COUNT_SQL = "SELECT count(*) FROM range($1::bigint) t(i) WHERE i % 7 = 3"


def _count(n: int) -> int:
    return (n - 4) // 7 + 1


# -- the watchdog ----------------------------------------------------------------------------


def test_a_call_within_the_limit_answers_and_is_not_interrupted():
    watchdog, interrupts = Watchdog(), []
    for i in range(100):
        assert watchdog.run(lambda i=i: i * 2, lambda: interrupts.append(1)) == i * 2
    assert not interrupts


def test_a_call_that_overruns_is_interrupted_and_reported_too_slow():
    watchdog = Watchdog()
    stop = threading.Event()
    started = time.perf_counter()
    with pytest.raises(TooSlow):
        watchdog.run(lambda: stop.wait(10) and 1 / 0, stop.set)  # fails once interrupted
    assert time.perf_counter() - started < 2 * LIMIT_S + 0.5
    # A call that ignores the interrupt and returns is too slow all the same (its rows may
    # have been cut off), and the watchdog goes on watching the next ones.
    with pytest.raises(TooSlow):
        watchdog.run(lambda: time.sleep(3 * LIMIT_S), lambda: None)
    assert watchdog.run(lambda: "quick", lambda: None) == "quick"


def test_an_error_of_a_call_not_interrupted_is_its_own():
    with pytest.raises(ZeroDivisionError):
        Watchdog().run(lambda: 1 / 0, lambda: None)


# -- the policy ------------------------------------------------------------------------------


def test_only_plain_selects_measured_quick_run_on_the_loop():
    select = Statement("SELECT 1", Kind.SELECT, "SELECT", returns_rows=True, bindable=True)
    insert = Statement("INSERT INTO t VALUES (1)", Kind.INSERT, "INSERT")
    quick = QuickStatements()
    assert quick.unvetted(select) and not quick.allows(select)  # a worker measures it first
    assert not quick.unvetted(insert) and not quick.allows(insert)
    quick.record(select, QUICK_S / 10)
    assert quick.allows(select) and not quick.unvetted(select)
    quick.record(insert, QUICK_S / 10)
    assert not quick.allows(insert)
    quick.record(select, QUICK_S * 2)  # its last run was slow
    assert not quick.allows(select)
    quick.record(select, QUICK_S / 10)
    quick.demote(select)
    quick.record(select, QUICK_S / 10)  # demoted for good
    assert not quick.allows(select) and not quick.unvetted(select)


# -- through the wire ------------------------------------------------------------------------


def _warm(conn: psycopg.Connection) -> None:
    """Run COUNT quick a few times: its first run (on the worker) vets it, the next run on the
    event loop."""
    for _ in range(3):
        assert conn.execute(COUNT, [1000], prepare=True).fetchone() == (_count(1000),)


def test_a_quick_statement_that_turns_slow_leaves_the_loop_to_the_others(heron_server):
    """With a bound that makes it run for seconds, the statement the connection had run on the
    event loop still answers right, and meanwhile another session's `SELECT 1` answers at once
    (the loop was held for the watchdog's limit at most) and sees it in pg_stat_activity."""
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn, psycopg.connect(
            heron_server.dsn, autocommit=True) as probe:
        _warm(conn)
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        latencies: list[float] = []
        states: list[tuple[str, str]] = []
        running = threading.Event()

        def watch() -> None:
            running.wait(5)
            while running.is_set():
                started = time.perf_counter()
                assert probe.execute("SELECT 1").fetchone() == (1,)
                latencies.append(time.perf_counter() - started)
                states.extend(probe.execute(
                    "SELECT state, query FROM pg_stat_activity WHERE pid = %s", [pid]).fetchall())
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            running.set()
            n = 600_000_000  # about a second and a half of DuckDB's work
            assert conn.execute(COUNT, [n], prepare=True).fetchone() == (_count(n),)
        finally:
            running.clear()
            watcher.join(10)
        assert len(latencies) >= 10
        assert max(latencies) < 0.25, latencies
        assert ("active", COUNT_SQL) in states
        # It stays off the loop and goes on answering.
        assert conn.execute(COUNT, [1000], prepare=True).fetchone() == (_count(1000),)


def test_a_quick_statement_that_turns_slow_can_be_cancelled_and_times_out(heron_server):
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        _warm(conn)
        canceller = threading.Timer(0.5, conn.cancel)
        canceller.start()
        started = time.perf_counter()
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute(COUNT, [10**11], prepare=True).fetchone()
        assert time.perf_counter() - started < 5
        canceller.join()
    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        _warm(conn)
        conn.execute("SET statement_timeout = '300ms'")
        started = time.perf_counter()
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            conn.execute(COUNT, [10**11], prepare=True).fetchone()
        assert time.perf_counter() - started < 5
        assert conn.execute(COUNT, [1000], prepare=True).fetchone() == (_count(1000),)


def test_a_statement_reading_a_file_by_name_never_runs_on_the_loop(tmp_path):
    """A read by name may block (a FIFO, a network file system) where the watchdog could not
    stop it: its vetting run says so, and it stays on the worker however quick it is."""
    database = Database(tmp_path / "data", load_demo=False)
    session = Session(database)
    try:
        data = tmp_path / "rows.csv"
        data.write_text("a\n1\n2\n")
        session.execute(session.prepare("CREATE TABLE t (a INTEGER)"))
        for sql, blocks in [(f"SELECT sum(a) FROM read_csv('{data}')", True),
                            (f"SELECT * FROM '{data}'", True),
                            ("SELECT * FROM query('SELECT 1')", True),
                            ("SELECT sum(a) FROM t WHERE a > 1", False),
                            ("SELECT 'read_csv(''x'')' AS text", False)]:
            assert session.may_block(session.prepare(sql)) is blocks, sql
    finally:
        session.close()
        database.close()

"""DuckDB's threads per statement: one while the server runs SELECTs known to be small only, at
a high rate; all of them back before any other statement starts, and at a long run, a lower
rate or a pause. A clock of the test's own drives `Parallelism`; the last test runs a real
server."""

from __future__ import annotations

import threading
import time

import pytest

from heron.server.parallelism import KEPT, LONG_S, SMALL_RUNS_PER_S, WINDOW_S, Parallelism

SMALL = "SELECT $1 + 1"

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def busy_window(parallelism: Parallelism, clock: Clock, *, runs: int = SMALL_RUNS_PER_S * 2,
                seconds: float = 0.0005, sql: str = SMALL) -> None:
    """`runs` runs of `sql` of `seconds` each, spread over one window, the last at its end."""
    started = clock.now
    for i in range(1, runs + 1):
        clock.now = started + WINDOW_S * i / runs
        parallelism.starting(sql)
        parallelism.ran(sql, seconds)


def made() -> tuple[Parallelism, Clock, list[int]]:
    clock, changes = Clock(), []
    return Parallelism(changes.append, 8, clock=clock), clock, changes


def test_many_small_selects_run_duckdb_on_one_thread_a_window_later() -> None:
    parallelism, clock, changes = made()
    busy_window(parallelism, clock)  # the first run starts unknown: that window has threads
    assert changes == [] and not parallelism.single
    busy_window(parallelism, clock)
    assert changes == [1] and parallelism.single
    busy_window(parallelism, clock)
    assert changes == [1]  # set once, not per window


def test_a_lower_rate_keeps_every_thread() -> None:
    parallelism, clock, changes = made()
    busy_window(parallelism, clock, runs=SMALL_RUNS_PER_S // 2)
    busy_window(parallelism, clock, runs=SMALL_RUNS_PER_S // 2)
    assert changes == [] and not parallelism.single


def busy(parallelism: Parallelism, clock: Clock) -> None:
    """Two windows of small runs: one thread from then on."""
    busy_window(parallelism, clock)
    busy_window(parallelism, clock)
    assert parallelism.single


def test_a_statement_not_known_small_gets_the_threads_back_before_it_starts() -> None:
    for sql in (None, "SELECT a new one"):
        parallelism, clock, changes = made()
        busy(parallelism, clock)
        parallelism.starting(sql)
        assert changes == [1, 8] and not parallelism.single
        busy_window(parallelism, clock)  # its window ends: still every thread
        assert changes == [1, 8]
        busy_window(parallelism, clock)
        assert changes == [1, 8, 1]


def test_a_select_is_small_after_a_run_that_one_thread_would_keep_short() -> None:
    parallelism, clock, changes = made()
    parallelism.starting("SELECT medium")
    parallelism.ran("SELECT medium", LONG_S / 2)  # at 8 threads: maybe 4 x LONG_S on one
    busy(parallelism, clock)
    parallelism.starting("SELECT medium")
    assert not parallelism.single
    parallelism.ran("SELECT medium", LONG_S / 10)  # on 8 threads, then in the window after
    busy(parallelism, clock)
    parallelism.starting("SELECT medium")
    assert parallelism.single


def test_one_thread_waits_for_no_statement_to_be_running() -> None:
    """Fewer threads waits for the tasks on them: not while a statement may have some."""
    parallelism, clock, changes = made()
    busy_window(parallelism, clock)
    parallelism.enter()  # a statement begins (its next rows, say) and lasts
    busy_window(parallelism, clock)
    assert changes == [] and not parallelism.single
    parallelism.enter()
    parallelism.leave()
    assert changes == []
    parallelism.leave()  # none runs now
    assert changes == [1] and parallelism.single


def test_a_long_run_gives_the_threads_back_at_once_and_for_its_window() -> None:
    parallelism, clock, changes = made()
    busy(parallelism, clock)
    parallelism.ran(SMALL, LONG_S)
    assert changes == [1, 8] and not parallelism.single
    busy_window(parallelism, clock)  # the long call's window ends: still every thread
    assert changes == [1, 8]
    busy_window(parallelism, clock)  # a window of short calls only
    assert changes == [1, 8, 1]


def test_a_window_with_a_long_run_never_goes_to_one_thread() -> None:
    parallelism, clock, changes = made()
    busy_window(parallelism, clock)
    parallelism.ran("SELECT long", LONG_S * 5)
    busy_window(parallelism, clock)
    assert changes == []


def test_the_small_selects_kept_are_bounded() -> None:
    parallelism, clock, _ = made()
    for i in range(KEPT + 10):
        parallelism.ran(f"SELECT {i}", 0.0001)
    assert len(parallelism._small) <= KEPT


def test_a_pause_gives_the_threads_back_before_the_next_run() -> None:
    parallelism, clock, changes = made()
    busy(parallelism, clock)
    clock.now += 2 * WINDOW_S
    parallelism.starting(SMALL)
    assert changes == [1, 8] and not parallelism.single


def test_the_rate_falling_gives_the_threads_back() -> None:
    parallelism, clock, changes = made()
    busy(parallelism, clock)
    busy_window(parallelism, clock, runs=SMALL_RUNS_PER_S // 4)
    assert changes == [1, 8]


def test_a_change_that_fails_is_tried_again() -> None:
    clock, changes, failing = Clock(), [], [True]

    def set_threads(threads: int) -> None:
        if failing[0]:
            raise RuntimeError("the database is closed")
        changes.append(threads)

    parallelism = Parallelism(set_threads, 4, clock=clock)
    busy_window(parallelism, clock)
    busy_window(parallelism, clock)
    assert not parallelism.single  # DuckDB stays as it was
    failing[0] = False
    busy_window(parallelism, clock)
    assert changes == [1] and parallelism.single


def test_reports_from_many_threads_change_it_once() -> None:
    parallelism, clock, changes = made()
    busy_window(parallelism, clock)
    lock = threading.Lock()

    def report(calls: int) -> None:
        for _ in range(calls):
            with lock:
                clock.now += WINDOW_S / (SMALL_RUNS_PER_S * 4)
            parallelism.starting(SMALL)
            parallelism.ran(SMALL, 0.0001)

    threads = [threading.Thread(target=report, args=(SMALL_RUNS_PER_S,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert changes == [1]


def test_a_server_busy_with_small_statements_runs_them_on_one_thread(heron_server) -> None:
    """Through a real server: a burst of small prepared statements, then a long one, seen
    in DuckDB's own `threads` setting."""
    psycopg = pytest.importorskip("psycopg")

    def threads(conn) -> int:
        return int(conn.execute(
            "SELECT value FROM duckdb_settings() WHERE name = 'threads'").fetchone()[0])

    with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
        full = threads(conn)
        if full == 1:
            pytest.skip("DuckDB runs on one thread here already")
        ended = time.monotonic() + 2.5 * WINDOW_S
        while time.monotonic() < ended:
            conn.execute("SELECT %s::int + 1", [1], prepare=True).fetchone()
        assert threads(conn) == 1
        conn.execute("SELECT sum(i) FROM range(30000000) r(i)").fetchone()  # a long statement
        assert threads(conn) == full


def test_a_long_statement_keeps_the_threads_and_holds_up_no_small_one(heron_server) -> None:
    """A long statement running while small ones come at a high rate: DuckDB keeps its threads
    while it runs (one thread would wait for its tasks: seconds, on the event loop's thread),
    and the small statements' latency stays small."""
    psycopg = pytest.importorskip("psycopg")
    long_sql = ("SELECT count(DISTINCT r) FROM (SELECT hash(i) % 100000000 AS r "
                "FROM range(40000000) t(i))")
    with psycopg.connect(heron_server.dsn, autocommit=True) as small, psycopg.connect(
            heron_server.dsn, autocommit=True) as big:
        ended = time.monotonic() + 1.5 * WINDOW_S
        while time.monotonic() < ended:  # the busy state: one thread
            small.execute("SELECT %s::int + 1", [1], prepare=True).fetchone()
        done = threading.Event()
        worker = threading.Thread(target=lambda: (big.execute(long_sql).fetchone(), done.set()))
        worker.start()
        slowest = 0.0
        ended = time.monotonic() + 3 * WINDOW_S
        while time.monotonic() < ended and not done.is_set():
            started = time.monotonic()
            small.execute("SELECT %s::int + 1", [1], prepare=True).fetchone()
            slowest = max(slowest, time.monotonic() - started)
        worker.join(timeout=50)
        assert done.is_set()
        assert slowest < 0.5

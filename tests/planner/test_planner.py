"""The planner facade (`heron.planner.Planner`) over a real DuckDB connection, without a model:
what it adds around the statement modules — result-column origins read once per catalog
generation, and cancellation that reaches a statement still being prepared."""

from __future__ import annotations

import threading
import time

import duckdb
import pytest

from heron.planner import Planner, SqlError, SqlState, statement
from heron.planner.column_origins import NO_ORIGIN, Origin
from heron.planner.pg_types import VARCHAR


@pytest.fixture
def generation() -> list[int]:
    return [0]  # the catalog generation: a test advances it as the server's DDL does


@pytest.fixture
def planner(generation):
    con = duckdb.connect()
    con.execute("CREATE TABLE notes (id INTEGER, body VARCHAR CHECK (length(body) <= 9))")
    con.execute("INSERT INTO notes VALUES (1, 'hello')")
    planner = Planner(con, generation=lambda: generation[0])
    yield planner
    planner.close()


def _run(planner: Planner, sql: str):
    return planner.execute(planner.prepare(sql))


def test_result_columns_carry_their_origins_when_described_and_run(planner):
    notes = planner.con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = "
                                "'notes'").fetchall()[0][0]
    stmt = planner.prepare("SELECT body, id + 1 AS next FROM notes")
    expected = (Origin(notes, 2, VARCHAR.oid, 13), Origin(name="next"))
    assert tuple(c.origin for c in planner.describe(stmt)) == expected
    assert tuple(c.origin for c in planner.execute(stmt).columns) == expected


def test_returning_columns_carry_their_origins_too(planner):
    notes = planner.con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = "
                                "'notes'").fetchall()[0][0]
    expected = (Origin(notes, 2, VARCHAR.oid, 13), Origin(name="?column?"))
    for sql in ("INSERT INTO notes VALUES (2, 'hi') RETURNING body, id + 1",
                "UPDATE notes SET id = id RETURNING body, id * 2",
                "DELETE FROM notes WHERE id = 2 RETURNING body, -id"):
        stmt = planner.prepare(sql)
        assert tuple(c.origin for c in planner.describe(stmt)) == expected
        assert tuple(c.origin for c in planner.execute(stmt).columns) == expected


def test_relations_are_read_again_only_when_the_generation_advances(planner, generation):
    _run(planner, "SELECT * FROM notes")
    planner.con.execute("CREATE TABLE later (x VARCHAR CHECK (length(x) <= 3))")
    assert _run(planner, "SELECT x FROM later").columns[0].origin == NO_ORIGIN  # not seen yet
    generation[0] += 1
    assert _run(planner, "SELECT x FROM later").columns[0].origin.typmod == 7


def test_an_interrupt_while_a_statement_is_prepared_cancels_it_and_only_it(planner):
    stmt = planner.prepare("SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3")
    planner.interrupt()  # a CancelRequest that came before the statement started
    started = time.monotonic()
    with pytest.raises(SqlError) as caught:
        planner.execute(stmt)
    assert caught.value.sqlstate is SqlState.QUERY_CANCELED
    assert time.monotonic() - started < 5
    assert _run(planner, "SELECT 1 AS one").rows.read_all().to_pylist() == [{"one": 1}]


def test_an_interrupt_while_a_statement_runs_cancels_it(planner):
    stmt = planner.prepare("SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3")
    timer = threading.Timer(0.3, planner.interrupt)
    timer.start()
    try:
        with pytest.raises(SqlError) as caught:
            planner.execute(stmt)
    finally:
        timer.cancel()
    assert caught.value.sqlstate is SqlState.QUERY_CANCELED
    assert _run(planner, "SELECT 2 AS two").rows.read_all().to_pylist() == [{"two": 2}]


@pytest.mark.parametrize("stream", [True, False])
def test_an_interrupt_between_duckdb_calls_still_cancels_the_statement(planner, stream):
    # DuckDB forgets an interrupt that comes while it runs nothing: one that came while the
    # planner read the catalog, before the statement reached DuckDB, was lost, and the statement
    # ran to its end (a CI run waited 60 s on it).
    refresh = planner.catalog.refresh

    def refresh_then_cancel(*args):  # the CancelRequest arrives right after the catalog read
        refresh(*args)
        planner.interrupt()

    planner.catalog.refresh = refresh_then_cancel
    stmt = planner.prepare("SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3")
    started = time.monotonic()
    with pytest.raises(SqlError) as caught:
        result = planner.execute(stmt, stream=stream)
        result.rows.read_all()
    assert caught.value.sqlstate is SqlState.QUERY_CANCELED
    assert time.monotonic() - started < 5
    planner.catalog.refresh = refresh
    assert _run(planner, "SELECT 3 AS three").rows.read_all().to_pylist() == [{"three": 3}]


def test_an_interrupt_just_before_duckdb_begins_still_cancels_the_statement(planner, monkeypatch):
    # The planner's thread may wait for the GIL between its look at `cancelled` and DuckDB's
    # start, and a CancelRequest served meanwhile was lost (a CI run's cancel test timed out):
    # the interrupt is sent again while the statement runs.
    run = statement.run

    def cancelled_first(*args, **kwargs):
        planner.interrupt()
        return run(*args, **kwargs)

    monkeypatch.setattr(statement, "run", cancelled_first)
    stmt = planner.prepare("SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3")
    started = time.monotonic()
    with pytest.raises(SqlError) as caught:
        planner.execute(stmt)
    assert caught.value.sqlstate is SqlState.QUERY_CANCELED
    assert time.monotonic() - started < 5
    monkeypatch.setattr(statement, "run", run)
    time.sleep(0.05)  # no repeat reaches the next statement
    assert _run(planner, "SELECT 4 AS four").rows.read_all().to_pylist() == [{"four": 4}]

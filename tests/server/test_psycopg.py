"""psycopg 3: server-side parameters, prepared statements, binary results, transactions,
pipeline mode and cancellation."""

from __future__ import annotations

import datetime as dt
import threading
import time
from decimal import Decimal

import pytest

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)


def test_text_parameters(conn):
    row = conn.execute(
        "SELECT %s AS s, %s::int + 1 AS n, %s AS f, %s AS d, %s AS b",
        ["x y", 41, 1.5, Decimal("2.50"), True],
    ).fetchone()
    assert row == ("x y", 42, 1.5, Decimal("2.50"), True)


def test_bytea_parameter_round_trip(conn):
    data = bytes(range(256))
    assert conn.execute("SELECT %b", [data]).fetchone() == (data,)  # binary parameter
    assert conn.execute("SELECT %t::BLOB", [b"ab"]).fetchone() == (b"ab",)  # text parameter


def test_prepared_statement_reuse(conn):
    for i in range(4):  # prepare_threshold: prepared from the second run on with prepare=None
        row = conn.execute("SELECT %s::bigint * 2", [i], prepare=True).fetchone()
        assert row == (i * 2,)


def test_binary_results(conn):
    cur = conn.cursor(binary=True)
    row = cur.execute(
        "SELECT 1::SMALLINT, 2::INTEGER, 3::BIGINT, 1.25::REAL, 2.5::DOUBLE, 12.345::DECIMAL(10,3),"
        " 'txt', '\\x00ff'::bytea, DATE '2024-02-29', TIME '10:11:12.5',"
        " TIMESTAMP '2024-02-29 01:02:03.000004', TIMESTAMPTZ '2024-01-01 00:00:00+00',"
        " INTERVAL '1 day 2 hours', [1, 2, NULL]::INTEGER[], ['a', 'b c'], true, NULL"
    ).fetchone()
    assert row == (
        1,
        2,
        3,
        1.25,
        2.5,
        Decimal("12.345"),
        "txt",
        b"\x00\xff",  # PostgreSQL's hex input format
        dt.date(2024, 2, 29),
        dt.time(10, 11, 12, 500000),
        dt.datetime(2024, 2, 29, 1, 2, 3, 4),
        dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
        dt.timedelta(days=1, hours=2),
        [1, 2, None],
        ["a", "b c"],
        True,
        None,
    )


def test_transaction_commit_and_rollback(conn):
    conn.execute("CREATE TABLE pg3_tx (i INTEGER)")
    with conn.transaction():
        conn.execute("INSERT INTO pg3_tx VALUES (1)")
    with pytest.raises(RuntimeError), conn.transaction():
        conn.execute("INSERT INTO pg3_tx VALUES (2)")
        raise RuntimeError("roll back")
    assert conn.execute("SELECT count(*) FROM pg3_tx").fetchone() == (1,)


def test_error_in_transaction_then_rollback(heron_server):
    with psycopg.connect(heron_server.dsn) as c:
        c.execute("SELECT 1")
        with pytest.raises(psycopg.errors.UndefinedTable):
            c.execute("SELECT * FROM missing_table")
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
        assert c.execute("SELECT 2").fetchone() == (2,)


def test_pipeline_mode(conn):
    conn.execute("CREATE TABLE pg3_pipe (i INTEGER)")
    with conn.pipeline():
        for i in range(5):
            conn.execute("INSERT INTO pg3_pipe VALUES (%s)", [i])
        cur = conn.execute("SELECT sum(i) FROM pg3_pipe")
    assert cur.fetchone() == (10,)


def test_cancel_long_query(conn):
    def cancel_soon() -> None:
        time.sleep(0.5)
        conn.cancel()

    started = time.monotonic()
    threading.Thread(target=cancel_soon, daemon=True).start()
    with pytest.raises(psycopg.errors.QueryCanceled):
        conn.execute("SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3")
    assert time.monotonic() - started < 20
    assert conn.execute("SELECT 1").fetchone() == (1,)  # the connection survives


def test_a_new_session_finds_objects_created_in_main_unqualified(conn, heron_server):
    """Sessions keep the search path found for the server's catalog generation: DDL, in a
    transaction block or not, starts a new one, so sessions opened after it see `main` on their
    path once it holds an object (as an earlier Heron's data directory does)."""
    conn.execute("DROP TABLE IF EXISTS heron.main.path_probe")
    psycopg.connect(heron_server.dsn).close()  # a session of the current generation
    try:
        conn.execute("CREATE TABLE heron.main.path_probe (i integer)")
        with psycopg.connect(heron_server.dsn, autocommit=True) as other:
            assert other.execute("SELECT count(*) FROM path_probe").fetchone() == (0,)
        with conn.transaction():
            conn.execute("DROP TABLE heron.main.path_probe")
            conn.execute("CREATE TABLE heron.main.path_probe (j integer)")
        with psycopg.connect(heron_server.dsn, autocommit=True) as other:
            assert other.execute("SELECT j FROM path_probe").fetchall() == []
    finally:
        conn.execute("DROP TABLE IF EXISTS heron.main.path_probe")

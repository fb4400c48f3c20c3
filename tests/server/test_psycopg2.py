"""psycopg2 (libpq, client-side parameter interpolation, text results)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

psycopg2 = pytest.importorskip("psycopg2")

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def conn(heron_server):
    c = psycopg2.connect(
        host=heron_server.host,
        port=heron_server.port,
        user="heron",
        dbname="heron",
        connect_timeout=5,
    )
    yield c
    c.close()


def test_simple_query(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM demo.reviews")
        assert cur.fetchone()[0] > 0


def test_types_round_trip(conn):
    values = (
        7,
        2.5,
        Decimal("123.456"),
        "it's",
        True,
        dt.date(2023, 5, 6),
        dt.datetime(2023, 5, 6, 7, 8, 9, 123000),
        None,
    )
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE pg2_types (i INTEGER, f DOUBLE, n DECIMAL(10,3), s VARCHAR,"
            " b BOOLEAN, d DATE, ts TIMESTAMP, z VARCHAR)"
        )
        cur.execute("INSERT INTO pg2_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", values)
        cur.execute("SELECT * FROM pg2_types")
        assert cur.fetchone() == values


def test_bytea_round_trips_through_interpolation(conn):
    # psycopg2 interpolates bytes as PostgreSQL's '\\x..'::bytea; the result comes back as hex.
    with conn.cursor() as cur:
        cur.execute("SELECT %s", (psycopg2.Binary(b"\x00\xffa"),))
        assert bytes(cur.fetchone()[0]) == b"\x00\xffa"


def test_error_then_rollback(conn):
    with conn.cursor() as cur:
        with pytest.raises(psycopg2.errors.UndefinedTable):
            cur.execute("SELECT * FROM nope_nope")
        conn.rollback()
        cur.execute("SELECT %s || %s", ("a", "b"))
        assert cur.fetchone() == ("ab",)

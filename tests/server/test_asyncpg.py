"""asyncpg: extended protocol only, binary results, prepared statements, SQLSTATE classes."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest

asyncpg = pytest.importorskip("asyncpg")

pytestmark = pytest.mark.timeout(60)


def run(server, body):
    async def main():
        conn = await asyncpg.connect(
            host=server.host,
            port=server.port,
            user="heron",
            database="heron",
            timeout=5,
            command_timeout=20,
        )
        try:
            return await body(conn)
        finally:
            await conn.close(timeout=5)

    return asyncio.run(main())


def test_text_parameter_and_fetch(heron_server):
    async def body(conn):
        return await conn.fetch("SELECT $1 || '!' AS s", "hello")

    rows = run(heron_server, body)
    assert [tuple(r) for r in rows] == [("hello!",)]


def test_fetchrow_binary_results(heron_server):
    async def body(conn):
        return await conn.fetchrow(
            "SELECT 1 AS i, 2::BIGINT AS b, 1.5::DOUBLE AS f, 0.25::REAL AS r, true AS t,"
            " DATE '2020-02-03' AS d, TIMESTAMP '2020-02-03 04:05:06.7' AS ts,"
            " TIMESTAMPTZ '2020-02-03 04:05:06+00' AS tz, 12.340::DECIMAL(10,3) AS n,"
            " -0.0001::DECIMAL(10,4) AS neg, 'x'::BLOB AS y, NULL AS z"
        )

    row = run(heron_server, body)
    assert tuple(row) == (
        1,
        2,
        1.5,
        0.25,
        True,
        dt.date(2020, 2, 3),
        dt.datetime(2020, 2, 3, 4, 5, 6, 700000),
        dt.datetime(2020, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
        Decimal("12.340"),
        Decimal("-0.0001"),
        b"x",
        None,
    )


def test_prepared_statement_reuse_and_typed_parameters(heron_server):
    async def body(conn):
        stmt = await conn.prepare("SELECT $1::INTEGER * 2 AS v, $2::DATE AS d")
        assert [p.name for p in stmt.get_parameters()] == ["int4", "date"]
        return [await stmt.fetchrow(i, dt.date(2020, 1, i + 1)) for i in range(3)]

    rows = run(heron_server, body)
    assert [tuple(r) for r in rows] == [(i * 2, dt.date(2020, 1, i + 1)) for i in range(3)]


def test_executemany(heron_server):
    async def body(conn):
        await conn.execute("CREATE TABLE apg_many (i INTEGER, s VARCHAR)")
        await conn.executemany(
            "INSERT INTO apg_many VALUES ($1::INTEGER, $2)", [(i, f"row {i}") for i in range(10)]
        )
        return await conn.fetchval("SELECT count(*) FROM apg_many")

    assert run(heron_server, body) == 10


def test_sqlstate_maps_to_exception_class(heron_server):
    async def body(conn):
        with pytest.raises(asyncpg.UndefinedTableError):
            await conn.fetch("SELECT * FROM no_such_table_here")
        with pytest.raises(asyncpg.PostgresSyntaxError):
            await conn.fetch("SELEC 1")
        return await conn.fetchval("SELECT 5")  # still usable

    assert run(heron_server, body) == 5


def test_transaction(heron_server):
    async def body(conn):
        await conn.execute("CREATE TABLE apg_tx (i INTEGER)")
        async with conn.transaction():
            await conn.execute("INSERT INTO apg_tx VALUES (1)")
        with pytest.raises(ZeroDivisionError):
            async with conn.transaction():
                await conn.execute("INSERT INTO apg_tx VALUES (2)")
                raise ZeroDivisionError
        return await conn.fetchval("SELECT count(*) FROM apg_tx")

    assert run(heron_server, body) == 1


def test_pool_takes_connections_back(heron_server):
    """Releasing a connection runs asyncpg's reset: pg_advisory_unlock_all(), CLOSE ALL,
    UNLISTEN *, RESET ALL."""

    async def main():
        pool = await asyncpg.create_pool(host=heron_server.host, port=heron_server.port,
                                         user="heron", database="heron", min_size=1,
                                         max_size=1, timeout=5, command_timeout=20)
        try:
            values = []
            for i in range(3):
                async with pool.acquire() as conn:
                    await conn.execute("SET statement_timeout = '5s'")
                    values.append(await conn.fetchval("SELECT $1::int + 1", i))
                    values.append(await conn.fetchval("SHOW statement_timeout"))
            return values
        finally:
            await pool.close()

    assert asyncio.run(main()) == [1, "5s", 2, "5s", 3, "5s"]


def test_arrays_through_type_introspection(heron_server):
    """asyncpg has built-in codecs for text[] and oid[] only: every other array type is looked
    up with its introspection query (an oid[] parameter, pg_type's array rows) first."""
    async def body(conn):
        row = await conn.fetchrow(
            "SELECT $1::int[] AS i, $2::bigint[] AS b, $3::float8[] AS f, $4::bool[] AS t,"
            " $5::date[] AS d, ARRAY[1.5]::numeric[] AS n",
            [1, None, 3], [2**40], [0.5], [True, False], [dt.date(2020, 1, 2)])
        types = {a.name: (a.type.name, a.type.kind)
                 for a in (await conn.prepare("SELECT ARRAY[1] AS i")).get_attributes()}
        return tuple(row), types

    row, types = run(heron_server, body)
    assert row == ([1, None, 3], [2**40], [0.5], [True, False], [dt.date(2020, 1, 2)],
                   [Decimal("1.5")])
    assert types == {"i": ("int4[]", "array")}


def test_custom_codec_by_type_name(heron_server):
    async def body(conn):
        await conn.set_type_codec("numeric", schema="pg_catalog", encoder=str,
                                  decoder=lambda text: f"<{text}>", format="text")
        return await conn.fetchval("SELECT 1.25::DECIMAL(4,2)")

    assert run(heron_server, body) == "<1.25>"

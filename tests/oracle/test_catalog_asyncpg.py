"""asyncpg against Heron and PostgreSQL 15 on the same schema: the same answers.

asyncpg introspects every type it has no built-in codec for (arrays but text[] and oid[] among
them) with its own catalog query, binding an oid[] parameter; the calls below exercise that
(array results and parameters, the introspection query itself, a custom codec looked up by
name) and the types asyncpg reports for a statement's columns and parameters. Calls known to
differ are strict xfails listed in EXPECTED_FAILURES with the reason, so the list measures
progress.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest
from support.catalog_schema import with_expected_failures

asyncpg = pytest.importorskip("asyncpg")
from asyncpg import introspection  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def _rows(records) -> list[tuple]:
    return [tuple(r) for r in records]


async def _sorted(rows):
    """Rows whose order the query leaves open (ties of its ORDER BY), in one order."""
    return sorted(_rows(await rows))


async def _custom_codec(conn):
    await conn.set_type_codec("numeric", schema="pg_catalog", encoder=str,
                              decoder=lambda text: f"numeric {text}", format="text")
    return await conn.fetchval("SELECT price FROM cat_books WHERE title = 'Solaris'")


async def _attributes(conn):
    statement = await conn.prepare("SELECT * FROM cat_books")
    return [(a.name, a.type.oid, a.type.name, a.type.kind, a.type.schema)
            for a in statement.get_attributes()]


async def _parameters(conn):
    statement = await conn.prepare("SELECT $1::int[] AS i, $2::text AS s")
    return [(t.oid, t.name, t.kind) for t in statement.get_parameters()]


CALLS = {
    "array_results": lambda c: c.fetchrow(
        "SELECT ARRAY[1, 2]::int[] AS i, ARRAY[3]::bigint[] AS b, ARRAY[1.5]::float8[] AS f,"
        " ARRAY[true, false] AS t, ARRAY['a', 'b c'] AS s, ARRAY[DATE '2020-01-02'] AS d,"
        " ARRAY[1.25]::numeric[] AS n"),
    "array_column": lambda c: c.fetch("SELECT id, tags FROM cat_books ORDER BY id"),
    "array_parameters": lambda c: c.fetchrow(
        "SELECT $1::int[] AS i, $2::text[] AS s, $3::bigint[] AS b, $4::date[] AS d",
        [1, None, 3], ["x", "y z"], [2**40], [dt.date(2021, 3, 4)]),
    "introspection": lambda c: _sorted(c.fetch(introspection.INTRO_LOOKUP_TYPES_13,
                                               [1007, 1009, 1016, 1231])),
    "custom_codec": _custom_codec,
    "result_attributes": _attributes,
    "parameter_types": _parameters,
    "where_parameter": lambda c: c.fetch("SELECT title FROM cat_books WHERE id = $1", 2),
    "regclass": lambda c: c.fetchval("SELECT 'cat_books'::regclass"),
    "catalog_types": lambda c: c.fetch(
        "SELECT oid, typname, typelem, typarray, typdelim, typlen, typcategory"
        " FROM pg_catalog.pg_type WHERE typname IN ('int4', '_int4', 'text', '_text', 'numeric',"
        " '_numeric', 'bool', 'oid', '_oid', 'varchar') ORDER BY oid"),
}
EXPECTED_FAILURES: dict[str, str] = {}


def _answer(server, call: str):
    async def main():
        conn = await asyncpg.connect(host=server.host, port=server.port, user="heron",
                                     database="heron", timeout=10, command_timeout=30)
        try:
            answer = await CALLS[call](conn)
        finally:
            await conn.close(timeout=5)
        if isinstance(answer, list) and answer and hasattr(answer[0], "keys"):
            return _rows(answer)
        return tuple(answer) if hasattr(answer, "keys") else answer

    return asyncio.run(main())


@pytest.mark.parametrize("call", with_expected_failures(CALLS, EXPECTED_FAILURES))
def test_asyncpg_answers_as_postgresql(servers, call):
    heron, postgres = servers
    assert _answer(heron, call) == _answer(postgres, call)


def test_array_values_round_trip(servers):
    """Beyond agreeing with PostgreSQL: the values themselves."""
    heron, _ = servers
    assert _answer(heron, "array_parameters") == (
        [1, None, 3], ["x", "y z"], [2**40], [dt.date(2021, 3, 4)])
    assert _answer(heron, "array_results")[-1] == [Decimal("1.25")]

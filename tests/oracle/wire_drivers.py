"""The client side of the differential suite: one runner per driver, recording what an
application sees of a statement — column names and type OIDs, values, command tag, SQLSTATE.

`observe(driver, dsn, host, port, case)` runs one `wire_cases.Case`; `DRIVERS` lists the drivers
installed here. Every connection has a connect timeout and every statement a time limit.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from oracle.wire_cases import Case

TIMEOUT_S = 20


@dataclass(frozen=True)
class Observation:
    columns: tuple[tuple[str, int], ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    tag: str | None = None
    sqlstate: str | None = None
    client_error: str | None = None  # the driver refused a value (e.g. infinity dates)


def _normalized(value: Any) -> Any:
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def _rows(rows: Any) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(_normalized(v) for v in row) for row in rows)


def setup(dsn: str, statements: tuple[str, ...]) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


def _psycopg(dsn: str, case: Case) -> Observation:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"SET statement_timeout = '{TIMEOUT_S}s'")
        try:
            cur = conn.execute(case.sql, case.params or None)
        except psycopg.DataError as exc:
            if exc.sqlstate is None:
                return Observation(client_error=type(exc).__name__)
            return Observation(sqlstate=exc.sqlstate)
        except psycopg.Error as exc:
            return Observation(sqlstate=exc.sqlstate)
        columns = tuple((d.name, d.type_code) for d in cur.description or ())
        try:
            rows = _rows(cur.fetchall()) if cur.description else ()
        except psycopg.DataError as exc:  # a value the driver cannot load
            return Observation(columns, client_error=type(exc).__name__)
        return Observation(columns, rows, cur.statusmessage)


def _psycopg2(dsn: str, case: Case) -> Observation:
    import psycopg2

    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(f"SET statement_timeout = '{TIMEOUT_S}s'")
            try:
                cur.execute(case.sql, case.params or None)
            except psycopg2.DataError as exc:
                if exc.pgcode is None:
                    return Observation(client_error=type(exc).__name__)
                return Observation(sqlstate=exc.pgcode)
            except psycopg2.Error as exc:
                return Observation(sqlstate=exc.pgcode)
            columns = tuple((d.name, d.type_code) for d in cur.description or ())
            try:
                rows = _rows(cur.fetchall()) if cur.description else ()
            except (psycopg2.DataError, ValueError) as exc:
                return Observation(columns, client_error=type(exc).__name__)
            return Observation(columns, rows, cur.statusmessage)
    finally:
        conn.close()


_PERCENT = re.compile(r"%s")


def dollar_parameters(sql: str) -> str:
    """`%s` placeholders numbered as `$1, $2, ...`."""
    counter = iter(range(1, 1000))
    return _PERCENT.sub(lambda _: f"${next(counter)}", sql)


def _asyncpg(host: str, port: int, case: Case) -> Observation:
    import asyncpg

    async def main() -> Observation:
        conn = await asyncpg.connect(host=host, port=port, user="heron", database="heron",
                                     timeout=10, command_timeout=TIMEOUT_S)
        try:
            try:
                statement = await conn.prepare(dollar_parameters(case.sql))
                columns = tuple((a.name, a.type.oid) for a in statement.get_attributes())
                rows = await statement.fetch(*case.params)
            except asyncpg.PostgresError as exc:
                return Observation(sqlstate=exc.sqlstate)
            except (asyncpg.DataError, ValueError, OverflowError) as exc:
                return Observation(client_error=type(exc).__name__)
            return Observation(columns, _rows(tuple(r) for r in rows),
                               statement.get_statusmsg())
        finally:
            await conn.close(timeout=5)

    return asyncio.run(main())


def _pg8000(host: str, port: int, case: Case) -> Observation:
    import pg8000.dbapi

    conn = pg8000.dbapi.connect(user="heron", host=host, port=port, database="heron",
                                timeout=TIMEOUT_S)
    conn.autocommit = True
    try:
        cur = conn.cursor()
        try:
            cur.execute(case.sql, case.params)
        except pg8000.dbapi.DatabaseError as exc:
            details = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
            return Observation(sqlstate=details.get("C"))
        except (ValueError, OverflowError) as exc:
            return Observation(client_error=type(exc).__name__)
        columns = tuple((d[0], d[1]) for d in cur.description or ())
        rows = _rows(cur.fetchall()) if cur.description else ()
        return Observation(columns, rows, f"rowcount {cur.rowcount}")
    finally:
        conn.close()


DRIVERS = tuple(name for name, module in (("psycopg", "psycopg"), ("psycopg2", "psycopg2"),
                                          ("asyncpg", "asyncpg"), ("pg8000", "pg8000"))
                if importlib.util.find_spec(module) is not None)


def observe(driver: str, dsn: str, host: str, port: int, case: Case) -> Observation:
    if driver == "psycopg":
        return _psycopg(dsn, case)
    if driver == "psycopg2":
        return _psycopg2(dsn, case)
    if driver == "asyncpg":
        return _asyncpg(host, port, case)
    if driver == "pg8000":
        return _pg8000(host, port, case)
    raise ValueError(driver)

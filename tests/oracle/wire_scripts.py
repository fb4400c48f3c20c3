"""Client scripts of the differential suite: COPY, cursors, savepoints and transactions as
applications drive them through their drivers. Each script takes a server (`dsn`, `host`,
`port`) and returns what the application saw, as plain values; the suite runs it against Heron
and PostgreSQL 15 and compares. Tables are prefixed `s_` and created by the script itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
from collections.abc import Callable
from typing import Any, Protocol

import psycopg
from support.tables import fresh_table

TIMEOUT_S = 20


class Server(Protocol):
    dsn: str
    host: str
    port: int


def _error(exc: Exception) -> str:
    return f"error {getattr(exc, 'sqlstate', None) or getattr(exc, 'pgcode', None)}"


def _statements(conn: psycopg.Connection, statements: tuple[str, ...]) -> list[Any]:
    """Each statement through the simple protocol: (text, tag, rows, transaction status), or
    (text, error, transaction status)."""
    seen: list[Any] = []
    for sql in statements:
        try:
            cur = conn.execute(sql, prepare=False)
            rows = cur.fetchall() if cur.description else None
            seen.append((sql, cur.statusmessage, rows, str(conn.info.transaction_status)))
        except psycopg.Error as exc:
            seen.append((sql, _error(exc), str(conn.info.transaction_status)))
    return seen


# -- COPY ---------------------------------------------------------------------------------------

_COPY_ROWS = [(1, "plain", 1.5, b"\x00\x01"), (2, "tab\tnew\nline\\slash", None, None),
              (3, None, -0.25, b""), (4, 'quote " comma ,', 1e20, b"\xff")]


def psycopg_copy(server: Server) -> list[Any]:
    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh_table(conn, "s_copy", "id integer, s text, f float8, b bytea")
        cur = conn.cursor()
        with cur.copy("COPY s_copy FROM STDIN") as copy:
            for row in _COPY_ROWS[:2]:
                copy.write_row(row)
        seen.append(cur.statusmessage)
        with cur.copy("COPY s_copy (id, s, f, b) FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(["int4", "text", "float8", "bytea"])
            copy.write_row(_COPY_ROWS[2])
        with cur.copy("COPY s_copy FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
            copy.write(b'id,s,f,b\n4,"quote "" comma ,",1e20,\\xff\n')
        seen.append(conn.execute("SELECT * FROM s_copy ORDER BY id").fetchall())
        for statement in ("COPY s_copy TO STDOUT", "COPY (SELECT * FROM s_copy ORDER BY id) TO "
                          "STDOUT WITH (FORMAT csv, HEADER, FORCE_QUOTE (s))",
                          "COPY s_copy (id, s) TO STDOUT WITH DELIMITER '|' NULL 'none'"):
            with cur.copy(statement) as copy:
                seen.append(sorted(bytes(block) for block in copy))
            seen.append(cur.statusmessage)
        with cur.copy("COPY (SELECT id, s, f FROM s_copy ORDER BY id) TO STDOUT (FORMAT binary)"
                      ) as copy:
            copy.set_types(["int4", "text", "float8"])
            seen.append(list(copy.rows()))
        try:
            with cur.copy("COPY s_copy (id) FROM STDIN") as copy:
                copy.write(b"5\nnot a number\n")
        except psycopg.Error as exc:
            seen.append(_error(exc))
        try:
            with cur.copy("COPY s_copy (id) FROM STDIN") as copy:
                copy.write(b"6\t7\n")
        except psycopg.Error as exc:
            seen.append(_error(exc))
        seen.append(conn.execute("SELECT count(*) FROM s_copy").fetchone())
    return seen


def psycopg2_copy(server: Server) -> list[Any]:
    import psycopg2

    seen: list[Any] = []
    conn = psycopg2.connect(server.dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS s_copy2")
            cur.execute("CREATE TABLE s_copy2 (id integer, name text)")
            cur.copy_expert("COPY s_copy2 FROM STDIN WITH CSV", io.StringIO("1,one\n2,\n"))
            seen.append(cur.rowcount)
            cur.copy_from(io.StringIO("3\tthree\n4\t\\N\n"), "s_copy2")
            out = io.StringIO()
            cur.copy_expert("COPY (SELECT * FROM s_copy2 ORDER BY id) TO STDOUT WITH CSV HEADER",
                            out)
            seen.append(out.getvalue())
            out = io.StringIO()
            cur.copy_to(out, "s_copy2", sep="|")
            seen.append(sorted(out.getvalue().splitlines()))
        conn.commit()
        with conn.cursor() as cur:
            try:
                cur.copy_expert("COPY s_copy2 FROM STDIN WITH CSV", io.StringIO("x,bad\n"))
            except psycopg2.Error as exc:
                seen.append(_error(exc))
        conn.rollback()
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM s_copy2")
            seen.append(cur.fetchone())
    finally:
        conn.close()
    return seen


def asyncpg_copy(server: Server) -> list[Any]:
    import asyncpg

    async def main() -> list[Any]:
        conn = await asyncpg.connect(host=server.host, port=server.port, user="heron",
                                     database="heron", timeout=10, command_timeout=TIMEOUT_S)
        seen: list[Any] = []
        try:
            await conn.execute("DROP TABLE IF EXISTS s_copy3")
            await conn.execute("CREATE TABLE s_copy3 (id integer, name text, f float8)")
            seen.append(await conn.copy_records_to_table(
                "s_copy3", records=[(i, f"n{i}", i / 4) for i in range(100)]))
            seen.append(await conn.copy_records_to_table(
                "s_copy3", records=[(1000, None, None)], columns=["id", "name", "f"]))
            out = io.BytesIO()
            seen.append(await conn.copy_from_query("SELECT * FROM s_copy3 ORDER BY id", output=out,
                                                   format="csv"))
            seen.append(out.getvalue())
            out = io.BytesIO()
            seen.append(await conn.copy_from_table("s_copy3", output=out, columns=["id"]))
            seen.append(sorted(out.getvalue().splitlines()))
            seen.append(await conn.fetchval("SELECT sum(id) FROM s_copy3"))
        finally:
            await conn.close(timeout=5)
        return seen

    return asyncio.run(main())


def pg8000_copy(server: Server) -> list[Any]:
    import pg8000.dbapi

    conn = pg8000.dbapi.connect(user="heron", host=server.host, port=server.port,
                                database="heron", timeout=TIMEOUT_S)
    seen: list[Any] = []
    try:
        cur = conn.cursor()
        cur.execute("DROP TABLE IF EXISTS s_copy4")
        cur.execute("CREATE TABLE s_copy4 (id integer, name text)")
        cur.execute("COPY s_copy4 FROM STDIN WITH (FORMAT csv)", stream=io.BytesIO(b"1,a\n2,b\n"))
        seen.append(cur.rowcount)
        out = io.BytesIO()
        cur.execute("COPY (SELECT * FROM s_copy4 ORDER BY id) TO STDOUT", stream=out)
        seen.append(out.getvalue())
        conn.commit()
    finally:
        conn.close()
    return seen


# -- cursors ------------------------------------------------------------------------------------


def sql_cursors(server: Server) -> list[Any]:
    """DECLARE / FETCH / MOVE / CLOSE in every direction, through the simple protocol."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        return _statements(conn, (
            "DECLARE outside CURSOR FOR SELECT 1", "BEGIN",
            "DECLARE c SCROLL CURSOR FOR SELECT x FROM generate_series(1, 10) AS t(x) ORDER BY x",
            "FETCH 3 FROM c", "FETCH NEXT FROM c", "FETCH PRIOR FROM c", "FETCH ABSOLUTE 7 FROM c",
            "FETCH RELATIVE -2 FROM c", "MOVE 2 IN c", "FETCH FORWARD 2 FROM c",
            "FETCH BACKWARD 3 FROM c", "FETCH LAST FROM c", "FETCH FIRST FROM c",
            "FETCH ABSOLUTE -3 FROM c", "FETCH ALL FROM c", "FETCH NEXT FROM c",
            "FETCH BACKWARD ALL FROM c", "MOVE FORWARD ALL IN c", "FETCH RELATIVE 0 FROM c",
            "FETCH FORWARD 0 FROM c", "CLOSE c", "FETCH 1 FROM c", "ROLLBACK",
            "BEGIN", "DECLARE f NO SCROLL CURSOR FOR SELECT x FROM generate_series(1, 5) AS t(x)",
            "FETCH 2 FROM f", "FETCH PRIOR FROM f", "ROLLBACK",
            "BEGIN", "DECLARE h CURSOR WITH HOLD FOR SELECT x FROM generate_series(1, 4) AS t(x)",
            "FETCH 1 FROM h", "COMMIT", "FETCH ALL FROM h", "CLOSE h", "CLOSE h"))


def psycopg_named_cursor(server: Server) -> list[Any]:
    seen: list[Any] = []
    with psycopg.connect(server.dsn) as conn:
        with conn.cursor(name="nc") as cur:
            cur.execute("SELECT x, x * 2 AS y FROM generate_series(1, 2500) AS t(x) WHERE x > %s",
                        [5])
            seen.append(cur.fetchmany(3))
            seen.append(cur.fetchone())
            seen.append(len(cur.fetchall()))
        with conn.cursor(name="sc", scrollable=True) as cur:
            cur.execute("SELECT x FROM generate_series(1, 10) AS t(x)")
            cur.scroll(5)
            seen.append(cur.fetchone())
            cur.scroll(-3)
            seen.append(cur.fetchone())
            cur.scroll(0, "absolute")
            seen.append(cur.fetchmany(2))
        conn.commit()
        for query in ("SELECT 'text' AS v", "SELECT 42 AS v"):  # one name, other columns
            with conn.cursor(name="again") as cur:
                cur.execute(query)
                seen.append(cur.fetchall())
        with conn.cursor(name="held", withhold=True) as cur:
            cur.execute("SELECT x FROM generate_series(1, 5) AS t(x)")
            conn.commit()
            seen.append(cur.fetchall())
    return seen


def psycopg2_named_cursor(server: Server) -> list[Any]:
    import psycopg2

    seen: list[Any] = []
    conn = psycopg2.connect(server.dsn)
    try:
        with conn.cursor(name="pc") as cur:
            cur.itersize = 7
            cur.execute("SELECT x FROM generate_series(1, 30) AS t(x)")
            seen.append([row for row in cur])
        with conn.cursor(name="pc2", scrollable=True) as cur:
            cur.execute("SELECT x FROM generate_series(1, 30) AS t(x)")
            seen.append(cur.fetchmany(4))
            cur.scroll(-2)
            seen.append(cur.fetchone())
            cur.scroll(20, mode="absolute")
            seen.append(cur.fetchone())
        conn.commit()
    finally:
        conn.close()
    return seen


# -- transactions and savepoints ----------------------------------------------------------------


def savepoints(server: Server) -> list[Any]:
    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh_table(conn, "s_save", "id integer PRIMARY KEY, note text")
        seen += _statements(conn, (
            "SAVEPOINT outside", "BEGIN", "INSERT INTO s_save VALUES (1, 'a')", "SAVEPOINT one",
            "INSERT INTO s_save VALUES (2, 'b')", "SAVEPOINT two",
            "INSERT INTO s_save VALUES (3, 'c')", "ROLLBACK TO SAVEPOINT two",
            "INSERT INTO s_save VALUES (1, 'duplicate')", "SELECT 1", "ROLLBACK TO one",
            "INSERT INTO s_save VALUES (4, 'd')", "RELEASE one", "ROLLBACK TO one",
            "SAVEPOINT again", "UPDATE s_save SET note = 'x'", "ROLLBACK TO SAVEPOINT again",
            "RELEASE SAVEPOINT again", "COMMIT"))
        seen.append(conn.execute("SELECT * FROM s_save ORDER BY id").fetchall())
    with psycopg.connect(server.dsn) as conn:
        with conn.transaction():
            conn.execute("INSERT INTO s_save VALUES (10, 'outer')")
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO s_save VALUES (10, 'clash')")
            except psycopg.errors.UniqueViolation as exc:
                seen.append(_error(exc))
            with conn.transaction():
                conn.execute("INSERT INTO s_save VALUES (11, 'inner')")
        seen.append(conn.execute("SELECT * FROM s_save WHERE id >= 10 ORDER BY id").fetchall())
    return seen


def transaction_modes(server: Server) -> list[Any]:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh_table(conn, "s_modes", "i integer")
        return _statements(conn, (
            "BEGIN ISOLATION LEVEL REPEATABLE READ", "SHOW transaction_isolation", "COMMIT",
            "BEGIN READ ONLY", "SELECT count(*) FROM s_modes", "INSERT INTO s_modes VALUES (1)",
            "ROLLBACK", "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
            "SHOW default_transaction_read_only", "BEGIN", "INSERT INTO s_modes VALUES (2)",
            "ROLLBACK", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE, "
            "ISOLATION LEVEL READ COMMITTED", "SHOW default_transaction_isolation", "BEGIN",
            "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SHOW transaction_isolation",
            "COMMIT", "SET statement_timeout = 1500", "SHOW statement_timeout",
            "SET statement_timeout = '2min'", "SHOW statement_timeout",
            "RESET statement_timeout", "SHOW statement_timeout"))


def statement_timeout(server: Server) -> list[Any]:
    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = '300ms'")
        try:
            # pg_sleep is PostgreSQL's; a long count stands in for it on both servers.
            conn.execute("SELECT count(*) FROM generate_series(1, 3000000000) AS t(x) "
                         "WHERE x % 7 = 3")
        except psycopg.Error as exc:
            seen.append(_error(exc))
        seen.append(conn.execute("SELECT 1").fetchone())
    return seen


def write_conflict(server: Server) -> list[Any]:
    """Two transactions update one row: the second fails (PostgreSQL under SERIALIZABLE: 40001
    once the first commits; Heron at once)."""
    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as setup_conn:
        fresh_table(setup_conn, "s_conflict", "id integer PRIMARY KEY, n integer")
        setup_conn.execute("INSERT INTO s_conflict VALUES (1, 0)")
    first = psycopg.connect(server.dsn)
    second = psycopg.connect(server.dsn)
    try:
        for conn in (first, second):
            conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            conn.execute("SELECT n FROM s_conflict WHERE id = 1").fetchone()
        first.execute("UPDATE s_conflict SET n = n + 1 WHERE id = 1")
        first.commit()
        try:
            second.execute("UPDATE s_conflict SET n = n + 10 WHERE id = 1")
            second.commit()
        except psycopg.Error as exc:
            seen.append(_error(exc))
            second.rollback()
    finally:
        first.close()
        second.close()
    with psycopg.connect(server.dsn) as conn:
        seen.append(conn.execute("SELECT n FROM s_conflict").fetchone())
    return seen


def hot_row(server: Server) -> list[Any]:
    """Eight clients increment one counter at once, each in autocommit: every UPDATE succeeds
    (PostgreSQL's writer waits on the row's lock; Heron's runs again after the conflict:
    server.write_conflicts). Half go through psycopg (extended protocol, an implicit block per
    statement), half through psycopg2 (simple protocol)."""
    import psycopg2

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh_table(conn, "s_hot", "id integer PRIMARY KEY, n integer")
        conn.execute("INSERT INTO s_hot VALUES (1, 0), (2, 0)")
    errors: list[str] = []

    def increment(extended: bool) -> None:
        conn = (psycopg.connect(server.dsn, autocommit=True) if extended else
                psycopg2.connect(server.dsn))
        conn.autocommit = True
        cursor = conn.cursor()
        try:
            for _ in range(25):
                try:
                    cursor.execute("UPDATE s_hot SET n = n + 1 WHERE id = 1")
                except Exception as exc:  # (either driver's error)
                    errors.append(_error(exc))
        finally:
            conn.close()

    threads = [threading.Thread(target=increment, args=(i % 2 == 0,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S)
    with psycopg.connect(server.dsn) as conn:
        return [errors, conn.execute("SELECT id, n FROM s_hot ORDER BY id").fetchall()]


def write_waits_for_block(server: Server) -> list[Any]:
    """An autocommit UPDATE of a row that an open block has changed waits for the block: it
    ends with COMMIT (the UPDATE then adds to the block's value), with ROLLBACK (to the value
    before it); past lock_timeout it gives up (55P03), past statement_timeout too (57014)."""
    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh_table(conn, "s_held", "id integer PRIMARY KEY, n integer")
        conn.execute("INSERT INTO s_held VALUES (1, 0)")
    with psycopg.connect(server.dsn) as holder, psycopg.connect(
            server.dsn, autocommit=True) as waiter:
        for end in (holder.commit, holder.rollback):
            holder.execute("UPDATE s_held SET n = n + 1 WHERE id = 1")
            done = threading.Event()

            def write(done: threading.Event = done) -> None:
                waiter.execute("UPDATE s_held SET n = n + 10 WHERE id = 1")
                done.set()

            writer = threading.Thread(target=write)
            writer.start()
            seen.append(done.wait(0.5))  # False: still waiting for the block
            end()
            writer.join(TIMEOUT_S)
            seen.append((done.is_set(), waiter.execute("SELECT n FROM s_held").fetchone()))
        holder.execute("UPDATE s_held SET n = 0 WHERE id = 1")
        for setting in ("lock_timeout = '200ms'", "statement_timeout = '200ms'"):
            waiter.execute(f"SET {setting}")
            try:
                waiter.execute("UPDATE s_held SET n = 5 WHERE id = 1")
            except psycopg.Error as exc:
                seen.append((_error(exc), exc.diag.message_primary))
            waiter.execute("RESET lock_timeout")
        holder.rollback()
        seen.append(waiter.execute("SELECT n FROM s_held").fetchone())
    return seen

def sequences_per_session(server: Server) -> list[Any]:
    """currval and lastval answer what the session's own nextval calls drew (a serial column's
    default included), not another session's; setval sets them; 55000 before any."""
    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as first, psycopg.connect(
            server.dsn, autocommit=True) as second:
        fresh_table(first, "s_serial", "id serial PRIMARY KEY, v text")
        first.execute("DROP SEQUENCE IF EXISTS s_counter")
        first.execute("CREATE SEQUENCE s_counter")
        for conn, sql in [
                (first, "SELECT currval('s_serial_id_seq')"), (first, "SELECT lastval()"),
                (first, "INSERT INTO s_serial (v) VALUES ('a')"),
                (second, "INSERT INTO s_serial (v) VALUES ('b'), ('c')"),
                (first, "SELECT currval('s_serial_id_seq'), lastval()"),
                (second, "SELECT currval('public.s_serial_id_seq'), lastval()"),
                (first, "SELECT nextval('s_counter'::regclass), lastval()"),
                (second, "SELECT currval('s_counter')"),
                (second, "SELECT setval('s_counter', 42)"),
                (second, "SELECT currval('s_counter'::regclass)"),
                (second, "SELECT setval('s_counter', 50, false)"),
                (second, "SELECT currval('s_counter'), lastval()"),
                (first, "INSERT INTO s_serial (v) VALUES ('d') RETURNING id, lastval()")]:
            try:
                cursor = conn.execute(sql)
                seen.append(cursor.fetchall() if cursor.description else cursor.statusmessage)
            except psycopg.Error as exc:
                seen.append((_error(exc), exc.diag.message_primary))
    return seen

_PREPARED_AND_DISCARDED = (
    "PREPARE s_q (int, numeric(10,2)) AS SELECT $1 * 2 AS d, $2 * 2 AS n",
    "EXECUTE s_q(21, 1.234)", "EXECUTE s_q('4', 1)", "EXECUTE s_q(1)", "EXECUTE s_q",
    "PREPARE s_q AS SELECT 1", "PREPARE s_w AS INSERT INTO s_prepared VALUES ($1) RETURNING i",
    "EXECUTE s_w(7)", "DEALLOCATE s_w", "EXECUTE s_w(8)", "DEALLOCATE s_w",
    "CREATE TEMP TABLE s_temp (i int)", "CREATE TEMP VIEW s_temp_view AS SELECT * FROM s_temp",
    "CREATE TEMP SEQUENCE s_temp_seq", "SELECT nextval('s_temp_seq')", "DISCARD SEQUENCES",
    "SELECT currval('s_temp_seq')", "DISCARD PLANS", "DISCARD TEMP", "SELECT * FROM s_temp",
    "SELECT * FROM s_temp_view", "SELECT nextval('s_temp_seq')", "SET statement_timeout = '5s'",
    "LISTEN s_channel", "BEGIN", "DISCARD ALL", "ROLLBACK", "DISCARD ALL",
    "SHOW statement_timeout", "EXECUTE s_q(1, 1)", "DISCARD nothing",
    "SELECT count(*) FROM s_prepared")


def prepared_and_discarded(server: Server) -> list[Any]:
    """SQL's PREPARE, EXECUTE and DEALLOCATE (one namespace with the protocol's named
    statements), and DISCARD: through psycopg (extended protocol), psycopg2 (simple) and
    asyncpg."""
    import psycopg2

    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh_table(conn, "s_prepared", "i integer")
        seen += _statements(conn, _PREPARED_AND_DISCARDED)
    with contextlib.closing(psycopg2.connect(server.dsn)) as conn:
        conn.autocommit = True
        cursor = conn.cursor()
        for sql in _PREPARED_AND_DISCARDED:
            try:
                cursor.execute(sql)
                seen.append((sql, cursor.statusmessage,
                             cursor.fetchall() if cursor.description else None))
            except psycopg2.Error as exc:
                seen.append((sql, _error(exc)))

    async def with_asyncpg() -> None:  # (asyncpg describes a statement before it binds one)
        import asyncpg

        conn = await asyncpg.connect(host=server.host, port=server.port, user="heron",
                                     database="heron", timeout=TIMEOUT_S)
        try:
            await conn.execute("PREPARE s_a (int) AS SELECT $1 * 2 AS d, 'x'::text AS t")
            seen.append([tuple(r) for r in await conn.fetch("EXECUTE s_a(21)")])
        finally:
            await conn.close(timeout=5)

    asyncio.run(with_asyncpg())
    return seen

def executemany(server: Server) -> list[Any]:
    """Pipelined INSERTs (Heron runs them as one batch) with PostgreSQL's answers, also when a
    row in the middle fails."""
    import asyncpg

    seen: list[Any] = []
    rows = [(i, f"name {i}", None if i % 7 else 1.5 * i) for i in range(300)]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh_table(conn, "s_many", "id integer PRIMARY KEY, name text NOT NULL, score float8")
        cur = conn.cursor()
        cur.executemany("INSERT INTO s_many VALUES (%s, %s, %s)", rows)
        seen.append(cur.rowcount)
        bad = [(1000 + i, f"n{i}", None) for i in range(50)] + [(5, "clash", None)] + [
            (2000 + i, f"m{i}", None) for i in range(50)]
        try:
            cur.executemany("INSERT INTO s_many VALUES (%s, %s, %s)", bad)
        except psycopg.Error as exc:
            seen.append(_error(exc))
        seen.append(conn.execute("SELECT count(*), sum(id) FROM s_many").fetchone())
    with psycopg.connect(server.dsn) as conn:  # inside a transaction block
        cur = conn.cursor()
        cur.executemany("INSERT INTO s_many VALUES (%s, %s, %s)",
                        [(3000 + i, f"t{i}", i / 2) for i in range(40)])
        try:
            cur.executemany("INSERT INTO s_many (id, name) VALUES (%s, %s)",
                            [(4000, "ok"), (4001, None), (4002, "never")])
        except psycopg.Error as exc:
            seen.append((_error(exc), str(conn.info.transaction_status)))
        conn.rollback()
        seen.append(conn.execute("SELECT count(*) FROM s_many").fetchone())

    async def with_asyncpg() -> None:
        conn = await asyncpg.connect(host=server.host, port=server.port, user="heron",
                                     database="heron", timeout=10, command_timeout=TIMEOUT_S)
        try:
            await conn.executemany("INSERT INTO s_many (id, name) VALUES ($1, $2)",
                                   [(5000 + i, f"a{i}") for i in range(100)])
            try:
                await conn.executemany("INSERT INTO s_many (id, name) VALUES ($1, $2)",
                                       [(6000, "x"), (6000, "y")])
            except asyncpg.PostgresError as exc:
                seen.append(exc.sqlstate)
            seen.append(await conn.fetchval("SELECT count(*) FROM s_many"))
        finally:
            await conn.close(timeout=5)

    asyncio.run(with_asyncpg())
    return seen


def listen_notify(server: Server) -> list[Any]:
    """LISTEN / NOTIFY between two sessions: delivered at commit, folded within a transaction,
    dropped on rollback, sent to the sender too; tags, and what UNLISTEN stops."""
    import asyncpg

    seen: list[Any] = []
    with psycopg.connect(server.dsn, autocommit=True) as listener, \
            psycopg.connect(server.dsn, autocommit=True) as sender:
        seen.append(listener.execute("LISTEN events").statusmessage)
        listener.execute("LISTEN other")
        seen.append(listener.execute("NOTIFY events, 'to myself'").statusmessage)
        sender.execute("NOTIFY events, 'hello'")
        with sender.transaction():
            sender.execute("NOTIFY events, 'twice'")
            sender.execute("NOTIFY events, 'twice'")
            sender.execute("NOTIFY other")
        with contextlib.suppress(RuntimeError), sender.transaction():
            sender.execute("NOTIFY events, 'rolled back'")
            raise RuntimeError
        sender.execute("NOTIFY quiet, 'nobody listens'")
        listener.execute("UNLISTEN other")
        sender.execute("NOTIFY other, 'after unlisten'")
        sender.execute("NOTIFY events, 'last'")
        seen.append([(n.channel, n.payload, n.pid == sender.info.backend_pid)
                     for n in listener.notifies(timeout=5, stop_after=5)])
        seen.append(listener.execute("UNLISTEN *").statusmessage)

    async def with_asyncpg() -> None:
        conn = await asyncpg.connect(host=server.host, port=server.port, user="heron",
                                     database="heron", timeout=10, command_timeout=TIMEOUT_S)
        other = await asyncpg.connect(host=server.host, port=server.port, user="heron",
                                      database="heron", timeout=10, command_timeout=TIMEOUT_S)
        received: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        try:
            await conn.add_listener("jobs", lambda _c, _pid, ch, payload: received.put_nowait(
                (ch, payload)))
            await other.execute("NOTIFY jobs, 'from asyncpg'")
            seen.append(await asyncio.wait_for(received.get(), 5))
        finally:
            await other.close(timeout=5)
            await conn.close(timeout=5)

    asyncio.run(with_asyncpg())
    return seen


SCRIPTS: dict[str, Callable[[Server], list[Any]]] = {
    "listen_notify": listen_notify,
    "executemany": executemany,
    "psycopg_copy": psycopg_copy,
    "psycopg2_copy": psycopg2_copy,
    "asyncpg_copy": asyncpg_copy,
    "pg8000_copy": pg8000_copy,
    "sql_cursors": sql_cursors,
    "psycopg_named_cursor": psycopg_named_cursor,
    "psycopg2_named_cursor": psycopg2_named_cursor,
    "savepoints": savepoints,
    "transaction_modes": transaction_modes,
    "statement_timeout": statement_timeout,
    "write_conflict": write_conflict,
    "hot_row": hot_row,
    "write_waits_for_block": write_waits_for_block,
    "sequences_per_session": sequences_per_session,
    "prepared_and_discarded": prepared_and_discarded,
}

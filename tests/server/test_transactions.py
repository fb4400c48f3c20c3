"""Savepoints emulated by replay (and refused where a replay could differ), replays that notice
another session's change, cursors WITH HOLD, statement_timeout on streamed rows, and the
implicit transaction of a pipeline. (Agreement with PostgreSQL: tests/oracle.)"""

from __future__ import annotations

import pytest
from support.tables import fresh_table

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)


def test_rollback_to_replays_earlier_writes_after_a_failure(conn):
    fresh_table(conn, "tx_replay", "id integer PRIMARY KEY, note text")
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE tx_made_here (i integer)")
    conn.execute("INSERT INTO tx_made_here VALUES (1), (2)")
    conn.execute("INSERT INTO tx_replay VALUES (1, 'a'), (2, 'b')")
    conn.execute("UPDATE tx_replay SET note = upper(note) WHERE id = 2")
    conn.execute("SAVEPOINT s")
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("INSERT INTO tx_replay VALUES (1, 'again')")
    conn.execute("ROLLBACK TO SAVEPOINT s")
    assert conn.execute("SELECT * FROM tx_replay ORDER BY id").fetchall() == [(1, "a"),
                                                                               (2, "B")]
    conn.execute("INSERT INTO tx_replay VALUES (3, 'c')")
    conn.execute("COMMIT")
    assert conn.execute("SELECT count(*) FROM tx_replay").fetchone() == (3,)
    assert conn.execute("SELECT count(*) FROM tx_made_here").fetchone() == (2,)
    conn.execute("DROP TABLE tx_made_here")


@pytest.mark.parametrize(("columns", "write", "reason"), [
    ("id integer, note text", "INSERT INTO {t} VALUES (nextval('tx_seq'), 'x')", "nextval"),
    ("id integer DEFAULT nextval('tx_seq'), note text", "INSERT INTO {t} (note) VALUES ('x')",
     "default"),
    ("id integer, made timestamp DEFAULT now()", "INSERT INTO {t} (id) VALUES (1)", "default"),
    ("id integer, note text", "INSERT INTO {t} VALUES (1, gen_random_uuid()::text)",
     "gen_random_uuid"),
])
def test_rollback_to_past_an_unrepeatable_write_is_refused(conn, columns, write, reason):
    conn.execute("CREATE SEQUENCE IF NOT EXISTS tx_seq")
    fresh_table(conn, "tx_volatile", columns)
    conn.execute("BEGIN")
    conn.execute(write.format(t="tx_volatile"))
    conn.execute("SAVEPOINT s")
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.execute("SELECT 1/0")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match=reason) as info:
        conn.execute("ROLLBACK TO s")
    assert "Roll back the whole transaction" in info.value.diag.message_hint
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM tx_volatile").fetchone() == (0,)


def test_rollback_to_with_nothing_to_undo_keeps_volatile_writes(conn):
    """Only a replay is inexact: a savepoint after which nothing was written or failed costs
    nothing, whatever came before it."""
    fresh_table(conn, "tx_cheap", "id integer, note text")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO tx_cheap VALUES (1, gen_random_uuid()::text)")
    conn.execute("SAVEPOINT s")
    conn.execute("SELECT count(*) FROM tx_cheap")
    conn.execute("ROLLBACK TO s")
    conn.execute("COMMIT")
    assert conn.execute("SELECT count(*) FROM tx_cheap").fetchone() == (1,)


def test_a_replay_that_reads_another_sessions_rows_fails_with_40001(heron_server, conn):
    fresh_table(conn, "tx_source", "i integer")
    fresh_table(conn, "tx_target", "i integer PRIMARY KEY")
    conn.execute("INSERT INTO tx_source VALUES (1), (2)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO tx_target SELECT i FROM tx_source")
    conn.execute("SAVEPOINT s")
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("INSERT INTO tx_target VALUES (1)")
    with psycopg.connect(heron_server.dsn, autocommit=True) as other:
        other.execute("INSERT INTO tx_source VALUES (3)")
    with pytest.raises(psycopg.errors.SerializationFailure) as info:
        conn.execute("ROLLBACK TO s")
    assert "INSERT 0 3" in info.value.diag.message_detail
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM tx_target").fetchone() == (0,)


def test_savepoint_names_and_nesting(conn):
    conn.execute("BEGIN")
    conn.execute("SAVEPOINT a")
    conn.execute("SAVEPOINT a")  # PostgreSQL allows the same name twice; the newest one wins
    conn.execute("RELEASE a")
    conn.execute("ROLLBACK TO a")  # the first one is still there
    with pytest.raises(psycopg.errors.InvalidSavepointSpecification):
        conn.execute("RELEASE b")
    conn.execute("ROLLBACK")


def test_cursor_with_hold_outlives_its_transaction_and_the_connection_runs_meanwhile(conn):
    conn.execute("BEGIN")
    conn.execute("DECLARE held CURSOR WITH HOLD FOR SELECT i FROM range(1000) t(i)")
    assert conn.execute("FETCH 2 FROM held").fetchall() == [(0,), (1,)]
    conn.execute("COMMIT")
    assert conn.execute("SELECT 42").fetchone() == (42,)
    assert len(conn.execute("FETCH ALL FROM held").fetchall()) == 998
    conn.execute("CLOSE held")


def test_interleaved_portals_each_keep_their_place(heron_server):
    """A second portal running while the first is suspended detaches the first one's rows from
    DuckDB; both continue where they were."""
    with psycopg.connect(heron_server.dsn) as c:
        first = c.cursor(name="first")
        second = c.cursor(name="second")
        first.execute("SELECT i FROM range(50000) t(i) ORDER BY i")
        second.execute("SELECT i * 10 FROM range(50000) t(i) ORDER BY i")
        assert first.fetchmany(2) == [(0,), (1,)]
        assert second.fetchmany(2) == [(0,), (10,)]
        c.execute("CREATE TEMP TABLE meanwhile AS SELECT 1")
        assert first.fetchone() == (2,)
        assert second.fetchone() == (20,)
        assert len(first.fetchall()) == 49997


def test_statement_timeout_covers_streamed_rows(conn):
    conn.execute("SET statement_timeout = '200ms'")
    with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
        conn.execute("SELECT count(*) FROM range(3000000000) t(x) WHERE x % 7 = 3")
    conn.execute("RESET statement_timeout")
    assert conn.execute("SHOW statement_timeout").fetchone() == ("0",)


def test_invalid_statement_timeout_is_refused(conn):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="statement_timeout"):
        conn.execute("SET statement_timeout = 'soon'")


def test_pipeline_is_one_implicit_transaction(conn):
    fresh_table(conn, "tx_pipe", "i integer PRIMARY KEY")
    with pytest.raises(psycopg.errors.UniqueViolation), conn.pipeline():
        conn.execute("INSERT INTO tx_pipe VALUES (1)")
        conn.execute("SELECT * FROM tx_pipe")
        conn.execute("INSERT INTO tx_pipe VALUES (1)")
    # One Sync ends the pipeline: its implicit transaction rolls back whole, as in PostgreSQL.
    assert conn.execute("SELECT count(*) FROM tx_pipe").fetchone() == (0,)


def test_statement_timeout_does_not_run_while_a_portal_waits(heron_server):
    """PostgreSQL stops the clock when an Execute completes (suspended or not): a portal the
    client reads slowly is not canceled between its Executes."""
    import time

    from support.pgwire import SYNC, RawClient, bind, execute, kinds, parse, query

    with RawClient(heron_server.host, heron_server.port) as client:
        client.startup()
        client.send(query("SET statement_timeout = '200ms'; BEGIN"))
        client.read_until()
        client.send(parse("SELECT i FROM range(100) t(i)"), bind(portal="slow"),
                    execute("slow", 1), SYNC)
        assert kinds(client.read_until()) == "12DsZ"
        time.sleep(0.5)
        client.send(execute("slow", 2), SYNC)
        messages = client.read_until()
        assert kinds(messages) == "DDsZ"
        assert [m.row() for m in messages if m.kind == "D"] == [[b"1"], [b"2"]]


def test_rows_locked_for_update_then_written_by_two_sessions_fail_the_second_with_40001(
        heron_server, conn):
    """FOR UPDATE takes no lock (pg_semantics): the guarantee clients lock rows for, no lost
    update, comes from the snapshot's write conflict, which the second writer gets as 40001."""
    fresh_table(conn, "tx_jobs", "id integer PRIMARY KEY, taken text")
    conn.execute("INSERT INTO tx_jobs VALUES (1, NULL), (2, NULL)")
    with psycopg.connect(heron_server.dsn, autocommit=True) as other:
        picks = []
        for session in (conn, other):
            session.execute("BEGIN")
            picks.append(session.execute(
                "SELECT id FROM tx_jobs WHERE taken IS NULL ORDER BY id LIMIT 1 "
                "FOR UPDATE SKIP LOCKED").fetchone())
        assert picks == [(1,), (1,)]  # (PostgreSQL's second session would get job 2)
        conn.execute("UPDATE tx_jobs SET taken = 'first' WHERE id = 1")
        conn.execute("COMMIT")
        with pytest.raises(psycopg.errors.SerializationFailure):
            other.execute("UPDATE tx_jobs SET taken = 'second' WHERE id = 1")
        other.execute("ROLLBACK")
    assert conn.execute("SELECT taken FROM tx_jobs WHERE id = 1").fetchone() == ("first",)


def test_deferred_foreign_keys_are_checked_when_the_block_ends(conn):
    # Django makes every foreign key DEFERRABLE INITIALLY DEFERRED, and runs SET CONSTRAINTS ALL
    # IMMEDIATE, then ALL DEFERRED, to check them (the differential cases:
    # tests/oracle/test_ddl_statements.py, deferred_foreign_keys)
    fresh_table(conn, "tx_parent", "id integer PRIMARY KEY, code integer UNIQUE")
    fresh_table(conn, "tx_child", "p integer CONSTRAINT tx_child_p REFERENCES tx_parent "
                                  "DEFERRABLE INITIALLY DEFERRED, "
                                  "c integer CONSTRAINT tx_child_c REFERENCES tx_parent (code)")
    notices = []
    conn.add_notice_handler(lambda d: notices.append((d.severity, d.message_primary)))
    conn.execute("SET CONSTRAINTS ALL IMMEDIATE")
    with conn.transaction():  # a row before the row it references
        conn.execute("INSERT INTO tx_child VALUES (1, NULL)")
        conn.execute("INSERT INTO tx_parent VALUES (1, 10)")
    with pytest.raises(psycopg.errors.ForeignKeyViolation), conn.transaction():
        conn.execute("INSERT INTO tx_child VALUES (2, NULL)")  # refused by COMMIT
    conn.execute("BEGIN")
    conn.execute("INSERT INTO tx_child VALUES (3, NULL)")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("SET CONSTRAINTS ALL IMMEDIATE")
    conn.execute("ROLLBACK")
    conn.execute("BEGIN")
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute("SET CONSTRAINTS tx_child_c DEFERRED")
    conn.execute("ROLLBACK")
    with pytest.raises(psycopg.errors.ForeignKeyViolation), conn.transaction():
        conn.execute("INSERT INTO tx_child VALUES (NULL, 99)")  # not deferrable: at once
        conn.execute("INSERT INTO tx_parent VALUES (2, 99)")
    assert notices == [("WARNING", "SET CONSTRAINTS can only be used in transaction blocks")]
    assert conn.execute("SELECT * FROM tx_child").fetchall() == [(1, None)]
    conn.execute("DROP TABLE tx_child")

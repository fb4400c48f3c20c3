"""pg_stat_activity, pg_backend_pid, pg_cancel_backend and pg_terminate_backend over the wire
(psycopg 3), on a server of its own: what one session sees of the others, and which of them it
may signal, as PostgreSQL decides both."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from support.polling import wait_for

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)

SLOW = "SELECT count(*) FROM range(20000000000)"  # DuckDB takes minutes: only a cancel ends it


@pytest.fixture(scope="module")
def server(spawn_heron, tmp_path_factory):
    server = spawn_heron(tmp_path_factory.mktemp("activity") / "data")
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE ROLE alice LOGIN")
        conn.execute("CREATE ROLE bob LOGIN")
    return server


def connect(server, user="heron", **kwargs):
    return psycopg.connect(f"{server.dsn} user={user}", autocommit=True, **kwargs)


def activity(conn, pid):
    cur = conn.execute("SELECT * FROM pg_stat_activity WHERE pid = %s", [pid])
    names = [c.name for c in cur.description]
    row = cur.fetchone()
    return None if row is None else dict(zip(names, row, strict=True))


def test_columns_are_postgres_16s(server):
    with connect(server) as conn:
        cur = conn.execute("SELECT * FROM pg_catalog.pg_stat_activity LIMIT 0")
        assert [c.name for c in cur.description] == [
            "datid", "datname", "pid", "leader_pid", "usesysid", "usename", "application_name",
            "client_addr", "client_hostname", "client_port", "backend_start", "xact_start",
            "query_start", "state_change", "wait_event_type", "wait_event", "state",
            "backend_xid", "backend_xmin", "query_id", "query", "backend_type"]


def test_a_session_sees_itself_and_the_others(server):
    with connect(server, application_name="watcher") as me, \
            connect(server, application_name="worker") as other:
        other.execute("SELECT 42")
        assert me.execute("SELECT pg_backend_pid()").fetchone()[0] == me.info.backend_pid
        mine = activity(me, me.info.backend_pid)
        assert mine["state"] == "active"
        assert mine["query"] == "SELECT * FROM pg_stat_activity WHERE pid = $1"
        assert mine["application_name"] == "watcher"
        assert mine["usename"] == "heron" and mine["backend_type"] == "client backend"
        assert mine["datname"] == me.execute("SELECT current_database()").fetchone()[0]
        assert mine["datid"] == me.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()[0]
        assert mine["usesysid"] == 10
        assert mine["client_addr"] == "127.0.0.1"
        with socket.socket(fileno=os.dup(me.fileno())) as client:
            assert mine["client_port"] == client.getsockname()[1]
        assert mine["backend_start"] <= mine["xact_start"] <= mine["query_start"]
        theirs = activity(me, other.info.backend_pid)
        assert (theirs["state"], theirs["query"]) == ("idle", "SELECT 42")
        assert (theirs["wait_event_type"], theirs["wait_event"]) == ("Client", "ClientRead")
        assert theirs["xact_start"] is None and theirs["application_name"] == "worker"
        other.execute("SET application_name = 'renamed'")
        other.execute("BEGIN")
        other.execute("SELECT 1")
        theirs = activity(me, other.info.backend_pid)
        assert (theirs["state"], theirs["query"]) == ("idle in transaction", "SELECT 1")
        assert theirs["xact_start"] is not None
        assert theirs["application_name"] == "renamed"
        with pytest.raises(psycopg.errors.DivisionByZero):
            other.execute("SELECT 1 / 0")
        assert activity(me, other.info.backend_pid)["state"] == "idle in transaction (aborted)"
        other.execute("ROLLBACK")
        assert activity(me, other.info.backend_pid)["xact_start"] is None
        gone = other.info.backend_pid
    with connect(server) as me:
        wait_for(lambda: activity(me, gone) is None)  # gone with its connection


def test_other_roles_sessions_show_only_who_they_are(server):
    with connect(server, "alice") as alice, connect(server, "bob") as bob:
        bob.execute("SELECT 'secret'")
        seen = activity(alice, bob.info.backend_pid)
        assert (seen["usename"], seen["query"]) == ("bob", "<insufficient privilege>")
        assert seen["state"] is None and seen["client_addr"] is None
        assert seen["backend_start"] is None and seen["backend_type"] is None
        with connect(server) as superuser:
            assert activity(superuser, bob.info.backend_pid)["query"] == "SELECT 'secret'"


def run_slow(conn):
    """Run SLOW in a thread; the error it ended with (None when it finished)."""
    outcome = {}

    def target():
        try:
            conn.execute(SLOW)
        except psycopg.Error as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def test_cancel_another_sessions_statement(server):
    with connect(server, "alice") as worker, connect(server, "alice") as steerer:
        thread, outcome = run_slow(worker)
        pid = worker.info.backend_pid
        wait_for(lambda: activity(steerer, pid)["query"] == SLOW)
        assert steerer.execute("SELECT pg_cancel_backend(%s)", [pid]).fetchone()[0] is True
        thread.join(20)
        assert isinstance(outcome["error"], psycopg.errors.QueryCanceled)
        assert worker.execute("SELECT 1").fetchone()[0] == 1  # the session lives on


def test_signals_across_roles_are_refused_as_postgres_refuses_them(server):
    with connect(server, "alice") as alice, connect(server, "bob") as bob, \
            connect(server) as superuser:
        for function, words in (("pg_cancel_backend", "cancel query"),
                                ("pg_terminate_backend", "terminate process")):
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                alice.execute(f"SELECT {function}(%s)", [bob.info.backend_pid])
            assert refused.value.diag.message_primary == f"permission denied to {words}"
            assert "privileges of the role whose" in refused.value.diag.message_detail
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                alice.execute(f"SELECT {function}(%s)", [superuser.info.backend_pid])
            assert "SUPERUSER attribute" in refused.value.diag.message_detail
        assert bob.execute("SELECT 1").fetchone()[0] == 1  # untouched


def test_a_forged_call_signals_nothing(server):
    with connect(server) as victim, connect(server, "alice") as forger:
        forged = forger.execute(
            "SELECT heron_signal_backend(%s, 'not the token', %s, 'terminate', 0)",
            [victim.info.backend_pid, victim.info.backend_pid]).fetchone()[0]
        assert forged != 0
        assert victim.execute("SELECT 1").fetchone()[0] == 1


def test_unknown_pids_and_bad_timeouts(server):
    with connect(server) as conn:
        notices = []
        conn.add_notice_handler(lambda n: notices.append((n.severity, n.message_primary)))
        assert conn.execute("SELECT pg_cancel_backend(12345)").fetchone()[0] is False
        assert notices == [("WARNING", "PID 12345 is not a PostgreSQL backend process")]
        assert conn.execute("SELECT pg_cancel_backend(NULL)").fetchone()[0] is None
        with pytest.raises(psycopg.errors.InvalidParameterValue, match='"timeout" must not'):
            conn.execute("SELECT pg_terminate_backend(pg_backend_pid(), -1)")
        with pytest.raises(psycopg.errors.QueryCanceled, match="due to user request"):
            conn.execute("SELECT pg_cancel_backend(pg_backend_pid())")
        assert conn.execute("SELECT 1").fetchone()[0] == 1


def test_terminate_closes_the_other_connection(server):
    with connect(server, "alice") as worker, connect(server, "alice") as steerer:
        thread, outcome = run_slow(worker)
        pid = worker.info.backend_pid
        wait_for(lambda: activity(steerer, pid)["query"] == SLOW)
        started = time.monotonic()
        assert steerer.execute("SELECT pg_terminate_backend(%s, 10000)",
                               [pid]).fetchone()[0] is True
        assert time.monotonic() - started < 5
        assert activity(steerer, pid) is None  # gone before the call returned
        thread.join(20)
        error = outcome["error"]
        assert isinstance(error, psycopg.errors.AdminShutdown)
        assert error.diag.message_primary == "terminating connection due to administrator command"
        assert worker.closed or worker.broken


def test_terminate_an_idle_connection(server):
    with connect(server) as idle, connect(server) as steerer:
        assert steerer.execute("SELECT pg_terminate_backend(%s)",
                               [idle.info.backend_pid]).fetchone()[0] is True
        wait_for(lambda: activity(steerer, idle.info.backend_pid) is None)
        with pytest.raises(psycopg.OperationalError):
            idle.execute("SELECT 1")

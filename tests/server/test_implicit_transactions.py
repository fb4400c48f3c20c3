"""PostgreSQL's implicit transactions: the statements of one Query message, and the extended
protocol messages up to a Sync, commit together or not at all."""

from __future__ import annotations

import shutil
import subprocess

import pytest

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)


def connect(server, autocommit: bool = True):
    return psycopg.connect(server.dsn, autocommit=autocommit)


def count(server, table: str) -> int:
    with connect(server) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_one_query_message_is_all_or_nothing(heron_server):
    def psql(sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["psql", "-X", "-h", heron_server.host, "-p", str(heron_server.port),
                               "-U", "heron", "-d", "heron", "-c", sql],
                              capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin"})

    assert psql("CREATE TABLE implicit_q (i INTEGER)").returncode == 0
    failed = psql("INSERT INTO implicit_q VALUES (1); INSERT INTO implicit_q VALUES ('x'::int)")
    assert failed.returncode != 0 and "ERROR" in failed.stderr
    assert count(heron_server, "implicit_q") == 0  # the first INSERT was rolled back too
    ok = psql("INSERT INTO implicit_q VALUES (1); INSERT INTO implicit_q VALUES (2)")
    assert ok.returncode == 0, ok.stderr
    assert count(heron_server, "implicit_q") == 2
    # An explicit block inside the message is the client's to end.
    psql("BEGIN; INSERT INTO implicit_q VALUES (3); COMMIT; INSERT INTO implicit_q VALUES (4)")
    assert count(heron_server, "implicit_q") == 4


def test_pipeline_up_to_sync_is_all_or_nothing(heron_server):
    with connect(heron_server) as conn:
        conn.execute("CREATE TABLE implicit_p (i INTEGER)")
        with pytest.raises(psycopg.errors.InvalidTextRepresentation), conn.pipeline():
            conn.execute("INSERT INTO implicit_p VALUES (%s)", (1,))
            conn.execute("INSERT INTO implicit_p VALUES ('x'::int)")
        assert conn.execute("SELECT count(*) FROM implicit_p").fetchone() == (0,)
        with conn.pipeline():
            conn.execute("INSERT INTO implicit_p VALUES (%s)", (1,))
            conn.execute("INSERT INTO implicit_p VALUES (%s)", (2,))
        assert conn.execute("SELECT count(*) FROM implicit_p").fetchone() == (2,)
        # Each statement outside a pipeline commits at its own Sync.
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            conn.execute("INSERT INTO implicit_p VALUES ('y'::int)")
        conn.execute("INSERT INTO implicit_p VALUES (%s)", (3,))
    assert count(heron_server, "implicit_p") == 3

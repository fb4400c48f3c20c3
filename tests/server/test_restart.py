"""Data written through the server survives a restart on the same data directory."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(90)


def test_rows_survive_restart(heron_server, tmp_path):
    data_dir = tmp_path / "restart-data"
    first = heron_server.spawn(data_dir)
    with psycopg.connect(
        host=first.host,
        port=first.port,
        user="heron",
        dbname="heron",
        connect_timeout=5,
        autocommit=True,
    ) as conn:
        conn.execute("CREATE TABLE kept (i INTEGER, s VARCHAR)")
        conn.execute("INSERT INTO kept VALUES (1, 'one'), (2, 'two')")
    assert first.stop() == 0  # graceful shutdown on SIGTERM

    second = heron_server.spawn(data_dir)
    try:
        with psycopg.connect(
            host=second.host, port=second.port, user="heron", dbname="heron", connect_timeout=5
        ) as conn:
            rows = conn.execute("SELECT i, s FROM kept ORDER BY i").fetchall()
    finally:
        second.stop()
    assert rows == [(1, "one"), (2, "two")]

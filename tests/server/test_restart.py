"""Data written through the server survives a restart on the same data directory."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(90)


def test_rows_survive_restart(heron_server, tmp_path):
    data_dir = tmp_path / "restart-data"
    first = heron_server.spawn(data_dir)
    with psycopg.connect(first.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (i INTEGER, s VARCHAR)")
        conn.execute("INSERT INTO kept VALUES (1, 'one'), (2, 'two')")
    assert first.stop() == 0  # graceful shutdown on SIGTERM

    second = heron_server.spawn(data_dir)
    try:
        with psycopg.connect(second.dsn) as conn:
            rows = conn.execute("SELECT i, s FROM kept ORDER BY i").fetchall()
    finally:
        second.stop()
    assert rows == [(1, "one"), (2, "two")]


def test_loaded_files_survive_a_crash(heron_server, tmp_path):
    """CREATE TABLE ... AS SELECT from Parquet and CSV over the wire; the rows outlive a kill."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "reviews.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "body": ["good", "bad", None]}), parquet)
    csv = tmp_path / "tickets.csv"
    csv.write_text("id,subject\n10,printer jam\n11,password reset\n")
    data_dir = tmp_path / "crash-data"
    first = heron_server.spawn(data_dir)
    with psycopg.connect(first.dsn, autocommit=True) as conn:
        cur = conn.execute(f"CREATE TABLE reviews AS SELECT * FROM read_parquet('{parquet}')")
        assert cur.statusmessage == "SELECT 3"
        conn.execute(f"CREATE TABLE tickets AS SELECT * FROM read_csv('{csv}')")
        assert conn.execute("SELECT count(*) FROM demo.reviews").fetchone() == (300,)
    first.process.kill()  # no graceful shutdown: the write-ahead log must carry the data
    first.stop()

    second = heron_server.spawn(data_dir)
    try:
        with psycopg.connect(second.dsn) as conn:
            reviews = conn.execute("SELECT id, body FROM reviews ORDER BY id").fetchall()
            tickets = conn.execute("SELECT id, subject FROM tickets ORDER BY id").fetchall()
            demo_count = conn.execute("SELECT count(*) FROM demo.reviews").fetchone()
    finally:
        second.stop()
    assert reviews == [(1, "good"), (2, "bad"), (3, None)]
    assert tickets == [(10, "printer jam"), (11, "password reset")]
    assert demo_count == (300,)  # the demo is loaded on the first start only, not duplicated

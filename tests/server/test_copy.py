"""COPY through the COPY sub-protocol: psql's \\copy both ways, errors that leave nothing behind,
CopyFail, messages out of place, the extended protocol, bounded memory, and a server that never
reads its own standard input. (Agreement with PostgreSQL per driver: tests/oracle.)"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.pgwire import SYNC, RawClient, bind, execute, kinds, message, parse, query
from support.tables import fresh_table

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(120)


def _psql(server, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["psql", "-X", "-h", server.host, "-p", str(server.port), "-U", "heron", "-d", "heron",
         "-v", "ON_ERROR_STOP=1", "-c", command],
        capture_output=True, text=True, timeout=60,
        env={"PGCONNECT_TIMEOUT": "5", "PATH": "/usr/bin:/bin"})


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_copy_both_ways(heron_server, conn, tmp_path):
    fresh_table(conn, "cp_psql", "id integer, name text, price numeric(8,2)")
    source = tmp_path / "in.csv"
    source.write_text("id,name,price\n1,apple,1.50\n2,\"pear, green\",\n3,kiwi,0.25\n")
    done = _psql(heron_server, f"\\copy cp_psql FROM '{source}' WITH (FORMAT csv, HEADER)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "COPY 3"
    target = tmp_path / "out.txt"
    done = _psql(heron_server, f"\\copy (SELECT * FROM cp_psql ORDER BY id) TO '{target}'")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "COPY 3"
    assert target.read_text() == "1\tapple\t1.50\n2\tpear, green\t\\N\n3\tkiwi\t0.25\n"


def test_jsonb_columns_are_copied_out_as_jsonb(conn):
    fresh_table(conn, "cp_jsonb", "id integer, j jsonb, k json")
    conn.execute("""INSERT INTO cp_jsonb VALUES (1, '{"b": 1e2, "a": "x\\\\y"}', '{"b": 1}'),
                    (2, NULL, NULL)""")
    cur = conn.cursor()

    def copied(sql: str) -> bytes:
        with cur.copy(sql) as copy:
            return b"".join(bytes(data) for data in copy)

    # normalized as jsonb_out prints it (json keeps its text), then COPY's own escapes
    assert copied("COPY cp_jsonb TO STDOUT") == (
        b'1\t{"a": "x\\\\\\\\y", "b": 100}\t{"b": 1}\n2\t\\N\t\\N\n')
    assert copied("COPY (SELECT j FROM cp_jsonb ORDER BY id) TO STDOUT (FORMAT csv)") == (
        b'"{""a"": ""x\\\\y"", ""b"": 100}"\n\n')
    # binary: jsonb_send's version byte 1, then the text
    data = copied("COPY (SELECT j FROM cp_jsonb WHERE id = 1) TO STDOUT (FORMAT binary)")
    text = b'{"a": "x\\\\y", "b": 100}'
    assert data[19:] == struct.pack("!hi", 1, len(text) + 1) + b"\x01" + text + b"\xff\xff"


def test_bad_data_leaves_nothing(conn):
    fresh_table(conn, "cp_bad", "id integer, name text")
    cur = conn.cursor()
    with pytest.raises(psycopg.errors.InvalidTextRepresentation), cur.copy(
            "COPY cp_bad FROM STDIN") as copy:
        copy.write(b"1\tone\n2\ttwo\nthree\t3\n")
    with pytest.raises(psycopg.errors.BadCopyFileFormat, match="extra data"), cur.copy(
            "COPY cp_bad FROM STDIN") as copy:
        copy.write(b"1\tone\textra\n")
    with pytest.raises(psycopg.errors.BadCopyFileFormat, match='missing data for column "name"'
                       ), cur.copy("COPY cp_bad FROM STDIN") as copy:
        copy.write(b"1\n")
    assert conn.execute("SELECT count(*) FROM cp_bad").fetchone() == (0,)


def test_copied_rows_keys_are_checked_once_all_are_in(conn):
    conn.execute("DROP TABLE IF EXISTS cp_child")
    fresh_table(conn, "cp_parent", "id integer PRIMARY KEY")
    fresh_table(conn, "cp_child", "id integer, p integer REFERENCES cp_parent ON DELETE CASCADE")
    conn.execute("INSERT INTO cp_parent SELECT i FROM generate_series(1, 100) AS g(i)")
    cur = conn.cursor()
    with cur.copy("COPY cp_child FROM STDIN") as copy:  # (several batches: one check)
        for i in range(30_000):
            copy.write_row((i, i % 100 + 1))
    with pytest.raises(psycopg.errors.ForeignKeyViolation) as info, cur.copy(
            "COPY cp_child FROM STDIN") as copy:
        copy.write(b"1\t5\n2\t101\n")
    assert info.value.diag.message_detail == 'Key (p)=(101) is not present in table "cp_parent".'
    assert conn.execute("SELECT count(*) FROM cp_child").fetchone() == (30_000,)
    conn.execute("DROP TABLE cp_child, cp_parent")


def test_client_abort_is_copy_fail(heron_server, conn):
    fresh_table(conn, "cp_fail", "id integer")
    cur = conn.cursor()
    with pytest.raises(RuntimeError), cur.copy("COPY cp_fail FROM STDIN") as copy:
        copy.write(b"1\n2\n")
        raise RuntimeError("the application gives up")  # psycopg sends CopyFail
    assert conn.execute("SELECT count(*) FROM cp_fail").fetchone() == (0,)
    with RawClient(heron_server.host, heron_server.port) as client:
        client.startup()
        client.send(query("COPY cp_fail FROM STDIN"))
        assert client.read().kind == "G"
        client.send(message(b"d", b"3\n"), message(b"f", b"changed my mind\0"))
        messages = client.read_until()
        assert kinds(messages) == "EZ"
        assert messages[0].fields()["C"] == "57014"
        assert "changed my mind" in messages[0].fields()["M"]
    assert conn.execute("SELECT count(*) FROM cp_fail").fetchone() == (0,)


def test_copy_inside_a_transaction_rolls_back_with_it(heron_server):
    with psycopg.connect(heron_server.dsn) as c:
        fresh_table(c, "cp_tx", "id integer")
        c.commit()
        with c.cursor().copy("COPY cp_tx FROM STDIN") as copy:
            copy.write(b"1\n2\n")
        assert c.execute("SELECT count(*) FROM cp_tx").fetchone() == (2,)
        c.rollback()
        assert c.execute("SELECT count(*) FROM cp_tx").fetchone() == (0,)


def test_copy_where_and_columns(conn):
    fresh_table(conn, "cp_where", "id integer, name text, flag boolean DEFAULT true")
    with conn.cursor().copy("COPY cp_where (name, id) FROM STDIN (FORMAT csv) WHERE id > 1"
                            ) as copy:
        copy.write(b"a,1\nb,2\nc,3\n")
    assert conn.execute("SELECT * FROM cp_where ORDER BY id").fetchall() == [
        (2, "b", True), (3, "c", True)]


def test_other_messages_during_copy_in_are_a_protocol_error(heron_server):
    with RawClient(heron_server.host, heron_server.port) as client:
        client.startup()
        client.send(query("DROP TABLE IF EXISTS cp_raw; CREATE TABLE cp_raw (i integer)"))
        client.read_until()
        client.send(query("COPY cp_raw FROM STDIN"))
        response = client.read()
        assert response.kind == "G" and struct.unpack("!bh", response.body[:3]) == (0, 1)
        client.send(message(b"d", b"1\n"), query("SELECT 1"))
        messages = client.read_until()
        assert kinds(messages) == "EZ" and messages[0].fields()["C"] == "08P01"
        client.send(message(b"d", b"ignored\n"), message(b"c"), query("SELECT count(*) FROM "
                                                                      "cp_raw"))
        assert [m.row() for m in client.read_until() if m.kind == "D"] == [[b"0"]]


def test_copy_through_the_extended_protocol(heron_server):
    with RawClient(heron_server.host, heron_server.port) as client:
        client.startup()
        client.send(query("DROP TABLE IF EXISTS cp_ext; CREATE TABLE cp_ext (i integer)"))
        client.read_until()
        client.send(parse("COPY cp_ext FROM STDIN"), bind(), execute(), message(b"d", b"7\n8\n"),
                    message(b"c"), SYNC)
        messages = client.read_until()
        assert kinds(messages) == "12GCZ" and messages[3].body == b"COPY 2\0"
        client.send(parse("COPY cp_ext TO STDOUT"), bind(), execute(), SYNC)
        messages = client.read_until()
        assert kinds(messages) == "12HddcCZ"
        assert [m.body for m in messages if m.kind == "d"] == [b"7\n", b"8\n"]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_large_results_stream_in_bounded_memory(spawn_heron, tmp_path):
    """COPY TO STDOUT of 2M rows and the first 100 rows of a 3M-row result cost the server a few
    MiB, not the result's size (~100 MiB in Arrow)."""
    server = spawn_heron(tmp_path / "data")
    pid = server.process.pid
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("SELECT 1")
        before = _rss_mib(pid)
        peak, rows = before, 0
        with c.cursor().copy("COPY (SELECT i, 'row number ' || i AS s FROM range(2000000) t(i)) "
                             "TO STDOUT") as copy:
            for block in copy:
                rows += bytes(block).count(b"\n")
                if rows % 100_000 < 20:
                    peak = max(peak, _rss_mib(pid))
        assert rows == 2_000_000
        assert peak - before < 80, f"COPY TO STDOUT grew the server by {peak - before:.0f} MiB"
    with RawClient(server.host, server.port) as client:
        client.startup()
        before = _rss_mib(pid)
        client.send(query("BEGIN"))
        client.read_until()
        client.send(parse("SELECT i, 'some text for row ' || i AS s FROM range(3000000) t(i)"),
                    bind(portal="p"), execute("p", 100), SYNC)
        messages = client.read_until()
        assert kinds(messages).count("D") == 100 and "s" in kinds(messages)
        grown = _rss_mib(pid) - before
        assert grown < 60, f"100 rows of 3M grew the server by {grown:.0f} MiB"


def test_server_never_reads_its_own_stdin(tmp_path):
    """A row planted on the server's standard input is not what a client reads from
    /dev/stdin: the server points it at /dev/null."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "heron.server.cli", "serve", "--host", "127.0.0.1", "--port", "0",
         "--data-dir", str(data_dir), "--model", "none"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("planted\n")
        process.stdin.flush()
        line = process.stdout.readline()
        port = int(line.rsplit(":", 1)[1])
        dsn = f"host=127.0.0.1 port={port} user=heron dbname=heron connect_timeout=10"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE planted (line text)")
            started = time.monotonic()
            c.execute("COPY planted FROM '/dev/stdin'")
            assert time.monotonic() - started < 10
            assert c.execute("SELECT count(*) FROM planted").fetchone() == (0,)
    finally:
        process.terminate()
        process.wait(15)

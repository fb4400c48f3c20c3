"""Hostile and broken clients: nothing one client sends breaks the server for the others.

A message whose frame is sound but whose fields are not is an ERROR and the connection lives on,
exactly as PostgreSQL 15 answers it (each case runs against both servers); a seeded fuzzer throws
thousands of random messages at the decoder while another session keeps answering; a client that
closes its socket mid-statement stops its statement; connections past --max-connections are
refused with 53300.
"""

from __future__ import annotations

import contextlib
import os
import random
import struct
import threading
import time

import psycopg
import pytest
from support.pgwire import (
    SYNC,
    Message,
    RawClient,
    cstr,
    kinds,
    message,
    parse,
    query,
    startup_packet,
)

pytestmark = pytest.mark.timeout(120)


def _answers(server, *data: bytes) -> list[tuple[str, str]]:
    """(message kind, SQLSTATE or '') of everything the server answers `data` with, up to and
    including the ReadyForQuery of a `SELECT 1` sent after it (the connection must live on)."""
    with RawClient(server.host, server.port) as client:
        client.startup()
        client.send(*data, query("SELECT 1"))
        got: list[Message] = []
        while not (got and got[-1].kind == "C" and got[-1].body == b"SELECT 1\0"):
            got.append(client.read())
        got.append(client.read())
        assert got[-1].kind == "Z"
        return [(m.kind, m.fields()["C"] if m.kind == "E" else "") for m in got]


BAD_FIELDS = {
    "query not utf-8": (message(b"Q", b"SELECT 'caf\xe9'\0"),),
    "query without terminator": (message(b"Q", b"SELECT 1"),),
    "parse without terminator": (message(b"P", b"no terminator"), SYNC),
    "parse with negative count": (message(b"P", cstr("") + cstr("SELECT 1") + b"\xff\xff"),
                                  SYNC),
    "execute with bytes left over": (message(b"E", b"\0" + b"\0\0\0\0" + b"extra"), SYNC),
    "bind with negative count": (parse("SELECT 1"),
                                 message(b"B", cstr("") + cstr("") + b"\0\0" + b"\xff\xfe"),
                                 SYNC),
    "bind value past the end": (parse("SELECT $1::int", oids=(23,)),
                                message(b"B", cstr("") + cstr("") + b"\0\0\0\1"
                                        + struct.pack("!i", 1000) + b"12"), SYNC),
    "bind name not utf-8": (parse("SELECT 1"), message(b"B", b"\xff\0\0\0\0\0\0\0\0"), SYNC),
    "sync with a body": (parse("SELECT 1"), message(b"S", b"x")),
    "describe without name": (message(b"D", b"S"), SYNC),
}


@pytest.mark.parametrize("data", BAD_FIELDS.values(), ids=BAD_FIELDS.keys())
def test_bad_fields_are_an_error_and_the_connection_lives_on_as_in_postgres(
        heron_server, postgres15, data):
    expected = _answers(postgres15, *data)
    assert _answers(heron_server, *data) == expected
    assert ("E", "") not in expected and any(kind == "E" for kind, _ in expected)


def test_bad_fields_fail_a_transaction_block_as_in_postgres(heron_server, postgres15):
    data = (query("BEGIN"), message(b"Q", b"SELECT 1"), query("SELECT 2"), query("ROLLBACK"))
    with RawClient(postgres15.host, postgres15.port) as pg, RawClient(
            heron_server.host, heron_server.port) as heron:
        for client in (pg, heron):
            client.startup()
            client.send(*data)
        for _ in data:
            expected, got = pg.read_until(), heron.read_until()
            assert kinds(got) == kinds(expected)
            assert got[-1].body == expected[-1].body  # the transaction status
            assert [m.fields()["C"] for m in got if m.kind == "E"] == [
                m.fields()["C"] for m in expected if m.kind == "E"]


def test_bad_copy_fail_is_an_error_and_the_connection_lives_on(heron_server, postgres15):
    for server in (postgres15, heron_server):
        with RawClient(server.host, server.port) as client:
            client.startup()
            client.send(query("DROP TABLE IF EXISTS faults_copy; "
                              "CREATE TABLE faults_copy (i integer)"))
            client.read_until()
            try:
                client.send(query("COPY faults_copy FROM STDIN"))
                assert client.read().kind == "G"
                client.send(message(b"d", b"1\n"), message(b"f", b"no terminator"))
                answer = client.read_until()
                assert kinds(answer) == "EZ" and answer[0].fields()["C"] == "08P01", server
                client.send(query("SELECT count(*) FROM faults_copy"))
                assert [m.row() for m in client.read_until() if m.kind == "D"] == [[b"0"]]
            finally:  # the servers are shared: the catalog oracle tests list their tables
                client.send(query("DROP TABLE faults_copy"))
                client.read_until()


# -- the decoder under fuzzing ---------------------------------------------------------------

_TYPES = b"QPBDECSHdcf"  # every frontend type but Terminate: the session must go on


def _random_message(rng: random.Random) -> bytes:
    """A framed message of a known type with random fields: valid-looking pieces (strings,
    counts, lengths) mixed with random bytes, so parsing gets deep before it fails."""
    pieces = []
    for _ in range(rng.randrange(6)):
        choice = rng.randrange(5)
        if choice == 0:
            pieces.append(cstr(rng.choice(["", "SELECT 1", "s1", "SELECT $1", "p"])))
        elif choice == 1:
            pieces.append(struct.pack("!h", rng.choice([-1, 0, 1, 2, 1000, -32768])))
        elif choice == 2:
            pieces.append(struct.pack("!i", rng.choice([-2, -1, 0, 4, 1 << 30])))
        elif choice == 3:
            pieces.append(rng.randbytes(rng.randrange(8)))
        else:
            pieces.append(rng.choice([b"S", b"P", b"\xff\xfe", b"\0"]))
    return message(bytes([rng.choice(_TYPES)]), b"".join(pieces))


def test_fuzzed_messages_never_break_the_connection_or_other_sessions(heron_server):
    """2,000 random messages with sound frames, 50 per connection, each connection ending with a
    Sync and a query that must be answered; another session answers `SELECT 1` throughout."""
    rng = random.Random(20240601)
    stop = threading.Event()
    latencies: list[float] = []

    def other_session() -> None:
        with psycopg.connect(heron_server.dsn, autocommit=True) as conn:
            while not stop.is_set():
                started = time.monotonic()
                assert conn.execute("SELECT 1").fetchone() == (1,)
                latencies.append(time.monotonic() - started)
                time.sleep(0.01)

    watcher = threading.Thread(target=other_session)
    watcher.start()
    try:
        for _ in range(40):
            with RawClient(heron_server.host, heron_server.port) as client:
                client.startup()
                client.send(*(_random_message(rng) for _ in range(50)), SYNC,
                            query("SELECT 'alive'"))
                seen: list[Message] = []
                while not (seen and seen[-1].kind == "D" and seen[-1].row() == [b"alive"]):
                    seen.append(client.read())
                    if seen[-1].kind == "E":
                        assert seen[-1].fields()["S"] == "ERROR", seen[-1].fields()
    finally:
        stop.set()
        watcher.join(30)
    assert latencies and max(latencies) < 1.0


# -- clients that leave ----------------------------------------------------------------------


def test_a_client_that_closes_its_socket_cancels_its_statement(heron_server):
    """A long DuckDB statement whose client is gone stops within a second: the server process
    stops spending CPU on it."""
    pid = heron_server.process.pid
    with RawClient(heron_server.host, heron_server.port) as client:
        client.startup()
        client.send(query("SELECT count(*) FROM range(10000000000) t(i) WHERE i % 7 = 3"))
        time.sleep(1.0)
        assert _cpu_seconds(pid, 0.5) > 0.3  # it runs
        client.sock.close()
    time.sleep(1.0)
    assert _cpu_seconds(pid, 1.0) < 0.2  # it stopped


def _cpu_seconds(pid: int, interval: float) -> float:
    """CPU seconds process `pid` uses over the next `interval` seconds (from /proc)."""

    def used() -> float:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    before = used()
    time.sleep(interval)
    return used() - before


# -- too many clients ------------------------------------------------------------------------


def test_connections_past_max_connections_are_refused_53300(spawn_heron, tmp_path):
    server = spawn_heron(tmp_path / "data", "--max-connections", "3")
    held = [psycopg.connect(server.dsn, autocommit=True) for _ in range(3)]
    try:
        with pytest.raises(psycopg.OperationalError, match="sorry, too many clients already"):
            psycopg.connect(server.dsn)
        with RawClient(server.host, server.port) as client:
            client.send(startup_packet())
            refused = client.read()
            assert refused.fields()["C"] == "53300" and refused.fields()["S"] == "FATAL"
            assert client.closed()
        # A cancel request is no session: it still reaches a busy one.
        busy = held[0]
        canceller = threading.Timer(0.5, busy.cancel)
        canceller.start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            busy.execute("SELECT count(*) FROM range(10000000000) t(i) WHERE i % 7 = 3")
        held.pop().close()
        with psycopg.connect(server.dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        for conn in held:
            conn.close()


# -- clients that wait -----------------------------------------------------------------------


def test_70_sessions_blocked_reading_a_fifo_do_not_stall_the_others(spawn_heron, tmp_path):
    """More sessions than any thread pool the server would have had (64) wait on a read that
    never comes: `SELECT 1` of another session and new connections still answer at once."""
    server = spawn_heron(tmp_path / "data")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    conns = [psycopg.connect(server.dsn, autocommit=True) for _ in range(70)]
    done: list[BaseException | None] = []

    def read(conn: psycopg.Connection) -> None:
        try:
            conn.execute(f"SELECT * FROM read_csv('{fifo}')").fetchall()
            done.append(None)
        except psycopg.Error as exc:  # an empty file: any answer will do
            done.append(exc)

    readers = [threading.Thread(target=read, args=(conn,)) for conn in conns]
    for reader in readers:
        reader.start()
    try:
        time.sleep(1.0)
        assert not done  # they all wait
        with psycopg.connect(server.dsn, autocommit=True) as probe:
            latencies = []
            for _ in range(20):
                started = time.perf_counter()
                assert probe.execute("SELECT 1").fetchone() == (1,)
                latencies.append(time.perf_counter() - started)
        assert max(latencies) < 0.1
    finally:
        # Writers that open and close the FIFO give each waiting reader an end of file.
        deadline = time.monotonic() + 30
        while any(r.is_alive() for r in readers) and time.monotonic() < deadline:
            with contextlib.suppress(OSError):  # ENXIO: no reader has it open right now
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            time.sleep(0.01)
        for reader in readers:
            reader.join(5)
        for conn in conns:
            conn.close()
    assert len(done) == 70

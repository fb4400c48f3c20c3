"""Raw-protocol behaviour: negotiation, framing errors, extended-protocol semantics."""

from __future__ import annotations

import struct
import time

import pytest
from support.pgwire import (
    FLUSH,
    SYNC,
    TERMINATE,
    RawClient,
    bind,
    close,
    describe,
    execute,
    kinds,
    parse,
    query,
    startup_packet,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def client(heron_server):
    with RawClient(heron_server.host, heron_server.port) as c:
        c.startup()
        yield c


def test_startup_reports_parameters_and_key(heron_server):
    with RawClient(heron_server.host, heron_server.port) as c:
        messages = c.startup()
    assert messages[0].kind == "R" and messages[0].body == b"\0\0\0\0"  # AuthenticationOk
    params = dict(m.body[:-1].decode().split("\0") for m in messages if m.kind == "S")
    assert params["server_encoding"] == "UTF8" and params["client_encoding"] == "UTF8"
    assert params["integer_datetimes"] == "on" and "server_version" in params
    assert "K" in kinds(messages) and messages[-1].body == b"I"


def test_ssl_and_gssenc_requests_are_refused_then_startup_continues(heron_server):
    with RawClient(heron_server.host, heron_server.port) as c:
        c.send(struct.pack("!ii", 8, 80877103))
        assert c.recv_exact(1) == b"N"
        c.send(struct.pack("!ii", 8, 80877104))
        assert c.recv_exact(1) == b"N"
        assert c.startup()[-1].kind == "Z"
        c.send(query("SELECT 1"))
        assert kinds(c.read_until()) == "TDCZ"


def test_simple_query_multiple_statements_and_empty(client):
    client.send(query("SELECT 1 AS a; SELECT 'x' AS b, NULL AS c"))
    messages = client.read_until()
    assert kinds(messages) == "TDCTDCZ"
    assert messages[1].row() == [b"1"] and messages[4].row() == [b"x", None]
    assert messages[2].body == b"SELECT 1\0"
    client.send(query("  ;  "))
    assert kinds(client.read_until()) == "IZ"


def test_error_stops_the_rest_of_a_simple_query(client):
    client.send(query("SELECT 1; SELECT * FROM no_such_table; SELECT 3"))
    messages = client.read_until()
    assert kinds(messages) == "TDCEZ"
    assert messages[3].fields()["C"] == "42P01"
    assert messages[3].fields()["S"] == "ERROR" and messages[3].fields()["V"] == "ERROR"


@pytest.mark.parametrize(
    "bad",
    [
        b"?" + struct.pack("!i", 4),  # unknown message type
        b"Q" + struct.pack("!i", 2),  # length below 4
        b"Q" + struct.pack("!i", 0x7FFFFFF0),  # absurd length
    ],
)
def test_broken_framing_is_fatal_08P01_and_server_keeps_serving(heron_server, bad):
    """The message boundaries are lost: the connection cannot go on (PostgreSQL's FATAL). A
    sound frame with bad fields is an ERROR instead (tests/server/test_faults.py)."""
    with RawClient(heron_server.host, heron_server.port) as c:
        c.startup()
        c.send(bad)
        error = c.read()
        assert error.kind == "E"
        assert error.fields()["C"] == "08P01" and error.fields()["S"] == "FATAL"
        assert c.closed()
    with RawClient(heron_server.host, heron_server.port) as c:
        c.startup()
        c.send(query("SELECT 42"))
        assert c.read_until()[1].row() == [b"42"]


def test_bad_startup_length_is_refused(heron_server):
    with RawClient(heron_server.host, heron_server.port) as c:
        c.send(struct.pack("!ii", 1_000_000, 3 << 16))
        assert c.read().fields()["C"] == "08P01"
        assert c.closed()


def test_missing_user_is_fatal(heron_server):
    payload = struct.pack("!i", 3 << 16) + b"database\0heron\0\0"
    with RawClient(heron_server.host, heron_server.port) as c:
        c.send(struct.pack("!i", len(payload) + 4) + payload)
        assert c.read().fields()["C"] == "28000"


def test_extended_query_with_parameters_text_and_binary(client):
    client.send(
        parse("SELECT $1::int + 1 AS a, $2 AS b", oids=(23,)),
        bind(params=(struct.pack("!i", 41), b"hi"), param_formats=(1, 0), result_formats=(1, 0)),
        describe("P"),
        execute(),
        SYNC,
    )
    messages = client.read_until()
    assert kinds(messages) == "12TDCZ"
    assert messages[3].row() == [struct.pack("!i", 42), b"hi"]
    assert messages[4].body == b"SELECT 1\0"


def test_describe_statement_reports_parameters_and_columns_without_running(client):
    client.send(query("CREATE TABLE described (i INTEGER)"))
    client.read_until()
    client.send(
        parse("INSERT INTO described VALUES ($1)", name="ins"),
        describe("S", "ins"),
        parse("SELECT i, $1::bigint AS b FROM described", name="sel", oids=(0,)),
        describe("S", "sel"),
        SYNC,
    )
    messages = client.read_until()
    assert kinds(messages) == "1tn1tTZ"
    assert struct.unpack("!hI", messages[1].body) == (1, 23)  # the column's type: integer
    assert struct.unpack("!hI", messages[4].body) == (1, 20)  # from the cast
    client.send(query("SELECT count(*) FROM described"))
    assert client.read_until()[1].row() == [b"0"]  # the INSERT did not run


def test_duplicate_named_statement_is_42P05(client):
    client.send(parse("SELECT 1", name="s1"), parse("SELECT 2", name="s1"), SYNC)
    messages = client.read_until()
    assert kinds(messages) == "1EZ" and messages[1].fields()["C"] == "42P05"


def test_messages_after_an_error_are_discarded_until_sync(client):
    client.send(parse("SELEC 1"), bind(), execute(), parse("SELECT 1", name="skipped"), SYNC)
    messages = client.read_until()
    assert kinds(messages) == "EZ"
    # The statement after the error was never parsed.
    client.send(bind(statement="skipped"), SYNC)
    messages = client.read_until()
    assert kinds(messages) == "EZ" and messages[0].fields()["C"] == "26000"
    # And the connection is fine afterwards.
    client.send(parse("SELECT 2"), bind(), execute(), SYNC)
    assert kinds(client.read_until()) == "12DCZ"


def test_execute_with_max_rows_suspends_and_resumes(client):
    client.send(
        parse("SELECT * FROM range(5) t(x)"),
        bind(portal="p"),
        describe("P", "p"),
        execute("p", 2),
        execute("p", 2),
        execute("p", 2),
        SYNC,
    )
    messages = client.read_until()
    assert kinds(messages) == "12TDDsDDsDCZ"
    assert [m.row()[0] for m in messages if m.kind == "D"] == [b"0", b"1", b"2", b"3", b"4"]
    assert messages[-2].body == b"SELECT 1\0"
    # The portal is gone after Sync outside a transaction block.
    client.send(execute("p"), SYNC)
    messages = client.read_until()
    assert messages[0].fields()["C"] == "34000"


def test_portals_survive_sync_inside_a_transaction_block(client):
    client.send(query("BEGIN"))
    assert client.read_until()[-1].body == b"T"
    client.send(parse("SELECT * FROM range(3) t(x)"), bind(portal="c"), execute("c", 1), SYNC)
    assert kinds(client.read_until()) == "12DsZ"
    client.send(execute("c", 0), SYNC)
    messages = client.read_until()
    assert kinds(messages) == "DDCZ" and messages[-1].body == b"T"
    client.send(query("COMMIT"))
    assert client.read_until()[-1].body == b"I"


def test_close_flush_and_unnamed_statement_replacement(client):
    client.send(
        parse("SELECT 1 AS one"),
        parse("SELECT 2 AS two"),
        bind(),
        describe("P"),
        execute(),
        close("S"),
        close("P", "nonexistent"),
        FLUSH,
    )
    messages = [client.read() for _ in range(8)]  # Flush: answered without Sync
    assert kinds(messages) == "112TDC33"
    assert messages[3].body.startswith(b"\0\x01two\0")
    assert messages[4].row() == [b"2"]
    client.send(SYNC)
    assert kinds(client.read_until()) == "Z"


def test_empty_query_in_extended_protocol(client):
    client.send(parse(""), bind(), describe("P"), execute(), SYNC)
    assert kinds(client.read_until()) == "12nIZ"


def test_terminate_closes_the_connection(client):
    client.send(TERMINATE)
    assert client.closed()


def test_cancel_request_with_wrong_key_does_nothing(heron_server, client):
    with RawClient(heron_server.host, heron_server.port) as other:
        other.send(struct.pack("!iiii", 16, 80877102, client.pid, client.secret ^ 1))
        assert other.closed()
    client.send(query("SELECT 7"))
    assert client.read_until()[1].row() == [b"7"]


def test_unsupported_protocol_version(heron_server):
    with RawClient(heron_server.host, heron_server.port) as c:
        payload = struct.pack("!i", 2 << 16) + b"\0"
        c.send(struct.pack("!i", len(payload) + 4) + payload)
        assert c.read().fields()["C"] == "0A000"


def test_startup_packet_helper_roundtrip(heron_server):
    with RawClient(heron_server.host, heron_server.port) as c:
        c.send(startup_packet(user="heron", database="heron"))
        assert c.read_until()[-1].kind == "Z"


def test_long_query_does_not_block_others_and_cancel_request_stops_it(heron_server, client):
    started = time.monotonic()
    client.send(query("SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3"))
    with RawClient(heron_server.host, heron_server.port) as other:
        other.startup()
        other.send(query("SELECT 'meanwhile'"))
        assert other.read_until()[1].row() == [b"meanwhile"]
    with RawClient(heron_server.host, heron_server.port) as canceller:
        canceller.send(struct.pack("!iiii", 16, 80877102, client.pid, client.secret))
        assert canceller.closed()
    messages = client.read_until()
    assert kinds(messages) == "EZ" and messages[0].fields()["C"] == "57014"
    assert time.monotonic() - started < 20


def test_describe_portal_binds_without_running(client):
    # nextval() has an effect, so running the SELECT would be seen in the sequence.
    client.send(query("CREATE SEQUENCE described_seq"))
    client.read_until()
    client.send(
        parse("SELECT nextval('described_seq') AS n, $1 AS v"),
        bind(params=(b"text",)),
        describe("P"),
        close("P"),
        SYNC,
    )
    messages = client.read_until()
    assert kinds(messages) == "12T3Z"
    client.send(query("SELECT nextval('described_seq')"))
    rows = [m.row() for m in client.read_until() if m.kind == "D"]
    assert rows == [[b"1"]]

"""Decoding of bind parameters, without a server."""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from decimal import Decimal

import pytest

from heron.planner.errors import SqlError
from heron.planner.pg_types import INTERVAL
from heron.server import decode


def test_text_parameter_decoding():
    assert decode.decode_param(b"42", 23, 0) == 42
    assert decode.decode_param(b"on", 16, 0) is True
    assert decode.decode_param(b"2.5", 701, 0) == 2.5
    assert decode.decode_param(b"1.10", 1700, 0) == Decimal("1.10")
    assert decode.decode_param(b"2020-01-02", 1082, 0) == dt.date(2020, 1, 2)
    assert decode.decode_param(b"2020-01-02 03:04:05.5", 1114, 0) == dt.datetime(
        2020, 1, 2, 3, 4, 5, 500000
    )
    assert decode.decode_param(b"2020-01-02 03:04:05+02", 1184, 0) == dt.datetime(
        2020, 1, 2, 1, 4, 5, tzinfo=dt.UTC
    )
    assert decode.decode_param(b"infinity", 1082, 0) == "infinity"  # DuckDB casts it
    assert decode.decode_param(b"\\x00ff", 17, 0) == b"\x00\xff"
    assert decode.decode_param(b"{1,NULL,3}", 1007, 0) == [1, None, 3]
    assert decode.decode_param(b'{"a b","c"}', 1009, 0) == ["a b", "c"]
    assert decode.decode_param(b"anything", 0, 0) == "anything"
    assert decode.decode_param(None, 23, 0) is None
    with pytest.raises(SqlError) as err:
        decode.decode_param(b"x", 23, 0)
    assert err.value.sqlstate == "22P02"


def test_binary_parameter_decoding():
    assert decode.decode_param(struct.pack("!h", -3), 21, 1) == -3
    assert decode.decode_param(struct.pack("!q", 2**40), 20, 1) == 2**40
    assert decode.decode_param(struct.pack("!f", 0.5), 700, 1) == 0.5
    assert decode.decode_param(b"\1", 16, 1) is True
    assert decode.decode_param("é".encode(), 25, 1) == "é"
    assert decode.decode_param(b"\1{}", 3802, 1) == "{}"
    assert decode.decode_param(struct.pack("!i", -1), 1082, 1) == dt.date(1999, 12, 31)
    assert decode.decode_param(struct.pack("!q", 1), 1184, 1) == dt.datetime(
        2000, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC
    )
    assert decode.decode_param(uuid.UUID(int=5).bytes, 2950, 1) == uuid.UUID(int=5)
    array = (
        struct.pack("!iiIii", 1, 0, 23, 2, 1) + struct.pack("!ii", 4, 7) + struct.pack("!ii", 4, 8)
    )
    assert decode.decode_param(array, 1007, 1) == [7, 8]
    with pytest.raises(SqlError) as err:
        decode.decode_param(b"\1\2", 23, 1)
    assert err.value.sqlstate == "22P03"



def test_interval_text_is_read_as_interval_in_reads_it():
    # PostgreSQL's own output ('+' before a field) and ISO 8601, in DuckDB's words
    assert decode.decode_param(b"-1 days +02:00:00", INTERVAL.oid, 0) == "-1 days 02:00:00"
    assert decode.decode_param(b"P1DT2H", INTERVAL.oid, 0) == "1 days 2 hours"

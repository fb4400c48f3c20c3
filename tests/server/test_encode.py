"""Wire encodings of result columns, without a server."""

from __future__ import annotations

import datetime as dt
import random
import struct
import uuid
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from heron.planner import column_origins, pg_types
from heron.planner.errors import SqlError, SqlState
from heron.planner.statement import Column
from heron.server import decode, encode, protocol


def text(values, arrow_type, tz=dt.UTC):
    return [
        None if v is None else v.decode()
        for v in encode.encode_column(pa.array(values, arrow_type), 0, tz)
    ]


@pytest.mark.parametrize(
    ("arrow_type", "oid", "typlen"),
    [
        (pa.bool_(), 16, 1),
        (pa.int8(), 21, 2),
        (pa.int16(), 21, 2),
        (pa.int32(), 23, 4),
        (pa.int64(), 20, 8),
        (pa.uint8(), 21, 2),
        (pa.uint16(), 23, 4),
        (pa.uint32(), 26, 4),  # DuckDB UINTEGER: PostgreSQL oid
        (pa.uint64(), 1700, -1),
        (pa.float32(), 700, 4),
        (pa.float64(), 701, 8),
        (pa.decimal128(10, 2), 1700, -1),
        (pa.string(), 25, -1),
        (pa.large_string(), 25, -1),
        (pa.binary(), 17, -1),
        (pa.date32(), 1082, 4),
        (pa.time64("us"), 1083, 8),
        (pa.timestamp("us"), 1114, 8),
        (pa.timestamp("us", "UTC"), 1184, 8),
        (pa.duration("us"), 1186, 16),
        (pa.month_day_nano_interval(), 1186, 16),
        (pa.binary(16), 2950, 16),
        (pa.list_(pa.int32()), 1007, -1),
        (pa.list_(pa.string()), 1009, -1),
        (pa.list_(pa.list_(pa.int32())), 25, -1),
        (pa.struct([("a", pa.int32())]), 25, -1),
        (pa.null(), 25, -1),
    ],
)
def test_pg_type_mapping(arrow_type, oid, typlen):
    pg = pg_types.for_arrow(arrow_type)
    assert (pg.oid, pg.typlen) == (oid, typlen)


def test_float_text_matches_postgres():
    assert text(
        [
            1.0,
            0.1,
            1e15,
            123456789012345.0,
            1e-4,
            1e-5,
            1.5e300,
            -2.5,
            0.0,
            -0.0,
            float("nan"),
            float("inf"),
            float("-inf"),
            None,
        ],
        pa.float64(),
    ) == [
        "1",
        "0.1",
        "1e+15",
        "123456789012345",
        "0.0001",
        "1e-05",
        "1.5e+300",
        "-2.5",
        "0",
        "-0",
        "NaN",
        "Infinity",
        "-Infinity",
        None,
    ]
    assert text([0.1, 123456.0, 1234567.0, 3.4028235e38], pa.float32()) == [
        "0.1",
        "123456",
        "1.234567e+06",
        "3.4028235e+38",
    ]


def test_scalar_text_formats():
    assert text([True, False, None], pa.bool_()) == ["t", "f", None]
    assert text([1, -5, None], pa.int64()) == ["1", "-5", None]
    assert text([Decimal("1.50"), Decimal("-0.001")], pa.decimal128(10, 3)) == ["1.500", "-0.001"]
    assert text([b"\x00\xff"], pa.binary()) == ["\\x00ff"]
    assert text([dt.date(2024, 2, 29)], pa.date32()) == ["2024-02-29"]
    assert text([dt.time(1, 2, 3, 500000), dt.time(0)], pa.time64("us")) == [
        "01:02:03.5",
        "00:00:00",
    ]
    assert text([uuid.UUID(int=1).bytes], pa.binary(16)) == ["00000000-0000-0000-0000-000000000001"]


def test_timestamp_text_formats():
    ts = [dt.datetime(2020, 1, 2, 3, 4, 5), dt.datetime(2020, 1, 2, 3, 4, 5, 120000)]
    assert text(ts, pa.timestamp("us")) == ["2020-01-02 03:04:05", "2020-01-02 03:04:05.12"]
    aware = [dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=dt.UTC)]
    assert text(aware, pa.timestamp("us", "UTC")) == ["2020-01-02 03:04:05+00"]
    kolkata = encode.session_timezone("Asia/Kolkata")
    assert text(aware, pa.timestamp("us", "UTC"), kolkata) == ["2020-01-02 08:34:05+05:30"]
    assert encode.session_timezone("Not/AZone") is dt.UTC


def test_interval_text_postgres_style():
    mdn = pa.MonthDayNano
    values = [
        mdn([14, 3, 4 * 3600 * 10**9 + 5 * 60 * 10**9 + 6_500_000_000]),
        mdn([0, 0, 0]),
        mdn([0, -1, 2 * 3600 * 10**9]),
        mdn([1, 1, 0]),
        mdn([0, 0, -1000]),
    ]
    assert text(values, pa.month_day_nano_interval()) == [
        "1 year 2 mons 3 days 04:05:06.5",
        "00:00:00",
        "-1 days +02:00:00",
        "1 mon 1 day",
        "-00:00:00.000001",
    ]
    assert text([dt.timedelta(hours=30)], pa.duration("us")) == ["30:00:00"]


def test_array_and_struct_text():
    assert text([[1, None, 3], [], None], pa.list_(pa.int32())) == ["{1,NULL,3}", "{}", None]
    assert text([["a", "b c", "", 'q"', "null"]], pa.list_(pa.string())) == [
        '{a,"b c","","q\\"","null"}'
    ]
    assert text([[[1, 2], [3]]], pa.list_(pa.list_(pa.int64()))) == ["{{1,2},{3}}"]
    assert text([{"a": 1, "b": "x"}], pa.struct([("a", pa.int32()), ("b", pa.string())])) == [
        '{"a": 1, "b": "x"}'
    ]


def test_binary_encodings():
    def binary(values, arrow_type):
        return encode.encode_column(pa.array(values, arrow_type), 1)

    assert binary([1, None, -2], pa.int32()) == [b"\0\0\0\1", None, b"\xff\xff\xff\xfe"]
    assert binary([1], pa.int8()) == [b"\0\1"]
    assert binary([1.5], pa.float64()) == [struct.pack("!d", 1.5)]
    assert binary([True], pa.bool_()) == [b"\1"]
    assert binary([dt.date(2000, 1, 2)], pa.date32()) == [struct.pack("!i", 1)]
    assert binary([dt.datetime(2000, 1, 1, 0, 0, 1)], pa.timestamp("us")) == [
        struct.pack("!q", 1_000_000)
    ]
    assert binary([[1, None]], pa.list_(pa.int32())) == [
        struct.pack("!iiIii", 1, 1, 23, 2, 1) + struct.pack("!ii", 4, 1) + b"\xff" * 4
    ]
    assert binary(["é"], pa.string()) == ["é".encode()]


@pytest.mark.parametrize(
    "value",
    ["0", "1", "-1", "12.340", "-0.0001", "10000", "123456789.5", "0.00000001", "1E+5", "NaN"],
)
def test_numeric_binary_round_trip(value):
    encoded = encode.numeric_binary(Decimal(value))
    decoded = decode.decode_param(encoded, 1700, 1)
    assert decoded == Decimal(value) or (decoded.is_nan() and Decimal(value).is_nan())


def test_numeric_binary_matches_postgres_layout():
    # numeric_send(12.340): 2 digits [12, 3400], weight 0, positive, dscale 3.
    assert encode.numeric_binary(Decimal("12.340")) == struct.pack("!hhHhhh", 2, 0, 0, 3, 12, 3400)


def _random_column(rng: random.Random, kind: int, size: int) -> pa.Array:
    def maybe(make):
        return [None if rng.random() < 0.2 else make() for _ in range(size)]

    if kind == 0:
        return pa.array(maybe(lambda: rng.randrange(-2**63, 2**63)), pa.int64())
    if kind == 1:
        return pa.array(maybe(lambda: rng.randrange(-2**15, 2**15)), pa.int16())
    if kind == 2:
        return pa.array(maybe(lambda: rng.choice([
            rng.uniform(-1e6, 1e6), rng.uniform(-1, 1) * 10 ** rng.randrange(-30, 30), 0.0, -0.0,
            float("inf"), float("-inf"), float("nan"), 1e15, 1.5e15, 123456789012345.6])),
            pa.float64())
    if kind == 3:
        return pa.array(maybe(lambda: "".join(rng.choice("ab é\t\n,\"\\{}")
                                              for _ in range(rng.randrange(0, 9)))), pa.string())
    if kind == 4:
        return pa.array(maybe(lambda: rng.random() < 0.5), pa.bool_())
    if kind == 5:
        days = maybe(lambda: rng.choice([rng.randrange(-700000, 2900000), 2**31 - 1,
                                         -(2**31 - 1)]))
        return pa.array(days, pa.int32()).cast(pa.date32())
    if kind == 6:
        micros = maybe(lambda: rng.choice([rng.randrange(-6 * 10**16, 2 * 10**17), 2**63 - 1,
                                           -(2**63 - 1)]))
        return pa.array(micros, pa.int64()).cast(pa.timestamp("us"))
    if kind == 7:
        return pa.array(maybe(lambda: bytes(rng.randrange(256) for _ in range(
            rng.randrange(0, 6)))), pa.binary())
    if kind == 8:
        return pa.array(maybe(lambda: [rng.randrange(-9, 9) for _ in range(rng.randrange(0, 3))]),
                        pa.list_(pa.int32()))
    return pa.array(maybe(lambda: Decimal(rng.randrange(-10**9, 10**9)).scaleb(-3)),
                    pa.decimal128(12, 3))


def test_vectorized_encoding_matches_the_reference_on_random_columns():
    """`encode_values` and `protocol.row_messages` (the fast path) against `encode_column` and
    `protocol.data_rows` (the reference), byte for byte, in text and binary."""
    rng = random.Random(20261130)
    for _ in range(60):
        size = rng.randrange(0, 300)
        table = pa.table({f"c{i}": _random_column(rng, rng.randrange(10), size)
                          for i in range(rng.randrange(1, 5))})
        table = table.slice(rng.randrange(0, size + 1))  # arrays with offsets, too
        for fmt in (0, 1):
            reference = [encode.encode_column(column, fmt) for column in table.columns]
            fast = [encode.encode_values(column, fmt) for column in table.columns]
            for expected, got in zip(reference, fast, strict=True):
                assert [None if not got.valid[i] else
                        got.data[got.offsets[i]:got.offsets[i + 1]].tobytes()
                        for i in range(len(got))] == expected
            assert protocol.row_messages(fast) == b"".join(
                protocol.data_rows(reference, table.num_rows))


def test_infinite_dates_and_timestamps():
    dates = pa.array([2**31 - 1, -(2**31 - 1), 0], pa.int32()).cast(pa.date32())
    assert [v.decode() for v in encode.encode_column(dates, 0)] == [
        "infinity", "-infinity", "1970-01-01"]
    assert encode.encode_column(dates, 1)[:2] == [struct.pack("!i", 2**31 - 1),
                                                  struct.pack("!i", -(2**31))]
    stamps = pa.array([2**63 - 1, -(2**63 - 1)], pa.int64()).cast(pa.timestamp("us"))
    assert encode.encode_column(stamps, 1) == [struct.pack("!q", 2**63 - 1),
                                               struct.pack("!q", -(2**63))]


@pytest.mark.parametrize(("arrow_type", "dtype"), [
    (pa.int8(), ">i2"), (pa.uint8(), ">i2"), (pa.int16(), ">i2"), (pa.int32(), ">i4"),
    (pa.uint16(), ">i4"), (pa.int64(), ">i8"), (pa.uint32(), ">u4"), (pa.float32(), ">f4"),
    (pa.float64(), ">f8")])
def test_short_columns_pack_value_by_value_like_numpy(arrow_type, dtype):
    """The `struct` path for short columns against the numpy one, on random values with NULLs
    (extremes, infinities, NaN and -0.0 for floats)."""
    rng = random.Random(20261201)
    if pa.types.is_floating(arrow_type):
        specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.5e-40, 3.4e38]
        make = lambda: rng.choice([rng.uniform(-1e6, 1e6), rng.choice(specials)])  # noqa: E731
    else:
        info = np.iinfo(arrow_type.to_pandas_dtype())
        make = lambda: rng.choice([rng.randint(info.min, info.max), info.min, info.max, 0])  # noqa: E731
    for _ in range(50):
        values = [None if rng.random() < 0.2 else make() for _ in range(rng.randrange(0, 20))]
        array = pa.array(values, arrow_type)
        assert encode.packed_each(array, dtype) == encode.packed_at_once(array, dtype)


# -- the wire type of a column: "char" over a catalog column, regclass / regtype --------------

_CHAR_ORIGIN = column_origins.Origin(1247, 7, pg_types.CHAR.oid)  # pg_type.typtype


def _both(array: pa.Array, fmt: int, wire: pg_types.PgType | None) -> list[bytes | None]:
    """The reference's values, checked equal to the vectorized twin's."""
    reference = encode.encode_column(array, fmt, wire=wire)
    got = encode.encode_values(array, fmt, wire=wire)
    assert [None if not got.valid[i] else got.data[got.offsets[i]:got.offsets[i + 1]].tobytes()
            for i in range(len(got))] == reference
    return reference


def test_a_char_column_is_announced_and_encoded_as_one_byte():
    column = Column("typtype", pa.string(), _CHAR_ORIGIN)
    wire, typmod = column_origins.wire_type(column.type, column.origin)
    assert (wire, typmod) == (pg_types.CHAR, -1)
    values = pa.array(["b", "", None, "é", "ab"] * 20)  # 100 values: the vectorized path too
    assert _both(values, 1, wire)[:5] == [b"b", b"\x00", None, b"\xc3", b"a"]
    assert _both(values, 0, wire)[:5] == [b"b", b"", None, b"\\303", b"a"]
    ascii_only = pa.array(["c", "", None] * 30)
    assert _both(ascii_only, 1, wire)[:3] == [b"c", b"\x00", None]
    assert _both(ascii_only, 0, wire)[:3] == [b"c", b"", None]
    description = encode.row_description((column,), (1,))
    assert struct.pack("!IhIhih", 1247, 7, 18, 1, -1, 1) in description


def test_char_is_declared_only_over_text():
    # Values of another type keep their own (the origin cannot make them one byte).
    assert column_origins.wire_type(pa.int32(), _CHAR_ORIGIN) == (pg_types.INT4, -1)
    assert column_origins.wire_type(pa.string(), column_origins.NO_ORIGIN) == (pg_types.TEXT, -1)


@pytest.mark.parametrize(("field", "expected"), [("heron_regtype", pg_types.REGTYPE),
                                                 ("heron_regclass", pg_types.REGCLASS)])
def test_regtype_and_regclass_values_are_the_oid_in_binary_the_name_in_text(field, expected):
    values = pa.array([{field: 23, "name": "integer"}, None, {field: 1259, "name": "pg_class"}],
                      pa.struct([(field, pa.uint32()), ("name", pa.string())]))
    wire, _ = column_origins.wire_type(values.type, column_origins.NO_ORIGIN)
    assert wire is expected and pg_types.for_arrow(values.type) is expected
    assert _both(values, 0, wire) == [b"integer", None, b"pg_class"]
    assert _both(values, 1, wire) == [struct.pack("!I", 23), None, struct.pack("!I", 1259)]
    description = encode.row_description((Column("t", values.type),), (0,))
    assert struct.pack("!IhIhih", 0, 0, expected.oid, 4, -1, 0) in description
    # As an array's elements too (array_send of their OIDs).
    arrays = pa.array([[{field: 23, "name": "integer"}]], pa.list_(values.type))
    assert pg_types.for_arrow(arrays.type).oid == expected.array_oid
    assert encode.encode_column(arrays, 0) == [b"{integer}"]
    assert encode.encode_column(arrays, 1) == [struct.pack("!iiIiiiI", 1, 0, expected.oid, 1, 1,
                                                           4, 23)]


def test_other_structs_stay_json_text():
    values = pa.array([{"heron_regtype": 1, "other": "x"}])
    assert pg_types.for_arrow(values.type) is pg_types.TEXT
    assert encode.encode_column(values, 0) == [b'{"heron_regtype": 1, "other": "x"}']


# -- jsonb: DuckDB's JSON values announced as jsonb ---------------------------------------------

_JSONB_ORIGIN = column_origins.Origin(type_oid=pg_types.JSONB.oid)


def _json_values(texts: list[str | None]) -> pa.Array:
    """A column of DuckDB's JSON type as it reaches Arrow (the arrow.json extension)."""
    return pa.ExtensionArray.from_storage(pa.json_(), pa.array(texts, pa.string()))


def test_a_jsonb_column_is_announced_as_jsonb_and_sent_normalized():
    values = _json_values(['{"b": 1, "a": [1.50, 1e2]}', None, '"\\u00e9"'] * 30)
    column = Column("j", values.type, _JSONB_ORIGIN)
    wire, typmod = column_origins.wire_type(column.type, column.origin)
    assert (wire, typmod) == (pg_types.JSONB, -1)
    assert _both(values, 0, wire)[:3] == [b'{"a": [1.50, 100], "b": 1}', None, '"é"'.encode()]
    # jsonb_send: version 1, then the text (what decode reads back)
    assert _both(values, 1, wire)[:3] == [b'\x01{"a": [1.50, 100], "b": 1}', None,
                                          b'\x01"\xc3\xa9"']
    assert decode.decode_param(_both(values, 1, wire)[0], pg_types.JSONB.oid, 1) == (
        '{"a": [1.50, 100], "b": 1}')
    assert struct.pack("!IhIhih", 0, 0, 3802, -1, -1, 1) in encode.row_description(
        (column,), (1,))


def test_json_keeps_its_text_as_written():
    values = _json_values(['{"b" :  1, "a": 1e2}', None])
    wire, _ = column_origins.wire_type(values.type, column_origins.NO_ORIGIN)
    assert wire is pg_types.JSON
    assert _both(values, 0, wire) == [b'{"b" :  1, "a": 1e2}', None]
    assert _both(values, 1, wire) == [b'{"b" :  1, "a": 1e2}', None]


def test_jsonb_is_declared_only_over_json():
    assert column_origins.wire_type(pa.string(), _JSONB_ORIGIN) == (pg_types.TEXT, -1)
    assert column_origins.wire_type(pa.int64(), _JSONB_ORIGIN) == (pg_types.INT8, -1)


def test_jsonb_that_postgresql_refuses_is_an_error_when_sent():
    with pytest.raises(SqlError) as caught:
        encode.encode_column(_json_values(["[1,]"]), 0, wire=pg_types.JSONB)
    assert caught.value.sqlstate == SqlState.INVALID_TEXT_REPRESENTATION


def test_character_n_is_announced_bpchar_and_sent_blank_padded_to_n():
    origin = column_origins.Origin(16384, 1, pg_types.BPCHAR.oid, 8)  # a character(4) column
    wire, typmod = column_origins.wire_type(pa.string(), origin)
    assert (wire.oid, wire.pad, typmod) == (pg_types.BPCHAR.oid, 4, 8)
    values = pa.array(["ab", "abcd   ", None, "é"] * 25)  # the vectorized path too
    for fmt in (0, 1):
        assert _both(values, fmt, wire)[:4] == [b"ab  ", b"abcd", None, "é   ".encode()]

"""Arrow result columns as PostgreSQL wire values.

Contract:
- `encode_column(array, fmt, timezone, wire)` encodes one Arrow column to a list of wire values
  (bytes, None for NULL) in text (fmt 0) or binary (fmt 1) format as type `wire` (the column's
  `column_origins.wire_type`; `pg_types.for_arrow`'s when not given), byte-for-byte as
  PostgreSQL 16 sends them (text: floats shortest round-trip as with extra_float_digits >= 1,
  booleans t/f, timestamps trimmed to significant microseconds, timestamptz in the session time
  zone with +HH[:MM] offsets, bytea hex, intervals in IntervalStyle postgres
  (`pg_interval.text`), infinite dates and
  timestamps as infinity/-infinity; `"char"` as charout prints its one byte, binary that byte;
  jsonb (JSON values announced as jsonb) as jsonb_out prints it (`pg_jsonb.normalize`), binary
  version 1 then that text, while json keeps its text as written; regclass and regtype,
  carried as `pg_types.reg_value` structs, as the name, binary the OID).
  Another format code raises `SqlError` 22023. This is the reference.
- `encode_values(array, fmt, timezone, wire)` is its vectorized twin: the same bytes as one
  `protocol.Encoded` column (offsets, data, validity) built with Arrow and numpy kernels for the
  common types (integers, floats, booleans, text, dates, timestamps without time zone), falling
  back to the reference for the others (jsonb among them: normalizing is per value anyway).
  `tests/server/test_encode.py` compares them on random columns.
- `row_description(columns, formats)` is the RowDescription message announcing result columns
  (each column's `column_origins.wire_type`: `pg_types.for_arrow`'s type, or the type its
  origin declares where its values encode alike: varchar(n) over text, "char" over a catalog
  column's text; the table OID and column number it reads), kept per columns and formats: a
  prepared statement announces the same at every execution.
- `session_timezone(name)` is the `timezone` for a session's TimeZone setting (UTC when unknown).
- `numeric_binary(value)` is numeric_send's layout of a Decimal.
- `PG_EPOCH_DATE`, `PG_EPOCH` and `INT64_MAX` describe PostgreSQL's binary dates and timestamps
  for both directions; `server/decode.py` reads them from here.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import struct
import uuid
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from heron.planner import pg_interval, pg_jsonb, pg_text, pg_types
from heron.planner.column_origins import wire_type
from heron.planner.errors import SqlError, SqlState
from heron.planner.pg_types import (
    BOOL,
    BYTEA,
    CHAR,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSONB,
    NUMERIC,
    OID,
    REGCLASS,
    REGTYPE,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    PgType,
    extension_name,
    for_arrow,
    is_list,
    is_uuid,
    opaque_name,
    reg_value,
)
from heron.planner.statement import Column
from heron.server import protocol
from heron.server.protocol import Encoded, FieldDescription

Wire = list[bytes | None]


_ARRAY_ELEMENT = pg_types.ARRAY_ELEMENT

# PostgreSQL counts binary dates and timestamps from 2000-01-01, Arrow from 1970-01-01.
PG_EPOCH_DATE = dt.date(2000, 1, 1)
PG_EPOCH = dt.datetime(2000, 1, 1)
_UNIX_TO_PG_DAYS = (PG_EPOCH_DATE - dt.date(1970, 1, 1)).days
_UNIX_TO_PG_MICROS = _UNIX_TO_PG_DAYS * 86_400_000_000
# Timestamps at the int64 extremes are +-infinity, in DuckDB's results as on PostgreSQL's wire.
INT64_MAX = 2**63 - 1
_FEW_VALUES = 64  # below this, per-value Python beats an Arrow kernel's fixed cost
# Dates at the int32 extremes are +-infinity (DuckDB's -infinity is -(2**31 - 1), PostgreSQL's
# binary one -2**31).
INT32_MAX = 2**31 - 1
# Binary layouts of the fixed-width numbers (numpy dtypes: big-endian, bytes per value).
_FIXED_BINARY = {INT2: ">i2", INT4: ">i4", INT8: ">i8", OID: ">u4", FLOAT4: ">f4", FLOAT8: ">f8"}


def session_timezone(name: str) -> dt.tzinfo:
    """The tzinfo for the session's TimeZone setting; UTC when the name is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return dt.UTC


def encode_column(array: pa.Array | pa.ChunkedArray, fmt: int, timezone: dt.tzinfo = dt.UTC,
                  wire: PgType | None = None) -> Wire:
    """Wire values of one result column in text (0) or binary (1) format, as type `wire` (the
    column's `wire_type`; by default its values' type's)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if wire is not None and wire.pad:
        array = _blank_padded(array, wire.pad)
    if wire is CHAR and fmt in (0, 1):
        return _chars(array, fmt)
    if wire is JSONB and fmt in (0, 1):
        return _jsonb(array, fmt)
    if fmt == 0:
        return [None if s is None else s.encode("utf-8") for s in _text(array, timezone)]
    if fmt == 1:
        return _binary(array)
    raise SqlError(SqlState.INVALID_PARAMETER_VALUE, f"unsupported format code: {fmt}")


def _blank_padded(a: pa.Array, length: int) -> pa.Array:
    """character(length) values as PostgreSQL keeps them: blank-padded to `length` characters
    (a value may carry more trailing blanks than that: they go)."""
    return pc.utf8_rpad(pc.utf8_rtrim(a.cast(pa.string()), " "), length, " ")


def _chars(a: pa.Array, fmt: int) -> Wire:
    """`"char"` values (text of one character): the first byte of each one's UTF-8 (NUL for an
    empty one); binary is that byte, text as charout prints it (nothing for NUL, \\ooo above
    127)."""
    out: Wire = []
    for v in a.cast(pa.string()).to_pylist():
        if v is None:
            out.append(None)
            continue
        byte = v.encode("utf-8")[:1] or b"\x00"
        if fmt == 1:
            out.append(byte)
        elif byte[0] > 127:
            out.append(b"\\%03o" % byte[0])
        else:
            out.append(b"" if byte == b"\x00" else byte)
    return out


# jsonb_send: a version byte, then the text.
JSONB_VERSION = b"\x01"


def _jsonb(a: pa.Array, fmt: int) -> Wire:
    """jsonb values (DuckDB's JSON, or text) as PostgreSQL sends them: normalized text, in binary
    after the version byte."""
    if isinstance(a, pa.ExtensionArray):
        a = a.storage
    prefix = JSONB_VERSION if fmt == 1 else b""
    return [None if v is None else prefix + pg_jsonb.normalize(v).encode("utf-8")
            for v in a.to_pylist()]


def _booleans(a: pa.Array) -> pa.Array:
    """DuckDB's booleans, which reach Arrow as `arrow.bool8` (one byte each), as Arrow's."""
    return pc.not_equal(a.storage, 0)


def _text(a: pa.Array, tz: dt.tzinfo) -> list[str | None]:
    """Values of `a` as PostgreSQL prints them, None for NULL."""
    t = a.type
    # The commonest columns of small results first: a plain integer or string type is none of
    # the kinds tested before their branches below (extension, dictionary, fixed-size binary,
    # struct types), so the answer is the same, a dozen type tests sooner.
    if t.id in _PLAIN_TEXT_IDS:
        if t.id in _STRING_IDS:
            return a.to_pylist()
        if len(a) < _FEW_VALUES:
            return [None if v is None else str(v) for v in a.to_pylist()]
    if extension_name(t) == "arrow.bool8":
        return _text(_booleans(a), tz)
    if pa.types.is_dictionary(t):
        return _text(a.dictionary_decode(), tz)
    if is_uuid(t):
        storage = a.storage if isinstance(a, pa.ExtensionArray) else a
        return [None if v is None else str(uuid.UUID(bytes=v)) for v in storage.to_pylist()]
    if (name := opaque_name(t)) is not None:
        return _opaque_text(a, name)
    if reg_value(t) is not None:  # regclass, regtype: the name
        return a.flatten()[1].to_pylist()
    if isinstance(a, pa.ExtensionArray):
        return _text(a.storage, tz)
    if pa.types.is_null(t):
        return [None] * len(a)
    if pa.types.is_boolean(t):
        return [None if v is None else ("t" if v else "f") for v in a.to_pylist()]
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        # Arrow's casts print exactly like PostgreSQL for these, and so does Python's str (a
        # Decimal from Arrow keeps its column's scale); for a few values str costs less.
        if len(a) < _FEW_VALUES:
            return [None if v is None else str(v) for v in a.to_pylist()]
        return pc.cast(a, pa.string()).to_pylist()
    if pa.types.is_date(t):
        days = pc.cast(a, pa.date32()).cast(pa.int32()).to_pylist()
        return [None if d is None else _date_text(d) for d in days]
    if pa.types.is_floating(t):
        return pg_text.float_texts(a).to_pylist()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return a.to_pylist()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or (
            pa.types.is_fixed_size_binary(t)):
        return [None if v is None else "\\x" + v.hex() for v in a.to_pylist()]
    if pa.types.is_timestamp(t):
        return _timestamps_text(a, tz)
    if pa.types.is_time(t):
        micros = pc.cast(a, pa.time64("us"), safe=False).cast(pa.int64()).to_pylist()
        return [None if m is None else _time_text(m) for m in micros]
    if pa.types.is_duration(t):
        micros = pc.cast(a, pa.duration("us"), safe=False).cast(pa.int64()).to_pylist()
        return [None if m is None else pg_interval.text(0, 0, m) for m in micros]
    if pa.types.is_interval(t):
        return [None if v is None else pg_interval.text(v.months, v.days, v.nanoseconds // 1000)
                for v in a.to_pylist()]
    if is_list(t):
        return _lists_text(a, tz)
    if pa.types.is_struct(t) or pa.types.is_map(t):
        return [None if v is None else json.dumps(_jsonable(v), ensure_ascii=False)
                for v in a.to_pylist()]
    return [None if v is None else str(v) for v in a.to_pylist()]


_INTEGER_IDS = frozenset(t.id for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(),
                                        pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()))
_STRING_IDS = frozenset(t.id for t in (pa.string(), pa.large_string(), pa.string_view()))
_PLAIN_TEXT_IDS = _INTEGER_IDS | _STRING_IDS


def _date_text(days: int) -> str:
    """ISO date (DateStyle ISO) of days since 1970-01-01; PostgreSQL's infinities."""
    if days >= INT32_MAX:
        return "infinity"
    if days <= -INT32_MAX:
        return "-infinity"
    value = dt.date(1970, 1, 1) + dt.timedelta(days=days)
    return value.isoformat()


def _opaque_integers(a: pa.Array, name: str) -> list[int | None]:
    """DuckDB's hugeint / uhugeint (16 little-endian bytes) as Python integers."""
    signed = name == "hugeint"
    return [None if v is None else int.from_bytes(v, "little", signed=signed)
            for v in a.storage.to_pylist()]


# DuckDB's TIME WITH TIME ZONE: 40 bits of microseconds, then 24 bits of offset stored as
# (TIME_TZ_MAX_OFFSET - offset seconds).
TIME_TZ_MAX_OFFSET = 16 * 3600 - 1


def _times_tz(a: pa.Array) -> list[tuple[int, int] | None]:
    """(microseconds, UTC offset in seconds) of DuckDB's time_tz values."""
    out: list[tuple[int, int] | None] = []
    for v in a.storage.to_pylist():
        if v is None:
            out.append(None)
            continue
        bits = int.from_bytes(v, "little")
        out.append((bits >> 24, TIME_TZ_MAX_OFFSET - (bits & 0xFFFFFF)))
    return out


def _opaque_text(a: pa.Array, name: str) -> list[str | None]:
    """DuckDB types without an Arrow twin: huge integers, and BIT strings (a byte counting the
    padding bits, then the bits)."""
    if name in ("hugeint", "uhugeint"):
        return [None if v is None else str(v) for v in _opaque_integers(a, name)]
    if name == "time_tz":
        return [None if v is None else _time_text(v[0]) + _offset_text(dt.timedelta(
            seconds=v[1])) for v in _times_tz(a)]
    if name == "bit":
        out: list[str | None] = []
        for v in a.storage.to_pylist():
            if v is None:
                out.append(None)
                continue
            bits = "".join(f"{byte:08b}" for byte in v[1:])
            out.append(bits[v[0]:])
        return out
    return [None if v is None else str(v) for v in a.storage.to_pylist()]


def _valid(a: pa.Array) -> list[bool]:
    return [True] * len(a) if a.null_count == 0 else a.is_valid().to_pylist()




def _time_text(micros: int) -> str:
    seconds, frac = divmod(micros, 1_000_000)
    return (f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
            f"{pg_interval.fraction(frac)}")


def _offset_text(offset: dt.timedelta) -> str:
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{sign}{hours:02d}"
    if minutes or secs:
        text += f":{minutes:02d}"
    if secs:
        text += f":{secs:02d}"
    return text


def _timestamps_text(a: pa.Array, tz: dt.tzinfo) -> list[str | None]:
    with_tz = a.type.tz is not None
    micros = pc.cast(a, pa.timestamp("us", a.type.tz), safe=False).cast(pa.int64()).to_pylist()
    out: list[str | None] = []
    unix = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    for m in micros:
        if m is None:
            out.append(None)
            continue
        if m == INT64_MAX:
            out.append("infinity")
            continue
        if m == -INT64_MAX or m == -INT64_MAX - 1:
            out.append("-infinity")
            continue
        try:
            value = unix + dt.timedelta(microseconds=m)
            if with_tz:
                value = value.astimezone(tz)
        except OverflowError:
            out.append(str(m))  # beyond Python's datetime range (years past 9999)
            continue
        text = (f"{value.year:04d}-{value:%m-%d %H:%M:%S}{pg_interval.fraction(value.microsecond)}")
        out.append(text + _offset_text(value.utcoffset()) if with_tz else text)
    return out


def _lists_text(a: pa.Array, tz: dt.tzinfo) -> list[str | None]:
    if isinstance(a, pa.FixedSizeListArray) or not hasattr(a, "offsets"):
        a = a.cast(pa.list_(a.type.value_type))
    nested = is_list(a.type.value_type)
    elements = _text(a.values, tz)
    offsets = a.offsets.to_pylist()
    valid = _valid(a)
    out: list[str | None] = []
    for i, ok in enumerate(valid):
        if not ok:
            out.append(None)
            continue
        items = elements[offsets[i] : offsets[i + 1]]
        # Inner arrays are already brace-delimited; quoting them would turn them into strings.
        rendered = (("NULL" if v is None else v) for v in items) if nested else (
            pg_text.element_text(v) for v in items)
        out.append("{" + ",".join(rendered) + "}")
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        # Arrow returns maps as lists of (key, value) pairs.
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): _jsonable(v) for k, v in value}
        return [_jsonable(v) for v in value]
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    return str(value)


def _binary(a: pa.Array) -> Wire:
    t = a.type
    if extension_name(t) == "arrow.bool8":
        return _binary(_booleans(a))
    if pa.types.is_dictionary(t):
        return _binary(a.dictionary_decode())
    if is_uuid(t):
        storage = a.storage if isinstance(a, pa.ExtensionArray) else a
        return storage.to_pylist()
    if (name := opaque_name(t)) is not None:
        if name in ("hugeint", "uhugeint"):
            return [None if v is None else numeric_binary(Decimal(v))
                    for v in _opaque_integers(a, name)]
        if name == "time_tz":  # timetz_send: microseconds, then seconds west of UTC
            return [None if v is None else struct.pack("!qi", v[0], -v[1]) for v in _times_tz(a)]
        return [None if v is None else v.encode() for v in _opaque_text(a, name)]
    if isinstance(a, pa.ExtensionArray):
        if t.extension_name == "arrow.json":
            return _binary(a.storage)
        a, t = a.storage, a.storage.type
    pg = for_arrow(t)
    if pg is BOOL:
        return [None if v is None else (b"\x01" if v else b"\x00") for v in a.to_pylist()]
    if pg in _FIXED_BINARY:
        return _fixed_width(a, _FIXED_BINARY[pg])
    if pg in (REGCLASS, REGTYPE):  # the OID
        return _fixed_width(a.flatten()[0].cast(pa.uint32()), ">u4")
    if pg is NUMERIC:
        return [None if v is None else numeric_binary(Decimal(v)) for v in a.to_pylist()]
    if pg is BYTEA:
        return a.to_pylist()
    if pg is DATE:
        days = pc.cast(a, pa.date32()).cast(pa.int32()).to_pylist()
        return [None if d is None else struct.pack("!i", _pg_days(d)) for d in days]
    if pg is TIME:
        return _fixed_width(pc.cast(a, pa.time64("us"), safe=False).cast(pa.int64()), ">i8")
    if pg in (TIMESTAMP, TIMESTAMPTZ):
        micros = pc.cast(a, pa.timestamp("us", t.tz), safe=False).cast(pa.int64()).to_pylist()
        return [None if m is None else struct.pack("!q", _pg_micros(m)) for m in micros]
    if pg is INTERVAL:
        if pa.types.is_duration(t):
            micros = pc.cast(a, pa.duration("us"), safe=False).cast(pa.int64()).to_pylist()
            return [None if m is None else struct.pack("!qii", m, 0, 0) for m in micros]
        return [None if v is None else struct.pack("!qii", v.nanoseconds // 1000, v.days,
                                                   v.months) for v in a.to_pylist()]
    if pg.oid in _ARRAY_ELEMENT:
        return _arrays_binary(a, _ARRAY_ELEMENT[pg.oid])
    # Everything sent as text (strings, structs, maps, nested lists): binary text is UTF-8.
    return [None if s is None else s.encode("utf-8") for s in _text(a, dt.UTC)]


def _pg_days(days: int) -> int:
    """PostgreSQL's binary date of days since 1970-01-01 (its infinities are the int32
    extremes)."""
    if days >= INT32_MAX:
        return INT32_MAX
    if days <= -INT32_MAX:
        return -INT32_MAX - 1
    return days - _UNIX_TO_PG_DAYS


def _pg_micros(micros: int) -> int:
    """PostgreSQL's binary timestamp of microseconds since 1970 (infinities kept)."""
    if micros == INT64_MAX:
        return micros
    if micros <= -INT64_MAX:
        return -INT64_MAX - 1
    return micros - _UNIX_TO_PG_MICROS


# Below this many values, packing each with `struct` beats numpy's fixed cost per call (a
# `SELECT 1` pays it on every execution).
PACK_EACH_BELOW = 16
_STRUCT_FORMATS = {">i2": "!h", ">i4": "!i", ">i8": "!q", ">u4": "!I", ">f4": "!f", ">f8": "!d"}


def _fixed_width(a: pa.Array, dtype: str) -> Wire:
    """Big-endian packing of a numeric column (numpy dtype `dtype`), one value each."""
    if len(a) < PACK_EACH_BELOW:
        return packed_each(a, dtype)
    return packed_at_once(a, dtype)


def packed_each(a: pa.Array, dtype: str) -> Wire:
    """`_fixed_width` value by value (`struct`): the twin of `packed_at_once` for short
    columns."""
    pack = struct.Struct(_STRUCT_FORMATS[dtype]).pack
    return [None if v is None else pack(v) for v in a.to_pylist()]


def packed_at_once(a: pa.Array, dtype: str) -> Wire:
    """`_fixed_width` in one numpy pass, then sliced per value."""
    width = int(dtype[-1])
    filled = a.fill_null(0) if a.null_count else a
    raw = np.asarray(filled.to_numpy(zero_copy_only=False)).astype(dtype).tobytes()
    values: Wire = [raw[i : i + width] for i in range(0, len(raw), width)]
    if a.null_count:
        for i, ok in enumerate(a.is_valid().to_pylist()):
            if not ok:
                values[i] = None
    return values


def _arrays_binary(a: pa.Array, element: PgType) -> Wire:
    """One-dimensional arrays in array_send's format: ndim, has-null, element OID, size, lower
    bound 1, then length-prefixed elements."""
    if isinstance(a, pa.FixedSizeListArray) or not hasattr(a, "offsets"):
        a = a.cast(pa.list_(a.type.value_type))
    elements = _binary(a.values)
    offsets = a.offsets.to_pylist()
    out: Wire = []
    for i, ok in enumerate(_valid(a)):
        if not ok:
            out.append(None)
            continue
        items = elements[offsets[i] : offsets[i + 1]]
        if not items:
            out.append(struct.pack("!iiI", 0, 0, element.oid))
            continue
        has_null = any(v is None for v in items)
        header = struct.pack("!iiIii", 1, int(has_null), element.oid, len(items), 1)
        out.append(header + b"".join(b"\xff\xff\xff\xff" if v is None else
                                     struct.pack("!i", len(v)) + v for v in items))
    return out


def numeric_binary(value: Decimal) -> bytes:
    """numeric_send: base-10000 digits with weight, sign and display scale."""
    if value.is_nan():
        return struct.pack("!hhHh", 0, 0, 0xC000, 0)
    if value.is_infinite():
        return struct.pack("!hhHh", 0, 0, 0xF000 if value < 0 else 0xD000, 0)
    sign, digit_tuple, exp = value.as_tuple()
    digits = "".join(map(str, digit_tuple))
    dscale = max(0, -exp)
    if exp > 0:
        digits, exp = digits + "0" * exp, 0
    point = len(digits) + exp  # digits before the decimal point
    if point < 0:
        digits, point = "0" * -point + digits, 0
    integer, fraction = digits[:point].lstrip("0"), digits[point:]
    integer = integer.zfill(-(-len(integer) // 4) * 4)
    fraction = fraction + "0" * (-len(fraction) % 4)
    groups = [int(integer[i : i + 4]) for i in range(0, len(integer), 4)]
    groups += [int(fraction[i : i + 4]) for i in range(0, len(fraction), 4)]
    weight = len(integer) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    header = struct.pack("!hhHh", len(groups), weight, 0x4000 if sign else 0, dscale)
    return header + struct.pack(f"!{len(groups)}h", *groups)


# -- the vectorized twin ------------------------------------------------------------------------


def encode_values(array: pa.Array | pa.ChunkedArray, fmt: int, timezone: dt.tzinfo = dt.UTC,
                  wire: PgType | None = None) -> Encoded:
    """`encode_column`'s bytes as one `Encoded` column, vectorized where the type allows."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if fmt not in (0, 1):
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE, f"unsupported format code: {fmt}")
    if wire is not None and wire.pad:
        array = _blank_padded(array, wire.pad)
    if wire is CHAR:
        return _chars_at_once(array, fmt)
    if wire is JSONB:
        return Encoded.of(_jsonb(array, fmt))
    t = array.type
    if extension_name(t) == "arrow.json":
        array, t = array.storage, array.storage.type
    if extension_name(t) == "arrow.bool8":
        array = _booleans(array)
        t = array.type
    pg = for_arrow(t)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _strings(array)
    if fmt == 1 and pg in _FIXED_BINARY and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return _fixed(array, _FIXED_BINARY[pg])
    if fmt == 1 and pg is BOOL:
        return _fixed(array.cast(pa.uint8()), "u1")
    if fmt == 0 and pg is BOOL:
        return _strings(pc.if_else(array, "t", "f"))
    if fmt == 0 and pa.types.is_integer(t):
        return _strings(pc.cast(array, pa.string()))
    if fmt == 0 and pa.types.is_float64(t):
        return _strings(pg_text.float_texts(array))
    if fmt == 0 and pa.types.is_timestamp(t) and t.tz is None:
        return _strings(_timestamp_text(array))
    if pg is DATE:
        days = pc.cast(array, pa.date32()).cast(pa.int32())
        finite = pc.and_(pc.less(days, INT32_MAX), pc.greater(days, -INT32_MAX))
        if not pc.all(pc.or_kleene(finite, pc.is_null(days))).as_py():
            return Encoded.of(encode_column(array, fmt, timezone))  # infinities
        if fmt == 0:
            return _strings(pc.cast(pc.cast(days, pa.date32()), pa.string()))
        return _fixed(pc.subtract(days, pa.scalar(_UNIX_TO_PG_DAYS, pa.int32())), ">i4")
    return Encoded.of(encode_column(array, fmt, timezone))


def _chars_at_once(a: pa.Array, fmt: int) -> Encoded:
    """`_chars` by Arrow kernels where every value is ASCII (each one's first character is its
    first byte), else by the reference."""
    strings = a.cast(pa.large_string())
    if pc.all(pc.string_is_ascii(strings)).as_py() is False:
        return Encoded.of(_chars(a, fmt))
    first = pc.utf8_slice_codeunits(strings, 0, 1)
    if fmt == 1:
        first = pc.if_else(pc.equal(first, ""), "\x00", first)
    else:
        first = pc.replace_substring(first, "\x00", "")
    return _strings(first)


def _valid_mask(a: pa.Array) -> np.ndarray:
    if a.null_count == 0:
        return np.ones(len(a), bool)
    return np.asarray(a.is_valid().to_numpy(zero_copy_only=False), bool)


def _strings(a: pa.Array) -> Encoded:
    """A string (or binary) array's own buffers as wire values: UTF-8 text is the wire format."""
    if not (pa.types.is_large_string(a.type) or pa.types.is_large_binary(a.type)):
        a = a.cast(pa.large_string() if pa.types.is_string(a.type) or
                   pa.types.is_string_view(a.type) else pa.large_binary())
    _, offsets_buffer, data_buffer = a.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[a.offset : a.offset + len(a) + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(
        0, np.uint8)
    return Encoded(offsets, data, _valid_mask(a))


def _fixed(a: pa.Array, dtype: str) -> Encoded:
    """Fixed-width big-endian values in one numpy pass."""
    filled = a.fill_null(0) if a.null_count else a
    raw = np.asarray(filled.to_numpy(zero_copy_only=False)).astype(dtype)
    width = raw.dtype.itemsize
    return Encoded(np.arange(len(a) + 1, dtype=np.int64) * width, raw.view(np.uint8),
                   _valid_mask(a))


def _timestamp_text(a: pa.Array) -> pa.Array:
    """Timestamps without time zone as PostgreSQL prints them: ISO, the fraction trimmed of
    trailing zeros, infinities spelled out."""
    micros = pc.cast(a, pa.timestamp("us"), safe=False).cast(pa.int64())
    m = micros.fill_null(0).to_numpy(zero_copy_only=False)
    infinite = (m == INT64_MAX) | (m <= -INT64_MAX)
    if infinite.any() or (m < -62135596800 * 10**6).any() or (m >= 253402300800 * 10**6).any():
        # Infinities and dates beyond Python's years 1..9999: the reference spells them.
        return pa.array(_timestamps_text(a, dt.UTC), pa.string())
    fraction = np.mod(m, 1_000_000)  # floor semantics: before 1970 too
    whole = pa.array((m - fraction) // 1_000_000, pa.int64()).cast(pa.timestamp("s"))
    text = pc.strftime(whole, "%Y-%m-%d %H:%M:%S")
    if fraction.any():
        padded = pc.utf8_lpad(pc.cast(pa.array(fraction), pa.string()), 6, "0")
        trimmed = pc.utf8_rtrim(padded, "0")
        suffix = pc.if_else(pa.array(fraction > 0),
                            pc.binary_join_element_wise(".", trimmed, ""), "")
        text = pc.binary_join_element_wise(text, suffix, "")
    return pc.if_else(pc.is_valid(a), text, pa.scalar(None, pa.string()))


@functools.lru_cache(maxsize=1024)
def row_description(columns: tuple[Column, ...], formats: tuple[int, ...]) -> bytes:
    """The RowDescription of result columns, each sent in its format (0 text, 1 binary)."""
    fields = []
    for column, fmt in zip(columns, formats, strict=True):
        origin = column.origin
        t, typmod = wire_type(column.type, origin)
        fields.append(FieldDescription(column.name, t.oid, t.typlen, typmod, fmt,
                                       origin.table_oid, origin.attnum))
    return protocol.row_description(fields)

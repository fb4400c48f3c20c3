"""Bind parameters as the Python values DuckDB binds.

Contract:
- `decode_param(data, oid, fmt)` turns one Bind parameter in text (fmt 0) or binary (fmt 1)
  format into the Python value DuckDB binds (None for NULL); unknown OIDs (0) and text-like types
  in text format stay `str`, so DuckDB casts them in context, and so do dates, times and
  timestamps Python cannot read ('infinity', 'epoch', ...). Arrays become nested lists. Bad input
  raises `SqlError` with PostgreSQL's SQLSTATE: 22P02 (text syntax), 22P03 (binary layout), 22021
  (not UTF-8), 22023 (format code), 0A000 (binary format for a type without a binary decoder).
- `parameter_type(oid)` is the OID ParameterDescription reports: the client's, or text (25) where
  it left the type open (0).
- `sample_value(oid)` is a value of the Python type `decode_param` gives that type, for binding a
  statement as its executions will bind it (Describe of a statement).
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from heron.planner import pg_interval, pg_types
from heron.planner.errors import SqlError, SqlState
from heron.planner.pg_semantics import parse_array_literal, parse_bytea
from heron.planner.pg_types import (
    BOOL,
    BPCHAR,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    NAME,
    NUMERIC,
    OID,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    UUID,
    VARCHAR,
)
from heron.server.encode import INT64_MAX, PG_EPOCH, PG_EPOCH_DATE

_BY_OID = pg_types.BY_OID
_ARRAY_ELEMENT = pg_types.ARRAY_ELEMENT

_TEXTUAL = {0, TEXT.oid, VARCHAR.oid, BPCHAR.oid, NAME.oid, UNKNOWN.oid, JSON.oid, 18}
_TRUE = {"t", "true", "y", "yes", "on", "1"}
_FALSE = {"f", "false", "n", "no", "off", "0"}


_SAMPLES: dict[int, Any] = {
    BOOL.oid: False, INT2.oid: 0, INT4.oid: 0, INT8.oid: 2**40, OID.oid: 2**40, FLOAT4.oid: 0.0,
    FLOAT8.oid: 0.0, NUMERIC.oid: Decimal("0"), BYTEA.oid: b"", UUID.oid: uuid.UUID(int=0),
    DATE.oid: PG_EPOCH_DATE, TIME.oid: dt.time(), TIMESTAMP.oid: PG_EPOCH,
    TIMESTAMPTZ.oid: PG_EPOCH.replace(tzinfo=dt.UTC), INTERVAL.oid: dt.timedelta(),
}


def sample_value(oid: int) -> Any:
    """A value of the Python type `decode_param` gives parameters of type `oid` (NULL where the
    type is open): binding a statement with these types it as its executions will be."""
    if oid in _TEXTUAL or oid == JSONB.oid:
        return None if oid in (0, UNKNOWN.oid) else ""
    return _SAMPLES.get(oid)


def parameter_type(oid: int) -> int:
    """The OID reported in ParameterDescription: the client's, or text where it left it open."""
    return oid or TEXT.oid


def decode_param(data: bytes | None, oid: int, fmt: int) -> Any:
    """A Bind parameter as a Python value for DuckDB (None for SQL NULL)."""
    if data is None:
        return None
    if fmt == 0:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SqlError(SqlState.CHARACTER_NOT_IN_REPERTOIRE,
                           'invalid byte sequence for encoding "UTF8"') from None
        return _decode_text(text, oid)
    if fmt == 1:
        try:
            return _decode_binary(data, oid)
        except (struct.error, ValueError, IndexError, OverflowError):
            name = _BY_OID[oid].name if oid in _BY_OID else str(oid)
            raise SqlError(SqlState.INVALID_BINARY_REPRESENTATION,
                           f"incorrect binary data format in bind parameter "
                           f"of type {name}") from None
    raise SqlError(SqlState.INVALID_PARAMETER_VALUE, f"unsupported format code: {fmt}")


def _decode_text(text: str, oid: int) -> Any:
    if oid in _TEXTUAL or oid == JSONB.oid:
        return text
    parser = _TEXT_PARSERS.get(oid)
    if parser is not None:
        try:
            return parser(text)
        except (ValueError, InvalidOperation):
            raise SqlError(SqlState.INVALID_TEXT_REPRESENTATION,
                           f'invalid input syntax for type {_BY_OID[oid].name}: '
                           f'"{text}"') from None
    if oid in _ARRAY_ELEMENT:
        element = _ARRAY_ELEMENT[oid].oid
        return parse_array_literal(text, lambda s: _decode_text(s, element))
    if oid == INTERVAL.oid:  # (DuckDB casts it in context, once it reads it)
        return pg_interval.duckdb_input(text)
    # Types we do not know by OID (ranges, ...): DuckDB casts the text in context.
    return text


def _bool(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(text)


def _or_text(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """Parse with Python when it can; leave other spellings ('infinity', 'epoch', 'today', ...)
    as text for DuckDB to cast, which accepts PostgreSQL's special values."""

    def parser(text: str) -> Any:
        try:
            return parse(text.strip())
        except ValueError:
            return text

    return parser


def _timestamptz(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=None)


_TEXT_PARSERS: dict[int, Callable[[str], Any]] = {
    BOOL.oid: _bool,
    INT2.oid: lambda s: int(s.strip()),
    INT4.oid: lambda s: int(s.strip()),
    INT8.oid: lambda s: int(s.strip()),
    OID.oid: lambda s: int(s.strip()),
    FLOAT4.oid: lambda s: float(s.strip()),
    FLOAT8.oid: lambda s: float(s.strip()),
    NUMERIC.oid: lambda s: Decimal(s.strip()),
    BYTEA.oid: parse_bytea,
    UUID.oid: lambda s: uuid.UUID(s.strip()),
    DATE.oid: _or_text(dt.date.fromisoformat),
    TIME.oid: _or_text(dt.time.fromisoformat),
    TIMESTAMP.oid: _or_text(_timestamp),
    TIMESTAMPTZ.oid: _or_text(_timestamptz),
}


def _numeric_from_binary(data: bytes) -> Decimal:
    ndigits, weight, sign, dscale = struct.unpack_from("!hhHh", data)
    if sign == 0xC000:
        return Decimal("NaN")
    if sign in (0xD000, 0xF000):
        return Decimal("Infinity") if sign == 0xD000 else Decimal("-Infinity")
    groups = struct.unpack_from(f"!{ndigits}h", data, 8)
    digits = "".join(f"{g:04d}" for g in groups) or "0"
    value = Decimal(int(digits)).scaleb(4 * (weight - ndigits + 1))
    value = value.quantize(Decimal(1).scaleb(-dscale))
    return -value if sign == 0x4000 else value


def _decode_binary(data: bytes, oid: int) -> Any:
    if oid in _TEXTUAL:
        return data.decode("utf-8")
    if oid == JSONB.oid:
        if data[:1] != b"\x01":
            raise ValueError("unsupported jsonb version")
        return data[1:].decode("utf-8")
    if oid == BOOL.oid:
        return data != b"\x00"
    fixed = {INT2.oid: "!h", INT4.oid: "!i", INT8.oid: "!q", OID.oid: "!I", FLOAT4.oid: "!f",
             FLOAT8.oid: "!d"}
    if oid in fixed:
        (value,) = struct.unpack(fixed[oid], data)
        return value
    if oid == BYTEA.oid:
        return bytes(data)
    if oid == NUMERIC.oid:
        return _numeric_from_binary(data)
    if oid == UUID.oid:
        return uuid.UUID(bytes=bytes(data))
    if oid == DATE.oid:
        (days,) = struct.unpack("!i", data)
        if days in (2**31 - 1, -(2**31)):
            return "infinity" if days > 0 else "-infinity"
        return PG_EPOCH_DATE + dt.timedelta(days=days)
    if oid == TIME.oid:
        (micros,) = struct.unpack("!q", data)
        return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()
    if oid in (TIMESTAMP.oid, TIMESTAMPTZ.oid):
        (micros,) = struct.unpack("!q", data)
        if micros in (INT64_MAX, -INT64_MAX - 1):
            return "infinity" if micros > 0 else "-infinity"
        value = PG_EPOCH + dt.timedelta(microseconds=micros)
        return value.replace(tzinfo=dt.UTC) if oid == TIMESTAMPTZ.oid else value
    if oid == INTERVAL.oid:
        micros, days, months = struct.unpack("!qii", data)
        if not months:
            return dt.timedelta(days=days, microseconds=micros)
        return f"{months} months {days} days {micros} microseconds"
    if oid in _ARRAY_ELEMENT:
        return _array_from_binary(data)
    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                   f"binary format is not supported for parameters of type OID {oid}; "
                   "send it in text format")


def _array_from_binary(data: bytes) -> list[Any]:
    ndim, _has_null, element = struct.unpack_from("!iiI", data)
    if ndim == 0:
        return []
    dims = [struct.unpack_from("!ii", data, 12 + 8 * i)[0] for i in range(ndim)]
    pos = 12 + 8 * ndim
    flat: list[Any] = []
    for _ in range(math.prod(dims)):
        (size,) = struct.unpack_from("!i", data, pos)
        pos += 4
        if size < 0:
            flat.append(None)
            continue
        flat.append(_decode_binary(data[pos : pos + size], element))
        pos += size
    for size in reversed(dims[1:]):
        flat = [flat[i : i + size] for i in range(0, len(flat), size)]
    return flat

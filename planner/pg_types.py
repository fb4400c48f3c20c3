"""PostgreSQL's built-in types as Heron presents them, in one table.

Contract: one `PgType` per type Heron sends or describes: its OID, `typname`, the name `format_type`
prints, its length on the wire and the OID of its array type. `for_arrow(t)` is the type a column of
Arrow type `t` (as DuckDB produces it) is sent as; Arrow types without a PostgreSQL twin are sent as
text (structs and maps as JSON, nested lists as array literals), but for the struct
`{heron_regclass | heron_regtype: oid, name: text}` (`reg_value`), which carries a regclass or
regtype value: its OID (the binary form) and its name (the text form). The wire encoders
(`server/encode.py`), parameter typing (`planner/parameters.py`) and the catalog shim
(`planner/pg_catalog_types.py`) all read this table, so what a client is told about a column and
what it receives cannot disagree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True, slots=True)
class PgType:
    oid: int
    name: str  # pg_type.typname
    typlen: int  # bytes; -1 variable length, -2 C string
    array_oid: int = 0
    sql_name: str = ""  # what format_type() prints; typname when empty
    pad: int = 0  # character(n)'s n: its values are sent blank-padded to n characters

    @property
    def display_name(self) -> str:
        return self.sql_name or self.name


BOOL = PgType(16, "bool", 1, 1000, "boolean")
BYTEA = PgType(17, "bytea", -1, 1001)
CHAR = PgType(18, "char", 1, 1002, '"char"')
NAME = PgType(19, "name", 64, 1003)
INT8 = PgType(20, "int8", 8, 1016, "bigint")
INT2 = PgType(21, "int2", 2, 1005, "smallint")
INT4 = PgType(23, "int4", 4, 1007, "integer")
TEXT = PgType(25, "text", -1, 1009)
OID = PgType(26, "oid", 4, 1028)
JSON = PgType(114, "json", -1, 199)
FLOAT4 = PgType(700, "float4", 4, 1021, "real")
FLOAT8 = PgType(701, "float8", 8, 1022, "double precision")
UNKNOWN = PgType(705, "unknown", -2)
BPCHAR = PgType(1042, "bpchar", -1, 1014, "character")
VARCHAR = PgType(1043, "varchar", -1, 1015, "character varying")
DATE = PgType(1082, "date", 4, 1182)
TIME = PgType(1083, "time", 8, 1183, "time without time zone")
TIMESTAMP = PgType(1114, "timestamp", 8, 1115, "timestamp without time zone")
TIMESTAMPTZ = PgType(1184, "timestamptz", 8, 1185, "timestamp with time zone")
INTERVAL = PgType(1186, "interval", 16, 1187)
TIMETZ = PgType(1266, "timetz", 12, 1270, "time with time zone")
BIT = PgType(1560, "bit", -1, 1561)
NUMERIC = PgType(1700, "numeric", -1, 1231)
REGCLASS = PgType(2205, "regclass", 4, 2210)
REGTYPE = PgType(2206, "regtype", 4, 2211)
UUID = PgType(2950, "uuid", 16, 2951)
JSONB = PgType(3802, "jsonb", -1, 3807)

def blank_padded(length: int) -> PgType:
    """character(length): bpchar, its values sent blank-padded to `length` characters."""
    return dataclasses.replace(BPCHAR, pad=length)


ALL = (BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID, JSON, FLOAT4, FLOAT8, UNKNOWN, BPCHAR,
       VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, TIMETZ, BIT, NUMERIC, REGCLASS,
       REGTYPE, UUID, JSONB)
BY_OID = {t.oid: t for t in ALL}
ARRAY_ELEMENT = {t.array_oid: t for t in ALL if t.array_oid}


# The struct carrying an object-identifier value: its first field's name says which type, the
# field holds the OID, the second (`name`) its name as PostgreSQL prints it.
REG_FIELDS = {"heron_regclass": REGCLASS, "heron_regtype": REGTYPE}


def reg_value(t: pa.DataType) -> PgType | None:
    """REGCLASS or REGTYPE if `t` is the struct carrying such values, else None."""
    if pa.types.is_struct(t) and t.num_fields == 2 and t.field(1).name == "name":
        return REG_FIELDS.get(t.field(0).name)
    return None


# DuckDB's own types reach Arrow as `arrow.opaque` extensions (with arrow_lossless_conversion).
DUCKDB_OPAQUE = "arrow.opaque"
_OPAQUE_NUMERIC = {"hugeint", "uhugeint"}


def extension_name(t: pa.DataType) -> str | None:
    """The name of an Arrow extension type (arrow.uuid, arrow.json, arrow.bool8, ...), else
    None."""
    return t.extension_name if isinstance(t, pa.BaseExtensionType) else None


def is_uuid(t: pa.DataType) -> bool:
    # Not isinstance(FixedSizeBinaryType): pyarrow's decimal types subclass it.
    return extension_name(t) == "arrow.uuid" or (
        pa.types.is_fixed_size_binary(t) and t.byte_width == 16)


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or (
        pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def opaque_name(t: pa.DataType) -> str | None:
    """The DuckDB type name of an `arrow.opaque` column (hugeint, bit, ...), else None."""
    if extension_name(t) == DUCKDB_OPAQUE:
        return t.type_name
    return None


def for_arrow(t: pa.DataType) -> PgType:
    """The PostgreSQL type a column of Arrow type `t` is sent as."""
    if pa.types.is_dictionary(t):  # DuckDB's ENUM
        return for_arrow(t.value_type)
    if (name := extension_name(t)) is not None:
        if name == "arrow.uuid":
            return UUID
        if name == "arrow.json":
            return JSON
        if name == "arrow.bool8":
            return BOOL
        if name == DUCKDB_OPAQUE:
            if t.type_name == "time_tz":
                return TIMETZ
            return NUMERIC if t.type_name in _OPAQUE_NUMERIC else TEXT
        return for_arrow(t.storage_type)
    if is_uuid(t):
        return UUID
    if pa.types.is_boolean(t):
        return BOOL
    if t in (pa.int8(), pa.int16(), pa.uint8()):
        return INT2
    if t in (pa.int32(), pa.uint16()):
        return INT4
    if t == pa.uint32():  # DuckDB's UINTEGER: unsigned 4 bytes, like PostgreSQL's oid
        return OID
    if t == pa.int64():
        return INT8
    if t == pa.uint64() or pa.types.is_decimal(t):
        return NUMERIC  # uint64 does not fit int8
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return FLOAT4
    if pa.types.is_float64(t):
        return FLOAT8
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return TEXT
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or (
            pa.types.is_fixed_size_binary(t)):
        return BYTEA
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_time(t):
        return TIME
    if pa.types.is_timestamp(t):
        return TIMESTAMPTZ if t.tz else TIMESTAMP
    if pa.types.is_duration(t) or pa.types.is_interval(t):
        return INTERVAL
    if is_list(t):
        element = for_arrow(t.value_type)
        if is_list(t.value_type) or not element.array_oid:
            return TEXT
        return PgType(element.array_oid, f"_{element.name}", -1)
    if (reg := reg_value(t)) is not None:
        return reg
    return TEXT  # null, struct, map, union: text (JSON for structs and maps)

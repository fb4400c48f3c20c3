"""PostgreSQL's built-in types as Heron presents them, in one table.

Contract: one `PgType` per type Heron sends or describes: its OID, `typname`, the name
`format_type` prints, its length on the wire and the OID of its array type. The wire encoders
(`server/encode.py`) and the catalog shim (`planner/pg_catalog.py`) both read this table, so what
a client is told about a column and what it receives cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PgType:
    oid: int
    name: str  # pg_type.typname
    typlen: int  # bytes; -1 variable length, -2 C string
    array_oid: int = 0
    sql_name: str = ""  # what format_type() prints; typname when empty

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
UUID = PgType(2950, "uuid", 16, 2951)
JSONB = PgType(3802, "jsonb", -1, 3807)

ALL = (BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID, JSON, FLOAT4, FLOAT8, UNKNOWN, BPCHAR,
       VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, TIMETZ, BIT, NUMERIC, UUID, JSONB)
BY_OID = {t.oid: t for t in ALL}
ARRAY_ELEMENT = {t.array_oid: t for t in ALL if t.array_oid}

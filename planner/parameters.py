"""Parameter types a statement implies.

Contract: `cast_parameter_types(sql)` maps parameter numbers ($1 is 1) to the type OID
(`heron.planner.pg_types`) the statement's text implies for them. Today that is the parameters
cast explicitly to a type or an array of it, `$1::int`, `CAST($2 AS date)`, `$3::oid[]`, as
PostgreSQL infers them; casts to type names outside the table stay unknown, and the first cast
of a parameter wins. Clients like asyncpg encode their arguments by the types the server
reports, so these fill the OIDs a Parse message left open (0).
"""

from __future__ import annotations

import re

from heron.planner.pg_types import (
    BOOL,
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
    NUMERIC,
    OID,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    VARCHAR,
)

# Type names as written in SQL (PostgreSQL's and DuckDB's spellings), lower case, words
# separated by one space.
_TYPE_NAMES = {
    "bool": BOOL, "boolean": BOOL, "smallint": INT2, "int2": INT2, "int": INT4, "integer": INT4,
    "int4": INT4, "bigint": INT8, "int8": INT8, "real": FLOAT4, "float4": FLOAT4, "float": FLOAT8,
    "float8": FLOAT8, "double": FLOAT8, "double precision": FLOAT8, "numeric": NUMERIC,
    "decimal": NUMERIC, "text": TEXT, "varchar": VARCHAR, "character varying": VARCHAR,
    "string": TEXT, "bytea": BYTEA, "blob": BYTEA, "date": DATE, "time": TIME,
    "timestamp": TIMESTAMP, "timestamp without time zone": TIMESTAMP, "timestamptz": TIMESTAMPTZ,
    "timestamp with time zone": TIMESTAMPTZ, "interval": INTERVAL, "uuid": UUID, "json": JSON,
    "jsonb": JSONB, "oid": OID, "uinteger": OID,
}
# Longest names first, so "timestamp with time zone" is not read as "timestamp".
_TYPE_PATTERN = "|".join(sorted((re.escape(n).replace(r"\ ", r"\s+") for n in _TYPE_NAMES),
                                key=len, reverse=True))
_CAST = re.compile(rf"\$(?P<n1>\d+)\s*::\s*(?P<t1>{_TYPE_PATTERN})\b(?P<a1>\s*\[\s*\])?|"
                   rf"\bCAST\s*\(\s*\$(?P<n2>\d+)\s+AS\s+(?P<t2>{_TYPE_PATTERN})\b"
                   rf"(?P<a2>\s*\[\s*\])?", re.IGNORECASE)


def cast_parameter_types(sql: str) -> dict[int, int]:
    """Parameter number -> type OID for parameters cast explicitly (`$1::int`, `CAST($2 AS
    date)`), as PostgreSQL infers them; clients like asyncpg encode arguments by these types."""
    found: dict[int, int] = {}
    for m in _CAST.finditer(sql):
        number, name, array = (m["n1"], m["t1"], m["a1"]) if m["n1"] else (
            m["n2"], m["t2"], m["a2"])
        pg_type = _TYPE_NAMES[" ".join(name.lower().split())]
        found.setdefault(int(number), pg_type.array_oid if array else pg_type.oid)
    return found

"""The types of a statement's parameters, as PostgreSQL would infer them.

Contract: `parameter_types(con, sql, count)` gives one type OID (`heron.planner.pg_types`) per
parameter ($1 first), 0 where nothing implies a type. Clients like asyncpg and pg8000 encode
their arguments by the types the server reports, so these fill the OIDs a Parse message left
open. The types come from DuckDB's binder (`duckdb._seam.bind`), which types a parameter from its
context (`id = $1`, `INSERT ... VALUES ($1)`, `LIMIT $1`, `$1::date`, `$1::UINTEGER[]` — the
catalog rewrite's spelling of `oid[]`, an array of oid as `pg_types.for_arrow` maps UINTEGER).
Where DuckDB leaves one open, PostgreSQL's rule for an operator with one unknown operand applies:
the parameter takes the other operand's type (`$1 + 1` is an integer, `$1 || 'x'` text,
`x = ANY($1)` and `x <> ALL($1)` an array of x's type). A statement DuckDB cannot bind (an AI
statement, a table not created yet) falls back to the explicit casts in its text to a type or an
array of it (`$1::int`, `CAST($2 AS date)`, `$3::oid[]`; the first cast of a parameter wins).
Nothing runs.
`with_jsonb(sql, types)` tells jsonb parameters from json ones, which DuckDB's binder cannot (it
has one JSON type, and reads the statement after `pg_semantics` made jsonb JSON): a JSON
parameter cast to jsonb in the client's text `sql` is jsonb.
"""

from __future__ import annotations

import re

import duckdb
import sqlglot
from duckdb import _seam
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import pg_types
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


def parameter_types(con: duckdb.DuckDBPyConnection, sql: str, count: int) -> tuple[int, ...]:
    """One type OID per parameter of `sql` (0: unknown)."""
    if count == 0:
        return ()
    try:
        bound = _bound_types(con, sql)
    except (duckdb.Error, ValueError):
        casts = cast_parameter_types(sql)
        return tuple(casts.get(i + 1, 0) for i in range(count))
    if 0 in bound.values():
        bound.update(_from_operands(con, sql, [n for n, oid in bound.items() if oid == 0]))
    return tuple(bound.get(i + 1, 0) for i in range(count))


def _bound_types(con: duckdb.DuckDBPyConnection, sql: str) -> dict[int, int]:
    """Parameter number -> OID, as DuckDB's binder types the parameters of `sql` (0: UNKNOWN)."""
    parameters = _seam.bind(con, sql).parameters
    names = [f"p{name}" for name, _ in parameters]
    known = [(name, duck_type) for name, duck_type in parameters if str(duck_type) != "UNKNOWN"]
    schema = _seam.arrow_schema(con, [f"p{name}" for name, _ in known],
                                [duck_type for _, duck_type in known]) if known else None
    types = {f"p{name}": 0 for name, _ in parameters}
    if schema is not None:
        for field in schema:
            types[field.name] = pg_types.for_arrow(field.type).oid
    return {int(name[1:]): types[name] for name in names if name[1:].isdigit()}


def _from_operands(con: duckdb.DuckDBPyConnection, sql: str, unknown: list[int]
                   ) -> dict[int, int]:
    """Types of parameters DuckDB left open, from the other operand of their operator.

    Each such parameter's operator is replaced by an expression of the same shape in which the
    parameter is compared with that operand — a comparison is where DuckDB's binder types a
    parameter — and the changed statement is bound again."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except SqlglotError:
        return {}
    changed = False
    for node in list(tree.find_all(exp.Parameter, exp.Placeholder)):
        number = _number(node)
        if number not in unknown:
            continue
        probe = _probe(node)
        if probe is not None:
            probe[0].replace(probe[1])
            changed = True
    if not changed:
        return {}
    try:
        found = _bound_types(con, tree.sql(dialect="duckdb"))
    except (duckdb.Error, ValueError):
        return {}
    return {n: oid for n, oid in found.items() if n in unknown and oid}


def _number(node: exp.Expression) -> int | None:
    name = node.name if isinstance(node, exp.Parameter) else node.this
    return int(name) if isinstance(name, str) and name.isdigit() else None


_OPERATORS = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.DPipe, exp.Pow, exp.BitwiseAnd,
              exp.BitwiseOr, exp.BitwiseXor, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
              exp.Like, exp.ILike)


def _probe(parameter: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """(node to replace, replacement) typing `parameter` from its operator's other operand."""
    node = parameter
    while isinstance(node.parent, exp.Paren):
        node = node.parent
    parent = node.parent
    quantified = isinstance(parent, exp.Any | exp.All) or (
        isinstance(parent, exp.Anonymous) and parent.name.upper() == "ALL")
    if quantified and isinstance(parent.parent, exp.Binary):
        # x = ANY($1), x <> ALL($1) (sqlglot reads ALL as a call): $1 is an array of x's
        # type; `$1 = [x]` types it so.
        comparison = parent.parent
        other = comparison.this if comparison.expression is parent else comparison.expression
        if other.find(exp.Parameter, exp.Placeholder):
            return None
        probe = exp.EQ(this=parameter.copy(), expression=exp.Array(expressions=[other.copy()]))
        return comparison, exp.Paren(this=probe)
    if not isinstance(parent, _OPERATORS):
        return None
    other = parent.expression if parent.this is node else parent.this
    if other.find(exp.Parameter, exp.Placeholder):
        return None
    # CASE WHEN $n = other THEN other ELSE other END: other's type, so the context still binds.
    case = exp.Case(ifs=[exp.If(this=exp.EQ(this=parameter.copy(), expression=other.copy()),
                                true=other.copy())], default=other.copy())
    return parent, case


# -- the fallback: explicit casts in the text ---------------------------------------------------

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
    """Parameter number -> type OID for parameters cast explicitly to a type or an array of it
    (`$1::int`, `CAST($2 AS date)`, `$3::oid[]`), for statements DuckDB cannot bind."""
    found: dict[int, int] = {}
    for m in _CAST.finditer(sql):
        number, name, array = (m["n1"], m["t1"], m["a1"]) if m["n1"] else (
            m["n2"], m["t2"], m["a2"])
        pg_type = _TYPE_NAMES[" ".join(name.lower().split())]
        found.setdefault(int(number), pg_type.array_oid if array else pg_type.oid)
    return found


def with_jsonb(sql: str, types: tuple[int, ...]) -> tuple[int, ...]:
    """`types` (`parameter_types`' of the rewritten statement) with each JSON parameter that the
    client's text `sql` casts to jsonb typed jsonb."""
    if JSON.oid not in types:
        return types
    casts = cast_parameter_types(sql)
    return tuple(JSONB.oid if oid == JSON.oid and casts.get(i + 1) == JSONB.oid else oid
                 for i, oid in enumerate(types))

"""PostgreSQL's pg_type rows for the types Heron presents; how DuckDB's column types map to them.

Contract: `BUILTIN` holds one `TypeRow` per built-in type of `heron.planner.pg_types` and one per
array of such a type, with the attributes PostgreSQL 15's pg_type gives them (category, length,
alignment, storage, delimiter, element/array links, the names of their I/O functions,
collation). `pg_type_values()` renders them as the rows of a VALUES list in `PG_TYPE_COLUMNS`
order; user types (DuckDB enums) and the row types of relations are added by the catalog views
(`heron.planner.pg_catalog_relations`). `TYPE_NAMES` is format_type's name of every built-in type
OID (arrays as the element's name with "[]"). `literal(value)` spells a Python value in SQL,
`values(rows)` rows of them as a VALUES list.

`WIRE_OIDS` maps a DuckDB column type (its name without parameters) to the type OID Heron sends
values of that type as — derived from `pg_types.for_arrow`, which RowDescription and the encoders
read, so the two cannot disagree (the tests also check them column by column through the wire)
— and `wire_oid_sql(data_type)` is the SQL expression computing that
OID from a `duckdb_columns().data_type` string (lists map to their element's array type; other
nested types and unknown names are sent as text). `ROW_TYPE_OID_BASE` offsets the OID of a
relation's row type from the relation's OID, above every OID DuckDB hands out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb
from duckdb import _seam

from heron.planner import pg_semantics, pg_types
from heron.planner.pg_types import PgType

PG_CATALOG_NAMESPACE = 11  # PostgreSQL's fixed OID of the pg_catalog schema
TEXT_COLLATION = 100  # pg_collation "default"
NAME_COLLATION = 950  # pg_collation "C", the collation of `name`
ROW_TYPE_OID_BASE = 1 << 30  # relation OID + this = the OID of its row type (typtype 'c')


@dataclass(frozen=True, slots=True)
class TypeRow:
    """One row of pg_type for a built-in type."""

    type: PgType
    category: str  # typcategory: B boolean, N numeric, S string, D datetime, A array, ...
    byval: bool
    align: str  # typalign: c char, s short, i int, d double
    storage: str = "p"  # typstorage: p plain, x extended, m main
    io: str = ""  # prefix of the I/O functions: "bool" -> boolin/boolout, "date_" -> date_in
    preferred: bool = False
    collation: int = 0
    typmod: bool = False  # takes a type modifier (varchar(n), numeric(p,s), ...)
    kind: str = "b"  # typtype: b base, p pseudo
    element: PgType | None = None  # for arrays: the element type

    @property
    def functions(self) -> tuple[str, str, str, str]:
        """typinput, typoutput, typreceive, typsend."""
        if self.element is not None:
            return "array_in", "array_out", "array_recv", "array_send"
        prefix = self.io or self.type.name
        return f"{prefix}in", f"{prefix}out", f"{prefix}recv", f"{prefix}send"

    @property
    def typmod_functions(self) -> tuple[str, str]:
        base = self.element if self.element is not None else self.type
        row = _BY_OID.get(base.oid)
        if row is None or not row.typmod:
            return "-", "-"
        return f"{base.name}typmodin", f"{base.name}typmodout"


_T = pg_types
_BASE = (
    TypeRow(_T.BOOL, "B", True, "c", preferred=True),
    TypeRow(_T.BYTEA, "U", False, "i", "x"),
    TypeRow(_T.CHAR, "Z", True, "c"),
    TypeRow(_T.NAME, "S", False, "c", collation=NAME_COLLATION),
    TypeRow(_T.INT8, "N", True, "d"),
    TypeRow(_T.INT2, "N", True, "s"),
    TypeRow(_T.INT4, "N", True, "i"),
    TypeRow(_T.TEXT, "S", False, "i", "x", preferred=True, collation=TEXT_COLLATION),
    TypeRow(_T.OID, "N", True, "i", preferred=True),
    TypeRow(_T.JSON, "U", False, "i", "x", io="json_"),
    TypeRow(_T.FLOAT4, "N", True, "i"),
    TypeRow(_T.FLOAT8, "N", True, "d", preferred=True),
    TypeRow(_T.UNKNOWN, "X", False, "c", kind="p"),
    TypeRow(_T.BPCHAR, "S", False, "i", "x", collation=TEXT_COLLATION, typmod=True),
    TypeRow(_T.VARCHAR, "S", False, "i", "x", collation=TEXT_COLLATION, typmod=True),
    TypeRow(_T.DATE, "D", True, "i", io="date_"),
    TypeRow(_T.TIME, "D", True, "d", io="time_", typmod=True),
    TypeRow(_T.TIMESTAMP, "D", True, "d", io="timestamp_", typmod=True),
    TypeRow(_T.TIMESTAMPTZ, "D", True, "d", io="timestamptz_", preferred=True, typmod=True),
    TypeRow(_T.INTERVAL, "T", False, "d", io="interval_", preferred=True, typmod=True),
    TypeRow(_T.TIMETZ, "D", False, "d", io="timetz_", typmod=True),
    TypeRow(_T.BIT, "V", False, "i", "x", io="bit_", typmod=True),
    TypeRow(_T.NUMERIC, "N", False, "i", "m", io="numeric_", typmod=True),
    TypeRow(_T.REGCLASS, "N", True, "i"),
    TypeRow(_T.REGTYPE, "N", True, "i"),
    TypeRow(_T.UUID, "U", False, "c", io="uuid_"),
    TypeRow(_T.JSONB, "U", False, "i", "x", io="jsonb_"),
)
_BY_OID = {row.type.oid: row for row in _BASE}
assert set(_BY_OID) == {t.oid for t in pg_types.ALL}, "every type of pg_types needs a TypeRow"


def _array(row: TypeRow) -> TypeRow:
    element = row.type
    array = PgType(element.array_oid, f"_{element.name}", -1)
    return TypeRow(array, "A", False, "d" if element.oid in _DOUBLE_ALIGNED_ARRAYS else "i",
                   "x", collation=row.collation, element=element)


# Arrays are int-aligned unless their element needs double alignment (PostgreSQL's rule).
_DOUBLE_ALIGNED_ARRAYS = {t.type.oid for t in _BASE if t.align == "d"}
BUILTIN: tuple[TypeRow, ...] = (*_BASE, *(_array(r) for r in _BASE if r.type.array_oid))

TYPE_NAMES: dict[int, str] = {
    row.type.oid: (row.element.display_name + "[]" if row.element else row.type.display_name)
    for row in BUILTIN}

# pg_type's columns, in PostgreSQL 15's order, with their PostgreSQL types.
PG_TYPE_COLUMNS = (
    "oid:oid typname:name typnamespace:oid typowner:oid typlen:smallint typbyval:boolean "
    "typtype:char typcategory:char typispreferred:boolean typisdefined:boolean typdelim:char "
    "typrelid:oid typsubscript:regproc typelem:oid typarray:oid typinput:regproc "
    "typoutput:regproc typreceive:regproc typsend:regproc typmodin:regproc typmodout:regproc "
    "typanalyze:regproc typalign:char typstorage:char typnotnull:boolean typbasetype:oid "
    "typtypmod:integer typndims:integer typcollation:oid typdefaultbin:pg_node_tree "
    "typdefault:text typacl:aclitem[]")


def literal(value: object) -> str:
    """A Python value as an SQL literal (None, bool, int, or text)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def values(rows: Iterable[Sequence[object]]) -> str:
    """Rows of Python values as the rows of an SQL VALUES list."""
    return ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)


def pg_type_values() -> str:
    """The built-in types as rows of a VALUES list, in PG_TYPE_COLUMNS order."""
    return values(_pg_type_row(row) for row in BUILTIN)


def _pg_type_row(row: TypeRow) -> tuple[object, ...]:
    t = row.type
    is_array = row.element is not None
    subscript = "array_subscript_handler" if is_array else (
        "raw_array_subscript_handler" if t is pg_types.NAME else "-")
    return (
        t.oid, t.name, PG_CATALOG_NAMESPACE, 10, t.typlen, row.byval, row.kind,
        row.category, row.preferred, True, ",", 0, subscript,
        row.element.oid if is_array else (pg_types.CHAR.oid if t is pg_types.NAME else 0),
        0 if is_array else t.array_oid, *row.functions, *row.typmod_functions,
        "array_typanalyze" if is_array else "-", row.align, row.storage, False, 0, -1, 0,
        row.collation, None, None, None)


# DuckDB's column types, by the names duckdb_columns() gives them without their parameters.
_DUCKDB_TYPES = (
    "BOOLEAN", "TINYINT", "SMALLINT", "UTINYINT", "INTEGER", "USMALLINT", "BIGINT", "UINTEGER",
    "UBIGINT", "HUGEINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "VARCHAR", "BLOB", "BIT",
    "DATE", "TIME", "TIME WITH TIME ZONE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS",
    "TIMESTAMP_NS", "TIMESTAMP WITH TIME ZONE", "INTERVAL", "UUID", "JSON",
)


def _wire_oids() -> dict[str, int]:
    """The OID a column of each DuckDB type is sent as: the Arrow type DuckDB gives it on a
    connection configured as a session's (`pg_semantics.configure`), through
    `pg_types.for_arrow`, the mapping RowDescription and the encoders use."""
    con = duckdb.connect()
    try:
        pg_semantics.configure(con)
        schema = _seam.arrow_schema(con, [f"c{i}" for i in range(len(_DUCKDB_TYPES))],
                                    list(_DUCKDB_TYPES))
    finally:
        con.close()
    return {name: pg_types.for_arrow(field.type).oid
            for name, field in zip(_DUCKDB_TYPES, schema, strict=True)}


WIRE_OIDS = _wire_oids()


def wire_oid_sql(data_type: str) -> str:
    """SQL: the wire OID of a column whose DuckDB type is the VARCHAR expression `data_type`.

    A one-dimensional list (`INTEGER[]`, `INTEGER[3]`) is sent as its element's array type when
    the element has one; anything else unknown (nested lists, structs, maps, unions, enums) as
    text."""
    base = f"regexp_replace({data_type}, '\\([^)]*\\)', '', 'g')"
    scalars = " ".join(f"WHEN '{name}' THEN {oid}" for name, oid in WIRE_OIDS.items())
    arrays = " ".join(
        f"WHEN '{name}' THEN {pg_types.BY_OID[oid].array_oid}" for name, oid in WIRE_OIDS.items()
        if pg_types.BY_OID[oid].array_oid)
    element = f"regexp_extract({base}, '^([^\\[]+)\\[\\d*\\]$', 1)"
    return (f"CASE {base} {scalars} ELSE CASE {element} {arrays} ELSE 25 END END::UINTEGER")

"""PostgreSQL 15's catalog relations, answered from DuckDB's metadata.

Contract: `RELATIONS` lists the relations of `pg_catalog` the shim answers, each a `Relation`
with PostgreSQL 15's columns in PostgreSQL's order and their types as DuckDB holds them (`oid` is
UINTEGER, sent as oid; `name`, `"char"`, `regproc` and `pg_node_tree` are VARCHAR; int2vector
and oidvector are lists); `Relation.sql()` is its view's query, empty when the relation has no
`source`. `SNAPSHOTS` are the queries of the facts they are built from, in the order they are
computed (one row per namespace, constraint, index, relation, column of DuckDB's catalog, with
the OIDs the catalog shows; each reads those before it), which the shim registers as snapshots
(`heron.planner.pg_catalog.Catalog`). They also read three views the shim creates:
`heron_system_relations` (the catalog's own relations), `heron_roles` and `heron_settings`.

What the relations show, and where it comes from:
- Namespaces: the database's schemas (`main` only while it holds objects), `pg_catalog` (OID 11,
  as in PostgreSQL) and `information_schema`; `public` is owned by pg_database_owner as in
  PostgreSQL 15, the others by the bootstrap superuser (OID 10), who owns every relation.
- Relations: tables, views, sequences and indexes of the database (and of the session's
  temporary schema, shown as `pg_temp_1`); the indexes are those of CREATE INDEX and those
  PostgreSQL makes for primary keys and unique constraints; the catalog relations themselves
  appear in `pg_catalog` / `information_schema` (catalog tables under PostgreSQL's fixed OIDs).
  A table or view has a row type (typtype 'c') at its OID + `ROW_TYPE_OID_BASE`.
- Columns: the type OID a column's values are sent with (`pg_catalog_types.wire_oid_sql`),
  numeric's typmod from DECIMAL(p,s), defaults as PostgreSQL prints them. Some columns are
  described as more than their DuckDB type: a VARCHAR column carrying a length CHECK
  (`length(col) <= n`, how Heron keeps `varchar(n)`) is varchar(n), one carrying
  `n >= length(rtrim(col, ' '))` (how it keeps `char(n)`) is character(n), and a JSON column
  carrying `json_valid(col)` (how Heron keeps `jsonb`) is jsonb, those CHECKs not listed as
  constraints; an enum column has its enum type; a view's column has the type its definition
  declares (`heron.planner.pg_catalog` types them after `heron.planner.column_origins`).
- Constraints: primary keys, unique, foreign keys and CHECKs under PostgreSQL's names (DuckDB
  names a primary key `<table>_<columns>_pkey`, PostgreSQL `<table>_pkey`); a constraint and
  its index share an OID above 2^31 derived from the table's OID and the constraint's position.
- Comments (COMMENT ON) are pg_description's rows; defaults are pg_attrdef's.
- Statistics DuckDB keeps: reltuples of a table is -1 (never analyzed), n_live_tup its row
  count; indexes show PostgreSQL's freshly built values (no tuples, one page).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from heron.planner import extensions
from heron.planner.pg_catalog_types import (
    BUILTIN,
    PG_CATALOG_NAMESPACE,
    PG_TYPE_COLUMNS,
    ROW_TYPE_OID_BASE,
    TYPE_NAMES,
    literal,
    pg_type_values,
    values,
    wire_oid_sql,
)
from heron.planner.pg_types import BPCHAR, JSONB

# The views holding materialized views' queries (`materialized_views`): hidden, their tables
# shown as relkind 'm'.
QUERY_VIEW_PREFIX = "heron_matview_"
UNPOPULATED = "unpopulated"  # such a view's comment while its table holds no rows (WITH NO DATA)
VIEWDEF_FUNCTION = "heron_viewdef"  # a Python function: PostgreSQL's text of a view's query
BOOTSTRAP_SUPERUSER = 10
DATABASE_OWNER_ROLE = 6171  # pg_database_owner, owner of `public` in PostgreSQL 15
CONSTRAINT_OID_BASE = 1 << 31
TEMP_NAMESPACE = "pg_temp_1"
HEAP_AM, BTREE_AM = 2, 403

# PostgreSQL's types -> the DuckDB type a catalog column holds them as.
_DUCKDB_TYPES = {
    "oid": "UINTEGER", "name": "VARCHAR", "char": "VARCHAR", "text": "VARCHAR",
    "regproc": "VARCHAR", "regtype": "VARCHAR", "pg_node_tree": "VARCHAR", "inet": "VARCHAR",
    "pg_lsn": "VARCHAR", "anyarray": "VARCHAR", "aclitem": "VARCHAR", "xid": "BIGINT",
    "smallint": "SMALLINT", "integer": "INTEGER", "bigint": "BIGINT", "real": "FLOAT",
    "boolean": "BOOLEAN", "bytea": "BLOB", "interval": "INTERVAL", "timestamptz": "TIMESTAMPTZ",
    "int2vector": "SMALLINT[]", "oidvector": "UINTEGER[]",
    # information_schema's domains
    "sql_identifier": "VARCHAR", "character_data": "VARCHAR", "cardinal_number": "INTEGER",
    "yes_or_no": "VARCHAR", "time_stamp": "TIMESTAMPTZ",
}
# What a column the source does not fill holds (PostgreSQL's catalog columns are NOT NULL).
_ZERO = {"UINTEGER": "0", "SMALLINT": "0", "INTEGER": "0", "BIGINT": "0", "FLOAT": "0",
         "BOOLEAN": "false"}


def duckdb_type(pg_type: str) -> str:
    if pg_type.endswith("[]"):
        return duckdb_type(pg_type[:-2]).removesuffix("[]") + "[]"
    return _DUCKDB_TYPES[pg_type]


@dataclass(frozen=True, slots=True)
class Relation:
    """A catalog relation: its columns ("name:type ..." in PostgreSQL's order) and, when it has
    rows, the SQL of each column over `source` (a FROM clause); unlisted columns hold zero,
    false or NULL."""

    name: str
    columns: str
    select: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    kind: str = "v"  # relkind in PostgreSQL: 'r' catalog table, 'v' view
    oid: int | None = None  # PostgreSQL's fixed OID of a catalog table

    def pg_columns(self) -> list[tuple[str, str]]:
        """(name, PostgreSQL type) of each column, in order."""
        return [(c.split(":")[0], c.split(":")[1]) for c in self.columns.split()]

    def column_types(self) -> list[tuple[str, str]]:
        return [(name, duckdb_type(pg_type)) for name, pg_type in self.pg_columns()]

    def sql(self) -> str:
        columns = self.column_types()
        unknown = set(self.select) - {name for name, _ in columns}
        assert not unknown, f"{self.name}: no such columns {unknown}"
        items = []
        for name, duck in columns:
            value = self.select.get(name, _ZERO.get(duck, "NULL"))
            items.append(f"CAST({value} AS {duck}) AS {name}")
        body = ",\n       ".join(items)
        if not self.source:
            return f"SELECT {body} WHERE false"
        return f"SELECT {body}\nFROM {self.source}"


# -- snapshots ------------------------------------------------------------------------------

def _is_shim(name: str) -> str:
    """Whether a TEMP object named `name` is one of the shim's own."""
    return (f"({name} IN (SELECT view_name FROM heron_system_relations) "
            f"OR starts_with({name}, 'heron_'))")


_USER_OBJECTS = f"""
    SELECT database_name, schema_name FROM duckdb_tables()
    UNION ALL SELECT database_name, schema_name FROM duckdb_views()
    WHERE NOT internal AND NOT (database_name = 'temp' AND {_is_shim('view_name')})
    UNION ALL SELECT database_name, schema_name FROM duckdb_sequences()"""

_NAMESPACES = f"""
    SELECT CASE WHEN s.database_name = 'system' AND s.schema_name = 'pg_catalog'
                THEN {PG_CATALOG_NAMESPACE} ELSE s.oid END::UINTEGER AS oid,
           CASE WHEN s.database_name = 'temp' THEN '{TEMP_NAMESPACE}' ELSE s.schema_name END
             AS nspname,
           CASE WHEN s.database_name = current_database() AND s.schema_name = 'public'
                THEN {DATABASE_OWNER_ROLE} ELSE {BOOTSTRAP_SUPERUSER} END::UINTEGER AS nspowner,
           s.database_name, s.schema_name, s.comment
    FROM duckdb_schemas() s
    WHERE (s.database_name = 'system' AND s.schema_name IN ('pg_catalog', 'information_schema'))
       OR (s.database_name = current_database() AND s.schema_name <> 'main')
       OR ((s.database_name, s.schema_name) IN (
             SELECT (database_name, schema_name) FROM ({_USER_OBJECTS})
             WHERE database_name IN (current_database(), 'temp')))"""

# varchar(n) kept as a CHECK (length(col) <= n) by Heron's DDL rewrite.
LENGTH_CHECK = r"^\(length\(.+\) <= (\d+)\)$"


# char(n) kept as a CHECK (n >= length(rtrim(col, ' '))) by Heron's DDL rewrite: its trailing
# blanks are insignificant, as PostgreSQL's (which cuts them off a value too long for n).
BPCHAR_CHECK = r"^\((\d+) >= length\(rtrim\(.+\)\)\)$"


def _is_length_check(c: str, check: str = LENGTH_CHECK) -> str:
    return (f"({c}.constraint_type = 'CHECK' AND len({c}.constraint_column_names) = 1 "
            f"AND regexp_matches({c}.expression, '{check}'))")


def _lengths(check: str) -> str:
    """Each column's length (table_oid, column_name, length) that a CHECK matching `check`
    (`LENGTH_CHECK`, `BPCHAR_CHECK`) keeps."""
    return f"""(
    SELECT k.table_oid, k.constraint_column_names[1] AS column_name,
           min(regexp_extract(k.expression, '{check}', 1)::INTEGER) AS length
    FROM duckdb_constraints() k WHERE {_is_length_check('k', check)} GROUP BY ALL)"""


# Each varchar(n) and char(n) column's length: Heron's DDL keeps it as a CHECK, which the catalog
# reads back as the column's type (`planner.column_origins` reads the CHECKs too).
VARCHAR_LENGTHS = _lengths(LENGTH_CHECK)
BPCHAR_LENGTHS = _lengths(BPCHAR_CHECK)

# jsonb kept as a CHECK (json_valid(col)) on a JSON column by Heron's DDL rewrite: DuckDB has one
# JSON type, and its JSON values are valid, so the CHECK never refuses a row; it marks the
# column's declared type. (A type alias, CREATE TYPE jsonb AS JSON, would not: DuckDB resolves
# it to JSON when the table is created.)
JSONB_CHECK = r"^json_valid\(.+\)$"


def _is_jsonb_mark(c: str) -> str:
    return (f"({c}.constraint_type = 'CHECK' AND len({c}.constraint_column_names) = 1 "
            f"AND regexp_matches({c}.expression, '{JSONB_CHECK}') AND EXISTS ("
            f"SELECT 1 FROM duckdb_columns() d WHERE d.table_oid = {c}.table_oid "
            f"AND d.column_name = {c}.constraint_column_names[1] AND d.data_type = 'JSON'))")


# Each jsonb column (table_oid, column_name), read back as the column's type (and by
# `planner.column_origins`).
JSONB_COLUMNS = f"""(
    SELECT DISTINCT k.table_oid, k.constraint_column_names[1] AS column_name
    FROM duckdb_constraints() k WHERE {_is_jsonb_mark('k')})"""


def type_name_sql(type_oid: str) -> str:
    """SQL: format_type's name of the built-in type whose OID is the expression `type_oid`
    (no look-up in pg_type: DuckDB takes it where it takes no subquery, as in RETURNING)."""
    whens = " ".join(f"WHEN {oid} THEN '{name}'" for oid, name in TYPE_NAMES.items())
    return f"CASE {type_oid} {whens} ELSE 'unknown' END"


_COLUMN_NAMES = """(SELECT table_oid, list(column_name ORDER BY column_index) AS names
                    FROM duckdb_columns() GROUP BY table_oid)"""

_CONSTRAINTS = f"""
    SELECT ({CONSTRAINT_OID_BASE} + (c.table_oid * 1024 + c.constraint_index)
            % {CONSTRAINT_OID_BASE})::UINTEGER AS oid,
           c.table_oid::UINTEGER AS relid, n.oid AS namespace, n.nspname AS schema_name,
           c.table_name,
           CASE c.constraint_type WHEN 'PRIMARY KEY' THEN c.table_name || '_pkey'
                WHEN 'FOREIGN KEY' THEN c.table_name || '_'
                     || array_to_string(c.constraint_column_names, '_') || '_fkey'
                ELSE c.constraint_name END AS name,
           CASE c.constraint_type WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u'
                WHEN 'FOREIGN KEY' THEN 'f' ELSE 'c' END AS contype,
           list_transform(c.constraint_column_indexes, lambda x: x + 1)::SMALLINT[] AS columns,
           c.constraint_column_names AS column_names,
           r.table_oid::UINTEGER AS referenced_relid,
           list_transform(c.referenced_column_names,
                          lambda x: list_position(rc.names, x))::SMALLINT[] AS referenced_columns,
           c.referenced_table, c.referenced_column_names, rn.nspname AS referenced_schema,
           c.expression
    FROM duckdb_constraints() c
    JOIN heron_namespaces n ON n.database_name = c.database_name
         AND n.schema_name = c.schema_name
    LEFT JOIN duckdb_tables() r ON r.database_name = c.database_name
         AND r.schema_name = c.schema_name AND r.table_name = c.referenced_table
    LEFT JOIN heron_namespaces rn ON rn.database_name = r.database_name
         AND rn.schema_name = r.schema_name
    LEFT JOIN {_COLUMN_NAMES} rc ON rc.table_oid = r.table_oid
    WHERE c.constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')
       OR (c.constraint_type = 'CHECK' AND NOT {_is_length_check('c')}
           AND NOT {_is_length_check('c', BPCHAR_CHECK)}
           AND NOT {_is_jsonb_mark('c')})"""

# Indexes: those PostgreSQL makes for primary keys and unique constraints (DuckDB keeps them
# inside the table) and those of CREATE INDEX, whose keys are read from DuckDB's `expressions`:
# a list printed with each item that needs it in single quotes (backslash-escaped), a column
# name double-quoted where it is a keyword or not plain, an expression in parentheses.
# `columns` are the key columns' numbers (0 for an expression, as PostgreSQL's indkey), `keys`
# the keys as pg_get_indexdef prints them (a function call without DuckDB's parentheses).
_INDEX_ITEM = r"'(?:[^'\\]|\\.)*'|[^,\[\]\s][^,\]]*"
_INDEXES = rf"""
    SELECT *, 'CREATE ' || CASE WHEN is_unique THEN 'UNIQUE ' ELSE '' END || 'INDEX '
              || quote_ident(name) || ' ON ' || quote_ident(schema_name) || '.'
              || quote_ident(table_name) || ' USING btree (' || array_to_string(keys, ', ')
              || ')' AS definition
    FROM (
      SELECT oid, relid, namespace, schema_name, table_name, name, contype = 'p' AS is_primary,
             true AS is_unique, columns, column_names, oid AS constraint_oid,
             list_transform(column_names, lambda x: quote_ident(x)) AS keys
      FROM heron_constraints WHERE contype IN ('p', 'u')
      UNION ALL
      SELECT i.index_oid::UINTEGER, i.table_oid::UINTEGER, n.oid, n.nspname, i.table_name,
             i.index_name, false, i.is_unique,
             list_transform(e.names, lambda x: coalesce(list_position(tc.names, x), 0)
                            )::SMALLINT[],
             e.names, NULL::UINTEGER,
             list_transform(list_zip(r.items, e.names), lambda p: CASE
               WHEN p[2] IS NOT NULL THEN quote_ident(p[2])
               WHEN regexp_full_match(p[1], '\([A-Za-z_][A-Za-z0-9_.]*\(.*\)\)') THEN p[1][2:-2]
               ELSE p[1] END)
      FROM duckdb_indexes() i
      JOIN heron_namespaces n ON n.database_name = i.database_name
           AND n.schema_name = i.schema_name
      JOIN {_COLUMN_NAMES} tc ON tc.table_oid = i.table_oid,
      LATERAL (SELECT list_transform(regexp_extract_all(i.expressions, {literal(_INDEX_ITEM)}),
                 lambda x: CASE WHEN starts_with(x, '''')
                                THEN regexp_replace(x[2:-2], '\\(.)', '\1', 'g')
                                ELSE trim(x) END) AS items) r,
      LATERAL (SELECT list_transform(r.items, lambda x: CASE
                 WHEN regexp_full_match(x, '"(?:[^"]|"")*"') THEN replace(x[2:-2], '""', '"')
                 WHEN regexp_full_match(x, '[A-Za-z_][A-Za-z0-9_$]*') THEN x END) AS names) e)"""

_RELATIONS = f"""
    SELECT t.table_oid::UINTEGER AS oid, t.table_name AS relname, n.oid AS relnamespace,
           CASE WHEN q.sql IS NULL THEN 'r' ELSE 'm' END AS relkind,
           CASE WHEN t.temporary THEN 't' ELSE 'p' END AS relpersistence,
           t.column_count AS relnatts, coalesce(k.checks, 0) AS relchecks,
           i.relid IS NOT NULL AS relhasindex,
           -- PostgreSQL's foreign keys are triggers on both tables; psql reads them only then
           f.relid IS NOT NULL AS relhastriggers,
           -1 AS reltuples, 0 AS relpages, {HEAP_AM} AS relam, t.comment,
           coalesce(q.sql, t.sql) AS definition, n.nspname
    FROM duckdb_tables() t
    JOIN heron_namespaces n ON n.database_name = t.database_name AND n.schema_name = t.schema_name
    -- a materialized view: its query's view (`materialized_views`)
    LEFT JOIN duckdb_views() q ON q.database_name = t.database_name
         AND q.schema_name = t.schema_name AND q.view_name = '{QUERY_VIEW_PREFIX}' || t.table_name
    LEFT JOIN (SELECT relid, count(*) AS checks FROM heron_constraints WHERE contype = 'c'
               GROUP BY relid) k ON k.relid = t.table_oid
    LEFT JOIN (SELECT DISTINCT relid FROM heron_indexes) i ON i.relid = t.table_oid
    LEFT JOIN (SELECT relid FROM heron_constraints WHERE contype = 'f' UNION
               SELECT referenced_relid FROM heron_constraints WHERE contype = 'f') f
           ON f.relid = t.table_oid
    UNION ALL
    SELECT v.view_oid, v.view_name, n.oid, 'v', CASE WHEN v.temporary THEN 't' ELSE 'p' END,
           v.column_count, 0, false, false, -1, 0, 0, v.comment, v.sql, n.nspname
    FROM duckdb_views() v
    JOIN heron_namespaces n ON n.database_name = v.database_name AND n.schema_name = v.schema_name
    WHERE NOT v.internal AND NOT (v.database_name = 'temp' AND {_is_shim('v.view_name')})
          AND NOT starts_with(v.view_name, '{QUERY_VIEW_PREFIX}')
    UNION ALL  -- the catalog's own relations
    SELECT coalesce(s.fixed_oid, v.view_oid)::UINTEGER, s.name, n.oid, s.relkind, 'p',
           v.column_count, 0, false, false, -1, 0, CASE s.relkind WHEN 'r' THEN {HEAP_AM} ELSE 0
           END, NULL, NULL, n.nspname
    FROM heron_system_relations s
    JOIN duckdb_views() v ON v.database_name = 'temp' AND v.view_name = s.view_name
    JOIN heron_namespaces n ON n.nspname = s.namespace
    UNION ALL
    SELECT q.sequence_oid, q.sequence_name, n.oid, 'S', CASE WHEN q.temporary THEN 't' ELSE 'p'
           END, 3, 0, false, false, 1, 1, 0, q.comment, q.sql, n.nspname
    FROM duckdb_sequences() q
    JOIN heron_namespaces n ON n.database_name = q.database_name AND n.schema_name = q.schema_name
    UNION ALL
    SELECT i.oid, i.name, i.namespace, 'i', 'p', len(i.columns), 0, false, false, 0, 1,
           {BTREE_AM}, x.comment, NULL, i.schema_name
    FROM heron_indexes i LEFT JOIN duckdb_indexes() x ON x.index_oid = i.oid"""

# A default as PostgreSQL prints it: a string constant cast to the column's type, a sequence
# given to nextval as a regclass (DuckDB prints 'x' and nextval('s')); a generated column's
# expression without the cast to the column's type DuckDB wraps it in.
_DEFAULT = (r"CASE WHEN t.attgenerated <> '' THEN regexp_replace(t.column_default, "
            r"'^CAST\((.*) AS [A-Z ]+(\(\d+(, ?\d+)?\))?\)$', '\1') "
            "WHEN regexp_matches(t.column_default, '^''([^'']|'''')*''$') "
            f"THEN t.column_default || '::' || {type_name_sql('t.atttypid')} "
            r"ELSE regexp_replace(t.column_default, '^nextval\(''(.*)''\)$', "
            r"'nextval(''\1''::regclass)') END")

_TABLE_COLUMNS = f"""
    SELECT t.* REPLACE ({_DEFAULT} AS column_default) FROM (
    SELECT c.table_oid::UINTEGER AS attrelid, c.column_name AS attname,
           c.column_index::SMALLINT AS attnum,
           CASE WHEN b.length IS NOT NULL THEN {BPCHAR.oid}
                WHEN k.length IS NOT NULL THEN 1043 WHEN e.type_oid IS NOT NULL THEN e.type_oid
                WHEN j.table_oid IS NOT NULL THEN {JSONB.oid}
                ELSE {wire_oid_sql('c.data_type')} END::UINTEGER AS atttypid,
           CASE WHEN b.length IS NOT NULL THEN b.length + 4
                WHEN k.length IS NOT NULL THEN k.length + 4
                WHEN c.data_type LIKE 'DECIMAL(%' THEN
                  ((c.numeric_precision << 16) | c.numeric_scale) + 4
                ELSE -1 END AS atttypmod,
           NOT c.is_nullable AS attnotnull, c.column_default, c.comment,
           CASE WHEN regexp_matches(c.data_type, '\\[\\d*\\]$') THEN 1 ELSE 0 END AS attndims,
           CASE WHEN c.is_generated THEN 's' ELSE '' END AS attgenerated  -- stored, to clients
    FROM duckdb_columns() c
    JOIN heron_relations r ON r.oid = c.table_oid AND r.relkind IN ('r', 'v', 'm')
    LEFT JOIN {VARCHAR_LENGTHS} k ON k.table_oid = c.table_oid AND k.column_name = c.column_name
    LEFT JOIN {BPCHAR_LENGTHS} b ON b.table_oid = c.table_oid AND b.column_name = c.column_name
    LEFT JOIN {JSONB_COLUMNS} j ON j.table_oid = c.table_oid AND j.column_name = c.column_name
    LEFT JOIN duckdb_types() e ON e.logical_type = 'ENUM' AND NOT e.internal
         AND c.data_type = 'ENUM(' || array_to_string(
               list_transform(e.labels, lambda x: '''' || replace(x, '''', '''''') || ''''), ', ')
             || ')') t"""

_COLUMNS = """
    SELECT * FROM heron_table_columns
    UNION ALL  -- an index's columns are its key columns
    SELECT i.oid, a.attname, k.position::SMALLINT, a.atttypid, a.atttypmod, false, NULL, NULL,
           a.attndims, ''
    FROM heron_indexes i, unnest(i.columns) WITH ORDINALITY AS k(attnum, position)
    JOIN heron_table_columns a ON a.attrelid = i.relid AND a.attnum = k.attnum
    UNION ALL  -- a sequence's row: last_value, log_cnt, is_called
    SELECT r.oid, s.name, s.num::SMALLINT, s.type_oid::UINTEGER, -1, true, NULL, NULL, 0, ''
    FROM heron_relations r, (VALUES ('last_value', 1, 20), ('log_cnt', 2, 20),
                                    ('is_called', 3, 16)) s(name, num, type_oid)
    WHERE r.relkind = 'S'"""

# Each relation's columns with their type names, for pg_get_viewdef (one JSON document).
_COLUMN_TYPES = f"""
    SELECT to_json(map_from_entries(list({{'key': relname, 'value': columns}}))) AS types
    FROM (SELECT r.relname, map_from_entries(list({{'key': a.attname,
                                                    'value': {type_name_sql('a.atttypid')}}}
                                                  ORDER BY a.attnum)) AS columns
          FROM heron_table_columns a JOIN heron_relations r ON r.oid = a.attrelid
          WHERE r.oid IN (SELECT min(oid) FROM heron_relations GROUP BY relname)
          GROUP BY r.relname)"""

# The facts the relations are built from, in the order they are computed (each reads those
# before it): snapshots of DuckDB's catalog taken whenever it changed (see pg_catalog.Catalog).
SNAPSHOTS: dict[str, str] = {
    "heron_namespaces": _NAMESPACES,
    "heron_constraints": _CONSTRAINTS,
    "heron_indexes": _INDEXES,
    "heron_relations": _RELATIONS,
    "heron_table_columns": _TABLE_COLUMNS,
    "heron_columns": _COLUMNS,
    "heron_column_types": _COLUMN_TYPES,
}


# -- relations --------------------------------------------------------------------------------

_OPCLASSES = (  # PostgreSQL's default btree operator classes: (input type, oid, name, family)
    (16, 10003, "bool_ops", 424), (17, 10006, "bytea_ops", 428), (18, 10007, "char_ops", 429),
    (19, 10028, "name_ops", 1994), (20, 3124, "int8_ops", 1976), (21, 1979, "int2_ops", 1976),
    (23, 1978, "int4_ops", 1976), (25, 3126, "text_ops", 1994), (26, 1981, "oid_ops", 1989),
    (700, 10012, "float4_ops", 1970), (701, 3123, "float8_ops", 1970),
    (1042, 10004, "bpchar_ops", 426), (1082, 3122, "date_ops", 434),
    (1083, 10038, "time_ops", 1996), (1114, 3128, "timestamp_ops", 434),
    (1184, 3127, "timestamptz_ops", 434), (1186, 10022, "interval_ops", 1982),
    (1266, 10041, "timetz_ops", 2000), (1560, 10002, "bit_ops", 423),
    (1700, 3125, "numeric_ops", 1988), (2277, 10000, "array_ops", 397),
    (2950, 10065, "uuid_ops", 2968), (3802, 10088, "jsonb_ops", 4033),
)
_TEXT_OPS = 3126  # varchar columns use text's operator class
_ARRAY_OPS = 10000


def _opclass_of(type_oid: str) -> str:
    cases = " ".join(f"WHEN {t} THEN {oid}" for t, oid, _, _ in _OPCLASSES)
    arrays = ", ".join(str(row.type.oid) for row in BUILTIN if row.element is not None)
    return (f"CASE {type_oid} {cases} WHEN 1043 THEN {_TEXT_OPS} ELSE CASE WHEN {type_oid} IN "
            f"({arrays}) THEN {_ARRAY_OPS} ELSE 0 END END")


_OWNER = "JOIN heron_roles o ON o.oid = c.relowner"

RELATIONS: tuple[Relation, ...] = (
    Relation(
        "pg_namespace", "oid:oid nspname:name nspowner:oid nspacl:aclitem[]",
        # PostgreSQL's default privileges: the owner may use and create, everyone may use.
        {"oid": "n.oid", "nspname": "n.nspname", "nspowner": "n.nspowner",
         "nspacl": "[o.name || '=UC/' || o.name, '=U/' || o.name]"},
        "heron_namespaces n JOIN heron_roles o ON o.oid = n.nspowner", "r", 2615),
    Relation(
        "pg_class",
        "oid:oid relname:name relnamespace:oid reltype:oid reloftype:oid relowner:oid relam:oid "
        "relfilenode:oid reltablespace:oid relpages:integer reltuples:real relallvisible:integer "
        "reltoastrelid:oid relhasindex:boolean relisshared:boolean relpersistence:char "
        "relkind:char relnatts:smallint relchecks:smallint relhasrules:boolean "
        "relhastriggers:boolean relhassubclass:boolean relrowsecurity:boolean "
        "relforcerowsecurity:boolean relispopulated:boolean relreplident:char "
        "relispartition:boolean relrewrite:oid relfrozenxid:xid relminmxid:xid "
        "relacl:aclitem[] reloptions:text[] relpartbound:pg_node_tree",
        {"oid": "oid", "relname": "relname", "relnamespace": "relnamespace",
         "reltype": f"CASE WHEN relkind IN ('r', 'v', 'm') THEN oid + {ROW_TYPE_OID_BASE} "
                    "ELSE 0 END",
         "relowner": str(BOOTSTRAP_SUPERUSER), "relam": "relam",
         "relfilenode": "CASE WHEN relkind = 'v' THEN 0 ELSE oid END", "relpages": "relpages",
         "reltuples": "reltuples", "relhasindex": "relhasindex",
         "relpersistence": "relpersistence", "relkind": "relkind", "relnatts": "relnatts",
         "relchecks": "relchecks", "relhasrules": "relkind = 'v'",
         "relhastriggers": "relhastriggers", "relispopulated": "true",
         "relreplident": "CASE WHEN relkind = 'r' THEN 'd' ELSE 'n' END"},
        "heron_relations", "r", 1259),
    Relation(
        "pg_attribute",
        "attrelid:oid attname:name atttypid:oid attstattarget:integer attlen:smallint "
        "attnum:smallint attndims:integer attcacheoff:integer atttypmod:integer "
        "attbyval:boolean attalign:char attstorage:char attcompression:char attnotnull:boolean "
        "atthasdef:boolean atthasmissing:boolean attidentity:char attgenerated:char "
        "attisdropped:boolean attislocal:boolean attinhcount:integer attcollation:oid "
        "attacl:aclitem[] attoptions:text[] attfdwoptions:text[] attmissingval:anyarray",
        {"attrelid": "a.attrelid", "attname": "a.attname", "atttypid": "a.atttypid",
         "attstattarget": "-1", "attlen": "coalesce(t.typlen, -1)", "attnum": "a.attnum",
         "attndims": "a.attndims", "attcacheoff": "-1", "atttypmod": "a.atttypmod",
         "attbyval": "coalesce(t.typbyval, false)", "attalign": "coalesce(t.typalign, 'i')",
         "attstorage": "coalesce(t.typstorage, 'x')", "attcompression": "''",
         "attnotnull": "a.attnotnull", "atthasdef": "a.column_default IS NOT NULL",
         "attidentity": "''", "attgenerated": "a.attgenerated", "attislocal": "true",
         "attcollation": "coalesce(t.typcollation, 0)"},
        "heron_columns a LEFT JOIN pg_type t ON t.oid = a.atttypid", "r", 1249),
    Relation(
        "pg_type", PG_TYPE_COLUMNS,
        {name: f"t.{name}" for name in (c.split(":")[0] for c in PG_TYPE_COLUMNS.split())},
        f"""(SELECT * FROM (VALUES {pg_type_values()}) b({", ".join(
            c.split(":")[0] for c in PG_TYPE_COLUMNS.split())})
             UNION ALL BY NAME  -- DuckDB's enums
             SELECT e.type_oid AS oid, e.type_name AS typname, n.oid AS typnamespace,
                    {BOOTSTRAP_SUPERUSER} AS typowner, 4 AS typlen, true AS typbyval,
                    'e' AS typtype, 'E' AS typcategory, false AS typispreferred,
                    true AS typisdefined, ',' AS typdelim, 0 AS typrelid, '-' AS typsubscript,
                    0 AS typelem, 0 AS typarray, 'enum_in' AS typinput, 'enum_out' AS typoutput,
                    'enum_recv' AS typreceive, 'enum_send' AS typsend, '-' AS typmodin,
                    '-' AS typmodout, '-' AS typanalyze, 'i' AS typalign, 'p' AS typstorage,
                    false AS typnotnull, 0 AS typbasetype, -1 AS typtypmod, 0 AS typndims,
                    0 AS typcollation
             FROM duckdb_types() e
             JOIN heron_namespaces n ON n.database_name = e.database_name
                  AND n.schema_name = e.schema_name
             WHERE e.logical_type = 'ENUM' AND NOT e.internal
             UNION ALL BY NAME  -- the row types of tables and views
             SELECT r.oid + {ROW_TYPE_OID_BASE} AS oid, r.relname AS typname,
                    r.relnamespace AS typnamespace, {BOOTSTRAP_SUPERUSER} AS typowner,
                    -1 AS typlen, false AS typbyval, 'c' AS typtype, 'C' AS typcategory,
                    false AS typispreferred, true AS typisdefined, ',' AS typdelim,
                    r.oid AS typrelid, '-' AS typsubscript, 0 AS typelem, 0 AS typarray,
                    'record_in' AS typinput, 'record_out' AS typoutput,
                    'record_recv' AS typreceive, 'record_send' AS typsend, '-' AS typmodin,
                    '-' AS typmodout, '-' AS typanalyze, 'd' AS typalign, 'x' AS typstorage,
                    false AS typnotnull, 0 AS typbasetype, -1 AS typtypmod, 0 AS typndims,
                    0 AS typcollation
             FROM heron_relations r WHERE r.relkind IN ('r', 'v', 'm')) t""",
        "r", 1247),
    Relation(
        "pg_enum", "oid:oid enumtypid:oid enumsortorder:real enumlabel:name",
        {"oid": "e.type_oid * 1024 + l.position", "enumtypid": "e.type_oid",
         "enumsortorder": "l.position", "enumlabel": "l.label"},
        "duckdb_types() e, unnest(e.labels) WITH ORDINALITY AS l(label, position) "
        "WHERE e.logical_type = 'ENUM' AND NOT e.internal", "r", 3501),
    Relation(
        "pg_index",
        "indexrelid:oid indrelid:oid indnatts:smallint indnkeyatts:smallint indisunique:boolean "
        "indnullsnotdistinct:boolean indisprimary:boolean indisexclusion:boolean "
        "indimmediate:boolean indisclustered:boolean indisvalid:boolean indcheckxmin:boolean "
        "indisready:boolean indislive:boolean indisreplident:boolean indkey:int2vector "
        "indcollation:oidvector indclass:oidvector indoption:int2vector "
        "indexprs:pg_node_tree indpred:pg_node_tree",
        {"indexrelid": "i.oid", "indrelid": "i.relid", "indnatts": "len(i.columns)",
         "indnkeyatts": "len(i.columns)", "indisunique": "i.is_unique",
         "indisprimary": "i.is_primary", "indimmediate": "true", "indisvalid": "true",
         "indisready": "true", "indislive": "true", "indkey": "i.columns",
         "indcollation": "list_transform(i.columns, lambda x: CASE WHEN list_position("
                         "c.collatable, x) > 0 THEN 100 ELSE 0 END)",
         "indclass": "list_transform(i.columns, lambda x: c.opclasses[x])",
         "indoption": "list_transform(i.columns, lambda x: 0)"},
        f"""heron_indexes i LEFT JOIN (
              SELECT a.attrelid,
                     list(a.attnum) FILTER (WHERE a.atttypid IN (25, 1042, 1043, 1009, 1014,
                                                                 1015)) AS collatable,
                     list({_opclass_of('a.atttypid')} ORDER BY a.attnum) AS opclasses
              FROM heron_table_columns a GROUP BY a.attrelid) c
            ON c.attrelid = i.relid""", "r", 2610),
    Relation(
        "pg_constraint",
        "oid:oid conname:name connamespace:oid contype:char condeferrable:boolean "
        "condeferred:boolean convalidated:boolean conrelid:oid contypid:oid conindid:oid "
        "conparentid:oid confrelid:oid confupdtype:char confdeltype:char confmatchtype:char "
        "conislocal:boolean coninhcount:integer connoinherit:boolean conkey:smallint[] "
        "confkey:smallint[] conpfeqop:oid[] conppeqop:oid[] conffeqop:oid[] "
        "confdelsetcols:smallint[] conexclop:oid[] conbin:pg_node_tree",
        {"oid": "c.oid", "conname": "c.name", "connamespace": "c.namespace",
         "contype": "c.contype", "convalidated": "true", "conrelid": "c.relid",
         "conindid": """CASE WHEN c.contype IN ('p', 'u') THEN c.oid
                             WHEN c.contype = 'f' THEN (
                               SELECT min(k.oid) FROM heron_indexes k
                               WHERE k.relid = c.referenced_relid
                                 AND k.columns = c.referenced_columns) ELSE 0 END""",
         "confrelid": "coalesce(c.referenced_relid, 0)",
         "confupdtype": "CASE WHEN c.contype = 'f' THEN 'a' ELSE ' ' END",
         "confdeltype": "CASE WHEN c.contype = 'f' THEN 'a' ELSE ' ' END",
         "confmatchtype": "CASE WHEN c.contype = 'f' THEN 's' ELSE ' ' END",
         "conislocal": "true", "connoinherit": "c.contype <> 'c'", "conkey": "c.columns",
         "confkey": "c.referenced_columns",
         "conbin": "c.expression"},
        "heron_constraints c", "r", 2606),
    Relation(
        "pg_attrdef", "oid:oid adrelid:oid adnum:smallint adbin:pg_node_tree",
        {"oid": f"{CONSTRAINT_OID_BASE} + (a.attrelid * 1024 + a.attnum) % {CONSTRAINT_OID_BASE}",
         "adrelid": "a.attrelid", "adnum": "a.attnum", "adbin": "a.column_default"},
        "heron_table_columns a WHERE a.column_default IS NOT NULL", "r", 2604),
    Relation(
        "pg_description", "objoid:oid classoid:oid objsubid:integer description:text",
        {"objoid": "d.objoid", "classoid": "d.classoid", "objsubid": "d.objsubid",
         "description": "d.description"},
        """(SELECT oid AS objoid, 1259 AS classoid, 0 AS objsubid, comment AS description
            FROM heron_relations WHERE comment IS NOT NULL AND comment <> ''
            UNION ALL
            SELECT attrelid, 1259, attnum, comment FROM heron_table_columns
            WHERE comment IS NOT NULL AND comment <> ''
            UNION ALL  -- PostgreSQL's comment on `public`, unless it was given another
            SELECT oid, 2615, 0, CASE WHEN nspname = 'public' THEN
                                   coalesce(nullif(comment, ''), 'standard public schema')
                                 ELSE comment END
            FROM heron_namespaces WHERE nspname = 'public' OR comment <> '') d""", "r", 2609),
    Relation(
        "pg_am", "oid:oid amname:name amhandler:regproc amtype:char",
        {"oid": "a.oid", "amname": "a.name", "amhandler": "a.handler", "amtype": "a.type"},
        "(VALUES (2, 'heap', 'heap_tableam_handler', 't'), (403, 'btree', 'bthandler', 'i'),"
        " (405, 'hash', 'hashhandler', 'i')) a(oid, name, handler, type)", "r", 2601),
    Relation(
        "pg_opclass",
        "oid:oid opcmethod:oid opcname:name opcnamespace:oid opcowner:oid opcfamily:oid "
        "opcintype:oid opcdefault:boolean opckeytype:oid",
        {"oid": "o.oid", "opcmethod": str(BTREE_AM), "opcname": "o.name",
         "opcnamespace": str(PG_CATALOG_NAMESPACE), "opcowner": str(BOOTSTRAP_SUPERUSER),
         "opcfamily": "o.family", "opcintype": "o.intype", "opcdefault": "true"},
        f"(VALUES {values((o, n, f, t) for t, o, n, f in _OPCLASSES)}) "
        f"o(oid, name, family, intype)", "r", 2616),
    Relation(
        "pg_collation",
        "oid:oid collname:name collnamespace:oid collowner:oid collprovider:char "
        "collisdeterministic:boolean collencoding:integer collcollate:text collctype:text "
        "colliculocale:text collversion:text",
        {"oid": "c.oid", "collname": "c.name", "collnamespace": str(PG_CATALOG_NAMESPACE),
         "collowner": str(BOOTSTRAP_SUPERUSER), "collprovider": "c.provider",
         "collisdeterministic": "true", "collencoding": "-1", "collcollate": "c.locale",
         "collctype": "c.locale"},
        "(VALUES (100, 'default', 'd', NULL), (950, 'C', 'c', 'C'), (951, 'POSIX', 'c', 'POSIX'))"
        " c(oid, name, provider, locale)", "r", 3456),
    Relation(
        "pg_tablespace", "oid:oid spcname:name spcowner:oid spcacl:aclitem[] spcoptions:text[]",
        {"oid": "t.oid", "spcname": "t.name", "spcowner": str(BOOTSTRAP_SUPERUSER)},
        "(VALUES (1663, 'pg_default'), (1664, 'pg_global')) t(oid, name)", "r", 1213),
    Relation(
        "pg_sequence",
        "seqrelid:oid seqtypid:oid seqstart:bigint seqincrement:bigint seqmax:bigint "
        "seqmin:bigint seqcache:bigint seqcycle:boolean",
        {"seqrelid": "sequence_oid", "seqtypid": "20", "seqstart": "start_value",
         "seqincrement": "increment_by", "seqmax": "max_value", "seqmin": "min_value",
         "seqcache": "1", "seqcycle": "cycle"},
        "duckdb_sequences()", "r", 2224),
    Relation(
        "pg_depend",
        "classid:oid objid:oid objsubid:integer refclassid:oid refobjid:oid refobjsubid:integer "
        "deptype:char",
        {"classid": "1259", "objid": "i.oid", "refclassid": "2606",
         "refobjid": "i.constraint_oid", "deptype": "'i'"},
        "heron_indexes i WHERE i.constraint_oid IS NOT NULL", "r", 2608),
    Relation(
        "pg_database",
        "oid:oid datname:name datdba:oid encoding:integer datlocprovider:char "
        "datistemplate:boolean datallowconn:boolean datconnlimit:integer datfrozenxid:xid "
        "datminmxid:xid dattablespace:oid datcollate:text datctype:text daticulocale:text "
        "datcollversion:text datacl:aclitem[]",
        {"oid": "d.database_oid", "datname": "d.database_name",
         "datdba": str(BOOTSTRAP_SUPERUSER), "encoding": "6", "datlocprovider": "'c'",
         "datallowconn": "true", "datconnlimit": "-1", "dattablespace": "1663",
         "datcollate": "'C.UTF-8'", "datctype": "'C.UTF-8'"},
        "duckdb_databases() d WHERE d.database_name = current_database()", "r", 1262),
    Relation(
        "pg_settings",
        "name:text setting:text unit:text category:text short_desc:text extra_desc:text "
        "context:text vartype:text source:text min_val:text max_val:text enumvals:text[] "
        "boot_val:text reset_val:text sourcefile:text sourceline:integer "
        "pending_restart:boolean",
        {"name": "s.name", "setting": "s.setting", "context": "s.context",
         "vartype": "s.vartype", "source": "'default'", "boot_val": "s.setting",
         "reset_val": "s.setting"},
        "heron_settings s"),
    Relation(
        "pg_tables",
        "schemaname:name tablename:name tableowner:name tablespace:name hasindexes:boolean "
        "hasrules:boolean hastriggers:boolean rowsecurity:boolean",
        {"schemaname": "n.nspname", "tablename": "c.relname", "tableowner": "o.name",
         "hasindexes": "c.relhasindex", "hastriggers": "c.relhastriggers"},
        f"pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace {_OWNER} "
        "WHERE c.relkind IN ('r', 'p')"),
    Relation(
        "pg_views", "schemaname:name viewname:name viewowner:name definition:text",
        {"schemaname": "r.nspname", "viewname": "r.relname", "viewowner": "o.name",
         "definition": f"{VIEWDEF_FUNCTION}(r.definition, (SELECT types FROM "
                       f"heron_column_types), false)"},
        f"heron_relations r JOIN heron_roles o ON o.oid = {BOOTSTRAP_SUPERUSER} "
        "WHERE r.relkind = 'v'"),
    Relation(
        "pg_matviews",
        "schemaname:name matviewname:name matviewowner:name tablespace:name hasindexes:boolean "
        "ispopulated:boolean definition:text",
        {"schemaname": "r.nspname", "matviewname": "r.relname", "matviewowner": "o.name",
         "hasindexes": "r.relhasindex",
         "ispopulated": f"v.comment IS DISTINCT FROM '{UNPOPULATED}'",
         "definition": f"{VIEWDEF_FUNCTION}(r.definition, (SELECT types FROM "
                       f"heron_column_types), false)"},
        f"heron_relations r JOIN heron_roles o ON o.oid = {BOOTSTRAP_SUPERUSER} "
        "JOIN heron_namespaces n ON n.oid = r.relnamespace LEFT JOIN duckdb_views() v ON "
        "v.database_name = n.database_name AND v.schema_name = n.schema_name AND "
        f"v.view_name = '{QUERY_VIEW_PREFIX}' || r.relname WHERE r.relkind = 'm'"),
    Relation(
        "pg_indexes",
        "schemaname:name tablename:name indexname:name tablespace:name indexdef:text",
        {"schemaname": "n.nspname", "tablename": "t.relname", "indexname": "i.name",
         "indexdef": "i.definition"},
        "heron_indexes i JOIN heron_relations t ON t.oid = i.relid "
        "JOIN heron_namespaces n ON n.oid = i.namespace"),
    Relation(
        "pg_sequences",
        "schemaname:name sequencename:name sequenceowner:name data_type:regtype "
        "start_value:bigint min_value:bigint max_value:bigint increment_by:bigint "
        "cycle:boolean cache_size:bigint last_value:bigint",
        {"schemaname": "n.nspname", "sequencename": "q.sequence_name",
         "sequenceowner": "o.name", "data_type": "'bigint'",
         "start_value": "q.start_value", "min_value": "q.min_value",
         "max_value": "q.max_value", "increment_by": "q.increment_by", "cycle": "q.cycle",
         "cache_size": "1", "last_value": "q.last_value"},
        "duckdb_sequences() q JOIN heron_namespaces n ON n.database_name = q.database_name "
        f"AND n.schema_name = q.schema_name JOIN heron_roles o ON o.oid = {BOOTSTRAP_SUPERUSER}"),
    Relation(
        "pg_stat_user_tables",
        "relid:oid schemaname:name relname:name seq_scan:bigint seq_tup_read:bigint "
        "idx_scan:bigint idx_tup_fetch:bigint n_tup_ins:bigint n_tup_upd:bigint "
        "n_tup_del:bigint n_tup_hot_upd:bigint n_live_tup:bigint n_dead_tup:bigint "
        "n_mod_since_analyze:bigint n_ins_since_vacuum:bigint last_vacuum:timestamptz "
        "last_autovacuum:timestamptz last_analyze:timestamptz last_autoanalyze:timestamptz "
        "vacuum_count:bigint autovacuum_count:bigint analyze_count:bigint "
        "autoanalyze_count:bigint",
        {"relid": "r.oid", "schemaname": "r.nspname", "relname": "r.relname",
         "n_live_tup": "t.estimated_size"},
        "heron_relations r JOIN duckdb_tables() t ON t.table_oid = r.oid "
        "WHERE r.relkind IN ('r', 'm')"),
    Relation(
        "pg_roles",
        "rolname:name rolsuper:boolean rolinherit:boolean rolcreaterole:boolean "
        "rolcreatedb:boolean rolcanlogin:boolean rolreplication:boolean rolconnlimit:integer "
        "rolpassword:text rolvaliduntil:timestamptz rolbypassrls:boolean rolconfig:text[] "
        "oid:oid",
        {"rolname": "r.name", "rolsuper": "r.superuser", "rolinherit": "true",
         "rolcreaterole": "r.superuser", "rolcreatedb": "r.superuser",
         "rolcanlogin": "r.login", "rolreplication": "r.superuser", "rolconnlimit": "-1",
         "rolpassword": "'********'", "rolbypassrls": "r.superuser", "oid": "r.oid"},
        "heron_roles r"),
    Relation(
        "pg_user",
        "usename:name usesysid:oid usecreatedb:boolean usesuper:boolean userepl:boolean "
        "usebypassrls:boolean passwd:text valuntil:timestamptz useconfig:text[]",
        {"usename": "rolname", "usesysid": "oid", "usecreatedb": "rolcreatedb",
         "usesuper": "rolsuper", "userepl": "rolreplication", "usebypassrls": "rolbypassrls",
         "passwd": "'********'"},
        "pg_roles WHERE rolcanlogin"),
    Relation(
        "pg_auth_members", "roleid:oid member:oid grantor:oid admin_option:boolean",
        {"roleid": "m.granted", "member": "r.oid", "grantor": str(BOOTSTRAP_SUPERUSER)},
        "heron_roles r, unnest(r.member_of) AS m(granted)", "r", 1261),
    Relation("pg_inherits", "inhrelid:oid inhparent:oid inhseqno:integer "
             "inhdetachpending:boolean", kind="r", oid=2611),
    Relation("pg_policy", "oid:oid polname:name polrelid:oid polcmd:char polpermissive:boolean "
             "polroles:oid[] polqual:pg_node_tree polwithcheck:pg_node_tree", kind="r", oid=3256),
    Relation("pg_statistic_ext", "oid:oid stxrelid:oid stxname:name stxnamespace:oid "
             "stxowner:oid stxstattarget:integer stxkeys:int2vector stxkind:char[] "
             "stxexprs:pg_node_tree", kind="r", oid=3381),
    Relation("pg_publication", "oid:oid pubname:name pubowner:oid puballtables:boolean "
             "pubinsert:boolean pubupdate:boolean pubdelete:boolean pubtruncate:boolean "
             "pubviaroot:boolean", kind="r", oid=6104),
    Relation("pg_publication_namespace", "oid:oid pnpubid:oid pnnspid:oid", kind="r", oid=6237),
    Relation("pg_publication_rel", "oid:oid prpubid:oid prrelid:oid prqual:pg_node_tree "
             "prattrs:int2vector", kind="r", oid=6106),
    Relation("pg_range", "rngtypid:oid rngsubtype:oid rngmultitypid:oid rngcollation:oid "
             "rngsubopc:oid rngcanonical:regproc rngsubdiff:regproc", kind="r", oid=3541),
    Relation("pg_trigger", "oid:oid tgrelid:oid tgparentid:oid tgname:name tgfoid:oid "
             "tgtype:smallint tgenabled:char tgisinternal:boolean tgconstrrelid:oid "
             "tgconstrindid:oid tgconstraint:oid tgdeferrable:boolean tginitdeferred:boolean "
             "tgnargs:smallint tgattr:int2vector tgargs:bytea tgqual:pg_node_tree "
             "tgoldtable:name tgnewtable:name", kind="r", oid=2620),
    Relation("pg_rewrite", "oid:oid rulename:name ev_class:oid ev_type:char ev_enabled:char "
             "is_instead:boolean ev_qual:pg_node_tree ev_action:pg_node_tree", kind="r",
             oid=2618),
    Relation("pg_foreign_table", "ftrelid:oid ftserver:oid ftoptions:text[]", kind="r",
             oid=3118),
    Relation("pg_foreign_data_wrapper", "oid:oid fdwname:name fdwowner:oid fdwhandler:oid "
             "fdwvalidator:oid fdwacl:aclitem[] fdwoptions:text[]", kind="r", oid=2328),
    Relation("pg_foreign_server", "oid:oid srvname:name srvowner:oid srvfdw:oid srvtype:text "
             "srvversion:text srvacl:aclitem[] srvoptions:text[]", kind="r", oid=1417),
    Relation("pg_partitioned_table", "partrelid:oid partstrat:char partnatts:smallint "
             "partdefid:oid partattrs:int2vector partclass:oidvector partcollation:oidvector "
             "partexprs:pg_node_tree", kind="r", oid=3350),
    Relation(  # the extensions Heron provides (`extensions`)
        "pg_extension", "oid:oid extname:name extowner:oid extnamespace:oid "
        "extrelocatable:boolean extversion:text extconfig:oid[] extcondition:text[]",
        {"oid": "e.oid", "extname": "e.name", "extowner": str(BOOTSTRAP_SUPERUSER),
         "extnamespace": "(SELECT n.oid FROM heron_namespaces n WHERE n.nspname = e.schema)",
         "extrelocatable": "e.name <> 'plpgsql'", "extversion": "e.version"},
        f"(VALUES {values(extensions.ROWS)}) e(oid, name, schema, version)", "r", 3079),
    Relation("pg_event_trigger", "oid:oid evtname:name evtevent:name evtowner:oid evtfoid:oid "
             "evtenabled:char evttags:text[]", kind="r", oid=3466),
    Relation("pg_operator", "oid:oid oprname:name oprnamespace:oid oprowner:oid oprkind:char "
             "oprcanmerge:boolean oprcanhash:boolean oprleft:oid oprright:oid oprresult:oid "
             "oprcom:oid oprnegate:oid oprcode:regproc oprrest:regproc oprjoin:regproc",
             kind="r", oid=2617),
    Relation("pg_conversion", "oid:oid conname:name connamespace:oid conowner:oid "
             "conforencoding:integer contoencoding:integer conproc:regproc condefault:boolean",
             kind="r", oid=2607),
    Relation("pg_language", "oid:oid lanname:name lanowner:oid lanispl:boolean "
             "lanpltrusted:boolean lanplcallfoid:oid laninline:oid lanvalidator:oid "
             "lanacl:aclitem[]", kind="r", oid=2612),
    Relation("pg_cast", "oid:oid castsource:oid casttarget:oid castfunc:oid castcontext:char "
             "castmethod:char", kind="r", oid=2605),
    Relation("pg_shdescription", "objoid:oid classoid:oid description:text", kind="r",
             oid=2396),
    Relation("pg_seclabel", "objoid:oid classoid:oid objsubid:integer provider:text "
             "label:text", kind="r", oid=3596),
    Relation("pg_shseclabel", "objoid:oid classoid:oid provider:text label:text", kind="r",
             oid=3592),
    Relation("pg_init_privs", "objoid:oid classoid:oid objsubid:integer privtype:char "
             "initprivs:aclitem[]", kind="r", oid=3394),
    Relation("pg_default_acl", "oid:oid defaclrole:oid defaclnamespace:oid "
             "defaclobjtype:char defaclacl:aclitem[]", kind="r", oid=826),
    Relation("pg_subscription", "oid:oid subdbid:oid subskiplsn:pg_lsn subname:name "
             "subowner:oid subenabled:boolean subbinary:boolean substream:boolean "
             "subtwophasestate:char subdisableonerr:boolean subconninfo:text subslotname:name "
             "subsynccommit:text subpublications:text[]", kind="r", oid=6100),
    Relation("pg_ts_config", "oid:oid cfgname:name cfgnamespace:oid cfgowner:oid "
             "cfgparser:oid", kind="r", oid=3602),
    Relation("pg_ts_dict", "oid:oid dictname:name dictnamespace:oid dictowner:oid "
             "dicttemplate:oid dictinitoption:text", kind="r", oid=3600),
    Relation("pg_ts_parser", "oid:oid prsname:name prsnamespace:oid prsstart:regproc "
             "prstoken:regproc prsend:regproc prsheadline:regproc prslextype:regproc",
             kind="r", oid=3601),
    Relation("pg_ts_template", "oid:oid tmplname:name tmplnamespace:oid tmplinit:regproc "
             "tmpllexize:regproc", kind="r", oid=3764),
    Relation("pg_opfamily", "oid:oid opfmethod:oid opfname:name opfnamespace:oid opfowner:oid",
             kind="r", oid=2753),
    Relation("pg_user_mapping", "oid:oid umuser:oid umserver:oid umoptions:text[]", kind="r",
             oid=1418),
    Relation("pg_user_mappings", "umid:oid srvid:oid srvname:name umuser:oid usename:name "
             "umoptions:text[]"),
    Relation("pg_db_role_setting", "setdatabase:oid setrole:oid setconfig:text[]", kind="r",
             oid=2964),
)

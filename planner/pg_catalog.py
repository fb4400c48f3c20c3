"""The PostgreSQL-catalog shim: catalog queries from PostgreSQL clients, answered by DuckDB.

Contract: `register_roles(con, roles)` makes the roles the catalog lists (pg_roles, pg_user,
pg_auth_members, pg_get_userbyid, ::regrole) those `roles()` returns at each statement.
`install(con, user)` creates, once per DuckDB connection and outside any transaction,
the TEMP macros and TEMP views that stand in for what DuckDB's own `pg_catalog` lacks or answers
differently (`pg_get_userbyid`, `format_type` with PostgreSQL's type names, `version()`,
`current_setting`, empty `pg_policy`/`pg_inherits`/..., `pg_attribute` with the type OIDs Heron
sends on the wire, ...). TEMP objects are per connection and shadow the built-in ones of the same
unqualified name. `publish_settings(con, settings)` makes the session's run-time settings visible
to `current_setting()` (a DuckDB session variable, not transactional, like Heron's SET).
`rewrite(sql)` returns the statement DuckDB should run: statements that mention no catalog
vocabulary (a cheap regex test) come back unchanged and unparsed; the others are parsed with
sqlglot's postgres dialect, rewritten by the tables below (function qualifiers `pg_catalog.`
dropped, `COLLATE pg_catalog.default` dropped, `OPERATOR(pg_catalog.~)` made a regex match,
`::regclass` and friends made look-ups, shimmed relations unqualified so the TEMP views answer)
and printed for DuckDB; when no rule applied, the original text comes back. A statement sqlglot
cannot parse comes back unchanged, so DuckDB reports its own error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import pg_activity, pg_types

VERSION = "PostgreSQL {server_version} on x86_64-pc-linux-gnu, 64-bit"
SETTINGS_VARIABLE = "heron_settings"
ROLES_FUNCTION = "heron_roles"  # a Python function: the roles as JSON, read at each call
_ROLE_JSON = ('[{"name": "VARCHAR", "oid": "BIGINT", "superuser": "BOOLEAN", '
              '"login": "BOOLEAN", "member_of": "BIGINT[]"}]')


@dataclass(frozen=True, slots=True)
class RoleRow:
    """What the catalog shows of a role (pg_roles): never its password."""

    name: str
    oid: int
    superuser: bool = False
    login: bool = False
    member_of: tuple[int, ...] = ()  # OIDs of the roles it was granted

# -- rewrites ---------------------------------------------------------------------------------

_TRIGGER = re.compile(
    r"pg_catalog|information_schema|\bOPERATOR\s*\(|"
    r"::\s*\"?(?:regclass|regtype|regnamespace|regproc|regprocedure|regrole)\b",
    re.IGNORECASE,
)
_CATALOG_SCHEMAS = {"pg_catalog"}
_DEFAULT_COLLATIONS = {"default", "c", "posix"}

# OPERATOR(pg_catalog.op) spellings -> the expression DuckDB runs.
_OPERATORS: dict[str, Callable[[exp.Expression, exp.Expression], exp.Expression]] = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "!~": lambda a, b: exp.not_(exp.RegexpLike(this=a, expression=b)),
    "~*": lambda a, b: exp.RegexpILike(this=a, expression=b),
    "!~*": lambda a, b: exp.not_(exp.RegexpILike(this=a, expression=b)),
    "~~": lambda a, b: exp.Like(this=a, expression=b),
    "!~~": lambda a, b: exp.not_(exp.Like(this=a, expression=b)),
    "~~*": lambda a, b: exp.ILike(this=a, expression=b),
    "!~~*": lambda a, b: exp.not_(exp.ILike(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "<": lambda a, b: exp.LT(this=a, expression=b),
    ">": lambda a, b: exp.GT(this=a, expression=b),
    "<=": lambda a, b: exp.LTE(this=a, expression=b),
    ">=": lambda a, b: exp.GTE(this=a, expression=b),
}

# Casts to object-identifier types: (value is a string literal -> its OID, else -> its name).
_OID_CASTS = {
    "regclass": ("heron_regclass_oid", "heron_regclass_name"),
    "regtype": ("heron_regtype_oid", "heron_regtype_name"),
    "regnamespace": ("heron_regnamespace_oid", "heron_regnamespace_name"),
    "regproc": ("heron_regproc_oid", "heron_regproc_name"),
    "regprocedure": ("heron_regproc_oid", "heron_regproc_name"),
    "regrole": ("heron_regrole_oid", "heron_regrole_name"),
}
# Casts to other PostgreSQL type names DuckDB does not know.
_TYPE_NAMES = {"name": "VARCHAR", "char": "VARCHAR", "\"char\"": "VARCHAR", "aclitem": "VARCHAR",
               "pg_node_tree": "VARCHAR", "int2vector": "SMALLINT[]", "oidvector": "BIGINT[]",
               "xid": "BIGINT", "cid": "BIGINT", "tid": "VARCHAR"}
# Spellings sqlglot cannot parse, fixed in the text first (sqlglot 30 fails on `oid[]`).
_TEXT_FIXES = ((re.compile(r"\boid\s*\[\s*\]", re.IGNORECASE), "bigint[]"),)
# A PostgreSQL array literal written as text, e.g. '{0}' (DuckDB spells lists '[0]').
_ARRAY_TEXT = re.compile(r"^\{([\w\s,.-]*)\}$")


def rewrite(sql: str) -> str:
    """The statement DuckDB should run for `sql` (see the module docstring)."""
    if not _TRIGGER.search(sql):
        return sql
    text = sql
    for pattern, replacement in _TEXT_FIXES:
        text = pattern.sub(replacement, text)
    try:
        tree = sqlglot.parse_one(text, read="postgres")
    except SqlglotError:
        return sql
    changed = text != sql
    for node in reversed(list(tree.walk(bfs=False))):  # children before their parents
        new = _rewrite_node(node)
        if new is not node:
            changed = True
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return tree.sql(dialect="duckdb") if changed else sql


def _rewrite_node(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Dot) and _is_catalog(node.this) and isinstance(node.expression,
                                                                           exp.Func):
        return node.expression  # pg_catalog.f(...) -> f(...): TEMP macros shadow built-ins
    if isinstance(node, exp.Table) and node.db.lower() in _CATALOG_SCHEMAS and not node.catalog:
        if isinstance(node.this, exp.Func):  # FROM pg_catalog.generate_series(...)
            return exp.Table(this=node.this, alias=node.args.get("alias"))
        if node.name.lower() in RELATIONS:
            return exp.Table(this=exp.to_identifier(node.name.lower()), alias=node.args.get(
                "alias"))
        return node
    if isinstance(node, exp.Column) and node.db.lower() in _CATALOG_SCHEMAS and (
            node.table.lower() in RELATIONS):  # pg_catalog.pg_class.relname -> pg_class.relname
        return exp.column(node.this, table=node.args["table"])
    if isinstance(node, exp.Collate) and _is_default_collation(node.expression):
        return node.this
    if isinstance(node, exp.Operator):
        op = str(node.args.get("operator", "")).split(".")[-1].strip()
        if op in _OPERATORS:
            return _OPERATORS[op](node.this, node.expression)
        return node
    if isinstance(node, exp.Cast):
        return _rewrite_cast(node)
    if isinstance(node, exp.EQ | exp.NEQ):
        return _array_text(node)
    return node


def _is_catalog(node: exp.Expression) -> bool:
    return isinstance(node, exp.Identifier | exp.Column | exp.Var) and (
        node.name.lower() in _CATALOG_SCHEMAS)


def _is_default_collation(node: exp.Expression) -> bool:
    if isinstance(node, exp.Column | exp.Identifier | exp.Var | exp.Literal):
        table = node.args.get("table") if isinstance(node, exp.Column) else None
        return node.name.lower() in _DEFAULT_COLLATIONS and (
            table is None or table.name.lower() in _CATALOG_SCHEMAS)
    return False


def _type_name(to: exp.Expression) -> str | None:
    """The bare PostgreSQL name of a cast's target type ('regclass', 'text', ...)."""
    if isinstance(to, exp.ObjectIdentifier):
        return to.name.lower()
    if isinstance(to, exp.DataType) and to.this == exp.DataType.Type.USERDEFINED:
        kind = to.args.get("kind")
        if isinstance(kind, exp.Dot):
            return kind.expression.name.lower() if _is_catalog(kind.this) else None
        if kind is not None:
            return kind.name.lower()
    return None


def _rewrite_cast(node: exp.Cast) -> exp.Expression:
    to = node.args["to"]
    if isinstance(to, exp.DataType) and to.this == exp.DataType.Type.ARRAY:
        elements = to.expressions
        if elements and (name := _type_name(elements[0])) is not None:
            target = _TYPE_NAMES.get(name, name)
            return exp.cast(node.this, exp.DataType.build(f"{target}[]", dialect="duckdb"))
        return node
    name = _type_name(to)
    if name is None:
        return node
    if name in _OID_CASTS:
        by_text, by_oid = _OID_CASTS[name]
        function = by_text if isinstance(node.this, exp.Literal) and node.this.is_string else (
            by_oid)
        return exp.Anonymous(this=function, expressions=[node.this])
    target = _TYPE_NAMES.get(name, name)
    return exp.cast(node.this, exp.DataType.build(target, dialect="duckdb"))


def _array_text(node: exp.Binary) -> exp.Expression:
    """`col = '{0}'`: PostgreSQL reads the text as an array; DuckDB needs a list."""
    right = node.expression
    if isinstance(right, exp.Literal) and right.is_string and (m := _ARRAY_TEXT.match(right.name)):
        items = [i.strip() for i in m[1].split(",") if i.strip()]
        values = [exp.Literal.number(i) if re.fullmatch(r"-?\d+", i) else exp.Literal.string(i)
                  for i in items]
        return node.__class__(this=node.this, expression=exp.Array(expressions=values))
    return node


# -- TEMP macros ------------------------------------------------------------------------------

# PostgreSQL's type OID -> format_type's name (arrays: the element's name + "[]").
PG_TYPE_NAMES = {t.oid: t.display_name for t in pg_types.ALL if t is not pg_types.UNKNOWN}
ARRAY_OIDS = {t.oid: t.array_oid for t in pg_types.ALL if t.array_oid}
# DuckDB's column type (without its parameters) -> the PostgreSQL type OID Heron sends it as
# (server/encode.py decides the wire types; this table mirrors it for the catalog).
DUCKDB_TYPE_OIDS = {
    "BOOLEAN": 16, "TINYINT": 21, "SMALLINT": 21, "UTINYINT": 21, "INTEGER": 23, "USMALLINT": 23,
    "BIGINT": 20, "UINTEGER": 20, "UBIGINT": 1700, "HUGEINT": 1700, "UHUGEINT": 1700,
    "FLOAT": 700, "DOUBLE": 701, "DECIMAL": 1700, "VARCHAR": 25, "BLOB": 17, "DATE": 1082,
    "TIME": 1083, "TIMESTAMP": 1114, "TIMESTAMP_S": 1114, "TIMESTAMP_MS": 1114,
    "TIMESTAMP_NS": 1114, "TIMESTAMP WITH TIME ZONE": 1184, "INTERVAL": 1186, "UUID": 2950,
    "JSON": 114,
}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _literal(value: object) -> str:
    return str(value) if isinstance(value, int) else _quote(str(value))


def _values(rows: Mapping[object, object]) -> str:
    return ", ".join(f"({_literal(k)}, {_literal(v)})" for k, v in rows.items())


def _type_names() -> dict[int, str]:
    names = dict(PG_TYPE_NAMES)
    names.update({array: PG_TYPE_NAMES[element] + "[]" for element, array in ARRAY_OIDS.items()})
    return names


def _case(arg: str, rows: Mapping[object, object], default: str = "NULL") -> str:
    """A CASE over a Python mapping: no subquery, so no column of the caller can be captured."""
    whens = " ".join(f"WHEN {_literal(k)} THEN {_literal(v)}" for k, v in rows.items())
    return f"CASE {arg} {whens} ELSE {default} END"


def _lookup(source: str, key: str, value: str, arg: str) -> str:
    """The `value` of the first row of `source` whose `key` equals `arg`. The subquery does not
    mention `arg` (macros substitute arguments textually, so a correlated subquery could capture
    a caller's column of the same name); DuckDB runs it once per statement."""
    return (f"list_filter((SELECT list({{'k': {key}, 'v': {value}}}) FROM {source}), "
            f"lambda heron_x: heron_x.k = {arg})[1].v")


_CLASSES = ("pg_catalog.pg_class heron_c LEFT JOIN pg_catalog.pg_namespace heron_n "
            "ON heron_n.oid = heron_c.relnamespace")


def _format_type() -> str:
    # typmod: numeric ((precision << 16) | scale) + 4; character types length + 4.
    fallback = _lookup("pg_catalog.pg_type heron_t", "heron_t.oid", "heron_t.typname", "type_arg")
    return f"""
        CASE WHEN type_arg IS NULL THEN NULL ELSE
          coalesce({_case("type_arg", _type_names())}, {fallback}, '???')
          || CASE
               WHEN type_arg IN (1700, 1231) AND typmod_arg >= 4 THEN
                 '(' || (((typmod_arg - 4) >> 16) & 65535) || ','
                     || ((typmod_arg - 4) & 65535) || ')'
               WHEN type_arg IN (1042, 1043, 1014, 1015) AND typmod_arg >= 4 THEN
                 '(' || (typmod_arg - 4) || ')'
               ELSE '' END
        END"""


def _macros(user: str, server_version: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """Macro name -> its overloads as (parameters, body)."""
    quoted_user = _quote(user)
    version = _quote(VERSION.format(server_version=server_version))
    settings = f"getvariable('{SETTINGS_VARIABLE}')[lower(name_arg)]"
    unknown = "error('unrecognized configuration parameter \"' || name_arg || '\"')"
    viewdef = _lookup("duckdb_views() heron_v", "heron_v.view_oid", "heron_v.sql", "view_arg")
    qualified = ("CASE WHEN heron_n.nspname = current_schema() OR heron_n.nspname IS NULL "
                 "THEN heron_c.relname ELSE heron_n.nspname || '.' || heron_c.relname END")
    no_type = "NULL::VARCHAR"
    return {
        "version": (("", version),),
        "current_setting": (
            ("name_arg", f"coalesce({settings}, {unknown})"),
            ("name_arg, missing_ok_arg",
             f"CASE WHEN missing_ok_arg THEN {settings} ELSE coalesce({settings}, {unknown}) END"),
        ),
        # No side effect: Heron's settings change through SET (the value is echoed).
        "set_config": (("name_arg, value_arg, local_arg", "value_arg"),),
        # DuckDB answers 'duckdb'; the session's role is the PostgreSQL answer.
        "current_user": (("", quoted_user),),
        "session_user": (("", quoted_user),),
        "current_role": (("", quoted_user),),
        "pg_get_userbyid": (("role_arg", "coalesce(" + _lookup(
            "pg_roles heron_r", "heron_r.oid", "heron_r.rolname", "role_arg")
            + ", 'unknown (OID=' || role_arg || ')')"),),
        # Visible: the relation's schema is on DuckDB's search path (objects without a schema
        # row, TEMP ones and DuckDB's own, count as visible).
        "pg_table_is_visible": (("rel_arg", "coalesce(list_contains(current_schemas(true), "
                                 + _lookup(_CLASSES, "heron_c.oid", "heron_n.nspname", "rel_arg")
                                 + "), true)"),),
        "pg_type_is_visible": (("type_arg", "true"),),
        "pg_function_is_visible": (("function_arg", "true"),),
        "format_type": (("type_arg, typmod_arg", _format_type()),),
        "pg_get_expr": (("expr_arg, relation_arg", "expr_arg::VARCHAR"),
                        ("expr_arg, relation_arg, pretty_arg", "expr_arg::VARCHAR")),
        "pg_get_viewdef": (("view_arg", viewdef), ("view_arg, pretty_arg", viewdef)),
        "pg_encoding_to_char": (("encoding_arg", "'UTF8'"),),
        "pg_get_indexdef": tuple((params, _lookup(
            "pg_index heron_i", "heron_i.indexrelid", "heron_i.heron_definition", "index_arg"))
            for params in ("index_arg", "index_arg, column_arg, pretty_arg")),
        "pg_get_constraintdef": tuple((params, _lookup(
            "pg_constraint heron_k", "heron_k.oid", "heron_k.heron_definition", "con_arg"))
            for params in ("con_arg", "con_arg, pretty_arg")),
        "pg_partition_ancestors": (("rel_arg", "rel_arg"),),  # no partitions: itself
        "pg_get_function_result": (("function_arg", no_type),),
        "pg_get_function_arguments": (("function_arg", no_type),),
        "pg_get_function_identity_arguments": (("function_arg", no_type),),
        "pg_get_statisticsobjdef_columns": (("stat_arg", no_type),),
        "pg_relation_is_publishable": (("rel_arg", "false"),),
        "pg_table_size": (("rel_arg", "NULL::BIGINT"),),
        "pg_total_relation_size": (("rel_arg", "NULL::BIGINT"),),
        "pg_relation_size": (("rel_arg", "NULL::BIGINT"),),
        "array_upper": (("arr_arg, dim_arg",
                         "CASE WHEN dim_arg = 1 AND len(arr_arg) > 0 THEN len(arr_arg) END"),),
        "array_lower": (("arr_arg, dim_arg",
                         "CASE WHEN dim_arg = 1 AND len(arr_arg) > 0 THEN 1 END"),),
        # No advisory locks can be held, so releasing them all does nothing (asyncpg's pool runs
        # it whenever it takes a connection back).
        "pg_advisory_unlock_all": (("", "NULL"),),
        # ::regclass and friends (see _OID_CASTS): text -> OID, OID -> display name.
        "heron_regclass_oid": (("name_arg", f"""list_filter((
            SELECT list({{'k': [heron_n.nspname || '.' || heron_c.relname, heron_c.relname],
                         'v': heron_c.oid}} ORDER BY heron_n.nspname <> current_schema())
            FROM {_CLASSES} WHERE heron_n.nspname IS NOT NULL),
            lambda heron_x: list_contains(heron_x.k, replace(name_arg, '"', '')))[1].v"""),),
        "heron_regclass_name": (("rel_arg", _lookup(_CLASSES, "heron_c.oid", qualified,
                                                    "rel_arg")),),
        "heron_regtype_oid": (("name_arg", _case("lower(name_arg)", {
            v: k for k, v in _type_names().items()}, _lookup(
                "pg_catalog.pg_type heron_t", "heron_t.typname", "heron_t.oid",
                "lower(name_arg)"))),),
        "heron_regtype_name": (("type_arg", "format_type(type_arg, NULL)"),),
        # to_regtype(name): the type's OID, NULL when there is none (psycopg's TypeInfo.fetch).
        "to_regtype": (("name_arg", "heron_regtype_oid(name_arg)"),),
        "heron_regnamespace_oid": (("name_arg", _lookup(
            "pg_catalog.pg_namespace heron_n", "heron_n.nspname", "heron_n.oid", "name_arg")),),
        "heron_regnamespace_name": (("ns_arg", _lookup(
            "pg_catalog.pg_namespace heron_n", "heron_n.oid", "heron_n.nspname", "ns_arg")),),
        "heron_regproc_oid": (("name_arg", _lookup(
            "pg_catalog.pg_proc heron_p", "heron_p.proname", "heron_p.oid", "name_arg")),),
        "heron_regproc_name": (("proc_arg", _lookup(
            "pg_catalog.pg_proc heron_p", "heron_p.oid", "heron_p.proname", "proc_arg")),),
        "heron_regrole_oid": (("name_arg", _lookup("pg_roles heron_r", "heron_r.rolname",
                                                   "heron_r.oid", "name_arg")),),
        "heron_regrole_name": (("role_arg", _lookup("pg_roles heron_r", "heron_r.oid",
                                                    "heron_r.rolname", "role_arg")),),
    }


# -- TEMP views -------------------------------------------------------------------------------


def _empty(columns: str) -> str:
    return f"SELECT * FROM (SELECT {columns}) WHERE false"


def _attribute() -> str:
    oids = dict(DUCKDB_TYPE_OIDS)
    oids.update({f"{name}[]": ARRAY_OIDS[oid] for name, oid in DUCKDB_TYPE_OIDS.items()
                 if oid in ARRAY_OIDS})
    return f"""
        SELECT a.* REPLACE (
            coalesce(m.pg_oid, CASE WHEN c.data_type IS NOT NULL THEN 25 END, a.atttypid)
              AS atttypid,
            CASE WHEN m.pg_oid = 1700 AND c.numeric_precision IS NOT NULL
                 THEN ((c.numeric_precision << 16) | c.numeric_scale) + 4
                 ELSE -1 END AS atttypmod)
        FROM pg_catalog.pg_attribute a
        LEFT JOIN duckdb_columns() c ON c.table_oid = a.attrelid AND c.column_index = a.attnum
        LEFT JOIN (VALUES {_values(oids)}) m(duckdb_type, pg_oid)
          ON m.duckdb_type = regexp_replace(c.data_type, '\\([^)]*\\)', '', 'g')"""


# Constraints under PostgreSQL's names and definitions (DuckDB names a primary key
# <table>_<columns>_pkey and a foreign key <table>_<columns>_<referenced columns>_fkey).
_CONSTRAINTS = """
    SELECT c.table_oid * 1000000 + c.constraint_index AS oid, c.table_oid AS relid,
           c.schema_oid AS namespace, c.schema_name, c.table_name,
           CASE c.constraint_type WHEN 'PRIMARY KEY' THEN c.table_name || '_pkey'
                WHEN 'FOREIGN KEY' THEN c.table_name || '_'
                     || array_to_string(c.constraint_column_names, '_') || '_fkey'
                ELSE c.constraint_name END AS name,
           CASE c.constraint_type WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u'
                WHEN 'FOREIGN KEY' THEN 'f' WHEN 'CHECK' THEN 'c' END AS contype,
           list_transform(c.constraint_column_indexes, lambda x: x + 1) AS columns,
           c.constraint_column_names AS column_names, r.table_oid AS referenced_relid,
           list_transform(c.referenced_column_names, lambda n: list_position(rc.names, n))
             AS referenced_columns,
           CASE c.constraint_type
                WHEN 'PRIMARY KEY' THEN 'PRIMARY KEY ('
                     || array_to_string(c.constraint_column_names, ', ') || ')'
                WHEN 'UNIQUE' THEN 'UNIQUE (' || array_to_string(c.constraint_column_names, ', ')
                     || ')'
                WHEN 'FOREIGN KEY' THEN 'FOREIGN KEY ('
                     || array_to_string(c.constraint_column_names, ', ') || ') REFERENCES '
                     || c.referenced_table || '('
                     || array_to_string(c.referenced_column_names, ', ') || ')'
                ELSE 'CHECK (' || c.expression || ')' END AS definition,
           c.expression
    FROM duckdb_constraints() c
    LEFT JOIN duckdb_tables() r ON r.database_name = c.database_name
         AND r.schema_name = c.schema_name AND r.table_name = c.referenced_table
    LEFT JOIN heron_column_names rc ON rc.table_oid = r.table_oid
    WHERE c.constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK')"""
# Indexes: those of primary keys and unique constraints (DuckDB keeps them inside the table,
# PostgreSQL lists them as relations) and those made by CREATE INDEX.
_INDEXES = """
    SELECT oid, relid, namespace, schema_name, table_name, name, contype = 'p' AS is_primary,
           true AS is_unique, columns, column_names
    FROM heron_constraints WHERE contype IN ('p', 'u')
    UNION ALL
    SELECT i.index_oid, i.table_oid, i.schema_oid, i.schema_name, i.table_name, i.index_name,
           false, i.is_unique,
           list_transform(e.names, lambda n: list_position(tc.names, n)), e.names
    FROM duckdb_indexes() i JOIN heron_column_names tc ON tc.table_oid = i.table_oid,
         LATERAL (SELECT list_transform(string_split(trim(i.expressions, '[]'), ','),
                                        lambda n: trim(trim(n), '"')) AS names) e"""


def _relations() -> dict[str, str]:
    return {
        "heron_column_names": """
            SELECT table_oid, list(column_name ORDER BY column_index) AS names
            FROM duckdb_columns() GROUP BY table_oid""",
        "heron_constraints": _CONSTRAINTS,
        "heron_indexes": _INDEXES,
        "pg_class": """
            WITH base AS (
              SELECT * REPLACE (CASE WHEN relkind IN ('r', 'm') THEN 2 ELSE relam END AS relam,
                                coalesce(relreplident, 'd') AS relreplident,
                                10::BIGINT AS relowner),  -- the bootstrap superuser owns all
                     false AS relforcerowsecurity
              FROM pg_catalog.pg_class)
            SELECT * FROM base
            UNION ALL  -- constraint indexes, as relations like the table they index
            SELECT t.* REPLACE (i.oid AS oid, i.name AS relname, 'i' AS relkind, 403 AS relam,
                                len(i.columns) AS relnatts, false AS relhasindex)
            FROM base t JOIN heron_indexes i ON i.relid = t.oid
            WHERE NOT EXISTS (SELECT 1 FROM base b WHERE b.oid = i.oid)""",
        "pg_constraint": """
            SELECT oid, name AS conname, namespace AS connamespace, contype,
                   false AS condeferrable, false AS condeferred, true AS convalidated,
                   relid AS conrelid, 0::BIGINT AS contypid,
                   CASE WHEN contype IN ('p', 'u') THEN oid
                        WHEN contype = 'f' THEN (SELECT min(k.oid) FROM heron_indexes k
                             WHERE k.relid = c.referenced_relid
                               AND k.columns = c.referenced_columns)
                        ELSE 0 END::BIGINT AS conindid,
                   0::BIGINT AS conparentid, coalesce(referenced_relid, 0)::BIGINT AS confrelid,
                   CASE WHEN contype = 'f' THEN 'a' ELSE ' ' END AS confupdtype,
                   CASE WHEN contype = 'f' THEN 'a' ELSE ' ' END AS confdeltype,
                   CASE WHEN contype = 'f' THEN 's' ELSE ' ' END AS confmatchtype,
                   true AS conislocal, 0 AS coninhcount, true AS connoinherit,
                   columns::SMALLINT[] AS conkey, referenced_columns::SMALLINT[] AS confkey,
                   NULL::BIGINT[] AS conpfeqop, NULL::BIGINT[] AS conppeqop,
                   NULL::BIGINT[] AS conffeqop, NULL::BIGINT[] AS conexclop,
                   expression AS conbin, definition AS heron_definition
            FROM heron_constraints c""",
        "pg_index": """
            SELECT oid AS indexrelid, relid AS indrelid, len(columns)::SMALLINT AS indnatts,
                   len(columns)::SMALLINT AS indnkeyatts, is_unique AS indisunique,
                   is_primary AS indisprimary, false AS indisexclusion, true AS indimmediate,
                   false AS indisclustered, true AS indisvalid, false AS indcheckxmin,
                   true AS indisready, true AS indislive, false AS indisreplident,
                   columns::SMALLINT[] AS indkey, NULL::BIGINT[] AS indcollation,
                   NULL::BIGINT[] AS indclass, list_transform(columns, lambda x: 0)::SMALLINT[]
                   AS indoption, NULL::VARCHAR AS indexprs, NULL::VARCHAR AS indpred,
                   'CREATE ' || CASE WHEN is_unique THEN 'UNIQUE ' ELSE '' END || 'INDEX '
                   || name || ' ON ' || schema_name || '.' || table_name || ' USING btree ('
                   || array_to_string(column_names, ', ') || ')' AS heron_definition
            FROM heron_indexes""",
        "pg_indexes": """
            SELECT schema_name AS schemaname, table_name AS tablename, name AS indexname,
                   NULL::VARCHAR AS tablespace, i.heron_definition AS indexdef
            FROM heron_indexes x JOIN pg_index i ON i.indexrelid = x.oid""",
        "pg_am": "SELECT * FROM pg_catalog.pg_am UNION ALL SELECT 2, 'heap', NULL, 't'",
        "pg_attribute": _attribute(),
        # DuckDB's default schema `main` is not PostgreSQL's: shown only while it holds objects.
        "pg_namespace": """
            SELECT * REPLACE (10::BIGINT AS nspowner) FROM pg_catalog.pg_namespace n
            WHERE nspname <> 'main' OR EXISTS (SELECT 1 FROM pg_catalog.pg_class c
                                               WHERE c.relnamespace = n.oid)
            UNION ALL
            SELECT oid, schema_name, 10, NULL FROM duckdb_schemas()
            WHERE database_name = 'system' AND schema_name IN ('pg_catalog', 'information_schema')
        """,
        "pg_database": """
            SELECT oid::BIGINT AS oid, datname, 10::BIGINT AS datdba, 6 AS encoding,
                   'c' AS datlocprovider, datistemplate, datallowconn, -1 AS datconnlimit,
                   0::BIGINT AS datfrozenxid, 0::BIGINT AS datminmxid,
                   0::BIGINT AS dattablespace, 'C.UTF-8' AS datcollate, 'C.UTF-8' AS datctype,
                   NULL::VARCHAR AS daticulocale, NULL::VARCHAR AS daticurules,
                   NULL::VARCHAR AS datcollversion, NULL::VARCHAR[] AS datacl
            FROM pg_catalog.pg_database WHERE datname = current_database()""",
        "pg_roles": f"""
            SELECT r.name AS rolname, r.superuser AS rolsuper, true AS rolinherit,
                   r.superuser AS rolcreaterole, r.superuser AS rolcreatedb,
                   r.login AS rolcanlogin, false AS rolreplication, -1 AS rolconnlimit,
                   '********' AS rolpassword, NULL::TIMESTAMPTZ AS rolvaliduntil,
                   r.superuser AS rolbypassrls, NULL::VARCHAR[] AS rolconfig, r.oid AS oid
            FROM (SELECT unnest(from_json({ROLES_FUNCTION}(), '{_ROLE_JSON}'), recursive := true))
              AS r""",
        "pg_user": """
            SELECT rolname AS usename, oid AS usesysid, rolcreatedb AS usecreatedb,
                   rolsuper AS usesuper, false AS userepl, rolbypassrls AS usebypassrls,
                   '********' AS passwd, NULL::TIMESTAMPTZ AS valuntil,
                   NULL::VARCHAR[] AS useconfig
            FROM pg_roles WHERE rolcanlogin""",
        "pg_auth_members": f"""
            SELECT 0::BIGINT AS oid, m.granted AS roleid, r.oid AS member, 10::BIGINT AS grantor,
                   false AS admin_option
            FROM (SELECT unnest(from_json({ROLES_FUNCTION}(), '{_ROLE_JSON}'), recursive := true))
              AS r, unnest(r.member_of) AS m(granted)""",
        "pg_policy": _empty("0::BIGINT AS oid, ''::VARCHAR AS polname, 0::BIGINT AS polrelid, "
                            "''::VARCHAR AS polcmd, true AS polpermissive, "
                            "[0::BIGINT] AS polroles, ''::VARCHAR AS polqual, "
                            "''::VARCHAR AS polwithcheck"),
        "pg_statistic_ext": _empty("0::BIGINT AS oid, 0::BIGINT AS stxrelid, "
                                   "''::VARCHAR AS stxname, 0::BIGINT AS stxnamespace, "
                                   "0::BIGINT AS stxowner, 0 AS stxstattarget, "
                                   "[0::SMALLINT] AS stxkeys, [''] AS stxkind, "
                                   "''::VARCHAR AS stxexprs"),
        "pg_publication": _empty("0::BIGINT AS oid, ''::VARCHAR AS pubname, 0::BIGINT AS "
                                 "pubowner, false AS puballtables, false AS pubinsert, "
                                 "false AS pubupdate, false AS pubdelete, false AS pubtruncate, "
                                 "false AS pubviaroot"),
        "pg_publication_namespace": _empty("0::BIGINT AS oid, 0::BIGINT AS pnpubid, "
                                           "0::BIGINT AS pnnspid"),
        "pg_publication_rel": _empty("0::BIGINT AS oid, 0::BIGINT AS prpubid, "
                                     "0::BIGINT AS prrelid, ''::VARCHAR AS prqual, "
                                     "[0::SMALLINT] AS prattrs"),
        "pg_inherits": _empty("0::BIGINT AS inhrelid, 0::BIGINT AS inhparent, 0 AS inhseqno, "
                              "false AS inhdetachpending"),
        "pg_range": _empty("0::BIGINT AS rngtypid, 0::BIGINT AS rngsubtype, "
                           "0::BIGINT AS rngmultitypid, 0::BIGINT AS rngcollation, "
                           "0::BIGINT AS rngsubopc, ''::VARCHAR AS rngcanonical, "
                           "''::VARCHAR AS rngsubdiff"),
        "pg_trigger": _empty("0::BIGINT AS oid, 0::BIGINT AS tgrelid, ''::VARCHAR AS tgname, "
                             "0::BIGINT AS tgfoid, 0 AS tgtype, ''::VARCHAR AS tgenabled, "
                             "false AS tgisinternal"),
        "pg_rewrite": _empty("0::BIGINT AS oid, ''::VARCHAR AS rulename, 0::BIGINT AS ev_class, "
                             "''::VARCHAR AS ev_type, ''::VARCHAR AS ev_enabled, "
                             "false AS is_instead"),
        "pg_foreign_table": _empty("0::BIGINT AS ftrelid, 0::BIGINT AS ftserver, "
                                   "NULL::VARCHAR[] AS ftoptions"),
        "pg_extension": _empty("0::BIGINT AS oid, ''::VARCHAR AS extname, 0::BIGINT AS "
                               "extowner, 0::BIGINT AS extnamespace, false AS extrelocatable, "
                               "''::VARCHAR AS extversion"),
    }


# Relations the shim answers (the sessions' activity: `planner.pg_activity`).
RELATIONS = frozenset(_relations()) | pg_activity.RELATIONS


def register_roles(con: duckdb.DuckDBPyConnection, roles: Callable[[], Sequence[RoleRow]]
                   ) -> None:
    """Let pg_roles and friends list `roles()` (asked at every statement that reads them).
    A Python function belongs to the whole DuckDB database but is kept alive by the connection
    that registered it: register on a connection that outlives the others (the data
    directory's root connection)."""
    con.create_function(ROLES_FUNCTION, lambda: json.dumps([asdict(r) for r in roles()]), [],
                        "VARCHAR", side_effects=True)


def install(con: duckdb.DuckDBPyConnection, user: str = "heron",
            server_version: str = "16.4") -> None:
    """Create the shim's TEMP macros and views on `con` (call once, outside a transaction).
    Without `register_roles` on the database before, `user` is the only role (a superuser)."""
    registered = con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = ?",
                             [ROLES_FUNCTION]).fetchall()[0][0]
    if not registered:
        register_roles(con, lambda: (RoleRow(user, 10, superuser=True, login=True),))
    for name, sql in _relations().items():  # first: macros read some of them
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
    for name, overloads in _macros(user, server_version).items():
        body = ", ".join(f"({params}) AS {sql}" for params, sql in overloads)
        con.execute(f"CREATE OR REPLACE TEMP MACRO {name} {body}")


def publish_settings(con: duckdb.DuckDBPyConnection, settings: Mapping[str, str]) -> None:
    """Make `settings` (lower-case name -> value) what current_setting() answers; merges with
    the values published before."""
    keys = ", ".join(_quote(k.lower()) for k in settings)
    values = ", ".join(_quote(str(v)) for v in settings.values())
    merged = f"map_concat(coalesce(getvariable('{SETTINGS_VARIABLE}'), MAP {{}}::MAP(VARCHAR, " \
             f"VARCHAR)), MAP([{keys}]::VARCHAR[], [{values}]::VARCHAR[]))"
    con.execute(f"SET VARIABLE {SETTINGS_VARIABLE} = {merged}")

"""The PostgreSQL-catalog shim: catalog queries from PostgreSQL clients, answered by DuckDB.

Contract: `register(con, roles)` registers, on a connection that outlives the sessions (the data
directory's root connection), the Python functions the catalog calls: the roles it lists
(pg_roles, pg_user, pg_auth_members, pg_get_userbyid, ::regrole; `roles()` is asked at each
statement), PostgreSQL's text of a view's query (`heron.planner.pg_viewdef`) and to_char of a
number (`heron.planner.pg_to_char`), to_date (`heron.planner.pg_to_date`) and an interval's
text (`heron.planner.pg_interval`), which `pg_semantics` rewrites calls and casts to, jsonb's
containment and existence functions and its `@>` / `<@` (`heron.planner.pg_jsonb`), and attaches
the macros every session shares (`heron.planner.shared_macros`).
`Catalog(con, user)` serves one DuckDB connection: at once the session's functions (version(),
current_user, current_setting(), ...: the shared macros, put on its search path), and, before
the first statement that may read the catalog (`Catalog.ready(sql)`, called before a statement
is classified), the TEMP macros and views that answer PostgreSQL 15's catalog: the relations
of `pg_catalog` (`heron.planner.pg_catalog_relations`) and `information_schema`
(`heron.planner.pg_information_schema`) with PostgreSQL's columns, and its functions
(`heron.planner.pg_catalog_functions`), and the sessions' activity views and backend functions
acting for the session's `caller` (`heron.planner.pg_activity`) and its advisory locks
(`heron.planner.pg_advisory`) — ~0.2 s of DDL that a session
which never reads the catalog (a pooled application connection) does not pay. TEMP objects are
per connection and shadow the built-in ones of the same unqualified name; statements reach them
as `heron.planner.pg_catalog_rewrite` rewrites them. Created in a transaction that rolls back,
they are gone with it: `rolled_back()` notices, and the next catalog statement creates them
again. They read snapshots of DuckDB's catalog: `Catalog.refresh(sql)`, called before a
statement runs, takes new ones when the statement reads the catalog and DuckDB's catalog changed
since the last (a fingerprint decides, ~20 ms, asked only when the server's catalog generation
moved or in a transaction block); a view's columns are typed there as its
definition declares them (varchar(n) over a varchar(n) column: `heron.planner.column_origins`).
`publish_settings(con, settings)` makes the session's run-time settings visible to
`current_setting()` and pg_settings (a DuckDB session variable, not transactional, like Heron's
SET).
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import duckdb
import pyarrow as pa

from heron.planner import (
    column_origins,
    pg_activity,
    pg_advisory,
    pg_catalog_relations,
    pg_information_schema,
    pg_interval,
    pg_jsonb,
    pg_similar,
    pg_text,
    pg_to_char,
    pg_to_date,
    pg_viewdef,
    session_sequences,
    shared_macros,
)
from heron.planner.errors import carrying
from heron.planner.pg_catalog_functions import CATALOG_MACROS, SETTINGS_VARIABLE, create_macro
from heron.planner.pg_catalog_relations import (
    BOOTSTRAP_SUPERUSER,
    DATABASE_OWNER_ROLE,
    SNAPSHOTS,
    VIEWDEF_FUNCTION,
)
from heron.planner.pg_catalog_types import literal, values

BOOTSTRAP_USER = "heron"
ROLES_FUNCTION = "heron_role_list"  # a Python function: the roles as JSON, read at each call
_ROLE_JSON = ('[{"name": "VARCHAR", "oid": "UINTEGER", "superuser": "BOOLEAN", '
              '"login": "BOOLEAN", "member_of": "UINTEGER[]"}]')


@dataclass(frozen=True, slots=True)
class RoleRow:
    """What the catalog shows of a role (pg_roles): never its password."""

    name: str
    oid: int
    superuser: bool = False
    login: bool = False
    member_of: tuple[int, ...] = ()  # OIDs of the roles it was granted


# -- installation -----------------------------------------------------------------------------

# Server settings PostgreSQL lists in pg_settings beside the session's (name, value, context).
_SERVER_SETTINGS = (
    ("block_size", "8192", "internal", "integer"),
    ("max_index_keys", "32", "internal", "integer"),
    ("max_function_args", "100", "internal", "integer"),
    ("lc_collate", "C.UTF-8", "internal", "string"),
    ("lc_ctype", "C.UTF-8", "internal", "string"),
    ("max_connections", "100", "postmaster", "integer"),
)
# PostgreSQL's spelling of the settings whose names are not all lower case.
_CANONICAL_NAMES = {"timezone": "TimeZone", "datestyle": "DateStyle",
                    "intervalstyle": "IntervalStyle"}


# What a statement that reads the snapshots mentions: one of the shim's relations or macros,
# all named pg_*, heron_* (the information_schema views too) or one of these (a cheap
# over-approximation: a statement that only seems to read them costs a fingerprint).
_READS_CATALOG = ("pg_", "heron_", "format_type", "col_description", "obj_description",
                  "to_reg")
assert all(any(word in name for word in _READS_CATALOG) for name in (
    *(r.name for r in pg_catalog_relations.RELATIONS), *SNAPSHOTS, *CATALOG_MACROS,
    *(pg_information_schema.view_name(r.name) for r in pg_information_schema.RELATIONS)))


@functools.lru_cache(maxsize=1024)  # asked at every execution of a statement
def _reads_catalog(sql: str) -> bool:
    lowered = sql.lower()
    return any(word in lowered for word in _READS_CATALOG)


def _system_relations() -> str:
    rows = [(r.name, r.name, "pg_catalog", r.kind, r.oid)
            for r in pg_catalog_relations.RELATIONS]
    rows += [(r.name, pg_information_schema.view_name(r.name), "information_schema", "v", None)
             for r in pg_information_schema.RELATIONS]
    # The sessions' activity (`planner.pg_activity`): system views, as in PostgreSQL.
    rows += [(name, name, "pg_catalog", "v", None) for name in sorted(pg_activity.RELATIONS)]
    return (f"SELECT * FROM (VALUES {values(rows)}) s(name, view_name, namespace, relkind, "
            f"fixed_oid)")


def _roles() -> str:
    return f"""
        SELECT name, oid, superuser, login, member_of FROM (
          SELECT unnest(from_json({ROLES_FUNCTION}(), '{_ROLE_JSON}'), recursive := true))
        UNION ALL  -- PostgreSQL 15's role owning `public`
        SELECT 'pg_database_owner', {DATABASE_OWNER_ROLE}, false, false, []::UINTEGER[]"""


def _settings() -> str:
    server = values(_SERVER_SETTINGS)
    canonical = " ".join(f"WHEN {literal(k)} THEN {literal(v)}"
                         for k, v in _CANONICAL_NAMES.items())
    return f"""
        SELECT CASE s.key {canonical} ELSE s.key END AS name, s.value AS setting,
               'user' AS context, 'string' AS vartype
        FROM (SELECT key, value ->> '$' AS value FROM json_each(coalesce(
              getvariable('{SETTINGS_VARIABLE}'), '{{}}'))) s
        UNION ALL
        SELECT * FROM (VALUES {server}) v(name, setting, context, vartype)
        WHERE v.name NOT IN (SELECT key FROM json_each(coalesce(
              getvariable('{SETTINGS_VARIABLE}'), '{{}}')))"""


# The views the snapshots read besides DuckDB's metadata: what does change without DDL.
_HELPERS = (("heron_system_relations", _system_relations()), ("heron_roles", _roles()),
            ("heron_settings", _settings()))


@functools.cache
def _snapshot_schemas() -> dict[str, pa.Schema]:
    """The snapshots' schemas, which depend on this code only: found once per process, on a
    scratch connection (so a session's connection registers empty snapshots of the right shape
    instead of taking one before its first catalog statement)."""
    con = duckdb.connect()
    try:
        register(con, list)
        shared_macros.use(con)
        for name, sql in _HELPERS:
            con.execute(f"CREATE TEMP VIEW {name} AS {sql}")
        schemas = {}
        for name, sql in SNAPSHOTS.items():
            schemas[name] = con.sql(sql).limit(0).to_arrow_table().schema
            con.register(name, schemas[name].empty_table())
        return schemas
    finally:
        con.close()


def _views() -> list[tuple[str, str]]:
    """The shim's TEMP views, in creation order (a view is bound when created)."""
    return [(r.name, r.sql()) for r in pg_catalog_relations.RELATIONS]


def register(con: duckdb.DuckDBPyConnection, roles: Callable[[], Sequence[RoleRow]]) -> None:
    """Register the catalog's Python functions and attach the shared macros
    (`heron.planner.shared_macros`). A Python function belongs to the whole DuckDB database but
    is kept alive by the connection that registered it: register on a connection that outlives
    the others (the data directory's root connection)."""
    shared_macros.attach(con)
    con.create_function(ROLES_FUNCTION, lambda: json.dumps([asdict(r) for r in roles()]), [],
                        "VARCHAR", side_effects=True)
    con.create_function(VIEWDEF_FUNCTION, pg_viewdef.deparse, ["VARCHAR", "VARCHAR", "BOOLEAN"],
                        "VARCHAR", null_handling="special")
    con.create_function(pg_to_char.FUNCTION, pg_to_char.to_char_number, ["VARCHAR", "VARCHAR"],
                        "VARCHAR")
    con.create_function(pg_to_date.FUNCTION, carrying(pg_to_date.to_date, 2),
                        ["VARCHAR", "VARCHAR"], "VARCHAR", null_handling="special")
    con.create_function(pg_to_date.TIMESTAMP_FUNCTION, carrying(pg_to_date.to_timestamp, 2),
                        ["VARCHAR", "VARCHAR"], "VARCHAR", null_handling="special")
    # (the wall clock, read at each call, as PostgreSQL's; DuckDB's clocks are the transaction's)
    con.create_function("clock_timestamp", lambda: datetime.datetime.now(datetime.UTC), [],
                        "TIMESTAMP WITH TIME ZONE", side_effects=True)
    pg_interval.register(con)
    pg_text.register(con)
    session_sequences.register(con)
    pg_jsonb.register(con)
    pg_similar.register(con)


_STAMP = "heron_snapshot_stamp"  # the fingerprint the registered snapshots were taken at
# What changes when DuckDB's catalog does (objects, their definitions and comments).
_FINGERPRINT = """
    SELECT bit_xor(hash(x)) FROM (
      SELECT concat_ws('|', database_name, table_oid, sql, comment) AS x FROM duckdb_tables()
      UNION ALL  -- not the shim's own views (and snapshots)
      SELECT concat_ws('|', database_name, view_oid, sql, comment) FROM duckdb_views()
        WHERE NOT internal AND NOT (database_name = 'temp' AND (starts_with(view_name, 'heron_')
              OR view_name IN (SELECT view_name FROM heron_system_relations)))
      UNION ALL SELECT concat_ws('|', index_oid, sql, comment) FROM duckdb_indexes()
      UNION ALL SELECT concat_ws('|', sequence_oid, sql, comment) FROM duckdb_sequences()
      UNION ALL SELECT concat_ws('|', type_oid, type_name, comment) FROM duckdb_types()
        WHERE NOT internal
      UNION ALL SELECT concat_ws('|', oid, schema_name, comment) FROM duckdb_schemas()
      UNION ALL SELECT concat_ws('|', table_oid, column_name, comment) FROM duckdb_columns()
        WHERE comment IS NOT NULL AND comment <> '')"""


class Catalog:
    """The shim on one DuckDB connection: its TEMP macros and views, and the snapshots of
    DuckDB's catalog they read (registered Arrow tables, taken again when the catalog changed:
    planning views over DuckDB's metadata functions at every catalog query is slow). A
    registration is transactional: a snapshot taken in a transaction that rolls back is undone,
    its stamp (the catalog's fingerprint it was taken at) with it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, user: str = "heron",
                 server_version: str = "16.4", caller: pg_activity.Caller = pg_activity.NO_SERVER,
                 settings: Mapping[str, str] | None = None) -> None:
        """Make the session's functions callable on `con` (outside a transaction): the shared
        macros on its search path, reading `user` and `server_version` as the session's until
        `publish_settings` tells otherwise. Without `register` on the database before, `user` is
        the only role (a superuser). The relations are created by the first statement that may
        read them, the first snapshot taken by the first that does. `settings` (a session's,
        which include those two) are published at once in their place."""
        self.con = con
        if not shared_macros.attached(con):  # `register` attaches them
            register(con, lambda: (RoleRow(user, BOOTSTRAP_SUPERUSER, superuser=True,
                                           login=True),))
        shared_macros.use(con)
        publish_settings(con, settings if settings is not None else {
            "session_authorization": user, "server_version": server_version})
        self.caller = caller  # whom the activity views and backend functions act for
        self._installed = False
        self._fresh_at: int | None = None  # the catalog generation the snapshots are fresh at

    def ready(self, sql: str) -> None:
        """Before classifying `sql`: the shim's relations and macros exist if it may read them."""
        if not self._installed and _reads_catalog(sql):
            self._install()

    def rolled_back(self) -> None:
        """After a rollback: whether the relations survived it (not if it created them), and
        the snapshots it may have taken are undone."""
        self._fresh_at = None
        if self._installed:
            self._installed = bool(self.con.execute(
                "SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name = ?",
                [_HELPERS[0][0]]).fetchall()[0][0])  # created with the rest, or not at all

    def _install(self) -> None:
        con = self.con
        pg_activity.install(con, self.caller)
        pg_advisory.install(con, self.caller)
        self._stamp(None)
        for name, sql in _HELPERS:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
        for name, schema in _snapshot_schemas().items():  # the relations read them
            con.register(name, schema.empty_table())
        for name, sql in _views():
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
        for name, overloads in CATALOG_MACROS.items():
            con.execute(create_macro(name, overloads, temporary=True))
        for relation in pg_information_schema.RELATIONS:  # they call the catalog macros
            con.execute(f"CREATE OR REPLACE TEMP VIEW "
                        f"{pg_information_schema.view_name(relation.name)} AS {relation.sql()}")
        self._installed = True

    def refresh(self, sql: str, generation: int | None = None) -> None:
        """Before running `sql`: if it reads the catalog and DuckDB's catalog changed since the
        last snapshot, take new snapshots. `generation` is the catalog's generation (the
        server's count of statements that may change it) when the statement runs outside a
        transaction block: snapshots found fresh at a generation stay fresh while it lasts, so
        the catalog is not compared again (~20 ms). In a block, whose DuckDB snapshot may be
        older than the generation, it is compared every time."""
        if _reads_catalog(sql):
            if not self._installed:
                self._install()
            if generation is None or generation != self._fresh_at:
                self._snapshot()
                self._fresh_at = generation

    def _snapshot(self) -> None:
        fingerprint, fresh = self.con.execute(
            f"SELECT f, f IS NOT DISTINCT FROM (SELECT max(fingerprint) FROM {_STAMP}) "
            f"FROM ({_FINGERPRINT}) AS current(f)").fetchall()[0]
        if fresh:
            return
        for name, sql in SNAPSHOTS.items():  # each reads those registered before it
            snapshot = self.con.sql(sql).to_arrow_table()
            if name == "heron_table_columns":
                snapshot = _declared_view_types(self.con, snapshot)
            self.con.register(name, snapshot)
        self._stamp(fingerprint)

    def _stamp(self, fingerprint: int | None) -> None:
        self.con.register(_STAMP, pa.table({"fingerprint": pa.array([fingerprint], pa.uint64())}))


def _declared_view_types(con: duckdb.DuckDBPyConnection, columns: pa.Table) -> pa.Table:
    """pg_attribute's rows of tables and views (`heron_table_columns`) with each view column
    typed as its definition declares it (DuckDB keeps the values' type: text for a view's
    column over a varchar(n) column), as RowDescription announces the view's columns."""
    declared = {(o.table_oid, o.attnum): o
                for relation in column_origins.Relations.load(con).by_name.values()
                for _, o in relation if o.type_oid}
    if not declared:
        return columns
    types, typmods = [], []
    for relid, attnum, oid, typmod in zip(*(columns[c].to_pylist() for c in (
            "attrelid", "attnum", "atttypid", "atttypmod")), strict=True):
        origin = declared.get((relid, attnum))
        oid, typmod = (oid, typmod) if origin is None else column_origins.announced(oid, origin)
        types.append(oid)
        typmods.append(typmod)
    columns = columns.set_column(columns.schema.get_field_index("atttypid"), "atttypid",
                                 pa.array(types, columns.schema.field("atttypid").type))
    return columns.set_column(columns.schema.get_field_index("atttypmod"), "atttypmod",
                              pa.array(typmods, columns.schema.field("atttypmod").type))


def publish_settings(con: duckdb.DuckDBPyConnection, settings: Mapping[str, str]) -> None:
    """Make `settings` (lower-case name -> value) what current_setting() answers; merges with
    the values published before."""
    published = json.dumps({k.lower(): str(v) for k, v in settings.items()})
    con.execute(f"SET VARIABLE {SETTINGS_VARIABLE} = json_merge_patch(coalesce(getvariable("
                f"'{SETTINGS_VARIABLE}'), '{{}}'), ?)", [published])

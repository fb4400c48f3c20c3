"""The data directory: its DuckDB database and its roles.

Contract: `Database(data_dir)` creates the directory if needed, opens (or creates) the database file
`heron.duckdb` inside it, opens its roles (`roles`, see `catalog.roles`; `bootstrap_password` is
the bootstrap superuser's; the pg_catalog shim lists them, never their passwords) and, on the
first start only, loads the demo tables. User objects live in the schema `public`, as in
PostgreSQL: a database made by an earlier Heron, whose tables live in DuckDB's default schema
`main`, is migrated once, in one transaction, when it has no `public` schema yet
(`migrate_main_to_public`: sequences with their current values, tables with their constraints
and rows, indexes, views with `main.` qualifiers rewritten); objects the migration does not move
(macros, types) stay in `main`, which is then on the search path after `public`. jsonb values
an earlier Heron stored as written are normalized once (`jsonb_storage.normalize_stored`; the
file `jsonb-normalized` records it), and the foreign keys an earlier Heron left to DuckDB
become Heron's once (`alter_table.own_foreign_keys`; the file `foreign-keys-owned`). Each client
session gets its own DuckDB connection from `connect()`: connections share the catalog and data
but have their own transaction. The DuckDB catalog is named `heron` (after the file,
`catalog_name`), which matches the database name clients connect to. It also holds what the
planner learns and keeps for every session of the server: `statistics` (observed AI
selectivities, saved in `statistics.json` when the database closes) and `answers` (the answer
store).
"""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.catalog import demo
from heron.catalog.answers import AnswerStore
from heron.catalog.roles import Predefined, Roles
from heron.catalog.statistics import Statistics
from heron.planner import alter_table, dialect, jsonb_storage, pg_catalog, pg_semantics

DATABASE_FILE = "heron.duckdb"
TIME_ZONE = "UTC"  # the TimeZone of a new connection (and session)
STATISTICS_FILE = "statistics.json"
# Present once the database's jsonb values are stored normalized (`jsonb_storage`).
JSONB_NORMALIZED_FILE = "jsonb-normalized"
# Present once the database's foreign keys are Heron's (`alter_table.own_foreign_keys`).
FOREIGN_KEYS_OWNED_FILE = "foreign-keys-owned"
DEFAULT_SCHEMA = "public"
LEGACY_SCHEMA = "main"  # DuckDB's default schema, where Heron before `public` kept user tables


class Database:
    """One open data directory; thread-safe to `connect()` from any thread."""

    def __init__(self, data_dir: str | Path, *, load_demo: bool = True,
                 bootstrap_password: str | None = None) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DATABASE_FILE
        self.catalog_name = self.path.stem  # DuckDB names the catalog after the file
        first_start = not self.path.exists()
        self._root = duckdb.connect(str(self.path))
        # Connections start in the sessions' default zone, not the machine's (a session in
        # another sets its own: server.session)
        self._root.execute(f"SET GLOBAL TimeZone = '{TIME_ZONE}'")
        # A name that no relation has never reads a Python object of the server: DuckDB's Python
        # client otherwise scans the variables in scope where a statement runs (a client's
        # `SELECT * FROM dt` read the module that planner.statement imports as dt).
        self._root.execute("SET GLOBAL python_enable_replacements = false")
        pg_semantics.configure(self._root)  # (for every session's connection)
        self.roles = Roles.open(self.data_dir, bootstrap_password)
        pg_catalog.register(self._root, self._role_rows)
        if not _schema_exists(self._root, DEFAULT_SCHEMA):
            migrate_main_to_public(self._root)
        if first_start and load_demo:
            demo.load(self._root)
        if not (self.data_dir / JSONB_NORMALIZED_FILE).exists():
            # once: the jsonb an earlier Heron stored as written would compare wrongly
            jsonb_storage.normalize_stored(self._root)
            (self.data_dir / JSONB_NORMALIZED_FILE).touch()
        if not (self.data_dir / FOREIGN_KEYS_OWNED_FILE).exists():
            # once: DuckDB's own foreign keys, which an earlier Heron made, become Heron's
            alter_table.own_foreign_keys(self._root)
            (self.data_dir / FOREIGN_KEYS_OWNED_FILE).touch()
        # Macros in `main` are left by the migration only: counted once, as listing them scans
        # every DuckDB function (~10 ms, which each new session would otherwise pay).
        self._legacy_macros = _holds_macros(self._root, LEGACY_SCHEMA)
        self.statistics = Statistics.load(self.data_dir / STATISTICS_FILE)
        self.answers = AnswerStore()
        self._paths: tuple[int, str] | None = None  # (catalog generation, its search path)
        self._found_lock = threading.Lock()
        # (catalog generation, the names of DuckDB's table functions then)
        self._table_functions: tuple[int, frozenset[str]] | None = None

    def _role_rows(self) -> list[pg_catalog.RoleRow]:
        """The roles as pg_roles shows them: PostgreSQL's predefined ones, then ours."""
        return [*(pg_catalog.RoleRow(p.value, p.oid) for p in Predefined),
                *(pg_catalog.RoleRow(r.name, r.oid, r.superuser, r.login,
                                     tuple(sorted(p.oid for p in r.member_of)))
                  for r in self.roles.all())]

    def connect(self, generation: int | None = None) -> duckdb.DuckDBPyConnection:
        """A new connection to the same database, for one session. Its search path is `public`,
        then `main` while it still holds objects of an earlier Heron, then the demo schema, so
        `reviews` names `demo.reviews` until the user creates a `reviews` of their own.
        `generation` is the server's count of statements that changed the catalog (the
        server's `CatalogGeneration`): the path found for one generation serves every session
        started while it lasts (finding it scans the catalog, ~2 ms); None looks again."""
        con = self._root.cursor()
        with self._found_lock:
            cached = self._paths
        if generation is not None and cached is not None and cached[0] == generation:
            try:
                con.execute(f"SET search_path = '{cached[1]}'")
                return con
            except duckdb.CatalogException:  # a schema of it is gone: look again
                pass
        path = _search_path(con, self._legacy_macros)
        con.execute(f"SET search_path = '{path}'")
        if generation is not None:
            with self._found_lock:
                self._paths = (generation, path)
        return con

    @property
    def threads(self) -> int:
        """DuckDB's threads for one statement, as configured (its default: the machine's cores)."""
        return int(self._root.cursor().execute("SELECT current_setting('threads')").fetchone()[0])

    def set_threads(self, threads: int) -> None:
        """Let DuckDB run one statement on `threads` threads (the calling one included)."""
        self._root.cursor().execute(f"SET threads = {int(threads)}")

    def table_functions(self, generation: int) -> frozenset[str]:
        """The names of DuckDB's table functions and built-in table macros (what a call in a
        FROM clause may run besides a user's macro), found once per catalog `generation`:
        listing them scans every DuckDB function, ~20 ms."""
        with self._found_lock:
            cached = self._table_functions
        if cached is not None and cached[0] == generation:
            return cached[1]
        names = frozenset(name for (name,) in self._root.cursor().execute(
            """SELECT DISTINCT function_name FROM duckdb_functions()
               WHERE function_type = 'table' OR (function_type = 'table_macro' AND internal)"""
        ).fetchall())
        with self._found_lock:
            self._table_functions = (generation, names)
        return names

    def close(self) -> None:
        # CHECKPOINT folds the write-ahead log into the file so the next start opens quickly.
        self._root.execute("CHECKPOINT")
        self.statistics.save(self.data_dir / STATISTICS_FILE)
        self._root.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _search_path(con: duckdb.DuckDBPyConnection, legacy_macros: bool) -> str:
    path = [DEFAULT_SCHEMA]
    if legacy_macros or _holds_objects(con, LEGACY_SCHEMA):
        path.append(LEGACY_SCHEMA)
    if _schema_exists(con, demo.SCHEMA):
        path.append(demo.SCHEMA)
    return ",".join(path)


def _schema_exists(con: duckdb.DuckDBPyConnection, schema: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_schemas() WHERE database_name = "
                            "current_database() AND schema_name = ?", [schema]).fetchall()[0][0])


def _holds_objects(con: duckdb.DuckDBPyConnection, schema: str) -> bool:
    return bool(con.execute(
        """SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
                   AND schema_name = $1)
                + (SELECT count(*) FROM duckdb_views() WHERE database_name = current_database()
                   AND schema_name = $1 AND NOT internal)
                + (SELECT count(*) FROM duckdb_sequences() WHERE database_name =
                   current_database() AND schema_name = $1)
                + (SELECT count(*) FROM duckdb_types() WHERE database_name = current_database()
                   AND schema_name = $1 AND NOT internal)""", [schema]).fetchall()[0][0])


def _holds_macros(con: duckdb.DuckDBPyConnection, schema: str) -> bool:
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE database_name = current_database() "
        "AND schema_name = ? AND NOT internal", [schema]).fetchall()[0][0])


def migrate_main_to_public(con: duckdb.DuckDBPyConnection) -> None:
    """Create `public` and move the tables, views, sequences and indexes of `main` into it, all
    or nothing (DuckDB cannot move an object between schemas, so each is recreated from its
    definition and tables copy their rows)."""
    db = "current_database()"
    sequences = con.execute(
        f"""SELECT sequence_name, increment_by, min_value, max_value, cycle,
                   coalesce(last_value + increment_by, start_value)
            FROM duckdb_sequences() WHERE database_name = {db} AND schema_name = 'main'"""
    ).fetchall()
    tables = con.execute(
        f"""SELECT table_name, sql FROM duckdb_tables()
            WHERE database_name = {db} AND schema_name = 'main'""").fetchall()
    references = con.execute(
        f"""SELECT table_name, referenced_table FROM duckdb_constraints()
            WHERE database_name = {db} AND schema_name = 'main'
              AND constraint_type = 'FOREIGN KEY'""").fetchall()
    indexes = con.execute(
        f"""SELECT index_name, sql FROM duckdb_indexes()
            WHERE database_name = {db} AND schema_name = 'main' AND sql IS NOT NULL""").fetchall()
    views = con.execute(
        f"""SELECT view_name, sql FROM duckdb_views()
            WHERE database_name = {db} AND schema_name = 'main' AND NOT internal""").fetchall()
    order = _referenced_first([name for name, _ in tables], references)
    definitions = dict(tables)
    con.execute("BEGIN")
    try:
        con.execute(f"CREATE SCHEMA {DEFAULT_SCHEMA}")
        con.execute(f"SET search_path = '{DEFAULT_SCHEMA}'")  # unqualified DDL lands in public
        for name, increment, low, high, cycle, start in sequences:
            con.execute(f"CREATE SEQUENCE {dialect.quoted(name)} INCREMENT BY {increment} "
                        f"MINVALUE {low} MAXVALUE {high} START {start} "
                        f"{'CYCLE' if cycle else 'NO CYCLE'}")
        for name in order:
            con.execute(definitions[name])
            con.execute(f"INSERT INTO {DEFAULT_SCHEMA}.{dialect.quoted(name)} "
                        f"SELECT * FROM {LEGACY_SCHEMA}.{dialect.quoted(name)}")
        for _, sql in indexes:
            con.execute(sql)
        for _, sql in views:
            con.execute(_requalified(sql))
        for name, _ in views:
            con.execute(f"DROP VIEW {LEGACY_SCHEMA}.{dialect.quoted(name)}")
        for name in reversed(order):
            con.execute(f"DROP TABLE {LEGACY_SCHEMA}.{dialect.quoted(name)}")
        for name, *_ in sequences:
            con.execute(f"DROP SEQUENCE {LEGACY_SCHEMA}.{dialect.quoted(name)}")
        con.execute("COMMIT")
    except duckdb.Error:
        con.execute("ROLLBACK")
        raise
    finally:
        con.execute("RESET search_path")


def _referenced_first(tables: list[str], references: list[tuple[str, str]]) -> list[str]:
    """`tables` ordered so that every table comes after the tables its foreign keys reference."""
    ordered: list[str] = []

    def visit(name: str, seen: frozenset[str]) -> None:
        if name in ordered or name in seen:
            return
        for table, referenced in references:
            if table == name and referenced != name:
                visit(referenced, seen | {name})
        ordered.append(name)

    for name in tables:
        visit(name, frozenset())
    return ordered


def _requalified(view_sql: str) -> str:
    """A view definition whose `main.x` references name `public.x` instead (the text itself
    when it cannot be parsed: its unqualified references follow the search path anyway)."""
    try:
        tree = sqlglot.parse_one(view_sql, read="duckdb")
    except SqlglotError:
        return view_sql
    changed = False
    for table in tree.find_all(exp.Table):
        if table.db.lower() == LEGACY_SCHEMA and table.catalog in ("", "heron"):
            table.set("db", exp.to_identifier(DEFAULT_SCHEMA))
            changed = True
    return tree.sql(dialect="duckdb") if changed else view_sql

"""The planner facade: what the server's session calls for every statement.

Contract: a `Planner` serves one client session over one DuckDB connection (the per-connection
`pg_catalog.Catalog` shim and the AI views' macros are installed on it), an optional engine, and the
server's `Statistics` and `AnswerStore` (fresh ones when none are given). `classify` reads a
statement through the catalog rewrite (`pg_catalog_rewrite`), then `pg_semantics.rewrite`,
`pg_semantics.typed_results` and `pg_semantics.written_arrays`; a query's (and a RETURNING
clause's) result columns get their origins (`column_origins`: the table column each reads, its
declared type) from the text the client sent, over the relations read once per catalog
`generation`, which `describe` and `execute` give the columns.
`prepare(sql)` classifies and plans one statement (`classify`, then `plan`) — a statement calling
AI functions gets its `AiPlan` here, once, and is refused here if it cannot run — and returns the
frozen `Statement`; nothing runs. `describe` gives its result columns without running it; `execute`
runs it: statements without AI functions go to DuckDB (streamed when asked; the catalog's snapshots
refreshed first when the statement reads them; an ALTER TABLE DuckDB cannot run in place on the
CHECKs that keep declared types through `alter_table`; a CREATE TABLE AS through `create_table_as`,
which keeps its query's declared types; a DROP, and the IF [NOT] EXISTS of CREATE and ALTER TABLE,
through `existence`, which drops several names and sends PostgreSQL's notices; a CREATE TABLE of
serial or identity columns through `serial_columns`; TRUNCATE through `truncate`, setval and
ALTER SEQUENCE RESTART through `sequences`, CREATE / DROP EXTENSION through `extensions`), AI
statements through the `Executor` (EXPLAIN renders the plan without the model, EXPLAIN ANALYZE
runs it and shows the actual work), and every AI
statement's `Result` carries its work per operator plus one summary NOTICE each (while it runs, the
operators' progress goes to the `progress` listener, `planner.progress`). The session's `caller`
(its backend's PID and token) is what `planner.pg_activity`'s views and functions act as.
`publish_settings` receives the session's settings: `heron.order` and `heron.reuse_answers`
(`planner.settings`) steer the AI statements that run after it. `begin`, `commit` and `rollback`
are the transaction verbs of the connection; `bind_columns`, `insert_rows`, `insert_many` and
`column_defaults` serve COPY, batched INSERTs and savepoint replay; `interrupt` cancels the running
statement from another thread. Errors are `SqlError`s with PostgreSQL SQLSTATEs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from heron.catalog.answers import AnswerStore
from heron.catalog.statistics import Statistics
from heron.engine.api import Engine
from heron.planner import (
    alter_table,
    column_origins,
    create_table_as,
    create_table_like,
    dialect,
    existence,
    explain,
    extensions,
    foreign_keys,
    indexes_aside,
    jsonb_storage,
    logical,
    maintenance,
    materialized_views,
    parameters,
    pg_catalog,
    pg_catalog_rewrite,
    pg_ddl,
    pg_semantics,
    relational_explain,
    sequences,
    serial_columns,
    session_sequences,
    sql_functions,
    statement,
    temp_tables,
    truncate,
    views,
)
from heron.planner.dialect import AIFunction
from heron.planner.errors import (
    SqlError,
    SqlState,
    bind_count_mismatch,
    from_duckdb,
    query_canceled,
)
from heron.planner.executor import Executor
from heron.planner.logical import Explain
from heron.planner.pg_activity import NO_SERVER, Caller
from heron.planner.progress import ProgressListener
from heron.planner.settings import Settings
from heron.planner.shared_reads import SharedReads
from heron.planner.statement import Column, Kind, Result, Rows, Statement

# Cheap test before parsing: statements that cannot contain AI calls skip sqlglot entirely.
MAYBE_AI = re.compile(r"\bAI(?:\s*\.\s*|_)\w+\s*\(", re.IGNORECASE)
# Statements that may call AI functions or read AI views; the others (session, transaction,
# cursor and COPY-protocol commands) are never planned, so no catalog read runs for them (which
# a failed transaction block would refuse).
_AI_KINDS = frozenset({Kind.SELECT, Kind.UTILITY_ROWS, Kind.INSERT, Kind.UPDATE, Kind.DELETE,
                       Kind.MERGE, Kind.CREATE, Kind.OTHER})
# Statements that change the catalog but make no temporary tables or views: a session that ran
# only these still reads the catalog as every other session does (`SharedReads`).
_MAKES_NO_OBJECTS = frozenset({Kind.SET, Kind.RESET, Kind.DISCARD, Kind.ROLE, Kind.TRANSACTION})
# Statements whose result columns `column_origins` can follow (a query's, RETURNING's).
_RESULT_KINDS = frozenset({Kind.SELECT, Kind.INSERT, Kind.UPDATE, Kind.DELETE})
_MAINTENANCE = frozenset({"VACUUM", "ANALYZE", "REINDEX", "CLUSTER"})
_WRITES = frozenset({Kind.INSERT, Kind.UPDATE, Kind.DELETE, Kind.MERGE})
# DDL that may declare foreign keys or change what they reference (`foreign_keys.altered`).
_KEYED_DDL = frozenset({"CREATE TABLE", "ALTER TABLE"})
_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?P<analyze>ANALYZE\s+)?(?:VERBOSE\s+)?", re.IGNORECASE)


class Planner:
    def __init__(self, con: duckdb.DuckDBPyConnection, engine: Engine | None = None, *,
                 statistics: Statistics | None = None, answers: AnswerStore | None = None,
                 user: str = "heron", server_version: str = "16.4",
                 caller: Caller = NO_SERVER, progress: ProgressListener | None = None,
                 settings: Mapping[str, str] | None = None,
                 generation: Callable[[], int] | None = None,
                 shared: SharedReads | None = None) -> None:
        """`generation` counts the catalog's changes (the server's `CatalogGeneration`): what
        is read of the catalog serves while it stays the same; without one, each statement
        reads it again (once). With it, `shared` (the server's) serves what every session
        reads alike, while this one holds no objects of its own and runs outside a block."""
        self.con = con
        # Without the server's generation, each statement's own number: what one statement's
        # classification reads of the catalog is read once, and again for the next statement.
        self._statements = None if generation is not None else itertools.count()
        self._statement = 0
        self._generation = generation or (lambda: self._statement)
        self._relations_read: tuple[int, column_origins.Relations] | None = None
        self._shared = shared if generation is not None else None
        self._own_objects = False  # it ran DDL: it may hold temporary tables or views
        self._keys_read: tuple[int, tuple[foreign_keys.Key, ...]] | None = None
        self._writes: dict[str, foreign_keys.Write | None] = {}  # by statement text
        self._deferred = foreign_keys.Deferred()  # the transaction block's
        # `settings`: the session's, published at once (as `publish_settings` would).
        self.catalog = pg_catalog.Catalog(con, user, server_version, caller, settings)
        # What its nextval calls draw is kept from the first statement that may draw
        # (`_drawing`): a session that only reads never pays for it.
        self._sequences: int | None = None
        # Set by interrupt(): the engine stops the running AI statement between chunks, and a
        # statement interrupted while it was prepared does not start (the session clears it
        # before preparing one; `execute` once it is over).
        self.cancelled = threading.Event()
        # The statement `execute` runs, while it does (a token): what interrupt() sends again,
        # under the lock, so that no repeat reaches the statement after it.
        self._executing: object | None = None
        self._interrupts = threading.Lock()
        self.settings = Settings() if settings is None else Settings.of(settings)
        self.executor = Executor(con, engine, self.cancelled, statistics or Statistics(),
                                 answers if answers is not None else AnswerStore(), progress)
        self.prepared = statement.PreparedStatements()
        self.on_commit = temp_tables.OnCommitActions()  # the session's temporary tables'
        self._in_transaction = False  # between begin() and commit() / rollback()

    @property
    def engine(self) -> Engine | None:
        return self.executor.engine

    @engine.setter
    def engine(self, engine: Engine | None) -> None:
        self.executor.engine = engine

    def prepare(self, sql: str) -> Statement:
        """`classify`, then `plan`: a statement ready to describe and execute."""
        return self.plan(self.classify(sql))

    def classify(self, sql: str) -> Statement:
        """What the statement is (its kind, parameters, rows); cheap, nothing planned."""
        if self._statements is not None:
            self._statement = next(self._statements)
        if alter_table.split(sql) is not None:  # (DuckDB's parser: one action per ALTER TABLE)
            return Statement(sql, Kind.OTHER, verb="ALTER TABLE")
        if (routine := sql_functions.read(sql)) is not None:  # DuckDB has macros, no functions
            if isinstance(routine, sql_functions.Refused):
                raise routine.error
            return Statement(sql, Kind.OTHER, verb="DROP FUNCTION" if isinstance(
                routine, sql_functions.DropFunction) else "CREATE FUNCTION")
        # pg_dump's DDL spellings, and CREATE TABLE (LIKE ...), as DuckDB's; writes of GENERATED
        # ALWAYS identity columns refused
        sql = serial_columns.checked_write(
            self.con, create_table_like.rewrite(self.con, pg_ddl.rewrite(sql, self.con)))
        rewritten = pg_semantics.conflict_constraints(
            self.con, pg_catalog_rewrite.rewrite(sql, self._relations))
        self.catalog.ready(rewritten)  # binding a catalog query needs the shim's relations
        duckdb_sql = pg_semantics.written_arrays(self.con, pg_semantics.typed_results(
            self.con, pg_semantics.rewrite(rewritten, self._relations)))
        if isinstance(alter_table.parse(duckdb_sql), alter_table.AddColumns
                      | alter_table.AddConstraint | alter_table.DropConstraint
                      | alter_table.ValidateConstraint):
            # DuckDB's parser refuses a column with a CHECK, a DEFERRABLE constraint, DROP and
            # VALIDATE CONSTRAINT
            return Statement(duckdb_sql, Kind.OTHER, verb="ALTER TABLE")
        if isinstance(drop := existence.read(duckdb_sql), existence.Drop):
            # DuckDB's parser refuses a DROP of several names
            return Statement(duckdb_sql, Kind.OTHER, verb=f"DROP {drop.kind}")
        if serial_columns.read(duckdb_sql) is not None:
            # DuckDB knows neither serial types nor identity columns
            return Statement(duckdb_sql, Kind.CREATE, verb="CREATE TABLE")
        if (materialized := materialized_views.read(duckdb_sql)) is not None:  # DuckDB has none
            return Statement(duckdb_sql, Kind.OTHER, verb=materialized.verb)
        materialized_views.check_use(duckdb_sql, self._relations)
        if temp_tables.read(duckdb_sql) is not None:  # DuckDB: ON COMMIT PRESERVE ROWS only
            return Statement(duckdb_sql, Kind.CREATE, verb="CREATE TABLE")
        if serial_columns.read_add_identity(duckdb_sql) is not None:
            return Statement(duckdb_sql, Kind.OTHER, verb="ALTER TABLE")
        if (extension := extensions.read(duckdb_sql)) is not None:  # DuckDB has none
            verb = "CREATE EXTENSION" if extension.create else "DROP EXTENSION"
            return Statement(duckdb_sql, Kind.OTHER, verb=verb)
        if indexes_aside.read_rename(duckdb_sql) is not None:  # DuckDB has no ALTER INDEX
            return Statement(duckdb_sql, Kind.OTHER, verb="ALTER INDEX")
        if (maintained := maintenance.read(duckdb_sql)) is not None:  # (DuckDB's: no options)
            return Statement(duckdb_sql, Kind.OTHER, verb=maintained.command)
        if (explained := relational_explain.read(duckdb_sql)) is not None:
            # PostgreSQL's options and QUERY PLAN rows (an AI statement's plan is `plan`'s)
            inner = statement.classify(self.con, explained.statement)
            return Statement(duckdb_sql, Kind.UTILITY_ROWS, "EXPLAIN", inner.param_count,
                             inner.param_types, returns_rows=True)
        if truncate.read(duckdb_sql) is not None:  # (DuckDB's parser: one table, no options)
            return Statement(duckdb_sql, Kind.OTHER, verb="TRUNCATE TABLE")
        if sequences.read_alter(duckdb_sql) is not None:  # DuckDB restarts no sequence
            return Statement(duckdb_sql, Kind.OTHER, verb="ALTER SEQUENCE")
        if sequences.read_setval(duckdb_sql) is not None:  # DuckDB has no setval
            return Statement(duckdb_sql, Kind.UTILITY_ROWS, verb="SELECT", returns_rows=True)
        stmt = statement.classify(self.con, duckdb_sql)
        jsonb_types = parameters.with_jsonb(sql, stmt.param_types)
        if jsonb_types != stmt.param_types:
            stmt = dataclasses.replace(stmt, param_types=jsonb_types)
        if (stmt.kind in _RESULT_KINDS and stmt.returns_rows) or stmt.verb == "CREATE TABLE":
            # The text as the client wrote it declares the types (rewritten, a cast to
            # varchar(n) is a left()); a catalog query's relations are the shim's, which
            # `column_origins` knows as PostgreSQL declares them.
            origins = column_origins.origins(
                sql if rewritten == sql else pg_catalog_rewrite.parseable(sql), self._relations)
            if origins is not None:
                stmt = dataclasses.replace(stmt, origins=origins)
        return stmt

    def _relations(self) -> column_origins.Relations:
        """The relations statements can name, read once per catalog generation (none where
        DuckDB cannot tell: columns' origins are a courtesy, never a statement's error)."""
        generation = self._generation()
        if self._relations_read is None or self._relations_read[0] != generation:
            try:
                self._relations_read = (generation, self._read_relations(generation))
            except duckdb.Error:
                return column_origins.Relations({}, ())
        return self._relations_read[1]

    def _read_relations(self, generation: int) -> column_origins.Relations:
        load, shared = column_origins.Relations.load, self._shares_reads
        if shared is None:
            return load(self.con)
        path = column_origins.Relations.search_path(self.con)  # (the key: ~0.1 ms)
        return shared.get(generation, ("relations", path), lambda: load(
            self.con, path, temporary=False))

    @property
    def _shares_reads(self) -> SharedReads | None:
        """The server's shared reads, where this session's reads are everyone's."""
        return None if self._own_objects or self._in_transaction else self._shared

    def _ai_views(self) -> dict[tuple[str, str], str]:
        shared = self._shares_reads
        if shared is None:
            return views.ai_views(self.con)
        return shared.get(self._generation(), "ai views", lambda: views.ai_views(self.con))

    def _altered(self, stmt: Statement, params: Sequence[Any], aside: indexes_aside.Aside,
                 skip: str | None) -> Result:
        """DuckDB's ALTER TABLE, then its serial columns' sequences renamed along."""
        result = existence.with_notice(statement.run(self.con, stmt, params), skip)
        sequences.follow_rename(self.con, aside.table, aside.renamed_to, aside.columns)
        return result

    def plan(self, stmt: Statement) -> Statement:
        """The statement with its AI plan, when it calls AI functions (or reads a view that
        does); refuses those it cannot run. A CREATE VIEW calling AI functions is checked and
        stored with its calls encoded (`planner.views`). Nothing runs (binding reads the
        catalog)."""
        if stmt.kind not in _AI_KINDS:
            return stmt
        calls_ai = MAYBE_AI.search(stmt.sql) is not None
        if not calls_ai and not views.names_any(stmt.sql, {v for _, v in self._ai_views()}):
            return stmt
        match = _EXPLAIN.match(stmt.sql)
        mode = Explain.NONE if match is None else (
            Explain.ANALYZE if match["analyze"] else Explain.PLAN)
        tree = dialect.parse(stmt.sql[match.end():] if match else stmt.sql)
        if isinstance(tree, exp.Create) and (tree.kind or "").upper() == "VIEW":
            if match is None and logical.build(self.con, tree.copy()) is not None:
                return dataclasses.replace(stmt, sql=views.encode(tree))
            return stmt  # a view over AI views is stored as written
        if not isinstance(tree, exp.Query | exp.Create | exp.Insert | exp.Update | exp.Delete
                          ) and tree.find(AIFunction) is None:
            return stmt  # e.g. DROP VIEW of an AI view
        views.expand(self.con, tree)
        plan = logical.build(self.con, tree, mode)
        if plan is None:
            return stmt
        if mode is not Explain.NONE:  # the plan's rows replace the statement's
            stmt = dataclasses.replace(stmt, returns_rows=True, bindable=False)
        return dataclasses.replace(stmt, ai=plan)

    def describe(self, stmt: Statement, params: Sequence[Any] | None = None
                 ) -> tuple[Column, ...] | None:
        """Result columns without running anything; None when the statement returns no rows or
        its columns are known only by running it. `params` (a bound portal's values) may decide
        the types of columns computed from them."""
        if stmt.ai is None and stmt.kind is Kind.UTILITY_ROWS and (
                setval := sequences.read_setval(stmt.sql)) is not None:
            return sequences.result_columns(setval)
        if stmt.ai is None and stmt.verb == "EXPLAIN":
            return (explain.PLAN_COLUMN,)
        if stmt.ai is None:
            columns = statement.describe(self.con, stmt, params=params)
        elif stmt.ai.explain is not Explain.NONE:
            return (explain.PLAN_COLUMN,)
        elif not stmt.returns_rows:
            return None
        else:
            columns = self.executor.describe(stmt, params)
        return None if columns is None else statement.with_origins(columns, stmt.origins)

    def execute(self, stmt: Statement, params: Sequence[Any] = (), *, stream: bool = False
                ) -> Result:
        """Run `stmt`; with `stream`, a plain SELECT's rows are read from DuckDB as they are taken
        (`statement.run`). An `interrupt` since the session last cleared `cancelled` (while the
        statement was prepared) cancels it before it starts."""
        if len(params) != stmt.param_count:
            raise bind_count_mismatch(len(params), stmt.param_count)
        outer = self._executing  # (a statement run within another: a materialized view's)
        with self._interrupts:
            self._executing = running = object()
        try:
            if self.cancelled.is_set():
                raise query_canceled()
            if stmt.kind in (Kind.COMMIT, Kind.ROLLBACK):  # (where no session answers them)
                (self.commit if stmt.kind is Kind.COMMIT else self.rollback)()
                return Result(stmt.verb, None, None)
            if stmt.verb == "ALTER TABLE" and (pieces := alter_table.split(stmt.sql)):
                return self._each_action(pieces)
            if stmt.verb in ("CREATE FUNCTION", "DROP FUNCTION") and (
                    routine := sql_functions.read(stmt.sql)) is not None:
                return sql_functions.run(self.con, routine, lambda sql: pg_semantics.rewrite(
                    sql, self._relations))
            if self._sequences is None and (
                    stmt.kind is not Kind.SELECT or "val(" in stmt.sql.lower()):
                self._drawing()  # (a write's defaults, or nextval, currval, lastval, setval)
            try:
                result = self._keyed(stmt, params, stream)
            except duckdb.Error as exc:  # (what ran around DuckDB's statement: a catalog snapshot)
                raise from_duckdb(exc) from None
            finally:
                if stmt.kind not in statement.DATA_KINDS:
                    # What it ran may have changed what names bind to, also for the statements
                    # run within the same catalog generation (a materialized view's table
                    # made from its query's view, just created).
                    self._relations_read = self._keys_read = None
                    self._own_objects |= stmt.kind not in _MAKES_NO_OBJECTS
            if stmt.kind is Kind.BEGIN:  # (DuckDB's, options and all, where no session answers)
                self._in_transaction = True
            if not self._in_transaction and stmt.kind is not Kind.SELECT:
                self.on_commit.before_commit(self.con)  # (DuckDB committed it: autocommit)
            return result
        finally:
            with self._interrupts:
                if self._executing is running:
                    self._executing = outer
            if self.cancelled.is_set():  # what was cancelled is over
                self.cancelled.clear()

    def _each_action(self, pieces: Sequence[str]) -> Result:
        """An ALTER TABLE of several actions, one ALTER TABLE per action (`alter_table.split`),
        all or none, as PostgreSQL's: in the open transaction, else in one begun here. Their
        notices together."""
        own = not self._in_transaction
        if own:
            self.begin()
        try:
            notices = [notice for piece in pieces
                       for notice in self.execute(self.prepare(piece)).notices]
        except BaseException:
            if own:
                self.rollback()
            raise
        if own:
            self.commit()
        # (one notice of a missing table under IF EXISTS, not one per action)
        return Result("ALTER TABLE", None, None, notices=tuple(dict.fromkeys(notices)))

    def _foreign_keys(self) -> tuple[foreign_keys.Key, ...]:
        """The foreign keys (`foreign_keys`), read once per catalog generation."""
        generation = self._generation()
        if self._keys_read is None or self._keys_read[0] != generation:
            self._keys_read = (generation, foreign_keys.read(self.con))
        return self._keys_read[1]

    def _written(self, sql: str) -> foreign_keys.Write | None:
        """What a statement writes that foreign keys involve (None: nothing)."""
        keys = self._foreign_keys()
        if not keys:
            return None
        if sql not in self._writes:
            if len(self._writes) > 256:
                self._writes.clear()
            self._writes[sql] = foreign_keys.written(sql)
        write = self._writes[sql]
        return write if write is not None and any(key.checked(write) for key in keys) else None

    def _keyed(self, stmt: Statement, params: Sequence[Any], stream: bool) -> Result:
        """`_execute`, with what the foreign keys it involves ask, in its transaction
        (`foreign_keys`): the keys of the table it writes checked and acted on; those it declares
        validated; those referencing a table or column it renames following the new name (their
        tables created again); a referenced column it drops refused (2BP01), or under CASCADE
        the keys over it dropped."""
        write = self._written(stmt.sql) if stmt.kind in _WRITES else None
        change = foreign_keys.altered(stmt.sql) if stmt.verb in _KEYED_DDL else None
        if write is None and change is None:
            return self._execute(stmt, params, stream)
        with statement.atomic(self.con, opened=self._in_transaction):
            keys = self._foreign_keys()
            notices = [] if change is None else self._dependents_dropped(keys, change)
            changed = {} if write is None else foreign_keys.changed_keys(self.con, keys, write,
                                                                         params)
            result = self._execute(stmt, params, stream=False)
            if notices:
                result = dataclasses.replace(result, notices=(*notices, *result.notices))
            if result.rows is not None and result.rows.live:  # (read before the commit)
                result = dataclasses.replace(result, rows=Rows.of(result.rows.read_all()))
            if write is not None:
                foreign_keys.enforce(self.con, keys, write, self._block_deferred(), changed)
            if change is not None:
                self._keys_altered(keys, change)
        return result

    def _dependents_dropped(self, keys: Sequence[foreign_keys.Key],
                            change: foreign_keys.Altered) -> list[str]:
        """Before a DROP COLUMN of referenced columns: 2BP01, or under CASCADE the keys over
        them dropped (PostgreSQL's notice)."""
        foreign_keys.refuse_drop(keys, change)
        dependents = foreign_keys.dependents(keys, change)
        for key in dependents:
            alter_table.drop_constraint(self.con, _relation(key), key.name)
        return existence.cascaded([f"constraint {k.name} on table {k.table}" for k in dependents])

    def _keys_altered(self, keys: Sequence[foreign_keys.Key], change: foreign_keys.Altered
                      ) -> None:
        """After a CREATE or ALTER TABLE: the keys referencing what it renamed follow the new
        names (their tables created again); the keys it may have declared are validated."""
        self._keys_read = None
        for key, text in foreign_keys.followed(keys, change):
            alter_table.rebuild(self.con, _relation(key, change), dropped=[key.text],
                                checks=[text])
        if change.declares:
            name = change.renamed_to or change.table
            foreign_keys.validate(self.con, [key for key in foreign_keys.read(self.con)
                                             if key.on(change.schema, name)])

    def _execute(self, stmt: Statement, params: Sequence[Any], stream: bool) -> Result:
        plan = stmt.ai
        if plan is None:
            # The server's catalog generation serves outside a block (`Catalog.refresh`); a
            # statement's own number does not: prepared ones run in any order.
            outside = self._statements is None and not self._in_transaction
            self.catalog.refresh(stmt.sql, self._generation() if outside else None)
            if stmt.verb == "ALTER TABLE" and (added := alter_table.parse(stmt.sql)) is not None:
                return alter_table.run(self.con, added, stmt)  # around DuckDB's CHECKs
            if stmt.verb == "ALTER TABLE" and (
                    identity := serial_columns.read_add_identity(stmt.sql)) is not None:
                return serial_columns.run_add_identity(self.con, identity)
            if stmt.kind is Kind.CREATE and stmt.param_count == 0 and (
                    created := create_table_as.parse(stmt.sql)) is not None:
                return create_table_as.run(self.con, created, stmt)  # declared types kept
            skip = None
            if stmt.verb.startswith(("DROP ", "CREATE ", "ALTER ")) and (
                    ddl := existence.read(stmt.sql)) is not None:
                if isinstance(ddl, existence.Drop):
                    return existence.run(self.con, ddl)  # several names, notices
                skip = existence.skipped(self.con, ddl)
                if skip is not None and isinstance(ddl, existence.CreateIfNotExists):
                    return Result(stmt.verb, None, None, notices=(skip,))  # nothing to run
            if stmt.verb == "CREATE TABLE" and (on_commit := temp_tables.read(stmt.sql)):
                result = self.execute(self.prepare(on_commit.create))
                self.on_commit.add(on_commit)
                return result
            if stmt.verb == "CREATE TABLE" and (serial := serial_columns.read(stmt.sql)):
                return serial_columns.run(self.con, serial)
            if stmt.verb.endswith(" EXTENSION") and (extension := extensions.read(stmt.sql)):
                return extensions.run(extension)
            if stmt.verb.endswith("MATERIALIZED VIEW") and (
                    materialized := materialized_views.read(stmt.sql)):
                return materialized_views.run(self.con, materialized,
                                              lambda sql: self.execute(self.prepare(sql)))
            if stmt.verb == "ALTER INDEX" and (renamed := indexes_aside.read_rename(stmt.sql)):
                return indexes_aside.rename(self.con, renamed)
            if stmt.verb in _MAINTENANCE and (maintained := maintenance.read(stmt.sql)):
                return maintenance.run(self.con, maintained)
            if stmt.verb == "EXPLAIN" and (explained := relational_explain.read(stmt.sql)):
                return relational_explain.run(self.con, explained, params)
            if stmt.verb == "TRUNCATE TABLE" and (emptied := truncate.read(stmt.sql)):
                return truncate.run(self.con, emptied)
            if stmt.verb == "ALTER SEQUENCE" and (altered := sequences.read_alter(stmt.sql)):
                return sequences.run_alter(self.con, altered)
            if stmt.kind is Kind.UTILITY_ROWS and (setval := sequences.read_setval(stmt.sql)):
                return sequences.run_setval(self.con, setval)
            if stmt.verb == "ALTER TABLE" and (aside := indexes_aside.read(stmt.sql)):
                if aside.only_drops and (dropped := alter_table.drop_columns(
                        self.con, aside.table, aside.dropped)) is not None:
                    return existence.with_notice(dropped, skip)  # (a rebuild: DuckDB cannot)
                return indexes_aside.run(self.con, aside, lambda: self._altered(
                    stmt, params, aside, skip))  # (DuckDB's, its indexes set aside)
            # DuckDB forgets an interrupt that came while it ran nothing (the catalog read
            # above, the Python between): the planner remembers it.
            if self.cancelled.is_set():
                raise query_canceled()
            result = statement.run(self.con, stmt, params, stream=stream, prepared=self.prepared)
            if self.cancelled.is_set() and result.rows is not None and result.rows.live:
                result.rows.close()  # (one that came just before DuckDB began: it still runs)
                raise query_canceled()
            # (the result's columns carry the statement's origins: `run` gave them)
            return existence.with_notice(result, skip)
        settings = self.settings
        if plan.explain is Explain.PLAN:
            planned = self.executor.estimate(plan, params, settings)
            return explain.result(explain.plan_lines(plan, planned, settings))
        planned = self.executor.estimate(plan, params, settings) if (
            plan.explain is Explain.ANALYZE) else []
        started = time.perf_counter()
        result = self.executor.run(stmt, params, settings)
        if plan.explain is Explain.ANALYZE:
            rows = result.rows.read_all().num_rows if result.rows is not None else 0
            lines = explain.analyze_lines(planned, result.work, rows,
                                          time.perf_counter() - started, settings)
            return explain.result(lines, result.work)
        return dataclasses.replace(_with_origins(result, stmt),
                                   notices=tuple(explain.summary(w) for w in result.work))

    # -- COPY and savepoints ----------------------------------------------------------------

    def bind_columns(self, sql: str) -> tuple[tuple[Column, str], ...]:
        """The result columns of a query (with their DuckDB type names), by binding it."""
        return statement.bind_columns(self.con, sql)

    def insert_rows(self, sql: str, name: str, rows: pa.RecordBatch) -> int:
        """Run an INSERT reading `rows` under `name`; the rows it inserted (jsonb normalized;
        the caller checks foreign keys once all are in: `keys_checked`)."""
        self._drawing()
        return statement.insert_rows(self.con, jsonb_storage.rewrite(sql, self._relations), name,
                                     rows)

    def insert_many(self, stmt: Statement, rows: Sequence[Sequence[Any]]) -> bool:
        """Run an INSERT once per parameter row in one go (`statement.insert_many`; foreign
        keys checked)."""
        if stmt.ai is not None:
            return False
        self._drawing()
        with self.keys_checked(stmt.sql):
            return statement.insert_many(self.con, stmt, rows)

    @contextlib.contextmanager
    def keys_checked(self, sql: str) -> Iterator[None]:
        """What runs within (the rows of the INSERT `sql`, by one statement or several: COPY's
        batches), as one with the checks of the foreign keys it involves, once at its end
        (`foreign_keys.enforce`)."""
        write = self._written(sql)
        if write is None:
            yield
            return
        with statement.atomic(self.con, opened=self._in_transaction):
            yield
            foreign_keys.enforce(self.con, self._foreign_keys(), write, self._block_deferred())

    def _block_deferred(self) -> foreign_keys.Deferred | None:
        """The transaction block's deferred keys (None outside one: its statement is its
        transaction)."""
        return self._deferred if self._in_transaction else None

    def set_constraints(self, names: Sequence[tuple[str, ...]], deferred: bool) -> None:
        """SET CONSTRAINTS { ALL | names } { DEFERRED | IMMEDIATE } in a transaction block: a
        named constraint that is no DEFERRABLE foreign key is not deferrable (42809); set
        IMMEDIATE, the checks its keys left run now (23503)."""
        keys = self._foreign_keys()
        if not names:
            self._deferred.set(None, deferred)
            if not deferred:
                self._deferred.check(self.con)
            return
        named = []
        for parts in names:
            found = [k for k in keys if k.name == parts[-1]
                     and (len(parts) == 1 or k.schema.lower() == parts[-2].lower())]
            if deferred and not any(k.deferrable for k in found):
                raise SqlError(SqlState.WRONG_OBJECT_TYPE,
                               f'constraint "{parts[-1]}" is not deferrable')
            named += found
        self._deferred.set([k.name for k in named], deferred)
        if not deferred:
            self._deferred.check(self.con, named)

    def column_defaults(self, table: str) -> tuple[str, ...]:
        """The default expressions of a table's columns (those that have one)."""
        return statement.column_defaults(self.con, table)

    # -- transactions ----------------------------------------------------------------------

    def begin(self) -> None:
        self._run("BEGIN TRANSACTION")
        self._in_transaction = True

    def commit(self) -> None:
        """Commit (the deferred foreign keys' checks and the temporary tables' ON COMMIT actions
        first); if that fails the transaction is rolled back and the error raised."""
        self._in_transaction = False
        deferred, self._deferred = self._deferred, foreign_keys.Deferred()
        try:
            deferred.check(self.con)  # (the foreign keys' checks left to the end)
            self.on_commit.before_commit(self.con)
            self._run("COMMIT")
        except SqlError:
            self.rollback()
            raise

    def rollback(self) -> None:
        """Roll back; never fails (after an error DuckDB may have ended the transaction)."""
        self._in_transaction = False
        with contextlib.suppress(SqlError):
            self._run("ROLLBACK")
        self.catalog.rolled_back()
        self.on_commit.rolled_back()
        self._deferred = foreign_keys.Deferred()

    def _run(self, sql: str) -> None:
        try:
            self.con.execute(sql)
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None

    # -- session ---------------------------------------------------------------------------

    def publish_settings(self, settings: Mapping[str, str]) -> None:
        """The session's run-time settings, as current_setting() should answer them; the
        planner's own (`planner.settings`) steer the AI statements that follow."""
        pg_catalog.publish_settings(self.con, settings)
        self.settings = Settings.of(settings)

    def interrupt(self) -> None:
        """Cancel the running statement (called from another thread). DuckDB forgets an
        interrupt that comes before its query begins, and `execute`'s thread may wait for the
        GIL between its look at `cancelled` and DuckDB's start: while the same statement runs,
        the interrupt is sent again every 10 ms, for at most a second."""
        self.cancelled.set()
        with self._interrupts:
            running = self._executing
            self.con.interrupt()
        if running is not None:
            threading.Thread(target=self._interrupt_again, args=(running,), daemon=True,
                             name="heron-interrupt").start()

    def _interrupt_again(self, running: object) -> None:
        for _ in range(100):
            time.sleep(0.01)
            with self._interrupts:
                if self._executing is not running:
                    return
                self.con.interrupt()

    def _drawing(self) -> None:
        """Keep what this session's nextval calls draw, from now on (`session_sequences`)."""
        if self._sequences is None:
            self._sequences = session_sequences.start(self.con)

    def discard_sequences(self) -> None:
        """DISCARD SEQUENCES: currval and lastval are undefined again in this session (its key
        forgotten; the next statement that may draw starts a new one)."""
        if self._sequences is not None:
            session_sequences.end(self._sequences)
            self._sequences = None

    def close(self) -> None:
        self.discard_sequences()
        self.con.close()


def _relation(key: foreign_keys.Key, renamed: foreign_keys.Altered | None = None
              ) -> existence.Relation:
    """The table whose key `key` is (under its new name where `renamed` renamed it), as
    `alter_table` finds it again: by name."""
    name = key.table
    if renamed is not None and renamed.renamed_to is not None and key.on(renamed.schema,
                                                                            renamed.table):
        name = renamed.renamed_to
    return existence.Relation(key.database, key.schema, name, 0)


def _with_origins(result: Result, stmt: Statement) -> Result:
    if stmt.origins is None or result.columns is None:
        return result
    return dataclasses.replace(result, columns=statement.with_origins(result.columns,
                                                                      stmt.origins))

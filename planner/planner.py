"""The planner facade: what the server's session calls for every statement.

Contract: a `Planner` serves one client session over one DuckDB connection (the per-connection
`pg_catalog` shim is installed on it) and an optional engine. `prepare(sql)` classifies and plans
one statement (`classify`, then `plan`) — a statement calling AI functions gets its `AiPlan` here,
once, and is refused here if it cannot run — and returns the frozen `Statement`; nothing runs.
`describe` gives its result columns without running it; `execute` runs it: statements without AI
functions go to DuckDB unchanged, AI statements through the `Executor` (EXPLAIN renders the plan
without the model, EXPLAIN ANALYZE runs it and shows the actual work), and every AI statement's
`Result` carries its work per operator plus one summary NOTICE each. `begin`, `commit` and
`rollback` are the transaction verbs of the connection; `interrupt` cancels the running statement
from another thread. Errors are `SqlError`s with PostgreSQL SQLSTATEs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from heron.engine.api import Engine
from heron.planner import (
    dialect,
    explain,
    logical,
    optimizer,
    pg_catalog,
    pg_catalog_rewrite,
    statement,
)
from heron.planner.errors import SqlError, bind_count_mismatch, from_duckdb
from heron.planner.executor import Executor
from heron.planner.logical import Explain
from heron.planner.statement import Column, Kind, Result, Statement

# Cheap test before parsing: statements that cannot contain AI calls skip sqlglot entirely.
MAYBE_AI = re.compile(r"\bAI(?:\s*\.\s*|_)\w+\s*\(", re.IGNORECASE)
# Statements that cannot call AI functions (session and transaction commands).
_NO_AI_KINDS = frozenset({Kind.EMPTY, Kind.BEGIN, Kind.COMMIT, Kind.ROLLBACK, Kind.TRANSACTION,
                          Kind.SET, Kind.RESET, Kind.SHOW, Kind.DEALLOCATE})
_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?P<analyze>ANALYZE\s+)?(?:VERBOSE\s+)?", re.IGNORECASE)


class Planner:
    def __init__(self, con: duckdb.DuckDBPyConnection, engine: Engine | None = None, *,
                 user: str = "heron", server_version: str = "16.4") -> None:
        self.con = con
        self.catalog = pg_catalog.Catalog(con, user, server_version)
        # Set by interrupt(): the engine stops the running AI statement between chunks.
        self.cancelled = threading.Event()
        self.executor = Executor(con, engine, self.cancelled)

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
        return statement.classify(self.con, pg_catalog_rewrite.rewrite(sql))

    def plan(self, stmt: Statement) -> Statement:
        """The statement with its AI plan, when it calls AI functions; refuses those it cannot
        run. Nothing runs (binding reads the catalog)."""
        if stmt.kind in _NO_AI_KINDS or not MAYBE_AI.search(stmt.sql):
            return stmt
        match = _EXPLAIN.match(stmt.sql)
        mode = Explain.NONE if match is None else (
            Explain.ANALYZE if match["analyze"] else Explain.PLAN)
        tree = dialect.parse(stmt.sql[match.end():] if match else stmt.sql)
        plan = logical.build(self.con, tree, mode)
        if plan is None:
            return stmt
        if mode is not Explain.NONE:  # the plan's rows replace the statement's
            stmt = dataclasses.replace(stmt, returns_rows=True, bindable=False)
        return dataclasses.replace(stmt, ai=optimizer.optimize(plan))

    def describe(self, stmt: Statement, params: Sequence[Any] | None = None
                 ) -> tuple[Column, ...] | None:
        """Result columns without running anything; None when the statement returns no rows or
        its columns are known only by running it. `params` (a bound portal's values) may decide
        the types of columns computed from them."""
        if stmt.ai is None:
            return statement.describe(self.con, stmt, params=params)
        if stmt.ai.explain is not Explain.NONE:
            return (explain.PLAN_COLUMN,)
        if not stmt.returns_rows:
            return None
        return self.executor.describe(stmt, params)

    def execute(self, stmt: Statement, params: Sequence[Any] = ()) -> Result:
        if len(params) != stmt.param_count:
            raise bind_count_mismatch(len(params), stmt.param_count)
        plan = stmt.ai
        if plan is None:
            self.catalog.refresh(stmt.sql)
            return statement.run(self.con, stmt, params)
        if plan.explain is Explain.PLAN:
            return explain.result(explain.plan_lines(plan, self.executor.estimate(plan, params)))
        started = time.perf_counter()
        result = self.executor.run(stmt, params)
        if plan.explain is Explain.ANALYZE:
            rows = result.table.num_rows if result.table is not None else 0
            lines = explain.analyze_lines(plan, result.work, rows, time.perf_counter() - started)
            return explain.result(lines, result.work)
        return dataclasses.replace(result, notices=tuple(explain.summary(w) for w in result.work))

    # -- transactions ----------------------------------------------------------------------

    def begin(self) -> None:
        self._run("BEGIN TRANSACTION")

    def commit(self) -> None:
        """Commit; if that fails the transaction is rolled back and the error raised."""
        try:
            self._run("COMMIT")
        except SqlError:
            self.rollback()
            raise

    def rollback(self) -> None:
        """Roll back; never fails (after an error DuckDB may have ended the transaction)."""
        with contextlib.suppress(SqlError):
            self._run("ROLLBACK")

    def _run(self, sql: str) -> None:
        try:
            self.con.execute(sql)
        except duckdb.Error as exc:
            raise from_duckdb(exc) from None

    # -- session ---------------------------------------------------------------------------

    def publish_settings(self, settings: Mapping[str, str]) -> None:
        """The session's run-time settings, as current_setting() should answer them."""
        pg_catalog.publish_settings(self.con, settings)

    def interrupt(self) -> None:
        """Cancel the running statement (called from another thread)."""
        self.cancelled.set()
        self.con.interrupt()

    def close(self) -> None:
        self.con.close()

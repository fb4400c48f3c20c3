"""One session's planner: prepare, describe and execute statements, AI or not.

Contract: see the package docstring. A `Plan` is immutable and may be executed many times with
different parameters (extended-protocol prepared statements).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from heron.planner import pg_catalog, statement
from heron.planner.errors import SqlError, SqlState
from heron.planner.statement import Column, Prepared, Result


@dataclass(frozen=True, slots=True)
class Plan:
    prepared: Prepared
    ai: Any = None  # planner.ai.AiStatement when the statement calls AI functions

    @property
    def param_count(self) -> int:
        return self.prepared.param_count

    @property
    def returns_rows(self) -> bool:
        return self.prepared.returns_rows


class Planner:
    def __init__(self, con: duckdb.DuckDBPyConnection, engine: Any = None, *,
                 user: str = "heron", server_version: str = "16.4") -> None:
        self.con = con
        pg_catalog.install(con, user, server_version)
        self.engine = engine  # engine.api.Engine, or None when no model is loaded
        self.last_ai_stats: list = []  # planner.ai.OperatorStats of the last AI statement
        # Set by interrupt(): the engine stops the running AI statement between chunks.
        self.cancelled = threading.Event()

    def prepare(self, sql: str) -> Plan:
        from heron.planner import ai

        prepared = statement.prepare(self.con, pg_catalog.rewrite(sql))
        return Plan(prepared, ai.analyze(prepared))

    def describe(self, plan: Plan, params: Sequence[Any] | None = None
                 ) -> tuple[Column, ...] | None:
        """Result columns without running anything; None when the statement returns no rows or
        its columns are known only by running it. `params` (a bound portal's values) may decide
        the types of columns computed from them."""
        if plan.ai is not None:
            from heron.planner import ai

            return ai.describe(self, plan, params)
        return statement.describe(self.con, plan.prepared, params=params)

    def execute(self, plan: Plan, params: Sequence[Any] = ()) -> Result:
        if plan.ai is not None:
            from heron.planner import ai

            if self.engine is None:
                raise SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                               "AI functions need a model; start heron serve with --model")
            self.cancelled.clear()
            return ai.execute(self, plan, params)
        return statement.run(self.con, plan.prepared, params)

    def publish_settings(self, settings: Mapping[str, str]) -> None:
        """The session's run-time settings, as current_setting() should answer them."""
        pg_catalog.publish_settings(self.con, settings)

    def interrupt(self) -> None:
        """Cancel the running statement (called from another thread)."""
        self.cancelled.set()
        self.con.interrupt()

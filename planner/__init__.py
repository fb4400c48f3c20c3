"""The planner: from SQL text to relational work for DuckDB and AI work for the engine.

Contract: see `planner.planner` (the facade the server calls). Errors are `SqlError`s with
PostgreSQL SQLSTATEs. This package never imports torch: the engine is reached through the
`engine.api.Engine` protocol.
"""

from heron.planner.errors import SqlError, SqlState
from heron.planner.planner import Planner
from heron.planner.statement import Column, Kind, Result, Statement, split

__all__ = ["Column", "Kind", "Planner", "Result", "SqlError", "SqlState", "Statement", "split"]

"""The planner: from SQL text to relational work for DuckDB and AI work for the engine.

Contract: a `Planner` serves one client session over one DuckDB connection. `prepare(sql)` parses
and classifies one statement (AI functions found, nothing run); `describe` gives its result columns
without running it; `execute` runs it: statements without AI functions go to DuckDB unchanged,
statements with AI functions are planned into AI operators whose answers become Arrow tables that
the rewritten statement joins against in DuckDB. Errors are `SqlError`s with PostgreSQL SQLSTATEs.
This package never imports torch: the engine is reached through the `engine.api.Engine` protocol.
"""

from heron.planner.errors import SqlError
from heron.planner.session import Plan, Planner
from heron.planner.statement import Column, Result, split

__all__ = ["Column", "Plan", "Planner", "Result", "SqlError", "split"]

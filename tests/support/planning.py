"""Running statements through a bare `Planner` (a plain in-memory DuckDB, no server), or a
server's `Session` without its wire: the helpers the planner's statement-level tests share.
Their `planner` fixture is tests/planner/conftest.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from heron.planner.planner import Planner
from heron.planner.statement import Result

if TYPE_CHECKING:
    from heron.server.session import Session


def run(planner: Planner, sql: str) -> Result:
    """Prepare and execute one statement."""
    return planner.execute(planner.prepare(sql))


def rows(planner: Planner, sql: str) -> list[tuple]:
    """The rows a statement returns, as tuples."""
    result = run(planner, sql)
    assert result.rows is not None
    return [tuple(row.values()) for row in result.rows.read_all().to_pylist()]


def session_rows(session: Session, sql: str) -> list[tuple]:
    """The rows a statement returns through a session, as tuples (none for a command)."""
    result = session.execute(session.prepare(sql))
    if result.rows is None:
        return []
    return [tuple(row.values()) for row in result.rows.read_all().to_pylist()]

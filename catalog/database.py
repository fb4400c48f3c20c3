"""The data directory and its DuckDB database.

Contract: `Database(data_dir)` creates the directory if needed, opens (or creates) the database file
`heron.duckdb` inside it and, on the first start only, loads the demo tables. It also holds what
the planner learns and keeps for every session of the server: `statistics` (observed AI
selectivities, saved in `statistics.json` when the database closes) and `answers` (the answer
store). Each client session gets its own DuckDB connection from `connect()`: connections share
the catalog and data but have their own transaction. The DuckDB catalog is named `heron` (after
the file), which matches the database name clients connect to.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from heron.catalog import demo
from heron.catalog.answers import AnswerStore
from heron.catalog.statistics import Statistics

DATABASE_FILE = "heron.duckdb"
STATISTICS_FILE = "statistics.json"


class Database:
    """One open data directory; thread-safe to `connect()` from any thread."""

    def __init__(self, data_dir: str | Path, *, load_demo: bool = True) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DATABASE_FILE
        first_start = not self.path.exists()
        self._root = duckdb.connect(str(self.path))
        if first_start and load_demo:
            demo.load(self._root)
        self.statistics = Statistics.load(self.data_dir / STATISTICS_FILE)
        self.answers = AnswerStore()

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A new connection to the same database, for one session. The demo schema is on its
        search path after `main`, so `reviews` names `demo.reviews` until the user creates a
        `reviews` of their own."""
        con = self._root.cursor()
        has_demo = con.execute("SELECT count(*) FROM duckdb_schemas() WHERE schema_name = ?",
                               [demo.SCHEMA]).fetchall()[0][0]
        if has_demo:
            con.execute(f"SET search_path = 'main,{demo.SCHEMA}'")
        return con

    def close(self) -> None:
        # CHECKPOINT folds the write-ahead log into the file so the next start opens quickly.
        self._root.execute("CHECKPOINT")
        self.statistics.save(self.data_dir / STATISTICS_FILE)
        self._root.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Portals: a statement bound to its parameters, and where its reader stands in the result.

Contract: a `Portal` is what Bind creates in the extended protocol and what DECLARE creates in SQL
(PostgreSQL keeps both in one namespace, so FETCH can read a protocol portal and Execute a
cursor). It starts at most once (`start`, which the session runs); its rows are then read forward
in batches (`next`, bounded memory: a SELECT streams from DuckDB). A SQL cursor also answers
FETCH and MOVE in every direction (`fetch`) with PostgreSQL's positions (before the first row, on
a row, after the last): backward moves need SCROLL (else 55000, as in PostgreSQL), for which the
rows read so far are kept. A cursor WITH HOLD outlives its transaction: `hold` reads the rest of
its rows into memory at COMMIT, as PostgreSQL materializes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from heron.planner import Column, Result, SqlError, SqlState, Statement
from heron.planner.commands import DeclareCommand, Direction, FetchCommand
from heron.planner.statement import Rows


@dataclass
class Portal:
    statement: Statement
    params: list[Any]
    formats: tuple[int, ...] = ()  # result format codes, as Bind gave them
    # The columns the client was told about (Describe of the statement or portal); rows must be
    # sent with exactly these types even when the parameters changed what DuckDB inferred.
    promised: tuple[Column, ...] | None = None
    cursor: DeclareCommand | None = None  # a SQL cursor's declaration; None for Bind's portals
    result: Result | None = None  # once started
    position: int = 0  # 0: before the first row; n: on row n; past the end: rows + 1
    _seen: list[pa.RecordBatch] = field(default_factory=list)  # SCROLL: every row read so far
    _read: int = 0  # rows taken from the result so far
    _exhausted: bool = False

    @property
    def started(self) -> bool:
        return self.result is not None

    def start(self, result: Result) -> None:
        self.result = result

    @property
    def rows(self) -> Rows | None:
        return None if self.result is None else self.result.rows

    @property
    def scroll(self) -> bool:
        return self.cursor is not None and self.cursor.scroll

    # -- reading forward -----------------------------------------------------------------------

    def next(self, max_rows: int) -> pa.RecordBatch | None:
        """The rows after the current position (at most `max_rows`, any number when 0), moving
        onto the last of them; None, and the position after the last row, once there are no
        more."""
        if self.scroll and self.position < self._read:
            count = self._read - self.position
            batch = self._seen_rows(self.position + 1, min(count, max_rows or count))
        else:
            batch = self._pull(max_rows)
        if batch is None:
            self.position = self._read + 1
            return None
        self.position += batch.num_rows
        return batch

    def _pull(self, max_rows: int) -> pa.RecordBatch | None:
        rows = self.rows
        batch = None if rows is None or self._exhausted else rows.next(max_rows)
        if batch is None:
            self._exhausted = True
            return None
        self._read += batch.num_rows
        if self.scroll:
            self._seen.append(batch)
        return batch

    def _seen_rows(self, first: int, count: int) -> pa.RecordBatch:
        """Rows first .. first+count-1 (1-based) of those already read (SCROLL cursors)."""
        table = pa.Table.from_batches(self._seen, self.schema).slice(first - 1, count)
        if not table.num_rows:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        return table.combine_chunks().to_batches()[0]

    @property
    def schema(self) -> pa.Schema:
        assert self.rows is not None
        return self.rows.schema

    def hold(self) -> None:
        """Keep the rows past the end of the transaction (WITH HOLD): read them into memory."""
        if self.rows is not None:
            self.rows.detach()

    def close(self) -> None:
        if self.rows is not None:
            self.rows.close()

    # -- FETCH and MOVE --------------------------------------------------------------------------

    def fetch(self, command: FetchCommand) -> Result:
        """FETCH (its rows, tagged "FETCH n" as they are sent) or MOVE ("MOVE n"), in
        `command`'s direction."""
        assert self.result is not None and self.result.columns is not None
        direction, count = command.direction, command.count
        if direction is Direction.FORWARD and count != 0:
            if command.move:
                return Result(f"MOVE {sum(b.num_rows for b in self._forward(count))}", None, None)
            # Streamed as the client takes them: FETCH ALL of a large cursor stays bounded.
            return Result("FETCH", self.result.columns, Rows(self.schema, self._forward(count)))
        self._require_scroll()
        if direction is Direction.BACKWARD:
            batches = self._backward(count)
        elif direction is Direction.FORWARD:  # FORWARD 0: the current row again
            batches = self._row(self.position)
        else:
            target = count if direction is Direction.ABSOLUTE else self.position + count
            batches = self._row(target if direction is Direction.RELATIVE or target >= 0 else
                                self._total() + 1 + target)
        moved = sum(b.num_rows for b in batches)
        if command.move:
            return Result(f"MOVE {moved}", None, None)
        table = pa.Table.from_batches(batches, self.schema)
        return Result("FETCH", self.result.columns, Rows.of(table))

    def _forward(self, count: int | None) -> Iterator[pa.RecordBatch]:
        """The next `count` rows (None: all), in batches, moving past them."""
        left = count
        while left is None or left > 0:
            batch = self.next(0 if left is None else left)
            if batch is None:
                return
            if left is not None:
                left -= batch.num_rows
            yield batch

    def _require_scroll(self) -> None:
        if not self.scroll:
            raise SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                           "cursor can only scan forward",
                           hint="Declare it with SCROLL option to enable backward scan.")

    def _total(self) -> int:
        """The number of rows, reading the rest (kept: this cursor scrolls)."""
        while self._pull(0) is not None:
            pass
        return self._read

    def _backward(self, count: int | None) -> list[pa.RecordBatch]:
        """The rows before the current one, nearest first, moving onto the farthest of them (or
        before the first row when there were fewer than `count`)."""
        current = min(self.position, self._read + 1)
        first = 1 if count is None else max(1, current - count)
        wanted = current - first
        self.position = first if count is not None and current - count >= 1 else 0
        if wanted <= 0:
            return []
        batch = self._seen_rows(first, wanted)
        return [batch.take(pa.array(range(batch.num_rows - 1, -1, -1)))]

    def _row(self, target: int) -> list[pa.RecordBatch]:
        """The single row at position `target`, moving there (before the first or after the
        last row when there is none)."""
        if target <= 0:
            self.position = 0
            return []
        while self._read < target and self._pull(0) is not None:
            pass
        if target > self._read:
            self.position = self._read + 1
            return []
        self.position = target
        return [self._seen_rows(target, 1)]

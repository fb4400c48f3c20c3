"""currval and lastval as PostgreSQL's: the values that this session's nextval calls drew.

DuckDB's currval answers the value a sequence last gave in any session, and DuckDB has no
lastval: a client that reads back the key its INSERT drew (`SELECT currval('t_id_seq')`, PHP's
PDO lastInsertId, `SELECT lastval()`) got another session's key while two inserted at once.

Contract:
- `MACROS` (shared by the sessions: `shared_macros`) put `nextval` in place of DuckDB's, for
  explicit calls and for the column defaults that call it (serial and identity columns: DuckDB
  binds a default through the inserting session's search path). Each value drawn passes through
  `DRAWN_FUNCTION`, which keeps, for the session that drew it, the sequence's last value and
  which sequence it drew from last; `currval(sequence)` answers the one, `lastval()` the other's
  last value, and both fail with 55000 in PostgreSQL's words where the session has drawn none.
- A session is known by the DuckDB variable `VARIABLE` on its connection: `start(con)` sets it
  and returns the session's key, `end(key)` forgets what it drew. On a connection without it,
  nextval and currval are DuckDB's.
- `set_on(con, sequence, value)` is what setval (`planner.sequences`) calls: PostgreSQL's setval
  (is_called) makes its value the session's currval of the sequence (and lastval's, where it is
  the sequence nextval drew from last).
- `register(con)` registers the functions the macros call (on each database, and on the
  macros' own file, where they are bound when created).

Sequences are told apart by their name as written, less its schema (folded to lower case unless
quoted): sequences of one name in two schemas share a currval. A parallel INSERT of many rows
keeps the last value of the last chunk DuckDB finished, where PostgreSQL's is the last value
drawn.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from heron.planner.commands import identifier
from heron.planner.errors import SqlError, SqlState, carried

VARIABLE = "heron_session_sequences"
DRAWN_FUNCTION = "heron_nextval_drawn"
CURRVAL_FUNCTION = "heron_currval"
LASTVAL_FUNCTION = "heron_lastval"

_KEY = f"getvariable('{VARIABLE}')"
MACROS = {
    "nextval": (("heron_s", f"{DRAWN_FUNCTION}({_KEY}, heron_s, system.main.nextval(heron_s))"),),
    "currval": (("heron_s", f"CASE WHEN {_KEY} IS NULL THEN system.main.currval(heron_s) "
                            f"ELSE {CURRVAL_FUNCTION}({_KEY}, heron_s) END"),),
    "lastval": (("", f"{LASTVAL_FUNCTION}({_KEY})"),),
}


@dataclass
class _Drawn:
    """What one session's nextval calls drew."""

    last: dict[str, int] = field(default_factory=dict)  # by sequence
    latest: str | None = None  # the sequence drawn from last


_lock = threading.Lock()
_sessions: dict[int, _Drawn] = {}


def start(con: duckdb.DuckDBPyConnection) -> int:
    """Make `con` a session's connection whose draws are kept; its key."""
    key = secrets.randbits(62)  # (a client may SET the variable: another's cannot be guessed)
    with _lock:
        _sessions[key] = _Drawn()
    con.execute(f"SET VARIABLE {VARIABLE} = {key}")
    return key


def end(key: int) -> None:
    with _lock:
        _sessions.pop(key, None)


def drawn(key: int, sequence: str, value: int, *, by_nextval: bool = True) -> None:
    """`value` was drawn from `sequence` (as written) in the session `key` (or set there by
    setval: not `by_nextval`)."""
    with _lock:
        session = _sessions.get(key)
        if session is not None:
            session.last[_name(sequence)] = value
            if by_nextval:
                session.latest = _name(sequence)


def set_on(con: duckdb.DuckDBPyConnection, sequence: str, value: int) -> None:
    """setval gave `sequence` `value` (is_called) in the session of `con` (if it is one's)."""
    key = con.execute(f"SELECT {_KEY}").fetchall()[0][0]
    if key is not None:
        drawn(key, sequence, value, by_nextval=False)


def register(con: duckdb.DuckDBPyConnection) -> None:
    con.create_function(DRAWN_FUNCTION, _drawn_values, ["BIGINT", "VARCHAR", "BIGINT"], "BIGINT",
                        type="arrow", null_handling="special", side_effects=True)
    con.create_function(CURRVAL_FUNCTION, _currval, ["BIGINT", "VARCHAR"], "BIGINT",
                        null_handling="special", side_effects=True)
    con.create_function(LASTVAL_FUNCTION, _lastval, ["BIGINT"], "BIGINT",
                        null_handling="special", side_effects=True)


def _drawn_values(keys: pa.Array, sequences: pa.Array, values: pa.Array) -> pa.Array:
    """Keep a chunk's last value drawn (see the module contract); the values, unchanged."""
    if len(values) and keys[-1].is_valid and values[-1].is_valid:
        drawn(keys[-1].as_py(), sequences[-1].as_py(), values[-1].as_py())
    return values


def _currval(key: int | None, sequence: str | None) -> int | None:
    if key is None or sequence is None:
        return None
    with _lock:
        session = _sessions.get(key)
        value = None if session is None else session.last.get(_name(sequence))
    if value is None:
        raise carried(SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                               f'currval of sequence "{_name(sequence)}" is not yet defined in '
                               "this session"))
    return value


def _lastval(key: int | None) -> int | None:
    with _lock:
        session = _sessions.get(key) if key is not None else None
        value = None if session is None or session.latest is None else (
            session.last[session.latest])
    if value is None:
        raise carried(SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE,
                               "lastval is not yet defined in this session"))
    return value


def _name(sequence: str) -> str:
    """A sequence's name as written, less its schema, folded as PostgreSQL folds names."""
    return identifier(sequence.strip().rsplit(".", 1)[-1].strip())

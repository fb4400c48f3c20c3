"""EXPLAIN of a statement DuckDB runs alone (no AI call), answered as PostgreSQL answers it.

PostgreSQL's EXPLAIN answers one text column, `QUERY PLAN`, a row per line of the plan, tagged
EXPLAIN; psql, pgAdmin and DBeaver show it so. DuckDB's answers two columns (the plan's kind and
the whole rendered tree in one value), and its grammar takes neither `EXPLAIN VERBOSE` nor
PostgreSQL's options in parentheses.

Contract:
- `read(sql)` reads `EXPLAIN [ANALYZE] [VERBOSE] statement` and `EXPLAIN (option [value] [, ...])
  statement` into an `Explained` (ANALYZE's value decides whether the statement runs; VERBOSE,
  COSTS, SETTINGS, BUFFERS, WAL, TIMING, SUMMARY and FORMAT TEXT change nothing here); None for
  anything else. `FORMAT JSON | XML | YAML` is 0A000: tools that ask for them read PostgreSQL's
  plan nodes, which DuckDB's plan is not; another option or a value that is not a boolean is
  42601, an unknown format 22023, as PostgreSQL's errors say.
- `run(con, explained, params)` runs DuckDB's `EXPLAIN [ANALYZE]` of the statement with its
  parameters and answers the rendered plan's lines as `QUERY PLAN` rows (`explain.result`,
  as an AI statement's plan), tagged EXPLAIN.
  EXPLAIN ANALYZE of a write writes, as PostgreSQL's does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from heron.planner import explain
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.statement import Result

_PLAIN = re.compile(r"^\s*EXPLAIN\s+(?P<analyze>ANALY[SZ]E\s+)?(?:VERBOSE\s+)?(?P<statement>\S.*)$",
                    re.IGNORECASE | re.DOTALL)
_OPTIONS = re.compile(r"^\s*EXPLAIN\s*\((?P<options>[^()]*)\)\s*(?P<statement>\S.*)$",
                      re.IGNORECASE | re.DOTALL)
_BOOLEAN_OPTIONS = frozenset({"analyze", "verbose", "costs", "settings", "buffers", "wal",
                              "timing", "summary"})
_TRUE = frozenset({"true", "on", "1", "yes", "t", "y"})
_FALSE = frozenset({"false", "off", "0", "no", "f", "n"})
_FORMATS = frozenset({"text", "json", "xml", "yaml"})


@dataclass(frozen=True)
class Explained:
    analyze: bool
    statement: str  # the statement explained, as written


def read(sql: str) -> Explained | None:
    """The EXPLAIN `sql` is, if it is one (see the module docstring)."""
    if (m := _OPTIONS.match(sql)) is not None:
        analyze = False
        for option in (o.strip() for o in m["options"].split(",")):
            name, _, value = option.partition(" ")
            name, value = name.lower(), value.strip().strip("'").lower()
            if name == "format":
                if value not in _FORMATS:
                    raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                                   f'unrecognized value for EXPLAIN option "format": "{value}"')
                if value != "text":
                    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                                   f"EXPLAIN (FORMAT {value.upper()}) is not supported",
                                   hint="Heron's plans are DuckDB's; FORMAT TEXT shows them.")
                continue
            if name not in _BOOLEAN_OPTIONS:
                raise SqlError(SqlState.SYNTAX_ERROR, f'unrecognized EXPLAIN option "{name}"')
            if value and value not in _TRUE | _FALSE:
                raise SqlError(SqlState.SYNTAX_ERROR, f"{name} requires a Boolean value")
            if name == "analyze":
                analyze = value not in _FALSE
        return Explained(analyze, m["statement"])
    if (m := _PLAIN.match(sql)) is not None and not m["statement"].startswith("("):
        return Explained(m["analyze"] is not None, m["statement"])
    return None


def run(con: duckdb.DuckDBPyConnection, explained: Explained, params: Sequence[Any] = ()
        ) -> Result:
    """DuckDB's plan of the statement, as PostgreSQL's QUERY PLAN rows."""
    verb = "EXPLAIN ANALYZE" if explained.analyze else "EXPLAIN"
    try:
        rows = con.execute(f"{verb} {explained.statement}", list(params) or None).fetchall()
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    lines = [line for _, plan in rows for line in str(plan).rstrip("\n").split("\n")]
    return explain.result(lines)

"""PostgreSQL's text of the values whose DuckDB cast to text prints otherwise: intervals and
arrays.

DuckDB's cast of a list prints `[1, 2]`, `[a, b c]`, `[true, NULL]`; PostgreSQL's array_out
prints `{1,2}`, `{a,"b c"}`, `{t,NULL}`: elements joined by commas, inner arrays in braces, an
element double-quoted (with `\\` before `"` and `\\`) when it is empty, NULL as text, or holds a
brace, comma, quote, backslash or white space; booleans as t and f.

Contract:
- `TEXT_MACRO` is the macro (`MACROS`, shared by the sessions: `shared_macros`) that
  `pg_semantics.rewrite` puts in place of a cast to text whose operand may be an interval or an
  array: `pg_interval.FUNCTION` of an interval, `ARRAY_FUNCTION` of a list's JSON (DuckDB's
  to_json, which binds for every type and keeps strings apart from numbers, booleans and NULL),
  DuckDB's cast of anything else. DuckDB binds `typeof(x)` to a constant and folds the CASE on
  it, so the macro costs a statement nothing where its operand is neither.
- `register(con)` registers `ARRAY_FUNCTION` (VARCHAR -> VARCHAR); `array_text(json)` is what
  it computes for one value.
- `element_text(text)` quotes one element as array_out does (the wire's arrays too:
  `server.encode`).

Elements print as DuckDB's JSON has them: a decimal keeps its column's scale (`{1.5,2.0}` where
PostgreSQL's numeric prints `{1.5,2}`), an interval DuckDB's text; a struct as a row (record_out's
text: `(1,"a b")`).
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from heron.planner import pg_interval

TEXT_MACRO = "heron_text"
ARRAY_FUNCTION = "heron_array_out"
# A cast of an interval goes through DuckDB's text and back to reach pg_interval's function: the
# branch is bound for every operand type, and only text has a cast to INTERVAL (DuckDB's text of
# an interval reads back the same). A fixed-size list's type ends in `[n]`.
MACROS = {TEXT_MACRO: (("heron_x", "CASE WHEN typeof(heron_x) = 'INTERVAL' THEN "
                                   f"{pg_interval.FUNCTION}(CAST(CAST(heron_x AS VARCHAR) AS "
                                   "INTERVAL)) WHEN typeof(heron_x) LIKE '%]' THEN "
                                   f"{ARRAY_FUNCTION}(CAST(to_json(heron_x) AS VARCHAR)) "
                                   "ELSE CAST(heron_x AS VARCHAR) END"),)}

_SPECIAL = frozenset('{},"\\ \t\n\r\v\f')
_ROW_SPECIAL = frozenset('(),"\\ \t\n\r\v\f')
# JSON's words for the floats it has no numbers for, as PostgreSQL prints them.
_CONSTANTS = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}


def element_text(text: str | None) -> str:
    """One element of an array's text, quoted the way PostgreSQL's array_out quotes it."""
    if text is None:
        return "NULL"
    if text == "" or text.upper() == "NULL" or not _SPECIAL.isdisjoint(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def array_text(value_json: str) -> str:
    """PostgreSQL's text of the array whose JSON (DuckDB's to_json of a list) is given."""
    return _text(json.loads(value_json, parse_float=str, parse_int=str,
                            parse_constant=_CONSTANTS.__getitem__))


def _text(values: list[Any]) -> str:
    return "{" + ",".join(_text(v) if isinstance(v, list) else element_text(_element(v))
                          for v in values) + "}"


def _element(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, list):
        return _text(value)
    # A struct (or a map): PostgreSQL's text of a row, record_out's.
    return "(" + ",".join(_field_text(_element(v)) for v in value.values()) + ")"


def _field_text(text: str | None) -> str:
    """One field of a row's text, quoted the way PostgreSQL's record_out quotes it."""
    if text is None:
        return ""
    if text == "" or not _ROW_SPECIAL.isdisjoint(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '""') + '"'
    return text


def register(con: duckdb.DuckDBPyConnection) -> None:
    con.create_function(ARRAY_FUNCTION, array_text, ["VARCHAR"], "VARCHAR")

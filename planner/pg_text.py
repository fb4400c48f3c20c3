"""PostgreSQL's text of the values whose DuckDB cast to text prints otherwise: intervals, arrays
and floats.

DuckDB's cast of a list prints `[1, 2]`, `[a, b c]`, `[true, NULL]`; PostgreSQL's array_out
prints `{1,2}`, `{a,"b c"}`, `{t,NULL}`: elements joined by commas, inner arrays in braces, an
element double-quoted (with `\\` before `"` and `\\`) when it is empty, NULL as text, or holds a
brace, comma, quote, backslash or white space; booleans as t and f. DuckDB prints a float
`2.0`; PostgreSQL's float8out `2` (shortest digits that read back the same, in exponent notation
below 1e-4 and from 1e15, 1e6 for float4: `1e+15`).

Contract:
- `TEXT_MACRO` is the macro (`MACROS`, shared by the sessions: `shared_macros`) that
  `pg_semantics.rewrite` puts in place of a cast to text whose operand may be an interval, an
  array or a float: `pg_interval.FUNCTION` of an interval, `ARRAY_FUNCTION` of a list's JSON
  (DuckDB's to_json, which binds for every type and keeps strings apart from numbers, booleans
  and NULL), `FLOAT8_FUNCTION` / `FLOAT4_FUNCTION` of a double / float, DuckDB's cast of
  anything else. DuckDB binds `typeof(x)` to a constant and folds the CASE on it, so the macro
  costs a statement nothing where its operand is none of these.
- `OUTPUT_MACRO` is the text a type's output function gives (what concat, concat_ws and
  format() print; a cast to text may differ): `TEXT_MACRO`'s, but a boolean is `t` or `f`
  (its cast to text is `true` or `false`).
- `register(con)` registers those functions; `array_text(json, type_name)` is what
  `ARRAY_FUNCTION` computes for one value, `float_texts(array)` what the float functions
  compute for an Arrow array of floats (the wire's text of floats too: `server.encode`),
  `float_text(x, shortest, max_exponent)` the reference it follows for one value.
- `element_text(text)` quotes one element as array_out does (the wire's arrays too).

Elements print as DuckDB's JSON has them but for floats: a decimal keeps its column's scale
(`{1.5,2.0}` where PostgreSQL's numeric prints `{1.5,2}`), an interval DuckDB's text; a struct
as a row (record_out's text: `(1,"a b")`).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from heron.planner import pg_interval

TEXT_MACRO = "heron_text"
OUTPUT_MACRO = "heron_output"
ARRAY_FUNCTION = "heron_array_out"
FLOAT8_FUNCTION = "heron_float8_out"
FLOAT4_FUNCTION = "heron_float4_out"
# An interval or a float goes through DuckDB's text and back to reach its function: each branch
# is bound for every operand type, and text casts to anything (DuckDB's text of an interval or a
# float reads back the same value). A fixed-size list's type ends in `[n]`.
MACROS = {TEXT_MACRO: (("heron_x", "CASE WHEN typeof(heron_x) = 'INTERVAL' THEN "
                                   f"{pg_interval.FUNCTION}(CAST(CAST(heron_x AS VARCHAR) AS "
                                   "INTERVAL)) WHEN typeof(heron_x) LIKE '%]' THEN "
                                   f"{ARRAY_FUNCTION}(CAST(to_json(heron_x) AS VARCHAR), "
                                   "typeof(heron_x)) "
                                   f"WHEN typeof(heron_x) = 'DOUBLE' THEN {FLOAT8_FUNCTION}("
                                   "CAST(CAST(heron_x AS VARCHAR) AS DOUBLE)) "
                                   f"WHEN typeof(heron_x) = 'FLOAT' THEN {FLOAT4_FUNCTION}("
                                   "CAST(CAST(heron_x AS VARCHAR) AS FLOAT)) "
                                   "ELSE CAST(heron_x AS VARCHAR) END"),),
          OUTPUT_MACRO: (("heron_x", "CASE WHEN typeof(heron_x) = 'BOOLEAN' THEN "
                                     "left(CAST(heron_x AS VARCHAR), 1) "
                                     f"ELSE {TEXT_MACRO}(heron_x) END"),)}

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


def array_text(value_json: str, type_name: str = "") -> str:
    """PostgreSQL's text of the array whose JSON (DuckDB's to_json of a list) is given, and whose
    DuckDB type is `type_name` (`DOUBLE[]`: its numbers print as float8out prints them)."""
    element = type_name.split("[", 1)[0]
    if element in ("DOUBLE", "FLOAT"):
        digits = 15 if element == "DOUBLE" else 6

        def number(text: str) -> str:
            x = float(text)
            return float_text(x, repr(x) if digits == 15 else str(np.float32(x)), digits)

        return _text(json.loads(value_json, parse_float=number, parse_int=number,
                                parse_constant=number))
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


def float_text(x: float, shortest: str, max_exponent: int) -> str:
    """PostgreSQL's float output of `x`, whose shortest round-trip digits are `shortest`: fixed
    notation for decimal exponents in [-4, max_exponent) (15 for float8, 6 for float4), else
    d.ddde+XX."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign, digit_tuple, exp = Decimal(shortest).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    e10 = int(exp) + len(digits) - 1
    if -4 <= e10 < max_exponent:
        if int(exp) >= 0:
            text = digits + "0" * int(exp)
        elif e10 >= 0:
            text = digits[: e10 + 1] + "." + digits[e10 + 1 :]
        else:
            text = "0." + "0" * (-e10 - 1) + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{mantissa}e{'-' if e10 < 0 else '+'}{abs(e10):02d}"
    return "-" + text if sign else text


def float_texts(a: pa.Array) -> pa.Array:
    """PostgreSQL's text of an array of floats (NULL kept). A double's is Python's shortest
    round-trip repr, which agrees with it but for a trailing ".0", the spelling of NaN and the
    infinities, and exponents of 15 (PostgreSQL switches to e-notation one decade earlier); those
    few go through `float_text`. A float4's comes from numpy's shortest digits of a float32."""
    values = a.fill_null(0).to_numpy(zero_copy_only=False)
    if a.type.bit_width <= 32:
        strings = pa.array([float_text(float(v), str(np.float32(v)), 6) for v in values],
                           pa.string())
    else:
        texts = [repr(v) for v in values.tolist()]
        magnitude = np.abs(values)
        for i in np.flatnonzero((magnitude >= 1e15) & (magnitude < 1e16)):
            texts[i] = float_text(float(values[i]), repr(float(values[i])), 15)
        strings = pa.array(texts, pa.string())
        strings = pc.replace_substring_regex(strings, r"\.0$", "")
        strings = pc.replace_substring_regex(strings, r"^(-?)inf$", r"\1Infinity")
        strings = pc.replace_substring(strings, "nan", "NaN")
    return pc.if_else(pc.is_valid(a), strings, pa.scalar(None, pa.string()))


def _float_texts(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return float_texts(values)


def register(con: duckdb.DuckDBPyConnection) -> None:
    con.create_function(ARRAY_FUNCTION, array_text, ["VARCHAR", "VARCHAR"], "VARCHAR")
    con.create_function(FLOAT8_FUNCTION, _float_texts, ["DOUBLE"], "VARCHAR", type="arrow")
    con.create_function(FLOAT4_FUNCTION, _float_texts, ["FLOAT"], "VARCHAR", type="arrow")

"""PostgreSQL's text of an interval, for the wire and for DuckDB's casts of intervals to text.

DuckDB's cast of an interval to text prints `-1 day -03:00:00` and `1 year 2 months`; PostgreSQL's
interval_out (IntervalStyle postgres, its default) prints `-1 days -03:00:00` and `1 year 2 mons`:
a unit is plural unless its value is exactly 1, and a field after a negative one carries an
explicit `+` when positive. So `x::text`, where `x` is an interval, must not be DuckDB's cast.

Contract:
- `text(months, days, micros)` is interval_out's text of an interval of those three fields (years
  and months from `months`, truncated toward zero as PostgreSQL's are; hours not folded into
  days, as PostgreSQL keeps them). `server/encode.py` sends intervals so.
- `fraction(micros)` is the fractional seconds PostgreSQL prints after a time of day: `.5` for
  500000 microseconds, nothing for none.
- `FUNCTION` is `text` as the DuckDB function `register(con)` registers (INTERVAL -> VARCHAR,
  over Arrow's month_day_nano values), which `pg_text.TEXT_MACRO` calls for an interval.
- `duckdb_input(text)` is interval_in's input as DuckDB's cast reads it: a field's explicit `+`
  (`-1 days +02:00:00`, what `text` prints) dropped, ISO 8601's `P1Y2M3DT4H5M6S` (and `P2W`)
  spelled out; other text unchanged (DuckDB reads the rest, or says why not).
"""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa

FUNCTION = "heron_interval_out"
_PLUS = re.compile(r"(^|\s)\+(?=[\d.])")
_ISO = re.compile(r"^(?P<sign>-)?P(?:(?P<year>-?\d+)Y)?(?:(?P<mon>-?\d+)M)?(?:(?P<week>-?\d+)W)?"
                  r"(?:(?P<day>-?\d+)D)?(?:T(?:(?P<hour>-?\d+)H)?(?:(?P<minute>-?\d+)M)?"
                  r"(?:(?P<second>-?\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


def fraction(micros: int) -> str:
    return f".{micros:06d}".rstrip("0") if micros else ""


def text(months: int, days: int, micros: int) -> str:
    """IntervalStyle postgres: '1 year 2 mons 3 days 04:05:06.5', '-1 days +02:00:00'."""
    parts: list[str] = []
    negative_before = False
    years, mons = int(months / 12), months - int(months / 12) * 12  # truncate toward zero
    for value, unit in ((years, "year"), (mons, "mon"), (days, "day")):
        if value:
            # Each nonzero field decides the `+` of the next one only (AddPostgresIntPart).
            plus = "+" if negative_before and value > 0 else ""
            parts.append(f"{plus}{value} {unit}{'' if value == 1 else 's'}")
            negative_before = value < 0
    if micros or not parts:
        sign = "-" if micros < 0 else ("+" if negative_before else "")
        seconds, frac = divmod(abs(micros), 1_000_000)
        parts.append(f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
                     f"{fraction(frac)}")
    return " ".join(parts)


def _texts(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return pa.array([None if v is None else text(v.months, v.days, v.nanoseconds // 1000)
                     for v in values.to_pylist()], pa.string())


def register(con: duckdb.DuckDBPyConnection) -> None:
    con.create_function(FUNCTION, _texts, ["INTERVAL"], "VARCHAR", type="arrow")


def duckdb_input(text: str) -> str:
    """`text` (interval_in's input) as DuckDB's cast reads it (see the module contract)."""
    stripped = text.strip()
    if (iso := _ISO.match(stripped)) is not None and len(stripped) > 1:
        units = {"year": "years", "mon": "months", "week": "weeks", "day": "days",
                 "hour": "hours", "minute": "minutes", "second": "seconds"}
        sign = "-" if iso["sign"] else ""
        parts = [f"{sign}{iso[g]} {unit}".replace("--", "") for g, unit in units.items() if iso[g]]
        return " ".join(parts) or "0 seconds"
    return _PLUS.sub(r"\1", text)

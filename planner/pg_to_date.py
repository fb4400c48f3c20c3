"""PostgreSQL's `to_date(text, template)` and `to_timestamp(text, template)`, which DuckDB lacks,
as Python functions.

Contract: `to_date(text, template)` reads a date as PostgreSQL 15's to_date does
(formatting.c's DCH_from_char, not FX mode), for the template patterns YYYY, YY, MM, DD, DDD,
Month / MONTH / month, Mon / MON / mon, Day / Dy (in their three cases: read, not used), HH24,
HH12, HH, MI, SS, MS, US, AM / PM / am / pm (read, checked), Q (read, not used), the FM prefix,
"quoted text" and any other character (a separator): leading blanks are skipped, and blanks
around fields; a template separator matches one separator or blank of the input, or none; a
number field followed by a separator (or FM) reads as many digits as there are (with a sign),
else exactly its width; the input may end early (unset fields are year 0, i.e. 1 BC, January,
the 1st); what follows the template is ignored. It returns the date as DuckDB's text (`(BC)`
for years before 1), for a cast to DATE. Errors are PostgreSQL's: 22007 `invalid value "x" for
"YYYY"` (a field that is no integer, no month name, or fewer characters than its width), 22007
for conflicting values of a field, 22008 `date/time field value out of range: "<text>"` (a
month, day or time that does not exist). Any other pattern (IYYY, WW, J, RM, TZ, TH, FX, ...)
raises 0A000. `to_timestamp(text, template)` reads the same patterns and adds the time of day
(HH24, or HH12 / HH with AM / PM; MI, SS, MS, US), as DuckDB's text of a timestamp without
zone, which a cast to timestamptz reads in the session's time zone, as PostgreSQL's does.
`FUNCTION` and `TIMESTAMP_FUNCTION` are the names `pg_catalog.register` gives them
(`errors.carrying`), which `pg_semantics.rewrite` calls.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re
from typing import NamedTuple

from heron.planner.errors import SqlError, SqlState

FUNCTION = "heron_to_date"
TIMESTAMP_FUNCTION = "heron_to_timestamp"

# Patterns -> (field, width, kind): "int" a number read by width, "name" a word of `_WORDS`.
_FIELDS = {
    "YYYY": ("year", 4, "int"), "YY": ("year2", 2, "int"), "MM": ("month", 2, "int"),
    "DDD": ("doy", 3, "int"), "DD": ("day", 2, "int"), "HH24": ("hour24", 2, "int"),
    "HH12": ("hour12", 2, "int"), "HH": ("hour12", 2, "int"), "MI": ("minute", 2, "int"),
    "SS": ("second", 2, "int"), "MS": ("ms", 3, "int"), "US": ("us", 6, "int"),
    "Q": ("", 1, "int"), "MONTH": ("month", 0, "months"), "MON": ("month", 0, "mons"),
    "DAY": ("", 0, "days"), "DY": ("", 0, "dys"), "AM": ("meridiem", 0, "ampm"),
    "PM": ("meridiem", 0, "ampm"),
}
_WORDS = {"months": list(calendar.month_name)[1:], "mons": list(calendar.month_abbr)[1:],
          "days": list(calendar.day_name), "dys": list(calendar.day_abbr), "ampm": ["AM", "PM"]}
# A template's tokens: quoted text, a pattern (FM first), or one character. Patterns are
# matched in any case (PostgreSQL's cases only change how to_char prints them); the longer
# first, and the date patterns this module does not read, so that they are refused.
_UNSUPPORTED = ("Y,YYY", "IYYY", "IYY", "YYY", "IDDD", "IW", "ID", "WW", "CC", "RM", "TZ", "OF",
                "SSSSS", "SSSS", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "TH", "FX", "BC", "AD",
                "B.C.", "A.D.", "A.M.", "P.M.", "J", "W", "I", "Y", "D")
_PATTERNS = sorted((*_FIELDS, *_UNSUPPORTED), key=len, reverse=True)
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|(FM)?(' + "|".join(
    re.escape(p) for p in _PATTERNS) + ")|(.)", re.IGNORECASE | re.DOTALL)
_INTEGER = re.compile(r"\s*[+-]?\d+")


class _Node(NamedTuple):
    pattern: str  # upper case; "" for a character
    fill: bool  # FM
    text: str  # the character; a pattern as written (errors name it so)


@functools.lru_cache(maxsize=256)
def _nodes(template: str) -> tuple[_Node, ...]:
    nodes = []
    for quoted, fm, pattern, char in _TOKEN.findall(template):
        if pattern:
            upper = pattern.upper()
            if upper not in _FIELDS:
                raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                               f'to_date does not read the template pattern "{pattern}" here')
            nodes.append(_Node(upper, bool(fm), pattern))
        else:  # quoted text: a character per character; FM alone: nothing
            nodes += [_Node("", False, c) for c in (re.sub(r"\\(.)", r"\1", quoted) or char)]
    return tuple(nodes)


def _separator(char: str) -> bool:
    """A separator of the input: a blank, or neither a letter nor a digit (is_separator_char)."""
    return not char.isalnum()


def _invalid(value: str, pattern: str, detail: str) -> SqlError:
    return SqlError(SqlState.INVALID_DATETIME_FORMAT, f'invalid value "{value}" for "{pattern}"',
                    detail=detail)


def _out_of_range(text: str) -> SqlError:
    return SqlError(SqlState.DATETIME_FIELD_OVERFLOW,
                    f'date/time field value out of range: "{text}"')


def _next_is_separator(nodes: tuple[_Node, ...], i: int) -> bool:
    """is_next_separator: the node after `i` takes no digits (the template's end counts)."""
    if i + 1 >= len(nodes):
        return True
    after = nodes[i + 1]
    if after.pattern:
        return _FIELDS[after.pattern][2] != "int"
    return not after.text.isdigit()


def to_date(text: str, template: str) -> str:
    """PostgreSQL's to_date(text, template), as DuckDB's text of the date (see the module
    docstring)."""
    return _date(_read(text, template), text)


def to_timestamp(text: str, template: str) -> str:
    """PostgreSQL's to_timestamp(text, template), as DuckDB's text of the timestamp its fields
    name (for a cast to timestamptz, which reads it in the session's time zone)."""
    fields = _read(text, template)
    day = _date(fields, text)
    hour = fields.get("hour24", 0)
    if "hour12" in fields:  # 12 AM is midnight, 12 PM noon
        hour = fields["hour12"] % 12 + (12 if fields.get("meridiem") == 1 else 0)
    micro = fields.get("ms", 0) * 1000 + fields.get("us", 0)
    if not 0 <= micro < 1_000_000:
        raise _out_of_range(text)
    clock = f"{hour:02d}:{fields.get('minute', 0):02d}:{fields.get('second', 0):02d}.{micro:06d}"
    date, bc = (day[:-5], " (BC)") if day.endswith(" (BC)") else (day, "")
    return f"{date} {clock}{bc}"


def _read(text: str, template: str) -> dict[str, int]:
    """The fields `text` gives the template's patterns (see the module docstring)."""
    nodes = _nodes(template)
    fields: dict[str, int] = {}
    s, extra_skip = 0, 0
    for i, node in enumerate(nodes):
        if s >= len(text):
            break
        if node.pattern or i == 0:  # blanks before fields (and at the start) are skipped
            while s < len(text) and text[s].isspace():
                s, extra_skip = s + 1, extra_skip + 1
        if not node.pattern:
            if _separator(node.text):  # one separator or blank of the input, or none
                extra_skip -= 1
                if s < len(text) and _separator(text[s]):
                    s, extra_skip = s + 1, extra_skip + 1
            elif extra_skip > 0:  # another character: consumed, whatever it is
                extra_skip -= 1
            else:
                s += 1
            continue
        field, width, kind = _FIELDS[node.pattern]
        if kind == "int":
            start = s
            value, s = _integer(text, s, node, width, _next_is_separator(nodes, i))
            if node.pattern in ("MS", "US"):  # a fraction: .25 is 250 ms, 250000 us
                digits = len(text[start:s].strip().lstrip("+-"))
                value *= 10 ** max(0, width - digits)
        else:
            value, s = _word(text, s, node.text, _WORDS[kind])
            if kind in ("months", "mons"):
                value += 1
        if field:
            if fields.get(field, 0) not in (0, value):
                raise SqlError(SqlState.INVALID_DATETIME_FORMAT,
                               f'conflicting values for "{node.text}" field in formatting '
                               "string", detail="This value contradicts a previous setting for "
                                                "the same field type.")
            fields[field] = value
        extra_skip = 0
        while s < len(text) and text[s].isspace():  # blanks after fields
            s, extra_skip = s + 1, extra_skip + 1
    return fields


def _integer(text: str, s: int, node: _Node, width: int, greedy: bool) -> tuple[int, int]:
    """from_char_parse_int_len: the number at `s` and where it ends."""
    start = s
    while s < len(text) and text[s].isspace():
        s += 1
    copy = text[s:s + width]
    if node.fill or greedy:
        match = _INTEGER.match(text, start)
        if match is None:
            raise _invalid(copy, node.text, "Value must be an integer.")
        return int(match[0]), match.end()
    if len(copy) < width:
        raise SqlError(SqlState.INVALID_DATETIME_FORMAT,
                       f'source string too short for "{node.text}" formatting field',
                       detail=f"Field requires {width} characters, but only {len(copy)} remain.",
                       hint='If your source string is not fixed-width, try using the "FM" '
                            "modifier.")
    match = _INTEGER.match(copy)
    if match is None:
        raise _invalid(copy, node.text, "Value must be an integer.")
    if match.end() < width:
        raise _invalid(copy, node.text, f"Field requires {width} characters, but only "
                                           f"{match.end()} could be parsed.")
    return int(match[0]), s + width


def _word(text: str, s: int, pattern: str, words: list[str]) -> tuple[int, int]:
    """from_char_seq_search: which of `words` the input starts with (in any case)."""
    rest = text[s:].lower()
    for index, word in enumerate(words):
        if rest.startswith(word.lower()):
            return index, s + len(word)
    raise _invalid(text[s:].split(None, 1)[0] if text[s:].strip() else text[s:], pattern,
                   "The given value did not match any of the allowed values for this field.")


def _date(fields: dict[str, int], text: str) -> str:
    """The date the fields name (do_to_timestamp), as DuckDB's text."""
    year = fields.get("year", 0)
    if "year2" in fields and "year" not in fields:  # two digits: 1970 to 2069
        short = fields["year2"]
        year = short + (2000 if short < 70 else 1900) if short < 100 else short
    month, day = fields.get("month", 0) or 1, fields.get("day", 0) or 1
    hour = fields.get("hour24", fields.get("hour12", 0))
    if "hour12" in fields and not 1 <= fields["hour12"] <= 12:
        raise SqlError(SqlState.INVALID_DATETIME_FORMAT,
                       f'hour "{fields["hour12"]}" is invalid for the 12-hour clock',
                       hint="Use the 24-hour clock, or give an hour between 1 and 12.")
    if not (0 <= hour <= 24 and 0 <= fields.get("minute", 0) < 60
            and 0 <= fields.get("second", 0) <= 60):
        raise _out_of_range(text)
    # Python's dates run from year 1 to 9999: PostgreSQL's proleptic calendar repeats every
    # 400 years, so the date is computed that many 400-year cycles away (BC: year 0 and
    # before, year 0 printed as 1 BC).
    shift = (year - 1) // 400 * 400
    try:
        if fields.get("doy") and (month <= 1 or day <= 1):
            date = dt.date(year - shift, 1, 1) + dt.timedelta(days=fields["doy"] - 1)
            if date.year != year - shift:
                raise ValueError
        else:
            date = dt.date(year - shift, month, day)
    except (ValueError, OverflowError):
        raise _out_of_range(text) from None
    year = date.year + shift
    if year >= 1:
        return f"{year:04d}-{date.month:02d}-{date.day:02d}"
    return f"{1 - year:04d}-{date.month:02d}-{date.day:02d} (BC)"

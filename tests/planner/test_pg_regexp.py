"""regexp_match and regexp_matches as PostgreSQL's (`heron.planner.pg_regexp`), run in DuckDB.

The differential cases (`tests/oracle/wire_cases.py`, regexp_*) compare them with PostgreSQL 15.
"""

from __future__ import annotations

import duckdb
import pytest
import sqlglot

from heron.planner import pg_regexp
from heron.planner.errors import SqlError, SqlState


@pytest.mark.parametrize(("pattern", "groups"), [
    ("abc", 0), ("(a)(b)", 2), ("(a(b))", 2), ("(?:a)(b)", 1), ("(?=a)a", 0), (r"\(a\)", 0),
    ("[(]a", 0), ("[]()]", 0), ("[^]()](x)", 1), (r"[\]](y)", 1),
])
def test_capture_groups_are_counted_outside_brackets_and_escapes(pattern, groups):
    assert pg_regexp.capture_groups(pattern) == groups


def _run(sql: str) -> list:
    select = sqlglot.parse_one(sql, read="postgres")
    call = select.expressions[0]
    call.replace(pg_regexp.call(call.name.lower(), list(call.expressions)))
    return duckdb.connect().sql(select.sql(dialect="duckdb")).fetchall()


def test_regexp_match_is_the_first_match_s_groups_or_null():
    assert _run("SELECT regexp_match('x12-34', '(\\d+)-(\\d+)')") == [(["12", "34"],)]
    assert _run("SELECT regexp_match('x12', '\\d')") == [(["1"],)]
    assert _run("SELECT regexp_match('x', '\\d')") == [(None,)]
    assert _run("SELECT regexp_match('aB', 'b', 'i')") == [(["B"],)]


def test_regexp_matches_gives_a_row_per_match():
    assert _run("SELECT regexp_matches('ab', '(a)(b)')") == [(["a", "b"],)]
    assert _run("SELECT regexp_matches('ab', 'x')") == []
    assert _run("SELECT regexp_matches('a1b22', '([a-z])(\\d+)', 'g')") == [
        (["a", "1"],), (["b", "22"],)]


@pytest.mark.parametrize(("sql", "state"), [
    ("SELECT regexp_match('a', 'a', 'g')", SqlState.INVALID_PARAMETER_VALUE),
    ("SELECT regexp_match('a', 'a', 'z')", SqlState.INVALID_PARAMETER_VALUE),
    ("SELECT regexp_match('a', 'a', 'x')", SqlState.FEATURE_NOT_SUPPORTED),
    ("SELECT regexp_match('a', x) FROM t", SqlState.FEATURE_NOT_SUPPORTED),
])
def test_flags_and_patterns_not_carried_over_are_refused(sql, state):
    with pytest.raises(SqlError) as error:
        _run(sql)
    assert error.value.sqlstate == state

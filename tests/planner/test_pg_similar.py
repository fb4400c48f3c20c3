"""SIMILAR TO's patterns as PostgreSQL reads them (`pg_similar`), run by DuckDB's regexp engine;
the same patterns are compared with PostgreSQL 15 in tests/oracle/wire_cases.py."""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import pg_semantics, pg_similar
from heron.planner.errors import SqlError, SqlState


@pytest.fixture
def con():
    con = duckdb.connect()
    pg_similar.register(con)
    return con


@pytest.mark.parametrize(("text", "pattern", "escape", "matches"), [
    ("banana", "%an%", "\\", True),
    ("banana", "b_n%", "\\", True),
    ("banana", "ban", "\\", False),  # the whole text must match
    ("a.c", "a.c", "\\", True),
    ("abc", "a.c", "\\", False),  # `.` is literal
    ("a%c", "a!%c", "!", True),
    ("abc", "a!%c", "!", False),
    ("a\\c", "a\\c", "", True),  # no escape: a backslash is literal
    ("a_c", "a\\_c", "\\", True),
    ("abc", "a\\_c", "\\", False),
    ("abc", "(a|x)(b|y)c", "\\", True),
    ("abbb", "ab{2,3}", "\\", True),
    ("a^b$", "a^b$", "\\", True),
    ("7", "\\d", "\\", True),  # an escaped letter keeps its regular-expression meaning
    ("x\\", "[x\\]+", "", True),  # a backslash within brackets is literal
])
def test_patterns_match_as_postgresql(con, text, pattern, escape, matches):
    regex = pg_similar.regex(pattern, escape)
    assert con.execute("SELECT regexp_full_match(?, ?)", [text, regex]).fetchone()[0] is matches
    # the same through the function for patterns known only when a statement runs
    computed = con.execute(f"SELECT {pg_similar.FUNCTION}(?, ?)", [pattern, escape]).fetchone()
    assert computed[0] == regex


def test_an_escape_of_two_characters_is_22025(con):
    with pytest.raises(SqlError) as raised:
        pg_similar.regex("a", "xy")
    assert raised.value.sqlstate is SqlState.INVALID_ESCAPE_SEQUENCE


def test_the_rewrite_names_the_column_as_an_operator():
    sql = pg_semantics.rewrite("SELECT name SIMILAR TO 'a%' FROM t")
    assert sql == "SELECT REGEXP_FULL_MATCH(name, '^(?:a.*)$') AS \"?column?\" FROM t"

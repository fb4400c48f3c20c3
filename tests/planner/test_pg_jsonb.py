"""jsonb's text, containment and existence: the expected answers are PostgreSQL 15's
(`SELECT x::jsonb::text`, `x::jsonb @> y::jsonb`, `x::jsonb ? k`); tests/oracle/test_jsonb.py
compares random documents with a running PostgreSQL."""

from __future__ import annotations

import pytest

from heron.planner import pg_jsonb
from heron.planner.errors import SqlError, SqlState

NORMALIZED = [
    ('{"b": 1, "a": 2}', '{"a": 2, "b": 1}'),
    # keys: shorter first, then bytewise (UTF-8: é is two bytes)
    ('{"aa":1, "b":2, "é":3, "c": 4, "":5, "ab": 6, "B": 7}',
     '{"": 5, "B": 7, "b": 2, "c": 4, "aa": 1, "ab": 6, "é": 3}'),
    ('{"\\u00e9": 1, "e\\u0301": 2, "z": 3}', '{"z": 3, "\u00e9": 1, "e\u0301": 2}'),
    ('{"𝄞": 1, "ab": 2, "abc": 3, "\\uffff": 4}', '{"ab": 2, "abc": 3, "\uffff": 4, "𝄞": 1}'),
    # the last of a duplicated key, in the first one's order
    ('{"a":1, "a":{"x":1}, "b":[], "c":{}}', '{"a": {"x": 1}, "b": [], "c": {}}'),
    ('{"b": 1, "a": 2, "b": 3}', '{"a": 2, "b": 3}'),
    # spacing
    ('  [ ]  ', "[]"), (" { } ", "{}"), ("[[],{}]", "[[], {}]"), (" true", "true"),
    ("null", "null"), ('{"a" : {"b":[{"c":null,"bb":true}]}}',
                       '{"a": {"b": [{"c": null, "bb": true}]}}'),
    # numbers as numeric prints them
    ("-0", "0"), ("1e2", "100"), ("1.50", "1.50"),
    ("[-0, -0.0, -0e5, 0.00e-3, 1.0e-2, 1.5E+1, 123.456e-1, 1e-2]",
     "[0, 0.0, 0, 0.00000, 0.010, 15, 12.3456, 0.01]"),
    ("[12345678901234567890123.5e3, 18446744073709551616, -9223372036854775809]",
     "[12345678901234567890123500, 18446744073709551616, -9223372036854775809]"),
    ("0e999999999", "0"),
    # strings: PostgreSQL's escapes, everything else as itself
    ('"\\ud834\\udd1e \\u00e9 \\/ \\b\\f\\n\\r\\t \\u001f \\u007f \\u2028"',
     '"𝄞 é / \\b\\f\\n\\r\\t \\u001f \x7f \u2028"'),
    ('"\\\\u0000"', '"\\\\u0000"'),  # a backslash, then "u0000"
]


@pytest.mark.parametrize(("text", "expected"), NORMALIZED)
def test_normalizes_as_postgres_15(text: str, expected: str) -> None:
    assert pg_jsonb.normalize(text) == expected


def test_normalized_text_is_normalized() -> None:
    for _, expected in NORMALIZED:
        assert pg_jsonb.normalize(expected) == expected


def test_numbers_at_numeric_limits() -> None:
    assert pg_jsonb.normalize("1e131071") == "1" + "0" * 131071
    assert pg_jsonb.normalize("1e-16383") == "0." + "0" * 16382 + "1"
    assert pg_jsonb.normalize("-" + "7" * 5000) == "-" + "7" * 5000  # beyond int()'s text limit
    assert pg_jsonb.normalize("[" + "7" * 5000 + ", -0]") == "[" + "7" * 5000 + ", 0]"


@pytest.mark.parametrize(("text", "sqlstate"), [
    ("[1,]", SqlState.INVALID_TEXT_REPRESENTATION),  # DuckDB's JSON accepts these
    ('{"a":1,}', SqlState.INVALID_TEXT_REPRESENTATION),
    ("NaN", SqlState.INVALID_TEXT_REPRESENTATION),
    ("[-Infinity]", SqlState.INVALID_TEXT_REPRESENTATION),
    ('"\\ud800"', SqlState.INVALID_TEXT_REPRESENTATION),
    ('"\\udd1e\\ud834"', SqlState.INVALID_TEXT_REPRESENTATION),
    ("1 2", SqlState.INVALID_TEXT_REPRESENTATION),
    ('"\\u0000"', SqlState.UNTRANSLATABLE_CHARACTER),
    ('{"\\\\\\u0000": 1}', SqlState.UNTRANSLATABLE_CHARACTER),
    ("1e131072", SqlState.NUMERIC_VALUE_OUT_OF_RANGE),
    ("1.5e-16383", SqlState.NUMERIC_VALUE_OUT_OF_RANGE),
    ("0e-16384", SqlState.NUMERIC_VALUE_OUT_OF_RANGE),
    ("[" + "1" * 131073 + "]", SqlState.NUMERIC_VALUE_OUT_OF_RANGE),
    ("[" * 100_000 + "]" * 100_000, SqlState.STATEMENT_TOO_COMPLEX),
])
def test_refuses_what_jsonb_refuses(text: str, sqlstate: SqlState) -> None:
    with pytest.raises(SqlError) as caught:
        pg_jsonb.normalize(text)
    assert caught.value.sqlstate == sqlstate


@pytest.mark.parametrize(("value", "wanted", "expected"), [
    ('{"a":1}', "{}", True), ("[1,2]", "1", True), ("1", "[1]", False), ("1", "1", True),
    ('{"a":{"b":1}}', '{"b":1}', False), ("[[1,2]]", "[1]", False), ("[[1,2]]", "[[1]]", True),
    ('{"a":[1,2]}', '{"a":1}', False), ('{"a":[1,2]}', '{"a":[2]}', True),
    ("[1, 1.0]", "[1.00]", True), ('{"a": 1}', '{"a": true}', False), ("[true]", "[1]", False),
    ('{"a": {"b": [1, {"c": "x"}]}}', '{"a": {"b": [{"c": "x"}]}}', True),
    ('{"a": {"b": 1}}', '{"a": []}', False), ('["a"]', '"a"', True), ('{"a": 1}', "[]", False),
    ('{"a": 1, "a": 2}', '{"a": 1}', False),
])
def test_contains_as_postgres_15(value: str, wanted: str, expected: bool) -> None:
    assert pg_jsonb.contains(value, wanted) is expected
    assert pg_jsonb.contained(wanted, value) is expected


@pytest.mark.parametrize(("value", "key", "expected"), [
    ('["a", {"b":1}]', "a", True), ('["a", {"b":1}]', "b", False), ('{"b":1}', "b", True),
    ('"b"', "b", True), ('[1]', "1", False), ('{"a": {"b": 1}}', "b", False),
])
def test_exists_as_postgres_15(value: str, key: str, expected: bool) -> None:
    assert pg_jsonb.exists(value, key) is expected


def test_exists_any_and_all_skip_null_keys() -> None:
    assert pg_jsonb.exists_any('{"a":1}', ["x", None, "a"])
    assert pg_jsonb.exists_all('{"a":1}', ["a", None])
    assert pg_jsonb.exists_all('{"a":1}', []) and not pg_jsonb.exists_any('{"a":1}', [])


def test_functions_take_text_so_lists_keep_their_operators() -> None:
    assert set(pg_jsonb.OPERATORS.values()) <= set(pg_jsonb.FUNCTIONS)
    for _, parameters in pg_jsonb.FUNCTIONS.values():
        assert parameters[0] == "VARCHAR"


def test_building_functions_as_postgresql_15():
    """`||`, `-`, jsonb_set, jsonb_strip_nulls and jsonb_pretty (answers read off PostgreSQL 15;
    the wire suite compares them live)."""
    assert pg_jsonb.concat('{"b": 1}', '{"a": 2, "b": 3}') == '{"a": 2, "b": 3}'
    assert pg_jsonb.concat('{"a": 1}', "[1]") == '[{"a": 1}, 1]'
    assert pg_jsonb.concat("1", '"x"') == '[1, "x"]'
    assert pg_jsonb.delete_key('["a", "b", "a", 1]', "a") == '["b", 1]'
    assert pg_jsonb.delete_index("[1, 2, 3]", -1) == "[1, 2]"
    assert pg_jsonb.delete_index("[1]", 5) == "[1]"
    assert pg_jsonb.delete_keys('{"a": 1, "b": 2, "c": 3}', ["a", None, "c"]) == '{"b": 2}'
    assert pg_jsonb.set_path('{"a": [1]}', ["a", "-5"], "9") == '{"a": [9, 1]}'
    assert pg_jsonb.set_path('{"a": 1}', ["x", "y"], "2") == '{"a": 1}'
    assert pg_jsonb.set_path('{"a": 1}', ["b"], "2", False) == '{"a": 1}'
    assert pg_jsonb.strip_nulls('{"a": null, "b": [null, {"c": null}]}') == '{"b": [null, {}]}'
    assert pg_jsonb.pretty('{"a": [], "b": {"c": 1}}') == (
        '{\n    "a": [\n    ],\n    "b": {\n        "c": 1\n    }\n}')
    for call, message in ((lambda: pg_jsonb.delete_key("3", "a"), "cannot delete from scalar"),
                          (lambda: pg_jsonb.delete_index('{"a": 1}', 0),
                           "cannot delete from object using integer index"),
                          (lambda: pg_jsonb.set_path("3", ["a"], "1"),
                           "cannot set path in scalar"),
                          (lambda: pg_jsonb.concat("{", "1"),
                           "invalid input syntax for type json")):
        with pytest.raises(SqlError, match=message):
            call()

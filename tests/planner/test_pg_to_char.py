"""PostgreSQL's to_char(number, template): the expected texts are PostgreSQL 15's
(`SELECT to_char(v::numeric, t)`), including its quirks (a sign before the first digit, `#` for
overflow, FM's `0.`)."""

from __future__ import annotations

import pytest

from heron.planner.pg_to_char import number_template, to_char_number

POSTGRES_15 = [
    ("-3.5", "000", "-004"), ("0.5", "000", " 001"), ("1234567.891", "000", " ###"),
    ("-0.004", "000", " 000"),  # rounds to zero: not negative
    ("-3.5", "99.9S", " 3.5-"), ("0", "99.9S", "  .0+"), ("9.995", "99.9S", "10.0+"),
    ("-3.5", "999.9MI", "  3.5-"), ("0.5", "999.9MI", "   .5 "),
    ("1234567.891", "999.9MI", "###.# "),
    ("-3.5", "999.9PR", "  <3.5>"), ("9.995", "999.9PR", "  10.0 "),
    ("-3.5", "9999.99", "   -3.50"), ("0", "9999.99", "     .00"),
    ("1234567.891", "9999.99", " ####.##"),
    ("-3.5", "9G999D9", "    -3.5"), ("1234567.891", "9G999D9", " #,###.#"),
    ("-3.5", "FM9.99", "-3.5"), ("0", "FM9.99", "0."), ("0.5", "FM9.99", ".5"),
    ("9.995", "FM9.99", "#.##"), ("9.995", "FM99.99MI", "10."), ("-3.5", "FM99.99MI", "3.5-"),
    ("1234567.891", "FM999,999,990.00", "1,234,567.89"), ("0.5", "FM999,999,990.00", "0.50"),
    ("-3.5", "S999.9", "  -3.5"), ("0", "S999.9", "   +.0"), ("1234567.891", "S999.9", "+###.#"),
    ("0.05", "fm99999D00", ".05"), ("0", "099,.999", " 000,.000"),
    ("-0.5", "fmG999,.9909MI", ".500-"), ("0.5", "G9D090MI", "  .500 "),
    ("12345678901234567890.5", "9,9900G.9999", " #,####,.####"),
    ("-99.95", "9090D909", " -099.950"), ("-0.5", "09", "-01"), ("1234.5", "99,999", "  1,235"),
    ("42", "99,999", "     42"),
]


@pytest.mark.parametrize(("value", "template", "expected"), POSTGRES_15)
def test_formats_as_postgres_15(value: str, template: str, expected: str) -> None:
    assert number_template(template)
    assert to_char_number(value, template) == expected


@pytest.mark.parametrize("template", ["PL999", "SG999", "9.99EEEE", "RN", "999th", '"n"999',
                                      "99.", ".99", "9,", "9S9", "MI99", "YYYY", "", "9.9.9"])
def test_other_templates_are_not_taken(template: str) -> None:
    assert not number_template(template)
    with pytest.raises(ValueError, match="not a number template"):
        to_char_number("1", template)


def test_a_value_that_is_no_number_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid input syntax for type numeric"):
        to_char_number("abc", "999")
    assert [to_char_number(v, "9.9") for v in ("Infinity", "-Infinity", "NaN")] == [
        " #.#", "-#.#", " #.#"]

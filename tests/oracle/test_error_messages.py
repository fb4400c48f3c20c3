"""Errors as PostgreSQL 15 words them: SQLSTATE, message and detail, Heron beside PostgreSQL.

Clients show the message and detail to people, and some read them (ORMs name the violated
constraint from the message). Each case runs its setup, then one failing statement, on both
servers (`servers`: the same catalog schema), through psycopg; tables are prefixed `e_`.
"""

from __future__ import annotations

import pytest
from support.catalog_schema import with_expected_failures

psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.timeout(60)

_KEYED = ("DROP TABLE IF EXISTS e_keyed",
          "CREATE TABLE e_keyed (a int, b int, c text UNIQUE, PRIMARY KEY (a, b))",
          "INSERT INTO e_keyed VALUES (1, 2, 'x')")
_REFERENCED = ("DROP TABLE IF EXISTS e_child", "DROP TABLE IF EXISTS e_parent",
               "CREATE TABLE e_parent (id int PRIMARY KEY, k int, u int, UNIQUE (k, u))",
               "CREATE TABLE e_child (id int, p int REFERENCES e_parent (id), a int, b int, "
               "FOREIGN KEY (a, b) REFERENCES e_parent (k, u))",
               "INSERT INTO e_parent VALUES (5, 1, 2)", "INSERT INTO e_child VALUES (1, 5, 1, 2)")
CASES = {
    "division_by_zero": ((), "SELECT 1 / 0"),
    "numeric_field_overflow": ((), "SELECT 123.45::numeric(4, 2)"),
    "numeric_scale_overflow": ((), "SELECT 1.5::numeric(2, 2)"),
    "integer_out_of_range": ((), "SELECT 2147483647::int + 1"),
    "negative_substring_length": ((), "SELECT substring('abc', 1, -1)"),
    "regexp_match_global": ((), "SELECT regexp_match('a', 'a', 'g')"),
    "primary_key": (_KEYED, "INSERT INTO e_keyed VALUES (1, 2, 'y')"),
    "unique_column": (_KEYED, "INSERT INTO e_keyed VALUES (3, 4, 'x')"),
    "unique_in_one_statement": (_KEYED, "INSERT INTO e_keyed VALUES (5, 6, 'z'), (7, 8, 'z')"),
    "unique_update": (_KEYED + ("INSERT INTO e_keyed VALUES (3, 4, 'y')",),
                      "UPDATE e_keyed SET c = 'x' WHERE a = 3"),
    "foreign_key_missing": (_REFERENCED, "INSERT INTO e_child VALUES (2, 6, NULL, NULL)"),
    "foreign_key_missing_pair": (_REFERENCED, "UPDATE e_child SET b = 3"),
    "foreign_key_still_referenced": (_REFERENCED, "DELETE FROM e_parent WHERE id = 5"),
    "not_null": (("DROP TABLE IF EXISTS e_required",
                  "CREATE TABLE e_required (a int NOT NULL)"),
                 "INSERT INTO e_required VALUES (NULL)"),
    "check": (("DROP TABLE IF EXISTS e_checked",
               "CREATE TABLE e_checked (w int CHECK (w > 0))"),
              "INSERT INTO e_checked VALUES (-1)"),
    "undefined_table": ((), "SELECT * FROM e_nowhere"),
    "undefined_column": ((), "SELECT nothing FROM cat_books"),
    "bad_integer": ((), "SELECT 'abc'::int"),
    "unique_index": (("DROP TABLE IF EXISTS e_ui", "CREATE TABLE e_ui (id int, f text, g text)",
                      "CREATE UNIQUE INDEX e_ui_f ON e_ui (f)",
                      "CREATE UNIQUE INDEX e_ui_g ON e_ui (lower(g)) WHERE id > 0",
                      "INSERT INTO e_ui VALUES (1, 'x', 'y')"),
                     "INSERT INTO e_ui VALUES (2, 'x', 'z')"),
    "partial_unique_index": (("DROP TABLE IF EXISTS e_pi", "CREATE TABLE e_pi (id int, g text)",
                              "CREATE UNIQUE INDEX e_pi_g ON e_pi (lower(g)) WHERE id > 0",
                              "INSERT INTO e_pi VALUES (1, 'y')"),
                             "INSERT INTO e_pi VALUES (2, 'Y')"),
    "with_ties_without_order_by": ((), "SELECT 1 FETCH FIRST 1 ROW WITH TIES"),
    "on_conflict_without_its_constraint": (_KEYED, "INSERT INTO e_keyed VALUES (1, 2, 'y') "
                                                   "ON CONFLICT (b) DO NOTHING"),
}
EXPECTED_FAILURES = {
    "not_null": "PostgreSQL's detail shows the failing row ('Failing row contains (null).'), "
                "which DuckDB's error does not carry",
    "check": "PostgreSQL's detail shows the failing row ('Failing row contains (-1).'), which "
             "DuckDB's error does not carry (the messages are the same)",
}


def _error(server, setup: tuple[str, ...], sql: str) -> tuple:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        for statement in setup:
            conn.execute(statement)
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(sql)
    diag = caught.value.diag
    return diag.sqlstate, diag.message_primary, diag.message_detail


@pytest.mark.parametrize("case", with_expected_failures(CASES, EXPECTED_FAILURES))
def test_errors_are_worded_as_postgresql_words_them(servers, case):
    heron, postgres = servers
    setup, sql = CASES[case]
    assert _error(heron, setup, sql) == _error(postgres, setup, sql)

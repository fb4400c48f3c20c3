"""PostgreSQL's names of result columns (`heron.planner.result_names`), rule by rule.

`tests/oracle/test_result_columns.py` compares the names RowDescription gives with PostgreSQL 15;
these pin each rule without a server.
"""

from __future__ import annotations

import pytest
import sqlglot

from heron.planner.result_names import names, output_name


def _names(sql: str, count: int | None = None) -> tuple[str | None, ...]:
    tree = sqlglot.parse_one(sql, read="postgres")
    return names(tree, sql, len(tree.expressions) if count is None else count)


@pytest.mark.parametrize(("item", "name"), [
    ("1 AS Total", "total"), ('1 AS "Total"', "Total"),
    ("'x'::varchar(3)", "varchar"), ("CAST(1 AS numeric(4, 1))", "numeric"), ("a::int", "a"),
    ("'{1}'::int[]", "int4"), ("upper(a)::text", "upper"),
    ("CASE WHEN a THEN 1 END", "case"), ("CASE WHEN a THEN 1 ELSE b END", "b"),
    ("(ARRAY[1, 2])[2]", "array"), ("ARRAY[1]", "array"), ("ROW(1, 2)", "row"),
    ("a ~ 'b'", "?column?"), ("a + 1", "?column?"), ("-a", "?column?"), ("1", "?column?"),
    ("'x'", "?column?"), ("a IS NULL", "?column?"), ("true", "bool"),
    ("trim(' a ')", "btrim"), ("trim(leading 'x' from a)", "ltrim"), ("substr(a, 1)", "substr"),
    ("substring(a from 1)", "substring"), ("coalesce(a, b)", "coalesce"),
    ("current_date", "current_date"), ("exists (SELECT 1)", "exists"),
    ("(SELECT 1 AS z)", "z"), ("count(*)", "count"), ("row_number() OVER ()", "row_number"),
    ("percentile_cont(0.5) WITHIN GROUP (ORDER BY a)", "percentile_cont"),
    ('"Upper"(a)', "Upper"), ("mod(5, 2)", "mod"), ("5 % 2", "?column?"),
    # calls sqlglot keeps no position of: the spelling before the first argument
    ("ceiling(1.5)", "ceiling"), ("string_agg(a, ',')", "string_agg"), ("initcap(a)", "initcap"),
    ("CAST(initcap(a) AS text)", "initcap"), ("CAST(a + 1 AS text)", "text"),
])
def test_an_item_is_named_as_postgresql_names_it(item, name):
    assert _names(f"SELECT {item} FROM t") == (name,)


def test_duckdb_s_names_are_kept_for_columns_stars_and_unknown_spellings():
    # (DuckDB names a plain column and a star's columns as PostgreSQL does; `extract(year
    # from x)` keeps no spelling: DuckDB's name of it stands)
    assert _names("SELECT a, t.b, extract(year from c) FROM t") == (None, None, None)
    assert _names("SELECT 1, *, 2 AS b FROM t", 5) == ("?column?", None, None, None, "b")
    assert _names("SELECT 1, *, 2, *, 3 FROM t", 7) == ("?column?",) + (None,) * 5 + (
        "?column?",)


def test_a_set_operation_is_named_by_its_first_query():
    assert _names("SELECT a + 1, b AS B FROM t UNION SELECT 1, 'x'", 2) == ("?column?", "b")


def test_without_the_text_calls_are_named_as_sqlglot_reads_them():
    call = sqlglot.parse_one("SELECT lower(a)", read="postgres").expressions[0]
    assert output_name(call) == "lower"
    assert output_name(sqlglot.parse_one("SELECT 1", read="postgres").expressions[0]) == (
        "?column?")

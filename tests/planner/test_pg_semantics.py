"""PostgreSQL's semantics on DuckDB: connection settings, statement rewrites, input syntaxes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from heron.planner import (
    column_origins,
    pg_interval,
    pg_jsonb,
    pg_semantics,
    pg_text,
    pg_to_char,
    pg_types,
)
from heron.planner.errors import SqlError, SqlState
from heron.planner.pg_catalog_functions import create_macro
from heron.planner.statement import columns_of


@pytest.fixture(scope="module")
def con():
    connection = duckdb.connect()
    pg_semantics.configure(connection)
    yield connection
    connection.close()


def one(con, sql):
    return con.execute(pg_semantics.rewrite(sql)).fetchall()


def test_integer_division_and_division_by_zero(con):
    assert one(con, "SELECT 5/2, -7/2, 7 % 3, 5/2.0") == [(2, -3, 1, 2.5)]
    for sql in ("SELECT 1/0", "SELECT 1.5/0", "SELECT 1::double/0", "SELECT 5 % 0"):
        with pytest.raises(duckdb.Error, match="[Dd]ivision by zero"):
            one(con, sql)


def test_nulls_sort_last_ascending_first_descending(con):
    rows = "(VALUES (1), (NULL), (2)) t(x)"
    assert one(con, f"SELECT x FROM {rows} ORDER BY x") == [(1,), (2,), (None,)]
    assert one(con, f"SELECT x FROM {rows} ORDER BY x DESC") == [(None,), (2,), (1,)]


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT 1.23456::numeric", "1.23456"),
    ("SELECT '1.23456'::numeric", "1.23456"),
    ("SELECT CAST(-0.001 AS decimal)", "-0.001"),
    ("SELECT 12.345::numeric(10,2)", "12.35"),  # a declared scale still rounds
])
def test_numeric_keeps_its_digits(con, sql, expected):
    assert str(one(con, sql)[0][0]) == expected


def test_unconstrained_numeric_columns_keep_ten_decimals(con):
    con.execute(pg_semantics.rewrite("CREATE OR REPLACE TABLE prices (p numeric)"))
    con.execute("INSERT INTO prices VALUES (1.23456789)")
    assert str(one(con, "SELECT p FROM prices")[0][0]) == "1.2345678900"


def test_numeric_literal_beyond_38_digits_is_refused(con):
    with pytest.raises(SqlError) as info:
        pg_semantics.rewrite("SELECT 1" + "0" * 40 + "::numeric")
    assert info.value.sqlstate == "22003"


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT '\\x0102'::bytea", b"\x01\x02"),
    ("SELECT 'ab\\000c\\\\'::bytea", b"ab\x00c\\"),
    ("SELECT '\\x DE ad'::bytea", b"\xde\xad"),
    ("SELECT CAST('caf\u00e9' AS bytea)", "caf\u00e9".encode()),
])
def test_bytea_input_formats(con, sql, expected):
    assert one(con, sql) == [(expected,)]


def test_bad_bytea_is_22p02():
    for text in ("\\x0", "\\xzz", "a\\9"):
        with pytest.raises(SqlError) as info:
            pg_semantics.parse_bytea(text)
        assert info.value.sqlstate == "22P02"


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT '{1,2,NULL}'::int[]", [1, 2, None]),
    ("SELECT '{\"a b\",\"NULL\",NULL,c}'::text[]", ["a b", "NULL", None, "c"]),
    ("SELECT '{{1,2},{3,4}}'::int[][]", [[1, 2], [3, 4]]),
    ("SELECT '{}'::int[]", []),
    ("SELECT CAST('[1:2]={7,8}' AS bigint[])", [7, 8]),
])
def test_array_literals(con, sql, expected):
    assert one(con, sql) == [(expected,)]


@pytest.mark.parametrize("text", ["{1,2", "1,2}", "{1,,2}", "{1 2}x", '{"a}'])
def test_malformed_array_literal_is_22p02(text):
    with pytest.raises(SqlError) as info:
        pg_semantics.parse_array_literal(text, str)
    assert info.value.sqlstate == "22P02"


def test_varchar_length_is_enforced_and_casts_truncate(con):
    con.execute(pg_semantics.rewrite(
        "CREATE OR REPLACE TABLE short (v varchar(3), c char(2), t text)"))
    con.execute("INSERT INTO short VALUES ('abc', 'ab', 'anything')")
    with pytest.raises(duckdb.ConstraintException, match=r"length\(v\) <= 3"):
        con.execute("INSERT INTO short VALUES ('abcd', 'a', '')")
    with pytest.raises(duckdb.ConstraintException):
        con.execute("UPDATE short SET c = 'abc'")
    # char(3) without its trailing blanks (they are sent: `column_origins` announces bpchar(3))
    assert one(con, "SELECT 'abcdef'::varchar(3), 'a'::char(3), 'abcd'::character varying(2), "
                    "'abcd'::char(3), 'xyz'::char, 'a  '::char(2) || '|'") == [
        ("abc", "a", "ab", "abc", "x", "a|")]


def test_jsonb_is_json(con):
    assert one(con, "SELECT '{\"a\": 1}'::jsonb ->> 'a'") == [("1",)]


def test_a_jsonb_column_is_json_marked_jsonb():
    con = duckdb.connect()
    pg_semantics.configure(con)
    con.execute(pg_semantics.rewrite(
        'CREATE TABLE docs (id int, j jsonb NOT NULL, "Odd J" jsonb, k json)'))
    # the mark refuses nothing DuckDB's JSON takes (even what jsonb would not: [1,])
    con.execute("""INSERT INTO docs VALUES (1, '{"b": 1, "a": [1,]}', 'null', '[]')""")
    assert con.execute("SELECT data_type FROM duckdb_columns() WHERE table_name = 'docs'"
                       ).fetchall() == [("INTEGER",), ("JSON",), ("JSON",), ("JSON",)]
    jsonb = column_origins.Origin(type_oid=pg_types.JSONB.oid)
    assert [o.type_oid for _, o in column_origins.Relations.load(con).by_name[
        ("main", "docs")]] == [0, jsonb.type_oid, jsonb.type_oid, 0]
    # an added jsonb column is marked too (`alter_table` adds it, as DuckDB cannot)
    assert pg_semantics.rewrite("ALTER TABLE docs ADD COLUMN x jsonb") == (
        "ALTER TABLE docs ADD COLUMN x JSON CHECK (JSON_VALID(x))")


def test_the_type_keeping_checks_are_recognized():
    tree = sqlglot.parse_one(pg_semantics.rewrite(
        "CREATE TABLE t (v varchar(3), j jsonb, n int CHECK (n > 0), m int CHECK (length(m) > 1))"
    ), read="duckdb")
    checks = [c.kind for c in tree.find_all(exp.ColumnConstraint)
              if isinstance(c.kind, exp.CheckColumnConstraint)]
    assert [pg_semantics.length_limit(c) for c in checks] == [3, None, None, None]
    assert [pg_semantics.declares_type(c) for c in checks] == [True, True, False, False]


def test_jsonb_operators_and_functions(con):
    pg_jsonb.register(con)
    sql = pg_semantics.rewrite(
        """SELECT j ? 'a', j ?| array['x', 'a'] AS any_key, j ?& '{a,b}' AS all_keys,
                  j @> '{"a": {"c": 1.0}}' AS c, '{"a": {}}' <@ j AS d,
                  ARRAY[1, 2] @> ARRAY[3] AS lists, jsonb_typeof(j), json_typeof(j -> 'b'),
                  jsonb_typeof(NULL), jsonb_build_array(1, 'x') AS a
           FROM (SELECT '{"a": {"c": 1}, "b": [true]}'::jsonb AS j) t WHERE j ? 'b'""")
    result = con.execute(sql)
    assert [c.name for c in columns_of(pa.schema([(d[0], pa.null())
                                                  for d in result.description]))] == [
        "?column?", "any_key", "all_keys", "c", "d", "lists", "jsonb_typeof", "json_typeof",
        "jsonb_typeof", "a"]
    assert result.fetchall() == [(True, True, True, True, True, False, "object", "array", None,
                                  '[1, "x"]')]  # jsonb: normalized


def test_statements_without_any_of_it_come_back_unchanged():
    for sql in ("SELECT 1", "SELECT $1::int + 1", "INSERT INTO t VALUES (1, 'x')",
                "SELECT * FROM read_csv('x.csv')", "SELECT 'a' || name FROM t"):
        assert pg_semantics.rewrite(sql) is sql


def test_ai_statements_stay_in_herons_dialect():
    sql = "SELECT id, '{1}'::int[] FROM reviews WHERE AI.IF(('good? ', body))"
    assert "AI.IF(" in pg_semantics.rewrite(sql)


def test_text_input_conversions(con):
    cases = [("BOOLEAN", "yes", True), ("BOOLEAN", " Off ", False),
             ("BLOB", "\\x00ff", b"\x00\xff"), ("INTERVAL", "-1 days +02:00:00", "-1 day, 2:00:00"),
             ("INTEGER", "42", 42)]
    for duck_type, text, expected in cases:
        value = con.execute(f"SELECT {pg_semantics.text_input('$1', duck_type)}",
                            [text]).fetchone()[0]
        assert (str(value) if duck_type == "INTERVAL" else value) == expected


def test_length_and_position_functions_return_integer_named_as_postgresql_names_them(con):
    con.execute("CREATE OR REPLACE TABLE lengths (v varchar, b blob, a int[])")
    con.execute("INSERT INTO lengths VALUES ('héllo', '\\x01\\x02'::blob, [1, 2]), "
                "(NULL, NULL, NULL)")
    sql = ("SELECT char_length(v), character_length(v), length(v), octet_length(v), "
           "octet_length(b), octet_length('abc'), bit_length(v), strpos(v, 'l'), "
           "position('l' in v), array_length(a, 1), cardinality(a), length(v) + 1 AS n "
           "FROM lengths ORDER BY v NULLS LAST")
    result = con.execute(pg_semantics.rewrite(sql))
    names = [d[0] for d in result.description]  # the server names calls after the function
    assert [c.name for c in columns_of(pa.schema([(n, pa.int32()) for n in names]))] == [
        "char_length", "character_length", "length", "octet_length", "octet_length",
        "octet_length", "bit_length", "strpos", "position", "array_length", "cardinality", "n"]
    assert len(set(names)) == len(names)
    assert {str(d[1]) for d in result.description} == {"INTEGER"}
    assert result.fetchall() == [(5, 5, 5, 6, 2, 3, 48, 3, 3, 2, 2, 6),
                                 (None,) * 5 + (3,) + (None,) * 6]
    inner = "SELECT length(v) FROM lengths WHERE length(left(v, length(v) - 1)) > 3"
    assert one(con, inner) == [(5,)]


def test_sums_of_smallints_and_integers_are_bigint(con):
    con.execute("CREATE OR REPLACE TABLE sums (i integer, s smallint, b bigint, d double, g text)")
    con.execute("INSERT INTO sums VALUES (1, 2, 3, 0.5, 'x'), (2, 3, 4, 1.5, 'x')")

    def typed(sql):
        result = con.execute(pg_semantics.typed_results(con, sql))
        return [(c.name, str(d[1])) for c, d in zip(columns_of(pa.schema(
            [(d[0], pa.null()) for d in result.description])), result.description,
            strict=True)], result.fetchall()

    assert typed("SELECT sum(i), sum(s) AS t, sum(b), sum(d), sum(DISTINCT i), g FROM sums "
                 "GROUP BY g") == ([("sum", "BIGINT"), ("t", "BIGINT"), ("sum", "HUGEINT"),
                                   ("sum", "DOUBLE"), ("sum", "BIGINT"), ("g", "VARCHAR")],
                                  [(3, 5, 7, 2.0, 3, "x")])
    assert typed("SELECT g, count(*), sum(i) FROM sums GROUP BY g")[0] == [
        ("g", "VARCHAR"), ("count", "BIGINT"), ("sum", "BIGINT")]
    assert typed("SELECT sum(i) OVER (ORDER BY i) FROM sums") == ([("sum", "BIGINT")],
                                                                  [(1,), (3,)])
    assert typed("SELECT sum(i) OVER (ORDER BY i) FROM sums ORDER BY i")[0] == [
        ("sum", "BIGINT")]  # the probe keeps the window: ORDER BY i still binds
    parameter = pg_semantics.typed_results(con, "SELECT sum(i) FROM sums WHERE i > $1")
    assert con.execute(parameter, [0]).fetchall() == [(3,)] and "BIGINT" in parameter
    # within an item too: coalesce(sum(i), 0) and sum(i) + 1 are bigint in PostgreSQL
    assert [t for _, t in typed("SELECT coalesce(sum(i), 0), sum(i) + 1, sum(b) + 1, "
                                "sum(i) FILTER (WHERE i > 1) FROM sums")[0]] == [
        "BIGINT", "BIGINT", "HUGEINT", "BIGINT"]
    for unchanged in ("SELECT sum(x) FROM sums", "SELECT * FROM sums", "SELECT 1",
                      "SELECT *, sum(i) OVER () FROM sums"):
        assert pg_semantics.typed_results(con, unchanged) is unchanged


def test_signs_date_differences_and_truncated_dates_are_typed_as_postgresql_types_them(con):
    con.execute("CREATE OR REPLACE TABLE days (a date, b date, n integer, x numeric(6, 2), "
                "t timestamp)")
    con.execute("INSERT INTO days VALUES ('2024-03-05', '2024-01-01', -5, 2.50, "
                "'2024-01-02 03:04:05')")

    def typed(sql):
        result = con.execute(pg_semantics.typed_results(con, sql))
        return [(c.name, str(d[1])) for c, d in zip(columns_of(pa.schema(
            [(d[0], pa.null()) for d in result.description])), result.description,
            strict=True)], result.fetchall()

    assert typed("SELECT a - b, a - b AS d FROM days") == (
        [("?column?", "INTEGER"), ("d", "INTEGER")], [(64, 64)])
    assert typed("SELECT max(a) - min(b) AS m FROM days") == ([("m", "INTEGER")], [(64,)])
    assert typed("SELECT ((a - b)) AS p FROM days") == ([("p", "INTEGER")], [(64,)])
    assert typed("SELECT sign(n), sign(x) AS s, sign(-1.5::double) FROM days") == (
        [("sign", "DOUBLE"), ("s", "DECIMAL(38,0)"), ("sign", "DOUBLE")], [(-1.0, 1, -1.0)])
    assert [t for _, t in typed("SELECT date_trunc('month', a) AS m, count(*) FROM days "
                                "GROUP BY 1")[0]] == ["TIMESTAMP WITH TIME ZONE", "BIGINT"]
    assert [t for _, t in typed("SELECT date_trunc('week', a), date_trunc('day', t) "
                                "FROM days GROUP BY date_trunc('week', a), t")[0]] == [
        "TIMESTAMP WITH TIME ZONE", "TIMESTAMP"]
    for unchanged in ("SELECT a - 1 FROM days", "SELECT t - t FROM days", "SELECT 5 - 2",
                      "SELECT n - 1, sign(n) + 1 FROM days",
                      "SELECT date_trunc('hour', t) FROM days"):
        assert pg_semantics.typed_results(con, unchanged) is unchanged


def test_generate_series_in_a_select_list_gives_rows(con):
    def typed(sql):
        result = con.execute(pg_semantics.rewrite(sql))
        names = [c.name for c in columns_of(pa.schema([(d[0], pa.null())
                                                       for d in result.description]))]
        return names, [str(d[1]) for d in result.description], result.fetchall()

    assert typed("SELECT generate_series(1, 3)") == (["generate_series"], ["INTEGER"],
                                                     [(1,), (2,), (3,)])
    assert typed("SELECT generate_series(1, 2) AS n, 'a' AS t") == (
        ["n", "t"], ["INTEGER", "VARCHAR"], [(1, "a"), (2, "a")])
    assert typed("SELECT generate_series(1, 5000000000, 2500000000)")[1:] == (
        ["BIGINT"], [(1,), (2500000001,)])
    assert typed("SELECT generate_series(1, 2) * 2 AS d")[2] == [(2,), (4,)]
    assert typed("SELECT n FROM generate_series(1, 3) t(n)") == (
        ["n"], ["INTEGER"], [(1,), (2,), (3,)])
    assert typed("SELECT * FROM generate_series(1, 5, 2)") == (
        ["generate_series"], ["INTEGER"], [(1,), (3,), (5,)])
    assert typed("SELECT generate_series.generate_series FROM generate_series(2, 2)")[2] == [
        (2,)]
    assert typed("SELECT count(*) FROM generate_series(1, 5000000000, 2500000000)")[1:] == (
        ["BIGINT"], [(2,)])  # bounds beyond int4: DuckDB's bigint rows, as PostgreSQL's


def test_an_untyped_literal_takes_the_other_operands_type(con):
    result = con.execute(pg_semantics.rewrite(
        "SELECT '10'::int + '5', 2::bigint * ' -3', 1.5 + '2.25', x - '1', x::smallint % '2', "
        "date '2020-01-11' - '2020-01-01', interval '1 day' - '2 hours', "
        "timestamp '2020-01-01' + '1 hour' FROM (VALUES (4)) t(x)"))
    assert [str(d[1]) for d in result.description] == [
        "INTEGER", "BIGINT", "DECIMAL(4,2)", "INTEGER", "SMALLINT", "BIGINT", "INTERVAL",
        "TIMESTAMP"]  # (date - date is integer once `typed_results` types it)
    assert result.fetchall() == [(15, -6, Decimal("3.75"), 3, 0, 10, dt.timedelta(hours=22),
                                  dt.datetime(2020, 1, 1, 1))]
    for sql in ("SELECT now() - '1 day'", "SELECT 1 * 'abc'"):  # the literal read as the type
        with pytest.raises(duckdb.ConversionException):
            one(con, sql)
    for sql in ("SELECT 'a' || 'b' LIKE '%b%'", "SELECT '1' + '2'", "SELECT $1 + '2'"):
        assert pg_semantics.rewrite(sql) == sql  # no operand beside a literal; two unknowns


def test_initcap_s_words_are_runs_of_letters_and_digits_of_any_script(con):
    assert one(con, "SELECT initcap('hELLO wORLD foo-bar o''neil 3abc'), "
                    "initcap('o’neil «jean-luc» x²y ébé—çà être_x'), initcap(''), "
                    "initcap(NULL)") == [(
        "Hello World Foo-Bar O'Neil 3abc", "O’Neil «Jean-Luc» X²Y Ébé—Çà Être_X", "", None)]


def test_round_of_a_double_breaks_ties_to_even_and_of_a_numeric_away_from_zero(con):
    assert one(con, "SELECT round(2.5::double), round(-2.5::double), round(3.5::double), "
                    "round(2.5), round(-2.5), round(7), round(2.567, 2)") == [
        (2.0, -2.0, 4.0, 3, -3, 7, Decimal("2.57"))]
    result = con.execute(pg_semantics.rewrite("SELECT round(2.5), round(2.5::double) AS r"))
    assert [str(d[1]) for d in result.description] == ["DECIMAL(2,0)", "DOUBLE"]
    assert [c.name for c in columns_of(pa.schema([(d[0], pa.null())
                                                  for d in result.description]))] == [
        "round", "r"]


def test_functions_duckdb_lacks_or_reads_otherwise():
    con = duckdb.connect()
    pg_jsonb.register(con)  # jsonb_agg's result is normalized
    result = con.execute(pg_semantics.rewrite(
        "SELECT format('%s-%s|%%', 1, NULL), json_build_object('a', 1), json_agg(x), "
        "jsonb_agg(x), every(x > 1), to_hex(255), initcap('hello wORLD'), "
        "btrim('xxaxx', 'x') FROM (VALUES (1), (2)) t(x)"))
    assert [c.name for c in columns_of(pa.schema([(d[0], pa.null())
                                                  for d in result.description]))] == [
        "format", "json_build_object", "json_agg", "jsonb_agg", "every", "to_hex", "initcap",
        "btrim"]
    assert result.fetchall() == [("1-|%", '{"a":1}', "[1,2]", "[1, 2]", False, "ff",
                                  "Hello World", "a")]
    assert one(con, "SELECT upper(to_hex(10)), lower(to_hex(11))") == [("A", "b")]
    # a negative integer's 32 bits, a negative bigint's 64 (DuckDB's hex: 64 for both)
    assert one(con, "SELECT to_hex(-1), to_hex(-7::int), to_hex(-1::bigint), to_hex(x) "
                    "FROM (SELECT -2 AS x)") == [
        ("ffffffff", "fffffff9", "ffffffffffffffff", "fffffffe")]


def test_encode_and_decode_in_hex_and_base64(con):
    assert one(con, "SELECT encode('\\x01ff'::bytea, 'hex'), decode('01FF', 'hex'), "
                    "encode('hi'::bytea, 'base64'), decode('aG\nk=', 'base64'), "
                    "encode(decode(repeat('ab', 60), 'hex'), 'base64')") == [
        ("01ff", b"\x01\xff", "aGk=", b"hi", "q6ur" * 19 + "\n" + "q6ur")]


def test_to_char_of_dates_and_timestamps(con):
    at = "timestamp '2020-03-02 13:04:05.123456'"
    assert one(con, f"SELECT to_char({at}, 'YYYY-MM-DD HH24:MI:SS.MS'), "
                    f"to_char({at}, 'FMMonth FMDD, YYYY Dy \"at\" HH12 pm'), "
                    f"to_char({at}, 'Day|MON|Q|D|DDD|IW|100%'), "
                    "to_char(date '2020-01-02', 'DD Mon YY')") == [
        ("2020-03-02 13:04:05.123", "March 2, 2020 Mon at 01 pm",
         "Monday   |MAR|1|2|062|10|100%", "02 Jan 20")]
    unknown = "SELECT to_char(1234.5, 'RN')"  # neither a date's template nor a number's
    assert "to_char" in pg_semantics.rewrite(unknown).lower()


def test_to_char_of_numbers_calls_the_python_formatter(con):
    con.create_function(pg_to_char.FUNCTION, pg_to_char.to_char_number,
                        ["VARCHAR", "VARCHAR"], "VARCHAR")
    try:
        assert one(con, "SELECT to_char(1234.5, '9999.99'), to_char(-3.5::float8, 'FM990.0'), "
                        "to_char(42, '000'), to_char(NULL::int, '9'), "
                        "to_char(1234567.891::numeric(12,3), 'FM999,999,990.00') AS n") == [
            (" 1234.50", "-3.5", " 042", None, "1,234,567.89")]
        names = con.sql(pg_semantics.rewrite("SELECT to_char(7, '9')")).columns
        assert names[0].startswith("to_char(")  # the server names it to_char
    finally:
        con.remove_function(pg_to_char.FUNCTION)


def test_extract_is_numeric_and_date_part_double_as_in_postgresql(con):
    at = "timestamp '2024-03-05 10:11:12.5'"
    sql = (f"SELECT extract(year FROM {at}), extract(second FROM {at}), "
           f"extract(milliseconds FROM {at}), extract(microseconds FROM {at}), "
           f"extract(epoch FROM {at}), extract(epoch FROM date '2024-03-05'), "
           f"extract(second FROM interval '1 min 2.5 s'), date_part('second', {at}), "
           f"date_part('year', {at}), date_part('epoch', {at}), extract(julian FROM {at})")
    result = con.sql(pg_semantics.rewrite(sql))
    assert [str(t) for t in result.types] == [
        "DECIMAL(18,0)", "DECIMAL(18,6)", "DECIMAL(18,3)", "DECIMAL(18,0)", "DECIMAL(18,6)",
        "DECIMAL(18,0)", "DECIMAL(18,6)", "DOUBLE", "DOUBLE", "DOUBLE", "DOUBLE"]
    assert result.fetchall() == [(
        Decimal("2024"), Decimal("12.5"), Decimal("12500"), Decimal("12500000"),
        Decimal("1709633472.5"), Decimal("1709596800"), Decimal("2.5"), 12.5, 2024.0,
        1709633472.5, pytest.approx(2460375.42445023))]
    assert result.columns[0].startswith("extract(") and result.columns[7].startswith("date_part(")


def test_a_star_over_a_join_using_lists_the_merged_columns_first(con):
    con.execute("CREATE TEMP TABLE using_l (id INTEGER, t VARCHAR, p INTEGER);"
                "CREATE TEMP TABLE using_r (id INTEGER, t VARCHAR);"
                "INSERT INTO using_l VALUES (1, 'x', 10), (2, 'y', 20);"
                "INSERT INTO using_r VALUES (3, 'y'), (4, 'z')")

    def run(sql: str) -> tuple[list[str], list[tuple]]:
        result = con.execute(pg_semantics.rewrite(sql))
        return [d[0] for d in result.description], result.fetchall()

    assert run("SELECT * FROM using_l JOIN using_r USING (t)") == (
        ["t", "id", "p", "id"], [("y", 2, 20, 3)])
    assert run("SELECT *, 1 AS one FROM using_l FULL JOIN using_r USING (t) ORDER BY 1") == (
        ["t", "id", "p", "id", "one"],
        [("x", 1, 10, None, 1), ("y", 2, 20, 3, 1), ("z", None, None, 4, 1)])
    assert run("SELECT * FROM using_l RIGHT JOIN using_r USING (t, id) ORDER BY 1") == (
        ["t", "id", "p"], [("y", 3, None), ("z", 4, None)])
    assert run("SELECT l.* FROM using_l l JOIN using_r USING (t)") == (
        ["id", "t", "p"], [(2, "y", 20)])


def test_stars_over_chains_and_natural_joins_list_postgresql_s_columns(con):
    con.execute("CREATE TEMP TABLE star_a (p INTEGER, x INTEGER, y VARCHAR);"
                "CREATE TEMP TABLE star_b (y VARCHAR, r VARCHAR, x INTEGER);"
                "CREATE TEMP TABLE star_c (s INTEGER, r VARCHAR);"
                "CREATE TEMP TABLE star_sink (x INTEGER, y VARCHAR, p INTEGER, r VARCHAR);"
                "INSERT INTO star_a VALUES (1, 1, 'one'), (2, 2, 'two');"
                "INSERT INTO star_b VALUES ('one', 'r1', 1), ('six', 'r6', 6);"
                "INSERT INTO star_c VALUES (10, 'r1'), (60, 'r6')")
    relations = column_origins.Relations.load(con)

    def run(sql: str) -> tuple[list[str], list[tuple]]:
        result = con.execute(pg_semantics.rewrite(sql, relations))
        return [d[0] for d in result.description], result.fetchall()

    assert run("SELECT * FROM star_a NATURAL JOIN star_b") == (
        ["x", "y", "p", "r"], [(1, "one", 1, "r1")])
    assert run("SELECT * FROM star_a NATURAL FULL JOIN star_b ORDER BY 1") == (
        ["x", "y", "p", "r"], [(1, "one", 1, "r1"), (2, "two", 2, None), (6, "six", None, "r6")])
    assert run("SELECT * FROM star_a JOIN star_b USING (x) RIGHT JOIN star_c USING (r) "
               "ORDER BY 1") == (["r", "x", "p", "y", "y", "s"],
                                 [("r1", 1, 1, "one", "one", 10), ("r6", None, None, None, None,
                                                                   60)])
    assert run("WITH j AS (SELECT * FROM star_a NATURAL JOIN star_b) "
               "SELECT * FROM star_c JOIN (SELECT * FROM j) AS s USING (r)") == (
        ["r", "s", "x", "y", "p"], [("r1", 10, 1, "one", 1)])
    # positions matter where the star feeds a table
    con.execute(pg_semantics.rewrite("INSERT INTO star_sink SELECT * FROM star_a "
                                     "NATURAL JOIN star_b", relations))
    assert con.execute("SELECT * FROM star_sink").fetchall() == [(1, "one", 1, "r1")]
    # where DuckDB's star cannot be made to list PostgreSQL's, it is left as it is
    for sql in ("SELECT * FROM star_c, star_a NATURAL JOIN star_b",
                "SELECT * FROM star_a NATURAL JOIN star_b CROSS JOIN star_b AS b2",
                "SELECT * FROM star_a NATURAL JOIN (VALUES (1)) AS v(x)"):
        assert pg_semantics.rewrite(sql, relations) == sql
    # relations are read only for a star over a join that merges columns
    def unreadable():
        raise AssertionError("read")

    sql = "SELECT *, length(y) FROM star_a JOIN star_b ON star_a.x = star_b.x"
    assert "LENGTH" in pg_semantics.rewrite(sql, unreadable)


def test_a_question_mark_in_a_string_is_not_jsonbs_operator() -> None:
    # An AI prompt's `?` leaves the statement unparsed (as written); the operator is found
    # beside such strings, and anywhere a backslash or dollar quote blurs the literals' ends.
    prompt = "SELECT * FROM t WHERE AI.IF(('Is it about a river? ', body))"
    assert pg_semantics.rewrite(prompt) == prompt
    assert "jsonb_exists" in pg_semantics.rewrite("SELECT 'a?' AS q, j ? 'k' FROM t").lower()
    assert "jsonb_exists" in pg_semantics.rewrite(r"SELECT E'\'' AS q, j ? 'k' FROM t").lower()


def test_select_into_is_create_table_as():
    assert pg_semantics.rewrite("SELECT * INTO TEMP t4 FROM t WHERE x = 1") == (
        "CREATE TEMPORARY TABLE t4 AS SELECT * FROM t WHERE x = 1")
    assert pg_semantics.rewrite("WITH c AS (SELECT 1 AS x) SELECT x INTO t5 FROM c UNION "
                                "SELECT 2") == (
        "CREATE TABLE t5 AS WITH c AS (SELECT 1 AS x) SELECT x FROM c UNION SELECT 2")
    for sql in ("SELECT 1 AS into_x", "SELECT 'INTO' FROM t", "INSERT INTO t VALUES (1)"):
        assert pg_semantics.rewrite(sql) == sql


def test_intervals_turned_into_text_read_as_postgresql_prints_them(con):
    pg_interval.register(con)
    pg_text.register(con)
    for name, overloads in pg_text.MACROS.items():
        con.execute(create_macro(name, overloads))
    assert one(con, "SELECT (interval '-1 day -3 hours')::text, "
                    "concat(interval '1 year 2 mons', '|', 1), interval '-1 mon' || '', "
                    "cast(interval '1 day 1 hour' AS varchar(5)), 1::text, 'a'::text") == [
        ("-1 days -03:00:00", "1 year 2 mons|1", "-1 mons", "1 day", "1", "a")]


def test_only_statements_that_may_turn_an_interval_or_array_into_text_are_parsed_for_it():
    relations = column_origins.Relations({("main", "t"): (), ("main", "e"): ()}, ("main",),
                                         texted_otherwise={("main", "e")})
    for sql in ("SELECT name::text FROM t", "SELECT 'a' || name FROM t", "SELECT d FROM e"):
        assert pg_semantics.rewrite(sql, relations) is sql
    for sql in ("SELECT d::text FROM e", "SELECT concat(now() - ts) FROM t",
                "SELECT string_to_array(name, ',')::text FROM t"):
        rewritten = pg_semantics.rewrite(sql, relations).lower()
        # (concat's arguments print as their output function does: `pg_text.OUTPUT_MACRO`,
        # which is TEXT_MACRO's text but for booleans)
        assert pg_text.TEXT_MACRO in rewritten or pg_text.OUTPUT_MACRO in rewritten


def test_an_interval_divided_is_divided_by_duckdb_s_function(con):
    """DuckDB's integer_division makes `/` the `//` operator, which has no interval form."""
    sql = "SELECT interval '1 month 1 day' / 3, 7 / 2"
    assert '"/"(' in pg_semantics.rewrite(sql) and "7 / 2" in pg_semantics.rewrite(sql)
    assert one(con, sql) == [(dt.timedelta(days=10, hours=8), 3)]


@pytest.mark.parametrize(("given", "read"), [
    ("-1 days +02:00:00", "-1 days 02:00:00"),  # (what PostgreSQL and Heron print)
    ("+1 day -2 hours", "1 day -2 hours"),
    ("P1Y2M3DT4H5M6.5S", "1 years 2 months 3 days 4 hours 5 minutes 6.5 seconds"),
    ("P2W", "2 weeks"), ("-P1D", "-1 days"), ("PT0S", "0 seconds"),
    ("1 day 02:00:00", "1 day 02:00:00"),
])
def test_interval_input_is_read_as_interval_in_reads_it(given, read):
    assert pg_interval.duckdb_input(given) == read
    duckdb.connect().execute("SELECT CAST(? AS INTERVAL)", [read])  # DuckDB reads it


def test_text_compared_with_an_enum_compares_in_the_enum_s_order(con):
    con.execute("CREATE TYPE cmp_mood AS ENUM ('sad', 'ok', 'happy');"
                "CREATE TEMP TABLE cmp_moods (id INTEGER, m cmp_mood);"
                "INSERT INTO cmp_moods VALUES (1, 'sad'), (2, 'happy'), (3, 'ok')")
    relations = column_origins.Relations.load(con)

    def ids(sql: str, *params: object) -> list[int]:
        return [r[0] for r in con.execute(pg_semantics.rewrite(sql, relations),
                                          list(params) or None).fetchall()]

    assert ids("SELECT id FROM cmp_moods WHERE m > 'ok'") == [2]  # DuckDB's alone: [1] ('sad')
    assert ids("SELECT id FROM cmp_moods c WHERE 'ok' >= c.m ORDER BY id") == [1, 3]
    assert ids("SELECT id FROM cmp_moods WHERE m BETWEEN 'ok' AND 'happy' ORDER BY id") == [2, 3]
    assert ids("SELECT id FROM cmp_moods WHERE m < $1 ORDER BY id", "happy") == [1, 3]
    assert ids("SELECT id FROM cmp_moods WHERE 'happy'::cmp_mood > 'ok' AND id = 1") == [1]
    with pytest.raises(duckdb.ConversionException):  # PostgreSQL: 22P02, not one of its labels
        ids("SELECT id FROM cmp_moods WHERE m = 'glad'")
    assert ids("SELECT id FROM cmp_moods WHERE m::text > 'ok' ORDER BY id") == [1]  # as text
    con.execute("DROP TABLE cmp_moods; DROP TYPE cmp_mood")


def test_any_and_all_of_a_null_array_are_null(con):
    def row(sql: str, *params: object) -> tuple:
        return con.execute(pg_semantics.rewrite(sql), list(params) or None).fetchone()

    # (DuckDB's alone: False, True)
    assert row("SELECT 1 = ANY(NULL::int[]), 1 <> ALL(NULL::int[])") == (None, None)
    assert row("SELECT 2 = ANY(a), 3 = ANY(a), 3 <> ALL(a), 1 <> ALL(a), 3 = ANY(b) "
               "FROM (SELECT [1, 2] AS a, [1, NULL] AS b)") == (
        True, False, True, False, None)
    assert row("SELECT 2 = ANY($1), 2 <> ALL($1)", None) == (None, None)
    assert row("SELECT 2 = ANY($1), 2 <> ALL($1)", [2]) == (True, False)
    assert row("SELECT 2 = ANY(SELECT 1 WHERE false)") == (False,)  # a subquery's: DuckDB's


def test_a_timestamptz_casts_to_its_time_of_day_in_the_session_s_zone(con):
    for name, overloads in pg_semantics.MACROS.items():
        con.execute(create_macro(name, overloads))
    con.execute("SET TimeZone = 'America/New_York'")
    try:
        assert con.execute(pg_semantics.rewrite(
            "SELECT ts::time, CAST(ts AS time), '10:00'::time, t::time FROM (SELECT "
            "TIMESTAMPTZ '2024-01-01 10:30:00+00' AS ts, TIMESTAMP '2024-01-01 11:45' AS t)")
        ).fetchone() == (dt.time(5, 30), dt.time(5, 30), dt.time(10), dt.time(11, 45))
    finally:
        con.execute("SET TimeZone = 'UTC'")


def test_a_text_that_is_no_label_of_an_enum_is_worded_as_postgresql_words_it():
    from heron.planner import Planner

    con = duckdb.connect()
    pg_semantics.configure(con)
    planner = Planner(con)
    for sql in ("CREATE TYPE err_mood AS ENUM ('sad', 'it''s ok')",
                "CREATE TABLE err_moods (m err_mood)", "INSERT INTO err_moods VALUES ('sad')"):
        planner.execute(planner.prepare(sql))
    for sql in ("INSERT INTO err_moods VALUES ('glad')", "SELECT 'glad'::err_mood",
                "SELECT * FROM err_moods WHERE m > 'glad'"):
        with pytest.raises(SqlError) as caught:
            planner.execute(planner.prepare(sql))
        assert (caught.value.sqlstate, caught.value.message) == (
            SqlState.INVALID_TEXT_REPRESENTATION, 'invalid input value for enum err_mood: "glad"')

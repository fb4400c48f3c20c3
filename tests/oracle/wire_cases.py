"""The statements of the differential suite: each runs through every driver against Heron and
PostgreSQL 15, and what the client sees (values, type OIDs, command tag, SQLSTATE) must agree.

A case is one statement with `%s` parameters (drivers that number them get `$n`); `setup` runs
first through the simple protocol (each case owns the tables it names, prefixed `w_`).
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class Case:
    name: str
    sql: str
    params: tuple[Any, ...] = ()
    setup: tuple[str, ...] = field(default=())


def _table(name: str, columns: str, *rows: str) -> tuple[str, ...]:
    inserts = tuple(f"INSERT INTO {name} VALUES {row}" for row in rows)
    return (f"DROP TABLE IF EXISTS {name}", f"CREATE TABLE {name} ({columns})", *inserts)


_PEOPLE = _table("w_people", "id integer PRIMARY KEY, name text NOT NULL, score numeric(6,2)",
                 "(1, 'ann', 12.50)", "(2, 'bob', NULL)", "(3, 'cy', 7.25)")

_DOCS = _table("w_docs", "id integer, j jsonb, k json",
               "(1, '{\"n\": [1, 2], \"a\": \"x\", \"m\": {\"b\": true, \"a\": null}}', "
               "'{\"n\" : [1,2]}')",
               "(2, '[\"z\", 3.0]', NULL)", "(3, NULL, '[]')")

_CHARS = _table("w_chars", "id integer, c char(4), d character(2), e char",
                 "(1, 'ab', 'x', 'y')", "(2, 'abcd', NULL, NULL)", "(3, NULL, 'xy', ' ')")

_MOODS = ("DROP TABLE IF EXISTS w_moods", "DROP TYPE IF EXISTS w_mood",
          "CREATE TYPE w_mood AS ENUM ('sad', 'ok', 'happy')",
          "CREATE TABLE w_moods (id integer, m w_mood)",
          "INSERT INTO w_moods VALUES (1, 'sad'), (2, 'happy'), (3, 'ok')")

_DATES = _table("w_dates", "d date", "('2024-03-15')", "('2024-03-20')", "('2024-04-01')")

CASES: tuple[Case, ...] = (
    # -- arithmetic as PostgreSQL does it
    Case("integer_division", "SELECT 5/2 AS a, -7/2 AS b, 7 % 3 AS c, -7 % 3 AS d"),
    Case("numeric_division", "SELECT 5.0/2 AS a"),
    Case("float_division", "SELECT 5::float8/2 AS a"),
    Case("integer_division_by_zero", "SELECT 1/0"),
    Case("numeric_division_by_zero", "SELECT 1.5/0"),
    Case("float_division_by_zero", "SELECT 1::float8/0"),
    Case("modulo_by_zero", "SELECT 5 % 0"),
    Case("integer_overflow", "SELECT 2147483647::int4 + 1"),
    Case("bigint_overflow", "SELECT 9223372036854775807::int8 + 1"),
    # an untyped string literal beside a typed operand takes that operand's type
    Case("unknown_operand_integer", "SELECT '10'::int + '5' AS a, 2 * '3' AS b, 10 - ' -4' AS c, "
         "2::int8 * '3' AS d, 1 + '2' + 3 AS e, '3' > 2 AS f"),
    Case("unknown_operand_numeric", "SELECT 1.5 + '2' AS a, 1.5 + '2.25' AS b, "
         "x * '3' AS c, x + '0.125' AS d FROM (VALUES (1.25::numeric(5,2))) t(x)"),
    Case("unknown_operand_float_and_smallint", "SELECT x + '1' AS a, y - '1' AS b "
         "FROM (VALUES (1.5::float8, 2::int2)) t(x, y)"),
    Case("unknown_operand_dates", "SELECT date '2020-01-11' - '2020-01-01' AS a, "
         "timestamp '2020-01-02' - '2020-01-01' AS b, interval '1 day' - '2 hours' AS c, "
         "timestamp '2020-01-01' + '1 hour' AS d"),
    Case("unknown_operand_timestamp_minus_text", "SELECT now() - '1 day'"),
    Case("unknown_operand_beside_a_parameter", "SELECT %s::date - '2020-01-01' AS a",
         params=(dt.date(2020, 1, 11),)),
    Case("unknown_operand_not_a_number", "SELECT 1 * 'abc'"),
    # the prefix operators: |/ square root, ||/ cube root (double precision), @ absolute value
    Case("prefix_roots", "SELECT |/ 16 AS a, |/ 2 AS b, ||/ 27 AS c, ||/ -8.0 AS d, |/ '16' AS e, "
         "|/ 16 + 9 AS f, ||/ 4 * 2 < 3 AS g, |/ x, ||/ x FROM (VALUES (2::int), (NULL)) t(x)"),
    Case("prefix_roots_parsed", "SELECT |/ 16 + 9 AS f, ||/ 4 * 2 AS g, 1::numeric AS n"),
    Case("prefix_square_root_of_a_negative", "SELECT |/ -1"),
    # case mapping as PostgreSQL's in a UTF-8 database: ß has no capital of one letter, and
    # initcap's words are runs of letters and digits of any script
    Case("upper_sharp_s", "SELECT upper('straße') AS a, upper('ẞ') AS b, lower('ẞ') AS c, "
         "upper(x) AS d FROM (VALUES ('groß'), (NULL)) t(x)"),
    Case("initcap_words", "SELECT initcap('hELLO wORLD foo-bar o''neil 3abc ßtraße') AS a, "
         "initcap('o’neil «jean-luc» x²y ébé—çà être_x') AS b, initcap(x) AS c "
         "FROM (VALUES ('ǆemal ßa'), (NULL)) t(x)"),
    Case("prefix_absolute_value", "SELECT @ -5 AS a, @ -5.5 AS b, @ -2::int8 AS c, @ x "
         "FROM (VALUES (-1.5::float4)) t(x)"),
    # -- numeric keeps its digits
    Case("numeric_literal_cast", "SELECT 1.23456::numeric AS n"),
    Case("numeric_string_cast", "SELECT '1.23456'::numeric AS n"),
    Case("numeric_typmod", "SELECT 12.345::numeric(10,2) AS n"),
    # row locks: accepted (Heron takes none; see pg_semantics)
    Case("select_for_update", "SELECT id, name FROM w_people WHERE id < 3 ORDER BY id "
         "FOR UPDATE", setup=_PEOPLE),
    Case("select_for_share_skip_locked", "SELECT id FROM w_people ORDER BY id LIMIT 1 "
         "FOR NO KEY UPDATE OF w_people SKIP LOCKED", setup=_PEOPLE),
    Case("numeric_column", "SELECT score FROM w_people ORDER BY id", setup=_PEOPLE),
    Case("array_length_of_empty", "SELECT array_length(ARRAY[]::int[], 1), array_length(ARRAY[4, "
         "5], 1), cardinality(ARRAY[]::int[])"),
    Case("interval_input", "SELECT '-1 days +02:00:00'::interval AS a, interval '+1 day -2 hours' "
         "AS b, 'P1Y2M3DT4H5M6.5S'::interval AS c, CAST('P2W' AS interval) AS d"),
    Case("distinct_aggregates_in_order", "SELECT string_agg(DISTINCT name, ',') AS s, "
         "array_agg(DISTINCT score) AS a FROM w_people", setup=_PEOPLE),
    # an enum's labels compare in its order with a literal or parameter (DuckDB's: as text)
    Case("enum_compared_with_literals", "SELECT id, m > 'ok' AS a, m BETWEEN 'sad' AND 'ok' AS b, "
         "m IN ('ok', 'happy') AS c, 'happy' <= m AS d FROM w_moods ORDER BY id", setup=_MOODS),
    Case("enum_compared_with_a_parameter", "SELECT id FROM w_moods WHERE m >= %s ORDER BY id",
         ("ok",), setup=_MOODS),
    Case("quantified_null_array", "SELECT 1 = ANY(NULL::int[]) AS a, 1 <> ALL(NULL::int[]) AS b, "
         "id = ANY(CASE WHEN id > 1 THEN ARRAY[2] END) AS c, id <> ALL(CASE WHEN id > 1 THEN "
         "ARRAY[3, NULL] END) AS d FROM w_people ORDER BY id", setup=_PEOPLE),
    Case("all_of_a_parameter", "SELECT id FROM w_people WHERE id <> ALL(%s) ORDER BY id",
         ([1, 2],), setup=_PEOPLE),
    Case("array_replace_and_quote_nullable", "SELECT array_replace(ARRAY[1, 2, NULL, 2], 2, 9) "
         "AS a, quote_nullable(NULL) AS b, quote_nullable('it''s') AS c"),
    Case("string_to_array_at_its_edges", "SELECT string_to_array('abc', NULL) AS a, "
         "string_to_array('abc', '') AS b, string_to_array('', ',') AS c, "
         "string_to_array('a,b,x,,c', ',', 'x') AS d, string_to_array('a,,c', ',', '') AS e"),
    Case("booleans_in_concat_and_format", "SELECT concat('a', true, NULL::boolean) AS a, "
         "concat_ws(',', false, 1) AS b, format('%s %L', true, false) AS c, true::text AS d"),
    Case("split_part_at_its_edges", "SELECT split_part('abc', '', 1) AS a, "
         "split_part('abc', '', 2) AS b, split_part('a,b,c', ',', -1) AS c, "
         "split_part('a,b', ',', 5) AS d, split_part(NULL, ',', 0) AS e"),
    Case("split_part_of_field_zero", "SELECT split_part('a,b', ',', 0)"),
    Case("to_char_of_weeks_centuries_julian_days_and_fractions",
         "SELECT to_char(timestamp '2024-02-29 13:45:30.123456', 'IYYY-IW WW CC J FF3 \"Q\"Q') "
         "AS a, to_char(date '2001-01-01', 'FMCC FMWW dy') AS b, to_char(date '1999-12-31', "
         "'CC J') AS c"),
    Case("date_bin", "SELECT date_bin('15 minutes', timestamp '1999-12-31 23:59:59', "
         "timestamp '2000-01-01') AS a, date_bin('1 hour 30 minutes', timestamp "
         "'2024-02-29 13:45:30', timestamp '2024-02-29 00:07') AS b, date_bin('7 days', "
         "timestamp '2024-02-29 13:45:30', timestamp '2001-01-01 03:00') AS c"),
    Case("isfinite_of_each_type", "SELECT isfinite(interval '1 day') AS a, "
         "isfinite('infinity'::date) AS b, isfinite(timestamp '2024-01-01') AS c, "
         "isfinite(NULL::interval) AS d"),
    Case("date_bin_by_months", "SELECT date_bin('1 month', timestamp '2024-02-29', "
         "timestamp '2000-01-01')"),
    Case("array_dimensions", "SELECT array_dims(ARRAY[1, 2, 3]) AS a, "
         "array_dims(ARRAY[[1, 2], [3, 4], [5, 6]]) AS b, array_ndims(ARRAY[[1, 2], [3, 4]]) AS c, "
         "array_ndims(ARRAY[]::int[]) AS d, cardinality(ARRAY[[1, 2], [3, 4]]) AS e, "
         "cardinality(ARRAY[]::int[]) AS f, cardinality(ARRAY[4, 5]) AS g"),
    Case("array_positions_fill_and_trim", "SELECT array_positions(ARRAY[1, 2, 1], 1) AS a, "
         "array_fill(7, ARRAY[3]) AS b, trim_array(ARRAY[1, 2, 3], 1) AS c"),
    Case("trim_array_past_its_length", "SELECT trim_array(ARRAY[1, 2, 3], 4)"),
    Case("num_nulls", "SELECT num_nulls(1, NULL, 'a'), num_nonnulls(id, score) AS n "
         "FROM w_people ORDER BY id", setup=_PEOPLE),
    Case("date_trunc_of_a_date", "SELECT date_trunc('month', d) AS m, count(*) FROM w_dates "
         "GROUP BY 1 ORDER BY 1", setup=_DATES),
    Case("date_trunc_of_a_date_grouped_by_the_call", "SELECT date_trunc('week', d), "
         "date_trunc('day', '2024-01-02'::date) AS c, count(*) FROM w_dates "
         "GROUP BY date_trunc('week', d) ORDER BY 1", setup=_DATES),
    Case("time_of_a_timestamptz", "SELECT ts::time AS a, CAST(ts + interval '1 hour' AS time) "
         "AS b, '10:00'::time AS c, ts::date::text AS d FROM (VALUES "
         "('2024-01-01 23:30:00+00'::timestamptz)) t(ts)"),
    Case("between_symmetric", "SELECT 1 BETWEEN SYMMETRIC 3 AND 0 AS a, 5 NOT BETWEEN SYMMETRIC 3 "
         "AND 0 AS b, NULL BETWEEN SYMMETRIC 1 AND 2 AS c"),
    Case("like_any_all", "SELECT id, name ILIKE ANY (ARRAY['A%', '%Y']), name LIKE ALL "
         "(ARRAY['%n%', 'a%']), name NOT LIKE ANY (ARRAY['ann', NULL]) FROM w_people ORDER BY id",
         setup=_PEOPLE),
    Case("percentile_cont_of_numeric", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY "
         "score), percentile_disc(0.5) WITHIN GROUP (ORDER BY score) FROM w_people",
         setup=_PEOPLE),
    Case("numeric_sum", "SELECT sum(score) FROM w_people", setup=_PEOPLE),
    Case("integer_sums_within_items", "SELECT coalesce(sum(id), 0) AS a, sum(id) * 2 AS b, "
         "sum(id) FILTER (WHERE id > 1) AS c, coalesce(sum(id) FILTER (WHERE id > 9), 0) AS d "
         "FROM w_people", setup=_PEOPLE),
    Case("integer_sum_within_a_windowed_item", "SELECT id, coalesce(sum(id) OVER (ORDER BY id), "
         "0) AS running FROM w_people ORDER BY id", setup=_PEOPLE),
    Case("round_half_even_for_doubles", "SELECT round(2.5::float8) AS a, round(-2.5::float8) AS b, "
         "round(3.5::float8) AS c, round(2.5) AS d, round(-2.5) AS e"),
    # array literals written into array columns (DuckDB's list cast reads [a, b] only)
    Case("array_literals_written", "SELECT id, tags, nums FROM w_arrays ORDER BY id",
         setup=("DROP TABLE IF EXISTS w_arrays",
                "CREATE TABLE w_arrays (id int PRIMARY KEY, tags text[], nums int[])",
                "INSERT INTO w_arrays VALUES (1, '{a,\"b c\",NULL}', '{1,2}'), (2, '{}', NULL)",
                "UPDATE w_arrays SET nums = '{7}' WHERE id = 2",
                "INSERT INTO w_arrays (id, tags) VALUES (1, '{x}') ON CONFLICT (id) DO UPDATE "
                "SET tags = '{y,z}'")),
    Case("generate_series_select_list", "SELECT generate_series(1, 3)"),
    Case("generate_series_aliased", "SELECT generate_series(1, 2) AS n, 'a' AS t"),
    Case("generate_series_from", "SELECT n FROM generate_series(1, 3) AS t(n)"),
    # a function of scalars in FROM: its alias names its column too
    Case("generate_series_alias_is_the_column",
         "SELECT x, x * 2 AS y FROM generate_series(1, 3) AS x WHERE x > 1 ORDER BY x DESC"),
    Case("generate_series_alias_in_aggregates",
         "SELECT jsonb_agg(g ORDER BY g), sum(g), count(*) FILTER (WHERE g % 2 = 0) "
         "FROM generate_series(1, 10, 3) g"),
    Case("generate_series_of_dates", "SELECT d, d::date AS day FROM generate_series("
         "'2024-03-30'::date, '2024-04-01'::date, interval '1 day') AS d"),
    Case("jsonb_agg_ordered_and_distinct",
         "SELECT n, jsonb_agg(s ORDER BY s DESC), jsonb_agg(DISTINCT n) FROM (VALUES (1, 'b'), "
         "(1, 'a'), (2, NULL)) t(n, s) GROUP BY n ORDER BY n"),
    Case("regexp_split_to_table_from", "SELECT w, length(w) FROM regexp_split_to_table("
         "'ab  cde f', '\\s+') AS w ORDER BY 2, 1"),
    Case("substring_of_a_regular_expression", "SELECT substring('abc123' from '[0-9]+') AS a, "
         "substring('abc123def' from 'c([0-9]+)d') AS b, substring('abc' from 'x') AS c, "
         "substring('hello' from 2 for 3) AS d"),
    Case("array_to_string_of_nulls", "SELECT array_to_string(ARRAY[1, NULL, 3], ',', '*') AS a, "
         "array_to_string(ARRAY['a', NULL, 'b'], '-') AS b"),
    # LIKE's default escape character is the backslash (Django escapes % and _ with it)
    Case("like_escapes", "SELECT 'a_c' LIKE 'a\\_c' AS a, 'abc' LIKE 'a\\_c' AS b, "
         "'a%' LIKE 'a\\%' AS c, 'A_C' ILIKE 'a\\_c' AS d"),
    Case("like_escaped_parameter", "SELECT x FROM (VALUES ('50' || chr(37)), ('500')) t(x) "
         "WHERE x LIKE %s ORDER BY x", params=("50\\%",)),  # (psycopg2 reads % in the text)
    Case("make_interval", "SELECT make_interval(days => 2) AS a, make_interval(0, 0, 0, 1) AS b, "
         "make_interval(hours => 1, mins => 30) AS c, make_interval(secs => 1.5) AS d"),
    Case("width_bucket", "SELECT width_bucket(5, 0, 10, 5) AS a, width_bucket(-1, 0, 10, 5) AS b, "
         "width_bucket(10, 0, 10, 5) AS c, width_bucket(5.5, 10, 0, 5) AS d"),
    Case("width_bucket_without_buckets", "SELECT width_bucket(5, 0, 10, 0)"),
    Case("regexp_split_to_table_select_list",
         "SELECT regexp_split_to_table('a,b,,c', ',') AS part"),
    Case("format_template", "SELECT format('%s-%s: %I %L %%', 1, 'a', 'My Table', 'it''s') AS f, "
         "format('%s|%s', NULL, 2) AS g"),
    Case("text_functions", "SELECT to_hex(255) AS h, initcap('hello wORLD') AS i, "
         "btrim('xxaxx', 'x') AS b, btrim('  a  ') AS c"),
    Case("encode_decode", "SELECT encode('\\x0102ff'::bytea, 'hex') AS h, decode('0102ff', 'hex') "
         "AS d, encode('hello world'::bytea, 'base64') AS b, decode('aGVs\nbG8=', 'base64') AS e, "
         "encode(decode(repeat('ab', 60), 'hex'), 'base64') AS long"),
    Case("to_char_templates", "SELECT to_char(timestamp '2020-03-02 13:04:05.123456', "
         "'YYYY-MM-DD HH24:MI:SS.MS US') AS a, to_char(date '2020-01-02', 'Mon DD, YYYY') AS b, "
         "to_char(timestamp '2020-03-02 13:04:05', 'FMMonth FMDD HH12:MI AM Dy Day| Q D DDD IW "
         "\"100%\" MONTH month mon') AS c, to_char(timestamp '2020-03-02 03:04:05', "
         "'FMHH24:FMMI FMSS FMMM/FMDD/YY HH am') AS d, to_char(timestamp '2020-03-02 13:04:05', "
         "'HH12 pm PM') AS e"),
    Case("json_functions", "SELECT json_build_object('a', 1) AS o, json_agg(x) AS a, every(x > 0) "
         "AS e FROM (VALUES (1), (2)) t(x)"),
    Case("integer_sums", "SELECT sum(id), sum(id::int2) AS s, sum(id::int8) AS b, "
         "sum(DISTINCT id) AS d FROM w_people", setup=_PEOPLE),
    Case("integer_sum_over_window", "SELECT sum(id) OVER (ORDER BY id) FROM w_people ORDER BY id",
         setup=_PEOPLE),
    # -- bytea
    Case("bytea_hex_literal", "SELECT '\\x0102'::bytea AS b, octet_length('\\x0102'::bytea) AS n"),
    Case("bytea_escape_literal", "SELECT 'ab\\000c'::bytea AS b"),
    Case("length_functions", "SELECT length('héllo'), char_length('héllo'), octet_length('héllo'), "
         "octet_length('\\x0102'::bytea), bit_length('ab'), strpos('hello', 'l'), "
         "position('l' in 'hello'), array_length(ARRAY[1, 2], 1), cardinality(ARRAY[1, 2]), "
         "length('ab') + 1"),
    Case("bytea_parameter", "SELECT %s::bytea AS b", (b"\x00\xff\x10",)),
    Case("fetch_with_ties", "SELECT r, r * 2 AS d FROM (VALUES (1), (2), (2), (3)) AS v(r) "
         "ORDER BY r FETCH FIRST 2 ROWS WITH TIES"),
    Case("fetch_with_ties_after_an_offset", "SELECT r FROM (VALUES (1), (2), (2), (3), (3)) AS "
         "v(r) ORDER BY 1 DESC OFFSET 1 ROW FETCH NEXT 1 ROW WITH TIES"),
    Case("order_by_using", "SELECT r FROM (VALUES (1), (NULL), (3)) AS v(r) ORDER BY r USING >"),
    Case("ntile", "SELECT ntile(3) OVER (ORDER BY g), ntile(2) OVER w AS half, row_number() "
         "OVER w FROM generate_series(1, 5) AS g WINDOW w AS (ORDER BY g DESC) ORDER BY g"),
    # -- text types
    Case("varchar_cast_truncates", "SELECT 'abcdef'::varchar(3) AS v"),
    Case("varchar_column_enforced", "INSERT INTO w_short VALUES ('abcd')",
         setup=_table("w_short", "v varchar(3)")),
    Case("varchar_column_fits", "INSERT INTO w_short2 VALUES ('abc')",
         setup=_table("w_short2", "v varchar(3)")),
    # character(n): announced bpchar (1042, typmod n + 4), sent blank-padded to n; its trailing
    # blanks are insignificant to comparisons, length, || and casts to text
    Case("char_casts", "SELECT 'ab'::char(4) AS a, 'abcdef'::char(3) AS b, 'xyz'::char AS c, "
         "'ab'::character(3) AS d, 'a'::bpchar AS e, ' a'::char(3) AS f, NULL::char(2) AS g"),
    Case("char_cast_semantics", "SELECT 'ab'::char(4) || '|' AS a, length('ab  '::char(4)) AS b, "
         "'ab'::char(4) = 'ab' AS c, ('ab'::char(4))::text AS d, upper('ab'::char(4)) AS e, "
         "pg_typeof('a'::char(3)) AS f, pg_typeof('a'::char) AS g"),
    Case("char_columns", "SELECT id, c, d, e, c || '|' AS cat, length(c) AS l, c = 'ab' AS eq, "
         "c::text AS t, pg_typeof(c) AS p FROM w_chars ORDER BY id", setup=_CHARS),
    Case("char_column_in_subquery", "SELECT s.c FROM (SELECT c FROM w_chars2 WHERE id = 1) s",
         setup=_table("w_chars2", "id integer, c char(5)", "(1, 'ab')")),
    Case("char_column_parameter", "SELECT id FROM w_chars3 WHERE c = %s", ("ab",),
         setup=_table("w_chars3", "id integer, c char(4)", "(1, 'ab')", "(2, 'abc')")),
    Case("char_column_enforced", "INSERT INTO w_chars4 VALUES ('abcde')",
         setup=_table("w_chars4", "c char(4)")),
    Case("char_column_trailing_blanks_fit", "INSERT INTO w_chars5 VALUES ('abcd   ')",
         setup=_table("w_chars5", "c char(4)")),
    Case("char_catalog", "SELECT a.attname::text AS n, a.atttypid::int AS t, a.atttypmod, "
         "format_type(a.atttypid, a.atttypmod) AS f, c.data_type::text AS d, "
         "c.character_maximum_length, c.udt_name::text AS u FROM pg_attribute a "
         "JOIN information_schema.columns c ON c.table_name = 'w_chars6' "
         "AND c.column_name = a.attname WHERE a.attrelid = 'w_chars6'::regclass "
         "AND a.attnum > 0 ORDER BY a.attnum",
         setup=_table("w_chars6", "c char(4), d character(2), e char, v varchar(3)")),
    Case("char_create_table_as", "SELECT c, format_type(atttypid, atttypmod) AS f FROM w_chars8, "
         "pg_attribute WHERE attrelid = 'w_chars8'::regclass AND attname = 'c'",
         setup=(*_table("w_chars7", "c char(3)", "('ab')"), "DROP TABLE IF EXISTS w_chars8",
                "CREATE TABLE w_chars8 AS SELECT c FROM w_chars7")),
    Case("text_concat", "SELECT 'a' || 'b' AS s, concat('x', NULL, 'y') AS c"),
    # SIMILAR TO reads SQL's patterns: % and _ are wildcards, . is literal
    Case("similar_to", "SELECT 'banana' SIMILAR TO '%an%' AS a, 'banana' SIMILAR TO 'b.n%' AS b, "
         "'a.c' SIMILAR TO 'a.c' AS c, 'abc' SIMILAR TO '(a|x)_c' AS d, "
         "'abc' NOT SIMILAR TO 'a%' AS e, 'a%c' SIMILAR TO 'a!%c' ESCAPE '!' AS f, "
         "'a_c' SIMILAR TO 'a\\_c' AS g, 'abbb' SIMILAR TO 'ab{2,3}' AS h, "
         "NULL SIMILAR TO 'a' AS i, 'x' SIMILAR TO '[a-z]+' AS j"),
    Case("similar_to_rows", "SELECT name FROM w_people WHERE name SIMILAR TO '(a|c)%' "
         "ORDER BY id", setup=_PEOPLE),
    Case("similar_to_parameter", "SELECT name FROM w_people WHERE name SIMILAR TO %s::text "
         "ORDER BY id", ("_o_",), setup=_PEOPLE),
    Case("similar_to_bad_escape", "SELECT 'a' SIMILAR TO 'a' ESCAPE 'xy'"),
    # substring counts positions before the string's first (DuckDB's count from its end)
    Case("substring_bounds", "SELECT substring('abc', -1, 2) AS a, substring('abc', 0, 2) AS b, "
         "substring('abc', -5) AS c, substr('abcdef', -2, 5) AS d, "
         "substring('abc' from -1 for 3) AS e, substring('abc', NULL, 1) AS f, "
         "substring('abc', 1, NULL) AS g"),
    Case("substring_computed", "SELECT substring(name, id - 2, 2) AS s FROM w_people ORDER BY id",
         setup=_PEOPLE),
    Case("substring_negative_length", "SELECT substring('abc', 1, -1)"),
    Case("numeric_field_overflow", "SELECT 99999::numeric(4, 1)"),
    Case("numeric_insert_overflow", "INSERT INTO w_num VALUES (%s)", (Decimal("12345.5"),),
         setup=_table("w_num", "x numeric(4, 1)")),
    # regexp_match(es) give the capture groups as text[] (DuckDB's regexp_matches is a test)
    Case("regexp_match", "SELECT regexp_match(name, '(.)(.)$') AS g, "
         "regexp_match(name, 'n+') AS m, regexp_match(name, 'A', 'i') AS i, "
         "regexp_match(name, 'a(', 'q') AS q FROM w_people ORDER BY id", setup=_PEOPLE),
    Case("regexp_matches", "SELECT id, regexp_matches(name, '([a-z])(n)') AS m FROM w_people "
         "ORDER BY id", setup=_PEOPLE),
    Case("regexp_matches_global", "SELECT regexp_matches('a1b22c333', '[a-z]([0-9]+)', 'g') AS m"),
    Case("regexp_match_unmatched_groups", "SELECT regexp_match('ab', '(a)(x)?(b)') AS a, "
         "regexp_match('b', '(a)?b') AS b, regexp_match('abc', '(x*)b') AS c, "
         "regexp_match('AB', '(a)(x)?', 'i') AS d, regexp_match('ab', '(a)|(b)') AS e"),
    Case("regexp_matches_unmatched_groups", "SELECT regexp_matches('abab', '(a)|(b)', 'g') AS g, "
         "regexp_matches('ab', '(a)(x)?(b)') AS m"),
    Case("regexp_match_global", "SELECT regexp_match('ab', 'a', 'g')"),
    Case("regexp_bad_flag", "SELECT regexp_matches('ab', 'a', 'z')"),
    # -- dates and times
    Case("infinity_date", "SELECT 'infinity'::date::text AS d, '-infinity'::date::text AS e"),
    Case("infinity_timestamp", "SELECT 'infinity'::timestamp AS t"),
    Case("date_value", "SELECT DATE '2024-02-29' AS d"),
    Case("timestamp_value", "SELECT TIMESTAMP '2024-02-29 01:02:03.5' AS t"),
    Case("interval_value", "SELECT INTERVAL '1 day 2 hours' AS i"),
    # intervals as interval_out prints them (a unit is plural unless exactly 1; `+` after a
    # negative field), sent and cast to text
    Case("interval_shapes", "SELECT n, x, x::text AS t FROM (VALUES "
         "(1, interval '-1 day -3 hours'), (2, interval '1 year 2 mons -1 days 00:00:01.5'), "
         "(3, interval '-1 year -1 mon'), (4, interval '0'), (5, interval '1 day'), "
         "(6, interval '-1 mon 1 day -00:00:00.000001'), (7, interval '-0.5 seconds'), "
         "(8, interval '100 hours'), (9, interval '1 mon -1 day 2 hours'), "
         "(10, interval '-2 days 1 hour'), (11, interval '1 year'), (12, interval '-1 year'), "
         "(13, interval '1 mon'), (14, interval '-1 mon'), (15, interval '13 mons'), "
         "(16, interval '-13 mons'), (17, interval '-1 days'), (18, interval '2 days -1 mon'), "
         "(19, interval '1 day 1 microsecond'), (20, interval '-1 year 1 day'), (21, NULL)) "
         "v(n, x) ORDER BY n"),
    Case("interval_column_text", "SELECT id, d::text, cast(d AS varchar) AS v, (t1 - t0)::text AS "
         "diff, t1 - t0 AS raw, d::varchar(4) AS short FROM w_iv ORDER BY id",
         setup=_table("w_iv", "id integer, d interval, t0 timestamp, t1 timestamp",
                      "(1, '-1 day -03:00:00', '2020-01-01', '2020-01-02 01:00')",
                      "(2, '1 year 2 mons', '2020-01-03', '2020-01-01')", "(3, NULL, NULL, NULL)")),
    # arrays turned into text as array_out prints them (braces, t/f, quoted when they must be)
    Case("array_text", "SELECT ARRAY[1, 2]::text AS a, CAST(ARRAY['a', 'b c'] AS varchar) AS b, "
         "ARRAY[ARRAY[1, 2], ARRAY[3, 4]]::text AS c, ARRAY[NULL, 'a\"b', '', 'null', "
         "'x\\y']::text AS d, ARRAY[]::int[]::text AS e, ARRAY[true, false]::text AS f, "
         "format('%s', ARRAY[1, 2]) AS g, concat('a', ARRAY[1, 2]) AS h"),
    Case("array_column_text", "SELECT id, tags::text, ds::text, 'x' || tags::text AS s FROM w_at "
         "WHERE tags::text LIKE '{a%' ORDER BY id",
         setup=_table("w_at", "id integer, tags text[], ds date[]",
                      "(1, '{a,\"b c\"}', '{2020-01-01,NULL}')", "(2, '{z}', '{}')",
                      "(3, '{a}', NULL)")),
    Case("interval_division", "SELECT interval '1 month 1 day' / 3 AS a, interval '1 hour' / 3 "
         "AS b, (interval '1 hour' / 2)::text AS c, make_interval(days => 3) / 2 AS d"),
    Case("pad_defaults", "SELECT lpad('ab', 5, '*') AS a, rpad('ab', 5) AS b, lpad('abc', 2) AS c, "
         "lpad('x', 3) AS d, array_upper(ARRAY[1, 2], 1) AS e, array_lower(ARRAY[1, 2], 1) AS f"),
    # floats turned into text as float8out prints them (2, not DuckDB's 2.0)
    Case("float_text", "SELECT 2.0::float8::text AS a, 1e15::float8::text AS b, 0.1::real::text "
         "AS c, concat(2.0::float8, 'x') AS d, 1.5::float8 || 'y' AS e, format('%s', 3::float8) "
         "AS f, sqrt(16)::text AS g, ARRAY[1.5::float8, 2]::text AS h, 'nan'::float8::text AS i"),
    Case("float_column_text", "SELECT id, d::text, r::text, concat(d, '|', r) AS c FROM w_fl "
         "ORDER BY id", setup=_table("w_fl", "id integer, d double precision, r real",
                                     "(1, 2.0, 1.5)", "(2, 1e16, 1e7)", "(3, NULL, NULL)")),
    Case("interval_text_aggregate", "SELECT string_agg(x::text, ';' ORDER BY n) AS s FROM "
         "(VALUES (1, interval '-1 day'), (2, interval '1 mon -2 days 3 hours')) v(n, x)"),
    Case("interval_concatenation", "SELECT interval '-1 day' || 'x' AS a, 'y' || x::interval AS b, "
         "concat(x, '|', 1, interval '-1 mon') AS c, concat_ws(',', x, x) AS d, "
         "format('%s %s', x, 1) AS e, x::text::varchar AS f FROM (VALUES ('-1 day')) t(x)"),
    # a word after an interval that is not one of its fields is an alias
    Case("interval_aliases", "SELECT interval '3' d, '1 day'::interval c, interval '2' day AS e, "
         "interval '1 mon' AS f"),
    # -- arrays
    Case("array_literal", "SELECT '{1,2}'::int[] AS a"),
    Case("array_text_literal", "SELECT '{\"a b\",NULL,c}'::text[] AS a"),
    Case("array_constructor", "SELECT ARRAY[1,2,3] AS a"),
    Case("array_parameter", "SELECT %s::int[] AS a", ([1, 2, 3],)),
    # || of an array and an element or another array (DuckDB's concatenates lists only)
    Case("array_concatenation", "SELECT ARRAY[1,2] || 3, 3 || ARRAY[1,2] AS p, "
         "ARRAY[1] || ARRAY[2,3] AS c, ARRAY[1] || 2 || 3 AS e, ARRAY['a'] || 'b'::text AS t, "
         "ARRAY[1,2]::int8[] || 3 AS b, ARRAY[1::int2] || 3 AS s"),
    Case("array_concatenation_nulls", "SELECT ARRAY[1] || NULL AS a, NULL || ARRAY[1] AS b, "
         "ARRAY[1] || NULL::int AS c, NULL::int[] || NULL::int[] AS d, "
         "'{}'::int[] || '{}'::int[] AS e, %s::int[] || ARRAY[2] AS f", (None,)),
    Case("array_concatenation_where", "SELECT x FROM (VALUES (1), (2)) t(x) "
         "WHERE ARRAY[x] || 5 = ARRAY[1, 5]"),
    Case("array_functions", "SELECT array_append(ARRAY[1,2], 3), array_prepend(0, ARRAY[1]), "
         "array_cat(ARRAY[1], ARRAY[2]), array_append(NULL::int[], NULL::int) AS n, "
         "array_cat(ARRAY[1], NULL) AS m, array_cat(NULL::int[], NULL::int[]) AS o"),
    Case("array_remove", "SELECT array_remove(ARRAY[1, NULL, 2], NULL), "
         "array_remove(ARRAY[1, 2, 1], 1) AS b, length('x') AS c"),
    Case("pg_typeof_arrays", "SELECT pg_typeof(ARRAY[1]) AS a, pg_typeof(ARRAY[1,2]::int8[] || 3) "
         "AS b, length('x') AS c"),
    # -- uuid and json
    Case("uuid_value", "SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u"),
    Case("uuid_parameter", "SELECT %s::uuid AS u",
         (uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),)),
    Case("json_value", "SELECT '{\"a\": 1}'::json AS j"),
    Case("jsonb_value", "SELECT '{\"b\": 1, \"a\": 2}'::jsonb AS j"),
    Case("json_arrow", "SELECT '{\"a\": {\"b\": 2}}'::json -> 'a' AS o, "
                       "'{\"a\": 7}'::json ->> 'a' AS t"),
    Case("jsonb_normalized", "SELECT '{\"b\": [1.50, 1e2, -0], \"a\": \"\\u00e9\\/\", "
                             "\"b\": {\"zz\": null, \"y\": true}}'::jsonb AS j, "
                             "'[1e2, {\"b\": 1, \"a\": 2}]'::json AS k"),
    Case("jsonb_column", "SELECT j, k FROM w_docs ORDER BY id", setup=_DOCS),
    Case("jsonb_concatenation", "SELECT j || '{\"z\": 1}' AS a, j || j AS b, "
         "'[1]'::jsonb || '2'::jsonb AS c FROM w_docs ORDER BY id", setup=_DOCS),
    Case("jsonb_deletion", "SELECT j - 'a' AS a, j - 0 AS b, j - ARRAY['n', 'z'] AS c "
         "FROM w_docs WHERE id = 1", setup=_DOCS),
    Case("jsonb_deletion_from_a_scalar", "SELECT '3'::jsonb - 'a'"),
    Case("jsonb_set_and_friends", "SELECT jsonb_set(j, '{m,b}', '[1]') AS s, "
         "jsonb_set(j, '{x}', '1', false) AS t, jsonb_strip_nulls(j) AS u, "
         "jsonb_pretty(j) AS v, to_jsonb(id) AS w FROM w_docs WHERE id = 1", setup=_DOCS),
    Case("jsonb_update_concatenating", "UPDATE w_docs SET j = j || '{\"z\": [true]}' "
         "WHERE id = 1 RETURNING j", setup=_DOCS),
    Case("jsonb_functions", "SELECT jsonb_build_object('b', 1, 'a', 'x') AS o, jsonb_agg(x) AS a, "
         "jsonb_build_array(x, 'y') AS b FROM (VALUES (1), (2)) t(x) GROUP BY x ORDER BY x"),
    Case("jsonb_operators", "SELECT j -> 'a' AS o, j -> 'n' AS n, j ->> 'a' AS t, "
         "j @> '{\"n\": [2]}' AS c, '{\"a\": \"x\"}' <@ j AS d, j ? 'n' AS e, "
         "j ?| array['q', 'a'] AS f, j ?& array['a', 'q'] AS g, jsonb_typeof(j -> 'n') AS h "
         "FROM w_docs ORDER BY id", setup=_DOCS),
    Case("jsonb_where", "SELECT id FROM w_docs WHERE j @> '{\"a\": \"x\"}' OR j ? 'z' "
         "ORDER BY id", setup=_DOCS),
    Case("jsonb_path_operators", "SELECT id, j #> '{m,b}' AS a, j #>> '{n,-1}' AS b, "
         "k #> '{n,0}' AS c, k #>> '{a}' AS d, j -> 1 AS e, j ->> -2 AS f, j #> '{}' AS g, "
         "j #>> array['m', 'a'] AS h, j #> '{n,x}' AS i FROM w_docs ORDER BY id", setup=_DOCS),
    Case("jsonb_path_literals", "SELECT '{\"a\": {\"b\": [1, 2]}}'::jsonb #> '{a,b}', "
         "'{\"a\": {\"b\": [1, 2]}}'::jsonb #>> '{a,b,-2}' AS y, "
         "'[1, 2, 3]'::jsonb -> -1 AS z, '[1, 2]'::json #>> '{ 1}' AS w"),
    Case("jsonb_path_parameter", "SELECT '{\"a\": [1, {\"b\": 2}]}'::jsonb #> %s::text[] AS p",
         (["a", "1", "b"],)),
    Case("jsonb_extract_path", "SELECT jsonb_extract_path(j, 'm', 'b'), "
         "jsonb_extract_path_text(j, 'n', '1') AS t, json_extract_path(k, 'n', '1') AS k, "
         "json_extract_path_text(k, 'a') AS u, jsonb_extract_path(j, 'n', NULL) AS n "
         "FROM w_docs ORDER BY id", setup=_DOCS),
    Case("jsonb_array_length", "SELECT jsonb_array_length(j -> 'n'), json_array_length('[1, 2]') "
         "AS b FROM w_docs WHERE id = 1", setup=_DOCS),
    Case("jsonb_array_length_of_object", "SELECT jsonb_array_length('{\"a\": 1}')"),
    Case("json_array_length_of_scalar", "SELECT json_array_length('1')"),
    Case("jsonb_object_keys", "SELECT jsonb_object_keys(j) AS k FROM w_docs WHERE id = 1 "
         "ORDER BY k", setup=_DOCS),
    Case("json_object_keys_in_order", "SELECT * FROM json_object_keys('{\"b\": 1, \"a\": 2}')"),
    Case("jsonb_object_keys_of_scalar", "SELECT jsonb_object_keys('1')"),
    Case("jsonb_each", "SELECT id, e.key, e.value FROM w_docs, jsonb_each(w_docs.j) AS e "
         "WHERE jsonb_typeof(j) = 'object' ORDER BY id, key", setup=_DOCS),
    Case("jsonb_each_star", "SELECT * FROM jsonb_each('{\"b\": 1, \"a\": \"x\"}')"),
    Case("jsonb_each_text_renamed", "SELECT k, v FROM jsonb_each_text("
         "'{\"b\": 1, \"a\": \"x\", \"c\": null}') AS e(k, v) ORDER BY k"),
    Case("json_each_in_order", "SELECT * FROM json_each('{\"b\": 1, \"a\": [2]}')"),
    Case("jsonb_each_of_array", "SELECT * FROM jsonb_each('[1]')"),
    Case("json_each_of_scalar", "SELECT * FROM json_each_text('1')"),
    Case("jsonb_array_elements", "SELECT id, v FROM w_docs, jsonb_array_elements(j) AS v "
         "WHERE jsonb_typeof(j) = 'array' ORDER BY id", setup=_DOCS),
    Case("jsonb_array_elements_select_list", "SELECT jsonb_array_elements('[1, [2]]'), "
         "'x' AS t"),
    Case("jsonb_array_elements_text", "SELECT * FROM jsonb_array_elements_text("
         "'[1, \"a\", {\"b\": 2}, null]')"),
    Case("json_array_elements", "SELECT value FROM json_array_elements('[1, {\"b\": 2}]')"),
    Case("jsonb_array_elements_of_object", "SELECT * FROM jsonb_array_elements('{\"a\": 1}')"),
    Case("json_array_elements_of_object", "SELECT * FROM json_array_elements('{\"a\": 1}')"),
    Case("jsonb_parameter", "SELECT %s::jsonb AS j", ('{"b": 1, "a": [1.50]}',)),
    Case("jsonb_insert_parameter", "INSERT INTO w_docs2 VALUES (%s, %s)",
         (1, '{"b": 1, "a": 2}'), setup=_table("w_docs2", "id integer, j jsonb")),
    # -- declared types through the statements that make or change columns
    Case("returning_declared_types", "INSERT INTO w_decl (id, j, v) VALUES "
         "(1, '{\"b\": 1, \"a\": [1.50]}', 'abc') RETURNING j, pg_typeof(j), v, pg_typeof(v), id",
         setup=_table("w_decl", "id integer, j jsonb, v varchar(3)")),
    Case("add_column_varchar_enforced", "INSERT INTO w_added (w) VALUES ('abcd')",
         setup=(*_table("w_added", "id integer", "(1)"),
                "ALTER TABLE w_added ADD COLUMN w varchar(3) DEFAULT 'ab'")),
    Case("add_column_jsonb", "SELECT * FROM w_added2",
         setup=(*_table("w_added2", "id integer", "(1)"),
                "ALTER TABLE w_added2 ADD COLUMN k jsonb DEFAULT '{\"b\": 1, \"a\": 2}'")),
    Case("create_table_as_keeps_varchar", "INSERT INTO w_ctas (v) VALUES ('abcd')",
         setup=(*_table("w_ctas_src", "v varchar(3)"), "DROP TABLE IF EXISTS w_ctas",
                "CREATE TABLE w_ctas AS SELECT * FROM w_ctas_src")),
    Case("create_table_as_keeps_jsonb", "SELECT j, v FROM w_ctas2",
         setup=(*_table("w_ctas2_src", "j jsonb, v varchar(3)", "('{\"b\": 1, \"a\": 2}', 'x')"),
                "DROP TABLE IF EXISTS w_ctas2", "SELECT * INTO w_ctas2 FROM w_ctas2_src")),
    # -- scalar types and their OIDs
    Case("integer_types", "SELECT 1::int2 AS a, 2::int4 AS b, 3::int8 AS c"),
    Case("float_types", "SELECT 1.5::float4 AS a, 2.5::float8 AS b"),
    Case("boolean", "SELECT true AS t, false AS f, NULL::boolean AS n"),
    Case("boolean_words", "SELECT 'on'::boolean AS a, 'off'::boolean AS b, ' Yes '::bool AS c, "
         "'n'::boolean AS d, 'tr'::boolean AS e, '0'::boolean AS f"),
    Case("boolean_bad_word", "SELECT 'o'::boolean"),
    Case("text_types", "SELECT 'x'::text AS t"),
    # -- parameters without a declared type
    Case("untyped_plus_one", "SELECT %s + 1 AS n", (41,)),
    Case("untyped_comparison", "SELECT name FROM w_people WHERE id = %s", (2,), setup=_PEOPLE),
    Case("untyped_insert", "INSERT INTO w_ins VALUES (%s, %s)", (1, "one"),
         setup=_table("w_ins", "id integer, name text")),
    Case("untyped_concat", "SELECT %s || 'x' AS s", ("a",)),
    Case("limit_parameter", "SELECT id FROM w_people ORDER BY id LIMIT %s", (2,),
         setup=_PEOPLE),
    Case("date_parameter", "SELECT %s::date AS d", (dt.date(2020, 1, 2),)),
    Case("numeric_parameter", "SELECT %s::numeric AS n", (Decimal("1.25"),)),
    # -- ordering
    Case("nulls_sort_last_ascending", "SELECT x FROM (VALUES (1), (NULL), (2)) t(x) ORDER BY x"),
    Case("nulls_sort_first_descending",
         "SELECT x FROM (VALUES (1), (NULL), (2)) t(x) ORDER BY x DESC"),
    # -- errors and their SQLSTATEs
    Case("undefined_table", "SELECT * FROM w_no_such_table"),
    Case("undefined_column", "SELECT no_such_column FROM w_people", setup=_PEOPLE),
    Case("syntax_error", "SELEC 1"),
    Case("invalid_integer", "SELECT 'abc'::int4"),
    Case("invalid_date", "SELECT 'abc'::date"),
    Case("unique_violation", "INSERT INTO w_people VALUES (1, 'again', NULL)", setup=_PEOPLE),
    Case("not_null_violation", "INSERT INTO w_people VALUES (9, NULL, NULL)", setup=_PEOPLE),
    Case("undefined_function", "SELECT w_no_such_function(1)"),
    Case("ambiguous_column", "SELECT id FROM w_people a, w_people b", setup=_PEOPLE),
    Case("grouping_error", "SELECT x, y FROM (VALUES (1, 2)) t(x, y) GROUP BY x"),
    # -- command tags
    Case("tag_insert", "INSERT INTO w_tags VALUES (1), (2)", setup=_table("w_tags", "i integer")),
    Case("tag_update", "UPDATE w_people SET name = upper(name) WHERE id < 3", setup=_PEOPLE),
    Case("tag_delete", "DELETE FROM w_people WHERE id = 3", setup=_PEOPLE),
    Case("tag_select", "SELECT id FROM w_people", setup=_PEOPLE),
    Case("tag_create_table_as", "CREATE TABLE w_copy AS SELECT * FROM w_people",
         setup=(*_PEOPLE, "DROP TABLE IF EXISTS w_copy")),
    Case("tag_insert_returning", "INSERT INTO w_ret VALUES (5) RETURNING i",
         setup=_table("w_ret", "i integer")),
    Case("show_setting", "SHOW standard_conforming_strings"),
    # -- date/time parts and arithmetic
    Case("extract_fields", "SELECT extract(year FROM date '2024-03-05') AS y, "
         "extract(month FROM timestamp '2024-03-05 10:11:12.5') AS m, "
         "extract(second FROM timestamp '2024-03-05 10:11:12.5') AS s, "
         "extract(epoch FROM timestamp '2024-03-05 10:11:12.5') AS e, "
         "extract(dow FROM date '2024-03-05') AS w, extract(quarter FROM date '2024-03-05') AS q"),
    Case("date_part_double", "SELECT date_part('year', date '2024-03-05') AS y, "
         "date_part('second', timestamp '2024-03-05 10:11:12.5') AS s"),
    Case("date_difference", "SELECT date '2024-03-05' - date '2024-01-01' AS d"),
    Case("sign_types", "SELECT sign(-5) AS a, sign(2.5) AS b, sign(-1.5::float8) AS c"),
    Case("small_integer_arithmetic", "SELECT 2::int2 * 3::int4 AS a, 2::int2 + 3::int2 AS b, "
         "2::int2 * 3::int8 AS c, 7::int2 / 2::int2 AS d"),
    Case("pg_typeof", "SELECT pg_typeof(1) AS t, pg_typeof('a'::text) AS u"),
    Case("to_char_numbers", "SELECT to_char(1234.5, '9999.99') AS a, "
         "to_char(1234567.891, 'FM999,999,990.00') AS b, to_char(42, '000') AS c, "
         "to_char(-3.5, 'S999.9') AS d, to_char(7, 'FM9999') AS e"),
    # functions and operators DuckDB lacks
    Case("integer_xor", "SELECT 5 # 3, 5::int8 # 3 AS b, 5::int2 # 3::int2 AS c, -1 # 1 AS d, "
         "NULL::int # 1 AS e, '#' AS f"),
    Case("integer_xor_column", "SELECT id # 1 FROM w_people ORDER BY id", setup=_PEOPLE),
    Case("numeric_xor", "SELECT 1.5 # 1"),
    Case("div", "SELECT div(7, 2), div(-7.5, 2) AS b, div(0.3, 0.1) AS c, div(9, -4) AS d, "
         "div(NULL, 1) AS e, div(score, 2) AS f FROM w_people ORDER BY id", setup=_PEOPLE),
    Case("div_by_zero", "SELECT div(1.5, 0)"),
    Case("justify_hours", "SELECT justify_hours(interval '27 hours'), "
         "justify_hours(interval '-27 hours') AS b, justify_hours(interval '1 mon 49 hours') AS c, "
         "justify_hours(interval '-3 days 50 hours') AS d, "
         "justify_hours(interval '-1.5 seconds -30 hours') AS e, justify_hours(NULL) AS f"),
    Case("justify_days", "SELECT justify_days(interval '35 days'), "
         "justify_days(interval '-35 days') AS b, justify_days(interval '1 mon -1 day') AS c, "
         "justify_days(interval '-1 mon 1 day') AS d, "
         "justify_days(interval '65 days 27 hours') AS e"),
    Case("justify_interval", "SELECT justify_interval(interval '1 mon -1 hour'), "
         "justify_interval(interval '-1 mon 1 hour') AS b, "
         "justify_interval(interval '29 days 25 hours') AS c, "
         "justify_interval(interval '1 mon -30 days -1 hour') AS d, "
         "justify_interval(interval '1 year 2 mons -3 days 4:05:06.789') AS e"),
    # (drivers read a month as 30 days: the parts tell months from days)
    Case("justified_parts", "SELECT extract(month FROM justify_days(interval '65 days')) AS a, "
         "extract(day FROM justify_days(interval '65 days')) AS b, "
         "extract(month FROM justify_interval(interval '-1 mon 40 days -1 hour')) AS c, "
         "extract(day FROM justify_interval(interval '-1 mon 40 days -1 hour')) AS d"),
    Case("to_date", "SELECT to_date('2020-03-05', 'YYYY-MM-DD'), to_date('20200305', 'YYYYMMDD') "
         "AS b, to_date('5.3.2020', 'DD.MM.YYYY') AS c, to_date('2020 Mar 5', 'YYYY Mon DD') AS d, "
         "to_date('05 march 2020', 'DD month YYYY') AS e, to_date('2020-060', 'YYYY-DDD') AS f, "
         "to_date('12/31/99', 'MM/DD/YY') AS g, to_date('2020-1-1', 'FMYYYY-FMMM-FMDD') AS h, "
         "to_date(' 2020 03 05junk', 'YYYY-MM-DD') AS i, to_date('2020-07', 'YYYY-MM-DD') AS j, "
         "to_date('Thu 2020-03-05 11:22 PM', 'Dy YYYY-MM-DD HH12:MI AM') AS k, "
         "to_date('2020-03-05T10', 'YYYY-MM-DD\"T\"HH24') AS l, to_date('2020 03', 'YYYYMM') AS m, "
         "to_date(NULL, 'YYYY') AS n"),
    Case("to_date_column", "SELECT to_date(s, 'DD/MM/YYYY') FROM (VALUES ('01/02/2003'), "
         "('31/12/1999'), (NULL)) t(s)"),
    Case("to_date_not_a_number", "SELECT to_date('2020-03-xx', 'YYYY-MM-DD')"),
    Case("to_timestamp", "SELECT to_timestamp('2024-05-17 13:04', 'YYYY-MM-DD HH24:MI') AS a, "
         "to_timestamp('17/05/2024 01:04:05.25 PM', 'DD/MM/YYYY HH12:MI:SS.MS AM') AS b, "
         "to_timestamp('12:30 AM 2024 Jan 3', 'HH12:MI AM YYYY Mon DD') AS c, "
         "to_timestamp('2024-05-17 10:00:00.123456', 'YYYY-MM-DD HH24:MI:SS.US') AS d, "
         "to_timestamp(0) AS e"),
    Case("to_timestamp_bad_hour", "SELECT to_timestamp('13:00 PM', 'HH12:MI AM')"),
    Case("to_date_no_such_month", "SELECT to_date('2020 Foo 05', 'YYYY Mon DD')"),
    Case("to_date_month_out_of_range", "SELECT to_date('2020-13-05', 'YYYY-MM-DD')"),
    Case("to_date_day_out_of_range", "SELECT to_date('2020-02-30', 'YYYY-MM-DD')"),
    Case("to_date_hour_out_of_range", "SELECT to_date('2020-03-05 25', 'YYYY-MM-DD HH24')"),
    Case("to_date_too_short", "SELECT to_date('202', 'YYYYMM')"),
    # power's domain errors (DuckDB's power of a negative number is NaN)
    Case("power_negative_base", "SELECT power(-1, 0.5)"),
    Case("power_operator_negative_base", "SELECT (-1) ^ 0.5::float8"),
    Case("power_negative_column", "SELECT x ^ y FROM (VALUES (-8::float8, 1/3::float8)) t(x, y)"),
    Case("power_zero_negative", "SELECT 0 ^ -1"),
    Case("power_zero_negative_numeric", "SELECT power(0.0, -1)"),
    Case("power_values", "SELECT power(-2, 2), (-2) ^ 3 AS b, 2::float8 ^ 0.5::float8 AS c, "
         "power(-8::float8, '2') AS d, x ^ 2 AS e FROM (VALUES (-1.5::float8)) t(x)"),
    # -- the SQL value functions of PostgreSQL's type name
    Case("name_typed_functions", "SELECT current_user, session_user, current_role, user, "
         "current_catalog, current_schema, current_database(), upper(current_user) AS u"),
    Case("name_typed_functions_pg_typeof", "SELECT pg_typeof(current_user) AS a, "
         "pg_typeof(session_user) AS b, pg_typeof(current_role) AS c, pg_typeof(user) AS d, "
         "pg_typeof(current_schema) AS e, pg_typeof(current_catalog) AS f, "
         "pg_typeof(current_database()) AS g, pg_typeof(current_schema()) AS h, "
         "pg_typeof(current_user::text) AS i, pg_typeof(upper(current_user)) AS j, "
         "pg_typeof(current_user || 'x') AS k"),
    Case("name_typed_function_in_subquery", "SELECT pg_typeof(u), u FROM "
         "(SELECT current_user AS u) s WHERE u = current_user"),
    Case("average_of_integers", "SELECT avg(x) AS a FROM (VALUES (1), (2), (4)) t(x)"),
)

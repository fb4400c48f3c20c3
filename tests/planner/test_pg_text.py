"""`pg_text`: PostgreSQL's text of arrays (array_out) and floats (float8out), and the macro DuckDB
runs for a cast to text of an interval, an array, a float or anything else."""

from __future__ import annotations

import duckdb
import pytest

from heron.planner import pg_catalog, pg_semantics, pg_text


@pytest.mark.parametrize(("value_json", "text"), [
    ("[1,2]", "{1,2}"), ("[]", "{}"), ("[[1,2],[3]]", "{{1,2},{3}}"),
    ('["a","b c",null,"","NULL","q\\"","x\\\\y","{,}"]',
     '{a,"b c",NULL,"","NULL","q\\"","x\\\\y","{,}"}'),
    ("[true,false,null]", "{t,f,NULL}"), ("[1.50,2.0,1e300]", "{1.50,2.0,1e300}"),
    ("[NaN,Infinity,-Infinity]", "{NaN,Infinity,-Infinity}"),
    ('[{"a":1,"b":"x y","c":null}]', '{"(1,\\"x y\\",)"}'),
    ('["2020-01-01 10:00:00"]', '{"2020-01-01 10:00:00"}'),
])
def test_array_text_is_array_out_s(value_json, text):
    assert pg_text.array_text(value_json) == text


@pytest.mark.parametrize(("value_json", "type_name", "text"), [
    ("[2.0,1e300,NaN,null,-0.0,1e15]", "DOUBLE[]", "{2,1e+300,NaN,NULL,-0,1e+15}"),
    ("[[1.5,2.0],[1e7]]", "FLOAT[][]", "{{1.5,2},{1e+07}}"),
    ("[1.50,2]", "DECIMAL(3,2)[]", "{1.50,2}"),
])
def test_an_array_of_floats_prints_them_as_float8out_does(value_json, type_name, text):
    assert pg_text.array_text(value_json, type_name) == text


def test_the_macro_prints_arrays_and_intervals_as_postgresql_and_the_rest_as_duckdb():
    con = duckdb.connect()
    pg_catalog.Catalog(con, "alice", "16.4")  # registers the functions and shared macros
    assert con.execute(
        f"SELECT {pg_text.TEXT_MACRO}([1, NULL]), {pg_text.TEXT_MACRO}([[true], []]), "
        f"{pg_text.TEXT_MACRO}(['a b']::VARCHAR[1]), {pg_text.TEXT_MACRO}(INTERVAL 25 HOUR), "
        f"{pg_text.TEXT_MACRO}(1.5), {pg_text.TEXT_MACRO}(NULL::INT[]), "
        f"{pg_text.TEXT_MACRO}('x'), {pg_text.TEXT_MACRO}(2.0::DOUBLE), "
        f"{pg_text.TEXT_MACRO}(1e7::FLOAT), {pg_text.TEXT_MACRO}([0.5::DOUBLE, 3])").fetchall() == [
        ("{1,NULL}", "{{t},{}}", '{"a b"}', "25:00:00", "1.5", None, "x", "2", "1e+07",
         "{0.5,3}")]


def test_concat_and_format_print_booleans_as_their_output_function_does():
    con = duckdb.connect()
    pg_catalog.Catalog(con, "alice", "16.4")
    # concat, concat_ws and format() print t and f (boolout); a cast to text prints true, false
    assert con.execute(pg_semantics.rewrite(
        "SELECT concat('a', true, false, NULL::boolean), concat_ws(',', 1 > 2, 'x'), "
        "format('%s|%L', true, false), true::text, concat(b, n) "
        "FROM (SELECT true AS b, 2.0::float8 AS n)")).fetchall() == [
        ("atf", "f,x", "t|'f'", "true", "t2")]

"""PostgreSQL's catalog functions as DuckDB macros.

Contract: `SESSION_MACROS` are the macros that read no catalog view (version, current_setting,
current_user, quote_ident, pg_size_pretty, ..., and PostgreSQL's div, justify_hours, justify_days
and justify_interval, which DuckDB lacks): they depend on no session — what differs between
sessions (the role, the server's version, the settings) they read from the session variable
`SETTINGS_VARIABLE` (`pg_catalog.publish_settings`) — so every session shares one definition of
them (`heron.planner.shared_macros`). `CATALOG_MACROS` are those answered from the catalog views
of `heron.planner.pg_catalog_relations` (pg_get_userbyid, pg_table_is_visible, format_type,
pg_get_indexdef, pg_get_constraintdef, pg_get_viewdef, col_description, the privilege functions,
the `::regclass` family of look-ups, ...), created on each session's connection after its views
(DuckDB binds a view or macro when it is created). Each maps a macro name to its overloads,
`(parameters, body)`.

Each behaves as PostgreSQL 15's function of that name for the objects Heron has, with these
limits: a view's size is 0, a table's or index's unknown (NULL: DuckDB keeps none per relation),
the privilege functions answer from Heron's model
(every role may use every relation, schema and database; pg_has_role follows role membership),
pg_get_expr gives DuckDB's text of a default, and pg_get_viewdef PostgreSQL's layout of the view's
query (`heron.planner.pg_viewdef`). Look-ups read each catalog view once per statement (`lookup`
builds a map): a macro's subquery never mentions its arguments (DuckDB substitutes arguments
textually, so a correlated subquery could capture a caller's column of the same name, and a
subquery argument inside a lambda cannot be bound).
"""

from __future__ import annotations

from collections.abc import Mapping

from heron.planner import foreign_keys
from heron.planner.pg_catalog_relations import TEMP_NAMESPACE, VIEWDEF_FUNCTION, type_name_sql
from heron.planner.pg_catalog_types import TYPE_NAMES, literal, values

# A JSON object of the session's settings (name -> text), as text: DuckDB builds a MAP of sixty
# settings in ~2 ms, which every new session and every SET paid; this in ~0.3 ms.
SETTINGS_VARIABLE = "heron_settings"
# Where SESSION_MACROS live (`heron.planner.shared_macros`): the `main` schema of a read-only
# database at the end of every session's search path, which no user schema list shows.
SHARED_DATABASE = "heron_shared"

Macros = dict[str, tuple[tuple[str, str], ...]]

# PostgreSQL's keywords that quote_ident quotes (all but the unreserved ones).
_KEYWORD_LIST = (
    "all analyse analyze and any array as asc asymmetric authorization between bigint binary "
    "bit boolean both case cast char character check coalesce collate collation column "
    "concurrently constraint create cross current_catalog current_date current_role "
    "current_schema current_time current_timestamp current_user dec decimal default deferrable "
    "desc distinct do else end except exists extract false fetch float for foreign freeze from "
    "full grant greatest group grouping having ilike in initially inner inout int integer "
    "intersect interval into is isnull join lateral leading least left like limit localtime "
    "localtimestamp national natural nchar none normalize not notnull null nullif numeric "
    "offset on only or order out outer overlaps overlay placing position precision primary "
    "real references returning right row select session_user setof similar smallint some "
    "substring symmetric table tablesample then time timestamp to trailing treat trim true "
    "union unique user using values varchar variadic verbose when where window with "
    "xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi "
    "xmlroot xmlserialize xmltable")
KEYWORDS = frozenset(_KEYWORD_LIST.split())


def create_macro(name: str, overloads: tuple[tuple[str, str], ...], *, temporary: bool = False
                 ) -> str:
    """The statement creating (or replacing) macro `name` with its overloads."""
    body = ", ".join(f"({params}) AS {sql}" for params, sql in overloads)
    return f"CREATE OR REPLACE {'TEMP ' if temporary else ''}MACRO {name} {body}"


def _case(arg: str, rows: Mapping[object, object], default: str = "NULL") -> str:
    """A CASE over a Python mapping: no subquery, so no column of the caller can be captured."""
    whens = " ".join(f"WHEN {literal(k)} THEN {literal(v)}" for k, v in rows.items())
    return f"CASE {arg} {whens} ELSE {default} END"


def lookup_map(source: str, key: str, value: str, aggregate: str = "first") -> str:
    """A map of `source`, built once per statement: each `key` (as text, so an OID matches
    whatever integer type it comes as) to its row's `value` (or the `aggregate` of the values
    of all its rows)."""
    return (f"(SELECT map_from_entries(list({{'key': heron_k, 'value': heron_v}})) "
            f"FROM (SELECT ({key})::VARCHAR AS heron_k, {aggregate}({value}) AS heron_v "
            f"FROM {source} WHERE {key} IS NOT NULL GROUP BY ALL))")


def lookup(source: str, key: str, value: str, arg: str, aggregate: str = "first") -> str:
    """The value `lookup_map` holds for `arg`. `arg` appears in no lambda: DuckDB cannot bind
    a subquery inside a lambda, and an argument that is itself a look-up is one."""
    return f"{lookup_map(source, key, value, aggregate)}[({arg})::VARCHAR]"


def let(bindings: Mapping[str, str], body: str) -> str:
    """`body` with each name of `bindings` standing for its SQL, each evaluated once: a macro's
    arguments are substituted as text, so an argument used many times (a look-up, a subquery)
    would otherwise be copied, and planned, that many times. In `body` a binding is `v.name`;
    `body` may not hold a subquery (it is a lambda's), the bindings may."""
    struct = ", ".join(f"'{name}': {sql}" for name, sql in bindings.items())
    return f"list_transform([{{{struct}}}], lambda v: {body})[1]"


def _quote_ident(arg: str) -> str:
    keywords = ", ".join(literal(k) for k in sorted(KEYWORDS))
    return (f"CASE WHEN regexp_matches({arg}, '^[a-z_][a-z0-9_$]*$') AND {arg} NOT IN "
            f"({keywords}) THEN {arg} ELSE '\"' || replace({arg}, '\"', '\"\"') || '\"' END")


def _size_pretty(arg: str) -> str:
    """pg_size_pretty: bytes under 10 kB, then kB, MB, GB, TB rounding half up."""
    units = " ".join(
        f"WHEN abs({arg}) < 10240::HUGEINT << {10 * i} "
        f"THEN (({arg} + (CASE WHEN {arg} < 0 THEN -1 ELSE 1 END) * (1::HUGEINT << {10 * i - 1}))"
        f" // (1::HUGEINT << {10 * i}))::VARCHAR || ' {unit}'"
        for i, unit in ((1, "kB"), (2, "MB"), (3, "GB"), (4, "TB")))
    return (f"CASE WHEN {arg} IS NULL THEN NULL WHEN abs({arg}) < 10240 THEN {arg}::VARCHAR "
            f"|| ' bytes' {units} ELSE (({arg} + (1::HUGEINT << 49)) // (1::HUGEINT << 50))"
            f"::VARCHAR || ' PB' END")


# DuckDB's own current_setting (the macro of the name shadows it); the shared macros' schema is
# none of the session's.
_PATH_SCHEMAS = f"""coalesce(nullif(list_transform(list_filter(string_split(
    system.main.current_setting('search_path'), ','), lambda heron_s: trim(heron_s) <> ''
    AND split_part(trim(heron_s), '.', 1) <> '{SHARED_DATABASE}'),
    lambda heron_s: trim(split_part(heron_s, '.', -1))), []), [current_schema()])"""


def _session_value(name: str) -> str:
    """SQL: the value the session published in `SETTINGS_VARIABLE` under the name the SQL
    expression `name` gives (lower case); NULL where none."""
    return (f"json_extract_string(getvariable('{SETTINGS_VARIABLE}'), "
            f"'$.\"' || {name} || '\"')")


# An interval's microseconds in a day, and days in a month, as PostgreSQL's justify_* count them.
_DAY = 86_400_000_000
_MONTH = 30


def _interval_parts(body: str) -> str:
    """`body` with `v.m`, `v.d` and `v.t` bound to the months, days and microseconds of the
    interval `interval_arg` (DuckDB keeps the three apart, as PostgreSQL does)."""
    parts = let({"m": "datepart('year', v.i) * 12 + datepart('month', v.i)",
                 "d": "datepart('day', v.i)",
                 "t": "datepart('hour', v.i) * 3600000000 + datepart('minute', v.i) * 60000000 "
                      "+ datepart('microseconds', v.i)"}, body)
    return let({"i": "interval_arg::INTERVAL"}, parts)  # (an untyped NULL too)


def _interval_macros() -> Macros:
    """PostgreSQL's justify_hours, justify_days and justify_interval (interval_justify_*):
    whole days of the time moved into the days, whole months (30 days) of the days into the
    months, truncating toward zero, then a part whose sign differs from the one above it
    borrows one unit of that. `//` and `%` truncate toward zero, whatever the session's `/`."""
    interval = "to_months(m_arg) + to_days(d_arg) + to_microseconds(t_arg)"
    # the days and time with one sign (`heron_day_time`), the months and days with one sign,
    # a zero day counting the time's sign for justify_interval (`heron_month_day`)
    day_time = (f"CASE WHEN d_arg > 0 AND t_arg < 0 THEN heron_interval(m_arg, d_arg - 1, "
                f"t_arg + {_DAY}) WHEN d_arg < 0 AND t_arg > 0 THEN heron_interval(m_arg, "
                f"d_arg + 1, t_arg - {_DAY}) ELSE heron_interval(m_arg, d_arg, t_arg) END")

    def month_day(then: str, time: bool) -> str:
        below = "(d_arg < 0 OR (d_arg = 0 AND t_arg < 0))" if time else "d_arg < 0"
        above = "(d_arg > 0 OR (d_arg = 0 AND t_arg > 0))" if time else "d_arg > 0"
        return (f"CASE WHEN m_arg > 0 AND {below} THEN {then}(m_arg - 1, d_arg + {_MONTH}, "
                f"t_arg) WHEN m_arg < 0 AND {above} THEN {then}(m_arg + 1, d_arg - {_MONTH}, "
                f"t_arg) ELSE {then}(m_arg, d_arg, t_arg) END")

    parts = "m_arg, d_arg, t_arg"
    days = f"(v.d + v.t // {_DAY})"  # the time's whole days moved into the days
    return {
        "heron_interval": ((parts, interval),),
        "heron_day_time": ((parts, day_time),),
        "heron_month_day": ((parts, month_day("heron_interval", time=False)),),
        "heron_justified": ((parts, month_day("heron_day_time", time=True)),),
        "justify_hours": (("interval_arg", _interval_parts(
            f"heron_day_time(v.m, {days}, v.t % {_DAY})")),),
        "justify_days": (("interval_arg", _interval_parts(
            f"heron_month_day(v.m + v.d // {_MONTH}, v.d % {_MONTH}, v.t)")),),
        "justify_interval": (("interval_arg", _interval_parts(
            f"heron_justified(v.m + {days} // {_MONTH}, {days} % {_MONTH}, v.t % {_DAY})")),),
    }


# width_bucket(operand, low, high, count): PostgreSQL's bucket of `operand` among `count` equal
# ones between low and high (either way round), 0 below them and count + 1 above.
_WIDTH_BUCKET = (
    "CASE WHEN count_arg <= 0 THEN error('count must be greater than zero') "
    "WHEN low_arg = high_arg THEN error('lower bound cannot equal upper bound') "
    "WHEN low_arg < high_arg THEN CASE WHEN op_arg < low_arg THEN 0 "
    "WHEN op_arg >= high_arg THEN count_arg + 1 ELSE floor((op_arg - low_arg) * count_arg / "
    "(high_arg - low_arg))::INTEGER + 1 END "
    "ELSE CASE WHEN op_arg > low_arg THEN 0 WHEN op_arg <= high_arg THEN count_arg + 1 "
    "ELSE floor((low_arg - op_arg) * count_arg / (low_arg - high_arg))::INTEGER + 1 END "
    "END::INTEGER")


# string_to_array(text, delimiter): PostgreSQL's split, where DuckDB's differs at the edges: an
# empty text is an empty array ([''] in DuckDB), an empty delimiter keeps the text whole (DuckDB
# splits it into characters, which a NULL delimiter does in PostgreSQL: DuckDB keeps it whole).
_STRING_TO_ARRAY = (
    "CASE WHEN text_arg = '' THEN []::VARCHAR[] "
    "WHEN delimiter_arg IS NULL THEN system.main.string_split(text_arg, '') "
    "WHEN delimiter_arg = '' THEN [text_arg::VARCHAR] "
    "ELSE system.main.string_split(text_arg, delimiter_arg) END")
# A DuckDB list of lists is PostgreSQL's array of several dimensions: how many its type tells
# (`INTEGER[][]`), their lengths the first element's at each depth (PostgreSQL's are regular).
_DEPTH = "(length(typeof(arr_arg)) - length(replace(typeof(arr_arg), '[]', ''))) // 2"
_INNER_LENGTHS = ("json_array_length(to_json(arr_arg), '$[0]')",
                  "json_array_length(to_json(arr_arg), '$[0][0]')")


def _array_dims() -> str:
    """array_dims(array): '[1:3]', '[1:2][1:2]' (up to three dimensions)."""
    inner = " || ".join(f"CASE WHEN {_DEPTH} > {depth} THEN '[1:' || {length} || ']' ELSE '' END"
                        for depth, length in enumerate(_INNER_LENGTHS, start=1))
    return f"CASE WHEN len(arr_arg) > 0 THEN '[1:' || len(arr_arg) || ']' || {inner} END"


def _cardinality() -> str:
    """cardinality(array): its elements in every dimension (DuckDB's len counts the first)."""
    product = " * ".join(f"CASE WHEN {_DEPTH} > {depth} THEN {length} ELSE 1 END"
                         for depth, length in enumerate(_INNER_LENGTHS, start=1))
    return f"CASE WHEN {_DEPTH} > 1 THEN len(arr_arg) * {product} ELSE len(arr_arg) END"


def _session_macros() -> Macros:
    settings = _session_value("lower(name_arg)")
    unknown = "error('unrecognized configuration parameter \"' || name_arg || '\"')"
    # The session's role: its session_authorization (read-only, as in PostgreSQL).
    current_user = _session_value(literal("session_authorization"))
    no_text = "NULL::VARCHAR"
    return {
        "version": (("", f"'PostgreSQL ' || {_session_value(literal('server_version'))} "
                         "|| ' on x86_64-pc-linux-gnu, 64-bit'"),),
        # DuckDB keeps no statement's start: its transaction's, which is PostgreSQL's outside a
        # transaction block (Django's Now())
        "statement_timestamp": (("", "transaction_timestamp()"),),
        "current_setting": (
            ("name_arg", f"coalesce({settings}, {unknown})"),
            ("name_arg, missing_ok_arg",
             f"CASE WHEN missing_ok_arg THEN {settings} ELSE coalesce({settings}, {unknown}) END"),
        ),
        # No side effect: Heron's settings change through SET (the value is echoed).
        "set_config": (("name_arg, value_arg, local_arg", "value_arg"),),
        # DuckDB answers 'duckdb'; the session's role is the PostgreSQL answer.
        "current_user": (("", current_user),),
        "session_user": (("", current_user),),
        "current_role": (("", current_user),),
        "quote_ident": (("name_arg", _quote_ident("name_arg")),),
        # PostgreSQL's current_schemas: the search path's schemas (DuckDB's default schema when
        # it is empty), after pg_catalog when implicit ones are asked for.
        "current_schemas": (("implicit_arg", "CASE WHEN implicit_arg THEN ['pg_catalog'] "
                                             f"ELSE [] END || {_PATH_SCHEMAS}"),),
        "heron_search_path": (("", f"['{TEMP_NAMESPACE}', 'pg_catalog'] || {_PATH_SCHEMAS}"),),
        "quote_literal": (("text_arg", "'''' || replace(text_arg::VARCHAR, '''', '''''') "
                                       "|| ''''"),),
        "quote_nullable": (("text_arg", "CASE WHEN text_arg IS NULL THEN 'NULL' ELSE '''' || "
                                        "replace(text_arg::VARCHAR, '''', '''''') || '''' END"),),
        "pg_size_pretty": (("size_arg", _size_pretty("size_arg::HUGEINT")),),
        # PostgreSQL's fill defaults to a space (DuckDB's takes three arguments); both forms,
        # as a macro of the name shadows DuckDB's function.
        **{name: (("text_arg, length_arg", f"system.main.{name}(text_arg, length_arg, ' ')"),
                  ("text_arg, length_arg, fill_arg",
                   f"system.main.{name}(text_arg, length_arg, fill_arg)"))
           for name in ("lpad", "rpad")},
        # make_interval's named parameters (PostgreSQL's `days => 2`: DuckDB reads `=>` too)
        "make_interval": ((
            "years := 0, months := 0, weeks := 0, days := 0, hours := 0, mins := 0, secs := 0.0",
            "to_years(years::INTEGER) + to_months(months::INTEGER) + "
            "to_days((weeks * 7 + days)::INTEGER) + to_hours(hours::BIGINT) + "
            "to_minutes(mins::BIGINT) + to_microseconds(round(secs * 1000000)::BIGINT)"),),
        "width_bucket": (("op_arg, low_arg, high_arg, count_arg", _WIDTH_BUCKET),),
        # the extensions' functions (`extensions`): uuid-ossp's and pgcrypto's digest
        "uuid_generate_v4": (("", "gen_random_uuid()"),),
        "uuid_nil": (("", "'00000000-0000-0000-0000-000000000000'::UUID"),),
        "digest": (("data_arg, type_arg", "unhex(CASE lower(type_arg) WHEN 'md5' THEN "
                    "md5(data_arg) WHEN 'sha1' THEN sha1(data_arg) WHEN 'sha256' THEN "
                    "sha256(data_arg) ELSE error('Cannot use \"' || type_arg || '\": No such "
                    "hash algorithm') END)"),),
        "pg_encoding_to_char": (("encoding_arg", "'UTF8'"),),
        "pg_is_in_recovery": (("", "false"),),
        "pg_tablespace_location": (("tablespace_arg", "''"),),
        "pg_partition_ancestors": (("rel_arg", "rel_arg::UINTEGER"),),  # no partitions: itself
        "array_remove": (("arr_arg, element_arg",
                          "list_filter(arr_arg, lambda heron_x: heron_x IS DISTINCT FROM "
                          "element_arg)"),),
        "string_to_array": (
            ("text_arg, delimiter_arg", _STRING_TO_ARRAY),
            ("text_arg, delimiter_arg, null_arg",  # elements equal to null_arg are NULL
             f"list_transform({_STRING_TO_ARRAY}, lambda heron_x: CASE WHEN heron_x = null_arg "
             "THEN NULL ELSE heron_x END)")),
        # split_part: field 0 is an error, an empty delimiter keeps the text whole as field 1
        # and -1 (DuckDB splits it into characters)
        "split_part": (("text_arg, delimiter_arg, n_arg",
                        "CASE WHEN text_arg IS NULL OR delimiter_arg IS NULL THEN NULL "
                        "WHEN n_arg = 0 THEN error('field position must not be zero') "
                        "WHEN delimiter_arg = '' THEN CASE WHEN n_arg IN (1, -1) THEN "
                        "text_arg::VARCHAR ELSE '' END "
                        "ELSE system.main.split_part(text_arg, delimiter_arg, n_arg) END"),),
        # date_bin(stride, source, origin): DuckDB's time_bucket, which also bins by months
        # (PostgreSQL refuses them)
        "date_bin": (("stride_arg, source_arg, origin_arg",
                      "CASE WHEN datepart('month', stride_arg::INTERVAL) <> 0 OR "
                      "datepart('year', stride_arg::INTERVAL) <> 0 THEN error('timestamps "
                      "cannot be binned into intervals containing months or years') "
                      "WHEN stride_arg::INTERVAL <= INTERVAL 0 SECOND THEN "
                      "error('stride must be greater than zero') "
                      "ELSE time_bucket(stride_arg::INTERVAL, source_arg, origin_arg) END"),),
        # isfinite of an interval (PostgreSQL 15's intervals are all finite), DuckDB's of the rest
        "isfinite": (("value_arg INTERVAL", "CASE WHEN value_arg IS NOT NULL THEN true END"),
                     ("value_arg", "system.main.isfinite(value_arg)")),
        "array_ndims": (("arr_arg", f"CASE WHEN len(arr_arg) > 0 THEN ({_DEPTH})::INTEGER END"),),
        "array_dims": (("arr_arg", _array_dims()),),
        "cardinality": (("arr_arg", _cardinality()),),
        "array_positions": (("arr_arg, element_arg",
                             "list_filter(range(1, len(arr_arg) + 1), lambda heron_i: "
                             "arr_arg[heron_i] IS NOT DISTINCT FROM element_arg)::INTEGER[]"),),
        "array_fill": (("value_arg, dims_arg",
                        "CASE WHEN len(dims_arg) = 1 THEN list_transform(range(dims_arg[1]), "
                        "lambda heron_i: value_arg) ELSE error('array_fill: Heron fills one "
                        "dimension') END"),),
        "trim_array": (("arr_arg, n_arg",
                        "CASE WHEN n_arg < 0 OR n_arg > len(arr_arg) THEN error('number of "
                        "elements to trim must be between 0 and ' || len(arr_arg)) "
                        "ELSE arr_arg[1:len(arr_arg) - n_arg] END"),),
        "array_replace": (("arr_arg, from_arg, to_arg",
                           "list_transform(arr_arg, lambda heron_x: CASE WHEN heron_x IS NOT "
                           "DISTINCT FROM from_arg THEN to_arg ELSE heron_x END)"),),
        "pg_get_function_result": (("function_arg", no_text),),
        "pg_get_function_arguments": (("function_arg", no_text),),
        "pg_get_function_identity_arguments": (("function_arg", no_text),),
        "pg_get_statisticsobjdef_columns": (("stat_arg", no_text),),
        # Heron has no triggers, rules, partitions or extended statistics.
        "pg_get_triggerdef": (("trigger_arg", no_text), ("trigger_arg, pretty_arg", no_text)),
        "pg_get_ruledef": (("rule_arg", no_text), ("rule_arg, pretty_arg", no_text)),
        "pg_get_partkeydef": (("rel_arg", no_text),),
        "pg_get_partition_constraintdef": (("rel_arg", no_text),),
        "pg_get_statisticsobjdef": (("stat_arg", no_text),),
        "pg_relation_is_publishable": (("rel_arg", "false"),),
        "pg_database_size": (("database_arg", "(SELECT total_blocks * block_size "
                                              "FROM pragma_database_size() "
                                              "WHERE database_name = current_database())"),),
        "array_upper": (("arr_arg, dim_arg",  # (integer, as PostgreSQL's)
                         "CASE WHEN dim_arg = 1 AND len(arr_arg) > 0 THEN "
                         "CAST(len(arr_arg) AS INTEGER) END"),),
        "array_lower": (("arr_arg, dim_arg",
                         "CASE WHEN dim_arg = 1 AND len(arr_arg) > 0 THEN CAST(1 AS INTEGER) "
                         "END"),),
        # information_schema._pg_expandarray: one row (x, n) per element, n counting from 1.
        "_pg_expandarray": (("arr_arg", "unnest(list_transform(list_zip(arr_arg, range(1, "
                                        "len(arr_arg) + 1)), lambda heron_z: "
                                        "{'x': heron_z[1], 'n': heron_z[2]}))"),),
        # Every role may use every object (Heron's privileges are its server privileges).
        **{name: (("object_arg, privilege_arg", "true"),
                  ("role_arg, object_arg, privilege_arg", "true"))
           for name in ("has_table_privilege", "has_schema_privilege",
                        "has_database_privilege", "has_any_column_privilege",
                        "has_function_privilege", "has_sequence_privilege",
                        "has_type_privilege", "has_tablespace_privilege")},
        "has_column_privilege": (("table_arg, column_arg, privilege_arg", "true"),
                                 ("role_arg, table_arg, column_arg, privilege_arg", "true")),
        # PostgreSQL's div(numeric, numeric): the quotient truncated toward zero, numeric of
        # scale 0. The dividend less its remainder (DuckDB's % is exact on decimals, and
        # truncating) is a multiple of the divisor: their quotient, computed in double
        # precision, rounds to the exact integer below 2^52.
        "div": (("a_arg, b_arg", let({"a": "a_arg", "b": "b_arg"},
                                     "round((v.a - v.a % v.b) / v.b)::DECIMAL(38, 0)")),),
        **_interval_macros(),
        # upper keeps ß, which has no capital of one letter for PostgreSQL (its towupper, in
        # every UTF-8 locale; DuckDB's gives ẞ, U+1E9E): the stretches between them upper-cased.
        # The only letter whose upper and lower case differ from PostgreSQL's (initcap's
        # `pg_semantics` rewrite calls this upper too). DuckDB's upper is tested first, so that
        # upper of a non-text is refused in its words (42883 upper(integer)).
        "upper": (("text_arg", "CASE WHEN contains(system.main.upper(text_arg), 'ẞ') THEN "
                               "array_to_string("
                               "list_transform(string_split(text_arg, 'ß'), lambda heron_p: "
                               "system.main.upper(heron_p)), 'ß') "
                               "ELSE system.main.upper(text_arg) END"),),
        # PostgreSQL's prefix operators |/ (square root) and ||/ (cube root) of double
        # precision: DuckDB's parser reads a prefix operator as a call of a function so named.
        '"|/"': (("x_arg", "sqrt(x_arg::DOUBLE)"),),
        '"||/"': (("x_arg", "cbrt(x_arg::DOUBLE)"),),
    }


SESSION_MACROS: Macros = _session_macros()


_CLASSES = "pg_class heron_c LEFT JOIN pg_namespace heron_n ON heron_n.oid = heron_c.relnamespace"
# The schemas an unqualified name is looked up in, in order: the session's temporary schema,
# pg_catalog, then the search path (DuckDB's default schema when the search path is empty).
_SEARCH_PATH = "heron_search_path()"


def _format_type() -> str:
    # typmod: numeric ((precision << 16) | scale) + 4; character types length + 4.
    builtin = values((str(oid), name) for oid, name in TYPE_NAMES.items())
    names = (f"(SELECT map_from_entries(list({{'key': k, 'value': v}})) FROM ("
             f"SELECT * FROM (VALUES {builtin}) b(k, v) UNION ALL "
             f"SELECT oid::VARCHAR, first(typname) FROM pg_type "
             f"WHERE oid::VARCHAR NOT IN (SELECT k FROM (VALUES {builtin}) b(k, v)) "
             f"GROUP BY oid))")
    return let({"t": "type_arg::BIGINT", "m": "typmod_arg::INTEGER", "names": names}, """
        CASE WHEN v.t IS NULL THEN NULL WHEN v.t = 0 THEN '-' ELSE
          coalesce(v.names[v.t::VARCHAR], '???')
          || CASE
               WHEN v.t IN (1700, 1231) AND v.m >= 4 THEN
                 '(' || (((v.m - 4) >> 16) & 65535) || ',' || ((v.m - 4) & 65535) || ')'
               WHEN v.t IN (1042, 1043, 1014, 1015) AND v.m >= 4 THEN '(' || (v.m - 4) || ')'
               ELSE '' END
        END""")


def _regclass_oid() -> str:
    """to_regclass: a relation's OID from its (possibly qualified, possibly quoted) name, looked
    up in the search path like PostgreSQL, or from its number; NULL for an unknown name."""
    parts = ("list_transform(regexp_extract_all(name_arg, '\"((?:[^\"]|\"\")*)\"|([^.\"]+)'), "
             "lambda heron_p: CASE WHEN starts_with(heron_p, '\"') THEN "
             "replace(heron_p[2:-2], '\"\"', '\"') ELSE lower(heron_p) END)")
    bindings = {
        "name": "name_arg", "parts": parts, "path": _SEARCH_PATH,
        "qualified": lookup_map(_CLASSES, "heron_n.nspname || '.' || heron_c.relname",
                                "heron_c.oid"),
        "unqualified": lookup_map(_CLASSES, "heron_c.relname",
                                  "{'schema': heron_n.nspname, 'oid': heron_c.oid}", "list")}
    # A qualified name is looked up as it is, an unqualified one in the first schema of the
    # search path holding it.
    return let(bindings, """CASE
        WHEN regexp_matches(v.name, '^\\s*\\d+\\s*$') THEN trim(v.name)::UINTEGER
        WHEN len(v.parts) > 1 THEN v.qualified[v.parts[-2] || '.' || v.parts[-1]]::UINTEGER
        ELSE list_sort(list_filter(list_transform(v.unqualified[v.parts[-1]], lambda y: {
               'position': coalesce(list_position(v.path, y.schema), 0), 'oid': y.oid}),
             lambda z: z.position > 0))[1].oid::UINTEGER END""")


# Type names the parser knows besides pg_type's and format_type's.
_TYPE_ALIASES = {"int": 23, "float": 701, "decimal": 1700, "char": 1042, "character": 1042,
                 "varchar": 1043, "bool": 16, "timestamptz": 1184, "timetz": 1266}


def _regtype_oid() -> str:
    """to_regtype: a type's OID from its name as the parser reads it (format_type's or
    pg_type's name, an alias such as int, a modifier and a schema ignored, `[]` for its array
    type); NULL for an unknown name."""
    names = values([*((v, k) for k, v in TYPE_NAMES.items()), *_TYPE_ALIASES.items()])
    spellings = f"""(SELECT n.name, t.oid, t.typarray FROM (VALUES {names}) n(name, oid)
                     JOIN pg_type t ON t.oid = n.oid
                     UNION ALL SELECT typname, oid, typarray FROM pg_type)"""
    source = f"""(SELECT name, oid FROM {spellings}
                  UNION ALL SELECT name || '[]', typarray FROM {spellings}
                  WHERE typarray <> 0) heron_t"""
    name = ("lower(trim(regexp_replace(split_part(name_arg, '.', -1), '\\(\\d+(,\\d+)?\\)', "
            "'')))")
    return f"({lookup(source, 'heron_t.name', 'heron_t.oid', name)})::UINTEGER"


def _relation_name() -> str:
    """regclass's text: the name, qualified when its schema is not on the search path."""
    qualified = ("CASE WHEN list_contains(" + _SEARCH_PATH + ", heron_n.nspname) "
                 "THEN quote_ident(heron_c.relname) ELSE quote_ident(heron_n.nspname) || '.' "
                 "|| quote_ident(heron_c.relname) END")
    return f"coalesce({lookup(_CLASSES, 'heron_c.oid', qualified, 'rel_arg')}, rel_arg::VARCHAR)"


def _action(event: str, letter: str) -> str:
    """SQL: a foreign key's ON UPDATE or ON DELETE action as pg_get_constraintdef prints it
    (nothing for NO ACTION)."""
    whens = " ".join(f"WHEN '{code}' THEN ' ON {event} {name}'"
                     for code, name in foreign_keys.ACTION_NAMES.items() if code != "a")
    return f"CASE {letter} {whens} ELSE '' END"


def _constraint_definition() -> str:
    referenced = ("CASE WHEN list_contains(" + _SEARCH_PATH + ", heron_k.referenced_schema) "
                  "THEN quote_ident(heron_k.referenced_table) ELSE "
                  "quote_ident(heron_k.referenced_schema) || '.' "
                  "|| quote_ident(heron_k.referenced_table) END")
    columns = "array_to_string(list_transform({}, lambda heron_y: quote_ident(heron_y)), ', ')"
    definition = f"""CASE heron_k.contype
        WHEN 'p' THEN 'PRIMARY KEY (' || {columns.format('heron_k.column_names')} || ')'
        WHEN 'u' THEN 'UNIQUE (' || {columns.format('heron_k.column_names')} || ')'
        WHEN 'f' THEN 'FOREIGN KEY (' || {columns.format('heron_k.column_names')}
                      || ') REFERENCES ' || {referenced} || '('
                      || {columns.format('heron_k.referenced_column_names')} || ')'
                      || {_action('UPDATE', 'heron_k.on_update')}
                      || {_action('DELETE', 'heron_k.on_delete')}
                      || CASE WHEN heron_k.deferred THEN ' DEFERRABLE INITIALLY DEFERRED'
                              WHEN heron_k.deferrable THEN ' DEFERRABLE' ELSE '' END
        ELSE 'CHECK (' || heron_k.expression || ')' END"""
    return lookup("heron_constraints heron_k", "heron_k.oid", definition, "con_arg")


def _index_definition() -> str:
    """pg_get_indexdef: the CREATE INDEX statement (column 0) or one key (a column's name or
    an expression)."""
    entry = lookup("heron_indexes heron_i", "heron_i.oid",
                   "{'statement': heron_i.definition, 'keys': heron_i.keys}", "index_arg")
    return let({"index": entry, "column": "column_arg"},
               "CASE WHEN coalesce(v.column, 0) = 0 THEN v.index.statement "
               "ELSE v.index.keys[v.column] END")


# The fixed OIDs of the catalogs objects are described in (obj_description's second argument).
_CATALOG_OIDS = {"pg_class": 1259, "pg_type": 1247, "pg_namespace": 2615, "pg_constraint": 2606,
                 "pg_proc": 1255, "pg_attribute": 1249, "pg_am": 2601, "pg_opclass": 2616,
                 "pg_collation": 3456, "pg_trigger": 2620, "pg_rewrite": 2618,
                 "pg_extension": 3079, "pg_language": 2612, "pg_operator": 2617,
                 "pg_cast": 2605, "pg_conversion": 2607, "pg_ts_config": 3602,
                 "pg_ts_dict": 3600, "pg_ts_parser": 3601, "pg_ts_template": 3764,
                 "pg_event_trigger": 3466, "pg_policy": 3256, "pg_statistic_ext": 3381,
                 "pg_publication": 6104, "pg_subscription": 6100, "pg_database": 1262,
                 "pg_tablespace": 1213, "pg_authid": 1260, "pg_enum": 3501}


def _description(objoid: str, classoid: str, objsubid: str) -> str:
    return lookup("pg_description", "objoid || '/' || classoid || '/' || objsubid",
                  "description", f"{objoid} || '/' || {classoid} || '/' || {objsubid}")


def _viewdef(pretty: str) -> str:
    definition = lookup("heron_relations heron_v", "heron_v.oid", "heron_v.definition",
                        "view_arg")
    return f"{VIEWDEF_FUNCTION}({definition}, (SELECT types FROM heron_column_types), {pretty})"


def _has_role(user: str) -> str:
    """pg_has_role: superusers have every role; others their own and those granted them."""
    def role(arg: str) -> str:  # a role by name or OID
        by_name = lookup("heron_roles heron_r", "heron_r.name", "heron_r", f"{arg}::VARCHAR")
        by_oid = lookup("heron_roles heron_r", "heron_r.oid::VARCHAR", "heron_r",
                        f"{arg}::VARCHAR")
        return f"coalesce({by_name}, {by_oid})"
    return let({"user": role(user), "role": role("role_arg")},
               "coalesce(v.user.superuser OR v.user.oid = v.role.oid "
               "OR list_contains(v.user.member_of, v.role.oid), false)")


def _size() -> str:
    """A relation's size in bytes: a view has none (0); DuckDB keeps no size per table or
    index, so theirs are unknown (NULL)."""
    kind = lookup("heron_relations heron_r", "heron_r.oid", "heron_r.relkind", "rel_arg")
    return f"CASE WHEN {kind} = 'v' THEN 0 END::BIGINT"


_OWNED = "c.table_name || '_' || c.column_name || '_seq'"
_SERIAL_SEQUENCE = (
    f"(SELECT quote_ident(c.schema_name) || '.' || quote_ident({_OWNED}) FROM duckdb_columns() c "
    "WHERE c.table_oid = to_regclass(table_arg) AND c.column_name = column_arg AND "
    f"c.column_default IN ('nextval(''' || {_OWNED} || ''')', "
    f"'nextval(''' || c.schema_name || '.' || {_OWNED} || ''')'))")


CATALOG_MACROS: Macros = {  # in creation order: a macro is bound when created
    # ::regclass and friends (see the rewrite): text -> OID, OID -> display name.
    "to_regclass": (("name_arg", _regclass_oid()),),
    "heron_regclass_oid": (("name_arg", "coalesce(to_regclass(name_arg), error('relation \"' "
                                        "|| name_arg || '\" does not exist'))"),),
    "heron_regclass_name": (("rel_arg", _relation_name()),),
    # The sequence a serial or identity column owns (`serial_columns`: named
    # <table>_<column>_seq and read by the column's default).
    "pg_get_serial_sequence": (("table_arg, column_arg", _SERIAL_SEQUENCE),),
    "to_regtype": (("name_arg", _regtype_oid()),),
    "heron_regtype_oid": (("name_arg", "coalesce(to_regtype(name_arg), error('type \"' "
                                       "|| name_arg || '\" does not exist'))"),),
    "heron_regtype_name": (("type_arg", "format_type(type_arg, NULL)"),),
    # A result column's regclass or regtype value: its OID and its name (`pg_types.reg_value`).
    "heron_regclass_value": (("rel_arg", "CASE WHEN rel_arg IS NOT NULL THEN {'heron_regclass': "
                                         "rel_arg::UINTEGER, 'name': heron_regclass_name(rel_arg)"
                                         "} END"),),
    "heron_regtype_value": (("type_arg", "CASE WHEN type_arg IS NOT NULL THEN {'heron_regtype': "
                                         "type_arg::UINTEGER, 'name': heron_regtype_name(type_arg)"
                                         "} END"),),
    # pg_typeof's: its types are built-in, named without pg_type (DuckDB takes no subquery in
    # RETURNING).
    "heron_typeof_name": (("type_arg", type_name_sql("type_arg")),),
    "heron_typeof_value": (("type_arg", "{'heron_regtype': type_arg::UINTEGER, "
                                        "'name': heron_typeof_name(type_arg)}"),),
    "to_regnamespace": (("name_arg", lookup(
        "pg_namespace heron_n", "heron_n.nspname", "heron_n.oid", "name_arg")),),
    "heron_regnamespace_oid": (("name_arg", "coalesce(to_regnamespace(name_arg), error("
                                            "'schema \"' || name_arg || '\" does not exist'))"),),
    "heron_regnamespace_name": (("ns_arg", lookup(
        "pg_namespace heron_n", "heron_n.oid", "heron_n.nspname", "ns_arg")),),
    # regproc columns (typinput, ...) hold a function's name: text casts to its bare name.
    "heron_regproc": (("name_arg", "regexp_replace(regexp_replace(name_arg, "
                                   "'^pg_catalog\\.', ''), '\\(.*\\)$', '')"),),
    "heron_regproc_name": (("proc_arg", lookup(
        "pg_catalog.pg_proc heron_p", "heron_p.oid", "heron_p.proname", "proc_arg")),),
    "to_regrole": (("name_arg", lookup("heron_roles heron_r", "heron_r.name", "heron_r.oid",
                                       "name_arg")),),
    "heron_regrole_oid": (("name_arg", "coalesce(to_regrole(name_arg), error('role \"' "
                                       "|| name_arg || '\" does not exist'))"),),
    "heron_regrole_name": (("role_arg", lookup("heron_roles heron_r", "heron_r.oid",
                                               "heron_r.name", "role_arg")),),
    **{name: (("rel_arg", _size()),) for name in (
        "pg_table_size", "pg_total_relation_size", "pg_indexes_size")},
    "pg_relation_size": (("rel_arg", _size()), ("rel_arg, fork_arg", _size())),
    "pg_get_userbyid": (("role_arg", "coalesce(" + lookup(
        "heron_roles heron_r", "heron_r.oid", "heron_r.name", "role_arg")
        + ", 'unknown (OID=' || role_arg || ')')"),),
    # Visible: the relation's schema is on the search path (pg_catalog always is).
    "pg_table_is_visible": (("rel_arg", f"list_contains({_SEARCH_PATH}, " + lookup(
        _CLASSES, "heron_c.oid", "heron_n.nspname", "rel_arg") + ")"),),
    **{name: (("object_arg", "true"),) for name in (
        "pg_type_is_visible", "pg_function_is_visible", "pg_statistics_obj_is_visible",
        "pg_collation_is_visible", "pg_conversion_is_visible", "pg_operator_is_visible",
        "pg_opclass_is_visible", "pg_opfamily_is_visible", "pg_ts_config_is_visible",
        "pg_ts_dict_is_visible", "pg_ts_parser_is_visible", "pg_ts_template_is_visible")},
    "format_type": (("type_arg, typmod_arg", _format_type()),),
    "pg_get_expr": (("expr_arg, relation_arg", "expr_arg::VARCHAR"),
                    ("expr_arg, relation_arg, pretty_arg", "expr_arg::VARCHAR")),
    "pg_get_viewdef": (("view_arg", _viewdef("false")),
                       ("view_arg, pretty_arg", _viewdef("pretty_arg"))),
    "pg_get_indexdef": (("index_arg", _index_definition().replace("column_arg", "0")),
                        ("index_arg, column_arg, pretty_arg", _index_definition())),
    "pg_get_constraintdef": tuple((params, _constraint_definition())
                                  for params in ("con_arg", "con_arg, pretty_arg")),
    "col_description": (("table_arg, column_arg",
                         _description("table_arg", "1259", "column_arg")),),
    "obj_description": (("object_arg", _description("object_arg", "1259", "0")),
                        ("object_arg, catalog_arg", _description("object_arg", _case(
                            "replace(lower(catalog_arg), 'pg_catalog.', '')",
                            _CATALOG_OIDS), "0"))),
    "shobj_description": (("object_arg, catalog_arg", "NULL::VARCHAR"),),
    "pg_has_role": (("role_arg, privilege_arg", _has_role("current_user")),
                    ("user_arg, role_arg, privilege_arg", _has_role("user_arg"))),
}

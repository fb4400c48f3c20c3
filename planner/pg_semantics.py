"""PostgreSQL's semantics where DuckDB's differ: on each session's connection, and in statements.

Contract:
- `configure(con)` sets what makes DuckDB compute as PostgreSQL does on `con`'s database (as
  its global settings: every connection to it, made before or after, computes so): `/` on
  integers divides as integers (5/2 = 2, truncating toward zero), division by zero fails for
  every numeric type (22012) instead of giving NULL or Infinity, NULLs sort last ascending and
  first descending, and results reach Arrow with UUID and JSON as their own types (so they go out
  with their own OIDs) and DuckDB's huge integers intact.
- `rewrite(sql)` returns the statement with PostgreSQL's meaning where DuckDB would read it
  otherwise; a statement a cheap test finds nothing in comes back unchanged and unparsed, and so
  does one sqlglot cannot read (DuckDB then reports its own error). The rewrites:
  * a string cast to bytea reads PostgreSQL's hex (`'\\x0102'`) and escape (`'a\\000'`) formats;
  * a string cast to an array reads PostgreSQL's array literal (`'{1,2}'::int[]`,
    `'{"a b",NULL}'::text[]`, nested braces for more dimensions);
  * `numeric` / `decimal` without precision keeps digits DuckDB's default DECIMAL(18,3) would
    round away: a literal cast keeps exactly its own digits, anything else (columns, other casts)
    becomes DECIMAL(38,10), DuckDB's widest exact decimal with room for products;
  * `SELECT ... INTO t` is `CREATE TABLE t AS SELECT ...`, as PostgreSQL reads it (DuckDB has no
    SELECT INTO);
  * a `varchar(n)` / `char(n)` column of CREATE TABLE or ALTER TABLE ADD COLUMN gets a CHECK that
    enforces its length (an overflow is 22001, `value too long for type character varying(n)`,
    `character(n)`; char(n)'s CHECK, `n >= length(rtrim(col, ' '))`, lets trailing blanks
    beyond n through and marks the column character(n); `char` is char(1)), and a cast to
    `varchar(n)` truncates, as PostgreSQL's explicit casts do; a cast to `char(n)` truncates
    and drops the trailing blanks, insignificant to PostgreSQL's comparisons, length, `||` and
    casts to text (`column_origins` announces it character(n), and its values go out
    blank-padded to n); `length_casts(tree)` makes these casts so in another rewrite's tree;
  * jsonb is stored normalized (`jsonb_storage`): a cast to jsonb, the values an INSERT,
    UPDATE or ON CONFLICT puts in a jsonb column (of `relations`), a jsonb column's literal
    DEFAULT, a string literal compared with a jsonb value, and jsonb_build_object,
    jsonb_build_array and jsonb_agg are `pg_jsonb.normalize`d;
  * `jsonb` is DuckDB's JSON, which has one JSON type: a jsonb column of CREATE TABLE or ALTER
    TABLE ADD COLUMN gets the CHECK `json_valid(col)`, which never refuses a JSON value and
    marks the column jsonb for the catalog and `column_origins` (which decides what is sent as
    jsonb). DuckDB adds no column with a CHECK and changes the type of no column a CHECK reads:
    `alter_table` runs those ALTER TABLEs (ALTER COLUMN ... TYPE varchar(n) or jsonb is spelled
    VARCHAR(n), JSONB for it);
    `column_definition(column)` is such a column as DuckDB keeps it, `length_limit(check)` and
    `declares_type(check)` recognize these CHECKs;
  * jsonb's operators `?`, `?|` and `?&` (DuckDB reads `?` as a parameter) call `pg_jsonb`'s
    jsonb_exists, jsonb_exists_any and jsonb_exists_all (a string literal of keys read as a
    text[] literal), named `?column?`; `@>` and `<@` need no rewrite (`pg_jsonb.OPERATORS`);
  * jsonb's and json's `#>` and `#>>` (a string literal path read as a text[] literal), and
    jsonb_extract_path(_text), jsonb_array_length, jsonb_object_keys, jsonb_each(_text),
    jsonb_array_elements(_text) and their json twins call `pg_jsonb.VALUE_FUNCTIONS`; a
    set-returning one unnests its list in a select list (not jsonb_each: a record), and in
    FROM is a derived table named and with columns as PostgreSQL's (a one-column function's
    column takes its alias's name), reading earlier FROM items laterally (not yet WITH
    ORDINALITY);
  * jsonb's `||` (concatenation; DuckDB's `||` concatenates the texts) and `-` (of a key, a
    text[] of keys, or an integer index), where an operand is jsonb as `column_origins`
    declares it (a cast to jsonb, a jsonb column, `->` of one; in UPDATE's SET and WHERE too),
    call `pg_jsonb`'s jsonb_concat, jsonb_delete, jsonb_delete_keys and jsonb_delete_index,
    named `?column?`; jsonb_set (its path a text[] literal, create_missing true unless given),
    jsonb_strip_nulls and jsonb_pretty call `pg_jsonb`'s; to_jsonb is DuckDB's to_json,
    normalized;
  * `||` of an array and an element is list_append / list_prepend and of two arrays
    list_concat, as PostgreSQL's anycompatiblearray operators (DuckDB's `||` concatenates lists
    only, and is NULL where one list is), where one operand is an array by its syntax (a
    constructor, a cast to an array type, an array function) and the other's kind is known by
    its syntax too (an untyped NULL is an array); `array_cat` (and `||` of two arrays) is NULL
    only where both arrays are (DuckDB's list_concat gives []);
  * `#` of integers (bitwise xor; DuckDB's grammar has no `#`) is DuckDB's xor;
  * `x op ANY (array)` and `x op ALL (array)` are NULL where the array is NULL (DuckDB's: false
    and true);
  * a string literal or a parameter compared with an enum value (a column of an enum type, in
    a statement that names its table; a cast to a user type there) is cast to the enum, so its
    labels compare in the enum's order (`_enum_literals`; DuckDB compares them as text);
  * an untyped string literal beside `+ - * / %` and a typed operand takes that operand's
    type, as PostgreSQL resolves it (`_unknown_operands`: `'10'::int + '5'` is integer 15,
    `1.5 + '2'` numeric, `d - '2020-01-01'` subtracts dates, `now() - '1 day'` fails 22007;
    DuckDB's binder finds no best candidate, or makes a double);
  * `generate_series` in a select list gives rows, as a set-returning function does (DuckDB's
    scalar form gives one list), named `generate_series` and `integer` when its bounds (and
    step) are integer literals within int4, as PostgreSQL's generate_series(int, int) is (in
    FROM too); in FROM its alias names its column too (`FROM generate_series(1, 3) AS x`: x
    is each number, where DuckDB's x is the row); over two dates (a cast to date,
    current_date) it gives timestamptz, as PostgreSQL's (DuckDB's gives timestamps);
  * `regexp_split_to_table(text, pattern [, flags])`, which DuckDB lacks, unnests its
    regexp_split_to_array (in FROM under the call's alias, which names its column too);
  * a SELECT's row-locking clauses (FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE, FOR KEY SHARE,
    with OF, NOWAIT or SKIP LOCKED) are accepted and take no lock: DuckDB has no row locks,
    and its transactions see a snapshot, so a transaction that then writes a row another
    committed after that snapshot fails with 40001, as PostgreSQL's repeatable read does (what
    clients that lock rows before writing them retry). A second locker is not made to wait,
    nor are locked rows skipped: two workers that each lock and update the same job row see
    one of them fail with 40001 where PostgreSQL's second one waits or skips it;
  * an ORDER BY key's `USING <` / `USING >` is ASC / DESC (`dialect` reads them so);
  * `FETCH FIRST n ROWS WITH TIES` (DuckDB's grammar has no WITH TIES) keeps the rows ranked
    within the first n + offset by the ORDER BY (a QUALIFY on rank()); without ORDER BY it is
    42601 as PostgreSQL's, over DISTINCT or a set operation 0A000;
  * LIKE and ILIKE escape with a backslash unless they say otherwise, as PostgreSQL's (DuckDB's
    have no default escape character), where the pattern may hold one;
  * `x [NOT] [I]LIKE ANY (array)` and `ALL (array)`, which DuckDB's grammar lacks, test each of
    the array's patterns (NULL for a NULL array);
  * `array_agg(DISTINCT x)` and `string_agg(DISTINCT x, sep)` give x's order, as PostgreSQL's
    sort does (DuckDB's hash order otherwise); `BETWEEN SYMMETRIC` is read (sqlglot spells it
    out);
  * percentile_cont orders its values as double precision, PostgreSQL's only percentile_cont
    (DuckDB's over a numeric interpolates in the numeric's scale);
  * `x SIMILAR TO p [ESCAPE e]` matches SQL's pattern as PostgreSQL does (`pg_similar`: `%`
    and `_` are wildcards, `.` is literal; DuckDB reads `p` as a regular expression), named
    `?column?`;
  * the precision of timestamptz, time, timetz and interval (`timestamp(6) with time zone`, which
    Hibernate declares, `time(0)`) and of the clocks (`current_timestamp(0)`) is dropped: DuckDB
    takes none there and keeps microseconds (PostgreSQL rounds to fewer digits where asked);
  * a cast to time of anything but a literal or a parameter is `TIME_MACRO`'s, which takes a
    timestamptz too (its time of day in the session's time zone; DuckDB has no such cast);
  * an interval literal reads as PostgreSQL's interval_in reads it (`-1 days +02:00:00`, which
    PostgreSQL and Heron print, and ISO 8601's `P1DT2H`: `pg_interval.duckdb_input`);
  * a string literal cast to boolean reads every word PostgreSQL's boolin does (`'on'`,
    `'off'`, `'of'`, `'n'`, ...; DuckDB's cast reads fewer);
  * `power(x, y)` and `x ^ y` of a negative x and a y that is not an integer fail (2201F) as
    PostgreSQL's do (DuckDB's give NaN);
  * `round(x)` of a double rounds half to even, as PostgreSQL's (the C library's rint) does
    (DuckDB's rounds half away from zero, as both do for numeric);
  * functions DuckDB lacks or reads otherwise: `format()` with a constant template
    (`pg_format`: %s, %I, %L, %%; DuckDB's format takes {} fields), `json_build_object` /
    `jsonb_build_object` (DuckDB's json_object), `jsonb_build_array` (json_array), `json_agg` /
    `jsonb_agg` (json_group_array; with ORDER BY or DISTINCT in the call, which that macro
    refuses, the JSON of the ordered list), `jsonb_typeof` / `json_typeof` (PostgreSQL's names of
    json_type's answers),
    `substring` / `substr` with a start below 1 (PostgreSQL's count positions before the
    string's first; DuckDB's count from its end) or a negative count (22011), and
    `substring(s FROM 'regex')` (its first group's match, or the whole match; NULL without),
    `array_to_string(a, sep, null_text)` (DuckDB's takes two arguments),
    `regexp_match` and `regexp_matches` (`pg_regexp`: text[] of the capture groups; DuckDB's
    regexp_matches is a boolean test, which a regexp_matches where only a boolean can stand
    stays),
    `every` (bool_and), `to_hex` in lower case, `encode` / `decode` of bytea in 'hex' and
    'base64' (base64 broken into lines of 76 characters, as PostgreSQL writes it),
    `to_char(date or timestamp, constant template)` (`_to_char`: its common patterns),
    `num_nulls` / `num_nonnulls` (a sum of one count per argument),
    `to_char(number, constant template)` (`pg_to_char`, a Python function the catalog
    registers), `to_date(text, template)` (`pg_to_date`, likewise), `initcap` (`_initcap`:
    its words runs of letters and digits of any script), and `btrim` (which sqlglot spells
    out), each select list item named after the function;
  * `*` over joins that merge columns (USING, NATURAL; chains of them) lists the columns as
    PostgreSQL's star does: each join's merged columns first, then the rest of each side (DuckDB
    leaves them where the left side has them). Which columns move is
    `column_origins.moved_columns`'s, over both sides' columns (`relations`, the tables and
    views the statement may read); a star it cannot be sure of is left as it is;
  * `unnest(a, b, ...)` of several arrays in FROM zips them (`_zipped_unnests`), WITH
    ORDINALITY too;
  * a GROUP BY naming a table's primary key groups by its other columns too (`grouped_keys`:
    PostgreSQL's functional dependency, which Django's annotate() relies on);
  * a name given to a constraint is kept (`constraint_names`);
  * the length and position functions (`length`, `char_length`, `octet_length`, `bit_length`,
    `strpos`/`position`, `array_length`, `cardinality`) and the window function `ntile` return
    `integer`, as PostgreSQL's do (DuckDB's return BIGINT), and `octet_length` counts a text's
    UTF-8 bytes too (DuckDB's takes only BLOB and BIT: on text, or on an unknown literal, it
    fails to bind); `array_length` of an empty array is NULL (DuckDB's 0);
  * `x / n` of an interval by its syntax divides it (DuckDB's integer division setting
    made the operator `//`, which has no interval form);
  * what turns an interval, an array or a float into text prints it as PostgreSQL's
    interval_out, array_out and float8out do (`pg_text.TEXT_MACRO`; DuckDB's cast prints
    `-1 day`, `2 months`, `[1, 2]`, `2.0`): a cast to text or varchar of anything but a
    constant, each argument of concat and concat_ws, and an operand of `||` that is an interval
    or a float by its syntax; only in a statement that turns something into text and names an
    interval (or a timestamp or time, which subtract to one), an array, a float, or a relation
    with such a column (`Relations.texted_otherwise`).
  A rewrite never copies an AI call (each copy would be asked). Statements with AI functions are
  printed back in Heron's dialect for the AI planner; the others in DuckDB's.
- `pg_format(template, args)`: PostgreSQL's format() with a constant template, as the
  concatenation that computes it (the catalog rewrite's too).
- `typed_results(con, sql)`: a query's select list items typed as PostgreSQL types them where
  that depends on their operands' types: `sum(x)` of a smallint or integer `x` (also over a
  window, and within an item: `coalesce(sum(x), 0)`) is `bigint`, where DuckDB's is HUGEINT
  (sent as numeric: clients and ORMs then read a decimal); `sign(x)` of an integer or float
  is double precision (PostgreSQL has only sign(double precision) and sign(numeric)), of a
  numeric a numeric; `date - date` is integer (DuckDB's bigint); `date_trunc(unit, date)` is
  timestamptz (DuckDB's timestamp). The operands' types come from binding the query on `con`
  with them in the items' places. Anything else comes back unchanged.
- `conflict_constraints(con, sql)`: an INSERT's ON CONFLICT ON CONSTRAINT name as the conflict
  target of the constraint's columns (DuckDB has no such target).
- `written_arrays(con, sql)`: each string literal an INSERT's VALUES, an UPDATE's SET or ON
  CONFLICT's SET writes into an array column read as PostgreSQL's array literal (`'{a,b}'`,
  which DuckDB's cast to a list refuses), the column types bound on `con`.
- `parse_array_literal(text, element)` reads a PostgreSQL array literal into nested lists;
  `parse_bytea(text)` reads bytea's text input formats. Bad input raises `SqlError` 22P02.
- `text_input(expression, duckdb_type)` is the SQL that turns a column of PostgreSQL's text input
  (COPY's text and CSV formats) into a value of a DuckDB type.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import duckdb
from duckdb import _seam
from sqlglot import exp

from heron.planner import (
    column_origins,
    constraint_names,
    dialect,
    foreign_keys,
    grouped_keys,
    jsonb_storage,
    pg_interval,
    pg_jsonb,
    pg_regexp,
    pg_similar,
    pg_text,
    pg_to_char,
    pg_to_date,
)
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError, SqlState

if TYPE_CHECKING:  # a name only: column_origins imports pg_catalog_types, which imports this
    from heron.planner.column_origins import Relations

# DuckDB settings that give PostgreSQL's arithmetic, ordering and result types.
SETTINGS = {
    "integer_division": "true",
    "ieee_floating_point_ops": "false",
    "default_null_order": "'nulls_last_on_asc_first_on_desc'",
    "arrow_lossless_conversion": "true",
}
UNCONSTRAINED_NUMERIC = exp.DataType.build("DECIMAL(38, 10)")
MAX_DECIMAL_DIGITS = 38


def configure(con: duckdb.DuckDBPyConnection) -> None:
    for name, value in SETTINGS.items():
        con.execute(f"SET GLOBAL {name} = {value}")


# The cast to time that takes a timestamptz too, as PostgreSQL's does: its time of day in the
# session's time zone (DuckDB's cast has no TIMESTAMPTZ -> TIME). One overload per type, so
# each binds only where its argument's type does.
TIME_MACRO = "heron_time_of"
MACROS = {TIME_MACRO: (("heron_x TIMESTAMP WITH TIME ZONE",
                        "CAST(CAST(heron_x AS TIMESTAMP) AS TIME)"),
                       ("heron_x", "CAST(heron_x AS TIME)"))}


# -- statement rewriting ------------------------------------------------------------------------

_TRIGGER = re.compile(
    r"\b(?:bytea|blob|jsonb)\b|\b(?:numeric|decimal)\b(?!\s*\()|"
    r"\b(?:varchar|character\s+varying|char|character|bpchar)\s*\(|\[\s*\]|"
    r"::\s*(?:char|bpchar|character(?!\s+varying))\b|"
    r"\b(?:(?:char_|character_|octet_|bit_|array_)?length|strpos|position|cardinality|"
    r"generate_series|round|format|jsonb?_build_object|jsonb_build_array|jsonb?_agg|jsonb?_typeof|"
    r"jsonb?_extract_path(?:_text)?|jsonb?_array_length|jsonb?_object_keys|jsonb?_each(?:_text)?|"
    r"jsonb?_array_elements(?:_text)?|jsonb_set|jsonb_strip_nulls|jsonb_pretty|to_jsonb|"
    r"every|to_hex|initcap|btrim|encode|decode|to_char|to_date|to_timestamp|extract|date_part|using|array_cat|"
    r"concat(?:_ws)?|"
    r"pow|power|ntile|percentile_cont|num_(?:non)?nulls|"
    r"regexp_match(?:es)?|regexp_split_to_table|substr(?:ing)?|array_to_string|unnest|any|all)"
    r"\s*\(|\bnatural\b|\bsimilar\b|\bbool(?:ean)?\b|#>|"
    r"\bfor\s+(?:no\s+key\s+update|update|share|key\s+share)\b|\bstored\b|\bwith\s+ties\b|"
    r"\bi?like\s+(?!'[^'\\]*'(?!'))|"  # a pattern that is not a literal without a backslash
    r"^\s*CREATE\b(?s:.*)\bCONSTRAINT\s|"  # a name given to a constraint (`constraint_names`)
    r"^\s*CREATE\b(?s:.*)\bREFERENCES\b|"  # a foreign key (`foreign_keys`)
    r"\b(?:timestamptz|timetz|time|interval|current_timestamp|localtimestamp|current_time|"
    r"localtime)\s*\(\s*\d|\btimestamp\s*\(\s*\d+\s*\)\s*with\s+time\s+zone|"  # precisions
    r"\bsymmetric\b|\b(?:array|string)_agg\s*\(\s*distinct\b|"
    r"::\s*time\b(?!\s+with\b)|\bAS\s+time\s*\)|"  # a cast to time (`TIME_MACRO`)
    r"\bgroup\s+by\b",  # maybe by a primary key (`grouped_keys`)
    re.IGNORECASE)
# jsonb's `?` operators, the integers' `#` and `^` (power) are found outside string literals:
# most AI prompts hold a `?` (and catalog queries a `^` in their patterns), and parsing for
# nothing costs an AI statement ~0.7 ms. Where an escape string's backslash or a dollar quote
# may make the literals' ends unclear, any `?` (`#`, `^`) counts.
_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")
_UNCLEAR_LITERALS = re.compile(r"\b[eE]'[^']*\\|\$(?:[A-Za-z_]\w*)?\$")
# `||` with an operand `_array_operand` knows as an array: string concatenation, the common
# `||`, parses only beside one of these words.
_ARRAY_CONCATENATION = re.compile(r"\|\|")
_ARRAY_WORDS = re.compile(r"\barray|_to_array\b|regexp_match|\[\s*\]", re.IGNORECASE)


# What turns a value into text (a cast, concat, format, `||`), and the words of what may be an
# interval (or an array: `_ARRAY_WORDS`) where no relation's column is one
# (`Relations.texted_otherwise`): only with both may a statement print one as text (`_texts`).
_TO_TEXT = re.compile(r"::\s*(?:text|varchar|character\s+varying)\b|"
                      r"\bAS\s+(?:text|varchar|character\s+varying)\s*[()]|"
                      r"\b(?:concat(?:_ws)?|format)\s*\(|\|\|", re.IGNORECASE)
_INTERVAL_WORDS = re.compile(r"\binterval\b|\bage\s*\(|justify_|timestamp|\bnow\s*\(|"
                             r"\b(?:current_|local)?time(?:tz)?\b", re.IGNORECASE)
# An interval literal PostgreSQL reads and DuckDB may not (`pg_interval.duckdb_input`).
_INTERVAL_INPUT = re.compile(r"\binterval\s*'|'\s*::\s*interval\b|\bAS\s+interval\s*\)",
                             re.IGNORECASE)
# ... and of what may be a float (a double or a real: DuckDB prints 2.0 where PostgreSQL prints 2).
_FLOAT_WORDS = re.compile(r"\b(?:float[48]?|double|real|random|sqrt|cbrt|power|pow|exp|ln|log|"
                          r"log10|avg|stddev\w*|var_\w+|variance|corr|covar_\w+|regr_\w+|"
                          r"percentile_cont|pi|degrees|radians|a?sin|a?cos|a?tan|atan2|cot)\b",
                          re.IGNORECASE)

# A query that may be SELECT ... INTO.
# An ORDER BY key's `USING <` / `USING >`, which the dialect reads as ASC / DESC.
_ORDER_USING = re.compile(r"\bUSING\s*[<>](?![=>])", re.IGNORECASE)
_SELECT_INTO = re.compile(r"^\s*(?:\(\s*)*(?:WITH|SELECT)\b.*\bINTO\b", re.IGNORECASE | re.DOTALL)


def _concatenates_arrays(sql: str) -> bool:
    """Whether `sql` may concatenate an array with `||`."""
    return _ARRAY_CONCATENATION.search(sql) is not None and _ARRAY_WORDS.search(sql) is not None


def _may_print_otherwise(sql: str,
                         relations: Relations | Callable[[], Relations] | None) -> bool:
    """Whether `sql` may turn an interval, an array or a float into text: it turns something
    into text, and names an interval (or what subtracts to one), an array, a float, or a
    relation with such a column."""
    if _TO_TEXT.search(sql) is None:
        return False
    if any(words.search(sql) for words in (_INTERVAL_WORDS, _ARRAY_WORDS, _FLOAT_WORDS)):
        return True
    found = relations() if callable(relations) else relations
    return found is not None and found.named(sql, found.texted_otherwise)


def _operator(sql: str, characters: str) -> bool:
    """Whether `sql` may use an operator spelled with one of `characters` (`?` for jsonb's,
    `#` for the integers' xor, `^`): it stands outside the string literals (stripped once)."""
    if not any(c in sql for c in characters):
        return False
    if _UNCLEAR_LITERALS.search(sql):
        return True
    outside = _STRING_LITERAL.sub("", sql)
    return any(c in outside for c in characters)


# Functions returning PostgreSQL's `integer` where DuckDB's return BIGINT (or UBIGINT).
_INTEGER_RESULTS = (exp.Length, exp.BitLength, exp.StrPosition, exp.ArraySize, exp.Ntile)
_INTEGER_RESULT_NAMES = frozenset({"octet_length", "cardinality"})
# Where a call is part of a table's definition (a CHECK, a default), not of a result column.
_DEFINITIONS = (exp.ColumnDef, exp.Constraint, exp.CheckColumnConstraint)
_T = exp.DataType.Type
_TEXT_TYPES = {_T.VARCHAR, _T.CHAR, _T.NVARCHAR, _T.NCHAR, _T.BPCHAR}
_BLANK_PADDED = dialect.BLANK_PADDED


def _referenced(relations: Relations | Callable[[], Relations] | None) -> foreign_keys.Resolve:
    """A foreign key's referenced table found among `relations`: its schema and primary key."""
    def resolve(schema: str | None, name: str) -> tuple[str | None, tuple[str, ...]] | None:
        found = relations() if callable(relations) else relations
        key = None if found is None else found.key_of(
            schema.lower() if schema else None, name.lower())
        if key is None:
            return None
        return key[0] or None, found.primary_keys.get(key, ())
    return resolve


def rewrite(sql: str, relations: Relations | Callable[[], Relations] | None = None) -> str:
    """`sql` with PostgreSQL's meaning for DuckDB (see the module docstring). `relations` (maybe
    a function, called only when a star over a join that merges columns needs them) are the
    relations the statement may read."""
    texts = _may_print_otherwise(sql, relations)
    tree = _parsed(sql, _TRIGGER, texts or _operator(sql, "?#^")
                   or _SELECT_INTO.match(sql) is not None
                   or _ORDER_USING.search(sql) is not None
                   or ("/" in sql and _INTERVAL_WORDS.search(sql) is not None)
                   or (("+" in sql or "'P" in sql or "'p" in sql)
                       and _INTERVAL_INPUT.search(sql) is not None)
                   or _concatenates_arrays(sql)
                   or _unknown_operand(sql)
                   or jsonb_storage.may_write(sql, relations)
                   or jsonb_storage.may_compare(sql, relations)
                   or _names_enum_table(sql, relations)
                   or (("||" in sql or "-" in sql) and jsonb_storage.names_jsonb_table(
                       sql, relations)))
    if tree is None:
        return sql
    rewritten: list[exp.Expression] = [tree] if _ORDER_USING.search(sql) else []  # (printed)
    if (created := _select_into(tree)) is not tree:
        rewritten.append(tree)
        tree = created
    rewritten += foreign_keys.declare(tree, _referenced(relations))
    rewritten += constraint_names.name_constraints(tree)
    # Before the casts' types become JSON: what becomes jsonb is stored normalized.
    rewritten += _jsonb_operators(tree, sql, relations)
    rewritten += (jsonb_storage.compared(tree, relations) + jsonb_storage.casts(tree)
                  + jsonb_storage.writes(tree, relations))

    def rewrite_node(node: exp.Expression) -> exp.Expression:
        new = _rewrite_node(node)
        if new is not node:
            rewritten.append(node)
        return new

    # Parents first (sqlglot's transform): a cast of a literal to numeric is decided before the
    # numeric type inside it would be widened.
    tree = tree.transform(rewrite_node, copy=False)
    rewritten += (_json_rows(tree) + _zipped_unnests(tree) + _array_concatenations(tree, sql)
                  + _pg_functions(tree, sql)
                  + _similar_to(tree) + _interval_divisions(tree) + _row_locks(tree)
                  + _percentiles(tree) + _distinct_aggregates(tree)
                  + _with_ties(tree) + _like_escapes(tree)
                  + _integer_results(tree, sql) + _series(tree, sql) + _split_tables(tree)
                  + _rounding(tree, sql) + _powers(tree, sql) + _time_parts(tree, sql)
                  + _unknown_operands(tree) + _enum_literals(tree, relations) + _outputs(tree)
                  + _null_arrays(tree)
                  + list(tree.find_all(exp.BitwiseXor))  # `#`: printed as DuckDB's xor
                  # BETWEEN SYMMETRIC: printed as two BETWEENs
                  + [b for b in tree.find_all(exp.Between) if b.args.get("symmetric")]
                  + _using_stars(tree, relations) + grouped_keys.group_by_keys(tree, relations))
    if texts:  # last: the casts to text the rewrites above made are seen too
        rewritten += _texts(tree)
    return _printed(tree) if rewritten else sql


def _parsed(sql: str, trigger: re.Pattern[str], found: bool = False) -> exp.Expression | None:
    """`sql`'s tree when `trigger` finds what a rewrite reads in it (or it was `found`
    otherwise) and sqlglot can read it."""
    if not found and not trigger.search(sql):
        return None
    try:
        return dialect.parse(sql)
    except SqlError:
        return None


def _printed(tree: exp.Expression) -> str:
    """A rewritten statement's text: in Heron's dialect for the AI planner when it calls AI
    functions, else in DuckDB's."""
    if tree.find(dialect.AIFunction, dialect.Prompt) is not None:
        return dialect.sql(tree)
    return tree.sql(dialect="duckdb")


def _rewrite_node(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Cast):
        return _rewrite_cast(node)
    if isinstance(node, exp.ColumnDef):
        return column_definition(node)
    if isinstance(node, exp.Interval) and node.unit is None and node.this.is_string and (
            (given := pg_interval.duckdb_input(node.this.name)) != node.this.name):
        return exp.Interval(this=exp.Literal.string(given))  # (`interval '-1 day +2 hours'`)
    if isinstance(node, exp.DataType) and isinstance(node.parent, exp.AlterColumn) and (
            node.arg_key == "dtype") and (declared := _declared_alter_type(node)) is not node:
        return declared
    if isinstance(node, _TIME_FUNCTIONS) and node.this is not None:
        return type(node)()  # (the clock's microseconds: see _MICROSECOND_TYPES)
    if isinstance(node, exp.DataType):
        if node.this in _MICROSECOND_TYPES and node.expressions:
            return exp.DataType(this=node.this)
        if node.this == _T.DECIMAL and not node.expressions:
            return UNCONSTRAINED_NUMERIC.copy()
        if node.this == _T.JSONB:
            return exp.DataType.build("JSON")
    return node


def _rewrite_cast(cast: exp.Cast) -> exp.Expression:
    to, value = cast.to, cast.this.unnest()  # (a literal in parentheses is one: Django's)
    literal = isinstance(value, exp.Literal)
    if to.this == _T.DECIMAL and not to.expressions:
        if literal:
            return exp.Cast(this=value, to=_literal_decimal(value.name))
        if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
            return exp.Cast(this=value, to=_literal_decimal(value.this.name))
    if literal and value.is_string and to.this in (_T.VARBINARY, _T.BINARY, _T.BLOB):
        return exp.Cast(this=exp.Literal.string(_blob_literal(parse_bytea(value.name))),
                        to=exp.DataType.build("BLOB"))
    if literal and value.is_string and to.this == _T.BOOLEAN and (
            word := value.name.strip().lower()) in _BOOLEAN_WORDS:
        return exp.Boolean(this=_BOOLEAN_WORDS[word])  # DuckDB's cast reads fewer words
    if literal and value.is_string and to.this == _T.INTERVAL and (
            (given := pg_interval.duckdb_input(value.name)) != value.name):
        return exp.Cast(this=exp.Literal.string(given), to=to)
    if literal and value.is_string and to.this == _T.ARRAY:
        items = parse_array_literal(value.name, lambda text: text)
        return exp.Cast(this=_array_expression(items), to=to)
    length = to.expressions[0] if to.expressions else (
        exp.Literal.number(1) if to.this in (_T.CHAR, _T.NCHAR) else None)  # char is char(1)
    if to.this in _TEXT_TYPES and length is not None:
        text = exp.Cast(this=value, to=exp.DataType.build("VARCHAR"))
        truncated = exp.Left(this=text, expression=length.copy())
        if to.this in _BLANK_PADDED:
            # char(n) without its trailing blanks, which are insignificant to length, `||`,
            # casts to text and comparisons; they are sent (`column_origins`: bpchar(n)).
            return exp.Anonymous(this="rtrim", expressions=[truncated, exp.Literal.string(" ")])
        return truncated
    if to.this == _T.TIME and not literal and not isinstance(
            value, exp.Placeholder | exp.Parameter) and cast.find_ancestor(*_DEFINITIONS) is None:
        # (a parameter keeps its time type; a table's definition names no shared macro)
        return exp.Anonymous(this=TIME_MACRO, expressions=[cast.this])
    return cast


# Types whose precision (fractional digits of seconds) DuckDB's grammar takes no number for:
# theirs keep microseconds, PostgreSQL's most (timestamp(p) is DuckDB's too: _S, _MS, ...).
_MICROSECOND_TYPES = frozenset({_T.TIMESTAMPTZ, _T.TIME, _T.TIMETZ, _T.INTERVAL})
# The clocks that take a precision in PostgreSQL (`current_timestamp(0)`).
_TIME_FUNCTIONS = (exp.CurrentTimestamp, exp.Localtimestamp, exp.CurrentTime, exp.Localtime)
# What a cast to text of which is never an interval's.
_NOT_INTERVALS = (exp.Literal, exp.Null, exp.Placeholder, exp.Parameter, exp.Boolean)


# Functions returning an interval (`_interval_operand`).
_INTERVAL_FUNCTIONS = frozenset({"age", "justify_hours", "justify_days", "justify_interval",
                                 "make_interval"})


def _interval_operand(node: exp.Expression) -> bool:
    """Whether `node` is an interval by its syntax: a literal, a cast, a function of intervals."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Interval):
        return True
    if isinstance(node, exp.Cast):
        return node.to.this == _T.INTERVAL
    return isinstance(node, exp.Func) and (
        node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower() in (
        _INTERVAL_FUNCTIONS)


def _float_cast(node: exp.Expression) -> bool:
    """Whether `node` is a cast to a float (double precision, real)."""
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Cast) and node.to.this in (_T.DOUBLE, _T.FLOAT)


def _texts(tree: exp.Expression) -> list[exp.Expression]:
    """What turns an interval, an array or a float into text, as `pg_text.TEXT_MACRO` of it:
    DuckDB's cast prints them otherwise than PostgreSQL (`-1 day`, `2 months`, `[1, 2]`, `2.0`).
    That is each cast to text (or varchar) of what may be one, each argument of concat and
    concat_ws (which cast theirs to text), and each operand of `||` that is an interval or a
    float by its syntax (only its type would tell of a column, and `||` of lists must stay
    theirs). The operands changed."""
    operands = [cast.this for cast in tree.find_all(exp.Cast)
                if type(cast) is exp.Cast and cast.to.this in _TEXT_TYPES | {_T.TEXT}
                and not cast.to.expressions]
    for call in tree.find_all(exp.Concat, exp.ConcatWs):
        operands += [e for e in call.expressions if not _is_output(e)]
    operands += [side for pipe in tree.find_all(exp.DPipe)
                 for side in (pipe.this, pipe.expression)
                 if _interval_operand(side) or _float_cast(side)]
    changed = []
    for operand in operands:
        if isinstance(operand, _NOT_INTERVALS):
            continue
        cast = operand.parent
        if isinstance(cast, exp.Cast) and cast.this is operand:
            cast.replace(exp.Anonymous(this=pg_text.TEXT_MACRO, expressions=[operand]))
        else:
            _pass_through(operand, pg_text.TEXT_MACRO)
        changed.append(operand)
    return changed


def _outputs(tree: exp.Expression) -> list[exp.Expression]:
    """Each argument of concat and concat_ws that is no literal as `pg_text.OUTPUT_MACRO` of it:
    they print a value as its type's output function does (a boolean `t`, DuckDB's `true`); the
    arguments changed. (format()'s are `pg_format`'s.)"""
    changed = []
    for call in tree.find_all(exp.Concat, exp.ConcatWs):
        for argument in list(call.expressions):
            if isinstance(argument, exp.Literal | exp.Null) or _is_output(argument):
                continue
            _pass_through(argument, pg_text.OUTPUT_MACRO)
            changed.append(argument)
    return changed


def _pass_through(node: exp.Expression, function: str) -> None:
    """Put `function(node)` in `node`'s place, in place (the holder first: `node` moves into
    the call taking its place)."""
    holder = exp.null()
    node.replace(holder)
    holder.replace(exp.Anonymous(this=function, expressions=[node]))


def _is_output(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name == pg_text.OUTPUT_MACRO


def length_casts(tree: exp.Expression) -> None:
    """Make each cast to varchar(n) or char(n) in `tree` (in place) what `rewrite` makes it,
    for a rewrite that prints its tree for DuckDB, whose text keeps no length of a type."""
    for cast in list(tree.find_all(exp.Cast)):
        if type(cast) is exp.Cast and cast.to.this in _TEXT_TYPES and (
                new := _rewrite_cast(cast)) is not cast:
            cast.replace(new)


def _interval_divisions(tree: exp.Expression) -> list[exp.Expression]:
    """Each `x / n` of an interval `x` by its syntax as DuckDB's `"/"` function: the
    integer_division setting (PostgreSQL's `5 / 2`) makes the operator `//`, which has no
    interval form (42883), while the function divides each field as PostgreSQL does. The
    divisions changed."""
    changed = []
    for division in list(tree.find_all(exp.Div)):
        if _interval_operand(division.this):
            _take_place(division, "?column?").replace(exp.Anonymous(
                this=exp.to_identifier("/", quoted=True),
                expressions=[division.this, division.expression]))
            changed.append(division)
    return changed


def _similar_to(tree: exp.Expression) -> list[exp.Expression]:
    """Each `x SIMILAR TO p [ESCAPE e]` as regexp_full_match of `p`'s regular expression
    (`pg_similar`), computed here when `p` and `e` are constants; the nodes changed (an
    operator's column is PostgreSQL's unnamed one)."""
    changed = []
    for similar in list(tree.find_all(exp.SimilarTo)):
        node: exp.Expression = similar
        escape: exp.Expression = exp.Literal.string(pg_similar.DEFAULT_ESCAPE)
        if isinstance(similar.parent, exp.Escape) and similar.arg_key == "this":
            node, escape = similar.parent, similar.parent.expression
        pattern = similar.expression
        if all(isinstance(e, exp.Literal) and e.is_string for e in (pattern, escape)):
            regex: exp.Expression = exp.Literal.string(pg_similar.regex(pattern.name, escape.name))
        else:
            regex = exp.Anonymous(this=pg_similar.FUNCTION, expressions=[pattern, escape])
        _take_place(node, "?column?").replace(exp.Anonymous(
            this="regexp_full_match", expressions=[similar.this, regex]))
        changed.append(node)
    return changed


# What an operand of `||` is by its syntax alone (`_array_operand`): arrays are made by these
# nodes, these functions (some already rewritten into DuckDB's list functions) and casts to an
# array type; elements are constants and casts to other types.
_ARRAY_NODES = (exp.Array, exp.ArrayConcat, exp.ArrayAppend, exp.ArrayPrepend, exp.ArrayAgg,
                exp.StringToArray)
_ARRAY_FUNCTIONS = frozenset({"list_concat", "list_append", "list_prepend", "array_remove",
                              "array_replace", "regexp_split_to_array", "regexp_match"})


def _array_operand(node: exp.Expression) -> bool | None:
    """Whether an operand of `||` is an array (True) or an element (False) by its syntax; None
    when only its type would tell (a column, a parameter, most calls) or it is a string
    constant (PostgreSQL reads one beside an array as an array literal)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, _ARRAY_NODES) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in _ARRAY_FUNCTIONS):
        return True
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
        return node.to.this == _T.ARRAY
    value = node.this if isinstance(node, exp.Neg) else node
    if isinstance(value, exp.Boolean) or (isinstance(value, exp.Literal) and not value.is_string):
        return False
    return None


def _array_concatenations(tree: exp.Expression, sql: str) -> list[exp.Expression]:
    """Each `a || b` that concatenates arrays as PostgreSQL does (its anycompatiblearray
    operators), innermost first: an array and an element are list_append / list_prepend (DuckDB's
    `||` refuses them), two arrays list_concat (DuckDB's `||` of a NULL array is NULL,
    PostgreSQL's the other array). An untyped NULL beside an array is an array, as PostgreSQL
    resolves it. Only where one side is an array by its syntax and the other's kind is known
    (`_array_operand`); the rest is DuckDB's `||`. array_cat as PostgreSQL's too (`_array_cat`).
    The operators and calls changed (an operator named `?column?`)."""
    changed = []
    for node in reversed(list(tree.find_all(exp.DPipe))):
        sides = [node.this, node.expression]
        arrays = [_array_operand(side) for side in sides]
        if True not in arrays or any(array is None and not isinstance(side, exp.Null)
                                     for array, side in zip(arrays, sides, strict=True)):
            continue
        value = _array_cat(*sides) if False not in arrays else exp.Anonymous(
            this="list_append" if arrays[0] else "list_prepend", expressions=sides)
        _take_place(node, "?column?").replace(value)
        changed.append(node)
    for call in reversed(list(tree.find_all(exp.ArrayConcat))):
        if len(args := call_arguments(call)) == 2:
            _take_place(call, _call_name(call, sql)).replace(_array_cat(*args))
            changed.append(call)
    return changed


def _array_cat(first: exp.Expression, second: exp.Expression) -> exp.Expression:
    """PostgreSQL's array_cat (`||` of two arrays): NULL only where both arrays are (DuckDB's
    list_concat is [] then; a constructor is never NULL, and an AI call is not copied)."""
    concatenated = exp.Anonymous(this="list_concat", expressions=[first, second])
    if any(isinstance(side, exp.Array) or _asks_ai(side) for side in (first, second)):
        return concatenated
    return exp.Case(ifs=[exp.If(this=exp.Is(this=first.copy(), expression=exp.Null()),
                                true=second.copy())], default=concatenated)


def _select_into(tree: exp.Expression) -> exp.Expression:
    """`SELECT ... INTO [TEMP] t ...` as PostgreSQL reads it, `CREATE [TEMP] TABLE t AS SELECT
    ...` (DuckDB has no SELECT INTO); any other statement as it is."""
    first = _first_select(tree) if isinstance(tree, exp.Query) else None
    into = None if first is None else first.args.get("into")
    if into is None:
        return tree
    first.set("into", None)
    temporary = into.args.get("temporary")
    return exp.Create(this=into.this, kind="TABLE", expression=tree, properties=exp.Properties(
        expressions=[exp.TemporaryProperty()]) if temporary else None)


def _integer_results(tree: exp.Expression, sql: str) -> list[exp.Expression]:
    """Wrap each call of `_INTEGER_RESULTS` in a cast to INTEGER (inner calls first, after the
    other rewrites reached their arguments), `octet_length` of anything but BLOB and BIT
    counting the UTF-8 bytes of its text; the calls wrapped (`_take_place` names them)."""
    calls = [node for node in tree.find_all(exp.Func) if (isinstance(node, _INTEGER_RESULTS) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in _INTEGER_RESULT_NAMES))
        and node.find_ancestor(*_DEFINITIONS) is None]
    for call in reversed(calls):  # breadth first, reversed: the innermost first
        value = call
        if isinstance(call, exp.Anonymous) and call.name.lower() == "octet_length" and len(
                call.expressions) == 1 and not _asks_ai(call):
            value = _octet_length(call.expressions[0])
        name = _call_name(call, sql)
        if isinstance(call.parent, exp.Window):  # ntile(n) OVER (...): the window's value
            value = call = call.parent
        place = _take_place(call, name)  # (before the cast takes `value` out of the tree)
        cast = exp.cast(value, "INTEGER", copy=False)
        if isinstance(call, exp.ArraySize) and call.expression is not None:
            # array_length(a, dim) of an empty array is NULL (it has no dimension), DuckDB's 0
            cast = exp.Nullif(this=cast, expression=exp.Literal.number(0))
        place.replace(cast)
    return calls


# PostgreSQL's names of calls sqlglot keeps no spelling of (special syntax).
_SPELLED: dict[type, str] = {exp.StrPosition: "position", exp.JSONArrayAgg: "json_agg",
                             exp.Decode: "decode"}
_RENAMED = {"json_build_object": "json_object", "jsonb_build_object": "json_object",
            "jsonb_build_array": "json_array", "jsonb_agg": "json_group_array",
            "every": "bool_and"}
# jsonb's existence operators, as the functions behind them (`pg_jsonb.FUNCTIONS`).
_EXISTENCE = {exp.JSONBContainsTopKey: "jsonb_exists", exp.JSONBContainsAnyTopKeys:
              "jsonb_exists_any", exp.JSONBContainsAllTopKeys: "jsonb_exists_all"}
# jsonb's path operators #> and #>>, as `pg_jsonb`'s functions behind them.
_PATHS = {exp.JSONBExtract: "json_extract_path", exp.JSONBExtractScalar: "json_extract_path_text"}
_PATH_FUNCTIONS = frozenset({"jsonb_extract_path", "jsonb_extract_path_text"})
_JSON_PATH_NAME = re.compile(r"\bjson_extract_path", re.IGNORECASE)
_JSON_PATHS = {exp.JSONExtract: "json_extract_path",
               exp.JSONExtractScalar: "json_extract_path_text"}
# Set-returning functions over json and jsonb (`pg_jsonb.VALUE_FUNCTIONS`, a list of rows) ->
# their columns; those of records (two columns) only in FROM.
_ROW_FUNCTIONS = {f"{kind}_{name}": columns for kind in ("json", "jsonb") for name, columns in (
    ("object_keys", None), ("array_elements", ("value",)), ("array_elements_text", ("value",)),
    ("each", ("key", "value")), ("each_text", ("key", "value")))}
_RECORD_ROWS = frozenset(name for name in _ROW_FUNCTIONS if "_each" in name)
# json_type's answers (DuckDB's type names) as jsonb_typeof's.
_JSON_TYPES = {"OBJECT": "object", "ARRAY": "array", "VARCHAR": "string", "BOOLEAN": "boolean",
               "NULL": "null", "UBIGINT": "number", "BIGINT": "number", "HUGEINT": "number",
               "DOUBLE": "number"}


def _pg_functions(tree: exp.Expression, sql: str) -> list[exp.Expression]:
    """PostgreSQL's functions that DuckDB lacks or reads otherwise, in DuckDB's terms (the
    module docstring lists them), innermost first; the calls changed."""
    changed = []
    for call in reversed(list(tree.find_all(exp.Func))):
        value = _pg_function(call, sql)
        if value is None:
            continue
        # an operator's column is PostgreSQL's unnamed one
        if type(call) in _EXISTENCE or type(call) in _PATHS:
            name = "?column?"
        elif _json_path_call(call, sql):  # (no spelling kept)
            name = _JSON_PATHS[type(call)] + "()"
        else:
            name = _call_name(call, sql)
        _take_place(call, name).replace(value)
        changed.append(call)
    return changed


def _pg_function(call: exp.Func, sql: str) -> exp.Expression | None:
    """What computes `call` as PostgreSQL does, if DuckDB would not (None: it does); never
    `call` itself, whose place it takes."""
    name = call.name.lower() if isinstance(call, exp.Anonymous) else None
    if name in _RENAMED:
        renamed = exp.Anonymous(this=_RENAMED[name], expressions=call.expressions)
        if name == "jsonb_agg" and len(call.expressions) == 1:
            renamed = _json_agg(call.expressions[0]) or renamed
        # jsonb is stored normalized (`jsonb_storage`): what computes one too (not yet an
        # aggregate over a window, whose OVER would then follow the call)
        return exp.Anonymous(this=pg_jsonb.NORMALIZE, expressions=[renamed]) if (
            name.startswith("jsonb_") and not isinstance(call.parent, exp.Window)) else renamed
    if name in pg_regexp.NAMES and not _asks_ai(call) and not _condition(call):
        return pg_regexp.call(name, list(call.expressions))
    if type(call) in _PATHS and not _asks_ai(call.expression):
        # jsonb's text is normalized: json's walk (which keeps the text) serves both
        return _json_call(_PATHS[type(call)], call.this, _path_array(call.expression))
    if _json_path_call(call, sql) and (steps := _path_steps(call)) is not None:
        # json_extract_path(_text), which sqlglot reads as DuckDB's json_extract
        return _json_call(_JSON_PATHS[type(call)], call.this, exp.Array(expressions=steps))
    if name in _PATH_FUNCTIONS and call.expressions:
        value, *steps = call.expressions
        return _json_call(name, value, exp.Array(expressions=steps))
    if name in ("jsonb_array_length", "json_array_length") and len(call.expressions) == 1:
        return _json_call(name, *call.expressions)
    if name in _BUILDING and (
            _BUILDING[name][0] <= len(call.expressions) <= _BUILDING[name][0]
            + len(_BUILDING[name][1])):
        given = len(call.expressions) - _BUILDING[name][0]
        args = list(call.expressions)
        if name == "jsonb_set":  # its path: a string literal read as a text[] literal
            args[1] = _path_array(args[1])
        return _json_call(name, *args, *_BUILDING[name][1][given:])
    if name == "to_jsonb" and len(call.expressions) == 1:
        return exp.Anonymous(this=pg_jsonb.NORMALIZE, expressions=[
            exp.Anonymous(this="to_json", expressions=call.expressions)])
    if name in _ROW_FUNCTIONS and name not in _RECORD_ROWS and len(call.expressions) == 1 and (
            call.find_ancestor(exp.Table) is None):  # in FROM: `_json_rows`
        return exp.Explode(this=_json_call(name, *call.expressions))
    if type(call) in _EXISTENCE:
        keys = call.expression
        if isinstance(keys, exp.Literal) and keys.is_string and not isinstance(
                call, exp.JSONBContainsTopKey):  # '{a,b}': text[]
            keys = _array_expression(parse_array_literal(keys.name, lambda text: text))
        return exp.Anonymous(this=_EXISTENCE[type(call)], expressions=[call.this, keys])
    if name in ("jsonb_typeof", "json_typeof") and len(call.expressions) == 1:
        # no ELSE: NULL for NULL, as PostgreSQL's
        return exp.Case(this=exp.Anonymous(this="json_type", expressions=call.expressions),
                        ifs=[exp.If(this=exp.Literal.string(duckdb_name),
                                    true=exp.Literal.string(pg_name))
                             for duckdb_name, pg_name in _JSON_TYPES.items()])
    if isinstance(call, exp.JSONArrayAgg) and not any(
            value for key, value in call.args.items() if key != "this"):
        return _json_agg(call.this) or exp.Anonymous(this="json_group_array",
                                                     expressions=[call.this])
    if isinstance(call, exp.Format) and isinstance(call.this, exp.Literal) and (
            call.this.is_string):
        return pg_format(call.this.name, list(call.expressions))
    if isinstance(call, exp.Substring):
        return _substring(call)
    if isinstance(call, exp.Encode | exp.Decode):
        return _encoded(call)
    if name == "to_char" and len(call.expressions) == 2 and isinstance(
            call.expressions[1], exp.Literal) and not _asks_ai(call):
        value, template = call.expressions
        if pg_to_char.number_template(template.name):  # (no date pattern is one)
            return exp.Anonymous(this=pg_to_char.FUNCTION, expressions=[
                exp.cast(value.copy(), "VARCHAR"), template.copy()])
        return _to_char(value, template.name)
    if name == "to_date" and len(call.expressions) == 2:
        return exp.cast(exp.Anonymous(this=pg_to_date.FUNCTION, expressions=[
            exp.cast(argument, "VARCHAR") for argument in call.expressions]), "DATE")
    if name == "to_timestamp" and len(call.expressions) == 2:
        return exp.cast(exp.Anonymous(this=pg_to_date.TIMESTAMP_FUNCTION, expressions=[
            exp.cast(argument, "VARCHAR") for argument in call.expressions]), "TIMESTAMPTZ")
    if isinstance(call, exp.Hex) and _function_name(call, sql) == "to_hex":  # not upper(...)
        # to_hex(integer) of a negative one is its 32 bits' two's complement (DuckDB's: 64)
        value = call.this
        typed = exp.Anonymous(this="typeof", expressions=[value.copy()])
        thirty_two_bits = exp.In(this=typed, expressions=[
            exp.Literal.string(t) for t in ("TINYINT", "SMALLINT", "INTEGER")])
        masked = exp.BitwiseAnd(this=exp.cast(value.copy(), "BIGINT"),
                                expression=exp.Literal.number(0xFFFFFFFF))
        return exp.Lower(this=exp.Hex(this=exp.Case(ifs=[exp.If(
            this=thirty_two_bits, true=masked)], default=value.copy())))
    if isinstance(call, exp.ArrayToString) and call.args.get("null") is not None:
        return call.copy()  # sqlglot spells the NULLs' text out as DuckDB's list_transform
    if isinstance(call, exp.Initcap):  # (sqlglot adds its delimiters; PostgreSQL takes none)
        return _initcap(call.this)
    if isinstance(call, exp.Trim) and _function_name(call, sql) == "btrim":
        return call.copy()  # sqlglot spells it out for DuckDB: only its name to keep
    if name in ("num_nulls", "num_nonnulls") and call.expressions and not _asks_ai(call):
        # (variadic "any": one count per argument, whatever its type)
        counts = [exp.cast(exp.Is(this=a.copy(), expression=exp.Null()) if name == "num_nulls"
                           else exp.Not(this=exp.Is(this=a.copy(), expression=exp.Null())),
                           "INTEGER") for a in call.expressions]
        return exp.Paren(this=functools.reduce(
            lambda total, count: exp.Add(this=total, expression=count), counts))
    return None


# What PostgreSQL's initcap counts as a word's letter or digit (iswalnum of a UTF-8 locale):
# letters, decimal digits, letter numbers and spacing marks. Of the 190,000 code points below
# U+30000, PostgreSQL 15 (C.UTF-8) counts 1,198 otherwise: combining marks of Indic, Hebrew and
# other scripts that Unicode counts as alphabetic (RE2 has no class of them).
_WORD_CHARACTER = r"[\pL\p{Nd}\p{Nl}\p{Mc}]"


def _initcap(value: exp.Expression) -> exp.Expression:
    """PostgreSQL's initcap(value): each word's first letter upper case, the rest lower case,
    where a word is a run of `_WORD_CHARACTER`s (sqlglot's spelling out for DuckDB counts only
    ASCII punctuation and blanks between words: `o’neil`, `a—b` were one word)."""
    runs = exp.Anonymous(this="regexp_extract_all", expressions=[
        value.copy(), exp.Literal.string(f"{_WORD_CHARACTER}+|[^{_WORD_CHARACTER[1:-1]}]+")])
    run = exp.column("heron_run")
    capitalized = exp.DPipe(
        this=exp.Upper(this=exp.Left(this=run, expression=exp.Literal.number(1))),
        expression=exp.Lower(this=exp.Substring(this=run.copy(), start=exp.Literal.number(2))))
    word = exp.Anonymous(this="regexp_matches", expressions=[
        run.copy(), exp.Literal.string(f"^{_WORD_CHARACTER}")])
    each = exp.Lambda(this=exp.If(this=word, true=capitalized, false=exp.Lower(this=run.copy())),
                      expressions=[exp.to_identifier("heron_run")])
    return exp.Anonymous(this="array_to_string", expressions=[
        exp.Anonymous(this="list_transform", expressions=[runs, each]), exp.Literal.string("")])


def _condition(node: exp.Expression) -> bool:
    """Whether `node` stands where PostgreSQL takes a boolean only and no set-returning function:
    in WHERE or HAVING, or as an operand of NOT, AND or OR, or a CASE's test. There a
    regexp_matches is DuckDB's boolean test, not PostgreSQL's (which PostgreSQL refuses there)."""
    parent = node.parent
    if isinstance(parent, exp.Not | exp.And | exp.Or) or (
            isinstance(parent, exp.If) and node.arg_key == "this"):
        return True
    return isinstance(node.find_ancestor(exp.Where, exp.Having, exp.Select), exp.Where | exp.Having)


def _substring(call: exp.Substring) -> exp.Expression | None:
    """PostgreSQL's substring(s, start [, count]): the characters at positions start to
    start + count - 1 that the string has (DuckDB counts a start below 1 from the end), a
    negative count an error (22011); None where DuckDB's agrees (a start and count it sees
    are positive constants) or a bound holds an AI call, which would be copied."""
    start, count = call.args.get("start"), call.args.get("length")
    if isinstance(start, exp.Literal) and start.is_string and count is None:
        return _substring_match(call.this, start)
    if start is None or _asks_ai(start) or (count is not None and _asks_ai(count)) or (
            _positive_literal(start) and (count is None or _positive_literal(count))):
        return None
    first = _at_least(start, 1)
    if count is None:
        return exp.Substring(this=call.this, start=first)
    length = _at_least(exp.Sub(this=exp.Add(this=start.copy(), expression=exp.Paren(
        this=count.copy())), expression=first.copy()), 0)
    return exp.Case(ifs=[exp.If(
        this=exp.LT(this=count.copy(), expression=exp.Literal.number(0)),
        true=exp.Anonymous(this="error", expressions=[
            exp.Literal.string("negative substring length not allowed")]))],
        default=exp.Substring(this=call.this, start=first, length=length))


def _substring_match(value: exp.Expression, pattern: exp.Literal) -> exp.Expression:
    """PostgreSQL's substring(s FROM pattern) of a POSIX regular expression: the part of `s`
    its first parenthesized group matched, or the whole match without a group; NULL without a
    match (DuckDB's regexp_extract gives '')."""
    try:
        group = 1 if re.compile(pattern.name).groups else 0
    except re.error:
        group = 0  # (DuckDB's error then reports the pattern)
    return exp.Case(ifs=[exp.If(
        this=exp.Anonymous(this="regexp_matches", expressions=[value.copy(), pattern.copy()]),
        true=exp.Anonymous(this="regexp_extract", expressions=[
            value.copy(), pattern.copy(), exp.Literal.number(group)]))])


def _at_least(value: exp.Expression, bound: int) -> exp.Expression:
    """`value`, or `bound` where it is less (NULL stays NULL: DuckDB's greatest skips it)."""
    return exp.Case(ifs=[exp.If(this=exp.LT(this=value.copy(), expression=exp.Literal.number(
        bound)), true=exp.Literal.number(bound))], default=value.copy())


def _positive_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_int and int(node.name) > 0


# jsonb functions `pg_jsonb` computes (`VALUE_FUNCTIONS`): name -> (the arguments a call must
# give, the defaults of those it may leave out).
_BUILDING = {"jsonb_set": (3, (exp.true(),)), "jsonb_strip_nulls": (1, ()),
             "jsonb_pretty": (1, ())}


def _jsonb_operators(tree: exp.Expression, sql: str,
                     relations: Relations | Callable[[], Relations] | None
                     ) -> list[exp.Expression]:
    """jsonb's `||` (concatenation; DuckDB's concatenates the texts) and `-` (deletion of a
    key, of keys, or of an array's element), where an operand is jsonb as `column_origins`
    declares it (a cast to jsonb, a jsonb column, `->` of one), as `pg_jsonb`'s functions;
    before the casts to jsonb are rewritten. The operators changed. (Only a statement that
    names jsonb or a table with a jsonb column is looked at: each operand's origin costs a
    resolution of the query's sources.)"""
    changed: list[exp.Expression] = []
    operators = list(tree.find_all(exp.DPipe, exp.Sub))
    if not operators or ("jsonb" not in sql.lower()
                         and not jsonb_storage.names_jsonb_table(sql, relations)):
        return changed
    for node in operators:
        left, right = node.this, node.expression
        if isinstance(node, exp.DPipe):
            if not (jsonb_storage.jsonb_valued(left, relations)
                    or jsonb_storage.jsonb_valued(right, relations)):
                continue
            call = _json_call("jsonb_concat", left, right)
        else:
            if not jsonb_storage.jsonb_valued(left, relations):
                continue
            index = right.this if isinstance(right, exp.Neg) else right
            if isinstance(index, exp.Literal) and not index.is_string:
                call = _json_call("jsonb_delete_index", left, right)
            elif isinstance(right, exp.Array) or (
                    isinstance(right, exp.Cast) and right.to.is_type(_T.ARRAY)):
                call = _json_call("jsonb_delete_keys", left, right)
            else:
                call = _json_call("jsonb_delete", left, right)
        _take_place(node, "?column?").replace(call)
        changed.append(node)
    return changed


def _json_call(name: str, *args: exp.Expression) -> exp.Expression:
    """A call of `pg_jsonb`'s function for PostgreSQL's `name` (`pg_jsonb.VALUE_FUNCTIONS`)."""
    return exp.Anonymous(this=pg_jsonb.PREFIX + name, expressions=list(args))


def _json_path_call(call: exp.Func, sql: str) -> bool:
    """Whether `call` is json_extract_path(_text), which sqlglot reads as json_extract (`->`
    is one too, of JSON types only)."""
    return isinstance(call, exp.JSONExtract | exp.JSONExtractScalar) and not call.args.get(
        "only_json_types") and _JSON_PATH_NAME.search(sql) is not None


def _path_steps(call: exp.JSONExtract | exp.JSONExtractScalar) -> list[exp.Expression] | None:
    """The path arguments of json_extract_path(_text) (sqlglot makes a JSON path of constant
    ones); None for a path of parts no argument gives."""
    path = call.expression
    if not isinstance(path, exp.JSONPath):
        return [path, *call.expressions]
    steps: list[exp.Expression] = []
    for part in path.expressions[1:]:
        if not isinstance(part, exp.JSONPathKey | exp.JSONPathSubscript) or isinstance(
                part.this, exp.Expression):
            return None
        steps.append(exp.Literal.string(str(part.this)))
    return steps


def _path_array(path: exp.Expression) -> exp.Expression:
    """A path operand of #> or #>> as text[]: a string literal read as PostgreSQL's array
    literal, anything else cast."""
    if isinstance(path, exp.Literal) and path.is_string:
        return _array_expression(parse_array_literal(path.name, lambda text: text))
    if isinstance(path, exp.Array):
        return path
    return exp.cast(path, "VARCHAR[]")


def _json_rows(tree: exp.Expression) -> list[exp.Expression]:
    """Each set-returning json function in FROM (`_ROW_FUNCTIONS`) as the derived table of its
    rows, named as PostgreSQL names them (the function; its columns, or the function for one
    of scalars), its arguments free to read the tables before it (DuckDB joins laterally); the
    tables changed."""
    changed = []
    for table in list(tree.find_all(exp.Table)):
        call = table.this
        name = call.name.lower() if isinstance(call, exp.Anonymous) else ""
        if name not in _ROW_FUNCTIONS or len(call.expressions) != 1 or table.args.get(
                "ordinality"):  # WITH ORDINALITY: not yet (DuckDB then finds no function)
            continue
        rows: exp.Expression = exp.Explode(this=_json_call(name, *call.expressions))
        if name in _RECORD_ROWS:
            rows.set("expressions", [exp.PropertyEQ(this=exp.to_identifier("recursive"),
                                                    expression=exp.true())])
        else:
            rows = exp.alias_(rows, (_ROW_FUNCTIONS[name] or (name,))[0], quoted=True)
        alias = table.args.get("alias")
        if alias is None:
            alias = exp.TableAlias(this=exp.to_identifier(name, quoted=True))
        elif name not in _RECORD_ROWS and not alias.args.get("columns"):
            # a function of scalars: its one column takes the alias's name, as PostgreSQL's
            alias = exp.TableAlias(this=alias.this.copy(), columns=[alias.this.copy()])
        table.replace(exp.Subquery(this=exp.select(rows), alias=alias.copy()))
        changed.append(table)
    return changed


def _zipped_unnests(tree: exp.Expression) -> list[exp.Expression]:
    """Each unnest of several arrays in FROM (PostgreSQL's: their elements side by side, the
    shorter ones padded with NULLs, which DuckDB's unnest of one list lacks) as the derived
    table of one unnest per array, which DuckDB's select list pads so; WITH ORDINALITY as one
    more column numbering the rows. Named as the alias names them, else `unnest`; the unnests
    changed. (Django's bulk_create inserts `SELECT * FROM unnest(a, b, c)`.)"""
    changed = []
    for unnest in list(tree.find_all(exp.Unnest)):
        arrays = unnest.expressions
        if len(arrays) < 2 or not isinstance(unnest.parent, exp.From | exp.Join):
            continue
        alias = unnest.args.get("alias")
        given = [c.name for c in alias.columns] if alias is not None else []
        names = given + ["unnest"] * (len(arrays) - len(given))
        items = [exp.alias_(exp.Unnest(expressions=[array.copy()]), name, quoted=True)
                 for array, name in zip(arrays, names, strict=False)]
        offset = unnest.args.get("offset")  # (False, or the ordinality column's name)
        if offset:  # WITH ORDINALITY: 1 to the longest array's length
            lengths = [exp.Coalesce(this=exp.Anonymous(this="len", expressions=[a.copy()]),
                                    expressions=[exp.Literal.number(0)]) for a in arrays]
            longest = exp.Greatest(this=lengths[0], expressions=lengths[1:])
            count = exp.Anonymous(this="range", expressions=[
                exp.Literal.number(1), exp.Add(this=longest, expression=exp.Literal.number(1))])
            name = offset.name if isinstance(offset, exp.Identifier) else "ordinality"
            items.append(exp.alias_(exp.Unnest(expressions=[count]), name, quoted=True))
        table = alias.this.copy() if alias is not None and alias.this else exp.to_identifier(
            "unnest", quoted=True)
        unnest.replace(exp.Subquery(this=exp.select(*items), alias=exp.TableAlias(this=table)))
        changed.append(unnest)
    return changed


def _json_agg(argument: exp.Expression) -> exp.Expression | None:
    """json_agg / jsonb_agg of `argument` with ORDER BY or DISTINCT inside the call, which
    DuckDB's json_group_array (a macro) refuses: the JSON of the ordered (distinct) list; None
    for a plain argument."""
    if not isinstance(argument, exp.Order | exp.Distinct) or argument.find_ancestor(exp.Window):
        return None
    return exp.Anonymous(this="to_json", expressions=[exp.ArrayAgg(this=argument)])


def _encoded(call: exp.Encode | exp.Decode) -> exp.Expression | None:
    """PostgreSQL's encode(bytea, format) / decode(text, format) for 'hex' and 'base64' (None
    for another format, which DuckDB then refuses)."""
    charset = call.args.get("charset")
    if not isinstance(charset, exp.Literal) or charset.name.lower() not in ("hex", "base64"):
        return None
    value, newline = call.this.copy(), exp.Anonymous(this="chr", expressions=[
        exp.Literal.number(10)])

    def fn(name: str, *args: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this=name, expressions=list(args))

    if isinstance(call, exp.Decode):  # PostgreSQL's base64 input may hold line breaks
        return fn("unhex", value) if charset.name.lower() == "hex" else fn(
            "from_base64", fn("replace", value, newline, exp.Literal.string("")))
    if charset.name.lower() == "hex":
        return exp.Lower(this=exp.Hex(this=value))
    lines = fn("regexp_replace", fn("to_base64", value), exp.Literal.string("(.{76})"),
               exp.DPipe(this=exp.Literal.string("\\1"), expression=newline.copy()),
               exp.Literal.string("g"))
    return fn("rtrim", lines, newline.copy())


# to_char's template patterns for dates and times, longest first, and what prints each: a
# strftime field, for a name with ^ / _ for upper / lower case and the width it is blank-padded
# to (an FM prefix drops the padding, and a number's leading zeros); or a number computed
# (`_TO_CHAR_COMPUTED`).
_TO_CHAR_PATTERNS = (
    ("IYYY", "%G"), ("FF1", "ff1"), ("FF2", "ff2"), ("FF3", "ff3"), ("FF4", "ff4"),
    ("FF5", "ff5"), ("FF6", "ff6"),
    ("HH24", "%H"), ("HH12", "%I"), ("YYYY", "%Y"), ("MONTH", "%B^9"), ("Month", "%B9"),
    ("month", "%B_9"), ("DDD", "%j"), ("DAY", "%A^9"), ("Day", "%A9"), ("day", "%A_9"),
    ("MON", "%b^"), ("Mon", "%b"), ("mon", "%b_"), ("DY", "%a^"), ("Dy", "%a"), ("dy", "%a_"),
    ("HH", "%I"), ("MI", "%M"), ("SS", "%S"), ("MS", "%g"), ("US", "%f"), ("YY", "%y"),
    ("MM", "%m"), ("DD", "%d"), ("IW", "%V"), ("ID", "%u"), ("AM", "%p"), ("PM", "%p"),
    ("am", "%p_"), ("pm", "%p_"), ("WW", "week"), ("CC", "century"),
    ("Q", "quarter"), ("D", "weekday"), ("J", "julian"))


def _to_char_number(field: str, value: exp.Expression) -> tuple[exp.Expression, int]:
    """A computed to_char field of `value` as text, and the width its zeros pad it to."""
    def fn(name: str, *args: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this=name, expressions=[value.copy(), *args])

    one, seven, hundred = (exp.Literal.number(n) for n in (1, 7, 100))
    if field.startswith("ff"):  # the first n digits of the microseconds
        return exp.Left(this=fn("strftime", exp.Literal.string("%f")),
                        expression=exp.Literal.number(int(field[2]))), 0
    number: exp.Expression = {
        "quarter": lambda: fn("quarter"),
        "weekday": lambda: exp.Add(this=fn("dayofweek"), expression=one),  # 1 for Sunday
        "week": lambda: exp.Add(this=exp.IntDiv(this=exp.Paren(this=exp.Sub(
            this=fn("dayofyear"), expression=one)), expression=seven), expression=one.copy()),
        "century": lambda: exp.Add(this=exp.IntDiv(this=exp.Paren(this=exp.Sub(
            this=fn("year"), expression=one)), expression=hundred), expression=one.copy()),
        "julian": lambda: exp.cast(exp.Floor(this=fn("julian")), "BIGINT"),
    }[field]()
    return exp.cast(number, "VARCHAR"), 2 if field in ("week", "century") else 0
_TO_CHAR_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|(FM)?(' + "|".join(
    p for p, _ in _TO_CHAR_PATTERNS) + ")", re.DOTALL)
_TO_CHAR_FIELDS = dict(_TO_CHAR_PATTERNS)
# A template for a date or time holds one of these (a number's template holds none).
_DATE_TEMPLATE = re.compile(r"YYYY|YY|MM|DD|HH|SS|MS|US|Mon|MON|mon|Day|DAY|day|Dy|DY|dy|IW|AM|PM|"
                            r"WW|CC|FF[1-6]|Q|J")


def _to_char(value: exp.Expression, template: str) -> exp.Expression | None:
    """PostgreSQL's to_char of a date or timestamp with a constant template, as strftime pieces
    (None for a template with no date pattern: DuckDB then refuses the call)."""
    if not _DATE_TEMPLATE.search(template):
        return None
    pieces: list[exp.Expression] = []
    fmt: list[str] = []  # strftime fields and text of the piece being built

    def flush() -> None:
        if "".join(fmt):
            pieces.append(exp.Anonymous(this="strftime", expressions=[
                value.copy(), exp.Literal.string("".join(fmt))]))
        fmt.clear()

    position = 0
    for match in _TO_CHAR_TOKEN.finditer(template):
        fmt.append(template[position:match.start()].replace("%", "%%"))
        position = match.end()
        if match[2] is None:  # quoted text
            fmt.append(re.sub(r"\\(.)", r"\1", match[0][1:-1]).replace("%", "%%"))
            continue
        field, fill = _TO_CHAR_FIELDS[match[2]], match[1] is None
        if not field.startswith("%"):
            flush()
            text, width = _to_char_number(field, value)
            pieces.append(exp.Anonymous(this="lpad", expressions=[
                text, exp.Literal.number(width), exp.Literal.string("0")]) if width and fill
                else text)
        elif len(field) == 2:  # a number: FM drops its leading zeros
            unpadded = field not in ("%p", "%g", "%f", "%Y", "%V", "%u")  # strftime's %-x
            fmt.append(f"%-{field[1]}" if unpadded and not fill else field)
        else:  # a name: upper (^) or lower (_) case, blank-padded to a width unless FM
            flush()
            name: exp.Expression = exp.Anonymous(this="strftime", expressions=[
                value.copy(), exp.Literal.string(field[:2])])
            if "^" in field:
                name = exp.Upper(this=name)
            elif "_" in field:
                name = exp.Lower(this=name)
            width = field.lstrip("%aAbBp^_")
            if width and fill:
                name = exp.Anonymous(this="rpad", expressions=[name, exp.Literal.number(width),
                                                               exp.Literal.string(" ")])
            pieces.append(name)
    fmt.append(template[position:].replace("%", "%%"))
    flush()
    return _concatenation(pieces)


def call_arguments(call: exp.Func) -> list[exp.Expression]:
    """A call's arguments in order (a typed function keeps them in named fields; sqlglot's
    FORMAT its template in `this`, the values in the list `expressions`)."""
    if isinstance(call, exp.Anonymous):
        return list(call.expressions)
    return [a for value in call.args.values()
            for a in (value if isinstance(value, list) else [value])
            if isinstance(a, exp.Expression)]


def _series(tree: exp.Expression, sql: str) -> list[exp.Expression]:
    """The `generate_series` calls outside FROM, which sqlglot prints as the unnest of DuckDB's
    list (rows); each that is a select list item named, and integer when its bounds and step
    are integer literals within int4."""
    for call in tree.find_all(exp.ExplodingGenerateSeries):
        # generate_series(date, date, interval) is PostgreSQL's of timestamptz (date's
        # preferred promotion); DuckDB's reads the dates as timestamps
        bounds = [call.args.get("start"), call.args.get("end")]
        if all(_is_date(bound) for bound in bounds):
            for bound in bounds:
                bound.replace(exp.cast(bound.copy(), "TIMESTAMPTZ"))
    calls = [node for node in tree.find_all(exp.ExplodingGenerateSeries)
             if isinstance(node.find_ancestor(exp.Table, exp.Select), exp.Select)]
    for call in calls:
        item = call.parent if isinstance(call.parent, exp.Alias) else call
        if not (isinstance(item.parent, exp.Select) and item.arg_key == "expressions"):
            continue  # within an expression: rows still, typed as DuckDB types them
        bounds = [call.args[k] for k in ("start", "end", "step") if call.args.get(k) is not None]
        name = "generate_series(" + ", ".join(b.sql(dialect="duckdb") for b in bounds) + ")"
        holder = _take_place(call, name)
        if all(_int4_literal(bound) for bound in bounds):
            holder.replace(exp.cast(call, "INTEGER", copy=False))
        else:
            holder.replace(call)
    return calls + _series_tables(tree)


def _is_date(node: exp.Expression | None) -> bool:
    """Whether `node` is a date by its syntax (a cast to date, current_date)."""
    return isinstance(node, exp.CurrentDate) or (
        isinstance(node, exp.Cast) and node.to.this == _T.DATE)


def _series_tables(tree: exp.Expression) -> list[exp.Expression]:
    """The `generate_series` calls in FROM: each one's column takes its alias's name when the
    alias names no columns (`FROM generate_series(1, 3) AS x` reads x as the numbers, as
    PostgreSQL reads a function of scalars; DuckDB reads it as the rows); and those whose bounds
    and step are integer literals within int4, a derived table of its rows as integers under
    the call's alias (DuckDB's table function gives BIGINT rows, PostgreSQL's
    generate_series(int, int) integer)."""
    tables = [table for table in tree.find_all(exp.Table)
              if isinstance(table.this, exp.ExplodingGenerateSeries)]
    for table in tables:
        alias = table.args.get("alias")
        if alias is not None and alias.this is not None and not alias.args.get("columns"):
            alias.set("columns", [alias.this.copy()])
    calls = [table for table in tables if all(
        _int4_literal(bound) for bound in table.this.args.values() if bound is not None)]
    for table in calls:
        rows = exp.select(exp.cast(exp.column("generate_series"), "INTEGER").as_(
            "generate_series")).from_(exp.Table(this=table.this.copy()))
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(
            "generate_series"))
        table.replace(exp.Subquery(this=rows, alias=alias.copy()))
    return tables


def _like_escapes(tree: exp.Expression) -> list[exp.Expression]:
    """LIKE and ILIKE without an ESCAPE clause, given PostgreSQL's default escape character, the
    backslash (DuckDB's LIKE has none: `'a_c' LIKE 'a\\_c'` was false), where the pattern may
    hold one: a literal with a backslash, or a value (a parameter: Django escapes `%` and `_`
    in its contains lookups so). The operators changed."""
    changed = []
    for like in list(tree.find_all(exp.Like, exp.ILike)):
        pattern = like.expression
        if isinstance(pattern, exp.Any | exp.All) and not isinstance(like.parent, exp.Escape):
            if (quantified := _like_each(like, pattern)) is not None:
                like.replace(quantified)
                changed.append(like)
            continue
        if isinstance(like.parent, exp.Escape) or (
                isinstance(pattern, exp.Literal) and "\\" not in pattern.name):
            continue
        holder = exp.null()
        like.replace(holder)
        holder.replace(exp.Escape(this=like, expression=exp.Literal.string("\\")))
        changed.append(like)
    return changed


def _like_each(like: exp.Like | exp.ILike, quantified: exp.Any | exp.All
               ) -> exp.Expression | None:
    """`x [NOT] LIKE ANY (array)` / `ALL (array)` (DuckDB's grammar has neither): whether `x` is
    [not] like any / all of the array's patterns, each with PostgreSQL's escape character, and
    NULL as PostgreSQL's (a NULL array; a NULL test and none that decides). None for a
    subquery's rows (left as they are)."""
    array = quantified.this.unnest() if isinstance(quantified.this, exp.Paren) else quantified.this
    if isinstance(array, exp.Query | exp.Subquery):
        return None
    pattern = exp.to_identifier("heron_pattern")
    each: exp.Expression = exp.Escape(
        this=type(like)(this=like.this.copy(), expression=exp.column(pattern.copy())),
        expression=exp.Literal.string("\\"))
    if like.args.get("negate"):  # (NOT LIKE ANY: any pattern x is not like)
        each = exp.Not(this=each)
    test = exp.Lambda(this=each, expressions=[pattern])
    anyone = isinstance(quantified, exp.Any)
    tests = exp.Anonymous(this="list_transform", expressions=[array.copy(), test])
    # ANY: true where one is, else NULL where one is NULL, else false (ALL: the other way)
    decided = exp.Anonymous(this="list_bool_or" if anyone else "list_bool_and",
                            expressions=[tests])
    unknown = exp.LT(this=exp.Anonymous(this="list_count", expressions=[tests.copy()]),
                     expression=exp.Anonymous(this="len", expressions=[array.copy()]))
    return exp.Case(ifs=[
        exp.If(this=exp.Is(this=array.copy(), expression=exp.null()), true=exp.null()),
        exp.If(this=decided if anyone else exp.Not(this=decided), true=exp.convert(anyone)),
        exp.If(this=unknown, true=exp.null())], default=exp.convert(not anyone))


def _percentiles(tree: exp.Expression) -> list[exp.Expression]:
    """percentile_cont's values as double precision, PostgreSQL's only percentile_cont (DuckDB's
    over a numeric interpolates in the numeric's scale: the median of 9.99 and 20.00 was 14.99,
    PostgreSQL's 14.995). The keys changed."""
    changed = []
    for group in tree.find_all(exp.WithinGroup):
        order = group.expression
        if isinstance(group.this, exp.PercentileCont) and isinstance(order, exp.Order):
            for key in order.expressions:
                value = key.this if isinstance(key, exp.Ordered) else key
                value.replace(exp.cast(value.copy(), exp.DataType.build("DOUBLE")))
                changed.append(value)
    return changed


def _distinct_aggregates(tree: exp.Expression) -> list[exp.Expression]:
    """array_agg(DISTINCT x) and string_agg(DISTINCT x, sep) without an ORDER BY of their own in
    x's order, as PostgreSQL's come (it sorts to find the distinct values; DuckDB's come in the
    order its hash table keeps). The aggregates changed."""
    changed = []
    for aggregate in tree.find_all(exp.ArrayAgg, exp.GroupConcat):
        distinct = aggregate.this
        if isinstance(distinct, exp.Distinct) and len(distinct.expressions) == 1:
            key = exp.Ordered(this=distinct.expressions[0].copy(), nulls_first=False)
            distinct.replace(exp.Order(this=distinct.copy(), expressions=[key]))
            changed.append(aggregate)
    return changed


def _row_locks(tree: exp.Expression) -> list[exp.Expression]:
    """The row-locking clauses (FOR UPDATE, FOR SHARE, ...), which DuckDB's grammar lacks,
    taken out: see the module docstring. The clauses removed."""
    locks = list(tree.find_all(exp.Lock))
    for lock in locks:
        lock.pop()
    return locks


def _with_ties(tree: exp.Expression) -> list[exp.Expression]:
    """FETCH FIRST n ROWS WITH TIES, which DuckDB's grammar lacks (and sqlglot would print as a
    plain LIMIT): the rows ranked within the first n + offset by the query's ORDER BY (a
    QUALIFY, before the ORDER BY and OFFSET, which stay), which are the first n after the offset
    and those tied with the last of them. Without ORDER BY it is PostgreSQL's 42601; over
    DISTINCT or a set operation (ties among the rows that come out of them) it is refused. The
    clauses rewritten."""
    fetches = [f for f in tree.find_all(exp.Fetch)
               if (f.args.get("limit_options") or exp.LimitOptions()).args.get("with_ties")]
    for fetch in fetches:
        query = fetch.parent
        order = query.args.get("order") if isinstance(query, exp.Query) else None
        if order is None:
            raise SqlError(SqlState.SYNTAX_ERROR,
                           "WITH TIES cannot be specified without ORDER BY clause")
        if not isinstance(query, exp.Select) or query.args.get("distinct"):
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "FETCH ... WITH TIES over DISTINCT "
                           "or a set operation is not supported",
                           hint="Put the DISTINCT or set operation in a subquery.")
        items = {i.alias_or_name: i.unalias() for i in query.expressions if i.alias}
        keys = []
        for ordered in order.expressions:
            key = ordered.copy()
            value = key.this
            if isinstance(value, exp.Literal) and value.is_int:  # ORDER BY 2: the second item
                key.set("this", query.expressions[int(value.name) - 1].unalias().copy())
            elif isinstance(value, exp.Column) and not value.table and value.name in items:
                key.set("this", items[value.name].copy())
            keys.append(key)
        count = fetch.args.get("count") or exp.Literal.number(1)
        offset = query.args.get("offset")
        bound = count.copy() if offset is None else exp.Add(
            this=exp.Paren(this=count.copy()), expression=exp.Paren(
                this=offset.args["expression"].copy()))
        ranked = exp.LTE(this=exp.Window(this=exp.Anonymous(this="rank"), order=exp.Order(
            expressions=keys)), expression=bound)
        qualify = query.args.get("qualify")
        query.set("qualify", exp.Qualify(this=ranked if qualify is None else exp.and_(
            qualify.this, ranked)))
        fetch.pop()
    return fetches


def _split_tables(tree: exp.Expression) -> list[exp.Expression]:
    """regexp_split_to_table(text, pattern [, flags]), which DuckDB lacks: the unnest of its
    regexp_split_to_array, in FROM under the call's alias (naming its column too, as PostgreSQL
    names a function of scalars), in a select list named as the call; the calls changed."""
    calls = [call for call in tree.find_all(exp.Anonymous)
             if call.name.lower() == "regexp_split_to_table"]
    for call in calls:
        parts = exp.Anonymous(this="regexp_split_to_array", expressions=call.expressions)
        table = call.parent
        if isinstance(table, exp.Table) and table.this is call:
            alias = table.args.get("alias")
            name = alias.this if alias is not None and alias.this is not None else (
                exp.to_identifier(call.name.lower()))
            columns = alias.args.get("columns") if alias is not None else None
            table.replace(exp.Unnest(expressions=[parts], alias=exp.TableAlias(
                this=name.copy(), columns=columns or [name.copy()])))
        else:
            _take_place(call, "regexp_split_to_table").replace(exp.Explode(this=parts))
    return calls


def _rounding(tree: exp.Expression, sql: str) -> list[exp.Expression]:
    """`round(x)` rounding a double half to even; the calls changed."""
    calls = [node for node in tree.find_all(exp.Round)
             if node.args.get("decimals") is None and not _asks_ai(node)]
    for call in reversed(calls):  # the innermost first
        value = call.this
        even = exp.Anonymous(this="round_even", expressions=[value.copy(), exp.Literal.number(0)])
        # One branch remains once `typeof` is known, of x's own type for every type x can have
        # (round_even of a decimal or an integer is typed as round of it).
        rounded = exp.Case(this=exp.Anonymous(this="typeof", expressions=[value.copy()]),
                           ifs=[exp.If(this=exp.Literal.string("DOUBLE"), true=even)],
                           default=exp.Round(this=value.copy()))
        _take_place(call, _call_name(call, sql)).replace(rounded)
    return calls


_COMPLEX_POWER = "a negative number raised to a non-integer power yields a complex result"


def _powers(tree: exp.Expression, sql: str) -> list[exp.Expression]:
    """`power(x, y)` / `x ^ y` failing as PostgreSQL's where x is negative and y not an integer
    (2201F; DuckDB's is NaN; `errors` words it), unless y is an integer or x a non-negative
    constant; the calls changed."""
    calls = [node for node in tree.find_all(exp.Pow) if not _asks_ai(node) and not (
        isinstance(node.expression, exp.Literal) and node.expression.is_int) and not (
        isinstance(node.this, exp.Literal) and not node.this.is_string)]
    for call in reversed(calls):  # the innermost first
        base, exponent = call.this, call.expression
        # (as doubles: an untyped constant too)
        fractional = exp.NEQ(this=exp.cast(exponent.copy(), "DOUBLE"), expression=exp.Anonymous(
            this="trunc", expressions=[exp.cast(exponent.copy(), "DOUBLE")]))
        negative = exp.LT(this=exp.cast(base.copy(), "DOUBLE"), expression=exp.Literal.number(0))
        checked = exp.Case(ifs=[exp.If(
            this=exp.and_(negative, fractional),
            true=exp.Anonymous(this="error", expressions=[exp.Literal.string(_COMPLEX_POWER)]))],
            default=exp.Pow(this=base.copy(), expression=exponent.copy()))
        spelled = isinstance(call.meta.get("start"), int)  # power(x, y), not x ^ y
        _take_place(call, _call_name(call, sql) if spelled else "?column?").replace(checked)
    return calls


# An untyped string literal beside an arithmetic operator (before or after it; `_unknown_operand`).
_UNKNOWN_OPERAND = re.compile(r"[-+*/%]\s*'|'\s*[-+*/%]")
_LITERAL_OPERAND = re.compile(r"[-+*/%]\s*''|''\s*[-+*/%]")
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)
_NUMBER_TEXT = re.compile(r"\s*([+-]?)(\d+(?:\.\d*)?|\.\d+)\s*")


def _unknown_operand(sql: str) -> bool:
    """Whether `sql` may have an untyped string literal as an operand of `+ - * / %`: one
    stands beside the operator, not only a `%` inside a LIKE pattern."""
    return _UNKNOWN_OPERAND.search(sql) is not None and (
        _UNCLEAR_LITERALS.search(sql) is not None
        or _LITERAL_OPERAND.search(_STRING_LITERAL.sub("''", sql)) is not None)


def _unknown_operands(tree: exp.Expression) -> list[exp.Expression]:
    """Each untyped string literal that is an operand of `+ - * / %` beside a typed one read as
    PostgreSQL resolves it, as of the other operand's type (DuckDB finds no best candidate
    beside anything but a number literal: `'10'::int + '5'` fails to bind, `1.5 + '2'` is a
    double); the literals changed. A number's digits become that number's literal, which DuckDB
    types after the other operand as PostgreSQL would (integer beside an integer, numeric
    beside a numeric; `1 + '1.5'` is numeric 2.5 where PostgreSQL's reading of '1.5' as an
    integer fails). Any other text beside `- * / %` is cast to the other operand's type (a CASE
    that never takes the other operand's branch has its type): `now() - '1 day'` and `1 * 'x'`
    fail as PostgreSQL's do, `d - '2020-01-01'` subtracts dates; beside `+` DuckDB's one
    candidate (timestamp + interval) is PostgreSQL's choice too. (Comparisons need nothing:
    DuckDB casts such a literal to the other side's type.)"""
    changed: list[exp.Expression] = []
    for node in list(tree.find_all(*_ARITHMETIC)):
        for literal, other in ((node.this, node.expression), (node.expression, node.this)):
            if not (isinstance(literal, exp.Literal) and literal.is_string) or (
                    isinstance(other, exp.Literal) and other.is_string) or isinstance(
                    other, exp.Null | exp.Placeholder | exp.Parameter) or _asks_ai(other):
                continue  # (two unknowns, or a parameter's type, are not this rewrite's)
            if number := _NUMBER_TEXT.fullmatch(literal.name):
                digits = exp.Literal.number(number[2])
                literal.replace(exp.Neg(this=digits) if number[1] == "-" else digits)
            elif not isinstance(node, exp.Add) and other.find(exp.Query, exp.Placeholder) is None:
                # (not copying a subquery, which would run twice, or a `?`, which would number
                # the parameters after it otherwise; `$n` may come twice)
                literal.replace(exp.Case(ifs=[exp.If(this=exp.false(), true=other.copy())],
                                         default=literal.copy()))
            else:
                continue
            changed.append(node)
    return changed


# The comparison operators (an enum's literal operand, `_enum_literals`; ANY and ALL,
# `_null_arrays`).
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def _names_enum_table(sql: str, relations: Relations | Callable[[], Relations] | None) -> bool:
    """Whether `sql` holds a string literal or a parameter and names a table with a column of
    an enum type."""
    if not ("'" in sql or "$" in sql or "?" in sql) or relations is None:
        return False
    found = relations() if callable(relations) else relations
    return found.named(sql, found.enum_tables)


def _enum_literals(tree: exp.Expression, relations: Relations | Callable[[], Relations] | None
                   ) -> list[exp.Expression]:
    """Each untyped string literal or parameter compared with an enum value (=, <>, <, <=, >,
    >=, IN, BETWEEN; a table column of an enum type, or a cast to a user type) cast to that
    type, as PostgreSQL resolves it: the labels then compare in the enum's order (DuckDB
    compares an enum with text as text, so `mood > 'ok'` found 'sad'), and a text that is not
    one of its labels fails (22P02) where DuckDB found no row; the comparisons changed."""
    found: Relations | None = None
    changed: list[exp.Expression] = []
    for literal in list(tree.find_all(exp.Literal, exp.Placeholder, exp.Parameter)):
        parent = literal.parent
        if (isinstance(literal, exp.Literal) and not literal.is_string) or parent is None:
            continue
        if isinstance(parent, _COMPARISONS):
            other = parent.expression if literal is parent.this else parent.this
        elif (isinstance(parent, exp.In) and literal.arg_key == "expressions") or (
                isinstance(parent, exp.Between) and literal.arg_key in ("low", "high")):
            other = parent.this
        else:
            continue
        if isinstance(other, exp.Cast) and other.to.this is _T.USERDEFINED:
            enum = other.to.copy()
        elif isinstance(other, exp.Column):
            if found is None:
                found = relations() if callable(relations) else relations
                if found is None:
                    return changed
            origin = column_origins.declared(other, found)
            if (named := found.enums.get((origin.table_oid, origin.attnum))) is None:
                continue
            enum = exp.DataType.build(named, dialect="duckdb")
        else:
            continue
        literal.replace(exp.cast(literal.copy(), enum))
        changed.append(parent)
    return changed


def _null_arrays(tree: exp.Expression) -> list[exp.Expression]:
    """`x op ANY (array)` and `x op ALL (array)` NULL where the array is NULL, as PostgreSQL's
    (DuckDB's ANY of a NULL list is false, its ALL true): `cmp OR NULLIF(array IS NULL, true)`
    and `cmp AND NULLIF(array IS NOT NULL, false)`, NULL or the comparison's own answer (its
    array first: DuckDB types a parameter where it first comes, and `$1 IS NULL` leaves it
    open); the comparisons changed. A subquery's ANY and ALL are DuckDB's already, a
    constructor or a literal is never NULL, and an array that holds an AI call or a `?` is not
    copied (asked twice; parameters numbered otherwise)."""
    changed: list[exp.Expression] = []
    for node in list(tree.find_all(exp.Any, exp.All, exp.Anonymous)):
        if isinstance(node, exp.Anonymous):  # (sqlglot reads ALL (a) as a call)
            if node.name.upper() != "ALL" or len(node.expressions) != 1:
                continue
            array = node.expressions[0]
        else:
            array = node.this
        comparison = node.parent
        if not isinstance(comparison, _COMPARISONS) or node is not comparison.expression:
            continue
        array = array.unnest()
        if isinstance(array, exp.Query | exp.Array | exp.Literal) or (
                isinstance(array, exp.Cast) and isinstance(array.this, exp.Literal)) or (
                _asks_ai(array) or array.find(exp.Placeholder, exp.Query) is not None):
            continue
        null = exp.Is(this=array.copy(), expression=exp.Null())
        if isinstance(node, exp.Any):
            guarded: exp.Expression = exp.Or(this=comparison.copy(), expression=exp.Nullif(
                this=null, expression=exp.true()))
        else:
            guarded = exp.And(this=comparison.copy(), expression=exp.Nullif(
                this=exp.Not(this=null), expression=exp.false()))
        comparison.replace(exp.Paren(this=guarded))
        changed.append(comparison)
    return changed


# EXTRACT's fields PostgreSQL counts in fractions of a second, computed from DuckDB's
# microseconds: the digits after the point (numeric(…, 6) for seconds, (…, 3) for milliseconds).
_FRACTION_DIGITS = {**dict.fromkeys(("SECOND", "SECONDS", "SEC", "SECS", "S"), 6),
                    **dict.fromkeys(("MILLISECOND", "MILLISECONDS", "MS", "MSEC", "MSECS",
                                     "MSECOND", "MSECONDS"), 3),
                    **dict.fromkeys(("MICROSECOND", "MICROSECONDS", "US", "USEC", "USECS",
                                     "USECOND", "USECONDS"), 0)}


def _time_parts(tree: exp.Expression, sql: str) -> list[exp.Expression]:
    """`extract(field FROM x)` as PostgreSQL's numeric and `date_part('field', x)` as its double
    precision (DuckDB's are BIGINT, seconds without their fraction, and epoch a double); the
    calls changed. A field's scale: 6 for second and epoch (0 for the epoch of a value written
    as a date: a date column's epoch keeps 6, the same number), 3 for milliseconds, else 0.
    `julian` is left to DuckDB."""
    calls = [(node, node.this.name.upper(), node.expression, True)
             for node in tree.find_all(exp.Extract) if isinstance(node.this, exp.Var)]
    calls += [(node, node.expressions[0].name.upper(), node.expressions[1], False)
              for node in tree.find_all(exp.Anonymous) if node.name.lower() == "date_part"
              and len(node.expressions) == 2 and node.expressions[0].is_string]
    calls = [call for call in calls if call[1] != "JULIAN"]
    for call, field, value, numeric in sorted(calls, key=lambda c: -c[0].depth):  # innermost first
        name = _call_name(call, sql)  # before its argument moves into `part`
        part: exp.Expression
        if field in _FRACTION_DIGITS:
            micro = exp.Extract(this=exp.var("MICROSECOND"), expression=value)
            digits = _FRACTION_DIGITS[field]
            part = exp.cast(micro, "DECIMAL(18, 0)" if numeric else "DOUBLE", copy=False)
            if digits and numeric:  # times 0.000001 (a literal of that scale): exact
                factor = exp.Literal.number(f"{10**-digits:.{digits}f}")
                part = exp.Mul(this=part, expression=factor)
            elif digits:  # divided, not multiplied by 1e-6: correctly rounded, as PostgreSQL's is
                part = exp.Div(this=part, expression=exp.Literal.number(f"1e{digits}"))
        else:
            same = exp.Extract(this=exp.var(field), expression=value)
            dated = isinstance(value, exp.Cast) and value.to.this == _T.DATE
            scale = 6 if field == "EPOCH" and not dated else 0
            part = exp.cast(same, f"DECIMAL(18, {scale})" if numeric else "DOUBLE", copy=False)
        _take_place(call, name).replace(part)
    return [call for call, *_ in calls]


def _using_stars(tree: exp.Expression,
                 relations: Relations | Callable[[], Relations] | None) -> list[exp.Expression]:
    """Each plain `*` of a select list over joins that merge columns (USING, NATURAL), as
    PostgreSQL's star lists the columns: the merged columns `column_origins.moved_columns` names
    first, then DuckDB's star without them; the stars rewritten. All are decided on the tree as
    written (a derived table's columns are those of its star unrewritten)."""
    read = functools.cache(relations if callable(relations) else lambda: (
        column_origins.Relations({}, ()) if relations is None else relations))
    moves = [(select, column_origins.moved_columns(select, read))
             for select in tree.find_all(exp.Select)
             if any(isinstance(item, exp.Star) for item in select.expressions)]
    stars = []
    for select, front in moves:
        if not front:
            continue
        items: list[exp.Expression] = []
        for item in select.expressions:
            if isinstance(item, exp.Star) and column_origins.plain_star(item):
                stars.append(item)
                merged = [exp.column(name, quoted=True) for name in front]
                items += [*merged, exp.Star(except_=[c.copy() for c in merged])]
            else:
                items.append(item)
        select.set("expressions", items)
    return stars


def _asks_ai(node: exp.Expression) -> bool:
    """Whether `node` holds an AI call, which a rewrite must not copy (each copy would be asked)."""
    return node.find(dialect.AIFunction, dialect.Prompt) is not None


def _int4_literal(node: exp.Expression) -> bool:
    value = node.this if isinstance(node, exp.Neg) else node
    return (isinstance(value, exp.Literal) and value.is_int
            and -(2 ** 31) <= int(node.sql()) < 2 ** 31)


def _take_place(call: exp.Expression, name: str) -> exp.Expression:
    """A placeholder put in `call`'s place, for the caller to replace with what computes it
    (which may hold `call`): aliased `name` when `call` is a select list (or RETURNING) item of
    its own (the name DuckDB gives a call, "function(arguments)", which the server names after
    the function as PostgreSQL does; two calls of one function keep two names)."""
    item = isinstance(call.parent, exp.Select | exp.Returning) and call.arg_key == "expressions"
    holder = exp.Paren(this=exp.null())
    call.replace(exp.alias_(holder, name, quoted=True, copy=False) if item else holder)
    return holder


def _call_name(call: exp.Func, sql: str) -> str:
    """`call` as DuckDB names an unaliased call, "function(arguments)", the function as `sql`
    spells it."""
    return _function_name(call, sql) + "(" + ", ".join(
        a.sql(dialect="duckdb") for a in call_arguments(call)) + ")"


def _function_name(call: exp.Func, sql: str) -> str:
    """The name of `call`'s function as `sql` spells it, lowercased (sqlglot reads char_length
    and position as length and strpos)."""
    start, end = call.meta.get("start"), call.meta.get("end")
    if isinstance(start, int) and isinstance(end, int) and re.fullmatch(
            r"\w+", sql[start:end + 1]):
        return sql[start:end + 1].lower()
    return _SPELLED.get(type(call)) or call.sql_name().lower()


def _octet_length(value: exp.Expression) -> exp.Expression:
    """PostgreSQL's octet_length of `value`: DuckDB's for BLOB and BIT, else the UTF-8 bytes of
    its text (`typeof` is known when the statement is bound: one branch remains)."""
    def native(kind: str) -> exp.If:
        return exp.If(this=exp.Literal.string(kind), true=exp.Anonymous(
            this="octet_length", expressions=[exp.cast(value.copy(), kind)]))

    return exp.Case(this=exp.Anonymous(this="typeof", expressions=[value.copy()]),
                    ifs=[native("BLOB"), native("BIT")],
                    default=exp.Anonymous(this="strlen", expressions=[
                        exp.cast(value.copy(), "VARCHAR")]))


# What `typed_results` may retype: a sum, a sign, a subtraction.
_TYPED = re.compile(r"\b(?:sum|sign|date_trunc)\s*\(|-", re.IGNORECASE)
# DuckDB's types whose sum PostgreSQL gives as bigint (int2 and int4; the unsigned ones fit).
_BIGINT_SUMMED = frozenset({"TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT"})
# DuckDB's types whose sign PostgreSQL computes as sign(double precision).
_DOUBLE_SIGNED = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT",
                            "DOUBLE", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"})
_TWO_DATES = re.compile(r"^(?:STRUCT|TUPLE)\((?:\S+ )?DATE, (?:\S+ )?DATE\)$")


@dataclasses.dataclass(frozen=True)
class _Retyped:
    """A select list item's expression whose type PostgreSQL resolves otherwise than DuckDB:
    `target` (what is cast), `probe` (bound in the place of `probed`, the target or a part of
    it, to learn the operands' types), `cast(type)` (the type to cast to, given the probe's;
    None: as DuckDB has it)."""

    target: exp.Expression
    probed: exp.Expression
    probe: exp.Expression
    cast: Callable[[str], str | None]
    name: str  # what the item is named when it has no alias of its own


def _retyped(item: exp.Expression, sql: str) -> _Retyped | None:
    node = item.this if isinstance(item, exp.Alias) else item
    while isinstance(node, exp.Paren):
        node = node.this
    window = node if isinstance(node, exp.Window) else None
    inner = node.this if window is not None else node
    if isinstance(inner, exp.Sum):  # sum(int2 / int4) is bigint, DuckDB's HUGEINT
        return _Retyped(window or inner, inner, exp.Anonymous(this="first", expressions=[
            _argument(inner).copy()]), lambda t: "BIGINT" if t in _BIGINT_SUMMED else None,
            "sum" if window is not None else "sum" + inner.sql(dialect="duckdb")[3:])
    if window is not None:
        return None
    if isinstance(node, exp.Sign):  # sign(int) is sign(double precision); of numeric, numeric
        return _Retyped(node, node, node.this.copy(), _signed, _call_name(node, sql))
    if isinstance(node, exp.TimestampTrunc) and not _asks_ai(node):
        # date_trunc(unit, date) truncates date's timestamptz (DuckDB's: a timestamp). Where
        # the query groups by the call itself, not by the item's position or alias, the
        # argument alone does not bind: its first() does.
        argument = node.this.copy()
        group = item.parent.args.get("group") if isinstance(item.parent, exp.Select) else None
        if group is not None and argument.find(exp.AggFunc) is None and not any(
                (isinstance(key, exp.Literal) and key.is_int) or (
                    isinstance(key, exp.Column) and key.name.lower() == item.alias.lower())
                for key in group.expressions):
            argument = exp.Anonymous(this="first", expressions=[argument])
        return _Retyped(node, node, argument,
                        lambda t: "TIMESTAMPTZ" if t == "DATE" else None, "date_trunc")
    if isinstance(node, exp.Sub) and not _asks_ai(node):  # date - date is integer
        return _Retyped(node, node, exp.Anonymous(this="row", expressions=[
            node.this.copy(), node.expression.copy()]),
            lambda t: "INTEGER" if _TWO_DATES.match(t) else None, "?column?")
    return None


def _signed(operand: str) -> str | None:
    """The type of sign() of a DuckDB type, as PostgreSQL resolves it."""
    if operand in _DOUBLE_SIGNED:
        return "DOUBLE"
    return "DECIMAL(38, 0)" if operand.startswith("DECIMAL") else None


def typed_results(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`sql` with its select list's sums, signs, date differences and truncated dates typed as
    PostgreSQL types them (see the module docstring)."""
    tree = _parsed(sql, _TYPED)
    select = None if tree is None else _first_select(tree)
    if tree is None or select is None:
        return sql
    found = {i: retyped for i, item in enumerate(select.expressions)
             if (retyped := _retyped(item, sql)) is not None}
    if any(isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(
            item.this, exp.Star)) for item in select.expressions):  # a star: columns move
        return sql
    cast = _nested_sums(con, tree, select, found)
    if not found:
        return _printed(tree) if cast else sql
    probe = tree.copy()
    probe_select = _first_select(probe)
    assert probe_select is not None
    for i in found:
        retyped = _retyped(probe_select.expressions[i], sql)
        assert retyped is not None
        retyped.probed.replace(retyped.probe)
    try:
        types = _seam.bind(con, probe.sql(dialect="duckdb")).types
    except duckdb.Error:
        return _printed(tree) if cast else sql  # running it reports DuckDB's error
    for i, retyped in found.items():
        to = retyped.cast(str(types[i])) if i < len(types) else None
        if to is not None:
            _take_place(retyped.target, retyped.name).replace(
                exp.cast(retyped.target, to, copy=False))
            cast = True
    return _printed(tree) if cast else sql


def _nested_sums(con: duckdb.DuckDBPyConnection, tree: exp.Expression, select: exp.Select,
                 found: dict[int, _Retyped]) -> bool:
    """Cast to bigint, in place, each sum of a smallint or integer within a select list item
    (`coalesce(sum(x), 0)`, `sum(x) * 2`: DuckDB's is HUGEINT, so the item is numeric where
    PostgreSQL's is bigint); an item that is a sum is `found`'s. Each sum's argument type comes
    from binding the query with `first(argument)` (over the sum's window) as its only item.
    Whether one was cast."""
    if not isinstance(tree, exp.Select):
        return False  # (a set operation's branches must keep their columns: not probed)
    sums = [(i, total) for i, item in enumerate(select.expressions) if i not in found
            for total in item.find_all(exp.Sum) if total.find_ancestor(exp.Select) is select]
    cast = False
    for _, total in sums:
        probe = tree.copy()
        for key in ("order", "limit", "offset", "distinct"):
            probe.set(key, None)
        first = exp.Anonymous(this="first", expressions=[_argument(total).copy()])
        target: exp.Expression = total  # the sum with its FILTER and its window
        while isinstance(target.parent, exp.Filter | exp.Window) and target.parent.this is target:
            target = target.parent
        window = target if isinstance(target, exp.Window) else None
        if window is not None:
            item: exp.Expression = window.copy()
            item.set("this", first)
        else:
            item = first
        probe.set("expressions", [item])
        try:
            kind = str(_seam.bind(con, probe.sql(dialect="duckdb")).types[0])
        except duckdb.Error:
            continue  # running it reports DuckDB's error
        if kind in _BIGINT_SUMMED:
            target.replace(exp.cast(target.copy(), "BIGINT"))
            cast = True
    return cast


# An INSERT or UPDATE that may write a string literal that is an array's text.
_MAY_WRITE_ARRAY_TEXT = re.compile(r"\b(?:INSERT|UPDATE)\b.*'\s*\{", re.IGNORECASE | re.DOTALL)


_WRITE_TARGET = re.compile(
    rf"\b(?:INSERT\s+INTO|UPDATE)\s+(?:ONLY\s+)?(?P<name>{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})*)",
    re.IGNORECASE)


def _has_array_column(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    try:
        return any(str(kind).endswith("]") for kind in _seam.bind(
            con, f"SELECT * FROM {name}").types)
    except duckdb.Error:
        return False


_ON_CONSTRAINT = re.compile(rf"\bON\s+CONFLICT\s+ON\s+CONSTRAINT\s+(?P<name>{IDENTIFIER})",
                            re.IGNORECASE)
_INSERT_TARGET = re.compile(
    rf"^\s*(?:WITH\b.*?)?\bINSERT\s+INTO\s+(?P<name>{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})*)",
    re.IGNORECASE | re.DOTALL)


def conflict_constraints(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`sql` with an INSERT's `ON CONFLICT ON CONSTRAINT name` (DuckDB's 0A000) written as the
    conflict target of that constraint's columns: the table's primary key (`<table>_pkey`, as
    the catalog names it) or one of its unique constraints; an unknown name is PostgreSQL's
    42704. `sql` unchanged without one."""
    conflict = _ON_CONSTRAINT.search(sql)
    target = _INSERT_TARGET.match(sql) if conflict is not None else None
    if conflict is None or target is None:
        return sql
    from heron.planner import existence  # (existence reads statements through this module)

    table = existence.find_relation(con, existence.name_parts(target["name"]), views=False)
    wanted = existence.name_parts(conflict["name"])[-1]
    for kind, name, columns in con.execute(
            "SELECT constraint_type, constraint_name, constraint_column_names "
            "FROM duckdb_constraints() WHERE database_name = ? AND schema_name = ? AND "
            "table_name = ? AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')",
            [table.database, table.schema, table.name]).fetchall():
        if (f"{table.name}_pkey" if kind == "PRIMARY KEY" else name) == wanted:
            listed = ", ".join(dialect.quoted(c) for c in columns)
            return sql[:conflict.start()] + f"ON CONFLICT ({listed})" + sql[conflict.end():]
    raise SqlError(SqlState.UNDEFINED_OBJECT,
                   f'constraint "{wanted}" for table "{table.name}" does not exist')


def written_arrays(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`sql` with each string literal that an INSERT's VALUES rows, an UPDATE's SET or an ON
    CONFLICT's SET write into an array column read as PostgreSQL's array literal (`'{a,b}'`,
    which DuckDB's cast to a list refuses), as a cast does (`parse_array_literal`); `sql`
    unchanged when there is none. The column types come from binding the target table on
    `con`."""
    if _MAY_WRITE_ARRAY_TEXT.search(sql) is None or not any(
            _has_array_column(con, m["name"]) for m in _WRITE_TARGET.finditer(sql)):
        return sql  # (a large INSERT of JSON texts is not parsed for nothing)
    tree = _parsed(sql, _MAY_WRITE_ARRAY_TEXT)
    if tree is None:
        return sql
    changed = False
    for write in tree.find_all(exp.Insert, exp.Update):
        target = write.this
        table = target.this if isinstance(target, exp.Schema) else target
        if not isinstance(table, exp.Table):
            continue
        bare = table.copy()
        bare.set("alias", None)
        try:
            bound = _seam.bind(con, f"SELECT * FROM {bare.sql(dialect='duckdb')}")
        except duckdb.Error:
            continue  # running it reports DuckDB's error
        types = {name.lower(): str(kind) for name, kind in zip(bound.names, bound.types,
                                                               strict=True)}
        values: list[tuple[str, exp.Expression]] = []
        if isinstance(write, exp.Insert):
            columns = ([c.name.lower() for c in target.expressions]
                       if isinstance(target, exp.Schema) else list(types))
            source = write.expression
            if isinstance(source, exp.Values):
                for row in source.expressions:
                    if isinstance(row, exp.Tuple):
                        values += zip(columns, row.expressions, strict=False)
            conflict = write.args.get("conflict")
            sets = conflict.expressions if conflict is not None else []
        else:
            sets = write.expressions
        values += [(s.this.name.lower(), s.expression) for s in sets
                   if isinstance(s, exp.EQ) and isinstance(s.this, exp.Column)]
        for column, value in values:
            kind = types.get(column, "")
            if kind.endswith("]") and isinstance(value, exp.Literal) and value.is_string:
                value.replace(exp.cast(_array_expression(parse_array_literal(
                    value.name, lambda text: text)), kind))
                changed = True
    return _printed(tree) if changed else sql


def _first_select(tree: exp.Expression) -> exp.Select | None:
    """The select whose list names a query's columns (a set operation's first)."""
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


def _summed(item: exp.Expression) -> exp.Sum | None:
    """The sum a select list item is (aliased or not, over a window or not), if it is one."""
    node = item.this if isinstance(item, exp.Alias) else item
    if isinstance(node, exp.Window):
        node = node.this
    return node if isinstance(node, exp.Sum) else None


def _argument(total: exp.Sum) -> exp.Expression:
    value = total.this
    return value.expressions[0] if isinstance(value, exp.Distinct) else value


# format()'s specifiers: %s text, %I identifier, %L literal, %% a percent sign.
_FORMAT_SPECIFIER = re.compile(r"%([sIL%])")


def pg_format(template: str, args: list[exp.Expression]) -> exp.Expression | None:
    """PostgreSQL's format() with a constant template, as a concatenation; None when the
    template asks for more arguments than there are (PostgreSQL's error is DuckDB's then)."""
    parts: list[exp.Expression] = []
    position = 0
    rest = list(args)
    for match in _FORMAT_SPECIFIER.finditer(template):
        if match.start() > position:
            parts.append(exp.Literal.string(template[position:match.start()]))
        position = match.end()
        kind = match[1]
        if kind == "%":
            parts.append(exp.Literal.string("%"))
            continue
        if not rest:
            return None
        argument = rest.pop(0)
        # (a value as its type's output function prints it: a boolean `t`)
        value = exp.cast(argument, exp.DataType.build("VARCHAR")) if isinstance(
            argument, exp.Literal | exp.Null) else exp.Anonymous(
            this=pg_text.OUTPUT_MACRO, expressions=[argument])
        if kind == "I":
            value = exp.Anonymous(this="quote_ident", expressions=[value])
        elif kind == "L":
            value = exp.Coalesce(this=exp.Anonymous(this="quote_literal", expressions=[value]),
                                 expressions=[exp.Literal.string("NULL")])
        else:
            value = exp.Coalesce(this=value, expressions=[exp.Literal.string("")])
        parts.append(value)
    if position < len(template):
        parts.append(exp.Literal.string(template[position:]))
    return _concatenation(parts)


def _concatenation(parts: list[exp.Expression]) -> exp.Expression:
    """`parts` joined with ||, in parentheses ('' for none)."""
    if not parts:
        return exp.Literal.string("")
    result = parts[0]
    for part in parts[1:]:
        result = exp.DPipe(this=result, expression=part)
    return exp.Paren(this=result)


def _literal_decimal(text: str) -> exp.DataType:
    """DECIMAL(p, s) holding exactly the digits of a numeric literal."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return UNCONSTRAINED_NUMERIC.copy()  # DuckDB reports the bad input
    if not value.is_finite():
        return UNCONSTRAINED_NUMERIC.copy()
    _, digits, exponent = value.as_tuple()
    scale = max(0, -int(exponent))
    precision = max(len(digits) + max(0, int(exponent)), scale + 1, 1)
    if precision > MAX_DECIMAL_DIGITS:
        raise SqlError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE,
                       f"numeric value {text.strip()} has more than {MAX_DECIMAL_DIGITS} digits",
                       hint="Heron's numeric holds at most 38 significant digits; round it or "
                            "use double precision.")
    return exp.DataType.build(f"DECIMAL({precision}, {scale})")


def column_definition(column: exp.ColumnDef) -> exp.ColumnDef:
    """A column of CREATE TABLE or ALTER TABLE ADD COLUMN as DuckDB keeps it: a varchar(n) /
    char(n) one with the CHECK enforcing its length, a jsonb one as JSON with its mark, a
    generated one (`GENERATED ALWAYS AS (expr) STORED`, PostgreSQL's only kind) as DuckDB's
    VIRTUAL one, which reads the same values (DuckDB stores none; sqlglot printed its
    expression without the parentheses DuckDB's grammar needs)."""
    def computed(constraint: exp.Expression) -> exp.ComputedColumnConstraint | None:
        kind = constraint.kind if isinstance(constraint, exp.ColumnConstraint) else None
        return kind if isinstance(kind, exp.ComputedColumnConstraint) and (
            kind.args.get("persisted") or not isinstance(kind.this, exp.Paren)) else None

    if any(computed(c) for c in column.args.get("constraints") or ()):
        column = column.copy()  # (a new node: the rewrite prints what it replaced)
        for constraint in column.args.get("constraints") or ():
            if (stored := computed(constraint)) is not None:
                stored.set("this", exp.Paren(this=stored.this.unnest()))
                stored.set("persisted", None)
    return _jsonb_marked(_length_checked(column))


def _declared_alter_type(dtype: exp.DataType) -> exp.DataType:
    """The type of ALTER COLUMN ... TYPE when it is a declared type DuckDB's text would lose,
    spelled so that it survives for `alter_table` (which gives the column its CHECKs; DuckDB
    never runs these statements as they are): varchar(n) and char(n) as VARCHAR(n), jsonb as
    JSONB, both as written (sqlglot would print TEXT and JSON)."""
    if dtype.this in _TEXT_TYPES and len(dtype.expressions) == 1 and (
            dtype.expressions[0].name.isdigit()):
        name = "BPCHAR" if dtype.this in _BLANK_PADDED else "VARCHAR"
        return exp.DataType(this=_T.USERDEFINED, kind=f"{name}({dtype.expressions[0].name})")
    if dtype.this == _T.JSONB:
        return exp.DataType(this=_T.USERDEFINED, kind="JSONB")
    return dtype


def _length_checked(column: exp.ColumnDef) -> exp.ColumnDef:
    """A varchar(n)/char(n) column with a CHECK enforcing its length: `length(col) <= n` for
    varchar(n); `n >= length(rtrim(col, ' '))` for char(n) (char is char(1)), whose trailing
    blanks PostgreSQL cuts off a value too long, and which marks the column character(n)
    (`pg_catalog_relations.BPCHAR_CHECK`)."""
    kind = column.args.get("kind")
    if not isinstance(kind, exp.DataType) or kind.this not in _TEXT_TYPES:
        return column
    blank_padded = kind.this in _BLANK_PADDED
    limit = kind.expressions[0] if kind.expressions else (
        exp.Literal.number(1) if blank_padded and kind.this != _T.BPCHAR else None)
    if not isinstance(limit, exp.DataTypeParam | exp.Literal) or not limit.name.isdigit():
        return column
    name = exp.column(column.this.copy())
    length = exp.Literal.number(int(limit.name))
    check = exp.CheckColumnConstraint(this=exp.GTE(this=length, expression=exp.Length(
        this=exp.Anonymous(this="rtrim", expressions=[name, exp.Literal.string(" ")])))
        if blank_padded else exp.LTE(this=exp.Length(this=name), expression=length))
    checked = column.copy()
    checked.set("kind", exp.DataType.build("VARCHAR"))
    checked.append("constraints", exp.ColumnConstraint(kind=check))
    return checked


def length_limit(check: exp.CheckColumnConstraint) -> int | None:
    """The length a CHECK `_length_checked` made enforces (None: another CHECK)."""
    test = check.this
    if (isinstance(test, exp.LTE) and isinstance(test.this, exp.Length)
            and isinstance(test.this.this, exp.Column) and isinstance(test.expression, exp.Literal)
            and test.expression.is_int):
        return int(test.expression.name)
    if (isinstance(test, exp.GTE) and isinstance(test.expression, exp.Length)
            and isinstance(test.this, exp.Literal) and test.this.is_int
            and _trimmed_column(test.expression.this)):
        return int(test.this.name)
    return None


def _trimmed_column(node: exp.Expression) -> bool:
    """Whether `node` is `rtrim(col, ' ')`, as a char(n) column's CHECK reads it."""
    trim = isinstance(node, exp.Trim) and node.args.get("position") == "TRAILING"
    call = isinstance(node, exp.Anonymous) and node.name.lower() == "rtrim"
    return (trim or call) and isinstance(node.this if trim else (
        node.expressions[0] if node.expressions else None), exp.Column)


def declares_type(check: exp.CheckColumnConstraint) -> bool:
    """Whether a CHECK is one this rewrite gives a column to keep its declared type (a
    varchar(n)'s length, a jsonb mark), not a client's."""
    test = check.this
    return length_limit(check) is not None or (
        isinstance(test, exp.Anonymous) and test.name.lower() == "json_valid")


def _jsonb_marked(column: exp.ColumnDef) -> exp.ColumnDef:
    """A jsonb column as a JSON column with the CHECK `json_valid(col)` marking it jsonb (see
    `pg_catalog_relations.JSONB_CHECK`). A CHECK, because it is what DuckDB keeps of a column
    beside its type and what the catalog already reads back (varchar(n)'s length): DuckDB's
    type alias (CREATE TYPE jsonb AS JSON) is resolved to JSON in the table, and a cast to it,
    a view's column or a function's result keeps nothing of it either, so `column_origins`
    carries jsonb from here on, as it carries varchar(n)."""
    kind = column.args.get("kind")
    if not isinstance(kind, exp.DataType) or kind.this != _T.JSONB:
        return column
    check = exp.CheckColumnConstraint(this=exp.Anonymous(
        this="json_valid", expressions=[exp.column(column.this.copy())]))
    marked = column.copy()
    marked.set("kind", exp.DataType.build("JSON"))
    marked.append("constraints", exp.ColumnConstraint(kind=check))
    return marked


def _array_expression(items: list[Any]) -> exp.Expression:
    return exp.Array(expressions=[
        _array_expression(item) if isinstance(item, list) else
        exp.Null() if item is None else exp.Literal.string(item) for item in items])


def _blob_literal(data: bytes) -> str:
    """DuckDB's BLOB text for bytes: printable ASCII as is, the rest as \\xHH."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x5C, 0x27) else f"\\x{b:02X}"
                   for b in data)


# -- PostgreSQL's input syntaxes ------------------------------------------------------------------


def _bad_input(type_name: str, text: str) -> SqlError:
    return SqlError(SqlState.INVALID_TEXT_REPRESENTATION,
                    f'invalid input syntax for type {type_name}: "{text}"')


_HEX_DIGITS = re.compile(r"[0-9A-Fa-f\s]*")


def parse_bytea(text: str) -> bytes:
    """bytea's text input: `\\x` and hex digits (pairs, whitespace between them allowed), or the
    escape format (`\\\\` a backslash, `\\ooo` an octal byte, other characters as UTF-8)."""
    if text.startswith("\\x"):
        digits = text[2:]
        if not _HEX_DIGITS.fullmatch(digits):
            raise _bad_input("bytea", text)
        compact = "".join(digits.split())
        if len(compact) % 2:
            raise SqlError(SqlState.INVALID_TEXT_REPRESENTATION,
                           "invalid hexadecimal data: odd number of digits")
        return bytes.fromhex(compact)
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] != "\\":
            out.extend(text[i].encode("utf-8"))
            i += 1
        elif text[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        elif re.fullmatch(r"[0-3][0-7]{2}", text[i + 1 : i + 4]):
            out.append(int(text[i + 1 : i + 4], 8))
            i += 4
        else:
            raise _bad_input("bytea", text)
    return bytes(out)


def parse_array_literal(text: str, element: Callable[[str], Any]) -> list[Any]:
    """A PostgreSQL array literal such as {1,2,NULL} or {"a b",{c}} as nested lists; `element`
    converts each non-NULL element's text. An optional `[1:2]=` dimension prefix is skipped."""
    stripped = text.strip()
    if stripped.startswith("["):
        stripped = stripped[stripped.find("=") + 1 :].lstrip() if "=" in stripped else stripped
    pos = 0

    def fail() -> SqlError:
        return SqlError(SqlState.INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{text}"')

    def parse_array() -> list[Any]:
        nonlocal pos
        if pos >= len(stripped) or stripped[pos] != "{":
            raise fail()
        pos += 1
        items: list[Any] = []
        expect_item = True
        while pos < len(stripped):
            ch = stripped[pos]
            if ch == "}":
                pos += 1
                return items
            if ch in " \t\n\r":
                pos += 1
            elif ch == ",":
                if expect_item:
                    raise fail()
                expect_item = True
                pos += 1
            elif not expect_item:
                raise fail()
            elif ch == "{":
                items.append(parse_array())
                expect_item = False
            elif ch == '"':
                pos += 1
                buf = []
                while pos < len(stripped) and stripped[pos] != '"':
                    if stripped[pos] == "\\":
                        pos += 1
                    if pos < len(stripped):
                        buf.append(stripped[pos])
                    pos += 1
                if pos >= len(stripped):
                    raise fail()
                pos += 1
                items.append(element("".join(buf)))
                expect_item = False
            else:
                start = pos
                buf = []
                while pos < len(stripped) and stripped[pos] not in ",}":
                    if stripped[pos] == "\\" and pos + 1 < len(stripped):
                        pos += 1
                    buf.append(stripped[pos])
                    pos += 1
                word = "".join(buf).strip()
                unquoted_null = stripped[start:pos].strip().upper() == "NULL"
                items.append(None if unquoted_null else element(word))
                expect_item = False
        raise fail()

    result = parse_array()
    if stripped[pos:].strip():
        raise fail()
    return result


# -- COPY's text input ------------------------------------------------------------------------

_BOOLEAN_WORDS = {"t": True, "tr": True, "tru": True, "true": True, "y": True, "ye": True,
                  "yes": True, "on": True, "1": True, "f": False, "fa": False, "fal": False,
                  "fals": False, "false": False, "n": False, "no": False, "of": False,
                  "off": False, "0": False}


def text_input(expression: str, duckdb_type: str) -> str:
    """SQL turning `expression` (VARCHAR in PostgreSQL's text input syntax) into `duckdb_type`.
    DuckDB's casts read most of PostgreSQL's spellings; bytea's hex format and boolean's words
    are spelled out here, and array literals are converted before (`parse_array_literal`)."""
    upper = duckdb_type.upper()
    if upper == "BLOB":
        return (f"CASE WHEN starts_with({expression}, '\\x') THEN unhex(replace(substr("
                f"{expression}, 3), ' ', '')) ELSE CAST({expression} AS BLOB) END")
    if upper == "BOOLEAN":
        words = " ".join(f"WHEN '{word}' THEN {'true' if value else 'false'}"
                         for word, value in _BOOLEAN_WORDS.items())
        return (f"CASE lower(trim({expression})) {words} ELSE CAST({expression} AS BOOLEAN) "
                "END")
    if upper == "INTERVAL":
        # PostgreSQL prints '-1 days +02:00:00'; DuckDB reads the time without its '+'.
        return f"CAST(replace({expression}, ' +', ' ') AS INTERVAL)"
    return f"CAST({expression} AS {duckdb_type})"

"""The names PostgreSQL gives a query's result columns, read from the statement's text.

DuckDB names an unaliased expression after its text (`CAST(x AS VARCHAR)`, `CASE WHEN ...`,
`(ARRAY[1, 2])[1]`) and keeps an unquoted alias as it is written (`AS Total`); PostgreSQL names
the first after what the expression is (FigureColname: `x`, `case`, `array`) and folds the alias
to lower case (`total`). Clients show these names and address columns by them.

Contract:
- `output_name(node, sql)` is PostgreSQL's name of `node`, an unaliased select list item of a
  tree sqlglot parsed from `sql`: a column's name; a function's, as `sql` spells it (sqlglot
  keeps no spelling of some: `substr` reads as SUBSTRING), or PostgreSQL's for special syntax
  (`trim(...)` is btrim, `x AT TIME ZONE z` timezone); a cast's operand's name, else the type's
  (`1::text` is `text`, `'a'::varchar(3)` `varchar`); `case` (or its ELSE's name, when that is
  a column or call), `array`, `row`, `exists`, `coalesce`, `nullif`, `greatest`, `least`, the
  SQL value functions' own names (`current_date`, ...); a scalar subquery's first column's name;
  `bool` for true and false; and `?column?` for operators and constants. Without `sql`, function
  names are sqlglot's.
- `names(query, sql, count)`: per result column of `query` (a Select or set operation of a tree
  parsed from `sql`, with `count` result columns), the name PostgreSQL gives it where DuckDB's
  may differ: an alias (folded to lower case unless quoted) or `output_name` of an unaliased
  expression; None for a plain column and for a star's columns (DuckDB's name is PostgreSQL's),
  and for every column between two stars (their positions are not known from the text). A set
  operation's columns are named by its first query, as in PostgreSQL.
"""

from __future__ import annotations

import re

from sqlglot import exp

UNNAMED = "?column?"
# PostgreSQL's operator characters: an operator's name.
_OPERATOR = re.compile(r"[-+*/<>=~!@#%^&|`?]+")

_T = exp.DataType.Type
# PostgreSQL's names of the types a cast may name a column after (format_type's internal names).
_TYPE_NAMES = {
    _T.BOOLEAN: "bool", _T.SMALLINT: "int2", _T.INT: "int4", _T.BIGINT: "int8",
    _T.FLOAT: "float4", _T.DOUBLE: "float8", _T.DECIMAL: "numeric", _T.VARCHAR: "varchar",
    _T.TEXT: "text", _T.CHAR: "bpchar", _T.BPCHAR: "bpchar", _T.DATE: "date",
    _T.TIMESTAMP: "timestamp", _T.TIMESTAMPTZ: "timestamptz", _T.TIME: "time",
    _T.TIMETZ: "timetz", _T.INTERVAL: "interval", _T.UUID: "uuid", _T.JSON: "json",
    _T.JSONB: "jsonb", _T.VARBINARY: "bytea", _T.BLOB: "bytea", _T.INET: "inet",
}
# Expressions of special syntax, named as the functions PostgreSQL's grammar makes of them.
_SPECIAL = {
    exp.Substring: "substring", exp.StrPosition: "position",
    exp.Overlay: "overlay", exp.AtTimeZone: "timezone", exp.Coalesce: "coalesce",
    exp.Nullif: "nullif", exp.Greatest: "greatest", exp.Least: "least", exp.Count: "count",
    exp.CurrentDate: "current_date", exp.CurrentTime: "current_time",
    exp.CurrentTimestamp: "current_timestamp", exp.Localtime: "localtime",
    exp.Localtimestamp: "localtimestamp", exp.CurrentUser: "current_user",
    exp.SessionUser: "session_user", exp.CurrentSchema: "current_schema",
    exp.Exists: "exists", exp.Array: "array", exp.Tuple: "row", exp.Interval: "interval",
    exp.Boolean: "bool",
    exp.IntDiv: "div",  # sqlglot reads div(a, b) as a cast of a // b
}
# Operators sqlglot reads as functions.
_OPERATORS = (exp.RegexpLike, exp.RegexpILike)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
# A call's name and its opening parenthesis, at the end of the text before its first argument.
_CALLED = re.compile(r'(?:"(?P<quoted>(?:[^"]|"")+)"|(?P<name>[A-Za-z_][A-Za-z0-9_$]*))'
                     r'\s*\(\s*$')
_TRIM = {"LEADING": "ltrim", "TRAILING": "rtrim"}
# The calls `_figured` names by what they are, whatever their spelling.
_FIGURED = (exp.Binary, exp.Anonymous, exp.Cast, exp.Case, exp.Trim, *_OPERATORS, *_SPECIAL)
_RENAMED = {"count_star": "count"}  # DuckDB's text of count(*), in a view's stored query


def output_name(node: exp.Expression, sql: str | None = None) -> str:
    return _figured(node, sql)[0] or UNNAMED


def names(query: exp.Expression, sql: str, count: int) -> tuple[str | None, ...]:
    while isinstance(query, exp.SetOperation | exp.Subquery):
        query = query.this
    out: list[str | None] = [None] * count
    if not isinstance(query, exp.Select):
        return tuple(out)
    items = query.expressions
    stars = [i for i, item in enumerate(items) if _is_star(item)]
    for i, item in enumerate(items):
        if stars and stars[0] < i < stars[-1] or i in stars:
            continue
        position = i if not stars or i < stars[0] else count - (len(items) - i)
        if 0 <= position < count:
            out[position] = _item_name(item, sql)
    return tuple(out)


def _item_name(item: exp.Expression, sql: str | None) -> str | None:
    if isinstance(item, exp.Alias):
        alias = item.args["alias"]
        return alias.name if alias.quoted else alias.name.lower()
    if isinstance(item, exp.Column) or _unspelled(item, sql):
        return None  # DuckDB names it after the function as the statement spells it
    return output_name(item, sql)


def _is_star(item: exp.Expression) -> bool:
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                          and isinstance(item.this, exp.Star))


def _figured(node: exp.Expression, sql: str | None) -> tuple[str | None, int]:
    """(name, strength) as FigureColnameInternal: 2 for a name of the expression itself, 1 for
    a fallback (a cast's type, `case`), 0 for none."""
    if isinstance(node, exp.Paren | exp.Collate | exp.Window | exp.Filter | exp.WithinGroup
                  | exp.Bracket | exp.Alias):
        return _figured(node.this, sql)
    if isinstance(node, exp.Column):
        return (None, 0) if isinstance(node.this, exp.Star) else (node.name, 2)
    if isinstance(node, exp.Dot):
        return node.name, 2
    if isinstance(node, exp.Cast):  # (TryCast too)
        name, strength = _figured(node.this, sql)
        if strength > 1:
            return name, strength
        return _type_name(node.to), 1
    if isinstance(node, exp.Case):
        default = node.args.get("default")
        name, strength = _figured(default, sql) if default is not None else (None, 0)
        return (name, strength) if strength > 1 else ("case", 1)
    if isinstance(node, exp.Subquery):
        select = node.this
        if isinstance(select, exp.Select) and select.expressions and not _is_star(
                select.expressions[0]):
            first = select.expressions[0]
            return _item_name(first, sql) or first.name, 2
        return None, 0
    if isinstance(node, exp.Trim):
        return _TRIM.get(str(node.args.get("position") or "").upper(), "btrim"), 2
    if isinstance(node, exp.Func | exp.Binary) and (spelled := _spelled(node, sql)) is not None:
        return spelled, 2
    if isinstance(node, exp.Anonymous) and _OPERATOR.fullmatch(node.name):
        return None, 0  # a prefix operator (`|/`, as `dialect` keeps it)
    if isinstance(node, exp.Anonymous):
        return _RENAMED.get(node.name.lower(), node.name.lower()), 2
    if (special := _SPECIAL.get(type(node))) is not None:
        return special, 2 if not isinstance(node, exp.Interval | exp.Boolean) else 1
    if isinstance(node, exp.Func) and not isinstance(node, (exp.Binary, *_OPERATORS)):
        return node.sql_name().lower(), 2  # (sqlglot's name of a call it keeps no spelling of)
    return None, 0


def _unspelled(node: exp.Expression, sql: str | None) -> bool:
    """Whether `node` is a call of a function whose spelling sqlglot does not keep (`ceiling`
    reads as CEIL, `date_part` as EXTRACT, `string_agg` as GROUP_CONCAT)."""
    return isinstance(node, exp.Func) and not isinstance(node, _FIGURED) and (
        _spelled(node, sql) is None)


def _spelled(call: exp.Expression, sql: str | None) -> str | None:
    """The function's name as `sql` spells it at the call, lower case unless quoted: where
    sqlglot kept the call's position, or else read back from its first argument's (`name(`
    before it)."""
    if sql is None:
        return None
    start, end = call.meta.get("start"), call.meta.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        # (an operator sqlglot reads as a function, `mod(a, b)`, has its position as a call)
        return None if isinstance(call, exp.Binary) else _spelled_before(call, sql)
    name = sql[start:end + 1]
    if len(name) > 1 and name[0] == name[-1] == '"':
        return name[1:-1].replace('""', '"')
    return name.lower() if _NAME.fullmatch(name) else None


def _spelled_before(call: exp.Expression, sql: str) -> str | None:
    starts = [n.meta["start"] for n in call.walk() if isinstance(n.meta.get("start"), int)]
    if not starts:
        return None
    found = _CALLED.search(sql[:min(starts)])
    if found is None:
        return None
    if found["quoted"] is not None:
        return found["quoted"].replace('""', '"')
    return found["name"].lower()


def _type_name(to: exp.Expression) -> str | None:
    if not isinstance(to, exp.DataType):
        return None
    while to.this == _T.ARRAY and to.expressions:  # text[] is named text
        to = to.expressions[0]
    if (name := _TYPE_NAMES.get(to.this)) is not None:
        return name
    text = to.sql(dialect="postgres").split("(")[0].split(".")[-1].strip('"')
    return text.lower() or None

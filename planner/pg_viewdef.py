"""PostgreSQL's text of a view's query (pg_get_viewdef), from the statement DuckDB keeps.

Contract: `deparse(create_view_sql, column_types_json, pretty)` returns the query of DuckDB's
`CREATE VIEW ... AS <query>` laid out as PostgreSQL 15's pg_get_viewdef prints it, ending in ';'
(None for None). `column_types_json` maps each relation's name to its columns' PostgreSQL type
names (format_type's, without modifiers); with it the text reads as PostgreSQL's does:
- columns qualified by their relation (or its alias), `*` expanded;
- output names PostgreSQL would give (`sum(x) AS sum`; none where a column keeps its name);
- the casts PostgreSQL's parser adds where a constant meets a column of another type
  (`price < 10::numeric`, `title::text ~~ 'S%'::text`, `'2000-01-01'::date`), and what its
  parser makes of `IN (...)` (`= ANY (ARRAY[...])`), `NOT IN`, `BETWEEN`, `count_star()`;
- pretty (PostgreSQL's pretty flag, what psql shows): clauses on their own lines indented as
  PostgreSQL indents them, operators without redundant parentheses; not pretty: every operator
  and join parenthesized, casts of constants parenthesized.
It prints SELECTs over tables and views with inner and outer joins (ON), subqueries in the
select list, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT/OFFSET, DISTINCT, and expressions of
columns, constants, operators, IS [NOT] NULL, casts to built-in types, arrays and function
calls. Anything else (set operations, CTEs, window functions, CASE, USING/NATURAL joins,
DuckDB's own clauses), or a query sqlglot cannot read, comes back as DuckDB printed it.
"""

from __future__ import annotations

import json

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import result_names
from heron.planner.pg_catalog_functions import KEYWORDS

# Casts PostgreSQL adds to a constant compared or combined with a column of a type.
_CONSTANT_TYPES = {"numeric": "numeric", "double precision": "double precision",
                   "real": "real", "text": "text", "character varying": "text",
                   "date": "date", "timestamp without time zone": "timestamp without time zone",
                   "timestamp with time zone": "timestamp with time zone", "interval": "interval",
                   "uuid": "uuid", "bytea": "bytea", "time without time zone":
                   "time without time zone"}
_INTEGER_TYPES = {"smallint", "integer", "bigint"}
# Functions PostgreSQL prints in upper case (they are grammar, not catalog functions).
_GRAMMAR_FUNCTIONS = {"coalesce": "COALESCE", "nullif": "NULLIF", "greatest": "GREATEST",
                      "least": "LEAST"}
_RENAMED = {"count_star": "count"}
_BINARY = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
           exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%",
           exp.DPipe: "||", exp.Like: "~~", exp.ILike: "~~*", exp.And: "AND", exp.Or: "OR"}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Like, exp.ILike)


class _Unsupported(Exception):
    """The query uses something the printer does not know: DuckDB's text is returned."""


def deparse(create_view_sql: str | None, column_types_json: str | None = None,
            pretty: bool = True) -> str | None:
    if create_view_sql is None:
        return None
    types = json.loads(column_types_json) if column_types_json else {}
    try:
        tree = sqlglot.parse_one(create_view_sql, read="duckdb")
        query = tree.expression if isinstance(tree, exp.Create) else tree
        if not isinstance(query, exp.Select):
            raise _Unsupported
        return _Printer(types, pretty).select(query, 0) + ";"
    except (SqlglotError, _Unsupported, KeyError):
        text = create_view_sql.strip().rstrip(";")
        return text.split(" AS ", 1)[1] + ";" if " AS " in text else text + ";"


def _from(select: exp.Select) -> tuple[exp.Expression, list[exp.Join]] | None:
    """The first relation a SELECT reads and the joins after it (DuckDB prints a join inside
    parentheses, which sqlglot reads as the first table carrying the joins)."""
    source = select.args.get("from_")
    if source is None:
        return None
    first = source.this
    while isinstance(first, exp.Subquery) and isinstance(first.this, exp.Table):
        first = first.this
    joins = list(first.args.get("joins") or []) + list(select.args.get("joins") or [])
    return first, joins


class _Scope:
    """The relations a SELECT reads: alias (or name) -> the relation's column types."""

    def __init__(self, select: exp.Select, types: dict[str, dict[str, str]]) -> None:
        self.relations: dict[str, dict[str, str]] = {}
        found = _from(select)
        if found is not None:
            first, joins = found
            for table in [first] + [j.this for j in joins]:
                if not isinstance(table, exp.Table):
                    raise _Unsupported
                self.relations[table.alias_or_name] = types.get(table.name, {})

    def owner(self, column: str) -> str | None:
        owners = [name for name, columns in self.relations.items() if column in columns]
        if len(owners) == 1:
            return owners[0]
        return next(iter(self.relations)) if len(self.relations) == 1 else None

    def type_of(self, node: exp.Expression) -> str | None:
        if isinstance(node, exp.Column):
            relation = node.table or self.owner(node.name)
            return self.relations.get(relation, {}).get(node.name)
        if isinstance(node, exp.Paren):
            return self.type_of(node.this)
        return None


class _Printer:
    def __init__(self, types: dict[str, dict[str, str]], pretty: bool) -> None:
        self.types = types
        self.pretty = pretty

    # -- clauses ------------------------------------------------------------------------------

    def select(self, select: exp.Select, indent: int) -> str:
        scope = _Scope(select, self.types)
        pad = " " * indent
        items = [self.target(item, scope) for item in self.targets(select, scope)]
        distinct = select.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            raise _Unsupported
        keyword = "SELECT DISTINCT" if distinct is not None else "SELECT"
        text = f"{pad} {keyword} " + f",\n{pad}    ".join(items)
        if select.args.get("from_") is not None:
            text += f"\n{pad}   FROM " + self.from_clause(select, scope, indent)
        if select.args.get("where") is not None:
            text += f"\n{pad}  WHERE " + self.expr(select.args["where"].this, scope, top=True)
        if select.args.get("group") is not None:
            if not select.args["group"].expressions:
                raise _Unsupported  # DuckDB's GROUP BY ALL
            text += f"\n{pad}  GROUP BY " + ", ".join(
                self.expr(e, scope, top=True) for e in select.args["group"].expressions)
        if select.args.get("having") is not None:
            text += f"\n{pad} HAVING " + self.expr(select.args["having"].this, scope, top=True)
        if select.args.get("order") is not None:
            text += f"\n{pad}  ORDER BY " + ", ".join(
                self.ordered(o, scope) for o in select.args["order"].expressions)
        if select.args.get("limit") is not None:
            text += f"\n{pad} LIMIT " + self.expr(select.args["limit"].expression, scope)
        if select.args.get("offset") is not None:
            text += f"\n{pad} OFFSET " + self.expr(select.args["offset"].expression, scope)
        for key in ("with", "qualify", "windows"):
            if select.args.get(key):
                raise _Unsupported
        return text

    def targets(self, select: exp.Select, scope: _Scope) -> list[exp.Expression]:
        """The select list with `*` and `t.*` expanded to the relations' columns."""
        out: list[exp.Expression] = []
        for item in select.expressions:
            if isinstance(item, exp.Star) or (
                    isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
                star = item.this if isinstance(item, exp.Column) else item
                if any(star.args.values()):
                    raise _Unsupported  # DuckDB's * EXCLUDE/REPLACE/RENAME
                names = [item.table] if isinstance(item, exp.Column) else list(scope.relations)
                for name in names:
                    columns = scope.relations.get(name)
                    if not columns:
                        raise _Unsupported
                    out += [exp.column(c, table=name) for c in columns]
            else:
                out.append(item)
        return out

    def target(self, item: exp.Expression, scope: _Scope) -> str:
        value = item.this if isinstance(item, exp.Alias) else item
        text = self.expr(value, scope, top=True)
        name = item.alias if isinstance(item, exp.Alias) else result_names.output_name(value)
        if isinstance(value, exp.Column) and value.name == name:
            return text
        return f"{text} AS {_identifier(name)}"

    def from_clause(self, select: exp.Select, scope: _Scope, indent: int) -> str:
        first, joins = _from(select)
        text = self.relation(first)
        pad = " " * indent
        for join in joins:
            if join.args.get("using") or join.args.get("method"):
                raise _Unsupported  # USING and NATURAL: PostgreSQL prints what they mean
            kind = " ".join(k for k in (join.side, join.kind) if k).upper()
            keyword = f"{kind} JOIN" if kind and kind != "INNER" else "JOIN"
            on = join.args.get("on")
            condition = "" if on is None else (
                f" ON {self.expr(on, scope, top=True)}" if self.pretty else
                f" ON ({self.expr(on, scope, top=True)})")
            if self.pretty:
                text += f"\n{pad}     {keyword} {self.relation(join.this)}{condition}"
            else:
                text = f"({text}\n{pad}     {keyword} {self.relation(join.this)}{condition})"
        return text

    def relation(self, node: exp.Expression) -> str:
        if isinstance(node, exp.Table):
            text = _identifier(node.name)
            if node.db and node.db not in ("main", "public"):
                text = f"{_identifier(node.db)}.{text}"
            return f"{text} {_identifier(node.alias)}" if node.alias else text
        raise _Unsupported

    def ordered(self, node: exp.Ordered, scope: _Scope) -> str:
        text = self.expr(node.this, scope, top=True)
        return text + (" DESC" if node.args.get("desc") else "")

    # -- expressions --------------------------------------------------------------------------

    def expr(self, node: exp.Expression, scope: _Scope, top: bool = False) -> str:
        if isinstance(node, exp.Paren):
            return self.expr(node.this, scope, top)
        if isinstance(node, exp.Column):
            relation = node.table or scope.owner(node.name)
            name = _identifier(node.name)
            return f"{_identifier(relation)}.{name}" if relation else name
        if isinstance(node, exp.Literal):
            return node.name if not node.is_string else "'" + node.name.replace("'", "''") + "'"
        if isinstance(node, exp.Boolean):
            return "true" if node.this else "false"
        if isinstance(node, exp.Null):
            return "NULL"
        inner = node.this.this if isinstance(node, exp.Not) and isinstance(
            node.this, exp.Paren) else node.this
        if isinstance(node, exp.Not) and isinstance(inner, exp.In):
            return self.in_list(inner, scope, top, negated=True)
        if isinstance(node, exp.Not) and isinstance(inner, exp.Is):
            return self.is_null(inner, scope, top, negated=True)
        if isinstance(node, exp.Not):
            return "NOT " + self.operand(node.this, scope)
        if isinstance(node, exp.In):
            return self.in_list(node, scope, top)
        if isinstance(node, exp.Is):
            return self.is_null(node, scope, top)
        if isinstance(node, exp.Between):  # PostgreSQL's parser spells it out
            low = exp.GTE(this=node.this.copy(), expression=node.args["low"].copy())
            high = exp.LTE(this=node.this.copy(), expression=node.args["high"].copy())
            return self.expr(exp.And(this=low, expression=high), scope, top)
        if type(node) in _BINARY:
            return self.binary(node, scope, top)
        if isinstance(node, exp.Cast):
            return self.cast_expression(node, scope)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
            body = self.select(node.this, 8).lstrip()
            return f"( {body})"
        if isinstance(node, exp.Array):
            return "ARRAY[" + ", ".join(self.expr(e, scope, top=True)
                                        for e in node.expressions) + "]"
        if isinstance(node, exp.Anonymous) or _is_plain_call(node):
            return self.call(node, scope)
        raise _Unsupported

    def is_null(self, node: exp.Is, scope: _Scope, top: bool, negated: bool = False) -> str:
        if not isinstance(node.expression, exp.Null):
            raise _Unsupported
        text = f"{self.operand(node.this, scope)} IS {'NOT ' if negated else ''}NULL"
        return text if self.pretty else f"({text})"

    def cast_expression(self, node: exp.Cast, scope: _Scope) -> str:
        to = node.args["to"]
        name = _CAST_TYPES.get(to.this) if isinstance(to, exp.DataType) else None
        if name is None:
            raise _Unsupported
        if to.this == exp.DataType.Type.DECIMAL and to.expressions:
            name += "(" + ",".join(p.name for p in to.expressions) + ")"
        inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
        string = isinstance(inner, exp.Literal) and inner.is_string
        return self.cast(self.operand(node.this, scope), name, string)

    def operand(self, node: exp.Expression, scope: _Scope) -> str:
        text = self.expr(node, scope)
        inner = node.this if isinstance(node, exp.Paren) else node
        if type(inner) in _BINARY or isinstance(inner, exp.In):
            return f"({text})"
        return text

    def binary(self, node: exp.Binary, scope: _Scope, top: bool) -> str:
        left, right = node.this, node.expression
        op = _BINARY[type(node)]
        if isinstance(node, exp.And | exp.Or):
            parts = [self.boolean_operand(p, type(node), scope) for p in (left, right)]
            text = f"{parts[0]} {op} {parts[1]}"
        else:
            left_type, right_type = scope.type_of(left), scope.type_of(right)
            text = (f"{self.typed(left, right_type, node, scope)} {op} "
                    f"{self.typed(right, left_type, node, scope)}")
        return text if self.pretty else f"({text})"

    def boolean_operand(self, node: exp.Expression, parent: type, scope: _Scope) -> str:
        inner = node.this if isinstance(node, exp.Paren) else node
        if isinstance(inner, exp.And | exp.Or) and type(inner) is not parent:
            return f"({self.expr(inner, scope, top=True)})"
        if self.pretty and _is_array_comparison(inner):  # PostgreSQL parenthesizes these
            return f"({self.expr(inner, scope, top=True)})"
        return self.expr(inner, scope, top=self.pretty)

    def typed(self, node: exp.Expression, other_type: str | None, parent: exp.Expression,
              scope: _Scope) -> str:
        """`node` with the cast PostgreSQL's parser adds when it meets a column of
        `other_type` under `parent`."""
        inner = node.this if isinstance(node, exp.Paren) else node
        own_type = scope.type_of(inner)
        text = self.operand(node, scope)
        if isinstance(inner, exp.Literal) and other_type is not None:
            target = _constant_cast(inner, other_type)
            return self.cast(text, target, inner.is_string) if target else text
        if own_type == "character varying" and (
                isinstance(parent, _COMPARISONS + (exp.DPipe,)) and other_type != own_type):
            return self.cast(text, "text")
        return text

    def cast(self, text: str, type_name: str, string: bool = False) -> str:
        """`text`::`type_name`; not pretty, PostgreSQL parenthesizes all but a string."""
        return f"{text}::{type_name}" if self.pretty or string else f"({text})::{type_name}"

    def in_list(self, node: exp.In, scope: _Scope, top: bool, negated: bool = False) -> str:
        """`x IN (a, b)` as PostgreSQL's parser makes it: `x = ANY (ARRAY[a, b])` (NOT IN:
        `x <> ALL (...)`)."""
        values = node.expressions
        if not values or node.args.get("query") is not None:
            raise _Unsupported
        column_type = scope.type_of(node.this)
        items = ", ".join(self.typed(v, column_type, node, scope) for v in values)
        operator = "<> ALL" if negated else "= ANY"
        text = f"{self.operand(node.this, scope)} {operator} (ARRAY[{items}])"
        return text if top and self.pretty else f"({text})"

    def call(self, node: exp.Func, scope: _Scope) -> str:
        name = node.name.lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()
        name = _RENAMED.get(name, name)
        args = node.expressions if isinstance(node, exp.Anonymous) else [
            a for a in ([node.this] + list(node.expressions)) if isinstance(a, exp.Expression)]
        if name == "count" and (not args or isinstance(args[0], exp.Star)):
            return "count(*)"
        if isinstance(node, exp.Coalesce):
            first_type = scope.type_of(node.this)
            texts = [self.expr(node.this, scope, top=True)] + [
                self.typed(a, first_type, node, scope) for a in node.expressions]
            return f"COALESCE({', '.join(texts)})"
        texts = []
        for arg in args:
            text = self.expr(arg, scope, top=True)
            if scope.type_of(arg) == "character varying" and name in _TEXT_FUNCTIONS:
                text = self.cast(text, "text")
            texts.append(text)
        return f"{_GRAMMAR_FUNCTIONS.get(name, name)}({', '.join(texts)})"


def _is_array_comparison(node: exp.Expression) -> bool:
    """`x IN (...)` or `NOT x IN (...)`: PostgreSQL's `= ANY (ARRAY[...])`, `<> ALL (...)`."""
    if isinstance(node, exp.Not):
        node = node.this.this if isinstance(node.this, exp.Paren) else node.this
    return isinstance(node, exp.In)


def _is_plain_call(node: exp.Expression) -> bool:
    """A function call whose arguments are all positional (sqlglot keeps them as `this` and
    `expressions`): printed as name(arguments)."""
    if not isinstance(node, exp.Func) or isinstance(node, exp.Binary | exp.Array | exp.Cast):
        return False
    return all(v in (None, False) or key in ("this", "expressions") for key, v in node.args.items())


_T = exp.DataType.Type
# DuckDB's cast targets -> PostgreSQL's name of the type.
_CAST_TYPES = {
    _T.BOOLEAN: "boolean", _T.SMALLINT: "smallint", _T.INT: "integer", _T.BIGINT: "bigint",
    _T.FLOAT: "real", _T.DOUBLE: "double precision", _T.DECIMAL: "numeric",
    _T.VARCHAR: "character varying", _T.TEXT: "text", _T.DATE: "date",
    _T.TIMESTAMP: "timestamp without time zone", _T.TIMESTAMPTZ: "timestamp with time zone",
    _T.TIME: "time without time zone", _T.INTERVAL: "interval", _T.UUID: "uuid",
}
# Functions of text: a varchar argument is cast to text, as PostgreSQL resolves them.
_TEXT_FUNCTIONS = {"lower", "upper", "length", "trim", "btrim", "ltrim", "rtrim", "substr",
                   "substring", "replace", "left", "right", "reverse", "initcap"}


def _constant_cast(literal: exp.Literal, other_type: str) -> str | None:
    """The type a constant takes beside a value of `other_type`, when PostgreSQL shows it."""
    if literal.is_string:
        return _CONSTANT_TYPES.get(other_type, "text") if other_type not in _INTEGER_TYPES else (
            None)
    is_integer = literal.name.lstrip("-").isdigit()
    if other_type in _INTEGER_TYPES:
        return None
    if other_type == "numeric":
        return "numeric" if is_integer else None
    if other_type in ("double precision", "real"):
        return other_type
    return None


def _identifier(name: str) -> str:
    """An identifier quoted as PostgreSQL's quote_ident quotes it."""
    if name.isidentifier() and name == name.lower() and name.isascii() and name not in KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'

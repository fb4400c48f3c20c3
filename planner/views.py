"""AI views: views whose query calls AI functions, stored with the calls intact and planned when
a statement reads them.

Contract: `MACROS` are the macros that stand for AI calls inside stored views
(`__heron_ai_boolean`, ..._label, ..._score, ..._text), which every session shares
(`heron.planner.shared_macros`): DuckDB binds a view through them (its columns and their types,
the columns each call reads), and evaluating one outside the planner fails with a message naming
the call. `encode(tree)` is the CREATE VIEW
statement to store for a parsed CREATE VIEW calling AI functions: each call becomes a macro call
holding the call's text as written and the list of its prompt values. `expand(con, tree)`
replaces, in a parsed statement, every reference to an AI view — a view whose query calls AI
functions, directly or through other views — by that view's query with the calls restored (a
CTE of the same name shadows the view, as in SQL), recursively; it returns whether anything was
replaced. `ai_views(con)` lists the AI views by name, and `names_any(sql, names)` answers cheaply
whether a statement names one of them.
"""

from __future__ import annotations

import re

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from heron.engine.api import AnswerKind
from heron.planner import dialect, functions, scopes
from heron.planner.dialect import AIFunction
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.pg_catalog_functions import Macros

MACRO = "__heron_ai_"
_KINDS = {kind: f"{MACRO}{kind.value}" for kind in AnswerKind}
MAX_DEPTH = 16  # views reading views reading views ...


_SQL_TYPES = {f.answer: f.sql_type for f in reversed(functions.FUNCTIONS.values())}
MACROS: Macros = {
    name: (("call_text, prompt_values",
            f"CAST(error('this view calls ' || call_text || ', which only Heron''s planner "
            f"evaluates') AS {_SQL_TYPES[kind]})"),)
    for kind, name in _KINDS.items()}


def encode(tree: exp.Create) -> str:
    """The CREATE VIEW statement DuckDB stores for a view calling AI functions."""
    stored = tree.copy()
    outermost = [node for node in stored.find_all(AIFunction)
                 if not any(isinstance(a, AIFunction) for a in scopes.ancestors(node.parent))]
    for node in outermost:  # (calls inside another's prompt travel in its text)
        entry = functions.lookup(node)
        values = exp.Array(expressions=[exp.cast(c.copy(), "VARCHAR")
                                        for c in node.arguments[0].find_all(exp.Column)])
        node.replace(exp.Anonymous(this=_KINDS[entry.answer], expressions=[
            exp.Literal.string(dialect.sql(node)), values]))
    return stored.sql(dialect="duckdb")


def ai_views(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], str]:
    """(schema, view) in lower case -> the stored CREATE VIEW text, for every AI view."""
    try:
        views = con.execute("SELECT lower(schema_name), lower(view_name), sql FROM "
                            "duckdb_views() WHERE NOT internal").fetchall()
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    found = {(s, v): sql for s, v, sql in views if MACRO in sql}
    grown = True
    while grown:  # views reading AI views are AI views
        grown = False
        names = {v for _, v in found}
        for schema, view, sql in views:
            if (schema, view) not in found and names_any(sql, names):
                found[(schema, view)] = sql
                grown = True
    return found


def names_any(sql: str, names: set[str]) -> bool:
    return bool(names) and re.search(
        r"\b(" + "|".join(re.escape(n) for n in names) + r")\b", sql, re.IGNORECASE) is not None


def expand(con: duckdb.DuckDBPyConnection, tree: exp.Expression) -> bool:
    views = ai_views(con)
    if not views:
        return False
    changed = False
    for _ in range(MAX_DEPTH):
        replaced = False
        for table in list(tree.find_all(exp.Table)):
            body = _view_of(table, views)
            if body is None:
                continue
            table.replace(_inline(table, body))
            replaced = changed = True
        if not replaced:
            return changed
    raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                   f"views read other views more than {MAX_DEPTH} levels deep")


def _view_of(table: exp.Table, views: dict[tuple[str, str], str]) -> str | None:
    if not isinstance(table.this, exp.Identifier) or not isinstance(
            table.parent, exp.From | exp.Join) or table.arg_key != "this":
        return None
    name = table.name.lower()
    if not table.db and _shadowed_by_cte(table, name):
        return None
    matches = [sql for (schema, view), sql in views.items()
               if view == name and (not table.db or schema == table.db.lower())]
    return matches[0] if matches else None


def _shadowed_by_cte(table: exp.Table, name: str) -> bool:
    for ancestor in scopes.ancestors(table):
        with_ = ancestor.args.get("with_")
        if isinstance(with_, exp.With) and any(c.alias_or_name.lower() == name
                                               for c in with_.expressions):
            return True
    return False


def _inline(table: exp.Table, stored: str) -> exp.Expression:
    """The view's query, its AI calls restored, as a derived table named like the reference."""
    try:
        create = sqlglot.parse_one(stored.rstrip().rstrip(";"), read="duckdb")
    except ParseError as exc:
        raise SqlError(SqlState.INTERNAL_ERROR, f"cannot read a stored AI view: {exc}") from None
    query = create.expression.copy()
    for call in list(query.find_all(exp.Anonymous)):
        if call.name.lower().startswith(MACRO):
            text = call.expressions[0].this
            restored = dialect.parse(f"SELECT {text}").expressions[0]
            call.replace(restored)
    columns = []
    target = create.this
    if isinstance(target, exp.Schema):
        columns = [c.copy() for c in target.expressions]
    alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name),
                           columns=columns or None)
    return exp.Subquery(this=query, alias=alias)

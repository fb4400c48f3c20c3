"""jsonb stored normalized: wherever a value becomes jsonb, it becomes `pg_jsonb.normalize`'s text.

DuckDB compares JSON as text; PostgreSQL compares jsonb values parsed ('{"b":1,"a":2}' equals
'{"a": 2, "b": 1}'). Kept as PostgreSQL prints it, equal jsonb values are equal text, so DuckDB's
=, <>, IN, DISTINCT, GROUP BY, joins, set operations and hashing are jsonb's with no rewrite of
any comparison. What it does not give: jsonb's order (ORDER BY, <, > compare the text: equal
values sort together, in text order, not btree's objects > arrays > booleans > numbers > strings
> null), and numbers equal by value (1.0 and 1 stay two texts, as PostgreSQL prints them).

Contract:
- `normalized(value)` is the expression storing `value` as jsonb: a string literal normalized
  here (bad input raises `SqlError` 22P02 at once, as jsonb_in does at PostgreSQL's parse), NULL,
  DEFAULT and a value already normalized as they are, anything else through DuckDB's
  `pg_jsonb.NORMALIZE`.
- `casts(tree)` normalizes each cast to jsonb in `tree`, in place (a select list item keeps the
  name DuckDB gives the cast); it returns the casts changed.
- `writes(tree, relations)` normalizes, in place, each value that an INSERT (its VALUES rows or
  its query's columns), an UPDATE's or ON CONFLICT DO UPDATE's SET, or a CREATE TABLE's literal
  DEFAULT puts in a jsonb column; it returns the nodes changed. A table's jsonb columns are
  those whose origin (`column_origins.Relations`) declares jsonb.
- `compared(tree, relations)` normalizes, in place, each string literal compared (=, <>, <, >,
  IS DISTINCT FROM, IN) with a jsonb value (a jsonb column of a SELECT's FROM clause, a cast to
  jsonb, `->` of jsonb): PostgreSQL reads that literal as jsonb. It returns the literals changed.
- `jsonb_valued(node, relations)`: whether an expression is jsonb (`column_origins`).
- `may_write(sql, relations)`, `may_compare(sql, relations)` and `names_jsonb_table(sql,
  relations)` are the cheap tests before parsing: whether `sql` may insert into or update a
  table with a jsonb column, or name such a table and hold a string literal, or name one
  (`relations`, maybe a function, is called only for an INSERT or UPDATE, or a statement with
  a literal, by the first two).
- `rewrite(sql, relations)` is `writes` alone on DuckDB's SQL (COPY's INSERTs); `sql` comes back
  unchanged, unparsed, when `may_write` finds nothing.
- `normalize_stored(con)` normalizes the jsonb columns of a database an earlier Heron wrote (text
  as clients wrote it), in one transaction; a value `normalize` refuses (DuckDB's JSON reads
  more: trailing commas, NaN) is kept as it is, so nothing stored is lost. It returns the number
  of values changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import dialect, pg_jsonb
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError
from heron.planner.pg_types import JSONB

# column_origins and pg_catalog_relations are imported where used: they import pg_semantics
# (through pg_catalog_types), which imports this.
if TYPE_CHECKING:
    from heron.planner.column_origins import Columns, Relations

_T = exp.DataType.Type
_NAME = IDENTIFIER
# The table an INSERT or UPDATE writes (ON CONFLICT's DO UPDATE finds "SET", no table).
_WRITTEN = re.compile(rf"\b(?:INSERT\s+INTO|UPDATE)\s+(?P<name>{_NAME}(?:\s*\.\s*{_NAME})*)",
                      re.IGNORECASE)
_PART = re.compile(_NAME)


def normalized(value: exp.Expression) -> exp.Expression:
    """What stores `value` as jsonb (see the module docstring)."""
    if isinstance(value, exp.Literal) and value.is_string:
        return exp.Literal.string(pg_jsonb.normalize(value.name))
    if isinstance(value, exp.Null) or (isinstance(value, exp.Var) and value.name.upper() == (
            "DEFAULT")) or _normalizing(value):
        return value
    return exp.Anonymous(this=pg_jsonb.NORMALIZE, expressions=[value])


def _normalize(node: exp.Expression) -> None:
    """Put `normalized(node)` in `node`'s place (the call holding `node` takes it: replacing
    `node` by it would replace `node` within it)."""
    holder = exp.null()
    node.replace(holder)
    holder.replace(normalized(node))


def _normalizing(value: exp.Expression) -> bool:
    """Whether `value` is already normalized jsonb: a cast to jsonb (`casts` normalizes it), or
    the normalizing call."""
    return (isinstance(value, exp.Cast) and value.to.this == _T.JSONB) or (
        isinstance(value, exp.Anonymous) and value.name == pg_jsonb.NORMALIZE)


def casts(tree: exp.Expression) -> list[exp.Expression]:
    """Normalize each cast to jsonb in `tree` (see the module docstring); the casts changed."""
    changed: list[exp.Expression] = []
    for cast in list(tree.find_all(exp.Cast)):
        if cast.to.this != _T.JSONB:
            continue
        value = cast.this
        if isinstance(value, exp.Literal) and value.is_string:
            _normalize(value)
        else:  # named as DuckDB names the cast, as before (the server names it as PostgreSQL)
            name = exp.cast(value.copy(), "JSON").sql(dialect="duckdb")
            item = isinstance(cast.parent, exp.Select) and cast.arg_key == "expressions"
            holder = exp.null()
            cast.replace(holder)  # the cast itself moves into the call: casts inside it stay
            call = exp.Anonymous(this=pg_jsonb.NORMALIZE, expressions=[cast])
            holder.replace(exp.alias_(call, name, quoted=True) if item else call)
        changed.append(cast)
    return changed


def writes(tree: exp.Expression, relations: Relations | Callable[[], Relations] | None
           ) -> list[exp.Expression]:
    """Normalize the values `tree` writes into jsonb columns (see the module docstring); the
    nodes changed."""
    changed: list[exp.Expression] = []
    for create in tree.find_all(exp.ColumnDef):
        kind = create.args.get("kind")
        if isinstance(kind, exp.DataType) and kind.this == _T.JSONB:
            for default in create.find_all(exp.DefaultColumnConstraint):
                if isinstance(default.this, exp.Literal) and default.this.is_string:
                    _normalize(default.this)
                    changed.append(default)
    found = _found(relations) if tree.find(exp.Insert, exp.Update) is not None else None
    if found is None:
        return changed
    for insert in tree.find_all(exp.Insert):
        target = insert.this
        table = target.this if isinstance(target, exp.Schema) else target
        jsonb = _jsonb_columns(table, found)
        if not jsonb:
            continue
        columns = [c.name.lower() for c in target.expressions] if isinstance(
            target, exp.Schema) else [name for name, _ in found.find(*_key(table)) or ()]
        positions = [i for i, name in enumerate(columns) if name in jsonb]
        changed += _inserted(insert, positions)
        conflict = insert.args.get("conflict")
        if conflict is not None:
            changed += _set(conflict.expressions, jsonb)
    for update in tree.find_all(exp.Update):
        jsonb = _jsonb_columns(update.this, found)
        if jsonb:
            changed += _set(update.expressions, jsonb)
    return changed


def _found(relations: Relations | Callable[[], Relations] | None) -> Relations | None:
    return relations() if callable(relations) else relations


def _key(table: exp.Expression) -> tuple[str | None, str]:
    """A table's (schema, name) as `Relations.find` looks it up."""
    schema = table.args.get("db")
    return (schema.name.lower() if schema is not None else None), table.name.lower()


def _jsonb_columns(table: exp.Expression, relations: Relations) -> frozenset[str]:
    """The names of `table`'s jsonb columns (none for what is not a known table)."""
    if not isinstance(table, exp.Table):
        return frozenset()
    return _jsonb_names(relations.find(*_key(table)))


def _jsonb_names(columns: Columns | None) -> frozenset[str]:
    return frozenset(name for name, origin in columns or () if origin.type_oid == JSONB.oid)


def _inserted(insert: exp.Insert, positions: list[int]) -> list[exp.Expression]:
    """Normalize what an INSERT puts at `positions` of its columns: each VALUES row's value
    there, or the query's column there (the query then reads from a derived table whose
    columns are named by position)."""
    source = insert.expression
    if not positions or source is None or insert.args.get("by_name"):
        return []
    if isinstance(source, exp.Values):
        for row in source.expressions:
            values = row.expressions if isinstance(row, exp.Tuple) else []
            for i in positions:
                if i < len(values):
                    _normalize(values[i])
        return [source]
    if not isinstance(source, exp.Query):
        return []
    names = [f"heron_column_{i}" for i in range(max(positions) + 1)]
    derived = exp.Subquery(this=source, alias=exp.TableAlias(
        this=exp.to_identifier("heron_inserted"),
        columns=[exp.to_identifier(name) for name in names]))
    star = exp.Star(replace=[exp.alias_(normalized(exp.column(names[i])), names[i])
                             for i in positions])  # the other columns as they are
    insert.set("expression", exp.select(star).from_(derived, copy=False))
    return [source]


def _set(assignments: list[exp.Expression], jsonb: frozenset[str]) -> list[exp.Expression]:
    """Normalize the values of SET's `column = value` items whose column is jsonb."""
    changed = []
    for item in assignments:
        if isinstance(item, exp.EQ) and isinstance(item.this, exp.Column) and (
                item.this.name.lower() in jsonb):
            _normalize(item.expression)
            changed.append(item)
    return changed


_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ,
                exp.NullSafeNEQ)


def compared(tree: exp.Expression, relations: Relations | Callable[[], Relations] | None
             ) -> list[exp.Expression]:
    """Normalize the string literals `tree` compares with jsonb values (see the module
    docstring); the literals changed."""
    changed: list[exp.Expression] = []
    for literal in list(tree.find_all(exp.Literal)):
        parent = literal.parent
        if not literal.is_string or parent is None:
            continue
        if isinstance(parent, _COMPARISONS):
            other = parent.expression if literal is parent.this else parent.this
        elif isinstance(parent, exp.In) and literal.arg_key == "expressions":
            other = parent.this
        else:
            continue
        if jsonb_valued(other, relations):
            _normalize(literal)
            changed.append(literal)
    return changed


def jsonb_valued(node: exp.Expression, relations: Relations | Callable[[], Relations] | None
                  ) -> bool:
    """Whether `node` is jsonb, as `column_origins` declares a result column of its query."""
    from heron.planner import column_origins

    found = _found(relations) or column_origins.Relations({}, ())
    return column_origins.declared(node, found).type_oid == JSONB.oid


def may_compare(sql: str, relations: Relations | Callable[[], Relations] | None) -> bool:
    """Whether `sql` holds a string literal and names a table with a jsonb column."""
    return "'" in sql and names_jsonb_table(sql, relations)


def names_jsonb_table(sql: str, relations: Relations | Callable[[], Relations] | None) -> bool:
    """Whether `sql` names (as a word) a table with a jsonb column."""
    found = _found(relations)
    if found is None:
        return False
    words = set(re.findall(r"\w+", sql.lower()))
    return any(name in words and _jsonb_names(columns)
               for (_, name), columns in found.by_name.items())


def may_write(sql: str, relations: Relations | Callable[[], Relations] | None) -> bool:
    """Whether `sql` may insert into or update a table with a jsonb column (of `relations`)."""
    names = [m["name"] for m in _WRITTEN.finditer(sql)]
    found = _found(relations) if names else None
    if found is None:
        return False
    for name in names:
        parts = [p[1:-1].replace('""', '"') if p.startswith('"') else p.lower()
                 for p in _PART.findall(name)]
        if _jsonb_names(found.find(parts[-2] if len(parts) > 1 else None, parts[-1])):
            return True
    return False


def rewrite(sql: str, relations: Relations | Callable[[], Relations] | None) -> str:
    """`sql` (DuckDB's) with the values it writes into jsonb columns normalized."""
    if not may_write(sql, relations):
        return sql
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return sql  # DuckDB reports its own error
    return tree.sql(dialect="duckdb") if writes(tree, relations) else sql


def normalize_stored(con: duckdb.DuckDBPyConnection) -> int:
    """Normalize the jsonb values an earlier Heron stored as written (see the module
    docstring); the number of values changed."""
    from heron.planner import pg_catalog_relations

    columns = con.execute(f"""
        SELECT t.schema_name, t.table_name, j.column_name
        FROM {pg_catalog_relations.JSONB_COLUMNS} j
        JOIN duckdb_tables() t ON t.table_oid = j.table_oid
        WHERE t.database_name = current_database() AND NOT t.temporary""").fetchall()
    if not columns:
        return 0
    name = "heron_jsonb_kept_or_normalized"
    con.create_function(name, _kept_or_normalized, ["VARCHAR"], "VARCHAR")
    changed = 0
    try:
        con.execute("BEGIN TRANSACTION")
        for schema, table, column in columns:
            c = dialect.quoted(column)
            changed += con.execute(
                f"UPDATE {dialect.quoted(schema)}.{dialect.quoted(table)} SET {c} = {name}({c}) "
                f"WHERE {c} IS NOT NULL AND {c} <> {name}({c})").fetchall()[0][0]
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.remove_function(name)
    return changed


def _kept_or_normalized(text: str) -> str:
    try:
        return pg_jsonb.normalize(text)
    except SqlError:  # what PostgreSQL would have refused: kept, never lost
        return text


"""Where a query's result columns come from: the table column each one reads unchanged, and the
type the statement declares where DuckDB keeps only the values' type.

Contract: an `Origin` is what PostgreSQL's RowDescription tells of a column besides its values'
type: the name PostgreSQL gives it where DuckDB's may differ (`result_names`), the relation (its
pg_class OID) and column number (pg_attribute's attnum) it reads unchanged — through
parentheses, aliases, derived tables, CTEs and joins; a view's own column, as PostgreSQL marks
it — and the declared type DuckDB does not keep (a varchar(n) table
column or cast: 1043 with typmod n + 4; numeric(p, s): 1700 with typmod ((p << 16) | s) + 4;
0 and -1 where the values' type says it all; `"char"`, OID 18, for a catalog column of that
type, whose text values are single characters). `NO_ORIGIN` is a computed column's.
`Relations.load(con)` reads the tables and views a connection's statements can name (OIDs, columns,
declared types as the catalog shim's pg_attribute tells them; a view's declared types follow its
definition; `texted_otherwise`, those with a column DuckDB's cast to text may print otherwise
than PostgreSQL: an interval, a timestamp or time, an array, a float; `enums`, the table columns
of an enum type) in three scans of DuckDB's catalog; `Relations.named(sql, keys)` tells whether
a statement names one of them.
`origins(sql, relations)` resolves a query's (or a RETURNING clause's) result columns
(PostgreSQL text as the client sent it, read as `dialect.PostgresSql` reads it); None when it
cannot follow them column by column (a star over a function's rows, or over joins whose merged
columns DuckDB lists otherwise than PostgreSQL). jsonb, which DuckDB keeps as JSON, is a declared
type (OID 3802): a cast to jsonb, a table column declared jsonb (Heron's DDL marks it with a
CHECK, as the catalog shim's pg_attribute reads it), `->` / `#>` of a jsonb value, and the
functions returning jsonb that DuckDB computes (jsonb_build_object, jsonb_build_array, jsonb_agg,
jsonb_object_agg, jsonb_extract_path, jsonb_array_elements; in FROM the value columns of
jsonb_each and jsonb_array_elements);
its values are JSON, encoded as jsonb. current_user, session_user, current_role, user,
current_catalog, current_schema and current_database() are `name` (OID 19), text encoded alike. The
catalog shim's relations (`pg_catalog_relations`) are known without reading DuckDB, as PostgreSQL
declares their columns (an unqualified name finds them before the search path: the shim's TEMP
views shadow the rest); a catalog table's columns carry its fixed OID. A star over joins that merge
columns (USING, NATURAL, chains of them) lists each join's merged columns first, as PostgreSQL's
does; `moved_columns(select, relations)` names those `pg_semantics.rewrite` moves before DuckDB's
star so that it lists the same, decided here once for
both. A set operation's columns are computed, of the first branch's declared type (`"char"` only
where every branch's is).
A RETURNING clause's columns are those of `returning_query(dml)`, the query over the target
table (and UPDATE's FROM, DELETE's USING) that lists the same; a CREATE TABLE AS's those of the
query it stores (`stored_query`); `declared(node, relations)` is
the origin of one expression of a parsed statement, as its query's FROM clause gives it.
`announced(values_oid, origin)` is the type a column is announced as (a view's pg_attribute);
`wire_type(values, origin)` the type (and typmod) a result column of Arrow type `values` is
sent as: what RowDescription announces and what the DataRow encoders (`server/encode.py`)
encode, decided here only. Pure over sqlglot trees; only `Relations.load` queries DuckDB.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import takewhile

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from heron.planner import pg_information_schema, result_names
from heron.planner.dialect import BLANK_PADDED, PostgresSql
from heron.planner.pg_catalog_relations import (
    BPCHAR_CHECK,
    JSONB_CHECK,
    LENGTH_CHECK,
    QUERY_VIEW_PREFIX,
    RELATIONS,
    UNPOPULATED,
    Relation,
)
from heron.planner.pg_types import (
    BPCHAR,
    BY_OID,
    CHAR,
    JSON,
    JSONB,
    NAME,
    NUMERIC,
    TEXT,
    VARCHAR,
    PgType,
    blank_padded,
    for_arrow,
)


@dataclass(frozen=True, slots=True)
class Origin:
    table_oid: int = 0  # the relation whose column it reads unchanged; 0: computed
    attnum: int = 0
    type_oid: int = 0  # the declared type, where it says more than the values' type; 0: none
    typmod: int = -1
    # the name PostgreSQL gives the result column where DuckDB's may differ (`result_names`);
    # None: DuckDB's
    name: str | None = None


NO_ORIGIN = Origin()

# Named columns of a relation or query, in order: (lower-case name, origin).
Columns = tuple[tuple[str, Origin], ...]
# A FROM clause's items: (the name their columns are qualified with, their columns if known).
Sources = list[tuple[str, Columns | None]]

# Views are followed this deep (a view over a view ...) to find their declared types.
_MAX_DEPTH = 16
# Quick test before parsing: only a FROM clause (or the table RETURNING reads), a cast or a
# jsonb function gives a column an origin.
# (Or names PostgreSQL gives otherwise than DuckDB: of aliases, calls, CASE, subscripts, `~`, `#`
# and typed constants; or the SQL value functions typed `name`.)
_MAY_HAVE_ORIGINS = re.compile(r"\bFROM\b|::|\bCAST\b|\bTABLE\b|\bjsonb_|\bRETURNING\b|"
                               r"\bAS\b|\(|\bCASE\b|\[|~|#|'|\bcurrent_|\b(?:session_)?user\b",
                               re.IGNORECASE)
_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")
# DuckDB's types of the values that are, or subtract to, intervals (TIMESTAMP_NS, TIME WITH
# ...), of lists (INTEGER[], INTEGER[3]) and of floats.
_TEXTED_OTHERWISE = re.compile(r"^(?:INTERVAL|TIMESTAMP|TIME|DOUBLE$|FLOAT$)|\]$")


# (values' type, declared type): the declared types a column may be announced as, its values
# encoded as the values' type's are (a varchar's text and binary forms are text's).
# Three are encoded as the declared type: a `"char"` column's values are text of one character
# (the catalog shim's), sent as "char"; a jsonb column's are DuckDB's JSON (DuckDB has one JSON
# type), sent normalized as jsonb; a character(n) column's are text without the trailing blanks
# (insignificant to PostgreSQL's comparisons, length, `||`), sent blank-padded to n.
_DECLARABLE = frozenset({(TEXT.oid, VARCHAR.oid), (VARCHAR.oid, VARCHAR.oid),
                         (TEXT.oid, BPCHAR.oid), (BPCHAR.oid, BPCHAR.oid),
                         (NUMERIC.oid, NUMERIC.oid), (TEXT.oid, CHAR.oid),
                         (JSON.oid, JSONB.oid), (TEXT.oid, NAME.oid)})
# jsonb's own origin: a value of type jsonb, computed.
_JSONB = Origin(type_oid=JSONB.oid)
# The SQL value functions and calls PostgreSQL types `name` (DuckDB's text); current_role and
# user are keywords, which sqlglot reads as columns.
_NAME = Origin(type_oid=NAME.oid)
_NAME_VALUES = (exp.CurrentUser, exp.SessionUser, exp.CurrentCatalog, exp.CurrentSchema,
                exp.CurrentDatabase)
_NAME_KEYWORDS = frozenset({"current_role", "user"})
# PostgreSQL's functions returning jsonb that DuckDB computes (as `pg_semantics` renames them);
# sqlglot reads jsonb_object_agg as its own node.
_JSONB_FUNCTIONS = frozenset({"jsonb_build_object", "jsonb_build_array", "jsonb_agg",
                              "jsonb_extract_path", "jsonb_array_elements", "to_jsonb",
                              "jsonb_set", "jsonb_strip_nulls"})
# The columns of PostgreSQL's set-returning json functions in FROM (`pg_semantics` computes
# their rows): jsonb's values are jsonb; json's and text's need no declared type.
_ROWS = {**{f"{kind}_{name}": columns for kind in ("json", "jsonb") for name, columns in (
    ("each_text", (("key", NO_ORIGIN), ("value", NO_ORIGIN))),
    ("array_elements_text", (("value", NO_ORIGIN),)))},
    "json_each": (("key", NO_ORIGIN), ("value", NO_ORIGIN)),
    "jsonb_each": (("key", NO_ORIGIN), ("value", _JSONB)),
    "json_array_elements": (("value", NO_ORIGIN),),
    "jsonb_array_elements": (("value", _JSONB),),
    "json_object_keys": (("json_object_keys", NO_ORIGIN),),
    "jsonb_object_keys": (("jsonb_object_keys", NO_ORIGIN),)}


def announced(values_oid: int, origin: Origin) -> tuple[int, int]:
    """The type OID and typmod a column whose values are of type `values_oid` is announced as:
    its origin's declared type where that encodes alike, else the values' type."""
    if (values_oid, origin.type_oid) in _DECLARABLE:
        return origin.type_oid, origin.typmod
    return values_oid, -1


def wire_type(values: pa.DataType, origin: Origin) -> tuple[PgType, int]:
    """The type and typmod a result column of Arrow type `values` is sent as (RowDescription
    announces them, the encoders encode its values so): `pg_types.for_arrow`'s, or the type its
    origin declares where `announced` allows."""
    sent = for_arrow(values)
    if not origin.type_oid:
        return sent, -1
    oid, typmod = announced(sent.oid, origin)
    if oid == BPCHAR.oid and typmod > 4:  # its values are sent blank-padded to their length
        return blank_padded(typmod - 4), typmod
    return (sent if oid == sent.oid else BY_OID[oid]), typmod


def varchar(length: int | None) -> Origin:
    """A computed varchar(length) (no length: varchar)."""
    return Origin(type_oid=VARCHAR.oid, typmod=-1 if length is None else length + 4)


def bpchar(length: int | None) -> Origin:
    """A computed character(length) (no length: bpchar)."""
    return Origin(type_oid=BPCHAR.oid, typmod=-1 if length is None else length + 4)


def numeric(precision: int, scale: int = 0) -> Origin:
    """A computed numeric(precision, scale)."""
    return Origin(type_oid=NUMERIC.oid, typmod=((precision << 16) | scale) + 4)


@dataclass(frozen=True)
class Relations:
    """The relations statements can name: their columns by (schema, name) in lower case, and
    the schemas an unqualified name is looked up in, in order ("" stands for the session's
    temporary tables, which come first)."""

    by_name: dict[tuple[str, str], Columns]
    path: tuple[str, ...]
    # Those with a column whose values are, or subtract to, an interval (interval, timestamp,
    # time), or are arrays or floats: a cast to text over them may print what DuckDB prints
    # otherwise than PostgreSQL (`pg_semantics`, `pg_text`).
    texted_otherwise: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    # The materialized views (`materialized_views`), each with whether it holds its rows.
    materialized: dict[tuple[str, str], bool] = dataclasses.field(default_factory=dict)
    # Each table's primary key columns, in lower case (`grouped_keys`).
    primary_keys: dict[tuple[str, str], tuple[str, ...]] = dataclasses.field(
        default_factory=dict)
    # The columns of an enum type, by (table OID, attnum): DuckDB's name of the type, which
    # lists its labels (`ENUM('sad', 'ok')`); and the tables with one (`pg_semantics`).
    enums: dict[tuple[int, int], str] = dataclasses.field(default_factory=dict)
    enum_tables: set[tuple[str, str]] = dataclasses.field(default_factory=set)

    def key_of(self, schema: str | None, name: str) -> tuple[str, str] | None:
        """The relation a (schema-qualified or plain) name names, if any."""
        if schema is not None:
            return (schema, name) if (schema, name) in self.by_name else None
        return next(((s, name) for s in self.path if (s, name) in self.by_name), None)

    def named(self, sql: str, keys: Collection[tuple[str, str]]) -> bool:
        """Whether `sql` holds the name of one of the relations `keys` as a word."""
        if not keys:
            return False
        words = set(re.findall(r"\w+", sql.lower()))
        return any(name in words for _, name in keys)

    def find(self, schema: str | None, name: str) -> Columns | None:
        if schema in (None, "pg_catalog") and name in CATALOG:
            return CATALOG[name]
        if schema == "information_schema" and name in INFORMATION_SCHEMA:
            return INFORMATION_SCHEMA[name]
        key = self.key_of(schema, name)
        return None if key is None else self.by_name[key]

    @staticmethod
    def search_path(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
        """DuckDB's search path of `con` and its current schema: where its names are found."""
        path, current = con.execute(  # DuckDB's own setting (the shim's current_setting
            # answers PostgreSQL's; duckdb_settings() costs ~3 ms)
            "SELECT system.main.current_setting('search_path'), current_schema()"
        ).fetchall()[0]
        return path, current

    @classmethod
    def load(cls, con: duckdb.DuckDBPyConnection, found: tuple[str, str] | None = None, *,
             temporary: bool = True) -> Relations:
        """The tables and views `con`'s statements can name (the current database's, and the
        session's temporary tables unless not `temporary`; not the catalog shim's views), as
        of now. `found` is `search_path(con)`, where the caller has it already."""
        path, current = found or cls.search_path(con)
        schemas = [entry.strip().split(".")[-1].strip('"').lower()
                   for entry in path.split(",") if entry.strip()]
        relations = cls({}, tuple(dict.fromkeys(["", *schemas, current.lower()])))
        views: dict[tuple[str, str], tuple[int, list[str], str]] = {}
        tables: dict[tuple[str, str], list[tuple[str, Origin]]] = {}
        # Three scans, joined here: DuckDB joins its metadata functions slowly (10 ms against
        # 4 in a session whose catalog shim is installed).
        view_sql = {}
        for oid, schema, name, sql, comment in con.execute(_VIEWS).fetchall():
            view_sql[oid] = sql
            if name.startswith(QUERY_VIEW_PREFIX):
                relations.materialized[schema.lower(), name[len(QUERY_VIEW_PREFIX):].lower()] = (
                    comment != UNPOPULATED)
        lengths: dict[tuple[int, str], int] = {}
        padded: dict[tuple[int, str], int] = {}  # char(n)'s
        jsonb: set[tuple[int, str]] = set()
        for oid, column, check in con.execute(_CHECKS).fetchall():
            if (m := re.match(LENGTH_CHECK, check)) is not None:
                length = int(m[1])
                lengths[oid, column] = min(length, lengths.get((oid, column), length))
            elif (m := re.match(BPCHAR_CHECK, check)) is not None:
                padded[oid, column] = int(m[1])
            elif re.match(JSONB_CHECK, check):
                jsonb.add((oid, column))
        keys = dict(con.execute(_PRIMARY_KEYS).fetchall())
        for oid, temporary_table, schema, name, column, attnum, data_type in (
                con.execute(_COLUMNS if temporary else _STORED_COLUMNS).fetchall()):
            key = ("" if temporary_table else schema.lower(), name.lower())
            if oid in keys:
                relations.primary_keys[key] = tuple(c.lower() for c in keys[oid])
            if _TEXTED_OTHERWISE.search(data_type):
                relations.texted_otherwise.add(key)
            if data_type.startswith("ENUM("):
                relations.enums[oid, attnum] = data_type
                relations.enum_tables.add(key)
            if oid in view_sql:
                views.setdefault(key, (oid, [], view_sql[oid]))[1].append(column.lower())
            else:
                tables.setdefault(key, []).append((column.lower(), _table_column(
                    oid, attnum, data_type, lengths.get((oid, column)),
                    (oid, column) in jsonb, padded.get((oid, column)))))
        relations.by_name.update((key, tuple(columns)) for key, columns in tables.items())
        relations.by_name.update((key, ()) for key in views)  # names resolve while views do
        pending = dict(views)
        while pending:
            _resolve_view(relations, pending, next(iter(pending)), 0)
        return relations


def origins(sql: str, relations: Relations | Callable[[], Relations],
            dialect: str | type[Dialect] = PostgresSql) -> tuple[Origin, ...] | None:
    """Per result column of the query `sql`, where it comes from; None when not known column
    by column. `relations` may be given as a function, called only if the query names one."""
    if _MAY_HAVE_ORIGINS.search(sql) is None:
        return None
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, ValueError):
        return None
    query = tree if isinstance(tree, exp.Query) else returning_query(tree) or stored_query(tree)
    if query is None:
        return None
    if callable(relations) and not _names_user_relations(query):
        relations = Relations({}, ())
    found = _Resolver(relations() if callable(relations) else relations).query(query, {})
    if found is None:
        return None
    named = result_names.names(query, sql, len(found))
    return tuple(origin if name is None else dataclasses.replace(origin, name=name)
                 for (_, origin), name in zip(found, named, strict=True))


def declared(node: exp.Expression, relations: Relations | Callable[[], Relations]) -> Origin:
    """The origin of `node`, an expression within a parsed statement (of a select list, a
    condition, a RETURNING clause), as its query's FROM clause gives it: the column it reads
    unchanged, the type it declares (NO_ORIGIN when it is computed or not known). `relations`
    (maybe a function) is asked only when `node` may read a relation's column."""
    holder: exp.Expression | None = node
    while holder is not None and not isinstance(holder, exp.Select | exp.DML):
        holder = holder.parent
    select = holder if isinstance(holder, exp.Select) or holder is None else (
        returning_query(holder, required=False))  # (SET and WHERE read the target's columns)
    if select is None:
        return NO_ORIGIN
    if callable(relations) and not (node.find(exp.Column) and _names_user_relations(select)):
        relations = Relations({}, ())
    resolver = _Resolver(relations() if callable(relations) else relations)
    assert holder is not None
    ctes = resolver.scope(holder)
    if select is not holder:
        ctes = {**ctes, **resolver.scope(select)}  # the DML's own WITH, copied into `select`
    sources = resolver._sources(select, ctes)
    return _origin(node, sources, _star_order(_from_items(select), sources))


def returning_query(dml: exp.Expression, *, required: bool = True) -> exp.Select | None:
    """An INSERT, UPDATE or DELETE's RETURNING clause as the query whose columns are the same:
    its items over the target table (its alias kept) and the tables of UPDATE's FROM or
    DELETE's USING, with the statement's WITH clause; a plain star is the target's columns,
    as DuckDB returns them (PostgreSQL's also lists FROM's). None for any other statement, and
    for one without RETURNING unless not `required` (then the query of a star: what the
    statement's own expressions read)."""
    returning = dml.args.get("returning") if isinstance(dml, exp.DML) else None
    if not isinstance(dml, exp.Insert | exp.Update | exp.Delete) or (
            returning is None and required):
        return None
    target = dml.this.this if isinstance(dml.this, exp.Schema) else dml.this
    if not isinstance(target, exp.Table):
        return None
    others: list[exp.Expression] = []
    if isinstance(dml, exp.Update) and (from_ := dml.args.get("from_")) is not None:
        others = [from_.this, *(join.this for join in from_.this.args.get("joins") or ())]
        others += [join.this for join in dml.args.get("joins") or ()]
    elif isinstance(dml, exp.Delete):
        others = list(dml.args.get("using") or ())
    qualifier = target.alias_or_name
    items = [exp.Column(this=exp.Star(), table=exp.to_identifier(qualifier))
             if isinstance(item, exp.Star) and plain_star(item) else item.copy()
             for item in (returning.expressions if returning is not None else [exp.Star()])]
    select = exp.Select(expressions=items).from_(_bare(target))
    for other in others:
        select = select.join(_bare(other))
    if (with_ := dml.args.get("with_")) is not None:
        select.set("with_", with_.copy())
    return select


def stored_query(create: exp.Expression) -> exp.Query | None:
    """The query a CREATE TABLE ... AS stores (None for any other statement)."""
    if not isinstance(create, exp.Create) or (create.kind or "").upper() != "TABLE":
        return None
    query = create.expression
    while isinstance(query, exp.Subquery):
        query = query.this
    return query if isinstance(query, exp.Query) else None


def _bare(table: exp.Expression) -> exp.Expression:
    """A copy of a FROM item without the joins sqlglot may hang on it."""
    copy = table.copy()
    copy.set("joins", None)
    return copy


class _Resolver:
    """Follows result columns to their origins within one statement."""

    def __init__(self, relations: Relations) -> None:
        self.relations = relations

    def query(self, node: exp.Expression, ctes: Mapping[str, Columns | None]) -> Columns | None:
        while isinstance(node, exp.Subquery | exp.Paren):
            node = node.this
        if isinstance(node, exp.Query) and (with_ := node.args.get("with_")) is not None:
            ctes = dict(ctes)
            for cte in with_.expressions:
                name = cte.alias_or_name.lower()
                ctes[name] = None  # what a recursive one reads of itself is unknown
                ctes[name] = _renamed(self.query(cte.this, ctes), cte.args.get("alias"))
        if isinstance(node, exp.SetOperation):
            left, right = self.query(node.left, ctes), self.query(node.right, ctes)
            if left is None:
                return None
            if right is None or len(right) != len(left):
                return tuple((name, NO_ORIGIN) for name, _ in left)
            return tuple((name, _common(a, b))
                         for (name, a), (_, b) in zip(left, right, strict=True))
        if not isinstance(node, exp.Select):
            return None
        sources = self._sources(node, ctes)
        order = _star_order(_from_items(node), sources)
        out: list[tuple[str, Origin]] = []
        for item in node.expressions:
            star = _star_of(item)
            if star is not None:
                columns = _star(*star, sources, order)
                if columns is None:
                    return None
                out.extend(columns)
            else:
                out.append((item.alias_or_name.lower(), _origin(item, sources, order)))
        return tuple(out)

    def scope(self, node: exp.Expression) -> dict[str, Columns | None]:
        """The CTEs a FROM clause within `node`'s reads (those of the WITH clauses above it and
        its own, before the one it is in)."""
        path = [node]
        while path[-1].parent is not None:
            path.append(path[-1].parent)
        ctes: dict[str, Columns | None] = {}
        for holder in reversed(path):
            with_ = holder.args.get("with_")
            for cte in [] if with_ is None else with_.expressions:
                name = cte.alias_or_name.lower()
                ctes[name] = None  # what a recursive one reads of itself is unknown
                if any(cte is p for p in path):
                    break
                ctes[name] = _renamed(self.query(cte.this, ctes), cte.args.get("alias"))
        return ctes

    def _sources(self, select: exp.Select, ctes: Mapping[str, Columns | None]) -> Sources:
        """The FROM items of `select`."""
        sources = []
        for item, _ in _from_items(select):
            alias = item.args.get("alias")
            columns: Columns | None = None
            if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
                name, schema = item.name.lower(), item.args.get("db")
                if schema is None and name in ctes:
                    columns = ctes[name]
                elif item.args.get("catalog") is None:
                    columns = self.relations.find(
                        None if schema is None else schema.name.lower(), name)
            elif isinstance(item, exp.Subquery):
                columns = self.query(item.this, ctes)
            elif isinstance(item, exp.Table) and isinstance(item.this, exp.Anonymous):
                columns = _ROWS.get(item.this.name.lower())
                if columns is not None and len(columns) == 1 and alias is not None and not (
                        alias.args.get("columns")):  # its one column takes the alias's name
                    columns = ((alias.name.lower(), columns[0][1]),)
            sources.append(((item.alias_or_name or "").lower(), _renamed(columns, alias)))
        return sources


def plain_star(star: exp.Star) -> bool:
    """Whether a star is PostgreSQL's, without DuckDB's modifiers (EXCLUDE, REPLACE, RENAME)."""
    return not any(star.args.get(k) for k in ("except_", "replace", "rename"))


@dataclass(frozen=True)
class StarOrder:
    """What an unqualified star over a FROM clause lists: `columns`, PostgreSQL's star's (None:
    a source's are unknown), and `front`, the merged columns `pg_semantics.rewrite` lists before
    DuckDB's star without them so that DuckDB's lists the same (empty: DuckDB's star already
    does; None: it cannot be made to, and is left as it is)."""

    columns: Columns | None
    front: tuple[str, ...] | None


def moved_columns(select: exp.Select, relations: Relations | Callable[[], Relations]
                  ) -> tuple[str, ...]:
    """The merged columns `pg_semantics.rewrite` lists first in a plain star of `select`'s list
    (then DuckDB's star without them); empty where it leaves the star as it is. `relations`
    (maybe a function) is asked only when a join of `select` merges columns."""
    items = _from_items(select)
    if not any(join is not None and _merging(join) for _, join in items):
        return ()
    resolver = _Resolver(relations() if callable(relations) else relations)
    sources = resolver._sources(select, resolver.scope(select))
    return _star_order(items, sources).front or ()


def _from_items(select: exp.Select) -> list[tuple[exp.Expression, exp.Join | None]]:
    """A SELECT's FROM items, each with the join that adds it (None for the first): a join in
    parentheses that leads the FROM clause, `(a JOIN b USING (x)) JOIN c ...`, as a chain
    `a JOIN b USING (x) JOIN c ...`, which PostgreSQL's and DuckDB's stars read alike."""
    from_ = select.args.get("from_")
    if from_ is None:
        return []
    first, joins = from_.this, list(select.args.get("joins") or ())
    while (isinstance(first, exp.Subquery) and not first.alias and isinstance(
            first.this, exp.Table) and first.this.args.get("joins")):
        joins = [*first.this.args["joins"], *joins]
        first = first.this
    return [(first, None), *((join.this, join) for join in joins)]


def _merging(join: exp.Join) -> bool:
    return join.args.get("method") == "NATURAL" or bool(join.args.get("using"))


def _comma(join: exp.Join) -> bool:
    """Whether a join is a comma's, `FROM a, b` (whose later joins bind tighter in PostgreSQL)."""
    return not any(join.args.get(k) for k in ("kind", "side", "method", "on", "using"))


# A column of the simulated stars: its name, what it is (a source's: (index, position); a
# merged one: (-join number, name), the first join numbered 1), its origin.
_Column = tuple[str, tuple[int, object], Origin]


def _star_order(items: Sequence[tuple[exp.Expression, exp.Join | None]], sources: Sources
                ) -> StarOrder:
    """PostgreSQL's star over a FROM clause, and what makes DuckDB's list the same. Both are
    followed join by join: PostgreSQL lists a join's merged columns (USING's in its order,
    NATURAL's in the left side's) first, the left side's others, the right side's others;
    DuckDB leaves a merged column where the left side has it. The merged column is the left
    side's for an inner or left join, the right side's for a right join, computed for a full one
    (of the declared type both share). DuckDB's star is PostgreSQL's once PostgreSQL's leading
    merged columns are moved before it, unless a later comma join reorders or a moved column's
    name is not the only one of its name (then DuckDB's star is left as it is)."""
    joins = [join for _, join in items[1:]]
    if not sources or any(columns is None for _, columns in sources):
        # unknown columns: one join USING is moved all the same (its merged columns are DuckDB's
        # only ones of their names)
        one = len(joins) == 1 and joins[0] is not None and not joins[0].args.get("method")
        using = tuple(u.name.lower() for u in joins[0].args.get("using") or ()) if one else ()
        return StarOrder(None, using or None)
    pg: list[_Column] = [(n, (0, i), o) for i, (n, o) in enumerate(sources[0][1] or ())]
    duck = list(pg)
    for j, (join, (_, columns)) in enumerate(zip(joins, sources[1:], strict=True), 1):
        assert join is not None
        right: list[_Column] = [(n, (j, i), o) for i, (n, o) in enumerate(columns or ())]
        if join.args.get("method") == "NATURAL":
            names = [n for n, _, _ in pg if n in {c[0] for c in right}]
        else:
            names = [u.name.lower() for u in join.args.get("using") or ()]
        if not names:
            pg, duck = pg + right, duck + right
            continue
        if any(_comma(earlier) for earlier in joins[:j - 1] if earlier is not None):
            return StarOrder(None, None)
        left_of = {c[0]: c for c in pg}
        right_of = {c[0]: c for c in right}
        if len(set(names)) != len(names) or any(
                [c[0] for c in side].count(n) != 1 for side in (pg, right) for n in names):
            return StarOrder(None, None)  # PostgreSQL refuses it (or DuckDB would read it apart)
        side = (join.args.get("side") or "").upper()
        merged = {n: (n, (-j, n), _merged(left_of[n][2], right_of[n][2], side)) for n in names}
        pg = [merged[n] for n in names] + [c for c in pg if c[0] not in merged] + [
            c for c in right if c[0] not in merged]
        duck = [merged.get(c[0], c) for c in duck] + [c for c in right if c[0] not in merged]
    columns = tuple((n, o) for n, _, o in pg)
    if [c[1] for c in pg] == [c[1] for c in duck]:
        return StarOrder(columns, ())
    front = list(takewhile(lambda c: isinstance(c[1][0], int) and c[1][0] < 0, pg))
    rest = [c for c in duck if c not in front]
    names = [c[0] for c in pg]
    if [c[1] for c in front + rest] != [c[1] for c in pg] or any(
            names.count(c[0]) != 1 for c in front):
        return StarOrder(columns, None)
    return StarOrder(columns, tuple(c[0] for c in front))


def _merged(left: Origin, right: Origin, side: str) -> Origin:
    """The origin of a column a join merges (USING, NATURAL)."""
    if side == "FULL":
        return _common(left, right)
    return right if side == "RIGHT" else left


def _star(star: exp.Star, table: str, sources: Sources, order: StarOrder) -> Columns | None:
    if not plain_star(star):
        return None
    if not table:
        return None if order.front is None else order.columns
    return _qualified(sources, table)


def _qualified(sources: Sources, table: str) -> Columns | None:
    """The columns of the one source `table` names (None: none, several, or unknown)."""
    named = [columns for alias, columns in sources if alias == table]
    return named[0] if len(named) == 1 else None


def _origin(node: exp.Expression, sources: Sources, order: StarOrder) -> Origin:
    while isinstance(node, exp.Alias | exp.Paren):
        node = node.this
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
        return _declared(node.to)
    if isinstance(node, exp.JSONExtract | exp.JSONBExtract):  # -> and #>: of jsonb, jsonb
        return _JSONB if _origin(node.this, sources, order).type_oid == JSONB.oid else NO_ORIGIN
    if isinstance(node, exp.DPipe | exp.Sub):  # jsonb's || and - (`pg_semantics`): jsonb
        operands = (node.this, node.expression) if isinstance(node, exp.DPipe) else (node.this,)
        return _JSONB if any(_origin(o, sources, order).type_oid == JSONB.oid
                             for o in operands) else NO_ORIGIN
    if isinstance(node, exp.Window):  # an aggregate over a window: the aggregate's type
        node = node.this
    if isinstance(node, exp.JSONBObjectAgg) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in _JSONB_FUNCTIONS):
        return _JSONB
    if isinstance(node, _NAME_VALUES) or (
            isinstance(node, exp.Column) and not node.table and isinstance(
                node.this, exp.Identifier) and not node.this.quoted
            and node.name.lower() in _NAME_KEYWORDS):
        return _NAME
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return NO_ORIGIN
    name, table = node.name.lower(), node.table.lower()
    # unqualified: unknown if it may come from a source whose columns are unknown
    columns = _qualified(sources, table) if table else order.columns
    found = [origin for n, origin in columns or () if n == name]
    return found[0] if len(found) == 1 else NO_ORIGIN


def _common(a: Origin, b: Origin) -> Origin:
    """A set operation's column over two branches' columns: computed, of the first branch's
    declared type, with its typmod where the other's is the same (PostgreSQL resolves
    varchar(n) and text, and numeric(p, s) and integer, to the first's type without typmod);
    `"char"` only over two `"char"` columns (the other's values may be longer)."""
    same = (a.type_oid, a.typmod) == (b.type_oid, b.typmod)
    if a.type_oid == CHAR.oid and not same:
        return NO_ORIGIN
    return Origin(type_oid=a.type_oid, typmod=a.typmod if same else -1)


def _star_of(item: exp.Expression) -> tuple[exp.Star, str] | None:
    """A select item that is a star: the star, and the source it qualifies ("" for all)."""
    if isinstance(item, exp.Star):
        return item, ""
    if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
        return item.this, item.table.lower()
    return None


def _renamed(columns: Columns | None, alias: exp.Expression | None) -> Columns | None:
    """`columns` under an alias's column list (`AS t(a, b)` renames the first ones)."""
    names = [] if alias is None else [c.name.lower() for c in alias.args.get("columns") or ()]
    if columns is None or not names:
        return columns
    return tuple((names[i] if i < len(names) else n, o) for i, (n, o) in enumerate(columns))


def _declared(to: exp.DataType) -> Origin:
    """What a cast to `to` declares beyond the values' type."""
    params = [p.this for p in to.expressions if isinstance(p, exp.DataTypeParam)]
    sizes = [int(p.this) for p in params if isinstance(p, exp.Literal) and p.this.isdigit()]
    if len(sizes) != len(params):
        return NO_ORIGIN
    if to.this is exp.DataType.Type.VARCHAR and len(sizes) <= 1:
        return varchar(sizes[0] if sizes else None)
    if to.this in BLANK_PADDED and len(sizes) <= 1:  # char is char(1), bpchar has no length
        return bpchar(sizes[0] if sizes else None if to.this is exp.DataType.Type.BPCHAR else 1)
    if to.this is exp.DataType.Type.DECIMAL and len(sizes) in (1, 2):
        return numeric(*sizes)
    if to.this is exp.DataType.Type.JSONB and not sizes:
        return _JSONB
    return NO_ORIGIN


# The catalog's column types sent as declared, not as their values' DuckDB type (text);
# information_schema's domains as PostgreSQL sends them, as their base types.
_CATALOG_DECLARED = {"char": CHAR.oid, "name": NAME.oid, "sql_identifier": NAME.oid,
                     "character_data": VARCHAR.oid, "yes_or_no": VARCHAR.oid}


def _catalog_relations(relations: Sequence[Relation] = RELATIONS) -> dict[str, Columns]:
    """The catalog shim's relations by name: a catalog table's columns read its fixed OID and
    attnum (a view's OID is its session's: none), `"char"` and `name` columns (and
    information_schema's domains) declared so."""
    catalog = {}
    for relation in relations:
        oid = relation.oid or 0
        catalog[relation.name] = tuple(
            (name, Origin(oid, i + 1 if oid else 0, _CATALOG_DECLARED.get(pg_type, 0)))
            for i, (name, pg_type) in enumerate(relation.pg_columns()))
    return catalog


CATALOG = _catalog_relations()
INFORMATION_SCHEMA = _catalog_relations(pg_information_schema.RELATIONS)


def _names_user_relations(tree: exp.Expression) -> bool:
    """Whether a query may read a relation other than the catalog's (or its own CTEs)."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name, schema = table.name.lower(), table.db.lower()
        if not (schema in ("", "pg_catalog") and name in CATALOG) and not (
                not schema and name in ctes):
            return True
    return False


def _table_column(oid: int, attnum: int, data_type: str, length: int | None,
                  jsonb: bool = False, padded: int | None = None) -> Origin:
    """A table column's origin, declared as the catalog shim's pg_attribute declares it (`jsonb`:
    a JSON column carrying `JSONB_CHECK`; `padded`: the length of a char(n) column's
    `BPCHAR_CHECK`)."""
    if padded is not None:
        return Origin(oid, attnum, BPCHAR.oid, padded + 4)
    if length is not None:
        return Origin(oid, attnum, VARCHAR.oid, length + 4)
    if jsonb and data_type == "JSON":
        return Origin(oid, attnum, JSONB.oid)
    if (m := _DECIMAL.match(data_type)) is not None:
        return Origin(oid, attnum, NUMERIC.oid, numeric(int(m[1]), int(m[2])).typmod)
    return Origin(oid, attnum)


def _resolve_view(relations: Relations,
                  pending: dict[tuple[str, str], tuple[int, list[str], str]],
                  key: tuple[str, str], depth: int) -> None:
    """Enter a view's columns: its own OID and attnums, with the types its definition declares
    (the views it reads are resolved first, `_MAX_DEPTH` deep)."""
    oid, names, sql = pending.pop(key)
    found = None
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        tree = None
    if isinstance(tree, exp.Create) and isinstance(tree.expression, exp.Query):
        for table in tree.expression.find_all(exp.Table):
            schema = table.args.get("db")
            read = relations.key_of(None if schema is None else schema.name.lower(),
                                    table.name.lower())
            if read in pending and depth < _MAX_DEPTH:
                _resolve_view(relations, pending, read, depth + 1)
        found = _Resolver(relations).query(tree.expression, {})
    declared = ([origin for _, origin in found] if found is not None and len(found) == len(names)
                else [NO_ORIGIN] * len(names))
    relations.by_name[key] = tuple(
        (name, Origin(oid, i + 1, declared[i].type_oid, declared[i].typmod))
        for i, name in enumerate(names))


# The columns of the current database's tables and views and of the session's temporary tables
# (not its temporary views: the catalog shim's), in order; the views' definitions; each
# one-column CHECK (a varchar(n) column's length is one, and a jsonb column's mark: Heron keeps
# them so).
_COLUMNS = """
    SELECT table_oid, database_name = 'temp', schema_name, table_name, column_name,
           column_index, data_type
    FROM duckdb_columns()
    WHERE (database_name = current_database() AND NOT internal)
       OR (database_name = 'temp'
           AND table_oid IN (SELECT table_oid FROM duckdb_tables() WHERE database_name = 'temp'))
    ORDER BY table_oid, column_index"""
_STORED_COLUMNS = """
    SELECT table_oid, false, schema_name, table_name, column_name, column_index, data_type
    FROM duckdb_columns() WHERE database_name = current_database() AND NOT internal
    ORDER BY table_oid, column_index"""
_VIEWS = """SELECT view_oid, schema_name, view_name, sql, comment FROM duckdb_views()
            WHERE database_name = current_database() AND NOT internal"""
_PRIMARY_KEYS = """SELECT table_oid, constraint_column_names FROM duckdb_constraints()
                   WHERE constraint_type = 'PRIMARY KEY'"""
_CHECKS = """SELECT table_oid, constraint_column_names[1], expression FROM duckdb_constraints()
             WHERE constraint_type = 'CHECK' AND len(constraint_column_names) = 1"""

"""How a statement that reads PostgreSQL's catalog is rewritten for the pg_catalog shim.

Contract: `rewrite(sql)` returns the statement DuckDB should run: statements that mention no
catalog vocabulary (a cheap test) come back unchanged and unparsed; the others are parsed with
sqlglot's postgres dialect and rewritten — `pg_catalog.` and `information_schema.` qualifiers
resolved to the shim's relations and functions (`heron.planner.pg_catalog`), unquoted identifiers
folded to lower case as PostgreSQL folds them (so result columns are named as PostgreSQL names
them), `COLLATE pg_catalog.default` dropped, `OPERATOR(pg_catalog.~)` made the operator,
`::regclass` and friends made look-ups (a sequence's name cast to regclass for nextval, currval or
setval left its text, which DuckDB's find it by), casts to `oid` and PostgreSQL's catalog types
made DuckDB's, `format('%I.%I', ...)` spelled out, subscripts of int2vector/oidvector columns (and
of their aliases) shifted to PostgreSQL's zero-based ones, the system column `tableoid` of a
catalog table made its OID, `pg_partition_ancestors(rel)` a relation's only ancestor (Heron has no
partitions), `pg_typeof(x)` the type's name as PostgreSQL's format_type gives it (the type `x`
declares, given the `relations` it may read: a jsonb or varchar(n) column's is jsonb or character
varying; else the type its values are sent as), keywords used as column labels quoted — and printed
for DuckDB (casts to varchar(n) and char(n) first made what `pg_semantics` makes them: DuckDB's
text keeps no length). The statement's own result columns keep PostgreSQL's text form:
int2vector/oidvector values as space-separated numbers, a name cast to regnamespace, regrole or
regproc as the object's name, a regclass or regtype value as its OID and name (sent as regclass /
regtype, binary the OID); a RETURNING clause's columns too.
When no rule applied, the original text comes back. A statement sqlglot cannot parse comes back
unchanged, so DuckDB reports its own error. `parseable(sql)` is the client's text as the rewrite
parses it (a few spellings sqlglot cannot read respelled).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from heron.planner import (
    column_origins,
    dialect,
    pg_activity,
    pg_catalog_relations,
    pg_information_schema,
    pg_semantics,
)
from heron.planner.column_origins import Relations
from heron.planner.pg_catalog_types import wire_oid_sql

# A statement the rewrite reads mentions one of these (lower case; substring tests are cheap on
# a large statement, where a regular expression is not), and then matches _TRIGGER.
_TRIGGER_WORDS = ("pg_catalog", "information_schema", "operator", "regclass", "regtype",
                  "regnamespace", "regproc", "regrole", "pg_typeof")
_TRIGGER = re.compile(
    r"pg_catalog|information_schema|\bOPERATOR\s*\(|\bpg_typeof\s*\(|"
    r"(?:::|\bAS)\s*\"?(?:regclass|regtype|regnamespace|regproc|regprocedure|regrole)\b",
    re.IGNORECASE,
)
_CATALOG_SCHEMAS = {"pg_catalog"}
_DEFAULT_COLLATIONS = {"default", "c", "posix"}
# pg_catalog's relations the shim answers, the sessions' activity (`planner.pg_activity`) too.
_PG_RELATIONS = frozenset(r.name for r in pg_catalog_relations.RELATIONS) | pg_activity.RELATIONS
_SCHEMA_RELATIONS = frozenset(r.name for r in pg_information_schema.RELATIONS)

# OPERATOR(pg_catalog.op) spellings -> the expression DuckDB runs.
_OPERATORS: dict[str, Callable[[exp.Expression, exp.Expression], exp.Expression]] = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "!~": lambda a, b: exp.not_(exp.RegexpLike(this=a, expression=b)),
    "~*": lambda a, b: exp.RegexpILike(this=a, expression=b),
    "!~*": lambda a, b: exp.not_(exp.RegexpILike(this=a, expression=b)),
    "~~": lambda a, b: exp.Like(this=a, expression=b),
    "!~~": lambda a, b: exp.not_(exp.Like(this=a, expression=b)),
    "~~*": lambda a, b: exp.ILike(this=a, expression=b),
    "!~~*": lambda a, b: exp.not_(exp.ILike(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "<": lambda a, b: exp.LT(this=a, expression=b),
    ">": lambda a, b: exp.GT(this=a, expression=b),
    "<=": lambda a, b: exp.LTE(this=a, expression=b),
    ">=": lambda a, b: exp.GTE(this=a, expression=b),
}

# Casts to object-identifier types: (from a name -> its OID, from an OID -> its name).
_OID_CASTS = {
    "regclass": ("heron_regclass_oid", "heron_regclass_name"),
    "regtype": ("heron_regtype_oid", "heron_regtype_name"),
    "regnamespace": ("heron_regnamespace_oid", "heron_regnamespace_name"),
    "regproc": ("heron_regproc", "heron_regproc_name"),  # the catalog holds functions' names
    "regprocedure": ("heron_regproc", "heron_regproc_name"),
    "regrole": ("heron_regrole_oid", "heron_regrole_name"),
}
# Functions of a sequence: DuckDB's (and `session_sequences`') take its name.
_SEQUENCE_FUNCTIONS = frozenset({"nextval", "currval", "setval"})
# The look-up of a name -> the macro giving that object's name back, and its type's name.
_NAME_OF = {by_name: by_oid for by_name, by_oid in _OID_CASTS.values()
            if by_name.endswith("_oid")}
_TYPE_OF = {by_name: cast for cast, (by_name, _) in reversed(_OID_CASTS.items())}
# Calls whose result is a regclass or regtype value (the type, whether its argument is the OID):
# as a result column, the value's OID and name (`pg_types.reg_value`).
_REG_VALUES = {"heron_regclass_oid": ("regclass", False), "to_regclass": ("regclass", False),
               "heron_regclass_name": ("regclass", True), "heron_regtype_oid": ("regtype", False),
               "to_regtype": ("regtype", False), "heron_regtype_name": ("regtype", True),
               "heron_typeof_name": ("typeof", True)}  # pg_typeof's (a regtype, built-in)
# Functions whose result is text: a cast of their result to regclass looks a name up.
_TEXT_FUNCTIONS = {"format", "concat", "quote_ident", "lower", "upper", "replace", "trim",
                   "btrim", "ltrim", "rtrim", "substring", "substr"}
# Casts to other PostgreSQL type names DuckDB does not know.
_TYPE_NAMES = {"name": "VARCHAR", "char": "VARCHAR", "\"char\"": "VARCHAR", "aclitem": "VARCHAR",
               "pg_node_tree": "VARCHAR", "int2vector": "SMALLINT[]", "oidvector": "UINTEGER[]",
               "oid": "UINTEGER", "xid": "BIGINT", "cid": "BIGINT", "tid": "VARCHAR",
               "regoper": "UINTEGER", "regoperator": "UINTEGER", "regconfig": "UINTEGER",
               "regdictionary": "UINTEGER", "regcollation": "UINTEGER"}
# Spellings sqlglot cannot parse, fixed in the text first: `oid[]` (sqlglot 30 fails on it) and
# keywords PostgreSQL takes as column labels after AS (Metabase's `... AS select,`).
_TEXT_FIXES = (
    (re.compile(r"\boid\s*\[\s*\]", re.IGNORECASE), "UINTEGER[]"),
    (re.compile(r"\bAS\s+(select|insert|update|delete|table)(?=\s*(?:,|\bfrom\b|\)))",
                re.IGNORECASE), r'AS "\1"'),
)
# A PostgreSQL array literal written as text, e.g. '{0}' (DuckDB spells lists '[0]').
_ARRAY_TEXT = re.compile(r"^\{([\w\s,.-]*)\}$")
# Catalog columns of type int2vector/oidvector: PostgreSQL subscripts them from zero.
_VECTOR_COLUMNS = frozenset({
    "indkey", "indclass", "indcollation", "indoption", "proargtypes", "stxkeys", "tgattr",
    "partattrs", "partclass", "partcollation", "prattrs"})
# Functions DuckDB has under another name.
_RENAMED_FUNCTIONS = {"json_build_object": "json_object"}
# Catalog tables with PostgreSQL's fixed OIDs (the value of their `tableoid` column).
_TABLE_OIDS = {r.name: r.oid for r in pg_catalog_relations.RELATIONS if r.oid is not None}


def rewrite(sql: str, relations: Relations | Callable[[], Relations] | None = None) -> str:
    """The statement DuckDB should run for `sql` (see the module docstring). `relations` (maybe
    a function, asked only when pg_typeof's argument may read a column) are the relations the
    statement may read."""
    lowered = sql.lower()
    if not any(word in lowered for word in _TRIGGER_WORDS) or not _TRIGGER.search(sql):
        return sql
    text = parseable(sql)
    tree = dialect.read_postgres(text)
    if tree is None:
        return sql
    changed = text != sql
    folded = normalize_identifiers(tree.copy(), dialect="postgres")
    if folded != tree:
        tree, changed = folded, True
    context = _Context.of(tree, relations)
    for node in reversed(list(tree.walk(bfs=False))):  # children before their parents
        new = _rewrite_node(node, context)
        if new is not node:
            changed = True
            if node is tree:
                tree = new
            else:
                node.replace(new)
    if _returned_as_text(tree):
        changed = True
    if changed:  # DuckDB's text keeps no length of a cast's type: char(3) prints as TEXT(3)
        pg_semantics.length_casts(tree)
    return tree.sql(dialect=_DuckDB) if changed else sql


class _DuckDB(DuckDB):
    """DuckDB's dialect, with `~` and `~*` written as operators (DuckDB's are PostgreSQL's):
    written as DuckDB's regexp_matches(a, b), they would read as PostgreSQL's set-returning
    regexp_matches to `pg_semantics`, which reads the text next (a select list's `relname ~
    'x'` gave a text[] per match, and no row where none)."""

    class Generator(DuckDB.Generator):
        TRANSFORMS = {**DuckDB.Generator.TRANSFORMS,
                      exp.RegexpLike: lambda self, e: self.binary(e, "~"),
                      exp.RegexpILike: lambda self, e: self.binary(e, "~*")}


def parseable(sql: str) -> str:
    """`sql` with the spellings sqlglot cannot parse respelled (`oid[]`, keywords as column
    labels), as `rewrite` parses it."""
    for pattern, replacement in _TEXT_FIXES:
        sql = pattern.sub(replacement, sql)
    return sql


def _returned_as_text(tree: exp.Expression) -> bool:
    """Values of the statement's result columns sent in their PostgreSQL text form, the way
    clients read them; inside the statement they keep the form comparisons need. An
    int2vector/oidvector column is its numbers separated by spaces (SQLAlchemy splits indoption
    at spaces), a name cast to regnamespace, regrole or regproc the object's name; a regclass or
    regtype value (a cast, pg_typeof, to_regclass, to_regtype) the struct of its OID and name
    (`pg_types.reg_value`), sent as PostgreSQL sends those types. Whether any column was."""
    selects: list[exp.Expression] = [tree] if isinstance(tree, exp.Select) else (
        [s for s in tree.find_all(exp.Select) if s.parent_select is None]
        if isinstance(tree, exp.SetOperation) else [])
    if isinstance(tree, exp.DML) and (returning := tree.args.get("returning")) is not None:
        selects.append(returning)
    changed = False
    for select in selects:
        for item in select.expressions:
            value = item.this if isinstance(item, exp.Alias) else item
            if isinstance(value, exp.Column) and value.name.lower() in _VECTOR_COLUMNS:
                text: exp.Expression = exp.Anonymous(
                    this="array_to_string", expressions=[value.copy(), exp.Literal.string(" ")])
                name = item.alias_or_name
            elif isinstance(value, exp.Anonymous) and value.name.lower() in _REG_VALUES:
                kind, by_oid = _REG_VALUES[value.name.lower()]
                oid = value.expressions[0] if by_oid else value
                text = exp.Anonymous(this=f"heron_{kind}_value", expressions=[oid.copy()])
                name = item.alias if isinstance(item, exp.Alias) else (
                    oid.name if by_oid and isinstance(oid, exp.Column) else
                    value.name.lower() if value.name.lower().startswith("to_") else kind)
            elif isinstance(value, exp.Anonymous) and value.name.lower() in _NAME_OF:
                text = exp.Anonymous(this=_NAME_OF[value.name.lower()],
                                     expressions=[value.copy()])
                name = item.alias if isinstance(item, exp.Alias) else _TYPE_OF[value.name.lower()]
            else:
                continue
            item.replace(exp.alias_(text, name))
            changed = True
    return changed


@dataclass(frozen=True, slots=True)
class _Context:
    """What rewriting one statement needs to know about the whole of it."""

    vectors: frozenset[str]  # names of int2vector/oidvector columns, and of their aliases
    table_oids: Mapping[str, int]  # alias of a catalog table -> its OID (for `x.tableoid`)

    # id of a pg_typeof call -> the type its argument declares (`column_origins.declared`)
    typeof_oids: Mapping[int, int]

    @classmethod
    def of(cls, tree: exp.Expression, relations: Relations | Callable[[], Relations] | None
           ) -> _Context:
        vectors = _VECTOR_COLUMNS | {
            a.alias_or_name.lower() for a in tree.find_all(exp.Alias)
            if isinstance(a.this, exp.Column) and a.this.name.lower() in _VECTOR_COLUMNS}
        table_oids = {t.alias_or_name.lower(): _TABLE_OIDS[t.name.lower()]
                      for t in tree.find_all(exp.Table)
                      if t.db.lower() in ("", "pg_catalog") and t.name.lower() in _TABLE_OIDS}
        typeof_oids = {} if relations is None else {
            id(call): declared for call in tree.find_all(exp.Anonymous)
            if call.name.lower() == "pg_typeof" and len(call.expressions) == 1
            and (declared := column_origins.declared(call.expressions[0], relations).type_oid)}
        return cls(frozenset(vectors), table_oids, typeof_oids)


def _rewrite_node(node: exp.Expression, context: _Context) -> exp.Expression:
    if isinstance(node, exp.Dot) and _is_schema(node.this,
                                                _CATALOG_SCHEMAS | {"information_schema"}):
        return node.expression  # pg_catalog.f(...) -> f(...): TEMP macros shadow built-ins
    if isinstance(node, exp.Table) and not node.catalog:
        return _rewrite_table(node)
    if isinstance(node, exp.Column) and node.db.lower() in _CATALOG_SCHEMAS and (
            node.table.lower() in _PG_RELATIONS):  # pg_catalog.pg_class.relname -> pg_class...
        return exp.column(node.this, table=node.args["table"])
    if isinstance(node, exp.Column) and node.name.lower() == "tableoid" and (
            node.table.lower() in context.table_oids):  # the system column: the table's OID
        return exp.cast(exp.Literal.number(context.table_oids[node.table.lower()]),
                        exp.DataType.build("UINTEGER", dialect="duckdb"))
    if isinstance(node, exp.Collate) and _is_default_collation(node.expression):
        return node.this
    if isinstance(node, exp.Operator):
        op = str(node.args.get("operator", "")).split(".")[-1].strip()
        if op in _OPERATORS:
            return _OPERATORS[op](node.this, node.expression)
        return node
    if isinstance(node, exp.Cast):
        return _rewrite_cast(node)
    if isinstance(node, exp.EQ | exp.NEQ):
        return _array_text(node)
    if isinstance(node, exp.Bracket) and _names_vector(node.this, context.vectors):
        return _from_zero(node)
    if isinstance(node, exp.Anonymous | exp.Func):
        return _rewrite_function(node, context)
    return node


# The type OID a value is sent as, from DuckDB's typeof() of the argument standing here.
_WIRE_OID = sqlglot.parse_one(wire_oid_sql("typeof(heron_typeof_argument)"), read="duckdb")


def _typeof_oid(argument: exp.Expression, declared: int | None) -> exp.Expression:
    """pg_typeof's OID of `argument`: the type it declares (a jsonb or varchar(n) column, ...),
    else the type its values are sent as. The argument is put in its place as a tree: printed
    and parsed again, `j -> 'a'` would read as a lambda."""
    if declared:
        return exp.Literal.number(declared)
    oid = _WIRE_OID.copy()
    for placeholder in list(oid.find_all(exp.Column)):
        if placeholder.name == "heron_typeof_argument":
            placeholder.replace(argument.copy())
    return oid


def _rewrite_table(node: exp.Table) -> exp.Expression:
    schema, name = node.db.lower(), node.name.lower()
    alias = node.args.get("alias")
    if isinstance(node.this, exp.Anonymous) and node.this.name.lower() == "pg_partition_ancestors":
        return _partition_ancestors(node)
    if schema in _CATALOG_SCHEMAS:
        if isinstance(node.this, exp.Func):  # FROM pg_catalog.generate_series(...)
            return exp.Table(this=node.this, alias=alias)
        if name in _PG_RELATIONS:
            return exp.Table(this=exp.to_identifier(name), alias=alias)
    if schema == "information_schema" and name in _SCHEMA_RELATIONS:
        if alias is None:  # columns keep naming their table by its own name
            alias = exp.TableAlias(this=exp.to_identifier(name))
        return exp.Table(this=exp.to_identifier(pg_information_schema.view_name(name)),
                         alias=alias)
    return node


def _partition_ancestors(node: exp.Table) -> exp.Expression:
    """FROM pg_partition_ancestors(rel) [WITH ORDINALITY]: Heron has no partitions, so a
    relation's only ancestor is itself (at depth 1)."""
    relation = exp.cast(node.this.expressions[0].copy(), exp.DataType.build("UINTEGER",
                                                                             dialect="duckdb"))
    columns = [relation, exp.Literal.number(1)] if node.args.get("ordinality") else [relation]
    alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier("ancestors"))
    names = [c.name for c in alias.columns] or ["relid", "ordinality"]
    select = exp.select(*(exp.alias_(value, name) for value, name in zip(columns, names,
                                                                          strict=False)))
    return exp.Subquery(this=select, alias=exp.TableAlias(this=alias.this.copy()))


def _is_schema(node: exp.Expression, schemas: set[str]) -> bool:
    return isinstance(node, exp.Identifier | exp.Column | exp.Var) and (
        node.name.lower() in schemas)


def _is_default_collation(node: exp.Expression) -> bool:
    if isinstance(node, exp.Column | exp.Identifier | exp.Var | exp.Literal):
        table = node.args.get("table") if isinstance(node, exp.Column) else None
        return node.name.lower() in _DEFAULT_COLLATIONS and (
            table is None or table.name.lower() in _CATALOG_SCHEMAS)
    return False


def _type_name(to: exp.Expression) -> str | None:
    """The bare PostgreSQL name of a cast's target type ('regclass', 'text', ...)."""
    if isinstance(to, exp.ObjectIdentifier):
        return to.name.lower()
    if isinstance(to, exp.DataType) and to.this == exp.DataType.Type.USERDEFINED:
        kind = to.args.get("kind")
        if isinstance(kind, exp.Dot):
            return kind.expression.name.lower() if _is_schema(kind.this, _CATALOG_SCHEMAS) else (
                None)
        if kind is not None:
            return kind.name.lower()
    return None


def _is_text(node: exp.Expression) -> bool:
    """Whether `node` is text for sure (a cast of it to regclass looks a name up)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal):
        return node.is_string
    if isinstance(node, exp.DPipe | exp.Concat | exp.ConcatWs | exp.Lower | exp.Upper | exp.Trim
                  | exp.Format):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in _TEXT_FUNCTIONS
    if isinstance(node, exp.Cast):
        to = node.args["to"]
        return (isinstance(to, exp.DataType) and to.is_type(*exp.DataType.TEXT_TYPES)) or (
            _type_name(to) == "name")
    return False


def _rewrite_cast(node: exp.Cast) -> exp.Expression:
    to = node.args["to"]
    if isinstance(to, exp.DataType) and to.this == exp.DataType.Type.ARRAY:
        elements = to.expressions
        if elements and (name := _type_name(elements[0])) is not None:
            target = _TYPE_NAMES.get(name, name)
            return exp.cast(node.this, exp.DataType.build(f"{target}[]", dialect="duckdb"))
        return node
    name = _type_name(to)
    if name is None:
        return node
    if name == "regclass" and node.this.is_string and isinstance(call := node.parent,
                                                                 exp.Anonymous) and (
            call.name.lower() in _SEQUENCE_FUNCTIONS and call.expressions[0] is node):
        return node.this  # (DuckDB's find a sequence by its name's text, not by an OID)
    if name in _OID_CASTS:
        by_name, by_oid = _OID_CASTS[name]
        if isinstance(node.this, exp.Parameter | exp.Placeholder):
            # a client's value, sent as text: a name or an OID's digits, as PostgreSQL's
            # regclassin reads it (SQLAlchemy's inspector binds 'pg_catalog.pg_constraint')
            return exp.Anonymous(this=by_name, expressions=[exp.cast(node.this, "VARCHAR")])
        function = by_name if _is_text(node.this) else by_oid
        return exp.Anonymous(this=function, expressions=[node.this])
    target = _TYPE_NAMES.get(name, name)
    return exp.cast(node.this, exp.DataType.build(target, dialect="duckdb"))


def _array_text(node: exp.Binary) -> exp.Expression:
    """`col = '{0}'`: PostgreSQL reads the text as an array; DuckDB needs a list."""
    right = node.expression
    if isinstance(right, exp.Literal) and right.is_string and (m := _ARRAY_TEXT.match(right.name)):
        items = [i.strip() for i in m[1].split(",") if i.strip()]
        values = [exp.Literal.number(i) if re.fullmatch(r"-?\d+", i) else exp.Literal.string(i)
                  for i in items]
        return node.__class__(this=node.this, expression=exp.Array(expressions=values))
    return node


def _names_vector(node: exp.Expression, vectors: frozenset[str]) -> bool:
    return isinstance(node, exp.Column) and node.name.lower() in vectors


def _from_zero(node: exp.Bracket) -> exp.Expression:
    """`indkey[0]` (PostgreSQL counts an int2vector from zero) -> DuckDB's `indkey[1]`."""
    shifted = [exp.Add(this=exp.Paren(this=i.copy()), expression=exp.Literal.number(1))
               for i in node.expressions]
    return exp.Bracket(this=node.this, expressions=shifted)


def _rewrite_function(node: exp.Func, context: _Context) -> exp.Expression:
    vectors = context.vectors
    name = node.name.lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()
    args = pg_semantics.call_arguments(node)
    if name == "format" and args and isinstance(args[0], exp.Literal) and args[0].is_string:
        return pg_semantics.pg_format(args[0].name, list(args[1:])) or node
    if name == "generate_subscripts" and args and _names_vector(args[0], vectors):
        return exp.Sub(this=node.copy(), expression=exp.Literal.number(1))
    if name in _RENAMED_FUNCTIONS:
        return exp.Anonymous(this=_RENAMED_FUNCTIONS[name], expressions=args)
    if name == "pg_typeof" and len(args) == 1:  # the type as PostgreSQL names it
        typed = exp.Anonymous(this="heron_typeof_name", expressions=[_typeof_oid(
            args[0], context.typeof_oids.get(id(node)))])
        item = isinstance(node.parent, exp.Select | exp.Returning) and (
            node.arg_key == "expressions")
        return exp.alias_(typed, "pg_typeof") if item else typed
    return node

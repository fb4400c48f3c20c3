"""PostgreSQL's spellings of DDL that DuckDB's grammar lacks, as DuckDB reads them: what pg_dump
writes (and migration tools copy from it), so that a dump restores with psql.

Contract: `rewrite(sql)` is `sql` with these spellings replaced; any other statement comes back
unchanged and unparsed (a cheap test first), and so does one PostgreSQL's grammar cannot read.
- `ALTER TABLE [IF EXISTS] ONLY name ...` is `ALTER TABLE name ...`: Heron has no table
  inheritance, so ONLY names the same rows.
- `CREATE SEQUENCE ... AS smallint | integer | bigint` bounds the sequence by the type (its
  largest value ascending, its smallest descending) unless MAXVALUE / MINVALUE say otherwise;
  `CACHE n` is dropped: every nextval takes the next value, which is what CACHE 1, PostgreSQL's
  default, does (a larger cache only lets sessions skip values).
- CREATE [UNIQUE] INDEX as DuckDB's index (its ART serves both equality and range look-ups):
  USING btree or hash dropped (gin, gist, brin and spgist are 0A000, other methods 42704, as
  PostgreSQL's unknown ones); an INCLUDE list, operator classes (`text_pattern_ops`) and COLLATE
  "C" / "POSIX" dropped (they change no answer: the keys, their order and their uniqueness stay);
  a non-unique partial index's WHERE dropped (an index over all rows gives the same answers); a
  unique partial index (DuckDB has no partial indexes) made unique over its keys where its
  predicate holds, NULL elsewhere — `(CASE WHEN predicate THEN key END)` for each key — as NULLs
  are never duplicates (the soft-deleted rows of `UNIQUE (email) WHERE deleted_at IS NULL`); an
  index without a name named as PostgreSQL names it (`<table>_<columns>_idx`, a number after it
  while the name is taken in the table's schema: hence `con`).
- `COMMENT ON MATERIALIZED VIEW` is COMMENT ON TABLE: a materialized view is a table here
  (`materialized_views`).
- `DROP INDEX CONCURRENTLY` is DROP INDEX (DuckDB's writes never wait on an index).
- `CREATE TABLE ... PARTITION BY` and `CREATE TABLE ... PARTITION OF` are 0A000 (DuckDB's
  grammar has neither: a syntax error before).
- `CREATE UNLOGGED TABLE` is CREATE TABLE: its rows are logged, which only makes them survive a
  crash that PostgreSQL's unlogged table's would not (job queues and caches declare them so).
- `ALTER TABLE name RENAME column TO new` is `RENAME COLUMN column TO new` (the same in
  PostgreSQL's grammar; sqlglot, which the ALTER TABLE handlers read with, takes it for a
  rename of the table: Alembic's alter_column writes it so).
- A constraint's `[NOT] DEFERRABLE`, `INITIALLY DEFERRED | IMMEDIATE` and `NOT VALID` in CREATE
  TABLE and ALTER TABLE are dropped: DuckDB's grammar has none of them, and it checks every
  constraint at once, every existing row included; but a foreign key's DEFERRABLE and
  INITIALLY DEFERRED stay, for `foreign_keys` (Django makes each foreign key DEFERRABLE
  INITIALLY DEFERRED).
- `CREATE SCHEMA [IF NOT EXISTS] name AUTHORIZATION role` is CREATE SCHEMA name, and
  `CREATE SCHEMA AUTHORIZATION role` creates the schema `role`: Heron keeps no owners, every
  role uses every schema (as `ALTER ... OWNER TO` is accepted).
- `nextval('name'::regclass)` in a column's DEFAULT (CREATE TABLE, ALTER TABLE ... SET DEFAULT)
  is `nextval('name')`: DuckDB finds the sequence by its name's text, and a regclass cast there
  would be a catalog look-up DuckDB refuses in a default.
"""

from __future__ import annotations

import re

import duckdb
from sqlglot import exp

from heron.planner import dialect, existence
from heron.planner.commands import IDENTIFIER
from heron.planner.errors import SqlError, SqlState

# COMMENT ON MATERIALIZED VIEW: its table's comment (`materialized_views`).
_COMMENT_ON_MATERIALIZED_VIEW = re.compile(r"^(\s*COMMENT\s+ON\s+)MATERIALIZED\s+VIEW\b",
                                           re.IGNORECASE)
_DROP_INDEX_CONCURRENTLY = re.compile(r"^(\s*DROP\s+INDEX\s+)CONCURRENTLY\s+", re.IGNORECASE)
_UNLOGGED = re.compile(r"^(\s*CREATE\s+)UNLOGGED\s+(?=TABLE\b)", re.IGNORECASE)
# Declarative partitioning: the partitioned table's clause, or a partition of one.
_PARTITIONED = re.compile(r"^\s*CREATE\s+(?:(?:GLOBAL|LOCAL)\s+)?(?:TEMP(?:ORARY)?\s+|UNLOGGED\s+)?"
                          r"TABLE\b(?:.*\)\s*PARTITION\s+BY\s+(?:RANGE|LIST|HASH)\s*\(|"
                          r"[^(]*\bPARTITION\s+OF\b)", re.IGNORECASE | re.DOTALL)
_SCHEMA_AUTHORIZATION = re.compile(
    rf"^(?P<head>\s*CREATE\s+SCHEMA\s+(?:IF\s+NOT\s+EXISTS\s+)?)(?P<name>{IDENTIFIER}\s+)?"
    rf"AUTHORIZATION\s+(?P<role>{IDENTIFIER})(?P<tail>\s*;?\s*)$", re.IGNORECASE)
_RENAME_COLUMN = re.compile(
    rf"^(?P<head>\s*ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?{IDENTIFIER}"
    rf"(?:\s*\.\s*{IDENTIFIER}){{0,2}}\s+RENAME\s+)(?!(?:TO|COLUMN|CONSTRAINT)\s)"
    rf"(?P<tail>{IDENTIFIER}\s+TO\s+{IDENTIFIER}\s*;?\s*)$", re.IGNORECASE)
# What DuckDB's grammar lacks after a constraint (see the module docstring), outside quotes.
_MAY_DEFER = re.compile(r"^\s*(?:CREATE|ALTER\s+TABLE)\b(?s:.*)\b(?:DEFERRABLE|INITIALLY|VALID)\b",
                        re.IGNORECASE)
_DEFERRAL = re.compile(r"\s+(?:NOT\s+)?DEFERRABLE\b|\s+INITIALLY\s+(?:DEFERRED|IMMEDIATE)\b|"
                       r"\s+NOT\s+VALID\b", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_MAY_REWRITE = re.compile(
    r"^\s*(?:ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?ONLY\b|"
    r"CREATE\s+(?:(?:TEMP|TEMPORARY|UNLOGGED)\s+)?SEQUENCE\b|"
    r"CREATE\s+(?:UNIQUE\s+)?INDEX\b|"
    r"(?:CREATE|ALTER)\s+TABLE\b.*\bregclass\b)", re.IGNORECASE | re.DOTALL)
_T = exp.DataType.Type
_BOUNDS = {_T.SMALLINT: (-(2**15), 2**15 - 1), _T.INT: (-(2**31), 2**31 - 1),
           _T.BIGINT: (-(2**63), 2**63 - 1)}
_DEFAULT_INDEX_METHODS = frozenset({"btree", "hash"})
_OTHER_INDEX_METHODS = frozenset({"gin", "gist", "brin", "spgist"})
_BINARY_COLLATIONS = frozenset({"c", "posix", "default"})


def rewrite(sql: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """`sql` with PostgreSQL's DDL spellings as DuckDB's (see the module docstring); without
    `con` an index without a name keeps none."""
    if (comment := _COMMENT_ON_MATERIALIZED_VIEW.match(sql)) is not None:
        return f"{comment[1]}TABLE{sql[comment.end():]}"
    if (drop := _DROP_INDEX_CONCURRENTLY.match(sql)) is not None:
        return drop[1] + sql[drop.end():]
    if (schema := _SCHEMA_AUTHORIZATION.match(sql)) is not None:
        return f"{schema['head']}{(schema['name'] or schema['role']).strip()}{schema['tail']}"
    if _PARTITIONED.match(_QUOTED.sub("''", sql)) is not None:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "partitioned tables are not supported",
                       hint="Create a plain table: DuckDB's storage prunes row groups by each "
                            "column's range without partitions.")
    if (unlogged := _UNLOGGED.match(sql)) is not None:
        sql = unlogged[1] + sql[unlogged.end():]
    if (renamed := _RENAME_COLUMN.match(sql)) is not None:
        sql = f"{renamed['head']}COLUMN {renamed['tail']}"
    if _MAY_DEFER.match(sql) is not None:
        sql = _without_deferral(sql)
    if _MAY_REWRITE.match(sql) is None:
        return sql
    tree = dialect.read_postgres(sql)
    if tree is None:
        return sql
    changed = False
    if isinstance(tree, exp.Alter) and tree.args.get("only"):
        tree.set("only", False)
        changed = True
    if isinstance(tree, exp.Create) and (tree.kind or "").upper() == "SEQUENCE":
        changed |= _bounded_by_type(tree)
    if isinstance(tree, exp.Create) and isinstance(tree.this, exp.Index):
        changed |= _duckdb_index(tree.this, bool(tree.args.get("unique")))
        if tree.this.this is None and con is not None:
            tree.this.set("this", exp.to_identifier(_index_name(con, tree.this)))
            changed = True
    if isinstance(tree, exp.Create | exp.Alter):
        changed |= _nextval_by_name(tree)
    return tree.sql(dialect=dialect.PostgresSql) if changed else sql


def _without_deferral(sql: str) -> str:
    """`sql` without DEFERRABLE, INITIALLY and NOT VALID outside its quoted strings and names,
    but a foreign key's DEFERRABLE and INITIALLY DEFERRED (`foreign_keys` keeps them)."""
    masked = _QUOTED.sub(lambda m: "'" + " " * (len(m[0]) - 2) + "'", sql)
    kept, at = [], 0
    for found in _DEFERRAL.finditer(masked):
        words = found[0].split()
        if not (words[-1].upper() in ("DEFERRABLE", "DEFERRED") and words[0].upper() != "NOT"
                and _of_foreign_key(masked[:found.start()])):  # (the others are defaults)
            kept.append(sql[at:found.start()])
            at = found.end()
    return "".join([*kept, sql[at:]])


def _of_foreign_key(before: str) -> bool:
    """Whether what follows `before` (quoted text masked) is still part of a REFERENCES clause:
    no comma or closing parenthesis of the clause's level since its last REFERENCES."""
    found = [m.end() for m in re.finditer(r"\bREFERENCES\b", before, re.IGNORECASE)]
    if not found:
        return False
    depth = 0
    for char in before[found[-1]:]:
        depth += char == "("
        depth -= char == ")"
        if depth < 0 or (depth == 0 and char == ","):
            return False
    return True


def _bounded_by_type(create: exp.Create) -> bool:
    """A CREATE SEQUENCE's AS type as its bounds, and its CACHE dropped."""
    dtype = create.args.get("expression")
    properties = create.args.get("properties")
    options = next((p for p in properties.expressions if isinstance(p, exp.SequenceProperties)),
                   None) if properties is not None else None
    if not isinstance(dtype, exp.DataType) and (options is None or not options.args.get("cache")):
        return False
    if options is None:
        options = exp.SequenceProperties()
        if properties is None:
            create.set("properties", exp.Properties(expressions=[options]))
        else:
            properties.append("expressions", options)
    options.set("cache", None)
    if isinstance(dtype, exp.DataType):
        create.set("expression", None)
        smallest, largest = _BOUNDS.get(dtype.this, _BOUNDS[_T.BIGINT])
        increment = options.args.get("increment")
        descending = increment is not None and increment.sql().lstrip("(").startswith("-")
        bound = "minvalue" if descending else "maxvalue"
        if options.args.get(bound) is None:
            value = smallest if descending else largest
            literal = exp.Literal.number(abs(value))
            options.set(bound, exp.Neg(this=literal) if value < 0 else literal)
            spelled = f"NO {bound.upper()}"  # the NO option the bound now replaces
            options.set("options", [o for o in options.args.get("options") or []
                                    if o.name.upper() != spelled] or None)
    return True


def _duckdb_index(index: exp.Index, unique: bool) -> bool:
    """A CREATE INDEX's PostgreSQL-only parts dropped (see the module docstring)."""
    parameters = index.args.get("params")
    if parameters is None:
        return False
    changed = False
    using = parameters.args.get("using")
    if using is not None:
        method = using.name.lower()
        if method in _OTHER_INDEX_METHODS:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, f'access method "{method}" is not '
                           "supported", hint="Heron's indexes are DuckDB's (btree, hash).")
        if method not in _DEFAULT_INDEX_METHODS:
            raise SqlError(SqlState.UNDEFINED_OBJECT, f'access method "{method}" does not exist')
        parameters.set("using", None)
        changed = True
    if parameters.args.get("include"):
        parameters.set("include", None)
        changed = True
    where = parameters.args.get("where")
    if where is not None:
        parameters.set("where", None)
        changed = True
    for key in parameters.args.get("columns") or []:
        inner = key.this if isinstance(key, exp.Ordered) else key
        if isinstance(inner, exp.Opclass) or (isinstance(inner, exp.Collate) and (
                inner.expression.name.lower() in _BINARY_COLLATIONS)):
            inner = inner.replace(inner.this)
            changed = True
        if where is not None and unique:  # NULL where the predicate fails: never a duplicate
            inner.replace(exp.Paren(this=exp.Case(ifs=[exp.If(this=where.this.copy(),
                                                                true=inner.copy())])))
    return changed


def _index_name(con: duckdb.DuckDBPyConnection, index: exp.Index) -> str:
    """The name PostgreSQL gives an index without one: its table's, its columns' (a call's
    function, else "expr"), "idx", and a number while that is taken in the table's schema."""
    table = index.args["table"]
    keys = [k.this if isinstance(k, exp.Ordered) else k
            for k in index.args["params"].args.get("columns") or []]
    parts = [table.name, *(k.name if isinstance(k, exp.Column) else
                           k.sql_name().lower() if isinstance(k, exp.Func) else "expr"
                           for k in keys), "idx"]
    relation = existence.find_relation(con, tuple(p.name for p in table.parts))
    taken = {name for (name,) in con.execute(
        "SELECT index_name FROM duckdb_indexes() WHERE schema_name = $1 AND database_name = $2 "
        "UNION ALL SELECT table_name FROM duckdb_tables() WHERE schema_name = $1 AND "
        "database_name = $2 UNION ALL SELECT view_name FROM duckdb_views() WHERE schema_name = $1 "
        "AND database_name = $2 UNION ALL SELECT sequence_name FROM duckdb_sequences() WHERE "
        "schema_name = $1 AND database_name = $2", [relation.schema, relation.database]
    ).fetchall()}
    name = "_".join(parts)
    return next(n for n in (name, *(f"{name}{i}" for i in range(1, len(taken) + 2)))
                if n not in taken)


def _nextval_by_name(tree: exp.Expression) -> bool:
    """Each `nextval('name'::regclass)` of a column default as `nextval('name')`."""
    changed = False
    for default in tree.find_all(exp.DefaultColumnConstraint, exp.AlterColumn):
        value = default.this if isinstance(default, exp.DefaultColumnConstraint) else (
            default.args.get("default"))
        if value is None:
            continue
        for call in value.find_all(exp.Anonymous):
            argument = call.expressions[0] if len(call.expressions) == 1 else None
            if call.name.lower() == "nextval" and isinstance(argument, exp.Cast) and (
                    argument.to.sql().lower() == "regclass") and argument.this.is_string:
                argument.replace(argument.this)
                changed = True
    return changed

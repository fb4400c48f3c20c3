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
- `CREATE [UNIQUE] INDEX ... USING btree | hash (...)` is DuckDB's index (its ART serves both
  equality and range look-ups); other methods (gin, gist, brin) stay, for DuckDB to refuse.
- `nextval('name'::regclass)` in a column's DEFAULT (CREATE TABLE, ALTER TABLE ... SET DEFAULT)
  is `nextval('name')`: DuckDB finds the sequence by its name's text, and a regclass cast there
  would be a catalog look-up DuckDB refuses in a default.
"""

from __future__ import annotations

import re

from sqlglot import exp

from heron.planner import dialect

_MAY_REWRITE = re.compile(
    r"^\s*(?:ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?ONLY\b|"
    r"CREATE\s+(?:(?:TEMP|TEMPORARY|UNLOGGED)\s+)?SEQUENCE\b|"
    r"CREATE\s+(?:UNIQUE\s+)?INDEX\b.*\bUSING\s+(?:btree|hash)\b|"
    r"(?:CREATE|ALTER)\s+TABLE\b.*\bregclass\b)", re.IGNORECASE | re.DOTALL)
_T = exp.DataType.Type
_BOUNDS = {_T.SMALLINT: (-(2**15), 2**15 - 1), _T.INT: (-(2**31), 2**31 - 1),
           _T.BIGINT: (-(2**63), 2**63 - 1)}
_DEFAULT_INDEX_METHODS = frozenset({"btree", "hash"})


def rewrite(sql: str) -> str:
    """`sql` with PostgreSQL's DDL spellings as DuckDB's (see the module docstring)."""
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
        changed |= _default_index_method(tree.this)
    if isinstance(tree, exp.Create | exp.Alter):
        changed |= _nextval_by_name(tree)
    return tree.sql(dialect=dialect.PostgresSql) if changed else sql


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


def _default_index_method(index: exp.Index) -> bool:
    """A CREATE INDEX's USING btree or hash dropped (DuckDB's own index serves both)."""
    parameters = index.args.get("params")
    using = parameters.args.get("using") if parameters is not None else None
    if using is None or using.name.lower() not in _DEFAULT_INDEX_METHODS:
        return False
    parameters.set("using", None)
    return True


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

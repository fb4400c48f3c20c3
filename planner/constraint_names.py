"""Constraint names as they were given (`CONSTRAINT name ...`), where DuckDB keeps none.

DuckDB reads `CONSTRAINT name` before a constraint and forgets the name; the catalog then shows
a name of its making (`pg_catalog_relations.constraint_name`: `<table>_pkey`, ...). PostgreSQL
keeps the given one, and clients use it: error messages and their `constraint_name` field,
pg_constraint, psql's \\d, pg_dump, and `ALTER TABLE ... DROP CONSTRAINT name`, by which
migration tools drop the constraints they named. Heron keeps it in the table itself, as it keeps
declared types (`pg_semantics`): in a CHECK, which comes and goes with the table in transactions,
follows renames of the table and of its columns, and goes with the columns it reads.

- A named CHECK (e) is kept as CHECK ((e) OR ('heron:c:<name>' IS NULL)): the same test (the
  added term is false, so e's TRUE, FALSE or NULL decides) carrying its name.
- A named PRIMARY KEY or UNIQUE over the columns c1, ..., cn gets a mark beside it,
  CHECK ((c1 IS NULL) OR ... OR (NOT ('heron:<p|u>:<name>' IS NULL))), which is always true.
  The catalog gives its name to the key of its kind over the same columns and shows no mark. A
  key given the name the catalog gives it anyway (pg_dump's `t_pkey`) gets none. (A foreign
  key is a mark itself, its name in it: `foreign_keys`; an earlier Heron marked DuckDB's own
  foreign keys' names with `f`, which `alter_table.own_foreign_keys` reads.)

Contract:
- `name_constraints(tree)`: the named constraints of a CREATE TABLE (a sqlglot tree) so kept, in
  place; the nodes it changed (`pg_semantics.rewrite` prints the tree when there are any).
  A name on NOT NULL, DEFAULT and the like is dropped, as PostgreSQL 15 keeps none.
- `Added.read(constraint, table)`: the table constraint `constraint` (DuckDB's text, maybe
  named) that ALTER TABLE ADD CONSTRAINT adds to `table` (`alter_table`): its name (as given,
  else as PostgreSQL names it), its kind, and what the table's CREATE TABLE gets for it (the
  constraint and, for a named key, its mark).
- `is_key_mark(check)`: whether a CHECK's expression (a sqlglot tree) is a key's mark (a
  foreign key's included).
- `column_items(columns, table)`: the same for the columns ALTER TABLE ADD COLUMN adds
  (`alter_table`): each column, then the marks of its named keys.
- `exists(con, name)`: whether a constraint the catalog shows has the name (its parts: maybe
  schema-qualified), in the session's database or its temporary tables (SET CONSTRAINTS).
- SQL over a duckdb_constraints() row `c` (for `pg_catalog_relations` and `alter_table`):
  `given_name(c)` (NULL where none was given), `is_key_mark_sql(c)`, `own_expression(c)` (a named
  CHECK's expression without its name); `key_mark_text(c)`: the constraint_text of a key's mark
  (NULL where it has none).

Differences from PostgreSQL: two keys of one kind over the same columns show one name; a name
Heron makes follows a renamed table (PostgreSQL's stays as it was made) and is not made unique
with a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
from sqlglot import exp

from heron.planner import dialect, foreign_keys
from heron.planner.errors import SqlError, SqlState

_PREFIX = "heron:"
# Over duckdb_constraints().expression, as DuckDB prints the CHECKs above.
NAMED_CHECK = r"^\((.*) OR \('heron:c:((?:[^']|'')*)' IS NULL\)\)$"
KEY_MARK = r"^\(.* OR \(NOT \('heron:([puf]):((?:[^']|'')*)' IS NULL\)\)\)$"
_KEY_PREFIXES = (*(f"{_PREFIX}{letter}:" for letter in "puf"), foreign_keys.PREFIX)
_KINDS = {exp.PrimaryKey: "p", exp.PrimaryKeyColumnConstraint: "p", exp.UniqueColumnConstraint: "u",
          exp.ForeignKey: "f", exp.Reference: "f"}


def name_constraints(tree: exp.Expression) -> list[exp.Expression]:
    """The named constraints of CREATE TABLE `tree` kept as the module docstring says."""
    schema = tree.this if isinstance(tree, exp.Create) else None
    if not isinstance(schema, exp.Schema) or (tree.args.get("kind") or "").upper() != "TABLE":
        return []
    table = schema.this.name if isinstance(schema.this, exp.Table) else ""
    changed: list[exp.Expression] = []
    marks: list[exp.Expression] = []
    for item in list(schema.expressions):
        if isinstance(item, exp.ColumnDef):
            for constraint in item.args.get("constraints") or ():
                if isinstance(constraint, exp.ColumnConstraint) and constraint.this:
                    changed.append(constraint)
                    name = dialect.kept_name(constraint.this)
                    constraint.set("this", None)
                    constraint.set("kind", _kept(constraint.kind, name, table, [item.name], marks))
        elif isinstance(item, exp.Constraint) and len(item.expressions) == 1:
            changed.append(item)
            item.replace(_kept(item.expressions[0], dialect.kept_name(item.this), table, None,
                               marks))
    for mark in marks:
        schema.append("expressions", exp.CheckColumnConstraint(this=mark))
    return changed


@dataclass(frozen=True)
class Added:
    """A constraint ALTER TABLE ADD CONSTRAINT adds to a table."""

    name: str  # as given, else as PostgreSQL names it
    given: bool
    kind: str  # "p", "u", "f" or "c" (CHECK)
    items: tuple[str, ...]  # what the table's CREATE TABLE gets: it, and a named key's mark

    @property
    def is_key(self) -> bool:
        return self.kind in ("p", "u")

    @property
    def is_check(self) -> bool:
        return self.kind == "c"

    @classmethod
    def read(cls, constraint: str, table: str, resolve: foreign_keys.Resolve) -> Added:
        """`constraint` (DuckDB's text of a table constraint, maybe named) added to `table`; a
        foreign key as its mark (`foreign_keys.declare`, which `resolve` serves)."""
        tree = dialect.parse(f"CREATE TABLE {dialect.quoted(table)} ({constraint})")
        assert isinstance(tree, exp.Create) and isinstance(tree.this, exp.Schema)
        item = tree.this.expressions[0]
        named = isinstance(item, exp.Constraint) and len(item.expressions) == 1
        kind = item.expressions[0] if named else item
        letter = "c" if isinstance(kind, exp.CheckColumnConstraint) else _KINDS.get(type(kind))
        if letter is None:
            raise SqlError(SqlState.INTERNAL_ERROR, f"cannot read the constraint {constraint!r}")
        if named:
            name = dialect.kept_name(item.this)
        elif letter == "c":
            read = {c.name for c in kind.find_all(exp.Column)}
            name = f"{table}_{read.pop()}_check" if len(read) == 1 else f"{table}_check"
        else:
            name = _generated_name(letter, table, [c.name for c in _key_columns(kind)])
        foreign_keys.declare(tree, resolve)
        name_constraints(tree)
        return cls(name, named, letter, tuple(i.sql(dialect="duckdb")
                                              for i in tree.this.expressions))


def column_items(columns: Sequence[exp.ColumnDef], table: str, resolve: foreign_keys.Resolve
                 ) -> list[str]:
    """The CREATE TABLE items of the columns ALTER TABLE ADD COLUMN adds to `table`: each
    column, then the marks of its foreign keys (`foreign_keys.declare`, which `resolve` serves)
    and those keeping its constraints' names."""
    create = exp.Create(kind="TABLE", this=exp.Schema(this=exp.to_table(table), expressions=[
        column.copy() for column in columns]))
    foreign_keys.declare(create, resolve)
    name_constraints(create)
    return [item.sql(dialect="duckdb") for item in create.this.expressions]


def exists(con: duckdb.DuckDBPyConnection, name: tuple[str, ...]) -> bool:
    """Whether a constraint the catalog shows is named `name` (see the module docstring)."""
    # (imported here: the catalog's SQL reads this module's)
    from heron.planner.pg_catalog_relations import constraint_name, shown_constraint
    schema = name[-2] if len(name) > 1 else None
    return bool(con.execute(
        f"SELECT 1 FROM {foreign_keys.CONSTRAINTS} c WHERE {shown_constraint('c')} "
        f"AND {constraint_name('c')} = ? AND (? IS NULL OR c.schema_name = ?) "
        "AND c.database_name IN (current_database(), 'temp') LIMIT 1",
        [name[-1], schema, schema]).fetchall())


def is_key_mark(check: exp.Expression) -> bool:
    """Whether a CHECK's expression (a sqlglot tree) is a key's mark."""
    return any(literal.is_string and literal.name.startswith(_KEY_PREFIXES)
               for literal in check.find_all(exp.Literal))


def _kept(kind: exp.Expression, name: str, table: str, columns: list[str] | None,
          marks: list[exp.Expression]) -> exp.Expression:
    """The constraint `kind` without its `name`, its name kept: in it (a CHECK) or in a mark
    appended to `marks` (a key, over `columns`, a column constraint's; a table constraint's own
    when None)."""
    if isinstance(kind, exp.CheckColumnConstraint):
        named = exp.Is(this=exp.Literal.string(f"{_PREFIX}c:{name}"), expression=exp.Null())
        kind.set("this", exp.or_(exp.Paren(this=kind.this), named))
        return kind
    letter = _KINDS.get(type(kind))
    if letter is None:  # NOT NULL, DEFAULT, ...: PostgreSQL 15 names none
        return kind
    if columns is None:
        columns = [c.name for c in _key_columns(kind)]
    if not columns:
        raise SqlError(SqlState.INTERNAL_ERROR,
                       f"cannot read the columns of {kind.sql(dialect='duckdb')}")
    if name == _generated_name(letter, table, columns):
        return kind
    marks.append(exp.or_(
        *(exp.Is(this=exp.column(c, quoted=True), expression=exp.Null()) for c in columns),
        exp.Not(this=exp.Is(this=exp.Literal.string(f"{_PREFIX}{letter}:{name}"),
                            expression=exp.Null()))))
    return kind


def _key_columns(kind: exp.Expression) -> list[exp.Expression]:
    if isinstance(kind, exp.UniqueColumnConstraint):
        return list(kind.this.expressions) if isinstance(kind.this, exp.Schema) else []
    return list(kind.expressions)


def _generated_name(letter: str, table: str, columns: list[str]) -> str:
    """The name the catalog gives a key (`pg_catalog_relations.constraint_name`)."""
    if letter == "p":
        return f"{table}_pkey"
    return f"{table}_{'_'.join(columns)}_{'key' if letter == 'u' else 'fkey'}"


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _unescaped(sql: str) -> str:
    return f"replace({sql}, '''''', '''')"


def given_name(c: str) -> str:
    """SQL: the name given to the duckdb_constraints() row `c` (NULL where none was)."""
    check = f"nullif(regexp_extract({c}.expression, {_sql_literal(NAMED_CHECK)}, 2), '')"
    key = _of_mark(c, f"max(regexp_extract(heron_m.expression, {_sql_literal(KEY_MARK)}, 2))")
    return (f"CASE {c}.constraint_type WHEN 'CHECK' THEN {_unescaped(check)} "
            f"WHEN 'NOT NULL' THEN NULL ELSE {_unescaped(key)} END")


def key_mark_text(c: str) -> str:
    """SQL: the constraint_text (in its table's CREATE TABLE) of the mark of the key that is the
    duckdb_constraints() row `c` (NULL where none)."""
    return _of_mark(c, "max(heron_m.constraint_text)")


def _of_mark(c: str, value: str) -> str:
    """SQL: `value` over the marks (`heron_m`) of the key that is the row `c`."""
    letter = (f"CASE {c}.constraint_type WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u' "
              f"WHEN 'FOREIGN KEY' THEN 'f' END")
    return (f"(SELECT {value} FROM duckdb_constraints() heron_m "
            f"WHERE heron_m.table_oid = {c}.table_oid AND heron_m.constraint_type = 'CHECK' "
            f"AND regexp_extract(heron_m.expression, {_sql_literal(KEY_MARK)}, 1) = {letter} "
            f"AND list_sort(heron_m.constraint_column_names) "
            f"= list_sort({c}.constraint_column_names))")


def is_key_mark_sql(c: str) -> str:
    """SQL: whether the duckdb_constraints() row `c` is a key's mark."""
    return (f"({c}.constraint_type = 'CHECK' "
            f"AND regexp_matches({c}.expression, {_sql_literal(KEY_MARK)}))")


def own_expression(c: str) -> str:
    """SQL: the expression of the duckdb_constraints() row `c`, a named CHECK's without its
    name."""
    return (f"CASE WHEN regexp_matches({c}.expression, {_sql_literal(NAMED_CHECK)}) "
            f"THEN regexp_extract({c}.expression, {_sql_literal(NAMED_CHECK)}, 1) "
            f"ELSE {c}.expression END")

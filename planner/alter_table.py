"""ALTER TABLE actions DuckDB cannot run in place: on the CHECKs that keep declared types and
foreign keys, and DROP CONSTRAINT.

A CHECK is how Heron keeps what PostgreSQL declares beyond DuckDB's types (`pg_semantics`): a
varchar(n) column's length, which it enforces, and a jsonb column's mark; a client may also give
a column a CHECK of its own; a foreign key is a CHECK too (`foreign_keys`). DuckDB's ALTER
TABLE adds no column with a CHECK (its parser refuses one: "not supported yet"), adds no CHECK
to a table and drops none ("not implemented"), and changes the type of no column a CHECK reads.
Such an action is run the one way DuckDB keeps a CHECK: by creating the table again with it,
its rows copied, in one transaction. The CHECKs are then DuckDB's own, enforced on every later
write and read back by the catalog (`pg_catalog_relations`, `column_origins`) like those of
CREATE TABLE.

Contract:
- `parse(sql)` reads an ALTER TABLE (DuckDB's text, as `pg_semantics.rewrite` prints it): its
  `AddColumns` when every action adds a column and one of them carries a CHECK, a PRIMARY KEY, a
  REFERENCES or a named UNIQUE (DuckDB's ALTER TABLE adds none), or is NOT NULL with a computed
  default (see `_rebuilds`); its `AlterType`
  when its one action is ALTER COLUMN ... [SET DATA] TYPE [USING]; its `AddConstraint` when it
  adds a FOREIGN KEY or a CHECK constraint (DuckDB's ALTER TABLE adds neither: every ORM's
  migrations add foreign keys so) or a named PRIMARY KEY or UNIQUE; its `DropConstraint` for
  DROP CONSTRAINT (DuckDB drops none); its `ValidateConstraint` for VALIDATE CONSTRAINT (a
  constraint's existence: every one was checked when added); else None (DuckDB runs it).
- `run(con, change, stmt)` runs it as PostgreSQL would (`stmt`: the classified statement).
  ADD COLUMN: the table keeps its columns, rows, defaults, constraints, indexes and comments,
  the new columns come last, each existing row gets the new columns' defaults (evaluated per
  row, NULL without one) and must pass their constraints. A constant default longer than a
  varchar(n) column's length is refused even in an empty table (22001), as PostgreSQL
  evaluates it at once; a NOT NULL column without a default in a table with rows is 23502
  ("contains null values"); an existing column is 42701 (skipped with a notice under IF NOT
  EXISTS). ALTER COLUMN TYPE to varchar(n), char(n) (kept as varchar(n), as CREATE TABLE keeps
  it) or jsonb, or of a column a CHECK reads: the table created again without the column's
  CHECKs, DuckDB's ALTER COLUMN TYPE (its cast, or USING), then created again with the new
  type's CHECK and the column's other CHECKs, which every row must pass again (22001 for a
  value too long, as PostgreSQL's cast refuses it); any other ALTER COLUMN TYPE is DuckDB's.
  Either way the table's indexes are set aside while the type changes (`indexes_aside`).
  ADD CONSTRAINT: the table created again with the constraint, every row checked against it
  (23514; a foreign key's by `foreign_keys.validate`, 23503); DEFERRABLE / INITIALLY and NOT
  VALID were dropped before (`pg_ddl`: every constraint is checked at once, every existing row
  too). It keeps the name given
  (`constraint_names`): one the table's constraints have is 42710 (42P07 for a key's, as
  PostgreSQL's index's). A named PRIMARY KEY or UNIQUE is added so too (DuckDB adds an unnamed
  one in place).
  DROP CONSTRAINT: the table created again without the PRIMARY KEY, UNIQUE, CHECK or FOREIGN
  KEY the catalog shows under that name (42704 when none, a notice under IF EXISTS); a primary
  key's columns stay NOT NULL, as in PostgreSQL. `drop_constraint` is the same for DROP TABLE
  ... CASCADE (`existence`), for the foreign keys referencing a dropped table.
  `drop_columns`: DROP COLUMN as a rebuild where DuckDB cannot drop the columns (a key over a
  later column; an index, inside a transaction block), their constraints and indexes dropped
  with them; None where DuckDB can.
  `split`: an ALTER TABLE of several actions as one ALTER TABLE per action (`Planner` runs them
  in turn, in one transaction).
  `rebuild`: a table created again with CHECKs replaced (`foreign_keys`: a key following a
  renamed table). `own_foreign_keys`: DuckDB's own foreign keys, which a database made by an
  earlier Heron holds, as Heron's (`catalog.database`).
  All: an existing row failing a client's CHECK is 23514, a missing table 42P01 (skipped with
  a notice under IF EXISTS), a missing column 42703. Runs inside the session's transaction
  when one is open, else in its own (`statement.atomic`). Differences from PostgreSQL: the
  table gets a new OID (pg_class.oid; DuckDB gives a new table one); jsonb to json keeps the
  text as stored, where PostgreSQL stores jsonb's normalized text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError, TokenError

from heron.planner import (
    column_origins,
    constraint_names,
    dialect,
    existence,
    foreign_keys,
    indexes_aside,
    pg_semantics,
    statement,
)
from heron.planner.commands import IDENTIFIER, identifier, split_items
from heron.planner.errors import SqlError, SqlState, from_duckdb, value_too_long
from heron.planner.pg_catalog_relations import (
    BPCHAR_CHECK,
    JSONB_CHECK,
    LENGTH_CHECK,
    constraint_name,
    shown_constraint,
)
from heron.planner.statement import Result, atomic

# Cheap tests before parsing: an ALTER TABLE adding a column with a CHECK, or changing a type.
_MAY_ADD_CHECKED = re.compile(r"\bADD\b.*\b(?:CHECK|REFERENCES|PRIMARY|CONSTRAINT|NOT\s+NULL)\b",
                              re.IGNORECASE | re.DOTALL)
_MAY_ALTER_TYPE = re.compile(r"\bALTER\b.*\bTYPE\b", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class AddColumns:
    """What one ALTER TABLE adds: its table (schema or None, name) and column definitions."""

    schema: str | None
    table: str
    if_exists: bool  # ALTER TABLE IF EXISTS
    columns: tuple[exp.ColumnDef, ...]


@dataclass(frozen=True)
class AlterType:
    """ALTER TABLE ... ALTER COLUMN column TYPE type [USING using]."""

    schema: str | None
    table: str
    if_exists: bool
    column: str
    type: exp.DataType
    using: exp.Expression | None


@dataclass(frozen=True)
class ValidateConstraint:
    """ALTER TABLE ... VALIDATE CONSTRAINT name: every constraint was checked against the rows
    when it was added (Heron's NOT VALID checks them too), so only its existence is asked."""

    schema: str | None
    table: str
    if_exists: bool  # ALTER TABLE IF EXISTS
    name: str


@dataclass(frozen=True)
class DropConstraint:
    """ALTER TABLE ... DROP CONSTRAINT [IF EXISTS] name [CASCADE | RESTRICT]."""

    schema: str | None
    table: str
    if_exists: bool  # ALTER TABLE IF EXISTS
    name: str
    missing_ok: bool  # DROP CONSTRAINT IF EXISTS


@dataclass(frozen=True)
class AddConstraint:
    """ALTER TABLE ... ADD [CONSTRAINT name] FOREIGN KEY / CHECK: the constraint's text as
    DuckDB's CREATE TABLE takes it."""

    schema: str | None
    table: str
    if_exists: bool
    constraint: str


_ADD_CONSTRAINT = re.compile(
    rf"^\s*ALTER\s+TABLE\s+(?P<exists>IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<name>{IDENTIFIER}"
    rf"(?:\s*\.\s*{IDENTIFIER})?)\s+ADD\s+(?P<constraint>(?:CONSTRAINT\s+{IDENTIFIER}\s+)?"
    rf"(?:FOREIGN\s+KEY|CHECK)\b.*?|CONSTRAINT\s+{IDENTIFIER}\s+(?:PRIMARY\s+KEY|UNIQUE)\b.*?)"
    r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_ALTER_TABLE = re.compile(r"^\s*ALTER\s+TABLE\b", re.IGNORECASE)
_VALIDATE_CONSTRAINT = re.compile(
    rf"^\s*ALTER\s+TABLE\s+(?P<exists>IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<name>{IDENTIFIER}"
    rf"(?:\s*\.\s*{IDENTIFIER})?)\s+VALIDATE\s+CONSTRAINT\s+(?P<constraint>{IDENTIFIER})\s*;?\s*$",
    re.IGNORECASE)
_DROP_CONSTRAINT = re.compile(
    rf"^\s*ALTER\s+TABLE\s+(?P<exists>IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<name>{IDENTIFIER}"
    rf"(?:\s*\.\s*{IDENTIFIER})?)\s+DROP\s+CONSTRAINT\s+(?P<missing_ok>IF\s+EXISTS\s+)?"
    rf"(?P<constraint>{IDENTIFIER})(?:\s+(?:CASCADE|RESTRICT))?\s*;?\s*$", re.IGNORECASE)


def parse(sql: str) -> (AddColumns | AlterType | AddConstraint | DropConstraint
                        | ValidateConstraint | None):
    """What `sql` changes, when DuckDB may not do it itself (see the module docstring)."""
    if m := (_ADD_CONSTRAINT.match(sql) or _DROP_CONSTRAINT.match(sql)
             or _VALIDATE_CONSTRAINT.match(sql)):
        parts = [identifier(p) for p in re.findall(IDENTIFIER, m["name"])]
        place = (parts[0] if len(parts) > 1 else None, parts[-1], bool(m["exists"]))
        if m.re is _DROP_CONSTRAINT:
            return DropConstraint(*place, identifier(m["constraint"]), bool(m["missing_ok"]))
        if m.re is _VALIDATE_CONSTRAINT:
            return ValidateConstraint(*place, identifier(m["constraint"]))
        return AddConstraint(*place, m["constraint"])
    adds, alters = _MAY_ADD_CHECKED.search(sql), _MAY_ALTER_TYPE.search(sql)
    if adds is None and alters is None:
        return None
    # PostgreSQL's reading keeps VARCHAR(n) (DuckDB's reads it as TEXT)
    tree = dialect.read_postgres(sql)
    if not isinstance(tree, exp.Alter) or (tree.args.get("kind") or "").upper() != "TABLE" or (
            tree.this.args.get("catalog") is not None):  # another database's: DuckDB's
        return None
    table, actions = tree.this, tree.args.get("actions") or []
    place = (table.db or None, table.name, bool(tree.args.get("exists")))
    if actions and all(isinstance(a, exp.ColumnDef) for a in actions) and any(
            _rebuilds(column) for column in actions):
        return AddColumns(*place, tuple(actions))
    if len(actions) == 1 and isinstance(alter := actions[0], exp.AlterColumn) and isinstance(
            alter.args.get("dtype"), exp.DataType):
        using = alter.args.get("using")
        return AlterType(*place, alter.name, alter.args["dtype"],
                         using if isinstance(using, exp.Expression) else None)
    return None


def split(sql: str) -> list[str] | None:
    """An ALTER TABLE of several comma-separated actions (the client's text) as one ALTER TABLE
    per action, in order: DuckDB's parser takes one action per statement ("Only one ALTER
    command per statement is supported"), and each then gets what Heron does for it. None for
    any other statement."""
    if "," not in sql or not _ALTER_TABLE.match(sql):
        return None
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except (SqlglotError, TokenError, ValueError):
        return None
    actions = tree.args.get("actions") or [] if isinstance(tree, exp.Alter) else []
    if len(actions) < 2 or (tree.args.get("kind") or "").upper() != "TABLE":
        return None
    pieces = []
    for action in actions:
        one = tree.copy()
        one.set("actions", [action.copy()])
        pieces.append(one.sql(dialect="postgres"))
    return pieces


def run(con: duckdb.DuckDBPyConnection,
        change: AddColumns | AlterType | AddConstraint | DropConstraint | ValidateConstraint,
        stmt: statement.Statement) -> Result:
    """Run `change`, the statement `stmt` (see the module docstring)."""
    table = _Table.find(con, change.schema, change.table)
    if table is None:
        if change.if_exists:
            return _done(f'relation "{change.table}" does not exist, skipping')
        raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{change.table}" does not exist')
    if isinstance(change, AlterType):
        return _alter_type(con, change, table, stmt)
    if isinstance(change, ValidateConstraint):
        if not con.execute(_NAMED_CONSTRAINT, [table.oid, change.name]).fetchall():
            raise SqlError(SqlState.UNDEFINED_OBJECT, f'constraint "{change.name}" of relation '
                           f'"{table.name}" does not exist')
        return _done()
    if isinstance(change, DropConstraint):
        return _drop_constraint(con, change, table)
    if isinstance(change, AddConstraint):
        return _add_constraint(con, change, table)
    added: list[exp.ColumnDef] = []
    notices = []
    for column in change.columns:
        taken = {c.lower() for c in table.columns} | {a.name.lower() for a in added}
        if column.name.lower() in taken:
            name = column.name if column.this.quoted else column.name.lower()  # as PostgreSQL
            message = f'column "{name}" of relation "{table.name}" already exists'
            if not column.args.get("exists"):
                raise SqlError(SqlState.DUPLICATE_COLUMN, message)
            notices.append(message + ", skipping")
            continue
        _check_constant_default(con, column)
        added.append(column)
    if not added:
        return _done(*notices)
    if table.has_rows(con):
        for column in added:
            if _not_null(column) and _default(column) is None:
                raise SqlError(SqlState.NOT_NULL_VIOLATION, f'column "{column.name}" of '
                               f'relation "{table.name}" contains null values')
    checked = [c for c in added
               if any(not pg_semantics.declares_type(check) for check in _checks(c))]
    table.rebuilt(con, _check_name(table.name, checked[0]) if len(checked) == 1 else None,
                  added=constraint_names.column_items([_definition(c) for c in added],
                                                      table.name, foreign_keys.resolver(con)))
    return _done(*notices)


def _add_constraint(con: duckdb.DuckDBPyConnection, change: AddConstraint, table: _Table
                    ) -> Result:
    """ADD CONSTRAINT (see the module docstring): a name the table's constraints have is 42710
    (42P07 for a key's, which PostgreSQL's index takes: a relation's name)."""
    added = constraint_names.Added.read(change.constraint, table.name,
                                        foreign_keys.resolver(con))
    if added.given and con.execute(_NAMED_CONSTRAINT, [table.oid, added.name]).fetchall():
        if added.is_key:
            raise SqlError(SqlState.DUPLICATE_TABLE, f'relation "{added.name}" already exists')
        raise SqlError(SqlState.DUPLICATE_OBJECT, f'constraint "{added.name}" for relation '
                       f'"{table.name}" already exists')
    if added.is_key and len(added.items) == 1:  # a key without a name to keep: DuckDB adds it
        _execute(con, [f"ALTER TABLE {table.qualified()} ADD {added.items[0]}"], table.name)
    else:  # every row checked against it; the name kept too
        table.rebuilt(con, added.name if added.is_check else None, checks=added.items)
    return _done()


def _alter_type(con: duckdb.DuckDBPyConnection, change: AlterType, table: _Table,
                stmt: statement.Statement) -> Result:
    """ALTER COLUMN ... TYPE around the column's CHECKs (see the module docstring)."""
    column = next((c for c in table.columns if c.lower() == change.column.lower()), None)
    if column is None:
        raise SqlError(SqlState.UNDEFINED_COLUMN, f'column "{change.column}" of relation '
                       f'"{table.name}" does not exist')
    defined = pg_semantics.column_definition(exp.ColumnDef(
        this=exp.to_identifier(column, quoted=True), kind=change.type.copy()))
    marks = [f"CHECK ({check.this.sql(dialect='duckdb')})" for check in _checks(defined)]
    reading = [text for text, expression, names in table.checks
               if column.lower() in (n.lower() for n in names)]
    # DuckDB changes no type of a column an index covers: the table's indexes are set aside
    aside = indexes_aside.Aside((table.schema, table.name), retyped=True)
    in_block = functools.partial(_retyped_in_block, con, change, table, column, defined, marks,
                                 reading)
    if not marks and not reading:  # DuckDB changes it in place
        return indexes_aside.run(con, aside, lambda: statement.run(con, stmt), in_block)
    return indexes_aside.run(con, aside, lambda: _retype_around_checks(
        con, change, column, defined, marks, reading), in_block)


def _retyped_in_block(con: duckdb.DuckDBPyConnection, change: AlterType, table: _Table,
                      column: str, defined: exp.ColumnDef, marks: list[str],
                      reading: list[str]) -> Result:
    """ALTER COLUMN ... TYPE inside a transaction block, where DuckDB changes no type of a
    column an index covers (and sees a dropped index gone only once committed), as one
    rebuild: the column defined with the new type (its `marks` replacing the old type's among
    the CHECKs `reading` it), each row's value cast to it (or USING's)."""
    kind = defined.args["kind"].sql(dialect="duckdb")
    old_marks = {text for text, expression, _ in table.checks
                 if text in reading and _declares_type(expression)}
    items = [_retyped(item, defined.args["kind"]) if _column_of(item) == column else item
             for item in _items(_body(table.sql)) if item not in old_marks]
    value = (change.using.sql(dialect="duckdb") if change.using is not None
             else f"CAST({dialect.quoted(column)} AS {kind})")
    table.rebuilt(con, f"{table.name}_{column}_check", items=[*items, *marks],
                  values={column: value})
    return _done()


def _declares_type(expression: str) -> bool:
    """Whether a CHECK's expression (DuckDB's text) keeps its column's declared type (a
    varchar(n)'s or char(n)'s length, a jsonb mark), not a client's test."""
    return any(re.match(mark, expression) for mark in (LENGTH_CHECK, BPCHAR_CHECK, JSONB_CHECK))


def _retyped(item: str, kind: exp.DataType) -> str:
    """A column's definition (DuckDB's text) with the type `kind`."""
    tree = sqlglot.parse_one(f"CREATE TABLE t ({item})", read="duckdb")
    assert isinstance(tree, exp.Create) and isinstance(tree.this, exp.Schema)
    column = tree.this.expressions[0]
    column.set("kind", kind.copy())
    return column.sql(dialect="duckdb")


def _retype_around_checks(con: duckdb.DuckDBPyConnection, change: AlterType, column: str,
                          defined: exp.ColumnDef, marks: list[str], reading: list[str]
                          ) -> Result:
    """The table created again without the CHECKs `reading` the column, its type changed, then
    created again with the new type's `marks` and the client's CHECKs on it (see the module
    docstring); the table as it is now (its indexes set aside)."""
    table = _Table.find(con, change.schema, change.table)
    assert table is not None
    # the client's CHECKs on the column are checked again; the old type's marks go
    kept = [text for text, expression, _ in table.checks
            if text in reading and not _declares_type(expression)]
    using = "" if change.using is None else f" USING {change.using.sql(dialect='duckdb')}"
    with atomic(con):
        if reading:
            _execute(con, table.rebuild(dropped=reading), table.name)
        _execute(con, [f"ALTER TABLE {table.qualified()} ALTER COLUMN {dialect.quoted(column)} "
                       f"TYPE {defined.args['kind'].sql(dialect='duckdb')}{using}"], table.name)
        if kept or marks:
            again = _Table.find(con, change.schema, change.table)
            assert again is not None
            _execute(con, again.rebuild(checks=[*kept, *marks]), table.name,
                     f"{table.name}_{column}_check" if kept else None)
    return _done()


def rebuild(con: duckdb.DuckDBPyConnection, table: existence.Relation, *,
            dropped: Sequence[str] = (), checks: Sequence[str] = ()) -> None:
    """`table` created again without the constraints `dropped` (their texts in its CREATE
    TABLE) and with the constraints `checks`, its rows checked against them (`_Table.rebuild`,
    for `foreign_keys`)."""
    found = _Table.find(con, table.schema, table.name)
    assert found is not None
    found.rebuilt(con, dropped=dropped, checks=checks)


def own_foreign_keys(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's own foreign keys, which a database made by an earlier Heron holds, as Heron's
    (`foreign_keys`): each table with one created again, its keys as marks (named as the
    catalog named them), in one transaction; tables referencing others first (DuckDB drops no
    table other tables' keys reference)."""
    found = con.execute(_NATIVE_KEYS).fetchall()
    if not found:
        return
    keys: dict[existence.Relation, list[tuple[str, str, str | None]]] = {}
    for database, schema, name, oid, text, key_name, mark in found:
        keys.setdefault(existence.Relation(database, schema, name, oid), []).append(
            (text, key_name, mark))
    resolve = foreign_keys.resolver(con)
    with atomic(con):
        for relation in existence.referencing_first(list(keys), existence.references(con)):
            table = _Table.find(con, relation.schema, relation.name)
            assert table is not None
            items = _items(_body(table.sql))
            for text, key_name, mark in keys[relation]:
                items = [item for item in items if item not in (text, mark)]
                create = dialect.parse(f"CREATE TABLE {dialect.quoted(table.schema)}."
                                       f"{dialect.quoted(table.name)} "
                                       f"(CONSTRAINT {dialect.quoted(key_name)} {text})")
                assert isinstance(create, exp.Create) and isinstance(create.this, exp.Schema)
                for referenced in create.find_all(exp.Reference):
                    target = referenced.this.this if isinstance(
                        referenced.this, exp.Schema) else referenced.this
                    target.set("db", exp.to_identifier(table.schema, quoted=True))
                foreign_keys.declare(create, resolve)
                items.append(create.this.expressions[-1].sql(dialect="duckdb"))
            _execute(con, table.rebuild(items=items), table.name)


def drop_columns(con: duckdb.DuckDBPyConnection, name: tuple[str, ...], columns: frozenset[str]
                 ) -> Result | None:
    """ALTER TABLE ... DROP COLUMN of `columns` (lower case) of the table `name` (its parts), as
    a rebuild where DuckDB cannot drop them: a PRIMARY KEY or UNIQUE covers one of them or a
    column after one of them, or, inside a transaction block, an index covers the table (DuckDB
    sees an index `indexes_aside` dropped gone only once committed). The table is made again
    without them, and without the constraints and indexes that read them, as PostgreSQL drops
    those with them. None, nothing done, where DuckDB (with `indexes_aside`) can drop them."""
    table = _Table.find(con, name[-2] if len(name) > 1 else None, name[-1])
    if table is None:
        return None
    dropped = frozenset(c for c in table.columns if c.lower() in columns)
    if not dropped:
        return None
    first = min(i for i, c in enumerate(table.columns) if c in dropped)
    if not con.execute(_KEYS_AFTER, [table.oid, first]).fetchall() and not (
            table.indexes and statement.in_transaction(con)):
        return None
    items = [item for item in _items(_body(table.sql)) if not _reads(item, dropped)]
    table.rebuilt(con, items=items, without=dropped)
    return _done()


def _reads(item: str, columns: frozenset[str]) -> bool:
    """Whether a CREATE TABLE item defines one of `columns` or (a table constraint) names one."""
    if (column := _column_of(item)) is not None:
        return column in columns
    outside = re.sub(r"'(?:[^']|'')*'", "''", item)  # (words in strings are no names)
    own = re.split(r"\bREFERENCES\b", outside, maxsplit=1, flags=re.IGNORECASE)[0]
    named = {identifier(word).lower() for word in re.findall(IDENTIFIER, own)}
    return not named.isdisjoint(c.lower() for c in columns)


def drop_constraint(con: duckdb.DuckDBPyConnection, table: existence.Relation, name: str
                    ) -> None:
    """ALTER TABLE `table` DROP CONSTRAINT `name` (one the catalog shows: it must exist)."""
    found = _Table.find(con, table.schema, table.name)
    assert found is not None
    _drop_constraint(con, DropConstraint(table.schema, table.name, False, name, False), found)


def _drop_constraint(con: duckdb.DuckDBPyConnection, change: DropConstraint, table: _Table
                     ) -> Result:
    """The table created again without the constraint the catalog shows under the name (see
    the module docstring)."""
    found = con.execute(_NAMED_CONSTRAINT, [table.oid, change.name]).fetchall()
    if not found:
        message = f'constraint "{change.name}" of relation "{table.name}" does not exist'
        if change.missing_ok:
            return _done(message + ", skipping")
        raise SqlError(SqlState.UNDEFINED_OBJECT, message)
    kind, text, columns, mark = found[0]
    items = _items(_body(table.sql))
    if mark in items:  # what kept its name
        items.remove(mark)
    if text in items:  # DuckDB prints it after the columns
        items.remove(text)
    else:  # one column's PRIMARY KEY or UNIQUE, printed in the column's definition
        suffix = " PRIMARY KEY" if kind == "PRIMARY KEY" else " UNIQUE"
        at = next((i for i, item in enumerate(items) if _column_of(item) == columns[0]
                   and item.endswith(suffix)), None)
        if at is None:
            raise SqlError(SqlState.INTERNAL_ERROR, f"cannot find {text} in {table.sql!r}")
        items[at] = items[at].removesuffix(suffix)
    if kind == "PRIMARY KEY":  # its columns stay NOT NULL, as in PostgreSQL
        items = [item + " NOT NULL" if _column_of(item) in columns and " NOT NULL" not in item
                 else item for item in items]
    table.rebuilt(con, items=items)
    return _done()


def _items(body: str) -> list[str]:
    """The column and constraint definitions of a parenthesized CREATE TABLE body, split at
    its top-level commas (not those inside parentheses, strings or quoted names)."""
    return split_items(body[1:-1])


def _column_of(item: str) -> str | None:
    """The column a CREATE TABLE item defines (None for a table constraint)."""
    m = re.match(IDENTIFIER, item)
    if m is None or _TABLE_CONSTRAINT.match(item):
        return None
    # (DuckDB prints a name as it was created, quoted where it must be)
    return identifier(m[0]) if m[0].startswith('"') else m[0]


_TABLE_CONSTRAINT = re.compile(r"(?:PRIMARY\s+KEY|UNIQUE|CHECK|FOREIGN\s+KEY)\s*\(|CONSTRAINT\s",
                               re.IGNORECASE)


def _execute(con: duckdb.DuckDBPyConnection, statements: Sequence[str | _Copy], table: str,
             check: str | None = None) -> None:
    """Run a rebuild's statements; `check` names the client's CHECK the copied rows are checked
    against (again), where there is one."""
    for step in statements:
        try:
            if isinstance(step, _Copy):
                step.run(con)
            else:
                con.execute(step)
        except duckdb.Error as exc:
            raise _existing_rows_error(from_duckdb(exc), table, check) from None


@dataclass(frozen=True)
class _Copy:
    """A rebuild's copy of the rows set aside into the table created again."""

    table: tuple[str, str, str]  # the new table's database, schema, name
    aside: str  # the rows set aside (quoted name)
    stored: tuple[str, ...]  # the columns copied
    values: tuple[tuple[str, str], ...] = ()  # a column's value where not its own (SQL)

    def run(self, con: duckdb.DuckDBPyConnection) -> None:
        table = ".".join(dialect.quoted(p) for p in self.table)
        stored = ", ".join(dialect.quoted(c) for c in self.stored)
        computed = dict(self.values)
        read = ", ".join(computed.get(c, dialect.quoted(c)) for c in self.stored)
        con.execute(f"INSERT INTO {table} ({stored}) SELECT {read} FROM {self.aside}")


def _done(*notices: str) -> Result:
    return Result("ALTER TABLE", None, None, notices=notices)


def _constraints(column: exp.ColumnDef) -> list[exp.Expression]:
    return [c.kind for c in column.args.get("constraints") or ()
            if isinstance(c, exp.ColumnConstraint)]


def _rebuilds(column: exp.ColumnDef) -> bool:
    """Whether a column ADD COLUMN adds is added by a rebuild: DuckDB adds none with a CHECK, a
    PRIMARY KEY or a REFERENCES, and keeps no constraint's name (`constraint_names`); and a NOT
    NULL one whose default is computed (`gen_random_uuid()`): where the table has an index,
    `indexes_aside` would make it again in the transaction that filled the column, which DuckDB
    refuses ("outstanding updates"). (A rebuild makes the indexes after copying the rows.)"""
    default = _default(column)
    return any(isinstance(c.kind, exp.CheckColumnConstraint | exp.Reference
                          | exp.PrimaryKeyColumnConstraint) or (
        c.this is not None and isinstance(c.kind, exp.UniqueColumnConstraint))
        for c in column.args.get("constraints") or () if isinstance(c, exp.ColumnConstraint)) or (
        _not_null(column) and default is not None and any(
            not isinstance(f, exp.Cast) for f in default.find_all(exp.Func)))


def _check_name(table: str, column: exp.ColumnDef) -> str:
    """The name of a new column's CHECK: the one given, else PostgreSQL's (and DuckDB's)."""
    named = next((c.this for c in column.args.get("constraints") or ()
                  if isinstance(c, exp.ColumnConstraint) and c.this is not None
                  and isinstance(c.kind, exp.CheckColumnConstraint)), None)
    return dialect.kept_name(named) if named is not None else (
        f"{table}_{column.name}_check")


def _checks(column: exp.ColumnDef) -> list[exp.CheckColumnConstraint]:
    return [c for c in _constraints(column) if isinstance(c, exp.CheckColumnConstraint)]


def _not_null(column: exp.ColumnDef) -> bool:
    return any(isinstance(c, exp.NotNullColumnConstraint) and not c.args.get("allow_null")
               for c in _constraints(column))


def _default(column: exp.ColumnDef) -> exp.Expression | None:
    return next((c.this for c in _constraints(column)
                 if isinstance(c, exp.DefaultColumnConstraint)), None)


def _check_constant_default(con: duckdb.DuckDBPyConnection, column: exp.ColumnDef) -> None:
    """Refuse a constant default longer than a varchar(n) column's length: PostgreSQL casts a
    default that needs no row to the column's type when the column is added, rows or none.
    Only a default of literals, casts and operators is evaluated here (a function's value, such
    as nextval's, is the rows' to take)."""
    limits = [n for check in _checks(column) if (n := pg_semantics.length_limit(check))]
    value = _default(column)
    if not limits or value is None or any(
            isinstance(node, exp.Column | exp.Subquery) or (
                isinstance(node, exp.Func) and not isinstance(node, exp.Cast))
            for node in value.walk()):
        return
    text = exp.cast(exp.Paren(this=value.copy()), "VARCHAR").sql(dialect="duckdb")
    try:
        length = con.execute(f"SELECT length({text})").fetchall()[0][0]
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    if length is not None and length > min(limits):
        raise value_too_long(min(limits))


def _existing_rows_error(error: SqlError, table: str, check: str | None) -> SqlError:
    """An error copying the rows, as PostgreSQL words it for ALTER TABLE: an existing row
    failing the client's CHECK named `check`."""
    if error.sqlstate is not SqlState.CHECK_VIOLATION or check is None:
        return error
    return SqlError(SqlState.CHECK_VIOLATION, f'check constraint "{check}" of relation '
                    f'"{table}" is violated by some row')


@dataclass(frozen=True)
class _Table:
    """A table as DuckDB's catalog describes it, with what a rebuild must restore."""

    oid: int
    database: str
    schema: str
    name: str
    sql: str  # its CREATE TABLE statement (duckdb_tables().sql)
    comment: str | None
    columns: tuple[str, ...]
    stored: tuple[str, ...]  # the columns that are not generated
    column_comments: tuple[tuple[str, str], ...]
    indexes: tuple[tuple[str, str, str | None], ...]  # (name, CREATE INDEX, comment)
    has_foreign_keys: bool  # DuckDB's own (`own_foreign_keys`) reference other tables
    # its CHECKs: (text in its CREATE TABLE, expression, the columns it reads)
    checks: tuple[tuple[str, str, tuple[str, ...]], ...]

    @classmethod
    def find(cls, con: duckdb.DuckDBPyConnection, schema: str | None, name: str
             ) -> _Table | None:
        """The table a (schema-qualified or plain) name names, looked up as statements do
        (`column_origins.Relations`: temporary tables first, then the search path)."""
        key = column_origins.Relations.load(con).key_of(
            None if schema is None else schema.lower(), name.lower())
        if key is None:
            return None
        found = con.execute(_TABLE, [key[0] == "", key[0] or "main", key[1]]).fetchall()
        if not found:
            return None  # a view
        oid, database, schema_name, table_name, sql, comment = found[0]
        columns = con.execute(_COLUMNS, [oid]).fetchall()
        return cls(oid, database, schema_name, table_name, sql, comment,
                   tuple(c for c, _, _ in columns),
                   tuple(c for c, generated, _ in columns if not generated),
                   tuple((c, text) for c, _, text in columns if text is not None),
                   tuple(con.execute(_INDEXES, [oid]).fetchall()),
                   bool(con.execute(_FOREIGN_KEYS, [oid]).fetchall()),
                   tuple((text, expression, tuple(names)) for text, expression, names
                         in con.execute(_CHECKS, [oid]).fetchall()))

    def qualified(self, name: str | None = None) -> str:
        """The table's quoted name, database and schema included (or another's beside it)."""
        return ".".join(dialect.quoted(p) for p in (self.database, self.schema, name or self.name))

    def has_rows(self, con: duckdb.DuckDBPyConnection) -> bool:
        return bool(con.execute(f"SELECT EXISTS (FROM {self.qualified()})").fetchall()[0][0])

    def rebuilt(self, con: duckdb.DuckDBPyConnection, check: str | None = None,
                **change: Any) -> None:
        """Run `rebuild(**change)` in one transaction; `check` as `_execute`'s."""
        with atomic(con):
            _execute(con, self.rebuild(**change), self.name, check)

    def rebuild(self, *, added: Sequence[str] = (), dropped: Sequence[str] = (),
                checks: Sequence[str] = (), items: Sequence[str] | None = None,
                name: str | None = None, without: frozenset[str] = frozenset(),
                values: dict[str, str] | None = None) -> list[str | _Copy]:
        """The statements that give the table the column definitions `added` as its last
        columns, without the CHECKs `dropped` (their texts in its CREATE TABLE), with the CHECKs
        `checks` (its column and constraint definitions `items`, when given, in place of its
        own), without the columns `without` (and the indexes over them), its columns' values
        copied as `values` computes them (by name, where given), under the new `name` if
        given (a table whose indexes were set aside): its indexes
        dropped (DuckDB renames no table with indexes), its rows set aside, the table created
        again from its own CREATE TABLE so changed (a column or a CHECK may follow the table's
        constraints), its rows copied back (new columns take their defaults, every CHECK is
        checked), indexes and comments restored. The rows are set aside by renaming the table,
        unless it has foreign keys: DuckDB renames such a table without telling the tables
        they reference, which then refuse every DELETE and DROP ("main key table of the table
        <its old name>"), so its rows are copied aside and it is dropped instead."""
        assert name is None or not self.indexes
        kept = list(_items(_body(self.sql)) if items is None else items)
        for text in dropped:
            if kept.count(text) != 1:
                raise SqlError(SqlState.INTERNAL_ERROR, f"cannot find {text} in {self.sql!r}")
            kept.remove(text)
        body = ", ".join((*kept, *added, *checks))
        temporary = "TEMPORARY " if self.database == "temp" else ""
        copied = tuple(c for c in self.stored if c not in without)
        stored = ", ".join(dialect.quoted(c) for c in copied)
        lowered = frozenset(c.lower() for c in without)
        indexes = [i for i in self.indexes if not (without and indexes_aside.covers(i[1], lowered))]
        table = self.qualified(name)
        moved = f"__heron_rebuilt_{self.oid}"
        if self.has_foreign_keys or name is not None:
            aside = ".".join(dialect.quoted(p) for p in ("temp", "main", moved))
            set_aside = [f"CREATE TEMPORARY TABLE {aside} AS SELECT {stored} "
                         f"FROM {self.qualified()}", f"DROP TABLE {self.qualified()}"]
        else:
            aside = self.qualified(moved)
            set_aside = [f"ALTER TABLE {self.qualified()} RENAME TO {dialect.quoted(moved)}"]
        comments = [f"COMMENT ON TABLE {table} IS {_literal(self.comment)}"
                    ] if self.comment is not None else []
        comments += [f"COMMENT ON COLUMN {table}.{dialect.quoted(c)} IS {_literal(text)}"
                     for c, text in self.column_comments if c not in without]
        comments += [f"COMMENT ON INDEX {self.qualified(index)} IS {_literal(text)}"
                     for index, _, text in indexes if text is not None]
        return [
            *(f"DROP INDEX {self.qualified(index)}" for index, _, _ in self.indexes),
            *set_aside,
            f"CREATE {temporary}TABLE {table} ({body})",
            _Copy((self.database, self.schema, name or self.name), aside, copied,
                  tuple((values or {}).items())),
            f"DROP TABLE {aside}",
            *(sql for _, sql, _ in indexes),
            *comments,
        ]


def _body(create: str) -> str:
    """The parenthesized column and constraint list of DuckDB's CREATE TABLE text (it follows
    the table's name, the first parenthesis outside a quoted identifier)."""
    quoted = False
    for i, char in enumerate(create):
        if char == '"':
            quoted = not quoted
        elif char == "(" and not quoted:
            return create[i:].rstrip().rstrip(";").rstrip()
    raise SqlError(SqlState.INTERNAL_ERROR, f"cannot read the table definition {create!r}")


def _definition(column: exp.ColumnDef) -> exp.ColumnDef:
    """A new column's definition for CREATE TABLE (without ADD COLUMN's IF NOT EXISTS)."""
    defined = column.copy()
    defined.set("exists", False)
    return defined


def _literal(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="duckdb")


_TABLE = """SELECT table_oid, database_name, schema_name, table_name, sql, comment
            FROM duckdb_tables()
            WHERE database_name = CASE WHEN ? THEN 'temp' ELSE current_database() END
              AND lower(schema_name) = ? AND lower(table_name) = ?"""
_COLUMNS = """SELECT column_name, is_generated, comment FROM duckdb_columns()
              WHERE table_oid = ? ORDER BY column_index"""
_INDEXES = """SELECT index_name, sql, comment FROM duckdb_indexes()
              WHERE table_oid = ? AND sql IS NOT NULL"""
_NAMED_CONSTRAINT = f"""SELECT constraint_type, constraint_text, constraint_column_names,
                              {constraint_names.key_mark_text('c')}
                       FROM {foreign_keys.CONSTRAINTS} c
                       WHERE table_oid = ? AND {shown_constraint('c')}
                         AND {constraint_name('c')} = ?"""
# DuckDB's own foreign keys (`own_foreign_keys`): each with its table, text, name and name's mark.
_NATIVE_KEYS = f"""SELECT database_name, schema_name, table_name, table_oid, constraint_text,
                         {constraint_name('c')}, {constraint_names.key_mark_text('c')}
                  FROM {foreign_keys.CONSTRAINTS} c
                  WHERE constraint_type = 'FOREIGN KEY' AND key_name IS NULL
                    AND database_name = current_database()"""
# A PRIMARY KEY or UNIQUE over the column at an index or one after it (DuckDB drops no column
# so).
_KEYS_AFTER = """SELECT 1 FROM duckdb_constraints() WHERE table_oid = ?
                 AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
                 AND list_max(constraint_column_indexes) >= ?"""
_CHECKS = """SELECT constraint_text, expression, constraint_column_names FROM duckdb_constraints()
             WHERE table_oid = ? AND constraint_type = 'CHECK'"""
# DuckDB names a foreign key's referenced table without its schema: any table of that name.
_FOREIGN_KEYS = """SELECT 1 FROM duckdb_constraints()
                   WHERE table_oid = ? AND constraint_type = 'FOREIGN KEY'"""


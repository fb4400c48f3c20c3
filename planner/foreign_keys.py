"""Foreign keys as PostgreSQL keeps them: checked when the statement ends, with their actions.

DuckDB's own foreign keys differ from PostgreSQL's where applications notice: they refuse an
UPDATE of any indexed column of a referenced row (a user's unique e-mail, while orders reference
the user: DuckDB rewrites the row), the delete of a parent row in the transaction that deleted
its children (a cascade, as Django and every ORM run it), and every ALTER TABLE of a referenced
table; and they know no ON DELETE / ON UPDATE action (CASCADE, SET NULL, SET DEFAULT), which
schemas made by Prisma, Rails or SQLAlchemy declare. So Heron keeps a table's foreign keys
itself, in a mark in the table (as `constraint_names` keeps a name): a CHECK that is always
true, CHECK ((c1 IS NULL) OR ... OR (NOT ('heron:r:<definition>' IS NULL))), over the key's
columns in order (DuckDB renames them in it, and drops it with them), the definition JSON: the
key's name, the referenced table (its schema where it is not the referencing table's), its
columns, the ON DELETE and ON UPDATE actions as pg_constraint's letters (a: NO ACTION,
r: RESTRICT, c: CASCADE, n: SET NULL, d: SET DEFAULT), and DEFERRABLE and INITIALLY DEFERRED
where declared (`pg_ddl` keeps those of a foreign key). DuckDB knows no key; Heron checks.

Contract:
- `declare(tree, resolve)`: in the CREATE TABLE `tree` (a sqlglot tree; also the one ALTER TABLE
  ADD builds, `constraint_names`), each FOREIGN KEY and REFERENCES replaced by its mark; the
  nodes it changed. `resolve(schema, name)` gives a referenced table's schema and primary key
  (None where it is unknown; `resolver(con)` finds it as a statement would): a key naming no
  columns references the primary key.
- `read(con)`: the keys of the session's database and temporary tables, as `Key`s.
- `Write`, `written(sql)`: what an INSERT, UPDATE, DELETE or MERGE (DuckDB's text) writes (one
  whose target cannot be read: `ANY` table).
- `Altered`, `altered(sql)`: what a CREATE TABLE or ALTER TABLE does that keys care about: keys
  it may declare, a table or columns it renames, columns it drops. `refuse_drop(keys, change)`
  is PostgreSQL's 2BP01 for a dropped column other tables' keys reference (without CASCADE;
  with it, `dependents` are the keys to drop first); `followed(keys, change)`: the keys
  referencing a renamed table or column, with their marks' new texts.
- `enforce(con, keys, write, deferred, changed)`, run after the statement and in its transaction:
  the written table's own keys are checked against the tables they reference (23503, worded as
  PostgreSQL words it: `insert or update on table ... violates foreign key constraint ...`); for the
  keys referencing it, rows it deleted or whose key it changed leave referencing rows behind, on
  which the key's action runs: NO ACTION and RESTRICT refuse them (23503, `update or delete on table
  ... violates ...`), CASCADE deletes them (ON DELETE), SET NULL and SET DEFAULT set their key (its
  columns' defaults must then be referenced rows, else the same 23503), ON UPDATE CASCADE gives them
  the new key (from `changed`: `changed_keys(con, keys, write, params)`, run before the UPDATE,
  keeps each changed row's key, old and new, in a temporary table), each such change acted on in
  turn (a cascade down a hierarchy of one table included; a MERGE or a cascade's own change of a key
  ON UPDATE CASCADE references is 0A000). In a transaction block, `deferred` (its `Deferred`) takes
  the checks of the keys it defers (NO ACTION's; RESTRICT and the actions never wait).
- `Deferred`: a transaction block's deferred keys: DEFERRABLE ones, INITIALLY DEFERRED ones
  until SET CONSTRAINTS says otherwise (`set`); `check` runs the checks left (at COMMIT, and for
  the keys SET CONSTRAINTS makes IMMEDIATE).
- `validate(con, keys)`: keys just declared (CREATE TABLE, ALTER TABLE): the referenced table
  exists (42P01), its columns exist (42703) and are as many (42830) and are its primary key or
  a UNIQUE's columns (42830), and the rows already there satisfy the key (23503).
- `CONSTRAINTS`: SQL, duckdb_constraints() with each mark as the FOREIGN KEY row it stands for
  (its constraint_type, referenced_table and referenced_column_names), and the columns
  `referenced_schema`, `key_name` (a mark's; NULL otherwise), `on_delete` and `on_update`
  (NULL but for foreign keys), `deferrable` and `deferred`: what the catalog, DROP and TRUNCATE
  read.

Differences from PostgreSQL: MATCH FULL is read as MATCH SIMPLE; only a PRIMARY KEY or UNIQUE
constraint (not a unique index) can be referenced; a check after an UPDATE or a DELETE reads
the whole referencing table, and one after an INSERT its transaction's own rows with the whole
referenced table (PostgreSQL probes an index per row); SET CONSTRAINTS' modes are forgotten
when ROLLBACK TO replays the block (`server.transaction`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import dialect
from heron.planner.errors import SqlError, SqlState

PREFIX = "heron:r:"
# Over duckdb_constraints().expression, as DuckDB prints a mark: its definition (quotes doubled).
MARK = r"^\(.* OR \(NOT \('heron:r:((?:[^']|'')*)' IS NULL\)\)\)$"
# The first row id DuckDB gives the rows a transaction inserts (its storage's own, until it
# commits): a plain INSERT's rows are checked alone.
MAX_ROW_ID = 36028797018960000
_ACTIONS = {"NO ACTION": "a", "RESTRICT": "r", "CASCADE": "c", "SET NULL": "n",
            "SET DEFAULT": "d"}
ACTION_NAMES = {letter: name for name, letter in _ACTIONS.items()}


@dataclass(frozen=True)
class Key:
    """One foreign key: `table`'s `columns` reference `referenced`'s `referenced_columns`."""

    name: str
    database: str
    schema: str
    table: str
    columns: tuple[str, ...]
    referenced_schema: str
    referenced: str
    referenced_columns: tuple[str, ...]
    on_delete: str = "a"
    on_update: str = "a"
    text: str = ""  # its mark's constraint_text in its table's CREATE TABLE
    deferrable: bool = False
    deferred: bool = False  # INITIALLY DEFERRED

    def of(self, write: Write) -> bool:
        """Whether the key is the written table's own."""
        return self.on(write.schema, write.table)

    def references(self, write: Write) -> bool:
        return self.refers_to(write.schema, write.table)

    def on(self, schema: str | None, table: str) -> bool:
        """Whether the key is the table's own (`schema` None: a name the search path finds;
        `ANY`: any table)."""
        return _same(schema, table, self.schema, self.table)

    def refers_to(self, schema: str | None, table: str) -> bool:
        return _same(schema, table, self.referenced_schema, self.referenced)

    def definition(self) -> dict[str, object]:
        """What its mark keeps (see the module docstring; `_mark` writes it so too)."""
        found: dict[str, object] = {
            "name": self.name, "table": self.referenced, "columns": list(self.referenced_columns),
            "on_delete": self.on_delete, "on_update": self.on_update}
        if self.referenced_schema.lower() != self.schema.lower():
            found["schema"] = self.referenced_schema
        if self.deferrable:
            found["deferrable"] = True
        if self.deferred:
            found["deferred"] = True
        return found

    def checked(self, write: Write) -> bool:
        """Whether `write` may leave the key unsatisfied: it adds rows to the key's table or
        changes their key, or removes referenced rows or changes their referenced key."""
        return (write.adds and self.of(write) and write.changes(self.columns)) or (
            write.removes and self.references(write) and write.changes(self.referenced_columns))

    @property
    def quoted(self) -> str:
        return _qualified(self.database, self.schema, self.table)

    @property
    def referenced_quoted(self) -> str:
        return _qualified(self.database, self.referenced_schema, self.referenced)

    def orphans(self) -> str:
        """SQL: the rows of the table (`heron_c`) whose key no referenced row has."""
        present = " AND ".join(f"heron_c.{dialect.quoted(c)} IS NOT NULL" for c in self.columns)
        matched = " AND ".join(
            f"heron_p.{dialect.quoted(p)} = heron_c.{dialect.quoted(c)}"
            for c, p in zip(self.columns, self.referenced_columns, strict=True))
        return (f"{present} AND NOT EXISTS (SELECT 1 FROM {self.referenced_quoted} heron_p "
                f"WHERE {matched})")


ANY = "*"  # the table of a statement whose target Heron cannot read: any (`written`)


@dataclass(frozen=True)
class Write:
    """What a statement writes: its table (`schema` None: found by the search path)."""

    schema: str | None
    table: str
    adds: bool  # rows inserted or changed: the table's own keys are checked
    removes: bool  # rows deleted or changed: the keys referencing the table act
    deletes: bool = False  # removed by DELETE (ON DELETE acts), else changed (ON UPDATE)
    columns: frozenset[str] | None = None  # the columns changed (lower case; None: any)
    sql: str = ""  # an UPDATE's text (`changed_keys` reads it)

    def changes(self, columns: Sequence[str]) -> bool:
        return self.columns is None or any(c.lower() in self.columns for c in columns)


# -- declaring ----------------------------------------------------------------------------------

Resolve = Callable[[str | None, str], tuple[str | None, tuple[str, ...]] | None]


def declare(tree: exp.Expression, resolve: Resolve) -> list[exp.Expression]:
    """CREATE TABLE `tree`'s foreign keys as marks (see the module docstring)."""
    schema = tree.this if isinstance(tree, exp.Create) else None
    if not isinstance(schema, exp.Schema) or (tree.args.get("kind") or "").upper() != "TABLE":
        return []
    table = schema.this if isinstance(schema.this, exp.Table) else exp.to_table("t")
    changed: list[exp.Expression] = []
    marks: list[exp.Expression] = []
    for item in list(schema.expressions):
        if isinstance(item, exp.ColumnDef):
            for constraint in list(item.args.get("constraints") or ()):
                if isinstance(constraint, exp.ColumnConstraint) and isinstance(
                        constraint.kind, exp.Reference):
                    marks.append(_mark(table, tree, constraint.this, [item.name],
                                       constraint.kind, resolve))
                    changed.append(constraint)
                    constraint.pop()
        elif isinstance(item, exp.ForeignKey) or (
                isinstance(item, exp.Constraint) and len(item.expressions) == 1
                and isinstance(item.expressions[0], exp.ForeignKey)):
            key = item if isinstance(item, exp.ForeignKey) else item.expressions[0]
            named = item.this if isinstance(item, exp.Constraint) else None
            marks.append(_mark(table, tree, named, [c.name for c in key.expressions],
                               key.args["reference"], resolve))
            changed.append(item)
            item.pop()
    for mark in marks:
        schema.append("expressions", exp.CheckColumnConstraint(this=mark))
    return changed


def _mark(table: exp.Table, create: exp.Expression, named: exp.Expression | None,
          columns: list[str], reference: exp.Reference, resolve: Resolve) -> exp.Expression:
    target = reference.this
    referenced = target.this if isinstance(target, exp.Schema) else target
    assert isinstance(referenced, exp.Table)
    referenced_columns = [c.name for c in target.expressions] if isinstance(
        target, exp.Schema) else []
    own = referenced.name.lower() == table.name.lower() and (
        not referenced.db or referenced.db.lower() == (table.db or referenced.db).lower())
    found = None if own else resolve(referenced.db or None, referenced.name)
    if not referenced_columns:
        referenced_columns = list(_own_primary_key(create) if own else (found or ("", ()))[1])
    definition = {
        "name": dialect.kept_name(named) if named is not None
        else f"{table.name}_{'_'.join(columns)}_fkey",
        "table": referenced.name,
        "columns": referenced_columns,
        "on_delete": "a", "on_update": "a"}
    schema = referenced.db or (found[0] if found is not None else None)
    if schema and schema.lower() != (table.db or "").lower():
        definition["schema"] = schema
    for option in reference.args.get("options") or ():
        text = " ".join(str(option).upper().split())
        if text in ("DEFERRABLE", "INITIALLY DEFERRED"):  # (only true ones are kept)
            definition["deferrable" if text == "DEFERRABLE" else "deferred"] = True
        for event in ("DELETE", "UPDATE"):
            if text.startswith(f"ON {event} "):
                action = text.removeprefix(f"ON {event} ")
                if action not in _ACTIONS:
                    raise SqlError(SqlState.SYNTAX_ERROR, f"syntax error at or near \"{action}\"")
                definition[f"on_{event.lower()}"] = _ACTIONS[action]
    return _marked(columns, definition)


def _marked(columns: Sequence[str], definition: dict[str, object]) -> exp.Expression:
    """The mark (a CHECK's expression) of a key over `columns` with `definition`."""
    text = PREFIX + json.dumps(definition, separators=(",", ":"))
    return exp.or_(
        *(exp.Is(this=exp.column(c, quoted=True), expression=exp.Null()) for c in columns),
        exp.Not(this=exp.Is(this=exp.Literal.string(text), expression=exp.Null())))


def _own_primary_key(create: exp.Expression) -> tuple[str, ...]:
    """The PRIMARY KEY columns CREATE TABLE `create` declares (a key referencing its table)."""
    for item in create.this.expressions:
        if isinstance(item, exp.ColumnDef) and any(
                isinstance(c.kind, exp.PrimaryKeyColumnConstraint)
                for c in item.args.get("constraints") or ()):
            return (item.name,)
        key = item.expressions[0] if isinstance(item, exp.Constraint) and item.expressions else item
        if isinstance(key, exp.PrimaryKey):
            return tuple(c.name for c in key.expressions)
    return ()


# -- reading ------------------------------------------------------------------------------------

def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_DEFINITION = (f"CASE WHEN constraint_type = 'CHECK' AND regexp_matches(expression, "
               f"{_sql_literal(MARK)}) THEN json(replace(regexp_extract(expression, "
               f"{_sql_literal(MARK)}, 1), '''''', '''')) END")
CONSTRAINTS = f"""(
    SELECT * REPLACE (
             CASE WHEN heron_d IS NULL THEN constraint_type ELSE 'FOREIGN KEY' END
               AS constraint_type,
             CASE WHEN heron_d IS NULL THEN referenced_table ELSE heron_d->>'table' END
               AS referenced_table,
             CASE WHEN heron_d IS NULL THEN referenced_column_names
                  ELSE CAST(heron_d->'columns' AS VARCHAR[]) END AS referenced_column_names),
           coalesce(heron_d->>'schema', schema_name) AS referenced_schema,
           heron_d->>'name' AS key_name,
           CASE WHEN heron_d IS NOT NULL THEN heron_d->>'on_delete'
                WHEN constraint_type = 'FOREIGN KEY' THEN 'a' END AS on_delete,
           CASE WHEN heron_d IS NOT NULL THEN heron_d->>'on_update'
                WHEN constraint_type = 'FOREIGN KEY' THEN 'a' END AS on_update,
           coalesce(CAST(heron_d->>'deferrable' AS BOOLEAN), false) AS deferrable,
           coalesce(CAST(heron_d->>'deferrable' AS BOOLEAN)
                    AND CAST(heron_d->>'deferred' AS BOOLEAN), false) AS deferred
    FROM (SELECT *, {_DEFINITION} AS heron_d FROM duckdb_constraints()))"""

_KEYS = f"""SELECT key_name, database_name, schema_name, table_name, constraint_column_names,
                   referenced_schema, referenced_table, referenced_column_names, on_delete,
                   on_update, constraint_text, c.deferrable, c.deferred
            FROM {CONSTRAINTS} c
            WHERE key_name IS NOT NULL AND database_name IN (current_database(), 'temp')"""


def read(con: duckdb.DuckDBPyConnection) -> tuple[Key, ...]:
    """The keys of the session's database and temporary tables."""
    return tuple(Key(name, database, schema, table, tuple(columns), referenced_schema,
                     referenced, tuple(referenced_columns), *rest)
                 for name, database, schema, table, columns, referenced_schema, referenced,
                 referenced_columns, *rest in con.execute(_KEYS).fetchall())


def written(sql: str) -> Write | None:
    """What the INSERT, UPDATE, DELETE or MERGE `sql` (DuckDB's text) writes; None for another
    statement. One whose target cannot be read may write any table (`ANY`)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        deletes = re.match(r"\s*(?:WITH\b.*\)\s*)?DELETE\b", sql, re.IGNORECASE | re.DOTALL)
        return Write(None, ANY, adds=True, removes=True, deletes=deletes is not None)
    target = tree.this
    target = target.this if isinstance(target, exp.Schema) else target
    if not isinstance(target, exp.Table):
        return None
    schema, name = target.db or None, target.name
    if isinstance(tree, exp.Insert):
        conflict = tree.args.get("conflict")
        updates = conflict is not None and conflict.args.get("expressions")
        return Write(schema, name, adds=True, removes=bool(updates),
                     columns=_set_columns(updates) if updates else None)
    if isinstance(tree, exp.Update):
        return Write(schema, name, adds=True, removes=True,
                     columns=_set_columns(tree.expressions), sql=sql)
    if isinstance(tree, exp.Delete):
        return Write(schema, name, adds=False, removes=True, deletes=True)
    if isinstance(tree, exp.Merge):
        return Write(schema, name, adds=True, removes=True,
                     deletes="DELETE" in sql.upper() and "UPDATE" not in sql.upper())
    return None


def _set_columns(assignments: Sequence[exp.Expression]) -> frozenset[str] | None:
    columns = set()
    for assignment in assignments:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            return None
        columns.add(assignment.this.name.lower())
    return frozenset(columns)


def _same(schema: str | None, table: str, key_schema: str, key_table: str) -> bool:
    if table == ANY:
        return True
    return table.lower() == key_table.lower() and (
        schema is None or schema.lower() == key_schema.lower())


def _qualified(database: str, schema: str, table: str) -> str:
    return ".".join(dialect.quoted(part) for part in (database, schema, table))


# -- what DDL does to keys -----------------------------------------------------------------------

@dataclass(frozen=True)
class Altered:
    """What a CREATE TABLE or ALTER TABLE does that keys care about."""

    schema: str | None
    table: str
    declares: bool  # it may declare keys: the table's are validated after it
    renamed_to: str | None = None
    columns: tuple[tuple[str, str], ...] = ()  # columns renamed: (old, new)
    dropped: tuple[str, ...] = ()  # columns dropped
    cascade: bool = False  # DROP COLUMN ... CASCADE


def altered(sql: str) -> Altered | None:
    """What the CREATE TABLE or ALTER TABLE `sql` (DuckDB's text) does to keys; None for
    another statement, or one that does nothing to them."""
    head = sql.lstrip()[:6].upper()
    if head not in ("CREATE", "ALTER ") or (head == "CREATE" and PREFIX not in sql):
        return None
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, ValueError):
        return None
    if isinstance(tree, exp.Create) and isinstance(tree.this, exp.Schema) and isinstance(
            tree.this.this, exp.Table):
        return Altered(tree.this.this.db or None, tree.this.this.name, declares=True)
    if not isinstance(tree, exp.Alter) or not isinstance(tree.this, exp.Table):
        return None
    renamed_to, columns, dropped, cascade = None, [], [], False
    for action in tree.args.get("actions") or ():
        if isinstance(action, exp.AlterRename) and isinstance(action.this, exp.Table):
            renamed_to = action.this.name
        elif isinstance(action, exp.RenameColumn):
            columns.append((action.this.name, action.args["to"].name))
        elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
            dropped += [c.name for c in action.args.get("tables") or [action.this] if c]
            cascade |= bool(action.args.get("cascade"))
    declares = "REFERENCES" in sql.upper()
    if not (declares or renamed_to or columns or dropped):
        return None
    return Altered(tree.this.db or None, tree.this.name, declares, renamed_to, tuple(columns),
                   tuple(dropped), cascade)


def dependents(keys: Sequence[Key], change: Altered) -> list[Key]:
    """The keys of other tables referencing the columns `change` drops."""
    return [key for key in keys if key.refers_to(change.schema, change.table)
            and not key.on(change.schema, change.table) and any(
                c.lower() == d.lower() for c in key.referenced_columns for d in change.dropped)]


def refuse_drop(keys: Sequence[Key], change: Altered) -> None:
    """PostgreSQL's 2BP01 where `change` drops columns other tables' keys reference."""
    found = dependents(keys, change)
    if found and not change.cascade:
        column = next(d for d in change.dropped if d.lower() in (
            c.lower() for c in found[0].referenced_columns))
        raise SqlError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                       f"cannot drop column {column} of table {change.table} because other "
                       "objects depend on it",
                       detail="\n".join(f"constraint {k.name} on table {k.table} depends on "
                                        f"column {column} of table {change.table}"
                                        for k in found),
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")


def followed(keys: Sequence[Key], change: Altered) -> list[tuple[Key, str]]:
    """The keys referencing a table `change` renames, or renames columns of, each with its
    mark's new text (the referenced table's and columns' new names)."""
    renamed = {old.lower(): new for old, new in change.columns}
    found = []
    for key in keys:
        if not key.refers_to(change.schema, change.table):
            continue
        columns = [renamed.get(c.lower(), c) for c in key.referenced_columns]
        table = change.renamed_to or key.referenced
        if table == key.referenced and tuple(columns) == key.referenced_columns:
            continue
        definition = dataclasses.replace(key, referenced=table,
                                         referenced_columns=tuple(columns)).definition()
        found.append((key, exp.CheckColumnConstraint(this=_marked(key.columns, definition)
                                                     ).sql(dialect="duckdb")))
    return found


def resolver(con: duckdb.DuckDBPyConnection) -> Resolve:
    """A referenced table found as a statement on `con` finds it: its schema and primary key."""
    def resolve(schema: str | None, name: str) -> tuple[str | None, tuple[str, ...]] | None:
        from heron.planner import existence  # (which reads this module's CONSTRAINTS)
        try:
            found = existence.find_relation(con, (schema, name) if schema else (name,),
                                            views=False)
        except SqlError:
            return None
        key = con.execute("SELECT constraint_column_names FROM duckdb_constraints() "
                          "WHERE table_oid = ? AND constraint_type = 'PRIMARY KEY'",
                          [found.oid]).fetchall()
        return (None if found.database == "temp" else found.schema,
                tuple(key[0][0]) if key else ())
    return resolve


def changed_keys(con: duckdb.DuckDBPyConnection, keys: Sequence[Key], write: Write,
                 params: Sequence[object]) -> dict[Key, str]:
    """Before the UPDATE `write` (run with `params`): for each key ON UPDATE CASCADE whose
    referenced columns it sets, a temporary table of each changed row's referenced key, old and
    new (`heron_o<i>`, `heron_n<i>`: the SET expressions evaluated on the rows as they are, as
    the UPDATE will), by the key."""
    cascading = [key for key in keys if key.on_update == "c" and key.references(write)
                 and write.changes(key.referenced_columns)]
    if not cascading or not write.sql:
        return {}
    tree = sqlglot.parse_one(write.sql, read="duckdb")
    assert isinstance(tree, exp.Update) and isinstance(tree.this, exp.Table)
    row = tree.this.alias_or_name
    sets = {assignment.this.name.lower(): assignment.expression
            for assignment in tree.expressions}
    tables = {}
    for number, key in enumerate(cascading):
        old = [f"{dialect.quoted(row)}.{dialect.quoted(c)}" for c in key.referenced_columns]
        new = [sets[c.lower()].sql(dialect="duckdb") if c.lower() in sets else value
               for c, value in zip(key.referenced_columns, old, strict=True)]
        values = [*(f"{value} AS heron_o{i}" for i, value in enumerate(old)),
                  *(f"{value} AS heron_n{i}" for i, value in enumerate(new))]
        joined = tree.args.get("from_")
        where = tree.args.get("where")
        table = ".".join(dialect.quoted(p) for p in ("temp", "main", f"__heron_changed_{number}"))
        con.execute(f"CREATE OR REPLACE TEMPORARY TABLE {table} AS SELECT {', '.join(values)} "
                    f"FROM {tree.this.sql(dialect='duckdb')}"
                    f"{', ' + joined.this.sql(dialect='duckdb') if joined is not None else ''}"
                    f"{' ' + where.sql(dialect='duckdb') if where is not None else ''}",
                    list(params) or None)
        tables[key] = table
    return tables


# -- enforcing ----------------------------------------------------------------------------------

def enforce(con: duckdb.DuckDBPyConnection, keys: Sequence[Key], write: Write,
            deferred: Deferred | None = None, changed: dict[Key, str] | None = None) -> None:
    """Check and act on `keys` after `write` (see the module docstring); the checks of the keys
    `deferred` (a transaction block's) defers are left to it; `changed`: `changed_keys`' tables
    (ON UPDATE CASCADE), dropped once used."""
    pending = [write]
    while pending:
        done = pending.pop()
        for key in keys:
            if done.adds and key.of(done) and done.changes(key.columns):
                if deferred is not None and deferred.defers(key):
                    deferred.left.add((key, "present"))
                else:  # a plain INSERT's rows are the transaction's own: DuckDB numbers those
                    # from its MAX_ROW_ID (tests/planner/test_foreign_keys.py checks it does)
                    _check_present(con, key, fresh=not done.removes)
            if done.removes and key.references(done) and done.changes(key.referenced_columns):
                pending += _act(con, key, done.deletes, deferred, (changed or {}).get(key)
                                if done is write else None)
    for table in (changed or {}).values():
        con.execute(f"DROP TABLE IF EXISTS {table}")


class Deferred:
    """A transaction block's deferred keys: which SET CONSTRAINTS defers (DEFERRABLE ones only,
    INITIALLY DEFERRED ones until it says otherwise), and the checks left for its end."""

    def __init__(self) -> None:
        self.every: bool | None = None  # SET CONSTRAINTS ALL's mode, once set
        self.named: dict[str, bool] = {}  # a named key's mode (lower-case name), once set
        self.left: set[tuple[Key, str]] = set()  # (key, "present" | "referenced")

    def defers(self, key: Key) -> bool:
        if not key.deferrable:
            return False
        mode = self.named.get(key.name.lower(), self.every)
        return key.deferred if mode is None else mode

    def set(self, names: Sequence[str] | None, deferred: bool) -> None:
        """SET CONSTRAINTS: the keys `names` (all, when None) DEFERRED or IMMEDIATE."""
        if names is None:
            self.every, self.named = deferred, {}
        else:
            self.named.update({name.lower(): deferred for name in names})

    def check(self, con: duckdb.DuckDBPyConnection, keys: Sequence[Key] | None = None) -> None:
        """Run the checks left (of `keys` only, where given; they are no longer left)."""
        for key, side in sorted(self.left, key=lambda item: (item[0].name, item[1])):
            if keys is not None and key not in keys:
                continue
            self.left.discard((key, side))
            if side == "present":
                _check_present(con, key)
            elif (left := _orphan(con, key)) is not None:
                raise _still_referenced(key, left)


def validate(con: duckdb.DuckDBPyConnection, keys: Sequence[Key]) -> None:
    """Check keys just declared (see the module docstring)."""
    for key in keys:
        found = con.execute(
            "SELECT table_oid FROM duckdb_tables() WHERE database_name = ? "
            "AND lower(schema_name) = lower(?) AND lower(table_name) = lower(?)",
            [key.database, key.referenced_schema, key.referenced]).fetchall()
        if not found:
            raise SqlError(SqlState.UNDEFINED_TABLE, f'relation "{key.referenced}" does not exist')
        names = [name for (name,) in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_oid = ?", [found[0][0]]
        ).fetchall()]
        for column in key.referenced_columns:
            if column.lower() not in (n.lower() for n in names):
                raise SqlError(SqlState.UNDEFINED_COLUMN, f'column "{column}" referenced in '
                                                          "foreign key constraint does not exist")
        if not key.referenced_columns:
            raise SqlError(SqlState.INVALID_FOREIGN_KEY,
                           f'there is no primary key for referenced table "{key.referenced}"')
        if len(key.referenced_columns) != len(key.columns):
            raise SqlError(SqlState.INVALID_FOREIGN_KEY, "number of referencing and referenced "
                                                         "columns for foreign key disagree")
        unique = con.execute(
            "SELECT 1 FROM duckdb_constraints() WHERE table_oid = ? "
            "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') "
            "AND list_sort(list_transform(constraint_column_names, lambda x: lower(x))) "
            "= list_sort(?::VARCHAR[])",
            [found[0][0], [c.lower() for c in key.referenced_columns]]).fetchall()
        if not unique:
            raise SqlError(SqlState.INVALID_FOREIGN_KEY, "there is no unique constraint matching "
                                                         f'given keys for referenced table '
                                                         f'"{key.referenced}"')
        _check_present(con, key)


def _check_present(con: duckdb.DuckDBPyConnection, key: Key, *, fresh: bool = False) -> None:
    """23503 where a row of `key`'s table (with `fresh`, one its transaction inserted) has a
    key no referenced row has."""
    if fresh and _one_fresh_key_present(con, key):
        return
    missing = _orphan(con, key, fresh=fresh)
    if missing is not None:
        raise SqlError(SqlState.FOREIGN_KEY_VIOLATION,
                       f'insert or update on table "{key.table}" violates foreign key '
                       f'constraint "{key.name}"',
                       detail=f"Key ({', '.join(key.columns)})=({missing}) is not present in "
                              f'table "{key.referenced}".')


def _act(con: duckdb.DuckDBPyConnection, key: Key, deletes: bool, deferred: Deferred | None,
         changed: str | None = None) -> list[Write]:
    """The action of `key` on the rows its referenced table's change left without a referenced
    row; what it wrote, to act on in turn. NO ACTION's check is left to `deferred` where it
    defers the key; ON UPDATE CASCADE reads the keys' changes from the table `changed`."""
    action = key.on_delete if deletes else key.on_update
    if action == "c" and not deletes and changed is not None:
        assignments = ", ".join(f"{dialect.quoted(c)} = heron_m.heron_n{i}"
                                for i, c in enumerate(key.columns))
        matched = " AND ".join(f"heron_c.{dialect.quoted(c)} = heron_m.heron_o{i}"
                               for i, c in enumerate(key.columns))
        (count,), = con.execute(f"UPDATE {key.quoted} AS heron_c SET {assignments} "
                                f"FROM {changed} heron_m WHERE {matched}").fetchall()
        return [Write(key.schema, key.table, adds=False, removes=True,
                      columns=frozenset(c.lower() for c in key.columns))] if count else []
    if action == "a" and deferred is not None and deferred.defers(key):
        deferred.left.add((key, "referenced"))
        return []
    if action in ("a", "r") or (action == "c" and not deletes):
        left = _orphan(con, key)
        if left is None:
            return []
        if action == "c":
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f'ON UPDATE CASCADE of foreign key constraint "{key.name}" on table '
                           f'"{key.table}" is not supported when a referenced key changes',
                           detail=f"Key ({', '.join(key.referenced_columns)})=({left}) is "
                                  f'still referenced from table "{key.table}".',
                           hint="Update the referencing rows first, in the same transaction.")
        raise _still_referenced(key, left)
    where = key.orphans()
    if action == "c":
        (count,), = con.execute(f"DELETE FROM {key.quoted} AS heron_c WHERE {where}").fetchall()
        return [Write(key.schema, key.table, adds=False, removes=True, deletes=True)] if (
            count) else []
    value = "NULL" if action == "n" else "DEFAULT"
    assignments = ", ".join(f"{dialect.quoted(c)} = {value}" for c in key.columns)
    (count,), = con.execute(f"UPDATE {key.quoted} AS heron_c SET {assignments} WHERE {where}"
                            ).fetchall()
    if action == "d" and (left := _orphan(con, key)) is not None:  # a default gone too
        raise _still_referenced(key, left)
    return [Write(key.schema, key.table, adds=False, removes=True,
                  columns=frozenset(c.lower() for c in key.columns))] if count else []


def _still_referenced(key: Key, values: str) -> SqlError:
    return SqlError(SqlState.FOREIGN_KEY_VIOLATION,
                    f'update or delete on table "{key.referenced}" violates foreign key '
                    f'constraint "{key.name}" on table "{key.table}"',
                    detail=f"Key ({', '.join(key.referenced_columns)})=({values}) is still "
                           f'referenced from table "{key.table}".')


def _one_fresh_key_present(con: duckdb.DuckDBPyConnection, key: Key) -> bool:
    """Whether the rows of `key`'s table its transaction inserted hold at most one key, which a
    referenced row has: looked up by the referenced table's index (a row an ORM inserts; the
    anti-join of `_orphan` builds the whole referenced table's hash, ~1.5 ms at 10,000 rows)."""
    columns = ", ".join(f"heron_c.{dialect.quoted(c)}" for c in key.columns)
    present = " AND ".join(f"heron_c.{dialect.quoted(c)} IS NOT NULL" for c in key.columns)
    found = con.execute(f"SELECT DISTINCT {columns} FROM {key.quoted} heron_c WHERE {present} "
                        f"AND heron_c.rowid >= {MAX_ROW_ID} LIMIT 2").fetchall()
    if len(found) != 1:
        return not found
    matched = " AND ".join(f"{dialect.quoted(p)} = ?" for p in key.referenced_columns)
    return bool(con.execute(f"SELECT 1 FROM {key.referenced_quoted} WHERE {matched} LIMIT 1",
                            list(found[0])).fetchall())


def _orphan(con: duckdb.DuckDBPyConnection, key: Key, *, fresh: bool = False) -> str | None:
    """The key values (as text, as PostgreSQL's detail shows them) of a row of `key`'s table
    (with `fresh`, of one its transaction inserted) that no referenced row has; None when every
    row's has one."""
    values = ", ".join(f"CAST(heron_c.{dialect.quoted(c)} AS VARCHAR)" for c in key.columns)
    own = f" AND heron_c.rowid >= {MAX_ROW_ID}" if fresh else ""
    found = con.execute(f"SELECT [{values}] FROM {key.quoted} heron_c WHERE {key.orphans()}"
                        f"{own} LIMIT 1").fetchall()
    return ", ".join(found[0][0]) if found else None

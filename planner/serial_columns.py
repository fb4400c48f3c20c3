"""serial columns and identity columns, which DuckDB's CREATE TABLE has not: an integer column
whose default takes the next value of a sequence made for it, as PostgreSQL makes one.

PostgreSQL's `id serial` is `id integer NOT NULL DEFAULT nextval('t_id_seq'::regclass)` over a
sequence `t_id_seq` the column owns (dropped with its table); bigserial and smallserial are the
same over bigint and smallint, and `GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]`
is the same over the column's own integer type. ORMs create every autoincrementing key this way
(SQLAlchemy and Rails serial, Django identity); DuckDB knows neither spelling.

Contract:
- `read(sql)`: DuckDB's text of a CREATE TABLE (as `pg_semantics.rewrite` prints it) as a
  `SerialTable` when one of its columns is serial, bigserial or smallserial or has an identity
  clause; None for any other statement (a cheap test first, no parse).
- `run(con, table)` runs it: each such column's sequence, named as PostgreSQL names it
  (`<table>_<column>_seq`, in the table's schema, temporary with a temporary table), with the
  identity's START / INCREMENT / MINVALUE / MAXVALUE / CYCLE (else from 1 up to the type's
  largest value), then the table, the column `NOT NULL DEFAULT nextval('<sequence>')`, all in
  one transaction (the session's when one is open). (An IF NOT EXISTS over an existing relation
  is skipped before: `existence`.)
- `read_add_identity(sql)`: `ALTER TABLE [IF EXISTS] [ONLY] t ALTER [COLUMN] c ADD GENERATED
  {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]`, as pg_dump writes an identity column (after
  its CREATE TABLE), as an `AddIdentity`; None for anything else. `run_add_identity(con, add)`
  creates the sequence (SEQUENCE NAME's, else `<table>_<column>_seq` beside the table), bounded
  by the column's type and with the sequence options given, and makes the column default to
  it, in one transaction. A column of another type than smallint, integer or bigint is 22023.
- `owned(table, schema, column, default)`: the name of the sequence `run` made for a column
  (`<table>_<column>_seq`, read by the column's default `default`), or None: DROP TABLE drops it
  after the table (`existence`). `nextval_defaults(schema, sequence)` are the default texts
  that draw from a sequence.

- `checked_write(con, sql)`: an INSERT or UPDATE refused as PostgreSQL refuses it when it gives
  a GENERATED ALWAYS identity column a value other than DEFAULT (428C9, with PostgreSQL's detail
  and hint), and with `OVERRIDING SYSTEM VALUE` taken out of an INSERT (which then may);
  `sql` as it was otherwise. COPY is not checked, as PostgreSQL's is not.

An identity column's sequence carries a comment that marks it (`pg_catalog_relations.
IDENTITY_COMMENTS`, hidden from clients): the catalog then shows the column as PostgreSQL does
(attidentity 'a' or 'd', no default, information_schema's is_identity and identity_generation).

Differences from PostgreSQL: OVERRIDING USER VALUE is 0A000; an identity is added to a nullable
column (PostgreSQL: 55000) or one with a default (it is replaced); information_schema's
identity_start and the like are empty; a sequence name is not shortened to 63 bytes nor given a
number when taken (the CREATE fails with 42P07 instead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
from sqlglot import exp

from heron.planner import dialect, existence, pg_ddl
from heron.planner.commands import IDENTIFIER, identifier
from heron.planner.errors import SqlError, SqlState, from_duckdb
from heron.planner.pg_catalog_relations import IDENTITY_COMMENTS, IDENTITY_SEQUENCE_OF_COLUMN
from heron.planner.pg_catalog_types import literal
from heron.planner.statement import Result, atomic

_T = exp.DataType.Type
_MAY_BE = re.compile(r"^\s*CREATE\b.*\b(?:SMALLSERIAL|BIGSERIAL|SERIAL[248]?|AS\s+IDENTITY)\b",
                     re.IGNORECASE | re.DOTALL)
# The integer type each spelling stands for, and its largest value (a sequence's default MAXVALUE).
_SERIALS = {_T.SMALLSERIAL: _T.SMALLINT, _T.SERIAL: _T.INT, _T.BIGSERIAL: _T.BIGINT}
_LARGEST = {_T.SMALLINT: 2**15 - 1, _T.INT: 2**31 - 1, _T.BIGINT: 2**63 - 1}
_OPTIONS = (("start", "START WITH"), ("increment", "INCREMENT BY"), ("minvalue", "MINVALUE"),
            ("maxvalue", "MAXVALUE"))


@dataclass(frozen=True)
class SerialTable:
    create_table: str  # DuckDB's CREATE TABLE, each such column defaulting to its sequence
    create_sequences: tuple[str, ...]  # each CREATE SEQUENCE (and an identity column's mark)
    table: tuple[str, ...]  # the table's name, its parts


@dataclass(frozen=True)
class AddIdentity:
    """ALTER TABLE ... ALTER COLUMN ... ADD GENERATED ... AS IDENTITY [(options)]."""

    table: str  # as written (maybe qualified, maybe quoted)
    column: str  # as written
    sequence: str | None  # SEQUENCE NAME's, as written
    options: str  # the other sequence options, as CREATE SEQUENCE reads them
    always: bool  # GENERATED ALWAYS (else BY DEFAULT)


_ADD_IDENTITY = re.compile(
    rf"^\s*ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<table>{IDENTIFIER}"
    rf"(?:\s*\.\s*{IDENTIFIER})?)\s+ALTER\s+(?:COLUMN\s+)?(?P<column>{IDENTIFIER})\s+ADD\s+"
    r"GENERATED\s+(?P<always>ALWAYS\s+|BY\s+DEFAULT\s+)AS\s+IDENTITY\s*(?:\((?P<options>[^()]*)\))?"
    r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_SEQUENCE_NAME = re.compile(
    rf"\bSEQUENCE\s+NAME\s+(?P<name>{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})?)", re.IGNORECASE)
_IDENTITY_TYPES = {"SMALLINT": "smallint", "INTEGER": "integer", "BIGINT": "bigint"}


def read_add_identity(sql: str) -> AddIdentity | None:
    """`sql` as an `AddIdentity`, or None (see the module docstring)."""
    if (m := _ADD_IDENTITY.match(sql)) is None:
        return None
    options = m["options"] or ""
    named = _SEQUENCE_NAME.search(options)
    return AddIdentity(m["table"], m["column"], named["name"] if named else None,
                       _SEQUENCE_NAME.sub(" ", options).strip(),
                       m["always"].upper().startswith("ALWAYS"))


def run_add_identity(con: duckdb.DuckDBPyConnection, add: AddIdentity) -> Result:
    """Run `add` (see the module docstring)."""
    try:
        column = con.sql(f"SELECT {add.column} FROM {add.table}")
        integer = _IDENTITY_TYPES.get(str(column.types[0]))
        if integer is None:
            raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                           "identity column type must be smallint, integer, or bigint")
        *schema, table = [identifier(p) for p in re.findall(IDENTIFIER, add.table)]
        sequence = [identifier(p) for p in re.findall(IDENTIFIER, add.sequence)] if (
            add.sequence) else [*schema, f"{table}_{identifier(add.column)}_seq"]
        quoted = ".".join(dialect.quoted(p) for p in sequence)
        with atomic(con):
            con.execute(pg_ddl.rewrite(f"CREATE SEQUENCE {quoted} AS {integer} {add.options}"))
            con.execute(_mark(quoted, always=add.always))
            con.execute(f"ALTER TABLE {add.table} ALTER COLUMN {add.column} SET DEFAULT "
                        f"nextval({literal('.'.join(sequence))})")
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    return Result("ALTER TABLE", None, None)


def read(sql: str) -> SerialTable | None:
    """`sql` as a `SerialTable`, or None (see the module docstring)."""
    if _MAY_BE.match(sql) is None:
        return None
    tree = dialect.read_postgres(sql)
    if not isinstance(tree, exp.Create) or (tree.kind or "").upper() != "TABLE" or (
            not isinstance(tree.this, exp.Schema)):
        return None
    table = tree.this.this
    properties = tree.args.get("properties")
    temporary = properties is not None and any(
        isinstance(p, exp.TemporaryProperty) for p in properties.expressions)
    sequences = []
    for column in tree.this.find_all(exp.ColumnDef):
        sequences += _sequence_of(column, table, temporary)
    if not sequences:
        return None
    return SerialTable(tree.sql(dialect="duckdb"), tuple(sequences),
                       tuple(p.name for p in table.parts))


def run(con: duckdb.DuckDBPyConnection, table: SerialTable) -> Result:
    """Run `table` (see the module docstring)."""
    try:
        with atomic(con):
            for sequence in table.create_sequences:
                con.execute(sequence)
            con.execute(table.create_table)
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None
    return Result("CREATE TABLE", None, None)


def owned(table: str, schema: str, column: str, default: str | None) -> str | None:
    """The sequence `run` made for `column` of `table` in `schema`, if `default` (DuckDB's text of
    the column's default) is still its nextval."""
    sequence = f"{table}_{column}_seq"
    return sequence if default in nextval_defaults(schema, sequence) else None


def nextval_defaults(schema: str, sequence: str) -> tuple[str, str]:
    """DuckDB's texts of a column default drawing from `sequence` of `schema` (named plain, as
    `run` writes it, or qualified)."""
    return (f"nextval({literal(sequence)})", f"nextval({literal(f'{schema}.{sequence}')})")


def _sequence_of(column: exp.ColumnDef, table: exp.Table, temporary: bool) -> list[str]:
    """The CREATE SEQUENCE a serial or identity column needs (and an identity column's mark),
    the column made to default to it in place; none for another column."""
    kind = column.args.get("kind")
    constraints = column.args.get("constraints") or []
    identity = next((c for c in constraints
                     if isinstance(c.kind, exp.GeneratedAsIdentityColumnConstraint)), None)
    serial = isinstance(kind, exp.DataType) and kind.this in _SERIALS
    if not serial and identity is None:
        return []
    integer = _SERIALS[kind.this] if serial else kind.this if isinstance(kind, exp.DataType) \
        else _T.INT
    name = f"{table.name}_{column.name}_seq"
    options: dict[str, object] = {"minvalue": 1, "maxvalue": _LARGEST.get(integer, 2**63 - 1)}
    cycle = False
    if identity is not None:
        constraints.remove(identity)
        given = {key: value.sql(dialect="duckdb") for key, _ in _OPTIONS
                 if (value := identity.kind.args.get(key)) is not None}
        if given.get("increment", "1").lstrip().startswith("-"):
            options = {}  # descending: DuckDB's bounds are PostgreSQL's (below zero)
        options.update(given)
        cycle = bool(identity.kind.args.get("cycle"))
    column.set("kind", exp.DataType.build(integer))
    schema = [p.name for p in table.parts[:-1]]  # the table's schema (and database), if named
    default = exp.Anonymous(this="nextval", expressions=[exp.Literal.string(
        ".".join([*schema, name]))])
    if not any(isinstance(c.kind, exp.NotNullColumnConstraint) for c in constraints):
        constraints.append(exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
    constraints.append(exp.ColumnConstraint(kind=exp.DefaultColumnConstraint(this=default)))
    column.set("constraints", constraints)
    settings = " ".join(f"{spelling} {options[key]}" for key, spelling in _OPTIONS
                        if key in options)
    temp = "TEMPORARY " if temporary else ""
    sequence = ".".join(dialect.quoted(p) for p in [*schema, name])
    create = f"CREATE {temp}SEQUENCE {sequence} {settings}{' CYCLE' if cycle else ''}"
    if identity is None:
        return [create]
    return [create, _mark(sequence, always=bool(identity.kind.this))]


# Each identity column's mark by attidentity's value ('a' GENERATED ALWAYS, 'd' BY DEFAULT).
_MARKS = {kind: comment for comment, kind in IDENTITY_COMMENTS.items()}


def _mark(sequence: str, *, always: bool) -> str:
    """The COMMENT that marks `sequence` (quoted) as an identity column's, for the catalog."""
    return f"COMMENT ON SEQUENCE {sequence} IS {literal(_MARKS['a' if always else 'd'])}"


_WRITE = re.compile(r"^\s*(?:INSERT|UPDATE)\b", re.IGNORECASE)
_OVERRIDING = re.compile(r"\s+OVERRIDING\s+(?P<whose>SYSTEM|USER)\s+VALUE\b", re.IGNORECASE)
_ALWAYS = _MARKS["a"]


def checked_write(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`sql`, an INSERT or UPDATE checked against GENERATED ALWAYS identity columns (see the
    module docstring)."""
    if _WRITE.match(sql) is None:
        return sql
    overriding = _OVERRIDING.search(sql)
    if overriding is not None:
        if overriding["whose"].upper() == "USER":
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, "OVERRIDING USER VALUE is not "
                           "supported", hint="Leave the identity column out of the INSERT.")
        return sql[:overriding.start()] + sql[overriding.end():]
    if not con.execute("SELECT count(*) FROM duckdb_sequences() WHERE comment = ?",
                       [_ALWAYS]).fetchall()[0][0]:
        return sql  # (no such column anywhere: nothing to look up)
    tree = dialect.read_postgres(sql)
    if isinstance(tree, exp.Insert):
        _check_insert(con, tree)
    elif isinstance(tree, exp.Update) and isinstance(tree.this, exp.Table):
        always = _always_columns(con, tree.this)
        for assignment in tree.expressions:
            if assignment.this.name in always and not _is_default(assignment.expression):
                raise _refused(assignment.this.name, insert=False)
    return sql


def _check_insert(con: duckdb.DuckDBPyConnection, insert: exp.Insert) -> None:
    target = insert.this
    table = target.this if isinstance(target, exp.Schema) else target
    if not isinstance(table, exp.Table) or not (always := _always_columns(con, table)):
        return
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
    else:
        columns = [name for (name,) in con.execute(
            f"SELECT column_name FROM (DESCRIBE {table.sql(dialect='duckdb')})").fetchall()]
    source = insert.expression
    for position, column in enumerate(columns):
        if column not in always or source is None:  # (None: DEFAULT VALUES)
            continue
        if isinstance(source, exp.Values) and all(
                _is_default(row.expressions[position]) for row in source.expressions
                if isinstance(row, exp.Tuple) and position < len(row.expressions)):
            continue
        raise _refused(column, insert=True)


def _always_columns(con: duckdb.DuckDBPyConnection, table: exp.Table) -> set[str]:
    """The GENERATED ALWAYS identity columns of `table` (none if it is not there)."""
    try:
        relation = existence.find_relation(con, tuple(p.name for p in table.parts),
                                           views=False)
    except SqlError:
        return set()  # DuckDB reports it
    return {name for (name,) in con.execute(
        "SELECT c.column_name FROM duckdb_columns() c JOIN duckdb_sequences() s ON "
        f"{IDENTITY_SEQUENCE_OF_COLUMN} WHERE s.comment = ? AND "
        "c.table_oid = ?", [_ALWAYS, relation.oid]).fetchall()}


def _is_default(value: exp.Expression) -> bool:
    """Whether a value written in an INSERT or UPDATE is the keyword DEFAULT."""
    return value.name.upper() == "DEFAULT" and (isinstance(value, exp.Var) or (
        isinstance(value, exp.Column) and not value.table and not value.this.quoted))


def _refused(column: str, *, insert: bool) -> SqlError:
    return SqlError(
        SqlState.GENERATED_ALWAYS, f'cannot insert a non-DEFAULT value into column "{column}"'
        if insert else f'column "{column}" can only be updated to DEFAULT',
        detail=f'Column "{column}" is an identity column defined as GENERATED ALWAYS.',
        hint="Use OVERRIDING SYSTEM VALUE to override." if insert else None)

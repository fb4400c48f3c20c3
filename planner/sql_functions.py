"""PostgreSQL's SQL functions as DuckDB macros; the routines Heron cannot run refused clearly.

A schema's small helper functions (`CREATE FUNCTION full_name(p people) ...`, pg_dump's copies of
them, migrations') are mostly `LANGUAGE sql` bodies of one query: a DuckDB macro computes the
same. DuckDB's grammar has no CREATE FUNCTION, so before this each was a syntax error.

Contract:
- `read(sql)` reads `CREATE [OR REPLACE] FUNCTION name ([[IN] [argname] argtype [{DEFAULT | =}
  expr]] [, ...]) {RETURNS rettype | RETURNS SETOF type | RETURNS TABLE (column type [, ...])}`
  with its body (`AS 'definition'` or `AS $$definition$$`, or SQL-standard `RETURN expression`
  or `BEGIN ATOMIC statement; END`) and attributes in any order (LANGUAGE, IMMUTABLE | STABLE |
  VOLATILE, STRICT / RETURNS NULL ON NULL INPUT / CALLED ON NULL INPUT, [NOT] LEAKPROOF,
  SECURITY, PARALLEL, COST, ROWS, SET: kept by none but STRICT), and `DROP FUNCTION [IF EXISTS]
  name [(args)] [, ...] [CASCADE | RESTRICT]`, into a `CreateFunction` / `DropFunction`; and
  CREATE PROCEDURE, CREATE TRIGGER and DO into `Refused`. None for anything else.
- What a macro cannot be is refused (0A000) when read: a language other than sql (plpgsql's
  procedural code), a body of several statements or one that writes, OUT / INOUT / VARIADIC
  arguments, RETURNS void or trigger. A type that does not exist is DuckDB's error when run.
- `run(con, routine, pg_rewrite)` creates or drops the macro (`pg_rewrite` turns the body's
  PostgreSQL SQL into DuckDB's, as statements are: `pg_semantics.rewrite`). A scalar function is
  a macro of typed parameters (DuckDB then refuses arguments PostgreSQL would find no function
  for, 42883) computing `CAST(body AS rettype)`: the body's one select-list item where the query
  reads nothing (`SELECT $1 + 1`), else the query as a scalar subquery; a STRICT one is NULL
  where an argument is. `$n` in the body is the n-th argument (unnamed ones are named
  `heron_argN`). A set-returning function is a table macro over the query, its columns named as
  RETURNS TABLE names them (SETOF a base type: after the function). A function is one macro:
  CREATE of a name a function already has is 42723 (same argument types) or 0A000 (an
  overload), CREATE OR REPLACE replaces it whatever its arguments. DROP drops the macro (42883
  for a missing one; IF EXISTS: a NOTICE).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from heron.planner import dialect
from heron.planner.commands import IDENTIFIER, depths, identifier, split_items
from heron.planner.errors import SqlError, SqlState, from_duckdb, pg_type_name
from heron.planner.existence import name_parts
from heron.planner.statement import Result

_NAME = rf"(?P<name>{IDENTIFIER}(?:\s*\.\s*{IDENTIFIER})?)"
_CREATE = re.compile(rf"^\s*CREATE\s+(?P<replace>OR\s+REPLACE\s+)?FUNCTION\s+{_NAME}\s*\(",
                     re.IGNORECASE)
_DROP = re.compile(r"^\s*DROP\s+FUNCTION\s+(?P<exists>IF\s+EXISTS\s+)?(?P<rest>.*?)\s*;?\s*$",
                   re.IGNORECASE | re.DOTALL)
_REFUSED = re.compile(r"^\s*(?:(?P<do>DO)\b|CREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?"
                      r"(?P<what>PROCEDURE|TRIGGER|EVENT\s+TRIGGER)\b)", re.IGNORECASE)
# A string constant: '...' ('' within) or $tag$...$tag$.
_CONSTANT = re.compile(r"'(?:[^']|'')*'|\$(?P<tag>[A-Za-z_]\w*)?\$.*?\$(?P=tag)?\$", re.DOTALL)
_CLAUSES = (r"LANGUAGE|AS|RETURN|BEGIN|IMMUTABLE|STABLE|VOLATILE|STRICT|CALLED|SECURITY|"
            r"PARALLEL|COST|ROWS|SET|LEAKPROOF|NOT|WINDOW|EXTERNAL|TRANSFORM|SUPPORT")
_NULL_ON_NULL = re.compile(r"\bRETURNS\s+NULL\s+ON\s+NULL\s+INPUT\b", re.IGNORECASE)
_STRICT = re.compile(r"\bSTRICT\b", re.IGNORECASE)
_ROUTINES_HINT = ("Heron runs LANGUAGE sql functions (CREATE FUNCTION), as DuckDB macros; it has "
                  "no procedural language.")
_RETURNS = re.compile(rf"\bRETURNS\s+(?P<type>.+?)(?=\s+(?:{_CLAUSES})\b|\s*;?\s*$)",
                      re.IGNORECASE | re.DOTALL)
_LANGUAGE = re.compile(r"\bLANGUAGE\s+'?(?P<language>\w+)'?", re.IGNORECASE)
_AS = re.compile(r"\bAS\s+\x00(?P<index>\d+)\x00", re.IGNORECASE)
_RETURN = re.compile(r"\bRETURN\s+(?P<expression>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_ATOMIC = re.compile(r"\bBEGIN\s+ATOMIC\s+(?P<body>.*?)\s*;?\s*END\s*;?\s*$",
                     re.IGNORECASE | re.DOTALL)
_SETOF = re.compile(r"^SETOF\s+(?P<type>.+)$", re.IGNORECASE | re.DOTALL)
_TABLE = re.compile(r"^TABLE\s*\((?P<columns>.*)\)$", re.IGNORECASE | re.DOTALL)
_ARGUMENT = re.compile(r"^(?:(?P<mode>IN|OUT|INOUT|VARIADIC)\s+)?(?P<rest>.+?)"
                       r"(?:\s+(?:DEFAULT\b|=)\s*(?P<default>.+))?$", re.IGNORECASE | re.DOTALL)
# The type names PostgreSQL spells with a space (any other argument of two words is named).
_SPACED_TYPE = re.compile(r"^(?:double\s+precision|(?:national\s+)?char(?:acter)?\s+varying|"
                          r"bit\s+varying|(?:timestamp|time)\s*(?:\(\s*\d+\s*\))?\s+"
                          r"with(?:out)?\s+time\s+zone|interval\s+\w)", re.IGNORECASE)
_QUERY = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values)


@dataclass(frozen=True)
class Argument:
    name: str  # as the macro names it
    type: str  # PostgreSQL's spelling
    default: str | None


@dataclass(frozen=True)
class CreateFunction:
    name: tuple[str, ...]
    replace: bool
    arguments: tuple[Argument, ...]
    returns: str  # the scalar type; "" for a set-returning function
    columns: tuple[str, ...]  # a set-returning function's result columns (none: the query's)
    body: str  # one query, or an expression (`RETURN`)
    expression: bool
    strict: bool


@dataclass(frozen=True)
class DropFunction:
    # each function's name, with its argument types where the statement lists them
    names: tuple[tuple[tuple[str, ...], tuple[str, ...] | None], ...]
    if_exists: bool


@dataclass(frozen=True)
class Refused:
    error: SqlError


Routine = CreateFunction | DropFunction | Refused


def read(sql: str) -> Routine | None:
    """The routine statement `sql` is, if it is one (see the module docstring)."""
    if (create := _CREATE.match(sql)) is not None:
        return _read_create(sql, create)
    if (drop := _DROP.match(sql)) is not None:
        return _read_drop(drop)
    if (refused := _REFUSED.match(sql)) is not None:
        what = "DO blocks" if refused["do"] else " ".join(refused["what"].lower().split()) + "s"
        return Refused(SqlError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} are not supported",
                                hint=_ROUTINES_HINT))
    return None


def _read_create(sql: str, create: re.Match[str]) -> CreateFunction:
    close = _closing(sql, create.end())
    arguments = tuple(_argument(text, i + 1) for i, text in enumerate(
        split_items(sql[create.end():close])))
    constants: list[str] = []

    def mask(m: re.Match[str]) -> str:
        constants.append(m[0])
        return f"\x00{len(constants) - 1}\x00"

    rest = _CONSTANT.sub(mask, sql[close + 1:])
    strict = _STRICT.search(rest) is not None or _NULL_ON_NULL.search(rest) is not None
    rest = _NULL_ON_NULL.sub(" ", rest)  # (its RETURNS is no result type)
    language = _LANGUAGE.search(rest)
    if language is not None and language["language"].lower() != "sql":
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f'functions in language "{language["language"].lower()}" are not supported',
                       hint=_ROUTINES_HINT)
    returns = _RETURNS.search(rest)
    if returns is None:
        raise SqlError(SqlState.INVALID_FUNCTION_DEFINITION, "function result type must be "
                       "specified")
    if (table := re.match(r"TABLE\s*\(", returns["type"], re.IGNORECASE)) is not None:
        # (its columns' names may be words that end the type otherwise: `rows bigint`)
        start = returns.start("type") + table.end()
        result = " ".join(rest[returns.start("type"):_closing(rest, start) + 1].split())
    else:
        result = " ".join(returns["type"].split())
    if result.lower() in ("void", "trigger", "event_trigger", "record"):
        raise _unsupported(f"functions returning {result.lower()}")
    body, expression = _body(rest, constants)
    columns: tuple[str, ...] = ()
    if (setof := _SETOF.match(result)) is not None:
        columns = () if _composite(setof["type"]) else (name_parts(create["name"])[-1],)
        result = ""
    elif (table := _TABLE.match(result)) is not None:
        columns = tuple(identifier(item.split()[0]) for item in split_items(table["columns"]))
        result = ""
    if not result and expression:
        raise _unsupported("a set-returning function with a RETURN expression")
    return CreateFunction(name_parts(create["name"]), create["replace"] is not None,
                          arguments, result, columns, body, expression, strict)


def _body(rest: str, constants: list[str]) -> tuple[str, bool]:
    """The function's body (one query, or the RETURN expression) and whether it is the latter."""
    if (definition := _AS.search(rest)) is not None:
        constant = constants[int(definition["index"])]
        text = constant[1:-1].replace("''", "'") if constant.startswith("'") else (
            constant[constant.index("$", 1) + 1:constant.rindex("$", 0, -1)])
    elif (atomic := _ATOMIC.search(rest)) is not None:
        text = _unmasked(atomic["body"], constants)
    elif (returned := _RETURN.search(rest)) is not None:
        return _unmasked(returned["expression"], constants), True
    else:
        raise SqlError(SqlState.INVALID_FUNCTION_DEFINITION, "no function body specified")
    statements = [s for s in _statements(text) if s.strip()]
    if len(statements) != 1:
        raise _unsupported("SQL functions of other than one statement")
    return statements[0].strip(), False


def _unmasked(text: str, constants: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: constants[int(m[1])], text)


def _statements(text: str) -> list[str]:
    """`text` split at its top-level semicolons (not those in constants)."""
    masked = _CONSTANT.sub(lambda m: "x" * len(m[0]), text)
    pieces, start = [], 0
    for at in (i for i, c in enumerate(masked) if c == ";"):
        pieces.append(text[start:at])
        start = at + 1
    return [*pieces, text[start:]]


def _argument(text: str, number: int) -> Argument:
    m = _ARGUMENT.match(text.strip())
    assert m is not None
    if m["mode"] is not None and m["mode"].upper() != "IN":
        raise _unsupported(f"{m['mode'].upper()} arguments")
    words = m["rest"].split(None, 1)
    if len(words) == 2 and not _is_type(m["rest"]):
        name, pg_type = identifier(words[0]), words[1]
    else:
        name, pg_type = f"heron_arg{number}", m["rest"]
    return Argument(name, " ".join(pg_type.split()), m["default"])


def _is_type(text: str) -> bool:
    """Whether `text` reads as a type of its own (`double precision`, not `x integer`, nor
    `name text`, whose first word is a type too)."""
    if len(text.split()) > 1 and _SPACED_TYPE.match(text) is None:
        return False
    try:
        exp.DataType.build(text, dialect="postgres")
    except (SqlglotError, ValueError):
        return False
    return True


def _composite(pg_type: str) -> bool:
    """Whether SETOF `pg_type` names a table's row type rather than a base type."""
    return not _is_type(pg_type) or (
        exp.DataType.build(pg_type, dialect="postgres").this is exp.DataType.Type.USERDEFINED)


def _closing(sql: str, start: int) -> int:
    """The index of the parenthesis closing the one before `start`."""
    for i, depth in depths(sql, start, 1):
        if depth == 0:
            return i
    raise SqlError(SqlState.SYNTAX_ERROR, "syntax error at end of input")


def _read_drop(drop: re.Match[str]) -> DropFunction:
    names = []
    for item in split_items(re.sub(r"\s+(?:CASCADE|RESTRICT)$", "", drop["rest"],
                                   flags=re.IGNORECASE)):
        name = re.match(rf"\s*{_NAME}\s*(?:\((?P<arguments>.*)\))?\s*$", item, re.DOTALL)
        if name is None:
            raise SqlError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{item}"')
        types = None if name["arguments"] is None else tuple(
            _argument(text, i + 1).type for i, text in enumerate(split_items(name["arguments"])))
        names.append((name_parts(name["name"]), types))
    return DropFunction(tuple(names), drop["exists"] is not None)


def _unsupported(what: str) -> SqlError:
    return SqlError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} are not supported")


# -- running --------------------------------------------------------------------------------


def run(con: duckdb.DuckDBPyConnection, routine: Routine, pg_rewrite: Callable[[str], str]
        ) -> Result:
    """Create or drop the macro `routine` reads (see the module docstring)."""
    if isinstance(routine, Refused):
        raise routine.error  # (the planner refuses these as it classifies them)
    if isinstance(routine, DropFunction):
        return _drop(con, routine)
    existing = _existing(con, routine.name)
    if existing is not None and not routine.replace:
        same = existing[1] == [_typeof(con, a.type) for a in routine.arguments]
        raise SqlError(SqlState.DUPLICATE_FUNCTION, f'function "{routine.name[-1]}" already '
                       "exists with same argument types") if same else _unsupported(
            "functions overloaded by their argument types")
    if existing is not None and existing[0] != ("table_macro" if not routine.returns
                                                else "macro"):
        _drop_macro(con, routine.name, existing[0])  # (DuckDB replaces a macro of its kind)
    parameters = ", ".join(
        f"{dialect.quoted(a.name)} {_duckdb_type(a.type)}"
        + (f" := {_duckdb_sql(pg_rewrite(f'SELECT {a.default}'), {}, True)}" if a.default else "")
        for a in routine.arguments)
    names = {i + 1: a.name for i, a in enumerate(routine.arguments)}
    body = pg_rewrite(f"SELECT {routine.body}" if routine.expression else routine.body)
    replace = "OR REPLACE " if existing is not None else ""
    if routine.returns:
        value = f"CAST({_duckdb_sql(body, names, routine.expression)} AS " \
                f"{_duckdb_type(routine.returns)})"
        if routine.strict and routine.arguments:
            nulls = " OR ".join(f"{dialect.quoted(a.name)} IS NULL" for a in routine.arguments)
            value = f"CASE WHEN {nulls} THEN NULL ELSE {value} END"
        _run(con, f"CREATE {replace}MACRO {_quoted(routine.name)}({parameters}) AS {value}")
    else:
        query = _duckdb_sql(body, names, False, scalar=False)
        if routine.columns:
            named = ", ".join(dialect.quoted(c) for c in routine.columns)
            query = f"SELECT * FROM ({query}) AS heron_rows({named})"
        _run(con, f"CREATE {replace}MACRO {_quoted(routine.name)}({parameters}) AS TABLE {query}")
    return Result("CREATE FUNCTION", None, None)


def _duckdb_sql(sql: str, names: dict[int, str], expression: bool, *, scalar: bool = True
                ) -> str:
    """The body's DuckDB SQL with `$n` named: a query's one item where it reads nothing (or an
    expression's), else the query (a scalar subquery where `scalar`)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        tree = dialect.parse(sql)  # (PostgreSQL's text, which the rewrite left as it was)
    if not isinstance(tree, _QUERY) and not expression:
        raise _unsupported("SQL functions that change data")
    for parameter in list(tree.find_all(exp.Parameter, exp.Placeholder)):
        number = parameter.name if isinstance(parameter, exp.Parameter) else parameter.this
        if not str(number).isdigit() or int(number) not in names:
            raise SqlError(SqlState.UNDEFINED_PARAMETER,
                           f"there is no parameter ${number}")
        parameter.replace(exp.column(names[int(number)], quoted=True))
    if isinstance(tree, exp.Select) and len(tree.expressions) == 1 and not any(
            value for key, value in tree.args.items() if key != "expressions"):
        item = tree.expressions[0]
        return (item.this if isinstance(item, exp.Alias) else item).sql(dialect="duckdb")
    return f"({tree.sql(dialect='duckdb')})" if scalar else tree.sql(dialect="duckdb")


def _duckdb_type(pg_type: str) -> str:
    """DuckDB's spelling of a PostgreSQL type (unconstrained numeric keeps its digits)."""
    from heron.planner.pg_semantics import UNCONSTRAINED_NUMERIC

    try:
        built = exp.DataType.build(pg_type, dialect="postgres", udt=True)
    except (SqlglotError, ValueError):
        raise SqlError(SqlState.UNDEFINED_OBJECT, f'type "{pg_type}" does not exist') from None
    if built.this is exp.DataType.Type.DECIMAL and not built.expressions:
        built = UNCONSTRAINED_NUMERIC.copy()
    return built.sql(dialect="duckdb")


def _typeof(con: duckdb.DuckDBPyConnection, pg_type: str) -> str:
    """DuckDB's name of a PostgreSQL type, as duckdb_functions() lists parameter types."""
    return con.execute(f"SELECT typeof(CAST(NULL AS {_duckdb_type(pg_type)}))").fetchone()[0]


def _existing(con: duckdb.DuckDBPyConnection, name: tuple[str, ...]
              ) -> tuple[str, list[str]] | None:
    """The kind of macro (`macro`, `table_macro`) `name` names in its schema (the current one
    if unqualified), with its parameters' types; None when there is none."""
    schema = name[-2] if len(name) > 1 else con.execute("SELECT current_schema()").fetchone()[0]
    rows = con.execute(
        "SELECT function_type, parameter_types FROM duckdb_functions() WHERE function_name = ? "
        "AND schema_name = ? AND database_name = current_database() "
        "AND function_type IN ('macro', 'table_macro')", [name[-1], schema]).fetchall()
    if not rows:
        return None
    return rows[0][0], [str(t) if t is not None else None for t in rows[0][1]]


def _drop(con: duckdb.DuckDBPyConnection, drop: DropFunction) -> Result:
    notices = []
    for name, types in drop.names:
        existing = _existing(con, name)
        if existing is None:
            listed = ",".join(pg_type_name(_typeof(con, t)) for t in types or ())
            text = f"function {'.'.join(name)}({listed}) does not exist"
            if not drop.if_exists:
                raise SqlError(SqlState.UNDEFINED_FUNCTION, text)
            notices.append(f"{text}, skipping")
            continue
        _drop_macro(con, name, existing[0])
    return Result("DROP FUNCTION", None, None, notices=tuple(notices))


def _drop_macro(con: duckdb.DuckDBPyConnection, name: tuple[str, ...], kind: str) -> None:
    """Drop the macro `name` of `kind` (`macro`, `table_macro`: DuckDB's DROP names it)."""
    _run(con, f"DROP MACRO {'TABLE ' if kind == 'table_macro' else ''}{_quoted(name)}")


def _quoted(name: tuple[str, ...]) -> str:
    return ".".join(dialect.quoted(part) for part in name)


def _run(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    try:
        con.execute(sql)
    except duckdb.Error as exc:
        raise from_duckdb(exc) from None

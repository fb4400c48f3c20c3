"""SQL errors with PostgreSQL SQLSTATEs.

Contract: every error a client can see is a `SqlError` carrying a `SqlState` (PostgreSQL's
condition names, appendix A of its manual), a message and optionally a detail and a hint. An error
raised from more than one place is built by one function here, so its wording cannot drift.
`from_duckdb` translates DuckDB's errors — raised as DuckDB's exception classes, or passed
through an Arrow stream as text with DuckDB's "<Class> Error: " prefix — into the code PostgreSQL
sends for the same mistake, and the common ones (undefined relation, column or function, bad
input syntax, division by zero, overflow, constraint violations, write conflicts, ...) into
PostgreSQL's own wording; the others keep DuckDB's message without its class prefix and caret
diagram. A Python function DuckDB calls raises its `SqlError` as `carried(error)`, which
`from_duckdb` reads back whole (DuckDB keeps only an exception's message); `carrying(function,
arity)` is such a function, strict as PostgreSQL's.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb


class SqlState(enum.StrEnum):
    """The SQLSTATEs Heron sends, named as in PostgreSQL's errcodes table."""

    SUCCESSFUL_COMPLETION = "00000"  # NOTICE messages
    WARNING = "01000"
    PROTOCOL_VIOLATION = "08P01"
    FEATURE_NOT_SUPPORTED = "0A000"
    DATA_EXCEPTION = "22000"
    STRING_DATA_RIGHT_TRUNCATION = "22001"
    CHARACTER_NOT_IN_REPERTOIRE = "22021"
    NUMERIC_VALUE_OUT_OF_RANGE = "22003"
    INVALID_DATETIME_FORMAT = "22007"
    DATETIME_FIELD_OVERFLOW = "22008"
    SUBSTRING_ERROR = "22011"
    DIVISION_BY_ZERO = "22012"
    INVALID_ARGUMENT_FOR_LOGARITHM = "2201E"
    INVALID_ARGUMENT_FOR_POWER_FUNCTION = "2201F"
    INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION = "2201G"
    ARRAY_SUBSCRIPT_ERROR = "2202E"
    NULL_VALUE_NOT_ALLOWED = "22004"
    INVALID_PARAMETER_VALUE = "22023"
    INVALID_ESCAPE_SEQUENCE = "22025"
    INVALID_TEXT_REPRESENTATION = "22P02"
    INVALID_BINARY_REPRESENTATION = "22P03"
    BAD_COPY_FILE_FORMAT = "22P04"
    UNTRANSLATABLE_CHARACTER = "22P05"
    INTEGRITY_CONSTRAINT_VIOLATION = "23000"
    NOT_NULL_VIOLATION = "23502"
    FOREIGN_KEY_VIOLATION = "23503"
    UNIQUE_VIOLATION = "23505"
    CHECK_VIOLATION = "23514"
    INVALID_CURSOR_STATE = "24000"
    INVALID_TRANSACTION_STATE = "25000"
    ACTIVE_SQL_TRANSACTION = "25001"
    READ_ONLY_SQL_TRANSACTION = "25006"
    NO_ACTIVE_SQL_TRANSACTION = "25P01"
    IN_FAILED_SQL_TRANSACTION = "25P02"
    INVALID_SQL_STATEMENT_NAME = "26000"
    DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
    INVALID_AUTHORIZATION_SPECIFICATION = "28000"
    INVALID_PASSWORD = "28P01"
    INVALID_CURSOR_NAME = "34000"
    INVALID_SAVEPOINT_SPECIFICATION = "3B001"
    SERIALIZATION_FAILURE = "40001"
    INVALID_SCHEMA_NAME = "3F000"
    SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION = "42000"
    DATATYPE_MISMATCH = "42804"
    INVALID_FOREIGN_KEY = "42830"
    WRONG_OBJECT_TYPE = "42809"
    INSUFFICIENT_PRIVILEGE = "42501"
    SYNTAX_ERROR = "42601"
    UNDEFINED_COLUMN = "42703"
    INVALID_COLUMN_REFERENCE = "42P10"
    DUPLICATE_COLUMN = "42701"
    AMBIGUOUS_COLUMN = "42702"
    GROUPING_ERROR = "42803"
    UNDEFINED_FUNCTION = "42883"
    UNDEFINED_TABLE = "42P01"
    DUPLICATE_CURSOR = "42P03"
    INVALID_CURSOR_DEFINITION = "42P11"
    INVALID_TABLE_DEFINITION = "42P16"
    GENERATED_ALWAYS = "428C9"
    DUPLICATE_PREPARED_STATEMENT = "42P05"
    DUPLICATE_TABLE = "42P07"
    UNDEFINED_OBJECT = "42704"
    DUPLICATE_OBJECT = "42710"
    DUPLICATE_FUNCTION = "42723"
    UNDEFINED_PARAMETER = "42P02"
    INVALID_FUNCTION_DEFINITION = "42P13"
    OUT_OF_MEMORY = "53200"
    TOO_MANY_CONNECTIONS = "53300"
    PROGRAM_LIMIT_EXCEEDED = "54000"
    STATEMENT_TOO_COMPLEX = "54001"
    OBJECT_NOT_IN_PREREQUISITE_STATE = "55000"
    OBJECT_IN_USE = "55006"
    LOCK_NOT_AVAILABLE = "55P03"
    CANT_CHANGE_RUNTIME_PARAM = "55P02"
    QUERY_CANCELED = "57014"
    ADMIN_SHUTDOWN = "57P01"
    SYSTEM_ERROR = "58000"
    IO_ERROR = "58030"
    INTERNAL_ERROR = "XX000"


@dataclass
class SqlError(Exception):
    sqlstate: SqlState
    message: str
    detail: str | None = None
    hint: str | None = None
    severity: str = "ERROR"

    def __str__(self) -> str:
        return self.message


def bind_count_mismatch(given: int, needed: int, statement: str | None = None) -> SqlError:
    """Bind (or an execution) supplies the wrong number of parameter values for `statement`
    (a protocol-level name, "" for the unnamed one; None when there is none)."""
    name = f' "{statement}"' if statement is not None else ""
    return SqlError(SqlState.PROTOCOL_VIOLATION, f"bind message supplies {given} parameters, "
                                                 f"but prepared statement{name} requires {needed}")


def in_failed_transaction() -> SqlError:
    """Any statement but COMMIT/ROLLBACK inside a transaction block that already failed."""
    return SqlError(SqlState.IN_FAILED_SQL_TRANSACTION, "current transaction is aborted, "
                    "commands ignored until end of transaction block")


def query_canceled(reason: str = "user request") -> SqlError:
    """A statement interrupted by a CancelRequest ("user request") or `statement_timeout`."""
    return SqlError(SqlState.QUERY_CANCELED, f"canceling statement due to {reason}")


# A value longer than a varchar(n)'s length (PostgreSQL's assignment cast refuses it).
_TOO_LONG = "value too long for type character varying({limit})"
_TOO_LONG_BLANK_PADDED = "value too long for type character({limit})"  # char(n)'s


def value_too_long(limit: int) -> SqlError:
    """A value longer than the `limit` of the varchar(`limit`) it is to be stored as."""
    return SqlError(SqlState.STRING_DATA_RIGHT_TRUNCATION, _TOO_LONG.format(limit=limit))


# Checked in order: the first class the exception is an instance of decides the code.
_S = SqlState
_DUCKDB_CODES: list[tuple[type[BaseException], SqlState]] = [
    (duckdb.InterruptException, _S.QUERY_CANCELED),
    (duckdb.ParserException, _S.SYNTAX_ERROR),
    (duckdb.CatalogException, _S.UNDEFINED_TABLE),  # refined below
    (duckdb.BinderException, _S.UNDEFINED_COLUMN),  # refined below
    (duckdb.ConversionException, _S.INVALID_TEXT_REPRESENTATION),
    (duckdb.OutOfRangeException, _S.NUMERIC_VALUE_OUT_OF_RANGE),
    (duckdb.ConstraintException, _S.INTEGRITY_CONSTRAINT_VIOLATION),  # refined below
    (duckdb.TransactionException, _S.INVALID_TRANSACTION_STATE),
    (duckdb.InvalidInputException, _S.INVALID_PARAMETER_VALUE),
    (duckdb.NotImplementedException, _S.FEATURE_NOT_SUPPORTED),
    (duckdb.PermissionException, _S.INSUFFICIENT_PRIVILEGE),
    (duckdb.IOException, _S.IO_ERROR),
    (duckdb.OutOfMemoryException, _S.OUT_OF_MEMORY),
    (duckdb.ProgrammingError, _S.SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION),
    (duckdb.DataError, _S.DATA_EXCEPTION),
    (duckdb.Error, _S.INTERNAL_ERROR),
]
# The "<Class> Error: " prefix of DuckDB's messages, for errors that reach us as text (a
# statement failing while its rows stream through Arrow).
_PREFIX_CLASSES: dict[str, type[duckdb.Error]] = {
    "INTERRUPT": duckdb.InterruptException, "Parser": duckdb.ParserException,
    "Catalog": duckdb.CatalogException, "Binder": duckdb.BinderException,
    "Conversion": duckdb.ConversionException, "Out of Range": duckdb.OutOfRangeException,
    "Constraint": duckdb.ConstraintException, "TransactionContext": duckdb.TransactionException,
    "Invalid Input": duckdb.InvalidInputException,
    "Not implemented": duckdb.NotImplementedException,
    "Permission": duckdb.PermissionException, "IO": duckdb.IOException,
    "Out of Memory": duckdb.OutOfMemoryException,
}

_REFINEMENTS: list[tuple[SqlState, re.Pattern[str], SqlState]] = [
    (_S.UNDEFINED_TABLE, re.compile(r"Schema with name .* does not exist"), _S.INVALID_SCHEMA_NAME),
    (_S.UNDEFINED_TABLE, re.compile(r"(Scalar|Table|Aggregate) Function with name .* does not "
                                    r"exist"), _S.UNDEFINED_FUNCTION),
    (_S.UNDEFINED_TABLE, re.compile(r"already exists"), _S.DUPLICATE_TABLE),
    (_S.UNDEFINED_COLUMN, re.compile(r"No function matches|Could not choose a best candidate"),
     _S.UNDEFINED_FUNCTION),
    (_S.UNDEFINED_COLUMN, re.compile(r"(must appear in the GROUP BY|aggregate)"),
     _S.GROUPING_ERROR),
    (_S.INTEGRITY_CONSTRAINT_VIOLATION, re.compile(r"NOT NULL constraint"),
     _S.NOT_NULL_VIOLATION),
    (_S.INTEGRITY_CONSTRAINT_VIOLATION,
     re.compile(r"(PRIMARY KEY|UNIQUE) constraint|Duplicate key"), _S.UNIQUE_VIOLATION),
    (_S.INTEGRITY_CONSTRAINT_VIOLATION, re.compile(r"foreign key", re.IGNORECASE),
     _S.FOREIGN_KEY_VIOLATION),
    (_S.INVALID_PARAMETER_VALUE, re.compile(r"[Dd]ivision by zero"), _S.DIVISION_BY_ZERO),
    # Raised by the catalog shim's look-ups (::regclass, current_setting).
    (_S.INVALID_PARAMETER_VALUE, re.compile(r'^Invalid Input Error: relation ".*" does not exist'),
     _S.UNDEFINED_TABLE),
    (_S.INVALID_PARAMETER_VALUE, re.compile(r'^Invalid Input Error: schema ".*" does not exist'),
     _S.INVALID_SCHEMA_NAME),
    (_S.INVALID_PARAMETER_VALUE,
     re.compile(r'^Invalid Input Error: (type|role) ".*" does not exist'), _S.UNDEFINED_OBJECT),
    (_S.INVALID_PARAMETER_VALUE, re.compile(r"unrecognized configuration parameter"),
     _S.UNDEFINED_OBJECT),
    # The backend functions' refusals (planner.pg_activity raises them with DuckDB's error()).
    (_S.INVALID_PARAMETER_VALUE, re.compile(r"permission denied to (cancel query|terminate "
                                            r"process)"), _S.INSUFFICIENT_PRIVILEGE),
    (_S.INVALID_PARAMETER_VALUE, re.compile(r"canceling statement due to user request"),
     _S.QUERY_CANCELED),
    (_S.DATA_EXCEPTION, re.compile(r"[Dd]ivision by zero"), _S.DIVISION_BY_ZERO),
    (_S.INVALID_TRANSACTION_STATE, re.compile(r"Conflict on"), _S.SERIALIZATION_FAILURE),
    (_S.INVALID_TRANSACTION_STATE, re.compile(r"transaction is aborted"),
     _S.IN_FAILED_SQL_TRANSACTION),
]

# DuckDB prefixes messages with their class ("Catalog Error: ..."); clients show the SQLSTATE.
_PREFIX = re.compile(r"^(?P<name>[A-Z][A-Za-z ]*) Error: ")
# DuckDB's caret diagram ("LINE 1: ..." and the line of ^ under it): PostgreSQL sends a position.
_DIAGRAM = re.compile(r"\n\s*LINE \d+:.*", re.DOTALL)

# DuckDB's type names in messages, as PostgreSQL names the types.
_PG_TYPE_NAMES = {
    "INT8": "smallint", "TINYINT": "smallint", "INT16": "smallint", "SMALLINT": "smallint",
    "INT32": "integer", "INTEGER": "integer", "INTEGER_LITERAL": "integer", "INT64": "bigint",
    "BIGINT": "bigint", "HUGEINT": "numeric", "INT128": "numeric", "UINT8": "smallint",
    "UINT16": "integer", "UINT32": "oid", "UINT64": "numeric", "DOUBLE": "double precision",
    "FLOAT": "real", "VARCHAR": "text", "STRING_LITERAL": "unknown", "BOOL": "boolean",
    "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp without time zone",
    "TIMESTAMP WITH TIME ZONE": "timestamp with time zone", "TIME": "time without time zone",
    "INTERVAL": "interval", "UUID": "uuid", "BLOB": "bytea", "JSON": "json",
}


def pg_type_name(duckdb_name: str) -> str:
    """A DuckDB type name as PostgreSQL spells the type (DECIMAL(10,2) is numeric)."""
    name = duckdb_name.strip().upper()
    if name.startswith("DECIMAL"):
        return "numeric"
    if name.endswith("[]"):
        return pg_type_name(name[:-2]) + "[]"
    return _PG_TYPE_NAMES.get(name, name.lower())


@dataclass(frozen=True, slots=True)
class _Wording:
    """PostgreSQL's wording for one DuckDB message (its first line, without the prefix)."""

    pattern: re.Pattern[str]
    sqlstate: SqlState
    message: str  # str.format'ed with the pattern's groups (`type` groups renamed first)
    detail: str | None = None
    hint: str | None = None


def _key(text: str) -> tuple[str, str]:
    """DuckDB's 'a: 1, b: x' key text as PostgreSQL's ('a, b', '1, x')."""
    pairs = [p.split(": ", 1) for p in text.split(", ")]
    if not all(len(p) == 2 for p in pairs):
        return "?", text
    return ", ".join(p[0] for p in pairs), ", ".join(p[1] for p in pairs)


_W = _Wording
_FUNCTION_HINT = ("No function matches the given name and argument types. You might need to "
                  "add explicit type casts.")
_WORDINGS: tuple[_Wording, ...] = (
    _W(re.compile(r"Table with name (?P<name>.+?) does not exist"), _S.UNDEFINED_TABLE,
       'relation "{name}" does not exist'),
    _W(re.compile(r"Sequence with name (?P<name>.+?) does not exist"), _S.UNDEFINED_TABLE,
       'relation "{name}" does not exist'),
    # (what depends on an object is known to DuckDB only: planner.existence names it where it can)
    _W(re.compile(r'Cannot drop entry "(?P<name>[^"]+)" because there are entries that depend '
                  r"on it"), _S.DEPENDENT_OBJECTS_STILL_EXIST,
       "cannot drop {name} because other objects depend on it",
       hint="Use DROP ... CASCADE to drop the dependent objects too."),
    _W(re.compile(r"The specified columns as conflict target are not referenced by a UNIQUE/"
                  r"PRIMARY KEY CONSTRAINT or INDEX"), _S.INVALID_COLUMN_REFERENCE,
       "there is no unique or exclusion constraint matching the ON CONFLICT specification",
       hint="If the target is a unique index with a WHERE clause: Heron keeps one as an index "
            "over expressions, which ON CONFLICT cannot name; test for the conflicting rows "
            "with NOT EXISTS instead."),
    _W(re.compile(r'Referenced column "(?P<name>[^"]+)" not found'), _S.UNDEFINED_COLUMN,
       'column "{name}" does not exist'),
    _W(re.compile(r'Table "(?P<table>[^"]+)" does not have a column named "(?P<name>[^"]+)"'),
       _S.UNDEFINED_COLUMN, "column {table}.{name} does not exist"),
    _W(re.compile(r'Table "(?P<table>[^"]+)" does not have a column with name "(?P<name>[^"]+)"'),
       _S.UNDEFINED_COLUMN, 'column "{name}" of relation "{table}" does not exist'),
    _W(re.compile(r"Referenced update column (?P<name>\S+) not found"), _S.UNDEFINED_COLUMN,
       'column "{name}" does not exist'),
    _W(re.compile(r"[Dd]ivision by zero"), _S.DIVISION_BY_ZERO, "division by zero"),
    _W(re.compile(r"Could not convert string '(?P<value>.*)' to (?P<type>[\w ]+?)$"),
       _S.INVALID_TEXT_REPRESENTATION, 'invalid input syntax for type {type}: "{value}"'),
    _W(re.compile(r'invalid (?P<type>date|timestamp) field format: "(?P<value>.*)", expected'),
       _S.INVALID_DATETIME_FORMAT, 'invalid input syntax for type {type}: "{value}"'),
    _W(re.compile(r'(?:date|timestamp|time) field value out of range: "(?P<value>.*)"'),
       _S.DATETIME_FIELD_OVERFLOW, 'date/time field value out of range: "{value}"'),
    _W(re.compile(r'Malformed JSON'), _S.INVALID_TEXT_REPRESENTATION,
       "invalid input syntax for type json"),
    _W(re.compile(r"Overflow in \w+ of (?P<type>[A-Z0-9]+)"), _S.NUMERIC_VALUE_OUT_OF_RANGE,
       "{type} out of range"),
    _W(re.compile(r"Type \S+ with value .* can't be cast because the value is out of range for "
                  r"the destination type (?P<type>[A-Z0-9]+)"), _S.NUMERIC_VALUE_OUT_OF_RANGE,
       "{type} out of range"),
    _W(re.compile(r"(?:Could not cast value \S+|Casting value \"[^\"]*\"|Could not convert "
                  r"string \"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\") to (?:type )?"
                  r"DECIMAL\((?P<precision>\d+),(?P<scale>\d+)\)"), _S.NUMERIC_VALUE_OUT_OF_RANGE,
       "numeric field overflow", "A field with precision {precision}, scale {scale} must round "
       "to an absolute value less than {bound}."),
    _W(re.compile(r"^negative substring length not allowed"), _S.SUBSTRING_ERROR,
       "negative substring length not allowed"),
    _W(re.compile(r"cannot take square root of a negative number"),
       _S.INVALID_ARGUMENT_FOR_POWER_FUNCTION, "cannot take square root of a negative number"),
    _W(re.compile(r"(?P<what>zero raised to a negative power is undefined|a negative number "
                  r"raised to a non-integer power yields a complex result)"),
       _S.INVALID_ARGUMENT_FOR_POWER_FUNCTION, "{what}"),
    _W(re.compile(r"(?P<what>count must be greater than zero|lower bound cannot equal upper "
                  r"bound)"), _S.INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "{what}"),
    _W(re.compile(r"(?P<what>field position must not be zero)"), _S.INVALID_PARAMETER_VALUE,
       "{what}"),
    _W(re.compile(r"(?P<what>timestamps cannot be binned into intervals containing months or "
                  r"years)"), _S.FEATURE_NOT_SUPPORTED, "{what}"),
    _W(re.compile(r"(?P<what>stride must be greater than zero)"), _S.DATETIME_FIELD_OVERFLOW,
       "{what}"),
    _W(re.compile(r"(?P<what>number of elements to trim must be between 0 and \d+)"),
       _S.ARRAY_SUBSCRIPT_ERROR, "{what}"),
    _W(re.compile(r"cannot take logarithm of (?P<what>zero|a negative number)"),
       _S.INVALID_ARGUMENT_FOR_LOGARITHM, "cannot take logarithm of {what}"),
    _W(re.compile(r'Duplicate key "(?P<key>.*)" violates (?:primary key|unique) constraint'),
       _S.UNIQUE_VIOLATION, "duplicate key value violates unique constraint",
       "Key ({key_columns})=({key_values}) already exists."),
    _W(re.compile(r'PRIMARY KEY or UNIQUE constraint violation: duplicate key "(?P<values>.*)"'),
       _S.UNIQUE_VIOLATION, "duplicate key value violates unique constraint",
       "Key ({values}) already exists."),  # (`statement` names the columns)
    _W(re.compile(r"NOT NULL constraint failed: (?P<table>[^.\s]+)\.(?P<column>\S+)"),
       _S.NOT_NULL_VIOLATION,
       'null value in column "{column}" of relation "{table}" violates not-null constraint'),
    _W(re.compile(r"CHECK constraint failed on table \"?(?P<table>[^\"\s]+)\"? with expression "
                  r"CHECK\(\(length\(\"?(?P<column>[^\")]+)\"?\) <= (?P<limit>\d+)\)\)"),
       _S.STRING_DATA_RIGHT_TRUNCATION, _TOO_LONG),
    _W(re.compile(r"CHECK constraint failed on table \"?(?P<table>[^\"\s]+)\"? with expression "
                  r"CHECK\(\((?P<limit>\d+) >= length\(rtrim\("),
       _S.STRING_DATA_RIGHT_TRUNCATION, _TOO_LONG_BLANK_PADDED),
    _W(re.compile(r"CHECK constraint failed on table \"?(?P<table>[^\"\s]+)\"?"),
       _S.CHECK_VIOLATION, 'new row for relation "{table}" violates check constraint'),
    _W(re.compile(r"(?:Scalar|Aggregate|Table|Macro) Function with name (?P<name>\S+) does not "
                  r"exist"), _S.UNDEFINED_FUNCTION, "function {name} does not exist",
       hint=_FUNCTION_HINT),
    # (a LANGUAGE sql function's macro, `sql_functions`, given arguments of other types)
    _W(re.compile(r"Macro (?P<name>\S+?)\(\) does not support the supplied arguments"),
       _S.UNDEFINED_FUNCTION, "function {name} does not exist", hint=_FUNCTION_HINT),
    _W(re.compile(r"No function matches the given name and argument types "
                  r"'(?P<name>[^(]+)\((?P<args>.*)\)'"), _S.UNDEFINED_FUNCTION,
       "function {name}({args}) does not exist", hint=_FUNCTION_HINT),
    _W(re.compile(r'Could not choose a best candidate function for the function call '
                  r'"(?P<name>[^(]+)\((?P<args>.*)\)"'), _S.UNDEFINED_FUNCTION,
       "operator is not unique: {name}({args})",
       hint="Could not choose a best candidate operator. You might need to add explicit type "
            "casts."),
    _W(re.compile(r"Table with name (?P<name>.+?) already exists"), _S.DUPLICATE_TABLE,
       'relation "{name}" already exists'),
    # (`statement` adds the relation's name, which DuckDB's message lacks)
    _W(re.compile(r'Column with name "(?P<name>[^"]+)" already exists'), _S.DUPLICATE_COLUMN,
       'column "{name}" already exists'),
    _W(re.compile(r"Schema with name (?P<name>.+?) does not exist"), _S.INVALID_SCHEMA_NAME,
       'schema "{name}" does not exist'),
    _W(re.compile(r'column "(?P<name>[^"]+)" must appear in the GROUP BY clause'),
       _S.GROUPING_ERROR,
       'column "{name}" must appear in the GROUP BY clause or be used in an aggregate function'),
    _W(re.compile(r'Ambiguous reference to column name "(?P<name>[^"]+)"'), _S.AMBIGUOUS_COLUMN,
       'column reference "{name}" is ambiguous'),
    _W(re.compile(r"Conflict on"), _S.SERIALIZATION_FAILURE,
       "could not serialize access due to concurrent update",
       hint="Another transaction changed the same rows; retry the transaction."),
    _W(re.compile(r"Current transaction is aborted"), _S.IN_FAILED_SQL_TRANSACTION,
       "current transaction is aborted, commands ignored until end of transaction block"),
    _W(re.compile(r"^Interrupted"), _S.QUERY_CANCELED, "canceling statement due to user request"),
)


def _worded(first_line: str, sqlstate: SqlState) -> SqlError | None:
    for wording in _WORDINGS:
        m = wording.pattern.search(first_line)
        if m is None:
            continue
        values = {k: v.strip('"!') for k, v in m.groupdict().items() if v is not None}
        if "type" in values:
            values["type"] = pg_type_name(values["type"])
        if "args" in values:
            values["args"] = ", ".join(pg_type_name(a) for a in values["args"].split(", ") if a)
        if "key" in values:
            values["key_columns"], values["key_values"] = _key(values["key"])
        if "precision" in values:  # numeric(p, s) holds less than 10^(p - s)
            digits = int(values["precision"]) - int(values["scale"])
            values["bound"] = f"10^{digits}" if digits > 0 else "1"
        detail = wording.detail.format(**values) if wording.detail else None
        return SqlError(wording.sqlstate, wording.message.format(**values), detail, wording.hint)
    return None


# How a `SqlError` raised in a Python function reaches `from_duckdb` through DuckDB's message:
# "... executing the UDF: ValueError: heron-sqlerror {json of its fields}".
_CARRIED_MARK = "heron-sqlerror "
_CARRIED = re.compile(r"executing the UDF: \w+: " + _CARRIED_MARK + r"(?P<fields>\{.*\})",
                      re.DOTALL)


def carried(error: SqlError) -> ValueError:
    """`error` as the exception a Python function registered in DuckDB raises (DuckDB reports
    only its message), for `from_duckdb` to read back."""
    return ValueError(_CARRIED_MARK + json.dumps(
        {"sqlstate": str(error.sqlstate), "message": error.message, "detail": error.detail,
         "hint": error.hint}))


def carrying(function: Callable[..., Any], arity: int) -> Callable[..., Any]:
    """`function` as a Python function for DuckDB: its `SqlError`s `carried`, taking `arity`
    (1 to 4) parameters (DuckDB counts a Python function's own), NULL for a NULL argument
    (DuckDB's "special" NULL handling lets a function return NULL, and passes it NULLs)."""
    def call(*args: Any) -> Any:
        if any(arg is None for arg in args):  # strict, as PostgreSQL's functions are
            return None
        try:
            return function(*args)
        except SqlError as exc:
            raise carried(exc) from None

    if arity == 1:
        return lambda value: call(value)
    if arity == 2:
        return lambda first, second: call(first, second)
    if arity == 3:
        return lambda first, second, third: call(first, second, third)
    return lambda first, second, third, fourth: call(first, second, third, fourth)


def from_duckdb(exc: BaseException) -> SqlError:
    """The `SqlError` PostgreSQL would raise for a DuckDB error (an exception of DuckDB's, or an
    Arrow error carrying DuckDB's message, or a `carried` one)."""
    text = str(exc)
    if _CARRIED_MARK in text and (m := _CARRIED.search(text)) is not None:
        fields = json.loads(m["fields"])
        return SqlError(SqlState(fields["sqlstate"]), fields["message"], fields["detail"],
                        fields["hint"])
    prefix = _PREFIX.match(text)
    cls: type[BaseException] = type(exc)
    if not isinstance(exc, duckdb.Error) or (prefix and prefix["name"] == "INTERRUPT"):
        # (an interruption can surface as another class, as one ending a Python function's
        # wait did under statement_timeout: XX000 instead of 57014)
        cls = _PREFIX_CLASSES.get(prefix["name"], duckdb.Error) if prefix else duckdb.Error
    code = next(code for base, code in _DUCKDB_CODES if issubclass(cls, base))
    body = _DIAGRAM.sub("", _PREFIX.sub("", text, count=1)).strip()
    first, _, rest = body.partition("\n")
    if (worded := _worded(first.strip(), code)) is not None:
        return worded
    for base, pattern, refined in _REFINEMENTS:
        if code == base and pattern.search(text):
            code = refined
            break
    return SqlError(code, first.strip(), rest.strip() or None)

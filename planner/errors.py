"""SQL errors with PostgreSQL SQLSTATEs.

Contract: every error a client can see is a `SqlError` carrying a `SqlState` (PostgreSQL's
condition names, appendix A of its manual), a message and optionally a detail and a hint. An error
raised from more than one place is built by one function here, so its wording cannot drift.
`from_duckdb` translates DuckDB's exception classes (and the few messages that name a more
specific condition) into the codes PostgreSQL would send for the same mistake.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

import duckdb


class SqlState(enum.StrEnum):
    """The SQLSTATEs Heron sends, named as in PostgreSQL's errcodes table."""

    SUCCESSFUL_COMPLETION = "00000"  # NOTICE messages
    PROTOCOL_VIOLATION = "08P01"
    FEATURE_NOT_SUPPORTED = "0A000"
    DATA_EXCEPTION = "22000"
    CHARACTER_NOT_IN_REPERTOIRE = "22021"
    NUMERIC_VALUE_OUT_OF_RANGE = "22003"
    DIVISION_BY_ZERO = "22012"
    INVALID_PARAMETER_VALUE = "22023"
    INVALID_TEXT_REPRESENTATION = "22P02"
    INVALID_BINARY_REPRESENTATION = "22P03"
    INTEGRITY_CONSTRAINT_VIOLATION = "23000"
    NOT_NULL_VIOLATION = "23502"
    FOREIGN_KEY_VIOLATION = "23503"
    UNIQUE_VIOLATION = "23505"
    INVALID_TRANSACTION_STATE = "25000"
    ACTIVE_SQL_TRANSACTION = "25001"
    IN_FAILED_SQL_TRANSACTION = "25P02"
    INVALID_SQL_STATEMENT_NAME = "26000"
    DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
    INVALID_AUTHORIZATION_SPECIFICATION = "28000"
    INVALID_PASSWORD = "28P01"
    INVALID_CURSOR_NAME = "34000"
    INVALID_SCHEMA_NAME = "3F000"
    SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION = "42000"
    INSUFFICIENT_PRIVILEGE = "42501"
    SYNTAX_ERROR = "42601"
    UNDEFINED_COLUMN = "42703"
    AMBIGUOUS_COLUMN = "42702"
    GROUPING_ERROR = "42803"
    UNDEFINED_FUNCTION = "42883"
    UNDEFINED_TABLE = "42P01"
    DUPLICATE_CURSOR = "42P03"
    DUPLICATE_PREPARED_STATEMENT = "42P05"
    DUPLICATE_TABLE = "42P07"
    UNDEFINED_OBJECT = "42704"
    DUPLICATE_OBJECT = "42710"
    OUT_OF_MEMORY = "53200"
    OBJECT_NOT_IN_PREREQUISITE_STATE = "55000"
    OBJECT_IN_USE = "55006"
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
    (_S.DATA_EXCEPTION, re.compile(r"[Dd]ivision by zero"), _S.DIVISION_BY_ZERO),
]

# DuckDB prefixes messages with their class ("Catalog Error: ..."); clients show the SQLSTATE.
_PREFIX = re.compile(r"^[A-Z][A-Za-z ]* Error: ")


def from_duckdb(exc: duckdb.Error) -> SqlError:
    code = next(code for cls, code in _DUCKDB_CODES if isinstance(exc, cls))
    text = str(exc)
    for base, pattern, refined in _REFINEMENTS:
        if code == base and pattern.search(text):
            code = refined
            break
    message, _, detail = _PREFIX.sub("", text, count=1).partition("\n")
    return SqlError(code, message.strip(), detail.strip() or None)

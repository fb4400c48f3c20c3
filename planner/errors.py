"""SQL errors with PostgreSQL SQLSTATEs.

Contract: every error a client can see is a `SqlError` carrying a SQLSTATE, a message and optionally
a detail and a hint; `from_duckdb` translates DuckDB's exception classes (and the few messages that
name a more specific condition) into the codes PostgreSQL would send for the same mistake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb


@dataclass
class SqlError(Exception):
    sqlstate: str
    message: str
    detail: str | None = None
    hint: str | None = None
    severity: str = "ERROR"

    def __str__(self) -> str:
        return self.message


# Checked in order: the first class the exception is an instance of decides the code.
_DUCKDB_CODES: list[tuple[type[BaseException], str]] = [
    (duckdb.InterruptException, "57014"),  # query_canceled
    (duckdb.ParserException, "42601"),  # syntax_error
    (duckdb.CatalogException, "42P01"),  # undefined_table (refined below)
    (duckdb.BinderException, "42703"),  # undefined_column (refined below)
    (duckdb.ConversionException, "22P02"),  # invalid_text_representation
    (duckdb.OutOfRangeException, "22003"),  # numeric_value_out_of_range
    (duckdb.ConstraintException, "23000"),  # integrity_constraint_violation (refined below)
    (duckdb.TransactionException, "25000"),  # invalid_transaction_state
    (duckdb.InvalidInputException, "22023"),  # invalid_parameter_value
    (duckdb.NotImplementedException, "0A000"),  # feature_not_supported
    (duckdb.PermissionException, "42501"),  # insufficient_privilege
    (duckdb.IOException, "58030"),  # io_error
    (duckdb.OutOfMemoryException, "53200"),  # out_of_memory
    (duckdb.ProgrammingError, "42000"),  # syntax_error_or_access_rule_violation
    (duckdb.DataError, "22000"),  # data_exception
    (duckdb.Error, "XX000"),  # internal_error
]

_REFINEMENTS: list[tuple[str, re.Pattern[str], str]] = [
    ("42P01", re.compile(r"Schema with name .* does not exist"), "3F000"),
    ("42P01", re.compile(r"(Scalar|Table|Aggregate) Function with name .* does not exist"),
     "42883"),
    ("42P01", re.compile(r"already exists"), "42P07"),
    ("42703", re.compile(r"No function matches|Could not choose a best candidate"), "42883"),
    ("42703", re.compile(r"(must appear in the GROUP BY|aggregate)"), "42803"),
    ("23000", re.compile(r"NOT NULL constraint"), "23502"),
    ("23000", re.compile(r"(PRIMARY KEY|UNIQUE) constraint|Duplicate key"), "23505"),
    ("23000", re.compile(r"foreign key", re.IGNORECASE), "23503"),
    ("22023", re.compile(r"[Dd]ivision by zero"), "22012"),
    ("22000", re.compile(r"[Dd]ivision by zero"), "22012"),
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

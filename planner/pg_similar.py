"""SQL's SIMILAR TO as PostgreSQL reads it, over DuckDB's regular expressions.

DuckDB's `x SIMILAR TO p` reads `p` as a regular expression (`%` and `_` are ordinary
characters, `.` matches anything), so `'banana' SIMILAR TO '%an%'` is false there and true in
PostgreSQL: a silently wrong answer. PostgreSQL turns the pattern into a regular expression
anchored at both ends (similar_to_escape): `%` is `.*`, `_` is `.`, the escape character (a
backslash unless ESCAPE says otherwise; none for ESCAPE '') makes the next character literal, and
`.`, `^`, `$` and a backslash are literal; `|`, `*`, `+`, `?`, `{m,n}`, `( )` and bracket
expressions keep their regular-expression meaning.

Contract:
- `regex(pattern, escape)` is that regular expression, for DuckDB's regexp_full_match (RE2
  syntax). An escape of more than one character raises `SqlError` 22025, as PostgreSQL does.
- `FUNCTION` names `regex` as the DuckDB function `register(con)` registers (VARCHAR, VARCHAR ->
  VARCHAR, NULL for a NULL argument), for patterns known only when a statement runs;
  `pg_semantics.rewrite` turns SIMILAR TO into regexp_full_match of a constant pattern's
  regular expression, or of this function's.
"""

from __future__ import annotations

import duckdb

from heron.planner.errors import SqlError, SqlState, carried

FUNCTION = "heron_similar_to_regex"
DEFAULT_ESCAPE = "\\"
# Characters a regular expression reads as operators (RE2 refuses other escaped punctuation).
_SPECIAL = frozenset(".^$|?*+()[]{}\\")


def regex(pattern: str, escape: str | None = DEFAULT_ESCAPE) -> str:
    if escape is not None and len(escape) > 1:
        raise SqlError(SqlState.INVALID_ESCAPE_SEQUENCE, "invalid escape string",
                       hint="Escape string must be empty or one character.")
    out = ["^(?:"]
    after_escape = in_class = False
    for char in pattern:
        if after_escape:
            # a letter or digit keeps its backslash (PostgreSQL's `\d` is a digit class too)
            out.append("\\" + char if char.isalnum() or char in _SPECIAL else char)
            after_escape = False
        elif escape and char == escape:
            after_escape = True
        elif in_class:
            out.append("\\\\" if char == "\\" else char)
            in_class = char != "]"
        elif char == "[":
            out.append(char)
            in_class = True
        elif char == "%":
            out.append(".*")
        elif char == "_":
            out.append(".")
        elif char == "(":
            out.append("(?:")  # PostgreSQL's groups capture nothing a match reports
        elif char in "\\.^$":  # literal in SIMILAR TO
            out.append("\\" + char)
        else:
            out.append(char)
    out.append(")$")
    return "".join(out)


def register(con: duckdb.DuckDBPyConnection) -> None:
    def function(pattern: str, escape: str) -> str:
        try:
            return regex(pattern, escape)
        except SqlError as exc:
            raise carried(exc) from None

    con.create_function(FUNCTION, function, ["VARCHAR", "VARCHAR"], "VARCHAR")

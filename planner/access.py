"""Server privileges: which statements a role may run beyond reading and writing tables.

Contract: `Privileges.check(con, sql, role, main_database=..., generation=...)` raises
`SqlError` 42501 (PostgreSQL's insufficient_privilege, with a hint saying what to do instead)
when the statement `sql` needs a privilege `role` lacks, and returns None otherwise; nothing
runs (the check reads only the text and DuckDB's function and relation catalogs, never a file).
Superusers may do everything except detach the database Heron serves or the shared macros'
(`heron.planner.shared_macros`), which nobody may (55006). Other roles:
- reading server files — `read_csv(...)` and DuckDB's other file-reading table functions, a file
  named where a table goes (`FROM 'x.csv'`, `FROM "x.csv"`, `FROM data.parquet`,
  `DESCRIBE 'x.csv'`, ...), `COPY t FROM 'file'` — needs the privileges of pg_read_server_files;
- writing them (`COPY ... TO 'file'`) needs pg_write_server_files;
- ATTACH, DETACH, USE, INSTALL/LOAD, EXPORT/IMPORT DATABASE, COPY FROM DATABASE, secrets, DuckDB's
  settings (`SET GLOBAL`, and plain SET of a DuckDB setting other than `search_path`/`schema`),
  PRAGMAs other than the read-only catalog ones, and table functions that run SQL text or show
  secrets and logs (`query`, `query_table`, `duckdb_secrets`, ...) need a superuser.
The scan works on tokens, so a name inside a string, a comment or a quoted identifier is not a
call, and every call anywhere in the statement (subqueries, CTEs, view and macro bodies being
created) counts. A role that no longer exists has no privileges.

`Privileges` checks a session's statements: what one needs depends only on its text and
DuckDB's catalogs, so it is found once per text and catalog generation (the server's count of
statements that changed the catalog). The names of DuckDB's table functions come from the
caller (`catalog.Database.table_functions` keeps them per generation: listing them scans every
function, ~20 ms, which would otherwise be paid for every statement that calls a function).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Set
from dataclasses import dataclass

import duckdb
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from heron.catalog.roles import Predefined, Role
from heron.planner.errors import SqlError, SqlState
from heron.planner.pg_catalog_functions import SHARED_DATABASE

_TOKENIZER = DuckDB().tokenizer_class


class Privilege(enum.Enum):
    READ_SERVER_FILES = "pg_read_server_files"
    WRITE_SERVER_FILES = "pg_write_server_files"
    SUPERUSER = "superuser"


@dataclass(frozen=True, slots=True)
class Requirement:
    """A privilege the statement needs, and what in it needs it (for the message)."""

    privilege: Privilege
    what: str


# Table functions every role may call: generators and read-only catalog views.
SAFE_TABLE_FUNCTIONS = frozenset({
    "generate_series", "range", "unnest", "repeat", "repeat_row", "json_each", "json_tree",
    "test_all_types", "test_vector_types", "histogram", "histogram_values", "summary",
    "pg_timezone_names", "icu_calendar_names", "checkpoint", "force_checkpoint",
    "duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies",
    "duckdb_extensions", "duckdb_functions", "duckdb_indexes", "duckdb_keywords",
    "duckdb_schemas", "duckdb_sequences", "duckdb_settings", "duckdb_tables", "duckdb_types",
    "duckdb_views", "duckdb_variables", "duckdb_memory", "duckdb_optimizers",
    "duckdb_prepared_statements", "duckdb_temporary_files", "duckdb_approx_database_count",
    "duckdb_connection_count", "duckdb_dialects", "duckdb_available_metrics",
    "duckdb_profiling_settings", "duckdb_table_sample", "duckdb_coordinate_systems",
    "pragma_collations", "pragma_database_size", "pragma_metadata_info", "pragma_platform",
    "pragma_show", "pragma_storage_info", "pragma_table_info", "pragma_user_agent",
    "pragma_version",
})
# Table functions that read files (or other databases) by name; the rest need a superuser.
_FILE_READER = re.compile(r"^(?:read_\w+|parquet_\w+|sniff_csv|glob|\w+_scan|\w+_attach)$")
_NOT_FILE_READERS = frozenset({"seq_scan", "arrow_scan", "arrow_scan_dumb", "pandas_scan",
                               "python_arrow_scan"})
SAFE_PRAGMAS = frozenset({
    "table_info", "show_tables", "show_tables_expanded", "database_list", "database_size",
    "version", "platform", "storage_info", "show", "functions", "collations", "user_agent",
    "metadata_info", "show_databases",
})
SAFE_SETTINGS = frozenset({"search_path", "schema"})  # DuckDB's per-connection name look-up
# Extensions of files DuckDB (or an extension it may load) reads when a table name is one.
FILE_EXTENSIONS = frozenset({
    "csv", "tsv", "txt", "parquet", "json", "jsonl", "ndjson", "gz", "zst", "zstd", "xlsx",
    "arrow", "ipc", "feather", "avro", "orc", "db", "sqlite", "sqlite3", "duckdb", "geojson",
    "shp", "gpkg", "xml",
})
_SUPERUSER_VERBS = {
    "ATTACH": "ATTACH", "DETACH": "DETACH", "USE": "USE", "INSTALL": "INSTALL",
    "FORCE": "INSTALL", "LOAD": "LOAD", "EXPORT": "EXPORT DATABASE",
    "IMPORT": "IMPORT DATABASE", "UPDATE EXTENSIONS": "UPDATE EXTENSIONS",
}
# Keywords after which a table reference (or a file DuckDB reads in its place) follows.
_TABLE_KEYWORDS = {TokenType.FROM, TokenType.JOIN, TokenType.USING, TokenType.TABLE,
                   TokenType.DESCRIBE, TokenType.SUMMARIZE, TokenType.PIVOT, TokenType.UNPIVOT}
_CLAUSE_KEYWORDS = {TokenType.SELECT, TokenType.WHERE, TokenType.GROUP_BY, TokenType.ORDER_BY,
                    TokenType.HAVING, TokenType.LIMIT, TokenType.QUALIFY, TokenType.WINDOW,
                    TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT, TokenType.ON,
                    TokenType.SET, TokenType.VALUES, TokenType.RETURNING, TokenType.OFFSET}
_NAME_TOKENS = {TokenType.VAR, TokenType.IDENTIFIER}


@dataclass(frozen=True, slots=True)
class Needs:
    """What running one statement text takes: the database it detaches (lower case), if it is
    a DETACH, and the privileges beyond those of every role."""

    detached: str | None
    requirements: tuple[Requirement, ...]


NEEDS_NOTHING = Needs(None, ())


class Privileges:
    """`check` for one session: each statement text's `Needs` kept while the catalog's
    generation lasts. Per session, as its cached statements are: a text is judged by the
    relations this session sees, not by another's uncommitted ones."""

    def __init__(self, table_functions: Callable[[], Set[str]], capacity: int = 1024
                 ) -> None:
        self._table_functions = table_functions
        self._capacity = capacity
        self._generation: int | None = None
        self._needs: dict[str, Needs] = {}

    def check(self, con: duckdb.DuckDBPyConnection, sql: str, role: Role | None, *,
              main_database: str, generation: int) -> None:
        """Refuse `sql` (42501, or 55006 for a DETACH of what Heron serves) when `role` lacks a
        privilege it needs; `generation` is the catalog's as `con` sees it."""
        superuser = role is not None and role.superuser
        if superuser and "detach" not in sql.lower():
            return  # nothing to check: not tokenizing saves ~5 % of a `SELECT 1`'s server time
        if self._generation != generation:
            self._generation = generation
            self._needs.clear()
        needs = self._needs.get(sql)
        if needs is None:
            if len(self._needs) >= self._capacity:
                self._needs.clear()  # a client that never repeats itself: start over
            needs = self._needs[sql] = needs_of(con, sql, self._table_functions)
        if needs.detached is not None:
            _check_detach(needs.detached, main_database)
        if superuser:
            return
        for requirement in needs.requirements:
            if not _has(role, requirement.privilege):
                raise _refusal(requirement)


def needs_of(con: duckdb.DuckDBPyConnection, sql: str,
             functions: Callable[[], Set[str]]) -> Needs:
    """What `sql` needs; `functions` gives the names of DuckDB's table functions (asked only
    when the statement calls something)."""
    try:
        tokens = _tokenize(sql)
    except TokenError:
        return NEEDS_NOTHING  # DuckDB refuses it as a syntax error before anything runs
    if not tokens:
        return NEEDS_NOTHING
    detached = _detached_name(tokens) if tokens[0].text.upper() == "DETACH" else None
    return Needs(detached, tuple(requirements(con, tokens, functions)))


def _check_detach(detached: str, main_database: str) -> None:
    if detached == main_database.lower():
        raise SqlError(SqlState.OBJECT_IN_USE,
                       f'cannot detach database "{main_database}": Heron serves it',
                       hint="ATTACH another database under a new name and leave this one.")
    if detached == SHARED_DATABASE:
        raise SqlError(SqlState.OBJECT_IN_USE,
                       f'cannot detach database "{SHARED_DATABASE}": every session\'s '
                       "PostgreSQL functions live in it",
                       hint="ATTACH another database under a new name and leave this one.")


def _tokenize(sql: str) -> list[Token]:
    """sqlglot's tokens, except that the rest of a command (CALL ..., EXECUTE ...), which the
    tokenizer keeps as one string, is tokenized too."""
    tokens = _TOKENIZER().tokenize(sql)
    for i, token in enumerate(tokens[:-1]):
        if token.token_type in _TOKENIZER.COMMANDS and tokens[i + 1].token_type == (
                TokenType.STRING):
            return tokens[:i + 1] + _tokenize(sql[token.end + 1:])
    return tokens


def requirements(con: duckdb.DuckDBPyConnection, tokens: list[Token],
                 functions: Callable[[], Set[str]]) -> list[Requirement]:
    """The privileges the statement `tokens` (not empty) spell needs, beyond those of every
    role."""
    needed = _statement_requirements(con, tokens)
    needed += _call_requirements(tokens, functions)
    needed += [Requirement(Privilege.READ_SERVER_FILES, f"reading the file {name!r}")
               for name in _files_named_as_tables(con, tokens)]
    return needed


def _has(role: Role | None, privilege: Privilege) -> bool:
    if role is None:
        return False
    if privilege is Privilege.SUPERUSER:
        return role.superuser
    return role.has_privileges_of(Predefined(privilege.value))


def _refusal(requirement: Requirement) -> SqlError:
    if requirement.privilege is Privilege.SUPERUSER:
        return SqlError(SqlState.INSUFFICIENT_PRIVILEGE,
                        f"permission denied: {requirement.what} needs a superuser",
                        hint="Ask a superuser to run it.")
    role = requirement.privilege.value
    return SqlError(SqlState.INSUFFICIENT_PRIVILEGE,
                    f"permission denied: {requirement.what} needs superuser or the privileges "
                    f"of the {role} role",
                    hint=f"Send the data from the client instead (COPY ... FROM STDIN / TO "
                    f"STDOUT, psql's \\copy), or ask a superuser to GRANT {role} TO you.")


# -- statements ------------------------------------------------------------------------------


def _statement_requirements(con: duckdb.DuckDBPyConnection, tokens: list[Token]
                            ) -> list[Requirement]:
    words = [t.text.upper() for t in tokens[:3]]
    first = words[0]
    two = " ".join(words[:2])
    superuser = Privilege.SUPERUSER
    if two in _SUPERUSER_VERBS or first in _SUPERUSER_VERBS:
        return [Requirement(superuser, _SUPERUSER_VERBS.get(two) or _SUPERUSER_VERBS[first])]
    if first in {"CREATE", "DROP"} and "SECRET" in words:
        return [Requirement(superuser, f"{first} SECRET")]
    if first == "PRAGMA":
        name = tokens[1].text.lower() if len(tokens) > 1 else ""
        assigns = len(tokens) > 2 and tokens[2].token_type == TokenType.EQ
        if assigns or name not in SAFE_PRAGMAS:
            return [Requirement(superuser, f"PRAGMA {name}")]
    if first in {"SET", "RESET"}:
        return _setting_requirements(con, tokens)
    if first == "COPY":
        return _copy_requirements(tokens)
    return []


def _setting_requirements(con: duckdb.DuckDBPyConnection, tokens: list[Token]
                          ) -> list[Requirement]:
    words = [t.text.upper() for t in tokens]
    verb = words[0]
    rest = words[1:]
    if rest[:1] == ["GLOBAL"]:
        return [Requirement(Privilege.SUPERUSER, f"{verb} GLOBAL")]
    if rest[:1] == ["VARIABLE"]:
        return []
    if rest[:1] in (["SESSION"], ["LOCAL"]):
        rest = rest[1:]
    name = rest[0].lower() if rest else ""
    if name in SAFE_SETTINGS or not _is_duckdb_setting(con, name):
        return []  # a PostgreSQL setting the session answers, or an error DuckDB reports
    return [Requirement(Privilege.SUPERUSER, f'setting parameter "{name}"')]


def _is_duckdb_setting(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_settings() WHERE name = ?",
                               [name]).fetchall()[0][0])


def _copy_requirements(tokens: list[Token]) -> list[Requirement]:
    depth = 0
    for i, token in enumerate(tokens[1:], start=1):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.text.upper() in {"FROM", "TO"}:
            target = tokens[i + 1] if i + 1 < len(tokens) else None
            if target is None:
                return []
            if target.text.upper() in {"DATABASE", "PROGRAM"}:
                return [Requirement(Privilege.SUPERUSER, f"COPY {token.text.upper()} "
                                    f"{target.text.upper()}")]
            if target.token_type == TokenType.STRING:
                if token.text.upper() == "FROM":
                    return [Requirement(Privilege.READ_SERVER_FILES, "COPY from a file")]
                return [Requirement(Privilege.WRITE_SERVER_FILES, "COPY to a file")]
            return []  # STDIN / STDOUT: the client's side
    return []


def _detached_name(tokens: list[Token]) -> str:
    names = [t.text for t in tokens[1:] if t.text.upper() not in {"DATABASE", "IF", "EXISTS"}]
    return names[0].lower() if names else ""


# -- function calls ---------------------------------------------------------------------------


def _call_requirements(tokens: list[Token], functions: Callable[[], Set[str]]
                       ) -> list[Requirement]:
    called = {t.text.lower() for t, following in zip(tokens, tokens[1:], strict=False)
              if following.token_type == TokenType.L_PAREN and _is_name(t)}
    if not called:
        return []
    # A file reader counts even when its extension is not loaded yet: DuckDB may autoload it.
    readers = {n for n in called if _FILE_READER.match(n) and n not in _NOT_FILE_READERS}
    unknown = called - readers - SAFE_TABLE_FUNCTIONS
    others = unknown & functions() if unknown else set()
    return [*(Requirement(Privilege.READ_SERVER_FILES, f"{name}()") for name in sorted(readers)),
            *(Requirement(Privilege.SUPERUSER, f"{name}()") for name in sorted(others))]


def _is_name(token: Token) -> bool:
    return token.token_type in _NAME_TOKENS or bool(re.fullmatch(r"[A-Za-z_]\w*", token.text))


# -- files named as tables --------------------------------------------------------------------


def _files_named_as_tables(con: duckdb.DuckDBPyConnection, tokens: list[Token]) -> list[str]:
    """Names in table position that DuckDB would read as files (replacement scans)."""
    files = []
    clause: list[TokenType | None] = [None]  # per parenthesis depth: the clause we are in
    previous: Token | None = None
    for i, token in enumerate(tokens):
        kind = token.token_type
        if kind == TokenType.L_PAREN:
            clause.append(None)
        elif kind == TokenType.R_PAREN and len(clause) > 1:
            clause.pop()
        elif kind in _TABLE_KEYWORDS:
            clause[-1] = TokenType.FROM
        elif kind in _CLAUSE_KEYWORDS:
            clause[-1] = kind
        elif previous is not None and _starts_table_reference(previous, clause[-1]):
            name = _file_reference(con, tokens, i)
            if name is not None:
                files.append(name)
        previous = token
    return files


def _starts_table_reference(previous: Token, clause: TokenType | None) -> bool:
    return previous.token_type in _TABLE_KEYWORDS or (
        previous.token_type == TokenType.COMMA and clause == TokenType.FROM)


def _file_reference(con: duckdb.DuckDBPyConnection, tokens: list[Token], i: int) -> str | None:
    """The file the table reference at `tokens[i]` names, or None when it names a relation."""
    first = tokens[i]
    if first.token_type == TokenType.STRING:
        return first.text
    parts: list[Token] = [first]
    j = i + 1
    while j + 1 < len(tokens) and tokens[j].token_type == TokenType.DOT:
        parts.append(tokens[j + 1])
        j += 2
    if j < len(tokens) and tokens[j].token_type == TokenType.L_PAREN:
        return None  # a table function: _call_requirements judges it
    if not all(_is_name(p) or p.token_type == TokenType.IDENTIFIER for p in parts):
        return None
    quoted_path = any(p.token_type == TokenType.IDENTIFIER and re.search(r"[./\\:*?]", p.text)
                      for p in parts)
    if quoted_path:
        return ".".join(p.text for p in parts)
    if len(parts) >= 2 and parts[-1].text.lower() in FILE_EXTENSIONS and not _relation_exists(
            con, [p.text for p in parts]):
        return ".".join(p.text for p in parts)
    return None


def _relation_exists(con: duckdb.DuckDBPyConnection, parts: list[str]) -> bool:
    schema, name = parts[-2].lower(), parts[-1].lower()
    catalog = parts[-3].lower() if len(parts) >= 3 else None
    return bool(con.execute(
        """SELECT count(*) FROM (SELECT database_name, schema_name, table_name AS name
                                 FROM duckdb_tables()
                                 UNION ALL SELECT database_name, schema_name, view_name
                                 FROM duckdb_views())
           WHERE lower(schema_name) = ? AND lower(name) = ?
             AND (? IS NULL OR lower(database_name) = ?)""",
        [schema, name, catalog, catalog]).fetchall()[0][0])

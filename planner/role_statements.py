"""Role statements: CREATE/ALTER/DROP ROLE (or USER), GRANT/REVOKE of predefined roles, and the
owners and privileges of objects.

Contract: `run(sql, roles, actor, con)` reads a statement `planner.statement` classified as
`Kind.ROLE` with PostgreSQL's grammar and applies it to `roles` on behalf of the role `actor`
(the objects it names looked up on the DuckDB connection `con`), returning the `Result`
PostgreSQL would send (command tag, notices).
Supported: `CREATE ROLE|USER name [[WITH] option ...]` (USER implies LOGIN), `ALTER ROLE|USER name
[WITH] option ...`, `ALTER ROLE|USER name RENAME TO new`, `DROP ROLE|USER [IF EXISTS] name [,
...]`, `GRANT pg_read_server_files|pg_write_server_files [, ...] TO name [, ...]` and the matching
REVOKE ... FROM; options SUPERUSER, NOSUPERUSER, LOGIN, NOLOGIN, [ENCRYPTED] PASSWORD 'text' or
NULL (a SCRAM-SHA-256 verifier, as psql's \\password sends, is stored as given; other text is
hashed into one; an empty password clears it, with PostgreSQL's notice), and the no-op options
that describe what Heron does anyway (NOCREATEDB, NOCREATEROLE, NOREPLICATION, NOBYPASSRLS,
INHERIT). Heron keeps no object owners and no privileges on tables, sequences or schemas (every
role may read and write every table), so what would only add to a role's rights is accepted with
a notice saying so, once the roles and objects it names exist (42704, 42P01, 3F000 otherwise):
`GRANT privilege [, ...] | ALL ON [TABLE | SEQUENCE] name [, ...] | ALL TABLES | SEQUENCES IN
SCHEMA s [, ...] | SCHEMA s [, ...] TO role [, ...]` and `ALTER TABLE | VIEW | MATERIALIZED VIEW |
SEQUENCE | TYPE | SCHEMA name OWNER TO role`, as pg_dump writes them after each object. REVOKE
of such privileges, which Heron could not honour, and anything else is refused with 0A000 and a
hint. Only superusers change roles, except that any role may change its own password (42501
otherwise, with PostgreSQL's wording); nobody may drop the current user or the bootstrap
superuser, or take SUPERUSER from the latter. Role changes apply at once, outside DuckDB's
transactions (a ROLLBACK does not undo them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

from heron.catalog.roles import BOOTSTRAP_USER, Predefined, Roles, Verifier
from heron.planner import existence
from heron.planner.errors import SqlError, SqlState
from heron.planner.statement import Result

_TOKEN = re.compile(r"""\s*(?:(?P<quoted>"(?:[^"]|"")*")|(?P<string>'(?:[^']|'')*')|"""
                    r"""(?P<word>[A-Za-z_][\w$]*)|(?P<number>-?\d+)|(?P<other>[^\s]))""")
_NO_OP_OPTIONS = {"NOCREATEDB", "NOCREATEROLE", "NOREPLICATION", "NOBYPASSRLS", "INHERIT"}


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    kind: str  # quoted | string | word | number | other

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else self.text


def _tokens(sql: str) -> list[_Token]:
    tokens, pos = [], 0
    text = sql.strip().rstrip(";").rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # only whitespace is left
            break
        kind = m.lastgroup or "other"
        tokens.append(_Token(m[kind], kind))
        pos = m.end()
    return tokens


def _name(token: _Token | None) -> str:
    """An identifier: folded to lower case unless quoted."""
    if token is None or token.kind not in {"word", "quoted"}:
        raise SqlError(SqlState.SYNTAX_ERROR, "syntax error: a role name is missing",
                       hint="Write e.g. CREATE ROLE alice LOGIN PASSWORD 'secret'.")
    if token.kind == "quoted":
        return token.text[1:-1].replace('""', '"')
    return token.text.lower()


def _unsupported(what: str) -> SqlError:
    return SqlError(SqlState.FEATURE_NOT_SUPPORTED, f"{what} is not supported",
                    hint="Heron's roles have SUPERUSER, LOGIN and PASSWORD, and may be granted "
                    "pg_read_server_files or pg_write_server_files; every role may read and "
                    "write every table.")


def _denied(message: str) -> SqlError:
    return SqlError(SqlState.INSUFFICIENT_PRIVILEGE, message,
                    hint="Only superusers change roles (any role may change its own password).")


@dataclass(frozen=True, slots=True)
class _Options:
    superuser: bool | None = None
    login: bool | None = None
    verifier: Verifier | None | bool = False  # False: not given; None: PASSWORD NULL / ''
    notices: tuple[str, ...] = ()


def _options(tokens: list[_Token]) -> _Options:
    superuser = login = None
    verifier: Verifier | None | bool = False
    notices: tuple[str, ...] = ()
    i = 1 if tokens[:1] and tokens[0].upper == "WITH" else 0
    while i < len(tokens):
        word = tokens[i].upper
        if word in {"SUPERUSER", "NOSUPERUSER"}:
            superuser = word == "SUPERUSER"
        elif word in {"LOGIN", "NOLOGIN"}:
            login = word == "LOGIN"
        elif word in _NO_OP_OPTIONS:
            pass
        elif word in {"PASSWORD", "ENCRYPTED"}:
            if word == "ENCRYPTED":
                i += 1
                if i >= len(tokens) or tokens[i].upper != "PASSWORD":
                    raise SqlError(SqlState.SYNTAX_ERROR, "syntax error: ENCRYPTED must be "
                                   "followed by PASSWORD")
            i += 1
            value = tokens[i] if i < len(tokens) else None
            if value is not None and value.upper == "NULL":
                verifier = None
            elif value is not None and value.kind == "string":
                text = value.text[1:-1].replace("''", "'")
                if not text:
                    verifier = None
                    notices += ("empty string is not a valid password, clearing password",)
                elif text.startswith("md5") and len(text) == 35:
                    raise _unsupported("an MD5 password hash")
                else:
                    verifier = Verifier.parse(text) or Verifier.from_password(text)
            else:
                raise SqlError(SqlState.SYNTAX_ERROR, "syntax error: PASSWORD needs a quoted "
                               "string or NULL", hint="Write PASSWORD 'secret'.")
        else:
            raise _unsupported(f"role option {tokens[i].text}")
        i += 1
    return _Options(superuser, login, verifier, notices)


def run(sql: str, roles: Roles, actor: str, con: duckdb.DuckDBPyConnection) -> Result:
    tokens = _tokens(sql)
    verb = tokens[0].upper
    acting = roles.get(actor)
    is_superuser = acting is not None and acting.superuser
    if verb == "GRANT" and "ON" in [t.upper for t in tokens]:
        return _grant_on(tokens[1:], roles, actor, con)
    if verb in {"GRANT", "REVOKE"}:
        return _grant_or_revoke(verb, tokens[1:], roles, is_superuser)
    if verb == "ALTER" and tokens[1].upper not in {"ROLE", "USER"}:
        return _owner_to(tokens[1:], roles, actor, con)
    if verb == "DROP":
        return _drop(tokens[2:], roles, actor, is_superuser)
    name = _name(tokens[2] if len(tokens) > 2 else None)
    rest = tokens[3:]
    if verb == "CREATE":
        if not is_superuser:
            raise _denied("permission denied to create role")
        options = _options(rest)
        login = options.login if options.login is not None else tokens[1].upper == "USER"
        roles.create(name, superuser=bool(options.superuser), login=login,
                     verifier=options.verifier or None)
        return Result("CREATE ROLE", None, None, notices=options.notices)
    if rest[:2] and [t.upper for t in rest[:2]] == ["RENAME", "TO"]:
        if not is_superuser:
            raise _denied("permission denied to rename role")
        if name == actor:
            raise _unsupported("renaming the current user")
        roles.rename(name, _name(rest[2] if len(rest) > 2 else None))
        return Result("ALTER ROLE", None, None)
    if rest[:1] and rest[0].upper in {"SET", "RESET"}:
        raise _unsupported("per-role settings (ALTER ROLE ... SET)")
    options = _options(rest)
    own_password = (name == actor and options.superuser is None and options.login is None)
    if not (is_superuser or own_password):
        raise _denied("permission denied to alter role")
    if name == BOOTSTRAP_USER and options.superuser is False:
        raise _denied("permission denied to alter role: the bootstrap user must have the "
                      "SUPERUSER attribute")
    roles.alter(name, superuser=options.superuser, login=options.login,
                verifier=options.verifier)
    return Result("ALTER ROLE", None, None, notices=options.notices)


def _names(tokens: list[_Token]) -> list[str]:
    names = []
    for i, token in enumerate(tokens):
        if i % 2:
            if token.text != ",":
                raise SqlError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{token.text}"')
        else:
            names.append(_name(token))
    return names


def _drop(tokens: list[_Token], roles: Roles, actor: str, is_superuser: bool) -> Result:
    if_exists = [t.upper for t in tokens[:2]] == ["IF", "EXISTS"]
    names = _names(tokens[2:] if if_exists else tokens)
    if not is_superuser:
        raise _denied("permission denied to drop role")
    notices = []
    for name in names:
        if name == actor:
            raise SqlError(SqlState.OBJECT_IN_USE, "current user cannot be dropped")
        if name == BOOTSTRAP_USER:
            raise SqlError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                           f"cannot drop role {name} because it is required by the database "
                           "system")
        if roles.get(name) is None and if_exists:
            notices.append(f'role "{name}" does not exist, skipping')
            continue
        roles.drop(name)
    return Result("DROP ROLE", None, None, notices=tuple(notices))


def _grant_or_revoke(verb: str, tokens: list[_Token], roles: Roles, is_superuser: bool
                     ) -> Result:
    words = [t.upper for t in tokens]
    keyword = "TO" if verb == "GRANT" else "FROM"
    if "ON" in words or keyword not in words:
        raise _unsupported(f"{verb} of table and schema privileges")
    split = words.index(keyword)
    granted, members = _names(tokens[:split]), _names(tokens[split + 1:])
    predefined = {p.value: p for p in Predefined}
    for name in granted:
        if name not in predefined:
            raise _unsupported(f"membership in role {name}")
    if not is_superuser:
        raise _denied(f"permission denied to {verb.lower()} role \"{granted[0]}\"")
    for member in members:
        for name in granted:
            (roles.grant if verb == "GRANT" else roles.revoke)(predefined[name], member)
    return Result(f"{verb} ROLE", None, None)


# What Heron answers instead of PostgreSQL's silence where it accepts an owner or a privilege.
_NO_PRIVILEGES = ("Heron keeps no object owners or privileges on tables, sequences and schemas: "
                  "every role may read and write every table")
_ROLE_SPECS = {"CURRENT_USER", "CURRENT_ROLE", "SESSION_USER"}
_PRIVILEGES = {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER",
               "USAGE", "CREATE", "ALL", "PRIVILEGES"}


def _owner_to(tokens: list[_Token], roles: Roles, actor: str,
              con: duckdb.DuckDBPyConnection) -> Result:
    """ALTER kind [IF EXISTS] name OWNER TO role (`planner.statement` matched its shape)."""
    kind = tokens[0].upper
    if kind == "MATERIALIZED":  # MATERIALIZED VIEW: a relation, as TABLE's
        kind, tokens = "MATERIALIZED VIEW", tokens[1:]
    if_exists = [t.upper for t in tokens[1:3]] == ["IF", "EXISTS"]
    parts, _ = _qualified(tokens, 3 if if_exists else 1)
    error = _missing_object(con, kind, parts)
    if error is not None:
        if not if_exists:
            raise error
        return Result(f"ALTER {kind}", None, None,
                      notices=(f'relation "{parts[-1]}" does not exist, skipping',))
    _existing_role(tokens[-1], roles, actor)
    return Result(f"ALTER {kind}", None, None, notices=(_NO_PRIVILEGES,))


def _grant_on(tokens: list[_Token], roles: Roles, actor: str,
              con: duckdb.DuckDBPyConnection) -> Result:
    """GRANT privileges ON objects TO roles: accepted when they all exist."""
    words = [t.upper for t in tokens]
    on = words.index("ON")
    depth = 0  # column lists, as in SELECT (a, b)
    for token in tokens[:on]:
        depth += (token.text == "(") - (token.text == ")")
        if depth == 0 and token.text not in {",", ")"} and token.upper not in _PRIVILEGES:
            raise _unsupported(f"GRANT of {token.text}")
    if "TO" not in words[on:]:
        raise SqlError(SqlState.SYNTAX_ERROR, "syntax error: GRANT ... ON needs TO")
    to = on + words[on:].index("TO")
    kind, i = "TABLE", on + 1
    if words[i] in {"TABLE", "SEQUENCE", "SCHEMA"}:
        kind, i = words[i], i + 1
    elif words[i:i + 3] in (["ALL", "TABLES", "IN"], ["ALL", "SEQUENCES", "IN"]):
        kind, i = "SCHEMA", i + 4
    elif words[i] in {"DATABASE", "FUNCTION", "PROCEDURE", "ROUTINE", "LANGUAGE", "DOMAIN",
                      "TYPE", "FOREIGN", "LARGE", "TABLESPACE", "PARAMETER"}:
        raise _unsupported(f"GRANT ON {tokens[i].text}")
    end = next((j for j in range(to + 1, len(words)) if words[j] in {"WITH", "GRANTED"}),
               len(words))
    for token in tokens[to + 1:end:2]:  # (PostgreSQL looks the roles up first)
        if token.upper != "PUBLIC":
            _existing_role(token, roles, actor)
    while i < to:
        parts, i = _qualified(tokens, i)
        if (error := _missing_object(con, kind, parts)) is not None:
            raise error
        i += 1  # the comma
    return Result("GRANT", None, None, notices=(_NO_PRIVILEGES,))


def _qualified(tokens: list[_Token], i: int) -> tuple[tuple[str, ...], int]:
    """The (maybe schema-qualified) name starting at `tokens[i]`, and the index after it."""
    parts = [_name(tokens[i] if i < len(tokens) else None)]
    while i + 2 < len(tokens) and tokens[i + 1].text == ".":
        parts.append(_name(tokens[i + 2]))
        i += 2
    return tuple(parts), i + 1


def _existing_role(token: _Token, roles: Roles, actor: str) -> None:
    """42704 unless the role `token` names (CURRENT_USER and the like: `actor`) exists."""
    name = actor if token.upper in _ROLE_SPECS else _name(token)
    if roles.get(name) is None:
        raise SqlError(SqlState.UNDEFINED_OBJECT, f'role "{name}" does not exist')


def _missing_object(con: duckdb.DuckDBPyConnection, kind: str, parts: tuple[str, ...]
                    ) -> SqlError | None:
    """PostgreSQL's error for an object that is not there, else None. ALTER TABLE, VIEW and
    SEQUENCE and GRANT ON TABLE take any relation: a table, a view or a sequence."""
    if kind in {"TYPE", "SCHEMA"}:
        return existence.missing(con, kind, parts)
    error = existence.missing(con, "TABLE", parts, of_kind=False)
    if error is None or existence.missing(con, "SEQUENCE", parts) is None:
        return None
    if error.sqlstate is SqlState.UNDEFINED_TABLE:  # (a missing schema is 3F000)
        return SqlError(SqlState.UNDEFINED_TABLE, f'relation "{".".join(parts)}" does not exist')
    return error

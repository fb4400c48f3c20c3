"""The PostgreSQL extensions Heron provides, and CREATE / DROP EXTENSION over them.

Migrations enable extensions before they use them (Rails' enable_extension "pgcrypto", Django's
CreateExtension, `CREATE EXTENSION IF NOT EXISTS "uuid-ossp"`). Heron's extensions are part of
the server, present in every database: plpgsql (PostgreSQL's default, for what lists it),
pgcrypto (gen_random_uuid, DuckDB's own, and `digest` with md5, sha1 and sha256; not crypt,
gen_salt, hmac or the PGP functions) and uuid-ossp (uuid_generate_v4 and uuid_nil;
`pg_catalog_functions` holds the functions). pg_extension lists them (`ROWS`).

Contract:
- `read(sql)`: CREATE EXTENSION [IF NOT EXISTS] name [WITH] [SCHEMA s] [VERSION v] [CASCADE],
  or DROP EXTENSION [IF EXISTS] name [, ...] [CASCADE | RESTRICT], as an `ExtensionCommand`;
  None for anything else.
- `run(command)` answers it as PostgreSQL would if these were installed and could not be
  dropped: CREATE of one of them is 42710 `extension "x" already exists` (IF NOT EXISTS: that
  as a NOTICE, skipping); of another, 0A000 `extension "x" is not available` (PostgreSQL 15's
  words for one not installed on its machine), its hint naming the ones there are; DROP of
  one of them is 0A000 (they are part of the server), of another 42704 (IF EXISTS: a NOTICE,
  skipping).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from heron.planner.commands import IDENTIFIER, identifier
from heron.planner.errors import SqlError, SqlState

if TYPE_CHECKING:
    from heron.planner.statement import Result

# name -> (version, schema, description), as PostgreSQL 15's pg_extension / \dx show them
EXTENSIONS = {
    "pgcrypto": ("1.3", "public", "cryptographic functions"),
    "plpgsql": ("1.0", "pg_catalog", "PL/pgSQL procedural language"),
    "uuid-ossp": ("1.1", "public", "generate universally unique identifiers (UUIDs)"),
}
FIRST_OID = 13_500  # pg_extension's OIDs, below PostgreSQL's FirstNormalObjectId
# pg_extension's rows: (oid, extname, extnamespace's name, extversion)
ROWS = tuple((FIRST_OID + i, name, schema, version)
             for i, (name, (version, schema, _)) in enumerate(sorted(EXTENSIONS.items())))

_CREATE = re.compile(
    rf"^\s*CREATE\s+EXTENSION\s+(?P<exists>IF\s+NOT\s+EXISTS\s+)?(?P<name>{IDENTIFIER}|'[^']*')"
    r"(?:\s+(?:WITH\s+)?(?:(?:SCHEMA\s+\S+|VERSION\s+\S+|CASCADE)\s*)*)?\s*;?\s*$",
    re.IGNORECASE)
_DROP = re.compile(
    rf"^\s*DROP\s+EXTENSION\s+(?P<exists>IF\s+EXISTS\s+)?(?P<names>{IDENTIFIER}"
    rf"(?:\s*,\s*{IDENTIFIER})*)\s*(?:CASCADE|RESTRICT)?\s*;?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ExtensionCommand:
    create: bool  # CREATE, else DROP
    names: tuple[str, ...]
    if_exists: bool  # IF NOT EXISTS / IF EXISTS


def read(sql: str) -> ExtensionCommand | None:
    """`sql` as an `ExtensionCommand`, or None (see the module docstring)."""
    if m := _CREATE.match(sql):
        name = m["name"]
        name = name[1:-1] if name.startswith("'") else identifier(name)
        return ExtensionCommand(True, (name,), bool(m["exists"]))
    if m := _DROP.match(sql):
        names = tuple(identifier(n.strip()) for n in re.findall(IDENTIFIER, m["names"]))
        return ExtensionCommand(False, names, bool(m["exists"]))
    return None


def run(command: ExtensionCommand) -> Result:
    """Answer `command` (see the module docstring)."""
    from heron.planner.statement import Result  # (the catalog's relations import this module)

    notices = []
    for name in command.names:
        if command.create:
            if name not in EXTENSIONS:
                raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                               f'extension "{name}" is not available',
                               hint="Heron provides " + ", ".join(sorted(EXTENSIONS)) + ".")
            message = f'extension "{name}" already exists'
            if not command.if_exists:
                raise SqlError(SqlState.DUPLICATE_OBJECT, message)
            notices.append(f"{message}, skipping")
        elif name in EXTENSIONS:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                           f'cannot drop extension "{name}": it is part of Heron')
        elif command.if_exists:
            notices.append(f'extension "{name}" does not exist, skipping')
        else:
            raise SqlError(SqlState.UNDEFINED_OBJECT, f'extension "{name}" does not exist')
    verb = "CREATE EXTENSION" if command.create else "DROP EXTENSION"
    return Result(verb, None, None, notices=tuple(notices))

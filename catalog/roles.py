"""Roles: who may log in, with which password, and with which server privileges.

Contract: `Roles.open(data_dir, bootstrap_password)` loads the roles of a data directory from
`roles.json` (created on first open with the bootstrap superuser `heron`, OID 10 as in
PostgreSQL). `bootstrap_password`, when given (the server passes `HERON_PASSWORD`), becomes the
bootstrap superuser's password at every open, so the environment stays the source of truth for
it. Passwords are stored only as SCRAM-SHA-256 verifiers (`Verifier`, PostgreSQL's text form
`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`), never in plain text; the file is
written atomically (temporary file, fsync, rename) with mode 0600, under a lock, so concurrent
sessions of one server see each change whole.

A `Role` is a frozen value: name, OID, superuser, login, verifier and the predefined roles it was
granted (`Predefined`: pg_read_server_files, pg_write_server_files). `Role.has_privileges_of`
answers PostgreSQL's question: superusers have every role's privileges. Changes (`create`,
`alter`, `rename`, `drop`, `grant`, `revoke`) raise `SqlError` with PostgreSQL's SQLSTATE and
wording for a missing or duplicate role; who may make them is the caller's to check.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import scramp

from heron.planner.errors import SqlError, SqlState

ROLES_FILE = "roles.json"
BOOTSTRAP_USER = "heron"
BOOTSTRAP_OID = 10  # PostgreSQL's bootstrap superuser
FIRST_USER_OID = 16384  # PostgreSQL's FirstNormalObjectId
SCRAM_ITERATIONS = 4096  # PostgreSQL's scram_iterations default
_FORMAT_VERSION = 1


class Predefined(enum.StrEnum):
    """PostgreSQL's predefined roles that Heron honours, with their fixed OIDs."""

    READ_SERVER_FILES = "pg_read_server_files"
    WRITE_SERVER_FILES = "pg_write_server_files"

    @property
    def oid(self) -> int:
        return {"pg_read_server_files": 4569, "pg_write_server_files": 4570}[self.value]


_VERIFIER = re.compile(r"^SCRAM-SHA-256\$(?P<iterations>\d+):(?P<salt>[A-Za-z0-9+/=]+)"
                       r"\$(?P<stored>[A-Za-z0-9+/=]+):(?P<server>[A-Za-z0-9+/=]+)$")


@dataclass(frozen=True, slots=True)
class Verifier:
    """A SCRAM-SHA-256 password verifier (RFC 5802/7677), as PostgreSQL stores it."""

    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_password(cls, password: str, *, salt: bytes | None = None,
                      iterations: int = SCRAM_ITERATIONS) -> Verifier:
        # scramp applies SASLprep to the password, as PostgreSQL does.
        salt, stored_key, server_key, iterations = scramp.ScramMechanism().make_auth_info(
            password, iteration_count=iterations, salt=salt)
        return cls(iterations, salt, stored_key, server_key)

    @classmethod
    def parse(cls, text: str) -> Verifier | None:
        """The verifier `text` spells (psql's \\password sends one), or None for other text."""
        m = _VERIFIER.match(text)
        if m is None:
            return None
        try:
            parts = [base64.b64decode(m[k], validate=True) for k in ("salt", "stored", "server")]
        except ValueError:
            return None
        if len(parts[1]) != 32 or len(parts[2]) != 32 or int(m["iterations"]) < 1:
            return None
        return cls(int(m["iterations"]), *parts)

    def text(self) -> str:
        b64 = base64.b64encode
        return (f"SCRAM-SHA-256${self.iterations}:{b64(self.salt).decode()}"
                f"${b64(self.stored_key).decode()}:{b64(self.server_key).decode()}")


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    oid: int
    superuser: bool = False
    login: bool = False
    verifier: Verifier | None = None
    member_of: frozenset[Predefined] = frozenset()

    def has_privileges_of(self, role: Predefined) -> bool:
        return self.superuser or role in self.member_of


def undefined_role(name: str) -> SqlError:
    return SqlError(SqlState.UNDEFINED_OBJECT, f'role "{name}" does not exist')


class Roles:
    """The roles of one data directory; every method is thread-safe."""

    def __init__(self, path: Path, roles: Iterable[Role]) -> None:
        self.path = path
        self._roles = {r.name: r for r in roles}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, data_dir: Path, bootstrap_password: str | None = None) -> Roles:
        path = data_dir / ROLES_FILE
        roles = cls(path, _load(path) if path.exists() else [
            Role(BOOTSTRAP_USER, BOOTSTRAP_OID, superuser=True, login=True)])
        if bootstrap_password is not None or not path.exists():
            bootstrap = roles._roles[BOOTSTRAP_USER]
            if bootstrap_password is not None:
                bootstrap = dataclasses.replace(
                    bootstrap, verifier=Verifier.from_password(bootstrap_password))
            with roles._lock:
                roles._put(bootstrap)
        return roles

    def get(self, name: str) -> Role | None:
        return self._roles.get(name)

    def all(self) -> tuple[Role, ...]:
        """Every role, by OID."""
        return tuple(sorted(self._roles.values(), key=lambda r: r.oid))

    def create(self, name: str, *, superuser: bool = False, login: bool = False,
               verifier: Verifier | None = None) -> Role:
        with self._lock:
            if name in self._roles or name in set(Predefined):
                raise SqlError(SqlState.DUPLICATE_OBJECT, f'role "{name}" already exists')
            oid = max([FIRST_USER_OID - 1, *(r.oid for r in self._roles.values())]) + 1
            role = Role(name, oid, superuser, login, verifier)
            self._put(role)
            return role

    def alter(self, name: str, *, superuser: bool | None = None, login: bool | None = None,
              verifier: Verifier | None | bool = False) -> Role:
        """Change the given attributes; `verifier` False keeps the password, None removes it."""
        with self._lock:
            role = self._existing(name)
            if superuser is not None:
                role = dataclasses.replace(role, superuser=superuser)
            if login is not None:
                role = dataclasses.replace(role, login=login)
            if verifier is not False:
                role = dataclasses.replace(role, verifier=verifier)
            self._put(role)
            return role

    def rename(self, name: str, new_name: str) -> Role:
        with self._lock:
            role = self._existing(name)
            if new_name in self._roles or new_name in set(Predefined):
                raise SqlError(SqlState.DUPLICATE_OBJECT, f'role "{new_name}" already exists')
            del self._roles[name]
            renamed = dataclasses.replace(role, name=new_name)
            self._put(renamed)
            return renamed

    def drop(self, name: str) -> None:
        with self._lock:
            self._existing(name)
            del self._roles[name]
            self._save()

    def grant(self, predefined: Predefined, name: str) -> None:
        with self._lock:
            role = self._existing(name)
            self._put(dataclasses.replace(role, member_of=role.member_of | {predefined}))

    def revoke(self, predefined: Predefined, name: str) -> None:
        with self._lock:
            role = self._existing(name)
            self._put(dataclasses.replace(role, member_of=role.member_of - {predefined}))

    # -- under the lock ---------------------------------------------------------------------

    def _existing(self, name: str) -> Role:
        role = self._roles.get(name)
        if role is None:
            raise undefined_role(name)
        return role

    def _put(self, role: Role) -> None:
        self._roles[role.name] = role
        self._save()

    def _save(self) -> None:
        data = {"version": _FORMAT_VERSION, "roles": [_to_json(r) for r in self.all()]}
        temporary = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)


def _to_json(role: Role) -> dict[str, object]:
    return {"name": role.name, "oid": role.oid, "superuser": role.superuser,
            "login": role.login, "password": role.verifier.text() if role.verifier else None,
            "member_of": sorted(role.member_of)}


def _load(path: Path) -> list[Role]:
    data = json.loads(path.read_text())
    if data.get("version") != _FORMAT_VERSION:
        raise ValueError(f"{path}: unknown roles file version {data.get('version')!r}")
    roles = []
    for item in data["roles"]:
        verifier = Verifier.parse(item["password"]) if item["password"] else None
        if item["password"] and verifier is None:
            raise ValueError(f"{path}: role {item['name']!r} has a malformed password verifier")
        roles.append(Role(item["name"], item["oid"], item["superuser"], item["login"], verifier,
                          frozenset(Predefined(p) for p in item["member_of"])))
    return roles

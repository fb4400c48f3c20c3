"""Authentication of a connection's start-up: trust, or SCRAM-SHA-256 through `scramp`.

Contract: `authenticate(exchange, method, role, user)` runs the exchange `method` asks for and
returns the `Role` that logged in, or raises `SqlError` (sent as FATAL by the connection):
28000 for a role that does not exist (trust) or may not log in, 28P01 when the password is wrong.
As in PostgreSQL, SCRAM does not reveal whether a role exists or has a password: a missing role
or one without a password runs the whole exchange against a mock verifier (its salt derived
from the user name and a per-process secret, so it is stable across attempts) and fails like a
wrong password. With TLS the server offers SCRAM-SHA-256-PLUS as well, bound to its certificate
(tls-server-end-point), which libpq clients prefer. The user name inside the SCRAM messages is
ignored (libpq leaves it empty): the start-up packet's user is the one authenticated. Every read
is bounded by the exchange's timeout.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import scramp

from heron.catalog.roles import Role, Verifier
from heron.planner.errors import SqlError, SqlState
from heron.server import protocol
from heron.server.config import AuthMethod

SCRAM = "SCRAM-SHA-256"
SCRAM_PLUS = "SCRAM-SHA-256-PLUS"
_MOCK_SECRET = secrets.token_bytes(32)


@dataclass(frozen=True)
class Exchange:
    """The connection's side of an authentication exchange."""

    reader: asyncio.StreamReader
    send: Callable[[bytes], Awaitable[None]]  # writes and flushes one message
    timeout_s: float
    certificate_pem: str | None = None  # set when the connection runs over TLS


async def authenticate(exchange: Exchange, method: AuthMethod, role: Role | None,
                       user: str) -> Role:
    if method is AuthMethod.SCRAM_SHA_256:
        await _scram(exchange, role if role is not None and role.verifier else None, user)
    elif role is None:
        raise SqlError(SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
                       f'role "{user}" does not exist')
    assert role is not None  # _scram fails for a missing role
    if not role.login:
        raise SqlError(SqlState.INVALID_AUTHORIZATION_SPECIFICATION,
                       f'role "{user}" is not permitted to log in')
    return role


def _password_failed(user: str) -> SqlError:
    return SqlError(SqlState.INVALID_PASSWORD, f'password authentication failed for user "{user}"')


def _mock_verifier(user: str) -> Verifier:
    salt = hashlib.sha256(_MOCK_SECRET + user.encode()).digest()[:16]
    return Verifier.from_password(secrets.token_urlsafe(24), salt=salt)


_GS2_HEADER = re.compile(r"^[^,]*,[^,]*,")


def _named(client_first_bare: str) -> str:
    """The bare client-first message with a placeholder for the empty user name libpq sends
    (PostgreSQL ignores the name; scramp refuses an empty one), for scramp to parse."""
    return "n=-" + client_first_bare[2:] if client_first_bare.startswith("n=,") else (
        client_first_bare)


async def _scram(exchange: Exchange, role: Role | None, user: str) -> None:
    verifier = role.verifier if role is not None and role.verifier else _mock_verifier(user)
    mechanisms = [SCRAM_PLUS, SCRAM] if exchange.certificate_pem else [SCRAM]
    await exchange.send(protocol.authentication_sasl(mechanisms))
    initial = await asyncio.wait_for(protocol.read_sasl_initial_response(exchange.reader),
                                     exchange.timeout_s)
    if initial.mechanism not in mechanisms:
        raise SqlError(SqlState.PROTOCOL_VIOLATION, "client selected an invalid SASL "
                       f"authentication mechanism {initial.mechanism!r}")
    binding = (("tls-server-end-point", exchange.certificate_pem)
               if initial.mechanism == SCRAM_PLUS else None)
    keys = (verifier.salt, verifier.stored_key, verifier.server_key, verifier.iterations)
    server = scramp.ScramMechanism(initial.mechanism).make_server(lambda _name: keys,
                                                                   channel_binding=binding)
    try:
        client_first = initial.data.decode("utf-8")
        header = _GS2_HEADER.match(client_first)
        if header is None:
            raise ValueError("malformed client-first-message")
        bare = client_first[header.end():]
        server.set_client_first(header[0] + _named(bare))
        server.client_first_bare = bare  # the proofs cover the message the client sent
        await exchange.send(protocol.authentication_sasl_continue(
            server.get_server_first().encode()))
        final = await asyncio.wait_for(protocol.read_sasl_response(exchange.reader),
                                       exchange.timeout_s)
        server.set_client_final(final.data.decode("utf-8"))
    except (scramp.ScramException, UnicodeDecodeError, ValueError):
        raise _password_failed(user) from None
    if role is None:  # the mock verifier matched nothing real
        raise _password_failed(user)
    await exchange.send(protocol.authentication_sasl_final(server.get_server_final().encode()))

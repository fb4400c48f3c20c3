"""``ServerConfig``: what `heron serve` starts with — address, data directory, authentication,
TLS, engine.

Contract:
- Importing this module never imports torch: the engine part is ``heron.engine.config``'s
  ``EngineConfig``, which is pure Python too.
- A constructed ``ServerConfig`` is valid: a bad value raises ``ValueError`` (or ``EngineError``
  from the engine part) at construction, with a message saying what to fix; the command line
  reports it as a usage error. ``AuthMethod.TRUST`` is refused unless ``host`` is a loopback
  address (or a name resolving only to loopback addresses): a server reachable from other
  machines always asks for a password. A ``TlsConfig`` is valid only when its certificate and
  key load into a TLS context.
- ``engine=None`` is a server without a model (``--model none``): AI statements then fail with
  SQLSTATE 55000 while everything else works.
- ``max_connections`` bounds the sessions open at once (PostgreSQL's ``max_connections``, 100 by
  default); ``max_statement_tokens`` is every session's default ``heron.max_tokens``, the tokens
  one statement may have the model read (0: no limit).
- The defaults are those of `heron serve` without flags: loopback, trust, no TLS.
"""

from __future__ import annotations

import enum
import ipaddress
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from heron.engine.config import EngineConfig


class AuthMethod(enum.StrEnum):
    """How clients prove who they are (pg_hba.conf's method names)."""

    TRUST = "trust"  # any existing role with LOGIN, no password (loopback only)
    SCRAM_SHA_256 = "scram-sha-256"


@dataclass(frozen=True)
class TlsConfig:
    """A PEM certificate (chain) and its private key; clients ask for TLS with SSLRequest."""

    cert_file: Path
    key_file: Path

    def __post_init__(self) -> None:
        for name in ("cert_file", "key_file"):
            value = getattr(self, name)
            if not isinstance(value, Path) or not value.is_file():
                raise ValueError(f"TLS {name.replace('_', ' ')} {value} is not a readable file")
        self.context()  # refuses a certificate and key that do not load or do not match

    def context(self) -> ssl.SSLContext:
        try:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as exc:
            raise ValueError(f"cannot use TLS certificate {self.cert_file} with key "
                             f"{self.key_file}: {exc}") from None
        return context

    def certificate_pem(self) -> str:
        """The server certificate (for SCRAM channel binding, tls-server-end-point)."""
        return self.cert_file.read_text()


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback
                                   for a in addresses)


@dataclass(frozen=True)
class ServerConfig:
    """``port`` 0 asks the operating system for any free port (tests use it)."""

    host: str = "127.0.0.1"
    port: int = 5433
    data_dir: Path = Path("heron-data")
    engine: EngineConfig | None = field(default_factory=EngineConfig)
    auth: AuthMethod = AuthMethod.TRUST
    tls: TlsConfig | None = None
    max_connections: int = 100
    max_statement_tokens: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host:
            raise ValueError(f"host must be an address to listen on, got {self.host!r}")
        port = self.port
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be between 0 and 65535, got {port!r}")
        if not isinstance(self.data_dir, Path):
            raise ValueError(f"data_dir must be a pathlib.Path, got {self.data_dir!r}")
        if self.engine is not None and not isinstance(self.engine, EngineConfig):
            raise ValueError(f"engine must be an EngineConfig or None, got {self.engine!r}")
        if not isinstance(self.auth, AuthMethod):
            raise ValueError(f"auth must be an AuthMethod, got {self.auth!r}")
        if self.auth is AuthMethod.TRUST and not is_loopback(self.host):
            raise ValueError(f"trust authentication is only allowed on a loopback address, "
                             f"not on {self.host}: use --auth scram-sha-256 (and set "
                             f"HERON_PASSWORD) or --host 127.0.0.1")
        if self.tls is not None and not isinstance(self.tls, TlsConfig):
            raise ValueError(f"tls must be a TlsConfig or None, got {self.tls!r}")
        if not _is_count(self.max_connections, minimum=1):
            raise ValueError(f"max_connections must be a whole number >= 1, got "
                             f"{self.max_connections!r}")
        if not _is_count(self.max_statement_tokens, minimum=0):
            raise ValueError(f"max_statement_tokens must be a whole number of tokens >= 0 (0: no "
                             f"limit), got {self.max_statement_tokens!r}")


def _is_count(value: object, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum

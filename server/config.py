"""``ServerConfig``: what `heron serve` starts with — address, data directory, engine.

Contract:
- Importing this module never imports torch: the engine part is ``heron.engine.config``'s
  ``EngineConfig``, which is pure Python too.
- A constructed ``ServerConfig`` is valid: a bad value raises ``ValueError`` (or ``EngineError``
  from the engine part) at construction, with a message saying what to fix; the command line
  reports it as a usage error.
- ``engine=None`` is a server without a model (``--model none``): AI statements then fail with
  SQLSTATE 55000 while everything else works.
- The defaults are those of `heron serve` without flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heron.engine.config import EngineConfig


@dataclass(frozen=True)
class ServerConfig:
    """``port`` 0 asks the operating system for any free port (tests use it)."""

    host: str = "127.0.0.1"
    port: int = 5433
    data_dir: Path = Path("heron-data")
    engine: EngineConfig | None = field(default_factory=EngineConfig)

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

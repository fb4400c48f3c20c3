"""``EngineConfig``: how an engine is built — model, device, memory and chunk budgets.

Contract:
- Pure Python (no torch): the server builds it from its command line without loading the engine,
  and ``EngineProcess`` pickles it whole to the child, which builds ``LocalEngine(config)``.
- A constructed ``EngineConfig`` is valid: a bad value raises ``EngineError`` at construction,
  with a message saying what to fix. Whether the model exists and whether CUDA is available are
  checked when the engine loads (that needs the weights and torch), not here.
- ``None`` for ``kv_cache_bytes`` / ``chunk_tokens`` means the default of the device type;
  ``effective_kv_cache_bytes`` / ``effective_chunk_tokens`` resolve it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heron.engine.api import DEFAULT_MODEL, EngineError

# Prefix-KV cache budget per device type. 1 GiB on CPU holds the KV of the demo table's 300
# reviews for SmolLM2 (46 KB a token in float32), so a second question reuses every document.
DEFAULT_KV_CACHE_BYTES = {"cpu": 1 << 30, "cuda": 16 << 30}
# Tokens per forward chunk: on CPU larger chunks stop paying off and only raise peak memory.
DEFAULT_CHUNK_TOKENS = {"cpu": 4096, "cuda": 32768}

_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


@dataclass(frozen=True)
class EngineConfig:
    """``model``: an embedded name (``DEFAULT_MODEL``), a local Hugging Face-layout directory or
    a Hugging Face id in the local cache. ``device``: cpu, cuda or cuda:N. ``kv_cache_bytes``:
    the prefix-KV cache budget (0 keeps nothing across calls). ``chunk_tokens``: tokens per
    forward chunk. ``startup_timeout_s``: how long ``EngineProcess`` waits for the model to load.
    """

    model: str = DEFAULT_MODEL
    device: str = "cpu"
    kv_cache_bytes: int | None = None
    chunk_tokens: int | None = None
    startup_timeout_s: float = 900.0

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise EngineError(
                f"model must name a model (an embedded name, a directory or a Hugging Face id), "
                f"got {self.model!r}"
            )
        if not isinstance(self.device, str) or not _DEVICE.fullmatch(self.device):
            raise EngineError(f"device must be cpu, cuda or cuda:N, got {self.device!r}")
        if self.kv_cache_bytes is not None and not _is_count(self.kv_cache_bytes, minimum=0):
            raise EngineError(
                f"kv_cache_bytes must be a whole number of bytes >= 0 (or None for the "
                f"device default), got {self.kv_cache_bytes!r}"
            )
        if self.chunk_tokens is not None and not _is_count(self.chunk_tokens, minimum=1):
            raise EngineError(
                f"chunk_tokens must be a whole number of tokens >= 1 (or None for the device "
                f"default), got {self.chunk_tokens!r}"
            )
        timeout = self.startup_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise EngineError(f"startup_timeout_s must be a number of seconds > 0, got {timeout!r}")

    @property
    def device_type(self) -> str:
        """``cpu`` or ``cuda``: the device without its index."""
        return self.device.partition(":")[0]

    @property
    def effective_kv_cache_bytes(self) -> int:
        if self.kv_cache_bytes is None:
            return DEFAULT_KV_CACHE_BYTES[self.device_type]
        return self.kv_cache_bytes

    @property
    def effective_chunk_tokens(self) -> int:
        if self.chunk_tokens is None:
            return DEFAULT_CHUNK_TOKENS[self.device_type]
        return self.chunk_tokens


def _is_count(value: object, minimum: int) -> bool:
    # bool is an int subclass, but True bytes or tokens is a mistake, not a count.
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum

"""``EngineConfig``: how an engine is built — model, device, KV arena, chunk and block sizes.

Contract:
- Pure Python (no torch): the server builds it from its command line without loading the engine,
  and ``EngineProcess`` pickles it whole to the child, which builds ``LocalEngine(config)``.
- A constructed ``EngineConfig`` is valid: a bad value raises ``EngineError`` at construction,
  with a message saying what to fix. Whether the model exists, whether CUDA is available and
  whether the KV arena fits are checked when the engine loads (that needs the weights and torch).
- ``None`` means the default of the device type: ``effective_chunk_tokens`` and
  ``effective_prefix_block_tokens`` resolve it here; ``kv_cache_bytes=None`` is resolved by the
  engine at load (``engine.kv_cache.arena_bytes``): 1 GiB on CPU, and on CUDA the free memory
  after the weights less a margin for one chunk's activations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heron.engine.api import DEFAULT_MODEL, EngineError

# 1 GiB on CPU holds the KV of the demo table's 300 reviews for SmolLM2 (46 KB a token in
# float32), so a second question reuses every document.
DEFAULT_CPU_KV_CACHE_BYTES = 1 << 30
# Tokens per forward chunk: on CPU larger chunks stop paying off and only raise peak memory.
DEFAULT_CHUNK_TOKENS = {"cpu": 4096, "cuda": 32768}
# Prefix tokens per canonical block (the unit of KV computation and of sharing between
# documents). Measured on an H200 with Qwen3-4B (bench/NOTES.md): 64-token blocks cost 4 % of a
# fresh filter's speed against 512, and nested documents (agent traces) compute 1.18x the
# token-trie minimum instead of 2.43x; small on CPU so tests exercise several blocks.
DEFAULT_PREFIX_BLOCK_TOKENS = {"cpu": 64, "cuda": 64}

_DEVICE = re.compile(r"cpu|cuda(:\d+)?")
DTYPES = ("bf16", "fp8")
ATTENTION = ("segments", "fa3")


@dataclass(frozen=True)
class EngineConfig:
    """``model``: an embedded name (``DEFAULT_MODEL``), a local Hugging Face-layout directory or
    a Hugging Face id in the local cache. ``device``: cpu, cuda or cuda:N. ``kv_cache_bytes``:
    the size of the paged KV arena (prefix blocks of every statement, and the KV of prompts being
    answered). ``chunk_tokens``: tokens per forward chunk. ``prefix_block_tokens``: tokens per
    canonical prefix block (at most ``chunk_tokens``). ``dtype``: how the decoder layers'
    projections are stored on CUDA, ``bf16`` or ``fp8`` (e4m3, quantized at load).
    ``deterministic``: every answer bit-identical whatever shares its chunk (batch-invariant
    kernels); off, linear layers use cuBLAS, whose rounding changes with the chunk.
    ``attention``: ``segments`` runs all attention on Triton segment attention (CUDA; the
    padded backend on CPU); ``fa3`` runs question rows (prompts' questions, labels, decode
    steps) on vLLM's FlashAttention-3 (``engine.attention.fa3``: an installed vLLM, a Hopper
    GPU), faster for joins with many partners per anchor and slower for filters
    (bench/NOTES.md). ``fa3`` needs ``deterministic`` off: its rows were seen to change bits
    when the chunking changed.
    ``startup_timeout_s``: how long ``EngineProcess`` waits for the model to load.
    """

    model: str = DEFAULT_MODEL
    device: str = "cpu"
    kv_cache_bytes: int | None = None
    chunk_tokens: int | None = None
    prefix_block_tokens: int | None = None
    dtype: str = "bf16"
    deterministic: bool = True
    attention: str = "segments"
    startup_timeout_s: float = 900.0

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise EngineError(
                f"model must name a model (an embedded name, a directory or a Hugging Face id), "
                f"got {self.model!r}"
            )
        if not isinstance(self.device, str) or not _DEVICE.fullmatch(self.device):
            raise EngineError(f"device must be cpu, cuda or cuda:N, got {self.device!r}")
        if self.kv_cache_bytes is not None and not _is_count(self.kv_cache_bytes, minimum=1):
            raise EngineError(
                f"kv_cache_bytes must be a whole number of bytes >= 1 (or None for what fits "
                f"the device), got {self.kv_cache_bytes!r}"
            )
        for name in ("chunk_tokens", "prefix_block_tokens"):
            value = getattr(self, name)
            if value is not None and not _is_count(value, minimum=1):
                raise EngineError(
                    f"{name} must be a whole number of tokens >= 1 (or None for the device "
                    f"default), got {value!r}"
                )
        if (
            self.prefix_block_tokens is not None
            and self.prefix_block_tokens > self.effective_chunk_tokens
        ):
            raise EngineError(
                f"prefix_block_tokens ({self.prefix_block_tokens}) must not exceed chunk_tokens "
                f"({self.effective_chunk_tokens}): a prefix block is computed within one chunk"
            )
        if self.dtype not in DTYPES:
            raise EngineError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if not isinstance(self.deterministic, bool):
            raise EngineError(f"deterministic must be true or false, got {self.deterministic!r}")
        if self.attention not in ATTENTION:
            raise EngineError(f"attention must be one of {', '.join(ATTENTION)}, got "
                              f"{self.attention!r}")
        if self.attention == "fa3" and self.deterministic:
            raise EngineError("attention fa3 needs deterministic off (--no-deterministic): "
                              "FlashAttention-3's answers may change bits with the chunking")
        timeout = self.startup_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise EngineError(f"startup_timeout_s must be a number of seconds > 0, got {timeout!r}")

    @property
    def device_type(self) -> str:
        """``cpu`` or ``cuda``: the device without its index."""
        return self.device.partition(":")[0]

    @property
    def effective_chunk_tokens(self) -> int:
        if self.chunk_tokens is None:
            return DEFAULT_CHUNK_TOKENS[self.device_type]
        return self.chunk_tokens

    @property
    def effective_prefix_block_tokens(self) -> int:
        if self.prefix_block_tokens is None:
            return min(DEFAULT_PREFIX_BLOCK_TOKENS[self.device_type], self.effective_chunk_tokens)
        return self.prefix_block_tokens


def _is_count(value: object, minimum: int) -> bool:
    # bool is an int subclass, but True bytes or tokens is a mistake, not a count.
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum

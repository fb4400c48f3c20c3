"""The roofline cost model: what a batch of prompts costs the engine, in tokens and seconds.

Contract: `Work` is what an operator makes the engine do — prompts, input tokens, fresh tokens
(run through the model), cached tokens (served from resident KV), attention pairs (query-key
products of the fresh tokens), the KV bytes its documents keep resident and the tokens a
completion generates. `CostModel.work` prices a batch of prompts that share prefixes (a
filter's documents, a join's anchors) from mean token counts, knowing how much of each prefix is
resident already (all of it, its document part, or nothing). `CostModel.seconds(work)` prices
work on the configured model and device with a roofline: the larger of compute time (2 FLOPs per
parameter per token plus the attention products) and memory time (the weights once per chunk
and per decode step, plus the KV written and read), times the measured speed factor
(`catalog.statistics`), so that estimates follow the machine. Pure arithmetic; nothing runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heron.engine.api import ModelInfo

# What the model's card does not say: KV width as a share of the hidden size (grouped-query
# attention with 4 query heads per KV head, as Qwen3 and Llama 3 use), and the prefill chunk.
KV_WIDTH_SHARE = 0.25
CHUNK_TOKENS = 32_768
_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}


@dataclass(frozen=True, slots=True)
class Hardware:
    """A device's ceilings: dense FLOP/s and memory bandwidth (bytes/s)."""

    name: str
    flops: float
    bandwidth: float


# DESIGN.md §5: bf16 GEMM on the H200 at prefill shapes, HBM copy bandwidth. The CPU line is a
# two-core machine (the embedded model reads ~650 tokens/s there); the speed factor corrects both.
GPU = Hardware("GPU (H200 class)", 7.9e14, 4.3e12)
CPU = Hardware("CPU", 1.5e11, 2.0e10)


@dataclass(frozen=True, slots=True)
class Work:
    prompts: float = 0
    input_tokens: float = 0
    fresh_tokens: float = 0
    attention_pairs: float = 0
    kv_bytes: float = 0  # KV of the documents it leaves resident
    decode_tokens: float = 0  # tokens a completion may generate, one batched step each

    @staticmethod
    def of(prompts: float, input_tokens: float, fresh_tokens: float) -> Work:
        """Work known only by its token counts (what the engine reports): each fresh token
        attends to about half its prompt."""
        mean = input_tokens / prompts if prompts else 0
        return Work(prompts, input_tokens, fresh_tokens, fresh_tokens * mean / 2)

    @property
    def cached_tokens(self) -> float:
        return self.input_tokens - self.fresh_tokens

    def __add__(self, other: Work) -> Work:
        return Work(self.prompts + other.prompts, self.input_tokens + other.input_tokens,
                    self.fresh_tokens + other.fresh_tokens,
                    self.attention_pairs + other.attention_pairs, self.kv_bytes + other.kv_bytes,
                    self.decode_tokens + other.decode_tokens)


def _prompt(prefix: float, suffix: float, resident: float) -> tuple[float, float]:
    """(fresh tokens, attention pairs) of one prompt whose prefix's first `resident` tokens
    have KV already: the rest of the prefix attends causally to all before it; the suffix
    attends to the whole prefix and causally to itself."""
    resident = min(resident, prefix)
    return (prefix - resident + suffix,
            (prefix * prefix - resident * resident) / 2 + suffix * (prefix + suffix / 2))


@dataclass(frozen=True, slots=True)
class CostModel:
    params: float
    layers: int
    hidden: int
    bytes_per_param: int
    hardware: Hardware
    speed_factor: float = 1.0

    @staticmethod
    def of(info: ModelInfo | None, speed_factor: float = 1.0) -> CostModel:
        """The model the engine serves (a 135M-parameter default when there is none)."""
        if info is None:
            return CostModel(1.35e8, 30, 576, 4, CPU, speed_factor)
        hardware = GPU if info.device.startswith("cuda") else CPU
        return CostModel(float(info.num_params), info.num_layers, info.hidden_size,
                         _BYTES.get(info.dtype, 2), hardware, speed_factor)

    @property
    def kv_bytes_per_token(self) -> float:
        return 2 * self.layers * self.hidden * KV_WIDTH_SHARE * self.bytes_per_param

    def work(self, prompts: float, prefixes: float, prefix_tokens: float,
             suffix_tokens: float, resident_tokens: float = 0) -> Work:
        """`prompts` prompts sharing `prefixes` distinct prefixes of `prefix_tokens` each
        (a filter's documents, or a join's anchors with the question), each with its suffix
        (a filter's question, a join partner's document); each prefix runs once, but for its
        first `resident_tokens`, whose KV is resident already (a document another operator
        read: the engine matches prefixes token by token)."""
        first = _prompt(prefix_tokens, suffix_tokens, resident_tokens)
        rest = _prompt(prefix_tokens, suffix_tokens, prefix_tokens)
        others = max(prompts - prefixes, 0)
        return Work(prompts, prompts * (prefix_tokens + suffix_tokens),
                    prefixes * first[0] + others * rest[0],
                    prefixes * first[1] + others * rest[1],
                    prefixes * prefix_tokens * self.kv_bytes_per_token)

    def seconds(self, work: Work) -> float:
        if work.prompts <= 0:
            return 0.0
        flops = 2 * self.params * (work.fresh_tokens + work.decode_tokens) + (
            4 * self.layers * self.hidden * work.attention_pairs)
        chunks = max(1, math.ceil(work.fresh_tokens / CHUNK_TOKENS))
        steps = work.decode_tokens / work.prompts  # batched decode: one step per token
        # The weights stream once per chunk and per decode step; the documents' KV is written
        # once and read back.
        moved = (chunks + steps) * self.params * self.bytes_per_param + 2 * work.kv_bytes
        roofline = max(flops / self.hardware.flops, moved / self.hardware.bandwidth)
        return roofline * self.speed_factor

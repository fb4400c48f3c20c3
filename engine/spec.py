"""Model specification: the shape of a supported decoder, read from a Hugging Face config.json.

A ``ModelSpec`` is data, not code: one frozen dataclass covers every supported architecture,
and the forward pass branches only on its fields (``qk_norm`` for Qwen3, ``rope`` scaling for
Llama 3.x). ``fp8_block`` says how a checkpoint's weights are stored: None for plain weights, or
the block of an FP8 block-quantized checkpoint (``quantization_config`` with ``quant_method``
"fp8" and ``weight_block_size``, as in Qwen's -FP8 releases), whose weights the loader
dequantizes. ``ModelSpec.from_config`` refuses anything it cannot run exactly, with an
``EngineError`` naming the offending field, rather than silently computing something else.

Pure Python (no torch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.engine.api import EngineError

# model_type -> whether the attention applies per-head RMSNorm to q and k before RoPE.
_ARCHITECTURES = {"llama": False, "qwen3": True}


@dataclass(frozen=True)
class RopeSpec:
    """Rotary embedding parameters. ``kind`` is "default" or "llama3" (frequency-band scaling)."""

    kind: str
    theta: float
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 1.0
    original_max_position: int = 0


@dataclass(frozen=True)
class ModelSpec:
    """Dimensions and options of a Llama-architecture or Qwen3 dense decoder."""

    architecture: str
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float
    rope: RopeSpec
    qk_norm: bool
    tie_word_embeddings: bool
    context_tokens: int  # the longest sequence it was trained for (max_position_embeddings)
    fp8_block: tuple[int, int] | None = None  # FP8 weights' scale blocks (rows, columns)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ModelSpec:
        arch = config.get("model_type")
        if arch not in _ARCHITECTURES:
            raise EngineError(
                f"unsupported model_type {arch!r}; supported: {', '.join(sorted(_ARCHITECTURES))}"
            )
        if config.get("hidden_act", "silu") != "silu":
            raise EngineError(f"unsupported hidden_act {config['hidden_act']!r} (need 'silu')")
        hidden = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        return cls(
            architecture=arch,
            num_layers=int(config["num_hidden_layers"]),
            hidden_size=hidden,
            intermediate_size=int(config["intermediate_size"]),
            num_heads=heads,
            num_kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            vocab_size=int(config["vocab_size"]),
            rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
            rope=_rope_spec(config),
            qk_norm=_ARCHITECTURES[arch],
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            context_tokens=_context_tokens(config),
            fp8_block=_fp8_block(config.get("quantization_config")),
        )

    @classmethod
    def from_folder(cls, folder: Path) -> ModelSpec:
        try:
            config = json.loads((folder / "config.json").read_text())
        except (OSError, ValueError) as exc:
            raise EngineError(f"cannot read {folder / 'config.json'}: {exc}") from exc
        return cls.from_config(config)


def _fp8_block(quantization: Any) -> tuple[int, int] | None:
    if quantization is None:
        return None
    method = quantization.get("quant_method") if isinstance(quantization, dict) else None
    block = quantization.get("weight_block_size") if isinstance(quantization, dict) else None
    if method != "fp8" or not (isinstance(block, list) and len(block) == 2 and all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in block)):
        raise EngineError(f"unsupported quantization_config (quant_method {method!r}, "
                          f"weight_block_size {block!r}); supported: unquantized weights, or "
                          "quant_method 'fp8' with a weight_block_size [rows, columns]")
    return block[0], block[1]


def _context_tokens(config: dict[str, Any]) -> int:
    value = config.get("max_position_embeddings")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EngineError(f"max_position_embeddings must be a whole number >= 1 (the model's "
                          f"context), got {value!r}")
    return value


def _rope_spec(config: dict[str, Any]) -> RopeSpec:
    # transformers 5 writes `rope_parameters` (theta inside); older configs keep a top-level
    # `rope_theta` plus an optional `rope_scaling` dict whose kind is under "rope_type" or "type".
    params = config.get("rope_parameters") or config.get("rope_scaling") or {}
    theta = float(params.get("rope_theta", config.get("rope_theta", 10000.0)))
    kind = params.get("rope_type", params.get("type", "default"))
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise EngineError("unsupported rope partial_rotary_factor != 1")
    if kind == "default":
        return RopeSpec(kind="default", theta=theta)
    if kind == "llama3":
        return RopeSpec(
            kind="llama3",
            theta=theta,
            factor=float(params["factor"]),
            low_freq_factor=float(params["low_freq_factor"]),
            high_freq_factor=float(params["high_freq_factor"]),
            original_max_position=int(
                params.get("original_max_position_embeddings") or config["max_position_embeddings"]
            ),
        )
    raise EngineError(f"unsupported rope_type {kind!r}; supported: default, llama3")

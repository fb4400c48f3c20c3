"""Pure-torch decoder (Llama architecture and Qwen3 dense) over packed variable-length rows.

``Decoder.load(folder, spec, answer_ids, device)`` reads safetensors weights (re-tying the LM head
to the embeddings when the config says so) and keeps only the LM-head rows of ``answer_ids``.
``Decoder.forward(rows)`` runs all rows as one packed [T, hidden] tensor without padding:
linear layers see every token at once, attention is batched over rows (see
``engine.attention``). A row may continue a ``PrefixKV`` (its positions start at the prefix
length and it attends to that KV), and may ask for the K/V of its first ``capture`` tokens to be
returned as a new ``PrefixKV``. Only the last position of each row reaches the (pruned) LM head.

float32 on CPU, bfloat16 on CUDA (where RMSNorm runs as the Triton kernel of ``kernels.rmsnorm``;
everything else is plain torch). Callers run it under ``torch.inference_mode``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open

from heron.engine.api import EngineError
from heron.engine.attention import RowSpan, packed_attention, plan_attention
from heron.engine.kv_cache import PrefixKV
from heron.engine.rope import apply_rotary, inverse_frequencies, rotary_tables
from heron.engine.spec import ModelSpec
from heron.kernels.rmsnorm import rmsnorm, rmsnorm_reference


@dataclass(frozen=True)
class RowInput:
    """One packed row: ``tokens`` at positions ``prefix.length + i`` (or ``i`` without prefix)."""

    tokens: Sequence[int]
    prefix: PrefixKV | None = None
    capture: int = 0  # return the K/V of this many leading tokens as a PrefixKV


@dataclass(frozen=True)
class ForwardOutput:
    logits: torch.Tensor  # [rows, len(answer_ids)] float32, last position of each row
    captured: list[PrefixKV | None]  # per row, when ``capture`` > 0


@dataclass(frozen=True)
class _Layer:
    input_norm: torch.Tensor
    qkv: torch.Tensor  # q, k, v projections fused into one GEMM
    qkv_bias: torch.Tensor | None
    q_norm: torch.Tensor | None  # Qwen3 per-head RMSNorm
    k_norm: torch.Tensor | None
    o_proj: torch.Tensor
    o_bias: torch.Tensor | None
    post_norm: torch.Tensor
    gate_up: torch.Tensor  # gate and up projections fused
    down: torch.Tensor


Norm = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]


def _pick_rmsnorm(device: torch.device) -> Norm:
    # The Triton kernel where it can run, else its torch twin (same contract, float32 math).
    if device.type == "cuda" and importlib.util.find_spec("triton") is not None:
        return rmsnorm
    return rmsnorm_reference


def default_dtype(device: str) -> torch.dtype:
    return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32


class Decoder:
    def __init__(
        self,
        spec: ModelSpec,
        embed: torch.Tensor,
        layers: list[_Layer],
        final_norm: torch.Tensor,
        head: torch.Tensor,
        num_params: int,
    ) -> None:
        self.spec = spec
        self.embed = embed
        self.layers = layers
        self.final_norm = final_norm
        self.head = head  # [len(answer_ids), hidden]: the pruned LM head
        self.num_params = num_params
        self.inv_freq = inverse_frequencies(spec.rope, spec.head_dim).to(embed.device)
        self.scale = spec.head_dim**-0.5
        self.rmsnorm = _pick_rmsnorm(embed.device)

    @property
    def device(self) -> torch.device:
        return self.embed.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    @classmethod
    def load(
        cls, folder: Path, spec: ModelSpec, answer_ids: Sequence[int], device: str = "cpu"
    ) -> Decoder:
        dtype = default_dtype(device)
        tensors = _read_safetensors(folder)
        if any(name.endswith(("weight_scale_inv", "weight_scale")) for name in tensors):
            raise EngineError(f"{folder}: quantized (FP8) checkpoints are not supported yet")
        num_params = sum(t.numel() for t in tensors.values())

        def take(name: str) -> torch.Tensor:
            if name not in tensors:
                raise EngineError(f"{folder}: weight {name!r} missing from the safetensors files")
            return tensors[name].to(device=device, dtype=dtype)

        def maybe(name: str) -> torch.Tensor | None:
            return take(name) if name in tensors else None

        layers = []
        for i in range(spec.num_layers):
            p = f"model.layers.{i}."
            attn = p + "self_attn."
            biases = [maybe(attn + f"{x}_proj.bias") for x in "qkv"]
            layers.append(
                _Layer(
                    input_norm=take(p + "input_layernorm.weight"),
                    qkv=torch.cat([take(attn + f"{x}_proj.weight") for x in "qkv"]),
                    qkv_bias=torch.cat(biases) if all(b is not None for b in biases) else None,
                    q_norm=take(attn + "q_norm.weight") if spec.qk_norm else None,
                    k_norm=take(attn + "k_norm.weight") if spec.qk_norm else None,
                    o_proj=take(attn + "o_proj.weight"),
                    o_bias=maybe(attn + "o_proj.bias"),
                    post_norm=take(p + "post_attention_layernorm.weight"),
                    gate_up=torch.cat(
                        [take(p + "mlp.gate_proj.weight"), take(p + "mlp.up_proj.weight")]
                    ),
                    down=take(p + "mlp.down_proj.weight"),
                )
            )
        embed = take("model.embed_tokens.weight")
        head_name = "lm_head.weight"
        if spec.tie_word_embeddings or head_name not in tensors:
            head_name = "model.embed_tokens.weight"
        # Only the answer rows of the LM head are ever used: index before moving to the device.
        head = tensors[head_name][list(answer_ids)].to(device=device, dtype=dtype)
        return cls(spec, embed, layers, take("model.norm.weight"), head, num_params)

    def forward(self, rows: Sequence[RowInput]) -> ForwardOutput:
        spec = self.spec
        device = self.device
        prefixes: list[PrefixKV] = []
        slot_of: dict[int, int] = {}
        row_prefix: list[int | None] = []
        spans: list[RowSpan] = []
        positions: list[torch.Tensor] = []
        start = 0
        for row in rows:
            if not row.tokens:
                raise ValueError("empty row")
            offset = 0
            if row.prefix is None:
                row_prefix.append(None)
            else:
                offset = row.prefix.length
                row_prefix.append(slot_of.setdefault(id(row.prefix), len(prefixes)))
                if row_prefix[-1] == len(prefixes):
                    prefixes.append(row.prefix)
            spans.append(RowSpan(start, start + len(row.tokens)))
            positions.append(torch.arange(offset, offset + len(row.tokens)))
            start += len(row.tokens)

        ids = torch.tensor([t for row in rows for t in row.tokens], device=device)
        cos, sin = rotary_tables(self.inv_freq, torch.cat(positions).to(device), self.dtype)
        captures = [
            torch.empty(
                2,
                spec.num_layers,
                row.capture,
                spec.num_kv_heads,
                spec.head_dim,
                dtype=self.dtype,
                device=device,
            )
            if row.capture
            else None
            for row in rows
        ]

        # The padded attention layout depends only on the rows: build it once for all layers.
        plan = plan_attention(
            spans, row_prefix, [p.length for p in prefixes], spec.num_heads, device
        )
        hidden = self.embed[ids]
        q_size = spec.num_heads * spec.head_dim
        kv_size = spec.num_kv_heads * spec.head_dim
        for index, layer in enumerate(self.layers):
            x = self.rmsnorm(hidden, layer.input_norm, spec.rms_norm_eps)
            qkv = F.linear(x, layer.qkv, layer.qkv_bias)
            q, k, v = qkv.split((q_size, kv_size, kv_size), dim=-1)
            q = q.view(-1, spec.num_heads, spec.head_dim)
            k = k.view(-1, spec.num_kv_heads, spec.head_dim)
            v = v.view(-1, spec.num_kv_heads, spec.head_dim)
            if layer.q_norm is not None and layer.k_norm is not None:
                q = self.rmsnorm(q, layer.q_norm, spec.rms_norm_eps)
                k = self.rmsnorm(k, layer.k_norm, spec.rms_norm_eps)
            q = apply_rotary(q, cos, sin)
            k = apply_rotary(k, cos, sin)
            for span, row, capture in zip(spans, rows, captures, strict=True):
                if capture is not None:
                    capture[0, index] = k[span.start : span.start + row.capture]
                    capture[1, index] = v[span.start : span.start + row.capture]
            layer_prefixes = [(p.keys[index], p.values[index]) for p in prefixes]
            attn = packed_attention(
                q, k, v, spans, row_prefix, layer_prefixes, self.scale, plan=plan
            )
            hidden = hidden + F.linear(attn.reshape(-1, q_size), layer.o_proj, layer.o_bias)
            x = self.rmsnorm(hidden, layer.post_norm, spec.rms_norm_eps)
            gate, up = F.linear(x, layer.gate_up).chunk(2, dim=-1)
            hidden = hidden + F.linear(F.silu(gate) * up, layer.down)

        last = torch.tensor([span.end - 1 for span in spans], device=device)
        final = self.rmsnorm(hidden[last], self.final_norm, spec.rms_norm_eps)
        logits = F.linear(final, self.head).float()
        captured = [None if c is None else PrefixKV(keys=c[0], values=c[1]) for c in captures]
        return ForwardOutput(logits=logits, captured=captured)


def _read_safetensors(folder: Path) -> dict[str, torch.Tensor]:
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise EngineError(f"{folder}: no *.safetensors weights")
    tensors: dict[str, torch.Tensor] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as handle:
            for name in handle.keys():  # noqa: SIM118 - safe_open is not a mapping
                tensors[name] = handle.get_tensor(name)
    return tensors

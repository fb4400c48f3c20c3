"""Pure-torch decoder (Llama architecture and Qwen3 dense) over one packed chunk of rows.

Contract:
- ``Decoder.load(folder, spec, answer_ids, device)`` reads safetensors weights (re-tying the LM
  head to the embeddings when the config says so) and keeps the full LM head plus a copy pruned
  to the rows of ``answer_ids``.
- ``Decoder.forward(chunk, arena)`` runs all rows of a ``batching.ChunkInputs`` as one packed
  [T, hidden] tensor without padding. In every layer it first writes the K/V of the chunk's
  written tokens into their arena slots, then attends (``engine.attention``): each row causally
  to itself and to its prefix's slots in the arena — which may include slots written by an
  earlier row of the same chunk in this very layer, so a document's blocks and its suffix rows
  can share one chunk. It returns the final-normed hidden states of the readout positions
  (answer reads, then vocabulary reads).
- ``answer_logits`` / ``vocab_logits``: float32 logits of hidden states through the pruned / full
  LM head.
- float32 on CPU, with the row-invariant ops of ``engine.invariant`` (a row's numbers never depend
  on its chunk mates); bfloat16 on CUDA (RMSNorm as the Triton kernel of ``kernels.rmsnorm``,
  everything else plain torch). Callers run it under ``torch.inference_mode``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open

from heron.engine import invariant
from heron.engine.api import EngineError
from heron.engine.attention import packed_attention
from heron.engine.batching import ChunkInputs
from heron.engine.kv_cache import KVArena
from heron.engine.rope import apply_rotary, inverse_frequencies, rotary_tables
from heron.engine.spec import ModelSpec
from heron.kernels.rmsnorm import rmsnorm, rmsnorm_reference


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
Linear = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]


def _pick_rmsnorm(device: torch.device) -> Norm:
    # The Triton kernel where it can run, else its torch twin (same contract, float32 math; its
    # per-row reductions are row-invariant on CPU).
    if device.type == "cuda" and importlib.util.find_spec("triton") is not None:
        return rmsnorm
    return rmsnorm_reference


def _pick_linear(device: torch.device, tile: int = invariant.TILE) -> Linear:
    if device.type == "cuda":
        return F.linear
    return lambda x, weight, bias: invariant.linear(x, weight, bias, tile)


def _pick_silu(device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
    return F.silu if device.type == "cuda" else invariant.silu


def default_dtype(device: str) -> torch.dtype:
    return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32


class Decoder:
    def __init__(
        self,
        spec: ModelSpec,
        embed: torch.Tensor,
        layers: list[_Layer],
        final_norm: torch.Tensor,
        lm_head: torch.Tensor,
        answer_ids: Sequence[int],
        num_params: int,
    ) -> None:
        self.spec = spec
        self.embed = embed
        self.layers = layers
        self.final_norm = final_norm
        self.lm_head = lm_head  # [vocab, hidden]
        # Only these rows are needed to read TRUE/FALSE: a [len(answer_ids), hidden] copy.
        self.answer_head = lm_head[list(answer_ids)].contiguous()
        self.num_params = num_params
        self.inv_freq = inverse_frequencies(spec.rope, spec.head_dim).to(embed.device)
        self.scale = spec.head_dim**-0.5
        self.rmsnorm = _pick_rmsnorm(embed.device)
        self.linear = _pick_linear(embed.device)
        self.head_linear = _pick_linear(embed.device, invariant.HEAD_TILE)
        self.silu = _pick_silu(embed.device)

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
        tied = spec.tie_word_embeddings or "lm_head.weight" not in tensors
        lm_head = embed if tied else take("lm_head.weight")
        return cls(spec, embed, layers, take("model.norm.weight"), lm_head, answer_ids, num_params)

    def forward(self, chunk: ChunkInputs, arena: KVArena) -> torch.Tensor:
        """Final-normed hidden states [answer reads + vocabulary reads, hidden] of ``chunk``."""
        spec = self.spec
        cos, sin = rotary_tables(self.inv_freq, chunk.positions, self.dtype)
        hidden = self.embed[chunk.token_ids]
        q_size = spec.num_heads * spec.head_dim
        kv_size = spec.num_kv_heads * spec.head_dim
        writes = chunk.write_index.numel() > 0
        for index, layer in enumerate(self.layers):
            x = self.rmsnorm(hidden, layer.input_norm, spec.rms_norm_eps)
            qkv = self.linear(x, layer.qkv, layer.qkv_bias)
            q, k, v = qkv.split((q_size, kv_size, kv_size), dim=-1)
            q = q.view(-1, spec.num_heads, spec.head_dim)
            k = k.view(-1, spec.num_kv_heads, spec.head_dim)
            v = v.view(-1, spec.num_kv_heads, spec.head_dim)
            if layer.q_norm is not None and layer.k_norm is not None:
                q = self.rmsnorm(q, layer.q_norm, spec.rms_norm_eps)
                k = self.rmsnorm(k, layer.k_norm, spec.rms_norm_eps)
            q = apply_rotary(q, cos, sin)
            k = apply_rotary(k, cos, sin)
            store = (arena.keys[index], arena.values[index])
            if writes:  # before attention: later rows of this chunk may read these slots
                store[0].index_copy_(0, chunk.write_slots, k.index_select(0, chunk.write_index))
                store[1].index_copy_(0, chunk.write_slots, v.index_select(0, chunk.write_index))
            attn = packed_attention(
                q, k, v, chunk.spans, chunk.row_prefix, chunk.prefix_slots, store, self.scale,
                plan=chunk.attention,
            )
            hidden = hidden + self.linear(attn.reshape(-1, q_size), layer.o_proj, layer.o_bias)
            x = self.rmsnorm(hidden, layer.post_norm, spec.rms_norm_eps)
            gate, up = self.linear(x, layer.gate_up, None).chunk(2, dim=-1)
            hidden = hidden + self.linear(self.silu(gate) * up, layer.down, None)

        reads = torch.cat([chunk.answer_index, chunk.vocab_index])
        return self.rmsnorm(hidden[reads], self.final_norm, spec.rms_norm_eps)

    def answer_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """float32 logits [rows, len(answer_ids)] through the pruned LM head."""
        return self.head_linear(hidden, self.answer_head, None).float()

    def vocab_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """float32 logits [rows, vocab] through the full LM head."""
        return self.head_linear(hidden, self.lm_head, None).float()


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

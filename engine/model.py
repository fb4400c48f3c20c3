"""Pure-torch decoder (Llama architecture and Qwen3 dense) over one packed chunk of rows.

Contract:
- ``Decoder.load(folder, spec, answer_ids, device, dtype, deterministic)`` reads safetensors
  weights (re-tying the LM head to the embeddings when the config says so) and keeps the full LM
  head plus a copy pruned to the rows of ``answer_ids``. With ``dtype="fp8"`` the decoder
  layers' projections are quantized at load to FP8 e4m3 with per-output-channel scales
  (activations are quantized per token as they run); embeddings, norms and heads stay bf16.
  An FP8 block-quantized checkpoint (``ModelSpec.fp8_block``: Qwen's -FP8 releases) is read
  dequantized, one weight at a time (``dequantize_blocks``: exact in float32), then treated as
  any other: rounded to the engine's dtype, or quantized per channel for ``dtype="fp8"``.
- ``Decoder.forward(chunk, arena)`` runs all rows of a ``batching.ChunkInputs`` as one packed
  [T, hidden] tensor without padding. In every layer it first writes the K/V of the chunk's
  written tokens into their arena slots, then attends (``engine.attention``): each row causally
  to itself and to its prefix's slots in the arena — which may include slots written by an
  earlier row of the same chunk in this very layer, so a document's blocks and its suffix rows
  can share one chunk. It returns the final-normed hidden states of the readout positions
  (answer reads, then vocabulary reads); the last layer's projection and MLP run on those rows
  only (every token's K/V is still written).
- ``answer_logits`` / ``vocab_logits``: float32 logits of hidden states through the pruned / full
  LM head.
- the arithmetic is ``engine.ops``: float32 torch twins on CPU, fused Triton kernels in bfloat16
  on CUDA, row-invariant on both unless ``deterministic`` is off (then cuBLAS linears); attention
  is ``engine.attention``'s backend for the device. Callers run it under
  ``torch.inference_mode``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open

from heron.engine.api import EngineError
from heron.engine.attention import attend
from heron.engine.batching import ChunkInputs
from heron.engine.config import DTYPES
from heron.engine.kv_cache import KVArena
from heron.engine.ops import Ops, Weight
from heron.engine.rope import inverse_frequencies, rotary_tables
from heron.engine.spec import ModelSpec
from heron.kernels.qk_norm_rope import ArenaWrite


@dataclass(frozen=True)
class _Layer:
    input_norm: torch.Tensor
    qkv: Weight  # q, k, v projections fused into one GEMM
    qkv_bias: torch.Tensor | None
    q_norm: torch.Tensor | None  # Qwen3 per-head RMSNorm
    k_norm: torch.Tensor | None
    o_proj: Weight
    o_bias: torch.Tensor | None
    post_norm: torch.Tensor
    gate_up: Weight  # gate and up projections fused, in ``Ops.gate_up``'s layout
    down: Weight


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
        ops: Ops,
    ) -> None:
        self.spec = spec
        self.embed = embed
        self.layers = layers
        self.final_norm = final_norm
        self.lm_head = Weight(lm_head)  # [vocab, hidden]
        # Only these rows are needed to read TRUE/FALSE: a [len(answer_ids), hidden] copy.
        self.answer_head = Weight(lm_head[list(answer_ids)].contiguous())
        self.num_params = num_params
        self.inv_freq = inverse_frequencies(spec.rope, spec.head_dim).to(embed.device)
        self.scale = spec.head_dim**-0.5
        self.ops = ops

    @property
    def device(self) -> torch.device:
        return self.embed.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    @classmethod
    def load(
        cls,
        folder: Path,
        spec: ModelSpec,
        answer_ids: Sequence[int],
        device: str = "cpu",
        weights: str = "bf16",
        deterministic: bool = True,
    ) -> Decoder:
        if weights not in DTYPES:
            raise EngineError(f"dtype must be one of {', '.join(DTYPES)}, got {weights!r}")
        dtype = default_dtype(device)
        tensors = _read_safetensors(folder)
        scales = {name for name in tensors if name.endswith(("weight_scale_inv", "weight_scale"))}
        if scales and (spec.fp8_block is None or any(n.endswith("_scale") for n in scales)):
            raise EngineError(f"{folder}: weight scales ({sorted(scales)[0]!r}, ...) without a "
                              "quantization_config of quant_method 'fp8' and weight_block_size: "
                              "only FP8 block-quantized checkpoints are supported")
        num_params = sum(t.numel() for name, t in tensors.items() if name not in scales)

        def take(name: str) -> torch.Tensor:
            if name not in tensors:
                raise EngineError(f"{folder}: weight {name!r} missing from the safetensors files")
            scale = tensors.get(name + "_scale_inv")
            if scale is not None:  # one tensor at a time: never a float32 copy of the model
                assert spec.fp8_block is not None
                return dequantize_blocks(tensors[name], scale, spec.fp8_block).to(
                    device=device, dtype=dtype)
            if tensors[name].element_size() == 1:  # FP8 values mean nothing without a scale
                raise EngineError(f"{folder}: weight {name!r} is {tensors[name].dtype} without "
                                  f"its {name + '_scale_inv'!r}")
            return tensors[name].to(device=device, dtype=dtype)

        def maybe(name: str) -> torch.Tensor | None:
            return take(name) if name in tensors else None

        def projection(weight: torch.Tensor) -> Weight:
            return Weight.quantized(weight) if weights == "fp8" else Weight(weight)

        ops = Ops.build(device, deterministic)

        layers = []
        for i in range(spec.num_layers):
            p = f"model.layers.{i}."
            attn = p + "self_attn."
            biases = [maybe(attn + f"{x}_proj.bias") for x in "qkv"]
            layers.append(
                _Layer(
                    input_norm=take(p + "input_layernorm.weight"),
                    qkv=projection(torch.cat([take(attn + f"{x}_proj.weight") for x in "qkv"])),
                    qkv_bias=torch.cat(biases) if all(b is not None for b in biases) else None,
                    q_norm=take(attn + "q_norm.weight") if spec.qk_norm else None,
                    k_norm=take(attn + "k_norm.weight") if spec.qk_norm else None,
                    o_proj=projection(take(attn + "o_proj.weight")),
                    o_bias=maybe(attn + "o_proj.bias"),
                    post_norm=take(p + "post_attention_layernorm.weight"),
                    gate_up=ops.gate_up(take(p + "mlp.gate_proj.weight"),
                                        take(p + "mlp.up_proj.weight"), weights == "fp8"),
                    down=projection(take(p + "mlp.down_proj.weight")),
                )
            )
        embed = take("model.embed_tokens.weight")
        tied = spec.tie_word_embeddings or "lm_head.weight" not in tensors
        lm_head = embed if tied else take("lm_head.weight")
        return cls(spec, embed, layers, take("model.norm.weight"), lm_head, answer_ids, num_params,
                   ops)

    def forward(self, chunk: ChunkInputs, arena: KVArena) -> torch.Tensor:
        """Final-normed hidden states [answer reads + vocabulary reads, hidden] of ``chunk``."""
        spec, ops, eps = self.spec, self.ops, self.spec.rms_norm_eps
        cos, sin = rotary_tables(self.inv_freq, chunk.positions, self.dtype)
        hidden = self.embed[chunk.token_ids]
        q_size = spec.num_heads * spec.head_dim
        # FP8 projections take their input rows quantized by the norm or SiLU·mul before them.
        quantize = self.layers[0].gate_up.fp8
        # The residual add of each block is fused with the norm that follows it.
        x = ops.rmsnorm(hidden, self.layers[0].input_norm, eps)
        reads = torch.cat([chunk.answer_index, chunk.vocab_index])
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            qkv = ops.linear(x, layer.qkv, layer.qkv_bias)
            store = (arena.keys[index], arena.values[index])
            # Kept K/V reach the arena before attention: later rows of the chunk may read them.
            # (Passed even when no token is kept: one kernel variant for every chunk, so a chunk
            # of another shape never waits for a compile.)
            q, k, v = ops.qk_norm_rope(qkv, spec.num_heads, spec.num_kv_heads, layer.q_norm,
                                       layer.k_norm, eps, cos, sin,
                                       ArenaWrite(*store, chunk.token_slots))
            attn = attend(q, k, v, chunk.spans, chunk.row_prefix, chunk.prefix_slots, store,
                          self.scale, chunk.attention).reshape(-1, q_size)
            if index == last:
                # Every token's K/V is kept, but only the read positions' hidden states leave
                # the last layer: its projection and MLP run on those rows alone (row-invariant
                # ops, so the same bits; a filter's chunk saves ~2 % of its GEMM work).
                attn, hidden = attn[reads], hidden[reads]
                if not len(reads):
                    return hidden
            out = ops.linear(attn, layer.o_proj, layer.o_bias)
            x, hidden = ops.add_rmsnorm(out, hidden, layer.post_norm, eps, quantize)
            out = ops.linear(ops.gated(x, layer.gate_up, quantize), layer.down, None)
            if index < last:
                x, hidden = ops.add_rmsnorm(out, hidden, self.layers[index + 1].input_norm, eps,
                                            quantize)
        return ops.add_rmsnorm(out, hidden, self.final_norm, eps)[0]

    def answer_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """float32 logits [rows, len(answer_ids)] through the pruned LM head."""
        return self.ops.head(hidden, self.answer_head, None).float()

    def vocab_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """float32 logits [rows, vocab] through the full LM head."""
        return self.ops.head(hidden, self.lm_head, None).float()


def dequantize_blocks(weight: torch.Tensor, scale: torch.Tensor, block: tuple[int, int]
                      ) -> torch.Tensor:
    """An FP8 block-quantized weight [N, K] in float32 (exact): each element times the scale
    [⌈N/rows⌉, ⌈K/columns⌉] of its block."""
    rows, columns = weight.shape
    if scale.shape != (-(-rows // block[0]), -(-columns // block[1])):
        raise EngineError(f"a weight of shape {tuple(weight.shape)} has scales of shape "
                          f"{tuple(scale.shape)}, not one per block of {block[0]}x{block[1]}")
    full = scale.float().repeat_interleave(block[0], 0)[:rows].repeat_interleave(block[1], 1)
    return weight.float() * full[:, :columns]


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

"""The forward pass's numeric operations, chosen once per engine: fused kernels or their twins.

Contract: ``Ops.build(device, deterministic)`` returns the operations ``engine.model`` calls for
every layer — ``linear`` and ``head`` (an LM head), ``rmsnorm``, ``add_rmsnorm``,
``qk_norm_rope``, ``silu_mul``, and ``logsumexp`` for full-vocabulary log-probabilities — each
with the semantics of its torch twin in ``kernels/``, and each row-invariant where the engine's
canonical evaluation needs it (a row's bits never depend on what else shares the chunk):

- on CUDA with Triton: the fused Triton kernels; linear layers through the batch-invariant Triton
  GEMM when ``deterministic`` (on Hopper at cuBLAS's speed, bench/NOTES.md), else cuBLAS (bf16)
  or ``torch._scaled_mm`` (FP8), whose kernels change with the row count;
- elsewhere (CPU, float32): the twins, with linears in fixed row tiles (``engine.invariant``),
  since MKL's GEMM rounds a row differently with the batch.

``Weight`` is one linear layer's weight: bf16 (or float32), or FP8 e4m3 with a per-output-channel
scale; ``Weight.quantized`` makes the FP8 form at load. SwiGLU's gate and up projections are one
weight in the layout ``Ops.gate_up`` chooses, and ``Ops.gated`` computes ``silu(gate) * up`` from
it: on Hopper with the batch-invariant GEMM, one GEMM whose epilogue applies SiLU·mul
(``matmul.gated_matmul``, or ``gated_scaled_matmul`` for FP8, whose epilogue also finds each
row's FP8 scale: the same bits as the two steps); elsewhere a linear, then ``silu_mul``. A
linear with FP8 weights quantizes its input rows, unless they come already quantized
(``fp8.QuantizedRows``): ``add_rmsnorm`` and ``silu_mul`` given ``quantize=True`` produce them
in the same pass (the same bits).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from heron.engine import invariant
from heron.kernels import add_rmsnorm, fp8, logsumexp, matmul, qk_norm_rope, rmsnorm, silu_mul
from heron.kernels.fp8 import QuantizedRows


@dataclass(frozen=True)
class Weight:
    """A linear layer's weight [N, K]: ``scale`` [N, 1] float32 when ``data`` is FP8."""

    data: torch.Tensor
    scale: torch.Tensor | None = None
    interleaved: bool = False  # gate/up rows alternate, for ``matmul.gated_matmul``

    @classmethod
    def quantized(cls, weight: torch.Tensor, interleaved: bool = False) -> Weight:
        data, scale = fp8.quantize_rows(weight)
        return cls(data, scale, interleaved)

    @property
    def fp8(self) -> bool:
        return self.scale is not None

    @property
    def shape(self) -> torch.Size:
        return self.data.shape


Activations = torch.Tensor | QuantizedRows  # a linear layer's input rows
Linear = Callable[[Activations, Weight, torch.Tensor | None], torch.Tensor]


@dataclass(frozen=True)
class Ops:
    linear: Linear  # a decoder layer's projections
    head: Linear  # an LM head: few rows at a time, a wide vocabulary
    rmsnorm: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
    add_rmsnorm: Callable[..., tuple[Activations, torch.Tensor]]  # (x, residual, w, eps, quantize)
    qk_norm_rope: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    silu_mul: Callable[..., Activations]  # (gate_up, quantize)
    logsumexp: Callable[[torch.Tensor], torch.Tensor]  # rows of vocabulary logits, float32
    kernels: bool  # the fused Triton kernels (else the torch twins)
    fuse_gate: bool = False  # gate/up weights interleaved where the gated GEMM runs

    @classmethod
    def build(cls, device: torch.device | str, deterministic: bool = True) -> Ops:
        device = torch.device(device)
        if device.type != "cuda" or importlib.util.find_spec("triton") is None:
            return cls(_tiled(invariant.TILE), _tiled(invariant.HEAD_TILE),
                       rmsnorm.rmsnorm_reference, add_rmsnorm.add_rmsnorm_reference,
                       qk_norm_rope.qk_norm_rope_reference, silu_mul.silu_mul_reference,
                       logsumexp.logsumexp_rows_reference, kernels=False)
        linear = _linear_invariant if deterministic else _linear_fast
        return cls(linear, linear, rmsnorm.rmsnorm, add_rmsnorm.add_rmsnorm,
                   qk_norm_rope.qk_norm_rope, silu_mul.silu_mul, logsumexp.logsumexp_rows,
                   kernels=True, fuse_gate=deterministic)

    def gate_up(self, gate: torch.Tensor, up: torch.Tensor, fp8: bool) -> Weight:
        """One weight for SwiGLU's gate [I, K] and up [I, K] projections, in ``gated``'s layout
        (quantized per output channel with ``fp8``: interleaving changes no row's scale)."""
        interleaved = self.fuse_gate and matmul.gated_fits(gate, fp8)
        weight = (matmul.interleave_gate_up(gate, up) if interleaved
                  else torch.cat([gate, up]))
        if fp8:
            return Weight.quantized(weight, interleaved)
        return Weight(weight, interleaved=interleaved)

    def gated(self, x: Activations, weight: Weight, quantize: bool) -> Activations:
        """``silu(x @ gate.T) * (x @ up.T)`` for a weight from ``gate_up``."""
        if weight.interleaved and weight.fp8:
            assert weight.scale is not None
            return matmul.gated_scaled_matmul(QuantizedRows.of(x), weight.data, weight.scale,
                                              quantize)
        if weight.interleaved:
            assert isinstance(x, torch.Tensor)
            return matmul.gated_matmul(x, weight.data)
        return self.silu_mul(self.linear(x, weight, None), quantize)


def _tiled(tile: int) -> Linear:
    def linear(x: Activations, weight: Weight, bias: torch.Tensor | None = None
               ) -> torch.Tensor:
        if weight.fp8:  # dequantized once per call: the CPU path is the reference, not fast
            assert weight.scale is not None
            rows = QuantizedRows.of(x)
            data = weight.data.float() * weight.scale
            return invariant.linear(rows.data.float() * rows.scale, data, bias, tile).to(rows.dtype)
        assert isinstance(x, torch.Tensor)
        return invariant.linear(x, weight.data, bias, tile)

    return linear


def _with_bias(out: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return out if bias is None else out + bias


def _linear_fast(x: Activations, weight: Weight, bias: torch.Tensor | None = None
                 ) -> torch.Tensor:
    if weight.fp8:
        assert weight.scale is not None
        return _with_bias(fp8.fp8_linear(x, weight.data, weight.scale), bias)
    assert isinstance(x, torch.Tensor)
    return F.linear(x, weight.data, bias)


def _linear_invariant(x: Activations, weight: Weight, bias: torch.Tensor | None = None
                      ) -> torch.Tensor:
    if weight.fp8:
        assert weight.scale is not None
        rows = QuantizedRows.of(x)
        out = matmul.scaled_matmul(rows.data, rows.scale, weight.data, weight.scale,
                                   out_dtype=rows.dtype)
    else:
        assert isinstance(x, torch.Tensor)
        out = matmul.matmul(x, weight.data)
    return _with_bias(out, bias)

"""Row-invariant CPU arithmetic: the torch ops whose per-row results change with the batch.

Contract: each function here equals its plain torch counterpart within float32 rounding, and a
row's result is bit-identical whatever other rows share the call (how many, and where it sits
among them). The engine's canonical evaluation needs that on CPU, where plain torch breaks it:

- ``F.linear`` (MKL sgemm) picks its kernel and blocking by the row count M: measured with torch
  2.13 on an AVX-512 Xeon, rows differ from the same rows in a larger call for M = 1-3 at
  K=576, and for M = 1-15 and 57-129 at K=1536 (up to 7e-5). ``linear`` cuts the rows into
  fixed tiles of ``TILE`` rows (the last one zero-padded), one GEMM call per tile, so every call
  has the same shape.
- ``F.silu`` (and ``torch.sigmoid``) round differently in the vectorized body and in the scalar
  tail of the loop, whose boundaries move with the tensor's size; the SiLU·mul twin
  (``kernels.silu_mul``) is composed of ops that do not (``exp`` and IEEE division).

On CUDA the model uses the plain ops; fixed-tiling GPU kernels are ``kernels/``'s business.
"""

from __future__ import annotations

import torch

# Rows per GEMM call. Measured on SmolLM2's four linear shapes, 2 cores, OMP_WAIT_POLICY=PASSIVE:
# against one F.linear call, 64-row tiles cost 2.1x at 4096 rows, 128-row tiles 1.15x (and 5x at
# 8 rows, a decode step, where the padding dominates); 256-row tiles 1.1x but 8x at 8 rows.
TILE = 128
# Rows per call through an LM head: few rows are read at a time, and the vocabulary is wide.
HEAD_TILE = 16


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           tile: int = TILE) -> torch.Tensor:
    """``x @ weight.T (+ bias)`` for x [T, K], in fixed tiles of ``tile`` rows (a weight must
    always be used with the same tile for its rows to be invariant)."""
    rows = x.shape[0]
    padded = -(-rows // tile) * tile
    if padded != rows:
        x = torch.cat([x, x.new_zeros(padded - rows, x.shape[1])])
    out = x.new_empty(padded, weight.shape[0])
    transposed = weight.t()
    for start in range(0, padded, tile):
        torch.mm(x[start : start + tile], transposed, out=out[start : start + tile])
    out = out[:rows]
    return out if bias is None else out + bias

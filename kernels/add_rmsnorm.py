"""Residual add fused with RMSNorm: ``h = x + residual``; ``y = h / sqrt(mean(h**2) + eps) * w``.

Contract: ``add_rmsnorm(x, residual, weight, eps) -> (y, h)`` for ``x`` and ``residual`` of one
shape [..., N]; ``h`` is the sum rounded to x's dtype (the new residual stream, exactly what
``x + residual`` gives in torch), ``y`` its RMSNorm computed in float32 from that rounded sum and
returned in x's dtype. ``add_rmsnorm_reference`` is the torch twin and the CPU path; the Triton
kernel (CUDA only) reads both inputs once and writes both outputs once, one program per row, so a
row's result never depends on the other rows (batch-invariant). Triton is imported on first use.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from heron.kernels.rmsnorm import rmsnorm_reference


def add_rmsnorm_reference(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                          eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    h = x + residual
    return rmsnorm_reference(h, weight, eps), h


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Triton twin of ``add_rmsnorm_reference``; inputs on a CUDA device."""
    import triton  # noqa: PLC0415 - GPU machines only

    n = x.shape[-1]
    rows_x = x.reshape(-1, n).contiguous()
    rows_r = residual.reshape(-1, n).contiguous()
    y = torch.empty_like(rows_x)
    h = torch.empty_like(rows_x)
    block = triton.next_power_of_2(n)
    _kernel()[(rows_x.shape[0],)](rows_x, rows_r, weight, y, h, n, eps, BLOCK=block,
                                  num_warps=min(16, max(4, block // 256)))
    return y.view(x.shape), h.view(x.shape)


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def add_rmsnorm_rows(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
        # Round the sum to the storage dtype first: the norm is taken of what the stream holds.
        h = (x + r).to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + row * n + cols, h, mask=mask)
        hf = h.to(tl.float32)
        inv_rms = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / n + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n + cols, (hf * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)

    return add_rmsnorm_rows

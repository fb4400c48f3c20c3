"""RMSNorm: ``y = x / sqrt(mean(x**2) + eps) * weight`` over the last dimension.

``rmsnorm_reference`` is the torch twin (float32 math, result in x's dtype) and the CPU path of
the engine. ``rmsnorm`` is the Triton kernel (CUDA only): one program per row, the whole row in
one block. Triton is imported on first use, so CPU-only machines can import this module.
"""

from __future__ import annotations

import functools
from typing import Any

import torch


def rmsnorm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm of ``x`` [..., N] with ``weight`` [N]; math in float32, output in x.dtype."""
    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Triton RMSNorm, same contract as ``rmsnorm_reference``; ``x`` must be on a CUDA device."""
    import triton  # noqa: PLC0415 - optional dependency, GPU machines only

    n = x.shape[-1]
    rows = x.reshape(-1, n)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty_like(rows)
    _kernel()[(rows.shape[0],)](
        rows, weight, out, rows.stride(0), n, eps, BLOCK=triton.next_power_of_2(n)
    )
    return out.view(x.shape)


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def rmsnorm_rows(x_ptr, w_ptr, out_ptr, row_stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + eps)
        y = x * inv_rms * w
        tl.store(out_ptr + row * n + cols, y.to(out_ptr.dtype.element_ty), mask=mask)

    return rmsnorm_rows

"""Row log-sum-exp of wide logits (the normalizer of a full-vocabulary log-softmax).

Contract: ``logsumexp_rows(x)`` for x [R, V] returns float32 [R], ``log(sum(exp(x[r])))`` computed
in float32, and a row's result does not depend on how many rows share the call. A plain torch
reduction breaks that on both devices: it splits the work by the tensor's size (CUDA: the launch
shape; CPU: the threads), which changes a row's rounding. ``logsumexp_rows_reference`` is the torch
twin and the CPU path: one reduction per row. The Triton kernel (CUDA only) runs one program per
row over the vocabulary in fixed blocks.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

BLOCK = 4096  # vocabulary entries per step: part of the numerics (the summation order)


def logsumexp_rows_reference(x: torch.Tensor) -> torch.Tensor:
    # One call per row: on the H200 host's 16-thread Xeon one call over all rows moved TEXT
    # log-probabilities by 9.5e-7 with the chunk size (bench/NOTES.md); a 2-core machine did not.
    rows = x.float()
    if not len(rows):
        return rows.new_empty(0)
    return torch.stack([torch.logsumexp(row, dim=-1) for row in rows])


def logsumexp_rows(x: torch.Tensor) -> torch.Tensor:
    """Triton twin of ``logsumexp_rows_reference``; x [R, V] on a CUDA device."""
    rows = x.contiguous()
    out = torch.empty(rows.shape[0], dtype=torch.float32, device=x.device)
    if rows.shape[0]:
        _kernel()[(rows.shape[0],)](rows, out, rows.shape[1], BLOCK=BLOCK, num_warps=8)
    return out


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415 - GPU machines only
    import triton.language as tl  # noqa: PLC0415

    @triton.jit(do_not_specialize=["width"])
    def logsumexp_row(x_ptr, out_ptr, width, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        peak = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
        total = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, width, BLOCK):  # per lane: a running max and a rescaled sum
            x = tl.load(x_ptr + row * width + start + cols, mask=start + cols < width,
                        other=float("-inf")).to(tl.float32)
            new_peak = tl.maximum(peak, x)
            safe = tl.where(new_peak == float("-inf"), 0.0, new_peak)
            total = total * tl.exp(peak - safe) + tl.exp(x - safe)
            peak = new_peak
        top = tl.max(peak, axis=0)
        lanes = tl.where(peak == float("-inf"), 0.0, total * tl.exp(peak - top))
        tl.store(out_ptr + row, top + tl.log(tl.sum(lanes, axis=0)))

    return logsumexp_row

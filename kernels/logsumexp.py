"""Row log-sum-exp of wide logits (the normalizer of a full-vocabulary log-softmax).

Contract: ``logsumexp_rows(x)`` for x [R, V] returns float32 [R], ``log(sum(exp(x[r])))`` computed
in float32. ``logsumexp_rows_reference`` is the torch twin and the CPU path. The Triton kernel
(CUDA only) runs one program per row over the vocabulary in fixed blocks, so a row's result does
not depend on how many rows share the call — torch's CUDA reduction picks its launch shape by the
tensor's size, which changes a row's rounding (seen as TEXT log-probabilities that moved with the
chunk, bench/NOTES.md).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

BLOCK = 4096  # vocabulary entries per step: part of the numerics (the summation order)


def logsumexp_rows_reference(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x.float(), dim=-1)


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

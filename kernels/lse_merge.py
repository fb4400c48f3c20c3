"""Merging two partial attention results by their log-sum-exps, scattered to their tokens.

Contract: ``lse_merge(out_a, lse_a, out_b, lse_b, out, index)`` combines attention computed over
two disjoint key sets — out_* [S, H, D] float32 with lse_* [S, H] float32 (natural log of the
scaled scores' exponential sums; -inf for an empty set) — into attention over their union,
``exp(lse_a - lse)·out_a + exp(lse_b - lse)·out_b`` with ``lse = logaddexp(lse_a, lse_b)``, and
writes row s to ``out[index[s]]`` in out's dtype. At least one of the two sets of each row must be
non-empty. ``lse_merge_reference`` is the torch twin and the CPU path; the Triton kernel (CUDA
only) reads each partial once and writes the merged row once, one program per row.
"""

from __future__ import annotations

import functools
from typing import Any

import torch


def lse_merge_reference(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor,
                        lse_b: torch.Tensor, out: torch.Tensor, index: torch.Tensor) -> None:
    lse = torch.logaddexp(lse_a, lse_b)
    merged = out_a * torch.exp(lse_a - lse)[..., None] + out_b * torch.exp(lse_b - lse)[..., None]
    out.index_copy_(0, index, merged.to(out.dtype))


def lse_merge(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor,
              out: torch.Tensor, index: torch.Tensor) -> None:
    """Triton twin of ``lse_merge_reference``; tensors on a CUDA device, contiguous partials."""
    import triton  # noqa: PLC0415 - GPU machines only

    rows, heads, dim = out_a.shape
    if rows == 0:
        return
    _kernel()[(rows,)](out_a, lse_a, out_b, lse_b, out, index, out.stride(0), H=heads,
                       H_P=triton.next_power_of_2(heads), D=dim, num_warps=4)


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def lse_merge_rows(a_ptr, la_ptr, b_ptr, lb_ptr, out_ptr, index_ptr, out_stride,
                       H: tl.constexpr, H_P: tl.constexpr, D: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        heads = tl.arange(0, H_P)
        cols = tl.arange(0, D)
        hmask = heads < H
        la = tl.load(la_ptr + row * H + heads, mask=hmask, other=0.0)
        lb = tl.load(lb_ptr + row * H + heads, mask=hmask, other=0.0)
        peak = tl.maximum(la, lb)
        wa = tl.exp(la - peak)
        wb = tl.exp(lb - peak)
        total = wa + wb
        offsets = row * H * D + heads[:, None] * D + cols[None, :]
        mask = hmask[:, None]
        a = tl.load(a_ptr + offsets, mask=mask, other=0.0)
        b = tl.load(b_ptr + offsets, mask=mask, other=0.0)
        merged = (a * wa[:, None] + b * wb[:, None]) / total[:, None]
        target = tl.load(index_ptr + row).to(tl.int64)
        dst = out_ptr + target * out_stride + heads[:, None] * D + cols[None, :]
        tl.store(dst, merged.to(out_ptr.dtype.element_ty), mask=mask)

    return lse_merge_rows

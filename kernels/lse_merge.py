"""Two partial attentions of the same queries merged by their log-sum-exps, scattered to tokens.

Contract: ``lse_merge(out_a, lse_a, out_b, lse_b, out, tokens)`` takes two attention results of
the same S queries over disjoint key sets — ``out_*`` [S, H, D] (16-bit), ``lse_*`` [H, S] float32
(natural log of each query's sum of exp(scaled scores), the layout FlashAttention returns for
packed rows) — and writes, for query s, softmax attention over the union of both key sets to
``out[tokens[s]]`` ([T, H, D], ``out``'s dtype):

    m = max(lse_a, lse_b); w_a = exp(lse_a - m); w_b = exp(lse_b - m)
    out[tokens[s]] = (w_a * out_a + w_b * out_b) / (w_a + w_b)

in float32, rounded once. A key set that is empty has lse -inf and weight 0 (not both).
``lse_merge_reference`` is the torch twin (CPU or CUDA); the Triton kernel (CUDA only) computes
each query's row by itself, so a row's result never depends on the rows beside it. Triton is
imported on first use.
"""

from __future__ import annotations

import functools
from typing import Any

import torch


def lse_merge_reference(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor,
                        lse_b: torch.Tensor, out: torch.Tensor, tokens: torch.Tensor) -> None:
    a, b = lse_a.float().t().unsqueeze(-1), lse_b.float().t().unsqueeze(-1)  # [S, H, 1]
    m = torch.maximum(a, b)
    w_a, w_b = torch.exp(a - m), torch.exp(b - m)
    merged = (w_a * out_a.float() + w_b * out_b.float()) / (w_a + w_b)
    out[tokens] = merged.to(out.dtype)


def lse_merge(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor,
              lse_b: torch.Tensor, out: torch.Tensor, tokens: torch.Tensor) -> None:
    """Triton twin of ``lse_merge_reference``; every tensor on one CUDA device."""
    import triton  # noqa: PLC0415 - GPU machines only

    queries, heads, dim = out_a.shape
    if queries == 0:
        return
    assert out_b.shape == out_a.shape and lse_a.shape == lse_b.shape == (heads, queries)
    assert out_a.stride(-1) == out_b.stride(-1) == out.stride(-1) == 1
    _kernel()[(queries,)](
        out_a, lse_a, out_b, lse_b, out, tokens,
        out_a.stride(0), out_a.stride(1), out_b.stride(0), out_b.stride(1),
        lse_a.stride(0), lse_b.stride(0), out.stride(0), out.stride(1),
        heads, dim, HEADS=triton.next_power_of_2(heads), DIM=triton.next_power_of_2(dim),
        num_warps=4)


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def lse_merge_rows(a_ptr, lse_a_ptr, b_ptr, lse_b_ptr, out_ptr, tokens_ptr,
                       stride_as, stride_ah, stride_bs, stride_bh, stride_la, stride_lb,
                       stride_os, stride_oh, heads, dim,
                       HEADS: tl.constexpr, DIM: tl.constexpr):
        s = tl.program_id(0).to(tl.int64)
        h = tl.arange(0, HEADS)
        d = tl.arange(0, DIM)
        mask = (h[:, None] < heads) & (d[None, :] < dim)
        la = tl.load(lse_a_ptr + h * stride_la + s, mask=h < heads, other=0.0)
        lb = tl.load(lse_b_ptr + h * stride_lb + s, mask=h < heads, other=0.0)
        m = tl.maximum(la, lb)
        wa = tl.exp(la - m)
        wb = tl.exp(lb - m)
        a = tl.load(a_ptr + s * stride_as + h[:, None] * stride_ah + d[None, :], mask=mask,
                    other=0.0).to(tl.float32)
        b = tl.load(b_ptr + s * stride_bs + h[:, None] * stride_bh + d[None, :], mask=mask,
                    other=0.0).to(tl.float32)
        merged = (wa[:, None] * a + wb[:, None] * b) / (wa + wb)[:, None]
        token = tl.load(tokens_ptr + s).to(tl.int64)
        tl.store(out_ptr + token * stride_os + h[:, None] * stride_oh + d[None, :],
                 merged.to(out_ptr.dtype.element_ty), mask=mask)

    return lse_merge_rows

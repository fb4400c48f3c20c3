"""Per-head RMSNorm of queries and keys (Qwen3) and rotary position embedding, in one pass.

Contract: ``qk_norm_rope(qkv, num_heads, num_kv_heads, q_weight, k_weight, eps, cos, sin)``
takes the fused QKV projection [T, (Hq + 2·Hkv)·D] and returns ``(q, k, v)``: q [T, Hq, D] and
k [T, Hkv, D] normalized per head (when the weights are given; Llama passes None) and rotated in
the Hugging Face "rotate half" layout by the tables ``cos``, ``sin`` [T, D] of each token's
position; v [T, Hkv, D] is a view of the input. The norm is computed in float32 and rounded to
the input dtype (as a norm layer's output would be), the rotation in float32 and rounded once.
Given an ``ArenaWrite``, the rotated keys and the values of every token with a slot (``slots[t]
>= 0``) are also stored at that slot of the KV arena's layer (``keys``, ``values`` [N, Hkv, D]):
the arena write costs no gather and scatter of its own.
``qk_norm_rope_reference`` is the torch twin and the CPU path; the Triton kernel (CUDA only) runs
one program per token, so a token's result never depends on the others. Triton is imported on
first use.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch

from heron.kernels.rmsnorm import rmsnorm_reference


@dataclass(frozen=True)
class ArenaWrite:
    """Where a chunk's keys and values are kept: one layer of the KV arena, and per token its
    slot there (int64 [T], -1 for a token whose K/V is not kept)."""

    keys: torch.Tensor  # [N, Hkv, D]
    values: torch.Tensor
    slots: torch.Tensor


def qk_norm_rope_reference(
    qkv: torch.Tensor, num_heads: int, num_kv_heads: int, q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None, eps: float, cos: torch.Tensor, sin: torch.Tensor,
    write: ArenaWrite | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    tokens = qkv.shape[0]
    dim = cos.shape[-1]
    q, k, v = qkv.split((num_heads * dim, num_kv_heads * dim, num_kv_heads * dim), dim=-1)
    q = q.view(tokens, num_heads, dim)
    k = k.view(tokens, num_kv_heads, dim)
    v = v.view(tokens, num_kv_heads, dim)
    if q_weight is not None and k_weight is not None:
        q = rmsnorm_reference(q, q_weight, eps)
        k = rmsnorm_reference(k, k_weight, eps)
    q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
    if write is not None:
        kept = (write.slots >= 0).nonzero()[:, 0]
        write.keys.index_copy_(0, write.slots[kept], k[kept])
        write.values.index_copy_(0, write.slots[kept], v[kept])
    return q, k, v


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x32 = x.float()
    rotated = torch.cat((-x32[..., half:], x32[..., :half]), dim=-1)
    return (x32 * cos.float()[:, None, :] + rotated * sin.float()[:, None, :]).to(x.dtype)


def qk_norm_rope(
    qkv: torch.Tensor, num_heads: int, num_kv_heads: int, q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None, eps: float, cos: torch.Tensor, sin: torch.Tensor,
    write: ArenaWrite | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Triton twin of ``qk_norm_rope_reference``; inputs on a CUDA device."""
    import triton  # noqa: PLC0415 - GPU machines only

    tokens = qkv.shape[0]
    dim = cos.shape[-1]
    qkv = qkv.contiguous()
    q = torch.empty(tokens, num_heads, dim, dtype=qkv.dtype, device=qkv.device)
    k = torch.empty(tokens, num_kv_heads, dim, dtype=qkv.dtype, device=qkv.device)
    has_norm = q_weight is not None and k_weight is not None
    weights = (q_weight, k_weight) if has_norm else (qkv, qkv)  # unread when has_norm is False
    if write is not None:
        assert write.keys.stride(1) == write.values.stride(1) == dim and write.keys.stride(2) == 1
        assert write.keys.stride(0) == write.values.stride(0)
    arena = (write.keys, write.values, write.slots) if write is not None else (k, k, qkv)
    _kernel()[(tokens,)](
        qkv, q, k, weights[0], weights[1], cos.contiguous(), sin.contiguous(), qkv.stride(0),
        *arena, arena[0].stride(0), eps, HQ=num_heads, HKV=num_kv_heads,
        HQ_P=triton.next_power_of_2(num_heads), HKV_P=triton.next_power_of_2(num_kv_heads),
        HALF=dim // 2, HAS_NORM=has_norm, WRITE=write is not None, num_warps=4)
    v = qkv[:, (num_heads + num_kv_heads) * dim:].view(tokens, num_kv_heads, dim)
    return q, k, v


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def _heads(src, dst, qw_ptr, cos_ptr, sin_ptr, token, first_head, eps,
               H: tl.constexpr, H_P: tl.constexpr, HALF: tl.constexpr, HAS_NORM: tl.constexpr):
        """Normalize and rotate heads first_head.. of one token into dst; returns the rotated
        halves (rounded to dst's dtype)."""
        heads = tl.arange(0, H_P)[:, None]
        cols = tl.arange(0, HALF)[None, :]
        mask = (heads < H) & (cols < HALF)
        offsets = (first_head + heads) * (2 * HALF) + cols
        x1 = tl.load(src + offsets, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(src + offsets + HALF, mask=mask, other=0.0).to(tl.float32)
        if HAS_NORM:
            var = (tl.sum(x1 * x1, axis=1) + tl.sum(x2 * x2, axis=1)) / (2 * HALF)
            inv = (1.0 / tl.sqrt(var + eps))[:, None]
            w1 = tl.load(qw_ptr + cols).to(tl.float32)
            w2 = tl.load(qw_ptr + HALF + cols).to(tl.float32)
            # Rounded as the norm layer's output is stored before the rotation.
            x1 = (x1 * inv * w1).to(dst.dtype.element_ty).to(tl.float32)
            x2 = (x2 * inv * w2).to(dst.dtype.element_ty).to(tl.float32)
        c1 = tl.load(cos_ptr + token * 2 * HALF + cols).to(tl.float32)
        c2 = tl.load(cos_ptr + token * 2 * HALF + HALF + cols).to(tl.float32)
        s1 = tl.load(sin_ptr + token * 2 * HALF + cols).to(tl.float32)
        s2 = tl.load(sin_ptr + token * 2 * HALF + HALF + cols).to(tl.float32)
        out = dst + token * H * 2 * HALF + heads * (2 * HALF) + cols
        o1 = (x1 * c1 - x2 * s1).to(dst.dtype.element_ty)
        o2 = (x2 * c2 + x1 * s2).to(dst.dtype.element_ty)
        tl.store(out, o1, mask=mask)
        tl.store(out + HALF, o2, mask=mask)
        return o1, o2

    @triton.jit
    def qk_norm_rope_tokens(qkv_ptr, q_ptr, k_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, stride,
                            keys_ptr, values_ptr, slots_ptr, stride_slot, eps,
                            HQ: tl.constexpr, HKV: tl.constexpr, HQ_P: tl.constexpr,
                            HKV_P: tl.constexpr, HALF: tl.constexpr, HAS_NORM: tl.constexpr,
                            WRITE: tl.constexpr):
        token = tl.program_id(0).to(tl.int64)
        src = qkv_ptr + token * stride
        _heads(src, q_ptr, qw_ptr, cos_ptr, sin_ptr, token, 0, eps, HQ, HQ_P, HALF, HAS_NORM)
        k1, k2 = _heads(src, k_ptr, kw_ptr, cos_ptr, sin_ptr, token, HQ, eps, HKV, HKV_P, HALF,
                        HAS_NORM)
        if WRITE:
            slot = tl.load(slots_ptr + token)
            if slot >= 0:  # kept: the key as rotated, the value as projected
                heads = tl.arange(0, HKV_P)[:, None]
                cols = tl.arange(0, HALF)[None, :]
                mask = (heads < HKV) & (cols < HALF)
                at = slot * stride_slot + heads * (2 * HALF) + cols
                tl.store(keys_ptr + at, k1, mask=mask)
                tl.store(keys_ptr + at + HALF, k2, mask=mask)
                v = src + (HQ + HKV) * 2 * HALF + heads * (2 * HALF) + cols
                tl.store(values_ptr + at, tl.load(v, mask=mask), mask=mask)
                tl.store(values_ptr + at + HALF, tl.load(v + HALF, mask=mask), mask=mask)

    return qk_norm_rope_tokens

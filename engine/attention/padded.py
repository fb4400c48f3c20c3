"""Batched attention over packed rows: a constant number of kernel launches per layer.

Contract: ``packed_attention`` returns what ``reference.packed_attention_reference`` returns
(within float32 rounding for float32 inputs), running the calls an ``AttentionPlan`` lays out:
causal ``scaled_dot_product_attention`` per length bucket for rows without a prefix, padded
explicit-math attention with log-sum-exp for the own and shared parts of suffix rows (prefix keys
and values gathered from the KV store by slot, never copied per prefix), and one vectorized
``merge_partials`` over every suffix token. The number of calls does not depend on
the number of rows and prefix groups, as long as the padded score tensors fit the plan's budget.

The explicit-math path computes scores, softmax and log-sum-exp in float32 whatever the input
dtype. Its matmul operands are float32 too, except for 16-bit CUDA inputs with ``low_precision``
(the default): there they stay 16-bit with float32 accumulation and output (tensor cores), where
this torch supports it — probed once per device and dtype. Grouped-query attention views query
heads as [kv_heads, group], so keys and values are never repeated.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from heron.engine.attention.plan import AttentionPlan, RowSpan, plan_attention
from heron.engine.attention.reference import merge_partials


def packed_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rows: Sequence[RowSpan],
    row_prefix: Sequence[int | None],
    prefix_slots: Sequence[np.ndarray],
    store: tuple[torch.Tensor, torch.Tensor],
    scale: float,
    plan: AttentionPlan | None = None,
    *,
    low_precision: bool = True,
) -> torch.Tensor:
    """Attention output [T, Hq, D] (dtype of q) for packed rows.

    ``row_prefix[i]`` is None, or the index in ``prefix_slots`` of the prefix row ``i``
    continues: the slots of ``store`` = (keys, values) [N, Hkv, D] of this layer holding it.
    ``plan`` (from ``plan_attention`` over the same rows and prefix slots) saves rebuilding the
    index layout on every layer. ``low_precision``: allow 16-bit matmul operands for 16-bit
    inputs where supported; False upcasts them to float32 (slower; isolates the rounding of the
    inputs from that of the operands).
    """
    if plan is None:
        kv_width = k.shape[1] * k.shape[2]
        plan = plan_attention(rows, row_prefix, prefix_slots, q.shape[1], kv_width, q.device)
    low = low_precision and _low_precision_supported(q.device, q.dtype)
    total, hq, dim = q.shape
    hkv = k.shape[1]
    out = torch.empty_like(q)

    for b in plan.causal:
        shape = (b.size, b.lq)
        qb = q.index_select(0, b.q_gather).view(*shape, hq, dim).transpose(1, 2)
        kb = k.index_select(0, b.q_gather).view(*shape, hkv, dim).transpose(1, 2)
        vb = v.index_select(0, b.q_gather).view(*shape, hkv, dim).transpose(1, 2)
        result = F.scaled_dot_product_attention(
            qb, kb, vb, is_causal=True, scale=scale, enable_gqa=True
        )
        flat = result.transpose(1, 2).reshape(-1, hq, dim)
        out.index_copy_(0, b.target, flat.index_select(0, b.valid).to(q.dtype))

    if plan.suffix_tokens is None:
        return out
    count = plan.suffix_tokens.shape[0]
    own_out = q.new_empty(count, hq, dim, dtype=torch.float32)
    own_lse = q.new_empty(count, hq, dtype=torch.float32)
    for b in plan.own:
        qb = q.index_select(0, b.q_gather).view(b.size, b.lq, hq, dim)
        kb = k.index_select(0, b.q_gather).view(b.size, b.lq, hkv, dim)
        vb = v.index_select(0, b.q_gather).view(b.size, b.lq, hkv, dim)
        o, lse = _padded_attention_lse(qb, kb, vb, scale, causal=True, low_precision=low)
        own_out.index_copy_(0, b.target, o.reshape(-1, hq, dim).index_select(0, b.valid))
        own_lse.index_copy_(0, b.target, lse.reshape(-1, hq).index_select(0, b.valid))

    if plan.shared_covers_all:
        shared_out = torch.empty_like(own_out)
        shared_lse = torch.empty_like(own_lse)
    else:  # tokens of an empty prefix contribute nothing
        shared_out = torch.zeros_like(own_out)
        shared_lse = torch.full_like(own_lse, float("-inf"))
    if plan.shared:
        keys, values = store
        for b in plan.shared:
            qb = q.index_select(0, b.q_gather).view(b.size, b.lq, hq, dim)
            kb = keys.index_select(0, b.k_gather).view(b.size, b.lk, hkv, dim)
            vb = values.index_select(0, b.k_gather).view(b.size, b.lk, hkv, dim)
            o, lse = _padded_attention_lse(
                qb, kb, vb, scale, causal=False, k_len=b.k_len, low_precision=low
            )
            shared_out.index_copy_(0, b.target, o.reshape(-1, hq, dim).index_select(0, b.valid))
            shared_lse.index_copy_(0, b.target, lse.reshape(-1, hq).index_select(0, b.valid))

    merged = merge_partials(shared_out, shared_lse, own_out, own_lse)
    out.index_copy_(0, plan.suffix_tokens, merged.to(q.dtype))
    return out


def _padded_attention_lse(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    causal: bool,
    k_len: torch.Tensor | None = None,
    *,
    low_precision: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """q [B, Lq, Hq, D] over k, v [B, Lk, Hkv, D]: (out [B, Lq, Hq, D], lse [B, Lq, Hq]) float32.

    Keys at or past ``k_len[b]`` are masked; ``causal`` masks key j > query i. Every query must
    keep at least one key. Softmax and log-sum-exp in float32; GQA without repeating K/V.
    ``low_precision``: matmul operands in the inputs' dtype (``_low_precision_supported`` must
    hold for it), else upcast to float32.
    """
    b, lq, hq, dim = q.shape
    lk, hkv = k.shape[1], k.shape[2]
    group = hq // hkv
    # [B, Hkv, G*Lq, D] @ [B, Hkv, D, Lk]: all query heads of a KV head share one matmul.
    qg = q.view(b, lq, hkv, group, dim).permute(0, 2, 3, 1, 4).reshape(b * hkv, group * lq, dim)
    kt = k.permute(0, 2, 3, 1).reshape(b * hkv, dim, lk)
    if low_precision:  # 16-bit operands, float32 accumulation and scores (tensor cores)
        scores = torch.bmm(qg, kt, out_dtype=torch.float32).mul_(scale)
    else:
        scores = torch.bmm(qg.float() * scale, kt.float())
    scores = scores.view(b, hkv, group, lq, lk)
    if causal:
        future = torch.ones(lq, lk, dtype=torch.bool, device=q.device).triu_(1)
        scores.masked_fill_(future, float("-inf"))
    if k_len is not None:
        beyond = torch.arange(lk, device=q.device) >= k_len[:, None]  # [B, Lk]
        scores.masked_fill_(beyond[:, None, None, None, :], float("-inf"))
    peak = scores.amax(dim=-1, keepdim=True)
    probs = scores.sub_(peak).exp_()  # in place: no second score-sized buffer
    total = probs.sum(dim=-1, keepdim=True)
    probs = probs.view(b * hkv, group * lq, lk)
    vt = v.permute(0, 2, 1, 3).reshape(b * hkv, lk, dim)
    if low_precision:  # probabilities rounded to the input dtype, as flash attention does
        out = torch.bmm(probs.to(v.dtype), vt, out_dtype=torch.float32)
    else:
        out = torch.bmm(probs, vt.float())
    out = out.view(b, hkv, group, lq, dim) / total
    lse = (peak + total.log()).squeeze(-1)  # [B, Hkv, G, Lq]
    out = out.permute(0, 3, 1, 2, 4).reshape(b, lq, hq, dim)
    return out, lse.permute(0, 3, 1, 2).reshape(b, lq, hq)


@functools.cache
def _low_precision_supported(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether ``bmm(..., out_dtype=float32)`` takes ``dtype`` operands on ``device``: only
    16-bit dtypes on CUDA gain from it, and older torch builds lack that overload."""
    if device.type != "cuda" or dtype.itemsize != 2:
        return False
    try:
        probe = torch.ones(1, 2, 2, dtype=dtype, device=device)
        return torch.bmm(probe, probe, out_dtype=torch.float32).dtype == torch.float32
    except (RuntimeError, TypeError):
        return False

"""The float32 row-at-a-time twin of batched attention: the correctness oracle.

Contract:
- ``attend_with_lse(q, k, v, scale, causal)``: softmax attention of one row's queries over a key
  set, with its natural-log log-sum-exp of the scaled scores, in float32 whatever the input
  dtype; grouped-query heads without repeating K/V.
- ``merge_partials``: attention over two disjoint key sets, given each part's output and LSE,
  equals attention over their union (a part with LSE -inf contributes nothing). Each token's
  result depends only on its own inputs, bit for bit, however many tokens are merged at once
  (on CPU ``torch.logaddexp`` does not: its vectorized and scalar-tail loops round differently).
- ``packed_attention_reference``: the output ``packed_attention`` must reproduce, computed one
  row (and one prefix group) at a time; slow, simple, and kept for tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from heron.engine.attention.plan import RowSpan


def attend_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention of q [Lq, Hq, D] over k, v [Lk, Hkv, D].

    Returns (out [Lq, Hq, D] float32, lse [Lq, Hq] float32). ``causal`` requires Lq == Lk.
    """
    lq, hq, dim = q.shape
    lk, hkv, _ = k.shape
    group = hq // hkv
    qg = q.float().reshape(lq, hkv, group, dim).permute(1, 2, 0, 3)  # [Hkv, G, Lq, D]
    kt = k.float().permute(1, 2, 0)[:, None]  # [Hkv, 1, D, Lk]
    scores = torch.matmul(qg, kt) * scale  # [Hkv, G, Lq, Lk]
    if causal:
        future = torch.ones(lq, lk, dtype=torch.bool, device=q.device).triu_(1)
        scores.masked_fill_(future, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # [Hkv, G, Lq]
    probs = torch.exp(scores - lse[..., None])
    out = torch.matmul(probs, v.float().permute(1, 0, 2)[:, None])  # [Hkv, G, Lq, D]
    return out.permute(2, 0, 1, 3).reshape(lq, hq, dim), lse.permute(2, 0, 1).reshape(lq, hq)


def merge_partials(
    out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor
) -> torch.Tensor:
    """Combine attention over two disjoint key sets into attention over their union."""
    peak = torch.maximum(lse_a, lse_b)  # finite: at least one part has keys
    weight_a, weight_b = torch.exp(lse_a - peak), torch.exp(lse_b - peak)
    total = (weight_a + weight_b)[..., None]
    return (out_a * weight_a[..., None] + out_b * weight_b[..., None]) / total


def packed_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rows: Sequence[RowSpan],
    row_prefix: Sequence[int | None],
    prefix_slots: Sequence[np.ndarray],
    store: tuple[torch.Tensor, torch.Tensor],
    scale: float,
) -> torch.Tensor:
    """Row-at-a-time float32 twin of ``packed_attention`` (the correctness oracle): prefix ``s``
    is the keys and values at ``store`` slots ``prefix_slots[s]``."""
    out = torch.empty_like(q)
    groups: dict[int, list[int]] = {}
    for i, (row, slot) in enumerate(zip(rows, row_prefix, strict=True)):
        if slot is None:
            s, e = row.start, row.end
            out[s:e] = attend_with_lse(q[s:e], k[s:e], v[s:e], scale, True)[0].to(q.dtype)
        else:
            groups.setdefault(slot, []).append(i)

    for slot, members in groups.items():
        slots = torch.as_tensor(prefix_slots[slot], dtype=torch.long, device=q.device)
        prefix_k, prefix_v = store[0][slots], store[1][slots]
        index = torch.cat(
            [torch.arange(rows[i].start, rows[i].end, device=q.device) for i in members]
        )
        shared_out, shared_lse = attend_with_lse(q[index], prefix_k, prefix_v, scale, False)
        offset = 0
        for i in members:
            s, e = rows[i].start, rows[i].end
            own_out, own_lse = attend_with_lse(q[s:e], k[s:e], v[s:e], scale, True)
            n = e - s
            merged = merge_partials(
                shared_out[offset : offset + n], shared_lse[offset : offset + n], own_out, own_lse
            )
            out[s:e] = merged.to(q.dtype)
            offset += n
    return out

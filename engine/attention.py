"""Attention over packed variable-length rows, with optional resident prefix KV (torch reference).

Tokens of all rows are concatenated into one [T, heads, head_dim] tensor; ``RowSpan``s say where
each row lies. Every row gets causal self-attention. A row that continues a prefix additionally
attends, non-causally, to that prefix's keys/values; the two partial results are merged by their
log-sum-exp (cascade / Hydragen style), so all suffix rows of one prefix share a single
attention pass over its KV and the KV is never copied per row.

Grouped-query attention is handled by viewing query heads as [kv_heads, group], so keys and
values are never repeated. Explicit-math paths compute in float32 and return the log-sum-exp
needed for merging; rows without a prefix use ``scaled_dot_product_attention`` directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True, slots=True)
class RowSpan:
    start: int
    end: int


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
    lse = torch.logaddexp(lse_a, lse_b)
    return out_a * torch.exp(lse_a - lse)[..., None] + out_b * torch.exp(lse_b - lse)[..., None]


def packed_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rows: Sequence[RowSpan],
    row_prefix: Sequence[int | None],
    prefix_kv: Sequence[tuple[torch.Tensor, torch.Tensor]],
    scale: float,
) -> torch.Tensor:
    """Attention output [T, Hq, D] (dtype of q) for packed rows.

    ``row_prefix[i]`` is None, or the index in ``prefix_kv`` of the (keys, values) [P, Hkv, D]
    of this layer that row ``i`` continues; all rows of one prefix attend to it in one batch.
    """
    out = torch.empty_like(q)
    groups: dict[int, list[int]] = {}
    for i, (row, slot) in enumerate(zip(rows, row_prefix, strict=True)):
        if slot is None:
            out[row.start : row.end] = _causal_sdpa(
                q[row.start : row.end], k[row.start : row.end], v[row.start : row.end], scale
            )
        else:
            groups.setdefault(slot, []).append(i)

    for slot, members in groups.items():
        prefix_k, prefix_v = prefix_kv[slot]
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


def _causal_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    result = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None],
        k.transpose(0, 1)[None],
        v.transpose(0, 1)[None],
        is_causal=True,
        scale=scale,
        enable_gqa=True,
    )
    return result[0].transpose(0, 1)

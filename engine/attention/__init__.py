"""Attention over packed variable-length rows, with optional prefix KV read from the KV store.

The interface the model uses. Tokens of all rows are concatenated into one [T, heads, head_dim]
tensor; ``RowSpan``s say where each row lies. Every row gets causal self-attention. A row that
continues a prefix additionally attends, non-causally, to that prefix's keys/values; the two
partial results are merged by their log-sum-exp (cascade / Hydragen style), so all suffix rows
of one prefix share a single attention pass over its KV and the KV is never copied per row.
Prefix KV lives in a store (the engine's paged KV arena: one layer's keys and values
[N, Hkv, D]); a prefix is the list of store slots holding its tokens, in position order.

- ``plan(rows, row_prefix, prefix_slots, num_heads, kv_width, device)`` picks the backend for the
  device and builds its layout once per forward pass; ``attend(q, k, v, ..., plan)`` runs it.
  ``split_invariant(device)`` says whether that backend gives a token the same bits wherever its
  row starts (a prefix ending at any token, not only at a block boundary).
- ``segments``: on CUDA with Triton, the fused segment-attention kernels (row-invariant), and
  with ``attention="fa3"`` (not deterministic) question rows on FlashAttention-3 (``fa3``).
- ``padded`` (``plan_attention``, ``packed_attention``): explicit-math batched calls, the CPU
  path (row-invariant with ``row_invariant=True``, its CPU default).
- ``reference.packed_attention_reference``: the float32 row-at-a-time twin, the oracle.

What a backend must guarantee, given q [T, Hq, D] and k, v [T, Hkv, D] (Hq a multiple of Hkv;
query head h reads KV head h // (Hq / Hkv)), and for prefix s the (keys, values) [P_s, Hkv, D]
at its store slots:

- output layout: one [T, Hq, D] tensor in q's dtype, each token's output at its packed position;
  every token of every row is written;
- a row without a prefix attends causally to its own tokens only;
- a suffix row's token attends to all P_s prefix keys and causally to its row; the result equals
  softmax attention over the union of both key sets, obtained by the log-sum-exp merge
  ``out = exp(lse_a - lse) * out_a + exp(lse_b - lse) * out_b`` with
  ``lse = logaddexp(lse_a, lse_b)`` (natural log of the scaled scores' exponential sums, float32);
  an empty prefix (P_s = 0) contributes nothing (its LSE is -inf);
- the float32 reference (``reference.packed_attention_reference``) is the oracle: a backend
  matches it within float32 rounding on float32 inputs, and within the inputs' rounding on 16-bit
  inputs;
- row invariance: with ``plan_attention(..., row_invariant=True)`` (the CPU default) a row's
  output is bit-identical whatever other rows share the call, which the engine's canonical
  evaluation (``engine.scheduler``) relies on.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np
import torch

from heron.engine.attention import fa3
from heron.engine.attention.padded import packed_attention
from heron.engine.attention.plan import AttentionPlan, RowSpan, plan_attention
from heron.engine.attention.segments import SegmentPlan, plan_segments, segment_packed_attention

__all__ = ["AttentionPlan", "RowSpan", "SegmentPlan", "attend", "packed_attention", "plan",
           "plan_attention", "questions_on_fa3", "split_invariant"]


def _segments(device: torch.device) -> bool:
    return device.type == "cuda" and importlib.util.find_spec("triton") is not None


def split_invariant(device: torch.device) -> bool:
    """Whether the device's backend computes a token the same wherever its row was split from
    the tokens before it: the segment kernels' key tiles sit at absolute positions; the padded
    backend merges a prefix part and an own part, which round differently at each split."""
    return _segments(device)


def questions_on_fa3(device: torch.device, head_dim: int, dtype: torch.dtype) -> bool:
    """Whether question rows can run on FlashAttention-3 here (``segments``, ``fa3.usable``),
    for an engine started with ``attention="fa3"``: a choice made once per engine."""
    return _segments(device) and fa3.usable(device, head_dim, dtype)


def plan(rows: Sequence[RowSpan], row_prefix: Sequence[int | None],
         prefix_slots: Sequence[np.ndarray], num_heads: int, kv_width: int,
         device: torch.device, prefix_split: Sequence[bool] = (),
         row_blocks: Sequence[bool] = (), questions: bool = False
         ) -> AttentionPlan | SegmentPlan:
    """The layout of the device's backend for these rows (host work, reused by every layer).
    ``prefix_split`` marks prefixes that end inside a block their rows complete; only a
    split-invariant backend is given any (the engine seeds blocks only there). ``row_blocks``
    marks the rows that compute prefix blocks; with ``questions`` (``questions_on_fa3``) the
    others run on FlashAttention-3."""
    if _segments(device):
        return plan_segments(rows, row_prefix, prefix_slots, device, prefix_split, row_blocks,
                             questions)
    return plan_attention(rows, row_prefix, prefix_slots, num_heads, kv_width, device)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rows: Sequence[RowSpan],
           row_prefix: Sequence[int | None], prefix_slots: Sequence[np.ndarray],
           store: tuple[torch.Tensor, torch.Tensor], scale: float,
           layout: AttentionPlan | SegmentPlan) -> torch.Tensor:
    """Attention of the packed rows with the backend ``plan`` chose."""
    if isinstance(layout, SegmentPlan):
        return segment_packed_attention(q, k, v, store, scale, layout)
    return packed_attention(q, k, v, rows, row_prefix, prefix_slots, store, scale, layout)

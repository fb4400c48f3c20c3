"""The CUDA attention backend: Triton segment attention (``kernels/attention.py``), row-invariant.

Contract: ``plan_segments(rows, row_prefix, prefix_slots, device)`` builds a ``SegmentPlan`` once
per forward pass (one host-to-device copy per part, every layer reuses it);
``segment_packed_attention(q, k, v, store, scale, plan)`` meets the backend contract of
``engine.attention`` with three kernel launches per layer:

- rows without a prefix: causal over their own keys, written straight to the output;
- the shared part of suffix rows: the queries of every row over one prefix stacked into one
  segment over that prefix's store slots (the prefix's keys are read once per query tile, not
  once per row), read in place through an index, float32 with log-sum-exps;
- the own part of suffix rows: causal over their own keys, continuing each query's softmax from
  its shared partial (the log-sum-exp merge inside the kernel) and written straight to the
  rows' tokens.

Every kernel computes a query from its own key list in fixed key tiles, with a tile height fixed
per part (``LAUNCHES``), whatever else shares the launch, so a row's output is bit-identical
whichever rows share the chunk — the property the engine's canonical evaluation needs
(``engine.scheduler``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from heron.engine.attention.plan import RowSpan
from heron.kernels.attention import Launch, Segments, segment_attention
from heron.kernels.host import to_device

# Query rows per program for each part: tall tiles where a segment holds many queries (whole
# documents, an anchor's stacked rows), short ones for the own part of short suffix rows
# (bench/NOTES.md). Fixed per part: a query always meets the same tile height.
LAUNCHES = {"plain": Launch(rows=128), "own": Launch(rows=64), "shared": Launch(rows=128)}


@dataclass(frozen=True)
class SegmentPlan:
    plain: Segments | None  # rows without a prefix, over the packed keys
    own: Segments | None  # suffix rows' own part, queries in suffix order, packed keys
    shared: Segments | None  # suffix rows stacked per prefix, queries in suffix order, store
    suffix_tokens: torch.Tensor | None  # packed position of each suffix-order token


def plan_segments(rows: Sequence[RowSpan], row_prefix: Sequence[int | None],
                  prefix_slots: Sequence[np.ndarray], device: torch.device) -> SegmentPlan:
    plain = [i for i, slot in enumerate(row_prefix) if slot is None]
    by_prefix: dict[int, list[int]] = {}
    for i, slot in enumerate(row_prefix):
        if slot is not None:
            by_prefix.setdefault(slot, []).append(i)
    order = [i for members in by_prefix.values() for i in members]

    def own_keys(i: int) -> np.ndarray:
        return np.arange(rows[i].start, rows[i].end, dtype=np.int64)

    def length(i: int) -> int:
        return rows[i].end - rows[i].start

    plain_segments = None
    if plain:
        plain_segments = Segments.build([rows[i].start for i in plain], [length(i) for i in plain],
                                        [own_keys(i) for i in plain], [0] * len(plain), device)
    if not order:
        return SegmentPlan(plain_segments, None, None, None)
    suffix_start = np.concatenate([[0], np.cumsum([length(i) for i in order])[:-1]])
    own = Segments.build(suffix_start, [length(i) for i in order], [own_keys(i) for i in order],
                         [0] * len(order), device)
    starts, lengths, lists = [], [], []
    position = 0
    for slot, members in by_prefix.items():
        count = sum(length(i) for i in members)
        keys = np.asarray(prefix_slots[slot], dtype=np.int64)
        starts.append(position)
        lengths.append(count)
        lists.append(keys)
        position += count
    shared = Segments.build(starts, lengths, lists, [len(k) for k in lists], device)
    suffix_tokens = np.concatenate([own_keys(i) for i in order])
    return SegmentPlan(plain_segments, own, shared,
                       to_device(suffix_tokens, device))


def segment_packed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             store: tuple[torch.Tensor, torch.Tensor], scale: float,
                             plan: SegmentPlan) -> torch.Tensor:
    out = torch.empty_like(q)
    if plan.plain is not None:
        segment_attention(q, k, v, plan.plain, scale, out=out, launch=LAUNCHES["plain"])
    if plan.suffix_tokens is None:
        return out
    assert plan.own is not None and plan.shared is not None
    suffix = plan.suffix_tokens  # suffix order: each prefix's rows stacked
    partial = torch.empty((suffix.shape[0], *q.shape[1:]), dtype=torch.float32, device=q.device)
    shared = segment_attention(q, store[0], store[1], plan.shared, scale, out=partial,
                               with_lse=True, launch=LAUNCHES["shared"], q_index=suffix)
    assert shared[1] is not None
    segment_attention(q, k, v, plan.own, scale, out=out, launch=LAUNCHES["own"], q_index=suffix,
                      scatter=True, initial=(shared[0], shared[1]))
    return out

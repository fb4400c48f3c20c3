"""The CUDA attention backend: Triton segment attention (``kernels/attention.py``), row-invariant.

Contract: ``plan_segments(rows, row_prefix, prefix_slots, device, prefix_split)`` builds a
``SegmentPlan`` once per forward pass (one host-to-device copy per part, every layer reuses it);
``segment_packed_attention(q, k, v, store, scale, plan)`` meets the backend contract of
``engine.attention`` with two kernel launches per layer:

- rows without a prefix: causal over their own keys, written straight to the output;
- suffix rows: the queries of every row over one prefix stacked into one segment over that
  prefix's store slots (the prefix's keys are read once per query tile, not once per row), read
  in place through an index; each query then goes on over its own row's keys, causally, in the
  same softmax (the cascade without a partial result or a merge), and is written straight to
  its token. A prefix marked split (a seeded block's start) ends its last key tile with its
  rows' first own keys: their key tiles sit at absolute positions.

With ``questions`` (``plan_segments(..., questions=True)``: the engine's ``--attention fa3``,
where FlashAttention-3 loads and suits the model, ``fa3.usable``), the suffix rows that are not
prefix blocks (``row_blocks``) — a prompt's question, a label, a decode step: rows no other row
reads — run on FlashAttention-3 instead, three launches and two gathers per layer: their queries
stacked per prefix over the prefix's keys (gathered from the store), each row over its own keys
(causal), the two merged by their log-sum-exps (``kernels.lse_merge``) into their tokens. Prefix
blocks stay on segment attention: a document's blocks must get the same bits wherever it was
split (seeded blocks), which FlashAttention's tiles do not give. The engine runs this only
without ``deterministic``: a row's attention matches the float32 twin and keeps its bits when
rows are regrouped in one call, but the engine's answers were seen to change bits with the
chunking (bench/NOTES.md).

Otherwise every kernel computes a query from its own key lists in fixed key tiles, with a tile
height fixed per part (``LAUNCHES``), whatever else shares the launch, so a row's output is
bit-identical whichever rows share the chunk — the property the engine's canonical evaluation
needs (``engine.scheduler``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from heron.engine.attention import fa3
from heron.engine.attention.plan import RowSpan
from heron.kernels.attention import Launch, OwnKeys, Segments, segment_attention
from heron.kernels.host import to_device
from heron.kernels.lse_merge import lse_merge

# Query rows per program for each part (bench/NOTES.md). Fixed per part: a query always meets
# the same tile height. Suffix rows stacked over a long prefix load its tiles whole, two stages
# deep (BIO-2 chunk: 297 -> 422 TFLOP/s); rows over their own few tiles gather them (a filter
# chunk: 131 vs 127 TFLOP/s).
LAUNCHES = {"plain": Launch(rows=128, descriptors=False),
            "suffix": Launch(rows=128, num_stages=2)}


@dataclass(frozen=True)
class QuestionPlan:
    """Question rows on FlashAttention-3: queries stacked per prefix (``tokens``: the packed
    position of each), the prefixes' store slots one after another, the sequences' bounds."""

    tokens: torch.Tensor  # int64 [S]
    prefix_slots: torch.Tensor  # int64 [K]
    cu_q: torch.Tensor  # int32 [prefixes + 1]: each prefix's stacked queries
    cu_k: torch.Tensor  # int32 [prefixes + 1]: each prefix's keys
    cu_own: torch.Tensor  # int32 [rows + 1]: each row's queries (its own keys, alike)
    max_q: int
    max_k: int
    max_own: int


@dataclass(frozen=True)
class SegmentPlan:
    plain: Segments | None  # rows without a prefix, over the packed keys
    suffix: Segments | None  # suffix rows stacked per prefix, queries in suffix order, store
    own: Segments | None  # suffix rows' own keys (packed), one segment per row, suffix order
    row_of: torch.Tensor | None  # the row (of `own`) of each suffix-order token
    suffix_tokens: torch.Tensor | None  # packed position of each suffix-order token
    questions: QuestionPlan | None = None  # question rows, when on FlashAttention-3


def plan_segments(rows: Sequence[RowSpan], row_prefix: Sequence[int | None],
                  prefix_slots: Sequence[np.ndarray], device: torch.device,
                  prefix_split: Sequence[bool] = (), row_blocks: Sequence[bool] = (),
                  questions: bool = False) -> SegmentPlan:
    plain = [i for i, slot in enumerate(row_prefix) if slot is None]
    by_prefix: dict[int, list[int]] = {}
    asked: dict[int, list[int]] = {}  # question rows by prefix, when on FlashAttention-3
    for i, slot in enumerate(row_prefix):
        if slot is not None:
            on_fa3 = questions and not (row_blocks and row_blocks[i])
            (asked if on_fa3 else by_prefix).setdefault(slot, []).append(i)
    order = [i for members in by_prefix.values() for i in members]

    def own_keys(i: int) -> np.ndarray:
        return np.arange(rows[i].start, rows[i].end, dtype=np.int64)

    def length(i: int) -> int:
        return rows[i].end - rows[i].start

    plain_segments = None
    if plain:
        plain_segments = Segments.build([rows[i].start for i in plain], [length(i) for i in plain],
                                        [own_keys(i) for i in plain], [0] * len(plain), device)
    question_plan = None
    if asked:
        stacked = [i for members in asked.values() for i in members]
        queries = [sum(length(i) for i in members) for members in asked.values()]
        keys = [len(prefix_slots[slot]) for slot in asked]
        own = [length(i) for i in stacked]

        def bounds(counts: list[int]) -> torch.Tensor:
            return to_device(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32), device)

        question_plan = QuestionPlan(
            to_device(np.concatenate([own_keys(i) for i in stacked]), device),
            to_device(np.concatenate([np.asarray(prefix_slots[slot], dtype=np.int64)
                                      for slot in asked]), device),
            bounds(queries), bounds(keys), bounds(own), max(queries), max(keys), max(own))
    if not order:
        return SegmentPlan(plain_segments, None, None, None, None, question_plan)
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
    split = [bool(prefix_split) and prefix_split[slot] for slot in by_prefix]
    suffix = Segments.build(starts, lengths, lists, [len(k) for k in lists], device, split)
    suffix_tokens = np.concatenate([own_keys(i) for i in order])
    row_of = np.repeat(np.arange(len(order)), [length(i) for i in order])
    return SegmentPlan(plain_segments, suffix, own, to_device(row_of.astype(np.int32), device),
                       to_device(suffix_tokens, device), question_plan)


def segment_packed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             store: tuple[torch.Tensor, torch.Tensor], scale: float,
                             plan: SegmentPlan) -> torch.Tensor:
    out = torch.empty_like(q)
    if plan.plain is not None:
        segment_attention(q, k, v, plan.plain, scale, out=out, launch=LAUNCHES["plain"])
    if plan.suffix_tokens is not None:
        assert plan.suffix is not None and plan.own is not None and plan.row_of is not None
        segment_attention(q, store[0], store[1], plan.suffix, scale, out=out,
                          launch=LAUNCHES["suffix"], q_index=plan.suffix_tokens, scatter=True,
                          own=OwnKeys(k, v, plan.own, plan.row_of))
    if plan.questions is not None:
        _questions(q, k, v, store, scale, plan.questions, out)
    return out


def _questions(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               store: tuple[torch.Tensor, torch.Tensor], scale: float, plan: QuestionPlan,
               out: torch.Tensor) -> None:
    """Question rows on FlashAttention-3 (the module contract)."""
    queries = q.index_select(0, plan.tokens)
    prefix_out, prefix_lse = fa3.varlen(
        queries, store[0].index_select(0, plan.prefix_slots),
        store[1].index_select(0, plan.prefix_slots), plan.cu_q, plan.cu_k, plan.max_q,
        plan.max_k, scale, causal=False)
    own_out, own_lse = fa3.varlen(
        queries, k.index_select(0, plan.tokens), v.index_select(0, plan.tokens), plan.cu_own,
        plan.cu_own, plan.max_own, plan.max_own, scale, causal=True)
    lse_merge(prefix_out, prefix_lse, own_out, own_lse, out, plan.tokens)

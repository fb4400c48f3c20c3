"""Packing rows into one forward chunk: the host-side layout the model runs.

Contract:
- A ``Row`` is a run of tokens at absolute positions ``position ..``: it attends to the KV at the
  arena slots of its ``Prefix`` (exactly the positions before it) and causally to itself, may
  have its own K/V written to arena slots (``writes``), and says what to read from the output:
  the pruned answer logits at its last position (``answer``) and/or full-vocabulary reads
  (``VocabRead``: log-probabilities of given ids at a position, and the greedy next token).
- ``pack(rows, device, ...)`` concatenates the rows into ``ChunkInputs``: token ids and positions
  on the device, the attention plan (rows holding the same ``Prefix`` object share one prefix
  slot), each token's arena slot (where its K/V is kept), and the readout indices;
  ``ChunkInputs.answer_of`` / ``vocab_of`` say which readouts belong to which row. Pure host
  work (numpy, then one device copy per array), so it can run while the device computes the
  previous chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from heron.engine import attention
from heron.engine.attention import AttentionPlan, RowSpan, SegmentPlan
from heron.kernels.host import to_device


@dataclass(frozen=True, eq=False)
class Prefix:
    """KV a row attends to: arena slots, in position order. Rows holding the same object share
    one read of it. ``split``: it ends inside a prefix block that its rows complete (a seeded
    block), so they must meet their keys in tiles at absolute positions."""

    slots: np.ndarray
    split: bool = False


@dataclass(frozen=True)
class VocabRead:
    offset: int  # position within the row
    targets: tuple[int, ...] = ()  # ids whose log-probabilities to return
    greedy: bool = False  # also the most likely next id, and its log-probability


@dataclass(frozen=True, eq=False)
class Row:
    tokens: np.ndarray  # int32 ids fed to the model
    position: int  # absolute position of tokens[0]: the prefix covers [0, position)
    prefix: Prefix | None = None
    writes: np.ndarray | None = None  # arena slot of each token's K/V, when kept
    answer: bool = False  # pruned answer logits at the last position
    reads: tuple[VocabRead, ...] = ()
    # It computes a prefix block: KV other rows read, whose bits must not depend on where the
    # document was split (``engine.attention.segments``).
    block: bool = False

    def __post_init__(self) -> None:
        if len(self.tokens) == 0:
            raise ValueError("empty row")
        if (0 if self.prefix is None else len(self.prefix.slots)) != self.position:
            raise ValueError("a row's prefix must cover exactly the positions before it")


@dataclass(frozen=True)
class ChunkInputs:
    """One chunk, ready to run: device tensors plus the attention plan (see ``pack``)."""

    token_ids: torch.Tensor  # [T]
    positions: torch.Tensor  # [T]
    spans: list[RowSpan]
    row_prefix: list[int | None]
    prefix_slots: list[np.ndarray]
    attention: AttentionPlan | SegmentPlan
    token_slots: torch.Tensor  # [T] arena slot each token's K/V is written to, -1 if not kept
    answer_index: torch.Tensor  # [A] packed token of each answer read
    vocab_index: torch.Tensor  # [V] packed token of each vocabulary read
    vocab_targets: torch.Tensor  # [V, max targets] (padded with id 0)
    answer_of: list[int]  # per row: its answer read, or -1
    vocab_of: list[tuple[int, int]]  # per row: its vocabulary reads [start, end)
    target_counts: list[int]  # per vocabulary read: how many of its targets are real

    @property
    def tokens(self) -> int:
        return int(self.token_ids.shape[0])


def pack(
    rows: Sequence[Row],
    device: torch.device,
    num_heads: int,
    kv_width: int,
    questions: bool = False,
) -> ChunkInputs:
    """The layout of ``rows`` as one chunk (see the module contract); ``questions``: question
    rows run on FlashAttention-3 (``attention.questions_on_fa3``)."""
    spans: list[RowSpan] = []
    row_prefix: list[int | None] = []
    prefix_slots: list[np.ndarray] = []
    prefix_split: list[bool] = []
    slot_of: dict[int, int] = {}
    positions, token_slots = [], []
    answer_index, answer_of = [], []
    vocab_index, vocab_of, targets = [], [], []
    start = 0
    for row in rows:
        n = len(row.tokens)
        spans.append(RowSpan(start, start + n))
        positions.append(np.arange(row.position, row.position + n, dtype=np.int64))
        if row.prefix is None or row.position == 0:
            row_prefix.append(None)
        else:
            slot = slot_of.setdefault(id(row.prefix), len(prefix_slots))
            if slot == len(prefix_slots):
                prefix_slots.append(row.prefix.slots)
                prefix_split.append(row.prefix.split)
            row_prefix.append(slot)
        token_slots.append(np.full(n, -1, dtype=np.int64) if row.writes is None else row.writes)
        answer_of.append(len(answer_index) if row.answer else -1)
        if row.answer:
            answer_index.append(start + n - 1)
        vocab_of.append((len(vocab_index), len(vocab_index) + len(row.reads)))
        for read in row.reads:
            vocab_index.append(start + read.offset)
            targets.append(read.targets)
        start += n
    width = max((len(t) for t in targets), default=0)
    padded_targets = np.zeros((len(targets), max(1, width)), dtype=np.int64)
    for i, ids in enumerate(targets):
        padded_targets[i, : len(ids)] = ids

    def on_device(array: np.ndarray) -> torch.Tensor:
        return to_device(array, device)

    token_ids = np.concatenate([row.tokens for row in rows]).astype(np.int64)
    return ChunkInputs(
        token_ids=on_device(token_ids),
        positions=on_device(np.concatenate(positions)),
        spans=spans,
        row_prefix=row_prefix,
        prefix_slots=prefix_slots,
        attention=attention.plan(spans, row_prefix, prefix_slots, num_heads, kv_width, device,
                                 prefix_split, [row.block for row in rows], questions),
        token_slots=on_device(np.concatenate(token_slots).astype(np.int64)),
        answer_index=on_device(np.asarray(answer_index, dtype=np.int64)),
        vocab_index=on_device(np.asarray(vocab_index, dtype=np.int64)),
        vocab_targets=on_device(padded_targets),
        answer_of=answer_of,
        vocab_of=vocab_of,
        target_counts=[len(t) for t in targets],
    )

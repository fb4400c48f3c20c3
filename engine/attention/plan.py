"""The padded index layout of batched attention, built once per forward pass on the host.

Contract: ``plan_attention(rows, row_prefix, prefix_slots, num_heads, kv_width, device)`` returns
an ``AttentionPlan`` that depends only on the rows and the prefixes' store slots, so every layer of
a forward pass reuses it. All its index tensors reach the device in one host-to-device copy. It
splits the work into padded calls:

- rows without a prefix are bucketed by length, padded at the end (``causal``: one causal call
  per bucket; right padding is exact under a causal mask: a real query never sees a later,
  padded key);
- the own causal part of all suffix rows, rows bucketed by length (``own``);
- the shared (prefix) part of all suffix rows (``shared``): each entry is a block of queries over
  one prefix, whose keys are gathered from the KV store by slot (``k_gather`` holds store slots);
  an entry stacks the queries of every row over that prefix, so the prefix is read once for all.

Padded work is bounded by a budget (``score_budget`` float32 elements per call: scores of all
heads, plus for the shared part the gathered keys and values); work that does not fit is split
into several calls. ``slack`` bounds how much padded work a call may carry relative to its real
work (1.0: only equal shapes share a call).

``row_invariant`` (the CPU default) trades speed for bit-exact reproducibility: every call holds
the work of one row only (its own part; its queries over its prefix, cut into query blocks by that
row's shape alone), so a row's arithmetic never depends on which other rows share the chunk.
Batching equal shapes is not enough on CPU: MKL's batched GEMM rounds a batch of one differently
(measured with torch 2.13: a [3, 1500] x [1500, 64] product alone differs from the same product
in a batch of 8).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch

from heron.kernels.host import to_device


@dataclass(frozen=True, slots=True)
class RowSpan:
    """Where one row lies in the packed token dimension: tokens ``start`` to ``end`` - 1."""

    start: int
    end: int


# Padded fp32 score elements (all query heads) per explicit-math call: 512 MiB on CUDA.
DEFAULT_SCORE_BUDGET = {"cuda": 1 << 27, "cpu": 1 << 24}
# Whether each call holds one row's work only (see the module docstring).
DEFAULT_ROW_INVARIANT = {"cuda": False, "cpu": True}
# A batch may pad its work (score elements, or L^2 per row for SDPA) by this factor before a
# new batch is started, unless the padded batch is below _SMALL (per head), where launches
# dominate. On CPU launches are cheap and padding is not: only equal shapes share a call.
DEFAULT_SLACK = {"cuda": 1.25, "cpu": 1.0}
_SMALL = 1 << 20
# Tokens per padded SDPA bucket (bounds the padded q/k/v copies).
_SDPA_TOKENS = 1 << 16


@dataclass(frozen=True, slots=True)
class _Batch:
    """One padded call: ``size`` entries of ``lq`` queries (and ``lk`` keys)."""

    size: int
    lq: int
    lk: int
    q_gather: torch.Tensor  # [size * lq] source token per padded query (pads: any valid token)
    valid: torch.Tensor  # [n] flat padded positions of real queries
    target: torch.Tensor  # [n] where each real query's output goes
    k_gather: torch.Tensor | None = None  # [size * lk] source row per padded key (shared part)
    k_len: torch.Tensor | None = None  # [size] real keys per entry (shared part)


@dataclass(frozen=True, slots=True)
class AttentionPlan:
    """Index layout of ``packed_attention`` for one set of rows, reusable across layers."""

    causal: tuple[_Batch, ...]  # rows without prefix: SDPA buckets, targets = packed tokens
    own: tuple[_Batch, ...]  # suffix rows, own causal part: targets = suffix-token order
    shared: tuple[_Batch, ...]  # suffix tokens vs prefix: targets = suffix-token order
    suffix_tokens: torch.Tensor | None  # [S] packed positions of all suffix tokens
    shared_covers_all: bool  # every suffix token has a non-empty prefix


@dataclass(frozen=True, slots=True)
class _HostBatch:
    """A ``_Batch`` still on the host: its index arrays, before the one device copy."""

    size: int
    lq: int
    lk: int
    q_gather: np.ndarray
    valid: np.ndarray
    target: np.ndarray
    k_gather: np.ndarray | None = None  # store slots
    k_len: np.ndarray | None = None

    def arrays(self) -> list[np.ndarray]:
        keys = [] if self.k_gather is None or self.k_len is None else [self.k_gather, self.k_len]
        return [self.q_gather, self.valid, self.target, *keys]

    def on_device(self, views: Iterator[torch.Tensor]) -> _Batch:
        """The device batch, taking its arrays from ``views`` in the order of ``arrays()``."""
        q_gather, valid, target = next(views), next(views), next(views)
        if self.k_gather is None:
            return _Batch(self.size, self.lq, self.lk, q_gather, valid, target)
        k_gather, k_len = next(views), next(views)
        return _Batch(self.size, self.lq, self.lk, q_gather, valid, target, k_gather, k_len)


@dataclass(frozen=True, slots=True)
class _Budget:
    """How work is cut into padded calls (see ``plan_attention``)."""

    score_elements: int  # padded float32 scores per explicit-math call, all heads
    num_heads: int
    kv_width: int  # elements of one token's keys (or values): kv heads x head dim
    slack: float  # padded work allowed per unit of real work in one call
    small: int  # a call padded to at most this much work is never split for padding
    alone: bool  # every entry a call of its own (row invariance)

    def scores_fit(self, n: int, lq: int, lk: int) -> bool:
        return n * lq * lk * self.num_heads <= self.score_elements

    def shared_fits(self, n: int, lq: int, lk: int) -> bool:
        # The scores, and the keys and values gathered from the store for the call.
        return n * lk * (lq * self.num_heads + 2 * self.kv_width) <= self.score_elements

    def query_block(self, lk: int) -> int:
        """Queries of one entry over ``lk`` prefix keys that fit one call."""
        room = self.score_elements - 2 * lk * self.kv_width
        return max(1, room // (self.num_heads * lk))


def plan_attention(
    rows: Sequence[RowSpan],
    row_prefix: Sequence[int | None],
    prefix_slots: Sequence[np.ndarray],
    num_heads: int,
    kv_width: int,
    device: torch.device | str,
    score_budget: int | None = None,
    slack: float | None = None,
    row_invariant: bool | None = None,
) -> AttentionPlan:
    """Build the padded index layout for ``packed_attention`` (host work, one device copy).

    ``prefix_slots[s]``: the store slots (int64) holding prefix ``s``'s keys and values, in
    position order. ``kv_width``: kv heads x head dim. ``score_budget``: padded float32 elements
    per call; ``slack``: how much padded work a batch may carry relative to its real work (1.0:
    equal shapes only); ``row_invariant``: one row's work per call. Each is the device type's
    default when None.
    """
    device = torch.device(device)
    kind = device.type if device.type in DEFAULT_SLACK else "cpu"
    if score_budget is None:
        score_budget = DEFAULT_SCORE_BUDGET[kind]
    if slack is None:
        slack = DEFAULT_SLACK[kind]
    if row_invariant is None:
        row_invariant = DEFAULT_ROW_INVARIANT[kind]
    budget = _Budget(
        score_budget, num_heads, kv_width, slack, _SMALL if slack > 1.0 else 0, row_invariant
    )
    starts = np.array([r.start for r in rows], dtype=np.int64)
    lengths = np.array([r.end - r.start for r in rows], dtype=np.int64)
    plain = [i for i, slot in enumerate(row_prefix) if slot is None]
    causal = _causal_batches(plain, starts, lengths, budget)

    # Suffix-token order: suffix rows grouped by prefix slot (first seen first), then row order.
    by_slot: dict[int, list[int]] = {}
    for i, slot in enumerate(row_prefix):
        if slot is not None:
            by_slot.setdefault(slot, []).append(i)
    order = [i for members in by_slot.values() for i in members]
    own: list[_HostBatch] = []
    shared: list[_HostBatch] = []
    suffix_tokens = None
    slots: list[int] = []
    if order:
        suffix_tokens = _ranges(starts[order], lengths[order])
        suffix_start = np.zeros(len(rows), dtype=np.int64)  # each row's place in suffix order
        suffix_start[order] = np.concatenate([[0], np.cumsum(lengths[order])[:-1]])
        own = _own_batches(order, starts, lengths, suffix_start, budget)
        slots = [s for s in by_slot if len(prefix_slots[s]) > 0]
        groups = [(s, by_slot[s]) for s in slots]
        if row_invariant:  # one entry per row: its own group
            groups = [(s, [i]) for s, members in groups for i in members]
        shared = _shared_batches(groups, prefix_slots, lengths, suffix_start, suffix_tokens, budget)

    (causal_on, own_on, shared_on), suffix_on = _to_device(
        (causal, own, shared), suffix_tokens, device
    )
    return AttentionPlan(
        causal=causal_on,
        own=own_on,
        shared=shared_on,
        suffix_tokens=suffix_on,
        shared_covers_all=len(slots) == len(by_slot),
    )


def _causal_batches(
    plain: list[int], starts: np.ndarray, lengths: np.ndarray, budget: _Budget
) -> list[_HostBatch]:
    """Rows without a prefix in length buckets for causal SDPA (cost ~ L^2 per row, as flash
    attention skips masked blocks), at most ``_SDPA_TOKENS`` padded tokens per bucket. Targets
    are packed token positions."""
    batches = []
    for members in _pack(plain, lambda i: (int(lengths[i]),) * 2, _sdpa_fits, budget):
        lq = int(lengths[members].max())
        layout = _layout(starts[members], lengths[members], lq)
        batches.append(_HostBatch(len(members), lq, lq, *layout))
    return batches


def _own_batches(
    order: list[int],
    starts: np.ndarray,
    lengths: np.ndarray,
    suffix_start: np.ndarray,
    budget: _Budget,
) -> list[_HostBatch]:
    """The suffix rows' own causal part, rows in length buckets within the score budget.
    Targets index suffix-token order."""
    batches = []
    for members in _pack(order, lambda i: (int(lengths[i]),) * 2, budget.scores_fit, budget):
        lq = int(lengths[members].max())
        gather, valid, _ = _layout(starts[members], lengths[members], lq)
        target = _ranges(suffix_start[members], lengths[members])
        batches.append(_HostBatch(len(members), lq, lq, gather, valid, target))
    return batches


def _shared_batches(
    groups: list[tuple[int, list[int]]],
    prefix_slots: Sequence[np.ndarray],
    lengths: np.ndarray,
    suffix_start: np.ndarray,
    suffix_tokens: np.ndarray,
    budget: _Budget,
) -> list[_HostBatch]:
    """The suffix tokens against their prefix's keys: one entry per group (rows over one prefix
    whose suffix tokens are contiguous in suffix order), split into query blocks that fit the
    budget. Keys are store slots; targets index suffix-token order."""
    entries = []  # (suffix-order start, count, slot)
    for slot, members in groups:
        first, total = int(suffix_start[members[0]]), int(lengths[members].sum())
        block = budget.query_block(len(prefix_slots[slot]))
        for offset in range(0, total, block):
            entries.append((first + offset, min(block, total - offset), slot))
    batches = []
    for batch in _pack(
        range(len(entries)),
        lambda e: (entries[e][1], len(prefix_slots[entries[e][2]])),
        budget.shared_fits,
        budget,
    ):
        chosen = [entries[e] for e in batch]
        q_starts = np.array([c[0] for c in chosen], dtype=np.int64)
        q_lens = np.array([c[1] for c in chosen], dtype=np.int64)
        k_lens = np.array([len(prefix_slots[c[2]]) for c in chosen], dtype=np.int64)
        lq, lk = int(q_lens.max()), int(k_lens.max())
        q_gather, valid, target = _layout(q_starts, q_lens, lq)  # indices in suffix order
        q_gather = suffix_tokens[q_gather]
        # Each entry's slots padded to lk by repeating its first slot (masked by k_len).
        k_gather = np.concatenate(
            [np.pad(prefix_slots[c[2]], (0, lk - n), mode="edge") for c, n in zip(chosen, k_lens,
                                                                                  strict=True)]
        ).astype(np.int64, copy=False)
        batches.append(_HostBatch(len(chosen), lq, lk, q_gather, valid, target, k_gather, k_lens))
    return batches


def _to_device(
    kinds: Sequence[Sequence[_HostBatch]], suffix_tokens: np.ndarray | None, device: torch.device
) -> tuple[list[tuple[_Batch, ...]], torch.Tensor | None]:
    """Every index array (the batches of each kind, then ``suffix_tokens``) to ``device`` in a
    single copy of one tensor (every layout array is int64), pinned on CUDA so that the copy
    does not block the host."""
    arrays = [a for b in chain(*kinds) for a in b.arrays()]
    if suffix_tokens is not None:
        arrays.append(suffix_tokens)
    views: list[torch.Tensor] = []
    if arrays:
        flat = to_device(np.concatenate(arrays), device)
        bounds = np.cumsum([0] + [len(a) for a in arrays])
        views = [flat[bounds[j] : bounds[j + 1]] for j in range(len(arrays))]
    taken = iter(views)
    # In the order the arrays were concatenated: kinds, batches, then the suffix tokens.
    on_device = [tuple(b.on_device(taken) for b in batches) for batches in kinds]
    return on_device, next(taken) if suffix_tokens is not None else None


def _cost(n: int, lq: int, lk: int) -> int:
    return n * lq * lk


def _sdpa_fits(n: int, lq: int, lk: int) -> bool:
    return n * lq <= _SDPA_TOKENS


def _pack(
    items: Sequence[int],
    dims: Callable[[int], tuple[int, int]],
    fits: Callable[[int, int, int], bool],
    budget: _Budget,
) -> list[list[int]]:
    """Group items into padded batches: sorted by size, a new batch when padding or the budget
    would be exceeded (a single item always forms a batch)."""
    ordered = sorted(items, key=lambda i: dims(i)[::-1], reverse=True)
    batches: list[list[int]] = []
    current: list[int] = []
    lq = lk = real = 0
    for i in ordered:
        a, c = dims(i)
        nq, nk = max(lq, a), max(lk, c)
        padded = _cost(len(current) + 1, nq, nk)
        ok = padded <= budget.slack * (real + _cost(1, a, c)) or padded <= budget.small
        if current and (budget.alone or not ok or not fits(len(current) + 1, nq, nk)):
            batches.append(current)
            current, nq, nk, real = [], a, c, 0
        current.append(i)
        lq, lk, real = nq, nk, real + _cost(1, a, c)
    if current:
        batches.append(current)
    return batches


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + n) for each (s, n)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offsets + np.arange(total, dtype=np.int64)


def _layout(
    starts: np.ndarray, lengths: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pad runs (start, length) into a [len(starts), width] grid.

    Returns (gather [n * width]: source index per slot, pads repeating the run's first index;
    valid: flat slots holding real items; target: their source indices, in run order).
    """
    count = len(starts)
    target = _ranges(starts, lengths)
    valid = _ranges(np.arange(count, dtype=np.int64) * width, lengths)
    gather = np.repeat(starts, width)
    gather[valid] = target
    return gather, valid, target

"""The padded index layout of batched attention, built once per forward pass on the host.

Contract: ``plan_attention(rows, row_prefix, prefix_lengths, num_heads, device)`` returns an
``AttentionPlan`` that depends only on the rows and prefix lengths, so every layer of a forward
pass reuses it. All its index tensors reach the device in one host-to-device copy. It splits the
work into padded calls:

- rows without a prefix are bucketed by length, padded at the end (``causal``: one causal call
  per bucket; right padding is exact under a causal mask: a real query never sees a later,
  padded key);
- the own causal part of all suffix rows, rows bucketed by length (``own``);
- the shared (prefix) part of all suffix rows of all groups (``shared``): each entry is one
  group's queries (split into blocks when a group is too large) over its prefix, gathered into a
  [entries, max_queries] x [entries, max_prefix] layout.

Padded score tensors are bounded by a budget (``score_budget`` float32 elements per call, heads
included); work that does not fit is split into several calls. ``slack`` bounds how much padded
work a call may carry relative to its real work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True, slots=True)
class RowSpan:
    start: int
    end: int



# Padded fp32 score elements (all query heads) per explicit-math call: 512 MiB on CUDA.
DEFAULT_SCORE_BUDGET = {"cuda": 1 << 27, "cpu": 1 << 24}
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
    slots: tuple[int, ...]  # prefix slots concatenated (in this order) for the shared part
    shared_covers_all: bool  # every suffix token has a non-empty prefix


def plan_attention(
    rows: Sequence[RowSpan],
    row_prefix: Sequence[int | None],
    prefix_lengths: Sequence[int],
    num_heads: int,
    device: torch.device | str,
    score_budget: int | None = None,
    slack: float | None = None,
) -> AttentionPlan:
    """Build the padded index layout for ``packed_attention`` (host work, one device copy).

    ``score_budget``: padded float32 score elements per call (heads included); ``slack``: how
    much padded work a batch may carry relative to its real work (1.0: equal shapes only).
    """
    device = torch.device(device)
    if score_budget is None:
        score_budget = DEFAULT_SCORE_BUDGET.get(device.type, DEFAULT_SCORE_BUDGET["cpu"])
    if slack is None:
        slack = DEFAULT_SLACK.get(device.type, DEFAULT_SLACK["cpu"])
    small = _SMALL if slack > 1.0 else 0
    starts = np.array([r.start for r in rows], dtype=np.int64)
    lengths = np.array([r.end - r.start for r in rows], dtype=np.int64)
    plain = [i for i, slot in enumerate(row_prefix) if slot is None]
    suffix = [i for i, slot in enumerate(row_prefix) if slot is not None]

    arrays: list[np.ndarray] = []  # everything that goes to the device, in one copy

    def add(a: np.ndarray) -> int:
        arrays.append(a.astype(np.int64, copy=False))
        return len(arrays) - 1

    # Rows without a prefix: length buckets, cost ~ L^2 per row (flash attention, causal).
    causal_specs = []
    for members in _pack(
        plain,
        lambda i: (int(lengths[i]), int(lengths[i])),
        lambda n, lq, lk: n * lq * lk,
        lambda n, lq, lk: n * lq <= _SDPA_TOKENS,
        slack,
        small,
    ):
        lq = int(lengths[members].max())
        causal_specs.append((len(members), lq, lq, *_layout(starts[members], lengths[members], lq)))

    # Suffix rows, in suffix-token order (grouped by slot, then row order).
    by_slot: dict[int, list[int]] = {}
    for i in suffix:
        by_slot.setdefault(row_prefix[i], []).append(i)  # type: ignore[arg-type]
    order = [i for members in by_slot.values() for i in members]
    own_specs, shared_specs = [], []
    suffix_tokens = None
    slots: tuple[int, ...] = ()
    covers = True
    if order:
        suffix_tokens = _ranges(starts[order], lengths[order])
        sfx_start = np.zeros(len(rows), dtype=np.int64)  # position of each row in suffix order
        sfx_start[order] = np.concatenate([[0], np.cumsum(lengths[order])[:-1]])

        def score_ok(n: int, lq: int, lk: int) -> bool:
            return n * lq * lk * num_heads <= score_budget

        for members in _pack(
            order, lambda i: (int(lengths[i]),) * 2, _cost, score_ok, slack, small
        ):
            lq = int(lengths[members].max())
            gather, valid, _ = _layout(starts[members], lengths[members], lq)
            target = _ranges(sfx_start[members], lengths[members])
            own_specs.append((len(members), lq, lq, gather, valid, target))

        # Shared part: one entry per group, split into query blocks that fit the budget.
        slot_list = [s for s in by_slot if prefix_lengths[s] > 0]
        covers = len(slot_list) == len(by_slot)
        slots = tuple(slot_list)
        key_base = dict(
            zip(slot_list, np.cumsum([0] + [prefix_lengths[s] for s in slot_list]), strict=False)
        )
        entries = []  # (suffix-order start, count, slot)
        for slot in slot_list:
            members = by_slot[slot]
            first, total = int(sfx_start[members[0]]), int(lengths[members].sum())
            block = max(1, score_budget // (num_heads * prefix_lengths[slot]))
            for offset in range(0, total, block):
                entries.append((first + offset, min(block, total - offset), slot))
        for batch in _pack(
            range(len(entries)),
            lambda e: (entries[e][1], prefix_lengths[entries[e][2]]),
            _cost,
            score_ok,
            slack,
            small,
        ):
            chosen = [entries[e] for e in batch]
            q_starts = np.array([c[0] for c in chosen], dtype=np.int64)
            q_lens = np.array([c[1] for c in chosen], dtype=np.int64)
            k_starts = np.array([key_base[c[2]] for c in chosen], dtype=np.int64)
            k_lens = np.array([prefix_lengths[c[2]] for c in chosen], dtype=np.int64)
            lq, lk = int(q_lens.max()), int(k_lens.max())
            q_gather, valid, target = _layout(q_starts, q_lens, lq)  # indices in suffix order
            q_gather = suffix_tokens[q_gather]
            k_gather, _, _ = _layout(k_starts, k_lens, lk)
            shared_specs.append((len(chosen), lq, lk, q_gather, valid, target, k_gather, k_lens))

    def batches(specs: list[tuple]) -> list[list]:
        return [[n, lq, lk, *(add(a) for a in rest)] for n, lq, lk, *rest in specs]

    causal_idx = batches(causal_specs)
    own_idx = batches(own_specs)
    shared_idx = batches(shared_specs)
    sfx_idx = add(suffix_tokens) if suffix_tokens is not None else None
    if arrays:
        flat = torch.from_numpy(np.concatenate(arrays))
        if device.type == "cuda":
            flat = flat.pin_memory()
        flat = flat.to(device, non_blocking=True)
        bounds = np.cumsum([0] + [len(a) for a in arrays])
        views = [flat[bounds[j] : bounds[j + 1]] for j in range(len(arrays))]
    else:
        views = []

    def build(specs: list[list]) -> tuple[_Batch, ...]:
        return tuple(_Batch(n, lq, lk, *(views[j] for j in idx)) for n, lq, lk, *idx in specs)

    return AttentionPlan(
        causal=build(causal_idx),
        own=build(own_idx),
        shared=build(shared_idx),
        suffix_tokens=views[sfx_idx] if sfx_idx is not None else None,
        slots=slots,
        shared_covers_all=covers,
    )


def _cost(n: int, lq: int, lk: int) -> int:
    return n * lq * lk


def _pack(
    items: Sequence[int],
    dims: Callable[[int], tuple[int, int]],
    cost: Callable[[int, int, int], int],
    fits: Callable[[int, int, int], bool],
    slack: float,
    small: int,
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
        padded = cost(len(current) + 1, nq, nk)
        ok = padded <= slack * (real + cost(1, a, c)) or padded <= small
        if current and (not ok or not fits(len(current) + 1, nq, nk)):
            batches.append(current)
            current, nq, nk, real = [], a, c, 0
        current.append(i)
        lq, lk, real = nq, nk, real + cost(1, a, c)
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

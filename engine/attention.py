"""Attention over packed variable-length rows, with optional resident prefix KV.

Tokens of all rows are concatenated into one [T, heads, head_dim] tensor; ``RowSpan``s say where
each row lies. Every row gets causal self-attention. A row that continues a prefix additionally
attends, non-causally, to that prefix's keys/values; the two partial results are merged by their
log-sum-exp (cascade / Hydragen style), so all suffix rows of one prefix share a single
attention pass over its KV and the KV is never copied per row.

``packed_attention`` is the batched implementation the model uses: a constant number of kernel
launches per layer, independent of the number of rows and prefix groups (as long as the padded
score tensors fit the budget):

- rows without a prefix are bucketed by length, padded at the end and run as one causal
  ``scaled_dot_product_attention`` call per bucket (right padding is exact under a causal mask:
  a real query never sees a later, padded key);
- the shared (prefix) part of all suffix rows of all groups is one padded, key-masked
  attention with log-sum-exp: each entry is one group's queries (split into blocks when a group
  is too large) over its prefix, gathered into a [entries, max_queries] x [entries,
  max_prefix] layout;
- the own causal part of all suffix rows is one padded causal attention with log-sum-exp,
  rows bucketed by length;
- one vectorized ``merge_partials`` over every suffix token.

Padded score tensors are bounded by a budget (``score_budget`` elements per call, heads
included); work that does not fit is split into several calls. The index layout depends only on
the rows, so ``plan_attention`` builds it once per forward pass (one host-to-device copy) and
every layer reuses it.

Grouped-query attention is handled by viewing query heads as [kv_heads, group], so keys and
values are never repeated. The explicit-math paths compute scores, softmax and log-sum-exp in
float32 whatever the input dtype (16-bit CUDA inputs: 16-bit matmul operands with float32
accumulation and output, see ``LOW_PRECISION_MATMUL``). ``packed_attention_reference`` is the
row-at-a-time float32 twin kept as the correctness oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
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


def packed_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rows: Sequence[RowSpan],
    row_prefix: Sequence[int | None],
    prefix_kv: Sequence[tuple[torch.Tensor, torch.Tensor]],
    scale: float,
) -> torch.Tensor:
    """Row-at-a-time float32 twin of ``packed_attention`` (the correctness oracle)."""
    out = torch.empty_like(q)
    groups: dict[int, list[int]] = {}
    for i, (row, slot) in enumerate(zip(rows, row_prefix, strict=True)):
        if slot is None:
            s, e = row.start, row.end
            out[s:e] = attend_with_lse(q[s:e], k[s:e], v[s:e], scale, True)[0].to(q.dtype)
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


def packed_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rows: Sequence[RowSpan],
    row_prefix: Sequence[int | None],
    prefix_kv: Sequence[tuple[torch.Tensor, torch.Tensor]],
    scale: float,
    plan: AttentionPlan | None = None,
) -> torch.Tensor:
    """Attention output [T, Hq, D] (dtype of q) for packed rows.

    ``row_prefix[i]`` is None, or the index in ``prefix_kv`` of the (keys, values) [P, Hkv, D]
    of this layer that row ``i`` continues. ``plan`` (from ``plan_attention`` over the same rows
    and prefix lengths) saves rebuilding the index layout on every layer.
    """
    if plan is None:
        lengths = [pk.shape[0] for pk, _ in prefix_kv]
        plan = plan_attention(rows, row_prefix, lengths, q.shape[1], q.device)
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
        o, lse = _padded_attention_lse(qb, kb, vb, scale, causal=True)
        own_out.index_copy_(0, b.target, o.reshape(-1, hq, dim).index_select(0, b.valid))
        own_lse.index_copy_(0, b.target, lse.reshape(-1, hq).index_select(0, b.valid))

    if plan.shared_covers_all:
        shared_out = torch.empty_like(own_out)
        shared_lse = torch.empty_like(own_lse)
    else:  # tokens of an empty prefix contribute nothing
        shared_out = torch.zeros_like(own_out)
        shared_lse = torch.full_like(own_lse, float("-inf"))
    if plan.shared:
        keys = torch.cat([prefix_kv[s][0] for s in plan.slots])
        values = torch.cat([prefix_kv[s][1] for s in plan.slots])
        for b in plan.shared:
            qb = q.index_select(0, b.q_gather).view(b.size, b.lq, hq, dim)
            kb = keys.index_select(0, b.k_gather).view(b.size, b.lk, hkv, dim)
            vb = values.index_select(0, b.k_gather).view(b.size, b.lk, hkv, dim)
            o, lse = _padded_attention_lse(qb, kb, vb, scale, causal=False, k_len=b.k_len)
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
) -> tuple[torch.Tensor, torch.Tensor]:
    """q [B, Lq, Hq, D] over k, v [B, Lk, Hkv, D]: (out [B, Lq, Hq, D], lse [B, Lq, Hq]) float32.

    Keys at or past ``k_len[b]`` are masked; ``causal`` masks key j > query i. Every query must
    keep at least one key. Softmax and log-sum-exp in float32; GQA without repeating K/V.
    """
    b, lq, hq, dim = q.shape
    lk, hkv = k.shape[1], k.shape[2]
    group = hq // hkv
    low = _low_precision_matmul(q)
    # [B, Hkv, G*Lq, D] @ [B, Hkv, D, Lk]: all query heads of a KV head share one matmul.
    qg = q.view(b, lq, hkv, group, dim).permute(0, 2, 3, 1, 4).reshape(b * hkv, group * lq, dim)
    kt = k.permute(0, 2, 3, 1).reshape(b * hkv, dim, lk)
    if low:  # 16-bit operands, float32 accumulation and scores (tensor cores)
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
    if low:  # probabilities rounded to the input dtype, as flash attention does
        out = torch.bmm(probs.to(v.dtype), vt, out_dtype=torch.float32)
    else:
        out = torch.bmm(probs, vt.float())
    out = out.view(b, hkv, group, lq, dim) / total
    lse = (peak + total.log()).squeeze(-1)  # [B, Hkv, G, Lq]
    out = out.permute(0, 3, 1, 2, 4).reshape(b, lq, hq, dim)
    return out, lse.permute(0, 3, 1, 2).reshape(b, lq, hq)


# None: use 16-bit operands with float32 accumulation (``bmm(..., out_dtype=float32)``) for
# 16-bit CUDA inputs when this torch supports it; False: always upcast operands to float32.
LOW_PRECISION_MATMUL: bool | None = None
_low_precision_ok: bool | None = None


def _low_precision_matmul(x: torch.Tensor) -> bool:
    global _low_precision_ok
    if LOW_PRECISION_MATMUL is False or x.device.type != "cuda" or x.element_size() != 2:
        return False
    if _low_precision_ok is None:
        try:
            probe = torch.ones(1, 2, 2, dtype=x.dtype, device=x.device)
            _low_precision_ok = torch.bmm(probe, probe, out_dtype=torch.float32).dtype == (
                torch.float32
            )
        except (RuntimeError, TypeError):
            _low_precision_ok = False
    return _low_precision_ok


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

"""``plan_attention``'s layout invariants: coverage, budgets, slack (CPU, no attention math)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.attention_cases import random_rows

from heron.engine.attention import AttentionPlan, RowSpan, plan_attention

HEADS = 4
KV_WIDTH = 2  # tiny, so that the score budget is what bounds the calls


def _slots(prefix_lengths: list[int]) -> list[np.ndarray]:
    # Prefix s at slots 1000 s + i, so a gathered slot tells which prefix it came from.
    return [np.arange(n, dtype=np.int64) + 1000 * s for s, n in enumerate(prefix_lengths)]


def _plan(specs: list[tuple[int, int | None]], prefix_lengths: list[int], **kwargs: object
          ) -> AttentionPlan:
    rows, start = [], 0
    for n, _ in specs:
        rows.append(RowSpan(start, start + n))
        start += n
    return plan_attention(rows, [s for _, s in specs], _slots(prefix_lengths), HEADS, KV_WIDTH,
                          "cpu", **kwargs)


def _sorted(t: torch.Tensor | None) -> list[int]:
    return [] if t is None else sorted(t.tolist())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("slack", [1.0, 1.25, 100.0])
@pytest.mark.parametrize("score_budget", [400, 4000, None])
@pytest.mark.parametrize("invariant", [False, True])
def test_every_token_is_written_once(
    seed: int, slack: float, score_budget: int | None, invariant: bool
) -> None:
    prefix_lengths = [50, 0, 9, 30]
    specs = random_rows(seed, 30, prefix_lengths)
    plan = _plan(specs, prefix_lengths, slack=slack, score_budget=score_budget,
                 row_invariant=invariant)
    total = sum(n for n, _ in specs)
    causal = [t for b in plan.causal for t in b.target.tolist()]
    suffix = _sorted(plan.suffix_tokens)
    assert sorted(causal + suffix) == list(range(total))  # disjoint, and nothing left out
    # The own part covers every suffix token; the shared part those with a non-empty prefix.
    assert sorted(t for b in plan.own for t in b.target.tolist()) == list(range(len(suffix)))
    with_keys = sum(n for n, s in specs if s is not None and prefix_lengths[s] > 0)
    shared = sorted(t for b in plan.shared for t in b.target.tolist())
    assert len(shared) == len(set(shared)) == with_keys
    assert plan.shared_covers_all == (with_keys == len(suffix))
    # Each query reads exactly its own prefix's slots, in position order.
    # Suffix-token order: rows grouped by prefix, first seen first.
    suffix_rows = sorted(((n, s) for n, s in specs if s is not None),
                         key=lambda r: [s for _, s in specs].index(r[1]))
    token_slot = np.repeat([s for _, s in suffix_rows], [n for n, _ in suffix_rows])
    for b in plan.shared:
        keys = b.k_gather.view(b.size, b.lk)
        for entry in range(b.size):
            real = keys[entry, : b.k_len[entry]]
            (slot,) = {int(t) // 1000 for t in real.tolist()}
            assert real.tolist() == list(range(1000 * slot, 1000 * slot + prefix_lengths[slot]))
            queries = b.target[(b.valid // b.lq) == entry]
            assert set(token_slot[queries.numpy()].tolist()) == {slot}


@pytest.mark.parametrize("invariant", [False, True])
def test_batches_respect_the_budget(invariant: bool) -> None:
    prefix_lengths = [50, 9, 30]
    specs = random_rows(1, 40, prefix_lengths)
    budget = 4000
    plan = _plan(specs, prefix_lengths, slack=100.0, score_budget=budget,
                 row_invariant=invariant)
    for b in plan.own:
        # One entry per call is the floor; beyond it every call fits the budget.
        assert b.size == 1 or b.size * b.lq * b.lk * HEADS <= budget
    for b in plan.shared:  # scores plus gathered keys and values; big groups in query blocks
        assert b.size == 1 or b.size * b.lk * (b.lq * HEADS + 2 * KV_WIDTH) <= budget
        assert b.lk * (b.lq * HEADS + 2 * KV_WIDTH) <= budget or b.lq == 1


def test_row_invariant_calls_hold_one_row_each() -> None:
    specs = [(3, 0), (4, 0), (2, 0), (5, 1), (3, None), (3, None), (2, 0)]
    plan = _plan(specs, [10, 7], row_invariant=True, slack=100.0)
    assert all(b.size == 1 for b in (*plan.causal, *plan.own, *plan.shared))
    entries = sorted(tuple(b.target.tolist()) for b in plan.shared)
    assert entries == [(0, 1, 2), (3, 4, 5, 6), (7, 8), (9, 10), (11, 12, 13, 14, 15)]
    # Otherwise rows over one prefix are one entry, and similar shapes share calls.
    shared = _plan(specs, [10, 7], row_invariant=False, slack=100.0)
    assert sorted(b.size for b in shared.shared) == [2]


def test_slack_one_puts_only_equal_shapes_in_a_call() -> None:
    specs = [(5, None), (5, None), (7, None), (3, 0), (3, 0), (2, 1), (4, 1)]
    plan = _plan(specs, [10, 10], slack=1.0, row_invariant=False)
    for b in (*plan.causal, *plan.own, *plan.shared):
        assert b.valid.numel() == b.size * b.lq  # no padded query
    assert sorted((b.size, b.lq) for b in plan.causal) == [(1, 7), (2, 5)]
    assert sorted((b.size, b.lq) for b in plan.own) == [(1, 2), (1, 4), (2, 3)]
    # Both groups have 6 suffix tokens over 10 prefix keys: one call.
    shared = _plan(specs, [10, 10], slack=1.0, row_invariant=False)
    assert [(b.size, b.lq, b.lk) for b in shared.shared] == [(2, 6, 10)]


def test_rows_without_prefix_only() -> None:
    plan = _plan([(9, None), (40, None), (2, None)], [11], slack=100.0, row_invariant=False)
    assert plan.suffix_tokens is None and not plan.own and not plan.shared
    assert [(b.size, b.lq) for b in plan.causal] == [(3, 40)]  # padded together under slack


def test_empty_chunk() -> None:
    plan = _plan([], [6])
    assert plan == AttentionPlan((), (), (), None, True)

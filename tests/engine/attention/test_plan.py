"""``plan_attention``'s layout invariants: coverage, budgets, slack (CPU, no attention math)."""

from __future__ import annotations

import pytest
import torch
from support.attention_cases import random_rows

from heron.engine.attention import AttentionPlan, RowSpan, plan_attention

HEADS = 4


def _plan(specs: list[tuple[int, int | None]], prefix_lengths: list[int], **kwargs: float
          ) -> AttentionPlan:
    rows, start = [], 0
    for n, _ in specs:
        rows.append(RowSpan(start, start + n))
        start += n
    return plan_attention(rows, [s for _, s in specs], prefix_lengths, HEADS, "cpu", **kwargs)


def _sorted(t: torch.Tensor | None) -> list[int]:
    return [] if t is None else sorted(t.tolist())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("slack", [1.0, 1.25, 100.0])
@pytest.mark.parametrize("score_budget", [200, 4000, None])
def test_every_token_is_written_once(seed: int, slack: float, score_budget: int | None) -> None:
    prefix_lengths = [50, 0, 9, 30]
    specs = random_rows(seed, 30, prefix_lengths)
    plan = _plan(specs, prefix_lengths, slack=slack, score_budget=score_budget)
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
    assert plan.slots == tuple(dict.fromkeys(s for _, s in specs if s in (0, 2, 3)))


def test_batches_respect_the_score_budget() -> None:
    prefix_lengths = [50, 9, 30]
    specs = random_rows(1, 40, prefix_lengths)
    budget = 4000
    plan = _plan(specs, prefix_lengths, slack=100.0, score_budget=budget)
    for b in (*plan.own, *plan.shared):
        # One entry per call is the floor; beyond it every call fits the budget.
        assert b.size == 1 or b.size * b.lq * b.lk * HEADS <= budget
    for b in plan.shared:  # a group too large for one call is split into query blocks
        assert b.lq * b.lk * HEADS <= budget or b.lq == 1


def test_slack_one_puts_only_equal_shapes_in_a_call() -> None:
    specs = [(5, None), (5, None), (7, None), (3, 0), (3, 0), (2, 1), (4, 1)]
    plan = _plan(specs, [10, 10], slack=1.0)
    for b in (*plan.causal, *plan.own, *plan.shared):
        assert b.valid.numel() == b.size * b.lq  # no padded query
    assert sorted((b.size, b.lq) for b in plan.causal) == [(1, 7), (2, 5)]
    assert sorted((b.size, b.lq) for b in plan.own) == [(1, 2), (1, 4), (2, 3)]
    # Both groups have 6 suffix tokens over 10 prefix keys: one call.
    assert [(b.size, b.lq, b.lk) for b in plan.shared] == [(2, 6, 10)]


def test_rows_without_prefix_only() -> None:
    plan = _plan([(9, None), (40, None), (2, None)], [11], slack=100.0)
    assert plan.suffix_tokens is None and not plan.own and not plan.shared
    assert [(b.size, b.lq) for b in plan.causal] == [(3, 40)]  # padded together under slack


def test_empty_chunk() -> None:
    plan = _plan([], [6])
    assert plan == AttentionPlan((), (), (), None, (), True)

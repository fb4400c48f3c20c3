"""Batched ``packed_attention`` against its row-at-a-time float32 twin (CPU, random inputs)."""

from __future__ import annotations

import pytest
import torch
from support.attention_cases import Case, random_case, random_rows

from heron.engine.attention import RowSpan, packed_attention, plan_attention
from heron.engine.attention.padded import _low_precision_supported
from heron.engine.attention.reference import packed_attention_reference

ATOL = 1e-5


def _check(case: Case, atol: float = ATOL, low_precision: bool = True, **plan_kwargs) -> None:
    q, k, v, rows, row_prefix, prefix_slots, store, scale = case
    expected = packed_attention_reference(q, k, v, rows, row_prefix, prefix_slots, store, scale)
    plans = [None]
    if plan_kwargs:
        width = k.shape[1] * k.shape[2]
        plans = [
            plan_attention(rows, row_prefix, prefix_slots, q.shape[1], width, q.device,
                           row_invariant=invariant, **plan_kwargs)
            for invariant in (False, True)
        ]
    for plan in plans:
        got = packed_attention(q, k, v, rows, row_prefix, prefix_slots, store, scale, plan=plan,
                               low_precision=low_precision)
        assert got.dtype == q.dtype and got.shape == q.shape
        assert torch.isfinite(got.float()).all()
        torch.testing.assert_close(got.float(), expected.float(), atol=atol, rtol=0)


# slack 1.0: only equal shapes share a call (the CPU default); 100: everything padded together.
SLACKS = [1.0, 100.0]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("group", [1, 2, 4])
@pytest.mark.parametrize("head_dim", [16, 64])
@pytest.mark.parametrize("slack", SLACKS)
def test_mixed_rows_match_reference(seed: int, group: int, head_dim: int, slack: float) -> None:
    # Slot 2 is never used (an empty group); prefixes of different lengths, one of a single token.
    prefix_lengths = [37, 5, 20, 1, 64]
    specs = random_rows(seed, 24, prefix_lengths)
    specs += [(1, 0), (1, None), (1, 3)]  # length-1 suffix and plain rows
    specs = [(n, None if slot == 2 else slot) for n, slot in specs]
    case = random_case(seed, specs, prefix_lengths, kv_heads=2, group=group, head_dim=head_dim)
    _check(case, slack=slack)


@pytest.mark.parametrize("seed", [0, 1])
def test_tiny_score_budget_splits_batches(seed: int) -> None:
    # A budget below one group's work forces query blocks and one row per padded call.
    prefix_lengths = [50, 9, 30]
    specs = random_rows(seed, 30, prefix_lengths)
    case = random_case(seed, specs, prefix_lengths, kv_heads=2, group=2, head_dim=16)
    for slack in SLACKS:
        _check(case, score_budget=200, slack=slack)
        _check(case, score_budget=4000, slack=slack)


@pytest.mark.parametrize(
    "specs",
    [
        [(7, None)],  # single plain row
        [(1, None)],
        [(5, 0)],  # single suffix row
        [(1, 0)],
        [(3, 0), (4, 0), (1, 0)],  # one group only
        [(9, None), (40, None), (2, None)],  # no prefixes at all
    ],
)
def test_single_row_and_single_kind_chunks(specs: list[tuple[int, int | None]]) -> None:
    _check(random_case(3, specs, [11], kv_heads=1, group=4, head_dim=16))
    _check(random_case(3, specs, [11], kv_heads=1, group=4, head_dim=16), slack=100.0)


def test_zero_length_prefix_and_empty_chunk() -> None:
    specs = [(3, 0), (2, 1), (4, None), (2, 0)]
    case = random_case(4, specs, [0, 6], kv_heads=2, group=2, head_dim=16)
    for slack in SLACKS:
        _check(case, slack=slack)
    _check(random_case(5, [], [6], kv_heads=2, group=2, head_dim=16))


def test_join_shape_many_groups() -> None:
    # Many anchors, each with a few short partners (the AI-join layout).
    prefix_lengths = [30 + (i * 7) % 25 for i in range(40)]
    specs = [(3 + (i + j) % 6, i) for i in range(40) for j in range(5)]
    case = random_case(6, specs, prefix_lengths, kv_heads=2, group=4, head_dim=16)
    for slack in [*SLACKS, 1.25]:
        _check(case, slack=slack)


def test_bfloat16_inputs() -> None:
    prefix_lengths = [37, 5, 20]
    specs = random_rows(7, 20, prefix_lengths)
    case = random_case(
        7, specs, prefix_lengths, kv_heads=2, group=2, head_dim=64, dtype=torch.bfloat16
    )
    for slack in SLACKS:
        _check(case, atol=3e-2, slack=slack)
        _check(case, atol=3e-2, slack=slack, low_precision=False)


@pytest.mark.parametrize(
    ("prefix_lengths", "head_dim", "group"),
    [([37, 5, 20, 64], 16, 2), ([700], 128, 4), ([1500, 300], 64, 3)],
)
def test_a_rows_output_does_not_depend_on_the_other_rows_of_the_call(
    prefix_lengths: list[int], head_dim: int, group: int
) -> None:
    # The CPU default (row_invariant): every row alone gives the very same bits as the whole
    # mix, the property the engine's canonical evaluation needs. Rows of equal shapes are
    # included: batching them in one call would break it for the longer prefixes.
    specs = random_rows(0, 16, prefix_lengths) + [(1, 0), (1, 0), (1, None), (3, 0), (3, 0)]
    q, k, v, rows, row_prefix, prefix_slots, store, scale = random_case(
        0, specs, prefix_lengths, kv_heads=2, group=group, head_dim=head_dim
    )
    together = packed_attention(q, k, v, rows, row_prefix, prefix_slots, store, scale)
    for row, slot in zip(rows, row_prefix, strict=True):
        part = slice(row.start, row.end)
        alone = packed_attention(q[part], k[part], v[part], [RowSpan(0, row.end - row.start)],
                                 [slot], prefix_slots, store, scale)
        assert torch.equal(alone, together[part])


def test_low_precision_operands_only_for_16_bit_cuda_inputs() -> None:
    # Decided before any probe, so this needs no GPU: CPU and float32 always upcast.
    assert not _low_precision_supported(torch.device("cpu"), torch.bfloat16)
    assert not _low_precision_supported(torch.device("cuda", 0), torch.float32)

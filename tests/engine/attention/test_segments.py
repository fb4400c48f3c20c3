"""The CUDA backend (``segments``: Triton segment attention, the prefix part read in place and the
own part continuing its softmax; question rows on FlashAttention-3 where it loads) against the
row-at-a-time float32 twin, on random rows, and the FlashAttention-3 part's row invariance."""

from __future__ import annotations

import pytest
import torch
from support.attention_cases import random_case, random_rows

from heron.engine.attention import fa3
from heron.engine.attention.reference import packed_attention_reference
from heron.engine.attention.segments import plan_segments, segment_packed_attention

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")


@cuda
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("group", "head_dim"), [(2, 16), (4, 128)])
def test_mixed_rows_match_reference(seed: int, group: int, head_dim: int) -> None:
    prefix_lengths = [37, 5, 200, 1, 64]
    specs = random_rows(seed, 40, prefix_lengths) + [(1, 0), (1, None), (70, 4)]
    q, k, v, rows, row_prefix, prefix_slots, store, scale = random_case(
        seed, specs, prefix_lengths, kv_heads=2, group=group, head_dim=head_dim,
        dtype=torch.bfloat16)
    expected = packed_attention_reference(q, k, v, rows, row_prefix, prefix_slots, store, scale)
    to = {"device": "cuda"}
    plan = plan_segments(rows, row_prefix, prefix_slots, torch.device("cuda"))
    got = segment_packed_attention(q.to(**to), k.to(**to), v.to(**to),
                                   (store[0].to(**to), store[1].to(**to)), scale, plan)
    assert got.dtype == q.dtype and got.shape == q.shape
    torch.testing.assert_close(got.float().cpu(), expected.float(), atol=2e-2, rtol=2e-2)


fa3_only = pytest.mark.skipif(not torch.cuda.is_available() or not fa3.available(),
                              reason="needs CUDA and vLLM's FlashAttention-3 library")


def _mixed(seed: int, blocks_every: int):
    prefix_lengths = [37, 5, 200, 1, 64, 4043]
    specs = random_rows(seed, 60, prefix_lengths) + [(1, 0), (1, None), (70, 4), (14, 5)]
    case = random_case(seed, specs, prefix_lengths, kv_heads=8, group=4, head_dim=128,
                       dtype=torch.bfloat16)
    blocks = [i % blocks_every == 0 for i in range(len(specs))]
    return case, blocks


@fa3_only
@pytest.mark.parametrize("seed", [0, 1])
def test_question_rows_on_flashattention3_match_reference(seed: int) -> None:
    """Rows that are not prefix blocks run on FlashAttention-3 (prefix part, own part, merge),
    the blocks on segment attention: every row still matches the float32 twin."""
    (q, k, v, rows, row_prefix, prefix_slots, store, scale), blocks = _mixed(seed, 3)
    expected = packed_attention_reference(q, k, v, rows, row_prefix, prefix_slots, store, scale)
    to = {"device": "cuda"}
    plan = plan_segments(rows, row_prefix, prefix_slots, torch.device("cuda"),
                         row_blocks=blocks, questions=True)
    assert plan.questions is not None and plan.suffix is not None
    got = segment_packed_attention(q.to(**to), k.to(**to), v.to(**to),
                                   (store[0].to(**to), store[1].to(**to)), scale, plan)
    torch.testing.assert_close(got.float().cpu(), expected.float(), atol=2e-2, rtol=2e-2)


@fa3_only
def test_a_question_rows_bits_do_not_depend_on_its_company() -> None:
    """The same question rows planned alone, with every other row, or in another order give
    the same bits (what the engine's canonical evaluation needs of the FlashAttention-3 part)."""
    (q, k, v, rows, row_prefix, prefix_slots, store, scale), _ = _mixed(2, 10**9)
    to = {"device": "cuda"}
    q, k, v = q.to(**to), k.to(**to), v.to(**to)
    store = (store[0].to(**to), store[1].to(**to))

    def run(chosen: list[int]) -> torch.Tensor:
        plan = plan_segments([rows[i] for i in chosen], [row_prefix[i] for i in chosen],
                             prefix_slots, torch.device("cuda"), questions=True)
        return segment_packed_attention(q, k, v, store, scale, plan)

    suffix = [i for i, slot in enumerate(row_prefix) if slot is not None]
    full = run(list(range(len(rows))))
    for chosen in ([suffix[3]], suffix[1::3], suffix[::-1]):
        out = run(chosen)
        for i in chosen:
            span = slice(rows[i].start, rows[i].end)
            assert torch.equal(out[span], full[span]), i

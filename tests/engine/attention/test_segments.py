"""The CUDA backend (``segments``: Triton segment attention, the prefix part read in place and the
own part continuing its softmax) against the row-at-a-time float32 twin, on random rows."""

from __future__ import annotations

import pytest
import torch
from support.attention_cases import random_case, random_rows

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

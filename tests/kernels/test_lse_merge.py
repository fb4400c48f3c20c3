"""The log-sum-exp merge of two partial attentions: its torch twin against attention over the
union of both key sets, the Triton kernel against the twin."""

from __future__ import annotations

import pytest
import torch

from heron.engine.attention.reference import attend_with_lse
from heron.kernels.lse_merge import lse_merge, lse_merge_reference

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")


def _parts(queries: int, heads: int, dim: int, device: str = "cpu"):
    gen = torch.Generator().manual_seed(queries)
    q = torch.randn(queries, heads, dim, generator=gen)
    k = torch.randn(2 * queries + 7, 1, dim, generator=gen)
    v = torch.randn(2 * queries + 7, 1, dim, generator=gen)
    split = queries + 3
    a = attend_with_lse(q, k[:split], v[:split], 0.2, causal=False)
    b = attend_with_lse(q, k[split:], v[split:], 0.2, causal=False)
    whole = attend_with_lse(q, k, v, 0.2, causal=False)[0]
    return [x.to(device) for x in (a[0], a[1].t().contiguous(), b[0], b[1].t().contiguous())], whole


def test_the_twin_is_attention_over_both_key_sets() -> None:
    (out_a, lse_a, out_b, lse_b), whole = _parts(9, 4, 16)
    out = torch.zeros(12, 4, 16)
    tokens = torch.tensor([11, 0, 3, 4, 5, 6, 7, 8, 1])
    lse_merge_reference(out_a, lse_a, out_b, lse_b, out, tokens)
    torch.testing.assert_close(out[tokens], whole, atol=1e-5, rtol=0)
    assert not out[[2, 9, 10]].any()  # other tokens untouched


@cuda
@pytest.mark.parametrize(("queries", "heads", "dim"), [(1, 1, 64), (300, 32, 128), (77, 6, 96)])
def test_kernel_matches_twin(queries: int, heads: int, dim: int) -> None:
    parts, _ = _parts(queries, heads, dim, "cuda")
    out_a, lse_a, out_b, lse_b = parts
    out_a, out_b = out_a.bfloat16(), out_b.bfloat16()
    tokens = torch.randperm(queries + 5, device="cuda")[:queries]
    expected = torch.zeros(queries + 5, heads, dim, device="cuda", dtype=torch.bfloat16)
    got = expected.clone()
    lse_merge_reference(out_a, lse_a, out_b, lse_b, expected, tokens)
    lse_merge(out_a, lse_a, out_b, lse_b, got, tokens)
    torch.testing.assert_close(got.float(), expected.float(), atol=1e-2, rtol=1e-2)

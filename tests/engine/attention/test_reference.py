"""The float32 oracle itself: ``attend_with_lse`` and ``merge_partials`` against plain math."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from heron.engine.attention.reference import attend_with_lse, merge_partials

SCALE = 16**-0.5


def _qkv(lq: int, lk: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(lq, 4, 16, generator=gen)  # 4 query heads over 2 KV heads
    return q, torch.randn(lk, 2, 16, generator=gen), torch.randn(lk, 2, 16, generator=gen)


@pytest.mark.parametrize("causal", [True, False])
def test_attend_with_lse_is_softmax_attention_with_its_log_normalizer(causal: bool) -> None:
    q, k, v = _qkv(9, 9)
    out, lse = attend_with_lse(q, k, v, SCALE, causal)
    # [heads, L, D], KV heads repeated for their query groups.
    k_full, v_full = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    expected = F.scaled_dot_product_attention(
        q.transpose(0, 1), k_full.transpose(0, 1), v_full.transpose(0, 1),
        is_causal=causal, scale=SCALE,
    ).transpose(0, 1)
    scores = torch.einsum("qhd,khd->hqk", q, k_full) * SCALE
    if causal:
        scores = scores.masked_fill(torch.ones(9, 9, dtype=torch.bool).triu(1), float("-inf"))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1).T, atol=1e-5, rtol=0)


def test_merge_of_two_key_sets_is_attention_over_their_union() -> None:
    q, k, v = _qkv(5, 12, seed=1)
    whole, whole_lse = attend_with_lse(q, k, v, SCALE, causal=False)
    a = attend_with_lse(q, k[:7], v[:7], SCALE, causal=False)
    b = attend_with_lse(q, k[7:], v[7:], SCALE, causal=False)
    torch.testing.assert_close(merge_partials(*a, *b), whole, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.logaddexp(a[1], b[1]), whole_lse, atol=1e-5, rtol=0)


def test_a_part_with_lse_minus_infinity_contributes_nothing() -> None:
    q, k, v = _qkv(5, 6, seed=2)
    out, lse = attend_with_lse(q, k, v, SCALE, causal=False)
    empty_out, empty_lse = torch.zeros_like(out), torch.full_like(lse, float("-inf"))
    torch.testing.assert_close(merge_partials(empty_out, empty_lse, out, lse), out)

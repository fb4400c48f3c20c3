"""Random packed attention inputs for the attention tests (CPU, seeded, reproducible)."""

from __future__ import annotations

import numpy as np
import torch

from heron.engine.attention import RowSpan

Case = tuple[
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    list[RowSpan],
    list[int | None],
    list[np.ndarray],
    tuple[torch.Tensor, torch.Tensor],
    float,
]


def random_case(
    seed: int,
    row_specs: list[tuple[int, int | None]],
    prefix_lengths: list[int],
    kv_heads: int,
    group: int,
    head_dim: int,
    dtype: torch.dtype = torch.float32,
) -> Case:
    """Random packed q/k/v for rows given as (length, prefix slot or None): the arguments of
    ``packed_attention`` (q, k, v, rows, row_prefix, prefix_slots, store, scale). The prefixes'
    keys and values sit at scattered slots of a store twice their total size, like pages of the
    engine's KV arena."""
    gen = torch.Generator().manual_seed(seed)
    total = sum(n for n, _ in row_specs)
    heads = kv_heads * group

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(dtype)

    q, k = rand(total, heads, head_dim), rand(total, kv_heads, head_dim)
    v = rand(total, kv_heads, head_dim)
    rows, start = [], 0
    for n, _ in row_specs:
        rows.append(RowSpan(start, start + n))
        start += n
    row_prefix = [slot for _, slot in row_specs]
    size = 2 * sum(prefix_lengths) + 1
    store = (rand(size, kv_heads, head_dim), rand(size, kv_heads, head_dim))
    shuffled = torch.randperm(size, generator=gen).numpy()
    bounds = np.cumsum([0, *prefix_lengths])
    prefix_slots = [shuffled[a:b].astype(np.int64) for a, b in zip(bounds, bounds[1:],
                                                                    strict=False)]
    return q, k, v, rows, row_prefix, prefix_slots, store, head_dim**-0.5


def random_rows(seed: int, count: int, prefix_lengths: list[int]) -> list[tuple[int, int | None]]:
    """``count`` row specs: about a third plain rows of 1-40 tokens, the rest suffix rows of 1-12
    tokens over a random prefix slot."""
    gen = torch.Generator().manual_seed(1000 + seed)
    specs: list[tuple[int, int | None]] = []
    for _ in range(count):
        if torch.rand(1, generator=gen).item() < 0.35:
            specs.append((int(torch.randint(1, 41, (1,), generator=gen)), None))
        else:
            slot = int(torch.randint(0, len(prefix_lengths), (1,), generator=gen))
            specs.append((int(torch.randint(1, 13, (1,), generator=gen)), slot))
    return specs

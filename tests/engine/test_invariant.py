"""Row-invariant CPU ops against plain torch: same values, and each row's bits independent of
the rows beside it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from heron.engine import invariant


@pytest.mark.parametrize(("k", "n"), [(64, 192), (576, 1728), (1536, 576)])
@pytest.mark.parametrize("tile", [invariant.TILE, invariant.HEAD_TILE])
def test_linear_rows_do_not_depend_on_the_batch(k: int, n: int, tile: int) -> None:
    gen = torch.Generator().manual_seed(k)
    x, w, b = torch.randn(300, k, generator=gen), torch.randn(n, k, generator=gen), torch.randn(n)
    full = invariant.linear(x, w, b, tile)
    torch.testing.assert_close(full, F.linear(x, w, b), atol=1e-4, rtol=1e-5)
    for start, rows in [(0, 1), (7, 2), (3, 5), (100, 57), (1, 129), (0, 300)]:
        assert torch.equal(invariant.linear(x[start : start + rows], w, b, tile),
                           full[start : start + rows])

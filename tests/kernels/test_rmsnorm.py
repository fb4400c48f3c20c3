"""Triton RMSNorm against its torch twin (GPU only)."""

from __future__ import annotations

import pytest
import torch

from heron.kernels.rmsnorm import rmsnorm, rmsnorm_reference

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 64), (37, 576), (5, 3, 2560), (128, 5120)])
def test_rmsnorm_matches_reference(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    generator = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(shape, device="cuda", dtype=dtype, generator=generator) * 3
    weight = torch.randn(shape[-1], device="cuda", dtype=dtype, generator=generator)
    expected = rmsnorm_reference(x, weight, 1e-6)
    got = rmsnorm(x, weight, 1e-6)
    assert got.dtype == x.dtype and got.shape == x.shape
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), expected.float(), atol=tolerance, rtol=tolerance)


def test_reference_is_float32_math_for_low_precision_inputs() -> None:
    x = torch.randn(4, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(64, device="cuda", dtype=torch.bfloat16)
    expected = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).bfloat16()
    torch.testing.assert_close(rmsnorm_reference(x, w, 1e-6), expected)

"""The batch-invariant GEMM and the FP8 linear against their twins; the invariance itself."""

from __future__ import annotations

import pytest
import torch

from heron.kernels.fp8 import (
    QuantizedRows,
    fp8_linear,
    fp8_linear_reference,
    quantize_rows,
    quantize_rows_by_amax,
    quantize_rows_reference,
)
from heron.kernels.matmul import (
    Tiles,
    gated_matmul,
    gated_matmul_reference,
    gated_scaled_matmul,
    interleave_gate_up,
    matmul,
    matmul_reference,
    scaled_matmul,
    tile_shape,
)
from heron.kernels.silu_mul import silu_mul, silu_mul_reference

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")


def test_matmul_reference_is_linear() -> None:
    x, w = torch.randn(9, 32), torch.randn(17, 32)
    torch.testing.assert_close(matmul_reference(x, w), torch.nn.functional.linear(x, w))


def test_quantize_rows_round_trip_within_e4m3_precision() -> None:
    x = torch.randn(64, 256) * torch.logspace(-3, 3, 64)[:, None]
    x[3] = 0.0
    q, scale = quantize_rows_reference(x)
    assert q.dtype == torch.float8_e4m3fn and scale.shape == (64, 1) and scale[3] == 1.0
    error = (q.float() * scale - x).abs() / x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-30)
    assert error.max() <= 2**-4  # e4m3 keeps 3 mantissa bits


def test_fp8_linear_reference_is_close_to_the_float_product() -> None:
    x, w = torch.randn(16, 128), torch.randn(48, 128)
    wq, ws = quantize_rows_reference(w)
    got = fp8_linear_reference(x, wq, ws)
    expected = x @ w.T
    assert ((got - expected).norm() / expected.norm()) < 0.05


@cuda
@pytest.mark.parametrize(("m", "n", "k"), [(1, 8, 64), (300, 2560, 2560), (4097, 19456, 2560),
                                           (33, 2560, 9728)])
def test_matmul_kernel(m: int, n: int, k: int) -> None:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    torch.testing.assert_close(matmul(x, w).float(), matmul_reference(x, w).float(), atol=3e-2,
                               rtol=2e-2)


@cuda
@pytest.mark.parametrize("tma", [False, True])
def test_matmul_rows_do_not_depend_on_the_batch(tma: bool) -> None:
    if tma and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the TMA variant needs Hopper")
    k, n = 2560, 9728
    x = torch.randn(5000, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    full = matmul(x, w, tma=tma)
    for rows in (1, 3, 64, 129, 1000, 4999):
        assert torch.equal(matmul(x[:rows], w, tma=tma), full[:rows]), rows
        assert torch.equal(matmul(x[-rows:], w, tma=tma), full[-rows:]), rows
    # Both variants walk the same tiles in the same order: the same bits.
    assert torch.equal(full, matmul(x, w, tma=not tma) if torch.cuda.get_device_capability()[0]
                       >= 9 else full)


def test_gated_matmul_reference_is_swiglu_first_half() -> None:
    x, gate, up = torch.randn(7, 32), torch.randn(24, 32), torch.randn(24, 32)
    got = gated_matmul_reference(x, interleave_gate_up(gate, up))
    torch.testing.assert_close(got, torch.nn.functional.silu(x @ gate.T) * (x @ up.T))
    expected = silu_mul_reference(matmul_reference(x, torch.cat([gate, up])))
    assert torch.equal(got, expected)  # the twin is the two steps' twins


hopper = pytest.mark.skipif(not torch.cuda.is_available()
                            or torch.cuda.get_device_capability()[0] < 9,
                            reason="needs a Hopper GPU + Triton")


@hopper
@pytest.mark.parametrize(("m", "i", "k"), [(1, 64, 64), (1000, 9728, 2560), (130, 3072, 1024)])
def test_gated_matmul_is_silu_mul_of_the_matmul(m: int, i: int, k: int) -> None:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    gate, up = (torch.randn(i, k, device="cuda", dtype=torch.bfloat16) / k**0.5 for _ in "gu")
    w = interleave_gate_up(gate, up)
    got = gated_matmul(x, w)
    torch.testing.assert_close(got.float(), gated_matmul_reference(x, w).float(), atol=3e-2,
                               rtol=2e-2)
    # The same tiles as the plain GEMM of the interleaved weight, the same SiLU·mul: same bits.
    product = matmul(x, w)
    assert torch.equal(got, silu_mul(torch.cat([product[:, 0::2], product[:, 1::2]], dim=-1)))
    for rows in (1, 129):
        assert torch.equal(gated_matmul(x[-rows:], w), got[-rows:]), rows


@hopper
@pytest.mark.parametrize(("m", "i", "k"), [(1, 64, 64), (1000, 9728, 2560), (130, 3072, 1024)])
def test_gated_scaled_matmul_is_silu_mul_of_the_scaled_matmul(m: int, i: int, k: int) -> None:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    gate, up = (torch.randn(i, k, device="cuda", dtype=torch.bfloat16) / k**0.5 for _ in "gu")
    rows = QuantizedRows.of(x)
    wq, ws = quantize_rows(interleave_gate_up(gate, up))
    got = gated_scaled_matmul(rows, wq, ws, quantize=False)
    assert isinstance(got, torch.Tensor)
    dequantized = (wq.float() * ws).to(torch.bfloat16)
    expected = gated_matmul_reference((rows.data.float() * rows.scale).to(torch.bfloat16),
                                      dequantized)
    torch.testing.assert_close(got.float(), expected.float(), atol=3e-2, rtol=3e-2)
    # The same tiles and scales as scaled_matmul of the interleaved weight: the same bits,
    # quantized as silu_mul quantizes them, and no row depends on the others.
    product = scaled_matmul(rows.data, rows.scale, wq, ws)
    gate_up = torch.cat([product[:, 0::2], product[:, 1::2]], dim=-1)
    assert torch.equal(got, silu_mul(gate_up))
    quantized = gated_scaled_matmul(rows, wq, ws, quantize=True)
    two_steps = silu_mul(gate_up, quantize=True)
    assert isinstance(quantized, QuantizedRows) and isinstance(two_steps, QuantizedRows)
    assert torch.equal(quantized.scale, two_steps.scale)
    assert torch.equal(quantized.data.view(torch.uint8), two_steps.data.view(torch.uint8))
    for n in (1, 129):
        part = QuantizedRows(rows.data[-n:], rows.scale[-n:], rows.dtype)
        alone = gated_scaled_matmul(part, wq, ws, quantize=True)
        assert isinstance(alone, QuantizedRows)
        assert torch.equal(alone.data.view(torch.uint8), quantized.data[-n:].view(torch.uint8))


@cuda
def test_quantize_rows_by_amax_is_quantize_rows() -> None:
    x = torch.randn(300, 9728, device="cuda", dtype=torch.bfloat16) * torch.logspace(
        -3, 3, 300, device="cuda")[:, None].to(torch.bfloat16)
    x[7] = 0
    q, scale = quantize_rows(x)
    got = quantize_rows_by_amax(x, x.float().abs().amax(dim=-1))
    assert torch.equal(got.scale, scale) and got.dtype == x.dtype
    assert torch.equal(got.data.view(torch.uint8), q.view(torch.uint8))


@hopper
def test_split_store_changes_no_bit() -> None:
    m, n, k = 3001, 19456, 2560
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    plain = tile_shape(n, k)
    split = plain._replace(split_store=True, stages=plain.stages + 1)
    assert torch.equal(matmul(x, w, tiles=split), matmul(x, w, tiles=plain))
    assert isinstance(split, Tiles)


@cuda
@pytest.mark.parametrize(("m", "n", "k"), [(16, 2560, 2560), (4096, 19456, 2560)])
def test_fp8_kernels(m: int, n: int, k: int) -> None:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    q, scale = quantize_rows(x)
    q0, scale0 = quantize_rows_reference(x)
    torch.testing.assert_close(scale, scale0)
    assert (q.float() - q0.float()).abs().max() <= 2 ** -3 * q0.float().abs().max()
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    wq, ws = quantize_rows(w)
    torch.testing.assert_close(fp8_linear(x, wq, ws).float(),
                               fp8_linear_reference(x, wq, ws).float(), atol=3e-2, rtol=3e-2)


@cuda
def test_scaled_matmul_is_the_fp8_product_and_batch_invariant() -> None:
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("FP8 tensor cores need Hopper")
    m, n, k = 3000, 6144, 2560
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    wq, ws = quantize_rows(w)
    q, scale = quantize_rows(x)
    got = scaled_matmul(q, scale, wq, ws)
    torch.testing.assert_close(got.float(), fp8_linear_reference(x, wq, ws).float(), atol=3e-2,
                               rtol=3e-2)
    for rows in (1, 17, 640):
        assert torch.equal(scaled_matmul(q[:rows], scale[:rows], wq, ws), got[:rows]), rows

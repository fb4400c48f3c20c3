"""The engine's operation table: twins on the CPU, the kernels' contract on CUDA."""

from __future__ import annotations

import pytest
import torch

from heron.engine.ops import Ops, Weight
from heron.kernels.fp8 import QuantizedRows
from heron.kernels.rmsnorm import rmsnorm_reference


def test_cpu_ops_are_the_twins() -> None:
    ops = Ops.build("cpu")
    assert not ops.kernels
    x, w = torch.randn(5, 32), torch.randn(12, 32)
    torch.testing.assert_close(ops.linear(x, Weight(w)), x @ w.T)
    torch.testing.assert_close(ops.rmsnorm(x, torch.ones(32), 1e-6),
                               rmsnorm_reference(x, torch.ones(32), 1e-6))


def test_fp8_weight_is_quantized_per_output_channel() -> None:
    w = torch.randn(12, 32) * torch.logspace(-2, 2, 12)[:, None]
    weight = Weight.quantized(w)
    assert weight.fp8 and weight.data.dtype == torch.float8_e4m3fn
    assert weight.scale is not None and weight.scale.shape == (12, 1)
    x = torch.randn(3, 32)
    got = Ops.build("cpu").linear(x, weight)
    # Each factor keeps 3 mantissa bits: the error is bounded by |x| @ |w|.T, not by the
    # product's norm (random rows can nearly cancel: that made the old bound flaky).
    assert ((got - x @ w.T).abs() <= 2**-3 * (x.abs() @ w.abs().T)).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")
@pytest.mark.parametrize("fp8", [False, True])
def test_deterministic_linear_rows_do_not_depend_on_the_batch(fp8: bool) -> None:
    if fp8 and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("FP8 tensor cores need Hopper")
    ops = Ops.build("cuda", deterministic=True)
    w = torch.randn(2560, 4096, device="cuda", dtype=torch.bfloat16) / 64
    weight = Weight.quantized(w) if fp8 else Weight(w)
    x = torch.randn(777, 4096, device="cuda", dtype=torch.bfloat16)
    full = ops.linear(x, weight)
    for rows in (1, 5, 100):
        assert torch.equal(ops.linear(x[:rows], weight), full[:rows])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")
@pytest.mark.parametrize(("fp8", "quantize"), [(False, False), (True, False), (True, True)])
def test_gated_is_silu_mul_of_the_gate_up_linear_bit_for_bit(fp8: bool, quantize: bool) -> None:
    ops = Ops.build("cuda", deterministic=True)
    gate, up = (torch.randn(9728, 2560, device="cuda", dtype=torch.bfloat16) / 50 for _ in "gu")
    x = torch.randn(300, 2560, device="cuda", dtype=torch.bfloat16)
    weight = ops.gate_up(gate, up, fp8=fp8)
    assert weight.interleaved == (torch.cuda.get_device_capability()[0] >= 9)
    apart = torch.cat([gate, up])
    unfused = ops.silu_mul(ops.linear(x, Weight.quantized(apart) if fp8 else Weight(apart)),
                           quantize)
    fused = ops.gated(x, weight, quantize=quantize)
    if quantize:
        assert isinstance(fused, QuantizedRows) and isinstance(unfused, QuantizedRows)
        assert torch.equal(fused.scale, unfused.scale)
        assert torch.equal(fused.data.view(torch.uint8), unfused.data.view(torch.uint8))
    else:
        assert torch.equal(fused, unfused)

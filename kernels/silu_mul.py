"""SwiGLU's gate: ``silu(gate) * up`` from the fused gate/up projection.

Contract: ``silu_mul(gate_up)`` takes [..., 2I] (gate in the first half, up in the second, as the
engine fuses the two projections) and returns [..., I] in the input dtype, computed in float32 and
rounded once. ``silu_mul_reference`` is the torch twin and the CPU path, made of ops whose
rounding does not depend on the tensor's size; the Triton kernel (CUDA only) is elementwise: on
both, each row's result is independent of the others. With ``quantize`` (the product feeds an
FP8 linear) the result comes back as ``fp8.QuantizedRows`` — exactly ``quantize_rows`` of the
rows it would have returned — from one program per whole row, which writes e4m3 rows and their
scales instead of bf16 rows. Triton is imported on first use.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from heron.kernels.fp8 import QuantizedRows, row_quantizer


def silu_mul_reference(gate_up: torch.Tensor, quantize: bool = False
                       ) -> torch.Tensor | QuantizedRows:
    # x / (1 + exp(-x)) rather than F.silu: torch's vectorized and scalar-tail SiLU round
    # differently on CPU, which would make a row's result depend on the tensor's size.
    gate, up = gate_up.float().chunk(2, dim=-1)
    out = (gate / (1 + torch.exp(-gate)) * up).to(gate_up.dtype)
    return QuantizedRows.of(out) if quantize else out


def silu_mul(gate_up: torch.Tensor, quantize: bool = False) -> torch.Tensor | QuantizedRows:
    """Triton twin of ``silu_mul_reference``; input on a CUDA device."""
    import triton  # noqa: PLC0415 - GPU machines only

    width = gate_up.shape[-1] // 2
    rows = gate_up.reshape(-1, 2 * width).contiguous()
    if quantize:
        q = torch.empty(rows.shape[0], width, dtype=torch.float8_e4m3fn, device=gate_up.device)
        scale = torch.empty(rows.shape[0], 1, dtype=torch.float32, device=gate_up.device)
        block = triton.next_power_of_2(width)  # a whole row per program: its scale needs it all
        # 8 warps: on the H200 8 ≈ 16 ≈ 32, twice as fast as 4
        _kernels()[1][(rows.shape[0],)](rows, q, scale, width, BLOCK=block, num_warps=8)
        return QuantizedRows(q, scale, gate_up.dtype)
    out = torch.empty(rows.shape[0], width, dtype=gate_up.dtype, device=gate_up.device)
    block = 1024
    grid = (rows.shape[0], triton.cdiv(width, block))
    _kernels()[0][grid](rows, out, width, BLOCK=block, num_warps=4)
    return out.view(*gate_up.shape[:-1], width)


@functools.cache
def silu_product() -> Any:
    """The Triton device function every kernel computes SwiGLU's gate with (these, and the gated
    GEMM's epilogue in ``kernels.matmul``): float32 gate and up values -> ``silu(gate) * up``
    in float32, so all of them round the same bits."""
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def silu_times(gate, up):
        return gate / (1.0 + tl.exp(-gate)) * up

    return silu_times


@functools.cache
def _kernels() -> tuple[Any, Any]:
    """(the plain kernel, the quantizing one): both compute the product by one device function,
    so the quantized rows are the plain rows' bits quantized."""
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    quantize_row_values = row_quantizer()
    silu_times = silu_product()

    @triton.jit
    def gated(x_ptr, row, cols, mask, width):
        gate = tl.load(x_ptr + row * 2 * width + cols, mask=mask, other=0.0).to(tl.float32)
        up = tl.load(x_ptr + row * 2 * width + width + cols, mask=mask, other=0.0).to(tl.float32)
        return silu_times(gate, up).to(x_ptr.dtype.element_ty)

    @triton.jit
    def silu_mul_rows(x_ptr, out_ptr, width, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < width
        tl.store(out_ptr + row * width + cols, gated(x_ptr, row, cols, mask, width), mask=mask)

    @triton.jit
    def silu_mul_quantize_rows(x_ptr, q_ptr, scale_ptr, width, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < width
        q, scale = quantize_row_values(gated(x_ptr, row, cols, mask, width).to(tl.float32))
        tl.store(q_ptr + row * width + cols, q.to(q_ptr.dtype.element_ty), mask=mask)
        tl.store(scale_ptr + row, scale)

    return silu_mul_rows, silu_mul_quantize_rows

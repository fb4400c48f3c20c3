"""SwiGLU's gate: ``silu(gate) * up`` from the fused gate/up projection.

Contract: ``silu_mul(gate_up)`` takes [..., 2I] (gate in the first half, up in the second, as the
engine fuses the two projections) and returns [..., I] in the input dtype, computed in float32 and
rounded once. ``silu_mul_reference`` is the torch twin and the CPU path, made of ops whose
rounding does not depend on the tensor's size; the Triton kernel (CUDA only) is elementwise: on
both, each row's result is independent of the others. Triton is imported on
first use.
"""

from __future__ import annotations

import functools
from typing import Any

import torch


def silu_mul_reference(gate_up: torch.Tensor) -> torch.Tensor:
    # x / (1 + exp(-x)) rather than F.silu: torch's vectorized and scalar-tail SiLU round
    # differently on CPU, which would make a row's result depend on the tensor's size.
    gate, up = gate_up.float().chunk(2, dim=-1)
    return (gate / (1 + torch.exp(-gate)) * up).to(gate_up.dtype)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """Triton twin of ``silu_mul_reference``; input on a CUDA device."""
    import triton  # noqa: PLC0415 - GPU machines only

    width = gate_up.shape[-1] // 2
    rows = gate_up.reshape(-1, 2 * width).contiguous()
    out = torch.empty(rows.shape[0], width, dtype=gate_up.dtype, device=gate_up.device)
    block = 1024
    grid = (rows.shape[0], triton.cdiv(width, block))
    _kernel()[grid](rows, out, width, BLOCK=block, num_warps=4)
    return out.view(*gate_up.shape[:-1], width)


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def silu_mul_rows(x_ptr, out_ptr, width, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < width
        gate = tl.load(x_ptr + row * 2 * width + cols, mask=mask, other=0.0).to(tl.float32)
        up = tl.load(x_ptr + row * 2 * width + width + cols, mask=mask, other=0.0).to(tl.float32)
        out = gate / (1.0 + tl.exp(-gate)) * up
        tl.store(out_ptr + row * width + cols, out.to(out_ptr.dtype.element_ty), mask=mask)

    return silu_mul_rows

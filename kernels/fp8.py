"""FP8 (e4m3) linear layers with row-wise scales, through ``torch._scaled_mm``.

Contract: ``quantize_rows(x)`` returns ``(q, scale)``: q [M, K] float8_e4m3fn and scale [M, 1]
float32 with ``q · scale ≈ x`` (scale = row absmax / 448, so every row uses e4m3's whole range; an
all-zero row gets scale 1). Weights are quantized once, at load, with the same function (one
scale per output channel). ``fp8_linear(x, weight_q, weight_scale)`` quantizes the activations
per token and multiplies on the FP8 tensor cores, returning [M, N] in x's dtype.
``fp8_linear_reference`` is the twin: the same quantized operands dequantized and multiplied in
float32 — so the test measures the kernel, and the quantization error is the model's choice.
``quantize_rows`` runs a Triton kernel on CUDA (one read, one write) and torch elsewhere.
``QuantizedRows`` are activations a fused kernel quantized as it produced them (the norms and
SiLU·mul feeding FP8 linears: ``kernels.add_rmsnorm``, ``kernels.silu_mul``), bit for bit what
``quantize_rows`` gives for the rows it would have written; FP8 linears take them as they are.
``quantize_rows_by_amax(x, amax)`` is the second half of a quantization whose row maxima a kernel
already found (the gated FP8 GEMM's epilogue, ``kernels.matmul``): ``quantize_rows(x)``'s bits
from an elementwise pass, no row reduction.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch

E4M3_MAX = 448.0


@dataclass(frozen=True)
class QuantizedRows:
    """Rows of ``dtype`` as ``quantize_rows`` gives them: ``data`` [M, K] e4m3, ``scale`` [M, 1]."""

    data: torch.Tensor
    scale: torch.Tensor
    dtype: torch.dtype  # what the rows were computed in: a linear layer's output dtype

    @classmethod
    def of(cls, rows: torch.Tensor | QuantizedRows) -> QuantizedRows:
        """``rows`` quantized (torch on CPU), or as they are when they already are: a linear's
        input, and the twin of a fused kernel's quantized output."""
        if isinstance(rows, QuantizedRows):
            return rows
        return cls(*quantize_rows(rows.reshape(-1, rows.shape[-1])), rows.dtype)


def quantize_rows_reference(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x32 = x.float()
    amax = x32.abs().amax(dim=-1, keepdim=True)
    scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    q = (x32 / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if x.device.type != "cuda":
        return quantize_rows_reference(x)
    import triton  # noqa: PLC0415 - GPU machines only

    rows = x.reshape(-1, x.shape[-1]).contiguous()
    m, k = rows.shape
    q = torch.empty(m, k, dtype=torch.float8_e4m3fn, device=x.device)
    scale = torch.empty(m, 1, dtype=torch.float32, device=x.device)
    block = triton.next_power_of_2(k)
    _kernels()[0][(m,)](rows, q, scale, k, BLOCK=block, num_warps=min(16, max(4, block // 512)))
    return q, scale


def quantize_rows_by_amax(x: torch.Tensor, amax: torch.Tensor) -> QuantizedRows:
    """``quantize_rows`` of x [M, K] (CUDA) given amax [M] float32, each row's max |x| in
    float32: the same scales and the same e4m3 values."""
    import triton  # noqa: PLC0415 - GPU machines only

    m, k = x.shape
    q = torch.empty(m, k, dtype=torch.float8_e4m3fn, device=x.device)
    scale = torch.empty(m, 1, dtype=torch.float32, device=x.device)
    if m:
        block = 2048
        _kernels()[1][(m, triton.cdiv(k, block))](x, amax, q, scale, k, BLOCK=block,
                                                  num_warps=8)
    return QuantizedRows(q, scale, x.dtype)


def fp8_linear_reference(x: torch.Tensor, weight_q: torch.Tensor, weight_scale: torch.Tensor
                         ) -> torch.Tensor:
    q, scale = quantize_rows_reference(x)
    product = (q.float() * scale) @ (weight_q.float() * weight_scale).T
    return product.to(x.dtype)


def fp8_linear(x: torch.Tensor | QuantizedRows, weight_q: torch.Tensor,
               weight_scale: torch.Tensor) -> torch.Tensor:
    """x [M, K] (bf16, or already quantized) @ weight [N, K]^T on the FP8 tensor cores (cuBLAS);
    weight_scale [N, 1]."""
    rows = QuantizedRows.of(x)
    return torch._scaled_mm(rows.data, weight_q.T, scale_a=rows.scale, scale_b=weight_scale.T,
                            out_dtype=rows.dtype)


@functools.cache
def _device_functions() -> tuple[Any, Any]:
    """(scaled, quantize_row_values): ``scaled(x, amax)`` gives the e4m3 values (still float32,
    clamped) and the scale of values x whose row's max |x| is amax; ``quantize_row_values`` does
    the same for one whole row of float32 values (lanes past it 0), finding amax itself."""
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def scaled(x, amax):
        scale = tl.where(amax > 0, amax / 448.0, 1.0)
        return tl.clamp(x / scale, -448.0, 448.0), scale

    @triton.jit
    def quantize_row_values(x):
        return scaled(x, tl.max(tl.abs(x), axis=0))

    return scaled, quantize_row_values


def row_quantizer() -> Any:
    """The Triton device function every kernel quantizing a whole row with (``quantize_rows``,
    the fused norm and SiLU·mul): float32 values of one row (lanes past it 0) -> the e4m3
    values (still float32, clamped) and the row's scale."""
    return _device_functions()[1]


@functools.cache
def _kernels() -> tuple[Any, Any]:
    """(one program per whole row, finding its max; programs over blocks of rows whose maxima
    are given)."""
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    scaled, quantize_row_values = _device_functions()

    @triton.jit
    def quantize_row(x_ptr, q_ptr, scale_ptr, k, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < k
        x = tl.load(x_ptr + row * k + cols, mask=mask, other=0.0).to(tl.float32)
        q, scale = quantize_row_values(x)
        tl.store(q_ptr + row * k + cols, q.to(q_ptr.dtype.element_ty), mask=mask)
        tl.store(scale_ptr + row, scale)

    @triton.jit
    def quantize_by_amax(x_ptr, amax_ptr, q_ptr, scale_ptr, k, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < k
        x = tl.load(x_ptr + row * k + cols, mask=mask, other=0.0).to(tl.float32)
        q, scale = scaled(x, tl.load(amax_ptr + row))
        tl.store(q_ptr + row * k + cols, q.to(q_ptr.dtype.element_ty), mask=mask)
        if tl.program_id(1) == 0:
            tl.store(scale_ptr + row, scale)

    return quantize_row, quantize_by_amax

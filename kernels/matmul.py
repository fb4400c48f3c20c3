"""A batch-invariant GEMM: ``x @ w.T`` whose rows do not depend on how many rows there are.

Contract: ``matmul(x, w)`` for x [M, K] and a weight w [N, K] (torch's linear layout) returns
[M, N] in x's dtype, accumulated in float32. The tile shape is a function of (N, K) only — never
of M — and the K reduction runs in whole tiles in a fixed order with no split-K, so row i of the
result is bit-identical whatever other rows share the call (cuBLAS chooses kernels, and split-K,
by M). ``matmul_reference`` is the twin: the same product in float32, rounded once. Triton is
imported on first use; the kernel needs CUDA.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import torch


def matmul_reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x.float() @ w.float().T).to(x.dtype)


def tile_shape(n: int, k: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for a weight of shape [n, k]."""
    if n >= 256:
        return 128, 256, 64, 8, 3
    return 128, 64, 64, 4, 4


def matmul(x: torch.Tensor, w: torch.Tensor,
           tiles: tuple[int, int, int, int, int] | None = None, tma: bool | None = None,
           warp_specialize: bool = False) -> torch.Tensor:
    """Triton twin of ``matmul_reference``; inputs on a CUDA device. ``tma`` (default: on
    Hopper and newer) runs the persistent variant that moves tiles with the tensor-memory
    accelerator — same tiles, same K order, same bits, cuBLAS's speed (bench/NOTES.md);
    ``tiles`` and ``warp_specialize`` are for benchmarks."""
    import triton  # noqa: PLC0415 - GPU machines only

    x = x.contiguous()
    m, k = x.shape
    n = w.shape[0]
    out = torch.empty(m, n, dtype=x.dtype, device=x.device)
    if m == 0:
        return out
    block_m, block_n, block_k, warps, stages = tiles or tile_shape(n, k)
    if tma is None:
        # Descriptors need 16-byte aligned row strides; the pointer kernel gives the same bits.
        tma = _has_tma(x.device) and (k * x.element_size()) % 16 == 0 and (
            n * out.element_size()) % 16 == 0
    if tma:
        _tma_allocator()
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        tiles_total = triton.cdiv(m, block_m) * triton.cdiv(n, block_n)
        _tma_kernel()[(min(sms, tiles_total),)](
            x, w, out, out, out, m, n, k, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
            GROUP_M=8, NUM_SMS=sms, WARP_SPECIALIZE=warp_specialize, SCALED=False,
            num_warps=warps, num_stages=stages)
        return out
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _kernel()[grid](x, w, out, m, n, k, x.stride(0), w.stride(0), out.stride(0),
                    BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
                    num_warps=warps, num_stages=stages)
    return out


@functools.cache
def _has_tma(device: torch.device) -> bool:
    return torch.cuda.get_device_capability(device)[0] >= 9


_allocator_set = threading.local()


def _tma_allocator() -> None:
    """Device tensor descriptors need scratch memory from torch's allocator. Triton keeps the
    allocator in a context variable, which every thread has its own of: set in each thread
    that launches (the engine warms up in one thread, then steps in another)."""
    if getattr(_allocator_set, "done", False):
        return
    import triton  # noqa: PLC0415

    def alloc(size: int, alignment: int, stream: int | None) -> torch.Tensor:
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)
    _allocator_set.done = True


@functools.cache
def _tma_kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def tile_of(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
        per_group = GROUP_M * tiles_n
        first_m = (tile // per_group) * GROUP_M
        group_m = tl.minimum(tiles_m - first_m, GROUP_M)
        return first_m + (tile % per_group) % group_m, (tile % per_group) // group_m

    @triton.jit(do_not_specialize=["m"])
    def matmul_tma_persistent(a_ptr, b_ptr, c_ptr, scale_a_ptr, scale_b_ptr, m, n, k,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                              NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                              SCALED: tl.constexpr):
        start = tl.program_id(0)
        tiles_m = tl.cdiv(m, BLOCK_M)
        tiles_n = tl.cdiv(n, BLOCK_N)
        steps = tl.cdiv(k, BLOCK_K)
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[m, k], strides=[k, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[n, k], strides=[k, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[m, n], strides=[n, 1],
                                           block_shape=[BLOCK_M, BLOCK_N])
        for tile in tl.range(start, tiles_m * tiles_n, NUM_SMS, flatten=True,
                             warp_specialize=WARP_SPECIALIZE):
            pid_m, pid_n = tile_of(tile, tiles_m, tiles_n, GROUP_M)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for step in range(steps):
                a = a_desc.load([pid_m * BLOCK_M, step * BLOCK_K])
                b = b_desc.load([pid_n * BLOCK_N, step * BLOCK_K])
                acc = tl.dot(a, b.T, acc)
            if SCALED:  # FP8 operands: per-row activation and per-channel weight scales
                rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
                cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
                sa = tl.load(scale_a_ptr + rows, mask=rows < m, other=0.0)
                sb = tl.load(scale_b_ptr + cols, mask=cols < n, other=0.0)
                acc = acc * sa[:, None] * sb[None, :]
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))

    return matmul_tma_persistent


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    # Not specialized on m: a chunk's row count changes with every call; compile once.
    @triton.jit(do_not_specialize=["m"])
    def matmul_tiles(a_ptr, b_ptr, c_ptr, m, n, k, stride_am, stride_bn, stride_cm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr):
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(m, BLOCK_M)
        tiles_n = tl.cdiv(n, BLOCK_N)
        # Grouped order: neighbouring programs share weight tiles in L2.
        per_group = GROUP_M * tiles_n
        first_m = (pid // per_group) * GROUP_M
        group_m = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (pid % per_group) % group_m
        pid_n = (pid % per_group) // group_m
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + rows[:, None].to(tl.int64) * stride_am + ks[None, :]
        b_ptrs = b_ptr + cols[None, :].to(tl.int64) * stride_bn + ks[:, None]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in range(0, tl.cdiv(k, BLOCK_K)):
            left = k - step * BLOCK_K
            a = tl.load(a_ptrs, mask=(rows[:, None] < m) & (ks[None, :] < left), other=0.0)
            b = tl.load(b_ptrs, mask=(cols[None, :] < n) & (ks[:, None] < left), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K
        c_ptrs = c_ptr + rows[:, None].to(tl.int64) * stride_cm + cols[None, :]
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
                 mask=(rows[:, None] < m) & (cols[None, :] < n))

    return matmul_tiles


def scaled_matmul(q: torch.Tensor, scale: torch.Tensor, weight_q: torch.Tensor,
                  weight_scale: torch.Tensor, out_dtype: torch.dtype = torch.bfloat16
                  ) -> torch.Tensor:
    """FP8 e4m3 operands (from ``kernels.fp8.quantize_rows``) multiplied on the tensor cores with
    the row and channel scales applied in the epilogue: the batch-invariant twin of
    ``torch._scaled_mm`` (Hopper; the same fixed tiles and K order as ``matmul``)."""
    import triton  # noqa: PLC0415 - GPU machines only

    m, k = q.shape
    n = weight_q.shape[0]
    out = torch.empty(m, n, dtype=out_dtype, device=q.device)
    if m == 0:
        return out
    block_m, block_n, _, warps, stages = tile_shape(n, k)
    block_k = 128  # FP8 tiles: twice the K of bf16 in the same shared memory
    _tma_allocator()
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    tiles_total = triton.cdiv(m, block_m) * triton.cdiv(n, block_n)
    _tma_kernel()[(min(sms, tiles_total),)](
        q, weight_q, out, scale.reshape(-1).contiguous(), weight_scale.reshape(-1).contiguous(),
        m, n, k, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, NUM_SMS=sms,
        WARP_SPECIALIZE=False, SCALED=True, num_warps=warps, num_stages=stages)
    return out

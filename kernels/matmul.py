"""A batch-invariant GEMM: ``x @ w.T`` whose rows do not depend on how many rows there are.

Contract: ``matmul(x, w)`` for x [M, K] and a weight w [N, K] (torch's linear layout) returns
[M, N] in x's dtype, accumulated in float32. The tile shape is a function of (N, K) only — never
of M — and the K reduction runs in whole tiles in a fixed order with no split-K, so row i of the
result is bit-identical whatever other rows share the call (cuBLAS chooses kernels, and split-K,
by M). ``matmul_reference`` is the twin: the same product in float32, rounded once. Triton is
imported on first use; the kernel needs CUDA.

``gated_matmul(x, w)`` is SwiGLU's first half in one pass (Hopper): w's rows alternate gate and
up (``interleave_gate_up``), and the epilogue writes ``silu(gate) * up`` [M, N/2] from the tile
it holds — the bits of ``silu_mul`` applied to the ``matmul`` of the de-interleaved weight, with
neither the [M, N] product written nor read back. ``gated_matmul_reference`` is its twin.
``gated_scaled_matmul`` is the same for FP8 operands, and when its product feeds an FP8 linear
(``quantize``) the epilogue also takes each row's max |product| (an atomic max: exact, in any
order), so quantizing the [M, N/2] product is one elementwise pass
(``fp8.quantize_rows_by_amax``) — the bits of ``silu_mul(scaled_matmul(...), quantize=True)``
of the de-interleaved weight, without the [M, N] product or a pass over whole rows.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import torch

from heron.kernels import fp8, silu_mul
from heron.kernels.host import has_tma, tma_allocator


def matmul_reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x.float() @ w.float().T).to(x.dtype)


class Tiles(NamedTuple):
    block_m: int
    block_n: int
    block_k: int
    warps: int
    stages: int
    # The epilogue stores the tile in two halves: half the staging buffer in shared memory,
    # which leaves room for one more pipeline stage (TMA kernel only).
    split_store: bool = False


def tile_shape(n: int, k: int) -> Tiles:
    """The tiles for a weight of shape [n, k]: never a function of the row count."""
    if n >= 256:
        return Tiles(128, 256, 64, 8, 3)
    return Tiles(128, 64, 64, 4, 4)


def fp8_tile_shape(n: int, k: int) -> Tiles:
    """FP8 tiles: twice bf16's K in the same shared memory. The split store, with a fourth
    stage where K is short, measured 2.5 % faster over the Qwen3-4B shapes on the H200 (up to
    11 % on qkv's); bench/NOTES.md, seventh session."""
    return tile_shape(n, k)._replace(block_k=128, split_store=n >= 256,
                                     stages=4 if n >= 256 and k <= 2560 else 3)


def interleave_gate_up(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """[2I, K] weight whose row 2j is gate row j and row 2j + 1 up row j: ``gated_matmul``'s."""
    return torch.stack([gate, up], dim=1).reshape(2 * gate.shape[0], gate.shape[1])


def gated_matmul_reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    product = matmul_reference(x, w)
    gate_up = torch.cat([product[:, 0::2], product[:, 1::2]], dim=-1)
    out = silu_mul.silu_mul_reference(gate_up)
    assert isinstance(out, torch.Tensor)
    return out


def matmul(x: torch.Tensor, w: torch.Tensor, tiles: Tiles | None = None,
           tma: bool | None = None, warp_specialize: bool = False) -> torch.Tensor:
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
    tiles = tiles or tile_shape(n, k)
    if tma is None:
        tma = _tma_fits(x, n, out.element_size())
    if tma:
        _launch_tma(x, w, out, tiles, warp_specialize=warp_specialize)
        return out
    grid = (triton.cdiv(m, tiles.block_m) * triton.cdiv(n, tiles.block_n),)
    _kernel()[grid](x, w, out, m, n, k, x.stride(0), w.stride(0), out.stride(0),
                    BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n, BLOCK_K=tiles.block_k,
                    GROUP_M=8, num_warps=tiles.warps, num_stages=tiles.stages)
    return out


def _tma_fits(x: torch.Tensor, n: int, out_size: int) -> bool:
    """Whether the TMA kernel can run x [M, K] against a weight of n rows: Hopper or newer, and
    16-byte aligned row strides (descriptors need them; the pointer kernel gives the same
    bits)."""
    return has_tma(x.device) and _aligned(x.shape[1] * x.element_size(), n * out_size)


def gated_fits(gate: torch.Tensor, fp8: bool = False) -> bool:
    """Whether ``gated_matmul`` (``gated_scaled_matmul`` with ``fp8``) runs for SwiGLU's gate
    (or up) weight [I, K] in the activations' dtype: Hopper or newer, and 16-byte aligned rows
    of its input [M, K] and its result [M, I]."""
    size = gate.element_size()
    return has_tma(gate.device) and _aligned(gate.shape[1] * (1 if fp8 else size),
                                             gate.shape[0] * size)


def _aligned(*row_bytes: int) -> bool:
    return all(b % 16 == 0 for b in row_bytes)


def gated_matmul(x: torch.Tensor, w: torch.Tensor, tiles: Tiles | None = None) -> torch.Tensor:
    """Triton twin of ``gated_matmul_reference``: w [2I, K] interleaved, the result [M, I] in
    x's dtype (where ``gated_fits`` says it runs). The tiles are ``matmul``'s for w, so the
    gate and up values the epilogue reads are ``matmul``'s bits, and SiLU·mul is
    ``silu_mul``'s device function."""
    x = x.contiguous()
    m, n = x.shape[0], w.shape[0]
    out = torch.empty(m, n // 2, dtype=x.dtype, device=x.device)
    if m:
        _launch_tma(x, w, out, tiles or tile_shape(n, x.shape[1]), gated=True)
    return out


def gated_scaled_matmul(rows: fp8.QuantizedRows, weight_q: torch.Tensor,
                        weight_scale: torch.Tensor, quantize: bool
                        ) -> torch.Tensor | fp8.QuantizedRows:
    """``gated_matmul`` of FP8 operands: rows from ``fp8.quantize_rows`` (or a kernel giving its
    bits), weight_q [2I, K] e4m3 interleaved with its per-row scales [2I, 1]; the tiles and
    scales of ``scaled_matmul``. Returns [M, I] in the rows' dtype, or with ``quantize`` those
    rows quantized (``fp8.QuantizedRows``)."""
    m, n = rows.data.shape[0], weight_q.shape[0]
    out = torch.empty(m, n // 2, dtype=rows.dtype, device=rows.data.device)
    amax = torch.zeros(m if quantize else 0, dtype=torch.float32, device=out.device)
    if m:
        _launch_tma(rows.data, weight_q, out, fp8_tile_shape(n, rows.data.shape[1]),
                    scales=(rows.scale.reshape(-1).contiguous(),
                            weight_scale.reshape(-1).contiguous()),
                    gated=True, amax=amax if quantize else None)
    return fp8.quantize_rows_by_amax(out, amax) if quantize else out


def _launch_tma(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, tiles: Tiles,
                scales: tuple[torch.Tensor, torch.Tensor] | None = None, gated: bool = False,
                warp_specialize: bool = False, amax: torch.Tensor | None = None) -> None:
    import triton  # noqa: PLC0415 - GPU machines only

    tma_allocator()
    m, k = x.shape
    n = w.shape[0]
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    tiles_total = triton.cdiv(m, tiles.block_m) * triton.cdiv(n, tiles.block_n)
    scale_a, scale_b = scales if scales is not None else (out, out)
    _tma_kernel()[(min(sms, tiles_total),)](
        x, w, out, scale_a, scale_b, amax if amax is not None else out, m, n, k,
        BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n, BLOCK_K=tiles.block_k, GROUP_M=8,
        NUM_SMS=sms, WARP_SPECIALIZE=warp_specialize, SCALED=scales is not None, GATED=gated,
        AMAX=amax is not None, SPLIT_STORE=tiles.split_store,
        num_warps=tiles.warps, num_stages=tiles.stages)


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

    silu_times = silu_mul.silu_product()

    @triton.jit
    def halves(acc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INTERLEAVED: tl.constexpr):
        """A [BLOCK_M, BLOCK_N] tile split along N: even and odd columns, or left and right."""
        if INTERLEAVED:
            return tl.split(tl.reshape(acc, (BLOCK_M, BLOCK_N // 2, 2)))
        return tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))

    @triton.jit(do_not_specialize=["m"])
    def matmul_tma_persistent(a_ptr, b_ptr, c_ptr, scale_a_ptr, scale_b_ptr, amax_ptr, m, n,
                              k, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                              NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                              SCALED: tl.constexpr, GATED: tl.constexpr, AMAX: tl.constexpr,
                              SPLIT_STORE: tl.constexpr):
        start = tl.program_id(0)
        tiles_m = tl.cdiv(m, BLOCK_M)
        tiles_n = tl.cdiv(n, BLOCK_N)
        steps = tl.cdiv(k, BLOCK_K)
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[m, k], strides=[k, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[n, k], strides=[k, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
        if GATED:  # the result has one column per (gate, up) pair of weight rows
            c_desc = tl.make_tensor_descriptor(c_ptr, shape=[m, n // 2], strides=[n // 2, 1],
                                               block_shape=[BLOCK_M, BLOCK_N // 2])
        elif SPLIT_STORE:
            c_desc = tl.make_tensor_descriptor(c_ptr, shape=[m, n], strides=[n, 1],
                                               block_shape=[BLOCK_M, BLOCK_N // 2])
        else:
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
            dtype = c_ptr.dtype.element_ty
            if GATED:
                # Rounded first, as the [M, N] product would have been: silu_mul's bits.
                gate, up = halves(acc, BLOCK_M, BLOCK_N, True)
                gate = gate.to(dtype).to(tl.float32)
                up = up.to(dtype).to(tl.float32)
                product = silu_times(gate, up).to(dtype)
                c_desc.store([pid_m * BLOCK_M, pid_n * (BLOCK_N // 2)], product)
                if AMAX:  # each row's max |product| over its tiles, for its FP8 scale
                    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
                    tl.atomic_max(amax_ptr + rows,
                                  tl.max(tl.abs(product.to(tl.float32)), axis=1),
                                  mask=rows < m, sem="relaxed")
            elif SPLIT_STORE:
                left, right = halves(acc, BLOCK_M, BLOCK_N, False)
                c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(dtype))
                c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(dtype))
            else:
                c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(dtype))

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
                  weight_scale: torch.Tensor, out_dtype: torch.dtype = torch.bfloat16,
                  tiles: Tiles | None = None) -> torch.Tensor:
    """FP8 e4m3 operands (from ``kernels.fp8.quantize_rows``) multiplied on the tensor cores with
    the row and channel scales applied in the epilogue: the batch-invariant twin of
    ``torch._scaled_mm`` (Hopper; the same fixed tiles and K order as ``matmul``)."""
    m, k = q.shape
    n = weight_q.shape[0]
    out = torch.empty(m, n, dtype=out_dtype, device=q.device)
    if m == 0:
        return out
    tiles = tiles or fp8_tile_shape(n, k)
    _launch_tma(q, weight_q, out, tiles,
                scales=(scale.reshape(-1).contiguous(), weight_scale.reshape(-1).contiguous()))
    return out

"""The fused elementwise kernels against their torch twins (GPU), and the twins' own semantics
(CPU): residual add + RMSNorm (quantizing for FP8), QK-norm + RoPE (and the arena write), SiLU·mul
(quantizing for FP8), and the row log-sum-exp."""

from __future__ import annotations

import pytest
import torch

from heron.engine.rope import inverse_frequencies, rotary_tables
from heron.engine.spec import RopeSpec
from heron.kernels.add_rmsnorm import add_rmsnorm, add_rmsnorm_reference
from heron.kernels.fp8 import QuantizedRows, quantize_rows, quantize_rows_reference
from heron.kernels.logsumexp import logsumexp_rows, logsumexp_rows_reference
from heron.kernels.qk_norm_rope import ArenaWrite, qk_norm_rope, qk_norm_rope_reference
from heron.kernels.rmsnorm import rmsnorm_reference
from heron.kernels.silu_mul import silu_mul, silu_mul_reference

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")
BF16 = {"atol": 2e-2, "rtol": 2e-2}


def tables(tokens: int, dim: int, device: str, dtype: torch.dtype):
    inv = inverse_frequencies(RopeSpec("default", 1_000_000.0), dim).to(device)
    positions = torch.randint(0, 4096, (tokens,), device=device)
    return rotary_tables(inv, positions, dtype)


# -- the twins define the math (CPU, float32) ----------------------------------------------------


def test_add_rmsnorm_reference_is_add_then_norm() -> None:
    x, r, w = torch.randn(5, 64), torch.randn(5, 64), torch.randn(64)
    y, h = add_rmsnorm_reference(x, r, w, 1e-6)
    torch.testing.assert_close(h, x + r)
    torch.testing.assert_close(y, rmsnorm_reference(x + r, w, 1e-6))


def rotate_half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Hugging Face's apply_rotary_pos_emb, for [T, heads, D] and tables [T, D]."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


def test_qk_norm_rope_reference_is_norm_then_hugging_faces_rotation() -> None:
    heads, kv_heads, dim, tokens = 4, 2, 16, 7
    qkv = torch.randn(tokens, (heads + 2 * kv_heads) * dim)
    qw, kw = torch.randn(dim), torch.randn(dim)
    cos, sin = tables(tokens, dim, "cpu", torch.float32)
    q, k, v = qk_norm_rope_reference(qkv, heads, kv_heads, qw, kw, 1e-6, cos, sin)
    q0, k0, v0 = qkv.split((heads * dim, kv_heads * dim, kv_heads * dim), dim=-1)
    expected_q = rotate_half(rmsnorm_reference(q0.view(tokens, heads, dim), qw, 1e-6), cos, sin)
    expected_k = rotate_half(rmsnorm_reference(k0.view(tokens, kv_heads, dim), kw, 1e-6), cos,
                             sin)
    torch.testing.assert_close(q, expected_q)
    torch.testing.assert_close(k, expected_k)
    torch.testing.assert_close(v, v0.view(tokens, kv_heads, dim))


def arena_write(tokens: int, kv_heads: int, dim: int, device: str, dtype: torch.dtype
                ) -> ArenaWrite:
    """An arena layer of ``tokens`` slots (filled with a marker) and slots for every other
    token."""
    slots = torch.full((tokens,), -1, dtype=torch.int64)
    slots[::2] = torch.randperm(tokens)[: (tokens + 1) // 2]
    keys = torch.full((tokens, kv_heads, dim), 7.0, device=device, dtype=dtype)
    return ArenaWrite(keys, keys.clone(), slots.to(device))


def assert_kept(write: ArenaWrite, k: torch.Tensor, v: torch.Tensor) -> None:
    kept = write.slots >= 0
    slots = write.slots[kept]
    assert torch.equal(write.keys[slots], k[kept]) and torch.equal(write.values[slots], v[kept])
    untouched = torch.ones(write.keys.shape[0], dtype=torch.bool, device=k.device)
    untouched[slots] = False
    assert (write.keys[untouched] == 7).all() and (write.values[untouched] == 7).all()


def test_qk_norm_rope_reference_keeps_the_kv_of_tokens_with_a_slot() -> None:
    heads, kv_heads, dim, tokens = 4, 2, 16, 9
    qkv = torch.randn(tokens, (heads + 2 * kv_heads) * dim)
    cos, sin = tables(tokens, dim, "cpu", torch.float32)
    write = arena_write(tokens, kv_heads, dim, "cpu", torch.float32)
    _, k, v = qk_norm_rope_reference(qkv, heads, kv_heads, None, None, 1e-6, cos, sin, write)
    assert_kept(write, k, v)


def test_silu_mul_reference() -> None:
    x = torch.randn(3, 10)
    gate, up = x.chunk(2, dim=-1)
    torch.testing.assert_close(silu_mul_reference(x), torch.nn.functional.silu(gate) * up)
    # A row's bits do not depend on how many rows share the call (torch's own SiLU's do).
    wide = torch.randn(5000, 2 * 37, generator=torch.Generator().manual_seed(0)) * 4
    full = silu_mul_reference(wide)
    for start, rows in [(0, 1), (5, 1001), (17, 4999 - 17)]:
        assert torch.equal(silu_mul_reference(wide[start:start + rows]), full[start:start + rows])


def test_quantizing_twins_are_the_unfused_rows_quantized() -> None:
    x, r, w = torch.randn(5, 64), torch.randn(5, 64), torch.randn(64)
    y, h = add_rmsnorm_reference(x, r, w, 1e-6)
    normed, h_q = add_rmsnorm_reference(x, r, w, 1e-6, quantize=True)
    gated = silu_mul_reference(torch.cat([x, r], dim=-1), quantize=True)
    assert torch.equal(h_q, h)
    for rows, expected in ((normed, y), (gated, silu_mul_reference(torch.cat([x, r], dim=-1)))):
        assert isinstance(rows, QuantizedRows) and rows.dtype == torch.float32
        q, scale = quantize_rows_reference(expected)
        assert torch.equal(rows.data.float(), q.float()) and torch.equal(rows.scale, scale)
        # e4m3: 3 mantissa bits (half a step: 2**-4 relative), subnormals 2**-9 of the scale
        torch.testing.assert_close(rows.data.float() * rows.scale, expected,
                                   atol=float(rows.scale.max()) * 2**-9, rtol=2**-4)


# -- kernels against twins (GPU) -----------------------------------------------------------------


@cuda
@pytest.mark.parametrize("shape", [(1, 64), (37, 576), (300, 2560), (64, 4096)])
def test_add_rmsnorm_kernel(shape: tuple[int, int]) -> None:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 3
    r = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 3
    w = torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16)
    y, h = add_rmsnorm(x, r, w, 1e-6)
    y0, h0 = add_rmsnorm_reference(x, r, w, 1e-6)
    assert torch.equal(h, h0)
    torch.testing.assert_close(y.float(), y0.float(), **BF16)


def assert_same_quantized(rows: QuantizedRows, expected: torch.Tensor) -> None:
    q, scale = quantize_rows(expected)
    assert rows.dtype == expected.dtype
    assert torch.equal(rows.data.view(torch.uint8), q.view(torch.uint8))
    assert torch.equal(rows.scale, scale)


@cuda
@pytest.mark.parametrize("shape", [(1, 64), (37, 576), (300, 2560), (64, 4096), (5, 1000)])
def test_add_rmsnorm_quantizing_is_the_unfused_norm_quantized(shape: tuple[int, int]) -> None:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 3
    r = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 3
    w = torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16)
    x[0] = -r[0]  # an all-zero row: scale 1
    y, h = add_rmsnorm(x, r, w, 1e-6)
    rows, h_q = add_rmsnorm(x, r, w, 1e-6, quantize=True)
    assert isinstance(rows, QuantizedRows) and torch.equal(h_q, h)
    assert_same_quantized(rows, y)


@cuda
@pytest.mark.parametrize(("heads", "kv_heads", "dim", "norm"),
                         [(32, 8, 128, True), (16, 8, 128, True), (9, 3, 64, False)])
def test_qk_norm_rope_kernel(heads: int, kv_heads: int, dim: int, norm: bool) -> None:
    tokens = 333
    qkv = torch.randn(tokens, (heads + 2 * kv_heads) * dim, device="cuda", dtype=torch.bfloat16)
    weights = ((torch.randn(dim, device="cuda", dtype=torch.bfloat16),
                torch.randn(dim, device="cuda", dtype=torch.bfloat16)) if norm else (None, None))
    cos, sin = tables(tokens, dim, "cuda", torch.bfloat16)
    write = arena_write(tokens, kv_heads, dim, "cuda", torch.bfloat16)
    got = qk_norm_rope(qkv, heads, kv_heads, *weights, 1e-6, cos, sin, write)
    expected = qk_norm_rope_reference(qkv, heads, kv_heads, *weights, 1e-6, cos, sin)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        torch.testing.assert_close(g.float(), e.float(), **BF16)
    assert_kept(write, got[1], got[2])
    plain = qk_norm_rope(qkv, heads, kv_heads, *weights, 1e-6, cos, sin)
    assert all(torch.equal(a, b) for a, b in zip(plain, got, strict=True))


@cuda
@pytest.mark.parametrize("shape", [(1, 2 * 64), (513, 2 * 9728), (7, 2 * 3072)])
def test_silu_mul_kernel(shape: tuple[int, int]) -> None:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 4
    torch.testing.assert_close(silu_mul(x).float(), silu_mul_reference(x).float(), **BF16)


@cuda
@pytest.mark.parametrize("shape", [(1, 2 * 64), (513, 2 * 9728), (7, 2 * 3072), (3, 2 * 1000)])
def test_silu_mul_quantizing_is_the_unfused_product_quantized(shape: tuple[int, int]) -> None:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 4
    rows = silu_mul(x, quantize=True)
    assert isinstance(rows, QuantizedRows)
    assert_same_quantized(rows, silu_mul(x))


def test_logsumexp_reference_rows_do_not_depend_on_the_batch() -> None:
    x = torch.randn(40, 151936) * 5
    threads = torch.get_num_threads()
    torch.set_num_threads(16)  # as on a many-core host, where one reduction over all rows was not
    try:
        full = logsumexp_rows_reference(x)
        for start, rows in [(0, 1), (3, 7), (10, 30)]:
            assert torch.equal(logsumexp_rows_reference(x[start:start + rows]),
                               full[start:start + rows])
    finally:
        torch.set_num_threads(threads)


@cuda
def test_logsumexp_kernel() -> None:
    x = torch.randn(300, 151936, device="cuda") * 5
    x[0, :] = -1e30
    x[1, 7] = 1e4
    got = logsumexp_rows(x)
    torch.testing.assert_close(got, logsumexp_rows_reference(x), atol=1e-4, rtol=1e-6)
    for start, rows in [(0, 1), (5, 3), (17, 200)]:
        assert torch.equal(logsumexp_rows(x[start:start + rows]), got[start:start + rows])

"""Would FP8 tensor cores speed up the join's suffix→anchor attention? A GPU experiment.

    python bench/fp8_attention.py

The BIO-2 chunk's prefix part (2 anchors × 4,043 keys, each anchor's 1,180 partner rows × 14
tokens stacked: 16,520 queries × 32 heads) through a simplified copy of segment attention's
stacked-prefix loop (128 query rows per program, 64 keys per step, keys by tensor descriptor),
in variants of where FP8 enters:

- ``k``: bf16 keys; ``k8in``: keys quantized to e4m3 inside the kernel, one scale per key
  (and head) — batch-invariant, no change to the arena; ``k8``: keys stored e4m3 with their
  scales (half the bytes read);
- ``v``: P·V in bf16; ``v8in``/``v8``: P·V on FP8 tensor cores, values quantized per key
  in the kernel / stored, each key's scale folded into its column of P, P lifted by 2^8 so
  that small weights do not flush to zero;
- the queries are quantized per row (and head) in the kernel whenever the keys are FP8.

Prints, per variant: time, useful TFLOP/s, and max/mean |Δ| from float32 attention on the same
inputs; the engine's own kernel (``segment_attention``, prefix part, the suffix launch's shape)
as the baseline of the same run. ``--bf16`` instead adds back to the simplified bf16 loop, one
at a time, what the engine's loop does (each tile's first slot read from the key list, the
list's length known at run time) and times the engine's kernel at 2-4 pipeline stages, with
the anchors' keys in one run of slots and with their 64-key blocks apart in the arena.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np
import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from heron.kernels.attention import Launch, Segments, segment_attention
from heron.kernels.host import tma_allocator

HEADS, KV_HEADS, DIM = 32, 8, 128
ANCHOR, SUFFIX, COUNT = 4043, 14, 2360
E4M3_MAX = 448.0
P_LIFT = tl.constexpr(256.0)  # P in [0, 1] times this stays below e4m3's 448


@triton.jit
def quantized(x):
    """x as e4m3 with one scale per row (the row's amax / 448), and the scales."""
    amax = tl.max(tl.abs(x), axis=1)
    scale = tl.where(amax > 0, amax / 448.0, 1.0)
    return (x / scale[:, None]).to(tl.float8e4nv), scale


@triton.jit
def stacked_prefix(q_ptr, k_desc_ptr, v_desc_ptr, ks_ptr, vs_ptr, out_ptr, q_len, kv_base_ptr,
                   n_slots, stride_q, stride_o, scale_log2, index_ptr, kv_len,
                   GROUP: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
                   D: tl.constexpr, KV_HEADS: tl.constexpr, KMODE: tl.constexpr,
                   VMODE: tl.constexpr, KV_LEN: tl.constexpr, INDEXED: tl.constexpr,
                   RUNTIME_LEN: tl.constexpr):
    tile = tl.program_id(0)
    kv_head = tl.program_id(1)
    anchor = tl.program_id(2)
    kv_base = tl.load(kv_base_ptr + anchor)
    r = tl.arange(0, ROWS)
    BLOCK_M: tl.constexpr = ROWS // GROUP
    token = tile * BLOCK_M + r // GROUP
    head = kv_head * GROUP + r % GROUP
    valid = token < q_len
    dims = tl.arange(0, D)
    position = (anchor * q_len + token).to(tl.int64)
    qt = tl.load(q_ptr + (position * stride_q + head * D)[:, None] + dims[None, :],
                 mask=valid[:, None], other=0.0)
    row_scale = tl.full((ROWS,), 1.0, tl.float32) * scale_log2
    if KMODE != 0:
        qt, qs = quantized(qt)
        row_scale = qs * scale_log2
    k_desc = tl.make_tensor_descriptor(k_desc_ptr, shape=[n_slots, KV_HEADS * D],
                                       strides=[KV_HEADS * D, 1], block_shape=[BLOCK_N, D])
    v_desc = tl.make_tensor_descriptor(v_desc_ptr, shape=[n_slots, KV_HEADS * D],
                                       strides=[KV_HEADS * D, 1], block_shape=[BLOCK_N, D])
    m_i = tl.full((ROWS,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((ROWS,), dtype=tl.float32)
    acc = tl.zeros((ROWS, D), dtype=tl.float32)
    length = kv_len if RUNTIME_LEN else KV_LEN
    for start in range(0, length, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        slot = kv_base + start
        if INDEXED:
            slot = tl.load(index_ptr + kv_base + start)
        kt = k_desc.load([slot, kv_head * D])
        if KMODE == 1:
            kt, ks = quantized(kt)
        elif KMODE == 2:
            ks = tl.load(ks_ptr + (kv_base + n) * KV_HEADS + kv_head, mask=n < KV_LEN,
                         other=1.0)
        scores = tl.dot(qt, tl.trans(kt))
        if KMODE != 0:
            scores = scores * ks[None, :]
        scores = scores * row_scale[:, None]
        if start + BLOCK_N > length:
            scores = tl.where(n[None, :] < length, scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vt = v_desc.load([slot, kv_head * D])
        if VMODE == 0:
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), vt)
        else:
            if VMODE == 1:
                vt, vs = quantized(vt)
            else:
                vs = tl.load(vs_ptr + (kv_base + n) * KV_HEADS + kv_head,
                             mask=n < KV_LEN, other=1.0)
            p8 = (p * (vs * P_LIFT)[None, :]).to(tl.float8e4nv)
            acc = acc * alpha[:, None] + tl.dot(p8, vt)
        m_i = m_new
    if VMODE != 0:
        acc = acc / P_LIFT
    result = acc / l_i[:, None]
    tl.store(out_ptr + (position * stride_o + head * D)[:, None] + dims[None, :],
             result.to(tl.bfloat16), mask=valid[:, None])


def quantize_keys(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[N, H, D] as e4m3 with one float32 scale per (key, head): [N, H]."""
    amax = x.float().abs().amax(dim=-1)
    scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    return (x.float() / scale[..., None]).to(torch.float8_e4m3fn), scale.contiguous()


def run(q, k, v, kmode: int, vmode: int, launch: tuple[int, int, int], indexed: bool = False,
        runtime_len: bool = False):
    rows, warps, stages = launch
    tma_allocator()
    per_anchor = q.shape[0] // 2
    out = torch.empty_like(q)
    k8, ks = quantize_keys(k)
    v8, vs = quantize_keys(v)
    kk = k8 if kmode == 2 else k
    vv = v8 if vmode == 2 else v
    base = torch.tensor([0, ANCHOR], device=q.device, dtype=torch.int32)
    block_m = rows // (HEADS // KV_HEADS)
    grid = (triton_cdiv(per_anchor, block_m), KV_HEADS, 2)
    scale_log2 = DIM**-0.5 * math.log2(math.e)

    index = torch.arange(k.shape[0], device=q.device, dtype=torch.int32)

    def call():
        stacked_prefix[grid](q, kk, vv, ks, vs, out, per_anchor, base, k.shape[0], q.stride(0),
                             out.stride(0), scale_log2, index, ANCHOR, GROUP=HEADS // KV_HEADS,
                             ROWS=rows, BLOCK_N=64, D=DIM, KV_HEADS=KV_HEADS, KMODE=kmode,
                             VMODE=vmode, KV_LEN=ANCHOR, INDEXED=indexed,
                             RUNTIME_LEN=runtime_len, num_warps=warps, num_stages=stages)
        return out

    return call


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def reference(q, k, v) -> torch.Tensor:
    """float32 attention of each anchor's stacked queries over its keys (no mask)."""
    per_anchor = q.shape[0] // 2
    outs = []
    for a in range(2):
        qa = q[a * per_anchor:(a + 1) * per_anchor].float().transpose(0, 1)  # [H, S, D]
        ka = k[a * ANCHOR:(a + 1) * ANCHOR].float().repeat_interleave(
            HEADS // KV_HEADS, dim=1).transpose(0, 1)
        va = v[a * ANCHOR:(a + 1) * ANCHOR].float().repeat_interleave(
            HEADS // KV_HEADS, dim=1).transpose(0, 1)
        outs.append(torch.nn.functional.scaled_dot_product_attention(
            qa, ka, va, scale=DIM**-0.5).transpose(0, 1))
    return torch.cat(outs)


def bf16_differences() -> None:
    """The simplified bf16 loop beside the engine's kernel, adding back one at a time what the
    engine's loop does: each tile's first slot read from the key list, and the list's length
    known only at run time."""
    per_anchor = COUNT // 2 * SUFFIX
    q = torch.randn(2 * per_anchor, HEADS, DIM, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2 * ANCHOR, KV_HEADS, DIM, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(2 * ANCHOR, KV_HEADS, DIM, device="cuda", dtype=torch.bfloat16)
    useful = 4 * HEADS * DIM * 2 * per_anchor * ANCHOR
    stacked = Segments.build([0, per_anchor], [per_anchor] * 2,
                             [np.arange(ANCHOR), np.arange(ANCHOR, 2 * ANCHOR)],
                             [ANCHOR, ANCHOR], "cuda")
    engine = functools.partial(segment_attention, q, k, v, stacked, DIM**-0.5,
                               launch=Launch(num_stages=2))
    expected = engine()
    # The same keys with each anchor's 64-key blocks apart (the two anchors' blocks alternate in
    # the arena): the tiles hold the same keys, so the bits must not change.
    blocks = triton_cdiv(ANCHOR, 64)
    apart = [((2 * np.arange(blocks)[:, None] + a) * 64 + np.arange(64)).ravel()[:ANCHOR]
             for a in range(2)]
    k_apart = torch.zeros(2 * blocks * 64, KV_HEADS, DIM, device="cuda", dtype=torch.bfloat16)
    v_apart = torch.zeros_like(k_apart)
    for a in range(2):
        slots = torch.as_tensor(apart[a], device="cuda")
        k_apart[slots] = k[a * ANCHOR:(a + 1) * ANCHOR]
        v_apart[slots] = v[a * ANCHOR:(a + 1) * ANCHOR]
    stacked_apart = Segments.build([0, per_anchor], [per_anchor] * 2, apart, [ANCHOR, ANCHOR],
                                   "cuda")
    for layout, keys, values, segments in (("one run", k, v, stacked),
                                           ("blocks apart", k_apart, v_apart, stacked_apart)):
        for stages in (2, 3, 4):
            call = functools.partial(segment_attention, q, keys, values, segments, DIM**-0.5,
                                     launch=Launch(num_stages=stages))
            same = torch.equal(call(), expected)
            t = do_bench(call, warmup=25, rep=100, return_mode="median")
            print(f"engine kernel bf16, anchors in {layout}, {stages} stages: {t:.3f} ms "
                  f"{useful / t / 1e9:.0f} TFLOP/s, same bits {same}", flush=True)
    for indexed in (False, True):
        for runtime_len in (False, True):
            call = run(q, k, v, 0, 0, (128, 4, 2), indexed, runtime_len)
            same = torch.equal(call(), expected)
            t = do_bench(call, warmup=25, rep=100, return_mode="median")
            print(f"simplified, slot from the list {indexed!s:5s}, length at run time "
                  f"{runtime_len!s:5s}: {t:.3f} ms {useful / t / 1e9:.0f} TFLOP/s, "
                  f"engine's bits {same}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    if "--bf16" in sys.argv:
        bf16_differences()
        return
    per_anchor = COUNT // 2 * SUFFIX
    for label, spread in (("random", 1.0), ("peaked", 4.0)):
        q = torch.randn(2 * per_anchor, HEADS, DIM, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(2 * ANCHOR, KV_HEADS, DIM, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(2 * ANCHOR, KV_HEADS, DIM, device="cuda", dtype=torch.bfloat16)
        q = (q * spread).to(torch.bfloat16)  # sharper softmax: closer to a trained model's
        expected = reference(q, k, v)
        useful = 4 * HEADS * DIM * 2 * per_anchor * ANCHOR
        stacked = Segments.build([0, per_anchor], [per_anchor] * 2,
                                 [np.arange(ANCHOR), np.arange(ANCHOR, 2 * ANCHOR)],
                                 [ANCHOR, ANCHOR], "cuda")
        scale = DIM**-0.5
        call = functools.partial(segment_attention, q, k, v, stacked, scale,
                                 launch=Launch(num_stages=2))
        err = (call().float() - expected).abs()
        t = do_bench(call, warmup=25, rep=100, return_mode="median")
        print(f"{label:7s} engine kernel bf16 {t:7.3f} ms {useful / t / 1e9:5.0f} TFLOP/s  "
              f"max|Δ| {err.max():.2e} mean {err.mean():.2e}", flush=True)
        for kmode, vmode in ((0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (2, 2)):
            for launch in ((128, 4, 2), (128, 4, 3), (128, 8, 2), (256, 8, 2)):
                name = (f"{['k', 'k8in', 'k8'][kmode]}+{['v', 'v8in', 'v8'][vmode]} "
                        f"rows={launch[0]} w={launch[1]} st={launch[2]}")
                try:
                    call = run(q, k, v, kmode, vmode, launch)
                    got = call().float()
                    t = do_bench(call, warmup=25, rep=100, return_mode="median")
                except Exception as exc:  # noqa: BLE001 - a shape the compiler refuses
                    print(f"{label:7s} {name}: {exc!r:.300}", flush=True)
                    continue
                err = (got - expected).abs()
                print(f"{label:7s} {name:38s} {t:7.3f} ms {useful / t / 1e9:5.0f} TFLOP/s  "
                      f"max|Δ| {err.max():.2e} mean {err.mean():.2e}", flush=True)


if __name__ == "__main__":
    main()

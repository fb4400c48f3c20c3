"""Segment attention (queries over gathered key slots) against its float32 twin, and the
batch invariance it promises."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from heron.engine.attention.reference import attend_with_lse
from heron.kernels.attention import (
    OwnKeys,
    Segments,
    segment_attention,
    segment_attention_reference,
)

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")


def arena_case(rng: np.random.Generator, device: str, dtype: torch.dtype, heads: int = 8,
               kv_heads: int = 2, dim: int = 64, prefixes: int = 3, rows: int = 12,
               consecutive: bool = False):
    """Prefix documents and suffix rows whose keys live at scattered slots of one arena (or,
    ``consecutive``, each token after the one before); each suffix row's key list is its
    prefix's slots then its own slots (causal offset = prefix length); prefix rows are causal
    over their own slots."""
    prefix_lengths = [int(n) for n in rng.integers(1, 200, prefixes)]
    row_lengths = [int(n) for n in rng.integers(1, 40, rows)]
    owners = [int(o) for o in rng.integers(0, prefixes, rows)]
    total = sum(prefix_lengths) + sum(row_lengths)
    # Where each token's K/V lives in the arena.
    slots = np.arange(total) if consecutive else rng.permutation(total + 50)[:total]
    arena_k = torch.randn(total + 50, kv_heads, dim, device=device, dtype=dtype)
    arena_v = torch.randn(total + 50, kv_heads, dim, device=device, dtype=dtype)
    q = torch.randn(total, heads, dim, device=device, dtype=dtype)
    q_start, q_len, kv, offsets = [], [], [], []
    position = 0
    prefix_slots = []
    for n in prefix_lengths:
        own = slots[position:position + n]
        prefix_slots.append(own)
        q_start.append(position), q_len.append(n), kv.append(own), offsets.append(0)
        position += n
    for n, owner in zip(row_lengths, owners, strict=True):
        own = slots[position:position + n]
        q_start.append(position), q_len.append(n)
        kv.append(np.concatenate([prefix_slots[owner], own]))
        offsets.append(len(prefix_slots[owner]))
        position += n
    segments = Segments.build(q_start, q_len, kv, offsets, device)
    return q, arena_k, arena_v, segments


def scattered(k: torch.Tensor, v: torch.Tensor, segments: Segments, rng: np.random.Generator
              ) -> tuple[torch.Tensor, torch.Tensor, Segments]:
    """The same keys and values moved to scattered slots, and the segments reading them there."""
    where = rng.permutation(k.shape[0])
    moved = torch.as_tensor(where, device=k.device)
    k2, v2 = torch.empty_like(k), torch.empty_like(v)
    k2[moved], v2[moved] = k, v
    index = segments.kv_index.cpu().numpy()
    lists = [where[index[s:s + n]] for s, n in zip(segments.kv_start.tolist(),
                                                   segments.kv_len.tolist(), strict=True)]
    return k2, v2, Segments.build(segments.q_start.tolist(), segments.q_len.tolist(), lists,
                                  segments.causal_offset.tolist(), k.device)


def test_build_counts_each_lists_first_tiles_of_consecutive_slots() -> None:
    """``tiled``: how many of a list's first 64-key tiles hold consecutive slots."""
    block = np.arange(1000, 1064)
    lists = [np.concatenate([np.arange(64), block, np.arange(500, 530)]),  # 2 tiles, a rest
             np.concatenate([np.arange(64), np.arange(64, 0, -1), block]),  # the 2nd is broken
             np.arange(63),  # no whole tile
             np.concatenate([np.arange(32), np.arange(100, 132), block])]  # a tile of 2 runs
    document = np.concatenate([block, np.arange(3000, 3064), np.zeros(64, dtype=np.int64)])
    lists += [document[:128], document[:150], document]  # views of one array: stored once
    segments = Segments.build(list(range(len(lists))), [1] * len(lists), lists,
                              [len(x) for x in lists], "cpu")
    assert segments.tiled.tolist() == [2, 1, 0, 0, 2, 2, 2]


def test_build_stores_nested_prefixes_once() -> None:
    """A document's block rows read prefixes of one slot array: the index stores the longest
    once and every segment still reads exactly its own list."""
    document = np.random.default_rng(1).permutation(1000).astype(np.int64)
    lists = [document[:64 * d] for d in range(1, 12)] + [np.arange(5, 9), document[100:300],
                                                         document[:10].copy()]
    segments = Segments.build(list(range(len(lists))), [1] * len(lists), lists,
                              [len(x) for x in lists], "cpu")
    index, starts = segments.kv_index.numpy(), segments.kv_start.numpy()
    for s, expected in enumerate(lists):
        assert segments.kv_len[s] == len(expected)
        np.testing.assert_array_equal(index[starts[s]:starts[s] + len(expected)], expected)
    assert len(index) == 64 * 11 + 4 + 200 + 10  # not the sum of the nested prefixes


def test_reference_matches_attend_with_lse() -> None:
    rng = np.random.default_rng(0)
    q, k, v, segments = arena_case(rng, "cpu", torch.float32)
    out = segment_attention_reference(q, k, v, segments, 0.125)
    qs, ql = segments.q_start.tolist(), segments.q_len.tolist()
    ks, kl = segments.kv_start.tolist(), segments.kv_len.tolist()
    offsets = segments.causal_offset.tolist()
    index = segments.kv_index.long()
    for s in range(len(qs)):
        slots = index[ks[s]:ks[s] + kl[s]]
        own = slots[offsets[s]:]
        expected, own_lse = attend_with_lse(q[qs[s]:qs[s] + ql[s]], k[own], v[own], 0.125,
                                            causal=True)
        if offsets[s]:  # a suffix row: merge in the prefix part by hand
            prefix = slots[:offsets[s]]
            shared, shared_lse = attend_with_lse(q[qs[s]:qs[s] + ql[s]], k[prefix], v[prefix],
                                                 0.125, causal=False)
            total = torch.logaddexp(shared_lse, own_lse)
            expected = (shared * torch.exp(shared_lse - total)[..., None]
                        + expected * torch.exp(own_lse - total)[..., None])
        torch.testing.assert_close(out[qs[s]:qs[s] + ql[s]], expected, atol=1e-5, rtol=1e-5)


def cascade(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, segments: Segments,
            attention=segment_attention_reference, chosen: list[int] | None = None,
            absolute: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The suffix segments' attention as the engine computes it, in one launch: the queries of
    the suffix rows over one prefix stacked into one segment over its keys (read through an
    index), each query going on over its own row's keys, written to the rows' tokens. Only the
    `chosen` segments when given. Returns (out, the suffix tokens)."""
    qs, ql = segments.q_start.tolist(), segments.q_len.tolist()
    ks, kl = segments.kv_start.tolist(), segments.kv_len.tolist()
    offsets = segments.causal_offset.tolist()
    index = segments.kv_index.cpu().numpy()
    by_prefix: dict[bytes, list[int]] = {}
    for s in chosen if chosen is not None else range(len(qs)):
        if offsets[s]:
            by_prefix.setdefault(index[ks[s]:ks[s] + offsets[s]].tobytes(), []).append(s)
    suffix = [s for members in by_prefix.values() for s in members]
    tokens = np.concatenate([np.arange(qs[s], qs[s] + ql[s]) for s in suffix])
    row_starts = np.concatenate([[0], np.cumsum([ql[s] for s in suffix])[:-1]])
    counts = [sum(ql[s] for s in members) for members in by_prefix.values()]
    prefixes = [index[ks[m[0]]:ks[m[0]] + offsets[m[0]]] for m in by_prefix.values()]
    shared = Segments.build(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts, prefixes,
                            [len(p) for p in prefixes], q.device, [absolute] * len(prefixes))
    rows = Segments.build(row_starts, [ql[s] for s in suffix],
                          [index[ks[s] + offsets[s]:ks[s] + kl[s]] for s in suffix],
                          [0] * len(suffix), q.device)
    row_of = torch.as_tensor(np.repeat(np.arange(len(suffix)), [ql[s] for s in suffix]),
                             dtype=torch.int32, device=q.device)
    q_index = torch.as_tensor(tokens, device=q.device)
    out = torch.zeros_like(q)
    attention(q, k, v, shared, 0.1, out=out, q_index=q_index, scatter=True,
              own=OwnKeys(k, v, rows, row_of))
    return out, q_index


def test_reference_cascade_is_attention_over_prefix_and_own_keys() -> None:
    q, k, v, segments = arena_case(np.random.default_rng(3), "cpu", torch.float32)
    expected = segment_attention_reference(q, k, v, segments, 0.1)
    got, tokens = cascade(q, k, v, segments)
    torch.testing.assert_close(got[tokens], expected[tokens], atol=1e-5, rtol=1e-5)


@cuda
@pytest.mark.parametrize(("heads", "kv_heads", "dim"), [(8, 2, 64), (32, 8, 128), (4, 2, 16)])
@pytest.mark.parametrize("absolute", [False, True])
def test_kernel_cascade_matches_reference(heads: int, kv_heads: int, dim: int,
                                          absolute: bool) -> None:
    q, k, v, segments = arena_case(np.random.default_rng(heads), "cuda", torch.bfloat16, heads,
                                   kv_heads, dim, rows=40)
    expected = segment_attention_reference(q, k, v, segments, 0.1)
    got, tokens = cascade(q, k, v, segments, segment_attention, absolute=absolute)
    torch.testing.assert_close(got[tokens].float(), expected[tokens].float(), atol=2e-2,
                               rtol=2e-2)


@cuda
def test_a_cascade_rows_result_does_not_depend_on_its_company() -> None:
    """A suffix row shares its query tiles with other rows over its prefix; alone, or with
    other company, its bits do not change."""
    q, k, v, segments = arena_case(np.random.default_rng(11), "cuda", torch.bfloat16, 32, 8,
                                   128, prefixes=2, rows=40)
    full, tokens = cascade(q, k, v, segments, segment_attention)
    suffix = [s for s, offset in enumerate(segments.causal_offset.tolist()) if offset]
    qs, ql = segments.q_start.tolist(), segments.q_len.tolist()
    for chosen in ([suffix[3]], suffix[1::3], suffix[::-1]):
        out, _ = cascade(q, k, v, segments, segment_attention, chosen)
        for s in chosen:
            assert torch.equal(out[qs[s]:qs[s] + ql[s]], full[qs[s]:qs[s] + ql[s]]), s


@cuda
@pytest.mark.parametrize("absolute", [False, True])
def test_tiles_of_consecutive_slots_give_the_bits_of_gathered_ones(absolute: bool) -> None:
    """Key tiles of consecutive slots are loaded whole (by tensor descriptor on Hopper), the
    others slot by slot: the same keys moved to scattered slots change no bit, for causal rows
    and for a cascade."""
    q, k, v, segments = arena_case(np.random.default_rng(21), "cuda", torch.bfloat16, 32, 8,
                                   128, rows=40, consecutive=True)
    k2, v2, moved = scattered(k, v, segments, np.random.default_rng(22))
    assert segments.tiled.sum() > 0 and moved.tiled.sum() == 0
    assert torch.equal(segment_attention(q, k, v, segments, 0.1),
                       segment_attention(q, k2, v2, moved, 0.1))
    whole, tokens = cascade(q, k, v, segments, segment_attention, absolute=absolute)
    gathered, _ = cascade(q, k2, v2, moved, segment_attention, absolute=absolute)
    assert torch.equal(whole[tokens], gathered[tokens])


@cuda
def test_any_count_of_key_slots_runs_the_variant_compiled_first() -> None:
    """A plain launch's keys are the chunk's own tokens; their count, 1 or a multiple of 16
    included, compiles no new kernel variant (a compile met mid-statement stops the device for
    seconds) and changes no bit."""
    import triton  # noqa: PLC0415

    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None or not hasattr(runtime, "jit_cache_hook"):
        pytest.skip("this Triton has no jit_cache_hook")
    q, k, v, segments = arena_case(np.random.default_rng(31), "cuda", torch.bfloat16, 32, 8, 128)
    first = segment_attention(q, k, v, segments, 0.1)
    compiles: list[str] = []
    before = runtime.jit_cache_hook
    runtime.jit_cache_hook = lambda **kw: compiles.append(str(kw.get("fn"))) and False
    try:
        for slots in (-k.shape[0] % 16, -k.shape[0] % 16 + 16, 1 - k.shape[0] % 16 + 16, 3):
            extra = torch.zeros(slots, *k.shape[1:], device="cuda", dtype=k.dtype)
            out = segment_attention(q, torch.cat([k, extra]), torch.cat([v, extra]), segments,
                                    0.1)
            assert torch.equal(out, first), slots
    finally:
        runtime.jit_cache_hook = before
    assert compiles == []


def over_prefix(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, prefix: np.ndarray,
                rows: list[tuple[int, int]], out: torch.Tensor, split: bool = False) -> None:
    """Rows [start, end) of packed tokens (slots = positions) over one prefix, in one cascade
    launch as the engine makes it (``split``: the prefix ends inside a block the rows complete)."""
    counts = [end - start for start, end in rows]
    shared = Segments.build([0], [sum(counts)], [prefix], [len(prefix)], q.device, [split])
    own = Segments.build(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts,
                         [np.arange(start, end) for start, end in rows], [0] * len(rows),
                         q.device)
    row_of = torch.as_tensor(np.repeat(np.arange(len(rows)), counts), dtype=torch.int32,
                             device=q.device)
    q_index = torch.as_tensor(np.concatenate([np.arange(a, b) for a, b in rows]),
                              device=q.device)
    segment_attention(q, k, v, shared, 0.1, out=out, q_index=q_index, scatter=True,
                      own=OwnKeys(k, v, own, row_of))


@cuda
@pytest.mark.parametrize("split", [1, 37, 63, 100, 150, 190])
def test_a_blocks_tokens_get_the_same_bits_whatever_part_of_it_was_cached(split: int) -> None:
    """The engine computes a document in blocks of 64 tokens, block j over the KV of blocks
    0..j-1. Cached up to any token of a block, the rest of it as a row over everything before
    (beside another row over the same prefix) gets the very bits of the whole block's row: key
    tiles sit at absolute positions."""
    torch.manual_seed(split)
    heads, kv_heads, dim, length, block = 32, 8, 128, 200, 64
    q = torch.randn(length + 70, heads, dim, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(length + 70, kv_heads, dim, device="cuda", dtype=torch.bfloat16)
            for _ in range(2))
    positions = np.arange(length)
    canonical = torch.zeros_like(q)
    segment_attention(q, k, v, Segments.build([0], [block], [positions[:block]], [0], "cuda"),
                      0.1, out=canonical)
    for start in range(block, length, block):
        over_prefix(q, k, v, positions[:start], [(start, min(start + block, length))],
                    canonical)
    end = min(split // block * block + block, length)
    out = torch.zeros_like(q)
    over_prefix(q, k, v, positions[:split], [(split, end), (length, length + 70)], out,
                split=True)
    assert torch.equal(out[split:end], canonical[split:end])


@cuda
@pytest.mark.parametrize(("heads", "kv_heads", "dim"), [(8, 2, 64), (32, 8, 128), (16, 8, 128),
                                                        (9, 3, 64)])
def test_kernel_matches_reference(heads: int, kv_heads: int, dim: int) -> None:
    rng = np.random.default_rng(heads)
    q, k, v, segments = arena_case(rng, "cuda", torch.bfloat16, heads, kv_heads, dim)
    out = segment_attention(q, k, v, segments, dim**-0.5)
    expected = segment_attention_reference(q, k, v, segments, dim**-0.5)
    torch.testing.assert_close(out.float(), expected.float(), atol=2e-2, rtol=2e-2)


@cuda
@pytest.mark.parametrize(("heads", "kv_heads", "dim"), [(32, 8, 128), (4, 2, 16)])
def test_a_segments_result_does_not_depend_on_its_company(heads: int, kv_heads: int,
                                                         dim: int) -> None:
    rng = np.random.default_rng(7)
    q, k, v, segments = arena_case(rng, "cuda", torch.bfloat16, heads, kv_heads, dim, prefixes=4,
                                   rows=30)
    full = segment_attention(q, k, v, segments, 0.088)
    qs, ql = segments.q_start.tolist(), segments.q_len.tolist()
    ks, kl = segments.kv_start.tolist(), segments.kv_len.tolist()
    offsets = segments.causal_offset.tolist()
    index = segments.kv_index.cpu().numpy()
    for s in (0, 5, len(qs) - 1):  # alone: a different tiling and no neighbours
        alone = Segments.build([qs[s]], [ql[s]], [index[ks[s]:ks[s] + kl[s]]], [offsets[s]],
                               "cuda")
        out = torch.zeros_like(q)
        segment_attention(q, k, v, alone, 0.088, out=out)
        assert torch.equal(out[qs[s]:qs[s] + ql[s]], full[qs[s]:qs[s] + ql[s]]), s

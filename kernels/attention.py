"""Flash attention over gathered keys: query segments attend to lists of key slots.

Contract: ``segment_attention(q, k, v, segments, scale)`` computes softmax attention for query
*segments*. Segment s owns the queries ``q[q_start[s] : q_start[s] + q_len[s]]`` ([T, Hq, D]) and
attends to the keys and values at the slots ``kv_index[kv_start[s] : kv_start[s] + kv_len[s]]``
of ``k``, ``v`` ([N, Hkv, D], any stride between slots: a layer's view of a paged KV arena, or the
packed keys of the rows being computed). Key j of the list is visible to the segment's query i
(counted from 0) when ``j <= i + causal_offset[s]``: a causal row over its own keys has offset 0,
a suffix row whose list is (prefix slots, own slots) has offset P, a non-causal segment has
offset ``kv_len``. Every query must see key 0. Query head h reads key head ``h // (Hq / Hkv)``.
Returns ``out`` [T, Hq, D] in q's dtype (rows of no segment are left as they were: pass ``out``
to fill it in place).

Three options make a cascade (rows over a shared prefix, each then over its own keys) one
launch: ``q_index`` [S] makes query position p of the segments read ``q[q_index[p]]`` (``out``
is then [S, ...], in segment order) — the rows over one prefix are stacked
without a gather; with ``scatter`` as well, position p's output goes to ``out[q_index[p]]``;
``own`` (``OwnKeys``) gives each query position a row of its own keys, which it attends to
causally after the segment's keys, continuing the same softmax: the output is attention over
the union of both key sets, with no partial result written and no merge.

Batch invariance: a query's result depends only on its segment's key list and causal offset,
its own row (and on ``Launch.rows``, which a caller fixes per kind of call). Programs cover (a
tile of ``rows // group`` consecutive queries of one segment, one key head with all its query
heads); each walks the key list from slot 0 in tiles of ``BLOCK_N`` in a fixed order, then the
own keys of each row in the tile from the row's first key in tiles of ``BLOCK_N`` — or, for a
segment marked ``absolute`` (``Segments.build(..., absolute)``, with ``own``), in tiles at
absolute positions: its list's last partial tile is completed by each row's first own keys, so
a token meets its keys in the same tiles wherever its row was split from the tokens before it
within a tile-aligned block; masked keys change nothing (their weight is exactly 0, and a tile
with no key visible to a query leaves its running softmax exactly as it was), so what else is in
the call changes no query's bits. On a TMA device a segment's first tiles of ``BLOCK_N``
consecutive slots (a prefix block's pages, which the arena hands out together; counted by
``Segments.build``) are loaded whole by tensor descriptor, the others gathered slot by slot:
the same keys in the same tiles, so the same bits wherever the keys live.

``segment_attention_reference`` is the float32 twin (one segment at a time, explicit softmax).
``Segments.build`` makes the index tensors from per-segment lists on the host. Triton is
imported on first use; the kernel needs CUDA.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from heron.kernels.host import has_tma, tma_allocator, to_device


@dataclass(frozen=True)
class Launch:
    """How programs are shaped. ``rows``: query rows (tokens × the query heads of one KV head) a
    program holds — a power of two of at least 16, fixed for a kind of call: the tile's height
    decides which tensor-core instruction computes the scores (mma on 16 rows, wgmma from 64),
    and those round differently, so a query must always meet the same height. ``num_warps``,
    ``num_stages`` and ``descriptors`` (tiles of consecutive slots loaded whole by tensor
    descriptor where the device has TMA) change no result."""

    rows: int = 128
    num_warps: int = 4
    num_stages: int = 3
    descriptors: bool = True


BLOCK_N = 64  # keys per step: part of the numerics (the order of the softmax accumulation)


@dataclass(frozen=True)
class OwnKeys:
    """The own rows of a cascade launch's query positions: ``rows`` has one segment per row (its
    positions, in the launch's position space, and its own key slots of ``k``/``v``, causal
    offset 0), and ``row_of`` [S] int32 says which row each position belongs to."""

    k: torch.Tensor
    v: torch.Tensor
    rows: Segments
    row_of: torch.Tensor


@dataclass(frozen=True)
class Segments:
    """Per-segment int32 tensors (all on one device) and the concatenated key-slot lists."""

    q_start: torch.Tensor
    q_len: torch.Tensor
    kv_start: torch.Tensor  # offset of the segment's list in kv_index
    kv_len: torch.Tensor
    causal_offset: torch.Tensor
    kv_index: torch.Tensor  # int32 slots of k and v
    # Per segment, how many of its list's first key tiles are BLOCK_N consecutive slots (one
    # block's pages, allocated together): those the kernel loads whole, by tensor descriptor.
    tiled: torch.Tensor
    host_q_len: tuple[int, ...]  # q_len on the host, for tiling
    # Per segment, 1 where its list ends inside a key tile that its rows' first own keys
    # complete (``own`` launches: key tiles at absolute positions); None: nowhere.
    absolute: torch.Tensor | None = None
    _tiles: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict,
                                                                 compare=False, repr=False)

    def tiles(self, block_m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(segment, first query) of every program tile of ``block_m`` queries, built once per
        tile height (a forward pass's layers reuse them)."""
        found = self._tiles.get(block_m)
        if found is None:
            pairs = [(s, first) for s, n in enumerate(self.host_q_len)
                     for first in range(0, n, block_m)]
            segment, first = _aligned_views(
                [np.asarray([p[i] for p in pairs], dtype=np.int32) for i in (0, 1)],
                self.q_start.device)
            found = self._tiles[block_m] = (segment, first)
        return found

    @classmethod
    def build(cls, q_start: Sequence[int], q_len: Sequence[int], kv_slots: Sequence[np.ndarray],
              causal_offset: Sequence[int], device: torch.device | str,
              absolute: Sequence[bool] = ()) -> Segments:
        lengths = np.array([len(s) for s in kv_slots], dtype=np.int64)
        starts, stored = _shared_lists(kv_slots)
        index = np.concatenate(stored) if stored else np.zeros(0, dtype=np.int64)
        arrays = [np.asarray(a, dtype=np.int32) for a in
                  (q_start, q_len, starts, lengths, causal_offset, index,
                   _consecutive_tiles(index, starts, lengths))]
        if any(absolute):
            arrays.append(np.asarray(absolute, dtype=np.int32))
        views = _aligned_views(arrays, device)
        return cls(*views[:7], host_q_len=tuple(int(n) for n in q_len),
                   absolute=views[7] if len(views) > 7 else None)


def _shared_lists(kv_slots: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each list's offset in the index, and the lists the index stores: lists that are views
    starting at one address (a document's prefixes block by block, slices of one array) are
    stored once, as the longest of them, and the others read its beginning — a document of n
    blocks then costs n slots of index, not n²/2. All the lists are alive here, so one address
    is one memory, and the shorter list is the longer one's beginning."""
    first: dict[tuple[int, int, str], int] = {}  # (address, stride, dtype) -> stored list
    stored: list[np.ndarray] = []
    which = np.empty(len(kv_slots), dtype=np.int64)
    for i, slots in enumerate(kv_slots):
        key = ((slots.__array_interface__["data"][0], slots.strides[0], slots.dtype.str)
               if isinstance(slots, np.ndarray) and slots.ndim == 1 and len(slots) else None)
        j = first.get(key) if key is not None else None
        if j is None:
            j = len(stored)
            stored.append(slots)
            if key is not None:
                first[key] = j
        elif len(slots) > len(stored[j]):
            stored[j] = slots
        which[i] = j
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in stored])[:-1]]).astype(np.int64)
    return offsets[which], stored


def _consecutive_tiles(index: np.ndarray, starts: np.ndarray, lengths: np.ndarray
                       ) -> np.ndarray:
    """Per list (``index[starts[i]:][:lengths[i]]``), how many of its first BLOCK_N-key tiles
    hold consecutive slots."""
    whole = lengths // BLOCK_N
    lists = np.repeat(np.arange(len(lengths)), whole)
    tile = np.arange(len(lists)) - np.repeat(np.cumsum(whole) - whole, whole)
    first = starts[lists] + tile * BLOCK_N
    breaks = np.concatenate([[0], np.cumsum(np.diff(index) != 1)])  # breaks before position i
    broken = breaks[first + BLOCK_N - 1] != breaks[first]
    leading = whole.copy()
    np.minimum.at(leading, lists[broken], tile[broken])
    return leading


def _aligned_views(arrays: Sequence[np.ndarray], device: torch.device | str
                   ) -> list[torch.Tensor]:
    """int32 arrays in one host-to-device copy, each view starting on a 16-byte boundary:
    Triton specializes a kernel on its pointers' alignment, so views at arbitrary offsets would
    compile a new variant whenever the array sizes change."""
    padded = [np.pad(a, (0, -len(a) % 4)) for a in arrays]
    flat = to_device(np.concatenate(padded), device)
    views, offset = [], 0
    for array, part in zip(arrays, padded, strict=True):
        views.append(flat[offset:offset + len(array)])
        offset += len(part)
    return views


def segment_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                segments: Segments, scale: float, out: torch.Tensor | None = None,
                                q_index: torch.Tensor | None = None, scatter: bool = False,
                                own: OwnKeys | None = None) -> torch.Tensor:
    positions = q.shape[0] if q_index is None else q_index.shape[0]
    out = torch.zeros((positions, *q.shape[1:]), dtype=q.dtype, device=q.device) if (
        out is None) else out
    rows = (torch.arange(positions, device=q.device) if q_index is None else q_index.long())
    group = q.shape[1] // k.shape[1]
    cpu = [t.cpu().tolist() for t in (segments.q_start, segments.q_len, segments.kv_start,
                                      segments.kv_len, segments.causal_offset)]
    index = segments.kv_index.long()
    own_of = [None] * positions  # per position: (its own keys, values, index in its row)
    if own is not None:
        own_cpu = [t.cpu().tolist() for t in (own.rows.q_start, own.rows.q_len,
                                              own.rows.kv_start)]
        own_index = own.rows.kv_index.long()
        for rs, rl, rk in zip(*own_cpu, strict=True):
            slots = own_index[rk:rk + rl]
            keys, values = own.k[slots].float(), own.v[slots].float()
            for i in range(rl):
                own_of[rs + i] = (keys[:i + 1], values[:i + 1])
    for qs, ql, ks, kl, offset in zip(*cpu, strict=True):
        slots = index[ks:ks + kl]
        keys, values = k[slots].float(), v[slots].float()
        for i in range(ql):  # one query position at a time: its keys are the segment's, then
            visible = min(kl, i + offset + 1)  # its own row's
            ki, vi = keys[:visible], values[:visible]
            if own_of[qs + i] is not None:
                ki, vi = torch.cat([ki, own_of[qs + i][0]]), torch.cat([vi, own_of[qs + i][1]])
            qi = q[rows[qs + i]].float()  # [Hq, D]
            scores = torch.einsum("hd,khd->hk", qi, ki.repeat_interleave(group, dim=1)) * scale
            lse = torch.logsumexp(scores, dim=-1)  # [Hq]
            result = torch.einsum("hk,khd->hd", torch.exp(scores - lse[:, None]),
                                  vi.repeat_interleave(group, dim=1))
            out[rows[qs + i] if scatter else qs + i] = result.to(out.dtype)
    return out


def segment_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, segments: Segments,
                      scale: float, out: torch.Tensor | None = None,
                      launch: Launch = Launch(), block_n: int = BLOCK_N,
                      q_index: torch.Tensor | None = None, scatter: bool = False,
                      own: OwnKeys | None = None) -> torch.Tensor:
    """Triton twin of ``segment_attention_reference``; tensors on a CUDA device. ``block_n``
    is for benchmarks only: the engine keeps ``BLOCK_N`` so that results never change."""

    _, heads, dim = q.shape
    positions = q.shape[0] if q_index is None else q_index.shape[0]
    kv_heads = k.shape[1]
    group = heads // kv_heads
    out = torch.empty((positions, heads, dim), dtype=q.dtype, device=q.device) if (
        out is None) else out
    if max(segments.host_q_len, default=0) == 0:
        return out
    # Unread without `own` (any tensors of the right kinds stand in).
    own_k, own_v, rows, row_of = ((own.k, own.v, own.rows, own.row_of) if own is not None
                                  else (k, v, segments, segments.q_start))
    block_m = max(1, launch.rows // group)  # query tokens per program, all heads of a KV head
    tile_seg, tile_first_q = segments.tiles(block_m)
    grid = (tile_seg.shape[0], kv_heads)
    tiled = (launch.descriptors and block_n == BLOCK_N and _descriptors_fit(k)
             and _descriptors_fit(v))
    if tiled:
        tma_allocator()
    _kernel()[grid](
        q, k, v, out, tile_seg, tile_first_q, segments.q_start, segments.q_len,
        segments.kv_start, segments.kv_len, segments.causal_offset, segments.kv_index,
        segments.tiled, q_index if q_index is not None else segments.q_start, own_k, own_v,
        row_of, rows.q_start, rows.q_len, rows.kv_start, rows.kv_index,
        segments.absolute if segments.absolute is not None else segments.q_start,
        k.shape[0], kv_heads, q.stride(0), k.stride(0), v.stride(0), own_k.stride(0),
        own_v.stride(0), out.stride(0), scale * math.log2(math.e), GROUP=group,
        BLOCK_M=block_m, ROWS=launch.rows, BLOCK_N=block_n, D=dim,
        Q_INDEXED=q_index is not None, SCATTER=scatter, OWN=own is not None,
        ABSOLUTE=own is not None and segments.absolute is not None, TILED=tiled,
        num_warps=launch.num_warps, num_stages=launch.num_stages)
    return out


def _descriptors_fit(x: torch.Tensor) -> bool:
    """Whether key tiles of ``x`` ([N, Hkv, D]) can be loaded by tensor descriptor: a TMA
    device, each slot's heads packed, slot rows and the base 16-byte aligned."""
    size = x.element_size()
    return (has_tma(x.device) and x.stride(2) == 1 and x.stride(1) == x.shape[2]
            and x.stride(0) * size % 16 == 0 and x.data_ptr() % 16 == 0)


@functools.cache
def _kernel() -> Any:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    @triton.jit
    def key_tile(k_ptr, v_ptr, index_ptr, kv_start, kv_len, start, kv_head, stride_k, stride_v,
                 BLOCK_N: tl.constexpr, D: tl.constexpr):
        """Keys and values [BLOCK_N, D] of one tile of a key list, gathered by slot; rows
        outside the list (past its end, or before its start: a tile at a negative ``start``)
        are 0."""
        n = start + tl.arange(0, BLOCK_N)
        in_list = (n >= 0) & (n < kv_len)
        dims = tl.arange(0, D)
        slot = tl.load(index_ptr + kv_start + n, mask=in_list, other=0).to(tl.int64)
        kt = tl.load(k_ptr + slot[:, None] * stride_k + kv_head * D + dims[None, :],
                     mask=in_list[:, None], other=0.0)
        vt = tl.load(v_ptr + slot[:, None] * stride_v + kv_head * D + dims[None, :],
                     mask=in_list[:, None], other=0.0)
        return kt, vt

    @triton.jit
    def absorb_whole_tile(qt, m_i, l_i, acc, k_desc, v_desc, index_ptr, kv_start, kv_len, start,
                          kv_head, token, offset, scale_log2, BLOCK_N: tl.constexpr,
                          D: tl.constexpr, MASKED: tl.constexpr):
        """``absorb`` of a tile of BLOCK_N consecutive slots, loaded whole by descriptor (the
        same keys as ``key_tile``'s, so the same bits)."""
        slot = tl.load(index_ptr + kv_start + start)
        kt = k_desc.load([slot, kv_head * D])
        vt = v_desc.load([slot, kv_head * D])
        return absorb(qt, m_i, l_i, acc, kt, vt, start + tl.arange(0, BLOCK_N), kv_len, token,
                      offset, scale_log2, MASKED)

    @triton.jit
    def boundary_tile(k_ptr, v_ptr, index_ptr, kv_start, kv_len, own_k_ptr, own_v_ptr,
                      row_index_ptr, row_kv, row_len, tail, kv_head, stride_k, stride_v,
                      stride_ok, stride_ov, BLOCK_N: tl.constexpr, D: tl.constexpr):
        """Keys and values [BLOCK_N, D] of a row's first own tile when the segment's list ends
        inside a tile: the list's last ``tail`` keys, then the row's first own keys."""
        listed_k, listed_v = key_tile(k_ptr, v_ptr, index_ptr, kv_start, kv_len, kv_len - tail,
                                      kv_head, stride_k, stride_v, BLOCK_N, D)
        own_k, own_v = key_tile(own_k_ptr, own_v_ptr, row_index_ptr, row_kv, row_len, -tail,
                                kv_head, stride_ok, stride_ov, BLOCK_N, D)
        listed = (tl.arange(0, BLOCK_N) < tail)[:, None]
        return tl.where(listed, listed_k, own_k), tl.where(listed, listed_v, own_v)

    @triton.jit
    def absorb(qt, m_i, l_i, acc, kt, vt, n, kv_len, token, offset, scale_log2,
               MASKED: tl.constexpr):
        """One key tile (keys ``n`` of the list) folded into the running softmax of the
        program's rows (max ``m_i``, sum ``l_i``, weighted values ``acc``). With ``MASKED``, keys
        past the list or after a row's causal limit weigh exactly 0; without, every row sees
        every key of the tile."""
        scores = tl.dot(qt, tl.trans(kt)) * scale_log2
        if MASKED:
            visible = (n[None, :] < kv_len) & (n[None, :] <= token[:, None] + offset)
            scores = tl.where(visible, scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        safe = m_new
        if MASKED:  # rows with nothing visible yet keep m = -inf; their weights stay exactly 0
            safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - safe)
        p = tl.exp2(scores - safe[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt)
        return m_new, l_i, acc

    @triton.jit
    def absorb_tile(qt, m_i, l_i, acc, k_ptr, v_ptr, index_ptr, kv_start, kv_len, start,
                    kv_head, stride_k, stride_v, token, offset, scale_log2,
                    BLOCK_N: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr):
        """``absorb`` of the tile of a key list that begins at key ``start``."""
        kt, vt = key_tile(k_ptr, v_ptr, index_ptr, kv_start, kv_len, start, kv_head, stride_k,
                          stride_v, BLOCK_N, D)
        return absorb(qt, m_i, l_i, acc, kt, vt, start + tl.arange(0, BLOCK_N), kv_len, token,
                      offset, scale_log2, MASKED)

    # Triton specializes an int argument on its value being 1 or a multiple of 16, compiling a
    # variant for each: ``n_slots`` (only the descriptors' bound) is a chunk's own token count
    # in plain launches, so a chunk of 16·k tokens met mid-statement would stop the device for
    # a compile of seconds.
    @triton.jit(do_not_specialize=["n_slots"])
    def segment_attention_tiles(
        q_ptr, k_ptr, v_ptr, out_ptr, tile_seg_ptr, tile_first_ptr, q_start_ptr,
        q_len_ptr, kv_start_ptr, kv_len_ptr, offset_ptr, index_ptr, tiled_ptr, q_index_ptr,
        own_k_ptr, own_v_ptr, row_of_ptr, row_start_ptr, row_len_ptr, row_kv_start_ptr,
        row_index_ptr, absolute_ptr, n_slots, kv_heads, stride_q, stride_k, stride_v, stride_ok,
        stride_ov, stride_o, scale_log2, GROUP: tl.constexpr, BLOCK_M: tl.constexpr,
        ROWS: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, Q_INDEXED: tl.constexpr,
        SCATTER: tl.constexpr, OWN: tl.constexpr, ABSOLUTE: tl.constexpr, TILED: tl.constexpr,
    ):
        tile = tl.program_id(0)
        kv_head = tl.program_id(1)
        seg = tl.load(tile_seg_ptr + tile)
        first = tl.load(tile_first_ptr + tile)
        q_start = tl.load(q_start_ptr + seg)
        q_len = tl.load(q_len_ptr + seg)
        kv_start = tl.load(kv_start_ptr + seg)
        kv_len = tl.load(kv_len_ptr + seg)
        offset = tl.load(offset_ptr + seg)

        # Row r of the tile: query token first + r // GROUP, head kv_head * GROUP + r % GROUP.
        r = tl.arange(0, ROWS)
        token = first + r // GROUP
        head = kv_head * GROUP + r % GROUP
        valid = (r < BLOCK_M * GROUP) & (token < q_len)
        dims = tl.arange(0, D)
        position = (q_start + token).to(tl.int64)  # in the segments' query space
        source = position
        if Q_INDEXED:
            source = tl.load(q_index_ptr + position, mask=valid, other=0).to(tl.int64)
        qt = tl.load(q_ptr + (source * stride_q + head * D)[:, None] + dims[None, :],
                     mask=valid[:, None], other=0.0)

        last = tl.minimum(first + BLOCK_M, q_len) - 1  # the tile's last query token
        end = tl.minimum(kv_len, last + offset + 1)
        # Tiles every query of the program sees whole need no mask: the same bits, less work.
        whole = tl.minimum(kv_len, first + offset + 1) // BLOCK_N * BLOCK_N
        tail = 0  # the list's keys left for the rows' first own tiles
        if ABSOLUTE:  # (an own launch: the list is a prefix every query sees whole)
            # Key tiles at absolute positions: a list ending inside a tile ends it with each
            # row's first own keys, so a token's keys fall in the same tiles wherever its row
            # was split from the tokens before it (a block cached up to any token).
            absolute = tl.load(absolute_ptr + seg) != 0
            tail = tl.where(absolute, kv_len - whole, 0)
            end = tl.where(absolute, whole, end)
        m_i = tl.full((ROWS,), float("-inf"), dtype=tl.float32)
        l_i = tl.zeros((ROWS,), dtype=tl.float32)
        acc = tl.zeros((ROWS, D), dtype=tl.float32)
        # The list's first tiles of consecutive slots are loaded whole by descriptor (TMA), the
        # others gathered slot by slot; in each part, first the tiles every query sees whole.
        tiled_end = 0
        if TILED:
            tiled_end = tl.load(tiled_ptr + seg) * BLOCK_N
            k_desc = tl.make_tensor_descriptor(k_ptr, shape=[n_slots, kv_heads * D],
                                               strides=[stride_k, 1], block_shape=[BLOCK_N, D])
            v_desc = tl.make_tensor_descriptor(v_ptr, shape=[n_slots, kv_heads * D],
                                               strides=[stride_v, 1], block_shape=[BLOCK_N, D])
        split = tl.minimum(whole, tiled_end)
        if TILED:
            for start in range(0, split, BLOCK_N):
                m_i, l_i, acc = absorb_whole_tile(
                    qt, m_i, l_i, acc, k_desc, v_desc, index_ptr, kv_start, kv_len, start,
                    kv_head, token, offset, scale_log2, BLOCK_N, D, False)
        for start in range(split, whole, BLOCK_N):
            m_i, l_i, acc = absorb_tile(
                qt, m_i, l_i, acc, k_ptr, v_ptr, index_ptr, kv_start, kv_len, start, kv_head,
                stride_k, stride_v, token, offset, scale_log2, BLOCK_N, D, False)
        split = tl.maximum(whole, tl.minimum(end, tiled_end))
        if TILED:
            for start in range(whole, split, BLOCK_N):
                m_i, l_i, acc = absorb_whole_tile(
                    qt, m_i, l_i, acc, k_desc, v_desc, index_ptr, kv_start, kv_len, start,
                    kv_head, token, offset, scale_log2, BLOCK_N, D, True)
        for start in range(split, end, BLOCK_N):
            m_i, l_i, acc = absorb_tile(
                qt, m_i, l_i, acc, k_ptr, v_ptr, index_ptr, kv_start, kv_len, start, kv_head,
                stride_k, stride_v, token, offset, scale_log2, BLOCK_N, D, True)
        if OWN:  # each row of the tile in turn: its queries over its own keys, causally
            row_first = first  # the tile's first query token of the row taken next
            while row_first <= last:
                row = tl.load(row_of_ptr + q_start + row_first)
                row_begin = tl.load(row_start_ptr + row) - q_start  # a token of the segment
                row_len = tl.load(row_len_ptr + row)
                row_kv = tl.load(row_kv_start_ptr + row)
                in_row = (token >= row_begin) & (token < row_begin + row_len)
                # Its last visible own key; other rows' queries see no key of the row's tiles
                # (not even the list's tail in its first one).
                limit = tl.where(in_row, token - row_begin, -BLOCK_N - 1)
                own_from = (BLOCK_N - tail) % BLOCK_N
                if tail > 0:
                    kt, vt = boundary_tile(
                        k_ptr, v_ptr, index_ptr, kv_start, kv_len, own_k_ptr, own_v_ptr,
                        row_index_ptr, row_kv, row_len, tail, kv_head, stride_k, stride_v,
                        stride_ok, stride_ov, BLOCK_N, D)
                    m_i, l_i, acc = absorb(qt, m_i, l_i, acc, kt, vt,
                                           tl.arange(0, BLOCK_N) - tail, row_len, limit, 0,
                                           scale_log2, True)
                # Not pipelined: a row is a tile or two, and the stages' buffers would take
                # the shared memory the main loop's need (fewer programs per SM).
                for start in tl.range(own_from, tl.minimum(row_len, last - row_begin + 1),
                                      BLOCK_N, num_stages=1):
                    m_i, l_i, acc = absorb_tile(
                        qt, m_i, l_i, acc, own_k_ptr, own_v_ptr, row_index_ptr, row_kv,
                        row_len, start, kv_head, stride_ok, stride_ov, limit, 0, scale_log2,
                        BLOCK_N, D, True)
                row_first = row_begin + row_len
        result = acc / l_i[:, None]
        target = source if SCATTER else position
        tl.store(out_ptr + (target * stride_o + head * D)[:, None] + dims[None, :],
                 result.to(out_ptr.dtype.element_ty), mask=valid[:, None])

    return segment_attention_tiles

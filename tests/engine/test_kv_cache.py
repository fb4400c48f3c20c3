"""The paged KV arena and the radix tree of canonical prefix blocks (CPU, no model)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from heron.engine.config import DEFAULT_CPU_KV_CACHE_BYTES, EngineConfig
from heron.engine.kv_cache import (
    Block,
    BlockState,
    BlockTree,
    KVArena,
    arena_bytes,
    chunk_activation_bytes,
    kv_bytes_per_token,
    recompute_flops,
)
from heron.engine.spec import ModelSpec

SPEC = ModelSpec.from_config({
    "model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
    "max_position_embeddings": 4096,
})
TOKEN_BYTES = kv_bytes_per_token(SPEC, torch.float32)  # 2 x 2 layers x 2 heads x 16 x 4 B


def _tree(pages: int, block: int = 8, page: int = 4, seeding: bool = False) -> BlockTree:
    arena = KVArena(SPEC, torch.float32, "cpu", pages * page * TOKEN_BYTES, page)
    return BlockTree(arena, block, recompute_flops(SPEC), seeding)


def _ids(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def _computed(tree: BlockTree, chain: list) -> None:
    for block in chain:
        tree.computing(block)
        tree.ready(block)


def test_arena_pages_are_token_slots_of_one_preallocated_tensor() -> None:
    arena = KVArena(SPEC, torch.float32, "cpu", 10 * 4 * TOKEN_BYTES + 5, 4)
    assert TOKEN_BYTES == 512 and arena.num_pages == 10 and arena.free_pages == 10
    assert arena.keys.shape == arena.values.shape == (2, 40, 2, 16)
    pages = arena.take(3)
    assert pages == [0, 1, 2] and arena.free_pages == 7
    assert arena.slots([5, 2], 6).tolist() == [20, 21, 22, 23, 8, 9]
    assert arena.take(8) is None  # never partially
    arena.give_back(pages)
    assert arena.free_pages == 10 and arena.pages_for(9) == 3


def test_arena_hands_out_whole_runs_as_consecutive_pages() -> None:
    """Runs of 4 pages (a block's): requests for whole runs get consecutive pages while free runs
    last; single pages come from broken runs first; a run whose pages all come back is whole
    again."""
    arena = KVArena(SPEC, torch.float32, "cpu", 16 * 4 * TOKEN_BYTES, 4, run_pages=4)
    assert arena.num_pages == 16 and arena.free_pages == 16
    question = arena.take(1)  # breaks the lowest run
    assert question == [0] and arena.free_pages == 15
    block = arena.take(4)
    assert block == [4, 5, 6, 7]
    second = arena.take(2)
    assert second == [1, 2]  # the broken run's pages first
    arena.give_back(block)
    arena.give_back(question + second)
    assert arena.free_pages == 16
    assert arena.take(8) == [0, 1, 2, 3, 4, 5, 6, 7]  # both runs whole again
    assert arena.take(9) is None and arena.free_pages == 8
    # Pages past the last whole run are single pages from the start.
    ragged = KVArena(SPEC, torch.float32, "cpu", 10 * 4 * TOKEN_BYTES, 4, run_pages=4)
    assert ragged.take(1) == [8] and ragged.take(4) == [0, 1, 2, 3]
    assert sorted(ragged.take(5)) == [4, 5, 6, 7, 9] and ragged.free_pages == 0


def test_chains_share_full_blocks_token_for_token() -> None:
    tree = _tree(pages=64)
    doc = np.arange(20, dtype=np.int32)  # blocks [0, 8), [8, 16), [16, 20)
    first = tree.acquire(doc)
    assert first is not None and [(b.start, len(b.tokens)) for b in first] == [(0, 8), (8, 8),
                                                                                (16, 4)]
    assert all(b.state is BlockState.EMPTY and b.pins == 1 for b in first)
    assert [len(b.slots) for b in first] == [8, 8, 4] and len(set(np.concatenate(
        [b.slots for b in first]).tolist())) == 20  # distinct slots
    _computed(tree, first)
    # A document extending the first shares its two full blocks, not the partial third.
    longer = tree.acquire(np.arange(30, dtype=np.int32))
    assert longer is not None and longer[:2] == first[:2] and longer[2] is not first[2]
    assert longer[2].state is BlockState.EMPTY and len(longer[2].tokens) == 8
    # The same prefix again reuses every block, the partial one included.
    same = tree.acquire(doc)
    assert same == first and first[2].pins == 2
    # A document differing in its first token shares nothing.
    other = tree.acquire(np.concatenate([_ids(99), doc[1:]]))
    assert other is not None and not set(map(id, other)) & set(map(id, first))
    assert tree.blocks == 3 + 2 + 3


def test_released_blocks_never_computed_are_dropped_computed_ones_cached() -> None:
    tree = _tree(pages=16)
    chain = tree.acquire(np.arange(16, dtype=np.int32))
    assert chain is not None and tree.arena.free_pages == 12
    tree.release(chain)  # e.g. its statement was cancelled before the chunk ran
    assert tree.blocks == 0 and tree.arena.free_pages == 16
    chain = tree.acquire(np.arange(16, dtype=np.int32))
    _computed(tree, chain)
    tree.release(chain)
    assert tree.blocks == 2 and tree.cached_tokens == 16 and tree.arena.free_pages == 12


def test_eviction_takes_unpinned_leaves_cheapest_first_and_ages_them() -> None:
    tree = _tree(pages=8, block=8, page=4)  # room for 4 blocks of 8 tokens
    short = tree.acquire(np.arange(8, dtype=np.int32))  # one block at position 0
    deep = tree.acquire(np.arange(100, 124, dtype=np.int32))  # 3 blocks, the last at 16
    assert short is not None and deep is not None
    for chain in (short, deep):
        _computed(tree, chain)
        tree.release(chain)
    assert tree.arena.free_pages == 0
    evicted: list[object] = []

    def make_room(first: int) -> None:
        before = {id(b) for b in (*short, *deep) if b.parent is not None}
        assert tree.acquire(np.arange(first, first + 8, dtype=np.int32)) is not None  # pinned
        evicted.extend(b for b in (*short, *deep) if id(b) in before and b.parent is None)

    # The cheapest leaf goes first: the block at position 0, not the one at 16 (whose
    # recompute attends to more keys); never a block with children. Then, the clock having
    # passed it, the deep chain from its leaf up.
    for first in (200, 300, 400, 500):
        make_room(first)
    assert evicted == [short[0], deep[2], deep[1], deep[0]]
    assert tree.evictions == 4
    # Every block is pinned now: no room at all.
    assert tree.acquire(np.arange(600, 608, dtype=np.int32)) is None
    assert tree.allocate(1) is None


def test_a_chain_that_does_not_fit_leaves_nothing_pinned() -> None:
    tree = _tree(pages=4)
    cached = tree.acquire(np.arange(8, dtype=np.int32))
    _computed(tree, cached)
    tree.release(cached)
    assert tree.acquire(np.arange(40, dtype=np.int32)) is None  # shares block 0, needs 8 more
    assert cached[0].pins == 0 and tree.blocks == 1  # its match was unpinned again
    assert tree.acquire(np.arange(16, dtype=np.int32)) is not None  # reuses block 0, fits


def test_clear_forgets_every_block_and_page() -> None:
    tree = _tree(pages=8)
    chain = tree.acquire(np.arange(20, dtype=np.int32))
    _computed(tree, chain)
    tree.allocate(2)
    tree.clear()
    assert tree.blocks == 0 and tree.arena.free_pages == 8 and tree.cached_tokens == 0


def _computed_or_launched(block: Block) -> bool:
    return block.state is not BlockState.EMPTY


def test_a_document_extending_a_cached_one_reads_its_partial_block() -> None:
    """Agent traces: each snapshot extends the previous one. The block where the shorter one
    ended is seeded from its partial last block: it reads the shared tokens where that block
    keeps them, and only the tokens after them are computed."""
    tree = _tree(pages=64, block=16, seeding=True)
    short = np.arange(100, 130, dtype=np.int32)  # blocks [0, 16), [16, 30)
    chain = tree.acquire(short)
    assert chain is not None and not tree.seed(chain[1], _computed_or_launched)  # no sibling
    tree.computing(chain[0])
    longer = np.concatenate([short, np.arange(500, 520, dtype=np.int32)])  # 50 tokens
    extended = tree.acquire(longer)
    assert extended is not None and extended[0] is chain[0]
    assert not tree.seed(extended[1], _computed_or_launched)  # its sibling is not computed
    assert tree.seed(extended[1], lambda block: True)  # (computed in the same chunk)
    assert extended[1].seed == (chain[1], 14) and chain[1].pins == 2
    assert extended[1].slots[:14].tolist() == chain[1].slots[:14].tolist()
    assert not set(extended[1].slots[14:]) & set(chain[1].slots)
    assert not tree.seed(extended[2], lambda block: True)  # [32, 50): no partial sibling
    tree.unseed(extended[1])  # e.g. its sibling's chunk was not launched after all
    assert extended[1].seed is None and chain[1].pins == 1
    assert not set(extended[1].slots) & set(chain[1].slots)
    _computed(tree, chain)
    assert tree.seed(extended[1], _computed_or_launched)
    tree.release(chain)
    tree.release(extended)  # never computed: dropped, and the sibling let go
    assert chain[1].pins == 0 and tree.blocks == 2


def test_a_seed_is_the_sibling_sharing_the_most_whichever_came_first() -> None:
    """Retokenized endings share up to the first token that differs; a shorter document after
    a longer one reads its start from the longer one's block; a block always computes one."""
    tree = _tree(pages=64, block=16, seeding=True)
    first = np.arange(100, 127, dtype=np.int32)  # blocks [0, 16), [16, 27)
    chain = tree.acquire(first)
    assert chain is not None
    _computed(tree, chain)
    retokenized = np.concatenate([first[:26], [9, 9, 9]]).astype(np.int32)  # last token differs
    other = tree.acquire(retokenized)
    assert other is not None and tree.seed(other[1], _computed_or_launched)
    assert other[1].seed == (chain[1], 10)
    same_end = tree.acquire(np.concatenate([first, [5]]).astype(np.int32))  # [16, 28)
    assert same_end is not None and tree.seed(same_end[1], _computed_or_launched)
    assert same_end[1].seed == (chain[1], 11)
    shorter = tree.acquire(first[:26])  # [16, 26): all in the cached block
    assert shorter is not None and tree.seed(shorter[1], _computed_or_launched)
    assert shorter[1].seed == (chain[1], 9)  # its last token computed
    few = tree.acquire(np.concatenate([first[:22], [7, 7, 7]]).astype(np.int32))
    assert few is not None and not tree.seed(few[1], _computed_or_launched)  # 6 < 8 shared
    plain = _tree(pages=64, block=16)  # seeding off (a backend whose bits depend on the split)
    plain_chain = plain.acquire(first)
    _computed(plain, plain_chain)
    extended = plain.acquire(np.concatenate([first, [5]]).astype(np.int32))
    assert not plain.seed(extended[1], _computed_or_launched)


def test_pages_needed_counts_full_and_partial_blocks() -> None:
    tree = _tree(pages=64, block=8, page=4)
    assert tree.pages_needed(0) == 0 and tree.pages_needed(8) == 2 and tree.pages_needed(21) == 6


def test_arena_size_defaults() -> None:
    dtype = torch.bfloat16
    assert arena_bytes(EngineConfig(), SPEC, dtype, None) == DEFAULT_CPU_KV_CACHE_BYTES
    assert arena_bytes(EngineConfig(device="cuda", kv_cache_bytes=123), SPEC, dtype, 1 << 40) == 123
    free = 100 << 30
    margin = free - arena_bytes(EngineConfig(device="cuda"), SPEC, dtype, free)
    activations = chunk_activation_bytes(SPEC, 32768, dtype)
    assert margin == 2 * activations + (1 << 30)
    assert arena_bytes(EngineConfig(device="cuda"), SPEC, dtype, 1 << 20) == 0


def test_qwen3_4b_numbers() -> None:
    spec = ModelSpec.from_config({
        "model_type": "qwen3", "hidden_size": 2560, "intermediate_size": 9728,
        "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
    })
    assert kv_bytes_per_token(spec, torch.bfloat16) == 147456  # DESIGN §5: 147 KB
    # The ~7.3 GFLOP per token of DESIGN §5 (linear layers) at position 0.
    assert recompute_flops(spec)(0, 1) == pytest.approx(7.3e9, rel=0.05)
    # On an H200 after 8 GB of weights, the default arena keeps ~120 GB for KV.
    free = 131 << 30
    assert arena_bytes(EngineConfig(device="cuda"), spec, torch.bfloat16, free) > 110 << 30

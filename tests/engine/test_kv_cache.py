"""The prefix KV cache is an LRU bounded by bytes."""

from __future__ import annotations

import torch

from heron.engine.kv_cache import PrefixKV, PrefixKVCache


def _kv(length: int) -> PrefixKV:
    return PrefixKV(keys=torch.zeros(2, length, 1, 4), values=torch.zeros(2, length, 1, 4))


def test_lru_eviction_by_bytes() -> None:
    one = _kv(1).nbytes
    cache = PrefixKVCache(max_bytes=3 * one)
    for key in [(1,), (2,), (3,)]:
        cache.put(key, _kv(1))
    assert cache.get((1,)) is not None  # (1,) becomes most recent
    cache.put((4,), _kv(1))
    assert cache.get((2,)) is None and cache.get((1,)) is not None
    assert len(cache) == 3 and cache.nbytes == 3 * one
    cache.put((5,), _kv(2))  # needs two slots: evicts the two least recent
    assert len(cache) == 2 and cache.nbytes == 3 * one
    assert cache.hits == 2 and cache.misses == 1


def test_oversized_entry_is_not_cached() -> None:
    cache = PrefixKVCache(max_bytes=10)
    cache.put((1,), _kv(4))
    assert len(cache) == 0 and cache.nbytes == 0


def test_replacing_a_key_keeps_byte_count() -> None:
    cache = PrefixKVCache(max_bytes=1 << 20)
    cache.put((1,), _kv(1))
    cache.put((1,), _kv(2))
    assert cache.nbytes == _kv(2).nbytes and len(cache) == 1

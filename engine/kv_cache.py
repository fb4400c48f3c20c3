"""Prefix KV: the retained keys/values of a document prefix, and a bounded LRU cache of them.

A ``PrefixKV`` holds, for every layer, the post-RoPE keys and values of the first ``length``
tokens of some prompt; any suffix row whose positions continue at ``length`` can attend to it.
``PrefixKVCache`` maps an exact prefix token-id tuple to its ``PrefixKV`` and keeps at most
``max_bytes`` of them, evicting the least recently used. Callers that hold a ``PrefixKV``
reference keep it alive even after eviction, so eviction never breaks a running call.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

PrefixKey = tuple[int, ...]


@dataclass(frozen=True, eq=False)
class PrefixKV:
    """keys/values: [num_layers, length, num_kv_heads, head_dim], post-RoPE."""

    keys: torch.Tensor
    values: torch.Tensor

    @property
    def length(self) -> int:
        return self.keys.shape[1]

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.values.nbytes


class PrefixKVCache:
    """LRU map from exact prefix token ids to their KV, bounded by total tensor bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[PrefixKey, PrefixKV] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: PrefixKey) -> PrefixKV | None:
        kv = self._entries.get(key)
        if kv is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return kv

    def put(self, key: PrefixKey, kv: PrefixKV) -> None:
        if kv.nbytes > self.max_bytes:
            return  # would evict everything and still not fit
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.nbytes
        self._entries[key] = kv
        self._bytes += kv.nbytes
        while self._bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.nbytes

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0

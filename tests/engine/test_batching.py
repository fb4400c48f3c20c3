"""Packing rows into one chunk's layout (host work; CPU tensors)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from heron.engine.batching import Prefix, Row, VocabRead, pack


def _ids(n: int, start: int = 1) -> np.ndarray:
    return np.arange(start, start + n, dtype=np.int32)


def test_rows_become_one_packed_chunk() -> None:
    shared = Prefix(np.array([40, 41, 42], dtype=np.int64))
    rows = [
        Row(_ids(4), 0, writes=np.array([0, 1, 2, 3])),  # a first block, KV kept
        Row(_ids(2, 10), 3, shared, answer=True),  # two suffix rows over one prefix
        Row(_ids(3, 20), 3, shared, answer=True),
        Row(_ids(2, 30), 3, Prefix(shared.slots.copy()),  # an equal but distinct prefix
            reads=(VocabRead(0, (5, 6)), VocabRead(1, greedy=True))),
    ]
    chunk = pack(rows, torch.device("cpu"), num_heads=4, kv_width=32)
    assert chunk.tokens == 11
    assert chunk.token_ids.tolist() == [1, 2, 3, 4, 10, 11, 20, 21, 22, 30, 31]
    assert chunk.positions.tolist() == [0, 1, 2, 3, 3, 4, 3, 4, 5, 3, 4]
    assert chunk.row_prefix == [None, 0, 0, 1]  # prefixes shared by identity
    assert [s.tolist() for s in chunk.prefix_slots] == [[40, 41, 42]] * 2
    assert chunk.token_slots.tolist() == [0, 1, 2, 3] + [-1] * 7
    assert chunk.answer_index.tolist() == [5, 8] and chunk.answer_of == [-1, 0, 1, -1]
    assert chunk.vocab_index.tolist() == [9, 10] and chunk.vocab_of[3] == (0, 2)
    assert chunk.vocab_targets.tolist() == [[5, 6], [0, 0]] and chunk.target_counts == [2, 0]


def test_a_row_must_start_where_its_prefix_ends() -> None:
    with pytest.raises(ValueError, match="exactly the positions before it"):
        Row(_ids(2), 5, Prefix(np.arange(4)))
    with pytest.raises(ValueError, match="empty row"):
        Row(_ids(0), 0)

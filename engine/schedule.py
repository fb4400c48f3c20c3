"""Turning tokenized prompts into model rows: prefix grouping, waves, and chunk packing.

Prompts are grouped by exact prefix token ids. For a prefix whose KV is not resident, its first
prompt runs as one full row (prefix + suffix) that captures the prefix KV — phase A; every other
prompt of the group runs as a suffix row attending to that KV — phase B. Groups are taken in
*waves* whose phase-A tokens fit one chunk budget, so the KV computed for a wave is consumed
right after it is produced, and residency is looked up lazily, just before each wave runs (after
the previous wave may have filled or evicted cache entries). A looked-up KV is held by the wave,
so later evictions cannot take it away mid-call.

Prompts with an empty prefix or an empty suffix cannot share KV and run as plain full rows.
``pack`` then cuts a row list into chunks of at most ``budget`` tokens (a longer row goes alone).
Pure Python; the KV objects are opaque here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

KV = TypeVar("KV")
TokenIds = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Row:
    prompt: int  # index of the prompt whose answer this row yields
    tokens: TokenIds  # the tokens run through the model
    prefix_key: TokenIds | None = None  # suffix row: continues this prefix's KV
    capture: int = 0  # full row: keep the KV of this many leading tokens (the prefix)


@dataclass
class Wave(Generic[KV]):
    full_rows: list[Row] = field(default_factory=list)  # phase A
    suffix_rows: list[Row] = field(default_factory=list)  # phase B
    resident: dict[TokenIds, KV] = field(default_factory=dict)  # KV found before the wave
    full_tokens: int = 0


def waves(
    prompts: Sequence[tuple[TokenIds, TokenIds]],
    lookup: Callable[[TokenIds], KV | None],
    budget: int,
) -> Iterator[Wave[KV]]:
    """Yield waves covering every prompt exactly once; ``lookup`` runs as each wave is formed."""
    groups: dict[TokenIds, list[int]] = {}
    wave: Wave[KV] = Wave()
    for index, (prefix, suffix) in enumerate(prompts):
        if prefix and suffix:
            groups.setdefault(prefix, []).append(index)
        else:
            wave.full_rows.append(Row(index, prefix + suffix))
            wave.full_tokens += len(prefix) + len(suffix)

    for prefix, members in groups.items():
        if wave.full_tokens >= budget:
            yield wave
            wave = Wave()
        kv = lookup(prefix)
        if kv is not None:
            wave.resident[prefix] = kv
        else:
            first = members[0]
            members = members[1:]
            wave.full_rows.append(Row(first, prefix + prompts[first][1], capture=len(prefix)))
            wave.full_tokens += len(prefix) + len(prompts[first][1])
        wave.suffix_rows.extend(Row(i, prompts[i][1], prefix_key=prefix) for i in members)
    if wave.full_rows or wave.suffix_rows:
        yield wave


def pack(rows: Sequence[Row], budget: int) -> list[list[Row]]:
    """Consecutive chunks of rows with at most ``budget`` tokens each (oversized rows alone)."""
    chunks: list[list[Row]] = []
    current: list[Row] = []
    used = 0
    for row in rows:
        if current and used + len(row.tokens) > budget:
            chunks.append(current)
            current, used = [], 0
        current.append(row)
        used += len(row.tokens)
    if current:
        chunks.append(current)
    return chunks

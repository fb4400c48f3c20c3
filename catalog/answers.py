"""The answer store: answers the engine gave, reused by later statements asking the same prompt.

Contract: one `AnswerStore` per server (the `Database` holds it), shared by every session and
safe to use from several threads. An answer is keyed by `AnswerKeys(...).of(prefix, suffix)`:
the model, the prompt layout's version, the answer kind with its labels or token budget, and the
exact prompt text (prefix and suffix) — a digest, so the store never holds the prompts themselves.
For the same key the engine gives the same answer, so a stored one replaces asking it: results do
not change. `get` returns the stored `(value, score)` or None; `put` stores one (`put_many`
several). Bounded: past `max_bytes` (keys plus values, approximately) the least recently used
answers are forgotten.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_BYTES = 64 << 20
_ENTRY_OVERHEAD = 120  # bytes per entry beyond its key and value (dict slot, tuple, floats)

Answer = tuple[bool | float | str, float]  # (value, score), as `engine.api.Answers` gives them


@dataclass(frozen=True, slots=True)
class AnswerKey:
    digest: bytes


class AnswerKeys:
    """The keys of one question's prompts: what they share is hashed once, and each distinct
    prefix once (a join's anchor document is the prefix of thousands of pairs; the prompts
    then hold one string object for it, whose hash Python keeps)."""

    def __init__(self, model: str, layout_version: int, kind: str, labels: Sequence[str],
                 max_tokens: int) -> None:
        self._question = hashlib.blake2b(digest_size=20)
        for part in (model, str(layout_version), kind, "\x1f".join(labels), str(max_tokens)):
            _update(self._question, part)
        self._prefixes: dict[str, bytes] = {}

    def of(self, prefix: str, suffix: str) -> AnswerKey:
        digest = self._prefixes.get(prefix)
        if digest is None:
            h = hashlib.blake2b(digest_size=20)
            _update(h, prefix)
            digest = self._prefixes[prefix] = h.digest()
        h = self._question.copy()
        h.update(digest)
        _update(h, suffix)
        return AnswerKey(h.digest())


def _update(h: Any, part: str) -> None:
    data = part.encode("utf-8", "surrogatepass")
    h.update(len(data).to_bytes(8, "little"))  # lengths first: no two splits hash alike
    h.update(data)


class AnswerStore:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._lock = threading.Lock()
        self._answers: OrderedDict[bytes, Answer] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: AnswerKey) -> Answer | None:
        with self._lock:
            answer = self._answers.get(key.digest)
            if answer is not None:
                self._answers.move_to_end(key.digest)
            return answer

    def put(self, key: AnswerKey, answer: Answer) -> None:
        self.put_many([key], [answer])

    def put_many(self, keys: Sequence[AnswerKey], answers: Sequence[Answer]) -> None:
        """`put` of each key's answer, under one hold of the lock (an operator's thousands)."""
        sizes = [_size(answer) for answer in answers]
        stored = self._answers
        with self._lock:
            for key, answer, size in zip(keys, answers, sizes, strict=True):
                if size > self.max_bytes:
                    continue
                old = stored.pop(key.digest, None)
                if old is not None:
                    self._bytes -= _size(old)
                stored[key.digest] = answer
                self._bytes += size
            while self._bytes > self.max_bytes:
                _, evicted = stored.popitem(last=False)
                self._bytes -= _size(evicted)


def _size(answer: Answer) -> int:
    value = answer[0]
    return _ENTRY_OVERHEAD + 20 + (sys.getsizeof(value) if isinstance(value, str) else 0)

"""A deterministic engine for planner tests: each answer is a hash of its prompt.

`HashEngine` implements the `engine.api.Engine` protocol for every answer kind without a model,
so statement shapes run in milliseconds: the same prompt always gets the same answer, different
prompts get independent ones (TRUE with probability `true_rate`). Its token accounting follows
the real engine's rules — whitespace-and-punctuation tokens; a prefix's tokens are fresh except
its longest leading run of tokens some earlier prefix had (the engine matches prefixes token by
token in its radix tree, and keeps their KV across calls); every suffix fresh — so the
planner's estimates can be checked against it. `rates` plants answer rates per question:
a prompt whose text holds a key (pick keys only questions hold) is TRUE with that
key's rate.
`answer_of(kind, prompt, ...)` is the pure answer function an oracle uses. Imported as
`support.hash_engine`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Mapping, Sequence

from heron.engine.api import (
    AnswerKind,
    Answers,
    Metrics,
    ModelInfo,
    ProgressCallback,
    PromptTooLong,
    Request,
)
from heron.engine.prompts import Prompt

_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")
_MODULUS = (1 << 61) - 1
INFO = ModelInfo(name="hash-engine", architecture="hash", num_layers=2, hidden_size=64,
                 vocab_size=1000, num_params=1_000_000, dtype="float32", device="cpu",
                 context_tokens=1 << 20)


def _unit(*parts: str) -> float:
    """A number in [0, 1) determined by the text."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64


def answer_of(kind: AnswerKind, prompt: Prompt, labels: Sequence[str] = (),
              max_tokens: int = 0, true_rate: float = 0.5,
              rates: Mapping[str, float] | None = None) -> tuple[object, float]:
    """(value, score) the engine gives one prompt."""
    u = _unit(prompt.prefix, prompt.suffix)
    text = prompt.prefix + prompt.suffix
    true_rate = next((rate for key, rate in (rates or {}).items() if key in text), true_rate)
    if kind is AnswerKind.BOOLEAN:
        return u < true_rate, u
    if kind is AnswerKind.SCORE:
        return u, u
    if kind is AnswerKind.LABEL:
        return labels[int(u * len(labels))], 1 / len(labels)
    words = [f"w{int(_unit(prompt.prefix, prompt.suffix, str(i)) * 1000)}"
             for i in range(min(max_tokens, 4))]
    return " ".join(words), -1.0


def count(text: str) -> int:
    return len(_TOKEN.findall(text))


class HashEngine:
    def __init__(self, true_rate: float = 0.5, rates: Mapping[str, float] | None = None) -> None:
        self.info = INFO
        self.true_rate = true_rate
        self.rates = dict(rates or {})
        self.cached: set[int] = set()  # rolling hashes of every token run prefixes began with
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def answer(self, request: Request, cancel: object = None,
               progress: ProgressCallback | None = None, *,
               more: Iterable[Sequence[Prompt]] = ()) -> Answers:
        prompts = (*request.prompts, *(prompt for part in more for prompt in part))
        request = Request(request.kind, prompts, request.labels, request.max_tokens)  # whole
        with self._lock:
            self.requests.append(request)
            values, scores = [], []
            fresh = total = 0
            for prompt in request.prompts:
                value, score = answer_of(request.kind, prompt, request.labels,
                                         request.max_tokens, self.true_rate, self.rates)
                values.append(value)
                scores.append(score)
                prefix = _TOKEN.findall(prompt.prefix)
                suffix = count(prompt.suffix)
                labels = sum(count(" " + label) for label in request.labels)
                total += len(prefix) + suffix + labels
                fresh += len(prefix) - self._resident(prefix) + suffix + labels
            metrics = Metrics(len(request.prompts), total, fresh, total - fresh, 0.0)
        if progress is not None:  # all of it in one chunk
            progress(metrics)
        return Answers(request.kind, tuple(values), tuple(scores), metrics)

    def _resident(self, tokens: list[str]) -> int:
        """How many leading tokens already have KV; then they all do."""
        resident, running = 0, 0
        for index, token in enumerate(tokens):
            running = (running * 1_000_003 + hash(token)) % _MODULUS
            if running in self.cached:
                resident = index + 1 if resident == index else resident
            else:
                self.cached.add(running)
        return resident

    @property
    def prompts(self) -> int:
        return sum(len(r.prompts) for r in self.requests)

    def check(self, request: Request) -> None:
        for index, prompt in enumerate(request.prompts):
            tokens = count(prompt.prefix) + count(prompt.suffix)
            if tokens > self.info.context_tokens:
                raise PromptTooLong(index, tokens, self.info.context_tokens)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [count(t) for t in texts]

    def close(self) -> None:
        self.cached.clear()

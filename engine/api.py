"""The engine's public contract: what callers send, what they get back, and how it fails.

Pure Python (no torch): the server and planner import this module to type their calls, and the
resident engine process pickles these dataclasses across its pipe.

Contract:
- ``Engine.answer(request)`` answers a ``Request`` — prompts of one ``AnswerKind`` — with one value
  per prompt, in order, and the call's ``Metrics``. An empty request yields empty answers. Several
  threads may call one engine at once; each call is one request with its own cancel flag, and the
  engine interleaves the chunks of all of them (a short request is not queued behind a long one).
- A call may stream its prompts: ``answer(request, more=parts)`` answers ``request.prompts`` and
  then every part ``parts`` yields, in order, as one call (one cancel flag, one stream of progress,
  one ``Metrics``, one fair share). ``parts`` is consumed in the calling thread while the engine
  already answers the prompts it has, so a caller that renders its prompts lazily overlaps that
  work with the model's. If iterating it raises, the call is withdrawn and the exception propagates.
- A call given a ``cancel`` flag stops soon after the flag is set (between prefill chunks) with
  ``EngineCancelled``; cancelling one call never affects another; work already done stays in the
  KV cache.
- A call given a ``progress`` callback has it called, in the calling thread, with the cumulative
  ``Metrics`` of the prompts answered so far each time a chunk holding its work finishes.
- ``Engine.count_tokens(texts)`` counts tokens exactly as the engine tokenizes prompt parts
  (no special tokens), for the planner's cost model.
- Every failure the user should see is an ``EngineError`` whose message is shown to SQL users.
  A request holding a prompt longer than the model's context (``ModelInfo.context_tokens``,
  counting the tokens a label or a completion adds) is refused whole with ``PromptTooLong``
  before the model runs any of it. A streamed part is checked when it arrives, after earlier
  parts may have run: ``Engine.check(request)`` refuses exactly what ``answer`` would, runs
  nothing, and costs far less than tokenizing (texts are bounded by their bytes where the
  tokenizer allows), so a caller checks every prompt of a stream before it starts one.
- A ``Request`` pickles each distinct text once, however many prompts repeat it (a join's anchor
  document is shared by every pair it is part of): ``prompt_table``, which a streamed part
  crossing a pipe uses too.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from heron.engine.prompts import Prompt

# The model `heron serve` uses when none is named: small enough to run on any CPU.
DEFAULT_MODEL = "smollm2-135m"


class AnswerKind(enum.Enum):
    """What an answer is read as: the kinds of question the engine can be asked."""

    BOOLEAN = "boolean"  # TRUE or FALSE, from the answer-token logits of one prefill
    LABEL = "label"  # one of a set of labels, scored as suffixes sharing the prompt's KV
    SCORE = "score"  # the probability of TRUE
    TEXT = "text"  # a greedy continuation


class EngineError(Exception):
    """A failure of the engine; the message is shown to SQL users, so it says what to fix."""


class PromptTooLong(EngineError):
    """A prompt does not fit the model's context; nothing of its request ran."""

    def __init__(self, prompt: int, tokens: int, context: int) -> None:
        super().__init__(f"prompt {prompt + 1} of the request has {tokens} tokens, more than "
                         f"the model's context of {context} tokens")
        self.prompt = prompt  # its index in the request
        self.tokens = tokens
        self.context = context

    def __reduce__(self) -> tuple[type[PromptTooLong], tuple[int, int, int]]:
        return PromptTooLong, (self.prompt, self.tokens, self.context)  # crosses the pipe whole


class EngineCancelled(EngineError):
    """The call was cancelled by its caller; the engine stays usable."""

    def __init__(self, message: str = "canceling statement due to user request") -> None:
        super().__init__(message)


class CancelFlag(Protocol):
    """Set by another thread (or process) to stop a running call between chunks:
    ``threading.Event`` and ``multiprocessing.Event`` both qualify."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class ModelInfo:
    """What model the engine runs, for EXPLAIN output and `SHOW`-style introspection."""

    name: str
    architecture: str
    num_layers: int
    hidden_size: int
    vocab_size: int
    num_params: int
    dtype: str
    device: str
    context_tokens: int  # the longest prompt (with what an answer adds) it reads
    chunk_tokens: int = 0  # tokens the model runs in one forward chunk at most (0: unknown)


@dataclass
class Metrics:
    """Work accounting of one or more engine calls.

    ``input_tokens`` is the sum of full prompt lengths, plus for LABEL the label tokens fed to
    the model (all but the last token of each label); ``fresh_tokens`` the tokens actually run
    through the model; ``cached_tokens = input_tokens - fresh_tokens`` the prefix tokens whose KV
    was reused (computed for another prompt of the call, or kept from earlier calls).
    ``generated_tokens`` counts the tokens a TEXT request generated (the end-of-text token
    included when it was generated).

    Where the time went: ``seconds`` is the call's wall time; ``device_seconds`` how long chunks
    holding its work ran on the device (CUDA events recorded around each chunk by the step
    loop, no synchronization; on CPU the chunk's compute time); ``first_chunk_at`` when the
    first of them started, on the ``time.monotonic()`` clock (system-wide, so comparable across
    the engine's and its caller's processes), None before one ran. Several calls add up
    (``first_chunk_at``: the earliest).
    """

    prompts: int = 0
    input_tokens: int = 0
    fresh_tokens: int = 0
    cached_tokens: int = 0
    seconds: float = 0.0
    generated_tokens: int = 0
    device_seconds: float = 0.0
    first_chunk_at: float | None = None

    def __add__(self, other: Metrics) -> Metrics:
        total = Metrics(**vars(self))
        total.merge(other)
        return total

    def merge(self, other: Metrics) -> None:
        """Accumulate ``other`` into this instance (for operators summing over many calls)."""
        self.prompts += other.prompts
        self.input_tokens += other.input_tokens
        self.fresh_tokens += other.fresh_tokens
        self.cached_tokens += other.cached_tokens
        self.seconds += other.seconds
        self.generated_tokens += other.generated_tokens
        self.device_seconds += other.device_seconds
        firsts = [t for t in (self.first_chunk_at, other.first_chunk_at) if t is not None]
        self.first_chunk_at = min(firsts, default=None)


# Called with the cumulative metrics of the prompts answered so far (see ``Engine.answer``).
ProgressCallback = Callable[[Metrics], None]


@dataclass(frozen=True)
class Request:
    """Prompts of one kind, asked by one operator of one statement.

    ``labels`` are the candidate answers of a LABEL request (each scored as a suffix following
    the prompt, sharing its KV); ``max_tokens`` bounds a TEXT request's greedy continuation.
    """

    kind: AnswerKind
    prompts: tuple[Prompt, ...]
    labels: tuple[str, ...] = ()
    max_tokens: int = 0

    def __post_init__(self) -> None:
        if self.kind is AnswerKind.LABEL and len(self.labels) < 2:
            raise EngineError("a LABEL request needs at least two labels")
        if len(set(self.labels)) != len(self.labels):
            raise EngineError(f"labels must be distinct, got {list(self.labels)!r}")
        if self.kind is not AnswerKind.LABEL and self.labels:
            raise EngineError(f"labels belong to LABEL requests, not {self.kind.name}")
        if self.kind is AnswerKind.TEXT and self.max_tokens < 1:
            raise EngineError("a TEXT request needs max_tokens >= 1")
        if self.kind is not AnswerKind.TEXT and self.max_tokens:
            raise EngineError(f"max_tokens belongs to TEXT requests, not {self.kind.name}")

    def __reduce__(self) -> tuple[Callable[..., Request], tuple[object, ...]]:
        texts, index = prompt_table(self.prompts)
        return _request_from_table, (self.kind, texts, index, self.labels, self.max_tokens)


def prompt_table(prompts: Sequence[Prompt]) -> tuple[tuple[str, ...], list[int]]:
    """Prompts as each distinct text once, then per prompt the indices of its two texts: how
    they cross a pipe. Thousands of join pairs repeat one anchor's prefix, which pickle's memo
    (by object identity) misses whenever the caller built equal strings separately, and
    pickling a slotted dataclass per prompt costs several times more."""
    table: dict[str, int] = {}
    texts = (text for p in prompts for text in (p.prefix, p.suffix))
    index = [table.setdefault(text, len(table)) for text in texts]
    return tuple(table), index


def prompts_from_table(texts: tuple[str, ...], index: list[int]) -> tuple[Prompt, ...]:
    """The prompts ``prompt_table`` made a table of."""
    return tuple(Prompt(texts[index[i]], texts[index[i + 1]]) for i in range(0, len(index), 2))


def _request_from_table(
    kind: AnswerKind,
    texts: tuple[str, ...],
    index: list[int],
    labels: tuple[str, ...],
    max_tokens: int,
) -> Request:
    return Request(kind, prompts_from_table(texts, index), labels, max_tokens)


@dataclass(frozen=True)
class Answers:
    """Answers of a ``Request``: ``values[i]`` and ``scores[i]`` belong to prompt ``i``.

    values: BOOLEAN -> bool; SCORE -> float, P(TRUE); LABEL -> the chosen label (str);
    TEXT -> the generated text (str).
    scores: BOOLEAN and SCORE -> P(TRUE); LABEL -> the chosen label's probability among the
    labels; TEXT -> the mean log-probability of the generated tokens.
    """

    kind: AnswerKind
    values: tuple[bool | float | str, ...]
    scores: tuple[float, ...]
    metrics: Metrics


class Engine(Protocol):
    """What the planner drives: the in-process ``LocalEngine`` or the resident ``EngineProcess``."""

    info: ModelInfo

    def answer(
        self,
        request: Request,
        cancel: CancelFlag | None = None,
        progress: ProgressCallback | None = None,
        *,
        more: Iterable[Sequence[Prompt]] = (),
    ) -> Answers: ...

    def check(self, request: Request) -> None: ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...

    def close(self) -> None: ...

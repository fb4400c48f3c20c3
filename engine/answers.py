"""Reading answers from what the model produced: TRUE/FALSE, P(TRUE), a label, a text.

Contract:
- ``AnswerTokens``: the model may answer with any casing/spacing variant of TRUE or FALSE; the
  first token of each variant stands for it (for SmolLM2 "TRUE" is several tokens, and its first
  token is what the model must emit next). The LM head is pruned to these ids at load time, so a
  TRUE/FALSE read yields only ``[rows, len(ids)]`` logits. The answer is TRUE when the
  log-sum-exp of the truthy logits exceeds that of the falsy ones; ``p_true`` is the softmax over
  those two log-sum-exps.
- ``Evaluation``: the numbers the engine computed for a request, before they are read as answers
  (tests compare them with ``transformers``).
- ``read_answers(evaluation, request, answer_tokens, decode)``: the ``Answers`` of a request —
  BOOLEAN the decision, SCORE P(TRUE), LABEL the label with the largest summed log-probability
  (first of equals) with its softmax probability among the labels, TEXT the decoded text (the
  end-of-text token dropped) with the mean log-probability of the generated tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from heron.engine.api import AnswerKind, Answers, EngineError, Metrics, Request

TRUTHY = ("TRUE", " TRUE", "True", " True")
FALSY = ("FALSE", " FALSE", "False", " False")


@dataclass(frozen=True)
class AnswerTokens:
    truthy: tuple[int, ...]
    falsy: tuple[int, ...]

    @property
    def ids(self) -> tuple[int, ...]:
        """Row order of the pruned LM head: truthy ids, then falsy ids."""
        return self.truthy + self.falsy

    @classmethod
    def from_encoder(cls, encode: Callable[[Sequence[str]], Sequence[Sequence[int]]]
                     ) -> AnswerTokens:
        truthy = _first_ids(encode(TRUTHY))
        falsy = _first_ids(encode(FALSY))
        if set(truthy) & set(falsy):
            raise EngineError(
                f"tokenizer cannot tell TRUE from FALSE: shared first tokens "
                f"{sorted(set(truthy) & set(falsy))}"
            )
        return cls(truthy=truthy, falsy=falsy)

    def decide(self, logits: torch.Tensor) -> tuple[list[bool], list[float]]:
        """Answers and P(TRUE) from pruned logits [rows, len(ids)]."""
        logits = logits.float()
        n = len(self.truthy)
        pair = torch.stack(
            (torch.logsumexp(logits[:, :n], dim=-1), torch.logsumexp(logits[:, n:], dim=-1)), -1
        )
        p_true = torch.softmax(pair, dim=-1)[:, 0]
        return (pair[:, 0] > pair[:, 1]).tolist(), p_true.tolist()


@dataclass(frozen=True)
class Evaluation:
    """What the model computed for a request's prompts (``kind`` says which fields are set)."""

    kind: AnswerKind
    metrics: Metrics
    answer_logits: torch.Tensor | None = None  # BOOLEAN, SCORE: [prompts, len(answer ids)]
    label_logprobs: np.ndarray | None = None  # LABEL: [prompts, labels], summed over tokens
    generated: tuple[tuple[int, ...], ...] = ()  # TEXT: ids per prompt (a stop id last, if hit)
    generated_logprobs: tuple[tuple[float, ...], ...] = ()  # TEXT: log-probability per id


def read_answers(
    evaluation: Evaluation,
    request: Request,
    answer_tokens: AnswerTokens,
    decode: Callable[[Sequence[int]], str],
    stop_ids: frozenset[int],
) -> Answers:
    kind, metrics = evaluation.kind, evaluation.metrics
    if kind in (AnswerKind.BOOLEAN, AnswerKind.SCORE):
        assert evaluation.answer_logits is not None
        decided, p_true = answer_tokens.decide(evaluation.answer_logits)
        values = tuple(decided) if kind is AnswerKind.BOOLEAN else tuple(p_true)
        return Answers(kind, values, tuple(p_true), metrics)
    if kind is AnswerKind.LABEL:
        assert evaluation.label_logprobs is not None
        scores = torch.from_numpy(evaluation.label_logprobs)
        best = scores.argmax(dim=-1) if len(scores) else torch.zeros(0, dtype=torch.long)
        probability = torch.softmax(scores, dim=-1).gather(1, best[:, None])[:, 0]
        labels = tuple(request.labels[i] for i in best.tolist())
        return Answers(kind, labels, tuple(probability.tolist()), metrics)
    texts = tuple(
        decode(ids[:-1] if ids and ids[-1] in stop_ids else ids) for ids in evaluation.generated
    )
    means = tuple(float(np.mean(lps)) for lps in evaluation.generated_logprobs)
    return Answers(kind, texts, means, metrics)


def _first_ids(encodings: Sequence[Sequence[int]]) -> tuple[int, ...]:
    # dict.fromkeys dedupes while keeping the variant order stable.
    return tuple(dict.fromkeys(int(ids[0]) for ids in encodings if len(ids)))

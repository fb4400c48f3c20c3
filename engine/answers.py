"""Reading a TRUE/FALSE answer from the logits at a prompt's last position.

The model may answer with any casing/spacing variant of TRUE or FALSE; the first token of each
variant stands for it (for SmolLM2 "TRUE" is several tokens, and its first token is what the
model must emit next). The LM head is pruned to these ids at load time, so a forward pass yields
only ``[rows, len(ids)]`` logits. The answer is TRUE when the log-sum-exp of the truthy logits
exceeds that of the falsy ones; ``p_true`` is the softmax over those two log-sum-exps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from heron.engine.api import EngineError

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
    def from_encoder(cls, encode: Callable[[Sequence[str]], list[tuple[int, ...]]]) -> AnswerTokens:
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


def _first_ids(encodings: list[tuple[int, ...]]) -> tuple[int, ...]:
    # dict.fromkeys dedupes while keeping the variant order stable.
    return tuple(dict.fromkeys(ids[0] for ids in encodings if ids))

"""A statement's token budget, `heron.max_tokens`: how many tokens it may have the model read.

Contract: `TokenBudget(limit)` (0: no limit) counts prompt tokens plus generated tokens, those the
NOTICE of each AI operator reports; answers served from the answer store cost nothing.
`refuse_estimate(tokens)` raises `SqlError` 54000 before anything runs when the planner's
estimate (EXPLAIN's) exceeds the limit; `watch()` is the progress callback of one engine call,
which raises the same error once the tokens charged so far plus the call's own pass the limit
(the engine then stops the call between chunks); `charge(metrics)` adds a finished call's
tokens. Both errors say what the statement would take or took and how to change the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from heron.engine.api import Metrics, ProgressCallback
from heron.planner.cost import Work
from heron.planner.errors import SqlError, SqlState
from heron.planner.settings import MAX_TOKENS

_HINT = (f"Ask about fewer rows (WHERE, LIMIT; EXPLAIN shows the estimate), or change the "
         f"budget: SET {MAX_TOKENS} = <tokens> (0 for no limit).")


def tokens(metrics: Metrics) -> int:
    """The tokens a call had the model read."""
    return metrics.input_tokens + metrics.generated_tokens


def estimated_tokens(work: Work) -> float:
    """The tokens estimated work would have the model read (a completion's whole budget)."""
    return work.input_tokens + work.decode_tokens


@dataclass
class TokenBudget:
    limit: int  # 0: no limit
    spent: int = 0

    @property
    def limited(self) -> bool:
        return self.limit > 0

    def refuse_estimate(self, estimated: float) -> None:
        if self.limited and estimated > self.limit:
            raise SqlError(SqlState.PROGRAM_LIMIT_EXCEEDED,
                           f"statement would have the model read about {estimated:,.0f} tokens, "
                           f"more than {MAX_TOKENS} allows ({self.limit:,})", hint=_HINT)

    def watch(self) -> ProgressCallback | None:
        if not self.limited:
            return None

        def progress(metrics: Metrics) -> None:
            if self.spent + tokens(metrics) > self.limit:
                raise SqlError(SqlState.PROGRAM_LIMIT_EXCEEDED,
                               f"statement stopped: it had the model read "
                               f"{self.spent + tokens(metrics):,} tokens, more than "
                               f"{MAX_TOKENS} allows ({self.limit:,})", hint=_HINT)

        return progress

    def charge(self, metrics: Metrics) -> None:
        self.spent += tokens(metrics)

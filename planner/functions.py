"""The registry of AI functions: what each one answers, and whether Heron evaluates it yet.

Contract: `lookup(node)` returns the `AiFunction` entry for a parsed AI call (a node of
`planner.dialect`) after checking its argument count, or raises `SqlError`: 0A000 for a function
that is recognized but not evaluated (naming what to write instead), 42883 for a wrong argument
count. A new AI function is one entry here, one node class in the dialect, one operator kind in
`planner.logical` and an answer kind of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from heron.engine.api import AnswerKind
from heron.planner.dialect import AIClassify, AIComplete, AIFunction, AIIf, AIScore
from heron.planner.errors import SqlError, SqlState

EVALUATED_HINT = "AI.IF(prompt) and AI_FILTER(prompt) are available in this version."


@dataclass(frozen=True, slots=True)
class AiFunction:
    """One AI function: its answer kind, the SQL type of its result, how it is called."""

    node: type[AIFunction]
    answer: AnswerKind
    result_type: pa.DataType
    usage: str  # the call's shape, for messages
    min_args: int
    max_args: int
    evaluated: bool  # False: recognized and refused until its operator exists


FUNCTIONS: dict[type[AIFunction], AiFunction] = {
    f.node: f for f in (
        AiFunction(AIIf, AnswerKind.BOOLEAN, pa.bool_(), "AI.IF(prompt)", 1, 1, True),
        AiFunction(AIClassify, AnswerKind.LABEL, pa.string(), "AI.CLASSIFY(input, labels)", 2, 3,
                   False),
        AiFunction(AIScore, AnswerKind.SCORE, pa.float64(), "AI.SCORE(prompt)", 1, 1, False),
        AiFunction(AIComplete, AnswerKind.TEXT, pa.string(),
                   "AI_COMPLETE(prompt [, max_tokens])", 1, 2, False),
    )
}


def lookup(node: AIFunction) -> AiFunction:
    """The registry entry of a call, its argument count checked."""
    entry = FUNCTIONS.get(type(node))
    if entry is None or not entry.evaluated:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, f"{node.spelling} is not supported yet",
                       hint=EVALUATED_HINT)
    count = len(node.arguments)
    if not entry.min_args <= count <= entry.max_args:
        wanted = (str(entry.min_args) if entry.min_args == entry.max_args
                  else f"{entry.min_args} to {entry.max_args}")
        raise SqlError(SqlState.UNDEFINED_FUNCTION,
                       f"{node.spelling} takes {wanted} argument{'s' * (wanted != '1')}, "
                       f"got {count}",
                       hint=f"Call it as {entry.usage}; write a prompt as ('question ', column) "
                            "or PROMPT('question {0}', column).")
    return entry

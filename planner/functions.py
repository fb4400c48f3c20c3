"""The registry of AI functions: what each one answers and how its arguments are read.

Contract: `lookup(node)` returns the `AiFunction` entry for a parsed AI call (a node of
`planner.dialect`) after checking its argument count, or raises `SqlError`: 0A000 for a function
Heron does not evaluate (naming what to write instead), 42883 for a wrong argument count.
`entry.spec(node)` reads the call's other arguments into an `AnswerSpec` — the labels (and
their descriptions) of a classification, the token budget of a completion — refusing malformed
ones (22023, 42883) with the shape to write. The first argument of every call is its prompt
(`planner.prompting` reads it).

A new AI function is one entry here, one node class in the dialect, one operator kind in
`planner.logical`, a prompt layout in `planner.prompting` and an answer kind of the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from heron.engine.api import AnswerKind
from heron.planner.dialect import AIClassify, AIComplete, AIFunction, AIIf, AIScore
from heron.planner.errors import SqlError, SqlState

EVALUATED_HINT = ("Heron evaluates AI.IF / AI_FILTER, AI.CLASSIFY / AI_CLASSIFY, AI.SCORE and "
                  "AI_COMPLETE / AI.GENERATE.")
DEFAULT_MAX_TOKENS = 128  # a completion's budget when the call names none
MAX_TOKENS_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class AnswerSpec:
    """What the engine is asked besides the prompts: the answer kind, a classification's labels
    (with optional descriptions, shown to the model) and a completion's token budget."""

    kind: AnswerKind
    labels: tuple[str, ...] = ()
    descriptions: tuple[str | None, ...] = ()
    task: str | None = None  # a classification's task description (Snowflake's option)
    max_tokens: int = 0


@dataclass(frozen=True, slots=True)
class AiFunction:
    """One AI function: its answer kind, the SQL type of its result, how it is called."""

    node: type[AIFunction]
    answer: AnswerKind
    result_type: pa.DataType
    sql_type: str  # the result's type in DuckDB's SQL (for lookups and views)
    usage: str  # the call's shape, for messages
    min_args: int
    max_args: int
    read_options: Callable[[AIFunction], AnswerSpec]

    def spec(self, node: AIFunction) -> AnswerSpec:
        return self.read_options(node)


def _boolean(node: AIFunction) -> AnswerSpec:
    return AnswerSpec(AnswerKind.BOOLEAN)


def _score(node: AIFunction) -> AnswerSpec:
    return AnswerSpec(AnswerKind.SCORE)


CLASSIFY_HINT = ("Write the categories as a list of string literals, e.g. "
                 "AI.CLASSIFY(body, ['positive', 'negative']); a category may carry a "
                 "description: [('positive', 'praises the film'), ...] or "
                 "ARRAY[{'label': 'positive', 'description': 'praises the film'}].")


def _classify(node: AIFunction) -> AnswerSpec:
    args = node.arguments
    labels, descriptions = _categories(node.spelling, args[1])
    task = _classify_options(node.spelling, args[2]) if len(args) == 3 else None
    if len(set(labels)) != len(labels):
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f"{node.spelling} categories must be distinct", hint=CLASSIFY_HINT)
    return AnswerSpec(AnswerKind.LABEL, labels, descriptions, task)


def _categories(spelling: str, node: exp.Expression) -> tuple[tuple[str, ...],
                                                                tuple[str | None, ...]]:
    if not isinstance(node, exp.Array):
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f"{spelling} needs its categories as a list literal", hint=CLASSIFY_HINT)
    labels, descriptions = [], []
    for item in node.expressions:
        label, description = _category(spelling, item)
        labels.append(label)
        descriptions.append(description)
    if len(labels) < 2:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f"{spelling} needs at least two categories", hint=CLASSIFY_HINT)
    return tuple(labels), tuple(descriptions)


def _category(spelling: str, item: exp.Expression) -> tuple[str, str | None]:
    if _is_text(item):
        return _text(item), None
    if isinstance(item, exp.Tuple) and len(item.expressions) == 2 and all(
            _is_text(e) for e in item.expressions):
        return _text(item.expressions[0]), _text(item.expressions[1])
    if isinstance(item, exp.Struct):
        fields = _struct_fields(item)
        if set(fields) <= {"label", "description"} and "label" in fields:
            return fields["label"], fields.get("description")
    raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                   f"{spelling} cannot read the category {item.sql()}", hint=CLASSIFY_HINT)


def _classify_options(spelling: str, node: exp.Expression) -> str | None:
    """The optional third argument, Snowflake's options object: its task description (shown
    to the model with the question). Only single-label output is answered; other options are
    refused by name."""
    fields = _struct_fields(node) if isinstance(node, exp.Struct) else None
    if fields is None:
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f"{spelling} reads its third argument as an options object",
                       hint="For example {'output_mode': 'single'}.")
    for key, value in fields.items():
        if key == "task_description" or (key == "output_mode" and value.lower() == "single"):
            continue
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED,
                       f"{spelling} option {key} => {value!r} is not supported",
                       hint="A classification answers with one label "
                            "({'output_mode': 'single'}); put task context in the input "
                            "prompt, e.g. AI.CLASSIFY(('Topic of the ticket: ', body), "
                            "[...]).")
    return fields.get("task_description")


def _struct_fields(node: exp.Struct) -> dict[str, str]:
    fields = {}
    for item in node.expressions:
        if not (isinstance(item, exp.PropertyEQ | exp.Slice) and _is_text(item.expression)):
            raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                           f"cannot read {item.sql()} in {node.sql()}",
                           hint="Write options as {'name': 'value', ...} with string values.")
        fields[item.this.name.lower()] = _text(item.expression)
    return fields


def _complete(node: AIFunction) -> AnswerSpec:
    args = node.arguments
    if len(args) == 1:
        return AnswerSpec(AnswerKind.TEXT, max_tokens=DEFAULT_MAX_TOKENS)
    budget = args[1]
    if not (isinstance(budget, exp.Literal) and budget.is_int
            and 1 <= int(budget.name) <= MAX_TOKENS_LIMIT):
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE,
                       f"{node.spelling} takes its token budget as an integer literal "
                       f"from 1 to {MAX_TOKENS_LIMIT}, got {budget.sql()}",
                       hint=f"For example {node.spelling}(('Summarize: ', body), 64).")
    return AnswerSpec(AnswerKind.TEXT, max_tokens=int(budget.name))


def _is_text(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _text(node: exp.Expression) -> str:
    return node.this


FUNCTIONS: dict[type[AIFunction], AiFunction] = {
    f.node: f for f in (
        AiFunction(AIIf, AnswerKind.BOOLEAN, pa.bool_(), "BOOLEAN", "AI.IF(prompt)", 1, 1,
                   _boolean),
        AiFunction(AIClassify, AnswerKind.LABEL, pa.string(), "VARCHAR",
                   "AI.CLASSIFY(input, ['label', ...] [, options])", 2, 3, _classify),
        AiFunction(AIScore, AnswerKind.SCORE, pa.float64(), "DOUBLE", "AI.SCORE(prompt)", 1, 1,
                   _score),
        AiFunction(AIComplete, AnswerKind.TEXT, pa.string(), "VARCHAR",
                   "AI_COMPLETE(prompt [, max_tokens])", 1, 2, _complete),
    )
}


def lookup(node: AIFunction) -> AiFunction:
    """The registry entry of a call, its argument count checked."""
    entry = FUNCTIONS.get(type(node))
    if entry is None:
        raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, f"{node.spelling} is not supported",
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

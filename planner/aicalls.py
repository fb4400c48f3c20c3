"""Finding AI function calls in a parsed statement and normalizing their prompts.

Contract: `find_calls(tree)` returns every boolean AI call (`AI.IF(...)`, `AI_FILTER(...)`) in a
sqlglot tree as an `AiCall`: the node to replace later and its prompt as a `Template`, a sequence of
text pieces and field references. The three spellings of a prompt normalize to the same template:

    PROMPT('Is this about cats? {0}', body)
    ('Is this about cats? ', body)
    'Is this about cats? ' || body

Other AI functions (AI.CLASSIFY, AI.SCORE, AI.GENERATE, AI_CLASSIFY, AI_COMPLETE) are recognized
and refused with SQLSTATE 0A000 until their operators exist. sqlglot's Postgres dialect reads
`AI.IF(x)` as `Dot(AI, Anonymous(IF))`; both that and the Snowflake names are matched here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from heron.planner.errors import SqlError, SqlState

BOOLEAN_FUNCTIONS = {"AI.IF", "AI_FILTER"}
LATER_FUNCTIONS = {"AI.CLASSIFY", "AI.SCORE", "AI.GENERATE", "AI_CLASSIFY", "AI_COMPLETE",
                   "AI_AGG", "AI_SUMMARIZE_AGG", "AI_SENTIMENT"}
# Cheap test before parsing: statements that cannot contain AI calls skip sqlglot entirely.
MAYBE_AI = re.compile(r"\bAI(?:\s*\.\s*|_)\w+\s*\(", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{(\d+)\}")


@dataclass(frozen=True, slots=True)
class Template:
    """A prompt: text pieces (str) and references to `fields` (int indexes); adjacent text is
    merged, so equivalent spellings compare equal."""

    parts: tuple[str | int, ...]
    fields: tuple[exp.Expression, ...]

    def field_sql(self) -> tuple[str, ...]:
        return tuple(f.sql(dialect="duckdb") for f in self.fields)


@dataclass(frozen=True, slots=True)
class AiCall:
    function: str  # "AI.IF" or "AI_FILTER"
    node: exp.Expression  # the call in the tree, replaced by the answer lookup
    template: Template


def function_name(node: exp.Expression) -> str | None:
    """The AI function a node calls, upper case, or None."""
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier | exp.Column):
        inner = node.expression
        if node.this.name.upper() == "AI" and isinstance(inner, exp.Anonymous | exp.Func):
            name = inner.name if isinstance(inner, exp.Anonymous) else inner.sql_name()
            return f"AI.{name.upper()}"
    if isinstance(node, exp.Anonymous) and node.name.upper().startswith("AI_"):
        return node.name.upper()
    return None


def find_calls(tree: exp.Expression) -> list[AiCall]:
    calls = []
    for node in tree.walk():
        name = function_name(node)
        if name is None:
            continue
        if name in LATER_FUNCTIONS:
            raise SqlError(SqlState.FEATURE_NOT_SUPPORTED, f"{name} is not supported yet",
                           hint="AI.IF and AI_FILTER are available in this version.")
        if name not in BOOLEAN_FUNCTIONS:
            continue
        calls.append(AiCall(name, node, template(name, _arguments(node))))
    return calls


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    inner = node.expression if isinstance(node, exp.Dot) else node
    return list(inner.expressions) if isinstance(inner, exp.Anonymous) else list(
        inner.args.values())


def template(name: str, args: list[exp.Expression]) -> Template:
    if len(args) != 1:
        raise SqlError(SqlState.UNDEFINED_FUNCTION,
                       f"{name} takes one prompt argument, got {len(args)}",
                       hint="Write the prompt as ('question ', column) or "
                       "PROMPT('question {0}', column).")
    parts: list[str | exp.Expression] = _pieces(args[0])
    fields: list[exp.Expression] = []
    normalized: list[str | int] = []
    for part in parts:
        if isinstance(part, str):
            if normalized and isinstance(normalized[-1], str):
                normalized[-1] += part
            elif part:
                normalized.append(part)
            continue
        key = part.sql()
        index = next((i for i, f in enumerate(fields) if f.sql() == key), None)
        if index is None:
            index = len(fields)
            fields.append(part)
        normalized.append(index)
    has_text = any(isinstance(p, str) and p.strip() for p in normalized)
    # A value reading no column (a parameter not bound yet) is question text, not a document.
    if not has_text and all(f.find(exp.Column) is not None for f in fields):
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE, f"{name} needs a question",
                       hint=f"For example {name}(('Is this review positive? ', body)).")
    return Template(tuple(normalized), tuple(fields))


def _pieces(node: exp.Expression) -> list[str | exp.Expression]:
    """Flatten a prompt expression into text pieces and value expressions."""
    if isinstance(node, exp.Paren):
        return _pieces(node.this)
    if isinstance(node, exp.Tuple):
        return [p for item in node.expressions for p in _pieces(item)]
    if isinstance(node, exp.DPipe):
        return _pieces(node.this) + _pieces(node.expression)
    if isinstance(node, exp.Concat):
        return [p for item in node.expressions for p in _pieces(item)]
    if isinstance(node, exp.Anonymous) and node.name.upper() == "PROMPT":
        return _prompt_function(node.expressions)
    if isinstance(node, exp.Literal):
        return [node.this if node.is_string else str(node.this)]
    return [node]


def _prompt_function(args: list[exp.Expression]) -> list[str | exp.Expression]:
    if not args or not (isinstance(args[0], exp.Literal) and args[0].is_string):
        raise SqlError(SqlState.UNDEFINED_FUNCTION,
                       "PROMPT needs a string literal template as its first argument",
                       hint="For example PROMPT('Does {0} mention a dog?', body).")
    text, values = args[0].this, args[1:]
    pieces: list[str | exp.Expression] = []
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        index = int(match.group(1))
        if index >= len(values):
            raise SqlError(SqlState.UNDEFINED_FUNCTION,
                           f"PROMPT template refers to {{{index}}} but only "
                           f"{len(values)} values follow it")
        pieces.append(text[position:match.start()])
        pieces.extend(_pieces(values[index]))
        position = match.end()
    pieces.append(text[position:])
    return pieces

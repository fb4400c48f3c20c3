"""Prompts: the three spellings normalized to one template, rendered document-first.

Contract: `template(call, prompt)` turns a prompt argument into a `Template`, a sequence of text
pieces and field references. The three spellings of a prompt normalize to the same template:

    PROMPT('Is this about cats? {0}', body)
    ('Is this about cats? ', body)
    'Is this about cats? ' || body

For one candidate (the text values of a template's fields), `render` builds the engine prompt of
a call's answer kind: the filter layout of `engine.prompts` for TRUE/FALSE and scores over one
row, the join layout for a pair of rows (around the anchor), the classify layout (the labels
listed, with their descriptions) and the completion layout; `row_prompt` and `pair_prompt` are
the first two. Every layout puts the same document text first, so one document prefix serves
the filters, joins, classifications and completions asked about it. The document holds the
field values; the question is the user's text with each field reference replaced by a name for
the document (user text written before the first reference therefore moves after the document):

- one row, one field: references become "DOCUMENT"; a reference at either end of the template is
  just the slot the document came from and is dropped: ('Is it about cats? ', body) asks
  "Is it about cats?".
- one row, several fields: the document lists them as labelled lines ("title: ...\\nbody: ...")
  and each reference becomes its label, so there is still one reusable prefix per row.
- a pair of rows: references become "DOCUMENT 0" (the anchor, whose KV is reused) and
  "DOCUMENT 1" (the partner); each side's fields form its document as above.

Fields reading no table (constants, inlined parameters) are rendered inline in the question. A
classification or completion may omit the question (`AI.CLASSIFY(body, [...])`); a TRUE/FALSE
question may not. Malformed prompts raise `SqlError` (42883 for a bad PROMPT template, 22023 for
no question).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from heron.engine.api import AnswerKind
from heron.engine.prompts import (
    Prompt,
    classify_prompt,
    completion_prompt,
    filter_prompt,
    join_prompt,
)
from heron.planner.dialect import Prompt as PromptCall
from heron.planner.errors import SqlError, SqlState
from heron.planner.functions import AnswerSpec

_PLACEHOLDER = re.compile(r"\{(\d+)\}")


@dataclass(frozen=True, slots=True)
class Template:
    """A prompt: text pieces (str) and references to `fields` (int indexes); adjacent text is
    merged, so equivalent spellings compare equal. The field expressions are never mutated."""

    parts: tuple[str | int, ...]
    fields: tuple[exp.Expression, ...]

    def field_sql(self) -> tuple[str, ...]:
        return tuple(f.sql(dialect="duckdb") for f in self.fields)


# What a classification asks when its input is only the document.
DEFAULT_CLASSIFY_QUESTION = "Which category describes the document best?"


def template(function: str, prompt: exp.Expression, *, needs_question: bool = True) -> Template:
    """The normalized template of `prompt`, the prompt argument of a call to `function`;
    `needs_question`: refuse a prompt that is only documents (TRUE/FALSE questions)."""
    fields: list[exp.Expression] = []
    normalized: list[str | int] = []
    for part in _pieces(prompt):
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
    if needs_question and not has_text and all(f.find(exp.Column) is not None for f in fields):
        raise SqlError(SqlState.INVALID_PARAMETER_VALUE, f"{function} needs a question",
                       hint=f"For example {function}(('Is this review positive? ', body)).")
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
    if isinstance(node, PromptCall):
        return _prompt_function(node)
    if isinstance(node, exp.Literal):
        return [node.this if node.is_string else str(node.this)]
    return [node]


def _prompt_function(call: PromptCall) -> list[str | exp.Expression]:
    text_node, values = call.this, list(call.expressions)
    if not (isinstance(text_node, exp.Literal) and text_node.is_string):
        raise SqlError(SqlState.UNDEFINED_FUNCTION,
                       "PROMPT needs a string literal template as its first argument",
                       hint="For example PROMPT('Does {0} mention a dog?', body).")
    text = text_node.this
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


def field_label(template: Template, index: int) -> str:
    """A field's name in a document of several fields: its column name, or its SQL when
    another field has the same name."""
    field = template.fields[index]
    name = field.alias_or_name
    if not name or sum(f.alias_or_name == name for f in template.fields) > 1:
        return field.sql()
    return name


def document(template: Template, indexes: Sequence[int], values: Sequence[str]) -> str:
    """The document made of the given fields' values."""
    if len(indexes) == 1:
        return values[indexes[0]]
    return "\n".join(f"{field_label(template, i)}: {values[i]}" for i in indexes)


def question(template: Template, names: dict[int, str], values: Sequence[str],
             drop_edges: bool) -> str:
    """The user's text with document fields named by `names` and constants inlined."""
    parts = template.parts
    rendered = []
    for position, part in enumerate(parts):
        if isinstance(part, str):
            rendered.append(part)
        elif part not in names:
            rendered.append(values[part])
        elif drop_edges and (_only_references(parts[:position], names)
                             or _only_references(parts[position + 1:], names)):
            continue
        else:
            rendered.append(names[part])
    return " ".join("".join(rendered).split())


def _only_references(parts: Sequence[str | int], names: dict[int, str]) -> bool:
    return all((isinstance(p, int) and p in names) or (isinstance(p, str) and not p.strip())
               for p in parts)


def render(template: Template, spec: AnswerSpec, anchor_fields: Sequence[int],
           partner_fields: Sequence[int], values: Sequence[str]) -> Prompt:
    """The engine prompt of one candidate: `anchor_fields` form the document (the reusable
    prefix); `partner_fields`, when any, a TRUE/FALSE pair's second document."""
    if spec.kind in (AnswerKind.BOOLEAN, AnswerKind.SCORE):
        if partner_fields:
            return pair_prompt(template, anchor_fields, partner_fields, values)
        return row_prompt(template, anchor_fields, values)
    fields = sorted([*anchor_fields, *partner_fields])
    text = question(template, _document_names(template, fields), values,
                    drop_edges=len(fields) == 1)
    doc = document(template, fields, values) if fields else ""
    if spec.kind is AnswerKind.TEXT:
        return completion_prompt(doc, text)
    return classify_prompt(doc, _classify_question(text, spec), spec.labels)


def _classify_question(text: str, spec: AnswerSpec) -> str:
    text = " ".join(part for part in (spec.task, text) if part) or DEFAULT_CLASSIFY_QUESTION
    described = [f"- {label}: {description}"
                 for label, description in zip(spec.labels, spec.descriptions, strict=True)
                 if description]
    return text + ("\n\nWhat the categories mean:\n" + "\n".join(described) if described else "")


def _document_names(template: Template, doc_fields: Sequence[int]) -> dict[int, str]:
    if len(doc_fields) == 1:
        return {doc_fields[0]: "DOCUMENT"}
    return {i: field_label(template, i) for i in doc_fields}


def row_prompt(template: Template, doc_fields: Sequence[int], values: Sequence[str]) -> Prompt:
    text = question(template, _document_names(template, doc_fields), values,
                    drop_edges=len(doc_fields) == 1)
    return filter_prompt(document(template, doc_fields, values) if doc_fields else "", text)


def pair_prompt(template: Template, anchor_fields: Sequence[int], partner_fields: Sequence[int],
                values: Sequence[str]) -> Prompt:
    names = {i: "DOCUMENT 0" for i in anchor_fields} | {i: "DOCUMENT 1" for i in partner_fields}
    text = question(template, names, values, drop_edges=False)
    return join_prompt(document(template, anchor_fields, values), text,
                       document(template, partner_fields, values))

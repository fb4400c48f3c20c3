"""Rendering a normalized prompt template into the engine's document-first prompts.

Contract: for one candidate (the text values of a template's fields), `row_prompt` renders the
filter layout and `pair_prompt` the join layout of `engine.prompts`. The document holds the field
values; the question is the user's text with each field reference replaced by a name for the
document (user text written before the first reference therefore moves after the document):

- one row, one field: references become "DOCUMENT"; a reference at either end of the template is
  just the slot the document came from and is dropped: ('Is it about cats? ', body) asks
  "Is it about cats?".
- one row, several fields: the document lists them as labelled lines ("title: ...\\nbody: ...")
  and each reference becomes its label, so there is still one reusable prefix per row.
- a pair of rows: references become "DOCUMENT 0" (the anchor, whose KV is reused) and
  "DOCUMENT 1" (the partner); each side's fields form its document as above.

Fields reading no table (constants, inlined parameters) are rendered inline in the question.
"""

from __future__ import annotations

from collections.abc import Sequence

from heron.engine.prompts import Prompt, filter_prompt, join_prompt
from heron.planner.aicalls import Template


def field_label(template: Template, index: int) -> str:
    field = template.fields[index]
    return field.alias_or_name or field.sql()


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


def row_prompt(template: Template, doc_fields: Sequence[int], values: Sequence[str]) -> Prompt:
    if len(doc_fields) == 1:
        names = {doc_fields[0]: "DOCUMENT"}
    else:
        names = {i: field_label(template, i) for i in doc_fields}
    text = question(template, names, values, drop_edges=len(doc_fields) == 1)
    return filter_prompt(document(template, doc_fields, values) if doc_fields else "", text)


def pair_prompt(template: Template, anchor_fields: Sequence[int], partner_fields: Sequence[int],
                values: Sequence[str]) -> Prompt:
    names = {i: "DOCUMENT 0" for i in anchor_fields} | {i: "DOCUMENT 1" for i in partner_fields}
    text = question(template, names, values, drop_edges=False)
    return join_prompt(document(template, anchor_fields, values), text,
                       document(template, partner_fields, values))

"""The versioned prompt layout (DESIGN §3): document first, question after.

A ``Prompt`` is split into a reusable ``prefix`` and a per-question ``suffix``. The engine
tokenizes the two parts separately and concatenates the ids, so the KV of a prefix depends only
on the prefix text and serves every suffix that follows it: every question about one document
(filter) and every partner of one anchor (join).

The wording is part of the answer: changing any string here changes model outputs, so bump
``TEMPLATE_VERSION`` with it (caches keyed by the version stay correct). Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass

TEMPLATE_VERSION = 1

_DOCUMENT = "DOCUMENT:\n"
_QUESTION = "Evaluate TRUE or FALSE for the following question: "
_CLASSIFY = "Answer with exactly one of the categories below for the following question: "
_ANSWER = "\nANSWER:"


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt; the answer is read at (or, for a label or a text, continues from) the
    position after ``suffix``."""

    prefix: str  # reusable part: the document comes first, so its KV serves every question
    suffix: str  # per-question tail, ends right before the answer token


def filter_prompt(document: str, question: str) -> Prompt:
    """Prompt asking ``question`` about one ``document`` (AI.IF / AI_FILTER over one row)."""
    return Prompt(prefix=_DOCUMENT + document, suffix="\n\n" + _QUESTION + question + _ANSWER)


def join_prompt(anchor: str, question: str, partner: str) -> Prompt:
    """Prompt asking ``question`` about a pair: ``anchor`` is DOCUMENT 0, ``partner`` DOCUMENT 1.

    Everything up to the partner's text, heading included, belongs to the anchor's prefix, so each
    pair costs only the partner document plus the answer tail.
    """
    prefix = "".join((_DOCUMENT, anchor, "\n\n(The document above is DOCUMENT 0.)\n\n",
                      _QUESTION, question, "\n\nDOCUMENT 1:\n"))  # one copy of a long anchor
    return Prompt(prefix=prefix, suffix=partner + _ANSWER)


def classify_prompt(document: str, question: str, labels: tuple[str, ...]) -> Prompt:
    """Prompt asking which of ``labels`` answers ``question`` about ``document`` (AI.CLASSIFY).

    The engine scores each label as a continuation " <label>" of the suffix; the categories are
    listed in the suffix, so the document's KV is shared with filters over the same document.
    """
    categories = "".join(f"\n- {label}" for label in labels)
    return Prompt(
        prefix=_DOCUMENT + document,
        suffix="\n\n" + _CLASSIFY + question + "\n\nCategories:" + categories + _ANSWER,
    )


def completion_prompt(document: str, instruction: str) -> Prompt:
    """Prompt asking for text about ``document`` (AI_COMPLETE / AI.GENERATE); the answer is the
    model's continuation after the suffix."""
    return Prompt(prefix=_DOCUMENT + document, suffix="\n\n" + instruction + _ANSWER)

"""The prompt layout is a contract (DESIGN §3): exact strings, document first."""

from __future__ import annotations

import pickle

from heron.engine.prompts import (
    TEMPLATE_VERSION,
    Prompt,
    classify_prompt,
    completion_prompt,
    filter_prompt,
    join_prompt,
)


def test_filter_layout() -> None:
    p = filter_prompt("Great film.", "Is it positive?")
    assert p.prefix == "DOCUMENT:\nGreat film."
    assert p.suffix == (
        "\n\nEvaluate TRUE or FALSE for the following question: Is it positive?\nANSWER:"
    )


def test_join_layout_puts_partner_heading_in_prefix() -> None:
    p = join_prompt("Aspect: plot", "Does DOCUMENT 1 discuss DOCUMENT 0?", "The plot twists.")
    assert p.prefix == (
        "DOCUMENT:\nAspect: plot\n\n(The document above is DOCUMENT 0.)\n\n"
        "Evaluate TRUE or FALSE for the following question: Does DOCUMENT 1 discuss DOCUMENT 0?"
        "\n\nDOCUMENT 1:\n"
    )
    assert p.suffix == "The plot twists.\nANSWER:"


def test_classify_and_completion_layouts_share_the_document_prefix() -> None:
    p = classify_prompt("Great film.", "What is the sentiment?", ("positive", "negative"))
    assert p.prefix == filter_prompt("Great film.", "x").prefix
    assert p.suffix == (
        "\n\nAnswer with exactly one of the categories below for the following question: "
        "What is the sentiment?\n\nCategories:\n- positive\n- negative\nANSWER:"
    )
    c = completion_prompt("Great film.", "Summarize it in five words.")
    assert c.prefix == p.prefix and c.suffix == "\n\nSummarize it in five words.\nANSWER:"


def test_prompt_is_frozen_and_picklable() -> None:
    p = filter_prompt("d", "q")
    assert pickle.loads(pickle.dumps(p)) == p
    assert Prompt("a", "b") == Prompt("a", "b")
    assert TEMPLATE_VERSION == 1

"""Prompt spellings normalize to one template, and templates render to document-first prompts."""

import pytest

from heron.engine.prompts import filter_prompt, join_prompt
from heron.planner import dialect, functions, prompting
from heron.planner.dialect import AIFunction
from heron.planner.errors import SqlError


def template_of(sql: str) -> prompting.Template:
    """The template of the statement's only AI call, as the planner builds it."""
    (node,) = dialect.parse(sql).find_all(AIFunction)
    spec = functions.lookup(node).spec(node)
    return prompting.template(node.spelling, node.arguments[0],
                              needs_question=spec.kind.value in ("boolean", "score"))


SPELLINGS = [
    "SELECT 1 FROM t WHERE AI.IF(('Is this about cats? ', body))",
    "SELECT 1 FROM t WHERE AI_FILTER(PROMPT('Is this about cats? {0}', body))",
    "SELECT 1 FROM t WHERE AI.IF('Is this about cats? ' || body)",
    "SELECT 1 FROM t WHERE ai_filter(('Is this about cats? ', body))",
]


@pytest.mark.parametrize("sql", SPELLINGS)
def test_spellings_give_the_same_prompt(sql: str) -> None:
    template = template_of(sql)
    assert template.parts == ("Is this about cats? ", 0)
    assert prompting.row_prompt(template, [0], ["A cat sat."]) == filter_prompt(
        "A cat sat.", "Is this about cats?")


def test_text_before_the_reference_moves_after_the_document() -> None:
    template = template_of("SELECT AI.IF(PROMPT('Does {0} mention a dog?', body)) FROM t")
    prompt = prompting.row_prompt(template, [0], ["My dog barks."])
    assert prompt == filter_prompt("My dog barks.", "Does DOCUMENT mention a dog?")
    assert prompt.prefix.startswith("DOCUMENT:\nMy dog barks.")


def test_several_columns_of_a_row_form_one_labelled_document() -> None:
    template = template_of("SELECT AI.IF(PROMPT('Is {0} the title of {1}?', title, body)) FROM t")
    prompt = prompting.row_prompt(template, [0, 1], ["Cats", "A story."])
    assert prompt == filter_prompt("title: Cats\nbody: A story.", "Is title the title of body?")


def test_join_prompt_names_the_documents() -> None:
    template = template_of("SELECT 1 FROM r JOIN a ON AI_FILTER(PROMPT('Review: {0} Does it "
                           "discuss {1}?', r.body, a.aspect))")
    prompt = prompting.pair_prompt(template, [0], [1], ["Great ending.", "the ending"])
    assert prompt == join_prompt("Great ending.", "Review: DOCUMENT 0 Does it discuss DOCUMENT 1?",
                                 "the ending")
    # Anchored on the other side, the references swap and the prefix is the aspect's.
    swapped = prompting.pair_prompt(template, [1], [0], ["Great ending.", "the ending"])
    assert swapped.prefix.startswith("DOCUMENT:\nthe ending")
    assert "Review: DOCUMENT 1 Does it discuss DOCUMENT 0?" in swapped.prefix


def test_repeated_column_is_one_field() -> None:
    template = template_of("SELECT AI.IF(PROMPT('{0} or {1}?', body, body)) FROM t")
    assert len(template.fields) == 1


@pytest.mark.parametrize(
    ("sql", "sqlstate"),
    [
        ("SELECT AI.IF(body) FROM t", "22023"),
        ("SELECT AI.IF(PROMPT('{1}', body)) FROM t", "42883"),
        ("SELECT AI.IF(PROMPT(body, body)) FROM t", "42883"),
        ("SELECT AI.IF(('a', body), ('b', body)) FROM t", "42883"),
        ("SELECT AI_SENTIMENT(body) FROM t", "0A000"),
        ("SELECT AI.CLASSIFY(body, ['a']) FROM t", "22023"),
        ("SELECT AI.CLASSIFY(body, body) FROM t", "22023"),
        ("SELECT AI_COMPLETE(('Sum up ', body), 0) FROM t", "22023"),
        ("SELECT AI.CLASSIFY(body, ['a', 'b'], {'output_mode': 'multi'}) FROM t", "0A000"),
    ],
)
def test_malformed_calls_are_refused_with_a_sqlstate(sql: str, sqlstate: str) -> None:
    with pytest.raises(SqlError) as info:
        template_of(sql)
    assert info.value.sqlstate == sqlstate


def test_every_layout_starts_with_the_same_document_prefix() -> None:
    """A filter, a join anchored on the document, a classification and a completion of the same
    document share its prefix (the join's extends it), so its KV serves them all."""
    doc = "The ending is perfect."
    filter_ = prompting.render(template_of("SELECT AI.IF(('Is it good? ', body)) FROM t"),
                               spec_of("SELECT AI.IF(('Is it good? ', body)) FROM t"), [0], [],
                               [doc])
    for sql, partner in [
            ("SELECT 1 FROM r JOIN a ON AI_FILTER(PROMPT('Does {0} discuss {1}?', r.body, "
             "a.aspect))", [1]),
            ("SELECT AI.CLASSIFY(body, ['good', 'bad']) FROM t", []),
            ("SELECT AI_COMPLETE(('Summarize ', body), 5) FROM t", []),
            ("SELECT AI.SCORE(('How good? ', body)) FROM t", [])]:
        prompt = prompting.render(template_of(sql), spec_of(sql), [0], partner,
                                  [doc, "the ending"][:1 + len(partner)])
        assert prompt.prefix.startswith(filter_.prefix), sql
        assert prompt.prefix == filter_.prefix or partner, sql


def spec_of(sql: str):
    (node,) = dialect.parse(sql).find_all(AIFunction)
    return functions.lookup(node).spec(node)

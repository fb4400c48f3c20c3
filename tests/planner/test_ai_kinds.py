"""Every answer kind through the planner with a real engine (a tiny random-weight Qwen3): the
values equal the engine's own answers to the prompts the planner should have built, and one
document prefix serves the filter and the classification of the same document.
"""

import pytest
from support.engine_reference import boolean

from heron.catalog import Database
from heron.engine.api import AnswerKind, Request
from heron.engine.prompts import classify_prompt, completion_prompt, filter_prompt
from heron.planner import Planner

DOCS = ["The ending is perfect.", "Wooden acting, dull plot.", "Gorgeous music.", None]
LABELS = ("positive", "negative", "mixed")


@pytest.fixture
def planner(tmp_path, tiny_engine):
    database = Database(tmp_path, load_demo=False)
    con = database.connect()
    con.execute("CREATE TABLE reviews (id INTEGER, body VARCHAR)")
    con.executemany("INSERT INTO reviews VALUES (?, ?)", list(enumerate(DOCS)))
    yield Planner(con, tiny_engine)
    database.close()


def rows(planner, sql):
    result = planner.execute(planner.prepare(sql))
    return [tuple(r.values()) for r in result.rows.read_all().to_pylist()], result.work


def test_score_is_the_engines_probability_of_true(planner, tiny_engine):
    got, (work,) = rows(planner, "SELECT id, AI.SCORE(('Is it positive? ', body)) FROM reviews "
                                 "ORDER BY id")
    docs = [d for d in DOCS if d is not None]
    request = Request(AnswerKind.SCORE, tuple(filter_prompt(d, "Is it positive?") for d in docs))
    scores = dict(zip(docs, tiny_engine.answer(request).values, strict=True))
    # Exactly equal: the engine's answers do not depend on what else it ran, or its cache.
    assert [i for i, _ in got] == list(range(len(DOCS)))
    for (_, score), doc in zip(got, DOCS, strict=True):
        assert score == (None if doc is None else scores[doc])
    assert work.operator.label == "AI Score" and work.metrics.prompts == len(docs)
    # The boolean and the score of the same question agree.
    truth = tiny_engine.answer(boolean([filter_prompt(d, "Is it positive?") for d in docs]))
    assert [s > 0.5 for s in scores.values()] == list(truth.values)


def test_classify_answers_the_engines_label(planner, tiny_engine):
    got, (work,) = rows(planner, f"SELECT id, AI.CLASSIFY(body, {list(LABELS)}) FROM reviews "
                                 "ORDER BY id")
    docs = [d for d in DOCS if d is not None]
    prompts = tuple(classify_prompt(d, "Which category describes the document best?", LABELS)
                    for d in docs)
    labels = dict(zip(docs, tiny_engine.answer(Request(AnswerKind.LABEL, prompts, LABELS))
                      .values, strict=True))
    assert got == [(i, labels.get(d)) for i, d in enumerate(DOCS)]
    assert work.operator.label == "AI Classify"


def test_complete_answers_the_engines_text(planner, tiny_engine):
    got, _ = rows(planner, "SELECT id, AI_COMPLETE(('Summarize: ', body), 5) FROM reviews "
                           "ORDER BY id")
    docs = [d for d in DOCS if d is not None]
    prompts = tuple(completion_prompt(d, "Summarize:") for d in docs)
    texts = dict(zip(docs, tiny_engine.answer(Request(AnswerKind.TEXT, prompts, max_tokens=5))
                     .values, strict=True))
    assert got == [(i, texts.get(d)) for i, d in enumerate(DOCS)]


def test_a_filter_and_a_classification_share_the_document_prefix(planner):
    _, (first, second) = rows(planner, "SELECT id FROM reviews WHERE AI.IF(('Is it long? ', "
                                       f"body)) OR AI.CLASSIFY(body, {list(LABELS)}) = 'mixed'")
    # The second operator found every document's KV resident: only its question ran.
    assert second.metrics.cached_tokens > 0
    assert second.metrics.fresh_tokens < second.metrics.input_tokens

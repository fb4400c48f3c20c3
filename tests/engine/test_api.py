"""The engine contract: requests validate themselves and pickle compactly; metrics add up."""

from __future__ import annotations

import pickle

import pytest

from heron.engine.api import AnswerKind, EngineError, Metrics, Request
from heron.engine.prompts import join_prompt


def test_a_request_pickles_each_distinct_text_once() -> None:
    # A join's anchor prefix repeated by every pair, built as separate (equal) strings.
    anchors = ["Report " + "lorem ipsum " * 400 + str(i) for i in range(2)]
    partners = [f"term {j}" for j in range(300)]
    prompts = tuple(join_prompt(a, "Does DOCUMENT 1 occur?", p) for a in anchors for p in partners)
    assert prompts[0].prefix is not prompts[1].prefix  # pickle's memo alone would not help
    request = Request(AnswerKind.BOOLEAN, prompts)
    data = pickle.dumps(request)
    assert pickle.loads(data) == request
    distinct = sum(len(t) for t in {*(p.prefix for p in prompts), *(p.suffix for p in prompts)})
    assert len(data) < distinct + 20 * len(prompts)
    assert len(data) < len(pickle.dumps(prompts)) / 50


def test_requests_are_checked_when_built() -> None:
    with pytest.raises(EngineError, match="at least two labels"):
        Request(AnswerKind.LABEL, (), labels=("only",))
    with pytest.raises(EngineError, match="labels must be distinct"):
        Request(AnswerKind.LABEL, (), labels=("a", "b", "a"))
    with pytest.raises(EngineError, match="labels belong to LABEL requests, not BOOLEAN"):
        Request(AnswerKind.BOOLEAN, (), labels=("a", "b"))
    with pytest.raises(EngineError, match="max_tokens >= 1"):
        Request(AnswerKind.TEXT, ())
    with pytest.raises(EngineError, match="max_tokens belongs to TEXT requests, not SCORE"):
        Request(AnswerKind.SCORE, (), max_tokens=5)
    labelled = Request(AnswerKind.LABEL, (), labels=("a", "b"))
    assert pickle.loads(pickle.dumps(labelled)) == labelled


def test_metrics_add_and_merge_every_field() -> None:
    a = Metrics(1, 10, 4, 6, 0.5, 3)
    b = Metrics(2, 20, 20, 0, 1.5, 0)
    assert a + b == Metrics(3, 30, 24, 6, 2.0, 3)
    a.merge(b)
    assert a == Metrics(3, 30, 24, 6, 2.0, 3)

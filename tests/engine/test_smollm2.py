"""The embedded default model (SmolLM2-135M from GGUF) against transformers on the same folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.engine_reference import boolean, full_ids, reference_logits

from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.prompts import filter_prompt, join_prompt

pytestmark = pytest.mark.timeout(300)


def test_embedded_default_matches_transformers(smollm2_folder: Path) -> None:
    from transformers import AutoModelForCausalLM

    engine = LocalEngine(EngineConfig())
    assert engine.info.architecture == "llama" and engine.info.num_layers == 30
    assert engine.info.vocab_size == 49152
    # SmolLM2 spells TRUE/FALSE with several tokens; the first ones stand for the variants.
    assert set(engine.answer_tokens.truthy).isdisjoint(engine.answer_tokens.falsy)
    assert engine.tokenizer.lead == ()

    review = "I loved this movie. The ending made me cry."
    prompts = [
        filter_prompt(review, "Is the review positive?"),
        filter_prompt(review, "Does the review discuss the ending?"),
        filter_prompt("Worst two hours of my life.", "Is the review positive?"),
        join_prompt("Aspect: ending", "Does DOCUMENT 1 discuss DOCUMENT 0?", review),
    ]
    evaluation = engine.evaluate(boolean(prompts))
    metrics = evaluation.metrics
    assert metrics.cached_tokens > 0  # the two questions on `review` share its prefix

    model = AutoModelForCausalLM.from_pretrained(smollm2_folder, dtype=torch.float32).eval()
    ids = full_ids(engine.tokenizer.encode_prompts(prompts))
    expected = reference_logits(model, ids, engine.answer_tokens.ids)
    torch.testing.assert_close(evaluation.answer_logits, expected, atol=2e-4, rtol=0)

    again = engine.answer(boolean(prompts))
    assert again.metrics.fresh_tokens < metrics.fresh_tokens
    n = len(engine.answer_tokens.truthy)
    ref = torch.logsumexp(expected[:, :n], -1) > torch.logsumexp(expected[:, n:], -1)
    assert again.values == tuple(ref.tolist())
    engine.close()

"""Model specs from config.json, RoPE frequencies, and answer-token selection."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from support.engine_reference import qwen_tokenizer_json

from heron.engine.answers import AnswerTokens
from heron.engine.api import EngineError
from heron.engine.rope import inverse_frequencies
from heron.engine.spec import ModelSpec
from heron.engine.tokenizer import PromptTokenizer

BASE = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 100,
    "max_position_embeddings": 2048,
}
LLAMA3 = {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


def test_rope_parameters_and_legacy_keys_agree() -> None:
    new = ModelSpec.from_config(
        {**BASE, "rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, **LLAMA3}}
    )
    old = ModelSpec.from_config(
        {**BASE, "rope_theta": 5e5, "rope_scaling": {"type": "llama3", **LLAMA3}}
    )
    assert new == old
    assert new.rope.kind == "llama3" and new.rope.theta == 5e5
    assert new.head_dim == 16 and new.num_kv_heads == 4 and not new.qk_norm


def test_qwen3_spec() -> None:
    spec = ModelSpec.from_config({**BASE, "model_type": "qwen3", "head_dim": 32})
    assert spec.qk_norm and spec.head_dim == 32 and spec.rope.kind == "default"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"model_type": "gpt2"}, "unsupported model_type"),
        ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1.0}}, "unsupported rope_type"),
        ({"hidden_act": "gelu"}, "hidden_act"),
        ({"max_position_embeddings": None}, r"max_position_embeddings .* \(the model's context\)"),
        ({"max_position_embeddings": 0}, "max_position_embeddings"),
    ],
)
def test_unsupported_configs_are_refused(patch: dict, message: str) -> None:
    with pytest.raises(EngineError, match=message):
        ModelSpec.from_config({**BASE, **patch})


def test_llama3_frequencies_match_transformers() -> None:
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rope = {"rope_type": "llama3", "rope_theta": 5e5, **LLAMA3}
    config = LlamaConfig(**{**BASE, "head_dim": 64, "rope_parameters": rope})
    expected, _ = ROPE_INIT_FUNCTIONS["llama3"](config, "cpu")
    spec = ModelSpec.from_config({**BASE, "head_dim": 64, "rope_parameters": rope})
    torch.testing.assert_close(inverse_frequencies(spec.rope, 64), expected.float())


def test_qwen3_answer_tokens() -> None:
    tokenizer = PromptTokenizer(qwen_tokenizer_json())
    answers = AnswerTokens.from_encoder(tokenizer.encode)
    assert len(answers.truthy) == 4 and len(answers.falsy) == 4
    assert answers.ids == answers.truthy + answers.falsy
    assert tokenizer.lead == ()


def test_overlapping_answer_tokens_are_refused() -> None:
    with pytest.raises(EngineError, match="TRUE from FALSE"):
        AnswerTokens.from_encoder(lambda texts: [(7, len(t)) for t in texts])


def test_decide_uses_logsumexp_over_variants() -> None:
    answers = AnswerTokens(truthy=(0, 1), falsy=(2,))
    # Two middling truthy variants together beat one stronger falsy logit.
    decided, p_true = answers.decide(torch.tensor([[1.0, 1.0, 1.5], [0.0, 0.0, 3.0]]))
    assert decided == [True, False]
    assert p_true[0] == pytest.approx(2 / (2 + math.exp(0.5)), rel=1e-5)


def test_mandatory_bos_goes_into_the_prefix(tmp_path: Path) -> None:
    data = json.loads(qwen_tokenizer_json().read_text())
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            "<|endoftext|>": {"id": "<|endoftext|>", "ids": [151643], "tokens": ["<|endoftext|>"]}
        },
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    tokenizer = PromptTokenizer(path)
    assert tokenizer.lead == (151643,)
    from heron.engine.prompts import Prompt

    prefix, suffix = tokenizer.encode_prompts([Prompt("doc", " tail")]).ids(0)
    assert prefix[0] == 151643 and 151643 not in suffix

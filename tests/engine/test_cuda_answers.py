"""The CUDA engine (bf16 weights and activations, the Triton kernels, the step loop and its warm-up)
against the float32 reference, transformers on CPU: answer-token logits of filters, a join and
second questions over cached documents within bf16's rounding — at most three times as far from
the reference as transformers itself in bf16 (on the H200: 0.7x for Qwen3, 2.0x for Llama). The
max |Δ| is printed (run with ``-s``) for bench/NOTES.md."""

from __future__ import annotations

import copy

import pytest
import torch
from support.engine_reference import boolean, full_ids, mixed_prompts, reference_logits

from heron.engine.attention import fa3
from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.prompts import filter_prompt

REVIEW = "The film drags in the middle, but the ending is a triumph and the score soars."
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")


_FA3 = pytest.mark.skipif(not fa3.available(), reason="needs vLLM's FlashAttention-3 library")


@pytest.mark.parametrize(("checkpoint", "attention"), [
    ("tiny_qwen3", "segments"), ("tiny_llama3", "segments"),
    pytest.param("tiny_qwen3_d128", "fa3", marks=_FA3)])
def test_answer_logits_are_the_float32_references_within_bf16_rounding(
    checkpoint: str, attention: str, request: pytest.FixtureRequest,
) -> None:
    folder, model = request.getfixturevalue(checkpoint)
    model16 = copy.deepcopy(model).to(torch.bfloat16)
    engine = LocalEngine(EngineConfig(model=str(folder), device="cuda", chunk_tokens=64,
                                      prefix_block_tokens=8, kv_cache_bytes=1 << 28,
                                      attention=attention, deterministic=attention != "fa3"))
    try:
        first = mixed_prompts()  # filters, a join, rows of different lengths
        # Second questions: the same document, its KV now in the arena.
        second = [filter_prompt(REVIEW, question) for question in ("Is it about a farm?",
                                                                    "Is the score praised?")]
        assert second[0].prefix == first[0].prefix
        for prompts in (first, second, first):
            evaluation = engine.evaluate(boolean(prompts))
            ids = full_ids(engine.tokenizer.encode_prompts(prompts))
            expected = reference_logits(model, ids, engine.answer_tokens.ids)
            rounding = (reference_logits(model16, ids, engine.answer_tokens.ids)
                        - expected).abs().max().item()
            delta = (evaluation.answer_logits.float().cpu() - expected).abs().max().item()
            print(f"{checkpoint}: max |Δ| {delta:.4f} (transformers in bf16: {rounding:.4f}) "
                  f"of logits up to {expected.abs().max().item():.2f}")
            assert delta <= 3 * rounding + 1e-3
    finally:
        engine.close()

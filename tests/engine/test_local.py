"""LocalEngine against transformers on tiny random-weight checkpoints (CPU, float32)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.engine_reference import boolean, mixed_prompts, reference_logits

from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.prompts import Prompt, filter_prompt

ATOL = 1e-4


def _expected(engine: LocalEngine, model: torch.nn.Module, prompts: list[Prompt]) -> torch.Tensor:
    ids = [pre + suf for pre, suf in engine.tokenizer.encode_prompts(prompts)]
    return reference_logits(model, ids, engine.answer_tokens.ids)


@pytest.mark.parametrize("checkpoint", ["tiny_qwen3", "tiny_llama3"])
def test_logits_match_transformers(checkpoint: str, request: pytest.FixtureRequest) -> None:
    folder, model = request.getfixturevalue(checkpoint)
    engine = LocalEngine(EngineConfig(model=str(folder)))
    prompts = mixed_prompts()
    logits, metrics = engine.answer_logits(prompts)
    expected = _expected(engine, model, prompts)
    torch.testing.assert_close(logits, expected, atol=ATOL, rtol=0)

    answers = engine.answer(boolean(prompts))  # second call: all prefixes now come from the cache
    n_truthy = len(engine.answer_tokens.truthy)
    ref_true = torch.logsumexp(expected[:, :n_truthy], -1) > torch.logsumexp(
        expected[:, n_truthy:], -1
    )
    assert answers.values == tuple(ref_true.tolist())
    assert all(0.0 <= p <= 1.0 for p in answers.scores)
    assert metrics.prompts == len(prompts)


def test_prefix_sharing_and_cross_call_cache(tiny_qwen3: tuple[Path, torch.nn.Module]) -> None:
    folder, _ = tiny_qwen3
    engine = LocalEngine(EngineConfig(model=str(folder)))
    prompts = mixed_prompts()
    tokenized = engine.tokenizer.encode_prompts(prompts)
    total = sum(len(p) + len(s) for p, s in tokenized)

    first_logits, first = engine.answer_logits(prompts)
    # Within one call each distinct prefix runs once: 3 filter questions share a document and
    # 2 join partners share an anchor.
    distinct = {p for p, _ in tokenized}
    assert first.input_tokens == total
    assert first.fresh_tokens == sum(len(p) for p in distinct) + sum(len(s) for _, s in tokenized)
    assert first.cached_tokens == total - first.fresh_tokens > 0

    second_logits, second = engine.answer_logits(prompts)
    assert second.fresh_tokens == sum(len(s) for _, s in tokenized)  # only the suffixes ran
    assert second.fresh_tokens < first.fresh_tokens < second.input_tokens
    torch.testing.assert_close(second_logits, first_logits, atol=ATOL, rtol=0)
    assert (second_logits.argmax(-1) == first_logits.argmax(-1)).all()

    # A new question about cached documents is also served from their KV.
    novel = [filter_prompt("word " * 60, "Is it long?")]
    _, third = engine.answer_logits(novel)
    assert third.fresh_tokens == len(engine.tokenizer.encode_prompts(novel)[0][1])


@pytest.mark.parametrize(("chunk_tokens", "cache_bytes"), [(24, 256 << 20), (4096, 0), (40, 1)])
def test_chunking_and_eviction_do_not_change_answers(
    tiny_qwen3: tuple[Path, torch.nn.Module], chunk_tokens: int, cache_bytes: int
) -> None:
    folder, model = tiny_qwen3
    engine = LocalEngine(
        EngineConfig(model=str(folder), chunk_tokens=chunk_tokens, kv_cache_bytes=cache_bytes)
    )
    prompts = mixed_prompts() * 2  # duplicates: same prefix groups across chunks and waves
    expected = _expected(engine, model, prompts)
    for _ in range(2):
        logits, metrics = engine.answer_logits(prompts)
        torch.testing.assert_close(logits, expected, atol=ATOL, rtol=0)
        assert metrics.cached_tokens > 0  # within-call reuse survives an empty cache
    if cache_bytes < 1024:
        assert len(engine.cache) == 0


def test_empty_batch(tiny_qwen3: tuple[Path, torch.nn.Module]) -> None:
    engine = LocalEngine(EngineConfig(model=str(tiny_qwen3[0])))
    result = engine.answer(boolean([]))
    assert result.values == () and result.scores == ()
    assert result.metrics.input_tokens == 0 and result.metrics.fresh_tokens == 0


def test_info_and_count_tokens(tiny_qwen3: tuple[Path, torch.nn.Module]) -> None:
    folder, model = tiny_qwen3
    engine = LocalEngine(EngineConfig(model=str(folder)))
    assert engine.info.architecture == "qwen3"
    assert engine.info.num_layers == 2 and engine.info.hidden_size == 64
    assert engine.info.num_params == sum(p.numel() for p in model.parameters())
    assert engine.info.dtype == "float32" and engine.info.device == "cpu"
    assert engine.count_tokens(["hello world", ""]) == [2, 0]

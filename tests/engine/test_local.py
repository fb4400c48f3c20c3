"""LocalEngine against transformers on tiny random-weight checkpoints (CPU, float32): every answer
kind, the KV reuse the metrics report, and answers unchanged by chunk and arena sizes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from support.checkpoints import save_fp8_blocks
from support.engine_reference import (
    boolean,
    canonical_block_tokens,
    full_ids,
    mixed_prompts,
    reference_generate,
    reference_label_logprobs,
    reference_logits,
    with_fp8_linears,
)

from heron.engine.answers import read_answers
from heron.engine.api import AnswerKind, EngineError, Request
from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.prompts import Prompt, classify_prompt, completion_prompt, filter_prompt
from heron.engine.scheduler import Finished, drain

ATOL = 1e-4
CHECKPOINTS = ["tiny_qwen3", "tiny_llama3"]
REVIEWS = [
    "The film drags in the middle, but the ending is a triumph and the score soars.",
    "Worst two hours of my life; the acting is wooden.",
    "A quiet, patient drama.",
]
LABELS = ("positive", "negative", "mixed feelings")  # single- and multi-token labels


@pytest.fixture(params=CHECKPOINTS)
def checkpoint(request: pytest.FixtureRequest) -> tuple[Path, torch.nn.Module]:
    return request.getfixturevalue(request.param)


def _engine(folder: Path, background: bool = True, **config: object) -> LocalEngine:
    config.setdefault("prefix_block_tokens", 8)  # several blocks per document
    return LocalEngine(EngineConfig(model=str(folder), **config),  # type: ignore[arg-type]
                       background=background)


def test_answer_logits_match_transformers(checkpoint: tuple[Path, torch.nn.Module]) -> None:
    folder, model = checkpoint
    engine = _engine(folder, chunk_tokens=64)
    prompts = mixed_prompts()
    evaluation = engine.evaluate(boolean(prompts))
    ids = full_ids(engine.tokenizer.encode_prompts(prompts))
    expected = reference_logits(model, ids, engine.answer_tokens.ids)
    torch.testing.assert_close(evaluation.answer_logits, expected, atol=ATOL, rtol=0)
    assert evaluation.metrics.prompts == len(prompts)

    answers = engine.answer(boolean(prompts))  # second call: every prefix from the arena
    n_truthy = len(engine.answer_tokens.truthy)
    truthy, falsy = expected[:, :n_truthy], expected[:, n_truthy:]
    assert answers.values == tuple((truthy.logsumexp(-1) > falsy.logsumexp(-1)).tolist())
    p_true = torch.softmax(torch.stack((truthy.logsumexp(-1), falsy.logsumexp(-1)), -1), -1)[:, 0]
    scores = engine.answer(Request(AnswerKind.SCORE, tuple(prompts)))
    assert scores.values == pytest.approx(p_true.tolist(), abs=1e-5)
    assert scores.scores == answers.scores == scores.values
    engine.close()


def test_fp8_answer_logits_match_transformers_with_fp8_linears(
    checkpoint: tuple[Path, torch.nn.Module],
) -> None:
    """``dtype="fp8"``: every decoder projection on quantized operands — the activations quantized
    by the norms and SiLU·mul that produce them — and nothing else changed."""
    folder, model = checkpoint
    engine = _engine(folder, chunk_tokens=64, dtype="fp8")
    prompts = mixed_prompts()
    evaluation = engine.evaluate(boolean(prompts))
    ids = full_ids(engine.tokenizer.encode_prompts(prompts))
    expected = reference_logits(with_fp8_linears(model), ids, engine.answer_tokens.ids)
    fp8_effect = (reference_logits(model, ids, engine.answer_tokens.ids) - expected).abs().max()
    assert fp8_effect > 0.01  # FP8 is not a no-op: the plain model's logits are far from these
    # Quantizing to e4m3 turns a float32 last-bit difference at a rounding boundary into a
    # whole e4m3 step, and where the float32 bits differ depends on the CPU's kernels (an AMD
    # EPYC dev machine: 3 of 7 tiny_llama3 prompts off by up to 0.04, the rest by 1e-6). So
    # most logits match to float32 rounding, and none is off by a tenth of FP8's own effect.
    difference = (evaluation.answer_logits - expected).abs()
    assert difference.median() < ATOL
    assert difference.max() < 0.1 * fp8_effect
    engine.close()


def test_fp8_block_quantized_checkpoint_loads_as_the_weights_it_stores(
    tiny_qwen3: tuple[Path, torch.nn.Module], tmp_path: Path,
) -> None:
    """A checkpoint in the layout of Qwen's -FP8 releases (FP8 weights, a scale per 32x32
    block): the engine answers as transformers does with the dequantized weights — for
    ``dtype="fp8"`` too, with those weights quantized again per channel."""
    folder, reference = save_fp8_blocks(tiny_qwen3[1], tmp_path / "fp8", (32, 32))
    prompts = mixed_prompts()
    for dtype, model in (("bf16", reference), ("fp8", with_fp8_linears(reference))):
        engine = _engine(folder, chunk_tokens=64, dtype=dtype)
        evaluation = engine.evaluate(boolean(prompts))
        ids = full_ids(engine.tokenizer.encode_prompts(prompts))
        expected = reference_logits(model, ids, engine.answer_tokens.ids)
        torch.testing.assert_close(evaluation.answer_logits, expected, atol=ATOL, rtol=0)
        assert engine.info.num_params == sum(p.numel() for p in tiny_qwen3[1].parameters())
        engine.close()
    # Not the unquantized model: the blocks' rounding shows.
    ids = full_ids(engine.tokenizer.encode_prompts(prompts))
    assert (reference_logits(tiny_qwen3[1], ids, engine.answer_tokens.ids)
            - reference_logits(reference, ids, engine.answer_tokens.ids)).abs().max() > 1e-3


def test_an_fp8_weight_without_its_scale_is_refused(
    tiny_qwen3: tuple[Path, torch.nn.Module], tmp_path: Path,
) -> None:
    from safetensors.torch import load_file, save_file

    folder, _ = save_fp8_blocks(tiny_qwen3[1], tmp_path / "fp8", (32, 32))
    tensors = load_file(folder / "model.safetensors")
    del tensors["model.layers.1.mlp.down_proj.weight_scale_inv"]
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(EngineError, match="down_proj.weight_scale_inv"):
        _engine(folder)


@pytest.mark.parametrize("quantization", [
    {"quant_method": "gptq", "bits": 4},
    {"quant_method": "fp8"},  # per-tensor scales: no weight_block_size
])
def test_other_quantized_checkpoints_are_refused_clearly(
    tiny_qwen3: tuple[Path, torch.nn.Module], tmp_path: Path, quantization: dict[str, object],
) -> None:
    folder = tmp_path / "quantized"
    shutil.copytree(tiny_qwen3[0], folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config,
                                                    "quantization_config": quantization}))
    with pytest.raises(EngineError, match="unsupported quantization_config"):
        _engine(folder)


def test_label_scores_match_transformers(checkpoint: tuple[Path, torch.nn.Module]) -> None:
    folder, model = checkpoint
    engine = _engine(folder, chunk_tokens=48)
    prompts = [classify_prompt(r, "What is the sentiment?", LABELS) for r in REVIEWS]
    prompts.append(classify_prompt(REVIEWS[0], "How does it end?", LABELS))  # shared document
    request = Request(AnswerKind.LABEL, tuple(prompts), labels=LABELS)
    evaluation = engine.evaluate(request)
    label_ids = [list(ids) for ids in engine.tokenizer.encode([" " + label for label in LABELS])]
    assert max(len(ids) for ids in label_ids) > 1  # a label of several tokens is exercised
    ids = full_ids(engine.tokenizer.encode_prompts(prompts))
    expected = reference_label_logprobs(model, ids, label_ids)
    torch.testing.assert_close(torch.from_numpy(evaluation.label_logprobs), expected,
                               atol=ATOL, rtol=0)

    answers = engine.answer(request)
    best = expected.argmax(-1)
    assert answers.values == tuple(LABELS[i] for i in best.tolist())
    chosen = torch.softmax(expected, -1).gather(1, best[:, None])[:, 0]
    assert answers.scores == pytest.approx(chosen.tolist(), abs=1e-4)
    # Input counts the label tokens fed to the model; the second call reuses every document.
    fed = sum(len(label) - 1 for label in label_ids)
    assert answers.metrics.input_tokens == sum(len(i) + fed for i in ids)
    assert answers.metrics.cached_tokens == sum(
        len(engine.tokenizer.encode_prompts([p]).ids(0)[0]) for p in prompts)
    engine.close()


def test_text_matches_greedy_generate(checkpoint: tuple[Path, torch.nn.Module]) -> None:
    folder, model = checkpoint
    engine = _engine(folder, chunk_tokens=40)
    prompts = [completion_prompt(r, "Summarize the review.") for r in REVIEWS]
    prompts.append(Prompt("", "Once upon a time"))  # no prefix at all
    request = Request(AnswerKind.TEXT, tuple(prompts), max_tokens=7)
    evaluation = engine.evaluate(request)
    ids = full_ids(engine.tokenizer.encode_prompts(prompts))
    stop = sorted(engine.tokenizer.stop_ids)
    for got, prompt_ids in zip(evaluation.generated, ids, strict=True):
        assert list(got) == reference_generate(model, prompt_ids, 7, stop)
    answers = engine.answer(request)
    assert answers.values == tuple(engine.tokenizer.decode(g) for g in evaluation.generated)
    assert all(score < 0 for score in answers.scores)  # mean log-probabilities
    assert answers.metrics.generated_tokens == sum(len(g) for g in evaluation.generated)
    engine.close()


def test_text_stops_at_the_models_eos(tiny_qwen3: tuple[Path, torch.nn.Module],
                                      tmp_path: Path) -> None:
    source, model = tiny_qwen3
    prompts = [completion_prompt(r, "Summarize the review.") for r in REVIEWS]
    first = _engine(source).evaluate(Request(AnswerKind.TEXT, tuple(prompts), max_tokens=5))
    # A checkpoint whose end-of-text token is one the first prompt generates after others.
    made = first.generated[0]
    k = next(i for i in range(1, len(made)) if made[i] not in made[:i])
    folder = tmp_path / "with-eos"
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    config["eos_token_id"] = eos = made[k]
    (folder / "config.json").write_text(json.dumps(config))
    engine = _engine(folder)
    assert eos in engine.tokenizer.stop_ids
    request = Request(AnswerKind.TEXT, tuple(prompts), max_tokens=5)
    evaluation = engine.evaluate(request)
    assert evaluation.generated[0] == made[: k + 1]  # stopped at the eos, which counts
    ids = full_ids(engine.tokenizer.encode_prompts(prompts))
    stop = sorted(engine.tokenizer.stop_ids)
    for got, prompt_ids in zip(evaluation.generated, ids, strict=True):
        assert list(got) == reference_generate(model, prompt_ids, 5, stop)
    answers = engine.answer(request)
    assert answers.values[0] == engine.tokenizer.decode(made[:k])  # the eos is not text
    engine.close()


def test_metrics_count_canonical_blocks_once_and_reuse_them_across_calls(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    engine = _engine(tiny_qwen3[0])
    prompts = mixed_prompts()
    tokenized = engine.tokenizer.encode_prompts(prompts)
    pairs = [tuple(map(tuple, tokenized.ids(i))) for i in range(len(prompts))]
    total = sum(len(p) + len(s) for p, s in pairs)

    first = engine.answer(boolean(prompts)).metrics
    assert first.input_tokens == total
    # Every distinct block once (3 questions share a review; 2 join partners share an anchor),
    # plus every suffix.
    assert first.fresh_tokens == canonical_block_tokens([p for p, _ in pairs], 8) + sum(
        len(s) for _, s in pairs)
    assert first.cached_tokens == total - first.fresh_tokens > 0

    second = engine.answer(boolean(prompts)).metrics
    assert second.fresh_tokens == sum(len(s) for _, s in pairs)  # only the suffixes ran
    # A new question about a cached document is served from its KV too.
    novel = engine.answer(boolean([filter_prompt("word " * 60, "Is it long?")])).metrics
    assert novel.fresh_tokens == len(engine.tokenizer.encode_prompts(
        [filter_prompt("x", "Is it long?")]).ids(0)[1])
    engine.close()


@pytest.mark.parametrize(("chunk_tokens", "arena_tokens"), [(24, 4096), (4096, 96), (40, 64)])
def test_chunk_and_arena_sizes_do_not_change_answers(
    tiny_qwen3: tuple[Path, torch.nn.Module], chunk_tokens: int, arena_tokens: int
) -> None:
    folder, model = tiny_qwen3
    kv_bytes_per_token = 2 * 2 * 2 * 16 * 4  # K and V, 2 layers, 2 kv heads, 16 dims, float32
    engine = _engine(folder, chunk_tokens=chunk_tokens,
                     kv_cache_bytes=arena_tokens * kv_bytes_per_token)
    prompts = mixed_prompts() * 2  # duplicates: same prefix groups across chunks
    expected = reference_logits(model, full_ids(engine.tokenizer.encode_prompts(prompts)),
                                engine.answer_tokens.ids)
    for _ in range(2):
        evaluation = engine.evaluate(boolean(prompts))
        torch.testing.assert_close(evaluation.answer_logits, expected, atol=ATOL, rtol=0)
        assert evaluation.metrics.cached_tokens > 0  # within-call reuse whatever the arena
    if arena_tokens < 100:
        assert engine.tree.evictions > 0
    engine.close()


def test_prompt_too_long_for_the_arena_fails_clearly(tiny_qwen3: tuple[Path, torch.nn.Module]
                                                     ) -> None:
    engine = _engine(tiny_qwen3[0], kv_cache_bytes=64 * 512)  # 64 tokens of KV
    with pytest.raises(EngineError, match="more than the KV cache holds.*--kv-cache-gb"):
        engine.answer(boolean([filter_prompt("word " * 100, "Long?")]))
    assert engine.answer(boolean([filter_prompt("short", "Short?")])).values  # still serves
    engine.close()


def test_empty_suffix_reads_the_answer_after_the_prefix(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    folder, model = tiny_qwen3
    engine = _engine(folder)
    prompts = [Prompt("DOCUMENT:\nA fine film. Is it good?\nANSWER:", ""), Prompt("", "TRUE?")]
    evaluation = engine.evaluate(boolean(prompts))
    expected = reference_logits(model, full_ids(engine.tokenizer.encode_prompts(prompts)),
                                engine.answer_tokens.ids)
    torch.testing.assert_close(evaluation.answer_logits, expected, atol=ATOL, rtol=0)
    with pytest.raises(EngineError, match="prompt 2 is empty"):
        engine.answer(boolean([prompts[0], Prompt("", "")]))
    engine.close()


def test_empty_request(tiny_qwen3: tuple[Path, torch.nn.Module]) -> None:
    engine = _engine(tiny_qwen3[0])
    for kind, extra in [(AnswerKind.BOOLEAN, {}), (AnswerKind.LABEL, {"labels": ("a", "b")}),
                        (AnswerKind.TEXT, {"max_tokens": 3})]:
        result = engine.answer(Request(kind, (), **extra))  # type: ignore[arg-type]
        assert result.values == () and result.scores == ()
        assert result.metrics.input_tokens == 0 and result.metrics.fresh_tokens == 0
    engine.close()


def test_info_count_tokens_and_close(tiny_qwen3: tuple[Path, torch.nn.Module]) -> None:
    folder, model = tiny_qwen3
    engine = _engine(folder)
    assert engine.info.architecture == "qwen3"
    assert engine.info.num_layers == 2 and engine.info.hidden_size == 64
    assert engine.info.num_params == sum(p.numel() for p in model.parameters())
    assert engine.info.dtype == "float32" and engine.info.device == "cpu"
    assert engine.count_tokens(["hello world", ""]) == [2, 0]
    engine.close()
    with pytest.raises(EngineError, match="closed"):
        engine.answer(boolean([filter_prompt("x", "y?")]))


def test_warm_up_runs_every_kind_and_leaves_an_empty_arena(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    """What a CUDA engine does before its step loop starts (called here on the CPU): answers
    afterwards are those of an engine that never warmed up, and no block stays cached."""
    prompts = mixed_prompts()
    cold = _engine(tiny_qwen3[0])
    expected = cold.answer(boolean(prompts))
    cold.close()
    warmed = _engine(tiny_qwen3[0], background=False)
    warmed.warm_up()
    assert warmed.scheduler.steps > 0 and warmed.tree.blocks == 0
    assert warmed.tree.cached_tokens == 0
    job = warmed.submit(boolean(prompts))
    while warmed.scheduler.step():
        pass
    evaluation = next(e for e in drain(job) if isinstance(e, Finished)).evaluation
    got = read_answers(evaluation, boolean(prompts), warmed.answer_tokens,
                       warmed.tokenizer.decode, warmed.tokenizer.stop_ids)
    assert got.values == expected.values and got.scores == expected.scores
    assert got.metrics.fresh_tokens == expected.metrics.fresh_tokens


def test_attention_fa3_without_its_library_is_refused_by_name(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    """On CPU (or without vLLM's FlashAttention-3) ``--attention fa3`` cannot run: the engine
    refuses to load, saying what it needs, rather than silently running segment attention."""
    with pytest.raises(EngineError, match="attention fa3 needs vLLM's FlashAttention-3"):
        LocalEngine(EngineConfig(model=str(tiny_qwen3[0]), attention="fa3",
                                 deterministic=False), background=False)

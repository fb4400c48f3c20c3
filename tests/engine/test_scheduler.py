"""The step loop on CPU with a real tiny model: canonical evaluation (answers bit-identical
whatever shares the chunk), fair shares between statements, prepared chunks, cancel, progress,
failure, tokenization once, and prefix sharing at block granularity."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from support.engine_reference import boolean, canonical_block_tokens, mixed_prompts

from heron.engine.answers import Evaluation
from heron.engine.api import AnswerKind, EngineCancelled, EngineError, Metrics, Request
from heron.engine.config import EngineConfig
from heron.engine.kv_cache import SEED_MIN_TOKENS
from heron.engine.local import LocalEngine
from heron.engine.prompts import classify_prompt, completion_prompt, filter_prompt, join_prompt
from heron.engine.scheduler import Failed, Finished, Job

BLOCK = 8
KV_BYTES_PER_TOKEN = 512  # tiny_qwen3: K and V, 2 layers, 2 kv heads, 16 dims, float32
LABELS = ("positive", "negative", "mixed feelings")
REVIEWS = [
    "The film drags in the middle, but the ending is a triumph and the score soars.",
    "Worst two hours of my life; the acting is wooden.",
    "A quiet, patient drama about two sisters and a farm.",
]


def _engine(folder: Path, **config: object) -> LocalEngine:
    config.setdefault("prefix_block_tokens", BLOCK)
    if config.get("device") == "cuda":  # by default an engine takes all free GPU memory
        config.setdefault("kv_cache_bytes", 1 << 28)
    return LocalEngine(EngineConfig(model=str(folder), **config), background=False)  # type: ignore[arg-type]


def _run(engine: LocalEngine, jobs: Sequence[Job], max_steps: int = 10_000
         ) -> list[Evaluation]:
    """Step until every job finished; their evaluations (raises the first failure)."""
    results: dict[int, Evaluation] = {}
    for _ in range(max_steps):
        for i, job in enumerate(jobs):
            while not job.events.empty():
                event = job.events.get()
                if isinstance(event, Failed):
                    raise event.error
                if isinstance(event, Finished):
                    results[i] = event.evaluation
        if len(results) == len(jobs):
            return [results[i] for i in range(len(jobs))]
        engine.scheduler.step()
    raise AssertionError("jobs did not finish")


def _requests() -> list[Request]:
    """One request of every kind, over documents that share blocks and prefixes."""
    classify = [classify_prompt(r, "What is the sentiment?", LABELS) for r in REVIEWS]
    complete = [completion_prompt(r, "Summarize it.") for r in REVIEWS[:2]]
    long_document = " ".join(REVIEWS * 8)  # ~200 tokens: long prefixes, and equal-shaped rows
    questions = ("Is it long?", "Is it sad?", "Is it fun?", "Is it dull?")
    return [
        boolean(mixed_prompts()),
        Request(AnswerKind.SCORE, tuple(filter_prompt(d, q) for d in [*REVIEWS, long_document]
                                        for q in questions)),
        Request(AnswerKind.LABEL, tuple(classify), labels=LABELS),
        Request(AnswerKind.TEXT, tuple(complete), max_tokens=4),
    ]


def _numbers(evaluation: Evaluation) -> list[torch.Tensor]:
    """What an evaluation computed, as tensors to compare bit for bit."""
    if evaluation.kind is AnswerKind.LABEL:
        assert evaluation.label_logprobs is not None
        return [torch.from_numpy(evaluation.label_logprobs)]
    if evaluation.kind is AnswerKind.TEXT:
        return [torch.tensor(evaluation.generated), torch.tensor(evaluation.generated_logprobs)]
    assert evaluation.answer_logits is not None
    return [evaluation.answer_logits]


def _split(request: Request) -> list[Request]:
    return [Request(request.kind, (p,), request.labels, request.max_tokens)
            for p in request.prompts]


def _joined(evaluations: Sequence[Evaluation]) -> list[torch.Tensor]:
    parts = [_numbers(e) for e in evaluations]
    return [torch.cat([p[i] for p in parts]) for i in range(len(parts[0]))]


def _assert_identical(got: list[torch.Tensor], expected: list[torch.Tensor],
                      context: str = "") -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b), (context, (a - b).abs().max())


_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA + Triton")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=_CUDA)])
def test_answers_are_bit_identical_whatever_shares_the_chunk(
    tiny_qwen3: tuple[Path, torch.nn.Module], device: str,
) -> None:
    """Every prompt alone, in mixed chunks of several sizes, concurrently with the other
    requests, from a warm arena, and through an arena so small it keeps evicting: the very same
    bits (float32 on CPU with row-invariant ops; bfloat16 on CUDA with the batch-invariant
    kernels)."""
    folder = tiny_qwen3[0]
    requests = _requests()
    bytes_per_token = KV_BYTES_PER_TOKEN // (2 if device == "cuda" else 1)
    alone_engine = _engine(folder, device=device)
    alone = [
        _joined([_run(alone_engine, [alone_engine.submit(r)])[0] for r in _split(request)])
        for request in requests
    ]
    for chunk_tokens in (8, 13, 37, 64, 4096):
        engine = _engine(folder, chunk_tokens=chunk_tokens, device=device)
        for request, expected in zip(requests, alone, strict=True):  # one request at a time
            _assert_identical(_numbers(_run(engine, [engine.submit(request)])[0]), expected,
                              f"{request.kind.name} in chunks of {chunk_tokens}")
    for chunk_tokens in (16, 96):
        engine = _engine(folder, chunk_tokens=chunk_tokens, device=device)
        together = _run(engine, [engine.submit(r) for r in requests])  # all at once
        warm = _run(engine, [engine.submit(r) for r in reversed(requests)])[::-1]
        for name, evaluations in (("together", together), ("warm", warm)):
            for evaluation, expected in zip(evaluations, alone, strict=True):
                _assert_identical(_numbers(evaluation), expected,
                                  f"{evaluation.kind.name} {name}, chunks of {chunk_tokens}")
    tight = _engine(folder, chunk_tokens=24, kv_cache_bytes=400 * bytes_per_token, device=device)
    for request, expected in zip(requests, alone, strict=True):
        _assert_identical(_numbers(_run(tight, [tight.submit(request)])[0]), expected,
                          f"{request.kind.name} through a tight arena")
    assert tight.tree.evictions > 0


@_CUDA
def test_documents_extending_one_another_share_every_token_with_the_same_bits(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    """Agent traces (each snapshot extends the one before), on CUDA, where the tree seeds the
    block a snapshot ended in: asked in order, each snapshot computes little more than its new
    tokens, and its answers have the bits it gets alone in an empty arena."""
    folder = tiny_qwen3[0]
    task = "Task: find why the nightly build fails, fix it and write a report. " * 8
    steps = [task] + [f"Step {i}: the agent opened file {7 * i} and read "
                      + "lines " * (3 + 5 * (i % 4)) for i in range(10)]
    requests = [boolean([filter_prompt(" ".join(steps[:i + 1]), q) for q in ("Done?", "Stuck?")])
                for i in range(len(steps))]
    engine = _engine(folder, device="cuda", prefix_block_tokens=64, chunk_tokens=4096)
    alone = []
    for request in requests:
        engine.tree.clear()
        alone.append(_run(engine, [engine.submit(request)])[0])
    fresh = {}
    for seeding in (False, True):  # whole blocks shared, then every token
        engine.tree.clear()
        engine.tree.seeding = seeding
        in_order = [_run(engine, [engine.submit(request)])[0] for request in requests]
        for i, (got, expected) in enumerate(zip(in_order, alone, strict=True)):
            _assert_identical(_numbers(got), _numbers(expected), f"snapshot {i}, {seeding=}")
        fresh[seeding] = [e.metrics.fresh_tokens for e in in_order]
    # Beyond its new tokens a snapshot computes its questions (the same for all) and what it
    # could not reuse: up to a block's worth without seeding; with it a token or two, or a
    # partial block too short to look up.
    alone_fresh = [e.metrics.fresh_tokens for e in alone]
    new = [b - a for a, b in zip(alone_fresh, alone_fresh[1:], strict=False)]
    extra = {seeding: [f - n for f, n in zip(fresh[seeding][1:], new, strict=True)]
             for seeding in fresh}
    assert max(extra[True]) - min(extra[True]) <= SEED_MIN_TOKENS + 2, extra
    assert max(extra[False]) - min(extra[False]) > 16, extra
    assert sum(fresh[True]) < sum(fresh[False])


def test_a_small_statement_is_not_stuck_behind_a_big_one(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    engine = _engine(tiny_qwen3[0], chunk_tokens=256)
    documents = [f"Document {i}: " + "a long and winding plot. " * 6 for i in range(60)]
    big = engine.submit(boolean([filter_prompt(d, "Is the plot long?") for d in documents]))
    for _ in range(2):
        engine.scheduler.step()
    small = engine.submit(boolean([filter_prompt(r, "Is it positive?") for r in REVIEWS]))
    arrived = engine.scheduler.steps
    small_result = _run(engine, [small])[0]
    # The chunk running when it arrived finishes; the next one, launched right after, holds all
    # of the small statement (its fair share covers it): done two chunks after arriving.
    assert engine.scheduler.steps == arrived + 2
    assert big.active and not big.finished  # the big one is still running
    _run(engine, [big])
    assert engine.scheduler.steps > arrived + 4
    alone = _engine(tiny_qwen3[0])  # the same answers as when asked alone
    expected = _run(alone, [alone.submit(boolean(
        [filter_prompt(r, "Is it positive?") for r in REVIEWS]))])[0]
    assert torch.equal(small_result.answer_logits, expected.answer_logits)


def test_the_chunk_prepared_during_the_previous_one_runs_unless_something_changed(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    engine = _engine(tiny_qwen3[0], chunk_tokens=64)
    documents = [f"Document {i}: " + "words " * 20 for i in range(12)]
    job = engine.submit(boolean([filter_prompt(d, "Long?") for d in documents]))
    _run(engine, [job])
    assert engine.scheduler.steps > 3 and engine.scheduler.discarded == 0
    first = engine.submit(boolean([filter_prompt(d + "!", "Long?") for d in documents]))
    engine.scheduler.step()
    second = engine.submit(boolean([filter_prompt(r, "Good?") for r in REVIEWS]))
    _run(engine, [first, second])
    assert engine.scheduler.discarded == 1  # the arrival made the prepared chunk stale


def test_the_first_chunk_of_a_busy_spell_is_small_and_the_answers_unchanged(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    """While the device waits for its first chunk the host chooses and packs a small one, then
    prepares full ones as it runs; rows are computed alike in either."""
    engine = _engine(tiny_qwen3[0], chunk_tokens=128)
    assert engine.scheduler.idle_chunk_tokens == 128  # on a CPU nothing overlaps: whole chunks
    engine.scheduler.idle_chunk_tokens = 32
    documents = [f"Document {i}: " + "a long and winding plot. " * 3 for i in range(16)]
    request = boolean([filter_prompt(d, "Is the plot long?") for d in documents])
    runner, sizes = engine.scheduler.runner, []
    launch = runner.launch
    runner.launch = lambda chunk: (sizes.append(chunk.tokens), launch(chunk))[1]  # type: ignore[method-assign]
    evaluation = _run(engine, [engine.submit(request)])[0]
    assert 0 < sizes[0] <= 32 and max(sizes) > 64
    alone = _engine(tiny_qwen3[0], chunk_tokens=128)
    assert torch.equal(evaluation.answer_logits,
                       _run(alone, [alone.submit(request)])[0].answer_logits)


def test_cancel_withdraws_one_request_and_keeps_its_computed_kv(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    engine = _engine(tiny_qwen3[0], chunk_tokens=64)
    documents = [f"Document {i}: " + "a long and winding plot. " * 4 for i in range(20)]
    cancel = threading.Event()
    doomed = engine.submit(boolean([filter_prompt(d, "Long?") for d in documents]), cancel)
    other = engine.submit(boolean([filter_prompt(r, "Good?") for r in REVIEWS]))
    engine.scheduler.step()
    engine.scheduler.step()
    cancel.set()
    evaluation = _run(engine, [other])[0]
    with pytest.raises(EngineCancelled):
        _run(engine, [doomed])
    alone = _engine(tiny_qwen3[0])
    expected = _run(alone, [alone.submit(boolean([filter_prompt(r, "Good?") for r in REVIEWS]))])
    assert torch.equal(evaluation.answer_logits, expected[0].answer_logits)
    cached = engine.tree.cached_tokens
    assert cached > 0  # what the cancelled request computed stays in the arena
    again = _run(engine, [engine.submit(boolean([filter_prompt(documents[0], "Long?")]))])[0]
    assert again.metrics.cached_tokens > 0
    assert not engine.scheduler.jobs and engine.tree.arena.free_pages > 0


def test_statements_waiting_for_kv_pages_never_block_each_other(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    # Room for both documents' blocks, but not also for a generation's private KV: each
    # statement must let go of its blocks while it waits, or neither could ever go on.
    documents = [f"Document {d}: " + "the tool printed a long log line. " * 12 for d in "AB"]
    requests = [Request(AnswerKind.TEXT, (completion_prompt(d, "Summarize."),), max_tokens=24)
                for d in documents]
    engine = _engine(tiny_qwen3[0], chunk_tokens=64)
    prefix = len(engine.tokenizer.encode_prompts(requests[0].prompts).ids(0)[0])
    tight = _engine(tiny_qwen3[0], chunk_tokens=64,
                    kv_cache_bytes=(2 * prefix + 8) * KV_BYTES_PER_TOKEN)
    got = _run(tight, [tight.submit(r) for r in requests], max_steps=500)
    for request, evaluation in zip(requests, got, strict=True):
        _assert_identical(_numbers(evaluation), _numbers(_run(engine, [engine.submit(request)])[0]))


def test_progress_reports_cumulative_metrics_of_answered_prompts(
    tiny_qwen3: tuple[Path, torch.nn.Module],
) -> None:
    engine = LocalEngine(EngineConfig(model=str(tiny_qwen3[0]), chunk_tokens=48,
                                      prefix_block_tokens=BLOCK))
    prompts = [filter_prompt(f"Document {i}: " + "words " * 10, "Long?") for i in range(9)]
    seen: list[Metrics] = []
    answers = engine.answer(boolean(prompts), progress=seen.append)
    assert len(seen) >= 3
    assert [m.prompts for m in seen] == sorted(m.prompts for m in seen)
    for m in seen:
        assert m.input_tokens == m.fresh_tokens + m.cached_tokens
    last = seen[-1]
    final = answers.metrics
    assert (last.prompts, last.input_tokens, last.fresh_tokens) == (
        final.prompts, final.input_tokens, final.fresh_tokens)

    def give_up(metrics: Metrics) -> None:
        raise KeyboardInterrupt  # e.g. the statement's client went away

    with pytest.raises(KeyboardInterrupt):
        engine.answer(boolean([filter_prompt(p.prefix + "?", "Long?") for p in prompts]),
                      progress=give_up)
    assert engine.answer(boolean(prompts[:2])).values  # still serving
    engine.close()


def test_a_failing_chunk_fails_its_statements_and_the_engine_goes_on(
    tiny_qwen3: tuple[Path, torch.nn.Module], monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = _engine(tiny_qwen3[0], chunk_tokens=64)
    launch = engine.scheduler.runner.launch
    calls = {"n": 0}

    def flaky(chunk: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("CUDA out of memory (simulated)")
        return launch(chunk)  # type: ignore[arg-type]

    monkeypatch.setattr(engine.scheduler.runner, "launch", flaky)
    documents = [f"Document {i}: " + "words " * 12 for i in range(12)]
    jobs = [engine.submit(boolean([filter_prompt(d, "Long?") for d in documents])),
            engine.submit(boolean([filter_prompt(r, "Good?") for r in REVIEWS]))]
    for job in jobs:
        with pytest.raises(EngineError, match="failed while running a chunk: RuntimeError: "
                                              "CUDA out of memory"):
            _run(engine, [job])
    assert engine.tree.blocks == 0  # the arena starts over
    result = _run(engine, [engine.submit(boolean([filter_prompt(r, "Good?") for r in REVIEWS]))])
    assert result[0].metrics.prompts == 3


def test_each_distinct_text_is_tokenized_once(tiny_qwen3: tuple[Path, torch.nn.Module]) -> None:
    engine = _engine(tiny_qwen3[0], chunk_tokens=4096)
    anchors = [f"Report {a}: " + "the patient presented with symptoms. " * 30 for a in range(3)]
    terms = [f"term number {t}" for t in range(40)]
    prompts = [join_prompt(a, "Does DOCUMENT 0 mention DOCUMENT 1?", t)
               for a in anchors for t in terms]
    before = engine.tokenizer.encoded_texts
    first = _run(engine, [engine.submit(boolean(prompts))])[0]
    assert engine.tokenizer.encoded_texts - before == len(anchors) + len(terms)
    again = _run(engine, [engine.submit(boolean(prompts))])[0]
    assert engine.tokenizer.encoded_texts - before == len(anchors) + len(terms)  # all cached
    assert torch.equal(first.answer_logits, again.answer_logits)
    # Each anchor's prefix ran once; every pair ran only its partner and tail.
    suffixes = engine.tokenizer.encode([t + "\nANSWER:" for t in terms])
    prefix_tokens = sum(len(engine.tokenizer.encode_prompts([p]).ids(0)[0])
                        for p in prompts[:: len(terms)])
    assert first.metrics.fresh_tokens == prefix_tokens + len(anchors) * sum(map(len, suffixes))
    assert again.metrics.fresh_tokens == len(anchors) * sum(map(len, suffixes))


def _trie_tokens(prefixes: Sequence[np.ndarray]) -> int:
    """Nodes of the token trie of the prefixes: the fewest tokens any cache must compute."""
    return len({bytes(p[:i + 1].tobytes()) for p in prefixes for i in range(len(p))})


@pytest.mark.parametrize("block", [4, 8, 32])
def test_documents_extending_each_other_share_their_common_blocks(
    tiny_qwen3: tuple[Path, torch.nn.Module], block: int,
) -> None:
    # An agent trace: every snapshot extends the previous one by a step.
    steps = [f" Step {i}: called the tool and read {i * 7} lines of output." for i in range(12)]
    snapshots = ["TRACE:" + "".join(steps[: i + 1]) for i in range(len(steps))]
    engine = _engine(tiny_qwen3[0], prefix_block_tokens=block, chunk_tokens=128)
    prompts = [filter_prompt(s, "Did the agent finish?") for s in snapshots]
    tokenized = engine.tokenizer.encode_prompts(prompts)
    prefixes = [tokenized.ids(i)[0] for i in range(len(prompts))]
    suffix_tokens = sum(len(tokenized.ids(i)[1]) for i in range(len(prompts)))
    metrics = _run(engine, [engine.submit(boolean(prompts))])[0].metrics
    fresh_prefix = metrics.fresh_tokens - suffix_tokens
    minimum = _trie_tokens(prefixes)
    # Each distinct canonical block once: a snapshot recomputes at most the partial last block
    # of the previous one, above the token-trie minimum.
    assert fresh_prefix == canonical_block_tokens([p.tolist() for p in prefixes], block)
    assert minimum <= fresh_prefix <= minimum + (len(prompts) - 1) * (block - 1)
    # A second question over the same snapshots computes nothing of theirs.
    again = [filter_prompt(s, "Did the agent fail?") for s in snapshots]
    second = _run(engine, [engine.submit(boolean(again))])[0].metrics
    assert second.cached_tokens == sum(len(p) for p in prefixes)


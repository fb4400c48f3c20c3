"""Calls whose prompts come in parts, on CPU with a real tiny model: a streamed call answers
bit-identically to one request (every kind, metrics totals included), the engine starts on a
part before the next exists, admission in parts, cancel and failure mid-stream lose nothing, a
too-long prompt in a late part, and each chunk's device time in the metrics."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path

import pytest
import torch
from support.engine_reference import boolean, mixed_prompts

from heron.engine.api import (
    AnswerKind,
    Answers,
    EngineCancelled,
    PromptTooLong,
    Request,
)
from heron.engine.config import EngineConfig
from heron.engine.kv_cache import BlockTree
from heron.engine.local import LocalEngine
from heron.engine.prompts import Prompt, classify_prompt, completion_prompt, filter_prompt
from heron.engine.scheduler import Failed, Finished, Job

DOCUMENTS = [f"Document {i}: " + "a long and winding plot, " * (1 + i % 5) for i in range(24)]


def _engine(folder: Path, **config: object) -> LocalEngine:
    config.setdefault("prefix_block_tokens", 8)
    config.setdefault("chunk_tokens", 64)  # many chunks, so parts land between them
    return LocalEngine(EngineConfig(model=str(folder), **config))  # type: ignore[arg-type]


def _requests() -> list[Request]:
    labels = ("positive", "negative", "mixed feelings")
    return [
        boolean(mixed_prompts() + [filter_prompt(d, "Is the plot long?") for d in DOCUMENTS]),
        Request(AnswerKind.LABEL, tuple(classify_prompt(d, "Sentiment?", labels)
                                        for d in DOCUMENTS[:9]), labels=labels),
        Request(AnswerKind.TEXT, tuple(completion_prompt(d, "Go on.") for d in DOCUMENTS[:5]),
                max_tokens=3),
    ]


def _split(prompts: Sequence[Prompt], sizes: Sequence[int]) -> list[tuple[Prompt, ...]]:
    parts, start = [], 0
    for size in sizes:
        parts.append(tuple(prompts[start : start + size]))
        start += size
    return [*parts, tuple(prompts[start:])]


def _same(got: Answers, expected: Answers) -> None:
    assert got.values == expected.values and got.scores == expected.scores
    for name in ("prompts", "input_tokens", "fresh_tokens", "cached_tokens", "generated_tokens"):
        assert getattr(got.metrics, name) == getattr(expected.metrics, name), name


def _loses_nothing(tree: BlockTree) -> None:
    """No chain stays pinned and no private page stays taken."""
    blocks, stack = [], list(tree._root.children.values())  # noqa: SLF001 - the tree's state
    while stack:
        block = stack.pop()
        blocks.append(block)
        stack.extend(block.children.values())
    assert all(block.pins == 0 for block in blocks)
    arena = tree.arena
    assert arena.free_pages + sum(len(block.pages) for block in blocks) == arena.num_pages


@pytest.mark.timeout(300)
def test_a_streamed_call_answers_like_one_request(tiny_qwen3: tuple[Path, object]) -> None:
    """Bit-identical answers and equal work, each on a fresh engine (the same cache state)."""
    whole, streamed = _engine(tiny_qwen3[0]), _engine(tiny_qwen3[0])
    for request in _requests():
        expected = whole.answer(request)
        first, *more = _split(request.prompts, (1, 0, 3))  # an empty part too
        progress: list = []
        got = streamed.answer(Request(request.kind, first, request.labels, request.max_tokens),
                              progress=progress.append, more=iter(more))
        _same(got, expected)
        assert progress and progress[-1].prompts == len(request.prompts)
        assert [m.prompts for m in progress] == sorted(m.prompts for m in progress)
    _loses_nothing(streamed.tree)
    whole.close()
    streamed.close()


@pytest.mark.timeout(120)
def test_the_engine_starts_on_the_first_part_before_the_next_exists(
        tiny_qwen3: tuple[Path, object]) -> None:
    engine = _engine(tiny_qwen3[0])
    prompts = [filter_prompt(d, "Long?") for d in DOCUMENTS]
    with closing(_engine(tiny_qwen3[0])) as alone:
        expected = alone.answer(boolean(prompts))
    steps_then: list[int] = []

    def parts() -> Iterator[list[Prompt]]:
        deadline = time.monotonic() + 30
        while engine.scheduler.steps == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        steps_then.append(engine.scheduler.steps)
        yield prompts[4:]

    _same(engine.answer(boolean(prompts[:4]), more=parts()), expected)
    assert steps_then[0] >= 1  # a chunk ran before the second part was made
    engine.close()


@pytest.mark.timeout(120)
def test_a_job_admitted_in_parts_runs_its_first_part_first(
        tiny_qwen3: tuple[Path, object]) -> None:
    """The scheduler links parts as they come: a chunk runs with only the first part in; the
    job finishes once closed, with the answers of one request."""
    engine = LocalEngine(EngineConfig(model=str(tiny_qwen3[0]), chunk_tokens=64,
                                      prefix_block_tokens=8), background=False)
    prompts = [filter_prompt(d, "Long?") for d in DOCUMENTS]
    job = Job(AnswerKind.BOOLEAN, answer_width=len(engine.answer_tokens.ids),
              block_tokens=engine.tree.block_tokens)
    engine.scheduler.submit(job)
    engine.scheduler.add(job.part(engine.tokenizer.encode_prompts(prompts[:3])))
    engine.scheduler.step()
    assert engine.scheduler.steps == 1 and not job.finished and len(job.tasks) == 3
    engine.scheduler.add(job.part(engine.tokenizer.encode_prompts(prompts[3:])))
    engine.scheduler.close(job)
    for _ in range(1000):
        if not job.active:
            break
        engine.scheduler.step()
    events = [job.events.get() for _ in range(job.events.qsize())]
    finished = events[-1]
    assert isinstance(finished, Finished)
    with closing(_engine(tiny_qwen3[0])) as alone:
        expected = alone.evaluate(boolean(prompts))
    assert torch.equal(finished.evaluation.answer_logits, expected.answer_logits)
    assert finished.evaluation.metrics.prompts == len(prompts)
    engine.close()


@pytest.mark.timeout(120)
def test_admission_in_parts_of_a_big_request(tiny_qwen3: tuple[Path, object],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One request admitted in parts of 2, 4, 8 ... prompts answers as if admitted whole."""
    from heron.engine import local

    with closing(_engine(tiny_qwen3[0])) as alone:
        expected = alone.answer(_requests()[0])
    monkeypatch.setattr(local, "ADMIT_FIRST", 2)
    monkeypatch.setattr(local, "ADMIT_MOST", 8)
    parts: list[int] = []
    engine = _engine(tiny_qwen3[0])
    add = engine.scheduler.add
    engine.scheduler.add = lambda part: (parts.append(len(part.tasks)), add(part))[1]
    _same(engine.answer(_requests()[0]), expected)
    assert parts[:4] == [2, 4, 8, 8] and sum(parts) == len(_requests()[0].prompts)
    engine.close()


@pytest.mark.timeout(120)
def test_cancel_mid_stream_stops_the_call_and_loses_nothing(
        tiny_qwen3: tuple[Path, object]) -> None:
    engine = _engine(tiny_qwen3[0])
    prompts = [filter_prompt(d, "Long?") for d in DOCUMENTS]
    cancel = threading.Event()
    made: list[int] = []

    def parts() -> Iterator[list[Prompt]]:
        made.append(1)
        yield prompts[4:12]
        cancel.set()  # the statement is cancelled while it renders its third part
        made.append(2)
        yield prompts[12:]
        made.append(3)

    with pytest.raises(EngineCancelled):
        engine.answer(boolean(prompts[:4]), cancel=cancel, more=parts())
    assert made == [1, 2]  # the part after the cancel was never asked for
    _loses_nothing(engine.tree)
    assert engine.answer(boolean(prompts[:2])).values  # still serves
    engine.close()


@pytest.mark.timeout(120)
def test_parts_that_fail_withdraw_the_call(tiny_qwen3: tuple[Path, object]) -> None:
    engine = _engine(tiny_qwen3[0])
    prompts = [filter_prompt(d, "Long?") for d in DOCUMENTS]

    def parts() -> Iterator[list[Prompt]]:
        yield prompts[4:8]
        raise ValueError("the caller's rendering failed")

    with pytest.raises(ValueError, match="rendering failed"):
        engine.answer(boolean(prompts[:4]), more=parts())
    _loses_nothing(engine.tree)
    assert not engine.scheduler.jobs
    assert len(engine.answer(boolean(prompts[:3])).values) == 3
    engine.close()


@pytest.mark.timeout(120)
def test_a_too_long_prompt_in_a_late_part(tiny_llama3: tuple[Path, object]) -> None:
    """``check`` refuses it before anything runs; streamed without a check, its part is refused
    when it arrives (numbered in the whole call) and the call is withdrawn."""
    engine = LocalEngine(EngineConfig(model=str(tiny_llama3[0])))  # a context of 256 tokens
    fits = [filter_prompt(f"Review {i}: fine.", "Good?") for i in range(6)]
    too_long = filter_prompt("the plot moves on " * 100, "Long?")
    steps = engine.scheduler.steps
    with pytest.raises(PromptTooLong) as info:
        engine.check(boolean([*fits, too_long]))
    assert info.value.prompt == 6 and info.value.tokens > 256
    assert engine.scheduler.steps == steps  # nothing ran
    with pytest.raises(PromptTooLong) as info:
        engine.answer(boolean(fits[:2]), more=iter([fits[2:], [too_long]]))
    assert info.value.prompt == 6
    _loses_nothing(engine.tree)
    assert len(engine.answer(boolean(fits)).values) == 6
    engine.close()


@pytest.mark.timeout(120)
def test_metrics_say_when_and_how_long_chunks_ran(tiny_qwen3: tuple[Path, object]) -> None:
    engine = _engine(tiny_qwen3[0])
    called = time.monotonic()
    answers = engine.answer(boolean([filter_prompt(d, "Long?") for d in DOCUMENTS]))
    returned = time.monotonic()
    m = answers.metrics
    assert m.first_chunk_at is not None and called <= m.first_chunk_at <= returned
    assert 0 < m.device_seconds <= returned - called
    # A call's seconds count from its start, its chunks' from theirs.
    assert m.device_seconds <= m.seconds
    engine.close()


def test_metrics_add_up_over_calls() -> None:
    from heron.engine.api import Metrics

    a = Metrics(1, 10, 4, 6, 0.5, 0, device_seconds=0.25, first_chunk_at=7.0)
    b = Metrics(2, 20, 20, 0, 1.5, 0, device_seconds=1.0, first_chunk_at=3.0)
    total = a + b
    assert total.device_seconds == 1.25 and total.first_chunk_at == 3.0
    assert (Metrics() + a).first_chunk_at == 7.0
    a.merge(Metrics())
    assert a.first_chunk_at == 7.0 and a.device_seconds == 0.25


@pytest.mark.timeout(120)
def test_withdrawn_job_parts_are_ignored(tiny_qwen3: tuple[Path, object]) -> None:
    """A part that arrives after its job was cancelled is dropped; the job fails once."""
    engine = LocalEngine(EngineConfig(model=str(tiny_qwen3[0]), chunk_tokens=64,
                                      prefix_block_tokens=8), background=False)
    cancel = threading.Event()
    prompts = [filter_prompt(d, "Long?") for d in DOCUMENTS]
    job = Job(AnswerKind.BOOLEAN, cancel, answer_width=len(engine.answer_tokens.ids))
    engine.scheduler.submit(job)
    engine.scheduler.add(job.part(engine.tokenizer.encode_prompts(prompts[:3])))
    engine.scheduler.step()
    cancel.set()
    engine.scheduler.add(job.part(engine.tokenizer.encode_prompts(prompts[3:])))
    engine.scheduler.close(job)
    engine.scheduler.step()
    events = [job.events.get() for _ in range(job.events.qsize())]
    assert isinstance(events[-1], Failed) and isinstance(events[-1].error, EngineCancelled)
    assert sum(isinstance(e, Failed) for e in events) == 1
    assert not engine.scheduler.jobs and len(job.tasks) == 3
    engine.close()



@pytest.mark.timeout(120)
def test_the_first_chunk_holds_the_first_part_only(tiny_qwen3: tuple[Path, object],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Admission lets the step loop launch the first part before it builds the next, so the
    first chunk starts as soon as its own rows are ready (all of them would fit it)."""
    from heron.engine import local

    monkeypatch.setattr(local, "ADMIT_FIRST", 3)
    monkeypatch.setattr(local, "FIRST_LAUNCH_WAIT_S", 30.0)  # however slow the machine
    engine = _engine(tiny_qwen3[0], chunk_tokens=4096)
    answers_per_chunk: list[int] = []
    launch = engine.scheduler.runner.launch

    def record(chunk):  # noqa: ANN001, ANN202 - a pass-through spy
        answers_per_chunk.append(chunk.answer_index.numel())
        return launch(chunk)

    engine.scheduler.runner.launch = record
    request = boolean([filter_prompt(d, "Long?") for d in DOCUMENTS])
    with closing(_engine(tiny_qwen3[0], chunk_tokens=4096)) as alone:
        _same(engine.answer(request), alone.answer(request))
    assert answers_per_chunk[0] == 3 and sum(answers_per_chunk) == len(DOCUMENTS)
    engine.close()

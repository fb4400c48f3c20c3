"""Long prompts: refused when they exceed the model's context, run in blocks across chunks when
they fit (a long suffix too), and cancelled within a second however long (tiny models, CPU)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch
from support.engine_reference import boolean, full_ids, reference_logits

from heron.engine.api import AnswerKind, EngineCancelled, PromptTooLong, Request
from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.process import EngineProcess
from heron.engine.prompts import completion_prompt, filter_prompt, join_prompt
from heron.engine.scheduler import LONG_SUFFIX_BLOCKS

ATOL = 1e-4


def _words(count: int, seed: int) -> str:
    """About `count` tokens of text, different for each seed."""
    return f"Text {seed}: " + " ".join(("the", "plot", "moves", "on")[i % 4] for i in range(count))


def test_a_prompt_longer_than_the_context_is_refused_before_it_runs(
        tiny_llama3: tuple[Path, torch.nn.Module]) -> None:
    engine = LocalEngine(EngineConfig(model=str(tiny_llama3[0])))  # a context of 256 tokens
    assert engine.info.context_tokens == 256
    fits = filter_prompt(_words(20, 1), "Long?")
    too_long = filter_prompt(_words(300, 2), "Long?")
    steps = engine.scheduler.steps
    with pytest.raises(PromptTooLong, match=r"prompt 2 of the request has \d+ tokens, more than "
                                            r"the model's context of 256 tokens") as info:
        engine.answer(boolean([fits, too_long, fits]))
    assert info.value.prompt == 1 and info.value.tokens > 256
    assert engine.scheduler.steps == steps  # nothing of the request ran
    # What a completion adds counts: a prompt that fits alone is refused with 200 more tokens.
    short = completion_prompt(_words(100, 3), "Go on.")
    assert engine.answer(Request(AnswerKind.TEXT, (short,), max_tokens=4)).values
    with pytest.raises(PromptTooLong):
        engine.answer(Request(AnswerKind.TEXT, (short,), max_tokens=200))
    assert engine.answer(boolean([fits])).values  # the engine still serves
    engine.close()


def test_a_suffix_longer_than_a_chunk_runs_in_blocks_and_matches_transformers(
        tiny_qwen3: tuple[Path, torch.nn.Module]) -> None:
    """A join partner of ~700 tokens with blocks of 8: its head joins the prefix, so no row is
    longer than a block, and the answer is transformers' on the whole prompt."""
    folder, model = tiny_qwen3
    partner = _words(700, 4)
    prompts = [join_prompt("Aspect: pacing.", "Does DOCUMENT 1 discuss it?", partner),
               join_prompt("Aspect: pacing.", "Does DOCUMENT 1 discuss it?", "Short.")]
    answers = {}
    for chunk in (64, 4096):  # answers do not depend on the chunk
        engine = LocalEngine(EngineConfig(model=str(folder), chunk_tokens=chunk,
                                          prefix_block_tokens=8))
        tokenized = engine.tokenizer.encode_prompts(prompts)
        assert len(tokenized.ids(0)[1]) > LONG_SUFFIX_BLOCKS * 8  # the long suffix
        evaluation = engine.evaluate(boolean(prompts))
        expected = reference_logits(model, full_ids(tokenized), engine.answer_tokens.ids)
        torch.testing.assert_close(evaluation.answer_logits, expected, atol=ATOL, rtol=0)
        answers[chunk] = evaluation.answer_logits
        if chunk == 64:
            assert max(_rows_seen(engine, prompts)) <= 64
        engine.close()
    assert torch.equal(answers[64], answers[4096])


def _rows_seen(engine: LocalEngine, prompts: list) -> list[int]:
    """The length of every row a fresh request runs (recorded at the runner)."""
    seen: list[int] = []
    launch = engine.scheduler.runner.launch

    def record(chunk):  # noqa: ANN001, ANN202 - a pass-through spy
        seen.extend(span.end - span.start for span in chunk.spans)
        return launch(chunk)

    engine.scheduler.runner.launch = record
    engine.answer(boolean([join_prompt("Aspect: pace.", "Again?", p.suffix) for p in prompts]))
    engine.scheduler.runner.launch = launch
    return seen


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["document", "partner"])
def test_a_prompt_of_9k_tokens_is_cancelled_within_a_second(
        tiny_qwen3: tuple[Path, torch.nn.Module], where: str) -> None:
    """Through the resident process, default CPU chunks (4,096 tokens): the prompt runs in blocks
    over three chunks, and cancel, set when the first is done, takes effect at the next one."""
    with EngineProcess(EngineConfig(model=str(tiny_qwen3[0]))) as engine:
        for attempt in range(3):  # fresh documents each time: nothing from the KV cache
            text = _words(9200, attempt + 10)
            prompt = filter_prompt(text, "Long?") if where == "document" else join_prompt(
                "Aspect: length.", "Is DOCUMENT 1 long?", text)
            assert sum(engine.count_tokens([prompt.prefix, prompt.suffix])) > 9000
            cancel = threading.Event()
            set_at: list[float] = []

            def first_chunk_done(_: object, flag: threading.Event = cancel,
                                 at: list[float] = set_at) -> None:
                # Cancelled once its first chunk ran (of three): on any machine, mid-prompt.
                if not at:
                    at.append(time.monotonic())
                    flag.set()

            with pytest.raises(EngineCancelled):
                engine.answer(boolean([prompt]), cancel=cancel, progress=first_chunk_done)
            assert time.monotonic() - set_at[0] < 1.0
        assert engine.answer(boolean([filter_prompt("short", "Short?")])).values

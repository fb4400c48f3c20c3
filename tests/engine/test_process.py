"""EngineProcess: the resident engine child, its failure modes, and the torch-free parent."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.engine_reference import boolean

from heron.engine import open_engine
from heron.engine.api import AnswerKind, EngineError, Request
from heron.engine.config import EngineConfig
from heron.engine.local import LocalEngine
from heron.engine.process import EngineProcess
from heron.engine.prompts import classify_prompt, completion_prompt, filter_prompt, join_prompt

REPO = Path(__file__).resolve().parents[2]


def test_importing_engine_does_not_import_torch() -> None:
    code = (
        "import sys, heron.engine, heron.engine.process, heron.engine.prompts, heron.engine.api\n"
        "import heron.engine.config\n"
        "import heron.engine.spec, heron.engine.weights\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


@pytest.mark.timeout(300)
def test_process_answers_like_local_engine(smollm2_folder: Path) -> None:
    prompts = [
        filter_prompt("A delightful, warm film.", "Is the review positive?"),
        filter_prompt("A delightful, warm film.", "Is the review negative?"),
        join_prompt("Topic: food", "Is DOCUMENT 1 about DOCUMENT 0?", "We ate pasta."),
    ]
    local = LocalEngine(EngineConfig())
    expected = local.answer(boolean(prompts))
    with EngineProcess(EngineConfig()) as engine:
        assert engine.info == local.info
        got = engine.answer(boolean(prompts))
        assert got.values == expected.values
        assert got.scores == pytest.approx(expected.scores, abs=1e-5)
        assert got.metrics.input_tokens == expected.metrics.input_tokens
        assert got.metrics.fresh_tokens == expected.metrics.fresh_tokens
        assert engine.count_tokens(["hello world"]) == local.count_tokens(["hello world"])
        assert engine.answer(boolean([])).values == ()
    with pytest.raises(EngineError, match="closed"):
        engine.answer(boolean(prompts))


@pytest.mark.timeout(120)
def test_bad_model_path_fails_fast(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(EngineError, match="not found") as info:
        open_engine(EngineConfig(model=str(tmp_path / "no-such-model")))
    assert "no-such-model" in str(info.value)
    assert time.monotonic() - started < 60  # spawn + imports, never a hang


@pytest.mark.timeout(120)
def test_child_death_mid_session_raises(tiny_qwen3: tuple[Path, object]) -> None:
    engine = EngineProcess(EngineConfig(model=str(tiny_qwen3[0])))
    try:
        engine._process.kill()  # noqa: SLF001 - simulate the OOM killer
        engine._process.join()  # noqa: SLF001
        with pytest.raises(EngineError, match="engine process was killed by SIGKILL"):
            engine.answer(boolean([filter_prompt("x", "y?")]))
        with pytest.raises(EngineError, match="killed by SIGKILL"):  # and stays closed
            engine.count_tokens(["x"])
    finally:
        engine.close()


@pytest.mark.timeout(300)
def test_concurrent_calls_share_the_engine_and_cancel_only_their_own(
    tiny_qwen3: tuple[Path, object],
) -> None:
    import threading

    from heron.engine.api import EngineCancelled, Metrics

    config = EngineConfig(model=str(tiny_qwen3[0]), chunk_tokens=64, prefix_block_tokens=8)
    documents = [f"Document {i}: " + "a long and winding plot. " * 8 for i in range(200)]
    long_prompts = [filter_prompt(d, "Is the plot long?") for d in documents]
    short_prompts = [filter_prompt(f"Review {i}: fine.", "Is it good?") for i in range(6)]
    label = Request(AnswerKind.LABEL, tuple(
        classify_prompt(f"Review {i}: fine.", "Sentiment?", ("good", "bad")) for i in range(3)),
        labels=("good", "bad"))
    text = Request(AnswerKind.TEXT, (completion_prompt("A fine film.", "Say why."),),
                   max_tokens=4)
    local = LocalEngine(config)
    expected = local.answer(boolean(short_prompts))
    expected_label, expected_text = local.answer(label), local.answer(text)
    local.close()
    with EngineProcess(config) as engine:
        cancel = threading.Event()
        outcome: dict[str, object] = {}

        def doomed() -> None:
            try:
                engine.answer(boolean(long_prompts), cancel=cancel)
            except EngineCancelled as exc:
                outcome["cancelled"] = exc

        progress: list[Metrics] = []
        thread = threading.Thread(target=doomed)
        thread.start()
        time.sleep(0.5)  # the long call is running
        got = engine.answer(boolean(short_prompts), progress=progress.append)
        assert "cancelled" not in outcome and thread.is_alive()  # answered beside it
        cancel.set()
        thread.join(60)
        assert isinstance(outcome.get("cancelled"), EngineCancelled)
        assert got.values == expected.values and got.scores == expected.scores
        assert progress and progress[-1].prompts == len(short_prompts)
        # Every answer kind crosses the pipe.
        assert engine.answer(label).values == expected_label.values
        assert engine.answer(text).values == expected_text.values
        # Many threads at once, each its own answers.
        results: dict[int, object] = {}
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(
            i, engine.answer(boolean(short_prompts[i:] + short_prompts[:i])).values))
            for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for i in range(4):
            assert results[i] == expected.values[i:] + expected.values[:i]


@pytest.mark.timeout(120)
def test_every_waiting_caller_hears_of_a_dead_child(tiny_qwen3: tuple[Path, object]) -> None:
    import threading

    config = EngineConfig(model=str(tiny_qwen3[0]), chunk_tokens=32, prefix_block_tokens=8)
    documents = [f"Document {i}: " + "words and more words. " * 10 for i in range(400)]
    engine = EngineProcess(config)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            engine.answer(boolean([filter_prompt(d, "Long?") for d in documents]))
        except EngineError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(3)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)
        engine._process.kill()  # noqa: SLF001 - simulate the OOM killer
        started = time.monotonic()
        for t in threads:
            t.join(30)
        assert time.monotonic() - started < 10
        assert len(errors) == 3 and all("killed by SIGKILL" in str(e) for e in errors)
    finally:
        engine.close()


@pytest.mark.timeout(300)
def test_cancel_stops_a_long_call_and_the_engine_stays_usable(smollm2_folder: Path) -> None:
    import threading

    from heron.engine.api import EngineCancelled

    documents = [f"Review {i}: " + "a long and winding plot. " * 40 for i in range(64)]
    prompts = [filter_prompt(d, "Is the plot long?") for d in documents]
    with EngineProcess(EngineConfig(chunk_tokens=512)) as engine:
        cancel = threading.Event()
        timer = threading.Timer(1.0, cancel.set)
        timer.start()
        started = time.monotonic()
        with pytest.raises(EngineCancelled):
            engine.answer(boolean(prompts), cancel=cancel)
        timer.cancel()
        # Far sooner than the whole batch (several chunks of 512 tokens each take ~1 s).
        assert time.monotonic() - started < 30
        # A caller already cancelled never reaches the child; a fresh call still works.
        with pytest.raises(EngineCancelled):
            engine.answer(boolean(prompts[:1]), cancel=cancel)
        assert len(engine.answer(boolean(prompts[:2])).values) == 2


@pytest.mark.timeout(300)
def test_a_streamed_call_crosses_the_pipe(tiny_qwen3: tuple[Path, object]) -> None:
    """Parts sent as the caller makes them: answers of one request, progress between parts in
    the caller's thread; cancel and a failing iterator stop the call; check refuses before."""
    import threading

    from heron.engine.api import EngineCancelled, PromptTooLong

    config = EngineConfig(model=str(tiny_qwen3[0]), chunk_tokens=64, prefix_block_tokens=8)
    prompts = [filter_prompt(f"Document {i}: " + "a winding plot. " * (1 + i % 4), "Long?")
               for i in range(40)]
    local = LocalEngine(config)
    expected = local.answer(boolean(prompts))
    local.close()
    with EngineProcess(config) as engine:
        caller = threading.get_ident()
        threads: set[int] = set()
        made: list[int] = []

        def parts(cancel: threading.Event | None = None):  # noqa: ANN202 - a generator
            for start in range(4, 40, 12):
                made.append(start)
                if cancel is not None and start > 4:
                    cancel.set()
                yield prompts[start : start + 12]

        got = engine.answer(boolean(prompts[:4]), progress=lambda m: threads.add(
            threading.get_ident()), more=parts())
        assert got.values == expected.values and got.scores == expected.scores
        assert got.metrics.prompts == 40 and threads == {caller}
        assert got.metrics.first_chunk_at is not None and got.metrics.device_seconds > 0
        made.clear()
        cancel = threading.Event()
        with pytest.raises(EngineCancelled):
            engine.answer(boolean(prompts[:4]), cancel=cancel, more=parts(cancel))
        assert made == [4, 16]  # no part was asked for after the cancel

        def failing():  # noqa: ANN202 - a generator
            yield prompts[4:8]
            raise ValueError("rendering failed")

        with pytest.raises(ValueError, match="rendering failed"):
            engine.answer(boolean(prompts[:4]), more=failing())
        too_long = filter_prompt("the plot moves on " * 20000, "Long?")  # > 40,960 tokens
        with pytest.raises(PromptTooLong) as info:
            engine.check(boolean([*prompts[:3], too_long]))
        assert info.value.prompt == 3
        assert engine.answer(boolean(prompts[:3])).values == expected.values[:3]  # still serves

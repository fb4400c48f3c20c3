"""EngineSupervisor: a dead, hung or orphaned engine process, and what the callers see.

Real engine processes on the tiny random-weight Qwen3; faults are real signals (SIGKILL as the
OOM killer sends it, SIGSTOP for a process that stops answering, SIGKILL of the parent).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from support.engine_reference import boolean
from support.polling import wait_for
from support.processes import alive

from heron.engine.api import EngineCancelled, EngineError
from heron.engine.config import EngineConfig
from heron.engine.prompts import filter_prompt
from heron.engine.supervisor import EngineSupervisor, Supervision

REPO = Path(__file__).resolve().parents[2]
FAST = Supervision(heartbeat_s=0.2, unresponsive_s=2.0, first_restart_delay_s=0.1,
                   max_restart_delay_s=0.4)
PROMPTS = [filter_prompt(f"Review {i}: fine.", "Is it good?") for i in range(4)]


def _long_request() -> object:
    """Enough work for a few seconds on the tiny model in small chunks."""
    documents = [f"Document {i}: " + "words and more words. " * 12 for i in range(600)]
    return boolean([filter_prompt(d, "Long?") for d in documents])


def _long_request_in_background(engine: EngineSupervisor
                                ) -> tuple[threading.Thread, list[BaseException]]:
    """A thread running `_long_request()`, and the `EngineError` it ends with (once it ends)."""
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            engine.answer(_long_request())
        except EngineError as exc:
            errors.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    return thread, errors


def _config(folder: Path) -> EngineConfig:
    return EngineConfig(model=str(folder), chunk_tokens=64, prefix_block_tokens=8)




@pytest.mark.timeout(120)
def test_an_engine_killed_mid_statement_fails_that_call_and_is_restarted(tiny_qwen3):
    with EngineSupervisor(_config(tiny_qwen3[0]), FAST) as engine:
        expected = engine.answer(boolean(PROMPTS))
        thread, errors = _long_request_in_background(engine)
        time.sleep(1.0)
        killed = engine.pid
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        started = time.monotonic()
        thread.join(30)
        assert time.monotonic() - started < 2  # told at once, not after a timeout
        assert len(errors) == 1
        message = str(errors[0])
        assert "killed by SIGKILL" in message and "run the statement again" in message
        # The next call waits for the new engine and gets the same answers.
        got = engine.answer(boolean(PROMPTS))
        assert got.values == expected.values and got.scores == expected.scores
        assert engine.restarts == 1 and engine.pid not in (None, killed)
        assert engine.count_tokens(["hello world"]) == [2]


@pytest.mark.timeout(120)
def test_an_engine_killed_while_idle_is_back_for_the_next_call(tiny_qwen3):
    with EngineSupervisor(_config(tiny_qwen3[0]), FAST) as engine:
        expected = engine.answer(boolean(PROMPTS)).values
        for restarts in (1, 2):  # twice: the back-off does not stop it
            killed = engine.pid
            os.kill(killed, signal.SIGKILL)
            assert wait_for(lambda: not alive(killed), 5)  # noqa: B023 - used at once
            assert engine.answer(boolean(PROMPTS)).values == expected
            assert engine.restarts == restarts


@pytest.mark.timeout(120)
def test_an_engine_that_stops_answering_is_killed_and_restarted(tiny_qwen3):
    with EngineSupervisor(_config(tiny_qwen3[0]), FAST) as engine:
        expected = engine.answer(boolean(PROMPTS)).values
        thread, errors = _long_request_in_background(engine)
        time.sleep(1.0)
        stopped = engine.pid
        os.kill(stopped, signal.SIGSTOP)  # alive, but never answers again
        started = time.monotonic()
        # A call it never received waits for the next engine and is answered there.
        assert engine.answer(boolean(PROMPTS)).values == expected
        assert time.monotonic() - started > FAST.unresponsive_s
        thread.join(30)
        assert len(errors) == 1 and "did not answer for 2 s" in str(errors[0])
        assert not alive(stopped) and engine.restarts == 1


@pytest.mark.timeout(120)
def test_a_failed_restart_is_retried_with_back_off_and_calls_fail_fast(tiny_qwen3, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_qwen3[0], folder)
    with EngineSupervisor(_config(folder), FAST) as engine:
        expected = engine.answer(boolean(PROMPTS)).values
        folder.rename(tmp_path / "gone")
        os.kill(engine.pid, signal.SIGKILL)
        assert wait_for(lambda: _fails_fast(engine), 30)
        with pytest.raises(EngineError, match="could not be restarted.*next attempt"):
            engine.answer(boolean(PROMPTS))
        (tmp_path / "gone").rename(folder)
        assert wait_for(lambda: engine.pid is not None, 30)
        assert engine.answer(boolean(PROMPTS)).values == expected


def _fails_fast(engine: EngineSupervisor) -> bool:
    started = time.monotonic()
    try:
        engine.count_tokens(["x"])
    except EngineError:
        return time.monotonic() - started < 0.5
    return False


@pytest.mark.timeout(120)
def test_a_call_waiting_for_a_restart_can_be_cancelled(tiny_qwen3, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_qwen3[0], folder)
    slow = Supervision(heartbeat_s=0.2, first_restart_delay_s=30.0)
    with EngineSupervisor(_config(folder), slow) as engine:
        os.kill(engine.pid, signal.SIGKILL)
        assert wait_for(lambda: engine.pid is None, 10)
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(EngineCancelled):
            engine.answer(boolean(PROMPTS), cancel=cancel)
        assert time.monotonic() - started < 1.0


@pytest.mark.timeout(120)
def test_the_engine_exits_when_its_server_is_killed(tiny_qwen3, tmp_path):
    """kill -9 of the server: the engine child notices within a second and exits."""
    script = textwrap.dedent(f"""
        import sys, time
        from heron.engine.config import EngineConfig
        from heron.engine.supervisor import EngineSupervisor
        if __name__ == "__main__":
            engine = EngineSupervisor(EngineConfig(model={str(tiny_qwen3[0])!r}))
            print(engine.pid, flush=True)
            time.sleep(600)
    """)
    (tmp_path / "server.py").write_text(script)
    server = subprocess.Popen([sys.executable, str(tmp_path / "server.py")], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        child = int(server.stdout.readline())
        assert alive(child)
        server.kill()
        server.wait()
        started = time.monotonic()
        assert wait_for(lambda: not alive(child), 5)
        assert time.monotonic() - started < 1.5
    finally:
        server.kill()
        server.stdout.close()


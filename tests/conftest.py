"""Fixtures shared by several test packages (the helpers behind them live in tests/support).

`heron_server` (session-scoped) is one `heron serve` with `--model none` on a temporary data
directory; `spawn_heron(data_dir, *args)` starts others (all stopped at the end). `postgres15` is
a throwaway PostgreSQL cluster, the differential tests' oracle (skipped where PostgreSQL is not
installed). `tiny_qwen3` and
`tiny_llama3` are random-weight checkpoints with the real Qwen3 tokenizer, with their
`transformers` models as the reference.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support.checkpoints import QWEN_VOCAB, save_tiny
from support.hang_watch import HangWatch
from support.heron_process import START_TIMEOUT_S, HeronProcess, start_heron
from support.postgres import PostgresProcess, find_binaries, start_postgres

import heron.engine  # noqa: F401 - before torch loads MKL: its reproducible mode (engine/__init__)

if TYPE_CHECKING:
    import torch

# Before torch loads OpenMP: on a shared 2-core machine spinning workers make CPU runs erratic
# (engine.process does the same for the engine child).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# A test stuck past pytest-timeout's limit (whose SIGALRM can't interrupt C code) gets this much
# longer before the watchdog prints its stacks and ends the run.
HANG_GRACE_S = 30
_hang_watch = pytest.StashKey[HangWatch]()


def pytest_sessionstart(session: pytest.Session) -> None:
    timeout = session.config.getoption("timeout", None) or session.config.getini("timeout")
    if timeout and float(timeout) > 0:
        session.config.stash[_hang_watch] = HangWatch.start(float(timeout) + HANG_GRACE_S)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    watch = item.config.stash.get(_hang_watch, None)
    if watch is not None:
        watch.test_started(item.nodeid)
    try:
        return (yield)
    finally:
        if watch is not None:
            watch.test_ended()


def pytest_sessionfinish(session: pytest.Session) -> None:
    watch = session.config.stash.get(_hang_watch, None)
    if watch is not None:
        watch.stop()


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


@pytest.fixture(scope="session")
def postgres15() -> Iterator[PostgresProcess]:
    if find_binaries() is None:
        pytest.skip("PostgreSQL server binaries not installed (Debian: apt-get install "
                    "postgresql-15); the differential tests compare Heron with it")
    server = start_postgres()
    yield server
    server.stop()


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
    return save_tiny(model, tmp_path_factory.mktemp("tiny-qwen3")), model


@pytest.fixture(scope="session")
def tiny_qwen3_d128(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    """A 2-layer random-weight Qwen3 with 128-dimension heads, the width of the real models
    (and of FlashAttention-3's kernels)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(2)
    config = Qwen3Config(vocab_size=QWEN_VOCAB, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=128, initializer_range=0.2, tie_word_embeddings=False)
    model = Qwen3ForCausalLM(config).eval()
    return save_tiny(model, tmp_path_factory.mktemp("tiny-qwen3-d128")), model


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
    return save_tiny(model, tmp_path_factory.mktemp("tiny-llama3")), model

"""EngineConfig: validation at construction, per-device defaults, and no torch on import."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from heron.engine.api import DEFAULT_MODEL, EngineError
from heron.engine.config import DEFAULT_CHUNK_TOKENS, DEFAULT_KV_CACHE_BYTES, EngineConfig

REPO = Path(__file__).resolve().parents[2]


def test_defaults_are_the_embedded_model_on_cpu() -> None:
    config = EngineConfig()
    assert (config.model, config.device) == (DEFAULT_MODEL, "cpu")
    assert config.effective_kv_cache_bytes == DEFAULT_KV_CACHE_BYTES["cpu"] == 1 << 30
    assert config.effective_chunk_tokens == DEFAULT_CHUNK_TOKENS["cpu"] == 4096


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_defaults_follow_the_device_type(device: str) -> None:
    config = EngineConfig(device=device)
    assert config.device_type == "cuda"
    assert config.effective_kv_cache_bytes == 16 << 30
    assert config.effective_chunk_tokens == 32768


def test_explicit_budgets_win_over_defaults() -> None:
    config = EngineConfig(device="cuda", kv_cache_bytes=0, chunk_tokens=24)
    assert config.effective_kv_cache_bytes == 0  # 0: keep no prefix KV across calls
    assert config.effective_chunk_tokens == 24


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("model", "", "model must name a model"),
        ("model", "   ", "model must name a model"),
        ("device", "gpu", "device must be cpu, cuda or cuda:N, got 'gpu'"),
        ("device", "cuda:", "device must be cpu, cuda or cuda:N"),
        ("device", "cpu:0", "device must be cpu, cuda or cuda:N"),
        ("device", "CUDA", "device must be cpu, cuda or cuda:N"),
        ("kv_cache_bytes", -1, "kv_cache_bytes must be a whole number of bytes >= 0"),
        ("kv_cache_bytes", 1.5, "kv_cache_bytes must be a whole number"),
        ("kv_cache_bytes", True, "kv_cache_bytes must be a whole number"),
        ("chunk_tokens", 0, "chunk_tokens must be a whole number of tokens >= 1"),
        ("chunk_tokens", "4096", "chunk_tokens must be a whole number"),
        ("startup_timeout_s", 0, "startup_timeout_s must be a number of seconds > 0"),
        ("startup_timeout_s", float("nan"), "startup_timeout_s must be a number of seconds > 0"),
    ],
)
def test_bad_values_raise_engine_error_saying_what_to_fix(
    field: str, value: object, message: str
) -> None:
    with pytest.raises(EngineError, match=re.escape(message)):
        EngineConfig(**{field: value})  # type: ignore[arg-type]


def test_frozen_and_picklable() -> None:
    config = EngineConfig(model="/models/x", device="cuda:1", chunk_tokens=512)
    with pytest.raises(AttributeError):
        config.device = "cpu"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(config)) == config  # EngineProcess sends it to the child


def test_importing_engine_config_does_not_import_torch() -> None:
    code = (
        "import sys, heron.engine.config\n"
        "heron.engine.config.EngineConfig(device='cuda:0')\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)

"""EngineConfig: validation at construction, per-device defaults, the `heron serve` engine flags,
and no torch on import."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from heron.engine.api import DEFAULT_MODEL, EngineError
from heron.engine.config import DEFAULT_CHUNK_TOKENS, DEFAULT_PREFIX_BLOCK_TOKENS, EngineConfig
from heron.server import cli

REPO = Path(__file__).resolve().parents[2]


def test_defaults_are_the_embedded_model_on_cpu() -> None:
    config = EngineConfig()
    assert (config.model, config.device) == (DEFAULT_MODEL, "cpu")
    assert config.kv_cache_bytes is None  # resolved at load: 1 GiB on CPU
    assert config.effective_chunk_tokens == DEFAULT_CHUNK_TOKENS["cpu"] == 4096
    assert config.effective_prefix_block_tokens == DEFAULT_PREFIX_BLOCK_TOKENS["cpu"] == 64


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_defaults_follow_the_device_type(device: str) -> None:
    config = EngineConfig(device=device)
    assert config.device_type == "cuda"
    assert config.effective_chunk_tokens == 32768
    assert config.effective_prefix_block_tokens == 64


def test_explicit_budgets_win_over_defaults() -> None:
    config = EngineConfig(device="cuda", kv_cache_bytes=1 << 20, chunk_tokens=24,
                          prefix_block_tokens=8)
    assert config.kv_cache_bytes == 1 << 20
    assert config.effective_chunk_tokens == 24
    assert config.effective_prefix_block_tokens == 8
    # A default block never exceeds an explicit chunk.
    assert EngineConfig(device="cuda", chunk_tokens=40).effective_prefix_block_tokens == 40


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("model", "", "model must name a model"),
        ("model", "   ", "model must name a model"),
        ("device", "gpu", "device must be cpu, cuda or cuda:N, got 'gpu'"),
        ("device", "cuda:", "device must be cpu, cuda or cuda:N"),
        ("device", "cpu:0", "device must be cpu, cuda or cuda:N"),
        ("device", "CUDA", "device must be cpu, cuda or cuda:N"),
        ("kv_cache_bytes", -1, "kv_cache_bytes must be a whole number of bytes >= 1"),
        ("kv_cache_bytes", 0, "kv_cache_bytes must be a whole number of bytes >= 1"),
        ("kv_cache_bytes", 1.5, "kv_cache_bytes must be a whole number"),
        ("kv_cache_bytes", True, "kv_cache_bytes must be a whole number"),
        ("chunk_tokens", 0, "chunk_tokens must be a whole number of tokens >= 1"),
        ("chunk_tokens", "4096", "chunk_tokens must be a whole number"),
        ("prefix_block_tokens", 0, "prefix_block_tokens must be a whole number of tokens >= 1"),
        ("prefix_block_tokens", 8192, "prefix_block_tokens (8192) must not exceed chunk_tokens "
                                      "(4096)"),
        ("attention", "flash", "attention must be one of segments, fa3, got 'flash'"),
        ("attention", "fa3", "attention fa3 needs deterministic off (--no-deterministic)"),
        ("startup_timeout_s", 0, "startup_timeout_s must be a number of seconds > 0"),
        ("startup_timeout_s", float("nan"), "startup_timeout_s must be a number of seconds > 0"),
    ],
)
def test_bad_values_raise_engine_error_saying_what_to_fix(
    field: str, value: object, message: str
) -> None:
    with pytest.raises(EngineError, match=re.escape(message)):
        EngineConfig(**{field: value})  # type: ignore[arg-type]


def _engine_config(*flags: str) -> EngineConfig | None:
    return cli.server_config(cli.build_parser().parse_args(["serve", *flags])).engine


def test_serve_flags_size_the_kv_cache_chunks_and_blocks() -> None:
    config = _engine_config("--device", "cuda", "--kv-cache-gb", "80", "--chunk-tokens", "16384",
                            "--prefix-block-tokens", "256")
    assert config == EngineConfig(device="cuda", kv_cache_bytes=80 << 30, chunk_tokens=16384,
                                  prefix_block_tokens=256)
    assert _engine_config("--kv-cache-gb", "0.5") == EngineConfig(kv_cache_bytes=1 << 29)
    assert _engine_config() == EngineConfig()  # each flag defaults to the device's default
    assert _engine_config("--attention", "fa3", "--no-deterministic") == EngineConfig(
        attention="fa3", deterministic=False)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--kv-cache-gb", "lots"], "argument --kv-cache-gb: not a number of GiB: 'lots'"),
        (["--kv-cache-gb", "0"], "argument --kv-cache-gb: must be a number of GiB > 0, got '0'"),
        (["--kv-cache-gb", "nan"], "must be a number of GiB > 0"),
        (["--chunk-tokens", "1e3"], "argument --chunk-tokens: not a number of tokens: '1e3'"),
        (["--chunk-tokens", "0"], "chunk_tokens must be a whole number of tokens >= 1"),
        (["--chunk-tokens", "256", "--prefix-block-tokens", "512"],
         "prefix_block_tokens (512) must not exceed chunk_tokens (256)"),
        (["--attention", "fa3"], "attention fa3 needs deterministic off"),
    ],
)
def test_bad_engine_flags_exit_with_usage_status_2(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", *flags])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "usage:" in error and message in error


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

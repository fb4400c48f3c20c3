"""Model resolution: embedded names, local folders, the local Hugging Face cache, refusals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from heron.engine.api import EngineError
from heron.engine.weights import resolve_model


def test_unknown_model_says_what_was_tried(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(EngineError) as info:
        resolve_model("NoSuchOrg/NoSuchModel")
    message = str(info.value)
    assert "embedded names (smollm2-135m)" in message
    assert "local directory" in message and "Hugging Face cache" in message


def test_incomplete_local_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EngineError, match="lacks tokenizer.json"):
        resolve_model(str(tmp_path))


def test_hf_cache_snapshot_is_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_qwen3: tuple[Path, torch.nn.Module]
) -> None:
    repo = tmp_path / "hub" / "models--Qwen--Tiny"
    snapshot = repo / "snapshots" / "abc123"
    shutil.copytree(tiny_qwen3[0], snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123\n")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert resolve_model("Qwen/Tiny") == snapshot


def test_embedded_model_is_converted_once(smollm2_folder: Path) -> None:
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in smollm2_folder.iterdir()
    }
    assert resolve_model("smollm2-135m") == smollm2_folder  # second resolve: no conversion
    assert not any(p.name.startswith(".smollm2-135m.tmp") for p in smollm2_folder.parent.iterdir())

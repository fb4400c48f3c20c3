"""Heron's AI engine: answers TRUE/FALSE prompts over table rows with a local LLM.

Public surface (importing this package never imports torch — the server process stays light):

- ``open_engine(model, device=..., in_process=...)``: the entry point. By default it starts the
  resident engine process (``engine.process.EngineProcess``), which owns the model and KV cache;
  ``in_process=True`` builds a ``engine.local.LocalEngine`` in this process (tests, tools).
- ``engine.api``: ``Engine`` protocol, ``BoolAnswers``, ``Metrics``, ``ModelInfo``, ``EngineError``.
- ``engine.prompts``: the versioned prompt layout (``filter_prompt``, ``join_prompt``).

``model`` is an embedded name (``DEFAULT_MODEL``), a local Hugging Face-layout directory, or a
Hugging Face id present in the local cache (see ``engine.weights``).
"""

from __future__ import annotations

from heron.engine.api import DEFAULT_MODEL, BoolAnswers, Engine, EngineError, Metrics, ModelInfo
from heron.engine.prompts import TEMPLATE_VERSION, Prompt, filter_prompt, join_prompt

__all__ = [
    "DEFAULT_MODEL",
    "TEMPLATE_VERSION",
    "BoolAnswers",
    "Engine",
    "EngineError",
    "Metrics",
    "ModelInfo",
    "Prompt",
    "filter_prompt",
    "join_prompt",
    "open_engine",
]


def open_engine(
    model: str = DEFAULT_MODEL, *, device: str = "cpu", in_process: bool = False
) -> Engine:
    """Start an engine for ``model`` on ``device``; raises ``EngineError`` if it cannot load."""
    if in_process:
        from heron.engine.local import LocalEngine  # noqa: PLC0415 - imports torch

        return LocalEngine(model, device=device)
    from heron.engine.process import EngineProcess  # noqa: PLC0415

    return EngineProcess(model, device=device)

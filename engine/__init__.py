"""Heron's AI engine: answers TRUE/FALSE prompts over table rows with a local LLM.

Public surface (importing this package never imports torch — the server process stays light):

- ``open_engine(config, in_process=...)``: the entry point. By default it starts the resident
  engine process (``engine.process.EngineProcess``), which owns the model and KV cache;
  ``in_process=True`` builds a ``engine.local.LocalEngine`` in this process (tests, tools).
- ``engine.config``: ``EngineConfig`` (model, device, budgets), validated when constructed.
- ``engine.api``: the ``Engine`` protocol, ``Request``, ``Answers``, ``AnswerKind``, ``Metrics``,
  ``ModelInfo``, ``EngineError``.
- ``engine.prompts``: the versioned prompt layout (``filter_prompt``, ``join_prompt``).
"""

from __future__ import annotations

from heron.engine.api import (
    DEFAULT_MODEL,
    AnswerKind,
    Answers,
    Engine,
    EngineError,
    Metrics,
    ModelInfo,
    Request,
)
from heron.engine.config import EngineConfig
from heron.engine.prompts import TEMPLATE_VERSION, Prompt, filter_prompt, join_prompt

__all__ = [
    "DEFAULT_MODEL",
    "TEMPLATE_VERSION",
    "AnswerKind",
    "Answers",
    "Engine",
    "EngineConfig",
    "EngineError",
    "Metrics",
    "ModelInfo",
    "Prompt",
    "Request",
    "filter_prompt",
    "join_prompt",
    "open_engine",
]


def open_engine(config: EngineConfig, *, in_process: bool = False) -> Engine:
    """Start an engine as ``config`` says; raises ``EngineError`` if it cannot load."""
    if in_process:
        from heron.engine.local import LocalEngine  # noqa: PLC0415 - imports torch

        return LocalEngine(config)
    from heron.engine.process import EngineProcess  # noqa: PLC0415

    return EngineProcess(config)

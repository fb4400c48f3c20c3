"""Heron's AI engine: answers prompts over table rows with a local LLM — TRUE/FALSE, P(TRUE), a
label out of a set, or generated text.

Public surface (importing this package never imports torch — the server process stays light):

- ``open_engine(config, in_process=...)``: the entry point. By default it starts the resident
  engine process (``engine.process.EngineProcess``), which owns the model and KV arena, under an
  ``engine.supervisor.EngineSupervisor`` that restarts it when it dies or hangs;
  ``in_process=True`` builds a ``engine.local.LocalEngine`` in this process (tests, tools).
  Either runs every caller's requests through one scheduler (``engine.scheduler``).
- ``engine.config``: ``EngineConfig`` (model, device, KV arena, chunk and block sizes), validated
  when constructed.
- ``engine.api``: the ``Engine`` protocol, ``Request``, ``Answers``, ``AnswerKind``, ``Metrics``,
  ``ProgressCallback``, ``ModelInfo``, ``EngineError``, ``EngineCancelled``.
- ``engine.prompts``: the versioned prompt layout (``filter_prompt``, ``join_prompt``,
  ``classify_prompt``, ``completion_prompt``).
"""

from __future__ import annotations

import os

# MKL's reproducible mode, read when torch loads MKL (torch is imported after this package): by
# default its CPU GEMMs may take other code paths from run to run when the cores are contended,
# which moved a score by 1e-4 between two runs of the same prompts (an engine process beside a
# busy one). Costs nothing measurable on our GEMM shapes.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

from heron.engine.api import (
    DEFAULT_MODEL,
    AnswerKind,
    Answers,
    Engine,
    EngineError,
    Metrics,
    ModelInfo,
    ProgressCallback,
    Request,
)
from heron.engine.config import EngineConfig
from heron.engine.prompts import (
    TEMPLATE_VERSION,
    Prompt,
    classify_prompt,
    completion_prompt,
    filter_prompt,
    join_prompt,
)

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
    "ProgressCallback",
    "Prompt",
    "Request",
    "classify_prompt",
    "completion_prompt",
    "filter_prompt",
    "join_prompt",
    "open_engine",
]


def open_engine(config: EngineConfig, *, in_process: bool = False) -> Engine:
    """Start an engine as ``config`` says; raises ``EngineError`` if it cannot load."""
    if in_process:
        from heron.engine.local import LocalEngine  # noqa: PLC0415 - imports torch

        return LocalEngine(config)
    from heron.engine.supervisor import EngineSupervisor  # noqa: PLC0415

    return EngineSupervisor(config)

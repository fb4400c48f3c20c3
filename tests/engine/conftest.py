"""Engine fixtures: the folder of the embedded SmolLM2 model (converted once into the heron
cache). The tiny random-weight checkpoints live in tests/conftest.py, shared with the planner."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    from heron.engine.weights import resolve_model

    return resolve_model("smollm2-135m")  # converts once into the heron cache, then reuses it

import pytest

import engine


@pytest.fixture(scope="session")
def smollm2():
    """The embedded default model, in this process (the engine process is tested elsewhere)."""
    instance = engine.open_engine(engine.DEFAULT_MODEL, in_process=True)
    yield instance
    instance.close()

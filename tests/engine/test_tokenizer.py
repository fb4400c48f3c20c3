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


# Characters whose tokens or normalization are unusual: combining marks (NFC composes them),
# composition exclusions and singletons (NFC decomposes or maps them: U+0958, U+0344, U+2126,
# U+F900), Hangul jamo (composed into syllables), CJK, emoji, control characters.
_ALPHABET = ("ae e\u0301 \u0958\u0344\u2126\uf900 \u1100\u1161\u11a8 漢字かな 😀🧬 \t\n\r"
             "\u00e9\u0300\u0323 <|im_start|> x9")


def _random_text(rng: np.random.Generator) -> str:
    return "".join(rng.choice(list(_ALPHABET), size=int(rng.integers(0, 40))))


def test_at_most_bounds_every_count_from_above() -> None:
    """The byte bound (the fast path) against tokenizing (its twin), on random texts."""
    tokenizer = PromptTokenizer(qwen_tokenizer_json())
    assert tokenizer.byte_factor == 3  # byte-level BPE after NFC
    rng = np.random.default_rng(0)
    texts = [_random_text(rng) for _ in range(2000)]
    bounds = tokenizer.at_most(texts)
    assert tokenizer.encoded_texts == 0  # the bound tokenized nothing
    counts = np.asarray(tokenizer.count(texts))
    assert np.all(bounds >= counts)
    assert np.all((bounds == 0) == (counts == 0))  # a bound is 0 only for an empty text
    # The characters NFC grows most, alone and repeated; ASCII text is bounded by its length.
    grown = ["\U0001d160" * 50, "\u0958" * 50, "\u0344" * 50, "\ufb2c" * 50, "a\u0301" * 50]
    assert np.all(tokenizer.at_most(grown) >= np.asarray(tokenizer.count(grown)))
    assert tokenizer.at_most(["plain ASCII text"]).tolist() == [16]


def _exact_check(tokenizer: PromptTokenizer, prompts: list[Prompt], added: int,
                 context: int) -> tuple[int, int] | None:
    """The slow twin of `local.check_context`: every prompt tokenized; (prompt, tokens) of the
    first too long."""
    tokenized = tokenizer.encode_prompts(prompts)
    for index in range(len(tokenized)):
        prefix, suffix = tokenized.ids(index)
        if len(prefix) + len(suffix) + added > context:
            return index, len(prefix) + len(suffix) + added
    return None


def test_the_context_check_refuses_what_tokenizing_every_prompt_would() -> None:
    from heron.engine.api import PromptTooLong
    from heron.engine.local import check_context

    tokenizer = PromptTokenizer(qwen_tokenizer_json())
    rng = np.random.default_rng(1)
    prefixes = [_random_text(rng) + "x" for _ in range(12)]
    suffixes = [_random_text(rng) + "?" for _ in range(12)]
    refused = 0
    for _ in range(300):
        prompts = [Prompt(prefixes[rng.integers(12)], suffixes[rng.integers(12)])
                   for _ in range(int(rng.integers(1, 20)))]
        context, added = int(rng.integers(5, 80)), int(rng.integers(0, 3))
        expected = _exact_check(tokenizer, prompts, added, context)
        try:
            check_context(tokenizer, prompts, added, context, offset=100)
            got = None
        except PromptTooLong as exc:
            got = exc.prompt - 100, exc.tokens
            refused += 1
        assert got == expected
    assert 30 < refused < 270  # both outcomes were tried


# Words and separators of long random texts: ASCII words meet at " " (where slices are cut),
# and the characters around the cuts vary (punctuation, digits, newlines, contractions, NFC).
_PIECES = ["the", "Fever", "it's", "don't", "x9", "42", " ", "  ", ". ", ",", "\n", "\n\n", "\t",
           "e\u0301", "déjà", "漢字", "😀", "<|im_start|>", "'ll", "---", "a", "Z"]


def _long_text(rng: np.random.Generator, pieces: int) -> str:
    return "".join(rng.choice(_PIECES, size=pieces))


def test_long_texts_tokenized_in_slices_match_the_whole_text() -> None:
    """Slices (the fast path) against the plain tokenizer on the whole text (its twin)."""
    plain = Tokenizer.from_file(str(qwen_tokenizer_json()))
    tokenizer = PromptTokenizer(qwen_tokenizer_json(), slice_chars=16)
    assert tokenizer.slice_chars == 16
    rng = np.random.default_rng(2)
    texts = [_long_text(rng, int(rng.integers(0, 400))) for _ in range(300)]
    texts += ["Report: " + " ".join(["fever cough"] * 300), "a b" * 100, "word " * 50]
    got = tokenizer.encode(texts)
    for text, ids in zip(texts, got, strict=True):
        assert ids.tolist() == plain.encode(text, add_special_tokens=False).ids
    assert PromptTokenizer(qwen_tokenizer_json()).slice_chars == 2048


def _bpe_json(tmp_path: Path, pre_tokenizer: object, added: list[str] = ()) -> Path:
    from tokenizers import models, pre_tokenizers, trainers

    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=list(added),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    rng = np.random.default_rng(3)
    trained.train_from_iterator([_long_text(rng, 200) for _ in range(50)], trainer)
    path = tmp_path / f"tokenizer{len(list(tmp_path.iterdir()))}.json"
    trained.save(str(path))
    return path


def test_slices_only_where_the_pre_tokenizer_ends_a_token_at_the_cut(tmp_path: Path) -> None:
    from tokenizers import pre_tokenizers

    gpt2 = _bpe_json(tmp_path, pre_tokenizers.ByteLevel(add_prefix_space=False))
    prefixed = _bpe_json(tmp_path, pre_tokenizers.ByteLevel(add_prefix_space=True))
    spaced = _bpe_json(tmp_path, pre_tokenizers.ByteLevel(add_prefix_space=False), ["a b"])
    whitespace = _bpe_json(tmp_path, pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.ByteLevel(use_regex=False)]))
    assert PromptTokenizer(gpt2, slice_chars=16).slice_chars == 16
    for refused in (prefixed, spaced, whitespace):
        assert PromptTokenizer(refused, slice_chars=16).slice_chars == 0
    plain = Tokenizer.from_file(str(gpt2))
    rng = np.random.default_rng(4)
    texts = [_long_text(rng, int(rng.integers(0, 400))) for _ in range(200)]
    for text, ids in zip(texts, PromptTokenizer(gpt2, slice_chars=16).encode(texts), strict=True):
        assert ids.tolist() == plain.encode(text, add_special_tokens=False).ids

"""Prompt tokenization with the model's own ``tokenizer.json`` (Hugging Face ``tokenizers``).

A prompt's ids are ``lead + encode(prefix) + encode(suffix)``: the two parts are encoded
separately (no special tokens) so that a prefix's ids, and hence its KV, do not depend on what
follows. ``lead`` is whatever the tokenizer's post-processor puts before a single sequence (the
BOS of Llama 3); it is empty for SmolLM2 and Qwen3. It belongs to the prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from heron.engine.prompts import Prompt

TokenIds = tuple[int, ...]


class PromptTokenizer:
    def __init__(self, path: Path) -> None:
        self._tokenizer = Tokenizer.from_file(str(path))
        self.lead: TokenIds = self._leading_special_ids()

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, texts: Sequence[str]) -> list[TokenIds]:
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [tuple(e.ids) for e in encodings]

    def encode_prompts(self, prompts: Sequence[Prompt]) -> list[tuple[TokenIds, TokenIds]]:
        """(prefix ids including ``lead``, suffix ids) per prompt."""
        prefixes = self.encode([p.prefix for p in prompts])
        suffixes = self.encode([p.suffix for p in prompts])
        return [(self.lead + pre, suf) for pre, suf in zip(prefixes, suffixes, strict=True)]

    def count(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self.encode(texts)]

    def _leading_special_ids(self) -> TokenIds:
        # Locate the plain encoding inside the post-processed one; whatever precedes it is the
        # tokenizer's mandatory lead (e.g. <|begin_of_text|>). Trailing additions (EOS) are
        # ignored: a prompt continues after its text, it does not end there.
        plain = self._tokenizer.encode("a", add_special_tokens=False).ids
        full = self._tokenizer.encode("a", add_special_tokens=True).ids
        for start in range(len(full) - len(plain) + 1):
            if full[start : start + len(plain)] == plain:
                return tuple(full[:start])
        return ()

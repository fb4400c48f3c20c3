"""Prompt tokenization with the model's own ``tokenizer.json``, each distinct text once.

Contract:
- A prompt's ids are ``lead + encode(prefix) + encode(suffix)``: the two parts are encoded
  separately (no special tokens) so that a prefix's ids, and hence its KV, do not depend on what
  follows. ``lead`` is whatever the tokenizer's post-processor puts before a single sequence (the
  BOS of Llama 3); it is empty for SmolLM2 and Qwen3. It belongs to the prefix.
- ``encode`` runs the tokenizer only on texts it has not seen: results are kept as read-only
  int32 arrays in a cache keyed by the text's content hash (BLAKE2b), bounded by bytes, least
  recently used first out. A long text is tokenized in slices that run in parallel (a 4K-token
  document takes ~8 ms on one core, and a join's first chunk waits for its anchors), cut only
  where the tokenizer's pre-tokenizer is known to end a pre-token — between an ASCII letter and
  " " + ASCII letter — so the ids are those of the whole text (``_cuttable``; other tokenizers
  run whole). ``encode_prompts`` tokenizes each distinct text of a request once,
  however many prompts repeat it, and says per prompt which distinct arrays it is made of.
- ``at_most(texts)`` is an upper bound of each text's token count, without tokenizing where the
  tokenizer allows it: for byte-level BPE (every token spans at least one byte of the
  normalized text) the bytes the normalized text may have — its ASCII characters (which NFC
  leaves alone) plus ``byte_factor`` × the UTF-8 bytes of the others (1 with no normalizer,
  3 with NFC: Unicode's bound on how NFC grows UTF-8); the exact count for any other tokenizer.
- ``stop_ids`` are the ids that end a generated text (the tokenizer's eos token, and the model's
  ``eos_token_id``); ``decode`` turns generated ids back into text, special tokens dropped.
- Thread-safe: the server's threads tokenize concurrently with the engine's step loop.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from heron.engine.prompts import Prompt

# Cached token arrays: ~16M tokens, far more than the distinct texts of any one statement.
DEFAULT_CACHE_BYTES = 64 << 20
# Characters per slice of a long text: ~500 tokens, enough that a slice's overhead is noise.
SLICE_CHARS = 2048
# Pre-tokenizer regexes that end a pre-token after a letter followed by " " + letter, and start
# the next one at that space, matching from any position alike whatever precedes it (no
# lookbehind): Qwen2/3's and cl100k's (Llama 3's) splits. The byte-level pre-tokenizer's own
# regex (GPT-2's, ``use_regex``) does too.
_CUTTABLE_SPLITS = frozenset({
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
})
_CUT = re.compile(r"[A-Za-z](?= [A-Za-z])")  # a cut falls after the letter


@dataclass(frozen=True)
class TokenizedPrompts:
    """Prompts as indices into their distinct token arrays: prompt ``i`` is
    ``prefixes[prefix_of[i]] + suffixes[suffix_of[i]]`` (prefixes include the lead)."""

    prefixes: tuple[np.ndarray, ...]
    suffixes: tuple[np.ndarray, ...]
    prefix_of: np.ndarray
    suffix_of: np.ndarray

    def __len__(self) -> int:
        return len(self.prefix_of)

    def ids(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """(prefix ids, suffix ids) of prompt ``index``."""
        return self.prefixes[self.prefix_of[index]], self.suffixes[self.suffix_of[index]]


class PromptTokenizer:
    def __init__(
        self,
        path: Path,
        stop_ids: frozenset[int] = frozenset(),
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        slice_chars: int = SLICE_CHARS,
    ) -> None:
        self._tokenizer = Tokenizer.from_file(str(path))
        spec = json.loads(path.read_text())
        self.byte_factor = _byte_factor(spec)
        # Texts longer than twice this are tokenized in slices (0: never).
        self.slice_chars = slice_chars if _cuttable(spec) else 0
        self.lead: tuple[int, ...] = self._leading_special_ids()
        self.stop_ids = stop_ids
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached_bytes = 0
        self._lock = threading.Lock()
        self.encoded_texts = 0  # texts actually run through the tokenizer (cache misses)

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text (read-only int32 arrays, shared with the cache)."""
        keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for key in keys:
                ids = self._cache.get(key)
                if ids is not None:
                    self._cache.move_to_end(key)
                    found[key] = ids
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            tokenized = self._tokenize(list(missing.values()))
            with self._lock:
                self.encoded_texts += len(missing)
                for key, ids in zip(missing, tokenized, strict=True):
                    found[key] = self._remember(key, ids)
        return [found[key] for key in keys]

    def _tokenize(self, texts: list[str]) -> list[np.ndarray]:
        """The ids of each text, its slices (``_slices``) tokenized in one parallel batch."""
        sliced = [_slices(text, self.slice_chars) for text in texts]
        encodings = self._tokenizer.encode_batch(
            [piece for pieces in sliced for piece in pieces], add_special_tokens=False)
        ids, start = [], 0
        for pieces in sliced:
            ids.append(np.concatenate([np.asarray(encoding.ids, dtype=np.int32)
                                       for encoding in encodings[start:start + len(pieces)]]))
            start += len(pieces)
        return ids

    def encode_prompts(self, prompts: Sequence[Prompt]) -> TokenizedPrompts:
        """Each distinct prefix and suffix text tokenized once (equal strings found by a dict,
        whose hash Python keeps per string object)."""
        prefix_texts: dict[str, int] = {}
        suffix_texts: dict[str, int] = {}
        prefix_of = np.fromiter(
            (prefix_texts.setdefault(p.prefix, len(prefix_texts)) for p in prompts),
            dtype=np.int64,
            count=len(prompts),
        )
        suffix_of = np.fromiter(
            (suffix_texts.setdefault(p.suffix, len(suffix_texts)) for p in prompts),
            dtype=np.int64,
            count=len(prompts),
        )
        lead = np.asarray(self.lead, dtype=np.int32)
        prefixes = tuple(
            _frozen(np.concatenate([lead, ids])) if len(lead) else ids
            for ids in self.encode(list(prefix_texts))
        )
        suffixes = tuple(self.encode(list(suffix_texts)))
        return TokenizedPrompts(prefixes, suffixes, prefix_of, suffix_of)

    def at_most(self, texts: Sequence[str]) -> np.ndarray:
        """An upper bound of each text's token count (int64; see the contract). An ASCII text's
        costs O(1) (CPython knows that a string is ASCII, and its length); another's two
        encodings per string object, however often it repeats."""
        factor = self.byte_factor
        if factor is None:
            distinct = list(dict.fromkeys(texts))
            counts = dict(zip(distinct, self.count(distinct), strict=True))
            return np.fromiter((counts[t] for t in texts), dtype=np.int64, count=len(texts))
        bounds: dict[int, int] = {}  # id() -> bound, for texts that are not ASCII

        def bound(text: str) -> int:
            if text.isascii():
                return len(text)
            found = bounds.get(id(text))
            if found is None:
                ascii_bytes = len(text.encode("ascii", "ignore"))
                other = len(text.encode("utf-8", "surrogatepass")) - ascii_bytes
                found = bounds[id(text)] = ascii_bytes + factor * other
            return found

        return np.fromiter(map(bound, texts), dtype=np.int64, count=len(texts))

    def count(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self.encode(texts)]

    def decode(self, ids: Sequence[int]) -> str:
        return self._tokenizer.decode(list(ids), skip_special_tokens=True)

    def _remember(self, key: bytes, ids: np.ndarray) -> np.ndarray:
        ids = _frozen(ids)
        size = ids.nbytes + len(key)
        if key not in self._cache and size <= self._cache_bytes:
            self._cache[key] = ids
            self._cached_bytes += size
            while self._cached_bytes > self._cache_bytes:
                old_key, old = self._cache.popitem(last=False)
                self._cached_bytes -= old.nbytes + len(old_key)
        return ids

    def _leading_special_ids(self) -> tuple[int, ...]:
        # Locate the plain encoding inside the post-processed one; whatever precedes it is the
        # tokenizer's mandatory lead (e.g. <|begin_of_text|>). Trailing additions (EOS) are
        # ignored: a prompt continues after its text, it does not end there.
        plain = self._tokenizer.encode("a", add_special_tokens=False).ids
        full = self._tokenizer.encode("a", add_special_tokens=True).ids
        for start in range(len(full) - len(plain) + 1):
            if full[start : start + len(plain)] == plain:
                return tuple(full[:start])
        return ()


def load_tokenizer(folder: Path) -> PromptTokenizer:
    """The tokenizer of a model folder, with its stop ids: the eos token of
    ``tokenizer_config.json`` and the ``eos_token_id`` of ``generation_config.json`` and
    ``config.json`` (an id or a list of ids), whichever are present."""
    path = folder / "tokenizer.json"
    probe = Tokenizer.from_file(str(path))
    stop: set[int] = set()
    eos = _read_json(folder / "tokenizer_config.json").get("eos_token")
    if isinstance(eos, dict):  # older files spell it as an AddedToken
        eos = eos.get("content")
    if isinstance(eos, str) and probe.token_to_id(eos) is not None:
        stop.add(probe.token_to_id(eos))
    for name in ("generation_config.json", "config.json"):
        ids = _read_json(folder / name).get("eos_token_id")
        stop.update(ids if isinstance(ids, list) else [] if ids is None else [ids])
    return PromptTokenizer(path, stop_ids=frozenset(int(i) for i in stop))


def _byte_factor(spec: dict) -> int | None:
    """How many times its normalizer may grow the UTF-8 bytes of a text's non-ASCII characters,
    for a byte-level BPE tokenizer (at most one token per byte); None when no bound is known."""
    model, pre = spec.get("model") or {}, spec.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    byte_level = [s for s in steps if s.get("type") == "ByteLevel"]
    if model.get("type") != "BPE" or not byte_level or any(s.get("add_prefix_space")
                                                            for s in byte_level):
        return None
    normalizer = spec.get("normalizer")
    if normalizer is None:
        return 1
    return 3 if normalizer.get("type") == "NFC" else None  # UAX #15: NFC grows UTF-8 ≤ 3×


def _cuttable(spec: dict) -> bool:
    """Whether a text may be tokenized in slices cut after an ASCII letter followed by " " and
    an ASCII letter, with the ids of the whole text: BPE without dropout after NFC or no
    normalizer (neither joins characters across such a cut), a pre-tokenizer that always ends a
    pre-token there (``_CUTTABLE_SPLITS``), and no added token holding a space (added tokens are
    matched in the raw text first: one might span a cut)."""
    model, pre, normalizer = spec.get("model") or {}, spec.get("pre_tokenizer") or {}, spec.get(
        "normalizer")
    if model.get("type") != "BPE" or model.get("dropout") or normalizer not in (None, {
            "type": "NFC"}):
        return False
    if any(any(c.isspace() for c in token.get("content", " "))
           for token in spec.get("added_tokens") or []):
        return False
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    if steps and steps[-1].get("type") == "ByteLevel" and not steps[-1].get("add_prefix_space"):
        if len(steps) == 1:
            return bool(steps[0].get("use_regex", True))
        split = steps[0]
        return (len(steps) == 2 and not steps[1].get("use_regex", True)
                and split.get("type") == "Split" and split.get("behavior") == "Isolated"
                and not split.get("invert")
                and (split.get("pattern") or {}).get("Regex") in _CUTTABLE_SPLITS)
    return False


def _slices(text: str, width: int) -> list[str]:
    """``text`` in slices of about ``width`` characters or more, each cut after an ASCII letter
    followed by " " and an ASCII letter (the whole text where it has none; width 0: whole)."""
    if not width or len(text) <= 2 * width:
        return [text]
    pieces, start = [], 0
    while len(text) - start > 2 * width:
        cut = _CUT.search(text, start + width)
        if cut is None:
            break
        pieces.append(text[start:cut.end()])
        start = cut.end()
    pieces.append(text[start:])
    return pieces


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _frozen(ids: np.ndarray) -> np.ndarray:
    ids.flags.writeable = False  # shared by every prompt and request that repeats the text
    return ids

"""``LocalEngine``: the in-process engine — tokenizer, decoder, prefix-KV cache and call loop.

``LocalEngine(config)`` loads ``config.model`` onto ``config.device`` (``EngineError`` when the
model cannot be found or CUDA is missing) and sizes its cache and chunks from the config.

``answer`` tokenizes the prompts, walks the waves of ``engine.schedule`` (phase A: one full
row per new prefix, capturing its KV into the cache; phase B: every other prompt as a suffix row
over its prefix's KV), packs rows into chunks of ``chunk_tokens`` and reads each answer from the
pruned logits. The cache outlives calls, so a later question about the same documents runs only
the suffixes; ``Metrics`` report exactly which tokens were run (``fresh_tokens``) and which were
served from KV (``cached_tokens``). Not thread-safe: ``EngineProcess`` serializes callers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from heron.engine.answers import AnswerTokens
from heron.engine.api import (
    AnswerKind,
    Answers,
    CancelFlag,
    EngineCancelled,
    EngineError,
    Metrics,
    ModelInfo,
    Request,
)
from heron.engine.config import EngineConfig
from heron.engine.kv_cache import PrefixKV, PrefixKVCache
from heron.engine.model import Decoder, RowInput
from heron.engine.prompts import Prompt
from heron.engine.schedule import Row, pack, waves
from heron.engine.spec import ModelSpec
from heron.engine.tokenizer import PromptTokenizer
from heron.engine.weights import resolve_model


class LocalEngine:
    def __init__(self, config: EngineConfig) -> None:
        device = config.device
        if config.device_type == "cuda" and not torch.cuda.is_available():
            raise EngineError(f"device {device!r} requested but CUDA is not available")
        folder = resolve_model(config.model)
        spec = ModelSpec.from_folder(folder)
        self.tokenizer = PromptTokenizer(folder / "tokenizer.json")
        self.answer_tokens = AnswerTokens.from_encoder(self.tokenizer.encode)
        self.decoder = Decoder.load(folder, spec, self.answer_tokens.ids, device)
        self.cache = PrefixKVCache(config.effective_kv_cache_bytes)
        self.chunk_tokens = config.effective_chunk_tokens
        self.info = ModelInfo(
            name=config.model,
            architecture=spec.architecture,
            num_layers=spec.num_layers,
            hidden_size=spec.hidden_size,
            vocab_size=spec.vocab_size,
            num_params=self.decoder.num_params,
            dtype=str(self.decoder.dtype).removeprefix("torch."),
            device=device,
        )

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.tokenizer.count(texts)

    def close(self) -> None:
        self.cache.clear()

    def answer(self, request: Request, cancel: CancelFlag | None = None) -> Answers:
        if request.kind not in (AnswerKind.BOOLEAN, AnswerKind.SCORE):
            raise EngineError(f"{request.kind.name} answers are not supported yet")
        logits, metrics = self.answer_logits(request.prompts, cancel)
        decided, p_true = self.answer_tokens.decide(logits)
        values = tuple(decided) if request.kind is AnswerKind.BOOLEAN else tuple(p_true)
        return Answers(request.kind, values, tuple(p_true), metrics)

    def answer_logits(
        self, prompts: Sequence[Prompt], cancel: CancelFlag | None = None
    ) -> tuple[torch.Tensor, Metrics]:
        """Pruned last-position logits [len(prompts), len(answer_tokens.ids)] (float32, CPU)."""
        started = time.perf_counter()
        tokenized = self.tokenizer.encode_prompts(prompts)
        per_prompt: list[torch.Tensor | None] = [None] * len(prompts)
        fresh = 0
        with torch.inference_mode():
            for wave in waves(tokenized, self.cache.get, self.chunk_tokens):
                kv = dict(wave.resident)
                # Phase A before phase B: the suffix rows need the KV the full rows capture.
                for chunk in pack(wave.full_rows, self.chunk_tokens):
                    _check(cancel)
                    fresh += self._run(chunk, kv, per_prompt)
                for chunk in pack(wave.suffix_rows, self.chunk_tokens):
                    _check(cancel)
                    fresh += self._run(chunk, kv, per_prompt)
        width = len(self.answer_tokens.ids)
        logits = torch.stack(per_prompt) if prompts else torch.empty(0, width)  # type: ignore[arg-type]
        total = sum(len(prefix) + len(suffix) for prefix, suffix in tokenized)
        metrics = Metrics(
            prompts=len(prompts),
            input_tokens=total,
            fresh_tokens=fresh,
            cached_tokens=total - fresh,
            seconds=time.perf_counter() - started,
        )
        return logits, metrics

    def _run(
        self,
        chunk: list[Row],
        kv: dict[tuple[int, ...], PrefixKV],
        logits: list[torch.Tensor | None],
    ) -> int:
        """Run one packed chunk; record logits per prompt and new prefix KV. Returns its tokens."""
        inputs = [
            RowInput(
                tokens=row.tokens,
                prefix=kv[row.prefix_key] if row.prefix_key is not None else None,
                capture=row.capture,
            )
            for row in chunk
        ]
        output = self.decoder.forward(inputs)
        for i, (row, captured) in enumerate(zip(chunk, output.captured, strict=True)):
            logits[row.prompt] = output.logits[i].cpu()
            if captured is not None:
                prefix = row.tokens[: row.capture]
                kv[prefix] = captured
                self.cache.put(prefix, captured)
        return sum(len(row.tokens) for row in chunk)


def _check(cancel: CancelFlag | None) -> None:
    if cancel is not None and cancel.is_set():
        raise EngineCancelled()

"""``LocalEngine``: the in-process engine — tokenizer, decoder, KV arena and the step-loop thread.

Contract:
- ``LocalEngine(config)`` loads ``config.model`` onto ``config.device`` (``EngineError`` when the
  model cannot be found, CUDA is missing, or the KV arena would not hold one prefix block), sizes
  the arena (``kv_cache.arena_bytes``) and starts one thread running ``Scheduler.run``: the same
  scheduler the resident process runs. With ``background=False`` no thread runs: the caller
  drives ``scheduler.step()`` itself (tests that count chunks), and only ``submit`` is usable.
- ``answer`` / ``evaluate`` may be called from many threads at once. Each call tokenizes its
  prompts in the calling thread (each distinct text once, cached across calls), refuses the
  request with ``PromptTooLong`` if a prompt exceeds the model's context, submits one
  ``Job`` and waits for it, calling ``progress`` in the calling thread as chunks finish. If the
  callback raises, the job is withdrawn and the exception propagates. ``evaluate`` returns the
  raw ``Evaluation`` (logits, label log-probabilities, token ids), ``answer`` reads it.
- ``close()`` stops the thread; calls still waiting fail with ``EngineError``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numpy as np
import torch

from heron.engine.answers import AnswerTokens, Evaluation, read_answers
from heron.engine.api import (
    Answers,
    CancelFlag,
    EngineError,
    ModelInfo,
    ProgressCallback,
    PromptTooLong,
    Request,
)
from heron.engine.config import EngineConfig
from heron.engine.kv_cache import PAGE_TOKENS, BlockTree, KVArena, arena_bytes, recompute_flops
from heron.engine.model import Decoder
from heron.engine.runner import ModelRunner
from heron.engine.scheduler import Failed, Finished, Job, Progress, Scheduler, drain
from heron.engine.spec import ModelSpec
from heron.engine.tokenizer import TokenizedPrompts, load_tokenizer
from heron.engine.weights import resolve_model


class LocalEngine:
    def __init__(self, config: EngineConfig, *, background: bool = True) -> None:
        device = config.device
        if config.device_type == "cuda" and not torch.cuda.is_available():
            raise EngineError(f"device {device!r} requested but CUDA is not available")
        folder = resolve_model(config.model)
        spec = ModelSpec.from_folder(folder)
        self.tokenizer = load_tokenizer(folder)
        self.answer_tokens = AnswerTokens.from_encoder(self.tokenizer.encode)
        self.decoder = Decoder.load(folder, spec, self.answer_tokens.ids, device, config.dtype,
                                    config.deterministic)
        free = torch.cuda.mem_get_info(device)[0] if config.device_type == "cuda" else None
        capacity = arena_bytes(config, spec, self.decoder.dtype, free)
        block_tokens = config.effective_prefix_block_tokens
        arena = KVArena(spec, self.decoder.dtype, device, capacity,
                        math.gcd(PAGE_TOKENS, block_tokens))
        if arena.num_pages * arena.page_tokens < block_tokens:
            raise EngineError(
                f"a KV cache of {capacity} bytes does not hold one prefix block of {block_tokens} "
                f"tokens ({block_tokens * arena.bytes_per_token} bytes); give --kv-cache-gb more"
            )
        self.tree = BlockTree(arena, block_tokens, recompute_flops(spec))
        self.scheduler = Scheduler(
            ModelRunner(self.decoder, arena), self.tree, config.effective_chunk_tokens
        )
        self.info = ModelInfo(
            name=config.model,
            architecture=spec.architecture,
            num_layers=spec.num_layers,
            hidden_size=spec.hidden_size,
            vocab_size=spec.vocab_size,
            num_params=self.decoder.num_params,
            dtype=str(self.decoder.dtype).removeprefix("torch."),
            device=device,
            context_tokens=spec.context_tokens,
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self.scheduler.run, args=(self._stop,), name="heron-engine-steps", daemon=True
        )
        if background:
            self._thread.start()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.tokenizer.count(texts)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.scheduler.shutdown()

    def answer(
        self,
        request: Request,
        cancel: CancelFlag | None = None,
        progress: ProgressCallback | None = None,
    ) -> Answers:
        evaluation = self.evaluate(request, cancel, progress)
        return read_answers(evaluation, request, self.answer_tokens, self.tokenizer.decode,
                            self.tokenizer.stop_ids)

    def evaluate(
        self,
        request: Request,
        cancel: CancelFlag | None = None,
        progress: ProgressCallback | None = None,
    ) -> Evaluation:
        """What the model computes for ``request`` (see ``answers.Evaluation``)."""
        job = self.submit(request, cancel)
        for event in drain(job):
            if isinstance(event, Progress) and progress is not None:
                try:
                    progress(event.metrics)
                except BaseException:
                    job.abandon()
                    self.scheduler.wake()
                    for _ in drain(job):  # until the scheduler has let go of it
                        pass
                    raise
            elif isinstance(event, Finished):
                return event.evaluation
            elif isinstance(event, Failed):
                raise event.error
        raise AssertionError("drain ends with Finished or Failed")

    def submit(self, request: Request, cancel: CancelFlag | None = None) -> Job:
        """Tokenize ``request`` (in this thread) and queue it as a ``Job``; its events say how
        it goes. ``PromptTooLong`` when a prompt does not fit the model's context."""
        tokenized = self.tokenizer.encode_prompts(request.prompts)
        labels = self.tokenizer.encode([" " + label for label in request.labels])
        # A label's tokens but its last are read after the prompt; a completion's tokens follow it.
        added = max((len(ids) - 1 for ids in labels), default=0) + max(request.max_tokens - 1, 0)
        check_context(tokenized, added, self.info.context_tokens)
        job = Job(
            request.kind,
            tokenized,
            cancel,
            answer_width=len(self.answer_tokens.ids),
            labels=labels,
            max_tokens=request.max_tokens,
            stop_ids=self.tokenizer.stop_ids,
            block_tokens=self.tree.block_tokens,
        )
        self.scheduler.submit(job)
        return job


def check_context(tokenized: TokenizedPrompts, added: int, context: int) -> None:
    """Refuse (``PromptTooLong``) the first prompt that, with ``added`` tokens more, exceeds
    ``context`` tokens."""
    if not len(tokenized):
        return
    prefixes = np.fromiter((len(ids) for ids in tokenized.prefixes), np.int64)
    suffixes = np.fromiter((len(ids) for ids in tokenized.suffixes), np.int64)
    lengths = prefixes[tokenized.prefix_of] + suffixes[tokenized.suffix_of] + added
    over = np.flatnonzero(lengths > context)
    if len(over):
        raise PromptTooLong(int(over[0]), int(lengths[over[0]]), context)

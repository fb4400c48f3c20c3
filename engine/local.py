"""``LocalEngine``: the in-process engine — tokenizer, decoder, KV arena and the step-loop thread.

Contract:
- ``LocalEngine(config)`` loads ``config.model`` onto ``config.device`` (``EngineError`` when the
  model cannot be found, CUDA is missing, or the KV arena would not hold one prefix block), sizes
  the arena (``kv_cache.arena_bytes``) and starts one thread running ``Scheduler.run``: the same
  scheduler the resident process runs. With ``background=False`` no thread runs: the caller
  drives ``scheduler.step()`` itself (tests that count chunks), and only ``submit`` is usable.
- ``answer`` / ``evaluate`` may be called from many threads at once. Each call refuses its
  request with ``PromptTooLong`` if a prompt exceeds the model's context (``check``: texts
  bounded by their bytes, only those that might not fit tokenized), submits one ``Job`` and
  admits its prompts in parts of growing size (``ADMIT_FIRST`` prompts, then twice as many each
  time, up to ``ADMIT_MOST``): each part is tokenized (each distinct text once, cached across
  calls) and built into tasks in the calling thread while the step loop already runs the parts
  before it, so the first chunk starts once the first part is in, not once every prompt is.
  After the first part it waits (at most ``FIRST_LAUNCH_WAIT_S``) until the step loop has
  launched a chunk of it: the two threads would otherwise take turns at the GIL, the first chunk
  waiting on the next parts' Python.
  Parts of a streamed call (``more``) are checked and admitted the same way as they come. The
  call then waits for the job, calling ``progress`` in the calling thread as chunks finish. If
  the callback or ``more`` raises, the job is withdrawn and the exception propagates.
  ``evaluate`` returns the raw ``Evaluation`` (logits, label log-probabilities, token ids),
  ``answer`` reads it.
- On CUDA the engine warms up before its step loop starts (``warm_up``): a few prompts of every
  answer kind, so that the first statements do not wait for device kernels to compile. Their
  KV is forgotten afterwards: the arena starts empty.
- ``close()`` stops the thread; calls still waiting fail with ``EngineError``.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import torch

from heron.engine import attention
from heron.engine.answers import AnswerTokens, Evaluation, read_answers
from heron.engine.api import (
    AnswerKind,
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
from heron.engine.prompts import Prompt
from heron.engine.runner import ModelRunner
from heron.engine.scheduler import Event, Failed, Finished, Job, Progress, Scheduler, drain
from heron.engine.spec import ModelSpec
from heron.engine.tokenizer import PromptTokenizer, load_tokenizer
from heron.engine.weights import resolve_model

# Admission in parts: the first is small so that the first chunk starts soon; each next one is
# twice as large (fewer, cheaper hand-overs), up to a bound.
ADMIT_FIRST = 64
ADMIT_MOST = 4096
# How long admission waits, after the first part, for the step loop to launch a chunk of it.
FIRST_LAUNCH_WAIT_S = 0.1


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
        page_tokens = math.gcd(PAGE_TOKENS, block_tokens)
        arena = KVArena(spec, self.decoder.dtype, device, capacity, page_tokens,
                        block_tokens // page_tokens)
        if arena.num_pages * arena.page_tokens < block_tokens:
            raise EngineError(
                f"a KV cache of {capacity} bytes does not hold one prefix block of {block_tokens} "
                f"tokens ({block_tokens * arena.bytes_per_token} bytes); give --kv-cache-gb more"
            )
        self.tree = BlockTree(arena, block_tokens, recompute_flops(spec),
                              seeding=attention.split_invariant(self.decoder.device))
        questions_on_fa3 = config.attention == "fa3"
        if questions_on_fa3 and not attention.questions_on_fa3(self.decoder.device,
                                                               spec.head_dim, self.decoder.dtype):
            raise EngineError(
                "attention fa3 needs vLLM's FlashAttention-3 (an installed vllm), a Hopper GPU "
                f"and heads of {', '.join(map(str, attention.fa3.HEAD_DIMS))} dimensions "
                f"(this model's: {spec.head_dim}); start with --attention segments")
        self.scheduler = Scheduler(
            ModelRunner(self.decoder, arena), self.tree, config.effective_chunk_tokens,
            questions_on_fa3=questions_on_fa3,
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
            chunk_tokens=config.effective_chunk_tokens,
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self.scheduler.run, args=(self._stop,), name="heron-engine-steps", daemon=True
        )
        if background:
            if config.device_type == "cuda":
                self.warm_up()
            self._thread.start()

    @property
    def stepping(self) -> bool:
        """Whether the step loop runs in its own thread."""
        return self._thread.is_alive()

    def warm_up(self) -> None:
        """Run a few prompts of every kind — rows with and without a shared prefix, labels,
        decode steps, chunks of odd and even token counts — so that the device kernels each
        needs are compiled (Triton compiles a kernel variant when it is first launched), then
        forget their KV. Drives the step loop itself: only before its thread starts."""
        jobs = []
        for words in (70, 93):  # a prefix of more than one block, chunks of both parities
            document = " ".join(["warm"] * words)
            shared = tuple(Prompt(document, f" question {i}?") for i in range(3))
            alone = (Prompt("", " ".join(["up"] * (words // 7))),)
            jobs += [self.submit(Request(AnswerKind.BOOLEAN, shared + alone)),
                     self.submit(Request(AnswerKind.LABEL, shared[:1], ("yes indeed", "no"))),
                     self.submit(Request(AnswerKind.TEXT, shared[:1], max_tokens=3))]
        self._run_warm_up(jobs)
        # Then a document extending the last one past its partial last block, which the tree
        # seeds from that block where the backend allows it (attention over key tiles at
        # absolute positions: a kernel variant of its own, compiled here rather than in the first
        # second question asked of a cached document).
        longer = Prompt(" ".join(["warm"] * 110), " question?")
        self._run_warm_up([self.submit(Request(AnswerKind.BOOLEAN, (longer,)))])
        self.tree.clear()

    def _run_warm_up(self, jobs: Sequence[Job]) -> None:
        while self.scheduler.step():
            pass
        for job in jobs:
            for event in drain(job):
                if isinstance(event, Failed):
                    raise event.error

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
        *,
        more: Iterable[Sequence[Prompt]] = (),
    ) -> Answers:
        evaluation = self.evaluate(request, cancel, progress, more=more)
        return read_answers(evaluation, request, self.answer_tokens, self.tokenizer.decode,
                            self.tokenizer.stop_ids)

    def check(self, request: Request) -> None:
        """``PromptTooLong`` for the first prompt of ``request`` that does not fit the model's
        context; runs nothing."""
        check_context(self.tokenizer, request.prompts,
                      _added(self._labels(request), request.max_tokens),
                      self.info.context_tokens)

    def evaluate(
        self,
        request: Request,
        cancel: CancelFlag | None = None,
        progress: ProgressCallback | None = None,
        *,
        more: Iterable[Sequence[Prompt]] = (),
    ) -> Evaluation:
        """What the model computes for ``request`` (see ``answers.Evaluation``)."""
        admission = self._start(request, cancel)
        job = admission.job
        try:
            for part in more:
                for event in _pending(job):
                    if isinstance(event, Failed):
                        raise event.error
                    _report(event, progress)
                if job.cancelled:  # the step loop withdraws it: its Failed follows
                    break
                admission.add(part, check=True)
            self.scheduler.close(job)
            for event in drain(job):
                if isinstance(event, Finished):
                    return event.evaluation
                if isinstance(event, Failed):
                    raise event.error
                _report(event, progress)
        except BaseException:
            _withdraw(self.scheduler, job)
            raise
        raise AssertionError("drain ends with Finished or Failed")

    def submit(self, request: Request, cancel: CancelFlag | None = None) -> Job:
        """Queue ``request`` as a closed ``Job`` whose parts are all admitted (in this thread);
        its events say how it goes. ``PromptTooLong`` when a prompt does not fit the model's
        context."""
        job = self._start(request, cancel).job
        self.scheduler.close(job)
        return job

    def _start(self, request: Request, cancel: CancelFlag | None) -> _Admission:
        """Check ``request``, submit its job, admit its prompts (the job stays open)."""
        labels = self._labels(request)
        added = _added(labels, request.max_tokens)
        check_context(self.tokenizer, request.prompts, added, self.info.context_tokens)
        job = Job(
            request.kind,
            cancel,
            answer_width=len(self.answer_tokens.ids),
            labels=labels,
            max_tokens=request.max_tokens,
            stop_ids=self.tokenizer.stop_ids,
            block_tokens=self.tree.block_tokens,
        )
        self.scheduler.submit(job)
        admission = _Admission(self, job, added)
        try:
            admission.add(request.prompts)
        except BaseException:
            _withdraw(self.scheduler, job)
            raise
        return admission

    def _labels(self, request: Request) -> list[np.ndarray]:
        return self.tokenizer.encode([" " + label for label in request.labels])



def _added(labels: Sequence[np.ndarray], max_tokens: int) -> int:
    """Tokens a prompt's answer adds to it: a label's tokens but its last are read after the
    prompt; a completion's tokens follow it."""
    return max((len(ids) - 1 for ids in labels), default=0) + max(max_tokens - 1, 0)


class _Admission:
    """A job's prompts admitted in parts of growing size (the module contract), in the thread
    that submitted it."""

    def __init__(self, engine: LocalEngine, job: Job, added: int) -> None:
        self.engine, self.job = engine, job
        self.added = added  # tokens a prompt's answer adds to it
        self.size = ADMIT_FIRST
        self.admitted = 0

    def add(self, prompts: Sequence[Prompt], check: bool = False) -> None:
        engine = self.engine
        if check:  # a streamed part: its prompts were not checked with the request
            check_context(engine.tokenizer, prompts, self.added, engine.info.context_tokens,
                          offset=self.admitted)
        position = 0
        while position < len(prompts):
            part = prompts[position : position + self.size]
            engine.scheduler.add(self.job.part(engine.tokenizer.encode_prompts(part)))
            if not self.admitted and engine.stepping:
                # The step loop's host work for the first chunk (choose, pack, launch) and the
                # next parts' (pure Python) would take turns at the GIL: the first chunk goes
                # first, and holds the first part only.
                self.job.launched.wait(FIRST_LAUNCH_WAIT_S)
            position += len(part)
            self.admitted += len(part)
            self.size = min(2 * self.size, ADMIT_MOST)


def _withdraw(scheduler: Scheduler, job: Job) -> None:
    """Give up on ``job`` (its caller failed): wait until the step loop has let go of it."""
    if job.active:
        job.abandon()
        scheduler.wake()
        for _ in drain(job):
            pass


def _pending(job: Job) -> Iterator[Event]:
    """The events of ``job`` already queued, without waiting."""
    while True:
        try:
            yield job.events.get_nowait()
        except queue.Empty:
            return


def _report(event: Event, progress: ProgressCallback | None) -> None:
    if isinstance(event, Progress) and progress is not None:
        progress(event.metrics)


def check_context(tokenizer: PromptTokenizer, prompts: Sequence[Prompt], added: int,
                  context: int, offset: int = 0) -> None:
    """Refuse (``PromptTooLong``, numbered from ``offset``) the first prompt that, with ``added``
    tokens more, exceeds ``context`` tokens, then (``EngineError``) the first that has no tokens.
    Bounds first (``PromptTokenizer.at_most``, no hashing of the texts); only prompts whose bound
    exceeds the context are tokenized, for their exact counts (a bound is 0 only for an empty
    text)."""
    if not prompts:
        return
    lead = len(tokenizer.lead)
    bounds = (tokenizer.at_most([p.prefix for p in prompts])
              + tokenizer.at_most([p.suffix for p in prompts]) + lead)
    suspects = np.flatnonzero(bounds + added > context)
    if len(suspects):
        tokenized = tokenizer.encode_prompts([prompts[i] for i in suspects])
        lengths = np.fromiter((sum(map(len, tokenized.ids(i))) for i in range(len(suspects))),
                              dtype=np.int64, count=len(suspects)) + added
        over = np.flatnonzero(lengths > context)
        if len(over):
            raise PromptTooLong(offset + int(suspects[over[0]]), int(lengths[over[0]]), context)
    empty = np.flatnonzero(bounds == 0)
    if len(empty):
        raise EngineError(f"prompt {offset + int(empty[0]) + 1} is empty: nothing to answer from")

"""The step loop over every statement's requests: admit, choose the next chunk, run it, answer.

Contract:
- ``Scheduler.submit(job)`` (any thread) queues a ``Job`` — one request, with its own cancel flag
  and an event queue its caller reads: ``Progress`` (cumulative ``Metrics`` of the prompts
  answered so far, after each chunk that held its work), then one ``Finished`` (the
  ``Evaluation``) or ``Failed`` (an ``EngineError``; ``EngineCancelled`` when cancelled).
- A job's prompts come in parts: its submitting thread builds each ``JobPart`` (``Job.part``:
  the tasks of the next tokenized prompts, numbered after the earlier ones, grouped by prefix
  with the earlier ones) and queues it with ``add``, then ``close(job)`` once no more will come.
  Building a part is the per-prompt work of admission, and happens in the submitting thread
  while the device runs earlier parts; the step loop only links a part (per group, not per
  prompt). A job finishes when it is closed and every prompt is answered.
- ``step()`` (one thread, the engine's) admits queued jobs and parts and withdraws cancelled
  jobs, runs the next chunk, and hands back what finished. ``run(stop)`` steps until ``stop``
  is set.
- Each chunk's time on the device is measured without synchronizing (``_DeviceClock``) and
  charged to every job that had work in it (``Metrics.device_seconds``, ``first_chunk_at``).

Canonical evaluation (why answers never depend on what shares a chunk): a prompt is a document
prefix and a suffix. The prefix's KV is computed in canonical blocks at absolute positions
(``kv_cache.BlockTree``): block j covers [j*B, min((j+1)*B, P)) and attends causally to itself
and, through the arena, to blocks 0..j-1; a seeded block reads its first tokens' KV where the
sibling that computed them at the same positions keeps it, and runs only the rest as its row
(the tree seeds only where the attention backend gives a token the same bits wherever its row
starts; the sibling is computed in an earlier chunk or the same one). The suffix always runs as
its own row over the whole prefix's KV in the arena — whether the blocks were computed in this
chunk, an earlier one, or by another statement. A LABEL prompt's labels are rows " label" over
the KV of prefix + suffix, a TEXT prompt's decode steps rows of one token over everything before
it. An empty suffix borrows the prefix's last token; a suffix of more than
``LONG_SUFFIX_BLOCKS`` blocks gives all but its last block to the prefix. Each such row is always
the same computation, whatever else runs.

Policy (which rows form the next chunk, at most ``chunk_tokens`` tokens):
- Fair shares: the active jobs, in an order that rotates every step, first take rows up to an
  equal share of the chunk each (every job at least one unit when it fits), then the leftover
  room in the same order. A job arriving while others run is therefore in the very next chunk,
  and a small job finishes in it.
- Within a job: pending decode steps first, then its prompts grouped by distinct prefix, in
  order: a group's missing blocks (each block one unit; the chain of a long document spreads over
  several chunks), then its prompts' rows once every block is computed or in the chunk.
- Idle device: the first chunk of a busy spell (nothing runs, nothing is prepared) holds at
  most ``idle_chunk_tokens`` (a quarter of a chunk on a GPU): the device starts on it after a
  quarter of the host work, while the host prepares a full chunk to follow it. Answers do not
  change: rows are computed alike in any chunk.
- Parts: a part that arrives while a chunk is prepared ahead has the chunk chosen again only
  when the prepared one is less than half full (its rows join a later chunk otherwise): parts
  stream in during the first chunks, and choosing again costs host time with the device idle.
- Memory: a group pins its chain of blocks (``BlockTree.acquire``) when its first rows are
  chosen and releases it when its prompts are answered; LABEL and TEXT prompts take their private
  KV pages when chosen. When pages cannot be found the job waits for others to release theirs,
  and a waiting group with nothing running lets go of its chain, so waiting groups never hold
  what each other needs; a prompt that could never fit the arena fails its job when its part
  is admitted.
- Overlap: while the device runs chunk k the host prepares chunk k+1 (rows, layout, attention
  plan) against the state chunk k leaves; jobs and parts arriving meanwhile are taken in at once
  and chunk k+1 prepared again (the rule for parts above). When chunk k is done, cancelled jobs
  are withdrawn, and chunk k+1 is launched at once — as prepared, or chosen again if a
  withdrawal changed the jobs — before chunk k's results are handed back, so the device does
  not wait for the host. Only a chunk holding TEXT rows is handed back first: the
  next decode steps need its tokens.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from heron.engine.answers import Evaluation
from heron.engine.api import AnswerKind, CancelFlag, EngineCancelled, EngineError, Metrics
from heron.engine.batching import ChunkInputs, Prefix, Row, VocabRead, pack
from heron.engine.kv_cache import Block, BlockState, BlockTree
from heron.engine.runner import ChunkOutputs, ModelRunner, PendingChunk
from heron.engine.tokenizer import TokenizedPrompts

# How long an idle step loop sleeps before it looks at cancel flags and waiting jobs again.
_IDLE_SECONDS = 0.05
# How often a step loop waiting for a chunk looks whether the device is done (it wakes at once
# for what arrives meanwhile).
_POLL_SECONDS = 0.001
# What part of a chunk one chosen while the device waits may hold, on a GPU (on a CPU the host
# is the device: nothing overlaps, so chunks are whole).
IDLE_CHUNK_SHARE = 4
# A suffix longer than this many prefix blocks (a join partner's long document) would be one row
# as large as a default chunk (4,096 tokens on CPU, 32,768 on CUDA), which cancel and other
# statements would wait for: all of it but its last block joins the prefix instead, whose blocks
# run across chunks. Bound in blocks, not chunk tokens, so that answers do not depend on the
# chunk size.
LONG_SUFFIX_BLOCKS = 64


@dataclass(frozen=True)
class Progress:
    metrics: Metrics  # of the prompts answered so far


@dataclass(frozen=True)
class Finished:
    evaluation: Evaluation


@dataclass(frozen=True)
class Failed:
    error: EngineError


Event = Progress | Finished | Failed


@dataclass(frozen=True)
class _Read:
    """One vocabulary read of a finished chunk."""

    target_logprobs: np.ndarray  # float32, one per target id
    greedy_id: int
    greedy_logprob: float


class Task:
    """One prompt of a job: the rows that answer it. Subclasses per answer kind."""

    private_tokens = 0  # KV slots of its own (beyond the shared prefix) it keeps while answered

    def __init__(self, job: Job, index: int, group: Group, suffix: np.ndarray) -> None:
        self.job = job
        self.index = index
        self.group = group
        self.suffix = suffix
        self.pages: list[int] | None = None  # private KV pages, when ``private_tokens``
        self.slots = np.zeros(0, dtype=np.int64)
        self.fresh = 0  # tokens run for it (its rows, not the shared blocks)
        self.done = False

    @property
    def input_tokens(self) -> int:
        return self.group.length + len(self.suffix)

    def first_rows(self, prefix: Prefix | None) -> list[Row]:
        """The rows that start answering it (its suffix row first), over the prefix's KV."""
        raise NotImplementedError

    def absorb(self, row: Row, reads: list[_Read]) -> None:
        """Take the vocabulary reads of one of its rows (its answer read, if any, is in the
        job's ``answer_logits`` already); sets ``done`` after the last."""
        raise NotImplementedError

    def fresh_tokens(self, row: Row) -> int:
        """Tokens of ``row`` that count as fresh input (all but generated tokens fed back)."""
        return len(row.tokens)

    def suffix_row(self, prefix: Prefix | None, answer: bool = False,
                   reads: tuple[VocabRead, ...] = ()) -> Row:
        writes = self.slots[: len(self.suffix)] if self.private_tokens else None
        return Row(self.suffix, self.group.length, prefix, writes, answer, reads)

    def private_prefix(self, used: int) -> Prefix:
        """The prompt's prefix blocks plus its first ``used`` private slots."""
        return Prefix(np.concatenate([self.group.slots(), self.slots[:used]]))


class AnswerTask(Task):
    """BOOLEAN / SCORE: the pruned answer logits at the suffix's last position."""

    def first_rows(self, prefix: Prefix | None) -> list[Row]:
        return [self.suffix_row(prefix, answer=True)]

    def absorb(self, row: Row, reads: list[_Read]) -> None:
        self.done = True


class LabelTask(Task):
    """LABEL: the suffix row (its KV kept) reads each label's first token; a label of several
    tokens is one more row, the label's tokens but the last, reading each next token."""

    def __init__(self, job: Job, index: int, group: Group, suffix: np.ndarray) -> None:
        super().__init__(job, index, group, suffix)
        self.private_tokens = len(suffix)
        self._label_of: dict[int, int] = {}  # id(row) -> label
        self._pending = 0

    @property
    def input_tokens(self) -> int:
        return super().input_tokens + sum(len(ids) - 1 for ids in self.job.labels)

    def first_rows(self, prefix: Prefix | None) -> list[Row]:
        labels = self.job.labels
        firsts = tuple(int(ids[0]) for ids in labels)
        rows = [self.suffix_row(prefix, reads=(VocabRead(len(self.suffix) - 1, firsts),))]
        shared = self.private_prefix(len(self.suffix))
        self._label_of = {}  # a chunk chosen again (not launched) asks for its rows again
        for label, ids in enumerate(labels):
            if len(ids) > 1:
                reads = tuple(VocabRead(k, (int(ids[k + 1]),)) for k in range(len(ids) - 1))
                rows.append(Row(ids[:-1], shared.slots.shape[0], shared, reads=reads))
                self._label_of[id(rows[-1])] = label
        self._pending = len(rows)
        return rows

    def absorb(self, row: Row, reads: list[_Read]) -> None:
        assert self.job.label_logprobs is not None
        scores = self.job.label_logprobs[self.index]
        if id(row) in self._label_of:
            scores[self._label_of[id(row)]] += sum(float(r.target_logprobs[0]) for r in reads)
        else:  # the suffix row: every label's first token
            scores += reads[0].target_logprobs[: len(scores)].astype(np.float64)
        self._pending -= 1
        self.done = self._pending == 0


class TextTask(Task):
    """TEXT: greedy decode, one row per generated token, each over all KV before it."""

    def __init__(self, job: Job, index: int, group: Group, suffix: np.ndarray) -> None:
        super().__init__(job, index, group, suffix)
        self.private_tokens = len(suffix) + job.max_tokens - 1
        self.generated: list[int] = []
        self.logprobs: list[float] = []

    def first_rows(self, prefix: Prefix | None) -> list[Row]:
        return [self.suffix_row(prefix, reads=(VocabRead(len(self.suffix) - 1, greedy=True),))]

    def fresh_tokens(self, row: Row) -> int:
        return len(row.tokens) if row.tokens is self.suffix else 0

    def decode_row(self) -> Row:
        used = len(self.suffix) + len(self.generated) - 1  # private slots before this token
        token = np.asarray(self.generated[-1:], dtype=np.int32)
        return Row(token, self.group.length + used, self.private_prefix(used),
                   self.slots[used : used + 1], reads=(VocabRead(0, greedy=True),))

    def absorb(self, row: Row, reads: list[_Read]) -> None:
        self.generated.append(reads[0].greedy_id)
        self.logprobs.append(reads[0].greedy_logprob)
        stop = reads[0].greedy_id in self.job.stop_ids
        self.done = stop or len(self.generated) == self.job.max_tokens
        if not self.done:
            self.job.decode_ready.append(self)


_TASKS: dict[AnswerKind, type[Task]] = {
    AnswerKind.BOOLEAN: AnswerTask,
    AnswerKind.SCORE: AnswerTask,
    AnswerKind.LABEL: LabelTask,
    AnswerKind.TEXT: TextTask,
}


class Group:
    """The prompts of a job that share one prefix (token for token)."""

    def __init__(self, job: Job, index: int, prefix: np.ndarray) -> None:
        self.job = job
        self.index = index  # its place in ``job.groups``
        self.prefix = prefix
        self.length = len(prefix)
        self.tasks: list[Task] = []
        self.chain: list[Block] | None = None  # pinned while its prompts are being answered
        self.next_task = 0  # tasks before it have had their first rows dispatched
        self.running = 0  # tasks dispatched, not done
        self.open = 0  # tasks not done
        self.owed_fresh = 0  # block tokens this job ran for the group, not yet in its metrics
        self._slots: np.ndarray | None = None

    def forget_slots(self) -> None:
        self._slots = None

    def slots(self) -> np.ndarray:
        """Arena slots of the whole prefix (the chain must be acquired)."""
        if self._slots is None:
            assert self.chain is not None
            parts = [block.slots for block in self.chain]
            self._slots = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return self._slots


class Job:
    """One request being answered (see the module contract)."""

    def __init__(
        self,
        kind: AnswerKind,
        cancel: CancelFlag | None = None,
        *,
        answer_width: int = 0,
        labels: Sequence[np.ndarray] = (),
        max_tokens: int = 0,
        stop_ids: frozenset[int] = frozenset(),
        block_tokens: int = 0,
    ) -> None:
        """``answer_width``: columns of the pruned answer logits (BOOLEAN, SCORE); ``labels``:
        each label's ids, " " + label (LABEL); ``max_tokens`` and ``stop_ids`` (TEXT).
        ``block_tokens``: the prefix block size, which bounds suffix rows (``LONG_SUFFIX_BLOCKS``;
        0: no bound)."""
        self.kind = kind
        self.cancel = cancel
        self.labels = list(labels)
        self.max_tokens = max_tokens
        self.stop_ids = stop_ids
        self.block_tokens = block_tokens
        self.events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self.active = True  # until it finishes, fails or is withdrawn
        self.closed = False  # no more parts come (set by the step loop)
        self._abandoned = threading.Event()
        self.launched = threading.Event()  # a chunk holding its work was launched
        self.started = time.perf_counter()
        # The step loop's view: the parts linked so far.
        self.groups: list[Group] = []
        self.tasks: list[Task] = []
        self.decode_ready: list[TextTask] = []
        self.open_from = 0  # groups before it have every first row dispatched
        self.answered = Metrics()
        self.device_seconds = 0.0
        self.first_chunk_at: float | None = None
        self.answer_logits: torch.Tensor | None = None
        self.label_logprobs: np.ndarray | None = None
        if kind in (AnswerKind.BOOLEAN, AnswerKind.SCORE):
            self.answer_logits = torch.zeros(0, answer_width)
        if kind is AnswerKind.LABEL:
            self.label_logprobs = np.zeros((0, len(self.labels)), dtype=np.float64)
        # The submitting thread's view: prompts and groups of the parts built so far, groups by
        # their prefix ids (so a part's prompts join the groups of earlier parts).
        self._built = 0
        self._groups_built = 0
        self._by_ids: dict[bytes, Group] = {}

    def part(self, tokenized: TokenizedPrompts) -> JobPart:
        """The tasks of the next ``len(tokenized)`` prompts (in the submitting thread)."""
        new_groups: list[Group] = []
        touched: dict[Group, list[Task]] = {}
        tasks: list[Task] = []
        task_type = _TASKS[self.kind]
        # Prompts group by distinct prefix text first (an index: cheap however long the text),
        # then texts by their ids (different texts may tokenize alike).
        by_text: dict[tuple[int, int], Group] = {}
        for local in range(len(tokenized)):
            index = self._built + local
            prefix, suffix = tokenized.ids(local)
            borrow = len(suffix) == 0
            if borrow:  # the answer follows the prefix: its last token reads it
                if len(prefix) == 0:
                    raise EngineError(f"prompt {index + 1} is empty: nothing to answer from")
                prefix, suffix = prefix[:-1], prefix[-1:]
            # The prefix's text, and what else it holds: -1 nothing, -2 not its last token
            # (borrowed), else the head of that suffix text.
            text_key = (int(tokenized.prefix_of[local]), -2 if borrow else -1)
            if self.block_tokens and len(suffix) > LONG_SUFFIX_BLOCKS * self.block_tokens:
                spill = len(suffix) - self.block_tokens
                prefix, suffix = np.concatenate([prefix, suffix[:spill]]), suffix[spill:]
                text_key = (int(tokenized.prefix_of[local]), int(tokenized.suffix_of[local]))
            group = by_text.get(text_key)
            if group is None:
                ids_key = prefix.tobytes()
                group = self._by_ids.get(ids_key)
                if group is None:
                    group = self._by_ids[ids_key] = Group(self, self._groups_built, prefix)
                    self._groups_built += 1
                    new_groups.append(group)
                by_text[text_key] = group
            task = task_type(self, index, group, suffix)
            touched.setdefault(group, []).append(task)
            tasks.append(task)
        self._built += len(tokenized)
        return JobPart(self, tuple(new_groups), tuple(touched.items()), tuple(tasks))

    def link(self, part: JobPart) -> None:
        """Take ``part``'s tasks in (the step loop): per group, not per prompt."""
        self.groups.extend(part.new_groups)
        for group, tasks in part.tasks_by_group:
            group.tasks.extend(tasks)
            group.open += len(tasks)
            self.open_from = min(self.open_from, group.index)
        self.tasks.extend(part.tasks)
        n = len(self.tasks)
        if self.answer_logits is not None and len(self.answer_logits) < n:
            grown = self.answer_logits.new_zeros(max(n, 2 * len(self.answer_logits)),
                                                 self.answer_logits.shape[1])
            grown[: len(self.answer_logits)] = self.answer_logits
            self.answer_logits = grown
        if self.label_logprobs is not None and len(self.label_logprobs) < n:
            grown_labels = np.zeros((max(n, 2 * len(self.label_logprobs)),
                                     self.label_logprobs.shape[1]), dtype=np.float64)
            grown_labels[: len(self.label_logprobs)] = self.label_logprobs
            self.label_logprobs = grown_labels

    def metrics(self) -> Metrics:
        """The work of the prompts answered so far, with the time taken until now."""
        return replace(self.answered, seconds=time.perf_counter() - self.started,
                       device_seconds=self.device_seconds, first_chunk_at=self.first_chunk_at)

    @property
    def finished(self) -> bool:
        return self.closed and self.answered.prompts == len(self.tasks)

    @property
    def cancelled(self) -> bool:
        return self._abandoned.is_set() or (self.cancel is not None and self.cancel.is_set())

    def abandon(self) -> None:
        """Withdraw the job as if cancelled (its caller gave up on it)."""
        self._abandoned.set()

    def evaluation(self) -> Evaluation:
        metrics, n = self.metrics(), len(self.tasks)
        if self.kind is AnswerKind.TEXT:
            texts = [t for t in self.tasks if isinstance(t, TextTask)]
            return Evaluation(
                self.kind, metrics,
                generated=tuple(tuple(t.generated) for t in texts),
                generated_logprobs=tuple(tuple(t.logprobs) for t in texts),
            )
        return Evaluation(
            self.kind, metrics,
            answer_logits=None if self.answer_logits is None else self.answer_logits[:n],
            label_logprobs=None if self.label_logprobs is None else self.label_logprobs[:n])


@dataclass(frozen=True, eq=False)
class JobPart:
    """Prompts of a job built by its submitting thread (``Job.part``), for the step loop to link:
    the groups they open, their tasks per group (earlier groups included), all in prompt order.
    ``problem``: why one of them could never fit the KV arena (``Scheduler.add`` sets it)."""

    job: Job
    new_groups: tuple[Group, ...]
    tasks_by_group: tuple[tuple[Group, list[Task]], ...]
    tasks: tuple[Task, ...]
    problem: str | None = None


@dataclass(frozen=True, eq=False)
class _Closing:
    job: Job  # no more parts come


class _Draft:
    """A chunk being chosen: rows and who they belong to, blocks it computes, per-group task
    cursors. Choosing only activates groups and tasks (pins, private pages); everything else
    takes effect when the chunk is launched (``Scheduler._commit``)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self.rows: list[Row] = []
        self.owners: list[Task | Group] = []  # per row: its task, or the group of a block
        self.jobs: dict[Job, int] = {}  # tokens taken per job
        self.blocks: dict[Block, None] = {}
        self.cursor: dict[Group, int] = {}
        self.decoding: dict[TextTask, None] = {}
        self.prefixes: dict[Block, Prefix] = {}
        # By a chain's last block: its slots, and how many of its blocks are in (``_slots``).
        self.chains: dict[Block, tuple[np.ndarray, int]] = {}

    @property
    def half_full(self) -> bool:
        return 2 * self.used >= self.budget

    @property
    def feeds_decode(self) -> bool:
        """Whether its results make decode steps ready (it holds TEXT rows)."""
        return any(isinstance(owner, TextTask) for owner in self.owners)

    def fits(self, job: Job, tokens: int, limit: int) -> bool:
        if not self.rows:
            return True  # an empty chunk takes anything, oversized or not
        if self.used + tokens > self.budget:
            return False
        taken = self.jobs.get(job, 0)
        return taken == 0 or taken + tokens <= limit

    def add(self, job: Job, owner: Task | Group, rows: list[Row]) -> None:
        tokens = sum(len(row.tokens) for row in rows)
        self.used += tokens
        self.jobs[job] = self.jobs.get(job, 0) + tokens
        self.rows.extend(rows)
        self.owners.extend([owner] * len(rows))

    def block_row(self, chain: Sequence[Block], depth: int) -> Row:
        """The row computing block ``chain[depth]``: all its tokens, or those after its seed."""
        block = chain[depth]
        before = self.prefix(chain, depth)
        if block.seed is None:
            return Row(block.tokens, block.start, before, block.slots, block=True)
        n = block.seed[1]
        slots = block.slots[:n] if before is None else np.concatenate([before.slots,
                                                                        block.slots[:n]])
        return Row(block.tokens[n:], block.start + n, Prefix(slots, split=True),
                   block.slots[n:], block=True)

    def ready(self, block: Block) -> bool:
        """Whether ``block``'s KV is computed by the time this chunk's attention reads it."""
        return block.state is not BlockState.EMPTY or block in self.blocks

    def prefix(self, chain: Sequence[Block], depth: int | None = None) -> Prefix | None:
        """The KV of ``chain[:depth]`` (all of it by default) as one shared ``Prefix`` (None for
        no blocks)."""
        depth = len(chain) if depth is None else depth
        if depth == 0:
            return None
        last = chain[depth - 1]
        found = self.prefixes.get(last)
        if found is None:
            found = self.prefixes[last] = Prefix(self._slots(chain, depth))
        return found

    def _slots(self, chain: Sequence[Block], depth: int) -> np.ndarray:
        """The slots of ``chain[:depth]``: a view of one array per chain, filled block by block
        as deeper prefixes are asked for (a block's slots are final once it is chosen: it is
        seeded first). A document's block rows thus read prefixes of one array, which the
        attention plan stores once, rather than n²/2 slots copied for n blocks."""
        key = chain[-1]
        buffer, filled = self.chains.get(key) or (np.empty(key.end, dtype=np.int64), 0)
        for block in chain[filled:depth]:
            buffer[block.start:block.end] = block.slots
        self.chains[key] = (buffer, max(filled, depth))
        return buffer[:chain[depth - 1].end]


class _DeviceClock:
    """When chunks run on the device, on the ``time.monotonic()`` clock, without synchronizing.
    A chunk is launched only once the one before it has finished (``Scheduler.step``), so the
    device starts it as it is queued: its start is the host's time at launch. On CUDA its length
    is that of two timing events queued before and after its work, read once its results are
    waited for anyway; on CPU, where the launch computes, the launch's own length."""

    def __init__(self, device: torch.device) -> None:
        self._device = device if device.type == "cuda" else None

    def start(self) -> _ChunkTime:
        if self._device is None:
            return _ChunkTime(time.monotonic())
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self._device))
        return _ChunkTime(time.monotonic(), event)

    def end(self, started: _ChunkTime) -> _ChunkTime:
        if started.event is None:
            return replace(started, seconds=time.monotonic() - started.at)
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self._device))
        return replace(started, end_event=event)


@dataclass(frozen=True)
class _ChunkTime:
    at: float  # when it started (time.monotonic())
    event: torch.cuda.Event | None = None  # CUDA: recorded before its work ...
    end_event: torch.cuda.Event | None = None  # ... and after it
    seconds: float = 0.0  # CPU: how long it ran

    def length(self) -> float:
        """Seconds it ran (on CUDA: once its results were waited for)."""
        if self.event is None or self.end_event is None:
            return self.seconds
        self.end_event.synchronize()  # queued right after the results' copy: done, or at once
        return self.event.elapsed_time(self.end_event) / 1e3


@dataclass
class _Launched:
    draft: _Draft
    chunk: ChunkInputs
    pending: PendingChunk
    time: _ChunkTime


class Scheduler:
    def __init__(self, runner: ModelRunner, tree: BlockTree, chunk_tokens: int,
                 questions_on_fa3: bool = False, idle_chunk_tokens: int | None = None) -> None:
        """``idle_chunk_tokens``: the most a chunk chosen while the device waits holds (by
        default ``chunk_tokens`` ÷ ``IDLE_CHUNK_SHARE`` on a GPU, ``chunk_tokens`` on a CPU)."""
        self.runner = runner
        self.tree = tree
        self.chunk_tokens = chunk_tokens
        device = torch.device(runner.decoder.device)
        if idle_chunk_tokens is None:
            idle_chunk_tokens = chunk_tokens if device.type == "cpu" else max(
                1, chunk_tokens // IDLE_CHUNK_SHARE)
        self.idle_chunk_tokens = min(idle_chunk_tokens, chunk_tokens)
        self.questions_on_fa3 = questions_on_fa3  # see ``attention.questions_on_fa3``
        self.jobs: list[Job] = []
        self.steps = 0  # chunks run
        self.busy_since: float | None = None  # see ``run``
        self.discarded = 0  # chunks prepared ahead, then chosen again (their host work wasted)
        self._inbox: queue.SimpleQueue[Job | JobPart | _Closing] = queue.SimpleQueue()
        self._held: Job | JobPart | _Closing | None = None  # taken from the inbox, not yet in
        self._wake = threading.Event()
        self._closed = False
        self._closing = threading.Lock()
        self._turn = 0
        self._version = 0  # bumped by whatever changes what the next chunk should hold
        self._prepared: tuple[int, _Draft, ChunkInputs] | None = None
        self._in_flight: _Launched | None = None
        self._clock = _DeviceClock(device)
        spec = runner.decoder.spec
        self._heads = spec.num_heads
        self._kv_width = spec.num_kv_heads * spec.head_dim

    def submit(self, job: Job) -> None:
        """Queue a job (its prompts follow in parts: ``add``, then ``close``)."""
        self._queue(job)

    def add(self, part: JobPart) -> None:
        """Queue a part of a submitted job (from its submitting thread)."""
        self._queue(replace(part, problem=self._never_fits(part)))

    def close(self, job: Job) -> None:
        """No more parts come for ``job``."""
        self._queue(_Closing(job))

    def _queue(self, item: Job | JobPart | _Closing) -> None:
        with self._closing:
            if self._closed:
                raise EngineError("engine is closed")
            self._inbox.put(item)
        self._wake.set()

    def wake(self) -> None:
        """Have an idle step loop look at cancel flags now."""
        self._wake.set()

    def shutdown(self) -> None:
        """After ``run`` returned: fail every job still waiting, refuse new ones."""
        with self._closing:
            self._closed = True
        closed = EngineError("engine is closed")
        for job in self.jobs:
            job.events.put(Failed(closed))
        self.jobs.clear()
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, Job):
                item.events.put(Failed(closed))

    def run(self, stop: threading.Event) -> None:
        """Step until ``stop`` is set (the engine thread's body); ``busy_since`` says since when
        (``time.monotonic``) the current step runs, None between steps (a supervisor's measure
        of a step loop that hangs)."""
        with torch.inference_mode():
            while not stop.is_set():
                self.busy_since = time.monotonic()
                worked = self.step()
                self.busy_since = None
                if not worked:
                    self._wake.wait(_IDLE_SECONDS)
                    self._wake.clear()

    def step(self) -> bool:
        """Wait for the chunk in flight (launching one first if none is), launch the next, hand
        back the results; False when there is nothing to run."""
        try:
            if self._in_flight is None:
                self._admit()
                self._in_flight = self._launch_next(self.idle_chunk_tokens)
                if self._in_flight is None:
                    return False
            self._prepare()  # host work for the next chunk, while the device runs this one
            done, self._in_flight = self._in_flight, None
            outputs = self._wait(done)
            self.steps += 1
            self._admit()
            if not done.draft.feeds_decode:
                self._in_flight = self._launch_next()
            self._absorb(done, outputs)
            if self._in_flight is None:
                self._in_flight = self._launch_next()
        except Exception as exc:  # noqa: BLE001 - every waiting caller must hear of it
            self._fail_all(exc)
        return True

    def _wait(self, launched: _Launched) -> ChunkOutputs:
        """The chunk's outputs, once the device has them. Meanwhile, what arrives is taken in
        and the next chunk prepared again if that changed it, so that parts streaming in while
        the device runs join the next chunk without a wait for the host when it is launched."""
        pending = launched.pending
        while not pending.ready():
            if self._wake.wait(_POLL_SECONDS):
                self._wake.clear()
                version = self._version
                self._admit(in_flight=True)
                if self._version != version:
                    self._prepare()
        return pending.wait()

    def _admit(self, in_flight: bool = False) -> None:
        """Take in what was queued and withdraw cancelled jobs. ``in_flight``: while a chunk
        runs, only what cannot touch its work is taken in (jobs, parts, closings); a part that
        fails its job, and all that follows it, waits with the withdrawals until it is done."""
        while True:
            item = self._held
            if item is not None:
                self._held = None
            else:
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    break
            if in_flight and isinstance(item, JobPart) and item.problem is not None:
                self._held = item
                return
            if isinstance(item, Job):
                self.jobs.append(item)
                self._version += 1
                continue
            job = item.job
            if not job.active or job.cancelled:  # gone, or withdrawn below
                continue
            if isinstance(item, _Closing):
                job.closed = True
                if job.finished:  # nothing more to answer (or nothing at all)
                    self._finish(job)
            elif item.problem is not None:
                self._withdraw(job, EngineError(item.problem))
            else:
                job.link(item)
                if self._prepared is None or not self._prepared[1].half_full:
                    self._version += 1
        if in_flight:
            return
        for job in [j for j in self.jobs if j.cancelled]:
            self._withdraw(job, EngineCancelled())

    def _never_fits(self, part: JobPart) -> str | None:
        """Why a prompt of ``part`` could never have its KV in the arena (None: they all fit)."""
        arena = self.tree.arena
        for group, tasks in part.tasks_by_group:
            private = max(task.private_tokens for task in tasks)
            pages = self.tree.pages_needed(group.length) + arena.pages_for(private)
            if pages > arena.num_pages:
                tokens = group.length + private
                return (
                    f"a prompt needs the KV of {tokens} tokens "
                    f"({tokens * arena.bytes_per_token / 2**20:.0f} MiB), more than the KV cache "
                    f"holds ({arena.num_pages * arena.page_tokens} tokens); start heron serve "
                    f"with a larger --kv-cache-gb"
                )
        return None

    def _finish(self, job: Job) -> None:
        self.jobs.remove(job)
        job.active = False
        job.events.put(Finished(job.evaluation()))

    def _withdraw(self, job: Job, error: EngineError) -> None:
        self.jobs.remove(job)
        job.active = False  # rows of it still in a finished chunk are ignored
        self._version += 1
        for group in job.groups:
            if group.chain is not None and group.open:
                self.tree.release(group.chain)
                group.chain = None
        for task in job.tasks:
            if task.pages is not None and not task.done:
                self.tree.free(task.pages)
                task.pages = None
        job.events.put(Failed(error))

    def _launch_next(self, budget: int | None = None) -> _Launched | None:
        """Launch the prepared chunk if still valid, else a chunk of at most ``budget`` tokens
        (default ``chunk_tokens``) chosen now; None if idle."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared[0] != self._version:
            self.discarded += 1
            prepared = None
        if prepared is not None:
            draft, chunk = prepared[1], prepared[2]
        else:
            chosen = self._choose(budget or self.chunk_tokens)
            if chosen is None:
                return None
            draft, chunk = chosen, self._pack(chosen)
        return self._launch(draft, chunk)

    def _prepare(self) -> None:
        draft = self._choose(self.chunk_tokens)
        self._prepared = None if draft is None else (self._version, draft, self._pack(draft))

    def _pack(self, draft: _Draft) -> ChunkInputs:
        return pack(draft.rows, self.runner.decoder.device, self._heads, self._kv_width,
                    self.questions_on_fa3)

    def _choose(self, budget: int) -> _Draft | None:
        """The next chunk, of at most ``budget`` tokens (policy above)."""
        jobs = [job for job in self.jobs if not job.finished]
        if not jobs:
            return None
        self._turn = (self._turn + 1) % len(jobs)
        jobs = jobs[self._turn :] + jobs[: self._turn]
        draft = _Draft(budget)
        share = max(1, budget // len(jobs))
        for limit in (share, budget):
            for job in jobs:
                self._fill(draft, job, limit)
        return draft if draft.rows else None

    def _fill(self, draft: _Draft, job: Job, limit: int) -> None:
        """Add ``job``'s next rows to ``draft`` while they fit its ``limit`` (policy above)."""
        for task in job.decode_ready:
            if task in draft.decoding:
                continue
            if not draft.fits(job, 1, limit):
                return
            draft.decoding[task] = None
            draft.add(job, task, [task.decode_row()])
        while job.open_from < len(job.groups):
            group = job.groups[job.open_from]
            if group.next_task < len(group.tasks):
                break
            job.open_from += 1
        for group in job.groups[job.open_from :]:
            if draft.cursor.get(group, group.next_task) == len(group.tasks):
                continue
            if not self._fill_group(draft, job, group, limit):
                return

    def _fill_group(self, draft: _Draft, job: Job, group: Group, limit: int) -> bool:
        """Add the group's missing blocks, then its tasks' first rows; False once one does not
        fit (or its memory cannot be had now), which ends the job's turn."""
        if group.chain is None:
            group.chain = self.tree.acquire(group.prefix)
            if group.chain is None:
                return False
        for depth, block in enumerate(group.chain):
            if block.state is not BlockState.EMPTY or block in draft.blocks:
                continue
            if block.seed is not None and not draft.ready(block.seed[0]):
                self.tree.unseed(block)  # its sibling would not be computed first
            self.tree.seed(block, draft.ready)
            row = draft.block_row(group.chain, depth)
            if not draft.fits(job, len(row.tokens), limit):
                return False
            draft.blocks[block] = None
            draft.add(job, group, [row])
        prefix = draft.prefix(group.chain)
        cursor = draft.cursor.get(group, group.next_task)
        while cursor < len(group.tasks):
            task = group.tasks[cursor]
            if task.private_tokens and task.pages is None:
                pages = self.tree.allocate(self.tree.arena.pages_for(task.private_tokens))
                if pages is None:
                    self._let_go_if_idle(draft, group)
                    return False
                task.pages = pages
                task.slots = self.tree.arena.slots(pages, task.private_tokens)
            rows = task.first_rows(prefix)
            if not draft.fits(job, sum(len(row.tokens) for row in rows), limit):
                return False
            draft.add(job, task, rows)
            cursor += 1
            draft.cursor[group] = cursor
        return True

    def _let_go_if_idle(self, draft: _Draft, group: Group) -> None:
        """Release the chain of a group that waits for private pages with nothing of it running
        or chosen: a group holds its blocks only while it makes progress, so waiting groups can
        never pin the pages each other needs (it acquires them again when its turn comes)."""
        assert group.chain is not None
        chosen = draft.cursor.get(group, group.next_task) > group.next_task
        if group.running or chosen or any(block in draft.blocks for block in group.chain):
            return
        self.tree.release(group.chain)
        group.chain = None
        group.forget_slots()

    def _launch(self, draft: _Draft, chunk: ChunkInputs) -> _Launched:
        for block in draft.blocks:
            self.tree.computing(block)
        for group, cursor in draft.cursor.items():
            group.running += cursor - group.next_task
            group.next_task = cursor
        for task in draft.decoding:
            task.job.decode_ready.remove(task)
        for job in draft.jobs:
            job.launched.set()
        started = self._clock.start()
        pending = self.runner.launch(chunk)
        return _Launched(draft, chunk, pending, self._clock.end(started))

    def _absorb(self, launched: _Launched, outputs: ChunkOutputs) -> None:
        draft, chunk = launched.draft, launched.chunk
        for block in draft.blocks:
            self.tree.ready(block)
        targets = outputs.target_logprobs.numpy()
        greedy_ids = outputs.greedy_ids.tolist()
        greedy_logprobs = outputs.greedy_logprobs.tolist()
        touched: dict[Job, None] = {}
        # Per job: its prompts answered by answer reads, and those reads (stored in one copy).
        answer_reads: dict[Job, tuple[list[int], list[int]]] = {}
        decode_before = sum(len(job.decode_ready) for job in self.jobs)
        for i, (row, owner) in enumerate(zip(draft.rows, draft.owners, strict=True)):
            job = owner.job
            if not job.active:
                continue
            touched[job] = None
            if isinstance(owner, Group):
                owner.owed_fresh += len(row.tokens)
                continue
            owner.fresh += owner.fresh_tokens(row)
            if chunk.answer_of[i] >= 0:
                prompts, reads_at = answer_reads.setdefault(job, ([], []))
                prompts.append(owner.index)
                reads_at.append(chunk.answer_of[i])
            start, end = chunk.vocab_of[i]
            owner.absorb(row, [
                _Read(targets[v, : chunk.target_counts[v]], greedy_ids[v], greedy_logprobs[v])
                for v in range(start, end)
            ])
            if owner.done:
                self._answered(owner)
        for job, (prompts, reads_at) in answer_reads.items():
            assert job.answer_logits is not None
            job.answer_logits[prompts] = outputs.answer_logits[reads_at]
        if sum(len(job.decode_ready) for job in self.jobs) != decode_before:
            self._version += 1  # decode steps became ready: the prepared chunk lacks them
        seconds = launched.time.length()
        for job in touched:
            job.device_seconds += seconds
            if job.first_chunk_at is None:
                job.first_chunk_at = launched.time.at
            job.events.put(Progress(job.metrics()))
            if job.finished:
                self._finish(job)

    def _answered(self, task: Task) -> None:
        group, job = task.group, task.job
        fresh = task.fresh + group.owed_fresh
        group.owed_fresh = 0
        answered = job.answered  # field by field: no Metrics made per prompt (hot loop)
        answered.prompts += 1
        answered.input_tokens += task.input_tokens
        answered.fresh_tokens += fresh
        answered.cached_tokens += task.input_tokens - fresh
        if isinstance(task, TextTask):
            answered.generated_tokens += len(task.generated)
        if task.pages is not None:
            self.tree.free(task.pages)
            task.pages = None
        group.open -= 1
        group.running -= 1
        if group.open == 0 and group.chain is not None:
            self.tree.release(group.chain)
            group.chain = None

    def _fail_all(self, exc: Exception) -> None:
        """A chunk failed: every job fails with it, and the arena starts over (its blocks'
        contents are in doubt); the engine stays usable."""
        message = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
        for job in self.jobs:
            job.active = False
            job.events.put(Failed(EngineError(f"the engine failed while running a chunk: "
                                              f"{message}")))
        self.jobs.clear()
        self._prepared = None
        self._in_flight = None
        self._version += 1
        self.tree.clear()


def drain(job: Job) -> Iterator[Event]:
    """The events of ``job`` until its last (``Finished`` or ``Failed``), as they come."""
    while True:
        event = job.events.get()
        yield event
        if not isinstance(event, Progress):
            return

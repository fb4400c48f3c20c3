"""The paged KV arena, and the radix tree of prefix blocks that lives in it.

Contract:
- ``KVArena``: one preallocated keys tensor and one values tensor, each
  [num_layers, num_pages * page_tokens, kv_heads, head_dim]; a page (``page_tokens`` token slots)
  is the unit of allocation. The model writes each token's K/V straight into its slot, once, and
  attention reads prefixes by slot, so prefix KV is never copied per row or per request. Pages
  come in aligned runs of ``run_pages`` (a prefix block's worth): a request for whole runs gets
  consecutive pages while free runs last, so a block's slots are consecutive and attention loads
  its key tiles whole; smaller requests take pages of runs already broken first.
- ``BlockTree``: a radix tree over token ids whose edges are canonical prefix blocks — block j of
  a prefix covers positions [j*B, min((j+1)*B, P)). A node is one block (its tokens, its slots),
  identified by the whole token path from the root, so two documents share exactly the full
  blocks they agree on token for token; a partial last block is shared only by a prefix ending
  the same way. ``acquire(prefix)`` returns the chain of blocks covering a prefix — matched ones
  reused, missing ones created EMPTY with pages allocated — all pinned, or None when the pages
  cannot be found now. ``release`` unpins; an unpinned block that was never computed is dropped,
  a computed one stays cached.
- Seeding (``seeding=True``, for an attention backend that gives a token the same bits wherever
  its row starts): an EMPTY block may begin with tokens a sibling holds — documents that extend
  one another part where the shorter one ends, inside a block. ``seed(block, usable)`` takes the
  sibling ``usable`` allows (its KV computed, or computed before the block is) that shares the
  most first tokens, at least ``SEED_MIN_TOKENS`` and at most all but the block's last. The
  block's first slots then are the sibling's (``block.seed = (sibling, n)``; the sibling stays
  pinned while the block lives), and only the rest of it is computed: documents that extend one
  another share every token, not only whole blocks, whichever of them comes first. ``unseed``
  undoes it while the block is still EMPTY. Siblings are found by their first
  ``SEED_MIN_TOKENS`` tokens, below the root only (first blocks begin with the prompt's template,
  which every document shares: short documents are not worth the search).
- Eviction frees pages only from computed, unpinned leaves, cheapest expected loss first
  (GreedyDual-Size-Frequency): a block's priority is the clock plus its hits times its recompute
  cost per page, and evicting a block advances the clock to its priority, so blocks not used for
  a while age out whatever their cost. Pinned blocks and blocks still being computed are never
  evicted.
- ``allocate``/``free``: pages outside the tree, for the private KV of a prompt being answered
  (a classification's question, a generation's tokens).
- Only the engine's step-loop thread touches these (no locks).
"""

from __future__ import annotations

import enum
import heapq
import itertools
from collections.abc import Callable, Sequence

import numpy as np
import torch

from heron.engine.config import DEFAULT_CPU_KV_CACHE_BYTES, EngineConfig
from heron.engine.spec import ModelSpec

# Slots per page: the allocation unit inside blocks (and the page size of paged kernels).
PAGE_TOKENS = 16
# The fewest tokens a seed shares; siblings are looked up by their first this many.
SEED_MIN_TOKENS = 8
# Siblings compared per seed at most, the latest first (bounds a pathological bucket).
SEED_CANDIDATES = 32
# CUDA memory kept out of the arena beyond one chunk's activations: context, allocator slack.
_CUDA_RESERVE_BYTES = 1 << 30


class KVArena:
    """Keys and values of every layer, in pages of ``page_tokens`` token slots."""

    def __init__(
        self,
        spec: ModelSpec,
        dtype: torch.dtype,
        device: torch.device | str,
        capacity_bytes: int,
        page_tokens: int,
        run_pages: int = 1,
    ) -> None:
        self.page_tokens = page_tokens
        self.run_pages = run_pages
        self.bytes_per_token = kv_bytes_per_token(spec, dtype)
        self.num_pages = capacity_bytes // (self.bytes_per_token * page_tokens)
        shape = (
            spec.num_layers,
            self.num_pages * page_tokens,
            spec.num_kv_heads,
            spec.head_dim,
        )
        # empty, not zeros: untouched pages cost no host memory, and every slot is written
        # before any attention reads it.
        self.keys = torch.empty(shape, dtype=dtype, device=device)
        self.values = torch.empty(shape, dtype=dtype, device=device)
        self.reset()

    @property
    def free_pages(self) -> int:
        return len(self._runs) * self.run_pages + len(self._loose)

    def pages_for(self, tokens: int) -> int:
        return -(-tokens // self.page_tokens)

    def take(self, pages: int) -> list[int] | None:
        """``pages`` free pages (never part of them): as many whole runs as fit, in order, then
        single pages of broken runs, breaking the lowest free run when there are none."""
        if pages > self.free_pages:
            return None
        size = self.run_pages
        taken: list[int] = []
        while pages >= size and self._runs:
            run = self._runs.pop()
            self._free_in_run[run] = 0
            taken.extend(range(run * size, (run + 1) * size))
            pages -= size
        for _ in range(pages):
            if not self._loose:
                run = self._runs.pop()  # broken: its pages are loose, the lowest handed out first
                self._loose.update(dict.fromkeys(range((run + 1) * size - 1, run * size - 1, -1)))
            page = self._loose.popitem()[0]
            if page // size < len(self._free_in_run):
                self._free_in_run[page // size] -= 1
            taken.append(page)
        return taken

    def give_back(self, pages: Sequence[int]) -> None:
        size = self.run_pages
        for page in pages:
            run = page // size
            if run >= len(self._free_in_run):  # past the last whole run
                self._loose[page] = None
                continue
            self._free_in_run[run] += 1
            if self._free_in_run[run] < size:
                self._loose[page] = None
            else:  # the run is whole again
                for other in range(run * size, (run + 1) * size):
                    self._loose.pop(other, None)
                self._runs.append(run)

    def reset(self) -> None:
        """Every page free again."""
        runs = self.num_pages // self.run_pages
        self._runs = list(range(runs - 1, -1, -1))  # whole free runs; pop() hands out low first
        self._free_in_run = [self.run_pages] * runs
        # Free pages outside whole free runs, an ordered set (popitem: the latest freed first);
        # at first, the pages past the last whole run.
        self._loose: dict[int, None] = dict.fromkeys(
            range(self.num_pages - 1, runs * self.run_pages - 1, -1))

    def slots(self, pages: Sequence[int], tokens: int) -> np.ndarray:
        """The first ``tokens`` slots of ``pages`` (int64, read-only)."""
        base = np.asarray(pages, dtype=np.int64)[:, None] * self.page_tokens
        slots = (base + np.arange(self.page_tokens, dtype=np.int64)).reshape(-1)[:tokens]
        slots.flags.writeable = False
        return slots


class BlockState(enum.Enum):
    EMPTY = "empty"  # pages allocated, KV not computed
    COMPUTING = "computing"  # in a chunk that has been launched
    READY = "ready"  # KV in the arena


class Block:
    """One canonical prefix block: a node of the radix tree."""

    __slots__ = (
        "children", "cost", "heads", "hits", "key", "pages", "parent", "pins", "priority",
        "seed", "slots", "start", "state", "tokens",
    )

    def __init__(
        self, parent: Block | None, tokens: np.ndarray, start: int, pages: list[int],
        slots: np.ndarray, cost: float,
    ) -> None:
        self.parent = parent
        self.key = tokens.tobytes()
        self.tokens = tokens
        self.start = start  # absolute position of tokens[0]
        self.pages = pages
        self.slots = slots
        self.cost = cost  # expected work to recompute it (FLOPs)
        self.state = BlockState.EMPTY
        self.pins = 0
        self.hits = 1
        self.priority = 0.0
        self.children: dict[bytes, Block] = {}
        self.heads: dict[bytes, list[Block]] = {}  # children by their first tokens (seeding)
        self.seed: tuple[Block, int] | None = None  # the sibling holding its first n tokens

    @property
    def end(self) -> int:
        return self.start + len(self.tokens)


class BlockTree:
    """Radix tree of canonical prefix blocks over a ``KVArena`` (see the module contract)."""

    def __init__(
        self,
        arena: KVArena,
        block_tokens: int,
        recompute_cost: Callable[[int, int], float],
        seeding: bool = False,
    ) -> None:
        self.arena = arena
        self.block_tokens = block_tokens
        self.seeding = seeding
        self._recompute_cost = recompute_cost  # (start, tokens) -> FLOPs
        self._root = Block(None, np.zeros(0, dtype=np.int32), 0, [], np.zeros(0, np.int64), 0.0)
        self._evictable: list[tuple[float, int, Block]] = []
        self._sequence = itertools.count()
        self._clock = 0.0
        self.blocks = 0
        self.evictions = 0

    def pages_needed(self, prefix_tokens: int) -> int:
        """Pages of the blocks of a ``prefix_tokens``-token prefix, none of them cached."""
        full, rest = divmod(prefix_tokens, self.block_tokens)
        return full * self.arena.pages_for(self.block_tokens) + self.arena.pages_for(rest)

    def acquire(self, prefix: np.ndarray) -> list[Block] | None:
        """The pinned chain of blocks covering ``prefix``, or None (nothing pinned) when the
        pages of its missing blocks cannot be found now."""
        chain: list[Block] = []
        node = self._root
        edges = self._edges(prefix)
        for start, end in edges:
            child = node.children.get(prefix[start:end].tobytes())
            if child is None:
                break
            child.pins += 1
            child.hits += 1
            chain.append(child)
            node = child
        missing = edges[len(chain) :]
        pages = self.allocate(sum(self.arena.pages_for(end - start) for start, end in missing))
        if pages is None:
            self.release(chain)
            return None
        taken = iter(pages)
        for start, end in missing:
            tokens = prefix[start:end]
            own = [next(taken) for _ in range(self.arena.pages_for(end - start))]
            child = Block(node, tokens, start, own, self.arena.slots(own, end - start),
                          self._recompute_cost(start, end - start))
            child.pins = 1
            node.children[child.key] = child
            head = self._head(child)
            if head is not None:
                node.heads.setdefault(head, []).append(child)
            self.blocks += 1
            chain.append(child)
            node = child
        return chain

    def seed(self, block: Block, usable: Callable[[Block], bool]) -> bool:
        """Seed an EMPTY ``block`` from the sibling sharing the most of its first tokens that
        ``usable`` allows (see the module contract); whether one was found."""
        head = self._head(block)
        if block.seed is not None or head is None:
            return False
        assert block.parent is not None
        tokens = block.tokens
        best, shared = None, SEED_MIN_TOKENS - 1
        for sibling in reversed(block.parent.heads[head][-SEED_CANDIDATES:]):
            if sibling is block or not usable(sibling):
                continue
            n = min(len(sibling.tokens), len(tokens) - 1)
            differ = np.flatnonzero(sibling.tokens[:n] != tokens[:n])
            common = int(differ[0]) if len(differ) else n
            if common > shared:
                best, shared = sibling, common
                if common == len(tokens) - 1:
                    break
        if best is None:
            return False
        best.pins += 1
        block.seed = (best, shared)
        block.slots = np.concatenate([best.slots[:shared], block.slots[shared:]])
        block.slots.flags.writeable = False
        return True

    def unseed(self, block: Block) -> None:
        """Undo ``seed`` (the block is still EMPTY): all its tokens are computed again."""
        assert block.seed is not None and block.state is BlockState.EMPTY
        sibling, block.seed = block.seed[0], None
        block.slots = self.arena.slots(block.pages, len(block.tokens))
        self.release([sibling])

    def _head(self, block: Block) -> bytes | None:
        """The key ``block`` is found by among its siblings; None where seeding does not look:
        seeding off, a child of the root, or a block too short to share SEED_MIN_TOKENS and
        compute one more."""
        if (not self.seeding or block.parent is None or block.parent is self._root
                or len(block.tokens) <= SEED_MIN_TOKENS):
            return None
        return block.tokens[:SEED_MIN_TOKENS].tobytes()

    def release(self, chain: Sequence[Block]) -> None:
        """Unpin a chain (from ``acquire``); never-computed blocks nobody pins are dropped."""
        for block in reversed(chain):  # leaves first: a parent may become a leaf
            block.pins -= 1
            if block.pins == 0 and block.state is BlockState.EMPTY and not block.children:
                self._drop(block)
            else:
                self._offer(block)

    def computing(self, block: Block) -> None:
        block.state = BlockState.COMPUTING

    def ready(self, block: Block) -> None:
        block.state = BlockState.READY
        self._offer(block)

    def allocate(self, pages: int) -> list[int] | None:
        """``pages`` free pages, evicting cached blocks as needed; None if they cannot be had."""
        while self.arena.free_pages < pages:
            if not self._evict_one():
                return None
        return self.arena.take(pages)

    def free(self, pages: Sequence[int]) -> None:
        self.arena.give_back(pages)

    def clear(self) -> None:
        """Forget every block and page (after a failed chunk left the arena in doubt)."""
        self._root.children.clear()
        self._root.heads.clear()
        self._evictable.clear()
        self.arena.reset()
        self.blocks = 0

    @property
    def cached_tokens(self) -> int:
        """Tokens of computed blocks in the tree."""
        total, stack = 0, list(self._root.children.values())
        while stack:
            block = stack.pop()
            total += len(block.tokens) if block.state is BlockState.READY else 0
            stack.extend(block.children.values())
        return total

    def _edges(self, prefix: np.ndarray) -> list[tuple[int, int]]:
        size = self.block_tokens
        return [(start, min(start + size, len(prefix))) for start in range(0, len(prefix), size)]

    def _offer(self, block: Block) -> None:
        """Make ``block`` an eviction candidate if it is one (a computed, unpinned leaf)."""
        if block.pins or block.children or block.state is not BlockState.READY:
            return
        block.priority = self._clock + block.hits * block.cost / max(1, len(block.pages))
        heapq.heappush(self._evictable, (block.priority, next(self._sequence), block))

    def _evict_one(self) -> bool:
        while self._evictable:
            priority, _, block = heapq.heappop(self._evictable)
            stale = block.priority != priority or block.parent is None
            if stale or block.pins or block.children or block.state is not BlockState.READY:
                continue
            self._clock = priority
            self.evictions += 1
            self._drop(block)
            return True
        return False

    def _drop(self, block: Block) -> None:
        parent = block.parent
        assert parent is not None
        del parent.children[block.key]
        head = self._head(block)
        if head is not None:
            parent.heads[head].remove(block)
            if not parent.heads[head]:
                del parent.heads[head]
        if block.seed is not None:  # its sibling held its first tokens
            self.release([block.seed[0]])
        block.parent = None  # marks heap entries of this block stale
        self.arena.give_back(block.pages)
        self.blocks -= 1
        if parent is not self._root:
            if parent.pins == 0 and parent.state is BlockState.EMPTY and not parent.children:
                self._drop(parent)
            else:
                self._offer(parent)


def kv_bytes_per_token(spec: ModelSpec, dtype: torch.dtype) -> int:
    return 2 * spec.num_layers * spec.num_kv_heads * spec.head_dim * dtype.itemsize


def recompute_flops(spec: ModelSpec) -> Callable[[int, int], float]:
    """FLOPs to recompute ``tokens`` prefix tokens starting at position ``start``: the linear
    layers per token, plus attention to every earlier key."""
    q_width = spec.num_heads * spec.head_dim
    kv_width = spec.num_kv_heads * spec.head_dim
    per_token = 2 * spec.num_layers * (
        spec.hidden_size * (q_width + 2 * kv_width)
        + q_width * spec.hidden_size
        + 3 * spec.hidden_size * spec.intermediate_size
    )
    per_key = 4 * spec.num_layers * q_width

    def cost(start: int, tokens: int) -> float:
        return float(tokens * (per_token + per_key * (start + tokens / 2)))

    return cost


def chunk_activation_bytes(spec: ModelSpec, chunk_tokens: int, dtype: torch.dtype) -> int:
    """A generous estimate of one chunk's peak activations: the live [T, width] tensors of a
    layer, float32 attention partials, and the padded attention score budget."""
    q_width = spec.num_heads * spec.head_dim
    kv_width = spec.num_kv_heads * spec.head_dim
    per_token = dtype.itemsize * (
        4 * spec.hidden_size + 3 * (q_width + 2 * kv_width) + 3 * spec.intermediate_size
    ) + 4 * 4 * q_width
    return chunk_tokens * per_token + 4 * (1 << 27)


def arena_bytes(config: EngineConfig, spec: ModelSpec, dtype: torch.dtype,
                free_bytes: int | None) -> int:
    """The KV arena's size: ``config.kv_cache_bytes`` if set; else 1 GiB on CPU, and on CUDA the
    ``free_bytes`` left after the weights less twice one chunk's activations and a reserve."""
    if config.kv_cache_bytes is not None:
        return config.kv_cache_bytes
    if config.device_type == "cpu" or free_bytes is None:
        return DEFAULT_CPU_KV_CACHE_BYTES
    margin = 2 * chunk_activation_bytes(spec, config.effective_chunk_tokens, dtype)
    return max(0, free_bytes - margin - _CUDA_RESERVE_BYTES)

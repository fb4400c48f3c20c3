"""Running one chunk: the forward pass, the readouts, and the copy of the results to the host.

Contract:
- ``ModelRunner.launch(chunk)`` runs ``Decoder.forward`` over a ``batching.ChunkInputs`` (the
  chunk's K/V land in the arena) and computes its readouts: the pruned answer logits, and for
  each vocabulary read the log-probabilities (log-softmax over the full vocabulary) of its target
  ids plus the greedy next id (argmax of the logits, as ``transformers``' greedy search) and its
  log-probability. Full-vocabulary logits are formed only at read positions, a slice of rows at a
  time, and never leave the device.
- On CUDA ``launch`` returns as soon as the work is queued (results copied to pinned host memory
  behind an event), so the host can prepare the next chunk meanwhile; ``PendingChunk.wait()``
  blocks until the results are on the host. On CPU ``launch`` computes synchronously.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from heron.engine.batching import ChunkInputs
from heron.engine.kv_cache import KVArena
from heron.engine.model import Decoder

# Vocabulary reads per slice: bounds the [rows, vocab] float32 logits (150 MB for Qwen3).
_VOCAB_ROWS = 256


@dataclass(frozen=True)
class ChunkOutputs:
    """Readouts of one chunk, on the host, in ``ChunkInputs`` readout order."""

    answer_logits: torch.Tensor  # [A, len(answer_ids)] float32
    target_logprobs: torch.Tensor  # [V, max targets] float32 (padding columns are meaningless)
    greedy_ids: torch.Tensor  # [V] int64
    greedy_logprobs: torch.Tensor  # [V] float32


class PendingChunk:
    """A launched chunk; ``wait()`` returns its outputs once the device has produced them."""

    def __init__(self, outputs: ChunkOutputs, done: torch.cuda.Event | None) -> None:
        self._outputs = outputs
        self._done = done

    def ready(self) -> bool:
        """Whether ``wait()`` would return at once (on CPU a launch computes: always)."""
        return self._done is None or self._done.query()

    def wait(self) -> ChunkOutputs:
        if self._done is not None:
            self._done.synchronize()
        return self._outputs


class ModelRunner:
    def __init__(self, decoder: Decoder, arena: KVArena) -> None:
        self.decoder = decoder
        self.arena = arena

    def launch(self, chunk: ChunkInputs) -> PendingChunk:
        decoder = self.decoder
        with torch.inference_mode():
            hidden = decoder.forward(chunk, self.arena)
            answers = chunk.answer_index.numel()
            answer_logits = decoder.answer_logits(hidden[:answers])
            vocab_hidden = hidden[answers:]
            targets, greedy_ids, greedy_logprobs = [], [], []
            for start in range(0, vocab_hidden.shape[0], _VOCAB_ROWS):
                logits = decoder.vocab_logits(vocab_hidden[start : start + _VOCAB_ROWS])
                # x - logsumexp(x): a row-invariant log-softmax (torch's is not on CUDA)
                logprobs = logits - decoder.ops.logsumexp(logits)[:, None]
                wanted = chunk.vocab_targets[start : start + _VOCAB_ROWS]
                targets.append(logprobs.gather(1, wanted))
                best = logits.argmax(dim=-1)
                greedy_ids.append(best)
                greedy_logprobs.append(logprobs.gather(1, best[:, None])[:, 0])
            width = chunk.vocab_targets.shape[1]
            device_outputs = ChunkOutputs(
                answer_logits=answer_logits,
                target_logprobs=_joined(targets, hidden.new_empty(0, width, dtype=torch.float32)),
                greedy_ids=_joined(greedy_ids, chunk.vocab_index.new_empty(0)),
                greedy_logprobs=_joined(greedy_logprobs, hidden.new_empty(0, dtype=torch.float32)),
            )
        if hidden.device.type != "cuda":
            return PendingChunk(device_outputs, None)
        host = ChunkOutputs(
            *(_to_host(getattr(device_outputs, f.name)) for f in fields(ChunkOutputs))
        )
        # Blocking: the step loop sleeps while the device works, leaving the host's cores to
        # tokenization and the server.
        done = torch.cuda.Event(blocking=True)
        done.record(torch.cuda.current_stream(hidden.device))  # the engine's device, not cuda:0
        return PendingChunk(host, done)


def _joined(parts: list[torch.Tensor], empty: torch.Tensor) -> torch.Tensor:
    return torch.cat(parts) if parts else empty


def _to_host(tensor: torch.Tensor) -> torch.Tensor:
    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    return host.copy_(tensor, non_blocking=True)

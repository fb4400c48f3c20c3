"""vLLM's FlashAttention-3 (Hopper) for packed rows, returning each query's log-sum-exp.

Contract: ``available()`` says whether the library loads: the ``_vllm_fa3_C`` extension of an
installed vLLM (``vllm.vllm_flash_attn``), or the same file alone on ``sys.path`` (it loads with
torch 2.11 and needs no other vLLM code; DESIGN §6). Looked for once per process. ``usable(device,
head_dim, dtype)`` adds what its kernels take: a CUDA device of compute capability 9.x, bf16 or
fp16, a head dimension it was built for. ``varlen(q, k, v, cu_q, cu_k, max_q, max_k, scale,
causal)`` is attention of packed sequences: sequence i's queries ``q[cu_q[i]:cu_q[i+1]]``
([S, Hq, D]) over its keys ``k, v[cu_k[i]:cu_k[i+1]]`` ([K, Hkv, D], query head h reading key
head h // (Hq / Hkv)), ``causal`` aligned to the end (a query sees the keys up to its own
position counted from the end, as for a row over its own keys); returns (out [S, Hq, D] in q's
dtype, lse [Hq, S] float32, natural log).

Called with one split of the keys (``num_splits=1``): key tiles from each sequence's first key,
each query's softmax from its own scores. A query's output then kept its bits when the queries
beside it changed (``tests/engine/attention/test_segments.py``), yet an engine's answers changed
bits with the chunking (bench/NOTES.md): the engine uses it only without ``deterministic``.
"""

from __future__ import annotations

import functools
import importlib

import torch

HEAD_DIMS = (64, 96, 128, 192, 256)  # those the library is built for


@functools.cache
def available() -> bool:
    for name in ("vllm.vllm_flash_attn._vllm_fa3_C", "_vllm_fa3_C"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        return hasattr(torch.ops, "_vllm_fa3_C") and hasattr(torch.ops._vllm_fa3_C, "fwd")
    return False


def usable(device: torch.device, head_dim: int, dtype: torch.dtype) -> bool:
    return (device.type == "cuda" and dtype in (torch.bfloat16, torch.float16)
            and head_dim in HEAD_DIMS and torch.cuda.get_device_capability(device)[0] == 9
            and available())


def varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: torch.Tensor,
           cu_k: torch.Tensor, max_q: int, max_k: int, scale: float, causal: bool
           ) -> tuple[torch.Tensor, torch.Tensor]:
    # The library's forward, argument by argument (vllm/vllm_flash_attn/flash_attn_interface.py
    # of the same release): no new keys, no paging, no rotary, no descaling, no window, no
    # softcap, one split, no context parallelism.
    out, lse = torch.ops._vllm_fa3_C.fwd(
        q, k, v, None, None, None, None, cu_q, cu_k, None, None, None, max_q, max_k, None,
        None, None, None, None, None, None, None, None, scale, causal, -1, -1, 0.0, True,
        None, 1, None, 0, None, 1, 0, None)[:2]
    return out, lse
